//! Independent evidence, from boto3 and botocore (the official AWS SDK for Python), that hermes
//! signs Bedrock runtime requests exactly as the AWS SDKs do (docs/providers.md "Bedrock SigV4
//! detail") and sends bodies botocore's own service model accepts (checked, with an unknown key
//! injected at each object refused, by the schema table `sdk_schema` over this module's loop;
//! here, the controls that are not unknown keys).
//!
//! boto3 and botocore are pinned in `.ci/sdk-requirements.txt` and installed by `.ci/run` into
//! `target/sdk-venv`; these tests find its Python in `HERMES_SDK_PYTHON`. Without a usable one
//! they print a skip note and pass, unless `HERMES_REQUIRE_SDK` is set (CI sets it): then they
//! fail. The scripts in `tests/sdk/` say how they work:
//! - `boto3_record.py` makes the calls with boto3's `bedrock-runtime` client, fixed credentials
//!   and a fixed signing time, against the loopback recorder this test runs;
//! - `botocore_validate.py` checks requests with botocore's `ParamValidator` against the
//!   `bedrock-runtime` service model (the check boto3 runs before sending).
//!
//! The signing proof: for a plain model id, one with `:` and an inference-profile ARN, with and
//! without a session token, boto3 and hermes make the same call (same credentials, region,
//! clock and body) to the same recorder, and the recorded path, `Authorization`, `X-Amz-Date`,
//! `X-Amz-Security-Token` and body bytes are identical.
//! - InvokeModel (`invoke_model`, `invoke_model_with_response_stream`) goes through hermes'
//!   `AnthropicWire` (`Flavor::Bedrock`, `Auth::Aws`) with its own encoded Messages body, which
//!   boto3 is given as the opaque `body`.
//! - Converse (`converse`, `converse_stream`) goes through hermes' `BedrockWire` with its own
//!   encoded Converse body, which boto3 is given as the call's parameters (its JSON text as is,
//!   blobs decoded): botocore serialises the request itself, so equal body bytes mean hermes
//!   writes a Converse body exactly as botocore does.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hermes_aws::{AwsAuth, AwsCredentials, AwsSigner};
use hermes_core::route::Effort;
use hermes_core::{Origin, ThinkingRequest};
use hermes_providers::aws;
use hermes_providers::{Auth, ChatTransport};
use hermes_test_support::validator;
use hermes_wire_anthropic::{AnthropicWire, Flavor, Target};
use hermes_wire_bedrock::{self as bedrock, BedrockWire};
use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::images::{self, PNG};
use crate::support::{self, header};
use hermes_aws::testing::event;

const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/boto3_record.py");
pub(crate) const VALIDATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/botocore_validate.py"
);

/// A plain model id, one with `:` (sent as `%3A`) and an inference-profile ARN (`:` and `/`).
pub(crate) const MODELS: [&str; 3] = [
    "anthropic.claude-opus-4-6-v1",
    "anthropic.claude-3-haiku-20240307-v1:0",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-6-v1:0",
];

const REGION: &str = "us-east-1";
const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJGMEQCIHermesTest=";

/// The signing time both clients use: 2023-11-14T22:13:20Z.
fn fixed_clock() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}
const FIXED_STAMP: &str = "20231114T221320Z";

// ---------------------------------------------------------------------------------------------
// boto3's Python

/// Prints what the probe found.
pub(crate) const PROBE_SCRIPT: &str = "import boto3, botocore\n\
print(f'boto3 {boto3.__version__}, botocore {botocore.__version__}')";

/// The SDK's Python, or `None` when there is none and none is required (see
/// [`hermes_test_support::sdk::sdk_python`]).
fn sdk_python() -> Option<&'static Path> {
    hermes_test_support::sdk::sdk_python("boto3", PROBE_SCRIPT)
}

