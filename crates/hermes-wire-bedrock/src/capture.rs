//! Reply capture of the Converse wire (docs/spec.md §2, §5): a whole Converse reply, or the frames
//! of a ConverseStream reply, in; one canonical assistant message out.
//!
//! Content blocks become carriers as on the Anthropic wire (`hermes_wire_anthropic::signed::carriers` builds
//! both), so a Bedrock turn reloaded from the store replays on either wire: `text` blocks the
//! `content`, `toolUse` blocks the `tool_calls` (id = `toolUseId`, arguments = the input's JSON
//! text), `reasoningContent` blocks Anthropic-shaped `reasoning_details` items
//! (`{"type":"thinking","thinking","signature"}`, `{"type":"redacted_thinking","data"}`,
//! serialised once from the captured strings), their texts `reasoning_content` and the kinds of
//! all blocks the recorded block order (`thinking`, `redacted_thinking`, `text`, `tool_use`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use hermes_core::OnDelta;
use hermes_core::transport::Delta;
use hermes_core::{FinishReason, Message, Origin, RawJson, ReplyMeta, Usage};

use hermes_aws::{Frame, FrameReader};
use hermes_core::transport::{Reply, TransportError};
pub(crate) use hermes_providers::native::reply::CaptureError;
use hermes_providers::native::reply::{Captured, malformed};
use hermes_wire_anthropic::capture::keep_transformations;
use hermes_wire_anthropic::signed::carriers::{
    Acc, Block, assistant_role, call_ordinal, close_call, half_turn, open_call, streamed, whole,
};

/// The normalised finish reason of a Converse `stopReason`.
pub(crate) fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "guardrail_intervened" | "content_filtered" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A Converse `usage` object (`TokenUsage`).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UsageBody {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
}

impl UsageBody {
    /// `inputTokens` leaves out the cached prefix (`totalTokens` adds cache reads and writes
    /// back), so the normalised input adds them.
    fn usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_write_input_tokens.unwrap_or(0);
        Usage::new(
            self.input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(write),
            self.output_tokens.unwrap_or(0),
            0,
            read,
            write,
        )
    }
}

/// Just enough of a whole Converse reply (`ConverseResponse`), borrowed from its bytes.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ReplyBody<'a> {
    #[serde(borrow)]
    output: Option<Output<'a>>,
    stop_reason: Option<String>,
    usage: Option<UsageBody>,
    /// What `additionalModelResponseFieldPaths` asked back ([`Additional`]).
    #[serde(borrow)]
    additional_model_response_fields: Option<Additional<'a>>,
    /// An error envelope's words (`{"message": …}`).
    #[serde(alias = "Message")]
    message: Option<String>,
}

/// `additionalModelResponseFields`: the model's own response fields a request named in
/// `additionalModelResponseFieldPaths` (JSON Pointers; a field the model's response lacks is
/// left out, docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html). The one
/// hermes asks for is Claude's `input_transformations` (docs/spec.md §5a 4), requested with
/// `drop_block` (`super::body::TRANSFORMATIONS_PATH`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Additional<'a> {
    #[serde(borrow)]
    input_transformations: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Output<'a> {
    #[serde(borrow, default)]
    message: Option<OutputMessage<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OutputMessage<'a> {
    role: Option<String>,
    #[serde(borrow)]
    content: Option<Vec<&'a RawValue>>,
}

