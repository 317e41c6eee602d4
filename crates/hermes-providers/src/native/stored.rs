//! Which stored assistant turns a native body replays, and whose they are.

use hermes_core::Message;
use hermes_core::RouteTarget;
use hermes_core::message::same_minter;

/// Whether the assistant turn `msg` (message `i` of the history) is replayed: one stored for
/// the record only is not, and `explain` says so.
pub fn replayed(msg: &Message, i: usize, explain: &mut Vec<String>) -> bool {
    let replayable = msg.replayable();
    if !replayable {
        explain.push(format!("message {i}: not replayed (stored for the record)"));
    }
    replayable
}

/// Whether `msg` was minted by `target`'s minter (a turn without an origin counts as its own),
/// so its signed or encrypted parts may go back to it.
pub fn own(msg: &Message, target: &RouteTarget) -> bool {
    msg.origin.as_ref().is_none_or(|o| same_minter(o, target))
}
