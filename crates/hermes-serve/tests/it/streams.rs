//! Streams and request parameters against the strict DeepSeek V4 simulator: a failure after
//! deltas reached the client is an in-stream error with no retry and nothing stored; OpenAI's
//! parameters reach the upstream through the engine's mapping.

use hermes_sim::{Sim, Switches};
use serde_json::{Value, json};

use crate::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_deltas_is_an_in_stream_error_with_no_retry_and_nothing_stored() {
    let sim = Sim::start_with("deepseek-v4", Switches::default().failing_mid_stream())
        .await
        .unwrap();
    let gateway = start(&sim.base_url(), |c| c).await;
    let response = gateway.stream_hello().await;
    let text = response.text().await.unwrap();
    let data = crate::sse_data(&text);
    let (last, deltas) = data.split_last().unwrap();
    assert!(!deltas.is_empty(), "deltas first: {text}");
    assert!(
        deltas.iter().all(|c| c["object"] == "chat.completion.chunk"
            && c["choices"][0]["finish_reason"].is_null()),
        "no finish_reason before the end: {text}"
    );
    assert_eq!(deltas[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(last["error"]["message"].is_string(), "{text}");
    assert!(!text.contains("[DONE]"));
    assert_eq!(sim.requests().len(), 1, "no retry once a delta was sent");
    gateway
        .stop_storing_nothing("the half-done step is not stored")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_parameters_reach_the_upstream_through_the_engines_mapping() {
    let (sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let response = gateway
        .chat(&json!({
            "model": "deepseek/deepseek-v4-pro",
            "messages": [{"role": "user", "content": "hello"}],
            "reasoning_effort": "high",
            "max_completion_tokens": 300,
            "max_tokens": 5,
            "stop": "END",
            "seed": 7,
            "user": "u-1",
            "some_future_key": {"ignored": true},
        }))
        .await;
    crate::ok_json(response, "").await;
    let sent = &sim.requests()[0].body;
    assert_eq!(
        sent["max_tokens"], 300,
        "max_completion_tokens wins: {sent}"
    );
    assert_eq!(sent["stop"], json!(["END"]), "{sent}");
    assert_eq!(sent["seed"], 7, "{sent}");
    assert_eq!(sent["user"], "u-1", "{sent}");
    assert!(sent.get("some_future_key").is_none());
    assert_eq!(sent["reasoning_effort"], "high", "{sent}");
    assert_eq!(sent["thinking"], json!({"type": "enabled"}), "{sent}");
    gateway.stop().await;
}

/// Usage is always asked of the upstream (OpenAI streams it only when asked), and reaches the
/// client only when the client asks for it, in OpenAI's usage chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_asks_the_upstream_for_usage_and_passes_it_on_when_the_client_asks() {
    let (sim, gateway) = crate::sim_gateway("openai", "openai", |c| c).await;
    for client_asks in [true, false] {
        let mut request = json!({
            "model": "openai/gpt-4.1",
            "stream": true,
            "messages": [{"role": "user", "content": "hello"}],
        });
        if client_asks {
            request["stream_options"] = json!({"include_usage": true});
        }
        let response = gateway.chat(&request).await;
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        let sent = sim.requests().last().unwrap().body.clone();
        assert_eq!(
            sent["stream_options"],
            json!({"include_usage": true}),
            "asked upstream whatever the client said: {sent}"
        );
        let with_usage: Vec<Value> = crate::sse_data(&text)
            .into_iter()
            .filter(|c| !c["usage"].is_null())
            .collect();
        if client_asks {
            assert_eq!(with_usage.len(), 1, "{text}");
            assert_eq!(with_usage[0]["choices"], json!([]), "{text}");
            assert!(
                with_usage[0]["usage"]["total_tokens"].as_u64().unwrap() > 0,
                "the upstream's counts, not zeros: {text}"
            );
        } else {
            assert!(with_usage.is_empty(), "{text}");
        }
    }
    gateway.stop().await;
}
