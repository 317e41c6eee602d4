//! The AWS Bedrock Converse wire (`/model/{id}/converse` and `/converse-stream`): the request
//! body written as botocore writes it (`body`, `pyjson`), what a model id implies (`model`),
//! reply and event-stream capture (`capture`), and the HTTP side with SigV4, its refusal reading
//! and its one-time recoveries (this module).

pub mod body;
pub(crate) mod capture;
pub mod model;
mod pyjson;

use futures_util::StreamExt as _;
use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{Origin, Outgoing, RawJson, Recovery, RequestParts, Role, Wire};

use crate::anthropic::body::PREFIX_KEY;
use crate::aws::{AwsAuth, Clock, FrameReader};
use crate::transport::{Auth, ChatTransport, map_reqwest, snippet};

pub use body::{Drops, EncodeError, Encoded, PLACEHOLDER, Target, encode, encode_pretty};
pub use model::{BedrockModel, Policy};

/// The wire's id (its verdicts are kept under it).
pub const WIRE_ID: &str = "bedrock";

/// The Bedrock Converse wire bound to one runtime endpoint.
#[derive(Clone, Debug)]
pub struct BedrockWire {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go, and the configured `maxTokens`.
    pub target: Target,
    /// SigV4 credentials or a Bedrock API key; none for a loopback endpoint.
    pub auth: Option<AwsAuth>,
    /// The clock SigV4 signatures are dated by (`SystemTime::now` but in tests).
    pub clock: Clock,
}

impl BedrockWire {
    /// The URL a request for `model` goes to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        url(&self.target.base_url, model, stream)
    }
}

/// The URL of a request for `model` (SPEC §8a): `{base}/model/{id}/converse`, or
/// `/converse-stream`, the id percent-encoded as one path segment (`:` is `%3A`, an ARN's `/`
/// `%2F`), which SigV4 signs encoded once more (PROVIDERS.md "Bedrock SigV4 detail").
pub fn url(base_url: &str, model: &str, stream: bool) -> String {
    format!(
        "{}{}",
        base_url.trim_end_matches('/'),
        body::operation_path(model, stream)
    )
}

/// The body of `parts` for `target` as an [`Outgoing`] (what `hermes preview` prints), stamped
/// with the digest of the conversation it sends.
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
    Outgoing::new(encoded.body, stream, encoded.refusable, encoded.messages)
        .notes(encoded.notes)
        .stamp(vec![(
            PREFIX_KEY.to_owned(),
            RawJson::string(&encoded.digest),
        )])
}

/// What `hermes preview --explain` prints for `parts` on `target`, one line each: first the
/// operation and its path (`POST /model/anthropic.claude-opus-4-6-v1%3A0/converse`), then the
/// model's replay policy, the thinking mapping and what each assistant message sends.
pub fn explain(parts: &RequestParts<'_>, target: &Target) -> Result<Vec<String>, EncodeError> {
    body::encode(parts, target, &Drops::default()).map(|e| e.explain)
}

/// The words of a Bedrock error body: the `message` (or `Message`) of its JSON envelope
/// (`{"message": "…"}`, the type travels in a header), else the body itself.
fn error_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(default, alias = "Message")]
        message: Option<String>,
    }
    serde_json::from_str::<Envelope>(body.trim())
        .ok()
        .and_then(|e| e.message)
        .unwrap_or_else(|| body.to_owned())
}

/// The wire message index a Claude error passed through by Bedrock names (`messages.N…`).
fn named_message(text: &str) -> Option<usize> {
    let at = text.find("messages.")? + "messages.".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Calls the core refusal classifier (the default [`Wire::refused`]): the one place SPEC §6's
/// unknown-field phrases are read.
struct CoreClassifier;

#[async_trait::async_trait]
impl Wire for CoreClassifier {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, _: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        Err(TransportError::Request(
            "the classifier encodes nothing".into(),
        ))
    }

    async fn send(
        &self,
        _: &Outgoing,
        _: Origin,
        _: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        Err(TransportError::Request(
            "the classifier sends nothing".into(),
        ))
    }
}

#[async_trait::async_trait]
impl Wire for BedrockWire {
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
        tracing::debug!(url = %url, stream = request.stream, bytes = request.body.len(), "sending bedrock converse request");
        tracing::trace!(body = %String::from_utf8_lossy(&request.body), "bedrock converse request body");
        let auth = self.auth.clone().map(|a| Auth::Aws(a, self.clock));
        let response = self
            .client
            .post(
                &url,
                request.body.clone(),
                request.stream,
                auth.as_ref(),
                &[],
            )
            .await?;
        let mut reply = if request.stream {
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
        // The conversation the reply's signed reasoning is bound to.
        reply.message.extra.extend(request.stamp.iter().cloned());
        Ok(reply)
    }

