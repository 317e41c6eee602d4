//! `cargo xtask bench serve`: the gateway against the simulator it fronts and (with
//! `--with-litellm`) LiteLLM's proxy in front of the same simulator, on loopback, in interleaved
//! rounds, each figure the median of its round medians with their spread.
//!
//! Backends ([`Backend`]): `direct` (the simulator, no gateway), `hermes · SQLite` and `hermes ·
//! PostgreSQL` (`hermes serve` with gateway keys on, each request carrying a key, the release binary, its store on an SQLite file or on a
//! throwaway PostgreSQL cluster with durable settings, `hermes_test_support::pg_cluster`, unless
//! `HERMES_TEST_PG_URL` names a server), and `LiteLLM` ([`crate::litellm`]). Every request is a
//! new conversation, so the gateway reads and durably writes its store on each one.
//!
//! Two phases, each its own upstream and servers, each `rounds` rounds in which every backend
//! takes its turn in an order that changes from round to round ([`interleaved_order`]):
//! - fast upstream (`hermes sim serve --delay-ms 0`): non-streamed requests one at a time (the
//!   added p50 and p99), then streamed ones (the added time to first token: until the first
//!   SSE event carrying text or reasoning is whole — the simulator sends its events in
//!   fragments, a few milliseconds apart, so its first body byte comes long before its first
//!   token, and a first-byte figure would compare a fragment with a whole event);
//! - paced upstream (`--delay-ms 20`): closed loops of 1, 16 and 64 clients (each sends its next
//!   request when its last one answered): the p99 ÷ direct's p99 in that round, and the
//!   requests per second completed at 64; then, after the rounds, `streams` paced streams
//!   opened at once through each backend, with the serving processes' resident memory at idle
//!   and at its peak.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::continued;
use crate::gateway::{self, Door, GatewayServer, SimServer, Target};
use crate::litellm;
use crate::storage::BenchError;
use hermes_test_support::pg_cluster;

/// The paced upstream's wait before it answers any request.
pub const PACE: Duration = Duration::from_millis(20);

/// The paced upstream's pause before each streamed event after the first, so the memory
/// measure's streams stay open long enough to be in flight together.
pub const STREAM_CHUNK_DELAY: Duration = Duration::from_millis(200);

/// The concurrencies of the paced phase.
pub const CONCURRENCY: [usize; 3] = [1, 16, 64];

/// `cargo xtask bench serve`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// `--quick`: the [`Size::quick`] run.
    pub quick: bool,
    /// `--with-litellm`: LiteLLM's proxy as a fourth backend.
    pub with_litellm: bool,
    /// `--rounds=N`: overrides the size's rounds.
    pub rounds: Option<usize>,
    /// `--streams=N`: overrides the size's stream count.
    pub streams: Option<usize>,
    /// `--work-dir=PATH`: where the PostgreSQL cluster and the servers' homes go (default
    /// `target/bench-serve`).
    pub work_dir: PathBuf,
    /// `--litellm-venv=PATH`: LiteLLM's venv (default `target/litellm-venv`).
    pub litellm_venv: PathBuf,
    /// `--instructions`: only the callgrind count of a turn ([`instructions_only`]), the line
    /// to watch from change to change (the load does not move it).
    pub instructions: bool,
}

/// Reads the arguments after `serve`. Unknown arguments are an error naming them.
pub fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        quick: false,
        with_litellm: false,
        rounds: None,
        streams: None,
        work_dir: PathBuf::from("target/bench-serve"),
        litellm_venv: PathBuf::from("target/litellm-venv"),
        instructions: false,
    };
    let count = |name: &str, value: &str| -> Result<usize, String> {
        value
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
            .ok_or_else(|| format!("{name} takes a positive whole number, not `{value}`"))
    };
    for arg in args {
        let (name, value) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg.as_str(), None),
        };
        match (name, value) {
            ("--quick", None) => parsed.quick = true,
            ("--with-litellm", None) => parsed.with_litellm = true,
            ("--instructions", None) => parsed.instructions = true,
            ("--rounds", Some(v)) => parsed.rounds = Some(count(name, v)?),
            ("--streams", Some(v)) => parsed.streams = Some(count(name, v)?),
            ("--work-dir", Some(v)) if !v.is_empty() => parsed.work_dir = v.into(),
            ("--litellm-venv", Some(v)) if !v.is_empty() => parsed.litellm_venv = v.into(),
            _ => {
                return Err(format!(
                    "unknown argument `{arg}` (bench serve takes --quick, --with-litellm, \
                     --instructions, --rounds=N, --streams=N, --work-dir=PATH, --litellm-venv=PATH)"
                ));
            }
        }
    }
    Ok(parsed)
}

/// How much a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Interleaved rounds of each phase.
    pub rounds: usize,
    /// Requests of each kind to each backend before the rounds.
    pub warmup: usize,
    /// Non-streamed requests one at a time per backend per round (fast upstream).
    pub fast: usize,
    /// Streamed requests one at a time per backend per round (fast upstream).
    pub streamed: usize,
    /// Requests each client sends per backend per round at each concurrency (paced upstream).
    pub per_client: usize,
    /// Requests at concurrency 1 per backend per round (paced upstream).
    pub paced_single: usize,
    /// Streams opened at once for the memory measure.
    pub streams: usize,
    /// Conversations of [`continued::TURNS`] turns per backend per round at concurrency 1
    /// (the continued phase).
    pub conversations: usize,
    /// Requests each backend serves at saturation in the continued phase.
    pub continued: usize,
}

impl Size {
    /// The full run.
    pub const FULL: Size = Size {
        rounds: 9,
        warmup: 20,
        fast: 300,
        streamed: 100,
        per_client: 20,
        paced_single: 100,
        streams: 1000,
        conversations: 10,
        continued: 2000,
    };

    /// `--quick`: fewer rounds (5) and about a third of the requests in each; the same 1,000
    /// streams.
    pub const QUICK: Size = Size {
        rounds: 5,
        warmup: 10,
        fast: 100,
        streamed: 30,
        per_client: 8,
        paced_single: 30,
        streams: 1000,
        conversations: 4,
        continued: 600,
    };

    /// The size `args` ask for.
    pub fn of(args: &Args) -> Size {
        let mut size = if args.quick { Size::QUICK } else { Size::FULL };
        if let Some(rounds) = args.rounds {
            size.rounds = rounds;
        }
        if let Some(streams) = args.streams {
            size.streams = streams;
        }
        size
    }
}

/// A figure over rounds: the median of the round values and their range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median of the round values (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest round value.
    pub min: f64,
    /// The largest round value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` for none (or a NaN among them).
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Some(Spread {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }

    /// `median [min–max]` with `digits` decimals.
    pub fn show(&self, digits: usize) -> String {
        format!(
            "{:.digits$} [{:.digits$}–{:.digits$}]",
            self.median, self.min, self.max
        )
    }
}

/// The order the `n` backends take their turns in round `round`: rotated by one each round,
/// and reversed every other cycle of `n` rounds, so over `2n` rounds each backend is in each
/// position twice and goes before each other one `n` times.
pub fn interleaved_order(n: usize, round: usize) -> Vec<usize> {
    let shift = round % n.max(1);
    let mut order: Vec<usize> = (0..n).map(|i| (i + shift) % n).collect();
    if (round / n.max(1)) % 2 == 1 {
        order.reverse();
    }
    order
}

/// The nearest-rank percentile `p` of unsorted samples, in milliseconds.
pub fn percentile_ms(samples: &[Duration], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort();
    gateway::percentile(&sorted, p).as_secs_f64() * 1e3
}

