//! The turn driver: one user turn through the route and any wire, with the refusal fallback of
//! docs/spec.md §6, a bounded backoff for 429/5xx/timeouts, the creation rules of §3a and the tool
//! loop. It does no IO itself: the wire, the session log and the tools are traits.

use std::time::Duration;

use crate::message::{Message, Origin, Role, ToolCall};
use crate::pairing::paired;
use crate::raw::TextCarrier;
use crate::route::PAD;
use crate::route::{Carrier, CarrierSet, RouteDecision, ThinkingRequest};
use crate::target::RouteTarget;
use crate::transport::{Delta, FinishReason, Reply, TransportError, Usage};
use crate::verdict::{Verdicts, WireVerdicts};
use crate::wire::{CHAT_WIRE, Outgoing, RequestParts, Wire};

mod memory;
pub use memory::MemoryLog;

/// What the driver's spans need to know besides the request: where it goes and whether the
/// messages themselves may be recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// Record the input and output messages (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`). Off by default: message content is the user's data.
    pub capture_content: bool,
    /// `server.address`: the host the request goes to.
    pub server_address: Option<String>,
    /// `server.port`: its port (the scheme's default when the URL names none).
    pub server_port: Option<u16>,
}

impl Telemetry {
    /// The server of `base_url` (host and port, the scheme's default port when it names
    /// none); nothing for a URL that cannot be read.
    pub fn for_base_url(base_url: &str, capture_content: bool) -> Telemetry {
        let url = url::Url::parse(base_url.trim()).ok();
        Telemetry {
            capture_content,
            server_address: url
                .as_ref()
                .and_then(|u| u.host_str())
                .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned()),
            server_port: url.as_ref().and_then(url::Url::port_or_known_default),
        }
    }
}

/// The refusal fallback retries exactly once per request (docs/spec.md §6).
pub(crate) const REFUSAL_RETRIES: usize = 1;

/// A request whose stream stalled (went silent after it began) is retried at most once: the
/// stall already waited the whole idle limit, so each further retry would add another, and the
/// turn would wait minutes on a provider that stopped answering. The retry also counts against
/// [`DriverConfig::max_backoff_retries`], and its time against the front end's turn limit.
pub(crate) const STALL_RETRIES: u32 = 1;

/// Why a [`SessionLog`] could not store something: the store's own typed error, boxed.
pub type LogError = Box<dyn std::error::Error + Send + Sync>;

/// Where a driven session is persisted. Every call is one transaction.
#[async_trait::async_trait]
pub trait SessionLog: Send + Sync {
    /// Appends messages after the last stored one.
    async fn append(&self, messages: &[Message]) -> Result<(), LogError>;
    /// Merges one verdict (docs/spec.md §6) into the session's stored verdicts, in one
    /// read-modify-write (a verdict cleared meanwhile by another process stays cleared), and
    /// returns the verdicts now stored.
    async fn record_verdict(
        &self,
        target: &RouteTarget,
        carriers: CarrierSet,
    ) -> Result<Verdicts, LogError>;
    /// Merges one verdict learned on a wire other than chat completions (stored beside the chat
    /// verdicts), in one read-modify-write, and returns the wire verdicts now stored.
    async fn record_wire_verdict(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, LogError>;
    /// Adds a reply's usage to the session's counters.
    async fn add_usage(&self, usage: &Usage) -> Result<(), LogError>;
    /// Stores one finished step: its messages appended and its usage counted. A log over a
    /// store does both in one transaction, so a stored step never lacks its usage; the default
    /// calls [`SessionLog::append`], then [`SessionLog::add_usage`].
    async fn commit(&self, step: &Step<'_>) -> Result<(), LogError> {
        self.append(step.messages).await?;
        if let Some(usage) = step.usage {
            self.add_usage(usage).await?;
        }
        Ok(())
    }
    /// A provider accepted a request carrying `fields` (the wire's spelling of the refusable
    /// fields the body held) on `wire` for `target`. A log that re-probes old verdicts learns
    /// here that one no longer holds; the default does nothing.
    async fn accepted(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&'static str],
    ) -> Result<(), LogError> {
        let _ = (wire, target, fields);
        Ok(())
    }
    /// A request is about to leave out, for good, the carriers of the stored turns `carriers`
    /// names ([`crate::left_out::carrier_id`], docs/spec.md §5a 3): a log over a store records them
    /// so no later request of the conversation, on any replica, sends them again. Called before
    /// the request is sent. The default records nothing.
    async fn left_out(&self, carriers: &[String]) -> Result<(), LogError> {
        let _ = carriers;
        Ok(())
    }
}

/// One finished step as the driver stores it ([`SessionLog::commit`]).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Step<'a> {
    /// What is stored: the turn's input (with its first step), the reply, the results of the
    /// tools the engine ran.
    pub messages: &'a [Message],
    /// How many of `messages`, counted from the end, the step added (the reply and its
    /// results): what the caller is answered with.
    pub added: usize,
    /// The reply's usage, when its wire reported one.
    pub usage: Option<&'a Usage>,
    /// Why the reply ended, as the turn reports it (a call of a tool the caller runs:
    /// [`FinishReason::ToolCalls`]).
    pub finish: Option<&'a FinishReason>,
    /// The turn ends with this step (no tool the engine runs was called).
    pub ends_turn: bool,
}

