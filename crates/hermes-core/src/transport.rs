//! What a wire reports back to the driver: the captured reply with its normalised usage and
//! finish reason, streamed text, and the typed errors of a request. No HTTP types cross it
//! (the wire itself is [`crate::wire::Wire`]).

use std::time::Duration;

use crate::message::Message;

/// A piece of reply text as it streams in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Readable thinking (`reasoning_content`, `reasoning` or Copilot's `reasoning_text`).
    Reasoning(&'a str),
    /// Answer text.
    Content(&'a str),
    /// A fragment of a tool call, as OpenAI streams `tool_calls`: the call's `id` and `name`
    /// arrive with its first fragment (`None` after), its `arguments` text in pieces whose
    /// concatenation is the captured call's arguments (a wire that receives them whole reports
    /// one fragment). `index` counts the reply's tool calls from 0, in the order they began.
    ToolCall {
        /// Which call of the reply (0-based, in the order the calls began).
        index: usize,
        /// The call's id, on its first fragment.
        id: Option<&'a str>,
        /// The function's name, on its first fragment.
        name: Option<&'a str>,
        /// The next piece of the arguments text (may be empty).
        arguments: &'a str,
    },
    /// The signature of the signed thinking block being streamed (Claude's `signature_delta`:
    /// it arrives whole, after the block's text; the latest one is the block's).
    Signature(&'a str),
}

/// Where a wire reports streamed text as it arrives: the `on_delta` of [`crate::wire::Wire::send`]
/// (and of every reader a wire hands it to). A borrowed callback, called once a [`Delta`], from
/// whichever task reads the reply.
pub type OnDelta<'a> = &'a (dyn for<'d> Fn(Delta<'d>) + Send + Sync);

/// What [`crate::wire::Wire::send`] gives: the captured reply, or the error of the request.
pub type SendResult = Result<Reply, TransportError>;

/// Token counts of one reply, normalised across wires (each wire fills them from its own
/// fields; absent counts are 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt (input) tokens, cached ones included.
    pub input: u64,
    /// Completion (output) tokens, reasoning included.
    pub output: u64,
    /// Of `output`, the tokens spent thinking.
    pub reasoning: u64,
    /// Of `input`, the tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write: u64,
}

impl Usage {
    /// A usage with these counts.
    pub fn new(input: u64, output: u64, reasoning: u64, cache_read: u64, cache_write: u64) -> Self {
        Usage {
            input,
            output,
            reasoning,
            cache_read,
            cache_write,
        }
    }

    /// The sum of two usages.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input: self.input + other.input,
            output: self.output + other.output,
            reasoning: self.reasoning + other.reasoning,
            cache_read: self.cache_read + other.cache_read,
            cache_write: self.cache_write + other.cache_write,
        }
    }
}

/// Why a reply ended, normalised across wires.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The output limit cut it.
    Length,
    /// It called tools.
    ToolCalls,
    /// A content filter stopped it.
    ContentFilter,
    /// Anything else, as the wire spelled it.
    Other(String),
}

impl FinishReason {
    /// Reads the chat-completions spelling (`stop`, `length`, `tool_calls`, `content_filter`).
    pub fn from_chat(reason: &str) -> FinishReason {
        match reason {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

/// The end of a reply besides the message itself, normalised by its wire.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ReplyMeta {
    /// Why it ended.
    pub finish: Option<FinishReason>,
    /// Its token counts.
    pub usage: Option<Usage>,
    /// Replayed carriers the provider says it dropped instead of refusing the request
    /// (Anthropic's `input_transformations`, docs/spec.md §5a 4), counted by the driver as
    /// `dropped_upstream`.
    pub dropped_upstream: u64,
}

impl ReplyMeta {
    /// A reply's end.
    pub fn new(finish: Option<FinishReason>, usage: Option<Usage>) -> Self {
        ReplyMeta {
            finish,
            usage,
            dropped_upstream: 0,
        }
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

/// A bounded wait, so a front end can say which limit ran out without reading text (the CLI
/// names its `[limits]` key; a server maps it to a gateway timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wait {
    /// Connecting to the provider.
    Connect,
    /// From a request to the first byte of its response.
    FirstByte,
    /// Silence between two chunks of a stream (or while a whole body arrives).
    Idle,
    /// A whole turn, tool loop included.
    Turn,
    /// Waiting for another holder to let go of a session.
    LeaseWait,
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
    /// No answer in time: `wait` is the limit that ran out, `detail` says where and how long.
    #[error("the request timed out: {detail}")]
    Timeout {
        /// The limit that ran out.
        wait: Wait,
        /// Where and how long, in words.
        detail: String,
    },
    /// The connection could not be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The reply is not what the wire promises.
    #[error("malformed reply: {0}")]
    Decode(String),
    /// The stream broke or ended early.
    #[error("the stream broke: {0}")]
    Stream(String),
    /// A streamed reply went silent for longer than the idle limit after it had begun (the
    /// text says how far it got). Retried at most once (`crate::driver::STALL_RETRIES`): the
    /// stall itself already waited the whole idle limit.
    #[error("the stream stalled: {0}")]
    Stalled(String),
    /// The provider reported an error after answering 200 (nothing is stored).
    #[error("the provider reported an error mid-reply: {0}")]
    AfterOk(String),
    /// The request could not be built or sent.
    #[error("cannot send the request: {0}")]
    Request(String),
    /// A parameter was asked for that this wire (or this provider or model on it) cannot send;
    /// nothing was sent.
    #[error("cannot send {parameter} to {wire}: {why}")]
    Unsupported {
        /// The parameter, as [`crate::sampling::Sampling`] names it (`seed`, `stop`, …).
        parameter: &'static str,
        /// The wire, provider or model that cannot take it.
        wire: String,
        /// Why, and what to do instead.
        why: String,
    },
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
    /// `parameter` cannot be sent to `wire`, because `why`.
    pub fn unsupported(
        parameter: &'static str,
        wire: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        TransportError::Unsupported {
            parameter,
            wire: wire.into(),
            why: why.into(),
        }
    }

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
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            TransportError::Http { status, .. } => *status == 429 || *status >= 500,
            TransportError::Timeout { .. }
            | TransportError::Connect(_)
            | TransportError::Stalled(_) => true,
            _ => false,
        }
    }

    /// The limit that ran out, for a timeout or a stall.
    pub fn wait(&self) -> Option<Wait> {
        match self {
            TransportError::Timeout { wait, .. } => Some(*wait),
            TransportError::Stalled(_) => Some(Wait::Idle),
            _ => None,
        }
    }

    /// True for a stream that went silent after it had begun ([`TransportError::Stalled`]).
    pub(crate) fn is_stall(&self) -> bool {
        matches!(self, TransportError::Stalled(_))
    }
}
