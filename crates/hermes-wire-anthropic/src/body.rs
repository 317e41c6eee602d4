//! The Anthropic Messages request body, rendered from the canonical history (docs/spec.md §5):
//! system prompt, merged user turns of tool results, assistant turns rebuilt in their captured
//! block order with the thinking blocks this target may receive, the thinking request of
//! docs/spec.md §3c and prompt-cache breakpoints. Stored blocks are written byte for byte; nothing
//! is parsed and re-serialised on the way out.

use std::collections::BTreeSet;

use hermes_core::left_out;
use hermes_core::route::ThinkingRequest;
use hermes_core::sampling::{ResponseFormat, Sampling, ToolChoice};
use hermes_core::{DetailItem, Message, RawJson, RequestParts, Role, TargetHost, ToolCall};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::media;
use super::model::{self, ClaudeModel};
use crate::signed::replay;
pub use crate::signed::replay::{PREFIX_BINDING_KEY, PREFIX_KEY, PrefixDigest};
use hermes_providers::native::image::{Image, Piece};
pub(super) use hermes_providers::native::json::raw_box;
use hermes_providers::native::json::{self, Turn};
use hermes_providers::native::sampling::{Unsupported, check_tool_choice, schema_value};
use hermes_providers::native::stored;
use hermes_providers::native::write_json_with_capacity;

/// The beta `thinking.block_binding` needs (docs/spec.md §5a 4).
pub const BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

/// What hermes adds to the thinking object of a request that replays blocks to a bound model
/// (docs/spec.md §5a 4): a block the provider finds bound elsewhere is dropped, not refused.
const DROP_BLOCK: &str = r#""block_binding":{"prefix_mismatch_behavior":"drop_block"}"#;
use hermes_providers::native::tools::{ChatFunction, ChatTool};

/// The `anthropic-version` the official SDK sends today (header, and Vertex's body field):
/// `ANTHROPIC_API_VERSION` in anthropic-sdk-python 2.16.0 (`anthropic/_constants.py`), which
/// its `AnthropicVertex` client also puts in the body (`lib/vertex/_client.py`).
pub const ANTHROPIC_VERSION: &str = "2026-10-21";

/// The `anthropic_version` a Bedrock InvokeModel body carries (docs/spec.md §8a, row
/// `bedrock-anthropic`; the only value Bedrock's Anthropic Messages schema takes,
/// docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
///
/// Not what anthropic-sdk-python 2.16.0 sends: its `AnthropicBedrock` client fills the body's
/// `anthropic_version` with the first-party `ANTHROPIC_API_VERSION` (`2026-10-21`) through
/// `options.json_data.setdefault("anthropic_version", ANTHROPIC_API_VERSION)`
/// (`anthropic/lib/bedrock/_client.py`, line 45, `_prepare_options`). hermes follows docs/spec.md.
pub const BEDROCK_VERSION: &str = "bedrock-2023-05-31";

/// The beta that lets budget thinking run between tool calls (docs/providers.md).
pub const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";

/// How the Messages API is addressed (docs/spec.md §8a).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `{base}/v1/messages` with `x-api-key` (api.anthropic.com and the `/anthropic` relays).
    Direct,
    /// Azure Foundry: `{base}/v1/messages` with `x-api-key` on `{resource}.services.ai.azure.com/anthropic`.
    Foundry,
    /// Google Vertex: `{base}/v1/projects/{project}/locations/{region}/publishers/anthropic/
    /// models/{model}:rawPredict` (`:streamRawPredict`), bearer token, `anthropic_version` in
    /// the body and no `model`.
    Vertex {
        /// The Google Cloud project.
        project: String,
        /// The region, or `global`.
        region: String,
    },
    /// AWS Bedrock InvokeModel: `{base}/model/{model id, percent-encoded}/invoke`
    /// (`/invoke-with-response-stream`, an AWS event stream), SigV4 or a Bedrock API key, and a
    /// body with `anthropic_version` [`BEDROCK_VERSION`], no `model`, no `stream` and the beta
    /// as the body's `anthropic_beta` list — the three as anthropic-sdk-python 2.16.0's
    /// `AnthropicBedrock` client does them (`anthropic/lib/bedrock/_client.py` lines 47-50 and
    /// 62-73, `_prepare_options`).
    Bedrock,
}

/// Who serves the Messages API at a host, which decides what thinking is replayed
/// (docs/spec.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Claude (direct, Vertex, Foundry, Bedrock, Nous, or a loopback/private proxy): signed
    /// blocks replayed verbatim to the model that minted them.
    Claude,
    /// MiniMax's `/anthropic` endpoints: their own signed blocks replayed on every turn.
    MiniMax,
    /// Kimi's `/coding` endpoint: stored blocks replayed as they are, readable text unsigned.
    Kimi,
    /// DeepSeek's and MiMo's `/anthropic` endpoints (must-echo): stored thinking as unsigned
    /// blocks, and the pad of docs/spec.md §3a where none is stored.
    Echo,
    /// An unknown relay or a lookalike host: no thinking at all.
    Unknown,
}

impl Family {
    /// The family serving `base_url`.
    pub fn of(base_url: &str) -> Family {
        let Some(host) = TargetHost::from_base_url(base_url) else {
            return Family::Unknown;
        };
        if host.is_local_endpoint() {
            return Family::Claude;
        }
        let TargetHost::Domain(name) = &host else {
            return Family::Unknown;
        };
        let vertex = name == "aiplatform.googleapis.com"
            || name
                .strip_suffix("-aiplatform.googleapis.com")
                .is_some_and(|region| {
                    !region.is_empty()
                        && region
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                });
        let bedrock = hermes_providers::aws::RuntimeHost::of_host(&host).is_some();
        if vertex
            || bedrock
            || host.is_within("api.anthropic.com")
            || host.is_within("services.ai.azure.com")
            || host.is_within("inference-api.nousresearch.com")
        {
            Family::Claude
        } else if host.is_within("minimax.io") || host.is_within("minimaxi.com") {
            Family::MiniMax
        } else if ["moonshot.ai", "moonshot.cn", "kimi.com"]
            .iter()
            .any(|d| host.is_within(d))
        {
            Family::Kimi
        } else if host.is_within("deepseek.com") || host.is_within("xiaomimimo.com") {
            Family::Echo
        } else {
            Family::Unknown
        }
    }

    /// How the family is named to users.
    pub fn describe(self) -> &'static str {
        match self {
            Family::Claude => "Claude (signed thinking replayed to the model that minted it)",
            Family::MiniMax => "MiniMax /anthropic (its own signed thinking replayed)",
            Family::Kimi => "Kimi /coding (stored thinking replayed as is)",
            Family::Echo => "must-echo relay (thinking replayed unsigned, \" \" pad)",
            Family::Unknown => "unknown relay (no thinking sent or requested)",
        }
    }
}

/// Where a request goes: what the body depends on besides the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// How the API is addressed.
    pub flavor: Flavor,
    /// The base URL (its host decides the [`Family`]).
    pub base_url: String,
    /// `max_tokens` from config (`[max_tokens]`): sent as it is, and with budget thinking when
    /// it is above the budget; else the model's default ([`default_max_tokens`]).
    pub max_tokens: Option<u32>,
    /// The account requests go under, as a digest of the credential ([`account_of`]; never
    /// the credential): what a bound Claude model binds replayed thinking to (docs/spec.md §5a 1).
    /// `None` when there is no stable credential (no key, or AWS's rotating ones).
    pub account: Option<String>,
}

pub use hermes_providers::native::account_of;

impl Target {
    /// The family serving this target.
    pub fn family(&self) -> Family {
        Family::of(&self.base_url)
    }

    /// The family serving `model` on this target: [`Target::family`], except that Bedrock's
    /// InvokeModel with the Messages body ([`Flavor::Bedrock`], provider `bedrock-anthropic`)
    /// serves Claude only: a model id that names another model ([`other_than_claude_on_bedrock`])
    /// is treated as an unknown relay — no Claude thinking blocks, no thinking request. Without
    /// the `bedrock` feature that door is not built, and the family is the host's.
    pub fn family_for(&self, model: &str) -> Family {
        let family = self.family();
        #[cfg(feature = "bedrock")]
        if family == Family::Claude
            && self.flavor == Flavor::Bedrock
            && other_than_claude_on_bedrock(model)
        {
            return Family::Unknown;
        }
        #[cfg(not(feature = "bedrock"))]
        let _ = model;
        family
    }
}

/// Whether the Bedrock model id `model` names a model other than Claude (`deepseek-v4-pro`,
/// `us.deepseek.r1-v1:0`, a foundation-model or inference-profile ARN of one). An ARN that names
/// no model (an application inference profile, a provisioned or custom model) is not known to
/// be another model: it keeps the host's family. (The `bedrock` feature's: it reads the id as the
/// Converse wire does, [`super::model::bedrock_id`].)
#[cfg(feature = "bedrock")]
pub fn other_than_claude_on_bedrock(model: &str) -> bool {
    if super::model::bedrock_id(model).1.is_some() {
        return false;
    }
    let lower = model.trim().to_ascii_lowercase();
    match lower.strip_prefix("arn:") {
        Some(arn) => arn.contains(":foundation-model/") || arn.contains(":inference-profile/"),
        None => true,
    }
}

/// What a request leaves out beyond the route's rules: the answer to an `Invalid signature`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// History indices whose thinking blocks are left out.
    pub blocks_of: BTreeSet<usize>,
    /// Send this request with thinking disabled.
    pub thinking_off: bool,
    /// Leave out the `anthropic-beta` values a gateway client asked for (the answer to an
    /// `invalid beta flag`; the wire's own stay).
    pub client_betas: bool,
}

