//! Properties every native wire keeps, checked by running a registered [`Wire`] over a built-in
//! corpus of histories (Anthropic-shaped signed and redacted thinking in and before the tool
//! loop, another model's turns, a turn not replayed, an imported turn, a dangling call, an
//! orphan result, content parts, and the Python original's persistence keys of the chat corpus).
//!
//! Each history goes through `hermes_core::pairing::paired` first, as the driver does before
//! every request, and is encoded with no thinking preference and with `--effort high`, with a
//! tool definition. Three passes: the target is the corpus's first model, its second model, and
//! its first model while everything was minted on another host.

use std::collections::{BTreeSet, HashMap};

use hermes_core::message::same_minter;
use hermes_core::pairing::paired;
use hermes_core::{
    DetailItem, Effort, Message, RawJson, RequestParts, ResolveOptions, Role, RouteTable,
    RouteTarget, ThinkingRequest, Verdicts, Wire, WireVerdicts,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Check;

/// The wire corpus: named histories (`[{"name", "history"}]`).
const WIRE_CORPUS: &str = include_str!("wire_corpus.json");
/// The chat invariants' corpus, run through native wires too (the Python original's keys).
const CHAT_CORPUS: &str = include_str!("corpus.json");

/// The models the corpus's turns were minted by (`model-a`, `model-b` in the corpus files);
/// the passes target each of them, and the first one again on another host.
pub const WIRE_CORPUS_MODELS: [&str; 2] = ["claude-opus-4-6", "claude-sonnet-4-5"];

/// The host the corpus's items were minted on in the third pass.
const ELSEWHERE: &str = "elsewhere.invalid";

/// Keys whose string values are opaque (signed, encrypted or redacted): replayed only to their
/// minter, and then byte for byte.
const OPAQUE_KEYS: &[&str] = &[
    "signature",
    "data",
    "encrypted_content",
    "thought_signature",
    "reasoning_opaque",
];

/// Stored keys no native wire sends (SPEC §2: storage keeps every key; a wire sends only what
/// its schema defines), whatever the corpus holds.
const BOOKKEEPING: &[&str] = &[
    "origin",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "reasoning_text",
    "reasoning_opaque",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "function",
    "arguments",
    "extra_content",
    "thought_signature",
    "call_id",
    "response_item_id",
    "finish_reason",
    "timestamp",
    "platform_message_id",
    "message_uid",
    "effect_disposition",
    "anthropic_content_blocks",
    "bedrock_content_blocks",
    "api_content",
    "key_order",
];

/// Key prefixes no native wire sends.
const BOOKKEEPING_PREFIXES: &[&str] = &["hermes_", "codex_", "_"];

#[derive(Deserialize)]
struct Named {
    name: String,
    history: Vec<Message>,
}

/// One invariant over a stored history and the body sent for it.
type Invariant<'a> = dyn Fn(&[Message], &Sent) -> Result<(), String> + 'a;

/// One encoded request of a pass.
struct Sent {
    history: String,
    thinking: &'static str,
    text: String,
    body: Value,
}

/// Runs every native-wire invariant through `wire` for `provider` at `base_url`. Each check is
/// reported under the route that target resolves to, named `<wire> wire: <invariant> [<model>
/// @ <host>]`.
pub fn check_wire_invariants(
    table: &RouteTable,
    wire: &dyn Wire,
    provider: &str,
    base_url: Option<&str>,
) -> Vec<Check> {
    let wire_id = wire.id();
    let corpus = match corpus() {
        Ok(c) => c,
        Err(e) => {
            let target = RouteTarget::new(provider, base_url, WIRE_CORPUS_MODELS[0]);
            let route = table.resolve(&target, ResolveOptions::default());
            return vec![Check {
                route: route.id().to_owned(),
                name: format!("{wire_id} wire: invariant corpus"),
                failure: Some(e),
            }];
        }
    };
    let tools = RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]"#,
    )
    .ok();
    let mut checks = Vec::new();
    for (model, elsewhere) in [
        (WIRE_CORPUS_MODELS[0], false),
        (WIRE_CORPUS_MODELS[1], false),
        (WIRE_CORPUS_MODELS[0], true),
    ] {
        let target = RouteTarget::new(provider, base_url, model);
        let decision = table.resolve(&target, ResolveOptions::default());
        let route = decision.id().to_owned();
        let host = target.host_key();
        let minted_on = if elsewhere {
            ELSEWHERE.to_owned()
        } else {
            host.clone()
        };
        let label = if elsewhere {
            format!("{model} @ {host}, minted on another host")
        } else {
            format!("{model} @ {host}")
        };
        let mut check = |name: &str, result: Result<(), String>| {
            checks.push(Check {
                route: route.clone(),
                name: format!("{wire_id} wire: {name} [{label}]"),
                failure: result.err(),
            });
        };
        let histories: Vec<(&str, Vec<Message>)> = corpus
            .iter()
            .map(|(name, h)| (name.as_str(), minted(h, &minted_on)))
            .collect();
        let verdicts = Verdicts::default();
        let wire_verdicts = WireVerdicts::default();

        let mut sent = Vec::new();
        let mut unchanged = Ok(());
        let mut same_twice = Ok(());
        let mut encode_failed = None;
        for (name, history) in &histories {
            let before = serde_json::to_string(history).unwrap_or_default();
            let (copy, _) = paired(history);
            let copy_before = serde_json::to_string(copy.as_ref()).unwrap_or_default();
            for (thinking, word) in [
                (ThinkingRequest::NoPreference, "no preference"),
                (ThinkingRequest::Effort(Effort::High), "effort high"),
            ] {
                let parts = RequestParts::new(&copy, &decision, &verdicts)
                    .wire_verdicts(&wire_verdicts)
                    .thinking(thinking)
                    .tools(tools.as_ref());
                let (first, second) = match (wire.encode(&parts), wire.encode(&parts)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        encode_failed.get_or_insert(format!("history `{name}`, {word}: {e}"));
                        continue;
                    }
                };
                if same_twice.is_ok()
                    && (first.body != second.body
                        || first.notes != second.notes
                        || first.refusable != second.refusable)
                {
                    same_twice = Err(format!(
                        "history `{name}`, {word}: encoding the same parts twice gave other bytes\n  first:  {}\n  second: {}",
                        String::from_utf8_lossy(&first.body),
                        String::from_utf8_lossy(&second.body)
                    ));
                }
                let text = match String::from_utf8(first.body) {
                    Ok(t) => t,
                    Err(e) => {
                        encode_failed
                            .get_or_insert(format!("history `{name}`, {word}: not UTF-8: {e}"));
                        continue;
                    }
                };
                match serde_json::from_str::<Value>(&text) {
                    Ok(body) => sent.push(Sent {
                        history: (*name).to_owned(),
                        thinking: word,
                        text,
                        body,
                    }),
                    Err(e) => {
                        encode_failed.get_or_insert(format!(
                            "history `{name}`, {word}: the body is not JSON: {e}"
                        ));
                    }
                }
            }
            let after = serde_json::to_string(history).unwrap_or_default();
            let copy_after = serde_json::to_string(copy.as_ref()).unwrap_or_default();
            if unchanged.is_ok() && (before != after || copy_before != copy_after) {
                unchanged = Err(format!("history `{name}`: encoding changed the history"));
            }
        }
        check(
            "encodes the corpus",
            encode_failed.map_or(Ok(()), Err::<(), String>),
        );
        check("input unchanged", unchanged);
        check("same bytes twice", same_twice);

        let own = |m: &Message| m.origin.as_ref().is_none_or(|o| same_minter(o, &target));
        let by_history = |name: &str| {
            histories
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, h)| h.as_slice())
                .unwrap_or_default()
        };
        let each = |f: &Invariant<'_>| {
            for s in &sent {
                f(by_history(&s.history), s)
                    .map_err(|e| format!("history `{}`, {}: {e}", s.history, s.thinking))?;
            }
            Ok(())
        };
        check(
            "opaque items byte for byte",
            each(&|h, s| byte_for_byte(h, &s.text, &own)),
        );
        check(
            "opaque items only to their minter",
            each(&|h, s| only_to_minter(h, s, &own)),
        );
        check(
            "no stored bookkeeping key",
            each(&|h, s| no_bookkeeping(h, &s.body)),
        );
        check("Messages schema", each(&|_, s| messages_schema(&s.body)));
        check(
            "tool_use answered in the next user turn",
            each(&|_, s| tool_use_paired(&s.body)),
        );
        check(
            "no cache breakpoint on thinking",
            each(&|_, s| no_cached_thinking(&s.body)),
        );
    }
    checks
}

