//! Branches that share their parent's prefix by reference (docs/spec.md §10, "What is stored"), and
//! ordering sessions so that a parent is always stored before its branches (the `parent_id`
//! foreign key needs it when sessions are copied or imported).
//!
//! A branch made by [`Store::branch`](crate::Store::branch), by a stale [`Store::compare_and_append`](crate::Store::compare_and_append) or by a
//! [`NewSession`](crate::NewSession) with a [`Fork`] copies no row of its parent: it records the parent's [`Tip`]
//! where it left it and how many messages of the view at that tip it inherits (`sessions`
//! columns `fork_revision`, `fork_last`, `fork_count`). Its view is the first `fork_count`
//! messages of the parent's view at that tip (the rows up to the tip's last position not yet
//! archived at its revision, recursively for a branch of a branch), then its own active rows.
//!
//! Positions: the inherited messages stand at `0..fork_count` in the branch's view (their
//! place in it), and the branch's own rows are numbered from `fork_count` on, so positions are
//! the ones a copy of the prefix would have had: a [`Tip`] of the branch, a compaction plan made
//! from its [`Store::active`](crate::Store::active) view and an `at` index all mean the same with or without a copy.
//!
//! A branch is *materialised* — its inherited messages copied into it as its own rows at
//! exactly those positions, every column as stored (carriers byte for byte, match keys, kinds),
//! and its fork columns cleared (its `parent_id` stays) — in the same transaction, and only
//! when its inherited rows could no longer be read through its parent: before it is compacted
//! (a compaction archives and re-slots rows the branch must own), and before its parent is
//! deleted. A parent's own compaction needs nothing: it records its revision on the rows it
//! archives, so the view at the branch's fork tip still holds them.

use std::collections::{BTreeMap, HashSet};

use futures_util::TryStreamExt as _;
use sqlx::Row as _;

use crate::{DbResult as _, StoreError, StoredMessage, Tip, stored_message};

/// Where a branch leaves its parent: the first [`Fork::count`] messages of the parent's view
/// as it stood at [`Fork::tip`] (the parent is the tip's session). Give it to a new session
/// with [`NewSession::fork`](crate::NewSession::fork): the session inherits those messages by
/// reference, and its own rows follow them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fork {
    tip: Tip,
    count: i64,
}

impl Fork {
    /// The first `count` messages of the view at `tip` (a request's [`Snapshot::tip`](
    /// crate::Snapshot::tip) and how much of the view it read is shared). A count beyond that
    /// view is refused when the session is created ([`StoreError::BranchBeyondEnd`]).
    pub fn new(tip: Tip, count: usize) -> Fork {
        Fork {
            tip,
            count: i64::try_from(count).unwrap_or(i64::MAX),
        }
    }

    /// The parent's tip the branch leaves it at.
    pub fn tip(&self) -> &Tip {
        &self.tip
    }

    /// How many messages of the view at the tip the branch inherits.
    pub fn count(&self) -> usize {
        usize::try_from(self.count).unwrap_or_default()
    }

    pub(crate) fn count_i64(&self) -> i64 {
        self.count
    }
}

/// The fork a `sessions` row records (columns `parent_id`, `fork_revision`, `fork_last`,
/// `fork_count`), if it has one.
pub(crate) fn fork_of(row: &crate::DbRow) -> Result<Option<Fork>, StoreError> {
    let parent: Option<String> = row.try_get("parent_id").db()?;
    let revision: Option<i64> = row.try_get("fork_revision").db()?;
    let last: Option<i64> = row.try_get("fork_last").db()?;
    let count: Option<i64> = row.try_get("fork_count").db()?;
    Ok(match (parent, revision, last, count) {
        (Some(parent), Some(revision), Some(last), Some(count)) => Some(Fork {
            tip: Tip::new(&parent, revision, last),
            count,
        }),
        _ => None,
    })
}

/// How many ancestors a view is read through at most (a guard against a hand-made cycle).
const MAX_DEPTH: i64 = 64;

