//! hermes-wire-bedrock: the AWS Bedrock Converse wire of hermes (`/model/{id}/converse` and
//! `/converse-stream`, provider `bedrock`), one wire as one crate (issue 51).
//!
//! What it holds: the request body written as botocore writes it (`body`, `pyjson`), what a
//! model id implies (`model`, reading the Anthropic wire's Claude tables), images (`media`),
//! reply and event-stream capture (`capture`, storing a Claude turn exactly as the Messages wire
//! does, through `hermes_wire_anthropic::signed`), the HTTP side with AWS auth (SigV4 or a
//! Bedrock API key, `hermes-aws`), its refusal reading and its one-time recoveries (this
//! module), and the wire's descriptor ([`DESCRIPTOR`], its [`PROVIDERS`]) which the engine
//! registers when its `bedrock` feature is on.

mod body;
mod capture;
mod descriptor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod media;
mod model;
mod pyjson;

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::StreamExt as _;
use hermes_core::transport::{OnDelta, Reply, SendResult, TransportError};
use hermes_core::{Origin, Outgoing, Recovery, RequestParts, Wire};

use hermes_providers::native::read::chunk_error;
use hermes_providers::native::read::read_whole;
use hermes_providers::{Auth, ChatTransport, Signer};
use hermes_wire_anthropic::signed::replay::signature_drops;

pub use body::{
    Bound, Drops, EncodeError, Encoded, PLACEHOLDER, TRANSFORMATIONS_PATH, Target, encode,
    operation_path,
};
pub use descriptor::{DESCRIPTOR, PROVIDERS};
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
    /// What signs each request (SigV4 or a Bedrock API key: [`hermes_aws::AwsSigner`]); none
    /// for a loopback endpoint.
    pub auth: Option<Arc<dyn Signer>>,
}

impl BedrockWire {
    /// The URL a request for `model` goes to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        url(&self.target.base_url, model, stream)
    }
}

/// The URL of a request for `model` (docs/spec.md §8a): `{base}/model/{id}/converse`, or
/// `/converse-stream`, the id percent-encoded as one path segment (`:` is `%3A`, an ARN's `/`
/// `%2F`), which SigV4 signs encoded once more (docs/providers.md "Bedrock SigV4 detail").
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
    Ok(body::encode(parts, target, drops)?.into_outgoing(parts.stream))
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
    hermes_providers::native::envelope::message_of(body)
}

#[async_trait::async_trait]
impl Wire for BedrockWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    /// Converse has no `none` (botocore's `ToolChoice`: auto, any, tool).
    fn takes_tool_choice_none(&self) -> bool {
        false
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        outgoing(parts, &self.target, &Drops::default())
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        let url = self.url(&origin.model, request.stream);
        let auth = self.auth.clone().map(Auth::Signed);
        let response = self
            .client
            .send_request("bedrock converse", &url, request, auth.as_ref(), &[])
            .await?;
        let mut reply = if request.stream {
            read_stream(response, origin, on_delta).await?
        } else {
            read_whole(response, origin, capture::capture_reply).await?
        };
        // The conversation the reply's signed reasoning is bound to.
        hermes_providers::native::keep_stamp(&mut reply, request, &[]);
        Ok(reply)
    }

    /// Reads Bedrock's error envelope (`{"message": …}`; a `ValidationException` is a 400) with
    /// the core classifier. Bedrock's own wording for a key the model does not know, `extraneous
    /// key [K] is not permitted`, names K as an unknown key.
    fn refusal_text<'b>(&self, body: &'b str, _: &[&'static str]) -> Option<Cow<'b, str>> {
        let mut text = error_message(body);
        let lower = text.to_lowercase();
        if let Some(at) = lower.find("extraneous key [") {
            let rest = &text[at + "extraneous key [".len()..];
            if let Some(key) = rest.split(']').next() {
                text = format!("{text} (unknown key {key})");
            }
        }
        Some(Cow::Owned(text))
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
            let refused = signature_drops(parts.history, &encoded.wire.sources, &message);
            let note = refused.note("stored reasoning", ", without the thinking request");
            drops.blocks_of = refused.blocks_of;
            drops.thinking_off = refused.thinking_off;
            note
        };
        let outgoing = outgoing(parts, &self.target, &drops).ok()?;
        Some(Recovery::new(outgoing, note))
    }
}

/// Reads a ConverseStream reply: event-stream frames (cut across chunks anywhere) into one
/// captured message ([`capture::ConverseStream`]).
async fn read_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: OnDelta<'_>,
) -> Result<Reply, TransportError> {
    let mut chunks = response.bytes_stream();
    let mut read = capture::ConverseStream::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| chunk_error(e, read.frames(), "frame"))?;
        read.push(&chunk, on_delta)?;
    }
    drop(chunks);
    read.finish(origin)
}

#[cfg(test)]
mod tests;
