//! Claude Code's own requests through the Messages door, recorded from Claude Code 2.1.332
//! (`tests/fixtures/claude-code-2.1.332-opus-4-8.json`: the first request of `claude -p hello
//! --model claude-opus-4-8`, as it sent it), in front of the strict Claude simulator: a
//! `{"role": "system"}` message inside `messages`, three system blocks (two with
//! `cache_control`), its tools with their own keys, `metadata`, `context_management`,
//! `output_config`, its `thinking` object, its `anthropic-version` and betas. The golden rule:
//! the body Claude receives is the body Claude Code sent, but for what hermes must change (the
//! restored carriers, here).

use hermes_sim::Sim;
use serde_json::{Value, json};

use crate::{KEY, start_for_with};

/// The recorded request.
const RECORDED: &str = include_str!("../fixtures/claude-code-2.1.332-opus-4-8.json");

/// The betas Claude Code 2.1.332 sent with it.
const BETAS: &str = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24";

/// The session header Claude Code sends (its own id for the conversation).
const SESSION: &str = "f2e6e0cb-8d27-4ce6-b949-edcc5a4be148";

/// The recorded body, its prompt asking the simulated model for `tools` tool calls.
fn recorded(tools: usize) -> Value {
    let mut body: Value = serde_json::from_str(RECORDED).unwrap();
    let prompt = &mut body["messages"][0]["content"][1]["text"];
    assert_eq!(prompt, "hello", "the recorded prompt");
    if tools > 0 {
        *prompt = json!(format!("hello [tools={tools}]"));
    }
    body
}

/// POSTs `body` to the Messages door as Claude Code does (its headers, the gateway key as
/// `x-api-key`); returns the status and the body text (the SSE text when streamed).
async fn send(gateway: &crate::Running, body: &Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(gateway.url("/v1/messages?beta=true"))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", BETAS)
        .header("x-claude-code-session-id", SESSION)
        .header("x-app", "cli")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The content blocks of a streamed Messages reply, rebuilt from its events as a client does.
fn streamed_blocks(sse: &str) -> Vec<Value> {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for data in sse.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let event: Value = serde_json::from_str(data).unwrap();
        match event["type"].as_str() {
            Some("content_block_start") => {
                blocks.push(event["content_block"].clone());
                partial.push(String::new());
            }
            Some("content_block_delta") => {
                let i = event["index"].as_u64().unwrap() as usize;
                let delta = &event["delta"];
                let block = &mut blocks[i];
                match delta["type"].as_str() {
                    Some("thinking_delta") => {
                        let text = block["thinking"].as_str().unwrap_or_default().to_owned();
                        block["thinking"] = json!(text + delta["thinking"].as_str().unwrap());
                    }
                    Some("signature_delta") => block["signature"] = delta["signature"].clone(),
                    Some("text_delta") => {
                        let text = block["text"].as_str().unwrap_or_default().to_owned();
                        block["text"] = json!(text + delta["text"].as_str().unwrap());
                    }
                    Some("input_json_delta") => {
                        partial[i].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    other => panic!("unexpected delta {other:?}"),
                }
            }
            _ => {}
        }
    }
    for (block, json) in blocks.iter_mut().zip(partial) {
        if block["type"] == "tool_use" && !json.is_empty() {
            block["input"] = serde_json::from_str(&json).unwrap();
        }
    }
    blocks
}

/// The value of header `name` of a recorded request.
fn header<'a>(request: &'a hermes_sim::RecordedRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_recorded_request_reaches_claude_as_sent() {
    let sim = Sim::start("anthropic").await.unwrap();
    // Claude Code names the model it knows; a pattern forwards every Claude name as sent.
    let gateway = start_for_with("anthropic", &sim.base_url(), |c| {
        // Claude Code sends betas on every request: allowed, as its operator would.
        c.models([("claude-*".to_owned(), "anthropic/*".to_owned())].into())
            .policy(crate::open_policy())
    })
    .await;

    // Turn 1: the recorded request, its prompt asking for one tool call.
    let first = recorded(1);
    let (status, sse) = send(&gateway, &first).await;
    assert_eq!(status, 200, "{sse}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, 200, "{}", requests[0].response);
    assert_eq!(
        requests[0].body, first,
        "Claude receives the body Claude Code sent"
    );
    assert_eq!(
        header(&requests[0], "anthropic-version"),
        Some("2023-06-01"),
        "the client's API version"
    );
    let betas: Vec<&str> = header(&requests[0], "anthropic-beta")
        .unwrap()
        .split(',')
        .collect();
    for beta in BETAS.split(',') {
        assert!(betas.contains(&beta), "{beta} in {betas:?}");
    }
    assert!(
        betas.contains(&"mid-conversation-system-2026-04-07"),
        "the beta its in-place system message needs: {betas:?}"
    );

    // Turn 2: Claude Code's next request, from a client that drops its thinking blocks and
    // reports a failed tool (`is_error`, with a breakpoint of its own on the result).
    let reply = streamed_blocks(&sse);
    let thinking: Vec<Value> = reply
        .iter()
        .filter(|b| b["type"] == "thinking")
        .cloned()
        .collect();
    assert!(
        !thinking.is_empty() && thinking.iter().all(|b| b["signature"].is_string()),
        "Claude's signed thinking reached the client: {reply:?}"
    );
    let call = reply
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap_or_else(|| panic!("a tool call: {reply:?}"))
        .clone();
    let dropped: Vec<Value> = reply
        .iter()
        .filter(|b| b["type"] != "thinking")
        .cloned()
        .collect();
    let result = json!({"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": call["id"], "is_error": true,
        "content": "<tool_use_error>File does not exist.</tool_use_error>",
        "cache_control": {"type": "ephemeral"},
    }]});
    let mut second = first.clone();
    let messages = second["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": dropped}));
    messages.push(result.clone());
    let (status, sse) = send(&gateway, &second).await;
    assert_eq!(status, 200, "{sse}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].status, 200, "{}", requests[1].response);
    // What Claude must receive: the client's body with the thinking it dropped put back, at
    // the head of its turn, byte for byte.
    let mut expected = first.clone();
    let messages = expected["messages"].as_array_mut().unwrap();
    let mut restored = thinking.clone();
    restored.extend(dropped);
    messages.push(json!({"role": "assistant", "content": restored}));
    messages.push(result);
    assert_eq!(
        requests[1].body, expected,
        "Claude receives the client's body, its thinking restored"
    );
    let raw = String::from_utf8(requests[1].raw.clone()).unwrap();
    for block in &thinking {
        let signature = Value::String(block["signature"].as_str().unwrap().to_owned());
        assert!(
            raw.contains(&signature.to_string()),
            "signature byte for byte"
        );
    }
    gateway.stop().await;
}

