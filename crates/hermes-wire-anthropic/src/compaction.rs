//! Provider-native compaction on the Anthropic Messages wire (docs/spec.md §7, issue 46).
//!
//! An on-demand compaction is an ordinary request — the messages to summarise, sent as usual —
//! with top-level `compaction: {"type": "summarize"}` and the beta [`COMPACTION_BETA`]; the
//! reply is one assistant message whose one block is `{"type": "compaction", "content": …,
//! "encrypted_content": …}` (docs.claude.com, "Compaction": "only API-written (on-demand)
//! summaries keep kept-turn thinking valid"). Capture stores the block verbatim among the
//! message's `reasoning_details` ([`crate::signed::carriers`]); the message becomes a checkpoint
//! in the place of what it summarised, followed by the kept turns verbatim.
//!
//! Replay ([`super::body`]): the block leads the assistant message that carries it, and goes
//! only to the provider, model ([`hermes_providers::native::stored::own`]) and account ([`ACCOUNT_KEY`])
//! that minted it; anywhere else the message is hermes' own checkpoint of its readable summary
//! ([`hermes_core::checkpoint::as_own_checkpoints`]). In the provider's prefix the block stands
//! for the messages it summarised, so the kept turns' thinking stays valid: hermes records, per
//! kept turn, the prefix digests it had before the compaction against those it has after
//! ([`REKEY_KEY`], [`rekey`]), and the encoder reads a kept turn's stamps through them while
//! the block is replayed.

use std::collections::BTreeMap;

use hermes_core::{Message, NativeCompaction, Passthrough, RawJson, Role};
use serde::{Deserialize, Serialize};

use crate::signed::replay::{self, PrefixDigest};

/// The beta that admits `compaction` requests and replayed `compaction` blocks.
pub const COMPACTION_BETA: &str = "compact-2026-09-04";

/// The on-demand compaction as the engine runs it on a Claude host
/// ([`crate::AnthropicWire`]'s `native_compaction`): [`request`] asks for it (streamed as the
/// session's turns are), [`threshold_request`] has every turn ask past a threshold, and the
/// reply's `compaction` block is stored stamped by [`rekey`].
pub const NATIVE: NativeCompaction = NativeCompaction {
    request: request_for,
    threshold: threshold_request,
    streams: true,
    with_summary: false,
    what: "block",
    how: HOW,
    keeps: "thinking",
    finish: rekey,
};

/// How a manual compaction's line names this one (its beta, [`COMPACTION_BETA`]).
pub const HOW: &str = "on-demand compaction, compact-2026-09-04";

/// [`request`], whatever a client's own passthrough (its Responses-dialect fields are not this
/// wire's).
fn request_for(_: &Passthrough) -> Passthrough {
    request()
}

/// The top-level request field that asks for an on-demand compaction.
pub const COMPACTION_FIELD: &str = "compaction";

/// The `context_management` edit of a threshold compaction (anthropic 2.17.0
/// `types/beta/beta_compact_20260112_edit_param.py`: `type`, `trigger` — `{"type":
/// "input_tokens", "value": N}`, `beta_input_tokens_trigger_param.py` —, `instructions`,
/// `pause_after_compaction`).
pub const THRESHOLD_EDIT: &str = "compact_20260112";

/// The beta of a threshold compaction (docs/spec.md §7).
pub const THRESHOLD_BETA: &str = "compact-2026-01-12";

/// What a request adds to ask Claude to compact by itself once its input passes `threshold`
/// tokens: `context_management: {"edits": [{"type": "compact_20260112", "trigger": {"type":
/// "input_tokens", "value": threshold}}]}` and [`THRESHOLD_BETA`], as the request's passthrough
/// (the Anthropic wire to a Claude host writes both).
pub fn threshold_request(threshold: u64) -> Passthrough {
    let mut p = Passthrough::new().betas([THRESHOLD_BETA]);
    p.fields.push((
        "context_management".to_owned(),
        RawJson::from_text(format!(
            r#"{{"edits":[{{"type":"{THRESHOLD_EDIT}","trigger":{{"type":"input_tokens","value":{threshold}}}}}]}}"#
        ))
        .unwrap_or_else(|_| unreachable!("a JSON literal")),
    ));
    p
}