/// What the Messages wire knows of a body beyond [`hermes_providers::native::Encoded`]'s common fields.
#[derive(Clone, Debug, Default)]
pub struct Bound {
    /// The digest of the conversation this request sends (stamped on the reply).
    pub digest: String,
    /// For each wire message, the history indices merged into it.
    pub sources: Vec<Vec<usize>>,
    /// The `anthropic-beta` header value (comma-separated), when one is needed (never on
    /// Bedrock, whose body carries the betas).
    pub beta: Option<String>,
    /// A gateway client's `anthropic-version` header, sent instead of hermes' own.
    pub version: Option<String>,
    /// On a bound model, the prefix binding of the conversation this request sends
    /// ([`PREFIX_BINDING_KEY`], stamped on the reply).
    pub binding: Option<String>,
    /// On a bound model, what the prefix binding was made of ([`PREFIX_PARTS_KEY`], stamped
    /// on the reply).
    pub prefix_parts: Option<RawJson>,
    /// On an on-demand compaction request, the account it goes under
    /// ([`super::compaction::ACCOUNT_KEY`], stamped on the reply: its block goes back to
    /// that account only).
    pub compaction_account: Option<String>,
    /// The stored turns whose blocks this body leaves out for good, by
    /// [`hermes_core::left_out::carrier_id`] (docs/spec.md §5a 3): recorded by the driver before it
    /// is sent, so no later request of the conversation puts them back.
    pub left_out: Vec<String>,
}

/// An encoded body: [`hermes_providers::native::Encoded`] with its refusable fields (`thinking`,
/// `redacted_thinking`, `signature`), per assistant message (history index) what happened to
/// its thinking in `explain`, and in `carriers` the assistant messages whose thinking was
/// demoted (signed blocks or the pad sent as unsigned text, thinking disabled for a tool loop)
/// or left out by provenance.
pub type Encoded = hermes_providers::native::Encoded<Bound>;

/// The reply is stamped with the digest of the conversation it answers; the beta header rides
/// along to `send` ([`super::BETA_STAMP`], never stored: `send` takes it off).
impl hermes_providers::native::Stamp for Bound {
    fn stamp(&self) -> Vec<(String, RawJson)> {
        let mut stamp = vec![replay::prefix_stamp(&self.digest)];
        if let Some(beta) = &self.beta {
            stamp.push((super::BETA_STAMP.to_owned(), RawJson::string(beta)));
        }
        if let Some(version) = &self.version {
            stamp.push((super::VERSION_STAMP.to_owned(), RawJson::string(version)));
        }
        binding_stamp(
            &mut stamp,
            self.binding.as_deref(),
            self.prefix_parts.as_ref(),
        );
        if let Some(account) = &self.compaction_account {
            stamp.push((
                super::compaction::ACCOUNT_KEY.to_owned(),
                RawJson::string(account),
            ));
        }

        stamp
    }

    fn left_out(&self) -> Vec<String> {
        self.left_out.clone()
    }
}

pub use hermes_providers::native::EncodeError;

/// One content block of the wire copy.
pub(super) enum Block<'h> {
    /// A stored Anthropic-shaped item, byte for byte.
    Stored(&'h RawJson),
    /// An unsigned thinking block from readable text (must-echo relays, Kimi).
    Unsigned(String),
    /// A text block; `text` is a JSON string literal as stored.
    Text(&'h RawValue),
    /// A tool call.
    ToolUse {
        id: &'h str,
        name: &'h str,
        input: Box<RawValue>,
    },
    /// A tool result.
    ToolResult {
        tool_use_id: &'h str,
        content: Option<&'h RawJson>,
        /// The client marked the result as failed ([`Message::tool_error`]).
        is_error: bool,
    },
    /// A block exactly as the gateway's client wrote it (Claude targets only).
    Client(&'h RawValue),
    /// An image of a chat-style `image_url` part (module [`media`]).
    Image(Image),
    /// A tool result whose content holds images: its parts as stored, images rebuilt.
    ToolResultParts {
        tool_use_id: &'h str,
        /// The client marked the result as failed ([`Message::tool_error`]).
        is_error: bool,
        parts: Vec<media::ResultPart<'h>>,
    },
}

impl Block<'_> {
    fn is_thinking(&self) -> bool {
        matches!(self, Block::Stored(_) | Block::Unsigned(_))
    }

    /// About how many bytes the block takes in the body: what it copies and the keys around.
    fn size_hint(&self) -> usize {
        48 + match self {
            Block::Stored(raw) => raw.get().len(),
            Block::Unsigned(text) => text.len(),
            Block::Text(text) => text.get().len(),
            Block::ToolUse { id, name, input } => id.len() + name.len() + input.get().len(),
            Block::ToolResult {
                tool_use_id,
                content,
                ..
            } => tool_use_id.len() + content.map_or(0, |c| c.get().len()),
            Block::Client(raw) => raw.get().len(),
            Block::Image(_) | Block::ToolResultParts { .. } => 0,
        }
    }
}

struct CachedBlock<'a, 'h> {
    block: &'a Block<'h>,
    cache: bool,
}

impl Serialize for CachedBlock<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Block::Stored(raw) = self.block {
            // As stored, less any private key (`_…`, docs/spec.md §2): the rest byte for byte.
            return hermes_providers::native::members::without_private(raw.as_raw()).serialize(s);
        }
        if let Block::Client(raw) = self.block {
            return match self.cache {
                false => raw.serialize(s),
                true => raw_box(&with_cache_control(raw.get())).serialize(s),
            };
        }
        let mut map = s.serialize_map(None)?;
        match self.block {
            Block::Stored(_) | Block::Client(_) => {}
            Block::Unsigned(text) => {
                map.serialize_entry("type", "thinking")?;
                map.serialize_entry("thinking", text)?;
            }
            Block::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            Block::ToolUse { id, name, input } => {
                map.serialize_entry("type", "tool_use")?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("input", input)?;
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => tool_result_members(&mut map, tool_use_id, content.as_ref(), *is_error)?,
            Block::Image(image) => {
                map.serialize_entry("type", "image")?;
                map.serialize_entry("source", &media::ImageSource(image))?;
            }
            Block::ToolResultParts {
                tool_use_id,
                is_error,
                parts,
            } => tool_result_members(&mut map, tool_use_id, Some(parts), *is_error)?,
        }
        if self.cache {
            map.serialize_entry("cache_control", &TypeOnly("ephemeral"))?;
        }
        map.end()
    }
}

/// A `tool_result` block's members into `map`: the call it answers, its `content` when it has
/// one, and `is_error` only when the client marked the result as failed.
fn tool_result_members<M: SerializeMap, C: Serialize + ?Sized>(
    map: &mut M,
    tool_use_id: &str,
    content: Option<&C>,
    is_error: bool,
) -> Result<(), M::Error> {
    map.serialize_entry("type", "tool_result")?;
    map.serialize_entry("tool_use_id", tool_use_id)?;
    if let Some(content) = content {
        map.serialize_entry("content", content)?;
    }
    if is_error {
        map.serialize_entry("is_error", &true)?;
    }
    Ok(())
}

/// A client's block (a JSON object as written) with hermes' cache breakpoint added after its
/// own members, which stay byte for byte.
fn with_cache_control(object: &str) -> String {
    with_member(object, r#""cache_control":{"type":"ephemeral"}"#)
}

/// A JSON object's text with `member` (`"key":value`) added after its own members, which stay
/// byte for byte.
fn with_member(object: &str, member: &str) -> String {
    let body = object.trim_end();
    let inner = body.strip_suffix('}').unwrap_or(body).trim_end();
    let sep = if inner.ends_with('{') { "" } else { "," };
    format!("{inner}{sep}{member}}}")
}

/// The prefix binding of each assistant message of `history` as this request sends it (`None`
/// for the other messages), and that of the whole conversation (docs/spec.md §5a 1).
fn bindings_of(
    history: &[Message],
    tools: Option<&RawJson>,
    account: Option<&str>,
) -> (Vec<Option<String>>, String) {
    let mut digest = PrefixDigest::bound(tools.map(RawJson::get), account);
    let each = history
        .iter()
        .map(|m| {
            let before = digest.step(m);
            (m.role == Role::Assistant).then_some(before)
        })
        .collect();
    (each, digest.hex())
}

/// The key of what a bound turn's prefix was made of, stamped beside its binding
/// ([`PrefixParts`]), so a later request can say which part changed. Never sent.
pub const PREFIX_PARTS_KEY: &str = "hermes_prefix_parts";

/// Adds to a reply's `stamp` a bound model's prefix binding ([`PREFIX_BINDING_KEY`]) and what it
/// was made of ([`PREFIX_PARTS_KEY`]), each when there is one (the Claude wires on a bound model).
pub fn binding_stamp(
    stamp: &mut Vec<(String, RawJson)>,
    binding: Option<&str>,
    parts: Option<&RawJson>,
) {
    if let Some(binding) = binding {
        stamp.push((PREFIX_BINDING_KEY.to_owned(), RawJson::string(binding)));
    }
    if let Some(parts) = parts {
        stamp.push((PREFIX_PARTS_KEY.to_owned(), parts.clone()));
    }
}

/// The parts of a prefix binding, each a digest: the system prompt (every system or developer
/// message's content, in order), the tools and the account. The messages are the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrefixParts {
    /// The system and developer messages' content.
    pub system: String,
    /// The tool definitions as the wire reads them.
    pub tools: String,
    /// The account ([`account_of`]).
    pub account: String,
}