/// What the run compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The simulator, no gateway.
    Direct,
    /// `hermes serve`, its store on an SQLite file.
    Sqlite,
    /// `hermes serve`, its store on PostgreSQL.
    Postgres,
    /// LiteLLM's proxy.
    Litellm,
}

impl Backend {
    /// Its row label.
    pub fn label(self) -> &'static str {
        match self {
            Backend::Direct => "direct (simulator)",
            Backend::Sqlite => "hermes · SQLite",
            Backend::Postgres => "hermes · PostgreSQL",
            Backend::Litellm => "LiteLLM proxy",
        }
    }
}

/// The servers of one phase in front of one simulator, and a target for each backend.
struct Phase {
    sim: SimServer,
    gateways: Vec<GatewayServer>,
    proxy: Option<litellm::Proxy>,
    /// (backend, its target), direct first.
    targets: Vec<(Backend, Target)>,
}

/// Where the PostgreSQL backend's store is, or why there is none.
enum Pg {
    Given(String),
    Own(pg_cluster::Cluster),
    Missing(String),
}

impl Pg {
    fn url(&self) -> Option<&str> {
        match self {
            Pg::Given(url) => Some(url),
            Pg::Own(cluster) => Some(cluster.url()),
            Pg::Missing(_) => None,
        }
    }
}

/// Everything the servers of a phase need to start.
struct Setup<'a> {
    bin: &'a Path,
    dir: &'a Path,
    pg: Option<&'a str>,
    python: Option<&'a Path>,
    /// LiteLLM's workers and the gateways' threads (`--workers`).
    workers: usize,
}

impl Setup<'_> {
    /// The simulator (with `reply_delay` and `chunk_delay`), a gateway on each store and the
    /// proxy, in `dir/NAME-…`. A proxy that cannot start is left out, with why.
    fn start(
        &self,
        name: &str,
        reply_delay: Duration,
        chunk_delay: Duration,
        notes: &mut Vec<String>,
    ) -> Result<Phase, BenchError> {
        let sim = SimServer::start_paced(
            self.bin,
            &self.dir.join(format!("{name}-sim")),
            reply_delay,
            chunk_delay,
        )?;
        let mut targets = vec![(Backend::Direct, Target::direct(&sim.base))];
        let mut gateways = Vec::new();
        // The gateways run as many threads as LiteLLM runs workers: one on the pinned core.
        let workers = self.workers.to_string();
        let threads = ["--workers", workers.as_str()];
        let sqlite = GatewayServer::start_with(
            self.bin,
            &self.dir.join(format!("{name}-sqlite")),
            &sim.base,
            &threads,
            &[],
        )?;
        let mut target = Target::gateway(&sqlite, Door::Chat);
        target.name = "hermes-sqlite";
        targets.push((Backend::Sqlite, target));
        gateways.push(sqlite);
        if let Some(url) = self.pg {
            let pg = GatewayServer::start_with(
                self.bin,
                &self.dir.join(format!("{name}-postgres")),
                &sim.base,
                &threads,
                &[("HERMES_DATABASE_URL", url)],
            )?;
            let mut target = Target::gateway(&pg, Door::Chat);
            target.name = "hermes-postgres";
            targets.push((Backend::Postgres, target));
            gateways.push(pg);
        }
        let mut proxy = None;
        if let Some(python) = self.python {
            match litellm::Proxy::start(
                python,
                &self.dir.join(format!("{name}-litellm")),
                &sim.base,
                gateway::MODEL,
                gateway::FAKE_KEY,
                self.workers,
            ) {
                Ok(p) => {
                    targets.push((
                        Backend::Litellm,
                        Target {
                            name: "litellm",
                            door: Door::Chat,
                            url: format!("{}/v1/chat/completions", p.base),
                            model: gateway::MODEL.to_owned(),
                            bearer: Some(litellm::MASTER_KEY.to_owned()),
                        },
                    ));
                    proxy = Some(p);
                }
                Err(e) => notes.push(format!("LiteLLM ({name} upstream) did not start: {e}")),
            }
        }
        Ok(Phase {
            sim,
            gateways,
            proxy,
            targets,
        })
    }
}

/// One backend's figures over the rounds (`None`: not measured).
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Added p50 at concurrency 1, fast upstream, non-streamed (ms; direct: its own p50).
    pub added_p50: Vec<f64>,
    /// Added p99, likewise.
    pub added_p99: Vec<f64>,
    /// Added median time to the first chunk of a stream (ms; direct: its own).
    pub added_ttft: Vec<f64>,
    /// p99 ÷ direct's p99 at each of [`CONCURRENCY`], paced upstream.
    pub ratio: [Vec<f64>; 3],
    /// Requests per second completed at concurrency 64, paced upstream.
    pub throughput: Vec<f64>,
    /// The memory measure, when it ran.
    pub memory: Option<Memory>,
    /// Added p50 of a continued turn at concurrency 1 (ms; direct: its own), per round.
    pub continued_p50: Vec<f64>,
    /// Added p99 of a continued turn at concurrency 1, likewise.
    pub continued_p99: Vec<f64>,
    /// The serving processes' CPU over five-turn conversations at saturation, pinned.
    pub cost: Option<continued::Cost>,
    /// The same for every other [`continued::Workload`].
    pub workloads: Vec<(continued::Workload, continued::Cost)>,
    /// Why the backend stopped being measured, if it did.
    pub failed: Option<String>,
}

/// A backend's resident memory around `streams` paced streams opened at once.
#[derive(Clone, Debug)]
pub struct Memory {
    /// Resident at idle (after the rounds, just before the streams), KiB.
    pub idle_kib: u64,
    /// (peak − idle) ÷ streams, KiB.
    pub per_stream_kib: f64,
    /// Streams in flight at one moment (client side).
    pub in_flight: usize,
    /// Streams that ended complete.
    pub completed: usize,
    /// Streams opened.
    pub opened: usize,
    /// Whether the peak was reset just before the streams.
    pub reset: bool,
}

impl Memory {
    /// Whether the measure stands: every stream completed, and at least 95% of them were in
    /// flight at one moment.
    pub fn whole(&self) -> bool {
        self.completed == self.opened && self.in_flight * 100 >= self.opened * 95
    }
}

/// Why the run fails although it printed its figures: a backend that stopped being measured (a
/// request or stream of it failed), a memory measure over streams that did not all complete or
/// were not open together, LiteLLM not measured although `--with-litellm` asked for it. Empty:
/// the run stands.
pub fn failures(report: &Report, args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    for (backend, row) in &report.rows {
        if let Some(why) = &row.failed {
            out.push(format!("{}: {why}", backend.label()));
        }
        // LiteLLM's streams that were not open together make its memory figure unjudged (its
        // own limit, printed in the table), not the run a failure: it is the peer measured.
        if let Some(m) = row
            .memory
            .as_ref()
            .filter(|m| !m.whole() && *backend != Backend::Litellm)
        {
            out.push(format!(
                "{}: of {} streams, {} completed and at most {} were in flight at once",
                backend.label(),
                m.opened,
                m.completed,
                m.in_flight
            ));
        }
    }
    if let Some(Err(why)) = &report.instructions {
        out.push(format!("the callgrind count did not run: {why}"));
    }
    let litellm = report.rows.iter().find(|(b, _)| *b == Backend::Litellm);
    if args.with_litellm
        && litellm.is_none_or(|(_, row)| row.throughput.is_empty() || row.cost.is_none())
    {
        let why = report
            .notes
            .iter()
            .find(|n| n.starts_with("LiteLLM"))
            .map_or("no figure of it", String::as_str);
        out.push(format!(
            "LiteLLM was asked for (--with-litellm) but not measured: {why}"
        ));
    }
    out
}

