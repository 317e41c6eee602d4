//! `cargo xtask bench`: shaping cost against the serialisation floor on the standard history,
//! then the compaction, storage, per-request read and gateway tables.
//!
//! Shaping, for each route and size: the median time to shape and serialise the request body,
//! the median time to serialise the already-shaped body alone, their ratio (with its spread over
//! the runs), and the peak heap of the shaping step divided by the history's JSON size.
//! The chat routes shape the standard history; each native wire (`anthropic`, `bedrock`,
//! `gemini`, `responses`) encodes the same turns carried onto its stored shape
//! ([`hermes_bench::native_history`]: signed thinking, signatures, encrypted items, all
//! replayed; generated deterministically, each history's size and SHA-256 printed against the
//! pinned [`hermes_bench::NATIVE_FINGERPRINTS`]), against serde_json serialising the body it
//! encoded (parsed into a value once).
//!
//! Storage, on each backend (a real SQLite file in WAL mode, in a temporary directory; and new
//! schemas on the PostgreSQL server named by `HERMES_TEST_PG_URL`, dropped afterwards, the
//! PostgreSQL lines skipped when it is unset): the cost of storing a turn at turn 10,000 against
//! at turn 10; resuming a 1,000-turn session (open, load, shape) against a raw read of its rows
//! with the backend's own sqlx driver; and the resume's peak heap against the session's JSON size.
//!
//! Everything but the gateway runs in one process, side by side, so the ratios cancel the
//! machine's speed (the gateway's baseline is the simulator it fronts, timed in the same run).
//! Arguments: the shaping sizes (default 100 1000 5000), `--shaping-only`, `--compaction-only`,
//! `--storage-only`, `--late-turn=T` (default 10000) and `--resume-turns=N` (default 1000) to
//! iterate quickly; `--quick` (for CI) leaves out the sizes above 1,000 when none is named, and
//! `--route=deepseek,bedrock` keeps only those rows of the shaping table (to profile one).
//!
//! Per-request reads (issue 29), on the same backends: the statements (counted from sqlx's own
//! statement events) and mean time of what a resumed request reads, the engine's way today
//! (`session`, `messages`, `thinking`, `verdicts`, `wire_verdicts`, before and after the turn)
//! against one `Store::snapshot`, on a resumed `--resume-turns` session. `--requests-only` runs
//! that table alone.
//!
//! Gateway (issues 30 and 31, `gateway.rs`; needs `HERMES_BIN`, the release `hermes` binary that
//! `cargo xtask bench` builds): `hermes sim serve --profile deepseek-v4` and `hermes serve`
//! (gateway keys on, each request carrying one) in front of it, as child processes in a temporary home with the SQLite store. The
//! latency table, for each of the gateway's doors (`/v1/chat/completions` and the Anthropic
//! `/v1/messages`): p50 and p99 of `--gateway-pairs=K` (default 300) interleaved rounds, the
//! same request to the simulator directly (with the chat body) and through each door,
//! non-streamed and streamed (time to the first and to the last byte), with the added
//! milliseconds and the gateway/direct ratio. The memory table: `--gateway-streams=N` (default
//! 256) streams opened at once against a simulator that pauses `--gateway-chunk-delay-ms=D`
//! (default 200) before each event, directly, then through a fresh gateway's chat door, then
//! through another fresh gateway's Messages door: how many were in flight at once, how many
//! ended complete (`[DONE]`; `message_stop` for Messages), and the serving process's resident
//! memory at idle and at its peak (`VmHWM`), per stream. `--gateway-only` runs that section
//! alone.
//!
//! `serve [--quick] [--with-litellm]` as the first argument runs `cargo xtask bench serve`
//! instead ([`hermes_bench::serve`]): the gateway on SQLite and on PostgreSQL, and LiteLLM's
//! proxy, against the simulator called directly, in interleaved rounds.

use std::time::Duration;

use hermes_bench::gateway;
use hermes_bench::requests::{SQLX_QUERY_TARGET, StatementCounter, mean, request_reads};
use hermes_bench::storage::{
    AppendCost, BenchError, Ratio, ResumeCost, Scratch, append_cost, postgres_server, resume_cost,
};
use hermes_bench::{
    FINGERPRINTS, NATIVE_ROUTES, NativeRoute, fingerprint_verdict, median, native_history,
    native_history_bytes, native_wire, sample, sha256_hex, standard_history_bytes,
};
use hermes_bench::{continued, serve};
use hermes_core::{
    Message, RequestParts, ResolveOptions, RouteDecision, RouteTable, RouteTarget, ThinkingRequest,
    Verdicts,
};
use hermes_store::Backend;
use hermes_wire_chat::{self as chat, ChatRequest};
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// The Python original's shaping + serialising time at N = 1,000 (docs/bench-baseline.md), ms,
/// per chat route: (label, shaping, serialising). The reference line prints these as published.
const PYTHON_REFERENCE: [(&str, f64, f64); 3] = [
    ("deepseek", 23.5, 44.2),
    ("openrouter", 23.3, 156.1),
    ("mistral", 35.0, 18.6),
];

/// The size the Python original's reference was measured at.
const REFERENCE_N: usize = 1_000;

/// Reference ÷ ours the issue asks for on every chat route (issue 35).
const REFERENCE_TARGET: f64 = 30.0;

/// (label, provider, model) of the routes measured; the models are chosen so each route shows
/// its own behaviour (must-echo on deepseek, every carrier on openrouter, none on mistral).
const ROUTES: [(&str, &str, &str); 3] = [
    ("deepseek", "deepseek", "deepseek-v4-pro"),
    ("openrouter", "openrouter", "anthropic/claude-sonnet-5"),
    ("mistral", "mistral", "magistral-medium-latest"),
];

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn runs_for(n: usize) -> usize {
    match n {
        0..=100 => 41,
        101..=1000 => 15,
        _ => 7,
    }
}

/// Storage table parameters.
const EARLY_TURN: usize = 10;
const LATE_TURN: usize = 10_000;
const APPEND_ROUNDS: usize = 21;
const APPEND_PER_ROUND: usize = 12;
const RESUME_TURNS: usize = 1_000;
const RESUME_RUNS: usize = 15;

