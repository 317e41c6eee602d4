//! Route plans for the chat-completions wire (docs/spec.md §2–§4): per assistant message, which
//! carriers and native fields go out, padded or absent, and why. The body ([`super::body`])
//! renders a per-request copy from these plans; the stored history is only borrowed, never
//! changed or deep-copied.

use std::fmt;

use hermes_core::message::{same_minter, thought_signature};
use hermes_core::{
    Carrier, CarrierCounts, CarrierSet, DetailItem, Message, PadRule, Role, RouteDecision,
    TextCarrier, Verdicts,
};

/// Why a field is absent from (or padded on) an assistant wire message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Nothing is stored.
    NotStored,
    /// The stored value is empty or white space.
    Blank,
    /// The route does not read it.
    NotRead,
    /// A recorded verdict (or `--reject`) refused it for this provider, host and model.
    Refused,
    /// A strict-schema route gets not one byte more than it reads.
    Strict,
    /// Minted by another model or on another host (origin), so its opaque data is not replayed
    /// here.
    ForeignModel,
    /// The route replays thinking only on the newest assistant turn.
    StaleTurn,
    /// `reasoning_text` travels only beside `reasoning_opaque`.
    NoOpaque,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Why::NotStored => "nothing stored",
            Why::Blank => "stored value is blank",
            Why::NotRead => "route does not read it",
            Why::Refused => "refused by a recorded verdict",
            Why::Strict => "strict-schema route",
            Why::ForeignModel => "minted by another model or host",
            Why::StaleTurn => "route replays only the newest turn's thinking",
            Why::NoOpaque => "no reasoning_opaque beside it",
        })
    }
}

/// What `reasoning_content` carries on one assistant wire message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcPlan {
    /// The stored `reasoning_content`, byte for byte.
    Stored,
    /// The stored `reasoning`, sent under the `reasoning_content` key.
    FromReasoning,
    /// The `" "` pad of a must-echo route.
    Pad(Why),
    /// Absent.
    Absent(Why),
}

/// Sent, or absent and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldPlan {
    /// Sent as stored.
    Sent,
    /// Absent.
    Absent(Why),
}

impl FieldPlan {
    /// True when the field is sent.
    pub fn sent(self) -> bool {
        self == FieldPlan::Sent
    }
}

/// What `reasoning_details` carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DetailsPlan {
    /// Absent.
    Absent(Why),
    /// These stored items (indices into the stored array), in order.
    Items {
        /// Indices of the items sent.
        kept: Vec<usize>,
        /// Opaque items left out because another model minted them.
        foreign: usize,
    },
}

/// Every decision for one assistant wire message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssistantPlan {
    /// `reasoning_content`.
    pub reasoning_content: RcPlan,
    /// `reasoning`.
    pub reasoning: FieldPlan,
    /// `reasoning_details`.
    pub reasoning_details: DetailsPlan,
    /// Message-level `extra_content` from the native record (Gemini).
    pub extra_content: FieldPlan,
    /// `reasoning_opaque` from the native record (Copilot).
    pub reasoning_opaque: FieldPlan,
    /// `reasoning_text` from the native record (Copilot).
    pub reasoning_text: FieldPlan,
    /// Tool-call `extra_content` signatures rendered (Gemini), when non-blank and own.
    pub gemini_tool_signatures: bool,
    /// Tool-call `function.thought_signature` rendered (Copilot), when non-blank and own.
    pub copilot_tool_signatures: bool,
}

/// What the route plans decided, as carrier counts: a message padded instead of its reasoning
/// is demoted; one whose opaque items or native signatures were left out because another model
/// or host minted them is dropped by provenance.
pub fn carrier_counts<'p>(plans: impl IntoIterator<Item = &'p AssistantPlan>) -> CarrierCounts {
    let mut counts = CarrierCounts::default();
    for plan in plans {
        if matches!(plan.reasoning_content, RcPlan::Pad(_)) {
            counts.demoted += 1;
        }
        let foreign = match &plan.reasoning_details {
            DetailsPlan::Items { foreign, .. } => *foreign > 0,
            DetailsPlan::Absent(why) => *why == Why::ForeignModel,
        } || [
            plan.extra_content,
            plan.reasoning_opaque,
            plan.reasoning_text,
        ]
        .contains(&FieldPlan::Absent(Why::ForeignModel));
        if foreign {
            counts.dropped_provenance += 1;
        }
    }
    counts
}

