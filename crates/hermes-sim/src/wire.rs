//! Shared request/response vocabulary (a leaf module): refusals, how a reply carries reasoning,
//! and small readers of a chat-completions body.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// A refused request: HTTP status and JSON body.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

/// How a reply carries reasoning (decided per request by the profile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carrier {
    None,
    ReasoningContent,
    /// OpenRouter: `reasoning` plus two signed `reasoning_details` items.
    OpenRouter,
    /// Gemini OpenAI-compat: no reasoning text; a signed `thought_signature` in `extra_content`.
    Gemini,
    /// Copilot: `reasoning_text` and a signed `reasoning_opaque`; `tool_sig` adds a signed
    /// `function.thought_signature` to tool calls (Gemini models).
    Copilot {
        tool_sig: bool,
    },
}

/// One request as a wire module reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// The path, without the query.
    pub(crate) path: &'a str,
    /// The path and query as sent (percent-encoded).
    pub(crate) path_and_query: &'a str,
    /// Names lower case, values unredacted: they are only read, never recorded from here.
    pub(crate) headers: &'a [(String, String)],
    pub(crate) raw: &'a [u8],
}

/// The AWS event-stream content type ([`Body::EventStream`]).
pub(crate) const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// How an answer's body is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    /// One JSON document.
    Json,
    /// `text/event-stream`, paced by the chunk delay.
    Sse,
    /// A JSON array written in chunks (Gemini's `streamGenerateContent` without `alt=sse`).
    JsonArray,
    /// AWS event-stream frames: these bytes (the answer's text renders them for the record).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    EventStream(Vec<u8>),
}

/// The simulator's answer to one request, whatever the wire.
#[derive(Debug)]
pub(crate) struct Answer {
    /// HTTP status.
    pub(crate) status: u16,
    /// Response headers besides `content-type` (`x-amzn-RequestId`, Gemini's degradation note,
    /// …).
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The parsed request body (`Value::Null` when it was not read or not JSON).
    pub(crate) body: Value,
    /// The response body as text: JSON, SSE or JSON-array text, or the rendering of
    /// [`Body::EventStream`]'s frames; what is recorded.
    pub(crate) text: String,
    /// How the body is sent.
    pub(crate) kind: Body,
    /// What the profile accepted although degraded (Gemini's misplaced or unverified signatures).
    pub(crate) notes: Vec<String>,
}

impl Answer {
    /// A 200 answer: `text` sent as `kind`, recording the request `body`.
    pub(crate) fn ok(body: Value, text: String, kind: Body) -> Answer {
        Answer {
            status: 200,
            headers: Vec::new(),
            body,
            text,
            kind,
            notes: Vec::new(),
        }
    }

    /// A refusal: `status` with the JSON `envelope`, recording the request `body`.
    pub(crate) fn refused(status: u16, body: &Value, envelope: Value) -> Answer {
        Answer {
            status,
            ..Answer::ok(body.clone(), envelope.to_string(), Body::Json)
        }
    }
}

/// `lowerCamel` → `snake_case` (a proto field's JSON name, Anthropic's name for a Converse member).
pub(crate) fn snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// First `len` hex digits of SHA-256(`seed`).
pub(crate) fn short_hash(seed: &str, len: usize) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_owned()
}

/// The array `body[key]` as a slice (empty when absent or not an array).
pub(crate) fn list_of<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// The model id a request names (`sim-model` when absent).
pub(crate) fn model_of(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("sim-model")
}

/// Thinking is on unless the body says `"thinking":{"type":"disabled"}` (DeepSeek default).
pub(crate) fn thinking_on(body: &Value) -> bool {
    body.get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        != Some("disabled")
}

/// The `role` of a message (`""` when absent).
pub(crate) fn role_of(m: &Map<String, Value>) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The assistant messages of `messages`, with their index.
pub(crate) fn assistants(messages: &[Value]) -> impl Iterator<Item = (usize, &Map<String, Value>)> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.as_object().map(|o| (i, o)))
        .filter(|(_, o)| role_of(o) == "assistant")
}

/// The message's `tool_calls` when it is a non-empty array.
pub(crate) fn tool_calls(m: &Map<String, Value>) -> Option<&Vec<Value>> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
}

/// `field` is present as a string (`""` included: Kimi and MiMo field reports show placeholders
/// passing).
pub(crate) fn has_string(m: &Map<String, Value>, field: &str) -> bool {
    matches!(m.get(field), Some(Value::String(_)))
}

/// The request body is an object with a `messages` array; otherwise the refusal text (the caller
/// puts it in its envelope).
pub(crate) fn messages_of(body: &Value) -> Result<(&Map<String, Value>, &[Value]), &'static str> {
    let obj = body
        .as_object()
        .ok_or("Invalid request body: expected a JSON object")?;
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("Missing required parameter: 'messages'.")?;
    Ok((obj, messages))
}

/// The first message key the switches refuse: (index, role, field, value).
pub(crate) fn switched_field<'a>(
    messages: &'a [Value],
    refused: &'a [String],
) -> Option<(usize, &'a str, &'a str, &'a Value)> {
    messages.iter().enumerate().find_map(|(i, m)| {
        let mo = m.as_object()?;
        refused
            .iter()
            .find_map(|f| mo.get(f.as_str()).map(|v| (i, role_of(mo), f.as_str(), v)))
    })
}

/// The generic "not JSON" text.
pub(crate) fn bad_json_text(err: &serde_json::Error) -> String {
    format!("Failed to parse the request body as JSON: {err}")
}

/// Answer to an unknown path (404).
pub(crate) fn not_found(method: &str, path: &str) -> Refusal {
    route_refusal(404, format!("Not found: {method} {path}"))
}

/// Answer to a wrong method on the chat-completions path (405).
pub(crate) fn method_not_allowed(method: &str, path: &str) -> Refusal {
    route_refusal(405, format!("Method not allowed: {method} {path}"))
}

/// A refusal of the route itself in OpenAI's envelope, with the status as `code`.
fn route_refusal(status: u16, message: String) -> Refusal {
    Refusal {
        status,
        body: json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": status
        }}),
    }
}

/// JSON text with object keys sorted at every level.
pub(crate) fn canonical(v: &Value) -> Vec<u8> {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out.into_bytes()
}

/// Writes `v` as canonical JSON (object keys sorted at every level, no whitespace) to `out`.
pub(crate) fn write_canonical(v: &Value, out: &mut String) {
    // An object's members (keys sorted) and an array's items are written alike: a member is an
    // item with its key before it.
    let (open, close, items): (char, char, Vec<(Option<&String>, &Value)>) = match v {
        Value::Object(o) => {
            let mut members: Vec<_> = o.iter().map(|(k, x)| (Some(k), x)).collect();
            members.sort_by_key(|m| m.0);
            ('{', '}', members)
        }
        Value::Array(items) => ('[', ']', items.iter().map(|x| (None, x)).collect()),
        other => {
            out.push_str(&other.to_string());
            return;
        }
    };
    out.push(open);
    for (i, (key, x)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if let Some(k) = key {
            out.push_str(&Value::String(k.clone()).to_string());
            out.push(':');
        }
        write_canonical(x, out);
    }
    out.push(close);
}
