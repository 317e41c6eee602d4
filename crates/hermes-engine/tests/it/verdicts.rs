//! The store owns the verdicts: a `hermes verdicts clear` made by another process while a chat
//! runs is not undone by that chat's next save, which merges only what it learned.

use std::sync::Arc;

use hermes_core::Carrier;
use hermes_core::driver::Tools;
use hermes_engine::store::{Store, VerdictFilter};
use hermes_engine::{ChatSession, Choice, Engine, OpenOptions, Toolset};
use hermes_sim::{Sim, Switches};

/// A tool that, while the turn runs, does what another process would: clears the session's
/// verdicts, and the provider starts refusing `reasoning_content`.
struct ClearMidTurn {
    store: Store,
    sim: Arc<Sim>,
    session: std::sync::Mutex<Option<String>>,
}

#[async_trait::async_trait]
impl Tools for ClearMidTurn {
    async fn call(&self, _: &str, _: &str) -> String {
        let session = self.session.lock().unwrap().clone().unwrap();
        let cleared = self
            .store
            .clear_verdicts(&session, &VerdictFilter::default())
            .await
            .unwrap();
        assert_eq!(cleared, 1);
        self.sim
            .set_switches(Switches::default().reject_message_field("reasoning_content"));
        "12:00".to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_during_a_running_chat_survives_its_next_save() {
    let sim = Arc::new(Sim::start("openrouter").await.unwrap());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let other = Store::open(&db).await.unwrap();
    let tools = Arc::new(ClearMidTurn {
        store: other.clone(),
        sim: Arc::clone(&sim),
        session: std::sync::Mutex::new(None),
    });
    struct Shared(Arc<ClearMidTurn>);
    #[async_trait::async_trait]
    impl Tools for Shared {
        async fn call(&self, name: &str, args: &str) -> String {
            self.0.call(name, args).await
        }
    }
    let choice = Choice::new(
        Some("openrouter"),
        Some("anthropic/claude-sonnet-5"),
        Some(&sim.base_url()),
    );
    let toolset = Toolset {
        tools: Arc::new(Shared(Arc::clone(&tools))),
        definitions: None,
    };
    let mut chat = ChatSession::open(
        &Engine::builtin(),
        Store::open(&db).await.unwrap(),
        OpenOptions::new(choice),
        toolset,
    )
    .await
    .unwrap();
    chat.turn("first", &|_| {}).await.unwrap();
    let id = chat.id().unwrap().to_owned();
    *tools.session.lock().unwrap() = Some(id.clone());

    // The provider refuses reasoning_details: the chat records R and RD. Then, inside the same
    // turn (during its tool call), another process clears them and the provider refuses
    // reasoning_content: the chat's next save merges RC into what is stored.
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    chat.turn("[tools=1] second", &|_| {}).await.unwrap();

    let stored = other.verdicts(&id).await.unwrap();
    assert_eq!(stored.0.len(), 1);
    assert_eq!(
        stored.0[0].carriers.fields(),
        [Carrier::ReasoningContent.field()],
        "the cleared R and RD stay cleared; only what the chat learned after is stored"
    );
}
