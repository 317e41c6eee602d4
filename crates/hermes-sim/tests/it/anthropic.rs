//! The `anthropic` profile over real loopback HTTP: the three path families (direct `/v1/messages`,
//! Azure Foundry `/anthropic/v1/messages`, Vertex `:rawPredict` / `:streamRawPredict`), the strict
//! schema, tool pairing, signed thinking verified on replay, and the SSE shape.

use hermes_sim::{
    BLOCK_BINDING_BETA, BOUND_MODELS, COMPACTION_BETA, PROFILES, Sim, Switches, anthropic_is_bound,
};
use serde_json::{Value, json};

use crate::common::{Resp, assert_header, assert_redacted, post_json, send};

// ---------------------------------------------------------------- the three doors

const MODEL: &str = "claude-opus-4-6";
/// The refusal of a temperature besides 1 while thinking.
const TEMPERATURE_WITH_THINKING: &str =
    "temperature may only be set to 1 when thinking is enabled or in adaptive mode";
const VERSION: &str = "2026-10-21";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Door {
    Direct,
    Foundry,
    Vertex,
}

const DOORS: [Door; 3] = [Door::Direct, Door::Foundry, Door::Vertex];

impl Door {
    fn path(self, stream: bool) -> String {
        match self {
            Door::Direct => "/v1/messages".to_owned(),
            Door::Foundry => "/anthropic/v1/messages".to_owned(),
            Door::Vertex => format!(
                "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/{MODEL}:{}",
                if stream {
                    "streamRawPredict"
                } else {
                    "rawPredict"
                }
            ),
        }
    }

    fn headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Door::Direct => vec![("anthropic-version", VERSION)],
            Door::Foundry => vec![("x-api-key", "foundry-key"), ("anthropic-version", VERSION)],
            Door::Vertex => vec![("Authorization", "Bearer ya29.token")],
        }
    }

    /// `body` (without `model` / `anthropic_version` / `stream`) as this door wants it.
    fn body(self, body: &Value, stream: bool) -> Value {
        let mut b = body.clone();
        let o = b.as_object_mut().unwrap();
        match self {
            Door::Vertex => {
                o.insert("anthropic_version".into(), json!("vertex-2023-10-16"));
            }
            _ => {
                o.shift_insert(0, "model".into(), json!(MODEL));
            }
        }
        if stream {
            o.insert("stream".into(), json!(true));
        }
        b
    }

    async fn post(self, sim: &Sim, body: &Value, stream: bool) -> Resp {
        let body = self.body(body, stream);
        post_json(sim, &self.path(stream), &self.headers(), &body).await
    }
}

/// Posts to the direct door as is (the body names its model).
async fn post(sim: &Sim, body: &Value) -> Resp {
    post_json(sim, "/v1/messages", &[("anthropic-version", VERSION)], body).await
}

// ---------------------------------------------------------------- SSE

struct Event {
    name: String,
    data: Value,
}

fn events(text: &str) -> Vec<Event> {
    assert!(text.ends_with("\n\n"), "{text}");
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            if name != "error" {
                assert_eq!(data["type"], name.as_str(), "event name = data type");
            }
            Event { name, data }
        })
        .collect()
}

/// Rebuilds the `message` from a complete stream (content blocks in the non-streamed shape).
fn reassemble(evs: &[Event]) -> Value {
    let mut msg = evs[0].data["message"].clone();
    assert_eq!(evs[0].name, "message_start");
    assert_eq!(msg["content"], json!([]));
    let mut content: Vec<Value> = Vec::new();
    let mut partial_json: Vec<String> = Vec::new();
    for e in evs {
        let d = &e.data;
        match e.name.as_str() {
            "content_block_start" => {
                assert_eq!(d["index"], content.len());
                content.push(d["content_block"].clone());
                partial_json.push(String::new());
            }
            "content_block_delta" => {
                let i = d["index"].as_u64().unwrap() as usize;
                let b = &mut content[i];
                let delta = &d["delta"];
                match delta["type"].as_str().unwrap() {
                    "thinking_delta" => {
                        let t = b["thinking"].as_str().unwrap().to_owned();
                        b["thinking"] = json!(t + delta["thinking"].as_str().unwrap());
                    }
                    "signature_delta" => b["signature"] = delta["signature"].clone(),
                    "text_delta" => {
                        let t = b["text"].as_str().unwrap().to_owned();
                        b["text"] = json!(t + delta["text"].as_str().unwrap());
                    }
                    "input_json_delta" => {
                        partial_json[i].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    "compaction_delta" => {
                        for k in ["content", "encrypted_content"] {
                            let t = b[k].as_str().unwrap().to_owned();
                            b[k] = json!(t + delta[k].as_str().unwrap());
                        }
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let i = d["index"].as_u64().unwrap() as usize;
                if content[i]["type"] == "tool_use" {
                    content[i]["input"] = serde_json::from_str(&partial_json[i]).unwrap();
                }
            }
            "message_delta" => {
                msg["stop_reason"] = d["delta"]["stop_reason"].clone();
                msg["stop_sequence"] = d["delta"]["stop_sequence"].clone();
                msg["usage"]["output_tokens"] = d["usage"]["output_tokens"].clone();
            }
            "message_start" | "ping" | "message_stop" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    assert_eq!(evs.last().unwrap().name, "message_stop");
    msg["content"] = Value::Array(content);
    msg
}

/// Posts through `door` and returns the reply `message` (reassembled when streamed).
async fn ask(sim: &Sim, door: Door, body: &Value, stream: bool) -> Value {
    let r = door.post(sim, body, stream).await;
    assert_eq!(r.status, 200, "{door:?} stream={stream}: {}", r.text());
    if stream {
        assert!(r.headers.contains("text/event-stream"));
        reassemble(&events(&r.text()))
    } else {
        let v = r.json();
        // Re-serialising the parsed content gives the received bytes: replaying `content`
        // replays the blocks byte for byte.
        assert!(r.text().contains(&v["content"].to_string()));
        v
    }
}

// ---------------------------------------------------------------- builders

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(content: &Value) -> Value {
    json!({"role": "assistant", "content": content})
}

fn result(id: &str, text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "now", "input": {}})
}

const NOW_TOOL: &str = r#"{"name": "now", "description": "The current time.", "input_schema": {"type": "object", "properties": {}}}"#;

/// A request body (no model) with thinking enabled.
fn thinking_body(messages: &[Value]) -> Value {
    json!({
        "max_tokens": 4096,
        "system": "You are terse.",
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tools": [serde_json::from_str::<Value>(NOW_TOOL).unwrap()],
        "messages": messages
    })
}

/// The same, with the model, for the direct door.
fn direct(messages: &[Value]) -> Value {
    let mut b = thinking_body(messages);
    b.as_object_mut()
        .unwrap()
        .shift_insert(0, "model".into(), json!(MODEL));
    b
}

fn plain(messages: &[Value]) -> Value {
    json!({"model": MODEL, "max_tokens": 1024, "messages": messages})
}

/// An error envelope's message, checking the envelope shape and the request-id prefix.
fn error_message(r: &Resp, status: u16, kind: &str, id_prefix: &str) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    let v = r.json();
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["error"]["type"], kind, "{v}");
    let id = v["request_id"].as_str().unwrap();
    assert!(id.starts_with(id_prefix), "{id}");
    if id_prefix == "req_" {
        assert!(!id.starts_with("req_vrtx_"), "{id}");
    }
    assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
    assert_eq!(v["error"].as_object().unwrap().len(), 2, "{v}");
    v["error"]["message"].as_str().unwrap().to_owned()
}

/// Expects a 400 `invalid_request_error` with exactly `message` on the direct door.
async fn refused(sim: &Sim, body: &Value, message: &str) {
    let r = post(sim, body).await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_"),
        message
    );
}

