//! Reply capture of the Anthropic Messages wire (docs/spec.md §2, §5): a whole `message` object, or
//! its SSE events, in; one canonical assistant message out.
//!
//! The content blocks become carriers as `crate::signed::carriers` builds them for both Claude
//! wires: text blocks the `content`, `tool_use` blocks the `tool_calls` (the input object as the
//! arguments text), `thinking` / `redacted_thinking` blocks the `reasoning_details` items they
//! are, the thinking texts `reasoning_content`, and every block's kind the recorded block order.
//!
//! A whole reply is decoded from its bytes through borrowed [`RawValue`]s, never through a
//! `serde_json::Value`: each block keeps its bytes as received (escapes, big integers, key
//! order). A streamed turn and the same turn non-streamed capture the same carriers, whether the
//! events come as SSE or, from Bedrock, inside AWS event-stream frames ([`FrameCapture`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use hermes_core::OnDelta;
use hermes_core::transport::Delta;
use hermes_core::{FinishReason, Message, Origin, RawJson, ReplyMeta, Usage};

#[cfg(feature = "bedrock")]
use base64::Engine as _;
#[cfg(feature = "bedrock")]
use hermes_aws::{Frame, FrameReader};
#[cfg(feature = "bedrock")]
use hermes_core::transport::TransportError;
use hermes_providers::native::read::error_event_text;

pub(crate) use crate::signed::carriers::CaptureError;
use crate::signed::carriers::{
    Acc, Block, Captured, assistant_role, call_ordinal, close_call, half_turn, malformed,
    open_call, streamed, whole,
};

/// The normalised finish reason of a `stop_reason`.
fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A Messages `usage` object (unknown fields such as `server_tool_use` are ignored).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
struct UsageBody {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    /// One entry per model call the request took (compaction, docs/spec.md §7): `{type,
    /// input_tokens, output_tokens}`. The top-level counts leave compaction iterations out, so a
    /// request's tokens are the sum over these.
    iterations: Option<Vec<Iteration>>,
}

/// One entry of `usage.iterations`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
struct Iteration {
    #[serde(rename = "type")]
    kind: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl UsageBody {
    /// The input and output tokens of the iterations that ran a model, when the usage lists
    /// iterations (Anthropic's compaction docs: "sum across all entries in `usage.iterations`"
    /// for what a request consumed). The kinds are the pinned `anthropic` SDK's
    /// (`types/beta/beta_iterations_usage.py`): `compaction`, `message` (a turn's own and a
    /// declined fallback hop's), `fallback_message` (the fallback model's hop that served the
    /// reply) and `advisor_message` (an advisor sub-inference) — each a model call, billed. A
    /// kind the SDK does not know yet is not counted (what it stands for is not known).
    fn iteration_sums(&self) -> Option<(u64, u64)> {
        let its = self.iterations.as_ref().filter(|i| !i.is_empty())?;
        let counted = its.iter().filter(|i| {
            matches!(
                i.kind.as_deref(),
                Some("compaction" | "message" | "fallback_message" | "advisor_message")
            )
        });
        Some(counted.fold((0u64, 0u64), |(input, output), i| {
            (
                input.saturating_add(i.input_tokens.unwrap_or(0)),
                output.saturating_add(i.output_tokens.unwrap_or(0)),
            )
        }))
    }
}

/// Token counts as Anthropic reports them: `input_tokens` excludes the cached prefix, so the
/// normalised input adds cache reads and writes back.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl Counts {
    fn of(usage: &UsageBody) -> Counts {
        let (input, output) = usage.iteration_sums().unwrap_or((
            usage.input_tokens.unwrap_or(0),
            usage.output_tokens.unwrap_or(0),
        ));
        Counts {
            input,
            output,
            cache_read: usage.cache_read_input_tokens.unwrap_or(0),
            cache_write: usage.cache_creation_input_tokens.unwrap_or(0),
        }
    }

    /// Absorbs a later `usage`: input and cache counts when non-zero, output when present.
    fn absorb(&mut self, usage: &UsageBody) {
        let later = |slot: &mut u64, value: Option<u64>| {
            if let Some(v) = value.filter(|v| *v > 0) {
                *slot = v;
            }
        };
        let sums = usage.iteration_sums();
        later(
            &mut self.input,
            sums.map(|(input, _)| input).or(usage.input_tokens),
        );
        later(&mut self.cache_read, usage.cache_read_input_tokens);
        later(&mut self.cache_write, usage.cache_creation_input_tokens);
        if let Some(output) = sums.map(|(_, output)| output).or(usage.output_tokens) {
            self.output = output;
        }
    }

    fn usage(self) -> Usage {
        Usage::new(
            self.input
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_write),
            self.output,
            0,
            self.cache_read,
            self.cache_write,
        )
    }
}

/// Just enough of a whole Messages reply, borrowed from its bytes.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ReplyBody<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    role: Option<String>,
    #[serde(borrow)]
    content: Option<Vec<&'a RawValue>>,
    stop_reason: Option<String>,
    usage: Option<UsageBody>,
    #[serde(borrow)]
    input_transformations: Option<&'a RawValue>,
}

/// The key a reply's `input_transformations` (docs/spec.md §5a 4: the blocks a bound model dropped
/// instead of refusing) are kept under on the captured message, as received. Never sent.
pub const TRANSFORMATIONS_KEY: &str = "hermes_input_transformations";

/// A captured reply (or its error, passed on) with the reply's `input_transformations` (when it
/// lists any) kept on its message as received, and logged: each a thinking block the provider
/// dropped, with its path and reason.
pub fn keep_transformations(captured: Captured, raw: Option<&str>) -> Captured {
    let (mut message, mut meta) = captured?;
    keep_dropped(&mut message, &mut meta, raw);
    Ok((message, meta))
}