/// The wire corpus and the chat corpus, named.
fn corpus() -> Result<Vec<(String, Vec<Message>)>, String> {
    let named: Vec<Named> =
        serde_json::from_str(WIRE_CORPUS).map_err(|e| format!("wire_corpus.json: {e}"))?;
    let chat: Vec<Message> =
        serde_json::from_str(CHAT_CORPUS).map_err(|e| format!("corpus.json: {e}"))?;
    let mut out: Vec<(String, Vec<Message>)> =
        named.into_iter().map(|n| (n.name, n.history)).collect();
    out.push(("python original keys (chat corpus)".to_owned(), chat));
    Ok(out)
}

/// The corpus with its placeholder origins made real: `model-a`/`model-b` become
/// [`WIRE_CORPUS_MODELS`], and every origin's host `minted_on`.
fn minted(history: &[Message], minted_on: &str) -> Vec<Message> {
    history
        .iter()
        .cloned()
        .map(|mut m| {
            if let Some(o) = &mut m.origin {
                o.host = minted_on.to_owned();
                o.model = match o.model.as_str() {
                    "model-a" => WIRE_CORPUS_MODELS[0].to_owned(),
                    "model-b" => WIRE_CORPUS_MODELS[1].to_owned(),
                    other => other.to_owned(),
                };
            }
            m
        })
        .collect()
}

