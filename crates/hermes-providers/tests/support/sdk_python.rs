//! Finding the Python with an official provider SDK installed (`HERMES_SDK_PYTHON`, made by
//! `.ci/run` from `.ci/sdk-requirements.txt`), shared by the SDK-evidence tests of
//! hermes-providers and hermes-cli (each includes this file with `#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The SDK's Python, or `None` (after a skip note) when there is none and none is required:
/// `HERMES_SDK_PYTHON` when `probe` (a script importing `sdk` and printing its version) runs
/// there. `test` names the caller in the notes.
///
/// # Panics
/// When `HERMES_REQUIRE_SDK` is set and the SDK cannot be used: CI must fail, not skip.
pub(crate) fn sdk_python(test: &str, sdk: &str, probe: &str) -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let required =
                std::env::var_os("HERMES_REQUIRE_SDK").is_some_and(|v| !v.is_empty() && v != "0");
            let problem = match std::env::var_os("HERMES_SDK_PYTHON").filter(|p| !p.is_empty()) {
                None => "HERMES_SDK_PYTHON is not set".to_owned(),
                Some(python) => {
                    let python = PathBuf::from(python);
                    match Command::new(&python).args(["-c", probe]).output() {
                        Ok(out) if out.status.success() => {
                            eprintln!(
                                "{test}: {} ({})",
                                String::from_utf8_lossy(&out.stdout).trim(),
                                python.display()
                            );
                            return Some(python);
                        }
                        Ok(out) => format!(
                            "{} cannot import {sdk}: {}",
                            python.display(),
                            String::from_utf8_lossy(&out.stderr).trim()
                        ),
                        Err(err) => format!("cannot run {}: {err}", python.display()),
                    }
                }
            };
            assert!(
                !required,
                "HERMES_REQUIRE_SDK is set but {sdk} is unusable: {problem}. Run .ci/run, or \
                 make target/sdk-venv from .ci/sdk-requirements.txt and set HERMES_SDK_PYTHON \
                 to its python"
            );
            eprintln!(
                "{test}: SKIPPED: {problem} (set HERMES_SDK_PYTHON to a Python with \
                 .ci/sdk-requirements.txt installed; HERMES_REQUIRE_SDK=1 makes this an error)"
            );
            None
        })
        .as_deref()
}