/// The model names Claude Code sends (`claude --model sonnet` sends `claude-sonnet-5-5`; new
/// names every month) reach their targets through `[serve.models]` patterns (exact names win,
/// then the most literal pattern) and the door's default model; `GET /v1/models` answers
/// Claude Code in Anthropic's shape and an OpenAI client in OpenAI's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_model_names_reach_their_targets_through_patterns_and_defaults() {
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| {
        c.models(
            [
                ("claude-sonnet-*", "deepseek/deepseek-v4-flash"),
                ("claude-*", "deepseek/deepseek-v4-pro"),
                ("claude-sonnet-5-5", "deepseek/deepseek-v4-pro"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
        )
        .default_models(
            [(
                "messages".to_owned(),
                "deepseek/deepseek-v4-flash".to_owned(),
            )]
            .into(),
        )
    })
    .await;
    for (sent, upstream) in [
        ("claude-sonnet-5-5", "deepseek-v4-pro"),
        ("claude-sonnet-5", "deepseek-v4-flash"),
        ("claude-opus-4-8", "deepseek-v4-pro"),
        ("my-team-alias", "deepseek-v4-flash"),
    ] {
        let body = json!({"model": sent, "max_tokens": 64,
                          "messages": [{"role": "user", "content": "hello"}]});
        let response = crate::messages_as(&gateway, KEY, &[], &body).await;
        assert_eq!(response.status(), 200, "{sent}");
        let reply: Value = response.json().await.unwrap();
        assert_eq!(reply["model"], sent, "the client's name in the answer");
        assert_eq!(
            sim.requests().last().unwrap().body["model"],
            upstream,
            "{sent}"
        );
    }
    // The chat door has no default: an unknown name is OpenAI's 404.
    let chat = gateway
        .chat(&json!({"model": "my-team-alias", "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert_eq!(chat.status(), 404);

    let models = |anthropic: bool| {
        let mut request = reqwest::Client::new()
            .get(gateway.url("/v1/models"))
            .header("authorization", format!("Bearer {KEY}"));
        if anthropic {
            request = request.header("anthropic-version", "2023-06-01");
        }
        request.send()
    };
    let anthropic: Value = models(true).await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = anthropic["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["type"], "model", "{m}");
            m["id"].as_str().unwrap()
        })
        .collect();
    assert!(
        ids.contains(&"claude-sonnet-*") && ids.contains(&"claude-sonnet-5-5"),
        "{ids:?}"
    );
    assert_eq!(anthropic["has_more"], false);
    let openai: Value = models(false).await.unwrap().json().await.unwrap();
    assert_eq!(openai["object"], "list");
    assert_eq!(openai["data"][0]["object"], "model");
    gateway.stop().await;
}
