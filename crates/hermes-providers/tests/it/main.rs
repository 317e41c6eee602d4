//! The integration tests of hermes-providers, one binary: each module was a test file of its own
//! (the conformance suite, `harness = false`, stays `tests/conformance.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bedrock_wire;
mod client_turns;
mod gemini_wire;
mod images;
mod images_sim;
mod paths;
mod responses_imported;
mod responses_wire;
mod sampling;
mod sdk_bedrock;
mod sdk_gemini;
mod sdk_responses;
mod sdk_schema;
mod sim;
mod steer;
mod support;
mod tool_deltas;
mod transport;
mod waits;
