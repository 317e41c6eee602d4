//! LiteLLM's proxy for `cargo xtask bench serve --with-litellm`: installed from PyPI at a pinned
//! version into a venv under the target directory (never a dependency of anything), configured
//! as its production docs recommend and started in front of the bench's simulator.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::gateway::Process;
use crate::storage::BenchError;

/// The release installed: `litellm[proxy]` at exactly this version.
pub const VERSION: &str = "1.106.12";

/// The master key the proxy is given and the bench's requests send (the production docs ask
/// for one; it starts with `sk-`).
pub const MASTER_KEY: &str = "sk-hermes-bench-litellm-master";

/// How long the proxy may take to answer its liveliness probe after it started.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// Lines of the proxy's output kept to explain a failure.
const LOG_TAIL: usize = 30;

/// The proxy's `config.yaml`: one model entry, `model_name` as clients ask for it, sent as an
/// OpenAI-compatible chat-completions model to `upstream` with `upstream_key`; no database
/// (no `database_url`), the master key, no callbacks (success, failure or otherwise), message
/// logging and verbose output off, spend and error logs off.
pub fn config_yaml(model_name: &str, upstream: &str, upstream_key: &str) -> String {
    format!(
        "model_list:
  - model_name: {model_name}
    litellm_params:
      model: openai/{model_name}
      api_base: {upstream}
      api_key: {upstream_key}

litellm_settings:
  set_verbose: false
  json_logs: true
  turn_off_message_logging: true
  callbacks: []
  success_callback: []
  failure_callback: []
  request_timeout: 600

general_settings:
  master_key: {MASTER_KEY}
  disable_spend_logs: true
  disable_error_logs: true
"
    )
}

/// The venv's python, with `litellm[proxy]==VERSION` installed (made or repaired under
/// `venv`; an install that already has the version is kept). `Err` says why it could not be.
pub fn provision(venv: &Path) -> Result<PathBuf, String> {
    let venv = std::path::absolute(venv).map_err(|e| e.to_string())?;
    let python = venv.join("bin").join("python");
    let quiet = |cmd: &mut Command| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let installed = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('litellm'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if installed.as_deref() == Some(VERSION) && venv.join("bin").join("litellm").is_file() {
        return Ok(python);
    }
    if !quiet(Command::new(&python).args(["-c", "import sys"])) {
        let _ = std::fs::remove_dir_all(&venv);
        if !quiet(Command::new("python3").arg("-m").arg("venv").arg(&venv)) {
            return Err("`python3 -m venv` failed (is Python 3 with venv installed?)".into());
        }
    }
    eprintln!(
        "bench serve: installing litellm[proxy]=={VERSION} into {}",
        venv.display()
    );
    let out = Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .arg(format!("litellm[proxy]=={VERSION}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run pip: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(format!(
            "pip could not install litellm[proxy]=={VERSION}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(python)
}

/// A running LiteLLM proxy on loopback.
#[derive(Debug)]
pub struct Proxy {
    /// The `litellm` process (its workers are its descendants).
    pub process: Process,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its worker processes.
    pub workers: usize,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    /// Writes [`config_yaml`] in `dir` and starts `litellm --config … --host 127.0.0.1 --port P
    /// --num_workers workers` from the venv of `python`, with `LITELLM_LOG=ERROR` and telemetry
    /// off, then waits until `GET /health/liveliness` answers 200.
    pub fn start(
        python: &Path,
        dir: &Path,
        upstream: &str,
        model: &str,
        upstream_key: &str,
        workers: usize,
    ) -> Result<Proxy, BenchError> {
        std::fs::create_dir_all(dir)?;
        let config = dir.join("litellm-config.yaml");
        std::fs::write(&config, config_yaml(model, upstream, upstream_key))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let bin = python.with_file_name("litellm");
        let mut cmd = Command::new(&bin);
        cmd.arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--num_workers", &workers.to_string()])
            .args(["--telemetry", "False"])
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("LITELLM_LOG", "ERROR")
            .env("LITELLM_MODE", "PRODUCTION")
            .env("NO_PROXY", "*")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = Process::spawn(&mut cmd)?;
        let log = Arc::new(Mutex::new(Vec::new()));
        for pipe in [
            process
                .take_stdout()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            process
                .take_stderr()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let kept = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut log = kept.lock().unwrap_or_else(PoisonError::into_inner);
                    if log.len() == LOG_TAIL {
                        log.remove(0);
                    }
                    log.push(line);
                }
            });
        }
        let mut proxy = Proxy {
            process,
            base: format!("http://127.0.0.1:{port}"),
            workers,
            log,
        };
        let started = Instant::now();
        let probe = format!("127.0.0.1:{port}");
        loop {
            if proxy.process.exited() {
                return Err(format!(
                    "litellm ended before it served; its last lines:\n{}",
                    proxy.log_tail()
                )
                .into());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "litellm did not answer /health/liveliness within {} s; its last lines:\n{}",
                    READY_WITHIN.as_secs(),
                    proxy.log_tail()
                )
                .into());
            }
            if live(&probe) {
                return Ok(proxy);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines the proxy printed.
    pub fn log_tail(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }
}

/// Whether `GET /health/liveliness` at `addr` answers 200 (a plain HTTP/1.0 exchange on a
/// blocking socket: the probe needs no runtime).
fn live(addr: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /health/liveliness HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_has_one_openai_model_at_the_upstream_no_database_and_no_callbacks() {
        let yaml = config_yaml("deepseek-v4-pro", "http://127.0.0.1:4242", "sk-up");
        assert!(yaml.starts_with(
            "model_list:\n  - model_name: deepseek-v4-pro\n    litellm_params:\n      \
             model: openai/deepseek-v4-pro\n      api_base: http://127.0.0.1:4242\n      \
             api_key: sk-up\n"
        ));
        assert_eq!(yaml.matches("model_name:").count(), 1, "one model entry");
        assert!(!yaml.contains("database_url"), "no database");
        for off in [
            "  callbacks: []\n",
            "  success_callback: []\n",
            "  failure_callback: []\n",
            "  set_verbose: false\n",
            "  turn_off_message_logging: true\n",
            "  disable_spend_logs: true\n",
            "  disable_error_logs: true\n",
        ] {
            assert!(yaml.contains(off), "{off:?} missing from\n{yaml}");
        }
        assert!(yaml.contains(&format!("  master_key: {MASTER_KEY}\n")));
        // Every top-level key once, in the three sections LiteLLM reads.
        let top: Vec<&str> = yaml
            .lines()
            .filter(|l| !l.starts_with(' ') && !l.is_empty())
            .collect();
        assert_eq!(
            top,
            ["model_list:", "litellm_settings:", "general_settings:"]
        );
    }
}
