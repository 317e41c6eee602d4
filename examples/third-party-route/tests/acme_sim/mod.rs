//! Acme Thinking Cloud's contract for the simulator, built through hermes-sim's public API: the
//! simulator has no `acme` profile of its own, so this is how a third party proves its route
//! against a strict server.
//!
//! The provider is made up; these rules and texts are its contract (docs/providers.md-style,
//! written independently of the route in `src/lib.rs`).

use hermes_sim::{EchoTurns, ProfileSpec, ReplyCarrier, ValueRule};
use serde_json::json;

/// The simulator profile's name (and Acme's provider id).
pub(crate) const NAME: &str = "acme";

/// A model id Acme answers as.
pub(crate) const MODEL: &str = "acme-think-2";

/// Top-level parameters Acme knows; any other is refused.
pub(crate) const TOP_LEVEL: &[&str] = &[
    "model",
    "messages",
    "stream",
    "retain_reasoning",
    "reasoning_mode",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
];

/// Assistant-message keys Acme reads (its carriers: `reasoning_content`, `reasoning_details`).
pub(crate) const ASSISTANT_KEYS: &[&str] = &[
    "role",
    "content",
    "tool_calls",
    "name",
    "reasoning_content",
    "reasoning_details",
];

/// Acme: `reasoning_content` is must-echo on tool-call turns, unknown keys and parameters are
/// refused, `reasoning_mode: "off"` turns thinking off, replies carry `reasoning_content`, and
/// errors come as `{"error":{"message":...}}`.
pub(crate) fn profile() -> ProfileSpec {
    ProfileSpec::new(NAME)
        .top_level(TOP_LEVEL.iter().copied())
        .unknown_parameter_text("unknown parameter `{name}`")
        .param("retain_reasoning", ValueRule::Boolean)
        .param(
            "reasoning_mode",
            ValueRule::one_of(["light", "deep", "off"]),
        )
        .invalid_value_text("invalid value for `{name}`: expected {expected}")
        .assistant_keys(ASSISTANT_KEYS.iter().copied())
        .unknown_field_text("unknown field `{field}` on messages[{index}]")
        .must_echo("reasoning_content", EchoTurns::ToolCalls)
        .missing_echo_text("acme: {field} missing on tool-call message {index}")
        .thinking_off_when("reasoning_mode", "off")
        .reply_carrier(ReplyCarrier::ReasoningContent)
        .error_envelope(json!({"error": {"message": "{message}"}}))
}