/// A Python command with no AWS settings of the machine's own: no `AWS_*` variables, no
/// config or credentials files, no proxy for the loopback recorder.
fn python(py: &Path) -> Command {
    let mut cmd = support::python(py, &["AWS_"]);
    cmd.env("AWS_CONFIG_FILE", "/nonexistent/hermes-sdk-test/config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/hermes-sdk-test/credentials",
        )
        .env("AWS_EC2_METADATA_DISABLED", "true");
    cmd
}

/// Runs `script` with `input` (JSON text) on standard input: its exit code, standard output
/// and standard error.
pub(crate) fn run(py: &Path, script: &str, input: &str) -> (Option<i32>, String, String) {
    support::run(python(py), script, input)
}

// ---------------------------------------------------------------------------------------------
// The recorder

/// One Anthropic stream event as a Bedrock `chunk` frame.
fn chunk(anthropic_event: &str) -> Vec<u8> {
    let bytes = base64::engine::general_purpose::STANDARD.encode(anthropic_event);
    event(
        "chunk",
        &format!(r#"{{"bytes":"{bytes}","p":"abcdefghijklmnop"}}"#),
    )
}

/// A loopback server that records every request and answers harmlessly: a short Messages reply
/// to `/invoke` (as JSON, or as event-stream frames to `/invoke-with-response-stream`), a short
/// Converse reply to `/converse` (`/converse-stream`: frames).
async fn recorder() -> MockServer {
    let server = MockServer::start().await;
    let message = r#"{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}"#;
    let frames: Vec<u8> = [
        r#"{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        r#"{"type":"message_stop"}"#,
    ]
    .iter()
    .flat_map(|e| chunk(e))
    .collect();
    let converse = r#"{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4},"metrics":{"latencyMs":1}}"#;
    let converse_frames: Vec<u8> = [
        ("messageStart", r#"{"p":"abcd","role":"assistant"}"#),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"ok"},"p":"abcd"}"#,
        ),
        ("contentBlockStop", r#"{"contentBlockIndex":0,"p":"abcd"}"#),
        ("messageStop", r#"{"p":"abcd","stopReason":"end_turn"}"#),
        (
            "metadata",
            r#"{"metrics":{"latencyMs":1},"p":"abcd","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4}}"#,
        ),
    ]
    .iter()
    .flat_map(|(kind, payload)| event(kind, payload))
    .collect();
    const JSON: &str = "application/json";
    const EVENTS: &str = "application/vnd.amazon.eventstream";
    for (path, mime, body) in [
        (r"/invoke$", JSON, message.as_bytes().to_vec()),
        (r"/invoke-with-response-stream$", EVENTS, frames),
        (r"/converse$", JSON, converse.as_bytes().to_vec()),
        (r"/converse-stream$", EVENTS, converse_frames),
    ] {
        Mock::given(method("POST"))
            .and(path_regex(path))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, mime))
            .mount(&server)
            .await;
    }
    server
}

// ---------------------------------------------------------------------------------------------
// The calls

pub(crate) fn credentials(token: Option<&str>) -> AwsAuth {
    AwsAuth::SigV4 {
        credentials: AwsCredentials {
            access_key_id: ACCESS_KEY.into(),
            secret_access_key: SECRET_KEY.into(),
            session_token: token.map(str::to_owned),
        },
        region: REGION.into(),
    }
}

/// A signed thinking block and a redacted one as captured, escapes and all.
const SIG: &str = r#"{"type":"thinking","thinking":"Call now \u00e9\/.","signature":"c2lnLTE="}"#;
const RED: &str = r#"{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}"#;
pub(crate) const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]"#;

