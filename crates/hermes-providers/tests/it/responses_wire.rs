//! The OpenAI Responses wire against a real loopback server (wiremock): the key as a bearer
//! header, the exact body bytes (`store:false`, `include`), whole and streamed replies, an
//! error event after the 200, and the one-time recovery from foreign encrypted reasoning
//! through the turn driver (exactly two requests, the second without that origin's reasoning
//! items and with their paired items id-less).

use std::sync::Mutex;

use hermes_core::driver::Conversation;
use hermes_core::{
    FinishReason, Message, Origin, RequestParts, ResolveOptions, RouteTarget, Usage, Verdicts, Wire,
};
use hermes_providers::{Auth, ChatTransport, TransportError, builtin_table};
use hermes_wire_responses::{ResponsesWire, WIRE_ID};
use wiremock::MockServer;

use crate::support;

const MODEL: &str = "gpt-5";
const KEY: &str = "sk-test-key-123";
const PATH: &str = "/v1/responses";

const RS1: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the time."}],"encrypted_content":"gAAAA\/foreign=="}"#;
const FC1: &str = r#"{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"tz\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#;
const REPLY: &str = r#"{"id":"resp_2","object":"response","status":"completed","error":null,"output":[{"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"Say it."}],"encrypted_content":"gAAAA-2"},{"id":"msg_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"It is noon."}],"role":"assistant"}],"usage":{"input_tokens":9,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":3}}}"#;

fn wire(server: &MockServer) -> ResponsesWire {
    ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: format!("{}/v1", server.uri()),
        auth: Some(Auth::Bearer(KEY.into())),
    }
}

/// A server that answers one request sent with the key as a bearer header and `header` with a
/// 200 of `body` (`content_type`), and the wire that sends to it.
async fn answering(
    header: (&str, &str),
    body: &str,
    content_type: &str,
) -> (MockServer, ResponsesWire) {
    let server = MockServer::start().await;
    let bearer = format!("Bearer {KEY}");
    let headers = [("authorization", bearer.as_str()), header];
    support::answer_once(&server, PATH, &headers, 200, body, content_type).await;
    let w = wire(&server);
    (server, w)
}

fn target(server: &MockServer) -> RouteTarget {
    RouteTarget::new(WIRE_ID, Some(&format!("{}/v1", server.uri())), MODEL)
}

fn origin(server: &MockServer) -> Origin {
    Origin {
        provider: WIRE_ID.into(),
        host: target(server).host_key(),
        model: MODEL.into(),
    }
}

/// A finished tool step minted by this model on this host, as stored.
fn history(server: &MockServer) -> Vec<Message> {
    let text = format!(
        r#"[{{"role":"system","content":"Be brief."}},
            {{"role":"user","content":"Time in Zürich?"}},
            {{"role":"assistant","content":null,"reasoning_content":"Need the time.",
              "tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"now","arguments":"{{\"tz\":\"Z\\u00fcrich\"}}"}},"call_id":"call_1","response_item_id":"fc_1"}}],
              "codex_reasoning_items":[{RS1}],"codex_message_items":[{FC1}],
              "hermes_block_order":["reasoning","function_call"],
              "origin":{{"provider":"{WIRE_ID}","host":"{}","model":"{MODEL}"}}}},
            {{"role":"tool","tool_call_id":"call_1","content":"12:00"}}]"#,
        target(server).host_key()
    );
    hermes_core::parse_history(&text).unwrap().messages
}

fn outgoing(server: &MockServer, w: &ResponsesWire, stream: bool) -> hermes_core::Outgoing {
    let table = builtin_table();
    let decision = table.resolve(&target(server), ResolveOptions::default());
    let verdicts = Verdicts::default();
    let h = history(server);
    let parts = RequestParts::new(&h, &decision, &verdicts).stream(stream);
    w.encode(&parts).unwrap()
}

fn body_of(stream: bool) -> String {
    format!(
        r#"{{"model":"gpt-5","stream":{stream},"include":["reasoning.encrypted_content"],"input":[{{"role":"user","content":"Time in Zürich?"}},{RS1},{FC1},{{"type":"function_call_output","call_id":"call_1","output":"12:00"}}],"instructions":"Be brief.","reasoning":{{"summary":"auto"}},"store":false}}"#
    )
}

