//! The canonical history: messages in OpenAI chat shape plus every reasoning carrier
//! (docs/spec.md §2).
//!
//! Serde is hand-written: carriers are `RawValue`s (which `#[serde(flatten)]` cannot hold), unknown
//! keys are kept in arrival order, and top-level native fields are folded into the native record.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::raw::{RawJson, TextCarrier};

/// The `type` of the private native record inside `reasoning_details`. Only hermes writes it:
/// a provider's item of this type is dropped at capture ([`DetailItem::from_provider`]), so
/// nothing a provider sends is ever taken as hermes' own record.
pub(crate) const NATIVE_RECORD_TYPE: &str = "hermes.native_assistant";

/// The key that marks a stored assistant turn as not replayable (docs/spec.md §2, "Turns that are
/// not replayed"): a reply that ended with reasoning only. Its value is `true`; the turn is kept
/// for the record and exported, and no wire sends it back.
pub const NOT_REPLAYED_KEY: &str = "hermes_not_replayed";

/// The key under which a native wire records the order of an assistant turn's content blocks
/// (`["thinking","text","tool_use",…]`), so the turn is rebuilt exactly as received. Never
/// sent on any wire.
pub const BLOCK_ORDER_KEY: &str = "hermes_block_order";

/// True when an opaque item minted at `origin` may be replayed to `target` (docs/spec.md §2): the
/// same model id on the same host (host compared case-insensitively, port ignored). The one rule
/// every wire uses.
pub fn same_minter(origin: &Origin, target: &crate::target::RouteTarget) -> bool {
    origin.model == target.model && origin.host.eq_ignore_ascii_case(&target.host_key())
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `system`
    System,
    /// `developer`
    Developer,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `tool`
    Tool,
}

