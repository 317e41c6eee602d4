//! Reply capture: a whole `GenerateContentResponse` or the chunks of an `alt=sse` stream into
//! one assistant message (docs/spec.md §2, §4, §5).
//!
//! Text parts are joined into `content`; thought-summary parts (`thought: true`) into
//! `reasoning_content` (consecutive parts, a stream's fragments, joined directly; runs split by
//! other parts joined with a blank line) and never replayed as text; each `functionCall` part
//! becomes a tool call with its `args` text as received and its `thoughtSignature` in the tool
//! call's `extra_content.google.thought_signature` (where the chat wire's Gemini route keeps
//! it); the last signature seen on any other part — an empty-text part at the end of a stream
//! included — is the text-turn signature, kept in the native record's `extra_content`.
//! Signatures are stored as the exact JSON string literals received. A call without an id gets
//! one hermes makes up, marked [`MADE_UP_ID_KEY`], so its result pairs with it; that id never
//! goes back to Gemini. A reply with neither text nor a call is stored not replayable.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use hermes_core::OnDelta;
use hermes_core::message::NOT_REPLAYED_KEY;
use hermes_core::raw::parse_lenient;
use hermes_core::transport::Delta;
use hermes_core::{
    FinishReason, Message, NativeRecord, Origin, RawJson, ReplyMeta, Role, TextCarrier, ToolCall,
    Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::body::MADE_UP_ID_KEY;

pub(crate) use hermes_providers::native::reply::CaptureError;
use hermes_providers::native::reply::malformed;

/// The `finishReason` spellings (API reference, `Candidate.FinishReason`) as normalised
/// reasons; a `STOP` with function calls is a tool-call stop.
pub(crate) fn finish_reason(reason: &str, calls: bool) -> FinishReason {
    match reason {
        "STOP" if calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// `usageMetadata`.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UsageBody {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    tool_use_prompt_token_count: Option<u64>,
}

impl UsageBody {
    /// Input counts the prompt (cached part included) and tool-use prompt; output counts the
    /// candidates and the thoughts (`candidatesTokenCount` leaves thinking out).
    fn usage(&self) -> Usage {
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        Usage::new(
            self.prompt_token_count
                .unwrap_or(0)
                .saturating_add(self.tool_use_prompt_token_count.unwrap_or(0)),
            self.candidates_token_count
                .unwrap_or(0)
                .saturating_add(thoughts),
            thoughts,
            self.cached_content_token_count.unwrap_or(0),
            0,
        )
    }
}

/// Just enough of a `GenerateContentResponse`, borrowed from its bytes.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ResponseBody<'a> {
    #[serde(borrow)]
    candidates: Option<Vec<CandidateBody<'a>>>,
    usage_metadata: Option<UsageBody>,
    prompt_feedback: Option<PromptFeedback>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct CandidateBody<'a> {
    #[serde(borrow)]
    content: Option<ContentBody<'a>>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ContentBody<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<PartBody<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PartBody<'a> {
    #[serde(deserialize_with = "lenient_text")]
    text: Option<String>,
    thought: Option<bool>,
    #[serde(borrow)]
    thought_signature: Option<&'a RawValue>,
    #[serde(borrow)]
    function_call: Option<FunctionCallBody<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FunctionCallBody<'a> {
    id: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
}

/// A part's `text`, a lone surrogate escape read as U+FFFD (`hermes_core::raw::parse_lenient`):
/// valid JSON that no Rust string holds must not cost the reply, nor the signature beside it.
fn lenient_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let Some(raw) = Option::<&'de RawValue>::deserialize(d)? else {
        return Ok(None);
    };
    parse_lenient(raw.get()).map_err(serde::de::Error::custom)
}

/// A signature literal when it is a non-blank JSON string (a lone surrogate escape inside it
/// counts as a character: the literal is kept as received).
fn signature(raw: Option<&RawValue>) -> Option<Box<RawValue>> {
    let raw = raw?;
    let text: String = parse_lenient(raw.get()).ok()?;
    (!text.trim().is_empty()).then(|| raw.to_owned())
}

/// `{"google":{"thought_signature":<literal>}}`, the literal as received.
fn google_extra(literal: &RawValue) -> Result<RawJson, CaptureError> {
    RawJson::from_text(format!(
        r#"{{"google":{{"thought_signature":{}}}}}"#,
        literal.get()
    ))
    .map_err(malformed)
}

/// An id for a call Gemini sent without one: unique in this process and across runs
/// (`hermes-call-` and 16 hex digits of a digest of the clock and a counter).
fn make_up_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h = Sha256::new();
    h.update(nanos.to_le_bytes());
    h.update(n.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("hermes-call-{hex}")
}

/// One function call being captured.
struct CallAcc {
    /// The call's id: Gemini's, or one hermes made up (`made_up`) for a call without one.
    id: String,
    made_up: bool,
    name: String,
    /// The `args` object's text as received (`{}` when absent).
    args: String,
    signature: Option<Box<RawValue>>,
}

/// Builds one assistant message from a whole reply or from stream chunks.
#[derive(Default)]
pub(crate) struct TurnCapture {
    text: String,
    thoughts: Vec<String>,
    in_thought: bool,
    calls: Vec<CallAcc>,
    text_signature: Option<Box<RawValue>>,
    finish: Option<String>,
    usage: Option<Usage>,
    chunks: usize,
}

impl TurnCapture {
    /// A fresh capture.
    pub(crate) fn new() -> Self {
        TurnCapture::default()
    }

