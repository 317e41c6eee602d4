//! A Messages request's history in the message model: a client's `system` and `messages`
//! (Anthropic Messages, as a gateway's Messages door receives them) as the canonical messages a
//! gateway lines up with what it stored (docs/spec.md §10), and the one rule for where the client's
//! own thinking blocks may go ([`client_blocks_to`]).
//!
//! Per block: `text` in either role; `image` (base64 as a data URL, or its URL) and
//! `tool_result` (a tool message, before the turn's other content) in a user turn; `tool_use` (a
//! tool call) and `thinking` / `redacted_thinking` in an assistant turn. A signed thinking block
//! (a `thinking` block with its text and a signature, a `redacted_thinking` block with its data)
//! is kept as the client sent it, byte for byte, as an Anthropic-shaped `reasoning_details`
//! item — never as readable reasoning; an unsigned one is left out. A block signed by the
//! gateway itself ([`GATEWAY_SIGNATURE_PREFIX`]) is kept the same way for the door to verify
//! ([`gateway_block`]: a verified one's text is readable reasoning the gateway vouches for);
//! [`client_blocks_to`] sends it to no upstream, whoever keeps it.

use std::collections::HashMap;

use hermes_core::{DetailItem, Message, RawJson, Role};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{Family, WIRE_ID};
use crate::signed::carriers::{StoredLiterals, read_literals};

/// What a thinking signature the gateway minted starts with (docs/spec.md §10, "Messages-door
/// signatures": `hermes1.<key id>.<MAC>`).
pub const GATEWAY_SIGNATURE_PREFIX: &str = "hermes1.";

pub use hermes_providers::native::inbound::InboundError;

/// The history of a whole Messages request body: its `system` and `messages` (other keys are
/// not read here).
pub fn request_history(body: &str) -> Result<Vec<Message>, InboundError> {
    let fields: HashMap<String, &RawValue> = serde_json::from_str(body)
        .map_err(|e| InboundError::new("", format!("the body is not a JSON object: {e}")))?;
    let present = |key: &str| {
        fields
            .get(key)
            .map(|raw| raw.get())
            .filter(|raw| *raw != "null")
    };
    history(present("system"), present("messages"))
}

/// The history of a Messages request from the JSON text of its `system` (if any) and of its
/// `messages` (required, a non-empty array): the system prompt first, then each turn's
/// messages in order.
pub fn history(system: Option<&str>, messages: Option<&str>) -> Result<Vec<Message>, InboundError> {
    let mut out = Vec::new();
    if let Some(system_text) = system {
        let system: Value = serde_json::from_str(system_text).map_err(|e| {
            InboundError::new(
                "system",
                format!("`system` must be a string or an array of text blocks: {e}"),
            )
        })?;
        let mut message = system_message(&system)?;
        message.client_blocks = RawJson::from_text(system_text.to_owned()).ok();
        out.push(message);
    }
    let messages =
        messages.ok_or_else(|| InboundError::new("messages", "`messages` is required"))?;
    let turns: Vec<&RawValue> = serde_json::from_str(messages).map_err(|e| {
        InboundError::new(
            "messages",
            format!("`messages` must be an array of messages: {e}"),
        )
    })?;
    if turns.is_empty() {
        return Err(InboundError::new("messages", "`messages` is empty"));
    }
    for (i, turn) in turns.iter().enumerate() {
        convert_turn(i, turn, &mut out)?;
    }
    Ok(out)
}

/// Whether a gateway client's own thinking blocks may go to a target speaking the wire `wire`
/// at `base_url`: only to Claude on the Anthropic Messages wire (direct, Vertex, Foundry,
/// Bedrock InvokeModel, a loopback proxy: [`Family::Claude`]), which verifies its signatures.
pub fn passes_client_blocks(wire: &str, base_url: &str) -> bool {
    wire == WIRE_ID && Family::of(base_url) == Family::Claude
}

/// Whether an item carries a signature the gateway minted.
fn gateway_signed(item: &DetailItem) -> bool {
    gateway_block(item).is_some()
}

