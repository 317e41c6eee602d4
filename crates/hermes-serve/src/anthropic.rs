//! The Messages door, Anthropic Messages in and out (`POST /v1/messages`,
//! `POST /v1/messages/count_tokens`): its handlers ([`messages`], [`count_tokens`]), the
//! request turned into the engine's messages (system, text, image, `tool_use`, `tool_result`
//! blocks; client-side tools; `tool_choice`; sampling; `thinking` and `output_config.effort`
//! as the thinking request), and the `message` object and its SSE events built from what the
//! engine returns.
//!
//! The history itself is read by the Anthropic codec (`hermes_wire_anthropic::inbound`,
//! which the conformance suite runs too). Thinking blocks a client sends are never taken as
//! readable reasoning on their own word: re-attachment gives every assistant turn the store
//! holds its stored carriers (docs/spec.md §10); on a turn it does not hold, the client's own
//! signed blocks go byte for byte to a Claude upstream only (which verifies them), a gateway-signed
//! block gives its text only when its signature verifies ([`vouch`]), and every other upstream
//! gets the route's rule for a missing carrier, so an altered block never reaches it as
//! reasoning.
//! A reply from a Claude upstream returns Claude's own signed `thinking` blocks (whole replies
//! also its `redacted_thinking` blocks); readable thinking from another upstream is a `thinking`
//! block with a gateway-minted signature (`crate::sign`). A stream sends each thinking block
//! whole once it ends (its signature is known then). Opaque items stay server-side.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use hermes_core::{
    DetailItem, Effort, FinishReason, Message, Passthrough, RawJson, Role, Sampling, TextCarrier,
    ThinkingRequest, ToolChoice, Usage,
};
use hermes_engine::providers::anthropic::inbound;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::body::{ClientTurn, Fields, arguments_text, readable_thinking, text_of};
use crate::error::ApiError;
use crate::gate::{self, Gated};
use crate::sign::Signer;
use crate::turn::{
    asked, complete, gated_handler, off_reactor, session_of, stream_reply, turn_idempotency,
    with_session,
};
use crate::{Door, Inner, access, model, policy, sign};

gated_handler!(messages => messages_turn, ApiError::into_anthropic_response);

/// Claude Code's per-conversation header: the client's partition when no `metadata.user_id`
/// names one (docs/spec.md §10).
const CLAUDE_CODE_SESSION: &str = "x-claude-code-session-id";

/// Anthropic's feature-flag header.
const ANTHROPIC_BETA: &str = "anthropic-beta";

/// `POST /v1/messages`: one turn of an Anthropic Messages client, whole or streamed.
async fn messages_turn(
    inner: &Inner,
    headers: &HeaderMap,
    gated: Gated,
) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, |b| parse(b, false)).await?;
    if model::check(&parsed.model).is_ok() {
        access::model(&parsed.model);
    }
    let choice = inner.resolve(Door::Messages, &parsed.model)?;
    let session = session_of(headers)?;
    let mut turn = parsed;
    if turn.partition.is_none() {
        turn.partition = headers
            .get(CLAUDE_CODE_SESSION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
    }
    // Forwarded to Claude upstreams only (the wire decides); each value once.
    turn.passthrough = std::mem::take(&mut turn.passthrough).betas(
        headers
            .get_all(ANTHROPIC_BETA)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    );
    turn.passthrough.version = headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64)
        .map(str::to_owned);
    let server_tools = policy::messages_server_tools(&turn.passthrough);
    let asked = policy::Asked {
        betas: &turn.passthrough.betas,
        ..asked(
            Door::Messages,
            &choice,
            &turn,
            session.as_deref(),
            server_tools,
        )
    };
    inner.config.policy.check(&tenant, &asked)?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "messages");

    let recorder = inner.turn(&tenant);
    let signer = sign::Signer::new(
        inner.signing_key().await?,
        tenant.clone(),
        turn.partition.clone(),
    );
    let vouched = vouch(&mut turn.messages, &signer);
    if vouched > 0 {
        tracing::debug!(vouched, "gateway-signed thinking blocks verified");
    }
    let (model, stream) = (turn.model.clone(), turn.stream);
    let idempotency = turn_idempotency(headers, "messages", session.as_deref(), &turn, &body)?;
    let request = turn
        .request(tenant.clone(), choice, session)
        .idempotency(Some(idempotency));
    let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    if !stream {
        let completion = complete(inner, request, &recorder).await?;
        let reply = completion
            .messages
            .iter()
            .rfind(|m| m.role == Role::Assistant);
        let mut body = json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content(reply, &signer),
            "stop_reason": stop_reason(completion.finish.as_ref()),
            "stop_sequence": null,
            "usage": usage(&completion.usage),
            "hermes_session": completion.session,
        });
        if let Some(dropped) = transformations(reply) {
            body["input_transformations"] = dropped;
        }
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    let door = AnthropicStream::new(id, model, signer);
    stream_reply(inner, request, door, recorder, admitted).await
}

