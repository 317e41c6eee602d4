//! The gateway's shared limits (issue 32): requests per window counted in sharded rows, and
//! concurrency slots with an expiry their replica renews, so every replica on one store counts
//! the same and a dead replica's slots free themselves.
//!
//! Rate: a window's count of a tenant is spread over up to [`RATE_SHARDS`] rows, each with its
//! own share of the limit (the shares sum to the limit exactly). One request is one statement
//! on one row — `INSERT … ON CONFLICT DO UPDATE SET used = used + 1 WHERE used < share
//! RETURNING used` — so concurrent requests contend on several rows, not one, and the total
//! admitted never exceeds the limit. A full share sends the request on to the next shard; the
//! caller remembers which shards it found full ([`RateAdmission::full`]) and skips them for the
//! rest of the window, so a full window costs no statement at all.
//!
//! A replica may claim several places of a shard at once (`want`, [`RateAdmission::granted`])
//! and admit that many requests without another statement: the store never counts more than
//! the limit, and the places a replica claimed but did not use by the window's end are lost to
//! that window (at most `want - 1` per replica).

use std::time::Duration;

use sqlx::Row as _;

use crate::{DbResult as _, Store, StoreError, now_ms};

/// The most rows one window of one tenant is spread over.
pub const RATE_SHARDS: u32 = 8;

/// Holders renewed per statement by [`Store::renew_slots`].
const HOLDERS_PER_QUERY: usize = 256;

/// What [`Store::admit_request`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateAdmission {
    /// The request is counted in the window.
    pub admitted: bool,
    /// The places counted for the caller (0 when refused): the request's own, and those it
    /// may admit later in the same window without asking again.
    pub granted: u32,
    /// The shards known full now (bit `i`: shard `i`), those passed in included.
    pub full: u64,
    /// Every shard of the window is full.
    pub window_full: bool,
}

