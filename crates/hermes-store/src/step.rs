//! What the transaction storing a step writes besides its messages ([`StepExtras`]): the
//! reply's usage, and the receipt of the request that made it (`receipts.rs`).

use std::time::Duration;

use hermes_core::Usage;

use sqlx::Row as _;

use crate::{DbResult as _, StoreError, Tip, now_ms};

/// Which request a receipt answers: the tenant's key, and a digest of the request's body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReceiptKey {
    /// Whose request it is (a gateway key's tenant).
    pub tenant: String,
    /// `key:` and the client's `Idempotency-Key`, or `body:` and the body digest for a request
    /// that named none.
    pub key: String,
    /// A digest of the request as the client sent it (door and body).
    pub digest: String,
    /// The request holding the claim (unique per request).
    pub holder: String,
}

impl ReceiptKey {
    /// The key `key` of `tenant` for the request whose digest is `digest`, held by `holder`.
    pub fn new(tenant: &str, key: &str, digest: &str, holder: &str) -> Self {
        ReceiptKey {
            tenant: tenant.to_owned(),
            key: key.to_owned(),
            digest: digest.to_owned(),
            holder: holder.to_owned(),
        }
    }

    /// Whether the key is a body digest (no `Idempotency-Key` named): its receipt answers only
    /// while its session still ends where the turn left it.
    pub fn by_body(&self) -> bool {
        self.key.starts_with("body:")
    }
}

/// What the transaction storing a step writes besides its messages.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StepExtras {
    /// The reply's usage, added to the session's counters.
    pub usage: Option<Usage>,
    /// The receipt the claim becomes: the key, the completion so far (JSON) and how long it
    /// is kept.
    pub receipt: Option<(ReceiptKey, String, Duration)>,
}

impl StepExtras {
    /// Counting `usage`.
    pub fn usage(mut self, usage: Option<Usage>) -> Self {
        self.usage = usage;
        self
    }

    /// Writing the receipt of `key` with `completion`, kept for `kept`.
    pub fn receipt(mut self, key: ReceiptKey, completion: String, kept: Duration) -> Self {
        self.receipt = Some((key, completion, kept));
        self
    }
}

pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Writes what `extras` holds for a step stored in `session`, which now ends at `tip`, inside
/// the step's transaction, after [`crate::store_rows`] counted its usage on the session's row:
/// the tenant's spend and the receipt.
pub(crate) async fn write_extras(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    tip: &Tip,
    extras: &StepExtras,
) -> Result<(), StoreError> {
    // The session's token counters moved with its revision (`next_revision`); the tenant's
    // spend is recorded here.
    if let Some(usage) = &extras.usage {
        crate::record_tenant_usage(tx, session, usage).await?;
    }
    if let Some((key, completion, kept)) = &extras.receipt {
        let sql = receipt_sql("VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8)");
        let query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(key.tenant.as_str())
            .bind(key.key.as_str())
            .bind(key.digest.as_str())
            .bind(session)
            .bind(tip.revision());
        let query = bind_receipt_rest(query, tip.last(), completion, now_ms(), *kept);
        query.execute(&mut *tx).await.db()?;
    }
    Ok(())
}

/// The statement adding a step's spend to its tenant's (`tenant_usage`): `at` and `tokens` its
/// values' placeholders, `from` the session's row (`sessions WHERE id = $N`, or a `WITH`
/// part's `RETURNING`); nothing for a session without a tenant.
pub(crate) fn usage_sql(at: &str, tokens: &str, from: &str) -> String {
    format!(
        "INSERT INTO tenant_usage (tenant, at, tokens) SELECT tenant, {at}, {tokens} FROM {from} \
         AND tenant IS NOT NULL"
    )
}

/// The tokens a step's `usage` adds to its tenant's spend (input and output).
pub(crate) fn usage_tokens(usage: &Usage) -> i64 {
    crate::token_count(usage.input.saturating_add(usage.output))
}

