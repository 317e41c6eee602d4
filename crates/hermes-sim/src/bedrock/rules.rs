//! Request rules of the `bedrock` profile's Converse doors (`/converse`, `/converse-stream`),
//! written from docs/providers.md ("AWS Bedrock Converse", "Tool-call pairing and turn-order
//! rules", "Notes for the simulator") and docs/spec.md §5 (per-model replay policy).
//!
//! Every refusal is a `ValidationException` (HTTP 400, `{"message": …}`); the caller wraps the text.
//! Sources of the texts:
//! - schema (unknown key, one-member unions, missing member, wrong type): botocore's client-side
//!   wording (`botocore/validate.py`), which is what a boto3 user sees for the same body; the
//!   server's own wording for these is UNCONFIRMED. Enum violations use the AWS front end's
//!   "1 validation error detected: Value … failed to satisfy constraint" form (simulator-chosen
//!   instance).
//! - turn order: "A conversation must start with a user message. …" and "A conversation must
//!   alternate between user and assistant roles. …" (docs/providers.md;
//!   langchain-ai/langchain-aws#130).
//! - tool pairing: "Expected toolResult blocks at messages.N.content for the following Ids: …"
//!   (agno-agi/agno#6698, camel-ai/camel#3954), "The number of toolResult blocks at
//!   messages.N.content exceeds the number of toolUse blocks of previous turn."
//!   (Just-Curieous/Curie#16, strands-agents/harness-sdk#1435), "The toolConfig field must be
//!   defined when using toolUse and toolResult content blocks." (langgenius/dify#7328).
//! - reasoning in a user message, and DeepSeek-R1 replay: "User messages cannot contain reasoning
//!   content. Please remove the reasoning content and try again." (langchain-ai/langchain-aws#401).
//! - Claude: Anthropic's texts (`crate::anthropic::rules`) behind "The model returned the following
//!   errors: " (docs/providers.md: pydantic/pydantic-ai#2453; BerriAI/litellm#13609 for an unknown
//!   `additionalModelRequestFields` key).
//! - Nova: "Malformed input request: the provided reasoning config value is invalid, please
//!   reformat your input and try again." (UKGovernmentBEIS/inspect_ai#5301).
//! - Texts marked "simulator-chosen" have no confirmed wording.
//!
//! Checks run in this order: the schema, turn order, block placement by role, tool pairing,
//! `toolConfig` presence, the model's `additionalModelRequestFields`, then the replay policy.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::reasoning;
use crate::anthropic::binding::{self, BLOCK_BINDING_BETA, Ledger, Reason};
use crate::anthropic::rules::{
    self as claude, BUDGET_NOT_UNDER_MAX, FORCED_TOOL_WITH_THINKING, INTERLEAVED_BETA,
    TEMPERATURE_WITH_THINKING, Thinking,
};
use crate::anthropic::rules::{Behavior, block_binding};
use crate::anthropic::thinking::{self, Binding, Token};
use crate::wire::{list_of, snake};

// The lists below are botocore's `bedrock-runtime` service model (`service-2.json`, the
// `ConverseRequest` structure and the shapes under it), which boto3 validates against before
// sending. hermes-conformance keeps its own copies for its wire invariants; its test
// `the_converse_and_messages_lists_are_the_simulators` holds the two to the same members, so a
// change here is a change there (`crate::schema` re-exports them).

/// Top-level names of a Converse request body (the model id is in the path).
pub const CONVERSE_TOP_LEVEL: &[&str] = &[
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "promptVariables",
    "additionalModelResponseFieldPaths",
    "requestMetadata",
    "performanceConfig",
];

/// Members of the `ContentBlock` union, in the API's order.
pub const CONTENT_MEMBERS: &[&str] = &[
    "text",
    "image",
    "document",
    "video",
    "audio",
    "toolUse",
    "toolResult",
    "guardContent",
    "cachePoint",
    "reasoningContent",
    "citationsContent",
    "searchResult",
];

/// Members of the `SystemContentBlock` union.
pub const SYSTEM_MEMBERS: &[&str] = &["text", "guardContent", "cachePoint"];

/// Members of the `ReasoningContentBlock` union.
pub const REASONING_MEMBERS: &[&str] = &["reasoningText", "redactedContent"];

/// Members of the `ToolResultContentBlock` union.
pub const TOOL_RESULT_MEMBERS: &[&str] =
    &["json", "text", "image", "document", "video", "searchResult"];

/// Members of the `Tool` union (`toolConfig.tools[]`).
pub const TOOL_MEMBERS: &[&str] = &["toolSpec", "systemTool", "cachePoint"];

/// Keys of a `Message`.
pub const MESSAGE_KEYS: &[&str] = &["role", "content"];

/// Keys of `InferenceConfiguration`.
pub const INFERENCE_CONFIG_KEYS: &[&str] = &["maxTokens", "temperature", "topP", "stopSequences"];

/// Keys of `ToolConfiguration`.
pub const TOOL_CONFIG_KEYS: &[&str] = &["tools", "toolChoice"];

/// Keys of `ToolUseBlock`.
pub const TOOL_USE_KEYS: &[&str] = &["toolUseId", "name", "input", "type"];

/// Keys of `ToolResultBlock`.
pub const TOOL_RESULT_KEYS: &[&str] = &["toolUseId", "content", "status", "type"];

/// Keys of `ReasoningTextBlock`.
pub const REASONING_TEXT_KEYS: &[&str] = &["text", "signature"];

/// Keys of `ToolSpecification`.
pub const TOOL_SPEC_KEYS: &[&str] = &["name", "description", "inputSchema", "strict"];

