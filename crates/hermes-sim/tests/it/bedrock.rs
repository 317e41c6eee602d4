//! The `bedrock` profile over real loopback HTTP: SigV4 (signed here with `aws-sigv4` the way the
//! AWS SDKs sign) and API-key auth, the strict Converse schema, turn order and tool pairing, the
//! per-model reasoning replay policy, ConverseStream event-stream frames (decoded with
//! `aws-smithy-eventstream`), and InvokeModel with an Anthropic Messages body.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::event_stream::Message;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hermes_sim::{
    BEDROCK_CONVERSE_TOP_LEVEL, PROFILES, SIM_AWS_ACCESS_KEY_ID, SIM_AWS_SECRET_ACCESS_KEY,
    SIM_AWS_SESSION_TOKEN, SIM_BEDROCK_API_KEY, Sim, Switches,
};
use serde_json::{Value, json};

use crate::common::{Resp, assert_header, assert_redacted, post_json, send, send_exact};

const CLAUDE: &str = "anthropic.claude-opus-4-6-v1:0";
const MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";
const BAD_TOKEN: &str = "The security token included in the request is invalid.";
const WRAP: &str = "The model returned the following errors: ";

// ---------------------------------------------------------------- paths and auth

/// Percent-encodes everything but RFC 3986 unreserved characters (as the SDKs encode a label).
fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn path(model: &str, op: &str) -> String {
    format!("/model/{}/{op}", encode(model))
}

struct Signer<'a> {
    akid: &'a str,
    secret: &'a str,
    token: Option<&'a str>,
    region: &'a str,
    service: &'a str,
    time: SystemTime,
}

impl Default for Signer<'_> {
    fn default() -> Self {
        Signer {
            akid: SIM_AWS_ACCESS_KEY_ID,
            secret: SIM_AWS_SECRET_ACCESS_KEY,
            token: None,
            region: "us-east-1",
            service: "bedrock",
            time: SystemTime::now(),
        }
    }
}

impl Signer<'_> {
    /// The headers a client adds after signing `POST {base}{path}` with `headers` and `body`, with
    /// `aws-sigv4`'s default settings (what the AWS SDKs use for Bedrock).
    fn sign(
        &self,
        base: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Vec<(String, String)> {
        let identity: Identity = Credentials::new(
            self.akid,
            self.secret,
            self.token.map(str::to_owned),
            None,
            "test",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(self.region)
            .name(self.service)
            .time(self.time)
            .settings(SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let request = SignableRequest::new(
            "POST",
            format!("{base}{path}"),
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .unwrap();
        let (instructions, _) = sign(request, &params).unwrap().into_parts();
        instructions
            .headers()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// Signs and sends `body` to `path`, with `content-type: application/json` signed.
async fn post_signed_as(sim: &Sim, signer: &Signer<'_>, path: &str, body: &[u8]) -> Resp {
    let base = sim.base_url();
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(signer.sign(&base, path, &[("content-type", "application/json")], body));
    let refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    send_exact(&base, "POST", path, &refs, body).await
}

async fn post_signed(sim: &Sim, path: &str, body: &Value) -> Resp {
    post_signed_as(sim, &Signer::default(), path, body.to_string().as_bytes()).await
}

/// Sends with the Bedrock API key.
async fn post(sim: &Sim, path: &str, body: &Value) -> Resp {
    let auth = format!("Bearer {SIM_BEDROCK_API_KEY}");
    post_json(sim, path, &[("Authorization", &auth)], body).await
}

fn header<'a>(r: &'a Resp, name: &str) -> Option<&'a str> {
    r.headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A 403 with `error_type` and exactly `{"message": message}`.
fn denied(r: &Resp, error_type: &str, message: &str) {
    assert_eq!(r.status, 403, "{}", r.text());
    let et = header(r, "x-amzn-errortype").unwrap();
    assert_eq!(et.split(':').next(), Some(error_type), "{et}");
    assert_eq!(r.json(), json!({"message": message}));
}

/// A `ValidationException`'s message.
fn validation(r: &Resp) -> String {
    assert_eq!(r.status, 400, "{}", r.text());
    let et = header(r, "x-amzn-errortype").unwrap();
    assert_eq!(et.split(':').next(), Some("ValidationException"), "{et}");
    let v = r.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    v["message"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------- bodies

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"text": text}]})
}

fn assistant(content: &Value) -> Value {
    json!({"role": "assistant", "content": content})
}

fn result(id: &str, text: &str) -> Value {
    json!({"role": "user", "content": [{"toolResult": {"toolUseId": id, "content": [{"text": text}]}}]})
}

fn tools() -> Value {
    json!({"tools": [{"toolSpec": {
        "name": "now",
        "description": "The current time.",
        "inputSchema": {"json": {"type": "object", "properties": {}}}
    }}]})
}

/// A Converse body with Claude thinking enabled.
fn thinking_body(messages: &[Value]) -> Value {
    json!({
        "messages": messages,
        "system": [{"text": "You are terse."}],
        "inferenceConfig": {"maxTokens": 4096},
        "toolConfig": tools(),
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    })
}

fn plain(messages: &[Value]) -> Value {
    json!({"messages": messages, "toolConfig": tools()})
}

fn flip_one_byte(s: &str, at: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

// ---------------------------------------------------------------- event streams

/// Decodes an event stream chunk by chunk with the official decoder; also reports whether some
/// chunk boundary fell inside a frame.
fn decode(r: &Resp) -> (Vec<Message>, bool) {
    assert_eq!(
        header(r, "content-type"),
        Some("application/vnd.amazon.eventstream")
    );
    assert!(r.chunks.len() > 2, "{} chunks", r.chunks.len());
    let mut decoder = MessageFrameDecoder::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut messages = Vec::new();
    for chunk in &r.chunks {
        buf.extend_from_slice(chunk);
        loop {
            let mut slice = &buf[..];
            let before = slice.len();
            let frame = decoder.decode_frame(&mut slice).unwrap();
            let used = before - slice.len();
            buf.drain(..used);
            match frame {
                DecodedFrame::Complete(m) => messages.push(m),
                DecodedFrame::Incomplete => break,
            }
        }
    }
    assert!(buf.is_empty(), "trailing bytes");
    // Frame boundaries from each prelude's total length; chunk boundaries from the chunk sizes.
    let mut frame_ends = Vec::new();
    let mut at = 0;
    while at < r.body.len() {
        let len = u32::from_be_bytes(r.body[at..at + 4].try_into().unwrap()) as usize;
        at += len;
        frame_ends.push(at);
    }
    assert_eq!(at, r.body.len());
    let mut chunk_end = 0;
    let mut cut_mid_frame = false;
    for c in &r.chunks {
        chunk_end += c.len();
        cut_mid_frame |= !frame_ends.contains(&chunk_end);
    }
    (messages, cut_mid_frame)
}

fn str_header(m: &Message, name: &str) -> Option<String> {
    m.headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| h.value().as_string().ok())
        .map(|s| s.as_str().to_owned())
}

/// `(event type, payload)` of event frames; checks the headers and the `p` padding.
fn events(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .map(|m| {
            assert_eq!(str_header(m, ":message-type").as_deref(), Some("event"));
            assert_eq!(
                str_header(m, ":content-type").as_deref(),
                Some("application/json")
            );
            let kind = str_header(m, ":event-type").unwrap();
            let mut payload: Value = serde_json::from_slice(m.payload()).unwrap();
            let p = payload.as_object_mut().unwrap().shift_remove("p").unwrap();
            let p = p.as_str().unwrap();
            assert!(
                !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()),
                "{p}"
            );
            (kind, payload)
        })
        .collect()
}

