//! A policy per tenant (issue 47): what a tenant may ask for — models, `anthropic-beta` values,
//! server tools, a `max_tokens` cap, a partition on every request — is refused 403 (400 for a
//! missing partition) in the door's own error shape; its tokens per minute and per day, counted
//! from the usage stored for its conversations on any replica, 429 with the token headers each
//! door's SDKs read; a body that arrives too slowly, 408 within the deadline. A refused request
//! reaches no upstream and stores nothing.

use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use hermes_serve::{Limits, Policy, TenantLimits, TenantPolicy};
use hermes_sim::Sim;
use hermes_store::testing::TestDb;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::{
    KEY, KEY_B, Running, TENANT, hello, messages_as, post_as, replica, start, start_for_with,
};

/// A window no test straddles: the first one since the epoch lasts longer than any run.
const ONE_WINDOW: Duration = Duration::from_secs(u32::MAX as u64);

fn patterns(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|p| (*p).to_owned()).collect())
}

fn claude_body() -> Value {
    json!({"model": "anthropic/claude-opus-4-6", "max_tokens": 256,
           "messages": [{"role": "user", "content": "What is new?"}]})
}

fn web_search() -> Value {
    json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2})
}

/// A 403 in Anthropic's shape whose message names `setting`.
async fn forbidden_anthropic(response: reqwest::Response, setting: &str) {
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "permission_error", "{body}");
    crate::error_says(&body, setting);
}

/// [`messages_as`] with `anthropic-beta: context-1m-2025-08-07`.
async fn with_beta(gateway: &Running, key: &str, body: &Value) -> reqwest::Response {
    messages_as(
        gateway,
        key,
        &[("anthropic-beta", "context-1m-2025-08-07")],
        body,
    )
    .await
}

