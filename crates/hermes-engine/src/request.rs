//! The request-shaped entry point a server (and any front end) calls: a [`Request`] in, a
//! [`Completion`] out ([`ServingEngine::complete`]), or the same as a stream of [`Event`]s
//! ([`ServingEngine::stream`]). One request is one turn: its input is stored with the first step, each
//! step whole, and nothing holds a lock on the conversation for the length of a stream.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::client::ClientMessage;
use hermes_core::driver::{DriverEvent, Tools};
use hermes_core::{
    CarrierSet, FinishReason, Message, Passthrough, RawJson, Role, Sampling, ThinkingRequest, Usage,
};
use hermes_store::Store;

use crate::Engine;
use crate::error::EngineError;
use crate::open::{NoTools, Opened, Toolset, driver_config, new_session, open_snapshot, view_of};
use crate::receipt::{Claimed, Idempotency};
use crate::settle::{Choice, Defaults, Settled};
use crate::target::{AwsLookup, KeyLookup, Limits, Target};
use crate::turn::{Destination, TurnParts, Work, drive};
use hermes_core::reattach::{align, input_start, unverified_carriers};

/// What every request of an engine runs with: the store and the process-wide settings a front
/// end read once (config, key lookups, limits).
#[derive(Clone)]
#[non_exhaustive]
pub struct Settings {
    /// `config.toml`'s defaults (provider, model, per-provider URLs and key variables, effort).
    pub defaults: Defaults,
    /// Environment lookups for keys.
    pub key: KeyLookup,
    /// AWS credentials (Bedrock providers); none means Bedrock cannot be reached.
    pub aws: Option<AwsLookup>,
    /// Bounded waits.
    pub limits: Limits,
    /// How old a fleet verdict may grow before a request re-probes it once.
    pub reprobe_after: Duration,
    /// How long a gateway request that named no `Idempotency-Key` is answered from the store
    /// when the same body comes again while its conversation still ends where it left it
    /// ([`crate::DEFAULT_RETRY_WINDOW`]; zero: never).
    pub retry_window: Duration,
}

impl Settings {
    /// Settings with `defaults` and `key`, default limits, no AWS source.
    pub fn new(defaults: Defaults, key: KeyLookup) -> Self {
        Settings {
            defaults,
            key,
            aws: None,
            limits: Limits::default(),
            reprobe_after: crate::fleet::DEFAULT_REPROBE_AFTER,
            retry_window: crate::receipt::DEFAULT_RETRY_WINDOW,
        }
    }

    /// With this retry window ([`Settings::retry_window`]).
    pub fn retry_window(mut self, window: Duration) -> Self {
        self.retry_window = window;
        self
    }

    /// With an AWS credentials source.
    pub fn aws(mut self, aws: AwsLookup) -> Self {
        self.aws = Some(aws);
        self
    }