/// The one rule for a gateway client's own thinking blocks (docs/spec.md §10): in `history` (a
/// client's history lined up with the store, `hermes_core::reattach::align`), every
/// Anthropic-shaped `reasoning_details` item of an assistant message without origin — a block
/// the client sent on a turn the store did not make — stays only when the target passes them
/// ([`passes_client_blocks`]); to every other target it is left out, so the route's rule for a
/// missing carrier applies (a must-echo route's `" "` pad). One with a gateway signature
/// ([`GATEWAY_SIGNATURE_PREFIX`], however it got there: the Messages door already leaves it
/// out, a chat client might not) goes to no target. Messages the store holds carry their origin
/// and are left as they are. Returns how many items were left out. (The engine applies it,
/// or in a build without this wire leaves every such item out: `hermes_engine::wires`.)
pub fn client_blocks_to(history: &mut [Message], wire: &str, base_url: &str) -> usize {
    let passes = passes_client_blocks(wire, base_url);
    hermes_providers::native::client_blocks::withhold(history, wire, |item| {
        passes && !gateway_signed(item)
    })
}

/// A `thinking` item signed by the gateway ([`GATEWAY_SIGNATURE_PREFIX`]): its text and its
/// signature, for the door to verify; `None` for any other item.
pub fn gateway_block(item: &DetailItem) -> Option<(String, String)> {
    let StoredLiterals::Thinking {
        text,
        signature: Some(signature),
    } = read_literals(item)?
    else {
        return None;
    };
    let decode = |literal: &str| serde_json::from_str::<String>(literal).ok();
    let signature = decode(signature)?;
    signature
        .starts_with(GATEWAY_SIGNATURE_PREFIX)
        .then(|| Some((decode(text)?, signature)))
        .flatten()
}

/// `system` (a string, or text blocks: their texts joined; `cache_control` is not part of it).
fn system_message(system: &Value) -> Result<Message, InboundError> {
    let text = match system {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| b.get("text").and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => {
            return Err(InboundError::new(
                "system",
                "`system` must be a string or an array of text blocks",
            ));
        }
    };
    Ok(Message::text(Role::System, &text))
}

/// A chat message from its JSON form (the message model reads chat completions).
fn chat_message(value: Value, at: &str) -> Result<Message, InboundError> {
    serde_json::from_value(value).map_err(|e| InboundError::new(at, e.to_string()))
}

/// One turn as the JSON text gives it: its role, and its content as sent.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Turn<'a> {
    role: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

/// One Anthropic turn as chat messages: a user turn's `tool_result` blocks become tool
/// messages (in order, before its other content), an assistant turn's `tool_use` blocks its
/// tool calls and its signed thinking blocks its `reasoning_details` (see the module's doc).
fn convert_turn(i: usize, turn: &RawValue, out: &mut Vec<Message>) -> Result<(), InboundError> {
    let at = format!("messages.{i}");
    let bad = || bad_content(&at);
    let parsed: Turn<'_> = serde_json::from_str(turn.get()).map_err(|_| bad())?;
    let role = parsed.role.as_ref().and_then(Value::as_str);
    let content = parsed.content.ok_or_else(bad)?;
    let (parts, blocks): (Vec<Value>, Vec<&RawValue>) = if content.get().starts_with('"') {
        let text: String = serde_json::from_str(content.get()).map_err(|_| bad())?;
        (vec![json!({"type": "text", "text": text})], Vec::new())
    } else {
        let blocks = serde_json::from_str(content.get()).map_err(|_| bad())?;
        (Vec::new(), blocks)
    };
    if role == Some("system") {
        out.push(system_turn(content, &at)?);
        return Ok(());
    }
    let mut gathered = TurnBlocks {
        parts,
        ..TurnBlocks::default()
    };
    for (j, raw) in blocks.iter().copied().enumerate() {
        gathered.read(role, raw, &format!("{at}.content.{j}"), out)?;
    }
    gathered.push_message(role, &at, !blocks.is_empty(), out)
}

/// The error for a turn's `content` at `at` that is neither a string nor an array of blocks.
fn bad_content(at: &str) -> InboundError {
    InboundError::new(
        &format!("{at}.content"),
        format!("`{at}.content` must be a string or an array of blocks"),
    )
}

