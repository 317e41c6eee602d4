//! The gateway benchmark (issues 30 and 31): what `hermes serve` adds to a request on loopback,
//! through its chat-completions door and its Anthropic Messages door, and its resident memory
//! with many streams in flight through each, all against the same simulator called directly in
//! the same run.
//!
//! Everything runs the release `hermes` binary as child processes ([`Process`], killed and reaped
//! when dropped, whichever way the benchmark ends): `hermes sim serve --profile deepseek-v4` as
//! the upstream, and `hermes serve --listen 127.0.0.1:0` in front of it (gateway keys on: every
//! request carries a key made for the tenant [`TENANT`], as a production client's would), each in a
//! temporary `HERMES_HOME` (also its `HOME`) with a fake `DEEPSEEK_API_KEY`, the default SQLite
//! store and an otherwise empty environment (only `PATH` is kept). The simulator is always
//! called with the chat body; the gateway's doors ([`Door`]) with theirs (`/v1/chat/completions`,
//! and `/v1/messages` with `max_tokens`).
//!
//! - [`latency`]: after a warm-up, K rounds of the same request sent to the simulator directly
//!   and through each door of one gateway (the order within a round going through every
//!   permutation, [`round_order`]), non-streamed (the whole body) and streamed (time to the
//!   first and to the last byte); nearest-rank p50 and p99 of each ([`percentile`]). Each door
//!   is compared with the same direct samples.
//! - [`streams`]: N streamed requests opened at once against a simulator that paces its events
//!   (`hermes sim serve --chunk-delay-ms`), so that they are all in flight together; the most
//!   that were in flight at one moment, counted from the client's side ([`peak_overlap`]: from
//!   each stream's first chunk to its last byte), and how many ended complete
//!   ([`Door::completed`]: `data: [DONE]` for chat, the event named `message_stop` for
//!   Messages, parsed by [`sse_events`]). Around them, the serving process's resident memory
//!   from `/proc/PID/status` ([`ProcMemory`]): at idle, and at its peak (`VmHWM`, reset through
//!   `/proc/PID/clear_refs` just before the streams open). [`measure`] runs the streams against
//!   the simulator directly first (its own memory the baseline), then through a fresh gateway's
//!   chat door, then through another fresh gateway's Messages door (the first one stopped), all
//!   in front of that one simulator.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource as _;
use futures_util::{FutureExt as _, StreamExt as _};
use serde_json::{Value, json};

use crate::storage::BenchError;

/// The simulator profile that stands for the upstream.
pub const PROFILE: &str = "deepseek-v4";

/// The model asked for, directly and (as `deepseek/MODEL`) through the gateway.
pub const MODEL: &str = "deepseek-v4-pro";

/// The fake upstream key the gateway is given (and the direct requests send).
pub const FAKE_KEY: &str = "sk-hermes-bench-not-a-real-key";

/// Lines of the gateway's stderr kept to explain a failure.
const LOG_TAIL: usize = 40;

/// What a run of the gateway benchmark does.
#[derive(Clone, Debug)]
pub struct Options {
    /// The release `hermes` binary.
    pub bin: PathBuf,
    /// Requests of each kind sent before anything is timed.
    pub warmup: usize,
    /// Timed rounds per kind: a request to the simulator directly and one through each door,
    /// so a pair (direct, door) for each door.
    pub pairs: usize,
    /// Streams in flight at once for the memory measure, through each door.
    pub streams: usize,
    /// The simulator's pause before each streamed event after the first, in the memory measure.
    pub chunk_delay: Duration,
}

/// The nearest-rank percentile `p` (in (0, 1]) of sorted samples: the smallest sample with at
/// least `p` of all samples at or below it. Zero for no samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // The rank is at most the length, so it fits a usize.
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A `kB` field of a `/proc/PID/status` text (e.g. `VmHWM`), in KiB.
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// The most intervals that hold one same moment. Each is (start, end); one that ends exactly
/// when another starts does not overlap it.
pub fn peak_overlap(intervals: &[(Duration, Duration)]) -> usize {
    let mut edges: Vec<(Duration, i8)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // At equal times the ends (-1) sort first.
    edges.sort();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, step) in edges {
        now += i64::from(step);
        peak = peak.max(now);
    }
    usize::try_from(peak).unwrap_or(0)
}

/// One SSE event of a body: its name and its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when the event names none (the SSE default).
    pub name: String,
    /// The `data:` lines, joined.
    pub data: String,
}

/// Every event of an SSE body, in order, parsed by `eventsource-stream`.
pub fn sse_events(body: &[u8]) -> Result<Vec<SseEvent>, BenchError> {
    let chunks = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body.to_vec())]);
    let events: Vec<_> = chunks
        .eventsource()
        .collect()
        .now_or_never()
        .ok_or("an SSE body held in memory did not parse at once")?;
    events
        .into_iter()
        .map(|e| {
            e.map(|e| SseEvent {
                name: e.event,
                data: e.data,
            })
            .map_err(|e| format!("bad SSE: {e}").into())
        })
        .collect()
}

/// The API a request speaks: the simulator directly and the gateway's chat door speak OpenAI
/// chat-completions, the gateway's Messages door Anthropic Messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// `POST …/chat/completions`.
    Chat,
    /// `POST …/messages`.
    Messages,
}

impl Door {
    /// The request body asking `model` for an answer to `hello N` (`n`: each request its own
    /// question — the same body again within the gateway's retry window is answered from its
    /// store, a path this benchmark does not mean to time). Messages requires `max_tokens`; the
    /// simulator's answer is shorter than it.
    pub fn body(self, model: &str, stream: bool, n: u64) -> Value {
        let messages = json!([{"role": "user", "content": format!("hello {n}")}]);
        match self {
            Door::Chat => json!({"model": model, "messages": messages, "stream": stream}),
            Door::Messages => json!({
                "model": model,
                "max_tokens": 256,
                "messages": messages,
                "stream": stream,
            }),
        }
    }

    /// Whether a whole (non-streamed) reply holds an answer: a chat completion's message
    /// content, or a Messages `message` with a text block.
    pub fn answered(self, reply: &Value) -> bool {
        match self {
            Door::Chat => reply["choices"][0]["message"]["content"].as_str().is_some(),
            Door::Messages => {
                reply["type"] == "message"
                    && reply["content"].as_array().is_some_and(|blocks| {
                        blocks
                            .iter()
                            .any(|b| b["type"] == "text" && b["text"].as_str().is_some())
                    })
            }
        }
    }

    /// Whether a stream ended as this API ends a complete answer: its last event is
    /// `data: [DONE]` (chat), or the event named `message_stop` (Messages, which has no
    /// `[DONE]`).
    pub fn completed(self, events: &[SseEvent]) -> bool {
        events.last().is_some_and(|last| match self {
            Door::Chat => last.data == "[DONE]",
            Door::Messages => last.name == "message_stop",
        })
    }

