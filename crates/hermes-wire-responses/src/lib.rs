//! hermes-wire-responses: the OpenAI Responses wire of hermes (`POST {base}/responses`), one
//! wire as one crate (issue 51, after sqlx's one crate per driver). Its door is the
//! `openai-responses` provider (a bearer key; reasoning items kept encrypted between turns,
//! `store: false`), and `POST {base}/responses/compact` for provider-native compaction.
//!
//! What it holds: the request body (`body`: [`encode`], [`encode_for`], [`Drops`]), what an
//! OpenAI model id implies for reasoning ([`model`], shared with the chat wire's sampling rules
//! in hermes-providers), images (`media`), reply capture of whole replies and SSE streams
//! (`capture`, read through the native-wire kit's SSE loop), provider-native compaction
//! ([`compaction`]), a client's Responses request read into the message model ([`inbound`], for
//! a gateway's Responses door and the conformance suite), the HTTP side with its bearer auth,
//! its reading of OpenAI's error envelope and its one-time recovery from foreign encrypted
//! reasoning ([`ResponsesWire`], [`url`], [`explain`]), and the wire's descriptor
//! ([`DESCRIPTOR`], its [`PROVIDERS`]) which the engine registers when its `responses` feature
//! is on. It is built on hermes-core and the native-wire kit of hermes-providers
//! (`hermes_providers::native`).

mod body;
mod capture;
pub mod compaction;
mod descriptor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod inbound;
mod media;
/// What an OpenAI model id implies for reasoning (shared with the chat wire's sampling rules).
pub mod model {
    pub use hermes_providers::native::openai_model::*;
}

use std::borrow::Cow;

use hermes_core::transport::{OnDelta, SendResult, TransportError};
use hermes_core::{Message, Origin, Outgoing, Recovery, ReplyMeta, RequestParts, Role, Wire};

use hermes_providers::native::envelope;
use hermes_providers::native::reply::CaptureError;
use hermes_providers::native::sse::{self, SseTurn};
use hermes_providers::{Auth, ChatTransport};

pub use body::{DEFAULT_BASE, Drops, ENCRYPTED_FIELD, EncodeError, Encoded, encode, encode_for};
pub use capture::{MESSAGE_ITEMS_KEY, REASONING_ITEMS_KEY};
pub use descriptor::{DESCRIPTOR, PROVIDERS};
pub use model::{ModelKind, ReasoningPlan, Vocabulary, model_kind, reasoning_plan};

/// The wire's id (its verdicts are kept under it).
pub const WIRE_ID: &str = "openai-responses";

/// The Responses wire bound to one base URL.
#[derive(Clone, Debug)]
pub struct ResponsesWire {
    /// The shared client.
    pub client: ChatTransport,
    /// The base URL ([`DEFAULT_BASE`] for OpenAI); requests go to `{base}/responses`.
    pub base_url: String,
    /// The key (`Auth::Bearer`); none for a loopback endpoint.
    pub auth: Option<Auth>,
}

impl ResponsesWire {
    /// The URL requests go to.
    pub fn url(&self) -> String {
        url(&self.base_url)
    }

    /// The account requests go under: a digest of the bearer key ([`hermes_providers::native::account_of`],
    /// never the key), `None` without one.
    pub fn account(&self) -> Option<String> {
        match &self.auth {
            Some(Auth::Bearer(key)) => Some(hermes_providers::native::account_of(key)),
            _ => None,
        }
    }
}

/// `{base}/responses` (docs/spec.md §8a).
pub fn url(base: &str) -> String {
    format!("{}/responses", base.trim_end_matches('/'))
}

/// The body of `parts` as an [`Outgoing`], leaving out what `drops` names.
pub fn outgoing(parts: &RequestParts<'_>, drops: &Drops) -> Result<Outgoing, TransportError> {
    outgoing_for(parts, drops, None)
}

