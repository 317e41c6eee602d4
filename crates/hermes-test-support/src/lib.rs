//! What hermes' test suites share, so no test file carries its own copy: running the `hermes`
//! binary in a home of its own with a clean environment ([`home`]), recording a test that
//! skipped so `cargo xtask ci` counts it ([`skip`]), finding the Python with the official SDKs
//! and comparing a body with the SDK's ([`sdk`]) and reading its validator's verdicts
//! ([`validator`]), finding the real agent programs `cargo xtask clients` installed and
//! recording the table of their runs ([`clients`]), a Messages client's step of a tool loop
//! ([`messages`]), a tool set never called ([`memory`];
//! the session log in memory is `hermes_core::driver::MemoryLog`), a PostgreSQL cluster of one's own
//! ([`pg_cluster`]: a test that restarts its server, the benchmark's durable one), and a count
//! of the SQL statements an operation runs ([`statements`]).
//!
//! For tests and benchmarks only: no production crate depends on it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test helper that fails panics, as the test would

pub mod browser;
pub mod clients;
pub mod home;
pub mod memory;
pub mod messages;
pub mod pg_cluster;
pub mod sdk;
pub mod skip;
pub mod statements;
pub mod validator;
