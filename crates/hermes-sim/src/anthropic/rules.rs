//! Request rules of the `anthropic` profile, written from docs/providers.md ("Anthropic Messages
//! (and Vertex, Azure Foundry)", "Tool-call pairing") and the profile's contract.
//!
//! Every refusal here is an HTTP 400 `invalid_request_error`; the caller wraps the text in the
//! envelope. Texts are the real ones unless a comment says "simulator-chosen" (no exact wording
//! in docs/providers.md). Checks run in this order: top-level names and values, `system`, `tools`,
//! `tool_choice`, `thinking`, `output_config`, `context_management`, each message and block
//! (schema; a `system` message inside `messages` only with the `anthropic-beta`
//! `mid-conversation-system-2026-04-07`, else the role's literal error), the number of
//! `cache_control` breakpoints, the thinking settings against `max_tokens` / `temperature` /
//! `tool_choice`, the turn order, tool-use pairing, every thinking signature, then (in an
//! in-flight tool loop with thinking on) the first block and the unmodified thinking blocks of
//! the latest assistant turn.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Mutex;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::binding::{self, BLOCK_BINDING_BETA, Ledger, Reason};
use super::compaction::{self, COMPACTION_BETA, COMPACTION_BLOCK_KEYS};
use super::thinking::{self, Binding, PrefixDigest, Token};

/// Top-level names the `anthropic` profile knows (on Vertex `model` is refused and
/// `anthropic_version` is required instead).
pub const ANTHROPIC_TOP_LEVEL: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "stream",
    "thinking",
    "output_config",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "service_tier",
    "cache_control",
    "context_management",
];

/// The tools Anthropic defines, by `type` prefix (a date follows), with the keys each takes
/// beyond `type`, `cache_control` and (for all but the toolsets) `name`, `allowed_callers`,
/// `defer_loading` and `strict`: the `anthropic` SDK 2.16.0 `ToolUnionParam` members.
const SERVER_TOOLS: &[(&str, &[&str])] = &[
    ("bash_", &["input_examples"]),
    ("code_execution_", &[]),
    ("memory_", &["input_examples"]),
    ("text_editor_", &["input_examples", "max_characters"]),
    (
        "web_search_",
        &[
            "allowed_domains",
            "blocked_domains",
            "max_uses",
            "user_location",
            "response_inclusion",
        ],
    ),
    (
        "web_fetch_",
        &[
            "allowed_domains",
            "blocked_domains",
            "citations",
            "max_content_tokens",
            "max_uses",
            "url_sources",
            "use_cache",
            "response_inclusion",
        ],
    ),
    ("tool_search_tool_bm25_", &[]),
    ("tool_search_tool_regex_", &[]),
    ("browser_toolset_", &["configs"]),
    ("computer_toolset_", &["configs"]),
];

/// `anthropic_version` values Vertex accepts in the body.
pub(crate) const VERTEX_VERSIONS: &[&str] = &["vertex-2023-10-16", "2026-10-21"];

/// The `anthropic_version` Bedrock's InvokeModel requires in the body.
pub(crate) const BEDROCK_VERSION: &str = "bedrock-2023-05-31";

/// The beta that lets `budget_tokens` exceed `max_tokens` (interleaved thinking).
pub(crate) const INTERLEAVED_BETA: &str = "interleaved-thinking-2025-05-14";

/// The beta that admits `{"role":"system"}` messages inside `messages` (after the first).
pub(crate) const MID_CONVERSATION_SYSTEM_BETA: &str = "mid-conversation-system-2026-04-07";

/// The `context_management.edits[]` types and the keys each takes beside `type`.
const CONTEXT_EDITS: &[(&str, &[&str])] = &[
    (
        "clear_tool_uses_20250919",
        &[
            "trigger",
            "keep",
            "clear_at_least",
            "exclude_tools",
            "clear_tool_inputs",
        ],
    ),
    ("clear_thinking_20251015", &["keep"]),
    // anthropic 2.17.0 `types/beta/beta_compact_20260112_edit_param.py`.
    (
        "compact_20260112",
        &["trigger", "pause_after_compaction", "instructions"],
    ),
];

/// Most `cache_control` breakpoints in one request.
const MAX_BREAKPOINTS: usize = 4;

// The key lists below are the `anthropic` SDK's request params (`MessageCreateParams`,
// `TextBlockParam`, `ImageBlockParam`, `DocumentBlockParam`, `ToolUseBlockParam`,
// `ToolResultBlockParam`, `ThinkingBlockParam`, `RedactedThinkingBlockParam`, `ToolParam`,
// `CacheControlEphemeralParam`, `OutputConfigParam`) for the blocks the simulator models.
// hermes-conformance keeps its own copies for its wire invariants; its test
// `the_converse_and_messages_lists_are_the_simulators` holds the two to the same members
// (`crate::schema` re-exports them).

/// The block tags a message may hold, in the order the union-tag error lists them.
pub const BLOCK_TAGS: &[&str] = &[
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
];

/// The block tags a `tool_result`'s content list may hold.
pub const TOOL_RESULT_CONTENT_TAGS: &[&str] = &["text", "image", "document"];

/// Top-level names only some doors take: `anthropic_version` (Vertex, Bedrock InvokeModel)
/// and `anthropic_beta` (Bedrock InvokeModel), besides [`ANTHROPIC_TOP_LEVEL`].
pub const DOOR_TOP_LEVEL: &[&str] = &["anthropic_version", "anthropic_beta"];

/// Keys of a message.
pub const MESSAGE_KEYS: &[&str] = &["role", "content"];

/// Keys of a `text` block (a system block too).
pub const TEXT_KEYS: &[&str] = &["type", "text", "cache_control", "citations"];

/// Keys of an `image` block.
pub const IMAGE_KEYS: &[&str] = &["type", "source", "cache_control"];

/// Keys of a `document` block.
pub const DOCUMENT_KEYS: &[&str] = &[
    "type",
    "source",
    "title",
    "context",
    "citations",
    "cache_control",
];

/// Keys of a `thinking` block.
pub const THINKING_KEYS: &[&str] = &["type", "thinking", "signature"];

/// Keys of a `redacted_thinking` block.
pub const REDACTED_THINKING_KEYS: &[&str] = &["type", "data"];

/// Keys of a `tool_use` block.
pub const TOOL_USE_KEYS: &[&str] = &["type", "id", "name", "input", "cache_control"];

/// Keys of a `tool_result` block.
pub const TOOL_RESULT_KEYS: &[&str] = &[
    "type",
    "tool_use_id",
    "content",
    "is_error",
    "cache_control",
];

/// Keys of a custom tool (`tools[]` without a versioned `type`): `defer_loading` (tool search,
/// the `advanced-tool-use` beta) as Claude Code sends it on its deferred tools.
pub const CUSTOM_TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "cache_control",
    "type",
    "defer_loading",
];

/// Keys of `cache_control`.
pub const CACHE_CONTROL_KEYS: &[&str] = &["type", "ttl"];

/// Keys of `output_config`.
pub const OUTPUT_CONFIG_KEYS: &[&str] = &["effort", "format"];

