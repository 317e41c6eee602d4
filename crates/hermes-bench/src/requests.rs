//! The per-request read benchmark (issue 29): what a resumed request reads from the store, the
//! engine's way today against one [`Store::snapshot`].
//!
//! - Old: `session` + `messages` + `thinking` + `verdicts` + `wire_verdicts`, twice (the engine
//!   reads the session when it opens or takes the lease before a turn, and again after it).
//! - New: one `snapshot` (the session row with its tip, and the active view, in one read
//!   transaction).
//!
//! Both on one resumed 1,000-turn standard session (user, assistant with `reasoning_content`,
//! `reasoning`, `reasoning_details` and a tool call, tool result, final answer) with verdicts
//! and a thinking request in its `model_config`. Statements are counted from sqlx's own
//! statement events (target `sqlx::query`, one per statement it runs, on a store opened with
//! [`Store::open_at_logging_statements`]) by [`StatementCounter`]; times are taken on a store
//! opened as hermes opens it (no statement events), the two patterns interleaved run by run.

use std::time::{Duration, Instant};

use hermes_core::{CarrierSet, RouteTarget, parse_history};
use hermes_store::{Location, PoolOptions, Store, StoredThinking};

use crate::standard_history_bytes;
use crate::storage::{BenchError, settle};

pub use hermes_test_support::statements::{SQLX_QUERY_TARGET, StatementCounter};

/// What one request reads, the old way: five reads, before the turn and again after it.
/// Returns the messages read (so nothing is optimised away).
pub async fn old_reads(store: &Store, session: &str) -> Result<usize, BenchError> {
    let mut read = 0;
    for _ in 0..2 {
        let meta = store.session(session).await?;
        let messages = store.messages(session).await?;
        let thinking = store.thinking(session).await?;
        let verdicts = store.verdicts(session).await?;
        let wire_verdicts = store.wire_verdicts(session).await?;
        std::hint::black_box((&meta, &thinking, &verdicts, &wire_verdicts));
        read += messages.len();
    }
    Ok(read)
}

/// What one request reads, the new way: one snapshot.
pub async fn new_reads(store: &Store, session: &str) -> Result<usize, BenchError> {
    let snapshot = store.snapshot(session).await?;
    Ok(std::hint::black_box(snapshot).active.len())
}

/// The per-request read measures on one backend.
#[derive(Clone, Debug)]
pub struct RequestReads {
    /// Turns in the session.
    pub turns: usize,
    /// Messages in its active view.
    pub messages: usize,
    /// sqlx statement events of each counted old-way request, sorted.
    pub old_statements: Vec<u64>,
    /// sqlx statement events of each counted snapshot, sorted.
    pub new_statements: Vec<u64>,
    /// Times of the old-way requests.
    pub old: Vec<Duration>,
    /// Times of the snapshots.
    pub new: Vec<Duration>,
}

/// Requests of each kind run before counting.
const WARM_UP: usize = 8;
/// Requests of each kind whose statements are counted.
const COUNTED: usize = 5;

/// The mean of `samples`.
pub fn mean(samples: &[Duration]) -> Duration {
    let n = u32::try_from(samples.len().max(1)).unwrap_or(u32::MAX);
    samples.iter().sum::<Duration>() / n
}

impl RequestReads {
    /// Old statements ÷ new statements (the fewest of each: a request whose count includes
    /// a connection the pool opened meanwhile counts more).
    pub fn statement_ratio(&self) -> f64 {
        self.old_statements[0] as f64 / self.new_statements[0] as f64
    }

    /// Old mean time ÷ new mean time.
    pub fn time_ratio(&self) -> f64 {
        mean(&self.old).as_secs_f64() / mean(&self.new).as_secs_f64()
    }
}

/// Imports an `n_turns` standard session into the fresh store at `location` (with a verdict, a
/// wire verdict and a thinking request in its `model_config`), settles it, counts requests'
/// statements each way on a statement-logging handle of one connection (`counter` must be
/// installed), then times
/// `runs` requests each way on an ordinary handle, interleaved and alternating which goes first.
pub async fn request_reads(
    location: &Location,
    n_turns: usize,
    runs: usize,
    counter: &StatementCounter,
) -> Result<RequestReads, BenchError> {
    let bytes = standard_history_bytes(n_turns);
    let mut file = parse_history(std::str::from_utf8(&bytes)?)?;
    drop(bytes);
    file.provider = Some("deepseek".to_owned());
    file.model = Some("deepseek-v4-pro".to_owned());
    let store = Store::open_at(location).await?;
    let id = store.import(&file).await?;
    drop(file);
    let target = RouteTarget::new("openrouter", None, "anthropic/claude-sonnet-5");
    store
        .record_verdict(
            &id,
            &target,
            CarrierSet::NONE.with(hermes_core::Carrier::ReasoningDetails),
        )
        .await?;
    store
        .record_wire_verdict(&id, "responses", &target, &["encrypted_content"])
        .await?;
    store
        .set_thinking(
            &id,
            Some(StoredThinking::Effort(
                hermes_core::Effort::parse("high").ok_or("effort")?,
            )),
        )
        .await?;
    settle(location).await?;

    // One connection, opened before counting: sqlx hands a released connection back in a task
    // of its own, so with more an acquire right after a release may open another one, whose
    // setup statements are the pool's, not the request's.
    let one = PoolOptions {
        max_connections: Some(1),
        ..PoolOptions::default()
    };
    let logged = Store::open_at_logging_statements(location, one).await?;
    let mut messages = 0;
    for _ in 0..WARM_UP {
        messages = new_reads(&logged, &id).await?;
        old_reads(&logged, &id).await?;
    }
    // SQLite's statements run on sqlx's worker thread, which may emit a statement's event
    // after the caller has its rows: let it settle before and after each counted request.
    let settled = || async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        counter.get()
    };
    let (mut old_statements, mut new_statements) = (Vec::new(), Vec::new());
    for _ in 0..COUNTED {
        let before = settled().await;
        old_reads(&logged, &id).await?;
        old_statements.push(settled().await - before);
        let before = settled().await;
        new_reads(&logged, &id).await?;
        new_statements.push(settled().await - before);
    }
    drop(logged);

    let (mut old, mut new) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    new_reads(&store, &id).await?;
    for run in 0..runs {
        for which in [run % 2, 1 - run % 2] {
            let start = Instant::now();
            if which == 0 {
                let read = old_reads(&store, &id).await?;
                old.push(start.elapsed());
                if read != 2 * messages {
                    return Err(format!(
                        "old reads saw {read} messages, expected {}",
                        2 * messages
                    )
                    .into());
                }
            } else {
                let read = new_reads(&store, &id).await?;
                new.push(start.elapsed());
                if read != messages {
                    return Err(format!("snapshot saw {read} messages, expected {messages}").into());
                }
            }
        }
    }
    old.sort();
    new.sort();
    old_statements.sort_unstable();
    new_statements.sort_unstable();
    Ok(RequestReads {
        turns: n_turns,
        messages,
        old_statements,
        new_statements,
        old,
        new,
    })
}