impl<'a> Step<'a> {
    /// A step that ends its turn having added one message, the last of `messages` (a reply
    /// that called no tool the engine runs), with its usage and why it ended.
    pub fn reply(
        messages: &'a [Message],
        usage: Option<&'a Usage>,
        finish: Option<&'a FinishReason>,
    ) -> Self {
        Step {
            messages,
            added: 1,
            usage,
            finish,
            ends_turn: true,
        }
    }
}

/// Tools the model may call. A failing tool returns its error text: the model sees it.
#[async_trait::async_trait]
pub trait Tools: Send + Sync {
    /// Runs `name` with JSON `arguments`, returning the tool result text.
    async fn call(&self, name: &str, arguments: &str) -> String;
}

/// How the driver behaves. Build it from [`DriverConfig::default`] and set the fields you need
/// (it grows as wires do).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DriverConfig {
    /// The thinking request.
    pub thinking: ThinkingRequest,
    /// Stream replies.
    pub stream: bool,
    /// Retries for 429, 5xx, timeouts and connection failures (separate from the refusal retry).
    pub max_backoff_retries: u32,
    /// First backoff delay; doubles each retry.
    pub base_delay: Duration,
    /// Longest wait, `Retry-After` included.
    pub max_delay: Duration,
    /// Most model steps in one user turn before giving up on the tool loop.
    pub max_steps: usize,
    /// Tool definitions sent with every request.
    pub tools: Option<crate::raw::RawJson>,
    /// Most tool calls run from one reply (default 16). Every call beyond it still gets a
    /// result, `refused: more than N tool calls in one reply`, so each call keeps its pair.
    pub max_tool_calls: usize,
    /// Most bytes of tool output in one user turn (default 512 KiB). The result that crosses
    /// it is cut, and later calls of the turn are refused without running.
    pub max_tool_output: usize,
    /// Longest one tool call may run (default 30 s); its result then says it timed out.
    pub tool_timeout: Duration,
    /// The caller runs the tools (a gateway's client does): a reply that calls tools is stored
    /// as its own step and returned, with finish reason `ToolCalls`, instead of running
    /// [`Tools::call`]; the caller's next turn brings the results as its input. Off by default.
    pub client_tools: bool,
    /// Sampling parameters sent with every request (none by default).
    pub sampling: crate::sampling::Sampling,
    /// What a gateway client asked for in its own wire's terms, sent with every request
    /// (nothing by default).
    pub passthrough: crate::passthrough::Passthrough,
    /// What each request's span records besides the request (the server it goes to, whether
    /// message content is captured; nothing by default).
    pub telemetry: Telemetry,
    /// Set when the caller is gone (a gateway client hung up): the step in flight still
    /// finishes and is stored — its reply is paid for — but no further step starts. Unset by
    /// default.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            thinking: ThinkingRequest::NoPreference,
            stream: false,
            max_backoff_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_steps: 32,
            tools: None,
            max_tool_calls: 16,
            max_tool_output: 512 * 1024,
            tool_timeout: Duration::from_secs(30),
            client_tools: false,
            sampling: crate::sampling::Sampling::default(),
            passthrough: crate::passthrough::Passthrough::default(),
            telemetry: Telemetry::default(),
            stop: None,
        }
    }
}

impl DriverConfig {
    /// What a wire builds the next request from: `history` (already paired,
    /// [`paired`](crate::pairing::paired)) on `decision` with `conversation`'s verdicts and this
    /// config's thinking request, tools and stream — the one place both the driver's requests
    /// and a preview of the next one get their parts.
    pub fn parts<'h>(
        &'h self,
        decision: &'h RouteDecision,
        history: &'h [Message],
        conversation: &'h Conversation,
    ) -> RequestParts<'h> {
        RequestParts {
            history,
            decision,
            verdicts: &conversation.verdicts,
            wire_verdicts: &conversation.wire_verdicts,
            thinking: self.thinking,
            tools: self.tools.as_ref(),
            stream: self.stream,
            sampling: &self.sampling,
            passthrough: &self.passthrough,
        }
    }
}

