//! The Gemini `generateContent` wire (AI Studio and Vertex AI): the request body (`body`), what
//! a Gemini model id implies for thinking (`model`), reply capture of whole replies and
//! `alt=sse` streams (`capture`), and the HTTP side with its auth and its reading of Google's
//! error envelope (this module).

pub mod body;
pub(crate) mod capture;
mod media;
pub mod model;

use eventsource_stream::{EventStreamError, Eventsource as _};
use futures_util::{Stream, StreamExt as _};
use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{Origin, Outgoing, RequestParts, Wire};
use serde::Deserialize;

use crate::transport::{Auth, ChatTransport, ERROR_BODY_LIMIT, snippet, stream_error};

pub use body::{
    AI_STUDIO_BASE, EncodeError, Encoded, Flavor, MADE_UP_ID_KEY, SIGNATURE_FIELD, Target, encode,
    encode_pretty, made_up_id, vertex_base_url,
};
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

/// The URL of a request to `target` for `model` (SPEC §8a): AI Studio
/// `{base}/models/{model}:generateContent`, Vertex `{base}/v1/projects/{project}/locations/
/// {region}/publishers/google/models/{model}:generateContent`; streamed, the method is
/// `:streamGenerateContent?alt=sse` (server-sent events, as google-genai 3.6 asks for them).
/// A leading `models/` on the id is dropped, and the rest is one path segment
/// ([`crate::segment::google`]: no id adds a segment, query or method). The API key never goes
/// in the URL.
pub fn url(target: &Target, model: &str, stream: bool) -> String {
    let base = target.base_url.trim_end_matches('/');
    let model = crate::segment::google(model.strip_prefix("models/").unwrap_or(model));
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

/// The path (and query) of a URL, for the `POST` line of `--explain`.
fn path_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    after_scheme.find('/').map_or("/", |i| &after_scheme[i..])
}

/// The body of `parts` for `target` as an [`Outgoing`].
pub fn outgoing(parts: &RequestParts<'_>, target: &Target) -> Result<Outgoing, TransportError> {
    let encoded = body::encode(parts, target)?;
    Ok(Outgoing::new(
        encoded.body,
        parts.stream,
        encoded.refusable,
        encoded.messages,
    )
    .notes(encoded.notes)
    .carriers(encoded.carriers))
}

/// What `hermes preview --explain` prints for `parts` on `target`, one line each: first
/// `POST <path>` (`POST /v1beta/models/gemini-3-pro-preview:generateContent`), then the target,
/// the thinking mapping and what each message sends.
pub fn explain(parts: &RequestParts<'_>, target: &Target) -> Result<Vec<String>, EncodeError> {
    let encoded = body::encode(parts, target)?;
    let url = url(target, &parts.decision.target.model, parts.stream);
    Ok(std::iter::once(format!("POST {}", path_of(&url)))
        .chain(encoded.explain)
        .collect())
}

/// Google's error envelope: `{"error":{"code","message","status","details":[…]}}`, or the
/// same wrapped in a one-element array (the OpenAI-compatible endpoint's form, PROVIDERS.md).
#[derive(Deserialize)]
struct Envelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    details: Vec<Detail>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    #[serde(default)]
    field_violations: Vec<Violation>,
}

#[derive(Deserialize)]
struct Violation {
    #[serde(default)]
    description: Option<String>,
}

