//! `GET /metrics` after a known sequence of requests (two tenants, whole and streamed, a
//! refusal-fallback retry, a 4xx, a 401) against the OpenRouter simulator: every counter and
//! histogram count is exactly what the sequence implies, the tokens agree with the usage the
//! gateway answered with, and the metrics token is required when one is set.

use std::collections::BTreeMap;

use hermes_sim::Switches;
use serde_json::{Value, json};

use crate::{KEY, KEY_B, TENANT, TENANT_B};

/// The series of an exposition: each sample line's name and sorted labels → its value.
fn series(text: &str) -> BTreeMap<(String, BTreeMap<String, String>), f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (head, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').unwrap()),
            None => (head, ""),
        };
        let labels: BTreeMap<String, String> = labels
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap();
                (k.to_owned(), v.trim_matches('"').to_owned())
            })
            .collect();
        out.insert((name.to_owned(), labels), value.parse::<f64>().unwrap());
    }
    out
}

/// The value of `name` with exactly `labels`, 0 when absent.
fn value(
    all: &BTreeMap<(String, BTreeMap<String, String>), f64>,
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    all.get(&(name.to_owned(), labels)).copied().unwrap_or(0.0)
}

/// The sum of `name` over every series whose labels include `labels`.
fn sum(
    all: &BTreeMap<(String, BTreeMap<String, String>), f64>,
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    all.iter()
        .filter(|((n, l), _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, v)| v)
        .sum()
}

/// The session an answer names: its header's, else the first `hermes_session` of its objects.
fn named_session(header: Option<String>, answered: &[Value]) -> Option<String> {
    header.or_else(|| {
        answered
            .iter()
            .find_map(|o| o["hermes_session"].as_str())
            .map(str::to_owned)
    })
}

async fn post(gateway: &crate::Running, key: &str, body: &Value) -> reqwest::Response {
    crate::post_as(gateway.url("/v1/chat/completions"), key, body).await
}