    /// Whether `event` carries a token of the answer: a chat chunk whose delta has non-empty
    /// `content` or `reasoning_content`; a Messages `content_block_delta`, or a
    /// `content_block_start` of a thinking block (the gateway sends a non-Claude thinking
    /// block whole, in its start event).
    pub fn carries_token(self, event: &SseEvent) -> bool {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return false;
        };
        let filled = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
        match self {
            Door::Chat => {
                let delta = &data["choices"][0]["delta"];
                filled(&delta["content"]) || filled(&delta["reasoning_content"])
            }
            Door::Messages => match data["type"].as_str() {
                Some("content_block_delta") => true,
                Some("content_block_start") => filled(&data["content_block"]["thinking"]),
                _ => false,
            },
        }
    }

    /// Its endpoint under a `/v1` base.
    pub fn path(self) -> &'static str {
        match self {
            Door::Chat => "chat/completions",
            Door::Messages => "messages",
        }
    }

    /// How a complete stream ends, for messages.
    pub fn end_marker(self) -> &'static str {
        match self {
            Door::Chat => "[DONE]",
            Door::Messages => "message_stop",
        }
    }
}

/// The machine's CPUs and its 1-minute load average (`/proc/loadavg`), to judge the tails by:
/// the benchmark shares the machine with whatever else runs.
pub fn machine_load() -> (usize, Option<f64>) {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok());
    (cpus, load)
}

/// A process's resident memory, from `/proc/PID/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcMemory {
    /// `VmRSS`: resident now, KiB.
    pub rss_kib: u64,
    /// `VmHWM`: the resident peak since start or the last reset, KiB.
    pub peak_kib: u64,
}

impl ProcMemory {
    /// The sum over `root` and every process descended from it (a server that forks workers,
    /// such as LiteLLM's proxy, counts them all; a process without children is just itself).
    pub fn of_tree(root: u32) -> Result<ProcMemory, BenchError> {
        let mut sum = ProcMemory {
            rss_kib: 0,
            peak_kib: 0,
        };
        for pid in tree_pids(root) {
            // A worker that ended between the listing and the read is not counted.
            let Ok(mem) = ProcMemory::of(pid) else {
                continue;
            };
            sum.rss_kib += mem.rss_kib;
            sum.peak_kib += mem.peak_kib;
        }
        Ok(sum)
    }

    /// Reads `/proc/PID/status`.
    pub fn of(pid: u32) -> Result<ProcMemory, BenchError> {
        let path = format!("/proc/{pid}/status");
        let status =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let field =
            |name: &str| status_kib(&status, name).ok_or_else(|| format!("no {name} in {path}"));
        Ok(ProcMemory {
            rss_kib: field("VmRSS")?,
            peak_kib: field("VmHWM")?,
        })
    }
}

/// The parent pid in a `/proc/PID/stat` text (the field after the parenthesised name, which
/// may itself hold spaces and parentheses).
pub fn stat_ppid(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and every live process descended from it, from `/proc/*/stat`, `root` first.
pub fn tree_pids(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, stat_ppid(&stat)?))
        })
        .collect();
    let mut tree = vec![root];
    let mut at = 0;
    while at < tree.len() {
        let parent = tree[at];
        tree.extend(
            parents
                .iter()
                .filter(|&&(_, ppid)| ppid == parent)
                .map(|&(pid, _)| pid),
        );
        at += 1;
    }
    tree
}

/// Resets the resident peak (`VmHWM`) of `root` and its descendants to what is resident now,
/// by writing `5` to each `/proc/PID/clear_refs` (Linux 4.0 and later); false when the kernel
/// refused one.
pub fn reset_tree_peak(root: u32) -> bool {
    tree_pids(root)
        .into_iter()
        .all(|pid| std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok())
}

/// A child process, killed (with its descendants) and reaped when dropped.
#[derive(Debug)]
pub struct Process {
    child: Child,
}

