//! The core's readers and writers: the history file, the normal form and place matching
//! (docs/spec.md §10), `RawJson`, and the Bedrock body's `ensure_ascii` writer.

use hermes_core::reattach::align;
use hermes_core::{Message, RawJson, Role, chain_keys, match_key, parse_history};
use serde_json::Value;

/// `history`: a history file that parses serialises, parses again and serialises to the same
/// bytes.
pub fn history(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let Ok(session) = parse_history(&text) else {
        return;
    };
    let once = serde_json::to_string(&session)
        .unwrap_or_else(|e| panic!("an imported session does not serialise: {e}"));
    let again = parse_history(&once)
        .unwrap_or_else(|e| panic!("an exported session does not import: {e}\n{once}"));
    let twice = serde_json::to_string(&again)
        .unwrap_or_else(|e| panic!("a re-imported session does not serialise: {e}"));
    assert_eq!(once, twice, "export → import → export changed the bytes");
}

/// `value` with every object's keys in reverse order, at any depth.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// A message as a client may send it back: keys in another order and whitespace added, in the
/// message and in its tool calls' argument text (when that is JSON).
fn respelled(message: &Value) -> Value {
    let mut out = reversed(message);
    if let Some(calls) = out.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            let Some(arguments) = call.pointer_mut("/function/arguments") else {
                continue;
            };
            let Some(text) = arguments.as_str() else {
                continue;
            };
            if let Ok(parsed) = serde_json::from_str::<Value>(text) {
                let pretty = serde_json::to_string_pretty(&reversed(&parsed)).unwrap_or_default();
                *arguments = Value::String(format!(" {pretty}\n"));
            }
        }
    }
    out
}

/// `normal`: a history (a JSON array of messages) and the same history respelled (keys in
/// reverse order, whitespace added, in the messages and their tool calls' arguments) have the
/// same match keys and chain keys, and every message of the one stands at its place in the
/// other (docs/spec.md §10).
pub fn normal(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let Ok(messages) = serde_json::from_str::<Vec<Message>>(text) else {
        return;
    };
    // The respelled history, written from the messages as they were read. A message holding a
    // lone surrogate (kept as its escape in raw JSON) has no `Value`: nothing to respell.
    let Ok(values) = messages
        .iter()
        .map(|m| serde_json::to_value(m).map(|v| respelled(&v)))
        .collect::<Result<Vec<Value>, _>>()
    else {
        return;
    };
    let pretty = serde_json::to_string_pretty(&values).unwrap_or_default();
    let again: Vec<Message> = serde_json::from_str(&pretty)
        .unwrap_or_else(|e| panic!("a respelled history does not parse: {e}\n{pretty}"));
    assert_eq!(messages.len(), again.len());
    for (i, (a, b)) in messages.iter().zip(&again).enumerate() {
        assert_eq!(
            match_key(a),
            match_key(b),
            "message {i}'s match key changed with key order and whitespace"
        );
    }
    assert_eq!(
        chain_keys("", &messages),
        chain_keys("", &again),
        "the chain keys changed with key order and whitespace"
    );
    let matched = messages
        .iter()
        .filter(|m| !matches!(m.role, Role::System | Role::Developer))
        .count();
    for (stored, incoming) in [(&messages, &messages), (&messages, &again)] {
        let alignment = align(stored, incoming);
        assert_eq!(
            alignment.run.len(),
            matched,
            "not every message stands at its place in the same history: {:?}",
            alignment.run
        );
        assert!(
            alignment.run.iter().all(|(i, s)| i == s),
            "a message stands at another place than its own: {:?}",
            alignment.run
        );
    }
}

/// `raw_json`: text that is one JSON value is kept byte for byte by `RawJson` (without the
/// whitespace around it), serialises as
/// itself and loads back equal; and the Bedrock body's writer (`json.dumps` with
/// `ensure_ascii`) writes ASCII that reads back as the same value and is its own fixed point.
pub fn raw_json(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(raw) = RawJson::from_text(text) {
        // Whitespace around the value is not part of it.
        let value = text.trim_matches([' ', '\t', '\n', '\r']);
        assert_eq!(raw.get(), value, "RawJson changed the text it wraps");
        let written = serde_json::to_string(&raw).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written, value, "RawJson does not serialise as its text");
        let back: RawJson = serde_json::from_str(&written).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.get(), value, "RawJson does not load back as its text");
        if let (Some(a), Ok(b)) = (raw.as_str(), serde_json::from_str::<String>(text)) {
            assert_eq!(a, b, "RawJson::as_str differs from the string's value");
        }
    }
    let Ok(python) = hermes_wire_bedrock::fuzzing::python_json(text) else {
        return;
    };
    assert!(
        python.bytes().all(|b| (b' '..=b'~').contains(&b)),
        "ensure_ascii wrote a byte outside ' '..='~': {python:?}"
    );
    // What serde_json reads too (no number out of `f64`'s range, which Python writes as
    // `Infinity`, no lone surrogate) reads back from the output as the same value, and the
    // output is its own fixed point.
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let back: Value = serde_json::from_str(&python)
        .unwrap_or_else(|e| panic!("serde_json cannot read the writer's output: {e}\n{python}"));
    assert!(
        same_value(&value, &back),
        "the writer changed the value: {value} became {back}"
    );
    let again = hermes_wire_bedrock::fuzzing::python_json(&python)
        .unwrap_or_else(|e| panic!("the writer's output does not read back: {e}\n{python}"));
    assert_eq!(again, python, "the writer is not its own fixed point");
}

/// Whether `a` and `b` are the same JSON value, numbers compared as `f64` to 12 significant
/// digits: serde_json's default float reading (without its `float_roundtrip` feature) is not
/// always correctly rounded, and the writer spells Python's correctly rounded `repr`
/// (`111111111000.11111111111112` reads as `…000.1111` there, `…000.11111` in Python; a 43-digit
/// mantissa was two units in the last place off).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= x.abs().max(y.abs()) * 1e-12,
            _ => x == y,
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_value(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        _ => a == b,
    }
}