/// Where the request came in, as far as the rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// `/v1/messages` or Foundry's `/anthropic/v1/messages`: `model` in the body.
    Body,
    /// Vertex: the model in the path, `anthropic_version` in the body, `stream` fixed by the verb.
    Vertex { stream: bool },
    /// AWS Bedrock InvokeModel: the model in the path, `anthropic_version: "bedrock-2023-05-31"`
    /// in the body, no `stream` key (the operation decides), betas in the body's `anthropic_beta`.
    Bedrock,
}

/// The request's thinking mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Thinking {
    /// Absent or `{"type":"disabled"}`.
    Off,
    /// `enabled` or `adaptive`; `omitted` is adaptive's `display: "omitted"` (empty thinking text).
    On { omitted: bool },
}

impl Thinking {
    pub(crate) fn on(self) -> bool {
        matches!(self, Thinking::On { .. })
    }
}

/// What the rules learned about an accepted request.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) thinking: Thinking,
    /// Number of `cache_control` breakpoints.
    pub(crate) breakpoints: usize,
    /// The request asks for an on-demand compaction (`compaction: {"type": "summarize"}`).
    pub(crate) compaction: bool,
    /// The input tokens past which the request asks to be compacted first (a
    /// `compact_20260112` edit; its default trigger is 150,000).
    pub(crate) compact_trigger: Option<u64>,
    /// `input_transformations` entries: the blocks `drop_block` dropped.
    pub(crate) transformations: Vec<Value>,
    /// Notes for the recorded request (one per dropped block).
    pub(crate) notes: Vec<String>,
}

/// Who sent a request, as far as binding cares: the model it names (from the path on Vertex and
/// Bedrock), the keyed hash of its credential, and the profile's memory of earlier requests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) model: &'a str,
    pub(crate) account: [u8; 32],
    pub(crate) ledger: &'a Mutex<Ledger>,
}

/// What `thinking.block_binding.prefix_mismatch_behavior` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Behavior {
    Error,
    DropBlock,
}

// ---------------------------------------------------------------- texts

/// Pydantic's unknown-key text (docs/providers.md:
/// `messages.13.content.0.thinking.cache_control: …`).
fn extra(path: &str, key: &str) -> String {
    format!("{}: Extra inputs are not permitted", join(path, key))
}

fn required(path: &str, key: &str) -> String {
    format!("{}: Field required", join(path, key))
}

/// Simulator-chosen (pydantic's wording for a wrong type).
fn wrong_type(path: &str, key: &str, what: &str) -> String {
    format!("{}: Input should be a valid {what}", join(path, key))
}

fn join(path: &str, key: &str) -> String {
    match (path.is_empty(), key.is_empty()) {
        (true, _) => key.to_owned(),
        (_, true) => path.to_owned(),
        _ => format!("{path}.{key}"),
    }
}

/// Simulator-chosen (pydantic's wording for a discriminated union with an unknown tag).
fn unknown_tag(path: &str, tag: &str, tags: &[&str]) -> String {
    let expected: Vec<String> = tags.iter().map(|t| format!("'{t}'")).collect();
    format!(
        "{path}: Input tag '{tag}' found using 'type' does not match any of the expected tags: {}",
        expected.join(", ")
    )
}

/// Simulator-chosen (pydantic's literal-error wording).
fn literal(path: &str, allowed: &[&str]) -> String {
    let quoted: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
    let list = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    };
    format!("{path}: Input should be {list}")
}

/// The contract's text for more than four breakpoints.
pub(crate) fn too_many_breakpoints(found: usize) -> String {
    format!(
        "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
    )
}

/// The contract's text for a budget under 1024.
pub(crate) const BUDGET_TOO_SMALL: &str =
    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";

/// Simulator-chosen: docs/providers.md states the rule (`budget_tokens` < `max_tokens` unless
/// interleaved) without the wording.
pub(crate) const BUDGET_NOT_UNDER_MAX: &str = "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size";

/// The contract's text for a temperature other than 1 while thinking.
pub(crate) const TEMPERATURE_WITH_THINKING: &str =
    "temperature may only be set to 1 when thinking is enabled or in adaptive mode";

/// Simulator-chosen: docs/providers.md says `tool_choice` is limited to auto/none while thinking.
pub(crate) const FORCED_TOOL_WITH_THINKING: &str =
    "Thinking may not be enabled when tool_choice forces tool use.";

/// Simulator-chosen.
pub(crate) const NO_MESSAGES: &str = "messages: at least one message is required";

/// Simulator-chosen (docs/providers.md states the rule, not the wording).
pub(crate) const FIRST_NOT_USER: &str = "messages: first message must use the \"user\" role";

/// docs/providers.md, "Tool-call pairing": `tool_use` ids without results right after.
pub(crate) fn unpaired_text(index: usize, ids: &[&str]) -> String {
    format!(
        "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ids.join(", ")
    )
}

