//! The chat-completions transport against a real loopback server (wiremock): the body sent,
//! captured carriers, and every failure mode as a typed error.

use std::time::Duration;

use hermes_core::{Message, Origin, ResolveOptions, RouteTarget};
use hermes_providers::{ChatTransport, TransportError, builtin_table};
use hermes_wire_chat::{Endpoint, HttpChat};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support;

fn origin() -> Origin {
    Origin {
        provider: "deepseek".into(),
        host: "127.0.0.1".into(),
        model: "deepseek-v4-pro".into(),
    }
}

fn history() -> Vec<Message> {
    serde_json::from_value(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "again"}
    ]))
    .unwrap()
}

async fn send(
    server: &MockServer,
    stream: bool,
) -> Result<hermes_providers::Reply, TransportError> {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("deepseek", Some(&server.uri()), "deepseek-v4-pro"),
        ResolveOptions::default(),
    );
    let history = history();
    let request = support::chat_request(&history, &decision, stream);
    let endpoint = Endpoint {
        base_url: format!("{}/v1", server.uri()),
        api_key: Some("sk-test-secret".into()),
    };
    HttpChat {
        client: ChatTransport::new().unwrap(),
        endpoint,
    }
    .send_chat(&request, origin())
    .await
}

#[tokio::test]
async fn sends_the_shaped_body_with_the_key_and_captures_carriers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test-secret"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": "yes", "reasoning_content": "thïnk", "refusal": null}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
                      "completion_tokens_details": {"reasoning_tokens": 1},
                      "prompt_tokens_details": {"cached_tokens": 3}}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let reply = send(&server, false).await.unwrap();
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(
        sent,
        json!({"model": "deepseek-v4-pro", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "reasoning_content": " "},
            {"role": "user", "content": "again"}
        ]})
    );
    assert_eq!(
        serde_json::to_value(&reply.message).unwrap(),
        json!({"role": "assistant", "content": "yes", "reasoning_content": "thïnk",
               "origin": {"provider": "deepseek", "host": "127.0.0.1", "model": "deepseek-v4-pro"}})
    );
    assert_eq!(reply.meta.finish, Some(hermes_core::FinishReason::Stop));
    assert_eq!(
        reply.meta.usage,
        Some(hermes_core::Usage::new(5, 2, 1, 3, 0)),
        "usage normalised: input, output, reasoning, cache read, cache write"
    );
}

#[tokio::test]
async fn http_errors_keep_status_body_and_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_string("slow down"),
        )
        .mount(&server)
        .await;
    let err = send(&server, false).await.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.body(), Some("slow down"));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error_naming_it() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway</html>"))
        .mount(&server)
        .await;
    let err = send(&server, false).await.unwrap_err();
    assert!(matches!(err, TransportError::Decode(_)), "{err:?}");
    assert!(err.to_string().contains("<html>gateway</html>"), "{err}");
}

fn sse(events: &[&str]) -> ResponseTemplate {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// A streamed request to a fresh server that answers with `events`; the server comes back
/// for what the test reads of the request.
async fn streamed(
    events: &[&str],
) -> (MockServer, Result<hermes_providers::Reply, TransportError>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(events))
        .mount(&server)
        .await;
    let reply = send(&server, true).await;
    (server, reply)
}

#[tokio::test]
async fn a_stream_is_accumulated_into_one_message() {
    let (server, reply) = streamed(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"a"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"b"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ])
    .await;
    let reply = reply.unwrap();
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(reply.message.reasoning_content.unwrap().text(), "ab");
    assert_eq!(reply.message.content.unwrap().get(), r#""done""#);
}

#[tokio::test]
async fn an_error_after_the_200_is_an_error_and_no_message() {
    let (_, err) = streamed(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"par"}}]}"#,
        r#"{"error":{"message":"upstream provider failed","code":502}}"#,
    ])
    .await;
    let err = err.unwrap_err();
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "upstream provider failed"),
        "{err:?}"
    );
}

/// Serves `body` as a 200 event stream and returns the provider message of the error.
async fn after_ok(body: &str) -> String {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    match send(&server, true).await {
        Err(TransportError::AfterOk(message)) => message,
        // Nothing is captured: an error is never a message.
        other => panic!("{body:?}: {other:?}"),
    }
}

#[tokio::test]
async fn a_provider_error_inside_a_200_stream_keeps_its_message() {
    const PARTIAL: &str = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"par"}}]}

"#;
    // Anthropic style: an `event: error` frame with a JSON payload, first or later.
    let json = r#"event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded right now"}}

