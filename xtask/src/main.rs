//! `cargo xtask`: project automation (the checks CI runs, the conformance suite).
//!
//! Kept free of hermes dependencies so it builds in seconds; it drives `cargo` through `$CARGO`.

use std::process::Command;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci                   fmt --check, clippy -D warnings, the whole test suite (conformance included)
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
    // The whole workspace, conformance included (both suites are test targets): run once.
    let mut test = cargo();
    test.args(["test", "--workspace"]);
    step("cargo test --workspace", test)
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
                "chaos",
                "--",
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