/// The contract's text for a result answering no `tool_use` of the previous message.
pub(crate) fn orphan_text(index: usize, block: usize, id: &str) -> String {
    format!(
        "messages.{index}.content.{block}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )
}

/// docs/providers.md: a signature (or redacted data, `redacted_thinking`) that does not verify.
pub(crate) fn invalid_signature_text(index: usize, block: usize, kind: &str) -> String {
    format!("messages.{index}.content.{block}: Invalid `signature` in `{kind}` block")
}

/// docs/providers.md (Kilo-Org/kilocode#5219), typo "preceeding" included.
pub(crate) fn expected_thinking_text(index: usize, block: usize, found: &str) -> String {
    format!(
        "messages.{index}.content.{block}.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )
}

/// docs/providers.md (anthropics/claude-code#19539).
pub(crate) fn modified_text(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."
    )
}

/// Simulator-chosen: a block type in a message of the wrong role.
fn wrong_role_text(index: usize, block: usize, kind: &str, role: &str) -> String {
    format!(
        "messages.{index}.content.{block}: `{kind}` blocks are not allowed in `{role}` messages"
    )
}

/// The media types a base64 image source takes, in the order the API's error lists them
/// (`…image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or
/// 'image/webp'`, anthropics/claude-code#5955).
const IMAGE_MEDIA_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The real text for base64 data that is not an image of its `media_type` (`messages.0.content.4.
/// image.source.base64.data: Image does not match the provided media type image/webp`, a Claude
/// Code report of the API's 400).
fn image_mismatch(path: &str, media_type: &str) -> String {
    format!("{path}: Image does not match the provided media type {media_type}")
}

/// The media type the bytes' signature names (PNG, JPEG, GIF, WebP), if any.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

// ---------------------------------------------------------------- small readers

fn kind_of(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The message's blocks with their index (string content has none).
fn blocks(m: &Value) -> impl Iterator<Item = (usize, &Value)> {
    m.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64()
}

/// Runs of consecutive same-role messages (the API combines them into one turn). A `system`
/// message (mid-conversation) starts or ends no turn: a run may span it.
fn turns(messages: &[Value]) -> Vec<(&str, Range<usize>)> {
    let mut out: Vec<(&str, Range<usize>)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = role_of(m);
        if role == "system" {
            continue;
        }
        match out.last_mut() {
            Some((r, range)) if *r == role && !compaction_led(m) => range.end = i + 1,
            _ => out.push((role, i..i + 1)),
        }
    }
    out
}

// ---------------------------------------------------------------- schema

/// Walks the body's schema, counting `cache_control` breakpoints.
#[derive(Default)]
struct Schema {
    breakpoints: usize,
}

impl Schema {
    /// Checks the keys of `o` against `allowed`, then that `needed` are present.
    fn keys(
        &self,
        o: &Map<String, Value>,
        path: &str,
        allowed: &[&str],
        needed: &[&str],
    ) -> Result<(), String> {
        if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(extra(path, k));
        }
        match needed.iter().find(|k| !o.contains_key(**k)) {
            Some(k) => Err(required(path, k)),
            None => Ok(()),
        }
    }

    /// `{type:"ephemeral", ttl?}`, counted as a breakpoint.
    fn cache_control(&mut self, v: &Value, path: &str) -> Result<(), String> {
        let o = v
            .as_object()
            .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
        self.keys(o, path, CACHE_CONTROL_KEYS, &["type"])?;
        if o.get("type").and_then(Value::as_str) != Some("ephemeral") {
            return Err(literal(&join(path, "type"), &["ephemeral"]));
        }
        if let Some(ttl) = o.get("ttl")
            && !matches!(ttl.as_str(), Some("5m" | "1h"))
        {
            return Err(literal(&join(path, "ttl"), &["5m", "1h"]));
        }
        self.breakpoints += 1;
        Ok(())
    }

    /// A string field that must hold a string when present.
    fn string(o: &Map<String, Value>, path: &str, key: &str) -> Result<(), String> {
        match o.get(key) {
            Some(v) if !v.is_string() => Err(wrong_type(path, key, "string")),
            _ => Ok(()),
        }
    }

    /// One content block at `path` (`messages.N.content.M`, or a `tool_result`'s inner block),
    /// whose allowed tags are `tags`.
    fn block(&mut self, b: &Value, path: &str, tags: &[&str]) -> Result<(), String> {
        let o = b
            .as_object()
            .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
        let Some(tag) = o.get("type").and_then(Value::as_str) else {
            // Simulator-chosen (pydantic's missing-discriminator wording).
            return Err(format!(
                "{path}: Unable to extract tag using discriminator 'type'"
            ));
        };
        if !tags.contains(&tag) {
            return Err(unknown_tag(path, tag, tags));
        }
        let at = join(path, tag);
        let (allowed, needed, strings): (&[&str], &[&str], &[&str]) = match tag {
            "text" => (TEXT_KEYS, &["text"], &["text"]),
            "thinking" => (
                THINKING_KEYS,
                &["thinking", "signature"],
                &["thinking", "signature"],
            ),
            "redacted_thinking" => (REDACTED_THINKING_KEYS, &["data"], &["data"]),
            "tool_use" => (TOOL_USE_KEYS, &["id", "name", "input"], &["id", "name"]),
            "tool_result" => (TOOL_RESULT_KEYS, &["tool_use_id"], &["tool_use_id"]),
            // A document's source (PDF, plain text, content blocks, URL, file) is not modelled
            // beyond being there; `title` and `context` are strings.
            "document" => (DOCUMENT_KEYS, &["source"], &["title", "context"]),
            // "image"
            _ => (IMAGE_KEYS, &["source"], &[]),
        };
        self.keys(o, &at, allowed, needed)?;
        for key in strings {
            Schema::string(o, &at, key)?;
        }
        if tag == "tool_use" && o.get("input").is_some_and(|i| !i.is_object()) {
            return Err(wrong_type(&at, "input", "dictionary"));
        }
        if tag == "image"
            && let Some(source) = o.get("source")
        {
            self.image_source(source, &join(&at, "source"))?;
        }
        if tag == "tool_result" {
            if o.get("is_error").is_some_and(|e| !e.is_boolean()) {
                return Err(wrong_type(&at, "is_error", "boolean"));
            }
            match o.get("content") {
                None | Some(Value::String(_)) => {}
                Some(Value::Array(items)) => {
                    for (k, item) in items.iter().enumerate() {
                        self.block(item, &format!("{at}.content.{k}"), TOOL_RESULT_CONTENT_TAGS)?;
                    }
                }
                Some(_) => return Err(wrong_type(&at, "content", "list")),
            }
        }
        if let Some(cc) = o.get("cache_control") {
            self.cache_control(cc, &join(&at, "cache_control"))?;
        }
        Ok(())
    }

    /// An image block's `source`: `base64` (`media_type` one of [`IMAGE_MEDIA_TYPES`], `data`
    /// base64 whose bytes are of that type) or `url`.
    fn image_source(&self, v: &Value, path: &str) -> Result<(), String> {
        let o = v
            .as_object()
            .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
        let Some(tag) = o.get("type").and_then(Value::as_str) else {
            // Simulator-chosen (pydantic's missing-discriminator wording).
            return Err(format!(
                "{path}: Unable to extract tag using discriminator 'type'"
            ));
        };
        let at = join(path, tag);
        match tag {
            "base64" => {
                self.keys(
                    o,
                    &at,
                    &["type", "media_type", "data"],
                    &["media_type", "data"],
                )?;
                let media_type = o.get("media_type").and_then(Value::as_str).unwrap_or("");
                if !IMAGE_MEDIA_TYPES.contains(&media_type) {
                    return Err(literal(&join(&at, "media_type"), IMAGE_MEDIA_TYPES));
                }
                Schema::string(o, &at, "data")?;
                let data = o.get("data").and_then(Value::as_str).unwrap_or("");
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
                    // Simulator-chosen.
                    return Err(format!("{}: Invalid base64 data", join(&at, "data")));
                };
                if sniff(&bytes) != Some(media_type) {
                    return Err(image_mismatch(&join(&at, "data"), media_type));
                }
                Ok(())
            }
            "url" => {
                self.keys(o, &at, &["type", "url"], &["url"])?;
                Schema::string(o, &at, "url")
            }
            other => Err(unknown_tag(path, other, &["base64", "url"])),
        }
    }

    fn system(&mut self, v: &Value) -> Result<(), String> {
        match v {
            Value::String(_) => Ok(()),
            Value::Array(items) => {
                for (m, b) in items.iter().enumerate() {
                    let path = format!("system.{m}");
                    let o = b
                        .as_object()
                        .ok_or_else(|| wrong_type(&path, "", "dictionary"))?;
                    if o.get("type").and_then(Value::as_str) != Some("text") {
                        return Err(literal(&join(&path, "type"), &["text"]));
                    }
                    self.keys(o, &path, TEXT_KEYS, &["text"])?;
                    Schema::string(o, &path, "text")?;
                    if let Some(cc) = o.get("cache_control") {
                        self.cache_control(cc, &join(&path, "cache_control"))?;
                    }
                }
                Ok(())
            }
            _ => Err(wrong_type("system", "", "string")),
        }
    }

    fn tools(&mut self, v: &Value) -> Result<(), String> {
        let items = v
            .as_array()
            .ok_or_else(|| wrong_type("tools", "", "list"))?;
        for (m, t) in items.iter().enumerate() {
            let path = format!("tools.{m}");
            let o = t
                .as_object()
                .ok_or_else(|| wrong_type(&path, "", "dictionary"))?;
            if let Some(kind) = o
                .get("type")
                .and_then(Value::as_str)
                .filter(|k| *k != "custom")
            {
                self.server_tool(o, &path, kind)?;
                continue;
            }
            self.keys(o, &path, CUSTOM_TOOL_KEYS, &["name"])?;
            Schema::string(o, &path, "name")?;
            Schema::string(o, &path, "description")?;
            if o.get("input_schema").is_some_and(|s| !s.is_object()) {
                return Err(wrong_type(&path, "input_schema", "dictionary"));
            }
            if o.get("defer_loading").is_some_and(|d| !d.is_boolean()) {
                return Err(wrong_type(&path, "defer_loading", "boolean"));
            }
            if let Some(cc) = o.get("cache_control") {
                self.cache_control(cc, &join(&path, "cache_control"))?;
            }
        }
        Ok(())
    }

    /// A tool Anthropic defines (`type` versioned: web search, code execution, text editor…):
    /// its keys as the `anthropic` SDK 2.16.0 `ToolUnionParam` members type them.
    fn server_tool(
        &mut self,
        o: &Map<String, Value>,
        path: &str,
        kind: &str,
    ) -> Result<(), String> {
        let Some((_, extra_keys)) = SERVER_TOOLS.iter().find(|(prefix, _)| {
            kind.strip_prefix(prefix)
                .is_some_and(|date| date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()))
        }) else {
            let tags: Vec<&str> = SERVER_TOOLS
                .iter()
                .map(|(p, _)| p.trim_end_matches('_'))
                .collect();
            // Simulator-chosen.
            return Err(format!(
                "{}: unknown tool type `{kind}`; expected a custom tool or one of {}",
                join(path, "type"),
                tags.join(", ")
            ));
        };
        let toolset = kind.contains("toolset");
        let mut allowed = vec!["type", "cache_control"];
        if !toolset {
            allowed.extend(["name", "allowed_callers", "defer_loading", "strict"]);
        }
        allowed.extend(extra_keys.iter().copied());
        let needed: &[&str] = if toolset { &[] } else { &["name"] };
        self.keys(o, path, &allowed, needed)?;
        Schema::string(o, path, "name")?;
        if let Some(cc) = o.get("cache_control") {
            self.cache_control(cc, &join(path, "cache_control"))?;
        }
        Ok(())
    }

    /// A `compaction` block in a request: `content` and `encrypted_content` strings.
    fn compaction_block(&mut self, b: &Value, path: &str) -> Result<(), String> {
        let o = b
            .as_object()
            .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
        let at = join(path, "compaction");
        self.keys(
            o,
            &at,
            COMPACTION_BLOCK_KEYS,
            &["content", "encrypted_content"],
        )?;
        Schema::string(o, &at, "content")?;
        Schema::string(o, &at, "encrypted_content")?;
        if let Some(cc) = o.get("cache_control") {
            self.cache_control(cc, &join(&at, "cache_control"))?;
        }
        Ok(())
    }

    /// The messages; `system_messages`: the [`MID_CONVERSATION_SYSTEM_BETA`] is on, so a
    /// `system` message (a string or text blocks) is a role like the others.
    /// With `compaction` (the [`COMPACTION_BETA`] is on) an assistant message may lead with a
    /// `compaction` block.
    fn messages(
        &mut self,
        messages: &[Value],
        system_messages: bool,
        compaction: bool,
    ) -> Result<(), String> {
        for (n, m) in messages.iter().enumerate() {
            let path = format!("messages.{n}");
            let o = m
                .as_object()
                .ok_or_else(|| wrong_type(&path, "", "dictionary"))?;
            self.keys(o, &path, MESSAGE_KEYS, MESSAGE_KEYS)?;
            let role = o.get("role").and_then(Value::as_str).unwrap_or("");
            if role == "system" && system_messages {
                match o.get("content") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(items)) => {
                        for (j, b) in items.iter().enumerate() {
                            self.block(b, &format!("{path}.content.{j}"), &["text"])?;
                        }
                    }
                    _ => return Err(wrong_type(&path, "content", "list")),
                }
                continue;
            }
            if role != "user" && role != "assistant" {
                return Err(literal(&join(&path, "role"), &["user", "assistant"]));
            }
            match o.get("content") {
                Some(Value::String(_)) => {}
                Some(Value::Array(items)) => {
                    for (j, b) in items.iter().enumerate() {
                        let at = format!("{path}.content.{j}");
                        let kind = kind_of(b);
                        if compaction && kind == "compaction" && b.is_object() {
                            self.compaction_block(b, &at)?;
                            if role != "assistant" {
                                return Err(wrong_role_text(n, j, kind, role));
                            }
                            if j != 0 {
                                return Err(compaction::not_first_text(n, j));
                            }
                            continue;
                        }
                        self.block(b, &at, BLOCK_TAGS)?;
                        let wrong = match role {
                            "user" => {
                                matches!(kind, "thinking" | "redacted_thinking" | "tool_use")
                            }
                            _ => kind == "tool_result",
                        };
                        if wrong {
                            return Err(wrong_role_text(n, j, kind, role));
                        }
                    }
                }
                _ => return Err(wrong_type(&path, "content", "list")),
            }
        }
        Ok(())
    }
}

