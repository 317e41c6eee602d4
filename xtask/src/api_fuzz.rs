//! `cargo xtask fuzz --api [--seconds N | --max-examples N]`: Schemathesis (pinned in
//! `.ci/sdk-requirements.txt`, run from the SDK venv) against a live `hermes serve` over the
//! strict simulators, from the gateway's own `GET /openapi.json`.
//!
//! The gateway runs as in production — gateway keys on, one key made with `hermes serve keys
//! create` — in its own `HERMES_HOME` under the target directory, with `--allow-sim` (the
//! built-in simulators as `sim/…` models) and `hermes sim serve --profile deepseek-v4` as a real
//! HTTP upstream with a fake upstream key. Every model name a case can draw reaches a
//! simulator: each door's default model is one (names without a `/`), and the pattern alias
//! `*/*` sends every `provider/model` name to another, so generated turns really run.
//!
//! Schemathesis runs every operation of the description with generated valid and invalid
//! inputs (its examples, coverage and fuzzing phases) on one worker, with [`CHECKS`]: its own
//! (no 5xx, responses that match their schemas, statuses, content types and headers that are
//! described, invalid inputs refused, required headers and unsupported methods, ignored auth)
//! and the two of `xtask/api-fuzz/hooks.py` (no key of the run in any response; nothing stored
//! after a 4xx). The command fails when Schemathesis reports any failure or tested no operation
//! or generated no case.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};

/// The checks every response is put through: Schemathesis's that make sense for the gateway
/// (not `positive_data_acceptance`: a schema-valid body may still be refused by the strict
/// upstream, which is right; not the stateful and object-level ones: there are no links or
/// resources by id), then the two of `xtask/api-fuzz/hooks.py`.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_headers_conformance,response_schema_conformance,negative_data_rejection,\
missing_required_header,unsupported_method,ignored_auth,\
no_key_in_response,no_turn_stored_after_4xx";

/// The folder of the run's Schemathesis configuration and hooks.
const HOOKS_DIR: &str = "xtask/api-fuzz";

/// The fake upstream key the DeepSeek simulator's provider is given (the leak check looks for it).
const UPSTREAM_KEY: &str = "sk-hermes-api-fuzz-upstream-not-a-real-key";

/// The tenant the run's gateway key belongs to.
const TENANT: &str = "api-fuzz";

/// How much to generate: a time budget or a number of cases per operation.
#[derive(Debug, PartialEq, Eq)]
enum Budget {
    Seconds(u64),
    MaxExamples(u64),
}

/// Reads `--seconds N` or `--max-examples N` (default: 50 cases per operation).
fn budget(args: &[String]) -> anyhow::Result<Budget> {
    let number = |flag: &str, value: Option<&String>| -> anyhow::Result<u64> {
        value
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .with_context(|| format!("{flag} needs a positive whole number"))
    };
    match args {
        [] => Ok(Budget::MaxExamples(50)),
        [flag, value] if flag == "--seconds" => Ok(Budget::Seconds(number(flag, Some(value))?)),
        [flag, value] if flag == "--max-examples" => {
            Ok(Budget::MaxExamples(number(flag, Some(value))?))
        }
        other => bail!(
            "unknown `cargo xtask fuzz --api` arguments {other:?}: --seconds N or --max-examples N"
        ),
    }
}

/// A child process killed (and reaped) when dropped, however the run ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hermes` with `home` as its `HERMES_HOME` and `HOME`, the fake upstream key and `PATH`, and
/// nothing else of the environment (no store URL, proxy or key of the user's).
fn hermes(bin: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("DEEPSEEK_API_KEY", UPSTREAM_KEY)
        .stdin(Stdio::null());
    cmd
}

/// The gateway's `config.toml`: limits lifted (one tenant sends thousands of turns), the
/// simulators behind every model name, the DeepSeek simulator at `upstream`.
fn config(upstream: &str) -> String {
    format!(
        "[serve]\nrequests_per_minute = 1000000000\nmax_concurrent = 1000000\n\
         tokens_per_minute = 1000000000000\ntokens_per_day = 1000000000000\n\n\
         [serve.models]\n\"*/*\" = \"sim/openrouter/api-fuzz\"\n\n\
         [serve.default_models]\nchat = \"deepseek/deepseek-v4-pro\"\n\
         messages = \"sim/anthropic/claude-opus-4-6\"\nresponses = \"sim/openai-responses/gpt-5\"\n\n\
         [providers.deepseek]\nbase_url = \"{upstream}\"\n"
    )
}

/// What Schemathesis's summary says: operations tested, cases generated, failures.
#[derive(Debug, Default, PartialEq, Eq)]
struct Summary {
    tested: u64,
    generated: u64,
    failures: u64,
}

