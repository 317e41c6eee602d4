//! The wire seam: what the turn driver needs from any wire (chat completions, Anthropic
//! Messages, Bedrock Converse, Gemini, Responses, or a third party's). A wire builds its request
//! body from the history, the route decision, the verdicts and the thinking request; says which
//! fields it sent that a provider may refuse; sends it and captures the reply into the canonical
//! message; and reads its own refusal errors. The driver negotiates over any wire the same way.
//! No HTTP type crosses this seam; wires live in hermes-providers (or a third party's crate).

use crate::message::{Message, Origin};
use crate::passthrough::{NO_PASSTHROUGH, Passthrough};
use crate::raw::RawJson;
use crate::route::{RouteDecision, ThinkingRequest};
use crate::sampling::{NO_SAMPLING, Sampling};
use crate::transport::{OnDelta, SendResult, TransportError};
use crate::verdict::{Verdicts, WireVerdicts};

static NO_WIRE_VERDICTS: WireVerdicts = WireVerdicts(Vec::new());

/// The id of the chat-completions wire (its verdicts are docs/spec.md §6's
/// `reasoning_rejected_carriers`).
pub const CHAT_WIRE: &str = "chat";

/// What a wire builds a request from.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RequestParts<'a> {
    /// The stored history (never changed: the wire shapes a per-request copy).
    pub history: &'a [Message],
    /// The resolved route.
    pub decision: &'a RouteDecision,
    /// The session's chat-completions verdicts (the chat wire reads them).
    pub verdicts: &'a Verdicts,
    /// The session's verdicts on other wires (each wire reads its own).
    pub wire_verdicts: &'a WireVerdicts,
    /// The thinking request.
    pub thinking: ThinkingRequest,
    /// Tool definitions, as the JSON array the chat wire takes (a native wire converts them).
    pub tools: Option<&'a RawJson>,
    /// Ask for a stream.
    pub stream: bool,
    /// Sampling parameters (none set by default); a wire refuses what it cannot send
    /// ([`TransportError::Unsupported`]).
    pub sampling: &'a Sampling,
    /// What a gateway client asked for in its own wire's terms (nothing by default): the wire
    /// that speaks that dialect to its provider honours it, every other refuses its server
    /// tools (`Passthrough::refused_by`).
    pub passthrough: &'a Passthrough,
}

impl<'a> RequestParts<'a> {
    /// Parts for `history` on `decision` with `verdicts`, no thinking preference, no tools,
    /// not streamed.
    pub fn new(
        history: &'a [Message],
        decision: &'a RouteDecision,
        verdicts: &'a Verdicts,
    ) -> Self {
        RequestParts {
            history,
            decision,
            verdicts,
            wire_verdicts: &NO_WIRE_VERDICTS,
            thinking: ThinkingRequest::NoPreference,
            tools: None,
            stream: false,
            sampling: &NO_SAMPLING,
            passthrough: &NO_PASSTHROUGH,
        }
    }

    /// With the other wires' verdicts.
    pub fn wire_verdicts(mut self, wire_verdicts: &'a WireVerdicts) -> Self {
        self.wire_verdicts = wire_verdicts;
        self
    }

    /// With a thinking request.
    pub fn thinking(mut self, thinking: ThinkingRequest) -> Self {
        self.thinking = thinking;
        self
    }

    /// With tool definitions.
    pub fn tools(mut self, tools: Option<&'a RawJson>) -> Self {
        self.tools = tools;
        self
    }

