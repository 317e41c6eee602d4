//! The Bedrock Converse wire against a real loopback server (wiremock): the percent-encoded
//! path, the SigV4 headers, the exact body bytes, whole and streamed replies, an exception
//! frame after the 200, and a refusal answered by the one-time recovery.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hermes_aws::{AwsAuth, AwsCredentials, AwsSigner};
use hermes_core::{
    Effort, FinishReason, Message, Origin, RequestParts, ResolveOptions, RouteTarget,
    ThinkingRequest, Verdicts, Wire,
};
use hermes_providers::{ChatTransport, TransportError, builtin_table};
use hermes_wire_bedrock::{BedrockWire, Drops, Target, encode};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support;

const MODEL: &str = "us.anthropic.claude-opus-4-6-v1:0";
const PATH: &str = "/model/us.anthropic.claude-opus-4-6-v1%3A0/converse";
const STREAM_PATH: &str = "/model/us.anthropic.claude-opus-4-6-v1%3A0/converse-stream";

fn fixed_clock() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn wire(server: &MockServer) -> BedrockWire {
    BedrockWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            base_url: server.uri(),
            max_tokens: None,
            account: None,
        },
        auth: Some(AwsSigner::shared(
            AwsAuth::SigV4 {
                credentials: AwsCredentials {
                    access_key_id: "AKIDEXAMPLE".into(),
                    secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                    session_token: Some("SESSION".into()),
                },
                region: "us-east-1".into(),
            },
            fixed_clock,
        )),
    }
}

/// The origin the driver records for a reply from `server`.
fn origin(server: &MockServer) -> Origin {
    Origin {
        provider: "bedrock".into(),
        host: RouteTarget::new("bedrock", Some(&server.uri()), MODEL).host_key(),
        model: MODEL.into(),
    }
}

/// A tool loop in flight whose step was minted by this model on this host.
fn loop_history(server: &MockServer) -> Vec<Message> {
    let host = RouteTarget::new("bedrock", Some(&server.uri()), MODEL).host_key();
    serde_json::from_value(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Time in Zürich?"},
        {"role": "assistant", "content": null,
         "reasoning_content": "Call now.",
         "reasoning_details": [
            {"type": "thinking", "thinking": "Call now.", "signature": "c2lnLTE="},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}],
         "tool_calls": [{"id": "tooluse_1", "type": "function",
                         "function": {"name": "now", "arguments": "{\"tz\":\"Europe/Zurich\"}"}}],
         "hermes_block_order": ["thinking", "redacted_thinking", "tool_use"],
         "origin": {"provider": "bedrock", "host": host, "model": MODEL}},
        {"role": "tool", "tool_call_id": "tooluse_1", "content": "12:00"},
    ]))
    .unwrap()
}

/// Encodes `history` for the server's target (effort high) and returns the wire's body too.
fn encoded(
    server: &MockServer,
    history: &[Message],
    stream: bool,
) -> (hermes_core::Outgoing, Vec<u8>) {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("bedrock", Some(&server.uri()), MODEL),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(history, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::High))
        .stream(stream);
    let w = wire(server);
    let outgoing = w.encode(&parts).unwrap();
    let body = encode(&parts, &w.target, &Drops::default()).unwrap().body;
    (outgoing, body)
}

fn header<'r>(request: &'r Request, name: &str) -> &'r str {
    request
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The request the server received: its path as sent, signed headers and exact body.
fn check_signed(request: &Request, want_path: &str, body: &[u8]) {
    assert_eq!(request.url.path(), want_path);
    let auth = header(request, "authorization");
    assert!(
        auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ),
        "{auth}"
    );
    assert!(!auth.contains("wJalr"), "the secret never leaves");
    assert_eq!(header(request, "x-amz-date"), "20231114T221320Z");
    assert_eq!(header(request, "x-amz-security-token"), "SESSION");
    assert_eq!(header(request, "content-type"), "application/json");
    assert_eq!(request.body, body, "the signed body is the encoded body");
}

pub(crate) fn frame(event: &str, payload: serde_json::Value) -> Vec<u8> {
    hermes_aws::testing::event(event, &payload.to_string())
}