/// Keys of `SystemTool`.
pub const SYSTEM_TOOL_KEYS: &[&str] = &["name"];

/// Keys of `CachePointBlock`.
pub const CACHE_POINT_KEYS: &[&str] = &["type", "ttl"];

/// `AudioFormat`'s values.
const AUDIO_FORMATS: &[&str] = &[
    "mp3", "opus", "wav", "aac", "flac", "mp4", "ogg", "mkv", "mka", "x-aac", "m4a", "mpeg",
    "mpga", "pcm", "webm",
];

/// `additionalModelRequestFields` keys Claude takes (the rest of Anthropic's body is built from
/// the Converse fields).
const CLAUDE_EXTRA_FIELDS: &[&str] = &["thinking", "output_config", "anthropic_beta", "top_k"];

/// How a model's reasoning is replayed (docs/spec.md §5, Bedrock Converse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Claude: `reasoningText{text,signature}` and `redactedContent` verbatim, verified.
    Signed,
    /// DeepSeek-R1, Kimi K3: no reasoning before the in-flight loop, own unsigned blocks inside it.
    Strip,
    /// Every other model: text only, no signature, no redacted content.
    Unsigned,
}

/// The model's replay policy.
pub(crate) fn policy(model: &str) -> Policy {
    let m = model.to_ascii_lowercase();
    if m.contains("anthropic.claude") {
        Policy::Signed
    } else if m.contains("deepseek.r1") || m.contains("kimi-k3") {
        Policy::Strip
    } else {
        Policy::Unsigned
    }
}

/// What reasoning the reply carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reasoning {
    /// None.
    Off,
    /// `reasoningText{text}` without a signature.
    Text,
    /// Claude: a signed `reasoningText` (empty text when adaptive `display: "omitted"`).
    Signed { omitted: bool },
}

/// What the rules learned about an accepted request.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) reasoning: Reasoning,
    /// Claude on a bound model, or a request that set `thinking.block_binding` (docs/spec.md §5a):
    /// the reply's reasoning is minted bound to prefix, tools, model and account.
    pub(crate) bound: bool,
    /// The blocks `drop_block` dropped (`input_transformations` entries).
    pub(crate) transformations: Vec<Value>,
}

/// What a Converse request's reasoning is bound to besides its prefix (docs/spec.md §5a): the tool
/// list, the model and the account, and the instance's memory of what was left out.
pub(crate) struct Bind<'a> {
    pub(crate) model: &'a str,
    pub(crate) account: [u8; 32],
    pub(crate) ledger: &'a std::sync::Mutex<Ledger>,
}

// ---------------------------------------------------------------- texts

/// docs/providers.md / langchain-ai/langchain-aws#130.
pub(crate) const ALTERNATE: &str = "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.";

/// The AWS text for a conversation not starting with a user message.
pub(crate) const START_WITH_USER: &str = "A conversation must start with a user message. Try again with a conversation that starts with a user message.";

/// langchain-ai/langchain-aws#401.
pub(crate) const NO_USER_REASONING: &str = "User messages cannot contain reasoning content. Please remove the reasoning content and try again.";

/// langgenius/dify#7328.
pub(crate) const TOOL_CONFIG_REQUIRED: &str =
    "The toolConfig field must be defined when using toolUse and toolResult content blocks.";

/// UKGovernmentBEIS/inspect_ai#5301.
pub(crate) const MALFORMED_REASONING_CONFIG: &str = "Malformed input request: the provided reasoning config value is invalid, please reformat your input and try again.";

/// Anthropic's text as Bedrock passes it on.
pub(crate) fn model_errors(message: &str) -> String {
    format!("The model returned the following errors: {message}")
}

/// agno-agi/agno#6698.
pub(crate) fn expected_results(index: usize, ids: &[&str]) -> String {
    format!(
        "Expected toolResult blocks at messages.{index}.content for the following Ids: {}",
        ids.join(", ")
    )
}

/// Just-Curieous/Curie#16.
pub(crate) fn too_many_results(index: usize) -> String {
    format!(
        "The number of toolResult blocks at messages.{index}.content exceeds the number of toolUse blocks of previous turn."
    )
}

/// Simulator-chosen: a replayed `redactedContent` refused by the `refuse_redacted` switch (the
/// words "redacted" and "encrypted" let a client recognise it).
pub(crate) fn redacted_refused(index: usize, block: usize) -> String {
    model_errors(&format!(
        "messages.{index}.content.{block}: `redacted_thinking` block could not be verified: the encrypted redacted content is not valid for this request. Remove the redacted content and try again."
    ))
}

/// Simulator-chosen: a signature or redacted content replayed to a model that takes plain text.
pub(crate) fn unsigned_only(index: usize, block: usize, what: &str) -> String {
    format!(
        "messages.{index}.content.{block}.reasoningContent: This model doesn't support {what} in reasoning content. Remove it and try again."
    )
}

/// Simulator-chosen: a block in a message of the wrong role.
fn wrong_role(index: usize, block: usize, member: &str, role: &str) -> String {
    format!("messages.{index}.content.{block}: {member} blocks are not allowed in {role} messages.")
}

/// botocore: a key that is not a member.
fn unknown(name: &str, key: &str, allowed: &[&str]) -> String {
    format!(
        "Unknown parameter in {name}: \"{key}\", must be one of: {}",
        allowed.join(", ")
    )
}

/// botocore: a required member absent.
fn missing(name: &str, key: &str) -> String {
    format!("Missing required parameter in {name}: \"{key}\"")
}

