//! The normal form of a message (docs/spec.md §10, "Normal form"): what "the same message" means
//! when a gateway client sends a history back without its reasoning carriers.
//!
//! Two messages are the same when their `NormalForm`s are equal: the role; the content as text
//! (a string, or the text parts concatenated in order, images kept in place by their data or
//! URL; `null`, `""` and absent equal; part-level `type` spelling, `cache_control`,
//! `annotations`, `refusal` and `index` ignored); tool calls by id, name and arguments compared
//! as parsed JSON (canonicalised: sorted keys, no whitespace; arguments that are not JSON by
//! their text); a tool result by its `tool_call_id` only. Carriers, thinking blocks and every
//! other key play no part. [`match_key`] is the key a store indexes an assistant message by, to
//! find the session that holds it.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::message::{Message, Role, ToolCall};
use crate::raw::{RawJson, parse_lenient};

/// One piece of a message's content in its normal form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub(crate) enum Piece {
    /// Text (adjacent text parts are joined into one piece; empty text is no piece).
    #[serde(rename = "text")]
    Text(String),
    /// An image, by its data (base64 or a `data:` URL) or its URL.
    #[serde(rename = "image")]
    Image(String),
}

/// A tool call in its normal form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub(crate) struct CallForm {
    /// The call id (`""` when the call has none).
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as canonical JSON text (sorted keys, no whitespace), or the text as sent
    /// when it is not JSON; `""` when absent or `null`.
    pub arguments: String,
}

/// What "the same message" means (docs/spec.md §10): see the module documentation. Build it with
/// [`normal_form`]; compare, hash, or [`NormalForm::digest`] it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct NormalForm {
    role: Role,
    content: Vec<Piece>,
    tool_calls: Vec<CallForm>,
    tool_call_id: Option<String>,
}

/// The canonical encoding's shape: fixed field order, so the bytes are a function of the form.
#[derive(Serialize)]
struct Encoded<'a> {
    role: &'static str,
    content: &'a [Piece],
    tool_calls: &'a [CallForm],
    tool_call_id: Option<&'a str>,
}

impl NormalForm {
    /// The content pieces, in order (empty for a tool result: its content plays no part).
    #[cfg(test)]
    pub(crate) fn content(&self) -> &[Piece] {
        &self.content
    }

    /// True when the form has neither content nor tool calls.
    pub(crate) fn is_empty(&self) -> bool {
        self.content.is_empty() && self.tool_calls.is_empty()
    }

    /// The canonical byte encoding: compact JSON with fields in a fixed order
    /// (`{"role":…,"content":[{"text":…}|{"image":…}],"tool_calls":[{"id","name","arguments"}],"tool_call_id":…}`).
    /// Equal forms have equal bytes, and different forms different bytes.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let encoded = Encoded {
            role: self.role.as_str(),
            content: &self.content,
            tool_calls: &self.tool_calls,
            tool_call_id: self.tool_call_id.as_deref(),
        };
        // Strings, vectors and plain structs always serialise.
        serde_json::to_vec(&encoded).unwrap_or_default()
    }

    /// The lowercase hex SHA-256 of [`NormalForm::to_bytes`].
    pub(crate) fn digest(&self) -> String {
        sha256_hex(&self.to_bytes())
    }
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The normal form of `message` (docs/spec.md §10).
pub(crate) fn normal_form(message: &Message) -> NormalForm {
    if message.role == Role::Tool {
        return NormalForm {
            role: Role::Tool,
            content: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: Some(message.tool_call_id.clone().unwrap_or_default()),
        };
    }
    NormalForm {
        role: message.role,
        content: message.content.as_ref().map(pieces).unwrap_or_default(),
        tool_calls: message.tool_calls.iter().flatten().map(call_form).collect(),
        tool_call_id: None,
    }
}

/// The prefix of a [`match_key`] made from an assistant message's tool-call ids.
pub(crate) const CALLS_KEY_PREFIX: &str = "calls:";
/// The prefix of a [`match_key`] made from an assistant message's normal form.
pub(crate) const FORM_KEY_PREFIX: &str = "form:";

/// The key a store indexes an assistant message by, to find the session that holds it (docs/spec.md
/// §10, "Which conversation"): by its tool-call ids when it has any (`calls:` and the SHA-256 of
/// the ids in order), else by its normal form (`form:` and `NormalForm::digest`). `None` for
/// every other role, and for an assistant message with neither content nor tool calls.
pub fn match_key(message: &Message) -> Option<String> {
    if message.role != Role::Assistant {
        return None;
    }
    let ids: Vec<&str> = message
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|c| c.id.as_deref())
        .filter(|id| !id.is_empty())
        .collect();
    if !ids.is_empty() {
        let encoded = serde_json::to_vec(&ids).unwrap_or_default();
        return Some(format!("{CALLS_KEY_PREFIX}{}", sha256_hex(&encoded)));
    }
    let form = normal_form(message);
    if form.is_empty() {
        return None;
    }
    Some(format!("{FORM_KEY_PREFIX}{}", form.digest()))
}

