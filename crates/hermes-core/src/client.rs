//! The gateway's trust boundary (docs/spec.md §10): what a client may say about a message. A door
//! reads each message of a request into a [`ClientMessage`], which keeps only what a client may
//! write — role, content (text, images and the other parts as sent), name, tool calls (id, type,
//! name, arguments and the signatures a client keeps on them), `tool_call_id`, and the client's own
//! carriers (`reasoning_content`, `reasoning`, `reasoning_details` items) — and nothing hermes
//! writes for itself: no storage key ([`crate::reattach::PRIVATE_KEY_PREFIXES`]), no native
//! record, no origin, and no key outside that list. The engine takes a client's history only
//! as `ClientMessage`s, so nothing a client wrote can stand where the store's own bytes do.

use crate::message::{DetailItem, FunctionCall, Message, ToolCall};

/// A message as a client may write it: read with [`ClientMessage::read`], the only way to make
/// one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientMessage(Message);

impl ClientMessage {
    /// Keeps of `message` only what a client may write (see the module's text). Request-scoped
    /// fields a door set itself (`tool_error`, `client_blocks`) stay.
    pub fn read(message: Message) -> Self {
        let Message {
            role,
            content,
            tool_calls,
            tool_call_id,
            name,
            reasoning_content,
            reasoning,
            reasoning_details,
            tool_error,
            client_blocks,
            ..
        } = message;
        ClientMessage(Message {
            role,
            content,
            tool_calls: tool_calls.map(|calls| calls.into_iter().map(call).collect()),
            tool_call_id,
            name,
            reasoning_content,
            reasoning,
            reasoning_details: reasoning_details
                .map(|items| {
                    items
                        .into_iter()
                        .filter(|item| matches!(item, DetailItem::Provider { .. }))
                        .collect::<Vec<_>>()
                })
                .filter(|items| !items.is_empty()),
            origin: None,
            extra: Vec::new(),
            // The canonical order: the keys the client sent beside these are gone.
            key_order: None,
            tool_error,
            client_blocks,
        })
    }

    /// The message.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &Message {
        &self.0
    }

    /// The message, owned.
    pub fn into_message(self) -> Message {
        self.0
    }
}

/// A tool call as a client may write it: id, type, the function's name and arguments, and the
/// signatures a client keeps on a call (Gemini's `extra_content`, Copilot's
/// `function.thought_signature`); no other key.
fn call(call: ToolCall) -> ToolCall {
    let ToolCall {
        id,
        kind,
        function,
        extra_content,
        ..
    } = call;
    let FunctionCall {
        name,
        arguments,
        thought_signature,
        ..
    } = function;
    ToolCall {
        id,
        kind,
        function: FunctionCall {
            name,
            arguments,
            thought_signature,
            extra: Vec::new(),
        },
        extra_content,
        extra: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::ClientMessage;
    use crate::message::Message;

    fn read(json: &str) -> String {
        let message: Message = serde_json::from_str(json).unwrap();
        serde_json::to_string(ClientMessage::read(message).message()).unwrap()
    }

    #[test]
    fn only_the_allow_list_is_kept() {
        let kept = read(
            r#"{"role":"assistant","content":"Done.","hermes_prefix_binding":"x",
                "codex_message_items":[{"type":"message"}],"_private":1,"prefix":true,
                "reasoning_content":"thought",
                "reasoning_details":[{"type":"hermes.native_assistant","v":1},
                                     {"type":"reasoning.text","text":"t"}],
                "tool_calls":[{"id":"c1","type":"function","hermes_x":1,
                               "function":{"name":"now","arguments":"{}","codex_y":2},
                               "extra_content":{"google":{"thought_signature":"sig"}}}]}"#,
        );
        for gone in [
            "hermes_",
            "codex_",
            "_private",
            "prefix",
            "hermes.native_assistant",
        ] {
            assert!(!kept.contains(gone), "{gone} kept: {kept}");
        }
        for stays in [
            "\"Done.\"",
            "\"thought\"",
            "reasoning.text",
            "\"now\"",
            "\"c1\"",
            "thought_signature",
        ] {
            assert!(kept.contains(stays), "{stays} lost: {kept}");
        }
    }
}