/// Rebuilds the Converse content and stop reason from ConverseStream events.
fn reassemble(evs: &[(String, Value)]) -> (Value, String) {
    assert_eq!(evs[0].0, "messageStart");
    assert_eq!(evs[0].1["role"], "assistant");
    let mut content: Vec<Value> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    let mut stop = String::new();
    let slot = |content: &mut Vec<Value>, inputs: &mut Vec<String>, i: usize| {
        while content.len() <= i {
            content.push(Value::Null);
            inputs.push(String::new());
        }
    };
    for (kind, d) in evs {
        match kind.as_str() {
            "messageStart" => {}
            "contentBlockStart" => {
                let i = d["contentBlockIndex"].as_u64().unwrap() as usize;
                slot(&mut content, &mut inputs, i);
                let tu = &d["start"]["toolUse"];
                content[i] = json!({"toolUse": {"toolUseId": tu["toolUseId"], "name": tu["name"], "input": {}}});
            }
            "contentBlockDelta" => {
                let i = d["contentBlockIndex"].as_u64().unwrap() as usize;
                slot(&mut content, &mut inputs, i);
                let delta = &d["delta"];
                assert_eq!(delta.as_object().unwrap().len(), 1, "{delta}");
                if let Some(t) = delta["text"].as_str() {
                    if content[i].is_null() {
                        content[i] = json!({"text": ""});
                    }
                    let s = content[i]["text"].as_str().unwrap().to_owned() + t;
                    content[i]["text"] = json!(s);
                } else if let Some(r) = delta.get("reasoningContent") {
                    assert_eq!(r.as_object().unwrap().len(), 1, "{r}");
                    if let Some(data) = r.get("redactedContent") {
                        content[i] = json!({"reasoningContent": {"redactedContent": data}});
                        continue;
                    }
                    if content[i].is_null() {
                        content[i] = json!({"reasoningContent": {"reasoningText": {"text": ""}}});
                    }
                    let rt = &mut content[i]["reasoningContent"]["reasoningText"];
                    assert!(rt.get("signature").is_none(), "a delta after the signature");
                    if let Some(t) = r["text"].as_str() {
                        rt["text"] = json!(rt["text"].as_str().unwrap().to_owned() + t);
                    } else {
                        rt["signature"] = r["signature"].clone();
                    }
                } else {
                    inputs[i].push_str(delta["toolUse"]["input"].as_str().unwrap());
                }
            }
            "contentBlockStop" => {
                let i = d["contentBlockIndex"].as_u64().unwrap() as usize;
                if content[i].get("toolUse").is_some() {
                    content[i]["toolUse"]["input"] = serde_json::from_str(&inputs[i]).unwrap();
                }
            }
            "messageStop" => stop = d["stopReason"].as_str().unwrap().to_owned(),
            "metadata" => {
                for k in ["inputTokens", "outputTokens", "totalTokens"] {
                    assert!(d["usage"][k].is_u64(), "{d}");
                }
                assert!(d["metrics"]["latencyMs"].is_u64());
            }
            other => panic!("unexpected event {other}"),
        }
    }
    assert_eq!(evs.last().unwrap().0, "metadata");
    (Value::Array(content), stop)
}