/// A tool loop in flight whose step `model` minted at the loopback host (so its signed blocks
/// go back).
pub(crate) fn loop_history(model: &str) -> Vec<hermes_core::Message> {
    let step = json!({
        "role": "assistant", "content": null,
        "tool_calls": [{"id": "toolu_1", "type": "function",
                        "function": {"name": "now", "arguments": "{\"tz\":\"UTC\"}"}}],
        "reasoning_content": "Call now é/.",
        "reasoning_details": ["@SIG", "@RED"],
        "origin": {"provider": "bedrock-anthropic", "host": "127.0.0.1", "model": model},
        "hermes_block_order": ["thinking", "redacted_thinking", "tool_use"],
    });
    let text = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "time?"},
        step,
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
    ])
    .to_string()
    .replace("\"@SIG\"", SIG)
    .replace("\"@RED\"", RED);
    hermes_core::parse_history(&text).unwrap().messages
}

fn bedrock_wire(base: &str, auth: &AwsAuth) -> AnthropicWire {
    AnthropicWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            flavor: Flavor::Bedrock,
            base_url: base.to_owned(),
            max_tokens: None,
            account: None,
        },
        auth: Some(Auth::Signed(AwsSigner::shared(auth.clone(), fixed_clock))),
    }
}

pub(crate) fn converse_wire(base: &str, auth: &AwsAuth) -> BedrockWire {
    BedrockWire {
        client: ChatTransport::new().unwrap(),
        target: bedrock::Target {
            base_url: base.to_owned(),
            max_tokens: None,
            account: None,
        },
        auth: Some(AwsSigner::shared(auth.clone(), fixed_clock)),
    }
}

/// hermes' body for `model` on `wire` at `base` (streamed or not): the loop above, `thinking`
/// with a tool (budget thinking: the interleaved beta rides in the body where the model needs it).
pub(crate) fn encode_on(
    wire: &dyn hermes_core::Wire,
    provider: &str,
    base: &str,
    model: &str,
    thinking: ThinkingRequest,
    stream: bool,
) -> hermes_core::Outgoing {
    let h = loop_history(model);
    support::with_parts((provider, base, model), &h, TOOLS, |parts| {
        wire.encode(&parts.thinking(thinking).stream(stream))
            .unwrap()
    })
}

/// The thinking the signing proof's bodies ask for.
const LOW: ThinkingRequest = ThinkingRequest::Effort(Effort::Low);

/// hermes' InvokeModel (Anthropic Messages) body.
fn invoke_body(server: &MockServer, model: &str, stream: bool) -> hermes_core::Outgoing {
    let wire = bedrock_wire(&server.uri(), &credentials(None));
    encode_on(
        &wire,
        "bedrock-anthropic",
        &server.uri(),
        model,
        LOW,
        stream,
    )
}

/// hermes' Converse body.
fn converse_hermes(server: &MockServer, model: &str, stream: bool) -> hermes_core::Outgoing {
    let wire = converse_wire(&server.uri(), &credentials(None));
    encode_on(&wire, "bedrock", &server.uri(), model, LOW, stream)
}

/// A Converse request written by hand as it goes on the wire (without `modelId`, the path): the
/// same loop in Converse's shapes, signed reasoning and a redacted block (a blob: base64 on the
/// wire), Claude thinking and the beta in `additionalModelRequestFields`. The validator's
/// controls are made from it (their paths are known).
fn converse_body() -> Value {
    json!({
        "messages": [
            {"role": "user", "content": [{"text": "time?"}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Call now é/.", "signature": "c2lnLTE="}}},
                {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}},
                {"toolUse": {"toolUseId": "toolu_1", "name": "now", "input": {"tz": "UTC"}}}
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "toolu_1", "content": [{"text": "12:00"}]}},
                {"cachePoint": {"type": "default"}}
            ]}
        ],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 12288},
        "toolConfig": {"tools": [{"toolSpec": {
            "name": "now", "description": "The time",
            "inputSchema": {"json": {"type": "object", "properties": {"tz": {"type": "string"}}}}
        }}]},
        "additionalModelRequestFields": {
            "thinking": {"type": "enabled", "budget_tokens": 4096},
            "anthropic_beta": ["interleaved-thinking-2025-05-14"]
        }
    })
}