    /// With these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The store and settings an engine serves requests with.
pub(crate) struct Runtime {
    pub(crate) store: Store,
    pub(crate) settings: Settings,
}

/// Who runs the tools of a request.
#[non_exhaustive]
pub enum ToolMode {
    /// No tools offered. The engine still runs none: a reply that calls one anyway is stored
    /// and returned as the model made it (finish reason [`FinishReason::ToolCalls`]), as
    /// [`ToolMode::Client`] returns it, with no result of the engine's own and no further
    /// request the caller never sees.
    None,
    /// The engine runs them (the CLI's workspace tools): a turn goes on until the model answers
    /// without calling one.
    Server(Toolset),
    /// The caller runs them: these definitions are sent, a reply that calls tools is stored and
    /// returned (finish reason [`FinishReason::ToolCalls`]), and the caller's next request
    /// brings the results as its input.
    Client(RawJson),
}

/// One request: which conversation, what is new, how to answer.
#[non_exhaustive]
pub struct Request {
    /// Continue this stored session; none starts a new one.
    pub session: Option<String>,
    /// Provider, model and base URL for this request (each unset one comes from the stored
    /// session, then the settings' defaults).
    pub choice: Choice,
    /// The new messages: a user turn, or the results of the tool calls the last stored reply
    /// made (unused with [`Request::history`]).
    pub input: Vec<Message>,
    /// A gateway client's whole history instead of `input` (docs/spec.md §10): lined up with the
    /// stored session (`session`), every assistant message equal to a stored one gets its
    /// carriers back, the messages after its last assistant message are the input, and a
    /// history that leaves the stored one before its tip is stored on a branch from where they
    /// part.
    pub history: Option<History>,
    /// Who runs the tools.
    pub tools: ToolMode,
    /// The thinking request ([`ThinkingRequest::NoPreference`]: the stored session's, else the
    /// settings' default effort).
    pub thinking: ThinkingRequest,
    /// Ask the provider for a stream (deltas reach the caller as they arrive).
    pub stream: bool,
    /// Sampling parameters (`max_tokens`, `temperature`, `top_p`, `stop`, `tool_choice`,
    /// `parallel_tool_calls`, `response_format`, `seed`, `user`). A value the provider's wire
    /// cannot send, or not with the thinking asked for, fails the request naming it
    /// ([`ErrorKind::InvalidParameter`](crate::ErrorKind::InvalidParameter)); nothing is
    /// dropped silently.
    pub sampling: Sampling,
    /// What a gateway client asked for in its own wire's terms (Anthropic betas, server tools,
    /// its own thinking object): honoured by the wire that speaks that dialect to its provider;
    /// server tools to any other target fail the request naming `tools`
    /// ([`ErrorKind::InvalidParameter`](crate::ErrorKind::InvalidParameter)).
    pub passthrough: Passthrough,
    /// What makes a gateway request idempotent (with [`Request::history`] only): a request
    /// the store already answered gets its stored completion, with no upstream call
    /// ([`crate::Idempotency`]).
    pub idempotency: Option<Idempotency>,
    /// Answer with a checkpoint of the client's whole history instead of a turn (with
    /// [`Request::history`] only; docs/spec.md §7): the provider's own compaction where the route
    /// has one (its block or item, kept verbatim), hermes' summary otherwise or when the
    /// provider's fails. The checkpoint is stored in a new session of the client's, after the
    /// history's leading system messages (the conversation it summarised is left as it was),
    /// and is the completion's last message.
    pub compact: bool,
    /// Set when the caller is gone ([`Events`] dropped): the step in flight is still stored,
    /// no further one starts.
    stop: Option<Arc<AtomicBool>>,
    /// The chat session's policy ([`Exclusive`]); none: compare-and-append.
    exclusive: Option<Exclusive>,
}

/// How a chat session's turn runs on the one request path ([`crate::ChatSession`]): on the
/// target the session started once (its simulator and connections live across turns), and
/// stored under the session's lease — appended plainly, never compared with a tip or branched,
/// since no other writer can move the session on while the lease is held.
pub(crate) struct Exclusive {
    /// The session's started target.
    pub(crate) target: Arc<Target>,
    /// Where a new session's id is written with its first step, so the session learns it even
    /// when the turn is cancelled after that step.
    pub(crate) created: Arc<Mutex<Option<String>>>,
}

impl Request {
    /// A request whose input is one user message `text`, on a new session, with no tools.
    pub fn user(text: &str) -> Self {
        Request {
            session: None,
            choice: Choice::default(),
            input: vec![Message::text(Role::User, text)],
            history: None,
            tools: ToolMode::None,
            thinking: ThinkingRequest::NoPreference,
            stream: false,
            sampling: Sampling::default(),
            passthrough: Passthrough::default(),
            idempotency: None,
            compact: false,
            stop: None,
            exclusive: None,
        }
    }

    /// Under a chat session's [`Exclusive`] policy.
    pub(crate) fn exclusive(mut self, exclusive: Exclusive) -> Self {
        self.exclusive = Some(exclusive);
        self
    }

    /// Continuing stored session `id`.
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session = Some(id.into());
        self
    }

    hermes_core::setters! {
        /// With this provider, model and base URL choice.
        choice: Choice;

        /// With this input instead.
        input: Vec<Message>;

        /// With these tools.
        tools: ToolMode;

        /// With this thinking request.
        thinking: ThinkingRequest;

        /// Streamed or not.
        stream: bool;

        /// With these sampling parameters.
        sampling: Sampling;

        /// With what a gateway client asked for in its own wire's terms.
        passthrough: Passthrough;

        /// With what makes it idempotent.
        idempotency: Option<Idempotency>;

        /// Answered with a checkpoint of the history instead of a turn.
        compact: bool;
    }

    /// A request answering a client's whole `history` (see [`Request::history`]).
    pub fn from_history(history: History) -> Self {
        Request {
            history: Some(history),
            input: Vec::new(),
            ..Request::user("")
        }
    }
}

