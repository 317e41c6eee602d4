//! What the test modules share: the `hermes` binary under test, run in a home of its own with a
//! clean environment (`hermes_test_support::home`), a simulator beside it, the command lines
//! every wire test builds (a target, a chat), and what they read back (a session id, JSON on
//! stdout, a store's rows).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hermes_sim::Sim;
use hermes_test_support::home::Home;
use serde_json::Value;

/// The binary under test.
pub(crate) fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hermes"))
}

/// A fresh, empty home for the binary under test.
pub(crate) fn home() -> Home {
    Home::new(bin())
}

/// A fresh home that is also `HOME` (no real `~/.aws` or other dotfile is read, no EC2 metadata
/// lookups).
pub(crate) fn own_home() -> Home {
    home().own_home()
}

/// A simulator of `profile`, a fresh home and the simulator's base URL: how a test against one
/// simulator starts.
pub(crate) async fn sim_home(profile: &str) -> (Sim, Home, String) {
    let sim = Sim::start(profile).await.unwrap();
    let base = sim.base_url();
    (sim, home(), base)
}

/// As [`sim_home`], the home also `HOME` (see [`own_home`]).
pub(crate) async fn sim_own_home(profile: &str) -> (Sim, Home, String) {
    let (sim, _, base) = sim_home(profile).await;
    (sim, own_home(), base)
}

/// `--provider PROVIDER --model MODEL --base-url BASE`, then `rest`: a target as `Home::chat`
/// takes it (`chat --json` comes first there).
pub(crate) fn target<'a>(
    provider: &'a str,
    model: &'a str,
    base: &'a str,
    rest: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec!["--provider", provider, "--model", model, "--base-url", base];
    args.extend_from_slice(rest);
    args
}

/// `chat ARGS`: a whole command line.
pub(crate) fn chat_cmd<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [&["chat"][..], args].concat()
}

/// `chat` on a provider of the user's own (`custom`, model `m`) at `base`, with `rest`.
pub(crate) fn custom_chat<'a>(base: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    chat_cmd(&target("custom", "m", base, rest))
}

/// The DeepSeek route at `base` (`deepseek-v4-pro`), then `rest`: see [`target`].
pub(crate) fn deepseek_at<'a>(base: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    target("deepseek", "deepseek-v4-pro", base, rest)
}

/// The session id of a finished `chat --json` run; it must have succeeded.
pub(crate) fn chat_session_id(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `hermes ARGS` with `home` as `HERMES_HOME`, a clean environment, then `env` (not started).
pub(crate) fn command(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    hermes_test_support::home::command(bin(), home, args, env)
}

/// `hermes ARGS` in `home` with nothing of this machine's environment, not even `PATH`: only
/// what [`command`] sets (`HERMES_HOME`, `NO_COLOR`) and `env`.
pub(crate) fn bare_command(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = command(home, args, env);
    let set: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    cmd.env_clear().envs(set);
    cmd
}

/// `hermes chat --provider sim --base-url sim://PROFILE --effort high -q "[tools=2] time?"` in
/// `home` with no environment at all ([`bare_command`]): it must succeed and say it is done after
/// two tool steps. Returns stdout and the new session's id.
pub(crate) async fn offline_tool_loop(home: &Home, profile: &str) -> (String, String) {
    let base = format!("sim://{profile}");
    let cmd = bare_command(
        home.path(),
        &[
            "chat",
            "--provider",
            "sim",
            "--base-url",
            &base,
            "--effort",
            "high",
            "-q",
            "[tools=2] time?",
        ],
        &[],
    );
    let out = hermes_test_support::home::output(cmd).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("Done after 2 tool"), "{stdout}");
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("hermes: session "))
        .unwrap()
        .trim()
        .to_owned();
    (stdout, id)
}

/// The stdout of a finished run, parsed as JSON; the run (`what`) must have succeeded.
pub(crate) fn success_json(out: &Output, what: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {stderr}"))
}

/// The lines of `text` that contain `needle`.
pub(crate) fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// Every regular file under `dir`, at any depth.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.extend(files_under(&entry.path()));
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    out
}

/// The assistant messages of a request body or an export (its `messages`), in order.
pub(crate) fn assistants(body: &Value) -> impl Iterator<Item = &Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
}

/// The rows `sql` selects from the home's `state.db`, with `id` (a session id) bound to its one
/// parameter when given.
pub(crate) async fn rows<T>(home: &Home, sql: &'static str, id: Option<&str>) -> Vec<T>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + Send + Unpin,
{
    use sqlx::Connection as _;
    let mut conn = home.sqlite().await;
    let mut query = sqlx::query_as::<_, T>(sql);
    if let Some(id) = id {
        query = query.bind(id);
    }
    let rows = query.fetch_all(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    rows
}

/// After a first turn (`first`, its requests) that asked for no provider compaction: writes
/// `[compaction] provider_threshold` into `home`'s config, a threshold the next turn's first
/// request crosses (the simulator counts a quarter of the body's bytes) and its later requests,
/// which start at the compaction, do not; returns it.
pub(crate) fn provider_threshold_after(
    home: &Home,
    first: &[hermes_sim::RecordedRequest],
) -> usize {
    assert!(
        first
            .iter()
            .all(|r| r.body.get("context_management").is_none())
    );
    let threshold = first.last().unwrap().raw.len() / 4 + 8;
    std::fs::write(
        home.path().join("config.toml"),
        format!("[compaction]\nprovider_threshold = {threshold}\n"),
    )
    .unwrap();
    threshold
}

/// `hermes sessions compact ID` with `env`, the simulator's log cleared first: the status line
/// and the requests the compaction made.
pub(crate) async fn compact(
    sim: &Sim,
    home: &Home,
    id: &str,
    env: &[(&str, &str)],
) -> (String, Vec<hermes_sim::RecordedRequest>) {
    sim.clear_requests();
    let status = home.ok_with(&["sessions", "compact", id], env).await.0;
    (status, sim.requests())
}
