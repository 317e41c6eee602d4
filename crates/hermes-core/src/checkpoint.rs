//! Checkpoints a provider wrote (docs/spec.md §7, "Provider-native compaction first"): an assistant
//! message whose `reasoning_details` hold the provider's `compaction` block verbatim, standing
//! in the active view where the messages it summarised stood.
//!
//! Only the wire that minted such a block sends it back, and only to its minter (the Anthropic
//! wire decides that itself); every other request gets hermes' own checkpoint instead — a user
//! message beginning with [`SUMMARY_MARKER`] that holds the block's readable summary
//! ([`as_own_checkpoints`]), so no request ever loses what was summarised.

use std::borrow::Cow;

use serde::Deserialize;

use crate::{DetailItem, Message, RawJson, Role};

/// The text every checkpoint (summary) message of hermes' own begins with.
pub const SUMMARY_MARKER: &str = "[Summary of the earlier conversation]";

/// The `type` of a provider's compaction block (Anthropic's on-demand compaction, beta
/// `compact-2026-09-04`: `{"type":"compaction","content":…,"encrypted_content":…}`) and of an
/// OpenAI Responses compaction item (`{"type":"compaction","id":…,"encrypted_content":…}`).
pub const COMPACTION_TYPE: &str = "compaction";

/// The key of hermes' own readable summary on a provider checkpoint whose compaction item has
/// none (an OpenAI Responses compaction item is opaque): what every other model is sent
/// instead ([`native_summary`]). Never sent.
pub const SUMMARY_KEY: &str = "hermes_compaction_summary";

/// The key a provider's compaction reply is stamped with: the account it was minted under (a
/// keyed hash of the credential, never the credential; absent when the wire names none), so
/// the block or item goes back to that account only. Never sent.
pub const ACCOUNT_KEY: &str = "hermes_compaction_account";

/// Just enough of a stored item to know a compaction block and read its summary.
#[derive(Deserialize)]
struct Probe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

fn probe(item: &DetailItem) -> Option<(Probe, &RawJson)> {
    let DetailItem::Provider { raw, opaque, .. } = item else {
        return None;
    };
    if !*opaque || !raw.get().contains("\"compaction\"") {
        return None;
    }
    let p: Probe = serde_json::from_str(raw.get()).ok()?;
    (p.kind.as_deref() == Some(COMPACTION_TYPE)).then_some((p, raw))
}

/// The provider's compaction block an assistant message carries, as stored (byte for byte), if
/// it is a provider-written checkpoint: the block and nothing else the model said (no text, no
/// tool call). A reply that carries one beside its answer — a threshold compaction (Anthropic's
/// `compact_20260112`) — is an ordinary turn ([`compaction_block`]).
pub fn native_compaction(msg: &Message) -> Option<&RawJson> {
    let said = msg.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
        || msg
            .content
            .as_ref()
            .is_some_and(|c| !matches!(c.get(), "null" | "\"\"" | "[]"));
    if said {
        return None;
    }
    compaction_block(msg)
}

/// The provider's compaction block an assistant message carries, as stored, whatever else it
/// holds.
pub fn compaction_block(msg: &Message) -> Option<&RawJson> {
    if msg.role != Role::Assistant {
        return None;
    }
    msg.reasoning_details
        .iter()
        .flatten()
        .find_map(|item| probe(item).map(|(_, raw)| raw))
}

/// The readable summary of the compaction block `msg` carries: the block's `content`, else
/// hermes' own summary stored beside an opaque item ([`SUMMARY_KEY`]).
pub fn native_summary(msg: &Message) -> Option<String> {
    if msg.role != Role::Assistant {
        return None;
    }
    let content = msg
        .reasoning_details
        .iter()
        .flatten()
        .find_map(|item| probe(item).map(|(p, _)| p.content))?;
    content
        .or_else(|| {
            msg.extra
                .iter()
                .find(|(k, _)| k == SUMMARY_KEY)
                .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
        })
        .or(Some(String::new()))
}

/// Hermes' own checkpoint holding `summary`: a user message beginning with [`SUMMARY_MARKER`].
pub fn own_checkpoint(summary: &str) -> Message {
    Message::text(
        Role::User,
        &format!("{SUMMARY_MARKER}\n\n{}", summary.trim()),
    )
}

/// `history` with every provider-written checkpoint `keep` does not keep replaced by hermes'
/// own checkpoint of its readable summary (one message for one: indices stay aligned).
/// Borrowed when nothing is replaced.
pub fn as_own_checkpoints<'h>(
    history: Cow<'h, [Message]>,
    keep: impl Fn(usize, &Message) -> bool,
) -> Cow<'h, [Message]> {
    let replace: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(i, m)| native_compaction(m).is_some() && !keep(*i, m))
        .map(|(i, _)| i)
        .collect();
    if replace.is_empty() {
        return history;
    }
    let mut owned = history.into_owned();
    for i in replace {
        let summary = native_summary(&owned[i]).unwrap_or_default();
        owned[i] = own_checkpoint(&summary);
    }
    Cow::Owned(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carrier(block: &str) -> Message {
        let mut m = Message::text(Role::Assistant, "");
        m.content = Some(RawJson::null());
        m.reasoning_details = Some(vec![
            DetailItem::from_raw(RawJson::from_text(block.to_owned()).unwrap()).unwrap(),
        ]);
        m
    }

    #[test]
    fn a_compaction_block_is_a_checkpoint_that_other_wires_read_as_hermes_own() {
        let block = r#"{"type":"compaction","content":"Summary of 4 earlier messages.\nuser: time?","encrypted_content":"c2Vh\/bGVk"}"#;
        let m = carrier(block);
        assert_eq!(native_compaction(&m).unwrap().get(), block);
        let history = vec![m, Message::text(Role::User, "next")];
        let out = as_own_checkpoints(Cow::Borrowed(&history), |_, _| false);
        assert_eq!(
            out[0].content.as_ref().unwrap().get(),
            r#""[Summary of the earlier conversation]\n\nSummary of 4 earlier messages.\nuser: time?""#
        );
        assert_eq!(out[0].role, Role::User);
        assert_eq!(out[1], history[1]);
        let kept = as_own_checkpoints(Cow::Borrowed(&history), |_, _| true);
        assert!(matches!(kept, Cow::Borrowed(_)));
        // A reply holding one beside its answer (a threshold compaction) is no checkpoint.
        let mut answered = carrier(block);
        answered.content = Some(RawJson::string("It is noon."));
        assert!(native_compaction(&answered).is_none());
        assert_eq!(compaction_block(&answered).unwrap().get(), block);
        // An opaque item (OpenAI's) reads hermes' own summary stored beside it.
        let mut opaque = carrier(r#"{"type":"compaction","id":"cmp_1","encrypted_content":"e"}"#);
        assert_eq!(native_summary(&opaque).as_deref(), Some(""));
        opaque.extra.push((
            SUMMARY_KEY.to_owned(),
            RawJson::string("the user asked the time"),
        ));
        assert_eq!(
            native_summary(&opaque).as_deref(),
            Some("the user asked the time")
        );
        // A thinking block is not one.
        let thinking = carrier(r#"{"type":"thinking","thinking":"compaction","signature":"s"}"#);
        assert!(native_compaction(&thinking).is_none());
    }
}