impl PrefixParts {
    /// The parts of the prefix `history` under `tools` and `account`.
    pub fn of(history: &[Message], tools: Option<&RawJson>, account: Option<&str>) -> Self {
        let hex = |d: PrefixDigest| d.hex();
        let mut system = PrefixDigest::new();
        for m in history
            .iter()
            .filter(|m| matches!(m.role, Role::System | Role::Developer))
        {
            system.add(m);
        }
        PrefixParts {
            system: hex(system),
            tools: hex(PrefixDigest::bound(tools.map(RawJson::get), None)),
            account: hex(PrefixDigest::bound(None, account)),
        }
    }

    /// The parts `msg` was stamped with ([`PREFIX_PARTS_KEY`]).
    pub fn stored(msg: &Message) -> Option<Self> {
        let (_, raw) = msg.extra.iter().find(|(k, _)| k == PREFIX_PARTS_KEY)?;
        serde_json::from_str(raw.get()).ok()
    }

    /// What differs between `self` (as stamped) and `now`, for a line: `system prompt`,
    /// `tools`, `the account`, else `an earlier message`.
    pub fn changed(&self, now: &PrefixParts) -> String {
        let mut parts = Vec::new();
        if self.system != now.system {
            parts.push("system prompt");
        }
        if self.tools != now.tools {
            parts.push("tools");
        }
        if self.account != now.account {
            parts.push("the account");
        }
        if parts.is_empty() {
            parts.push("an earlier message");
        }
        parts.join(", ")
    }
}

/// What a stored turn's replay decision becomes once blocks may be left out (docs/spec.md §5a 2–4):
/// on a bound model (`now`, its prefix binding now) or after a turn left out by an earlier request
/// (docs/spec.md §5a 3). Blocks at or before the cut (`cut`) are left out and counted; after it, on
/// a bound model, blocks stamped with
/// the binding `now` go, and blocks with no recorded binding (an older row, an import, a
/// client's own) go with `drop_block` (`unknown`).
#[allow(clippy::too_many_arguments)]
fn bind<'h>(
    msg: &'h Message,
    thinking: Thinking<'h>,
    why: String,
    now: Option<&str>,
    parts_now: impl FnOnce() -> PrefixParts,
    cut: bool,
    unknown: &mut bool,
    carriers: &mut hermes_core::CarrierCounts,
) -> (Thinking<'h>, String) {
    if !matches!(thinking, Thinking::Stored(_)) {
        return (thinking, why);
    }
    match replay::bound(
        msg,
        why,
        now,
        || PrefixParts::stored(msg).map(|then| then.changed(&parts_now())),
        cut,
        unknown,
        carriers,
    ) {
        Ok(why) => (thinking, why),
        Err(why) => (Thinking::None, why),
    }
}

/// An object with only a `type`: `{"type":"ephemeral"}` (cache control), `{"type":"object"}`
/// (the schema of a tool without parameters).
struct TypeOnly(&'static str);

impl Serialize for TypeOnly {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("type", self.0)?;
        map.end()
    }
}

/// One wire message: a role and its blocks, or a user's plain string content.
type WireMessage<'h> = Turn<Block<'h>, Plain<'h>>;

/// What a Messages turn keeps beside its blocks.
#[derive(Default)]
struct Plain<'h> {
    /// A lone user message's string content, sent as a string (the SDK's own shape).
    text: Option<&'h RawJson>,
    /// The cache breakpoint goes on its last block that is not thinking.
    cache: bool,
}

/// The body's `messages`: each [`WireMessage`] as its role and content (the kit's `Turn` is
/// foreign to this crate, so it is written through this wrapper).
struct WireMessages<'a, 'h>(&'a [WireMessage<'h>]);

impl Serialize for WireMessages<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct One<'a, 'h>(&'a WireMessage<'h>);
        impl Serialize for One<'_, '_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let msg = self.0;
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", msg.role)?;
                match msg.extra.text {
                    Some(text) if !msg.extra.cache => map.serialize_entry("content", text)?,
                    _ => map.serialize_entry("content", &Blocks(msg))?,
                }
                map.end()
            }
        }
        s.collect_seq(self.0.iter().map(One))
    }
}

struct Blocks<'a, 'h>(&'a WireMessage<'h>);

impl Serialize for Blocks<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.0;
        let plain = msg.extra.text.map(|text| Block::Text(text.as_raw()));
        let blocks: Vec<&Block<'_>> = plain.iter().chain(msg.parts.iter()).collect();
        // The breakpoint goes on the last block that is not thinking (docs/spec.md: never on it).
        let cached = if msg.extra.cache {
            blocks.iter().rposition(|b| !b.is_thinking())
        } else {
            None
        };
        let mut seq = s.serialize_seq(Some(blocks.len()))?;
        for (i, block) in blocks.iter().enumerate() {
            seq.serialize_element(&CachedBlock {
                block,
                cache: cached == Some(i),
            })?;
        }
        seq.end()
    }
}

/// The system prompt: the leading `system` messages' text, each a text block (a Claude target
/// gets a gateway client's own blocks as written), the last one cached unless the client placed
/// breakpoints of its own.
struct System<'h> {
    blocks: Vec<Block<'h>>,
    cache_last: bool,
}

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.blocks.len()))?;
        let last = self.blocks.len().saturating_sub(1);
        for (i, block) in self.blocks.iter().enumerate() {
            seq.serialize_element(&CachedBlock {
                block,
                cache: self.cache_last && i == last,
            })?;
        }
        seq.end()
    }
}

/// A message's content as its gateway client wrote it ([`Message::client_blocks`]: an array of
/// blocks, or a string as one text block), when the target is Claude (`claude_native`).
fn client_blocks(msg: &Message, claude_native: bool) -> Option<Vec<Block<'_>>> {
    let raw = msg.client_blocks.as_ref().filter(|_| claude_native)?;
    if raw.is_string() {
        return Some(vec![Block::Text(raw.as_raw())]);
    }
    let blocks: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    Some(blocks.into_iter().map(Block::Client).collect())
}

/// The blocks of a `system` message: the client's own as written for a Claude target, else its
/// text parts.
fn system_blocks(msg: &Message, claude_native: bool) -> Vec<Block<'_>> {
    client_blocks(msg, claude_native).unwrap_or_else(|| {
        text_parts(msg.content.as_ref())
            .into_iter()
            .map(Block::Text)
            .collect()
    })
}

/// The beta a `{"role": "system"}` message inside `messages` needs on Claude's API (Claude Code
/// 2.1 sends such messages on current models; docs.claude.com, "Mid-conversation system
/// messages").
pub const MID_CONVERSATION_SYSTEM_BETA: &str = "mid-conversation-system-2026-04-07";

struct Tool<'a>(ChatFunction<'a>);

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = &self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &f.name)?;
        if let Some(d) = &f.description {
            map.serialize_entry("description", d)?;
        }
        match f.parameters {
            Some(p) => map.serialize_entry("input_schema", p)?,
            None => map.serialize_entry("input_schema", &TypeOnly("object"))?,
        }
        map.end()
    }
}

/// `tools`: the client's function tools, then the server tools a gateway client asked for,
/// each exactly as it wrote it.
struct Tools<'a> {
    client: Vec<Tool<'a>>,
    server: &'a [RawJson],
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.client.len() + self.server.len()))?;
        for tool in &self.client {
            seq.serialize_element(tool)?;
        }
        for tool in self.server {
            seq.serialize_element(tool.as_raw())?;
        }
        seq.end()
    }
}

/// The thinking request of docs/spec.md §3c for this target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThinkingPlan {
    /// `thinking`, as JSON text.
    pub thinking: Option<String>,
    /// `output_config.effort`.
    pub effort: Option<&'static str>,
    /// `max_tokens`.
    pub max_tokens: u32,
    /// The `anthropic-beta` header.
    pub beta: Option<&'static str>,
    /// Thinking is on (enabled or adaptive).
    pub on: bool,
    /// The thinking budget, on budget models.
    pub budget: Option<u32>,
    /// How thinking is turned off for one request on this model (`{"type":"disabled"}`, or
    /// nothing on adaptive models).
    pub off: Option<String>,
    /// What was decided, for `--explain`.
    pub explain: String,
}

/// `max_tokens` when no thinking budget sets it: the configured value, else the model's
/// documented output ceiling where hermes knows one (adaptive Claude models on a Claude host,
/// [`ClaudeModel::output_ceiling`]), else [`model::DEFAULT_MAX_TOKENS`].
pub fn default_max_tokens(target: &Target, model: &str) -> u32 {
    target
        .max_tokens
        .or_else(|| {
            (target.family_for(model) == Family::Claude)
                .then(|| ClaudeModel::parse(model)?.output_ceiling())
                .flatten()
        })
        .unwrap_or(model::DEFAULT_MAX_TOKENS)
}