/// The history a request to `wire` is built from: every call paired with a result
/// ([`paired`]), and provider-written checkpoints as hermes' own where `wire` does not decide
/// about them itself ([`Wire::takes_native_compaction`]).
pub fn for_wire<'h>(wire: &dyn Wire, messages: &'h [Message]) -> std::borrow::Cow<'h, [Message]> {
    let (history, _) = paired(messages);
    if wire.takes_native_compaction() {
        history
    } else {
        crate::checkpoint::as_own_checkpoints(history, |_, _| false)
    }
}

/// Something the user should be told, in one line.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DriverEvent {
    /// A provider refused replayed carriers; the verdict is stored and the request resent once.
    Refused {
        /// The carriers now refused for this provider, host and model.
        carriers: Vec<&'static str>,
        /// Status of the refusal.
        status: Option<u16>,
    },
    /// A transient failure; the request is resent after `delay`.
    Retrying {
        /// Retry number (1-based).
        attempt: u32,
        /// Wait before it.
        delay: Duration,
        /// What failed.
        error: String,
    },
    /// A piece of reply text arrived (streaming).
    Delta {
        /// True for thinking, false for answer text.
        reasoning: bool,
        /// The text.
        text: String,
    },
    /// A fragment of a tool call arrived (streaming): `id` and `name` with the call's first
    /// fragment, `arguments` in pieces (see [`Delta::ToolCall`]).
    ToolCallDelta {
        /// Which call of the reply (0-based).
        index: usize,
        /// The call's id, on its first fragment.
        id: Option<String>,
        /// The function's name, on its first fragment.
        name: Option<String>,
        /// The next piece of the arguments text.
        arguments: String,
    },
    /// The signature of the signed thinking streamed so far (see [`Delta::Signature`]).
    ThinkingSignature {
        /// The signature, whole.
        signature: String,
    },
    /// The model called a tool.
    ToolCall {
        /// Tool name.
        name: String,
    },
    /// The wire changed this request's copy of the history and says why (e.g. thinking
    /// disabled because the latest turn has no thinking block this model may receive, or
    /// signed blocks left out after an `Invalid signature` answer).
    Notice {
        /// The line to show.
        text: String,
    },
    /// The stored history holds tool calls that were never answered (or results that answer no
    /// call); the wire copy pairs them (a synthetic "interrupted" result; orphans left out).
    Repaired {
        /// Calls given a synthetic result.
        unanswered: usize,
        /// Results left out.
        orphans: usize,
    },
    /// One upstream request ended (answered, refused or failed), for a front end's metrics;
    /// not a line for the user.
    Upstream {
        /// The wire it went over (`chat`, `anthropic`, …).
        wire: &'static str,
        /// The target's provider.
        provider: String,
        /// From just before it was sent until the reply was captured whole (or the error).
        elapsed: Duration,
        /// The error's HTTP status when it failed with one; `None` when it succeeded or failed
        /// without a status (a timeout, a connection failure).
        status: Option<u16>,
        /// Whether it was answered.
        ok: bool,
        /// The reply's usage, as the wire normalised it ([`Usage`]: `reasoning` is part of
        /// `output`, `cache_read` and `cache_write` part of `input`).
        usage: Option<Usage>,
    },
    /// The body of an upstream request exactly as it is sent, for a front end that shows it
    /// (the gateway's inspector); not a line for the user. Shared, so the copy is made once.
    Sent {
        /// The wire it goes over.
        wire: &'static str,
        /// The body's bytes.
        body: std::sync::Arc<[u8]>,
    },
    /// What happened to the history's carriers, for a front end's metrics; not a line for the
    /// user. The driver reports a wire's encoding of each request it sends (demoted, dropped by
    /// provenance); a front end that lines a client's history up with the store reports that
    /// too (re-attached, passed through, missing).
    Carriers {
        /// The wire the request goes over.
        wire: &'static str,
        /// The counts.
        counts: crate::tally::CarrierCounts,
    },
    /// A refusal was learned for every session of the store (a fleet verdict), for a front
    /// end's metrics; not a line for the user (the [`DriverEvent::Refused`] before it is). A
    /// session log that keeps verdicts to its session reports none.
    FleetVerdict {
        /// The wire it was learned on.
        wire: String,
        /// The fields now refused, in the wire's spelling.
        fields: Vec<String>,
    },
}

/// What a turn produced.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TurnOutcome {
    /// Messages appended by this turn after the user message (assistant turns and tool results).
    pub new_messages: Vec<Message>,
    /// The usage of every reply, in order.
    pub usage: Vec<Usage>,
    /// HTTP requests sent.
    pub requests: usize,
    /// Why the last reply ended, as its wire reported it (`ToolCalls` when it called tools the
    /// caller runs, see [`DriverConfig::client_tools`]).
    pub finish: Option<FinishReason>,
}

