//! The storage benchmarks (issues 7 and 20): what the session store costs on each backend (a
//! real SQLite file in WAL mode, and a schema on a PostgreSQL server), each measure a ratio
//! against a baseline measured in the same process on the same backend.
//!
//! - [`append_cost`]: the cost of storing one turn of the standard history when the session
//!   already holds 10,000 turns, against the same when it holds 10. A turn is stored as the
//!   driver stores it: one `Store::append` per step (the user message, the assistant tool-call
//!   reply, the tool results, the final reply), so a turn is four appends, four transactions.
//! - [`resume_cost`]: resuming a 1,000-turn standard session (`Store::open_at`, `Store::load`,
//!   `ChatRequest::build`) against a raw sequential read of the same rows with plain sqlx on a
//!   fresh pool of the backend's own driver ([`raw_read`]); and the resume's peak heap against
//!   the session's JSON size.
//!
//! Both take [`Location`]s, so they run on either backend; a [`Scratch`] makes fresh ones (files
//! in a folder, or new schemas on a PostgreSQL server, dropped by [`Scratch::cleanup`]).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::{Duration, Instant};

use hermes_core::{Message, RouteDecision, ThinkingRequest, Verdicts, parse_history};
use hermes_store::{Backend, Location, NewSession, Store};
use hermes_wire_chat::ChatRequest;
use peak_alloc::PeakAlloc;
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions as _, Connection as _};

use crate::{StandardTurns, standard_history_bytes};

/// What the storage benchmarks fail with (store, sqlx, JSON or I/O errors, boxed).
pub type BenchError = Box<dyn Error + Send + Sync>;

/// Turns grown per `Store::append` while building the long session (only the measured turns are
/// appended the driver's way; rows are the same whichever way they were appended).
const GROW_CHUNK: usize = 100;

/// A ratio of two sets of samples, with its spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// Median of the numerator samples ÷ median of the denominator samples.
    pub value: f64,
    /// Lowest ratio of rank-paired samples (fastest ÷ fastest, ...).
    pub lo: f64,
    /// Highest ratio of rank-paired samples.
    pub hi: f64,
}

impl Ratio {
    /// The ratio of two sorted sample sets, pairing samples by rank (as the shaping table does).
    pub fn of_durations(num: &[Duration], den: &[Duration]) -> Ratio {
        let secs = |d: &[Duration]| d.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
        Ratio::of(&secs(num), &secs(den))
    }

    /// The ratio of two sorted sets of numbers, pairing them by rank.
    pub fn of(num: &[f64], den: &[f64]) -> Ratio {
        let median = |s: &[f64]| s.get(s.len() / 2).copied().unwrap_or(f64::NAN);
        let ratios: Vec<f64> = num.iter().zip(den).map(|(n, d)| n / d).collect();
        Ratio {
            value: median(num) / median(den),
            lo: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            hi: ratios.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// The standard history's turn as the four messages the driver stores.
pub fn turn_messages(turn: &[Value; 4]) -> Result<Vec<Message>, BenchError> {
    turn.iter()
        .map(|m| Ok(serde_json::from_str(&serde_json::to_string(m)?)?))
        .collect()
}

/// Stores one turn as the driver does (`run_turn`): the user message, the assistant's tool-call
/// reply, the tool results, the final reply, each its own `append`; returns the time taken.
pub async fn append_turn(
    store: &Store,
    session: &str,
    turn: &[Message],
) -> Result<Duration, BenchError> {
    let start = Instant::now();
    for step in turn.chunks(1) {
        store.append(session, step).await?;
    }
    Ok(start.elapsed())
}

/// The connection options `Store::open` uses (WAL, synchronous NORMAL, foreign keys, busy
/// timeout), for the plain-sqlx baselines.
pub fn connect_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5))
}

