//! Standard output for commands that print large bodies: one buffered writer, flushed once by
//! the caller (a 1,000-turn preview is a few hundred writes, not one per line).

use std::io::{self, BufWriter, StdoutLock};

/// Bytes gathered before each write to the terminal or pipe.
const BUFFER: usize = 1 << 16;

/// A buffered lock on stdout. Call `flush()` at the end: a flush error (a closed pipe) must
/// reach the caller, which dropping the writer would swallow.
pub(crate) fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::with_capacity(BUFFER, io::stdout().lock())
}
