//! Reasoning bound to its prefix, model and account (docs/spec.md §5a, issue 46): which Claude
//! models bind, the `thinking.block_binding` control and its beta, the refusal text, and the
//! simulator's memory of what each conversation left out.
//!
//! What the profile implements, precisely:
//!
//! - **Who is bound.** A request is *bound* when its model is in [`BOUND_MODELS`] (Claude Fable
//!   5.1 and later) or when it sets `thinking.block_binding` (any model). Unbound requests keep
//!   the profile's older checks exactly: a signature verifies against the block text and the
//!   prefix `system` + earlier messages, nothing else.
//! - **What a block is bound to.** Every `thinking` signature and `redacted_thinking` blob the
//!   `anthropic` profile mints carries four keyed tags (see [`super::thinking`]): the prefix
//!   (`system` and earlier messages, `cache_control` and thinking blocks left out), the `tools`
//!   list ([`tools_digest`]: `cache_control` left out), the model id as requested, and the account
//!   ([`account_hash`]: a keyed hash of the credential, `x-api-key` or the bearer token; Bedrock
//!   InvokeModel has one account). A bound request checks all four; a differing model or account
//!   is a `model_binding_mismatch`, a differing prefix or tools list a `prefix_binding_mismatch`.
//! - **Put back.** The simulator remembers, per instance, every assistant turn it minted thinking
//!   for, keyed by the digest of the messages up to and including that turn (thinking left out,
//!   `system` and `tools` not included, so a changed system prompt does not hide the turn). When
//!   an accepted request carries such a turn without some of its blocks, those blocks (by reply id
//!   and position, [`super::thinking::Token`]) are recorded as *left out*. A later bound request
//!   carrying a left-out block is refused (or, with `drop_block`, the block is dropped): a
//!   `prefix_binding_mismatch`. A block dropped by `drop_block` counts as left out too. The
//!   memory is keyed by block, and a block's reply id derives from its prefix, so two
//!   conversations share it only where they share the prefix (a branch).
//! - **Dropped from the middle.** In a bound request, the blocks of the recognised turns (and any
//!   other verified block) in message order must be present as one contiguous run: leaving out
//!   thinking from the start, from the end, or all of it is valid; a block present after a gap
//!   that follows a present block is refused (the first such block is named) or, with
//!   `drop_block`, every present block after the gap is dropped.
//! - **The refusal** is [`bound_text`]; with `drop_block` each dropped block is listed in the
//!   reply's `input_transformations` ([`dropped`]) and in the recorded request's notes.
//! - **Compaction blocks** ([`super::compaction`]) stand, in the prefix, for the messages they
//!   summarised, so thinking minted before the compaction on the kept turns still verifies.

use std::collections::{HashMap, HashSet};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::wire::canonical;

/// The beta that admits `thinking.block_binding`.
pub const BLOCK_BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

/// One bound model family: `claude-{family}-{major}-{minor}` from `since` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundFamily {
    /// The family word of the id (`fable` in `claude-fable-5-1`).
    pub family: &'static str,
    /// The first bound version, `(major, minor)`.
    pub since: (u32, u32),
}

/// The Claude models that bind every replayed thinking block to its prefix, model and account
/// for every account (docs/spec.md §5a, issue 46, from Anthropic's documentation: "Claude Fable 5.1
/// and later models"). The one list the simulator reads; a request setting `thinking.block_binding`
/// is bound whatever its model. (Accounts created from 2026-08-31, bound on every model, are not
/// simulated.)
pub const BOUND_MODELS: &[BoundFamily] = &[BoundFamily {
    family: "fable",
    since: (5, 1),
}];

/// The family and `(major, minor)` version of a Claude model id: `claude-fable-5-1`,
/// `claude-fable-5-1-20260901`, `claude-fable-5-1@20260901` (Vertex),
/// `us.anthropic.claude-fable-5-1-20260901-v1:0` (Bedrock), `claude-fable-6` (minor 0). An
/// 8-digit date is never read as a version; ids of the older shape (`claude-3-5-sonnet`) have no
/// family before their version and give `None`.
pub fn claude_version(model: &str) -> Option<(&str, (u32, u32))> {
    let at = model.find("claude-")?;
    let rest = &model[at + "claude-".len()..];
    let rest = rest.split(['@', ':']).next().unwrap_or("");
    let mut parts = rest.split('-');
    let family = parts.next().filter(|f| {
        !f.is_empty()
            && f.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })?;
    if family.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let major = number(parts.next()?)?;
    let minor = parts.next().and_then(number).unwrap_or(0);
    Some((family, (major, minor)))
}

/// Whether `model` is in [`BOUND_MODELS`]: replayed thinking must match its prefix, tools,
/// model and account, and a block left out once may not come back.
pub fn anthropic_is_bound(model: &str) -> bool {
    claude_version(model).is_some_and(|(family, version)| {
        BOUND_MODELS
            .iter()
            .any(|b| b.family == family && version >= b.since)
    })
}

