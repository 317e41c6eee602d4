//! The Python original's row reader (`hermes import`, docs/spec.md §9).

use serde_json::Value;

use crate::check::round_trips;

/// The text columns the row reader reads, in the order the input gives them.
const COLUMNS: [&str; 10] = [
    "role",
    "content",
    "tool_call_id",
    "tool_name",
    "reasoning",
    "reasoning_content",
    "tool_calls",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
];

/// The message key each column becomes (`tool_name` is `name`).
fn key_of(column: &str) -> &str {
    if column == "tool_name" {
        "name"
    } else {
        column
    }
}

/// `import`: the input is a row's columns in [`COLUMNS`]' order separated by 0x1E (an empty or
/// missing column is NULL). A row that reads stores and loads again unchanged, and each of the
/// message's keys comes from its own column: a column's text never adds another key (a
/// `tool_calls` text cannot smuggle in `reasoning_details`).
pub fn import(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let mut fields = text.split('\u{1e}');
    let role = fields.next().unwrap_or_default();
    let columns: Vec<(&str, &str)> = COLUMNS[1..]
        .iter()
        .zip(fields)
        .filter(|(_, t)| !t.is_empty())
        .map(|(c, t)| (*c, t))
        .collect();
    let Ok(message) = hermes_store::fuzzing::original_message(role, &columns) else {
        return;
    };
    round_trips(&message);
    let value = serde_json::to_value(&message).unwrap_or(Value::Null);
    for key in value.as_object().into_iter().flat_map(|m| m.keys()) {
        if key == "role" {
            continue;
        }
        assert!(
            columns.iter().any(|(c, _)| key_of(c) == key),
            "`{key}` is in the message but its column is NULL: {columns:?}"
        );
    }
}
