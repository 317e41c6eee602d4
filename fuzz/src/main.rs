//! `hermes-fuzz`: a fuzz harness that builds on the stable toolchain (cargo-fuzz needs nightly).
//!
//! ```text
//! hermes-fuzz TARGET [--seconds N | --runs N] [--seed N] [--seeds-dir DIR] [--crashes-dir DIR]
//! hermes-fuzz TARGET --replay FILE...
//! ```
//!
//! TARGET is `stream`, `capture`, `refusal`, `import` or `all` (each in turn, with the whole
//! budget each). Inputs are the seeds under `seeds/<target>/`, then random bytes and byte-level
//! and structure-aware mutations of them. A panic is a crash: the input is saved as
//! `crashes/<target>/<sha256 prefix>` and the run exits 1 after printing the count.
//! `--replay` runs saved inputs once each (to reproduce and minimise a crash).

mod mutate;
mod rng;
mod targets;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::mutate::Shape;
use crate::rng::Rng;
use crate::targets::Target;

const USAGE: &str = "usage: hermes-fuzz TARGET [--seconds N | --runs N] [--seed N] [--seeds-dir DIR] [--crashes-dir DIR]
       hermes-fuzz TARGET --replay FILE...
TARGET: stream, capture, refusal, import or all";

/// How long each target runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Budget {
    Seconds(f64),
    Runs(u64),
}

#[derive(Debug)]
struct Options {
    targets: Vec<Target>,
    budget: Budget,
    seed: u64,
    seeds_dir: PathBuf,
    crashes_dir: PathBuf,
    replay: Vec<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut it = args.iter();
    let name = it.next().ok_or("missing TARGET")?;
    let targets = match name.as_str() {
        "all" => Target::ALL.to_vec(),
        n => vec![Target::parse(n).ok_or_else(|| format!("unknown target `{n}`"))?],
    };
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut opts = Options {
        targets,
        budget: Budget::Seconds(60.0),
        seed,
        seeds_dir: here.join("seeds"),
        crashes_dir: here.join("crashes"),
        replay: Vec::new(),
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--seconds" => {
                let v = value()?;
                let s: f64 = v.parse().map_err(|_| format!("bad --seconds `{v}`"))?;
                opts.budget = Budget::Seconds(s);
            }
            "--runs" => {
                let v = value()?;
                opts.budget = Budget::Runs(v.parse().map_err(|_| format!("bad --runs `{v}`"))?);
            }
            "--seed" => {
                let v = value()?;
                opts.seed = v.parse().map_err(|_| format!("bad --seed `{v}`"))?;
            }
            "--seeds-dir" => opts.seeds_dir = PathBuf::from(value()?),
            "--crashes-dir" => opts.crashes_dir = PathBuf::from(value()?),
            "--replay" => {
                opts.replay.extend(it.by_ref().map(PathBuf::from));
                if opts.replay.is_empty() {
                    return Err("--replay needs files".to_owned());
                }
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if !opts.replay.is_empty() && opts.targets.len() != 1 {
        return Err("--replay needs one target".to_owned());
    }
    Ok(opts)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let opts = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("hermes-fuzz: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    install_panic_hook();
    if !opts.replay.is_empty() {
        return replay(opts.targets[0], &opts.replay);
    }
    println!("seed {}", opts.seed);
    let mut total = 0;
    for (i, target) in opts.targets.iter().enumerate() {
        let seeds = match load_seeds(&opts.seeds_dir.join(target.name())) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("hermes-fuzz: {e}");
                return ExitCode::from(2);
            }
        };
        let crash_dir = opts.crashes_dir.join(target.name());
        let mut rng = Rng::new(opts.seed.wrapping_add(i as u64));
        let run = |input: &[u8]| target.run(input);
        let report = fuzz(
            &run,
            target.shape(),
            &seeds,
            opts.budget,
            &mut rng,
            &crash_dir,
        );
        for (panic, first) in report.sites.values() {
            println!("  crash {panic}\n    input: {}", first.display());
        }
        println!(
            "target {}: {} executions, {} crashes in {:.1} s (slowest input {} ms)",
            target.name(),
            report.executions,
            report.crashes,
            report.elapsed.as_secs_f64(),
            report.slowest.as_millis()
        );
        total += report.crashes;
    }
    if total > 0 {
        println!("{total} crashes in total");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn replay(target: Target, files: &[PathBuf]) -> ExitCode {
    let mut crashes = 0;
    for file in files {
        let input = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("hermes-fuzz: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        };
        match run_once(&|i: &[u8]| target.run(i), &input) {
            Ok(()) => println!("{}: ok", file.display()),
            Err(site) => {
                crashes += 1;
                println!("{}: crash {site}", file.display());
            }
        }
    }
    if crashes > 0 {
        println!("{crashes} crashes");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------- engine

thread_local! {
    /// The last panic on this thread: its location and message.
    static LAST_PANIC: RefCell<Option<Panic>> = const { RefCell::new(None) };
    /// Whether this thread is running an input (other panics go to the default hook).
    static IN_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Records the panics of a run instead of printing them (a crash is reported once per site);
/// any other panic goes to the hook that was installed before.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_RUN.with(std::cell::Cell::get) {
                record_panic(info);
            } else {
                previous(info);
            }
        }));
    });
}

fn record_panic(info: &panic::PanicHookInfo<'_>) {
    {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic)".to_owned());
        let location = info
            .location()
            .map_or_else(|| "unknown location".to_owned(), ToString::to_string);
        LAST_PANIC.with(|l| *l.borrow_mut() = Some(Panic { location, message }));
    }
}