/// The thinking request for `request` on `model` at `target` (docs/spec.md §3c).
pub fn thinking_plan(
    request: ThinkingRequest,
    model: &str,
    target: &Target,
    tools: bool,
) -> ThinkingPlan {
    let default_max = default_max_tokens(target, model);
    let family = target.family_for(model);
    let claude = ClaudeModel::parse(model);
    let adaptive = family == Family::Claude && claude.as_ref().is_some_and(ClaudeModel::adaptive);
    let disabled = r#"{"type":"disabled"}"#.to_owned();
    let mut plan = ThinkingPlan {
        max_tokens: default_max,
        off: (!adaptive).then(|| disabled.clone()),
        ..ThinkingPlan::default()
    };
    if family == Family::Unknown {
        plan.off = None;
        plan.explain = format!(
            "no thinking request: {} ({})",
            target.base_url,
            family.describe()
        );
        return plan;
    }
    match request {
        ThinkingRequest::NoPreference => {
            plan.explain = "no thinking preference: no thinking request".into();
        }
        ThinkingRequest::Off => {
            plan.thinking = plan.off.clone();
            plan.explain = match &plan.thinking {
                Some(_) => "--no-thinking → thinking {\"type\":\"disabled\"}".into(),
                None => "--no-thinking → no thinking request (adaptive model)".into(),
            };
        }
        ThinkingRequest::Effort(effort) if adaptive => {
            let model = claude.unwrap_or(ClaudeModel {
                family: None,
                version: None,
            });
            let e = model.effort(effort);
            plan.thinking = Some(r#"{"type":"adaptive","display":"summarized"}"#.into());
            plan.effort = Some(e);
            plan.on = true;
            plan.explain = format!(
                "--effort {} → thinking adaptive (display summarized), output_config.effort {e}",
                effort.as_str()
            );
        }
        ThinkingRequest::Effort(effort) => {
            let budget = model::budget(effort);
            plan.thinking = Some(format!(r#"{{"type":"enabled","budget_tokens":{budget}}}"#));
            // `max_tokens` must exceed the budget: a configured value that does not is
            // replaced by budget + 8192 (docs/spec.md §3c), as the Converse wire does.
            plan.max_tokens = target
                .max_tokens
                .filter(|m| *m > budget)
                .unwrap_or(budget + model::ABOVE_BUDGET);
            plan.on = true;
            plan.budget = Some(budget);
            // No `temperature`: docs/spec.md §3c sets temperature 1 on budget models only where the
            // API takes one, and Messages API version 2026-10-21 does not (the official
            // `anthropic` SDK 2.16.0's `MessageCreateParamsBase` has no `temperature`, `top_p`
            // or `top_k`); a model that rejects `temperature` never gets one.
            if family == Family::Claude
                && tools
                && claude
                    .as_ref()
                    .is_some_and(ClaudeModel::needs_interleaved_beta)
            {
                plan.beta = Some(INTERLEAVED_BETA);
            }
            plan.explain = format!(
                "--effort {} → thinking enabled, budget_tokens {budget}, max_tokens {}{}",
                effort.as_str(),
                plan.max_tokens,
                match (plan.beta.is_some(), &target.flavor) {
                    (false, _) => "",
                    (true, Flavor::Bedrock) => {
                        ", anthropic_beta [\"interleaved-thinking-2025-05-14\"] in the body"
                    }
                    (true, _) => ", anthropic-beta interleaved-thinking-2025-05-14",
                }
            );
        }
    }
    plan
}

/// A gateway client's own thinking object replaces the plan's, as sent (the issue's "to Claude
/// upstreams the client's own thinking object goes as sent"): thinking is on unless it is
/// `disabled`; the interleaved-thinking beta and `output_config.effort` stay only with the
/// form they belong to (budget and adaptive thinking). Its budget is Claude's to judge against
/// the client's `max_tokens` (the interleaved beta lets it exceed them), so the wire checks
/// none: Claude's own answer reaches the client.
fn client_thinking(plan: &mut ThinkingPlan, raw: &RawJson) -> Result<(), EncodeError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        kind: String,
    }
    let probe: Probe =
        serde_json::from_str(raw.get()).map_err(|e| EncodeError::Thinking(e.to_string()))?;
    plan.thinking = Some(raw.get().to_owned());
    plan.on = probe.kind != "disabled";
    plan.budget = None;
    if probe.kind != "enabled" {
        plan.beta = None;
    }
    if probe.kind != "adaptive" {
        plan.effort = None;
    }
    plan.explain = format!("thinking {} (the client's own object, as sent)", raw.get());
    Ok(())
}

/// The kind of a stored Anthropic-shaped item (`thinking` or `redacted_thinking`), if it is one.
fn anthropic_kind(item: &DetailItem) -> Option<(&'static str, bool)> {
    let DetailItem::Provider { raw, .. } = item else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        signature: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe<'_> = serde_json::from_str(raw.get()).ok()?;
    match probe.kind.as_deref() {
        Some("thinking") => Some(("thinking", probe.signature.is_some())),
        Some("redacted_thinking") => Some(("redacted_thinking", true)),
        _ => None,
    }
}

/// A user turn's blocks: each non-empty text part a text block, each image an image block,
/// in stored order; other parts are left out, as a text-only turn leaves them out.
fn user_blocks<'h>(msg: &'h Message, index: usize) -> Result<Vec<Block<'h>>, EncodeError> {
    Ok(media::pieces(msg, index)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Text { text, .. } if text.get() != "\"\"" => Some(Block::Text(text)),
            Piece::Image(img) => Some(Block::Image(img)),
            Piece::Text { .. } | Piece::Other(_) => None,
        })
        .collect())
}

/// The text parts of a content value (chat `text` parts; the API refuses empty text blocks).
fn text_parts(content: Option<&RawJson>) -> Vec<&RawValue> {
    json::text_literals(content, &["text"])
}

/// A tool call's arguments as the `input` object: the stored JSON text when it is an object,
/// else `{}`.
fn tool_input(call: &ToolCall) -> Box<RawValue> {
    raw_box(json::object_arguments(call).as_deref().unwrap_or("{}"))
}

/// Builds the body of `parts` for `target`, leaving out what `drops` says: compact, the bytes
/// sent (`hermes preview` re-indents them itself). In stages, as the chat wire's: the provider
/// checkpoints ([`plan_checkpoints`]) and the request-wide decisions ([`plan_request`]), then
/// each message's ([`plan_turns`]), then what those change of the request ([`settle`]), and
/// last the bytes ([`render`]).
pub fn encode(
    parts: &RequestParts<'_>,
    target: &Target,
    drops: &Drops,
) -> Result<Encoded, EncodeError> {
    let family = target.family_for(parts.decision.target.model.as_str());
    let checkpoints = plan_checkpoints(parts, target, family);
    let replaced = hermes_core::checkpoint::as_own_checkpoints(
        std::borrow::Cow::Borrowed(parts.history),
        |i, _| checkpoints.native_ok[i],
    );
    let history: &[Message] = &replaced;
    let mut request = plan_request(parts, target, family, checkpoints.explain)?;
    let mut turns = plan_turns(&mut request, history, &checkpoints.rekey, drops)?;
    let settled = settle(&mut request, &mut turns, history, drops)?;
    render(request, turns, settled, history)
}

/// The provider checkpoints of a history, as [`encode`] plans them (docs/spec.md §7).
struct Checkpoints {
    /// Per history message, whether its `compaction` block goes back as the provider's.
    native_ok: Vec<bool>,
    /// The digest map of the turns the replayed blocks kept.
    rekey: super::compaction::Rekey,
    /// One `explain` line per checkpoint.
    explain: Vec<String>,
}

/// Provider checkpoints (docs/spec.md §7): a `compaction` block goes back, first in its message,
/// only to the provider, model and account that minted it; elsewhere the message is hermes'
/// own checkpoint of its summary. While one is replayed, the turns it kept are read through
/// its digest map (their prefix now starts with the block that stands for what it summarised).
fn plan_checkpoints(parts: &RequestParts<'_>, target: &Target, family: Family) -> Checkpoints {
    let decision = parts.decision;
    let mut checkpoint_lines = Vec::new();
    let mut native_ok = vec![false; parts.history.len()];
    let mut rekey = super::compaction::Rekey::default();
    for (i, msg) in parts.history.iter().enumerate() {
        if hermes_core::checkpoint::native_compaction(msg).is_none() {
            continue;
        }
        let why = if family != Family::Claude {
            Some("this endpoint is not Claude's")
        } else if !stored::own(msg, &decision.target) {
            Some("minted by another model or host")
        } else if super::compaction::stored_account(msg) != target.account {
            Some("minted under another account")
        } else {
            None
        };
        match why {
            None => {
                native_ok[i] = true;
                if let Some(map) = super::compaction::stored_rekey(msg) {
                    rekey.prefix.extend(map.prefix);
                    rekey.binding.extend(map.binding);
                }
                checkpoint_lines.push(format!(
                    "message {i}: the provider's compaction block replayed first, in place of what it summarised ({}; docs/spec.md §7)",
                    super::compaction::COMPACTION_BETA
                ));
            }
            Some(why) => checkpoint_lines.push(format!(
                "message {i}: the provider's compaction block left out ({why}): hermes' own checkpoint of its summary sent instead (docs/spec.md §7)"
            )),
        }
    }
    Checkpoints {
        native_ok,
        rekey,
        explain: checkpoint_lines,
    }
}

