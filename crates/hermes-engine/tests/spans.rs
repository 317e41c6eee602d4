//! A server's logs and traces can follow one request: opening a session, each turn (with the
//! session id and a request id), each upstream request inside it and the lease renewer are
//! `tracing` spans with those fields.
//!
//! A test binary of its own (the crate's other integration tests are `tests/it`): tracing caches
//! whether a callsite is enabled process-wide, so tests running beside this one on other
//! threads, with no subscriber, could leave a span callsite disabled while this test's
//! subscriber wants it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use hermes_engine::store::Store;
use hermes_engine::{
    ChatSession, Choice, Defaults, Engine, OpenOptions, ProviderDefaults, Settings, Toolset,
};
use hermes_sim::Sim;
use serde_json::Value;
use tracing_subscriber::fmt::format::FmtSpan;

/// Log lines written into memory.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// Records of this thread's spans, until the returned guard is dropped.
    fn capture() -> (Lines, tracing::subscriber::DefaultGuard) {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_span_events(FmtSpan::CLOSE)
            .with_span_list(true)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        (lines, guard)
    }

    /// Every span-close record: (span name, its fields, its parents' names).
    fn closed(&self) -> Vec<(String, Value, Vec<String>)> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|v| v["fields"]["message"] == "close")
            .map(|v| {
                let parents = v["spans"]
                    .as_array()
                    .map(|spans| {
                        spans
                            .iter()
                            .map(|s| s["name"].as_str().unwrap_or_default().to_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                (
                    v["span"]["name"].as_str().unwrap().to_owned(),
                    v["span"].clone(),
                    parents,
                )
            })
            .collect()
    }
}

#[tokio::test]
async fn open_turn_upstream_requests_and_the_lease_renewer_are_spans_with_their_ids() {
    let (lines, _capture) = Lines::capture();

    let sim = Sim::start("deepseek-v4").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let mut defaults = Defaults::default();
    defaults.providers.insert(
        "deepseek".into(),
        ProviderDefaults::new(Some(sim.base_url()), None, None, false),
    );
    let options =
        OpenOptions::new(Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None)).settings(
            Settings::new(defaults, Arc::new(|_| Some("sk-test".to_owned()))),
        );
    let engine = Engine::builtin();
    let mut chat = ChatSession::open(&engine, store, options, Toolset::none())
        .await
        .unwrap();
    chat.turn("[tools=1] hello", &|_| {}).await.unwrap();
    let id = chat.id().unwrap().to_owned();
    chat.turn("again", &|_| {}).await.unwrap();
    chat.close().await.unwrap();

    // A span closes when its last handle goes; under load a retried request's first attempt
    // may let go of its turn's span a moment after the turn returned.
    let mut closed = lines.closed();
    for _ in 0..100 {
        if closed
            .iter()
            .filter(|(n, _, _)| n == "session_turn")
            .count()
            >= 2
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        closed = lines.closed();
    }
    let named = |name: &str| -> Vec<&(String, Value, Vec<String>)> {
        closed.iter().filter(|(n, _, _)| n == name).collect()
    };
    assert_eq!(named("session_open").len(), 1, "{closed:?}");
    let turns = named("session_turn");
    assert_eq!(turns.len(), 2, "{closed:?}");
    let mut request_ids = Vec::new();
    for (_, fields, _) in &turns {
        // A new session's id is recorded once its first step created it.
        assert_eq!(fields["session"], id.as_str(), "{fields}");
        assert_eq!(fields["provider"], "deepseek");
        assert_eq!(fields["model"], "deepseek-v4-pro");
        let request_id = fields["request_id"].as_str().unwrap().to_owned();
        assert_eq!(request_id.len(), 32, "{fields}");
        request_ids.push(request_id);
    }
    assert_ne!(
        request_ids[0], request_ids[1],
        "each turn has its own request id"
    );
    // Two requests for the tool loop, one for the second turn, each inside its turn.
    let upstream = named("upstream_request");
    assert_eq!(upstream.len(), 3, "{closed:?}");
    for (_, fields, parents) in &upstream {
        assert_eq!(fields["provider"], "deepseek", "{fields}");
        assert_eq!(fields["model"], "deepseek-v4-pro", "{fields}");
        assert_eq!(fields["host"], "127.0.0.1", "{fields}");
        assert!(parents.contains(&"session_turn".to_owned()), "{parents:?}");
    }
    // The renewer is a root span of its own, closed when the lease is given back.
    let renewers = named("lease_renewer");
    assert_eq!(renewers.len(), 1, "{closed:?}");
    let (_, fields, parents) = renewers[0];
    assert_eq!(fields["session"], id.as_str(), "{fields}");
    assert!(fields["holder"].as_str().unwrap().contains(':'), "{fields}");
    assert!(!parents.contains(&"session_turn".to_owned()), "{parents:?}");
}
