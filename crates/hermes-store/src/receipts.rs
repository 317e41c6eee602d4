//! Idempotent turns (table `turn_receipts`): a gateway request claims its key for one turn
//! ([`Store::claim_receipt`]); the transaction that stores the turn's step turns the claim into
//! a receipt holding the completion ([`StepExtras::receipt`]), so a retry — an SDK's after a
//! timeout or a 5xx, on this replica or another — is answered from the store and never reaches
//! the upstream a second time. A claim whose holder died lapses at its expiry; a turn that
//! failed gives its claim back ([`Store::release_receipt`]).

use std::time::Duration;

use sqlx::Row as _;

use crate::step::{ReceiptKey, ms};
use crate::{DbResult as _, Store, StoreError, Tip, now_ms};

/// A stored turn's receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Receipt {
    /// The digest of the request that made it.
    pub digest: String,
    /// The session the turn went to.
    pub session: String,
    /// The completion as the engine wrote it (JSON).
    pub completion: String,
}

/// What claiming a key found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The key is this request's now: run the turn.
    Claimed,
    /// A turn already answered it.
    Done(Receipt),
    /// Another request holds the key and is still running.
    Running,
}

impl Store {
    /// Claims `key` for one turn, for `running` at most (a claim older than that was left by a
    /// request that died). Finds instead the receipt of a turn that answered it (a body key's
    /// only while its session still ends where that turn left it), or that another request is
    /// running it.
    ///
    /// One statement when the key is new or its row expired (nearly every request): an insert
    /// that takes over an expired row and does nothing to a live one. Only a live row is read,
    /// in a write transaction of the key.
    pub async fn claim_receipt(
        &self,
        key: &ReceiptKey,
        running: Duration,
    ) -> Result<Claim, StoreError> {
        let now = now_ms();
        /// The claim's upsert, its values from `$from`.
        macro_rules! claim {
            ($from:literal) => {
                concat!(
                    $from,
                    " ON CONFLICT (tenant, key) DO UPDATE SET digest = excluded.digest, \
                     holder = excluded.holder, session = NULL, tip_revision = NULL, \
                     tip_last = NULL, completion = NULL, expires_at = excluded.expires_at \
                     WHERE turn_receipts.expires_at <= $6 RETURNING holder"
                )
            };
        }
        // On PostgreSQL the claim's commit does not wait for the WAL to reach the disk
        // (`synchronous_commit` off for this statement's own transaction alone): a claim is a
        // lease of seconds, and one lost with a crashed server only lets a retry that arrives
        // in that moment run anew; the step's write, and with it everything before it in the
        // WAL, is durable. One fsync per turn, not two.
        let sql = match self.backend {
            crate::Backend::Sqlite => claim!(
                "INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, \
                 tip_last, completion, expires_at) VALUES ($1, $2, $3, $4, NULL, NULL, NULL, \
                 NULL, $5)"
            ),
            crate::Backend::Postgres => claim!(
                "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true) AS was) \
                 INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, \
                 tip_last, completion, expires_at) SELECT $1, $2, $3, $4, NULL, NULL, NULL, \
                 NULL, $5 FROM lazy"
            ),
        };
        let claimed: Option<String> = sqlx::query_scalar(sql)
            .bind(key.tenant.as_str())
            .bind(key.key.as_str())
            .bind(key.digest.as_str())
            .bind(key.holder.as_str())
            .bind(now.saturating_add(ms(running)))
            .bind(now)
            .fetch_optional(&self.writes)
            .await
            .db()?;
        if claimed.is_some() {
            return Ok(Claim::Claimed);
        }
        self.claim_live_receipt(key, running).await
    }

