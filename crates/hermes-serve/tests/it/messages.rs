//! The Messages door (`POST /v1/messages`) with the official `anthropic` Python client (pinned in
//! `.ci/sdk-requirements.txt`, found through `HERMES_SDK_PYTHON`; skipped without one unless
//! `HERMES_REQUIRE_SDK` is set) in front of the strict DeepSeek V4, Claude, Gemini and Responses simulators: a
//! two-turn tool conversation with thinking, whole and streamed; the upstream gets the client's
//! tools and its own reasoning back byte for byte (Claude's signatures, which it verifies),
//! never a thinking block the client altered; the client gets the thinking as blocks, whole or
//! streamed: Claude's signed by Claude, DeepSeek's with a signature the gateway mints. A client's
//! own Claude-signed block on a turn the gateway never stored reaches Claude byte for byte and
//! never reaches DeepSeek (with reqwest: no SDK needed). Also: the Anthropic error shape,
//! `x-api-key`, `count_tokens`, a Claude upstream's betas, server tools and thinking object.

use std::path::Path;

use hermes_sim::Sim;
use serde_json::{Value, json};

use crate::{KEY, start, start_for};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/anthropic_tool_turns.py"
);
const PROBE: &str = "import anthropic; print(f'anthropic {anthropic.__version__}')";

fn run(python: &Path, input: &Value) -> Value {
    crate::sdk::run_script(python, SCRIPT, "ANTHROPIC_", input)
}

