//! The `bedrock` profile: AWS Bedrock Runtime's `POST /model/{modelId}/converse`,
//! `/converse-stream`, `/invoke` and `/invoke-with-response-stream`, written from docs/providers.md
//! ("AWS Bedrock Converse", "Bedrock SigV4 detail", "Tool-call pairing and turn-order rules",
//! "Notes for the simulator", "Anthropic Messages") and docs/spec.md §5.
//!
//! Every request authenticates first ([`auth`]: a Bedrock API key or SigV4 recomputed with
//! `aws-sigv4`). Converse bodies go through [`rules`] and the scripted model in [`reply`]
//! (signed reasoning in [`reasoning`]); InvokeModel bodies are Anthropic Messages bodies served by
//! `crate::anthropic`. Streams are event-stream frames ([`frames`]). Errors carry the
//! `x-amzn-ErrorType` header and a `{"message": …}` body.

mod auth;
mod frames;
mod reasoning;
pub(crate) mod reply;
pub(crate) mod rules;

use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::anthropic::percent_decode;
use crate::model::Prompt;
use crate::wire::short_hash;
use crate::wire::{Answer, Body, Request};
use crate::{Shared, lock};
use frames::Frame;

/// The `x-amzn-ErrorType` suffix Bedrock's own errors carry.
const BEDROCK_CORAL: &str = ":http://internal.amazon.com/coral/com.amazon.bedrock/";

/// The four operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Converse,
    ConverseStream,
    Invoke,
    InvokeStream,
}

impl Op {
    fn stream(self) -> bool {
        matches!(self, Op::ConverseStream | Op::InvokeStream)
    }
}

/// The model id (percent-decoded) and operation of a path, or `None` for a path the profile does
/// not serve. The id is one path segment: `/` and `:` inside it arrive as `%2F` / `%3A`.
fn route(path: &str) -> Option<(String, Op)> {
    let rest = path.strip_prefix("/model/")?;
    let (model, verb) = rest.split_once('/')?;
    let op = match verb {
        "converse" => Op::Converse,
        "converse-stream" => Op::ConverseStream,
        "invoke" => Op::Invoke,
        "invoke-with-response-stream" => Op::InvokeStream,
        _ => return None,
    };
    let model = percent_decode(model);
    (!model.is_empty()).then_some((model, op))
}

/// A request id in AWS's UUID form, derived from the request.
fn request_id(seed: &str) -> String {
    let h = short_hash(seed, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn refusal(rid: &str, status: u16, error_type: String, body: &Value, message: Value) -> Answer {
    Answer {
        status,
        headers: vec![
            ("x-amzn-requestid", rid.to_owned()),
            ("x-amzn-errortype", error_type),
        ],
        body: body.clone(),
        text: message.to_string(),
        kind: Body::Json,
        notes: Vec::new(),
    }
}

/// A `ValidationException` (HTTP 400).
fn validation(rid: &str, body: &Value, message: &str) -> Answer {
    refusal(
        rid,
        400,
        format!("ValidationException{BEDROCK_CORAL}"),
        body,
        json!({"message": message}),
    )
}

/// Answers one request to the `bedrock` profile (routed on `path_and_query`, as sent:
/// percent-encoded).
pub(crate) fn answer(shared: &Shared, request: &Request<'_>) -> Answer {
    let (method, headers, raw) = (request.method, request.headers, request.raw);
    let path_and_query = request.path_and_query;
    let null = Value::Null;
    let path = path_and_query.split('?').next().unwrap_or("");
    let rid = request_id(&format!(
        "{method} {path_and_query}\u{0}{}",
        String::from_utf8_lossy(raw)
    ));
    let switches = lock(&shared.switches).clone();
    let received = auth::Received {
        method,
        path_and_query,
        headers,
        body: raw,
    };
    let aws = crate::lock(&shared.aws).clone();
    if let Err(d) = auth::check(
        &received,
        &aws,
        &shared.bedrock_api_key,
        switches.check_clock_skew,
        SystemTime::now(),
    ) {
        return refusal(&rid, d.status, d.error_type, &null, d.body);
    }
    let Some((model, op)) = route(path).filter(|_| method == "POST") else {
        // Simulator-chosen: AWS's answer to an operation it does not know.
        return refusal(
            &rid,
            404,
            "UnknownOperationException".to_owned(),
            &null,
            json!({"message": format!("Unknown operation: {method} {path}")}),
        );
    };
    let body: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => {
            // Simulator-chosen wording.
            return refusal(
                &rid,
                400,
                "SerializationException".to_owned(),
                &null,
                json!({"message": crate::wire::bad_json_text(&e)}),
            );
        }
    };
    let call = Call {
        shared,
        switches: &switches,
        rid: &rid,
        model: &model,
        op,
        raw,
    };
    match op {
        Op::Converse | Op::ConverseStream => converse(call, body),
        Op::Invoke | Op::InvokeStream => invoke(call, body),
    }
}

/// What a model operation reads besides the body.
#[derive(Clone, Copy)]
struct Call<'a> {
    shared: &'a Shared,
    switches: &'a crate::Switches,
    /// The request id.
    rid: &'a str,
    model: &'a str,
    op: Op,
    raw: &'a [u8],
}

