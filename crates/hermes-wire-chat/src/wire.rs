//! The chat-completions wire over HTTP: where a request goes ([`Endpoint`]), the wire bound to
//! one endpoint ([`HttpChat`], what the turn driver sends through), its body's encoding, and the
//! reading of a streamed reply ([`ChatTurn`], through the native-wire kit's SSE loop).

use std::fmt;

use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{CHAT_WIRE, Outgoing, RequestParts, Wire};
use hermes_core::{Message, Origin, ReplyMeta};
use hermes_core::{OnDelta, SendResult};
use hermes_providers::native::read::error_text;
use hermes_providers::native::reply::snippet;
use hermes_providers::native::sse::{self, SseTurn};
use hermes_providers::native::{image, sampling};
use hermes_providers::{Auth, ChatTransport};
use serde_json::Value;

use crate::{ChatRequest, StreamAccumulator, capture_message};

/// Where requests go.
#[derive(Clone)]
pub struct Endpoint {
    /// Base URL; `/chat/completions` is appended.
    pub base_url: String,
    /// Bearer key, if the provider needs one.
    pub api_key: Option<String>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Endpoint {
    /// The chat-completions URL.
    pub fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// Calls `on_delta` for the text a chunk carries.
fn emit_deltas(chunk: &Value, on_delta: OnDelta<'_>) {
    let Some(delta) = chunk.pointer("/choices/0/delta") else {
        return;
    };
    for key in ["reasoning_content", "reasoning", "reasoning_text"] {
        if let Some(text) = delta
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            on_delta(Delta::Reasoning(text));
            // One readable stream is enough: providers that send both spell the same text.
            break;
        }
    }
    if let Some(text) = delta
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        on_delta(Delta::Content(text));
    }
    // Streamed tool calls are already fragments: `index` names the call, `id` and
    // `function.name` come with its first fragment, `function.arguments` in pieces.
    for (i, call) in delta
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .map_or(i, |n| n as usize);
        let function = call.get("function");
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if id.is_none() && name.is_none() && arguments.is_empty() {
            continue;
        }
        on_delta(Delta::ToolCall {
            index,
            id,
            name,
            arguments,
        });
    }
}

/// A chat-completions stream as the SSE loop reads it ([`sse::read_sse`]): each event one
/// chunk, `[DONE]` the end.
pub(crate) struct ChatTurn {
    acc: StreamAccumulator,
    done: bool,
}

impl ChatTurn {
    /// A fresh reader of one streamed reply.
    pub(crate) fn new() -> Self {
        ChatTurn {
            acc: StreamAccumulator::new(),
            done: false,
        }
    }
}

impl SseTurn for ChatTurn {
    fn seen(&self) -> usize {
        self.acc.chunks()
    }

    fn take(&mut self, _: &str, data: &str, on_delta: OnDelta<'_>) -> Result<bool, TransportError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            TransportError::Decode(format!(
                "stream chunk {}: {e}: {}",
                self.acc.chunks() + 1,
                snippet(data)
            ))
        })?;
        if let Some(err) = error_text(&chunk) {
            return Err(TransportError::AfterOk(err));
        }
        emit_deltas(&chunk, on_delta);
        self.acc.feed_with_text(&chunk, data);
        Ok(false)
    }

    /// A stream that ended without a finish reason or `[DONE]` is broken; when it carried no
    /// chunk at all, the body says why (a provider's JSON error body sent with status 200).
    fn end(self, origin: Origin, head: &str) -> Result<(Message, ReplyMeta), TransportError> {
        let acc = self.acc;
        if !self.done && !acc.finished() {
            if acc.chunks() == 0 {
                if let Some(err) = serde_json::from_str::<Value>(head)
                    .ok()
                    .as_ref()
                    .and_then(error_text)
                {
                    return Err(TransportError::AfterOk(err));
                }
                let framed = head.lines().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("data:") || l.starts_with("event:") || l.starts_with(':')
                });
                if !head.is_empty() && !framed {
                    return Err(TransportError::Stream(format!(
                        "the reply is not an event stream: {}",
                        snippet(head)
                    )));
                }
            }
            return Err(TransportError::Stream(format!(
                "the stream ended after {} chunks without a finish_reason or [DONE]",
                acc.chunks()
            )));
        }
        Ok(acc.finish(origin))
    }
}

/// The chat wire bound to one endpoint: what the turn driver sends through.
#[derive(Clone, Debug)]
pub struct HttpChat {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go.
    pub endpoint: Endpoint,
}

impl HttpChat {
    /// Sends `request` and captures the reply as an assistant message with `origin`.
    /// Streams when `request.stream` is set. A failed or half-finished reply is an error and
    /// yields no message.
    pub async fn send_chat(
        &self,
        request: &ChatRequest<'_>,
        origin: Origin,
    ) -> Result<Reply, TransportError> {
        let out = encode(request)?;
        self.send_with(&out, origin, &|_| {}).await
    }

    /// Sends an encoded body, calling `on_delta` with each piece of streamed text.
    pub async fn send_with(
        &self,
        request: &Outgoing,
        origin: Origin,
        on_delta: OnDelta<'_>,
    ) -> Result<Reply, TransportError> {
        let url = self.endpoint.url();
        let auth = self
            .endpoint
            .api_key
            .as_ref()
            .map(|key| Auth::Bearer(key.clone()));
        let response = self
            .client
            .send_request("chat", &url, request, auth.as_ref(), &[])
            .await?;
        let turn = ChatTurn::new;
        // A whole reply is decoded from the bytes, never through a `Value`: carriers keep them.
        sse::read_reply(
            response,
            request,
            turn,
            capture_message,
            origin,
            on_delta,
            "chunk",
        )
        .await
    }
}

/// The chat-completions body of `request`, with the carriers it replays (the fields a
/// provider may refuse, docs/spec.md §6).
pub(crate) fn encode(request: &ChatRequest<'_>) -> Result<Outgoing, TransportError> {
    let body = serde_json::to_vec(request).map_err(|e| TransportError::Request(e.to_string()))?;
    let refusable = request.sent_carriers().fields();
    Ok(
        Outgoing::new(body, request.stream, refusable, request.messages.len()).carriers(
            crate::carrier_counts(request.messages.iter().filter_map(|m| m.plan())),
        ),
    )
}

#[async_trait::async_trait]
impl Wire for HttpChat {
    fn id(&self) -> &'static str {
        CHAT_WIRE
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        // openai 3.57.0 `ChatCompletionToolMessageParam.content`: a string or text parts only.
        if let Some(i) = parts.history.iter().position(|m| {
            m.role == hermes_core::Role::Tool && image::has_images(m.content.as_ref())
        }) {
            return Err(TransportError::unsupported(
                "messages",
                "chat completions",
                format!(
                    "message {i} is a tool result with images, and a chat-completions tool message takes text only (images go in user messages); use a model on a wire that takes images in tool results (Anthropic, Bedrock, Gemini, Responses) or leave the images out"
                ),
            ));
        }
        let mut request = ChatRequest::build(
            parts.history,
            parts.decision,
            parts.verdicts,
            parts.thinking,
        );
        request.stream = parts.stream;
        request.stream_usage = parts.stream && sampling::stream_usage(parts.decision);
        request.tools = parts.tools;
        sampling::check_tool_choice(parts.sampling, parts.tools, "chat completions")?;
        request.sampling =
            sampling::chat_fields(parts.decision, parts.sampling, &request.thinking)?;
        encode(&request)
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        self.send_with(request, origin, on_delta).await
    }
}