/// Why a turn failed. Everything stored before the failure stays stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The provider or the wire failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The session could not be stored.
    #[error("cannot store the session: {0}")]
    Log(#[source] LogError),
    /// The model kept calling tools.
    #[error("the model was still calling tools after {0} steps")]
    ToolLoop(usize),
    /// The stream stalled again on its one retry (`STALL_RETRIES`).
    #[error("{0}, again on the retry after the first stall; not retried further")]
    StalledAgain(TransportError),
    /// The request failed after part of its reply had already reached the caller (streamed
    /// text): it is not retried, since the caller would see that output twice. Nothing of the
    /// unfinished step is stored.
    #[error("{0} (after part of the reply had streamed, so it was not retried)")]
    AfterOutput(TransportError),
    /// The turn's input cannot continue this history (e.g. a tool result that answers no call
    /// of the last reply); nothing was sent or stored.
    #[error("invalid input: {0}")]
    Input(String),
}

impl DriverError {
    /// The transport error underneath, if the turn failed on the wire.
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            DriverError::Transport(e)
            | DriverError::StalledAgain(e)
            | DriverError::AfterOutput(e) => Some(e),
            _ => None,
        }
    }
}

/// A session being driven: its history and verdicts.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    /// The stored history.
    pub messages: Vec<Message>,
    /// The session's chat-completions verdicts.
    pub verdicts: Verdicts,
    /// The session's verdicts on other wires.
    pub wire_verdicts: WireVerdicts,
}

fn tool_result(call: &ToolCall, text: &str) -> Message {
    let mut msg = Message::text(Role::Tool, text);
    msg.tool_call_id = call.id.clone();
    msg
}

/// docs/spec.md §3a creation rules, applied to a captured reply before it is stored: on a must-echo
/// route a tool-call turn with no `reasoning_content` stores its `reasoning` there, else the pad.
pub(crate) fn apply_creation_rules(message: &mut Message, decision: &RouteDecision) {
    let tool_turn = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
    if decision.echo.is_none() || !tool_turn || message.reasoning_content.is_some() {
        return;
    }
    let copied = message
        .reasoning
        .as_ref()
        .filter(|r| !r.is_blank())
        .cloned();
    let pinned = copied.is_none();
    message.reasoning_content = Some(copied.unwrap_or_else(|| TextCarrier::new(PAD)));
    tracing::debug!(
        route = decision.id(),
        pinned_pad = pinned,
        "must-echo tool-call turn given reasoning_content"
    );
}

/// Checks a turn's input against the history it continues: it is not empty, and tool results
/// answer calls of the last assistant reply that no result answers yet (a caller that runs its
/// own tools brings them). Nothing is sent or stored when it fails.
fn check_input(history: &[Message], input: &[Message]) -> Result<(), DriverError> {
    if input.is_empty() {
        return Err(DriverError::Input("a turn needs a new message".into()));
    }
    let results: Vec<&Message> = input.iter().filter(|m| m.role == Role::Tool).collect();
    if results.is_empty() {
        return Ok(());
    }
    let last = history.iter().rposition(|m| m.role == Role::Assistant);
    let open: Vec<&str> = last
        .map(|i| {
            let answered: Vec<&str> = history[i + 1..]
                .iter()
                .filter_map(|m| m.tool_call_id.as_deref())
                .collect();
            history[i]
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.as_deref())
                .filter(|id| !answered.contains(id))
                .collect()
        })
        .unwrap_or_default();
    for result in results {
        let Some(id) = result.tool_call_id.as_deref() else {
            return Err(DriverError::Input(
                "a tool result has no tool_call_id".into(),
            ));
        };
        if !open.contains(&id) {
            return Err(DriverError::Input(format!(
                "tool result `{id}` answers no open call of the last reply"
            )));
        }
    }
    Ok(())
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Streamed text or a tool-call fragment as a driver event.
fn delta_event(delta: Delta<'_>) -> DriverEvent {
    let (reasoning, text) = match delta {
        Delta::Reasoning(t) => (true, t),
        Delta::Content(t) => (false, t),
        Delta::Signature(signature) => {
            return DriverEvent::ThinkingSignature {
                signature: signature.to_owned(),
            };
        }
        Delta::ToolCall {
            index,
            id,
            name,
            arguments,
        } => {
            return DriverEvent::ToolCallDelta {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            };
        }
    };
    DriverEvent::Delta {
        reasoning,
        text: text.to_owned(),
    }
}

fn backoff(config: &DriverConfig, attempt: u32, error: &TransportError) -> Duration {
    let exponential = config.base_delay.saturating_mul(1 << attempt.min(16));
    error
        .retry_after()
        .unwrap_or(exponential)
        .min(config.max_delay)
}