/// The thinking mode and (for `enabled`) the budget.
pub(crate) fn thinking(v: Option<&Value>) -> Result<(Thinking, Option<u64>), String> {
    let Some(v) = v else {
        return Ok((Thinking::Off, None));
    };
    let o = v
        .as_object()
        .ok_or_else(|| wrong_type("thinking", "", "dictionary"))?;
    let Some(tag) = o.get("type").and_then(Value::as_str) else {
        return Err(
            "thinking: Unable to extract tag using discriminator 'type'".to_owned(), // simulator-chosen
        );
    };
    let s = Schema::default();
    match tag {
        "enabled" => {
            s.keys(
                o,
                "thinking.enabled",
                &["type", "budget_tokens"],
                &["budget_tokens"],
            )?;
            let budget = o
                .get("budget_tokens")
                .filter(|b| is_integer(b))
                .ok_or_else(|| wrong_type("thinking.enabled", "budget_tokens", "integer"))?;
            match budget.as_u64() {
                Some(b) if b >= 1024 => Ok((Thinking::On { omitted: false }, Some(b))),
                _ => Err(BUDGET_TOO_SMALL.to_owned()),
            }
        }
        "disabled" => {
            s.keys(o, "thinking.disabled", &["type"], &[])?;
            Ok((Thinking::Off, None))
        }
        "adaptive" => {
            s.keys(o, "thinking.adaptive", &["type", "display"], &[])?;
            let omitted = match o.get("display") {
                None => false,
                Some(d) => match d.as_str() {
                    Some("summarized") => false,
                    Some("omitted") => true,
                    _ => {
                        return Err(literal(
                            "thinking.adaptive.display",
                            &["summarized", "omitted"],
                        ));
                    }
                },
            };
            Ok((Thinking::On { omitted }, None))
        }
        other => Err(unknown_tag(
            "thinking",
            other,
            &["enabled", "disabled", "adaptive"],
        )),
    }
}

