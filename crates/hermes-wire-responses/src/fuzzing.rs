//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the stream reader
//! and whole-reply capture. Not an API: only `hermes-fuzz` turns the feature on.

use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError};
use hermes_providers::native::reply::Captured;

use crate::capture;

/// A streamed reply (`body` cut every `cut` bytes) through the one SSE loop, as `send` reads
/// it.
pub fn stream(body: &[u8], cut: usize, origin: Origin) -> Result<Reply, TransportError> {
    hermes_providers::fuzzing::read_sse_cut(body, cut, capture::TurnCapture::new(), origin)
}

/// A whole (non-streamed) reply.
pub fn whole(text: &str, origin: Origin) -> Captured {
    capture::capture_reply(text, origin)
}