pub(crate) async fn count_tokens(
    State(inner): State<Arc<Inner>>,
    Extension(gate::Read(body)): Extension<gate::Read>,
) -> Response {
    match count(&inner, &body).await {
        Ok(response) => response,
        Err(error) => error.into_anthropic_response(),
    }
}

/// `POST /v1/messages/count_tokens`: the estimator's count of the request on its route (the
/// gate checked the key and read the body).
async fn count(inner: &Inner, body: &[u8]) -> Result<Response, ApiError> {
    let parsed = parse(body, true)?;
    let choice = inner.resolve(Door::Messages, &parsed.model)?;
    let target = hermes_core::RouteTarget::new(
        choice.provider.as_deref().unwrap_or_default(),
        choice.base_url.as_deref(),
        choice.model.as_deref().unwrap_or_default(),
    );
    let decision = inner
        .engine
        .engine()
        .table()
        .resolve(&target, hermes_core::ResolveOptions::default());
    let mut tokens = hermes_core::estimate_history(&parsed.messages, &decision);
    if let Some(tools) = &parsed.tools {
        tokens += tools.get().len().div_ceil(4);
    }
    Ok(axum::Json(json!({"input_tokens": tokens})).into_response())
}

/// The thinking budgets of docs/spec.md §3c, smallest first: a budget asks for the highest effort
/// whose budget is not above it.
const BUDGETS: [(u32, Effort); 6] = [
    (1024, Effort::Minimal),
    (4096, Effort::Low),
    (8192, Effort::Medium),
    (16000, Effort::High),
    (24000, Effort::XHigh),
    (32000, Effort::Max),
];

/// The effort a thinking budget asks for; `None` below the smallest budget.
fn effort_for_budget(budget: u32) -> Option<Effort> {
    BUDGETS
        .iter()
        .rev()
        .find(|(b, _)| *b <= budget)
        .map(|(_, e)| *e)
}

/// The top-level keys the Messages door reads into wire-neutral parts; every other key
/// (`metadata`, `context_management`, `output_config`, keys hermes does not know) goes to a
/// Claude upstream as written ([`Passthrough::fields`]) and to no other.
const DOOR_KEYS: &[&str] = &[
    "model",
    "messages",
    "system",
    "max_tokens",
    "tools",
    "tool_choice",
    "thinking",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
];