fn tool_choice(v: &Value) -> Result<&str, String> {
    let o = v
        .as_object()
        .ok_or_else(|| wrong_type("tool_choice", "", "dictionary"))?;
    let tags = ["auto", "any", "tool", "none"];
    let tag = o.get("type").and_then(Value::as_str).unwrap_or("");
    if !tags.contains(&tag) {
        return Err(unknown_tag("tool_choice", tag, &tags));
    }
    let path = format!("tool_choice.{tag}");
    let s = Schema::default();
    match tag {
        "tool" => s.keys(
            o,
            &path,
            &["type", "name", "disable_parallel_tool_use"],
            &["name"],
        )?,
        "none" => s.keys(o, &path, &["type"], &[])?,
        _ => s.keys(o, &path, &["type", "disable_parallel_tool_use"], &[])?,
    }
    Ok(tag)
}

/// `context_management`: `{edits: [...]}`, each edit one of [`CONTEXT_EDITS`] with its keys;
/// `clear_thinking`'s `keep` is `"all"` or `{type: "thinking_turns", value: N}`.
fn context_management(v: &Value) -> Result<(), String> {
    let path = "context_management";
    let o = v
        .as_object()
        .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
    let s = Schema::default();
    s.keys(o, path, &["edits"], &[])?;
    let Some(edits) = o.get("edits") else {
        return Ok(());
    };
    let edits = edits
        .as_array()
        .ok_or_else(|| wrong_type(path, "edits", "list"))?;
    let tags: Vec<&str> = CONTEXT_EDITS.iter().map(|(t, _)| *t).collect();
    for (m, e) in edits.iter().enumerate() {
        let at = format!("{path}.edits.{m}");
        let eo = e
            .as_object()
            .ok_or_else(|| wrong_type(&at, "", "dictionary"))?;
        let tag = eo.get("type").and_then(Value::as_str).unwrap_or("");
        let Some((_, keys)) = CONTEXT_EDITS.iter().find(|(t, _)| *t == tag) else {
            return Err(unknown_tag(&at, tag, &tags));
        };
        let at = join(&at, tag);
        let mut allowed = vec!["type"];
        allowed.extend(keys.iter().copied());
        s.keys(eo, &at, &allowed, &[])?;
        if tag == "compact_20260112"
            && let Some(trigger) = eo.get("trigger").filter(|t| !t.is_null())
        {
            // anthropic 2.17.0 `beta_input_tokens_trigger_param.py`.
            let to = trigger
                .as_object()
                .ok_or_else(|| wrong_type(&at, "trigger", "dictionary"))?;
            let tat = join(&at, "trigger");
            s.keys(to, &tat, &["type", "value"], &["type", "value"])?;
            if to.get("type").and_then(Value::as_str) != Some("input_tokens") {
                return Err(literal(&join(&tat, "type"), &["input_tokens"]));
            }
            if !to.get("value").is_some_and(is_integer) {
                return Err(wrong_type(&tat, "value", "integer"));
            }
        }
        if tag == "clear_thinking_20251015"
            && let Some(keep) = eo.get("keep")
            && keep.as_str() != Some("all")
        {
            let ko = keep
                .as_object()
                .ok_or_else(|| wrong_type(&at, "keep", "dictionary"))?;
            let kat = join(&at, "keep");
            s.keys(ko, &kat, &["type", "value"], &["type", "value"])?;
            if ko.get("type").and_then(Value::as_str) != Some("thinking_turns") {
                return Err(literal(&join(&kat, "type"), &["thinking_turns"]));
            }
            if !ko.get("value").is_some_and(is_integer) {
                return Err(wrong_type(&kat, "value", "integer"));
            }
        }
    }
    Ok(())
}

pub(crate) fn output_config(v: &Value) -> Result<(), String> {
    let o = v
        .as_object()
        .ok_or_else(|| wrong_type("output_config", "", "dictionary"))?;
    Schema::default().keys(o, "output_config", OUTPUT_CONFIG_KEYS, &[])?;
    // Structured output (`format`: a JSON schema) is an object; its schema is not modelled.
    if o.get("format").is_some_and(|f| !f.is_object()) {
        return Err(wrong_type("output_config", "format", "dictionary"));
    }
    let efforts = ["low", "medium", "high", "xhigh", "max"];
    match o.get("effort") {
        Some(e) if !e.as_str().is_some_and(|e| efforts.contains(&e)) => {
            Err(literal("output_config.effort", &efforts))
        }
        _ => Ok(()),
    }
}

/// Top-level names and scalar values.
fn top_level(o: &Map<String, Value>, via: Via) -> Result<(), String> {
    let vertex = matches!(via, Via::Vertex { .. });
    let bedrock = via == Via::Bedrock;
    for k in o.keys() {
        let known = match k.as_str() {
            "model" => !vertex && !bedrock,
            "anthropic_version" => vertex || bedrock,
            // Bedrock takes betas in the body; the operation decides streaming
            // (sigoden/aichat#543: "extraneous key [stream] is not permitted").
            "anthropic_beta" => bedrock,
            "stream" => !bedrock,
            // On-demand compaction: beta-gated in `validate` (not a member of the compared
            // top-level list, which holds the non-beta names).
            "compaction" => true,
            k => ANTHROPIC_TOP_LEVEL.contains(&k),
        };
        if !known {
            return Err(extra("", k));
        }
    }
    if bedrock {
        let version = o
            .get("anthropic_version")
            .ok_or_else(|| required("", "anthropic_version"))?;
        if version.as_str() != Some(BEDROCK_VERSION) {
            return Err(literal("anthropic_version", &[BEDROCK_VERSION]));
        }
        if let Some(betas) = o.get("anthropic_beta")
            && !betas
                .as_array()
                .is_some_and(|b| b.iter().all(Value::is_string))
        {
            return Err(wrong_type("anthropic_beta", "", "list"));
        }
    }
    if let Via::Vertex { stream } = via {
        let version = o
            .get("anthropic_version")
            .ok_or_else(|| required("", "anthropic_version"))?;
        if !version
            .as_str()
            .is_some_and(|v| VERTEX_VERSIONS.contains(&v))
        {
            return Err(literal("anthropic_version", VERTEX_VERSIONS));
        }
        let streamed = o.get("stream").and_then(Value::as_bool) == Some(true);
        if stream && !streamed {
            // Simulator-chosen.
            return Err(
                "stream: `:streamRawPredict` requires `\"stream\": true`; use `:rawPredict` for a non-streamed message".to_owned(),
            );
        }
        if !stream && streamed {
            // Simulator-chosen.
            return Err(
                "stream: `:rawPredict` does not stream; use `:streamRawPredict` with `\"stream\": true`".to_owned(),
            );
        }
    } else if !bedrock {
        match o.get("model") {
            None => return Err(required("", "model")),
            Some(m) if !m.is_string() => return Err(wrong_type("model", "", "string")),
            _ => {}
        }
    }
    match o.get("messages") {
        None => return Err(required("", "messages")),
        Some(m) if !m.is_array() => return Err(wrong_type("messages", "", "list")),
        _ => {}
    }
    match o.get("max_tokens") {
        None => return Err(required("", "max_tokens")),
        Some(m) if !is_integer(m) => return Err(wrong_type("max_tokens", "", "integer")),
        Some(m) if m.as_u64().is_none_or(|m| m < 1) => {
            // Simulator-chosen.
            return Err("max_tokens: Input should be greater than or equal to 1".to_owned());
        }
        _ => {}
    }
    if o.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err(wrong_type("stream", "", "boolean"));
    }
    for key in ["temperature", "top_p"] {
        if o.get(key).is_some_and(|t| !t.is_number()) {
            return Err(wrong_type(key, "", "number"));
        }
    }
    if o.get("top_k").is_some_and(|t| !is_integer(t)) {
        return Err(wrong_type("top_k", "", "integer"));
    }
    if let Some(stops) = o.get("stop_sequences") {
        let ok = stops
            .as_array()
            .is_some_and(|s| s.iter().all(Value::is_string));
        if !ok {
            return Err(wrong_type("stop_sequences", "", "list"));
        }
    }
    if let Some(meta) = o.get("metadata") {
        let mo = meta
            .as_object()
            .ok_or_else(|| wrong_type("metadata", "", "dictionary"))?;
        Schema::default().keys(mo, "metadata", &["user_id"], &[])?;
        if mo
            .get("user_id")
            .is_some_and(|u| !u.is_string() && !u.is_null())
        {
            return Err(wrong_type("metadata", "user_id", "string"));
        }
    }
    if let Some(tier) = o.get("service_tier")
        && !matches!(tier.as_str(), Some("auto" | "standard_only"))
    {
        return Err(literal("service_tier", &["auto", "standard_only"]));
    }
    Ok(())
}

