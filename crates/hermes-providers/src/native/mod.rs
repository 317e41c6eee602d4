//! The native-wire kit: what the Anthropic, Converse, Gemini and Responses wires share — the
//! encoded body and its error ([`Encoded`], [`EncodeError`]), the JSON pieces every body is
//! built from (`json`: stored literals, text parts, tool input, turn merging), which stored turns
//! are replayed and whose they are (`stored`), the reading of
//! providers' error envelopes (`envelope`) and the one SSE reading loop (`sse`, which the chat
//! wire reads through too).

mod encoded;
pub(crate) mod envelope;
pub(crate) mod json;
pub(crate) mod sse;
pub(crate) mod stored;

pub use crate::sampling::Unsupported;
pub use encoded::{EncodeError, Encoded};
pub(crate) use encoded::{Stamp, explain_with_post, write_json, write_json_with_capacity};

/// The account a credential stands for: the first 16 bytes of HMAC-SHA256 keyed with a fixed
/// domain key over the credential, as hex. One way: the credential cannot be read back from it
/// (provider keys are high-entropy), and it is the same on every replica and after a restart.
/// What a bound Claude model binds replayed thinking to, and the issuer account of a provider's
/// compaction block or item (docs/spec.md §5a 1, §7).
pub fn account_of(credential: &str) -> String {
    use hmac::Mac as _;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"hermes account binding v1")
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(credential.as_bytes());
    let bytes = mac.finalize().into_bytes();
    bytes.iter().take(16).map(|b| format!("{b:02x}")).collect()
}
