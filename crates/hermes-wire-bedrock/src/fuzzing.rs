//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the ConverseStream
//! frame reader, whole-reply capture and the botocore-style JSON reader and `ensure_ascii`
//! writer. Not an API: only `hermes-fuzz` turns the feature on.

use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError};
use hermes_providers::native::reply::Captured;

use crate::{capture, pyjson};

/// A ConverseStream body (AWS event-stream frames, cut every `cut` bytes), as `send` reads it.
pub fn frames(body: &[u8], cut: usize, origin: Origin) -> Result<Reply, TransportError> {
    let mut read = capture::ConverseStream::new();
    for chunk in body.chunks(cut.max(1)) {
        read.push(chunk, &|_| {})?;
    }
    read.finish(origin)
}

/// A whole (non-streamed) Converse reply.
pub fn whole(text: &str, origin: Origin) -> Captured {
    capture::capture_reply(text, origin)
}

/// `text` read as `json.loads` reads it and written as botocore's `json.dumps` writes it
/// (`ensure_ascii`, Python's separators and number spellings).
pub fn python_json(text: &str) -> Result<String, String> {
    let mut out = String::new();
    pyjson::Json::parse(text)?.write(&mut out);
    Ok(out)
}
