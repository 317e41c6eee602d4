//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the Messages stream
//! reader, whole-reply capture and (with `bedrock`) the InvokeModel frame reader. Not an API:
//! only `hermes-fuzz` turns the feature on.

use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError};
use hermes_providers::native::reply::Captured;

use crate::capture;

/// A Messages SSE reply (`body` cut every `cut` bytes) through the one SSE loop, as `send`
/// reads it.
pub fn stream(body: &[u8], cut: usize, origin: Origin) -> Result<Reply, TransportError> {
    hermes_providers::fuzzing::read_sse_cut(body, cut, capture::StreamCapture::new(), origin)
}

/// A whole (non-streamed) Messages reply.
pub fn whole(text: &str, origin: Origin) -> Captured {
    capture::capture_reply(text, origin)
}

/// A Bedrock `invoke-with-response-stream` body (AWS event-stream frames, cut every `cut`
/// bytes), as `send` reads it.
#[cfg(feature = "bedrock")]
pub fn frames(body: &[u8], cut: usize, origin: Origin) -> Result<Reply, TransportError> {
    let mut capture = capture::FrameCapture::new();
    for chunk in body.chunks(cut.max(1)) {
        capture.push(chunk, &|_| {})?;
    }
    let (message, meta) = capture.finish(origin)?;
    Ok(Reply { message, meta })
}
