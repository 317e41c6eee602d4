//! The `POST /responses` request body, rendered from the canonical history (docs/spec.md §2, §3c;
//! docs/providers.md "OpenAI Responses API", "Tool-call pairing").
//!
//! Keys are in the order openai-python 3.51.0 writes them (`resources/responses/responses.py`,
//! `Responses.create`: `model`, `stream`, …, `include`, `input`, `instructions`, …,
//! `reasoning`, …, `store`, …, `tools`). The leading system / developer messages become
//! `instructions`; later ones, and user messages, are `{role, content}` input items (string
//! content as stored, parts as `input_text`); tool results are `function_call_output` items.
//! An assistant turn captured by this wire goes back as the output items it stored
//! (`codex_reasoning_items`, `codex_message_items`), each as received — less any private `_…`
//! key another program stored on it, and a reasoning item kept without `summary` gets `[]` —
//! in the stored output order: a reasoning item only with its encrypted content, only to the model and host
//! that minted it, and only immediately followed by its paired item; when a reasoning item is
//! left out, the items after it (up to the next reasoning item sent) go without their `id`, so
//! the API cannot ask for the reasoning it did not get. Any other assistant turn is rebuilt
//! from `content` and `tool_calls` (`message` with `output_text`, `function_call`).

use std::borrow::Cow;
use std::collections::BTreeSet;

use hermes_core::message::BLOCK_ORDER_KEY;
use hermes_core::sampling::Sampling;
use hermes_core::{Message, RawJson, RequestParts, Role, ToolCall};
use hermes_providers::native::members::{is_private_key, without_members};
use serde::de::{self as de, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::capture::{MESSAGE_ITEMS_KEY, REASONING_ITEMS_KEY};
use super::compaction;
use super::media;
use super::model::{ReasoningPlan, reasoning_plan};
use hermes_providers::native::json::{self, Text};
use hermes_providers::native::sampling::{
    Unsupported, check_tool_choice, openai_reasoning, responses_fields,
};
use hermes_providers::native::stored;
use hermes_providers::native::write_json;

/// The default base URL (docs/spec.md §8a): requests go to `{base}/responses`.
pub const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// The field a refusal can name on this wire: the encrypted content of the reasoning items it
/// replays. A verdict on it leaves every reasoning item out for that target.
pub const ENCRYPTED_FIELD: &str = "encrypted_content";

/// What this request leaves out beyond the verdicts (a one-time recovery): never persisted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// History indices (of the wire copy) whose reasoning items are left out.
    pub reasoning_of: BTreeSet<usize>,
    /// Every reasoning item is left out.
    pub all_reasoning: bool,
}

/// An encoded body: [`hermes_providers::native::Encoded`], its refusable field [`ENCRYPTED_FIELD`] when a
/// reasoning item is replayed, `messages` the number of `input` items, its `explain` without
/// the `POST` line ([`super::explain`] adds it).
pub type Encoded = hermes_providers::native::Encoded;

pub use hermes_providers::native::EncodeError;

/// The top-level Responses fields for `sampling` ([`hermes_providers::native::sampling::responses_fields`]), and
/// an `--explain` line naming them; a reasoning model's sampling is checked first
/// ([`hermes_providers::native::sampling::openai_reasoning`]).
fn sampling_fields(
    sampling: &Sampling,
    model: &str,
    plan: &ReasoningPlan,
    explain: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, Unsupported> {
    openai_reasoning(sampling, model, plan.effort, "the OpenAI Responses API")?;
    let out = responses_fields(sampling, model)?;
    if !out.is_empty() {
        let keys: Vec<&str> = out.iter().map(|(k, _)| *k).collect();
        explain.push(format!("sampling: {}", keys.join(", ")));
    }
    Ok(out)
}

/// One `input` item. What it sends of the history (stored items, texts, outputs, arguments
/// stored as a string) is borrowed from it, not copied: the body is written from them directly.
enum Item<'h> {
    /// A stored output item, as received (or without its `id`).
    Raw(Cow<'h, RawValue>),
    /// `{role, content}`: a user, system or developer message.
    Said {
        role: &'static str,
        content: Said<'h>,
    },
    /// A rebuilt assistant message: `output_text` parts.
    AssistantText(Vec<&'h RawValue>),
    /// A rebuilt `function_call`.
    Call {
        call_id: &'h str,
        name: &'h str,
        arguments: Cow<'h, RawValue>,
    },
    /// A `function_call_output`.
    Output {
        call_id: &'h str,
        output: Cow<'h, RawValue>,
    },
    /// A `function_call_output` whose output holds images: a list of `input_text` and
    /// `input_image` parts (module [`super::media`]).
    OutputParts {
        call_id: &'h str,
        parts: Vec<media::InputPart>,
    },
}

/// A said message's content: the stored string literal, or `input_text` parts, or
/// `input_text` and `input_image` parts.
enum Said<'h> {
    Text(&'h RawValue),
    Parts(Vec<&'h RawValue>),
    Mixed(Vec<media::InputPart>),
}

struct TypedText<'a>(&'static str, &'a RawValue);

impl Serialize for TypedText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", self.0)?;
        map.serialize_entry("text", self.1)?;
        map.end()
    }
}

struct Parts<'a>(&'static str, &'a [&'a RawValue]);

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.1.iter().map(|t| TypedText(self.0, t)))
    }
}

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Item::Raw(raw) => raw.serialize(s),
            Item::Said { role, content } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", role)?;
                match content {
                    Said::Text(t) => map.serialize_entry("content", t)?,
                    Said::Parts(p) => map.serialize_entry("content", &Parts("input_text", p))?,
                    Said::Mixed(p) => map.serialize_entry("content", p)?,
                }
                map.end()
            }
            // An assistant message without an id: the SDK's `EasyInputMessageParam` (role and
            // text), the only input item that takes an assistant turn with no id —
            // `ResponseOutputMessageParam` requires `id` (openai-python 3.57.0,
            // types/responses/response_output_message_param.py, easy_input_message_param.py).
            Item::AssistantText(texts) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", "assistant")?;
                match texts.as_slice() {
                    [one] => map.serialize_entry("content", one)?,
                    many => {
                        let joined: String = many
                            .iter()
                            .filter_map(|t| serde_json::from_str::<String>(t.get()).ok())
                            .collect();
                        map.serialize_entry("content", &joined)?;
                    }
                }
                map.end()
            }
            Item::Call {
                call_id,
                name,
                arguments,
            } => {
                let mut map = s.serialize_map(Some(4))?;
                map.serialize_entry("type", "function_call")?;
                map.serialize_entry("call_id", call_id)?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("arguments", arguments)?;
                map.end()
            }
            Item::Output { call_id, output } => call_output(s, call_id, output),
            Item::OutputParts { call_id, parts } => call_output(s, call_id, parts),
        }
    }
}