impl Process {
    /// Starts `cmd`; from here on it is killed when dropped.
    pub fn spawn(cmd: &mut Command) -> Result<Process, BenchError> {
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cmd.get_program().to_string_lossy()))?;
        Ok(Process { child })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now and at its peak, with its descendants' ([`ProcMemory::of_tree`]).
    pub fn memory(&self) -> Result<ProcMemory, BenchError> {
        ProcMemory::of_tree(self.pid())
    }

    /// Resets its and its descendants' resident peak ([`reset_tree_peak`]); false when the
    /// kernel refused.
    pub fn reset_peak(&self) -> bool {
        reset_tree_peak(self.pid())
    }

    /// Its stdout, when it was piped and not taken yet.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Its stderr, when it was piped and not taken yet.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// Whether it has ended (reaping it if so).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Process {
    /// Kills its descendants first (LiteLLM's workers would otherwise outlive it, adopted by
    /// init), then it, and reaps it.
    fn drop(&mut self) {
        for pid in tree_pids(self.pid()).into_iter().skip(1) {
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `hermes` with `home` as its `HERMES_HOME` and `HOME`, the fake upstream key and `PATH`, and
/// nothing else from the environment (no store URL, proxy or key of the user's).
fn hermes(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .stdin(Stdio::null());
    cmd
}

/// The tenant whose key every benchmark request through a gateway carries.
pub const TENANT: &str = "bench";

/// A running `hermes sim serve`.
#[derive(Debug)]
pub struct SimServer {
    /// The process.
    pub process: Process,
    /// Its base URL (the first line it printed).
    pub base: String,
}

impl SimServer {
    /// Starts `hermes sim serve --profile deepseek-v4 --chunk-delay-ms …` in `home`.
    pub fn start(bin: &Path, home: &Path, chunk_delay: Duration) -> Result<SimServer, BenchError> {
        SimServer::start_paced(bin, home, Duration::ZERO, chunk_delay)
    }

    /// [`SimServer::start`] with `--delay-ms`: the simulator waits `reply_delay` before it
    /// answers any request, streamed or not.
    pub fn start_paced(
        bin: &Path,
        home: &Path,
        reply_delay: Duration,
        chunk_delay: Duration,
    ) -> Result<SimServer, BenchError> {
        std::fs::create_dir_all(home)?;
        let mut process = Process::spawn(
            hermes(bin, home)
                .args(["sim", "serve", "--profile", PROFILE, "--chunk-delay-ms"])
                .arg(chunk_delay.as_millis().to_string())
                .arg("--delay-ms")
                .arg(reply_delay.as_millis().to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )?;
        let stdout = process.child.stdout.take();
        let mut line = String::new();
        BufReader::new(stdout.ok_or("no stdout")?).read_line(&mut line)?;
        let base = line.trim();
        if !base.starts_with("http://") {
            return Err(format!("hermes sim serve printed {line:?}, not its base URL").into());
        }
        Ok(SimServer {
            base: base.to_owned(),
            process,
        })
    }
}

/// A running `hermes serve` on loopback, with gateway keys on (as it is run in production) and
/// one key made for the benchmark's tenant.
#[derive(Debug)]
pub struct GatewayServer {
    /// The process.
    pub process: Process,
    /// Its base URL, e.g. `http://127.0.0.1:41234/v1`.
    pub base: String,
    /// The gateway key of tenant [`TENANT`] every benchmark request carries.
    pub key: String,
    /// The home it runs in (its `state.db`).
    pub home: PathBuf,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl GatewayServer {
    /// Writes `home/config.toml` with `[providers.deepseek] base_url = upstream` (and the
    /// gateway's limits, on by default, lifted: the benchmark opens hundreds of streams at once
    /// and sends more turns a minute than the defaults allow one tenant) and starts
    /// makes a gateway key for [`TENANT`] (`hermes serve keys create`), then starts
    /// `hermes serve --listen 127.0.0.1:0` in `home`; its stderr is read on a thread
    /// from then on (the last lines kept for [`GatewayServer::log_tail`]).
    pub fn start(bin: &Path, home: &Path, upstream: &str) -> Result<GatewayServer, BenchError> {
        GatewayServer::start_with(bin, home, upstream, &[], &[])
    }

    /// [`GatewayServer::start`] with more `hermes serve` arguments (`--no-metrics`) and
    /// environment variables (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn start_with(
        bin: &Path,
        home: &Path,
        upstream: &str,
        more: &[&str],
        env: &[(&str, &str)],
    ) -> Result<GatewayServer, BenchError> {
        GatewayServer::start_under(bin, home, upstream, more, env, &[])
    }

    /// [`GatewayServer::start_with`], `hermes serve` run by the program `under` names with its
    /// arguments (`valgrind --tool=callgrind …`; empty: run directly).
    pub fn start_under(
        bin: &Path,
        home: &Path,
        upstream: &str,
        more: &[&str],
        env: &[(&str, &str)],
        under: &[String],
    ) -> Result<GatewayServer, BenchError> {
        std::fs::create_dir_all(home)?;
        let config = format!(
            "[serve]\nrequests_per_minute = 1000000000\nmax_concurrent = 1000000\n\
             tokens_per_minute = 1000000000000\ntokens_per_day = 1000000000000\n\n\
             [providers.deepseek]\nbase_url = {}\n",
            json!(upstream)
        );
        std::fs::write(home.join("config.toml"), config)?;
        let made = hermes(bin, home)
            .args(["serve", "keys", "create", "--tenant", TENANT])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let key = String::from_utf8_lossy(&made.stdout).trim().to_owned();
        if !made.status.success() || !key.starts_with("hk_") {
            return Err(format!(
                "hermes serve keys create --tenant {TENANT} failed: {}",
                String::from_utf8_lossy(&made.stderr).trim()
            )
            .into());
        }
        let mut serve = match under.split_first() {
            None => hermes(bin, home),
            Some((program, args)) => {
                let mut cmd = hermes(Path::new(program), home);
                cmd.args(args).arg(bin);
                cmd
            }
        };
        let mut process = Process::spawn(
            serve
                .args(["serve", "--listen", "127.0.0.1:0"])
                .args(more)
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )?;
        let stderr = process.child.stderr.take();
        let mut lines = BufReader::new(stderr.ok_or("no stderr")?).lines();
        let mut seen = Vec::new();
        let base = loop {
            let Some(line) = lines.next().transpose()? else {
                return Err(format!(
                    "hermes serve ended before it served; its stderr:\n{}",
                    seen.join("\n")
                )
                .into());
            };
            // `hermes: serving on http://ADDR: <the doors>`.
            if let Some((_, rest)) = line.split_once(" on http://") {
                let addr = rest.split_once(": ").map_or(rest, |(addr, _)| addr);
                break format!("http://{}/v1", addr.trim());
            }
            seen.push(line);
        };
        let log = Arc::new(Mutex::new(VecDeque::from(seen)));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if log.len() == LOG_TAIL {
                    log.pop_front();
                }
                log.push_back(line);
            }
        });
        Ok(GatewayServer {
            process,
            base,
            key,
            home: home.to_owned(),
            log,
        })
    }

    /// The last lines the gateway wrote to stderr.
    pub fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Bytes of its SQLite store (`state.db` and its WAL).
    pub fn store_bytes(&self) -> u64 {
        ["state.db", "state.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(self.home.join(f)).ok())
            .map(|m| m.len())
            .sum()
    }
}

/// An OTLP/HTTP trace receiver on loopback that takes every export (`200`) and keeps only
/// their count: where the gateway measured with tracing sends its spans. Its own thread and
/// runtime, so it answers whatever the bench's runtime is doing.
struct OtlpSink {
    /// `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    endpoint: String,
    exports: Arc<std::sync::atomic::AtomicUsize>,
}

impl OtlpSink {
    fn start() -> Result<OtlpSink, BenchError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let exports = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&exports);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let app = axum::Router::new().route(
                    "/v1/traces",
                    axum::routing::post(move || {
                        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        async { axum::http::StatusCode::OK }
                    }),
                );
                let _ = axum::serve(listener, app).await;
            });
        });
        Ok(OtlpSink { endpoint, exports })
    }

    /// How many exports it took.
    fn exports(&self) -> usize {
        self.exports.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A number no other request of this process asked: every benchmark request is a question of
/// its own ([`Door::body`]).
fn next_question() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Small requests with and without a history of [`BIG_BYTES`] being sent beside them
/// (issue 47: a large request is parsed, normalised and hashed off the reactor, so the small
/// requests beside it do not wait behind it).
#[derive(Clone, Debug)]
pub struct Beside {
    /// The small requests' times with nothing beside them, sorted.
    pub alone: Vec<Duration>,
    /// The same requests' times while big ones are sent one after another, sorted.
    pub beside: Vec<Duration>,
    /// Each big request's time.
    pub big: Vec<Duration>,
    /// The big requests' body size.
    pub big_bytes: usize,
}

/// The size of the big request's body: under the gateway's default 32 MiB cap.
pub const BIG_BYTES: usize = 30 * 1024 * 1024;

/// A chat request to `model` whose history (user and assistant turns of 16 KiB each, question
/// `n` first so each is a conversation of its own) makes a body of about [`BIG_BYTES`].
fn big_body(model: &str, n: u64) -> Vec<u8> {
    let turn = "x".repeat(16 * 1024);
    let pairs = BIG_BYTES / (2 * (turn.len() + 64));
    let mut messages = Vec::with_capacity(2 * pairs + 1);
    messages.push(json!({"role": "user", "content": format!("big {n}: {turn}")}));
    for _ in 0..pairs {
        messages.push(json!({"role": "assistant", "content": turn}));
        messages.push(json!({"role": "user", "content": turn}));
    }
    serde_json::to_vec(&json!({"model": model, "messages": messages})).unwrap_or_default()
}

/// How many big requests [`beside_big`] sends, one after another, while small ones go beside
/// them: every stage of a big request (upload, parse, lookup, upstream, store) has small ones
/// beside it several times over.
pub const BIG_REQUESTS: usize = 4;

/// `samples` small non-streamed requests to `small` on their own, then small ones one after
/// another (at least `samples`) for as long as [`BIG_REQUESTS`] big requests ([`big_body`]) go
/// to the same gateway one after another.
pub async fn beside_big(
    client: &reqwest::Client,
    small: &Target,
    samples: usize,
) -> Result<Beside, BenchError> {
    if samples == 0 {
        return Err(
            "small requests beside a big one: no sample asked for (--gateway-pairs=0)".into(),
        );
    }
    let mut alone = Vec::with_capacity(samples);
    for _ in 0..samples {
        alone.push(small.plain(client).await?);
    }
    let done = std::cell::Cell::new(false);
    // Made before any is sent: building 30 MiB of JSON on this (single-threaded) client's
    // runtime would stall the small requests' clock, not the gateway.
    let mut bodies: Vec<Vec<u8>> = (0..BIG_REQUESTS)
        .map(|_| big_body(&small.model, next_question()))
        .collect();
    let big_bytes = bodies.first().map_or(0, Vec::len);
    let bigs = async {
        let mut times = Vec::new();
        while let Some(body) = bodies.pop() {
            let started = Instant::now();
            let request = small
                .post(client)
                .header("content-type", "application/json")
                .body(body);
            let response = request.send().await.map_err(|e| format!("big: {e}"))?;
            let status = response.status();
            let text = response.bytes().await?;
            if !status.is_success() {
                return Err::<_, BenchError>(
                    format!("big answered {status}: {}", String::from_utf8_lossy(&text)).into(),
                );
            }
            times.push(started.elapsed());
        }
        done.set(true);
        Ok(times)
    };
    let smalls = async {
        // The first big request is on its way before the first small one.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut beside = Vec::with_capacity(samples);
        while !done.get() || beside.len() < samples {
            beside.push(small.plain(client).await?);
        }
        Ok::<_, BenchError>(beside)
    };
    // The first to fail ends both (a failed big request leaves the small ones no end).
    let (big, mut beside) = tokio::try_join!(bigs, smalls)?;
    if big.is_empty() {
        return Err("small requests beside a big one: no big request went beside them".into());
    }
    alone.sort();
    beside.sort();
    Ok(Beside {
        alone,
        beside,
        big,
        big_bytes,
    })
}

/// Turns per continued conversation in [`measure`]: a new conversation, then continued turns.
pub const CONTINUED_TURNS: usize = 5;

/// Continued conversations through the chat door (issue 50): the product's path, where every
/// request after the first is matched with its stored conversation and has its carriers
/// re-attached.
#[derive(Clone, Debug)]
pub struct Continued {
    /// Direct's continued turns (its client keeps every carrier, as the upstream needs), sorted.
    pub direct: Vec<Duration>,
    /// The gateway's continued turns (its client drops every carrier), sorted.
    pub gateway: Vec<Duration>,
    /// Turns per conversation (the first, a new conversation, is not among the times).
    pub turns: usize,
    /// The gateway process's CPU time (user + system, all threads) over its conversations.
    pub gateway_cpu: Duration,
    /// Requests the gateway served over them (first turns included).
    pub gateway_requests: usize,
    /// The CPU the gateway was pinned to (the simulator and the load generator on the
    /// others), when the machine has more than one.
    pub pinned: Option<usize>,
}

/// Pins every thread of process `pid` to `cpus` (threads it starts later inherit it from the
/// thread that starts them).
pub fn pin(pid: u32, cpus: &[usize]) -> Result<(), BenchError> {
    let mut set = rustix::thread::CpuSet::new();
    for &cpu in cpus {
        set.set(cpu);
    }
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let tid = task?
            .file_name()
            .to_string_lossy()
            .parse::<i32>()
            .ok()
            .and_then(rustix::thread::Pid::from_raw);
        if let Some(tid) = tid {
            rustix::thread::sched_setaffinity(Some(tid), &set)
                .map_err(|e| format!("cannot pin thread {tid:?} of {pid}: {e}"))?;
        }
    }
    Ok(())
}

