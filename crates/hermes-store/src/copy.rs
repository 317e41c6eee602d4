//! Copying every session from one store to another (`hermes sessions migrate --to URL`): rows
//! as stored, column by column, archived rows, checkpoints, verdicts, origins and lineage
//! included (a branch that shares its parent's prefix by reference keeps its fork, and its
//! parent is copied first); each session in one transaction, then read back and compared byte
//! for byte. The carriers left out for good (docs/spec.md §5a 3) go with them.

use std::collections::HashMap;

use sqlx::Row as _;

use crate::{DbResult as _, Store, StoreError};

/// Every column of a `sessions` row, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawSession {
    pub(crate) id: String,
    pub(crate) title: Option<String>,
    pub(crate) parent_id: Option<String>,
    pub(crate) provider: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) base_url_confirmed: i64,
    pub(crate) model_config: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) message_count: i64,
    pub(crate) input_tokens: i64,
    pub(crate) output_tokens: i64,
    pub(crate) reasoning_tokens: i64,
    pub(crate) cache_read_tokens: i64,
    pub(crate) cache_write_tokens: i64,
    pub(crate) revision: i64,
    pub(crate) tenant: Option<String>,
    pub(crate) partition_key: Option<String>,
    pub(crate) fork_revision: Option<i64>,
    pub(crate) fork_last: Option<i64>,
    pub(crate) fork_count: Option<i64>,
}

/// Every column of a `messages` row, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RawMessage {
    position: i64,
    texts: [Option<String>; 16],
    created_at: i64,
    sort_key: Option<i64>,
    archived_at: Option<i64>,
    archived_rev: Option<i64>,
    kind: String,
}

/// The text columns of `messages`, in [`RawMessage::texts`] order.
const MESSAGE_TEXTS: [&str; 16] = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "origin_provider",
    "origin_host",
    "origin_model",
    "extra",
    "key_order",
    "match_key",
    "chain_key",
    "carrier_id",
];

/// What [`Store::copy_into`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyReport {
    /// Sessions copied (and verified) now.
    pub copied: Vec<String>,
    /// Sessions the destination already held, identical row for row (copied before).
    pub present: Vec<String>,
    /// Sessions the destination holds with other contents under the same id, with what
    /// differs; left as they are on both sides.
    pub conflicts: Vec<(String, String)>,
    /// Messages copied (archived rows and checkpoints included).
    pub messages: usize,
    /// Fleet verdicts the destination did not know yet (or knew as learned earlier).
    pub fleet_verdicts: usize,
    /// Carriers left out for good (docs/spec.md §5a 3) the destination did not know yet.
    pub left_out: usize,
}

impl RawSession {
    /// Reads a row of every session column (`session_columns!`), as stored.
    pub(crate) fn from_row(r: &crate::DbRow) -> Result<Self, StoreError> {
        Ok(RawSession {
            id: r.try_get("id").db()?,
            title: r.try_get("title").db()?,
            parent_id: r.try_get("parent_id").db()?,
            provider: r.try_get("provider").db()?,
            model: r.try_get("model").db()?,
            base_url: r.try_get("base_url").db()?,
            base_url_confirmed: r.try_get("base_url_confirmed").db()?,
            model_config: r.try_get("model_config").db()?,
            created_at: r.try_get("created_at").db()?,
            updated_at: r.try_get("updated_at").db()?,
            message_count: r.try_get("message_count").db()?,
            input_tokens: r.try_get("input_tokens").db()?,
            output_tokens: r.try_get("output_tokens").db()?,
            reasoning_tokens: r.try_get("reasoning_tokens").db()?,
            cache_read_tokens: r.try_get("cache_read_tokens").db()?,
            cache_write_tokens: r.try_get("cache_write_tokens").db()?,
            revision: r.try_get("revision").db()?,
            tenant: r.try_get("tenant").db()?,
            partition_key: r.try_get("partition_key").db()?,
            fork_revision: r.try_get("fork_revision").db()?,
            fork_last: r.try_get("fork_last").db()?,
            fork_count: r.try_get("fork_count").db()?,
        })
    }
}

impl RawMessage {
    fn from_row(r: &crate::DbRow) -> Result<Self, StoreError> {
        let mut texts: [Option<String>; 16] = Default::default();
        for (slot, column) in texts.iter_mut().zip(MESSAGE_TEXTS) {
            *slot = r.try_get(column).db()?;
        }
        Ok(RawMessage {
            position: r.try_get("position").db()?,
            texts,
            created_at: r.try_get("created_at").db()?,
            sort_key: r.try_get("sort_key").db()?,
            archived_at: r.try_get("archived_at").db()?,
            archived_rev: r.try_get("archived_rev").db()?,
            kind: r.try_get("kind").db()?,
        })
    }
}

impl Store {
    async fn raw_sessions(&self) -> Result<Vec<RawSession>, StoreError> {
        let rows = self.every_session_row("created_at, id").await?;
        rows.iter().map(RawSession::from_row).collect()
    }

    async fn raw_session(&self, id: &str) -> Result<Option<RawSession>, StoreError> {
        let row = self.session_row(id).await?;
        row.as_ref().map(RawSession::from_row).transpose()
    }