/// An opaque string: its literal as stored (escapes kept) and its text.
#[derive(Clone, Debug)]
struct Opaque {
    literal: String,
    text: String,
}

impl Opaque {
    /// Whether the body holds it, as stored or re-escaped.
    fn in_body(&self, body: &str) -> bool {
        body.contains(&self.literal)
            || serde_json::to_string(&self.text).is_ok_and(|quoted| body.contains(&quoted))
    }
}

/// Every non-blank string under an opaque key anywhere in the JSON text `raw`.
fn opaque_strings(raw: &str, out: &mut Vec<Opaque>) {
    if let Ok(map) = serde_json::from_str::<HashMap<String, &RawValue>>(raw) {
        for (key, value) in map {
            let literal = value.get();
            if OPAQUE_KEYS.contains(&key.as_str()) && literal.starts_with('"') {
                if let Ok(text) = serde_json::from_str::<String>(literal)
                    && !text.trim().is_empty()
                {
                    out.push(Opaque {
                        literal: literal.to_owned(),
                        text,
                    });
                }
            } else {
                opaque_strings(literal, out);
            }
        }
    } else if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw) {
        for item in items {
            opaque_strings(item.get(), out);
        }
    }
}

/// The opaque strings of a whole stored message (carriers, tool calls, unknown keys).
fn message_opaques(msg: &Message) -> Vec<Opaque> {
    let mut out = Vec::new();
    if let Ok(text) = serde_json::to_string(msg) {
        opaque_strings(&text, &mut out);
    }
    out
}

/// A message the wire copy sends: replayable (`paired` leaves the others out).
fn replayed(msg: &Message) -> bool {
    msg.role != Role::Assistant || msg.replayable()
}

/// Every stored opaque `reasoning_details` item of a message this target may receive that
/// reaches the body is there exactly as stored.
fn byte_for_byte(
    history: &[Message],
    body: &str,
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    for msg in history.iter().filter(|m| own(m) && replayed(m)) {
        for item in msg.reasoning_details.iter().flatten() {
            let DetailItem::Provider { raw, opaque: true } = item else {
                continue;
            };
            let mut markers = Vec::new();
            opaque_strings(raw.get(), &mut markers);
            if markers.iter().any(|m| m.in_body(body)) && !body.contains(raw.get()) {
                return Err(format!(
                    "stored item {} reached the body, but not byte for byte",
                    raw.get()
                ));
            }
        }
    }
    Ok(())
}

