//! The request-shaped entry point a server (and any front end) calls: a [`Request`] in, a
//! [`Completion`] out ([`Engine::complete`]), or the same as a stream of [`Event`]s
//! ([`Engine::stream`]). One request is one turn: its input is stored with the first step, each
//! step whole, and nothing holds a lock on the conversation for the length of a stream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::driver::{DriverEvent, Tools};
use hermes_core::{FinishReason, Message, RawJson, Role, Sampling, ThinkingRequest, Usage};
use hermes_store::Store;

use crate::Engine;
use crate::error::EngineError;
use crate::session::{NoTools, Opened, Toolset, driver_config, new_session, open_snapshot};
use crate::settle::{Choice, Defaults};
use crate::target::{AwsLookup, KeyLookup, Limits, Target};
use crate::turn::{Destination, TurnParts, drive};

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
        }
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
    /// No tools.
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
    /// made.
    pub input: Vec<Message>,
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
}

impl Request {
    /// A request whose input is one user message `text`, on a new session, with no tools.
    pub fn user(text: &str) -> Self {
        Request {
            session: None,
            choice: Choice::default(),
            input: vec![Message::text(Role::User, text)],
            tools: ToolMode::None,
            thinking: ThinkingRequest::NoPreference,
            stream: false,
            sampling: Sampling::default(),
        }
    }

    /// Continuing stored session `id`.
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session = Some(id.into());
        self
    }

    /// With this provider, model and base URL choice.
    pub fn choice(mut self, choice: Choice) -> Self {
        self.choice = choice;
        self
    }

    /// With this input instead.
    pub fn input(mut self, input: Vec<Message>) -> Self {
        self.input = input;
        self
    }

    /// With these tools.
    pub fn tools(mut self, tools: ToolMode) -> Self {
        self.tools = tools;
        self
    }

    /// With this thinking request.
    pub fn thinking(mut self, thinking: ThinkingRequest) -> Self {
        self.thinking = thinking;
        self
    }

    /// Streamed or not.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// With these sampling parameters.
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }
}

/// What a request produced.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Completion {
    /// The stored session the turn went to: new, the one asked for, or — when that one had
    /// moved on since this request read it (another request continued it meanwhile) — a new
    /// branch of it sharing the history this request read (SPEC §10).
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

/// The events of a streamed request, in order, ending with [`Event::Done`] or
/// [`Event::Failed`]. Dropping it cancels the request: its unfinished step is not stored.
pub struct Events {
    events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    task: tokio::task::JoinHandle<()>,
}

impl Events {
    /// The next event; `None` after the last.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.recv().await
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Engine {
    /// This engine, serving requests ([`Engine::complete`], [`Engine::stream`]) from `store`
    /// with `settings`.
    pub fn with_store(mut self, store: Store, settings: Settings) -> Self {
        self.runtime = Some(Arc::new(Runtime { store, settings }));
        self
    }

    /// The settings requests are served with (none without a store).
    pub fn settings(&self) -> Option<&Settings> {
        self.runtime.as_deref().map(|r| &r.settings)
    }

    /// Whether requests can be served: the engine has a store and the store answers.
    pub async fn ready(&self) -> Result<(), EngineError> {
        let runtime = self.runtime.as_deref().ok_or_else(|| {
            EngineError::Usage("this engine serves no requests: it has no store".into())
        })?;
        Ok(runtime.store.ping().await?)
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
        let runtime = self.runtime.clone().ok_or_else(|| {
            EngineError::Usage("this engine serves no requests: it has no store".into())
        })?;
        let span = tracing::info_span!(
            "session_turn",
            session = request.session.as_deref(),
            request_id = %uuid::Uuid::now_v7().simple(),
            provider = tracing::field::Empty,
            model = tracing::field::Empty,
        );
        let result = tracing::Instrument::instrument(
            self.complete_in_span(&runtime, request, notify, &span),
            span.clone(),
        )
        .await;
        if let Ok(completion) = &result {
            span.record("session", completion.session.as_str());
        }
        result
    }

    /// [`Engine::complete`] as a stream of events, run on a task of its own (so its future is
    /// `Send` and `'static`); dropping the [`Events`] cancels it.
    pub fn stream(&self, request: Request) -> Events {
        let (sender, events) = tokio::sync::mpsc::unbounded_channel();
        let engine = self.clone();
        let task = tokio::spawn(async move {
            let forward = sender.clone();
            let notify = move |event: &DriverEvent| {
                let _ = forward.send(Event::Driver(event.clone()));
            };
            let last = match engine.complete(request.stream(true), &notify).await {
                Ok(completion) => Event::Done(completion),
                Err(error) => Event::Failed(error),
            };
            let _ = sender.send(last);
        });
        Events { events, task }
    }

    async fn complete_in_span(
        &self,
        runtime: &Runtime,
        request: Request,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
        span: &tracing::Span,
    ) -> Result<Completion, EngineError> {
        let Runtime { store, settings } = runtime;
        let Request {
            session,
            choice,
            input,
            tools,
            thinking,
            stream,
            sampling,
        } = request;
        // The one read of a resumed conversation: its row, its active view and its tip.
        let snapshot = match &session {
            Some(id) => Some(store.snapshot(id).await?),
            None => None,
        };
        let Opened {
            settled,
            thinking,
            mut conversation,
            tip,
        } = open_snapshot(
            self,
            &choice,
            snapshot,
            &settings.defaults,
            &settings.key,
            thinking,
        )?;
        span.record("provider", settled.provider.as_str());
        span.record("model", settled.model.as_str());
        let target = Target::start(self, settled, &settings.limits, settings.aws.as_ref()).await?;
        let (runner, definitions, client_tools): (&dyn Tools, _, _) = match &tools {
            ToolMode::None => (&NoTools, None, false),
            ToolMode::Server(toolset) => {
                (toolset.tools.as_ref(), toolset.definitions.clone(), false)
            }
            ToolMode::Client(definitions) => (&NoTools, Some(definitions.clone()), true),
        };
        let mut config = driver_config(thinking, stream, definitions);
        config.client_tools = client_tools;
        config.sampling = sampling;
        let landed = Mutex::new(None);
        let title = input
            .iter()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.as_ref())
            .and_then(|c| c.as_str().map(|s| s.into_owned()))
            .unwrap_or_default();
        let read = tip.as_ref().map(|t| t.session().to_owned());
        let destination = match tip {
            Some(tip) => Destination::AtTip {
                tip,
                landed: &landed,
            },
            None => Destination::New {
                new: new_session(&target.settled, thinking, &title),
                created: &landed,
                compare: true,
            },
        };
        let parts = TurnParts {
            store,
            target: &target,
            tools: runner,
            config: &config,
            limits: &settings.limits,
            reprobe_after: settings.reprobe_after,
        };
        let outcome = drive(&parts, destination, &mut conversation, input, notify).await?;
        let landed = landed.lock().ok().and_then(|mut l| l.take());
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
        })
    }
}
