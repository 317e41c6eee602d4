//! Finding the Python with an official provider SDK installed (`HERMES_SDK_PYTHON`, made by
//! `cargo xtask ci` from `.ci/sdk-requirements.txt`), for the SDK-evidence tests, and comparing
//! the body hermes sends with the SDK's ([`differences`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

use crate::skip;

/// The SDK's Python, or `None` when there is none and none is required (the calling test is
/// then recorded as skipped, see [`skip::skipped`]): `HERMES_SDK_PYTHON` when `probe` (a script
/// importing `sdk` and printing its version) runs there. Probed once per `sdk` and process.
///
/// # Panics
/// When `HERMES_REQUIRE_SDK` is set and the SDK cannot be used: CI must fail, not skip.
pub fn sdk_python(sdk: &str, probe: &str) -> Option<&'static Path> {
    static PROBED: Mutex<Vec<(String, Result<&'static Path, String>)>> = Mutex::new(Vec::new());
    let found = {
        let mut probed = PROBED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match probed.iter().find(|(name, _)| name == sdk) {
            Some((_, found)) => found.clone(),
            None => {
                let found = probe_python(sdk, probe);
                probed.push((sdk.to_owned(), found.clone()));
                found
            }
        }
    };
    match found {
        Ok(python) => Some(python),
        Err(problem) => {
            assert!(
                !skip::flag("HERMES_REQUIRE_SDK"),
                "HERMES_REQUIRE_SDK is set but {sdk} is unusable: {problem}. Run `cargo xtask \
                 ci`, or make a venv from .ci/sdk-requirements.txt and set HERMES_SDK_PYTHON to \
                 its python"
            );
            skip::skipped(
                skip::group::SDK,
                &format!(
                    "{problem} (set HERMES_SDK_PYTHON to a Python with .ci/sdk-requirements.txt \
                     installed; HERMES_REQUIRE_SDK=1 makes this an error)"
                ),
            );
            None
        }
    }
}

/// Runs `probe` with `HERMES_SDK_PYTHON`: that Python, or what is wrong with it.
fn probe_python(sdk: &str, probe: &str) -> Result<&'static Path, String> {
    let Some(python) = std::env::var_os("HERMES_SDK_PYTHON").filter(|p| !p.is_empty()) else {
        return Err("HERMES_SDK_PYTHON is not set".to_owned());
    };
    let python = PathBuf::from(python);
    match Command::new(&python).args(["-c", probe]).output() {
        Ok(out) if out.status.success() => {
            eprintln!(
                "{sdk}: {} ({})",
                String::from_utf8_lossy(&out.stdout).trim(),
                python.display()
            );
            Ok(Box::leak(python.into_boxed_path()))
        }
        Ok(out) => Err(format!(
            "{} cannot import {sdk}: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => Err(format!("cannot run {}: {err}", python.display())),
    }
}

/// `python` with none of the machine's variables starting with one of `prefixes` (an SDK's own
/// settings: `OPENAI_`, `AWS_`, …) and no proxy, loopback reached directly, UTF-8 output and no
/// bytecode written.
pub fn python(py: &Path, prefixes: &[&str]) -> Command {
    let mut cmd = Command::new(py);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy().to_ascii_uppercase();
        if prefixes.iter().any(|p| name.starts_with(p)) || name.ends_with("_PROXY") {
            cmd.env_remove(&key);
        }
    }
    cmd.env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .env("NO_PROXY", "127.0.0.1,localhost");
    cmd
}

/// Runs `script` with `python` (see [`python`]) and `input` on standard input: its exit code,
/// standard output and standard error.
pub fn run(
    mut python: Command,
    script: &str,
    input: &str,
) -> std::io::Result<(Option<i32>, String, String)> {
    let mut child = python
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Every way the body hermes sends (`ours`) differs from the one the SDK sends (`sdk`), one line
/// a difference naming its JSON path: a key the SDK sent that hermes lacks or sends otherwise
/// (objects key by key, order ignored; arrays item by item, order significant; scalars by JSON
/// value), or a key hermes sends that the SDK did not, which `extra` judges (its path and
/// value): `None` where it is allowed as it is, else what is wrong with it.
pub fn differences(
    ours: &Value,
    sdk: &Value,
    extra: &dyn Fn(&[String], &Value) -> Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    walk(ours, sdk, extra, &mut Vec::new(), &mut out);
    out
}

fn walk(
    ours: &Value,
    sdk: &Value,
    extra: &dyn Fn(&[String], &Value) -> Option<String>,
    path: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    let here = |path: &[String]| {
        if path.is_empty() {
            "(body)".to_owned()
        } else {
            path.join(".")
        }
    };
    match (ours, sdk) {
        (Value::Object(o), Value::Object(s)) => {
            for (key, sv) in s {
                path.push(key.clone());
                match o.get(key) {
                    Some(ov) => walk(ov, sv, extra, path, out),
                    None => out.push(format!("{}: the SDK sent {sv}, hermes did not", here(path))),
                }
                path.pop();
            }
            for (key, ov) in o.iter().filter(|(key, _)| !s.contains_key(*key)) {
                path.push(key.clone());
                if let Some(wrong) = extra(path, ov) {
                    out.push(format!("{}: {wrong}", here(path)));
                }
                path.pop();
            }
        }
        (Value::Array(o), Value::Array(s)) => {
            if o.len() != s.len() {
                let (ours, theirs) = (o.len(), s.len());
                out.push(format!(
                    "{}: hermes has {ours} items, the SDK {theirs}",
                    here(path)
                ));
            }
            for (i, (ov, sv)) in o.iter().zip(s).enumerate() {
                path.push(i.to_string());
                walk(ov, sv, extra, path, out);
                path.pop();
            }
        }
        _ if ours == sdk => {}
        _ => out.push(format!("{}: hermes {ours}, the SDK {sdk}", here(path))),
    }
}