/// The CPU time process `pid` has used so far (user + system, every thread), from
/// `/proc/PID/stat` in clock ticks.
pub fn cpu_time(pid: u32) -> Result<Duration, BenchError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command (which may hold spaces) in parentheses.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("no /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the command.
    let ticks = |i: usize| -> Result<u64, BenchError> {
        Ok(fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or("a short /proc/PID/stat")?)
    };
    let per_second = rustix::param::clock_ticks_per_second();
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_secs_f64(total as f64 / per_second as f64))
}

/// `rounds` conversations of `turns` turns to the simulator directly (the client keeping each
/// reply whole, reasoning included) and through the gateway's chat door (the client sending
/// back only each reply's role and text), in alternating order round by round; each turn's time
/// after the first, and the gateway's CPU time over its conversations.
pub async fn continued(
    client: &reqwest::Client,
    direct: &Target,
    gateway: (&Target, &GatewayServer),
    rounds: usize,
    turns: usize,
) -> Result<Continued, BenchError> {
    if rounds == 0 || turns < 2 {
        return Err(
            "continued conversations: nothing to measure (no conversation, or no turn after the first)"
                .into(),
        );
    }
    let (chat, server) = gateway;
    let mut times = [Vec::new(), Vec::new()];
    let mut cpu = Duration::ZERO;
    for round in 0..rounds {
        for i in round_order(2, round) {
            if i == 0 {
                times[0].extend(direct.conversation(client, turns, true).await?);
            } else {
                let before = cpu_time(server.process.pid())?;
                times[1].extend(chat.conversation(client, turns, false).await?);
                cpu += cpu_time(server.process.pid())?.saturating_sub(before);
            }
        }
    }
    let [mut direct, mut gateway] = times;
    direct.sort();
    gateway.sort();
    Ok(Continued {
        direct,
        gateway,
        turns,
        gateway_cpu: cpu,
        gateway_requests: rounds * turns,
        pinned: None,
    })
}

/// Where a request goes: the simulator directly, or one of the gateway's doors.
#[derive(Clone, Debug)]
pub struct Target {
    /// `direct`, `chat` or `messages`, for messages.
    pub name: &'static str,
    /// The API it speaks.
    pub door: Door,
    /// The endpoint's URL.
    pub url: String,
    /// The model field.
    pub model: String,
    /// An `Authorization: Bearer` value, if any.
    pub bearer: Option<String>,
}

impl Target {
    /// The simulator at `base`, with the fake key, through chat-completions.
    pub fn direct(base: &str) -> Target {
        Target {
            name: "direct",
            door: Door::Chat,
            url: format!("{base}/{}", Door::Chat.path()),
            model: MODEL.to_owned(),
            bearer: Some(FAKE_KEY.to_owned()),
        }
    }

    /// The gateway through `door` (`/chat/completions` or `/messages`), the model as
    /// `deepseek/MODEL`, with its key.
    pub fn gateway(gateway: &GatewayServer, door: Door) -> Target {
        let base = &gateway.base;
        Target {
            name: match door {
                Door::Chat => "chat",
                Door::Messages => "messages",
            },
            door,
            url: format!("{base}/{}", door.path()),
            model: format!("deepseek/{MODEL}"),
            bearer: Some(gateway.key.clone()),
        }
    }

