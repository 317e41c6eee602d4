//! On-demand compaction for the `anthropic` profile (docs/spec.md §7, issue 46): a request with
//! top-level `compaction: {"type": "summarize"}` and the `anthropic-beta` [`COMPACTION_BETA`] is
//! answered with one assistant message whose only block is
//! `{"type": "compaction", "content": <summary>, "encrypted_content": <sealed>}`.
//!
//! `encrypted_content` is `base64(carried ‖ HMAC(key, carried ‖ content))` where `carried` is a
//! version tag, the messages chain of the summarised messages ([`super::thinking::
//! messages_chain`]) and keyed tags of the model and the account: the simulator verifies that
//! `content` is byte for byte the one it wrote and that the block comes back to the model and
//! account that minted it. In a later request (with the beta) such a block may lead an assistant
//! message (the first message of the request may then be that assistant message); in the prefix
//! it stands for the messages it summarised, so thinking minted on the kept turns before the
//! compaction still verifies, and so does thinking minted after it.
//!
//! Threshold compaction: a request whose `context_management.edits` hold `compact_20260112`
//! (with [`THRESHOLD_BETA`]) and whose input — counted from the latest compaction block on, the
//! API reading the conversation from there — passes the edit's trigger (`{"type":
//! "input_tokens", "value": N}`, default 150,000) is answered with the same block first in the
//! reply, then the scripted answer; `usage.iterations` lists the `compaction` iteration, then
//! the `message` one. The simulator does not enforce the API's 50,000-token minimum, so tests
//! can cross a trigger with small bodies.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::binding::keyed;
use crate::sign;

/// The beta that admits `compaction` requests and `compaction` blocks.
pub const COMPACTION_BETA: &str = "compact-2026-09-04";

/// The beta of threshold compaction (`compact_20260112`, docs/spec.md §7).
pub const THRESHOLD_BETA: &str = "compact-2026-01-12";

/// The default trigger of a `compact_20260112` edit (anthropic 2.17.0
/// `beta_compact_20260112_edit_param.py`: "Defaults to 150000 input tokens").
const DEFAULT_TRIGGER: u64 = 150_000;

/// The trigger of the request's `compact_20260112` edit, if it has one (already validated).
pub(crate) fn threshold(context_management: &Value) -> Option<u64> {
    let edits = context_management.get("edits")?.as_array()?;
    let edit = edits
        .iter()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("compact_20260112"))?;
    Some(
        edit.get("trigger")
            .and_then(|t| t.get("value"))
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TRIGGER),
    )
}

/// Simulator-chosen: a `compact_20260112` edit without [`THRESHOLD_BETA`].
pub(crate) fn needs_threshold_beta() -> String {
    format!("context_management.edits: compact_20260112 requires the {THRESHOLD_BETA} beta")
}

/// The input a threshold is compared with: a quarter of the body's bytes, less the messages
/// before the latest one holding a compaction block (the API reads the conversation from it).
pub(crate) fn counted_tokens(raw: &[u8], messages: &[Value]) -> usize {
    let latest = messages.iter().rposition(|m| {
        super::content_blocks(m.get("content"))
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("compaction"))
    });
    let before: usize = latest.map_or(0, |at| {
        messages[..at].iter().map(|m| m.to_string().len()).sum()
    });
    raw.len().saturating_sub(before).div_ceil(4)
}

/// Keys of a `compaction` block in a request.
pub(crate) const COMPACTION_BLOCK_KEYS: &[&str] =
    &["type", "content", "encrypted_content", "cache_control"];

const DOMAIN: &str = "anthropic compaction";
const MAGIC: &[u8; 4] = b"hsc1";
const TAG_LEN: usize = 16;
const CARRIED_LEN: usize = MAGIC.len() + 32 + 2 * TAG_LEN;

/// Simulator-chosen: `compaction` without [`COMPACTION_BETA`].
pub(crate) fn needs_beta(path: &str) -> String {
    format!("{path}: requires the {COMPACTION_BETA} beta")
}

/// Simulator-chosen: `encrypted_content` that does not verify against the block's `content`.
pub(crate) fn invalid_text(index: usize, block: usize) -> String {
    format!("messages.{index}.content.{block}: Invalid `encrypted_content` in `compaction` block")
}

