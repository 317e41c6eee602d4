//! HMAC-SHA256 signing and verification of the opaque reasoning items the scripted model mints.
//!
//! A `reasoning.text` signature is `base64(HMAC(key, "text" ‖ model ‖ text))`; a
//! `reasoning.encrypted` blob is `base64(payload ‖ HMAC(key, "data" ‖ model ‖ payload))`.
//! Both are bound to the model id, so replaying an item to another model fails verification.
//! The `anthropic` profile's thinking signatures and redacted data use [`seal_bound`]: a small
//! carried header plus a tag over data that is not carried (block text, conversation prefix).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The fixed default signing key, so a fresh simulator process still verifies items minted earlier.
pub const DEFAULT_KEY: &[u8] = b"hermes-sim default signing key v1";

const TAG_LEN: usize = 32;

fn mac(key: &[u8], domain: &str, model: &str, payload: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
    mac.update(domain.as_bytes());
    mac.update(&[0]);
    mac.update(&(model.len() as u64).to_be_bytes());
    mac.update(model.as_bytes());
    mac.update(payload);
    Some(mac)
}

/// Signs `text` for `model` with `key`; the result is standard base64.
pub(crate) fn sign_text(key: &[u8], model: &str, text: &str) -> String {
    mac(key, "text", model, text.as_bytes())
        .map(|m| STANDARD.encode(m.finalize().into_bytes()))
        .unwrap_or_default()
}

/// Checks a signature produced by [`sign_text`] (constant-time comparison).
pub(crate) fn verify_text(key: &[u8], model: &str, text: &str, signature: &str) -> bool {
    let Ok(tag) = STANDARD.decode(signature) else {
        return false;
    };
    mac(key, "text", model, text.as_bytes()).is_some_and(|m| m.verify_slice(&tag).is_ok())
}

/// Seals `payload` for `model`: base64 of the payload followed by its HMAC tag.
pub(crate) fn seal_data(key: &[u8], model: &str, payload: &[u8]) -> String {
    let Some(m) = mac(key, "data", model, payload) else {
        return String::new();
    };
    let mut bytes = payload.to_vec();
    bytes.extend_from_slice(&m.finalize().into_bytes());
    STANDARD.encode(bytes)
}

/// Checks a blob produced by [`seal_data`] (constant-time comparison).
pub(crate) fn verify_data(key: &[u8], model: &str, data: &str) -> bool {
    let Ok(bytes) = STANDARD.decode(data) else {
        return false;
    };
    if bytes.len() <= TAG_LEN {
        return false;
    }
    let (payload, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    mac(key, "data", model, payload).is_some_and(|m| m.verify_slice(tag).is_ok())
}

/// Seals `included` (carried in the result) under a tag that also covers `bound` (not carried):
/// `base64(included ‖ HMAC(key, domain ‖ len(included) ‖ included ‖ bound))`. The `anthropic`
/// profile binds thinking signatures to the block text and the conversation prefix this way.
pub(crate) fn seal_bound(key: &[u8], domain: &str, included: &[u8], bound: &[u8]) -> String {
    let Some(m) = mac(key, domain, "", &bound_payload(included, bound)) else {
        return String::new();
    };
    let mut bytes = included.to_vec();
    bytes.extend_from_slice(&m.finalize().into_bytes());
    STANDARD.encode(bytes)
}

/// The `included` bytes of a [`seal_bound`] result when its tag verifies against `bound`
/// (constant-time comparison); `None` otherwise.
pub(crate) fn open_bound(key: &[u8], domain: &str, data: &str, bound: &[u8]) -> Option<Vec<u8>> {
    let bytes = STANDARD.decode(data).ok()?;
    if bytes.len() < TAG_LEN {
        return None;
    }
    let (included, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    let m = mac(key, domain, "", &bound_payload(included, bound))?;
    m.verify_slice(tag).ok()?;
    Some(included.to_vec())
}

/// The first `len` hex digits of `HMAC(key, domain ‖ payload)`: a short tag for ids that must be
/// recognised later without state (the `openai-responses` profile's `fc_…` / `msg_…` ids name
/// their paired `rs_…` id this way).
pub(crate) fn tag_hex(key: &[u8], domain: &str, payload: &[u8], len: usize) -> String {
    let Some(m) = mac(key, domain, "", payload) else {
        return String::new();
    };
    let hex: String = m
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    hex[..len.min(hex.len())].to_owned()
}

fn bound_payload(included: &[u8], bound: &[u8]) -> Vec<u8> {
    let mut payload = (included.len() as u64).to_be_bytes().to_vec();
    payload.extend_from_slice(included);
    payload.extend_from_slice(bound);
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_signature_is_bound_to_model_and_text() {
        let s = sign_text(DEFAULT_KEY, "m1", "hello");
        assert!(verify_text(DEFAULT_KEY, "m1", "hello", &s));
        assert!(!verify_text(DEFAULT_KEY, "m2", "hello", &s));
        assert!(!verify_text(DEFAULT_KEY, "m1", "hellp", &s));
        assert!(!verify_text(b"other key", "m1", "hello", &s));
        assert!(!verify_text(DEFAULT_KEY, "m1", "hello", "not base64!"));
    }

    #[test]
    fn sealed_data_is_bound_to_model() {
        let d = seal_data(DEFAULT_KEY, "m1", b"payload");
        assert!(verify_data(DEFAULT_KEY, "m1", &d));
        assert!(!verify_data(DEFAULT_KEY, "m2", &d));
        let mut chars: Vec<char> = d.chars().collect();
        chars[3] = if chars[3] == 'A' { 'B' } else { 'A' };
        let tampered: String = chars.into_iter().collect();
        assert!(!verify_data(DEFAULT_KEY, "m1", &tampered));
    }

    #[test]
    fn bound_seal_covers_the_unsent_part() {
        let d = seal_bound(DEFAULT_KEY, "dom", b"head", b"bound");
        assert_eq!(
            open_bound(DEFAULT_KEY, "dom", &d, b"bound"),
            Some(b"head".to_vec())
        );
        assert_eq!(open_bound(DEFAULT_KEY, "dom", &d, b"bounD"), None);
        assert_eq!(open_bound(DEFAULT_KEY, "other", &d, b"bound"), None);
        assert_eq!(open_bound(b"k2", "dom", &d, b"bound"), None);
        assert_eq!(open_bound(DEFAULT_KEY, "dom", "!!", b"bound"), None);
    }
}
