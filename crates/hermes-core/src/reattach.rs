//! A gateway client's whole history lined up with a stored session (SPEC §10, "What is
//! re-attached" and "What is stored"): how far it shares the stored active view, which of its
//! assistant messages get their stored carriers back, and which messages are new. Pure: the
//! engine runs it on what the store holds, and the conformance suite runs it through every
//! route's shaping.

use std::collections::HashMap;

use crate::message::{Message, Role};
use crate::normal::{NormalForm, normal_form};
use crate::route::{Carrier, CarrierSet};
use crate::tally::CarrierCounts;

/// A client's history lined up with a stored session's active view.
#[derive(Debug)]
pub struct Alignment {
    /// What goes upstream: the client's messages as sent (its trimmed tool outputs, its system
    /// prompt), every assistant message equal to a stored one replaced by the stored one (its
    /// carriers), every other assistant message [`untrusted`].
    pub history: Vec<Message>,
    /// How many leading messages the client's history shares with the stored view (system
    /// messages are not part of matching: two system messages count as the same).
    pub shared: usize,
    /// The client's assistant messages by what happened to their carriers: re-attached from
    /// the store, passed through as the client sent them, or missing (`demoted` and
    /// `dropped_provenance` are the wire's to count).
    pub counts: CarrierCounts,
}

/// Lines `incoming` up with `stored` (a stored session's active view; empty for a new one).
pub fn align(stored: &[Message], incoming: &[Message]) -> Alignment {
    let forms: Vec<NormalForm> = stored.iter().map(normal_form).collect();
    let incoming_forms: Vec<NormalForm> = incoming.iter().map(normal_form).collect();
    let shared = stored
        .iter()
        .zip(incoming)
        .zip(forms.iter().zip(&incoming_forms))
        .take_while(|((s, i), (sf, inf))| {
            (s.role == Role::System && i.role == Role::System) || sf == inf
        })
        .count();
    let by_form: HashMap<&NormalForm, &Message> = stored
        .iter()
        .zip(&forms)
        .filter(|(m, _)| m.role == Role::Assistant)
        .map(|(m, f)| (f, m))
        .collect();
    let mut counts = CarrierCounts::default();
    let history = incoming
        .iter()
        .zip(&incoming_forms)
        .map(|(m, form)| match m.role {
            Role::Assistant => match by_form.get(form) {
                Some(stored) => {
                    if holds_carriers(stored) {
                        counts.reattached += 1;
                    }
                    (*stored).clone()
                }
                None => {
                    if holds_carriers(m) {
                        counts.passed_through += 1;
                    } else {
                        counts.missing += 1;
                    }
                    untrusted(m)
                }
            },
            _ => untrusted(m),
        })
        .collect();
    Alignment {
        history,
        shared,
        counts,
    }
}

/// Whether an assistant message holds any carrier: readable reasoning, `reasoning_details`
/// items, the native record, or a tool call's signature (`extra_content`).
fn holds_carriers(message: &Message) -> bool {
    message.reasoning_content.is_some()
        || message.reasoning.is_some()
        || message
            .reasoning_details
            .as_ref()
            .is_some_and(|d| !d.is_empty())
        || message.native_record().is_some()
        || message
            .tool_calls
            .iter()
            .flatten()
            .any(|c| c.extra_content.is_some())
}

/// A message as a client sent it, stripped of everything only hermes may write: the origin
/// (which decides where carriers may be replayed) and hermes' private keys. Its carriers stay:
/// they go upstream as a plain proxy would pass them, with no origin, so no route treats them
/// as minted by the target.
pub fn untrusted(message: &Message) -> Message {
    let mut message = message.clone();
    message.origin = None;
    message
        .extra
        .retain(|(key, _)| !key.starts_with("hermes_") && !key.starts_with('_'));
    message
}

/// The carriers that assistant messages of `history` hold with no origin: a client's own,
/// unverified bytes (a message the store holds gets its stored carriers and origin back; every
/// other one is [`untrusted`]). A refusal of one of these fields is the session's verdict only,
/// never the fleet's (SPEC §10, "What is re-attached").
pub fn unverified_carriers(history: &[Message]) -> CarrierSet {
    history
        .iter()
        .filter(|m| m.role == Role::Assistant && m.origin.is_none())
        .fold(CarrierSet::NONE, |set, m| {
            let mut set = set;
            if m.reasoning_content.is_some() {
                set = set.with(Carrier::ReasoningContent);
            }
            if m.reasoning.is_some() {
                set = set.with(Carrier::Reasoning);
            }
            if m.reasoning_details.as_ref().is_some_and(|d| !d.is_empty()) {
                set = set.with(Carrier::ReasoningDetails);
            }
            set
        })
}

