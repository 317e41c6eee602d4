//! The gateway's doors: each door's request reader (chat completions, Messages, Responses) and
//! the Messages door's signature verifier (docs/spec.md §10).

use hermes_core::reattach::{PRIVATE_KEY_PREFIXES, align};
use hermes_core::{DetailItem, Message};
use hermes_serve::fuzzing::FuzzSigner;

use crate::check::{no_foreign_carriers, round_trips};

/// What a door read from a client: every message stores and loads again unchanged and holds no
/// carrier the body does not; and once lined up with the store (`reattach::align`, here with an
/// empty session: every message is the client's), none holds a key hermes keeps for its own
/// storage or a native record (a client message is content, tool calls and the client's own
/// carriers, docs/spec.md §10). The doors keep every key as sent; lining up strips them.
fn client_history(body: &str, messages: &[Message]) {
    for msg in messages {
        round_trips(msg);
    }
    no_foreign_carriers(body, messages);
    for msg in align(&[], messages).history {
        for (key, _) in &msg.extra {
            assert!(
                !PRIVATE_KEY_PREFIXES.iter().any(|p| key.starts_with(p)),
                "a client message kept hermes' own key `{key}` past lining up"
            );
        }
        let native = msg
            .reasoning_details
            .iter()
            .flatten()
            .any(|item| matches!(item, DetailItem::Native { .. }));
        assert!(
            !native,
            "a client message kept a native record past lining up"
        );
        assert!(msg.origin.is_none(), "a client message kept an origin");
    }
}

/// `chat_door`: a `POST /v1/chat/completions` body.
pub fn chat_door(input: &[u8]) {
    if let Ok(messages) = hermes_serve::fuzzing::chat_request(input) {
        client_history(&String::from_utf8_lossy(input), &messages);
    }
}

/// `messages_door`: a `POST /v1/messages` body.
pub fn messages_door(input: &[u8]) {
    let Ok(body) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(messages) = hermes_wire_anthropic::inbound::request_history(body) {
        client_history(body, &messages);
    }
}

/// `responses_door`: a `POST /v1/responses` body.
pub fn responses_door(input: &[u8]) {
    let Ok(body) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(inbound) = hermes_wire_responses::inbound::request_history(body) {
        client_history(body, &inbound.messages);
        for sealed in &inbound.sealed {
            assert!(
                body.contains(&sealed.seal) || body.contains('\\'),
                "a reasoning item's encrypted_content is not the body's"
            );
        }
    }
}

/// `signature`: the input is `text`, a NUL, then a signature (or a sealed reference). A
/// minted signature verifies for its text, tenant and partition only; a signature the signer
/// did not mint for the text never verifies; a seal opens to its payload, and whatever opens
/// is the seal of what it opened to.
pub fn signature(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let (text, claimed) = text.split_once('\0').unwrap_or((&text, ""));
    let signer = FuzzSigner::new("00112233deadbeef", &[7; 32], "tenant-a", Some("p"));
    let minted = signer.mint(text);
    assert!(
        signer.verifies(text, &minted),
        "a minted signature does not verify"
    );
    assert_eq!(
        signer.verifies(text, claimed),
        claimed == minted,
        "a signature verified that is not the minted one: {claimed:?}"
    );
    for other in [
        FuzzSigner::new("00112233deadbeef", &[7; 32], "tenant-b", Some("p")),
        FuzzSigner::new("00112233deadbeef", &[7; 32], "tenant-a", None),
        FuzzSigner::new("00112233deadbeef", &[7; 32], "tenant-a", Some("p\0")),
        FuzzSigner::new("00112233deadbeef", &[8; 32], "tenant-a", Some("p")),
    ] {
        assert!(
            !other.verifies(text, &minted),
            "a signature verified for another tenant, partition or key"
        );
    }
    let sealed = signer.seal(text);
    assert_eq!(
        signer.open(&sealed).as_deref(),
        Some(text),
        "a seal does not open"
    );
    if let Some(payload) = signer.open(claimed) {
        assert_eq!(
            signer.seal(&payload),
            claimed,
            "a reference opened that the signer did not seal"
        );
    }
}