/// `--quick` (for CI): the shaping table at N = 100 and 1,000 only.
const QUICK_MAX_N: usize = 1_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        serve(&args[1..]);
        return;
    }
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str, default: usize| {
        args.iter()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(default)
    };
    let mut sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = FINGERPRINTS.iter().map(|f| f.0).collect();
        if flag("--quick") {
            sizes.retain(|&n| n <= QUICK_MAX_N);
        }
    }
    // `--route=deepseek,bedrock` keeps only those rows of the shaping table (to profile one).
    let routes: Option<Vec<String>> = args.iter().find_map(|a| {
        let list = a.strip_prefix("--route=")?;
        Some(list.split(',').map(str::to_owned).collect())
    });
    let table = hermes_providers::builtin_table();
    // Every table runs, unless `--TABLE-only` names some.
    const ONLY: [&str; 5] = [
        "--shaping-only",
        "--compaction-only",
        "--storage-only",
        "--requests-only",
        "--gateway-only",
    ];
    let runs = |own: &str| flag(own) || !ONLY.iter().any(|o| flag(o));
    if runs("--shaping-only") {
        shaping(&table, sizes, routes.as_deref());
    }
    if runs("--compaction-only")
        && let Err(e) = compaction(&table)
    {
        eprintln!("compaction benchmark failed: {e}");
        std::process::exit(1);
    }
    let resume_turns = value("--resume-turns", RESUME_TURNS);
    if runs("--storage-only") {
        let late_turn = value("--late-turn", LATE_TURN);
        if let Err(e) = storage(&table, late_turn, resume_turns) {
            eprintln!("storage benchmark failed: {e}");
            std::process::exit(1);
        }
    }
    if runs("--requests-only")
        && let Err(e) = requests(resume_turns)
    {
        eprintln!("per-request read benchmark failed: {e}");
        std::process::exit(1);
    }
    if runs("--gateway-only") {
        let options = |bin| gateway::Options {
            bin,
            warmup: GATEWAY_WARMUP,
            pairs: value("--gateway-pairs", GATEWAY_PAIRS),
            streams: value("--gateway-streams", GATEWAY_STREAMS),
            chunk_delay: Duration::from_millis(value(
                "--gateway-chunk-delay-ms",
                GATEWAY_CHUNK_DELAY_MS,
            ) as u64),
        };
        if let Err(e) = gateway_section(options) {
            eprintln!("gateway benchmark failed: {e}");
            std::process::exit(1);
        }
    }
}

/// The continued-conversation table: a continued turn's time through the chat door (the client
/// dropping every carrier) beside the same turn sent directly (the client keeping them), and the
/// gateway's CPU time per request over its conversations.
fn continued_cost(c: &gateway::Continued) {
    const W: usize = 45;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!();
    println!(
        "{:<W$} {:>4} {:>10} {:>11} {:>9} {:>15}",
        "gateway | continued turn (chat door)",
        "",
        "direct ms",
        "gateway ms",
        "added ms",
        "gateway/direct"
    );
    for (pct, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (direct, through) = (
            gateway::percentile(&c.direct, p),
            gateway::percentile(&c.gateway, p),
        );
        println!(
            "{:<W$} {pct:>4} {:>10.3} {:>11.3} {:>9.3} {:>15.2}",
            "non-streamed, carriers dropped by the client",
            ms(direct),
            ms(through),
            ms(through) - ms(direct),
            ms(through) / ms(direct),
        );
    }
    let per_request = c.gateway_cpu.as_secs_f64() * 1e6 / c.gateway_requests.max(1) as f64;
    println!(
        "{:<W$} {:>4} {:>10} {:>11.0}",
        "gateway CPU per request (user + system) µs", "", "-", per_request
    );
    println!(
        "{:<W$} {:>4} {:>10} {:>11.0}",
        "requests per gateway-core-second",
        "",
        "-",
        1e6 / per_request.max(1.0)
    );
    match c.pinned {
        Some(core) => println!(
            "-- the gateway pinned to CPU {core}, the simulator and this load generator to the \
             others (sched_setaffinity on every thread)"
        ),
        None => println!("-- one CPU: nothing pinned, the gateway shares it with the rest"),
    }
    println!(
        "-- {} conversations of {} turns each way, alternating; the times are of the turns \
         after the first (each matched with its stored conversation, its reasoning re-attached, \
         one step stored); directly the client sends each reply back whole (the upstream needs \
         its reasoning), through the gateway only its role and text; CPU from /proc/PID/stat \
         over the gateway's {} requests (all its threads, the store's included; clock ticks)",
        c.gateway.len() / (c.turns - 1).max(1),
        c.turns,
        c.gateway_requests,
    );
}