fn flip_one_byte(s: &str, at: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

const EXPECTED_THINKING: &str = "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

fn expected_thinking(n: usize, found: &str) -> String {
    format!(
        "messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. {EXPECTED_THINKING}"
    )
}

fn modified(n: usize, m: usize) -> String {
    format!(
        "messages.{n}.content.{m}: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."
    )
}

fn invalid_signature(n: usize, m: usize, kind: &str) -> String {
    format!("messages.{n}.content.{m}: Invalid `signature` in `{kind}` block")
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn the_profile_is_in_the_table() {
    let info = PROFILES.iter().find(|p| p.name == "anthropic").unwrap();
    assert_eq!(info.provider, "anthropic");
    assert_eq!(info.model, "claude-opus-4-6");
    assert!(info.about.contains("/v1/messages"), "{}", info.about);
    let sim = Sim::start("anthropic").await.unwrap();
    assert_eq!(sim.profile(), "anthropic");
    assert!(sim.base_url().starts_with("http://127.0.0.1:"));
}

#[tokio::test]
async fn a_signed_three_step_tool_loop_is_accepted_on_every_door_streamed_and_not() {
    for door in DOORS {
        for stream in [false, true] {
            let sim = Sim::start("anthropic").await.unwrap();
            let mut messages = vec![user("What time is it? [tools=3] [redacted]")];
            let mut ids = Vec::new();
            let last = loop {
                assert!(ids.len() <= 3, "the loop did not end");
                let body = thinking_body(&messages);
                let msg = ask(&sim, door, &body, stream).await;
                assert_eq!(msg["type"], "message");
                assert_eq!(msg["role"], "assistant");
                assert_eq!(msg["model"], MODEL);
                assert!(msg["stop_sequence"].is_null());
                let prefix = if door == Door::Vertex {
                    "msg_vrtx_"
                } else {
                    "msg_"
                };
                assert!(msg["id"].as_str().unwrap().starts_with(prefix), "{msg}");
                let usage = &msg["usage"];
                for k in [
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ] {
                    assert!(usage[k].is_u64(), "{k}: {usage}");
                }
                let content = msg["content"].as_array().unwrap();
                assert_eq!(content[0]["type"], "thinking", "{msg}");
                assert!(!content[0]["thinking"].as_str().unwrap().is_empty());
                assert!(content[0]["signature"].as_str().unwrap().len() > 40);
                assert_eq!(content[1]["type"], "redacted_thinking");
                assert!(content[1]["data"].as_str().unwrap().len() > 40);
                if stream {
                    // The stream carries exactly what the non-streamed reply does.
                    let whole = ask(&sim, door, &body, false).await;
                    assert_eq!(msg["content"], whole["content"], "{door:?}");
                    assert_eq!(msg["stop_reason"], whole["stop_reason"]);
                }
                if msg["stop_reason"] == "end_turn" {
                    break msg;
                }
                assert_eq!(msg["stop_reason"], "tool_use");
                assert_eq!(content.len(), 3);
                let call = &content[2];
                assert_eq!(call["type"], "tool_use");
                assert_eq!(call["name"], "now");
                assert_eq!(call["input"]["step"], ids.len() + 1);
                let id = call["id"].as_str().unwrap().to_owned();
                assert!(id.starts_with("toolu_"), "{id}");
                messages.push(assistant(&msg["content"]));
                messages.push(result(
                    &id,
                    &format!("2026-01-0{}T00:00:00Z", ids.len() + 1),
                ));
                ids.push(id);
            };
            assert_eq!(ids.len(), 3);
            let text = last["content"][2]["text"].as_str().unwrap();
            assert!(text.contains("Done after 3 tool calls"), "{text}");
            assert!(text.contains("2026-01-03T00:00:00Z"), "{text}");
            // A follow-up turn replays the whole signed history.
            messages.push(assistant(&last["content"]));
            messages.push(user("thanks"));
            let msg = ask(&sim, door, &thinking_body(&messages), stream).await;
            assert_eq!(msg["stop_reason"], "end_turn");

            let rec = sim.requests();
            assert!(rec.iter().all(|r| r.status == 200), "{door:?}");
            assert_eq!(rec[0].path, door.path(stream));
            assert_redacted(&rec, &["x-api-key", "authorization"]);
            let has = |k: &str| rec[0].headers.iter().any(|(h, _)| h == k);
            match door {
                Door::Direct => assert!(has("anthropic-version")),
                Door::Foundry => assert!(has("x-api-key") && has("anthropic-version")),
                Door::Vertex => assert!(has("authorization")),
            }
        }
    }
}

/// One step of a `[tools=N]` loop on the direct door: the request's messages plus the reply.
async fn first_step(sim: &Sim, text: &str) -> (Vec<Value>, Value) {
    let messages = vec![user(text)];
    let msg = ask(sim, Door::Direct, &thinking_body(&messages), false).await;
    assert_eq!(msg["stop_reason"], "tool_use", "{msg}");
    (messages, msg["content"].clone())
}

/// `messages` + the assistant `content` + a result for its tool call.
fn in_flight(messages: &[Value], content: &Value) -> Vec<Value> {
    let id = content
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut out = messages.to_vec();
    out.push(assistant(content));
    out.push(result(&id, "12:00"));
    out
}

/// Posts on the direct door and expects a 200.
async fn accepted(sim: &Sim, body: &Value) -> Value {
    let r = post(sim, body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn tampered_signatures_and_thinking_texts_are_refused() {
    let sim = Sim::start("anthropic").await.unwrap();
    let (messages, content) = first_step(&sim, "time? [tools=2] [redacted]").await;
    accepted(&sim, &direct(&in_flight(&messages, &content))).await;

    // One byte of the stored signature changed.
    let sig = content[0]["signature"].as_str().unwrap();
    let mut c = content.clone();
    c[0]["signature"] = json!(flip_one_byte(sig, 10));
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        &invalid_signature(1, 0, "thinking"),
    )
    .await;
    // A blank signature does not verify; a missing one is a schema error.
    c[0]["signature"] = json!("");
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        &invalid_signature(1, 0, "thinking"),
    )
    .await;
    c[0].as_object_mut().unwrap().shift_remove("signature");
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        "messages.1.content.0.thinking.signature: Field required",
    )
    .await;

    // The thinking text changed under a genuine signature.
    let mut c = content.clone();
    let text = c[0]["thinking"].as_str().unwrap().to_owned();
    c[0]["thinking"] = json!(format!("{text} "));
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        &invalid_signature(1, 0, "thinking"),
    )
    .await;

    // Redacted data must verify too.
    let mut c = content.clone();
    let data = c[1]["data"].as_str().unwrap().to_owned();
    c[1]["data"] = json!(flip_one_byte(&data, 30));
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        &invalid_signature(1, 1, "redacted_thinking"),
    )
    .await;

    // The same checks hold with thinking off: history is still verified.
    let mut body = direct(&in_flight(&messages, &content));
    body["thinking"] = json!({"type": "disabled"});
    accepted(&sim, &body).await;
    let mut c = content.clone();
    c[0]["signature"] = json!(flip_one_byte(sig, 10));
    let mut body = direct(&in_flight(&messages, &c));
    body["thinking"] = json!({"type": "disabled"});
    refused(&sim, &body, &invalid_signature(1, 0, "thinking")).await;
}

#[tokio::test]
async fn an_earlier_turns_thinking_may_be_dropped_but_its_prefix_may_not_change() {
    let sim = Sim::start("anthropic").await.unwrap();
    let (messages, step1) = first_step(&sim, "time? [tools=1]").await;
    let mut history = in_flight(&messages, &step1);
    let fin = accepted(&sim, &direct(&history)).await;
    assert_eq!(fin["stop_reason"], "end_turn");
    assert_eq!(fin["content"][0]["type"], "thinking");
    history.push(assistant(&fin["content"]));
    history.push(user("and the date? [tools=1]"));
    accepted(&sim, &direct(&history)).await;

    // Dropping turn 1's thinking block changes no later signature.
    let without: Vec<Value> = step1
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] != "thinking")
        .cloned()
        .collect();
    let mut dropped = history.clone();
    dropped[1] = assistant(&json!(without));
    accepted(&sim, &direct(&dropped)).await;
    // So does moving cache_control breakpoints around and writing a string as a text block.
    let mut moved = history.clone();
    moved[0] = json!({"role": "user", "content": [
        {"type": "text", "text": "time? [tools=1]", "cache_control": {"type": "ephemeral"}}
    ]});
    let mut body = direct(&moved);
    body["system"] = json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]);
    accepted(&sim, &body).await;

    // Editing the first user message invalidates turn 1's signature (and, with turn 1's
    // thinking dropped, turn 2's).
    let mut edited = history.clone();
    edited[0] = user("time?? [tools=1]");
    refused(&sim, &direct(&edited), &invalid_signature(1, 0, "thinking")).await;
    dropped[0] = user("time?? [tools=1]");
    refused(
        &sim,
        &direct(&dropped),
        &invalid_signature(3, 0, "thinking"),
    )
    .await;
    // So does editing a tool result, or the system prompt.
    let mut edited = history.clone();
    edited[2] = result(step1[1]["id"].as_str().unwrap(), "13:00");
    refused(&sim, &direct(&edited), &invalid_signature(3, 0, "thinking")).await;
    let mut body = direct(&history);
    body["system"] = json!("You are verbose.");
    refused(&sim, &body, &invalid_signature(1, 0, "thinking")).await;
}