/// No opaque string of another model's or host's turn, or of a turn not replayed, reaches the
/// body; and every signature or redacted blob in the body is one a stored turn of this target's
/// minter holds.
fn only_to_minter(
    history: &[Message],
    sent: &Sent,
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    let mut allowed: BTreeSet<String> = BTreeSet::new();
    for msg in history {
        let opaques = message_opaques(msg);
        if own(msg) && replayed(msg) {
            allowed.extend(opaques.into_iter().map(|o| o.text));
            continue;
        }
        if let Some(o) = opaques.iter().find(|o| o.in_body(&sent.text)) {
            let why = match &msg.origin {
                Some(origin) if !replayed(msg) => format!(
                    "of a turn stored not replayed (minted by {} on {})",
                    origin.model, origin.host
                ),
                Some(origin) => format!("minted by {} on {}", origin.model, origin.host),
                None => "of a turn not replayed".to_owned(),
            };
            return Err(format!(
                "opaque {} {why} reached the body: {}",
                o.literal, sent.text
            ));
        }
    }
    for block in content_blocks(&sent.body) {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        for key in ["signature", "data"] {
            let Some(value) = block.get(key).and_then(Value::as_str) else {
                continue;
            };
            if matches!(kind, "thinking" | "redacted_thinking") && !allowed.contains(value) {
                return Err(format!(
                    "a `{kind}` block carries `{key}` {value:?}, which no stored turn of this model and host holds: {block}"
                ));
            }
        }
    }
    Ok(())
}

/// Every content block of every message (tool results' nested blocks included).
fn content_blocks(body: &Value) -> Vec<&Value> {
    fn nested<'v>(blocks: &'v [Value], out: &mut Vec<&'v Value>) {
        for block in blocks {
            out.push(block);
            if let Some(inner) = block.get("content").and_then(Value::as_array) {
                nested(inner, out);
            }
        }
    }
    let mut out = Vec::new();
    for msg in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(blocks) = msg.get("content").and_then(Value::as_array) {
            nested(blocks, &mut out);
        }
    }
    out
}

/// A body of the Messages shape (`max_tokens` and `messages` at the top).
fn is_messages(body: &Value) -> bool {
    body.get("max_tokens").is_some() && body.get("messages").is_some_and(Value::is_array)
}

/// No key of the stored bookkeeping (origins, `hermes_*`, `codex_*`, the chat carriers and
/// tool-call fields, the Python original's keys, any key the corpus stores that is not a
/// message's `role`, `content` or `name`) appears anywhere in the body, tool inputs and input
/// schemas aside (they are the tool's own data).
fn no_bookkeeping(history: &[Message], body: &Value) -> Result<(), String> {
    let mut stored: BTreeSet<String> = BTreeSet::new();
    for msg in history {
        let Ok(Value::Object(obj)) = serde_json::to_value(msg) else {
            continue;
        };
        for (key, value) in &obj {
            stored.insert(key.clone());
            if key == "tool_calls" {
                for call in value.as_array().into_iter().flatten() {
                    stored.extend(
                        call.as_object()
                            .into_iter()
                            .flatten()
                            .map(|(k, _)| k.clone()),
                    );
                }
            }
        }
    }
    for keep in ["role", "content", "name", "id", "type"] {
        stored.remove(keep);
    }
    let forbidden = |key: &str| {
        BOOKKEEPING.contains(&key)
            || BOOKKEEPING_PREFIXES.iter().any(|p| key.starts_with(p))
            || stored.contains(key)
    };
    walk_keys(body, "$", &mut |path, key| {
        if forbidden(key) {
            Err(format!("stored key `{key}` reached the body at {path}"))
        } else {
            Ok(())
        }
    })
}