/// A `function_call_output` item for `call_id` whose `output` is a text or a list of parts.
fn call_output<S: Serializer>(
    s: S,
    call_id: &str,
    output: &impl Serialize,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(3))?;
    map.serialize_entry("type", "function_call_output")?;
    map.serialize_entry("call_id", call_id)?;
    map.serialize_entry("output", output)?;
    map.end()
}

/// A chat-completions tool definition, as this wire reads it.
#[derive(Deserialize)]
struct ChatToolDef<'a> {
    #[serde(borrow)]
    function: FunctionDef<'a>,
}

#[derive(Deserialize)]
struct FunctionDef<'a> {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(borrow, default)]
    parameters: Option<&'a RawValue>,
    #[serde(default)]
    strict: Option<bool>,
}

/// A Responses function tool: flat `{type, name, description, parameters, strict}` (openai-python
/// `FunctionToolParam`). `strict` is the chat definition's, else `false`, the chat-completions
/// default (the Responses API would otherwise validate the schema strictly).
struct ToolOut<'a>(&'a FunctionDef<'a>);

impl Serialize for ToolOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("name", &f.name)?;
        if let Some(d) = f.description.as_deref().filter(|d| !d.is_empty()) {
            map.serialize_entry("description", d)?;
        }
        match f.parameters {
            Some(p) => map.serialize_entry("parameters", p)?,
            None => map.serialize_entry("parameters", &())?,
        }
        map.serialize_entry("strict", &f.strict.unwrap_or(false))?;
        map.end()
    }
}

struct Reasoning<'a>(&'a ReasoningPlan);

impl Serialize for Reasoning<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(e) = self.0.effort {
            map.serialize_entry("effort", e)?;
        }
        if self.0.summary {
            map.serialize_entry("summary", "auto")?;
        }
        map.end()
    }
}

struct Body<'a, 'h> {
    model: &'a str,
    stream: bool,
    /// Server-side compaction asked for (`[{"type": "compaction", "compact_threshold": N}]`).
    context_management: Option<&'a RawValue>,
    input: &'a [Item<'h>],
    instructions: Option<&'a str>,
    reasoning: &'a ReasoningPlan,
    tools: Option<&'a [ChatToolDef<'a>]>,
    /// A Responses client's built-in tools (`web_search`, `file_search`, …), each as written,
    /// after its function tools.
    builtin: &'a [hermes_core::RawJson],
    sampling: &'a [(&'static str, Value)],
}

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("stream", &self.stream)?;
        if let Some(c) = self.context_management {
            map.serialize_entry("context_management", c)?;
        }
        if self.reasoning.include_encrypted {
            map.serialize_entry("include", &["reasoning.encrypted_content"])?;
        }
        map.serialize_entry("input", self.input)?;
        if let Some(i) = self.instructions {
            map.serialize_entry("instructions", i)?;
        }
        if self.reasoning.any() {
            map.serialize_entry("reasoning", &Reasoning(self.reasoning))?;
        }
        map.serialize_entry("store", &false)?;
        let tools = self.tools.unwrap_or_default();
        if !tools.is_empty() || !self.builtin.is_empty() {
            let out: Vec<ToolOut<'_>> = tools.iter().map(|t| ToolOut(&t.function)).collect();
            map.serialize_entry("tools", &ToolList(&out, self.builtin))?;
        }
        for (k, v) in self.sampling {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The function tools, then the built-in ones as written.
struct ToolList<'a>(&'a [ToolOut<'a>], &'a [hermes_core::RawJson]);

impl Serialize for ToolList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len() + self.1.len()))?;
        for tool in self.0 {
            seq.serialize_element(tool)?;
        }
        for tool in self.1 {
            seq.serialize_element(tool)?;
        }
        seq.end()
    }
}

