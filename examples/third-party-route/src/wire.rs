//! "Acme JSON" (made up): Acme's own wire protocol, added to hermes as a wire of a third party
//! — a [`hermes_core::Wire`] and its [`hermes_providers::WireDescriptor`], registered with
//! `hermes_cli::Engine::builtin().with_wire(Arc::new(ACME_JSON))`.
//!
//! The contract (what Acme's server does; `tests/conformance.rs` runs a loopback one):
//! - `POST {base}/v1/think`, `Authorization: Bearer $ACME_API_KEY`, a JSON body
//!   `{"model", "turns": [{"role", "text", "thought"?, "calls"?, "call"?}], "tools"?,
//!   "thinking"?}`: a turn's `role` is `system`, `user`, `assistant` or `tool`; an assistant
//!   turn's `calls` are `[{"id", "name", "args"}]` and a tool turn's `call` is the id it
//!   answers; `tools` are the tool definitions in OpenAI's function format; `thinking` is
//!   `auto`, `off` or an effort word.
//! - The reply is `{"text", "thought"?: {"sig", "text"}, "calls"?: [...], "usage"?: {"input",
//!   "output", "thinking"}}`. The `thought` is signed: it must come back, byte for byte, in its
//!   assistant turn of every later request to the same model, and never to another model or
//!   host (which could not verify it).
//! - An older deployment does not know `thinking`: it answers 400 `{"error": {"message":
//!   "unknown field `thinking`"}}`. hermes' refusal classifier reads that, the driver records
//!   the verdict on this wire and retries once, and the wire leaves `thinking` out for that
//!   provider, host and model from then on.
//!
//! Storage: a captured thought is kept in the assistant message under [`THOUGHT_KEY`] as the
//! exact bytes of the reply's `thought` object (its readable text also as `reasoning_content`,
//! for display); replaying it is copying those bytes.

use std::borrow::Cow;

use hermes_core::message::same_minter;
use hermes_core::transport::{Delta, OnDelta, Reply, ReplyMeta, SendResult, TransportError};
use hermes_core::{
    Message, Origin, Outgoing, RawJson, RequestParts, Role, TextCarrier, ThinkingRequest, ToolCall,
    Usage, Wire,
};
use hermes_providers::wires::Descriptor;
use hermes_providers::{Access, Auth, ChatTransport, ProviderSpec};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The wire's id: its verdicts are kept under it, and `hermes providers` prints it.
pub const WIRE_ID: &str = "acme-json";

/// The stored key holding a captured thought's exact bytes.
pub const THOUGHT_KEY: &str = "acme_thought";

/// The refusable request member (older deployments refuse it).
const THINKING: &str = "thinking";

/// The providers that speak Acme JSON: `acme-json` at Acme's API, its key in `ACME_API_KEY`.
const PROVIDERS: &[ProviderSpec] = &[ProviderSpec {
    id: "acme-json",
    base_url: Some("https://api.acme-thinking.test"),
    key_var: Some("ACME_API_KEY"),
    access: Access::Key,
}];

/// The Acme JSON wire's descriptor, what `Engine::with_wire` takes: hermes-providers'
/// [`Descriptor`] as data — id, name, providers, how to build the wire for a target (the key as
/// a bearer token) and how to explain a body (the URL, then the encoder's lines).
pub const ACME_JSON: Descriptor = Descriptor {
    id: WIRE_ID,
    name: "Acme JSON",
    providers: PROVIDERS,
    build: |target, client, auth| {
        Box::new(AcmeJsonWire {
            client,
            base_url: target.base_url.clone(),
            auth: auth.key.map(Auth::Bearer),
        })
    },
    explain: |target, parts, _: &[Message]| {
        let encoded = encode(parts)?;
        let url = format!("POST {}", url(&target.base_url));
        Ok(std::iter::once(url).chain(encoded.explain).collect())
    },
    // A gateway client's own thinking blocks: the default, none of them goes to Acme.
    client_blocks: None,
};

/// The Acme JSON wire bound to one endpoint.
#[derive(Clone, Debug)]
pub struct AcmeJsonWire {
    /// The shared client (hermes-providers' transport: waits, redirects, error mapping).
    pub client: ChatTransport,
    /// Acme's base URL.
    pub base_url: String,
    /// The bearer key; none for a loopback server.
    pub auth: Option<Auth>,
}

/// Where requests go.
fn url(base_url: &str) -> String {
    format!("{}/v1/think", base_url.trim_end_matches('/'))
}

/// A request body.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    turns: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'static str>,
}

/// One turn of a request.
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    text: Cow<'a, str>,
    /// The stored thought, as its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    calls: Vec<CallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<&'a str>,
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    name: &'a str,
    /// The arguments' JSON text.
    args: Cow<'a, str>,
}

/// A request and what `--explain` says of it.
struct Encoded {
    outgoing: Outgoing,
    explain: Vec<String>,
}