    /// Streamed or not.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// With sampling parameters.
    pub fn sampling(mut self, sampling: &'a Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// With what a gateway client asked for in its own wire's terms.
    pub fn passthrough(mut self, passthrough: &'a Passthrough) -> Self {
        self.passthrough = passthrough;
        self
    }
}

/// A request body ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outgoing {
    /// The exact bytes of the body.
    pub body: Vec<u8>,
    /// Streamed.
    pub stream: bool,
    /// The fields this body carries that a provider may refuse (the wire's spelling), sorted.
    pub refusable: Vec<&'static str>,
    /// Number of history messages on the wire, for logs.
    pub messages: usize,
    /// Lines the user is told when this body is sent (e.g. "thinking is disabled for this
    /// request because …"), each once.
    pub notes: Vec<String>,
    /// Keys the wire stores on the captured reply for its own later requests (the Anthropic
    /// wire: a digest of the conversation its signed thinking is bound to). Never sent.
    pub stamp: Vec<(String, RawJson)>,
    /// What encoding did to the history's carriers: assistant messages demoted by a declared
    /// rule or whose carriers were dropped by provenance (the driver reports them,
    /// [`crate::driver::DriverEvent::Carriers`]).
    pub carriers: crate::tally::CarrierCounts,
    /// The stored turns whose carriers this body leaves out for good (docs/spec.md §5a 3), by
    /// [`crate::left_out::carrier_id`]: a bound model's turns left out because their prefix
    /// changed (and every earlier one), or because the provider refused them. The driver has
    /// the session log record them before the body is sent, so no later request of the
    /// conversation, on any replica, puts them back. Turns already marked left out are not
    /// repeated. Never sent.
    pub left_out: Vec<String>,
}

impl Outgoing {
    /// A body with the refusable fields it carries.
    pub fn new(
        body: Vec<u8>,
        stream: bool,
        mut refusable: Vec<&'static str>,
        messages: usize,
    ) -> Self {
        refusable.sort_unstable();
        refusable.dedup();
        Outgoing {
            body,
            stream,
            refusable,
            messages,
            notes: Vec::new(),
            stamp: Vec::new(),
            carriers: crate::tally::CarrierCounts::default(),
            left_out: Vec::new(),
        }
    }

    /// With lines the user is told when it is sent.
    pub fn notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }

    /// With keys stored on the captured reply.
    pub fn stamp(mut self, stamp: Vec<(String, RawJson)>) -> Self {
        self.stamp = stamp;
        self
    }

    /// With what encoding did to the carriers (demoted, dropped by provenance).
    pub fn carriers(mut self, carriers: crate::tally::CarrierCounts) -> Self {
        self.carriers = carriers;
        self
    }

    /// With the stored turns whose carriers it leaves out for good ([`Outgoing::left_out`]).
    pub fn left_out(mut self, left_out: Vec<String>) -> Self {
        self.left_out = left_out;
        self
    }
}

/// A wire's one-time answer to an error it understands: the body to send instead, and the line
/// the user is told. Nothing is persisted (unlike a refusal's verdict).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovery {
    /// The body to resend.
    pub outgoing: Outgoing,
    /// What changed, in one line.
    pub note: String,
}

impl Recovery {
    /// A recovery sending `outgoing`, told as `note`.
    pub fn new(outgoing: Outgoing, note: String) -> Self {
        Recovery { outgoing, note }
    }
}

/// The provider's own compaction as a wire describes it ([`Wire::native_compaction`],
/// docs/spec.md §7): what a request passes to ask for it, and what becomes of its reply, so the
/// engine runs any wire's the same way and names none.
#[derive(Clone, Copy, Debug)]
pub struct NativeCompaction {
    /// What a compaction request passes, given the request's own passthrough (a gateway
    /// client's; a session's is empty).
    pub request: fn(&Passthrough) -> Passthrough,
    /// What every turn passes to have the provider compact by itself past this many tokens.
    pub threshold: fn(u64) -> Passthrough,
    /// Whether the compaction request may stream as the session's turns do.
    pub streams: bool,
    /// Whether hermes' own summary of the span is stored beside the provider's checkpoint
    /// ([`crate::checkpoint::SUMMARY_KEY`]), for every other model.
    pub with_summary: bool,
    /// What the reply holds ("block", "item"), as an error that finds none says.
    pub what: &'static str,
    /// How the provider compacted, as a manual compaction's line says.
    pub how: &'static str,
    /// What the kept turns keep ("thinking", "reasoning"), as that line says.
    pub keeps: &'static str,
    /// Rewrites the stored checkpoint for the turns it keeps: the history before, the span
    /// `start..end` it replaces, and the request's tools (the Anthropic wire stamps the kept
    /// turns' prefix digests; a wire whose checkpoint is stored as it came does nothing).
    pub finish: fn(&mut Message, &[Message], usize, usize, Option<&RawJson>),
}

/// One wire: request building, sending, capture and its refusal reading.
#[async_trait::async_trait]
pub trait Wire: Send + Sync {
    /// The wire's id (`chat`, `anthropic`, …): verdicts are kept per wire.
    fn id(&self) -> &'static str;

