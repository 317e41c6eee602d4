//! Requests as a server makes them: 32 at once over 8 conversations against the strict DeepSeek
//! V4 simulator, on a real SQLite file and a real PostgreSQL server. No lease is held: each
//! request reads its conversation once and appends at the tip it read, so a request that finds
//! its conversation moved on lands on a branch sharing the history it read. Every turn is stored
//! once, in order, with its reasoning byte for byte, and nothing is interleaved.

use std::collections::HashMap;

use hermes_core::{Message, Role};
use hermes_engine::{Choice, Request};
use hermes_sim::Sim;
use hermes_store::Backend;
use hermes_store::testing::TestDb;

fn text(message: &Message) -> String {
    crate::text_of(message)
}

async fn thirty_two_requests_over_eight_conversations(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let store = db.open().await;
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let engine = crate::request_engine(&sim, &store);
    let choice = Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None);

    let mut conversations = Vec::new();
    for c in 0..8 {
        let first = engine
            .complete(
                Request::user(&format!("conversation {c}")).choice(choice.clone()),
                &|_| {},
            )
            .await
            .unwrap();
        conversations.push(first.session);
    }

    // 32 requests at once, four on each conversation, each from a task of its own.
    let mut tasks = Vec::new();
    for k in 0..4 {
        for (c, id) in conversations.iter().enumerate() {
            let (engine, id) = (engine.clone(), id.clone());
            let asked = format!("turn {c}.{k}");
            tasks.push(tokio::spawn(async move {
                let done = engine
                    .complete(Request::user(&asked).session(&id), &|_| {})
                    .await
                    .unwrap();
                (c, asked, done)
            }));
        }
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    assert_eq!(
        sim.requests().len(),
        8 + 32,
        "one upstream request per turn"
    );

    let mut continued: HashMap<usize, usize> = HashMap::new();
    for (c, asked, done) in &results {
        match &done.branched_from {
            None => {
                assert_eq!(done.session, conversations[*c]);
                *continued.entry(*c).or_default() += 1;
            }
            Some(parent) => {
                assert_eq!(parent, &conversations[*c]);
                let meta = store.session(&done.session).await.unwrap();
                assert_eq!(meta.parent_id.as_deref(), Some(parent.as_str()));
            }
        }
        // Where the turn landed, its question and its own answer stand together, once, with
        // the reasoning the provider sent byte for byte.
        let stored = store.messages(&done.session).await.unwrap();
        let at: Vec<usize> = stored
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User && text(m) == *asked)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(at.len(), 1, "{asked} stored once in {}", done.session);
        let answer = &stored[at[0] + 1];
        assert_eq!(
            answer, &done.messages[0],
            "{asked}: its own answer follows it"
        );
        assert!(answer.reasoning_content.is_some());
        // Every session alternates question and answer from its first turn on: nothing
        // interleaved.
        assert_eq!(text(&stored[0]), format!("conversation {c}"));
        for pair in stored.chunks(2) {
            assert_eq!(pair[0].role, Role::User, "{}", done.session);
            assert_eq!(pair[1].role, Role::Assistant, "{}", done.session);
        }
    }
    // Each conversation was continued in place by at least its first request; every other
    // request landed on a branch, and every stored session is a conversation or one of them.
    assert_eq!(continued.len(), 8, "{continued:?}");
    let branches = results
        .iter()
        .filter(|(_, _, d)| d.branched_from.is_some())
        .count();
    assert_eq!(store.list().await.unwrap().len(), 8 + branches);
    for (c, id) in conversations.iter().enumerate() {
        let stored = store.messages(id).await.unwrap();
        assert_eq!(stored.len(), 2 + 2 * continued[&c], "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_requests_over_eight_conversations_on_sqlite() {
    thirty_two_requests_over_eight_conversations(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_requests_over_eight_conversations_on_postgres() {
    thirty_two_requests_over_eight_conversations(Backend::Postgres).await;
}
