//! AWS event-stream frames for tests: the unit tests reach this file through `testing`, and
//! `tests/it` includes it (`#[path]`), so both write frames one way.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

/// One AWS event-stream frame with string `headers` (in order) and `payload`.
pub(crate) fn frame(headers: &[(&'static str, &str)], payload: &[u8]) -> Vec<u8> {
    let headers = headers
        .iter()
        .map(|(k, v)| Header::new(*k, HeaderValue::String((*v).to_owned().into())))
        .collect();
    let mut out = Vec::new();
    write_message_to(
        &Message::new_from_parts(headers, payload.to_vec()),
        &mut out,
    )
    .unwrap();
    out
}

/// An event frame of `event_type` with a JSON `payload`.
#[allow(dead_code)] // `tests/it` and the unit tests each use a part of this file.
pub(crate) fn event(event_type: &str, payload: &str) -> Vec<u8> {
    frame(
        &[
            (":message-type", "event"),
            (":event-type", event_type),
            (":content-type", "application/json"),
        ],
        payload.as_bytes(),
    )
}
