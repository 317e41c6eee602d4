//! Helpers the unit tests of the Claude wires share (this crate's `test-support` feature, for the
//! Bedrock wire's tests; not part of its API): the native-wire kit's own helpers, and a signed
//! tool step as captured.

// Test helpers: a failed expectation panics, as in the tests that call them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub use hermes_providers::testing::*;
use serde_json::{Value, json};

use hermes_core::Message;

use crate::signed::replay::{PREFIX_BINDING_KEY, PREFIX_KEY};

/// A signed tool step as captured from `origin`, with its prefix digest when one is given.
pub fn step(origin: Value, id: &str, digest: Option<String>) -> Value {
    let mut msg = json!({
        "role": "assistant", "content": null,
        "tool_calls": [{"id": id, "type": "function",
                        "function": {"name": "now", "arguments": "{\"n\":123456789012345678901234567890}"}}],
        "reasoning_content": "Call now é/.",
        "reasoning_details": ["@SIG", "@RED"],
        "origin": origin,
        "hermes_block_order": ["thinking", "redacted_thinking", "tool_use"],
    });
    if let Some(d) = digest {
        msg[PREFIX_KEY] = json!(d);
    }
    msg
}

/// A finished tool loop around the signed tool `step` (system `system`), then a new question: the
/// step stamped with `binding` (none: an older row or an import), so its blocks are prior
/// thinking.
pub fn bound_conversation(mut step: Value, system: &str, binding: Option<&str>) -> Vec<Message> {
    if let Some(binding) = binding {
        step[PREFIX_BINDING_KEY] = json!(binding);
    }
    history(json!([
        {"role": "system", "content": system},
        {"role": "user", "content": "time?"},
        step,
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
        {"role": "assistant", "content": "Noon."},
        {"role": "user", "content": "and now?"},
    ]))
}

/// The JSON of an encoded body.
pub fn body_json<X>(out: &hermes_providers::native::Encoded<X>) -> Value {
    serde_json::from_slice(&out.body).unwrap()
}

/// Whether an encoded body sends signed blocks (a `"signature"` member anywhere).
pub fn sends_blocks<X>(out: &hermes_providers::native::Encoded<X>) -> bool {
    String::from_utf8_lossy(&out.body).contains(r#""signature""#)
}

/// One AWS event-stream frame (the InvokeModel door's tests).
#[cfg(test)]
pub use hermes_aws::testing::frame;
