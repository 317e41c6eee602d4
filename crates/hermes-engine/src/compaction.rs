//! The compaction → store mapping: what `compress()` returned, as the rows the store archives
//! and the rows it inserts where they stood.

use hermes_compaction::{Compaction, Source};
use hermes_store::{CompactionPlan, PlannedInsert, RowKind, StoredMessage};

use crate::error::EngineError;

/// The store's plan for `result`, computed over the active rows it was computed from.
pub(crate) fn plan(
    session: &str,
    rows: &[StoredMessage],
    result: &Compaction,
) -> Result<CompactionPlan, EngineError> {
    let corrupt = |message: &str| EngineError::Corrupt {
        session: session.to_owned(),
        message: message.to_owned(),
    };
    let position = |i: usize| {
        rows.get(i)
            .map(|r| r.position)
            .ok_or_else(|| corrupt("compaction named a message that is not there"))
    };
    let archive = result
        .archived
        .iter()
        .map(|&i| position(i))
        .collect::<Result<Vec<i64>, _>>()?;
    let mut inserts = Vec::new();
    for (message, source) in result.active.iter().zip(&result.sources) {
        let slot = match source {
            Source::Kept(_) => continue,
            Source::Shrunk(i) => position(*i)?,
            Source::Checkpoint => position(
                result
                    .checkpoint_slot
                    .ok_or_else(|| corrupt("a checkpoint without a slot"))?,
            )?,
        };
        inserts.push(PlannedInsert {
            slot,
            message: message.clone(),
            kind: if hermes_compaction::is_checkpoint(message) {
                RowKind::Checkpoint
            } else {
                RowKind::Message
            },
        });
    }
    Ok(CompactionPlan { archive, inserts })
}

/// What every turn's request passes through to ask the provider to compact by itself past
/// `overrides.provider_threshold` (docs/spec.md §7), on a wire whose target has a compaction of
/// the provider's own ([`hermes_core::Wire::native_compaction`]: on the Responses wire to OpenAI
/// `context_management: [{"type": "compaction", "compact_threshold": N}]`; on a Claude host the
/// `compact_20260112` edit with its beta). Nothing otherwise.
pub(crate) fn threshold(
    target: &crate::target::Target,
    overrides: &hermes_compaction::CompactionOverrides,
) -> hermes_core::Passthrough {
    match (
        overrides.provider_threshold,
        target.transport.wire().native_compaction(),
    ) {
        (Some(n), Some(native)) => (native.threshold)(n),
        _ => hermes_core::Passthrough::new(),
    }
}

/// The passthrough of a gateway compaction request ([`crate::Request::compact`]) on a target
/// whose compaction is the provider's ([`hermes_core::Wire::native_compaction`]'s `request`,
/// given the request's own passthrough). `None` elsewhere: hermes summarises.
pub(crate) fn native_request(
    target: &crate::target::Target,
    passthrough: &hermes_core::Passthrough,
) -> Option<hermes_core::Passthrough> {
    let native = target.transport.wire().native_compaction()?;
    Some((native.request)(passthrough))
}

/// The span an on-demand compaction summarises, `start..end`, or `None` when there is nothing
/// to summarise. The provider's block stands for everything before the kept turns, so the span
/// starts at the first message after the leading system prompt; it ends at a real user message
/// (the kept turns start a turn, whole, with their thinking), after the latest earlier
/// checkpoint (which it supersedes). A manual `/compact` keeps only the latest turn; the
/// pre-flight trigger keeps at least `protect_last` messages where the turns allow it.
pub(crate) fn native_span(
    history: &[hermes_core::Message],
    manual: bool,
    protect_last: usize,
) -> Option<(usize, usize)> {
    use hermes_core::Role;
    let n = history.len();
    let start = history
        .iter()
        .position(|m| !matches!(m.role, Role::System | Role::Developer))?;
    let last_checkpoint = history.iter().rposition(hermes_compaction::is_checkpoint);
    let users: Vec<usize> = (start + 1..n)
        .filter(|&i| hermes_compaction::is_real_user(&history[i]))
        .filter(|&i| last_checkpoint.is_none_or(|c| i > c))
        .collect();
    let last = *users.last()?;
    let end = if manual {
        last
    } else {
        // The latest turn start that keeps `protect_last` messages; else only the latest turn.
        users
            .into_iter()
            .rfind(|&i| n - i >= protect_last)
            .unwrap_or(last)
    };
    history[start..end]
        .iter()
        .any(|m| !hermes_compaction::is_checkpoint(m))
        .then_some((start, end))
}

/// The store's plan for an on-demand compaction: the rows of `start..end` archived, and
/// `checkpoint` (the provider's reply) standing where the first of them stood.
pub(crate) fn native_plan(
    rows: &[StoredMessage],
    start: usize,
    end: usize,
    checkpoint: hermes_core::Message,
) -> CompactionPlan {
    CompactionPlan {
        archive: rows[start..end].iter().map(|r| r.position).collect(),
        inserts: vec![PlannedInsert {
            slot: rows[start].position,
            message: checkpoint,
            kind: RowKind::Checkpoint,
        }],
    }
}

#[cfg(test)]
mod tests {
    use hermes_core::{Message, Role};

    use super::native_span;

    #[test]
    fn the_native_span_starts_after_the_system_prompt_and_ends_at_a_turn() {
        let m = |role| Message::text(role, "x");
        let h = vec![
            m(Role::System),
            m(Role::User),
            m(Role::Assistant),
            m(Role::User),
            m(Role::Assistant),
            m(Role::User),
            m(Role::Assistant),
        ];
        assert_eq!(native_span(&h, true, 8), Some((1, 5)));
        assert_eq!(native_span(&h, false, 4), Some((1, 3)));
        assert_eq!(native_span(&h, false, 8), Some((1, 5)));
        assert_eq!(native_span(&h[..3], true, 8), None);
        // After a checkpoint, only what follows it can end the span.
        let mut c = h.clone();
        c[1] = hermes_compaction::checkpoint("earlier");
        c.remove(2);
        assert_eq!(native_span(&c, true, 8), Some((1, 4)));
        assert_eq!(native_span(&c[..4], true, 8), None);
    }
}
