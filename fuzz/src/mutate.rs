//! Input generation: random bytes, byte-level mutations, and structure-aware mutations of JSON
//! seeds (one document, or one document per line for streams).

use serde_json::{Map, Value};

use crate::rng::Rng;

/// Largest input generated.
pub(crate) const MAX_INPUT: usize = 64 * 1024;

/// How a target reads its input, which decides the structure-aware mutations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One JSON document per line (stream chunks).
    Lines,
    /// One JSON document (a reply body, a history).
    Json,
    /// Text that is often, not always, JSON (error bodies).
    Text,
}

/// Keys the parsers read, so that mutations reach their branches.
const KEYS: &[&str] = &[
    "role",
    "content",
    "name",
    "tool_calls",
    "tool_call_id",
    "id",
    "type",
    "function",
    "arguments",
    "index",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "text",
    "signature",
    "data",
    "summary",
    "format",
    "extra_content",
    "google",
    "thought_signature",
    "reasoning_opaque",
    "reasoning_text",
    "choices",
    "delta",
    "message",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "completion_tokens_details",
    "reasoning_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "error",
    "origin",
    "provider",
    "host",
    "model",
    "messages",
    "model_config",
    "reasoning_rejected_carriers",
    "hermes_wire_verdicts",
    "base_url",
    "title",
    "call_id",
    "response_item_id",
    "codex_reasoning_items",
    "timestamp",
    "finish",
    "_hermes_turn",
    "tool_name",
    "metadata",
    "raw",
    "detail",
    "loc",
    "msg",
    "status",
    "code",
    "param",
    "refusal",
];

/// String values the parsers compare against.
const STRINGS: &[&str] = &[
    "assistant",
    "user",
    "tool",
    "system",
    "developer",
    "function",
    "reasoning.text",
    "reasoning.encrypted",
    "reasoning.summary",
    "hermes.native_assistant",
    "hermes.session.v1",
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "",
    " ",
    "\u{0}",
    "é",
    "😀",
    "\u{2028}",
    "\u{feff}",
    "Extra inputs are not permitted",
    "is unsupported",
    "unknown field",
    "Unrecognized request argument supplied: ",
    "reasoning_content",
    "reasoning_details",
    "reasoning",
    "messages.1.reasoning",
    "call_1",
    "{}",
    "{\"a\":",
    "null",
    "chat",
    "openrouter.ai",
    "model-a",
];

/// Raw JSON tokens that a `serde_json::Value` cannot hold as written (big or odd numbers,
/// escapes), spliced in through placeholders.
const RAW_TOKENS: &[&str] = &[
    "123456789012345678901234567890",
    "-123456789012345678901234567890",
    "18446744073709551616",
    "18446744073709551615",
    "-9223372036854775809",
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "0.0",
    "1E+2",
    "4294967296",
    "\"caf\\u00e9 a\\/b\"",
    "\"\\ud83d\\ude00\"",
    "\"\\ud800\"",
    "\"\\udc00x\"",
    "\"\\u0000\"",
    "\"\\\\\\\"\"",
    "\"\\t\\n\\r\\b\\f\"",
];

/// Byte strings worth inserting anywhere.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "\\",
    "\\u",
    "\\u00e9",
    "\\ud800",
    "null",
    "true",
    "-0",
    "1e999",
    "0x1",
    "\n",
    "\r\n",
    "data: ",
    "[DONE]",
    "é",
    "😀",
    "\u{0}",
    "{}",
    "[]",
    "\"\"",
    "123456789012345678901234567890",
];

/// A fresh input for a target of `shape` from `seeds` (may be empty).
pub(crate) fn generate(rng: &mut Rng, seeds: &[Vec<u8>], shape: Shape) -> Vec<u8> {
    if seeds.is_empty() || rng.chance(4) {
        return random_bytes(rng);
    }
    let mut input = rng.pick(seeds).clone();
    // Mostly one mutation: each byte-level one tends to break the JSON the parsers need.
    let rounds = if rng.chance(50) { 1 } else { 2 + rng.below(3) };
    for _ in 0..rounds {
        input = if rng.chance(70) {
            structural(rng, &input, seeds, shape).unwrap_or_else(|| bytes(rng, input, seeds))
        } else {
            bytes(rng, input, seeds)
        };
    }
    input.truncate(MAX_INPUT);
    input
}

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(512);
    let json_ish = rng.chance(50);
    (0..len)
        .map(|_| {
            if json_ish {
                *rng.pick(b"{}[]\",:0123456789.-eE truefalsnl\\u\n")
            } else {
                rng.byte()
            }
        })
        .collect()
}