/// botocore: a union with more than one member set.
fn union_many(name: &str, members: &[&str]) -> String {
    format!(
        "Invalid number of parameters set for tagged union structure {name}. Can only set one of the following keys: {}.",
        members.join(", ")
    )
}

/// botocore: a union with no member set (the missing space is botocore's).
fn union_empty(name: &str, members: &[&str]) -> String {
    format!(
        "Must set one of the following keys for tagged unionstructure {name}: {}.",
        members.join(", ")
    )
}

/// botocore: a value of the wrong type (Python type names).
fn wrong_type(name: &str, v: &Value, valid: &str) -> String {
    let kind = match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    };
    format!(
        "Invalid type for parameter {name}, value: {v}, type: <class '{kind}'>, valid types: {valid}"
    )
}

const STR: &str = "<class 'str'>";
const LIST: &str = "<class 'list'>, <class 'tuple'>";
const DICT: &str = "<class 'dict'>";
const INT: &str = "<class 'int'>";
const NUMBER: &str = "<class 'float'>, <class 'decimal.Decimal'>, <class 'int'>";

/// The AWS front end's enum constraint text; `path` in its `messages.1.member.role` form.
fn not_in_enum(value: &Value, path: &str, allowed: &[&str]) -> String {
    let shown = value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned);
    format!(
        "1 validation error detected: Value '{shown}' at '{path}' failed to satisfy constraint: Member must satisfy enum value set: [{}]",
        allowed.join(", ")
    )
}

// ---------------------------------------------------------------- schema

fn object<'a>(v: &'a Value, name: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object().ok_or_else(|| wrong_type(name, v, DICT))
}

fn array<'a>(v: &'a Value, name: &str) -> Result<&'a Vec<Value>, String> {
    v.as_array().ok_or_else(|| wrong_type(name, v, LIST))
}

/// `v` (at `name`) is a list of strings.
fn strings(v: &Value, name: &str) -> Result<(), String> {
    for (k, s) in array(v, name)?.iter().enumerate() {
        if !s.is_string() {
            return Err(wrong_type(&format!("{name}[{k}]"), s, STR));
        }
    }
    Ok(())
}

/// Keys of `o` within `allowed`, `needed` present.
fn keys(
    o: &Map<String, Value>,
    name: &str,
    allowed: &[&str],
    needed: &[&str],
) -> Result<(), String> {
    if let Some(k) = needed.iter().find(|k| !o.contains_key(**k)) {
        return Err(missing(name, k));
    }
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(unknown(name, k, allowed)),
        None => Ok(()),
    }
}

/// A union: exactly one known member; returns it and its value.
fn union<'a>(v: &'a Value, name: &str, members: &[&str]) -> Result<(&'a str, &'a Value), String> {
    let o = object(v, name)?;
    if o.is_empty() {
        return Err(union_empty(name, members));
    }
    if o.len() > 1 {
        return Err(union_many(name, members));
    }
    match o.iter().next() {
        Some((k, v)) if members.contains(&k.as_str()) => Ok((k.as_str(), v)),
        Some((k, _)) => Err(unknown(name, k, members)),
        None => Err(union_empty(name, members)),
    }
}

fn string(o: &Map<String, Value>, name: &str, key: &str) -> Result<(), String> {
    match o.get(key) {
        Some(v) if !v.is_string() => Err(wrong_type(&format!("{name}.{key}"), v, STR)),
        _ => Ok(()),
    }
}

fn enumerated(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    allowed: &[&str],
) -> Result<(), String> {
    match o.get(key) {
        Some(v) if !v.as_str().is_some_and(|s| allowed.contains(&s)) => {
            Err(not_in_enum(v, path, allowed))
        }
        _ => Ok(()),
    }
}

/// `{format, source}` of an image or video (source: one of `bytes`, `s3Location`).
fn media(v: &Value, name: &str, formats: &[&str], coral: &str) -> Result<(), String> {
    let o = object(v, name)?;
    keys(o, name, &["format", "source"], &["format", "source"])?;
    enumerated(o, "format", &format!("{coral}.format"), formats)?;
    if let Some(src) = o.get("source") {
        let (member, v) = union(src, &format!("{name}.source"), &["bytes", "s3Location"])?;
        let at = format!("{name}.source.{member}");
        if member == "bytes" {
            // A blob: base64 text on the wire (botocore encodes the raw bytes).
            let data = v.as_str().ok_or_else(|| {
                wrong_type(
                    &at,
                    v,
                    "<class 'bytes'>, <class 'bytearray'>, file-like object",
                )
            })?;
            if STANDARD.decode(data).is_err() {
                // Simulator-chosen.
                return Err(format!("Invalid base64 value at {at}."));
            }
        }
    }
    Ok(())
}

fn document(v: &Value, name: &str) -> Result<(), String> {
    let o = object(v, name)?;
    keys(
        o,
        name,
        &["format", "name", "source", "context", "citations"],
        &["name", "source"],
    )?;
    string(o, name, "name")?;
    if let Some(src) = o.get("source") {
        union(
            src,
            &format!("{name}.source"),
            &["bytes", "s3Location", "text", "content"],
        )?;
    }
    Ok(())
}

fn cache_point(v: &Value, name: &str, coral: &str) -> Result<(), String> {
    let o = object(v, name)?;
    keys(o, name, CACHE_POINT_KEYS, &["type"])?;
    enumerated(o, "type", &format!("{coral}.type"), &["default"])
}