/// A Messages client holds a two-turn tool conversation with thinking through the gateway with
/// `model`, in front of the strict simulator `profile` standing in for `provider`: keeping the
/// blocks it got (with `forge`, adding an altered thinking block of its own), whole or
/// streamed. The simulator accepts both requests, gets the client's tools, and gets back every
/// carrier it minted byte for byte, never the forgery.
async fn a_messages_client_holds_a_tool_conversation(
    (profile, provider, model): (&str, &str, &str),
    stream: bool,
    forge: bool,
) {
    let Some(python) = hermes_test_support::sdk::sdk_python("anthropic", PROBE) else {
        return;
    };
    let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
    let base = gateway.url("");
    let model_name = model.to_owned();
    let seen = tokio::task::spawn_blocking(move || {
        run(
            python,
            &json!({"base_url": base, "key": KEY, "model": model_name,
                    "stream": stream, "forge": forge}),
        )
    })
    .await
    .unwrap();
    let case = format!("{profile}, stream {stream}, forge {forge}");
    let (first, second) = (&seen["first"], &seen["second"]);
    assert_eq!(first["stop"], "tool_use", "{case}: {seen}");
    assert_eq!(second["stop"], "end_turn", "{case}: {seen}");
    let call = crate::tool_use_of(&first["blocks"])
        .unwrap_or_else(|| panic!("{case}: a tool_use block: {seen}"));
    assert_eq!(call["name"], "now");
    assert!(call["input"].is_object(), "{case}: {call}");
    if stream {
        let events: Vec<&str> = first["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(events.first(), Some(&"message_start"), "{case}: {events:?}");
        assert_eq!(events.last(), Some(&"message_stop"), "{case}: {events:?}");
        for kind in ["content_block_start", "content_block_stop", "message_delta"] {
            assert!(events.contains(&kind), "{case}: {kind} in {events:?}");
        }
    }
    assert!(seen["count"].as_u64().unwrap() > 0, "{case}: {seen}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "{case}: one upstream request per turn");
    assert!(requests.iter().all(|r| r.status == 200), "{case}");
    let upstream = &requests[1].body;
    assert!(
        requests[0].body.to_string().contains("The time"),
        "{case}: the client's tool reached the upstream"
    );
    // Every carrier the upstream minted went back to it byte for byte.
    let stored = first_session_messages(&gateway).await;
    let mut carriers = Vec::new();
    // Gemini's readable thought summaries are for the user: its contract replays only the
    // signatures (docs/spec.md §5).
    let skip: &[&str] = if provider == "gemini" {
        &["reasoning_content"]
    } else {
        &[]
    };
    crate::sdk::minted(
        &serde_json::to_value(&stored[1]).unwrap(),
        false,
        skip,
        &mut carriers,
    );
    assert!(!carriers.is_empty(), "{case}: {:?}", stored[1]);
    let second_body = upstream.to_string();
    for carrier in &carriers {
        let encoded = Value::String(carrier.clone()).to_string();
        assert!(
            second_body.contains(&encoded),
            "{case}: {encoded} did not go back upstream: {second_body}"
        );
    }
    // The client got the thinking as a block, whole or streamed: Claude's own, signed by Claude;
    // another upstream's readable thinking with a signature the gateway minted, which never
    // goes upstream.
    let thinking = crate::of_type(&first["blocks"], "thinking");
    assert!(!thinking.is_empty(), "{case}: {seen}");
    for block in thinking {
        let signature = block["signature"].as_str().unwrap();
        if provider == "anthropic" {
            assert!(
                carriers.iter().any(|c| c == signature),
                "{case}: the signature the client got is the one Claude minted"
            );
        } else {
            assert!(signature.starts_with("hermes1."), "{case}: {block}");
            let stored_text = stored[1]
                .reasoning_content
                .as_ref()
                .or(stored[1].reasoning.as_ref())
                .map(|t| t.text().into_owned());
            assert_eq!(
                block["thinking"].as_str(),
                stored_text.as_deref(),
                "{case}: the block holds the upstream's readable reasoning"
            );
        }
    }
    assert!(
        !second_body.contains("hermes1."),
        "{case}: a gateway signature went upstream: {second_body}"
    );
    assert!(
        !upstream.to_string().contains("FORGED"),
        "{case}: an altered thinking block reached the upstream: {upstream}"
    );
    gateway.stop().await;
}

/// The one session the gateway stored.
async fn first_session(gateway: &crate::Running) -> String {
    let sessions = gateway.store.list().await.unwrap();
    assert_eq!(sessions.len(), 1, "one conversation");
    sessions[0].id.clone()
}

/// The stored messages of the gateway's one conversation.
async fn first_session_messages(gateway: &crate::Running) -> Vec<hermes_core::Message> {
    let id = first_session(gateway).await;
    gateway.store.messages(&id).await.unwrap()
}

const DEEPSEEK: (&str, &str, &str) = ("deepseek-v4", "deepseek", "deepseek/deepseek-v4-pro");
const CLAUDE: (&str, &str, &str) = ("anthropic", "anthropic", "anthropic/claude-opus-4-6");
const GEMINI: (&str, &str, &str) = ("gemini", "gemini", "gemini/gemini-3-pro-preview");
const RESPONSES: (&str, &str, &str) = (
    "openai-responses",
    "openai-responses",
    "openai-responses/gpt-5.2",
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_client_holds_a_tool_conversation_with_thinking_whole_and_streamed() {
    for upstream in [DEEPSEEK, CLAUDE, GEMINI, RESPONSES] {
        for stream in [false, true] {
            a_messages_client_holds_a_tool_conversation(upstream, stream, false).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_thinking_block_never_reaches_the_upstream() {
    for upstream in [DEEPSEEK, CLAUDE] {
        a_messages_client_holds_a_tool_conversation(upstream, false, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_door_answers_errors_in_anthropics_shape_and_takes_x_api_key() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    // Server tools allowed, so the driver's own refusal of one to a non-Claude upstream shows.
    let gateway = start(&sim.base_url(), |c| c.policy(crate::open_policy())).await;
    let body = json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 64,
                      "messages": [{"role": "user", "content": "hello"}]});
    let client = reqwest::Client::new();
    let url = gateway.url("/v1/messages");
    let none = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(none.status(), 401);
    let error: Value = none.json().await.unwrap();
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["type"], "authentication_error", "{error}");
    assert!(sim.requests().is_empty(), "a 401 reaches no upstream");
    let ok = crate::messages_as(&gateway, KEY, &[], &body).await;
    assert_eq!(ok.status(), 200);
    let reply: Value = ok.json().await.unwrap();
    assert_eq!(reply["type"], "message", "{reply}");
    assert_eq!(reply["content"][0]["type"], "thinking", "{reply}");
    assert!(
        crate::is_sealed(&reply["content"][0]["signature"]),
        "{reply}"
    );
    assert_eq!(reply["content"][1]["type"], "text", "{reply}");
    assert_eq!(reply["stop_reason"], "end_turn", "{reply}");
    let mut missing = body.clone();
    missing.as_object_mut().unwrap().remove("max_tokens");
    let bad = gateway.messages(&missing).await;
    assert_eq!(bad.status(), 400);
    let error: Value = bad.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    crate::error_says(&error, "max_tokens");
    let mut server_tool = body.clone();
    server_tool["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
    let refused = gateway.messages(&server_tool).await;
    assert_eq!(refused.status(), 400);
    let error: Value = refused.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tools") && message.contains("`web_search` (web_search_20250305)"),
        "a server tool to a non-Claude upstream is refused by name: {error}"
    );
    let unknown = gateway
        .messages(&json!({"model": "nowhere/x", "max_tokens": 8,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert_eq!(unknown.status(), 404);
    let error: Value = unknown.json().await.unwrap();
    assert_eq!(error["error"]["type"], "not_found_error");
    assert_eq!(
        sim.requests().len(),
        1,
        "only the valid request went upstream"
    );
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_upstream_gets_the_clients_betas_server_tools_and_thinking_object_as_sent() {
    let (sim, gateway) =
        crate::sim_gateway("anthropic", "anthropic", |c| c.policy(crate::open_policy())).await;
    // Odd spacing and an escape: only a byte-for-byte copy matches.
    let server_tool = r#"{"type": "web_search_20250305", "name":"web_search","max_uses":2,"allowed_domains":["caf\u00e9.example"]}"#;
    let thinking = r#"{"type":  "adaptive"}"#;
    let body = format!(
        r#"{{"model":"anthropic/claude-opus-4-6","max_tokens":4096,"thinking":{thinking},"output_config":{{"effort":"low"}},"tools":[{{"name":"now","description":"The time","input_schema":{{"type":"object"}}}},{server_tool}],"messages":[{{"role":"user","content":"What time is it?"}}]}}"#
    );
    let request = reqwest::Client::new()
        .post(gateway.url("/v1/messages"))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "web-search-2025-03-05")
        .header(
            "anthropic-beta",
            "fine-grained-tool-streaming-2025-05-14, web-search-2025-03-05",
        )
        .header("content-type", "application/json")
        .body(body);
    answered(request).await;
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    let sent = String::from_utf8(requests[0].raw.clone()).unwrap();
    assert!(
        sent.contains(&format!(r#"{{"name":"now","description":"The time","input_schema":{{"type":"object"}}}},{server_tool}]"#)),
        "the client's tool, then its server tool byte for byte: {sent}"
    );
    assert!(
        sent.contains(&format!(r#""thinking":{thinking}"#)),
        "{sent}"
    );
    assert!(
        sent.contains(r#""output_config":{"effort":"low"}"#),
        "{sent}"
    );
    let betas: Vec<&str> = requests[0]
        .headers
        .iter()
        .filter(|(k, _)| k == "anthropic-beta")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        betas,
        ["web-search-2025-03-05,fine-grained-tool-streaming-2025-05-14"],
        "each beta once, in one header"
    );
    gateway.stop().await;
}

/// The tool the pass-through tests define.
fn now_tool() -> Value {
    json!([{"name": "now", "description": "The time",
            "input_schema": {"type": "object", "properties": {}}}])
}

/// A tool-loop turn Claude made for a client that talked to Anthropic directly (the gateway
/// never saw it).
struct MadeElsewhere {
    /// The JSON text of each content block, in order.
    blocks: Vec<String>,
    /// The signed thinking block as the client holds it.
    thinking_block: String,
    /// Its text and signature.
    thinking: String,
    signature: String,
    /// The tool call's id.
    call: String,
}

/// The Claude simulator's reply to `[tools=1] what time is it?` with thinking on, its signed
/// thinking block rewritten the way a client may hold it — keys in another order and the first
/// letter of its text escaped (`\u0049` for `I`) — which changes no signed value: only an exact
/// copy of these bytes upstream proves nothing re-serialised the block.
async fn claude_turn_made_elsewhere(sim: &Sim) -> MadeElsewhere {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reply = reqwest::Client::new()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("x-api-key", "sk-test")
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "claude-opus-4-6", "max_tokens": 4096,
                      "thinking": {"type": "adaptive"}, "tools": now_tool(),
                      "messages": [{"role": "user", "content": "[tools=1] what time is it?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let text = reply.text().await.unwrap();
    #[derive(serde::Deserialize)]
    struct Reply<'a> {
        #[serde(borrow)]
        content: Vec<&'a serde_json::value::RawValue>,
    }
    let reply: Reply<'_> = serde_json::from_str(&text).unwrap();
    let mut blocks = Vec::new();
    let (mut signed, mut call) = (None, None);
    for raw in reply.content {
        let block: Value = serde_json::from_str(raw.get()).unwrap();
        match block["type"].as_str().unwrap() {
            "thinking" => {
                let thinking = block["thinking"].as_str().unwrap();
                let signature = block["signature"].as_str().unwrap();
                let first = thinking.chars().next().unwrap();
                assert!(first.is_ascii_alphabetic(), "{thinking}");
                let rest = Value::String(thinking[1..].to_owned()).to_string();
                let rewritten = format!(
                    r#"{{"signature": "{signature}", "thinking": "\u{:04x}{}", "type": "thinking"}}"#,
                    first as u32,
                    &rest[1..rest.len() - 1],
                );
                assert_eq!(
                    serde_json::from_str::<Value>(&rewritten).unwrap(),
                    block,
                    "the same block: {rewritten}"
                );
                blocks.push(rewritten.clone());
                signed = Some((rewritten, thinking.to_owned(), signature.to_owned()));
            }
            kind => {
                if kind == "tool_use" {
                    call = block["id"].as_str().map(str::to_owned);
                }
                blocks.push(raw.get().to_owned());
            }
        }
    }
    let (thinking_block, thinking, signature) = signed.expect("Claude thought first");
    MadeElsewhere {
        blocks,
        thinking_block,
        thinking,
        signature,
        call: call.expect("Claude called the tool"),
    }
}

/// The Messages request continuing `turn` with the tool's result, for `model`, thinking on.
fn continuing(turn: &MadeElsewhere, model: &str) -> String {
    format!(
        r#"{{"model": "{model}", "max_tokens": 2048, "thinking": {{"type": "enabled", "budget_tokens": 1024}},
            "tools": {tools},
            "messages": [
              {{"role": "user", "content": "[tools=1] what time is it?"}},
              {{"role": "assistant", "content": [{blocks}]}},
              {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "{call}", "content": "12:00"}}]}}
            ]}}"#,
        tools = now_tool(),
        blocks = turn.blocks.join(", "),
        call = turn.call,
    )
}

/// `body` to the gateway's Messages door.
async fn send_messages(gateway: &crate::Running, body: String) -> Value {
    let request = reqwest::Client::new()
        .post(gateway.url("/v1/messages"))
        .header("x-api-key", KEY)
        .header("content-type", "application/json")
        .body(body);
    answered(request).await
}

/// Sends `request`: it must be answered 200; the answer's JSON body.
async fn answered(request: reqwest::RequestBuilder) -> Value {
    crate::ok_json(request.send().await.unwrap(), "").await
}

/// A client that began its tool loop with Anthropic directly points at the gateway: its own
/// Claude-signed thinking block (a turn the gateway never stored) reaches the Claude simulator
/// byte for byte with thinking on, is stored as sent and comes back when the client drops it
/// later; the same history to DeepSeek never shows the block, only the must-echo pad.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_own_claude_signed_block_passes_through_to_claude_only() {
    let claude = Sim::start("anthropic").await.unwrap();
    let turn = claude_turn_made_elsewhere(&claude).await;
    // To Claude: the client's own block, a turn the gateway never stored, goes byte for byte;
    // Claude verifies its signature and answers the tool loop with thinking on.
    let gateway = start_for("anthropic", &claude.base_url()).await;
    let reply = send_messages(&gateway, continuing(&turn, "anthropic/claude-opus-4-6")).await;
    assert_eq!(reply["stop_reason"], "end_turn", "{reply}");
    let requests = claude.requests();
    assert_eq!(
        requests.len(),
        2,
        "the direct turn, then one through the gateway"
    );
    let upstream = &requests[1];
    assert_eq!(upstream.status, 200, "{}", upstream.response);
    let raw = String::from_utf8(upstream.raw.clone()).unwrap();
    assert!(
        raw.contains(&turn.thinking_block),
        "the client's block went to Claude byte for byte: {} in {raw}",
        turn.thinking_block
    );
    assert!(
        upstream
            .body
            .get("thinking")
            .is_some_and(|t| t["type"] != "disabled"),
        "thinking stayed on in the tool loop: {raw}"
    );
    // The turn is stored as the client sent it, its block's bytes included (no origin: it is
    // the client's), so a client that drops the block later gets it back.
    let stored = first_session_messages(&gateway).await;
    let items: Vec<&str> = stored[1]
        .reasoning_details
        .iter()
        .flatten()
        .map(|item| item.raw().get())
        .collect();
    assert!(items.contains(&turn.thinking_block.as_str()), "{items:?}");
    assert_eq!(stored[1].origin, None);
    // The client's next turn drops the block: the stored turn brings it back, byte for byte,
    // and Claude (Opus 4.6 keeps earlier thinking) verifies it again.
    let dropped: Vec<&str> = turn
        .blocks
        .iter()
        .filter(|b| **b != turn.thinking_block)
        .map(String::as_str)
        .collect();
    let next = format!(
        r#"{{"model": "anthropic/claude-opus-4-6", "max_tokens": 2048,
            "thinking": {{"type": "enabled", "budget_tokens": 1024}}, "tools": {tools},
            "messages": [
              {{"role": "user", "content": "[tools=1] what time is it?"}},
              {{"role": "assistant", "content": [{dropped}]}},
              {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "{call}", "content": "12:00"}}]}},
              {{"role": "assistant", "content": {answer}}},
              {{"role": "user", "content": "thanks"}}
            ]}}"#,
        tools = now_tool(),
        dropped = dropped.join(", "),
        call = turn.call,
        answer = reply["content"],
    );
    let again = send_messages(&gateway, next).await;
    assert_eq!(again["stop_reason"], "end_turn", "{again}");
    let requests = claude.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].status, 200, "{}", requests[2].response);
    let raw = String::from_utf8(requests[2].raw.clone()).unwrap();
    assert!(
        raw.contains(&turn.thinking_block),
        "the stored block went back: {raw}"
    );
    gateway.stop().await;

    // To DeepSeek: the same history; the client's block is not DeepSeek's and is never sent as
    // reasoning, so the turn gets the must-echo pad.
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let gateway = start(&deepseek.base_url(), |c| c).await;
    let reply = send_messages(&gateway, continuing(&turn, "deepseek/deepseek-v4-pro")).await;
    assert_eq!(reply["stop_reason"], "end_turn", "{reply}");
    let requests = deepseek.requests();
    assert_eq!(requests.len(), 1);
    let raw = String::from_utf8(requests[0].raw.clone()).unwrap();
    let text_inside = Value::String(turn.thinking[1..].to_owned()).to_string();
    for leak in [&text_inside[1..text_inside.len() - 1], &turn.signature] {
        assert!(!raw.contains(leak), "{leak} reached DeepSeek: {raw}");
    }
    let assistant = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()
        .clone();
    assert_eq!(assistant["reasoning_content"], " ", "{assistant}");
    assert!(assistant.get("reasoning_details").is_none(), "{assistant}");
    gateway.stop().await;
}

