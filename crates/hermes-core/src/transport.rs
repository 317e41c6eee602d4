//! The transport seam: what the turn driver needs from a wire (implemented in
//! hermes-providers), and the typed errors a wire reports. No HTTP types cross it.

use std::time::Duration;

use crate::message::{Message, Origin};
use crate::shape::ChatRequest;
use crate::stream::ReplyMeta;

/// A piece of reply text as it streams in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Readable thinking (`reasoning_content`, `reasoning` or Copilot's `reasoning_text`).
    Reasoning(&'a str),
    /// Answer text.
    Content(&'a str),
}

/// Sends one request and captures the reply.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Sends `request`; the captured assistant message records `origin`.
    async fn send(
        &self,
        request: &ChatRequest<'_>,
        origin: Origin,
    ) -> Result<Reply, TransportError>;

    /// Like [`Transport::send`], calling `on_delta` with each piece of text as it arrives (a
    /// wire that cannot stream calls it never).
    async fn send_streaming(
        &self,
        request: &ChatRequest<'_>,
        origin: Origin,
        on_delta: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        let _ = on_delta;
        self.send(request, origin).await
    }
}

/// A captured reply.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The assistant message, carriers as received, with its origin.
    pub message: Message,
    /// Finish reason and usage.
    pub meta: ReplyMeta,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The provider answered with a non-success status.
    #[error("HTTP {status}: {body}")]
    Http {
        /// Status code.
        status: u16,
        /// Response body (truncated to 64 KiB).
        body: String,
        /// `Retry-After`, when given in seconds.
        retry_after: Option<Duration>,
    },
    /// No answer in time.
    #[error("the request timed out")]
    Timeout,
    /// The connection could not be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The reply is not what the wire promises.
    #[error("malformed reply: {0}")]
    Decode(String),
    /// The stream broke or ended early.
    #[error("the stream broke: {0}")]
    Stream(String),
    /// The provider reported an error after answering 200 (nothing is stored).
    #[error("the provider reported an error mid-reply: {0}")]
    AfterOk(String),
    /// The request could not be built or sent.
    #[error("cannot send the request: {0}")]
    Request(String),
    /// The provider redirected the request somewhere hermes does not follow (another host, or
    /// a redirect that would turn the POST into a GET): the conversation is not re-sent there.
    #[error(
        "the provider answered HTTP {status} redirecting to {location}; hermes does not re-send a conversation to another address (if you trust it, pass it as --base-url)"
    )]
    Redirect {
        /// Status code (301, 302, 303, 307 or 308).
        status: u16,
        /// The `Location` the provider named (`(none)` when it named none).
        location: String,
    },
}

impl TransportError {
    /// The HTTP status, for an HTTP error.
    pub fn status(&self) -> Option<u16> {
        match self {
            TransportError::Http { status, .. } | TransportError::Redirect { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The error body, for an HTTP error or an error reported mid-reply.
    pub fn body(&self) -> Option<&str> {
        match self {
            TransportError::Http { body, .. } | TransportError::AfterOk(body) => Some(body),
            _ => None,
        }
    }

    /// `Retry-After`, when the provider gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            TransportError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True for what a bounded backoff may retry: 429, 5xx, timeouts, connection failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            TransportError::Http { status, .. } => *status == 429 || *status >= 500,
            TransportError::Timeout | TransportError::Connect(_) => true,
            _ => false,
        }
    }
}