/// Why a block was refused or dropped (the `reason` of an `input_transformations` entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// `system`, `tools`, an earlier message, a put-back or a dropped-from-the-middle block.
    Prefix,
    /// Another model or another account.
    Model,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Prefix => "prefix_binding_mismatch",
            Reason::Model => "model_binding_mismatch",
        }
    }
}

/// The refusal of a bound block (docs/spec.md §5a, Anthropic's text).
pub(crate) fn bound_text(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
    )
}

/// Simulator-chosen: `thinking.block_binding` without [`BLOCK_BINDING_BETA`].
pub(crate) fn binding_needs_beta() -> String {
    format!("thinking.block_binding: requires the {BLOCK_BINDING_BETA} beta")
}

/// One `input_transformations` entry.
pub(crate) fn dropped(index: usize, block: usize, reason: Reason) -> Value {
    json!({
        "type": "thinking_dropped",
        "path": format!("messages.{index}.content.{block}"),
        "reason": reason.as_str()
    })
}

/// The note recorded for a dropped block.
pub(crate) fn dropped_note(index: usize, block: usize, reason: Reason) -> String {
    format!(
        "messages.{index}.content.{block}: thinking block dropped ({})",
        reason.as_str()
    )
}

/// `HMAC(key, domain ‖ 0 ‖ data)`.
pub(crate) fn keyed(key: &[u8], domain: &str, data: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return [0; 32];
    };
    mac.update(domain.as_bytes());
    mac.update(&[0]);
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// A keyed hash of the credential a request was sent under (never the credential itself).
pub(crate) fn account_hash(key: &[u8], credential: &str) -> [u8; 32] {
    keyed(key, "anthropic account", credential.as_bytes())
}

/// Digest of the `tools` list with `cache_control` left out (names, descriptions, schemas and
/// the other keys compared with object keys sorted); absent and `[]` are the same.
pub(crate) fn tools_digest(tools: Option<&Value>) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"tools\0");
    for t in tools.and_then(Value::as_array).into_iter().flatten() {
        let mut t = t.clone();
        if let Some(o) = t.as_object_mut() {
            o.shift_remove("cache_control");
        }
        h.update(canonical(&t));
        h.update([0]);
    }
    h.finalize().into()
}

/// What the profile remembers between requests (one per simulator instance).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Assistant turns minted with thinking: turn key → (reply id, block count).
    minted: HashMap<[u8; 32], ([u8; 12], u8)>,
    /// Blocks an accepted request left out: (reply id, position).
    left_out: HashSet<([u8; 12], u8)>,
}

impl Ledger {
    /// Remembers a reply minted with `count` thinking blocks, its turn keyed by `turn`.
    pub(crate) fn minted(&mut self, turn: [u8; 32], reply: [u8; 12], count: u8) {
        self.minted.insert(turn, (reply, count));
    }

    /// The reply id and block count of a turn the simulator minted.
    pub(crate) fn turn(&self, turn: &[u8; 32]) -> Option<([u8; 12], u8)> {
        self.minted.get(turn).copied()
    }

    /// Whether a request of the conversation left this block out.
    pub(crate) fn was_left_out(&self, reply: [u8; 12], pos: u8) -> bool {
        self.left_out.contains(&(reply, pos))
    }

    /// Records a block an accepted request left out.
    pub(crate) fn leave_out(&mut self, reply: [u8; 12], pos: u8) {
        self.left_out.insert((reply, pos));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_the_bound_list() {
        for (id, version) in [
            ("claude-fable-5-1", Some(("fable", (5, 1)))),
            ("claude-fable-5-2-20261001", Some(("fable", (5, 2)))),
            ("claude-fable-5-20260101", Some(("fable", (5, 0)))),
            (
                "us.anthropic.claude-fable-5-1-20260901-v1:0",
                Some(("fable", (5, 1))),
            ),
            ("claude-fable-5-1@20260901", Some(("fable", (5, 1)))),
            ("claude-3-5-sonnet-20241022", None),
        ] {
            assert_eq!(claude_version(id), version, "{id}");
        }
        for bound in [
            "claude-fable-5-1",
            "claude-fable-5-2",
            "claude-fable-6",
            "claude-fable-5-10",
        ] {
            assert!(anthropic_is_bound(bound), "{bound}");
        }
        for unbound in [
            "claude-fable-5",
            "claude-fable-5-0",
            "claude-fable-4-9",
            "claude-opus-4-6",
            "claude-opus-4-8",
            "claude-sonnet-5-1",
            "gpt-5",
        ] {
            assert!(!anthropic_is_bound(unbound), "{unbound}");
        }
    }

    #[test]
    fn the_tools_digest_ignores_cache_control_only() {
        let a = json!([{"name": "now", "description": "d", "input_schema": {"type": "object"}}]);
        let b = json!([{"input_schema": {"type": "object"}, "description": "d", "name": "now",
                        "cache_control": {"type": "ephemeral"}}]);
        let c = json!([{"name": "now", "description": "e", "input_schema": {"type": "object"}}]);
        assert_eq!(tools_digest(Some(&a)), tools_digest(Some(&b)));
        assert_ne!(tools_digest(Some(&a)), tools_digest(Some(&c)));
        assert_eq!(tools_digest(None), tools_digest(Some(&json!([]))));
    }
}
