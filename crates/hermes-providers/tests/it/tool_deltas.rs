//! Streamed tool calls reach the driver as `Delta::ToolCall` fragments on every wire, sent
//! through each wire against a real loopback server (wiremock): the fragments of each call join
//! to the arguments the capture stores, its id and name come with its first fragment only (and
//! are the stored ones), and the fragments interleave with the answer text in arrival order.

use std::sync::Mutex;

use hermes_core::transport::Delta;
use hermes_core::{Message, Origin, Outgoing, Wire};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::bedrock_wire::frame;
use crate::support;

/// One reported delta: answer text, or a tool-call fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Text(String),
    Call {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

fn origin() -> Origin {
    Origin {
        provider: "test".into(),
        host: "127.0.0.1".into(),
        model: "m".into(),
    }
}

/// Serves `body` as `content_type` to any POST on a loopback server, sends a streamed request
/// through the wire `at` makes for the server's URL, and checks the calls of the captured
/// message against the deltas reported ([`check_calls`]): the deltas' kinds, in order.
async fn calls_through<W: Wire>(
    at: impl FnOnce(&str) -> W,
    body: Vec<u8>,
    content_type: &str,
) -> Vec<String> {
    let server = MockServer::start().await;
    let wire = at(&server.uri());
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .expect(1)
        .mount(&server)
        .await;
    let seen = Mutex::new(Vec::new());
    let on_delta = |d: Delta<'_>| {
        let entry = match d {
            Delta::Content(t) => Seen::Text(t.to_owned()),
            Delta::Reasoning(t) => Seen::Text(format!("thinking: {t}")),
            Delta::Signature(s) => Seen::Text(format!("signature: {s}")),
            Delta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => Seen::Call {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            },
        };
        seen.lock().unwrap().push(entry);
    };
    let request = Outgoing::new(b"{}".to_vec(), true, Vec::new(), 1);
    let reply = wire.send(&request, origin(), &on_delta).await.unwrap();
    check_calls(&reply.message, &seen.into_inner().unwrap())
}

/// Checks the fragments of every stored call: joined, they are its arguments; its id and name
/// come with the first fragment and never again. Returns the deltas as a sequence of kinds
/// (`C` text, `T<index>` a fragment), for the order check.
fn check_calls(msg: &Message, seen: &[Seen]) -> Vec<String> {
    let calls = msg.tool_calls.as_ref().expect("the reply has tool calls");
    for (i, call) in calls.iter().enumerate() {
        let fragments: Vec<&Seen> = seen
            .iter()
            .filter(|s| matches!(s, Seen::Call { index, .. } if *index == i))
            .collect();
        assert!(!fragments.is_empty(), "call {i} has no fragments: {seen:?}");
        let mut joined = String::new();
        for (n, fragment) in fragments.iter().enumerate() {
            let Seen::Call {
                id,
                name,
                arguments,
                ..
            } = fragment
            else {
                unreachable!()
            };
            if n == 0 {
                assert_eq!(id.as_deref(), call.id.as_deref(), "call {i}: first id");
                assert_eq!(name.as_deref(), Some(call.function.name.as_str()));
            } else {
                assert_eq!((id, name), (&None, &None), "call {i}: fragment {n}");
            }
            joined.push_str(arguments);
        }
        let stored = call.function.arguments.as_ref().unwrap().as_str().unwrap();
        assert_eq!(joined, stored, "call {i}: joined fragments");
    }
    seen.iter()
        .map(|s| match s {
            Seen::Text(_) => "C".to_owned(),
            Seen::Call { index, .. } => format!("T{index}"),
        })
        .collect()
}

fn sse(events: &[(&str, serde_json::Value)]) -> Vec<u8> {
    events
        .iter()
        .map(|(event, data)| {
            if event.is_empty() {
                format!("data: {data}\n\n")
            } else {
                format!("event: {event}\ndata: {data}\n\n")
            }
        })
        .collect::<String>()
        .into_bytes()
}

#[tokio::test]
async fn chat_completions_tool_call_fragments_join_to_the_stored_arguments() {
    let chunk = |delta: serde_json::Value| json!({"choices": [{"index": 0, "delta": delta}]});
    let mut body = sse(&[
        (
            "",
            chunk(json!({"role": "assistant", "content": "Let me "})),
        ),
        ("", chunk(json!({"content": "check."}))),
        (
            "",
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "now", "arguments": ""}}]}),
            ),
        ),
        (
            "",
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"tz\":"}}]})),
        ),
        (
            "",
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Z\u{fc}rich\"}"}}]}),
            ),
        ),
        (
            "",
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}),
            ),
        ),
        (
            "",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ),
    ]);
    body.extend_from_slice(b"data: [DONE]\n\n");
    let calls = calls_through(support::chat_at, body, "text/event-stream").await;
    assert_eq!(calls, ["C", "C", "T0", "T0", "T0", "T1"]);
}