/// The members of a `ContentBlock` union the capture reads.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct BlockBody<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use: Option<ToolUseBody<'a>>,
    reasoning_content: Option<ReasoningBody>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ToolUseBody<'a> {
    tool_use_id: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ReasoningBody {
    reasoning_text: Option<ReasoningTextBody>,
    redacted_content: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ReasoningTextBody {
    text: Option<String>,
    signature: Option<String>,
}

/// Resolves one block of a whole reply.
fn whole_block(index: usize, raw: &RawValue) -> Result<Block, CaptureError> {
    let block: BlockBody<'_> = serde_json::from_str(raw.get())
        .map_err(|e| malformed(format!("`content[{index}]`: {e}")))?;
    if let Some(text) = block.text {
        if !text.get().starts_with('"') {
            return Err(malformed(format!(
                "`content[{index}].text` is not a string"
            )));
        }
        return RawJson::from_text(text.get())
            .map(Block::Text)
            .map_err(malformed);
    }
    if let Some(tool) = block.tool_use {
        return Ok(Block::ToolUse {
            id: tool.tool_use_id,
            name: tool.name.unwrap_or_default(),
            input: tool.input.map_or("{}", RawValue::get).to_owned(),
        });
    }
    if let Some(reasoning) = block.reasoning_content {
        return match (reasoning.reasoning_text, reasoning.redacted_content) {
            (Some(t), None) => Block::thinking(
                t.text.unwrap_or_default(),
                t.signature.as_deref().filter(|s| !s.is_empty()),
            ),
            (None, Some(data)) => Block::redacted(&data),
            _ => Err(malformed(format!(
                "`content[{index}].reasoningContent` is not exactly one of reasoningText, redactedContent"
            ))),
        };
    }
    // `image`, `citationsContent`, … : only the kind is kept.
    let kind = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get())
        .ok()
        .and_then(|m| m.keys().next().cloned())
        .ok_or_else(|| malformed(format!("`content[{index}]` is not a content block")))?;
    Ok(Block::Other(kind))
}

/// Captures a whole (non-streamed) Converse reply from its bytes: the assistant message with
/// `origin`, and the reply's finish reason and usage. An error envelope is
/// [`CaptureError::Provider`].
pub(crate) fn capture_reply(text: &str, origin: Origin) -> Captured {
    let reply: ReplyBody<'_> = serde_json::from_str(text).map_err(malformed)?;
    let Some(output) = reply.output else {
        return Err(match reply.message {
            Some(message) => CaptureError::Provider(message),
            None => malformed("reply has no `output`"),
        });
    };
    let message = output
        .message
        .ok_or_else(|| malformed("reply has no `output.message`"))?;
    assistant_role(message.role.as_deref())?;
    let content = message
        .content
        .ok_or_else(|| malformed("reply has no `output.message.content`"))?;
    let captured = whole(
        content,
        whole_block,
        origin,
        reply.stop_reason.as_deref().map(finish_reason),
        reply.usage.as_ref().map(UsageBody::usage),
    );
    let transformations = reply
        .additional_model_response_fields
        .and_then(|a| a.input_transformations);
    keep_transformations(captured, transformations.map(RawValue::get))
}

/// The Converse name of a block kind (as [`Acc::kind`] names it), for errors.
fn converse_name(kind: &str) -> &str {
    match kind {
        "thinking" => "reasoningText",
        "redacted_thinking" => "redactedContent",
        "tool_use" => "toolUse",
        other => other,
    }
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    role: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct BlockStart {
    content_block_index: Option<u64>,
    start: Option<StartBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartBody {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ToolUseStart {
    tool_use_id: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    #[serde(default)]
    content_block_index: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta<'a> {
    #[serde(default)]
    content_block_index: Option<u64>,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct DeltaBody<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_use: Option<ToolUseDelta<'a>>,
    #[serde(borrow)]
    reasoning_content: Option<ReasoningDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolUseDelta<'a> {
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ReasoningDelta<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    redacted_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    #[serde(default)]
    stop_reason: Option<String>,
    /// `MessageStopEvent.additionalModelResponseFields` (botocore's `bedrock-runtime` model).
    #[serde(default)]
    additional_model_response_fields: Option<AdditionalOwned>,
}

/// [`Additional`], owned (a stream's frames are dropped as they are read).
#[derive(Deserialize, Default)]
#[serde(default)]
struct AdditionalOwned {
    input_transformations: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<UsageBody>,
}

/// How much of a body [`ConverseStream`] keeps to explain a reply that is no event stream.
const HEAD_LIMIT: usize = 4096;

/// Reads a ConverseStream body: event-stream frames (cut across chunks anywhere) into one
/// captured message. An exception frame is the provider's error and nothing is kept; a body
/// that ends inside a frame, or before `messageStop`, is a broken stream.
#[derive(Default)]
pub(crate) struct ConverseStream {
    reader: FrameReader,
    capture: StreamCapture,
    /// The first bytes, kept to explain a reply that is no event stream at all (a JSON error
    /// body sent with status 200).
    head: Vec<u8>,
}

impl ConverseStream {
    /// A fresh reader.
    pub(crate) fn new() -> Self {
        ConverseStream::default()
    }

    /// Number of whole frames read so far.
    pub(crate) fn frames(&self) -> usize {
        self.reader.frames()
    }

    /// Absorbs the next chunk of the body, feeding every frame it completes to the capture.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        on_delta: OnDelta<'_>,
    ) -> Result<(), TransportError> {
        let room = HEAD_LIMIT.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.reader.push(chunk);
        loop {
            let frame = match self.reader.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.not_a_stream().unwrap_or(e)),
            };
            self.capture
                .feed(&frame, on_delta)
                .map_err(CaptureError::mid_stream)?;
        }
    }

    /// The captured reply once the body ended.
    pub(crate) fn finish(self, origin: Origin) -> Result<Reply, TransportError> {
        if self.reader.pending() > 0 {
            return Err(self.not_a_stream().unwrap_or_else(|| {
                TransportError::Stream(format!(
                    "the stream ended inside a frame ({} bytes after {} frames); the half turn is not stored",
                    self.reader.pending(),
                    self.reader.frames()
                ))
            }));
        }
        let (message, meta) = self.capture.finish(origin).map_err(CaptureError::at_end)?;
        Ok(Reply { message, meta })
    }

    /// A provider's JSON error body sent with status 200 instead of frames, as its error.
    fn not_a_stream(&self) -> Option<TransportError> {
        (self.reader.frames() == 0)
            .then(|| String::from_utf8_lossy(&self.head).trim().to_owned())
            .filter(|t| t.starts_with('{'))
            .map(|t| TransportError::AfterOk(hermes_providers::native::envelope::message_of(&t)))
    }
}