/// Moves the write-ahead log into the database file and empties it (`wal_checkpoint(TRUNCATE)`),
/// so measurements start from the same WAL state whatever came before.
pub async fn checkpoint(path: &Path) -> Result<(), BenchError> {
    let mut conn = connect_options(path).connect().await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// Bytes of the database file and its WAL.
pub fn db_size(path: &Path) -> u64 {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    len(path) + len(Path::new(&wal))
}

/// Brings a freshly written store to a settled state before it is measured, whatever came
/// before: SQLite's WAL is checkpointed into the file ([`checkpoint`]); on PostgreSQL the
/// store's tables are vacuumed and analysed (`VACUUM (ANALYZE)`: hint bits and visibility map
/// set, planner statistics current, as autovacuum leaves a long-lived table).
pub async fn settle(location: &Location) -> Result<(), BenchError> {
    match location {
        Location::Sqlite(path) => checkpoint(path).await,
        Location::Postgres(url) => {
            let mut conn = PgConnection::connect(url).await?;
            sqlx::raw_sql("VACUUM (ANALYZE) messages, sessions")
                .execute(&mut conn)
                .await?;
            conn.close().await?;
            Ok(())
        }
    }
}

/// Bytes the store takes: the SQLite file and its WAL ([`db_size`]), or the PostgreSQL schema's
/// tables with their indexes and TOAST (`pg_total_relation_size`).
pub async fn database_bytes(location: &Location) -> Result<u64, BenchError> {
    match location {
        Location::Sqlite(path) => Ok(db_size(path)),
        Location::Postgres(url) => {
            let mut conn = PgConnection::connect(url).await?;
            let bytes: i64 = sqlx::query_scalar(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::BIGINT \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = current_schema() AND c.relkind = 'r'",
            )
            .fetch_one(&mut conn)
            .await?;
            conn.close().await?;
            Ok(u64::try_from(bytes).unwrap_or(0))
        }
    }
}

/// The PostgreSQL server the benchmarks may use: `HERMES_TEST_PG_URL`, or `None` when it is
/// unset (the PostgreSQL measures are skipped), an error when `HERMES_REQUIRE_PG` is set too.
pub fn postgres_server() -> Result<Option<String>, BenchError> {
    match std::env::var("HERMES_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Ok(Some(url)),
        _ if std::env::var_os("HERMES_REQUIRE_PG").is_some() => {
            Err("HERMES_REQUIRE_PG is set but HERMES_TEST_PG_URL is not".into())
        }
        _ => Ok(None),
    }
}

/// Where the storage benchmarks make their databases: SQLite files in a folder, or new, empty
/// schemas on a PostgreSQL server (each chosen by `options[search_path]=…` in the URL that
/// opens it). The schemas stay until [`Scratch::cleanup`].
pub struct Scratch {
    place: Place,
    schemas: Vec<String>,
}

/// Where a [`Scratch`] makes its databases.
enum Place {
    Sqlite(PathBuf),
    Postgres(String),
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the server URL: it may hold a password.
        f.debug_struct("Scratch")
            .field("backend", &self.backend())
            .field("schemas", &self.schemas)
            .finish_non_exhaustive()
    }
}

impl Scratch {
    /// SQLite files in `dir`.
    pub fn sqlite(dir: &Path) -> Scratch {
        Scratch {
            place: Place::Sqlite(dir.to_owned()),
            schemas: Vec::new(),
        }
    }

    /// Schemas on the PostgreSQL server at `url` (whose user may create schemas in its
    /// database).
    pub fn postgres(url: &str) -> Scratch {
        Scratch {
            place: Place::Postgres(url.to_owned()),
            schemas: Vec::new(),
        }
    }

    /// The backend the databases are on.
    pub fn backend(&self) -> Backend {
        match self.place {
            Place::Sqlite(_) => Backend::Sqlite,
            Place::Postgres(_) => Backend::Postgres,
        }
    }

    /// A fresh store location: `NAME.db` in the folder (not created yet), or a new, empty
    /// schema on the server.
    pub async fn fresh(&mut self, name: &str) -> Result<Location, BenchError> {
        match &self.place {
            Place::Sqlite(dir) => Ok(Location::Sqlite(dir.join(format!("{name}.db")))),
            Place::Postgres(url) => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let schema = format!("hermes_bench_{name}_{}_{nanos}", std::process::id());
                let mut conn = PgConnection::connect(url).await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
                    .execute(&mut conn)
                    .await?;
                conn.close().await?;
                self.schemas.push(schema.clone());
                let sep = if url.contains('?') { '&' } else { '?' };
                Ok(Location::Postgres(format!(
                    "{url}{sep}options[search_path]={schema}"
                )))
            }
        }
    }

    /// Drops the schemas made on the server (nothing to do for SQLite: the caller owns the
    /// folder).
    pub async fn cleanup(self) -> Result<(), BenchError> {
        let Place::Postgres(url) = &self.place else {
            return Ok(());
        };
        if self.schemas.is_empty() {
            return Ok(());
        }
        let mut conn = PgConnection::connect(url).await?;
        for schema in &self.schemas {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE"
            )))
            .execute(&mut conn)
            .await?;
        }
        conn.close().await?;
        Ok(())
    }
}