/// `cargo xtask bench serve` ([`hermes_bench::serve`]): needs `HERMES_BIN`; exits 2 on bad
/// arguments, 1 when the harness fails or what it measured does not stand
/// ([`serve::failures`]: a backend's requests failed, streams did not all complete, LiteLLM
/// asked for but not measured), after printing what it did measure.
fn serve(args: &[String]) {
    let args = match serve::parse_args(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("bench serve: {e}");
            std::process::exit(2);
        }
    };
    let Some(bin) = std::env::var_os("HERMES_BIN") else {
        eprintln!("bench serve: HERMES_BIN is not set (`cargo xtask bench serve` sets it)");
        std::process::exit(2);
    };
    if args.instructions {
        match serve::instructions_only(std::path::Path::new(&bin), &args) {
            Ok(i) => println!(
                "callgrind (hermes · SQLite, keys on, after {} warm-up conversations): {} \
                 instructions per continued turn, {} per first turn ({} conversations)",
                continued::CALLGRIND_WARM_UP,
                i.per_continued,
                i.per_first,
                i.conversations
            ),
            Err(e) => {
                eprintln!("bench serve --instructions failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    match serve::measure(std::path::Path::new(&bin), &args) {
        Ok(report) => {
            serve::print(&report);
            let failed = serve::failures(&report, &args);
            if !failed.is_empty() {
                for why in &failed {
                    eprintln!("bench serve failed: {why}");
                }
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("bench serve failed: {e}");
            std::process::exit(1);
        }
    }
}

/// What the gateway's metrics and tracing add: its chat door recording metrics and exporting
/// spans, recording metrics only, and with neither, in the same rounds as the simulator called
/// directly.
fn metrics_cost(latency: &gateway::Latency, rounds: usize) -> Result<(), BenchError> {
    let [
        (_, _, direct),
        (_, _, both),
        (_, _, metrics),
        (_, _, neither),
    ] = &latency.targets[..]
    else {
        return Err("the metrics and tracing latency needs four targets".into());
    };
    println!();
    const W: usize = 44;
    println!(
        "{:<W$} {:>4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "gateway metrics+tracing | chat door",
        "",
        "direct ms",
        "both ms",
        "metrics",
        "neither",
        "both add",
        "metr add"
    );
    for (label, d, b, m, n) in [
        (
            "non-streamed (whole body)",
            &direct.plain,
            &both.plain,
            &metrics.plain,
            &neither.plain,
        ),
        (
            "streamed (time to first byte)",
            &direct.first_byte,
            &both.first_byte,
            &metrics.first_byte,
            &neither.first_byte,
        ),
        (
            "streamed (time to last byte)",
            &direct.streamed,
            &both.streamed,
            &metrics.streamed,
            &neither.streamed,
        ),
    ] {
        for (pct, p) in [("p50", 0.5), ("p99", 0.99)] {
            let [d, b, m, n] = [d, b, m, n].map(|v| ms(gateway::percentile(v, p)));
            println!(
                "{label:<W$} {pct:>4} {d:>10.3} {b:>10.3} {m:>10.3} {n:>10.3} {:>10.3} {:>10.3}",
                b - n,
                m - n,
            );
        }
    }
    println!(
        "-- {rounds} rounds, each one request of a kind to the simulator directly and to three \
         gateways in front of it (every order in turn): recording metrics and exporting its spans \
         over OTLP/HTTP protobuf to a loopback receiver (`both`), recording metrics only, and \
         with neither (--no-metrics, no OTLP endpoint); `add` is the p-th percentile minus the \
         one with neither (noise is of the same order: compare it with the machine's load)"
    );
    Ok(())
}

/// Gateway section defaults: warm-up requests of each kind to each target, timed rounds (a
/// pair per door sharing its direct request) per kind, streams in flight at once (each door), and the paced simulator's pause before each event after the first.
const GATEWAY_WARMUP: usize = 20;
const GATEWAY_PAIRS: usize = 300;
const GATEWAY_STREAMS: usize = 256;
const GATEWAY_CHUNK_DELAY_MS: usize = 200;

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The gateway section (issues 30 and 31): latency added by `hermes serve` on loopback, through
/// its chat and Messages doors, against the same simulator called directly, and memory with many
/// streams in flight through each door. Needs `HERMES_BIN`.
fn gateway_section(
    options: impl FnOnce(std::path::PathBuf) -> gateway::Options,
) -> Result<(), BenchError> {
    println!();
    let Some(bin) = std::env::var_os("HERMES_BIN") else {
        println!("gateway: skipped (HERMES_BIN is not set; `cargo xtask bench` sets it)");
        return Ok(());
    };
    let options = options(bin.into());
    let report = gateway::measure(&options)?;
    let lat = &report.latency.targets;
    let [(_, _, direct_lat), doors @ ..] = &lat[..] else {
        return Err("no latency samples".into());
    };
    const W: usize = 44;
    println!(
        "{:<W$} {:>4} {:>10} {:>11} {:>9} {:>15}",
        "gateway latency | door: request",
        "",
        "direct ms",
        "gateway ms",
        "added ms",
        "gateway/direct"
    );
    for (door, api, samples) in doors {
        println!("/v1/{}", api.path());
        for (label, direct, through) in [
            (
                "non-streamed (whole body)",
                &direct_lat.plain,
                &samples.plain,
            ),
            (
                "streamed (time to first byte)",
                &direct_lat.first_byte,
                &samples.first_byte,
            ),
            (
                "streamed (time to last byte)",
                &direct_lat.streamed,
                &samples.streamed,
            ),
        ] {
            let label = format!("{door}: {label}");
            for (pct, p) in [("p50", 0.5), ("p99", 0.99)] {
                let (direct, through) = (
                    gateway::percentile(direct, p),
                    gateway::percentile(through, p),
                );
                println!(
                    "{label:<W$} {pct:>4} {:>10.3} {:>11.3} {:>9.3} {:>15.2}",
                    ms(direct),
                    ms(through),
                    ms(through) - ms(direct),
                    ms(through) / ms(direct),
                );
            }
        }
    }
    let events = lat
        .iter()
        .map(|(name, _, s)| format!("{} {name}", s.events))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "-- {} rounds after {} warm-up requests of each kind to each target; a round is one \
         request of a kind to the simulator directly and through each door of one gateway (its \
         order going through every permutation), so each door's rows pair it with the same \
         direct request; nearest-rank percentiles; upstream `hermes sim serve --profile {}` \
         ({}), the gateway `hermes serve` in front of it on loopback (gateway keys on, each request carrying one), each request a \
         new conversation; SSE events per stream: {events}; the gateway's SQLite store {:.1} MB \
         after {} requests",
        options.pairs,
        options.warmup,
        gateway::PROFILE,
        gateway::MODEL,
        report.store_bytes as f64 / 1e6,
        report.gateway_requests,
    );
    let [(cpus, before), (_, after)] = report.load;
    let load = |l: Option<f64>| l.map_or_else(|| "-".to_owned(), |l| format!("{l:.1}"));
    println!(
        "-- the gateway answers a stream's headers with its first forwarded event (a request \
         refused before anything streams gets its HTTP status), so its first byte waits for the \
         upstream's first delta; the machine ({cpus} CPUs): load average {} before, {} after the \
         section (the p99s move first with other work on it; the p50s and ratios hold better)",
        load(before),
        load(after),
    );

    continued_cost(&report.continued);
    metrics_cost(&report.metrics, options.pairs)?;

    println!();
    println!(
        "{:<W$} {:>4} {:>10} {:>11} {:>15}",
        "gateway | small requests beside a big one", "", "alone ms", "beside ms", "beside/alone"
    );
    let backends = std::iter::once(("SQLite", &report.beside))
        .chain(report.beside_postgres.as_ref().map(|p| ("PostgreSQL", p)));
    for (backend, b) in backends.clone() {
        for (pct, p) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
            let (alone, beside) = (
                gateway::percentile(&b.alone, p),
                gateway::percentile(&b.beside, p),
            );
            println!(
                "{:<W$} {pct:>4} {:>10.3} {:>11.3} {:>15.2}",
                format!("/v1/chat/completions ({backend})"),
                ms(alone),
                ms(beside),
                ms(beside) / ms(alone),
            );
        }
    }
    for (backend, b) in backends {
        let big_mean = b.big.iter().map(|d| ms(*d)).sum::<f64>() / b.big.len().max(1) as f64;
        println!(
            "-- {backend}: {} small requests alone, then {} more, one after another, while {} \
             requests of {:.1} MiB ({:.0} ms each on average; each a new conversation of 16 KiB \
             turns) went to the same gateway one after another",
            b.alone.len(),
            b.beside.len(),
            b.big.len(),
            b.big_bytes as f64 / (1024.0 * 1024.0),
            big_mean,
        );
    }
    println!(
        "-- a body over 256 KiB is parsed on the blocking pool and a large history normalised and \
         hashed off the reactor (issue 47)"
    );

    let n = options.streams;
    let (direct, chat, messages) = (&report.direct, &report.chat, &report.messages);
    println!();
    println!(
        "{:<W$} {:>14} {:>14} {:>14} {:>6}",
        format!("gateway memory | {n} streams at once"),
        "direct (sim)",
        "chat door",
        "messages door",
        ""
    );
    // A count of the N streams, each side, marked ok when all reached N.
    let counted = |label: &str, counts: [usize; 3]| {
        let [d, c, m] = counts.map(|k| format!("{k} / {n}"));
        println!(
            "{label:<W$} {d:>14} {c:>14} {m:>14} {:>6}",
            if counts.iter().all(|&k| k == n) {
                "ok"
            } else {
                "MISSED"
            },
        );
    };
    counted(
        "in flight at once (client side)",
        [
            direct.in_flight,
            chat.streams.in_flight,
            messages.streams.in_flight,
        ],
    );
    counted(
        "ended complete ([DONE] / message_stop)",
        [
            direct.completed,
            chat.streams.completed,
            messages.streams.completed,
        ],
    );
    let row = |label: &str, values: [f64; 3]| {
        let [d, c, m] = values;
        println!("{label:<W$} {d:>14.2} {c:>14.2} {m:>14.2}");
    };
    let sim = &report.direct_sim;
    row(
        "wall time s",
        [
            direct.wall.as_secs_f64(),
            chat.streams.wall.as_secs_f64(),
            messages.streams.wall.as_secs_f64(),
        ],
    );
    row(
        "serving process RSS at idle MiB",
        [
            mib(sim.idle.rss_kib),
            mib(chat.gateway.idle.rss_kib),
            mib(messages.gateway.idle.rss_kib),
        ],
    );
    row(
        "serving process peak RSS (VmHWM) MiB",
        [
            mib(sim.after.peak_kib),
            mib(chat.gateway.after.peak_kib),
            mib(messages.gateway.after.peak_kib),
        ],
    );
    row(
        "(peak - idle) / stream KiB",
        [
            sim.per_stream_kib(n),
            chat.gateway.per_stream_kib(n),
            messages.gateway.per_stream_kib(n),
        ],
    );
    row(
        "upstream sim peak RSS MiB",
        [
            mib(sim.after.peak_kib),
            mib(chat.sim.after.peak_kib),
            mib(messages.sim.after.peak_kib),
        ],
    );
    let ratio = |t: &gateway::Through| t.gateway.after.peak_kib as f64 / sim.after.peak_kib as f64;
    println!(
        "{:<W$} {:>14} {:>14.2} {:>14.2}",
        "peak RSS, gateway / sim (direct)",
        "-",
        ratio(chat),
        ratio(messages),
    );
    for (name, run) in [
        ("direct", direct),
        ("chat", &chat.streams),
        ("messages", &messages.streams),
    ] {
        for e in &run.errors {
            println!("-- {name} stream failed: {e}");
        }
    }
    let reset = [
        sim,
        &chat.gateway,
        &chat.sim,
        &messages.gateway,
        &messages.sim,
    ]
    .iter()
    .all(|b| b.reset);
    let pauses = direct_lat.events.saturating_sub(1);
    println!(
        "-- the upstream pauses {} ms before each SSE event after the first \
         (`--chunk-delay-ms`), {pauses} pauses, so each stream lasts at least {:.1} s and all \
         {n} can be open at once; in flight = most streams between their first chunk and their \
         last byte at one moment; peaks are VmHWM from /proc/PID/status, {}; each door's \
         streams went through a fresh gateway of its own (the chat door's stopped before the \
         Messages door's started), warmed with {} and {} requests through its door; the same \
         simulator served the direct streams first, then both gateways",
        options.chunk_delay.as_millis(),
        (options.chunk_delay * u32::try_from(pauses).unwrap_or(u32::MAX)).as_secs_f64(),
        if reset {
            "reset through /proc/PID/clear_refs just before each burst of streams opened"
        } else {
            "NOT reset (clear_refs refused): peaks since the process started"
        },
        chat.warmed,
        messages.warmed,
    );
    Ok(())
}

/// Requests timed per pattern in the per-request read table.
const REQUEST_RUNS: usize = 21;

/// The per-request read table (issue 29): statements and mean time of what a resumed request
/// reads, the engine's way today (five reads, twice) against one `Store::snapshot`, on an
/// SQLite file and on PostgreSQL (skipped without `HERMES_TEST_PG_URL`).
fn requests(turns: usize) -> Result<(), BenchError> {
    // The counted requests' statements: one number when they agree, else their range.
    let span = |counts: &[u64]| match (counts.first(), counts.last()) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
        _ => "-".to_owned(),
    };
    let counter = StatementCounter::default();
    counter.install()?;
    let server = postgres_server()?;
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut scratches = vec![Scratch::sqlite(dir.path())];
    scratches.extend(server.as_deref().map(Scratch::postgres));
    let mut measured = Vec::new();
    for mut scratch in scratches {
        let backend = scratch.backend();
        let reads = runtime.block_on(async {
            let reads = async {
                let at = scratch.fresh("requests").await?;
                request_reads(&at, turns, REQUEST_RUNS, &counter).await
            }
            .await;
            let cleaned = scratch.cleanup().await;
            let reads = reads?;
            cleaned?;
            Ok::<_, BenchError>(reads)
        })?;
        measured.push((backend, reads));
    }
    println!();
    println!(
        "per-request reads | resumed {turns}-turn session       backend  statements  mean ms  median ms"
    );
    for (backend, reads) in &measured {
        let name = backend_name(*backend);
        println!(
            "old: session+messages+thinking+verdicts+wire_verdicts, x2 {name:<8} {:>10} {:>8.3} {:>10.3}",
            span(&reads.old_statements),
            ms(mean(&reads.old)),
            ms(median(&reads.old)),
        );
        println!(
            "new: one snapshot                                      {name:<8} {:>10} {:>8.3} {:>10.3}",
            span(&reads.new_statements),
            ms(mean(&reads.new)),
            ms(median(&reads.new)),
        );
        println!(
            "old / new                                              {name:<8} {:>10.2} {:>8.2} {:>10.2}",
            reads.statement_ratio(),
            reads.time_ratio(),
            ms(median(&reads.old)) / ms(median(&reads.new)),
        );
    }
    if server.is_none() {
        println!("{:<55} postgres {PG_SKIPPED}", "");
    }
    for (backend, reads) in &measured {
        let transaction = match backend {
            Backend::Sqlite => {
                "sqlx 0.9 runs SQLite's BEGIN and COMMIT outside its statement log, so the \
                 snapshot's read transaction adds two statements the count does not show"
            }
            Backend::Postgres => {
                "sqlx 0.9 sends PostgreSQL's BEGIN as a simple query outside its statement log, so \
                 the snapshot's count holds its COMMIT but not its BEGIN"
            }
        };
        println!(
            "-- {}: {} messages in the active view; statements are sqlx's `{SQLX_QUERY_TARGET}` \
             events on a one-connection handle that logs them ({transaction}); times over {} interleaved \
             requests each on a handle opened as hermes opens it",
            backend_name(*backend),
            reads.messages,
            reads.old.len(),
        );
    }
    Ok(())
}

