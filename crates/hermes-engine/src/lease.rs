//! One process drives a session at a time: a lease in the store, held while a chat session is
//! open and renewed in the background, waited for a bounded time when another process holds it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes_store::{Lease, Store};

use crate::error::EngineError;

/// How long a lease runs without renewal.
const TTL: Duration = Duration::from_secs(30);
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// How often a waiting process asks again.
const POLL: Duration = Duration::from_millis(100);

/// This process's host name (shown in a busy session's error).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Where this process's PIDs mean something: the kernel's boot id and this process's PID
/// namespace (`/proc/self/ns/pid`). Two containers with the same host name have different PID
/// namespaces, and two machines (or two boots) different boot ids, so a PID is only looked up
/// where it was issued. Empty when either cannot be read (then no holder is ever judged gone:
/// its lease runs out instead).
fn pid_place() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().to_owned())
        .unwrap_or_default();
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if boot.is_empty() || namespace.is_empty() {
        return String::new();
    }
    // `pid:[4026531836]` → `4026531836`: no `:` inside the holder's own fields.
    let namespace = namespace.trim_start_matches("pid:[").trim_end_matches(']');
    format!("{boot}/{namespace}")
}

/// A new holder name: `host:pid:nonce:place` (see [`pid_place`]).
fn holder() -> String {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{}:{nonce:x}:{}",
        host(),
        std::process::id(),
        pid_place()
    )
}

/// True when `holder` names a process that no longer runs in this PID namespace of this boot (a
/// crashed or killed hermes): its lease may be taken over at once instead of after it runs out.
fn gone(holder: &str) -> bool {
    gone_from(holder, &pid_place(), std::process::id(), &|pid| {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    })
}

