//! One turn through the driver, the same for a chat session and a request: the fleet verdicts
//! of the turn, the store adapter, the driver, the turn limit, and credential refusals turned
//! into one clear error.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use hermes_core::driver::{
    Conversation, Driver, DriverConfig, DriverError, DriverEvent, Step, Tools, TurnOutcome,
};
use hermes_core::{CarrierSet, Message, Passthrough, Role, Wait};
use hermes_store::{NewSession, Store, Tip};

use crate::error::EngineError;
use crate::fleet::FleetTurn;
use crate::log::StoreLog;
use crate::target::{Limits, Target};

/// Where a turn's steps are stored.
pub(crate) enum Destination<'a> {
    /// Appended to this stored session (its holder holds the lease).
    Stored(String),
    /// Appended to the session `tip` names only while it still ends there (compare-and-append,
    /// no lease); otherwise on a branch of it, whose id is written to `landed`.
    AtTip {
        /// Where the session ended when the request read it.
        tip: Tip,
        /// Where a branch's id is written.
        landed: &'a Mutex<Option<String>>,
    },
    /// A new session, created with the first step; its id is written to `created` at once.
    New {
        /// What it is created with (boxed: the other variants are far smaller).
        new: Box<NewSession>,
        /// Where its id is written.
        created: &'a Mutex<Option<String>>,
        /// Later steps compare-and-append (a request) rather than append under a lease.
        compare: bool,
    },
}

/// Everything a turn runs with besides its conversation and input.
pub(crate) struct TurnParts<'a> {
    pub(crate) store: &'a Store,
    pub(crate) target: &'a Target,
    pub(crate) tools: &'a dyn Tools,
    pub(crate) config: &'a DriverConfig,
    pub(crate) limits: &'a Limits,
    pub(crate) reprobe_after: Duration,
    /// Carriers the client sent itself (a gateway request's unverified ones): their refusals
    /// are the session's verdicts only.
    pub(crate) unverified: CarrierSet,
    /// The request's idempotency claim, turned into its receipt by each stored step.
    pub(crate) receipt: Option<&'a crate::receipt::Pending>,
    /// What the read of the stored view already said of its turns' carriers being left out.
    pub(crate) left_out: &'a LeftOutKnown,
}

/// What a turn does.
pub(crate) enum Work {
    /// Answers `input` (a user message, or tool results), running tools as the config says.
    Turn(Vec<Message>),
    /// Stores a checkpoint of the conversation as sent (nothing to answer, no tool run): the
    /// provider's compaction asked with `native`'s passthrough when the route has one, else —
    /// or when it fails, or its reply holds no compaction — hermes' summary
    /// ([`hermes_compaction::SUMMARY_INSTRUCTIONS`] after the conversation).
    Checkpoint {
        /// The provider compaction request's passthrough, on a route with one.
        native: Option<Passthrough>,
    },
}

/// Runs one turn doing `work` (answering its input, or a checkpoint) on `conversation`,
/// storing each step at `destination` (the first together with `preamble`, what precedes the
/// input and is not stored yet), within the turn limit. Fleet re-probe claims are given
/// back when it ends (or, if it is dropped, by the turn's own drop).
pub(crate) async fn drive(
    parts: &TurnParts<'_>,
    destination: Destination<'_>,
    preamble: Vec<Message>,
    conversation: &mut Conversation,
    work: Work,
    notify: &(dyn Fn(&DriverEvent) + Send + Sync),
) -> Result<TurnOutcome, EngineError> {
    let TurnParts {
        store,
        target,
        tools,
        config,
        limits,
        reprobe_after,
        unverified,
        receipt,
        left_out,
    } = *parts;
    let fleet = FleetTurn::start(
        store,
        target.transport.wire().id(),
        &target.decision.target,
        conversation,
        reprobe_after,
        // A claim older than any turn can last was left by a process that died.
        limits.turn + Duration::from_secs(60),
    )
    .await?;
    // Turns an earlier request of the conversation left out, on any replica, stay out (docs/spec.md
    // §5a 3): marked on the history every request of this turn encodes from.
    mark_left_out(store, &mut conversation.messages, left_out).await?;
    let log = match destination {
        Destination::Stored(id) => StoreLog::stored(store, &id),
        Destination::AtTip { tip, landed } => StoreLog::at_tip(store, tip, landed),
        Destination::New {
            new,
            created,
            compare,
        } => StoreLog::new_session(store, new, created, compare),
    }
    .with_preamble(preamble)
    .with_fleet(&fleet)
    .notifying(notify)
    .session_only(unverified)
    .with_receipt(receipt);
    // The spans of this target's requests name its server (the target may change between
    // turns: `/model`).
    let mut config = config.clone();
    config.telemetry = target.telemetry.clone();
    let config = &config;
    let driver = Driver {
        decision: &target.decision,
        wire: target.transport.wire(),
        log: &log,
        tools,
        config,
        notify,
    };
    let run = async {
        match work {
            Work::Turn(input) => driver.run(conversation, input).await,
            Work::Checkpoint { native } => checkpoint(&driver, conversation, native).await,
        }
    };
    let result = tokio::time::timeout(limits.turn, run).await;
    if let Err(e) = fleet.finish().await {
        tracing::warn!(error = %e, "cannot give back fleet verdict re-probe claims; they lapse on their own");
    }
    match result {
        Ok(result) => result.map_err(|e| crate::target::credential_error(&target.settled, e)),
        Err(_) => Err(EngineError::Timeout {
            wait: Wait::Turn,
            message: format!(
                "the turn took longer than {} s (turn limit); every finished step is stored, the unfinished one is not",
                limits.turn.as_secs()
            ),
        }),
    }
}