/// Calls `visit` with every object key of `value` and its path, skipping a `tool_use` block's
/// `input` and a tool's `input_schema`.
fn walk_keys(
    value: &Value,
    path: &str,
    visit: &mut dyn FnMut(&str, &str) -> Result<(), String>,
) -> Result<(), String> {
    match value {
        Value::Object(obj) => {
            let tool_use = obj.get("type").and_then(Value::as_str) == Some("tool_use");
            for (key, inner) in obj {
                visit(path, key)?;
                if (tool_use && key == "input") || key == "input_schema" {
                    continue;
                }
                walk_keys(inner, &format!("{path}.{key}"), visit)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                walk_keys(inner, &format!("{path}[{i}]"), visit)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn keys_within(obj: &Value, allowed: &[&str], what: &str) -> Result<(), String> {
    let Some(map) = obj.as_object() else {
        return Err(format!("{what} is not an object: {obj}"));
    };
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{what} carries `{k}`: {obj}")),
        None => Ok(()),
    }
}

/// One content block of the Messages schema.
fn block_schema(block: &Value, what: &str) -> Result<(), String> {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let allowed: &[&str] = match kind {
        "text" => &["type", "text", "cache_control", "citations"],
        "image" | "document" => &["type", "source", "title", "context", "cache_control"],
        "thinking" => &["type", "thinking", "signature"],
        "redacted_thinking" => &["type", "data"],
        "tool_use" => &["type", "id", "name", "input", "cache_control"],
        "tool_result" => &[
            "type",
            "tool_use_id",
            "content",
            "is_error",
            "cache_control",
        ],
        other => return Err(format!("{what} has block type `{other}`: {block}")),
    };
    keys_within(block, allowed, what)?;
    if let Some(cache) = block.get("cache_control") {
        keys_within(cache, &["type", "ttl"], &format!("{what}.cache_control"))?;
    }
    match kind {
        "text" if !block.get("text").is_some_and(Value::is_string) => {
            Err(format!("{what}: `text` is not a string: {block}"))
        }
        "tool_use" if !block.get("input").is_some_and(Value::is_object) => {
            Err(format!("{what}: `input` is not an object: {block}"))
        }
        "tool_result" => match block.get("content") {
            None | Some(Value::String(_)) => Ok(()),
            Some(Value::Array(inner)) => inner
                .iter()
                .enumerate()
                .try_for_each(|(i, b)| block_schema(b, &format!("{what}.content[{i}]"))),
            Some(other) => Err(format!("{what}: tool result content {other}")),
        },
        _ => Ok(()),
    }
}

/// A Messages-shaped body uses only the Messages API's own keys (top level, messages, blocks,
/// system, tools, thinking): nothing else reaches the wire.
fn messages_schema(body: &Value) -> Result<(), String> {
    if !is_messages(body) {
        return Ok(());
    }
    keys_within(
        body,
        &[
            "model",
            "anthropic_version",
            "max_tokens",
            "system",
            "messages",
            "tools",
            "tool_choice",
            "thinking",
            "output_config",
            "temperature",
            "top_p",
            "top_k",
            "stop_sequences",
            "stream",
            "metadata",
            "service_tier",
        ],
        "the body",
    )?;
    for (i, msg) in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let what = format!("messages[{i}]");
        keys_within(msg, &["role", "content"], &what)?;
        if !matches!(
            msg.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        ) {
            return Err(format!("{what} has role {}", msg["role"]));
        }
        match msg.get("content") {
            Some(Value::String(_)) => {}
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                for (j, block) in blocks.iter().enumerate() {
                    block_schema(block, &format!("{what}.content[{j}]"))?;
                }
            }
            other => return Err(format!("{what} has content {other:?}")),
        }
    }
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (j, block) in blocks.iter().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(format!("system[{j}] is not a text block: {block}"));
                }
                block_schema(block, &format!("system[{j}]"))?;
            }
        }
        Some(other) => return Err(format!("system is {other}")),
    }
    for (j, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        keys_within(
            tool,
            &[
                "name",
                "description",
                "input_schema",
                "cache_control",
                "type",
            ],
            &format!("tools[{j}]"),
        )?;
    }
    if let Some(thinking) = body.get("thinking") {
        keys_within(thinking, &["type", "budget_tokens", "display"], "thinking")?;
    }
    if let Some(config) = body.get("output_config") {
        keys_within(config, &["effort", "format"], "output_config")?;
    }
    Ok(())
}

/// The ids of the blocks of `kind` in a message, with the key that holds them.
fn ids_of<'v>(msg: &'v Value, kind: &str, key: &str) -> Vec<&'v str> {
    msg.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
        .map(|b| b.get(key).and_then(Value::as_str).unwrap_or(""))
        .collect()
}

