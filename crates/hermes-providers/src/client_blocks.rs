//! The one rule for where a gateway client's own thinking blocks may go
//! ([`client_blocks_to`], built whichever wires a build has: the engine applies it to every
//! gateway turn). Its own file, apart from the readers' shared error (`inbound`), since it asks
//! the Anthropic wire's reader, which uses that error.

use hermes_core::{DetailItem, Message, Role};

/// The one rule for a gateway client's own thinking blocks (docs/spec.md §10): in `history` (a
/// client's history lined up with the store, `hermes_core::reattach::align`), every
/// Anthropic-shaped `reasoning_details` item of an assistant message without origin — a block
/// the client sent on a turn the store did not make — stays only when the target passes them
/// (`anthropic::inbound::passes_client_blocks`; none does in a build without the `anthropic`
/// feature); to every other target it is left out, so the route's rule for a missing carrier
/// applies (a must-echo route's `" "` pad). One with a gateway signature
/// (`anthropic::inbound::GATEWAY_SIGNATURE_PREFIX`, however it got there: the Messages door
/// already leaves it out, a chat client might not) goes to no target. Messages the store holds
/// carry their origin and are left as they are. Returns how many items were left out.
pub fn client_blocks_to(history: &mut [Message], wire: &str, base_url: &str) -> usize {
    #[cfg(feature = "anthropic")]
    let passes = crate::anthropic::inbound::passes_client_blocks(wire, base_url);
    // Without the Anthropic wire no target verifies them: each one is left out.
    #[cfg(not(feature = "anthropic"))]
    let passes = {
        let _ = base_url;
        false
    };
    let mut withheld = 0;
    for (index, message) in history.iter_mut().enumerate() {
        if message.role != Role::Assistant || message.origin.is_some() {
            continue;
        }
        let Some(items) = message.reasoning_details.as_mut() else {
            continue;
        };
        let before = items.len();
        items.retain(|item| !item.is_anthropic_shaped() || (passes && !gateway_signed(item)));
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

/// Whether an item carries a signature the gateway minted (only the Anthropic wire's reader
/// knows one; without it no item passes anyway).
#[cfg(feature = "anthropic")]
fn gateway_signed(item: &DetailItem) -> bool {
    crate::anthropic::inbound::gateway_signed(item)
}

/// Without the Anthropic wire no client block passes, signed or not.
#[cfg(not(feature = "anthropic"))]
fn gateway_signed(_: &DetailItem) -> bool {
    true
}
