//! hermes-wire-gemini: the Gemini `generateContent` wire of hermes (AI Studio and Vertex AI),
//! one wire as one crate (issue 51, after sqlx's one crate per driver). Its door is Google's
//! `generateContent` / `streamGenerateContent?alt=sse` on AI Studio (`gemini`: the
//! `x-goog-api-key` header) and Vertex AI (`vertex-gemini`: a bearer token).
//!
//! What it holds: the request body (`body`: [`encode`], [`Target`], [`Flavor`]), what a Gemini
//! model id implies for thinking (`model`: [`GeminiModel`], [`thinking_plan`]), images, in messages and in tool
//! results (`media`), reply capture of whole replies and `alt=sse` streams (`capture`, read
//! through the native-wire kit's SSE loop), the HTTP side with its auth and its reading of
//! Google's error envelope ([`GeminiWire`], [`url`], [`explain`]), and the wire's descriptor
//! ([`DESCRIPTOR`], its [`PROVIDERS`]) which the engine registers when its `gemini` feature is
//! on. It is built on hermes-core and the native-wire kit of hermes-providers
//! (`hermes_providers::native`).

mod body;
mod capture;
mod descriptor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod media;
mod model;

use std::borrow::Cow;

use hermes_core::transport::{OnDelta, SendResult, TransportError};
use hermes_core::{Message, Origin, Outgoing, ReplyMeta, RequestParts, Wire};

use hermes_providers::native::envelope;
use hermes_providers::native::reply::CaptureError;
use hermes_providers::native::reply::snippet;
use hermes_providers::native::sse::{self, SseTurn};
use hermes_providers::{Auth, ChatTransport};

pub use body::{
    AI_STUDIO_BASE, EncodeError, Encoded, Flavor, MADE_UP_ID_KEY, Merged, SIGNATURE_FIELD,
    STEER_BRIDGE, Target, encode, made_up_id, vertex_base_url,
};
pub use descriptor::{DESCRIPTOR, PROVIDERS};
pub use model::{GeminiModel, Thinking, ThinkingPlan, Variant, output_ceiling, thinking_plan};

/// The wire's id (its verdicts are kept under it).
pub const WIRE_ID: &str = "gemini";

/// The Gemini wire bound to one target.
#[derive(Clone, Debug)]
pub struct GeminiWire {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go.
    pub target: Target,
    /// The key (AI Studio: `Auth::Header("x-goog-api-key", key)`) or token (Vertex:
    /// `Auth::Bearer`); none for a loopback endpoint. Never part of the URL.
    pub auth: Option<Auth>,
}

impl GeminiWire {
    /// The URL a request for `model` goes to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        url(&self.target, model, stream)
    }
}

/// The URL of a request to `target` for `model` (docs/spec.md §8a): AI Studio
/// `{base}/models/{model}:generateContent`, Vertex `{base}/v1/projects/{project}/locations/
/// {region}/publishers/google/models/{model}:generateContent`; streamed, the method is
/// `:streamGenerateContent?alt=sse` (server-sent events, as google-genai 3.6 asks for them).
/// A leading `models/` on the id is dropped, and the rest is one path segment
/// ([`hermes_providers::native::segment::google`]: no id adds a segment, query or method). The API key never goes
/// in the URL.
pub fn url(target: &Target, model: &str, stream: bool) -> String {
    let base = target.base_url.trim_end_matches('/');
    let model =
        hermes_providers::native::segment::google(model.strip_prefix("models/").unwrap_or(model));
    let method = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    match &target.flavor {
        Flavor::AiStudio => format!("{base}/models/{model}:{method}"),
        Flavor::Vertex { project, region } => format!(
            "{base}/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:{method}"
        ),
    }
}

/// The body of `parts` for `target` as an [`Outgoing`].
pub fn outgoing(parts: &RequestParts<'_>, target: &Target) -> Result<Outgoing, TransportError> {
    Ok(body::encode(parts, target)?.into_outgoing(parts.stream))
}

/// What `hermes preview --explain` prints for `parts` on `target`, one line each: first
/// `POST <path>` (`POST /v1beta/models/gemini-3-pro-preview:generateContent`), then the target,
/// the thinking mapping and what each message sends.
pub fn explain(parts: &RequestParts<'_>, target: &Target) -> Result<Vec<String>, EncodeError> {
    let encoded = body::encode(parts, target)?;
    let url = url(target, &parts.decision.target.model, parts.stream);
    Ok(hermes_providers::native::explain_with_post(
        &url,
        encoded.explain,
    ))
}