/// A session's lineage in one statement: the session, its parent while it inherits from it,
/// and so on (the walk stops where nothing more is inherited), each with what it inherits
/// itself (`fork_count`), the tip its child left it at (`lim_rev`, `lim_last`; none for the
/// session itself) and how many messages of its view reach the session read (`cap`; none for
/// the session itself).
const CHAIN: &str = "WITH RECURSIVE chain (depth, id, parent_id, fork_revision, \
     fork_last, fork_count, lim_rev, lim_last, cap) AS (\
     SELECT CAST(0 AS BIGINT), id, parent_id, fork_revision, fork_last, fork_count, \
     CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT) FROM sessions WHERE id = $1 \
     UNION ALL \
     SELECT c.depth + 1, s.id, s.parent_id, s.fork_revision, s.fork_last, s.fork_count, \
     c.fork_revision, c.fork_last, \
     CASE WHEN c.cap IS NULL OR c.fork_count < c.cap THEN c.fork_count ELSE c.cap END \
     FROM chain c JOIN sessions s ON s.id = c.parent_id \
     WHERE c.fork_count > 0 AND (c.cap IS NULL OR c.cap > 0) AND c.depth < $2) \
     SELECT depth, id, fork_count, lim_rev, lim_last, cap FROM chain ORDER BY depth";

/// One level of a lineage ([`CHAIN`]).
pub(crate) struct Level {
    depth: i64,
    id: String,
    /// How many messages this level inherits itself (its own rows start there).
    base: i64,
    /// The tip its child left it at: `(revision, last)`; none for the session read.
    tip: Option<(i64, i64)>,
    /// How many messages of its view reach the session read; none for the session read.
    cap: Option<i64>,
}

impl Level {
    /// How many of its own rows the session read inherits (all for the session itself).
    fn take(&self) -> Option<i64> {
        self.cap.map(|cap| cap.saturating_sub(self.base).max(0))
    }
}

/// The rows of one level of a lineage, as one arm of the view's `UNION ALL`: the session's own
/// rows that `own` selects, or an ancestor's rows as they stood at the tip its child left it
/// at; each arm an equality on `messages.session_id` (the primary key's first column), so
/// every backend reads them by the index. `first` is the arm's first placeholder number.
pub(crate) fn level_sql(level: &Level, own: OwnRows, first: usize) -> String {
    let condition = match (level.tip, own) {
        (Some(_), _) => format!(
            " AND position <= ${} AND (archived_at IS NULL OR archived_rev > ${})",
            first + 1,
            first + 2
        ),
        (None, OwnRows::Active) => " AND archived_at IS NULL".to_owned(),
        (None, OwnRows::All) => String::new(),
    };
    format!(
        concat!(
            "SELECT ",
            message_columns!(),
            ", archived_at, kind, sort_key",
            carrier_columns!(),
            ", CAST({depth} AS BIGINT) AS depth FROM messages \
             WHERE session_id = ${first}{condition}"
        ),
        depth = level.depth,
        first = first,
        condition = condition,
    )
}

/// The lineage of `session` ([`CHAIN`]), the session itself first; empty when there is no
/// such session.
pub(crate) async fn lineage_of(
    conn: &mut sqlx::AnyConnection,
    session: &str,
) -> Result<Vec<Level>, StoreError> {
    let chain = sqlx::query(CHAIN)
        .bind(session)
        .bind(MAX_DEPTH)
        .fetch_all(&mut *conn)
        .await
        .db()?;
    chain
        .iter()
        .map(|r| {
            let base: Option<i64> = r.try_get("fork_count").db()?;
            let rev: Option<i64> = r.try_get("lim_rev").db()?;
            let last: Option<i64> = r.try_get("lim_last").db()?;
            Ok(Level {
                depth: r.try_get("depth").db()?,
                id: r.try_get("id").db()?,
                base: base.unwrap_or(0),
                tip: rev.zip(last),
                cap: r.try_get("cap").db()?,
            })
        })
        .collect()
}

/// The levels of a lineage the view takes anything from (the session itself always).
fn taken(levels: &[Level]) -> impl DoubleEndedIterator<Item = &Level> {
    levels.iter().filter(|l| l.take().is_none_or(|t| t > 0))
}

