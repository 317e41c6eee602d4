//! Thought signatures of the `gemini` profile: minted for a model turn, bound to the model id and
//! to the turn's content, verified when replayed.
//!
//! A signature is [`crate::sign::seal_data`] of `"hsg1" ‖ kind ‖ digest ‖ nonce` for the model:
//! `kind` is `c` for a function-call turn (the digest covers the turn's `functionCall` objects,
//! canonical JSON with sorted keys, in order) or `t` for a text turn (the digest covers the turn's
//! non-thought text, joined). The sealed format is the one the `gemini-openai` profile uses for
//! `extra_content.google.thought_signature`, and both profiles share the key, so a signature minted
//! on one door verifies on the other for the same model (generativelanguage.googleapis.com serves
//! both): the chat door checks the seal, this door checks the seal and, for its own signatures,
//! the content binding. A sealed signature without this door's header (minted by `gemini-openai`)
//! is accepted on its seal alone.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::schema::decode_bytes;
use crate::sign;
use crate::wire::write_canonical;

/// The header of a signature minted by this door.
const MAGIC: &[u8; 4] = b"hsg1";
/// Digest length inside a signature.
const DIGEST_LEN: usize = 16;
/// Nonce length inside a signature.
const NONCE_LEN: usize = 8;

/// The sentinel reported to bypass signature validation (open-gsd/gsd-pi#155,
/// NoeFabris/opencode-antigravity-auth#126; official wording UNCONFIRMED): accepted as valid.
pub(crate) const SKIP_SENTINEL: &str = "skip_thought_signature_validator";

/// What a signature is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The turn's `functionCall` objects.
    Calls,
    /// The turn's non-thought text.
    Text,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Calls => b'c',
            Kind::Text => b't',
        }
    }
}

fn digest(kind: Kind, material: &str) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    h.update([kind.byte(), 0]);
    h.update(material.as_bytes());
    let full = h.finalize();
    let mut d = [0u8; DIGEST_LEN];
    d.copy_from_slice(&full[..DIGEST_LEN]);
    d
}

/// What a model turn's signatures are checked against.
#[derive(Clone, Debug)]
pub(crate) struct TurnContent {
    calls: String,
    text: String,
}

impl TurnContent {
    /// From a turn's parts (as sent: `functionCall` objects in order, non-thought texts joined).
    pub(crate) fn of(parts: &[Value]) -> TurnContent {
        let mut calls = String::new();
        let mut text = String::new();
        for p in parts {
            if let Some(call) = super::part_field(p, "functionCall") {
                write_canonical(call, &mut calls);
                calls.push('\n');
            } else if !super::is_thought(p)
                && let Some(t) = super::part_field(p, "text").and_then(Value::as_str)
            {
                text.push_str(t);
            }
        }
        TurnContent { calls, text }
    }

    fn digest(&self, kind: Kind) -> [u8; DIGEST_LEN] {
        match kind {
            Kind::Calls => digest(kind, &self.calls),
            Kind::Text => digest(kind, &self.text),
        }
    }
}

/// Mints a signature for `model` over `content`, bound as `kind`; `nonce` tells steps apart.
pub(crate) fn mint(
    key: &[u8],
    model: &str,
    kind: Kind,
    content: &TurnContent,
    nonce: &str,
) -> String {
    let mut payload = MAGIC.to_vec();
    payload.push(kind.byte());
    payload.extend_from_slice(&content.digest(kind));
    payload.extend_from_slice(&Sha256::digest(nonce.as_bytes())[..NONCE_LEN]);
    sign::seal_data(key, model, &payload)
}

/// The verdict on a replayed signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Minted by this door for this model over this content (or the skip sentinel).
    Valid,
    /// Sealed for this model by the `gemini-openai` door (no content binding to check).
    Foreign,
    /// Not a signature for this model, tampered, or bound to other content.
    Invalid,
}

/// Checks `sig` for `model` against the turn it was replayed in.
pub(crate) fn check(key: &[u8], model: &str, sig: &str, turn: &TurnContent) -> Verdict {
    if sig == SKIP_SENTINEL {
        return Verdict::Valid;
    }
    let Some(bytes) = decode_bytes(sig) else {
        return Verdict::Invalid;
    };
    if !sign::verify_data(key, model, &STANDARD.encode(&bytes)) {
        return Verdict::Invalid;
    }
    let payload = &bytes[..bytes.len().saturating_sub(32)];
    let Some(rest) = payload.strip_prefix(MAGIC.as_slice()) else {
        return Verdict::Foreign;
    };
    let kind = match rest.first() {
        Some(b'c') => Kind::Calls,
        Some(b't') => Kind::Text,
        _ => return Verdict::Invalid,
    };
    match rest.get(1..1 + DIGEST_LEN) {
        Some(d) if d == turn.digest(kind) => Verdict::Valid,
        _ => Verdict::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sign::DEFAULT_KEY;
    use serde_json::json;

    #[test]
    fn bound_to_model_and_content() {
        let parts = [
            json!({"text": "thinking…", "thought": true}),
            json!({"functionCall": {"name": "now", "args": {"b": 1, "a": [2]}, "id": "x"}}),
        ];
        let turn = TurnContent::of(&parts);
        let sig = mint(
            DEFAULT_KEY,
            "gemini-3-pro-preview",
            Kind::Calls,
            &turn,
            "n1",
        );
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-pro-preview", &sig, &turn),
            Verdict::Valid
        );
        // Key order does not matter; content does.
        let reordered = TurnContent::of(&[
            json!({"functionCall": {"id": "x", "args": {"a": [2], "b": 1}, "name": "now"}}),
        ]);
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-pro-preview", &sig, &reordered),
            Verdict::Valid
        );
        let other = TurnContent::of(&[json!({"functionCall": {"name": "now", "args": {}}})]);
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-pro-preview", &sig, &other),
            Verdict::Invalid
        );
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-flash-preview", &sig, &turn),
            Verdict::Invalid
        );
        // URL-safe re-encoding decodes to the same bytes.
        let url = sig.replace('+', "-").replace('/', "_");
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-pro-preview", &url, &turn),
            Verdict::Valid
        );
        // A gemini-openai seal (any payload) is foreign but accepted.
        let openai = sign::seal_data(
            DEFAULT_KEY,
            "gemini-3-pro-preview",
            b"gemini thought signature\0x",
        );
        assert_eq!(
            check(DEFAULT_KEY, "gemini-3-pro-preview", &openai, &turn),
            Verdict::Foreign
        );
        assert!(sign::verify_data(DEFAULT_KEY, "gemini-3-pro-preview", &sig));
        assert_eq!(
            check(DEFAULT_KEY, "m", SKIP_SENTINEL, &turn),
            Verdict::Valid
        );
    }

    #[test]
    fn text_binding_ignores_thoughts_and_fragmenting() {
        let whole = TurnContent::of(&[json!({"text": "Hello there"})]);
        let sig = mint(DEFAULT_KEY, "m", Kind::Text, &whole, "n");
        let pieces = TurnContent::of(&[
            json!({"text": "plan", "thought": true}),
            json!({"text": "Hello "}),
            json!({"text": "there"}),
            json!({"text": "", "thoughtSignature": sig}),
        ]);
        assert_eq!(check(DEFAULT_KEY, "m", &sig, &pieces), Verdict::Valid);
        let changed = TurnContent::of(&[json!({"text": "Hello there!"})]);
        assert_eq!(check(DEFAULT_KEY, "m", &sig, &changed), Verdict::Invalid);
    }
}
