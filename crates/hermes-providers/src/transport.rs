//! The chat-completions transport: one shared HTTP client, non-streaming and SSE replies, and
//! typed errors mapped from reqwest in one place. The API key is sent, never logged.

use std::fmt;
use std::time::Duration;

use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use hermes_core::Origin;
use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{CHAT_WIRE, Outgoing, RequestParts, Wire};

use crate::chat::{CaptureError, ChatRequest, StreamAccumulator, capture_message};
use serde_json::Value;

/// How long to wait for a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a reply may stay silent (between stream chunks, or before a whole body).
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// At most this much of an error body is kept.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

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

/// The one place reqwest errors become transport errors.
fn map_reqwest(err: reqwest::Error) -> TransportError {
    // reqwest's message names the URL, which never holds the key (it travels in a header).
    let text = err.to_string();
    if err.is_timeout() {
        TransportError::Timeout
    } else if err.is_connect() {
        TransportError::Connect(text)
    } else if err.is_body() || err.is_decode() {
        TransportError::Stream(text)
    } else {
        TransportError::Request(text)
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// The message of an `{"error":…}` payload.
fn error_text(value: &Value) -> Option<String> {
    let err = value.get("error")?;
    Some(match err.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => err.to_string(),
    })
}

fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(200).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// The redirect policy: a redirect is followed only when it keeps the method and body (307,
/// 308) and stays on the same scheme, host and port. Anything else stops, and the 3xx answer
/// becomes [`TransportError::Redirect`] naming the target: the conversation is never re-sent to
/// a host the user did not name.
fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
    let same_origin = attempt.previous().last().is_some_and(|from| {
        let to = attempt.url();
        from.scheme() == to.scheme()
            && from.host_str() == to.host_str()
            && from.port_or_known_default() == to.port_or_known_default()
    });
    if keeps_body && same_origin && attempt.previous().len() <= MAX_REDIRECTS {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// Sends chat-completions requests over one shared client.
#[derive(Clone, Debug)]
pub struct ChatTransport {
    client: reqwest::Client,
}

impl ChatTransport {
    /// Builds the shared client (rustls with the ring provider, HTTP/2, timeouts).
    pub fn new() -> Result<Self, TransportError> {
        // Installing twice is harmless; reqwest needs a process-wide provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(map_reqwest)?;
        Ok(ChatTransport { client })
    }

    /// Sends `request` and captures the reply as an assistant message with `origin`.
    /// Streams when `request.stream` is set. A failed or half-finished reply is an error and
    /// yields no message.
    pub async fn send(
        &self,
        endpoint: &Endpoint,
        request: &ChatRequest<'_>,
        origin: Origin,
    ) -> Result<Reply, TransportError> {
        let out = encode(request)?;
        self.send_with(endpoint, &out, origin, &|_| {}).await
    }

    /// Sends an encoded body, calling `on_delta` with each piece of streamed text.
    pub async fn send_with(
        &self,
        endpoint: &Endpoint,
        request: &Outgoing,
        origin: Origin,
        on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        let body = request.body.clone();
        let url = endpoint.url();
        tracing::debug!(url = %url, stream = request.stream, bytes = body.len(), "sending chat request");
        tracing::trace!(body = %String::from_utf8_lossy(&body), "chat request body");
        let mut builder = self
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if request.stream {
            builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        if let Some(key) = &endpoint.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(map_reqwest)?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(|l| {
                    // A relative Location is resolved against the URL that answered.
                    response
                        .url()
                        .join(l)
                        .map_or_else(|_| l.to_owned(), |u| u.to_string())
                })
                .unwrap_or_else(|| "(none)".to_owned());
            tracing::warn!(status = status.as_u16(), location = %location, "redirect not followed");
            return Err(TransportError::Redirect {
                status: status.as_u16(),
                location,
            });
        }
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let bytes = response.bytes().await.map_err(map_reqwest)?;
            let body =
                String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_LIMIT)]).into_owned();
            tracing::debug!(status = status.as_u16(), body = %snippet(&body), "chat request refused");
            return Err(TransportError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        if request.stream {
            read_stream(response, origin, on_delta).await
        } else {
            let bytes = response.bytes().await.map_err(map_reqwest)?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|e| TransportError::Decode(format!("the reply is not UTF-8: {e}")))?;
            // Decoded from the bytes, never through a `Value`: carriers keep their bytes.
            match capture_message(text, origin) {
                Ok((message, meta)) => Ok(Reply { message, meta }),
                Err(CaptureError::Provider(err)) => Err(TransportError::AfterOk(err)),
                Err(CaptureError::Malformed(e)) => {
                    Err(TransportError::Decode(format!("{e}: {}", snippet(text))))
                }
            }
        }
    }
}

/// Calls `on_delta` for the text a chunk carries.
fn emit_deltas(chunk: &Value, on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync)) {
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
}

async fn read_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
) -> Result<Reply, TransportError> {
    let mut events = response.bytes_stream().eventsource();
    let mut acc = StreamAccumulator::new();
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| TransportError::Stream(e.to_string()))?;
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            TransportError::Decode(format!(
                "stream chunk {}: {e}: {}",
                acc.chunks() + 1,
                snippet(data)
            ))
        })?;
        if let Some(err) = error_text(&chunk) {
            return Err(TransportError::AfterOk(err));
        }
        emit_deltas(&chunk, on_delta);
        acc.feed_with_text(&chunk, data);
    }
    if !done && !acc.finished() {
        return Err(TransportError::Stream(format!(
            "the stream ended after {} chunks without a finish_reason or [DONE]",
            acc.chunks()
        )));
    }
    let (message, meta) = acc.finish(origin);
    Ok(Reply { message, meta })
}

/// The chat wire bound to one endpoint: what the turn driver sends through.
#[derive(Clone, Debug)]
pub struct HttpChat {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go.
    pub endpoint: Endpoint,
}

/// The chat-completions body of `request`, with the carriers it replays (the fields a
/// provider may refuse, SPEC §6).
pub fn encode(request: &ChatRequest<'_>) -> Result<Outgoing, TransportError> {
    let body = serde_json::to_vec(request).map_err(|e| TransportError::Request(e.to_string()))?;
    let refusable = request.sent_carriers().fields();
    Ok(Outgoing::new(
        body,
        request.stream,
        refusable,
        request.messages.len(),
    ))
}

#[async_trait::async_trait]
impl Wire for HttpChat {
    fn id(&self) -> &'static str {
        CHAT_WIRE
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        let mut request = ChatRequest::build(
            parts.history,
            parts.decision,
            parts.verdicts,
            parts.thinking,
        );
        request.stream = parts.stream;
        request.tools = parts.tools;
        encode(&request)
    }

    async fn send(
        &self,
        request: &Outgoing,
        origin: Origin,
        on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        self.client
            .send_with(&self.endpoint, request, origin, on_delta)
            .await
    }
}