    /// Reads Bedrock's error envelope (`{"message": …}`; a `ValidationException` is a 400) with
    /// the core classifier. Bedrock's own wording for a key the model does not know, `extraneous
    /// key [K] is not permitted`, names K as an unknown key.
    fn refused(
        &self,
        status: Option<u16>,
        body: &str,
        sent: &[&'static str],
        must_echo: bool,
    ) -> Option<Vec<&'static str>> {
        let mut text = error_message(body);
        let lower = text.to_lowercase();
        if let Some(at) = lower.find("extraneous key [") {
            let rest = &text[at + "extraneous key [".len()..];
            if let Some(key) = rest.split(']').next() {
                text = format!("{text} (unknown key {key})");
            }
        }
        CoreClassifier.refused(status, &text, sent, must_echo)
    }

    /// Two one-time recoveries from a 400, nothing persisted: a `ValidationException` about
    /// redacted or encrypted content resends without the `redactedContent` blocks (a message
    /// left empty carries [`PLACEHOLDER`]); an `Invalid signature`-style refusal resends
    /// without the refused turn's reasoning (every turn's when none is named), with thinking
    /// off when that turn is in the tool loop in flight; "Expected `thinking`…" resends with
    /// thinking off.
    fn recover(
        &self,
        parts: &RequestParts<'_>,
        status: Option<u16>,
        body: &str,
    ) -> Option<Recovery> {
        if status != Some(400) {
            return None;
        }
        let message = error_message(body);
        let lower = message.to_lowercase();
        let invalid = message.contains("Invalid `signature`")
            || lower.contains("invalid signature")
            || message.contains("cannot be modified")
            || message.contains("bound to a different conversation")
            || lower.contains("the first block must be thinking");
        let expected = message.contains("Expected `thinking` or `redacted_thinking`");
        let redacted =
            !invalid && !expected && (lower.contains("redacted") || lower.contains("encrypted"));
        if !invalid && !expected && !redacted {
            return None;
        }
        let encoded = body::encode(parts, &self.target, &Drops::default()).ok()?;
        let history = parts.history;
        let loop_start = history
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let mut drops = Drops::default();
        let note = if redacted {
            if !encoded.refusable.contains(&"redactedContent") {
                return None;
            }
            drops.redacted = true;
            "the provider refused redacted reasoning content: resending once without the redacted blocks (the stored history is unchanged, no verdict kept)".to_owned()
        } else if expected {
            drops.thinking_off = true;
            "the provider wants a thinking block before the tool loop's calls and none may be sent: resending once without the thinking request (the stored history is unchanged)".to_owned()
        } else {
            let named = named_message(&message)
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
            format!(
                "the provider refused stored reasoning{}: resending once without those blocks{} (the stored history is unchanged, no verdict kept)",
                named.map_or(String::new(), |i| format!(" (message {i})")),
                if drops.thinking_off {
                    ", without the thinking request"
                } else {
                    ""
                }
            )
        };
        let outgoing = outgoing(parts, &self.target, &drops).ok()?;
        Some(Recovery::new(outgoing, note))
    }
}

/// Reads a ConverseStream reply: event-stream frames (cut across chunks anywhere) into one
/// captured message. An exception frame is the provider's error and nothing is kept; a body
/// that ends inside a frame, or before `messageStop`, is a broken stream.
async fn read_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
) -> Result<Reply, TransportError> {
    let mut chunks = response.bytes_stream();
    let mut reader = FrameReader::new();
    let mut capture = capture::StreamCapture::new();
    // The first bytes, kept to explain a reply that is no event stream at all (a JSON error
    // body sent with status 200).
    let mut head: Vec<u8> = Vec::new();
    let not_a_stream = |head: &[u8], frames: usize| {
        (frames == 0)
            .then(|| String::from_utf8_lossy(head).trim().to_owned())
            .filter(|t| t.starts_with('{'))
            .map(|t| TransportError::AfterOk(error_message(&t)))
    };
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| {
            if e.is_timeout() {
                TransportError::Timeout(format!(
                    "the stream was silent for longer than the idle limit after {} frames",
                    reader.frames()
                ))
            } else {
                map_reqwest(e)
            }
        })?;
        if head.len() < 4096 {
            head.extend_from_slice(&chunk[..chunk.len().min(4096 - head.len())]);
        }
        reader.push(&chunk);
        loop {
            let frame = match reader.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => return Err(not_a_stream(&head, reader.frames()).unwrap_or(e)),
            };
            capture.feed(&frame, on_delta).map_err(|e| match e {
                capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
                other => TransportError::Decode(other.to_string()),
            })?;
        }
    }
    drop(chunks);
    if reader.pending() > 0 {
        return Err(not_a_stream(&head, reader.frames()).unwrap_or_else(|| {
            TransportError::Stream(format!(
                "the stream ended inside a frame ({} bytes after {} frames); the half turn is not stored",
                reader.pending(),
                reader.frames()
            ))
        }));
    }
    let (message, meta) = capture.finish(origin).map_err(|e| match e {
        capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
        other => TransportError::Stream(other.to_string()),
    })?;
    Ok(Reply { message, meta })
}

#[cfg(test)]
mod tests;