/// [`outgoing`] under `account` ([`encode_for`]). A compaction request — standalone (sent to
/// `/responses/compact`, never streamed) or server-side (`context_management`) — stamps its
/// reply with the account ([`compaction::ACCOUNT_KEY`]): the item goes back to it only.
fn outgoing_for(
    parts: &RequestParts<'_>,
    drops: &Drops,
    account: Option<&str>,
) -> Result<Outgoing, TransportError> {
    let standalone = compaction::asked(parts.passthrough);
    let stream = parts.stream && !standalone;
    let mut out = body::encode_for(parts, drops, account)?.into_outgoing(stream);
    let mut stamp = Vec::new();
    if standalone {
        stamp.push((
            compaction::COMPACT_MARKER.to_owned(),
            hermes_core::RawJson::from_text("true".to_owned())
                .unwrap_or_else(|_| unreachable!("a JSON literal")),
        ));
    }
    if (standalone || compaction::forwarded(parts.passthrough).is_some())
        && let Some(account) = account
    {
        stamp.push((
            compaction::ACCOUNT_KEY.to_owned(),
            hermes_core::RawJson::string(account),
        ));
    }
    if !stamp.is_empty() {
        out = out.stamp(stamp);
    }
    Ok(out)
}

/// Whether `host` is OpenAI's own API (`api.openai.com` and its regional hosts), or a loopback
/// or private endpoint trusted as such: the one host rule for what only OpenAI's Responses API
/// does — run its built-in tools, answer `POST /responses/compact` ([`is_openai_api`]).
pub fn is_openai(host: &hermes_core::TargetHost) -> bool {
    host.is_local_endpoint() || host.is_within("api.openai.com")
}

/// Whether `base_url` is OpenAI's own Responses API ([`is_openai`]), which runs its built-in
/// tools and has a compaction of its own.
pub fn is_openai_api(base_url: &str) -> bool {
    hermes_core::TargetHost::from_base_url(base_url).is_some_and(|h| is_openai(&h))
}

/// What `hermes preview --explain` prints for `parts` sent to `base`, one line each: first
/// `POST <path>` (`POST /v1/responses`), then the model, the reasoning mapping and what each
/// message sends.
pub fn explain(parts: &RequestParts<'_>, base: &str) -> Result<Vec<String>, EncodeError> {
    let encoded = body::encode(parts, &Drops::default())?;
    Ok(hermes_providers::native::explain_with_post(
        &url(base),
        encoded.explain,
    ))
}

/// The words of an error body: OpenAI's envelope (`{"error":{"message","type","param","code"}}`)
/// message and its `param`, else the body.
fn error_text(body: &str) -> String {
    match envelope::enveloped(body) {
        Some(e) => {
            let mut text = e.message.unwrap_or_default();
            if let Some(p) = e.param.filter(|p| !p.is_empty()) {
                text.push_str(&format!(" (param {p})"));
            }
            text
        }
        None => body.to_owned(),
    }
}

/// The reasoning item id an `The encrypted content for item rs_… could not be verified` error
/// names.
fn unverified_item(body: &str) -> Option<String> {
    let text = error_text(body);
    let lower = text.to_lowercase();
    if !lower.contains("encrypted content") || !lower.contains("could not be verified") {
        return None;
    }
    let at = text.find("for item ")? + "for item ".len();
    let id: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// The history indices whose reasoning items go with the item `id`: every turn of the same
/// origin as the turn that stored it (that turn alone when it has no origin).
fn same_origin_turns(history: &[Message], id: &str) -> Option<Vec<usize>> {
    let holder = history.iter().position(|m| {
        m.role == Role::Assistant
            && body::stored_items(m, REASONING_ITEMS_KEY)
                .is_some_and(|items| items.iter().any(|i| i.id.as_deref() == Some(id)))
    })?;
    let Some(origin) = &history[holder].origin else {
        return Some(vec![holder]);
    };
    Some(
        history
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant && m.origin.as_ref() == Some(origin))
            .map(|(i, _)| i)
            .collect(),
    )
}

