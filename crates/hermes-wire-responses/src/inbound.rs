//! A Responses request's history in the message model: a client's `instructions` and `input`
//! items (OpenAI Responses, as a gateway's Responses door receives them) as the canonical
//! messages a gateway lines up with what it stored (docs/spec.md §10), with what the door must
//! check beside them ([`Inbound`]). Pure: no HTTP, no key.
//!
//! Input items are read through a typed allow-list: `message` items by role (`input_text`,
//! `input_image` and `output_text` parts), `function_call`, `function_call_output`,
//! `reasoning`, `compaction` and `compaction_trigger`; any other item type is an error naming
//! `input[i]`. `instructions` is a leading system message. A run of `reasoning`, assistant
//! `message` and `function_call` items is one assistant message, as the engine stores a step,
//! so the store finds it at its place; `function_call_output` is a tool message.
//!
//! A `reasoning` item is never taken as reasoning on the client's word: it is not part of the
//! messages at all, only listed ([`SealedItem`]: its summary, its `encrypted_content` and the
//! message it belongs to) for whoever holds the key that sealed it to verify. A `compaction`
//! item stands as an empty user message ([`CompactionItem`]) until its seal is opened and the
//! checkpoint it names is put in its place; a `compaction_trigger` item (the last) is a flag.

use hermes_core::{Message, RawJson, Role, ToolCall};
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub use hermes_providers::native::inbound::InboundError;

/// A request's `input`: one user message's text, or input items.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// A string: one user message.
    Text(String),
    /// Input items, in order.
    Items(Vec<Value>),
}

/// A `reasoning` item a client sent: its summary and the `encrypted_content` that should seal
/// it, for the assistant message at `message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedItem {
    /// The index in [`Inbound::messages`] of the assistant message it belongs to.
    pub message: usize,
    /// Its summary parts' texts, joined by blank lines.
    pub summary: String,
    /// Its `encrypted_content` (empty when absent).
    pub seal: String,
}

/// A `compaction` item a client sent back: the message standing in its place until its seal
/// is opened and the checkpoint it names is read, and the seal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionItem {
    /// The index in [`Inbound::messages`] of its placeholder (an empty user message).
    pub message: usize,
    /// The item's parameter, `input[i]`.
    pub at: String,
    /// Its `encrypted_content`.
    pub seal: String,
}

/// A request's history as read: the messages, and what stands beside them.
#[derive(Clone, Debug, Default)]
pub struct Inbound {
    /// `instructions` as a system message, then the input items' messages.
    pub messages: Vec<Message>,
    /// The `reasoning` items, by the message they belong to (none of them is in `messages`).
    pub sealed: Vec<SealedItem>,
    /// The `compaction` items, each with its placeholder in `messages`.
    pub compactions: Vec<CompactionItem>,
    /// Whether the input ends with a `compaction_trigger` item.
    pub trigger: bool,
}

/// The history of a whole Responses request body: its `instructions` and `input` (other keys
/// are not read here).
pub fn request_history(body: &str) -> Result<Inbound, InboundError> {
    let mut fields: Map<String, Value> = serde_json::from_str(body)
        .map_err(|e| InboundError::new("", format!("the body is not a JSON object: {e}")))?;
    let instructions = match fields.remove("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(_) => {
            return Err(InboundError::new(
                "instructions",
                "`instructions` must be a string",
            ));
        }
    };
    let input = match fields.remove("input") {
        None | Some(Value::Null) => {
            return Err(InboundError::new("input", "`input` is required"));
        }
        Some(value) => Input::deserialize(value).map_err(|_| {
            InboundError::new(
                "input",
                "`input` must be a string or an array of input items",
            )
        })?,
    };
    history(instructions.as_deref(), &input)
}

/// The history of a Responses request from its `instructions` (if any) and its `input`: the
/// system message first, then the input's messages in order. An input with no message other
/// than system ones is an error.
pub fn history(instructions: Option<&str>, input: &Input) -> Result<Inbound, InboundError> {
    let mut reader = Reader::default();
    if let Some(text) = instructions {
        reader.push(Message::text(Role::System, text));
    }
    match input {
        Input::Text(text) => reader.push(Message::text(Role::User, text)),
        Input::Items(items) => {
            for (i, item) in items.iter().enumerate() {
                reader.item(i, item)?;
            }
        }
    }
    let read = reader.finish();
    if !read.messages.iter().any(|m| m.role != Role::System) {
        return Err(InboundError::new("input", "`input` holds no message"));
    }
    Ok(read)
}

