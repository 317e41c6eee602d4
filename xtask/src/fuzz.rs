//! `cargo xtask fuzz`: the cargo-fuzz targets (`fuzz/cargo-fuzz/`, nightly, libFuzzer) run one
//! at a time, a crash minimised and kept under `fuzz/regressions/<target>/`, where the stable
//! `hermes-fuzz` regression test replays it; `--api` is the HTTP API fuzzing of
//! `crate::api_fuzz`. See docs/internals/fuzzing.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::{cargo, target_dir};

/// The cargo-fuzz release `cargo xtask fuzz` installs (under `target/cargo-fuzz`).
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// The cargo-fuzz crate, relative to the repository root.
const FUZZ_DIR: &str = "fuzz/cargo-fuzz";

/// How long each target runs in `cargo xtask ci`'s smoke run.
pub(crate) const SMOKE_SECONDS: u64 = 3;

const USAGE: &str = "usage: cargo xtask fuzz [--target NAME] [--seconds N]
       cargo xtask fuzz --api [ARGS...]
Runs every cargo-fuzz target (or NAME) for N seconds each (default 60), one at a time.";

/// `cargo xtask fuzz ARGS`.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    if args.first().map(String::as_str) == Some("--api") {
        return crate::api_fuzz::run(&args[1..]);
    }
    let mut only: Option<String> = None;
    let mut seconds: u64 = 60;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--target" => only = Some(it.next().context("--target needs a NAME")?.clone()),
            "--seconds" => {
                let n = it.next().context("--seconds needs a number")?;
                seconds = n
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .with_context(|| format!("--seconds {n}: not a positive whole number"))?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown `cargo xtask fuzz` argument `{other}`\n\n{USAGE}"),
        }
    }
    let all = targets()?;
    let chosen: Vec<String> = match only {
        Some(name) if all.contains(&name) => vec![name],
        Some(name) => bail!("no fuzz target is named `{name}`: {}", all.join(", ")),
        None => all,
    };
    fuzz(&chosen, seconds)
}

/// `cargo xtask ci`'s smoke run: every target for [`SMOKE_SECONDS`].
pub(crate) fn smoke() -> anyhow::Result<()> {
    fuzz(&targets()?, SMOKE_SECONDS)
}

/// The targets: the files of `fuzz/cargo-fuzz/fuzz_targets/` (one per entry of
/// `hermes_fuzz::TARGETS`, which the stable regression test checks).
fn targets() -> anyhow::Result<Vec<String>> {
    let dir = Path::new(FUZZ_DIR).join("fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The libFuzzer dictionary of `target`: its wire's keys and event names.
fn dictionary(target: &str) -> &'static str {
    let family = target.split('_').next().unwrap_or_default();
    match family {
        "anthropic" | "messages" | "signature" => "fuzz/dict/anthropic.dict",
        "gemini" => "fuzz/dict/gemini.dict",
        "responses" => "fuzz/dict/responses.dict",
        "bedrock" | "raw" => "fuzz/dict/bedrock.dict",
        _ => "fuzz/dict/chat.dict",
    }
}

/// What one run of a target reported (libFuzzer's final stats).
#[derive(Debug, Default, PartialEq)]
struct Stats {
    executions: u64,
    edges: u64,
    corpus: u64,
}

/// Reads libFuzzer's output: `stat::number_of_executed_units: N` (`-print_final_stats=1`) and
/// the last status line's `cov: N` and `corp: N/…`.
fn stats(output: &str) -> Stats {
    let mut s = Stats::default();
    let after = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    for line in output.lines() {
        if let Some(n) = after(line, "stat::number_of_executed_units:") {
            s.executions = n;
        }
        if line.starts_with('#') {
            if let Some(n) = after(line, "cov:") {
                s.edges = n;
            }
            if let Some(n) = after(line, "corp:") {
                s.corpus = n;
            }
        }
    }
    s
}

/// `cargo fuzz` on nightly (`rustup run nightly`: `$CARGO` is the stable cargo itself, which
/// knows no `+nightly`), with its own target directory (the workspace's stays stable).
fn nightly(tool: &Path) -> anyhow::Result<Command> {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", "nightly", "cargo", "fuzz"]);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(crate::set_by_cargo_run) || name == "CARGO" {
            cmd.env_remove(name);
        }
    }
    // `cargo fuzz` is found on PATH: ours first.
    let bin = tool.parent().context("cargo-fuzz has no folder")?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(paths)?);
    cmd.env(
        "CARGO_TARGET_DIR",
        std::path::absolute(target_dir())?.join("fuzz-nightly"),
    );
    Ok(cmd)
}