/// One content block of message `n` at `m`.
fn block(b: &Value, n: usize, m: usize) -> Result<(), String> {
    let name = format!("messages[{n}].content[{m}]");
    let coral = format!("messages.{}.member.content.{}.member", n + 1, m + 1);
    let (member, v) = union(b, &name, CONTENT_MEMBERS)?;
    let at = format!("{name}.{member}");
    let coral_at = format!("{coral}.{member}");
    match member {
        "text" => {
            if !v.is_string() {
                return Err(wrong_type(&at, v, STR));
            }
        }
        "image" => media(v, &at, &["png", "jpeg", "gif", "webp"], &coral_at)?,
        "video" => media(
            v,
            &at,
            &[
                "mkv", "mov", "mp4", "webm", "flv", "mpeg", "mpg", "wmv", "three_gp",
            ],
            &coral_at,
        )?,
        "audio" => media(v, &at, AUDIO_FORMATS, &coral_at)?,
        "document" => document(v, &at)?,
        "toolUse" => {
            let o = object(v, &at)?;
            keys(o, &at, TOOL_USE_KEYS, &["toolUseId", "name", "input"])?;
            string(o, &at, "toolUseId")?;
            string(o, &at, "name")?;
        }
        "toolResult" => {
            let o = object(v, &at)?;
            keys(o, &at, TOOL_RESULT_KEYS, &["toolUseId", "content"])?;
            string(o, &at, "toolUseId")?;
            enumerated(
                o,
                "status",
                &format!("{coral_at}.status"),
                &["success", "error"],
            )?;
            if let Some(content) = o.get("content") {
                for (k, item) in array(content, &format!("{at}.content"))?.iter().enumerate() {
                    let item_name = format!("{at}.content[{k}]");
                    let (kind, iv) = union(item, &item_name, TOOL_RESULT_MEMBERS)?;
                    if kind == "text" && !iv.is_string() {
                        return Err(wrong_type(&format!("{item_name}.text"), iv, STR));
                    }
                    if kind == "image" {
                        media(
                            iv,
                            &format!("{item_name}.image"),
                            &["png", "jpeg", "gif", "webp"],
                            &format!("{coral_at}.content.{}.member.image", k + 1),
                        )?;
                    }
                }
            }
        }
        "cachePoint" => cache_point(v, &at, &coral_at)?,
        "reasoningContent" => {
            let (kind, rv) = union(v, &at, REASONING_MEMBERS)?;
            let r_at = format!("{at}.{kind}");
            if kind == "reasoningText" {
                let o = object(rv, &r_at)?;
                keys(o, &r_at, REASONING_TEXT_KEYS, &["text"])?;
                string(o, &r_at, "text")?;
                string(o, &r_at, "signature")?;
            } else {
                let data = rv.as_str().ok_or_else(|| {
                    wrong_type(
                        &r_at,
                        rv,
                        "<class 'bytes'>, <class 'bytearray'>, file-like object",
                    )
                })?;
                if STANDARD.decode(data).is_err() {
                    // Simulator-chosen.
                    return Err(format!(
                        "Invalid base64 value at messages.{n}.content.{m}.reasoningContent.redactedContent."
                    ));
                }
            }
        }
        // guardContent, citationsContent, searchResult: structures the simulator does not model.
        _ => {
            object(v, &at)?;
        }
    }
    Ok(())
}

fn messages(v: &Value) -> Result<&Vec<Value>, String> {
    let items = array(v, "messages")?;
    for (n, msg) in items.iter().enumerate() {
        let name = format!("messages[{n}]");
        let o = object(msg, &name)?;
        keys(o, &name, MESSAGE_KEYS, MESSAGE_KEYS)?;
        string(o, &name, "role")?;
        enumerated(
            o,
            "role",
            &format!("messages.{}.member.role", n + 1),
            &["user", "assistant"],
        )?;
        if let Some(content) = o.get("content") {
            for (m, b) in array(content, &format!("{name}.content"))?
                .iter()
                .enumerate()
            {
                block(b, n, m)?;
            }
        }
    }
    Ok(items)
}

fn system(v: &Value) -> Result<(), String> {
    for (k, b) in array(v, "system")?.iter().enumerate() {
        let name = format!("system[{k}]");
        let (member, bv) = union(b, &name, SYSTEM_MEMBERS)?;
        match member {
            "text" if !bv.is_string() => return Err(wrong_type(&format!("{name}.text"), bv, STR)),
            "cachePoint" => cache_point(
                bv,
                &format!("{name}.cachePoint"),
                &format!("system.{}.member.cachePoint", k + 1),
            )?,
            _ => {}
        }
    }
    Ok(())
}

fn inference_config(v: &Value) -> Result<(), String> {
    let name = "inferenceConfig";
    let o = object(v, name)?;
    keys(o, name, INFERENCE_CONFIG_KEYS, &[])?;
    if let Some(m) = o.get("maxTokens") {
        if !(m.is_i64() || m.is_u64()) {
            return Err(wrong_type("inferenceConfig.maxTokens", m, INT));
        }
        if m.as_u64().is_none_or(|m| m < 1) {
            return Err(not_in_range(m, "inferenceConfig.maxTokens", 1));
        }
    }
    for key in ["temperature", "topP"] {
        if let Some(t) = o.get(key)
            && !t.is_number()
        {
            return Err(wrong_type(&format!("inferenceConfig.{key}"), t, NUMBER));
        }
    }
    if let Some(stops) = o.get("stopSequences") {
        strings(stops, "inferenceConfig.stopSequences")?;
    }
    Ok(())
}

/// The AWS front end's range constraint text (simulator-chosen instance).
fn not_in_range(value: &Value, path: &str, min: u64) -> String {
    format!(
        "1 validation error detected: Value '{value}' at '{path}' failed to satisfy constraint: Member must have value greater than or equal to {min}"
    )
}