    /// A POST to this target's URL, with its bearer token if it has one.
    pub(crate) fn post(&self, client: &reqwest::Client) -> reqwest::RequestBuilder {
        let request = client.post(&self.url);
        match &self.bearer {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// Sends `request`; a failure to send names this target.
    pub(crate) async fn sent(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, BenchError> {
        Ok(request
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.name))?)
    }

    async fn send(
        &self,
        client: &reqwest::Client,
        stream: bool,
    ) -> Result<reqwest::Response, BenchError> {
        let request = self
            .post(client)
            .json(&self.door.body(&self.model, stream, next_question()));
        let response = self.sent(request).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        Err(format!("{} answered {status}: {text}", self.name).into())
    }

    /// One conversation of `turns` non-streamed chat requests (a question of its own first):
    /// each sends the history so far, each reply appended whole when `keep` (what the upstream
    /// itself needs) or as its role and text only (a client that drops every carrier), then
    /// the next question. The times of the turns after the first.
    pub async fn conversation(
        &self,
        client: &reqwest::Client,
        turns: usize,
        keep: bool,
    ) -> Result<Vec<Duration>, BenchError> {
        let n = next_question();
        let mut messages =
            vec![json!({"role": "user", "content": format!("conversation {n}: hello")})];
        let mut times = Vec::with_capacity(turns.saturating_sub(1));
        for turn in 0..turns {
            let request = self.post(client).json(&json!({
                "model": self.model, "messages": messages, "stream": false,
            }));
            let started = Instant::now();
            let response = self.sent(request).await?;
            let status = response.status();
            let body = response.bytes().await?;
            let took = started.elapsed();
            if !status.is_success() {
                return Err(format!(
                    "{} answered turn {} of a conversation with {status}: {}",
                    self.name,
                    turn + 1,
                    String::from_utf8_lossy(&body)
                )
                .into());
            }
            if turn > 0 {
                times.push(took);
            }
            let reply: Value = serde_json::from_slice(&body)
                .map_err(|e| format!("{}: the reply is not JSON ({e})", self.name))?;
            let message = &reply["choices"][0]["message"];
            let content = message["content"]
                .as_str()
                .ok_or_else(|| format!("{}: no answer in {reply}", self.name))?;
            messages.push(if keep {
                message.clone()
            } else {
                json!({"role": "assistant", "content": content})
            });
            messages.push(json!({"role": "user", "content": format!("and then? ({})", turn + 1)}));
        }
        Ok(times)
    }

    /// One non-streamed request: the time to its whole body. The body must hold an answer
    /// ([`Door::answered`]).
    pub async fn plain(&self, client: &reqwest::Client) -> Result<Duration, BenchError> {
        let started = Instant::now();
        let body = self.send(client, false).await?.bytes().await?;
        let took = started.elapsed();
        let reply: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{}: the reply is not JSON ({e})", self.name))?;
        if !self.door.answered(&reply) {
            return Err(format!("{}: no answer in {reply}", self.name).into());
        }
        Ok(took)
    }

    /// One streamed request, its times counted from `since`; events are parsed as they arrive
    /// (`eventsource-stream`), so the first token's time is when its event was whole.
    pub async fn streamed(
        &self,
        client: &reqwest::Client,
        since: Instant,
    ) -> Result<Streamed, BenchError> {
        let response = self.send(client, true).await?;
        let first = std::cell::Cell::new(None);
        let mut stream = response
            .bytes_stream()
            .inspect(|_| {
                if first.get().is_none() {
                    first.set(Some(since.elapsed()));
                }
            })
            .eventsource();
        let mut events = Vec::new();
        let mut first_token = None;
        while let Some(event) = stream.next().await {
            let event = event.map_err(|e| format!("{}: {e}", self.name))?;
            let event = SseEvent {
                name: event.event,
                data: event.data,
            };
            if first_token.is_none() && self.door.carries_token(&event) {
                first_token = Some(since.elapsed());
            }
            events.push(event);
        }
        let last = since.elapsed();
        let first = first.get().unwrap_or(last);
        Ok(Streamed {
            first,
            first_token: first_token.unwrap_or(last),
            last,
            events: events.len(),
            completed: self.door.completed(&events),
        })
    }
}

/// One streamed reply as the client read it.
#[derive(Clone, Copy, Debug)]
pub struct Streamed {
    /// When its first chunk arrived (an upstream may send a fragment of an event first).
    pub first: Duration,
    /// When the first event carrying a token ([`Door::carries_token`]) was whole: the time
    /// to first token a client sees.
    pub first_token: Duration,
    /// When its last byte arrived.
    pub last: Duration,
    /// Its SSE events.
    pub events: usize,
    /// Whether it ended as its door ends a complete answer ([`Door::completed`]).
    pub completed: bool,
}

/// One target's latency samples, each sorted.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Non-streamed: time to the whole body.
    pub plain: Vec<Duration>,
    /// Streamed: time to the first byte of the body.
    pub first_byte: Vec<Duration>,
    /// Streamed: time to the last byte.
    pub streamed: Vec<Duration>,
    /// SSE events in one streamed reply.
    pub events: usize,
}

/// The latency measure: the same samples for each target, in the order given to [`latency`].
#[derive(Clone, Debug)]
pub struct Latency {
    /// Each target's name, door and samples.
    pub targets: Vec<(&'static str, Door, Samples)>,
}

/// The orders of three targets in successive rounds: every permutation once per six rounds,
/// so each target goes before each other one in half of them.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [1, 0, 2],
    [1, 2, 0],
    [2, 1, 0],
    [2, 0, 1],
    [0, 2, 1],
];

/// The order of `n` (two or three) targets in round `round`: two alternate, three go through
/// [`ORDERS`].
pub fn round_order(n: usize, round: usize) -> Vec<usize> {
    match n {
        3 => ORDERS[round % ORDERS.len()].to_vec(),
        _ => {
            let mut order: Vec<usize> = (0..n).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            order
        }
    }
}

/// Sends `warmup` requests of each kind to each target, then `rounds` timed rounds, each one
/// non-streamed request to every target then one streamed request to every target, in
/// [`round_order`]. With the simulator first and the gateway's doors after it, each round is a
/// pair (direct, door) for every door, sharing its direct request.
pub async fn latency(
    client: &reqwest::Client,
    targets: &[&Target],
    warmup: usize,
    rounds: usize,
) -> Result<Latency, BenchError> {
    for _ in 0..warmup {
        for target in targets {
            target.plain(client).await?;
            target.streamed(client, Instant::now()).await?;
        }
    }
    let mut samples = vec![Samples::default(); targets.len()];
    for round in 0..rounds {
        let order = round_order(targets.len(), round);
        for &i in &order {
            samples[i].plain.push(targets[i].plain(client).await?);
        }
        for &i in &order {
            let target = targets[i];
            let reply = target.streamed(client, Instant::now()).await?;
            if !reply.completed {
                return Err(format!(
                    "{}: a stream ended without {}",
                    target.name,
                    target.door.end_marker()
                )
                .into());
            }
            let s = &mut samples[i];
            s.events = reply.events;
            s.first_byte.push(reply.first);
            s.streamed.push(reply.last);
        }
    }
    for s in &mut samples {
        s.plain.sort();
        s.first_byte.sort();
        s.streamed.sort();
    }
    Ok(Latency {
        targets: targets
            .iter()
            .zip(samples)
            .map(|(t, s)| (t.name, t.door, s))
            .collect(),
    })
}

/// N streams opened at once, as the client saw them.
#[derive(Clone, Debug)]
pub struct Streams {
    /// Streams opened.
    pub opened: usize,
    /// Streams that ended as their door ends a complete answer (`[DONE]`, `message_stop`).
    pub completed: usize,
    /// Errors of the streams that failed (the first few).
    pub errors: Vec<String>,
    /// The most streams in flight at one moment (first chunk received, last byte not yet).
    pub in_flight: usize,
    /// From opening them to the last one's last byte.
    pub wall: Duration,
}