#[tokio::test]
async fn the_final_assistant_turn_of_a_tool_loop_must_start_with_thinking() {
    let sim = Sim::start("anthropic").await.unwrap();
    let (messages, content) = first_step(&sim, "time? [tools=2]").await;
    let call = content[1].clone();
    assert_eq!(call["type"], "tool_use");
    refused(
        &sim,
        &direct(&in_flight(&messages, &json!([call.clone()]))),
        &expected_thinking(1, "tool_use"),
    )
    .await;
    let with_text = json!([{"type": "text", "text": "Let me check."}, call.clone()]);
    refused(
        &sim,
        &direct(&in_flight(&messages, &with_text)),
        &expected_thinking(1, "text"),
    )
    .await;
    // Adaptive thinking has the same rule; with thinking disabled the history is accepted.
    let mut body = direct(&in_flight(&messages, &json!([call.clone()])));
    body["thinking"] = json!({"type": "adaptive"});
    refused(&sim, &body, &expected_thinking(1, "tool_use")).await;
    body["thinking"] = json!({"type": "disabled"});
    let reply = accepted(&sim, &body).await;
    assert!(
        reply["content"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking"),
        "{reply}"
    );
    // Once the loop is over (a user text turn follows), an earlier turn needs no thinking.
    let mut later = in_flight(&messages, &json!([call]));
    later.push(assistant(&json!([{"type": "text", "text": "It is noon."}])));
    later.push(user("thanks"));
    accepted(&sim, &direct(&later)).await;
}

#[tokio::test]
async fn text_after_the_tool_results_still_leaves_the_loop_in_flight() {
    // A user turn that carries `tool_result` blocks and then text (tool results first, text after
    // them, as the Messages API takes a user's words beside tool results) is still the loop's
    // "lastmost set of `tool_use` and `tool_result` blocks": the step before it must start with
    // its thinking, unmodified.
    let sim = Sim::start("anthropic").await.unwrap();
    let (messages, content) = first_step(&sim, "time? [tools=2]").await;
    let call = content[1].clone();
    let steered = |step: &Value| {
        let mut out = in_flight(&messages, step);
        out.last_mut().unwrap()["content"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "text", "text": "and in Tokyo?"}));
        out
    };
    refused(
        &sim,
        &direct(&steered(&json!([call]))),
        &expected_thinking(1, "tool_use"),
    )
    .await;
    let mut tampered = content.clone();
    tampered[0]["thinking"] = json!("edited");
    let r = post(&sim, &direct(&steered(&tampered))).await;
    assert_eq!(r.status, 400, "{}", r.text());
    accepted(&sim, &direct(&steered(&content))).await;
}

#[tokio::test]
async fn the_latest_turns_thinking_blocks_cannot_be_modified() {
    let sim = Sim::start("anthropic").await.unwrap();
    let (messages, content) = first_step(&sim, "time? [tools=2] [redacted]").await;
    let b = content.as_array().unwrap().clone();
    let (think, redacted, call) = (&b[0], &b[1], &b[2]);
    assert_eq!(redacted["type"], "redacted_thinking");
    let cases = [
        // The redacted block dropped.
        (json!([think, call]), 1),
        // Reordered.
        (json!([redacted, think, call]), 0),
        // The thinking block dropped.
        (json!([redacted, call]), 0),
        // A block repeated.
        (json!([think, redacted, redacted, call]), 2),
        (json!([think, think, redacted, call]), 1),
        // A thinking block moved after the tool call.
        (json!([think, call, redacted]), 1),
    ];
    for (c, at) in cases {
        refused(&sim, &direct(&in_flight(&messages, &c)), &modified(1, at)).await;
    }
    accepted(&sim, &direct(&in_flight(&messages, &content))).await;

    // In an earlier turn, dropping one block of the pair is allowed.
    let mut history = in_flight(&messages, &content);
    let step2 = accepted(&sim, &direct(&history)).await;
    assert_eq!(step2["stop_reason"], "tool_use");
    history[1] = assistant(&json!([think, call]));
    let id = step2["content"][2]["id"].as_str().unwrap().to_owned();
    let mut next = history.clone();
    next.push(assistant(&step2["content"]));
    next.push(result(&id, "12:01"));
    accepted(&sim, &direct(&next)).await;
    // A thinking block of an earlier turn replayed in the latest one does not verify there.
    let mut c = step2["content"].clone();
    c[0] = think.clone();
    let mut moved = history.clone();
    moved.push(assistant(&c));
    moved.push(result(&id, "12:01"));
    refused(&sim, &direct(&moved), &invalid_signature(3, 0, "thinking")).await;
}

