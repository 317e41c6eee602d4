//! `cargo xtask`: project automation (the checks CI runs, the conformance suite).
//!
//! Kept free of hermes dependencies so it builds in seconds; it drives `cargo` through `$CARGO`.

#[cfg(test)]
mod architecture;

use std::process::Command;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci                   fmt --check, clippy -D warnings, hermes-providers checked without its
                       native wires (none, then gemini alone), the whole test suite (conformance
                       included), with the official SDKs (a venv under target/) and a throwaway
                       PostgreSQL provisioned; what cannot be is named as skipped at the end
  conformance [ROUTE]  the route conformance suite, built-in routes and the third-party example
                       (every route, or the ones named)
  chaos [cli]          signals during tool loops, many processes on one home, racing resumes
                       and simultaneous first opens, at full size (200 signals, 8 x 20 turns)
  chaos serve          3 `hermes serve` replicas over one PostgreSQL behind a round-robin front,
                       carrier-stripping clients on the five carrier families through both doors,
                       random SIGKILLs and a rolling restart (1,000 conversations, 30 kills;
                       HERMES_CHAOS_SERVE_* override; HERMES_TEST_PG_URL or a throwaway cluster)
  fuzz [SECONDS]       the stable-toolchain fuzz harness on every target (default 60 s each)
  bench [N...]         release-build benchmarks on the standard history (default N: 100 1000 5000;
                       --quick: 100 and 1000; --route=a,b: only those shaping rows;
                       --shaping-only, --storage-only, … as the README lists)
  bench serve [--quick] [--with-litellm]
                       the gateway on loopback against the simulator it fronts: direct, hermes on
                       SQLite, hermes on PostgreSQL (a throwaway durable cluster unless
                       HERMES_TEST_PG_URL), and LiteLLM's proxy (pinned, in a venv under target/)
                       with --with-litellm; interleaved rounds, medians with spread, issue 33's
                       targets beside them; --quick: within 5 minutes on 2 cores";

/// The variables cargo sets for the binary it runs (`cargo xtask` is `cargo run -p xtask`):
/// the nested cargo must not see them, or build scripts that watch one of them
/// (`rerun-if-env-changed`) rerun, and `cargo xtask ci` and a plain `cargo` would keep
/// invalidating each other's builds.
fn set_by_cargo_run(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
    ) || name.starts_with("CARGO_PKG_")
}

/// The cargo that ran xtask, with the environment a plain `cargo` in this shell would see.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// [`step`]: `cargo` with `args`.
fn cargo_step(name: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut cmd = cargo();
    cmd.args(args);
    step(name, cmd)
}

/// [`cargo_step`]: clippy over `scope` (packages, targets), warnings denied.
fn clippy_step(name: &str, scope: &[&str]) -> anyhow::Result<()> {
    cargo_step(
        name,
        &[&["clippy"], scope, &["--", "-D", "warnings"]].concat(),
    )
}