/// The names an `Invalid JSON payload received. Unknown name "X" at '…': Cannot find field.`
/// text gives, in order.
fn unknown_names(text: &str) -> Vec<String> {
    const MARK: &str = "Unknown name \"";
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        rest = &rest[at + MARK.len()..];
        if let Some(end) = rest.find('"') {
            names.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    names
}

/// True for a field name Google reports in either spelling (`thoughtSignature`,
/// `thought_signature`) of `field`.
fn same_field(reported: &str, field: &str) -> bool {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_')
            .flat_map(char::to_lowercase)
            .collect()
    };
    fold(reported) == fold(field)
}

/// A missing or refused thought signature, told in one line (docs/spec.md §5: hermes never answers
/// it by inventing a signature).
fn signature_error_line(body: &str) -> Option<String> {
    let message = envelope::enveloped(body).map_or_else(|| body.to_owned(), |e| e.message_or(""));
    let lower = message.to_lowercase();
    let about_signature =
        lower.contains("thought_signature") || lower.contains("thought signature");
    let refused =
        lower.contains("missing") || lower.contains("corrupted") || lower.contains("invalid");
    if !about_signature || !refused || lower.contains("unknown name") {
        return None;
    }
    let said: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(format!(
        "Gemini refused a function call of the history for its thought signature: {said} — hermes never invents a signature; the call was made by another model or host, or imported without one (switch back to the model that made it, or start a new session)"
    ))
}

#[async_trait::async_trait]
impl Wire for GeminiWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        outgoing(parts, &self.target)
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        let url = self.url(&origin.model, request.stream);
        let response = self
            .client
            .send_request("gemini", &url, request, self.auth.as_ref(), &[])
            .await
            .map_err(|e| match e {
                TransportError::Http {
                    status: 400,
                    body,
                    retry_after,
                } => TransportError::Http {
                    status: 400,
                    body: signature_error_line(&body).unwrap_or(body),
                    retry_after,
                },
                other => other,
            })?;
        let (turn, whole) = (capture::TurnCapture::new, capture::capture_reply);
        sse::read_reply(response, request, turn, whole, origin, on_delta, "chunk").await
    }

    /// Reads Google's envelope (`{"error":{…}}` or `[{"error":{…}}]`): each name an
    /// `Unknown name "X" … Cannot find field.` message or field violation gives is handed to
    /// the core classifier (`hermes_core::refusal::classify_fields`, the one reader of docs/spec.md
    /// §6's phrases) as an unknown field, so a refused `thoughtSignature` (either spelling) is a
    /// refusal with one retry; the rest of the body is not read for field names.
    fn refusal_text<'b>(&self, body: &'b str, sent: &[&'static str]) -> Option<Cow<'b, str>> {
        let error = envelope::enveloped(body)?;
        let mut names = unknown_names(error.message.as_deref().unwrap_or_default());
        for d in &error.violations() {
            names.extend(unknown_names(d));
        }
        let text: Vec<String> = names
            .iter()
            .filter_map(|name| {
                sent.iter()
                    .find(|field| same_field(name, field))
                    .map(|field| format!("unknown field {field}"))
            })
            .collect();
        (!text.is_empty()).then(|| Cow::Owned(text.join("; ")))
    }
}

/// An `alt=sse` reply (its bytes cut anywhere), read by [`sse::read_sse`]: each event's data
/// is one `GenerateContentResponse`. An `error` payload or `event: error` is the provider's
/// error after the 200, and so is Google's error envelope sent as the whole body with status
/// 200; a stream that ends without a `finishReason` is broken; in each case nothing is stored.
impl SseTurn for capture::TurnCapture {
    fn seen(&self) -> usize {
        self.chunks()
    }

    fn take(&mut self, _: &str, data: &str, on_delta: OnDelta<'_>) -> Result<bool, TransportError> {
        sse::feed_json(data, |data| self.feed(data, on_delta))
    }

    fn end(self, origin: Origin, head: &str) -> Result<(Message, ReplyMeta), TransportError> {
        if !self.finished() && self.chunks() == 0 {
            if let Some(error) = envelope::enveloped(head) {
                return Err(TransportError::AfterOk(error.message_or("")));
            }
            if !head.is_empty() {
                return Err(TransportError::Stream(format!(
                    "the reply is not an event stream: {}",
                    snippet(head)
                )));
            }
        }
        self.finish(origin).map_err(CaptureError::at_end)
    }
}

#[cfg(test)]
mod tests;