/// What the run measured and how.
#[derive(Debug)]
pub struct Report {
    /// Each backend measured, in [`Backend`] order, with its figures.
    pub rows: Vec<(Backend, Row)>,
    /// The size run.
    pub size: Size,
    /// Lines about what could not run or how it ran (PostgreSQL, LiteLLM).
    pub notes: Vec<String>,
    /// LiteLLM's workers (the machine's cores), when it ran.
    pub litellm_workers: Option<usize>,
    /// [`gateway::machine_load`] before and after.
    pub load: [(usize, Option<f64>); 2],
    /// Wall time of the whole run.
    pub took: Duration,
    /// The CPU the continued phase pinned the serving processes to (`None`: not pinned, one
    /// CPU).
    pub server_cpu: Option<usize>,
    /// The callgrind count of a turn ([`continued::instructions`]); `None`: valgrind is not
    /// installed.
    pub instructions: Option<Result<continued::Instructions, String>>,
}

/// Runs `per_client` requests from each of `clients` concurrent clients (each sending its next
/// when its last answered); every latency, and the wall time.
async fn closed_loop(
    client: &reqwest::Client,
    target: &Target,
    clients: usize,
    per_client: usize,
) -> Result<(Vec<Duration>, Duration), BenchError> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                let mut took = Vec::with_capacity(per_client);
                for _ in 0..per_client {
                    took.push(target.plain(&client).await.map_err(|e| e.to_string())?);
                }
                Ok::<_, String>(took)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(clients * per_client);
    for task in tasks {
        all.extend(task.await.map_err(|e| e.to_string())??);
    }
    Ok((all, started.elapsed()))
}

/// Time to the first token ([`Streamed::first_token`]) of each of `n` streams sent one at a
/// time; every one must end complete.
async fn first_tokens(
    client: &reqwest::Client,
    target: &Target,
    n: usize,
) -> Result<Vec<Duration>, BenchError> {
    let mut firsts = Vec::with_capacity(n);
    for _ in 0..n {
        let reply = target.streamed(client, Instant::now()).await?;
        if !reply.completed {
            return Err(format!("{}: a stream ended without [DONE]", target.name).into());
        }
        firsts.push(reply.first_token);
    }
    Ok(firsts)
}

/// Sends `warmup` non-streamed requests (and as many streamed ones when `streamed`) to every
/// target; a backend that fails is marked failed in `rows`.
async fn warm(
    client: &reqwest::Client,
    targets: &[(Backend, Target)],
    rows: &mut [(Backend, Row)],
    warmup: usize,
    streamed: bool,
) {
    for (backend, target) in targets {
        for _ in 0..warmup {
            let done = async {
                target.plain(client).await?;
                if streamed {
                    target.streamed(client, Instant::now()).await?;
                }
                Ok::<_, BenchError>(())
            };
            if let Err(e) = done.await {
                fail(rows, *backend, format!("warm-up: {e}"));
                break;
            }
        }
    }
}

/// Marks `backend` failed with `why` (the first reason kept).
fn fail(rows: &mut [(Backend, Row)], backend: Backend, why: String) {
    if let Some((_, row)) = rows.iter_mut().find(|(b, _)| *b == backend) {
        row.failed.get_or_insert(why);
    }
}

/// `result` of `backend`'s turn: its value; for a backend other than direct, a failure marks
/// it failed (`what` saying where) and is `None`; direct's failure ends the run.
fn settle<T>(
    rows: &mut [(Backend, Row)],
    backend: Backend,
    what: impl FnOnce() -> String,
    result: Result<T, BenchError>,
) -> Result<Option<T>, BenchError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if backend == Backend::Direct => Err(e),
        Err(e) => {
            fail(rows, backend, format!("{}: {e}", what()));
            Ok(None)
        }
    }
}

/// Whether `backend` is still measured.
fn live(rows: &[(Backend, Row)], backend: Backend) -> bool {
    rows.iter()
        .any(|(b, row)| *b == backend && row.failed.is_none())
}

fn row_mut(rows: &mut [(Backend, Row)], backend: Backend) -> &mut Row {
    let at = rows
        .iter()
        .position(|(b, _)| *b == backend)
        .unwrap_or_default();
    &mut rows[at].1
}

/// One round over every live backend, in the round's interleaved order (`seed`): each one
/// `measure`d, a failure settled ([`settle`]: direct's ends the run, another's marks it
/// failed); then direct's figures, which every other row is compared with, and everyone's.
async fn one_round<T: Copy>(
    targets: &[(Backend, Target)],
    rows: &mut [(Backend, Row)],
    seed: usize,
    what: impl Fn() -> String,
    mut measure: impl AsyncFnMut(&Target) -> Result<T, BenchError>,
) -> Result<(T, Vec<(Backend, T)>), BenchError> {
    let mut got = Vec::new();
    for i in interleaved_order(targets.len(), seed) {
        let (backend, target) = &targets[i];
        if !live(rows, *backend) {
            continue;
        }
        if let Some(value) = settle(rows, *backend, &what, measure(target).await)? {
            got.push((*backend, value));
        }
    }
    let Some(&(_, direct)) = got.iter().find(|g| g.0 == Backend::Direct) else {
        return Err("no direct figures in a round".into());
    };
    Ok((direct, got))
}

/// What a phase's rounds run against: the client, the backends' targets (direct first) and the
/// run's size.
#[derive(Clone, Copy)]
struct Upstream<'a> {
    client: &'a reqwest::Client,
    targets: &'a [(Backend, Target)],
    size: Size,
}

/// The fast phase's rounds: each backend's p50, p99 and median time to first token per round,
/// less direct's in the same round.
async fn fast_rounds(on: Upstream<'_>, rows: &mut [(Backend, Row)]) -> Result<(), BenchError> {
    for round in 0..on.size.rounds {
        let what = || format!("fast round {round}");
        let (direct, got) = one_round(on.targets, rows, round, what, async |target| {
            let mut plain = Vec::with_capacity(on.size.fast);
            for _ in 0..on.size.fast {
                plain.push(target.plain(on.client).await?);
            }
            let firsts = first_tokens(on.client, target, on.size.streamed).await?;
            Ok((
                percentile_ms(&plain, 0.5),
                percentile_ms(&plain, 0.99),
                percentile_ms(&firsts, 0.5),
            ))
        })
        .await?;
        let (d50, d99, dttft) = direct;
        for (backend, (p50, p99, ttft)) in got {
            let row = row_mut(rows, backend);
            let base = |d: f64| if backend == Backend::Direct { 0.0 } else { d };
            row.added_p50.push(p50 - base(d50));
            row.added_p99.push(p99 - base(d99));
            row.added_ttft.push(ttft - base(dttft));
        }
    }
    Ok(())
}