/// The body of `POST /responses/compact`: `model`, `input`, `instructions` (openai-python's
/// `responses.compact`; no tools, no stream, no `store`).
struct CompactBody<'a, 'h> {
    model: &'a str,
    input: &'a [Item<'h>],
    instructions: Option<&'a str>,
}

impl Serialize for CompactBody<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("input", self.input)?;
        if let Some(i) = self.instructions {
            map.serialize_entry("instructions", i)?;
        }
        map.end()
    }
}

fn raw_string(text: &str) -> Box<RawValue> {
    serde_json::value::to_raw_value(text).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The text literals of a content value (chat `text` parts, and the Responses `input_text` and
/// `output_text` of an imported history), borrowed.
fn text_parts(content: Option<&RawJson>) -> Vec<&RawValue> {
    json::text_literals(content, &["text", "input_text", "output_text"])
}

/// The decoded texts of a content value, joined with `sep`.
fn joined_text(content: Option<&RawJson>, sep: &str) -> String {
    json::texts(content, &["text", "input_text", "output_text"]).join(sep)
}

/// A tool result's `output`: the stored string literal as is, the texts of parts joined, else
/// `""`.
fn output_text(content: Option<&RawJson>) -> Cow<'_, RawValue> {
    match content {
        Some(c) if c.is_string() => Cow::Borrowed(c.as_raw()),
        Some(c) if c.get().starts_with('[') => Cow::Owned(raw_string(&joined_text(Some(c), "\n"))),
        _ => Cow::Owned(raw_string("")),
    }
}

/// A tool call's `arguments` as a JSON string: the stored string literal as is; any other
/// stored JSON as its text in a string; `"{}"` when absent.
fn call_arguments(call: &ToolCall) -> Cow<'_, RawValue> {
    match &call.function.arguments {
        Some(a) if a.is_string() => Cow::Borrowed(a.as_raw()),
        Some(a) if !a.is_null() => Cow::Owned(raw_string(a.get())),
        _ => Cow::Owned(raw_string("{}")),
    }
}

/// One stored output item, borrowed from the stored message.
pub(crate) struct StoredItem<'h> {
    /// The item exactly as stored.
    pub(crate) raw: &'h RawValue,
    /// Its `type`.
    pub(crate) kind: Cow<'h, str>,
    /// Its `id`.
    pub(crate) id: Option<Cow<'h, str>>,
    /// A `function_call`'s `call_id`.
    pub(crate) call_id: Option<Cow<'h, str>>,
    /// A reasoning item carrying non-empty `encrypted_content`.
    pub(crate) encrypted: bool,
    /// It has a `summary` that is not `null`.
    pub(crate) summary: bool,
    /// It has a member with a private key (`_…`).
    private: bool,
    /// It has an `id` member (whatever its value).
    id_key: bool,
}

/// What one parse of a stored item tells: its members `type`, `id`, `call_id`,
/// `encrypted_content` and `summary`, read as a derived struct with `#[serde(default)]` reads
/// them (`null` as absent, a repeated one an error, an array positionally), and which keys
/// [`outgoing`] may have to leave out — so a replayed item with none is not parsed again.
#[derive(Default)]
struct ItemProbe<'a> {
    kind: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    encrypted_content: Option<&'a RawValue>,
    summary: Option<IgnoredAny>,
    private: bool,
    id_key: bool,
}

/// The members [`ItemProbe`] reads, in its positional order.
const PROBED: &[&str] = &["type", "id", "call_id", "encrypted_content", "summary"];

impl<'de> Deserialize<'de> for ItemProbe<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ItemProbe<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an output item")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ItemProbe<'de>, A::Error> {
                let mut p = ItemProbe::default();
                let mut seen = [false; PROBED.len()];
                while let Some(Text(key)) = map.next_key()? {
                    p.private |= is_private_key(&key);
                    p.id_key |= key == "id";
                    let Some(at) = PROBED.iter().position(|f| *f == key) else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    if std::mem::replace(&mut seen[at], true) {
                        return Err(de::Error::duplicate_field(PROBED[at]));
                    }
                    let text = |t: Option<Text<'de>>| t.map(|t| t.0);
                    match at {
                        0 => p.kind = text(map.next_value()?),
                        1 => p.id = text(map.next_value()?),
                        2 => p.call_id = text(map.next_value()?),
                        3 => p.encrypted_content = map.next_value()?,
                        _ => p.summary = map.next_value()?,
                    }
                }
                Ok(p)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ItemProbe<'de>, A::Error> {
                // Positionally, the missing ones left out (a derived struct's reading).
                let mut p = ItemProbe::default();
                let Some(kind) = seq.next_element::<Option<Text<'de>>>()? else {
                    return Ok(p);
                };
                p.kind = kind.map(|t| t.0);
                let Some(id) = seq.next_element::<Option<Text<'de>>>()? else {
                    return Ok(p);
                };
                p.id = id.map(|t| t.0);
                let Some(call_id) = seq.next_element::<Option<Text<'de>>>()? else {
                    return Ok(p);
                };
                p.call_id = call_id.map(|t| t.0);
                let Some(encrypted) = seq.next_element()? else {
                    return Ok(p);
                };
                p.encrypted_content = encrypted;
                if let Some(summary) = seq.next_element()? {
                    p.summary = summary;
                }
                Ok(p)
            }
        }
        d.deserialize_struct("ItemProbe", PROBED, V)
    }
}

