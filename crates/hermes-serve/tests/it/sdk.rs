//! The official `openai` Python client (pinned in `.ci/sdk-requirements.txt`, found through
//! `HERMES_SDK_PYTHON`) as a client that drops every reasoning field, against the gateway in
//! front of the strict DeepSeek V4 simulator (must-echo: a tool-call turn without its
//! `reasoning_content` is refused): the gateway restores the first reply's thinking from the
//! store byte for byte, sends the client's tools as defined, and answers in OpenAI's shape,
//! streamed and not. Without a usable Python the tests skip, unless `HERMES_REQUIRE_SDK` is set.

use std::path::Path;

use serde_json::{Value, json};

use crate::KEY;
use crate::replicas::{TOOL_TURN, roles};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/openai_tool_turns.py"
);
const PROBE: &str = "import openai; print(f'openai {openai.__version__}')";

/// Runs the script with `input`, none of the machine's OpenAI settings and no proxy.
fn run(python: &Path, input: &Value) -> Value {
    run_script(python, SCRIPT, "OPENAI_", input)
}

/// Runs the SDK script `script` with `input` on stdin, without the machine's settings whose
/// names start with `settings` and no proxy; what it printed, as JSON.
pub(crate) fn run_script(python: &Path, script: &str, settings: &str, input: &Value) -> Value {
    let (code, stdout, stderr) = hermes_test_support::sdk::run(
        hermes_test_support::sdk::python(python, &[settings]),
        script,
        &input.to_string(),
    )
    .unwrap();
    assert_eq!(code, Some(0), "the script failed: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// Every string a stored message holds under a carrier's key: the thinking, signatures,
/// encrypted blobs and opaque items an upstream minted, which must come back to it byte for byte.
pub(crate) fn minted(value: &Value, under_carrier: bool, skip: &[&str], out: &mut Vec<String>) {
    const CARRIERS: [&str; 10] = [
        "reasoning_content",
        "reasoning_details",
        "signature",
        "thought_signature",
        "thoughtSignature",
        "extra_content",
        "encrypted_content",
        "codex_reasoning_items",
        "native",
        "data",
    ];
    match value {
        Value::String(text) if under_carrier && text.trim().len() > 1 => out.push(text.clone()),
        Value::Array(items) => items
            .iter()
            .for_each(|v| minted(v, under_carrier, skip, out)),
        Value::Object(map) => {
            for (key, v) in map {
                if skip.contains(&key.as_str()) {
                    continue;
                }
                let carrier = under_carrier || CARRIERS.contains(&key.as_str());
                minted(v, carrier, skip, out);
            }
        }
        _ => {}
    }
}

/// The upstreams of the native wires (Anthropic, Gemini, OpenAI's Responses API), each asked to
/// think: `(simulator profile, provider, model, effort)`.
pub(crate) const NATIVE_THINKING: [(&str, &str, &str, Option<&str>); 3] = [
    (
        "anthropic",
        "anthropic",
        "anthropic/claude-opus-4-6",
        Some("high"),
    ),
    (
        "gemini",
        "gemini",
        "gemini/gemini-3-pro-preview",
        Some("high"),
    ),
    (
        "openai-responses",
        "openai-responses",
        "openai-responses/gpt-5.2",
        Some("high"),
    ),
];

/// The carriers of `provider`'s messages that are not replayed to it ([`minted_went_back`]'s
/// `skip`): Gemini's readable thought summaries are for the user, its contract replays only the
/// signatures (docs/spec.md §5).
pub(crate) fn not_replayed(provider: &str) -> &'static [&'static str] {
    if provider == "gemini" {
        &["reasoning_content"]
    } else {
        &[]
    }
}

/// Every carrier `stored` (an assistant message the gateway stored) holds — `skip` keys left
/// out — asserted to be some, and each found in every one of `bodies` (upstream request
/// bodies) JSON-encoded, byte for byte; returned, JSON-encoded too.
pub(crate) fn minted_went_back(
    stored: &hermes_core::Message,
    skip: &[&str],
    bodies: &[&Value],
    case: &str,
) -> Vec<String> {
    let mut carriers = Vec::new();
    minted(
        &serde_json::to_value(stored).unwrap(),
        false,
        skip,
        &mut carriers,
    );
    assert!(
        !carriers.is_empty(),
        "{case}: the turn stored what it minted: {stored:?}"
    );
    let encoded: Vec<String> = carriers
        .into_iter()
        .map(|c| Value::String(c).to_string())
        .collect();
    for body in bodies {
        let body = body.to_string();
        for carrier in &encoded {
            assert!(
                body.contains(carrier.as_str()),
                "{case}: {carrier} did not go back upstream: {body}"
            );
        }
    }
    encoded
}

/// A client that drops every reasoning field holds a two-turn tool conversation through the
/// gateway with `model`, in front of the strict simulator `profile` standing in for `provider`:
/// the simulator accepts both requests (it refuses missing or altered carriers), receives the
/// client's tools, and gets back every carrier it minted, byte for byte. With `header` the
/// second turn names its session; without it the gateway finds the conversation by its history.
async fn a_forgetful_client_holds_a_tool_conversation(
    profile: &str,
    provider: &str,
    model: &str,
    effort: Option<&str>,
    stream: bool,
    header: bool,
) {
    let Some(python) = hermes_test_support::sdk::sdk_python("openai", PROBE) else {
        return;
    };
    let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
    let base = gateway.base();
    let model_name = model.to_owned();
    let effort = effort.map(str::to_owned);
    let seen = tokio::task::spawn_blocking(move || {
        run(
            python,
            &json!({"base_url": base, "key": KEY, "model": model_name, "stream": stream, "header": header, "effort": effort}),
        )
    })
    .await
    .unwrap();
    let (first, session) = one_session_two_turns(&seen, profile);
    if stream {
        assert_eq!(first["repeated_id_or_name"], 0, "{profile}: {seen}");
        assert_eq!(first["chunks_after_finish"], 0, "{profile}: {seen}");
    }
    let requests = sim.requests();
    assert_eq!(
        requests.len(),
        2,
        "{profile}: one upstream request per turn"
    );
    let stored = gateway.store.messages(session).await.unwrap();
    assert_eq!(roles(&gateway.store, session).await, TOOL_TURN, "{profile}");
    minted_went_back(
        &stored[1],
        not_replayed(provider),
        &[&requests[1].body],
        profile,
    );
    assert!(
        requests[0].body.to_string().contains("The time"),
        "{profile}: the client's tool reached the upstream"
    );
    gateway.stop().await;
}

/// Every upstream the issue names, a forgetful client on each, whole and streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgetful_client_holds_tool_conversations_on_every_upstream() {
    // Native wires think when asked to (`reasoning_effort`); the chat relays think anyway.
    for (profile, provider, model, effort) in [
        (
            "openrouter",
            "openrouter",
            "openrouter/anthropic/claude-sonnet-5",
            None,
        ),
        (
            "gemini-openai",
            "gemini-openai",
            "gemini-openai/gemini-3-pro-preview",
            None,
        ),
    ]
    .into_iter()
    .chain(NATIVE_THINKING)
    .chain([(
        "bedrock",
        "bedrock",
        "bedrock/anthropic.claude-opus-4-6-v1:0",
        Some("high"),
    )]) {
        for stream in [false, true] {
            a_forgetful_client_holds_a_tool_conversation(
                profile, provider, model, effort, stream, false,
            )
            .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgetful_client_is_found_by_its_history_without_a_session_header() {
    for stream in [false, true] {
        a_forgetful_client_holds_a_tool_conversation(
            "deepseek-v4",
            "deepseek",
            "deepseek/deepseek-v4-pro",
            None,
            stream,
            false,
        )
        .await;
    }
}

async fn a_client_that_drops_reasoning_holds_a_tool_conversation(stream: bool) {
    let Some(python) = hermes_test_support::sdk::sdk_python("openai", PROBE) else {
        return;
    };
    let (sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let base = gateway.base();
    let seen = tokio::task::spawn_blocking(move || {
        run(
            python,
            &json!({"base_url": base, "key": KEY, "model": "deepseek/deepseek-v4-pro", "stream": stream, "header": true}),
        )
    })
    .await
    .unwrap();
    let (first, session) = one_session_two_turns(&seen, "the header");
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
    assert_eq!(roles(&gateway.store, session).await, TOOL_TURN);
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

/// The script's two turns (`seen["first"]`, `seen["second"]`): a tool call, then the answer, in
/// one session (`case` names the run in failure messages). Returns the first turn and the session.
fn one_session_two_turns<'a>(seen: &'a Value, case: &str) -> (&'a Value, &'a str) {
    let (first, second) = (&seen["first"], &seen["second"]);
    assert_eq!(first["finish"], "tool_calls", "{case}: {seen}");
    assert_eq!(second["finish"], "stop", "{case}: {seen}");
    let session = first["session"]
        .as_str()
        .expect("the reply names its session");
    assert_eq!(
        second["session"], session,
        "{case}: the second turn continued the conversation"
    );
    (first, session)
}