/// `toolConfig`; returns the forced `toolChoice` kind (`any` / `tool`) if any.
fn tool_config(v: &Value) -> Result<Option<&str>, String> {
    let name = "toolConfig";
    let o = object(v, name)?;
    keys(o, name, TOOL_CONFIG_KEYS, &["tools"])?;
    if let Some(tools) = o.get("tools") {
        for (k, t) in array(tools, "toolConfig.tools")?.iter().enumerate() {
            let t_name = format!("toolConfig.tools[{k}]");
            let (member, tv) = union(t, &t_name, TOOL_MEMBERS)?;
            let at = format!("{t_name}.{member}");
            if member == "cachePoint" {
                cache_point(
                    tv,
                    &at,
                    &format!("toolConfig.tools.{}.member.cachePoint", k + 1),
                )?;
                continue;
            }
            if member == "systemTool" {
                // A tool the model's provider defines, named only (`SystemTool`).
                let system_tool = object(tv, &at)?;
                keys(system_tool, &at, SYSTEM_TOOL_KEYS, SYSTEM_TOOL_KEYS)?;
                string(system_tool, &at, "name")?;
                continue;
            }
            let spec = object(tv, &at)?;
            keys(spec, &at, TOOL_SPEC_KEYS, &["name", "inputSchema"])?;
            string(spec, &at, "name")?;
            string(spec, &at, "description")?;
            if let Some(schema) = spec.get("inputSchema") {
                let s_at = format!("{at}.inputSchema");
                let (_, json) = union(schema, &s_at, &["json"])?;
                object(json, &format!("{s_at}.json"))?;
            }
        }
    }
    let Some(choice) = o.get("toolChoice") else {
        return Ok(None);
    };
    let (kind, cv) = union(choice, "toolConfig.toolChoice", &["auto", "any", "tool"])?;
    let at = format!("toolConfig.toolChoice.{kind}");
    let co = object(cv, &at)?;
    if kind == "tool" {
        keys(co, &at, &["name"], &["name"])?;
        string(co, &at, "name")?;
    } else {
        keys(co, &at, &[], &[])?;
    }
    Ok(matches!(kind, "any" | "tool").then_some(kind))
}