/// True when `literal` (JSON text) is a string that is not empty: a JSON string literal other
/// than `""` decodes to at least one character, so only one with an escape is decoded, to see
/// that it decodes at all.
pub(super) fn non_empty_string(literal: &RawValue) -> bool {
    let text = literal.get();
    text.starts_with('"')
        && text != "\"\""
        && (!text.contains('\\') || serde_json::from_str::<String>(text).is_ok())
}

/// The items stored under `key`, or `None` when the key is absent or holds no array of
/// objects.
pub(crate) fn stored_items<'h>(msg: &'h Message, key: &str) -> Option<Vec<StoredItem<'h>>> {
    let (_, value) = msg.extra.iter().find(|(k, _)| k == key)?;
    let raws: Vec<&RawValue> = serde_json::from_str(value.get()).ok()?;
    raws.into_iter()
        .map(|raw| {
            let probe: ItemProbe<'_> = serde_json::from_str(raw.get()).ok()?;
            Some(StoredItem {
                raw,
                kind: probe.kind.unwrap_or_default(),
                id: probe.id,
                call_id: probe.call_id,
                encrypted: probe.encrypted_content.is_some_and(non_empty_string),
                summary: probe.summary.is_some(),
                private: probe.private,
                id_key: probe.id_key,
            })
        })
        .collect()
}

/// The texts of a stored `message` output item (its `output_text` parts, as stored).
fn output_texts(raw: &RawValue) -> Vec<&RawValue> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Part<'a> {
        #[serde(rename = "type")]
        kind: Option<String>,
        #[serde(borrow)]
        text: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Msg<'a> {
        #[serde(borrow, default)]
        content: Vec<Part<'a>>,
    }
    serde_json::from_str::<Msg<'_>>(raw.get())
        .map(|m| {
            m.content
                .into_iter()
                .filter(|p| p.kind.as_deref() == Some("output_text"))
                .filter_map(|p| p.text)
                .collect()
        })
        .unwrap_or_default()
}

/// A stored item as it goes out: without its private members (`_issuer_kind`, … — docs/spec.md §2;
/// OpenAI answers an unknown item key with 400 `Unknown parameter: 'input[N]._issuer_kind'.`)
/// and, unless `keep_id`, without its `id`; every other member byte for byte, in order
/// (`hermes_providers::native::members::without_members`). A reasoning item stored without a
/// `summary` (or with `null`) gets `"summary": []`: the SDK's reasoning input item requires one
/// (`ResponseReasoningItemParam.summary: Required[Iterable[Summary]]`, openai-python 3.57.0
/// `types/responses/response_reasoning_item_param.py`), and the API refuses the item without it
/// (`Missing required parameter: 'input[N].summary'.`).
pub(crate) fn outgoing<'h>(item: &StoredItem<'h>, keep_id: bool) -> Cow<'h, RawValue> {
    let add_summary = item.kind == "reasoning" && !item.summary;
    if !add_summary && !item.private && (keep_id || !item.id_key) {
        // Nothing to leave out (the probe saw every key).
        return Cow::Borrowed(item.raw);
    }
    let kept = without_members(item.raw, |k| {
        is_private_key(k) || (!keep_id && k == "id") || (add_summary && k == "summary")
    });
    if !add_summary {
        return kept;
    }
    let text = kept.get();
    let Some(close) = text.rfind('}') else {
        return kept;
    };
    let head = &text[..close];
    let sep = if head.trim_end() == "{" { "" } else { "," };
    match RawValue::from_string(format!("{head}{sep}\"summary\":[]}}")) {
        Ok(raw) => Cow::Owned(raw),
        Err(_) => kept,
    }
}

/// One slot of a turn's output order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Reasoning(usize),
    Other(usize),
}

/// The output order of a turn with `reasoning` reasoning items and `others` other items: the
/// stored [`BLOCK_ORDER_KEY`] when it counts the same items; else each reasoning item
/// followed by the next other item, the rest after (an imported turn keeps no order).
fn output_order(msg: &Message, reasoning: usize, others: usize) -> Vec<Slot> {
    let stored: Option<Vec<String>> = msg
        .extra
        .iter()
        .find(|(k, _)| k == BLOCK_ORDER_KEY)
        .and_then(|(_, v)| serde_json::from_str(v.get()).ok());
    if let Some(order) = stored {
        let r = order.iter().filter(|k| *k == "reasoning").count();
        if r == reasoning && order.len() - r == others {
            let (mut ri, mut oi) = (0, 0);
            return order
                .iter()
                .map(|k| {
                    if k == "reasoning" {
                        ri += 1;
                        Slot::Reasoning(ri - 1)
                    } else {
                        oi += 1;
                        Slot::Other(oi - 1)
                    }
                })
                .collect();
        }
    }
    let mut out = Vec::with_capacity(reasoning + others);
    for k in 0..reasoning.max(others) {
        if k < reasoning {
            out.push(Slot::Reasoning(k));
        }
        if k < others {
            out.push(Slot::Other(k));
        }
    }
    out
}