/// [`keep_transformations`] on a captured message and its meta.
fn keep_dropped(message: &mut Message, meta: &mut ReplyMeta, raw: Option<&str>) {
    let Some(raw) = raw else { return };
    let Ok(dropped) = serde_json::from_str::<Vec<&RawValue>>(raw) else {
        return;
    };
    let Ok(kept) = RawJson::from_text(raw.to_owned()) else {
        return;
    };
    if dropped.is_empty() {
        return;
    }
    meta.dropped_upstream = dropped.len() as u64;
    tracing::warn!(
        input_transformations = raw,
        "the upstream dropped thinking blocks it found bound to another prefix, model or account (drop_block)"
    );
    message.extra.push((TRANSFORMATIONS_KEY.to_owned(), kept));
}

/// The fields of a content block the capture reads, borrowed from its bytes.
#[derive(Deserialize, Default)]
#[serde(default)]
struct BlockBody<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    thinking: Option<String>,
    signature: Option<String>,
    data: Option<String>,
    id: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    /// A `compaction` block's readable summary.
    content: Option<String>,
    /// A `compaction` block's sealed state.
    encrypted_content: Option<String>,
}

/// Exact JSON text as a [`RawJson`] (the text is already known to be one valid value).
fn exact(raw: &RawValue) -> Result<RawJson, CaptureError> {
    RawJson::from_text(raw.get()).map_err(malformed)
}

/// Resolves one block of a whole reply, keeping its bytes.
fn whole_block(index: usize, raw: &RawValue) -> Result<Block, CaptureError> {
    let block: BlockBody<'_> = serde_json::from_str(raw.get())
        .map_err(|e| malformed(format!("`content[{index}]`: {e}")))?;
    let kind = block
        .kind
        .ok_or_else(|| malformed(format!("`content[{index}]` has no `type`")))?;
    Ok(match kind.as_str() {
        "text" => {
            let text = block
                .text
                .filter(|t| t.get().starts_with('"'))
                .ok_or_else(|| malformed(format!("`content[{index}].text` is not a string")))?;
            Block::Text(exact(text)?)
        }
        "thinking" => Block::Thinking {
            item: exact(raw)?,
            text: block.thinking.unwrap_or_default(),
        },
        "redacted_thinking" => Block::Redacted(exact(raw)?),
        "tool_use" => Block::ToolUse {
            id: block.id,
            name: block.name.unwrap_or_default(),
            input: block.input.map_or("{}", RawValue::get).to_owned(),
        },
        // A provider-written checkpoint (docs/spec.md §7): kept verbatim.
        "compaction" => Block::Compaction(exact(raw)?),
        _ => Block::Other(kind),
    })
}

/// Captures a whole (non-streamed) Messages reply from its bytes: the assistant message with
/// `origin`, and the reply's finish reason and usage. An `{"type":"error",…}` body is
/// [`CaptureError::Provider`] with the provider's message.
pub(crate) fn capture_reply(text: &str, origin: Origin) -> Captured {
    let reply: ReplyBody<'_> = serde_json::from_str(text).map_err(malformed)?;
    let error = reply.error.filter(|e| e.get() != "null");
    if error.is_some() || reply.kind.as_deref() == Some("error") {
        return Err(CaptureError::Provider(error_event_text(text.trim())));
    }
    if let Some(kind) = reply.kind.as_deref().filter(|k| *k != "message") {
        return Err(malformed(format!(
            "reply `type` is {kind}, expected message"
        )));
    }
    assistant_role(reply.role.as_deref())?;
    let content = reply
        .content
        .ok_or_else(|| malformed("reply has no `content`"))?;
    let captured = whole(
        content,
        whole_block,
        origin,
        reply.stop_reason.as_deref().map(finish_reason),
        reply.usage.as_ref().map(|u| Counts::of(u).usage()),
    );
    keep_transformations(captured, reply.input_transformations.map(RawValue::get))
}

/// `{"type":…}` of an event's data (when the event has no name).
#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    message: Option<StartMessage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StartMessage {
    stop_reason: Option<String>,
    usage: Option<UsageBody>,
    input_transformations: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct BlockStop {
    #[serde(default)]
    index: Option<u64>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow)]
    content_block: &'a RawValue,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    encrypted_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageDelta {
    delta: Option<MessageDeltaBody>,
    usage: Option<UsageBody>,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

fn parse<'a, T: Deserialize<'a>>(event: &str, data: &'a str) -> Result<T, CaptureError> {
    serde_json::from_str(data).map_err(|e| malformed(format!("`{event}` event: {e}")))
}

/// Builds one assistant message from the SSE events of a streamed Messages reply.
#[derive(Default)]
pub(crate) struct StreamCapture {
    /// Blocks in the order they started, with their `index`.
    blocks: Vec<(Option<u64>, Acc)>,
    counts: Option<Counts>,
    stop_reason: Option<String>,
    stopped: bool,
    events: usize,
    /// `message_start`'s `input_transformations`, as received.
    transformations: Option<Box<RawValue>>,
}

impl StreamCapture {
    /// A fresh capture.
    pub(crate) fn new() -> Self {
        StreamCapture::default()
    }

    /// Number of events fed so far.
    pub(crate) fn events(&self) -> usize {
        self.events
    }

