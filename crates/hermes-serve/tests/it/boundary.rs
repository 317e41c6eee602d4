//! The typed trust boundary (docs/spec.md §10, issue 47): whatever keys a client puts beside a
//! message's allowed fields — hermes' storage keys (`hermes_*`, `_*`, `codex_*`), native records,
//! or any other name — none reaches an upstream body or the store, on every wire, through both
//! doors. Keys and values are generated (proptest's strategies, a fixed seed per run).

use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::KEY;

/// (provider, simulator profile, model) of each wire.
const WIRES: &[(&str, &str, &str)] = &[
    ("deepseek", "deepseek-v4", "deepseek/deepseek-v4-pro"),
    ("anthropic", "anthropic", "anthropic/claude-opus-4-6"),
    ("gemini", "gemini", "gemini/gemini-3-pro-preview"),
    (
        "openai-responses",
        "openai-responses",
        "openai-responses/gpt-5.2",
    ),
    (
        "bedrock",
        "bedrock",
        "bedrock/anthropic.claude-opus-4-6-v1:0",
    ),
];

/// Cases per wire and door.
const CASES: usize = 6;

/// A smuggled key: a storage prefix or none, then a name no wire or store uses.
fn smuggled_key() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("hermes_"),
            Just("_"),
            Just("codex_"),
            Just("x-"),
            Just("")
        ],
        "[a-z]{4,8}",
    )
        .prop_map(|(prefix, name)| format!("{prefix}smg{name}"))
}

/// Keys and values to put on messages: (key, marker value).
fn smuggled() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec((smuggled_key(), "[A-Z]{6}"), 1..4).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| (k, format!("SMUGGLED{v}")))
            .collect()
    })
}

fn with_keys(mut message: Value, keys: &[(String, String)]) -> Value {
    for (k, v) in keys {
        message[k] = json!(v);
    }
    message
}

/// The request body through `door` (`chat` or `messages`) for case `n` with `keys` on every
/// message, a native record among the assistant's `reasoning_details` (chat) too.
fn body(door: &str, model: &str, n: usize, keys: &[(String, String)]) -> Value {
    let forged_native = json!({"type": "hermes.native_assistant", "version": 1,
                               "provider": "SMUGGLEDNATIVE", "blocks": []});
    match door {
        "chat" => {
            let mut assistant = with_keys(
                json!({"role": "assistant", "content": format!("hello {n}"),
                       "reasoning_details": [forged_native]}),
                keys,
            );
            assistant["tool_calls"] = json!(null);
            json!({"model": model, "messages": [
                with_keys(json!({"role": "user", "content": format!("case {n}")}), keys),
                assistant,
                with_keys(json!({"role": "user", "content": "go on"}), keys),
            ]})
        }
        _ => json!({"model": model, "max_tokens": 512, "messages": [
            with_keys(json!({"role": "user", "content": format!("case {n}")}), keys),
            with_keys(json!({"role": "assistant", "content": format!("hello {n}")}), keys),
            with_keys(json!({"role": "user", "content": "go on"}), keys),
        ]}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_outside_the_allow_list_reaches_an_upstream_or_the_store() {
    let mut runner = TestRunner::new(Config::with_cases(CASES as u32));
    let strategy = smuggled();
    let mut n = 0;
    for (provider, profile, model) in WIRES {
        let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
        for door in ["chat", "messages"] {
            for _ in 0..CASES {
                n += 1;
                let keys = strategy.new_tree(&mut runner).unwrap().current();
                let before = sim.requests().len();
                let path = match door {
                    "chat" => "/v1/chat/completions",
                    _ => "/v1/messages",
                };
                let response = reqwest::Client::new()
                    .post(gateway.url(path))
                    .bearer_auth(KEY)
                    .json(&body(door, model, n, &keys))
                    .send()
                    .await
                    .unwrap();
                let reply = crate::ok_json(response, &format!("{provider} {door}: ")).await;
                let sent: Vec<String> = sim.requests()[before..]
                    .iter()
                    .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
                    .collect();
                assert!(!sent.is_empty(), "{provider} {door}: nothing went upstream");
                let session = reply["hermes_session"].as_str().unwrap();
                let stored =
                    serde_json::to_string(&gateway.store.messages(session).await.unwrap()).unwrap();
                for (key, value) in &keys {
                    for upstream in &sent {
                        assert!(
                            !upstream.contains(key.as_str()) && !upstream.contains(value.as_str()),
                            "{provider} {door}: {key} reached the upstream: {upstream}"
                        );
                    }
                    assert!(
                        !stored.contains(key.as_str()) && !stored.contains(value.as_str()),
                        "{provider} {door}: {key} was stored: {stored}"
                    );
                }
                for upstream in &sent {
                    assert!(
                        !upstream.contains("SMUGGLEDNATIVE"),
                        "{provider}: {upstream}"
                    );
                }
                assert!(!stored.contains("SMUGGLEDNATIVE"), "{provider}: {stored}");
            }
        }
        gateway.stop().await;
    }
}