#[async_trait::async_trait]
impl Wire for ResponsesWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        outgoing_for(parts, &Drops::default(), self.account().as_deref())
    }

    /// A provider checkpoint's compaction item is this wire's to replay (to its issuer) or to
    /// render as hermes' own checkpoint ([`body::encode_for`]; docs/spec.md §7).
    fn takes_native_compaction(&self) -> bool {
        true
    }

    /// On OpenAI's own API (or a local endpoint that says it speaks it: the simulator), the
    /// standalone compaction ([`compaction::NATIVE`]); relays and other Responses surfaces mint
    /// no compaction item, so they get hermes' own.
    fn native_compaction(&self) -> Option<hermes_core::NativeCompaction> {
        is_openai_api(&self.base_url).then_some(compaction::NATIVE)
    }

    /// A Responses client's built-in tools go to OpenAI's own API (or a loopback or private
    /// endpoint in front of it, as the Anthropic wire trusts one for Claude), which runs them;
    /// no other host of this wire does.
    fn takes_passthrough(&self, dialect: hermes_core::Dialect) -> bool {
        dialect == hermes_core::Dialect::OpenAiResponses && is_openai_api(&self.base_url)
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        let standalone = request
            .stamp
            .iter()
            .any(|(k, _)| k == compaction::COMPACT_MARKER);
        let url = if standalone {
            compaction::compact_url(&self.base_url)
        } else {
            self.url()
        };
        let response = self
            .client
            .send_request("responses", &url, request, self.auth.as_ref(), &[])
            .await?;
        let mut reply = if standalone {
            let (turn, whole) = (capture::TurnCapture::new, compaction::capture);
            sse::read_reply(response, request, turn, whole, origin, on_delta, "event").await?
        } else {
            let (turn, whole) = (capture::TurnCapture::new, capture::capture_reply);
            sse::read_reply(response, request, turn, whole, origin, on_delta, "event").await?
        };
        hermes_providers::native::keep_stamp(&mut reply, request, &[compaction::COMPACT_MARKER]);
        Ok(reply)
    }

    /// Reads OpenAI's envelope (`Unknown parameter: 'input[1].encrypted_content'.`, with its
    /// `param`) and hands its words to the core classifier: a refused replayed field is a
    /// refusal with one retry.
    fn refusal_text<'b>(&self, body: &'b str, _: &[&'static str]) -> Option<Cow<'b, str>> {
        Some(Cow::Owned(error_text(body)))
    }

    /// `The encrypted content for item rs_… could not be verified` (another organisation's or
    /// host's ciphertext, docs/providers.md): the reasoning items of that item's origin are left
    /// out of this request's copy (the items paired with them go without their ids) and it is sent
    /// once more; the history is never changed and nothing is persisted.
    fn recover(
        &self,
        parts: &RequestParts<'_>,
        status: Option<u16>,
        body: &str,
    ) -> Option<Recovery> {
        if status.is_some_and(|s| s != 400) {
            return None;
        }
        let id = unverified_item(body)?;
        let mut drops = Drops::default();
        let note = match same_origin_turns(parts.history, &id) {
            Some(turns) => {
                let who = parts.history[turns[0]].origin.as_ref().map_or_else(
                    || "one imported turn".to_owned(),
                    |o| format!("{} on {}", o.model, o.host),
                );
                drops.reasoning_of.extend(turns);
                format!(
                    "the provider could not verify the encrypted reasoning item {id}: resending once without the reasoning items minted by {who} (their messages and calls go without ids; nothing stored changes)"
                )
            }
            None => {
                drops.all_reasoning = true;
                format!(
                    "the provider could not verify the encrypted reasoning item {id}: resending once without any reasoning item (nothing stored changes)"
                )
            }
        };
        let outgoing = outgoing_for(parts, &drops, self.account().as_deref()).ok()?;
        Some(Recovery::new(outgoing, note))
    }
}

/// A streamed reply (SSE, its bytes cut anywhere), read by [`sse::read_sse`]: each event's data
/// is one Responses stream event.
impl SseTurn for capture::TurnCapture {
    fn seen(&self) -> usize {
        self.events()
    }

    fn take(&mut self, _: &str, data: &str, on_delta: OnDelta<'_>) -> Result<bool, TransportError> {
        sse::feed_json(data, |data| self.feed(data, on_delta))
    }

    fn end(self, origin: Origin, _: &str) -> Result<(Message, ReplyMeta), TransportError> {
        self.finish(origin).map_err(CaptureError::at_end)
    }
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