/// The request-wide decisions [`encode`] plans the messages against, and the notes and
/// `explain` lines every stage adds to.
struct Request<'p> {
    parts: &'p RequestParts<'p>,
    target: &'p Target,
    /// The model asked for.
    model: &'p str,
    /// The family this endpoint serves `model` as.
    family: Family,
    /// An on-demand compaction asked for through the passthrough (only a Claude host takes it).
    compaction_request: bool,
    /// A threshold compaction asked for (`context_management` `compact_20260112`, by config or
    /// a gateway client): its reply's block goes back to this account only.
    threshold_request: bool,
    /// Whether the model keeps prior turns' thinking.
    keeps_prior: bool,
    /// The fields this target's verdicts refuse.
    refused: Vec<&'p str>,
    /// A gateway client's own Anthropic parts, which go only to Claude (`AnthropicWire` says so
    /// to the driver, which refuses them for every other target before encoding).
    passthrough: Option<&'p hermes_core::Passthrough>,
    /// The client's server tools (none without a passthrough).
    server_tools: &'p [RawJson],
    /// The thinking request (and `max_tokens`), as planned so far.
    plan: ThinkingPlan,
    /// Whether a client set its own `block_binding`.
    client_binding: bool,
    /// A bound model (docs/spec.md §5a): every replayed block must be on the prefix, model and
    /// account it was made for; a client that set its own `block_binding` binds too.
    bound: bool,
    /// A Claude target takes a gateway client's own blocks as written.
    claude_native: bool,
    /// The notes for the caller.
    notes: Vec<String>,
    /// The `explain` lines.
    explain: Vec<String>,
}

/// The first stage of [`encode`]: what holds for the whole request (the model's family, the
/// client's passthrough, the thinking request, compaction and binding), with the first
/// `explain` lines (the wire, the thinking plan, then `checkpoint_lines`).
fn plan_request<'p>(
    parts: &'p RequestParts<'p>,
    target: &'p Target,
    family: Family,
    checkpoint_lines: Vec<String>,
) -> Result<Request<'p>, EncodeError> {
    let decision = parts.decision;
    let model = decision.target.model.as_str();
    let compaction_request =
        family == Family::Claude && passthrough_field(parts, super::compaction::COMPACTION_FIELD);
    let threshold_request = family == Family::Claude
        && parts
            .passthrough
            .field("context_management")
            .is_some_and(|c| c.get().contains(super::compaction::THRESHOLD_EDIT));
    let claude = ClaudeModel::parse(model);
    let keeps_prior = claude
        .as_ref()
        .is_none_or(ClaudeModel::keeps_prior_thinking);
    let refused: Vec<&str> = parts
        .wire_verdicts
        .refused_for(super::WIRE_ID, &decision.target);
    let passthrough = super::inbound::passes_client_blocks(super::WIRE_ID, &target.base_url)
        .then_some(parts.passthrough);
    let server_tools = passthrough.map_or(&[][..], |p| &p.server_tools[..]);
    let mut plan = thinking_plan(
        parts.thinking,
        model,
        target,
        parts.tools.is_some() || !server_tools.is_empty(),
    );
    if let Some(raw) = passthrough.and_then(|p| p.thinking.as_ref()) {
        client_thinking(&mut plan, raw)?;
    }
    let mut notes = Vec::new();
    let mut explain = vec![format!(
        "anthropic wire: {} — {}",
        target.base_url,
        family.describe()
    )];
    if family != target.family() {
        let why = format!(
            "`{model}` is not a Claude model, and Bedrock's InvokeModel with the Messages body \
             (provider bedrock-anthropic) serves Claude: no thinking is sent or requested (other \
             Bedrock models: provider `bedrock`)"
        );
        explain.push(why.clone());
        notes.push(why);
    }
    explain.push(plan.explain.clone());
    explain.extend(checkpoint_lines);
    if compaction_request {
        explain.push(format!(
            "on-demand compaction: compaction {{\"type\":\"summarize\"}} ({}): the provider summarises these messages into one compaction block (docs/spec.md §7)",
            super::compaction::COMPACTION_BETA
        ));
    }
    let client_binding = passthrough
        .and_then(|p| p.thinking.as_ref())
        .is_some_and(|t| t.get().contains("\"block_binding\""));
    let bound = family == Family::Claude
        && (client_binding || claude.as_ref().is_some_and(ClaudeModel::binds_prefix));
    Ok(Request {
        parts,
        target,
        model,
        family,
        compaction_request,
        threshold_request,
        keeps_prior,
        refused,
        passthrough,
        server_tools,
        plan,
        client_binding,
        bound,
        claude_native: passthrough.is_some(),
        notes,
        explain,
    })
}

/// Each message's decisions, the second stage of [`encode`]: the system blocks and the wire
/// messages, and what planning them found.
struct Turns<'h> {
    /// The top-level `system` blocks.
    system: Vec<Block<'h>>,
    /// The wire messages.
    wire: Vec<WireMessage<'h>>,
    /// Whether a system message came after a turn and was sent in place (docs/spec.md §5a 5).
    mid_system: bool,
    /// The refusable kinds the assistant turns send.
    sent_kinds: BTreeSet<&'static str>,
    /// The digest of the conversation sent (stamped on the reply).
    digest: PrefixDigest,
    /// For the latest assistant turn: did its blocks start with thinking?
    latest_starts_with_thinking: Option<bool>,
    /// Whether a provider compaction block is replayed.
    compaction_replayed: bool,
    /// On a bound model, each message's prefix binding now (kept turns behind a replayed
    /// compaction block: as stamped).
    bindings: Vec<Option<String>>,
    /// On a bound model, the binding of the whole conversation (stamped on the reply).
    binding: Option<String>,
    /// The last turn whose blocks are cut (§5a 2 and 3): it and every earlier one.
    cut: Option<usize>,
    /// The carrier ids of the turns whose blocks are left out for good (§5a 3).
    gone: Vec<String>,
    /// Whether blocks are replayed to a bound model.
    replayed_bound: bool,
    /// Whether some of them have no recorded prefix (they go with `drop_block`, §5a 4).
    unknown_prefix: bool,
    /// The carrier outcomes.
    carriers: hermes_core::CarrierCounts,
}

/// The second stage of [`encode`]: every message of `history` (checkpoints replaced, `rekey`
/// their digest map) into `system` or the wire messages, each decision in `request.explain`.
fn plan_turns<'h>(
    request: &mut Request<'_>,
    history: &'h [Message],
    rekey: &super::compaction::Rekey,
    drops: &Drops,
) -> Result<Turns<'h>, EncodeError> {
    let mut turns = Turns::new(request, history, rekey);
    let loop_start = replay::loop_start(history);
    let last_assistant = history.iter().rposition(|m| m.role == Role::Assistant);
    let claude_native = request.claude_native;
    // Whether a message other than a system one came yet (system messages after it stay in
    // place on Claude, docs/spec.md §5a 5).
    let mut seen_turn = false;
    for (i, msg) in history.iter().enumerate() {
        let prefix = turns.digest.step(msg);
        match msg.role {
            Role::System | Role::Developer => {
                let blocks = system_blocks(msg, claude_native);
                if !seen_turn {
                    turns.system.extend(blocks);
                } else if request.family == Family::Claude {
                    turns.mid_system = true;
                    request.explain.push(format!(
                        "message {i}: a mid-conversation system message, sent in place ({MID_CONVERSATION_SYSTEM_BETA})"
                    ));
                    push(&mut turns.wire, "system", blocks, None, i);
                } else {
                    request.explain.push(format!(
                        "message {i}: a mid-conversation system message: this relay has no in-place form, its text joins `system`"
                    ));
                    turns.system.extend(blocks);
                }
            }
            Role::User if client_blocks(msg, claude_native).is_some() => {
                seen_turn = true;
                let blocks = client_blocks(msg, claude_native).unwrap_or_default();
                push(&mut turns.wire, "user", blocks, None, i);
            }
            Role::User => {
                seen_turn = true;
                let mut blocks = Vec::new();
                let plain = msg.content.as_ref().filter(|c| c.is_string());
                if media::has_images(msg) {
                    blocks.extend(user_blocks(msg, i)?);
                } else if plain.is_none() {
                    blocks.extend(
                        text_parts(msg.content.as_ref())
                            .into_iter()
                            .map(Block::Text),
                    );
                }
                push(&mut turns.wire, "user", blocks, plain, i);
            }
            Role::Tool => {
                seen_turn = true;
                let blocks = match client_blocks(msg, claude_native) {
                    Some(blocks) => blocks,
                    None => vec![tool_result(msg, i)?],
                };
                push(&mut turns.wire, "user", blocks, None, i);
            }
            Role::Assistant if hermes_core::checkpoint::native_compaction(msg).is_some() => {
                // Only the minter's checkpoints are still here (the others became hermes'
                // own): the block, verbatim, alone at the head of its message.
                seen_turn = true;
                turns.compaction_replayed = true;
                let raw = hermes_core::checkpoint::native_compaction(msg);
                push(
                    &mut turns.wire,
                    "assistant",
                    raw.into_iter().map(Block::Stored).collect(),
                    None,
                    i,
                );
            }
            Role::Assistant => {
                seen_turn = true;
                // A kept turn behind a replayed compaction block: its prefix as stamped.
                let prefix = rekey.prefix.get(&prefix).cloned().unwrap_or(prefix);
                let mut blocks =
                    turns.assistant(request, history, i, &prefix, i >= loop_start, drops);
                if Some(i) == last_assistant {
                    turns.latest_starts_with_thinking =
                        Some(blocks.first().is_some_and(Block::is_thinking));
                }
                turns.threshold_compaction(request, msg, i, &mut blocks);
                if blocks.is_empty() {
                    request
                        .explain
                        .push(format!("message {i}: left out (no content to send)"));
                    continue;
                }
                push(&mut turns.wire, "assistant", blocks, None, i);
            }
        }
    }
    Ok(turns)
}

/// A tool message's `tool_result` block (`index` its place in the history).
fn tool_result(msg: &Message, index: usize) -> Result<Block<'_>, EncodeError> {
    let tool_use_id = msg.tool_call_id.as_deref().unwrap_or("");
    let is_error = msg.tool_error;
    Ok(if media::has_images(msg) {
        Block::ToolResultParts {
            tool_use_id,
            is_error,
            parts: media::result_parts(msg, index)?,
        }
    } else {
        Block::ToolResult {
            tool_use_id,
            content: msg.content.as_ref().filter(|c| !c.is_null()),
            is_error,
        }
    })
}

