//! Idempotent gateway turns: a request that names an `Idempotency-Key` — or, naming none,
//! arrives again with the same body while its conversation still ends where the first left it —
//! is answered with the stored completion instead of a second upstream call. The OpenAI and
//! Anthropic SDKs resend a request after a timeout or a 5xx on their own, so without this the
//! same turn is paid for twice and stored twice (the second as a branch).
//!
//! The request claims its key in the store before anything goes upstream
//! ([`hermes_store::Store::claim_receipt`]); the transaction that stores the turn's step turns
//! the claim into the receipt (the completion so far, as JSON), so a step is never stored
//! without it; a retry that finds the claim still held waits for it. A turn that fails gives
//! the claim back.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use hermes_core::driver::{DriverEvent, LogError, Step};
use hermes_core::{FinishReason, Message, Role, Usage};
use hermes_store::{Claim, ReceiptKey, Store};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::error::EngineError;

/// How long a receipt of a request that named an `Idempotency-Key` is kept: a day, as the
/// IETF's Idempotency-Key draft and Stripe's API keep theirs.
pub(crate) const KEYED_RECEIPTS_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a receipt of a request that named no key answers the same body again: long enough
/// for an SDK's retries (seconds to minutes), short enough that asking the same question later
/// asks anew.
pub const DEFAULT_RETRY_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Longest a client's `Idempotency-Key` may be.
pub const MAX_KEY_LEN: usize = 255;

/// How often a request whose key another request holds looks again.
const POLL: Duration = Duration::from_millis(100);

/// How long a claim holds without being renewed: its holder renews it every third of this
/// while its turn runs ([`renewing`]), so a claim of a replica that died lapses within it and
/// the retry that waited on it runs.
pub(crate) const CLAIM_TTL: Duration = Duration::from_secs(6);

/// What makes a gateway request idempotent: the client's `Idempotency-Key`, if it sent one,
/// and a digest of the request as it came in (its door and body bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Idempotency {
    /// The client's `Idempotency-Key` header.
    pub key: Option<String>,
    /// SHA-256 of the request (door and body), hex.
    pub digest: String,
}

impl Idempotency {
    /// The request that came through `door` with `body`, with the client's `key` if any; a key
    /// longer than [`MAX_KEY_LEN`] or not visible ASCII is refused naming `Idempotency-Key`.
    pub fn new(door: &str, body: &[u8], key: Option<&str>) -> Result<Self, EngineError> {
        if let Some(key) = key
            && (key.is_empty()
                || key.len() > MAX_KEY_LEN
                || !key.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
        {
            return Err(EngineError::InvalidParameter {
                parameter: "Idempotency-Key".into(),
                why: format!("the header must be 1 to {MAX_KEY_LEN} visible ASCII characters"),
            });
        }
        let mut hash = sha2::Sha256::new();
        hash.update(door.as_bytes());
        hash.update([0]);
        hash.update(body);
        Ok(Idempotency {
            key: key.map(str::to_owned),
            digest: hash.finalize().iter().map(|b| format!("{b:02x}")).collect(),
        })
    }
}

/// A claim this request holds: each stored step turns it into the receipt of the turn so far.
pub(crate) struct Pending {
    key: ReceiptKey,
    kept: Duration,
    so_far: Mutex<(Vec<Message>, Usage)>,
}

impl Pending {
    /// The receipt's key, the completion with `step` added (JSON) and how long it is kept.
    pub(crate) fn with_step(
        &self,
        step: &Step<'_>,
    ) -> Result<(ReceiptKey, String, Duration), LogError> {
        let mut so_far = self
            .so_far
            .lock()
            .map_err(|_| "the receipt's lock was poisoned")?;
        let added = step.messages.len().saturating_sub(step.added);
        so_far.0.extend_from_slice(&step.messages[added..]);
        if let Some(usage) = step.usage {
            so_far.1 = so_far.1.plus(*usage);
        }
        let stored = Stored {
            messages: so_far.0.clone(),
            usage: so_far.1,
            finish: step.finish.map(finish_text),
        };
        Ok((self.key.clone(), serde_json::to_string(&stored)?, self.kept))
    }

