//! What the transaction storing a step writes besides its messages ([`StepExtras`]): the
//! reply's usage, and the receipt of the request that made it (`receipts.rs`).

use std::time::Duration;

use hermes_core::Usage;

use crate::{StoreError, Tip, now_ms};

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
        execute!(
            &mut *tx,
            "INSERT INTO turn_receipts (tenant, key, digest, holder, session, tip_revision, \
             tip_last, completion, expires_at) VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8) \
             ON CONFLICT (tenant, key) DO UPDATE SET digest = excluded.digest, holder = NULL, \
             session = excluded.session, tip_revision = excluded.tip_revision, \
             tip_last = excluded.tip_last, completion = excluded.completion, \
             expires_at = excluded.expires_at",
            [
                key.tenant.as_str(),
                key.key.as_str(),
                key.digest.as_str(),
                session,
                tip.revision(),
                tip.last(),
                completion.as_str(),
                now_ms().saturating_add(ms(*kept))
            ]
        )?;
    }
    Ok(())
}
