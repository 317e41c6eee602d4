//! One process drives a session at a time: a second driver of a busy session waits a bounded
//! time, then fails and stores nothing; once the first lets go, the second resumes with the
//! latest stored history.

use std::time::Duration;

use hermes_engine::store::Store;
use hermes_engine::{ChatSession, Choice, Engine, EngineError, Limits, OpenOptions, Toolset};

fn options(resume: Option<String>) -> OpenOptions {
    let d = Limits::default();
    OpenOptions::new(Choice::new(Some("sim"), None, None))
        .resume(resume)
        .limits(Limits::new(
            d.connect,
            d.first_byte,
            d.idle,
            d.turn,
            Duration::from_millis(300),
        ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_is_refused_after_a_bounded_wait_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let engine: Engine = crate::sim_engine();
    let store = Store::open(&db).await.unwrap();
    let mut first = ChatSession::open(&engine, store.clone(), options(None), Toolset::none())
        .await
        .unwrap();
    first.turn("hello", &|_| {}).await.unwrap();
    let id = first.id().unwrap().to_owned();
    let before = store.messages(&id).await.unwrap();

    let second = ChatSession::open(
        &engine,
        Store::open(&db).await.unwrap(),
        options(Some(id.clone())),
        Toolset::none(),
    )
    .await;
    let err = second.err().expect("the session is busy");
    assert!(
        matches!(&err, EngineError::Busy { session, holder } if *session == id && holder.contains(':')),
        "a typed error a server can map: {err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("session {id} is in use by another process")),
        "{err}"
    );
    assert_eq!(store.messages(&id).await.unwrap(), before, "nothing stored");

    // The first goes on, then lets go; the second resumes with what the first stored.
    first.turn("and again", &|_| {}).await.unwrap();
    first.close().await.unwrap();
    let mut second = ChatSession::open(
        &engine,
        Store::open(&db).await.unwrap(),
        options(Some(id.clone())),
        Toolset::none(),
    )
    .await
    .unwrap();
    assert_eq!(second.conversation.messages.len(), 4);
    second.turn("third", &|_| {}).await.unwrap();
    assert_eq!(store.messages(&id).await.unwrap().len(), 6);
}