/// Opens `n` streamed requests to `target` at once and reads them all to the end.
pub async fn streams(
    client: &reqwest::Client,
    target: &Target,
    n: usize,
) -> Result<Streams, BenchError> {
    let since = Instant::now();
    let replies =
        futures_util::future::join_all((0..n).map(|_| target.streamed(client, since))).await;
    let wall = since.elapsed();
    let mut intervals = Vec::new();
    let mut errors = Vec::new();
    let mut completed = 0;
    for reply in replies {
        match reply {
            Ok(r) => {
                intervals.push((r.first, r.last));
                completed += usize::from(r.completed);
            }
            Err(e) if errors.len() < 3 => errors.push(e.to_string()),
            Err(_) => {}
        }
    }
    Ok(Streams {
        opened: n,
        completed,
        errors,
        in_flight: peak_overlap(&intervals),
        wall,
    })
}

/// One process's memory around a burst of streams.
#[derive(Clone, Copy, Debug)]
pub struct Burst {
    /// Resident at idle, just before the streams opened.
    pub idle: ProcMemory,
    /// After the streams ended (`peak_kib` is the peak during the burst when `reset` held).
    pub after: ProcMemory,
    /// Whether the resident peak was reset before the burst (else it counts from the start).
    pub reset: bool,
}

impl Burst {
    /// (peak - idle) / `streams`, in KiB.
    pub fn per_stream_kib(&self, streams: usize) -> f64 {
        self.after.peak_kib.saturating_sub(self.idle.rss_kib) as f64 / streams.max(1) as f64
    }
}

/// Runs [`streams`] while watching `processes` (each with its descendants): their memory at
/// idle, peak reset, and after.
pub async fn burst(
    client: &reqwest::Client,
    target: &Target,
    n: usize,
    processes: &[&Process],
) -> Result<(Streams, Vec<Burst>), BenchError> {
    // Let the last warm-up's work settle before idle is read.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut before = Vec::new();
    for p in processes {
        before.push((p.memory()?, p.reset_peak()));
    }
    let run = streams(client, target, n).await?;
    let mut bursts = Vec::new();
    for (p, (idle, reset)) in processes.iter().zip(before) {
        bursts.push(Burst {
            idle,
            after: p.memory()?,
            reset,
        });
    }
    Ok((run, bursts))
}

/// The streams through one of the gateway's doors, on a fresh gateway of their own.
#[derive(Clone, Debug)]
pub struct Through {
    /// The streams.
    pub streams: Streams,
    /// The gateway's memory around them.
    pub gateway: Burst,
    /// The simulator's memory around them (as the gateway's upstream).
    pub sim: Burst,
    /// Requests through the same door that warmed the gateway before its idle memory was read.
    pub warmed: usize,
}

/// Everything the gateway section measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The latency samples: `direct`, then the `chat` and `messages` doors.
    pub latency: Latency,
    /// Requests the latency gateway served, warm-up included.
    pub gateway_requests: usize,
    /// Bytes of the latency gateway's SQLite store after its requests.
    pub store_bytes: u64,
    /// The streams sent to the paced simulator directly.
    pub direct: Streams,
    /// The simulator's memory around them.
    pub direct_sim: Burst,
    /// The streams through the chat door.
    pub chat: Through,
    /// The streams through the Messages door.
    pub messages: Through,
    /// [`machine_load`] before the latency rounds and after the streams.
    pub load: [(usize, Option<f64>); 2],
    /// What metrics and tracing cost: `direct`, then the chat door of a gateway recording
    /// metrics and exporting its spans (`both`), of one recording metrics only (`metrics`) and
    /// of one with neither (`neither`: `--no-metrics`, no OTLP endpoint), in the same rounds.
    pub metrics: Latency,
    /// Continued conversations, the client dropping carriers through the gateway.
    pub continued: Continued,
    /// Small requests alone and beside big ones.
    pub beside: Beside,
    /// The same on PostgreSQL (`HERMES_BENCH_DATABASE_URL`), when one was named.
    pub beside_postgres: Option<Beside>,
}

/// The load generator's HTTP client: no proxy (every request stays on loopback), two minutes
/// at most per request.
pub fn client() -> Result<reqwest::Client, BenchError> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()?)
}

