//! Per-tenant limits counted in the store every replica shares: over its rate or its
//! concurrency a tenant gets 429 with `Retry-After` in the door's own error shape and nothing
//! reaches the upstream, while other tenants go on; 64 concurrent clients on two replicas get
//! the configured rate within 5%; a dead replica's concurrency slot frees itself within its TTL;
//! a slot kept for a tenant's next turn on its replica goes back within about a second.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hermes_serve::{Limits, TenantLimits};
use hermes_sim::Sim;
use hermes_store::testing::TestDb;
use serde_json::{Value, json};

use crate::{Doomed, Running, deepseek_settings, hello, replica};

fn n(v: u32) -> Option<NonZeroU32> {
    NonZeroU32::new(v)
}

/// A window no test straddles: the first one since the epoch lasts longer than any run.
const ONE_WINDOW: Duration = Duration::from_secs(u32::MAX as u64);

/// `POST path` on `gateway` with `body` and `key` (as a bearer token).
async fn post(gateway: &Running, path: &str, key: &str, body: &Value) -> reqwest::Response {
    post_to(gateway.addr, path, key, body).await
}

/// `POST path` on the gateway at `addr`.
async fn post_to(addr: SocketAddr, path: &str, key: &str, body: &Value) -> reqwest::Response {
    crate::post_as(format!("http://{addr}{path}"), key, body).await
}

/// The DeepSeek V4 simulator pausing `ms` milliseconds before each streamed event.
async fn paced_deepseek(ms: u64) -> Sim {
    Sim::builder(hermes_sim::Profile::builtin("deepseek-v4").unwrap())
        .chunk_delay(Duration::from_millis(ms))
        .start()
        .await
        .unwrap()
}

/// The `Retry-After` seconds of a 429.
fn retry_after(response: &reqwest::Response) -> u64 {
    assert_eq!(response.status(), 429);
    let after = response.headers()["retry-after"].to_str().unwrap();
    let secs: u64 = after.parse().unwrap();
    assert!(secs >= 1, "{after}");
    secs
}