/// A crash: where it panicked and what it said.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Panic {
    location: String,
    message: String,
}

impl std::fmt::Display for Panic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first: String = self
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        write!(f, "at {}: {first}", self.location)
    }
}

/// Runs one input; `Err` holds the panic.
fn run_once(run: &dyn Fn(&[u8]), input: &[u8]) -> Result<(), Panic> {
    LAST_PANIC.with(|l| l.borrow_mut().take());
    IN_RUN.with(|r| r.set(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| run(input)));
    IN_RUN.with(|r| r.set(false));
    match outcome {
        Ok(()) => Ok(()),
        Err(_) => Err(LAST_PANIC
            .with(|l| l.borrow_mut().take())
            .unwrap_or_else(|| Panic {
                location: "unknown location".to_owned(),
                message: "(no message)".to_owned(),
            })),
    }
}

/// What one target's run found.
#[derive(Debug, Default)]
struct Report {
    executions: u64,
    /// Distinct crashing inputs.
    crashes: usize,
    /// Each crash site (panic location): the first panic there and its saved input.
    sites: BTreeMap<String, (Panic, PathBuf)>,
    elapsed: Duration,
    slowest: Duration,
}

/// Runs the seeds once each, then generated inputs until the budget is spent.
fn fuzz(
    run: &dyn Fn(&[u8]),
    shape: Shape,
    seeds: &[Vec<u8>],
    budget: Budget,
    rng: &mut Rng,
    crash_dir: &Path,
) -> Report {
    let start = Instant::now();
    let mut report = Report::default();
    let mut saved = std::collections::HashSet::new();
    let mut i = 0usize;
    loop {
        let done = match budget {
            Budget::Runs(n) => report.executions >= n,
            Budget::Seconds(s) => start.elapsed().as_secs_f64() >= s,
        };
        if done {
            break;
        }
        let input = match seeds.get(i) {
            Some(seed) => seed.clone(),
            None => mutate::generate(rng, seeds, shape),
        };
        i += 1;
        let began = Instant::now();
        let outcome = run_once(run, &input);
        report.slowest = report.slowest.max(began.elapsed());
        report.executions += 1;
        let Err(panic) = outcome else { continue };
        let hash = hex_prefix(&input);
        if !saved.insert(hash.clone()) {
            continue;
        }
        report.crashes += 1;
        let path = crash_dir.join(&hash);
        if let Err(e) =
            std::fs::create_dir_all(crash_dir).and_then(|()| std::fs::write(&path, &input))
        {
            eprintln!("hermes-fuzz: cannot save {}: {e}", path.display());
        }
        report
            .sites
            .entry(panic.location.clone())
            .or_insert((panic, path));
    }
    report.elapsed = start.elapsed();
    report
}

/// The first 16 hex digits of SHA-256(`input`).
fn hex_prefix(input: &[u8]) -> String {
    Sha256::digest(input)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file of `dir`, sorted by name.
fn load_seeds(dir: &Path) -> Result<Vec<Vec<u8>>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("seed folder {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display())))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn arguments() {
        let o = parse_args(&args("stream --runs 5 --seed 9")).unwrap();
        assert_eq!(o.targets, vec![Target::Stream]);
        assert_eq!(o.budget, Budget::Runs(5));
        assert_eq!(o.seed, 9);
        let o = parse_args(&args("all --seconds 1.5")).unwrap();
        assert_eq!(o.targets.len(), 4);
        assert_eq!(o.budget, Budget::Seconds(1.5));
        let o = parse_args(&args("import --replay a b")).unwrap();
        assert_eq!(o.replay.len(), 2);
        assert!(parse_args(&args("nope")).is_err());
        assert!(parse_args(&args("stream --runs x")).is_err());
        assert!(parse_args(&args("all --replay a")).is_err());
        assert!(parse_args(&[]).is_err());
    }

    #[test]
    fn a_panic_is_a_saved_crash() {
        install_panic_hook();
        let dir = tempfile::tempdir().unwrap();
        let boom = |input: &[u8]| {
            if input.first() == Some(&b'!') {
                panic!("boom on {}", input.len());
            }
        };
        let seeds = vec![b"!x".to_vec(), b"ok".to_vec()];
        let report = fuzz(
            &boom,
            Shape::Text,
            &seeds,
            Budget::Runs(300),
            &mut Rng::new(3),
            dir.path(),
        );
        assert_eq!(report.executions, 300);
        assert!(report.crashes >= 1);
        assert_eq!(report.sites.len(), 1, "{:?}", report.sites);
        let (site, (panic, first)) = report.sites.iter().next().unwrap();
        assert!(site.contains("main.rs"), "{site}");
        assert_eq!(panic.message, "boom on 2");
        assert_eq!(std::fs::read(first).unwrap(), b"!x");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            report.crashes
        );
    }

    /// Every seed is a valid input: none crashes its target.
    #[test]
    fn the_seeds_do_not_crash() {
        install_panic_hook();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
        for target in Target::ALL {
            let seeds = load_seeds(&root.join(target.name())).unwrap();
            assert!(seeds.len() >= 5, "{}", target.name());
            for seed in &seeds {
                let outcome = run_once(&|i: &[u8]| target.run(i), seed);
                assert_eq!(outcome, Ok(()), "{}", String::from_utf8_lossy(seed));
            }
        }
    }
}