/// The view query of `levels` (what [`read_view`] runs after [`lineage_of`]), its text after
/// `prefix` (`EXPLAIN` in a test), its arguments bound: per level that the view takes from,
/// the session id and, for an ancestor, the tip its child left it at.
pub(crate) fn view_query<'q>(
    levels: &'q [Level],
    own: OwnRows,
    prefix: &str,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    let mut arms = Vec::with_capacity(levels.len());
    let mut next = 1;
    for level in taken(levels) {
        arms.push(level_sql(level, own, next));
        next += if level.tip.is_some() { 3 } else { 1 };
    }
    let mut query = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{prefix}{}",
        arms.join(" UNION ALL ")
    )));
    for level in taken(levels) {
        query = query.bind(level.id.as_str());
        if let Some((revision, last)) = level.tip {
            query = query.bind(last).bind(revision);
        }
    }
    query
}

/// One message of a view, with the row it is read from.
#[derive(Debug)]
pub(crate) struct ViewRow {
    /// The session whose row it is (the one read, or an ancestor).
    pub(crate) source: String,
    /// The row's position in that session.
    pub(crate) source_position: i64,
    /// The message, at its position in the view read.
    pub(crate) stored: StoredMessage,
}

/// A session's view: what it inherits, then its own rows.
#[derive(Debug, Default)]
pub(crate) struct View {
    /// The inherited messages, at positions `0..` (empty for a session without a fork).
    pub(crate) inherited: Vec<ViewRow>,
    /// The session's own rows that were asked for, in view order.
    pub(crate) own: Vec<StoredMessage>,
}

impl View {
    /// The whole view, inherited messages first.
    pub(crate) fn messages(self) -> Vec<StoredMessage> {
        let mut all: Vec<StoredMessage> = self.inherited.into_iter().map(|r| r.stored).collect();
        all.extend(self.own);
        all
    }
}

/// Which of its own rows a [`read_view`] returns with the inherited ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnRows {
    /// The active ones, in active-view order (checkpoints where the rows they replace stood).
    Active,
    /// Every one, archived included, in position order.
    All,
}

/// A row of the view query: the session's own, decoded as it arrived; an ancestor's, kept
/// until the view is known to take it.
enum Pending {
    Decoded(Box<Option<Result<StoredMessage, StoreError>>>),
    Row(crate::DbRow),
}

impl Pending {
    /// The row's message (each row is taken once: a row the view takes twice is corrupt).
    fn take(&mut self, level: &str) -> Result<StoredMessage, StoreError> {
        match self {
            Pending::Decoded(decoded) => decoded.take().unwrap_or_else(|| {
                Err(StoreError::Corrupt {
                    session: level.to_owned(),
                    position: -1,
                    message: "a row of the view read twice".to_owned(),
                })
            }),
            Pending::Row(row) => stored_message(level, row),
        }
    }
}

/// Where a row of the view query sorts in its level's view, and which row it is (decoded only
/// when the view takes it).
struct LevelRow {
    key: i64,
    position: i64,
    row: usize,
}