/// The items rebuilt from a turn's `content` and `tool_calls`.
fn rebuilt<'h>(msg: &'h Message) -> Vec<Item<'h>> {
    let mut out = Vec::new();
    let texts = text_parts(msg.content.as_ref());
    if !texts.is_empty() {
        out.push(Item::AssistantText(texts));
    }
    for call in msg.tool_calls.iter().flatten() {
        let Some(id) = call.id.as_deref() else {
            continue;
        };
        out.push(Item::Call {
            call_id: id,
            name: &call.function.name,
            arguments: call_arguments(call),
        });
    }
    out
}

/// True when the stored `function_call` items answer exactly the turn's tool calls (so their
/// results pair with them).
fn calls_agree(msg: &Message, items: &[StoredItem]) -> bool {
    let stored: BTreeSet<&str> = items
        .iter()
        .filter(|i| i.kind == "function_call")
        .filter_map(|i| i.call_id.as_deref())
        .collect();
    let calls: BTreeSet<&str> = msg
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|c| c.id.as_deref())
        .collect();
    let n = items.iter().filter(|i| i.kind == "function_call").count();
    stored == calls && n == stored.len()
}

/// Why a turn's reasoning items may not go.
fn reasoning_block(
    i: usize,
    msg: &Message,
    own: bool,
    refused: bool,
    drops: &Drops,
) -> Option<String> {
    if !own {
        let who = msg
            .origin
            .as_ref()
            .map_or_else(String::new, |o| format!(" by {} on {}", o.model, o.host));
        return Some(format!("minted{who} (provenance)"));
    }
    if refused {
        return Some(format!(
            "`{ENCRYPTED_FIELD}` refused by this target (verdict)"
        ));
    }
    if drops.all_reasoning || drops.reasoning_of.contains(&i) {
        return Some("the provider could not verify them (this request only)".to_owned());
    }
    None
}

/// Whether `msg` stores reasoning items (Responses' own).
fn has_reasoning_items(msg: &Message) -> bool {
    stored_items(msg, REASONING_ITEMS_KEY)
        .unwrap_or_default()
        .iter()
        .any(|r| r.kind == "reasoning")
}

/// Where a request's provider compaction items went: the input index of the latest one sent,
/// and those of `configuration_update` items (kept when the input starts at a compaction item).
#[derive(Default)]
struct Compactions<'a> {
    /// The account requests go under ([`hermes_providers::native::account_of`]).
    account: Option<&'a str>,
    latest: Option<usize>,
    updates: Vec<usize>,
}

/// Adds an assistant turn's items; returns how many reasoning items went. The stored output
/// items go back in their stored order ([`Replay`]) when they agree with the turn's tool calls;
/// else the message and calls are rebuilt from `content` and `tool_calls`.
#[allow(clippy::too_many_arguments)]
fn assistant<'h>(
    i: usize,
    msg: &'h Message,
    own: bool,
    refused: bool,
    drops: &Drops,
    input: &mut Vec<Item<'h>>,
    explain: &mut Vec<String>,
    compactions: &mut Compactions<'_>,
) -> usize {
    let reasoning: Vec<StoredItem<'h>> = stored_items(msg, REASONING_ITEMS_KEY)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.kind == "reasoning")
        .collect();
    let stored_others = stored_items(msg, MESSAGE_ITEMS_KEY);
    let mut line = format!("message {i}:");
    let others: Vec<Option<&StoredItem<'h>>>;
    let mut rebuilt_items: Vec<Option<Item<'h>>>;
    let agreed = stored_others
        .as_deref()
        .filter(|items| calls_agree(msg, items));
    match agreed {
        Some(items) => {
            others = items.iter().map(Some).collect();
            rebuilt_items = Vec::new();
        }
        None => {
            if stored_others.is_some() {
                line.push_str(" stored output items disagree with its tool calls: rebuilt from content and tool calls;");
            }
            rebuilt_items = rebuilt(msg).into_iter().map(Some).collect();
            others = vec![None; rebuilt_items.len()];
        }
    }
    if reasoning.is_empty() && agreed.is_none() {
        let n = rebuilt_items.len();
        input.extend(rebuilt_items.into_iter().flatten());
        line.push_str(&format!(
            " rebuilt from content and tool calls ({n} item(s))"
        ));
        if msg.replayable_text().is_some() {
            line.push_str("; readable thinking not sent (this wire has no field for it)");
        }
        explain.push(line);
        return 0;
    }
    let blocked = reasoning_block(i, msg, own, refused, drops);
    let order = output_order(msg, reasoning.len(), others.len());
    let mut replay = Replay {
        msg,
        own,
        blocked: blocked.is_some(),
        after_dropped: false,
        tally: Tally::default(),
    };
    for (pos, slot) in order.iter().enumerate() {
        match *slot {
            Slot::Reasoning(r) => {
                let paired = matches!(order.get(pos + 1), Some(Slot::Other(_)));
                replay.reasoning(&reasoning[r], paired, input);
            }
            Slot::Other(o) => match others[o] {
                Some(item) => replay.other(item, input, compactions),
                None => input.extend(rebuilt_items[o].take()),
            },
        }
    }
    let tally = replay.tally;
    tally.describe(
        &mut line,
        reasoning.len(),
        others.len(),
        agreed.is_none(),
        blocked.as_deref(),
    );
    explain.push(line);
    tally.sent
}