/// The key a compaction reply is stamped with: the account it was minted under
/// ([`super::account_of`], never the credential; absent when the wire names none). Never sent.
pub const ACCOUNT_KEY: &str = hermes_core::checkpoint::ACCOUNT_KEY;

/// The key of a provider checkpoint's digest map ([`Rekey`]). Never sent.
pub const REKEY_KEY: &str = "hermes_compaction_rekey";

/// What a request adds to ask for an on-demand compaction: the `compaction` field and its
/// beta, as the request's passthrough (the Anthropic wire to a Claude host writes both).
pub fn request() -> Passthrough {
    let mut p = Passthrough::new().betas([COMPACTION_BETA]);
    p.fields.push((
        COMPACTION_FIELD.to_owned(),
        RawJson::from_text(r#"{"type":"summarize"}"#.to_owned())
            .unwrap_or_else(|_| unreachable!("a JSON literal")),
    ));
    p
}

/// For each kept turn after a provider checkpoint, its prefix digests after the compaction
/// mapped to those it was stamped with before (plain [`replay::PREFIX_KEY`] and bound
/// [`replay::PREFIX_BINDING_KEY`]). Only turns whose stamps held just before the compaction
/// are listed: the provider vouches for the summarised prefix, not for one already changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rekey {
    /// Plain prefix digest now → as stamped.
    pub prefix: BTreeMap<String, String>,
    /// Prefix binding now → as stamped.
    pub binding: BTreeMap<String, String>,
}

/// The account a compaction reply was stamped with.
pub(crate) fn stored_account(msg: &Message) -> Option<String> {
    msg.extra
        .iter()
        .find(|(k, _)| k == ACCOUNT_KEY)
        .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
}

/// The digest map a provider checkpoint carries.
pub(crate) fn stored_rekey(msg: &Message) -> Option<Rekey> {
    let (_, raw) = msg.extra.iter().find(|(k, _)| k == REKEY_KEY)?;
    serde_json::from_str(raw.get()).ok()
}

/// Each assistant message's (plain, bound) prefix digests over `history`, `None` for others.
fn digests(
    history: &[Message],
    tools: Option<&RawJson>,
    account: Option<&str>,
) -> Vec<Option<(String, String)>> {
    let mut plain = PrefixDigest::new();
    let mut bound = PrefixDigest::bound(tools.map(RawJson::get), account);
    history
        .iter()
        .map(|m| {
            let p = plain.step(m);
            let b = bound.step(m);
            (m.role == Role::Assistant).then_some((p, b))
        })
        .collect()
}

/// Stamps `checkpoint` (the captured compaction reply) with the digest map of the turns it
/// keeps: `history` is the active view before the compaction, `start..end` the messages the
/// checkpoint replaces (the kept turns follow `end`), `tools` the request's tool definitions.
pub fn rekey(
    checkpoint: &mut Message,
    history: &[Message],
    start: usize,
    end: usize,
    tools: Option<&RawJson>,
) {
    let account = stored_account(checkpoint);
    let before = digests(history, tools, account.as_deref());
    let mut after_history: Vec<Message> = history[..start].to_vec();
    after_history.push(checkpoint.clone());
    after_history.extend_from_slice(&history[end..]);
    let after = digests(&after_history, tools, account.as_deref());
    let mut map = Rekey::default();
    for (k, msg) in history.iter().enumerate().skip(end) {
        let (Some((old_p, old_b)), Some((new_p, new_b))) =
            (&before[k], &after[k - end + start + 1])
        else {
            continue;
        };
        if replay::stored_digest(msg).as_ref() == Some(old_p) {
            map.prefix.insert(new_p.clone(), old_p.clone());
        }
        if replay::stored_binding(msg).as_ref() == Some(old_b) {
            map.binding.insert(new_b.clone(), old_b.clone());
        }
    }
    checkpoint.extra.retain(|(k, _)| k != REKEY_KEY);
    if let Ok(raw) = RawJson::from_serialize(&map) {
        checkpoint.extra.push((REKEY_KEY.to_owned(), raw));
    }
}
