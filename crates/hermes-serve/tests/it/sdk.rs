//! The official `openai` Python client (pinned in `.ci/sdk-requirements.txt`, found through
//! `HERMES_SDK_PYTHON`) as a client that drops every reasoning field, against the gateway in
//! front of the strict DeepSeek V4 simulator (must-echo: a tool-call turn without its
//! `reasoning_content` is refused): the gateway restores the first reply's thinking from the
//! store byte for byte, sends the client's tools as defined, and answers in OpenAI's shape,
//! streamed and not. Without a usable Python the tests skip, unless `HERMES_REQUIRE_SDK` is set.

use std::path::Path;

use hermes_sim::Sim;
use serde_json::{Value, json};

use crate::{KEY, start};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/openai_tool_turns.py"
);
const PROBE: &str = "import openai; print(f'openai {openai.__version__}')";

/// Runs the script with `input`, none of the machine's OpenAI settings and no proxy.
fn run(python: &Path, input: &Value) -> Value {
    let (code, stdout, stderr) = hermes_test_support::sdk::run(
        hermes_test_support::sdk::python(python, &["OPENAI_"]),
        SCRIPT,
        &input.to_string(),
    )
    .unwrap();
    assert_eq!(code, Some(0), "the script failed: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

async fn a_client_that_drops_reasoning_holds_a_tool_conversation(stream: bool) {
    let Some(python) = hermes_test_support::sdk::sdk_python("openai", PROBE) else {
        return;
    };
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let gateway = start(&sim.base_url(), |c| c).await;
    let base = gateway.base();
    let seen = tokio::task::spawn_blocking(move || {
        run(
            python,
            &json!({"base_url": base, "key": KEY, "model": "deepseek/deepseek-v4-pro", "stream": stream}),
        )
    })
    .await
    .unwrap();
    let (first, second) = (&seen["first"], &seen["second"]);
    assert_eq!(first["finish"], "tool_calls", "{seen}");
    assert_eq!(second["finish"], "stop", "{seen}");
    let session = first["session"]
        .as_str()
        .expect("the reply names its session");
    assert_eq!(
        second["session"], session,
        "the header continued the session"
    );
    let reasoning = first["reasoning"].as_str().unwrap();
    assert!(!reasoning.is_empty(), "the client saw the thinking: {seen}");
    assert!(first["reasoning_tokens"].as_u64().unwrap() > 0, "{seen}");
    let call = &first["tool_calls"][0];
    assert_eq!(call["name"], "now");
    if stream {
        assert_eq!(
            first["repeated_id_or_name"], 0,
            "id and name only in a call's first delta"
        );
        assert_eq!(first["chunks_after_finish"], 0, "{seen}");
    }

    // The strict simulator accepted both requests (the second would have been refused without
    // the first reply's reasoning_content), received the client's tools as defined, and the
    // thinking the client dropped came back from the store byte for byte.
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "function", "function": {"name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}}}])
    );
    let echoed = &requests[1].body["messages"][1];
    assert_eq!(echoed["role"], "assistant");
    assert_eq!(echoed["reasoning_content"], reasoning);
    assert_eq!(echoed["tool_calls"][0]["id"], call["id"]);
    assert_eq!(requests[1].body["messages"][2]["tool_call_id"], call["id"]);
    let stored = gateway.store.messages(session).await.unwrap();
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_drops_reasoning_holds_a_tool_conversation_whole() {
    a_client_that_drops_reasoning_holds_a_tool_conversation(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_drops_reasoning_holds_a_tool_conversation_streamed() {
    a_client_that_drops_reasoning_holds_a_tool_conversation(true).await;
}
