//! Messages-door thinking signatures (SPEC §10, "Messages-door signatures"): readable reasoning
//! from an upstream that does not sign it reaches an Anthropic client as a `thinking` block
//! whose `signature` the gateway mints — an HMAC-SHA256 with the store's signing key (so every
//! replica mints and checks the same), over the tenant and the block's text, named with the
//! key's id (`hermes1.<key id>.<base64url MAC>`). A streamed block must be signed before its
//! message is stored, so the message is bound by its text rather than by its stored id.
//! Client-sent blocks are never read as reasoning (the stored carriers are re-attached), so a
//! signature only ever vouches for what the gateway itself sent.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hermes_engine::store::SigningKey;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// What a signature starts with: the one prefix the Messages door's history reader knows as
/// the gateway's own.
pub(crate) const PREFIX: &str =
    hermes_engine::providers::anthropic::inbound::GATEWAY_SIGNATURE_PREFIX;

/// Mints thinking signatures for one tenant.
#[derive(Clone, Debug)]
pub(crate) struct Signer {
    key: SigningKey,
    tenant: String,
}

impl Signer {
    /// A signer for `tenant` with `key`.
    pub(crate) fn new(key: SigningKey, tenant: String) -> Self {
        Signer { key, tenant }
    }

    /// The signature of a thinking block holding `text`.
    pub(crate) fn mint(&self, text: &str) -> String {
        let mac = match Hmac::<Sha256>::new_from_slice(&self.key.secret) {
            Ok(mut mac) => {
                mac.update(b"hermes thinking v1\0");
                mac.update(self.tenant.as_bytes());
                mac.update(b"\0");
                mac.update(text.as_bytes());
                mac.finalize().into_bytes().to_vec()
            }
            // HMAC takes a key of any length; this arm is never taken.
            Err(_) => Vec::new(),
        };
        format!("{PREFIX}{}.{}", self.key.id, URL_SAFE_NO_PAD.encode(mac))
    }
}

#[cfg(test)]
mod tests {
    use hermes_engine::store::SigningKey;

    use super::Signer;

    fn key(id: &str, byte: u8) -> SigningKey {
        SigningKey {
            id: id.to_owned(),
            secret: vec![byte; 32],
        }
    }

    #[test]
    fn a_signature_names_its_key_and_binds_tenant_text_and_secret() {
        let a = Signer::new(key("k1", 1), "acme".into());
        let sig = a.mint("thinking about it");
        assert!(sig.starts_with("hermes1.k1."), "{sig}");
        assert_eq!(sig.len(), "hermes1.k1.".len() + 43, "a 32-byte MAC: {sig}");
        assert_eq!(a.mint("thinking about it"), sig, "deterministic");
        assert_ne!(a.mint("thinking about that"), sig);
        assert_ne!(
            Signer::new(key("k1", 1), "globex".into()).mint("thinking about it"),
            sig
        );
        assert_ne!(
            Signer::new(key("k1", 2), "acme".into()).mint("thinking about it"),
            sig
        );
    }
}
