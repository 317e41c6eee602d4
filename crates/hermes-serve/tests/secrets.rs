//! A planted upstream key never leaves the gateway: not in a response (whole, streamed, or an
//! error — even when the upstream echoes the key back in its refusal), not in a log line, not in
//! a stored row; a provider's key missing where the gateway runs is one log line naming its
//! variable. Its own test binary: the tracing subscriber that captures every log line is
//! process-wide (installed once, by [`captured`]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use hermes_engine::store::Store;
use hermes_engine::{Defaults, Engine, ProviderDefaults, Settings};
use hermes_serve::{Auth, Gateway, ServeConfig};
use hermes_sim::Sim;
use serde_json::json;

const PLANTED: &str = "sk-PLANTED-7f3a9c1e5b2d4f6a8c0e";

/// Every log line of this process, at every level.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every log line of this process from the first call on (the subscriber is installed then).
fn captured() -> Lines {
    static LINES: std::sync::OnceLock<Lines> = std::sync::OnceLock::new();
    LINES
        .get_or_init(|| {
            let lines = Lines::default();
            let writer = lines.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            lines
        })
        .clone()
}

/// A gateway with DeepSeek at `deepseek` and OpenAI at `openai`, both keyed with [`PLANTED`];
/// every other provider's key variable is unset.
async fn gateway(deepseek: &str, openai: &str, dir: &std::path::Path) -> (String, Store) {
    let store = Store::open(&dir.join("state.db")).await.unwrap();
    let mut defaults = Defaults::default();
    for (provider, url) in [("deepseek", deepseek), ("openai", openai)] {
        defaults.providers.insert(
            provider.into(),
            ProviderDefaults::new(Some(url.to_owned()), None, None, false),
        );
    }
    let engine = Engine::builtin().with_store(
        store.clone(),
        Settings::new(
            defaults,
            Arc::new(|var: &str| {
                ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"]
                    .contains(&var)
                    .then(|| PLANTED.to_owned())
            }),
        ),
    );
    let gateway = Gateway::new(engine, ServeConfig::new(Auth::None)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { gateway.serve(listener, std::future::pending()).await });
    (format!("http://{addr}/v1/chat/completions"), store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_upstream_key_is_in_no_response_log_line_or_stored_row() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lines = captured();

    let sim = Sim::start("deepseek-v4").await.unwrap();
    // An upstream that refuses the key and echoes it back, as some providers do.
    let echo = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": format!("Incorrect API key provided: {PLANTED}"), "code": "invalid_api_key"}
        })))
        .mount(&echo)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (url, _store) = gateway(&sim.base_url(), &echo.uri(), dir.path()).await;
    let client = reqwest::Client::new();
    let mut seen = String::new();
    for (model, stream) in [
        ("deepseek/deepseek-v4-pro", false),
        ("deepseek/deepseek-v4-pro", true),
        ("openai/gpt-5", false),
        ("openai/gpt-5", true),
    ] {
        let response = client
            .post(&url)
            .json(&json!({"model": model, "stream": stream,
                          "messages": [{"role": "user", "content": "hello"}]}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        for (name, value) in response.headers() {
            seen.push_str(&format!("{name}: {value:?}\n"));
        }
        let body = response.text().await.unwrap();
        assert!(
            status.is_success() || status.as_u16() == 502,
            "{model} {stream}: {status} {body}"
        );
        seen.push_str(&body);
    }
    // The key did reach the upstreams (it was used), and went nowhere else.
    assert!(!sim.requests().is_empty());
    assert!(!echo.received_requests().await.unwrap().is_empty());
    assert!(!seen.contains(PLANTED), "a response holds the key: {seen}");
    assert!(
        seen.contains("Incorrect API key provided"),
        "the refusal is reported: {seen}"
    );
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    assert!(!logged.is_empty());
    let leaking: Vec<&str> = logged.lines().filter(|l| l.contains(PLANTED)).collect();
    assert!(leaking.is_empty(), "log lines hold the key: {leaking:#?}");
    // Every file of the database (its write-ahead log included).
    for file in std::fs::read_dir(dir.path()).unwrap() {
        let path = file.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(PLANTED),
            "{} holds the key",
            path.display()
        );
    }
}

/// A provider whose key variable is unset where the gateway runs: the refusal (500, before any
/// upstream request) is logged once, as an error naming the variable the operator must set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_upstream_key_is_one_error_line_naming_its_variable() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lines = captured();
    let dir = tempfile::tempdir().unwrap();
    let (url, _store) = gateway("http://127.0.0.1:9", "http://127.0.0.1:9", dir.path()).await;
    let response = reqwest::Client::new()
        .post(&url)
        .json(&json!({"model": "mistral/mistral-large-latest",
                      "messages": [{"role": "user", "content": "hello"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("MISTRAL_API_KEY"), "{body}");
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    let naming: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("MISTRAL_API_KEY"))
        .collect();
    assert_eq!(naming.len(), 1, "one line names the variable: {naming:#?}");
    assert!(naming[0].contains("ERROR"), "{}", naming[0]);
    assert!(
        naming[0].contains("nothing was sent upstream"),
        "{}",
        naming[0]
    );
}

/// A request the tenant's policy refuses (issue 47) is one `request refused` line with its
/// status and reason, and reaches no upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_refusal_is_one_request_refused_line_with_its_reason() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let lines = captured();
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (url, _store) = gateway(&sim.base_url(), "http://127.0.0.1:9", dir.path()).await;
    let response = reqwest::Client::new()
        .post(&url)
        .json(
            &json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 128_001,
                      "messages": [{"role": "user", "content": "hello"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let logged = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    let refused: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("request refused") && l.contains(&id))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    for said in ["403", "max_tokens_cap", "local", "deepseek/deepseek-v4-pro"] {
        assert!(refused[0].contains(said), "{said}: {}", refused[0]);
    }
    assert!(sim.requests().is_empty());
}
