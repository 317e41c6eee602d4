//! The real agent programs (Claude Code, the AI SDK, the OpenAI Agents SDK, LangChain,
//! pydantic-ai) that `cargo xtask clients` installs, pinned, under `target/clients/`: finding them
//! ([`node_dir`], [`python`]), running one with a time bound ([`run`]), and recording a row of
//! the table xtask prints after the group ([`Row`]).
//!
//! Without them a test records itself as skipped ([`skip::group::CLIENTS`]), unless
//! `HERMES_REQUIRE_CLIENTS` is set: then it fails.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::skip;

/// The folder holding the npm clients' `node_modules` (`target/clients/node`).
pub const NODE_VAR: &str = "HERMES_CLIENTS_NODE";
/// The Python of the venv holding the Python clients (`target/clients/venv/bin/python`).
pub const PYTHON_VAR: &str = "HERMES_CLIENTS_PYTHON";
/// Set (not empty, not `0`): a client that cannot be found fails its test instead of skipping.
pub const REQUIRE_VAR: &str = "HERMES_REQUIRE_CLIENTS";
/// The file each run appends its table row to (tab-separated; see [`Row`]).
pub const TABLE_VAR: &str = "HERMES_CLIENTS_TABLE";

/// The folder `HERMES_CLIENTS_NODE` names, when it holds `node_modules`; else `None`, the test
/// recorded as skipped.
///
/// # Panics
/// When `HERMES_REQUIRE_CLIENTS` is set and there is no such folder.
pub fn node_dir() -> Option<PathBuf> {
    found(
        NODE_VAR,
        |p| p.join("node_modules").is_dir(),
        "holds no node_modules",
    )
}

/// The Python `HERMES_CLIENTS_PYTHON` names, when it exists; else `None`, the test recorded as
/// skipped.
///
/// # Panics
/// When `HERMES_REQUIRE_CLIENTS` is set and there is no such file.
pub fn python() -> Option<PathBuf> {
    found(PYTHON_VAR, |p| p.is_file(), "is no file")
}

fn found(var: &str, usable: impl Fn(&Path) -> bool, not: &str) -> Option<PathBuf> {
    let problem = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        None => format!("{var} is not set"),
        Some(path) if usable(Path::new(&path)) => return Some(PathBuf::from(path)),
        Some(path) => format!("{var}={} {not}", Path::new(&path).display()),
    };
    assert!(
        !skip::flag(REQUIRE_VAR),
        "{REQUIRE_VAR} is set but {problem}: run `cargo xtask clients`"
    );
    skip::skipped(
        skip::group::CLIENTS,
        &format!("{problem} (`cargo xtask clients` installs the clients and sets it)"),
    );
    None
}

/// The `version` field of `node_modules/<package>/package.json` under `node_dir`.
///
/// # Panics
/// When the package is not installed there.
pub fn npm_version(node_dir: &Path, package: &str) -> String {
    let manifest = node_dir
        .join("node_modules")
        .join(package)
        .join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["version"].as_str().unwrap().to_owned()
}

/// What a client run ended with: exit code (none: killed, e.g. at the time bound), standard
/// output, standard error.
#[derive(Debug)]
pub struct Ran {
    /// The exit code; `None` when it was killed.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `cmd` with `input` on standard input; killed when it runs longer than `limit`.
///
/// # Panics
/// When it cannot be started.
pub fn run(mut cmd: Command, input: &str, limit: Duration) -> Ran {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    let input = input.to_owned();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let reader = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let stdout = reader(Box::new(child.stdout.take().unwrap()));
    let stderr = reader(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    Ran {
        code,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// One row of the clients table: recorded when dropped, with `ok` when the test got there
/// without failing and `FAILED` while it unwinds from a failed assertion, so a failing run is
/// in the table too. Appended to the file `HERMES_CLIENTS_TABLE` names, when set, as one line
/// of tab-separated fields: client, version, door, model, upstream, requests, accepted, result.
#[derive(Debug)]
pub struct Row {
    /// The program, e.g. `AI SDK (@ai-sdk/openai .chat())`.
    pub client: String,
    /// Its pinned version(s).
    pub version: String,
    /// The gateway door it spoke to (`/v1/chat/completions`, `/v1/messages`).
    pub door: String,
    /// The model name it sent.
    pub model: String,
    /// The simulator standing in for the upstream.
    pub upstream: String,
    /// How many requests the upstream got.
    pub requests: usize,
    /// How many of them it accepted (200).
    pub accepted: usize,
}

impl Row {
    /// The row of `client` speaking to the gateway's `door` with `model`; the version, upstream
    /// and counts filled in as the test learns them.
    pub fn new(client: impl Into<String>, door: &str, model: &str) -> Row {
        Row {
            client: client.into(),
            version: String::new(),
            door: door.to_owned(),
            model: model.to_owned(),
            upstream: String::new(),
            requests: 0,
            accepted: 0,
        }
    }
}

/// The table's header line (tab-separated, as the rows).
pub const HEADER: &str = "client\tversion\tdoor\tmodel\tupstream\trequests\taccepted\tresult";

impl Drop for Row {
    fn drop(&mut self) {
        let result = if std::thread::panicking() {
            "FAILED"
        } else {
            "ok"
        };
        let line = format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{result}\n",
            self.client,
            self.version,
            self.door,
            self.model,
            self.upstream,
            self.requests,
            self.accepted
        );
        eprint!("clients table row: {line}");
        let Some(path) = std::env::var_os(TABLE_VAR).filter(|p| !p.is_empty()) else {
            return;
        };
        // One short write with O_APPEND: rows of tests running in parallel never interleave.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
    }
}