    /// Chunks fed so far.
    pub(crate) fn chunks(&self) -> usize {
        self.chunks
    }

    /// True once a chunk carried a `finishReason`.
    pub(crate) fn finished(&self) -> bool {
        self.finish.is_some()
    }

    /// Absorbs one `GenerateContentResponse` (a whole reply, or one chunk of a stream), calling
    /// `on_delta` with its text and thought summaries. An `error` payload or a blocked prompt is
    /// the provider's error.
    pub(crate) fn feed(&mut self, data: &str, on_delta: OnDelta<'_>) -> Result<(), CaptureError> {
        let body: ResponseBody<'_> = serde_json::from_str(data)
            .map_err(|e| malformed(format!("chunk {}: {e}", self.chunks + 1)))?;
        self.chunks += 1;
        if let Some(error) = body.error.filter(|e| e.get() != "null") {
            return Err(CaptureError::Provider(
                hermes_providers::native::envelope::message_of(error.get()),
            ));
        }
        if let Some(usage) = &body.usage_metadata {
            self.usage = Some(usage.usage());
        }
        let Some(candidate) = body.candidates.and_then(|c| c.into_iter().next()) else {
            if let Some(reason) = body.prompt_feedback.and_then(|f| f.block_reason) {
                return Err(CaptureError::Provider(format!(
                    "the prompt was blocked ({reason})"
                )));
            }
            return Ok(());
        };
        for part in candidate
            .content
            .and_then(|c| c.parts)
            .into_iter()
            .flatten()
        {
            self.part(part, on_delta);
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn part(&mut self, part: PartBody<'_>, on_delta: OnDelta<'_>) {
        let sig = signature(part.thought_signature);
        if let Some(call) = part.function_call {
            self.in_thought = false;
            let id = call.id.filter(|id| !id.is_empty());
            let made_up = id.is_none();
            let acc = CallAcc {
                id: id.unwrap_or_else(make_up_id),
                made_up,
                name: call.name.unwrap_or_default(),
                args: call
                    .args
                    .map_or_else(|| "{}".to_owned(), |a| a.get().to_owned()),
                signature: sig,
            };
            // A function call arrives whole: one fragment with its id, name and arguments.
            on_delta(Delta::ToolCall {
                index: self.calls.len(),
                id: Some(&acc.id),
                name: Some(&acc.name),
                arguments: &acc.args,
            });
            self.calls.push(acc);
            return;
        }
        // Any other part: its signature is the text-turn signature (the latest wins).
        if sig.is_some() {
            self.text_signature = sig;
        }
        let Some(text) = part.text.filter(|t| !t.is_empty()) else {
            return;
        };
        if part.thought == Some(true) {
            on_delta(Delta::Reasoning(&text));
            match self.thoughts.last_mut() {
                Some(last) if self.in_thought => last.push_str(&text),
                _ => self.thoughts.push(text),
            }
            self.in_thought = true;
        } else {
            on_delta(Delta::Content(&text));
            self.text.push_str(&text);
            self.in_thought = false;
        }
    }

    /// The captured message (with `origin`) and the reply's metadata; a reply that never said
    /// why it ended is a broken one, and nothing is stored.
    pub(crate) fn finish(self, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
        let Some(reason) = self.finish else {
            return Err(malformed(format!(
                "the reply ended after {} chunks without a finishReason; the half turn is not stored",
                self.chunks
            )));
        };
        let mut msg = Message::text(Role::Assistant, "");
        let has_text = !self.text.is_empty();
        msg.content = Some(if has_text {
            RawJson::string(&self.text)
        } else {
            RawJson::null()
        });
        let thoughts: Vec<&str> = self
            .thoughts
            .iter()
            .map(String::as_str)
            .filter(|t| !t.is_empty())
            .collect();
        msg.reasoning_content =
            (!thoughts.is_empty()).then(|| TextCarrier::new(&thoughts.join("\n\n")));
        let has_calls = !self.calls.is_empty();
        let mut calls = Vec::with_capacity(self.calls.len());
        for acc in self.calls {
            let made_up = acc.made_up;
            let mut call = ToolCall::function(&acc.id, &acc.name, &acc.args);
            if let Some(sig) = &acc.signature {
                call.extra_content = Some(google_extra(sig)?);
            }
            if made_up {
                call.extra.push((
                    MADE_UP_ID_KEY.to_owned(),
                    RawJson::from_text("true").map_err(malformed)?,
                ));
            }
            calls.push(call);
        }
        msg.tool_calls = has_calls.then_some(calls);
        if let Some(sig) = &self.text_signature {
            let record = NativeRecord {
                extra_content: Some(google_extra(sig)?),
                ..NativeRecord::default()
            };
            msg.reasoning_details = Some(vec![record.to_item()]);
        }
        if !has_text && !has_calls {
            msg.extra.push((
                NOT_REPLAYED_KEY.to_owned(),
                RawJson::from_text("true").map_err(malformed)?,
            ));
        }
        msg.origin = Some(origin);
        let meta = ReplyMeta::new(Some(finish_reason(&reason, has_calls)), self.usage);
        Ok((msg, meta))
    }
}

/// Captures a whole `generateContent` reply from its bytes.
pub(crate) fn capture_reply(
    body: &str,
    origin: Origin,
) -> Result<(Message, ReplyMeta), CaptureError> {
    let mut capture = TurnCapture::new();
    capture.feed(body, &|_| {})?;
    capture.finish(origin)
}
