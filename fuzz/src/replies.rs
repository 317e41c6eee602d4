//! The reply readers of every wire: each wire's stream reader (SSE, or AWS event-stream frames)
//! and its whole-reply capture. A stream target reads its input whole and cut into single
//! bytes (both must agree); whatever either reader returns stores and loads again unchanged and
//! holds no carrier its input does not.

use hermes_core::transport::{Reply, TransportError};
use hermes_core::{Message, ReplyMeta};
use hermes_providers::native::reply::CaptureError;

use crate::check::{cut_anywhere, no_foreign_carriers, origin, round_trips};

/// A stream reader: the body and where to cut it.
type StreamRead = fn(&[u8], usize, hermes_core::Origin) -> Result<Reply, TransportError>;

/// A whole-reply capture.
type WholeRead = fn(&str, hermes_core::Origin) -> Result<(Message, ReplyMeta), CaptureError>;

/// A streamed reply through `read`; `carriers_checked`: the carriers are readable in the body
/// (not base64-encoded inside frames).
fn stream(input: &[u8], read: StreamRead, carriers_checked: bool) {
    let reply = cut_anywhere(input, |body, cut| read(body, cut, origin()));
    if let Ok(reply) = reply {
        round_trips(&reply.message);
        if carriers_checked {
            no_foreign_carriers(&String::from_utf8_lossy(input), &[reply.message]);
        }
    }
}

/// A whole reply through `read`.
fn whole(input: &[u8], read: WholeRead) {
    let text = String::from_utf8_lossy(input);
    if let Ok((msg, _meta)) = read(&text, origin()) {
        round_trips(&msg);
        no_foreign_carriers(&text, &[msg]);
    }
}

/// `chat_stream`: a chat-completions SSE stream.
pub fn chat_stream(input: &[u8]) {
    stream(input, hermes_wire_chat::fuzzing::stream, true);
}

/// `chat_whole`: a whole chat-completions reply.
pub fn chat_whole(input: &[u8]) {
    whole(input, hermes_wire_chat::capture_message);
}

/// `anthropic_stream`: a Messages SSE stream.
pub fn anthropic_stream(input: &[u8]) {
    stream(input, hermes_wire_anthropic::fuzzing::stream, true);
}

/// `anthropic_whole`: a whole Messages reply.
pub fn anthropic_whole(input: &[u8]) {
    whole(input, hermes_wire_anthropic::fuzzing::whole);
}

/// `anthropic_frames`: a Bedrock InvokeModel stream (event-stream frames holding base64
/// Messages events).
pub fn anthropic_frames(input: &[u8]) {
    stream(input, hermes_wire_anthropic::fuzzing::frames, false);
}

/// `gemini_stream`: a Gemini `alt=sse` stream.
pub fn gemini_stream(input: &[u8]) {
    stream(input, hermes_wire_gemini::fuzzing::stream, true);
}

/// `gemini_whole`: a whole `generateContent` reply.
pub fn gemini_whole(input: &[u8]) {
    whole(input, hermes_wire_gemini::fuzzing::whole);
}

/// `responses_stream`: a Responses SSE stream.
pub fn responses_stream(input: &[u8]) {
    stream(input, hermes_wire_responses::fuzzing::stream, true);
}

/// `responses_whole`: a whole Responses object.
pub fn responses_whole(input: &[u8]) {
    whole(input, hermes_wire_responses::fuzzing::whole);
}

/// `bedrock_frames`: a ConverseStream body (event-stream frames).
pub fn bedrock_frames(input: &[u8]) {
    stream(input, hermes_wire_bedrock::fuzzing::frames, true);
}

/// `bedrock_whole`: a whole Converse reply.
pub fn bedrock_whole(input: &[u8]) {
    whole(input, hermes_wire_bedrock::fuzzing::whole);
}
