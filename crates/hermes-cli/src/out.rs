//! Standard output for commands that print large bodies: one buffered writer, flushed once by
//! the caller (a 1,000-turn preview is a few hundred writes, not one per line).

use std::io::{self, BufWriter, StdoutLock};

use serde_json::Value;

/// Bytes gathered before each write to the terminal or pipe.
const BUFFER: usize = 1 << 16;

/// A buffered lock on stdout. Call `flush()` at the end: a flush error (a closed pipe) must
/// reach the caller, which dropping the writer would swallow.
pub(crate) fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::with_capacity(BUFFER, io::stdout().lock())
}

/// The text at `key` of a JSON row, or "" where it is missing or not text.
pub(crate) fn text<'a>(row: &'a Value, key: &str) -> &'a str {
    row[key].as_str().unwrap_or_default()
}

/// The texts of the JSON array at `key` of a row (none where it is missing).
pub(crate) fn texts<'a>(row: &'a Value, key: &str) -> Vec<&'a str> {
    row[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}