"#;
    assert_eq!(after_ok(json).await, "Overloaded right now");
    assert_eq!(
        after_ok(&format!("{PARTIAL}{json}")).await,
        "Overloaded right now"
    );
    // An `event: error` frame with plain text.
    assert_eq!(
        after_ok(&format!(
            "{PARTIAL}event: error\ndata: upstream went away\n\n"
        ))
        .await,
        "upstream went away"
    );
    // A `{"error": …}` payload that is not the first chunk, with its message nested.
    assert_eq!(
        after_ok(&format!(
            "{PARTIAL}data: {{\"error\":{{\"code\":502,\"error\":{{\"message\":\"nested provider failure\"}}}}}}\n\n"
        ))
        .await,
        "nested provider failure"
    );
    assert_eq!(
        after_ok(&format!(
            "{PARTIAL}data: {{\"error\":\"plain string error\"}}\n\n"
        ))
        .await,
        "plain string error"
    );
    // A JSON error body sent with 200 instead of an event stream.
    assert_eq!(
        after_ok(r#"{"error":{"message":"quota exhausted","type":"insufficient_quota"}}"#).await,
        "quota exhausted"
    );
}

#[tokio::test]
async fn a_huge_error_body_is_read_only_up_to_the_limit() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_bytes(vec![b'x'; 50 * 1024 * 1024]))
        .mount(&server)
        .await;
    let err = send(&server, false).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    let body = err.body().unwrap();
    let kept = body.bytes().take_while(|b| *b == b'x').count();
    assert_eq!(kept, 64 * 1024, "exactly the limit is kept");
    assert!(body.len() <= 64 * 1024 + 100, "{}", body.len());
    assert!(
        body.ends_with("(error body cut at 65536 bytes)"),
        "{}",
        &body[kept..]
    );
    // A small body is kept whole, without a note.
    let small = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_bytes(vec![b'y'; 64 * 1024]))
        .mount(&small)
        .await;
    let err = send(&small, false).await.unwrap_err();
    assert_eq!(err.body().unwrap().len(), 64 * 1024);
}

#[tokio::test]
async fn a_stream_that_stops_early_is_an_error() {
    let (_, err) =
        streamed(&[r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"par"}}]}"#])
            .await;
    let err = err.unwrap_err();
    assert!(matches!(err, TransportError::Stream(_)), "{err:?}");
    let (_, err) = streamed(&["{not json"]).await;
    let err = err.unwrap_err();
    assert!(err.to_string().contains("stream chunk 1"), "{err}");
}

#[test]
fn the_key_never_shows_in_debug_output() {
    let endpoint = Endpoint {
        base_url: "https://api.example.test/v1".into(),
        api_key: Some("sk-live-very-secret".into()),
    };
    let text = format!("{endpoint:?}");
    assert!(!text.contains("sk-live-very-secret"), "{text}");
    assert!(text.contains("<redacted>"));
}

/// Sends the test request to `base_url` and returns the connect error's text.
async fn connect_error(base_url: &str) -> String {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("custom", Some(base_url), "m"),
        ResolveOptions::default(),
    );
    let history = history();
    let request = support::chat_request(&history, &decision, false);
    let wire = HttpChat {
        client: ChatTransport::new().unwrap(),
        endpoint: Endpoint {
            base_url: base_url.to_owned(),
            api_key: None,
        },
    };
    match wire.send_chat(&request, origin()).await {
        Err(TransportError::Connect(text)) => text,
        other => panic!("{base_url}: expected a connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_connect_failure_names_its_cause_dns_refused_or_tls() {
    // A loopback port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let refused = connect_error(&format!("http://127.0.0.1:{port}/v1")).await;
    assert_eq!(
        refused,
        format!("127.0.0.1:{port} refused the connection (nothing listens there?)")
    );
    // `.invalid` never resolves (RFC 6761).
    let dns = connect_error("http://hermes-test.invalid/v1").await;
    assert!(
        dns.starts_with("the host name hermes-test.invalid could not be resolved (DNS: "),
        "{dns}"
    );
    // https to a server that speaks plain http: the handshake fails.
    let server = MockServer::start().await;
    let tls = connect_error(&server.uri().replace("http://", "https://")).await;
    assert!(
        tls.starts_with(&format!(
            "the TLS handshake with {} failed: ",
            server.address()
        )),
        "{tls}"
    );
    for text in [&refused, &dns, &tls] {
        assert!(!text.contains("error sending request"), "{text}");
    }
}

#[tokio::test]
async fn a_server_that_closes_before_answering_is_named_with_the_cause() {
    // Accepts, reads the request, and closes without a byte of reply.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt as _;
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            drop(socket);
        }
    });
    let base_url = format!("http://{address}/v1");
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("deepseek", Some(&base_url), "deepseek-v4-pro"),
        ResolveOptions::default(),
    );
    let history = history();
    let request = support::chat_request(&history, &decision, false);
    let endpoint = Endpoint {
        base_url,
        api_key: None,
    };
    let err = HttpChat {
        client: ChatTransport::new().unwrap(),
        endpoint,
    }
    .send_chat(&request, origin())
    .await
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot send the request: {address}: ")),
        "{text}"
    );
    assert!(text.contains("closed"), "{text}");
    assert!(!text.contains("error sending request"), "{text}");
}