impl<'h> Turns<'h> {
    /// No message planned yet: on a bound model, each message's prefix binding now and the
    /// conversation's, and the cut of the blocks kept (docs/spec.md §5a 2 and 3).
    fn new(request: &Request<'_>, history: &[Message], rekey: &super::compaction::Rekey) -> Self {
        let (parts, target) = (request.parts, request.target);
        // Each message's prefix binding now, and the binding of the whole conversation
        // (stamped on the reply); the kept blocks are those after the last step whose binding
        // changed (§5a 2).
        let (bindings, binding) = match request.bound {
            true => {
                let (each, whole) = bindings_of(history, parts.tools, target.account.as_deref());
                // A kept turn behind a replayed compaction block: its binding as stamped.
                let each = each
                    .into_iter()
                    .map(|b| b.map(|now| rekey.binding.get(&now).cloned().unwrap_or(now)))
                    .collect::<Vec<_>>();
                (each, Some(whole))
            }
            false => (Vec::new(), None),
        };
        // A turn an earlier request left out stays out, and every earlier one with it (§5a 3).
        let cut = replay::last_changed(history, &bindings).max(replay::last_left_out(history));
        Turns {
            system: Vec::new(),
            wire: Vec::new(),
            mid_system: false,
            sent_kinds: BTreeSet::new(),
            digest: PrefixDigest::new(),
            latest_starts_with_thinking: None,
            compaction_replayed: false,
            bindings,
            binding,
            cut,
            gone: Vec::new(),
            replayed_bound: false,
            unknown_prefix: false,
            carriers: hermes_core::CarrierCounts::default(),
        }
    }

    /// The blocks of the assistant message `history[i]` (its `prefix` digest, `in_loop` inside
    /// the tool loop): the thinking this target may receive, bound on a bound model
    /// (docs/spec.md §5a), with the carrier outcome and the `explain` line.
    fn assistant(
        &mut self,
        request: &mut Request<'_>,
        history: &'h [Message],
        i: usize,
        prefix: &str,
        in_loop: bool,
        drops: &Drops,
    ) -> Vec<Block<'h>> {
        let (parts, target) = (request.parts, request.target);
        let decision = parts.decision;
        let msg = &history[i];
        let bound = request.bound;
        let items = stored_blocks(msg);
        let (thinking, why) = assistant_thinking(
            msg,
            &items,
            in_loop,
            prefix,
            request.family,
            request.keeps_prior,
            &request.refused,
            drops.blocks_of.contains(&i),
            &decision.target,
        );
        let bound_prefix = self.bindings.get(i).and_then(Option::as_deref);
        let at_cut = self.cut.is_some_and(|c| i <= c);
        let (thinking, why) = match bound_prefix.is_some() || at_cut {
            true => bind(
                msg,
                thinking,
                why,
                bound_prefix,
                || PrefixParts::of(&history[..i], parts.tools, target.account.as_deref()),
                at_cut,
                &mut self.unknown_prefix,
                &mut self.carriers,
            ),
            false => (thinking, why),
        };
        // A bound model remembers a block a request left out, whatever the reason (a
        // changed prefix, a later step's, an `Invalid signature` answer): the turn's own
        // blocks, not sent now, are left out for good (docs/spec.md §5a 3).
        if bound
            && !items.is_empty()
            && !matches!(thinking, Thinking::Stored(_))
            && stored::own(msg, &decision.target)
            && !left_out::is_left_out(msg)
            && let Some(id) = left_out::carrier_id(msg)
        {
            self.gone.push(id);
        }
        if bound && matches!(thinking, Thinking::Stored(_)) {
            self.replayed_bound = true;
        }
        request.explain.push(format!("message {i}: {why}"));
        match carrier_outcome(msg, !items.is_empty(), &thinking, &decision.target) {
            Some(Outcome::Demoted) => self.carriers.demoted += 1,
            Some(Outcome::Provenance) => self.carriers.dropped_provenance += 1,
            None => {}
        }
        assemble(msg, thinking, &mut self.sent_kinds)
    }

    /// A threshold compaction's block (docs/spec.md §7): first in its reply's `blocks`, to its
    /// minter only; the API reads the conversation from it on ("append the response as usual",
    /// docs.claude.com "Compaction"), so what precedes it still goes as stored and every
    /// stamped prefix holds. Elsewhere it is left out: the turns it stood for are all still in
    /// the history.
    fn threshold_compaction(
        &mut self,
        request: &mut Request<'_>,
        msg: &'h Message,
        i: usize,
        blocks: &mut Vec<Block<'h>>,
    ) {
        let Some(block) = hermes_core::checkpoint::compaction_block(msg) else {
            return;
        };
        let own = request.family == Family::Claude
            && stored::own(msg, &request.parts.decision.target)
            && super::compaction::stored_account(msg) == request.target.account;
        if own {
            blocks.insert(0, Block::Stored(block));
            self.compaction_replayed = true;
            request.explain.push(format!(
                "message {i}: the provider's threshold compaction block replayed first in its reply (docs/spec.md §7)"
            ));
        } else {
            request.explain.push(format!(
                "message {i}: the provider's threshold compaction block left out (minted for another model, host or account; the turns it stood for are sent)"
            ));
        }
    }
}

/// What the third stage of [`encode`] settles once the turns are planned.
struct Settled<'p> {
    /// hermes' own cache breakpoints go only where the client placed none.
    client_cache: bool,
    /// The client's function tools, parsed.
    tools: Option<Vec<ChatTool<'p>>>,
    /// The sampling fields.
    sampling: SamplingPlan,
    /// The betas, in the order sent.
    betas: Vec<&'p str>,
}

/// The third stage of [`encode`]: thinking disabled when the latest turn would draw an error,
/// the cache breakpoint, the tools and sampling fields, `block_binding` and the betas.
fn settle<'p>(
    request: &mut Request<'p>,
    turns: &mut Turns<'_>,
    history: &[Message],
    drops: &'p Drops,
) -> Result<Settled<'p>, EncodeError> {
    let (parts, target, model) = (request.parts, request.target, request.model);
    // Inside the loop, a latest turn without a thinking block this target may receive would
    // draw "Expected `thinking`… found `tool_use`": send this request with thinking disabled.
    if let Some(why) = replay::thinking_must_go(
        history,
        request.plan.on,
        drops.thinking_off,
        turns.latest_starts_with_thinking,
        model,
    ) {
        request.notes.push(format!(
            "thinking is disabled for this request: {why} (the stored history is unchanged)"
        ));
        request
            .explain
            .push(format!("thinking disabled for this request: {why}"));
        turns.carriers.demoted += 1;
        request.plan = ThinkingPlan {
            thinking: request.plan.off.clone(),
            max_tokens: default_max_tokens(target, model),
            ..ThinkingPlan::default()
        };
    }

    // hermes' own cache breakpoints only where the client placed none.
    let client_cache = request.claude_native
        && (history.iter().any(|m| {
            m.client_blocks
                .as_ref()
                .is_some_and(|b| b.get().contains("\"cache_control\""))
        }) || request
            .passthrough
            .and_then(|p| p.tools.as_ref())
            .is_some_and(|t| t.get().contains("\"cache_control\"")));
    if let Some(last) = turns.wire.last_mut().filter(|_| !client_cache) {
        last.extra.cache = true;
    }
    let tools = match parts.tools {
        Some(t) => Some(
            serde_json::from_str::<Vec<ChatTool<'_>>>(t.get())
                .map_err(|e| EncodeError::Tools(e.to_string()))?,
        ),
        None => None,
    };
    if request.server_tools.is_empty() {
        check_tool_choice(parts.sampling, parts.tools, "the Anthropic Messages API")?;
    }
    let sampling = sampling_plan(parts.sampling, &request.plan, model)?;
    if let Some(max) = parts.sampling.max_tokens {
        request.plan.max_tokens = max;
    }
    request.explain.extend(sampling.explain.iter().cloned());
    let betas = betas(request, turns, drops);
    Ok(Settled {
        client_cache,
        tools,
        sampling,
        betas,
    })
}

/// The betas a request needs, in the order sent: the thinking plan's, the client's (unless
/// `drops` says), then hermes' own for a mid-conversation system message, `block_binding` and
/// compaction. Sets `block_binding` `drop_block` (§5a 4) when blocks are replayed to a bound
/// model: the provider drops one it finds bound elsewhere instead of refusing the request —
/// unless the client set its own binding.
fn betas<'p>(request: &mut Request<'p>, turns: &Turns<'_>, drops: &Drops) -> Vec<&'p str> {
    let mut binding_beta = false;
    if turns.replayed_bound && !request.client_binding {
        match request.plan.thinking.as_deref() {
            Some(thinking) => {
                request.plan.thinking = Some(with_member(thinking, DROP_BLOCK));
                binding_beta = true;
                request.explain.push(format!(
                    "thinking.block_binding drop_block ({BINDING_BETA}): a bound model drops a block it finds bound elsewhere{}",
                    if turns.unknown_prefix {
                        " (some replayed blocks have no recorded prefix)"
                    } else {
                        ""
                    }
                ));
            }
            None => request.explain.push(
                "blocks replayed to a bound model without a thinking object: no block_binding to set".to_owned(),
            ),
        }
    }
    let mut betas: Vec<&str> = request.plan.beta.into_iter().collect();
    let client_betas = request
        .passthrough
        .filter(|_| !drops.client_betas)
        .map_or(&[][..], |p| &p.betas[..]);
    for beta in client_betas {
        if !betas.contains(&beta.as_str()) {
            betas.push(beta);
        }
    }
    if turns.mid_system && !betas.contains(&MID_CONVERSATION_SYSTEM_BETA) {
        betas.push(MID_CONVERSATION_SYSTEM_BETA);
    }
    if binding_beta && !betas.contains(&BINDING_BETA) {
        betas.push(BINDING_BETA);
    }
    if (turns.compaction_replayed || request.compaction_request)
        && !betas.contains(&super::compaction::COMPACTION_BETA)
    {
        betas.push(super::compaction::COMPACTION_BETA);
    }
    betas
}