/// Parses a request body (`count_tokens` bodies too: `max_tokens` is then optional).
fn parse(body: &[u8], counting: bool) -> Result<ClientTurn, ApiError> {
    let f = Fields::parse(body)?;
    let model: String = f.required("model", "a string")?;
    // The history, per block (docs/spec.md §10): the one reader the conformance suite runs too.
    let messages = inbound::history(f.raw("system"), f.raw("messages"))
        .map_err(|e| ApiError::invalid(&e.at, e.message))?;
    let mut sampling = Sampling::new();
    sampling.max_tokens = f.get("max_tokens", "a positive integer")?;
    if sampling.max_tokens.is_none() && !counting {
        return Err(ApiError::required("max_tokens"));
    }
    sampling.temperature = f.get("temperature", "a number")?;
    sampling.top_p = f.get("top_p", "a number")?;
    sampling.top_k = f.get("top_k", "a positive integer")?;
    sampling.stop = f
        .get("stop_sequences", "an array of strings")?
        .unwrap_or_default();
    let metadata: Option<Map<String, Value>> = f.get("metadata", "an object")?;
    let partition = metadata
        .as_ref()
        .and_then(|m| m.get("user_id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut passthrough = Passthrough::new();
    let tools = match f.get::<Vec<Box<RawValue>>>("tools", "an array of tool definitions")? {
        Some(tools) if !tools.is_empty() => {
            let (client, server) = convert_tools(&tools)?;
            passthrough.server_tools = server;
            // To a Claude upstream the list goes as written (the wire decides).
            passthrough.tools = f.raw("tools").and_then(|t| RawJson::from_text(t).ok());
            client
        }
        _ => None,
    };
    passthrough.fields = f.passed_through(DOOR_KEYS);

    if let Some(choice) = f.get::<Value>("tool_choice", "an object")? {
        let (choice, parallel) = tool_choice(&choice)?;
        sampling.tool_choice = Some(choice);
        sampling.parallel_tool_calls = parallel;
    }
    let mut thinking = match f.get::<Value>("thinking", "an object")? {
        None => ThinkingRequest::NoPreference,
        Some(t) => thinking_request(&t)?,
    };
    if let Some(raw) = f.raw("thinking") {
        // To a Claude upstream the client's own object goes as sent (the wire decides).
        passthrough.thinking = Some(
            RawJson::from_text(raw).map_err(|e| ApiError::invalid("thinking", e.to_string()))?,
        );
    }
    if let Some(effort) = f
        .get::<Value>("output_config", "an object")?
        .and_then(|o| o.get("effort").cloned())
    {
        let e = effort.as_str().and_then(Effort::parse).ok_or_else(|| {
            ApiError::invalid(
                "output_config.effort",
                "`output_config.effort` must be low, medium, high or max",
            )
        })?;
        if thinking != ThinkingRequest::Off {
            thinking = ThinkingRequest::Effort(e);
        }
    }
    Ok(ClientTurn {
        model,
        messages,
        stream: f.get::<bool>("stream", "a boolean")?.unwrap_or(false),
        tools,
        thinking,
        sampling,
        partition,
        passthrough,
    })
}

/// `thinking`: `enabled` with `budget_tokens` (the effort of its budget), `adaptive` (the
/// route's default) or `disabled`.
fn thinking_request(t: &Value) -> Result<ThinkingRequest, ApiError> {
    let bad = |why: &str| ApiError::invalid("thinking", why.to_owned());
    match t.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            let budget = t
                .get("budget_tokens")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad("`thinking.budget_tokens` is required with type enabled"))?;
            let budget = u32::try_from(budget).unwrap_or(u32::MAX);
            effort_for_budget(budget)
                .map(ThinkingRequest::Effort)
                .ok_or_else(|| bad("`thinking.budget_tokens` must be at least 1024"))
        }
        Some("adaptive") => Ok(ThinkingRequest::NoPreference),
        Some("disabled") => Ok(ThinkingRequest::Off),
        _ => Err(bad("`thinking.type` must be enabled, adaptive or disabled")),
    }
}

/// `tool_choice`: `auto`, `any`, `tool` (by name) or `none`, and whether parallel tool use was
/// turned off.
fn tool_choice(v: &Value) -> Result<(ToolChoice, Option<bool>), ApiError> {
    let parallel = v
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        .map(|off| !off);
    let choice = match v.get("type").and_then(Value::as_str) {
        Some("auto") => ToolChoice::Auto,
        Some("any") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        Some("tool") => ToolChoice::Function(
            v.get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "tool_choice",
                        "`tool_choice.name` is required with type tool",
                    )
                })?
                .to_owned(),
        ),
        _ => {
            return Err(ApiError::invalid(
                "tool_choice",
                "`tool_choice.type` must be auto, any, tool or none",
            ));
        }
    };
    Ok((choice, parallel))
}