/// Runs the whole section: latency against an unpaced simulator and one gateway, both doors
/// interleaved with the direct requests; then (those two stopped) the streams against a paced
/// simulator directly, then through a fresh gateway's chat door, then (that gateway stopped)
/// through another fresh gateway's Messages door, all in front of the same simulator.
pub fn measure(options: &Options) -> Result<Report, BenchError> {
    // Installing twice is harmless; reqwest needs a process-wide provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = client()?;
    let bin = &options.bin;
    let load_before = machine_load();

    let (latency, gateway_requests, store_bytes) = {
        let sim = SimServer::start(bin, &dir.path().join("sim"), Duration::ZERO)?;
        let gateway = GatewayServer::start(bin, &dir.path().join("gateway"), &sim.base)?;
        let direct = Target::direct(&sim.base);
        let chat = Target::gateway(&gateway, Door::Chat);
        let messages = Target::gateway(&gateway, Door::Messages);
        let latency = runtime
            .block_on(latency(
                &client,
                &[&direct, &chat, &messages],
                options.warmup,
                options.pairs,
            ))
            .map_err(|e| explained(e, &gateway))?;
        // Two doors, a non-streamed and a streamed request each per warm-up and per round.
        let served = 4 * (options.warmup + options.pairs);
        (latency, served, gateway.store_bytes())
    };

    // Continued conversations on a gateway of their own (its store holding only them).
    let continued = {
        let sim = SimServer::start(bin, &dir.path().join("sim-continued"), Duration::ZERO)?;
        // The gateway on a core of its own (one thread serving), the simulator and this load
        // generator on the others: its CPU time is then its own work, not the contention of
        // sharing a core.
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let pinned = (cpus > 1).then_some(cpus - 1);
        let gateway = GatewayServer::start_with(
            bin,
            &dir.path().join("gateway-continued"),
            &sim.base,
            &["--workers", "1"],
            &[],
        )?;
        let direct = Target::direct(&sim.base);
        let chat = Target::gateway(&gateway, Door::Chat);
        let conversations = options.pairs.div_ceil(CONTINUED_TURNS - 1);
        if let Some(core) = pinned {
            let others: Vec<usize> = (0..core).collect();
            pin(gateway.process.pid(), &[core])?;
            pin(sim.process.pid(), &others)?;
            pin(std::process::id(), &others)?;
        }
        let measured = runtime
            .block_on(async {
                // Warm: a few conversations each way, not counted.
                continued(&client, &direct, (&chat, &gateway), 2, CONTINUED_TURNS).await?;
                continued(
                    &client,
                    &direct,
                    (&chat, &gateway),
                    conversations,
                    CONTINUED_TURNS,
                )
                .await
            })
            .map_err(|e| explained(e, &gateway));
        if pinned.is_some() {
            pin(std::process::id(), &(0..cpus).collect::<Vec<_>>())?;
        }
        Continued {
            pinned,
            ..measured?
        }
    };

    let beside = {
        let sim = SimServer::start(bin, &dir.path().join("sim-big"), Duration::ZERO)?;
        let gateway = GatewayServer::start(bin, &dir.path().join("gateway-big"), &sim.base)?;
        let chat = Target::gateway(&gateway, Door::Chat);
        runtime
            .block_on(beside_big(&client, &chat, options.pairs))
            .map_err(|e| explained(e, &gateway))?
    };
    // The same on PostgreSQL when `HERMES_BENCH_DATABASE_URL` names a database: SQLite has one
    // writer, so a small turn's commit may queue behind the big one's rows.
    let beside_postgres = match std::env::var("HERMES_BENCH_DATABASE_URL") {
        Ok(url) if !url.is_empty() => {
            let sim = SimServer::start(bin, &dir.path().join("sim-big-pg"), Duration::ZERO)?;
            let gateway = GatewayServer::start_with(
                bin,
                &dir.path().join("gateway-big-pg"),
                &sim.base,
                &[],
                &[("HERMES_DATABASE_URL", &url)],
            )?;
            let chat = Target::gateway(&gateway, Door::Chat);
            Some(
                runtime
                    .block_on(beside_big(&client, &chat, options.pairs))
                    .map_err(|e| explained(e, &gateway))?,
            )
        }
        _ => None,
    };

    // Metrics and tracing against neither: three gateways in front of one simulator, their
    // chat doors and the simulator in the same rounds; the tracing one exports its spans over
    // OTLP/HTTP to a receiver that takes them all.
    let metrics = {
        let sink = OtlpSink::start()?;
        let sim = SimServer::start(bin, &dir.path().join("sim-metrics"), Duration::ZERO)?;
        let both = GatewayServer::start_with(
            bin,
            &dir.path().join("gateway-both"),
            &sim.base,
            &[],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ],
        )?;
        let metrics_only =
            GatewayServer::start(bin, &dir.path().join("gateway-metrics"), &sim.base)?;
        let neither = GatewayServer::start_with(
            bin,
            &dir.path().join("gateway-neither"),
            &sim.base,
            &["--no-metrics"],
            &[],
        )?;
        let direct = Target::direct(&sim.base);
        let mut with_both = Target::gateway(&both, Door::Chat);
        with_both.name = "both";
        let mut with_metrics = Target::gateway(&metrics_only, Door::Chat);
        with_metrics.name = "metrics";
        let mut without = Target::gateway(&neither, Door::Chat);
        without.name = "neither";
        let latency = runtime
            .block_on(self::latency(
                &client,
                &[&direct, &with_both, &with_metrics, &without],
                options.warmup,
                options.pairs,
            ))
            .map_err(|e| explained(e, &both))?;
        // The exporter sends a batch every 5 s (the SDK's default) over rounds that last far
        // longer: the receiver must have had spans, or tracing was not measured.
        let exports = sink.exports();
        if exports == 0 {
            return Err("the tracing gateway exported no spans to the OTLP receiver".into());
        }
        latency
    };

    let sim = SimServer::start(bin, &dir.path().join("sim-paced"), options.chunk_delay)?;
    let direct = Target::direct(&sim.base);
    let (direct_run, watched) =
        runtime.block_on(burst(&client, &direct, options.streams, &[&sim.process]))?;
    let [direct_sim] = watched[..] else {
        return Err("one process watched, not one burst".into());
    };
    let chat = through(&runtime, &client, options, dir.path(), &sim, Door::Chat)?;
    let messages = through(&runtime, &client, options, dir.path(), &sim, Door::Messages)?;
    Ok(Report {
        latency,
        continued,
        gateway_requests,
        store_bytes,
        direct: direct_run,
        direct_sim,
        chat,
        messages,
        load: [load_before, machine_load()],
        metrics,
        beside,
        beside_postgres,
    })
}

/// Starts a fresh gateway in front of `sim` (its home `gateway-DOOR` under `dir`), warms it through `door` (a few
/// non-streamed requests and one streamed), then opens the streams through `door` while watching
/// it and the simulator. The gateway is stopped on return.
fn through(
    runtime: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    options: &Options,
    dir: &Path,
    sim: &SimServer,
    door: Door,
) -> Result<Through, BenchError> {
    let home = dir.join(format!("gateway-{door:?}"));
    let gateway = GatewayServer::start(&options.bin, &home, &sim.base)?;
    let target = Target::gateway(&gateway, door);
    runtime
        .block_on(async {
            // Warm up the gateway's paths (store, upstream pool, streaming) once each.
            let warm = options.warmup.min(5);
            for _ in 0..warm {
                target.plain(client).await?;
            }
            target.streamed(client, Instant::now()).await?;
            let (streams, watched) = burst(
                client,
                &target,
                options.streams,
                &[&gateway.process, &sim.process],
            )
            .await?;
            let [gateway_mem, sim_mem] = watched[..] else {
                return Err("two processes watched, not two bursts".into());
            };
            Ok(Through {
                streams,
                gateway: gateway_mem,
                sim: sim_mem,
                warmed: warm + 1,
            })
        })
        .map_err(|e| explained(e, &gateway))
}

