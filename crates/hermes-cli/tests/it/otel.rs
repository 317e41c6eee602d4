//! OpenTelemetry export through the binary: an OTLP/HTTP receiver on loopback gets the GenAI spans of `hermes serve` (protobuf) and `hermes chat` (JSON), with exact token counts, no message content unless opted in, and no secret.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::Value;

use crate::serve::{http_with, new_key, serving_with};
use crate::support::{bare_command, own_home};

/// Keys planted in the binary's environment: none may reach a span.
const PLANTED: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-otel-planted-openai-51c0e9a7"),
    ("ANTHROPIC_API_KEY", "sk-ant-otel-planted-8d2f4b16"),
    ("AWS_ACCESS_KEY_ID", "AKIAOTELPLANTED7Q2Z"),
    (
        "AWS_SECRET_ACCESS_KEY",
        "otel/planted/secret/key/3e8a61f0c2d94b75",
    ),
];

/// A prompt word that appears nowhere else: it is in a span only when content is captured.
const PROMPT: &str = "Describe the quetzal-otel-4471 please";

/// What the receiver got: each POST's content type and body.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on loopback (`POST /v1/traces`, any content type), on a runtime of
/// its own; its base URL and what it received.
fn receiver() -> (String, Received, std::thread::JoinHandle<()>) {
    let received: Received = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let store = received.clone();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(
                    move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                        let store = store.clone();
                        async move {
                            let kind = headers
                                .get("content-type")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            store.lock().unwrap().push((kind, body.to_vec()));
                            ""
                        }
                    },
                ),
            );
            // Serves until the test process ends.
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    (format!("http://{addr}"), received, thread)
}

/// Every span received, decoded by its content type, with the resource's `service.name`.
fn spans(received: &Received) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    for (kind, body) in received.lock().unwrap().iter() {
        let request: ExportTraceServiceRequest = match kind.as_str() {
            "application/x-protobuf" => ExportTraceServiceRequest::decode(body.as_slice()).unwrap(),
            "application/json" => serde_json::from_slice(body).unwrap(),
            other => panic!("unexpected content type {other}"),
        };
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| text(a.value.as_ref()?.value.as_ref()?))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    out.push((service.clone(), span));
                }
            }
        }
    }
    out
}