// ---------------------------------------------------------------- validate

/// Validates a parsed Messages request. `beta` is the `anthropic-beta` header (`""` when absent).
pub(crate) fn validate(
    body: &Value,
    via: Via,
    beta: &str,
    key: &[u8],
    ctx: Ctx<'_>,
) -> Result<Checked, String> {
    let o = body
        .as_object()
        .ok_or_else(|| "Input should be a valid dictionary".to_owned())?; // simulator-chosen
    top_level(o, via)?;
    let has_beta = |name: &str| beta.split(',').any(|b| b.trim() == name);
    // A replayed compaction block comes with either compaction beta (on-demand or threshold).
    let compaction_beta = has_beta(COMPACTION_BETA) || has_beta(compaction::THRESHOLD_BETA);
    let compaction = match o.get("compaction") {
        None => false,
        Some(_) if !has_beta(COMPACTION_BETA) => {
            return Err(compaction::needs_beta("compaction"));
        }
        Some(c) => {
            let co = c
                .as_object()
                .ok_or_else(|| wrong_type("compaction", "", "dictionary"))?;
            Schema::default().keys(co, "compaction", &["type"], &["type"])?;
            if co.get("type").and_then(Value::as_str) != Some("summarize") {
                return Err(literal("compaction.type", &["summarize"]));
            }
            true
        }
    };
    let mut schema = Schema::default();
    if let Some(system) = o.get("system") {
        schema.system(system)?;
    }
    if let Some(tools) = o.get("tools") {
        schema.tools(tools)?;
    }
    let choice = o.get("tool_choice").map(tool_choice).transpose()?;
    let (behavior, plain_thinking) = block_binding(o.get("thinking"))?;
    if behavior.is_some() && !has_beta(BLOCK_BINDING_BETA) {
        return Err(binding::binding_needs_beta());
    }
    let (mode, budget) = thinking(plain_thinking.as_ref())?;
    if let Some(oc) = o.get("output_config") {
        output_config(oc)?;
    }
    let mut compact_trigger = None;
    if let Some(cm) = o.get("context_management") {
        context_management(cm)?;
        compact_trigger = compaction::threshold(cm);
        if compact_trigger.is_some() && !has_beta(compaction::THRESHOLD_BETA) {
            return Err(compaction::needs_threshold_beta());
        }
    }
    let empty = Vec::new();
    let messages = o
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let system_messages = has_beta(MID_CONVERSATION_SYSTEM_BETA);
    schema.messages(messages, system_messages, compaction_beta)?;
    if let Some(cc) = o.get("cache_control") {
        schema.cache_control(cc, "cache_control")?;
    }
    if schema.breakpoints > MAX_BREAKPOINTS {
        return Err(too_many_breakpoints(schema.breakpoints));
    }

    if let Some(budget) = budget {
        let max = o.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
        if budget >= max && !beta.contains(INTERLEAVED_BETA) {
            return Err(BUDGET_NOT_UNDER_MAX.to_owned());
        }
    }
    if mode.on() {
        if o.get("temperature")
            .and_then(Value::as_f64)
            .is_some_and(|t| t != 1.0)
        {
            return Err(TEMPERATURE_WITH_THINKING.to_owned());
        }
        if matches!(choice, Some("any" | "tool")) {
            return Err(FORCED_TOOL_WITH_THINKING.to_owned());
        }
    }

    match messages.first() {
        None => return Err(NO_MESSAGES.to_owned()),
        Some(m) if role_of(m) != "user" && !compaction_led(m) => {
            return Err(FIRST_NOT_USER.to_owned());
        }
        _ => {}
    }
    let turns = turns(messages);
    pairing(messages, &turns)?;
    compaction_blocks(messages, key, &ctx)?;
    let bound = binding::anthropic_is_bound(ctx.model) || behavior.is_some();
    let replay = Replay {
        bound,
        drop: behavior == Some(Behavior::DropBlock),
        tools: binding::tools_digest(o.get("tools")),
        ctx,
        key,
    };
    let mut ledger = crate::lock(ctx.ledger);
    let mut out = Outcome::default();
    let tokens = signatures(
        o.get("system"),
        messages,
        &turns,
        &replay,
        &ledger,
        &mut out,
    )?;
    let recognised = recognised_turns(messages, &turns, &ledger);
    let tokens = if bound {
        contiguous(&turns, &recognised, tokens, &replay, &mut out)?
    } else {
        tokens
    };
    if mode.on() {
        latest_turn(messages, &turns, &tokens, &out.dropped)?;
    }
    for (reply, count, range) in &recognised {
        for pos in 0..*count {
            let carried = tokens
                .iter()
                .any(|((n, _), t)| range.contains(n) && t.reply == *reply && t.pos == pos);
            if !carried {
                ledger.leave_out(*reply, pos);
            }
        }
    }
    Ok(Checked {
        thinking: mode,
        breakpoints: schema.breakpoints,
        compaction,
        compact_trigger,
        transformations: out.transformations,
        notes: out.notes,
    })
}

/// Splits `thinking.block_binding` off the `thinking` object: its behaviour (when present) and
/// the rest, which [`thinking`] checks as before.
pub(crate) fn block_binding(
    v: Option<&Value>,
) -> Result<(Option<Behavior>, Option<Value>), String> {
    let Some(Value::Object(o)) = v else {
        return Ok((None, v.cloned()));
    };
    let Some(bb) = o.get("block_binding") else {
        return Ok((None, v.cloned()));
    };
    let path = "thinking.block_binding";
    let bo = bb
        .as_object()
        .ok_or_else(|| wrong_type(path, "", "dictionary"))?;
    Schema::default().keys(bo, path, &["prefix_mismatch_behavior"], &[])?;
    let behavior = match bo.get("prefix_mismatch_behavior").map(Value::as_str) {
        None | Some(Some("error")) => Behavior::Error,
        Some(Some("drop_block")) => Behavior::DropBlock,
        Some(_) => {
            return Err(literal(
                &join(path, "prefix_mismatch_behavior"),
                &["error", "drop_block"],
            ));
        }
    };
    let mut rest = o.clone();
    rest.shift_remove("block_binding");
    Ok((Some(behavior), Some(Value::Object(rest))))
}