/// One assistant turn's stored items going back in their output order: whether its reasoning
/// is `blocked` ([`reasoning_block`]), whether a reasoning item was just left out (the items
/// after it go without their `id`), and what was sent and left out.
struct Replay<'m> {
    msg: &'m Message,
    own: bool,
    blocked: bool,
    after_dropped: bool,
    tally: Tally,
}

/// What [`Replay`] sent and left out of a turn, counted for its `explain` line.
#[derive(Default)]
struct Tally {
    /// Reasoning items sent.
    sent: usize,
    /// Reasoning items with no paired item after them.
    unpaired: usize,
    /// Reasoning items without encrypted content.
    sealed: usize,
    /// Items sent without their `id`.
    stripped: usize,
    /// Items of other types, which have no input form.
    skipped: usize,
    /// Compaction items replayed to their issuer.
    compacted: usize,
    /// Compaction items minted elsewhere, left out.
    foreign_compaction: usize,
}

impl Replay<'_> {
    /// A reasoning item: sent as stored when the turn's reasoning is not blocked, it carries
    /// encrypted content and is `paired` (an item follows it); else left out, counted as sealed
    /// or unpaired (when not blocked).
    fn reasoning<'h>(&mut self, item: &StoredItem<'h>, paired: bool, input: &mut Vec<Item<'h>>) {
        if !self.blocked && item.encrypted && paired {
            input.push(Item::Raw(outgoing(item, true)));
            self.tally.sent += 1;
            self.after_dropped = false;
        } else {
            if !self.blocked && !item.encrypted {
                self.tally.sealed += 1;
            } else if !self.blocked {
                self.tally.unpaired += 1;
            }
            self.after_dropped = true;
        }
    }

    /// A stored item other than reasoning: a compaction item to its issuer only (docs/spec.md
    /// §7), a `configuration_update` as stored, a `message` or `function_call` with its `id`
    /// unless a reasoning item before it was left out or it is another model's; any other type
    /// is left out.
    fn other<'h>(
        &mut self,
        item: &StoredItem<'h>,
        input: &mut Vec<Item<'h>>,
        compactions: &mut Compactions<'_>,
    ) {
        if item.kind == compaction::COMPACTION_ITEM {
            // Server-side compaction: to its issuer only (docs/spec.md §7).
            if compaction::issuer(self.msg, self.own, compactions.account) {
                input.push(Item::Raw(outgoing(item, true)));
                compactions.latest = Some(input.len() - 1);
                self.tally.compacted += 1;
            } else {
                self.tally.foreign_compaction += 1;
            }
        } else if item.kind == compaction::CONFIGURATION_UPDATE {
            input.push(Item::Raw(outgoing(item, true)));
            compactions.updates.push(input.len() - 1);
        } else if !matches!(&*item.kind, "message" | "function_call") {
            self.tally.skipped += 1;
        } else if (self.own && !self.after_dropped) || item.id.is_none() {
            input.push(Item::Raw(outgoing(item, true)));
        } else if item.kind == "message" {
            self.tally.stripped += 1;
            input.push(Item::AssistantText(output_texts(item.raw)));
        } else {
            self.tally.stripped += 1;
            input.push(Item::Raw(outgoing(item, false)));
        }
    }
}

impl Tally {
    /// Ends a turn's `explain` line: the items replayed of `others` (`rebuilt`: the message
    /// and calls were), the reasoning items sent of `reasoning`, why they were `blocked`, and
    /// each count of what was left out.
    fn describe(
        &self,
        line: &mut String,
        reasoning: usize,
        others: usize,
        rebuilt: bool,
        blocked: Option<&str>,
    ) {
        let sent = self.sent;
        let n_other = others - self.skipped - self.foreign_compaction;
        line.push_str(&format!(
            " {} output item(s) replayed in stored order",
            sent + n_other
        ));
        if rebuilt {
            line.push_str(" (message and calls rebuilt)");
        }
        line.push_str(&format!("; {sent} of {reasoning} reasoning item(s) sent"));
        if let Some(why) = blocked
            && reasoning > 0
        {
            line.push_str(&format!("; reasoning left out: {why}"));
        }
        for (count, why) in [
            (
                self.sealed,
                "left out: no encrypted content (cannot be replayed with store:false)",
            ),
            (
                self.unpaired,
                "left out: no paired message or call follows it",
            ),
            (
                self.stripped,
                "item(s) sent without their id (their reasoning is not sent)",
            ),
            (
                self.skipped,
                "item(s) of other types not sent (no input form here)",
            ),
            (
                self.compacted,
                "compaction item(s) replayed to their issuer",
            ),
            (
                self.foreign_compaction,
                "compaction item(s) left out: minted for another provider, model or account (the turns they stood for are all still sent)",
            ),
        ] {
            if count > 0 {
                line.push_str(&format!("; {count} {why}"));
            }
        }
    }
}

/// Builds the body of `parts`, leaving out what `drops` names: compact, the bytes sent (`hermes
/// preview` re-indents them itself). No account is known: a compaction item stamped with one
/// is not sent ([`encode_for`]).
pub fn encode(parts: &RequestParts<'_>, drops: &Drops) -> Result<Encoded, EncodeError> {
    encode_for(parts, drops, None)
}