/// One call both clients make.
#[derive(Clone, Debug)]
struct Call {
    operation: &'static str,
    model: &'static str,
    /// hermes' encoded request (Messages for InvokeModel, Converse for Converse).
    out: hermes_core::Outgoing,
}

/// A request item as the Python scripts take it, `params` written in as given (JSON text).
fn item(operation: &str, model: &str, params: &str) -> String {
    format!(
        r#"{{"operation":{},"modelId":{},"params":{params}}}"#,
        Value::from(operation),
        Value::from(model)
    )
}

impl Call {
    /// The path both clients must send.
    fn path(&self) -> String {
        let verb = match self.operation {
            "invoke_model" => "invoke",
            "invoke_model_with_response_stream" => "invoke-with-response-stream",
            "converse" => "converse",
            "converse_stream" => "converse-stream",
            other => panic!("no such operation {other}"),
        };
        format!("/model/{}/{verb}", aws::path_segment(self.model))
    }

    fn invoke(&self) -> bool {
        self.operation.starts_with("invoke_model")
    }

    /// The call as `boto3_record.py` takes it: InvokeModel's body as the opaque `body` (a JSON
    /// string of its text), a Converse body as the parameters themselves, its text unchanged
    /// (number spellings and key order as hermes wrote them).
    fn for_boto3(&self) -> String {
        let text = std::str::from_utf8(&self.out.body).unwrap();
        if self.invoke() {
            let params = json!({"body": text, "contentType": "application/json"});
            item(self.operation, self.model, &params.to_string())
        } else {
            item(self.operation, self.model, text)
        }
    }
}

fn calls(server: &MockServer) -> Vec<Call> {
    let mut calls = Vec::new();
    for model in MODELS {
        for (operation, stream) in [
            ("invoke_model", false),
            ("invoke_model_with_response_stream", true),
        ] {
            let out = invoke_body(server, model, stream);
            calls.push(Call {
                operation,
                model,
                out,
            });
        }
        for (operation, stream) in [("converse", false), ("converse_stream", true)] {
            let out = converse_hermes(server, model, stream);
            calls.push(Call {
                operation,
                model,
                out,
            });
        }
    }
    calls
}