/// Every other top-level member's type.
fn other_members(o: &Map<String, Value>) -> Result<(), String> {
    if let Some(v) = o.get("additionalModelRequestFields") {
        object(v, "additionalModelRequestFields")?;
    }
    if let Some(v) = o.get("additionalModelResponseFieldPaths") {
        strings(v, "additionalModelResponseFieldPaths")?;
    }
    if let Some(v) = o.get("guardrailConfig") {
        let g = object(v, "guardrailConfig")?;
        keys(
            g,
            "guardrailConfig",
            &[
                "guardrailIdentifier",
                "guardrailVersion",
                "trace",
                "streamProcessingMode",
            ],
            &["guardrailIdentifier", "guardrailVersion"],
        )?;
    }
    if let Some(v) = o.get("promptVariables") {
        object(v, "promptVariables")?;
    }
    if let Some(v) = o.get("requestMetadata") {
        for (k, value) in object(v, "requestMetadata")? {
            if !value.is_string() {
                return Err(wrong_type(&format!("requestMetadata.{k}"), value, STR));
            }
        }
    }
    if let Some(v) = o.get("performanceConfig") {
        let p = object(v, "performanceConfig")?;
        keys(p, "performanceConfig", &["latency"], &[])?;
        enumerated(
            p,
            "latency",
            "performanceConfig.latency",
            &["standard", "optimized"],
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------- readers

/// The member name of a content block (`""` for a malformed one; the schema ran first).
fn member(b: &Value) -> &str {
    b.as_object()
        .and_then(|o| o.keys().next())
        .map_or("", String::as_str)
}

/// A message's `role` (`""` when absent).
pub(crate) fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// A message's content blocks (none when absent).
pub(crate) fn blocks(m: &Value) -> &[Value] {
    list_of(m, "content")
}

/// The index where the in-flight tool loop starts: right after the last user message with a text
/// block and no `toolResult` (0 when there is none). Text after tool results in the same message
/// (a steer) leaves the loop in flight: Claude's refusal names "the lastmost set of `tool_use`
/// and `tool_result` blocks" (docs/providers.md, Bedrock and Anthropic errors).
pub(crate) fn loop_start(messages: &[Value]) -> usize {
    messages
        .iter()
        .rposition(|m| {
            role(m) == "user"
                && blocks(m).iter().any(|b| member(b) == "text")
                && !blocks(m).iter().any(|b| member(b) == "toolResult")
        })
        .map_or(0, |i| i + 1)
}

/// Anthropic's name for a Converse block, as Claude's errors report it.
fn anthropic_name(member: &str) -> String {
    match member {
        "toolUse" => "tool_use".to_owned(),
        "toolResult" => "tool_result".to_owned(),
        "reasoningContent" => "thinking".to_owned(),
        other => snake(other),
    }
}

fn tool_ids<'a>(m: &'a Value, member_name: &str) -> Vec<&'a str> {
    blocks(m)
        .iter()
        .filter_map(|b| b.get(member_name))
        .filter_map(|t| t.get("toolUseId").and_then(Value::as_str))
        .collect()
}

// ---------------------------------------------------------------- conversation rules

fn turn_order(messages: &[Value]) -> Result<(), String> {
    match messages.first() {
        Some(m) if role(m) == "user" => {}
        _ => return Err(START_WITH_USER.to_owned()),
    }
    if messages.windows(2).any(|w| role(&w[0]) == role(&w[1])) {
        return Err(ALTERNATE.to_owned());
    }
    Ok(())
}

fn placement(messages: &[Value]) -> Result<(), String> {
    for (n, m) in messages.iter().enumerate() {
        let user = role(m) == "user";
        for (j, b) in blocks(m).iter().enumerate() {
            match (member(b), user) {
                ("reasoningContent", true) => return Err(NO_USER_REASONING.to_owned()),
                ("toolUse", true) => return Err(wrong_role(n, j, "toolUse", "user")),
                ("toolResult", false) => return Err(wrong_role(n, j, "toolResult", "assistant")),
                _ => {}
            }
        }
    }
    Ok(())
}

fn pairing(messages: &[Value]) -> Result<(), String> {
    for (n, m) in messages.iter().enumerate() {
        if role(m) == "assistant" {
            let uses = tool_ids(m, "toolUse");
            let answered = messages
                .get(n + 1)
                .map(|r| tool_ids(r, "toolResult"))
                .unwrap_or_default();
            let missing: Vec<&str> = uses
                .iter()
                .copied()
                .filter(|id| !answered.contains(id))
                .collect();
            if !missing.is_empty() {
                return Err(expected_results(n + 1, &missing));
            }
        } else {
            let mut pending = n
                .checked_sub(1)
                .map(|p| tool_ids(&messages[p], "toolUse"))
                .unwrap_or_default();
            for id in tool_ids(m, "toolResult") {
                match pending.iter().position(|p| *p == id) {
                    Some(at) => {
                        pending.remove(at);
                    }
                    None => return Err(too_many_results(n)),
                }
            }
        }
    }
    Ok(())
}

/// Claude's `additionalModelRequestFields`: the thinking mode (Anthropic rules, wrapped).
fn claude_fields(
    o: &Map<String, Value>,
    forced_tool: Option<&str>,
) -> Result<(Thinking, Option<Behavior>), String> {
    let empty = Map::new();
    let fields = o
        .get("additionalModelRequestFields")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(k) = fields
        .keys()
        .find(|k| !CLAUDE_EXTRA_FIELDS.contains(&k.as_str()))
    {
        return Err(model_errors(&format!(
            "{k}: Extra inputs are not permitted"
        )));
    }
    // `thinking.block_binding` (docs/spec.md §5a 4) is split off first, as the Messages door does.
    let (behavior, plain) = block_binding(fields.get("thinking")).map_err(|e| model_errors(&e))?;
    let (mode, budget) = claude::thinking(plain.as_ref()).map_err(|e| model_errors(&e))?;
    if let Some(oc) = fields.get("output_config") {
        claude::output_config(oc).map_err(|e| model_errors(&e))?;
    }
    let betas = match fields.get("anthropic_beta") {
        None => Vec::new(),
        Some(Value::Array(b)) if b.iter().all(Value::is_string) => {
            b.iter().filter_map(Value::as_str).collect()
        }
        // Simulator-chosen (pydantic's wording).
        Some(_) => return Err(model_errors("anthropic_beta: Input should be a valid list")),
    };
    if behavior.is_some() && !betas.contains(&BLOCK_BINDING_BETA) {
        return Err(model_errors(&binding::binding_needs_beta()));
    }
    let inference = o.get("inferenceConfig");
    if let Some(budget) = budget {
        let max = inference
            .and_then(|i| i.get("maxTokens"))
            .and_then(Value::as_u64);
        if max.is_some_and(|max| budget >= max) && !betas.contains(&INTERLEAVED_BETA) {
            return Err(model_errors(BUDGET_NOT_UNDER_MAX));
        }
    }
    if mode.on() {
        let temperature = inference
            .and_then(|i| i.get("temperature"))
            .and_then(Value::as_f64);
        if temperature.is_some_and(|t| t != 1.0) {
            return Err(model_errors(TEMPERATURE_WITH_THINKING));
        }
        if forced_tool.is_some() {
            return Err(model_errors(FORCED_TOOL_WITH_THINKING));
        }
    }
    Ok((mode, behavior))
}

/// Nova's `reasoningConfig`: whether reasoning is on.
fn nova_fields(model: &str, o: &Map<String, Value>) -> Result<bool, String> {
    let Some(rc) = o
        .get("additionalModelRequestFields")
        .and_then(|f| f.get("reasoningConfig"))
    else {
        return Ok(false);
    };
    if !model.to_ascii_lowercase().contains("nova-2") {
        return Err(MALFORMED_REASONING_CONFIG.to_owned());
    }
    let ok = rc.as_object().is_some_and(|r| {
        r.keys().all(|k| k == "type" || k == "maxReasoningEffort")
            && matches!(
                r.get("type").and_then(Value::as_str),
                Some("enabled" | "disabled")
            )
            && r.get("maxReasoningEffort")
                .is_none_or(|e| matches!(e.as_str(), Some("low" | "medium" | "high")))
    });
    if !ok {
        return Err(MALFORMED_REASONING_CONFIG.to_owned());
    }
    Ok(rc.get("type").and_then(Value::as_str) == Some("enabled"))
}

/// The reasoning blocks of every assistant message: `(message, block, reasoning union value)`.
fn reasoning_blocks(messages: &[Value]) -> Vec<(usize, usize, &Value)> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| role(m) == "assistant")
        .flat_map(|(n, m)| {
            blocks(m)
                .iter()
                .enumerate()
                .filter_map(move |(j, b)| b.get("reasoningContent").map(|r| (n, j, r)))
        })
        .collect()
}

/// How a bound request judges replayed reasoning (docs/spec.md §5a): `drop_block` or not, the tools
/// digest and [`Bind`].
struct Bound<'a, 'b> {
    drop: bool,
    tools: [u8; 32],
    bind: &'b Bind<'a>,
    ledger: &'b Ledger,
}

