//! `bench serve`'s continued phase (issue 50): the product's path, measured where its cost is
//! spent. Every backend serves multi-turn conversations; a gateway's client drops every
//! carrier (so each turn after the first is looked up, re-attached and stored), direct's and
//! LiteLLM's keep each reply whole (the upstream needs its reasoning back, and LiteLLM keeps
//! nothing).
//!
//! The serving process (and its descendants: LiteLLM's worker, started with one) is pinned to
//! the machine's last CPU; the load generator, the simulator and the PostgreSQL cluster the run
//! started are pinned to the others ([`Pinning`]). Then, per backend (`crate::serve` runs the
//! rounds):
//! - at concurrency 1, conversations of [`TURNS`] turns in interleaved rounds: the added p50
//!   and p99 of a continued turn (less direct's in the same round);
//! - at saturation ([`saturate`]), [`CLIENTS`] clients running conversations until the backend
//!   served the size's requests: the serving processes' CPU time (user + system from
//!   `/proc/PID/stat`) ÷ requests, and requests per second of that CPU (a core's capacity).
//!
//! Beside them, [`instructions`]: a gateway under `valgrind --tool=callgrind` counts the
//! instructions of a continued turn, a figure that does not depend on the machine's load (a
//! line to watch from run to run).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::gateway::{Door, GatewayServer, SimServer, Target, cpu_time, pin, tree_pids};
use crate::storage::BenchError;

/// Turns per conversation: a new conversation, then continued turns.
pub const TURNS: usize = 5;

/// Clients running conversations at once at saturation: enough to keep one core busy while
/// the upstream answers at once.
pub const CLIENTS: usize = 8;

/// What a backend's serving processes spent over its saturated run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Requests served (every turn, first ones included).
    pub requests: usize,
    /// CPU time (user + system) of the serving process and its descendants.
    pub cpu: Duration,
    /// Wall time of the run.
    pub wall: Duration,
}

impl Cost {
    /// CPU per request, µs.
    pub fn per_request_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.requests.max(1) as f64
    }

    /// Requests per second of CPU: what one core saturated would serve.
    pub fn per_core_second(&self) -> f64 {
        self.requests as f64 / self.cpu.as_secs_f64().max(1e-9)
    }

    /// Requests per second of wall time.
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The CPU time of `root` and its descendants (a process that ended meanwhile counts 0).
pub fn tree_cpu(root: u32) -> Duration {
    tree_pids(root)
        .into_iter()
        .filter_map(|pid| cpu_time(pid).ok())
        .sum()
}

/// Where the phase's processes run: the serving processes on one CPU, everything else on the
/// others. Undone (this process back on every CPU) when dropped.
pub struct Pinning {
    /// The CPU the serving processes run on; `None` on a one-CPU machine (nothing pinned).
    pub server_cpu: Option<usize>,
    all: Vec<usize>,
}

impl Pinning {
    /// Pins this process, the simulator's tree (`sim`) and `postmaster`'s (the cluster the run
    /// started) to every CPU but the last, and each of `servers` with its descendants to the
    /// last.
    pub fn apply(
        sim: u32,
        postmaster: Option<u32>,
        servers: &[u32],
    ) -> Result<Pinning, BenchError> {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let all: Vec<usize> = (0..cpus).collect();
        if cpus < 2 {
            return Ok(Pinning {
                server_cpu: None,
                all,
            });
        }
        let server = cpus - 1;
        let others: Vec<usize> = (0..server).collect();
        pin(std::process::id(), &others)?;
        for pid in tree_pids(sim)
            .into_iter()
            .chain(postmaster.into_iter().flat_map(tree_pids))
        {
            pin(pid, &others)?;
        }
        for &root in servers {
            for pid in tree_pids(root) {
                pin(pid, &[server])?;
            }
        }
        Ok(Pinning {
            server_cpu: Some(server),
            all,
        })
    }
}

impl Drop for Pinning {
    fn drop(&mut self) {
        let _ = pin(std::process::id(), &self.all);
    }
}

/// [`CLIENTS`] clients running conversations through `target` until `requests` were served:
/// the serving processes' CPU over it.
pub async fn saturate(
    client: &reqwest::Client,
    target: &Target,
    server: u32,
    keep: bool,
    requests: usize,
) -> Result<Cost, BenchError> {
    let per_client = requests.div_ceil(CLIENTS * TURNS).max(1);
    let before = tree_cpu(server);
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                for _ in 0..per_client {
                    target.conversation(&client, TURNS, keep).await?;
                }
                Ok::<_, BenchError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| format!("a client task failed: {e}"))??;
    }
    let wall = started.elapsed();
    let cpu = tree_cpu(server).saturating_sub(before);
    Ok(Cost {
        requests: per_client * CLIENTS * TURNS,
        cpu,
        wall,
    })
}

