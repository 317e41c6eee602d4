//! A chat session remembers its thinking request: settled flags > stored > config's effort,
//! stored with a new session's first step, replaced by a resume's flag, and kept by `/model`.

use std::path::Path;
use std::sync::Arc;

use hermes_core::{Effort, ThinkingRequest};
use hermes_engine::store::{Store, StoredThinking};
use hermes_engine::{ChatSession, Choice, Engine, OpenOptions, Toolset};
use hermes_sim::Sim;
use serde_json::{Value, json};

fn options(sim: &Sim, resume: Option<&str>, flags: ThinkingRequest) -> OpenOptions {
    let mut defaults = crate::defaults_at("deepseek", &sim.base_url());
    defaults.effort = Some(Effort::Low);
    let choice = match resume {
        Some(_) => Choice::default(),
        None => Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None),
    };
    OpenOptions::new(choice)
        .settings(hermes_engine::Settings::new(
            defaults,
            Arc::new(|_| Some("sk-test".to_owned())),
        ))
        .resume(resume.map(str::to_owned))
        .thinking(flags)
}

/// A chat on the store at `db` with [`options`].
async fn open(
    engine: &Engine,
    db: &Path,
    sim: &Sim,
    resume: Option<&str>,
    flags: ThinkingRequest,
) -> ChatSession {
    ChatSession::open(
        engine,
        Store::open(db).await.unwrap(),
        options(sim, resume, flags),
        Toolset::none(),
    )
    .await
    .unwrap()
}

/// The DeepSeek thinking fields of every request since the last call.
fn sent(sim: &Sim) -> Vec<(Value, Value)> {
    let requests = sim.requests();
    sim.clear_requests();
    requests
        .iter()
        .map(|r| {
            assert_eq!(r.status, 200, "{}", r.response);
            (
                r.body["thinking"].clone(),
                r.body["reasoning_effort"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_thinking_request_across_resume_and_model_switch() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let engine = Engine::builtin();
    let high = ThinkingRequest::Effort(Effort::High);

    // New, with a flag: the flag wins over config's effort and is stored with the first step.
    let mut chat = open(&engine, &db, &sim, None, high).await;
    assert_eq!(chat.thinking(), high);
    chat.turn("hello", &|_| {}).await.unwrap();
    let id = chat.id().unwrap().to_owned();
    let store = chat.store().clone();
    assert_eq!(
        store.thinking(&id).await.unwrap(),
        Some(StoredThinking::Effort(Effort::High))
    );
    let first = sent(&sim);
    assert_eq!(first[0].0, json!({"type": "enabled"}));
    // `/model` keeps the request.
    chat.switch_model("deepseek", "deepseek-v4-flash")
        .await
        .unwrap();
    assert_eq!(chat.thinking(), high);
    chat.turn("after the switch", &|_| {}).await.unwrap();
    assert_eq!(sent(&sim), first);
    chat.close().await.unwrap();

    // Resumed without a flag: the stored request, not config's effort.
    let chat = open(&engine, &db, &sim, Some(&id), ThinkingRequest::NoPreference).await;
    assert_eq!(chat.thinking(), high);
    chat.close().await.unwrap();

    // Resumed with a flag: it is stored for the next resume.
    let chat = open(&engine, &db, &sim, Some(&id), ThinkingRequest::Off).await;
    assert_eq!(chat.thinking(), ThinkingRequest::Off);
    chat.close().await.unwrap();
    assert_eq!(
        store.thinking(&id).await.unwrap(),
        Some(StoredThinking::Off)
    );
    let mut chat = open(&engine, &db, &sim, Some(&id), ThinkingRequest::NoPreference).await;
    assert_eq!(chat.thinking(), ThinkingRequest::Off);
    chat.turn("quick", &|_| {}).await.unwrap();
    assert_eq!(sent(&sim), [(json!({"type": "disabled"}), Value::Null)]);
    // A branch inherits it.
    let (_, branch) = chat.branch().await.unwrap();
    assert_eq!(
        store.thinking(&branch).await.unwrap(),
        Some(StoredThinking::Off)
    );
    chat.close().await.unwrap();

    // With nothing stored, config's effort applies, and a resume without a flag stores nothing.
    store.set_thinking(&id, None).await.unwrap();
    let chat = open(&engine, &db, &sim, Some(&id), ThinkingRequest::NoPreference).await;
    assert_eq!(chat.thinking(), ThinkingRequest::Effort(Effort::Low));
    chat.close().await.unwrap();
    assert_eq!(store.thinking(&id).await.unwrap(), None);
}
