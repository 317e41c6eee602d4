//! Running the real `hermes` binary from the end-to-end tests (each test file includes this with
//! `#[path]`): a clean environment, then the test's own settings.

use std::path::Path;
use std::process::{Command, Output};

/// True for a variable of this machine that would change what hermes does: its own settings,
/// provider keys and endpoints, AWS and database credentials.
fn machine_setting(name: &str) -> bool {
    [
        "HERMES_",
        "AWS_",
        "OPENAI_",
        "GOOGLE_",
        "ANTHROPIC_",
        "GEMINI_",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || name.ends_with("_API_KEY")
        || name == "PGPASSWORD"
}

/// `hermes ARGS` with `home` as `HERMES_HOME`, no colour, none of the machine's settings, then
/// `env`.
pub(crate) fn hermes(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermes"));
    for (key, _) in std::env::vars_os() {
        if machine_setting(&key.to_string_lossy()) {
            cmd.env_remove(&key);
        }
    }
    cmd.args(args).env("HERMES_HOME", home).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `cmd` to the end off the async runtime (the simulators serve on it meanwhile).
pub(crate) async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}