/// Every `tool_use` of an assistant message is answered by a `tool_result` in the very next
/// message, a user message; every `tool_result` answers a `tool_use` of the assistant message
/// right before it, once.
fn tool_use_paired(body: &Value) -> Result<(), String> {
    if !is_messages(body) {
        return Ok(());
    }
    let messages: Vec<&Value> = body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for (i, msg) in messages.iter().enumerate() {
        let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
        let results = ids_of(msg, "tool_result", "tool_use_id");
        let calls_before = match i.checked_sub(1).and_then(|p| messages.get(p)) {
            Some(prev) if prev.get("role").and_then(Value::as_str) == Some("assistant") => {
                ids_of(prev, "tool_use", "id")
            }
            _ => Vec::new(),
        };
        let mut seen = BTreeSet::new();
        for id in &results {
            if role != "user" || !calls_before.contains(id) || !seen.insert(*id) {
                return Err(format!(
                    "messages[{i}]: tool_result `{id}` answers no tool_use of the message before it (or answers it twice)"
                ));
            }
        }
        if role == "assistant" {
            let calls = ids_of(msg, "tool_use", "id");
            let next = messages.get(i + 1);
            let answered = next.map(|n| ids_of(n, "tool_result", "tool_use_id"));
            for id in &calls {
                let ok = next
                    .is_some_and(|n| n.get("role").and_then(Value::as_str) == Some("user"))
                    && answered.as_ref().is_some_and(|a| a.contains(id));
                if !ok {
                    return Err(format!(
                        "messages[{i}]: tool_use `{id}` has no tool_result in the next user message"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// No `cache_control` on a `thinking` or `redacted_thinking` block.
fn no_cached_thinking(body: &Value) -> Result<(), String> {
    for block in content_blocks(body) {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        if matches!(kind, "thinking" | "redacted_thinking") && block.get("cache_control").is_some()
        {
            return Err(format!("a cache breakpoint on a `{kind}` block: {block}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::transport::{Delta, Reply, TransportError};
    use hermes_core::{Origin, Outgoing};
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn names(checks: &[Check], failed: bool) -> BTreeSet<String> {
        checks
            .iter()
            .filter(|c| c.failure.is_some() == failed)
            .map(|c| {
                let name = c.name.split(" [").next().unwrap_or_default();
                name.to_owned()
            })
            .collect()
    }

    #[test]
    fn the_anthropic_wire_keeps_every_invariant() {
        let table = hermes_providers::builtin_table();
        for base in [
            "https://api.anthropic.com",
            "https://api.deepseek.com/anthropic",
            "https://relay.example.com/anthropic",
        ] {
            let wire = hermes_providers::anthropic::AnthropicWire {
                client: hermes_providers::ChatTransport::new().unwrap(),
                target: hermes_providers::anthropic::Target {
                    flavor: hermes_providers::anthropic::Flavor::Direct,
                    base_url: base.to_owned(),
                    max_tokens: None,
                },
                auth: None,
            };
            let checks = check_wire_invariants(&table, &wire, "anthropic", Some(base));
            assert_eq!(checks.len(), 3 * 9, "{checks:#?}");
            let failed: Vec<_> = checks.iter().filter(|c| c.failure.is_some()).collect();
            assert!(failed.is_empty(), "{base}: {failed:#?}");
            assert!(
                checks
                    .iter()
                    .all(|c| c.name.starts_with("anthropic wire: ")),
                "{checks:#?}"
            );
        }
    }

    /// A wire that breaks every rule: a new body each time, every stored item re-serialised
    /// whoever minted it, the origin sent, tool results dropped, thinking cached.
    struct Leaky(AtomicUsize);

    #[async_trait::async_trait]
    impl Wire for Leaky {
        fn id(&self) -> &'static str {
            "leaky"
        }

        fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            let messages: Vec<Value> = parts
                .history
                .iter()
                .filter(|m| m.role != Role::Tool)
                .map(|m| {
                    let mut blocks: Vec<Value> = m
                        .reasoning_details
                        .iter()
                        .flatten()
                        .map(|i| {
                            let mut v = i.raw().to_value();
                            v["cache_control"] = json!({"type": "ephemeral"});
                            v
                        })
                        .collect();
                    for call in m.tool_calls.iter().flatten() {
                        blocks.push(
                            json!({"type": "tool_use", "id": call.id, "name": "now", "input": {}}),
                        );
                    }
                    blocks.push(json!({"type": "text", "text": "x"}));
                    json!({"role": if m.role == Role::Assistant { "assistant" } else { "user" },
                           "content": blocks, "origin": m.origin.as_ref().map(|o| o.model.clone())})
                })
                .collect();
            let body = json!({"model": parts.decision.target.model, "max_tokens": n,
                              "messages": messages});
            Ok(Outgoing::new(
                serde_json::to_vec(&body).unwrap(),
                false,
                Vec::new(),
                0,
            ))
        }

        async fn send(
            &self,
            _: &Outgoing,
            _: Origin,
            _: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
        ) -> Result<Reply, TransportError> {
            Err(TransportError::Request("not sent in this test".into()))
        }
    }

    #[test]
    fn a_wire_that_breaks_the_rules_is_caught_by_each_invariant() {
        let table = hermes_providers::builtin_table();
        let checks = check_wire_invariants(
            &table,
            &Leaky(AtomicUsize::new(0)),
            "anthropic",
            Some("https://api.anthropic.com"),
        );
        let failed = names(&checks, true);
        for name in [
            "leaky wire: same bytes twice",
            "leaky wire: opaque items byte for byte",
            "leaky wire: opaque items only to their minter",
            "leaky wire: no stored bookkeeping key",
            "leaky wire: Messages schema",
            "leaky wire: tool_use answered in the next user turn",
            "leaky wire: no cache breakpoint on thinking",
        ] {
            assert!(failed.contains(name), "{name} not caught: {checks:#?}");
        }
        let passed = names(&checks, false);
        assert!(
            passed.contains("leaky wire: input unchanged"),
            "{checks:#?}"
        );
        assert!(
            passed.contains("leaky wire: encodes the corpus"),
            "{checks:#?}"
        );
    }

    #[test]
    fn the_corpus_parses_and_keeps_its_opaque_bytes() {
        let corpus = corpus().unwrap();
        assert_eq!(corpus.len(), 5);
        let (_, loop_history) = &corpus[0];
        let text = serde_json::to_string(loop_history).unwrap();
        assert!(text.contains(r#""signature": "SIG-LOOP-A\/1=""#), "{text}");
        assert!(text.contains("123456789012345678901234567890"));
    }

    #[test]
    fn opaque_strings_are_found_at_any_depth_with_their_literal() {
        let mut out = Vec::new();
        opaque_strings(
            r#"{"a":[{"signature":"S\/1"},{"data":"  "}],"b":{"thought_signature":"T"},"data":7}"#,
            &mut out,
        );
        let mut literals: Vec<&str> = out.iter().map(|o| o.literal.as_str()).collect();
        literals.sort_unstable();
        assert_eq!(literals, [r#""S\/1""#, r#""T""#]);
        let s = out.iter().find(|o| o.text == "S/1").unwrap();
        assert!(
            s.in_body(r#"{"signature":"S/1"}"#),
            "re-escaped still found"
        );
    }

    #[test]
    fn messages_checks_catch_what_they_name() {
        let ok = json!({"model": "m", "max_tokens": 1, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "now", "input": {"origin": 1}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "1",
                 "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(messages_schema(&ok), Ok(()));
        assert_eq!(tool_use_paired(&ok), Ok(()));
        assert_eq!(no_cached_thinking(&ok), Ok(()));
        assert_eq!(no_bookkeeping(&[], &ok), Ok(()), "tool input is the tool's");

        let mut extra = ok.clone();
        extra["messages"][1]["origin"] = json!({});
        assert!(messages_schema(&extra).is_err());
        assert!(no_bookkeeping(&[], &extra).is_err());
        let mut nested = ok.clone();
        nested["messages"][1]["content"][0]["hermes_block_order"] = json!([]);
        assert!(messages_schema(&nested).is_err());
        let err = no_bookkeeping(&[], &nested).unwrap_err();
        assert!(err.contains("$.messages[1].content[0]"), "{err}");

        let mut unanswered = ok.clone();
        unanswered["messages"][2]["content"][0]["tool_use_id"] = json!("b");
        assert!(tool_use_paired(&unanswered).is_err());
        let mut late = ok.clone();
        late["messages"]
            .as_array_mut()
            .unwrap()
            .insert(2, json!({"role": "user", "content": "wait"}));
        assert!(tool_use_paired(&late).is_err());

        let mut cached = ok;
        cached["messages"][1]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        assert!(no_cached_thinking(&cached).is_err());
    }
}