/// A 403 in OpenAI's shape naming `param`, whose message names `setting`.
async fn forbidden_openai(response: reqwest::Response, param: &str, setting: &str) {
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "permission_error", "{body}");
    assert_eq!(body["error"]["code"], "not_allowed", "{body}");
    assert_eq!(body["error"]["param"], param, "{body}");
    crate::error_says(&body, setting);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_without_an_allow_list_is_refused_a_beta_or_a_server_tool_and_nothing_goes_upstream()
 {
    let (sim, gateway) = crate::sim_gateway("anthropic", "anthropic", |c| c).await;

    let beta = with_beta(&gateway, KEY, &claude_body()).await;
    forbidden_anthropic(beta, "allow_betas").await;
    let mut with_tool = claude_body();
    with_tool["tools"] = json!([web_search()]);
    let tool = messages_as(&gateway, KEY, &[], &with_tool).await;
    forbidden_anthropic(tool, "`web_search_20250305` (allow_server_tools)").await;
    // The chat door: an OpenAI built-in tool (not a function) is a server tool too.
    let mut chat = hello("What is new?");
    chat["model"] = json!("anthropic/claude-opus-4-6");
    chat["tools"] = json!([{"type": "web_search"}]);
    forbidden_openai(gateway.chat(&chat).await, "tools", "`web_search`").await;
    assert!(
        sim.requests().is_empty(),
        "a refused request reached the upstream"
    );
    gateway
        .stop_storing_nothing("a refused request stored nothing")
        .await;

    // Allowed for this tenant, the same requests go through, beta and tool as sent.
    let policy = Policy::default().tenant(
        TENANT,
        TenantPolicy::new()
            .allow_betas(patterns(&["context-1m-*"]))
            .allow_server_tools(patterns(&["web_search_*"])),
    );
    let gateway = start_for_with("anthropic", &sim.base_url(), |c| c.policy(policy)).await;
    let mut both = with_tool.clone();
    both["tools"] = json!([web_search()]);
    let allowed = with_beta(&gateway, KEY, &both).await;
    assert_eq!(allowed.status(), 200, "{}", allowed.text().await.unwrap());
    let sent = sim.requests();
    assert_eq!(sent.len(), 1);
    let beta_sent = sent[0]
        .headers
        .iter()
        .any(|(k, v)| k == "anthropic-beta" && v.contains("context-1m-2025-08-07"));
    assert!(beta_sent, "{:?}", sent[0].headers);
    assert_eq!(sent[0].body["tools"][0]["type"], "web_search_20250305");
    // Another tenant keeps the default: none.
    let other = with_beta(&gateway, KEY_B, &claude_body()).await;
    forbidden_anthropic(other, "allow_betas").await;
    assert_eq!(sim.requests().len(), 1);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_outside_the_tenants_patterns_is_403_and_nothing_goes_upstream() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let policy = Policy::new(TenantPolicy::new().allow_models(patterns(&["deepseek/*-flash"])))
        .tenant(
            "tenant-b",
            TenantPolicy::new().allow_models(patterns(&["deepseek/*"])),
        );
    let gateway = start(&sim.base_url(), |c| c.policy(policy)).await;
    // `deepseek/deepseek-v4-pro` is outside the default patterns.
    forbidden_openai(gateway.chat(&hello("hi")).await, "model", "allow_models").await;
    let messages = messages_as(
        &gateway,
        KEY,
        &[],
        &json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 64,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    forbidden_anthropic(messages, "`deepseek/deepseek-v4-pro` (allow_models)").await;
    assert!(sim.requests().is_empty());
    // Inside them: served.
    let mut flash = hello("hi");
    flash["model"] = json!("deepseek/deepseek-v4-flash");
    assert_eq!(gateway.chat(&flash).await.status(), 200);
    // Tenant B's own patterns allow it.
    let b = post_as(gateway.url("/v1/chat/completions"), KEY_B, &hello("hi")).await;
    assert_eq!(b.status(), 200);
    assert_eq!(sim.requests().len(), 2);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_over_the_tenants_cap_is_403_at_either_door_never_clamped() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let policy = Policy::new(TenantPolicy::new().max_tokens(Some(1000)));
    let gateway = start(&sim.base_url(), |c| c.policy(policy)).await;
    for key in ["max_tokens", "max_completion_tokens"] {
        let mut body = hello("hi");
        body[key] = json!(1001);
        forbidden_openai(gateway.chat(&body).await, "max_tokens", "cap of 1000").await;
    }
    let body = json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 1001,
                      "messages": [{"role": "user", "content": "hi"}]});
    forbidden_anthropic(messages_as(&gateway, KEY, &[], &body).await, "cap of 1000").await;
    assert!(sim.requests().is_empty());
    let mut at_cap = hello("hi");
    at_cap["max_tokens"] = json!(1000);
    assert_eq!(gateway.chat(&at_cap).await.status(), 200);
    assert_eq!(sim.requests()[0].body["max_tokens"], 1000, "sent as asked");
    gateway.stop().await;

    // The default cap: 128,000.
    let gateway = start(&sim.base_url(), |c| c).await;
    let mut over = hello("hi");
    over["max_tokens"] = json!(128_001);
    forbidden_openai(gateway.chat(&over).await, "max_tokens", "cap of 128000").await;
    assert_eq!(sim.requests().len(), 1);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_that_must_name_a_partition_gets_400_without_one() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let policy =
        Policy::default().tenant(TENANT, TenantPolicy::new().require_partition(Some(true)));
    let gateway = start(&sim.base_url(), |c| c.policy(policy)).await;
    let refused = gateway.chat(&hello("hi")).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["param"], "user", "{body}");
    crate::error_says(&body, "require_partition");
    let messages = json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 64,
                          "messages": [{"role": "user", "content": "hi"}]});
    let refused = messages_as(&gateway, KEY, &[], &messages).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    crate::error_says(&body, "metadata.user_id");
    assert!(sim.requests().is_empty());
    // Named: the OpenAI `user`, Anthropic's `metadata.user_id`, Claude Code's session header.
    let mut named = hello("hi");
    named["user"] = json!("alice");
    assert_eq!(gateway.chat(&named).await.status(), 200);
    let mut named = messages.clone();
    named["metadata"] = json!({"user_id": "bob"});
    assert_eq!(messages_as(&gateway, KEY, &[], &named).await.status(), 200);
    let header = [(
        "x-claude-code-session-id",
        "6f1c0c1e-1b7a-4c55-9d39-0a7d9c1e2f10",
    )];
    assert_eq!(
        messages_as(&gateway, KEY, &header, &messages)
            .await
            .status(),
        200
    );
    // Another tenant need not.
    let b = post_as(gateway.url("/v1/chat/completions"), KEY_B, &hello("hi")).await;
    assert_eq!(b.status(), 200);
    assert_eq!(sim.requests().len(), 4);
    gateway.stop().await;
}