/// Everything a turn runs through.
pub struct Driver<'a> {
    /// The resolved route.
    pub decision: &'a RouteDecision,
    /// The wire: request building, sending and capture, and its refusal reading.
    pub wire: &'a dyn Wire,
    /// Where the session is stored.
    pub log: &'a dyn SessionLog,
    /// Tools the model may call.
    pub tools: &'a dyn Tools,
    /// Behaviour.
    pub config: &'a DriverConfig,
    /// Told each event worth a line to the user.
    pub notify: &'a (dyn Fn(&DriverEvent) + Send + Sync),
}

impl Driver<'_> {
    /// Records a refusal of `fields` as a verdict for this wire and target, in memory and — before
    /// any retry — in the log (whose merged verdicts become the conversation's). False when it
    /// adds nothing new.
    async fn record_refusal(
        &self,
        conversation: &mut Conversation,
        fields: &[&'static str],
    ) -> Result<bool, DriverError> {
        let target = &self.decision.target;
        if self.wire.id() == CHAT_WIRE {
            let carriers = CarrierSet::of(fields.iter().filter_map(|f| Carrier::parse(f)));
            if !conversation.verdicts.record(target, carriers) {
                return Ok(false);
            }
            conversation.verdicts = self
                .log
                .record_verdict(target, carriers)
                .await
                .map_err(DriverError::Log)?;
            conversation.verdicts.record(target, carriers);
        } else {
            let wire = self.wire.id();
            if !conversation.wire_verdicts.record(wire, target, fields) {
                return Ok(false);
            }
            conversation.wire_verdicts = self
                .log
                .record_wire_verdict(wire, target, fields)
                .await
                .map_err(DriverError::Log)?;
            conversation.wire_verdicts.record(wire, target, fields);
        }
        Ok(true)
    }

    /// Sends one request for the current history: refusal fallback (once) and bounded backoff.
    async fn request(
        &self,
        conversation: &mut Conversation,
        requests: &mut usize,
    ) -> Result<Reply, DriverError> {
        let Driver {
            decision,
            wire,
            config,
            notify,
            ..
        } = *self;
        let origin = Origin {
            provider: decision.target.provider.clone(),
            host: decision.target.host_key(),
            model: decision.target.model.clone(),
        };
        let mut refusals = 0;
        let mut retries = 0;
        let mut stalls = 0;
        let mut recovered: Option<Outgoing> = None;
        let mut recoveries = 0;
        // What a wire that does not speak the client's own dialect cannot drop (server tools)
        // fails the request before anything is sent; the rest it leaves out.
        if !wire.takes_passthrough(self.config.passthrough.dialect) {
            self.config.passthrough.refused_by(format!(
                "the {} wire ({})",
                wire.id(),
                decision.target.model
            ))?;
        }
        // Set once any streamed piece of a reply has reached the caller: from then on nothing
        // of this request is retried (the caller would see that output twice).
        let streamed = std::sync::atomic::AtomicBool::new(false);
        loop {
            let (result, sent, left_out) = {
                // Every call paired with a result on the wire, whatever the stored history holds.
                let history = for_wire(wire, &conversation.messages);
                let parts = self.parts(&history, conversation);
                let request = match recovered.take() {
                    Some(request) => request,
                    None => wire.encode(&parts)?,
                };
                // Left out once, left out for good (docs/spec.md §5a 3): recorded before it is
                // sent, and marked on the history the rest of this turn encodes from.
                if !request.left_out.is_empty() {
                    self.log
                        .left_out(&request.left_out)
                        .await
                        .map_err(DriverError::Log)?;
                    tracing::info!(
                        wire = wire.id(),
                        route = decision.id(),
                        turns = request.left_out.len(),
                        "stored turns' carriers left out for good (docs/spec.md §5a 3)"
                    );
                }
                for note in &request.notes {
                    tracing::info!(wire = wire.id(), route = decision.id(), note = %note, "wire notice");
                    notify(&DriverEvent::Notice { text: note.clone() });
                }
                if !request.carriers.is_empty() {
                    notify(&DriverEvent::Carriers {
                        wire: wire.id(),
                        counts: request.carriers,
                    });
                }
                tracing::info!(
                    wire = wire.id(),
                    route = decision.id(),
                    model = %decision.target.model,
                    carriers = ?request.refusable,
                    messages = request.messages,
                    "sending request"
                );
                *requests += 1;
                let on_delta = |delta: Delta<'_>| {
                    streamed.store(true, std::sync::atomic::Ordering::Relaxed);
                    notify(&delta_event(delta));
                };
                // One span per upstream request (inside the caller's turn span, if any), so a
                // server's logs and traces can follow a request through its retries. Its
                // `gen_ai.*` fields follow OpenTelemetry's GenAI conventions (`telemetry`).
                let span = upstream_span(&origin, wire.id(), *requests, &config.telemetry);
                if config.telemetry.capture_content {
                    span.record(
                        "gen_ai.input.messages",
                        crate::telemetry::input_messages(&history),
                    );
                }
                notify(&DriverEvent::Sent {
                    wire: wire.id(),
                    body: request.body.as_slice().into(),
                });
                let started = tokio::time::Instant::now();
                let result = tracing::Instrument::instrument(
                    wire.send(&request, origin.clone(), &on_delta),
                    span.clone(),
                )
                .await;
                record_outcome(&span, &result, config.telemetry.capture_content);
                notify(&DriverEvent::Upstream {
                    wire: wire.id(),
                    provider: origin.provider.clone(),
                    elapsed: started.elapsed(),
                    status: result.as_ref().err().and_then(TransportError::status),
                    ok: result.is_ok(),
                    usage: result.as_ref().ok().and_then(|r| r.meta.usage),
                });
                (result, request.refusable, request.left_out)
            };
            if !left_out.is_empty() {
                let ids = left_out.into_iter().collect();
                crate::left_out::mark(&mut conversation.messages, &ids);
            }
            let error = match result {
                Ok(reply) => {
                    if reply.meta.dropped_upstream > 0 {
                        notify(&DriverEvent::Carriers {
                            wire: wire.id(),
                            counts: crate::tally::CarrierCounts {
                                dropped_upstream: reply.meta.dropped_upstream,
                                ..crate::tally::CarrierCounts::default()
                            },
                        });
                    }
                    if !sent.is_empty() {
                        self.log
                            .accepted(wire.id(), &decision.target, &sent)
                            .await
                            .map_err(DriverError::Log)?;
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            if streamed.load(std::sync::atomic::Ordering::Relaxed) {
                tracing::info!(route = decision.id(), error = %error, "failed after part of the reply streamed; not retried");
                return Err(DriverError::AfterOutput(error));
            }
            if refusals < REFUSAL_RETRIES {
                let refused = error.body().and_then(|body| {
                    wire.refused(error.status(), body, &sent, decision.echo.is_some())
                });
                if let Some(fields) = refused {
                    if self.record_refusal(conversation, &fields).await? {
                        // Told to the user in one line (the Refused event); logged in full.
                        tracing::info!(
                            wire = wire.id(),
                            route = decision.id(),
                            provider = %decision.target.provider,
                            host = %decision.target.host_key(),
                            model = %decision.target.model,
                            status = error.status(),
                            refused = ?fields,
                            "provider refused replayed fields; verdict stored, retrying once without them"
                        );
                        notify(&DriverEvent::Refused {
                            carriers: fields,
                            status: error.status(),
                        });
                        refusals += 1;
                        continue;
                    }
                    tracing::debug!(
                        route = decision.id(),
                        "refusal adds nothing new; not retried"
                    );
                }
            }
            if recoveries == 0
                && let Some(body) = error.body()
            {
                let history = for_wire(wire, &conversation.messages);
                let parts = self.parts(&history, conversation);
                if let Some(recovery) = wire.recover(&parts, error.status(), body) {
                    // The user reads the note as one line (the Notice event); the log keeps
                    // the structured record.
                    tracing::info!(
                        wire = wire.id(),
                        route = decision.id(),
                        status = error.status(),
                        note = %recovery.note,
                        "wire recovers once; nothing persisted"
                    );
                    notify(&DriverEvent::Notice {
                        text: recovery.note,
                    });
                    recoveries += 1;
                    recovered = Some(recovery.outgoing);
                    continue;
                }
            }
            if error.is_stall() {
                if stalls >= STALL_RETRIES {
                    return Err(DriverError::StalledAgain(error));
                }
                stalls += 1;
            }
            let gone = config
                .stop
                .as_ref()
                .is_some_and(|stop| stop.load(std::sync::atomic::Ordering::Acquire));
            // A caller that is gone is owed the reply it paid for, not a new request.
            if error.is_retryable() && retries < config.max_backoff_retries && !gone {
                let delay = backoff(config, retries, &error);
                retries += 1;
                // Told to the user in one line (the Retrying event); logged in full.
                tracing::info!(route = decision.id(), attempt = retries, delay_ms = delay.as_millis() as u64, error = %error, "transient failure, retrying");
                notify(&DriverEvent::Retrying {
                    attempt: retries,
                    delay,
                    error: error.to_string(),
                });
                tokio::time::sleep(delay).await;
                continue;
            }
            return Err(error.into());
        }
    }

    /// What the wire builds a request from: `history` (already paired) with the session's
    /// verdicts and this driver's settings.
    fn parts<'h>(
        &'h self,
        history: &'h [Message],
        conversation: &'h Conversation,
    ) -> RequestParts<'h> {
        self.config.parts(self.decision, history, conversation)
    }

    /// Sends one request for `conversation` as it is — refusal fallback (recording the verdict
    /// through the log) and bounded backoff included — and returns the reply without storing
    /// it or running its tool calls (a summary request, a probe).
    pub async fn reply(&self, conversation: &mut Conversation) -> Result<Reply, DriverError> {
        let mut requests = 0;
        self.request(conversation, &mut requests).await
    }

    /// Runs one user turn: requests, runs each reply's tool calls, and stores each step (the
    /// reply with all its results, the first step together with `user`) in one transaction,
    /// until the model answers without calling a tool.
    pub async fn run_turn(
        &self,
        conversation: &mut Conversation,
        user: Message,
    ) -> Result<TurnOutcome, DriverError> {
        self.run(conversation, vec![user]).await
    }

    /// Runs one turn whose input is `input`: a user message, or the results of the tool calls
    /// the last stored reply made (a caller that runs its own tools,
    /// [`DriverConfig::client_tools`]). Each step is stored in one transaction — the first
    /// together with `input` — so a turn that fails before its first step leaves the session as
    /// it was. With server-side tools the driver runs each reply's calls and goes on until the
    /// model answers without calling one; with client-side tools it stops at the first reply
    /// that calls tools and returns it.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        input: Vec<Message>,
    ) -> Result<TurnOutcome, DriverError> {
        let Driver {
            log,
            config,
            notify,
            ..
        } = *self;
        check_input(&conversation.messages, &input)?;
        // The input is stored together with the first step, and a step — the reply and the
        // result of every tool call it made — is stored in one transaction: an interruption
        // (a signal, a failed write) never leaves a call without its result, and a turn that
        // fails or is cancelled before its first step is stored leaves the session as it was.
        let before = conversation.messages.len();
        let mut pending = input.clone();
        conversation.messages.extend(input);
        let repairs = paired(&conversation.messages).1;
        if !repairs.is_empty() {
            tracing::warn!(
                unanswered = repairs.unanswered,
                orphans = repairs.orphans,
                "the stored history has unpaired tool calls; the wire copy pairs them"
            );
            notify(&DriverEvent::Repaired {
                unanswered: repairs.unanswered,
                orphans: repairs.orphans,
            });
        }
        let mut outcome = TurnOutcome::default();
        // Tool output of this turn so far, in bytes.
        let mut output = 0usize;
        for _ in 0..config.max_steps {
            if !outcome.new_messages.is_empty()
                && config
                    .stop
                    .as_ref()
                    .is_some_and(|stop| stop.load(std::sync::atomic::Ordering::Acquire))
            {
                // The caller is gone: what it paid for is stored, nothing more is asked.
                tracing::info!(
                    steps = outcome.usage.len(),
                    "the caller is gone: the turn stops after its stored steps"
                );
                return Ok(outcome);
            }
            let step = self.step(conversation, &mut outcome, &mut output).await;
            let (message, results, meta) = match step {
                Ok(step) => step,
                Err(err) => {
                    if !pending.is_empty() {
                        conversation.messages.truncate(before);
                    }
                    return Err(err);
                }
            };
            let first = !pending.is_empty();
            let mut stored = std::mem::take(&mut pending);
            stored.push(message.clone());
            stored.extend(results.iter().cloned());
            let calls = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
            let done = results.is_empty();
            let finish = match meta.finish {
                // A reply that calls tools the caller runs ends the turn for that reason,
                // whatever its wire called it.
                _ if calls && done => Some(FinishReason::ToolCalls),
                finish => finish,
            };
            let step = Step {
                messages: &stored,
                added: 1 + results.len(),
                usage: meta.usage.as_ref(),
                finish: finish.as_ref(),
                ends_turn: done,
            };
            if let Err(err) = log.commit(&step).await {
                if first {
                    conversation.messages.truncate(before);
                }
                return Err(DriverError::Log(err));
            }
            if let Some(usage) = meta.usage {
                outcome.usage.push(usage);
            }
            outcome.finish = finish;
            conversation.messages.push(message.clone());
            conversation.messages.extend(results.iter().cloned());
            outcome.new_messages.push(message);
            outcome.new_messages.extend(results);
            if done {
                return Ok(outcome);
            }
        }
        Err(DriverError::ToolLoop(config.max_steps))
    }

    /// One step, not yet stored: the reply (creation rules applied), the results of its tool
    /// calls (run in order, capped), and its usage.
    async fn step(
        &self,
        conversation: &mut Conversation,
        outcome: &mut TurnOutcome,
        output: &mut usize,
    ) -> Result<(Message, Vec<Message>, crate::transport::ReplyMeta), DriverError> {
        let Driver {
            decision,
            tools,
            config,
            notify,
            ..
        } = *self;
        let reply = self.request(conversation, &mut outcome.requests).await?;
        let mut message = reply.message;
        apply_creation_rules(&mut message, decision);
        let calls: Vec<ToolCall> = if config.client_tools {
            // The caller runs them: the reply is the step.
            Vec::new()
        } else {
            message.tool_calls.clone().unwrap_or_default()
        };
        let mut results = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let name = &call.function.name;
            if i >= config.max_tool_calls {
                if i == config.max_tool_calls {
                    tracing::warn!(
                        calls = calls.len(),
                        max = config.max_tool_calls,
                        "more tool calls in one reply than the cap; the rest are refused"
                    );
                }
                results.push(tool_result(
                    call,
                    &format!(
                        "refused: more than {} tool calls in one reply",
                        config.max_tool_calls
                    ),
                ));
                continue;
            }
            if *output >= config.max_tool_output {
                tracing::debug!(tool = %name, max = config.max_tool_output, "tool output of the turn over its cap; not run");
                results.push(tool_result(
                    call,
                    &format!(
                        "refused: the tool output of this turn exceeded {} bytes",
                        config.max_tool_output
                    ),
                ));
                continue;
            }
            notify(&DriverEvent::ToolCall { name: name.clone() });
            let arguments = call
                .function
                .arguments
                .as_ref()
                .and_then(|a| a.as_str())
                .unwrap_or_default();
            let text = match tokio::time::timeout(config.tool_timeout, tools.call(name, &arguments))
                .await
            {
                Ok(text) => text,
                Err(_) => {
                    tracing::warn!(tool = %name, timeout_ms = config.tool_timeout.as_millis() as u64, "tool timed out");
                    format!(
                        "error: {name} timed out after {:.1} s",
                        config.tool_timeout.as_secs_f64()
                    )
                }
            };
            let room = config.max_tool_output - *output;
            let text = if text.len() > room {
                *output = config.max_tool_output;
                format!(
                    "{}\n[cut: the tool output of this turn exceeded {} bytes]",
                    prefix(&text, room),
                    config.max_tool_output
                )
            } else {
                *output += text.len();
                text
            };
            tracing::debug!(tool = %name, bytes = text.len(), "tool ran");
            results.push(tool_result(call, &text));
        }
        Ok((message, results, reply.meta))
    }
}

