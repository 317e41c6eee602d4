//! Session leases: one process drives a session at a time. A lease names its holder and runs
//! until a deadline; the holder renews it while it works and releases it when done. A lease
//! that ran out, or whose holder the caller knows to be gone, may be taken over.

use std::time::Duration;

use sqlx::Row as _;

use crate::{DbResult as _, Store, StoreError, now_ms};

/// What acquiring a lease found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lease {
    /// The caller holds the lease now (new, renewed or taken over).
    Held,
    /// Another holder's live lease: who, and for how many more milliseconds.
    Busy {
        /// The other holder.
        holder: String,
        /// Milliseconds until it runs out unless renewed.
        remaining_ms: i64,
    },
}

impl Store {
    /// Takes, renews or takes over the lease on `session` for `holder`, valid for `ttl`, in one
    /// write transaction: a lease that ran out, is `holder`'s own, or whose holder `gone` says
    /// no longer exists, becomes `holder`'s.
    pub async fn acquire_lease(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
        gone: &(dyn Fn(&str) -> bool + Send + Sync),
    ) -> Result<Lease, StoreError> {
        let mut tx = self.write_tx(session).await?;
        let now = now_ms();
        let current =
            sqlx::query("SELECT holder, expires_at FROM session_leases WHERE session_id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        if let Some(row) = current {
            let other: String = row.try_get("holder").db()?;
            let expires_at: i64 = row.try_get("expires_at").db()?;
            if other != holder && expires_at > now && !gone(&other) {
                return Ok(Lease::Busy {
                    holder: other,
                    remaining_ms: expires_at - now,
                });
            }
        }
        let until = now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
        execute!(
            &mut *tx,
            "INSERT INTO session_leases (session_id, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
            [session, holder, until]
        )?;
        tx.commit().await.db()?;
        Ok(Lease::Held)
    }

    /// Gives the lease on `session` back, if `holder` holds it.
    pub async fn release_lease(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        execute!(
            &self.writes,
            "DELETE FROM session_leases WHERE session_id = $1 AND holder = $2",
            [session, holder]
        )?;
        Ok(())
    }
}
