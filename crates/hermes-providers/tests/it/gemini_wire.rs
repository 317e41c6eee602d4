//! The Gemini `generateContent` wire against a real loopback server (wiremock): the key only in
//! the `x-goog-api-key` header (never the URL), the exact body bytes, whole and streamed replies,
//! an error after the 200, Vertex's path with a bearer token, a refused `thoughtSignature`
//! retried once through the turn driver, a missing signature told in one line, and the wire's
//! conformance cases (`tests/cases/default/gemini-*.json`).

use hermes_core::driver::Conversation;
use hermes_core::{
    FinishReason, Message, Origin, RequestParts, ResolveOptions, Role, RouteTarget, Verdicts, Wire,
};
use hermes_providers::{Auth, ChatTransport, TransportError, builtin_table};
use hermes_wire_gemini::{self as gemini, Flavor, GeminiWire, Target};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support;

const MODEL: &str = "gemini-3-pro-preview";
const KEY: &str = "AIza-test-key-123";
const PATH: &str = "/v1beta/models/gemini-3-pro-preview:generateContent";
const STREAM_PATH: &str = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent";

fn studio(server: &MockServer) -> GeminiWire {
    GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            flavor: Flavor::AiStudio,
            base_url: format!("{}/v1beta", server.uri()),
            max_tokens: None,
        },
        auth: Some(Auth::Header("x-goog-api-key", KEY.into())),
    }
}

fn host(server: &MockServer) -> String {
    RouteTarget::new("gemini", Some(&server.uri()), MODEL).host_key()
}

fn origin(server: &MockServer) -> Origin {
    Origin {
        provider: "gemini".into(),
        host: host(server),
        model: MODEL.into(),
    }
}

/// A tool loop in flight whose call this model signed on this host.
fn loop_history(server: &MockServer) -> Vec<Message> {
    let text = format!(
        r#"[{{"role":"system","content":"Be brief."}},
            {{"role":"user","content":"Time in Zürich?"}},
            {{"role":"assistant","content":null,"tool_calls":[{{"id":"fc1","type":"function",
               "function":{{"name":"now","arguments":"{{\"city\":\"Z\\u00fcrich\"}}"}},
               "extra_content":{{"google":{{"thought_signature":"U0lHLTE\/"}}}}}}],
             "origin":{{"provider":"gemini","host":"{}","model":"{MODEL}"}}}},
            {{"role":"tool","tool_call_id":"fc1","content":"12:00"}}]"#,
        host(server)
    );
    hermes_core::parse_history(&text).unwrap().messages
}

/// The outgoing request for `history` on `wire` (no thinking preference).
fn outgoing(
    server: &MockServer,
    wire: &GeminiWire,
    history: &[Message],
    stream: bool,
) -> hermes_core::Outgoing {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("gemini", Some(&server.uri()), MODEL),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(history, &decision, &verdicts).stream(stream);
    wire.encode(&parts).unwrap()
}

fn header_of<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

/// The key went in its header and nowhere in the URL.
fn check_key(request: &Request) {
    assert_eq!(header_of(request, "x-goog-api-key"), Some(KEY));
    assert!(
        !request.url.as_str().contains(KEY) && request.url.query_pairs().all(|(k, _)| k != "key"),
        "the key never goes in the URL: {}",
        request.url
    );
    assert_eq!(header_of(request, "authorization"), None);
    assert_eq!(header_of(request, "content-type"), Some("application/json"));
}

const REPLY: &str = r#"{"candidates":[{"content":{"parts":[{"text":"It is noon.","thoughtSignature":"VEVYVA=="}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":4,"thoughtsTokenCount":3,"totalTokenCount":19},"modelVersion":"gemini-3-pro-preview"}"#;

