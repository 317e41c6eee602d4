//! The integration tests of hermes-engine, one binary: each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod connections;
mod leases;
mod preview;
mod send;
mod summary;
mod thinking;
mod verdicts;