    /// [`Store::claim_receipt`] of a key whose row was live when claimed: read in the key's
    /// write transaction, answered, still running, or (a body key whose conversation moved on,
    /// or a row that expired meanwhile) claimed anew.
    async fn claim_live_receipt(
        &self,
        key: &ReceiptKey,
        running: Duration,
    ) -> Result<Claim, StoreError> {
        let scope = format!("receipt:{}:{}", key.tenant, key.key);
        let mut tx = self.write_tx(&scope).await?;
        let now = now_ms();
        let row = sqlx::query(
            "SELECT digest, holder, session, tip_revision, tip_last, completion, expires_at \
             FROM turn_receipts WHERE tenant = $1 AND key = $2",
        )
        .bind(key.tenant.as_str())
        .bind(key.key.as_str())
        .fetch_optional(&mut *tx)
        .await
        .db()?;
        if let Some(row) = row {
            let expires_at: i64 = row.try_get("expires_at").db()?;
            let session: Option<String> = row.try_get("session").db()?;
            if expires_at > now {
                match session {
                    None => {
                        tx.rollback().await.db()?;
                        return Ok(Claim::Running);
                    }
                    Some(session) => {
                        let current = if key.by_body() {
                            let tip = sqlx::query(crate::tip::TIP)
                                .bind(session.as_str())
                                .fetch_optional(&mut *tx)
                                .await
                                .db()?;
                            match tip {
                                Some(tip) => Some(crate::tip::tip_of(&session, &tip)?),
                                None => None,
                            }
                        } else {
                            None
                        };
                        let left = Tip::new(
                            &session,
                            row.try_get("tip_revision").db()?,
                            row.try_get("tip_last").db()?,
                        );
                        if !key.by_body() || current.as_ref() == Some(&left) {
                            let receipt = Receipt {
                                digest: row.try_get("digest").db()?,
                                session,
                                completion: row.try_get("completion").db()?,
                            };
                            tx.rollback().await.db()?;
                            return Ok(Claim::Done(receipt));
                        }
                        // The conversation moved on since: the same body asks anew.
                    }
                }
            }
        }
        execute!(
            &mut *tx,
            "INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, \
             tip_last, completion, expires_at) VALUES ($1, $2, $3, $4, NULL, NULL, NULL, NULL, $5) \
             ON CONFLICT (tenant, key) DO UPDATE SET digest = excluded.digest, \
             holder = excluded.holder, session = NULL, tip_revision = NULL, tip_last = NULL, \
             completion = NULL, expires_at = excluded.expires_at",
            [
                key.tenant.as_str(),
                key.key.as_str(),
                key.digest.as_str(),
                key.holder.as_str(),
                now.saturating_add(ms(running))
            ]
        )?;
        tx.commit().await.db()?;
        Ok(Claim::Claimed)
    }

    /// Gives back a claim `key.holder` still holds (its turn failed: a retry runs anew); a
    /// receipt, or another holder's claim, stays.
    pub async fn release_receipt(&self, key: &ReceiptKey) -> Result<(), StoreError> {
        execute!(
            &self.writes,
            "DELETE FROM turn_receipts WHERE tenant = $1 AND key = $2 AND holder = $3 \
             AND session IS NULL",
            [key.tenant.as_str(), key.key.as_str(), key.holder.as_str()]
        )?;
        Ok(())
    }

    /// Extends a claim `key.holder` still holds (its turn still runs) to `ttl` from now.
    pub async fn renew_receipt(&self, key: &ReceiptKey, ttl: Duration) -> Result<(), StoreError> {
        execute!(
            &self.writes,
            "UPDATE turn_receipts SET expires_at = $1 WHERE tenant = $2 AND key = $3 \
             AND holder = $4 AND session IS NULL",
            [
                now_ms().saturating_add(ms(ttl)),
                key.tenant.as_str(),
                key.key.as_str(),
                key.holder.as_str()
            ]
        )?;
        Ok(())
    }

    /// Deletes receipts and claims that expired before `before` (ms since the epoch); returns
    /// how many.
    pub async fn sweep_receipts(&self, before: i64) -> Result<u64, StoreError> {
        self.sweep("DELETE FROM turn_receipts WHERE expires_at < $1", before)
            .await
    }
}