fn parse<'a, T: Deserialize<'a>>(event: &str, data: &'a [u8]) -> Result<T, CaptureError> {
    serde_json::from_slice(data).map_err(|e| malformed(format!("`{event}` event: {e}")))
}

/// Builds one assistant message from the frames of a ConverseStream reply. Every payload may
/// carry a `p` padding field (ignored like any unknown field).
#[derive(Default)]
pub(crate) struct StreamCapture {
    /// Blocks in the order they started, with their `contentBlockIndex`.
    blocks: Vec<(Option<u64>, Acc)>,
    usage: Option<UsageBody>,
    stop_reason: Option<String>,
    /// `messageStop`'s `input_transformations`, as received.
    transformations: Option<Box<RawValue>>,
    stopped: bool,
    frames: usize,
}

impl StreamCapture {
    /// A fresh capture.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        StreamCapture::default()
    }

    /// Absorbs one frame, calling `on_delta` with the reasoning and answer text it carries. An
    /// exception (or error) frame is [`CaptureError::Provider`]; unknown events are ignored.
    pub(crate) fn feed(
        &mut self,
        frame: &Frame,
        on_delta: OnDelta<'_>,
    ) -> Result<(), CaptureError> {
        self.frames += 1;
        if frame.is_error() {
            return Err(CaptureError::Provider(frame.error_text()));
        }
        let data = frame.payload.as_ref();
        match frame.event_type.as_deref().unwrap_or_default() {
            "messageStart" => {
                let start: MessageStart = parse("messageStart", data)?;
                if let Some(role) = start.role.filter(|r| r != "assistant") {
                    return Err(malformed(format!(
                        "`messageStart` role is {role}, expected assistant"
                    )));
                }
            }
            "contentBlockStart" => {
                let start: BlockStart = parse("contentBlockStart", data)?;
                if let Some(tool) = start.start.and_then(|s| s.tool_use) {
                    self.blocks.push((
                        start.content_block_index,
                        Acc::ToolUse {
                            id: tool.tool_use_id,
                            name: tool.name.unwrap_or_default(),
                            input: String::new(),
                        },
                    ));
                    open_call(&self.blocks, on_delta);
                }
            }
            "contentBlockStop" => {
                let stop: BlockStop = parse("contentBlockStop", data)?;
                close_call(&self.blocks, stop.content_block_index, on_delta);
            }
            "contentBlockDelta" => self.delta(data, on_delta)?,
            "messageStop" => {
                let stop: MessageStop = parse("messageStop", data)?;
                self.stop_reason = stop.stop_reason;
                self.transformations = stop
                    .additional_model_response_fields
                    .and_then(|a| a.input_transformations);
                self.stopped = true;
            }
            "metadata" => {
                let meta: Metadata = parse("metadata", data)?;
                if meta.usage.is_some() {
                    self.usage = meta.usage;
                }
            }
            // Events this capture does not know.
            _ => {}
        }
        Ok(())
    }

    fn delta(&mut self, data: &[u8], on_delta: OnDelta<'_>) -> Result<(), CaptureError> {
        let event: BlockDelta<'_> = parse("contentBlockDelta", data)?;
        let index = event.content_block_index;
        let delta = event.delta;
        let position = match index {
            Some(_) => self.blocks.iter().rposition(|(i, _)| *i == index),
            None => self.blocks.len().checked_sub(1),
        };
        // Text and reasoning blocks have no start event: their first delta opens them.
        let opened = match (&delta.text, &delta.reasoning_content) {
            (Some(_), _) => Some(Acc::Text(String::new())),
            (None, Some(r)) if r.redacted_content.is_some() => Some(Acc::Redacted(String::new())),
            (None, Some(_)) => Some(Acc::Thinking {
                text: String::new(),
                signature: None,
            }),
            (None, None) => None,
        };
        let position = match (position, opened) {
            (Some(p), _) => p,
            (None, Some(acc)) => {
                self.blocks.push((index, acc));
                self.blocks.len() - 1
            }
            (None, None) => {
                return Err(malformed(format!(
                    "`contentBlockDelta` for block {} that never started",
                    index.map_or_else(|| "?".to_owned(), |i| i.to_string())
                )));
            }
        };
        let call = call_ordinal(&self.blocks, position);
        let Some((_, acc)) = self.blocks.get_mut(position) else {
            return Err(malformed("`contentBlockDelta` for a lost block"));
        };
        let mismatch = |what: &str, acc: &Acc| {
            Err(malformed(format!(
                "a `{what}` delta for a `{}` block",
                converse_name(acc.kind())
            )))
        };
        if let Some(piece) = delta.text {
            let Acc::Text(text) = &mut *acc else {
                return mismatch("text", acc);
            };
            if !piece.is_empty() {
                on_delta(Delta::Content(&piece));
                text.push_str(&piece);
            }
        } else if let Some(tool) = delta.tool_use {
            let Acc::ToolUse { input, .. } = &mut *acc else {
                return mismatch("toolUse", acc);
            };
            if let Some(piece) = tool.input.filter(|p| !p.is_empty()) {
                input.push_str(&piece);
                on_delta(Delta::ToolCall {
                    index: call,
                    id: None,
                    name: None,
                    arguments: &piece,
                });
            }
        } else if let Some(reasoning) = delta.reasoning_content {
            match acc {
                Acc::Thinking { text, signature } if reasoning.redacted_content.is_none() => {
                    if let Some(piece) = reasoning.text.filter(|p| !p.is_empty()) {
                        on_delta(Delta::Reasoning(&piece));
                        text.push_str(&piece);
                    }
                    // Signature pieces are joined in order (Bedrock sends one, at the end).
                    if let Some(piece) = reasoning.signature.filter(|p| !p.is_empty()) {
                        signature.get_or_insert_with(String::new).push_str(&piece);
                    }
                }
                Acc::Redacted(data)
                    if reasoning.text.is_none() && reasoning.signature.is_none() =>
                {
                    if let Some(piece) = reasoning.redacted_content {
                        data.push_str(&piece);
                    }
                }
                other => return mismatch("reasoningContent", other),
            }
        }
        // Deltas this capture does not know (`citation`, `image`, `toolResult`) are ignored.
        Ok(())
    }

    /// The captured message (with `origin`) and the reply's finish reason and usage. A stream
    /// that ended before `messageStop` is an error: a half turn is never a message.
    pub(crate) fn finish(self, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
        if !self.stopped {
            return Err(half_turn("messageStop", self.frames, "frames"));
        }
        let captured = streamed(
            self.blocks,
            origin,
            self.stop_reason.as_deref().map(finish_reason),
            self.usage.as_ref().map(UsageBody::usage),
        );
        keep_transformations(captured, self.transformations.as_deref().map(RawValue::get))
    }
}
