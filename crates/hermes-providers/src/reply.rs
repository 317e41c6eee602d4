//! What every wire's reply capture shares: why a reply could not be captured
//! ([`CaptureError`]), how that becomes a transport error, and quoting a body in an error
//! (`snippet`); `read::read_whole` reads a whole reply through it.

use std::fmt;

use hermes_core::transport::TransportError;
use hermes_core::{Message, ReplyMeta};

/// Why a reply could not be captured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureError {
    /// The provider reported an error after answering 200 (an error body or envelope instead of
    /// a reply, an `error` event or an exception frame): its words.
    Provider(String),
    /// The reply is not a usable reply of its wire, or the stream ended before its last event.
    Malformed(String),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Provider(message) | CaptureError::Malformed(message) => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for CaptureError {}

impl CaptureError {
    /// As a transport error while a stream is read: the provider's own error is an error after
    /// the 200, a malformed event a decode error.
    pub fn mid_stream(self) -> TransportError {
        match self {
            CaptureError::Provider(err) => TransportError::AfterOk(err),
            CaptureError::Malformed(err) => TransportError::Decode(err),
        }
    }

    /// As a transport error when a stream has ended: the provider's own error is an error after
    /// the 200, anything else a broken stream.
    pub fn at_end(self) -> TransportError {
        match self {
            CaptureError::Provider(err) => TransportError::AfterOk(err),
            CaptureError::Malformed(err) => TransportError::Stream(err),
        }
    }

    /// As a transport error for the whole reply `text`: the provider's own error is an error
    /// after the 200, a malformed reply a decode error quoting the start of the body.
    pub fn of_whole(self, text: &str) -> TransportError {
        match self {
            CaptureError::Provider(err) => TransportError::AfterOk(err),
            CaptureError::Malformed(err) => {
                TransportError::Decode(format!("{err}: {}", snippet(text)))
            }
        }
    }
}

/// A [`CaptureError::Malformed`] saying `what`.
pub fn malformed(what: impl fmt::Display) -> CaptureError {
    CaptureError::Malformed(what.to_string())
}

/// A captured reply: the assistant message, and the reply's finish reason and usage.
pub type Captured = Result<(Message, ReplyMeta), CaptureError>;

/// The start of `text` (200 characters, `…` when cut), to quote a body in an error.
pub fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(200).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}