/// The paced phase's rounds: at each concurrency, each backend's p99 ÷ direct's in the same
/// round; at the last, its requests per second.
async fn paced_rounds(on: Upstream<'_>, rows: &mut [(Backend, Row)]) -> Result<(), BenchError> {
    for round in 0..on.size.rounds {
        for (k, &clients) in CONCURRENCY.iter().enumerate() {
            let per_client = if clients == 1 {
                on.size.paced_single
            } else {
                on.size.per_client
            };
            let what = || format!("paced round {round}, {clients} clients");
            let (direct, got) = one_round(on.targets, rows, round + k, what, async |target| {
                let (samples, wall) = closed_loop(on.client, target, clients, per_client).await?;
                Ok((
                    percentile_ms(&samples, 0.99),
                    samples.len() as f64 / wall.as_secs_f64(),
                ))
            })
            .await?;
            let (direct_p99, _) = direct;
            for (backend, (p99, rate)) in got {
                let row = row_mut(rows, backend);
                row.ratio[k].push(p99 / direct_p99);
                if k == CONCURRENCY.len() - 1 {
                    row.throughput.push(rate);
                }
            }
        }
    }
    Ok(())
}

/// The memory measure: `n` streams at once through each backend in turn (the paced upstream),
/// the serving process and its descendants watched (the simulator for direct).
async fn memory(
    client: &reqwest::Client,
    phase: &Phase,
    rows: &mut [(Backend, Row)],
    n: usize,
) -> Result<(), BenchError> {
    for (backend, target) in &phase.targets {
        if !live(rows, *backend) {
            continue;
        }
        let process = match backend {
            Backend::Direct => &phase.sim.process,
            Backend::Sqlite => &phase.gateways[0].process,
            Backend::Postgres => &phase.gateways[1].process,
            Backend::Litellm => match &phase.proxy {
                Some(proxy) => &proxy.process,
                None => continue,
            },
        };
        let run = gateway::burst(client, target, n, &[process]).await;
        if let Some((streams, watched)) = settle(rows, *backend, || format!("{n} streams"), run)? {
            let [burst] = watched[..] else {
                return Err("one process watched, not one burst".into());
            };
            row_mut(rows, *backend).memory = Some(Memory {
                idle_kib: burst.idle.rss_kib,
                per_stream_kib: burst.per_stream_kib(n),
                in_flight: streams.in_flight,
                completed: streams.completed,
                opened: streams.opened,
                reset: burst.reset,
            });
        }
    }
    Ok(())
}

/// Whether a backend's client keeps each reply whole (the upstream needs its carriers back and
/// nothing in between keeps them), or drops its carriers (a gateway re-attaches them).
fn keeps(backend: Backend) -> bool {
    matches!(backend, Backend::Direct | Backend::Litellm)
}

/// The serving process of `backend` in `phase` (the simulator for direct).
fn server_pid(phase: &Phase, backend: Backend) -> Option<u32> {
    match backend {
        Backend::Direct => Some(phase.sim.process.pid()),
        Backend::Sqlite => phase.gateways.first().map(|g| g.process.pid()),
        Backend::Postgres => phase.gateways.get(1).map(|g| g.process.pid()),
        Backend::Litellm => phase.proxy.as_ref().map(|p| p.process.pid()),
    }
}

/// The continued phase at concurrency 1: the added p50 and p99 of a continued turn, `rounds`
/// interleaved rounds of `conversations` conversations of [`continued::TURNS`] turns per
/// backend, into `rows`.
async fn continued_latency(
    client: &reqwest::Client,
    phase: &Phase,
    rows: &mut [(Backend, Row)],
    rounds: usize,
    conversations: usize,
) -> Result<(), BenchError> {
    for round in 0..rounds {
        let what = || format!("continued round {round}");
        let (direct, got) = one_round(&phase.targets, rows, round, what, async |target| {
            let backend = phase
                .targets
                .iter()
                .find(|(_, t)| t.url == target.url)
                .map_or(Backend::Direct, |(b, _)| *b);
            let mut times = Vec::with_capacity(conversations * (continued::TURNS - 1));
            for _ in 0..conversations {
                times.extend(
                    target
                        .conversation(client, continued::TURNS, keeps(backend))
                        .await?,
                );
            }
            Ok((percentile_ms(&times, 0.5), percentile_ms(&times, 0.99)))
        })
        .await?;
        for (backend, (p50, p99)) in got {
            let row = row_mut(rows, backend);
            let base = |d: f64| if backend == Backend::Direct { 0.0 } else { d };
            row.continued_p50.push(p50 - base(direct.0));
            row.continued_p99.push(p99 - base(direct.1));
        }
    }
    Ok(())
}

/// The continued phase at saturation: each backend but direct in turn
/// ([`continued::saturate`]), its [`continued::Cost`] into `rows`.
async fn continued_cost(
    client: &reqwest::Client,
    phase: &Phase,
    rows: &mut [(Backend, Row)],
    size: Size,
) -> Result<(), BenchError> {
    for (backend, target) in &phase.targets {
        if *backend == Backend::Direct || !live(rows, *backend) {
            continue;
        }
        let Some(server) = server_pid(phase, *backend) else {
            continue;
        };
        for workload in continued::Workload::ALL {
            if !live(rows, *backend) {
                break;
            }
            let requests = match workload {
                continued::Workload::Continued => size.continued,
                // A 200-message first contact is a heavy request: fewer of them.
                continued::Workload::Long => size.continued / 10,
                _ => size.continued / 2,
            };
            let keep = keeps(*backend);
            let run = continued::saturate(client, target, server, keep, workload, requests).await;
            let what = || {
                format!(
                    "{} requests of `{}` at saturation",
                    requests,
                    workload.label()
                )
            };
            if let Some(cost) = settle(rows, *backend, what, run)? {
                let row = row_mut(rows, *backend);
                if workload == continued::Workload::Continued {
                    row.cost = Some(cost);
                } else {
                    row.workloads.push((workload, cost));
                }
            }
        }
    }
    Ok(())
}

/// Raises this process's soft limit on open files to its hard limit (children inherit it): a
/// thousand streams need a few thousand sockets across the client, the servers and the
/// simulator. Returns the limit in force (`None`: unlimited).
pub fn raise_open_files() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && current < maximum
    {
        limit.current = Some(maximum);
        let _ = setrlimit(Resource::Nofile, limit);
    }
    getrlimit(Resource::Nofile).current
}

/// One progress line on stderr: seconds since `started` and what was done.
fn progress(started: Instant, what: &str) {
    eprintln!(
        "bench serve: {:>6.1} s  {what}",
        started.elapsed().as_secs_f64()
    );
}

/// `bench serve --instructions`: only the callgrind count of a first and a continued turn
/// ([`continued::instructions`]), printed; it fails when valgrind is missing or counted nothing.
/// Its two dumps stay in the work folder (`callgrind.out.first-turns`, `callgrind.out.conversations`)
/// for `callgrind_annotate`.
pub fn instructions_only(bin: &Path, args: &Args) -> Result<continued::Instructions, BenchError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::fs::create_dir_all(&args.work_dir)?;
    let work = std::path::absolute(&args.work_dir)?;
    let dir = tempfile::Builder::new().prefix("run-").tempdir_in(&work)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = gateway::client()?;
    let counted = continued::instructions(bin, dir.path(), &runtime, &client)?;
    // The dumps outlive the run, for `callgrind_annotate` (where the instructions went).
    for (part, name) in [(1, "first-turns"), (2, "conversations")] {
        std::fs::copy(
            dir.path().join(format!("callgrind.out.{part}")),
            work.join(format!("callgrind.out.{name}")),
        )?;
    }
    Ok(counted)
}

