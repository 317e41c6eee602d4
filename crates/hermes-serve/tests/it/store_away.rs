//! The store away under load (docs/spec.md §10, issue 33 "Faults"): a replica over PostgreSQL
//! through a TCP proxy the test cuts (every open connection dropped, new ones refused) and
//! restores. While it is cut every request that needs the store — the key check, the limiter, the
//! turn (alone, on a replica with neither), through both doors, whole and streamed — is answered
//! 503 with `Retry-After` within the gateway's short wait for a connection, none 500 and none
//! hanging, `/readyz` says 503, a stream in flight stores nothing half-done; once restored the same
//! process serves again with every carrier of the conversation. The same against a real cluster
//! stopped (fast shutdown: every connection ended with `57P01`) and started again, a cluster of the
//! test's own so that no other test sees it go.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use hermes_engine::Engine;
use hermes_engine::store::{PoolOptions, Store};
use hermes_serve::{Auth, Gateway, Limits, ServeConfig, TenantLimits};
use hermes_sim::Sim;
use hermes_test_support::pg_cluster::{Cluster, Durability};
use serde_json::Value;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::replicas::{
    Door, THREE_TURNS, body, chat_answer, events, minted_reasoning, only_conversation, post,
    received, roles, slow_deepseek, text_of, turn,
};
use crate::{Running, deepseek_settings, replica_over, serve};

/// A TCP proxy on loopback in front of `target` that the test can cut and restore.
struct Proxy {
    addr: SocketAddr,
    target: SocketAddr,
    /// The accept loop and every pipe: aborting a task drops its sockets.
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            addr: listener.local_addr().unwrap(),
            target,
            tasks: Arc::default(),
        };
        proxy.serve(listener);
        proxy
    }

    /// Accepts on `listener`, piping each connection to the target.
    fn serve(&self, listener: TcpListener) {
        let (target, tasks) = (self.target, self.tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let pipe = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                tasks.lock().unwrap().push(pipe.abort_handle());
            }
        });
        self.tasks.lock().unwrap().push(accept.abort_handle());
    }

    /// The database goes away: every open connection is dropped, and the port refuses new ones.
    fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// The database is back, on the same address.
    async fn restore(&self) {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match socket.bind(self.addr) {
                Ok(()) => break,
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(error = %e, "rebinding the proxy");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot rebind the proxy on {}: {e}", self.addr),
            }
        }
        self.serve(socket.listen(1024).unwrap());
    }
}

/// The `host:port` of a `postgres://user:password@host:port/db?…` URL.
fn server_of(url: &str) -> SocketAddr {
    let after = &url[url.rfind('@').expect("the test URL names a user") + 1..];
    let host = after.split(['/', '?']).next().unwrap();
    host.parse()
        .expect("the test server is named by IP and port")
}

/// `url` with its server replaced by `addr`.
fn through(url: &str, addr: SocketAddr) -> String {
    url.replacen(&server_of(url).to_string(), &addr.to_string(), 1)
}

/// How long a request may take while the store is away: the gateway's wait for a connection
/// and a margin for a loaded machine.
const BOUND: Duration = Duration::from_secs(PoolOptions::GATEWAY_ACQUIRE_TIMEOUT.as_secs() + 3);

/// The 503 a request got while the store was away, checked: in its door's shape, with
/// `Retry-After`, within [`BOUND`].
async fn unavailable(door: Door, sent: Instant, response: reqwest::Response) {
    let elapsed = sent.elapsed();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, 503, "{door:?}: {answer}");
    assert_eq!(retry.as_deref(), Some("1"), "{door:?}: Retry-After");
    assert!(elapsed < BOUND, "{door:?}: answered after {elapsed:?}");
    match door {
        Door::Chat => assert_eq!(answer["error"]["type"], "api_error", "{answer}"),
        Door::Messages => {
            assert_eq!(answer["type"], "error", "{answer}");
            assert_eq!(answer["error"]["type"], "api_error", "{answer}");
        }
    }
}

/// A gateway's pool: `hermes serve`'s wait for a connection.
fn gateway_pool() -> PoolOptions {
    PoolOptions {
        acquire_timeout: PoolOptions::GATEWAY_ACQUIRE_TIMEOUT,
        ..PoolOptions::default()
    }
}

/// A replica over `store` that checks keys and counts limits (both in the store).
async fn limited_replica(store: Store, sim: &Sim) -> Running {
    let n = |v| NonZeroU32::new(v);
    let limits = Limits::none().defaults(TenantLimits::new(n(100_000), n(64)));
    replica_over(store, deepseek_settings(&sim.base_url()), |c| {
        c.limits(limits)
    })
    .await
}