/// Where a conversation's chain starts ([`chain_keys`]).
pub const CHAIN_START: &str = "";

/// The chain keys of `messages` following the chain state `start` ([`CHAIN_START`] for a
/// conversation's first message): for each user and assistant message the state after it, the
/// SHA-256 of the state before and the message's link (an assistant message's [`match_key`], a
/// user message's normal form); `None` for every other role (system prompts, which clients
/// change, and tool results, which they trim, are not part of it). Equal keys mean equal
/// user and assistant turns in order: a store finds the conversation a client continues by
/// its last assistant message's key with one index probe, however many conversations hold
/// the same reply (docs/spec.md §10, "Which conversation"; matching then checks every message at
/// its place, as without it).
pub fn chain_keys(start: &str, messages: &[Message]) -> Vec<Option<String>> {
    let matched: Vec<Option<String>> = messages.iter().map(match_key).collect();
    chain_keys_matched(start, messages, &matched)
}

/// [`chain_keys`] of `messages` whose [`match_key`]s a caller already has (`matched[i]` is
/// `messages[i]`'s), so an assistant message is not hashed twice.
pub fn chain_keys_matched(
    start: &str,
    messages: &[Message],
    matched: &[Option<String>],
) -> Vec<Option<String>> {
    let mut state = start.to_owned();
    messages
        .iter()
        .zip(matched)
        .map(|(message, matched)| {
            let link = match message.role {
                Role::Assistant => matched.clone().unwrap_or_else(|| "assistant:".to_owned()),
                Role::User => format!("user:{}", normal_form(message).digest()),
                _ => return None,
            };
            let mut bytes = Vec::with_capacity(state.len() + 1 + link.len());
            bytes.extend_from_slice(state.as_bytes());
            bytes.push(b'\n');
            bytes.extend_from_slice(link.as_bytes());
            state = sha256_hex(&bytes);
            Some(state.clone())
        })
        .collect()
}

/// The content's pieces: a string is one text piece; an array contributes its text parts and
/// images in order (adjacent texts joined); `null` and `""` are no piece.
fn pieces(content: &RawJson) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let push_text = |out: &mut Vec<Piece>, text: &str| {
        if text.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(Piece::Text(last)) => last.push_str(text),
            _ => out.push(Piece::Text(text.to_owned())),
        }
    };
    match content.to_value() {
        Value::String(text) => push_text(&mut out, &text),
        Value::Array(parts) => {
            for part in &parts {
                match part {
                    Value::String(text) => push_text(&mut out, text),
                    Value::Object(_) if is_thinking(part) => {}
                    Value::Object(_) => {
                        if let Some(text) = part.get("text").and_then(Value::as_str) {
                            push_text(&mut out, text);
                        } else if let Some(image) = image_of(part) {
                            out.push(Piece::Image(image));
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// True for a thinking or reasoning block inside `content` (it plays no part in the form).
fn is_thinking(part: &Value) -> bool {
    part.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.contains("thinking") || t.contains("reasoning"))
}

/// An image part's data or URL, whatever the part's spelling: OpenAI chat
/// (`image_url: {url}` or `image_url: "…"`), Responses (`image_url` string), Anthropic
/// (`source: {data}` or `source: {url}`), or a bare `url` / `data`.
fn image_of(part: &Value) -> Option<String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    if let Some(image) = part.get("image_url") {
        return text(Some(image)).or_else(|| text(image.get("url")));
    }
    if let Some(source) = part.get("source") {
        return text(source.get("data")).or_else(|| text(source.get("url")));
    }
    text(part.get("data")).or_else(|| text(part.get("url")))
}

fn call_form(call: &ToolCall) -> CallForm {
    CallForm {
        id: call.id.clone().unwrap_or_default(),
        name: call.function.name.clone(),
        arguments: call
            .function
            .arguments
            .as_ref()
            .map(canonical_arguments)
            .unwrap_or_default(),
    }
}

/// Arguments as canonical JSON: a JSON string holding JSON is that JSON, canonicalised; a
/// string holding anything else is its text; any other value is itself, canonicalised; `null`
/// and `""` are `""`.
fn canonical_arguments(raw: &RawJson) -> String {
    match raw.to_value() {
        Value::Null => String::new(),
        Value::String(text) => match parse_lenient::<Value>(&text) {
            Ok(value) => canonical_json(&value),
            Err(_) => text,
        },
        value => canonical_json(&value),
    }
}

/// `value` as compact JSON with every object's keys sorted (the workspace's `serde_json` keeps
/// insertion order, so the keys are sorted here).
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            write_separated(out, '{', entries, '}', |(key, value), out| {
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            });
        }
        Value::Array(items) => write_separated(out, '[', items, ']', write_canonical),
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Writes `open`, each item (by `write`) with a `,` between two, then `close`.
fn write_separated<T>(
    out: &mut String,
    open: char,
    items: impl IntoIterator<Item = T>,
    close: char,
    mut write: impl FnMut(T, &mut String),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(item, out);
    }
    out.push(close);
}

#[cfg(test)]
mod tests;