fn messages_body() -> Value {
    json!({
        "model": "deepseek/deepseek-v4-pro",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hello"}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_its_rate_a_tenant_gets_429_in_each_doors_shape_and_nothing_reaches_the_upstream() {
    let db = TestDb::new(hermes_store::Backend::Sqlite).await.unwrap();
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let limits = Limits::none()
        .defaults(TenantLimits::new(n(1), None))
        .tenant("globex", TenantLimits::new(n(1000), None))
        .window(ONE_WINDOW);
    let gateway = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let acme = gateway.store.add_gateway_key("acme").await.unwrap();
    let globex = gateway.store.add_gateway_key("globex").await.unwrap();
    const CHAT: &str = "/v1/chat/completions";

    assert_eq!(
        post(&gateway, CHAT, &acme, &hello("one")).await.status(),
        200
    );
    assert_eq!(sim.requests().len(), 1);

    // The chat door: OpenAI's error object and request headers.
    let refused = post(&gateway, CHAT, &acme, &hello("two")).await;
    retry_after(&refused);
    assert_eq!(refused.headers()["x-ratelimit-limit-requests"], "1");
    assert_eq!(refused.headers()["x-ratelimit-remaining-requests"], "0");
    assert!(refused.headers().contains_key("x-ratelimit-reset-requests"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("acme") && message.contains("requests_per_minute"),
        "{message}"
    );
    // The Messages door: Anthropic's.
    let refused = post(&gateway, "/v1/messages", &acme, &messages_body()).await;
    retry_after(&refused);
    assert_eq!(refused.headers()["anthropic-ratelimit-requests-limit"], "1");
    assert!(
        refused
            .headers()
            .contains_key("anthropic-ratelimit-requests-reset")
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert_eq!(
        sim.requests().len(),
        1,
        "a refused turn reached the upstream"
    );

    // Another tenant (its own, higher limit) is unaffected, on both doors.
    assert_eq!(
        post(&gateway, CHAT, &globex, &hello("a")).await.status(),
        200
    );
    let messages = post(&gateway, "/v1/messages", &globex, &messages_body()).await;
    assert_eq!(messages.status(), 200);
    assert_eq!(sim.requests().len(), 3);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_max_request_bytes_is_413_at_either_door_before_it_is_read() {
    let db = TestDb::new(hermes_store::Backend::Sqlite).await.unwrap();
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let gateway = replica(db.open().await, &sim.base_url(), |c| {
        c.max_request_bytes(512)
    })
    .await;
    let key = gateway.store.add_gateway_key("acme").await.unwrap();
    let big = hello(&"x".repeat(600));
    let refused = post(&gateway, "/v1/chat/completions", &key, &big).await;
    assert_eq!(refused.status(), 413);
    let body: Value = refused.json().await.unwrap();
    crate::error_says(&body, "512 bytes");
    let mut big = messages_body();
    big["messages"][0]["content"] = json!("x".repeat(600));
    let refused = post(&gateway, "/v1/messages", &key, &big).await;
    assert_eq!(refused.status(), 413);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "request_too_large", "{body}");
    assert!(sim.requests().is_empty());
    gateway.stop().await;
}

/// Polls `gateway` with turns of `key` until one is admitted (each refusal a 429); panics
/// when none is within `bound` of `since`.
async fn admitted_within(gateway: &Running, key: &str, since: Instant, bound: Duration) {
    loop {
        let status = post(gateway, "/v1/chat/completions", key, &hello("again"))
            .await
            .status();
        if status == 200 {
            return;
        }
        assert_eq!(status, 429);
        assert!(
            since.elapsed() < bound,
            "no slot came back within {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A streamed chat request of `key` on `gateway`, its first bytes read: the slot is held until
/// the response is dropped or read to the end.
async fn streaming(gateway: SocketAddr, key: &str) -> reqwest::Response {
    let mut body = hello("a long answer");
    body["stream"] = json!(true);
    let mut response = post_to(gateway, "/v1/chat/completions", key, &body).await;
    assert_eq!(response.status(), 200);
    assert!(response.chunk().await.unwrap().is_some());
    response
}

both!(over_its_concurrency_a_tenant_gets_429_until_a_request_ends);
async fn over_its_concurrency_a_tenant_gets_429_until_a_request_ends(db: TestDb) {
    let sim = paced_deepseek(100).await;
    let limits = Limits::none().defaults(TenantLimits::new(None, n(1)));
    let gateway = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let acme = gateway.store.add_gateway_key("acme").await.unwrap();
    let globex = gateway.store.add_gateway_key("globex").await.unwrap();
    let running = streaming(gateway.addr, &acme).await;
    let upstream = sim.requests().len();
    let refused = post(&gateway, "/v1/messages", &acme, &messages_body()).await;
    retry_after(&refused);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    crate::error_says(&body, "max_concurrent");
    assert_eq!(
        sim.requests().len(),
        upstream,
        "a refused turn reached the upstream"
    );
    // Another tenant has slots of its own.
    let other = post(&gateway, "/v1/chat/completions", &globex, &hello("b")).await;
    assert_eq!(other.status(), 200);
    // The stream ends: its slot is given back.
    let text = running.text().await.unwrap();
    assert!(text.contains("[DONE]"), "{text}");
    admitted_within(&gateway, &acme, Instant::now(), Duration::from_secs(5)).await;
    gateway.stop().await;
}

both!(a_dead_replicas_slot_frees_itself_within_its_ttl);
async fn a_dead_replicas_slot_frees_itself_within_its_ttl(db: TestDb) {
    let sim = paced_deepseek(200).await;
    let ttl = Duration::from_millis(1500);
    let limits = Limits::none()
        .defaults(TenantLimits::new(None, n(1)))
        .slot_ttl(ttl);
    // Replica A runs on a runtime of its own, which the test kills.
    let a_limits = limits.clone();
    let a = Doomed::start(
        db.location.clone(),
        deepseek_settings(&sim.base_url()),
        move |c| c.limits(a_limits),
    );
    let b = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let key = b.store.add_gateway_key("acme").await.unwrap();
    let running = streaming(a.addr, &key).await;
    assert_eq!(
        post(&b, "/v1/chat/completions", &key, &hello("b"))
            .await
            .status(),
        429,
        "replica A's running request holds the tenant's one slot"
    );

    // A dies mid-request: no release, no renewal.
    a.kill();
    let died = Instant::now();
    drop(running);
    assert_eq!(b.store.slots_in_use("acme").await.unwrap(), 1);
    admitted_within(&b, &key, died, ttl + Duration::from_secs(1)).await;
    eprintln!(
        "limits: a dead replica's slot came back after {:?} (TTL {ttl:?})",
        died.elapsed()
    );
    b.stop().await;
}

both!(sixty_four_clients_on_two_replicas_get_the_configured_rate_within_five_percent);
async fn sixty_four_clients_on_two_replicas_get_the_configured_rate_within_five_percent(
    db: TestDb,
) {
    const LIMIT: u32 = 40;
    const WINDOWS: u32 = 3;
    let window = Duration::from_secs(3);
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let limits = Limits::none()
        .defaults(TenantLimits::new(n(LIMIT), None))
        .window(window);
    let replicas = Arc::new([
        replica(db.open().await, &sim.base_url(), |c| {
            c.limits(limits.clone())
        })
        .await,
        replica(db.open().await, &sim.base_url(), |c| {
            c.limits(limits.clone())
        })
        .await,
    ]);
    let key = replicas[0].store.add_gateway_key("acme").await.unwrap();
    // Start at a window's start (every replica computes windows from the epoch), stop a second
    // and a half before the last one ends: a request is admitted when the gateway handles it,
    // and on a loaded CI machine one sent half a second before the end was admitted in the next
    // window (128 of 120, PostgreSQL). Every window fills long before that.
    // The end is read on the wall clock the replicas count windows by, from the first window's
    // start, never from when this task woke: a task that wakes late on a loaded machine would
    // send into a fourth window, the likely cause of a CI run's 127 of 120 (PostgreSQL), which
    // ran 7.7 s from its waking.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into = Duration::from_millis(u64::try_from(now.as_millis() % window.as_millis()).unwrap());
    // The rate is judged on the store's count of each window, which the 200s must all be in:
    // the clients' own count of 200s that arrived before the last window ended read 130 and 131
    // of 120 in two CI runs (PostgreSQL), a count no window's rows can hold (the statement
    // admits only under each shard's share), so it is printed, not judged.
    let first = now - into + window;
    let end = first + window * WINDOWS;
    let stop = end - Duration::from_millis(1500);
    // The store's own count of each window (the one before the first, then the three), read a
    // second after the window ended (its last admissions written) and before a request of the
    // window after next could sweep its rows.
    let store = replicas[0].store.clone();
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap();
    let counted = tokio::spawn(async move {
        let mut counts = Vec::new();
        for k in 0..=WINDOWS {
            let start = first - window + window * k;
            let read_at = start + window + Duration::from_secs(1);
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            tokio::time::sleep(read_at.saturating_sub(now)).await;
            counts.push(store.admitted_requests("acme", ms(start)).await.unwrap());
        }
        counts
    });
    tokio::time::sleep(window - into + Duration::from_millis(50)).await;
    let started = Instant::now();
    let (admitted, refused) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let answered = Arc::new(AtomicU32::new(0));
    let client = reqwest::Client::new();
    let mut clients = Vec::new();
    for c in 0..64usize {
        let (replicas, key, client) = (replicas.clone(), key.clone(), client.clone());
        let (admitted, refused) = (admitted.clone(), refused.clone());
        let answered = answered.clone();
        clients.push(tokio::spawn(async move {
            let gateway = &replicas[c % 2];
            let mut i = 0;
            while SystemTime::now().duration_since(UNIX_EPOCH).unwrap() < stop {
                i += 1;
                let status = client
                    .post(gateway.url("/v1/chat/completions"))
                    .bearer_auth(&key)
                    .json(&hello(&format!("client {c} request {i}")))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16();
                let arrived = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
                if status == 200 {
                    answered.fetch_add(1, Ordering::Relaxed);
                }
                match status {
                    200 if arrived >= end => continue,
                    200 => admitted.fetch_add(1, Ordering::Relaxed),
                    429 => {
                        // A client backs off a little, as the SDKs do.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        refused.fetch_add(1, Ordering::Relaxed)
                    }
                    other => panic!("status {other}"),
                };
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    let elapsed = started.elapsed();
    let mut counts = counted.await.unwrap();
    // Every request has been answered: the window after the last holds all its admissions.
    counts.push(
        replicas[0]
            .store
            .admitted_requests("acme", ms(end))
            .await
            .unwrap(),
    );
    let admitted = admitted.load(Ordering::Relaxed);
    let answered = answered.load(Ordering::Relaxed);
    let expected = LIMIT * WINDOWS;
    eprintln!(
        "limits: {admitted} answered 200 within the {WINDOWS} windows of {window:?} and \
         {answered} in all, {expected} configured ({:+.1}%), {} refused, 64 clients on 2 \
         replicas, {elapsed:?}; the store counted {counts:?} (the window before, the three, \
         the one after)",
        (f64::from(admitted) - f64::from(expected)) * 100.0 / f64::from(expected),
        refused.load(Ordering::Relaxed),
    );
    // The rate: each window's count, as the store keeps it (the one count every replica
    // admits by), within 5% of the limit and never over it.
    assert_eq!(counts[0], 0, "nothing was sent before the first window");
    for (k, &count) in counts[1..=WINDOWS as usize].iter().enumerate() {
        assert!(
            count <= u64::from(LIMIT) && (u64::from(LIMIT) - count) * 20 <= u64::from(LIMIT),
            "window {k}: {count} admitted, {LIMIT} configured: over, or more than 5% under"
        );
    }
    // Every 200 was a counted admission, in some window (one sent before the stop may be
    // admitted in the window after the last on a loaded machine, and counted there), and only
    // admitted turns reached the upstream.
    assert_eq!(
        counts.iter().sum::<u64>(),
        u64::from(answered),
        "a 200 the store did not count"
    );
    assert_eq!(
        sim.requests().len(),
        answered as usize,
        "only admitted turns reached the upstream"
    );
}

both!(a_slot_is_kept_for_the_tenants_next_turn_and_given_back_within_a_second);
async fn a_slot_is_kept_for_the_tenants_next_turn_and_given_back_within_a_second(db: TestDb) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let limits = Limits::none().defaults(TenantLimits::new(None, n(1)));
    let a = replica(db.open().await, &sim.base_url(), |c| {
        c.limits(limits.clone())
    })
    .await;
    let b = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let key = a.store.add_gateway_key("acme").await.unwrap();
    // Replica A's turns follow one another on the one slot it claimed once.
    for i in 0..3 {
        let turn = post(&a, "/v1/chat/completions", &key, &hello(&format!("a{i}"))).await;
        assert_eq!(turn.status(), 200);
    }
    // Kept for A's next turn (the statements test counts no slot statement in a continued
    // turn), the slot holds B's off for about a second, then comes back.
    let ended = Instant::now();
    assert_eq!(a.store.slots_in_use("acme").await.unwrap(), 1);
    let refused = post(&b, "/v1/chat/completions", &key, &hello("b")).await;
    assert_eq!(
        refused.status(),
        429,
        "replica A keeps the tenant's one slot"
    );
    admitted_within(&b, &key, ended, SLOT_KEPT_BOUND).await;
    eprintln!(
        "limits: a kept slot reached another replica after {:?}",
        ended.elapsed()
    );
    a.stop().await;
    b.stop().await;
}

/// How long after its request ended a kept slot is free at the latest: the second it is kept,
/// the renewer's look every 200 ms, and a statement.
const SLOT_KEPT_BOUND: Duration = Duration::from_millis(2500);
