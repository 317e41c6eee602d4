//! The store owns the verdicts: a `hermes verdicts clear` made by another process while a chat
//! runs is not undone by that chat's next save.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_core::Carrier;
use hermes_engine::store::{Store, VerdictFilter};
use hermes_engine::{ChatSession, Choice, Engine, OpenOptions, Toolset};
use hermes_sim::{Sim, Switches};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_during_a_running_chat_survives_its_next_save() {
    let sim = Sim::start("openrouter").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let store = Store::open(&db).await.unwrap();
    let choice = Choice::new(
        Some("openrouter"),
        Some("anthropic/claude-sonnet-5"),
        Some(&sim.base_url()),
    );
    let mut chat = ChatSession::open(
        &Engine::builtin(),
        store,
        OpenOptions::new(choice),
        Toolset::none(),
    )
    .await
    .unwrap();
    chat.turn("first", &|_| {}).await.unwrap();

    // The provider refuses reasoning_details: the chat records R and RD.
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    chat.turn("second", &|_| {}).await.unwrap();
    let id = chat.id().unwrap().to_owned();
    let other = Store::open(&db).await.unwrap();
    let learned = other.verdicts(&id).await.unwrap();
    assert_eq!(
        learned.0[0].carriers.fields(),
        [
            Carrier::Reasoning.field(),
            Carrier::ReasoningDetails.field()
        ]
    );

    // Another process clears them while the chat keeps running.
    assert_eq!(
        other
            .clear_verdicts(&id, &VerdictFilter::default())
            .await
            .unwrap(),
        1
    );

    // The chat learns something else: its save merges that one verdict into what is stored.
    sim.set_switches(Switches::default().reject_message_field("reasoning_content"));
    chat.turn("third", &|_| {}).await.unwrap();
    let stored = other.verdicts(&id).await.unwrap();
    assert_eq!(stored.0.len(), 1);
    assert_eq!(
        stored.0[0].carriers.fields(),
        [Carrier::ReasoningContent.field()],
        "the cleared verdict stays cleared"
    );
    assert_eq!(
        chat.conversation.verdicts, stored,
        "the chat now holds what is stored"
    );
}