/// The first turn of `key`'s conversation on `gateway`: the conversation so far, ending with
/// the next user message, and its session.
async fn first_turn(gateway: &Running, key: &str) -> (Vec<String>, String) {
    let mut turns = vec!["hello".to_owned()];
    let body = body(Door::Chat, false, &turns);
    let first = turn(gateway.addr, Door::Chat, key, &body).await;
    turns.push(text_of(Door::Chat, &first.events));
    turns.push("tell me more".to_owned());
    (turns, chat_answer(&first.events).2.unwrap())
}

/// While the store is away: requests continuing `turns` sent at once to each replica at
/// `addrs`, through both doors, whole and streamed (and one with an unknown well-formed key
/// to the first), are each answered 503 in time; each replica's `/readyz` says 503.
async fn all_unavailable(replicas: &[&Running], key: &str, turns: &[String]) {
    let requests: Vec<_> = (0..8 * replicas.len())
        .map(|i| {
            let door = [Door::Chat, Door::Messages][i % 2];
            let (body, key) = (body(door, i / 2 % 2 == 1, turns), key.to_owned());
            let addr = replicas[i / 4 % replicas.len()].addr;
            tokio::spawn(async move {
                let sent = Instant::now();
                let response = tokio::time::timeout(BOUND * 2, post(addr, door, &key, &body))
                    .await
                    .expect("no request hangs");
                unavailable(door, sent, response).await;
            })
        })
        .collect();
    let stranger = tokio::spawn({
        let (addr, body) = (replicas[0].addr, body(Door::Chat, false, turns));
        async move {
            // A key the store cannot check is neither let in nor refused as invalid.
            let sent = Instant::now();
            let stranger = format!("hk_{}_{}", "0".repeat(16), "0".repeat(64));
            let response = post(addr, Door::Chat, &stranger, &body).await;
            unavailable(Door::Chat, sent, response).await;
        }
    });
    for replica in replicas {
        let ready = reqwest::get(replica.url("/readyz")).await.unwrap();
        assert_eq!(ready.status(), 503);
    }
    for request in requests.into_iter().chain([stranger]) {
        request.await.unwrap();
    }
}