/// Runs the whole harness with the release `hermes` at `bin`.
pub fn measure(bin: &Path, args: &Args) -> Result<Report, BenchError> {
    let started = Instant::now();
    let size = Size::of(args);
    let load_before = gateway::machine_load();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut notes = Vec::new();
    match raise_open_files() {
        Some(n) if n < 4 * size.streams as u64 + 256 => notes.push(format!(
            "open files limited to {n}: {} streams may fail for want of sockets",
            size.streams
        )),
        _ => {}
    }
    std::fs::create_dir_all(&args.work_dir)?;
    let work = std::path::absolute(&args.work_dir)?;
    let dir = tempfile::Builder::new().prefix("run-").tempdir_in(&work)?;

    let pg = match std::env::var("HERMES_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => {
            notes.push("PostgreSQL: the server HERMES_TEST_PG_URL names (its own settings)".into());
            Pg::Given(url)
        }
        _ => match pg_cluster::debian_bin() {
            None => Pg::Missing(
                "no PostgreSQL binaries (/usr/lib/postgresql/*/bin; `apt-get install \
                 postgresql`), so no PostgreSQL row"
                    .into(),
            ),
            Some(pgbin) => {
                match pg_cluster::Cluster::create(&pgbin, &work, pg_cluster::Durability::Durable) {
                    Ok(cluster) => {
                        stop_on_interrupt(&pgbin, cluster.data_dir());
                        notes.push(format!(
                            "PostgreSQL: a throwaway cluster ({}), fsync, synchronous_commit and \
                         full_page_writes on, removed at the end",
                            pgbin.display()
                        ));
                        Pg::Own(cluster)
                    }
                    Err(e) => Pg::Missing(format!("the throwaway PostgreSQL did not start: {e}")),
                }
            }
        },
    };
    if let Pg::Missing(why) = &pg {
        notes.push(format!("PostgreSQL: {why}"));
    }

    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let python = if args.with_litellm {
        match litellm::provision(&args.litellm_venv) {
            Ok(python) => Some(python),
            Err(why) => {
                notes.push(format!("LiteLLM: not run: {why}"));
                None
            }
        }
    } else {
        None
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = gateway::client()?;
    let setup = Setup {
        bin,
        dir: dir.path(),
        pg: pg.url(),
        python: python.as_deref(),
        workers,
    };
    let mut rows: Vec<(Backend, Row)> = Vec::new();
    let server_cpu;

    progress(started, "set up (PostgreSQL, LiteLLM's venv)");
    {
        let phase = setup.start("fast", Duration::ZERO, Duration::ZERO, &mut notes)?;
        progress(started, "fast upstream: servers up");
        rows.extend(phase.targets.iter().map(|(b, _)| (*b, Row::default())));
        runtime.block_on(async {
            warm(&client, &phase.targets, &mut rows, size.warmup, true).await;
            fast_rounds(
                Upstream {
                    client: &client,
                    targets: &phase.targets,
                    size,
                },
                &mut rows,
            )
            .await
        })?;
        progress(started, "fast upstream: rounds done");
    }
    {
        let phase = setup.start("paced", PACE, STREAM_CHUNK_DELAY, &mut notes)?;
        progress(started, "paced upstream: servers up");
        // A backend the fast phase could not start is not in `rows` yet.
        for (backend, _) in &phase.targets {
            if !rows.iter().any(|(b, _)| b == backend) {
                rows.push((*backend, Row::default()));
            }
        }
        runtime.block_on(async {
            // Whole replies only: a paced stream lasts seconds.
            warm(&client, &phase.targets, &mut rows, size.warmup, false).await;
            paced_rounds(
                Upstream {
                    client: &client,
                    targets: &phase.targets,
                    size,
                },
                &mut rows,
            )
            .await?;
            progress(started, "paced upstream: rounds done");
            memory(&client, &phase, &mut rows, size.streams).await
        })?;
        progress(started, "paced upstream: streams done");
    }
    {
        // LiteLLM with one worker here: its CPU per request is read on one core, as ours.
        let one = Setup {
            workers: 1,
            ..setup
        };
        let phase = one.start("continued", Duration::ZERO, Duration::ZERO, &mut notes)?;
        for (backend, _) in &phase.targets {
            if !rows.iter().any(|(b, _)| b == backend) {
                rows.push((*backend, Row::default()));
            }
        }
        let postmaster = match &pg {
            Pg::Own(cluster) => continued::postmaster(cluster.data_dir()),
            _ => None,
        };
        let servers: Vec<u32> = [Backend::Sqlite, Backend::Postgres, Backend::Litellm]
            .into_iter()
            .filter_map(|b| server_pid(&phase, b))
            .collect();
        let pinning = continued::Pinning::apply(phase.sim.process.pid(), postmaster, &servers)?;
        if let Pg::Given(_) = &pg {
            notes.push(
                "continued phase: the PostgreSQL server HERMES_TEST_PG_URL names is not pinned"
                    .into(),
            );
        }
        progress(started, "continued conversations: servers up, pinned");
        runtime.block_on(async {
            warm(&client, &phase.targets, &mut rows, size.warmup, false).await;
            continued_latency(&client, &phase, &mut rows, size.rounds, size.conversations).await?;
            progress(started, "continued conversations: rounds done");
            continued_cost(&client, &phase, &mut rows, size).await
        })?;
        server_cpu = pinning.server_cpu;
        drop(pinning);
        progress(started, "continued conversations: saturation done");
    }
    let instructions = match continued::instructions(bin, dir.path(), &runtime, &client) {
        Err(e) if e.to_string().starts_with("valgrind is not installed") => {
            notes.push(format!("callgrind: not run: {e}"));
            None
        }
        counted => Some(counted.map_err(|e| e.to_string())),
    };
    progress(started, "callgrind count done");
    drop(pg);
    let litellm_workers = rows
        .iter()
        .any(|(b, _)| *b == Backend::Litellm)
        .then_some(workers);
    Ok(Report {
        rows,
        size,
        notes,
        litellm_workers,
        load: [load_before, gateway::machine_load()],
        took: started.elapsed(),
        server_cpu,
        instructions,
    })
}

/// A target of issue 33 and whether the run met it.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What the issue asks.
    pub target: &'static str,
    /// What was measured.
    pub measured: String,
    /// `Some(true)`: met; `Some(false)`: not met; `None`: not measured.
    pub met: Option<bool>,
}

