//! Stream accumulation (docs/spec.md §4): chat-completion chunks in, one captured assistant
//! message out.
//!
//! Text and reasoning deltas are joined; `reasoning_details` chunks are merged by `index` (else
//! `id`), text fields joined, a signature or encrypted blob kept whole (the latest non-empty);
//! tool-call deltas are merged by index; Gemini `extra_content` signatures and Copilot's
//! `reasoning_opaque` (latest non-empty) and `reasoning_text` (all fragments in order) build the
//! native record. A streamed turn and the same turn non-streamed capture the same carriers.

use std::borrow::Cow;

use hermes_providers::native::members::{MemberEdit, edit_members};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use hermes_core::{
    DetailItem, FinishReason, Message, NativeRecord, Origin, RawJson, ReplyMeta, Role, TextCarrier,
    Usage,
};

/// Keys of a `reasoning_details` item whose string fragments are joined across chunks.
const JOINED_ITEM_KEYS: [&str; 2] = ["text", "summary"];

/// A chat-completions `usage` object as normalised [`Usage`]: `prompt_tokens`,
/// `completion_tokens`, `completion_tokens_details.reasoning_tokens`, cache reads from
/// `prompt_tokens_details.cached_tokens` (or DeepSeek's `prompt_cache_hit_tokens`) and cache
/// writes from `prompt_tokens_details.cache_write_tokens` / `cache_creation_input_tokens`
/// (gateways relaying Anthropic).
pub fn chat_usage(usage: &Value) -> Usage {
    let n = |path: &str| usage.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    Usage::new(
        n("/prompt_tokens"),
        n("/completion_tokens"),
        n("/completion_tokens_details/reasoning_tokens"),
        n("/prompt_tokens_details/cached_tokens").max(n("/prompt_cache_hit_tokens")),
        n("/prompt_tokens_details/cache_write_tokens").max(n("/cache_creation_input_tokens")),
    )
}

/// One `reasoning_details` item being built: its merged fields, and its bytes as they arrived
/// while it came whole in one chunk.
struct DetailAcc {
    fields: Map<String, Value>,
    raw: Option<RawJson>,
}

/// The `reasoning_details` items of a chunk's delta, as raw bytes.
#[derive(serde::Deserialize)]
struct RawChunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<RawChoice<'a>>,
}

#[derive(serde::Deserialize)]
struct RawChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<RawDelta<'a>>,
}

#[derive(serde::Deserialize)]
struct RawDelta<'a> {
    #[serde(borrow, default)]
    reasoning_details: Option<Vec<&'a serde_json::value::RawValue>>,
}

#[derive(Default)]
struct ToolCallAcc {
    id: Option<String>,
    kind: Option<String>,
    name: String,
    arguments: String,
    signature: Option<String>,
    function_signature: Option<String>,
}

/// Builds one assistant message from `chat.completion.chunk` payloads.
#[derive(Default)]
pub struct StreamAccumulator {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    details: Vec<DetailAcc>,
    tool_calls: Vec<(u64, ToolCallAcc)>,
    message_signature: Option<String>,
    opaque: Option<String>,
    reasoning_text: Vec<String>,
    meta: ReplyMeta,
    chunks: usize,
}

