//! An encoded body with what its wire needs to know about it, and why a body could not be
//! built: one type each for every native wire.

use std::fmt;

use hermes_core::transport::TransportError;
use hermes_core::{Outgoing, RawJson, Reply};
use serde::Serialize;

use crate::sampling::Unsupported;

/// An encoded body and what the wire needs to know about it; `X` holds what only some wires
/// know (the Anthropic and Converse wires' conversation digest, the history indices merged
/// into each wire message, the Anthropic beta header).
#[derive(Clone, Debug)]
pub struct Encoded<X = ()> {
    /// The exact body.
    pub body: Vec<u8>,
    /// Refusable fields sent (docs/spec.md §6: the carriers a provider may refuse).
    pub refusable: Vec<&'static str>,
    /// Wire messages (contents, `input` items).
    pub messages: usize,
    /// Lines for the user.
    pub notes: Vec<String>,
    /// What was decided, for `hermes preview --explain`.
    pub explain: Vec<String>,
    /// Assistant messages whose carriers were demoted or left out by provenance.
    pub carriers: hermes_core::CarrierCounts,
    /// What this wire knows beyond the rest.
    pub wire: X,
}

/// Keeps on `reply`'s message what its request was stamped with ([`Stamp`]), in stamped order,
/// less the keys in `transient` (those that only ride from encode to send and are never stored).
pub fn keep_stamp(reply: &mut Reply, request: &Outgoing, transient: &[&str]) {
    let kept = request
        .stamp
        .iter()
        .filter(|(k, _)| !transient.contains(&k.as_str()));
    reply.message.extra.extend(kept.cloned());
}

/// What a wire stamps on the reply to a body (never sent): the signed wires' conversation
/// digest, the Anthropic beta header on its way to `send`. Nothing by default.
pub trait Stamp {
    /// The stamp: keys and values stored on the reply's message.
    fn stamp(&self) -> Vec<(String, RawJson)> {
        Vec::new()
    }

    /// The stored turns whose carriers the body leaves out for good
    /// ([`Outgoing::left_out`]). None by default.
    fn left_out(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Stamp for () {}

impl<X> Encoded<X> {
    /// The body as an [`Outgoing`] (streamed when `stream`), with its notes, carrier counts and
    /// the wire's stamp.
    pub fn into_outgoing(self, stream: bool) -> Outgoing
    where
        X: Stamp,
    {
        let stamp = self.wire.stamp();
        let left_out = self.wire.left_out();
        Outgoing::new(self.body, stream, self.refusable, self.messages)
            .notes(self.notes)
            .stamp(stamp)
            .carriers(self.carriers)
            .left_out(left_out)
    }
}

/// Writes `body` as compact JSON, the bytes sent, into a buffer of the body's exact size: a
/// first pass only counts the bytes, then the body is written once, with no regrowth (a growing
/// buffer copies the body again at every doubling and holds up to three times it at the peak).
/// The native bodies are mostly stored literals written as they are (raw values), where
/// counting costs next to nothing.
pub fn write_json<T: Serialize>(body: &T) -> Result<Vec<u8>, EncodeError> {
    let json = |e: serde_json::Error| EncodeError::Json(e.to_string());
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, body).map_err(json)?;
    let mut out = Vec::with_capacity(counter.0);
    serde_json::to_writer(&mut out, body).map_err(json)?;
    Ok(out)
}

/// Writes `body` as compact JSON into a buffer of `capacity` bytes to begin with: for a body
/// whose size its encoder knows about from what it copies, where a counting pass would cost
/// more than it saves (Anthropic's, whose counting pass read every escaped string twice).
pub fn write_json_with_capacity<T: Serialize>(
    body: &T,
    capacity: usize,
) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut out, body).map_err(|e| EncodeError::Json(e.to_string()))?;
    Ok(out)
}

/// A writer that keeps only the number of bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0 += buf.len();
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `--explain`'s lines for a request to `url`: first `POST <path>` (its path and query), then
/// `lines`.
pub fn explain_with_post(url: &str, lines: Vec<String>) -> Vec<String> {
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    std::iter::once(format!("POST {path}"))
        .chain(lines)
        .collect()
}

/// Why a native wire's body could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The tool definitions are not the chat-completions array of function tools.
    Tools(String),
    /// The thinking request (or a client's own thinking object) cannot be expressed for this
    /// model (docs/spec.md §3c: a clear error before anything is sent).
    Thinking(String),
    /// The body could not be written.
    Json(String),
    /// A message holds an image this wire cannot take (each wire's `media` module): which
    /// message, and why.
    Image(String),
    /// A sampling parameter this wire (or this model on it) cannot send.
    Unsupported(Unsupported),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Tools(why) => write!(f, "the tool definitions cannot be sent: {why}"),
            EncodeError::Thinking(why) | EncodeError::Image(why) => f.write_str(why),
            EncodeError::Json(why) => write!(f, "the body cannot be written: {why}"),
            EncodeError::Unsupported(u) => u.fmt(f),
        }
    }
}

impl std::error::Error for EncodeError {}

impl From<Unsupported> for EncodeError {
    fn from(u: Unsupported) -> Self {
        EncodeError::Unsupported(u)
    }
}

impl From<EncodeError> for TransportError {
    fn from(e: EncodeError) -> Self {
        match e {
            EncodeError::Unsupported(u) => u.into(),
            e => TransportError::Request(format!("could not encode the request: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::write_json;

    #[test]
    fn a_sized_write_is_the_plain_write_in_a_buffer_of_exactly_its_length() {
        let raw = RawValue::from_string(r#"{"k" : "Z\u00fcrich\n", "n":1e400}"#.to_owned())
            .expect("a raw value");
        let body = serde_json::json!(null);
        let values: (&RawValue, &str, Vec<f64>, serde_json::Value) = (
            &raw,
            "quote \" backslash \\ tab \t é \u{1F600}",
            vec![0.1, 1e300],
            body,
        );
        let sized = write_json(&values).expect("written");
        assert_eq!(sized, serde_json::to_vec(&values).expect("written"));
        assert_eq!(sized.capacity(), sized.len());
    }
}
