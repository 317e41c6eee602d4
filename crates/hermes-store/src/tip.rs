//! Compare-and-append and the one read a request needs (docs/spec.md §10, "What is stored"): a
//! [`Snapshot`] holds everything a resumed request reads, with the session's [`Tip`]; a
//! [`Store::compare_and_append`] continues the session when it still ends at that tip, and
//! otherwise stores the messages as a branch of the view that was read. No lock is held between
//! the read and the append, however long the request streams.
//!
//! A tip is the session's `revision` (moved on by every append and compaction, in the same
//! transaction) and its last row's position at that revision. Rows are never deleted, and a
//! compaction records its revision on the rows it archives (`archived_rev`), so the active view
//! as it stood at any tip is the rows up to its position that were not yet archived at its
//! revision: a stale append branches from exactly what its writer read.

use hermes_core::{Message, Verdicts, WireVerdicts};
use sqlx::Row as _;

use crate::verdicts::member_of;
use crate::{
    DbResult as _, SessionMeta, Store, StoreError, StoredMessage, StoredThinking, meta_from_row,
    new_session_id, now_ms, read_active, read_unforked_active, store_rows,
};

/// Where a session ended when it was read: what [`Store::compare_and_append`] compares. Opaque
/// and cheap to clone; it names its session. A session without messages has a tip too. Two
/// tips are equal when they name the same session, revision and last row (the chain state
/// they carry is not compared).
#[derive(Clone, Debug)]
pub struct Tip {
    session: String,
    revision: i64,
    /// Position of the session's last row (archived or not) at `revision`; for a branch without
    /// rows of its own yet, the last of the messages it inherits; `-1`: none.
    last: i64,
    /// The conversation's chain state there ([`hermes_core::chain_keys`]), when its
    /// rows carry chain keys: what the next rows chain from.
    chain: Option<String>,
}

impl PartialEq for Tip {
    fn eq(&self, other: &Tip) -> bool {
        (&self.session, self.revision, self.last) == (&other.session, other.revision, other.last)
    }
}

impl Eq for Tip {}

impl std::hash::Hash for Tip {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.session, self.revision, self.last).hash(state);
    }
}

impl Tip {
    pub(crate) fn new(session: &str, revision: i64, last: i64) -> Tip {
        Tip {
            session: session.to_owned(),
            revision,
            last,
            chain: None,
        }
    }

    /// This tip with the chain state `chain`.
    pub(crate) fn with_chain(mut self, chain: Option<String>) -> Tip {
        self.chain = chain;
        self
    }

    /// The session this tip is of.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The session's revision at this tip.
    pub(crate) fn revision(&self) -> i64 {
        self.revision
    }

    /// The position of the session's last row at this tip (`-1`: none).
    pub(crate) fn last(&self) -> i64 {
        self.last
    }
}

/// What [`Store::compare_and_append`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The session still ended at the tip read: the messages follow it there.
    Continued {
        /// The session's tip after the append.
        tip: Tip,
    },
    /// The session had moved on (another append, a compaction): the messages were stored as a
    /// new branch sharing the view that was read by reference ([`Fork`](crate::Fork)), then
    /// the messages.
    Branched {
        /// The new branch's tip ([`Tip::session`] is its id; its parent is the session read).
        tip: Tip,
    },
}

impl Appended {
    /// The tip after the append: of the session read, or of the new branch.
    pub fn tip(&self) -> &Tip {
        match self {
            Appended::Continued { tip } | Appended::Branched { tip } => tip,
        }
    }

    /// The session that holds the messages now (the one read, or the new branch).
    pub fn session(&self) -> &str {
        self.tip().session()
    }

    /// True when the messages were stored as a new branch.
    pub fn branched(&self) -> bool {
        matches!(self, Appended::Branched { .. })
    }
}

