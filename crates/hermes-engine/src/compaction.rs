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
