//! `cargo xtask`: project automation (the checks CI runs, the conformance suite).
//!
//! Kept free of hermes dependencies so it builds in seconds; it drives `cargo` through `$CARGO`.

use std::process::Command;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci                   fmt --check, clippy -D warnings, the whole test suite (conformance included),
                       with the official SDKs (a venv under target/) and a throwaway PostgreSQL
                       provisioned; what cannot be is named as skipped at the end
  conformance [ROUTE]  the route conformance suite, built-in routes and the third-party example
                       (every route, or the ones named)
  chaos                signals during tool loops, many processes on one home, racing resumes
                       and simultaneous first opens, at full size (200 signals, 8 x 20 turns)
  fuzz [SECONDS]       the stable-toolchain fuzz harness on every target (default 60 s each)
  bench [N...]         release-build benchmarks on the standard history (default N: 100 1000 5000)";

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
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| std::path::PathBuf::from("target"), Into::into);
    let venv = std::path::absolute(target.join("sdk-venv")).map_err(|e| e.to_string())?;
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
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    step("cargo fmt --check", fmt)?;
    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    step("cargo clippy", clippy)?;

    let mut skipped: Vec<String> = Vec::new();
    let sdk = match sdk_python() {
        Ok(python) => Some(python),
        Err(why) if flag("HERMES_REQUIRE_SDK") => {
            bail!("the official SDKs could not be provisioned: {why}")
        }
        Err(why) => {
            skipped.push(format!(
                "official-SDK evidence tests (sdk_anthropic, sdk_bedrock, sdk_gemini, sdk_responses): {why}; enable with a reachable PyPI, or HERMES_SDK_PYTHON=<a python with .ci/sdk-requirements.txt>"
            ));
            None
        }
    };
    // The whole workspace, conformance included (both suites are test targets): run once.
    let test = || {
        let mut test = cargo();
        test.args(["test", "--workspace"]);
        if let Some(python) = &sdk {
            test.env("HERMES_SDK_PYTHON", python);
        }
        test
    };
    let mut pg_note = "PostgreSQL: HERMES_TEST_PG_URL".to_owned();
    if std::env::var_os("HERMES_TEST_PG_URL").is_some() {
        step("cargo test --workspace", test())?;
    } else {
        let inner = test();
        let mut wrapped = Command::new("bash");
        wrapped.arg(".ci/with-postgres.sh").arg(inner.get_program());
        wrapped.args(inner.get_args());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        eprintln!("xtask: cargo test --workspace (beside a throwaway PostgreSQL)");
        let status = wrapped
            .status()
            .context("cannot start bash .ci/with-postgres.sh")?;
        match status.code() {
            Some(0) => pg_note = "PostgreSQL: a throwaway cluster".to_owned(),
            Some(PG_UNAVAILABLE) if flag("HERMES_REQUIRE_PG") => {
                bail!("PostgreSQL could not be provisioned (.ci/postgres.sh)")
            }
            Some(PG_UNAVAILABLE) => {
                skipped.push(
                    "PostgreSQL tests (the store suite's second backend, fleet and migrate tests): PostgreSQL could not be installed or started (.ci/postgres.sh needs Debian's packages); enable with HERMES_TEST_PG_URL=postgres://…".to_owned(),
                );
                step("cargo test --workspace", test())?;
                pg_note = "PostgreSQL: skipped".to_owned();
            }
            _ => bail!("cargo test --workspace failed ({status})"),
        }
    }
    if skipped.is_empty() {
        eprintln!(
            "xtask: every test group ran ({pg_note}; official SDKs: {})",
            sdk.map_or_else(String::new, |p| p.display().to_string())
        );
    } else {
        eprintln!(
            "\nxtask: ============ SKIPPED TEST GROUPS (they passed by not running) ============"
        );
        for line in &skipped {
            eprintln!("xtask: SKIPPED {line}");
        }
        eprintln!(
            "xtask: =========================================================================="
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("conformance") => conformance(&args[1..]),
        Some("chaos") => {
            let mut cmd = cargo();
            cmd.args([
                "test",
                "--release",
                "-p",
                "hermes-cli",
                "--test",
                "it",
                "--",
                "chaos::",
                "--nocapture",
                "--test-threads=1",
            ]);
            for (var, default) in [
                ("HERMES_CHAOS_KILLS", "200"),
                ("HERMES_CHAOS_PROCESSES", "8"),
                ("HERMES_CHAOS_TURNS", "20"),
                ("HERMES_CHAOS_OPENS", "20"),
            ] {
                if std::env::var_os(var).is_none() {
                    cmd.env(var, default);
                }
            }
            step("chaos", cmd)
        }
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
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| std::path::PathBuf::from("target"), Into::into);
            let bin = std::path::absolute(target.join("release").join("hermes"))?;
            let mut cmd = cargo();
            cmd.args(["run", "--release", "--quiet", "-p", "hermes-bench", "--"]);
            cmd.args(&args[1..]);
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