/// The compaction table: the pre-flight estimate against shaping (cold, and incremental as the
/// CLI runs it before every request), and `compress()` of a 5,000-turn history with an instant
/// summarizer.
fn compaction(table: &RouteTable) -> Result<(), Box<dyn std::error::Error>> {
    use chat::ShapeContext;
    use hermes_compaction::{CompactionConfig, CompactionOverrides, FixedSummarizer, compress};
    use hermes_core::estimate_history;

    println!();
    println!(
        "compaction (deepseek route) | measure                      value   target     spread"
    );
    let verdicts = Verdicts::default();
    let decision = table.resolve(
        &RouteTarget::new("deepseek", None, "deepseek-v4-pro"),
        ResolveOptions::default(),
    );
    let bytes = standard_history_bytes(1_000);
    let history: Vec<Message> = serde_json::from_slice(&bytes)?;
    let runs = 15;
    let (mut estimate, mut views, mut body) = (Vec::new(), Vec::new(), Vec::new());
    // The first estimate after load computes every text's token count; later ones reuse them.
    let mut first = Vec::new();
    for _ in 0..5 {
        let fresh: Vec<Message> = serde_json::from_slice(&bytes)?;
        first.extend(sample(1, || estimate_history(&fresh, &decision)));
    }
    for _ in 0..runs {
        estimate.extend(sample(1, || estimate_history(&history, &decision)));
        views.extend(sample(1, || {
            chat::shape(&ShapeContext::new(&decision, &verdicts), &history).len()
        }));
        body.extend(sample(1, || {
            let request = ChatRequest::build(
                &history,
                &decision,
                &verdicts,
                ThinkingRequest::NoPreference,
            );
            serde_json::to_vec(&request).map(|v| v.len())
        }));
    }
    let spread = |a: &[Duration], b: &[Duration]| -> String {
        let r: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64())
            .collect();
        format!(
            "{:.3}-{:.3}",
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(0.0, f64::max)
        )
    };
    let pre_spread = spread(&estimate, &body);
    for v in [&mut estimate, &mut views, &mut body, &mut first] {
        v.sort();
    }
    let shaping = ms(median(&body));
    let pre = ms(median(&estimate)) / shaping;
    println!(
        "pre-flight estimate (N=1000) / shaping             {pre:>9.3}   <= 0.2  {pre_spread} {}",
        if pre <= 0.2 { "ok" } else { "MISSED" }
    );
    println!(
        "first estimate after load / shaping                {:>9.3}     -",
        ms(median(&first)) / shaping
    );
    println!(
        "-- shaping = shape + serialise the body, {shaping:.3} ms (building the wire views alone: {:.3} ms); \
         pre-flight estimate {:.3} ms (token counts remembered per text); first estimate after load {:.3} ms",
        ms(median(&views)),
        ms(median(&estimate)),
        ms(median(&first)),
    );

    let big: Vec<Message> = serde_json::from_slice(&standard_history_bytes(5_000))?;
    let config = CompactionConfig::for_model("deepseek-v4-pro", &CompactionOverrides::default());
    let summarizer = FixedSummarizer("instant summary".to_owned());
    let rt = tokio::runtime::Builder::new_current_thread().build()?;
    let mut after = 0;
    let mut times = sample(7, || {
        let result = rt.block_on(compress(&big, &decision, &config, &summarizer));
        after = result.ok().flatten().map_or(0, |c| c.active.len());
    });
    times.sort();
    let shape_big = {
        let mut t = sample(7, || {
            chat::shape(&ShapeContext::new(&decision, &verdicts), &big).len()
        });
        t.sort();
        ms(median(&t))
    };
    println!(
        "-- compress() of the 5,000-turn history, instant summarizer: {:.2} ms median ({} -> {after} messages); shaping the same history {shape_big:.2} ms",
        ms(median(&times)),
        big.len()
    );
    Ok(())
}