/// Input items to messages: system and user messages as they come, and each run of
/// reasoning, assistant text and function calls as one assistant message.
#[derive(Default)]
struct Reader {
    read: Inbound,
    /// The assistant turn being read.
    open: Option<Message>,
}

impl Reader {
    fn push(&mut self, message: Message) {
        self.close();
        self.read.messages.push(message);
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            self.read.messages.push(open);
        }
    }

    /// The assistant turn being read; a reasoning item after its text or calls starts another.
    fn assistant(&mut self, reasoning: bool) -> &mut Message {
        let started = self
            .open
            .as_ref()
            .is_some_and(|m| m.content.is_some() || m.tool_calls.is_some());
        if reasoning && started {
            self.close();
        }
        self.open.get_or_insert_with(|| Message {
            content: None,
            ..Message::text(Role::Assistant, "")
        })
    }

    /// Reads input item `i`: one function per item type ([`Reader::message`],
    /// [`Reader::function_call`], [`Reader::function_call_output`], [`Reader::reasoning`],
    /// [`Reader::compaction`]); a `compaction_trigger` item must be the last.
    fn item(&mut self, i: usize, item: &Value) -> Result<(), InboundError> {
        let at = format!("input[{i}]");
        if self.read.trigger {
            return Err(InboundError::new(
                &at,
                format!(
                    "`{at}` follows a compaction_trigger item, which must be the last input item"
                ),
            ));
        }
        let Some(object) = item.as_object() else {
            return Err(InboundError::new(&at, format!("`{at}` must be an object")));
        };
        let item = Item { at, object };
        let at = &item.at;
        let kind = match object.get("type").and_then(Value::as_str) {
            Some(kind) => kind,
            // An easy input message: `{role, content}`.
            None if object.contains_key("role") => "message",
            None => return Err(item.bad(format!("`{at}.type` is required"))),
        };
        match kind {
            "message" => self.message(&item),
            "function_call" => self.function_call(&item),
            "function_call_output" => self.function_call_output(&item),
            "reasoning" => {
                self.reasoning(object);
                Ok(())
            }
            "compaction" => self.compaction(&item),
            "compaction_trigger" => {
                self.close();
                self.read.trigger = true;
                Ok(())
            }
            other => Err(item.bad(format!(
                "`{at}`: input items of type `{other}` are not served by this gateway's \
                 Responses door (message, function_call, function_call_output, reasoning, \
                 compaction, compaction_trigger)"
            ))),
        }
    }

    /// A `message` item: an assistant one's text joins the assistant turn being read; any
    /// other role's is a message of its own.
    fn message(&mut self, item: &Item<'_>) -> Result<(), InboundError> {
        let at = &item.at;
        let role = match item.object.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("system") => Role::System,
            Some("developer") => Role::Developer,
            Some("assistant") => Role::Assistant,
            other => {
                return Err(item.bad(format!(
                    "`{at}.role` must be user, system, developer or assistant, not {}",
                    other.map_or("missing".to_owned(), |r| format!("`{r}`"))
                )));
            }
        };
        let content = item
            .object
            .get("content")
            .ok_or_else(|| item.bad(format!("`{at}.content` is required")))?;
        if role == Role::Assistant {
            let text = assistant_text(content)
                .map_err(|why| item.bad(format!("`{at}.content`: {why}")))?;
            let turn = self.assistant(false);
            let joined = match turn.content.as_ref().and_then(RawJson::as_str) {
                Some(before) => format!("{before}{text}"),
                None => text,
            };
            turn.content = Some(RawJson::string(&joined));
        } else {
            let content =
                input_content(content).map_err(|why| item.bad(format!("`{at}.content`: {why}")))?;
            self.push(Message {
                content: Some(content),
                ..Message::text(role, "")
            });
        }
        Ok(())
    }

    /// A `function_call` item: a tool call of the assistant turn being read.
    fn function_call(&mut self, item: &Item<'_>) -> Result<(), InboundError> {
        let call_id = item.text_field("call_id")?;
        let name = item.text_field("name")?;
        let arguments = item.text_field("arguments")?;
        let call: ToolCall = serde_json::from_value(json!({
            "id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments},
        }))
        .map_err(|e| item.bad(e.to_string()))?;
        self.assistant(false)
            .tool_calls
            .get_or_insert_with(Vec::new)
            .push(call);
        Ok(())
    }

    /// A `function_call_output` item: a tool message, its output a string or its parts' texts
    /// joined.
    fn function_call_output(&mut self, item: &Item<'_>) -> Result<(), InboundError> {
        let at = &item.at;
        let call_id = item.text_field("call_id")?;
        let output = match item.object.get("output") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            _ => {
                return Err(item.bad(format!(
                    "`{at}.output` must be a string or an array of parts"
                )));
            }
        };
        self.push(Message {
            tool_call_id: Some(call_id),
            ..Message::text(Role::Tool, &output)
        });
        Ok(())
    }

    /// A `reasoning` item: listed beside the messages ([`SealedItem`]) for the assistant turn
    /// it opens or belongs to, never part of them.
    fn reasoning(&mut self, object: &Map<String, Value>) {
        let summary = object
            .get("summary")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n\n")
            })
            .unwrap_or_default();
        let seal = object
            .get("encrypted_content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.assistant(true);
        // Index of the open turn once it is closed.
        let message = self.read.messages.len();
        self.read.sealed.push(SealedItem {
            message,
            summary,
            seal,
        });
    }

    /// A `compaction` item: an empty user message in its place, listed with its seal
    /// ([`CompactionItem`]).
    fn compaction(&mut self, item: &Item<'_>) -> Result<(), InboundError> {
        let seal = item.text_field("encrypted_content")?;
        self.push(Message::text(Role::User, ""));
        self.read.compactions.push(CompactionItem {
            message: self.read.messages.len() - 1,
            at: item.at.clone(),
            seal,
        });
        Ok(())
    }

    fn finish(mut self) -> Inbound {
        self.close();
        self.read
    }
}

