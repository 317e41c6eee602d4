//! The Responses door's responses kept by id (issue 49), on both backends: kept per tenant,
//! replaced when kept again, invisible once expired, swept.

use std::time::Duration;

use crate::Store;
use crate::testing::TestDb;

/// Keeps acme's `resp_1` for an hour as (`session`, `upto`), then reads it back: the session
/// and count it is found with.
async fn keep_and_read(store: &Store, session: &str, upto: usize) -> (String, usize) {
    store
        .keep_response("acme", "resp_1", session, upto, Duration::from_secs(3600))
        .await
        .unwrap();
    let kept = store
        .kept_response("acme", "resp_1")
        .await
        .unwrap()
        .unwrap();
    (kept.session, kept.upto)
}

both!(a_kept_response_is_the_tenants_own_until_it_expires);
async fn a_kept_response_is_the_tenants_own_until_it_expires(db: TestDb) {
    let store = db.open().await;
    assert_eq!(
        keep_and_read(&store, "session-a", 5).await,
        ("session-a".to_owned(), 5)
    );
    assert_eq!(
        store.kept_response("globex", "resp_1").await.unwrap(),
        None,
        "another tenant's id names nothing"
    );
    assert_eq!(store.kept_response("acme", "resp_2").await.unwrap(), None);
    // Kept again (a retry's answer): the last one stands.
    assert_eq!(
        keep_and_read(&store, "session-b", 7).await,
        ("session-b".to_owned(), 7)
    );
    // Expired: not found, and swept.
    store
        .keep_response("acme", "resp_old", "session-c", 3, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(store.kept_response("acme", "resp_old").await.unwrap(), None);
    let swept = store.sweep_responses(crate::now_ms() + 1).await.unwrap();
    assert_eq!(swept, 1, "only the expired one");
    assert!(
        store
            .kept_response("acme", "resp_1")
            .await
            .unwrap()
            .is_some()
    );
}