/// A mid-conversation system message (Claude Code sends one on every current model): kept in
/// place, its blocks as sent for a Claude upstream (docs/spec.md §5a 5).
fn system_turn(content: &RawValue, at: &str) -> Result<Message, InboundError> {
    let bad_system = || {
        InboundError::new(
            &format!("{at}.content"),
            format!("`{at}.content` of a system message must be a string or text blocks"),
        )
    };
    let system: Value = serde_json::from_str(content.get()).map_err(|_| bad_content(at))?;
    let not_text = |b: &Value| b.get("type").and_then(Value::as_str) != Some("text");
    if system.as_array().is_some_and(|b| b.iter().any(not_text)) {
        return Err(bad_system());
    }
    let mut message = system_message(&system).map_err(|_| bad_system())?;
    message.client_blocks = RawJson::from_text(content.get().to_owned()).ok();
    Ok(message)
}

/// What a user or assistant turn's blocks gather, block by block, before its message is
/// written: the content parts, the tool calls, the signed thinking blocks, and the user's own
/// blocks as sent (tool results go on their tool messages).
#[derive(Default)]
struct TurnBlocks<'a> {
    parts: Vec<Value>,
    calls: Vec<Value>,
    thinking: Vec<DetailItem>,
    own_blocks: Vec<&'a RawValue>,
}

