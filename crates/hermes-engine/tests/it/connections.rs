//! One engine, one HTTP client per set of waits: sessions of the same engine reuse its
//! connections instead of each dialling the provider anew (counted at a loopback proxy).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hermes_engine::store::Store;
use hermes_engine::{ChatSession, Engine, OpenOptions, Toolset};
use hermes_sim::Sim;

/// A TCP proxy on loopback to `upstream` that counts the connections made to it.
async fn counting_proxy(upstream: std::net::SocketAddr) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (format!("http://{address}"), count)
}

/// Options for a new DeepSeek session at `base_url`.
fn options(base_url: &str) -> OpenOptions {
    crate::deepseek_options(base_url)
}

/// Runs one session of `engine` to the end: two turns, the first a tool loop (three requests).
async fn one_session(engine: &Engine, store: &Store, base_url: &str) {
    let mut chat = ChatSession::open(engine, store.clone(), options(base_url), Toolset::none())
        .await
        .unwrap();
    chat.turn("[tools=1] hello", &|_| {}).await.unwrap();
    chat.turn("again", &|_| {}).await.unwrap();
    chat.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_one_engine_share_its_connections() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let upstream = sim.addr();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();

    // One engine, three sessions one after another: nine requests over one connection.
    let (shared_url, shared) = counting_proxy(upstream).await;
    let engine = Engine::builtin();
    for _ in 0..3 {
        one_session(&engine, &store, &format!("{shared_url}/v1")).await;
    }
    assert_eq!(sim.requests().len(), 9);
    assert_eq!(
        shared.load(Ordering::SeqCst),
        1,
        "one connection for every session"
    );

    // An engine per session dials once per session: what the shared client saves.
    let (apart_url, apart) = counting_proxy(upstream).await;
    for _ in 0..3 {
        one_session(&Engine::builtin(), &store, &format!("{apart_url}/v1")).await;
    }
    assert_eq!(apart.load(Ordering::SeqCst), 3);
}
