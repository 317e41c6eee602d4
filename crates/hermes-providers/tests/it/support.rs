//! What several modules share: for the SDK-evidence modules (`sdk_bedrock`, `sdk_gemini`,
//! `sdk_responses`), running a script with the SDK's Python away from the machine's own provider
//! settings and reading a header of a request the loopback recorder
//! took; for the wire modules, a server that refuses once and then answers, a turn through the
//! turn driver for a one-refusal recovery, and a plain chat-completions request.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use hermes_core::driver::{Conversation, Driver, DriverConfig, DriverEvent, TurnOutcome};
use hermes_core::{Message, Role, RouteDecision, ThinkingRequest, Verdicts, Wire};
use hermes_providers::chat::ChatRequest;
use hermes_test_support::memory::{Log, NoTools};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// A command running `py` with none of the machine's settings for the provider: every variable
/// whose name (upper-cased) starts with one of `prefixes` or ends with `_PROXY` removed, no
/// bytecode written, UTF-8 standard streams, and no proxy for the loopback recorder.
pub(crate) fn python(py: &Path, prefixes: &[&str]) -> Command {
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
pub(crate) fn run(mut python: Command, script: &str, input: &str) -> (Option<i32>, String, String) {
    let mut child = python
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The value of header `name` of `request`, when it has one in visible ASCII.
pub(crate) fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Mounts on `server`, for POSTs to `at`: exactly one whose body contains `marker`, answered
/// 400 with `refusal`, and exactly one whose body does not, answered 200 with `reply` (JSON).
pub(crate) async fn refused_once(
    server: &MockServer,
    at: &str,
    marker: &'static str,
    refusal: &str,
    reply: &str,
) {
    Mock::given(method("POST"))
        .and(path(at))
        .and(move |r: &Request| String::from_utf8_lossy(&r.body).contains(marker))
        .respond_with(ResponseTemplate::new(400).set_body_raw(refusal, "application/json"))
        .expect(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(at))
        .and(move |r: &Request| !String::from_utf8_lossy(&r.body).contains(marker))
        .respond_with(ResponseTemplate::new(200).set_body_raw(reply, "application/json"))
        .expect(1)
        .mount(server)
        .await;
}

/// The user's turn "And now?" on `conversation`, on `wire` under `decision`, through the turn
/// driver set for a recovery test (no thinking preference, no backoff retry: a refusal is
/// answered by the wire's one-time recovery or not at all; tools never called): its outcome, the
/// driver's events (debug-printed) and the messages it stored.
pub(crate) async fn recovery_turn(
    decision: &RouteDecision,
    wire: &dyn Wire,
    conversation: &mut Conversation,
) -> (TurnOutcome, Vec<String>, Vec<Message>) {
    let log = Log::default();
    let mut config = DriverConfig::default();
    config.thinking = ThinkingRequest::NoPreference;
    config.max_backoff_retries = 0;
    let events = Mutex::new(Vec::new());
    let notify = |e: &DriverEvent| events.lock().unwrap().push(format!("{e:?}"));
    let driver = Driver {
        decision,
        wire,
        log: &log,
        tools: &NoTools,
        config: &config,
        notify: &notify,
    };
    let outcome = driver
        .run_turn(conversation, Message::text(Role::User, "And now?"))
        .await
        .unwrap();
    (
        outcome,
        events.into_inner().unwrap(),
        log.appended.into_inner().unwrap(),
    )
}

/// The chat-completions request for `history` under `decision`: no verdicts, no thinking
/// preference, streamed when `stream`.
pub(crate) fn chat_request<'a>(
    history: &'a [Message],
    decision: &'a RouteDecision,
    stream: bool,
) -> ChatRequest<'a> {
    let mut request = ChatRequest::build(
        history,
        decision,
        &Verdicts::default(),
        ThinkingRequest::NoPreference,
    );
    request.stream = stream;
    request
}