    /// The claim's key.
    pub(crate) fn key(&self) -> &ReceiptKey {
        &self.key
    }
}

/// A completion as a receipt keeps it.
#[derive(Serialize, Deserialize)]
struct Stored {
    messages: Vec<Message>,
    usage: Usage,
    finish: Option<String>,
}

fn finish_text(finish: &FinishReason) -> String {
    match finish {
        FinishReason::Stop => "stop".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Other(other) => other.clone(),
        _ => "stop".into(),
    }
}

/// What claiming a request's key decided.
pub(crate) enum Claimed {
    /// Run the turn; its steps write the receipt.
    Run(Pending),
    /// A turn already answered it: this is its completion.
    Answered(Answer),
}

/// A stored turn's completion, as its receipt holds it.
pub(crate) struct Answer {
    /// The session the turn went to.
    pub(crate) session: String,
    /// The messages the turn added.
    pub(crate) messages: Vec<Message>,
    /// Their usage, summed.
    pub(crate) usage: Usage,
    /// Why the last reply ended.
    pub(crate) finish: Option<FinishReason>,
}

/// Claims `idempotency` for a request of `tenant`, waiting up to `wait` while another request
/// holds it. `window`: how long a receipt of a request without a key answers the same body
/// (zero: such requests are never deduplicated: [`Claimed::Run`] with no claim is not possible,
/// so `None` is returned).
pub(crate) async fn claim(
    store: &Store,
    tenant: &str,
    idempotency: &Idempotency,
    window: Duration,
    wait: Duration,
) -> Result<Option<Claimed>, EngineError> {
    let (key, kept) = match &idempotency.key {
        Some(key) => (format!("key:{key}"), KEYED_RECEIPTS_KEPT),
        None if window.is_zero() => return Ok(None),
        None => (format!("body:{}", idempotency.digest), window),
    };
    sweep(store);
    let holder = uuid::Uuid::now_v7().simple().to_string();
    let key = ReceiptKey::new(tenant, &key, &idempotency.digest, &holder);
    let named = || match &idempotency.key {
        Some(_) => "Idempotency-Key".to_owned(),
        None => "request body".to_owned(),
    };
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match store.claim_receipt(&key, CLAIM_TTL).await? {
            Claim::Claimed => {
                return Ok(Some(Claimed::Run(Pending {
                    key,
                    kept,
                    so_far: Mutex::default(),
                })));
            }
            Claim::Done(receipt) => {
                if receipt.digest != idempotency.digest {
                    return Err(EngineError::InvalidParameter {
                        parameter: "Idempotency-Key".into(),
                        why: "this key was already used with a different request; a key \
                              names one request (send a new key for a new request)"
                            .into(),
                    });
                }
                let stored: Stored = serde_json::from_str(&receipt.completion).map_err(|e| {
                    EngineError::Failed(format!("a stored receipt does not read: {e}"))
                })?;
                tracing::info!(
                    session = %receipt.session,
                    key = if idempotency.key.is_some() { "Idempotency-Key" } else { "body" },
                    "a request the store already answered: its stored completion, no upstream call"
                );
                return Ok(Some(Claimed::Answered(Answer {
                    session: receipt.session,
                    messages: stored.messages,
                    usage: stored.usage,
                    finish: stored.finish.as_deref().map(FinishReason::from_chat),
                })));
            }
            Claim::Running => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(EngineError::InFlight { key: named() });
                }
                tokio::time::sleep(POLL).await;
            }
            _ => return Err(EngineError::Failed("an unknown receipt state".into())),
        }
    }
}

/// Runs `turn` while renewing `pending`'s claim every third of [`CLAIM_TTL`].
pub(crate) async fn renewing<T>(
    store: &Store,
    pending: &Pending,
    turn: impl std::future::Future<Output = T>,
) -> T {
    // Beside the turn, never in its way: a renewal waiting on the store (a pool timeout while
    // the database is away) must not stop the turn from being driven meanwhile.
    let renew = async {
        let mut tick = tokio::time::interval(CLAIM_TTL / 3);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = store.renew_receipt(&pending.key, CLAIM_TTL).await {
                tracing::warn!(error = %e, "cannot renew an idempotency claim");
            }
        }
    };
    tokio::select! {
        done = turn => done,
        _ = renew => unreachable!("renewing a claim never ends"),
    }
}

/// When this process last swept expired receipts (ms since the epoch).
static SWEPT: AtomicI64 = AtomicI64::new(0);

/// How long a session may stay staged (written in pieces) before the sweep takes it for one a
/// dead process left: writing 32 MiB takes well under a second.
const STAGED_FOR: i64 = 10 * 60 * 1000;

/// At most once a minute per process, off the request's path: deletes expired receipts and
/// lapsed claims, and sessions left half-written.
fn sweep(store: &Store) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let last = SWEPT.load(Ordering::Relaxed);
    if now - last < 60_000
        || SWEPT
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let store = store.clone();
    tokio::spawn(async move {
        match store.sweep_receipts(now).await {
            Ok(0) => {}
            Ok(swept) => tracing::debug!(swept, "expired turn receipts deleted"),
            Err(e) => tracing::warn!(error = %e, "deleting expired turn receipts failed"),
        }
        // The Responses door's kept responses expire the same way.
        match store.sweep_responses(now).await {
            Ok(0) => {}
            Ok(swept) => tracing::debug!(swept, "expired kept responses deleted"),
            Err(e) => tracing::warn!(error = %e, "deleting expired kept responses failed"),
        }
        // A large first contact is written in pieces; one whose process died on the way is
        // left staged (never seen by anyone) and goes after ten minutes.
        match store.sweep_staged(now - STAGED_FOR).await {
            Ok(0) => {}
            Ok(swept) => tracing::info!(swept, "sessions left half-written deleted"),
            Err(e) => tracing::warn!(error = %e, "deleting sessions left half-written failed"),
        }
    });
}

/// Tells `notify` a stored completion as the deltas a live reply would have streamed: each
/// reply's readable thinking, its text, its tool calls.
pub(crate) fn replay(messages: &[Message], notify: &(dyn Fn(&DriverEvent) + Send + Sync)) {
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        let thinking = message
            .reasoning_content
            .as_ref()
            .or(message.reasoning.as_ref())
            .map(|t| t.text().into_owned())
            .filter(|t| !t.is_empty());
        if let Some(text) = thinking {
            notify(&DriverEvent::Delta {
                reasoning: true,
                text,
            });
        }
        if let Some(text) = message
            .content
            .as_ref()
            .and_then(|c| c.as_str())
            .filter(|t| !t.is_empty())
        {
            notify(&DriverEvent::Delta {
                reasoning: false,
                text: text.into_owned(),
            });
        }
        for (index, call) in message.tool_calls.iter().flatten().enumerate() {
            let arguments = call
                .function
                .arguments
                .as_ref()
                .map_or_else(String::new, |a| {
                    a.as_str()
                        .map_or_else(|| a.get().to_owned(), |s| s.into_owned())
                });
            notify(&DriverEvent::ToolCallDelta {
                index,
                id: call.id.clone(),
                name: Some(call.function.name.clone()),
                arguments,
            });
        }
    }
}