    /// Absorbs one SSE event (`event` its name, `data` its data), calling `on_delta` with the
    /// thinking and answer text it carries. An `error` event is [`CaptureError::Provider`];
    /// `ping` and unknown events are ignored.
    pub(crate) fn feed(
        &mut self,
        event: &str,
        data: &str,
        on_delta: OnDelta<'_>,
    ) -> Result<(), CaptureError> {
        self.events += 1;
        let name = match event.trim() {
            "" | "message" => serde_json::from_str::<TypeProbe<'_>>(data)
                .ok()
                .and_then(|p| p.kind)
                .unwrap_or_default(),
            named => Cow::Borrowed(named),
        };
        match name.as_ref() {
            "message_start" => {
                let start: MessageStart = parse("message_start", data)?;
                if let Some(message) = start.message {
                    if let Some(usage) = &message.usage {
                        self.absorb(usage);
                    }
                    if message.input_transformations.is_some() {
                        self.transformations = message.input_transformations;
                    }
                    if message.stop_reason.is_some() {
                        self.stop_reason = message.stop_reason;
                    }
                }
            }
            "content_block_start" => self.start(data, on_delta)?,
            "content_block_delta" => self.delta(data, on_delta)?,
            "content_block_stop" => {
                let stop: BlockStop = parse("content_block_stop", data)?;
                close_call(&self.blocks, stop.index, on_delta);
            }
            "message_delta" => {
                let delta: MessageDelta = parse("message_delta", data)?;
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = &delta.usage {
                    self.absorb(usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(CaptureError::Provider(error_event_text(data.trim()))),
            // `ping` and events this capture does not know.
            _ => {}
        }
        Ok(())
    }

    fn absorb(&mut self, usage: &UsageBody) {
        match &mut self.counts {
            Some(counts) => counts.absorb(usage),
            None => self.counts = Some(Counts::of(usage)),
        }
    }

    fn start(&mut self, data: &str, on_delta: OnDelta<'_>) -> Result<(), CaptureError> {
        let start: BlockStart<'_> = parse("content_block_start", data)?;
        let raw = start.content_block;
        let block: BlockBody<'_> = serde_json::from_str(raw.get())
            .map_err(|e| malformed(format!("`content_block_start` block: {e}")))?;
        let kind = block
            .kind
            .ok_or_else(|| malformed("`content_block_start` block has no `type`"))?;
        let acc = match kind.as_str() {
            "text" => {
                let text = match block.text {
                    Some(t) => serde_json::from_str::<String>(t.get())
                        .map_err(|e| malformed(format!("`content_block_start` text: {e}")))?,
                    None => String::new(),
                };
                if !text.is_empty() {
                    on_delta(Delta::Content(&text));
                }
                Acc::Text(text)
            }
            "thinking" => {
                let text = block.thinking.unwrap_or_default();
                if !text.is_empty() {
                    on_delta(Delta::Reasoning(&text));
                }
                Acc::Thinking {
                    text,
                    signature: block.signature.filter(|s| !s.is_empty()),
                }
            }
            "redacted_thinking" => Acc::Whole(match exact(raw) {
                Ok(raw) => Block::Redacted(raw),
                Err(_) => Block::redacted(block.data.as_deref().unwrap_or_default())?,
            }),
            "tool_use" => Acc::ToolUse {
                id: block.id,
                name: block.name.unwrap_or_default(),
                input: String::new(),
            },
            "compaction" => Acc::Compaction {
                start: raw.get().to_owned(),
                content: block.content.unwrap_or_default(),
                encrypted: block.encrypted_content.unwrap_or_default(),
            },
            _ => Acc::Whole(Block::Other(kind)),
        };
        self.blocks.push((start.index, acc));
        open_call(&self.blocks, on_delta);
        Ok(())
    }

    fn delta(&mut self, data: &str, on_delta: OnDelta<'_>) -> Result<(), CaptureError> {
        let event: BlockDelta<'_> = parse("content_block_delta", data)?;
        let position = match event.index {
            Some(index) => self.blocks.iter().rposition(|(i, _)| *i == Some(index)),
            None => self.blocks.len().checked_sub(1),
        };
        let call = position.map_or(0, |p| call_ordinal(&self.blocks, p));
        let Some((_, acc)) = position.and_then(|p| self.blocks.get_mut(p)) else {
            return Err(malformed(format!(
                "`content_block_delta` for block {} that never started",
                event
                    .index
                    .map_or_else(|| "?".to_owned(), |i| i.to_string())
            )));
        };
        let delta = event.delta;
        match (delta.kind.as_deref(), acc) {
            (Some("text_delta"), Acc::Text(text)) => {
                if let Some(piece) = delta.text.as_deref().filter(|p| !p.is_empty()) {
                    on_delta(Delta::Content(piece));
                    text.push_str(piece);
                }
            }
            (Some("thinking_delta"), Acc::Thinking { text, .. }) => {
                if let Some(piece) = delta.thinking.as_deref().filter(|p| !p.is_empty()) {
                    on_delta(Delta::Reasoning(piece));
                    text.push_str(piece);
                }
            }
            (Some("signature_delta"), Acc::Thinking { signature, .. }) => {
                // Signatures arrive whole: the latest non-empty one is the block's.
                if let Some(sig) = delta.signature.filter(|s| !s.is_empty()) {
                    on_delta(Delta::Signature(&sig));
                    *signature = Some(sig.into_owned());
                }
            }
            (Some("input_json_delta"), Acc::ToolUse { input, .. }) => {
                if let Some(piece) = delta.partial_json.as_deref().filter(|p| !p.is_empty()) {
                    input.push_str(piece);
                    on_delta(Delta::ToolCall {
                        index: call,
                        id: None,
                        name: None,
                        arguments: piece,
                    });
                }
            }
            // Both fields of a compaction block arrive in pieces, each concatenated
            // (docs/spec.md §7).
            (
                Some("compaction_delta"),
                Acc::Compaction {
                    content, encrypted, ..
                },
            ) => {
                content.push_str(delta.content.as_deref().unwrap_or_default());
                encrypted.push_str(delta.encrypted_content.as_deref().unwrap_or_default());
            }
            (
                Some(
                    kind @ ("text_delta" | "thinking_delta" | "signature_delta"
                    | "input_json_delta" | "compaction_delta"),
                ),
                acc,
            ) => {
                return Err(malformed(format!("`{kind}` for a `{}` block", acc.kind())));
            }
            // `citations_delta` and delta kinds this capture does not know.
            _ => {}
        }
        Ok(())
    }

    /// The captured message (with `origin`) and the reply's finish reason and usage. A stream
    /// that ended before `message_stop` is an error: a half turn is never a message.
    pub(crate) fn finish(self, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
        if !self.stopped {
            return Err(half_turn("message_stop", self.events, "events"));
        }
        let captured = streamed(
            self.blocks,
            origin,
            self.stop_reason.as_deref().map(finish_reason),
            self.counts.map(Counts::usage),
        );
        keep_transformations(captured, self.transformations.as_deref().map(RawValue::get))
    }
}

#[cfg(feature = "bedrock")]
/// The payload of a Bedrock `chunk` event: one Anthropic stream event, base64-encoded (the `p`
/// padding field and anything else is ignored).
#[derive(Deserialize)]
struct ChunkPayload {
    bytes: String,
}

#[cfg(feature = "bedrock")]
/// Builds one assistant message from the AWS event stream of a Bedrock
/// `invoke-with-response-stream` reply: each `chunk` event's payload `{"bytes":"<base64>",
/// "p":…}` holds one Anthropic stream event, fed to a [`StreamCapture`] by its `type`, as
/// anthropic-sdk-python's `AWSEventStreamDecoder` does (`anthropic/lib/bedrock/
/// _stream_decoder.py`). An exception frame is the provider's error after the 200, and nothing
/// of the turn is kept.
#[derive(Default)]
pub(crate) struct FrameCapture {
    reader: FrameReader,
    capture: StreamCapture,
}

#[cfg(feature = "bedrock")]
impl FrameCapture {
    /// A fresh capture.
    pub(crate) fn new() -> Self {
        FrameCapture::default()
    }

    /// Number of frames read so far.
    pub(crate) fn frames(&self) -> usize {
        self.reader.frames()
    }

    /// Absorbs the next chunk of the body (frames may be cut anywhere), calling `on_delta` with
    /// the thinking and answer text of every whole frame it completes.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        on_delta: OnDelta<'_>,
    ) -> Result<(), TransportError> {
        self.reader.push(chunk);
        while let Some(frame) = self.reader.next_frame()? {
            self.frame(&frame, on_delta)?;
        }
        Ok(())
    }

    fn frame(&mut self, frame: &Frame, on_delta: OnDelta<'_>) -> Result<(), TransportError> {
        if frame.is_error() {
            return Err(TransportError::AfterOk(frame.error_text()));
        }
        if frame.event_type.as_deref() != Some("chunk") {
            // No other event is declared for InvokeModelWithResponseStream; a new one is not
            // part of the turn.
            return Ok(());
        }
        let n = self.reader.frames();
        let payload: ChunkPayload = serde_json::from_slice(&frame.payload).map_err(|e| {
            TransportError::Decode(format!("event-stream frame {n}: `chunk` payload: {e}"))
        })?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(payload.bytes.as_bytes())
            .map_err(|e| {
                TransportError::Decode(format!("event-stream frame {n}: `chunk.bytes`: {e}"))
            })?;
        let event = String::from_utf8(bytes).map_err(|e| {
            TransportError::Decode(format!(
                "event-stream frame {n}: `chunk.bytes` is not UTF-8: {e}"
            ))
        })?;
        self.capture
            .feed("", &event, on_delta)
            .map_err(CaptureError::mid_stream)
    }

    /// The captured message (with `origin`) and the reply's finish reason and usage. A body that
    /// ends inside a frame, or before `message_stop`, is a stream error: the half turn is not
    /// stored.
    pub(crate) fn finish(self, origin: Origin) -> Result<(Message, ReplyMeta), TransportError> {
        if self.reader.pending() > 0 {
            return Err(TransportError::Stream(format!(
                "the event stream ended inside a frame ({} bytes after {} whole frames); the half turn is not stored",
                self.reader.pending(),
                self.reader.frames()
            )));
        }
        self.capture.finish(origin).map_err(CaptureError::at_end)
    }
}

#[cfg(test)]
mod tests {
    use hermes_core::message::{BLOCK_ORDER_KEY, NOT_REPLAYED_KEY};
    use serde_json::{Value, json};

    use super::*;
    use crate::testing::{ClaudeTurn, Seen, arguments, check_claude_turn, details, extra, frame};
    use hermes_providers::native::reply::Captured;

    fn origin() -> Origin {
        Origin {
            provider: "anthropic".into(),
            host: "api.anthropic.com".into(),
            model: "claude-opus-4-6".into(),
        }
    }

    /// The thinking block of [`WHOLE`]: escapes a `Value` round trip would rewrite.
    const THINKING: &str =
        r#"{"type":"thinking","thinking":"Caf\u00e9 first: a\/b.","signature":"c2ln\/LTE="}"#;
    const REDACTED: &str = r#"{"type":"redacted_thinking","data":"ZW5j\/cnlwdGVk"}"#;
    const TEXT: &str = r#""Let me check \u00e9\/.""#;
    const INPUT: &str = r#"{"n":123456789012345678901234567890,"tz":"UTC"}"#;

    fn whole() -> String {
        format!(
            r#"{{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{THINKING},{REDACTED},{{"type":"text","text":{TEXT}}},{{"type":"tool_use","id":"toolu_01","name":"now","input":{INPUT}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":42}}}}"#
        )
    }

    /// The SSE events of the same turn as [`whole`]: thinking split, a signature-only final
    /// delta, a redacted block, text split, tool input split mid-token.
    fn events() -> Vec<(&'static str, String)> {
        let start = |i: u32, block: &str| {
            format!(r#"{{"type":"content_block_start","index":{i},"content_block":{block}}}"#)
        };
        let delta = |i: u32, d: Value| {
            json!({"type": "content_block_delta", "index": i, "delta": d}).to_string()
        };
        let stop = |i: u32| format!(r#"{{"type":"content_block_stop","index":{i}}}"#);
        vec![
            ("message_start", r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}"#.to_owned()),
            ("ping", r#"{"type":"ping"}"#.to_owned()),
            ("content_block_start", start(0, r#"{"type":"thinking","thinking":"","signature":""}"#)),
            ("content_block_delta", delta(0, json!({"type": "thinking_delta", "thinking": "Café fi"}))),
            ("content_block_delta", delta(0, json!({"type": "thinking_delta", "thinking": "rst: a/b."}))),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln\/LTE="}}"#.to_owned()),
            ("content_block_stop", stop(0)),
            ("content_block_start", start(1, REDACTED)),
            ("content_block_stop", stop(1)),
            ("content_block_start", start(2, r#"{"type":"text","text":""}"#)),
            ("content_block_delta", delta(2, json!({"type": "text_delta", "text": "Let me "}))),
            ("content_block_delta", delta(2, json!({"type": "citations_delta", "citation": {"type": "char_location"}}))),
            ("content_block_delta", delta(2, json!({"type": "text_delta", "text": "check é/."}))),
            ("content_block_stop", stop(2)),
            ("content_block_start", start(3, r#"{"type":"tool_use","id":"toolu_01","name":"now","input":{}}"#)),
            ("content_block_delta", delta(3, json!({"type": "input_json_delta", "partial_json": ""}))),
            ("content_block_delta", delta(3, json!({"type": "input_json_delta", "partial_json": "{\"n\":1234567890"}))),
            ("content_block_delta", delta(3, json!({"type": "input_json_delta", "partial_json": "12345678901234567890,\"t"}))),
            ("content_block_delta", delta(3, json!({"type": "input_json_delta", "partial_json": "z\":\"UTC\"}"}))),
            ("content_block_stop", stop(3)),
            ("some_future_event", r#"{"type":"some_future_event"}"#.to_owned()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}"#.to_owned()),
            ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
        ]
    }

    /// Feeds `events`, collecting the reported deltas (`true` for thinking).
    fn stream(events: &[(&str, String)]) -> (Captured, Vec<(bool, String)>) {
        let seen = Seen::default();
        let on_delta = |d: Delta<'_>| seen.record(d);
        let mut capture = StreamCapture::new();
        for (event, data) in events {
            if let Err(e) = capture.feed(event, data, &on_delta) {
                return (Err(e), seen.take());
            }
        }
        assert_eq!(capture.events(), events.len());
        (capture.finish(origin()), seen.take())
    }

    /// A provider's compaction block (docs/spec.md §7), as a whole reply sends it: `content` with
    /// escapes a `Value` round trip keeps (`\n`), `encrypted_content` base64.
    const COMPACTION: &str = r#"{"type":"compaction","content":"Summary of 4 earlier messages.\nuser: time? café","encrypted_content":"aHNjMQ+/AAEC=="}"#;

    #[test]
    fn a_compaction_block_is_kept_verbatim_and_streamed_deltas_accumulate_to_it() {
        let whole = format!(
            r#"{{"type":"message","role":"assistant","content":[{COMPACTION}],"stop_reason":"end_turn","usage":{{"input_tokens":900,"output_tokens":12,"iterations":[{{"type":"compaction","input_tokens":900,"output_tokens":12}}]}}}}"#
        );
        let (msg, meta) = capture_reply(&whole, origin()).unwrap();
        assert_eq!(details(&msg), [COMPACTION]);
        assert!(
            msg.replayable(),
            "a checkpoint is replayed, not kept for the record"
        );
        assert_eq!(
            hermes_core::checkpoint::native_compaction(&msg).map(RawJson::get),
            Some(COMPACTION)
        );

        // Streamed: both fields in pieces, side by side, each concatenated.
        let start = r#"{"type":"content_block_start","index":0,"content_block":{"type":"compaction","content":"","encrypted_content":""}}"#;
        let piece = |content: &str, sealed: &str| {
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "compaction_delta", "content": content, "encrypted_content": sealed}})
            .to_string()
        };
        let events = vec![
            ("message_start", r#"{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input_tokens":900,"output_tokens":1}}}"#.to_owned()),
            ("content_block_start", start.to_owned()),
            ("content_block_delta", piece("Summary of 4 earlier", "aHNjMQ+")),
            ("content_block_delta", piece(" messages.\nuser: time? café", "/AAEC")),
            ("content_block_delta", piece("", "==")),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.to_owned()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12,"iterations":[{"type":"compaction","input_tokens":900,"output_tokens":12}]}}"#.to_owned()),
            ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
        ];
        let (streamed, _) = stream(&events);
        let (streamed, streamed_meta) = streamed.unwrap();
        let block: Value =
            serde_json::from_str(streamed.reasoning_details.as_ref().unwrap()[0].raw().get())
                .unwrap();
        assert_eq!(block, serde_json::from_str::<Value>(COMPACTION).unwrap());
        assert_eq!(
            streamed.reasoning_details.as_ref().unwrap()[0].raw().get(),
            r#"{"type":"compaction","content":"Summary of 4 earlier messages.\nuser: time? café","encrypted_content":"aHNjMQ+/AAEC=="}"#
        );
        assert_eq!(streamed_meta.usage, meta.usage);
    }

    #[test]
    fn usage_iterations_are_summed_over_every_model_call_the_sdk_names() {
        let reply = |usage: &str| {
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"text","text":"ok"}}],"stop_reason":"end_turn","usage":{usage}}}"#
            )
        };
        // Anthropic's top-level counts leave the compaction iteration out.
        let (_, meta) = capture_reply(
            &reply(
                r#"{"input_tokens":23000,"output_tokens":1000,"cache_read_input_tokens":7,"iterations":[{"type":"compaction","input_tokens":180000,"output_tokens":3500},{"type":"message","input_tokens":23000,"output_tokens":1000},{"type":"some_future_kind","input_tokens":50,"output_tokens":0}]}"#,
            ),
            origin(),
        )
        .unwrap();
        assert_eq!(meta.usage, Some(Usage::new(203_007, 4500, 0, 7, 0)));
        // A fallback-served turn: the declined hop (`message`), the fallback model's hop that
        // served it (`fallback_message`) and an advisor's call are all paid for.
        let (_, meta) = capture_reply(
            &reply(
                r#"{"input_tokens":900,"output_tokens":40,"iterations":[{"type":"message","input_tokens":1000,"output_tokens":2},{"type":"fallback_message","model":"claude-sonnet-5-5","input_tokens":900,"output_tokens":40},{"type":"advisor_message","model":"claude-opus-5-5","input_tokens":300,"output_tokens":20}]}"#,
            ),
            origin(),
        )
        .unwrap();
        assert_eq!(meta.usage, Some(Usage::new(2200, 62, 0, 0, 0)));
        // Without iterations: the top-level counts.
        let (_, meta) =
            capture_reply(&reply(r#"{"input_tokens":10,"output_tokens":4}"#), origin()).unwrap();
        assert_eq!(meta.usage, Some(Usage::new(10, 4, 0, 0, 0)));
    }

    #[test]
    fn a_whole_reply_keeps_every_block_byte_as_received() {
        let want = ClaudeTurn {
            details: [THINKING, REDACTED],
            content: TEXT,
            arguments: INPUT,
            call_id: "toolu_01",
        };
        let msg = check_claude_turn(capture_reply(&whole(), origin()).unwrap(), &origin(), want);
        // Stored as one canonical assistant message.
        let stored: Value = serde_json::to_value(&msg).unwrap();
        assert_eq!(stored["tool_calls"][0]["type"], "function");
        assert_eq!(stored["content"], "Let me check é/.");
    }

    #[test]
    fn a_whole_reply_keeps_key_order_and_spacing_of_blocks() {
        let thinking = r#"{"signature":"c2ln","thinking":"x","type":"thinking"}"#;
        let input = r#"{ "z": 1, "a": [1.0, 2e3] }"#;
        let body = format!(
            r#"{{"type":"message","role":"assistant","content":[{thinking}, {{"input":{input},"name":"f","id":"toolu_9","type":"tool_use"}}],"stop_reason":"tool_use","usage":{{"input_tokens":3,"output_tokens":4}}}}"#
        );
        let (msg, meta) = capture_reply(&body, origin()).unwrap();
        assert_eq!(details(&msg), [thinking]);
        assert_eq!(arguments(&msg), [input]);
        assert!(msg.content.as_ref().unwrap().is_null());
        assert_eq!(meta.usage, Some(Usage::new(3, 4, 0, 0, 0)));
    }

    #[test]
    fn a_streamed_turn_captures_what_the_whole_reply_captures() {
        let (whole, whole_meta) = capture_reply(&whole(), origin()).unwrap();
        let (streamed, meta) = stream(&events()).0.unwrap();
        assert_eq!(meta, whole_meta);
        assert_eq!(
            streamed.reasoning_content.as_ref().unwrap().text(),
            whole.reasoning_content.as_ref().unwrap().text()
        );
        assert_eq!(arguments(&streamed), arguments(&whole));
        assert_eq!(
            extra(&streamed, BLOCK_ORDER_KEY),
            extra(&whole, BLOCK_ORDER_KEY)
        );
        // The signature-only final delta is the block's signature; the thinking is rebuilt in
        // the API's key order.
        assert_eq!(
            details(&streamed)[0],
            r#"{"type":"thinking","thinking":"Café first: a/b.","signature":"c2ln/LTE="}"#
        );
        // The redacted block keeps the bytes of its start event.
        assert_eq!(details(&streamed)[1], REDACTED);
        let as_value = |m: &Message| serde_json::to_value(m).unwrap();
        assert_eq!(as_value(&streamed), as_value(&whole));
        assert_eq!(streamed.extra, whole.extra);
    }

    #[test]
    fn a_stream_reports_thinking_and_text_deltas() {
        let (result, seen) = stream(&events());
        result.unwrap();
        let seen: Vec<(bool, &str)> = seen.iter().map(|(r, t)| (*r, t.as_str())).collect();
        assert_eq!(
            seen,
            [
                (true, "Café fi"),
                (true, "rst: a/b."),
                (false, "Let me "),
                (false, "check é/.")
            ]
        );
    }

    #[test]
    fn a_thinking_blocks_signature_is_reported_after_its_text_before_the_answer() {
        let seen = Seen::default();
        let on_delta = |d: Delta<'_>| seen.record(d);
        let mut capture = StreamCapture::new();
        for (event, data) in &events() {
            capture.feed(event, data, &on_delta).unwrap();
        }
        let lines = seen.lines();
        let at = |line: &str| lines.iter().position(|l| l == line);
        let signature = at("S:c2ln/LTE=").unwrap_or_else(|| panic!("{lines:?}"));
        assert!(at("R:rst: a/b.").unwrap() < signature, "{lines:?}");
        assert!(signature < at("C:Let me ").unwrap(), "{lines:?}");
    }

    #[test]
    fn an_error_event_is_the_providers_error() {
        let mut events = events();
        events.truncate(5);
        events.push((
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .to_owned(),
        ));
        let (result, _) = stream(&events);
        assert_eq!(
            result.unwrap_err(),
            CaptureError::Provider("Overloaded".into())
        );
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in `thinking` block"},"request_id":"req_1"}"#;
        assert_eq!(
            capture_reply(body, origin()).unwrap_err(),
            CaptureError::Provider(
                "messages.1.content.0: Invalid `signature` in `thinking` block".into()
            )
        );
    }

    #[test]
    fn a_stream_without_message_stop_is_not_a_message() {
        let mut events = events();
        events.pop();
        let err = stream(&events).0.unwrap_err();
        assert!(
            matches!(&err, CaptureError::Malformed(m) if m.contains("message_stop")),
            "{err:?}"
        );
    }

    #[test]
    fn a_thinking_only_max_tokens_turn_is_not_replayed() {
        let body = format!(
            r#"{{"type":"message","role":"assistant","content":[{THINKING}],"stop_reason":"max_tokens","usage":{{"input_tokens":7,"output_tokens":9}}}}"#
        );
        let (whole, whole_meta) = capture_reply(&body, origin()).unwrap();
        let events: Vec<(&str, String)> = vec![
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}"#.into()),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#.into()),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Caf\u00e9 first: a\/b."}}"#.into()),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln\/LTE="}}"#.into()),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.into()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}"#.into()),
            ("message_stop", r#"{"type":"message_stop"}"#.into()),
        ];
        let (streamed, meta) = stream(&events).0.unwrap();
        for msg in [&whole, &streamed] {
            assert!(!msg.replayable());
            assert_eq!(extra(msg, NOT_REPLAYED_KEY), Some("true"));
            assert_eq!(extra(msg, BLOCK_ORDER_KEY), Some(r#"["thinking"]"#));
            assert!(msg.content.as_ref().unwrap().is_null());
            assert!(msg.tool_calls.is_none());
            assert_eq!(
                msg.reasoning_content.as_ref().unwrap().text(),
                "Café first: a/b."
            );
        }
        assert_eq!(meta, whole_meta);
        assert_eq!(meta.finish, Some(FinishReason::Length));
        assert_eq!(meta.usage, Some(Usage::new(7, 9, 0, 0, 0)));
    }

    #[test]
    fn an_empty_turn_is_not_replayed_and_records_no_order() {
        let (msg, meta) = capture_reply(
            r#"{"type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#,
            origin(),
        )
        .unwrap();
        assert!(!msg.replayable());
        assert_eq!(extra(&msg, BLOCK_ORDER_KEY), None);
        assert!(msg.reasoning_details.is_none());
        assert!(msg.reasoning_content.is_none());
        assert_eq!(meta.finish, Some(FinishReason::Stop));
        assert_eq!(meta.usage, None);
    }

    #[test]
    fn several_text_blocks_become_text_parts_on_both_paths() {
        let body = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"a\u00e9"},{"type":"thinking","thinking":"","signature":"s"},{"type":"text","text":"b","citations":[]}],"stop_reason":"end_turn"}"#;
        let (whole, _) = capture_reply(body, origin()).unwrap();
        assert_eq!(
            whole.content.as_ref().unwrap().get(),
            r#"[{"type":"text","text":"a\u00e9"},{"type":"text","text":"b"}]"#
        );
        // An empty thinking text (display omitted) gives no readable text, but keeps its item.
        assert!(whole.reasoning_content.is_none());
        assert_eq!(
            details(&whole),
            [r#"{"type":"thinking","thinking":"","signature":"s"}"#]
        );
        let events: Vec<(&str, String)> = vec![
            ("message_start", r#"{"type":"message_start","message":{}}"#.into()),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.into()),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"aé"}}"#.into()),
            ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}"#.into()),
            ("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s"}}"#.into()),
            ("content_block_start", r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#.into()),
            ("content_block_delta", r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"b"}}"#.into()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#.into()),
            ("message_stop", r#"{"type":"message_stop"}"#.into()),
        ];
        let (streamed, meta) = stream(&events).0.unwrap();
        assert_eq!(meta.usage, None);
        let as_value = |m: &Message| serde_json::to_value(m).unwrap();
        assert_eq!(as_value(&streamed), as_value(&whole));
        assert_eq!(
            extra(&streamed, BLOCK_ORDER_KEY),
            Some(r#"["text","thinking","text"]"#)
        );
    }

    #[test]
    fn a_tool_use_without_input_deltas_has_empty_object_arguments() {
        let events: Vec<(&str, String)> = vec![
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}"#.into()),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.into()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#.into()),
            ("message_stop", r#"{"type":"message_stop"}"#.into()),
        ];
        let (msg, _) = stream(&events).0.unwrap();
        assert_eq!(arguments(&msg), ["{}"]);
        assert!(msg.replayable());
        assert!(msg.content.as_ref().unwrap().is_null());
    }

    #[test]
    fn stop_reasons_map_to_finish_reasons() {
        for (stop, finish) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("max_tokens", FinishReason::Length),
            ("tool_use", FinishReason::ToolCalls),
            ("refusal", FinishReason::ContentFilter),
            ("pause_turn", FinishReason::Other("pause_turn".into())),
        ] {
            assert_eq!(finish_reason(stop), finish);
        }
        let (_, meta) = capture_reply(
            r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"x"}]}"#,
            origin(),
        )
        .unwrap();
        assert_eq!(meta.finish, None);
    }

    #[test]
    fn later_usage_counts_win_in_a_stream() {
        let events: Vec<(&str, String)> = vec![
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#.into()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":20,"cache_read_input_tokens":0,"cache_creation_input_tokens":30,"output_tokens":5}}"#.into()),
            ("message_delta", r#"{"type":"message_delta","delta":{},"usage":{"output_tokens":8}}"#.into()),
            ("message_stop", r#"{"type":"message_stop"}"#.into()),
        ];
        let (msg, meta) = stream(&events).0.unwrap();
        assert_eq!(meta.usage, Some(Usage::new(50, 8, 0, 0, 30)));
        assert_eq!(meta.finish, Some(FinishReason::Stop));
        assert!(!msg.replayable());
    }

    #[test]
    fn events_without_a_name_are_read_by_their_type() {
        let events: Vec<(&str, String)> =
            events().into_iter().map(|(_, data)| ("", data)).collect();
        let (streamed, _) = stream(&events).0.unwrap();
        let (whole, _) = capture_reply(&whole(), origin()).unwrap();
        assert_eq!(
            serde_json::to_value(&streamed).unwrap(),
            serde_json::to_value(&whole).unwrap()
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        for body in [
            "not json",
            r#"{"type":"message","role":"assistant"}"#,
            r#"{"type":"message","role":"user","content":[]}"#,
            r#"{"type":"message","role":"assistant","content":[{"text":"x"}]}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"text","text":1}]}"#,
        ] {
            let err = capture_reply(body, origin()).unwrap_err();
            assert!(matches!(err, CaptureError::Malformed(_)), "{body}: {err:?}");
        }
        let mut capture = StreamCapture::new();
        let err = capture
            .feed(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}"#,
                &|_| {},
            )
            .unwrap_err();
        assert!(matches!(err, CaptureError::Malformed(_)), "{err:?}");
    }

    // ---------------------------------------------------------------- Bedrock event stream

    /// A `chunk` frame carrying one Anthropic stream event, with Bedrock's `p` padding.
    fn chunk(event: &str) -> Vec<u8> {
        let bytes = base64::engine::general_purpose::STANDARD.encode(event);
        frame(
            &[
                (":event-type", "chunk"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            format!(r#"{{"bytes":"{bytes}","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}}"#),
        )
    }

    fn exception(kind: &str, message: &str) -> Vec<u8> {
        frame(
            &[
                (":exception-type", kind),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            json!({ "message": message }).to_string(),
        )
    }

    /// The frames of [`events`] as Bedrock streams them.
    fn frames() -> Vec<u8> {
        events().iter().flat_map(|(_, data)| chunk(data)).collect()
    }

    type FrameResult = Result<(Message, ReplyMeta), TransportError>;

    /// Feeds `bytes` in chunks of `cut` bytes, collecting the reported deltas.
    fn frame_stream(bytes: &[u8], cut: usize) -> (FrameResult, Vec<(bool, String)>) {
        let seen = Seen::default();
        let on_delta = |d: Delta<'_>| seen.record(d);
        let mut capture = FrameCapture::new();
        for piece in bytes.chunks(cut) {
            if let Err(e) = capture.push(piece, &on_delta) {
                return (Err(e), seen.take());
            }
        }
        (capture.finish(origin()), seen.take())
    }

    #[test]
    fn bedrock_frames_cut_anywhere_capture_what_the_sse_stream_captures() {
        let (sse, sse_meta) = stream(&events()).0.unwrap();
        let bytes = frames();
        for cut in [1, 2, 7, 12, 13, 64, 333, bytes.len()] {
            let (result, seen) = frame_stream(&bytes, cut);
            let (msg, meta) = result.unwrap_or_else(|e| panic!("cut {cut}: {e:?}"));
            assert_eq!(meta, sse_meta, "cut {cut}");
            assert_eq!(details(&msg), details(&sse), "cut {cut}");
            assert_eq!(
                serde_json::to_value(&msg).unwrap(),
                serde_json::to_value(&sse).unwrap(),
                "cut {cut}"
            );
            assert_eq!(msg.extra, sse.extra, "cut {cut}");
            assert_eq!(
                seen,
                stream(&events()).1,
                "cut {cut}: the same deltas, in order"
            );
        }
        // The signed block is kept with its signature, and the whole reply agrees.
        let (whole, _) = capture_reply(&whole(), origin()).unwrap();
        let (msg, _) = frame_stream(&bytes, 5).0.unwrap();
        assert_eq!(arguments(&msg), arguments(&whole));
        assert_eq!(
            details(&msg)[0],
            r#"{"type":"thinking","thinking":"Café first: a/b.","signature":"c2ln/LTE="}"#
        );
    }

    #[test]
    fn a_bedrock_exception_frame_is_an_error_after_the_200_and_no_message() {
        let events = events();
        let mut bytes: Vec<u8> = events[..6].iter().flat_map(|(_, d)| chunk(d)).collect();
        bytes.extend(exception(
            "modelStreamErrorException",
            "The model stopped: try again",
        ));
        bytes.extend(events[6..].iter().flat_map(|(_, d)| chunk(d)));
        for cut in [1, 9, 100, bytes.len()] {
            let (result, _) = frame_stream(&bytes, cut);
            let err = result.unwrap_err();
            assert!(
                matches!(&err, TransportError::AfterOk(m) if m == "modelStreamErrorException: The model stopped: try again"),
                "cut {cut}: {err:?}"
            );
        }
        // An Anthropic `error` event inside a chunk is the provider's error too.
        let mut bytes: Vec<u8> = events[..3].iter().flat_map(|(_, d)| chunk(d)).collect();
        bytes.extend(chunk(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ));
        let err = frame_stream(&bytes, 10).0.unwrap_err();
        assert!(
            matches!(&err, TransportError::AfterOk(m) if m == "Overloaded"),
            "{err:?}"
        );
    }

    #[test]
    fn a_bedrock_stream_cut_short_or_malformed_is_not_a_message() {
        let bytes = frames();
        // Ends inside a frame.
        let err = frame_stream(&bytes[..bytes.len() - 3], 50).0.unwrap_err();
        assert!(
            matches!(&err, TransportError::Stream(m) if m.contains("inside a frame")),
            "{err:?}"
        );
        // Ends on a frame boundary before `message_stop`.
        let events = events();
        let short: Vec<u8> = events[..events.len() - 1]
            .iter()
            .flat_map(|(_, d)| chunk(d))
            .collect();
        let err = frame_stream(&short, 50).0.unwrap_err();
        assert!(
            matches!(&err, TransportError::Stream(m) if m.contains("message_stop")),
            "{err:?}"
        );
        // A chunk whose bytes are not base64, or whose payload is not JSON.
        let bad = frame(
            &[(":event-type", "chunk"), (":message-type", "event")],
            r#"{"bytes":"not base64!","p":"x"}"#,
        );
        let err = frame_stream(&bad, 50).0.unwrap_err();
        assert!(
            matches!(&err, TransportError::Decode(m) if m.contains("chunk.bytes")),
            "{err:?}"
        );
        let bad = frame(&[(":event-type", "chunk")], "nope");
        assert!(matches!(
            frame_stream(&bad, 50).0,
            Err(TransportError::Decode(_))
        ));
        // A corrupted frame fails its checksum.
        let mut corrupt = chunk(&events[0].1);
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert!(matches!(
            frame_stream(&corrupt, 50).0,
            Err(TransportError::Stream(_))
        ));
        // An event other than `chunk` is not part of the turn.
        let mut other = frame(
            &[
                (":event-type", "someFutureEvent"),
                (":message-type", "event"),
            ],
            "{}",
        );
        other.extend(frames());
        assert!(frame_stream(&other, 64).0.is_ok());
    }
}