fn text(value: &Any) -> Option<String> {
    match value {
        Any::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// A span's attribute `key`, as JSON (strings, integers, string arrays).
fn attr(span: &Span, key: &str) -> Option<Value> {
    let value = span
        .attributes
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match value {
        Any::StringValue(s) => Value::from(s.clone()),
        Any::IntValue(i) => Value::from(*i),
        Any::ArrayValue(list) => Value::Array(
            list.values
                .iter()
                .filter_map(|v| text(v.value.as_ref()?).map(Value::from))
                .collect(),
        ),
        other => panic!("{key}: unexpected {other:?}"),
    })
}

/// Waits up to 10 s for the receiver to hold a span named `name`.
fn wait_for(received: &Received, name: &str) -> Vec<(String, Span)> {
    for _ in 0..100 {
        let all = spans(received);
        if all.iter().any(|(_, s)| s.name == name) {
            return all;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!(
        "no span {name}: got {:?}",
        spans(received)
            .iter()
            .map(|(_, s)| &s.name)
            .collect::<Vec<_>>()
    );
}

/// No planted key, and (unless `content`) no prompt text, in anything exported.
fn assert_clean(received: &Received, content: bool) {
    for (_, body) in received.lock().unwrap().iter() {
        let body = String::from_utf8_lossy(body);
        for (var, key) in PLANTED {
            assert!(!body.contains(key), "{var}'s value is in an exported span");
        }
        assert_eq!(
            body.contains("quetzal-otel-4471"),
            content,
            "prompt text in spans: {content}"
        );
    }
}

/// The GenAI attributes of one upstream request span, against the usage the client was told.
fn assert_genai(span: &Span, model: &str, usage: (i64, i64, i64)) {
    assert_eq!(span.name, format!("chat {model}"));
    assert_eq!(span.kind, SpanKind::Client as i32);
    assert_eq!(attr(span, "gen_ai.operation.name"), Some("chat".into()));
    assert_eq!(attr(span, "gen_ai.provider.name"), Some("deepseek".into()));
    assert_eq!(attr(span, "gen_ai.request.model"), Some(model.into()));
    assert_eq!(attr(span, "gen_ai.response.model"), Some(model.into()));
    assert_eq!(
        attr(span, "gen_ai.usage.input_tokens"),
        Some(usage.0.into())
    );
    assert_eq!(
        attr(span, "gen_ai.usage.output_tokens"),
        Some(usage.1.into())
    );
    assert_eq!(
        attr(span, "gen_ai.usage.reasoning.output_tokens"),
        Some(usage.2.into())
    );
    assert!(
        usage.2 > 0 && usage.2 <= usage.1,
        "reasoning is part of output: {usage:?}"
    );
    assert_eq!(
        attr(span, "gen_ai.response.finish_reasons"),
        Some(serde_json::json!(["stop"]))
    );
    assert_eq!(attr(span, "server.address"), Some("127.0.0.1".into()));
    assert!(
        matches!(attr(span, "server.port"), Some(Value::Number(_))),
        "{:?}",
        span.attributes
    );
    assert_eq!(attr(span, "error.type"), None);
}

#[test]
fn the_gateway_exports_each_upstream_request_as_a_child_of_its_http_request_span() {
    let (endpoint, received, _thread) = receiver();
    let home = own_home();
    let key = new_key(home.path(), "acme");
    let mut env = PLANTED.to_vec();
    env.extend([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_SERVICE_NAME", "gateway-under-test"),
    ]);
    let (mut server, addr) = serving_with(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--allow-sim"],
        &env,
    );
    let body = serde_json::json!({
        "model": "sim/deepseek-v4-pro",
        "messages": [{"role": "user", "content": PROMPT}],
    });
    let (status, said) = http_with(
        &addr,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &format!("Authorization: Bearer {key}\r\n"),
    );
    assert_eq!(status, 200, "{said}");
    let json = said.lines().find(|l| l.starts_with('{')).unwrap();
    let reply: Value = serde_json::from_str(json).unwrap();
    let usage = &reply["usage"];
    let usage = (
        usage["prompt_tokens"].as_i64().unwrap(),
        usage["completion_tokens"].as_i64().unwrap(),
        usage["completion_tokens_details"]["reasoning_tokens"]
            .as_i64()
            .unwrap(),
    );

    // A streamed request: its upstream span is under its own request span too (the engine
    // runs a stream on a task of its own).
    let streamed = serde_json::json!({
        "model": "sim/deepseek-v4-pro",
        "stream": true,
        "messages": [{"role": "user", "content": "and streamed?"}],
    });
    let (status, said) = http_with(
        &addr,
        "POST",
        "/v1/chat/completions",
        &streamed.to_string(),
        &format!("Authorization: Bearer {key}\r\n"),
    );
    assert_eq!(status, 200, "{said}");

    // The spans are flushed when the server shuts down.
    server.terminate();

    let all = wait_for(&received, "chat deepseek-v4-pro");
    let requests: Vec<&Span> = all
        .iter()
        .filter(|(service, s)| {
            assert_eq!(service, "gateway-under-test");
            s.name == "POST /v1/chat/completions"
        })
        .map(|(_, s)| s)
        .collect();
    assert_eq!(requests.len(), 2, "one span per client request: {all:?}");
    let upstream: Vec<&Span> = all
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(
        upstream.len(),
        2,
        "one span per upstream request: {upstream:?}"
    );
    for (request, upstream) in requests.iter().zip(&upstream) {
        assert_eq!(request.kind, SpanKind::Server as i32);
        assert_eq!(
            attr(request, "http.route"),
            Some("/v1/chat/completions".into())
        );
        assert_eq!(upstream.trace_id, request.trace_id);
        assert_eq!(
            upstream.parent_span_id, request.span_id,
            "the upstream span is the request span's child"
        );
    }
    assert_ne!(
        requests[0].trace_id, requests[1].trace_id,
        "a trace per client request"
    );
    let upstream = upstream[0];
    assert_genai(upstream, "deepseek-v4-pro", usage);
    assert_eq!(attr(upstream, "gen_ai.input.messages"), None);
    assert_eq!(attr(upstream, "gen_ai.output.messages"), None);
    assert_clean(&received, false);
}

/// `hermes chat --json -q PROMPT` on the simulator with the OTLP variables set (`http/json`),
/// `extra` added: its `--json` output and what the receiver got.
fn chat_exporting(extra: &[(&str, &str)]) -> (Value, Received, Vec<(String, Span)>) {
    let (endpoint, received, _thread) = receiver();
    let home = own_home();
    let traces = format!("{endpoint}/v1/traces");
    let mut env = PLANTED.to_vec();
    env.extend([
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ]);
    env.extend(extra);
    let out = bare_command(
        home.path(),
        &["chat", "--provider", "sim", "--json", "-q", PROMPT],
        &env,
    )
    .output()
    .unwrap();
    let body = crate::support::success_json(&out, "chat --json");
    // The process has exited: whatever was exported arrived before it did.
    let all = spans(&received);
    (body, received, all)
}

#[test]
fn hermes_chat_exports_its_turn_and_upstream_request_without_content_by_default() {
    let (body, received, all) = chat_exporting(&[]);
    let model = body["messages"][0]["origin"]["model"]
        .as_str()
        .unwrap()
        .to_owned();
    let usage = (
        body["usage"]["prompt_tokens"].as_i64().unwrap(),
        body["usage"]["completion_tokens"].as_i64().unwrap(),
        body["usage"]["reasoning"].as_i64().unwrap(),
    );
    let (service, turn) = all
        .iter()
        .find(|(_, s)| s.name == "session_turn")
        .unwrap_or_else(|| panic!("no turn span: {all:?}"));
    assert_eq!(service, "hermes", "the default service name");
    let upstream = all
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name.starts_with("chat "))
        .unwrap_or_else(|| panic!("no upstream span: {all:?}"));
    assert_eq!(
        upstream.parent_span_id, turn.span_id,
        "the upstream span is the turn's child"
    );
    assert_genai(upstream, &model, usage);
    assert_eq!(attr(upstream, "gen_ai.input.messages"), None);
    assert_clean(&received, false);
}

#[test]
fn message_content_is_in_spans_only_when_opted_in() {
    let (_, received, all) = chat_exporting(&[
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ("OTEL_SERVICE_NAME", "chat-under-test"),
    ]);
    let (service, upstream) = all
        .iter()
        .find(|(_, s)| s.name.starts_with("chat "))
        .unwrap_or_else(|| panic!("no upstream span: {all:?}"));
    assert_eq!(service, "chat-under-test");
    let input: Value = serde_json::from_str(
        attr(upstream, "gen_ai.input.messages")
            .unwrap()
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        input.as_array().unwrap().last().unwrap(),
        &serde_json::json!({"role": "user", "parts": [{"type": "text", "content": PROMPT}]})
    );
    let output: Value = serde_json::from_str(
        attr(upstream, "gen_ai.output.messages")
            .unwrap()
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "stop");
    assert!(
        output[0]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "text"),
        "{output}"
    );
    assert_clean(&received, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upstream_request_has_its_error_type_and_an_error_status() {
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string("the model is not available"))
        .mount(&upstream)
        .await;
    let (endpoint, received, _thread) = receiver();
    let home = own_home();
    let base = format!("{}/v1", upstream.uri());
    let mut env = PLANTED.to_vec();
    env.extend([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("HERMES_API_KEY", "sk-otel-planted-custom-90ab17ce"),
    ]);
    let args = crate::support::chat_cmd(&crate::support::target(
        "custom",
        "m-1",
        &base,
        &["-q", PROMPT],
    ));
    // The mock keeps answering on the runtime's other worker meanwhile.
    let out =
        tokio::task::block_in_place(|| bare_command(home.path(), &args, &env).output().unwrap());
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = spans(&received);
    let failed = all
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name == "chat m-1")
        .unwrap_or_else(|| panic!("no upstream span: {all:?}"));
    assert_eq!(attr(failed, "error.type"), Some("400".into()));
    assert_eq!(
        failed.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    assert_eq!(attr(failed, "gen_ai.provider.name"), Some("custom".into()));
    assert_eq!(attr(failed, "gen_ai.usage.input_tokens"), None);
    let port = i64::from(upstream.address().port());
    assert_eq!(attr(failed, "server.port"), Some(port.into()));
    assert_clean(&received, false);
    for (_, body) in received.lock().unwrap().iter() {
        assert!(!String::from_utf8_lossy(body).contains("sk-otel-planted-custom-90ab17ce"));
    }
}