/// A 200 answer of `text` sent as `kind`, with the request id and the `extra` headers.
fn ok(
    rid: &str,
    body: Value,
    (text, kind): (String, Body),
    extra: Vec<(&'static str, String)>,
) -> Answer {
    let mut headers = vec![("x-amzn-requestid", rid.to_owned())];
    headers.extend(extra);
    Answer {
        headers,
        ..Answer::ok(body, text, kind)
    }
}

/// The exception frame a failing stream ends with.
fn exception(switches: &crate::Switches) -> Frame {
    if switches.model_stream_error {
        // Simulator-chosen message; the member names are the API's.
        Frame::Exception(
            "modelStreamErrorException",
            json!({
                "message": "The model's stream ended with an error (hermes-sim fail_mid_stream).",
                "originalStatusCode": 500,
                "originalMessage": "Internal server error"
            }),
        )
    } else {
        // aws-samples/aws-genai-llm-chatbot#220, BerriAI/litellm#589 (two spaces included).
        Frame::Exception(
            "throttlingException",
            json!({"message": "Too many requests, please wait before trying again. You have sent too many requests.  Wait before trying again."}),
        )
    }
}

/// Events cut short by the mid-stream failure: the first few, then the exception.
const EVENTS_BEFORE_FAILURE: usize = 4;

/// How many of a stream's `len` events are sent: all, or the first few before the failure.
fn events_sent(switches: &crate::Switches, len: usize) -> usize {
    if switches.fail_mid_stream {
        EVENTS_BEFORE_FAILURE
    } else {
        len
    }
}

/// A stream's frames: the `events` sent ([`events_sent`]), then the exception frame when the
/// stream fails.
fn with_failure(switches: &crate::Switches, events: Vec<Frame>) -> Vec<Frame> {
    let take = events_sent(switches, events.len());
    let mut list: Vec<Frame> = events.into_iter().take(take).collect();
    if switches.fail_mid_stream {
        list.push(exception(switches));
    }
    list
}

fn converse(call: Call<'_>, body: Value) -> Answer {
    // One account, as on InvokeModel: the simulator's Bedrock credentials are one pair and one
    // API key.
    let bind = rules::Bind {
        model: call.model,
        account: crate::anthropic::binding::account_hash(&call.shared.key, "bedrock"),
        ledger: &call.shared.anthropic_ledger,
    };
    let checked = match rules::validate(
        &bind,
        &body,
        &call.shared.key,
        call.switches.refuse_redacted,
    ) {
        Ok(c) => c,
        Err(message) => return validation(call.rid, &body, &message),
    };
    let reply = reply::script(&reply::Ask {
        prompt: Prompt {
            body: &body,
            raw: call.raw,
            model: call.model,
            key: &call.shared.key,
        },
        reasoning: checked.reasoning,
        redacted: call.switches.redacted_reasoning,
        bound: checked.bound.then_some((bind.model, bind.account)),
    });
    let mut reply = reply;
    // `input_transformations` come back only where the request named them
    // (`additionalModelResponseFieldPaths`, docs.aws.amazon.com/bedrock/latest/APIReference/
    // API_runtime_Converse.html).
    let asked = body
        .get("additionalModelResponseFieldPaths")
        .and_then(Value::as_array)
        .is_some_and(|p| p.iter().any(|p| p == "/input_transformations"));
    if asked {
        reply.transformations = checked.transformations.clone();
    }
    if let Some((id, count)) = reply.minted {
        let mut messages = crate::wire::list_of(&body, "messages").to_vec();
        messages.push(json!({"role": "assistant", "content": reply.content}));
        crate::lock(&call.shared.anthropic_ledger).minted(
            reasoning::turn_key(&messages),
            id,
            count,
        );
    }
    if !call.op.stream() {
        let text = reply.json().to_string();
        return ok(call.rid, body, (text, Body::Json), Vec::new());
    }
    let events = reply.events().into_iter();
    let list = with_failure(
        call.switches,
        events
            .map(|(kind, payload)| Frame::Event(kind, payload))
            .collect(),
    );
    let (bytes, text) = frames::encode(&list, call.rid);
    ok(call.rid, body, (text, Body::EventStream(bytes)), Vec::new())
}

fn invoke(call: Call<'_>, body: Value) -> Answer {
    if rules::policy(call.model) != rules::Policy::Signed {
        // Simulator-chosen: only Anthropic bodies are modelled on InvokeModel.
        return validation(
            call.rid,
            &body,
            "hermes-sim serves InvokeModel for anthropic.claude models only (an Anthropic Messages body); use Converse for this call.model.",
        );
    }
    // Anthropic's text as is: InvokeModel does not wrap it (anthropics/claude-code-action#1005:
    // "API Error: 400 output_config.effort: Extra inputs are not permitted").
    let reply = match crate::anthropic::invoke_bedrock(call.shared, call.model, &body, call.raw) {
        Ok(r) => r,
        Err(message) => return validation(call.rid, &body, &message),
    };
    let input = reply.input_token_count();
    let output = reply.output_token_count();
    let latency = 40 + call.raw.len() % 200;
    if call.op == Op::Invoke {
        let text = reply.json().to_string();
        let extra = vec![
            ("x-amzn-bedrock-input-token-count", input.to_string()),
            ("x-amzn-bedrock-output-token-count", output.to_string()),
            ("x-amzn-bedrock-invocation-latency", latency.to_string()),
        ];
        return ok(call.rid, body, (text, Body::Json), extra);
    }
    // Bedrock drops Anthropic's `ping` and adds its metrics to `message_stop`.
    let events: Vec<Value> = reply
        .events()
        .into_iter()
        .filter(|(name, _)| *name != "ping")
        .map(|(name, mut data)| {
            if name == "message_stop" {
                data["amazon-bedrock-invocationMetrics"] = json!({
                    "inputTokenCount": input,
                    "outputTokenCount": output,
                    "invocationLatency": latency,
                    "firstByteLatency": latency / 2
                });
            }
            data
        })
        .collect();
    let chunk = |e: &Value| Frame::Event("chunk", json!({"bytes": STANDARD.encode(e.to_string())}));
    let list = with_failure(call.switches, events.iter().map(chunk).collect());
    let take = events_sent(call.switches, events.len());
    let (bytes, _) = frames::encode(&list, call.rid);
    // The record shows each chunk's event decoded.
    let mut text = String::new();
    for e in events.iter().take(take) {
        text.push_str("event chunk ");
        text.push_str(&e.to_string());
        text.push('\n');
    }
    if let Some(Frame::Exception(kind, payload)) = list.last() {
        text.push_str(&format!("exception {kind} {payload}\n"));
    }
    ok(call.rid, body, (text, Body::EventStream(bytes)), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/model/anthropic.claude-opus-4-6-v1%3A0/converse"),
            Some(("anthropic.claude-opus-4-6-v1:0".into(), Op::Converse))
        );
        assert_eq!(
            route("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-6/converse-stream"),
            Some((
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-6".into(),
                Op::ConverseStream
            ))
        );
        assert_eq!(
            route("/model/m/invoke-with-response-stream"),
            Some(("m".into(), Op::InvokeStream))
        );
        assert_eq!(route("/model/m/invoke"), Some(("m".into(), Op::Invoke)));
        for bad in [
            "/model//converse",
            "/model/a/b/converse",
            "/model/m/chat",
            "/v1/messages",
            "/model/m",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
        assert_eq!(request_id("x").len(), 36);
    }
}
