//! Counting the SQL statements an operation runs: a tracing layer over sqlx's own
//! per-statement events (the benchmark's per-request reads, the gateway's statements per turn).
//! sqlx 0.9 sends `BEGIN` (on either backend) and SQLite's `COMMIT` outside its statement log:
//! they are not counted. A batch (several statements sent in one call) counts each statement.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The target of sqlx's per-statement events (sqlx-core 0.9 `QueryLogger::finish`).
pub const SQLX_QUERY_TARGET: &str = "sqlx::query";

/// A tracing layer counting sqlx's statement events, and keeping each one's summary (its
/// first words, as sqlx logs it); every other callsite stays disabled, so the rest of the
/// process pays nothing for it.
#[derive(Clone, Debug, Default)]
pub struct StatementCounter(Arc<AtomicU64>, Arc<Mutex<Vec<String>>>);

impl StatementCounter {
    /// Statements counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// The summaries of the statements counted since the last call, in order.
    pub fn take_log(&self) -> Vec<String> {
        self.1
            .lock()
            .map(|mut log| std::mem::take(&mut *log))
            .unwrap_or_default()
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
            let mut summary = Summary(String::new());
            event.record(&mut summary);
            // A string of statements run in one call (a batch) counts each of them.
            let statements = statements_in(&summary.0).max(1);
            if let Ok(mut log) = self.1.lock() {
                log.push(summary.0);
            }
            self.0.fetch_add(statements, Ordering::SeqCst);
        }
    }
}

/// How many statements `sql` holds: its parts between semicolons outside quoted text that are
/// not blank.
pub fn statements_in(sql: &str) -> u64 {
    let (mut count, mut quote, mut blank) = (0, None::<char>, true);
    for c in sql.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => {
                quote = Some(c);
                blank = false;
            }
            (None, ';') => {
                count += u64::from(!blank);
                blank = true;
            }
            (None, c) if c.is_whitespace() => {}
            (None, _) => blank = false,
        }
    }
    count + u64::from(!blank)
}

/// A statement event's `db.statement` text (sqlx 0.9 logs it whole), else its `summary`.
struct Summary(String);

impl tracing::field::Visit for Summary {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "db.statement" || (field.name() == "summary" && self.0.is_empty()) {
            value.trim().clone_into(&mut self.0);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "db.statement" || (field.name() == "summary" && self.0.is_empty()) {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::statements_in;

    #[test]
    fn a_batch_counts_each_statement() {
        assert_eq!(statements_in("SELECT 1"), 1);
        assert_eq!(statements_in("SELECT 1;"), 1);
        assert_eq!(
            statements_in("INSERT INTO a VALUES ($1); INSERT INTO b VALUES ($2);"),
            2
        );
        assert_eq!(statements_in("SELECT ';' ; SELECT \"a;b\""), 2);
        assert_eq!(statements_in("  ;  "), 0);
    }
}