impl Role {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses the wire spelling.
    pub(crate) fn parse(text: &str) -> Option<Role> {
        Some(match text {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an assistant message came from: the model that minted its opaque items (docs/spec.md §2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Provider id, lowercased.
    pub provider: String,
    /// Host of the base URL, without port.
    pub host: String,
    /// Model id exactly as sent.
    pub model: String,
}

/// One item of `reasoning_details`, kept as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DetailItem {
    /// A provider's item (`reasoning.text`, `reasoning.encrypted`, Anthropic-shaped thinking, …).
    Provider {
        /// The item exactly as received.
        raw: RawJson,
        /// True when the item carries a signature, encrypted data or a redacted blob: it is then
        /// replayed only to the model that minted it.
        opaque: bool,
        /// True for an Anthropic-shaped item (`thinking` / `redacted_thinking`), classified
        /// once when the item is read: shaping asks on every turn of every request.
        anthropic: bool,
    },
    /// The private native record (`{"type":"hermes.native_assistant", …}`, docs/spec.md §4).
    Native {
        /// The record as stored.
        raw: RawJson,
        /// Its parsed fields.
        record: NativeRecord,
    },
}

impl DetailItem {
    /// Classifies one raw item.
    pub fn from_raw(raw: RawJson) -> Result<Self, String> {
        let probe: ItemProbe =
            serde_json::from_str(raw.get()).map_err(|e| format!("expected an object ({e})"))?;
        if probe.kind.as_deref() == Some(NATIVE_RECORD_TYPE) {
            let record: NativeRecord =
                serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
            return Ok(DetailItem::Native { raw, record });
        }
        let opaque = probe
            .signature
            .as_ref()
            .is_some_and(|s| !s.trim().is_empty())
            || probe.data.is_some()
            || probe.encrypted_content.is_some()
            || matches!(
                probe.kind.as_deref(),
                Some("reasoning.encrypted" | "redacted_thinking")
            );
        let anthropic = matches!(
            probe.kind.as_deref(),
            Some("thinking" | "redacted_thinking")
        );
        Ok(DetailItem::Provider {
            raw,
            opaque,
            anthropic,
        })
    }

    /// A `reasoning_details` item a provider sent, as capture keeps it (the one rule for a
    /// streamed and a whole reply): `None` for anything that is not a JSON object, and for an
    /// item typed `NATIVE_RECORD_TYPE` — a provider's item never poses as hermes' own record
    /// (docs/spec.md §4); hermes builds that record itself from the reply's native fields.
    pub fn from_provider(raw: RawJson) -> Option<Self> {
        if !raw.get().starts_with('{') {
            return None;
        }
        match DetailItem::from_raw(raw).ok()? {
            item @ DetailItem::Provider { .. } => Some(item),
            DetailItem::Native { .. } => None,
        }
    }

    /// True for an Anthropic-shaped item (`thinking` / `redacted_thinking`): only the Anthropic
    /// and Bedrock codecs render it; a chat-completions route never gets one (docs/spec.md §2).
    pub fn is_anthropic_shaped(&self) -> bool {
        matches!(
            self,
            DetailItem::Provider {
                anthropic: true,
                ..
            }
        )
    }

    /// The item as stored.
    pub fn raw(&self) -> &RawJson {
        match self {
            DetailItem::Provider { raw, .. } | DetailItem::Native { raw, .. } => raw,
        }
    }
}

impl Serialize for DetailItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw().serialize(serializer)
    }
}

/// Just enough of an item to classify it.
#[derive(Deserialize)]
struct ItemProbe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    signature: Option<String>,
    #[serde(default)]
    data: Option<de::IgnoredAny>,
    #[serde(default)]
    encrypted_content: Option<de::IgnoredAny>,
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(match value {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// Private fields that fit no standard carrier (docs/spec.md §4): Gemini's text-turn signature and
/// Copilot's `reasoning_opaque` / `reasoning_text`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeRecord {
    /// `{"google":{"thought_signature":…}}`, rendered at message level on Gemini routes.
    pub extra_content: Option<RawJson>,
    /// Copilot's encrypted reasoning state.
    pub reasoning_opaque: Option<TextCarrier>,
    /// Copilot's readable reasoning, sent only beside `reasoning_opaque`.
    pub reasoning_text: Option<TextCarrier>,
    /// Other keys of the record, kept in order.
    pub other: Vec<(String, RawJson)>,
}

impl NativeRecord {
    /// True when the record holds nothing.
    pub fn is_empty(&self) -> bool {
        self.extra_content.is_none()
            && self.reasoning_opaque.is_none()
            && self.reasoning_text.is_none()
            && self.other.is_empty()
    }

    /// Serialises the record as its `reasoning_details` item.
    pub fn to_item(&self) -> DetailItem {
        let raw =
            RawJson::from_serialize(&NativeItemOut(self)).unwrap_or_else(|_| RawJson::string(""));
        DetailItem::Native {
            raw,
            record: self.clone(),
        }
    }
}

struct NativeItemOut<'a>(&'a NativeRecord);

impl Serialize for NativeItemOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", NATIVE_RECORD_TYPE)?;
        entry(&mut map, "extra_content", &r.extra_content)?;
        entry(&mut map, "reasoning_opaque", &r.reasoning_opaque)?;
        entry(&mut map, "reasoning_text", &r.reasoning_text)?;
        for (k, v) in &r.other {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for NativeRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NativeRecord;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a native record object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NativeRecord, A::Error> {
                let mut record = NativeRecord::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "type" => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                        "extra_content" => {
                            let raw: RawJson = map.next_value()?;
                            record.extra_content = normalise_extra_content(raw);
                        }
                        "reasoning_opaque" => record.reasoning_opaque = text_field(&mut map)?,
                        "reasoning_text" => record.reasoning_text = text_field(&mut map)?,
                        _ => record.other.push((key, map.next_value()?)),
                    }
                }
                Ok(record)
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// The Gemini thought signature inside an `extra_content` value, if it is a non-blank string.
pub fn thought_signature(extra_content: &RawJson) -> Option<String> {
    let value = extra_content.to_value();
    let sig = value
        .get("google")
        .and_then(|g| g.get("thought_signature"))
        .or_else(|| value.get("thought_signature"))?;
    sig.as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// Moves a flat `extra_content.thought_signature` into the `google` namespace (docs/spec.md §2);
/// any other value is kept byte for byte. `null` becomes absent.
fn normalise_extra_content(raw: RawJson) -> Option<RawJson> {
    if raw.is_null() {
        return None;
    }
    let value = raw.to_value();
    match value.as_object() {
        Some(obj) if obj.contains_key("thought_signature") && !obj.contains_key("google") => {
            let mut rest = obj.clone();
            let sig = rest.remove("thought_signature");
            let mut google = serde_json::Map::new();
            google.insert("thought_signature".into(), sig.unwrap_or_default());
            let mut out = serde_json::Map::new();
            out.insert("google".into(), serde_json::Value::Object(google));
            out.extend(rest);
            RawJson::from_serialize(&out).ok()
        }
        _ => Some(raw),
    }
}

fn text_field<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<TextCarrier>, A::Error> {
    let raw: RawJson = map.next_value()?;
    if raw.is_null() {
        return Ok(None);
    }
    TextCarrier::from_raw(raw)
        .map(Some)
        .ok_or_else(|| de::Error::custom("expected a string or null"))
}

/// The function part of a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCall {
    /// Function name.
    pub name: String,
    /// Arguments as received (normally a JSON string holding JSON).
    pub arguments: Option<RawJson>,
    /// Copilot's `function.thought_signature` (Gemini models on Copilot).
    pub thought_signature: Option<TextCarrier>,
    /// Unknown keys, in order.
    pub extra: Vec<(String, RawJson)>,
}

/// One tool call on an assistant message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// Call id, echoed by the tool result.
    pub id: Option<String>,
    /// `type`, normally `"function"`.
    pub kind: Option<String>,
    /// The function called.
    pub function: FunctionCall,
    /// Gemini's `extra_content` (`{"google":{"thought_signature"}}`).
    pub extra_content: Option<RawJson>,
    /// Unknown keys, in order.
    pub extra: Vec<(String, RawJson)>,
}