/// The token headers of a 429 at the chat door: limit, remaining, reset (OpenAI's duration
/// text), and `Retry-After`.
fn openai_token_headers(response: &reqwest::Response, limit: u64) {
    assert_eq!(response.status(), 429);
    let h = response.headers();
    assert_eq!(h["x-ratelimit-limit-tokens"], limit.to_string().as_str());
    assert_eq!(h["x-ratelimit-remaining-tokens"], "0");
    let reset = h["x-ratelimit-reset-tokens"].to_str().unwrap();
    assert!(reset.ends_with('s') && reset.len() > 1, "{reset}");
    assert!(h["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
}

/// The token headers of a 429 at the Messages door: Anthropic's, the reset an RFC 3339 time in
/// the future.
fn anthropic_token_headers(response: &reqwest::Response, limit: u64) {
    assert_eq!(response.status(), 429);
    let h = response.headers();
    assert_eq!(
        h["anthropic-ratelimit-tokens-limit"],
        limit.to_string().as_str()
    );
    assert_eq!(h["anthropic-ratelimit-tokens-remaining"], "0");
    let reset = h["anthropic-ratelimit-tokens-reset"].to_str().unwrap();
    let at = humantime::parse_rfc3339(reset).unwrap();
    assert!(at > std::time::SystemTime::now(), "{reset}");
    assert!(h.contains_key("retry-after"));
}

/// The tokens the store recorded for `tenant` (since the epoch).
async fn stored_tokens(gateway: &Running, tenant: &str) -> u64 {
    gateway.store.tenant_tokens(tenant, 0, 0).await.unwrap().1
}

fn messages_hello() -> Value {
    json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 64,
           "messages": [{"role": "user", "content": "hello"}]})
}

both!(over_its_tokens_per_minute_a_tenant_gets_429_with_the_token_headers);
async fn over_its_tokens_per_minute_a_tenant_gets_429_with_the_token_headers(db: TestDb) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let limits = Limits::none()
        .defaults(TenantLimits::new(None, None).tokens_per_minute(NonZeroU64::new(1)))
        .window(ONE_WINDOW);
    let gateway = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let acme = gateway.store.add_gateway_key("acme").await.unwrap();
    let globex = gateway.store.add_gateway_key("globex").await.unwrap();
    let url = gateway.url("/v1/chat/completions");
    // Nothing spent yet: admitted; its reply's usage is stored.
    assert_eq!(
        post_as(url.clone(), &acme, &hello("one")).await.status(),
        200
    );
    let spent = stored_tokens(&gateway, "acme").await;
    assert!(spent > 0, "the reply's usage is stored");

    let refused = post_as(url.clone(), &acme, &hello("two")).await;
    openai_token_headers(&refused, 1);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    crate::error_says(&body, &format!("used {spent} tokens this minute"));
    crate::error_says(&body, "tokens_per_minute");
    let refused = messages_as(&gateway, &acme, &[], &messages_hello()).await;
    anthropic_token_headers(&refused, 1);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert_eq!(
        sim.requests().len(),
        1,
        "a refused turn reached the upstream"
    );
    assert_eq!(stored_tokens(&gateway, "acme").await, spent);
    // Another tenant has spent nothing.
    assert_eq!(post_as(url, &globex, &hello("a")).await.status(), 200);
    assert_eq!(sim.requests().len(), 2);
    gateway.stop().await;
}

both!(over_its_daily_budget_from_stored_usage_a_tenant_gets_429_on_every_replica);
async fn over_its_daily_budget_from_stored_usage_a_tenant_gets_429_on_every_replica(db: TestDb) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let limits = Limits::none()
        .defaults(TenantLimits::new(None, None).tokens_per_day(NonZeroU64::new(1_000_000)))
        .tenant(
            "acme",
            TenantLimits::new(None, None).tokens_per_day(NonZeroU64::new(1)),
        );
    let a = replica(db.open().await, &sim.base_url(), |c| {
        c.limits(limits.clone())
    })
    .await;
    let b = replica(db.open().await, &sim.base_url(), |c| c.limits(limits)).await;
    let acme = a.store.add_gateway_key("acme").await.unwrap();
    let globex = a.store.add_gateway_key("globex").await.unwrap();
    // Spent on replica A...
    let first = post_as(a.url("/v1/chat/completions"), &acme, &hello("one")).await;
    assert_eq!(first.status(), 200);
    let spent = stored_tokens(&b, "acme").await;
    assert!(spent > 0, "the reply's usage is stored");
    // ...refused on replica B, which counts the same rows, at both doors.
    let refused = post_as(b.url("/v1/chat/completions"), &acme, &hello("two")).await;
    openai_token_headers(&refused, 1);
    let body: Value = refused.json().await.unwrap();
    crate::error_says(&body, "today (UTC)");
    crate::error_says(&body, "tokens_per_day");
    let refused = messages_as(&b, &acme, &[], &messages_hello()).await;
    anthropic_token_headers(&refused, 1);
    // The day ends at 00:00 UTC: Retry-After says so (within a day).
    assert!(
        refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            <= 86_400
    );
    assert_eq!(
        sim.requests().len(),
        1,
        "a refused turn reached the upstream"
    );
    // Another tenant is under its budget.
    let other = post_as(b.url("/v1/chat/completions"), &globex, &hello("a")).await;
    assert_eq!(other.status(), 200);
    assert_eq!(sim.requests().len(), 2);
    a.stop().await;
    b.stop().await;
}

