//! The loop that leaves a gateway client's own thinking blocks out of a history
//! ([`withhold`]); which ones may stay is the Anthropic wire's rule
//! (`hermes_wire_anthropic::inbound::client_blocks_to`, its descriptor's
//! `WireDescriptor::client_blocks`), every other wire's leaves each one out, and the engine
//! applies the settled wire's (`hermes_engine::wires::client_blocks_to`).

use hermes_core::{DetailItem, Message, Role};

/// Leaves out of `history` (a client's history lined up with the store,
/// `hermes_core::reattach::align`) every Anthropic-shaped `reasoning_details` item of an
/// assistant message without origin — a block the client sent on a turn the store did not
/// make — that `passes` does not let through to a target of the wire `wire` (docs/spec.md
/// §10), so the route's rule for a missing carrier applies (a must-echo route's `" "` pad).
/// Messages the store holds carry their origin and are left as they are. Returns how many items
/// were left out.
pub fn withhold(
    history: &mut [Message],
    wire: &str,
    passes: impl Fn(&DetailItem) -> bool,
) -> usize {
    let mut withheld = 0;
    for (index, message) in history.iter_mut().enumerate() {
        if message.role != Role::Assistant || message.origin.is_some() {
            continue;
        }
        let Some(items) = message.reasoning_details.as_mut() else {
            continue;
        };
        let before = items.len();
        items.retain(|item| !item.is_anthropic_shaped() || passes(item));
        let left_out = before - items.len();
        if left_out > 0 {
            tracing::debug!(
                index,
                left_out,
                wire,
                "a client's own thinking blocks left out: they go only to Claude on the Messages wire, and a gateway-signed one to no one"
            );
        }
        withheld += left_out;
        if items.is_empty() {
            message.reasoning_details = None;
        }
    }
    withheld
}

/// [`withhold`] letting none through: what every wire but one whose provider verifies its own
/// signatures does (`WireDescriptor::client_blocks`' default).
pub fn withhold_all(history: &mut [Message], wire: &str) -> usize {
    withhold(history, wire, |_| false)
}