fn stream_body() -> Vec<u8> {
    let p = "abcdefghijklmnopqrstuvwxyzABCDEFGH";
    [
        frame("messageStart", json!({"role": "assistant", "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "It is noon."}}, "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2lnLTI="}}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 0, "p": p})),
        frame("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "Noon in Zürich."}, "p": p})),
        frame("contentBlockStop", json!({"contentBlockIndex": 1, "p": p})),
        frame("messageStop", json!({"stopReason": "end_turn", "p": p})),
        frame("metadata", json!({"usage": {"inputTokens": 20, "outputTokens": 7, "totalTokens": 27}, "metrics": {"latencyMs": 5}, "p": p})),
    ]
    .concat()
}

#[tokio::test]
async fn a_whole_reply_goes_to_the_encoded_path_signed_and_is_captured() {
    let server = MockServer::start().await;
    let reply = r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"It is noon.","signature":"c2lnLTI="}}},{"text":"Noon."}]}},"stopReason":"end_turn","usage":{"inputTokens":20,"outputTokens":7,"totalTokens":27},"metrics":{"latencyMs":5}}"#;
    support::answer_once(&server, PATH, &[], 200, reply, support::JSON).await;
    let history = loop_history(&server);
    let (outgoing, body) = encoded(&server, &history, false);
    assert!(
        String::from_utf8_lossy(&body).contains(r#"{"reasoningContent": {"reasoningText": {"text": "Call now.", "signature": "c2lnLTE="}}}, {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}"#),
        "the loop's blocks go back: {}",
        String::from_utf8_lossy(&body)
    );
    let reply = wire(&server)
        .send(&outgoing, origin(&server), &|_| {})
        .await
        .unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    check_signed(&requests[0], PATH, &body);
    let msg = reply.message;
    assert_eq!(msg.content.as_ref().unwrap().get(), r#""Noon.""#);
    assert_eq!(
        msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
        r#"{"type":"thinking","thinking":"It is noon.","signature":"c2lnLTI="}"#
    );
    assert_eq!(msg.origin, Some(origin(&server)));
    assert!(
        msg.extra.iter().any(|(k, _)| k == "hermes_prefix_digest"),
        "stamped with the conversation its signature is bound to"
    );
    assert_eq!(reply.meta.finish, Some(FinishReason::Stop));
}

#[tokio::test]
async fn a_streamed_reply_is_read_from_its_frames() {
    let server = MockServer::start().await;
    support::answer_once(
        &server,
        STREAM_PATH,
        &[],
        200,
        stream_body(),
        "application/vnd.amazon.eventstream",
    )
    .await;
    let history = loop_history(&server);
    let (outgoing, body) = encoded(&server, &history, true);
    assert!(outgoing.stream);
    let (reply, seen) = support::send_recorded(&wire(&server), &outgoing, origin(&server)).await;
    let requests = server.received_requests().await.unwrap();
    check_signed(&requests[0], STREAM_PATH, &body);
    assert_eq!(seen, ["R:It is noon.", "C:Noon in Zürich."]);
    let msg = reply.message;
    assert_eq!(
        msg.reasoning_content.as_ref().unwrap().text(),
        "It is noon."
    );
    assert_eq!(
        msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
        r#"{"type":"thinking","thinking":"It is noon.","signature":"c2lnLTI="}"#
    );
    assert_eq!(
        msg.content.as_ref().unwrap().as_str().unwrap(),
        "Noon in Zürich."
    );
    assert_eq!(reply.meta.usage.unwrap().input, 20);
}

#[tokio::test]
async fn an_exception_frame_or_a_cut_stream_after_the_200_stores_nothing() {
    let server = MockServer::start().await;
    let exception = hermes_aws::testing::frame(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        br#"{"message":"Too many requests, please wait before trying again."}"#,
    );
    // Two whole frames, then the exception.
    let body = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        ),
        exception,
    ]
    .concat();
    Mock::given(method("POST"))
        .and(path(STREAM_PATH))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(body, "application/vnd.amazon.eventstream"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let history = loop_history(&server);
    let (outgoing, _) = encoded(&server, &history, true);
    let err = support::failure(&wire(&server), &outgoing, origin(&server)).await;
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "throttlingException: Too many requests, please wait before trying again."),
        "{err:?}"
    );
    // A body that ends inside a frame.
    server.reset().await;
    let whole = stream_body();
    let cut_frames = whole[..whole.len() / 2].to_vec();
    support::answer(
        &server,
        STREAM_PATH,
        200,
        cut_frames,
        "application/vnd.amazon.eventstream",
    )
    .await;
    let err = support::failure(&wire(&server), &outgoing, origin(&server)).await;
    support::assert_broken_stream(&err, "ended inside a frame");
}

#[tokio::test]
async fn a_validation_exception_is_an_http_error_the_wire_recovers_from_once() {
    let server = MockServer::start().await;
    let refusal = r#"{"message":"The model returned the following errors: messages.1.content.0: Invalid `signature` in `thinking` block"}"#;
    Mock::given(method("POST"))
        .and(path(PATH))
        .respond_with(
            ResponseTemplate::new(400)
                .insert_header("x-amzn-errortype", "ValidationException")
                .set_body_raw(refusal, "application/json"),
        )
        .mount(&server)
        .await;
    let history = loop_history(&server);
    let (outgoing, _) = encoded(&server, &history, false);
    let w = wire(&server);
    let err = support::failure(&w, &outgoing, origin(&server)).await;
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.body(), Some(refusal));
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("bedrock", Some(&server.uri()), MODEL),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&history, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::High));
    assert!(
        w.refused(err.status(), refusal, &outgoing.refusable, false)
            .is_none(),
        "not an unknown field: no verdict"
    );
    let recovery = w.recover(&parts, err.status(), refusal).unwrap();
    let resent = String::from_utf8(recovery.outgoing.body).unwrap();
    assert!(!resent.contains("reasoningContent"), "{resent}");
    assert!(!resent.contains("additionalModelRequestFields"), "{resent}");
}