/// The client's tools: its own (custom) tools as chat-completions function definitions, and
/// the tools Anthropic defines (a versioned `type`: web search, code execution, text editor…)
/// exactly as sent, for a Claude upstream only (the engine refuses them, naming `tools`, for
/// any other).
fn convert_tools(tools: &[Box<RawValue>]) -> Result<(Option<RawJson>, Vec<RawJson>), ApiError> {
    let mut out = Vec::with_capacity(tools.len());
    let mut server = Vec::new();
    for (i, raw) in tools.iter().enumerate() {
        let tool: Value = serde_json::from_str(raw.get())
            .map_err(|e| ApiError::invalid(&format!("tools.{i}"), format!("`tools.{i}`: {e}")))?;
        let kind = tool.get("type").and_then(Value::as_str);
        if kind.is_some_and(|k| k != "custom") {
            server.push(RawJson::from_text(raw.get()).map_err(|e| {
                ApiError::invalid(&format!("tools.{i}"), format!("`tools.{i}`: {e}"))
            })?);
            continue;
        }
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::required(&format!("tools.{i}.name")))?;
        let mut function = json!({
            "name": name,
            "parameters": tool.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        });
        if let Some(description) = tool.get("description") {
            function["description"] = description.clone();
        }
        out.push(json!({"type": "function", "function": function}));
    }
    let client = match out.is_empty() {
        true => None,
        false => Some(
            RawJson::from_serialize(&out).map_err(|e| ApiError::invalid("tools", e.to_string()))?,
        ),
    };
    Ok((client, server))
}

/// The gateway's own thinking blocks a client sent back (`inbound::gateway_block`), checked
/// with `signer` (same key, tenant and partition): each is taken off its message, and the text
/// of one that verifies becomes the message's readable reasoning when it has none (docs/spec.md
/// §10: carriers a client sends are used where they verify). Re-attachment still replaces every
/// message the store holds with the stored one; this matters for a turn it cannot line up (the
/// client edited it, or the conversation was purged). An altered block is dropped. Returns how
/// many verified.
fn vouch(messages: &mut [Message], signer: &Signer) -> usize {
    let mut verified = 0;
    for message in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        let Some(items) = message.reasoning_details.as_mut() else {
            continue;
        };
        let mut texts = Vec::new();
        items.retain(|item| match inbound::gateway_block(item) {
            Some((text, signature)) => {
                if signer.verifies(&text, &signature) {
                    texts.push(text);
                }
                false
            }
            None => true,
        });
        if items.is_empty() {
            message.reasoning_details = None;
        }
        verified += texts.len();
        if !texts.is_empty() && message.reasoning_content.is_none() {
            message.reasoning_content = Some(TextCarrier::new(&texts.join("\n\n")));
        }
    }
    verified
}

/// Anthropic's spelling of why a reply ended.
fn stop_reason(finish: Option<&FinishReason>) -> &'static str {
    match finish {
        Some(FinishReason::Length) => "max_tokens",
        Some(FinishReason::ToolCalls) => "tool_use",
        Some(FinishReason::ContentFilter) => "refusal",
        _ => "end_turn",
    }
}

/// Anthropic's `usage` object: its `input_tokens` leaves out the tokens read from and written
/// to the cache, which [`Usage::input`] counts (Anthropic's clients add the three up). Its
/// `output_tokens` holds the thinking, as Claude's own does.
fn usage(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage
            .input
            .saturating_sub(usage.cache_read)
            .saturating_sub(usage.cache_write),
        "output_tokens": usage.output,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_write,
    })
}

/// The `input_transformations` a Claude upstream reported for the request that made `reply`
/// (the thinking blocks it dropped instead of refusing, docs/spec.md §5a 4), as received.
fn transformations(reply: Option<&Message>) -> Option<Value> {
    let key = hermes_engine::providers::anthropic::TRANSFORMATIONS_KEY;
    reply?
        .extra
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| serde_json::from_str(v.get()).ok())
}

