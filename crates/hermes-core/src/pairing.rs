//! Tool-call pairing (PROVIDERS.md, "Tool-call pairing"): every provider refuses a history in
//! which a tool call has no result, or a result has no call. Steps are stored whole, but a
//! history can still hold a dangling call (imported, or written by an older build); the wire
//! copy gets a synthetic result for it — decided here, in core, for every wire — and the stored
//! history is never changed.

use std::borrow::Cow;

use crate::message::{Message, Role};

/// The text of the synthetic result given to a call that was never answered.
pub const INTERRUPTED_RESULT: &str =
    "[interrupted: this tool call was never answered, so its result is unknown]";

/// What [`paired`] changed in the wire copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repairs {
    /// Calls given a synthetic result.
    pub unanswered: usize,
    /// Results left out because no call asked for them.
    pub orphans: usize,
    /// Assistant turns left out because they are stored for the record only (SPEC §2: a reply
    /// that ended with reasoning only). Not a repair: nothing is told to the user.
    pub not_replayed: usize,
}

impl Repairs {
    /// True when nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.unanswered == 0 && self.orphans == 0
    }
}

fn synthetic(id: &str) -> Message {
    let mut msg = Message::text(Role::Tool, INTERRUPTED_RESULT);
    msg.tool_call_id = Some(id.to_owned());
    msg
}

/// Walks `history` once; `emit` receives the paired sequence when `Some`.
fn walk<'a>(history: &'a [Message], mut emit: Option<&mut Vec<Message>>) -> Repairs {
    let mut repairs = Repairs::default();
    let mut open: Vec<&'a str> = Vec::new();
    let close =
        |open: &mut Vec<&str>, repairs: &mut Repairs, emit: &mut Option<&mut Vec<Message>>| {
            repairs.unanswered += open.len();
            if let Some(out) = emit.as_deref_mut() {
                out.extend(open.iter().map(|id| synthetic(id)));
            }
            open.clear();
        };
    for msg in history {
        if msg.role == Role::Tool {
            let id = msg.tool_call_id.as_deref();
            match id.and_then(|id| open.iter().position(|o| *o == id)) {
                Some(pos) => {
                    open.remove(pos);
                    if let Some(out) = emit.as_deref_mut() {
                        out.push(msg.clone());
                    }
                }
                None => repairs.orphans += 1,
            }
            continue;
        }
        if msg.role == Role::Assistant && !msg.replayable() {
            repairs.not_replayed += 1;
            continue;
        }
        close(&mut open, &mut repairs, &mut emit);
        if let Some(out) = emit.as_deref_mut() {
            out.push(msg.clone());
        }
        if msg.role == Role::Assistant {
            open.extend(
                msg.tool_calls
                    .iter()
                    .flatten()
                    .filter_map(|c| c.id.as_deref()),
            );
        }
    }
    // A call at the very end is the in-flight step: its results are not due yet.
    repairs
}

/// The history with every tool call paired, for a wire copy: a call whose step ended without
/// its result gets [`INTERRUPTED_RESULT`] right after the step's other results, and a result
/// that answers no call is left out; a turn stored for the record only
/// ([`Message::replayable`] false) is left out too. Borrowed (no copy) when the history is already paired.
/// Calls of the last message are the in-flight step and are left as they are.
pub fn paired(history: &[Message]) -> (Cow<'_, [Message]>, Repairs) {
    let repairs = walk(history, None);
    if repairs.is_empty() && repairs.not_replayed == 0 {
        return (Cow::Borrowed(history), repairs);
    }
    let mut out = Vec::with_capacity(history.len() + repairs.unanswered);
    walk(history, Some(&mut out));
    (Cow::Owned(out), repairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(value: serde_json::Value) -> Vec<Message> {
        serde_json::from_value(value).unwrap()
    }

    fn call(id: &str) -> serde_json::Value {
        json!({"id": id, "type": "function", "function": {"name": "now", "arguments": "{}"}})
    }

    #[test]
    fn a_paired_history_is_borrowed_unchanged() {
        let h = history(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]));
        let (out, repairs) = paired(&h);
        assert!(matches!(out, Cow::Borrowed(_)));
        assert!(repairs.is_empty());
    }

    #[test]
    fn a_dangling_call_gets_a_synthetic_result_and_an_orphan_is_left_out() {
        let h = history(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "again"},
            {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
            {"role": "assistant", "content": "ok"},
        ]));
        let (out, repairs) = paired(&h);
        assert_eq!(
            repairs,
            Repairs {
                unanswered: 1,
                orphans: 1,
                not_replayed: 0,
            }
        );
        let ids: Vec<(&str, Option<&str>)> = out
            .iter()
            .map(|m| (m.role.as_str(), m.tool_call_id.as_deref()))
            .collect();
        assert_eq!(
            ids,
            [
                ("user", None),
                ("assistant", None),
                ("tool", Some("a")),
                ("tool", Some("b")),
                ("user", None),
                ("assistant", None)
            ]
        );
        assert_eq!(
            out[3].content.as_ref().unwrap().as_str().unwrap(),
            INTERRUPTED_RESULT
        );
        assert_eq!(h.len(), 6, "the stored history is untouched");
    }

    #[test]
    fn the_in_flight_step_at_the_end_is_left_alone() {
        let h = history(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
        ]));
        let (out, repairs) = paired(&h);
        assert!(repairs.is_empty());
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_turn_stored_for_the_record_only_is_left_out_of_the_wire_copy() {
        let h = history(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "reasoning_content": "cut short",
             "hermes_not_replayed": true},
            {"role": "user", "content": "again"},
        ]));
        let (out, repairs) = paired(&h);
        assert!(
            repairs.is_empty(),
            "leaving it out is not a repair to report"
        );
        assert_eq!(repairs.not_replayed, 1);
        let roles: Vec<&str> = out.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "user"]);
        assert_eq!(h.len(), 3, "the stored history is untouched");
    }
}