fn non_blank(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

fn non_empty(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn join(slot: &mut Option<String>, value: Option<&Value>) {
    if let Some(s) = value.and_then(Value::as_str) {
        slot.get_or_insert_with(String::new).push_str(s);
    }
}

/// The Gemini signature in an `extra_content` value (namespaced or flat).
fn gemini_signature(extra: Option<&Value>) -> Option<String> {
    let extra = extra?;
    non_blank(
        extra
            .get("google")
            .and_then(|g| g.get("thought_signature"))
            .or_else(|| extra.get("thought_signature")),
    )
}

impl StreamAccumulator {
    /// A fresh accumulator.
    pub fn new() -> Self {
        StreamAccumulator::default()
    }

    /// Number of chunks fed so far.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// True once a chunk carried a `finish_reason`.
    pub fn finished(&self) -> bool {
        self.meta.finish.is_some()
    }

    /// Absorbs one chunk, given both parsed and as the text it arrived as: like
    /// [`StreamAccumulator::feed`], and a `reasoning_details` item that arrives whole in this
    /// chunk keeps its bytes as received (escapes, big integers, key order).
    pub fn feed_with_text(&mut self, chunk: &Value, text: &str) {
        let raws = serde_json::from_str::<RawChunk<'_>>(text)
            .ok()
            .and_then(|c| c.choices.into_iter().next())
            .and_then(|c| c.delta)
            .and_then(|d| d.reasoning_details)
            .unwrap_or_default();
        self.feed_with(chunk, &raws);
    }

    /// Absorbs one chunk (`{"choices":[{"delta":{…},"finish_reason":…}],"usage":…}`).
    pub fn feed(&mut self, chunk: &Value) {
        self.feed_with(chunk, &[]);
    }

    fn feed_with(&mut self, chunk: &Value, raws: &[&serde_json::value::RawValue]) {
        self.chunks += 1;
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.meta.usage = Some(chat_usage(usage));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.meta.finish = Some(FinishReason::from_chat(reason));
        }
        let Some(delta) = choice.get("delta").and_then(Value::as_object) else {
            return;
        };
        join(&mut self.content, delta.get("content"));
        join(&mut self.reasoning_content, delta.get("reasoning_content"));
        join(&mut self.reasoning, delta.get("reasoning"));
        if let Some(items) = delta.get("reasoning_details").and_then(Value::as_array) {
            for (i, item) in items.iter().enumerate() {
                if let Some(item) = item.as_object() {
                    let raw = raws.get(i).and_then(|r| RawJson::from_text(r.get()).ok());
                    self.feed_detail(item, raw);
                }
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.feed_tool_call(call);
            }
        }
        if let Some(sig) = gemini_signature(delta.get("extra_content")) {
            self.message_signature = Some(sig);
        }
        if let Some(opaque) = non_empty(delta.get("reasoning_opaque")) {
            self.opaque = Some(opaque);
        }
        if let Some(text) = non_empty(delta.get("reasoning_text")) {
            self.reasoning_text.push(text);
        }
    }

    fn feed_detail(&mut self, chunk: &Map<String, Value>, raw: Option<RawJson>) {
        let key =
            |item: &Map<String, Value>, k: &str| item.get(k).filter(|v| !v.is_null()).cloned();
        let existing = match (key(chunk, "index"), key(chunk, "id")) {
            (Some(index), _) => self
                .details
                .iter()
                .position(|d| d.fields.get("index") == Some(&index)),
            (None, Some(id)) => self
                .details
                .iter()
                .position(|d| d.fields.get("id") == Some(&id)),
            (None, None) => None,
        };
        let Some(pos) = existing else {
            self.details.push(DetailAcc {
                fields: chunk.clone(),
                raw,
            });
            return;
        };
        // Merged from several chunks: no single arrival holds its bytes any more.
        self.details[pos].raw = None;
        let item = &mut self.details[pos].fields;
        for (k, v) in chunk {
            match (k.as_str(), item.get_mut(k)) {
                (k, Some(Value::String(acc))) if JOINED_ITEM_KEYS.contains(&k) => {
                    if let Some(s) = v.as_str() {
                        acc.push_str(s);
                    }
                }
                (_, Some(slot)) => {
                    // Signatures and encrypted data arrive whole: the latest non-empty wins.
                    if !v.is_null() && v.as_str() != Some("") {
                        *slot = v.clone();
                    }
                }
                (_, None) => {
                    item.insert(k.clone(), v.clone());
                }
            }
        }
    }

    fn feed_tool_call(&mut self, call: &Value) {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(self.tool_calls.len() as u64);
        let pos = match self.tool_calls.iter().position(|(i, _)| *i == index) {
            Some(pos) => pos,
            None => {
                self.tool_calls.push((index, ToolCallAcc::default()));
                self.tool_calls.len() - 1
            }
        };
        let acc = &mut self.tool_calls[pos].1;
        if let Some(id) = non_empty(call.get("id")) {
            acc.id = Some(id);
        }
        if let Some(kind) = non_empty(call.get("type")) {
            acc.kind = Some(kind);
        }
        if let Some(f) = call.get("function") {
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                acc.name.push_str(name);
            }
            if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                acc.arguments.push_str(args);
            }
            if let Some(sig) = non_blank(f.get("thought_signature")) {
                acc.function_signature = Some(sig);
            }
        }
        if let Some(sig) = gemini_signature(call.get("extra_content")) {
            acc.signature = Some(sig);
        }
    }

    /// The captured message (with `origin`) and the reply's metadata.
    pub fn finish(self, origin: Origin) -> (Message, ReplyMeta) {
        let mut msg = Message::text(Role::Assistant, "");
        msg.content = Some(
            self.content
                .as_deref()
                .map_or_else(RawJson::null, RawJson::string),
        );
        msg.reasoning_content = self.reasoning_content.as_deref().map(TextCarrier::new);
        msg.reasoning = self.reasoning.as_deref().map(TextCarrier::new);
        let mut items: Vec<DetailItem> = self
            .details
            .into_iter()
            .filter_map(|d| d.raw.or_else(|| RawJson::from_serialize(&d.fields).ok()))
            .filter_map(DetailItem::from_provider)
            .collect();
        if !self.tool_calls.is_empty() {
            let mut calls = self.tool_calls;
            calls.sort_by_key(|(i, _)| *i);
            msg.tool_calls = Some(
                calls
                    .into_iter()
                    .map(|(_, acc)| {
                        let mut call = hermes_core::ToolCall::function(
                            acc.id.as_deref().unwrap_or_default(),
                            &acc.name,
                            &acc.arguments,
                        );
                        call.id = acc.id;
                        call.kind = acc.kind.or(call.kind);
                        call.extra_content = acc.signature.as_deref().map(google_signature);
                        call.function.thought_signature =
                            acc.function_signature.as_deref().map(TextCarrier::new);
                        call
                    })
                    .collect(),
            );
        }
        let record = NativeRecord {
            extra_content: self.message_signature.as_deref().map(google_signature),
            reasoning_opaque: self.opaque.as_deref().map(TextCarrier::new),
            reasoning_text: (!self.reasoning_text.is_empty())
                .then(|| TextCarrier::new(&self.reasoning_text.concat())),
            other: Vec::new(),
        };
        if !record.is_empty() {
            items.push(record.to_item());
        }
        msg.reasoning_details = (!items.is_empty()).then_some(items);
        msg.origin = Some(origin);
        (msg, self.meta)
    }
}

