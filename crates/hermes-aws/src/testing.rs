//! AWS event-stream frames written for tests (the `test-support` feature, for the Bedrock wires'
//! tests; not part of the crate's API), so every test writes frames one way.

// Test helpers: a failed expectation panics, as in the tests that call them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

/// One AWS event-stream frame with string `headers` (in order) and `payload`.
pub fn frame(headers: &[(&'static str, &str)], payload: impl AsRef<[u8]>) -> Vec<u8> {
    let headers = headers
        .iter()
        .map(|(k, v)| Header::new(*k, HeaderValue::String((*v).to_owned().into())))
        .collect();
    let mut out = Vec::new();
    write_message_to(
        &Message::new_from_parts(headers, payload.as_ref().to_vec()),
        &mut out,
    )
    .unwrap();
    out
}

/// An event frame of `event_type` with a JSON `payload`.
pub fn event(event_type: &str, payload: &str) -> Vec<u8> {
    frame(
        &[
            (":message-type", "event"),
            (":event-type", event_type),
            (":content-type", "application/json"),
        ],
        payload,
    )
}