/// Everything a resumed request reads about a session, as of one moment ([`Store::snapshot`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The session's metadata (what [`Store::session`] returns).
    pub meta: SessionMeta,
    /// The active view with positions (what [`Store::active`] returns).
    pub active: Vec<StoredMessage>,
    /// The chat-completions verdicts (what [`Store::verdicts`] returns).
    pub verdicts: Verdicts,
    /// The other wires' verdicts (what [`Store::wire_verdicts`] returns).
    pub wire_verdicts: WireVerdicts,
    /// The stored thinking request (what [`Store::thinking`] returns).
    pub thinking: Option<StoredThinking>,
    /// Where the session ends: pass it to [`Store::compare_and_append`].
    pub tip: Tip,
}

impl Snapshot {
    /// The active view's messages, without their positions (what [`Store::messages`] returns).
    pub fn messages(&self) -> Vec<Message> {
        self.active.iter().map(|m| m.message.clone()).collect()
    }
}

/// The session row with the session's tip: its columns, then `last_position` (an index lookup
/// on the messages' primary key; a branch without rows of its own ends where what it inherits
/// ends).
macro_rules! session_with_tip {
    () => {
        concat!(
            "SELECT ",
            session_columns!(),
            ", ",
            tip_columns!("$1"),
            " FROM sessions WHERE id = $1"
        )
    };
}

/// The tip columns of the session row whose id is `$id` (an SQL expression): `last_position`
/// (an index lookup on the messages' primary key; a branch without rows of its own ends where
/// what it inherits ends) and `chain_state` (the last user or assistant row's chain key).
macro_rules! tip_columns {
    ($id:literal) => {
        concat!(
            "COALESCE((SELECT MAX(position) FROM messages WHERE session_id = ",
            $id,
            "), fork_count - 1) AS last_position, \
             (SELECT chain_key FROM messages WHERE session_id = ",
            $id,
            " AND archived_at IS NULL AND role IN ('user', 'assistant') \
             ORDER BY position DESC LIMIT 1) AS chain_state"
        )
    };
}
pub(crate) use tip_columns;

/// The session's tip alone.
pub(crate) const TIP: &str = "SELECT revision, COALESCE((SELECT MAX(position) FROM messages \
                              WHERE session_id = $1), fork_count - 1) AS last_position \
                              FROM sessions WHERE id = $1";

/// The tip a row of [`session_with_tip!`] or [`TIP`] holds.
pub(crate) fn tip_of(session: &str, row: &crate::DbRow) -> Result<Tip, StoreError> {
    let revision: i64 = row.try_get("revision").db()?;
    let last: Option<i64> = row.try_get("last_position").db()?;
    Ok(Tip::new(session, revision, last.unwrap_or(-1)))
}

impl Store {
    /// The session's tip now (for a caller that stored a session's first messages and goes on
    /// from there; [`Store::snapshot`] reads it with everything else).
    pub async fn tip(&self, session: &str) -> Result<Tip, StoreError> {
        let row = sqlx::query(TIP)
            .bind(session)
            .fetch_optional(&self.pool)
            .await
            .db()?
            .ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        tip_of(session, &row)
    }

    /// Everything a resumed request reads, in one read transaction of two statements: the
    /// session row (metadata, and `model_config`, where the verdicts, the wire verdicts and the
    /// thinking request live: they are decoded from that same row) with the session's tip, then
    /// the active view. Each field equals what the separate read returns ([`Store::session`],
    /// [`Store::active`], [`Store::verdicts`], [`Store::wire_verdicts`], [`Store::thinking`],
    /// [`Store::tip`]), all as of one moment: an append or compaction committed meanwhile is
    /// either wholly in it or not at all (SQLite: one deferred transaction, one WAL snapshot;
    /// PostgreSQL: `REPEATABLE READ, READ ONLY`). A member of `model_config` that does not
    /// decode is [`StoreError::Corrupt`] naming it, as the separate reads report it.
    pub async fn snapshot(&self, session: &str) -> Result<Snapshot, StoreError> {
        let mut tx = self.read_tx().await?;
        let row = sqlx::query(session_with_tip!())
            .bind(session)
            .fetch_optional(&mut *tx)
            .await
            .db()?
            .ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        let snapshot = snapshot_from_row(&mut tx, session, &row).await?;
        drop(row);
        tx.commit().await.db()?;
        Ok(snapshot)
    }