/// A gateway client's whole history, and whose it is: the tenant (a gateway key's owner) and
/// the client's own partition within it, if it names one. A conversation is found, matched and
/// extended only within them (docs/spec.md §10, "Which conversation").
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct History {
    /// Whose conversations these are.
    pub tenant: String,
    /// The client's partition within the tenant (`X-Hermes-Session`-less clients may name one:
    /// the OpenAI `user` field, Anthropic `metadata.user_id`, a session header).
    pub partition: Option<String>,
    /// The messages as the client may write them ([`ClientMessage`]: no storage key, no
    /// native record, no key outside the allow-list), in order (carriers it kept are passed on unverified; its
    /// own Anthropic thinking blocks, `reasoning_details` items of a turn the store does not
    /// hold, only to Claude on the Messages wire:
    /// `wires::client_blocks_to`, applied once the target is
    /// settled).
    messages: Vec<Message>,
}

impl History {
    /// `messages` of `tenant`, in no partition: only ever [`ClientMessage`]s, so nothing a
    /// client wrote stands where the store's own bytes do.
    pub fn new(
        tenant: impl Into<String>,
        messages: impl IntoIterator<Item = ClientMessage>,
    ) -> Self {
        History {
            tenant: tenant.into(),
            partition: None,
            messages: messages
                .into_iter()
                .map(ClientMessage::into_message)
                .collect(),
        }
    }

    /// The messages, as read ([`ClientMessage`]).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    hermes_core::setters! {
        /// In the client's `partition`.
        partition: Option<String>;
    }
}

/// What a request produced.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Completion {
    /// The stored session the turn went to: new, the one asked for, or — when that one had
    /// moved on since this request read it (another request continued it meanwhile) — a new
    /// branch of it sharing the history this request read (docs/spec.md §10).
    pub session: String,
    /// The session asked for, when the turn went to a branch of it.
    pub branched_from: Option<String>,
    /// The messages the turn added after its input: each reply, and the results of tools the
    /// engine ran.
    pub messages: Vec<Message>,
    /// The usage of every reply, summed (`reasoning` is the thinking share of `output`).
    pub usage: Usage,
    /// Why the last reply ended.
    pub finish: Option<FinishReason>,
    /// HTTP requests sent upstream.
    pub requests: usize,
    /// The conversation as the turn left it (the history sent, then what the turn added), for
    /// a chat session's memory ([`Exclusive`] requests only).
    pub(crate) conversation: Option<Box<hermes_core::driver::Conversation>>,
}

/// Something a streamed request reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A driver event: a delta of thinking or answer text, a tool call, a retry, a notice.
    Driver(DriverEvent),
    /// The request finished: every step is stored.
    Done(Completion),
    /// The request failed (after any delta already sent, it is not retried); every finished
    /// step is stored, the unfinished one is not.
    Failed(EngineError),
}

/// The events of a request run on a task of its own, in order, ending with [`Event::Done`] or
/// [`Event::Failed`]. Dropping it (a client that hung up) does not cancel the step in flight:
/// its reply is paid for, so it is captured and stored whole, with its usage and receipt — a
/// retry of the request finds it — and no further step starts.
/// The queue between the turn and its reader is bounded in events: a reader that falls behind
/// gets deltas merged, never dropped (`queue.rs`).
pub struct Events {
    events: Arc<crate::queue::Queue<Event>>,
    stop: Arc<AtomicBool>,
}

impl Events {
    /// The next event; `None` after the last.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.next().await
    }
}