/// Everything shaping needs besides the history.
#[derive(Clone, Debug)]
pub struct ShapeContext<'d> {
    /// The resolved route.
    pub decision: &'d RouteDecision,
    /// Carriers refused for this target (verdicts and `--reject`); RC is never refused on a
    /// must-echo route.
    pub refused: CarrierSet,
}

impl<'d> ShapeContext<'d> {
    /// The context for `decision` with the verdicts recorded for its target subtracted.
    pub fn new(decision: &'d RouteDecision, verdicts: &Verdicts) -> Self {
        let mut refused = verdicts.refused_for(&decision.target);
        if decision.echo.is_some() {
            refused = CarrierSet::of(refused.iter().filter(|c| *c != Carrier::ReasoningContent));
        }
        ShapeContext { decision, refused }
    }

    /// Carriers actually sent: the route's set minus refusals.
    fn effective(&self) -> CarrierSet {
        CarrierSet::of(
            self.decision
                .carriers
                .iter()
                .filter(|c| !self.refused.contains(*c)),
        )
    }

    fn absent_why(&self, carrier: Carrier) -> Why {
        if self.decision.strict {
            Why::Strict
        } else if self.decision.carriers.contains(carrier) {
            Why::Refused
        } else {
            Why::NotRead
        }
    }

    fn origin_ok(&self, msg: &Message) -> bool {
        msg.origin
            .as_ref()
            .is_none_or(|o| same_minter(o, &self.decision.target))
    }

    /// Plans one assistant message; `newest` is true for the last assistant of the history.
    fn plan_assistant(&self, msg: &Message, newest: bool) -> AssistantPlan {
        let effective = self.effective();
        let stale = !self.decision.thinking_reaches_wire(newest);
        let origin_ok = self.origin_ok(msg);
        let native = &self.decision.native;

        let reasoning_content = if !effective.contains(Carrier::ReasoningContent) {
            RcPlan::Absent(self.absent_why(Carrier::ReasoningContent))
        } else {
            let text = if stale { None } else { msg.replayable_text() };
            match text {
                Some(t)
                    if msg
                        .reasoning_content
                        .as_ref()
                        .is_some_and(|rc| std::ptr::eq(rc, t)) =>
                {
                    RcPlan::Stored
                }
                Some(_) => RcPlan::FromReasoning,
                None => {
                    let why = if stale {
                        Why::StaleTurn
                    } else if msg.reasoning_content.is_some() || msg.reasoning.is_some() {
                        Why::Blank
                    } else {
                        Why::NotStored
                    };
                    let pads = self.decision.echo.as_ref().is_some_and(|e| match e.pad {
                        PadRule::EveryAssistant => true,
                        PadRule::ToolCallTurns => {
                            msg.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
                        }
                    });
                    if pads {
                        RcPlan::Pad(why)
                    } else {
                        RcPlan::Absent(why)
                    }
                }
            }
        };

        let reasoning = if !effective.contains(Carrier::Reasoning) {
            FieldPlan::Absent(self.absent_why(Carrier::Reasoning))
        } else {
            text_plan(msg.reasoning.as_ref(), stale)
        };

        let reasoning_details = if !effective.contains(Carrier::ReasoningDetails) {
            DetailsPlan::Absent(self.absent_why(Carrier::ReasoningDetails))
        } else {
            let items = msg.reasoning_details.as_deref().unwrap_or_default();
            let mut kept = Vec::new();
            let mut foreign = 0;
            for (i, item) in items.iter().enumerate() {
                match item {
                    DetailItem::Native { .. } => {}
                    // Rendered only by the Anthropic and Bedrock codecs (docs/spec.md §2).
                    DetailItem::Provider { .. } if item.is_anthropic_shaped() => {}
                    DetailItem::Provider { opaque: true, .. } if !origin_ok => foreign += 1,
                    DetailItem::Provider { .. } => kept.push(i),
                }
            }
            if kept.is_empty() {
                DetailsPlan::Absent(if foreign > 0 {
                    Why::ForeignModel
                } else {
                    Why::NotStored
                })
            } else {
                DetailsPlan::Items { kept, foreign }
            }
        };

        let record = msg.native_record();
        let extra_content = native_plan(
            native.gemini_message_signature,
            origin_ok,
            record
                .and_then(|r| r.extra_content.as_ref())
                .map(|raw| thought_signature(raw).is_some()),
        );
        let reasoning_opaque = native_plan(
            native.copilot,
            origin_ok,
            record
                .and_then(|r| r.reasoning_opaque.as_ref())
                .map(|c| !c.is_blank()),
        );
        let reasoning_text = match native_plan(
            native.copilot,
            origin_ok,
            record
                .and_then(|r| r.reasoning_text.as_ref())
                .map(|c| !c.text().is_empty()),
        ) {
            FieldPlan::Sent if !reasoning_opaque.sent() => FieldPlan::Absent(Why::NoOpaque),
            plan => plan,
        };

        AssistantPlan {
            reasoning_content,
            reasoning,
            reasoning_details,
            extra_content,
            reasoning_opaque,
            reasoning_text,
            gemini_tool_signatures: native.gemini_tool_signatures && origin_ok,
            copilot_tool_signatures: native.copilot && origin_ok,
        }
    }