/// The first line of the cluster's `postmaster.pid` in `data`: its server's process.
pub fn postmaster(data: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Instructions the gateway ran per turn under callgrind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instructions {
    /// Per first turn (a new conversation).
    pub per_first: u64,
    /// Per continued turn (looked up, re-attached, its step stored).
    pub per_continued: u64,
    /// Conversations each count ran.
    pub conversations: usize,
}

/// Conversations each callgrind count runs.
pub const CALLGRIND_CONVERSATIONS: usize = 3;

/// The `summary:` (or `totals:`) of a callgrind output file: the instructions it counted.
pub fn callgrind_summary(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line
            .strip_prefix("summary:")
            .or_else(|| line.strip_prefix("totals:"))?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The instructions a gateway (store on SQLite, keys on, in `dir`) runs for a first turn and
/// for a continued turn, under `valgrind --tool=callgrind` in front of a simulator: after two
/// warm-up conversations the counters are zeroed, [`CALLGRIND_CONVERSATIONS`] one-turn
/// conversations run and are dumped, then as many of [`TURNS`] turns; a continued turn is the
/// second count less the first, over the continued turns. `Err` says why it could not run
/// (`valgrind` missing among them).
pub fn instructions(
    bin: &Path,
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    client: &reqwest::Client,
) -> Result<Instructions, BenchError> {
    let found = Command::new("valgrind").arg("--version").output();
    if !found.is_ok_and(|o| o.status.success()) {
        return Err("valgrind is not installed (apt-get install valgrind)".into());
    }
    let sim = SimServer::start(bin, &dir.join("callgrind-sim"), Duration::ZERO)?;
    let out = dir.join("callgrind.out");
    let under = [
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    let gateway = GatewayServer::start_under(
        bin,
        &dir.join("callgrind-gateway"),
        &sim.base,
        &[],
        &[],
        &under,
    )?;
    let target = Target::gateway(&gateway, Door::Chat);
    let pid = gateway.process.pid().to_string();
    let control = |arg: &str| -> Result<(), BenchError> {
        let done = Command::new("callgrind_control")
            .args([arg, &pid])
            .output()?;
        if done.status.success() {
            Ok(())
        } else {
            Err(format!(
                "callgrind_control {arg} failed: {}",
                String::from_utf8_lossy(&done.stderr).trim()
            )
            .into())
        }
    };
    let n = CALLGRIND_CONVERSATIONS;
    runtime.block_on(async {
        for _ in 0..2 {
            target.conversation(client, TURNS, false).await?;
        }
        control("--zero")?;
        for _ in 0..n {
            target.conversation(client, 1, false).await?;
        }
        control("--dump=first-turns")?;
        for _ in 0..n {
            target.conversation(client, TURNS, false).await?;
        }
        control("--dump=conversations")
    })?;
    let count = |part: usize| -> Result<u64, BenchError> {
        let path = dir.join(format!("callgrind.out.{part}"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("no callgrind dump at {}: {e}", path.display()))?;
        Ok(callgrind_summary(&text).ok_or_else(|| format!("no summary in {}", path.display()))?)
    };
    let (firsts, whole) = (count(1)?, count(2)?);
    let continued = whole.saturating_sub(firsts);
    if firsts == 0 || continued == 0 {
        return Err(format!("callgrind counted nothing ({firsts}, {whole})").into());
    }
    let n64 = n as u64;
    Ok(Instructions {
        per_first: firsts / n64,
        per_continued: continued / (n64 * (TURNS as u64 - 1)),
        conversations: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_is_read_per_request_and_per_core_second() {
        let cost = Cost {
            requests: 400,
            cpu: Duration::from_millis(200),
            wall: Duration::from_secs(2),
        };
        assert!((cost.per_request_us() - 500.0).abs() < 1e-6);
        assert!((cost.per_core_second() - 2000.0).abs() < 1e-6);
        assert!((cost.per_second() - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_callgrind_dump_is_read_by_its_summary() {
        let dump =
            "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 123456\n\nfn=main\n";
        assert_eq!(callgrind_summary(dump), Some(123_456));
        assert_eq!(callgrind_summary("totals: 42\n"), Some(42));
        assert_eq!(callgrind_summary("events: Ir\n"), None);
    }

    #[test]
    fn the_postmaster_is_read_from_its_pid_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("postmaster.pid"),
            "4242\n/data\n1700000000\n5432\n",
        )
        .unwrap();
        assert_eq!(postmaster(dir.path()), Some(4242));
        assert_eq!(postmaster(&dir.path().join("none")), None);
    }
}
