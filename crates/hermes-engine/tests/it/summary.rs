//! Compaction's summary request goes through the driver's negotiation: refused once, recorded,
//! retried without the refused carriers.

use hermes_core::Carrier;
use hermes_engine::store::Store;
use hermes_engine::{ChatSession, Choice, Engine, OpenOptions, Toolset};
use hermes_sim::{Sim, Switches};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_summary_request_is_recorded_and_retried_once() {
    let sim = Sim::start("openrouter").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
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
    for i in 0..8 {
        chat.turn(&format!("question {i}"), &|_| {}).await.unwrap();
    }
    sim.clear_requests();
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    let status = chat.compact(true).await.unwrap();
    assert!(status.is_some(), "the middle of 16 messages was summarised");

    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "one refusal, one retry");
    assert_eq!(requests[0].status, 400, "{}", requests[0].response);
    assert_eq!(requests[1].status, 200, "{}", requests[1].response);
    let carries_rd = |i: usize| {
        requests[i].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.get("reasoning_details").is_some())
    };
    assert!(carries_rd(0));
    assert!(!carries_rd(1), "the retry leaves the refused carriers out");
    let stored = chat.store().verdicts(chat.id().unwrap()).await.unwrap();
    assert_eq!(
        stored.0[0].carriers.fields(),
        [
            Carrier::Reasoning.field(),
            Carrier::ReasoningDetails.field()
        ],
        "the summary request's refusal is a verdict like any other"
    );
}
