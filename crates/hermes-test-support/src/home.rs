//! Running the real `hermes` binary from end-to-end tests: a home of its own (`HERMES_HOME`, a
//! fresh temporary directory), none of the machine's settings, then the test's own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

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
        || name == "CLOUD_ML_REGION"
}

/// `bin ARGS` with `home` as `HERMES_HOME`, no colour, none of the machine's settings (keys,
/// endpoints, `HERMES_*`), then `env`.
pub fn command(bin: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin);
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

/// Runs `cmd` to the end on this thread with `input` as its stdin (then closed), its stdout and
/// stderr captured.
pub fn feed(mut cmd: Command, input: &[u8]) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Runs `cmd` to the end off the async runtime (simulators on the runtime serve meanwhile).
pub async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// Creates the SQLite file at `path` by running `script` (a fixture's SQL), then closes it
/// cleanly, as a program that wrote it would leave it.
pub async fn sqlite_from_script(path: &Path, script: &'static str) {
    use sqlx::ConnectOptions as _;
    use sqlx::Connection as _;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    let script = sqlx::raw_sql(sqlx::AssertSqlSafe(script));
    script.execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

/// A temporary hermes home and the binary run in it: every run gets this home as
/// `HERMES_HOME`, a clean environment (see [`command`]) and the home's own settings.
pub struct Home {
    dir: tempfile::TempDir,
    bin: PathBuf,
    env: Vec<(OsString, OsString)>,
}

impl Home {
    /// A fresh, empty home for the binary at `bin` (a test passes
    /// `env!("CARGO_BIN_EXE_hermes")`).
    pub fn new(bin: impl Into<PathBuf>) -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
            bin: bin.into(),
            env: Vec::new(),
        }
    }

    /// Every run of this home also gets `key=value` (before a run's own settings).
    #[must_use]
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Home {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Every run also gets this directory as `HOME` and no EC2 metadata lookups, so no real
    /// `~/.aws` (or any other dotfile) is read.
    #[must_use]
    pub fn own_home(self) -> Home {
        let dir = self.dir.path().as_os_str().to_owned();
        self.with_env("HOME", dir)
            .with_env("AWS_EC2_METADATA_DISABLED", "true")
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `state.db` in the home.
    pub fn db(&self) -> PathBuf {
        self.path().join("state.db")
    }

    /// The binary run in this home.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The command `hermes ARGS` in this home with `env` (not started).
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = command(&self.bin, self.path(), args, &[]);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs hermes to the end on this thread (for tests without a runtime).
    pub fn run_sync(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().unwrap()
    }

    /// Runs hermes off the async runtime (simulators on the runtime serve meanwhile).
    pub async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        output(self.command(args, env)).await
    }

    /// Runs hermes, expects success and returns (stdout, stderr).
    ///
    /// # Panics
    /// When hermes fails: the message has the arguments and stderr.
    pub async fn ok_with(&self, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
        let out = self.run(args, env).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        (String::from_utf8(out.stdout).unwrap(), stderr)
    }

    /// Runs hermes, expects success and returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[]).await.0
    }

    /// `chat --json ARGS` with `env`: the JSON summary and stderr.
    pub async fn chat_stderr(&self, args: &[&str], env: &[(&str, &str)]) -> (Value, String) {
        let mut all = vec!["chat", "--json"];
        all.extend_from_slice(args);
        let (stdout, stderr) = self.ok_with(&all, env).await;
        let summary = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("chat --json printed no JSON ({e}): {stdout}"));
        (summary, stderr)
    }

    /// `chat --json ARGS` with `env`: the JSON summary.
    pub async fn chat(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        self.chat_stderr(args, env).await.0
    }

    /// `chat --json ARGS` with `env`: the new (or resumed) session's id.
    pub async fn chat_id(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        self.chat(args, env).await["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("chat --json {args:?} named no session"))
            .to_owned()
    }

    /// `hermes sessions branch ID EXTRA` (`--at N`, say): the branch's id.
    pub async fn branch(&self, id: &str, extra: &[&str]) -> String {
        let args = [&["sessions", "branch", id][..], extra].concat();
        self.ok(&args).await.trim().to_owned()
    }

    /// `hermes sessions import FILE`: the imported session's id.
    pub async fn import(&self, file: &Path) -> String {
        let file = file.to_str().unwrap();
        self.ok(&["sessions", "import", file])
            .await
            .trim()
            .to_owned()
    }

    /// `hermes sessions export ID` as printed.
    pub async fn export_text(&self, id: &str) -> String {
        self.ok(&["sessions", "export", id]).await
    }

    /// `hermes sessions export ID`, parsed.
    pub async fn export(&self, id: &str) -> Value {
        serde_json::from_str(&self.export_text(id).await).unwrap()
    }

    /// A connection to the home's `state.db` (read its rows as they are stored).
    pub async fn sqlite(&self) -> sqlx::SqliteConnection {
        use sqlx::Connection as _;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(self.db());
        sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap()
    }
}