/// The message leads with a `compaction` block.
fn compaction_led(m: &Value) -> bool {
    role_of(m) == "assistant"
        && m.get("content")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .is_some_and(|b| kind_of(b) == "compaction")
}

/// Every replayed `compaction` block verifies for this model and account.
fn compaction_blocks(messages: &[Value], key: &[u8], ctx: &Ctx<'_>) -> Result<(), String> {
    for (n, m) in messages.iter().enumerate() {
        for (j, b) in blocks(m).filter(|(_, b)| kind_of(b) == "compaction") {
            match compaction::check(key, b, ctx.model, &ctx.account) {
                compaction::Check::Valid => {}
                compaction::Check::Invalid => return Err(compaction::invalid_text(n, j)),
                compaction::Check::Elsewhere => return Err(compaction::elsewhere_text(n, j)),
            }
        }
    }
    Ok(())
}

/// How replayed thinking is judged: bound or not, `drop_block` or not, and what the request
/// binds to besides its prefix.
struct Replay<'a> {
    bound: bool,
    drop: bool,
    tools: [u8; 32],
    ctx: Ctx<'a>,
    key: &'a [u8],
}

/// The blocks a bound request dropped, reported back.
#[derive(Default)]
struct Outcome {
    transformations: Vec<Value>,
    notes: Vec<String>,
    dropped: HashSet<(usize, usize)>,
}

impl Replay<'_> {
    /// A bound block that does not match: refused, or dropped with `drop_block`.
    fn mismatch(
        &self,
        n: usize,
        j: usize,
        reason: Reason,
        out: &mut Outcome,
    ) -> Result<(), String> {
        if !self.drop {
            return Err(binding::bound_text(n, j));
        }
        out.transformations.push(binding::dropped(n, j, reason));
        out.notes.push(binding::dropped_note(n, j, reason));
        out.dropped.insert((n, j));
        Ok(())
    }
}

/// The assistant turns the simulator minted thinking for, recognised by the messages up to and
/// including the turn: (reply id, block count, the turn's message range).
fn recognised_turns(
    messages: &[Value],
    turns: &[(&str, Range<usize>)],
    ledger: &Ledger,
) -> Vec<([u8; 12], u8, Range<usize>)> {
    turns
        .iter()
        .filter(|(role, _)| *role == "assistant")
        .filter_map(|(_, range)| {
            let key = thinking::messages_chain(&messages[..range.end]);
            ledger
                .turn(&key)
                .map(|(reply, count)| (reply, count, range.clone()))
        })
        .collect()
}

/// A bound request's carried thinking is one contiguous run of the blocks its recognised turns
/// were minted with (thinking dropped from the start, from the end, or all of it): every block
/// present after a gap that follows a present block is refused, or dropped with `drop_block`.
fn contiguous(
    turns: &[(&str, Range<usize>)],
    recognised: &[([u8; 12], u8, Range<usize>)],
    mut tokens: HashMap<(usize, usize), Token>,
    replay: &Replay<'_>,
    out: &mut Outcome,
) -> Result<HashMap<(usize, usize), Token>, String> {
    let mut present: Vec<((usize, usize), Token)> =
        tokens.iter().map(|(at, t)| (*at, *t)).collect();
    present.sort_by_key(|(at, _)| *at);
    // The expected sequence, in message order: each recognised turn's blocks by position (the
    // block's place when present), every other verified block as itself.
    let mut seq: Vec<Option<(usize, usize)>> = Vec::new();
    for (_, range) in turns.iter().filter(|(role, _)| *role == "assistant") {
        let here: Vec<&((usize, usize), Token)> = present
            .iter()
            .filter(|(at, _)| range.contains(&at.0))
            .collect();
        let minted = recognised
            .iter()
            .find(|(_, _, r)| r == range)
            .map(|(reply, count, _)| (*reply, *count));
        if let Some((reply, count)) = minted {
            for pos in 0..count {
                seq.push(
                    here.iter()
                        .find(|(_, t)| t.reply == reply && t.pos == pos)
                        .map(|(at, _)| *at),
                );
            }
        }
        for (at, t) in here {
            if minted.is_none_or(|(reply, _)| t.reply != reply) {
                seq.push(Some(*at));
            }
        }
    }
    let (mut seen, mut gap) = (false, false);
    for at in seq {
        match at {
            Some(at) if gap => {
                replay.mismatch(at.0, at.1, Reason::Prefix, out)?;
                tokens.remove(&at);
            }
            Some(_) => seen = true,
            None if seen => gap = true,
            None => {}
        }
    }
    Ok(tokens)
}

/// Every `tool_use` answered by a `tool_result` in the next turn; every `tool_result` answering a
/// `tool_use` of the previous turn (each once).
fn pairing(messages: &[Value], turns: &[(&str, Range<usize>)]) -> Result<(), String> {
    fn tagged<'a>(
        messages: &'a [Value],
        range: &Range<usize>,
        kind: &str,
        id_key: &str,
    ) -> Vec<(usize, usize, &'a str)> {
        range
            .clone()
            .flat_map(|n| blocks(&messages[n]).map(move |(j, b)| (n, j, b)))
            .filter(|(_, _, b)| kind_of(b) == kind)
            .map(|(n, j, b)| (n, j, b.get(id_key).and_then(Value::as_str).unwrap_or("")))
            .collect()
    }
    for (t, (role, range)) in turns.iter().enumerate() {
        if *role == "assistant" {
            let uses = tagged(messages, range, "tool_use", "id");
            let answered = match turns.get(t + 1) {
                Some((next, r)) if *next == "user" => {
                    tagged(messages, r, "tool_result", "tool_use_id")
                }
                _ => Vec::new(),
            };
            let missing: Vec<&(usize, usize, &str)> = uses
                .iter()
                .filter(|(_, _, id)| !answered.iter().any(|(_, _, a)| a == id))
                .collect();
            if let Some((n, _, _)) = missing.first() {
                let ids: Vec<&str> = missing.iter().map(|(_, _, id)| *id).collect();
                return Err(unpaired_text(*n, &ids));
            }
        } else {
            let mut pending: Vec<&str> = match t.checked_sub(1).and_then(|p| turns.get(p)) {
                Some((prev, r)) if *prev == "assistant" => tagged(messages, r, "tool_use", "id")
                    .into_iter()
                    .map(|(_, _, id)| id)
                    .collect(),
                _ => Vec::new(),
            };
            for (n, j, id) in tagged(messages, range, "tool_result", "tool_use_id") {
                match pending.iter().position(|p| *p == id) {
                    Some(at) => {
                        pending.remove(at);
                    }
                    None => return Err(orphan_text(n, j, id)),
                }
            }
        }
    }
    Ok(())
}