/// [`encode`] for requests sent under `account` ([`hermes_providers::native::account_of`]): the
/// provider's compaction items minted under it go back (docs/spec.md §7). A request that asks for a
/// standalone compaction ([`compaction::request`]) is the body of `POST /responses/compact`.
///
/// In stages, as the chat wire's: the reasoning plan, then the history as `input` items
/// ([`plan_input`]), then the bytes ([`CompactBody`], or [`render`]'s [`Body`]).
pub fn encode_for(
    parts: &RequestParts<'_>,
    drops: &Drops,
    account: Option<&str>,
) -> Result<Encoded, EncodeError> {
    let model = parts.decision.target.model.as_str();
    let plan = reasoning_plan(parts.thinking, model).map_err(EncodeError::Thinking)?;
    let mut explain = vec![
        format!(
            "responses wire: model {model}, store false{}",
            if plan.include_encrypted {
                ", include reasoning.encrypted_content"
            } else {
                ""
            }
        ),
        plan.explain.clone(),
    ];
    let planned = plan_input(parts, drops, account, &mut explain)?;
    let tools: Option<Vec<ChatToolDef<'_>>> = match parts.tools {
        Some(t) => {
            Some(serde_json::from_str(t.get()).map_err(|e| EncodeError::Tools(e.to_string()))?)
        }
        None => None,
    };
    let input = from_latest_compaction(planned.items, &planned.compactions, &mut explain);
    let instructions = planned.instructions.join("\n\n");
    let instructions = (!instructions.is_empty()).then_some(instructions.as_str());
    let body = if compaction::asked(parts.passthrough) {
        explain.push(format!(
            "POST /responses/compact: the {} input item(s) compacted by the provider",
            input.len()
        ));
        write_json(&CompactBody {
            model,
            input: &input,
            instructions,
        })?
    } else {
        let tools = tools.as_deref();
        render(parts, &plan, &input, instructions, tools, &mut explain)?
    };
    Ok(Encoded {
        body,
        refusable: if planned.reasoning_sent > 0 {
            vec![ENCRYPTED_FIELD]
        } else {
            Vec::new()
        },
        messages: input.len(),
        notes: Vec::new(),
        explain,
        carriers: planned.carriers,
        wire: (),
    })
}

/// The history as a request's `input`, the first stage of [`encode_for`].
struct Input<'h, 'a> {
    /// The leading system and developer messages' texts.
    instructions: Vec<String>,
    /// The `input` items, before [`from_latest_compaction`].
    items: Vec<Item<'h>>,
    /// How many reasoning items go.
    reasoning_sent: usize,
    /// Where the provider's compaction items went.
    compactions: Compactions<'a>,
    /// The carrier outcomes.
    carriers: hermes_core::CarrierCounts,
}

/// Every message of `parts`' history into `instructions` (the leading system and developer
/// messages) or an `input` item, each decision in `explain`.
fn plan_input<'h, 'a>(
    parts: &RequestParts<'h>,
    drops: &Drops,
    account: Option<&'a str>,
    explain: &mut Vec<String>,
) -> Result<Input<'h, 'a>, EncodeError> {
    let decision = parts.decision;
    let refused = parts
        .wire_verdicts
        .refused_for(super::WIRE_ID, &decision.target)
        .contains(&ENCRYPTED_FIELD);
    let mut input = Input {
        instructions: Vec::new(),
        items: Vec::new(),
        reasoning_sent: 0,
        compactions: Compactions {
            account,
            ..Compactions::default()
        },
        carriers: hermes_core::CarrierCounts::default(),
    };
    let mut leading = true;
    for (i, msg) in parts.history.iter().enumerate() {
        match msg.role {
            Role::System | Role::Developer if leading => {
                let text = joined_text(msg.content.as_ref(), "\n\n");
                if !text.is_empty() {
                    input.instructions.push(text);
                }
                explain.push(format!("message {i}: into `instructions`"));
            }
            Role::System | Role::Developer | Role::User => {
                leading = false;
                match said(msg, i)? {
                    Some(item) => input.items.push(item),
                    None => explain.push(format!("message {i}: left out (no text to send)")),
                }
            }
            Role::Tool => {
                leading = false;
                match tool_output(msg, i)? {
                    Some(item) => input.items.push(item),
                    None => explain.push(format!(
                        "message {i}: tool result without a call id left out"
                    )),
                }
            }
            Role::Assistant => {
                leading = false;
                let own = stored::own(msg, &decision.target);
                if let Some(item) = hermes_core::checkpoint::native_compaction(msg) {
                    let (compactions, items) = (&mut input.compactions, &mut input.items);
                    checkpoint(i, msg, item, own, compactions, items, explain);
                    continue;
                }
                if !stored::replayed(msg, i, explain) {
                    continue;
                }
                if !own && has_reasoning_items(msg) {
                    input.carriers.dropped_provenance += 1;
                }
                input.reasoning_sent += assistant(
                    i,
                    msg,
                    own,
                    refused,
                    drops,
                    &mut input.items,
                    explain,
                    &mut input.compactions,
                );
            }
        }
    }
    Ok(input)
}

/// A user message, or a system or developer message after the first turn, as a `{role,
/// content}` item: `None` when it has no text to send. A system message goes in place as a
/// `developer` item (OpenAI's model spec: developer messages are the system prompt's voice for
/// reasoning models).
fn said(msg: &Message, i: usize) -> Result<Option<Item<'_>>, EncodeError> {
    let role = match msg.role {
        Role::System | Role::Developer => "developer",
        _ => "user",
    };
    let content = match &msg.content {
        Some(c) if c.is_string() => Said::Text(c.as_raw()),
        _ if role == "user" && media::has_images(msg) => Said::Mixed(media::input_parts(msg, i)?),
        c => Said::Parts(text_parts(c.as_ref())),
    };
    if matches!(&content, Said::Parts(p) if p.is_empty()) {
        return Ok(None);
    }
    Ok(Some(Item::Said { role, content }))
}