#[tokio::test]
async fn unpaired_tool_use_and_orphan_results_are_refused() {
    let sim = Sim::start("anthropic").await.unwrap();
    let unpaired = |ids: &str| {
        format!(
            "`tool_use` ids were found without `tool_result` blocks immediately after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        )
    };
    let two = assistant(&json!([tool_use("toolu_A"), tool_use("toolu_B")]));
    refused(
        &sim,
        &plain(&[user("a"), two.clone(), result("toolu_A", "x")]),
        &format!("messages.1: {}", unpaired("toolu_B")),
    )
    .await;
    refused(
        &sim,
        &plain(&[user("a"), two.clone(), user("never mind")]),
        &format!("messages.1: {}", unpaired("toolu_A, toolu_B")),
    )
    .await;
    refused(
        &sim,
        &plain(&[user("a"), two.clone()]),
        &format!("messages.1: {}", unpaired("toolu_A, toolu_B")),
    )
    .await;
    let orphan = |n: usize, m: usize, id: &str| {
        format!(
            "messages.{n}.content.{m}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        )
    };
    refused(
        &sim,
        &plain(&[user("a"), assistant(&json!("ok")), result("toolu_Z", "x")]),
        &orphan(2, 0, "toolu_Z"),
    )
    .await;
    let both = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_A", "content": "1"},
        {"type": "tool_result", "tool_use_id": "toolu_B", "content": "2"},
        {"type": "tool_result", "tool_use_id": "toolu_B", "content": "3"}
    ]});
    refused(
        &sim,
        &plain(&[user("a"), two.clone(), both]),
        &orphan(2, 2, "toolu_B"),
    )
    .await;
    // Consecutive same-role messages combine: results split over two user messages pair up.
    accepted(
        &sim,
        &plain(&[
            user("a"),
            user("b"),
            two,
            result("toolu_B", "2"),
            result("toolu_A", "1"),
            assistant(&json!("noon")),
            user("thanks"),
        ]),
    )
    .await;
    // The first message must be the user's.
    let r = post(&sim, &plain(&[assistant(&json!("hi")), user("a")])).await;
    assert_eq!(r.status, 400);
    let r = post(&sim, &plain(&[])).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn unknown_and_missing_keys_are_refused() {
    let sim = Sim::start("anthropic").await.unwrap();
    let extra = |path: &str| format!("{path}: Extra inputs are not permitted");
    let mut b = plain(&[user("a")]);
    b["extra_body"] = json!({});
    refused(&sim, &b, &extra("extra_body")).await;
    let mut b = plain(&[user("a")]);
    b["anthropic_version"] = json!("vertex-2023-10-16");
    refused(&sim, &b, &extra("anthropic_version")).await;
    let mut b = plain(&[user("a")]);
    b.as_object_mut().unwrap().shift_remove("max_tokens");
    refused(&sim, &b, "max_tokens: Field required").await;
    let mut b = plain(&[user("a")]);
    b.as_object_mut().unwrap().shift_remove("model");
    refused(&sim, &b, "model: Field required").await;

    // Message keys.
    let m = json!({"role": "user", "content": "a", "name": "bob"});
    refused(&sim, &plain(&[m]), &extra("messages.0.name")).await;
    // Block keys, by type.
    let m = assistant(
        &json!([{"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}, "text": ""}]),
    );
    refused(
        &sim,
        &plain(&[user("a"), m, result("toolu_1", "x")]),
        &extra("messages.1.content.0.tool_use.text"),
    )
    .await;
    let (messages, content) = first_step(&sim, "t [tools=1]").await;
    let mut c = content.clone();
    c[0]["cache_control"] = json!({"type": "ephemeral"});
    refused(
        &sim,
        &direct(&in_flight(&messages, &c)),
        &extra("messages.1.content.0.thinking.cache_control"),
    )
    .await;
    let m = json!({"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "scope": "x"}}]});
    refused(
        &sim,
        &plain(&[m]),
        &extra("messages.0.content.0.text.cache_control.scope"),
    )
    .await;
    let m = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x", "status": "ok"}]});
    refused(
        &sim,
        &plain(&[m]),
        &extra("messages.0.content.0.tool_result.status"),
    )
    .await;
    let m = json!({"role": "user", "content": [{"type": "text", "text": "a"}]});
    let mut b = plain(&[m]);
    b["tools"] = json!([{"name": "now", "input_schema": {}, "strict": true}]);
    refused(&sim, &b, &extra("tools.0.strict")).await;

    // At most four cache_control breakpoints.
    let cc = json!({"type": "ephemeral"});
    let blocks: Vec<Value> = (0..4)
        .map(|i| json!({"type": "text", "text": format!("part {i}"), "cache_control": cc}))
        .collect();
    let mut b = plain(&[json!({"role": "user", "content": blocks})]);
    accepted(&sim, &b).await;
    b["system"] = json!([{"type": "text", "text": "s", "cache_control": cc}]);
    refused(
        &sim,
        &b,
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    )
    .await;

    // Thinking settings.
    let mut b = plain(&[user("a")]);
    b["thinking"] = json!({"type": "enabled", "budget_tokens": 512});
    refused(
        &sim,
        &b,
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    )
    .await;
    b["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    b["max_tokens"] = json!(2048);
    let r = post(&sim, &b).await;
    let msg = error_message(&r, 400, "invalid_request_error", "req_");
    assert!(msg.contains("budget_tokens"), "{msg}");
    // The interleaved-thinking beta lifts that limit.
    let r = post_json(
        &sim,
        "/v1/messages",
        &[
            ("anthropic-version", VERSION),
            (
                "anthropic-beta",
                "foo-2025-01-01,interleaved-thinking-2025-05-14",
            ),
        ],
        &b,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    b["max_tokens"] = json!(4096);
    b["temperature"] = json!(0.5);
    refused(&sim, &b, TEMPERATURE_WITH_THINKING).await;
    b["temperature"] = json!(1);
    accepted(&sim, &b).await;
    b["thinking"] = json!({"type": "adaptive", "display": "omitted"});
    b["temperature"] = json!(0.2);
    refused(&sim, &b, TEMPERATURE_WITH_THINKING).await;
    b.as_object_mut().unwrap().shift_remove("temperature");
    b["output_config"] = json!({"effort": "xhigh"});
    accepted(&sim, &b).await;
    b["output_config"] = json!({"effort": "xhigh", "verbosity": "low"});
    refused(&sim, &b, &extra("output_config.verbosity")).await;
    b["output_config"] = json!({"effort": "extreme"});
    assert_eq!(post(&sim, &b).await.status, 400);
    b["output_config"] = json!({"effort": "low"});
    b["thinking"] = json!({"type": "enabled", "budget_tokens": 2048, "display": "omitted"});
    refused(&sim, &b, &extra("thinking.enabled.display")).await;
}

#[tokio::test]
async fn adaptive_omitted_thinking_is_signed_and_verified() {
    let sim = Sim::start("anthropic").await.unwrap();
    let mut body = direct(&[user("time? [tools=1]")]);
    body["thinking"] = json!({"type": "adaptive", "display": "omitted"});
    let reply = accepted(&sim, &body).await;
    assert_eq!(reply["content"][0]["thinking"], "");
    let id = reply["content"][1]["id"].as_str().unwrap().to_owned();
    body["messages"] = json!([
        user("time? [tools=1]"),
        assistant(&reply["content"]),
        result(&id, "12:00")
    ]);
    accepted(&sim, &body).await;
    body["messages"][1]["content"][0]["thinking"] = json!("made up");
    refused(&sim, &body, &invalid_signature(1, 0, "thinking")).await;
}

#[tokio::test]
async fn vertex_takes_the_model_from_the_path_and_the_version_from_the_body() {
    let sim = Sim::start("anthropic").await.unwrap();
    let base = sim.base_url();
    let path = Door::Vertex.path(false);
    let bearer = [("Authorization", "Bearer ya29.token")];
    let body = json!({"anthropic_version": "vertex-2023-10-16", "max_tokens": 100, "messages": [user("hi")]});
    let vertex = |path: &str, headers: &[(&str, &str)], body: &Value| {
        let (base, path, body) = (base.clone(), path.to_owned(), body.to_string());
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        async move {
            let h: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            send(&base, "POST", &path, &h, body.as_bytes()).await
        }
    };
    let r = vertex(&path, &bearer, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["model"], MODEL);
    assert!(v["id"].as_str().unwrap().starts_with("msg_vrtx_"));
    // The 2026 version string is accepted too; any other is not.
    let mut b = body.clone();
    b["anthropic_version"] = json!(VERSION);
    assert_eq!(vertex(&path, &bearer, &b).await.status, 200);
    b["anthropic_version"] = json!("2023-06-01");
    let r = vertex(&path, &bearer, &b).await;
    error_message(&r, 400, "invalid_request_error", "req_vrtx_");
    // The model belongs in the path.
    let mut b = body.clone();
    b["model"] = json!(MODEL);
    let r = vertex(&path, &bearer, &b).await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_vrtx_"),
        "model: Extra inputs are not permitted"
    );
    let mut b = body.clone();
    b.as_object_mut().unwrap().shift_remove("anthropic_version");
    let r = vertex(&path, &bearer, &b).await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_vrtx_"),
        "anthropic_version: Field required"
    );
    // Vertex errors of every kind carry req_vrtx_ ids.
    let bad = plain(&[
        user("a"),
        assistant(&json!([tool_use("toolu_Q")])),
        user("b"),
    ]);
    let mut b = bad.clone();
    b.as_object_mut().unwrap().shift_remove("model");
    b["anthropic_version"] = json!("vertex-2023-10-16");
    let r = vertex(&path, &bearer, &b).await;
    assert!(
        error_message(&r, 400, "invalid_request_error", "req_vrtx_")
            .starts_with("messages.1: `tool_use` ids")
    );
    // The verb fixes `stream`.
    let mut b = body.clone();
    b["stream"] = json!(true);
    let r = vertex(&path, &bearer, &b).await;
    error_message(&r, 400, "invalid_request_error", "req_vrtx_");
    let r = vertex(&Door::Vertex.path(true), &bearer, &body).await;
    error_message(&r, 400, "invalid_request_error", "req_vrtx_");
    let r = vertex(&Door::Vertex.path(true), &bearer, &b).await;
    assert_eq!(r.status, 200);
    assert!(r.headers.contains("text/event-stream"));
    // A bearer token is required.
    for headers in [
        &[][..],
        &[("Authorization", "Basic abc")][..],
        &[("Authorization", "Bearer ")][..],
        &[("x-api-key", "k")][..],
    ] {
        let r = vertex(&path, headers, &body).await;
        assert_eq!(r.status, 401, "{headers:?}");
        let v = r.json();
        assert_eq!(v["error"]["status"], "UNAUTHENTICATED");
        assert_eq!(v["error"]["code"], 401);
    }
    // The path must be a publishers/anthropic model verb.
    let r = vertex(
        "/v1/projects/p/locations/r/publishers/anthropic/models/m:predict",
        &bearer,
        &body,
    )
    .await;
    assert_eq!(r.status, 404);
    let rec = sim.requests();
    assert!(assert_redacted(&rec, &["authorization", "x-api-key"]) > 0);
}

#[tokio::test]
async fn foundry_needs_an_api_key_or_an_entra_id_bearer_and_direct_refuses_bearer_auth() {
    /// What a row expects: a status alone, or Anthropic's error of that status and type (and
    /// exact message when given).
    enum Expect {
        Status(u16),
        Error(u16, &'static str, Option<&'static str>),
    }
    use Expect::{Error, Status};
    const AUTH: &str = "authentication_error";
    const INVALID: &str = "invalid_request_error";
    let sim = Sim::start("anthropic").await.unwrap();
    let base = sim.base_url();
    let body = plain(&[user("hi")]).to_string();
    let body = body.as_bytes();
    let (foundry, direct) = ("/anthropic/v1/messages", "/v1/messages");
    let version = ("anthropic-version", VERSION);
    /// Method, path, headers and body.
    type Request<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a [u8]);
    #[rustfmt::skip]
    let rows: [(&str, Request<'_>, Expect); 11] = [
        ("foundry without a key", ("POST", foundry, &[version], body), Error(401, AUTH, None)),
        ("foundry with an empty bearer", ("POST", foundry, &[("Authorization", "Bearer "), version], body), Error(401, AUTH, None)),
        // A Microsoft Entra ID token instead of the key.
        ("foundry with an Entra ID bearer", ("POST", foundry, &[("Authorization", "Bearer t"), version], body), Status(200)),
        ("foundry without a version", ("POST", foundry, &[("x-api-key", "k")], body), Error(400, INVALID, None)),
        ("foundry with a key and a version", ("POST", foundry, &[("x-api-key", "k"), ("anthropic-version", "2023-06-01")], body), Status(200)),
        ("direct with a bearer", ("POST", direct, &[("Authorization", "Bearer sk"), version], body), Error(401, AUTH, Some("invalid x-api-key"))),
        ("direct without headers", ("POST", direct, &[], body), Error(400, INVALID, None)),
        ("direct with a key and a version", ("POST", direct, &[("x-api-key", "sk-ant"), version], body), Status(200)),
        ("direct with a body that is not JSON", ("POST", direct, &[version], b"{nope"), Error(400, INVALID, None)),
        ("direct by GET", ("GET", direct, &[version], b""), Status(405)),
        ("the chat-completions path", ("POST", "/v1/chat/completions", &[], body), Error(404, "not_found_error", None)),
    ];
    for (name, (method, path, headers, sent), expect) in rows {
        let r = send(&base, method, path, headers, sent).await;
        match expect {
            Status(status) => assert_eq!(r.status, status, "{name}: {}", r.text()),
            Error(status, kind, message) => {
                assert_eq!(r.status, status, "{name}: {}", r.text());
                assert_eq!(r.json()["error"]["type"], kind, "{name}");
                let got = error_message(&r, status, kind, "req_");
                if let Some(want) = message {
                    assert_eq!(got, want, "{name}");
                }
            }
        }
    }

    let rec = sim.requests();
    assert_eq!(rec.len(), 11);
    assert_eq!(rec[9].status, 405);
    assert_redacted(&rec, &["authorization", "x-api-key"]);
    assert_header(&rec[0], "anthropic-version", VERSION);
}

#[tokio::test]
async fn the_stream_has_anthropics_shape() {
    let sim = Sim::start("anthropic").await.unwrap();
    for text in ["time? [tools=2] [redacted]", "hello there"] {
        let body = thinking_body(&[user(text)]);
        let r = Door::Direct.post(&sim, &body, true).await;
        assert_eq!(r.status, 200);
        // The body arrives in small chunks cut mid-line.
        assert!(r.chunks.len() > 20);
        assert!(r.chunks.iter().any(|c| !c.ends_with(b"\n")));
        let evs = events(&r.text());
        let names: Vec<&str> = evs.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names[..2], ["message_start", "ping"]);
        assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
        let start = &evs[0].data["message"];
        assert!(start["stop_reason"].is_null());
        assert!(start["usage"]["input_tokens"].as_u64().unwrap() > 0);

        // Per block: start, deltas, stop; thinking starts empty and ends with its signature.
        let mut i = 2;
        let mut index = 0;
        while evs[i].name == "content_block_start" {
            let block = &evs[i].data["content_block"];
            assert_eq!(evs[i].data["index"], index);
            let stop = (i..evs.len())
                .find(|&j| evs[j].name == "content_block_stop")
                .unwrap();
            assert_eq!(evs[stop].data["index"], index);
            let deltas: Vec<&Value> = evs[i + 1..stop].iter().map(|e| &e.data["delta"]).collect();
            match block["type"].as_str().unwrap() {
                "thinking" => {
                    assert_eq!(
                        block,
                        &json!({"type": "thinking", "thinking": "", "signature": ""})
                    );
                    let (sig, thinking) = deltas.split_last().unwrap();
                    assert_eq!(sig["type"], "signature_delta");
                    assert!(sig["signature"].as_str().unwrap().len() > 40);
                    assert!(thinking.len() >= 3);
                    assert!(thinking.iter().all(|d| d["type"] == "thinking_delta"));
                }
                "redacted_thinking" => {
                    assert!(block["data"].as_str().unwrap().len() > 40);
                    assert!(deltas.is_empty());
                }
                "text" => {
                    assert_eq!(block, &json!({"type": "text", "text": ""}));
                    assert!(deltas.len() >= 3);
                    assert!(deltas.iter().all(|d| d["type"] == "text_delta"));
                }
                "tool_use" => {
                    assert_eq!(block["input"], json!({}));
                    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
                    let pieces: Vec<&str> = deltas
                        .iter()
                        .map(|d| {
                            assert_eq!(d["type"], "input_json_delta");
                            d["partial_json"].as_str().unwrap()
                        })
                        .collect();
                    assert!(pieces.len() >= 5, "{pieces:?}");
                    // The pieces are not JSON on their own; together they are.
                    assert!(
                        pieces
                            .iter()
                            .filter(|p| !p.is_empty())
                            .any(|p| serde_json::from_str::<Value>(p).is_err())
                    );
                    let input: Value = serde_json::from_str(&pieces.concat()).unwrap();
                    assert_eq!(input["step"], 1);
                }
                other => panic!("unexpected block {other}"),
            }
            i = stop + 1;
            index += 1;
        }
        assert_eq!(names[i], "message_delta");
        let md = &evs[i].data;
        assert!(md["delta"]["stop_sequence"].is_null());
        assert!(md["usage"]["output_tokens"].as_u64().unwrap() > 0);
        let whole = reassemble(&evs);
        let expected_stop = if text.contains("[tools") {
            "tool_use"
        } else {
            "end_turn"
        };
        assert_eq!(whole["stop_reason"], expected_stop);
        assert_eq!(
            whole["content"],
            ask(&sim, Door::Direct, &body, false).await["content"]
        );
    }
    let rec = sim.requests();
    assert!(
        rec[0]
            .response
            .ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
    );
}

#[tokio::test]
async fn fail_mid_stream_ends_with_an_overloaded_error_event() {
    let sim = Sim::start_with("anthropic", Switches::default().failing_mid_stream())
        .await
        .unwrap();
    let body = thinking_body(&[user("hello")]);
    let r = Door::Direct.post(&sim, &body, true).await;
    assert_eq!(r.status, 200);
    let evs = events(&r.text());
    let (err, before) = evs.split_last().unwrap();
    assert!(before.iter().any(|e| e.name == "content_block_delta"));
    assert!(before.iter().all(|e| e.name != "message_stop"));
    assert_eq!(err.name, "error");
    assert_eq!(
        err.data,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    // Non-streamed requests are unaffected; switching off restores full streams.
    ask(&sim, Door::Direct, &body, false).await;
    sim.set_switches(Switches::default());
    ask(&sim, Door::Direct, &body, true).await;
}

#[tokio::test]
async fn max_tokens_marker_and_cache_usage() {
    let sim = Sim::start("anthropic").await.unwrap();
    let v = accepted(&sim, &direct(&[user("think hard [max_tokens]")])).await;
    assert_eq!(v["stop_reason"], "max_tokens");
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "thinking");
    let v = accepted(&sim, &plain(&[user("think hard [max_tokens]")])).await;
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["content"][0]["type"], "text");

    // No breakpoint: no cache traffic. First breakpoint request writes, later ones read.
    let usage = |v: &Value| {
        (
            v["usage"]["cache_creation_input_tokens"].as_u64().unwrap(),
            v["usage"]["cache_read_input_tokens"].as_u64().unwrap(),
        )
    };
    assert_eq!(usage(&v), (0, 0));
    let mut b = plain(&[user("a long prompt worth caching")]);
    b["system"] =
        json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]);
    let first = usage(&accepted(&sim, &b).await);
    assert!(first.0 > 0 && first.1 == 0, "{first:?}");
    let second = usage(&accepted(&sim, &b).await);
    assert!(second.1 > 0, "{second:?}");
    // A tool of another name is called when `now` is not offered.
    let mut b = plain(&[user("go [tools=1]")]);
    b["tools"] = json!([{"name": "clock", "input_schema": {"type": "object"}}]);
    let v = accepted(&sim, &b).await;
    assert_eq!(v["content"][0]["name"], "clock");
    assert_eq!(v["stop_reason"], "tool_use");
}

#[tokio::test]
async fn image_blocks_are_checked_and_chat_shaped_images_are_refused() {
    let sim = Sim::start("anthropic").await.unwrap();
    // A 1×1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let base64 = |media_type: &str, data: &str| json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}});
    let url =
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}});
    let with_result = |content: Value| {
        vec![
            user("a"),
            assistant(&json!([tool_use("toolu_1")])),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]}),
        ]
    };
    // Images in a user turn and in a tool result, base64 and by URL.
    let user_images = json!({"role": "user", "content": [{"type": "text", "text": "look"}, base64("image/png", png), url]});
    accepted(&sim, &plain(&[user_images])).await;
    accepted(
        &sim,
        &plain(&with_result(
            json!([{"type": "text", "text": "x"}, base64("image/png", png)]),
        )),
    )
    .await;

    // The chat-completions shape inside a tool result.
    let chat =
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}});
    refused(
        &sim,
        &plain(&with_result(json!([chat]))),
        "messages.2.content.0.tool_result.content.0: Input tag 'image_url' found using 'type' does not match any of the expected tags: 'text', 'image', 'document'",
    )
    .await;
    // A media type the API does not take, and data that is not of the named type.
    refused(
        &sim,
        &plain(&with_result(json!([base64("image/bmp", png)]))),
        "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    )
    .await;
    let m = json!({"role": "user", "content": [base64("image/webp", png)]});
    refused(
        &sim,
        &plain(&[m]),
        "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/webp",
    )
    .await;
    let m = json!({"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]});
    refused(
        &sim,
        &plain(&[m]),
        "messages.0.content.0.image.source.url.url: Field required",
    )
    .await;
}

/// The SDK's `DocumentBlockParam` (source, title, context, citations, cache_control) and
/// `output_config.format` (structured output) are taken; an image block keeps to its own keys.
#[tokio::test]
async fn document_blocks_and_a_structured_output_format_are_accepted() {
    let sim = Sim::start("anthropic").await.unwrap();
    let document = json!({"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hermes"},
         "title": "notes", "context": "from a test", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "summarise"}
    ]});
    let mut b = plain(&[document]);
    b["output_config"] = json!({"format": {"type": "json_schema", "schema": {"type": "object"}}});
    accepted(&sim, &b).await;
    let mut b = plain(&[user("a")]);
    b["output_config"] = json!({"format": "json"});
    let r = post(&sim, &b).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let image = json!({"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}, "title": "a"}
    ]});
    refused(
        &sim,
        &plain(&[image]),
        "messages.0.content.0.image.title: Extra inputs are not permitted",
    )
    .await;
}

