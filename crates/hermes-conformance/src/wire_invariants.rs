//! Properties every native wire keeps, checked by running a registered [`Wire`] over a built-in
//! corpus of histories (Anthropic-shaped signed and redacted thinking in and before the tool
//! loop, another model's turns, a turn not replayed, an imported turn, a dangling call, an
//! orphan result, content parts, and the Python original's persistence keys of the chat corpus).
//!
//! Each history goes through `hermes_core::pairing::paired` first, as the driver does before
//! every request, and is encoded with no thinking preference and with `--effort high`, with a
//! tool definition. Three passes: the target is the corpus's first model, its second model, and
//! its first model while everything was minted on another host. The two models are
//! [`WIRE_CORPUS_MODELS`] unless the caller names its wire's own ids
//! ([`check_wire_invariants_for`]).
//!
//! The checks that read the body's structure know two body shapes ([`Shape`]): the Anthropic
//! Messages body (`max_tokens`, blocks tagged by `type`) and the AWS Bedrock Converse body
//! (`messages[].content[]` blocks that are unions keyed by their one member). Each concept
//! (schema, tool-call pairing, cache breakpoints, where opaque strings travel) is one check
//! that reads blocks through the shape; a body of neither shape skips the structural checks.

use std::collections::{BTreeSet, HashMap};

use hermes_core::message::same_minter;
use hermes_core::pairing::paired;
use hermes_core::{
    DetailItem, Effort, Message, RawJson, RequestParts, ResolveOptions, Role, RouteTable,
    RouteTarget, ThinkingRequest, Verdicts, Wire, WireVerdicts,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Check;

/// The wire corpus: named histories (`[{"name", "history"}]`).
const WIRE_CORPUS: &str = include_str!("wire_corpus.json");
/// The chat invariants' corpus, run through native wires too (the Python original's keys).
const CHAT_CORPUS: &str = include_str!("corpus.json");

/// The models the corpus's turns were minted by (`model-a`, `model-b` in the corpus files)
/// unless a wire names its own ([`check_wire_invariants_for`], `Suite::wire_models`); the
/// passes target each of them, and the first one again on another host.
pub const WIRE_CORPUS_MODELS: [&str; 2] = ["claude-opus-4-6", "claude-sonnet-4-5"];

/// The host the corpus's items were minted on in the third pass.
const ELSEWHERE: &str = "elsewhere.invalid";

/// Keys whose string values are opaque (signed, encrypted or redacted): replayed only to their
/// minter, and then byte for byte.
const OPAQUE_KEYS: &[&str] = &[
    "signature",
    "data",
    "encrypted_content",
    "thought_signature",
    "reasoning_opaque",
];

/// Stored keys no native wire sends (docs/spec.md §2: storage keeps every key; a wire sends only
/// what its schema defines), whatever the corpus holds.
const BOOKKEEPING: &[&str] = &[
    "origin",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "reasoning_text",
    "reasoning_opaque",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "function",
    "arguments",
    "extra_content",
    "thought_signature",
    "call_id",
    "response_item_id",
    "finish_reason",
    "timestamp",
    "platform_message_id",
    "message_uid",
    "effect_disposition",
    "anthropic_content_blocks",
    "bedrock_content_blocks",
    "api_content",
    "key_order",
];

/// Key prefixes no native wire sends: core's one list of hermes' storage keys.
const BOOKKEEPING_PREFIXES: &[&str] = hermes_core::reattach::PRIVATE_KEY_PREFIXES;

// The Converse lists are botocore's `bedrock-runtime` service model (`service-2.json`:
// `ConverseRequest` and the shapes under it; e.g. `ContentBlock` has `audio`, `Tool` has
// `systemTool`). The Messages lists are the `anthropic` SDK's request params
// (`MessageCreateParams`, the `*BlockParam`s, `ToolParam`, `CacheControlEphemeralParam`,
// `OutputConfigParam`; the top-level `cache_control` is automatic prompt caching,
// platform.claude.com/docs/en/build-with-claude/prompt-caching). hermes-sim checks the same
// wires with its own lists (`hermes_sim::schema`, written independently of our code and
// depending on no hermes crate); `tests::the_converse_and_messages_lists_are_the_simulators`
// holds each pair to the same members.

/// The members of a Converse request body (botocore `ConverseRequest`, the `modelId` aside: it
/// travels in the path).
const CONVERSE_REQUEST: &[&str] = &[
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "guardrailConfig",
    "promptVariables",
    "requestMetadata",
    "performanceConfig",
];

/// The members of the Converse `ContentBlock` union.
const CONVERSE_BLOCK: &[&str] = &[
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

/// The members of the Converse `SystemContentBlock` union.
const CONVERSE_SYSTEM_BLOCK: &[&str] = &["text", "guardContent", "cachePoint"];

/// The members of the Converse `ToolResultContentBlock` union.
const CONVERSE_TOOL_RESULT_BLOCK: &[&str] =
    &["json", "text", "image", "document", "video", "searchResult"];

/// The members of the Converse `ReasoningContentBlock` union.
const CONVERSE_REASONING: &[&str] = &["reasoningText", "redactedContent"];

/// The members of the Converse `Tool` union.
const CONVERSE_TOOL: &[&str] = &["toolSpec", "systemTool", "cachePoint"];

/// The keys of a Converse `Message`.
const CONVERSE_MESSAGE: &[&str] = &["role", "content"];

/// The keys of Converse's `InferenceConfiguration`.
const CONVERSE_INFERENCE_CONFIG: &[&str] = &["maxTokens", "temperature", "topP", "stopSequences"];

/// The keys of Converse's `ToolConfiguration`.
const CONVERSE_TOOL_CONFIG: &[&str] = &["tools", "toolChoice"];

/// The keys of Converse's `ToolUseBlock`.
const CONVERSE_TOOL_USE: &[&str] = &["toolUseId", "name", "input", "type"];

/// The keys of Converse's `ToolResultBlock`.
const CONVERSE_TOOL_RESULT: &[&str] = &["toolUseId", "content", "status", "type"];

/// The keys of Converse's `ReasoningTextBlock`.
const CONVERSE_REASONING_TEXT: &[&str] = &["text", "signature"];

/// The keys of Converse's `ToolSpecification`.
const CONVERSE_TOOL_SPEC: &[&str] = &["name", "description", "inputSchema", "strict"];

/// The keys of Converse's `SystemTool`.
const CONVERSE_SYSTEM_TOOL: &[&str] = &["name"];

/// The keys of Converse's `CachePointBlock`.
const CONVERSE_CACHE_POINT: &[&str] = &["type", "ttl"];

/// The top-level keys of a Messages body: the API's, and the two only some doors take
/// (`anthropic_version` on Vertex and Bedrock InvokeModel, `anthropic_beta` on Bedrock
/// InvokeModel: docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
const MESSAGES_TOP_LEVEL: &[&str] = &[
    "model",
    "anthropic_version",
    "anthropic_beta",
    "max_tokens",
    "system",
    "messages",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
    "service_tier",
    "cache_control",
    "context_management",
];

/// The block types a Messages message may hold.
const MESSAGES_BLOCK_TAGS: &[&str] = &[
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
];

/// The block types a Messages `tool_result`'s content list may hold.
const MESSAGES_TOOL_RESULT_CONTENT: &[&str] = &["text", "image", "document"];

/// The keys of a Messages message.
const MESSAGES_MESSAGE: &[&str] = &["role", "content"];

/// The keys of a Messages `text` block (a system block too).
const MESSAGES_TEXT: &[&str] = &["type", "text", "cache_control", "citations"];

/// The keys of a Messages `image` block.
const MESSAGES_IMAGE: &[&str] = &["type", "source", "cache_control"];

/// The keys of a Messages `document` block.
const MESSAGES_DOCUMENT: &[&str] = &[
    "type",
    "source",
    "title",
    "context",
    "citations",
    "cache_control",
];

/// The keys of a Messages `thinking` block.
const MESSAGES_THINKING: &[&str] = &["type", "thinking", "signature"];

/// The keys of a Messages `redacted_thinking` block.
const MESSAGES_REDACTED_THINKING: &[&str] = &["type", "data"];

/// The keys of a Messages `tool_use` block.
const MESSAGES_TOOL_USE: &[&str] = &["type", "id", "name", "input", "cache_control"];

/// The keys of a Messages `tool_result` block.
const MESSAGES_TOOL_RESULT: &[&str] = &[
    "type",
    "tool_use_id",
    "content",
    "is_error",
    "cache_control",
];

/// The keys of a Messages custom tool (`defer_loading`: tool search, as Claude Code sends it).
const MESSAGES_TOOL: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "cache_control",
    "type",
    "defer_loading",
];

/// The keys of a Messages `cache_control`.
const MESSAGES_CACHE_CONTROL: &[&str] = &["type", "ttl"];

/// The keys of a Messages `output_config`.
const MESSAGES_OUTPUT_CONFIG: &[&str] = &["effort", "format"];

#[derive(Deserialize)]
struct Named {
    name: String,
    history: Vec<Message>,
}

/// One invariant over a stored history and the body sent for it.
type Invariant<'a> = dyn Fn(&[Message], &Sent) -> Result<(), String> + 'a;

/// One encoded request of a pass.
struct Sent {
    history: String,
    thinking: &'static str,
    text: String,
    body: Value,
    /// The body's shape, when it has one the structural checks know.
    shape: Option<Shape>,
    /// Every string value of the body, decoded.
    strings: BTreeSet<String>,
}

/// A body shape the structural checks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// The Anthropic Messages body: `max_tokens`, `messages[].content[]` blocks tagged by
    /// `type`, opaque strings in `thinking.signature` and `redacted_thinking.data`.
    Messages,
    /// The AWS Bedrock Converse body: `messages[].content[]` blocks that are unions of exactly
    /// one member (`{"text"}`, `{"toolUse"}`, `{"reasoningContent"}`…), opaque strings in
    /// `reasoningText.signature` and `redactedContent`.
    Converse,
}