#[tokio::test]
async fn a_whole_reply_is_sent_with_the_key_in_its_header_and_captured() {
    let server = MockServer::start().await;
    support::answer_once(
        &server,
        PATH,
        &[("x-goog-api-key", KEY)],
        200,
        REPLY,
        support::JSON,
    )
    .await;
    let w = studio(&server);
    let history = loop_history(&server);
    let out = outgoing(&server, &w, &history, false);
    assert_eq!(out.refusable, ["thoughtSignature"]);
    let body = String::from_utf8(out.body.clone()).unwrap();
    assert_eq!(
        body,
        concat!(
            r#"{"contents":[{"parts":[{"text":"Time in Zürich?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"fc1","args":{"city":"Z\u00fcrich"},"name":"now"},"thoughtSignature":"U0lHLTE\/"}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"fc1","name":"now","response":{"output":"12:00"}}}],"role":"user"}],"#,
            r#""systemInstruction":{"parts":[{"text":"Be brief."}],"role":"user"},"#,
            r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}}"#
        )
    );
    let reply = w.send(&out, origin(&server), &|_| {}).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    check_key(&requests[0]);
    assert_eq!(requests[0].url.query(), None);
    assert_eq!(requests[0].body, out.body, "the exact encoded bytes");
    let msg = reply.message;
    assert_eq!(msg.content.as_ref().unwrap().get(), r#""It is noon.""#);
    assert_eq!(
        msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
        r#"{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"VEVYVA=="}}}"#
    );
    assert_eq!(msg.origin, Some(origin(&server)));
    assert_eq!(reply.meta.finish, Some(FinishReason::Stop));
    let usage = reply.meta.usage.unwrap();
    assert_eq!((usage.input, usage.output, usage.reasoning), (12, 7, 3));
}

const SSE: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Noon is \",\"thought\":true}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"12:00.\",\"thought\":true}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"It is \"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"noon.\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\",\"thoughtSignature\":\"RU5E\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":3,\"totalTokenCount\":19}}\r\n\r\n",
);

#[tokio::test]
async fn a_streamed_reply_asks_for_sse_and_keeps_the_trailing_signature() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(STREAM_PATH))
        .and(query_param("alt", "sse"))
        .and(header("x-goog-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_raw(SSE, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let w = studio(&server);
    let history = loop_history(&server);
    let out = outgoing(&server, &w, &history, true);
    assert!(out.stream);
    let (reply, seen) = support::send_recorded(&w, &out, origin(&server)).await;
    let requests = server.received_requests().await.unwrap();
    check_key(&requests[0]);
    assert_eq!(requests[0].url.query(), Some("alt=sse"));
    assert_eq!(header_of(&requests[0], "accept"), Some("text/event-stream"));
    assert_eq!(requests[0].body, out.body);
    assert_eq!(seen, ["R:Noon is ", "R:12:00.", "C:It is ", "C:noon."]);
    let msg = reply.message;
    assert_eq!(
        msg.content.as_ref().unwrap().as_str().unwrap(),
        "It is noon."
    );
    assert_eq!(
        msg.reasoning_content.as_ref().unwrap().text(),
        "Noon is 12:00."
    );
    assert_eq!(
        msg.reasoning_details.as_ref().unwrap()[0].raw().get(),
        r#"{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"RU5E"}}}"#
    );
    assert_eq!(reply.meta.usage.unwrap().output, 7);
}

#[tokio::test]
async fn an_error_after_the_200_or_a_stream_without_a_finish_stores_nothing() {
    let server = MockServer::start().await;
    let failing = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"It is \"}],\"role\":\"model\"}}]}\r\n\r\n",
        "data: {\"error\":{\"code\":500,\"message\":\"An internal error has occurred.\",\"status\":\"INTERNAL\"}}\r\n\r\n",
    );
    support::answer(&server, STREAM_PATH, 200, failing, "text/event-stream").await;
    let w = studio(&server);
    let history = loop_history(&server);
    let out = outgoing(&server, &w, &history, true);
    let err = support::failure(&w, &out, origin(&server)).await;
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "An internal error has occurred."),
        "{err:?}"
    );
    server.reset().await;
    let short = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"It is \"}],\"role\":\"model\"}}]}\r\n\r\n";
    support::answer(&server, STREAM_PATH, 200, short, "text/event-stream").await;
    let err = support::failure(&w, &out, origin(&server)).await;
    support::assert_broken_stream(&err, "without a finishReason");
}

