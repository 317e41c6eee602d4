//! Messages-door thinking signatures (docs/spec.md §10, "Messages-door signatures"): readable
//! reasoning from an upstream that does not sign it reaches an Anthropic client as a `thinking`
//! block whose `signature` the gateway mints — an HMAC-SHA256 with the store's signing key (so
//! every replica mints and checks the same), over the tenant, the client's partition and the
//! block's text, named with the key's id (`hermes1.<key id>.<base64url MAC>`). A streamed block
//! must be signed before its message is stored, so the message is bound by its text rather than by
//! its stored id. A block that comes back with a signature that verifies for the same tenant and
//! partition is text the gateway vouches for: on a turn the store cannot line up (an edited
//! turn, a purged conversation) it is that turn's readable reasoning; an altered one is
//! nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hermes_engine::store::SigningKey;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a sealed reference ([`Signer::seal`]) starts with.
pub(crate) const SEALED_PREFIX: &str = "hermes1c.";

/// What a signature starts with: the one prefix the Messages door's history reader knows as
/// the gateway's own.
pub(crate) const PREFIX: &str =
    hermes_engine::providers::anthropic::inbound::GATEWAY_SIGNATURE_PREFIX;

/// Mints and verifies thinking signatures for one tenant and partition.
#[derive(Clone, Debug)]
pub(crate) struct Signer {
    key: SigningKey,
    tenant: String,
    partition: Option<String>,
}

impl Signer {
    /// A signer for `tenant`'s `partition` (docs/spec.md §10) with `key`.
    pub(crate) fn new(key: SigningKey, tenant: String, partition: Option<String>) -> Self {
        Signer {
            key,
            tenant,
            partition,
        }
    }

    /// The MAC over what a signature binds, ready to finalize or verify.
    fn mac(&self, text: &str) -> Hmac<Sha256> {
        let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(&self.key.secret) else {
            unreachable!("HMAC takes a key of any length")
        };
        mac.update(b"hermes thinking v2\0");
        mac.update(self.tenant.as_bytes());
        mac.update(b"\0");
        // A partition and none differ: the length-prefixed form cannot collide with text.
        match &self.partition {
            Some(p) => {
                mac.update(&(p.len() as u64).to_be_bytes());
                mac.update(p.as_bytes());
            }
            None => mac.update(b"-"),
        }
        mac.update(b"\0");
        mac.update(text.as_bytes());
        mac
    }

    /// The signature of a thinking block holding `text`.
    pub(crate) fn mint(&self, text: &str) -> String {
        let mac = self.mac(text).finalize().into_bytes();
        format!("{PREFIX}{}.{}", self.key.id, URL_SAFE_NO_PAD.encode(mac))
    }

    /// A sealed reference to `payload` (a stored checkpoint's place: the Responses door's
    /// `compaction` items): `hermes1c.<key id>.<base64url payload>.<base64url MAC>`, the MAC
    /// binding the tenant, the partition and the payload under its own domain. The payload is
    /// readable; what the seal adds is that only this gateway, for this tenant and partition,
    /// made it.
    pub(crate) fn seal(&self, payload: &str) -> String {
        let mac = self.sealed_mac(payload).finalize().into_bytes();
        format!(
            "{SEALED_PREFIX}{}.{}.{}",
            self.key.id,
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(mac)
        )
    }

    /// The payload of a [`Signer::seal`] this signer made (same key, tenant and partition),
    /// else `None`.
    pub(crate) fn open(&self, sealed: &str) -> Option<String> {
        let rest = sealed
            .strip_prefix(SEALED_PREFIX)?
            .strip_prefix(self.key.id.as_str())?
            .strip_prefix('.')?;
        let (payload, mac) = rest.split_once('.')?;
        let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        self.sealed_mac(&payload).verify_slice(&mac).ok()?;
        Some(payload)
    }

