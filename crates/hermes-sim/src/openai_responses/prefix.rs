//! Reasoning items bound to their prefix (docs/spec.md §5a, issue 46: "OpenAI's newer models
//! silently drop reasoning items that follow a prefix change").
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
//!
//! Compaction (docs/spec.md §7): the input digest is a running one ([`chain`]), and a `compaction`
//! item the simulator sealed carries the running digest of the input it compacted, so what follows
//! it is read as following that input: the kept turns of a `/responses/compact` keep their
//! reasoning, while any other edit still changes the prefix. Items before the latest compaction
//! item are dropped silently, as the server does, and noted.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::wire::canonical;

/// `rs_…` id → the prefix digest it was minted after ([`digest`]), and the running digest of
/// its input alone ([`chain`]: what a `POST /responses/compact` request, which takes no
/// `tools`, is compared on).
pub(crate) type Minted = HashMap<String, ([u8; 32], [u8; 32])>;

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

/// One step of the running digest of the input: `SHA256(chain ‖ canonical(item))` for an item
/// that counts (reasoning and compaction items do not).
fn step(chain: [u8; 32], item: &Value) -> [u8; 32] {
    match normalized(item) {
        Some(item) => {
            let mut h = Sha256::new();
            h.update(chain);
            h.update(canonical(&item));
            h.finalize().into()
        }
        None => chain,
    }
}

/// The running digest at the start of an input.
fn start() -> [u8; 32] {
    Sha256::digest(b"input").into()
}

/// The running digest of `items` (reasoning items left out). A compaction item stands for the
/// input it compacted: the digest starts again from the one it was sealed with (`opened` reads
/// it; an item it cannot open changes nothing, the rules refuse it).
pub(crate) fn chain(items: &[Value], opened: &dyn Fn(&Value) -> Option<[u8; 32]>) -> [u8; 32] {
    items.iter().fold(start(), |c, item| {
        if item.get("type").and_then(Value::as_str) == Some("compaction") {
            opened(item).unwrap_or(c)
        } else {
            step(c, item)
        }
    })
}

/// Digest of `instructions`, `tools` and the running digest `chain` of the input before a point.
pub(crate) fn digest(body: &Value, chain: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"instructions\0");
    h.update(canonical(body.get("instructions").unwrap_or(&Value::Null)));
    h.update(b"\0tools\0");
    h.update(canonical(body.get("tools").unwrap_or(&json!([]))));
    h.update(b"\0input\0");
    h.update(chain);
    h.finalize().into()
}

/// The notes for what the server drops silently: every item before the latest compaction item
/// (OpenAI's compaction guide: "you can drop items that came before the most recent compaction
/// item … The latest compaction item carries the necessary context", developers.openai.com/api/
/// docs/guides/compaction), and remembered reasoning items replayed after a changed prefix.
pub(crate) fn drops(
    body: &Value,
    minted: &Minted,
    opened: &dyn Fn(&Value) -> Option<[u8; 32]>,
    compact: bool,
) -> Vec<String> {
    let items = items(body);
    let mut notes = Vec::new();
    let latest = items
        .iter()
        .rposition(|i| i.get("type").and_then(Value::as_str) == Some("compaction"));
    if let Some(c) = latest {
        for (i, item) in items[..c].iter().enumerate() {
            let kind = item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message");
            // A configuration update stays in effect "until a later update replaces that
            // setting" (openai-python 3.57.0 `response_configuration_update_item.py`): kept.
            if kind == "configuration_update" {
                continue;
            }
            notes.push(format!(
                "input[{i}]: {kind} item dropped (it comes before the latest compaction item, input[{c}])"
            ));
        }
    }
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("reasoning") {
            continue;
        }
        let id = item.get("id").and_then(Value::as_str).unwrap_or("");
        let now = chain(&items[..i], opened);
        if let Some((made, made_chain)) = minted.get(id)
            && (if compact {
                *made_chain != now
            } else {
                *made != digest(body, &now)
            })
        {
            notes.push(format!(
                "input[{i}]: reasoning item {id} dropped (the prefix changed since it was made)"
            ));
        }
    }
    notes
}
