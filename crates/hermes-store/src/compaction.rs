//! Storing a compaction: archive rows, and put the new rows where the archived ones stood.

use hermes_core::Message;

use crate::row::MessageRow;
use crate::{DbResult as _, Store, StoreError, next_revision, now_ms};

/// What a compaction changes in a session's rows, applied by [`Store::apply_compaction`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionPlan {
    /// Positions of the active rows the compaction replaces; they are archived, never deleted.
    pub archive: Vec<i64>,
    /// The rows it adds to the active view, each standing where an existing row stands.
    pub inserts: Vec<PlannedInsert>,
}

/// One row a compaction adds.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedInsert {
    /// Position of the existing row whose place in the active view the new row takes (a summary
    /// goes where the summarised rows began, a shrunk tool output where the original was).
    pub slot: i64,
    /// The message stored.
    pub message: Message,
    /// What the row is.
    pub kind: RowKind,
}

/// What a stored row is (the `kind` column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// An ordinary message (a shrunk tool output is one too).
    #[default]
    Message,
    /// A compaction checkpoint: the summary of the rows it replaces
    /// ([`StoredMessage::checkpoint`](crate::StoredMessage::checkpoint)).
    Checkpoint,
}

impl RowKind {
    /// The `kind` column's value.
    pub(crate) fn as_sql(self) -> &'static str {
        match self {
            RowKind::Message => "message",
            RowKind::Checkpoint => "checkpoint",
        }
    }

    #[cfg(test)]
    pub(crate) fn from_checkpoint(checkpoint: bool) -> Self {
        if checkpoint {
            RowKind::Checkpoint
        } else {
            RowKind::Message
        }
    }
}

impl Store {
    /// Applies `plan` in one transaction: adds each planned row into the active view where the
    /// row at its `slot` stands, then archives the rows at `plan.archive`. No row is deleted
    /// (`all_messages` still lists the originals); a failure (a slot or an archived position that
    /// is not an active row of the session) leaves the session as it was. The session's revision
    /// moves on, so a [`Tip`](crate::Tip) read before is stale: an append at it
    /// ([`Store::compare_and_append`]) branches from the view as it was read.
    pub async fn apply_compaction(
        &self,
        session: &str,
        plan: &CompactionPlan,
    ) -> Result<(), StoreError> {
        let inserts: Vec<_> = plan
            .inserts
            .iter()
            .map(|i| (i.slot, &i.message, i.kind))
            .collect();
        self.store_compaction(session, &plan.archive, &inserts)
            .await
    }

    /// The one implementation behind [`Store::apply_compaction`] and [`Store::compact`].
    pub(crate) async fn store_compaction(
        &self,
        session: &str,
        archive: &[i64],
        inserts: &[(i64, &Message, RowKind)],
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx(session).await?;
        // A branch that shares its parent's prefix owns it first: the compaction archives and
        // re-slots rows that must be its own (same positions, so the plan stands).
        crate::lineage::materialise(&mut tx, session).await?;
        let now = now_ms();
        let corrupt = |position: i64, message: &str| StoreError::Corrupt {
            session: session.to_owned(),
            position,
            message: message.to_owned(),
        };
        // The session's new revision, which the archived rows record (so the view as it stood
        // before can be rebuilt, see `crate::tip`).
        let revision = next_revision(&mut tx, session, inserts.len(), now, None).await?;
        let mut next: i64 = sqlx::query_scalar::<_, Option<i64>>(
            "SELECT MAX(position) FROM messages WHERE session_id = $1",
        )
        .bind(session)
        .fetch_one(&mut *tx)
        .await
        .db()?
        .map_or(0, |p| p + 1);
        for &(slot, message, kind) in inserts {
            let key: Option<i64> = sqlx::query_scalar(
                "SELECT COALESCE(sort_key, position) FROM messages WHERE session_id = $1 AND position = $2",
            )
            .bind(session)
            .bind(slot)
            .fetch_optional(&mut *tx)
            .await
            .db()?;
            let key = key.ok_or_else(|| corrupt(slot, "no such message to take the place of"))?;
            let row = MessageRow::from_message(next, message)?;
            row.insert(&mut tx, session, now).await?;
            execute!(
                &mut *tx,
                "UPDATE messages SET sort_key = $1, kind = $2 WHERE session_id = $3 AND position = $4",
                [key, kind.as_sql(), session, next]
            )?;
            next += 1;
        }
        for &position in archive {
            let done = execute!(
                &mut *tx,
                "UPDATE messages SET archived_at = $1, archived_rev = $2 WHERE session_id = $3 \
                 AND position = $4 AND archived_at IS NULL",
                [now, revision, session, position]
            )?;
            if done.rows_affected() != 1 {
                return Err(corrupt(position, "not an active message of this session"));
            }
        }
        tx.commit().await.db()?;
        tracing::info!(
            session,
            archived = archive.len(),
            inserted = inserts.len(),
            "compaction stored"
        );
        Ok(())
    }
}
