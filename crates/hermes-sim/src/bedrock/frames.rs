//! AWS event-stream frames (`application/vnd.amazon.eventstream`) written with the official
//! `aws-smithy-eventstream` encoder: event frames (`:message-type: event`, `:event-type`,
//! `:content-type: application/json`) whose JSON payload carries a `p` padding field of
//! random-looking letters as the real service's do, and exception frames
//! (`:message-type: exception`, `:exception-type`).

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use aws_smithy_types::str_bytes::StrBytes;
use serde_json::Value;

use crate::wire::short_hash;

/// One frame to write.
#[derive(Clone, Debug)]
pub(crate) enum Frame {
    /// An event: its `:event-type` and JSON payload (`p` is added when written).
    Event(&'static str, Value),
    /// An exception: its `:exception-type` and JSON payload.
    Exception(&'static str, Value),
}

/// The alphabet the padding is cut from (the real padding is a prefix of such a run).
const PAD: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A padding value for the `n`-th frame of a stream seeded by `seed`.
fn padding(seed: &str, n: usize) -> String {
    let h = short_hash(&format!("{seed}\u{0}{n}"), 8);
    let len = usize::from_str_radix(&h, 16).unwrap_or(0) % PAD.len() + 1;
    PAD[..len].to_owned()
}

fn string_header(name: &'static str, value: &str) -> Header {
    Header::new(name, HeaderValue::String(StrBytes::from(value.to_owned())))
}

/// The frames as bytes, and a text rendering for the request record (one line per frame:
/// `event TYPE PAYLOAD` or `exception TYPE PAYLOAD`). `seed` varies the padding per stream.
pub(crate) fn encode(frames: &[Frame], seed: &str) -> (Vec<u8>, String) {
    let mut bytes = Vec::new();
    let mut text = String::new();
    for (n, frame) in frames.iter().enumerate() {
        let (message_type, kind_header, kind, payload) = match frame {
            Frame::Event(kind, payload) => {
                let mut payload = payload.clone();
                if let Some(o) = payload.as_object_mut() {
                    o.insert("p".into(), Value::String(padding(seed, n)));
                }
                ("event", ":event-type", *kind, payload)
            }
            Frame::Exception(kind, payload) => {
                ("exception", ":exception-type", *kind, payload.clone())
            }
        };
        let body = payload.to_string();
        let message = Message::new_from_parts(
            vec![
                string_header(kind_header, kind),
                string_header(":content-type", "application/json"),
                string_header(":message-type", message_type),
            ],
            body.clone().into_bytes(),
        );
        // The encoder only fails on headers or payloads over the format's limits (16 MiB).
        if write_message_to(&message, &mut bytes).is_err() {
            break;
        }
        text.push_str(message_type);
        text.push(' ');
        text.push_str(kind);
        text.push(' ');
        text.push_str(&body);
        text.push('\n');
    }
    (bytes, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::read_message_from;
    use serde_json::json;

    #[test]
    fn frames_decode_with_their_headers_and_padding() {
        let (bytes, text) = encode(
            &[
                Frame::Event("messageStart", json!({"role": "assistant"})),
                Frame::Exception("throttlingException", json!({"message": "slow down"})),
            ],
            "seed",
        );
        let mut buf = &bytes[..];
        let first = read_message_from(&mut buf).unwrap();
        let second = read_message_from(&mut buf).unwrap();
        assert!(buf.is_empty());
        let header = |m: &Message, name: &str| {
            m.headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| h.value().as_string().ok())
                .map(|s| s.as_str().to_owned())
        };
        assert_eq!(
            header(&first, ":event-type").as_deref(),
            Some("messageStart")
        );
        assert_eq!(header(&first, ":message-type").as_deref(), Some("event"));
        assert_eq!(
            header(&first, ":content-type").as_deref(),
            Some("application/json")
        );
        let payload: Value = serde_json::from_slice(first.payload()).unwrap();
        assert_eq!(payload["role"], "assistant");
        assert!(!payload["p"].as_str().unwrap().is_empty());
        assert_eq!(
            header(&second, ":exception-type").as_deref(),
            Some("throttlingException")
        );
        assert_eq!(
            header(&second, ":message-type").as_deref(),
            Some("exception")
        );
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with("event messageStart {"), "{text}");
    }
}
