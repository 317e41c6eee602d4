//! A chat in progress: the stored session, the settled target and its route, the wire, the
//! tools a front end supplies, and the conversation — opened, resumed, driven turn by turn,
//! compacted, branched and switched to another model.

use std::sync::Arc;

use hermes_core::driver::{Conversation, DriverConfig, DriverEvent};
use hermes_core::{
    Message, RawJson, ResolveOptions, Role, RouteDecision, RouteTarget, ThinkingRequest,
};
use hermes_store::{Store, StoredThinking};

use crate::Engine;
use crate::error::EngineError;
use crate::lease::Held;
use crate::log::StoreLog;
use crate::open::{NoTools, Opened, Toolset, driver_config, open_snapshot};
use crate::request::{Completion, Exclusive, Request, ServingEngine, Settings, ToolMode};
use crate::settle::{Choice, Defaults, Purpose, Settled};
use crate::summarize::TransportSummarizer;
use crate::target::Target;

/// What an on-demand compaction ends with: its status line, or `None` when there was nothing to
/// summarise.
type Compacted = Result<Option<String>, EngineError>;

/// What an on-demand (provider's own) compaction works on: the stored session `id`, its active
/// `rows` (read as `history`) and the span `start..end` of them it summarises
/// ([`crate::compaction::native_span`]).
#[derive(Clone, Copy)]
struct NativeSpan<'a> {
    id: &'a str,
    rows: &'a [hermes_store::StoredMessage],
    history: &'a [Message],
    start: usize,
    end: usize,
}

/// How to open a chat session.
#[non_exhaustive]
pub struct OpenOptions {
    /// The command line's choice.
    pub choice: Choice,
    /// Continue this stored session.
    pub resume: Option<String>,
    /// The command line's thinking request (`--effort E` / `--no-thinking`;
    /// [`ThinkingRequest::NoPreference`] when it gave neither). The session's request settles
    /// as [`settle_thinking`](crate::settle_thinking) says: this, else the resumed session's stored request, else
    /// `config.toml`'s `effort` (in the settings' defaults).
    pub thinking: ThinkingRequest,
    /// Stream replies.
    pub stream: bool,
    /// Compaction overrides from config.
    pub compaction: hermes_compaction::CompactionOverrides,
    /// What the session's requests run with, as a gateway's do: `config.toml`'s defaults, key
    /// and AWS lookups, bounded waits, how old a fleet verdict may grow before it is re-probed
    /// ([`DEFAULT_REPROBE_AFTER`](crate::DEFAULT_REPROBE_AFTER) unless set).
    pub settings: Settings,
}

impl OpenOptions {
    /// Options for `choice` with everything else at its default (no resume, no thinking
    /// preference, whole replies, no key lookups).
    pub fn new(choice: Choice) -> Self {
        OpenOptions {
            choice,
            resume: None,
            thinking: ThinkingRequest::NoPreference,
            stream: false,
            compaction: hermes_compaction::CompactionOverrides::default(),
            settings: Settings::new(Defaults::default(), Arc::new(|_| None)),
        }
    }

    hermes_core::setters! {
        /// With these settings (a front end's, as `hermes_config` reads them once).
        settings: Settings;

        /// Resuming session `id`.
        resume: Option<String>;

        /// With the command line's thinking request (`--effort` / `--no-thinking` only: config's
        /// default effort goes in [`Defaults::effort`]).
        thinking: ThinkingRequest;

        /// Streaming or not.
        stream: bool;

        /// With compaction overrides.
        compaction: hermes_compaction::CompactionOverrides;
    }
}

/// A chat in progress: a front end's conversation with one stored session, each turn a
/// [`Request`] on the engine's one request path ([`ServingEngine::complete`]) under the
/// exclusive policy — the session's lease instead of compare-and-append, its target started
/// once.
pub struct ChatSession {
    /// The engine, serving from the session's store with its settings.
    serving: ServingEngine,
    target: Arc<Target>,
    tools: Toolset,
    driver_config: DriverConfig,
    compaction_overrides: hermes_compaction::CompactionOverrides,
    compaction: hermes_compaction::CompactionConfig,
    /// History length when automatic compaction last could not get under the trigger.
    unfit_at: Option<usize>,
    id: Option<String>,
    /// Written by the turn that creates the session, with its first step.
    created: Arc<std::sync::Mutex<Option<String>>>,
    /// This process's lease on the stored session.
    lease: Option<Held>,
    /// The conversation as the last turn (or the open) left it: the stored active view and
    /// the verdicts.
    pub conversation: Conversation,
}

