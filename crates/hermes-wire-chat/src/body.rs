//! The chat-completions body: the per-request wire copy of the history rendered from the
//! route plans ([`super::plan`]) (docs/spec.md §2–§4) — only the keys the schema knows, in stored key order, carriers
//! as stored — and the request around it. The stored history is only borrowed.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use hermes_core::message::{Key, Slot, thought_signature};
use hermes_core::{
    Carrier, CarrierSet, DetailItem, Message, NativeRecord, PAD, RawJson, Role, RouteDecision,
    TextCarrier, ThinkingFields, ThinkingRequest, ToolCall, Verdicts,
};

use super::plan::{AssistantPlan, DetailsPlan, RcPlan, ShapeContext};

/// One message of the wire copy: a view of a stored message plus the decisions for it.
#[derive(Clone, Debug)]
pub struct WireMessage<'a> {
    msg: &'a Message,
    plan: Option<AssistantPlan>,
}

/// The wire copy of `history` for `ctx`'s route: per message only the keys the chat-completions
/// schema knows (docs/spec.md §2), in the order they were stored.
pub fn shape<'a>(ctx: &ShapeContext<'_>, history: &'a [Message]) -> Vec<WireMessage<'a>> {
    history
        .iter()
        .zip(ctx.plans(history))
        .map(|(msg, plan)| WireMessage { msg, plan })
        .collect()
}

impl<'a> WireMessage<'a> {
    /// The stored message this view renders.
    pub fn stored(&self) -> &'a Message {
        self.msg
    }

    /// The decisions, for an assistant message.
    pub fn plan(&self) -> Option<&AssistantPlan> {
        self.plan.as_ref()
    }
}

impl Serialize for WireMessage<'_> {
    /// The allow-list of docs/spec.md §2: `role`, `content`, `name` (not on tool results),
    /// non-empty `tool_calls`, `tool_call_id`, the carriers the plan sends and the route's native
    /// fields — in stored key order. Nothing else a message stores is ever sent.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.msg;
        let mut map = serializer.serialize_map(None)?;
        for slot in m.key_walk() {
            let Slot::Known(key) = slot else { continue };
            match key {
                Key::Role => map.serialize_entry("role", m.role.as_str())?,
                Key::Content => {
                    // Chat completions has no error marker: a failed result says so in its text.
                    if let Some(text) = m.tool_error_text() {
                        map.serialize_entry("content", &text)?;
                    } else if let Some(v) = &m.content {
                        map.serialize_entry("content", v)?;
                    }
                }

                Key::ToolCallId => {
                    if let Some(v) = &m.tool_call_id {
                        map.serialize_entry("tool_call_id", v)?;
                    }
                }
                Key::Name => {
                    if m.role != Role::Tool
                        && let Some(v) = &m.name
                    {
                        map.serialize_entry("name", v)?;
                    }
                }
                Key::ReasoningContent | Key::Reasoning | Key::ReasoningDetails | Key::ToolCalls => {
                    if let Some(plan) = &self.plan {
                        assistant_field(&mut map, m, plan, key)?;
                    }
                }
                Key::Extra => {}
            }
        }
        map.end()
    }
}

/// Writes one assistant-only key as `plan` decides (the native record's fields travel in the
/// `reasoning_details` slot).
fn assistant_field<M: SerializeMap>(
    map: &mut M,
    m: &Message,
    plan: &AssistantPlan,
    key: Key,
) -> Result<(), M::Error> {
    match key {
        Key::ReasoningContent => match plan.reasoning_content {
            RcPlan::Stored => {
                if let Some(rc) = &m.reasoning_content {
                    map.serialize_entry("reasoning_content", rc)?;
                }
            }
            RcPlan::FromReasoning => {
                if let Some(r) = &m.reasoning {
                    map.serialize_entry("reasoning_content", r)?;
                }
            }
            RcPlan::Pad(_) => map.serialize_entry("reasoning_content", PAD)?,
            RcPlan::Absent(_) => {}
        },
        Key::Reasoning => {
            if plan.reasoning.sent()
                && let Some(r) = &m.reasoning
            {
                map.serialize_entry("reasoning", r)?;
            }
        }
        Key::ReasoningDetails => {
            if let (DetailsPlan::Items { kept, .. }, Some(items)) =
                (&plan.reasoning_details, &m.reasoning_details)
            {
                map.serialize_entry("reasoning_details", &KeptItems { items, kept })?;
            }
            let record = m.native_record();
            let native = |field: fn(&NativeRecord) -> Option<&RawJson>| record.and_then(field);
            if plan.reasoning_opaque.sent()
                && let Some(v) = native(|r| r.reasoning_opaque.as_ref().map(TextCarrier::raw))
            {
                map.serialize_entry("reasoning_opaque", v)?;
            }
            if plan.reasoning_text.sent()
                && let Some(v) = native(|r| r.reasoning_text.as_ref().map(TextCarrier::raw))
            {
                map.serialize_entry("reasoning_text", v)?;
            }
            if plan.extra_content.sent()
                && let Some(v) = native(|r| r.extra_content.as_ref())
            {
                map.serialize_entry("extra_content", v)?;
            }
        }
        Key::ToolCalls => {
            if let Some(calls) = m.tool_calls.as_ref().filter(|c| !c.is_empty()) {
                map.serialize_entry(
                    "tool_calls",
                    &WireToolCalls {
                        calls,
                        gemini: plan.gemini_tool_signatures,
                        copilot: plan.copilot_tool_signatures,
                    },
                )?;
            }
        }
        Key::Role | Key::Content | Key::ToolCallId | Key::Name | Key::Extra => {}
    }
    Ok(())
}