// ---------------------------------------------------------------- the client's own tools

/// Claude Code's `Read` and `Write` tools (their JSON schemas as Claude Code sends them).
fn claude_code_tools() -> Value {
    json!([
        {"name": "Read", "description": "Read a file", "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": {"file_path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "exclusiveMinimum": 0}},
            "required": ["file_path"], "additionalProperties": false}},
        {"name": "Write", "description": "Write a file", "input_schema": {"type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"], "additionalProperties": false}}
    ])
}

#[tokio::test]
async fn the_script_calls_the_clients_first_tool_with_schema_valid_input_and_reads_an_error_result()
{
    let sim = Sim::start("anthropic").await.unwrap();
    let mut messages = vec![user("Read the notes [tools=1]")];
    let mut body = plain(&messages);
    body["tools"] = claude_code_tools();
    let msg = accepted(&sim, &body).await;
    assert_eq!(msg["stop_reason"], "tool_use");
    let call = &msg["content"][0];
    assert_eq!(call["name"], "Read", "{msg}");
    assert_eq!(call["input"], json!({"file_path": "x"}));
    // Streamed, the input's pieces join to the same object.
    let streamed = ask(&sim, Door::Direct, &body, true).await;
    assert_eq!(streamed["content"], msg["content"]);
    // The tool failed: `is_error: true` is accepted and the answer quotes the result.
    messages.push(assistant(&msg["content"]));
    let mut failed = result(call["id"].as_str().unwrap(), "File does not exist.");
    failed["content"][0]["is_error"] = json!(true);
    messages.push(failed);
    body["messages"] = json!(messages);
    let last = accepted(&sim, &body).await;
    assert_eq!(last["stop_reason"], "end_turn", "{last}");
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("File does not exist."), "{text}");
}

