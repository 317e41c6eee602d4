//! The invariants the targets share: what a reader returns stores and loads again unchanged,
//! holds no carrier it did not read, and does not depend on where its body was cut.

use hermes_core::transport::{Reply, TransportError};
use hermes_core::{Message, Origin};
use serde_json::Value;

/// The origin every captured reply is stamped with.
pub(crate) fn origin() -> Origin {
    Origin {
        provider: "fuzz".to_owned(),
        host: "fuzz.invalid".to_owned(),
        model: "fuzz-model".to_owned(),
    }
}

/// A message must store and load again unchanged (the store keeps its JSON text).
pub(crate) fn round_trips(msg: &Message) {
    let once =
        serde_json::to_string(msg).unwrap_or_else(|e| panic!("a message does not serialise: {e}"));
    let back: Message = serde_json::from_str(&once)
        .unwrap_or_else(|e| panic!("a message does not load again: {e}\n{once}"));
    let twice = serde_json::to_string(&back)
        .unwrap_or_else(|e| panic!("a reloaded message does not serialise: {e}"));
    assert_eq!(once, twice, "a message changed when reloaded");
}

/// The keys whose string values are reasoning carriers (signatures, encrypted items, redacted
/// thinking) on some wire.
const CARRIER_KEYS: [&str; 7] = [
    "signature",
    "thought_signature",
    "thoughtSignature",
    "encrypted_content",
    "redacted_content",
    "data",
    "reasoning_opaque",
];

/// Every carrier string in `value` (at any depth, JSON text stored in a string included), with
/// the key it stood under.
fn carriers(value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::String(s) if CARRIER_KEYS.contains(&key.as_str()) && !s.is_empty() => {
                        out.push((key.clone(), s.clone()));
                    }
                    // A stored literal (a thinking block's bytes) is JSON text in a string.
                    Value::String(s) if s.starts_with('{') || s.starts_with('[') => {
                        if let Ok(inner) = serde_json::from_str::<Value>(s) {
                            carriers(&inner, out);
                        }
                    }
                    _ => carriers(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| carriers(v, out)),
        _ => {}
    }
}

/// Whether `input` holds `text`, as it is or JSON-escaped.
fn holds(input: &str, text: &str) -> bool {
    if input.contains(text) {
        return true;
    }
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let escaped = escaped.trim_matches('"');
    input.contains(escaped)
}

/// No carrier in `messages` that `input` does not hold: a reader never makes one up (a
/// signature, an encrypted item, redacted thinking). Inputs with escapes are skipped where the
/// carrier is not found as is (its text may be spelled with `\u` escapes).
pub(crate) fn no_foreign_carriers(input: &str, messages: &[Message]) {
    for msg in messages {
        let value = serde_json::to_value(msg).unwrap_or(Value::Null);
        let mut found = Vec::new();
        carriers(&value, &mut found);
        for (key, carrier) in found {
            assert!(
                holds(input, &carrier) || input.contains('\\'),
                "`{key}` {carrier:?} is in the result but not in the input"
            );
        }
    }
}

/// Reads `body` whole and cut into pieces of 1 to 13 bytes (by its length): both must agree (a
/// body may be cut anywhere, a UTF-8 character or a frame included). Returns the whole read's
/// result. (Single bytes every time made the SSE targets ~50 runs/s: the SSE decoder rescans a
/// line's buffer for each piece, so a line trickled in n pieces costs O(n²).)
pub(crate) fn cut_anywhere(
    body: &[u8],
    read: impl Fn(&[u8], usize) -> Result<Reply, TransportError>,
) -> Result<Reply, TransportError> {
    let whole = read(body, body.len().max(1));
    let cut = read(body, 1 + body.len() % 13);
    match (&whole, &cut) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                comparable(&a.message),
                comparable(&b.message),
                "the message depends on where the body was cut"
            );
            assert_eq!(
                format!("{:?}", a.meta),
                format!("{:?}", b.meta),
                "the finish reason or usage depends on where the body was cut"
            );
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "read whole: {}; cut into pieces: {}",
            outcome(a),
            outcome(b)
        ),
    }
    whole
}

/// A message as JSON, the tool-call ids hermes made up (random, `hermes_made_up_id`) blanked.
fn comparable(message: &Message) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    if let Some(calls) = value.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            if call.get("hermes_made_up_id") == Some(&Value::Bool(true)) {
                call["id"] = Value::Null;
            }
        }
    }
    value
}

fn outcome(r: &Result<Reply, TransportError>) -> String {
    match r {
        Ok(_) => "a reply".to_owned(),
        Err(e) => format!("error {e}"),
    }
}