/// The usage a whole reply or a stream's usage chunk reported.
async fn usage_of(response: reqwest::Response, streamed: bool) -> Value {
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    if !streamed {
        return serde_json::from_str::<Value>(&text).unwrap()["usage"].clone();
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .find(|c| !c["usage"].is_null())
        .unwrap()["usage"]
        .clone()
}

/// The metric kinds of an OpenAI usage object, which do not overlap.
fn kinds(usage: &Value) -> [(&'static str, u64); 4] {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap();
    let cached = n("/prompt_tokens_details/cached_tokens");
    let reasoning = n("/completion_tokens_details/reasoning_tokens");
    [
        ("input", n("/prompt_tokens") - cached),
        ("cache_read", cached),
        ("output", n("/completion_tokens") - reasoning),
        ("reasoning", reasoning),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_a_known_sequence_have_the_exact_counts() {
    let (sim, gateway) = crate::sim_gateway("openrouter", "openrouter", |c| c).await;
    let model = "openrouter/anthropic/claude-sonnet-5";
    let tools = json!([{"type": "function", "function": {"name": "now", "description": "the time",
        "parameters": {"type": "object", "properties": {}}}}]);

    // 1. tenant-a, whole: a tool call whose reasoning the simulator mints.
    let first = post(
        &gateway,
        KEY,
        &json!({"model": model, "tools": tools,
                "messages": [{"role": "user", "content": "[tools=1] what time is it?"}]}),
    )
    .await;
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    let mut usages_a = vec![first["usage"].clone()];
    let call = first["choices"][0]["message"].clone();
    let id = call["tool_calls"][0]["id"].as_str().unwrap().to_owned();

    // 2. tenant-b, streamed.
    let streamed = post(
        &gateway,
        KEY_B,
        &json!({"model": model, "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    let usages_b = vec![usage_of(streamed, true).await];

    // 3. tenant-a continues as a forgetful client (no reasoning sent back): the stored carriers
    // are re-attached, the upstream refuses them once, the gateway retries without them.
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    let forgetful = json!({"role": "assistant", "content": call["content"].clone(),
                           "tool_calls": call["tool_calls"].clone()});
    let third = post(
        &gateway,
        KEY,
        &json!({"model": model, "tools": tools, "messages": [
            {"role": "user", "content": "[tools=1] what time is it?"},
            forgetful,
            {"role": "tool", "tool_call_id": id, "content": "12:00"}]}),
    )
    .await;
    usages_a.push(usage_of(third, false).await);
    sim.set_switches(Switches::default());
    let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 400, 200], "one refusal, retried once");

    // 4. tenant-b, a 4xx: a provider no one knows.
    let unknown = post(
        &gateway,
        KEY_B,
        &json!({"model": "nobody/model", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(unknown.status(), 404);
    // 5. no key: 401, no tenant.
    let anonymous = reqwest::Client::new()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    let scraped = reqwest::get(gateway.url("/metrics")).await.unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(
        scraped.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = scraped.text().await.unwrap();
    let all = series(&text);
    let route = "/v1/chat/completions";

    // Requests by route, status and tenant.
    let requests = |status: &str, tenant: &str| {
        value(
            &all,
            "hermes_requests_total",
            &[("route", route), ("status", status), ("tenant", tenant)],
        )
    };
    assert_eq!(requests("200", TENANT), 2.0, "{text}");
    assert_eq!(requests("200", TENANT_B), 1.0, "{text}");
    assert_eq!(requests("404", TENANT_B), 1.0, "{text}");
    assert_eq!(requests("401", "none"), 1.0, "{text}");
    assert_eq!(sum(&all, "hermes_requests_total", &[]), 5.0, "{text}");
    // The latency histogram: real buckets, one observation per request.
    let count = value(
        &all,
        "hermes_request_duration_seconds_count",
        &[("route", route)],
    );
    assert_eq!(count, 5.0, "{text}");
    assert_eq!(
        value(
            &all,
            "hermes_request_duration_seconds_bucket",
            &[("route", route), ("le", "+Inf")]
        ),
        5.0,
        "{text}"
    );
    // Upstream: four requests (one refused), each timed.
    let upstream = [("wire", "chat"), ("provider", "openrouter")];
    assert_eq!(
        value(
            &all,
            "hermes_upstream_request_duration_seconds_count",
            &upstream
        ),
        4.0,
        "{text}"
    );
    let outcome = |o: &str| {
        value(
            &all,
            "hermes_upstream_requests_total",
            &[("wire", "chat"), ("provider", "openrouter"), ("outcome", o)],
        )
    };
    assert_eq!((outcome("ok"), outcome("400")), (3.0, 1.0), "{text}");
    // One refusal-fallback retry; the refused carriers were the store's own, so the fleet
    // learned them.
    assert_eq!(
        value(&all, "hermes_refusal_retries_total", &upstream),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &all,
            "hermes_fleet_verdicts_learned_total",
            &[("wire", "chat")]
        ),
        1.0,
        "{text}"
    );
    // Carriers: request 3's assistant message got its stored details back; requests 1, 2 had
    // no assistant message.
    assert_eq!(
        value(
            &all,
            "hermes_carriers_total",
            &[("wire", "chat"), ("outcome", "reattached")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sum(&all, "hermes_carriers_total", &[]),
        1.0,
        "nothing else happened to a carrier: {text}"
    );
    // Tokens: exactly what the gateway answered, by tenant, in non-overlapping kinds.
    for (tenant, usages) in [(TENANT, &usages_a), (TENANT_B, &usages_b)] {
        let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
        for usage in usages {
            for (kind, n) in kinds(usage) {
                *expected.entry(kind).or_default() += n;
            }
        }
        assert!(expected["output"] > 0, "{usages:?}");
        for (kind, n) in expected {
            assert_eq!(
                value(
                    &all,
                    "hermes_tokens_total",
                    &[
                        ("tenant", tenant),
                        ("provider", "openrouter"),
                        ("kind", kind)
                    ]
                ),
                n as f64,
                "{tenant} {kind}: {text}"
            );
        }
    }
    // Streams in flight: none now.
    assert_eq!(value(&all, "hermes_streams_in_flight", &[]), 0.0, "{text}");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_the_token_when_one_is_set_and_are_absent_when_off() {
    let (sim, gateway) = crate::sim_gateway("openrouter", "openrouter", |c| {
        c.metrics_token(Some("scrape-secret".to_owned()))
    })
    .await;
    let client = reqwest::Client::new();
    // `GET /metrics`, with `bearer` as the token when given.
    let scrape = |bearer: Option<&str>| {
        let request = client.get(gateway.url("/metrics"));
        match bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
        .send()
    };
    let bare = scrape(None).await.unwrap();
    assert_eq!(bare.status(), 401);
    let wrong = scrape(Some("scrape-secreT")).await.unwrap();
    assert_eq!(wrong.status(), 401);
    let body: Value = wrong.json().await.unwrap();
    crate::error_says(&body, "metrics_token");
    // A gateway key is not the metrics token.
    let gateway_key = scrape(Some(KEY)).await.unwrap();
    assert_eq!(gateway_key.status(), 401);
    let right = scrape(Some("scrape-secret")).await.unwrap();
    assert_eq!(right.status(), 200);
    let text = right.text().await.unwrap();
    assert!(text.contains("# TYPE hermes_requests counter"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    gateway.stop().await;

    let off = crate::start_for_with("openrouter", &sim.base_url(), |c| c.metrics(false)).await;
    let absent = client.get(off.url("/metrics")).send().await.unwrap();
    assert_eq!(absent.status(), 404);
    off.stop().await;
}

#[tokio::test]
async fn open_metrics_are_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let store = hermes_engine::store::Store::open(&dir.path().join("s.db"))
        .await
        .unwrap();
    let settings = hermes_engine::Settings::new(
        hermes_engine::Defaults::default(),
        std::sync::Arc::new(|_| None),
    );
    let engine = hermes_engine::Engine::builtin().with_store(store, settings);
    let keys = std::sync::Arc::new(crate::TestKeys(Default::default()));
    let gateway = hermes_serve::Gateway::new(
        engine.clone(),
        hermes_serve::ServeConfig::new(hermes_serve::Auth::Keys(keys.clone())),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let err = gateway
        .serve(listener, std::future::pending())
        .await
        .unwrap_err();
    assert!(
        matches!(err, hermes_serve::ServeError::OpenMetricsOffLoopback(_)),
        "{err}"
    );
    assert!(err.to_string().contains("metrics_token"), "{err}");
    // A blank token is no token: it would let every scraper in.
    let blank = hermes_serve::Gateway::new(
        engine.clone(),
        hermes_serve::ServeConfig::new(hermes_serve::Auth::Keys(keys.clone()))
            .metrics_token(Some("  ".to_owned())),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    assert!(matches!(
        blank.serve(listener, std::future::pending()).await,
        Err(hermes_serve::ServeError::OpenMetricsOffLoopback(_))
    ));
    // With a token it serves (stopped at once).
    let gateway = hermes_serve::Gateway::new(
        engine,
        hermes_serve::ServeConfig::new(hermes_serve::Auth::Keys(keys))
            .metrics_token(Some("t".to_owned())),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    gateway.serve(listener, async {}).await.unwrap();
}

/// Token counts as the normalised convention has them: `input` every prompt token (cache
/// reads and writes included), `output` every output token (reasoning included).
#[derive(Debug, Default, PartialEq)]
struct Counts {
    input: u64,
    output: u64,
    reasoning: u64,
    cache_read: u64,
    cache_write: u64,
}

/// The JSON objects of a recorded response: the body, or each SSE `data:` payload, or each
/// Bedrock event-stream frame's payload.
fn objects(response: &str) -> Vec<Value> {
    if let Ok(whole) = serde_json::from_str::<Value>(response) {
        return vec![whole];
    }
    response
        .lines()
        .filter_map(|line| {
            line.strip_prefix("data: ")
                .or_else(|| {
                    line.strip_prefix("event ")
                        .and_then(|rest| rest.split_once(' ').map(|(_, payload)| payload))
                })
                .and_then(|payload| serde_json::from_str::<Value>(payload).ok())
        })
        .collect()
}

/// What the provider reported for one reply, read from the simulator's response by that
/// provider's documented fields (independently of the wires' capture).
fn reported(profile: &str, response: &str) -> Counts {
    let objects = objects(response);
    let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let last = |key: &str| {
        objects
            .iter()
            .rev()
            .find_map(|o| o.pointer(key).filter(|v| !v.is_null()).cloned())
            .unwrap_or_else(|| panic!("{profile}: no {key} in {response}"))
    };
    match profile {
        "deepseek-v4" | "openai" | "openrouter" => {
            let u = last("/usage");
            Counts {
                input: n(&u, "/prompt_tokens"),
                output: n(&u, "/completion_tokens"),
                reasoning: n(&u, "/completion_tokens_details/reasoning_tokens"),
                cache_read: n(&u, "/prompt_tokens_details/cached_tokens")
                    .max(n(&u, "/prompt_cache_hit_tokens")),
                cache_write: 0,
            }
        }
        "anthropic" => {
            // Whole: the message's usage. Streamed: message_start's, then message_delta's
            // output count (Claude reports no thinking count: it is inside output_tokens).
            let start = objects
                .iter()
                .find_map(|o| o.pointer("/message/usage").or_else(|| o.get("usage")))
                .cloned()
                .unwrap();
            let output = objects
                .iter()
                .rev()
                .find_map(|o| o.pointer("/usage/output_tokens").and_then(Value::as_u64))
                .unwrap();
            let (read, write) = (
                n(&start, "/cache_read_input_tokens"),
                n(&start, "/cache_creation_input_tokens"),
            );
            Counts {
                input: n(&start, "/input_tokens") + read + write,
                output,
                reasoning: 0,
                cache_read: read,
                cache_write: write,
            }
        }
        "bedrock" => {
            let u = last("/usage");
            let (read, write) = (
                n(&u, "/cacheReadInputTokens"),
                n(&u, "/cacheWriteInputTokens"),
            );
            Counts {
                input: n(&u, "/inputTokens") + read + write,
                output: n(&u, "/outputTokens"),
                reasoning: 0,
                cache_read: read,
                cache_write: write,
            }
        }
        "gemini" => {
            let u = last("/usageMetadata");
            let thoughts = n(&u, "/thoughtsTokenCount");
            Counts {
                input: n(&u, "/promptTokenCount") + n(&u, "/toolUsePromptTokenCount"),
                output: n(&u, "/candidatesTokenCount") + thoughts,
                reasoning: thoughts,
                cache_read: n(&u, "/cachedContentTokenCount"),
                cache_write: 0,
            }
        }
        "openai-responses" => {
            let u = objects
                .iter()
                .rev()
                .find_map(|o| {
                    o.pointer("/response/usage")
                        .or_else(|| o.get("usage"))
                        .filter(|u| !u.is_null())
                })
                .cloned()
                .unwrap();
            Counts {
                input: n(&u, "/input_tokens"),
                output: n(&u, "/output_tokens"),
                reasoning: n(&u, "/output_tokens_details/reasoning_tokens"),
                cache_read: n(&u, "/input_tokens_details/cached_tokens"),
                cache_write: 0,
            }
        }
        other => panic!("no usage reading for {other}"),
    }
}

/// Every wire maps its provider's usage the same way: for one turn through each simulator,
/// whole and streamed, through both doors, the usage the gateway answers with, the session's
/// stored counters (what `hermes sessions show` prints) and the metrics' token kinds all equal
/// what the provider reported, read by its own documented fields; reasoning is never counted
/// twice (the metrics' `output` leaves it out) and Anthropic clients get `input_tokens` without
/// the cache's share, as Claude reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wire_counts_tokens_the_same_way_in_answers_sessions_and_metrics() {
    const RESPONSES: &str = "openai-responses";
    const BEDROCK_CLAUDE: &str = "bedrock/anthropic.claude-opus-4-6-v1:0";
    // (simulator profile, provider, model)
    for (profile, provider, model) in [
        ("deepseek-v4", "deepseek", "deepseek/deepseek-v4-pro"),
        ("openai", "openai", "openai/gpt-5.2"),
        ("anthropic", "anthropic", "anthropic/claude-opus-4-6"),
        ("gemini", "gemini", "gemini/gemini-3-pro-preview"),
        (RESPONSES, RESPONSES, "openai-responses/gpt-5.2"),
        ("bedrock", "bedrock", BEDROCK_CLAUDE),
    ] {
        for (door, stream) in [
            ("openai", false),
            ("openai", true),
            ("messages", false),
            ("messages", true),
        ] {
            let case = format!("{profile} through the {door} door, streamed: {stream}");
            let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
            let client = reqwest::Client::new();
            let response = if door == "openai" {
                client
                    .post(gateway.url("/v1/chat/completions"))
                    .bearer_auth(KEY)
                    .json(&json!({"model": model, "stream": stream,
                        "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null },
                        "reasoning_effort": "high",
                        "messages": [{"role": "user", "content": "Why is the sky blue?"}]}))
            } else {
                client
                    .post(gateway.url("/v1/messages"))
                    .bearer_auth(KEY)
                    .json(&json!({"model": model, "stream": stream, "max_tokens": 4096,
                        "output_config": {"effort": "high"},
                        "thinking": {"type": "adaptive"},
                        "messages": [{"role": "user", "content": "Why is the sky blue?"}]}))
            }
            .send()
            .await
            .unwrap();
            assert_eq!(response.status(), 200, "{case}");
            let session = response
                .headers()
                .get(hermes_serve::SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await.unwrap();
            let recorded = sim.requests();
            assert_eq!(recorded.len(), 1, "{case}");
            let expected = reported(profile, &recorded[0].response);
            assert!(
                expected.input > 0 && expected.output > 0,
                "{case}: {expected:?}"
            );

            // The gateway's answer.
            let answered = objects(&text);
            let (answered, session) = if door == "openai" {
                let u = answered
                    .iter()
                    .rev()
                    .find_map(|o| o.get("usage").filter(|u| !u.is_null()))
                    .unwrap_or_else(|| panic!("{case}: {text}"))
                    .clone();
                let session = named_session(session, &answered).unwrap();
                let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap();
                assert_eq!(
                    n("/total_tokens"),
                    expected.input + expected.output,
                    "{case}"
                );
                (
                    Counts {
                        input: n("/prompt_tokens"),
                        output: n("/completion_tokens"),
                        reasoning: n("/completion_tokens_details/reasoning_tokens"),
                        cache_read: n("/prompt_tokens_details/cached_tokens"),
                        cache_write: expected.cache_write,
                    },
                    session,
                )
            } else {
                // Whole: the message's usage; streamed: message_delta's (after every step
                // is stored), which carries the whole count.
                let u = answered
                    .iter()
                    .rev()
                    .find_map(|o| o.get("usage"))
                    .unwrap_or_else(|| panic!("{case}: {text}"))
                    .clone();
                let session = named_session(session, &answered).unwrap_or_default();
                let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap();
                let (read, write) = (
                    n("/cache_read_input_tokens"),
                    n("/cache_creation_input_tokens"),
                );
                (
                    Counts {
                        input: n("/input_tokens") + read + write,
                        output: n("/output_tokens"),
                        reasoning: expected.reasoning,
                        cache_read: read,
                        cache_write: write,
                    },
                    session,
                )
            };
            assert_eq!(answered, expected, "{case}: the answer: {text}");

            // The session's counters (`hermes sessions show`).
            let sessions = gateway.store.list().await.unwrap();
            assert_eq!(sessions.len(), 1, "{case}");
            let meta = &sessions[0];
            if !session.is_empty() {
                assert_eq!(meta.id, session, "{case}");
            }
            let stored = Counts {
                input: meta.input_tokens as u64,
                output: meta.output_tokens as u64,
                reasoning: meta.reasoning_tokens as u64,
                cache_read: meta.cache_read_tokens as u64,
                cache_write: meta.cache_write_tokens as u64,
            };
            assert_eq!(stored, expected, "{case}: the session's counters");

            // The metrics: the same tokens in kinds that do not overlap.
            let all = series(
                &reqwest::get(gateway.url("/metrics"))
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap(),
            );
            let kind = |k: &str| {
                value(
                    &all,
                    "hermes_tokens_total",
                    &[("tenant", TENANT), ("provider", provider), ("kind", k)],
                ) as u64
            };
            assert_eq!(
                Counts {
                    input: kind("input") + kind("cache_read") + kind("cache_write"),
                    output: kind("output") + kind("reasoning"),
                    reasoning: kind("reasoning"),
                    cache_read: kind("cache_read"),
                    cache_write: kind("cache_write"),
                },
                expected,
                "{case}: the metrics"
            );
            assert_eq!(
                kind("output"),
                expected.output - expected.reasoning,
                "{case}"
            );
            gateway.stop().await;
        }
    }
}