// ---------------------------------------------------------------- Claude Code 2.1

/// A request Claude Code 2.1.332 sent (`claude-opus-4-8`, streamed): a user turn then a
/// mid-conversation `system` message, adaptive thinking with `display: "omitted"`,
/// `context_management`, `output_config.effort`, `metadata.user_id` (a JSON string),
/// `cache_control` on system and message blocks, a tool with `defer_loading`.
const CLAUDE_CODE_REQUEST: &str = include_str!("../fixtures/claude-code-2.1.332-opus-4-8.json");

/// The `anthropic-beta` header Claude Code 2.1.332 sent with it.
const CLAUDE_CODE_BETAS: &str = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24";

const SYSTEM_BETA: &str = "mid-conversation-system-2026-04-07";

/// Posts `body` to the direct door as Claude Code does (`?beta=true`, its headers) with
/// `anthropic-beta: betas`.
async fn post_beta(sim: &Sim, body: &Value, betas: &str) -> Resp {
    post_json(
        sim,
        "/v1/messages?beta=true",
        &[
            ("anthropic-version", "2023-06-01"),
            ("x-api-key", "sk-test"),
            ("anthropic-beta", betas),
            ("x-app", "cli"),
        ],
        body,
    )
    .await
}

fn system_message(content: Value) -> Value {
    json!({"role": "system", "content": content})
}

#[tokio::test]
async fn claude_code_2_1_request_is_accepted_with_the_mid_conversation_system_beta_only() {
    let sim = Sim::start("anthropic").await.unwrap();
    let body: Value = serde_json::from_str(CLAUDE_CODE_REQUEST).unwrap();
    assert_eq!(body["messages"][1]["role"], "system");
    let r = post_beta(&sim, &body, &format!("{CLAUDE_CODE_BETAS},{SYSTEM_BETA}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.headers.contains("text/event-stream"));
    let msg = reassemble(&events(&r.text()));
    assert_eq!(msg["model"], "claude-opus-4-8");
    assert_eq!(msg["stop_reason"], "end_turn");
    // Adaptive thinking, display omitted: a signed thinking block with no text.
    assert_eq!(msg["content"][0]["type"], "thinking");
    assert_eq!(msg["content"][0]["thinking"], "");
    assert!(msg["content"][0]["signature"].as_str().unwrap().len() > 40);
    let text = msg["content"][1]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Hello from the scripted model claude-opus-4-8."),
        "{text}"
    );
    // Without the beta, the system message's role is refused as the API does.
    let r = post_beta(&sim, &body, CLAUDE_CODE_BETAS).await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_"),
        "messages.1.role: Input should be 'user' or 'assistant'"
    );
    // Both were recorded, with their statuses.
    let recorded = sim.requests();
    assert_eq!(
        recorded.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 400]
    );
}

#[tokio::test]
async fn a_mid_conversation_system_message_needs_its_beta_and_hides_no_user_marker() {
    let sim = Sim::start("anthropic").await.unwrap();
    let betas = format!("foo-2025-01-01, {SYSTEM_BETA}");
    let note = system_message(json!([{"type": "text", "text": "Env: linux",
        "cache_control": {"type": "ephemeral"}}]));
    let mut body = plain(&[user("Read the notes [tools=1]"), note.clone()]);
    body["tools"] = claude_code_tools();
    // The system message after the user's turn does not hide its marker.
    let r = post_beta(&sim, &body, &betas).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let msg = r.json();
    assert_eq!(msg["stop_reason"], "tool_use", "{msg}");
    assert_eq!(msg["content"][0]["name"], "Read");
    // The loop goes on with the system message still in place; a string content is fine too.
    let id = msg["content"][0]["id"].as_str().unwrap();
    body["messages"] = json!([
        user("Read the notes [tools=1]"),
        note,
        assistant(&msg["content"]),
        system_message(json!("The file changed.")),
        result(id, "the notes"),
    ]);
    let r = post_beta(&sim, &body, &betas).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.json()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("Done after 1 tool calls"), "{text}");
    assert!(text.contains("the notes"), "{text}");
    // Without the beta: the role's literal error, naming the message's index.
    let r = post_beta(&sim, &body, "foo-2025-01-01").await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_"),
        "messages.1.role: Input should be 'user' or 'assistant'"
    );
    // Not first; text only.
    let rows = [
        (
            vec![system_message(json!("first")), user("a")],
            "messages: first message must use the \"user\" role",
        ),
        (
            vec![
                user("a"),
                system_message(json!([{"type": "image", "source": {}}])),
            ],
            "messages.1.content.0: Input tag 'image' found using 'type' does not match any of the expected tags: 'text'",
        ),
        (
            vec![user("a"), system_message(json!(7))],
            "messages.1.content: Input should be a valid list",
        ),
    ];
    for (messages, want) in rows {
        let r = post_beta(&sim, &plain(&messages), &betas).await;
        assert_eq!(
            error_message(&r, 400, "invalid_request_error", "req_"),
            want
        );
    }
}