/// The error of a body: its message and field-violation descriptions, in order.
fn error_texts(body: &str) -> Option<(String, Vec<String>)> {
    let body = body.trim();
    // A derived struct also reads a JSON array positionally, so the array form is tried
    // first where the body is one.
    let envelope = if body.starts_with('[') {
        serde_json::from_str::<Vec<Envelope>>(body)
            .ok()
            .and_then(|v| v.into_iter().next())?
    } else {
        serde_json::from_str::<Envelope>(body).ok()?
    };
    let descriptions = envelope
        .error
        .details
        .into_iter()
        .flat_map(|d| d.field_violations)
        .filter_map(|v| v.description)
        .collect();
    Some((envelope.error.message.unwrap_or_default(), descriptions))
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

/// A missing or refused thought signature, told in one line (SPEC §5: hermes never answers
/// it by inventing a signature).
fn signature_error_line(body: &str) -> Option<String> {
    let message = error_texts(body).map_or_else(|| body.to_owned(), |(m, _)| m);
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

    async fn send(
        &self,
        request: &Outgoing,
        origin: Origin,
        on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        let url = self.url(&origin.model, request.stream);
        tracing::debug!(url = %url, stream = request.stream, bytes = request.body.len(), "sending gemini request");
        tracing::trace!(body = %String::from_utf8_lossy(&request.body), "gemini request body");
        let response = self
            .client
            .post(
                &url,
                request.body.clone(),
                request.stream,
                self.auth.as_ref(),
                &[],
            )
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
        if request.stream {
            read_sse(response.bytes_stream(), origin, on_delta, |e, seen| {
                stream_error(e, seen, "chunk")
            })
            .await
        } else {
            crate::reply::read_whole(response, origin, capture::capture_reply).await
        }
    }

    /// Reads Google's envelope (`{"error":{…}}` or `[{"error":{…}}]`): each name an
    /// `Unknown name "X" … Cannot find field.` message or field violation gives is handed to
    /// the core classifier (`hermes_core::refusal::classify_fields`, the one reader of SPEC §6's
    /// phrases) as an unknown field, so a refused `thoughtSignature` (either spelling) is a
    /// refusal with one retry; the rest of the body is not read for field names.
    fn refused(
        &self,
        status: Option<u16>,
        body: &str,
        sent: &[&'static str],
        must_echo: bool,
    ) -> Option<Vec<&'static str>> {
        let (message, descriptions) = error_texts(body)?;
        let mut names = unknown_names(&message);
        for d in &descriptions {
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
        if text.is_empty() {
            return None;
        }
        hermes_core::refusal::classify_fields(status, &text.join("; "), sent, must_echo)
    }
}

/// Reads an `alt=sse` reply (its bytes cut anywhere) into one captured message: each event's
/// data is one `GenerateContentResponse`. An `error` payload or `event: error` is the
/// provider's error after the 200; a stream that ends without a `finishReason` is broken; in
/// both cases nothing is stored. `stream_err` maps a failed read (`seen` chunks so far).
pub(crate) async fn read_sse<S, B, E>(
    bytes: S,
    origin: Origin,
    on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    stream_err: impl Fn(EventStreamError<E>, usize) -> TransportError,
) -> Result<Reply, TransportError>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    // The first bytes, kept to explain a reply that is no event stream at all (a JSON error
    // body sent with status 200).
    let mut head: Vec<u8> = Vec::new();
    let mut events = bytes
        .inspect(|chunk| {
            if let Ok(chunk) = chunk {
                let chunk = chunk.as_ref();
                let room = ERROR_BODY_LIMIT.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
        })
        .eventsource();
    let mut capture = capture::TurnCapture::new();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| stream_err(e, capture.chunks()))?;
        let data = event.data.trim();
        if event.event.eq_ignore_ascii_case("error") {
            return Err(TransportError::AfterOk(crate::transport::error_event_text(
                data,
            )));
        }
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        capture.feed(data, on_delta).map_err(|e| match e {
            capture::CaptureError::Provider(err) => TransportError::AfterOk(err),
            capture::CaptureError::Malformed(m) => {
                TransportError::Decode(format!("{m}: {}", snippet(data)))
            }
        })?;
    }
    drop(events);
    if !capture.finished() && capture.chunks() == 0 {
        let text = String::from_utf8_lossy(&head);
        let text = text.trim();
        if let Some((message, _)) = error_texts(text) {
            return Err(TransportError::AfterOk(message));
        }
        if !text.is_empty() {
            return Err(TransportError::Stream(format!(
                "the reply is not an event stream: {}",
                snippet(text)
            )));
        }
    }
    let (message, meta) = capture
        .finish(origin)
        .map_err(capture::CaptureError::at_end)?;
    Ok(Reply { message, meta })
}

#[cfg(test)]
mod tests;
