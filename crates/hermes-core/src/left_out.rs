//! Once dropped, stay dropped (docs/spec.md §5a 3): a carrier left out of one request of a
//! conversation is never sent again in it, on any replica. A wire that leaves a stored turn's
//! carriers out says so ([`crate::Outgoing::left_out`], by [`carrier_id`]); the driver has the
//! session log record it ([`crate::driver::SessionLog::left_out`]); the engine marks every turn so
//! recorded ([`LEFT_OUT_KEY`], [`mark`]) when it loads a history, and the wires never send a marked
//! turn's carriers again.
//!
//! A turn is identified by its first carrier item, byte for byte as stored: a signed block, an
//! encrypted item or readable reasoning text is minted once, so the same bytes are the same
//! turn in every request, on every replica, and on every branch that shares the turn (a branch
//! shares its parent's prefix, and so its marks — as the provider, which remembers blocks, not
//! sessions, does).

use std::collections::BTreeSet;

use sha2::{Digest as _, Sha256};

use crate::message::{DetailItem, Message, Role};
use crate::raw::RawJson;

/// The key that marks a turn of a loaded history whose carriers an earlier request of the
/// conversation left out. Only the engine writes it, on the history it loads: a client's
/// message never carries it (`crate::reattach::untrusted` strips every `hermes_` key), and no
/// wire sends it.
pub const LEFT_OUT_KEY: &str = "hermes_left_out";

/// The identity of an assistant message's carriers: a digest of its first carrier item as
/// stored (the first provider `reasoning_details` item, else the native record, else the
/// readable `reasoning_content` or `reasoning` text). `None` for a message with no carrier.
pub fn carrier_id(message: &Message) -> Option<String> {
    if message.role != Role::Assistant {
        return None;
    }
    let items = message.reasoning_details.as_deref().unwrap_or_default();
    let first = items
        .iter()
        .find(|i| matches!(i, DetailItem::Provider { .. }))
        .or_else(|| items.first())
        .map(|i| ("item", i.raw().get().to_owned()))
        .or_else(|| {
            message
                .reasoning_content
                .as_ref()
                .map(|t| ("reasoning_content", t.text().into_owned()))
        })
        .or_else(|| {
            message
                .reasoning
                .as_ref()
                .map(|t| ("reasoning", t.text().into_owned()))
        })?;
    let mut digest = Sha256::new();
    digest.update(b"hermes carrier v1\0");
    digest.update(first.0.as_bytes());
    digest.update([0]);
    digest.update(first.1.as_bytes());
    Some(
        digest
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Whether an earlier request of the conversation left this turn's carriers out (it carries
/// [`LEFT_OUT_KEY`]).
pub fn is_left_out(message: &Message) -> bool {
    message.extra.iter().any(|(k, _)| k == LEFT_OUT_KEY)
}

/// Marks every message of `messages` whose [`carrier_id`] is in `ids` ([`LEFT_OUT_KEY`]), once;
/// returns how many it marked now.
pub fn mark(messages: &mut [Message], ids: &BTreeSet<String>) -> usize {
    if ids.is_empty() {
        return 0;
    }
    let mut marked = 0;
    for message in messages.iter_mut() {
        if is_left_out(message) {
            continue;
        }
        if carrier_id(message).is_some_and(|id| ids.contains(&id)) {
            let yes = RawJson::from_serialize(&true).unwrap_or_else(|_| RawJson::null());
            message.extra.push((LEFT_OUT_KEY.to_owned(), yes));
            marked += 1;
        }
    }
    marked
}

/// The carrier ids of `messages` (assistant messages with carriers), for the store to look up.
pub fn carrier_ids(messages: &[Message]) -> Vec<String> {
    let ids: BTreeSet<String> = messages.iter().filter_map(carrier_id).collect();
    ids.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::reattach::untrusted;

    fn turn(signature: &str) -> Message {
        serde_json::from_value(json!({
            "role": "assistant", "content": "ok",
            "reasoning_details": [{"type": "thinking", "thinking": "t", "signature": signature}]
        }))
        .unwrap()
    }

    #[test]
    fn a_turn_is_known_by_its_first_carrier_and_marks_only_its_own() {
        let (a, b) = (turn("sig-a"), turn("sig-b"));
        let plain = Message::text(Role::Assistant, "no carrier");
        assert_eq!(carrier_id(&plain), None);
        assert_ne!(carrier_id(&a), carrier_id(&b));
        assert_eq!(carrier_id(&a), carrier_id(&a.clone()));
        let mut history = vec![a.clone(), b, plain];
        let ids = BTreeSet::from([carrier_id(&a).unwrap()]);
        assert_eq!(mark(&mut history, &ids), 1);
        assert_eq!(mark(&mut history, &ids), 0, "once");
        assert!(is_left_out(&history[0]));
        assert!(!is_left_out(&history[1]) && !is_left_out(&history[2]));
        assert_eq!(
            carrier_id(&history[0]),
            carrier_id(&a),
            "the mark is no carrier"
        );
    }

    #[test]
    fn a_client_cannot_mark_a_turn() {
        let mut forged = turn("sig-a");
        forged.extra.push((
            LEFT_OUT_KEY.to_owned(),
            RawJson::from_serialize(&true).unwrap(),
        ));
        assert!(is_left_out(&forged));
        assert!(!is_left_out(&untrusted(&forged)));
    }
}