// ---------------------------------------------------------------- byte level

/// One byte-level mutation.
pub(crate) fn bytes(rng: &mut Rng, mut input: Vec<u8>, seeds: &[Vec<u8>]) -> Vec<u8> {
    let len = input.len();
    let at = rng.below(len + 1);
    match rng.below(9) {
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            input[i] = rng.byte();
        }
        2 => {
            let n = 1 + rng.below(8);
            let insert: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            input.splice(at..at, insert);
        }
        3 if len > 0 => {
            let n = 1 + rng.below(len.min(64));
            let end = (at + n).min(len);
            input.drain(at.min(end)..end);
        }
        4 if len > 0 => {
            let start = rng.below(len);
            let end = (start + 1 + rng.below(64)).min(len);
            let piece = input[start..end].to_vec();
            input.splice(at..at, piece);
        }
        5 => {
            let token = rng.pick(TOKENS).as_bytes().to_vec();
            input.splice(at..at, token);
        }
        6 => {
            let token = rng.pick(TOKENS).as_bytes();
            let end = (at + token.len()).min(len);
            input.splice(at..end, token.iter().copied());
        }
        7 => input.truncate(at),
        _ => {
            // Splice: our prefix, another seed's suffix.
            let other = rng.pick(seeds);
            let from = rng.below(other.len() + 1);
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
    }
    input
}

// ---------------------------------------------------------------- structure aware

/// One structure-aware mutation, or `None` when the input is not JSON of the expected shape.
fn structural(rng: &mut Rng, input: &[u8], seeds: &[Vec<u8>], shape: Shape) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(input).ok()?;
    match shape {
        Shape::Json | Shape::Text => {
            let doc: Value = serde_json::from_str(text).ok()?;
            let donor = donor(rng, seeds, shape);
            Some(mutate_document(rng, doc, donor.as_ref()).into_bytes())
        }
        Shape::Lines => Some(mutate_lines(rng, text, seeds).into_bytes()),
    }
}

/// A JSON value from another seed, for cross-over.
fn donor(rng: &mut Rng, seeds: &[Vec<u8>], shape: Shape) -> Option<Value> {
    let seed = std::str::from_utf8(rng.pick(seeds).as_slice()).ok()?;
    let text = match shape {
        Shape::Lines => {
            let lines: Vec<&str> = seed.lines().collect();
            *rng.pick(&lines)
        }
        _ => seed,
    };
    serde_json::from_str(text.strip_prefix("data: ").unwrap_or(text)).ok()
}

fn mutate_lines(rng: &mut Rng, text: &str, seeds: &[Vec<u8>]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if lines.is_empty() {
        lines.push("{}".to_owned());
    }
    let at = rng.below(lines.len());
    match rng.below(8) {
        0 => {
            let copy = lines[at].clone();
            let to = rng.below(lines.len() + 1);
            lines.insert(to, copy);
        }
        1 if lines.len() > 1 => {
            lines.remove(at);
        }
        2 => {
            let other = rng.below(lines.len());
            lines.swap(at, other);
        }
        3 => {
            if let Some(v) = donor(rng, seeds, Shape::Lines) {
                let to = rng.below(lines.len() + 1);
                lines.insert(to, v.to_string());
            }
        }
        4 => lines[at] = format!("data: {}", lines[at]),
        _ => {
            let line = lines[at].clone();
            if let Ok(doc) = serde_json::from_str::<Value>(&line) {
                let donor = donor(rng, seeds, Shape::Lines);
                lines[at] = mutate_document(rng, doc, donor.as_ref());
            }
        }
    }
    let mut out = lines.join("\n");
    if rng.chance(80) {
        out.push('\n');
    }
    out
}