impl ToolCall {
    /// A plain function call.
    pub fn function(id: &str, name: &str, arguments: &str) -> Self {
        ToolCall {
            id: Some(id.to_owned()),
            kind: Some("function".to_owned()),
            function: FunctionCall {
                name: name.to_owned(),
                arguments: Some(RawJson::string(arguments)),
                thought_signature: None,
                extra: Vec::new(),
            },
            extra_content: None,
            extra: Vec::new(),
        }
    }
}

/// A top-level key of a message, for keeping the order it was stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// `role`
    Role,
    /// `content`
    Content,
    /// `reasoning_content`
    ReasoningContent,
    /// `reasoning`
    Reasoning,
    /// `reasoning_details` (the native record's top-level spellings fold into it)
    ReasoningDetails,
    /// `tool_calls`
    ToolCalls,
    /// `tool_call_id`
    ToolCallId,
    /// `name`
    Name,
    /// The next key of [`Message::extra`].
    Extra,
}

impl Key {
    /// Every known key, in the canonical order (the order of a message built in code).
    pub(crate) const CANONICAL: [Key; 8] = [
        Key::Role,
        Key::Content,
        Key::ReasoningContent,
        Key::Reasoning,
        Key::ReasoningDetails,
        Key::ToolCalls,
        Key::ToolCallId,
        Key::Name,
    ];

    /// The JSON spelling (`*` for an unknown key).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Key::Role => "role",
            Key::Content => "content",
            Key::ReasoningContent => "reasoning_content",
            Key::Reasoning => "reasoning",
            Key::ReasoningDetails => "reasoning_details",
            Key::ToolCalls => "tool_calls",
            Key::ToolCallId => "tool_call_id",
            Key::Name => "name",
            Key::Extra => "*",
        }
    }

    /// Parses [`Key::as_str`].
    pub(crate) fn parse(text: &str) -> Option<Key> {
        Key::CANONICAL
            .into_iter()
            .chain([Key::Extra])
            .find(|k| k.as_str() == text)
    }
}

/// The order a message's keys were stored in, when it is not the canonical one. Writes it as
/// `role,tool_call_id,content` (`*` for each unknown key), the form the store keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyOrder(Vec<Key>);

impl KeyOrder {
    /// The order of `keys` as seen, or `None` when it is the canonical order (nothing to keep).
    pub(crate) fn from_seen(keys: Vec<Key>) -> Option<KeyOrder> {
        let canonical = keys.windows(2).all(|w| w[0] <= w[1]);
        (!canonical).then_some(KeyOrder(keys))
    }