/// A tool call's `input`: its arguments parsed (an object), `{}` when it has none.
fn tool_input(arguments: Option<&RawJson>) -> Value {
    arguments
        .map(|a| {
            let text = arguments_text(a);
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        })
        .unwrap_or_else(|| json!({}))
}

/// The content blocks of a reply: Claude's own `thinking` and `redacted_thinking` blocks as it
/// sent them (their signatures unchanged; they are also stored, so a client that drops them
/// gets them back upstream) or, from another upstream, its readable thinking as one `thinking`
/// block `signer` signs; then its text, then its tool calls.
fn content(reply: Option<&Message>, signer: &Signer) -> Vec<Value> {
    let Some(reply) = reply else {
        return Vec::new();
    };
    let mut blocks: Vec<Value> = reply
        .reasoning_details
        .iter()
        .flatten()
        .filter_map(|item| match item {
            DetailItem::Provider { raw, .. } => serde_json::from_str::<Value>(raw.get()).ok(),
            DetailItem::Native { .. } => None,
        })
        .filter(|block| {
            matches!(
                block.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        })
        .collect();
    if blocks.is_empty()
        && let Some(thinking) = readable_thinking(reply).filter(|t| !t.trim().is_empty())
    {
        blocks.push(json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": signer.mint(&thinking),
        }));
    }
    if let Some(text) = reply
        .content
        .as_ref()
        .map(text_of)
        .filter(|t| !t.is_empty())
    {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in reply.tool_calls.iter().flatten() {
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.function.name,
            "input": tool_input(call.function.arguments.as_ref()),
        }));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use hermes_core::Effort;

    use super::effort_for_budget;

    #[test]
    fn a_budget_asks_for_the_highest_effort_not_above_it() {
        assert_eq!(effort_for_budget(1023), None);
        assert_eq!(effort_for_budget(1024), Some(Effort::Minimal));
        assert_eq!(effort_for_budget(4095), Some(Effort::Minimal));
        assert_eq!(effort_for_budget(8192), Some(Effort::Medium));
        assert_eq!(effort_for_budget(16000), Some(Effort::High));
        assert_eq!(effort_for_budget(31999), Some(Effort::XHigh));
        assert_eq!(effort_for_budget(64000), Some(Effort::Max));
    }
}

/// The block a stream has open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
    /// A tool call, by the engine's tool-call index.
    Tool(usize),
}

/// The Messages door's stream: `message_start` and a `ping`, then a content block per thinking
/// block (sent whole once it ends: with its upstream's signature, else one the gateway mints),
/// per run of answer text and per tool call (`content_block_start`, `text_delta` / `input_json_delta`
/// deltas, `content_block_stop`); after [`hermes_engine::Event::Done`] (every step stored)
/// `message_delta` with the stop reason and usage, then `message_stop`; a failure is an `error`
/// event in Anthropic's shape.
struct AnthropicStream {
    pub(crate) id: String,
    pub(crate) model: String,
    open: Option<(usize, Open)>,
    blocks: usize,
    /// Thinking streamed since the last block, and its signature once one arrived.
    thinking: String,
    signature: Option<String>,
    /// Signs thinking its upstream did not sign.
    signer: Signer,
}

impl AnthropicStream {
    /// The stream of message `id` answered as `model`, unsigned thinking signed by `signer`.
    fn new(id: String, model: String, signer: Signer) -> Self {
        AnthropicStream {
            id,
            model,
            open: None,
            blocks: 0,
            thinking: String::new(),
            signature: None,
            signer,
        }
    }

