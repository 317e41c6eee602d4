//! Keys only where the user sent them, conversations never re-sent to another host, a private
//! home, and another program's `state.db` left untouched — through the real binary against
//! loopback servers that record every request.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hermes_test_support::home::Home;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const PLANTED: &str = "sk-planted-key-2f9c41d7e08b";

fn hermes(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    crate::support::command(home, args, env)
}

/// Runs hermes off the async runtime (the loopback servers serve meanwhile).
async fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    hermes_test_support::home::output(hermes(home, args, env)).await
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn completion(text: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "model": "gpt-5",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
}

async fn provider() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("hello")))
        .mount(&server)
        .await;
    server
}

fn import(home: &Path, file: Value) -> String {
    let path = home.join("import.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let out = hermes(home, &["sessions", "import", path.to_str().unwrap()], &[])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A new home holding an imported two-message OpenAI session whose stored base URL is a mock
/// provider answering chat completions: the provider, the home, the base URL and the id.
async fn import_openai_session() -> (MockServer, Home, String, String) {
    let server = provider().await;
    let home = crate::support::home();
    let base = format!("{}/v1", server.uri());
    let id = import(
        home.path(),
        json!({"format": "hermes.session.v1", "provider": "openai", "model": "gpt-5", "base_url": base,
               "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}),
    );
    (server, home, base, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_base_url_gets_no_key_until_the_user_names_it() {
    let (server, home, base, id) = import_openai_session().await;
    let key = [("OPENAI_API_KEY", PLANTED)];

    let out = run(
        home.path(),
        &["chat", "--resume", &id, "--no-stream", "-q", "hi"],
        &key,
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("did not come from you"), "{err}");
    assert!(
        err.contains(&format!(
            "run again as: hermes chat --resume {id} --base-url {base}"
        )),
        "{err}"
    );
    assert!(
        err.contains("OPENAI_API_KEY") && !err.contains(PLANTED),
        "{err}"
    );
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "nothing reached the imported URL"
    );

    // Named on the command line: the key goes there, and the session remembers it.
    let out = run(
        home.path(),
        &[
            "chat",
            "--resume",
            &id,
            "--base-url",
            &base,
            "--no-stream",
            "-q",
            "hi",
        ],
        &key,
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(
        home.path(),
        &["chat", "--resume", &id, "--no-stream", "-q", "again"],
        &key,
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request
                .headers
                .get("authorization")
                .unwrap()
                .to_str()
                .unwrap(),
            format!("Bearer {PLANTED}")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_a_public_host_gets_no_key_without_the_opt_in() {
    let home = crate::support::home();
    // 203.0.113.0/24 is a documentation range: public, never reached (refused before sending).
    let out = run(
        home.path(),
        &crate::support::chat_cmd(&crate::support::target(
            "openai",
            "gpt-5",
            "http://203.0.113.7/v1",
            &["--no-stream", "-q", "hi"],
        )),
        &[("OPENAI_API_KEY", PLANTED)],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("http://203.0.113.7/v1 is plain http"), "{err}");
    assert!(
        err.contains(
            "run again as: hermes chat --provider openai --model gpt-5 --base-url http://203.0.113.7/v1 --allow-insecure-http"
        ),
        "{err}"
    );
    assert!(!err.contains(PLANTED), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_an_imported_session_names_a_command_line_it_accepts() {
    let (server, home, base, id) = import_openai_session().await;
    let key = [("OPENAI_API_KEY", PLANTED)];

    let out = run(home.path(), &["sessions", "compact", &id], &key).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let line = format!("hermes sessions compact {id} --base-url {base}");
    assert!(err.contains(&format!("run again as: {line}")), "{err}");
    assert!(!err.contains(PLANTED), "{err}");
    assert!(server.received_requests().await.unwrap().is_empty());

    // The command line the error names is accepted and confirms the URL.
    let args: Vec<&str> = line.split(' ').skip(1).collect();
    let out = run(home.path(), &args, &key).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(PLANTED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_host_is_not_followed() {
    let elsewhere = provider().await;
    let first = MockServer::start().await;
    // `localhost` is another host name than the 127.0.0.1 the request went to.
    let target = format!(
        "http://localhost:{}/v1/chat/completions",
        elsewhere.address().port()
    );
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", target.as_str()))
        .mount(&first)
        .await;
    let home = crate::support::home();
    let base = format!("{}/v1", first.uri());
    let out = run(
        home.path(),
        &crate::support::custom_chat(&base, &["--no-stream", "-q", "hi"]),
        &[("HERMES_API_KEY", PLANTED)],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("HTTP 307 redirecting to {target}")),
        "{err}"
    );
    assert!(elsewhere.received_requests().await.unwrap().is_empty());
    assert_eq!(
        first.received_requests().await.unwrap().len(),
        1,
        "no retry"
    );
    let out = run(home.path(), &["sessions", "list", "--json"], &[]).await;
    let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stored: i64 = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["message_count"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(
        stored, 0,
        "no reply from another host is stored: {sessions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_on_the_same_host_keeps_the_request() {
    let server = provider().await;
    let moved = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/old/chat/completions"))
        .respond_with(ResponseTemplate::new(308).insert_header("location", "/v1/chat/completions"))
        .mount(&moved)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("moved")))
        .mount(&moved)
        .await;
    drop(server);
    let home = crate::support::home();
    let base = format!("{}/old", moved.uri());
    let out = run(
        home.path(),
        &crate::support::custom_chat(&base, &["--no-stream", "-q", "hi"]),
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "moved");
    let requests = moved.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the body went along unchanged"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_home_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("fresh-home");
    // hermes started by `sh` after `umask 022`, in the same clean environment as every run.
    let bin = crate::support::bin().to_str().unwrap();
    let cmd = hermes_test_support::home::command(
        Path::new("sh"),
        &home,
        &[
            "-c",
            "umask 022 && exec \"$0\" \"$@\"",
            bin,
            "chat",
            "--provider",
            "sim",
            "-q",
            "hi",
        ],
        &[],
    );
    let out = hermes_test_support::home::output(cmd).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home), 0o700, "the home");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![home.clone()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                assert_eq!(mode(&p), 0o700, "{}", p.display());
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n == "state.db"), "{names:?}");
    assert!(
        names.iter().any(|n| n.ends_with(".jsonl")),
        "a log file: {names:?}"
    );
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
}

/// The Python original's `state.db` (docs/spec.md §9), written and closed as it would leave it.
async fn python_original_db(path: &Path) {
    let script = include_str!("../../../hermes-store/tests/fixtures/python_original.sql");
    hermes_test_support::home::sqlite_from_script(path, script).await;
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_originals_state_db_is_left_byte_identical() {
    let home = crate::support::home();
    let state = home.path().join("state.db");
    python_original_db(&state).await;
    let before = std::fs::read(&state).unwrap();
    assert!(
        !listing(home.path())
            .iter()
            .any(|n| n.starts_with("state.db-"))
    );

    let out = run(home.path(), &["chat", "--provider", "sim", "-q", "hi"], &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).trim().is_empty(),
        "the chat worked"
    );
    let err = stderr(&out);
    let own = home.path().join("hermes.db");
    assert!(
        err.contains(&format!("keeps its own sessions in {}", own.display())),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&state).unwrap(),
        before,
        "not one byte changed"
    );
    let names = listing(home.path());
    assert!(
        !names.iter().any(|n| n.starts_with("state.db-")),
        "no -wal or -shm beside it: {names:?}"
    );
    assert!(names.iter().any(|n| n == "hermes.db"), "{names:?}");

    // The session is in hermes' own database; the notice is said once.
    let out = run(home.path(), &["sessions", "list", "--json"], &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions}");
    assert!(
        !stderr(&out).contains("leaves it untouched"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&state).unwrap(), before);
}
