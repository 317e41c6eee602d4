//! Compaction for hermes: `compress()` and the salvage pass over canonical history, pure and without IO (arrives with the compaction work; nothing lives here yet).