/// Sends `path` a request whose headers promise 1,000 body bytes, then one byte every 100 ms:
/// the status line and body of the answer, and how long it took.
async fn slow_upload(gateway: &Running, path: &str) -> (String, Duration) {
    let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{",
        gateway.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(b" ").await.is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read_all = async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if String::from_utf8_lossy(&answer).contains("}}") {
                        break;
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read_all)
        .await
        .expect("an answer within 10 s while the body still trickles");
    trickle.abort();
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_is_answered_408_in_the_doors_shape_within_the_deadline() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let deadline = Duration::from_millis(700);
    let gateway = start(&sim.base_url(), |c| c.body_read_timeout(deadline)).await;
    let (answer, took) = slow_upload(&gateway, "/v1/chat/completions").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""type":"invalid_request_error""#),
        "{answer}"
    );
    assert!(answer.contains("body_read_timeout"), "{answer}");
    assert!(took >= deadline - Duration::from_millis(200), "{took:?}");
    assert!(took < deadline + Duration::from_secs(2), "{took:?}");
    let (answer, _) = slow_upload(&gateway, "/v1/messages").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""type":"error""#) && answer.contains(r#""timeout_error""#),
        "{answer}"
    );
    // The concurrency slots the slow uploads held are given back.
    let given_back = Instant::now();
    while gateway.store.slots_in_use(TENANT).await.unwrap() > 0 {
        assert!(
            given_back.elapsed() < Duration::from_secs(2),
            "a slot was kept"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(sim.requests().is_empty());
    gateway
        .stop_storing_nothing("a body that never arrived stored nothing")
        .await;
}

/// The Responses door's built-in tools (issue 49): they go to OpenAI's Responses API, exactly as
/// written after the function tools, for a tenant whose policy allows their type; a tenant that
/// may not gets 403, and an upstream that cannot run them a 400 naming the tool. A refused
/// request reaches no upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_tools_go_to_openais_responses_api_only_and_only_where_the_policy_allows() {
    let sim = Sim::start("openai-responses").await.unwrap();
    let web_search = json!({"type": "web_search", "search_context_size": "low"});
    let body = |model: &str| {
        json!({"model": model, "input": "What is new?", "tools": [
            {"type": "function", "name": "now", "parameters": {"type": "object", "properties": {}}},
            web_search.clone(),
        ]})
    };
    let allowing = || {
        Policy::default().tenant(
            TENANT,
            TenantPolicy::new().allow_server_tools(patterns(&["web_search"])),
        )
    };

    // The default policy: no built-in tool.
    let gateway = crate::start_for("openai-responses", &sim.base_url()).await;
    let refused = post_as(
        gateway.url("/v1/responses"),
        KEY,
        &body("openai-responses/gpt-5.2"),
    )
    .await;
    forbidden_openai(refused, "tools", "`web_search` (allow_server_tools)").await;
    assert!(sim.requests().is_empty(), "a refused request went upstream");
    gateway.stop().await;

    // Allowed: sent as written, after the function tool.
    let gateway = start_for_with("openai-responses", &sim.base_url(), |c| {
        c.policy(allowing())
    })
    .await;
    let allowed = post_as(
        gateway.url("/v1/responses"),
        KEY,
        &body("openai-responses/gpt-5.2"),
    )
    .await;
    assert_eq!(allowed.status(), 200, "{}", allowed.text().await.unwrap());
    let sent = sim.requests();
    assert_eq!(sent.len(), 1);
    let tools = sent[0].body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(tools[0]["name"], "now");
    assert_eq!(tools[1], web_search);
    let raw = String::from_utf8_lossy(&sent[0].raw).into_owned();
    assert!(
        raw.contains(r#"{"type":"web_search","search_context_size":"low"}"#),
        "not byte for byte: {raw}"
    );
    gateway.stop().await;

    // Allowed, but to an upstream that cannot run it: 400 naming the tool, nothing sent.
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let gateway = start_for_with("deepseek", &deepseek.base_url(), |c| c.policy(allowing())).await;
    let elsewhere = post_as(
        gateway.url("/v1/responses"),
        KEY,
        &body("deepseek/deepseek-v4-pro"),
    )
    .await;
    assert_eq!(elsewhere.status(), 400);
    let error: Value = elsewhere.json().await.unwrap();
    crate::error_says(&error, "web_search");
    crate::error_says(&error, "OpenAI's Responses API");
    assert!(
        deepseek.requests().is_empty(),
        "sent to an upstream that cannot run it"
    );
    gateway.stop().await;
}