/// The shaping table.
fn shaping(table: &RouteTable, sizes: Vec<usize>, routes: Option<&[String]>) {
    let wanted = |label: &str| routes.is_none_or(|r| r.iter().any(|w| w == label));
    println!(
        "shaping cost on the standard history (docs/bench-baseline.md), medians in one process"
    );
    println!(
        "{:<11} {:>5} {:>13} {:>13} {:>7} {:>15} {:>16}",
        "route", "N", "shape+ser ms", "ser alone ms", "ratio", "ratio spread", "peak/JSON size"
    );
    // Our shape+serialise median at REFERENCE_N, per chat route measured.
    let mut ours_at_reference = Vec::new();
    for n in sizes {
        let bytes = standard_history_bytes(n);
        let fingerprint = FINGERPRINTS.iter().find(|f| f.0 == n);
        let sha = sha256_hex(&bytes);
        let matches = fingerprint.map_or("no published fingerprint".to_owned(), |f| {
            if f.1 == bytes.len() && f.2 == sha {
                "matches the Python generator".to_owned()
            } else {
                "MISMATCH".to_owned()
            }
        });
        println!("-- N={n}: {} bytes, sha256 {sha} ({matches})", bytes.len());
        if matches == "MISMATCH" {
            eprintln!(
                "the standard history at N={n} does not match the Python generator's fingerprint: the figures would not be the published history's"
            );
            std::process::exit(1);
        }
        let history: Vec<Message> = match serde_json::from_slice(&bytes) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("standard history does not parse: {e}");
                std::process::exit(1);
            }
        };
        drop(bytes);
        // The Python original's shaped `messages` arrays for this size (docs/bench-baseline.md).
        for &(label, provider, model, base, _, len, sha) in
            hermes_bench::PYTHON_SHAPED.iter().filter(|r| r.4 == n)
        {
            let shaped = hermes_bench::shaped_messages(table, &history, provider, model, base)
                .unwrap_or_default();
            let same = shaped.len() == len && sha256_hex(&shaped) == sha;
            println!(
                "-- N={n}: {label} messages array, {} bytes: {}",
                shaped.len(),
                if same {
                    "byte-identical to the Python original's"
                } else {
                    "DIFFERS from the Python original's"
                }
            );
        }
        let json_size = serde_json::to_vec(&history).map(|v| v.len()).unwrap_or(1);
        let verdicts = Verdicts::default();
        for (label, provider, model) in ROUTES.into_iter().filter(|r| wanted(r.0)) {
            let decision = table.resolve(
                &RouteTarget::new(provider, None, model),
                ResolveOptions::default(),
            );
            let thinking = ThinkingRequest::NoPreference;
            let body_len = serde_json::to_vec(&ChatRequest::build(
                &history, &decision, &verdicts, thinking,
            ))
            .map(|v| v.len())
            .unwrap_or(0);

            let shaped = ChatRequest::build(&history, &decision, &verdicts, thinking);
            let both_ms = shaping_row(
                label,
                n,
                json_size,
                || {
                    let body = ChatRequest::build(&history, &decision, &verdicts, thinking);
                    let mut out = Vec::with_capacity(body_len);
                    serde_json::to_writer(&mut out, &body).map(|_| out.len())
                },
                || {
                    let mut out = Vec::with_capacity(body_len);
                    serde_json::to_writer(&mut out, &shaped).map(|_| out.len())
                },
                || ChatRequest::build(&history, &decision, &verdicts, thinking),
            );
            if n == REFERENCE_N {
                ours_at_reference.push((label, both_ms));
            }
        }
        drop(history);
        let natives: Vec<&NativeRoute> = NATIVE_ROUTES.iter().filter(|r| wanted(r.0)).collect();
        for route in &natives {
            let bytes = native_history_bytes(route, n);
            let (sha, verdict) = match fingerprint_verdict(route.0, n, &bytes) {
                Ok(verdict) => verdict,
                Err(why) => {
                    eprintln!("{why}");
                    std::process::exit(1);
                }
            };
            println!(
                "-- N={n}: {} history, {} bytes, sha256 {sha} ({verdict})",
                route.0,
                bytes.len()
            );
        }
        for route in natives {
            if let Err(e) = native_row(table, route, n) {
                eprintln!("{} shaping benchmark failed: {e}", route.0);
                std::process::exit(1);
            }
        }
    }
    println!("{}", published_reference());
    if !ours_at_reference.is_empty() {
        println!("{}", reference_line(&ours_at_reference));
    }
    if let Err(e) = preview_process() {
        eprintln!("whole-process preview benchmark failed: {e}");
        std::process::exit(1);
    }
}