/// One content block read through its shape: its kind (the `type` tag, or the union's member)
/// and the object holding its fields (the block itself, or the member's value).
#[derive(Clone, Copy, Debug)]
struct Block<'v> {
    kind: &'v str,
    fields: &'v Value,
    whole: &'v Value,
}

/// An opaque string a reasoning block of the body carries.
#[derive(Clone, Copy, Debug)]
struct Carried<'v> {
    /// The stored key it stands for: `signature` or `data` (a redacted blob).
    key: &'static str,
    value: &'v str,
    /// The reasoning text signed with it, for a signature.
    text: Option<&'v str>,
}

impl Shape {
    /// The shape of a body the wire `wire_id` built: the one the wire's id declares (the
    /// Anthropic Messages and Bedrock Converse wires of `hermes-providers`), else the one the
    /// body shows ([`Shape::detect`]).
    fn of(wire_id: &str, body: &Value) -> Option<Shape> {
        if wire_id == hermes_wire_anthropic::WIRE_ID {
            Some(Shape::Messages)
        } else if wire_id == hermes_wire_bedrock::WIRE_ID {
            Some(Shape::Converse)
        } else {
            Shape::detect(body)
        }
    }

    /// Messages has `max_tokens` beside its `messages`; Converse has `messages` and no
    /// `max_tokens`, and either a member only a Converse request has or a content block with
    /// no `type` keyed by a Converse member.
    fn detect(body: &Value) -> Option<Shape> {
        let messages = body.get("messages")?.as_array()?;
        if body.get("max_tokens").is_some() {
            return Some(Shape::Messages);
        }
        let converse_member = CONVERSE_REQUEST
            .iter()
            .filter(|k| !matches!(**k, "messages" | "system"))
            .any(|k| body.get(k).is_some());
        let keyed_block = messages.iter().flat_map(blocks_of).any(|b| {
            b.as_object().is_some_and(|o| {
                !o.contains_key("type") && o.keys().any(|k| CONVERSE_BLOCK.contains(&k.as_str()))
            })
        });
        (converse_member || keyed_block).then_some(Shape::Converse)
    }

    /// `value` read as a content block of this shape (kind `""` when it is neither tagged nor
    /// a one-member union).
    fn block(self, value: &Value) -> Block<'_> {
        let (kind, fields) = match self {
            Shape::Messages => (
                value.get("type").and_then(Value::as_str).unwrap_or(""),
                value,
            ),
            Shape::Converse => match value.as_object() {
                Some(obj) if obj.len() == 1 => obj
                    .iter()
                    .next()
                    .map_or(("", value), |(k, v)| (k.as_str(), v)),
                _ => ("", value),
            },
        };
        Block {
            kind,
            fields,
            whole: value,
        }
    }

    /// A tool call's block kind and the field holding its id.
    fn call(self) -> (&'static str, &'static str) {
        match self {
            Shape::Messages => ("tool_use", "id"),
            Shape::Converse => ("toolUse", "toolUseId"),
        }
    }

    /// A tool result's block kind and the field holding the id it answers.
    fn result(self) -> (&'static str, &'static str) {
        match self {
            Shape::Messages => ("tool_result", "tool_use_id"),
            Shape::Converse => ("toolResult", "toolUseId"),
        }
    }

    /// A text block's text.
    fn text<'v>(self, block: &Block<'v>) -> Option<&'v str> {
        if block.kind != "text" {
            return None;
        }
        match self {
            Shape::Messages => block.fields.get("text").and_then(Value::as_str),
            Shape::Converse => block.fields.as_str(),
        }
    }

    /// Whether the block is reasoning (`thinking`, `redacted_thinking`; `reasoningContent`).
    fn is_reasoning(self, block: &Block<'_>) -> bool {
        match self {
            Shape::Messages => matches!(block.kind, "thinking" | "redacted_thinking"),
            Shape::Converse => block.kind == "reasoningContent",
        }
    }

    /// The opaque strings a reasoning block carries (none for any other block).
    fn carried<'v>(self, block: &Block<'v>) -> Vec<Carried<'v>> {
        if !self.is_reasoning(block) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut push = |key, holder: &'v Value, field: &str, text: Option<&'v str>| {
            if let Some(value) = holder.get(field).and_then(Value::as_str) {
                out.push(Carried { key, value, text });
            }
        };
        match self {
            Shape::Messages => {
                let text = block.fields.get("thinking").and_then(Value::as_str);
                push("signature", block.fields, "signature", text);
                push("data", block.fields, "data", None);
            }
            Shape::Converse => {
                if let Some(signed) = block.fields.get("reasoningText") {
                    let text = signed.get("text").and_then(Value::as_str);
                    push("signature", signed, "signature", text);
                }
                push("data", block.fields, "redactedContent", None);
            }
        }
        out
    }

    /// Whether `block` (after `previous` in its message) puts a cache breakpoint on reasoning:
    /// a `cache_control` on a thinking block; a `cachePoint` right after a `reasoningContent`.
    fn breakpoint_on_reasoning(self, previous: Option<&Block<'_>>, block: &Block<'_>) -> bool {
        match self {
            Shape::Messages => {
                self.is_reasoning(block) && block.fields.get("cache_control").is_some()
            }
            Shape::Converse => {
                block.kind == "cachePoint" && previous.is_some_and(|p| self.is_reasoning(p))
            }
        }
    }

    /// How the shape is named in failures.
    fn name(self) -> &'static str {
        match self {
            Shape::Messages => "Messages",
            Shape::Converse => "Converse",
        }
    }
}

/// Runs every native-wire invariant through `wire` for `provider` at `base_url`, the corpus
/// minted by [`WIRE_CORPUS_MODELS`]. Each check is reported under the route that target
/// resolves to, named `<wire> wire: <invariant> [<model> @ <host>]`.
pub fn check_wire_invariants(
    table: &RouteTable,
    wire: &dyn Wire,
    provider: &str,
    base_url: Option<&str>,
) -> Vec<Check> {
    check_wire_invariants_for(table, wire, provider, base_url, WIRE_CORPUS_MODELS)
}

/// As [`check_wire_invariants`], the corpus's `model-a` and `model-b` being `models`: the ids
/// the wire's provider knows its models by (Bedrock's `us.anthropic.claude-…`, say), so that
/// the wire applies the replay policy those models have.
pub fn check_wire_invariants_for(
    table: &RouteTable,
    wire: &dyn Wire,
    provider: &str,
    base_url: Option<&str>,
    models: [&str; 2],
) -> Vec<Check> {
    let wire_id = wire.id();
    let corpus = match corpus() {
        Ok(c) => c,
        Err(e) => {
            let target = RouteTarget::new(provider, base_url, models[0]);
            let route = table.resolve(&target, ResolveOptions::default());
            return vec![Check {
                route: route.id().to_owned(),
                name: format!("{wire_id} wire: invariant corpus"),
                failure: Some(e),
            }];
        }
    };
    let tools = RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]"#,
    )
    .ok();
    let mut checks = Vec::new();
    for (model, elsewhere) in [(models[0], false), (models[1], false), (models[0], true)] {
        let target = RouteTarget::new(provider, base_url, model);
        let decision = table.resolve(&target, ResolveOptions::default());
        let route = decision.id().to_owned();
        let host = target.host_key();
        let minted_on = if elsewhere {
            ELSEWHERE.to_owned()
        } else {
            host.clone()
        };
        let label = if elsewhere {
            format!("{model} @ {host}, minted on another host")
        } else {
            format!("{model} @ {host}")
        };
        let mut check = |name: &str, result: Result<(), String>| {
            checks.push(Check {
                route: route.clone(),
                name: format!("{wire_id} wire: {name} [{label}]"),
                failure: result.err(),
            });
        };
        let histories: Vec<(&str, Vec<Message>)> = corpus
            .iter()
            .map(|(name, h)| (name.as_str(), minted(h, &minted_on, models)))
            .collect();
        let verdicts = Verdicts::default();
        let wire_verdicts = WireVerdicts::default();

        let mut sent = Vec::new();
        let mut unchanged = Ok(());
        let mut same_twice = Ok(());
        let mut encode_failed = None;
        for (name, history) in &histories {
            let before = serde_json::to_string(history).unwrap_or_default();
            let (copy, _) = paired(history);
            let copy_before = serde_json::to_string(copy.as_ref()).unwrap_or_default();
            for (thinking, word) in [
                (ThinkingRequest::NoPreference, "no preference"),
                (ThinkingRequest::Effort(Effort::High), "effort high"),
            ] {
                let parts = RequestParts::new(&copy, &decision, &verdicts)
                    .wire_verdicts(&wire_verdicts)
                    .thinking(thinking)
                    .tools(tools.as_ref());
                let (first, second) = match (wire.encode(&parts), wire.encode(&parts)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        encode_failed.get_or_insert(format!("history `{name}`, {word}: {e}"));
                        continue;
                    }
                };
                if same_twice.is_ok()
                    && (first.body != second.body
                        || first.notes != second.notes
                        || first.refusable != second.refusable)
                {
                    same_twice = Err(format!(
                        "history `{name}`, {word}: encoding the same parts twice gave other bytes\n  first:  {}\n  second: {}",
                        String::from_utf8_lossy(&first.body),
                        String::from_utf8_lossy(&second.body)
                    ));
                }
                let text = match String::from_utf8(first.body) {
                    Ok(t) => t,
                    Err(e) => {
                        encode_failed
                            .get_or_insert(format!("history `{name}`, {word}: not UTF-8: {e}"));
                        continue;
                    }
                };
                match serde_json::from_str::<Value>(&text) {
                    Ok(body) => sent.push(Sent::new(wire_id, name, word, text, body)),
                    Err(e) => {
                        encode_failed.get_or_insert(format!(
                            "history `{name}`, {word}: the body is not JSON: {e}"
                        ));
                    }
                }
            }
            let after = serde_json::to_string(history).unwrap_or_default();
            let copy_after = serde_json::to_string(copy.as_ref()).unwrap_or_default();
            if unchanged.is_ok() && (before != after || copy_before != copy_after) {
                unchanged = Err(format!("history `{name}`: encoding changed the history"));
            }
        }
        check(
            "encodes the corpus",
            encode_failed.map_or(Ok(()), Err::<(), String>),
        );
        check("input unchanged", unchanged);
        check("same bytes twice", same_twice);

        let own = |m: &Message| m.origin.as_ref().is_none_or(|o| same_minter(o, &target));
        let by_history = |name: &str| {
            histories
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, h)| h.as_slice())
                .unwrap_or_default()
        };
        let each = |f: &Invariant<'_>| {
            for s in &sent {
                f(by_history(&s.history), s)
                    .map_err(|e| format!("history `{}`, {}: {e}", s.history, s.thinking))?;
            }
            Ok(())
        };
        check(
            "opaque items byte for byte",
            each(&|h, s| byte_for_byte(h, s, &own)),
        );
        check(
            "opaque items only to their minter",
            each(&|h, s| only_to_minter(h, s, &own)),
        );
        check(
            "no stored bookkeeping key",
            each(&|h, s| no_bookkeeping(h, &s.body)),
        );
        check("body schema", each(&|_, s| body_schema(s.shape, &s.body)));
        check(
            "every tool call answered in the next user turn",
            each(&|_, s| tool_calls_paired(s.shape, &s.body)),
        );
        check(
            "no cache breakpoint on thinking",
            each(&|_, s| no_cached_thinking(s.shape, &s.body)),
        );
    }
    checks
}

