//! What the gateway's admin API reads (docs/gateway.md, "The inspector"): its tenants'
//! conversations a page at a time, newest first, filtered in the database by tenant, partition
//! and model; how many branches and user turns each holds; the branches of one.

use std::collections::HashMap;

use sqlx::Row as _;

use crate::{DbResult as _, SessionMeta, Store, StoreError, meta_from_row};

/// The most conversations one page holds.
pub const MAX_PAGE: usize = 500;

/// Which gateway conversations [`Store::conversations`] lists: every field set narrows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConversationFilter {
    /// Only this tenant's.
    pub tenant: Option<String>,
    /// Only those of this partition.
    pub partition: Option<String>,
    /// Only those of this model: its id as stored (`deepseek-v4-pro`) or `provider/model`.
    pub model: Option<String>,
}

impl ConversationFilter {
    /// Every gateway conversation.
    pub fn new() -> Self {
        ConversationFilter::default()
    }

    hermes_core::setters! {
        /// Only this tenant's.
        tenant: Option<String>;
        /// Only this partition's.
        partition: Option<String>;
        /// Only this model's.
        model: Option<String>;
    }

    /// The statement's `WHERE` clause (placeholders from `$1`) and its binds, in order.
    fn clause(&self) -> (String, Vec<&str>) {
        let fields: [(&str, &Option<String>); 3] = [
            (" AND tenant = ?", &self.tenant),
            (" AND partition_key = ?", &self.partition),
            (
                " AND (model = ? OR (provider || '/' || model) = ?)",
                &self.model,
            ),
        ];
        let mut clause = "tenant IS NOT NULL AND staged = 0".to_owned();
        let mut binds = Vec::new();
        for (sql, value) in fields {
            if let Some(value) = value.as_deref() {
                binds.push(value);
                clause.push_str(&sql.replace('?', &format!("${}", binds.len())));
            }
        }
        (clause, binds)
    }
}

/// Where a page of [`Store::conversations`] starts: after the conversation last updated at
/// `updated_at` with this id (the last of the page before).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct After {
    /// Its last update, Unix milliseconds.
    pub updated_at: i64,
    /// Its id.
    pub id: String,
}

/// Counts of a page's conversations ([`Store::conversation_counts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counts {
    /// Branches made of it, by conversation id.
    pub branches: HashMap<String, i64>,
    /// User messages among its own rows (a branch's inherited ones are its parent's), by id.
    pub turns: HashMap<String, i64>,
}

/// `$1, $2, …, $n`: the placeholders of `n` values in an `IN (…)` list.
fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store {
    /// The gateway's conversations that `filter` lets through, most recently updated first (then
    /// the greater id), `limit` of them (at most [`MAX_PAGE`], and one more: a caller asks for
    /// one beyond its page to learn whether another follows) after `after`: one indexed
    /// statement (`sessions (tenant, partition_key, updated_at)`), whatever the number stored.
    pub async fn conversations(
        &self,
        filter: &ConversationFilter,
        after: Option<&After>,
        limit: usize,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        let (mut clause, binds) = filter.clause();
        let n = binds.len();
        if after.is_some() {
            clause.push_str(&format!(
                " AND (updated_at < ${a} OR (updated_at = ${a} AND id < ${b}))",
                a = n + 1,
                b = n + 2
            ));
        }
        let sql = format!(
            "SELECT {} FROM sessions WHERE {clause} ORDER BY updated_at DESC, id DESC LIMIT {}",
            session_columns!(),
            limit.min(MAX_PAGE + 1)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for bind in binds {
            query = query.bind(bind);
        }
        if let Some(after) = after {
            query = query.bind(after.updated_at).bind(after.id.as_str());
        }
        let rows = query.fetch_all(&self.pool).await.db()?;
        rows.iter().map(meta_from_row).collect()
    }

    /// How many gateway conversations `filter` lets through.
    pub async fn count_conversations(
        &self,
        filter: &ConversationFilter,
    ) -> Result<i64, StoreError> {
        let (clause, binds) = filter.clause();
        let sql = format!("SELECT COUNT(*) AS n FROM sessions WHERE {clause}");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for bind in binds {
            query = query.bind(bind);
        }
        let row = query.fetch_one(&self.pool).await.db()?;
        row.try_get::<i64, _>("n").db()
    }

    /// The branches and user turns of the conversations `ids` (two statements, whatever their
    /// number; an id without any is left out of each map).
    pub async fn conversation_counts(&self, ids: &[String]) -> Result<Counts, StoreError> {
        let mut counts = Counts::default();
        if ids.is_empty() {
            return Ok(counts);
        }
        let list = placeholders(ids.len());
        for (sql, into) in [
            (
                format!(
                    "SELECT parent_id AS id, COUNT(*) AS n FROM sessions \
                     WHERE parent_id IN ({list}) AND staged = 0 GROUP BY parent_id"
                ),
                &mut counts.branches,
            ),
            (
                format!(
                    "SELECT session_id AS id, COUNT(*) AS n FROM messages \
                     WHERE session_id IN ({list}) AND role = 'user' GROUP BY session_id"
                ),
                &mut counts.turns,
            ),
        ] {
            self.read_into(sql, ids, ("id", "n"), into).await?;
        }
        Ok(counts)
    }

    /// The branches made of session `id`, oldest first.
    pub async fn branches_of(&self, id: &str) -> Result<Vec<SessionMeta>, StoreError> {
        let sql = format!(
            "SELECT {} FROM sessions WHERE parent_id = $1 AND staged = 0 ORDER BY created_at, id",
            session_columns!()
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_all(&self.pool)
            .await
            .db()?;
        rows.iter().map(meta_from_row).collect()
    }

    /// When each of `carriers` was left out for good ([`Store::mark_left_out`]), Unix ms, by
    /// carrier id; one not marked is not in the map.
    pub async fn left_out_at(
        &self,
        carriers: &[String],
    ) -> Result<HashMap<String, i64>, StoreError> {
        let mut found = HashMap::new();
        for chunk in carriers.chunks(256) {
            let sql = format!(
                "SELECT carrier, marked_at FROM left_out_carriers WHERE carrier IN ({})",
                placeholders(chunk.len())
            );
            self.read_into(sql, chunk, ("carrier", "marked_at"), &mut found)
                .await?;
        }
        Ok(found)
    }

    /// Runs `sql` with `binds` bound in order (`$1`, `$2`, …), each row's `(key, value)`
    /// columns into `into`.
    async fn read_into(
        &self,
        sql: String,
        binds: &[String],
        (key, value): (&str, &str),
        into: &mut HashMap<String, i64>,
    ) -> Result<(), StoreError> {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for bind in binds {
            query = query.bind(bind.as_str());
        }
        for row in query.fetch_all(&self.pool).await.db()? {
            into.insert(row.try_get(key).db()?, row.try_get(value).db()?);
        }
        Ok(())
    }

    /// Every tenant that holds a gateway key or a conversation, by name.
    pub async fn tenants(&self) -> Result<Vec<String>, StoreError> {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT tenant FROM gateway_keys WHERE admin = 0 \
             UNION SELECT tenant FROM sessions WHERE tenant IS NOT NULL ORDER BY 1",
        )
        .fetch_all(&self.pool)
        .await
        .db()?;
        Ok(names)
    }
}