impl ChatSession {
    /// Settles the target (flags > resumed session > config > registry) and the thinking request
    /// ([`settle_thinking`](crate::settle_thinking): flags > resumed session > config's `effort`), resumes when asked,
    /// and starts the simulator for `--provider sim`. A resumed session given a thinking flag
    /// stores it, so its next resume keeps it; a new session stores its request with its first
    /// step.
    #[tracing::instrument(name = "session_open", skip_all, fields(resume = options.resume.as_deref()))]
    pub async fn open(
        engine: &Engine,
        store: Store,
        options: OpenOptions,
        tools: Toolset,
    ) -> Result<ChatSession, EngineError> {
        let settings = options.settings;
        // One process drives a session at a time: take the lease before reading it.
        let lease = match &options.resume {
            Some(id) => {
                store.session(id).await?;
                Some(Held::acquire(&engine.local, &store, id, settings.limits.lease_wait).await?)
            }
            None => None,
        };
        // One read: the row (verdicts, thinking request) and the active view.
        let snapshot = match &options.resume {
            Some(id) => Some(store.snapshot(id).await?),
            None => None,
        };
        let Opened {
            settled,
            thinking,
            conversation,
            tip,
            // Each turn reads its view, and what it says of left-out carriers, afresh.
            left_out: _,
        } = open_snapshot(
            engine,
            &options.choice,
            snapshot,
            &settings.defaults,
            &settings.key,
            options.thinking,
        )?;
        let id = tip.map(|t| t.session().to_owned());
        if let (Some(id), true, Some(url)) = (&id, settled.base_url_named, &settled.base_url) {
            // The user named the URL again: from now on the session's URL is their word.
            store.confirm_base_url(id, url).await?;
        }
        let compaction =
            hermes_compaction::CompactionConfig::for_model(&settled.model, &options.compaction);
        let target =
            Target::start(engine, settled, &settings.limits, settings.aws.as_ref()).await?;
        if let (Some(id), Some(flags)) = (&id, StoredThinking::from_request(options.thinking)) {
            // The user asked again: from now on the session thinks this way.
            store.set_thinking(id, Some(flags)).await?;
        }
        let mut driver_config = driver_config(thinking, options.stream, tools.definitions.clone());
        driver_config.passthrough = crate::compaction::threshold(&target, &options.compaction);
        Ok(ChatSession {
            serving: engine.clone().with_store(store, settings),
            target: Arc::new(target),
            tools,
            driver_config,
            compaction_overrides: options.compaction,
            compaction,
            unfit_at: None,
            id,
            created: Arc::default(),
            lease,
            conversation,
        })
    }

    /// The route requests resolve to.
    pub fn decision(&self) -> &RouteDecision {
        &self.target.decision
    }

    /// Where the session runs.
    pub fn settled(&self) -> &Settled {
        &self.target.settled
    }

    /// The in-process simulator of `--provider sim`, when it is a `T` (the engine's
    /// [`Simulators`](crate::Simulators) started it; hermes-sim's records every request it
    /// received); none for a real provider.
    pub fn simulator<T: std::any::Any>(&self) -> Option<&T> {
        self.target.sim.as_ref()?.simulator()
    }

