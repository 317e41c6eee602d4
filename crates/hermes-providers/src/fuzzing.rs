//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the one SSE loop over
//! a body cut where the fuzzer says, which each wire crate's own `fuzzing` reads its stream
//! through. Not an API: only `hermes-fuzz` turns the feature on.

use futures_util::FutureExt as _;
use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError};

use crate::native::sse::{SseTurn, read_sse};

/// Reads `body` as a streamed reply cut into pieces of `cut` bytes (at least 1), captured by
/// `turn` through the one SSE loop ([`read_sse`]), as a wire's `send` reads it.
pub fn read_sse_cut<T: SseTurn>(
    body: &[u8],
    cut: usize,
    turn: T,
    origin: Origin,
) -> Result<Reply, TransportError> {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(cut.max(1)).map(|c| Ok(c.to_vec())).collect();
    let read = read_sse(
        futures_util::stream::iter(pieces),
        turn,
        origin,
        &|_| {},
        |e, _| TransportError::Stream(e.to_string()),
    );
    // Every piece is ready: the loop never waits.
    read.now_or_never()
        .unwrap_or_else(|| Err(TransportError::Stream("the SSE loop waited".to_owned())))
}