    fn sealed_mac(&self, payload: &str) -> Hmac<Sha256> {
        let mut mac = self.mac(payload);
        mac.update(b"\0hermes sealed reference v1");
        mac
    }

    /// Whether `signature` is this signer's for `text` (same key, tenant and partition),
    /// compared in constant time.
    pub(crate) fn verifies(&self, text: &str, signature: &str) -> bool {
        let Some(mac) = signature
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_prefix(self.key.id.as_str()))
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|b64| URL_SAFE_NO_PAD.decode(b64).ok())
        else {
            return false;
        };
        self.mac(text).verify_slice(&mac).is_ok()
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
    fn a_signature_names_its_key_and_binds_tenant_partition_text_and_secret() {
        let a = Signer::new(key("k1", 1), "acme".into(), None);
        let sig = a.mint("thinking about it");
        assert!(sig.starts_with("hermes1.k1."), "{sig}");
        assert_eq!(sig.len(), "hermes1.k1.".len() + 43, "a 32-byte MAC: {sig}");
        assert_eq!(a.mint("thinking about it"), sig, "deterministic");
        assert_ne!(a.mint("thinking about that"), sig);
        assert_ne!(
            Signer::new(key("k1", 1), "globex".into(), None).mint("thinking about it"),
            sig
        );
        assert_ne!(
            Signer::new(key("k1", 2), "acme".into(), None).mint("thinking about it"),
            sig
        );
        let alice = Signer::new(key("k1", 1), "acme".into(), Some("alice".into()));
        assert_ne!(alice.mint("thinking about it"), sig, "a partition is bound");
        assert_ne!(
            Signer::new(key("k1", 1), "acme".into(), Some(String::new())).mint("thinking about it"),
            sig,
            "an empty partition is not none"
        );

        // Verification: only the same key, tenant, partition and text.
        assert!(a.verifies("thinking about it", &sig));
        assert!(!a.verifies("thinking about that", &sig));
        assert!(!alice.verifies("thinking about it", &sig));
        assert!(
            !Signer::new(key("k1", 1), "globex".into(), None).verifies("thinking about it", &sig)
        );
        assert!(
            !Signer::new(key("k2", 1), "acme".into(), None).verifies("thinking about it", &sig)
        );
        let mut flipped = sig.clone().into_bytes();
        let last = flipped.len() - 2;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(!a.verifies("thinking about it", std::str::from_utf8(&flipped).unwrap()));
        for bad in ["", "hermes1.", "hermes1.k1.", "hermes1.k1.!!!", "c2ln"] {
            assert!(!a.verifies("thinking about it", bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod sealed {
    use hermes_engine::store::SigningKey;

    use super::Signer;

    #[test]
    fn a_sealed_reference_opens_only_for_its_tenant_partition_and_key() {
        let key = |byte| SigningKey {
            id: "k1".into(),
            secret: vec![byte; 32],
        };
        let a = Signer::new(key(1), "acme".into(), Some("p".into()));
        let sealed = a.seal("session-1:7");
        assert!(sealed.starts_with("hermes1c.k1."), "{sealed}");
        assert_eq!(a.open(&sealed).as_deref(), Some("session-1:7"));
        assert_eq!(
            Signer::new(key(1), "globex".into(), Some("p".into())).open(&sealed),
            None
        );
        assert_eq!(Signer::new(key(1), "acme".into(), None).open(&sealed), None);
        assert_eq!(
            Signer::new(key(2), "acme".into(), Some("p".into())).open(&sealed),
            None
        );
        // Another payload under the same MAC, and a thinking signature, do not open.
        let (head, mac) = sealed.rsplit_once('.').unwrap();
        let (prefix, _) = head.rsplit_once('.').unwrap();
        let forged = format!(
            "{prefix}.{}.{mac}",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                "session-2:7"
            )
        );
        assert_eq!(a.open(&forged), None);
        assert_eq!(a.open(&a.mint("session-1:7")), None);
        assert!(!a.verifies("session-1:7", &sealed));
    }
}