    /// A read transaction whose statements all see one moment: SQLite's deferred transaction
    /// (one WAL snapshot), PostgreSQL's `REPEATABLE READ, READ ONLY`.
    pub(crate) async fn read_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        match self.backend {
            crate::Backend::Sqlite => self.pool.begin().await.db(),
            crate::Backend::Postgres => self
                .pool
                .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .await
                .db(),
        }
    }

    /// Compare-and-append: appends `messages` to the session of `tip` when the session still
    /// ends there, else stores them as a new branch, in one write transaction
    /// ([`Store::write_tx`], the session's write lock: `BEGIN IMMEDIATE` on SQLite, the
    /// session's advisory lock on PostgreSQL, which every append and compaction of the session
    /// takes too, so no two of them ever interleave). On PostgreSQL a step at the tip read is
    /// first tried as one statement under that same lock, no transaction begun
    /// ([`crate::step::append_at_tip_in_one`]).
    ///
    /// A branch is a new session whose parent is the session read, with its title, provider,
    /// model, base URL (and whether it was confirmed) and `model_config` (verdicts and thinking
    /// request included) copied as stored, sharing the active view as it stood at `tip` by
    /// reference (no row copied, see [`Fork`](crate::Fork); its view holds every carrier byte
    /// for byte, checkpoints still checkpoints) and holding `messages` as its own rows. Two writers that read one tip both succeed: the first continues the session,
    /// the second branches. Appending nothing at the current tip changes nothing.
    pub async fn compare_and_append(
        &self,
        tip: &Tip,
        messages: &[Message],
    ) -> Result<Appended, StoreError> {
        self.compare_and_append_step(tip, messages, &crate::StepExtras::default())
            .await
    }

    /// [`Store::compare_and_append`], writing `extras` (the step's usage, its receipt) in the
    /// same transaction, for whichever session the step lands in.
    pub async fn compare_and_append_step(
        &self,
        tip: &Tip,
        messages: &[Message],
        extras: &crate::StepExtras,
    ) -> Result<Appended, StoreError> {
        let session = tip.session();
        let (mut rows, chain) = crate::prepare_chained(messages, tip.chain.as_deref())?;
        // The usual step (the session still at the tip read, a few rows) in one statement, no
        // transaction begun: PostgreSQL's one `WITH`, SQLite's insert into its `step_appends`
        // view.
        if !rows.is_empty() && rows.len() <= crate::row::ROWS_PER_INSERT {
            for (i, row) in rows.iter_mut().enumerate() {
                row.position = tip.last + 1 + i as i64;
            }
            let now = now_ms();
            let written = match self.backend {
                crate::Backend::Postgres => {
                    crate::step::append_at_tip_in_one(&self.writes, tip, &rows, extras, now).await?
                }
                crate::Backend::Sqlite => {
                    crate::step::append_at_tip_sqlite(&self.writes, tip, &rows, extras, now).await?
                }
            };
            if let Some(revision) = written {
                let added = rows.len() as i64;
                let tip = Tip::new(session, revision, tip.last + added).with_chain(chain);
                tracing::debug!(session, appended = added, "messages stored at the tip read");
                return Ok(Appended::Continued { tip });
            }
        }
        let mut tx = self.write_tx(session).await?;
        if !messages.is_empty() {
            // The compare and the session row's write in one statement: every append and
            // compaction moves the revision on, so at the same revision the session still
            // ends where it was read.
            let now = now_ms();
            let added = rows.len();
            if let Some(revision) = crate::bump_revision(
                &mut tx,
                session,
                added,
                now,
                extras.usage.as_ref(),
                Some(tip.revision),
            )
            .await?
            {
                for (i, row) in rows.iter_mut().enumerate() {
                    row.position = tip.last + 1 + i as i64;
                }
                let tip = Tip::new(session, revision, tip.last + added as i64).with_chain(chain);
                crate::step::insert_step(&mut tx, session, &rows, &tip, extras, now).await?;
                tx.commit().await.db()?;
                tracing::debug!(session, appended = added, "messages stored at the tip read");
                return Ok(Appended::Continued { tip });
            }
        }
        let row = sqlx::query(TIP)
            .bind(session)
            .fetch_optional(&mut *tx)
            .await
            .db()?
            .ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        let now_tip = tip_of(session, &row)?;
        if now_tip == *tip {
            if messages.is_empty() {
                tx.rollback().await.db()?;
                return Ok(Appended::Continued { tip: now_tip });
            }
            let tip = store_rows(&mut tx, session, tip.last + 1, rows, extras.usage.as_ref())
                .await?
                .with_chain(chain);
            crate::step::write_extras(&mut tx, session, &tip, extras).await?;
            tx.commit().await.db()?;
            tracing::debug!(
                session,
                appended = messages.len(),
                "messages stored at the tip read"
            );
            return Ok(Appended::Continued { tip });
        }
        let id = new_session_id();
        // The view at `tip`: rows that existed then (positions up to its last) and were not
        // archived yet (still active, or archived by a later revision), shared whole.
        let shared = crate::lineage::view_len_at(&mut tx, tip).await?;
        let fork = crate::Fork::new(tip.clone(), usize::try_from(shared).unwrap_or(0));
        crate::lineage::insert_branch(&mut tx, &id, &fork, now_ms()).await?;
        let branch = store_rows(&mut tx, &id, shared, rows, extras.usage.as_ref())
            .await?
            .with_chain(chain);
        crate::step::write_extras(&mut tx, &id, &branch, extras).await?;
        tx.commit().await.db()?;
        tracing::info!(
            session,
            branch = %id,
            shared,
            appended = messages.len(),
            "the session moved on since it was read: stored as a branch"
        );
        Ok(Appended::Branched { tip: branch })
    }
}