    /// The keys, in stored order.
    pub(crate) fn keys(&self) -> &[Key] {
        &self.0
    }

    /// Parses the stored form; unknown names are an error.
    pub fn parse(text: &str) -> Result<KeyOrder, String> {
        text.split(',')
            .map(|k| Key::parse(k).ok_or_else(|| format!("unknown key `{k}` in key order")))
            .collect::<Result<Vec<_>, _>>()
            .map(KeyOrder)
    }
}

impl fmt::Display for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(k.as_str())?;
        }
        Ok(())
    }
}

/// One slot of a message walked in its stored key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A known key.
    Known(Key),
    /// `extra[i]`.
    Extra(usize),
}

/// Walks a message's keys in stored order: the recorded order first (each [`Key::Extra`] taking
/// the next unknown key), then any known key it did not list in canonical order, then any
/// unknown key left. Every key appears exactly once; absent values are the caller's to skip.
#[derive(Clone, Debug)]
struct KeyWalk<'a> {
    order: &'a [Key],
    at: usize,
    done: u16,
    canonical: usize,
    extra: usize,
    extras: usize,
}

impl Iterator for KeyWalk<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        while let Some(&key) = self.order.get(self.at) {
            self.at += 1;
            if key == Key::Extra {
                if self.extra < self.extras {
                    self.extra += 1;
                    return Some(Slot::Extra(self.extra - 1));
                }
                continue;
            }
            let bit = 1u16 << (key as u16);
            if self.done & bit == 0 {
                self.done |= bit;
                return Some(Slot::Known(key));
            }
        }
        while let Some(&key) = Key::CANONICAL.get(self.canonical) {
            self.canonical += 1;
            let bit = 1u16 << (key as u16);
            if self.done & bit == 0 {
                self.done |= bit;
                return Some(Slot::Known(key));
            }
        }
        if self.extra < self.extras {
            self.extra += 1;
            return Some(Slot::Extra(self.extra - 1));
        }
        None
    }
}

/// One message of the canonical history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// `content` as received (string, array of parts, or `null`); `None` when absent.
    pub content: Option<RawJson>,
    /// Tool calls of an assistant message.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a tool result answers.
    pub tool_call_id: Option<String>,
    /// Optional participant or tool name.
    pub name: Option<String>,
    /// `reasoning_content` (RC).
    pub reasoning_content: Option<TextCarrier>,
    /// `reasoning` (R).
    pub reasoning: Option<TextCarrier>,
    /// `reasoning_details` (RD), the native record among them.
    pub reasoning_details: Option<Vec<DetailItem>>,
    /// Provenance of a captured assistant message.
    pub origin: Option<Origin>,
    /// Unknown keys, in arrival order.
    pub extra: Vec<(String, RawJson)>,
    /// The order the keys were stored in, when not canonical: storage, export and every wire
    /// keep it.
    pub key_order: Option<KeyOrder>,
    /// A tool result the client marked as failed (Anthropic's `tool_result.is_error`): each wire
    /// says so in its own way (`is_error`, Converse's `status: "error"`, Gemini's `error`
    /// response; an `Error: ` text prefix where a wire has no marker). Request-scoped: it is
    /// read from the client on every request, never stored, and not part of the normal form.
    pub tool_error: bool,
    /// This message's content as the client wrote it in its own wire's dialect (the Messages
    /// door keeps each turn's blocks, `cache_control` and all), for an upstream of that dialect
    /// only: a Claude target gets these bytes instead of blocks rebuilt from `content`. Never
    /// stored, never serialized, never part of the normal form; every other wire ignores it.
    pub client_blocks: Option<RawJson>,
}

impl Message {
    /// A message with only a role and text content.
    pub fn text(role: Role, text: &str) -> Self {
        Message {
            role,
            content: Some(RawJson::string(text)),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            reasoning_content: None,
            reasoning: None,
            reasoning_details: None,
            origin: None,
            extra: Vec::new(),
            key_order: None,
            tool_error: false,
            client_blocks: None,
        }
    }