/// A tool message as a `function_call_output` item (its images as input parts): `None` when
/// it has no call id.
fn tool_output(msg: &Message, i: usize) -> Result<Option<Item<'_>>, EncodeError> {
    let Some(call_id) = msg.tool_call_id.as_deref() else {
        return Ok(None);
    };
    Ok(Some(if media::has_images(msg) {
        Item::OutputParts {
            call_id,
            parts: media::input_parts(msg, i)?,
        }
    } else {
        Item::Output {
            call_id,
            // No error marker on `function_call_output`: a failed result says so.
            output: match msg.tool_error_text() {
                Some(text) => Cow::Owned(raw_string(&text)),
                None => output_text(msg.content.as_ref()),
            },
        }
    }))
}

/// The last stage of [`encode_for`] for `POST /responses`: the body's bytes, with the
/// forwarded `context_management`, the client's built-in tools and the sampling fields.
fn render(
    parts: &RequestParts<'_>,
    plan: &ReasoningPlan,
    input: &[Item<'_>],
    instructions: Option<&str>,
    tools: Option<&[ChatToolDef<'_>]>,
    explain: &mut Vec<String>,
) -> Result<Vec<u8>, EncodeError> {
    let model = parts.decision.target.model.as_str();
    let context_management = compaction::forwarded(parts.passthrough);
    if let Some(c) = context_management {
        explain.push(format!(
            "context_management: {} (server-side compaction)",
            c.get()
        ));
    }
    check_tool_choice(parts.sampling, parts.tools, "the OpenAI Responses API")
        .map_err(EncodeError::Unsupported)?;
    let sampling =
        sampling_fields(parts.sampling, model, plan, explain).map_err(EncodeError::Unsupported)?;
    let body = Body {
        model,
        stream: parts.stream,
        context_management,
        input,
        instructions,
        reasoning: plan,
        tools,
        // A Responses client's built-in tools: here only when this wire takes them (the driver
        // refused the request otherwise, `ResponsesWire::takes_passthrough`).
        builtin: if parts.passthrough.dialect == hermes_core::Dialect::OpenAiResponses {
            &parts.passthrough.server_tools
        } else {
            &[]
        },
        sampling: &sampling,
    };
    write_json(&body)
}

/// A provider checkpoint (a standalone compaction's reply): its compaction item verbatim to its
/// issuer — the input then starts there —, else hermes' own checkpoint of the summary
/// ([`hermes_core::checkpoint::own_checkpoint`]) as a user message.
fn checkpoint<'h>(
    i: usize,
    msg: &'h Message,
    item: &'h RawJson,
    own: bool,
    compactions: &mut Compactions<'_>,
    input: &mut Vec<Item<'h>>,
    explain: &mut Vec<String>,
) {
    if compaction::issuer(msg, own, compactions.account) {
        input.push(Item::Raw(Cow::Borrowed(item.as_raw())));
        compactions.latest = Some(input.len() - 1);
        explain.push(format!(
            "message {i}: the provider's compaction item, replayed to its issuer (the input starts here)"
        ));
        return;
    }
    let summary = hermes_core::checkpoint::native_summary(msg).unwrap_or_default();
    let own_checkpoint = hermes_core::checkpoint::own_checkpoint(&summary);
    let text = own_checkpoint
        .content
        .as_ref()
        .map_or_else(|| raw_string(""), |c| c.as_raw().to_owned());
    let said = format!(r#"{{"role":"user","content":{}}}"#, text.get());
    if let Ok(raw) = RawValue::from_string(said) {
        input.push(Item::Raw(Cow::Owned(raw)));
    }
    explain.push(format!(
        "message {i}: the provider's compaction item left out (minted for another provider, model or account): hermes' own summary sent instead"
    ));
}

/// `input` from the latest compaction item sent on (OpenAI's compaction guide: "you can drop
/// items that came before the most recent compaction item … The latest compaction item carries
/// the necessary context to continue the conversation", developers.openai.com/api/docs/guides/
/// compaction), the `configuration_update` items before it kept in order.
fn from_latest_compaction<'h>(
    mut input: Vec<Item<'h>>,
    compactions: &Compactions<'_>,
    explain: &mut Vec<String>,
) -> Vec<Item<'h>> {
    let Some(at) = compactions.latest else {
        return input;
    };
    let rest = input.split_off(at);
    let before = input.len();
    let mut out: Vec<Item<'h>> = input
        .into_iter()
        .enumerate()
        .filter(|(k, _)| compactions.updates.contains(k))
        .map(|(_, item)| item)
        .collect();
    let kept = out.len();
    out.extend(rest);
    let mut line = format!(
        "input starts at the latest compaction item: {} earlier item(s) left out (the compaction item stands for them)",
        before - kept
    );
    if kept > 0 {
        line.push_str(&format!("; {kept} configuration_update item(s) kept"));
    }
    explain.push(line);
    out
}