    /// The plan of every message of `history`, in order (`None` for non-assistant messages);
    /// each decision is logged as a debug event. A wire renders its copy from these.
    pub fn plans(&self, history: &[Message]) -> Vec<Option<AssistantPlan>> {
        let newest = newest_assistant(history);
        let debug = tracing::enabled!(tracing::Level::DEBUG);
        history
            .iter()
            .enumerate()
            .map(|(i, msg)| {
                if msg.role != Role::Assistant {
                    return None;
                }
                let plan = self.plan_assistant(msg, Some(i) == newest);
                if debug {
                    tracing::debug!(
                        index = i,
                        route = self.decision.id(),
                        carriers = %Explained(&plan, msg),
                        "assistant wire message shaped"
                    );
                }
                Some(plan)
            })
            .collect()
    }

    /// One line per assistant message saying why each carrier is present, padded or absent,
    /// and one per message whose stored keys no wire knows (kept in storage, never sent).
    pub fn explain(&self, history: &[Message]) -> Vec<String> {
        let newest = newest_assistant(history);
        history
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let left_out = LeftOut(m);
                if m.role == Role::Assistant {
                    let plan = self.plan_assistant(m, Some(i) == newest);
                    Some(format!(
                        "messages[{i}] assistant: {}{left_out}",
                        Explained(&plan, m)
                    ))
                } else if left_out.any() {
                    Some(format!(
                        "messages[{i}] {}: {}",
                        m.role,
                        left_out.to_string().trim_start_matches("; ")
                    ))
                } else {
                    None
                }
            })
            .collect()
    }
}

/// The stored keys of a message that no chat-completions wire sends (docs/spec.md §2): unknown
/// keys, `name` on a tool result, and unknown keys of its tool calls.
struct LeftOut<'m>(&'m Message);

impl LeftOut<'_> {
    fn any(&self) -> bool {
        let m = self.0;
        !m.extra.is_empty()
            || (m.role == Role::Tool && m.name.is_some())
            || m.tool_calls
                .iter()
                .flatten()
                .any(|c| !c.extra.is_empty() || !c.function.extra.is_empty())
    }
}