/// One native wire's shaping row at N: its stored history ([`native_history`]) encoded by the
/// wire built from its descriptor, against serialising the body it encodes (parsed into a
/// `serde_json::Value` once, as the chat rows serialise the body already shaped).
fn native_row(table: &RouteTable, route: &NativeRoute, n: usize) -> Result<(), String> {
    let value = native_history(route, n);
    let json_size = serde_json::to_vec(&value).map_or(1, |v| v.len());
    let history: Vec<Message> = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let (wire, decision) = native_wire(table, route).map_err(|e| e.to_string())?;
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&history, &decision, &verdicts);
    let encoded = wire.encode(&parts).map_err(|e| e.to_string())?;
    let body_len = encoded.body.len();
    let shaped: serde_json::Value =
        serde_json::from_slice(&encoded.body).map_err(|e| e.to_string())?;
    drop(encoded);
    shaping_row(
        route.0,
        n,
        json_size,
        || wire.encode(&parts).map(|out| out.body.len()),
        || {
            let mut out = Vec::with_capacity(body_len);
            serde_json::to_writer(&mut out, &shaped).map(|_| out.len())
        },
        || wire.encode(&parts),
    );
    Ok(())
}

/// The reference line: the Python original's published figures (its format is parsed by other
/// tools: keep it).
fn published_reference() -> String {
    let column = |f: fn(&(&str, f64, f64)) -> String| {
        PYTHON_REFERENCE
            .iter()
            .map(f)
            .collect::<Vec<_>>()
            .join(" / ")
    };
    format!(
        "reference (Python original, N={REFERENCE_N}): shaping {} ms, serialising {} ms ({})",
        column(|r| format!("{:.1}", r.1)),
        column(|r| format!("{:.1}", r.2)),
        column(|r| r.0.to_owned()),
    )
}