#[tokio::test]
async fn claude_code_s_documented_fields_are_checked_and_unknown_ones_still_refused() {
    let sim = Sim::start("anthropic").await.unwrap();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut b = plain(&[user("a")]);
        f(&mut b);
        b
    };
    accepted(
        &sim,
        &with(&|b| {
            b["context_management"] = json!({"edits": [
                {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
                {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]});
            b["metadata"] = json!({"user_id": "{\"device_id\":\"d\"}"});
            b["tools"] = json!([{"name": "Later", "input_schema": {"type": "object"},
                "defer_loading": true}]);
        }),
    )
    .await;
    let rows = [
        (
            with(&|b| b["context_management"] = json!({"edits": [{"type": "clear_all"}]})),
            "context_management.edits.0: Input tag 'clear_all' found using 'type' does not match any of the expected tags: 'clear_tool_uses_20250919', 'clear_thinking_20251015', 'compact_20260112'",
        ),
        (
            with(&|b| b["context_management"] = json!({"edits": [], "mode": "x"})),
            "context_management.mode: Extra inputs are not permitted",
        ),
        (
            with(&|b| {
                b["context_management"] =
                    json!({"edits": [{"type": "clear_thinking_20251015", "keep": "some"}]});
            }),
            "context_management.edits.0.clear_thinking_20251015.keep: Input should be a valid dictionary",
        ),
        (
            with(&|b| {
                b["tools"] = json!([{"name": "t", "input_schema": {}, "defer_loading": "yes"}]);
            }),
            "tools.0.defer_loading: Input should be a valid boolean",
        ),
        (
            with(&|b| b["context_managements"] = json!({})),
            "context_managements: Extra inputs are not permitted",
        ),
    ];
    for (body, want) in rows {
        refused(&sim, &body, want).await;
    }
}

// -------------------------------------------------------- binding (docs/spec.md §5a, issue 46)

const FABLE: &str = "claude-fable-5-1";

/// docs/spec.md §5a's refusal of a block bound to a different conversation.
fn bound(n: usize, m: usize) -> String {
    format!(
        "messages.{n}.content.{m}: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
    )
}

/// Posts `body` to the direct door under the API key `key` with `anthropic-beta: betas` (none
/// when empty).
async fn post_as(sim: &Sim, body: &Value, key: &str, betas: &str) -> Resp {
    let mut headers = vec![("anthropic-version", VERSION), ("x-api-key", key)];
    if !betas.is_empty() {
        headers.push(("anthropic-beta", betas));
    }
    post_json(sim, "/v1/messages", &headers, body).await
}

/// A thinking body for `model`.
fn for_model(model: &str, messages: &[Value]) -> Value {
    let mut b = thinking_body(messages);
    b.as_object_mut()
        .unwrap()
        .shift_insert(0, "model".into(), json!(model));
    b
}

/// Expects a 200 and returns the reply.
async fn ok_as(sim: &Sim, body: &Value, key: &str, betas: &str) -> Value {
    let r = post_as(sim, body, key, betas).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Expects a 400 `invalid_request_error` with exactly `message`.
async fn refused_as(sim: &Sim, body: &Value, key: &str, betas: &str, message: &str) {
    let r = post_as(sim, body, key, betas).await;
    assert_eq!(
        error_message(&r, 400, "invalid_request_error", "req_"),
        message
    );
}

/// The content without its thinking blocks.
fn bare(content: &Value) -> Value {
    json!(
        content
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking")
            .cloned()
            .collect::<Vec<_>>()
    )
}

#[test]
fn bound_models_are_claude_fable_5_1_and_later() {
    assert_eq!(BOUND_MODELS.len(), 1);
    assert_eq!(BOUND_MODELS[0].family, "fable");
    assert_eq!(BOUND_MODELS[0].since, (5, 1));
    for m in [
        "claude-fable-5-1",
        "claude-fable-5-2",
        "claude-fable-5-1-20260901",
        "claude-fable-6",
    ] {
        assert!(anthropic_is_bound(m), "{m}");
    }
    for m in ["claude-fable-5", "claude-opus-4-6", "claude-opus-4-8"] {
        assert!(!anthropic_is_bound(m), "{m}");
    }
}

#[tokio::test]
async fn a_bound_model_binds_thinking_to_system_tools_and_messages_an_unbound_one_as_before() {
    for model in [FABLE, MODEL] {
        let sim = Sim::start("anthropic").await.unwrap();
        let first = vec![user("time? [tools=1]")];
        let step = ok_as(&sim, &for_model(model, &first), "k1", "").await["content"].clone();
        let history = in_flight(&first, &step);
        ok_as(&sim, &for_model(model, &history), "k1", "").await;

        // cache_control on a tool is not part of the prefix.
        let mut body = for_model(model, &history);
        body["tools"][0]["cache_control"] = json!({"type": "ephemeral"});
        ok_as(&sim, &body, "k1", "").await;

        // A tool added mid-conversation: the bound model refuses, the unbound one accepts.
        let mut body = for_model(model, &history);
        body["tools"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "date", "input_schema": {"type": "object"}}));
        if model == FABLE {
            refused_as(&sim, &body, "k1", "", &bound(1, 0)).await;
        } else {
            ok_as(&sim, &body, "k1", "").await;
        }
        // A changed tool description likewise.
        let mut body = for_model(model, &history);
        body["tools"][0]["description"] = json!("The time now.");
        if model == FABLE {
            refused_as(&sim, &body, "k1", "", &bound(1, 0)).await;
        } else {
            ok_as(&sim, &body, "k1", "").await;
        }

        // A changed system prompt: the long text when bound, today's short one when not.
        let mut body = for_model(model, &history);
        body["system"] = json!("You are terse. Today is 2026-09-01.");
        let want = if model == FABLE {
            bound(1, 0)
        } else {
            invalid_signature(1, 0, "thinking")
        };
        refused_as(&sim, &body, "k1", "", &want).await;
        // A changed earlier message likewise.
        let mut edited = history.clone();
        edited[0] = user("time?? [tools=1]");
        refused_as(&sim, &for_model(model, &edited), "k1", "", &want).await;
        // A forged signature is the short text on both.
        let mut forged = step.clone();
        let sig = forged[0]["signature"].as_str().unwrap().to_owned();
        forged[0]["signature"] = json!(flip_one_byte(&sig, 10));
        refused_as(
            &sim,
            &for_model(model, &in_flight(&first, &forged)),
            "k1",
            "",
            &invalid_signature(1, 0, "thinking"),
        )
        .await;
    }
}

#[tokio::test]
async fn a_bound_model_binds_thinking_to_the_model_and_the_account() {
    let sim = Sim::start("anthropic").await.unwrap();
    let history = called_once(&sim, FABLE, "key-a").await;
    ok_as(&sim, &for_model(FABLE, &history), "key-a", "").await;
    // Another account.
    refused_as(&sim, &for_model(FABLE, &history), "key-b", "", &bound(1, 0)).await;
    // Another bound model.
    refused_as(
        &sim,
        &for_model("claude-fable-5-2", &history),
        "key-a",
        "",
        &bound(1, 0),
    )
    .await;
    // An unbound model keeps today's checks: neither model nor account is compared.
    ok_as(&sim, &for_model(MODEL, &history), "key-b", "").await;
    let unbound = called_once(&sim, MODEL, "key-a").await;
    ok_as(&sim, &for_model(MODEL, &unbound), "key-b", "").await;
}

/// A `[tools=1]` question to `model` as `key`, with the tool call of its reply in flight.
async fn called_once(sim: &Sim, model: &str, key: &str) -> Vec<Value> {
    let first = vec![user("time? [tools=1]")];
    let step = ok_as(sim, &for_model(model, &first), key, "").await["content"].clone();
    in_flight(&first, &step)
}

/// Three signed turns on `model` under key `k`: `[u1, a1(T1, call), r1, a2(T2, text), u2,
/// a3(T3, call), r3]`, every request accepted as it went.
async fn three_turns(sim: &Sim, model: &str) -> Vec<Value> {
    let mut h = vec![user("time? [tools=1]")];
    let a1 = ok_as(sim, &for_model(model, &h), "k", "").await["content"].clone();
    h = in_flight(&h, &a1);
    let a2 = ok_as(sim, &for_model(model, &h), "k", "").await["content"].clone();
    assert_eq!(a2[0]["type"], "thinking");
    h.push(assistant(&a2));
    h.push(user("and the date? [tools=1]"));
    let a3 = ok_as(sim, &for_model(model, &h), "k", "").await["content"].clone();
    let h = in_flight(&h, &a3);
    ok_as(sim, &for_model(model, &h), "k", "").await;
    h
}

#[tokio::test]
async fn a_bound_model_refuses_a_block_dropped_from_the_middle_or_put_back() {
    let sim = Sim::start("anthropic").await.unwrap();
    let h = three_turns(&sim, FABLE).await;
    // Dropped from the middle (turn 2's block gone, turns 1 and 3 kept).
    let middle = without_thinking(&h, &[3]);
    refused_as(&sim, &for_model(FABLE, &middle), "k", "", &bound(5, 0)).await;
    // Dropped from the start: valid (and remembered).
    let start = without_thinking(&h, &[1]);
    ok_as(&sim, &for_model(FABLE, &start), "k", "").await;
    // Dropped from the start, all but the latest: valid.
    let more = without_thinking(&h, &[1, 3]);
    ok_as(&sim, &for_model(FABLE, &more), "k", "").await;
    // Turn 1's block put back after it was left out: refused, and turn 2's too.
    refused_as(&sim, &for_model(FABLE, &h), "k", "", &bound(1, 0)).await;
    refused_as(&sim, &for_model(FABLE, &start), "k", "", &bound(3, 0)).await;
    // Without the put-back blocks the conversation goes on.
    ok_as(&sim, &for_model(FABLE, &more), "k", "").await;
    let sent = sim.requests();
    assert!(sent.iter().all(|r| r.notes.is_empty()));

    // An unbound model takes both, as it always did.
    let sim = Sim::start("anthropic").await.unwrap();
    let h = three_turns(&sim, MODEL).await;
    let middle = without_thinking(&h, &[3]);
    ok_as(&sim, &for_model(MODEL, &middle), "k", "").await;
    let start = without_thinking(&h, &[1]);
    ok_as(&sim, &for_model(MODEL, &start), "k", "").await;
    ok_as(&sim, &for_model(MODEL, &h), "k", "").await;
}