    /// The message's keys in stored order: the recorded order first (each [`Key::Extra`]
    /// taking the next unknown key), then any known key it did not list in canonical order, then
    /// any unknown key left. Every key appears exactly once; absent values are the caller's to
    /// skip.
    pub fn key_walk(&self) -> impl Iterator<Item = Slot> + '_ {
        KeyWalk {
            order: self.key_order.as_ref().map_or(&[], |o| o.keys()),
            at: 0,
            done: 0,
            canonical: 0,
            extra: 0,
            extras: self.extra.len(),
        }
    }

    /// A failed tool result's content for a wire with no error marker of its own: its text
    /// (a string, or the text parts joined by newlines) after `Error: `. `None` unless
    /// [`Message::tool_error`] is set.
    pub fn tool_error_text(&self) -> Option<String> {
        if !self.tool_error {
            return None;
        }
        let text = match &self.content {
            Some(c) if c.is_string() => c.as_str().map(|s| s.into_owned()).unwrap_or_default(),
            Some(c) => serde_json::from_str::<Vec<serde_json::Value>>(c.get())
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            None => String::new(),
        };
        Some(format!("Error: {text}"))
    }

    /// The native record, if one is stored.
    pub fn native_record(&self) -> Option<&NativeRecord> {
        self.reasoning_details
            .as_ref()?
            .iter()
            .find_map(|item| match item {
                DetailItem::Native { record, .. } => Some(record),
                DetailItem::Provider { .. } => None,
            })
    }

    /// False for a turn stored for the record only (it ended with reasoning only, docs/spec.md §2):
    /// no wire sends it back.
    pub fn replayable(&self) -> bool {
        !self
            .extra
            .iter()
            .any(|(k, v)| k == NOT_REPLAYED_KEY && v.get() == "true")
    }

    /// The non-blank `reasoning_content`, else the non-blank `reasoning` (docs/spec.md §3).
    pub fn replayable_text(&self) -> Option<&TextCarrier> {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .flatten()
            .find(|c| !c.is_blank())
    }

    /// Merges `fields` into the native record, creating it if needed (later values win).
    fn fold_native(&mut self, fields: NativeRecord) {
        let items = self.reasoning_details.get_or_insert_with(Vec::new);
        let existing = items
            .iter()
            .position(|i| matches!(i, DetailItem::Native { .. }));
        let mut record = match existing {
            Some(pos) => match items.remove(pos) {
                DetailItem::Native { record, .. } => record,
                DetailItem::Provider { .. } => NativeRecord::default(),
            },
            None => NativeRecord::default(),
        };
        if fields.extra_content.is_some() {
            record.extra_content = fields.extra_content;
        }
        if fields.reasoning_opaque.is_some() {
            record.reasoning_opaque = fields.reasoning_opaque;
        }
        if fields.reasoning_text.is_some() {
            record.reasoning_text = fields.reasoning_text;
        }
        let pos = existing.unwrap_or(items.len());
        if !record.is_empty() {
            items.insert(pos, record.to_item());
        }
        if items.is_empty() {
            self.reasoning_details = None;
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for slot in self.key_walk() {
            match slot {
                Slot::Known(Key::Role) => map.serialize_entry("role", self.role.as_str())?,
                Slot::Known(Key::Content) => entry(&mut map, "content", &self.content)?,
                Slot::Known(Key::ReasoningContent) => {
                    entry(&mut map, "reasoning_content", &self.reasoning_content)?
                }
                Slot::Known(Key::Reasoning) => entry(&mut map, "reasoning", &self.reasoning)?,
                Slot::Known(Key::ReasoningDetails) => {
                    entry(&mut map, "reasoning_details", &self.reasoning_details)?
                }
                Slot::Known(Key::ToolCalls) => entry(&mut map, "tool_calls", &self.tool_calls)?,
                Slot::Known(Key::ToolCallId) => {
                    entry(&mut map, "tool_call_id", &self.tool_call_id)?
                }
                Slot::Known(Key::Name) => entry(&mut map, "name", &self.name)?,
                Slot::Known(Key::Extra) => {}
                Slot::Extra(i) => {
                    if let Some((k, v)) = self.extra.get(i) {
                        map.serialize_entry(k, v)?;
                    }
                }
            }
        }
        entry(&mut map, "origin", &self.origin)?;
        map.end()
    }
}

