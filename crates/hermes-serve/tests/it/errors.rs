//! What the gateway answers with reqwest as the client: 401 before anything reaches an
//! upstream, 400 naming the parameter, 404 for unknown models and sessions, hostile model
//! strings refused, 413 over the body cap, an upstream's 401 as 502 and its 400 as 400 with its
//! message and its 429 with `Retry-After`, keep-alive comments while the upstream is silent and
//! a failure after the stream began as an in-stream error, the liveness, readiness and model
//! list, a non-streamed turn naming its session, the drain bound on shutdown (the cut request
//! answered 503, nothing stored), and the refusal of `Auth::None` off loopback.

use std::sync::Arc;

use hermes_engine::Engine;
use hermes_serve::{Auth, Gateway, ServeConfig, ServeError};
use hermes_sim::Sim;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{KEY, Running, start};

/// POSTs `body` to `/v1/chat/completions` with `key` (and `session`): status, headers, JSON.
async fn post(
    gateway: &Running,
    key: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new()
        .post(gateway.url("/v1/chat/completions"))
        .body(body.to_string())
        .header("content-type", "application/json");
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(session) = session {
        request = request.header("x-hermes-session", session);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, json)
}

/// `hello` to DeepSeek V4 Pro with the gateway key.
async fn ask(gateway: &Running) -> (u16, reqwest::header::HeaderMap, Value) {
    post(gateway, Some(KEY), None, &hello("deepseek/deepseek-v4-pro")).await
}

/// A DeepSeek V4 simulator and a gateway over it, its settings changed by `adjust`.
async fn over_deepseek(adjust: impl FnOnce(ServeConfig) -> ServeConfig) -> (Sim, Running) {
    let (sim, gateway) = crate::deepseek_gateway(adjust).await;
    (sim, gateway)
}

/// Asserts the simulator saw no request, then stops the gateway.
async fn nothing_went_upstream(sim: &Sim, gateway: Running) {
    assert!(sim.requests().is_empty(), "the simulator saw a request");
    gateway.stop().await;
}

