//! The integration tests of hermes-compaction, one binary: each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod compress;
mod properties;
