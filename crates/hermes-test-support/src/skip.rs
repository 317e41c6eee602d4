//! Recording a test that skipped, so `cargo xtask ci` reports it as skipped (a count per group)
//! instead of letting it pass as if it had checked something.
//!
//! libtest has no "skipped" outcome: a test that cannot run returns early and passes. Each such
//! test calls [`skipped`], which says so on stderr and, when `HERMES_SKIP_LOG` names a file
//! (xtask sets it), appends one line `GROUP<TAB>TEST` there. xtask counts the lines per group.
//!
//! In a plain `cargo test` (no skip log) the line goes to the process's stderr itself, past
//! libtest's capture (which takes only `eprintln!`'s output, and shows it only for a failed
//! test): every skipped test is one `SKIPPED` line in the run's output, numbered per test
//! binary, so "N passed" never hides that some checked nothing.

use std::io::Write as _;

/// The variable naming the file skip records are appended to.
pub const LOG_VAR: &str = "HERMES_SKIP_LOG";

/// Test groups that can skip, as xtask names them in its summary.
pub mod group {
    /// Tests against a real PostgreSQL server (`HERMES_TEST_PG_URL`).
    pub const POSTGRES: &str = "postgres";
    /// Tests validating request bodies with the official provider SDKs (`HERMES_SDK_PYTHON`).
    pub const SDK: &str = "sdk";
    /// Tests running the real agent programs (`HERMES_CLIENTS_NODE`, `HERMES_CLIENTS_PYTHON`).
    pub const CLIENTS: &str = "clients";
    /// The inspector's test in a real browser (`HERMES_BROWSER_NODE`, Debian's chromium).
    pub const BROWSER: &str = "browser";
}

/// Tests of this process recorded as skipped so far.
static SKIPPED_HERE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The line a plain `cargo test` shows for a skipped test: numbered in its test binary, with
/// why and how `cargo xtask ci` runs it.
fn loud_line(group: &str, test: &str, why: &str) -> String {
    let n = SKIPPED_HERE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    format!(
        "SKIPPED #{n} in this test binary ({group}): {test} passed without checking anything: {why} (`cargo xtask ci` provisions it and sums up the skips)\n"
    )
}

/// True when `var` is set to something other than empty or `0` (the `HERMES_REQUIRE_*` flags).
pub fn flag(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Records that the running test skipped its checks (`group`, `why`): one stderr line, and one
/// line in the `HERMES_SKIP_LOG` file when it is set. The test is named by its thread, which
/// libtest names after the test.
///
/// # Panics
/// When the skip log is set but cannot be written: a skip must never pass unseen.
pub fn skipped(group: &str, why: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("unnamed test");
    eprintln!("{test}: SKIPPED ({group}): {why}");
    let Some(path) = std::env::var_os(LOG_VAR).filter(|p| !p.is_empty()) else {
        // A plain `cargo test`: past libtest's capture, one line cargo shows.
        let _ = std::io::stderr().write_all(loud_line(group, test, why).as_bytes());
        return;
    };
    // One short write with O_APPEND: lines from tests running in parallel never interleave.
    let line = format!("{group}\t{test}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(err) = written {
        panic!(
            "cannot record a skipped test in {}: {err}",
            std::path::Path::new(&path).display()
        );
    }
}
