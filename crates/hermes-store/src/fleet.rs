//! Fleet verdicts: what providers refused, kept for the whole store (every session, every
//! process, every machine on a shared PostgreSQL), one row per refused field per
//! (wire, provider, host, model). They live beside each session's own record (docs/spec.md §6),
//! which they never change.
//!
//! Each row records when a refusal last confirmed it (`learned_at`). One older than the
//! caller's age limit is re-probed once: a session claims it ([`Store::claim_fleet_probe`],
//! an atomic update only one claimant wins), sends the field again, and then either the
//! provider refuses it again ([`Store::learn_fleet_verdicts`] re-learns it: fresh again, claim
//! gone) or accepts it ([`Store::forget_probed_fleet_verdicts`] drops the row). A claim whose
//! session never sent the field is given back ([`Store::release_fleet_probes`]); a claim left by
//! a process that died is taken over once it is older than the caller's stale limit.

use hermes_core::RouteTarget;
use sqlx::Row as _;

use crate::{DbResult as _, Store, StoreError, VerdictFilter, now_ms};

/// One fleet verdict: `field` refused on `wire` by (`provider`, `host`, `model`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetVerdict {
    /// The wire's id (`chat` for chat completions).
    pub wire: String,
    /// Provider, lowercased.
    pub provider: String,
    /// Host without port (empty when the target has none).
    pub host: String,
    /// Model id, case kept.
    pub model: String,
    /// The refused field, in the wire's spelling (`reasoning_details`, …).
    pub field: String,
    /// When a refusal last confirmed it, Unix milliseconds.
    pub learned_at: i64,
    /// When a session claimed it for a re-probe (Unix milliseconds), if one has.
    pub probing_since: Option<i64>,
}

impl FleetVerdict {
    fn from_row(row: &crate::DbRow) -> Result<Self, StoreError> {
        Ok(FleetVerdict {
            wire: row.try_get("wire").db()?,
            provider: row.try_get("provider").db()?,
            host: row.try_get("host").db()?,
            model: row.try_get("model").db()?,
            field: row.try_get("field").db()?,
            learned_at: row.try_get("learned_at").db()?,
            probing_since: row.try_get("probing_since").db()?,
        })
    }

    /// True when `filter` selects this verdict (its wire, provider and model).
    pub fn matches(&self, filter: &VerdictFilter) -> bool {
        filter
            .wire
            .as_deref()
            .is_none_or(|w| w.trim().eq_ignore_ascii_case(&self.wire))
            && filter
                .provider
                .as_deref()
                .is_none_or(|p| p.trim().to_lowercase() == self.provider)
            && filter.model.as_deref().is_none_or(|m| m == self.model)
    }
}

/// The key columns of a target, as verdicts store them.
fn key(target: &RouteTarget) -> (String, String, &str) {
    (
        target.provider.trim().to_lowercase(),
        target.host_key(),
        target.model.as_str(),
    )
}

const COLUMNS: &str = "wire, provider, host, model, field, learned_at, probing_since";

/// One row's key, bound as `$1`..`$5` (wire, provider, host, model, field) of every statement
/// that names one row.
pub(crate) struct RowKey<'a> {
    wire: &'a str,
    provider: &'a str,
    host: &'a str,
    model: &'a str,
    field: &'a str,
}

impl<'a> RowKey<'a> {
    /// The key of `field` of `wire`'s verdict on the target keyed `(provider, host, model)`
    /// ([`key`]).
    fn at(
        wire: &'a str,
        (provider, host, model): (&'a str, &'a str, &'a str),
        field: &'a str,
    ) -> Self {
        RowKey {
            wire,
            provider,
            host,
            model,
            field,
        }
    }

    pub(crate) fn of(verdict: &'a FleetVerdict) -> Self {
        RowKey {
            wire: &verdict.wire,
            provider: &verdict.provider,
            host: &verdict.host,
            model: &verdict.model,
            field: &verdict.field,
        }
    }

    /// `sql` with the key bound; its own values are `$6` on.
    fn query(
        &self,
        sql: &'static str,
    ) -> sqlx::query::Query<'a, sqlx::Any, sqlx::any::AnyArguments> {
        sqlx::query(sql)
            .bind(self.wire)
            .bind(self.provider)
            .bind(self.host)
            .bind(self.model)
            .bind(self.field)
    }
}