#[tokio::test]
async fn a_whole_reply_with_the_key_as_a_bearer_header_and_the_exact_body() {
    let (server, w) = answering(("content-type", "application/json"), REPLY, support::JSON).await;
    let out = outgoing(&server, &w, false);
    assert_eq!(String::from_utf8(out.body.clone()).unwrap(), body_of(false));
    assert_eq!(out.refusable, ["encrypted_content"]);
    let reply = w.send(&out, origin(&server), &|_| {}).await.unwrap();
    let received = server.received_requests().await.unwrap();
    assert_eq!(received[0].body, out.body);
    assert!(!received[0].url.as_str().contains(KEY));
    let msg = reply.message;
    assert_eq!(msg.content.as_ref().unwrap().get(), r#""It is noon.""#);
    assert_eq!(msg.reasoning_content.as_ref().unwrap().text(), "Say it.");
    assert_eq!(msg.origin, Some(origin(&server)));
    assert_eq!(reply.meta.finish, Some(FinishReason::Stop));
    let stored = serde_json::to_string(&msg).unwrap();
    assert!(stored.contains(r#""codex_reasoning_items":[{"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"Say it."}],"encrypted_content":"gAAAA-2"}]"#), "{stored}");
    assert_eq!(reply.meta.usage, Some(Usage::new(9, 5, 3, 0, 0)));
}

const SSE: &str = concat!(
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"output\":[]}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_2\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
    "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_2\",\"output_index\":0,\"summary_index\":0,\"delta\":\"Say it.\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"rs_2\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Say it.\"}],\"encrypted_content\":\"gAAAA-2\"}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_2\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_2\",\"output_index\":1,\"content_index\":0,\"delta\":\"It is noon.\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"id\":\"msg_2\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"It is noon.\"}],\"role\":\"assistant\"}}\n\n",
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":5,\"output_tokens_details\":{\"reasoning_tokens\":3}}}}\n\n",
);

#[tokio::test]
async fn a_streamed_reply_is_captured_from_the_done_items() {
    let (server, w) = answering(("accept", "text/event-stream"), SSE, "text/event-stream").await;
    let out = outgoing(&server, &w, true);
    assert_eq!(String::from_utf8(out.body.clone()).unwrap(), body_of(true));
    let seen = Mutex::new(Vec::new());
    let reply = w
        .send(&out, origin(&server), &|d| {
            seen.lock().unwrap().push(format!("{d:?}"))
        })
        .await
        .unwrap();
    assert_eq!(
        seen.into_inner().unwrap(),
        [r#"Reasoning("Say it.")"#, r#"Content("It is noon.")"#]
    );
    let stored = serde_json::to_string(&reply.message).unwrap();
    assert!(
        stored.contains(r#""encrypted_content":"gAAAA-2""#),
        "{stored}"
    );
    assert!(
        stored.contains(
            r#""codex_message_items":[{"id":"msg_2","type":"message","status":"completed""#
        ),
        "{stored}"
    );
    assert_eq!(reply.meta.usage, Some(Usage::new(9, 5, 3, 0, 0)));
}

#[tokio::test]
async fn an_error_event_after_the_200_is_an_error_and_nothing_is_stored() {
    let server = MockServer::start().await;
    let sse = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"Something broke.\",\"param\":null}\n\n";
    support::answer(&server, PATH, 200, sse, "text/event-stream").await;
    let w = wire(&server);
    let out = outgoing(&server, &w, true);
    let err = support::failure(&w, &out, origin(&server)).await;
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m.contains("Something broke.")),
        "{err}"
    );
}

#[tokio::test]
async fn foreign_ciphertext_is_resent_once_without_it_and_its_pair_goes_id_less() {
    let server = MockServer::start().await;
    let refusal = r#"{"error":{"message":"The encrypted content for item rs_1 could not be verified. Reason: Encrypted content organization_id did not match the target organization.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}"#;
    support::refused_once(&server, PATH, "rs_1", refusal, REPLY).await;
    let w = wire(&server);
    let table = builtin_table();
    let decision = table.resolve(&target(&server), ResolveOptions::default());
    let mut conversation = Conversation {
        messages: history(&server),
        ..Conversation::default()
    };
    let before = serde_json::to_string(&conversation.messages).unwrap();
    let (outcome, told, _) = support::recovery_turn(&decision, &w, &mut conversation).await;
    assert_eq!(outcome.requests, 2, "one refusal, one resend");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 2);
    let second = String::from_utf8(received[1].body.clone()).unwrap();
    let fc_without_id = r#"{"type":"function_call","status":"completed","arguments":"{\"tz\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#;
    assert_eq!(
        second,
        format!(
            r#"{{"model":"gpt-5","stream":false,"include":["reasoning.encrypted_content"],"input":[{{"role":"user","content":"Time in Zürich?"}},{fc_without_id},{{"type":"function_call_output","call_id":"call_1","output":"12:00"}},{{"role":"user","content":"And now?"}}],"instructions":"Be brief.","reasoning":{{"summary":"auto"}},"store":false}}"#
        )
    );
    // Nothing persisted: no verdict, the stored turn unchanged.
    assert!(
        conversation
            .wire_verdicts
            .refused_for(WIRE_ID, &decision.target)
            .is_empty()
    );
    let after = serde_json::to_string(&conversation.messages[..4]).unwrap();
    assert_eq!(after, before);
    assert!(
        told.iter().any(|e| e.contains("could not verify")),
        "{told:?}"
    );
}

/// The wire's conformance cases (`tests/cases/default/responses-*.json`), run here through the
/// wire at OpenAI's base URL until the conformance suite registers it.
#[test]
fn the_conformance_cases_pass() {
    let table = builtin_table();
    let w = ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: hermes_wire_responses::DEFAULT_BASE.into(),
        auth: None,
    };
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases/default");
    let cases = hermes_conformance::load_cases(std::path::Path::new(dir)).unwrap();
    let mine: Vec<_> = cases
        .iter()
        .filter(|(name, _)| name.starts_with("responses-"))
        .collect();
    assert!(mine.len() >= 10, "{} cases", mine.len());
    let failures: Vec<String> = mine
        .iter()
        .filter_map(|(name, case)| {
            case.run_with(&table, "default", &[&w])
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