/// A one-pixel PNG.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// A tool loop whose tool result holds text and an image (Claude Code's file reader returns
/// images so).
fn image_result_body(model: &str) -> Value {
    json!({"model": model, "max_tokens": 1024, "tools": now_tool(),
           "messages": [
               {"role": "user", "content": "[tools=1] what time is it?"},
               {"role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                       {"type": "text", "text": "a clock:"},
                       {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                    "data": PIXEL}}]}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_results_image_reaches_claude_and_a_chat_upstream_refuses_it_by_name() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (sim, gateway) = crate::sim_gateway("anthropic", "anthropic", |c| c).await;
    let reply = gateway
        .messages(&image_result_body("anthropic/claude-opus-4-6"))
        .await;
    assert_eq!(reply.status(), 200, "{}", reply.text().await.unwrap());
    let sent = &sim.requests()[0].body;
    assert_eq!(
        sent["messages"][2]["content"][0]["content"],
        json!([{"type": "text", "text": "a clock:"},
               {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}]),
        "{sent}"
    );
    gateway.stop().await;

    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| c).await;
    let reply = gateway
        .messages(&image_result_body("deepseek/deepseek-v4-pro"))
        .await;
    assert_eq!(reply.status(), 400);
    let error: Value = reply.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("tool result with images"), "{error}");
    assert!(sim.requests().is_empty(), "nothing reached DeepSeek");
    gateway.stop().await;
}