/// How many times faster than the Python original's shaping + serialising each measured chat
/// route is at N = 1,000, against the target (issue 35). The Python figures are the published
/// ones, measured on another machine, not in this run: the line says so.
fn reference_line(ours: &[(&str, f64)]) -> String {
    let parts: Vec<String> = ours
        .iter()
        .filter_map(|&(label, ms)| {
            let (_, shaping, serialising) = PYTHON_REFERENCE.iter().find(|r| r.0 == label)?;
            Some(format!("{label} {:.1}x", (shaping + serialising) / ms))
        })
        .collect();
    format!(
        "reference / ours (N={REFERENCE_N}, shaping+serialising; reference = the Python original's published figures from another machine, not measured in this run; ours = this run's medians): {} (target >= {REFERENCE_TARGET:.0}x each)",
        parts.join(" / ")
    )
}

/// Measures and prints one row of the shaping table: `both` (shape and serialise) against
/// `alone` (serialise the shaped body), interleaved run by run so drift affects both alike,
/// and the peak heap of `shape` over the history's JSON size. Returns the median of `both`, ms.
fn shaping_row<A, B, S>(
    label: &str,
    n: usize,
    json_size: usize,
    mut both_fn: impl FnMut() -> A,
    mut alone_fn: impl FnMut() -> B,
    mut shape: impl FnMut() -> S,
) -> f64 {
    let runs = runs_for(n);
    let mut both = Vec::with_capacity(runs);
    let mut alone = Vec::with_capacity(runs);
    for _ in 0..runs {
        both.extend(sample(1, &mut both_fn));
        alone.extend(sample(1, &mut alone_fn));
    }
    both.sort();
    alone.sort();
    let ratios: Vec<f64> = both
        .iter()
        .zip(&alone)
        .map(|(b, a)| b.as_secs_f64() / a.as_secs_f64())
        .collect();
    let ratio = ms(median(&both)) / ms(median(&alone));
    let (lo, hi) = (
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );

    // Peak heap of the shaping step alone.
    let before = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let body = shape();
    let peak = ALLOC.peak_usage().saturating_sub(before);
    drop(body);

    println!(
        "{label:<11} {n:>5} {:>13.3} {:>13.3} {ratio:>7.3} {:>15} {:>16.5}",
        ms(median(&both)),
        ms(median(&alone)),
        format!("{lo:.2}-{hi:.2}"),
        peak as f64 / json_size as f64,
    );
    ms(median(&both))
}

/// Runs of the whole-process `hermes preview`.
const PREVIEW_RUNS: usize = 7;

