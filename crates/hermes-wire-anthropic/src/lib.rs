//! hermes-wire-anthropic: the Anthropic Messages wire of hermes, one wire as one crate (issue 51,
//! after sqlx's one crate per driver). Its doors: the direct API (`anthropic`), Vertex AI
//! (`vertex-anthropic`), Azure Foundry (`foundry-anthropic`), the `/anthropic` relays, and with
//! the `bedrock` feature Bedrock InvokeModel (`bedrock-anthropic`: AWS auth and event-stream
//! frames through `hermes-aws`; off, no AWS crate is built).
//!
//! What it holds: the request body (`body`), signed thinking's capture and replay rules
//! (`signed`: which carriers a turn holds, which go back, bound to the prefix they were made
//! after), what a Claude model id implies (`model`), images (`media`), the provider's own
//! compaction (`compaction`), reply capture (`capture`: SSE, or Bedrock's AWS event stream), a
//! client's Messages request read into the message model (`inbound`, for a gateway's Messages
//! door, with the rule for where a client's own thinking blocks may go), the HTTP side with its
//! auth and its one-time recovery from `Invalid signature` (this module), and the wire's
//! descriptor ([`DESCRIPTOR`], its [`PROVIDERS`]) which the engine registers when its
//! `anthropic` feature is on. The Bedrock Converse wire (`hermes-wire-bedrock`) reads its model
//! tables, body pieces and signed-thinking rules. It is built on hermes-core and the native-wire
//! kit of hermes-providers (`hermes_providers::native`).

pub mod body;
pub mod capture;
pub mod compaction;
mod descriptor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod inbound;
mod media;
pub mod model;
pub mod signed;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;

use hermes_core::transport::{OnDelta, SendResult, TransportError};
use hermes_core::{Message, Origin, ReplyMeta};
use hermes_core::{Outgoing, Recovery, RequestParts, Wire};
use hermes_providers::aws;
use hermes_providers::native::sse::{self, SseTurn};
use hermes_providers::{Auth, ChatTransport};

use crate::signed::carriers::CaptureError;
use crate::signed::replay::signature_drops;

pub use body::{
    ANTHROPIC_VERSION, BEDROCK_VERSION, BINDING_BETA, Drops, Encoded, Family, Flavor,
    PREFIX_BINDING_KEY, PREFIX_KEY, Target, account_of,
};
pub use capture::TRANSFORMATIONS_KEY;
pub use descriptor::{DESCRIPTOR, PROVIDERS};
pub use model::BOUND_FROM;

/// The wire's id (its verdicts are kept under it).
pub const WIRE_ID: &str = "anthropic";

/// The variable holding a Microsoft Entra ID access token for Azure Foundry, sent as
/// `Authorization: Bearer` instead of the `ANTHROPIC_FOUNDRY_API_KEY` key: Claude Code's name
/// for it (code.claude.com/docs/en/microsoft-foundry, "Microsoft Entra ID authentication"), and
/// the header anthropic-sdk-python's `AnthropicFoundry` sends for its `azure_ad_token_provider`
/// (`src/anthropic/lib/foundry.py`, `_prepare_options`: `Authorization: Bearer {token}` and no
/// key header).
pub const FOUNDRY_TOKEN_VAR: &str = "ANTHROPIC_FOUNDRY_AUTH_TOKEN";

/// The Anthropic Messages wire bound to one target.
#[derive(Clone, Debug)]
pub struct AnthropicWire {
    /// The shared client.
    pub client: ChatTransport,
    /// Where requests go.
    pub target: Target,
    /// The key (`x-api-key`), token (bearer: Vertex, and Foundry with an Entra ID token) or AWS
    /// auth (Bedrock: [`Auth::Signed`], SigV4 over the exact URL and body); none for a loopback
    /// endpoint.
    pub auth: Option<Auth>,
}

impl AnthropicWire {
    /// The URL a request goes to.
    pub fn url(&self, model: &str, stream: bool) -> String {
        url(&self.target, model, stream)
    }
}