/// [`Work::Checkpoint`]: one reply to `conversation` as it is, stored alone as the turn's one
/// step (after the destination's preamble). With `native`, the provider's compaction is asked
/// first (its passthrough, never streamed); a failure or a reply without a compaction block or
/// item is logged and hermes' summary is asked instead, the instructions stored before it.
async fn checkpoint(
    driver: &Driver<'_>,
    conversation: &mut Conversation,
    native: Option<Passthrough>,
) -> Result<TurnOutcome, DriverError> {
    let mut outcome = TurnOutcome::default();
    let mut stored = Vec::new();
    let mut answer = None;
    // What a provider's reply without a compaction cost: paid for, so counted with the step.
    let mut unused = None;
    if let Some(passthrough) = native {
        let mut config = driver.config.clone();
        config.passthrough = passthrough;
        config.stream = false;
        let native = Driver {
            config: &config,
            ..*driver
        };
        outcome.requests += 1;
        match native.reply(conversation).await {
            Ok(reply) if hermes_core::checkpoint::native_compaction(&reply.message).is_some() => {
                answer = Some(reply);
            }
            Ok(reply) => {
                tracing::warn!(
                    "the provider's compaction reply held no compaction; hermes summarises instead"
                );
                unused = reply.meta.usage;
            }
            Err(e) => tracing::warn!(
                error = %e,
                "the provider's compaction failed; hermes summarises instead"
            ),
        }
    }
    let reply = match answer {
        Some(reply) => reply,
        None => {
            let instructions = Message::text(Role::User, hermes_compaction::SUMMARY_INSTRUCTIONS);
            conversation.messages.push(instructions.clone());
            outcome.requests += 1;
            let reply = driver.reply(conversation).await;
            conversation.messages.pop();
            stored.push(instructions);
            reply?
        }
    };
    stored.push(reply.message.clone());
    let usage = match (unused, reply.meta.usage) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    };
    let step = Step::reply(&stored, usage.as_ref(), reply.meta.finish.as_ref());
    driver.log.commit(&step).await.map_err(DriverError::Log)?;
    if let Some(usage) = usage {
        outcome.usage.push(usage);
    }
    outcome.finish = reply.meta.finish;
    conversation.messages.extend(stored);
    outcome.new_messages.push(reply.message);
    Ok(outcome)
}

/// Which stored turns an earlier request left out for good, as the read of the view said
/// ([`hermes_store::StoredMessage::carrier`]): the carrier ids it checked and those it found
/// marked. [`mark_left_out`] looks up only the ids it did not check (a client's own carriers,
/// rows written before carrier ids were stored).
#[derive(Clone, Debug, Default)]
pub(crate) struct LeftOutKnown {
    checked: BTreeSet<String>,
    marked: BTreeSet<String>,
}

impl LeftOutKnown {
    /// What the view `active` says.
    pub(crate) fn of(active: &[hermes_store::StoredMessage]) -> LeftOutKnown {
        let mut known = LeftOutKnown::default();
        for state in active.iter().filter_map(|m| m.carrier.as_ref()) {
            if state.left_out {
                known.marked.insert(state.id.clone());
            }
            known.checked.insert(state.id.clone());
        }
        known
    }
}

/// Marks the turns of `messages` whose carriers an earlier request left out for good (docs/spec.md
/// §5a 3, [`hermes_core::left_out::LEFT_OUT_KEY`]), as the store records them: what `known` says
/// of the turns the view read, and one lookup for any other carrier id.
pub(crate) async fn mark_left_out(
    store: &Store,
    messages: &mut [Message],
    known: &LeftOutKnown,
) -> Result<(), EngineError> {
    let ids = hermes_core::left_out::carrier_ids(messages);
    if ids.is_empty() {
        return Ok(());
    }
    let unknown: Vec<String> = ids
        .into_iter()
        .filter(|id| !known.checked.contains(id))
        .collect();
    let mut marked = known.marked.clone();
    if !unknown.is_empty() {
        marked.extend(store.left_out_among(&unknown).await?);
    }
    let count = hermes_core::left_out::mark(messages, &marked);
    if count > 0 {
        tracing::debug!(
            turns = count,
            "turns an earlier request left out stay out (docs/spec.md §5a 3)"
        );
    }
    Ok(())
}