/// Mutates `doc` one to three times and renders it, raw tokens spliced in.
fn mutate_document(rng: &mut Rng, mut doc: Value, donor: Option<&Value>) -> String {
    let mut raws = Vec::new();
    for _ in 0..=rng.below(3) {
        let count = count_nodes(&doc);
        let target = rng.below(count);
        let mut seen = 0;
        mutate_at(rng, &mut doc, target, &mut seen, donor, &mut raws);
    }
    let mut text = if rng.chance(10) {
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    } else {
        doc.to_string()
    };
    for (i, raw) in raws.iter().enumerate() {
        text = text.replace(&format!("\"{}\"", placeholder(i)), raw);
    }
    text
}

fn placeholder(i: usize) -> String {
    format!("@@raw{i}@@")
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Walks to the `target`-th node (pre-order) and mutates it or its container.
fn mutate_at(
    rng: &mut Rng,
    v: &mut Value,
    target: usize,
    seen: &mut usize,
    donor: Option<&Value>,
    raws: &mut Vec<&'static str>,
) -> bool {
    if *seen == target {
        mutate_node(rng, v, donor, raws);
        return true;
    }
    *seen += 1;
    match v {
        Value::Array(items) => {
            for i in 0..items.len() {
                let before = *seen;
                if mutate_at(rng, &mut items[i], target, seen, donor, raws) {
                    // Sometimes act on the container around the node instead.
                    if rng.chance(20) && before == target && i < items.len() {
                        mutate_array(rng, items, i);
                    }
                    return true;
                }
            }
            false
        }
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                let before = *seen;
                let Some(child) = o.get_mut(&k) else { continue };
                if mutate_at(rng, child, target, seen, donor, raws) {
                    if rng.chance(25) && before == target {
                        mutate_object(rng, o, &k);
                    }
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

fn mutate_array(rng: &mut Rng, items: &mut Vec<Value>, i: usize) {
    match rng.below(3) {
        0 => {
            items.remove(i);
        }
        1 => {
            let copy = items[i].clone();
            items.insert(rng.below(items.len() + 1), copy);
        }
        _ => {
            let j = rng.below(items.len());
            items.swap(i, j);
        }
    }
}

fn mutate_object(rng: &mut Rng, o: &mut Map<String, Value>, key: &str) {
    match rng.below(4) {
        0 => {
            o.shift_remove(key);
        }
        1 => {
            // Rename, keeping the position.
            let renamed: Map<String, Value> = std::mem::take(o)
                .into_iter()
                .map(|(k, v)| if k == key { (pick_key(rng), v) } else { (k, v) })
                .collect();
            *o = renamed;
        }
        2 => {
            // Move the key to the end (key order matters to byte-exact capture).
            if let Some(v) = o.shift_remove(key) {
                o.insert(key.to_owned(), v);
            }
        }
        _ => {
            let v = o.get(key).cloned().unwrap_or(Value::Null);
            o.insert(pick_key(rng), v);
        }
    }
}

fn pick_key(rng: &mut Rng) -> String {
    (*rng.pick(KEYS)).to_owned()
}

fn mutate_node(rng: &mut Rng, v: &mut Value, donor: Option<&Value>, raws: &mut Vec<&'static str>) {
    match rng.below(10) {
        0 | 1 => *v = scalar(rng, raws),
        2 => *v = container(rng, raws),
        3 => {
            // Cross-over: a subtree of another seed.
            if let Some(d) = donor {
                let count = count_nodes(d);
                if let Some(sub) = nth_node(d, rng.below(count)) {
                    *v = sub.clone();
                }
            }
        }
        4 => {
            let inner = std::mem::take(v);
            *v = if rng.chance(50) {
                Value::Array(vec![inner])
            } else {
                let mut o = Map::new();
                o.insert(pick_key(rng), inner);
                Value::Object(o)
            };
        }
        5 => {
            if let Value::Object(o) = v {
                let value = scalar(rng, raws);
                o.insert(pick_key(rng), value);
            } else if let Value::Array(items) = v {
                let value = scalar(rng, raws);
                items.push(value);
            } else {
                *v = scalar(rng, raws);
            }
        }
        6 => {
            if let Value::Object(o) = v
                && !o.is_empty()
            {
                let i = rng.below(o.len());
                let key = o.keys().nth(i).cloned().unwrap_or_default();
                mutate_object(rng, o, &key);
            } else if let Value::Array(items) = v
                && !items.is_empty()
            {
                let i = rng.below(items.len());
                mutate_array(rng, items, i);
            }
        }
        _ => {
            if let Value::String(s) = v {
                mutate_string(rng, s);
            } else if let Value::Number(_) = v {
                *v = number(rng, raws);
            } else {
                *v = scalar(rng, raws);
            }
        }
    }
}

fn nth_node(v: &Value, n: usize) -> Option<&Value> {
    fn walk<'a>(v: &'a Value, n: usize, seen: &mut usize) -> Option<&'a Value> {
        if *seen == n {
            return Some(v);
        }
        *seen += 1;
        match v {
            Value::Array(items) => items.iter().find_map(|c| walk(c, n, seen)),
            Value::Object(o) => o.values().find_map(|c| walk(c, n, seen)),
            _ => None,
        }
    }
    walk(v, n, &mut 0)
}

fn mutate_string(rng: &mut Rng, s: &mut String) {
    let chars: Vec<char> = s.chars().collect();
    let at = rng.below(chars.len() + 1);
    let (head, tail) = chars.split_at(at);
    let head: String = head.iter().collect();
    let tail: String = tail.iter().collect();
    *s = match rng.below(5) {
        0 => head,
        1 => format!("{head}{}{tail}", rng.pick(STRINGS)),
        2 => format!("{head}{head}{tail}"),
        3 => s.repeat(1 + rng.below(4)),
        _ => (*rng.pick(STRINGS)).to_owned(),
    };
}

fn number(rng: &mut Rng, raws: &mut Vec<&'static str>) -> Value {
    match rng.below(6) {
        0 => Value::from(0),
        1 => Value::from(-1),
        2 => Value::from(u64::MAX),
        3 => Value::from(i64::MIN),
        4 => serde_json::Number::from_f64(0.5).map_or(Value::Null, Value::Number),
        _ => raw(rng, raws, &RAW_TOKENS[..12]),
    }
}

fn raw(rng: &mut Rng, raws: &mut Vec<&'static str>, from: &[&'static str]) -> Value {
    let token = *rng.pick(from);
    raws.push(token);
    Value::String(placeholder(raws.len() - 1))
}

fn scalar(rng: &mut Rng, raws: &mut Vec<&'static str>) -> Value {
    match rng.below(7) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => number(rng, raws),
        3 => raw(rng, raws, RAW_TOKENS),
        4 => Value::String("x".repeat(rng.below(2000))),
        _ => Value::String((*rng.pick(STRINGS)).to_owned()),
    }
}