/// Claude: verifies every signed block against the prefix before its message; returns each
/// block's token by (message, block). On a bound request (`bound`) the block is also checked
/// against the tools, model and account and the put-back memory: a mismatch is the Anthropic
/// refusal ("bound to a different conversation") in Bedrock's ValidationException, or with
/// `drop_block` the block is dropped and listed in `transformations`.
fn signatures(
    system: Option<&Value>,
    messages: &[Value],
    key: &[u8],
    refuse_redacted: bool,
    bound: Option<&Bound<'_, '_>>,
    transformations: &mut Vec<Value>,
) -> Result<HashMap<(usize, usize), Token>, String> {
    let mut tokens = HashMap::new();
    let mut digests = HashMap::new();
    for (n, j, r) in reasoning_blocks(messages) {
        let digest = *digests
            .entry(n)
            .or_insert_with(|| reasoning::prefix_digest(system, &messages[..n]));
        if let Some(b) = bound {
            if r.get("redactedContent").is_some() && refuse_redacted {
                return Err(redacted_refused(n, j));
            }
            let binding = Binding {
                prefix: digest,
                tools: b.tools,
                model: b.bind.model,
                account: b.bind.account,
            };
            let (opened, kind) = match r.get("reasoningText") {
                Some(rt) => {
                    let text = rt.get("text").and_then(Value::as_str).unwrap_or("");
                    let sig = rt.get("signature").and_then(Value::as_str).unwrap_or("");
                    (
                        thinking::open_messages_thinking(key, &binding, text, sig),
                        "thinking",
                    )
                }
                None => {
                    let data = r
                        .get("redactedContent")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    (
                        thinking::open_messages_redacted(key, &binding, data),
                        "redacted_thinking",
                    )
                }
            };
            let Some(o) = opened else {
                return Err(model_errors(&claude::invalid_signature_text(n, j, kind)));
            };
            let reason = if !o.model || !o.account {
                Some(Reason::Model)
            } else if !o.prefix || !o.tools || b.ledger.was_left_out(o.token.reply, o.token.pos) {
                Some(Reason::Prefix)
            } else {
                None
            };
            match reason {
                Some(_) if !b.drop => return Err(model_errors(&binding::bound_text(n, j))),
                Some(reason) => transformations.push(binding::dropped(n, j, reason)),
                None => {
                    tokens.insert((n, j), o.token);
                }
            }
            continue;
        }
        let token = if let Some(rt) = r.get("reasoningText") {
            let text = rt.get("text").and_then(Value::as_str).unwrap_or("");
            let Some(sig) = rt.get("signature").and_then(Value::as_str) else {
                return Err(model_errors(&format!(
                    "messages.{n}.content.{j}.thinking.signature: Field required"
                )));
            };
            thinking::verify_thinking(key, &digest, text, sig)
                .ok_or_else(|| model_errors(&claude::invalid_signature_text(n, j, "thinking")))?
        } else {
            if refuse_redacted {
                return Err(redacted_refused(n, j));
            }
            let data = r
                .get("redactedContent")
                .and_then(Value::as_str)
                .unwrap_or("");
            thinking::open_redacted(key, &digest, data).ok_or_else(|| {
                model_errors(&claude::invalid_signature_text(n, j, "redacted_thinking"))
            })?
        };
        tokens.insert((n, j), token);
    }
    Ok(tokens)
}

/// Claude with thinking on: every assistant message of the in-flight loop that calls a tool starts
/// with the reasoning blocks issued for it, complete and in order. With `redacted_dropped` (the
/// `refuse_redacted` switch: the service cannot take redacted content, so a client strips it)
/// only the start is checked; the signatures still bind every remaining block.
fn loop_turns(
    messages: &[Value],
    tokens: &HashMap<(usize, usize), Token>,
    redacted_dropped: bool,
    transformations: &[Value],
) -> Result<(), String> {
    for (n, m) in messages.iter().enumerate().skip(loop_start(messages)) {
        let content = blocks(m);
        if role(m) != "assistant" || !content.iter().any(|b| member(b) == "toolUse") {
            continue;
        }
        // `drop_block` dropped reasoning of this turn: the API dropped it, it does not ask for
        // it.
        let here = format!("messages.{n}.content.");
        if transformations.iter().any(|t| {
            t.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with(&here))
        }) {
            continue;
        }
        let first = content.first().map_or("", member);
        if first != "reasoningContent" {
            return Err(model_errors(&claude::expected_thinking_text(
                n,
                0,
                &anthropic_name(first),
            )));
        }
        let Some(issued) = tokens.get(&(n, 0)).filter(|_| !redacted_dropped) else {
            continue;
        };
        let count = usize::from(issued.count);
        for (i, b) in content.iter().enumerate() {
            let is_reasoning = member(b) == "reasoningContent";
            let ok = if i < count {
                let want = Token {
                    pos: u8::try_from(i).unwrap_or(u8::MAX),
                    ..*issued
                };
                is_reasoning && tokens.get(&(n, i)) == Some(&want)
            } else {
                !is_reasoning
            };
            if !ok {
                return Err(model_errors(&claude::modified_text(n, i)));
            }
        }
        if content.len() < count {
            return Err(model_errors(&claude::modified_text(n, content.len())));
        }
    }
    Ok(())
}

/// DeepSeek-R1 / Kimi K3: reasoning only inside the in-flight loop, and unsigned.
fn strip(messages: &[Value]) -> Result<(), String> {
    let start = loop_start(messages);
    for (n, j, r) in reasoning_blocks(messages) {
        if n < start {
            return Err(NO_USER_REASONING.to_owned());
        }
        unsigned(n, j, r)?;
    }
    Ok(())
}