/// `h` with the assistant turns at `at` stripped of their thinking blocks.
fn without_thinking(h: &[Value], at: &[usize]) -> Vec<Value> {
    let mut out = h.to_vec();
    for &i in at {
        out[i] = assistant(&bare(&h[i]["content"]));
    }
    out
}

/// `body` with `thinking.block_binding.prefix_mismatch_behavior` set to `behavior`.
fn with_binding(mut body: Value, behavior: &str) -> Value {
    body["thinking"]["block_binding"] = json!({"prefix_mismatch_behavior": behavior});
    body
}

#[tokio::test]
async fn block_binding_needs_its_beta_and_drop_block_reports_input_transformations() {
    let sim = Sim::start("anthropic").await.unwrap();
    let first = vec![user("time? [tools=1]")];
    let step = ok_as(&sim, &for_model(MODEL, &first), "k", "").await["content"].clone();
    let history = in_flight(&first, &step);
    let body = with_binding(for_model(MODEL, &history), "drop_block");
    refused_as(
        &sim,
        &body,
        "k",
        "",
        "thinking.block_binding: requires the thinking-binding-controls-2026-08-01 beta",
    )
    .await;
    refused_as(
        &sim,
        &with_binding(for_model(MODEL, &history), "ignore"),
        "k",
        BLOCK_BINDING_BETA,
        "thinking.block_binding.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'",
    )
    .await;
    // Unchanged prefix: nothing dropped, no `input_transformations`.
    let v = ok_as(&sim, &body, "k", BLOCK_BINDING_BETA).await;
    assert!(v.get("input_transformations").is_none(), "{v}");

    // block_binding binds an unbound model: with "error", a changed system prompt gets the long
    // text (the short one without block_binding).
    let mut changed = with_binding(for_model(MODEL, &history), "error");
    changed["system"] = json!("You are terse. Today is 2026-09-01.");
    refused_as(&sim, &changed, "k", BLOCK_BINDING_BETA, &bound(1, 0)).await;

    // With "drop_block" the block is dropped, reported, and the in-flight turn accepted.
    changed["thinking"]["block_binding"]["prefix_mismatch_behavior"] = json!("drop_block");
    let v = ok_as(&sim, &changed, "k", BLOCK_BINDING_BETA).await;
    assert_eq!(
        v["input_transformations"],
        json!([{"type": "thinking_dropped", "path": "messages.1.content.0",
                "reason": "prefix_binding_mismatch"}])
    );
    let rec = sim.requests();
    assert_eq!(
        rec.last().unwrap().notes,
        vec!["messages.1.content.0: thinking block dropped (prefix_binding_mismatch)"]
    );
    // Streamed: on `message_start`.
    changed["stream"] = json!(true);
    let r = post_as(&sim, &changed, "k", BLOCK_BINDING_BETA).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let evs = events(&r.text());
    assert_eq!(
        evs[0].data["message"]["input_transformations"],
        v["input_transformations"]
    );

    // A block dropped once stays dropped: put back under the original prefix, it is dropped
    // again (or refused without drop_block).
    let v = ok_as(
        &sim,
        &with_binding(for_model(MODEL, &history), "drop_block"),
        "k",
        BLOCK_BINDING_BETA,
    )
    .await;
    assert_eq!(
        v["input_transformations"][0]["reason"],
        "prefix_binding_mismatch"
    );
    refused_as(
        &sim,
        &with_binding(for_model(MODEL, &history), "error"),
        "k",
        BLOCK_BINDING_BETA,
        &bound(1, 0),
    )
    .await;

    // Another model: model_binding_mismatch.
    let sim = Sim::start("anthropic").await.unwrap();
    let step = ok_as(&sim, &for_model(FABLE, &first), "k", "").await["content"].clone();
    let history = in_flight(&first, &step);
    let v = ok_as(
        &sim,
        &with_binding(for_model("claude-fable-5-2", &history), "drop_block"),
        "k",
        BLOCK_BINDING_BETA,
    )
    .await;
    assert_eq!(
        v["input_transformations"],
        json!([{"type": "thinking_dropped", "path": "messages.1.content.0",
                "reason": "model_binding_mismatch"}])
    );
}

#[tokio::test]
async fn a_bound_model_takes_a_mid_conversation_system_message_with_its_beta() {
    let sim = Sim::start("anthropic").await.unwrap();
    let mut history = called_once(&sim, FABLE, "k").await;
    history.push(system_message(json!("Today is 2026-09-01.")));
    let body = for_model(FABLE, &history);
    ok_as(&sim, &body, "k", SYSTEM_BETA).await;
    refused_as(
        &sim,
        &body,
        "k",
        "",
        "messages.3.role: Input should be 'user' or 'assistant'",
    )
    .await;
}

/// `body` asking for an on-demand compaction.
fn compact(mut body: Value) -> Value {
    body["compaction"] = json!({"type": "summarize"});
    body
}

#[tokio::test]
async fn on_demand_compaction_is_sealed_and_keeps_the_kept_turns_thinking_valid() {
    let sim = Sim::start("anthropic").await.unwrap();
    let h = three_turns(&sim, FABLE).await;
    // Without the beta: refused, naming `compaction`.
    refused_as(
        &sim,
        &compact(for_model(FABLE, &h[..4])),
        "k",
        "",
        "compaction: requires the compact-2026-09-04 beta",
    )
    .await;
    // Summarise the first turn ([u1, a1, r1, a2]); keep [u2, a3, r3].
    let v = ok_as(
        &sim,
        &compact(for_model(FABLE, &h[..4])),
        "k",
        COMPACTION_BETA,
    )
    .await;
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["stop_reason"], "end_turn");
    let block = v["content"][0].clone();
    assert_eq!(v["content"].as_array().unwrap().len(), 1);
    assert_eq!(block["type"], "compaction");
    let summary = block["content"].as_str().unwrap();
    assert!(
        summary.starts_with("Summary of 4 earlier messages.\nuser: time? [tools=1]"),
        "{summary}"
    );
    assert!(!block["encrypted_content"].as_str().unwrap().is_empty());
    assert_eq!(v["usage"]["iterations"][0]["type"], "compaction");

    // Streamed: the same block, from `compaction_delta`s carrying both fields.
    let mut body = compact(for_model(FABLE, &h[..4]));
    body["stream"] = json!(true);
    let r = post_as(&sim, &body, "k", COMPACTION_BETA).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let evs = events(&r.text());
    assert!(
        evs.iter()
            .filter(|e| e.data["delta"]["type"] == "compaction_delta")
            .count()
            > 2
    );
    assert_eq!(reassemble(&evs)["content"][0], block);

    // The compaction block first, then the kept turns verbatim: their thinking still verifies.
    let mut next = vec![assistant(&json!([block.clone()]))];
    next.extend_from_slice(&h[4..]);
    let a4 = ok_as(&sim, &for_model(FABLE, &next), "k", COMPACTION_BETA).await["content"].clone();
    // And thinking minted after the compaction verifies on the next turns.
    next.push(assistant(&a4));
    next.push(user("thanks"));
    ok_as(&sim, &for_model(FABLE, &next), "k", COMPACTION_BETA).await;

    // The block needs its beta, byte-for-byte content, and its model and account.
    let r = post_as(&sim, &for_model(FABLE, &next), "k", "").await;
    let message = error_message(&r, 400, "invalid_request_error", "req_");
    assert!(
        message.starts_with("messages.0.content.0: Input tag 'compaction' found"),
        "{message}"
    );
    let mut altered = next.clone();
    altered[0]["content"][0]["content"] = json!(format!("{summary} "));
    refused_as(
        &sim,
        &for_model(FABLE, &altered),
        "k",
        COMPACTION_BETA,
        "messages.0.content.0: Invalid `encrypted_content` in `compaction` block",
    )
    .await;
    let elsewhere = "messages.0.content.0: Invalid `encrypted_content` in `compaction` block. The block was created by a different model or account.";
    refused_as(
        &sim,
        &for_model(FABLE, &next),
        "other",
        COMPACTION_BETA,
        elsewhere,
    )
    .await;
    refused_as(
        &sim,
        &for_model("claude-fable-5-2", &next),
        "k",
        COMPACTION_BETA,
        elsewhere,
    )
    .await;
}