impl Sent {
    /// A body the wire `wire_id` sent for the history named `history`, with its shape and its
    /// decoded strings.
    fn new(
        wire_id: &str,
        history: &str,
        thinking: &'static str,
        text: String,
        body: Value,
    ) -> Self {
        let mut strings = BTreeSet::new();
        string_values(&body, &mut strings);
        Sent {
            history: history.to_owned(),
            thinking,
            text,
            shape: Shape::of(wire_id, &body),
            body,
            strings,
        }
    }
}

/// Every string value under `value`, decoded.
fn string_values(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| string_values(v, out)),
        Value::Object(obj) => obj.values().for_each(|v| string_values(v, out)),
        _ => {}
    }
}

/// The wire corpus and the chat corpus, named.
fn corpus() -> Result<Vec<(String, Vec<Message>)>, String> {
    let named: Vec<Named> =
        serde_json::from_str(WIRE_CORPUS).map_err(|e| format!("wire_corpus.json: {e}"))?;
    let chat: Vec<Message> =
        serde_json::from_str(CHAT_CORPUS).map_err(|e| format!("corpus.json: {e}"))?;
    let mut out: Vec<(String, Vec<Message>)> =
        named.into_iter().map(|n| (n.name, n.history)).collect();
    out.push(("python original keys (chat corpus)".to_owned(), chat));
    Ok(out)
}

/// The corpus with its placeholder origins made real: `model-a`/`model-b` become `models`, and
/// every origin's host `minted_on`.
fn minted(history: &[Message], minted_on: &str, models: [&str; 2]) -> Vec<Message> {
    history
        .iter()
        .cloned()
        .map(|mut m| {
            if let Some(o) = &mut m.origin {
                o.host = minted_on.to_owned();
                o.model = match o.model.as_str() {
                    "model-a" => models[0].to_owned(),
                    "model-b" => models[1].to_owned(),
                    other => other.to_owned(),
                };
            }
            m
        })
        .collect()
}

/// An opaque string: the key it is stored under, its literal as stored (escapes kept) and its
/// text.
#[derive(Clone, Debug)]
struct Opaque {
    key: String,
    literal: String,
    text: String,
}

impl Opaque {
    /// Whether the body holds it: as stored, re-escaped, or as a string value of the body once
    /// decoded (a body written with other escapes, `\u00e9` for `é` say).
    fn in_body(&self, sent: &Sent) -> bool {
        sent.text.contains(&self.literal)
            || serde_json::to_string(&self.text).is_ok_and(|quoted| sent.text.contains(&quoted))
            || sent.strings.contains(&self.text)
    }
}

/// Every non-blank string under an opaque key anywhere in the JSON text `raw`.
fn opaque_strings(raw: &str, out: &mut Vec<Opaque>) {
    if let Ok(map) = serde_json::from_str::<HashMap<String, &RawValue>>(raw) {
        for (key, value) in map {
            let literal = value.get();
            if OPAQUE_KEYS.contains(&key.as_str()) && literal.starts_with('"') {
                if let Ok(text) = serde_json::from_str::<String>(literal)
                    && !text.trim().is_empty()
                {
                    out.push(Opaque {
                        key,
                        literal: literal.to_owned(),
                        text,
                    });
                }
            } else {
                opaque_strings(literal, out);
            }
        }
    } else if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw) {
        for item in items {
            opaque_strings(item.get(), out);
        }
    }
}

/// The opaque strings of a whole stored message (carriers, tool calls, unknown keys).
fn message_opaques(msg: &Message) -> Vec<Opaque> {
    let mut out = Vec::new();
    if let Ok(text) = serde_json::to_string(msg) {
        opaque_strings(&text, &mut out);
    }
    out
}

/// A message the wire copy sends: replayable (`paired` leaves the others out).
fn replayed(msg: &Message) -> bool {
    msg.role != Role::Assistant || msg.replayable()
}