/// `error`, with the gateway's last stderr lines.
fn explained(error: BenchError, gateway: &GatewayServer) -> BenchError {
    let tail = gateway.log_tail();
    if tail.is_empty() {
        error
    } else {
        format!("{error}\n-- hermes serve's last stderr lines:\n{tail}").into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=300).map(ms).collect();
        assert_eq!(percentile(&samples, 0.5), ms(150));
        assert_eq!(percentile(&samples, 0.99), ms(297));
        assert_eq!(percentile(&samples, 1.0), ms(300));
        let ten: Vec<Duration> = (1..=10).map(ms).collect();
        // 0.99 × 10 rounds up to the 10th sample, never past the end.
        assert_eq!(percentile(&ten, 0.99), ms(10));
        assert_eq!(percentile(&ten, 0.5), ms(5));
        assert_eq!(percentile(&[ms(7)], 0.5), ms(7));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn proc_status_fields_are_read_in_kib() {
        let status = "Name:\thermes\nVmPeak:\t  912344 kB\nVmHWM:\t   27544 kB\nVmRSS:\t   21032 kB\nThreads:\t4\n";
        assert_eq!(status_kib(status, "VmHWM"), Some(27_544));
        assert_eq!(status_kib(status, "VmRSS"), Some(21_032));
        // A field whose name another starts with is not confused with it.
        assert_eq!(status_kib(status, "VmPea"), None);
        assert_eq!(status_kib(status, "Threads"), None, "no kB unit");
        assert_eq!(status_kib(status, "VmSwap"), None);
    }

    #[test]
    fn the_parent_pid_is_read_past_a_name_with_spaces_and_parentheses() {
        assert_eq!(
            stat_ppid("4242 (litellm) S 4200 4242 4200 0 -1"),
            Some(4200)
        );
        assert_eq!(stat_ppid("77 (a (b) c) R 1 77 77 0"), Some(1));
        assert_eq!(stat_ppid("77 (cut"), None);
    }

    #[test]
    fn this_process_tree_holds_a_child_it_started() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let tree = tree_pids(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree.first(), Some(&std::process::id()));
        assert!(tree.contains(&child.id()), "{tree:?}");
    }

    /// Whether `pid` is gone or a zombie (killed, not yet reaped by its new parent).
    fn ended(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    }

    #[test]
    fn dropping_a_process_kills_its_descendants_too() {
        let process = Process::spawn(Command::new("sh").args(["-c", "sleep 60 & sleep 60"]))
            .unwrap_or_else(|e| panic!("{e}"));
        let root = process.pid();
        let mut tree = tree_pids(root);
        for _ in 0..200 {
            if tree.len() >= 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            tree = tree_pids(root);
        }
        assert!(tree.len() >= 3, "the shell and its two sleeps: {tree:?}");
        drop(process);
        let mut alive: Vec<u32> = tree.clone();
        for _ in 0..200 {
            alive.retain(|&pid| !ended(pid));
            if alive.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            alive.is_empty(),
            "still running after the drop: {alive:?} of {tree:?}"
        );
    }

    #[test]
    fn this_process_has_a_resident_peak_at_least_its_resident_size() {
        let mem = ProcMemory::of(std::process::id()).unwrap_or_else(|e| panic!("{e}"));
        assert!(mem.rss_kib > 0);
        assert!(mem.peak_kib >= mem.rss_kib, "{mem:?}");
    }

    #[test]
    fn overlap_counts_intervals_holding_one_moment() {
        // All start before any ends: all three at once.
        assert_eq!(
            peak_overlap(&[(ms(0), ms(10)), (ms(1), ms(12)), (ms(2), ms(11))]),
            3
        );
        // One ends before the last starts; touching ends do not overlap.
        assert_eq!(
            peak_overlap(&[(ms(0), ms(5)), (ms(1), ms(6)), (ms(6), ms(9))]),
            2
        );
        assert_eq!(peak_overlap(&[(ms(0), ms(5)), (ms(5), ms(9))]), 1);
        assert_eq!(peak_overlap(&[]), 0);
    }

    fn events(body: &[u8]) -> Vec<SseEvent> {
        sse_events(body).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_token_is_text_or_reasoning_in_a_whole_event_of_either_door() {
        let event = |name: &str, data: Value| SseEvent {
            name: name.to_owned(),
            data: data.to_string(),
        };
        let chat = |delta: Value| event("message", json!({"choices": [{"delta": delta}]}));
        assert!(!Door::Chat.carries_token(&chat(json!({"role": "assistant", "content": ""}))));
        assert!(Door::Chat.carries_token(&chat(json!({"reasoning_content": "The user"}))));
        assert!(Door::Chat.carries_token(&chat(json!({"content": "Hi"}))));
        assert!(!Door::Chat.carries_token(&SseEvent {
            name: "message".to_owned(),
            data: "[DONE]".to_owned(),
        }));
        let start = json!({"type": "message_start", "message": {}});
        assert!(!Door::Messages.carries_token(&event("message_start", start)));
        let text_start =
            json!({"type": "content_block_start", "content_block": {"type": "text", "text": ""}});
        assert!(!Door::Messages.carries_token(&event("content_block_start", text_start)));
        let thinking = json!({"type": "content_block_start", "content_block": {"type": "thinking", "thinking": "Hm"}});
        assert!(Door::Messages.carries_token(&event("content_block_start", thinking)));
        let delta =
            json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}});
        assert!(Door::Messages.carries_token(&event("content_block_delta", delta)));
    }

    #[test]
    fn sse_events_are_every_event_in_order_with_its_name() {
        let body =
            b"data: {\"a\":1}\n\n: keep-alive\n\nevent: ping\ndata: {\"b\":\n\ndata: [DONE]\n\n";
        let got: Vec<(String, String)> =
            events(body).into_iter().map(|e| (e.name, e.data)).collect();
        let want = [
            ("message", "{\"a\":1}"),
            ("ping", "{\"b\":"),
            ("message", "[DONE]"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
            .collect();
        assert_eq!(got, want);
    }

    /// A Messages stream as the gateway writes it, `tail` after its `message_delta`.
    fn messages_stream(tail: &str) -> Vec<SseEvent> {
        let body = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\"}}\n\n\
             event: ping\ndata: {{\"type\":\"ping\"}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\"}}\n\n{tail}"
        );
        events(body.as_bytes())
    }

    #[test]
    fn a_messages_stream_is_complete_when_it_ends_with_message_stop() {
        let done = messages_stream("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        assert_eq!(done.len(), 7);
        assert!(Door::Messages.completed(&done));
        // The chat door's end is not the Messages door's, and the other way round.
        assert!(!Door::Chat.completed(&done));
        assert!(!Door::Messages.completed(&events(b"data: [DONE]\n\n")));
        // Cut after message_delta, or ended by an error event: not complete.
        assert!(!Door::Messages.completed(&messages_stream("")));
        let failed = messages_stream(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n",
        );
        assert!(!Door::Messages.completed(&failed));
        // A message_stop that is not the last event does not end the stream.
        let more = messages_stream(
            "event: message_stop\ndata: {}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n",
        );
        assert!(!Door::Messages.completed(&more));
        // A message_stop named only in the data is not the event.
        let unnamed = messages_stream("data: {\"type\":\"message_stop\"}\n\n");
        assert!(!Door::Messages.completed(&unnamed));
        assert!(!Door::Messages.completed(&[]));
    }

    #[test]
    fn a_chat_stream_is_complete_when_its_last_data_is_done() {
        assert!(Door::Chat.completed(&events(b"data: {}\n\ndata: [DONE]\n\n")));
        assert!(!Door::Chat.completed(&events(b"data: [DONE]\n\ndata: {}\n\n")));
        assert!(!Door::Chat.completed(&events(b"data: {}\n\n")));
    }

    #[test]
    fn whole_replies_are_checked_in_their_door_s_shape() {
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]});
        let message = json!({"type": "message", "role": "assistant",
                             "content": [{"type": "text", "text": "hi"}]});
        assert!(Door::Chat.answered(&chat));
        assert!(Door::Messages.answered(&message));
        assert!(!Door::Chat.answered(&message));
        assert!(!Door::Messages.answered(&chat));
        let error = json!({"type": "error", "error": {"type": "api_error", "message": "x"}});
        assert!(!Door::Messages.answered(&error));
        let no_text = json!({"type": "message", "content": [{"type": "tool_use", "id": "t"}]});
        assert!(!Door::Messages.answered(&no_text));
    }

    #[test]
    fn the_messages_body_asks_max_tokens_and_the_chat_body_does_not() {
        let m = Door::Messages.body("deepseek/x", true, 7);
        assert_eq!(m["max_tokens"], 256);
        assert_eq!(m["stream"], true);
        assert_eq!(m["messages"][0]["content"], "hello 7");
        let c = Door::Chat.body("x", false, 8);
        assert!(c.get("max_tokens").is_none());
        assert_eq!(c["stream"], false);
    }

    #[test]
    fn round_orders_put_each_target_before_each_other_half_the_time() {
        for n in [2, 3] {
            for a in 0..n {
                for b in 0..n {
                    if a == b {
                        continue;
                    }
                    let first = (0..6)
                        .filter(|&r| {
                            let order = round_order(n, r);
                            let pos = |t| order.iter().position(|&x| x == t);
                            pos(a) < pos(b)
                        })
                        .count();
                    assert_eq!(first, 3, "{n} targets: {a} before {b}");
                }
            }
            for r in 0..6 {
                let mut order = round_order(n, r);
                order.sort_unstable();
                assert_eq!(order, (0..n).collect::<Vec<_>>(), "round {r}");
            }
        }
    }
}
