//! Reply blocks into one canonical assistant message (docs/spec.md §2, §5), for both Claude wires.
//!
//! Text blocks become the `content` (a string for one block, an array of text parts for
//! several), tool calls the `tool_calls`, thinking and redacted blocks Anthropic-shaped
//! `reasoning_details` items in received order, and the thinking texts `reasoning_content`
//! (joined with a blank line, "Readable text always travels"). The kind of every block is
//! recorded under [`BLOCK_ORDER_KEY`] so the turn is rebuilt as received; a turn with neither
//! text nor a tool call is marked [`NOT_REPLAYED_KEY`].

use serde::Serialize;

use hermes_core::OnDelta;
use hermes_core::message::{BLOCK_ORDER_KEY, NOT_REPLAYED_KEY};
use hermes_core::transport::Delta;
use hermes_core::{
    DetailItem, FinishReason, Message, Origin, RawJson, ReplyMeta, Role, TextCarrier, ToolCall,
    Usage,
};

pub(crate) use hermes_providers::native::reply::{CaptureError, Captured, malformed};

/// One content block, resolved: what the message is built from.
pub enum Block {
    /// A text block: its text as a JSON string literal.
    Text(RawJson),
    /// A thinking block: the stored item and its readable text.
    Thinking {
        /// The Anthropic-shaped item, as stored.
        item: RawJson,
        /// The thinking text.
        text: String,
    },
    /// A redacted thinking block, as stored.
    Redacted(RawJson),
    /// A tool call: its id, name and input (JSON text).
    ToolUse {
        /// The call id.
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The input object's JSON text.
        input: String,
    },
    /// A provider's `compaction` block (docs/spec.md §7), as stored: byte for byte as received in a
    /// whole reply, rebuilt from its start event and `compaction_delta`s when streamed.
    Compaction(RawJson),
    /// Any other block: only its kind is kept.
    Other(String),
}

impl Block {
    /// The block's kind as [`BLOCK_ORDER_KEY`] records it (the Anthropic Messages names).
    pub fn kind(&self) -> &str {
        match self {
            Block::Text(_) => "text",
            Block::Thinking { .. } => "thinking",
            Block::Redacted(_) => "redacted_thinking",
            Block::ToolUse { .. } => "tool_use",
            Block::Compaction(_) => hermes_core::checkpoint::COMPACTION_TYPE,
            Block::Other(kind) => kind,
        }
    }

    /// A thinking block from its text and signature, stored as the Messages API writes it:
    /// `{"type":"thinking","thinking":…,"signature":…}`.
    pub fn thinking(text: String, signature: Option<&str>) -> Result<Block, CaptureError> {
        let item = RawJson::from_serialize(&ThinkingItem {
            kind: "thinking",
            thinking: &text,
            signature,
        })
        .map_err(malformed)?;
        Ok(Block::Thinking { item, text })
    }

    /// A redacted block from its data, stored as `{"type":"redacted_thinking","data":…}`.
    pub fn redacted(data: &str) -> Result<Block, CaptureError> {
        RawJson::from_serialize(&RedactedItem {
            kind: "redacted_thinking",
            data,
        })
        .map(Block::Redacted)
        .map_err(malformed)
    }
}

/// A block being streamed, on either wire: what its events have carried so far.
pub enum Acc {
    /// Text, its pieces joined.
    Text(String),
    /// Thinking: its text pieces joined, and its signature.
    Thinking {
        /// The text so far.
        text: String,
        /// The signature, once one came.
        signature: Option<String>,
    },
    /// A tool call: its id, name and input pieces joined.
    ToolUse {
        /// The call id.
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The input's JSON text so far.
        input: String,
    },
    /// Redacted data, its pieces joined (Converse `redactedContent`).
    Redacted(String),
    /// A `compaction` block: its start event's block (JSON text, its other members kept),
    /// and the `content` and `encrypted_content` pieces of its `compaction_delta`s, each joined
    /// in order after the start's own value.
    Compaction {
        /// The block as its `content_block_start` wrote it.
        start: String,
        /// `content` so far.
        content: String,
        /// `encrypted_content` so far.
        encrypted: String,
    },
    /// A block that arrives whole in its start event (Messages: `redacted_thinking`, its bytes
    /// as received, or a kind the capture does not know).
    Whole(Block),
}

/// The streamed blocks of a Claude capture (Messages or Converse), each with its block index.
pub type Blocks = [(Option<u64>, Acc)];

/// The tool call `blocks[position]` is, counted from 0 among the reply's `tool_use` blocks:
/// the `index` of its [`Delta::ToolCall`] fragments.
pub fn call_ordinal(blocks: &Blocks, position: usize) -> usize {
    blocks[..position.min(blocks.len())]
        .iter()
        .filter(|(_, acc)| matches!(acc, Acc::ToolUse { .. }))
        .count()
}