/// Every stored opaque `reasoning_details` item of a message this target may receive that
/// reaches the body is there exactly as stored. On Messages (and a body of no known shape) that
/// is the item's stored JSON text, byte for byte. Converse re-renders the item as
/// `reasoningContent`, so there each of its opaque strings that reaches the body must be, as a
/// decoded string compared exactly, a value of its own kind (a `signature` a
/// `reasoningText.signature`, whose `text` is the item's `thinking` exactly; a redacted `data`
/// a `redactedContent`) in a body message carrying that turn ([`carrying`]).
fn byte_for_byte(
    history: &[Message],
    sent: &Sent,
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    for msg in history.iter().filter(|m| own(m) && replayed(m)) {
        for item in msg.reasoning_details.iter().flatten() {
            let DetailItem::Provider {
                raw, opaque: true, ..
            } = item
            else {
                continue;
            };
            let mut markers = Vec::new();
            opaque_strings(raw.get(), &mut markers);
            let reached: Vec<&Opaque> = markers.iter().filter(|m| m.in_body(sent)).collect();
            if reached.is_empty() {
                continue;
            }
            match sent.shape {
                Some(shape @ Shape::Converse) => {
                    rendered_exactly(shape, msg, raw, &reached, &sent.body)?;
                }
                _ if !sent.text.contains(raw.get()) => {
                    return Err(format!(
                        "stored item {} reached the body, but not byte for byte",
                        raw.get()
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Each of `reached` (opaque strings of the stored item `raw` of `msg`) is carried by a
/// reasoning block of a body message carrying `msg`, under the key it was stored under, the
/// signed text beside a signature equal to the item's `thinking`.
fn rendered_exactly(
    shape: Shape,
    msg: &Message,
    raw: &RawJson,
    reached: &[&Opaque],
    body: &Value,
) -> Result<(), String> {
    let item = raw.to_value();
    let thinking = item.get("thinking").and_then(Value::as_str);
    let signature = item.get("signature").and_then(Value::as_str);
    let carriers: Vec<Carried<'_>> = carrying(shape, msg, body)
        .into_iter()
        .flat_map(blocks_of)
        .flat_map(|b| shape.carried(&shape.block(b)))
        .collect();
    for o in reached {
        let named = matches!(o.key.as_str(), "signature" | "data");
        let signs_thinking = o.key == "signature" && signature == Some(o.text.as_str());
        let found = carriers.iter().any(|c| {
            c.value == o.text
                && (!named || c.key == o.key)
                && (!signs_thinking || thinking.is_none() || c.text == thinking)
        });
        if !found {
            let place = match (shape, o.key.as_str()) {
                (Shape::Converse, "signature") => {
                    "a `reasoningText.signature` (beside the item's thinking text)"
                }
                (Shape::Converse, "data") => "a `redactedContent`",
                (Shape::Messages, "signature") => "a thinking block's `signature`",
                (Shape::Messages, "data") => "a redacted thinking block's `data`",
                _ => "an opaque value of a reasoning block",
            };
            return Err(format!(
                "stored item {} reached the body, but its `{}` {:?} is not exactly {place} of the {} message carrying its turn",
                raw.get(),
                o.key,
                o.text,
                shape.name()
            ));
        }
    }
    Ok(())
}

/// The assistant messages of the body that carry the stored assistant turn `msg`: those
/// holding one of its tool calls (by id) or one of its texts; every assistant message when the
/// turn has neither.
fn carrying<'v>(shape: Shape, msg: &Message, body: &'v Value) -> Vec<&'v Value> {
    let ids: Vec<&str> = msg
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|c| c.id.as_deref())
        .collect();
    let texts = stored_texts(msg);
    let (call, call_id) = shape.call();
    let assistants =
        body_messages(body).filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    if ids.is_empty() && texts.is_empty() {
        return assistants.collect();
    }
    assistants
        .filter(|m| {
            blocks_of(m).map(|b| shape.block(b)).any(|b| {
                (b.kind == call
                    && b.fields
                        .get(call_id)
                        .and_then(Value::as_str)
                        .is_some_and(|id| ids.contains(&id)))
                    || shape.text(&b).is_some_and(|t| texts.iter().any(|s| s == t))
            })
        })
        .collect()
}

/// The non-empty texts of a stored message's content (a string, or the parts' `text`s).
fn stored_texts(msg: &Message) -> Vec<String> {
    let Some(content) = &msg.content else {
        return Vec::new();
    };
    let texts = match content.to_value() {
        Value::String(s) => vec![s],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    texts.into_iter().filter(|t| !t.is_empty()).collect()
}

/// No opaque string of another model's or host's turn, or of a turn not replayed, reaches the
/// body; and every opaque string a reasoning block of the body carries (Messages: a thinking
/// block's `signature`, a redacted block's `data`; Converse: a `reasoningText.signature`, a
/// `redactedContent`) is one a stored turn of this target's minter holds.
fn only_to_minter(
    history: &[Message],
    sent: &Sent,
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    let mut allowed: BTreeSet<String> = BTreeSet::new();
    for msg in history {
        let opaques = message_opaques(msg);
        if own(msg) && replayed(msg) {
            allowed.extend(opaques.into_iter().map(|o| o.text));
            continue;
        }
        if let Some(o) = opaques.iter().find(|o| o.in_body(sent)) {
            let why = match &msg.origin {
                Some(origin) if !replayed(msg) => format!(
                    "of a turn stored not replayed (minted by {} on {})",
                    origin.model, origin.host
                ),
                Some(origin) => format!("minted by {} on {}", origin.model, origin.host),
                None => "of a turn not replayed".to_owned(),
            };
            return Err(format!(
                "opaque {} {why} reached the body: {}",
                o.literal, sent.text
            ));
        }
    }
    let Some(shape) = sent.shape else {
        return Ok(());
    };
    for block in content_blocks(shape, &sent.body) {
        for carried in shape.carried(&block) {
            if !allowed.contains(carried.value) {
                return Err(format!(
                    "a `{}` block carries {} {:?}, which no stored turn of this model and host holds: {}",
                    block.kind,
                    if carried.key == "data" {
                        "redacted data"
                    } else {
                        "the signature"
                    },
                    carried.value,
                    block.whole
                ));
            }
        }
    }
    Ok(())
}

/// The body's `messages`.
fn body_messages(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A message's content blocks (none for string content).
fn blocks_of(msg: &Value) -> impl Iterator<Item = &Value> {
    msg.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Every content block of every message, read through `shape` (tool results' nested blocks
/// included).
fn content_blocks(shape: Shape, body: &Value) -> Vec<Block<'_>> {
    fn nested<'v>(shape: Shape, blocks: impl Iterator<Item = &'v Value>, out: &mut Vec<Block<'v>>) {
        for value in blocks {
            let block = shape.block(value);
            out.push(block);
            nested(shape, blocks_of(block.fields), out);
        }
    }
    let mut out = Vec::new();
    for msg in body_messages(body) {
        nested(shape, blocks_of(msg), &mut out);
    }
    out
}

/// No key of the stored bookkeeping (origins, `hermes_*`, `codex_*`, the chat carriers and
/// tool-call fields, the Python original's keys, any key the corpus stores that is not a
/// message's `role`, `content` or `name`) appears anywhere in the body, user data aside
/// ([`user_data`]).
fn no_bookkeeping(history: &[Message], body: &Value) -> Result<(), String> {
    let mut stored: BTreeSet<String> = BTreeSet::new();
    for msg in history {
        let Ok(Value::Object(obj)) = serde_json::to_value(msg) else {
            continue;
        };
        for (key, value) in &obj {
            stored.insert(key.clone());
            if key == "tool_calls" {
                for call in value.as_array().into_iter().flatten() {
                    stored.extend(
                        call.as_object()
                            .into_iter()
                            .flatten()
                            .map(|(k, _)| k.clone()),
                    );
                }
            }
        }
    }
    for keep in ["role", "content", "name", "id", "type"] {
        stored.remove(keep);
    }
    let forbidden = |key: &str| {
        BOOKKEEPING.contains(&key)
            || BOOKKEEPING_PREFIXES.iter().any(|p| key.starts_with(p))
            || stored.contains(key)
    };
    walk_keys(body, "$", None, &mut |path, obj, key| {
        if forbidden(key) && !schema_field(path, obj, key) {
            Err(format!("stored key `{key}` reached the body at {path}"))
        } else {
            Ok(())
        }
    })
}

/// Whether `key` of `obj` (at `path`) is a field of the wire's own schema that merely shares
/// its name with a stored key: the OpenAI Responses items (`function_call` with `call_id`,
/// `name`, `arguments`; `function_call_output` with `call_id`, `output`; `reasoning` with its
/// `summary` and encrypted content) and the Responses request's top-level `reasoning`.
fn schema_field(path: &str, obj: &serde_json::Map<String, Value>, key: &str) -> bool {
    let item = obj.get("type").and_then(Value::as_str);
    match (item, key) {
        (Some("function_call"), "call_id" | "name" | "arguments") => true,
        (Some("function_call_output"), "call_id" | "output") => true,
        (Some("reasoning"), "summary" | "encrypted_content" | "content") => true,
        (_, "reasoning") => path == "$" && obj.contains_key("input"),
        _ => false,
    }
}

/// Whether the value under `key` of `obj` (itself under `parent`) is user data whose keys are
/// the user's: a tool call's input (a Messages `tool_use` block's `input`, a Converse
/// `toolUse.input`), a tool's schema (`input_schema`, `inputSchema`), a JSON document of a
/// Converse union (`{"json": …}`: a tool result or an input schema), request metadata and
/// prompt variables.
fn user_data(parent: Option<&str>, obj: &serde_json::Map<String, Value>, key: &str) -> bool {
    match key {
        "input" => {
            obj.get("type").and_then(Value::as_str) == Some("tool_use") || parent == Some("toolUse")
        }
        "json" => obj.len() == 1,
        "input_schema" | "inputSchema" | "requestMetadata" | "promptVariables" => true,
        _ => false,
    }
}

/// What [`walk_keys`] calls for each key: its path, its object and the key.
type KeyVisitor<'a> =
    dyn FnMut(&str, &serde_json::Map<String, Value>, &str) -> Result<(), String> + 'a;

/// Calls `visit` with every object key of `value`, its object and its path, not descending into user data
/// ([`user_data`]); `parent` is the key `value` is under (an array passes its own on).
fn walk_keys(
    value: &Value,
    path: &str,
    parent: Option<&str>,
    visit: &mut KeyVisitor<'_>,
) -> Result<(), String> {
    match value {
        Value::Object(obj) => {
            for (key, inner) in obj {
                visit(path, obj, key)?;
                if user_data(parent, obj, key) {
                    continue;
                }
                walk_keys(inner, &format!("{path}.{key}"), Some(key), visit)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                walk_keys(inner, &format!("{path}[{i}]"), parent, visit)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn keys_within(obj: &Value, allowed: &[&str], what: &str) -> Result<(), String> {
    let Some(map) = obj.as_object() else {
        return Err(format!("{what} is not an object: {obj}"));
    };
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{what} carries `{k}`: {obj}")),
        None => Ok(()),
    }
}

/// The body keeps its shape's own schema: [`messages_schema`] or [`converse_schema`]. A body
/// of neither shape is not checked.
fn body_schema(shape: Option<Shape>, body: &Value) -> Result<(), String> {
    match shape {
        Some(Shape::Messages) => messages_schema(body),
        Some(Shape::Converse) => converse_schema(body),
        None => Ok(()),
    }
}

/// One content block of the Messages schema, of one of the types `tags`.
fn block_schema(block: &Value, tags: &[&str], what: &str) -> Result<(), String> {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let allowed: &[&str] = match kind {
        _ if !tags.contains(&kind) => {
            return Err(format!("{what} has block type `{kind}`: {block}"));
        }
        "text" => MESSAGES_TEXT,
        "image" => MESSAGES_IMAGE,
        "document" => MESSAGES_DOCUMENT,
        "thinking" => MESSAGES_THINKING,
        "redacted_thinking" => MESSAGES_REDACTED_THINKING,
        "tool_use" => MESSAGES_TOOL_USE,
        "tool_result" => MESSAGES_TOOL_RESULT,
        other => return Err(format!("{what} has block type `{other}`: {block}")),
    };
    keys_within(block, allowed, what)?;
    if let Some(cache) = block.get("cache_control") {
        keys_within(
            cache,
            MESSAGES_CACHE_CONTROL,
            &format!("{what}.cache_control"),
        )?;
    }
    match kind {
        "text" if !block.get("text").is_some_and(Value::is_string) => {
            Err(format!("{what}: `text` is not a string: {block}"))
        }
        "tool_use" if !block.get("input").is_some_and(Value::is_object) => {
            Err(format!("{what}: `input` is not an object: {block}"))
        }
        "tool_result" => match block.get("content") {
            None | Some(Value::String(_)) => Ok(()),
            Some(Value::Array(inner)) => inner.iter().enumerate().try_for_each(|(i, b)| {
                block_schema(
                    b,
                    MESSAGES_TOOL_RESULT_CONTENT,
                    &format!("{what}.content[{i}]"),
                )
            }),
            Some(other) => Err(format!("{what}: tool result content {other}")),
        },
        _ => Ok(()),
    }
}

/// A Messages body uses only the Messages API's own keys (top level, messages, blocks,
/// system, tools, thinking): nothing else reaches the wire. Bedrock InvokeModel bodies carry
/// the beta list as `anthropic_beta` (Bedrock's Anthropic Messages request,
/// docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
fn messages_schema(body: &Value) -> Result<(), String> {
    keys_within(body, MESSAGES_TOP_LEVEL, "the body")?;
    for (i, msg) in body_messages(body).enumerate() {
        let what = format!("messages[{i}]");
        keys_within(msg, MESSAGES_MESSAGE, &what)?;
        if !matches!(
            msg.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        ) {
            return Err(format!("{what} has role {}", msg["role"]));
        }
        match msg.get("content") {
            Some(Value::String(_)) => {}
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                for (j, block) in blocks.iter().enumerate() {
                    block_schema(block, MESSAGES_BLOCK_TAGS, &format!("{what}.content[{j}]"))?;
                }
            }
            other => return Err(format!("{what} has content {other:?}")),
        }
    }
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (j, block) in blocks.iter().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(format!("system[{j}] is not a text block: {block}"));
                }
                block_schema(block, &["text"], &format!("system[{j}]"))?;
            }
        }
        Some(other) => return Err(format!("system is {other}")),
    }
    for (j, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        keys_within(tool, MESSAGES_TOOL, &format!("tools[{j}]"))?;
    }
    if let Some(thinking) = body.get("thinking") {
        keys_within(thinking, &["type", "budget_tokens", "display"], "thinking")?;
    }
    if let Some(config) = body.get("output_config") {
        keys_within(config, MESSAGES_OUTPUT_CONFIG, "output_config")?;
    }
    Ok(())
}

/// A Converse body uses only the Converse API's members: the request's own (top level,
/// `inferenceConfig`, `toolConfig`), messages of `role` and `content` whose roles alternate
/// strictly, user first, and every content, system and tool entry a union of exactly one of its
/// members ([`union_schema`]).
fn converse_schema(body: &Value) -> Result<(), String> {
    keys_within(body, CONVERSE_REQUEST, "the body")?;
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err(format!("the body has no `messages` array: {body}"));
    };
    let mut previous: Option<&str> = None;
    for (i, msg) in messages.iter().enumerate() {
        let what = format!("messages[{i}]");
        keys_within(msg, CONVERSE_MESSAGE, &what)?;
        let role = msg.get("role").and_then(Value::as_str);
        let expected = match previous {
            None | Some("assistant") => "user",
            Some(_) => "assistant",
        };
        if role != Some(expected) {
            return Err(format!(
                "{what} has role {}, where the turns must alternate user, assistant, … starting with user (expected `{expected}`)",
                msg.get("role").unwrap_or(&Value::Null)
            ));
        }
        previous = role;
        match msg.get("content") {
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                for (j, block) in blocks.iter().enumerate() {
                    union_schema(block, CONVERSE_BLOCK, &format!("{what}.content[{j}]"))?;
                }
            }
            other => return Err(format!("{what} has content {other:?}")),
        }
    }
    match body.get("system") {
        None => {}
        Some(Value::Array(blocks)) => {
            for (j, block) in blocks.iter().enumerate() {
                union_schema(block, CONVERSE_SYSTEM_BLOCK, &format!("system[{j}]"))?;
            }
        }
        Some(other) => return Err(format!("system is {other}")),
    }
    if let Some(config) = body.get("inferenceConfig") {
        keys_within(config, CONVERSE_INFERENCE_CONFIG, "inferenceConfig")?;
    }
    if let Some(config) = body.get("toolConfig") {
        keys_within(config, CONVERSE_TOOL_CONFIG, "toolConfig")?;
        for (j, tool) in config
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            union_schema(tool, CONVERSE_TOOL, &format!("toolConfig.tools[{j}]"))?;
        }
    }
    if let Some(fields) = body.get("additionalModelRequestFields")
        && !fields.is_object()
    {
        return Err(format!("additionalModelRequestFields is {fields}"));
    }
    Ok(())
}

/// One value of a Converse union: an object with exactly one member, one of `members`, and
/// that member's own fields as the API defines them (a reasoning block exactly one of
/// `reasoningText` and `redactedContent`, its signed text and signature strings; a tool call's
/// id, name and object input; a tool result's id and content blocks; a cache point's type).
fn union_schema(value: &Value, members: &[&str], what: &str) -> Result<(), String> {
    let Some(obj) = value.as_object() else {
        return Err(format!("{what} is not an object: {value}"));
    };
    let mut keys = obj.iter();
    let (member, inner) = match (keys.next(), keys.next()) {
        (Some(one), None) => one,
        _ => {
            let names: Vec<&str> = obj.keys().map(String::as_str).collect();
            return Err(format!(
                "{what} is a union and must set exactly one member, but sets {} ({}): {value}",
                names.len(),
                names.join(", ")
            ));
        }
    };
    if !members.contains(&member.as_str()) {
        return Err(format!(
            "{what} sets `{member}`, not a member of its union ({}): {value}",
            members.join(", ")
        ));
    }
    let what = format!("{what}.{member}");
    let string = |v: Option<&Value>, field: &str| match v {
        Some(Value::String(_)) => Ok(()),
        other => Err(format!(
            "{what}: `{field}` is {other:?}, not a string: {value}"
        )),
    };
    match member.as_str() {
        "text" if inner.as_str().is_none_or(str::is_empty) => {
            Err(format!("{what} is not a non-empty string: {value}"))
        }
        "toolUse" => {
            keys_within(inner, CONVERSE_TOOL_USE, &what)?;
            string(inner.get("toolUseId"), "toolUseId")?;
            string(inner.get("name"), "name")?;
            if inner.get("input").is_some_and(Value::is_object) {
                Ok(())
            } else {
                Err(format!("{what}: `input` is not an object: {value}"))
            }
        }
        "toolResult" => {
            keys_within(inner, CONVERSE_TOOL_RESULT, &what)?;
            string(inner.get("toolUseId"), "toolUseId")?;
            match inner.get("content") {
                Some(Value::Array(blocks)) => blocks.iter().enumerate().try_for_each(|(j, b)| {
                    union_schema(
                        b,
                        CONVERSE_TOOL_RESULT_BLOCK,
                        &format!("{what}.content[{j}]"),
                    )
                }),
                other => Err(format!("{what} has content {other:?}")),
            }
        }
        "reasoningContent" => union_schema(inner, CONVERSE_REASONING, &what),
        "reasoningText" => {
            keys_within(inner, CONVERSE_REASONING_TEXT, &what)?;
            string(inner.get("text"), "text")?;
            match inner.get("signature") {
                None => Ok(()),
                some => string(some, "signature"),
            }
        }
        "redactedContent" if !inner.is_string() => {
            Err(format!("{what} is not a base64 string: {value}"))
        }
        "cachePoint" => {
            keys_within(inner, CONVERSE_CACHE_POINT, &what)?;
            string(inner.get("type"), "type")
        }
        "systemTool" => {
            keys_within(inner, CONVERSE_SYSTEM_TOOL, &what)?;
            string(inner.get("name"), "name")
        }
        "toolSpec" => {
            keys_within(inner, CONVERSE_TOOL_SPEC, &what)?;
            string(inner.get("name"), "name")?;
            match inner.get("inputSchema") {
                Some(schema) => union_schema(schema, &["json"], &format!("{what}.inputSchema")),
                None => Err(format!("{what} has no `inputSchema`: {value}")),
            }
        }
        _ => Ok(()),
    }
}

/// The ids held under `key` by the blocks of `kind` of a message.
fn ids_of<'v>(shape: Shape, msg: &'v Value, kind: &str, key: &str) -> Vec<&'v str> {
    blocks_of(msg)
        .map(|b| shape.block(b))
        .filter(|b| b.kind == kind)
        .map(|b| b.fields.get(key).and_then(Value::as_str).unwrap_or(""))
        .collect()
}