impl crate::queue::Carries for Event {
    fn driver(&mut self) -> Option<&mut DriverEvent> {
        match self {
            Event::Driver(event) => Some(event),
            _ => None,
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Engine {
    /// This engine, serving requests ([`ServingEngine::complete`], [`ServingEngine::stream`])
    /// from `store` with `settings`.
    pub fn with_store(self, store: Store, settings: Settings) -> ServingEngine {
        ServingEngine {
            engine: self,
            runtime: Arc::new(Runtime { store, settings }),
        }
    }
}

/// An [`Engine`] serving requests: it owns the store they are served from and the settings
/// they run with ([`Engine::with_store`]). The gateway serves with one; a
/// [`crate::ChatSession`] runs each turn through one. Cheap to clone.
#[derive(Clone)]
pub struct ServingEngine {
    pub(crate) engine: Engine,
    pub(crate) runtime: Arc<Runtime>,
}

impl ServingEngine {
    /// The engine: its routes, wires and simulators.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The settings requests are served with.
    pub fn settings(&self) -> &Settings {
        &self.runtime.settings
    }

    /// The store requests are served from: the gateway counts its shared limits and checks its
    /// keys there.
    pub fn store(&self) -> &Store {
        &self.runtime.store
    }

    /// Whether requests can be served: the store answers.
    pub async fn ready(&self) -> Result<(), EngineError> {
        Ok(self.runtime.store.ping().await?)
    }

    /// The gateway's signing key (docs/spec.md §10, "Messages-door signatures"), from the store
    /// every replica shares; made on first use.
    pub async fn signing_key(&self) -> Result<hermes_store::SigningKey, EngineError> {
        Ok(self.runtime.store.signing_key().await?)
    }

    /// Runs `request` as one turn and returns what it added. Deltas and other events reach
    /// `notify` as they happen. The conversation is read once; each step is stored whole as it
    /// finishes.
    ///
    /// Runs in a `session_turn` span (the session id, a fresh `request_id`, the provider and
    /// the model), each upstream request an `upstream_request` span inside it.
    pub async fn complete(
        &self,
        request: Request,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
    ) -> Result<Completion, EngineError> {
        let runtime = &self.runtime;
        let span = tracing::info_span!(
            "session_turn",
            session = request.session.as_deref(),
            request_id = %uuid::Uuid::now_v7().simple(),
            provider = tracing::field::Empty,
            model = tracing::field::Empty,
        );
        let result = tracing::Instrument::instrument(
            self.complete_in_span(runtime, request, notify, &span),
            span.clone(),
        )
        .await;
        if let Ok(completion) = &result {
            span.record("session", completion.session.as_str());
        }
        result
    }

    /// [`ServingEngine::spawn`] with the provider asked for a stream: deltas are events as they
    /// arrive.
    pub fn stream(&self, request: Request) -> Events {
        self.spawn(request.stream(true))
    }

    /// [`ServingEngine::complete`] run on a task of its own (so its future is `Send` and `'static`,
    /// and the turn outlives a caller that goes away: see [`Events`]), reporting as events.
    pub fn spawn(&self, mut request: Request) -> Events {
        let events = Arc::new(crate::queue::Queue::new());
        let stop = Arc::new(AtomicBool::new(false));
        request.stop = Some(stop.clone());
        let engine = self.clone();
        let queue = events.clone();
        let task = async move {
            let _closes = crate::queue::CloseOnDrop(queue.clone());
            let forward = queue.clone();
            let notify = move |event: &DriverEvent| forward.push(Event::Driver(event.clone()));
            let last = match engine.complete(request, &notify).await {
                Ok(completion) => Event::Done(completion),
                Err(error) => Event::Failed(error),
            };
            queue.push(last);
        };
        // The turn's spans stay under the caller's (a gateway request's span).
        tokio::spawn(tracing::Instrument::in_current_span(task));
        Events { events, stop }
    }

    /// A gateway request the store already answered gets its stored completion (told to
    /// `notify` as deltas); any other runs as a turn, holding its idempotency claim, given back
    /// if the turn fails ([`crate::receipt`]).
    async fn complete_in_span(
        &self,
        runtime: &Runtime,
        mut request: Request,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
        span: &tracing::Span,
    ) -> Result<Completion, EngineError> {
        let idempotency = request.idempotency.take();
        let claimed = match (&request.history, &idempotency) {
            // Boxed: the claim's future (2 KiB) would otherwise size the task every stream
            // keeps for its whole life (issue 50's memory per stream).
            (Some(history), Some(idempotency)) => {
                Box::pin(crate::receipt::claim(
                    &runtime.store,
                    &history.tenant,
                    idempotency,
                    runtime.settings.retry_window,
                    runtime.settings.limits.turn,
                ))
                .await?
            }
            _ => None,
        };
        let pending = match claimed {
            Some(Claimed::Answered(answer)) => {
                crate::receipt::replay(&answer.messages, notify);
                return Ok(Completion {
                    session: answer.session,
                    branched_from: None,
                    messages: answer.messages,
                    usage: answer.usage,
                    finish: answer.finish,
                    // Answered from the store: nothing went upstream.
                    requests: 0,
                    conversation: None,
                });
            }
            Some(Claimed::Run(pending)) => Some(pending),
            None => None,
        };
        // Boxed: the receipt's renewal and the plain await would each hold a copy of the turn's
        // future in this one (the spawned task was 58 KB a turn, 6.5 KB now).
        let turn = Box::pin(self.turn_in_span(runtime, request, pending.as_ref(), notify, span));
        let result = match &pending {
            Some(pending) => crate::receipt::renewing(&runtime.store, pending, turn).await,
            None => turn.await,
        };
        if let (Err(_), Some(pending)) = (&result, &pending)
            && let Err(e) = runtime.store.release_receipt(pending.key()).await
        {
            tracing::warn!(error = %e, "cannot give back an idempotency claim; it lapses on its own");
        }
        result
    }

    async fn turn_in_span(
        &self,
        runtime: &Runtime,
        request: Request,
        receipt: Option<&crate::receipt::Pending>,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
        span: &tracing::Span,
    ) -> Result<Completion, EngineError> {
        let Runtime { store, settings } = runtime;
        let Request {
            session,
            choice,
            input,
            history,
            tools,
            thinking,
            stream,
            sampling,
            passthrough,
            idempotency: _,
            compact,
            stop,
            exclusive,
        } = request;
        if compact && history.is_none() {
            return Err(EngineError::Usage(
                "a compaction request needs a client's history".into(),
            ));
        }
        if exclusive.is_some() && history.is_some() {
            return Err(EngineError::Usage(
                "a client's history is lined up by compare-and-append, never under a lease".into(),
            ));
        }
        // A client's history names its conversation by what it holds at its place (docs/spec.md
        // §10); the one read of a resumed conversation: its row, its active view and its tip.
        let snapshot = match (&history, session) {
            // Boxed, as the other steps before the turn's drive: a future that only a step
            // needs would otherwise be kept in the turn's own for its whole life, each stream's
            // too (issue 50's memory per stream).
            (Some(history), None) => Box::pin(find_conversation(store, history)).await?,
            (_, Some(id)) => Some(store.snapshot(&id).await?),
            (_, None) => None,
        };
        if let (Some(history), Some(snapshot)) = (&history, &snapshot)
            && (snapshot.meta.tenant.as_deref() != Some(history.tenant.as_str())
                || snapshot.meta.partition != history.partition)
        {
            // Another tenant's (or partition's) session does not exist for this client.
            return Err(EngineError::NotFound {
                session: snapshot.meta.id.clone(),
            });
        }
        let owner = history
            .as_ref()
            .map(|h| (h.tenant.clone(), h.partition.clone()));
        // A chat session's turn runs on the target it started; any other request settles its
        // own (flags > the stored session > config > registry).
        let (settled, thinking, mut conversation, tip, left_out) = match &exclusive {
            Some(exclusive) => {
                let (conversation, tip, left_out) = view_of(snapshot);
                (
                    Live::Started(exclusive.target.clone()),
                    thinking,
                    conversation,
                    tip,
                    left_out,
                )
            }
            None => {
                let Opened {
                    settled,
                    thinking,
                    conversation,
                    tip,
                    left_out,
                } = open_snapshot(
                    &self.engine,
                    &choice,
                    snapshot,
                    &settings.defaults,
                    &settings.key,
                    thinking,
                )?;
                (
                    Live::Settled(Box::new(settled)),
                    thinking,
                    conversation,
                    tip,
                    left_out,
                )
            }
        };
        let named = match &settled {
            Live::Settled(settled) => settled,
            Live::Started(target) => &target.settled,
        };
        span.record("provider", named.provider.as_str());
        span.record("model", named.model.as_str());
        let landed = Mutex::new(None);
        let mut read = tip.as_ref().map(|t| t.session().to_owned());
        let (input, preamble, place, carriers) = match history {
            None => (input, Vec::new(), tip.map_or(Place::New, Place::Tip), None),
            Some(history) => {
                let lined = self
                    .line_up(store, &mut conversation, history, tip, compact)
                    .await?;
                if !lined.placed {
                    // Not this conversation (docs/spec.md §10): nothing of it — its carriers, its
                    // verdicts, its lineage — goes with the new one.
                    read = None;
                    conversation.verdicts = Default::default();
                    conversation.wire_verdicts = Default::default();
                }
                (
                    lined.input,
                    lined.preamble,
                    lined.place,
                    Some(lined.carriers),
                )
            }
        };
        let target = match settled {
            Live::Started(target) => target,
            Live::Settled(settled) => Arc::new(
                Box::pin(Target::start(
                    &self.engine,
                    *settled,
                    &settings.limits,
                    settings.aws.as_ref(),
                ))
                .await?,
            ),
        };
        let unverified = if carriers.is_some() {
            // Where a client's own thinking blocks may go is decided once, now that the wire
            // and host are settled: only to Claude on the Messages wire (docs/spec.md §10). What is
            // stored (the preamble) keeps them as sent.
            crate::wires::client_blocks_to(
                self.engine.wires(),
                &mut conversation.messages,
                target.transport.wire().id(),
                &target.base(),
            );
            // A gateway client's own carriers (on turns the store does not hold) are
            // unverified: their refusals stay with this session (docs/spec.md §10).
            unverified_carriers(&conversation.messages)
        } else {
            CarrierSet::NONE
        };
        // What lining the client's history up did to its carriers (docs/spec.md §10), counted once.
        if let Some(counts) = carriers.filter(|c| !c.is_empty()) {
            notify(&DriverEvent::Carriers {
                wire: target.transport.wire().id(),
                counts,
            });
        }
        let (runner, definitions, client_tools): (&dyn Tools, _, _) = match &tools {
            // Only the engine's own tools ever run here; calls to any other (none offered,
            // or the client's) go back to the caller.
            ToolMode::None => (&NoTools, None, true),
            ToolMode::Server(toolset) => {
                (toolset.tools.as_ref(), toolset.definitions.clone(), false)
            }
            ToolMode::Client(definitions) => (&NoTools, Some(definitions.clone()), true),
        };
        let work = match compact {
            true => Work::Checkpoint {
                native: crate::compaction::native_request(&target, &passthrough),
            },
            false => Work::Turn(input),
        };
        let mut config = driver_config(thinking, stream, definitions);
        config.client_tools = client_tools;
        config.sampling = sampling;
        config.passthrough = passthrough;
        config.stop = stop;
        let title = preamble
            .iter()
            .chain(match &work {
                Work::Turn(input) => input.as_slice(),
                // A checkpoint's session is titled after the conversation it summarised.
                Work::Checkpoint { .. } => conversation.messages.as_slice(),
            })
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.as_ref())
            .and_then(|c| c.as_str().map(|s| s.into_owned()))
            .unwrap_or_default();
        let destination = match (place, &exclusive) {
            // Under the lease nothing else writes the session: appended plainly.
            (Place::Tip(tip), Some(_)) => Destination::Stored(tip.session().to_owned()),
            (Place::Tip(tip), None) => Destination::AtTip {
                tip,
                landed: &landed,
            },
            (
                Place::Branch {
                    parent,
                    fork,
                    chain,
                },
                _,
            ) => {
                let mut new = owned(new_session(&target.settled, thinking, &title), &owner);
                new.title = parent.title;
                new.parent_id = Some(parent.id);
                new.model_config = parent.model_config;
                new.fork = Some(fork);
                new.chain = chain;
                Destination::New {
                    new: Box::new(new),
                    created: &landed,
                    compare: true,
                }
            }
            (Place::New, exclusive) => Destination::New {
                new: Box::new(owned(
                    new_session(&target.settled, thinking, &title),
                    &owner,
                )),
                // A chat session learns its new session's id even from a cancelled turn, and
                // appends its later steps under the lease it then takes.
                created: exclusive.as_ref().map_or(&landed, |e| &*e.created),
                compare: exclusive.is_none(),
            },
        };
        let parts = TurnParts {
            store,
            target: &target,
            tools: runner,
            config: &config,
            limits: &settings.limits,
            reprobe_after: settings.reprobe_after,
            unverified,
            receipt,
            left_out: &left_out,
        };
        let outcome = drive(
            &parts,
            destination,
            preamble,
            &mut conversation,
            work,
            notify,
        )
        .await?;
        let landed = landed.lock().ok().and_then(|mut l| l.take()).or_else(|| {
            let created = exclusive.as_ref()?.created.lock().ok()?;
            created.clone()
        });
        let (session, branched_from) = match (read, landed) {
            (Some(read), Some(branch)) => (branch, Some(read)),
            (Some(read), None) => (read, None),
            (None, Some(created)) => (created, None),
            (None, None) => {
                return Err(EngineError::Failed("the new session was not stored".into()));
            }
        };
        Ok(Completion {
            session,
            branched_from,
            usage: outcome
                .usage
                .iter()
                .fold(Usage::default(), |sum, u| sum.plus(*u)),
            messages: outcome.new_messages,
            finish: outcome.finish,
            requests: outcome.requests,
            // Only a chat session keeps it; a gateway's request drops it here.
            conversation: exclusive.is_some().then(|| Box::new(conversation)),
        })
    }

    /// Lines a client's `history` up with the conversation read (empty for a new session):
    /// `conversation` becomes the history to send up to the input (stored carriers
    /// re-attached), and the result says what the turn stores before its input and where: at
    /// `tip` when the history holds the whole stored view, else on a new branch from where the
    /// two part, created with the turn's first step (a failed turn leaves no branch): the
    /// branch shares the stored view read up to there by reference (a [`hermes_store::Fork`]
    /// of `tip`) and stores only what the client sent after it, then the turn.
    async fn line_up(
        &self,
        store: &Store,
        conversation: &mut hermes_core::driver::Conversation,
        history: History,
        tip: Option<hermes_store::Tip>,
        compact: bool,
    ) -> Result<LinedUp, EngineError> {
        let stored = std::mem::take(&mut conversation.messages);
        let aligned =
            hermes_core::offload::heavy(&history.messages, || align(&stored, &history.messages));
        // No assistant message of the client's at its place in this conversation (a stock
        // reply of it matched by content alone, docs/spec.md §10): not this conversation, a
        // new one.
        let placed = aligned.placed(&history.messages);
        if compact {
            // The whole history goes up (stored carriers re-attached); a new session keeps
            // its leading system messages and then the checkpoint.
            let all = aligned.history;
            let lead = all
                .iter()
                .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                .count();
            if lead == all.len() {
                return Err(EngineError::InvalidParameter {
                    parameter: "messages".into(),
                    why: "there is nothing to compact: the history holds no message after its \
                          instructions"
                        .into(),
                });
            }
            let preamble = all[..lead].to_vec();
            conversation.messages = all;
            return Ok(LinedUp {
                input: Vec::new(),
                preamble,
                place: Place::New,
                carriers: aligned.counts,
                placed,
            });
        }
        let tip = tip.filter(|_| placed);
        let start = input_start(&aligned.history).ok_or_else(|| EngineError::InvalidParameter {
            parameter: "messages".into(),
            why: "the history ends with an assistant message: there is nothing to answer".into(),
        })?;
        let cut = aligned.shared.min(start);
        // Where the client's first `cut` messages end in the stored view (later than `cut`
        // when the client dropped its oldest turns).
        let stored_cut = aligned.stored_cut(cut);
        let mut all = aligned.history;
        let input = all.split_off(start);
        let (place, preamble) = match tip {
            Some(tip) if stored_cut == stored.len() => (Place::Tip(tip), all[cut..].to_vec()),
            Some(tip) => {
                // The histories part at `cut`: a branch sharing the stored prefix as read (full
                // tool outputs and all, no copy), then what the client sent from there.
                let parent = store.session(tip.session()).await?;
                let fork = Box::new(hermes_store::Fork::new(tip, stored_cut));
                // The chain where the branch parts from the stored view.
                let shared = &stored[..stored_cut.min(stored.len())];
                let chain = hermes_core::offload::heavy(shared, || {
                    hermes_core::chain_keys(hermes_core::CHAIN_START, shared)
                        .into_iter()
                        .flatten()
                        .last()
                        .unwrap_or_default()
                });
                (
                    Place::Branch {
                        parent: Box::new(parent),
                        fork,
                        chain: Some(chain),
                    },
                    all[cut..].to_vec(),
                )
            }
            None => (Place::New, all.clone()),
        };
        conversation.messages = all;
        Ok(LinedUp {
            input,
            preamble,
            place,
            carriers: aligned.counts,
            placed,
        })
    }
}

/// The target a request runs on: settled by the request, to be started, or the one a chat
/// session started ([`Exclusive`]).
enum Live {
    Settled(Box<Settled>),
    Started(Arc<Target>),
}

/// A client's history lined up: the turn's input, what is stored before it, and where.
struct LinedUp {
    input: Vec<Message>,
    preamble: Vec<Message>,
    place: Place,
    /// Re-attached, passed through and missing carriers ([`hermes_core::reattach::align`]).
    carriers: hermes_core::CarrierCounts,
    /// Whether a message of the client's stands at its place in the conversation read.
    placed: bool,
}

/// Where a lined-up turn is stored.
enum Place {
    /// At the stored session's tip (compare-and-append).
    Tip(hermes_store::Tip),
    /// On a new branch of a stored session, sharing a prefix of its view as read.
    Branch {
        /// The stored session (its title and `model_config` go to the branch).
        parent: Box<hermes_store::SessionMeta>,
        /// The prefix shared: the view read at its tip, up to where the histories part.
        fork: Box<hermes_store::Fork>,
        /// The conversation's chain state at the fork ([`hermes_core::chain_keys`]).
        chain: Option<String>,
    },
    /// In a new session.
    New,
}

/// A new session of `owner` (tenant and partition), when a gateway client's history made it.
fn owned(
    mut new: hermes_store::NewSession,
    owner: &Option<(String, Option<String>)>,
) -> hermes_store::NewSession {
    if let Some((tenant, partition)) = owner {
        new.tenant = Some(tenant.as_str().into());
        new.partition = partition.as_deref().map(Into::into);
        // A gateway conversation is found by its chain keys (`find_conversation`).
        new.chain = Some(hermes_core::CHAIN_START.to_owned());
    }
    new
}

/// How many sessions holding a history's match keys are looked at for the one where the
/// history stands at its place: enough that a conversation's own session is among them when
/// a same-tenant partner with the same call ids has branched several times (the chaos run's
/// same-tenant pairs); each is read only while no earlier one placed the history exactly.
const CANDIDATES: usize = 16;

/// The stored session of the history's tenant and partition where the latest of its assistant
/// messages any session holds stands **at its place** (docs/spec.md §10), read whole; none: a new
/// conversation. Sessions holding its match keys are read best first (latest key, then most
/// recently updated); one where only content matches — a stock reply of another
/// conversation, a turn after an edited message — is passed over.
async fn find_conversation(
    store: &Store,
    history: &History,
) -> Result<Option<hermes_store::Snapshot>, EngineError> {
    // Each message's match key, hashed once: the chain's assistant links and, failing the
    // chain, the keys looked up one by one.
    let (matched, chain) = hermes_core::offload::heavy(&history.messages, || {
        let matched: Vec<Option<String>> = history
            .messages
            .iter()
            .map(hermes_core::match_key)
            .collect();
        let chain =
            hermes_core::chain_keys_matched(hermes_core::CHAIN_START, &history.messages, &matched);
        (matched, chain)
    });
    let keys: Vec<String> = matched.into_iter().flatten().collect();
    if keys.is_empty() {
        return Ok(None);
    }
    // First by the chain keys of the last assistant messages (one index probe, however many
    // conversations share a reply); a conversation stored without them, or one the client
    // edited before its last turns, by each assistant message's own key.
    let chained: Vec<&str> = history
        .messages
        .iter()
        .zip(&chain)
        .filter(|(m, _)| m.role == Role::Assistant)
        .filter_map(|(_, key)| key.as_deref())
        .collect();
    let chained = &chained[chained.len().saturating_sub(CHAINED)..];
    let by_chain = store
        .find_by_chain(
            &history.tenant,
            history.partition.as_deref(),
            chained,
            CANDIDATES,
        )
        .await?;
    let mut by_ids = None;
    let hermes_store::Chained {
        candidates, first, ..
    } = by_chain;
    if let Some(found) = verified(store, history, candidates, first, &mut by_ids).await? {
        return Ok(Some(found));
    }
    let candidates = store
        .find_candidates(
            &history.tenant,
            history.partition.as_deref(),
            &keys,
            CANDIDATES,
        )
        .await?;
    verified(store, history, candidates, None, &mut by_ids).await?;
    Ok(by_ids)
}

/// How many of a client's last assistant messages its conversation is looked up by chain key.
const CHAINED: usize = 4;

/// The first of `candidates` where the history stands at its place with every tool result
/// equal in content too; failing that, the first where it stands at its place by
/// `tool_call_id` alone (a client that trimmed old tool output) is kept in `by_ids`. Two
/// conversations whose calls got the same ids (a deterministic model, a shared first request)
/// line up alike by ids; their results tell them apart. `first`: the first candidate, already
/// read with the lookup.
async fn verified(
    store: &Store,
    history: &History,
    candidates: Vec<String>,
    mut first: Option<hermes_store::Snapshot>,
    by_ids: &mut Option<hermes_store::Snapshot>,
) -> Result<Option<hermes_store::Snapshot>, EngineError> {
    for id in candidates {
        if by_ids.as_ref().is_some_and(|s| s.meta.id == id) {
            continue;
        }
        let snapshot = match first.take() {
            Some(read) if read.meta.id == id => read,
            _ => store.snapshot(&id).await?,
        };
        let view: Vec<Message> = snapshot.active.iter().map(|m| m.message.clone()).collect();
        let differing = hermes_core::offload::heavy(&history.messages, || {
            let aligned = align(&view, &history.messages);
            aligned
                .placed(&history.messages)
                .then(|| aligned.differing_results(&history.messages, &view))
        });
        match differing {
            Some(0) => return Ok(Some(snapshot)),
            Some(_) if by_ids.is_none() => *by_ids = Some(snapshot),
            _ => {}
        }
    }
    Ok(None)
}
