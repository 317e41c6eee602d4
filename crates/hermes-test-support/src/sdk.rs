//! Finding the Python with an official provider SDK installed (`HERMES_SDK_PYTHON`, made by
//! `cargo xtask ci` from `.ci/sdk-requirements.txt`), for the SDK-evidence tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

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