/// The targets against the report's figures (never an assertion: a line each).
pub fn verdicts(rows: &[(Backend, Row)]) -> Vec<Verdict> {
    let row = |b: Backend| rows.iter().find(|(x, _)| *x == b).map(|(_, r)| r);
    let spread = |values: &[f64]| Spread::of(values);
    let mut out = Vec::new();
    let pg_p99 = row(Backend::Postgres).and_then(|r| spread(&r.added_p99));
    out.push(Verdict {
        target: "added p99 at concurrency 1, store on PostgreSQL ≤ 1 ms",
        measured: pg_p99.map_or_else(|| "not measured".into(), |s| format!("{:.3} ms", s.median)),
        met: pg_p99.map(|s| s.median <= 1.0),
    });
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let ratio = row(backend).and_then(|r| spread(&r.ratio[2]));
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "p99 gateway ÷ direct ≤ 1.05 at concurrency 64 (SQLite)",
                _ => "p99 gateway ÷ direct ≤ 1.05 at concurrency 64 (PostgreSQL)",
            },
            measured: ratio.map_or_else(|| "not measured".into(), |s| format!("{:.3}", s.median)),
            met: ratio.map(|s| s.median <= 1.05),
        });
    }
    let litellm = row(Backend::Litellm).and_then(|r| spread(&r.throughput));
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let ours = row(backend).and_then(|r| spread(&r.throughput));
        let times = ours.zip(litellm).map(|(o, l)| o.median / l.median);
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "throughput with the store on ≥ 15× LiteLLM's (SQLite)",
                _ => "throughput with the store on ≥ 15× LiteLLM's (PostgreSQL)",
            },
            measured: match (ours, litellm) {
                (Some(o), Some(l)) => format!(
                    "{:.1}× ({:.0} ÷ {:.0} req/s)",
                    o.median / l.median,
                    o.median,
                    l.median
                ),
                (Some(_), None) => "LiteLLM not measured".into(),
                _ => "not measured".into(),
            },
            met: times.map(|t| t >= 15.0),
        });
    }
    let litellm_cost = row(Backend::Litellm).and_then(|r| r.cost);
    for (backend, cpu_us, p99_ms) in [
        (Backend::Sqlite, 150.0, 1.0),
        (Backend::Postgres, 200.0, 2.0),
    ] {
        let cost = row(backend).and_then(|r| r.cost);
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "gateway CPU per continued turn ≤ 150 µs (SQLite)",
                _ => "gateway CPU per continued turn ≤ 200 µs (PostgreSQL)",
            },
            measured: cost.map_or_else(
                || "not measured".into(),
                |c| format!("{:.0} µs", c.per_request_us()),
            ),
            met: cost.map(|c| c.per_request_us() <= cpu_us),
        });
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "continued requests per core-second ≥ 15× LiteLLM's (SQLite)",
                _ => "continued requests per core-second ≥ 15× LiteLLM's (PostgreSQL)",
            },
            measured: match (cost, litellm_cost) {
                (Some(o), Some(l)) => format!(
                    "{:.1}× ({:.0} ÷ {:.0})",
                    o.per_core_second() / l.per_core_second(),
                    o.per_core_second(),
                    l.per_core_second()
                ),
                (Some(_), None) => "LiteLLM not measured".into(),
                _ => "not measured".into(),
            },
            met: cost
                .zip(litellm_cost)
                .map(|(o, l)| o.per_core_second() >= 15.0 * l.per_core_second()),
        });
        let p99 = row(backend).and_then(|r| spread(&r.continued_p99));
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "added p99 of a continued turn at c=1 ≤ 1 ms (SQLite)",
                _ => "added p99 of a continued turn at c=1 ≤ 2 ms (PostgreSQL)",
            },
            measured: p99.map_or_else(|| "not measured".into(), |s| format!("{:.3} ms", s.median)),
            met: p99.map(|s| s.median <= p99_ms),
        });
    }
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let memory = row(backend).and_then(|r| r.memory.as_ref());
        out.push(Verdict {
            target: match backend {
                Backend::Sqlite => "≤ 64 KiB per concurrent stream at 1,000 paced streams (SQLite)",
                _ => "≤ 64 KiB per concurrent stream at 1,000 paced streams (PostgreSQL)",
            },
            measured: memory.map_or_else(
                || "not measured".into(),
                |m| format!("{:.1} KiB ({} streams)", m.per_stream_kib, m.opened),
            ),
            // Judged at the 1,000 streams only (`--streams=N` below it is a smaller run),
            // and only when every stream completed and nearly all were open at once: a peak
            // over streams that failed early measures nothing.
            met: memory
                .filter(|m| m.opened >= 1000 && m.whole())
                .map(|m| m.per_stream_kib <= 64.0),
        });
    }
    out
}

