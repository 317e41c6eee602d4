//! `[serve] retention`: while serving, a tenant's conversation last updated longer ago than the
//! age is deleted in the background; a CLI session (no tenant) in the same store is not.

use std::time::{Duration, Instant};

use hermes_sim::Sim;
use hermes_store::NewSession;
use hermes_store::testing::TestDb;

use crate::{hello, replica};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_conversation_older_than_the_retention_is_deleted_while_serving() {
    let db = TestDb::new(hermes_store::Backend::Sqlite).await.unwrap();
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let store = db.open().await;
    let cli = store.create_session(&NewSession::default()).await.unwrap();
    let age = Duration::from_millis(1500);
    let gateway = replica(store, &sim.base_url(), |c| c.retention(Some(age))).await;
    let key = gateway.store.add_gateway_key("acme").await.unwrap();
    let reply = crate::json_of(
        reqwest::Client::new()
            .post(gateway.url("/v1/chat/completions"))
            .bearer_auth(&key)
            .json(&hello("keep me a while")),
    )
    .await;
    let session = reply["hermes_session"].as_str().unwrap().to_owned();
    let stored = Instant::now();
    assert!(gateway.store.has_session(&session).await.unwrap());
    // Deleted once older than the age, within the task's period (a quarter of it, at least 1 s).
    loop {
        if !gateway.store.has_session(&session).await.unwrap() {
            break;
        }
        assert!(
            stored.elapsed() < age + Duration::from_secs(3),
            "the conversation outlived its retention"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stored.elapsed() >= age.saturating_sub(Duration::from_millis(500)));
    assert!(
        gateway.store.has_session(&cli).await.unwrap(),
        "a CLI session was deleted"
    );
    gateway.stop().await;
}
