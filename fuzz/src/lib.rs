//! `hermes-fuzz`: the bodies of hermes' fuzz targets, each a plain `fn(&[u8])` that panics on a
//! crash (a panic in the code under test, or a broken invariant asserted here).
//!
//! cargo-fuzz runs them on nightly (`fuzz/cargo-fuzz/`, one one-line target per entry of
//! [`TARGETS`]; `cargo xtask fuzz`); on stable, `tests/regressions.rs` replays every input kept
//! under `regressions/<target>/` and every seed under `seeds/<target>/`. See
//! docs/internals/fuzzing.md.

mod check;
mod core;
mod doors;
mod import;
mod refusal;
mod replies;

pub use crate::core::{history, normal, raw_json};
pub use doors::{chat_door, messages_door, responses_door, signature};
pub use import::import;
pub use refusal::refusal;
pub use replies::{
    anthropic_frames, anthropic_stream, anthropic_whole, bedrock_frames, bedrock_whole,
    chat_stream, chat_whole, gemini_stream, gemini_whole, responses_stream, responses_whole,
};

/// A target's body: panics on a crash.
pub type Target = fn(&[u8]);

/// Every target by name: the names of `fuzz/cargo-fuzz/fuzz_targets/*.rs`, of the seed,
/// dictionary and regression folders.
pub const TARGETS: [(&str, Target); 20] = [
    ("chat_stream", chat_stream),
    ("chat_whole", chat_whole),
    ("anthropic_stream", anthropic_stream),
    ("anthropic_whole", anthropic_whole),
    ("anthropic_frames", anthropic_frames),
    ("gemini_stream", gemini_stream),
    ("gemini_whole", gemini_whole),
    ("responses_stream", responses_stream),
    ("responses_whole", responses_whole),
    ("bedrock_frames", bedrock_frames),
    ("bedrock_whole", bedrock_whole),
    ("refusal", refusal),
    ("import", import),
    ("history", history),
    ("normal", normal),
    ("chat_door", chat_door),
    ("messages_door", messages_door),
    ("responses_door", responses_door),
    ("signature", signature),
    ("raw_json", raw_json),
];