#[cfg(test)]
mod tests;

/// The span of one upstream request: named `chat {model}` and of kind client for
/// OpenTelemetry (`otel.name`, `otel.kind`), with the GenAI attributes known before it is
/// sent; [`record_outcome`] fills in the rest.
fn upstream_span(
    origin: &Origin,
    wire: &str,
    attempt: usize,
    telemetry: &Telemetry,
) -> tracing::Span {
    use tracing::field::Empty;
    tracing::info_span!(
        "upstream_request",
        otel.name = %format_args!("{} {}", crate::telemetry::OPERATION, origin.model),
        otel.kind = "client",
        otel.status_code = Empty,
        wire,
        provider = %origin.provider,
        host = %origin.host,
        model = %origin.model,
        attempt,
        gen_ai.operation.name = crate::telemetry::OPERATION,
        gen_ai.provider.name = crate::telemetry::provider_name(&origin.provider),
        gen_ai.request.model = %origin.model,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        server.address = telemetry.server_address.as_deref(),
        server.port = telemetry.server_port.map(i64::from),
        error.type = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
    )
}

/// Records how an upstream request ended on its span: the response model, finish reason
/// (one; `gen_ai.response.finish_reasons` is recorded as a comma-separated list, which an
/// exporter turns into the spec's string array) and tokens — `output_tokens` includes the
/// reasoning tokens, `reasoning.output_tokens` is the part of them spent thinking ([`Usage`]) —
/// or `error.type` and an error status.
///
/// [`Usage`]: crate::transport::Usage
fn record_outcome(span: &tracing::Span, result: &Result<Reply, TransportError>, content: bool) {
    // One `record_all` per outcome, not one `record` per field: a JSON file log re-reads and
    // rewrites every field the span holds on each record (tracing-subscriber's `JsonFields`).
    match result {
        Ok(reply) => {
            // Signed: OpenTelemetry's integers are i64 (an unsigned one would be a string).
            let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            let usage = reply.meta.usage.as_ref();
            let output = content.then(|| {
                crate::telemetry::output_messages(&reply.message, reply.meta.finish.as_ref())
            });
            tracing::record_all!(
                span,
                gen_ai.response.model = reply.message.origin.as_ref().map(|o| o.model.as_str()),
                gen_ai.response.finish_reasons = reply
                    .meta
                    .finish
                    .as_ref()
                    .map(crate::telemetry::finish_reason),
                gen_ai.usage.input_tokens = usage.map(|u| int(u.input)),
                gen_ai.usage.output_tokens = usage.map(|u| int(u.output)),
                gen_ai.usage.reasoning.output_tokens = usage.map(|u| int(u.reasoning)),
                gen_ai.output.messages = output.as_deref(),
            );
        }
        Err(error) => {
            tracing::record_all!(
                span,
                error.type = crate::telemetry::error_type(error),
                otel.status_code = "error",
            );
        }
    }
}