/// Reads the figures off Schemathesis's summary lines (`Tested: N`, `N generated, …`,
/// `❌ … : N` under `Failures:`).
fn summary(lines: &[String]) -> Summary {
    let mut out = Summary::default();
    let mut in_failures = false;
    for line in lines {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("Tested:") {
            out.tested = n.trim().parse().unwrap_or(0);
        }
        if let Some((n, _)) = line.split_once(" generated") {
            out.generated = n.trim().parse().unwrap_or(0);
        }
        if line == "Failures:" {
            in_failures = true;
            continue;
        }
        if in_failures {
            match line.rsplit_once(": ").map(|(_, n)| n.parse::<u64>()) {
                Some(Ok(n)) => out.failures += n,
                _ => in_failures = false,
            }
        }
    }
    out
}

/// `cargo xtask fuzz --api …`: builds `hermes`, then [`fuzz`].
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let budget = budget(args)?;
    let mut build = super::cargo();
    build.args(["build", "--quiet", "-p", "hermes-cli"]);
    super::step("build hermes", build)?;
    fuzz(&hermes_bin()?, budget)
}

/// The cases per operation of `cargo xtask ci`'s smoke run.
const SMOKE_EXAMPLES: u64 = 5;

/// `cargo xtask ci`'s smoke run: [`SMOKE_EXAMPLES`] cases per operation, with the `hermes` the
/// workspace's tests just built (a `cargo build -p hermes-cli` alone would build it again with
/// other features).
pub(crate) fn smoke() -> anyhow::Result<()> {
    fuzz(&hermes_bin()?, Budget::MaxExamples(SMOKE_EXAMPLES))
}

/// The debug `hermes` under the target directory.
fn hermes_bin() -> anyhow::Result<std::path::PathBuf> {
    let bin = std::path::absolute(super::target_dir().join("debug").join("hermes"))?;
    if !bin.is_file() {
        bail!("{} is not built", bin.display());
    }
    Ok(bin)
}