/// No signature, no redacted content.
fn unsigned(n: usize, j: usize, r: &Value) -> Result<(), String> {
    if r.get("redactedContent").is_some() {
        return Err(unsigned_only(n, j, "redactedContent"));
    }
    if r.get("reasoningText")
        .and_then(|t| t.get("signature"))
        .is_some()
    {
        return Err(unsigned_only(n, j, "a signature"));
    }
    Ok(())
}

/// Validates a parsed Converse request for `model` (`bind.model`).
pub(crate) fn validate(
    bind: &Bind<'_>,
    body: &Value,
    key: &[u8],
    refuse_redacted: bool,
) -> Result<Checked, String> {
    let model = bind.model;
    let o = object(body, "input")?;
    let mut allowed = vec!["modelId"];
    allowed.extend_from_slice(CONVERSE_TOP_LEVEL);
    if let Some(k) = o.keys().find(|k| !CONVERSE_TOP_LEVEL.contains(&k.as_str())) {
        return Err(unknown("input", k, &allowed));
    }
    let Some(messages_v) = o.get("messages") else {
        return Err(missing("input", "messages"));
    };
    let messages = messages(messages_v)?;
    if let Some(s) = o.get("system") {
        system(s)?;
    }
    if let Some(i) = o.get("inferenceConfig") {
        inference_config(i)?;
    }
    let forced_tool = o.get("toolConfig").map(tool_config).transpose()?.flatten();
    other_members(o)?;

    turn_order(messages)?;
    placement(messages)?;
    pairing(messages)?;
    let uses_tools = messages
        .iter()
        .flat_map(blocks)
        .any(|b| matches!(member(b), "toolUse" | "toolResult"));
    if uses_tools && !o.contains_key("toolConfig") {
        return Err(TOOL_CONFIG_REQUIRED.to_owned());
    }

    let mut bound = false;
    let mut transformations = Vec::new();
    let reasoning = match policy(model) {
        Policy::Signed => {
            let (mode, behavior) = claude_fields(o, forced_tool)?;
            bound = binding::anthropic_is_bound(model) || behavior.is_some();
            let mut ledger = crate::lock(bind.ledger);
            let judge = Bound {
                drop: behavior == Some(Behavior::DropBlock),
                tools: reasoning::tools_digest(o.get("toolConfig").and_then(|t| t.get("tools"))),
                bind,
                ledger: &ledger,
            };
            let tokens = signatures(
                o.get("system"),
                messages,
                key,
                refuse_redacted,
                bound.then_some(&judge),
                &mut transformations,
            )?;
            if mode.on() {
                loop_turns(messages, &tokens, refuse_redacted, &transformations)?;
            }
            if bound {
                // The turns the simulator minted whose blocks this accepted request left out
                // (or `drop_block` dropped): never to come back in the conversation.
                for (n, m) in messages.iter().enumerate() {
                    if role(m) != "assistant" {
                        continue;
                    }
                    let Some((reply, count)) = ledger.turn(&reasoning::turn_key(&messages[..=n]))
                    else {
                        continue;
                    };
                    for pos in 0..count {
                        let carried = tokens
                            .iter()
                            .any(|((at, _), t)| *at == n && t.reply == reply && t.pos == pos);
                        if !carried {
                            ledger.leave_out(reply, pos);
                        }
                    }
                }
            }
            match mode {
                Thinking::Off => Reasoning::Off,
                Thinking::On { omitted } => Reasoning::Signed { omitted },
            }
        }
        Policy::Strip => {
            strip(messages)?;
            Reasoning::Text
        }
        Policy::Unsigned => {
            for (n, j, r) in reasoning_blocks(messages) {
                unsigned(n, j, r)?;
            }
            let nova = model.to_ascii_lowercase().contains("amazon.nova");
            let on = nova_fields(model, o)?;
            if nova && !on {
                Reasoning::Off
            } else {
                Reasoning::Text
            }
        }
    };
    Ok(Checked {
        reasoning,
        bound,
        transformations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policies_by_model_id() {
        assert_eq!(policy("anthropic.claude-opus-4-6-v1:0"), Policy::Signed);
        assert_eq!(
            policy(
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-6"
            ),
            Policy::Signed
        );
        assert_eq!(policy("deepseek.r1-v1:0"), Policy::Strip);
        assert_eq!(policy("us.deepseek.r1-v1:0"), Policy::Strip);
        assert_eq!(policy("moonshotai.kimi-k3-v1:0"), Policy::Strip);
        assert_eq!(policy("openai.gpt-oss-120b-1:0"), Policy::Unsigned);
        assert_eq!(policy("amazon.nova-2-lite-v1:0"), Policy::Unsigned);
        assert_eq!(
            policy("meta.llama4-maverick-17b-instruct-v1:0"),
            Policy::Unsigned
        );
    }

    #[test]
    fn the_loop_starts_after_the_last_user_text() {
        let msgs = [
            json!({"role": "user", "content": [{"text": "a"}]}),
            json!({"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "n", "input": {}}}]}),
            json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": []}}]}),
        ];
        assert_eq!(loop_start(&msgs), 1);
        assert_eq!(loop_start(&msgs[..1]), 1);
        assert_eq!(loop_start(&[]), 0);
        assert_eq!(anthropic_name("toolUse"), "tool_use");
        assert_eq!(anthropic_name("cachePoint"), "cache_point");
        assert_eq!(anthropic_name("text"), "text");
    }
}