/// The upsert of a request's receipt (`turn_receipts`): its row from `values` (a `VALUES` list
/// or a `SELECT` of tenant, key, digest, holder, session, tip revision, tip position,
/// completion and expiry), replacing the claim the request holds.
fn receipt_sql(values: &str) -> String {
    format!(
        "INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, \
         tip_last, completion, expires_at) {values} ON CONFLICT (tenant, key) DO UPDATE SET \
         digest = excluded.digest, holder = NULL, session = excluded.session, \
         tip_revision = excluded.tip_revision, tip_last = excluded.tip_last, \
         completion = excluded.completion, expires_at = excluded.expires_at"
    )
}

/// Binds a receipt's last three values: the tip's position `last`, the `completion`, and its
/// expiry, `kept` after `now`.
fn bind_receipt_rest<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    last: i64,
    completion: &'q str,
    now: i64,
    kept: Duration,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    query
        .bind(last)
        .bind(completion)
        .bind(now.saturating_add(ms(kept)))
}

/// `n` placeholders from `$first`.
fn marks(first: usize, n: usize) -> Vec<String> {
    (first..first + n).map(|i| format!("${i}")).collect()
}

/// The step's rows, the tenant's spend and the request's receipt written in `tx` (a write
/// transaction of `session` whose row already moved on to `tip`), one call each: the path of
/// a step the one-statement writes do not take (more rows than one insert takes).
pub(crate) async fn insert_step(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    rows: &[crate::row::MessageRow],
    tip: &Tip,
    extras: &StepExtras,
    now: i64,
) -> Result<(), StoreError> {
    crate::row::MessageRow::insert_all(rows, &mut *tx, session, now).await?;
    write_extras(tx, session, tip, extras).await
}

/// PostgreSQL's compare-and-append of a step in one statement, outside any transaction: the
/// session's write lock (the advisory lock every append and compaction of it takes), the
/// session row's revision moved on when it is still `tip`'s (with the step's token counts),
/// the step's rows at the positions after `tip`, the tenant's spend and the request's receipt,
/// each a data-modifying `WITH` part of one `INSERT … SELECT … FROM s` chain, so all or none is
/// written. `None`: the session moved on since `tip` was read, and nothing was written (the
/// caller takes its transaction path, which branches).
///
/// The lock is taken before the session row is updated (the update's condition reads it); a
/// writer that held it and moved the revision on is seen by the update's recheck of the row it
/// waited for, as PostgreSQL rechecks a row updated meanwhile, so the condition fails.
pub(crate) async fn append_at_tip_in_one(
    pool: &sqlx::AnyPool,
    tip: &Tip,
    rows: &[crate::row::MessageRow],
    extras: &StepExtras,
    now: i64,
) -> Result<Option<i64>, StoreError> {
    let session = tip.session();
    // $1 to $8 the session row's write (`bump_sql!`: the rows added, now, the session, the
    // token counts), $9 the revision read; then the rows; then the spend's and the receipt's
    // values.
    let (columns, values) = crate::row::MessageRow::values_sql(rows, 10);
    let mut next = 10 + values.matches('$').count();
    let mut sql = format!(
        "WITH l AS (SELECT 1 AS held FROM pg_advisory_xact_lock(hashtextextended($3, 0))), \
         s AS ({}), \
         m AS (INSERT INTO messages ({columns}) SELECT v.* FROM (VALUES {values}) AS v \
         WHERE EXISTS (SELECT 1 FROM s))",
        bump_sql!(" AND revision = $9 AND EXISTS (SELECT held FROM l) RETURNING revision, tenant")
    );
    if extras.usage.is_some() {
        let tokens = format!("${next}");
        sql.push_str(&format!(
            ", u AS ({})",
            usage_sql("$2", &tokens, "s WHERE true")
        ));
        next += 1;
    }
    if extras.receipt.is_some() {
        let p = marks(next, 6);
        let values = format!(
            "SELECT {}, {}, {}, NULL, $3, s.revision, {}, {}, {} FROM s",
            p[0], p[1], p[2], p[3], p[4], p[5]
        );
        sql.push_str(&format!(", r AS ({})", receipt_sql(&values)));
    }
    sql.push_str(" SELECT revision FROM s");
    let query = sqlx::query(sqlx::AssertSqlSafe(sql));
    let query =
        bind_bump!(query, session, rows.len(), now, extras.usage.as_ref()).bind(tip.revision());
    let mut query = crate::row::MessageRow::bind_all(query, rows, session, now);
    if let Some(usage) = &extras.usage {
        query = query.bind(usage_tokens(usage));
    }
    if let Some((key, completion, kept)) = &extras.receipt {
        let added = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        query = query
            .bind(key.tenant.as_str())
            .bind(key.key.as_str())
            .bind(key.digest.as_str())
            .bind(tip.last().saturating_add(added))
            .bind(completion.as_str())
            .bind(now.saturating_add(ms(*kept)));
    }
    match query.fetch_optional(pool).await.db()? {
        Some(row) => Ok(Some(row.try_get("revision").db()?)),
        None => Ok(None),
    }
}

