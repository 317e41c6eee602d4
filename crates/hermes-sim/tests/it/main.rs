//! The integration tests of hermes-sim, one binary: each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
#[cfg(feature = "bedrock")]
mod bedrock;
mod chat_profiles;
mod common;
mod gemini;
mod long_model;
mod openai_responses;