/// Once the store is back: `gateway` says ready within 20 s and continues the conversation
/// `session` (nothing half-done stored meanwhile) through both doors, each upstream request
/// carrying every reasoning minted before.
async fn serves_again(
    gateway: &Running,
    key: &str,
    sim: &Sim,
    reader: &Store,
    session: &str,
    mut turns: Vec<String>,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while reqwest::get(gateway.url("/readyz")).await.unwrap().status() != 200 {
        assert!(Instant::now() < deadline, "ready again within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        roles(reader, session).await,
        ["user", "assistant"],
        "nothing half-done was stored"
    );
    for (door, stream) in [(Door::Chat, true), (Door::Messages, false)] {
        let reply = turn(gateway.addr, door, key, &body(door, stream, &turns)).await;
        let events = reply.finish(door).await;
        turns.push(text_of(door, &events));
        turns.push("and then?".to_owned());
    }
    let requests = sim.requests();
    let last = received(requests.last().unwrap());
    for earlier in [&requests[0], &requests[requests.len() - 2]] {
        let reasoning = minted_reasoning(earlier);
        let carried = format!(r#""reasoning_content":{}"#, Value::String(reasoning));
        assert!(last.contains(&carried), "{last}");
    }
    assert_eq!(only_conversation(reader, "acme").await, session);
    assert_eq!(roles(reader, session).await, THREE_TURNS);
}

/// The DeepSeek simulator, streams slowed a little so one is in flight when the store goes.
async fn slow_sim() -> Sim {
    slow_deepseek(Duration::from_millis(20)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_away_is_answered_503_at_once_and_the_same_replica_serves_when_it_is_back() {
    let Some(direct) = hermes_store::testing::fresh_postgres_url().await else {
        return;
    };
    let proxy = Proxy::start(server_of(&direct)).await;
    // Migrated, with the tenant's key, over the direct URL (the test's own view of the store).
    let reader = Store::connect_postgres(&direct).await.unwrap();
    let key = reader.add_gateway_key("acme").await.unwrap();
    let sim = slow_sim().await;
    let proxied = through(&direct, proxy.addr);
    let proxied = || Store::connect_postgres_with(&proxied, gateway_pool());
    let gateway = limited_replica(proxied().await.unwrap(), &sim).await;
    // A second replica on the same store with no key check and no limits: the turn is the
    // first thing of a request to need the store.
    let open = {
        let store = proxied().await.unwrap();
        let engine =
            Engine::builtin().with_store(store.clone(), deepseek_settings(&sim.base_url()));
        let gateway =
            Gateway::new(engine, ServeConfig::new(Auth::None).limits(Limits::none())).unwrap();
        serve(store, gateway, None, None).await
    };
    let (turns, session) = first_turn(&gateway, &key).await;

    // A stream in flight when the database goes: its step cannot be committed, so it never
    // ends and nothing of it is stored.
    let in_flight = body(Door::Chat, true, &turns);
    let response = post(gateway.addr, Door::Chat, &key, &in_flight).await;
    assert_eq!(response.status(), 200);
    let mut in_flight = events(response);
    let opening = tokio::time::timeout(Duration::from_secs(10), in_flight.next())
        .await
        .expect("a first chunk within 10 s")
        .unwrap();
    proxy.cut();
    let rest = tokio::time::timeout(BOUND * 3, in_flight.collect::<Vec<_>>())
        .await
        .expect("the stream in flight ends");
    let seen: Vec<Value> = std::iter::once(opening).chain(rest).collect();
    assert!(!seen.iter().any(|e| Door::Chat.finishes(e)), "{seen:?}");
    assert!(seen.iter().any(|e| e["error"].is_object()), "{seen:?}");
    let upstream = sim.requests().len();

    all_unavailable(&[&gateway, &open], &key, &turns).await;
    assert_eq!(sim.requests().len(), upstream, "nothing went upstream");

    // Back: the same processes serve again.
    proxy.restore().await;
    serves_again(&gateway, &key, &sim, &reader, &session, turns.clone()).await;
    let reply = turn(open.addr, Door::Chat, "", &body(Door::Chat, false, &turns)).await;
    assert!(!text_of(Door::Chat, &reply.events).is_empty());
    gateway.stop().await;
    open.stop().await;
}

/// A PostgreSQL cluster of the test's own (`hermes_test_support::pg_cluster`: a temporary
/// folder, a free loopback port, trust authentication, no TLS) from the binaries
/// `.ci/postgres.sh` names (`HERMES_TEST_PG_BIN`) or Debian's, so stopping it disturbs no other
/// test; `None` (recorded as skipped) without them, a panic with `HERMES_REQUIRE_PG`. Stopped at once and removed when dropped.
fn own_cluster() -> Option<OwnCluster> {
    // HERMES_TEST_PG_BIN or Debian's binaries; none: skipped, or a failure with
    // HERMES_REQUIRE_PG.
    let bin = hermes_test_support::pg_cluster::test_bin()?;
    let parent = tempfile::tempdir().unwrap();
    // The cluster runs as the `postgres` user when the tests run as root: it must reach its
    // folder inside this one.
    std::fs::set_permissions(
        parent.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let cluster = Cluster::create(&bin, parent.path(), Durability::Throwaway).unwrap();
    Some(OwnCluster {
        cluster,
        _parent: parent,
    })
}

/// A cluster and the folder it lives in, dropped in that order (the server is stopped before
/// its folder goes).
struct OwnCluster {
    cluster: Cluster,
    _parent: tempfile::TempDir,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_restarting_is_503_while_it_is_down_and_the_same_replica_serves_once_it_is_up() {
    let Some(mut own) = tokio::task::spawn_blocking(own_cluster).await.unwrap() else {
        return;
    };
    let cluster = &mut own.cluster;
    let reader = Store::connect_postgres(cluster.url()).await.unwrap();
    let key = reader.add_gateway_key("acme").await.unwrap();
    let sim = slow_sim().await;
    let store = Store::connect_postgres_with(cluster.url(), gateway_pool())
        .await
        .unwrap();
    let gateway = limited_replica(store, &sim).await;
    let (turns, session) = first_turn(&gateway, &key).await;
    let upstream = sim.requests().len();

    tokio::task::block_in_place(|| cluster.stop()).unwrap();
    all_unavailable(&[&gateway], &key, &turns).await;
    assert_eq!(sim.requests().len(), upstream, "nothing went upstream");

    tokio::task::block_in_place(|| cluster.start()).unwrap();
    serves_again(&gateway, &key, &sim, &reader, &session, turns).await;
    gateway.stop().await;
}