/// The DeepSeek simulator's tool turn through the gateway for partition `user`, and the
/// assistant turn a client sends back: the gateway's thinking block (with `text` in place of
/// its own when given) and the tool call, plus a text block the client added (an edit: the
/// store can no longer line the turn up by its normal form).
async fn deepseek_turn_edited(gateway: &crate::Running, user: &str) -> (String, Value) {
    let first = json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 4096,
                       "thinking": {"type": "enabled", "budget_tokens": 2048},
                       "metadata": {"user_id": user}, "tools": now_tool(),
                       "messages": [{"role": "user", "content": "[tools=1] what time is it?"}]});
    let reply: Value = gateway.messages(&first).await.json().await.unwrap();
    let blocks = reply["content"].as_array().unwrap().clone();
    assert_eq!(blocks[0]["type"], "thinking", "{reply}");
    let thinking = blocks[0]["thinking"].as_str().unwrap().to_owned();
    let mut edited = blocks.clone();
    edited.insert(1, json!({"type": "text", "text": "(checking the clock)"}));
    (thinking, Value::Array(edited))
}

/// The follow-up request answering the tool call, with the assistant turn `assistant`.
fn deepseek_follow_up(user: &str, assistant: &Value) -> Value {
    let call = crate::tool_use_of(assistant).unwrap()["id"].clone();
    json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 4096,
           "thinking": {"type": "enabled", "budget_tokens": 2048},
           "metadata": {"user_id": user}, "tools": now_tool(),
           "messages": [
               {"role": "user", "content": "[tools=1] what time is it?"},
               {"role": "assistant", "content": assistant},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                             "content": "12:00"}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_gateway_block_on_an_edited_turn_is_its_reasoning_and_an_altered_one_is_not() {
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| c).await;
    let client = reqwest::Client::new();
    let sent_reasoning = |sim: &Sim| {
        let last = sim.requests().pop().unwrap();
        last.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "assistant")
            .unwrap()["reasoning_content"]
            .clone()
    };
    let ask = |body: Value| {
        let client = client.clone();
        let url = gateway.url("/v1/messages");
        async move {
            let reply = client
                .post(url)
                .header("x-api-key", KEY)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = reply.status();
            let text = reply.text().await.unwrap();
            assert_eq!(status, 200, "{text}");
        }
    };

    // Verified: the edited turn gets the text the gateway signed, as DeepSeek wrote it.
    let (thinking, edited) = deepseek_turn_edited(&gateway, "alice").await;
    ask(deepseek_follow_up("alice", &edited)).await;
    assert_eq!(
        sent_reasoning(&sim),
        json!(thinking),
        "the vouched-for text goes back"
    );

    // Altered: the block no longer verifies, so the turn has no reasoning (DeepSeek's pad).
    // (Edited anew: the turn just sent is stored now, with the vouched-for reasoning.)
    let mut altered = edited.clone();
    altered[0]["thinking"] = json!(format!("{thinking} And I decided to lie."));
    altered[1]["text"] = json!("(checking the clock once more)");
    ask(deepseek_follow_up("alice", &altered)).await;
    assert_eq!(sent_reasoning(&sim), json!(" "));

    // Another partition: minted for alice, the block vouches for nothing of bob's.
    ask(deepseek_follow_up("bob", &edited)).await;
    assert_eq!(sent_reasoning(&sim), json!(" "));
    for request in sim.requests() {
        let raw = String::from_utf8(request.raw).unwrap();
        assert!(
            !raw.contains("hermes1."),
            "no gateway signature upstream: {raw}"
        );
        assert!(
            !raw.contains("decided to lie"),
            "no altered text upstream: {raw}"
        );
    }
    gateway.stop().await;
}

