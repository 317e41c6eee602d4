//! The engine's entry points run on a multi-threaded runtime: their futures are `Send` (a
//! compile-time proof, since `tokio::spawn` demands it), and sessions opened and driven from
//! spawned tasks on one store each store their turns whole.

use std::sync::Arc;

use hermes_engine::store::Store;
use hermes_engine::{ChatSession, Engine, OpenOptions, Toolset};
use hermes_sim::Sim;

/// Open options for a new DeepSeek session against `sim`.
fn options(sim: &Sim) -> OpenOptions {
    crate::deepseek_options(&sim.base_url())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_turn_and_close_run_as_spawned_tasks_on_a_multi_threaded_runtime() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let engine = Arc::new(Engine::builtin());
    let mut tasks = Vec::new();
    for n in 0..4 {
        let (engine, store, options) = (engine.clone(), store.clone(), options(&sim));
        // `tokio::spawn` compiles only for `Send + 'static` futures: this is the proof.
        tasks.push(tokio::spawn(async move {
            let mut chat = ChatSession::open(&engine, store, options, Toolset::none())
                .await
                .unwrap();
            chat.turn(&format!("[tools=2] hello {n}"), &|_| {})
                .await
                .unwrap();
            let id = chat.id().unwrap().to_owned();
            chat.close().await.unwrap();
            id
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "four sessions");
    for id in &ids {
        let messages = store.messages(id).await.unwrap();
        // user, then two tool steps (assistant call + tool result), then the answer.
        let roles: Vec<String> = messages.iter().map(|m| format!("{:?}", m.role)).collect();
        assert_eq!(roles.len(), 6, "{id}: {roles:?}");
        assert_eq!(roles[0], "User", "{id}: {roles:?}");
        assert_eq!(roles[5], "Assistant", "{id}: {roles:?}");
    }
}
