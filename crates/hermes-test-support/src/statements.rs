//! Counting the SQL statements an operation runs: a tracing layer over sqlx's own
//! per-statement events (the benchmark's per-request reads, the gateway's statements per turn).
//! sqlx 0.9 sends `BEGIN` (on either backend) and SQLite's `COMMIT` outside its statement log:
//! they are not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The target of sqlx's per-statement events (sqlx-core 0.9 `QueryLogger::finish`).
pub const SQLX_QUERY_TARGET: &str = "sqlx::query";

/// A tracing layer counting sqlx's statement events; every other callsite stays disabled, so
/// the rest of the process pays nothing for it.
#[derive(Clone, Debug, Default)]
pub struct StatementCounter(Arc<AtomicU64>);

impl StatementCounter {
    /// Statements counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Installs a subscriber with this counter as the process's global default (sqlx's SQLite
    /// driver runs statements on a worker thread of its own, so a thread-local default would not
    /// see them).
    pub fn install(&self) -> Result<(), tracing::subscriber::SetGlobalDefaultError> {
        use tracing_subscriber::layer::SubscriberExt as _;
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::set_global_default(subscriber)?;
        Ok(())
    }
}

impl<S: Subscriber> Layer<S> for StatementCounter {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.target() == SQLX_QUERY_TARGET {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        metadata.target() == SQLX_QUERY_TARGET
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == SQLX_QUERY_TARGET {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}
