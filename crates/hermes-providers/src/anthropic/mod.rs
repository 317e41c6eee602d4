//! The Anthropic Messages wire (direct, Vertex, Azure Foundry, Bedrock InvokeModel and the
//! `/anthropic` relays): the request body (`body`), what a Claude model id implies (`model`),
//! reply capture (`capture`: SSE, or Bedrock's AWS event stream) and the HTTP side with its auth
//! and its one-time recovery from `Invalid signature` (this module).

pub mod body;
pub(crate) mod capture;
pub mod model;

use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{Origin, RawJson};
use hermes_core::{Outgoing, Recovery, RequestParts, Role, Wire};

use crate::aws;
use crate::transport::{Auth, ChatTransport, error_event_text, map_reqwest, snippet, stream_error};

pub use body::{
    ANTHROPIC_VERSION, BEDROCK_VERSION, Drops, Encoded, Family, Flavor, PREFIX_KEY, Target,
};

/// The wire's id (its verdicts are kept under it).
pub const WIRE_ID: &str = "anthropic";

/// The Anthropic Messages wire bound to one target.
#[derive(Clone, Debug)]
pub struct AnthropicWire {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go.
    pub target: Target,
    /// The key (`x-api-key`), token (Vertex: bearer) or AWS auth (Bedrock: [`Auth::Aws`], SigV4
    /// over the exact URL and body); none for a loopback endpoint.
    pub auth: Option<Auth>,
}

impl AnthropicWire {
    /// The URL a request goes to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        url(&self.target, model, stream)
    }
}

/// The URL of a request to `target` for `model` (SPEC §8a). On Bedrock the model id (or
/// inference-profile ARN) is one percent-encoded path segment ([`aws::path_segment`]: `:` is
/// `%3A`, `/` is `%2F`), as boto3 sends it (`tests/sdk_bedrock.rs` compares the two).
/// anthropic-sdk-python 2.16.0's `AnthropicBedrock` leaves `:` (and `;`) bare instead
/// (`urllib.parse.quote(model, safe=":;")`, `anthropic/lib/bedrock/_client.py` line 68): the
/// same resource to Bedrock, but hermes follows the AWS SDK, whose signing it is proven against.
pub fn url(target: &Target, model: &str, stream: bool) -> String {
    let base = target.base_url.trim_end_matches('/');
    match &target.flavor {
        Flavor::Direct | Flavor::Foundry => format!("{base}/v1/messages"),
        Flavor::Bedrock => format!(
            "{base}/model/{}/{}",
            aws::path_segment(model),
            if stream {
                "invoke-with-response-stream"
            } else {
                "invoke"
            }
        ),
        Flavor::Vertex { project, region } => format!(
            "{base}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:{}",
            if stream {
                "streamRawPredict"
            } else {
                "rawPredict"
            }
        ),
    }
}

/// The body of `parts` for `target` as an [`Outgoing`] (what `hermes preview` prints).
pub fn outgoing(
    parts: &RequestParts<'_>,
    target: &Target,
    drops: &Drops,
) -> Result<Outgoing, TransportError> {
    let encoded = body::encode(parts, target, drops)
        .map_err(|e| TransportError::Request(format!("could not encode the request: {e}")))?;
    Ok(into_outgoing(encoded, parts.stream))
}

fn into_outgoing(encoded: Encoded, stream: bool) -> Outgoing {
    let mut stamp = vec![(PREFIX_KEY.to_owned(), RawJson::string(&encoded.digest))];
    if let Some(beta) = encoded.beta {
        // The beta header rides along to `send` (never stored: `send` takes it off).
        stamp.push((BETA_STAMP.to_owned(), RawJson::string(beta)));
    }
    Outgoing::new(encoded.body, stream, encoded.refusable, encoded.messages)
        .notes(encoded.notes)
        .stamp(stamp)
}

/// Carries the `anthropic-beta` header from `encode` to `send`; never stored.
const BETA_STAMP: &str = "hermes_anthropic_beta";

