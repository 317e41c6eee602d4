//! The Responses door's responses kept by id (table `responses`): a response made with `store`
//! on is the conversation as of that response — its session and how many of the session's
//! messages stood then — so a later request naming it as `previous_response_id` continues from
//! there, on any replica. Per tenant: one tenant's id names nothing for another.

use std::time::Duration;

use sqlx::Row as _;

use crate::step::ms;
use crate::{DbResult as _, Store, StoreError, now_ms};

/// Where a kept response left its conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeptResponse {
    /// The session it went to.
    pub session: String,
    /// How many of the session's messages stood once it was stored.
    pub upto: usize,
}

impl Store {
    /// Keeps `tenant`'s response `id` for `kept`: the conversation stood at the first `upto`
    /// messages of `session` once it was stored.
    pub async fn keep_response(
        &self,
        tenant: &str,
        id: &str,
        session: &str,
        upto: usize,
        kept: Duration,
    ) -> Result<(), StoreError> {
        let upto = i64::try_from(upto).unwrap_or(i64::MAX);
        execute!(
            &self.writes,
            "INSERT INTO responses (tenant, id, session, upto, expires_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (tenant, id) DO UPDATE SET session = excluded.session, \
             upto = excluded.upto, expires_at = excluded.expires_at",
            [tenant, id, session, upto, now_ms().saturating_add(ms(kept))]
        )?;
        Ok(())
    }

    /// Where `tenant`'s response `id` left its conversation, while it is kept.
    pub async fn kept_response(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<KeptResponse>, StoreError> {
        let row = sqlx::query(
            "SELECT session, upto FROM responses \
             WHERE tenant = $1 AND id = $2 AND expires_at > $3",
        )
        .bind(tenant)
        .bind(id)
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await
        .db()?;
        let Some(row) = row else {
            return Ok(None);
        };
        let upto: i64 = row.try_get("upto").db()?;
        Ok(Some(KeptResponse {
            session: row.try_get("session").db()?,
            upto: usize::try_from(upto).unwrap_or(0),
        }))
    }

    /// Deletes responses kept past `before` (ms since the epoch); returns how many.
    pub async fn sweep_responses(&self, before: i64) -> Result<u64, StoreError> {
        self.sweep("DELETE FROM responses WHERE expires_at < $1", before)
            .await
    }
}