#[tokio::test]
async fn vertex_gets_its_project_path_and_a_bearer_token() {
    let server = MockServer::start().await;
    let vertex_path = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-3-pro-preview:generateContent";
    support::answer_once(
        &server,
        vertex_path,
        &[("authorization", "Bearer ya29.token")],
        200,
        REPLY,
        support::JSON,
    )
    .await;
    let w = GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            flavor: Flavor::Vertex {
                project: "p1".into(),
                region: "us-central1".into(),
            },
            base_url: server.uri(),
            max_tokens: None,
        },
        auth: Some(Auth::Bearer("ya29.token".into())),
    };
    assert_eq!(
        gemini::vertex_base_url("us-central1"),
        "https://us-central1-aiplatform.googleapis.com"
    );
    assert_eq!(
        gemini::vertex_base_url("global"),
        "https://aiplatform.googleapis.com"
    );
    let history = loop_history(&server);
    let out = outgoing(&server, &w, &history, false);
    let reply = w.send(&out, origin(&server), &|_| {}).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), vertex_path);
    assert_eq!(header_of(&requests[0], "x-goog-api-key"), None);
    assert_eq!(requests[0].body, out.body);
    assert_eq!(reply.meta.finish, Some(FinishReason::Stop));
}

#[tokio::test]
async fn a_missing_signature_comes_back_as_one_clear_line() {
    let server = MockServer::start().await;
    let refusal = r#"{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:now` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}"#;
    support::answer_once(&server, PATH, &[], 400, refusal, support::JSON).await;
    let w = studio(&server);
    let history = loop_history(&server);
    let out = outgoing(&server, &w, &history, false);
    let err = support::failure(&w, &out, origin(&server)).await;
    assert_eq!(err.status(), Some(400));
    let line = err.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.starts_with("HTTP 400: Gemini refused a function call of the history for its thought signature: Function call is missing a thought_signature"),
        "{line}"
    );
    assert!(line.contains("hermes never invents a signature"), "{line}");
    assert_eq!(
        w.refused(err.status(), err.body().unwrap(), &out.refusable, false),
        None
    );
}

#[tokio::test]
async fn an_unknown_thought_signature_field_is_refused_once_and_resent_without_signatures() {
    let server = MockServer::start().await;
    let refusal = r#"[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"thoughtSignature\" at 'contents[1].parts[0]': Cannot find field.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"contents[1].parts[0]","description":"Invalid JSON payload received. Unknown name \"thoughtSignature\" at 'contents[1].parts[0]': Cannot find field."}]}]}}]"#;
    support::refused_once(&server, PATH, "thoughtSignature", refusal, REPLY).await;
    let w = studio(&server);
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("gemini", Some(&server.uri()), MODEL),
        ResolveOptions::default(),
    );
    let mut history = loop_history(&server);
    let user = history.remove(1);
    // A finished loop before this turn: the stored step is replayed, signed.
    let mut conversation = Conversation {
        messages: vec![history.remove(0), user],
        ..Conversation::default()
    };
    conversation.messages.extend(history);
    let (outcome, events, stored) = support::recovery_turn(&decision, &w, &mut conversation).await;
    assert_eq!(outcome.requests, 2, "one refusal, one retry");
    assert_eq!(
        conversation
            .wire_verdicts
            .refused_for(gemini::WIRE_ID, &decision.target),
        ["thoughtSignature"]
    );
    assert!(
        events
            .iter()
            .any(|e| e.contains("Refused") && e.contains("thoughtSignature"))
    );
    assert_eq!(stored.last().unwrap().role, Role::Assistant);
}