fn container(rng: &mut Rng, raws: &mut Vec<&'static str>) -> Value {
    match rng.below(4) {
        0 => Value::Array(Vec::new()),
        1 => Value::Object(Map::new()),
        2 => Value::Array((0..rng.below(4)).map(|_| scalar(rng, raws)).collect()),
        _ => {
            let mut o = Map::new();
            for _ in 0..=rng.below(3) {
                let value = scalar(rng, raws);
                o.insert(pick_key(rng), value);
            }
            Value::Object(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_stay_bounded_and_mostly_parse() {
        let seeds = vec![
            br#"{"choices":[{"delta":{"content":"a","tool_calls":[{"index":0,"id":"c"}]}}]}"#
                .to_vec(),
            br#"[{"role":"user","content":"hi"},{"role":"assistant","content":null}]"#.to_vec(),
        ];
        let mut rng = Rng::new(42);
        let mut parsed = 0;
        let mut raw_spliced = false;
        for _ in 0..2000 {
            let out = generate(&mut rng, &seeds, Shape::Json);
            assert!(out.len() <= MAX_INPUT);
            let text = String::from_utf8_lossy(&out);
            raw_spliced |= RAW_TOKENS.iter().any(|t| text.contains(t));
            parsed += usize::from(serde_json::from_slice::<Value>(&out).is_ok());
        }
        assert!(parsed > 300, "{parsed}");
        assert!(raw_spliced);
        let lines = generate(&mut Rng::new(1), &seeds, Shape::Lines);
        assert!(lines.len() <= MAX_INPUT);
    }
}
