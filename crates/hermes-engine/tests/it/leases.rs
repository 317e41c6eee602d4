//! One holder drives a session at a time: a second driver of a busy session waits a bounded
//! time, then fails and stores nothing; once the first lets go, the second resumes with the
//! latest stored history. Two holders in one process queue on an in-process lock, and a holder
//! dropped mid-turn (a client gone) gives its lease back at once.

use std::time::Duration;

use hermes_engine::store::Store;
use hermes_engine::{
    ChatSession, Choice, Engine, EngineError, Limits, OpenOptions, Settings, Toolset,
};

fn options(resume: Option<String>) -> OpenOptions {
    let d = Limits::default();
    OpenOptions::new(Choice::new(Some("sim"), None, None))
        .resume(resume)
        .settings(
            Settings::new(Default::default(), std::sync::Arc::new(|_| None)).limits(Limits::new(
                d.connect,
                d.first_byte,
                d.idle,
                d.turn,
                Duration::from_millis(300),
            )),
        )
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

    // Another engine: another process as far as the lease knows.
    let second = ChatSession::open(
        &crate::sim_engine(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_holders_in_one_process_queue_and_the_second_goes_on_once_the_first_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let engine = crate::sim_engine();
    let mut first = ChatSession::open(&engine, store.clone(), options(None), Toolset::none())
        .await
        .unwrap();
    first.turn("hello", &|_| {}).await.unwrap();
    let id = first.id().unwrap().to_owned();

    // Waiting longer than the first holds it: the second is queued, not refused.
    let d = Limits::default();
    let mut patient = options(Some(id.clone()));
    patient.settings.limits = Limits::new(
        d.connect,
        d.first_byte,
        d.idle,
        d.turn,
        Duration::from_secs(20),
    );
    let closer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        first.turn("and again", &|_| {}).await.unwrap();
        first.close().await.unwrap();
    });
    let mut second = ChatSession::open(&engine, store.clone(), patient, Toolset::none())
        .await
        .unwrap();
    closer.await.unwrap();
    assert_eq!(
        second.conversation.messages.len(),
        4,
        "opened only after the first stored its second turn and let go"
    );
    second.turn("third", &|_| {}).await.unwrap();
    assert_eq!(store.messages(&id).await.unwrap().len(), 6);
}

/// A loopback server that reads requests and never answers; says on `seen` when one arrived.
async fn silent_server(seen: std::sync::Arc<tokio::sync::Notify>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt as _;
                let mut buffer = vec![0u8; 65536];
                while let Ok(n) = socket.read(&mut buffer).await {
                    if n == 0 {
                        return;
                    }
                    seen.notify_one();
                }
            });
        }
    });
    format!("http://{address}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_mid_turn_gives_its_lease_back_within_a_second_and_stores_nothing() {
    use hermes_store::{Lease, NewSession};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let seen = std::sync::Arc::new(tokio::sync::Notify::new());
    let base = silent_server(seen.clone()).await;
    let id = store
        .create_with_messages(
            &NewSession {
                provider: Some("deepseek".into()),
                model: Some("deepseek-v4-pro".into()),
                base_url: Some(base.clone()),
                base_url_confirmed: true,
                ..NewSession::default()
            },
            &[],
        )
        .await
        .unwrap();
    let opened = OpenOptions::new(Choice::new(Some("deepseek"), None, None))
        .resume(Some(id.clone()))
        .settings(Settings::new(
            Default::default(),
            std::sync::Arc::new(|_| Some("sk-test".to_owned())),
        ));
    let request = {
        let (store, engine) = (store.clone(), Engine::builtin());
        tokio::spawn(async move {
            let mut chat = ChatSession::open(&engine, store, opened, Toolset::none())
                .await
                .unwrap();
            chat.turn("hello?", &|_| {}).await
        })
    };
    seen.notified().await;
    // The lease is held while the request waits for its answer.
    assert!(matches!(
        store
            .acquire_lease(&id, "someone-else", Duration::from_secs(30), &|_| false)
            .await
            .unwrap(),
        Lease::Busy { .. }
    ));
    request.abort();
    let dropped = std::time::Instant::now();
    loop {
        let lease = store
            .acquire_lease(&id, "someone-else", Duration::from_secs(30), &|_| false)
            .await
            .unwrap();
        if matches!(lease, Lease::Held) {
            break;
        }
        assert!(
            dropped.elapsed() < Duration::from_secs(1),
            "the dropped request still holds the lease after a second"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        store.messages(&id).await.unwrap().is_empty(),
        "nothing of the unfinished turn is stored"
    );
}