/// Runs one step, failing with its name when it fails.
fn step(name: &str, mut cmd: Command) -> anyhow::Result<()> {
    eprintln!("xtask: {name}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

/// The conformance suite: the built-in routes, then the third-party example's route through
/// the same suite.
fn conformance(routes: &[String]) -> anyhow::Result<()> {
    for (package, name) in [
        ("hermes-providers", "conformance (built-in routes)"),
        ("acme-route", "conformance (third-party example)"),
    ] {
        let mut cmd = cargo();
        cmd.args([
            "test",
            "--quiet",
            "-p",
            package,
            "--test",
            "conformance",
            "--",
        ]);
        cmd.args(routes);
        step(name, cmd)?;
    }
    Ok(())
}

/// Exit code of `.ci/with-postgres.sh` when PostgreSQL could not be provisioned.
const PG_UNAVAILABLE: i32 = 97;

/// True when the variable is set to anything but `0` or the empty string.
fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The official provider SDKs for the SDK-evidence tests: `HERMES_SDK_PYTHON` when set, else a
/// venv under `target/sdk-venv` made (or repaired) and filled from `.ci/sdk-requirements.txt`.
/// `Err` says why they could not be provisioned.
fn sdk_python() -> Result<std::path::PathBuf, String> {
    if let Some(python) = std::env::var_os("HERMES_SDK_PYTHON") {
        return Ok(python.into());
    }
    let venv = std::path::absolute(target_dir().join("sdk-venv")).map_err(|e| e.to_string())?;
    let python = venv.join("bin").join("python");
    let works = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
    if !works(Command::new(&python).args(["-c", "import sys"])) {
        let _ = std::fs::remove_dir_all(&venv);
        if !works(Command::new("python3").arg("-m").arg("venv").arg(&venv)) {
            return Err("`python3 -m venv` failed (is Python 3 with venv installed?)".into());
        }
    }
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(".ci/sdk-requirements.txt");
    if !works(&mut pip) {
        return Err("pip could not install .ci/sdk-requirements.txt (is PyPI reachable?)".into());
    }
    Ok(python)
}

/// fmt, clippy, then every test of the workspace (conformance included) with what the tests
/// need provisioned: the official SDKs in a venv and a throwaway PostgreSQL (`.ci/with-postgres.sh`,
/// Debian's packages). What cannot be provisioned is skipped loudly, named in the summary with
/// how to enable it; `HERMES_REQUIRE_SDK` / `HERMES_REQUIRE_PG` (CI) make it a failure instead.
fn ci() -> anyhow::Result<()> {
    cargo_step("cargo fmt --check", &["fmt", "--all", "--", "--check"])?;
    clippy_step("cargo clippy", &["--workspace", "--all-targets"])?;
    // The default build of the binary and its configuration crate (without the `aws-chain`
    // feature the tests turn on).
    clippy_step(
        "cargo clippy -p hermes-cli -p hermes-config (default features)",
        &["-p", "hermes-cli", "-p", "hermes-config"],
    )?;
    // The providers crate with its native wires left out (each is a cargo feature): none, and
    // Gemini alone (no AWS crate is built for either).
    for features in [&[][..], &["--features", "gemini"][..]] {
        let mut check = cargo();
        check.args(["clippy", "-p", "hermes-providers", "--no-default-features"]);
        check.args(features);
        check.args(["--", "-D", "warnings"]);
        step(
            &format!(
                "cargo clippy -p hermes-providers --no-default-features {}",
                features.join(" ")
            ),
            check,
        )?;
    }

    // Why a group could not be provisioned, by skip group (see `SKIP_GROUPS`).
    let mut unprovisioned: Vec<(&str, String)> = Vec::new();
    let sdk = match sdk_python() {
        Ok(python) => Some(python),
        Err(why) if flag("HERMES_REQUIRE_SDK") => {
            bail!("the official SDKs could not be provisioned: {why}")
        }
        Err(why) => {
            unprovisioned.push(("sdk", why));
            None
        }
    };
    let skip_log = std::path::absolute(target_dir().join("xtask-skipped-tests.log"))
        .context("cannot name the skip log")?;
    // The whole workspace, conformance included (both suites are test targets): run once.
    let test = || {
        let mut test = cargo();
        test.args(["test", "--workspace"]);
        if let Some(python) = &sdk {
            test.env("HERMES_SDK_PYTHON", python);
        }
        test.env("HERMES_SKIP_LOG", &skip_log);
        test
    };
    let _ = std::fs::remove_file(&skip_log);
    let mut pg_note = "PostgreSQL: HERMES_TEST_PG_URL".to_owned();
    let tally = if std::env::var_os("HERMES_TEST_PG_URL").is_some() {
        run_tests("cargo test --workspace", test())?
    } else {
        match run_tests(
            "cargo test --workspace (beside a throwaway PostgreSQL)",
            beside_postgres(&test()),
        ) {
            Ok(tally) => {
                pg_note = "PostgreSQL: a throwaway cluster".to_owned();
                tally
            }
            Err(TestsFailed::Code(PG_UNAVAILABLE)) if flag("HERMES_REQUIRE_PG") => {
                bail!("PostgreSQL could not be provisioned (.ci/postgres.sh)")
            }
            Err(TestsFailed::Code(PG_UNAVAILABLE)) => {
                unprovisioned.push((
                    "postgres",
                    "PostgreSQL could not be installed or started (.ci/postgres.sh needs Debian's packages)".to_owned(),
                ));
                pg_note = "PostgreSQL: skipped".to_owned();
                run_tests("cargo test --workspace", test())?
            }
            Err(failed) => return Err(failed.into()),
        }
    };
    let skipped = std::fs::read_to_string(&skip_log).unwrap_or_default();
    let _ = std::fs::remove_file(&skip_log);
    report(&tally, &skipped, &unprovisioned, &pg_note, sdk.as_deref());
    Ok(())
}

/// `cmd` run by `.ci/with-postgres.sh` (beside a throwaway PostgreSQL it starts and removes),
/// with `cmd`'s environment.
fn beside_postgres(cmd: &Command) -> Command {
    let mut wrapped = Command::new("bash");
    wrapped.arg(".ci/with-postgres.sh").arg(cmd.get_program());
    wrapped.args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

/// `cargo xtask chaos [cli|serve]`: a chaos suite of hermes-cli's tests in release at full size,
/// each size its variable's value when set, else the default given here.
fn chaos(which: Option<&str>) -> anyhow::Result<()> {
    let (filter, sizes): (&str, &[(&str, &str)]) = match which {
        None | Some("cli") => (
            "chaos::",
            &[
                ("HERMES_CHAOS_KILLS", "200"),
                ("HERMES_CHAOS_PROCESSES", "8"),
                ("HERMES_CHAOS_TURNS", "20"),
                ("HERMES_CHAOS_OPENS", "20"),
            ],
        ),
        Some("serve") => (
            "chaos_serve::",
            &[
                ("HERMES_CHAOS_SERVE_CONVERSATIONS", "1000"),
                ("HERMES_CHAOS_SERVE_TURNS", "3"),
                ("HERMES_CHAOS_SERVE_KILLS", "30"),
                ("HERMES_CHAOS_SERVE_CLIENTS", "32"),
            ],
        ),
        Some(other) => bail!("unknown chaos suite `{other}`: `cli` or `serve`\n\n{USAGE}"),
    };
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--release",
        "-p",
        "hermes-cli",
        "--test",
        "it",
        "--",
        filter,
        "--nocapture",
        "--test-threads=1",
    ]);
    for (var, default) in sizes {
        if std::env::var_os(var).is_none() {
            cmd.env(var, default);
        }
    }
    if which != Some("serve") {
        return step("chaos", cmd);
    }
    // The gateway suite needs PostgreSQL: the one HERMES_TEST_PG_URL names, else a throwaway
    // cluster; without one it fails rather than skipping.
    cmd.env("HERMES_REQUIRE_PG", "1");
    if std::env::var_os("HERMES_TEST_PG_URL").is_some() {
        step("chaos serve", cmd)
    } else {
        step(
            "chaos serve (beside a throwaway PostgreSQL)",
            beside_postgres(&cmd),
        )
    }
}

/// The groups a test can record itself as skipped in (`hermes_test_support::skip::group`), with
/// what they need and how to enable them.
const SKIP_GROUPS: [(&str, &str, &str); 2] = [
    (
        "postgres",
        "PostgreSQL tests (the store suite's second backend, fleet, migrate and TLS tests)",
        "enable with Debian's packages for .ci/postgres.sh, or HERMES_TEST_PG_URL=postgres://…",
    ),
    (
        "sdk",
        "official-SDK evidence tests (request bodies validated by anthropic, openai, botocore, google-genai)",
        "enable with a reachable PyPI, or HERMES_SDK_PYTHON=<a python with .ci/sdk-requirements.txt>",
    ),
];

/// The end of `cargo xtask ci`: how many tests ran and checked something, and a loud block
/// naming every group whose tests skipped (counted from the skip log), why, and how to enable it.
fn report(
    tally: &Tally,
    skip_log: &str,
    unprovisioned: &[(&str, String)],
    pg_note: &str,
    sdk: Option<&std::path::Path>,
) {
    let skipped_total = skip_log.lines().filter(|l| !l.trim().is_empty()).count();
    eprintln!(
        "xtask: tests: {} passed, of which {} checked something and {skipped_total} skipped; {} ignored",
        tally.passed,
        tally.passed.saturating_sub(skipped_total),
        tally.ignored
    );
    let lines = skipped_lines(skip_log, unprovisioned);
    if lines.is_empty() {
        eprintln!(
            "xtask: every test group ran ({pg_note}; official SDKs: {})",
            sdk.map_or_else(String::new, |p| p.display().to_string())
        );
        return;
    }
    eprintln!(
        "\nxtask: ============ SKIPPED TESTS (they passed without checking anything) ============"
    );
    for line in &lines {
        eprintln!("xtask: SKIPPED {line}");
    }
    eprintln!(
        "xtask: ==================================================================================="
    );
}

/// One line per group that skipped tests or could not be provisioned: how many tests skipped,
/// what the group is, why it did not run and how to enable it. Records of an unknown group are
/// listed as they are.
fn skipped_lines(skip_log: &str, unprovisioned: &[(&str, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (group, what, enable) in SKIP_GROUPS {
        let n = skip_log
            .lines()
            .filter(|line| line.split('\t').next() == Some(group))
            .count();
        let why = unprovisioned
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, why)| why.as_str());
        if n == 0 && why.is_none() {
            continue;
        }
        let tests = if n == 1 { "test" } else { "tests" };
        lines.push(format!(
            "{group}: {n} {tests} skipped — {what}: {}; {enable}",
            why.unwrap_or("not provisioned")
        ));
    }
    for line in skip_log.lines() {
        let group = line.split('\t').next().unwrap_or_default();
        if !group.is_empty() && !SKIP_GROUPS.iter().any(|(g, _, _)| *g == group) {
            lines.push(line.replace('\t', ": "));
        }
    }
    lines
}

/// What libtest reported over all test binaries of a run.
#[derive(Default)]
struct Tally {
    passed: usize,
    ignored: usize,
}

/// Why a test run did not succeed.
#[derive(Debug)]
enum TestsFailed {
    /// It could not be started or read.
    Start(String),
    /// It ended with this exit code (none: killed by a signal).
    Code(i32),
}

impl std::fmt::Display for TestsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TestsFailed::Start(why) => write!(f, "{why}"),
            TestsFailed::Code(code) => write!(f, "the tests failed (exit code {code})"),
        }
    }
}