/// The last stage of [`encode`]: the body's bytes and what the reply is stamped with, from
/// the planned request, turns and settled fields.
fn render(
    mut request: Request<'_>,
    mut turns: Turns<'_>,
    settled: Settled<'_>,
    history: &[Message],
) -> Result<Encoded, EncodeError> {
    let (parts, target, model) = (request.parts, request.target, request.model);
    let passthrough = request.passthrough;
    if let Some(p) = passthrough.filter(|p| !p.is_empty()) {
        request.explain.push(passthrough_line(p));
    }
    let Settled {
        client_cache,
        tools,
        sampling,
        betas,
    } = settled;
    let tools = match (tools, request.server_tools) {
        (None, []) => None,
        (client, server) => Some(Tools {
            client: client
                .unwrap_or_default()
                .into_iter()
                .map(|t| Tool(t.function))
                .collect(),
            server,
        }),
    };
    let bedrock = target.flavor == Flavor::Bedrock;
    let wire = &turns.wire;
    let body = Body {
        model: matches!(target.flavor, Flavor::Direct | Flavor::Foundry).then_some(model),
        anthropic_version: match target.flavor {
            Flavor::Vertex { .. } => Some(ANTHROPIC_VERSION),
            Flavor::Bedrock => Some(BEDROCK_VERSION),
            Flavor::Direct | Flavor::Foundry => None,
        },
        anthropic_beta: if bedrock { &betas[..] } else { &[] },
        max_tokens: request.plan.max_tokens,
        system: (!turns.system.is_empty()).then_some(System {
            blocks: std::mem::take(&mut turns.system),
            cache_last: !client_cache,
        }),
        messages: wire,
        tools,
        tools_as_sent: passthrough.and_then(|p| p.tools.as_ref()),
        fields: passthrough.map_or(&[][..], |p| &p.fields[..]),
        thinking: request.plan.thinking.as_deref().map(raw_box),
        effort: request.plan.effort,
        tool_choice: sampling.tool_choice,
        format: sampling.format,
        stop_sequences: &parts.sampling.stop,
        user: parts.sampling.user.as_deref(),
        // Bedrock: the operation streams, and the `AnthropicBedrock` client pops `stream` off
        // the body (`lib/bedrock/_client.py` line 69).
        stream: parts.stream && !bedrock,
    };
    // Sized from what the messages copy (the rest is small).
    let size = wire
        .iter()
        .map(|w| w.extra.text.map_or(0, |t| t.get().len()) + 32)
        .chain(wire.iter().flat_map(|w| &w.parts).map(Block::size_hint))
        .sum::<usize>();
    let bytes = write_json_with_capacity(&body, 1024 + size)?;
    let binding = turns.binding;
    Ok(Encoded {
        body: bytes,
        refusable: turns.sent_kinds.into_iter().collect(),
        messages: wire.len(),
        notes: request.notes,
        explain: request.explain,
        carriers: turns.carriers,
        wire: Bound {
            digest: turns.digest.hex(),
            sources: json::sources(wire),
            beta: (!bedrock && !betas.is_empty()).then(|| betas.join(",")),
            version: passthrough.and_then(|p| p.version.clone()),
            prefix_parts: binding.as_ref().and_then(|_| {
                RawJson::from_serialize(&PrefixParts::of(
                    history,
                    parts.tools,
                    target.account.as_deref(),
                ))
                .ok()
            }),
            binding,
            compaction_account: target
                .account
                .clone()
                .filter(|_| request.compaction_request || request.threshold_request),
            left_out: {
                // A turn the client sent twice is one turn.
                turns.gone.sort_unstable();
                turns.gone.dedup();
                turns.gone
            },
        },
    })
}

/// The `explain` line of a gateway client's own parts sent as written.
fn passthrough_line(p: &hermes_core::Passthrough) -> String {
    let fields: Vec<&str> = p.fields.iter().map(|(k, _)| k.as_str()).collect();
    format!(
        "the client's own: {} beta(s), {} server tool(s){}{}{}",
        p.betas.len(),
        p.server_tools.len(),
        if p.thinking.is_some() {
            ", its thinking object as sent"
        } else {
            ""
        },
        if p.tools.is_some() {
            ", its tools as sent"
        } else {
            ""
        },
        if fields.is_empty() {
            String::new()
        } else {
            format!(", {} as sent", fields.join(", "))
        }
    )
}

/// Whether the request carries the top-level field `key` among what it passes through as
/// written (a gateway client's fields, or hermes' own compaction request).
fn passthrough_field(parts: &RequestParts<'_>, key: &str) -> bool {
    parts.passthrough.field(key).is_some()
}

/// What the Anthropic codec did to an assistant message's thinking, for the carrier counts.
enum Outcome {
    /// Signed blocks, or nothing but the must-echo pad, sent as an unsigned block.
    Demoted,
    /// Stored blocks left out because another model or host minted them.
    Provenance,
}

/// The carrier outcome of `thinking` for `msg`, which stores Anthropic-shaped blocks when
/// `signed_blocks` (none: replayed as stored, or nothing to send).
fn carrier_outcome(
    msg: &Message,
    signed_blocks: bool,
    thinking: &Thinking<'_>,
    target: &hermes_core::RouteTarget,
) -> Option<Outcome> {
    match thinking {
        Thinking::Unsigned(text) if signed_blocks || text == hermes_core::PAD => {
            Some(Outcome::Demoted)
        }
        Thinking::None if signed_blocks && msg.origin.is_some() && !stored::own(msg, target) => {
            Some(Outcome::Provenance)
        }
        _ => None,
    }
}

/// Adds blocks to the wire ([`json::push_turn_with`]); a lone user message's string content
/// (`plain`) joins a merged turn as a text block, as does the one it merges into.
fn push<'h>(
    wire: &mut Vec<WireMessage<'h>>,
    role: &'static str,
    blocks: Vec<Block<'h>>,
    plain: Option<&'h RawJson>,
    source: usize,
) {
    let extra = Plain {
        text: plain,
        cache: false,
    };
    json::push_turn_with(wire, role, blocks, source, extra, |last, this| {
        if let Some(text) = last.extra.text.take() {
            last.parts.insert(0, Block::Text(text.as_raw()));
        }
        if let Some(text) = this.text {
            last.parts.push(Block::Text(text.as_raw()));
        }
    });
}

/// A message's stored Anthropic-shaped items ([`anthropic_kind`]): each as stored, its kind,
/// and whether it is signed. Read once per message.
fn stored_blocks(msg: &Message) -> Vec<(&RawJson, &'static str, bool)> {
    msg.reasoning_details
        .iter()
        .flatten()
        .filter_map(|item| anthropic_kind(item).map(|(kind, signed)| (item.raw(), kind, signed)))
        .collect()
}

/// Which thinking blocks an assistant message sends, and why; `items` are its
/// [`stored_blocks`].
#[allow(clippy::too_many_arguments)]
fn assistant_thinking<'h>(
    msg: &'h Message,
    items: &[(&'h RawJson, &'static str, bool)],
    in_loop: bool,
    prefix: &str,
    family: Family,
    keeps_prior: bool,
    refused: &[&str],
    dropped: bool,
    target: &hermes_core::RouteTarget,
) -> (Thinking<'h>, String) {
    let origin_ok = stored::own(msg, target);
    // Decoded only where a family sends it.
    let readable = || msg.replayable_text().map(|t| t.text().into_owned());
    if refused.contains(&"thinking") {
        return (
            Thinking::None,
            "thinking blocks refused by this target (verdict)".into(),
        );
    }
    if dropped {
        return (
            Thinking::None,
            "thinking blocks left out after an `Invalid signature` answer".into(),
        );
    }
    match family {
        Family::Unknown => (Thinking::None, "no thinking to an unknown relay".into()),
        Family::Echo => match readable() {
            Some(text) => (
                Thinking::Unsigned(text),
                "readable thinking sent unsigned".into(),
            ),
            None => (
                Thinking::Unsigned(hermes_core::PAD.to_owned()),
                "no stored thinking: must-echo pad \" \" sent as an unsigned block".into(),
            ),
        },
        Family::Kimi if items.is_empty() => match readable() {
            Some(text) => (
                Thinking::Unsigned(text),
                "readable thinking sent unsigned".into(),
            ),
            None => (Thinking::None, "no stored thinking".into()),
        },
        _ if items.is_empty() => (Thinking::None, "no stored thinking blocks".into()),
        _ if !origin_ok => (
            Thinking::None,
            "thinking blocks minted by another model or host: left out (provenance)".into(),
        ),
        Family::Claude | Family::Kimi | Family::MiniMax => {
            let signed = items.iter().any(|i| i.2);
            let redacted = items.iter().any(|i| i.1 == "redacted_thinking");
            if let Some(why) =
                replay::verdict_leaves_out(refused, "redacted_thinking", signed, redacted)
            {
                return (Thinking::None, why.into());
            }
            let stored = Thinking::Stored(items.iter().map(|i| i.0).collect());
            if family != Family::Claude {
                return (stored, "stored thinking blocks replayed as they are".into());
            }
            match replay::signed_replay(msg, in_loop, keeps_prior, prefix) {
                Ok(why) => (stored, why.into()),
                Err(why) => (Thinking::None, why.into()),
            }
        }
    }
}