/// A one-message request to `model`.
fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unknown_gateway_key_is_401_and_nothing_goes_upstream() {
    let (sim, gateway) = over_deepseek(|c| c).await;
    for key in [None, Some("hk-wrong"), Some("")] {
        let (status, _, body) = post(&gateway, key, None, &hello("deepseek/deepseek-v4-pro")).await;
        assert_eq!(status, 401, "{key:?}: {body}");
        assert_eq!(body["error"]["type"], "authentication_error", "{body}");
        assert_eq!(body["error"]["code"], "invalid_api_key");
    }
    let models = reqwest::get(gateway.url("/v1/models")).await.unwrap();
    assert_eq!(models.status(), 401);
    nothing_went_upstream(&sim, gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_are_400_naming_the_parameter_and_reach_no_upstream() {
    let (sim, gateway) = over_deepseek(|c| c).await;
    let mut n2 = hello("deepseek/deepseek-v4-pro");
    n2["n"] = json!(2);
    let mut wrong_type = hello("deepseek/deepseek-v4-pro");
    wrong_type["temperature"] = json!("hot");
    let mut effort = hello("deepseek/deepseek-v4-pro");
    effort["reasoning_effort"] = json!("enormous");
    let mut no_messages = hello("deepseek/deepseek-v4-pro");
    no_messages["messages"] = json!([]);
    for (body, param) in [
        (n2, "n"),
        (wrong_type, "temperature"),
        (effort, "reasoning_effort"),
        (no_messages, "messages"),
    ] {
        let (status, _, answer) = post(&gateway, Some(KEY), None, &body).await;
        assert_eq!(status, 400, "{param}: {answer}");
        assert_eq!(answer["error"]["param"], param, "{answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error");
    }
    nothing_went_upstream(&sim, gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_models_are_404_and_hostile_model_strings_400() {
    let (sim, gateway) = over_deepseek(|c| c).await;
    for unknown in ["gpt-4o", "nowhere/some-model", "deepseeek/deepseek-v4-pro"] {
        let (status, _, body) = post(&gateway, Some(KEY), None, &hello(unknown)).await;
        assert_eq!(status, 404, "{unknown}: {body}");
        assert_eq!(body["error"]["code"], "model_not_found");
        assert_eq!(body["error"]["param"], "model");
    }
    let long = format!("deepseek/{}", "a".repeat(5000));
    for hostile in [
        "../deepseek/deepseek-v4-pro",
        "deepseek/../../etc/passwd",
        "deepseek%2Fdeepseek-v4-pro",
        "deepseek/deepseek v4",
        "deepseek//deepseek-v4-pro",
        "deepseek/deepseek-v4-pro\u{0}",
        "deepseek/deepseek-v4-pro\r\nX-Injected: 1",
        "deepseek/\u{202e}orp",
        "",
        long.as_str(),
    ] {
        let (status, _, body) = post(&gateway, Some(KEY), None, &hello(hostile)).await;
        assert_eq!(status, 400, "{hostile:?}: {body}");
        assert_eq!(body["error"]["param"], "model", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.len() < 300, "the message echoes no long input");
    }
    // A hostile session header is refused the same way.
    let (status, _, body) = post(
        &gateway,
        Some(KEY),
        Some("../other"),
        &hello("deepseek/deepseek-v4-pro"),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "x-hermes-session");
    nothing_went_upstream(&sim, gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_cap_is_413_in_openais_shape() {
    let (sim, gateway) = over_deepseek(|c| c.max_request_bytes(4096)).await;
    let body = json!({
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": "x".repeat(8000)}],
    });
    let (status, _, answer) = post(&gateway, Some(KEY), None, &body).await;
    assert_eq!(status, 413, "{answer}");
    crate::error_says(&answer, "4096 bytes");
    // Just under the cap passes.
    let (status, _, answer) = ask(&gateway).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(sim.requests().len(), 1);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_401_is_502_and_an_upstream_400_is_400_with_its_message() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Authentication Fails, Your api key is invalid", "type": "authentication_error", "code": "invalid_request_error"}
        })))
        .up_to_n_times(2)
        .mount(&upstream)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "This model's maximum context length is 131072 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}
        })))
        .mount(&upstream)
        .await;
    let gateway = start(&upstream.uri(), |c| c).await;
    let (status, _, body) = ask(&gateway).await;
    assert_eq!(status, 502, "never the client's 401: {body}");
    assert_eq!(body["error"]["type"], "upstream_error");
    // Streamed, refused before any delta: the same status, not a 200 stream.
    let mut streamed = hello("deepseek/deepseek-v4-pro");
    streamed["stream"] = json!(true);
    let (status, _, body) = post(&gateway, Some(KEY), None, &streamed).await;
    assert_eq!(status, 502, "{body}");

    let (status, _, body) = ask(&gateway).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["message"],
        "This model's maximum context length is 131072 tokens"
    );
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_models_answer() {
    let (sim, gateway) = over_deepseek(|c| {
        c.models([("fast".to_owned(), "deepseek/deepseek-v4-flash".to_owned())].into())
    })
    .await;
    let healthz = reqwest::get(gateway.url("/healthz")).await.unwrap();
    assert_eq!(healthz.status(), 200);
    let readyz = reqwest::get(gateway.url("/readyz")).await.unwrap();
    assert_eq!(readyz.status(), 200);
    let models = crate::json_of(
        reqwest::Client::new()
            .get(gateway.url("/v1/models"))
            .bearer_auth(KEY),
    )
    .await;
    let ids = crate::model_ids(&models);
    // The alias, and the one provider whose key is set.
    assert_eq!(ids, ["fast", "deepseek/*"], "{models}");
    // The alias serves.
    let (status, _, body) = post(&gateway, Some(KEY), None, &hello("fast")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"], "fast");
    assert_eq!(sim.requests()[0].body["model"], "deepseek-v4-flash");
    gateway.stop().await;
}

/// `GET /v1/models` lists what the asking tenant may call: a tenant whose `allow_models` names
/// one model sees the alias that names it, not the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_only_what_the_tenant_may_call() {
    let (_sim, gateway) = over_deepseek(|c| {
        c.models(
            [
                ("fast".to_owned(), "deepseek/deepseek-v4-flash".to_owned()),
                ("pro".to_owned(), "deepseek/deepseek-v4-pro".to_owned()),
            ]
            .into(),
        )
        .policy(
            hermes_serve::Policy::default().tenant(
                crate::TENANT_B,
                hermes_serve::TenantPolicy::new()
                    .allow_models(Some(vec!["deepseek/deepseek-v4-flash".to_owned()])),
            ),
        )
    })
    .await;
    let ids = |key: &'static str| {
        let url = gateway.url("/v1/models");
        async move {
            let models = crate::json_of(reqwest::Client::new().get(url).bearer_auth(key)).await;
            models["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(KEY).await, ["fast", "pro", "deepseek/*"]);
    assert_eq!(
        ids(crate::KEY_B).await,
        ["fast"],
        "only what allow_models names"
    );
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_names_its_session_and_the_header_continues_it() {
    let (_sim, gateway) = over_deepseek(|c| c).await;
    let (status, headers, first) = ask(&gateway).await;
    assert_eq!(status, 200, "{first}");
    let session = first["hermes_session"].as_str().unwrap().to_owned();
    assert_eq!(headers["x-hermes-session"], session.as_str());
    assert_eq!(first["object"], "chat.completion");
    assert_eq!(first["choices"][0]["finish_reason"], "stop");
    let usage = &first["usage"];
    assert!(
        usage["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{usage}"
    );
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    let answer = first["choices"][0]["message"]["content"].clone();
    let second = json!({
        "model": "deepseek/deepseek-v4-pro",
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "and then?"},
        ],
    });
    let (status, _, reply) = post(&gateway, Some(KEY), Some(&session), &second).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["hermes_session"], session.as_str());
    assert_eq!(gateway.store.messages(&session).await.unwrap().len(), 4);
    let (status, _, missing) = post(&gateway, Some(KEY), Some("no-such-session"), &second).await;
    assert_eq!(status, 404, "{missing}");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_auth_is_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let store = hermes_engine::store::Store::open(&dir.path().join("s.db"))
        .await
        .unwrap();
    let engine = Engine::builtin().with_store(
        store,
        hermes_engine::Settings::new(hermes_engine::Defaults::default(), Arc::new(|_| None)),
    );
    let gateway = Gateway::new(engine, ServeConfig::new(Auth::None)).unwrap();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let err = gateway
        .serve(listener, std::future::pending())
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::NoAuthOffLoopback(_)), "{err}");
    assert!(err.to_string().contains("loopback"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_upstream_gets_keep_alives_and_a_later_failure_is_an_in_stream_error() {
    let upstream = upstream_answering(
        ResponseTemplate::new(400)
            .set_body_json(json!({"error": {"message": "bad things", "code": "bad"}}))
            .set_delay(std::time::Duration::from_millis(700)),
    )
    .await;
    let gateway = start(&upstream.uri(), |c| {
        c.keep_alive(std::time::Duration::from_millis(100))
    })
    .await;
    let mut body = hello("deepseek/deepseek-v4-pro");
    body["stream"] = json!(true);
    let response = gateway.chat(&body).await;
    assert_eq!(
        response.status(),
        200,
        "the stream started before the failure"
    );
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "{:?}",
        response.headers()
    );
    let text = response.text().await.unwrap();
    let comments = text.lines().filter(|l| l.starts_with(':')).count();
    assert!(comments >= 2, "keep-alive comments while silent: {text:?}");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.len(), 1, "{text:?}");
    let error: Value = serde_json::from_str(data[0]).unwrap();
    assert_eq!(error["error"]["message"], "bad things");
    assert!(!text.contains("[DONE]"));
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_429_is_passed_on_with_retry_after() {
    let upstream = upstream_answering(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({"error": {"message": "slow down", "code": "rate_limited"}})),
    )
    .await;
    let gateway = start(&upstream.uri(), |c| c).await;
    let (status, headers, body) = ask(&gateway).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    crate::error_says(&body, "slow down");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_a_request_after_the_drain_bound_and_stores_nothing() {
    let upstream = upstream_answering(
        ResponseTemplate::new(500).set_delay(std::time::Duration::from_secs(30)),
    )
    .await;
    let gateway = start(&upstream.uri(), |c| {
        c.drain(std::time::Duration::from_millis(300))
    })
    .await;
    let url = gateway.url("/v1/chat/completions");
    let pending = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .bearer_auth(KEY)
            .json(&hello("deepseek/deepseek-v4-pro"))
            .send()
            .await
    });
    // The request reaches the upstream, which stays silent.
    for _ in 0..100 {
        if !upstream.received_requests().await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.received_requests().await.unwrap().len(), 1);
    let store = gateway.store.clone();
    let started = std::time::Instant::now();
    // The store's folder stays until the checks below are done.
    let _dir = gateway.stop().await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the drain bound held: {:?}",
        started.elapsed()
    );
    let cut = pending.await.unwrap().unwrap();
    assert_eq!(cut.status(), 503, "the cut request is answered");
    let body: Value = cut.json().await.unwrap();
    crate::error_says(&body, "shutting down");
    assert!(
        store.list().await.unwrap().is_empty(),
        "nothing half-done stored"
    );
}

/// An upstream that answers every POST with `reply`.
pub(crate) async fn upstream_answering(reply: ResponseTemplate) -> MockServer {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(reply)
        .mount(&upstream)
        .await;
    upstream
}

/// The provider's key variable unset where the gateway runs is the gateway's own configuration,
/// not an upstream refusal: before any upstream request (the gateway's metrics count none), a
/// 500 in the door's shape names the variable to set (there is no value to leak), with
/// `x-should-retry: false` so the SDKs do not retry what only the operator can mend; whole and
/// streamed, at both doors. (DeepSeek at its own registry URL: to a loopback or private base
/// URL a key is optional, so a local simulator would be called keyless.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_upstream_key_is_a_500_naming_its_variable_before_any_upstream_request() {
    let settings =
        hermes_engine::Settings::new(hermes_engine::Defaults::default(), Arc::new(|_: &str| None));
    let gateway = crate::start_over(settings, |c| c, None).await;
    for (door, stream) in [
        ("chat", false),
        ("chat", true),
        ("messages", false),
        ("messages", true),
    ] {
        let body = json!({
            "model": "deepseek/deepseek-v4-pro",
            "max_tokens": 64,
            "stream": stream,
            "messages": [{"role": "user", "content": "hello"}],
        });
        let response = match door {
            "chat" => gateway.chat(&body).await,
            _ => gateway.messages(&body).await,
        };
        let case = format!("{door}, stream {stream}");
        let status = response.status();
        let retry = response.headers().get("x-should-retry").cloned();
        let text = response.text().await.unwrap();
        assert_eq!(status, 500, "{case}: {text}");
        assert_eq!(retry.as_ref().map(|v| v.to_str().unwrap()), Some("false"));
        let answer: Value = serde_json::from_str(&text).unwrap();
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("DEEPSEEK_API_KEY"), "{case}: {answer}");
        assert!(
            message.contains("nothing was sent upstream"),
            "{case}: {answer}"
        );
        assert!(!message.contains("refused"), "{case}: {answer}");
        assert_eq!(answer["error"]["type"], "api_error", "{case}: {answer}");
        if door == "chat" {
            assert_eq!(answer["error"]["code"], "upstream_credentials_missing");
        } else {
            assert_eq!(
                answer["type"], "error",
                "{case}: Anthropic's shape: {answer}"
            );
        }
    }
    let metrics = reqwest::get(gateway.url("/metrics")).await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(metrics.contains("hermes_requests_total{"), "{metrics}");
    assert!(
        !metrics.contains("hermes_upstream_requests_total{"),
        "an upstream request was made: {metrics}"
    );
    gateway.stop().await;
}
