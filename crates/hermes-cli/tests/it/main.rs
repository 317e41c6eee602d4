//! The `hermes` CLI end to end, one test binary: each module is one area, run through the real
//! binary in a home of its own (see `support`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic_live;
mod bedrock_live;
mod chaos;
mod chaos_serve;
mod chat;
mod cli;
mod everyday;
mod fidelity;
mod gemini_live;
mod goldens;
mod inspector;
mod move_in;
mod native_compaction;
mod otel;
mod preview_resume;
mod repl_pty;
mod responses_compaction;
mod responses_live;
mod sdk_anthropic;
mod security;
mod serve;
mod shared_store;
mod stall;
mod support;
mod thinking_memory;
mod tool_loop;
#[cfg(unix)]
mod tool_security;
mod wire;