/// The wire message index an Anthropic error names (`messages.N…`).
fn named_message(body: &str) -> Option<usize> {
    let at = body.find("messages.")? + "messages.".len();
    let digits: String = body[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[async_trait::async_trait]
impl Wire for AnthropicWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        outgoing(parts, &self.target, &Drops::default())
    }

    async fn send(
        &self,
        request: &Outgoing,
        origin: Origin,
        on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        let url = self.url(&origin.model, request.stream);
        let mut headers = Vec::new();
        // Vertex and Bedrock carry the version in the body.
        if matches!(self.target.flavor, Flavor::Direct | Flavor::Foundry) {
            headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
        }
        let beta = request
            .stamp
            .iter()
            .find(|(k, _)| k == BETA_STAMP)
            .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()));
        if let Some(beta) = beta {
            headers.push(("anthropic-beta", beta));
        }
        tracing::debug!(url = %url, stream = request.stream, bytes = request.body.len(), "sending anthropic request");
        tracing::trace!(body = %String::from_utf8_lossy(&request.body), "anthropic request body");
        let response = self
            .client
            .post(
                &url,
                request.body.clone(),
                request.stream,
                self.auth.as_ref(),
                &headers,
            )
            .await?;
        let mut reply = if request.stream && self.target.flavor == Flavor::Bedrock {
            read_event_stream(response, origin, on_delta).await?
        } else if request.stream {
            read_stream(response, origin, on_delta).await?
        } else {
            let bytes = response.bytes().await.map_err(map_reqwest)?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|e| TransportError::Decode(format!("the reply is not UTF-8: {e}")))?;
            let (message, meta) = capture::capture_reply(text, origin).map_err(|e| match e {
                capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
                other => TransportError::Decode(format!("{other}: {}", snippet(text))),
            })?;
            Reply { message, meta }
        };
        // The conversation the reply's signed thinking is bound to.
        reply.message.extra.extend(
            request
                .stamp
                .iter()
                .filter(|(k, _)| k != BETA_STAMP)
                .cloned(),
        );
        Ok(reply)
    }

    fn recover(
        &self,
        parts: &RequestParts<'_>,
        status: Option<u16>,
        body: &str,
    ) -> Option<Recovery> {
        if status != Some(400) {
            return None;
        }
        let invalid = body.contains("Invalid `signature`")
            || body.contains("cannot be modified")
            || body.contains("bound to a different conversation");
        let expected = body.contains("Expected `thinking` or `redacted_thinking`");
        if !invalid && !expected {
            return None;
        }
        let encoded = body::encode(parts, &self.target, &Drops::default()).ok()?;
        let history = parts.history;
        let loop_start = history
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let mut drops = Drops::default();
        let note;
        if expected {
            drops.thinking_off = true;
            note = "the provider wants a thinking block before the tool loop's calls and none may be sent: resending once with thinking disabled (nothing stored changes)".to_owned();
        } else {
            let named = named_message(body)
                .and_then(|n| encoded.sources.get(n))
                .and_then(|sources| {
                    sources
                        .iter()
                        .copied()
                        .find(|&i| history.get(i).is_some_and(|m| m.role == Role::Assistant))
                });
            match named {
                Some(i) => {
                    drops.blocks_of.insert(i);
                    drops.thinking_off = i >= loop_start;
                }
                None => {
                    // Not told which: leave out every turn's blocks.
                    drops.blocks_of.extend(
                        history
                            .iter()
                            .enumerate()
                            .filter(|(_, m)| m.role == Role::Assistant)
                            .map(|(i, _)| i),
                    );
                    drops.thinking_off = true;
                }
            }
            note = format!(
                "the provider refused a stored thinking signature{}: resending once without those blocks{} (the stored history is unchanged, no verdict kept)",
                named.map_or(String::new(), |i| format!(" (message {i})")),
                if drops.thinking_off {
                    ", with thinking disabled"
                } else {
                    ""
                }
            );
        }
        let outgoing = outgoing(parts, &self.target, &drops).ok()?;
        Some(Recovery::new(outgoing, note))
    }
}

async fn read_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
) -> Result<Reply, TransportError> {
    let mut events = response.bytes_stream().eventsource();
    let mut capture = capture::StreamCapture::new();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| stream_error(e, capture.events(), "events"))?;
        if event.event.eq_ignore_ascii_case("error") {
            return Err(TransportError::AfterOk(error_event_text(event.data.trim())));
        }
        capture
            .feed(&event.event, &event.data, on_delta)
            .map_err(|e| match e {
                capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
                other => TransportError::Decode(other.to_string()),
            })?;
    }
    drop(events);
    let (message, meta) = capture.finish(origin).map_err(|e| match e {
        capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
        other => TransportError::Stream(other.to_string()),
    })?;
    Ok(Reply { message, meta })
}

/// Reads a Bedrock `invoke-with-response-stream` reply: AWS event-stream frames, each `chunk`
/// one Anthropic stream event ([`capture::FrameCapture`]).
async fn read_event_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
) -> Result<Reply, TransportError> {
    let mut body = response.bytes_stream();
    let mut capture = capture::FrameCapture::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            if e.is_timeout() {
                TransportError::Timeout(format!(
                    "the stream was silent for longer than the idle limit after {} frames",
                    capture.frames()
                ))
            } else {
                map_reqwest(e)
            }
        })?;
        capture.push(&chunk, on_delta)?;
    }
    drop(body);
    let (message, meta) = capture.finish(origin)?;
    Ok(Reply { message, meta })
}

#[cfg(test)]
mod tests;