/// One input item being read: its parameter (`input[i]`) and its members.
struct Item<'a> {
    at: String,
    object: &'a Map<String, Value>,
}

impl Item<'_> {
    /// An error naming the item.
    fn bad(&self, why: String) -> InboundError {
        InboundError::new(&self.at, why)
    }

    /// The string member `key`, which the item must have.
    fn text_field(&self, key: &str) -> Result<String, InboundError> {
        let at = &self.at;
        self.object
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.bad(format!("`{at}.{key}` must be a string")))
    }
}

/// An assistant message's text: a string, or its `output_text` (and `refusal`) parts joined.
fn assistant_text(content: &Value) -> Result<String, String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("output_text" | "input_text" | "text") => p
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| "a text part without `text`".to_owned()),
                Some("refusal") => Ok(p
                    .get("refusal")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()),
                other => Err(format!("an assistant part of type {other:?}")),
            })
            .collect(),
        _ => Err("must be a string or an array of parts".to_owned()),
    }
}

/// A user, system or developer message's content as chat content: a string as sent,
/// `input_text` parts as text parts, `input_image` parts as image parts.
fn input_content(content: &Value) -> Result<RawJson, String> {
    let value = match content {
        Value::String(_) => content.clone(),
        Value::Array(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => p
                        .get("text")
                        .and_then(Value::as_str)
                        .map(|t| json!({"type": "text", "text": t}))
                        .ok_or_else(|| "a text part without `text`".to_owned()),
                    Some("input_image") => {
                        let url = p.get("image_url").and_then(Value::as_str).ok_or_else(|| {
                            "an input_image needs `image_url` (file ids are not served)".to_owned()
                        })?;
                        let mut image = json!({"url": url});
                        if let Some(detail) = p.get("detail").and_then(Value::as_str) {
                            image["detail"] = json!(detail);
                        }
                        Ok(json!({"type": "image_url", "image_url": image}))
                    }
                    other => Err(format!(
                        "parts of type {other:?} are not served (input_text, input_image)"
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        _ => return Err("must be a string or an array of parts".to_owned()),
    };
    RawJson::from_serialize(&value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{Inbound, request_history};
    use hermes_core::Role;

    fn read(body: &str) -> Inbound {
        request_history(body).unwrap()
    }

    #[test]
    fn a_run_of_reasoning_text_and_calls_is_one_assistant_turn() {
        let parsed = read(
            r#"{"model":"m","instructions":"be brief","input":[
                {"role":"user","content":"what time is it?"},
                {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"ask the tool"}],"encrypted_content":"x"},
                {"type":"function_call","call_id":"c1","name":"now","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output":"noon"},
                {"type":"reasoning","id":"rs_2","summary":[]},
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is noon."}]},
                {"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}
            ]}"#,
        );
        let roles: Vec<Role> = parsed.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::User
            ]
        );
        let call = &parsed.messages[2];
        assert_eq!(
            call.tool_calls.as_ref().unwrap()[0].id.as_deref(),
            Some("c1")
        );
        assert!(call.content.is_none());
        assert!(
            parsed
                .messages
                .iter()
                .all(|m| m.reasoning_content.is_none() && m.reasoning_details.is_none()),
            "a reasoning item is never reasoning on the client's word"
        );
        assert_eq!(
            parsed.messages[4].content.as_ref().unwrap().get(),
            "\"It is noon.\""
        );
        let places: Vec<usize> = parsed.sealed.iter().map(|s| s.message).collect();
        assert_eq!(
            places,
            [2, 4],
            "each reasoning item belongs to the turn it opens"
        );
        assert_eq!(parsed.sealed[0].summary, "ask the tool");
        assert_eq!(parsed.sealed[0].seal, "x");
        assert_eq!(
            parsed.sealed[1].seal, "",
            "no encrypted_content: an empty seal"
        );
    }

    #[test]
    fn unknown_items_are_refused_by_place_and_type() {
        let e = request_history(
            r#"{"input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"x"}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.at, "input[1]");
        assert!(
            e.message
                .starts_with("`input[1]`: input items of type `item_reference`"),
            "{e}"
        );
        let e = request_history(r#"{"input":[]}"#).unwrap_err();
        assert_eq!(
            (e.at.as_str(), e.message.as_str()),
            ("input", "`input` holds no message")
        );
        let e = request_history(r#"{"instructions":"only this","input":[]}"#).unwrap_err();
        assert_eq!(e.at, "input", "a system message alone is no message");
        let e = request_history(r#"{"instructions":"x"}"#).unwrap_err();
        assert_eq!(
            (e.at.as_str(), e.message.as_str()),
            ("input", "`input` is required")
        );
        let e = request_history(r#"{"input":7}"#).unwrap_err();
        assert_eq!(e.at, "input");
        let e = request_history(r#"{"input":"hi","instructions":[]}"#).unwrap_err();
        assert_eq!(e.at, "instructions");
    }

    #[test]
    fn a_compaction_item_stands_as_a_placeholder_and_a_trigger_ends_the_input() {
        let parsed = read(
            r#"{"input":[
                {"type":"compaction","encrypted_content":"hermes1c.k.p.m"},
                {"role":"user","content":"go on"},
                {"type":"compaction_trigger"}
            ]}"#,
        );
        assert_eq!(parsed.messages.len(), 2);
        assert_eq!(parsed.messages[0].role, Role::User);
        assert_eq!(parsed.compactions.len(), 1);
        let item = &parsed.compactions[0];
        assert_eq!(
            (item.message, item.at.as_str(), item.seal.as_str()),
            (0, "input[0]", "hermes1c.k.p.m")
        );
        assert!(parsed.trigger);
        let e = request_history(
            r#"{"input":[{"role":"user","content":"x"},{"type":"compaction_trigger"},{"role":"user","content":"y"}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.at, "input[2]");
        assert!(
            e.message.contains("follows a compaction_trigger item"),
            "{e}"
        );
        let e = request_history(r#"{"input":[{"type":"compaction"}]}"#).unwrap_err();
        assert_eq!(e.message, "`input[0].encrypted_content` must be a string");
    }

    #[test]
    fn parts_are_read_by_role() {
        let parsed = read(
            r#"{"input":[
                {"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
                {"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://x/y.png","detail":"low"}]},
                {"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}
            ]}"#,
        );
        assert_eq!(parsed.messages[0].role, Role::Developer);
        assert_eq!(
            parsed.messages[1].content.as_ref().unwrap().get(),
            r#"[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]"#
        );
        assert_eq!(parsed.messages[2].content.as_ref().unwrap().get(), "\"ab\"");
        let e = request_history(
            r#"{"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.at, "input[0]");
        assert!(
            e.message.starts_with("`input[0].content`: parts of type"),
            "{e}"
        );
    }
}
