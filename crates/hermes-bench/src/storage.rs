//! The storage benchmarks (issue 7): what the session store costs on a real SQLite file (WAL),
//! each measure a ratio against a baseline measured in the same process.
//!
//! - [`append_cost`]: the cost of storing one turn of the standard history when the session
//!   already holds 10,000 turns, against the same when it holds 10. A turn is stored as the
//!   driver stores it: one `Store::append` per step (the user message, the assistant tool-call
//!   reply, the tool results, the final reply), so a turn is four appends, four transactions.
//! - [`resume_cost`]: resuming a 1,000-turn standard session (`Store::open`, `Store::load`,
//!   `ChatRequest::build`) against a raw sequential read of the same rows with plain sqlx on a
//!   fresh pool; and the resume's peak heap against the session's JSON size.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use hermes_core::{Message, RouteDecision, ThinkingRequest, Verdicts, parse_history};
use hermes_providers::chat::ChatRequest;
use hermes_store::{NewSession, Store};
use peak_alloc::PeakAlloc;
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, Connection as _, Row as _};

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
    /// Size of the long session's database (file and WAL) before the late samples.
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
/// Two databases in `dir`. The long one holds one session grown to `late_turn` turns
/// (100 turns per append, generated turn by turn, so the whole history is never in
/// memory); its WAL is then checkpointed. Each of `rounds` rounds starts a new session of
/// `early_turn` turns in the short database, then appends `per_round` turns to it and the next
/// `per_round` turns to the long session, as the driver does, alternating turn by turn (and
/// which goes first) so load on the machine affects both alike. The early samples are thus
/// always turns `early_turn..early_turn + per_round`; the late ones run from `late_turn` to
/// `late_turn + rounds × per_round`.
pub async fn append_cost(
    dir: &Path,
    early_turn: usize,
    late_turn: usize,
    rounds: usize,
    per_round: usize,
) -> Result<AppendCost, BenchError> {
    if early_turn + per_round > late_turn {
        return Err("append_cost: the early samples must end before the late turn".into());
    }
    let (early_path, late_path) = (dir.join("early.db"), dir.join("late.db"));
    let new = NewSession {
        provider: Some("deepseek".to_owned()),
        model: Some("deepseek-v4-pro".to_owned()),
        ..NewSession::default()
    };
    let early = Store::open(&early_path).await?;
    let late = Store::open(&late_path).await?;
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
    checkpoint(&late_path).await?;
    let grow = start.elapsed();
    let late_db_bytes = db_size(&late_path);

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
        late_db_bytes,
        grow,
    })
}

/// Resume samples: resume and raw-read times, resume peak heaps.
#[derive(Clone, Debug)]
pub struct ResumeCost {
    /// Turns in the session.
    pub turns: usize,
    /// Messages in the session.
    pub messages: usize,
    /// Size of the session's compact JSON (the standard history's bytes).
    pub json_bytes: usize,
    /// Size of the database (file and WAL).
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
    path: &Path,
    session: &str,
    decision: &RouteDecision,
) -> Result<usize, BenchError> {
    let store = Store::open(path).await?;
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

/// The raw baseline: a sequential read of the session's rows, every column's text into a
/// `String`, through a pool that `pool` has just opened.
pub async fn raw_read(pool: &SqlitePool, session: &str) -> Result<Vec<RawRow>, BenchError> {
    let rows = sqlx::query(
        "SELECT position, role, content, tool_calls, tool_call_id, name, reasoning_content, \
         reasoning, reasoning_details, origin_provider, origin_host, origin_model, extra \
         FROM messages WHERE session_id = $1 ORDER BY position",
    )
    .bind(session)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| {
            let mut texts: [Option<String>; 12] = Default::default();
            for (i, text) in texts.iter_mut().enumerate() {
                *text = row.try_get(i + 1)?;
            }
            Ok(RawRow {
                position: row.try_get(0)?,
                texts,
            })
        })
        .collect()
}

/// Measures resuming an `n_turns` standard session against a raw read of its rows (`runs`
/// interleaved runs each, in alternating order), then the resume's peak heap (`heap` is the
/// global allocator; the peak counts every thread, sqlx's worker included, but not SQLite's own
/// allocations, which do not go through it).
pub async fn resume_cost(
    dir: &Path,
    n_turns: usize,
    runs: usize,
    decision: &RouteDecision,
    heap: &PeakAlloc,
) -> Result<ResumeCost, BenchError> {
    let path = dir.join("resume.db");
    let bytes = standard_history_bytes(n_turns);
    let json_bytes = bytes.len();
    let mut file = parse_history(std::str::from_utf8(&bytes)?)?;
    drop(bytes);
    file.provider = Some(decision.target.provider.clone());
    file.model = Some(decision.target.model.clone());
    let messages = file.messages.len();
    let store = Store::open(&path).await?;
    let id = store.import(&file).await?;
    drop((store, file));
    // Let the dropped pool's connections close before anything is measured.
    tokio::time::sleep(Duration::from_millis(100)).await;
    checkpoint(&path).await?;
    let db_bytes = db_size(&path);

    let settle = || tokio::time::sleep(Duration::from_millis(20));
    let (mut resumes, mut raws) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for run in 0..runs {
        for which in [run % 2, 1 - run % 2] {
            if which == 0 {
                let start = Instant::now();
                let n = resume(&path, &id, decision).await?;
                resumes.push(start.elapsed());
                if n != messages {
                    return Err(format!("resume shaped {n} messages, expected {messages}").into());
                }
            } else {
                let start = Instant::now();
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(connect_options(&path))
                    .await?;
                let rows = raw_read(&pool, &id).await?;
                raws.push(start.elapsed());
                if rows.len() != messages {
                    return Err(format!("raw read {} rows, expected {messages}", rows.len()).into());
                }
                drop(rows);
                pool.close().await;
            }
            settle().await;
        }
    }
    resumes.sort();
    raws.sort();

    let mut peaks = Vec::new();
    for _ in 0..3 {
        let before = heap.current_usage();
        heap.reset_peak_usage();
        resume(&path, &id, decision).await?;
        peaks.push(heap.peak_usage().saturating_sub(before));
        settle().await;
    }
    peaks.sort_unstable();
    Ok(ResumeCost {
        turns: n_turns,
        messages,
        json_bytes,
        db_bytes,
        resume: resumes,
        raw: raws,
        peaks,
    })
}