    async fn raw_messages(&self, id: &str) -> Result<Vec<RawMessage>, StoreError> {
        let rows = sqlx::query(
            "SELECT position, role, content, tool_calls, tool_call_id, name, reasoning_content, \
             reasoning, reasoning_details, origin_provider, origin_host, origin_model, extra, \
             key_order, match_key, chain_key, carrier_id, created_at, sort_key, archived_at, \
             archived_rev, kind FROM messages \
             WHERE session_id = $1 ORDER BY position",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .db()?;
        rows.iter().map(RawMessage::from_row).collect()
    }

    /// Copies every session of this store into `dest`, keeping ids, and every fleet verdict
    /// (the later `learned_at` wins). Parents are copied before their branches. Each session is
    /// one transaction in `dest` (a failure leaves nothing of it there), then read back and
    /// compared with the source column by column; a mismatch is an error. A session `dest`
    /// already holds is compared instead of copied: identical counts as present, anything else
    /// is a conflict, reported and left alone. Running it again copies nothing.
    pub async fn copy_into(&self, dest: &Store) -> Result<CopyReport, StoreError> {
        let mut report = CopyReport::default();
        for session in crate::lineage::parents_first(
            self.raw_sessions().await?,
            |s| &s.id,
            |s| s.parent_id.as_deref(),
        ) {
            let messages = self.raw_messages(&session.id).await?;
            if let Some(there) = dest.raw_session(&session.id).await? {
                let there_messages = dest.raw_messages(&session.id).await?;
                match difference(&session, &messages, &there, &there_messages) {
                    None => report.present.push(session.id),
                    Some(what) => report.conflicts.push((session.id, what)),
                }
                continue;
            }
            dest.insert_raw(&session, &messages).await?;
            let copied = dest.raw_session(&session.id).await?;
            let copied_messages = dest.raw_messages(&session.id).await?;
            let mismatch = match &copied {
                None => Some("the session is missing after its copy".to_owned()),
                Some(copied) => difference(&session, &messages, copied, &copied_messages),
            };
            if let Some(what) = mismatch {
                return Err(StoreError::Corrupt {
                    session: session.id,
                    position: -1,
                    message: format!("the copy does not match the original: {what}"),
                });
            }
            report.messages += messages.len();
            report.copied.push(session.id);
        }
        let known: HashMap<_, _> = dest
            .fleet_verdicts()
            .await?
            .into_iter()
            .map(|v| ((v.wire, v.provider, v.host, v.model, v.field), v.learned_at))
            .collect();
        for v in self.fleet_verdicts().await? {
            let at = (
                v.wire.clone(),
                v.provider.clone(),
                v.host.clone(),
                v.model.clone(),
                v.field.clone(),
            );
            if known
                .get(&at)
                .is_some_and(|&learned| learned >= v.learned_at)
            {
                continue;
            }
            dest.put_fleet_verdict(&crate::fleet::RowKey::of(&v), v.learned_at)
                .await?;
            report.fleet_verdicts += 1;
        }
        for mark in self.left_out_marks().await? {
            if dest.put_left_out(&mark).await? {
                report.left_out += 1;
            }
        }
        tracing::info!(
            copied = report.copied.len(),
            present = report.present.len(),
            conflicts = report.conflicts.len(),
            messages = report.messages,
            "sessions copied"
        );
        Ok(report)
    }

    /// Inserts a session and its rows exactly as given, in one write transaction.
    async fn insert_raw(
        &self,
        session: &RawSession,
        messages: &[RawMessage],
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx(&session.id).await?;
        sqlx::query(concat!(
            "INSERT INTO sessions (",
            session_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)"
        ))
        .bind(&session.id)
        .bind(&session.title)
        .bind(&session.parent_id)
        .bind(&session.provider)
        .bind(&session.model)
        .bind(&session.base_url)
        .bind(session.base_url_confirmed)
        .bind(&session.model_config)
        .bind(session.created_at)
        .bind(session.updated_at)
        .bind(session.message_count)
        .bind(session.input_tokens)
        .bind(session.output_tokens)
        .bind(session.reasoning_tokens)
        .bind(session.cache_read_tokens)
        .bind(session.cache_write_tokens)
        .bind(session.revision)
        .bind(&session.tenant)
        .bind(&session.partition_key)
        .bind(session.fork_revision)
        .bind(session.fork_last)
        .bind(session.fork_count)
        .execute(&mut *tx)
        .await
        .db()?;
        for m in messages {
            let mut query = sqlx::query(
                "INSERT INTO messages (session_id, position, role, content, tool_calls, tool_call_id, \
                 name, reasoning_content, reasoning, reasoning_details, origin_provider, origin_host, \
                 origin_model, extra, key_order, match_key, chain_key, carrier_id, created_at, sort_key, \
                 archived_at, archived_rev, kind) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
                 $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)",
            )
            .bind(&session.id)
            .bind(m.position);
            for text in &m.texts {
                query = query.bind(text);
            }
            query
                .bind(m.created_at)
                .bind(m.sort_key)
                .bind(m.archived_at)
                .bind(m.archived_rev)
                .bind(&m.kind)
                .execute(&mut *tx)
                .await
                .db()?;
        }
        tx.commit().await.db()
    }
}

/// What differs between two copies of a session, if anything.
fn difference(
    a: &RawSession,
    a_messages: &[RawMessage],
    b: &RawSession,
    b_messages: &[RawMessage],
) -> Option<String> {
    if a != b {
        return Some("the session row differs".to_owned());
    }
    if a_messages.len() != b_messages.len() {
        return Some(format!(
            "{} messages here, {} there",
            a_messages.len(),
            b_messages.len()
        ));
    }
    a_messages
        .iter()
        .zip(b_messages)
        .find(|(x, y)| x != y)
        .map(|(x, _)| format!("message {} differs", x.position))
}