/// The URL of a request to `target` for `model` (docs/spec.md §8a). On Bedrock the model id (or
/// inference-profile ARN) is one percent-encoded path segment ([`aws::path_segment`]: `:` is
/// `%3A`, `/` is `%2F`), as boto3 sends it (`tests/it/sdk_bedrock.rs` compares the two).
/// anthropic-sdk-python 2.16.0's `AnthropicBedrock` leaves `:` (and `;`) bare instead
/// (`urllib.parse.quote(model, safe=":;")`, `anthropic/lib/bedrock/_client.py` line 68): the
/// same resource to Bedrock, but hermes follows the AWS SDK, whose signing it is proven against.
/// On Vertex the id is one segment too ([`hermes_providers::native::segment::google`], `@` kept for versions).
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
            "{base}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{}:{}",
            hermes_providers::native::segment::google(model),
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
    Ok(body::encode(parts, target, drops)?.into_outgoing(parts.stream))
}

/// Carries the `anthropic-beta` header from `encode` to `send`; never stored.
const BETA_STAMP: &str = "hermes_anthropic_beta";

/// Carries a gateway client's `anthropic-version` from `encode` to `send`; never stored.
const VERSION_STAMP: &str = "hermes_anthropic_version";

#[async_trait::async_trait]
impl Wire for AnthropicWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        outgoing(parts, &self.target, &Drops::default())
    }

    /// A gateway client's own betas, server tools and thinking object go where its own thinking
    /// blocks go (one rule, [`inbound::passes_client_blocks`]): Claude hosts (direct, Vertex,
    /// Foundry, Bedrock), never an Anthropic-compatible relay.
    fn takes_passthrough(&self, dialect: hermes_core::Dialect) -> bool {
        dialect == hermes_core::Dialect::AnthropicMessages
            && inbound::passes_client_blocks(WIRE_ID, &self.target.base_url)
    }

    /// A provider checkpoint's `compaction` block is this wire's to replay (to its minter) or
    /// to render as hermes' own checkpoint ([`body::encode`]; docs/spec.md §7).
    fn takes_native_compaction(&self) -> bool {
        true
    }

    /// On a Claude host (the hosts that take a Messages client's fields as written), the
    /// on-demand compaction ([`compaction::NATIVE`]); relays get hermes' own.
    fn native_compaction(&self) -> Option<hermes_core::NativeCompaction> {
        self.takes_passthrough(hermes_core::Dialect::AnthropicMessages)
            .then_some(compaction::NATIVE)
    }

    /// The descriptor's lines, with this wire's account: a bound model's stored blocks are
    /// read against the account requests go under, as a request would.
    fn explain(&self, parts: &RequestParts<'_>) -> Option<Vec<String>> {
        let lines = match body::encode(parts, &self.target, &Drops::default()) {
            Ok(encoded) => encoded.explain,
            Err(e) => vec![format!("could not encode the request: {e}")],
        };
        let url = self.url(&parts.decision.target.model, parts.stream);
        Some(
            std::iter::once(format!("POST {url}"))
                .chain(lines)
                .collect(),
        )
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        let url = self.url(&origin.model, request.stream);
        let mut headers = Vec::new();
        let stamped = |key: &str| {
            request
                .stamp
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
        };
        // Vertex and Bedrock carry the version in the body; a gateway client's own version
        // goes as it asked.
        if matches!(self.target.flavor, Flavor::Direct | Flavor::Foundry) {
            let version = stamped(VERSION_STAMP).unwrap_or_else(|| ANTHROPIC_VERSION.to_owned());
            headers.push(("anthropic-version", version));
        }
        let beta = stamped(BETA_STAMP);
        if let Some(beta) = beta {
            headers.push(("anthropic-beta", beta));
        }
        let response = self
            .client
            .send_request("anthropic", &url, request, self.auth.as_ref(), &headers)
            .await?;
        let mut reply = if request.stream && self.target.flavor == Flavor::Bedrock {
            read_event_stream(response, origin, on_delta).await?
        } else {
            let (turn, whole) = (capture::StreamCapture::new, capture::capture_reply);
            sse::read_reply(response, request, turn, whole, origin, on_delta, "event").await?
        };
        // The conversation the reply's signed thinking is bound to.
        hermes_providers::native::keep_stamp(&mut reply, request, &[BETA_STAMP, VERSION_STAMP]);
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
        // Bedrock (and some models elsewhere) refuse feature flags they do not know with
        // `invalid beta flag` (anthropics/claude-code#49648, #56595: the flags Claude Code
        // sends): a client's own flags are left out once; the wire's own stay.
        if body.to_ascii_lowercase().contains("invalid beta flag")
            && self.takes_passthrough(hermes_core::Dialect::AnthropicMessages)
            && !parts.passthrough.betas.is_empty()
        {
            let drops = Drops {
                client_betas: true,
                ..Drops::default()
            };
            let outgoing = outgoing(parts, &self.target, &drops).ok()?;
            return Some(Recovery::new(
                outgoing,
                format!(
                    "the provider refused a feature flag the client asked for ({}): resending once without the client's anthropic-beta values",
                    parts.passthrough.betas.join(", ")
                ),
            ));
        }
        let invalid = body.contains("Invalid `signature`")
            || body.contains("cannot be modified")
            || body.contains("bound to a different conversation");
        let expected = body.contains("Expected `thinking` or `redacted_thinking`");
        if !invalid && !expected {
            return None;
        }
        let encoded = body::encode(parts, &self.target, &Drops::default()).ok()?;
        let mut drops = Drops::default();
        let note;
        if expected {
            drops.thinking_off = true;
            note = "the provider wants a thinking block before the tool loop's calls and none may be sent: resending once with thinking disabled (nothing stored changes)".to_owned();
        } else {
            let refused = signature_drops(parts.history, &encoded.wire.sources, body);
            note = refused.note("a stored thinking signature", ", with thinking disabled");
            drops.blocks_of = refused.blocks_of;
            drops.thinking_off = refused.thinking_off;
        }
        let outgoing = outgoing(parts, &self.target, &drops).ok()?;
        Some(Recovery::new(outgoing, note))
    }
}

