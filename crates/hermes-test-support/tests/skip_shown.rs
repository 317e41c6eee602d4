//! A skipped test is seen in a plain `cargo test`: its `SKIPPED` line reaches the test
//! binary's stderr past libtest's capture, without `--nocapture` and without xtask's skip log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_test_support::skip;

/// Set for the child run: the probe then skips.
const PROBE_VAR: &str = "HERMES_SKIP_PROBE";

/// Skips when the parent test runs it (alone, in a child process); passes on its own otherwise.
#[test]
fn skip_probe() {
    if std::env::var_os(PROBE_VAR).is_some() {
        skip::skipped(skip::group::POSTGRES, "a probe without a server");
    }
}

#[test]
fn a_skipped_test_is_a_line_in_plain_cargo_test_output() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "skip_probe", "--test-threads=1"])
        .env(PROBE_VAR, "1")
        .env_remove(skip::LOG_VAR)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed"), "{stdout}");
    assert!(
        stderr.contains("SKIPPED #1 in this test binary (postgres): skip_probe passed without checking anything: a probe without a server"),
        "the skip is not in the output a plain `cargo test` shows: stdout {stdout:?}, stderr {stderr:?}"
    );
}
