//! One turn through the driver, the same for a chat session and a request: the fleet verdicts
//! of the turn, the store adapter, the driver, the turn limit, and credential refusals turned
//! into one clear error.

use std::sync::Mutex;
use std::time::Duration;

use hermes_core::driver::{Conversation, Driver, DriverConfig, DriverEvent, Tools, TurnOutcome};
use hermes_core::{CarrierSet, Message, Wait};
use hermes_store::{NewSession, Store, Tip};

use crate::error::EngineError;
use crate::fleet::FleetTurn;
use crate::log::StoreLog;
use crate::target::{Limits, Target};

/// Where a turn's steps are stored.
pub(crate) enum Destination<'a> {
    /// Appended to this stored session (its holder holds the lease).
    Stored(&'a str),
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
}

/// Runs one turn whose input is `input` (a user message, or tool results) on `conversation`,
/// storing each step at `destination` (the first together with `preamble`, what precedes the
/// input and is not stored yet), within the turn limit. Fleet re-probe claims are given
/// back when it ends (or, if it is dropped, by the turn's own drop).
pub(crate) async fn drive(
    parts: &TurnParts<'_>,
    destination: Destination<'_>,
    preamble: Vec<Message>,
    conversation: &mut Conversation,
    input: Vec<Message>,
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
    // Turns an earlier request of the conversation left out, on any replica, stay out (SPEC
    // §5a 3): marked on the history every request of this turn encodes from.
    mark_left_out(store, &mut conversation.messages).await?;
    let log = match destination {
        Destination::Stored(id) => StoreLog::stored(store, id),
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
    let result = tokio::time::timeout(limits.turn, driver.run(conversation, input)).await;
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

/// Marks the turns of `messages` whose carriers an earlier request left out for good (SPEC §5a
/// 3, [`hermes_core::left_out::LEFT_OUT_KEY`]), as the store records them.
pub(crate) async fn mark_left_out(
    store: &Store,
    messages: &mut [Message],
) -> Result<(), EngineError> {
    let ids = hermes_core::left_out::carrier_ids(messages);
    if ids.is_empty() {
        return Ok(());
    }
    let marked = store.left_out_among(&ids).await?;
    let count = hermes_core::left_out::mark(messages, &marked);
    if count > 0 {
        tracing::debug!(
            turns = count,
            "turns an earlier request left out stay out (SPEC §5a 3)"
        );
    }
    Ok(())
}