/// Verifies every thinking signature and redacted blob of every assistant message; returns each
/// accepted block's token by (message, block). A block that is not genuine (forged, text
/// altered) is refused with the short text; so is, on an unbound request, one whose prefix
/// (`system`, earlier messages) differs. A bound request also compares tools, model and account
/// and refuses (or drops, with `drop_block`) a mismatched or put-back block.
fn signatures(
    system: Option<&Value>,
    messages: &[Value],
    turns: &[(&str, Range<usize>)],
    replay: &Replay<'_>,
    ledger: &Ledger,
    out: &mut Outcome,
) -> Result<HashMap<(usize, usize), Token>, String> {
    let mut tokens = HashMap::new();
    for (role, range) in turns {
        if *role != "assistant" {
            continue;
        }
        let mut digest: Option<PrefixDigest> = None;
        for n in range.clone() {
            for (j, b) in blocks(&messages[n]) {
                let kind = kind_of(b);
                if kind == "compaction" {
                    // A threshold compaction's block leads the reply that went on after it:
                    // that reply's thinking was made after the messages the block carries.
                    let mut before = messages[..range.start].to_vec();
                    before.push(serde_json::json!({"role": "assistant", "content": [b]}));
                    digest = Some(thinking::prefix_digest(system, &before));
                    continue;
                }
                if kind != "thinking" && kind != "redacted_thinking" {
                    continue;
                }
                let prefix = *digest.get_or_insert_with(|| {
                    thinking::prefix_digest(system, &messages[..range.start])
                });
                let binding = Binding {
                    prefix,
                    tools: replay.tools,
                    model: replay.ctx.model,
                    account: replay.ctx.account,
                };
                let opened = if kind == "thinking" {
                    let text = b.get("thinking").and_then(Value::as_str).unwrap_or("");
                    let sig = b.get("signature").and_then(Value::as_str).unwrap_or("");
                    thinking::open_messages_thinking(replay.key, &binding, text, sig)
                } else {
                    let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                    thinking::open_messages_redacted(replay.key, &binding, data)
                };
                let Some(o) = opened else {
                    return Err(invalid_signature_text(n, j, kind));
                };
                if !replay.bound {
                    if !o.prefix {
                        return Err(invalid_signature_text(n, j, kind));
                    }
                } else {
                    let reason = if !o.model || !o.account {
                        Some(Reason::Model)
                    } else if !o.prefix
                        || !o.tools
                        || ledger.was_left_out(o.token.reply, o.token.pos)
                    {
                        Some(Reason::Prefix)
                    } else {
                        None
                    };
                    if let Some(reason) = reason {
                        replay.mismatch(n, j, reason, out)?;
                        continue;
                    }
                }
                tokens.insert((n, j), o.token);
            }
        }
    }
    Ok(tokens)
}

/// In an in-flight tool loop (the request ends with a user turn carrying `tool_result` blocks,
/// with or without text after them: Claude's refusal names "the lastmost set of `tool_use` and
/// `tool_result` blocks", docs/providers.md) the latest assistant turn starts with a thinking block
/// and carries exactly the thinking blocks the simulator issued for it, in order.
fn latest_turn(
    messages: &[Value],
    turns: &[(&str, Range<usize>)],
    tokens: &HashMap<(usize, usize), Token>,
    dropped: &HashSet<(usize, usize)>,
) -> Result<(), String> {
    let Some(((last_role, last), rest)) = turns.split_last() else {
        return Ok(());
    };
    // `drop_block` dropped thinking of this turn: the API dropped it, it does not ask for it.
    if let Some((_, turn)) = rest.last()
        && dropped.iter().any(|(n, _)| turn.contains(n))
    {
        return Ok(());
    }
    let carries_results = last.clone().any(|n| {
        messages[n]
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|b| kind_of(b) == "tool_result"))
    });
    if *last_role != "user" || !carries_results {
        return Ok(());
    }
    let Some((_, turn)) = rest.last() else {
        return Ok(());
    };
    // The turn's blocks in order, a string content read as one text block.
    let mut flat: Vec<(usize, usize, &str)> = Vec::new();
    for n in turn.clone().filter(|&n| role_of(&messages[n]) != "system") {
        match messages[n].get("content") {
            Some(Value::String(_)) => flat.push((n, 0, "text")),
            _ => flat.extend(blocks(&messages[n]).map(|(j, b)| (n, j, kind_of(b)))),
        }
    }
    // A threshold compaction's block leads the reply that went on after it: the model's own
    // turn starts after it.
    while flat.first().is_some_and(|(_, _, k)| *k == "compaction") {
        flat.remove(0);
    }
    let is_thinking = |k: &str| k == "thinking" || k == "redacted_thinking";
    let Some(&(n0, j0, first)) = flat.first() else {
        return Ok(());
    };
    if !is_thinking(first) {
        return Err(expected_thinking_text(n0, j0, first));
    }
    let Some(issued) = tokens.get(&(n0, j0)) else {
        return Ok(());
    };
    let count = usize::from(issued.count);
    for (i, &(n, j, kind)) in flat.iter().enumerate() {
        let ok = if i < count {
            let want = Token {
                pos: u8::try_from(i).unwrap_or(u8::MAX),
                ..*issued
            };
            is_thinking(kind) && tokens.get(&(n, j)) == Some(&want)
        } else {
            !is_thinking(kind)
        };
        if !ok {
            return Err(modified_text(n, j));
        }
    }
    if flat.len() < count {
        let (n, _, _) = flat[flat.len() - 1];
        let len = blocks(&messages[n]).count();
        return Err(modified_text(n, len));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with_tools(tools: Value) -> Result<Checked, String> {
        let body = json!({"model": "claude-opus-4-6", "max_tokens": 64, "tools": tools,
                          "messages": [{"role": "user", "content": "hi"}]});
        let ledger = Mutex::new(Ledger::default());
        let ctx = Ctx {
            model: "claude-opus-4-6",
            account: [0; 32],
            ledger: &ledger,
        };
        validate(&body, Via::Body, "", b"k", ctx)
    }

    #[test]
    fn anthropic_defined_tools_take_their_sdk_keys_and_nothing_else() {
        let ok = json!([
            {"name": "now", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 2,
             "allowed_domains": ["a.example"], "cache_control": {"type": "ephemeral"}},
            {"type": "code_execution_20250825", "name": "code_execution"},
            {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool",
             "max_characters": 100},
            {"type": "computer_toolset_20260801", "configs": []},
        ]);
        assert!(with_tools(ok).is_ok());
        let extra = with_tools(json!([{"type": "code_execution_20250825",
                                       "name": "code_execution", "max_uses": 2}]))
        .err()
        .unwrap();
        assert!(extra.contains("tools.0.max_uses"), "{extra}");
        let unknown = with_tools(json!([{"type": "web_search", "name": "web_search"}]))
            .err()
            .unwrap();
        assert!(
            unknown.contains("unknown tool type `web_search`"),
            "{unknown}"
        );
        let nameless = with_tools(json!([{"type": "web_fetch_20250910"}]))
            .err()
            .unwrap();
        assert!(nameless.contains("name"), "{nameless}");
    }
}