/// Prints the report: the latency table, the capacity table, the targets and the notes.
pub fn print(report: &Report) {
    const W: usize = 22;
    const C: usize = 23;
    let size = report.size;
    let cell = |values: &[f64], digits: usize| {
        Spread::of(values).map_or_else(|| "-".to_owned(), |s| s.show(digits))
    };
    println!();
    println!(
        "{:<W$} {:>C$} {:>C$} {:>C$} {:>C$} {:>C$} {:>C$}",
        "bench serve | latency",
        "added p50 ms c=1",
        "added p99 ms c=1",
        "added TTFT ms",
        "p99÷direct c=1",
        "p99÷direct c=16",
        "p99÷direct c=64",
    );
    for (backend, row) in &report.rows {
        println!(
            "{:<W$} {:>C$} {:>C$} {:>C$} {:>C$} {:>C$} {:>C$}",
            backend.label(),
            cell(&row.added_p50, 3),
            cell(&row.added_p99, 3),
            cell(&row.added_ttft, 3),
            cell(&row.ratio[0], 2),
            cell(&row.ratio[1], 2),
            cell(&row.ratio[2], 2),
        );
    }
    println!(
        "-- each figure: the median of {} round medians [min–max of them]; the direct row's \
         latencies are its own (the baseline), every other row's are its value minus direct's \
         in the same round; added p50/p99: {} non-streamed requests one at a time per backend \
         per round, upstream answering at once; added TTFT: median time until the first SSE event carrying \
         text or reasoning is whole, of {} streams one at a time; p99÷direct: 1, 16 and 64 clients in a closed loop (each sends its \
         next request when its last answered; {} requests at c=1, {} per client at c=16 and \
         c=64), upstream waiting {} ms before it answers (`hermes sim serve --delay-ms {}`)",
        size.rounds,
        size.fast,
        size.streamed,
        size.paced_single,
        size.per_client,
        PACE.as_millis(),
        PACE.as_millis(),
    );
    println!();
    println!(
        "{:<W$} {:>C$} {:>14} {:>18} {:>14} {:>12}",
        "bench serve | capacity",
        "req/s at c=64",
        "RSS idle MiB",
        "KiB per stream",
        "in flight",
        "complete",
    );
    for (backend, row) in &report.rows {
        let (idle, per, flight, done) = row.memory.as_ref().map_or_else(
            || ("-".into(), "-".into(), "-".into(), "-".into()),
            |m| {
                (
                    format!("{:.1}", m.idle_kib as f64 / 1024.0),
                    format!("{:.1}", m.per_stream_kib),
                    format!("{} / {}", m.in_flight, m.opened),
                    format!("{} / {}", m.completed, m.opened),
                )
            },
        );
        println!(
            "{:<W$} {:>C$} {:>14} {:>18} {:>14} {:>12}",
            backend.label(),
            cell(&row.throughput, 0),
            idle,
            per,
            flight,
            done,
        );
    }
    let reset = report
        .rows
        .iter()
        .filter_map(|(_, r)| r.memory.as_ref())
        .all(|m| m.reset);
    println!(
        "-- throughput at a fixed tail: requests per second completed by 64 clients in a closed \
         loop against the paced upstream (the tail it ran at is the row's p99÷direct at c=64; \
         direct's own rate is the ceiling, 64 ÷ {} ms); memory: {} paced streams opened at once \
         through each backend in turn after the rounds (the upstream also pauses {} ms before \
         each event after the first, so they are open together), resident memory of the serving \
         process and its descendants (the simulator for direct, which keeps a record of every \
         request it served, so its idle figure grows with the run; LiteLLM's workers with their \
         parent) from /proc: idle just before, (peak VmHWM − idle) ÷ streams, peaks {}",
        PACE.as_millis(),
        size.streams,
        STREAM_CHUNK_DELAY.as_millis(),
        if reset {
            "reset through clear_refs just before the streams"
        } else {
            "NOT reset (clear_refs refused): since the process started"
        },
    );
    println!();
    println!(
        "{:<W$} {:>C$} {:>C$} {:>16} {:>18} {:>14}",
        "bench serve | continued",
        "added p50 ms c=1",
        "added p99 ms c=1",
        "CPU µs / req",
        "req / core-second",
        "req/s wall",
    );
    for (backend, row) in &report.rows {
        let (cpu, per_core, per_second) = row.cost.map_or_else(
            || ("-".into(), "-".into(), "-".into()),
            |c| {
                (
                    format!("{:.0}", c.per_request_us()),
                    format!("{:.0}", c.per_core_second()),
                    format!("{:.0}", c.per_second()),
                )
            },
        );
        println!(
            "{:<W$} {:>C$} {:>C$} {:>16} {:>18} {:>14}",
            backend.label(),
            cell(&row.continued_p50, 3),
            cell(&row.continued_p99, 3),
            cpu,
            per_core,
            per_second,
        );
    }
    println!(
        "-- conversations of {} turns, the upstream answering at once; a gateway's client drops \
         every carrier (each turn after the first is looked up, re-attached and stored), \
         direct's and LiteLLM's keep each reply whole; added p50/p99: of the continued turns \
         of {} conversations one at a time per backend per round, less direct's in the same \
         round; CPU: {} clients running conversations until {} requests were served, user + \
         system time of the serving process and its descendants (LiteLLM with one worker) from \
         /proc/PID/stat ÷ requests; {}",
        continued::TURNS,
        size.conversations,
        continued::CLIENTS,
        size.continued,
        match report.server_cpu {
            Some(cpu) => format!(
                "the serving processes pinned to CPU {cpu}, the load generator, the simulator \
                 and the run's PostgreSQL cluster to the others (sched_setaffinity)"
            ),
            None => "nothing pinned (one CPU)".to_owned(),
        },
    );
    println!();
    print!("{:<W$}", "bench serve | CPU µs / req");
    for workload in continued::Workload::ALL {
        print!(" {:>16}", workload.label());
    }
    println!();
    for (backend, row) in &report.rows {
        if row.cost.is_none() && row.workloads.is_empty() {
            continue;
        }
        print!("{:<W$}", backend.label());
        for workload in continued::Workload::ALL {
            let cost = if workload == continued::Workload::Continued {
                row.cost
            } else {
                row.workloads
                    .iter()
                    .find(|(w, _)| *w == workload)
                    .map(|(_, c)| *c)
            };
            print!(
                " {:>16}",
                cost.map_or_else(|| "-".to_owned(), |c| format!("{:.0}", c.per_request_us()))
            );
        }
        println!();
    }
    println!(
        "-- the serving processes' CPU per request at saturation ({} clients, pinned as above) for \
         each workload: five-turn conversations; a client's tool loop (the model calls a tool \
         twice, the client answers each, then asks once more); three turns, then the last \
         question edited and sent again (a branch at its place); a first contact of {} messages",
        continued::CLIENTS,
        continued::LONG,
    );
    match &report.instructions {
        Some(Ok(i)) => println!(
            "-- callgrind (hermes · SQLite, one CPU's worth, the load and the machine do not move \
             it): {} instructions per continued turn, {} per first turn ({} conversations of {} \
             turns and {} of one, after {} to warm up)",
            i.per_continued,
            i.per_first,
            i.conversations,
            continued::TURNS,
            i.conversations,
            continued::CALLGRIND_WARM_UP,
        ),
        Some(Err(why)) => println!("-- callgrind: FAILED: {why}"),
        None => {}
    }
    println!();
    println!("bench serve | issues 33 and 50's targets (measured in this run; never asserted)");
    for v in verdicts(&report.rows) {
        let met = match v.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "-",
        };
        println!("{:<72} {:>28}  {met}", v.target, v.measured);
    }
    for (backend, row) in &report.rows {
        if let Some(why) = &row.failed {
            println!("-- {} stopped being measured: {why}", backend.label());
        }
    }
    for note in &report.notes {
        println!("-- {note}");
    }
    println!(
        "-- auth: hermes with gateway keys on (each request carries a key of tenant `{}`, \
         checked against the store's digest), LiteLLM with its master key",
        gateway::TENANT
    );
    if let Some(workers) = report.litellm_workers {
        println!(
            "-- LiteLLM: litellm[proxy]=={} from PyPI in a venv under the target directory, one \
             model entry (openai/{}) at the same simulator, no database, callbacks and message \
             logging off, LITELLM_LOG=ERROR, master key on, {workers} workers (= cores)",
            litellm::VERSION,
            gateway::MODEL,
        );
    }
    let [(cpus, before), (_, after)] = report.load;
    let load = |l: Option<f64>| l.map_or_else(|| "-".to_owned(), |l| format!("{l:.1}"));
    println!(
        "-- loopback only; the load generator (reqwest on tokio, 2 threads), the simulator and \
         every server share this machine's {cpus} CPUs: load average {} before, {} after; the \
         run took {:.0} s",
        load(before),
        load(after),
        report.took.as_secs_f64(),
    );
}

