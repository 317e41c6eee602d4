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
//!   `/proc/PID/stat`) ÷ requests, and requests per second of that CPU (a core's capacity),
//!   for each [`Workload`]: five-turn conversations, a client's tool loop, an edit that
//!   branches, a first contact of 200 messages.
//!
//! Beside them, [`instructions`]: a gateway under `valgrind --tool=callgrind` counts the
//! instructions of a continued turn, a figure that does not depend on the machine's load (a
//! line to watch from run to run).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::gateway::{Door, GatewayServer, SimServer, Target, cpu_time, pin, tree_pids};
use serde_json::{Value, json};

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

/// A kind of conversation the continued phase runs at saturation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// [`TURNS`] turns of questions and answers.
    Continued,
    /// A client's tool loop: the model calls a tool twice, the client answers each call, then
    /// one more question.
    ToolLoop,
    /// Three turns, then the last question edited and sent again (a branch at its place).
    Branch,
    /// A first contact of [`LONG`] messages (a client's history from elsewhere).
    Long,
}

/// Messages of [`Workload::Long`]'s first contact.
pub const LONG: usize = 200;

impl Workload {
    /// Every workload, in the table's order.
    pub const ALL: [Workload; 4] = [
        Workload::Continued,
        Workload::ToolLoop,
        Workload::Branch,
        Workload::Long,
    ];

    /// Its column label.
    pub fn label(self) -> &'static str {
        match self {
            Workload::Continued => "5-turn",
            Workload::ToolLoop => "tool loop",
            Workload::Branch => "edit→branch",
            Workload::Long => "200-msg first",
        }
    }
}

/// One chat request of `messages` (and `tools`) through `target`: the reply's message.
async fn post(
    client: &reqwest::Client,
    target: &Target,
    messages: &[Value],
    tools: Option<&Value>,
) -> Result<Value, BenchError> {
    let mut body = json!({"model": target.model, "messages": messages, "stream": false});
    if let Some(tools) = tools {
        body["tools"] = tools.clone();
    }
    let response = target.sent(target.post(client).json(&body)).await?;
    let status = response.status();
    let text = response.text().await?;
    if !status.is_success() {
        return Err(format!("{} answered {status}: {text}", target.name).into());
    }
    let reply: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: the reply is not JSON ({e})", target.name))?;
    Ok(reply["choices"][0]["message"].clone())
}

/// `message` as the client sends it back: whole when it `keep`s carriers, else its role, text
/// and tool calls only.
fn echoed(message: &Value, keep: bool) -> Value {
    if keep {
        return message.clone();
    }
    let mut out = json!({"role": "assistant", "content": message["content"]});
    if message["tool_calls"].is_array() {
        out["tool_calls"] = message["tool_calls"].clone();
    }
    out
}

/// A question no other conversation of the run asks.
fn fresh(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{what} {n} ({})", std::process::id())
}