/// Reads `session`'s view through `conn` (a connection or a transaction) in two statements:
/// its lineage ([`lineage_of`]), then in one query the rows of every level the view takes
/// anything from ([`view_query`]): the messages it inherits (see the module doc), then its own
/// rows as `own` says. A session without a fork reads its own rows alone; an unknown session
/// reads as empty. A branch whose inherited messages cannot all be found (only a hand-edited
/// database has one) is [`StoreError::Corrupt`].
pub(crate) async fn read_view(
    conn: &mut sqlx::AnyConnection,
    session: &str,
    own: OwnRows,
) -> Result<View, StoreError> {
    let levels = lineage_of(conn, session).await?;
    let mut view = View::default();
    let Some(expected) = levels.first().map(|l| l.base) else {
        return Ok(view);
    };
    // The session's own rows are all in its view: each is decoded as it arrives and its row
    // freed, so the rows of a long session are never all held at once beside their messages.
    // An ancestor's rows are kept until its share of the view is known (only those are decoded).
    let own_depth = levels.iter().find(|l| l.take().is_none()).map(|l| l.depth);
    let own_id = levels
        .iter()
        .find(|l| l.take().is_none())
        .map_or(session, |l| l.id.as_str());
    let mut rows: Vec<Pending> = Vec::new();
    let mut by_level: BTreeMap<i64, Vec<LevelRow>> = BTreeMap::new();
    {
        let mut stream = view_query(&levels, own, "").fetch(&mut *conn);
        while let Some(r) = stream.try_next().await.db()? {
            let depth: i64 = r.try_get("depth").db()?;
            let position: i64 = r.try_get("position").db()?;
            let sort_key: Option<i64> = r.try_get("sort_key").db()?;
            by_level.entry(depth).or_default().push(LevelRow {
                key: sort_key.unwrap_or(position),
                position,
                row: rows.len(),
            });
            rows.push(if Some(depth) == own_depth {
                Pending::Decoded(Box::new(Some(stored_message(own_id, &r))))
            } else {
                Pending::Row(r)
            });
        }
    }
    // The root first: each ancestor's share of the view, in its view's order.
    for level in taken(&levels).rev() {
        let mut mine = by_level.remove(&level.depth).unwrap_or_default();
        match (level.take(), own) {
            (None, OwnRows::All) => mine.sort_by_key(|r| r.position),
            _ => mine.sort_by_key(|r| (r.key, r.position)),
        }
        let Some(take) = level.take() else {
            view.own = mine
                .iter()
                .map(|r| rows[r.row].take(&level.id))
                .collect::<Result<_, _>>()?;
            continue;
        };
        for row in mine.iter().take(usize::try_from(take).unwrap_or(0)) {
            let mut stored = rows[row.row].take(&level.id)?;
            // Active in this view, whatever the parent archived since.
            stored.archived = false;
            stored.position = i64::try_from(view.inherited.len()).unwrap_or(i64::MAX);
            view.inherited.push(ViewRow {
                source: level.id.clone(),
                source_position: row.position,
                stored,
            });
        }
    }
    if i64::try_from(view.inherited.len()).unwrap_or(i64::MAX) != expected {
        return Err(StoreError::Corrupt {
            session: session.to_owned(),
            position: -1,
            message: format!(
                "it inherits {expected} messages from its parent, but {} are there",
                view.inherited.len()
            ),
        });
    }
    Ok(view)
}

/// Copies the messages `session` inherits into it as its own rows (at the positions they have
/// in its view, every column as stored) and clears its fork, in the caller's write
/// transaction; nothing for a session without a fork. The view, the tip, the revision and the
/// message count stay as they were. Returns how many rows were copied.
pub(crate) async fn materialise(
    tx: &mut sqlx::AnyConnection,
    session: &str,
) -> Result<usize, StoreError> {
    let forked: Option<i64> = sqlx::query_scalar("SELECT fork_count FROM sessions WHERE id = $1")
        .bind(session)
        .fetch_optional(&mut *tx)
        .await
        .db()?
        .flatten();
    if forked.is_none() {
        return Ok(0);
    }
    let view = read_view(&mut *tx, session, OwnRows::Active).await?;
    for row in &view.inherited {
        execute!(
            &mut *tx,
            "INSERT INTO messages (session_id, position, role, content, tool_calls, tool_call_id, \
             name, reasoning_content, reasoning, reasoning_details, origin_provider, origin_host, \
             origin_model, extra, key_order, kind, created_at, match_key, chain_key) \
             SELECT $1, $2, role, content, tool_calls, tool_call_id, name, reasoning_content, \
             reasoning, reasoning_details, origin_provider, origin_host, origin_model, extra, \
             key_order, kind, created_at, match_key, chain_key FROM messages \
             WHERE session_id = $3 AND position = $4",
            [
                session,
                row.stored.position,
                &row.source,
                row.source_position
            ]
        )?;
    }
    execute!(
        &mut *tx,
        "UPDATE sessions SET fork_revision = NULL, fork_last = NULL, fork_count = NULL \
         WHERE id = $1",
        [session]
    )?;
    tracing::info!(
        session,
        rows = view.inherited.len(),
        "branch materialised: its inherited messages copied into it"
    );
    Ok(view.inherited.len())
}

