//! One process drives a session at a time: a lease in the store, held while a chat session is
//! open and renewed in the background, waited for a bounded time when another process holds it.

use std::time::{Duration, Instant};

use hermes_store::{Lease, Store};

use crate::error::EngineError;

/// How long a lease runs without renewal.
const TTL: Duration = Duration::from_secs(30);
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// How often a waiting process asks again.
const POLL: Duration = Duration::from_millis(100);

/// This process's host name (for telling whether a lease's holder still runs here).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// A new holder name: `host:pid:nonce`.
fn holder() -> String {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}:{}:{nonce:x}", host(), std::process::id())
}

/// True when `holder` names a process on this host that no longer runs (a crashed or killed
/// hermes): its lease may be taken over at once instead of after it runs out.
fn gone(holder: &str) -> bool {
    let mut parts = holder.splitn(3, ':');
    let (Some(host_name), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    host_name == host()
        && pid != std::process::id()
        && cfg!(target_os = "linux")
        && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// A held lease on one session, renewed in the background until released or dropped.
#[derive(Debug)]
pub(crate) struct Held {
    store: Store,
    session: String,
    holder: String,
    renewer: tokio::task::JoinHandle<()>,
}

impl Held {
    /// Takes the lease on `session`, waiting up to `wait` for another process to finish.
    pub(crate) async fn acquire(
        store: &Store,
        session: &str,
        wait: Duration,
    ) -> Result<Held, EngineError> {
        let me = holder();
        let started = Instant::now();
        loop {
            match store.acquire_lease(session, &me, TTL, &gone).await? {
                Lease::Held => break,
                Lease::Busy { holder, .. } if started.elapsed() >= wait => {
                    return Err(EngineError::Failed(format!(
                        "session {session} is in use by another process ({holder}); nothing was stored — try again when it finishes"
                    )));
                }
                Lease::Busy { .. } => tokio::time::sleep(POLL).await,
            }
        }
        let renewer = {
            let (store, session, me) = (store.clone(), session.to_owned(), me.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    if let Err(e) = store.acquire_lease(&session, &me, TTL, &gone).await {
                        tracing::warn!(session = %session, error = %e, "cannot renew the session lease");
                    }
                }
            })
        };
        tracing::debug!(session, holder = %me, "session lease held");
        Ok(Held {
            store: store.clone(),
            session: session.to_owned(),
            holder: me,
            renewer,
        })
    }

    /// The session it is for.
    pub(crate) fn session(&self) -> &str {
        &self.session
    }

    /// Gives the lease back.
    pub(crate) async fn release(self) -> Result<(), EngineError> {
        self.renewer.abort();
        self.store
            .release_lease(&self.session, &self.holder)
            .await?;
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Without an explicit release the lease runs out (or is taken over once this process
        // is gone); stop renewing it.
        self.renewer.abort();
    }
}
