//! Fleet verdicts in a turn: what any session of the store learned a provider refuses is left
//! out of this session's requests too, and a verdict older than the configured age is re-probed
//! once (sent again; kept if refused again, dropped if accepted).
//!
//! [`FleetTurn::start`] reads the store's verdicts for the turn's (wire, target), merges those
//! in effect into the conversation (in memory only: a session's own record, docs/spec.md §6, holds
//! only what it learned itself) and claims the old ones for a re-probe — only where the
//! session's own record does not refuse the field anyway. The store adapter
//! ([`crate::log::StoreLog`]) learns every refusal for the fleet, merges the fleet's verdicts
//! into what it hands back to the driver, and reports accepted fields here
//! ([`FleetTurn::accepted`]); [`FleetTurn::finish`] gives back claims whose field was never
//! sent.

use std::sync::Mutex;
use std::time::Duration;

use hermes_core::driver::Conversation;
use hermes_core::{CHAT_WIRE, Carrier, CarrierSet, RouteTarget, Verdicts, WireVerdicts};
use hermes_store::Store;

use crate::error::EngineError;

/// How old a fleet verdict may grow before it is re-probed, unless configured.
pub const DEFAULT_REPROBE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

/// The fleet verdicts of one turn's (wire, target).
#[derive(Debug)]
pub(crate) struct FleetTurn {
    store: Store,
    wire: String,
    target: RouteTarget,
    /// Fields refused fleet-wide and not being re-probed by this turn.
    in_effect: Vec<String>,
    /// Fields this turn claimed for a re-probe, with the claim's time; removed when settled.
    probes: Mutex<Vec<(String, i64)>>,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}

impl FleetTurn {
    /// Reads the fleet verdicts for `wire` and `target`, merges those in effect into
    /// `conversation` and claims those older than `reprobe_after` for a re-probe (a claim older
    /// than `stale_after` was left by a process that died and is taken over).
    pub(crate) async fn start(
        store: &Store,
        wire: &str,
        target: &RouteTarget,
        conversation: &mut Conversation,
        reprobe_after: Duration,
        stale_after: Duration,
    ) -> Result<FleetTurn, EngineError> {
        let now = now_ms();
        let learned_before = now.saturating_sub(millis(reprobe_after));
        let stale_before = now.saturating_sub(millis(stale_after));
        let own = own_refusals(conversation, wire, target);
        let mut in_effect = Vec::new();
        let mut probes = Vec::new();
        for verdict in store.fleet_verdicts_for(wire, target).await? {
            if verdict.learned_at < learned_before
                && !own.contains(&verdict.field)
                && let Some(since) = store
                    .claim_fleet_probe(&verdict, learned_before, stale_before)
                    .await?
            {
                tracing::info!(
                    wire,
                    provider = %target.provider,
                    host = %target.host_key(),
                    model = %target.model,
                    field = %verdict.field,
                    learned_at = verdict.learned_at,
                    "fleet verdict is old: re-probing it once"
                );
                probes.push((verdict.field, since));
                continue;
            }
            in_effect.push(verdict.field);
        }
        let turn = FleetTurn {
            store: store.clone(),
            wire: wire.to_owned(),
            target: target.clone(),
            in_effect,
            probes: Mutex::new(probes),
        };
        turn.merge_chat(&mut conversation.verdicts);
        turn.merge_wire(&mut conversation.wire_verdicts);
        Ok(turn)
    }

    /// Adds the fleet's chat-completions verdicts in effect to `verdicts` (in memory).
    pub(crate) fn merge_chat(&self, verdicts: &mut Verdicts) {
        if self.wire == CHAT_WIRE {
            let carriers = CarrierSet::of(self.in_effect.iter().filter_map(|f| Carrier::parse(f)));
            if !carriers.is_empty() {
                verdicts.record(&self.target, carriers);
            }
        }
    }

    /// Adds the fleet's verdicts in effect on another wire to `verdicts` (in memory).
    pub(crate) fn merge_wire(&self, verdicts: &mut WireVerdicts) {
        if self.wire != CHAT_WIRE && !self.in_effect.is_empty() {
            let fields: Vec<&str> = self.in_effect.iter().map(String::as_str).collect();
            verdicts.record(&self.wire, &self.target, &fields);
        }
    }

    /// A request carrying `fields` was accepted: the re-probed ones among them no longer hold,
    /// and their fleet verdicts are dropped.
    pub(crate) async fn accepted(
        &self,
        store: &Store,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<(), EngineError> {
        if wire != self.wire || *target != self.target {
            return Ok(());
        }
        let settled: Vec<(String, i64)> = {
            let mut probes = self.probes.lock().map_err(|_| poisoned())?;
            let (hit, kept) = probes
                .drain(..)
                .partition(|(field, _)| fields.contains(&field.as_str()));
            *probes = kept;
            hit
        };
        for (field, since) in settled {
            let dropped = store
                .forget_probed_fleet_verdicts(wire, target, &[&field], since)
                .await?;
            tracing::info!(
                wire,
                provider = %target.provider,
                host = %target.host_key(),
                model = %target.model,
                field = %field,
                dropped,
                "re-probed field accepted"
            );
        }
        Ok(())
    }

    /// A re-probed field was refused again: the refusal re-learned it, the claim is settled.
    pub(crate) fn refused(&self, fields: &[&str]) {
        if let Ok(mut probes) = self.probes.lock() {
            probes.retain(|(field, _)| !fields.contains(&field.as_str()));
        }
    }

    /// Gives back the claims whose field this turn never sent.
    pub(crate) async fn finish(&self) -> Result<(), EngineError> {
        let left: Vec<(String, i64)> =
            std::mem::take(&mut *self.probes.lock().map_err(|_| poisoned())?);
        give_back(&self.store, &self.wire, &self.target, left).await
    }
}

async fn give_back(
    store: &Store,
    wire: &str,
    target: &RouteTarget,
    claims: Vec<(String, i64)>,
) -> Result<(), EngineError> {
    for (field, since) in claims {
        store
            .release_fleet_probes(wire, target, &[&field], since)
            .await?;
    }
    Ok(())
}

impl Drop for FleetTurn {
    /// A turn dropped before [`FleetTurn::finish`] (its request was cancelled) gives its
    /// claims back from a task of its own, so another session may re-probe now rather than
    /// after the claims lapse.
    fn drop(&mut self) {
        let claims = std::mem::take(
            &mut *self
                .probes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if claims.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, wire, target) = (self.store.clone(), self.wire.clone(), self.target.clone());
        runtime.spawn(async move {
            if let Err(e) = give_back(&store, &wire, &target, claims).await {
                tracing::warn!(error = %e, "cannot give back a cancelled turn's re-probe claims; they lapse on their own");
            }
        });
    }
}

fn poisoned() -> EngineError {
    EngineError::Failed("the fleet verdict lock was poisoned".into())
}

/// The fields the session's own record refuses on `wire` for `target`.
fn own_refusals(conversation: &Conversation, wire: &str, target: &RouteTarget) -> Vec<String> {
    if wire == CHAT_WIRE {
        conversation
            .verdicts
            .refused_for(target)
            .iter()
            .map(|c| c.field().to_owned())
            .collect()
    } else {
        conversation
            .wire_verdicts
            .refused_for(wire, target)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}