/// `{"google":{"thought_signature":sig}}`.
fn google_signature(sig: &str) -> RawJson {
    RawJson::from_serialize(&serde_json::json!({ "google": { "thought_signature": sig } }))
        .unwrap_or_else(|_| RawJson::null())
}

/// Just enough of a `chat.completion` body to find the message, borrowed from the bytes.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct CompletionBody<'a> {
    #[serde(borrow)]
    error: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    choices: Option<Vec<ChoiceBody<'a>>>,
    usage: Option<Value>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ChoiceBody<'a> {
    #[serde(borrow)]
    message: Option<&'a serde_json::value::RawValue>,
    finish_reason: Option<String>,
}

/// Why a non-streamed body could not be captured (the one capture error of every wire).
pub use hermes_providers::native::reply::CaptureError;

/// The reply's message with its `reasoning_details` as the accumulator keeps a stream's: only
/// the items [`DetailItem::from_provider`] keeps (objects, none posing as hermes' native
/// record), each byte for byte; the key left out when none is left or it holds no array.
fn provider_details(message: &RawValue) -> Cow<'_, RawValue> {
    edit_members(message, |key, value| {
        if key != "reasoning_details" || value.get() == "null" {
            return MemberEdit::Keep;
        }
        let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(value.get()) else {
            return MemberEdit::Drop;
        };
        let kept: Vec<&RawValue> = items
            .iter()
            .copied()
            .filter(|item| {
                RawJson::from_text(item.get())
                    .ok()
                    .and_then(DetailItem::from_provider)
                    .is_some()
            })
            .collect();
        if kept.is_empty() {
            return MemberEdit::Drop;
        }
        if kept.len() == items.len() {
            return MemberEdit::Keep;
        }
        let text: Vec<&str> = kept.iter().map(|item| item.get()).collect();
        RawValue::from_string(format!("[{}]", text.join(",")))
            .map_or(MemberEdit::Drop, MemberEdit::Replace)
    })
}

