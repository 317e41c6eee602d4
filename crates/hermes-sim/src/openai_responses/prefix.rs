//! Reasoning items bound to their prefix (SPEC §5a, issue 46: "OpenAI's newer models silently
//! drop reasoning items that follow a prefix change").
//!
//! The simulator remembers, per instance, the prefix each `rs_…` item it minted was produced
//! after: a digest of `instructions`, `tools` and the request's input items (reasoning items left
//! out; a string `input` read as one user message; an item's `id` and `status` and a message's
//! string-or-parts form not compared). When a later request replays a remembered reasoning item
//! after a different prefix (the digest of `instructions`, `tools` and the input items before
//! it), the item is dropped silently: the request is accepted as if it were there (its paired
//! items need no other reasoning), and the drop is written in the recorded request's
//! [`crate::RecordedRequest::notes`] as `input[I]: reasoning item rs_… dropped (the prefix
//! changed since it was made)`. An item the simulator does not remember (another instance's) is
//! kept.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::wire::canonical;

/// `rs_…` id → the prefix digest it was minted after.
pub(crate) type Minted = HashMap<String, [u8; 32]>;

/// The item as it counts for the prefix.
fn normalized(item: &Value) -> Option<Value> {
    let Some(o) = item.as_object() else {
        return Some(item.clone());
    };
    let mut o: Map<String, Value> = o.clone();
    let kind = o
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
        .to_owned();
    if kind == "reasoning" {
        return None;
    }
    o.insert("type".into(), json!(kind));
    o.shift_remove("id");
    o.shift_remove("status");
    if kind == "message"
        && let Some(Value::String(text)) = o.get("content").cloned()
    {
        let part = if o.get("role").and_then(Value::as_str) == Some("assistant") {
            "output_text"
        } else {
            "input_text"
        };
        o.insert("content".into(), json!([{"type": part, "text": text}]));
    }
    Some(Value::Object(o))
}

/// The request's input items (a string `input` is one user message).
pub(crate) fn items(body: &Value) -> Vec<Value> {
    match body.get("input") {
        Some(Value::String(s)) => vec![json!({"type": "message", "role": "user", "content": s})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// Digest of `instructions`, `tools` and `items` (reasoning items left out).
pub(crate) fn digest(body: &Value, items: &[Value]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"instructions\0");
    h.update(canonical(body.get("instructions").unwrap_or(&Value::Null)));
    h.update(b"\0tools\0");
    h.update(canonical(body.get("tools").unwrap_or(&json!([]))));
    h.update(b"\0input\0");
    for item in items.iter().filter_map(normalized) {
        h.update(canonical(&item));
        h.update([0]);
    }
    h.finalize().into()
}

/// The notes for remembered reasoning items replayed after a changed prefix.
pub(crate) fn drops(body: &Value, minted: &Minted) -> Vec<String> {
    let items = items(body);
    let mut notes = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("reasoning") {
            continue;
        }
        let id = item.get("id").and_then(Value::as_str).unwrap_or("");
        if let Some(made) = minted.get(id)
            && *made != digest(body, &items[..i])
        {
            notes.push(format!(
                "input[{i}]: reasoning item {id} dropped (the prefix changed since it was made)"
            ));
        }
    }
    notes
}