impl fmt::Display for LeftOut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.any() {
            return Ok(());
        }
        let m = self.0;
        let mut names: Vec<&str> = m.extra.iter().map(|(k, _)| k.as_str()).collect();
        if m.role == Role::Tool && m.name.is_some() {
            names.push("name");
        }
        for call in m.tool_calls.iter().flatten() {
            names.extend(call.extra.iter().map(|(k, _)| k.as_str()));
            names.extend(call.function.extra.iter().map(|(k, _)| k.as_str()));
        }
        names.dedup();
        write!(
            f,
            "; left out (stored, no wire sends them): {}",
            names.join(", ")
        )
    }
}

/// The index of the newest assistant message of `history`: the one turn whose readable thinking
/// reaches the wire on a route that does not replay stale thinking.
fn newest_assistant(history: &[Message]) -> Option<usize> {
    history.iter().rposition(|m| m.role == Role::Assistant)
}

fn text_plan(carrier: Option<&TextCarrier>, stale: bool) -> FieldPlan {
    match carrier {
        None => FieldPlan::Absent(Why::NotStored),
        Some(c) if c.is_blank() => FieldPlan::Absent(Why::Blank),
        Some(_) if stale => FieldPlan::Absent(Why::StaleTurn),
        Some(_) => FieldPlan::Sent,
    }
}

/// `present`: `None` when not stored, `Some(false)` when blank.
fn native_plan(rendered: bool, origin_ok: bool, present: Option<bool>) -> FieldPlan {
    match present {
        None => FieldPlan::Absent(Why::NotStored),
        Some(_) if !rendered => FieldPlan::Absent(Why::NotRead),
        Some(false) => FieldPlan::Absent(Why::Blank),
        Some(true) if !origin_ok => FieldPlan::Absent(Why::ForeignModel),
        Some(true) => FieldPlan::Sent,
    }
}

/// Renders a plan (for its message) as the `--explain` text.
struct Explained<'p>(&'p AssistantPlan, &'p Message);

impl Explained<'_> {
    /// Why an absent field is absent; a foreign item names who minted it.
    fn why(&self, why: Why) -> String {
        match (why, &self.1.origin) {
            (Why::ForeignModel, Some(o)) => format!("minted by {} on {}", o.model, o.host),
            _ => why.to_string(),
        }
    }
}

impl fmt::Display for Explained<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        match p.reasoning_content {
            RcPlan::Stored => write!(f, "reasoning_content sent (stored)"),
            RcPlan::FromReasoning => write!(
                f,
                "reasoning_content sent (stored `reasoning` replayed as reasoning_content)"
            ),
            RcPlan::Pad(why) => write!(f, "reasoning_content padded with \" \" (must-echo; {why})"),
            RcPlan::Absent(why) => write!(f, "reasoning_content absent ({why})"),
        }?;
        match p.reasoning {
            FieldPlan::Sent => write!(f, "; reasoning sent"),
            FieldPlan::Absent(why) => write!(f, "; reasoning absent ({why})"),
        }?;
        match &p.reasoning_details {
            DetailsPlan::Items { kept, foreign: 0 } => {
                write!(f, "; reasoning_details sent ({} items)", kept.len())
            }
            DetailsPlan::Items { kept, foreign } => write!(
                f,
                "; reasoning_details sent ({} items, {foreign} opaque items left out: {})",
                kept.len(),
                self.why(Why::ForeignModel)
            ),
            DetailsPlan::Absent(why) => {
                write!(f, "; reasoning_details absent ({})", self.why(*why))
            }
        }?;
        for (name, plan) in [
            ("extra_content", p.extra_content),
            ("reasoning_opaque", p.reasoning_opaque),
            ("reasoning_text", p.reasoning_text),
        ] {
            match plan {
                FieldPlan::Sent => write!(f, "; {name} sent (native record)")?,
                FieldPlan::Absent(Why::NotStored) => {}
                FieldPlan::Absent(why) => write!(f, "; {name} absent ({})", self.why(why))?,
            }
        }
        Ok(())
    }
}
