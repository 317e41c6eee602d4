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