#[tokio::test]
async fn anthropic_tool_use_fragments_join_to_the_stored_input() {
    let start = |i: u32, block: serde_json::Value| {
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": block}),
        )
    };
    let delta = |i: u32, d: serde_json::Value| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": d}),
        )
    };
    let stop = |i: u32| {
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        )
    };
    let body = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Checking."})),
        stop(0),
        start(
            1,
            json!({"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"tz\":"}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "\"UTC\"}"}),
        ),
        stop(1),
        start(2, json!({"type": "text", "text": ""})),
        delta(2, json!({"type": "text_delta", "text": "And a ping."})),
        stop(2),
        // No input pieces: stored as `{}`, reported as its last fragment.
        start(
            3,
            json!({"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}}),
        ),
        stop(3),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let calls = calls_through(support::anthropic_at, body, "text/event-stream").await;
    assert_eq!(calls, ["C", "T0", "T0", "T0", "C", "T1", "T1"]);
}

#[tokio::test]
async fn bedrock_tool_use_fragments_join_to_the_stored_input() {
    let p = "abcdefgh";
    let body = [
        frame("messageStart", json!({"role": "assistant", "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Checking."}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 0, "p": p})),
        frame("contentBlockStart", json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "now"}}, "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"tz\":"}}, "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"UTC\"}"}}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 1, "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"text": "And a ping."}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 2, "p": p})),
        frame("contentBlockStart", json!({"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": "tooluse_2", "name": "ping"}}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 3, "p": p})),
        frame("messageStop", json!({"stopReason": "tool_use", "p": p})),
        frame("metadata", json!({"usage": {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}, "metrics": {"latencyMs": 3}, "p": p})),
    ]
    .concat();
    let calls = calls_through(
        support::bedrock_at,
        body,
        "application/vnd.amazon.eventstream",
    )
    .await;
    assert_eq!(calls, ["C", "T0", "T0", "T0", "C", "T1", "T1"]);
}

#[tokio::test]
async fn gemini_function_calls_arrive_whole_as_one_fragment_each() {
    let parts = |parts: serde_json::Value| {
        (
            "",
            json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}]}),
        )
    };
    let body = sse(&[
        parts(json!([{"text": "Checking."}])),
        parts(
            json!([{"functionCall": {"id": "fc_1", "name": "now", "args": {"tz": "UTC"}}, "thoughtSignature": "U0lH"}]),
        ),
        parts(json!([{"text": "And a ping."}])),
        // No id: the id hermes makes up is the one reported.
        (
            "",
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "ping", "args": {}}}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9}}),
        ),
    ]);
    let calls = calls_through(
        |uri| support::gemini_at(&format!("{uri}/v1beta")),
        body,
        "text/event-stream",
    )
    .await;
    assert_eq!(calls, ["C", "T0", "C", "T1"]);
}

#[tokio::test]
async fn responses_function_call_fragments_join_to_the_stored_arguments() {
    let message = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "annotations": [], "text": "Checking."}]});
    let call = |args: &str| json!({"id": "fc_1", "type": "function_call", "status": "completed", "arguments": args, "call_id": "call_1", "name": "now"});
    let body = sse(&[
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Checking."}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 1, "item": call("")}),
        ),
        (
            "response.function_call_arguments.delta",
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"tz\":"}),
        ),
        (
            "response.function_call_arguments.delta",
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "\"UTC\"}"}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 1, "item": call("{\"tz\":\"UTC\"}")}),
        ),
        // A call that arrives only whole (no `added`, no deltas): one fragment.
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"id": "fc_2", "type": "function_call", "status": "completed", "arguments": "{}", "call_id": "call_2", "name": "ping"}}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"status": "completed", "output": [], "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}}}),
        ),
    ]);
    let calls = calls_through(
        |uri| support::responses_at(&format!("{uri}/v1")),
        body,
        "text/event-stream",
    )
    .await;
    assert_eq!(calls, ["C", "T0", "T0", "T0", "T1"]);
}