/// Writes `key: value` to `map` when there is a value (an absent field is left out).
fn entry<M: SerializeMap, T: Serialize>(
    map: &mut M,
    key: &str,
    value: &Option<T>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => map.serialize_entry(key, v),
        None => Ok(()),
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        entry(&mut map, "id", &self.id)?;
        entry(&mut map, "type", &self.kind)?;
        map.serialize_entry("function", &self.function)?;
        entry(&mut map, "extra_content", &self.extra_content)?;
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Serialize for FunctionCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        entry(&mut map, "arguments", &self.arguments)?;
        entry(&mut map, "thought_signature", &self.thought_signature)?;
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Fails on a key seen twice.
fn once<T, E: de::Error>(slot: &Option<T>, key: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(key));
    }
    Ok(())
}

/// Fails on a key seen twice, whatever its value (`null` included); `seen` holds the keys read.
fn first_time<E: de::Error>(seen: &mut BTreeSet<String>, key: &str) -> Result<(), E> {
    if seen.insert(key.to_owned()) {
        Ok(())
    } else {
        Err(E::custom(format!("duplicate field `{key}`")))
    }
}

/// A message's `content` while deserialising: a string, an array of content parts, or null.
struct Content(RawJson);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawJson::deserialize(deserializer)?;
        let found = match raw.get().as_bytes().first() {
            Some(b'"' | b'[' | b'n') => return Ok(Content(raw)),
            Some(b'{') => "an object",
            Some(b't' | b'f') => "a boolean",
            _ => "a number",
        };
        Err(de::Error::custom(format!(
            "`content`: expected a string, an array of content parts or null, found {found}"
        )))
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object with a `role`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                let mut role = None;
                let mut msg = Message::text(Role::User, "");
                msg.content = None;
                let mut native_keys: Vec<(String, RawJson)> = Vec::new();
                let (mut seen_rc, mut seen_r, mut seen_rd) = (false, false, false);
                let mut seen: Vec<Key> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if let Some(known) = Key::parse(&key).filter(|k| *k != Key::Extra) {
                        seen.push(known);
                    } else if !matches!(
                        key.as_str(),
                        "origin" | "extra_content" | "reasoning_opaque" | "reasoning_text"
                    ) {
                        seen.push(Key::Extra);
                    }
                    match key.as_str() {
                        "role" => {
                            once(&role, "role")?;
                            let text: String = map.next_value()?;
                            role = Some(Role::parse(&text).ok_or_else(|| {
                                de::Error::invalid_value(
                                    de::Unexpected::Str(&text),
                                    &"one of system, developer, user, assistant, tool",
                                )
                            })?);
                        }
                        "content" => {
                            once(&msg.content, "content")?;
                            msg.content = Some(map.next_value::<Content>()?.0);
                        }
                        "tool_calls" => {
                            once(&msg.tool_calls, "tool_calls")?;
                            msg.tool_calls = map.next_value::<Option<Vec<ToolCall>>>()?;
                        }
                        "tool_call_id" => {
                            once(&msg.tool_call_id, "tool_call_id")?;
                            msg.tool_call_id = map.next_value()?;
                        }
                        "name" => {
                            once(&msg.name, "name")?;
                            msg.name = map.next_value()?;
                        }
                        "reasoning_content" => {
                            if std::mem::replace(&mut seen_rc, true) {
                                return Err(de::Error::duplicate_field("reasoning_content"));
                            }
                            msg.reasoning_content = text_field(&mut map)?;
                        }
                        "reasoning" => {
                            if std::mem::replace(&mut seen_r, true) {
                                return Err(de::Error::duplicate_field("reasoning"));
                            }
                            msg.reasoning = text_field(&mut map)?;
                        }
                        "reasoning_details" => {
                            if std::mem::replace(&mut seen_rd, true) {
                                return Err(de::Error::duplicate_field("reasoning_details"));
                            }
                            msg.reasoning_details =
                                map.next_value::<Option<DetailItems>>()?.map(|d| d.0);
                        }
                        "origin" => {
                            once(&msg.origin, "origin")?;
                            msg.origin = map.next_value()?;
                        }
                        "extra_content" | "reasoning_opaque" | "reasoning_text" => {
                            if native_keys.iter().any(|(k, _)| *k == key) {
                                return Err(de::Error::custom(format!("duplicate field `{key}`")));
                            }
                            let value = map.next_value()?;
                            native_keys.push((key, value));
                        }
                        _ => {
                            if msg.extra.iter().any(|(k, _)| *k == key) {
                                return Err(de::Error::custom(format!("duplicate field `{key}`")));
                            }
                            let value = map.next_value()?;
                            msg.extra.push((key, value));
                        }
                    }
                }
                msg.role = role.ok_or_else(|| de::Error::missing_field("role"))?;
                msg.key_order = KeyOrder::from_seen(seen);
                if msg.role == Role::Assistant && !native_keys.is_empty() {
                    let native = native_from_keys(native_keys).map_err(de::Error::custom)?;
                    msg.fold_native(native);
                } else {
                    // Only assistant messages have a native record; elsewhere these keys are data.
                    msg.extra.extend(native_keys);
                }
                Ok(msg)
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// Builds native-record fields from top-level `extra_content` / `reasoning_opaque` /
/// `reasoning_text` keys of an assistant message.
fn native_from_keys(keys: Vec<(String, RawJson)>) -> Result<NativeRecord, String> {
    let mut record = NativeRecord::default();
    for (key, raw) in keys {
        let text = || -> Result<Option<TextCarrier>, String> {
            if raw.is_null() {
                return Ok(None);
            }
            TextCarrier::from_raw(raw.clone())
                .map(Some)
                .ok_or_else(|| format!("`{key}`: expected a string or null"))
        };
        match key.as_str() {
            "extra_content" => record.extra_content = normalise_extra_content(raw.clone()),
            "reasoning_opaque" => record.reasoning_opaque = text()?,
            _ => record.reasoning_text = text()?,
        }
    }
    Ok(record)
}

