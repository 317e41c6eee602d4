//! Signed reasoning for Claude on the Converse doors: the digest of a Converse conversation prefix
//! that a `reasoningText` signature or a `redactedContent` blob is bound to.
//!
//! The signature and blob formats are the `anthropic` profile's (`crate::anthropic::thinking`:
//! a token naming the reply, the block's position and the reply's block count, sealed under an
//! HMAC over the block text and the prefix digest), so a fresh simulator with the same key verifies
//! old blocks and a block replayed into another conversation fails.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::anthropic::thinking::PrefixDigest;
use crate::wire::canonical;

/// Digest of a Converse prefix: the `system` text blocks (cache points dropped) and every
/// message's `(role, block)` pairs with `reasoningContent` and `cachePoint` blocks dropped; object
/// keys are compared sorted.
pub(crate) fn prefix_digest(system: Option<&Value>, messages: &[Value]) -> PrefixDigest {
    let mut h = Sha256::new();
    h.update(b"bedrock converse\0system\0");
    for block in system.and_then(Value::as_array).into_iter().flatten() {
        if counts(block) {
            h.update(canonical(block));
            h.update([0]);
        }
    }
    h.update(b"messages\0");
    hash_messages(&mut h, messages);
    h.finalize().into()
}

/// Digest of `toolConfig.tools` for a bound model (docs/spec.md §5a: the tool list is part of what
/// a block is bound to): each tool spec as [`crate::anthropic::binding::tools_digest`] reads a
/// tool, `cachePoint` entries left out.
pub(crate) fn tools_digest(tools: Option<&Value>) -> [u8; 32] {
    let kept: Vec<Value> = tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.get("cachePoint").is_none())
        .cloned()
        .collect();
    crate::anthropic::binding::tools_digest(Some(&Value::Array(kept)))
}

/// The key of an assistant turn the simulator minted reasoning for, from the messages up to and
/// including it (reasoning and cache points left out, `system` and tools not included, so a
/// changed system prompt does not hide the turn): how a bound request's put-back is recognised.
pub(crate) fn turn_key(messages: &[Value]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"bedrock converse turn\0");
    hash_messages(&mut h, messages);
    h.finalize().into()
}

/// Feeds every message's `(role, block)` pairs that [`counts`] keeps into `h`.
fn hash_messages(h: &mut Sha256, messages: &[Value]) {
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        for block in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| counts(b))
        {
            h.update(role.as_bytes());
            h.update([0]);
            h.update(canonical(block));
            h.update([0]);
        }
    }
}

/// The block counts for the prefix (reasoning and cache points do not).
fn counts(block: &Value) -> bool {
    block
        .as_object()
        .is_none_or(|o| !o.contains_key("reasoningContent") && !o.contains_key("cachePoint"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_prefix_ignores_reasoning_and_cache_points_but_not_text() {
        let a = prefix_digest(
            Some(&json!([{"text": "be brief"}, {"cachePoint": {"type": "default"}}])),
            &[
                json!({"role": "user", "content": [{"text": "hi"}]}),
                json!({"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "t", "signature": "s"}}},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "now", "input": {"b": 1, "a": 2}}}
                ]}),
            ],
        );
        let b = prefix_digest(
            Some(&json!([{"text": "be brief"}])),
            &[
                json!({"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}),
                json!({"role": "assistant", "content": [
                    {"toolUse": {"input": {"a": 2, "b": 1}, "name": "now", "toolUseId": "tooluse_1"}}
                ]}),
            ],
        );
        assert_eq!(a, b);
        let c = prefix_digest(
            None,
            &[json!({"role": "user", "content": [{"text": "hi"}]})],
        );
        let d = prefix_digest(
            None,
            &[json!({"role": "user", "content": [{"text": "ho"}]})],
        );
        assert_ne!(c, d);
    }
}