/// [`gone`] seen from `place` by the process `me`, with `runs` telling whether a PID runs here.
/// A holder from another place (another container with the same host name, another machine, an
/// earlier boot) or in the older `host:pid:nonce` form is never judged gone.
fn gone_from(holder: &str, place: &str, me: u32, runs: &dyn Fn(u32) -> bool) -> bool {
    let mut parts = holder.splitn(4, ':');
    let (Some(_host), Some(pid), Some(_nonce), Some(theirs)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    !place.is_empty() && theirs == place && pid != me && cfg!(target_os = "linux") && !runs(pid)
}

/// The sessions this process drives, one in-process lock each: two holders in one process
/// queue on it instead of polling the store's lease row. Shared by an engine and its clones.
#[derive(Debug, Default, Clone)]
pub(crate) struct Local(Arc<std::sync::Mutex<HashMap<String, Entry>>>);

/// One session's in-process lock and the name of its holder (for a busy error).
#[derive(Debug)]
struct Entry {
    lock: std::sync::Weak<tokio::sync::Mutex<()>>,
    holder: String,
}

impl Local {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lock of `session` (made on first use; forgotten once no holder or waiter has it).
    fn lock(&self, session: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut entries = self.entries();
        entries.retain(|_, entry| entry.lock.strong_count() > 0);
        if let Some(lock) = entries.get(session).and_then(|e| e.lock.upgrade()) {
            return lock;
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        entries.insert(
            session.to_owned(),
            Entry {
                lock: Arc::downgrade(&lock),
                holder: String::new(),
            },
        );
        lock
    }

    /// Who holds `session` in this process now.
    fn holder(&self, session: &str) -> String {
        self.entries()
            .get(session)
            .map(|e| e.holder.clone())
            .unwrap_or_default()
    }

    fn set_holder(&self, session: &str, holder: &str) {
        if let Some(entry) = self.entries().get_mut(session) {
            holder.clone_into(&mut entry.holder);
        }
    }
}

/// A held lease on one session, renewed in the background until released or dropped. Dropped
/// without [`Held::release`] (a request whose client went away), it gives the lease back at
/// once from a task of its own.
#[derive(Debug)]
pub(crate) struct Held {
    store: Store,
    session: String,
    holder: String,
    /// `None` once released.
    renewer: Option<tokio::task::JoinHandle<()>>,
    /// This process's lock on the session, held as long as the lease.
    local: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// Set by the renewer when another holder took the lease over (it ran out meanwhile).
    lost: Arc<std::sync::atomic::AtomicBool>,
}

impl Held {
    /// Takes the lease on `session`, waiting up to `wait` for another process to finish.
    /// Another holder in this process (`local`) is waited for on an in-process lock; one in
    /// another process by polling the store.
    pub(crate) async fn acquire(
        local: &Local,
        store: &Store,
        session: &str,
        wait: Duration,
    ) -> Result<Held, EngineError> {
        let me = holder();
        let started = Instant::now();
        let guard = tokio::time::timeout(wait, local.lock(session).lock_owned())
            .await
            .map_err(|_| EngineError::Busy {
                session: session.to_owned(),
                holder: local.holder(session),
            })?;
        local.set_holder(session, &me);
        loop {
            match store.acquire_lease(session, &me, TTL, &gone).await? {
                Lease::Held => break,
                Lease::Busy { holder, .. } if started.elapsed() >= wait => {
                    return Err(EngineError::Busy {
                        session: session.to_owned(),
                        holder,
                    });
                }
                Lease::Busy { .. } => tokio::time::sleep(POLL).await,
            }
        }
        let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let renewer = {
            let (store, session, me) = (store.clone(), session.to_owned(), me.clone());
            let lost = Arc::clone(&lost);
            // A root span: the renewer outlives the open or turn that took the lease.
            let span = tracing::info_span!(parent: None, "lease_renewer", session = %session, holder = %me);
            tokio::spawn(tracing::Instrument::instrument(
                async move {
                    loop {
                        tokio::time::sleep(RENEW_EVERY).await;
                        match store.acquire_lease(&session, &me, TTL, &gone).await {
                            Ok(Lease::Held) => {}
                            Ok(Lease::Busy { holder, .. }) => {
                                tracing::warn!(session = %session, holder = %holder, "the session lease ran out and was taken over");
                                lost.store(true, std::sync::atomic::Ordering::Relaxed);
                                return;
                            }
                            Err(e) => {
                                tracing::warn!(session = %session, error = %e, "cannot renew the session lease");
                            }
                        }
                    }
                },
                span,
            ))
        };
        tracing::debug!(session, holder = %me, "session lease held");
        Ok(Held {
            store: store.clone(),
            session: session.to_owned(),
            holder: me,
            renewer: Some(renewer),
            local: Some(guard),
            lost,
        })
    }

    /// The session it is for.
    pub(crate) fn session(&self) -> &str {
        &self.session
    }

    /// True when another holder took the lease over (it ran out unrenewed): what memory holds
    /// of the session may be stale.
    pub(crate) fn lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Gives the lease back.
    pub(crate) async fn release(mut self) -> Result<(), EngineError> {
        let renewer = self.renewer.take();
        let local = self.local.take();
        give_back(&self.store, &self.session, &self.holder, renewer).await?;
        drop(local);
        Ok(())
    }
}

/// Stops `renewer` and deletes the lease row. Waits until the renewer has stopped: a renewal
/// already inside its transaction would otherwise write the lease back after the delete.
async fn give_back(
    store: &Store,
    session: &str,
    holder: &str,
    renewer: Option<tokio::task::JoinHandle<()>>,
) -> Result<(), EngineError> {
    if let Some(renewer) = renewer {
        renewer.abort();
        let _ = renewer.await;
    }
    store.release_lease(session, holder).await?;
    Ok(())
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(renewer) = self.renewer.take() else {
            return;
        };
        renewer.abort();
        // Dropped mid-turn (a client gone, a cancelled future): give the lease back now rather
        // than after its TTL, keeping this process's lock until then so a queued request of
        // this process finds the row gone. Without a runtime the lease runs out instead.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, session, holder, local) = (
            self.store.clone(),
            std::mem::take(&mut self.session),
            std::mem::take(&mut self.holder),
            self.local.take(),
        );
        runtime.spawn(async move {
            if let Err(e) = give_back(&store, &session, &holder, Some(renewer)).await {
                tracing::warn!(session = %session, error = %e, "cannot give back a dropped session lease; it runs out on its own");
            }
            drop(local);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_holder_of_this_pid_namespace_and_boot_is_judged_gone() {
        let here = "8d2f4ff7-2227-42d0-8588-cde91f818e29/4026531836";
        let dead = |_pid: u32| false;
        let alive = |_pid: u32| true;
        // Same boot, same namespace, PID not running: gone.
        assert!(gone_from(&format!("box:4242:1f:{here}"), here, 1, &dead));
        assert!(!gone_from(&format!("box:4242:1f:{here}"), here, 1, &alive));
        // Our own PID is never gone.
        assert!(!gone_from(&format!("box:1:1f:{here}"), here, 1, &dead));
        // Another container with the same host name: another PID namespace.
        let other_ns = "8d2f4ff7-2227-42d0-8588-cde91f818e29/4026532999";
        assert!(!gone_from(
            &format!("box:4242:1f:{other_ns}"),
            here,
            1,
            &dead
        ));
        // Another machine or boot: another boot id, even with the initial namespace.
        let other_boot = "00000000-0000-0000-0000-000000000000/4026531836";
        assert!(!gone_from(
            &format!("box:4242:1f:{other_boot}"),
            here,
            1,
            &dead
        ));
        // An older holder without its place, or a place we cannot read: wait for the TTL.
        assert!(!gone_from("box:4242:1f", here, 1, &dead));
        assert!(!gone_from(&format!("box:4242:1f:{here}"), "", 1, &dead));
    }

    #[test]
    fn this_process_holder_names_its_place_and_is_not_gone() {
        let me = holder();
        let place = pid_place();
        assert!(me.ends_with(&format!(":{place}")), "{me}");
        assert_eq!(me.splitn(4, ':').count(), 4, "{me}");
        assert!(!gone(&me));
        if cfg!(target_os = "linux") {
            assert!(
                !place.is_empty(),
                "boot id and PID namespace are readable on Linux"
            );
            // A PID that cannot exist (above Linux's pid_max limit of 2^22), here: gone.
            let dead = format!("{}:{}:1f:{place}", host(), 4_194_305);
            assert!(gone(&dead));
        }
    }
}