/// `reasoning_details` while deserialising: an array of classified items.
struct DetailItems(Vec<DetailItem>);

impl<'de> Deserialize<'de> for DetailItems {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raws = Vec::<RawJson>::deserialize(deserializer)?;
        raws.into_iter()
            .enumerate()
            .map(|(i, raw)| {
                DetailItem::from_raw(raw).map_err(|e| de::Error::custom(format!("item {i}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(DetailItems)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolCall;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool call object with a `function`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolCall, A::Error> {
                let (mut id, mut kind, mut function, mut extra_content) = (None, None, None, None);
                let mut extra: Vec<(String, RawJson)> = Vec::new();
                let mut seen = BTreeSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    first_time(&mut seen, &key)?;
                    match key.as_str() {
                        "id" => {
                            once(&id, "id")?;
                            id = map.next_value::<Option<String>>()?;
                        }
                        "type" => {
                            once(&kind, "type")?;
                            kind = map.next_value::<Option<String>>()?;
                        }
                        "function" => {
                            once(&function, "function")?;
                            function = Some(map.next_value::<FunctionCall>()?);
                        }
                        "extra_content" => {
                            let raw: RawJson = map.next_value()?;
                            extra_content = normalise_extra_content(raw);
                        }
                        _ => extra.push((key, map.next_value()?)),
                    }
                }
                let function = function.ok_or_else(|| de::Error::missing_field("function"))?;
                Ok(ToolCall {
                    id,
                    kind,
                    function,
                    extra_content,
                    extra,
                })
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for FunctionCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FunctionCall;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a function object with a `name`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FunctionCall, A::Error> {
                let (mut name, mut arguments, mut thought_signature) = (None, None, None);
                let mut extra: Vec<(String, RawJson)> = Vec::new();
                let mut seen = BTreeSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    first_time(&mut seen, &key)?;
                    match key.as_str() {
                        "name" => {
                            once(&name, "name")?;
                            name = Some(map.next_value::<String>()?);
                        }
                        "arguments" => {
                            once(&arguments, "arguments")?;
                            arguments = Some(map.next_value::<RawJson>()?);
                        }
                        "thought_signature" => thought_signature = text_field(&mut map)?,
                        _ => extra.push((key, map.next_value()?)),
                    }
                }
                Ok(FunctionCall {
                    name: name.ok_or_else(|| de::Error::missing_field("name"))?,
                    arguments,
                    thought_signature,
                    extra,
                })
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests;