/// The request body of `parts`: every turn in order, each stored thought back to the model
/// and host that minted it, byte for byte, and `thinking` unless this target refused it.
fn encode(parts: &RequestParts<'_>) -> Result<Encoded, TransportError> {
    let target = &parts.decision.target;
    let refused = parts.wire_verdicts.refused_for(WIRE_ID, target);
    let mut explain = Vec::new();
    let mut turns = Vec::with_capacity(parts.history.len());
    for (i, m) in parts.history.iter().enumerate() {
        let text = match &m.content {
            Some(c) => c.as_str().unwrap_or(Cow::Borrowed(c.get())),
            None => Cow::Borrowed(""),
        };
        let stored = m
            .extra
            .iter()
            .find(|(k, _)| k == THOUGHT_KEY)
            .map(|(_, v)| v);
        let thought = match (stored, &m.origin) {
            (Some(raw), Some(origin)) if same_minter(origin, target) => {
                explain.push(format!("turn {i}: thought replayed byte for byte"));
                Some(raw.as_raw())
            }
            (Some(_), origin) => {
                explain.push(format!(
                    "turn {i}: thought left out: minted by {}, not {} at {}",
                    origin
                        .as_ref()
                        .map_or("no known model".to_owned(), |o| format!(
                            "{} at {}",
                            o.model, o.host
                        )),
                    target.model,
                    target.host_key()
                ));
                None
            }
            (None, _) => None,
        };
        let calls = m
            .tool_calls
            .iter()
            .flatten()
            .map(|c| CallOut {
                id: c.id.as_deref().unwrap_or_default(),
                name: &c.function.name,
                args: c
                    .function
                    .arguments
                    .as_ref()
                    .and_then(RawJson::as_str)
                    .unwrap_or(Cow::Borrowed("{}")),
            })
            .collect();
        turns.push(Turn {
            role: m.role.as_str(),
            text,
            thought,
            calls,
            call: m.tool_call_id.as_deref(),
        });
    }
    let thinking = if refused.contains(&THINKING) {
        explain.push(format!("{THINKING}: left out (refused here before)"));
        None
    } else {
        Some(match parts.thinking {
            ThinkingRequest::NoPreference => "auto",
            ThinkingRequest::Off => "off",
            ThinkingRequest::Effort(e) => e.as_str(),
        })
    };
    let body = Body {
        model: &target.model,
        turns,
        tools: parts.tools.map(RawJson::as_raw),
        thinking,
    };
    let body = serde_json::to_vec(&body)
        .map_err(|e| TransportError::Request(format!("could not encode the body: {e}")))?;
    let refusable = thinking.map(|_| THINKING).into_iter().collect();
    let messages = parts.history.len();
    Ok(Encoded {
        outgoing: Outgoing::new(body, parts.stream, refusable, messages),
        explain,
    })
}

/// A reply, borrowing the thought's bytes.
#[derive(Deserialize)]
struct ReplyBody<'a> {
    #[serde(default)]
    text: String,
    #[serde(borrow, default)]
    thought: Option<&'a RawValue>,
    #[serde(default)]
    calls: Vec<CallIn>,
    #[serde(default)]
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
struct CallIn {
    id: String,
    name: String,
    args: String,
}

#[derive(Deserialize)]
struct UsageIn {
    input: u64,
    output: u64,
    #[serde(default)]
    thinking: u64,
}

#[derive(Deserialize)]
struct ThoughtText {
    text: String,
}

/// The assistant message of a reply's bytes: text, calls, and the thought kept as received.
fn capture(text: &str, origin: Origin) -> Result<(Message, ReplyMeta), TransportError> {
    let decode = |e: serde_json::Error| TransportError::Decode(format!("Acme JSON reply: {e}"));
    let reply: ReplyBody<'_> = serde_json::from_str(text).map_err(decode)?;
    let mut message = Message::text(Role::Assistant, &reply.text);
    if let Some(thought) = reply.thought {
        let readable: ThoughtText = serde_json::from_str(thought.get()).map_err(decode)?;
        message.reasoning_content = Some(TextCarrier::new(&readable.text));
        message.extra.push((
            THOUGHT_KEY.to_owned(),
            RawJson::from_text(thought.get()).map_err(decode)?,
        ));
    }
    if !reply.calls.is_empty() {
        message.tool_calls = Some(
            reply
                .calls
                .iter()
                .map(|c| ToolCall::function(&c.id, &c.name, &c.args))
                .collect(),
        );
    }
    message.origin = Some(origin);
    let usage = reply
        .usage
        .map(|u| Usage::new(u.input, u.output, u.thinking, 0, 0));
    Ok((message, ReplyMeta::new(None, usage)))
}

#[async_trait::async_trait]
impl Wire for AcmeJsonWire {
    fn id(&self) -> &'static str {
        WIRE_ID
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        Ok(encode(parts)?.outgoing)
    }

    /// Acme answers whole replies; asked for a stream, the reply's thought and text are given
    /// to `on_delta` once it is in.
    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        let text = self
            .client
            .post_json(WIRE_ID, &url(&self.base_url), request, self.auth.as_ref())
            .await?;
        let (message, meta) = capture(&text, origin)?;
        if request.stream {
            if let Some(thought) = &message.reasoning_content {
                on_delta(Delta::Reasoning(&thought.text()));
            }
            if let Some(text) = message.content.as_ref().and_then(RawJson::as_str) {
                on_delta(Delta::Content(&text));
            }
        }
        Ok(Reply { message, meta })
    }
}