/// How many messages the view at `tip` holds (what a branch from it may inherit at most), read
/// in the caller's transaction; [`StoreError::NotFound`] when the tip's session is gone.
pub(crate) async fn view_len_at(
    tx: &mut sqlx::AnyConnection,
    tip: &Tip,
) -> Result<i64, StoreError> {
    sqlx::query_scalar::<_, i64>(
        "SELECT COALESCE(s.fork_count, 0) + (SELECT COUNT(*) FROM messages m \
         WHERE m.session_id = s.id AND m.position <= $2 \
         AND (m.archived_at IS NULL OR m.archived_rev > $3)) FROM sessions s WHERE s.id = $1",
    )
    .bind(tip.session())
    .bind(tip.last())
    .bind(tip.revision())
    .fetch_optional(&mut *tx)
    .await
    .db()?
    .ok_or_else(|| StoreError::NotFound(tip.session().to_owned()))
}

/// Inserts the branch `id` of `fork`'s session in the caller's write transaction: the parent's
/// title, provider, model, base URL (and whether it was confirmed), `model_config`, tenant and
/// partition copied as stored, the fork recorded, and the inherited messages counted in its
/// `message_count`. The fork's count is checked against the view at its tip first.
pub(crate) async fn insert_branch(
    tx: &mut sqlx::AnyConnection,
    id: &str,
    fork: &Fork,
    now: i64,
) -> Result<(), StoreError> {
    check_fork(tx, fork).await?;
    execute!(
        &mut *tx,
        "INSERT INTO sessions (id, title, parent_id, provider, model, base_url, \
         base_url_confirmed, model_config, created_at, updated_at, tenant, partition_key, \
         message_count, fork_revision, fork_last, fork_count) \
         SELECT $1, title, id, provider, model, base_url, base_url_confirmed, model_config, $2, $2, \
         tenant, partition_key, $3, $4, $5, $3 FROM sessions WHERE id = $6",
        [
            id,
            now,
            fork.count,
            fork.tip().revision(),
            fork.tip().last(),
            fork.tip().session()
        ]
    )?;
    Ok(())
}

/// Fails with [`StoreError::BranchBeyondEnd`] when `fork` inherits more than the view at its
/// tip holds (and [`StoreError::NotFound`] when the tip's session is gone).
pub(crate) async fn check_fork(
    tx: &mut sqlx::AnyConnection,
    fork: &Fork,
) -> Result<(), StoreError> {
    let len = view_len_at(tx, fork.tip()).await?;
    if fork.count > len || fork.count < 0 {
        return Err(StoreError::BranchBeyondEnd {
            session: fork.tip().session().to_owned(),
            at: fork.count(),
            count: usize::try_from(len).unwrap_or_default(),
        });
    }
    Ok(())
}

/// `items` reordered so each one whose parent is among them comes after that parent; the
/// order is otherwise kept. A parent cycle (only a hand-edited database has one) keeps its
/// members in their given order, at the end.
pub(crate) fn parents_first<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    parent: impl Fn(&T) -> Option<&str>,
) -> Vec<T> {
    let ids: HashSet<String> = items.iter().map(|s| id(s).to_owned()).collect();
    let mut placed: HashSet<String> = HashSet::new();
    let mut pending = items;
    let mut out = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let before = pending.len();
        let (ready, rest): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|s| parent(s).is_none_or(|p| !ids.contains(p) || placed.contains(p)));
        placed.extend(ready.iter().map(|s| id(s).to_owned()));
        out.extend(ready);
        pending = rest;
        if pending.len() == before {
            out.extend(pending);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parents_first;

    #[test]
    fn parents_come_first_and_the_rest_keeps_its_order() {
        let items = vec![
            ("c", Some("b")),
            ("a", None),
            ("b", Some("a")),
            ("x", Some("gone")),
        ];
        let ordered = parents_first(items, |s| s.0, |s| s.1);
        let ids: Vec<&str> = ordered.iter().map(|s| s.0).collect();
        assert_eq!(ids, ["a", "x", "b", "c"]);
    }

    #[test]
    fn a_cycle_ends_up_last_in_its_given_order() {
        let items = vec![("p", Some("q")), ("q", Some("p")), ("r", None)];
        let ids: Vec<&str> = parents_first(items, |s| s.0, |s| s.1)
            .iter()
            .map(|s| s.0)
            .collect();
        assert_eq!(ids, ["r", "p", "q"]);
    }
}