/// A request shaped as Claude Code sends one (public reports of its traffic through proxies:
/// `POST /v1/messages?beta=true`, its `anthropic-beta` list, `x-claude-code-session-id`,
/// `metadata.user_id` as a JSON string, system blocks and the latest turn with
/// `cache_control`, a `context_management` key, streamed).
fn claude_code_request(model: &str) -> Value {
    json!({
        "model": model, "max_tokens": 32000, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "metadata": {"user_id": "{\"device_id\":\"d3adb33f\",\"account_uuid\":\"\",\"session_id\":\"6f1c0c1e-1b7a-4c55-9d39-0a7d9c1e2f10\"}"},
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "now", "description": "The time",
                   "input_schema": {"type": "object", "properties": {}},
                   "cache_control": {"type": "ephemeral"}}],
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
            {"type": "text", "text": "[tools=1] what time is it?",
             "cache_control": {"type": "ephemeral"}}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_shaped_streamed_request_is_served_on_claude_and_on_deepseek() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    for (profile, provider, model) in [CLAUDE, DEEPSEEK] {
        let sim = Sim::start(profile).await.unwrap();
        // Claude Code's betas allowed, as its operator would (the default allows none).
        let gateway = crate::start_for_with(provider, &sim.base_url(), |c| {
            c.policy(crate::open_policy())
        })
        .await;
        let reply = client
            .post(gateway.url("/v1/messages?beta=true"))
            .header("authorization", format!("Bearer {KEY}"))
            .header("anthropic-version", "2023-06-01")
            .header(
                "anthropic-beta",
                "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14",
            )
            .header("x-claude-code-session-id", "6f1c0c1e-1b7a-4c55-9d39-0a7d9c1e2f10")
            .header("user-agent", "claude-cli/2.1.220 (external, cli)")
            .json(&claude_code_request(model))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{profile}");
        let events = reply.text().await.unwrap();
        for event in [
            "message_start",
            "content_block_start",
            "message_delta",
            "message_stop",
        ] {
            assert!(
                events.contains(&format!("event: {event}")),
                "{profile}: {events}"
            );
        }
        assert!(
            events.contains("\"stop_reason\":\"tool_use\""),
            "{profile}: {events}"
        );
        let sent = sim.requests().pop().unwrap();
        let raw = String::from_utf8(sent.raw.clone()).unwrap();
        // Claude gets the client's top-level keys as sent (issue 45: Claude to Claude, as
        // sent); no other upstream does.
        assert_eq!(
            raw.contains(r#""context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}"#),
            profile == CLAUDE.0,
            "{profile}: {raw}"
        );

        let betas: Vec<&str> = sent
            .headers
            .iter()
            .filter(|(k, _)| k == "anthropic-beta")
            .map(|(_, v)| v.as_str())
            .collect();
        if profile == CLAUDE.0 {
            assert_eq!(
                betas,
                [
                    "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
                ],
                "Claude gets Claude Code's flags as sent (Opus 4.6 needs none of the wire's own)"
            );
        } else {
            assert!(
                betas.is_empty(),
                "{profile}: no Anthropic flags to DeepSeek"
            );
        }
        gateway.stop().await;
    }
}