/// A Messages SSE reply, read by [`sse::read_sse`]: each event one Messages stream event.
impl SseTurn for capture::StreamCapture {
    fn seen(&self) -> usize {
        self.events()
    }

    fn take(
        &mut self,
        event: &str,
        data: &str,
        on_delta: OnDelta<'_>,
    ) -> Result<bool, TransportError> {
        self.feed(event, data, on_delta)
            .map_err(CaptureError::mid_stream)?;
        Ok(false)
    }

    fn end(self, origin: Origin, _: &str) -> Result<(Message, ReplyMeta), TransportError> {
        self.finish(origin).map_err(CaptureError::at_end)
    }
}

#[cfg(feature = "bedrock")]
/// Reads a Bedrock `invoke-with-response-stream` reply: AWS event-stream frames, each `chunk`
/// one Anthropic stream event ([`capture::FrameCapture`]).
async fn read_event_stream(
    response: reqwest::Response,
    origin: Origin,
    on_delta: OnDelta<'_>,
) -> SendResult {
    use futures_util::StreamExt as _;
    use hermes_providers::native::read::chunk_error;
    let mut body = response.bytes_stream();
    let mut capture = capture::FrameCapture::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| chunk_error(e, capture.frames(), "frame"))?;
        capture.push(&chunk, on_delta)?;
    }
    drop(body);
    let (message, meta) = capture.finish(origin)?;
    Ok(hermes_core::transport::Reply { message, meta })
}

/// Without the `bedrock` feature there is no Bedrock door (`bedrock-anthropic` is not listed),
/// so no event stream to read.
#[cfg(not(feature = "bedrock"))]
async fn read_event_stream(
    _response: reqwest::Response,
    _origin: Origin,
    _on_delta: OnDelta<'_>,
) -> SendResult {
    Err(TransportError::Request(
        "Bedrock InvokeModel needs hermes-wire-anthropic's `bedrock` feature, which this build lacks"
            .to_owned(),
    ))
}

#[cfg(test)]
mod tests;