impl std::error::Error for TestsFailed {}

/// Runs a test command, passing its output through and adding up libtest's
/// `test result: ok. N passed; M failed; K ignored; …` lines.
fn run_tests(name: &str, mut cmd: Command) -> Result<Tally, TestsFailed> {
    use std::io::{BufRead as _, Write as _};
    eprintln!("xtask: {name}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| TestsFailed::Start(format!("cannot start {name}: {e}")))?;
    let mut tally = Tally::default();
    if let Some(stdout) = child.stdout.take() {
        let mut out = std::io::stdout().lock();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(out, "{line}");
            if let Some(result) = line.strip_prefix("test result: ") {
                tally.passed += field(result, "passed");
                tally.ignored += field(result, "ignored");
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| TestsFailed::Start(format!("{name}: {e}")))?;
    match status.code() {
        Some(0) => Ok(tally),
        code => Err(TestsFailed::Code(code.unwrap_or(-1))),
    }
}

/// The number before ` NAME` in a libtest result line (`ok. 12 passed; 0 failed; …`).
fn field(result: &str, name: &str) -> usize {
    result
        .split([';', '.'])
        .filter_map(|part| part.trim().strip_suffix(name))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The target directory cargo builds into (`CARGO_TARGET_DIR`, or `target`).
fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| std::path::PathBuf::from("target"), Into::into)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("conformance") => conformance(&args[1..]),
        Some("chaos") => chaos(args.get(1).map(String::as_str)),
        Some("fuzz") => {
            let seconds = args.get(1).map_or("60", String::as_str);
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--release",
                "--quiet",
                "-p",
                "hermes-fuzz",
                "--",
                "all",
                "--seconds",
                seconds,
            ]);
            step("fuzz", cmd)
        }
        Some("bench") => {
            // The whole-process preview figure runs the release `hermes` binary.
            let mut build = cargo();
            build.args(["build", "--release", "--quiet", "-p", "hermes-cli"]);
            step("build hermes (release)", build)?;
            let bin = std::path::absolute(target_dir().join("release").join("hermes"))?;
            let mut cmd = cargo();
            cmd.args(["run", "--release", "--quiet", "-p", "hermes-bench", "--"]);
            cmd.args(&args[1..]);
            if args.get(1).map(String::as_str) == Some("serve") {
                // Its PostgreSQL cluster, servers' homes and LiteLLM's venv go under the target
                // directory (never committed, never a dependency).
                let target = std::path::absolute(target_dir())?;
                cmd.arg(format!(
                    "--work-dir={}",
                    target.join("bench-serve").display()
                ));
                cmd.arg(format!(
                    "--litellm-venv={}",
                    target.join("litellm-venv").display()
                ));
            }
            cmd.env("HERMES_BIN", bin);
            step("bench", cmd)
        }
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_result_lines_are_added_up_by_field() {
        let line =
            "ok. 12 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        assert_eq!(field(line, "passed"), 12);
        assert_eq!(field(line, "ignored"), 3);
        assert_eq!(field(line, "failed"), 0);
    }

    #[test]
    fn skipped_tests_are_counted_per_group_with_why_and_how_to_enable() {
        let log = "postgres\tstore::a\npostgres\tstore::b\nsdk\tsdk_gemini::c\n";
        let lines = skipped_lines(log, &[("postgres", "no Debian".to_owned())]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("postgres: 2 tests skipped — PostgreSQL tests"));
        assert!(
            lines[0].contains(": no Debian; enable with"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("sdk: 1 test skipped — official-SDK"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("HERMES_SDK_PYTHON"), "{}", lines[1]);
        assert!(skipped_lines("", &[]).is_empty());
        assert_eq!(skipped_lines("pty\tcli::repl\n", &[]), ["pty: cli::repl"]);
    }
}