/// Every tool call of an assistant message (Messages `tool_use`, Converse `toolUse`) is
/// answered by a tool result (`tool_result`, `toolResult`) with its id in the very next
/// message, a user message; every tool result answers a tool call of the assistant message
/// right before it, once.
fn tool_calls_paired(shape: Option<Shape>, body: &Value) -> Result<(), String> {
    let Some(shape) = shape else {
        return Ok(());
    };
    let (call, call_id) = shape.call();
    let (result, result_id) = shape.result();
    let messages: Vec<&Value> = body_messages(body).collect();
    let role_of = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (i, msg) in messages.iter().enumerate() {
        let role = role_of(msg);
        let results = ids_of(shape, msg, result, result_id);
        let calls_before = match i.checked_sub(1).and_then(|p| messages.get(p)) {
            Some(prev) if role_of(prev) == "assistant" => ids_of(shape, prev, call, call_id),
            _ => Vec::new(),
        };
        let mut seen = BTreeSet::new();
        for id in &results {
            if role != "user" || !calls_before.contains(id) || !seen.insert(*id) {
                return Err(format!(
                    "messages[{i}]: {result} `{id}` answers no {call} of the message before it (or answers it twice)"
                ));
            }
        }
        if role == "assistant" {
            let next = messages.get(i + 1);
            let answered = next.map(|n| ids_of(shape, n, result, result_id));
            for id in ids_of(shape, msg, call, call_id) {
                let ok = next.is_some_and(|n| role_of(n) == "user")
                    && answered.as_ref().is_some_and(|a| a.contains(&id));
                if !ok {
                    return Err(format!(
                        "messages[{i}]: {call} `{id}` has no {result} in the next user message"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// No cache breakpoint on reasoning: no `cache_control` on a Messages `thinking` or
/// `redacted_thinking` block, no Converse `cachePoint` inside a turn's reasoning (right after a
/// `reasoningContent` block).
fn no_cached_thinking(shape: Option<Shape>, body: &Value) -> Result<(), String> {
    let Some(shape) = shape else {
        return Ok(());
    };
    for (i, msg) in body_messages(body).enumerate() {
        let mut previous: Option<Block<'_>> = None;
        for (j, block) in blocks_of(msg).map(|b| shape.block(b)).enumerate() {
            if shape.breakpoint_on_reasoning(previous.as_ref(), &block) {
                let after = previous.map_or(String::new(), |p| format!(" (after {})", p.whole));
                return Err(format!(
                    "messages[{i}].content[{j}]: a cache breakpoint on a reasoning block: {}{after}",
                    block.whole
                ));
            }
            previous = Some(block);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::transport::{OnDelta, SendResult, TransportError};
    use hermes_core::{Origin, Outgoing};
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Each schema list both checkers keep names the same members (order aside: the
    /// simulator's follow the API's error texts); a failure names every list and member that
    /// differs.
    #[test]
    fn the_converse_and_messages_lists_are_the_simulators() {
        use hermes_sim::schema::{converse, messages};
        /// `(name, ours, the simulator's)` of each `OURS = sims;`, named by our list.
        macro_rules! pairs {
            ($($ours:ident = $sims:path;)*) => {
                [$((stringify!($ours), $ours, $sims)),*]
            };
        }
        let pairs: &[(&str, &[&str], &[&str])] = &pairs! {
            CONVERSE_REQUEST = converse::REQUEST_MEMBERS;
            CONVERSE_BLOCK = converse::CONTENT_MEMBERS;
            CONVERSE_SYSTEM_BLOCK = converse::SYSTEM_MEMBERS;
            CONVERSE_TOOL_RESULT_BLOCK = converse::TOOL_RESULT_MEMBERS;
            CONVERSE_REASONING = converse::REASONING_MEMBERS;
            CONVERSE_TOOL = converse::TOOL_MEMBERS;
            CONVERSE_MESSAGE = converse::MESSAGE_KEYS;
            CONVERSE_INFERENCE_CONFIG = converse::INFERENCE_CONFIG_KEYS;
            CONVERSE_TOOL_CONFIG = converse::TOOL_CONFIG_KEYS;
            CONVERSE_TOOL_USE = converse::TOOL_USE_KEYS;
            CONVERSE_TOOL_RESULT = converse::TOOL_RESULT_KEYS;
            CONVERSE_REASONING_TEXT = converse::REASONING_TEXT_KEYS;
            CONVERSE_TOOL_SPEC = converse::TOOL_SPEC_KEYS;
            CONVERSE_SYSTEM_TOOL = converse::SYSTEM_TOOL_KEYS;
            CONVERSE_CACHE_POINT = converse::CACHE_POINT_KEYS;
            MESSAGES_BLOCK_TAGS = messages::BLOCK_TAGS;
            MESSAGES_TOOL_RESULT_CONTENT = messages::TOOL_RESULT_CONTENT_TAGS;
            MESSAGES_MESSAGE = messages::MESSAGE_KEYS;
            MESSAGES_TEXT = messages::TEXT_KEYS;
            MESSAGES_IMAGE = messages::IMAGE_KEYS;
            MESSAGES_DOCUMENT = messages::DOCUMENT_KEYS;
            MESSAGES_THINKING = messages::THINKING_KEYS;
            MESSAGES_REDACTED_THINKING = messages::REDACTED_THINKING_KEYS;
            MESSAGES_TOOL_USE = messages::TOOL_USE_KEYS;
            MESSAGES_TOOL_RESULT = messages::TOOL_RESULT_KEYS;
            MESSAGES_TOOL = messages::CUSTOM_TOOL_KEYS;
            MESSAGES_CACHE_CONTROL = messages::CACHE_CONTROL_KEYS;
            MESSAGES_OUTPUT_CONFIG = messages::OUTPUT_CONFIG_KEYS;
        };
        // The simulator splits the Messages top level into what every door takes and what
        // only some doors take; conformance checks bodies of every door against one list.
        let sim_top: Vec<&str> = messages::TOP_LEVEL
            .iter()
            .chain(messages::DOOR_TOP_LEVEL)
            .copied()
            .collect();
        let top = ("Messages top level", MESSAGES_TOP_LEVEL, sim_top.as_slice());
        let mut wrong = Vec::new();
        for (name, ours, sims) in pairs.iter().copied().chain([top]) {
            let ours: BTreeSet<&str> = ours.iter().copied().collect();
            let sims: BTreeSet<&str> = sims.iter().copied().collect();
            let only_ours: Vec<&str> = ours.difference(&sims).copied().collect();
            let only_sims: Vec<&str> = sims.difference(&ours).copied().collect();
            if !only_ours.is_empty() || !only_sims.is_empty() {
                wrong.push(format!(
                    "{name}: only hermes-conformance has {only_ours:?}, only hermes-sim has {only_sims:?}"
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "the schema lists disagree:\n{}",
            wrong.join("\n")
        );
    }

    /// The Bedrock ids of the corpus's two models (the signed policy applies to them).
    const BEDROCK_MODELS: [&str; 2] = [
        "us.anthropic.claude-opus-4-6-v1:0",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ];
    const BEDROCK_BASE: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

    fn names(checks: &[Check], failed: bool) -> BTreeSet<String> {
        checks
            .iter()
            .filter(|c| c.failure.is_some() == failed)
            .map(|c| {
                let name = c.name.split(" [").next().unwrap_or_default();
                name.to_owned()
            })
            .collect()
    }

    /// The checks of one pass, in order (the same nine for every wire).
    const CHECKS: [&str; 9] = [
        "encodes the corpus",
        "input unchanged",
        "same bytes twice",
        "opaque items byte for byte",
        "opaque items only to their minter",
        "no stored bookkeeping key",
        "body schema",
        "every tool call answered in the next user turn",
        "no cache breakpoint on thinking",
    ];

    #[test]
    fn the_anthropic_wire_keeps_every_invariant() {
        let table = hermes_providers::builtin_table();
        for base in [
            "https://api.anthropic.com",
            "https://api.deepseek.com/anthropic",
            "https://relay.example.com/anthropic",
        ] {
            let wire = hermes_wire_anthropic::AnthropicWire {
                client: hermes_providers::ChatTransport::new().unwrap(),
                target: hermes_wire_anthropic::Target {
                    flavor: hermes_wire_anthropic::Flavor::Direct,
                    base_url: base.to_owned(),
                    max_tokens: None,
                    account: None,
                },
                auth: None,
            };
            let checks = check_wire_invariants(&table, &wire, "anthropic", Some(base));
            assert_eq!(checks.len(), 3 * 9, "{checks:#?}");
            let failed: Vec<_> = checks.iter().filter(|c| c.failure.is_some()).collect();
            assert!(failed.is_empty(), "{base}: {failed:#?}");
            assert!(
                checks
                    .iter()
                    .all(|c| c.name.starts_with("anthropic wire: ")),
                "{checks:#?}"
            );
        }
    }

    fn bedrock_wire() -> hermes_wire_bedrock::BedrockWire {
        hermes_wire_bedrock::BedrockWire {
            client: hermes_providers::ChatTransport::new().unwrap(),
            target: hermes_wire_bedrock::Target {
                base_url: BEDROCK_BASE.to_owned(),
                max_tokens: None,
                account: None,
            },
            auth: None,
        }
    }

    #[test]
    fn the_bedrock_wire_keeps_every_invariant_for_its_claude_ids() {
        let table = hermes_providers::builtin_table();
        let checks = check_wire_invariants_for(
            &table,
            &bedrock_wire(),
            "bedrock",
            Some(BEDROCK_BASE),
            BEDROCK_MODELS,
        );
        assert_eq!(checks.len(), 3 * 9, "{checks:#?}");
        let failed: Vec<_> = checks.iter().filter(|c| c.failure.is_some()).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        let host = "bedrock-runtime.us-east-1.amazonaws.com";
        for (pass, label) in [
            format!("{} @ {host}", BEDROCK_MODELS[0]),
            format!("{} @ {host}", BEDROCK_MODELS[1]),
            format!("{} @ {host}, minted on another host", BEDROCK_MODELS[0]),
        ]
        .iter()
        .enumerate()
        {
            for (i, name) in CHECKS.iter().enumerate() {
                assert_eq!(
                    checks[pass * 9 + i].name,
                    format!("bedrock wire: {name} [{label}]")
                );
            }
        }
    }

    /// The first corpus history (the signed tool loop) as the first pass sends it through the
    /// Bedrock wire with `--effort high`, and that history.
    fn bedrock_loop_body() -> (Vec<Message>, Sent) {
        let table = hermes_providers::builtin_table();
        let target = RouteTarget::new("bedrock", Some(BEDROCK_BASE), BEDROCK_MODELS[0]);
        let decision = table.resolve(&target, ResolveOptions::default());
        let corpus = corpus().unwrap();
        let (name, history) = &corpus[0];
        let history = minted(history, &target.host_key(), BEDROCK_MODELS);
        let (copy, _) = paired(&history);
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(&copy, &decision, &verdicts)
            .thinking(ThinkingRequest::Effort(Effort::High));
        let text = String::from_utf8(bedrock_wire().encode(&parts).unwrap().body).unwrap();
        let body = serde_json::from_str(&text).unwrap();
        let sent = Sent::new("bedrock", name, "effort high", text, body);
        (history, sent)
    }

    #[test]
    fn the_converse_byte_for_byte_check_is_not_vacuous_on_the_bedrock_wire() {
        let (history, sent) = bedrock_loop_body();
        assert_eq!(sent.shape, Some(Shape::Converse));
        assert!(
            sent.text.contains(r#"{"reasoningContent": {"reasoningText": {"text": "Two calls \u00e9/.", "signature": "SIG-LOOP-A/1="}}}, {"reasoningContent": {"redactedContent": "RED-LOOP-A"}}"#),
            "the loop's signed blocks reach the body: {}",
            sent.text
        );
        let own = |_: &Message| true;
        assert_eq!(byte_for_byte(&history, &sent, &own), Ok(()));
        assert_eq!(only_to_minter(&history, &sent, &own), Ok(()));
        // Messages' raw check could not hold here: the stored item's text is not in the body.
        assert!(!sent.text.contains(r#""signature": "SIG-LOOP-A\/1=""#));

        let resend = |body: Value| {
            let text = serde_json::to_string(&body).unwrap();
            Sent::new("bedrock", &sent.history, sent.thinking, text, body)
        };
        let reasoning = |body: &mut Value| -> Vec<Value> {
            let content = body["messages"][1]["content"].as_array_mut().unwrap();
            content.drain(..2).collect()
        };
        // The signed text altered beside its signature.
        let mut altered = sent.body.clone();
        altered["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["text"] =
            json!("Two calls é/. ");
        let err = byte_for_byte(&history, &resend(altered), &own).unwrap_err();
        assert!(err.contains("`signature` \"SIG-LOOP-A/1=\""), "{err}");
        // The redacted blob sent as a signature.
        let mut swapped = sent.body.clone();
        swapped["messages"][1]["content"][1] =
            json!({"reasoningContent": {"reasoningText": {"text": "", "signature": "RED-LOOP-A"}}});
        let err = byte_for_byte(&history, &resend(swapped), &own).unwrap_err();
        assert!(err.contains("`redactedContent`"), "{err}");
        // The turn's blocks moved into a message that does not carry the turn.
        let mut moved = sent.body.clone();
        let blocks = reasoning(&mut moved);
        let messages = moved["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": blocks}));
        let err = byte_for_byte(&history, &resend(moved), &own).unwrap_err();
        assert!(err.contains("Converse message carrying its turn"), "{err}");
    }

    /// A wire that breaks every rule: a new body each time, every stored item re-rendered whoever
    /// minted it (Messages: re-serialised and cached; Converse: its text altered, a cache point
    /// after it, the redacted blob as text), the origin sent, tool results dropped.
    struct Leaky {
        n: AtomicUsize,
        converse: bool,
    }

    impl Leaky {
        fn new(converse: bool) -> Self {
            Leaky {
                n: AtomicUsize::new(0),
                converse,
            }
        }

        fn blocks(&self, m: &Message) -> Vec<Value> {
            let mut blocks = Vec::new();
            for item in m.reasoning_details.iter().flatten() {
                let mut v = item.raw().to_value();
                if !self.converse {
                    v["cache_control"] = json!({"type": "ephemeral"});
                    blocks.push(v);
                } else if v["type"] == "redacted_thinking" {
                    blocks.push(json!({"text": v["data"]}));
                } else if let Some(sig) = v.get("signature") {
                    let text = format!("{} ", v["thinking"].as_str().unwrap_or(""));
                    blocks.push(json!({"reasoningContent": {"reasoningText":
                        {"text": text, "signature": sig}}}));
                    blocks.push(json!({"cachePoint": {"type": "default"}}));
                }
            }
            for call in m.tool_calls.iter().flatten() {
                blocks.push(if self.converse {
                    json!({"toolUse": {"toolUseId": call.id, "name": "now", "input": {}}})
                } else {
                    json!({"type": "tool_use", "id": call.id, "name": "now", "input": {}})
                });
            }
            blocks.push(if self.converse {
                json!({"text": "x"})
            } else {
                json!({"type": "text", "text": "x"})
            });
            blocks
        }
    }

    #[async_trait::async_trait]
    impl Wire for Leaky {
        fn id(&self) -> &'static str {
            if self.converse {
                "leaky-converse"
            } else {
                "leaky"
            }
        }

        fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
            let n = self.n.fetch_add(1, Ordering::Relaxed);
            let messages: Vec<Value> = parts
                .history
                .iter()
                .filter(|m| m.role != Role::Tool)
                .map(|m| {
                    json!({"role": if m.role == Role::Assistant { "assistant" } else { "user" },
                           "content": self.blocks(m),
                           "origin": m.origin.as_ref().map(|o| o.model.clone())})
                })
                .collect();
            let body = if self.converse {
                json!({"messages": messages, "inferenceConfig": {"maxTokens": n}})
            } else {
                json!({"model": parts.decision.target.model, "max_tokens": n,
                       "messages": messages})
            };
            Ok(Outgoing::new(
                serde_json::to_vec(&body).unwrap(),
                false,
                Vec::new(),
                0,
            ))
        }

        async fn send(&self, _: &Outgoing, _: Origin, _: OnDelta<'_>) -> SendResult {
            Err(TransportError::Request("not sent in this test".into()))
        }
    }

    #[test]
    fn a_wire_that_breaks_the_rules_is_caught_by_each_invariant_in_either_shape() {
        let table = hermes_providers::builtin_table();
        for converse in [false, true] {
            let wire = Leaky::new(converse);
            let checks = check_wire_invariants(
                &table,
                &wire,
                "anthropic",
                Some("https://api.anthropic.com"),
            );
            let id = wire.id();
            let failed = names(&checks, true);
            for name in &CHECKS[2..] {
                let name = format!("{id} wire: {name}");
                assert!(failed.contains(&name), "{name} not caught: {checks:#?}");
            }
            let passed = names(&checks, false);
            for name in &CHECKS[..2] {
                let name = format!("{id} wire: {name}");
                assert!(passed.contains(&name), "{name}: {checks:#?}");
            }
        }
    }

    #[test]
    fn the_corpus_parses_and_keeps_its_opaque_bytes() {
        let corpus = corpus().unwrap();
        assert_eq!(corpus.len(), 5);
        let (_, loop_history) = &corpus[0];
        let text = serde_json::to_string(loop_history).unwrap();
        assert!(text.contains(r#""signature": "SIG-LOOP-A\/1=""#), "{text}");
        assert!(text.contains("123456789012345678901234567890"));
    }

    fn sent(wire_id: &str, body: &Value) -> Sent {
        Sent::new(
            wire_id,
            "h",
            "w",
            serde_json::to_string(body).unwrap(),
            body.clone(),
        )
    }

    #[test]
    fn opaque_strings_are_found_at_any_depth_with_their_literal() {
        let mut out = Vec::new();
        opaque_strings(
            r#"{"a":[{"signature":"S\/1"},{"data":"  "}],"b":{"thought_signature":"T"},"data":7}"#,
            &mut out,
        );
        let mut literals: Vec<&str> = out.iter().map(|o| o.literal.as_str()).collect();
        literals.sort_unstable();
        assert_eq!(literals, [r#""S\/1""#, r#""T""#]);
        let s = out.iter().find(|o| o.text == "S/1").unwrap();
        assert_eq!(s.key, "signature");
        assert!(
            s.in_body(&sent("x", &json!({"signature": "S/1"}))),
            "re-escaped still found"
        );
        let e = Opaque {
            key: "signature".into(),
            literal: r#""\u00e9""#.into(),
            text: "é".into(),
        };
        let python = Sent::new(
            "x",
            "h",
            "w",
            r#"{"s": "\u00e9!"}"#.into(),
            json!({"s": "é"}),
        );
        assert!(e.in_body(&python), "found as a decoded value");
    }

    #[test]
    fn the_body_shape_comes_from_the_wire_id_or_the_body() {
        let messages = json!({"max_tokens": 1, "messages": []});
        let converse = json!({"messages": [{"role": "user", "content": [{"text": "q"}]}]});
        let configured = json!({"messages": [], "inferenceConfig": {}});
        let other = json!({"model": "t-1", "turns": []});
        assert_eq!(Shape::detect(&messages), Some(Shape::Messages));
        assert_eq!(Shape::detect(&converse), Some(Shape::Converse));
        assert_eq!(Shape::detect(&configured), Some(Shape::Converse));
        assert_eq!(Shape::detect(&other), None);
        assert_eq!(
            Shape::detect(&json!({"messages": [{"role": "user", "content": "q"}]})),
            None
        );
        assert_eq!(Shape::of("bedrock", &other), Some(Shape::Converse));
        assert_eq!(Shape::of("anthropic", &other), Some(Shape::Messages));
        assert_eq!(Shape::of("turns", &converse), Some(Shape::Converse));
    }

    #[test]
    fn messages_checks_catch_what_they_name() {
        let shape = Some(Shape::Messages);
        let ok = json!({"model": "m", "max_tokens": 1, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "now", "input": {"origin": 1}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "1",
                 "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(body_schema(shape, &ok), Ok(()));
        assert_eq!(tool_calls_paired(shape, &ok), Ok(()));
        assert_eq!(no_cached_thinking(shape, &ok), Ok(()));
        assert_eq!(no_bookkeeping(&[], &ok), Ok(()), "tool input is the tool's");

        let mut extra = ok.clone();
        extra["messages"][1]["origin"] = json!({});
        assert!(body_schema(shape, &extra).is_err());
        assert!(no_bookkeeping(&[], &extra).is_err());
        let mut nested = ok.clone();
        nested["messages"][1]["content"][0]["hermes_block_order"] = json!([]);
        assert!(body_schema(shape, &nested).is_err());
        let err = no_bookkeeping(&[], &nested).unwrap_err();
        assert!(err.contains("$.messages[1].content[0]"), "{err}");

        let mut unanswered = ok.clone();
        unanswered["messages"][2]["content"][0]["tool_use_id"] = json!("b");
        assert!(tool_calls_paired(shape, &unanswered).is_err());
        let mut late = ok.clone();
        late["messages"]
            .as_array_mut()
            .unwrap()
            .insert(2, json!({"role": "user", "content": "wait"}));
        assert!(tool_calls_paired(shape, &late).is_err());

        let mut cached = ok;
        cached["messages"][1]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        assert!(no_cached_thinking(shape, &cached).is_err());
    }

    /// A Converse body keeping every rule: a signed and a redacted block of its own turn, a
    /// tool call answered, cache points where they may be, user data holding stored key names.
    fn converse_ok() -> Value {
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "q"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "t é", "signature": "SIG-OWN"}}},
                    {"reasoningContent": {"redactedContent": "RED-OWN"}},
                    {"text": "Checking."},
                    {"toolUse": {"toolUseId": "a", "name": "now", "input": {"origin": 1}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "a", "content": [{"text": "1"}, {"json": {"timestamp": 2}}]}},
                    {"cachePoint": {"type": "default"}}]}],
            "system": [{"text": "s"}, {"cachePoint": {"type": "default"}}],
            "inferenceConfig": {"maxTokens": 10, "temperature": 1.0},
            "toolConfig": {"tools": [{"toolSpec": {"name": "now", "description": "The time.",
                "inputSchema": {"json": {"type": "object", "properties": {"origin": {}}}}}}]},
            "additionalModelRequestFields": {"thinking": {"type": "adaptive"}}
        })
    }

    /// The stored turn `converse_ok` carries, minted by this target.
    fn converse_history() -> Vec<Message> {
        serde_json::from_value(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "Checking.",
             "reasoning_details": [
                {"type": "thinking", "thinking": "t é", "signature": "SIG-OWN"},
                {"type": "redacted_thinking", "data": "RED-OWN"}],
             "tool_calls": [{"id": "a", "type": "function",
                             "function": {"name": "now", "arguments": "{\"origin\":1}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]))
        .unwrap()
    }

    #[test]
    fn converse_checks_pass_a_body_that_keeps_the_rules() {
        let ok = converse_ok();
        let shape = Shape::detect(&ok);
        assert_eq!(shape, Some(Shape::Converse));
        assert_eq!(body_schema(shape, &ok), Ok(()));
        assert_eq!(tool_calls_paired(shape, &ok), Ok(()));
        assert_eq!(no_cached_thinking(shape, &ok), Ok(()));
        assert_eq!(
            no_bookkeeping(&converse_history(), &ok),
            Ok(()),
            "tool inputs, results and schemas are the user's"
        );
        let own = |_: &Message| true;
        let history = converse_history();
        assert_eq!(byte_for_byte(&history, &sent("x", &ok), &own), Ok(()));
        assert_eq!(only_to_minter(&history, &sent("x", &ok), &own), Ok(()));
    }

    #[test]
    fn converse_schema_catches_a_block_with_two_union_members() {
        let shape = Some(Shape::Converse);
        let mut two = converse_ok();
        two["messages"][1]["content"][3]["text"] = json!("and text");
        let err = body_schema(shape, &two).unwrap_err();
        assert!(err.contains("exactly one member, but sets 2"), "{err}");
        let mut both = converse_ok();
        both["messages"][1]["content"][0]["reasoningContent"]["redactedContent"] = json!("R");
        let err = body_schema(shape, &both).unwrap_err();
        assert!(
            err.contains("messages[1].content[0].reasoningContent"),
            "{err}"
        );
        let mut tagged = converse_ok();
        tagged["messages"][0]["content"][0]["type"] = json!("text");
        assert!(body_schema(shape, &tagged).is_err());
        let mut unknown = converse_ok();
        unknown["max_tokens"] = json!(10);
        let err = body_schema(shape, &unknown).unwrap_err();
        assert!(err.contains("the body carries `max_tokens`"), "{err}");
        let mut stored = converse_ok();
        stored["messages"][1]["origin"] = json!({});
        assert!(body_schema(shape, &stored).is_err());
        assert!(no_bookkeeping(&[], &stored).is_err());
        let mut nested = converse_ok();
        nested["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["cachePoint"] =
            json!({"type": "default"});
        assert!(body_schema(shape, &nested).is_err());
        let mut blank = converse_ok();
        blank["messages"][0]["content"][0]["text"] = json!("");
        assert!(body_schema(shape, &blank).is_err());
        let mut system = converse_ok();
        system["system"][0]["toolUse"] = json!({});
        assert!(body_schema(shape, &system).is_err());
    }

    #[test]
    fn converse_schema_catches_turns_that_do_not_alternate() {
        let shape = Some(Shape::Converse);
        let mut twice = converse_ok();
        twice["messages"]
            .as_array_mut()
            .unwrap()
            .insert(1, json!({"role": "user", "content": [{"text": "again"}]}));
        let err = body_schema(shape, &twice).unwrap_err();
        assert!(err.contains("messages[1] has role \"user\""), "{err}");
        let mut assistant_first = converse_ok();
        assistant_first["messages"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        let err = body_schema(shape, &assistant_first).unwrap_err();
        assert!(err.contains("messages[0] has role \"assistant\""), "{err}");
        let mut system_role = converse_ok();
        system_role["messages"][0]["role"] = json!("system");
        assert!(body_schema(shape, &system_role).is_err());
    }

    #[test]
    fn converse_pairing_catches_an_unanswered_tool_use() {
        let shape = Some(Shape::Converse);
        let mut unanswered = converse_ok();
        unanswered["messages"][2]["content"][0]["toolResult"]["toolUseId"] = json!("b");
        let err = tool_calls_paired(shape, &unanswered).unwrap_err();
        assert!(
            err.contains("messages[1]: toolUse `a` has no toolResult"),
            "{err}"
        );
        let mut orphan = converse_ok();
        orphan["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"toolResult": {"toolUseId": "b", "content": []}}));
        let err = tool_calls_paired(shape, &orphan).unwrap_err();
        assert!(err.contains("toolResult `b` answers no toolUse"), "{err}");
        let mut dropped = converse_ok();
        dropped["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        let err = tool_calls_paired(shape, &dropped).unwrap_err();
        assert!(
            err.contains("toolUse `a` has no toolResult in the next user message"),
            "{err}"
        );
        let mut last = converse_ok();
        last["messages"].as_array_mut().unwrap().truncate(2);
        assert!(tool_calls_paired(shape, &last).is_err());
    }

    #[test]
    fn converse_checks_catch_a_foreign_signature_and_a_cached_reasoning_block() {
        let own = |_: &Message| true;
        let history = converse_history();
        let mut foreign = converse_ok();
        foreign["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"] =
            json!("SIG-FOREIGN");
        let err = only_to_minter(&history, &sent("x", &foreign), &own).unwrap_err();
        assert!(err.contains("the signature \"SIG-FOREIGN\""), "{err}");
        let mut redacted = converse_ok();
        redacted["messages"][1]["content"][1]["reasoningContent"]["redactedContent"] =
            json!("RED-FOREIGN");
        let err = only_to_minter(&history, &sent("x", &redacted), &own).unwrap_err();
        assert!(err.contains("redacted data \"RED-FOREIGN\""), "{err}");
        // The same signature minted elsewhere: the turn is not this target's to receive.
        let not_own = |_: &Message| false;
        let err = only_to_minter(&history, &sent("x", &converse_ok()), &not_own).unwrap_err();
        assert!(err.contains("reached the body"), "{err}");

        let mut cached = converse_ok();
        cached["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .insert(1, json!({"cachePoint": {"type": "default"}}));
        let err = no_cached_thinking(Some(Shape::Converse), &cached).unwrap_err();
        assert!(err.contains("messages[1]"), "{err}");
    }
}