enum Thinking<'h> {
    None,
    Stored(Vec<&'h RawJson>),
    Unsigned(String),
}

/// The blocks of an assistant turn, in its captured order.
fn assemble<'h>(
    msg: &'h Message,
    thinking: Thinking<'h>,
    sent: &mut BTreeSet<&'static str>,
) -> Vec<Block<'h>> {
    let texts = text_parts(msg.content.as_ref())
        .into_iter()
        .map(Block::Text);
    let calls = msg
        .tool_calls
        .iter()
        .flatten()
        .filter(|c| c.id.is_some())
        .map(|c| Block::ToolUse {
            id: c.id.as_deref().unwrap_or_default(),
            name: &c.function.name,
            input: tool_input(c),
        });
    let (lead, stored) = match thinking {
        Thinking::None => (Vec::new(), Vec::new()),
        Thinking::Stored(items) => (Vec::new(), items),
        Thinking::Unsigned(text) => {
            sent.insert("thinking");
            (vec![Block::Unsigned(text)], Vec::new())
        }
    };
    for raw in &stored {
        let kind = if raw.get().contains("\"redacted_thinking\"") {
            "redacted_thinking"
        } else {
            "thinking"
        };
        sent.insert(kind);
        if raw.get().contains("\"signature\"") {
            sent.insert("signature");
        }
    }
    let stored = stored.into_iter().map(|raw| Some(Block::Stored(raw)));
    replay::arrange(msg, lead, stored, texts, calls)
}

struct Body<'a, 'h> {
    model: Option<&'a str>,
    anthropic_version: Option<&'static str>,
    /// Bedrock's `anthropic_beta` list (not written when empty).
    anthropic_beta: &'a [&'a str],
    max_tokens: u32,
    system: Option<System<'h>>,
    messages: &'a [WireMessage<'h>],
    tools: Option<Tools<'a>>,
    /// A gateway client's `tools` as written, sent instead of `tools`.
    tools_as_sent: Option<&'a RawJson>,
    /// A gateway client's top-level keys as written ([`hermes_core::Passthrough::fields`]):
    /// a key written here too is the client's.
    fields: &'a [(String, RawJson)],
    thinking: Option<Box<RawValue>>,
    effort: Option<&'static str>,
    tool_choice: Option<Value>,
    /// `output_config.format`.
    format: Option<Value>,
    stop_sequences: &'a [String],
    /// `metadata.user_id`.
    user: Option<&'a str>,
    stream: bool,
}

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(model) = self.model {
            map.serialize_entry("model", model)?;
        }
        if let Some(v) = self.anthropic_version {
            map.serialize_entry("anthropic_version", v)?;
        }
        if !self.anthropic_beta.is_empty() {
            map.serialize_entry("anthropic_beta", self.anthropic_beta)?;
        }
        map.serialize_entry("max_tokens", &self.max_tokens)?;
        if let Some(system) = &self.system {
            map.serialize_entry("system", system)?;
        }
        map.serialize_entry("messages", &WireMessages(self.messages))?;
        let client = |key: &str| self.fields.iter().any(|(k, _)| k == key);
        if let Some(tools) = self.tools_as_sent {
            map.serialize_entry("tools", tools)?;
        } else if let Some(tools) = &self.tools {
            map.serialize_entry("tools", tools)?;
        }
        if let Some(choice) = &self.tool_choice {
            map.serialize_entry("tool_choice", choice)?;
        }
        if let Some(thinking) = &self.thinking {
            map.serialize_entry("thinking", thinking)?;
        }
        if (self.effort.is_some() || self.format.is_some()) && !client("output_config") {
            map.serialize_entry(
                "output_config",
                &OutputConfig {
                    effort: self.effort,
                    format: self.format.as_ref(),
                },
            )?;
        }
        if !self.stop_sequences.is_empty() {
            map.serialize_entry("stop_sequences", self.stop_sequences)?;
        }
        if let Some(user) = self.user.filter(|_| !client("metadata")) {
            map.serialize_entry("metadata", &serde_json::json!({ "user_id": user }))?;
        }
        for (key, value) in self.fields {
            map.serialize_entry(key, value)?;
        }
        if self.stream {
            map.serialize_entry("stream", &true)?;
        }

        map.end()
    }
}

/// `output_config`: the effort of adaptive thinking and the structured-output format.
#[derive(Serialize)]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
}

/// The sampling parameters in Messages spelling.
struct SamplingPlan {
    tool_choice: Option<Value>,
    format: Option<Value>,
    explain: Vec<String>,
}

/// Maps `sampling` onto the Messages API as the official `anthropic` SDK 2.16.0 types it
/// (`MessageCreateParamsBase`: `max_tokens`, `stop_sequences`, `tool_choice`
/// (`ToolChoiceAuto/Any/Tool/NoneParam`, `disable_parallel_tool_use`), `metadata.user_id`,
/// `output_config.format` `{"type":"json_schema","schema"}`; no `temperature`, `top_p`, `top_k`
/// or `seed`). With thinking on, a forced tool choice is refused (docs.claude.com extended
/// thinking: "tool_choice: any / tool … not supported"; docs/providers.md, Anthropic), as is a
/// `max_tokens` not above the budget: an error, never a silent change (docs/spec.md §3c).
fn sampling_plan(
    sampling: &Sampling,
    plan: &ThinkingPlan,
    model: &str,
) -> Result<SamplingPlan, Unsupported> {
    let wire = || format!("the Anthropic Messages API ({model})");
    let none = |parameter| {
        Unsupported::new(
            parameter,
            wire(),
            format!(
                "Messages API version {ANTHROPIC_VERSION} has no {parameter} (the anthropic SDK 2.16.0 MessageCreateParams)"
            ),
        )
    };
    let mut out = SamplingPlan {
        tool_choice: None,
        format: None,
        explain: Vec::new(),
    };
    if sampling.temperature.is_some() {
        return Err(none("temperature"));
    }
    if sampling.top_p.is_some() {
        return Err(none("top_p"));
    }
    if sampling.top_k.is_some() {
        return Err(none("top_k"));
    }
    if sampling.seed.is_some() {
        return Err(none("seed"));
    }
    if let Some(max) = sampling.max_tokens {
        if let Some(budget) = plan.budget.filter(|b| max <= *b) {
            return Err(Unsupported::new(
                "max_tokens",
                wire(),
                format!(
                    "max_tokens {max} is not above the thinking budget {budget} (budget_tokens must be below max_tokens); raise it or lower --effort"
                ),
            ));
        }
        out.explain.push(format!("max_tokens {max}: sampling"));
    }
    if !sampling.stop.is_empty() {
        out.explain
            .push("stop → stop_sequences: sampling".to_owned());
    }
    let mut choice = match &sampling.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(json!({"type": "auto"})),
        Some(ToolChoice::None) => Some(json!({"type": "none"})),
        Some(forced @ (ToolChoice::Required | ToolChoice::Function(_))) if plan.on => {
            return Err(Unsupported::new(
                "tool_choice",
                wire(),
                format!(
                    "with thinking on, Claude takes only tool_choice auto or none, not {forced:?}; ask without --effort (or with --no-thinking) to force a tool"
                ),
            ));
        }
        Some(ToolChoice::Required) => Some(json!({"type": "any"})),
        Some(ToolChoice::Function(name)) => Some(json!({"type": "tool", "name": name})),
        Some(other) => {
            return Err(Unsupported::new(
                "tool_choice",
                wire(),
                format!("{other:?} has no Messages spelling"),
            ));
        }
    };
    if let Some(parallel) = sampling.parallel_tool_calls {
        let object = choice.get_or_insert_with(|| json!({"type": "auto"}));
        if object["type"] == "none" {
            return Err(Unsupported::new(
                "parallel_tool_calls",
                wire(),
                "tool_choice none takes no disable_parallel_tool_use (no tool is called)",
            ));
        }
        object["disable_parallel_tool_use"] = json!(!parallel);
        out.explain.push(format!(
            "parallel_tool_calls {parallel} → tool_choice.disable_parallel_tool_use {}",
            !parallel
        ));
    }
    out.tool_choice = choice;
    match &sampling.response_format {
        None => {}
        Some(ResponseFormat::Text) => out
            .explain
            .push("response_format text: Claude's default, nothing sent".to_owned()),
        Some(ResponseFormat::JsonObject) => {
            return Err(Unsupported::new(
                "response_format",
                wire(),
                "Claude has no schema-less JSON mode; its structured outputs take a JSON schema (output_config.format json_schema)",
            ));
        }
        Some(ResponseFormat::JsonSchema { name, schema, .. }) => {
            out.format = Some(json!({"type": "json_schema", "schema": schema_value(schema)}));
            out.explain.push(format!(
                "response_format json_schema {name} → output_config.format (the name is not sent; Claude's structured outputs are always strict)"
            ));
        }
        Some(other) => {
            return Err(Unsupported::new(
                "response_format",
                wire(),
                format!("{other:?} has no Messages spelling"),
            ));
        }
    }
    if sampling.user.is_some() {
        out.explain.push("user → metadata.user_id".to_owned());
    }
    Ok(out)
}