/// Makes every call with boto3, then with hermes, against one recorder, and compares each pair.
async fn prove_signing(py: &Path, token: Option<&str>) {
    let server = recorder().await;
    let auth = credentials(token);
    let calls = calls(&server);

    // boto3 first.
    let mut spec = json!({
        "endpoint": server.uri(),
        "region": REGION,
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        "session_token": token,
        "time": FIXED_STAMP,
    })
    .to_string();
    spec.pop();
    spec.push_str(&format!(
        r#","calls":[{}]}}"#,
        calls
            .iter()
            .map(Call::for_boto3)
            .collect::<Vec<_>>()
            .join(",")
    ));
    let (code, stdout, stderr) = run(py, RECORD, &spec);
    assert_eq!(code, Some(0), "boto3_record.py failed:\n{stdout}\n{stderr}");
    let boto3 = server.received_requests().await.unwrap();
    assert_eq!(boto3.len(), calls.len(), "one request per call: {stdout}");

    // Then hermes, the same calls in the same order.
    let invoke = bedrock_wire(&server.uri(), &auth);
    let converse = converse_wire(&server.uri(), &auth);
    for call in &calls {
        let wire: &dyn hermes_core::Wire = if call.invoke() { &invoke } else { &converse };
        let origin = Origin {
            provider: if call.invoke() {
                "bedrock-anthropic"
            } else {
                "bedrock"
            }
            .into(),
            host: "127.0.0.1".into(),
            model: call.model.into(),
        };
        let reply = wire.send(&call.out, origin, &|_| {}).await;
        let reply = reply.unwrap_or_else(|e| panic!("{} {}: {e}", call.operation, call.model));
        assert_eq!(reply.message.content.as_ref().unwrap().get(), r#""ok""#);
    }
    let all = server.received_requests().await.unwrap();
    let hermes = &all[boto3.len()..];
    assert_eq!(hermes.len(), calls.len());

    for ((call, b), h) in calls.iter().zip(&boto3).zip(hermes) {
        let what = format!(
            "{} {} (session token: {})",
            call.operation,
            call.model,
            token.is_some()
        );
        assert_eq!(b.url.path(), call.path(), "{what}: boto3's path");
        assert_eq!(h.url.path(), b.url.path(), "{what}: path");
        let b_auth = header(b, "authorization").unwrap();
        assert_eq!(
            header(h, "authorization"),
            Some(b_auth),
            "{what}: Authorization"
        );
        let signed = if token.is_some() {
            "content-type;host;x-amz-date;x-amz-security-token"
        } else {
            "content-type;host;x-amz-date"
        };
        assert!(
            b_auth.starts_with(&format!(
                "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20231114/{REGION}/bedrock/aws4_request, SignedHeaders={signed}, Signature="
            )),
            "{what}: {b_auth}"
        );
        for name in ["x-amz-date", "x-amz-security-token", "content-type", "host"] {
            assert_eq!(header(h, name), header(b, name), "{what}: {name}");
        }
        assert_eq!(header(h, "x-amz-security-token"), token);
        assert_eq!(
            String::from_utf8_lossy(&b.body),
            String::from_utf8_lossy(&call.out.body),
            "{what}: boto3 sent hermes' body (InvokeModel: as given; Converse: botocore's own \
             serialisation of hermes' request)"
        );
        assert_eq!(h.body, b.body, "{what}: body bytes");
    }
}

#[tokio::test]
async fn boto3_and_hermes_sign_the_same_bedrock_requests_identically() {
    let Some(py) = sdk_python() else { return };
    prove_signing(py, None).await;
}

#[tokio::test]
async fn boto3_and_hermes_sign_identically_with_a_session_token() {
    let Some(py) = sdk_python() else { return };
    prove_signing(py, Some(SESSION_TOKEN)).await;
}

#[tokio::test]
async fn a_different_clock_body_or_path_changes_the_signature() {
    // The control for the proof above: the compared header is sensitive to what it signs.
    let auth = credentials(None);
    let url = |model: &str| {
        format!(
            "http://127.0.0.1:9/model/{}/converse",
            aws::path_segment(model)
        )
    };
    let sign = |url: &str, body: &[u8], at: SystemTime| {
        hermes_aws::request_headers(&auth, url, "application/json", body, at)
            .unwrap()
            .into_iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1
    };
    let base = sign(&url(MODELS[1]), b"{}", fixed_clock());
    assert_ne!(
        base,
        sign(
            &url(MODELS[1]),
            b"{}",
            fixed_clock() + Duration::from_secs(1)
        )
    );
    assert_ne!(base, sign(&url(MODELS[1]), b"{ }", fixed_clock()));
    assert_ne!(
        base,
        sign(
            "http://127.0.0.1:9/model/anthropic.claude-3-haiku-20240307-v1:0/converse",
            b"{}",
            fixed_clock()
        ),
        "`:` is signed as sent: encoded once on the wire, twice in the canonical request"
    );
}

// ---------------------------------------------------------------------------------------------
// botocore's schema

/// Runs the validator over request items (JSON texts): one verdict per request, `None` when
/// valid.
fn validate(py: &Path, requests: &[String]) -> Vec<Option<String>> {
    let (code, stdout, stderr) = run(py, VALIDATE, &format!("[{}]", requests.join(",")));
    validator::verdicts(code, &stdout, &stderr, requests.len())
}

fn converse_request(model: &str, body: &Value) -> String {
    item("converse", model, &body.to_string())
}

// That hermes' Converse bodies validate, and that an unknown key injected at each of their
// objects is refused, is the schema table's (`sdk_schema`). Here: what is not an unknown key.

#[test]
fn botocore_refuses_a_union_with_two_members_and_a_blob_not_base64_and_takes_any_invoke_body() {
    let Some(py) = sdk_python() else { return };
    let mut two_members = converse_body();
    two_members["messages"][1]["content"][0]["reasoningContent"]["redactedContent"] = json!("ZW5j");
    let mut not_base64 = converse_body();
    not_base64["messages"][1]["content"][1]["reasoningContent"]["redactedContent"] =
        json!("not base64!");
    let controls = [
        (
            two_members,
            "tagged union structure messages[1].content[0].reasoningContent",
        ),
        (
            not_base64,
            "messages[1].content[1].reasoningContent.redactedContent: a blob must be base64",
        ),
    ];
    // The hand-written body itself is valid: the controls fail for their change.
    let mut requests = vec![converse_request(MODELS[1], &converse_body())];
    for (body, _) in &controls {
        requests.push(converse_request(MODELS[1], body));
    }
    let verdicts = validate(py, &requests);
    assert_eq!(verdicts[0], None, "{}", requests[0]);
    for ((_, expected), verdict) in controls.iter().zip(&verdicts[1..]) {
        let verdict = verdict
            .as_deref()
            .unwrap_or_else(|| panic!("botocore accepted a control that must fail: {expected}"));
        assert!(verdict.contains(expected), "{expected}: {verdict}");
    }
    // The InvokeModel body is an opaque payload to botocore: any text goes.
    let invoke = item(
        "invoke_model",
        MODELS[2],
        r#"{"body":"{}","contentType":"application/json"}"#,
    );
    assert_eq!(validate(py, &[invoke]), [None]);
}

// ---------------------------------------------------------------------------------------------
// Images

/// hermes' Converse body at `base` over [`images::history`] (no URL image: Converse takes none).
pub(crate) fn converse_images(base: &str, model: &str) -> hermes_core::Outgoing {
    let h = images::history(false);
    let wire = converse_wire(base, &credentials(None));
    support::with_parts(("bedrock", base, model), &h, TOOLS, |parts| {
        hermes_core::Wire::encode(&wire, &parts).unwrap()
    })
}

#[tokio::test]
async fn boto3_sends_hermes_converse_images_byte_for_byte_and_botocore_refuses_a_url_source() {
    let Some(py) = sdk_python() else { return };
    let server = recorder().await;
    let model = MODELS[1];
    let out = converse_images(&server.uri(), model);
    let text = std::str::from_utf8(&out.body).unwrap();
    assert!(
        text.contains(&format!(
            r#"{{"image": {{"format": "png", "source": {{"bytes": "{PNG}"}}}}}}"#
        )),
        "{text}"
    );
    // The same body with an image URL source is refused (that the body itself validates is the
    // schema table's).
    let mut by_url: Value = serde_json::from_str(text).unwrap();
    by_url["messages"][0]["content"][1]["image"]["source"] =
        json!({"url": "https://example.com/a.png"});
    let verdicts = validate(py, &[converse_request(model, &by_url)]);
    let refused = verdicts[0].as_deref().unwrap();
    assert!(
        refused.contains(r#"Unknown parameter in messages[0].content[1].image.source: "url""#),
        "{refused}"
    );
    // boto3 given the body as parameters (the blob decoded to bytes) writes the same bytes.
    let spec = json!({
        "endpoint": server.uri(), "region": REGION, "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY, "session_token": null, "time": FIXED_STAMP,
    })
    .to_string();
    let spec = format!(
        "{},\"calls\":[{}]}}",
        &spec[..spec.len() - 1],
        item("converse", model, text)
    );
    let (code, stdout, stderr) = run(py, RECORD, &spec);
    assert_eq!(code, Some(0), "boto3_record.py failed:\n{stdout}\n{stderr}");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    assert_eq!(String::from_utf8_lossy(&received[0].body), text);
}