/// Reports the first fragment of the tool call just pushed as the last block (its id and
/// name, no arguments yet).
pub fn open_call(blocks: &Blocks, on_delta: OnDelta<'_>) {
    let position = blocks.len().saturating_sub(1);
    if let Some((_, Acc::ToolUse { id, name, .. })) = blocks.get(position) {
        on_delta(Delta::ToolCall {
            index: call_ordinal(blocks, position),
            id: id.as_deref(),
            name: Some(name.as_str()),
            arguments: "",
        });
    }
}

/// At the stop of block `index`: a tool call that received no input pieces is captured with
/// `{}` ([`Acc::resolve`]), so `{}` is reported as its last fragment, and its fragments join
/// to the captured arguments.
pub fn close_call(blocks: &Blocks, index: Option<u64>, on_delta: OnDelta<'_>) {
    let position = match index {
        Some(_) => blocks.iter().rposition(|(i, _)| *i == index),
        None => blocks.len().checked_sub(1),
    };
    if let Some(p) = position
        && let Some((_, Acc::ToolUse { input, .. })) = blocks.get(p)
        && input.trim().is_empty()
    {
        on_delta(Delta::ToolCall {
            index: call_ordinal(blocks, p),
            id: None,
            name: None,
            arguments: "{}",
        });
    }
}

impl Acc {
    /// The kind of block this becomes, as [`Block::kind`] names it.
    pub fn kind(&self) -> &str {
        match self {
            Acc::Text(_) => "text",
            Acc::Thinking { .. } => "thinking",
            Acc::ToolUse { .. } => "tool_use",
            Acc::Redacted(_) => "redacted_thinking",
            Acc::Compaction { .. } => hermes_core::checkpoint::COMPACTION_TYPE,
            Acc::Whole(block) => block.kind(),
        }
    }

    /// The block streamed: a tool call with no input pieces has `{}`.
    pub fn resolve(self) -> Result<Block, CaptureError> {
        Ok(match self {
            Acc::Text(text) => Block::Text(RawJson::string(&text)),
            Acc::Thinking { text, signature } => Block::thinking(text, signature.as_deref())?,
            Acc::ToolUse { id, name, input } => Block::ToolUse {
                id,
                name,
                input: if input.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    input
                },
            },
            Acc::Redacted(data) => Block::redacted(&data)?,
            Acc::Compaction {
                start,
                content,
                encrypted,
            } => Block::Compaction(compaction_block(&start, &content, &encrypted)?),
            Acc::Whole(block) => block,
        })
    }
}

/// A streamed `compaction` block: the start event's block with `content` and
/// `encrypted_content` set to their accumulated text (each member in the place the start gave
/// it; the two added after the others when the start had none).
fn compaction_block(start: &str, content: &str, encrypted: &str) -> Result<RawJson, CaptureError> {
    let mut block: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(start).map_err(|e| malformed(format!("`compaction` block: {e}")))?;
    for (key, text) in [("content", content), ("encrypted_content", encrypted)] {
        block.insert(key.to_owned(), serde_json::Value::String(text.to_owned()));
    }
    RawJson::from_serialize(&block).map_err(malformed)
}

/// The error of a stream that ended before its `last` event, after `seen` `unit` (e.g. "12
/// events"): a half turn is never a message.
pub fn half_turn(last: &str, seen: usize, unit: &str) -> CaptureError {
    malformed(format!(
        "the stream ended before `{last}` (after {seen} {unit}); the half turn is not stored"
    ))
}

/// A text part of an array `content`.
#[derive(Serialize)]
struct TextPart {
    #[serde(rename = "type")]
    kind: &'static str,
    text: RawJson,
}

/// A thinking block as stored, in the Messages API's key order.
#[derive(Serialize)]
struct ThinkingItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    thinking: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
}

/// A redacted block as stored.
#[derive(Serialize)]
struct RedactedItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    data: &'a str,
}

/// A reply's `role`, when it names one, must be `assistant`.
pub fn assistant_role(role: Option<&str>) -> Result<(), CaptureError> {
    match role.filter(|r| *r != "assistant") {
        Some(role) => Err(malformed(format!(
            "reply `role` is {role}, expected assistant"
        ))),
        None => Ok(()),
    }
}

/// The captured message of a whole reply's `content` (each block read by `read` from its
/// index and bytes) with `origin`, and the reply's finish reason and usage.
pub fn whole(
    content: Vec<&serde_json::value::RawValue>,
    read: fn(usize, &serde_json::value::RawValue) -> Result<Block, CaptureError>,
    origin: Origin,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
) -> Captured {
    let blocks = content.into_iter().enumerate().map(|(i, raw)| read(i, raw));
    Ok((build(blocks, origin)?, ReplyMeta::new(finish, usage)))
}

/// The captured message of a finished stream's `blocks` with `origin`, and the reply's finish
/// reason and usage.
pub fn streamed<K>(
    blocks: Vec<(K, Acc)>,
    origin: Origin,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
) -> Captured {
    let blocks = blocks.into_iter().map(|(_, acc)| acc.resolve());
    Ok((build(blocks, origin)?, ReplyMeta::new(finish, usage)))
}