/// Captures a non-streamed `chat.completion` reply from its bytes the way the accumulator
/// captures a stream: the known fields of `choices[0].message` (unknown response-only keys such
/// as `refusal` are not stored), the native record, and `origin`. The message is decoded from
/// the bytes themselves, never through a `serde_json::Value`: every carrier keeps its bytes as
/// received (escapes, big integers, key order).
pub fn capture_message(body: &str, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
    let reply: CompletionBody<'_> =
        serde_json::from_str(body).map_err(|e| CaptureError::Malformed(e.to_string()))?;
    if let Some(error) = reply.error.filter(|e| e.get() != "null") {
        let value: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
        let text = value
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.get().to_owned(), str::to_owned);
        return Err(CaptureError::Provider(text));
    }
    let choice = reply
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| CaptureError::Malformed("reply has no `choices[0]`".into()))?;
    let message = choice
        .message
        .ok_or_else(|| CaptureError::Malformed("reply has no `choices[0].message`".into()))?;
    let message = provider_details(message);
    let mut msg: Message = serde_json::from_str(message.get())
        .map_err(|e| CaptureError::Malformed(format!("`choices[0].message`: {e}")))?;
    if msg.role != Role::Assistant {
        return Err(CaptureError::Malformed(format!(
            "`choices[0].message.role` is {}, expected assistant",
            msg.role
        )));
    }
    msg.extra.clear();
    // Unknown tool-call keys are response-only too (a stream keeps none of them), and a
    // provider's `hermes_…` key there must not pose as hermes' own bookkeeping.
    for call in msg.tool_calls.iter_mut().flatten() {
        call.extra.clear();
        call.function.extra.clear();
    }
    // A captured turn is stored in canonical key order, as a streamed one is.
    msg.key_order = None;
    if msg.content.is_none() {
        msg.content = Some(RawJson::null());
    }
    // Keep the native record last, as the stream accumulator does.
    if let Some(items) = &mut msg.reasoning_details
        && let Some(pos) = items
            .iter()
            .position(|i| matches!(i, DetailItem::Native { .. }))
    {
        let native = items.remove(pos);
        items.push(native);
    }
    msg.origin = Some(origin);
    let meta = ReplyMeta::new(
        choice.finish_reason.as_deref().map(FinishReason::from_chat),
        reply
            .usage
            .as_ref()
            .filter(|u| !u.is_null())
            .map(chat_usage),
    );
    Ok((msg, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn origin() -> Origin {
        Origin {
            provider: "p".into(),
            host: "h".into(),
            model: "m".into(),
        }
    }

    fn chunk(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    /// Captures `message` whole (finished with `finish`) and as a stream of `deltas` fed with
    /// their text, asserts both store the same message and metadata, and returns the streamed
    /// one.
    fn same_both_ways(message: Value, finish: &str, deltas: &[Value]) -> Message {
        let full = json!({"choices": [{"index": 0, "finish_reason": finish, "message": message}],
                          "usage": {"total_tokens": 3}});
        let mut acc = StreamAccumulator::new();
        for delta in deltas {
            let c = chunk(delta.clone());
            acc.feed_with_text(&c, &c.to_string());
        }
        acc.feed(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": {"total_tokens": 3}}));
        let (streamed, meta) = acc.finish(origin());
        let (whole, whole_meta) = capture_message(&full.to_string(), origin()).unwrap();
        assert_eq!(meta, whole_meta);
        // As values: an item merged from several chunks has its keys in arrival order.
        let as_value = |m: &Message| serde_json::to_value(m).unwrap();
        assert_eq!(as_value(&streamed), as_value(&whole));
        streamed
    }

    #[test]
    fn streamed_and_non_streamed_turns_capture_the_same_carriers() {
        let streamed = same_both_ways(
            json!({
                "role": "assistant", "content": "hello",
                "reasoning_content": "think", "reasoning": "think",
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "abc", "signature": "SIG", "index": 0},
                    {"type": "reasoning.encrypted", "data": "ENC", "index": 1}
                ],
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{\"a\":1}"},
                                "extra_content": {"google": {"thought_signature": "TS"}}}],
                "extra_content": {"google": {"thought_signature": "MS"}},
                "reasoning_opaque": "OP", "reasoning_text": "rt1rt2",
                "refusal": null
            }),
            "tool_calls",
            &[
                json!({"role": "assistant", "content": "", "reasoning_content": "th", "reasoning": "th"}),
                json!({"reasoning_content": "in", "reasoning": "in", "reasoning_details": [{"type": "reasoning.text", "text": "a", "index": 0}]}),
                json!({"reasoning_content": "k", "reasoning": "k", "reasoning_details": [{"text": "bc", "index": 0}], "reasoning_text": "rt1"}),
                json!({"reasoning_details": [{"signature": "SIG", "index": 0}], "reasoning_opaque": "OP", "reasoning_text": "rt2"}),
                json!({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC", "index": 1}]}),
                json!({"content": "hel", "extra_content": {"google": {"thought_signature": "MS"}}}),
                json!({"content": "lo", "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "now", "arguments": ""}}]}),
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\""}}]}),
                json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}, "extra_content": {"google": {"thought_signature": "TS"}}}]}),
            ],
        );
        assert_eq!(
            streamed.reasoning_details.as_ref().unwrap()[0].raw().get(),
            r#"{"type":"reasoning.text","text":"abc","index":0,"signature":"SIG"}"#
        );
    }

    /// Found by fuzzing: a provider's item typed as hermes' native record was taken as the
    /// record (and whole and streamed replies disagreed on it), and a whole reply kept
    /// `reasoning_details: []`, items that are no objects and unknown tool-call keys that a
    /// stream drops. Both now store the same thing, and no provider item is the record.
    #[test]
    fn provider_items_never_pose_as_the_native_record_and_both_ways_store_the_same() {
        let posing = json!({"type": "hermes.native_assistant", "reasoning_opaque": "FAKE",
                            "extra_content": {"google": {"thought_signature": "FAKE"}}});
        let kept = json!({"type": "reasoning.text", "text": "t", "index": 0});
        let msg = same_both_ways(
            json!({"role": "assistant", "content": "hi",
                   "reasoning_details": [posing, 7, "junk", [], kept],
                   "tool_calls": [{"id": "c1", "type": "function", "hermes_made_up_id": true,
                                   "function": {"name": "now", "arguments": "{}", "x": 1}}],
                   "reasoning_opaque": "OP"}),
            "tool_calls",
            &[
                json!({"role": "assistant", "content": "hi", "reasoning_details": [posing, 7, "junk", [], kept]}),
                json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "hermes_made_up_id": true,
                                       "function": {"name": "now", "arguments": "{}", "x": 1}}],
                       "reasoning_opaque": "OP"}),
            ],
        );
        let items = msg.reasoning_details.as_ref().unwrap();
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].raw().get(), kept.to_string());
        let record = msg.native_record().unwrap();
        assert_eq!(record.reasoning_opaque.as_ref().unwrap().text(), "OP");
        assert!(record.extra_content.is_none() && record.other.is_empty());
        let call = &msg.tool_calls.as_ref().unwrap()[0];
        assert!(call.extra.is_empty() && call.function.extra.is_empty());
        // Only items that are no record, or none at all: no `reasoning_details` either way.
        for details in [json!([]), json!([posing]), json!(["junk"]), json!({"a": 1})] {
            let msg = same_both_ways(
                json!({"role": "assistant", "content": "hi", "reasoning_details": details}),
                "stop",
                &[json!({"role": "assistant", "content": "hi", "reasoning_details": details})],
            );
            assert!(msg.reasoning_details.is_none(), "{details}: {msg:?}");
        }
    }

    #[test]
    fn reply_without_choices_is_an_error() {
        let err = capture_message(r#"{"id":"x"}"#, origin()).unwrap_err();
        assert!(
            matches!(&err, CaptureError::Malformed(m) if m.contains("choices[0]")),
            "{err:?}"
        );
        assert_eq!(
            capture_message(r#"{"error":{"message":"overloaded"}}"#, origin()).unwrap_err(),
            CaptureError::Provider("overloaded".into())
        );
    }

    /// Escapes, a big integer and a key order that a `Value` round trip would rewrite.
    const TRICKY_ITEM: &str = r#"{"type":"reasoning.text","text":"caf\u00e9 a\/b","signature":"c2ln","n":123456789012345678901234567890}"#;

    #[test]
    fn a_whole_reply_keeps_every_carrier_byte_as_received() {
        let body = format!(
            r#"{{"choices":[{{"index":0,"finish_reason":"stop","message":{{"role":"assistant","content":"caf\u00e9","reasoning_content":"th\/ink","reasoning_details":[{TRICKY_ITEM}],"refusal":null}}}}],"usage":{{"total_tokens":3}}}}"#
        );
        let (msg, meta) = capture_message(&body, origin()).unwrap();
        assert_eq!(
            msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
            TRICKY_ITEM
        );
        assert_eq!(
            msg.reasoning_content.as_ref().unwrap().raw().get(),
            r#""th\/ink""#
        );
        assert_eq!(msg.content.as_ref().unwrap().get(), r#""caf\u00e9""#);
        assert!(msg.extra.is_empty(), "response-only keys are not stored");
        assert_eq!(meta.finish, Some(FinishReason::Stop));
    }

    #[test]
    fn a_streamed_item_that_arrives_whole_keeps_its_bytes() {
        let mut acc = StreamAccumulator::new();
        let text = format!(
            r#"{{"choices":[{{"index":0,"delta":{{"role":"assistant","reasoning_details":[{TRICKY_ITEM}]}},"finish_reason":"stop"}}]}}"#
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        acc.feed_with_text(&value, &text);
        let (msg, _) = acc.finish(origin());
        assert_eq!(
            msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
            TRICKY_ITEM
        );
    }
}
