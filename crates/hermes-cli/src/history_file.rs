//! Reading a history file (`preview --history`, `sessions import`): the whole file in one
//! buffer the kernel may back with huge pages, then core's one parser.

use std::io::{self, Read as _};
use std::ops::Deref;
use std::path::Path;

use anyhow::Context as _;
use hermes_core::{SessionFile, parse_history};

/// Files smaller than this are read onto the heap: one huge page (2 MiB on x86-64 and arm64).
const MAPPED_FROM: u64 = 2 << 20;

/// Reads and parses the history file at `path`; the errors name the file.
pub(crate) fn read(path: &Path) -> anyhow::Result<SessionFile> {
    let bytes = read_whole(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse_history(text).with_context(|| format!("{} is not a valid history", path.display()))
}

/// A file's bytes, in an anonymous mapping or on the heap.
enum Bytes {
    Mapped(memmap2::MmapMut),
    Heap(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Heap(vec) => vec,
        }
    }
}

/// The whole file. A large one goes into an anonymous mapping of its size advised for
/// transparent huge pages: read into ordinary heap pages, a 23 MB history cost one page fault
/// per 4 KiB — a fifth of `hermes preview`'s time in issue 35's profile (`perf stat`: 14,427
/// faults and 66.7 ms, then 9,344 and 53.5 ms). A file that changes size while it is read is
/// read again onto the heap.
fn read_whole(path: &Path) -> io::Result<Bytes> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len < MAPPED_FROM {
        return std::fs::read(path).map(Bytes::Heap);
    }
    let size = usize::try_from(len).map_err(|_| io::Error::other("the file is too large"))?;
    let mut map = memmap2::MmapMut::map_anon(size)?;
    // Advice only: without transparent huge pages the mapping is read as it is.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    let whole = match file.read_exact(&mut map) {
        Ok(()) => file.read(&mut [0])? == 0,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
        Err(e) => return Err(e),
    };
    if whole {
        Ok(Bytes::Mapped(map))
    } else {
        std::fs::read(path).map(Bytes::Heap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file above the mapping threshold reads to exactly its bytes, and one below to its
    /// bytes on the heap; a history that is not UTF-8 is named.
    #[test]
    fn large_and_small_files_read_to_their_exact_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let large = dir.path().join("large.json");
        let bytes: Vec<u8> = (0..(MAPPED_FROM as usize + 12_345))
            .map(|i| b"abcdefgh\n"[i % 9])
            .collect();
        std::fs::write(&large, &bytes).unwrap();
        let read = read_whole(&large).unwrap();
        assert!(matches!(read, Bytes::Mapped(_)));
        assert_eq!(&read[..], &bytes[..]);

        let small = dir.path().join("small.json");
        std::fs::write(&small, b"[]").unwrap();
        let read = read_whole(&small).unwrap();
        assert!(matches!(read, Bytes::Heap(_)));
        assert_eq!(&read[..], b"[]");

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, b"[\"\xff\"]").unwrap();
        let err = format!("{:#}", super::read(&bad).unwrap_err());
        assert!(
            err.starts_with("cannot read ") && err.contains("bad.json"),
            "{err}"
        );
        assert!(err.ends_with("stream did not contain valid UTF-8"), "{err}");
    }
}
