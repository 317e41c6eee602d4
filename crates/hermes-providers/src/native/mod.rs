//! The native-wire kit: what the chat-completions, Anthropic, Converse, Gemini and Responses
//! wires share, public for the wire crates (`hermes-wire-chat`, `hermes-wire-gemini`, …) built
//! on it — the encoded body and its error
//! ([`Encoded`], [`EncodeError`], [`Stamp`], [`write_json`], [`explain_with_post`]), the JSON
//! pieces every body is built from (`json`: stored literals, text parts, tool input, turn
//! merging), a stored object's members edited byte for byte (`members`: private keys left out), which stored turns are replayed and whose they are (`stored`), the reading of
//! providers' error envelopes (`envelope`), the one SSE reading loop (`sse`, which the chat
//! wire reads through too), reply capture's error (`reply`), images in a message's content
//! (`image`), the sampling checks every wire makes (`sampling`), a model id as one URL path
//! segment (`segment`), a request's tools as chat completions spell them (`tools`), what an
//! OpenAI model id implies for reasoning (`openai_model`) and where a client's request was wrong
//! (`inbound`). The
//! HTTP side is the crate root's [`crate::ChatTransport`] and [`crate::Auth`].

mod encoded;
pub mod envelope;
pub mod json;
pub mod members;
pub mod sse;
pub mod stored;

pub use crate::sampling::Unsupported;
pub use encoded::{
    EncodeError, Encoded, Stamp, explain_with_post, keep_stamp, write_json,
    write_json_with_capacity,
};

/// Why a reply could not be captured ([`reply::CaptureError`]), as a transport error, and a
/// body quoted in an error ([`reply::snippet`]).
pub mod reply {
    pub use crate::reply::*;
}

/// Images in a message's content: its pieces ([`image::Piece`], [`image::Image`]) and their
/// sources, for the wires that send them.
pub mod image {
    pub use crate::image::*;
}

/// The sampling checks every wire makes before it sends, and each OpenAI API's spelling of the
/// parameters (chat completions' per route: [`sampling::chat_fields`], [`sampling::stream_usage`]).
pub mod sampling {
    pub use crate::sampling::{
        Unsupported, chat_fields, check_tool_choice, openai_reasoning, responses_fields,
        schema_value, stream_usage,
    };
}

/// A model id as one URL path segment ([`segment::unreserved`], [`segment::google`]).
pub mod segment {
    pub use crate::segment::*;
}

/// A request's tools as chat completions spell them, which every wire reads.
pub mod tools {
    pub use crate::tools::*;
}

/// What an OpenAI model id implies for reasoning (the chat wire's sampling rules and the
/// Responses wire read the same table).
pub mod openai_model {
    pub use crate::openai_model::*;
}

/// Where a gateway client's own thinking blocks may not go: the loop that leaves them out
/// ([`client_blocks::withhold`]), given the Anthropic wire's rule for which pass.
pub mod client_blocks {
    pub use crate::client_blocks::*;
}

/// What the gateway's doors read from a client's request: the error that says where it was
/// wrong ([`inbound::InboundError`]), shared by every dialect's reader.
pub mod inbound {
    pub use crate::inbound::*;
}

/// Reading a reply's body, for the wires that read one themselves: a whole reply captured from
/// its own bytes ([`read::read_whole`]), a failed read of an event stream's bytes
/// ([`read::chunk_error`]), the message of an SSE `event: error` frame
/// ([`read::error_event_text`]) and of an error object in a JSON body ([`read::error_text`]).
pub mod read {
    pub use crate::read::{chunk_error, error_event_text, error_text, read_whole};
}

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
