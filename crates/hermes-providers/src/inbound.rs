//! What the gateway's doors read from a client's request, shared by every dialect's reader
//! (`anthropic::inbound`, `hermes_wire_responses::inbound`): the error that says where a request
//! was wrong.

use std::fmt;

/// What was wrong with a request: where (a JSON path such as `messages.2.content.0`, or an
/// input item such as `input[3]`) and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboundError {
    /// Where in the request body: the JSON path of the offending value, or `input[i]`.
    pub at: String,
    /// What was wrong, naming that place.
    pub message: String,
}

impl InboundError {
    /// The error `message` at `at`.
    pub fn new(at: &str, message: impl Into<String>) -> Self {
        InboundError {
            at: at.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InboundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InboundError {}