/// One conversation of `workload` through `target`; how many requests it sent.
pub async fn run(
    client: &reqwest::Client,
    target: &Target,
    workload: Workload,
    keep: bool,
) -> Result<usize, BenchError> {
    match workload {
        Workload::Continued => {
            target.conversation(client, TURNS, keep).await?;
            Ok(TURNS)
        }
        Workload::ToolLoop => {
            let tools = json!([{"type": "function", "function": {"name": "now",
                "description": "The time", "parameters": {"type": "object", "properties": {}}}}]);
            let mut messages = vec![
                json!({"role": "user", "content": format!("[tools=2] {}", fresh("what time is it?"))}),
            ];
            let mut sent = 0;
            loop {
                let reply = post(client, target, &messages, Some(&tools)).await?;
                sent += 1;
                messages.push(echoed(&reply, keep));
                let Some(calls) = reply["tool_calls"].as_array().filter(|c| !c.is_empty()) else {
                    break;
                };
                for call in calls {
                    messages.push(
                        json!({"role": "tool", "tool_call_id": call["id"], "content": "12:00"}),
                    );
                }
                if sent > 6 {
                    return Err(format!("{}: the tool loop did not end", target.name).into());
                }
            }
            messages.push(json!({"role": "user", "content": "and tomorrow?"}));
            post(client, target, &messages, Some(&tools)).await?;
            Ok(sent + 1)
        }
        Workload::Branch => {
            let mut messages = vec![json!({"role": "user", "content": fresh("a question")})];
            for turn in 0..3 {
                let reply = post(client, target, &messages, None).await?;
                messages.push(echoed(&reply, keep));
                messages.push(json!({"role": "user", "content": format!("and then? ({turn})")}));
            }
            // The client edits its last question (the one just answered) and asks again.
            messages.truncate(messages.len() - 2);
            if let Some(last) = messages.last_mut() {
                last["content"] = json!("and then, rather? (edited)");
            }
            post(client, target, &messages, None).await?;
            Ok(4)
        }
        Workload::Long => {
            let mut messages = Vec::with_capacity(LONG);
            let topic = fresh("an old conversation");
            for i in 0..LONG - 1 {
                messages.push(if i % 2 == 0 {
                    json!({"role": "user", "content": format!("{topic}: question {i}")})
                } else if keep {
                    // A client that keeps carriers kept them from where this history was made.
                    json!({"role": "assistant", "content": format!("answer {i}"),
                           "reasoning_content": format!("thought {i}")})
                } else {
                    json!({"role": "assistant", "content": format!("answer {i}")})
                });
            }
            messages.push(json!({"role": "user", "content": "and now?"}));
            post(client, target, &messages, None).await?;
            Ok(1)
        }
    }
}

/// [`CLIENTS`] clients running conversations of `workload` through `target` until at least
/// `requests` were served: the serving processes' CPU over it.
pub async fn saturate(
    client: &reqwest::Client,
    target: &Target,
    server: u32,
    keep: bool,
    workload: Workload,
    requests: usize,
) -> Result<Cost, BenchError> {
    let per_client = requests.div_ceil(CLIENTS).max(1);
    let before = tree_cpu(server);
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                let mut sent = 0;
                while sent < per_client {
                    sent += run(&client, &target, workload, keep).await?;
                }
                Ok::<_, BenchError>(sent)
            })
        })
        .collect();
    let mut served = 0;
    for task in tasks {
        served += task
            .await
            .map_err(|e| format!("a client task failed: {e}"))??;
    }
    let wall = started.elapsed();
    let cpu = tree_cpu(server).saturating_sub(before);
    Ok(Cost {
        requests: served,
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

/// Conversations of [`TURNS`] turns a callgrind count runs before it counts: enough that each
/// of the store's pooled SQLite connections has prepared each shape of the lookup (one to four
/// chain keys) once, which a serving gateway does once in its life — SQLite prepares the
/// lookup's statement in about 1.4 million instructions, and two warm-up conversations left
/// several of those preparations inside the count.
pub const CALLGRIND_WARM_UP: usize = 8;

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
/// for a continued turn, under `valgrind --tool=callgrind` in front of a simulator: after
/// [`CALLGRIND_WARM_UP`] warm-up conversations the counters are zeroed, [`CALLGRIND_CONVERSATIONS`] one-turn
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
        for _ in 0..CALLGRIND_WARM_UP {
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
    fn a_client_that_drops_carriers_sends_back_text_and_tool_calls_only() {
        let reply = json!({"role": "assistant", "content": "calling", "reasoning_content": "why",
                           "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": "now", "arguments": "{}"}}]});
        let dropped = echoed(&reply, false);
        assert_eq!(dropped["reasoning_content"], Value::Null);
        assert_eq!(dropped["tool_calls"], reply["tool_calls"]);
        assert_eq!(dropped["content"], "calling");
        assert_eq!(echoed(&reply, true), reply);
        let plain = echoed(&json!({"role": "assistant", "content": "hi"}), false);
        assert_eq!(plain, json!({"role": "assistant", "content": "hi"}));
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