/// cargo-fuzz [`CARGO_FUZZ_VERSION`] under `target/cargo-fuzz/bin`, installed when missing.
fn cargo_fuzz() -> anyhow::Result<PathBuf> {
    let root = std::path::absolute(target_dir())?.join("cargo-fuzz");
    let bin = root.join("bin").join("cargo-fuzz");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(CARGO_FUZZ_VERSION));
    if !installed {
        let mut install = cargo();
        install.args(["install", "--locked", "--root"]).arg(&root);
        install.arg(format!("cargo-fuzz@{CARGO_FUZZ_VERSION}"));
        // Its own build directory: the workspace's target directory is not locked meanwhile.
        install.env("CARGO_TARGET_DIR", root.join("build"));
        crate::step(
            &format!("cargo install cargo-fuzz@{CARGO_FUZZ_VERSION}"),
            install,
        )?;
    }
    Ok(bin)
}

/// Builds every target, then runs `chosen` for `seconds` each, one after the other; a crash
/// is minimised into `fuzz/regressions/<target>/` and fails the run once every target ran.
fn fuzz(chosen: &[String], seconds: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let has_nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_nightly {
        bail!(
            "the fuzz targets build on the nightly toolchain, which rustup does not have: \
             rustup toolchain install nightly --profile minimal"
        );
    }
    let tool = cargo_fuzz()?;
    // No sanitizer: the code under test is safe Rust; AddressSanitizer would slow the build
    // and every run, and coverage feedback does not need it.
    let mut build = nightly(&tool)?;
    build.args(["build", "--fuzz-dir", FUZZ_DIR, "-s", "none"]);
    crate::step("cargo +nightly fuzz build (fuzz/cargo-fuzz)", build)?;
    let work = std::path::absolute(target_dir())?;
    let mut rows = Vec::new();
    let mut crashed = Vec::new();
    for target in chosen {
        let corpus = work.join("fuzz-corpus").join(target);
        let artifacts = work.join("fuzz-artifacts").join(target);
        std::fs::create_dir_all(&corpus)?;
        let _ = std::fs::remove_dir_all(&artifacts);
        std::fs::create_dir_all(&artifacts)?;
        let mut run = nightly(&tool)?;
        run.args(["run", "--fuzz-dir", FUZZ_DIR, "-s", "none", target]);
        run.arg(&corpus).arg(Path::new("fuzz/seeds").join(target));
        run.arg("--");
        run.arg(format!("-max_total_time={seconds}"));
        run.arg(format!("-dict={}", dictionary(target)));
        run.arg(format!("-artifact_prefix={}/", artifacts.display()));
        run.args(["-print_final_stats=1", "-max_len=65536", "-timeout=10"]);
        eprintln!("xtask: fuzz {target} for {seconds} s");
        let out = run
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start cargo fuzz run {target}"))?;
        let text = String::from_utf8_lossy(&out.stderr);
        let s = stats(&text);
        if !out.status.success() {
            eprintln!("{}", tail(&text, 40));
            let kept = keep_crash(&tool, target, &artifacts)
                .with_context(|| format!("{target} crashed; keeping its input failed"))?;
            crashed.push(format!("{target}: {}", kept.display()));
        }
        rows.push((target.clone(), s, out.status.success()));
    }
    eprintln!("xtask: target                 executions      edges   corpus");
    for (target, s, ok) in &rows {
        eprintln!(
            "xtask: {target:<20} {:>12} {:>10} {:>8}{}",
            s.executions,
            s.edges,
            s.corpus,
            if *ok { "" } else { "  CRASH" }
        );
    }
    eprintln!(
        "xtask: fuzzed {} target(s) for {seconds} s each in {:.0?}",
        rows.len(),
        started.elapsed()
    );
    // A target that exited cleanly having run nothing (or whose statistics were not read)
    // measured nothing: that fails the command too.
    let idle: Vec<&str> = rows
        .iter()
        .filter(|(_, s, ok)| *ok && s.executions == 0)
        .map(|(target, _, _)| target.as_str())
        .collect();
    if !idle.is_empty() {
        bail!(
            "fuzz targets that ran no input (or printed no statistics): {}",
            idle.join(", ")
        );
    }
    if !crashed.is_empty() {
        bail!(
            "crash inputs, minimised and kept as regression tests (fix the bug, then commit them):\n{}",
            crashed.join("\n")
        );
    }
    Ok(())
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Minimises the crash input libFuzzer left in `artifacts` (`cargo fuzz tmin`) and copies it to
/// `fuzz/regressions/<target>/`, under its artifact's name; returns where.
fn keep_crash(tool: &Path, target: &str, artifacts: &Path) -> anyhow::Result<PathBuf> {
    let crash = std::fs::read_dir(artifacts)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            ["crash-", "timeout-", "oom-", "leak-", "slow-unit-"]
                .iter()
                .any(|k| name.starts_with(k))
        })
        .context("libFuzzer failed without leaving a crash input")?;
    let mut tmin = nightly(tool)?;
    tmin.args(["tmin", "--fuzz-dir", FUZZ_DIR, "-s", "none", target]);
    tmin.arg(&crash).args(["--", "-runs=20000"]);
    let _ = tmin.stdin(Stdio::null()).output();
    // tmin leaves `minimized-from-<hash>` beside the crash; without one, the crash as found.
    let minimised = std::fs::read_dir(artifacts)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("minimized-from-"))
        })
        .unwrap_or_else(|| crash.clone());
    let dir = Path::new("fuzz/regressions").join(target);
    std::fs::create_dir_all(&dir)?;
    let name = crash.file_name().context("a crash input has no name")?;
    let kept = dir.join(name);
    std::fs::copy(&minimised, &kept)?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_stats_give_executions_edges_and_corpus() {
        let output = "INFO: Seed: 1\n#2\tINITED cov: 120 ft: 130 corp: 5/1024b exec/s: 0\n\
                      #40000\tpulse  cov: 300 ft: 500 corp: 40/9Kb lim: 4096 exec/s: 20000\n\
                      #61234\tDONE   cov: 321 ft: 612 corp: 47/11Kb lim: 4096 exec/s: 20411\n\
                      Done 61234 runs in 3 second(s)\nstat::number_of_executed_units: 61234\n\
                      stat::average_exec_per_sec:     20411\n";
        assert_eq!(
            stats(output),
            Stats {
                executions: 61234,
                edges: 321,
                corpus: 47
            }
        );
    }

    #[test]
    fn every_target_family_has_its_dictionary() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let names = std::fs::read_dir(root.join(FUZZ_DIR).join("fuzz_targets")).unwrap();
        let mut seen = 0;
        for name in names {
            let name = name.unwrap().file_name().into_string().unwrap();
            let target = name.strip_suffix(".rs").unwrap();
            assert!(
                root.join(dictionary(target)).is_file(),
                "{target}: no {}",
                dictionary(target)
            );
            seen += 1;
        }
        assert!(seen > 0, "no cargo-fuzz target");
    }
}