/// Where the turn's input starts in `history`: after its last assistant message (the input is
/// the user turn or the tool results that follow it); `None` when the history ends with an
/// assistant message (nothing to answer).
pub fn input_start(history: &[Message]) -> Option<usize> {
    let start = history
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    (start < history.len()).then_some(start)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::message::{Message, Role};

    use super::{align, input_start, unverified_carriers};
    use crate::message::Origin;
    use crate::route::{Carrier, CarrierSet};

    fn messages(value: serde_json::Value) -> Vec<Message> {
        serde_json::from_value(value).unwrap()
    }

    fn stored() -> Vec<Message> {
        messages(json!([
            {"role": "system", "content": "You are terse. Today is Monday."},
            {"role": "user", "content": "time?"},
            {"role": "assistant", "content": null, "reasoning_content": "call the clock",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{\"tz\": \"UTC\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "12:00:00.000 UTC, a long tool output"},
            {"role": "assistant", "content": "It is noon.", "reasoning_content": "read it"}
        ]))
    }

    #[test]
    fn alignment_counts_reattached_passed_through_and_missing_carriers() {
        let stored = stored();
        let incoming = messages(json!([
            {"role": "user", "content": "time?"},
            // Equal to a stored message: its carriers come back.
            {"role": "assistant", "content": null,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{\"tz\":\"UTC\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "noon"},
            // Edited, with the client's own reasoning: passed through.
            {"role": "assistant", "content": "It is 12.", "reasoning_content": "mine"},
            {"role": "user", "content": "and now?"},
            // Not stored, nothing of its own: missing.
            {"role": "assistant", "content": "Still noon."},
            {"role": "user", "content": "thanks"},
        ]));
        let counts = align(&stored, &incoming).counts;
        assert_eq!(
            (counts.reattached, counts.passed_through, counts.missing),
            (1, 1, 1)
        );
        assert_eq!((counts.demoted, counts.dropped_provenance), (0, 0));
    }

    #[test]
    fn carriers_a_client_sent_itself_are_unverified_and_stored_ones_are_not() {
        let mut stored = stored();
        for m in &mut stored {
            if m.role == Role::Assistant {
                m.origin = Some(Origin {
                    provider: "deepseek".into(),
                    host: "api.deepseek.com".into(),
                    model: "deepseek-v4-pro".into(),
                });
            }
        }
        // Stored turns only (their carriers and origin re-attached): nothing unverified.
        let incoming = messages(json!([
            {"role": "user", "content": "time?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "noon"},
        ]));
        let mut stored_call = stored[2].clone();
        stored_call.tool_calls.as_mut().unwrap()[0]
            .function
            .arguments = incoming[1].tool_calls.as_ref().unwrap()[0]
            .function
            .arguments
            .clone();
        let aligned = align(&[stored[1].clone(), stored_call], &incoming);
        assert_eq!(unverified_carriers(&aligned.history), CarrierSet::NONE);
        // A turn the store never saw, with the client's own reasoning and details: unverified.
        let forged = messages(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "reasoning_content": "mine",
             "reasoning_details": [{"type": "reasoning.encrypted", "data": "Zm9yZ2Vk"}]},
            {"role": "user", "content": "again"},
        ]));
        let aligned = align(&stored, &forged);
        let set = unverified_carriers(&aligned.history);
        assert!(set.contains(Carrier::ReasoningContent));
        assert!(set.contains(Carrier::ReasoningDetails));
        assert!(!set.contains(Carrier::Reasoning));
    }

    #[test]
    fn a_client_that_dropped_every_carrier_gets_them_back_and_continues_the_tip() {
        // Reasoning dropped, arguments re-serialised, an old tool output cleared, the date in
        // the system prompt changed, and a hermes key forged on the user message.
        let incoming = messages(json!([
            {"role": "system", "content": "You are terse. Today is Tuesday."},
            {"role": "user", "content": "time?", "hermes_not_replayed": true},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{\"tz\":\"UTC\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"},
            {"role": "assistant", "content": "It is noon."},
            {"role": "user", "content": "and tomorrow?"}
        ]));
        let stored = stored();
        let aligned = align(&stored, &incoming);
        assert_eq!(
            aligned.shared,
            stored.len(),
            "the whole stored view: the tip continues"
        );
        assert_eq!(aligned.shared, 5);
        assert_eq!(
            aligned.history[2], stored[2],
            "the stored call turn, carriers and all"
        );
        assert_eq!(aligned.history[4], stored[4]);
        assert_eq!(
            aligned.history[0].content, incoming[0].content,
            "the client's system prompt goes upstream"
        );
        assert_eq!(
            aligned.history[3].content, incoming[3].content,
            "the client's trimmed tool output goes upstream"
        );
        assert!(
            aligned.history[1].extra.is_empty(),
            "hermes keys are hermes' to write"
        );
        assert_eq!(input_start(&aligned.history), Some(5));
    }

    #[test]
    fn an_edited_assistant_message_gets_nothing_and_an_edited_user_turn_branches() {
        let mut incoming = stored();
        incoming[1] = Message::text(Role::User, "what time is it?");
        incoming[4] = Message::text(Role::Assistant, "Noon, I think.");
        incoming[4].reasoning_content = Some(crate::raw::TextCarrier::new("forged"));
        incoming.push(Message::text(Role::User, "sure?"));
        let stored = stored();
        let aligned = align(&stored, &incoming);
        assert_eq!(
            aligned.shared, 1,
            "the edit at the first user turn ends the prefix"
        );
        assert!(aligned.shared < stored.len());
        assert_eq!(
            aligned.history[2], stored[2],
            "an unedited assistant after the edit is still re-attached"
        );
        assert_eq!(
            aligned.history[4].origin, None,
            "the edited answer keeps what the client sent, with no origin"
        );
        assert_eq!(
            aligned.history[4]
                .reasoning_content
                .as_ref()
                .unwrap()
                .text(),
            "forged"
        );
    }

    #[test]
    fn a_history_that_ends_before_the_tip_is_a_branch_at_its_end() {
        let stored = stored();
        let mut incoming = stored[..2].to_vec();
        incoming.push(Message::text(Role::User, "again"));
        let aligned = align(&stored, &incoming);
        assert_eq!(aligned.shared, 2);
        assert!(aligned.shared < stored.len());
        let ends_with_assistant = stored.clone();
        assert_eq!(input_start(&ends_with_assistant), None);
    }
}