/// Asks Claude (or `model`) and returns `(content, stopReason)`, from the JSON or the stream.
async fn converse(sim: &Sim, model: &str, body: &Value, stream: bool) -> (Value, String) {
    let op = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    let r = post_signed(sim, &path(model, op), body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    if stream {
        let (messages, _) = decode(&r);
        reassemble(&events(&messages))
    } else {
        let v = r.json();
        assert_eq!(v["output"]["message"]["role"], "assistant");
        for k in ["inputTokens", "outputTokens", "totalTokens"] {
            assert!(v["usage"][k].is_u64(), "{v}");
        }
        assert!(v["metrics"]["latencyMs"].is_u64());
        // Re-serialising the parsed content gives the received bytes: replaying it is verbatim.
        assert!(
            r.text()
                .contains(&v["output"]["message"]["content"].to_string())
        );
        (
            v["output"]["message"]["content"].clone(),
            v["stopReason"].as_str().unwrap().to_owned(),
        )
    }
}

fn tool_use_id(content: &Value) -> String {
    content
        .as_array()
        .unwrap()
        .iter()
        .find_map(|b| b["toolUse"]["toolUseId"].as_str())
        .unwrap()
        .to_owned()
}

// ---------------------------------------------------------------- tests: the table and auth

#[tokio::test]
async fn the_profile_is_in_the_table() {
    let info = PROFILES.iter().find(|p| p.name == "bedrock").unwrap();
    assert_eq!(info.provider, "bedrock");
    assert!(info.model.contains("anthropic.claude") && info.model.contains(':'));
    let sim = Sim::start("bedrock").await.unwrap();
    assert_eq!(sim.profile(), "bedrock");
    let r = post(
        &sim,
        &path(info.model, "converse"),
        &json!({"messages": [user("hi")]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(BEDROCK_CONVERSE_TOP_LEVEL.contains(&"additionalModelRequestFields"));
}

#[tokio::test]
async fn a_request_signed_like_the_sdks_is_accepted_and_a_change_after_signing_is_refused() {
    let sim = Sim::start("bedrock").await.unwrap();
    let base = sim.base_url();
    let body = json!({"messages": [user("hi")]}).to_string();
    let p = path(CLAUDE, "converse");
    assert!(p.contains("%3A"), "{p}");
    let r = post_signed_as(&sim, &Signer::default(), &p, body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(header(&r, "x-amzn-requestid").is_some());
    // An inference-profile ARN: `:` and `/` encoded in the one path segment; any region.
    let arn =
        "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-6";
    let eu = Signer {
        region: "eu-west-3",
        ..Signer::default()
    };
    let r = post_signed_as(&sim, &eu, &path(arn, "converse"), body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // The signature covers the body, the path and every signed header.
    let signed = Signer::default().sign(
        &base,
        &p,
        &[("content-type", "application/json")],
        body.as_bytes(),
    );
    let send_with = |path: String, ct: &'static str, body: String| {
        let signed = signed.clone();
        let base = base.clone();
        async move {
            let mut headers: Vec<(&str, &str)> = vec![("content-type", ct)];
            headers.extend(signed.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            send_exact(&base, "POST", &path, &headers, body.as_bytes()).await
        }
    };
    let r = send_with(p.clone(), "application/json", body.clone()).await;
    assert_eq!(
        r.status,
        200,
        "the unchanged replay is accepted: {}",
        r.text()
    );
    let changed_body = body.replacen("hi", "ho", 1);
    let r = send_with(p.clone(), "application/json", changed_body).await;
    denied(&r, "InvalidSignatureException", MISMATCH);
    let changed_path = path("anthropic.claude-opus-4-6-v1:1", "converse");
    assert_eq!(changed_path.len(), p.len());
    let r = send_with(changed_path, "application/json", body.clone()).await;
    denied(&r, "InvalidSignatureException", MISMATCH);
    // The path as signed, but sent with a raw `:` (not the encoded form that was signed).
    let r = send_with(
        format!("/model/{CLAUDE}/converse"),
        "application/json",
        body.clone(),
    )
    .await;
    denied(&r, "InvalidSignatureException", MISMATCH);
    let r = send_with(p.clone(), "application/jsoN", body.clone()).await;
    denied(&r, "InvalidSignatureException", MISMATCH);

    // A wrong secret, an unknown key, another service, a session token the simulator does not
    // expect.
    for (signer, kind, message) in [
        (
            Signer {
                secret: "not-the-secret",
                ..Signer::default()
            },
            "InvalidSignatureException",
            MISMATCH,
        ),
        (
            Signer {
                akid: "AKIDSTRANGER",
                ..Signer::default()
            },
            "UnrecognizedClientException",
            BAD_TOKEN,
        ),
        (
            Signer {
                service: "s3",
                ..Signer::default()
            },
            "InvalidSignatureException",
            "Credential should be scoped to correct service: 'bedrock'. ",
        ),
        (
            Signer {
                token: Some(SIM_AWS_SESSION_TOKEN),
                ..Signer::default()
            },
            "UnrecognizedClientException",
            BAD_TOKEN,
        ),
    ] {
        denied(
            &post_signed_as(&sim, &signer, &p, body.as_bytes()).await,
            kind,
            message,
        );
    }
    // No credentials at all.
    let r = send(&base, "POST", &p, &[], body.as_bytes()).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json(),
        json!({"Message": "Authorization header is missing"})
    );
    assert!(
        header(&r, "x-amzn-errortype")
            .unwrap()
            .starts_with("AccessDeniedException")
    );

    // Every request was recorded, the credentials redacted.
    let rec = sim.requests();
    assert_eq!(rec.len(), 12);
    assert_eq!(rec[0].path, p);
    assert_eq!(rec[0].status, 200);
    assert_redacted(&rec, &["authorization", "x-amz-security-token"]);
    assert_header(&rec[10], "x-amz-security-token", "<redacted>");
}

#[tokio::test]
async fn session_tokens_other_credentials_and_clock_skew() {
    let sim = Sim::builder(hermes_sim::Profile::builtin("bedrock").unwrap())
        .aws_credentials(
            "AKIDOTHER",
            "other-secret",
            Some(SIM_AWS_SESSION_TOKEN.to_owned()),
        )
        .start()
        .await
        .unwrap();
    let p = path(CLAUDE, "converse");
    let body = json!({"messages": [user("hi")]}).to_string();
    let good = Signer {
        akid: "AKIDOTHER",
        secret: "other-secret",
        token: Some(SIM_AWS_SESSION_TOKEN),
        ..Signer::default()
    };
    let r = post_signed_as(&sim, &good, &p, body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let no_token = Signer {
        token: None,
        ..good
    };
    let r = post_signed_as(&sim, &no_token, &p, body.as_bytes()).await;
    denied(&r, "UnrecognizedClientException", BAD_TOKEN);
    let bad_token = Signer {
        token: Some("another-token"),
        ..no_token
    };
    let r = post_signed_as(&sim, &bad_token, &p, body.as_bytes()).await;
    denied(&r, "UnrecognizedClientException", BAD_TOKEN);
    // The default pair is not known to this simulator.
    let r = post_signed_as(&sim, &Signer::default(), &p, body.as_bytes()).await;
    denied(&r, "UnrecognizedClientException", BAD_TOKEN);

    // A signature from long ago passes unless the clock-skew switch is on.
    let sim = Sim::start("bedrock").await.unwrap();
    let old = Signer {
        time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
        ..Signer::default()
    };
    let r = post_signed_as(&sim, &old, &p, body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    sim.set_switches(Switches::default().checking_clock_skew());
    let r = post_signed_as(&sim, &old, &p, body.as_bytes()).await;
    assert_eq!(r.status, 403);
    let msg = r.json()["message"].as_str().unwrap().to_owned();
    assert!(
        msg.starts_with("Signature expired: 20260101T000000Z is now earlier than "),
        "{msg}"
    );
    let r = post_signed_as(&sim, &Signer::default(), &p, body.as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn the_api_key_is_accepted_and_a_wrong_one_refused() {
    let sim = Sim::builder(hermes_sim::Profile::builtin("bedrock").unwrap())
        .bedrock_api_key("ABSK-test-key")
        .start()
        .await
        .unwrap();
    /// A Converse request with `authorization` as the `Authorization` header.
    async fn with_authorization(sim: &Sim, authorization: &str) -> Resp {
        let p = path(CLAUDE, "converse");
        let body = json!({"messages": [user("hi")]}).to_string();
        send(
            &sim.base_url(),
            "POST",
            &p,
            &[("Authorization", authorization)],
            body.as_bytes(),
        )
        .await
    }
    let r = with_authorization(&sim, "Bearer ABSK-test-key").await;
    assert_eq!(r.status, 200, "{}", r.text());
    for wrong in [
        format!("Bearer {SIM_BEDROCK_API_KEY}"),
        "Bearer ABSK-test-kez".to_owned(),
    ] {
        let r = with_authorization(&sim, &wrong).await;
        assert_eq!(r.status, 403, "{}", r.text());
        assert_eq!(
            r.json(),
            json!({"Message": "Authentication failed: Please make sure your API Key is valid."})
        );
    }
    let r = with_authorization(&sim, "Basic dXNlcjpwdw==").await;
    assert_eq!(r.status, 403);
    assert!(
        header(&r, "x-amzn-errortype")
            .unwrap()
            .starts_with("IncompleteSignatureException")
    );
    assert_header(&sim.requests()[0], "authorization", "<redacted>");
}

// ---------------------------------------------------------------- tests: Claude

/// Runs a `[tools=3]` loop with thinking, replaying every returned block verbatim; returns the
/// messages of the finished conversation.
async fn claude_loop(sim: &Sim, stream: bool, redacted: bool) -> Vec<Value> {
    let mut messages = vec![user("What time is it? [tools=3]")];
    let mut ids = Vec::new();
    loop {
        assert!(ids.len() <= 3, "the loop did not end");
        let body = thinking_body(&messages);
        let (content, stop) = converse(sim, CLAUDE, &body, stream).await;
        let blocks = content.as_array().unwrap();
        let rt = &blocks[0]["reasoningContent"]["reasoningText"];
        assert!(!rt["text"].as_str().unwrap().is_empty(), "{content}");
        assert!(rt["signature"].as_str().unwrap().len() > 40, "{content}");
        let first_other = if redacted {
            let data = blocks[1]["reasoningContent"]["redactedContent"]
                .as_str()
                .unwrap();
            assert!(STANDARD.decode(data).is_ok());
            2
        } else {
            1
        };
        if stream {
            // The stream carries exactly what the non-streamed reply does.
            let (whole, whole_stop) = converse(sim, CLAUDE, &body, false).await;
            assert_eq!(content, whole);
            assert_eq!(stop, whole_stop);
        }
        messages.push(assistant(&content));
        if stop == "end_turn" {
            let text = blocks[first_other]["text"].as_str().unwrap();
            assert!(text.contains("Done after 3 tool calls"), "{text}");
            assert!(text.contains("2026-01-03T00:00:00Z"), "{text}");
            break;
        }
        assert_eq!(stop, "tool_use");
        assert_eq!(blocks.len(), first_other + 1);
        let call = &blocks[first_other]["toolUse"];
        assert_eq!(call["name"], "now");
        assert_eq!(call["input"]["step"], ids.len() + 1);
        let id = call["toolUseId"].as_str().unwrap().to_owned();
        assert!(id.starts_with("tooluse_"), "{id}");
        messages.push(result(
            &id,
            &format!("2026-01-0{}T00:00:00Z", ids.len() + 1),
        ));
        ids.push(id);
    }
    assert_eq!(ids.len(), 3);
    messages
}

#[tokio::test]
async fn a_signed_three_step_claude_tool_loop_replayed_verbatim_is_accepted() {
    for (stream, redacted) in [(false, false), (true, false), (false, true), (true, true)] {
        let sim = Sim::start("bedrock").await.unwrap();
        if redacted {
            sim.set_switches(Switches::default().with_redacted_reasoning());
        }
        let mut messages = claude_loop(&sim, stream, redacted).await;
        // A follow-up turn replays the whole signed history.
        messages.push(user("thanks"));
        let (content, stop) = converse(&sim, CLAUDE, &thinking_body(&messages), stream).await;
        assert_eq!(stop, "end_turn", "{content}");
        assert!(sim.requests().iter().all(|r| r.status == 200));
    }
}

/// The first step of a `[tools=2]` loop and the in-flight request replaying it.
async fn in_flight(sim: &Sim, text: &str) -> (Vec<Value>, Value) {
    let messages = vec![user(text)];
    let (content, stop) = converse(sim, CLAUDE, &thinking_body(&messages), false).await;
    assert_eq!(stop, "tool_use", "{content}");
    let id = tool_use_id(&content);
    let mut out = messages;
    out.push(assistant(&content));
    out.push(result(&id, "12:00"));
    (out, content)
}

async fn refused_with(sim: &Sim, model: &str, body: &Value, message: &str) {
    let r = post_signed(sim, &path(model, "converse"), body).await;
    assert_eq!(validation(&r), message);
}

/// `messages` with a signature on the second message's reasoning text are refused for `model`,
/// which takes no signatures.
async fn signature_refused(sim: &Sim, model: &str, messages: &[Value]) {
    let mut signed = messages.to_vec();
    signed[1]["content"][0]["reasoningContent"]["reasoningText"]["signature"] = json!("c2ln");
    refused_with(
        sim,
        model,
        &plain(&signed),
        "messages.1.content.0.reasoningContent: This model doesn't support a signature in reasoning content. Remove it and try again.",
    )
    .await;
}

fn with_content(messages: &[Value], content: Value) -> Vec<Value> {
    let mut m = messages.to_vec();
    m[1] = assistant(&content);
    m
}

const EXPECTED_THINKING: &str = "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

#[tokio::test]
async fn tampered_or_missing_claude_reasoning_is_refused() {
    let sim = Sim::start("bedrock").await.unwrap();
    let (messages, content) = in_flight(&sim, "time? [tools=2] [redacted]").await;
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &thinking_body(&messages)).await;
    assert_eq!(r.status, 200, "{}", r.text());

    let sig = content[0]["reasoningContent"]["reasoningText"]["signature"]
        .as_str()
        .unwrap();
    let text = content[0]["reasoningContent"]["reasoningText"]["text"]
        .as_str()
        .unwrap();
    let data = content[1]["reasoningContent"]["redactedContent"]
        .as_str()
        .unwrap();
    let invalid = format!("{WRAP}messages.1.content.0: Invalid `signature` in `thinking` block");
    let modified = "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.";
    // The step's content (reasoning, redacted reasoning, the tool call) edited one way per row.
    let edited = |edit: &dyn Fn(&mut Vec<Value>)| {
        let mut c = content.as_array().unwrap().clone();
        edit(&mut c);
        thinking_body(&with_content(&messages, Value::Array(c)))
    };
    let rows = [
        // A changed signature or reasoning text, a missing signature, changed redacted bytes.
        (
            edited(&|c| {
                c[0]["reasoningContent"]["reasoningText"]["signature"] =
                    json!(flip_one_byte(sig, 10));
            }),
            invalid.clone(),
        ),
        (
            edited(&|c| {
                c[0]["reasoningContent"]["reasoningText"]["text"] = json!(flip_one_byte(text, 3));
            }),
            invalid.clone(),
        ),
        (
            edited(&|c| {
                c[0]["reasoningContent"]["reasoningText"]
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("signature");
            }),
            format!("{WRAP}messages.1.content.0.thinking.signature: Field required"),
        ),
        (
            edited(&|c| {
                c[1]["reasoningContent"]["redactedContent"] = json!(flip_one_byte(data, 12));
            }),
            format!("{WRAP}messages.1.content.1: Invalid `signature` in `redacted_thinking` block"),
        ),
        // Dropping the reasoning of the in-flight step.
        (
            edited(&|c| {
                c.drain(..2);
            }),
            format!(
                "{WRAP}messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. {EXPECTED_THINKING}"
            ),
        ),
        // Dropping only the redacted block, or swapping the two.
        (
            edited(&|c| {
                c.remove(1);
            }),
            format!("{WRAP}messages.1.content.1: {modified}"),
        ),
        (
            edited(&|c| c.swap(0, 1)),
            format!("{WRAP}messages.1.content.0: {modified}"),
        ),
        // A text before the tool call instead of the reasoning.
        (
            edited(&|c| *c = vec![json!({"text": "let me check"}), c[2].clone()]),
            format!(
                "{WRAP}messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. {EXPECTED_THINKING}"
            ),
        ),
    ];
    for (body, message) in rows {
        refused_with(&sim, CLAUDE, &body, &message).await;
    }
    // A signature is bound to its conversation: another system prompt breaks it.
    let mut b = thinking_body(&messages);
    b["system"] = json!([{"text": "You are verbose."}]);
    refused_with(&sim, CLAUDE, &b, &invalid).await;
    // Reasoning in a user message.
    let mut m = messages.clone();
    m[0]["content"]
        .as_array_mut()
        .unwrap()
        .push(content[0].clone());
    refused_with(
        &sim,
        CLAUDE,
        &thinking_body(&m),
        "User messages cannot contain reasoning content. Please remove the reasoning content and try again.",
    )
    .await;
}

#[tokio::test]
async fn text_after_the_tool_results_leaves_claude_s_loop_in_flight() {
    // Converse takes a user's words in the same message as the tool results (roles alternate);
    // Claude still reads that message as the loop's "lastmost set of `tool_use` and
    // `tool_result` blocks", so the step before it must start with its reasoning.
    let sim = Sim::start("bedrock").await.unwrap();
    let (mut messages, content) = in_flight(&sim, "time? [tools=2]").await;
    messages[2]["content"]
        .as_array_mut()
        .unwrap()
        .push(json!({"text": "and in Tokyo?"}));
    let call: Vec<Value> = content
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b.get("reasoningContent").is_none())
        .cloned()
        .collect();
    refused_with(
        &sim,
        CLAUDE,
        &thinking_body(&with_content(&messages, json!(call))),
        &format!("{WRAP}messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. {EXPECTED_THINKING}"),
    )
    .await;
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &thinking_body(&messages)).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn refusing_redacted_content_lets_a_client_strip_it_and_resend_once() {
    let sim = Sim::start_with(
        "bedrock",
        Switches::default()
            .with_redacted_reasoning()
            .refusing_redacted(),
    )
    .await
    .unwrap();
    let (messages, content) = in_flight(&sim, "time? [tools=2]").await;
    assert!(
        content[1]["reasoningContent"]["redactedContent"].is_string(),
        "{content}"
    );
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &thinking_body(&messages)).await;
    let msg = validation(&r);
    assert!(msg.starts_with(WRAP), "{msg}");
    assert!(
        msg.contains("redacted") && msg.contains("encrypted"),
        "{msg}"
    );
    // The recovery: strip redacted blocks, resend once.
    let mut c = content.as_array().unwrap().clone();
    c.retain(|b| b["reasoningContent"].get("redactedContent").is_none());
    let r = post_signed(
        &sim,
        &path(CLAUDE, "converse"),
        &thinking_body(&with_content(&messages, Value::Array(c))),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn claude_thinking_settings_follow_anthropics_rules() {
    let sim = Sim::start("bedrock").await.unwrap();
    type Change = fn(&mut Value);
    let rows: [(&str, Change, &str); 3] = [
        (
            "an effort besides thinking",
            |b| b["additionalModelRequestFields"]["reasoning"] = json!({"effort": "high"}),
            "reasoning: Extra inputs are not permitted",
        ),
        (
            "a budget under 1024",
            |b| b["additionalModelRequestFields"]["thinking"]["budget_tokens"] = json!(512),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            "a temperature besides 1",
            |b| b["inferenceConfig"]["temperature"] = json!(0.2),
            "temperature may only be set to 1 when thinking is enabled or in adaptive mode",
        ),
    ];
    for (name, change, message) in rows {
        let mut b = thinking_body(&[user("hi")]);
        change(&mut b);
        let r = post_signed(&sim, &path(CLAUDE, "converse"), &b).await;
        assert_eq!(validation(&r), format!("{WRAP}{message}"), "{name}");
    }
    let mut b = thinking_body(&[user("hi")]);
    b["inferenceConfig"]["maxTokens"] = json!(2048);
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &b).await;
    assert!(validation(&r).starts_with(&format!(
        "{WRAP}`max_tokens` must be greater than `thinking.budget_tokens`"
    )));
    b["additionalModelRequestFields"]["anthropic_beta"] =
        json!(["interleaved-thinking-2025-05-14"]);
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &b).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Adaptive thinking with an effort (docs/spec.md §3c) is accepted and answered with reasoning.
    let mut b = plain(&[user("hi")]);
    b["additionalModelRequestFields"] = json!({"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "high"}});
    let (content, _) = converse(&sim, CLAUDE, &b, false).await;
    assert!(
        content[0]["reasoningContent"]["reasoningText"]["signature"].is_string(),
        "{content}"
    );
    // No thinking requested: no reasoning block.
    let (content, _) = converse(&sim, CLAUDE, &plain(&[user("hi")]), false).await;
    assert!(content[0].get("text").is_some(), "{content}");
}

// ---------------------------------------------------------------- tests: Converse rules

#[tokio::test]
async fn turn_order_and_tool_pairing_use_the_real_texts() {
    let sim = Sim::start("bedrock").await.unwrap();
    let alternate = "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.";
    refused_with(&sim, CLAUDE, &plain(&[user("a"), user("b")]), alternate).await;
    refused_with(
        &sim,
        CLAUDE,
        &plain(&[assistant(&json!([{"text": "hi"}])), user("b")]),
        "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
    )
    .await;
    let call = json!([{"toolUse": {"toolUseId": "tooluse_abc", "name": "now", "input": {}}}]);
    refused_with(
        &sim,
        CLAUDE,
        &plain(&[user("a"), assistant(&call), user("never mind")]),
        "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_abc",
    )
    .await;
    refused_with(
        &sim,
        CLAUDE,
        &plain(&[user("a"), assistant(&json!([{"text": "hm"}])), result("tooluse_abc", "x")]),
        "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn.",
    )
    .await;
    refused_with(
        &sim,
        CLAUDE,
        &json!({"messages": [user("a"), assistant(&call), result("tooluse_abc", "x")]}),
        "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
    )
    .await;
    // The paired form is accepted.
    let r = post_signed(
        &sim,
        &path(CLAUDE, "converse"),
        &plain(&[user("a"), assistant(&call), result("tooluse_abc", "x")]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn unions_and_unknown_keys_are_refused() {
    let sim = Sim::start("bedrock").await.unwrap();
    let content = "text, image, document, video, audio, toolUse, toolResult, guardContent, cachePoint, reasoningContent, citationsContent, searchResult";
    let with = |change: &dyn Fn(&mut Value)| {
        let mut b = plain(&[user("a")]);
        change(&mut b);
        b
    };
    let bad_reasoning = |r: Value| {
        plain(&[
            user("a"),
            assistant(&json!([{"reasoningContent": r}, {"text": "b"}])),
            user("c"),
        ])
    };
    let rows: Vec<(&str, Value, String)> = vec![
        (
            "a top-level model",
            with(&|b| b["model"] = json!(CLAUDE)),
            "Unknown parameter in input: \"model\", must be one of: modelId, messages, system, inferenceConfig, toolConfig, guardrailConfig, additionalModelRequestFields, promptVariables, additionalModelResponseFieldPaths, requestMetadata, performanceConfig".to_owned(),
        ),
        (
            "an Anthropic-style typed block",
            plain(&[json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})]),
            format!("Invalid number of parameters set for tagged union structure messages[0].content[0]. Can only set one of the following keys: {content}."),
        ),
        (
            "a misspelt member",
            plain(&[json!({"role": "user", "content": [{"txt": "hi"}]})]),
            format!("Unknown parameter in messages[0].content[0]: \"txt\", must be one of: {content}"),
        ),
        (
            "an empty block",
            plain(&[json!({"role": "user", "content": [{}]})]),
            format!("Must set one of the following keys for tagged unionstructure messages[0].content[0]: {content}."),
        ),
        (
            "reasoning text outside reasoningText",
            bad_reasoning(json!({"text": "thought"})),
            "Unknown parameter in messages[1].content[0].reasoningContent: \"text\", must be one of: reasoningText, redactedContent".to_owned(),
        ),
        (
            "both reasoning members",
            bad_reasoning(json!({"reasoningText": {"text": "t", "signature": "s"}, "redactedContent": "AAAA"})),
            "Invalid number of parameters set for tagged union structure messages[1].content[0].reasoningContent. Can only set one of the following keys: reasoningText, redactedContent.".to_owned(),
        ),
        (
            "reasoningText without text",
            bad_reasoning(json!({"reasoningText": {"signature": "s"}})),
            "Missing required parameter in messages[1].content[0].reasoningContent.reasoningText: \"text\"".to_owned(),
        ),
        (
            "two system members",
            with(&|b| b["system"] = json!([{"text": "x", "cachePoint": {"type": "default"}}])),
            "Invalid number of parameters set for tagged union structure system[0]. Can only set one of the following keys: text, guardContent, cachePoint.".to_owned(),
        ),
        (
            "a toolSpec without inputSchema",
            with(&|b| {
                b["toolConfig"]["tools"][0]["toolSpec"]
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("inputSchema");
            }),
            "Missing required parameter in toolConfig.tools[0].toolSpec: \"inputSchema\"".to_owned(),
        ),
        // botocore checks a union's member count before unknown keys (a missing `toolSpec` wrapper).
        (
            "a tool without its toolSpec wrapper",
            with(&|b| b["toolConfig"]["tools"][0] = json!({"name": "now", "inputSchema": {"json": {}}})),
            "Invalid number of parameters set for tagged union structure toolConfig.tools[0]. Can only set one of the following keys: toolSpec, systemTool, cachePoint.".to_owned(),
        ),
        (
            "a tool with only a name",
            with(&|b| b["toolConfig"]["tools"][0] = json!({"name": "now"})),
            "Unknown parameter in toolConfig.tools[0]: \"name\", must be one of: toolSpec, systemTool, cachePoint".to_owned(),
        ),
        (
            "a system role",
            plain(&[json!({"role": "system", "content": [{"text": "x"}]})]),
            "1 validation error detected: Value 'system' at 'messages.1.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]".to_owned(),
        ),
        (
            "a snake_case inference setting",
            with(&|b| b["inferenceConfig"] = json!({"max_tokens": 10})),
            "Unknown parameter in inferenceConfig: \"max_tokens\", must be one of: maxTokens, temperature, topP, stopSequences".to_owned(),
        ),
    ];
    for (name, body, message) in rows {
        let r = post_signed(&sim, &path(CLAUDE, "converse"), &body).await;
        assert_eq!(validation(&r), message, "{name}");
    }
    // A cache point, an image and a document are fine.
    let rich = json!({"role": "user", "content": [
        {"text": "see"},
        {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
        {"document": {"format": "txt", "name": "notes", "source": {"bytes": "aGk="}}},
        {"cachePoint": {"type": "default"}}
    ]});
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &plain(&[rich])).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

// ---------------------------------------------------------------- tests: strip and unsigned models

#[tokio::test]
async fn strip_models_take_their_reasoning_only_inside_the_in_flight_loop() {
    for model in ["deepseek.r1-v1:0", "moonshotai.kimi-k3-v1:0"] {
        let sim = Sim::start("bedrock").await.unwrap();
        let mut messages = vec![user("time? [tools=2]")];
        let (content, stop) = converse(&sim, model, &plain(&messages), false).await;
        assert_eq!(stop, "tool_use");
        let rt = &content[0]["reasoningContent"]["reasoningText"];
        assert!(rt["text"].as_str().unwrap().len() > 10, "{content}");
        assert!(rt.get("signature").is_none(), "{content}");
        messages.push(assistant(&content));
        messages.push(result(&tool_use_id(&content), "12:00"));
        // Inside the loop its own blocks go back.
        let (content2, _) = converse(&sim, model, &plain(&messages), true).await;
        assert!(content2[0]["reasoningContent"]["reasoningText"]["signature"].is_null());
        // A signature is refused even there.
        signature_refused(&sim, model, &messages).await;
        // Once a new user turn starts, earlier reasoning is refused; without it the turn passes.
        messages.push(assistant(&content2));
        messages.push(result(&tool_use_id(&content2), "12:01"));
        let (last, stop) = converse(&sim, model, &plain(&messages), false).await;
        assert_eq!(stop, "end_turn");
        messages.push(assistant(&last));
        messages.push(user("thanks"));
        refused_with(
            &sim,
            model,
            &plain(&messages),
            "User messages cannot contain reasoning content. Please remove the reasoning content and try again.",
        )
        .await;
        for m in &mut messages {
            m["content"]
                .as_array_mut()
                .unwrap()
                .retain(|b| b.get("reasoningContent").is_none());
        }
        let r = post_signed(&sim, &path(model, "converse"), &plain(&messages)).await;
        assert_eq!(r.status, 200, "{model}: {}", r.text());
    }
}

#[tokio::test]
async fn unsigned_models_take_plain_reasoning_and_refuse_signatures_and_redacted_content() {
    let sim = Sim::start("bedrock").await.unwrap();
    let gpt = "openai.gpt-oss-120b-1:0";
    let (content, _) = converse(&sim, gpt, &plain(&[user("hi")]), false).await;
    let rt = &content[0]["reasoningContent"]["reasoningText"];
    assert!(
        rt["text"].is_string() && rt.get("signature").is_none(),
        "{content}"
    );
    // Replayed anywhere as text only: accepted.
    let history = [user("hi"), assistant(&content), user("again")];
    let r = post_signed(&sim, &path(gpt, "converse"), &plain(&history)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    signature_refused(&sim, gpt, &history).await;
    let mut redacted = history.clone();
    redacted[1]["content"][0] = json!({"reasoningContent": {"redactedContent": "AAAA"}});
    refused_with(
        &sim,
        gpt,
        &plain(&redacted),
        "messages.1.content.0.reasoningContent: This model doesn't support redactedContent in reasoning content. Remove it and try again.",
    )
    .await;

    // Nova 2 reasons only when asked; older Nova models refuse the setting.
    let nova = "amazon.nova-2-lite-v1:0";
    let (content, _) = converse(&sim, nova, &plain(&[user("hi")]), false).await;
    assert!(content[0].get("text").is_some(), "{content}");
    let mut b = plain(&[user("hi")]);
    b["additionalModelRequestFields"] =
        json!({"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}});
    let (content, _) = converse(&sim, nova, &b, true).await;
    assert!(
        content[0]["reasoningContent"]["reasoningText"]["text"].is_string(),
        "{content}"
    );
    refused_with(
        &sim,
        "amazon.nova-pro-v1:0",
        &b,
        "Malformed input request: the provided reasoning config value is invalid, please reformat your input and try again.",
    )
    .await;
}

// ---------------------------------------------------------------- tests: streams

#[tokio::test]
async fn converse_stream_frames_decode_into_the_expected_events() {
    let sim = Sim::start("bedrock").await.unwrap();
    let body = thinking_body(&[user("What time is it? [tools=1]")]);
    let r = post_signed(&sim, &path(CLAUDE, "converse-stream"), &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (messages, cut_mid_frame) = decode(&r);
    assert!(cut_mid_frame, "no chunk ended inside a frame");
    let evs = events(&messages);
    let kinds: Vec<&str> = evs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds[0], "messageStart");
    // Block 0: several reasoning text deltas, the signature last, then its stop.
    let reasoning: Vec<&Value> = evs
        .iter()
        .filter(|(k, d)| k == "contentBlockDelta" && d["contentBlockIndex"] == 0)
        .map(|(_, d)| &d["delta"]["reasoningContent"])
        .collect();
    assert!(reasoning.len() >= 3, "{reasoning:?}");
    assert!(
        reasoning[..reasoning.len() - 1]
            .iter()
            .all(|r| r["text"].is_string())
    );
    assert!(reasoning.last().unwrap()["signature"].is_string());
    // Block 1: the tool call starts with its id and name, then input deltas.
    let start = evs.iter().find(|(k, _)| k == "contentBlockStart").unwrap();
    assert_eq!(start.1["contentBlockIndex"], 1);
    assert_eq!(start.1["start"]["toolUse"]["name"], "now");
    let inputs = evs
        .iter()
        .filter(|(k, d)| k == "contentBlockDelta" && d["contentBlockIndex"] == 1)
        .count();
    assert!(inputs >= 2, "{inputs}");
    assert_eq!(
        &kinds[kinds.len() - 3..],
        &["contentBlockStop", "messageStop", "metadata"]
    );
    let (content, stop) = reassemble(&evs);
    assert_eq!(stop, "tool_use");
    let (whole, _) = converse(&sim, CLAUDE, &body, false).await;
    assert_eq!(content, whole);
    // The record shows the frames as text lines.
    let rec = &sim.requests()[0];
    assert!(
        rec.response.starts_with("event messageStart {"),
        "{}",
        rec.response
    );
    assert_eq!(rec.response.lines().count(), messages.len());
}

#[tokio::test]
async fn a_failing_stream_ends_with_an_exception_frame() {
    for (switches, kind) in [
        (
            Switches::default().failing_mid_stream(),
            "throttlingException",
        ),
        (
            Switches::default().failing_with_model_stream_error(),
            "modelStreamErrorException",
        ),
    ] {
        let sim = Sim::start_with("bedrock", switches).await.unwrap();
        for p in [
            path(CLAUDE, "converse-stream"),
            path(CLAUDE, "invoke-with-response-stream"),
        ] {
            let body = if p.ends_with("converse-stream") {
                thinking_body(&[user("hi")])
            } else {
                invoke_body(&[json!({"role": "user", "content": "hi"})])
            };
            let r = post_signed(&sim, &p, &body).await;
            assert_eq!(r.status, 200, "{}", r.text());
            let (messages, _) = decode(&r);
            let (last, before) = messages.split_last().unwrap();
            assert!(!before.is_empty());
            events(before);
            assert_eq!(
                str_header(last, ":message-type").as_deref(),
                Some("exception")
            );
            assert_eq!(str_header(last, ":exception-type").as_deref(), Some(kind));
            let payload: Value = serde_json::from_slice(last.payload()).unwrap();
            let msg = payload["message"].as_str().unwrap();
            if kind == "throttlingException" {
                assert_eq!(
                    msg,
                    "Too many requests, please wait before trying again. You have sent too many requests.  Wait before trying again."
                );
            } else {
                assert!(payload["originalStatusCode"].is_u64(), "{payload}");
            }
        }
    }
}

// ---------------------------------------------------------------- tests: InvokeModel

fn invoke_body(messages: &[Value]) -> Value {
    json!({
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tools": [{"name": "now", "description": "The current time.", "input_schema": {"type": "object"}}],
        "messages": messages
    })
}

#[tokio::test]
async fn invoke_takes_an_anthropic_messages_body() {
    let sim = Sim::start("bedrock").await.unwrap();
    let p = path(CLAUDE, "invoke");
    let first = vec![json!({"role": "user", "content": "What time is it? [tools=1]"})];
    let r = post_signed(&sim, &p, &invoke_body(&first)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(header(&r, "x-amzn-bedrock-input-token-count").is_some());
    let msg = r.json();
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["model"], CLAUDE);
    assert!(
        msg["id"].as_str().unwrap().starts_with("msg_bdrk_"),
        "{msg}"
    );
    assert_eq!(msg["content"][0]["type"], "thinking");
    assert_eq!(msg["stop_reason"], "tool_use");
    // The signed step replays verbatim; a tampered signature does not.
    let id = msg["content"][1]["id"].as_str().unwrap().to_owned();
    let mut messages = first.clone();
    messages.push(json!({"role": "assistant", "content": msg["content"]}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "12:00"}]}));
    let r = post_signed(&sim, &p, &invoke_body(&messages)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["stop_reason"], "end_turn");
    let sig = msg["content"][0]["signature"].as_str().unwrap();
    messages[1]["content"][0]["signature"] = json!(flip_one_byte(sig, 9));
    let r = post_signed(&sim, &p, &invoke_body(&messages)).await;
    assert_eq!(
        validation(&r),
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    );

    // Bedrock's body rules: no `model`, no `stream`, the Bedrock `anthropic_version`.
    let mut b = invoke_body(&first);
    b["model"] = json!(CLAUDE);
    assert_eq!(
        validation(&post_signed(&sim, &p, &b).await),
        "model: Extra inputs are not permitted"
    );
    let mut b = invoke_body(&first);
    b["stream"] = json!(true);
    assert_eq!(
        validation(&post_signed(&sim, &p, &b).await),
        "stream: Extra inputs are not permitted"
    );
    let mut b = invoke_body(&first);
    b.as_object_mut().unwrap().shift_remove("anthropic_version");
    assert_eq!(
        validation(&post_signed(&sim, &p, &b).await),
        "anthropic_version: Field required"
    );
    let mut b = invoke_body(&first);
    b["anthropic_version"] = json!("2023-06-01");
    assert_eq!(
        validation(&post_signed(&sim, &p, &b).await),
        "anthropic_version: Input should be 'bedrock-2023-05-31'"
    );
    // The interleaved-thinking beta goes in the body.
    let mut b = invoke_body(&first);
    b["max_tokens"] = json!(1500);
    assert!(
        validation(&post_signed(&sim, &p, &b).await).starts_with("`max_tokens` must be greater")
    );
    b["anthropic_beta"] = json!(["interleaved-thinking-2025-05-14"]);
    assert_eq!(post_signed(&sim, &p, &b).await.status, 200);
}

#[tokio::test]
async fn invoke_with_response_stream_answers_chunk_frames_of_anthropic_events() {
    let sim = Sim::start("bedrock").await.unwrap();
    let body = invoke_body(&[json!({"role": "user", "content": "What time is it? [tools=1]"})]);
    let r = post_signed(&sim, &path(CLAUDE, "invoke-with-response-stream"), &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (messages, _) = decode(&r);
    let evs = events(&messages);
    let decoded: Vec<Value> = evs
        .iter()
        .map(|(kind, payload)| {
            assert_eq!(kind, "chunk");
            assert_eq!(payload.as_object().unwrap().len(), 1, "{payload}");
            let bytes = STANDARD.decode(payload["bytes"].as_str().unwrap()).unwrap();
            serde_json::from_slice(&bytes).unwrap()
        })
        .collect();
    assert_eq!(decoded[0]["type"], "message_start");
    assert!(
        decoded[0]["message"]["id"]
            .as_str()
            .unwrap()
            .starts_with("msg_bdrk_")
    );
    assert!(decoded.iter().all(|e| e["type"] != "ping"));
    let last = decoded.last().unwrap();
    assert_eq!(last["type"], "message_stop");
    assert!(
        last["amazon-bedrock-invocationMetrics"]["inputTokenCount"].is_u64(),
        "{last}"
    );
    // Reassembled, the stream carries what the non-streamed reply does.
    let mut content: Vec<Value> = Vec::new();
    let mut partial = String::new();
    for e in &decoded {
        match e["type"].as_str().unwrap() {
            "content_block_start" => content.push(e["content_block"].clone()),
            "content_block_delta" => {
                let i = e["index"].as_u64().unwrap() as usize;
                let d = &e["delta"];
                match d["type"].as_str().unwrap() {
                    "thinking_delta" => {
                        let t = content[i]["thinking"].as_str().unwrap().to_owned();
                        content[i]["thinking"] = json!(t + d["thinking"].as_str().unwrap());
                    }
                    "signature_delta" => content[i]["signature"] = d["signature"].clone(),
                    "input_json_delta" => partial.push_str(d["partial_json"].as_str().unwrap()),
                    "text_delta" => {
                        let t = content[i]["text"].as_str().unwrap().to_owned();
                        content[i]["text"] = json!(t + d["text"].as_str().unwrap());
                    }
                    other => panic!("{other}"),
                }
            }
            "content_block_stop" => {
                let i = e["index"].as_u64().unwrap() as usize;
                if content[i]["type"] == "tool_use" {
                    content[i]["input"] = serde_json::from_str(&partial).unwrap();
                }
            }
            _ => {}
        }
    }
    let whole = post_signed(&sim, &path(CLAUDE, "invoke"), &body)
        .await
        .json();
    assert_eq!(Value::Array(content), whole["content"]);
    let rec = &sim.requests()[0];
    assert!(
        rec.response
            .starts_with("event chunk {\"type\":\"message_start\""),
        "{}",
        rec.response
    );
}

#[tokio::test]
async fn unknown_operations_and_bodies_that_are_not_json() {
    let sim = Sim::start("bedrock").await.unwrap();
    let r = post(&sim, &path(CLAUDE, "chat"), &json!({})).await;
    assert_eq!(r.status, 404, "{}", r.text());
    let auth = format!("Bearer {SIM_BEDROCK_API_KEY}");
    let r = send(
        &sim.base_url(),
        "POST",
        &path(CLAUDE, "converse"),
        &[("Authorization", &auth)],
        b"{nope",
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        header(&r, "x-amzn-errortype")
            .unwrap()
            .starts_with("SerializationException")
    );
    let r = post(
        &sim,
        &path("openai.gpt-oss-120b-1:0", "invoke"),
        &json!({"messages": []}),
    )
    .await;
    assert!(validation(&r).contains("InvokeModel"));
}

#[tokio::test]
async fn images_take_bytes_of_a_known_format_in_user_turns_and_tool_results() {
    let sim = Sim::start("bedrock").await.unwrap();
    // A 1×1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let image = |format: &str, bytes: &str| json!({"image": {"format": format, "source": {"bytes": bytes}}});
    let loop_with = |result_content: Value| {
        plain(&[
            json!({"role": "user", "content": [{"text": "look"}, image("png", png)]}),
            assistant(&json!([{"toolUse": {"toolUseId": "t1", "name": "now", "input": {}}}])),
            json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": result_content}}]}),
        ])
    };
    let (content, _) = converse(
        &sim,
        CLAUDE,
        &loop_with(json!([{"text": "x"}, image("png", png)])),
        false,
    )
    .await;
    assert!(content.is_array());
    refused_with(
        &sim,
        CLAUDE,
        &loop_with(json!([image("bmp", png)])),
        "1 validation error detected: Value 'bmp' at 'messages.3.member.content.1.member.toolResult.content.1.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]",
    )
    .await;
    refused_with(
        &sim,
        CLAUDE,
        &loop_with(json!([image("png", "not base64!")])),
        "Invalid base64 value at messages[2].content[0].toolResult.content[0].image.source.bytes.",
    )
    .await;
    let by_url =
        json!({"image": {"format": "png", "source": {"url": "https://example.com/a.png"}}});
    refused_with(
        &sim,
        CLAUDE,
        &loop_with(json!([by_url])),
        "Unknown parameter in messages[2].content[0].toolResult.content[0].image.source: \"url\", must be one of: bytes, s3Location",
    )
    .await;
}

/// botocore's `bedrock-runtime` model: `ContentBlock` has `audio` (an `AudioFormat` and a
/// source) and `Tool` has `systemTool` (a name); both are taken, and an audio format outside
/// `AudioFormat` is refused.
#[tokio::test]
async fn audio_blocks_and_system_tools_are_accepted_as_the_service_model_defines_them() {
    let sim = Sim::start("bedrock").await.unwrap();
    let audio = |format: &str| {
        json!({"role": "user", "content": [
            {"audio": {"format": format, "source": {"bytes": "AAAA"}}},
            {"text": "what is said?"}
        ]})
    };
    let mut b = plain(&[audio("mp3")]);
    b["toolConfig"]["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"systemTool": {"name": "nova_grounding"}}));
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &b).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &plain(&[audio("midi")])).await;
    let said = validation(&r);
    assert!(
        said.contains("messages.1.member.content.1.member.audio.format") && said.contains("mp3"),
        "{said}"
    );
    let mut b = plain(&[user("a")]);
    b["toolConfig"]["tools"][0] = json!({"systemTool": {"name": "nova_grounding", "x": 1}});
    let r = post_signed(&sim, &path(CLAUDE, "converse"), &b).await;
    assert!(validation(&r).contains("\"x\""), "{}", r.text());
}

// ---------------------------------------------------------------- the client's own tools

#[tokio::test]
async fn the_script_calls_the_clients_first_tool_with_schema_valid_input_and_reads_an_error_result()
{
    let sim = Sim::start("bedrock").await.unwrap();
    let config = json!({"tools": [
        {"toolSpec": {"name": "search_docs", "description": "Search", "inputSchema": {"json": {
            "type": "object", "required": ["query", "filters"], "properties": {
                "query": {"type": "string", "minLength": 2},
                "filters": {"$ref": "#/definitions/Filters"}},
            "definitions": {"Filters": {"type": "object", "required": ["kind"],
                "properties": {"kind": {"anyOf": [{"type": "string", "enum": ["pdf", "html"]},
                    {"type": "null"}]}, "max": {"type": "integer"}}}}}}}},
        {"toolSpec": {"name": "other", "inputSchema": {"json": {"type": "object"}}}}
    ]});
    let mut messages = vec![user("Find it [tools=1]")];
    let body = |messages: &[Value]| json!({"messages": messages, "toolConfig": config});
    let want = json!({"query": "xx", "filters": {"kind": "pdf"}});
    for stream in [false, true] {
        let (content, stop) = converse(&sim, CLAUDE, &body(&messages), stream).await;
        assert_eq!(stop, "tool_use");
        let call = content
            .as_array()
            .unwrap()
            .iter()
            .find_map(|b| b.get("toolUse"))
            .unwrap();
        assert_eq!(call["name"], "search_docs", "{content}");
        assert_eq!(call["input"], want, "stream {stream}");
    }
    let (content, _) = converse(&sim, CLAUDE, &body(&messages), false).await;
    let id = tool_use_id(&content);
    messages.push(assistant(&content));
    // The tool failed: `status: "error"` is accepted and the answer quotes the result.
    let mut failed = result(&id, "index offline");
    failed["content"][0]["toolResult"]["status"] = json!("error");
    messages.push(failed);
    let (content, stop) = converse(&sim, CLAUDE, &body(&messages), false).await;
    assert_eq!(stop, "end_turn");
    let text = content.to_string();
    assert!(text.contains("index offline"), "{text}");
}

// -------------------------------------------------------- tests: docs/spec.md §5a on Converse

/// A bound Claude model on Bedrock (the simulator's `BOUND_MODELS`).
const FABLE: &str = "us.anthropic.claude-fable-5-1-20260901-v1:0";

/// A Converse body for the bound model: `system`, one tool, adaptive thinking, `messages`.
fn bound_body(system: &str, messages: Value) -> Value {
    json!({
        "messages": messages,
        "system": [{"text": system}, {"cachePoint": {"type": "default"}}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "now", "inputSchema": {"json": {"type": "object"}}}}]},
        "additionalModelRequestFields": {"thinking": {"type": "adaptive"}}
    })
}

/// With `drop_block`, its beta and the response path.
fn with_drop_block(mut body: Value) -> Value {
    body["additionalModelRequestFields"]["thinking"]["block_binding"] =
        json!({"prefix_mismatch_behavior": "drop_block"});
    body["additionalModelRequestFields"]["anthropic_beta"] =
        json!(["thinking-binding-controls-2026-08-01"]);
    body["additionalModelResponseFieldPaths"] = json!(["/input_transformations"]);
    body
}

#[tokio::test]
async fn a_bound_model_refuses_a_changed_prefix_drops_it_with_drop_block_and_refuses_a_put_back() {
    let sim = Sim::start("bedrock").await.unwrap();
    let first = json!([{"role": "user", "content": [{"text": "What time is it? [tools=1]"}]}]);
    let (content, stop) =
        converse(&sim, FABLE, &bound_body("Be brief.", first.clone()), false).await;
    assert_eq!(stop, "tool_use");
    let id = tool_use_id(&content);
    let messages = |content: &Value| {
        let mut m = first.as_array().unwrap().clone();
        m.push(json!({"role": "assistant", "content": content}));
        m.push(json!({"role": "user", "content": [{"toolResult": {"toolUseId": id, "content": [{"text": "12:00"}]}}]}));
        Value::Array(m)
    };
    // The same prefix (the cache point is not part of it): accepted.
    let (_, stop) = converse(
        &sim,
        FABLE,
        &bound_body("Be brief.", messages(&content)),
        false,
    )
    .await;
    assert_eq!(stop, "end_turn");
    // A changed system prompt: Anthropic's refusal in Bedrock's ValidationException.
    let changed = bound_body("Be brief. Today is Sunday.", messages(&content));
    let r = post_signed(&sim, &path(FABLE, "converse"), &changed).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        format!(
            "{WRAP}messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
        )
    );
    // `block_binding` without its beta is refused.
    let mut no_beta = with_drop_block(changed.clone());
    no_beta["additionalModelRequestFields"]
        .as_object_mut()
        .unwrap()
        .remove("anthropic_beta");
    let r = post_signed(&sim, &path(FABLE, "converse"), &no_beta).await;
    assert_eq!(r.status, 400, "{}", r.text());
    // With drop_block: dropped, and reported where the response path asks.
    let r = post_signed(&sim, &path(FABLE, "converse"), &with_drop_block(changed)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["additionalModelResponseFields"]["input_transformations"],
        json!([{"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_binding_mismatch"}])
    );
    // The block was dropped once: put back onto its own prefix, it is refused.
    let r = post_signed(
        &sim,
        &path(FABLE, "converse"),
        &bound_body("Be brief.", messages(&content)),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("The block is bound to a different conversation"),
        "{}",
        r.text()
    );
}
