//! Retention of the gateway's conversations (issue 32): a tenant's sessions deleted whole, or
//! those whose last update is older than an age, each through [`Store::delete`] so a branch
//! that shares a deleted session's prefix by reference ([`Fork`](crate::Fork)) is materialised
//! first and keeps its whole view. CLI sessions (no tenant) are never touched.

use crate::{DbResult as _, Store, StoreError};

impl Store {
    /// Deletes `tenant`'s sessions — all of them, or with `updated_before` (Unix ms) those last
    /// updated before it — with their messages and carriers: how many were deleted. Newest
    /// first, so a branch goes before the session it shares a prefix with (a branch that stays
    /// is materialised, see [`Store::delete`]).
    pub async fn purge_tenant(
        &self,
        tenant: &str,
        updated_before: Option<i64>,
    ) -> Result<u64, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM sessions WHERE tenant = $1 AND updated_at < $2 \
             ORDER BY created_at DESC, id DESC",
        )
        .bind(tenant)
        .bind(updated_before.unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .db()?;
        self.delete_all(&ids).await
    }

    /// Deletes every tenant's sessions last updated before `updated_before` (Unix ms): how
    /// many were deleted. `hermes serve`'s `[serve] retention` runs it.
    pub async fn purge_expired(&self, updated_before: i64) -> Result<u64, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM sessions WHERE tenant IS NOT NULL AND updated_at < $1 \
             ORDER BY created_at DESC, id DESC",
        )
        .bind(updated_before)
        .fetch_all(&self.pool)
        .await
        .db()?;
        self.delete_all(&ids).await
    }

    /// Deletes `ids` one transaction each; one another process deleted meanwhile is skipped.
    async fn delete_all(&self, ids: &[String]) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for id in ids {
            match self.delete(id).await {
                Ok(()) => deleted += 1,
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}
