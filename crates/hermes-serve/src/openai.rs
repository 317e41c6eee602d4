//! The chat door, OpenAI chat-completions in and out (`POST /v1/chat/completions`): its handler
//! ([`chat_completions`]), the request's known keys parsed strictly (a wrong type is a 400
//! naming the key; unknown keys are ignored), and the `chat.completion` object and
//! `chat.completion.chunk`s built from what the engine returns.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use hermes_core::driver::DriverEvent;
use hermes_core::{
    Effort, FinishReason, Message, RawJson, ResponseFormat, Role, Sampling, ThinkingRequest,
    ToolChoice, Usage,
};
use hermes_engine::{Completion, Event};
use serde_json::{Value, json};

use crate::body::{ClientTurn, Fields, arguments_text, readable_thinking};
use crate::error::ApiError;
use crate::gate::{self, Gated};
use crate::turn::{
    asked, complete, gated_handler, idempotency_of, off_reactor, session_of, stream_reply,
    with_session,
};
use crate::{Door, Inner, access, model, policy, sse};

gated_handler!(chat_completions => chat, IntoResponse::into_response);

async fn chat(inner: &Inner, headers: &HeaderMap, gated: Gated) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, parse).await?;
    if model::check(&parsed.turn.model).is_ok() {
        access::model(&parsed.turn.model);
    }
    let choice = inner.resolve(Door::Chat, &parsed.turn.model)?;
    let session = session_of(headers)?;
    let turn = parsed.turn;
    let server_tools = policy::chat_server_tools(turn.tools.as_ref());
    let asked = asked(Door::Chat, &choice, &turn, session.as_deref(), server_tools);
    inner.config.policy.check(&tenant, &asked)?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "chat completion");
    let (model, stream) = (turn.model.clone(), turn.stream);
    let recorder = inner.turn(&tenant);
    let idempotency = idempotency_of(headers, "chat", &[session.as_deref()], &body)?;
    let request = turn
        .request(tenant, choice, session)
        .idempotency(Some(idempotency));
    let reply = Reply {
        id: format!("chatcmpl-{}", uuid::Uuid::now_v7().simple()),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model,
        include_usage: parsed.include_usage,
    };
    if !stream {
        return Ok(reply.whole(&complete(inner, request, &recorder).await?));
    }
    let door = OpenAiStream {
        reply,
        started: false,
    };
    stream_reply(inner, request, door, recorder, admitted).await
}

/// A parsed `POST /v1/chat/completions` body.
pub(crate) struct ChatRequest {
    pub(crate) turn: ClientTurn,
    pub(crate) include_usage: bool,
}

/// Parses a request body.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let f = Fields::parse(body)?;
    let model: String = f.required("model", "a string")?;
    let messages: Vec<Message> = f.required("messages", "an array of chat messages")?;
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
fn finish_reason(finish: Option<&FinishReason>) -> &str {
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
fn usage(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

/// The client's view of a reply: role, content, readable thinking and tool calls.
fn message(reply: Option<&Message>) -> Value {
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

/// What every object of one reply shares.
#[derive(Clone)]
struct Reply {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

impl Reply {
    /// The `chat.completion` object, with `hermes_session` in the body and the header.
    fn whole(&self, completion: &Completion) -> Response {
        let reply = completion
            .messages
            .iter()
            .rfind(|m| m.role == Role::Assistant);
        let body = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message(reply),
                "finish_reason": finish_reason(completion.finish.as_ref()),
            }],
            "usage": usage(&completion.usage),
            "hermes_session": completion.session,
        });
        with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        )
    }

    /// A `chat.completion.chunk` with `choices` and the extra top-level keys.
    fn chunk(&self, choices: Value, extra: &[(&str, Value)]) -> SseEvent {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        for (key, value) in extra {
            chunk[*key] = value.clone();
        }
        SseEvent::default().data(chunk.to_string())
    }

    fn delta(&self, delta: Value) -> SseEvent {
        self.chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            &[],
        )
    }
}

/// The chat door's stream: deltas as they come (the first with the role); after
/// [`Event::Done`] (every step stored) the chunk with `finish_reason` and `hermes_session`, the
/// usage chunk when asked for, and `[DONE]`; a failure is an error object in OpenAI's shape.
struct OpenAiStream {
    reply: Reply,
    started: bool,
}

impl sse::StreamDoor for OpenAiStream {
    fn on_event(&mut self, event: Event) -> (Vec<SseEvent>, bool) {
        let reply = &self.reply;
        match event {
            Event::Driver(driver) => match delta_of(&driver) {
                Some(mut delta) => {
                    if !self.started {
                        delta["role"] = json!("assistant");
                        self.started = true;
                    }
                    (vec![reply.delta(delta)], false)
                }
                None => (Vec::new(), false),
            },
            Event::Done(completion) => {
                let session = json!(completion.session);
                let mut out = vec![reply.chunk(
                    json!([{
                        "index": 0,
                        "delta": {},
                        "finish_reason": finish_reason(completion.finish.as_ref()),
                    }]),
                    &[("hermes_session", session.clone())],
                )];
                if reply.include_usage {
                    out.push(reply.chunk(
                        json!([]),
                        &[
                            ("usage", usage(&completion.usage)),
                            ("hermes_session", session),
                        ],
                    ));
                }
                out.push(SseEvent::default().data("[DONE]"));
                (out, true)
            }
            _ => (Vec::new(), false),
        }
    }

    fn failure(&self, error: &ApiError) -> SseEvent {
        SseEvent::default().data(error.body().to_string())
    }
}

/// The `delta` of a driver event the client sees (thinking, answer text, a tool call's
/// fragment: its id, type and name in the first only); none for the others.
fn delta_of(event: &DriverEvent) -> Option<Value> {
    match event {
        DriverEvent::Delta { reasoning, text } => Some(if *reasoning {
            json!({"reasoning_content": text})
        } else {
            json!({"content": text})
        }),
        DriverEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments,
        } => {
            let mut call = json!({"index": index});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["type"] = json!("function");
            }
            let mut function = json!({"arguments": arguments});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            call["function"] = function;
            Some(json!({"tool_calls": [call]}))
        }
        _ => None,
    }
}
