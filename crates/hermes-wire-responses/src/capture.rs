//! Reply capture: a whole Responses object or the events of its stream into one assistant
//! message (docs/spec.md §2; docs/providers.md "OpenAI Responses API").
//!
//! Every output item is kept as the exact bytes received (never a `Value` round trip): the
//! reasoning items under `codex_reasoning_items`, the others (`message`, `function_call`, …)
//! under `codex_message_items`, each a JSON array of the items in output order, and their
//! interleaving under `hermes_block_order` (the item types in output order) so the turn goes
//! back as it came. Summaries become the readable `reasoning_content` (joined with a blank
//! line), `output_text` parts the `content`, each `function_call` a tool call whose id is its
//! `call_id`, with `call_id` and the item's id as `response_item_id` stored beside it. A
//! stream's items are taken from `response.output_item.done` (the item in `.added` may be
//! incomplete); `response.completed` ends the turn. `response.failed` and `error` are the
//! provider's error (nothing stored); `response.incomplete` stores the turn for the record,
//! marked not replayed (docs/spec.md §2, "Turns that are not replayed").

use hermes_core::OnDelta;
use hermes_core::message::{BLOCK_ORDER_KEY, NOT_REPLAYED_KEY};
use hermes_core::transport::Delta;
use hermes_core::{
    FinishReason, Message, Origin, RawJson, ReplyMeta, Role, TextCarrier, ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;

pub(crate) use hermes_providers::native::envelope::ErrorValue;
use hermes_providers::native::reply::CaptureError;
use hermes_providers::native::reply::malformed;

/// The stored key holding a turn's reasoning output items, as a JSON array of the items
/// exactly as received (the Python original's column of the same name, docs/spec.md §9). Only this
/// wire sends them.
pub const REASONING_ITEMS_KEY: &str = "codex_reasoning_items";

/// The stored key holding a turn's other output items (`message`, `function_call`, …), as a
/// JSON array of the items exactly as received (docs/spec.md §9).
pub const MESSAGE_ITEMS_KEY: &str = "codex_message_items";

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(default)]
struct Details {
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

/// `usage` of a Responses object.
#[derive(Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub(crate) struct UsageBody {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<Details>,
    output_tokens_details: Option<Details>,
}

impl UsageBody {
    pub(crate) fn usage(&self) -> Usage {
        Usage::new(
            self.input_tokens.unwrap_or(0),
            self.output_tokens.unwrap_or(0),
            self.output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            self.input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            0,
        )
    }
}

#[derive(Deserialize)]
struct Reason {
    #[serde(default)]
    reason: Option<String>,
}

/// Just enough of a Responses object, borrowed from its bytes.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ResponseBody<'a> {
    status: Option<String>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    incomplete_details: Option<Reason>,
    #[serde(borrow)]
    output: Option<Vec<&'a RawValue>>,
    usage: Option<UsageBody>,
}

/// One output item, as much as capture reads.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ItemBody {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    summary: Option<Vec<TextPart>>,
    content: Option<Vec<TextPart>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TextPart {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    refusal: Option<String>,
}