/// Runs Schemathesis within `budget` against a gateway of `bin` over the simulators.
fn fuzz(bin: &Path, budget: Budget) -> anyhow::Result<()> {
    let started = Instant::now();
    let bin = bin.to_owned();
    let python = super::sdk_python()
        .map_err(|why| anyhow::anyhow!("the SDK venv (Schemathesis) could not be made: {why}"))?;

    let work = std::path::absolute(super::target_dir().join("api-fuzz"))?;
    let _ = std::fs::remove_dir_all(&work);
    let home = work.join("home");
    std::fs::create_dir_all(&home).with_context(|| format!("cannot make {}", home.display()))?;

    let (_sim, upstream) = first_line(
        hermes(&bin, &home)
            .args(["sim", "serve", "--profile", "deepseek-v4"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit()),
        Stream::Stdout,
        |line| line.starts_with("http://").then(|| line.trim().to_owned()),
    )
    .context("hermes sim serve")?;
    std::fs::write(home.join("config.toml"), config(&upstream))?;

    // A tenant's key for the doors, and an admin key for the admin API and the inspector.
    let key = make_key(&bin, &home, &["--tenant", TENANT])?;
    let admin = make_key(&bin, &home, &["--admin"])?;

    let (_gateway, origin) = first_line(
        hermes(&bin, &home)
            .args(["serve", "--listen", "127.0.0.1:0", "--allow-sim", "--ui"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
        Stream::Stderr,
        // `hermes: serving on http://ADDR: <the doors>`.
        |line| {
            let (_, rest) = line.split_once(" on http://")?;
            let addr = rest.split_once(": ").map_or(rest, |(addr, _)| addr);
            Some(format!("http://{}", addr.trim()))
        },
    )
    .context("hermes serve")?;

    // The secrets no response may hold: the two keys, their secret halves, the upstream's key.
    let half = |key: &str| key.rsplit('_').next().unwrap_or_default().to_owned();
    let secrets = [key.clone(), half(&key), admin.clone(), half(&admin)].join("\n");
    let secrets = format!("{secrets}\n{UPSTREAM_KEY}");
    // The keys' ids (`hk_<id>`), which no generated case may revoke.
    let ids = [&key, &admin]
        .iter()
        .filter_map(|k| k.rsplit_once('_').map(|(id, _)| id.to_owned()))
        .collect::<Vec<_>>()
        .join("\n");
    let hooks = std::path::absolute(HOOKS_DIR)?;
    let mut fuzz = Command::new(&python);
    fuzz.args(["-m", "schemathesis.cli", "--config-file"])
        .arg(hooks.join("schemathesis.toml"))
        .arg("run")
        .arg(format!("{origin}/openapi.json"))
        .args(["--checks", CHECKS, "--report", "junit", "--report-dir"])
        .arg(work.join("report"));
    match budget {
        Budget::Seconds(s) => fuzz.args(["--max-time", &s.to_string()]),
        Budget::MaxExamples(n) => fuzz.args(["--max-examples", &n.to_string()]),
    };
    // Its working folder holds Schemathesis's and Hypothesis's caches (failures found before
    // are tried again first): kept between runs, out of the source tree.
    let state = std::path::absolute(super::target_dir().join("api-fuzz-state"))?;
    std::fs::create_dir_all(&state)?;
    fuzz.current_dir(&state)
        .env("PYTHONPATH", &hooks)
        .env("HERMES_FUZZ_KEY", &key)
        .env("HERMES_FUZZ_ADMIN_KEY", &admin)
        .env("HERMES_FUZZ_KEY_IDS", &ids)
        .env("HERMES_FUZZ_SECRETS", &secrets)
        .env("HERMES_FUZZ_STORE", home.join("state.db"))
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped());
    eprintln!("xtask: schemathesis against {origin} ({budget:?})");
    let mut child = fuzz.spawn().context("cannot start schemathesis")?;
    let mut lines = Vec::new();
    super::pass_lines_through(&mut child, |line| lines.push(line.to_owned()));
    let status = child.wait()?;
    let figures = summary(&lines);
    eprintln!(
        "xtask: api fuzz: {} operations tested, {} cases generated, {} failures, in {:.0?}",
        figures.tested,
        figures.generated,
        figures.failures,
        started.elapsed()
    );
    if !status.success() || figures.failures > 0 {
        bail!(
            "schemathesis found failures ({status}); its report: {}",
            work.join("report").display()
        );
    }
    if figures.tested == 0 || figures.generated == 0 {
        bail!("schemathesis tested no operation or generated no case");
    }
    Ok(())
}

/// A new gateway key made by `hermes serve keys create ARGS` in `home`.
fn make_key(bin: &Path, home: &Path, args: &[&str]) -> anyhow::Result<String> {
    let made = hermes(bin, home)
        .args(["serve", "keys", "create"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .context("cannot run hermes serve keys create")?;
    let key = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    if !made.status.success() || !key.starts_with("hk_") {
        bail!(
            "hermes serve keys create {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&made.stderr).trim()
        );
    }
    Ok(key)
}

/// Which output of a child names where it serves.
enum Stream {
    Stdout,
    Stderr,
}

/// Spawns `cmd` and reads `stream` until `found` picks a line; the child and what it picked.
/// The rest of the stream is drained on a thread (so the child never blocks writing).
fn first_line(
    cmd: &mut Command,
    stream: Stream,
    found: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<(Running, String)> {
    let mut child = Running(cmd.spawn().context("cannot start it")?);
    let reader: Box<dyn std::io::Read + Send> = match stream {
        Stream::Stdout => Box::new(child.0.stdout.take().context("no stdout")?),
        Stream::Stderr => Box::new(child.0.stderr.take().context("no stderr")?),
    };
    let mut lines = BufReader::new(reader).lines();
    let mut seen = Vec::new();
    let picked = loop {
        let Some(line) = lines.next().transpose()? else {
            bail!("it ended before it served; it wrote:\n{}", seen.join("\n"));
        };
        if let Some(picked) = found(&line) {
            break picked;
        }
        seen.push(line);
    };
    std::thread::spawn(move || lines.for_each(drop));
    Ok((child, picked))
}

#[cfg(test)]
mod tests {
    use super::{Budget, Summary, budget, summary};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_budget_is_seconds_or_cases_per_operation() {
        assert_eq!(budget(&[]).unwrap(), Budget::MaxExamples(50));
        assert_eq!(
            budget(&args(&["--seconds", "30"])).unwrap(),
            Budget::Seconds(30)
        );
        assert_eq!(
            budget(&args(&["--max-examples", "7"])).unwrap(),
            Budget::MaxExamples(7)
        );
        assert!(budget(&args(&["--seconds", "0"])).is_err());
        assert!(budget(&args(&["--seconds"])).is_err());
        assert!(budget(&args(&["--minutes", "3"])).is_err());
    }

    #[test]
    fn the_summary_is_read_off_schemathesis_closing_lines() {
        let passed = args(&[
            "API Operations:",
            "  Selected: 11/11",
            "  Tested: 11",
            "Test cases:",
            "  2585 generated, 2585 passed, 18 skipped",
        ]);
        assert_eq!(
            summary(&passed),
            Summary {
                tested: 11,
                generated: 2585,
                failures: 0
            }
        );
        let failed = args(&[
            "  Tested: 10",
            "Failures:",
            "  ❌ ST203 Missing required header accepted: 1",
            "  ❌ ST901 Custom check failed: `no_key_in_response`: 2",
            "",
            "Test cases:",
            "  1529 generated, 1 found 1 unique failure, 3 skipped",
        ]);
        assert_eq!(
            summary(&failed),
            Summary {
                tested: 10,
                generated: 1529,
                failures: 3
            }
        );
    }
}