/// The snapshot of `session` whose row (its columns and [`tip_columns!`]) is `row`, read in
/// `tx`: its active view is read there, so both are of one moment.
pub(crate) async fn snapshot_from_row(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &str,
    row: &crate::DbRow,
) -> Result<Snapshot, StoreError> {
    let meta = meta_from_row(row)?;
    // A session that inherits nothing (most of them) is read by its own rows alone, as
    // before branches shared prefixes; a branch through its lineage (still one statement).
    let active = if meta.fork.is_some() {
        read_active(tx, session).await?
    } else {
        read_unforked_active(&mut **tx, session).await?
    };
    snapshot_of(session, meta, row, active)
}

/// The snapshot of `session` whose row (its columns and [`tip_columns!`]) is `row`, decoded as
/// `meta`, with its active view `active`, read as of the same moment.
pub(crate) fn snapshot_of(
    session: &str,
    meta: SessionMeta,
    row: &crate::DbRow,
    active: Vec<StoredMessage>,
) -> Result<Snapshot, StoreError> {
    // The chain state is the last user or assistant row's own chain key (`NULL` there: the
    // chain is not known, and the rows after it are not chained).
    let chain: Option<String> = row.try_get("chain_state").db()?;
    let tip = tip_of(session, row)?.with_chain(chain);
    Ok(Snapshot {
        verdicts: member_of(session, &meta.model_config)?,
        wire_verdicts: member_of(session, &meta.model_config)?,
        thinking: member_of(session, &meta.model_config)?,
        meta,
        active,
        tip,
    })
}