    /// Builds the body for `parts`, leaving out what the verdicts refused on this wire.
    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError>;

    /// Whether this wire speaks `dialect`, a gateway client's own, to the provider that
    /// defines it, and so honours [`RequestParts::passthrough`] written in it (the Anthropic
    /// wire to a Claude host for Anthropic's Messages; the Responses wire to OpenAI for
    /// OpenAI's Responses). The driver refuses what a wire that does not cannot drop
    /// (`Passthrough::refused_by`) before it encodes. The default: no.
    fn takes_passthrough(&self, dialect: crate::Dialect) -> bool {
        let _ = dialect;
        false
    }

    /// Whether this wire decides itself what becomes of a provider-written checkpoint
    /// ([`crate::checkpoint::native_compaction`]): the Anthropic wire replays a `compaction`
    /// block to its minter and renders it as hermes' own checkpoint elsewhere. For every other
    /// wire (the default) the driver hands over hermes' own checkpoint of its summary instead
    /// ([`crate::checkpoint::as_own_checkpoints`]).
    fn takes_native_compaction(&self) -> bool {
        false
    }

    /// Whether this wire can send `tool_choice: none` (tools defined, none to be called). The
    /// default: yes. Bedrock Converse cannot (botocore's `ToolChoice` is auto, any or tool), so
    /// a caller that only wants no call leaves its tools unforced there (hermes' summarizer:
    /// tools stay defined, docs/spec.md §5a 5).
    fn takes_tool_choice_none(&self) -> bool {
        true
    }

    /// The provider's own compaction on this wire's target (docs/spec.md §7), when it has one:
    /// how to ask for it and what becomes of its reply. The default: none, and hermes compacts
    /// itself (`compress`, salvage).
    fn native_compaction(&self) -> Option<NativeCompaction> {
        None
    }

    /// `--explain` lines for `parts` as this wire, built with its credentials, would send them
    /// (the account a prefix-bound model binds replayed thinking to is known here, docs/spec.md §5a
    /// 1); `None` (the default): the wire's descriptor explains from the target alone.
    fn explain(&self, parts: &RequestParts<'_>) -> Option<Vec<String>> {
        let _ = parts;
        None
    }

    /// Sends `request`; the captured assistant message records `origin`. Streamed text is
    /// reported through `on_delta` as it arrives. A failed or half-finished reply is an error
    /// and yields no message.
    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult;

    /// The refused fields an error names (docs/spec.md §6): a subset of `sent`, or `None` when the
    /// error is not a refusal of a replayed field. `must_echo` routes never refuse
    /// `reasoning_content`. The default reads the phrases of docs/spec.md §6 and whole-word field
    /// names ([`crate::refusal::classify_fields`], the one reader of them) in the words
    /// [`Wire::refusal_text`] lifts out of the body.
    fn refused(
        &self,
        status: Option<u16>,
        body: &str,
        sent: &[&'static str],
        must_echo: bool,
    ) -> Option<Vec<&'static str>> {
        let text = self.refusal_text(body, sent)?;
        crate::refusal::classify_fields(status, &text, sent, must_echo)
    }

    /// The words of an error `body` that [`Wire::refused`] hands to the classifier, or `None`
    /// when they can name no refused field: a native wire lifts the text out of its own error
    /// envelope and restates its provider's own wording of an unknown field in the
    /// classifier's (it keeps no phrases of its own). The default: the whole body.
    fn refusal_text<'b>(
        &self,
        body: &'b str,
        sent: &[&'static str],
    ) -> Option<std::borrow::Cow<'b, str>> {
        let _ = sent;
        Some(std::borrow::Cow::Borrowed(body))
    }

    /// A one-time recovery from an error that is not a refusal of a replayed field but that
    /// this wire can answer by sending a different copy of the same history (the Anthropic
    /// wire: an `Invalid signature` 400 is resent once without the refused blocks). The driver
    /// asks at most once per request, after the refusal classifier and before any backoff;
    /// nothing is persisted and the history is never changed. The default recovers nothing.
    fn recover(
        &self,
        parts: &RequestParts<'_>,
        status: Option<u16>,
        body: &str,
    ) -> Option<Recovery> {
        let _ = (parts, status, body);
        None
    }
}