/// How long this process goes by the fleet verdicts it read for a wire and target
/// ([`Store::fleet_verdicts_for`]): what another process learned reaches this one's requests
/// within it; what this process learns, claims or drops, at once (its reads are forgotten).
pub const FLEET_READ_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A wire and target as fleet verdicts are keyed: (wire, provider, host, model).
type TargetKey = (String, String, String, String);

/// The fleet verdicts a process read lately, by wire and target, with when.
#[derive(Debug, Default)]
pub(crate) struct FleetRead(
    std::sync::Mutex<std::collections::HashMap<TargetKey, (Vec<FleetVerdict>, std::time::Instant)>>,
);

impl FleetRead {
    /// Forgets every read (this process changed a verdict).
    fn forget(&self) {
        if let Ok(mut read) = self.0.lock() {
            read.clear();
        }
    }
}

impl Store {
    /// Records that `target` refused `fields` on `wire`, for the whole store: each row is
    /// (re)learned now, and any re-probe claim on it ends. One statement per field, each an
    /// upsert, so concurrent learners never lose a row.
    pub async fn learn_fleet_verdicts(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<(), StoreError> {
        let (provider, host, model) = key(target);
        let now = now_ms();
        for field in fields {
            let key = RowKey::at(wire, (&provider, &host, model), field);
            self.put_fleet_verdict(&key, now).await?;
        }
        self.fleet_read.forget();
        tracing::debug!(
            wire,
            provider,
            host,
            model,
            ?fields,
            "fleet verdict learned"
        );
        Ok(())
    }

    /// Stores the verdict `key` as learned at `learned_at`, unclaimed (an upsert: concurrent
    /// writers never lose a row).
    pub(crate) async fn put_fleet_verdict(
        &self,
        key: &RowKey<'_>,
        learned_at: i64,
    ) -> Result<(), StoreError> {
        execute!(
            &self.writes,
            key.query(
                "INSERT INTO fleet_verdicts (wire, provider, host, model, field, learned_at, probing_since) \
                 VALUES ($1, $2, $3, $4, $5, $6, NULL) ON CONFLICT (wire, provider, host, model, field) \
                 DO UPDATE SET learned_at = excluded.learned_at, probing_since = NULL"
            ),
            [learned_at]
        )?;
        Ok(())
    }

    /// The fleet verdicts `query` selects ([`COLUMNS`]), in its order.
    async fn fleet_rows(
        &self,
        query: sqlx::query::Query<'_, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> Result<Vec<FleetVerdict>, StoreError> {
        let rows = query.fetch_all(&self.pool).await.db()?;
        rows.iter().map(FleetVerdict::from_row).collect()
    }

    /// Every fleet verdict, by wire, provider, host, model and field.
    pub async fn fleet_verdicts(&self) -> Result<Vec<FleetVerdict>, StoreError> {
        self.fleet_rows(sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM fleet_verdicts ORDER BY wire, provider, host, model, field"
        ))))
        .await
    }

    /// The fleet verdicts on `wire` for `target`, by field: as this process read them within
    /// [`FLEET_READ_EVERY`], else read now.
    pub async fn fleet_verdicts_for(
        &self,
        wire: &str,
        target: &RouteTarget,
    ) -> Result<Vec<FleetVerdict>, StoreError> {
        let (provider, host, model) = key(target);
        let at = (wire.to_owned(), provider, host, model.to_owned());
        if let Ok(read) = self.fleet_read.0.lock()
            && let Some((verdicts, when)) = read.get(&at)
            && when.elapsed() < FLEET_READ_EVERY
        {
            return Ok(verdicts.clone());
        }
        let query = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM fleet_verdicts WHERE wire = $1 AND provider = $2 AND host = $3 \
             AND model = $4 ORDER BY field"
        )));
        let verdicts = self
            .fleet_rows(query.bind(wire).bind(&at.1).bind(&at.2).bind(model))
            .await?;
        if let Ok(mut read) = self.fleet_read.0.lock() {
            // Bounded by the targets a process serves; a process serving very many forgets
            // them all at once rather than growing.
            if read.len() >= 4096 {
                read.clear();
            }
            read.insert(at, (verdicts.clone(), std::time::Instant::now()));
        }
        Ok(verdicts)
    }

    /// Claims `verdict` for a re-probe, if it was learned before `learned_before` and nobody
    /// holds a claim on it that started at or after `stale_before` (a claim older than that was
    /// left by a process that died). Returns the claim's time when this caller won it: exactly
    /// one concurrent claimant does (one conditional update).
    pub async fn claim_fleet_probe(
        &self,
        verdict: &FleetVerdict,
        learned_before: i64,
        stale_before: i64,
    ) -> Result<Option<i64>, StoreError> {
        let now = now_ms();
        let done = execute!(
            &self.writes,
            RowKey::of(verdict).query(
                "UPDATE fleet_verdicts SET probing_since = $6 WHERE wire = $1 AND provider = $2 \
                 AND host = $3 AND model = $4 AND field = $5 AND learned_at < $7 \
                 AND (probing_since IS NULL OR probing_since < $8)"
            ),
            [now, learned_before, stale_before]
        )?;
        self.fleet_read.forget();
        Ok((done.rows_affected() == 1).then_some(now))
    }

    /// The provider accepted `fields` on `wire` for `target` while this caller's claim (made at
    /// `since`) was on them: those verdicts are dropped. A row re-learned or claimed by someone
    /// else since then is left alone. Returns how many were dropped.
    pub async fn forget_probed_fleet_verdicts(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
        since: i64,
    ) -> Result<usize, StoreError> {
        let (provider, host, model) = key(target);
        let mut dropped = 0;
        for field in fields {
            let key = RowKey::at(wire, (&provider, &host, model), field);
            let done = execute!(
                &self.writes,
                key.query(
                    "DELETE FROM fleet_verdicts WHERE wire = $1 AND provider = $2 AND host = $3 \
                     AND model = $4 AND field = $5 AND probing_since = $6"
                ),
                [since]
            )?;
            dropped += done.rows_affected() as usize;
        }
        self.fleet_read.forget();
        if dropped > 0 {
            tracing::info!(
                wire,
                provider,
                host,
                model,
                ?fields,
                "re-probed fields accepted; fleet verdict dropped"
            );
        }
        Ok(dropped)
    }

    /// Gives back this caller's claims (made at `since`) on `fields`, unprobed: the verdicts stay
    /// as they were, and the next session may claim them.
    pub async fn release_fleet_probes(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
        since: i64,
    ) -> Result<(), StoreError> {
        let (provider, host, model) = key(target);
        for field in fields {
            let key = RowKey::at(wire, (&provider, &host, model), field);
            execute!(
                &self.writes,
                key.query(
                    "UPDATE fleet_verdicts SET probing_since = NULL WHERE wire = $1 AND provider = $2 \
                     AND host = $3 AND model = $4 AND field = $5 AND probing_since = $6"
                ),
                [since]
            )?;
        }
        self.fleet_read.forget();
        Ok(())
    }

    /// Forgets the fleet verdicts `filter` selects; returns how many.
    pub async fn clear_fleet_verdicts(&self, filter: &VerdictFilter) -> Result<usize, StoreError> {
        let mut cleared = 0;
        for v in self.fleet_verdicts().await? {
            if !v.matches(filter) {
                continue;
            }
            let done = execute!(
                &self.writes,
                RowKey::of(&v).query(
                    "DELETE FROM fleet_verdicts WHERE wire = $1 AND provider = $2 AND host = $3 \
                     AND model = $4 AND field = $5"
                ),
                []
            )?;
            cleared += done.rows_affected() as usize;
        }
        self.fleet_read.forget();
        Ok(cleared)
    }
}