impl<'a> TurnBlocks<'a> {
    /// Gathers one block of a `role` turn, at `here`; a `tool_result` block is its tool message,
    /// pushed on `out` at once.
    fn read(
        &mut self,
        role: Option<&str>,
        raw: &'a RawValue,
        here: &str,
        out: &mut Vec<Message>,
    ) -> Result<(), InboundError> {
        let block: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        match (role, block.get("type").and_then(Value::as_str)) {
            (_, Some("text")) => {
                let text = string_field(&block, here, "text")?;
                self.own_blocks.push(raw);
                self.parts.push(json!({"type": "text", "text": text}));
            }
            (Some("user"), Some("image")) => {
                self.own_blocks.push(raw);
                self.parts.push(image_part(&block, here)?);
            }
            (Some("user"), Some("tool_result")) => {
                let mut message = tool_result(&block, here)?;
                message.client_blocks = RawJson::from_text(format!("[{}]", raw.get())).ok();
                out.push(message);
            }
            (Some("assistant"), Some("tool_use")) => self.calls.push(tool_call(&block, here)?),
            (Some("assistant"), Some(kind @ ("thinking" | "redacted_thinking"))) => {
                if let Some(item) = client_block(kind, &block, raw) {
                    self.thinking.push(item);
                }
            }
            (_, kind) => {
                return Err(InboundError::new(
                    here,
                    format!(
                        "`{here}`: a {} block cannot be in a {} turn here",
                        kind.unwrap_or("typeless"),
                        role.unwrap_or("roleless")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Pushes the turn's message on `out`: a user turn's (if it has content; its own blocks as
    /// sent when `had_blocks`, a string content being sent as a string already), or an
    /// assistant turn's with its tool calls and thinking.
    fn push_message(
        self,
        role: Option<&str>,
        at: &str,
        had_blocks: bool,
        out: &mut Vec<Message>,
    ) -> Result<(), InboundError> {
        let content = match self.parts.as_slice() {
            [] => Value::Null,
            [only] if only["type"] == "text" => only["text"].clone(),
            _ => Value::Array(self.parts),
        };
        match role {
            Some("user") => {
                if !content.is_null() {
                    let mut message =
                        chat_message(json!({"role": "user", "content": content}), at)?;
                    message.client_blocks = match had_blocks {
                        // A string content is sent as a string already.
                        false => None,
                        true => RawJson::from_serialize(&self.own_blocks).ok(),
                    };
                    out.push(message);
                }
            }
            Some("assistant") => {
                let mut message = json!({"role": "assistant", "content": content});
                if !self.calls.is_empty() {
                    message["tool_calls"] = Value::Array(self.calls);
                }
                let mut message = chat_message(message, at)?;
                if !self.thinking.is_empty() {
                    message.reasoning_details = Some(self.thinking);
                }
                out.push(message);
            }
            _ => {
                return Err(InboundError::new(
                    &format!("{at}.role"),
                    format!("`{at}.role` must be user, assistant or system"),
                ));
            }
        }
        Ok(())
    }
}

/// A `tool_use` block as a chat tool call.
/// A `tool_use` block (at `at`) as a chat tool call: its `id` and `name` must be strings, its
/// `input` (`{}` when absent) an object.
fn tool_call(block: &Value, at: &str) -> Result<Value, InboundError> {
    let input = match block.get("input") {
        None | Some(Value::Null) => json!({}),
        Some(input @ Value::Object(_)) => input.clone(),
        Some(_) => {
            return Err(InboundError::new(
                &format!("{at}.input"),
                format!("`{at}.input` must be an object"),
            ));
        }
    };
    Ok(json!({
        "id": string_field(block, at, "id")?,
        "type": "function",
        "function": {"name": string_field(block, at, "name")?, "arguments": input.to_string()},
    }))
}

/// Member `key` of the block at `at`, which must be a string (a 400 naming it otherwise).
fn string_field<'b>(block: &'b Value, at: &str, key: &str) -> Result<&'b str, InboundError> {
    block.get(key).and_then(Value::as_str).ok_or_else(|| {
        InboundError::new(
            &format!("{at}.{key}"),
            format!("`{at}.{key}` must be a string"),
        )
    })
}

/// A client's thinking block as a `reasoning_details` item holding its exact bytes, when it is
/// signed: a `thinking` block with its text and a signature (Claude's, or the gateway's for the
/// door to verify), or a `redacted_thinking` block with its data. Anything else is left out.
fn client_block(kind: &str, block: &Value, raw: &RawValue) -> Option<DetailItem> {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    let signed = match kind {
        "thinking" => {
            text("thinking").is_some() && text("signature").is_some_and(|s| !s.trim().is_empty())
        }
        _ => text("data").is_some_and(|d| !d.is_empty()),
    };
    if !signed {
        return None;
    }
    DetailItem::from_provider(RawJson::from_text(raw.get().to_owned()).ok()?)
}

/// An `image` block as a chat image part (base64 as a data URL, or its URL).
fn image_part(block: &Value, at: &str) -> Result<Value, InboundError> {
    let source = block.get("source").unwrap_or(&Value::Null);
    let url = match source.get("type").and_then(Value::as_str) {
        Some("base64") => format!(
            "data:{};base64,{}",
            source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image/png"),
            source
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        Some("url") => source
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => {
            return Err(InboundError::new(
                at,
                format!("`{at}.source.type` must be base64 or url"),
            ));
        }
    };
    Ok(json!({"type": "image_url", "image_url": {"url": url}}))
}

/// A `tool_result` block as a tool message: its text (and images), an error result marked
/// [`Message::tool_error`].
fn tool_result(block: &Value, at: &str) -> Result<Message, InboundError> {
    let id = block
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or_else(|| InboundError::new(at, format!("`{at}.tool_use_id` is required")))?;
    let error = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let content = match block.get("content") {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Array(blocks)) => {
            // Text blocks joined as before; images kept as image parts after the text, so a
            // wire that takes images in tool results sends them (the others refuse them).
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for (k, inner) in blocks.iter().enumerate() {
                match inner.get("type").and_then(Value::as_str) {
                    Some("image") => images.push(image_part(inner, &format!("{at}.content.{k}"))?),
                    _ => texts.extend(inner.get("text").and_then(Value::as_str)),
                }
            }
            let text = texts.join("\n");
            if images.is_empty() {
                Value::String(text)
            } else {
                let mut parts = vec![json!({"type": "text", "text": text})];
                parts.extend(images);
                Value::Array(parts)
            }
        }
        Some(_) => {
            return Err(InboundError::new(
                at,
                format!("`{at}.content` must be a string or an array of blocks"),
            ));
        }
    };
    let mut message = chat_message(
        json!({"role": "tool", "tool_call_id": id, "content": content}),
        at,
    )?;
    // Each wire marks it in its own way (`Message::tool_error`).
    message.tool_error = error;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use hermes_core::{DetailItem, Message, Origin, Role};

    use super::{client_blocks_to, history, passes_client_blocks, request_history};

    /// A Claude-signed block as a client sends it: keys in its own order, spaces, an escape.
    const SIGNED: &str =
        r#"{"signature": "RXVTaWc=",  "type":"thinking", "thinking": "Caf\u00e9 first."}"#;
    const REDACTED: &str = r#"{"type":"redacted_thinking","data":"EmwKAhgBEgy="}"#;

    fn raw_items(message: &Message) -> Vec<String> {
        message
            .reasoning_details
            .iter()
            .flatten()
            .map(|item| item.raw().get().to_owned())
            .collect()
    }

    fn loop_request(blocks: &str) -> String {
        format!(
            r#"{{"system": [{{"type": "text", "text": "Be brief."}}, {{"type": "text", "text": "Use tools.", "cache_control": {{"type": "ephemeral"}}}}],
              "messages": [
                {{"role": "user", "content": "time?"}},
                {{"role": "assistant", "content": [{blocks},
                  {{"type": "text", "text": "Checking."}},
                  {{"type": "tool_use", "id": "toolu_1", "name": "now", "input": {{"tz": "UTC"}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{{"type": "text", "text": "12:00"}}]}},
                  {{"type": "text", "text": "and?"}}]}}
              ]}}"#
        )
    }

    #[test]
    fn a_clients_signed_blocks_are_kept_byte_for_byte_and_never_as_readable_reasoning() {
        let history = request_history(&loop_request(&format!("{SIGNED}, {REDACTED}"))).unwrap();
        let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::User
            ]
        );
        assert_eq!(
            history[0].content.as_ref().unwrap().as_str().unwrap(),
            "Be brief.\n\nUse tools."
        );
        let assistant = &history[2];
        assert_eq!(
            raw_items(assistant),
            [SIGNED, REDACTED],
            "the exact bytes sent"
        );
        assert!(
            assistant
                .reasoning_details
                .iter()
                .flatten()
                .all(|i| i.is_anthropic_shaped()
                    && matches!(i, DetailItem::Provider { opaque: true, .. })),
            "signed items, replayed only where they may go"
        );
        assert!(assistant.reasoning_content.is_none() && assistant.reasoning.is_none());
        assert_eq!(assistant.origin, None);
        assert_eq!(
            assistant.content.as_ref().unwrap().as_str().unwrap(),
            "Checking."
        );
        let call = &assistant.tool_calls.as_ref().unwrap()[0];
        assert_eq!(call.id.as_deref(), Some("toolu_1"));
        assert_eq!(call.function.name, "now");
        assert_eq!(
            history[3].content.as_ref().unwrap().as_str().unwrap(),
            "12:00"
        );
        assert_eq!(
            history[4].content.as_ref().unwrap().as_str().unwrap(),
            "and?"
        );
    }

    #[test]
    fn a_gateway_signed_block_is_kept_for_the_door_to_verify_and_sent_to_no_upstream() {
        let block = r#"{"type": "thinking", "thinking": "ours", "signature": "hermes1.k1.abc"}"#;
        let mut history = request_history(&loop_request(block)).unwrap();
        let items = history[2].reasoning_details.clone().unwrap();
        assert_eq!(
            super::gateway_block(&items[0]),
            Some(("ours".to_owned(), "hermes1.k1.abc".to_owned()))
        );
        assert!(
            history[2].reasoning_content.is_none(),
            "never readable by itself"
        );
        assert_eq!(
            client_blocks_to(&mut history, "anthropic", "https://api.anthropic.com"),
            1
        );
        assert_eq!(history[2].reasoning_details, None);
    }

    #[test]
    fn an_unsigned_or_malformed_block_is_left_out() {
        for block in [
            r#"{"type": "thinking", "thinking": "no signature"}"#,
            r#"{"type": "thinking", "thinking": "blank", "signature": " "}"#,
            r#"{"type": "thinking", "signature": "c2ln"}"#,
            r#"{"type": "redacted_thinking", "data": ""}"#,
        ] {
            let history = request_history(&loop_request(block)).unwrap();
            assert_eq!(history[2].reasoning_details, None, "{block}");
            assert!(history[2].reasoning_content.is_none(), "{block}");
        }
    }

    #[test]
    fn a_tool_results_images_are_kept_as_image_parts_after_its_text() {
        let body = r#"{"messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": false, "content": [
                {"type": "text", "text": "a.png"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "done"}]},
              {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": [{"type": "text", "text": "gone"}]}]}]}"#;
        let h = request_history(body).unwrap();
        let tool = serde_json::to_value(&h[2]).unwrap();
        assert_eq!(
            tool,
            serde_json::json!({"role": "tool", "tool_call_id": "t1", "content": [
                {"type": "text", "text": "a.png\ndone"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]})
        );
        // Text only stays a string; an error result is marked (each wire says so its way).
        let error = serde_json::to_value(&h[3]).unwrap();
        assert_eq!(error["content"], "gone");
        assert!(h[3].tool_error && !h[2].tool_error);
        assert_eq!(h[3].tool_error_text().as_deref(), Some("Error: gone"));
        // Each block as the client wrote it, for a Claude upstream.
        let blocks: Vec<serde_json::Value> =
            serde_json::from_str(h[3].client_blocks.as_ref().unwrap().get()).unwrap();
        assert_eq!(blocks[0]["is_error"], true);
        let bad = r#"{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image", "source": {"type": "file"}}]}]}]}"#;
        assert_eq!(
            request_history(bad).unwrap_err().at,
            "messages.0.content.0.content.0"
        );
    }

    #[test]
    fn a_mid_conversation_system_message_stays_in_place_with_its_blocks_as_sent() {
        let body = r##"{"system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}}]},
                {"role": "system", "content": "today is Sunday"}]}"##;
        let h = request_history(body).unwrap();
        let roles: Vec<Role> = h.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::System, Role::System]
        );
        assert_eq!(h[0].content.as_ref().unwrap().as_str().unwrap(), "A\n\nB");
        assert!(
            h[0].client_blocks
                .as_ref()
                .unwrap()
                .get()
                .contains("cache_control")
        );
        assert_eq!(h[1].content.as_ref().unwrap().as_str().unwrap(), "hi");
        assert_eq!(
            h[1].client_blocks.as_ref().unwrap().get(),
            r#"[{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]"#,
            "the user's blocks byte for byte"
        );
        assert_eq!(
            h[2].content.as_ref().unwrap().as_str().unwrap(),
            "# Environment"
        );
        assert_eq!(
            h[3].client_blocks.as_ref().unwrap().get(),
            r#""today is Sunday""#
        );
        let bad = r#"{"messages": [{"role": "user", "content": "x"}, {"role": "system", "content": [{"type": "image"}]}]}"#;
        assert_eq!(request_history(bad).unwrap_err().at, "messages.1.content");
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases: [(&str, &str, &str); 12] = [
            (r#"{"messages": []}"#, "messages", "`messages` is empty"),
            (r#"{"system": "s"}"#, "messages", "`messages` is required"),
            (
                r#"{"messages": "hi"}"#,
                "messages",
                "`messages` must be an array of messages",
            ),
            (
                r#"{"system": 3, "messages": [{"role": "user", "content": "x"}]}"#,
                "system",
                "`system` must be",
            ),
            (
                r#"{"messages": [{"role": "user"}]}"#,
                "messages.0.content",
                "`messages.0.content` must be",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "x"}]}]}"#,
                "messages.0.content.0",
                "a tool_use block cannot be in a user turn",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}"#,
                "messages.0.content.0",
                "`messages.0.content.0.tool_use_id` is required",
            ),
            // Were read leniently (found reading this reader after `cargo xtask fuzz --api`
            // showed its blocks' members unchecked): a text block whose text is not a string as
            // empty text, a tool_use block's id, name or input of another type as an empty id or
            // name or a non-object input sent upstream.
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}"#,
                "messages.0.content.0.text",
                "`messages.0.content.0.text` must be a string",
            ),
            (
                r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]}"#,
                "messages.0.content.0.id",
                "`messages.0.content.0.id` must be a string",
            ),
            (
                r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": ["f"]}]}]}"#,
                "messages.0.content.0.name",
                "`messages.0.content.0.name` must be a string",
            ),
            (
                r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}]}"#,
                "messages.0.content.0.input",
                "`messages.0.content.0.input` must be an object",
            ),
            (
                r#"{"messages": [{"role": "robot", "content": "x"}]}"#,
                "messages.0.role",
                "must be user, assistant or system",
            ),
        ];

        for (body, at, says) in cases {
            let e = request_history(body).unwrap_err();
            assert_eq!(e.at, at, "{body}: {e}");
            assert!(e.message.contains(says), "{body}: {e}");
        }
        assert_eq!(request_history("[]").unwrap_err().at, "");
        assert!(history(None, Some(r#"[{"role": "user", "content": "hi"}]"#)).is_ok());
    }

    #[test]
    fn a_clients_blocks_go_only_to_claude_on_the_messages_wire() {
        let mut client = request_history(&loop_request(SIGNED)).unwrap();
        // A turn the store made keeps its carriers wherever it goes (provenance decides).
        let mut stored = client[2].clone();
        stored.origin = Some(Origin {
            provider: "anthropic".into(),
            host: "api.anthropic.com".into(),
            model: "claude-opus-4-6".into(),
        });
        client.push(stored);
        // A chat client's own OpenAI-shaped item is not a thinking block: untouched.
        let mut chat = Message::text(Role::Assistant, "hi");
        chat.reasoning_details = Some(vec![
            DetailItem::from_raw(
                hermes_core::RawJson::from_text(r#"{"type":"reasoning.text","text":"t"}"#).unwrap(),
            )
            .unwrap(),
        ]);
        client.push(chat);
        // A gateway-signed block a chat client put in reasoning_details goes to no one.
        let mut ours = client[2].clone();
        ours.reasoning_details = Some(vec![
            DetailItem::from_raw(
                hermes_core::RawJson::from_text(
                    r#"{"type":"thinking","thinking":"t","signature":"hermes1.k1.mac"}"#,
                )
                .unwrap(),
            )
            .unwrap(),
        ]);
        let mut alone = vec![ours];
        assert_eq!(
            client_blocks_to(&mut alone, "anthropic", "https://api.anthropic.com"),
            1
        );
        assert_eq!(alone[0].reasoning_details, None);
        for (wire, base) in [
            ("anthropic", "https://api.anthropic.com"),
            ("anthropic", "https://us-east5-aiplatform.googleapis.com"),
            (
                "anthropic",
                "https://bedrock-runtime.us-east-1.amazonaws.com",
            ),
            ("anthropic", "http://127.0.0.1:8080"),
        ] {
            assert!(passes_client_blocks(wire, base), "{wire} {base}");
            let mut history = client.clone();
            assert_eq!(client_blocks_to(&mut history, wire, base), 0);
            assert_eq!(history, client, "{wire} {base}");
        }
        for (wire, base) in [
            ("anthropic", "https://api.deepseek.com/anthropic"),
            ("anthropic", "https://api.kimi.com/coding"),
            ("anthropic", "https://api.minimax.io/anthropic"),
            ("anthropic", "https://api.anthropic.com.evil.example"),
            ("chat", "https://openrouter.ai/api/v1"),
            ("bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com"),
            ("gemini", "https://generativelanguage.googleapis.com"),
        ] {
            assert!(!passes_client_blocks(wire, base), "{wire} {base}");
            let mut history = client.clone();
            assert_eq!(
                client_blocks_to(&mut history, wire, base),
                1,
                "{wire} {base}"
            );
            assert_eq!(history[2].reasoning_details, None, "{wire} {base}");
            assert_eq!(history[2].tool_calls, client[2].tool_calls);
            assert_eq!(history[5], client[5], "the stored turn keeps its blocks");
            assert_eq!(history[6], client[6], "a chat item is not a thinking block");
        }
    }
}