/// The message error SQLite's `step_appends` trigger aborts with when the session moved on
/// since its tip was read (migration 0020).
const MOVED_ON: &str = "hermes: the session moved on since its tip was read";

/// SQLite's compare-and-append of a step in one statement, outside any transaction: an `INSERT`
/// of the step's rows into the `step_appends` view (migration 0020), whose first row carries
/// the revision read, the token counts, the tenant's spend and the request's receipt; its
/// trigger checks the revision, moves the session row on, writes the spend, the receipt and
/// the rows, or aborts the whole statement. One statement is atomic, and SQLite takes its write
/// lock before the statement reads. `None`: the session moved on since `tip` was read, and
/// nothing was written (the caller takes its transaction path, which branches).
pub(crate) async fn append_at_tip_sqlite(
    pool: &sqlx::AnyPool,
    tip: &Tip,
    rows: &[crate::row::MessageRow],
    extras: &StepExtras,
    now: i64,
) -> Result<Option<i64>, StoreError> {
    const HEADER: usize = 14;
    let width = crate::row::COLUMNS;
    let mut sql = String::from(
        "INSERT INTO step_appends (session_id, position, role, content, tool_calls, \
         tool_call_id, name, reasoning_content, reasoning, reasoning_details, origin_provider, \
         origin_host, origin_model, extra, key_order, created_at, match_key, carrier_id, \
         chain_key, expected_revision, added, input_tokens, output_tokens, reasoning_tokens, \
         cache_read_tokens, cache_write_tokens, spend, receipt_tenant, receipt_key, \
         receipt_digest, receipt_last, receipt_completion, receipt_expires_at) VALUES ",
    );
    let mut next = 1;
    for i in 0..rows.len() {
        let marks = marks(next, if i == 0 { width + HEADER } else { width });
        next += marks.len();
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        sql.push_str(&marks.join(", "));
        if i > 0 {
            sql.push_str(&", NULL".repeat(HEADER));
        }
        sql.push(')');
    }
    let session = tip.session();
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (i, row) in rows.iter().enumerate() {
        query = row.bind(query, session, now, true, true);
        if i > 0 {
            continue;
        }
        let usage = extras.usage.unwrap_or_default();
        let n = crate::token_count;
        query = query
            .bind(tip.revision())
            .bind(i64::try_from(rows.len()).unwrap_or(i64::MAX))
            .bind(n(usage.input))
            .bind(n(usage.output))
            .bind(n(usage.reasoning))
            .bind(n(usage.cache_read))
            .bind(n(usage.cache_write))
            .bind(extras.usage.as_ref().map(usage_tokens));
        let receipt = extras.receipt.as_ref();
        let added = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        query = query
            .bind(receipt.map(|(key, _, _)| key.tenant.as_str()))
            .bind(receipt.map(|(key, _, _)| key.key.as_str()))
            .bind(receipt.map(|(key, _, _)| key.digest.as_str()))
            .bind(receipt.map(|_| tip.last().saturating_add(added)))
            .bind(receipt.map(|(_, completion, _)| completion.as_str()))
            .bind(receipt.map(|(_, _, kept)| now.saturating_add(ms(*kept))));
    }
    match query.execute(pool).await {
        Ok(_) => Ok(Some(tip.revision().saturating_add(1))),
        Err(sqlx::Error::Database(e)) if e.message().contains(MOVED_ON) => Ok(None),
        Err(e) => Err(e).db(),
    }
}