/// The whole-process figure: `hermes preview --history FILE` (load the file, shape, print the
/// body to a pipe) at N = 1,000 on the deepseek route, against the same work in this process
/// (parse, shape, pretty-serialise into memory). `HERMES_BIN` names the release binary
/// (`cargo xtask bench` builds it); without it the line says so and is skipped.
fn preview_process() -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};

    let Some(bin) = std::env::var_os("HERMES_BIN") else {
        println!(
            "whole-process preview: skipped (HERMES_BIN is not set; `cargo xtask bench` sets it)"
        );
        return Ok(());
    };
    let n = 1_000;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("history.json");
    let bytes = standard_history_bytes(n);
    std::fs::write(&file, &bytes)?;
    let (provider, model, base) = (
        "deepseek",
        "deepseek-v4-flash",
        "https://api.deepseek.com/v1",
    );
    let mut process = Vec::new();
    let mut inside = Vec::new();
    let mut printed = 0;
    let table = hermes_providers::builtin_table();
    for _ in 0..PREVIEW_RUNS {
        let started = std::time::Instant::now();
        let mut child = Command::new(&bin)
            .args(["preview", "--history"])
            .arg(&file)
            .args(["--provider", provider, "--model", model, "--base-url", base])
            .env("HERMES_HOME", dir.path().join("home"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut out = Vec::new();
        child
            .stdout
            .take()
            .ok_or("no stdout")?
            .read_to_end(&mut out)?;
        if !child.wait()?.success() {
            return Err("hermes preview failed".into());
        }
        process.push(started.elapsed());
        printed = out.len();
        inside.extend(sample(1, || -> Result<usize, serde_json::Error> {
            let history: Vec<Message> = serde_json::from_slice(&bytes)?;
            let decision = table.resolve(
                &RouteTarget::new(provider, Some(base), model),
                ResolveOptions::default(),
            );
            let body = ChatRequest::build(
                &history,
                &decision,
                &Verdicts::default(),
                ThinkingRequest::NoPreference,
            );
            Ok(serde_json::to_vec_pretty(&body)?.len())
        }));
    }
    process.sort();
    inside.sort();
    println!(
        "whole-process preview, N={n} (deepseek): {:.1} ms for {printed} bytes on stdout; in-process parse+shape+serialise {:.1} ms; ratio {:.2} (Python original's shaping+serialising alone: 67.7 ms)",
        ms(median(&process)),
        ms(median(&inside)),
        ms(median(&process)) / ms(median(&inside)),
    );
    Ok(())
}

/// Storage table targets: append ratio, resume time ratio, resume peak heap ratio (the same on
/// both backends).
const APPEND_TARGET: f64 = 1.2;
const RESUME_TARGET: f64 = 2.0;
const PEAK_TARGET: f64 = 2.5;

/// What the PostgreSQL lines say when there is no server to measure on.
const PG_SKIPPED: &str = "skipped: set HERMES_TEST_PG_URL (e.g. `source .ci/postgres.sh`)";

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// One line of the storage table.
fn storage_line(measure: &str, backend: Backend, ratio: Ratio, target: f64) {
    println!(
        "{measure:<40} {:<8} {:>7.3} {:>7} {:>13} {:>6}",
        backend_name(backend),
        ratio.value,
        format!("<= {target}"),
        format!("{:.2}-{:.2}", ratio.lo, ratio.hi),
        if ratio.value <= target {
            "ok"
        } else {
            "MISSED"
        },
    );
}

/// One backend's storage measures.
struct StorageCosts {
    append: AppendCost,
    resume: ResumeCost,
}

/// Runs the storage measures on the fresh stores `scratch` makes, then drops what it made (also
/// when a measure failed).
async fn storage_costs(
    mut scratch: Scratch,
    late_turn: usize,
    resume_turns: usize,
    decision: &RouteDecision,
) -> Result<StorageCosts, BenchError> {
    let costs = async {
        let early = scratch.fresh("early").await?;
        let late = scratch.fresh("late").await?;
        let append = append_cost(
            &early,
            &late,
            EARLY_TURN,
            late_turn,
            APPEND_ROUNDS,
            APPEND_PER_ROUND,
        )
        .await?;
        let at = scratch.fresh("resume").await?;
        let resume = resume_cost(&at, resume_turns, RESUME_RUNS, decision, &ALLOC).await?;
        Ok::<_, BenchError>(StorageCosts { append, resume })
    }
    .await;
    let cleaned = scratch.cleanup().await;
    let costs = costs?;
    cleaned?;
    Ok(costs)
}

/// The storage table: append cost, resume time and resume memory, on SQLite files in a
/// temporary directory and on PostgreSQL schemas (skipped without `HERMES_TEST_PG_URL`).
fn storage(table: &RouteTable, late_turn: usize, resume_turns: usize) -> Result<(), BenchError> {
    let decision: RouteDecision = table.resolve(
        &RouteTarget::new("deepseek", None, "deepseek-v4-pro"),
        ResolveOptions::default(),
    );
    let server = postgres_server()?;
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sqlite = runtime.block_on(storage_costs(
        Scratch::sqlite(dir.path()),
        late_turn,
        resume_turns,
        &decision,
    ))?;
    drop(dir);
    let postgres = match &server {
        Some(url) => Some(runtime.block_on(storage_costs(
            Scratch::postgres(url),
            late_turn,
            resume_turns,
            &decision,
        ))?),
        None => None,
    };
    let measured: Vec<&StorageCosts> = std::iter::once(&sqlite).chain(&postgres).collect();

    println!();
    println!(
        "{:<40} {:<8} {:>7} {:>7} {:>13} {:>6}",
        "storage | measure", "backend", "value", "target", "spread", ""
    );
    let skipped = |measure: &str| {
        if postgres.is_none() {
            println!("{measure:<40} {:<8} {PG_SKIPPED}", "postgres");
        }
    };
    /// A storage measure: its name, each backend's ratio from its costs, and the target.
    type Measure = (String, fn(&StorageCosts) -> (Backend, Ratio), f64);
    let measures: [Measure; 3] = [
        (
            format!("append at turn {late_turn} / at turn {EARLY_TURN}"),
            |c| (c.append.backend, c.append.ratio()),
            APPEND_TARGET,
        ),
        (
            format!("resume {resume_turns} turns / raw read"),
            |c| (c.resume.backend, c.resume.time_ratio()),
            RESUME_TARGET,
        ),
        (
            "resume peak heap / session JSON size".to_owned(),
            |c| (c.resume.backend, c.resume.memory_ratio()),
            PEAK_TARGET,
        ),
    ];
    for (measure, ratio_of, target) in measures {
        for costs in &measured {
            let (backend, ratio) = ratio_of(costs);
            storage_line(&measure, backend, ratio, target);
        }
        skipped(&measure);
    }
    for costs in &measured {
        storage_notes(costs);
    }
    Ok(())
}

/// The notes under the storage table for one backend: the medians behind the ratios.
fn storage_notes(StorageCosts { append, resume }: &StorageCosts) {
    let backend = backend_name(append.backend);
    let (db, heap) = match append.backend {
        Backend::Sqlite => ("DB file and WAL", "SQLite's own page cache is not counted"),
        Backend::Postgres => (
            "schema's tables, indexes and TOAST",
            "the server's memory is not counted",
        ),
    };
    let (rounds, per_round) = (append.round_ratios.len(), APPEND_PER_ROUND);
    println!(
        "-- {backend} append: a turn = its 4 appends, as the driver stores it; medians of {} \
         turns each: turns {}..{} of {rounds} fresh sessions {:.3} ms vs turns {}..{} of one long \
         session {:.3} ms, interleaved (spread over the {rounds} rounds); long session {:.1} MB \
         ({db}), grown in {:.1} s",
        append.early.len(),
        append.early_turn,
        append.early_turn + per_round,
        ms(median(&append.early)),
        append.late_turn,
        append.late_turn + rounds * per_round,
        ms(median(&append.late)),
        append.late_db_bytes as f64 / 1e6,
        append.grow.as_secs_f64(),
    );
    println!(
        "-- {backend} resume: {} turns ({} messages, {} JSON bytes, {:.1} MB in the {db}), median \
         of {} runs: open+load+shape {:.3} ms vs fresh pool + raw read {:.3} ms; peak heap \
         {:.1} MB ({heap})",
        resume.turns,
        resume.messages,
        resume.json_bytes,
        resume.db_bytes as f64 / 1e6,
        resume.resume.len(),
        ms(median(&resume.resume)),
        ms(median(&resume.raw)),
        resume
            .peaks
            .get(resume.peaks.len() / 2)
            .copied()
            .unwrap_or(0) as f64
            / 1e6,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_line_keeps_its_published_format() {
        assert_eq!(
            published_reference(),
            "reference (Python original, N=1000): shaping 23.5 / 23.3 / 35.0 ms, serialising 44.2 / 156.1 / 18.6 ms (deepseek / openrouter / mistral)"
        );
    }

    #[test]
    fn reference_over_ours_divides_the_published_sum_by_our_median() {
        // 23.5 + 44.2 = 67.7 ms against 2.0 ms; 23.3 + 156.1 = 179.4 ms against 5.98 ms.
        assert_eq!(
            reference_line(&[("deepseek", 2.0), ("openrouter", 5.98)]),
            "reference / ours (N=1000, shaping+serialising; reference = the Python original's published figures from another machine, not measured in this run; ours = this run's medians): deepseek 33.9x / openrouter 30.0x (target >= 30x each)"
        );
    }
}