/// Builds the captured assistant message from its content blocks as they resolve, in received
/// order; the first block that does not resolve is the error.
pub fn build(
    blocks: impl IntoIterator<Item = Result<Block, CaptureError>>,
    origin: Origin,
) -> Result<Message, CaptureError> {
    let blocks = blocks.into_iter().collect::<Result<Vec<_>, _>>()?;
    let order: Vec<String> = blocks.iter().map(|b| b.kind().to_owned()).collect();
    let mut texts = Vec::new();
    let mut thinking = Vec::new();
    let mut items = Vec::new();
    let mut calls = Vec::new();
    let mut compaction = false;
    for block in blocks {
        match block {
            Block::Text(text) => texts.push(text),
            Block::Thinking { item, text } => {
                if !text.is_empty() {
                    thinking.push(text);
                }
                items.push(DetailItem::from_raw(item).map_err(malformed)?);
            }
            Block::Redacted(item) => items.push(DetailItem::from_raw(item).map_err(malformed)?),
            Block::Compaction(item) => {
                compaction = true;
                items.push(DetailItem::from_raw(item).map_err(malformed)?);
            }
            Block::ToolUse { id, name, input } => {
                let mut call = ToolCall::function(id.as_deref().unwrap_or_default(), &name, &input);
                call.id = id;
                calls.push(call);
            }
            Block::Other(_) => {}
        }
    }
    let mut msg = Message::text(Role::Assistant, "");
    let has_text = !texts.is_empty();
    msg.content = Some(match texts.len() {
        0 => RawJson::null(),
        1 => texts.swap_remove(0),
        _ => {
            let parts: Vec<TextPart> = texts
                .into_iter()
                .map(|text| TextPart { kind: "text", text })
                .collect();
            RawJson::from_serialize(&parts).map_err(malformed)?
        }
    });
    msg.reasoning_content =
        (!thinking.is_empty()).then(|| TextCarrier::new(&thinking.join("\n\n")));
    msg.reasoning_details = (!items.is_empty()).then_some(items);
    let has_calls = !calls.is_empty();
    msg.tool_calls = has_calls.then_some(calls);
    if !order.is_empty() {
        msg.extra.push((
            BLOCK_ORDER_KEY.to_owned(),
            RawJson::from_serialize(&order).map_err(malformed)?,
        ));
    }
    // A provider's checkpoint is replayed (in place of what it summarised), never kept for
    // the record only.
    if !has_text && !has_calls && !compaction {
        msg.extra.push((
            NOT_REPLAYED_KEY.to_owned(),
            RawJson::from_serialize(&true).map_err(malformed)?,
        ));
    }
    msg.origin = Some(origin);
    Ok(msg)
}

/// An Anthropic-shaped `reasoning_details` item, read: thinking with its text and signature,
/// or a redacted block's data (both Claude wires and the Messages door's history reader use
/// this one reader). Each string is the JSON string literal as stored (quotes included, and
/// one that reads as a Rust string), borrowed from the item: a wire that writes it again
/// copies it without decoding it.
pub enum StoredLiterals<'a> {
    /// A `thinking` block: its text (`""` when it has none) and its signature.
    Thinking {
        /// The text, as a JSON string literal.
        text: &'a str,
        /// The signature, as a JSON string literal, when it has one.
        signature: Option<&'a str>,
    },
    /// A `redacted_thinking` block's data.
    Redacted(&'a str),
}

/// Reads `item` when it is an Anthropic-shaped `thinking` or `redacted_thinking` block whose
/// `type`, `thinking`, `signature` and `data` are strings (or null) that read as Rust strings.
pub fn read_literals(item: &DetailItem) -> Option<StoredLiterals<'_>> {
    let DetailItem::Provider { raw, .. } = item else {
        return None;
    };
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        thinking: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        signature: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        data: Option<&'a serde_json::value::RawValue>,
    }
    let probe: Probe<'_> = serde_json::from_str(raw.get()).ok()?;
    // Each field present must be a string a Rust string can hold: what reading it as a
    // `String` would check.
    let mut fields = [probe.kind, probe.thinking, probe.signature, probe.data]
        .map(|field| field.map(|v| v.get()));
    if fields
        .iter()
        .flatten()
        .any(|text| !text.starts_with('"') || hermes_core::raw::has_lone_surrogate(text))
    {
        return None;
    }
    let [kind, thinking, signature, data] = &mut fields;
    let kind: std::borrow::Cow<'_, str> = serde_json::from_str(kind.take()?).ok()?;
    match &*kind {
        "thinking" => Some(StoredLiterals::Thinking {
            text: thinking.take().unwrap_or("\"\""),
            signature: signature.take(),
        }),
        "redacted_thinking" => data.take().map(StoredLiterals::Redacted),
        _ => None,
    }
}