/// Simulator-chosen: a genuine block replayed to another model or account.
pub(crate) fn elsewhere_text(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}: Invalid `encrypted_content` in `compaction` block. The block was created by a different model or account."
    )
}

/// Simulator-chosen: a `compaction` block anywhere but first in an assistant message.
pub(crate) fn not_first_text(index: usize, block: usize) -> String {
    format!(
        "messages.{index}.content.{block}: a `compaction` block must be the first block of an `assistant` message"
    )
}

fn tag(key: &[u8], domain: &str, data: &[u8]) -> [u8; TAG_LEN] {
    let mut t = [0u8; TAG_LEN];
    t.copy_from_slice(&keyed(key, domain, data)[..TAG_LEN]);
    t
}

/// Seals a compaction `content` for the summarised messages' `chain`, `model` and `account`.
pub(crate) fn seal(
    key: &[u8],
    chain: &[u8; 32],
    model: &str,
    account: &[u8; 32],
    content: &str,
) -> String {
    let mut carried = MAGIC.to_vec();
    carried.extend_from_slice(chain);
    carried.extend_from_slice(&tag(key, "compaction model", model.as_bytes()));
    carried.extend_from_slice(&tag(key, "compaction account", account));
    sign::seal_bound(key, DOMAIN, &carried, content.as_bytes())
}

/// How a replayed compaction block checks out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Genuine, for this model and account.
    Valid,
    /// Forged, or `content` / `encrypted_content` altered.
    Invalid,
    /// Genuine, but minted for another model or account.
    Elsewhere,
}

/// Verifies a `compaction` block for `model` and `account`.
pub(crate) fn check(key: &[u8], block: &Value, model: &str, account: &[u8; 32]) -> Check {
    let content = block.get("content").and_then(Value::as_str).unwrap_or("");
    let sealed = block
        .get("encrypted_content")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(carried) = sign::open_bound(key, DOMAIN, sealed, content.as_bytes()) else {
        return Check::Invalid;
    };
    if carried.len() != CARRIED_LEN || !carried.starts_with(MAGIC) {
        return Check::Invalid;
    }
    let at = MAGIC.len() + 32;
    let model_ok = carried[at..at + TAG_LEN] == tag(key, "compaction model", model.as_bytes());
    let account_ok = carried[at + TAG_LEN..] == tag(key, "compaction account", account);
    if model_ok && account_ok {
        Check::Valid
    } else {
        Check::Elsewhere
    }
}

/// The messages chain a `compaction` block carries (read, not verified: the rules verify every
/// such block before the prefix is digested), or `None` for any other block.
pub(crate) fn carried_chain(block: &Value) -> Option<[u8; 32]> {
    if block.get("type").and_then(Value::as_str) != Some("compaction") {
        return None;
    }
    let sealed = block.get("encrypted_content").and_then(Value::as_str)?;
    let bytes = STANDARD.decode(sealed).ok()?;
    if bytes.len() < CARRIED_LEN || !bytes.starts_with(MAGIC) {
        return None;
    }
    let mut chain = [0u8; 32];
    chain.copy_from_slice(&bytes[MAGIC.len()..MAGIC.len() + 32]);
    Some(chain)
}

/// The summary the scripted model writes for `messages`: each message's role and text (tool
/// calls by name, results by their text), in order.
pub(crate) fn summary(messages: &[Value]) -> String {
    let mut lines = Vec::new();
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let mut parts = Vec::new();
        for b in super::content_blocks(m.get("content")) {
            match b.get("type").and_then(Value::as_str).unwrap_or("") {
                "text" => parts.push(b["text"].as_str().unwrap_or("").to_owned()),
                "tool_use" => parts.push(format!(
                    "called {}",
                    b.get("name").and_then(Value::as_str).unwrap_or("")
                )),
                "tool_result" => parts.push(format!(
                    "result {}",
                    crate::model::text_joined(b.get("content"), " ")
                )),
                "compaction" => parts.push(format!(
                    "earlier: {}",
                    b.get("content").and_then(Value::as_str).unwrap_or("")
                )),
                _ => {}
            }
        }
        if !parts.is_empty() {
            lines.push(format!("{role}: {}", parts.join("; ")));
        }
    }
    format!(
        "Summary of {} earlier messages.\n{}",
        messages.len(),
        lines.join("\n")
    )
}