    /// Sends the thinking streamed so far as one block: with its upstream's signature, or one
    /// the gateway mints when its upstream signs none.
    fn flush_thinking(&mut self, out: &mut Vec<SseEvent>) {
        let text = std::mem::take(&mut self.thinking);
        let signature = match self.signature.take() {
            Some(signature) => signature,
            None if !text.trim().is_empty() => self.signer.mint(&text),
            None => return,
        };
        let index = self.open(
            Open::Thinking,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            out,
        );
        for delta in [
            json!({"type": "thinking_delta", "thinking": text}),
            json!({"type": "signature_delta", "signature": signature}),
        ] {
            out.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        self.close(out);
    }

    /// Closes the open block, if any.
    fn close(&mut self, out: &mut Vec<SseEvent>) {
        if let Some((index, _)) = self.open.take() {
            out.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// Opens a block (`content_block` as `content_block_start` shows it), closing the open one.
    fn open(&mut self, kind: Open, content_block: Value, out: &mut Vec<SseEvent>) -> usize {
        self.close(out);
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some((index, kind));
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": content_block}),
        ));
        index
    }
}

/// An SSE event named `name` carrying `data`.
fn event(name: &str, data: Value) -> SseEvent {
    SseEvent::default().event(name).data(data.to_string())
}

impl crate::sse::StreamDoor for AnthropicStream {
    fn opening(&mut self) -> Vec<SseEvent> {
        vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                }}),
            ),
            event("ping", json!({"type": "ping"})),
        ]
    }

    fn on_event(&mut self, ev: hermes_engine::Event) -> (Vec<SseEvent>, bool) {
        use hermes_core::driver::DriverEvent;
        let mut out = Vec::new();
        match &ev {
            hermes_engine::Event::Driver(DriverEvent::Delta {
                reasoning: true, ..
            })
            | hermes_engine::Event::Driver(DriverEvent::ThinkingSignature { .. }) => {}
            hermes_engine::Event::Driver(
                DriverEvent::Delta { .. } | DriverEvent::ToolCallDelta { .. },
            )
            | hermes_engine::Event::Done(_) => self.flush_thinking(&mut out),
            _ => {}
        }
        match ev {
            hermes_engine::Event::Driver(DriverEvent::Delta {
                reasoning: true,
                text,
            }) => {
                if self.signature.is_some() {
                    // A new thinking block after a signed one.
                    self.flush_thinking(&mut out);
                }
                self.thinking.push_str(&text);
            }
            hermes_engine::Event::Driver(DriverEvent::ThinkingSignature { signature }) => {
                self.signature = Some(signature);
            }
            hermes_engine::Event::Driver(DriverEvent::Delta {
                reasoning: false,
                text,
            }) => {
                let index = match self.open {
                    Some((index, Open::Text)) => index,
                    _ => self.open(Open::Text, json!({"type": "text", "text": ""}), &mut out),
                };
                out.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": text}}),
                ));
            }
            hermes_engine::Event::Driver(DriverEvent::ToolCallDelta {
                index: call,
                id,
                name,
                arguments,
            }) => {
                let index = match self.open {
                    Some((index, Open::Tool(open))) if open == call => index,
                    _ => self.open(
                        Open::Tool(call),
                        json!({"type": "tool_use", "id": id.unwrap_or_default(),
                               "name": name.unwrap_or_default(), "input": {}}),
                        &mut out,
                    ),
                };
                if !arguments.is_empty() {
                    out.push(event(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": arguments}}),
                    ));
                }
            }
            hermes_engine::Event::Done(completion) => {
                self.close(&mut out);
                let mut delta = json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason(completion.finish.as_ref()),
                                 "stop_sequence": null},
                       "usage": usage(&completion.usage),
                       "hermes_session": completion.session});
                // Anthropic puts them on `message_start`, sent before the upstream answered;
                // here they come with the end of the message.
                let reply = completion
                    .messages
                    .iter()
                    .rfind(|m| m.role == hermes_core::Role::Assistant);
                if let Some(dropped) = transformations(reply) {
                    delta["input_transformations"] = dropped;
                }
                out.push(event("message_delta", delta));
                out.push(event("message_stop", json!({"type": "message_stop"})));
                return (out, true);
            }
            _ => {}
        }
        (out, false)
    }

    fn failure(&self, error: &ApiError) -> SseEvent {
        event("error", error.anthropic_body())
    }
}