struct KeptItems<'a> {
    items: &'a [DetailItem],
    kept: &'a [usize],
}

impl Serialize for KeptItems<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.kept.iter().filter_map(|i| self.items.get(*i)))
    }
}

struct WireToolCalls<'a> {
    calls: &'a [ToolCall],
    gemini: bool,
    copilot: bool,
}

impl Serialize for WireToolCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.calls
                .iter()
                .map(|call| WireToolCall { call, calls: self }),
        )
    }
}

struct WireToolCall<'a> {
    call: &'a ToolCall,
    calls: &'a WireToolCalls<'a>,
}

impl Serialize for WireToolCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.call;
        let opts = self.calls;
        let mut map = serializer.serialize_map(None)?;
        if let Some(id) = &c.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(kind) = &c.kind {
            map.serialize_entry("type", kind)?;
        }
        map.serialize_entry(
            "function",
            &WireFunction {
                call: c,
                signature: opts.copilot
                    && c.function
                        .thought_signature
                        .as_ref()
                        .is_some_and(|s| !s.is_blank()),
            },
        )?;
        if opts.gemini
            && let Some(raw) = c
                .extra_content
                .as_ref()
                .filter(|raw| thought_signature(raw).is_some())
        {
            map.serialize_entry("extra_content", raw)?;
        }
        map.end()
    }
}

struct WireFunction<'a> {
    call: &'a ToolCall,
    signature: bool,
}

impl Serialize for WireFunction<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = &self.call.function;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &f.name)?;
        if let Some(v) = &f.arguments {
            map.serialize_entry("arguments", v)?;
        }
        if self.signature
            && let Some(v) = &f.thought_signature
        {
            map.serialize_entry("thought_signature", v)?;
        }
        map.end()
    }
}

/// The body of a chat-completions request: model, shaped messages, then the route's thinking
/// fields, in that order.
#[derive(Clone, Debug)]
pub struct ChatRequest<'a> {
    /// Target model.
    pub model: &'a str,
    /// The wire copy of the history.
    pub messages: Vec<WireMessage<'a>>,
    /// Ask for a server-sent-event stream (`"stream": true`).
    pub stream: bool,
    /// With `stream`, ask for the reply's usage (`"stream_options": {"include_usage": true}`,
    /// written right after `stream`); see `hermes_providers::native::sampling::stream_usage`.
    pub stream_usage: bool,
    /// Tool definitions (`tools`), as the JSON array the wire takes.
    pub tools: Option<&'a RawJson>,
    /// Sampling parameters in the route's spelling
    /// (`hermes_providers::native::sampling::chat_fields`), written after `tools`.
    pub sampling: Vec<(&'static str, serde_json::Value)>,
    /// Keep-thinking flags and effort.
    pub thinking: ThinkingFields,
}

impl<'a> ChatRequest<'a> {
    /// Builds the body for `history` on `decision`, with `verdicts` subtracted.
    pub fn build(
        history: &'a [Message],
        decision: &'a RouteDecision,
        verdicts: &Verdicts,
        thinking: ThinkingRequest,
    ) -> Self {
        let ctx = ShapeContext::new(decision, verdicts);
        ChatRequest {
            model: &decision.target.model,
            messages: shape(&ctx, history),
            stream: false,
            stream_usage: false,
            tools: None,
            sampling: Vec::new(),
            thinking: decision.route.thinking_fields(&decision.target, thinking),
        }
    }
}

impl ChatRequest<'_> {
    /// The carriers actually present on at least one assistant wire message (the pad counts as
    /// `reasoning_content`): what a refusal can name (docs/spec.md §6).
    pub fn sent_carriers(&self) -> CarrierSet {
        self.messages
            .iter()
            .filter_map(|m| m.plan.as_ref())
            .fold(CarrierSet::NONE, |acc, plan| {
                let mut acc = acc;
                if !matches!(plan.reasoning_content, RcPlan::Absent(_)) {
                    acc = acc.with(Carrier::ReasoningContent);
                }
                if plan.reasoning.sent() {
                    acc = acc.with(Carrier::Reasoning);
                }
                if matches!(plan.reasoning_details, DetailsPlan::Items { .. }) {
                    acc = acc.with(Carrier::ReasoningDetails);
                }
                acc
            })
    }
}

/// `stream_options` as OpenAI's chat completions take it.
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl Serialize for ChatRequest<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("messages", &self.messages)?;
        if self.stream {
            map.serialize_entry("stream", &true)?;
            if self.stream_usage {
                map.serialize_entry(
                    "stream_options",
                    &StreamOptions {
                        include_usage: true,
                    },
                )?;
            }
        }
        if let Some(tools) = self.tools {
            map.serialize_entry("tools", tools)?;
        }
        for (k, v) in &self.sampling {
            map.serialize_entry(k, v)?;
        }
        for (k, v) in &self.thinking {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