/// Append cost samples: per-turn times at the early and the late point.
#[derive(Clone, Debug)]
pub struct AppendCost {
    /// Turn index of the first early sample.
    pub early_turn: usize,
    /// Turn index of the first late sample.
    pub late_turn: usize,
    /// Sorted per-turn append times of turns `early_turn..early_turn + per_round` (fresh
    /// sessions, one per round).
    pub early: Vec<Duration>,
    /// Sorted per-turn append times of the long session's turns from `late_turn` on.
    pub late: Vec<Duration>,
    /// Per round: the median late turn ÷ the median early turn of that round.
    pub round_ratios: Vec<f64>,
    /// Backend measured.
    pub backend: Backend,
    /// Size of the long session's database before the late samples ([`database_bytes`]).
    pub late_db_bytes: u64,
    /// Time taken to generate and store the long session's first `late_turn` turns.
    pub grow: Duration,
}

impl AppendCost {
    /// Late ÷ early: the median of all late turns ÷ the median of all early turns, spread over
    /// the rounds' ratios.
    pub fn ratio(&self) -> Ratio {
        let overall = Ratio::of_durations(&self.late, &self.early);
        Ratio {
            value: overall.value,
            lo: self
                .round_ratios
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min),
            hi: self.round_ratios.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// Measures the cost of storing a turn at `late_turn` against at `early_turn`.
///
/// Two fresh stores on one backend, `early` and `late`. The long one (`late`) holds one session
/// grown to `late_turn` turns (100 turns per append, generated turn by turn, so the whole
/// history is never in memory); it is then [`settle`]d (WAL checkpointed, or tables vacuumed).
/// Each of `rounds` rounds starts a new session of `early_turn` turns in the short one
/// (`early`), then appends `per_round` turns to it and the next `per_round` turns to the long
/// session, as the driver does, alternating turn by turn (and which goes first) so load on the
/// machine affects both alike. The early samples are thus
/// always turns `early_turn..early_turn + per_round`; the late ones run from `late_turn` to
/// `late_turn + rounds × per_round`.
pub async fn append_cost(
    early: &Location,
    late: &Location,
    early_turn: usize,
    late_turn: usize,
    rounds: usize,
    per_round: usize,
) -> Result<AppendCost, BenchError> {
    if early_turn + per_round > late_turn {
        return Err("append_cost: the early samples must end before the late turn".into());
    }
    let backend = late.backend();
    if early.backend() != backend {
        return Err("append_cost: both stores must be on the same backend".into());
    }
    let (early_at, late_at) = (early, late);
    let new = NewSession {
        provider: Some("deepseek".to_owned()),
        model: Some("deepseek-v4-pro".to_owned()),
        ..NewSession::default()
    };
    let early = Store::open_at(early_at).await?;
    let late = Store::open_at(late_at).await?;
    let late_id = late.create_session(&new).await?;

    let start = Instant::now();
    let mut chunk: Vec<Message> = Vec::with_capacity(GROW_CHUNK * 4);
    let (mut early_start, mut early_turns, mut late_turns) = (Vec::new(), Vec::new(), Vec::new());
    for (i, turn) in StandardTurns::new(late_turn + rounds * per_round).enumerate() {
        let messages = turn_messages(&turn)?;
        if i < early_turn {
            early_start.extend(messages.iter().cloned());
        } else if i < early_turn + per_round {
            early_turns.push(messages.clone());
        }
        if i < late_turn {
            chunk.extend(messages);
            if chunk.len() >= GROW_CHUNK * 4 {
                late.append(&late_id, &chunk).await?;
                chunk.clear();
            }
        } else {
            late_turns.push(messages);
        }
    }
    if !chunk.is_empty() {
        late.append(&late_id, &chunk).await?;
    }
    drop(chunk);
    settle(late_at).await?;
    let grow = start.elapsed();
    let late_db_bytes = database_bytes(late_at).await?;

    let (mut early_times, mut late_times) = (Vec::new(), Vec::new());
    let mut round_ratios = Vec::with_capacity(rounds);
    for late_round in late_turns.chunks(per_round) {
        let early_id = early.create_session(&new).await?;
        early.append(&early_id, &early_start).await?;
        let (mut round_early, mut round_late) = (Vec::new(), Vec::new());
        for (i, (e, l)) in early_turns.iter().zip(late_round).enumerate() {
            if i % 2 == 0 {
                round_early.push(append_turn(&early, &early_id, e).await?);
                round_late.push(append_turn(&late, &late_id, l).await?);
            } else {
                round_late.push(append_turn(&late, &late_id, l).await?);
                round_early.push(append_turn(&early, &early_id, e).await?);
            }
        }
        round_early.sort();
        round_late.sort();
        round_ratios.push(Ratio::of_durations(&round_late, &round_early).value);
        early_times.extend(round_early);
        late_times.extend(round_late);
    }
    early_times.sort();
    late_times.sort();
    Ok(AppendCost {
        early_turn,
        late_turn,
        early: early_times,
        late: late_times,
        round_ratios,
        backend,
        late_db_bytes,
        grow,
    })
}

/// Resume samples: resume and raw-read times, resume peak heaps.
#[derive(Clone, Debug)]
pub struct ResumeCost {
    /// Backend measured.
    pub backend: Backend,
    /// Turns in the session.
    pub turns: usize,
    /// Messages in the session.
    pub messages: usize,
    /// Size of the session's compact JSON (the standard history's bytes).
    pub json_bytes: usize,
    /// Size of the database ([`database_bytes`]).
    pub db_bytes: u64,
    /// Sorted times of open + load + shape.
    pub resume: Vec<Duration>,
    /// Sorted times of a fresh pool + raw sequential read of the same rows.
    pub raw: Vec<Duration>,
    /// Sorted peak heap growth (bytes) during open + load + shape.
    pub peaks: Vec<usize>,
}

impl ResumeCost {
    /// Resume ÷ raw read.
    pub fn time_ratio(&self) -> Ratio {
        Ratio::of_durations(&self.resume, &self.raw)
    }

    /// Resume peak heap ÷ the session's JSON size.
    pub fn memory_ratio(&self) -> Ratio {
        let peaks: Vec<f64> = self.peaks.iter().map(|&p| p as f64).collect();
        let json = vec![self.json_bytes as f64; peaks.len()];
        Ratio::of(&peaks, &json)
    }
}

/// Opens the store, loads the session and shapes its request, as resuming a chat does.
/// Returns the number of wire messages (so nothing is optimised away).
pub async fn resume(
    location: &Location,
    session: &str,
    decision: &RouteDecision,
) -> Result<usize, BenchError> {
    let store = Store::open_at(location).await?;
    let (meta, messages) = store.load(session).await?;
    let verdicts = Verdicts::from_model_config(&meta.model_config)?;
    let request = ChatRequest::build(
        &messages,
        decision,
        &verdicts,
        ThinkingRequest::NoPreference,
    );
    Ok(std::hint::black_box(request).messages.len())
}

/// One `messages` row, every column fetched as is (no decoding).
#[derive(Debug)]
pub struct RawRow {
    /// `position`.
    pub position: i64,
    /// The twelve text columns in schema order: `role`, `content`, `tool_calls`,
    /// `tool_call_id`, `name`, `reasoning_content`, `reasoning`, `reasoning_details`,
    /// `origin_provider`, `origin_host`, `origin_model`, `extra`.
    pub texts: [Option<String>; 12],
}

/// The raw baseline's query, the same on both backends.
const RAW_QUERY: &str = "SELECT position, role, content, tool_calls, tool_call_id, name, \
    reasoning_content, reasoning, reasoning_details, origin_provider, origin_host, origin_model, \
    extra FROM messages WHERE session_id = $1 ORDER BY position";

/// A row of [`RAW_QUERY`], from either backend's own driver.
fn raw_row<R>(row: &R) -> Result<RawRow, sqlx::Error>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let mut texts: [Option<String>; 12] = Default::default();
    for (i, text) in texts.iter_mut().enumerate() {
        *text = row.try_get(i + 1)?;
    }
    Ok(RawRow {
        position: row.try_get(0)?,
        texts,
    })
}

/// Reads the session's rows on `pool` ([`RAW_QUERY`], every column's text into a `String`), stops
/// the clock started at `start`, then closes the pool: the rows and the time taken. A macro, as
/// each backend's pool is of its own sqlx driver.
macro_rules! read_timed {
    ($pool:expr, $session:expr, $start:expr) => {{
        let pool = $pool;
        let rows = sqlx::query(RAW_QUERY)
            .bind($session)
            .fetch_all(&pool)
            .await?;
        let rows = rows.iter().map(raw_row).collect::<Result<Vec<_>, _>>()?;
        let elapsed = $start.elapsed();
        pool.close().await;
        Ok((rows, elapsed))
    }};
}

/// The raw baseline: a fresh pool on `location` through the backend's own sqlx driver (not the
/// `Any` driver the store uses; SQLite with [`connect_options`], PostgreSQL with the URL's
/// options and the store's pool size), then a sequential read of the session's rows, every
/// column's text into a `String`. Returns the rows and the time taken; the pool is closed after
/// the clock stops.
pub async fn raw_read(
    location: &Location,
    session: &str,
) -> Result<(Vec<RawRow>, Duration), BenchError> {
    let start = Instant::now();
    match location {
        Location::Sqlite(path) => {
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .connect_with(connect_options(path))
                .await?;
            read_timed!(pool, session, start)
        }
        Location::Postgres(url) => {
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .connect_with(PgConnectOptions::from_str(url)?)
                .await?;
            read_timed!(pool, session, start)
        }
    }
}

/// Measures resuming an `n_turns` standard session, imported into the fresh store at
/// `location`, against a raw read of its rows ([`raw_read`]; `runs` interleaved runs each, in
/// alternating order), then the resume's peak heap (`heap` is the global allocator; the peak
/// counts every thread, sqlx's worker included, but not SQLite's own allocations, which do not
/// go through it, nor the PostgreSQL server's).
pub async fn resume_cost(
    location: &Location,
    n_turns: usize,
    runs: usize,
    decision: &RouteDecision,
    heap: &PeakAlloc,
) -> Result<ResumeCost, BenchError> {
    let bytes = standard_history_bytes(n_turns);
    let json_bytes = bytes.len();
    let mut file = parse_history(std::str::from_utf8(&bytes)?)?;
    drop(bytes);
    file.provider = Some(decision.target.provider.clone());
    file.model = Some(decision.target.model.clone());
    let messages = file.messages.len();
    let store = Store::open_at(location).await?;
    let id = store.import(&file).await?;
    drop((store, file));
    // Let the dropped pool's connections close before anything is measured.
    tokio::time::sleep(Duration::from_millis(100)).await;
    settle(location).await?;
    let db_bytes = database_bytes(location).await?;

    let pause = || tokio::time::sleep(Duration::from_millis(20));
    let (mut resumes, mut raws) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for run in 0..runs {
        for which in [run % 2, 1 - run % 2] {
            if which == 0 {
                let start = Instant::now();
                let n = resume(location, &id, decision).await?;
                resumes.push(start.elapsed());
                if n != messages {
                    return Err(format!("resume shaped {n} messages, expected {messages}").into());
                }
            } else {
                let (rows, elapsed) = raw_read(location, &id).await?;
                raws.push(elapsed);
                if rows.len() != messages {
                    return Err(format!("raw read {} rows, expected {messages}", rows.len()).into());
                }
            }
            pause().await;
        }
    }
    resumes.sort();
    raws.sort();

    let mut peaks = Vec::new();
    for _ in 0..3 {
        let before = heap.current_usage();
        heap.reset_peak_usage();
        resume(location, &id, decision).await?;
        peaks.push(heap.peak_usage().saturating_sub(before));
        pause().await;
    }
    peaks.sort_unstable();
    Ok(ResumeCost {
        backend: location.backend(),
        turns: n_turns,
        messages,
        json_bytes,
        db_bytes,
        resume: resumes,
        raw: raws,
        peaks,
    })
}