/// Stops and removes the cluster at `data` when the bench is interrupted (Ctrl-C: the server
/// runs in a session of its own, so the terminal's signal does not reach it), then ends the
/// process with status 130. Returns at once; the watch lives on a thread of its own.
fn stop_on_interrupt(bin: &Path, data: &Path) {
    let (bin, data) = (bin.to_owned(), data.to_owned());
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
            eprintln!("interrupted: stopping the throwaway PostgreSQL and removing its data");
            pg_cluster::remove(&bin, &data);
            std::process::exit(130);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse_args(&list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn arguments_choose_the_size_and_the_places() {
        let a = args(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!a.quick && !a.with_litellm);
        assert_eq!(Size::of(&a), Size::FULL);
        assert_eq!(a.work_dir, PathBuf::from("target/bench-serve"));
        let a = args(&[
            "--quick",
            "--with-litellm",
            "--rounds=3",
            "--work-dir=/t/w",
            "--litellm-venv=/t/v",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(a.quick && a.with_litellm);
        let size = Size::of(&a);
        assert_eq!(size.rounds, 3);
        assert_eq!(size.fast, Size::QUICK.fast);
        assert_eq!(size.streams, 1000);
        assert_eq!(a.work_dir, PathBuf::from("/t/w"));
        assert_eq!(a.litellm_venv, PathBuf::from("/t/v"));
        assert_eq!(Size::of(&args(&["--streams=200"]).unwrap()).streams, 200);
        for bad in [
            "--rounds=0",
            "--rounds=x",
            "--streams",
            "--fast",
            "--quick=1",
        ] {
            let err = args(&[bad]).expect_err(bad);
            assert!(err.contains(bad.split('=').nth(1).unwrap_or(bad)), "{err}");
        }
    }

    #[test]
    fn quick_measures_less_than_full_in_every_count() {
        let (q, f) = (Size::QUICK, Size::FULL);
        assert!(q.rounds < f.rounds && q.fast < f.fast && q.streamed < f.streamed);
        assert!(q.per_client < f.per_client && q.paced_single < f.paced_single);
        assert!(q.streams <= f.streams);
    }

    #[test]
    fn a_spread_is_the_median_of_round_values_and_their_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        // An even count: the mean of the middle two.
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert_eq!(Spread::of(&[-0.5]).unwrap().median, -0.5);
        assert!(Spread::of(&[]).is_none());
        assert!(Spread::of(&[1.0, f64::NAN]).is_none());
        assert_eq!(
            Spread::of(&[0.25, 0.5, 1.0]).unwrap().show(2),
            "0.50 [0.25–1.00]"
        );
    }

    #[test]
    fn percentiles_in_ms_sort_their_samples_first() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(percentile_ms(&samples, 0.5), 50.0);
        assert_eq!(percentile_ms(&samples, 0.99), 99.0);
        assert_eq!(percentile_ms(&[], 0.5), 0.0);
    }

    #[test]
    fn interleaving_puts_each_backend_in_each_place_equally() {
        for n in 1..=4 {
            let mut place = vec![vec![0; n]; n];
            let mut before = vec![vec![0; n]; n];
            for round in 0..2 * n {
                let order = interleaved_order(n, round);
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "round {round}");
                for (at, &b) in order.iter().enumerate() {
                    place[b][at] += 1;
                    for &later in &order[at + 1..] {
                        before[b][later] += 1;
                    }
                }
            }
            for b in 0..n {
                assert!(place[b].iter().all(|&k| k == 2), "{n}: {place:?}");
                for other in (0..n).filter(|&o| o != b) {
                    assert_eq!(before[b][other], n, "{n}: {b} before {other}");
                }
            }
        }
    }

    fn row(p99: &[f64], ratio64: &[f64], rate: &[f64], per_stream: Option<f64>) -> Row {
        Row {
            added_p99: p99.to_vec(),
            ratio: [vec![], vec![], ratio64.to_vec()],
            throughput: rate.to_vec(),
            memory: per_stream.map(|k| Memory {
                idle_kib: 10_000,
                per_stream_kib: k,
                in_flight: 1000,
                completed: 1000,
                opened: 1000,
                reset: true,
            }),
            ..Row::default()
        }
    }

    /// `row` with a continued phase: its continued p99 and its CPU over 1,000 requests.
    fn with_cost(mut row: Row, p99: f64, cpu_ms: u64) -> Row {
        row.continued_p99 = vec![p99];
        row.cost = Some(continued::Cost {
            requests: 1000,
            cpu: Duration::from_millis(cpu_ms),
            wall: Duration::from_secs(1),
        });
        row
    }

    #[test]
    fn targets_are_judged_on_the_medians_and_unmeasured_ones_say_so() {
        let rows = vec![
            (Backend::Direct, row(&[0.0], &[1.0], &[3000.0], Some(20.0))),
            (
                Backend::Sqlite,
                with_cost(
                    row(&[0.4, 0.6, 5.0], &[1.01, 1.02, 1.5], &[2900.0], Some(60.0)),
                    0.8,
                    100,
                ),
            ),
            (
                Backend::Postgres,
                with_cost(
                    row(&[0.9, 1.2, 1.4], &[1.2], &[1400.0], Some(200.0)),
                    2.5,
                    300,
                ),
            ),
            (
                Backend::Litellm,
                with_cost(row(&[9.0], &[3.0], &[100.0], Some(900.0)), 9.0, 10_000),
            ),
        ];
        let v = verdicts(&rows);
        let met: Vec<Option<bool>> = v.iter().map(|v| v.met).collect();
        assert_eq!(
            met,
            [
                Some(false), // PostgreSQL's added p99: median 1.2 ms
                Some(true),  // SQLite's ratio: median 1.02
                Some(false), // PostgreSQL's ratio 1.2
                Some(true),  // SQLite 29×
                Some(false), // PostgreSQL 14×
                Some(true),  // SQLite: 100 µs of CPU per continued turn
                Some(true),  // 10,000 per core-second, 100× LiteLLM's 100
                Some(true),  // continued p99 0.8 ms
                Some(false), // PostgreSQL: 300 µs
                Some(true),  // 3,333 per core-second, 33×
                Some(false), // continued p99 2.5 ms
                Some(true),  // 60 KiB
                Some(false), // 200 KiB
            ]
        );
        assert_eq!(v[0].measured, "1.200 ms");
        assert_eq!(v[3].measured, "29.0× (2900 ÷ 100 req/s)");
        assert_eq!(v[5].measured, "100 µs");
        assert_eq!(v[6].measured, "100.0× (10000 ÷ 100)");
        // A run that measured all of it stands.
        let report = |rows: Vec<(Backend, Row)>, notes: Vec<String>| Report {
            rows,
            size: Size::of(&parse_args(&[]).unwrap()),
            notes,
            litellm_workers: None,
            load: [(1, None), (1, None)],
            took: Duration::ZERO,
            server_cpu: Some(1),
            instructions: None,
        };
        let asked = parse_args(&["--with-litellm".to_owned()]).unwrap();
        assert!(failures(&report(rows.clone(), vec![]), &asked).is_empty());
        // LiteLLM that served the rounds but not the continued phase fails it too.
        let mut no_cost = rows.clone();
        no_cost[3].1.cost = None;
        assert_eq!(failures(&report(no_cost, vec![]), &asked).len(), 1);
        // Without LiteLLM and PostgreSQL, those targets are not judged.
        let v = verdicts(&rows[..2]);
        assert_eq!(v[0].met, None);
        assert_eq!(v[0].measured, "not measured");
        assert_eq!(v[3].met, None);
        assert_eq!(v[3].measured, "LiteLLM not measured");
        // ... and LiteLLM asked for but not measured fails the run, saying why.
        let notes = vec!["LiteLLM: not run: pip failed".to_owned()];
        let failed = failures(&report(rows[..2].to_vec(), notes.clone()), &asked);
        assert_eq!(
            failed,
            [
                "LiteLLM was asked for (--with-litellm) but not measured: LiteLLM: not run: pip failed"
            ]
        );
        assert!(
            failures(
                &report(rows[..2].to_vec(), notes),
                &parse_args(&[]).unwrap()
            )
            .is_empty()
        );
    }

    #[test]
    fn only_a_gateway_client_drops_its_carriers() {
        assert!(keeps(Backend::Direct) && keeps(Backend::Litellm));
        assert!(!keeps(Backend::Sqlite) && !keeps(Backend::Postgres));
    }

    #[test]
    fn a_failed_backend_or_streams_that_did_not_all_complete_fail_the_run() {
        let args = parse_args(&[]).unwrap();
        let mut sqlite = row(&[0.5], &[1.0], &[2900.0], Some(100.0));
        sqlite.failed = Some("a stream ended without [DONE]".into());
        let mut postgres = row(&[0.9], &[1.2], &[1400.0], Some(90.0));
        if let Some(m) = postgres.memory.as_mut() {
            m.completed = 990;
        }
        // LiteLLM's streams not open together: its figure is not judged, the run not failed.
        let mut litellm = row(&[9.0], &[3.0], &[100.0], Some(900.0));
        if let Some(m) = litellm.memory.as_mut() {
            m.in_flight = 389;
        }
        let report = Report {
            rows: vec![
                (Backend::Sqlite, sqlite),
                (Backend::Postgres, postgres.clone()),
                (Backend::Litellm, litellm),
            ],
            size: Size::of(&args),
            notes: vec![],
            litellm_workers: None,
            load: [(1, None), (1, None)],
            took: Duration::ZERO,
            server_cpu: None,
            instructions: Some(Err("callgrind_control --zero failed".into())),
        };
        let failed = failures(&report, &args);
        assert_eq!(failed.len(), 3, "{failed:?}");
        assert!(failed[2].contains("callgrind"), "{failed:?}");
        assert!(
            failed[0].contains("a stream ended without [DONE]"),
            "{failed:?}"
        );
        assert!(failed[1].contains("990 completed"), "{failed:?}");
        // Its memory target is not judged either.
        let v = verdicts(&report.rows);
        assert_eq!(v.last().unwrap().met, None);
        // Nearly all open at once, every one complete: it stands.
        if let Some(m) = postgres.memory.as_mut() {
            m.completed = 1000;
            m.in_flight = 950;
        }
        assert!(postgres.memory.as_ref().unwrap().whole());
    }
}