/// A `function_call` item's `arguments` literal, as received.
#[derive(Deserialize)]
struct ArgsBody<'a> {
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// The words of an error value: its `message` (with its `code`), else its text.
pub(crate) fn error_words(raw: &str) -> String {
    match hermes_providers::native::envelope::bare(raw) {
        Some(ErrorValue {
            message: Some(m),
            code: Some(c),
            ..
        }) if !c.is_empty() => format!("{m} ({c})"),
        Some(ErrorValue {
            message: Some(m), ..
        }) => m,
        _ => raw.to_owned(),
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum End {
    Completed,
    Incomplete(Option<String>),
}

/// Builds one assistant message from a whole reply or from stream events.
#[derive(Default)]
pub(crate) struct TurnCapture {
    /// Output items as received, by output index (a stream's `.done` items).
    items: Vec<(usize, Box<RawValue>)>,
    end: Option<End>,
    usage: Option<Usage>,
    events: usize,
    /// The function calls streamed so far, in the order they began: each one's output index
    /// and whether argument text was reported for it.
    calls: Vec<(usize, bool)>,
}

/// A streamed `function_call` item, as much as its tool-call fragments need.
#[derive(Deserialize, Default)]
#[serde(default)]
struct CallItem {
    #[serde(rename = "type")]
    kind: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

impl TurnCapture {
    /// Reports a `function_call` item added (`done` false) or finished (`done` true) at output
    /// `index` as tool-call fragments: its id and name when it begins, its arguments whole when
    /// no delta carried them.
    fn call_item(&mut self, index: usize, item: &RawValue, done: bool, on_delta: OnDelta<'_>) {
        let Ok(item) = serde_json::from_str::<CallItem>(item.get()) else {
            return;
        };
        if item.kind.as_deref() != Some("function_call") {
            return;
        }
        let arguments = item.arguments.as_deref().unwrap_or_default();
        let known = self.calls.iter().position(|(i, _)| *i == index);
        let (call, first) = match known {
            Some(call) => (call, false),
            None => {
                self.calls.push((index, false));
                (self.calls.len() - 1, true)
            }
        };
        let reported = &mut self.calls[call].1;
        let pending = if *reported || (!done && !first) {
            ""
        } else {
            arguments
        };
        if !first && pending.is_empty() {
            return;
        }
        *reported |= !pending.is_empty();
        on_delta(Delta::ToolCall {
            index: call,
            id: item.call_id.as_deref().filter(|_| first),
            name: item.name.as_deref().filter(|_| first),
            arguments: pending,
        });
    }

    /// A fresh capture.
    pub(crate) fn new() -> Self {
        TurnCapture::default()
    }

    /// Events fed so far.
    pub(crate) fn events(&self) -> usize {
        self.events
    }

    /// Absorbs a whole Responses object (a non-streamed reply, or the `response` of a
    /// stream's last event): its status, usage, and — when no stream item came — its output.
    fn absorb(&mut self, body: &str) -> Result<(), CaptureError> {
        let body: ResponseBody<'_> = serde_json::from_str(body).map_err(malformed)?;
        if let Some(e) = body.error.filter(|e| e.get() != "null") {
            return Err(CaptureError::Provider(error_words(e.get())));
        }
        if let Some(u) = &body.usage {
            self.usage = Some(u.usage());
        }
        match body.status.as_deref() {
            Some("failed") => {
                return Err(CaptureError::Provider(
                    "the response failed with no error message".to_owned(),
                ));
            }
            Some("incomplete") => {
                self.end = Some(End::Incomplete(
                    body.incomplete_details.and_then(|d| d.reason),
                ));
            }
            Some("cancelled") => {
                return Err(CaptureError::Provider(
                    "the response was cancelled".to_owned(),
                ));
            }
            _ => self.end = Some(End::Completed),
        }
        if self.items.is_empty() {
            self.items = body
                .output
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, raw)| (i, raw.to_owned()))
                .collect();
        }
        Ok(())
    }

    /// Absorbs one stream event (`data` of an SSE frame), calling `on_delta` with summary and
    /// answer text as it arrives.
    pub(crate) fn feed(&mut self, data: &str, on_delta: OnDelta<'_>) -> Result<(), CaptureError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Event<'a> {
            #[serde(rename = "type")]
            kind: Option<String>,
            delta: Option<String>,
            output_index: Option<usize>,
            #[serde(borrow)]
            item: Option<&'a RawValue>,
            #[serde(borrow)]
            response: Option<&'a RawValue>,
        }
        self.events += 1;
        let event: Event<'_> = serde_json::from_str(data)
            .map_err(|e| malformed(format!("event {}: {e}", self.events)))?;
        match event.kind.as_deref().unwrap_or_default() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(d) = event.delta.as_deref().filter(|d| !d.is_empty()) {
                    on_delta(Delta::Content(d));
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(d) = event.delta.as_deref().filter(|d| !d.is_empty()) {
                    on_delta(Delta::Reasoning(d));
                }
            }
            "response.output_item.added" => {
                if let (Some(item), Some(index)) = (event.item, event.output_index) {
                    self.call_item(index, item, false, on_delta);
                }
            }
            "response.function_call_arguments.delta" => {
                let call = event
                    .output_index
                    .and_then(|index| self.calls.iter().position(|(i, _)| *i == index));
                if let (Some(call), Some(d)) =
                    (call, event.delta.as_deref().filter(|d| !d.is_empty()))
                {
                    self.calls[call].1 = true;
                    on_delta(Delta::ToolCall {
                        index: call,
                        id: None,
                        name: None,
                        arguments: d,
                    });
                }
            }
            "response.output_item.done" => {
                let item = event
                    .item
                    .ok_or_else(|| malformed("response.output_item.done without an item"))?;
                let index = event.output_index.unwrap_or(self.items.len());
                self.call_item(index, item, true, on_delta);
                self.items.push((index, item.to_owned()));
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = event
                    .response
                    .ok_or_else(|| malformed("a final event without its response"))?;
                self.absorb(response.get())?;
                if event.kind.as_deref() == Some("response.failed") {
                    return Err(CaptureError::Provider(
                        "the response failed with no error message".to_owned(),
                    ));
                }
                if event.kind.as_deref() == Some("response.incomplete")
                    && !matches!(self.end, Some(End::Incomplete(_)))
                {
                    self.end = Some(End::Incomplete(None));
                }
            }
            "error" => return Err(CaptureError::Provider(error_words(data))),
            _ => {}
        }
        Ok(())
    }

    /// The captured message (with `origin`) and the reply's metadata; a stream that never
    /// said how it ended is a broken one, and nothing is stored.
    pub(crate) fn finish(mut self, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
        let Some(end) = self.end.take() else {
            return Err(malformed(format!(
                "the reply ended after {} events without response.completed; the half turn is not stored",
                self.events
            )));
        };
        self.items.sort_by_key(|(i, _)| *i);
        let mut reasoning: Vec<&str> = Vec::new();
        let mut others: Vec<&str> = Vec::new();
        let mut order: Vec<String> = Vec::new();
        let mut summaries: Vec<String> = Vec::new();
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        for (_, raw) in &self.items {
            let item: ItemBody = serde_json::from_str(raw.get()).map_err(malformed)?;
            let kind = item.kind.clone().unwrap_or_default();
            match kind.as_str() {
                "reasoning" => {
                    reasoning.push(raw.get());
                    summaries.extend(
                        item.summary
                            .into_iter()
                            .flatten()
                            .filter_map(|s| s.text)
                            .filter(|t| !t.is_empty()),
                    );
                }
                "message" => {
                    others.push(raw.get());
                    for part in item.content.into_iter().flatten() {
                        match part.kind.as_deref() {
                            Some("refusal") => text.push_str(part.refusal.as_deref().unwrap_or("")),
                            _ => text.push_str(part.text.as_deref().unwrap_or("")),
                        }
                    }
                }
                "function_call" => {
                    others.push(raw.get());
                    let args: ArgsBody<'_> = serde_json::from_str(raw.get()).map_err(malformed)?;
                    let call_id = item
                        .call_id
                        .clone()
                        .ok_or_else(|| malformed("a function_call item without a call_id"))?;
                    let mut call =
                        ToolCall::function(&call_id, item.name.as_deref().unwrap_or(""), "");
                    call.function.arguments = Some(match args.arguments {
                        Some(a) if a.get().starts_with('"') => {
                            RawJson::from_text(a.get()).map_err(malformed)?
                        }
                        Some(a) => RawJson::string(a.get()),
                        None => RawJson::string("{}"),
                    });
                    call.extra
                        .push(("call_id".to_owned(), RawJson::string(&call_id)));
                    if let Some(id) = &item.id {
                        call.extra
                            .push(("response_item_id".to_owned(), RawJson::string(id)));
                    }
                    calls.push(call);
                }
                _ => others.push(raw.get()),
            }
            order.push(kind);
        }
        let mut msg = Message::text(Role::Assistant, "");
        msg.content = Some(if text.is_empty() {
            RawJson::null()
        } else {
            RawJson::string(&text)
        });
        msg.reasoning_content =
            (!summaries.is_empty()).then(|| TextCarrier::new(&summaries.join("\n\n")));
        let has_calls = !calls.is_empty();
        msg.tool_calls = has_calls.then_some(calls);
        let array = |items: &[&str]| RawJson::from_text(format!("[{}]", items.join(",")));
        if !reasoning.is_empty() {
            msg.extra.push((
                REASONING_ITEMS_KEY.to_owned(),
                array(&reasoning).map_err(malformed)?,
            ));
        }
        if !others.is_empty() {
            msg.extra.push((
                MESSAGE_ITEMS_KEY.to_owned(),
                array(&others).map_err(malformed)?,
            ));
        }
        if !order.is_empty() {
            msg.extra.push((
                BLOCK_ORDER_KEY.to_owned(),
                RawJson::from_serialize(&order).map_err(malformed)?,
            ));
        }
        let finish = match &end {
            End::Completed if has_calls => FinishReason::ToolCalls,
            End::Completed => FinishReason::Stop,
            End::Incomplete(Some(r)) if r == "max_output_tokens" => FinishReason::Length,
            End::Incomplete(Some(r)) if r == "content_filter" => FinishReason::ContentFilter,
            End::Incomplete(r) => {
                FinishReason::Other(r.clone().unwrap_or_else(|| "incomplete".to_owned()))
            }
        };
        // An incomplete turn, or one with neither text nor a call, is kept for the record only.
        if matches!(end, End::Incomplete(_)) || (text.is_empty() && !has_calls) {
            msg.extra.push((
                NOT_REPLAYED_KEY.to_owned(),
                RawJson::from_text("true").map_err(malformed)?,
            ));
        }
        msg.origin = Some(origin);
        Ok((msg, ReplyMeta::new(Some(finish), self.usage)))
    }
}

/// Captures a whole (non-streamed) Responses object from its bytes.
pub(crate) fn capture_reply(
    body: &str,
    origin: Origin,
) -> Result<(Message, ReplyMeta), CaptureError> {
    let mut capture = TurnCapture::new();
    capture.absorb(body)?;
    capture.finish(origin)
}
