//! OpenAI chat-completions in and out: the request's known keys parsed strictly (a wrong type
//! is a 400 naming the key; unknown keys are ignored), and the `chat.completion` object and
//! `chat.completion.chunk`s built from what the engine returns.

use hermes_core::{
    Effort, FinishReason, Message, RawJson, ResponseFormat, Sampling, ThinkingRequest, ToolChoice,
    Usage,
};
use serde_json::{Value, json};

use crate::body::{ClientTurn, Fields, arguments_text, readable_thinking};
use crate::error::ApiError;

/// A parsed `POST /v1/chat/completions` body.
pub(crate) struct ChatRequest {
    pub(crate) turn: ClientTurn,
    pub(crate) include_usage: bool,
}

/// Parses a request body.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let f = Fields::parse(body)?;
    let model: String = f
        .get("model", "a string")?
        .ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let messages: Vec<Message> = f
        .get("messages", "an array of chat messages")?
        .ok_or_else(|| ApiError::invalid("messages", "`messages` is required"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid("messages", "`messages` is empty"));
    }
    if let Some(n) = f.get::<u64>("n", "a positive integer")?
        && n != 1
    {
        return Err(ApiError::invalid(
            "n",
            format!("n = {n}: the gateway returns one choice (n = 1)"),
        ));
    }
    let stream = f.get::<bool>("stream", "a boolean")?.unwrap_or(false);
    let include_usage = f
        .get::<StreamOptions>("stream_options", "an object {include_usage: boolean}")?
        .and_then(|o| o.include_usage)
        .unwrap_or(false);
    let tools = match f.raw("tools") {
        Some(raw) => {
            f.get::<Vec<Value>>("tools", "an array of tool definitions")?;
            Some(RawJson::from_text(raw).map_err(|e| ApiError::invalid("tools", e.to_string()))?)
        }
        None => None,
    };
    let effort = match f.get::<String>("reasoning_effort", "a string")? {
        Some(e) => Some(("reasoning_effort", e)),
        None => f
            .get::<ReasoningObject>("reasoning", "an object {effort: string}")?
            .and_then(|r| r.effort)
            .map(|e| ("reasoning", e)),
    };
    let thinking = match effort {
        None => ThinkingRequest::NoPreference,
        Some((_, e)) if e == "none" => ThinkingRequest::Off,
        Some((key, e)) => ThinkingRequest::Effort(Effort::parse(&e).ok_or_else(|| {
            ApiError::invalid(
                key,
                format!("unknown effort `{e}` (none, minimal, low, medium, high, xhigh, max)"),
            )
        })?),
    };
    let mut sampling = Sampling::new();
    sampling.max_tokens = match f.get::<u32>("max_completion_tokens", "a positive integer")? {
        Some(n) => Some(n),
        None => f.get::<u32>("max_tokens", "a positive integer")?,
    };
    sampling.temperature = f.get("temperature", "a number")?;
    sampling.top_p = f.get("top_p", "a number")?;
    sampling.stop = match f.get::<Stop>("stop", "a string or an array of strings")? {
        None => Vec::new(),
        Some(Stop::One(s)) => vec![s],
        Some(Stop::Many(v)) => v,
    };
    sampling.tool_choice = f
        .get::<Value>("tool_choice", "a string or an object")?
        .map(|v| tool_choice(&v))
        .transpose()?;
    sampling.parallel_tool_calls = f.get("parallel_tool_calls", "a boolean")?;
    sampling.response_format = f
        .get::<Value>("response_format", "an object")?
        .map(|v| response_format(&v))
        .transpose()?;
    sampling.seed = f.get("seed", "an integer")?;
    sampling.user = f.get("user", "a string")?;
    Ok(ChatRequest {
        turn: ClientTurn {
            model,
            messages,
            stream,
            tools,
            thinking,
            // The OpenAI `user` is the client's partition (docs/spec.md §10).
            partition: sampling.user.clone(),
            sampling,
            passthrough: hermes_core::Passthrough::new(),
        },
        include_usage,
    })
}

#[derive(serde::Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

#[derive(serde::Deserialize)]
struct ReasoningObject {
    effort: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

fn tool_choice(v: &Value) -> Result<ToolChoice, ApiError> {
    crate::body::tool_choice(
        v,
        |o| o.get("function").and_then(|f| f.get("name")),
        "{\"type\":\"function\",\"function\":{\"name\":…}}",
    )
}

fn response_format(v: &Value) -> Result<ResponseFormat, ApiError> {
    crate::body::response_format(
        v.get("type").and_then(Value::as_str),
        v.get("json_schema"),
        "response_format",
    )
}

/// OpenAI's spelling of why a reply ended.
pub(crate) fn finish_reason(finish: Option<&FinishReason>) -> &str {
    match finish {
        None | Some(FinishReason::Stop) => "stop",
        Some(FinishReason::Length) => "length",
        Some(FinishReason::ToolCalls) => "tool_calls",
        Some(FinishReason::ContentFilter) => "content_filter",
        Some(FinishReason::Other(other)) => other,
        Some(_) => "stop",
    }
}

/// OpenAI's `usage` object.
pub(crate) fn usage(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

/// The client's view of a reply: role, content, readable thinking and tool calls.
pub(crate) fn message(reply: Option<&Message>) -> Value {
    let Some(reply) = reply else {
        return json!({"role": "assistant", "content": null});
    };
    let mut out = serde_json::Map::new();
    out.insert("role".into(), json!("assistant"));
    out.insert(
        "content".into(),
        reply
            .content
            .as_ref()
            .map_or(Value::Null, RawJson::to_value),
    );
    if let Some(thinking) = readable_thinking(reply) {
        out.insert("reasoning_content".into(), json!(thinking));
    }
    if let Some(calls) = reply.tool_calls.as_ref().filter(|c| !c.is_empty()) {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": c.kind.as_deref().unwrap_or("function"),
                    "function": {
                        "name": c.function.name,
                        "arguments": c.function.arguments.as_ref().map_or_else(
                            || "{}".to_owned(),
                            arguments_text,
                        ),
                    },
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}