/// The shards a window of `limit` is spread over, and shard `i`'s share: the limit divided as
/// evenly as whole requests allow (the first shards take the remainder), summing to `limit`.
pub fn rate_shares(limit: u32) -> Vec<u32> {
    let shards = limit.clamp(1, RATE_SHARDS);
    (0..shards)
        .map(|i| limit / shards + u32::from(i < limit % shards))
        .collect()
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    /// Counts one request of `tenant` in the window that starts at `window_start` (Unix ms;
    /// every replica must compute the same start) against `limit` for the window, and up to
    /// `want - 1` more the caller may admit later in that window: tries the shards from
    /// `first` on, skipping those in `full`, until one has room (`want` places where the shard
    /// has them, else one). One statement per shard tried (two where a shard has room for one
    /// but not `want`); none when `full` already covers every shard.
    pub async fn admit_request(
        &self,
        tenant: &str,
        window_start: i64,
        limit: u32,
        first: u32,
        full: u64,
        want: u32,
    ) -> Result<RateAdmission, StoreError> {
        let shares = rate_shares(limit);
        let all = (1u64 << shares.len()) - 1;
        let mut full = full & all;
        let n = u32::try_from(shares.len()).unwrap_or(1);
        for k in 0..n {
            let shard = (first % n + k) % n;
            if limit == 0 || full & (1 << shard) != 0 {
                continue;
            }
            let share = shares[shard as usize];
            let places = want.clamp(1, share);
            let claim = |n: u32| {
                sqlx::query_scalar::<_, i64>(
                    "INSERT INTO rate_counts (tenant, window_start, shard, used) VALUES ($1, $2, $3, $5) \
                     ON CONFLICT (tenant, window_start, shard) DO UPDATE SET used = rate_counts.used + $5 \
                     WHERE rate_counts.used + $5 <= $4 RETURNING used",
                )
                .bind(tenant)
                .bind(window_start)
                .bind(i64::from(shard))
                .bind(i64::from(share))
                .bind(i64::from(n))
                .fetch_optional(&self.writes)
            };
            let mut granted = places;
            let mut used = claim(places).await.db()?;
            if used.is_none() && places > 1 {
                granted = 1;
                used = claim(1).await.db()?;
            }
            match used {
                Some(used) => {
                    if used >= i64::from(share) {
                        full |= 1 << shard;
                    }
                    return Ok(RateAdmission {
                        admitted: true,
                        granted,
                        full,
                        window_full: full == all,
                    });
                }
                None => full |= 1 << shard,
            }
        }
        Ok(RateAdmission {
            admitted: false,
            granted: 0,
            full: all,
            window_full: true,
        })
    }

    /// How many requests of `tenant` the window starting at `window_start` admitted (all
    /// shards).
    pub async fn admitted_requests(
        &self,
        tenant: &str,
        window_start: i64,
    ) -> Result<u64, StoreError> {
        let used: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(SUM(used) AS BIGINT) FROM rate_counts WHERE tenant = $1 AND window_start = $2",
        )
        .bind(tenant)
        .bind(window_start)
        .fetch_one(&self.pool)
        .await
        .db()?;
        Ok(used.map_or(0, |u| u64::try_from(u).unwrap_or(0)))
    }

    /// The tokens `tenant` spent since `minute_start` and since `day_start` (Unix ms), summed
    /// over the usage [`Store::add_usage`] recorded for its conversations (every replica's), in
    /// one statement over the `(tenant, at)` index.
    pub async fn tenant_tokens(
        &self,
        tenant: &str,
        minute_start: i64,
        day_start: i64,
    ) -> Result<(u64, u64), StoreError> {
        let row = sqlx::query(
            "SELECT CAST(COALESCE(SUM(CASE WHEN at >= $2 THEN tokens ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN at >= $3 THEN tokens ELSE 0 END), 0) AS BIGINT) \
             FROM tenant_usage WHERE tenant = $1 AND at >= $4",
        )
        .bind(tenant)
        .bind(minute_start)
        .bind(day_start)
        .bind(minute_start.min(day_start))
        .fetch_one(&self.pool)
        .await
        .db()?;
        let sum = |i: usize| -> Result<u64, StoreError> {
            let n: i64 = row.try_get(i).db()?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        Ok((sum(0)?, sum(1)?))
    }

    /// Deletes the rate counts of windows that started before `before` (Unix ms); how many
    /// rows went.
    pub async fn sweep_rate_counts(&self, before: i64) -> Result<u64, StoreError> {
        self.sweep("DELETE FROM rate_counts WHERE window_start < $1", before)
            .await
    }

    /// Deletes the tenants' usage recorded before `before` (Unix ms); how many rows went.
    pub async fn sweep_tenant_usage(&self, before: i64) -> Result<u64, StoreError> {
        self.sweep("DELETE FROM tenant_usage WHERE at < $1", before)
            .await
    }

    /// Claims one of `tenant`'s `max` concurrency slots for `holder` (unique per request) until
    /// `ttl` from now: the slot number, or `None` when all `max` are held and unexpired. A slot
    /// whose expiry passed (its replica died, or stopped renewing) is free.
    pub async fn claim_slot(
        &self,
        tenant: &str,
        max: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<i64>, StoreError> {
        let now = now_ms();
        // Start at a place that differs per holder, so racing claims try different slots.
        let offset = holder
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        let claim = |slot: i64| {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO concurrency_slots (tenant, slot, holder, expires_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant, slot) DO UPDATE SET holder = excluded.holder, \
                 expires_at = excluded.expires_at WHERE concurrency_slots.expires_at <= $5 \
                 RETURNING slot",
            )
            .bind(tenant)
            .bind(slot)
            .bind(holder)
            .bind(now.saturating_add(millis(ttl)))
            .bind(now)
            .fetch_optional(&self.writes)
        };
        // The holder's own slot first: free unless the tenant runs many requests at once, so a
        // claim is one statement. Taken: the busy slots are read, and the free ones tried.
        let first = i64::from(offset % max);
        if let Some(slot) = claim(first).await.db()? {
            return Ok(Some(slot));
        }
        let busy: Vec<i64> = sqlx::query_scalar(
            "SELECT slot FROM concurrency_slots WHERE tenant = $1 AND slot < $2 AND expires_at > $3",
        )
        .bind(tenant)
        .bind(i64::from(max))
        .bind(now)
        .fetch_all(&self.pool)
        .await
        .db()?;
        for k in 1..max {
            let slot = i64::from((offset.wrapping_add(k)) % max);
            if busy.contains(&slot) {
                continue;
            }
            if let Some(slot) = claim(slot).await.db()? {
                return Ok(Some(slot));
            }
        }
        Ok(None)
    }

    /// Moves the expiry of the slots `holders` hold to `ttl` from now (a replica renews the
    /// slots of its running requests with this, a few statements however many run); how many
    /// slots were renewed.
    pub async fn renew_slots(&self, holders: &[String], ttl: Duration) -> Result<u64, StoreError> {
        self.slots_expire_at(holders, now_ms().saturating_add(millis(ttl)))
            .await
    }

    /// Frees the slots `holders` hold, if they still do (a replica gives back the slots it kept
    /// for its next requests with this, a few statements however many); how many were freed.
    pub async fn release_slots(&self, holders: &[String]) -> Result<u64, StoreError> {
        self.slots_expire_at(holders, 0).await
    }

    /// Sets the expiry of the slots `holders` hold to `until` (Unix ms).
    async fn slots_expire_at(&self, holders: &[String], until: i64) -> Result<u64, StoreError> {
        let mut renewed = 0;
        for chunk in holders.chunks(HOLDERS_PER_QUERY) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "UPDATE concurrency_slots SET expires_at = $1 WHERE holder IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(until);
            for holder in chunk {
                query = query.bind(holder);
            }
            renewed += query.execute(&self.writes).await.db()?.rows_affected();
        }
        Ok(renewed)
    }

    /// How many of `tenant`'s slots are held (unexpired) now.
    pub async fn slots_in_use(&self, tenant: &str) -> Result<u64, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM concurrency_slots WHERE tenant = $1 AND expires_at > $2",
        )
        .bind(tenant)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await
        .db()?;
        let n: i64 = row.try_get("n").db()?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