    /// The stored session's id, once the first turn (or `--resume`) made one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.serving.runtime.store
    }

    /// True when replies stream.
    pub fn streaming(&self) -> bool {
        self.driver_config.stream
    }

    /// The thinking request every request of this session carries (settled when it was opened;
    /// `/model` keeps it). What the session stores is [`Store::thinking`].
    pub fn thinking(&self) -> ThinkingRequest {
        self.driver_config.thinking
    }

    /// Runs one user turn with its tool loop, as a [`Request`] through [`ServingEngine::complete`]
    /// with the session's tools run by the engine: the stored view read once, each step stored
    /// whole; a new session is created with its first step, so a first turn that fails stores
    /// nothing. Afterwards [`ChatSession::conversation`] is what the turn left (after a failed
    /// turn, what is stored).
    ///
    /// Runs in the request's `session_turn` span (the session id, a fresh `request_id`, the
    /// provider and the model); each upstream request is an `upstream_request` span inside it.
    pub async fn turn(
        &mut self,
        text: &str,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
    ) -> Result<Completion, EngineError> {
        self.hold_lease().await?;
        let mut request = Request::user(text)
            .tools(ToolMode::Server(self.tools.clone()))
            .thinking(self.driver_config.thinking)
            .stream(self.driver_config.stream)
            .passthrough(self.driver_config.passthrough.clone())
            .exclusive(Exclusive {
                target: self.target.clone(),
                created: self.created.clone(),
            });
        request.session = self.id.clone();
        let result = self.serving.complete(request, notify).await;
        self.adopt_created();
        match result {
            Ok(mut completion) => {
                if let Some(conversation) = completion.conversation.take() {
                    self.conversation = *conversation;
                }
                // A turn that created the session takes its lease now.
                if self.lease.is_none() {
                    self.hold_lease().await?;
                }
                Ok(completion)
            }
            Err(e) => {
                // Every finished step is stored whole; memory goes back to what is stored.
                if let Err(reload) = self.reload().await {
                    tracing::warn!(error = %reload, "cannot read the session back after a failed turn");
                }
                Err(e)
            }
        }
    }

    /// Continues on another provider and model (`/model`), through the same settlement; the
    /// stored history does not change — what the new target may receive is decided per
    /// request (docs/spec.md §2). The session's thinking request stays as it is.
    pub async fn switch_model(
        &mut self,
        provider: &str,
        model: &str,
    ) -> Result<&Settled, EngineError> {
        let choice = Choice::new(Some(provider), Some(model), None);
        let Settings {
            defaults,
            key,
            aws,
            limits,
            ..
        } = &self.serving.runtime.settings;
        self.serving
            .engine
            .check_provider(&choice, None, defaults)?;
        let settled =
            self.serving
                .engine
                .settle(Purpose::Send, &choice, None, defaults, &|var: &str| {
                    key(var)
                })?;
        self.compaction = hermes_compaction::CompactionConfig::for_model(
            &settled.model,
            &self.compaction_overrides,
        );
        self.target =
            Arc::new(Target::start(&self.serving.engine, settled, limits, aws.as_ref()).await?);
        self.driver_config.passthrough =
            crate::compaction::threshold(&self.target, &self.compaction_overrides);
        self.unfit_at = None;
        if let Some(id) = &self.id {
            let settled = &self.target.settled;
            self.serving
                .runtime
                .store
                .set_target(
                    id,
                    &settled.provider,
                    &settled.model,
                    settled.base_url.as_deref(),
                )
                .await?;
        }
        Ok(&self.target.settled)
    }

    /// Compacts the stored session (docs/spec.md §7): summarises the middle with the session's own
    /// provider, clears old tool outputs when that is not enough, archives what left the active
    /// view (never deletes it) and reloads. `manual` summarises everything it may (`/compact`);
    /// otherwise only enough to get under the trigger. Returns the status line, or `None` when
    /// nothing could shrink.
    pub async fn compact(&mut self, manual: bool) -> Result<Option<String>, EngineError> {
        let Some(id) = self.id.clone() else {
            return Ok(None);
        };
        let rows = self.serving.runtime.store.active(&id).await?;
        let history: Vec<Message> = rows.iter().map(|r| r.message.clone()).collect();
        let mut native_failed = None;
        if let Some(native) = self.target.transport.wire().native_compaction() {
            let protect_last = self.compaction.protect_last;
            let native = match crate::compaction::native_span(&history, manual, protect_last) {
                // Nothing to summarise.
                None => Ok(None),
                Some((start, end)) => {
                    let span = NativeSpan {
                        id: &id,
                        rows: &rows,
                        history: &history,
                        start,
                        end,
                    };
                    self.compact_natively(native, span).await
                }
            };
            match native {
                Ok(line) => return Ok(line),
                // The provider's compaction failed: hermes compacts itself, and says so.
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "the provider's compaction failed; hermes compacts the session itself"
                    );
                    native_failed = Some(e.to_string());
                }
            }
        }
        let mut config = self.compaction;
        if manual {
            config.target_percent = 0;
        }
        let log = StoreLog::stored(&self.serving.runtime.store, &id);
        let summarizer = self.summarizer(&log);
        let decision = &self.target.decision;
        let mut summary_failed = None;
        let result =
            match hermes_compaction::compress(&history, decision, &config, &summarizer).await {
                Ok(result) => result,
                // The summary request failed: clearing old tool outputs may still be enough.
                Err(e) => {
                    tracing::warn!(error = %e, "summary failed; trying the salvage pass");
                    summary_failed = Some(e);
                    hermes_compaction::salvage(&history, decision, &config)
                }
            };
        let Some(result) = result else {
            // Asked for by the user, a failed summary is their answer, not "nothing to do".
            return match summary_failed {
                Some(e) if manual => Err(EngineError::Failed(format!(
                    "could not compact: the summary request failed ({e}); nothing was changed"
                ))),
                _ => Ok(None),
            };
        };
        let plan = crate::compaction::plan(&id, &rows, &result)?;
        self.serving
            .runtime
            .store
            .apply_compaction(&id, &plan)
            .await?;
        self.conversation.messages = self.serving.runtime.store.messages(&id).await?;
        self.unfit_at = (!result.fits).then_some(self.conversation.messages.len());
        Ok(Some(match native_failed {
            Some(e) => format!(
                "the provider's compaction failed ({e}); hermes compacted itself: {}",
                result.status_line()
            ),
            None => result.status_line(),
        }))
    }

    /// Compacts `span` of the stored session with the provider's own compaction (docs/spec.md
    /// §7), as the wire describes it (`native`): the span's messages go with its compaction
    /// request (Anthropic's on-demand `compaction` field and beta, or OpenAI's
    /// `POST /responses/compact`); the reply — the provider's `compaction` block or item,
    /// verbatim — is stored as a checkpoint in the span's place, with hermes' own summary beside
    /// it where the wire wants one (for every other model) and as the wire finishes it (the
    /// Anthropic wire stamps the digests of the turns it keeps); the kept turns follow it
    /// verbatim.
    async fn compact_natively(
        &mut self,
        native: hermes_core::NativeCompaction,
        span: NativeSpan<'_>,
    ) -> Compacted {
        use hermes_compaction::Summarizer as _;
        let log = StoreLog::stored(&self.serving.runtime.store, span.id);
        let summary = if native.with_summary {
            let summary = self
                .summarizer(&log)
                .summarize(&span.history[span.start..span.end])
                .await
                .map_err(|e| EngineError::Failed(format!("the summary request failed ({e})")))?;
            Some(summary)
        } else {
            None
        };
        let mut checkpoint = self
            .provider_compaction(
                &log,
                &span.history[..span.end],
                (native.request)(&hermes_core::Passthrough::new()),
                native.streams && self.driver_config.stream,
                native.what,
            )
            .await?;
        if let Some(summary) = summary {
            checkpoint.extra.push((
                hermes_core::checkpoint::SUMMARY_KEY.to_owned(),
                RawJson::string(summary.trim()),
            ));
        }
        let tools = self.tools.definitions.as_ref();
        (native.finish)(&mut checkpoint, span.history, span.start, span.end, tools);
        let (before, after) = self.store_checkpoint(span, checkpoint).await?;
        Ok(Some(format!(
            "context compacted by the provider ({}): {} → {} messages, ~{before} → ~{after} tokens (summary of {} messages; the kept turns keep their {})",
            native.how,
            span.history.len(),
            self.conversation.messages.len(),
            span.end - span.start,
            native.keeps,
        )))
    }

    /// The summarizer of the session's own model and route, its request logged to `log`.
    fn summarizer<'a>(&'a self, log: &'a StoreLog<'a>) -> TransportSummarizer<'a> {
        TransportSummarizer {
            wire: self.target.transport.wire(),
            decision: &self.target.decision,
            verdicts: &self.conversation.verdicts,
            wire_verdicts: &self.conversation.wire_verdicts,
            log,
            tools: self.tools.definitions.as_ref(),
        }
    }

    /// Stores an on-demand compaction's `checkpoint` in place of `span`, reloads the conversation and notes whether it
    /// still overflows: the estimates of the history before and after, in tokens.
    async fn store_checkpoint(
        &mut self,
        span: NativeSpan<'_>,
        checkpoint: Message,
    ) -> Result<(usize, usize), EngineError> {
        let plan = crate::compaction::native_plan(span.rows, span.start, span.end, checkpoint);
        self.serving
            .runtime
            .store
            .apply_compaction(span.id, &plan)
            .await?;
        self.conversation.messages = self.serving.runtime.store.messages(span.id).await?;
        let decision = &self.target.decision;
        let before = hermes_core::estimate_history(span.history, decision);
        let after = hermes_core::estimate_history(&self.conversation.messages, decision);
        self.unfit_at = self
            .compaction
            .over(after)
            .then_some(self.conversation.messages.len());
        Ok((before, after))
    }

    /// The pre-flight check before a turn: compacts when the estimate crossed the trigger.
    pub async fn preflight(&mut self) -> Result<Option<String>, EngineError> {
        if self.id.is_none() {
            return Ok(None);
        }
        // Cheap: every text remembers its token count after the first estimate.
        let estimate =
            hermes_core::estimate_history(&self.conversation.messages, &self.target.decision);
        // After a compaction that could not get under the trigger, wait for the history to
        // grow by a protected tail's worth before trying again.
        let retry_after = self
            .unfit_at
            .map_or(0, |n| n + self.compaction.protect_last);
        if !self.compaction.over(estimate) || self.conversation.messages.len() < retry_after {
            return Ok(None);
        }
        self.compact(false).await
    }

    /// The provider's own compaction of `history` (its wire's compaction request in
    /// `passthrough`), asked once with the session's thinking and tools and no tool run: the
    /// reply, which must hold the compaction `what` (Anthropic's block, OpenAI's item).
    async fn provider_compaction(
        &self,
        log: &StoreLog<'_>,
        history: &[Message],
        passthrough: hermes_core::Passthrough,
        stream: bool,
        what: &str,
    ) -> Result<Message, EngineError> {
        let mut config = DriverConfig::default();
        config.thinking = self.driver_config.thinking;
        config.stream = stream;
        config.tools = self.tools.definitions.clone();
        config.passthrough = passthrough;
        let driver = hermes_core::driver::Driver {
            decision: &self.target.decision,
            wire: self.target.transport.wire(),
            log,
            tools: &NoTools,
            config: &config,
            notify: &|_| {},
        };
        let mut conversation = hermes_core::driver::Conversation {
            messages: history.to_vec(),
            verdicts: self.conversation.verdicts.clone(),
            wire_verdicts: self.conversation.wire_verdicts.clone(),
        };
        let reply = driver
            .reply(&mut conversation)
            .await
            .map_err(|e| EngineError::Failed(e.to_string()))?;
        if hermes_core::checkpoint::native_compaction(&reply.message).is_none() {
            return Err(EngineError::Failed(format!(
                "the provider's compaction reply held no compaction {what}"
            )));
        }
        Ok(reply.message)
    }

    /// Holds the lease on the stored session: taken when this session was just created or
    /// branched, or when it was lost. Each turn reads the stored view itself, so nothing else
    /// is read here.
    async fn hold_lease(&mut self) -> Result<(), EngineError> {
        self.adopt_created();
        let Some(id) = self.id.clone() else {
            return Ok(());
        };
        let held = self
            .lease
            .as_ref()
            .is_some_and(|l| l.session() == id && !l.lost());
        if !held {
            if let Some(old) = self.lease.take() {
                old.release().await?;
            }
            let wait = self.serving.runtime.settings.limits.lease_wait;
            self.lease = Some(
                Held::acquire(
                    &self.serving.engine.local,
                    &self.serving.runtime.store,
                    &id,
                    wait,
                )
                .await?,
            );
        }
        Ok(())
    }

    /// Gives the session back to other processes (its lease). Dropping a session without
    /// closing it lets its lease run out instead.
    pub async fn close(mut self) -> Result<(), EngineError> {
        if let Some(lease) = self.lease.take() {
            lease.release().await?;
        }
        Ok(())
    }

    /// Takes the id of a session a turn created (even one cancelled after its first step).
    fn adopt_created(&mut self) {
        if self.id.is_none()
            && let Ok(mut created) = self.created.lock()
        {
            self.id = created.take();
        }
    }

    /// Reloads the conversation from the store (after a cancelled turn): what memory holds is
    /// what is stored, and nothing else.
    pub async fn reload(&mut self) -> Result<(), EngineError> {
        self.adopt_created();
        match &self.id {
            Some(id) => {
                self.conversation.messages = self.serving.runtime.store.messages(id).await?
            }
            None => self.conversation.messages.clear(),
        }
        Ok(())
    }

    /// Branches the current session (all messages) and continues on the branch; returns
    /// (parent, branch).
    pub async fn branch(&mut self) -> Result<(String, String), EngineError> {
        let id = self.id.clone().ok_or_else(|| {
            EngineError::Usage("nothing to branch yet: send a message first".into())
        })?;
        let branch = self.serving.runtime.store.branch(&id, None).await?;
        self.id = Some(branch.clone());
        Ok((id, branch))
    }

    /// The target a route is resolved for, for display.
    pub fn target(&self) -> &RouteTarget {
        &self.target.decision.target
    }

    /// Resolve options of this session (config's `reasoning_echo`).
    pub fn resolve_options(&self) -> ResolveOptions {
        ResolveOptions {
            reasoning_echo: self.target.settled.reasoning_echo,
        }
    }
}

/// The text of a turn's final answer.
pub fn reply_text(completion: &Completion) -> String {
    completion
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| m.content.as_ref())
        .and_then(|c| c.as_str().map(|s| s.into_owned()))
        .unwrap_or_default()
}
