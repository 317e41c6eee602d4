//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the stream reader.
//! Not an API: only `hermes-fuzz` turns the feature on.

use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError};

use crate::wire::ChatTurn;

/// A streamed reply (`body` cut every `cut` bytes) read by the chat wire's stream reader
/// ([`ChatTurn`]) through the one SSE loop, as `send` reads it.
pub fn stream(body: &[u8], cut: usize, origin: Origin) -> Result<Reply, TransportError> {
    hermes_providers::fuzzing::read_sse_cut(body, cut, ChatTurn::new(), origin)
}
