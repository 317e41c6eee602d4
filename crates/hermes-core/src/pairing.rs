//! Tool-call pairing (docs/providers.md, "Tool-call pairing"): every provider refuses a history in
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
    /// Assistant turns left out because they are stored for the record only (docs/spec.md §2: a
    /// reply that ended with reasoning only). Not a repair: nothing is told to the user.
    pub not_replayed: usize,
    /// Results without their call's id (older histories) matched to a call with one by name or
    /// order: the wire copy carries the call's id. Not a repair either.
    pub matched_without_id: usize,
}

impl Repairs {
    /// True when nothing was changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.unanswered == 0 && self.orphans == 0
    }
}

/// A tool call of the latest assistant turn, waiting for its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenCall<'h> {
    /// The id stored on the call, if it has one.
    pub id: Option<&'h str>,
    /// The function name.
    pub name: &'h str,
    /// A result has answered it.
    pub answered: bool,
}

impl<'h> OpenCall<'h> {
    /// The open calls of an assistant turn, in order.
    pub(crate) fn of(msg: &'h Message) -> impl Iterator<Item = OpenCall<'h>> {
        msg.tool_calls.iter().flatten().map(|c| OpenCall {
            id: c.id.as_deref(),
            name: &c.function.name,
            answered: false,
        })
    }
}

/// How a tool result found its call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matched {
    /// By its id.
    Id,
    /// By the function name it carries.
    Name,
    /// The first call still waiting.
    Order,
}

/// The open call the tool result `msg` answers: by id; else, among the calls it could answer
/// (every unanswered call for a result without an id, only calls stored without one for a
/// result with an id), by its `name` in order, else the first. Older histories — the Python
/// original's Gemini steps among them — hold calls and results without ids (docs/spec.md §5: "Older
/// function calls may lack ids: match responses by name and order"). A result whose id no call
/// holds finds no call with an id.
pub fn match_result(open: &[OpenCall<'_>], msg: &Message) -> Option<(usize, Matched)> {
    let id = msg.tool_call_id.as_deref();
    if let Some(i) = id.and_then(|id| open.iter().position(|c| !c.answered && c.id == Some(id))) {
        return Some((i, Matched::Id));
    }
    let candidate = |c: &OpenCall<'_>| !c.answered && (id.is_none() || c.id.is_none());
    if let Some(i) = msg
        .name
        .as_deref()
        .and_then(|name| open.iter().position(|c| candidate(c) && c.name == name))
    {
        return Some((i, Matched::Name));
    }
    open.iter().position(candidate).map(|i| (i, Matched::Order))
}

fn synthetic(call: &OpenCall<'_>) -> Message {
    let mut msg = Message::text(Role::Tool, INTERRUPTED_RESULT);
    msg.tool_call_id = call.id.map(str::to_owned);
    if call.id.is_none() {
        msg.name = Some(call.name.to_owned());
    }
    msg
}

/// Walks `history` once; `emit` receives the paired sequence when `Some`.
fn walk<'a>(history: &'a [Message], mut emit: Option<&mut Vec<Message>>) -> Repairs {
    let mut repairs = Repairs::default();
    let mut open: Vec<OpenCall<'a>> = Vec::new();
    let close = |open: &mut Vec<OpenCall<'_>>,
                 repairs: &mut Repairs,
                 emit: &mut Option<&mut Vec<Message>>| {
        for call in open.iter().filter(|c| !c.answered) {
            repairs.unanswered += 1;
            if let Some(out) = emit.as_deref_mut() {
                out.push(synthetic(call));
            }
        }
        open.clear();
    };
    for msg in history {
        if msg.role == Role::Tool {
            match match_result(&open, msg) {
                Some((at, how)) => {
                    let call = &mut open[at];
                    call.answered = true;
                    // Matched without its id: the wire copy names the call it answers.
                    let named = how != Matched::Id && call.id.is_some();
                    repairs.matched_without_id += usize::from(named);
                    if let Some(out) = emit.as_deref_mut() {
                        let mut result = msg.clone();
                        if named {
                            result.tool_call_id = call.id.map(str::to_owned);
                        }
                        out.push(result);
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
            open.extend(OpenCall::of(msg));
        }
    }
    // A call at the very end is the in-flight step: its results are not due yet.
    repairs
}

/// The history with every tool call paired, for a wire copy: each result is matched to its call
/// by [`match_result`] (a result matched without its call's id gets that id), a call whose step
/// ended without its result gets [`INTERRUPTED_RESULT`] right after the step's other results,
/// and a result that answers no call is left out; a turn stored for the record only
/// ([`Message::replayable`] false) is left out too. Borrowed (no copy) when the history is already paired.
/// Calls of the last message are the in-flight step and are left as they are.
pub fn paired(history: &[Message]) -> (Cow<'_, [Message]>, Repairs) {
    let repairs = walk(history, None);
    if repairs.is_empty() && repairs.not_replayed == 0 && repairs.matched_without_id == 0 {
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
        let want = Repairs {
            unanswered: 1,
            orphans: 1,
            ..Repairs::default()
        };
        assert_eq!(repairs, want);
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
    fn results_without_ids_are_matched_by_name_then_order() {
        // As the Python original stores Gemini steps: calls without ids, results without ids
        // (the tool name in `name`), or calls with ids their results do not carry.
        let h = history(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": "now", "arguments": "{}"}},
                {"type": "function", "function": {"name": "city", "arguments": "{}"}}]},
            {"role": "tool", "name": "city", "content": "Z"},
            {"role": "tool", "content": "12:00"},
            {"role": "assistant", "content": null, "tool_calls": [call("c1"), call("c2")]},
            {"role": "tool", "content": "1"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": "now", "arguments": "{}"}}]},
            {"role": "user", "content": "still there?"},
        ]));
        let (out, repairs) = paired(&h);
        let want = Repairs {
            unanswered: 2,
            matched_without_id: 1,
            ..Repairs::default()
        };
        assert_eq!(repairs, want);
        let results: Vec<(Option<&str>, Option<&str>, String)> = out
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| {
                let text = m.content.as_ref().unwrap().as_str().unwrap();
                (
                    m.tool_call_id.as_deref(),
                    m.name.as_deref(),
                    text.into_owned(),
                )
            })
            .collect();
        let interrupted = INTERRUPTED_RESULT.to_owned();
        assert_eq!(
            results,
            [
                (None, Some("city"), "Z".to_owned()),
                (None, None, "12:00".to_owned()),
                (Some("c1"), None, "1".to_owned()),
                (Some("c2"), None, interrupted.clone()),
                (None, Some("now"), interrupted),
            ]
        );
        let roles: Vec<&str> = out.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            [
                "user",
                "assistant",
                "tool",
                "tool",
                "assistant",
                "tool",
                "tool",
                "user",
                "assistant",
                "tool",
                "user"
            ]
        );
        assert!(
            h[5].tool_call_id.is_none(),
            "the stored history is untouched"
        );
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
