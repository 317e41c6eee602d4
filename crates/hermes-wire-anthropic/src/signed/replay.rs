//! When stored thinking goes back to Claude (docs/spec.md §5), for both Claude wires.
//!
//! The prefix digest a signed turn is bound to, the tool loop in flight, the rules for a turn's
//! own signed blocks, the rebuilt block order, the fallback that sends a request without
//! thinking, and the answer to a refused signature.

use std::collections::BTreeSet;

use hermes_core::message::BLOCK_ORDER_KEY;
use hermes_core::{Message, RawJson, Role};
use sha2::{Digest, Sha256};

/// The key of the prefix digest a captured reply is stamped with: the conversation its signed
/// thinking is bound to. Never sent.
pub const PREFIX_KEY: &str = "hermes_prefix_digest";

/// The key of the prefix binding a captured reply of a bound Claude model is stamped with
/// (docs/spec.md §5a 1): the digest of the prefix as sent — the tools, the account, then every
/// message as [`PrefixDigest`] reads it (`cache_control` and thinking blocks are not part of it).
/// Never sent.
pub const PREFIX_BINDING_KEY: &str = "hermes_prefix_binding";

/// The prefix binding a captured turn was stamped with ([`PREFIX_BINDING_KEY`]), if any.
pub fn stored_binding(msg: &Message) -> Option<String> {
    msg.extra
        .iter()
        .find(|(k, _)| k == PREFIX_BINDING_KEY)
        .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
}

/// The last assistant message whose recorded prefix binding differs from the one it has now,
/// if any: its blocks and every earlier step's go without (§5a 2), so what is replayed is
/// always a run of the latest steps — "dropping thinking from the start", which the provider
/// takes — never a gap in the middle.
pub fn last_changed(history: &[Message], bindings: &[Option<String>]) -> Option<usize> {
    history
        .iter()
        .zip(bindings)
        .enumerate()
        .filter_map(|(i, (m, now))| {
            let stored = stored_binding(m)?;
            (now.as_deref() != Some(stored.as_str())).then_some(i)
        })
        .last()
}

/// The last assistant message an earlier request of the conversation left out (docs/spec.md §5a 3,
/// [`hermes_core::left_out::is_left_out`]), if any: its blocks and every earlier step's go
/// without, on any model, so a block left out once is never put back and what is replayed stays
/// a run of the latest steps.
pub fn last_left_out(history: &[Message]) -> Option<usize> {
    history
        .iter()
        .rposition(|m| m.role == Role::Assistant && hermes_core::left_out::is_left_out(m))
}

/// The digest of a conversation prefix: roles, content, tool calls and results — never
/// carriers, origins or stored bookkeeping — so leaving an earlier turn's thinking out does not
/// change it, and editing a message before a block does.
#[derive(Clone)]
pub struct PrefixDigest(Sha256);

impl PrefixDigest {
    /// An empty prefix.
    pub fn new() -> Self {
        PrefixDigest(Sha256::new())
    }

    /// An empty prefix bound to `tools` (the request's tool definitions as the wire reads
    /// them) and `account` ([`crate::account_of`]): the start of a prefix binding
    /// ([`PREFIX_BINDING_KEY`]).
    pub fn bound(tools: Option<&str>, account: Option<&str>) -> Self {
        let mut digest = PrefixDigest::new();
        for (tag, text) in [("tools", tools), ("account", account)] {
            let text = text.unwrap_or_default();
            digest.0.update(tag.as_bytes());
            digest.0.update((text.len() as u64).to_le_bytes());
            digest.0.update(text.as_bytes());
        }
        digest
    }

    /// Adds one message.
    pub fn add(&mut self, msg: &Message) {
        let h = &mut self.0;
        let mut field = |tag: &str, text: &str| {
            h.update(tag.as_bytes());
            h.update((text.len() as u64).to_le_bytes());
            h.update(text.as_bytes());
        };
        field("role", msg.role.as_str());
        if let Some(c) = &msg.content {
            match text_parts(c.get()) {
                // `cache_control` is not part of the prefix (docs/spec.md §5a; docs.claude.com:
                // editing `cache_control` is a valid edit), and one text part is the same text as
                // the string form (the API reads a string as one text block).
                Some(texts) => match texts.as_slice() {
                    [one] => field("content", one.get()),
                    many => {
                        field("texts", "");
                        for t in many {
                            field("text", t.get());
                        }
                    }
                },
                None => field("content", c.get()),
            }
        }
        for call in msg.tool_calls.iter().flatten() {
            field("call", call.id.as_deref().unwrap_or(""));
            field("name", &call.function.name);
            field(
                "args",
                call.function.arguments.as_ref().map_or("", |a| a.get()),
            );
        }
        if let Some(id) = &msg.tool_call_id {
            field("result", id);
        }
    }

    /// Adds `msg`, and gives the digest of the conversation before it when it is an assistant
    /// turn (what the turn's signed blocks are bound to, [`signed_replay`]'s `prefix`); no
    /// other message needs one, so for them it is empty and nothing is finalized.
    pub fn step(&mut self, msg: &Message) -> String {
        let prefix = if msg.role == Role::Assistant {
            self.hex()
        } else {
            String::new()
        };
        self.add(msg);
        prefix
    }

    /// The digest so far, as hex (its first 16 bytes).
    pub fn hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bytes = self.0.clone().finalize();
        let mut out = String::with_capacity(32);
        for b in bytes.iter().take(16) {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
        out
    }
}

impl Default for PrefixDigest {
    fn default() -> Self {
        PrefixDigest::new()
    }
}

/// The text literals of a content value that is a list of text parts and nothing else (each
/// `{"type": "text", "text": …}`, a `cache_control` beside it allowed), borrowed; `None` for
/// any other content.
fn text_parts(content: &str) -> Option<Vec<&serde_json::value::RawValue>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Part<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow)]
        text: &'a serde_json::value::RawValue,
        #[serde(default, rename = "cache_control")]
        _cache_control: Option<serde::de::IgnoredAny>,
    }
    if !content.starts_with('[') {
        return None;
    }
    let parts: Vec<Part<'_>> = serde_json::from_str(content).ok()?;
    (!parts.is_empty() && parts.iter().all(|p| p.kind == "text"))
        .then(|| parts.into_iter().map(|p| p.text).collect())
}

/// The stamp an outgoing request carries to its reply: the digest of the conversation it sends.
pub fn prefix_stamp(digest: &str) -> (String, RawJson) {
    (PREFIX_KEY.to_owned(), RawJson::string(digest))
}

/// The prefix digest a captured turn was stamped with.
pub fn stored_digest(msg: &Message) -> Option<String> {
    msg.extra
        .iter()
        .find(|(k, _)| k == PREFIX_KEY)
        .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
}

/// The kinds of a captured turn's blocks, in received order.
fn block_order(msg: &Message) -> Option<Vec<String>> {
    let (_, raw) = msg.extra.iter().find(|(k, _)| k == BLOCK_ORDER_KEY)?;
    serde_json::from_str(raw.get()).ok()
}

/// Where the tool loop in flight starts: after the last real user message. A user message that
/// follows tool results with no assistant turn between (a steer typed while a tool ran) is not
/// one: both Claude wires merge it into the `tool_result` turn, which Claude still reads as the
/// loop's "lastmost set of `tool_use` and `tool_result` blocks" (docs/providers.md, Anthropic
/// errors), so the step before it keeps its signed thinking.
pub fn loop_start(history: &[Message]) -> usize {
    let mut start = 0;
    let mut after_results = false;
    for (i, msg) in history.iter().enumerate() {
        match msg.role {
            Role::Tool => after_results = true,
            Role::Assistant => after_results = false,
            Role::User if !after_results => start = i + 1,
            Role::User | Role::System | Role::Developer => {}
        }
    }
    start
}

/// Whether the request ends in a tool loop step's results: a tool result after the last
/// assistant turn (a steer merged into that turn keeps it one).
fn ends_in_results(history: &[Message]) -> bool {
    history
        .iter()
        .rev()
        .take_while(|m| m.role != Role::Assistant)
        .any(|m| m.role == Role::Tool)
}

/// Whether a turn's own signed blocks go back to a Claude model, by where the turn stands:
/// inside the tool loop in flight always; before it only to a model that keeps earlier
/// thinking, and only while the conversation before the turn is the one its blocks are bound
/// to (`prefix`, the digest of the messages before it). `Ok` replays them verbatim, `Err`
/// leaves them out; either way with the reason.
pub fn signed_replay(
    msg: &Message,
    in_loop: bool,
    keeps_prior: bool,
    prefix: &str,
) -> Result<&'static str, &'static str> {
    if in_loop {
        Ok("in the tool loop in flight: signed blocks replayed verbatim")
    } else if !keeps_prior {
        Err("before the tool loop, and this model does not keep earlier thinking")
    } else if stored_digest(msg).is_some_and(|d| d != prefix) {
        Err(
            "the conversation before this turn changed (compaction, branch or system prompt): its signed blocks are left out",
        )
    } else {
        Ok("signed blocks replayed verbatim (model keeps earlier thinking)")
    }
}

/// Why a verdict on this wire leaves out a turn's stored blocks, if it does: `refused` holds
/// the refused fields, `signed` says some block is signed (or redacted), `redacted` that some
/// block is redacted, and `redacted_field` is the wire's name for a redacted block.
pub fn verdict_leaves_out(
    refused: &[&str],
    redacted_field: &str,
    signed: bool,
    redacted: bool,
) -> Option<&'static str> {
    if refused.contains(&"signature") && signed {
        Some("signed blocks refused by this target (verdict)")
    } else if refused.contains(&redacted_field) && redacted {
        Some("redacted blocks refused by this target (verdict): the turn's blocks left out")
    } else {
        None
    }
}

/// The blocks of an assistant turn in its captured order: `lead` first (readable thinking sent
/// without stored items), then as [`BLOCK_ORDER_KEY`] recorded them, each thinking kind taking
/// the next of `thinking` (`None`: left out), `text` the next of `texts`, `tool_use` the next
/// of `calls`. Thinking the order did not place still leads the turn; texts and calls it did
/// not place follow. With no recorded order: thinking, then text, then tool calls.
pub fn arrange<B>(
    msg: &Message,
    lead: Vec<B>,
    mut thinking: impl Iterator<Item = Option<B>>,
    mut texts: impl Iterator<Item = B>,
    mut calls: impl Iterator<Item = B>,
) -> Vec<B> {
    let mut blocks = lead;
    match block_order(msg) {
        Some(order) => {
            for kind in order {
                match kind.as_str() {
                    "thinking" | "redacted_thinking" => blocks.extend(thinking.next().flatten()),
                    "text" => blocks.extend(texts.next()),
                    "tool_use" => blocks.extend(calls.next()),
                    _ => {}
                }
            }
            let mut rest: Vec<B> = thinking.flatten().collect();
            if !rest.is_empty() {
                rest.append(&mut blocks);
                blocks = rest;
            }
        }
        None => blocks.extend(thinking.flatten()),
    }
    blocks.extend(texts);
    blocks.extend(calls);
    blocks
}

/// Why this request must go without its thinking request, if it must, when thinking is `on`:
/// a refused block belonged to the tool loop in flight (`thinking_off`), or the loop's latest
/// turn does not start with a thinking block `model` may receive
/// (`latest_starts_with_thinking`), which Claude answers with "Expected `thinking` or
/// `redacted_thinking`… found `tool_use`".
pub fn thinking_must_go(
    history: &[Message],
    on: bool,
    thinking_off: bool,
    latest_starts_with_thinking: Option<bool>,
    model: &str,
) -> Option<String> {
    let last_assistant = history.iter().rposition(|m| m.role == Role::Assistant);
    let in_loop_now =
        ends_in_results(history) && last_assistant.is_some_and(|i| i >= loop_start(history));
    let must = on && (thinking_off || (in_loop_now && latest_starts_with_thinking == Some(false)));
    must.then(|| {
        if thinking_off {
            "a refused block belonged to the tool loop in flight".to_owned()
        } else {
            format!("the latest turn of the tool loop has no thinking block {model} may receive")
        }
    })
}

/// The answer to a refused signature: which turns' blocks to leave out of one resend.
pub struct SignatureDrops {
    /// The history index of the assistant turn the error names, if it names one.
    pub named: Option<usize>,
    /// History indices whose blocks are left out.
    pub blocks_of: BTreeSet<usize>,
    /// Send the resend without thinking.
    pub thinking_off: bool,
}

impl SignatureDrops {
    /// The note of the resend: the provider refused `what`, the turn it named, and `off` (the
    /// wire's words for sending without thinking) when thinking goes off.
    pub fn note(&self, what: &str, off: &str) -> String {
        format!(
            "the provider refused {what}{}: resending once without those blocks{} (the stored history is unchanged, no verdict kept)",
            self.named
                .map_or(String::new(), |i| format!(" (message {i})")),
            if self.thinking_off { off } else { "" }
        )
    }
}

/// The turns a refused-signature `error` names: its `messages.N`, through `sources` (the history
/// indices merged into each wire message), is one assistant turn, whose blocks are left out,
/// with thinking off when it is in the tool loop in flight; when none is named, every assistant
/// turn's blocks are left out and thinking is off.
pub fn signature_drops(history: &[Message], sources: &[Vec<usize>], error: &str) -> SignatureDrops {
    let named = named_message(error)
        .and_then(|n| sources.get(n))
        .and_then(|sources| {
            sources
                .iter()
                .copied()
                .find(|&i| history.get(i).is_some_and(|m| m.role == Role::Assistant))
        });
    match named {
        Some(i) => SignatureDrops {
            named,
            blocks_of: BTreeSet::from([i]),
            thinking_off: i >= loop_start(history),
        },
        // Not told which: leave out every turn's blocks.
        None => SignatureDrops {
            named,
            blocks_of: history
                .iter()
                .enumerate()
                .filter(|(_, m)| m.role == Role::Assistant)
                .map(|(i, _)| i)
                .collect(),
            thinking_off: true,
        },
    }
}

/// The wire message index a Claude error names (`messages.N…`).
fn named_message(text: &str) -> Option<usize> {
    let at = text.find("messages.")? + "messages.".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// What docs/spec.md §5a 2–4 decide for one stored step's blocks once blocks may be left out: on a
/// bound model (`now`, the prefix binding as it is now) or after a turn an earlier request
/// left out. At or before the cut (`cut`) they are left out and counted (`Err`, the explain
/// line: left out earlier, the prefix changed — `changed` names what, when the stored parts
/// say —, or a later step's were); after it, blocks stamped with the binding `now` go, and
/// blocks with no recorded binding (an older row, an import, a client's own) go with
/// `drop_block` (`unknown`). `why` is the explain line so far.
pub fn bound(
    msg: &Message,
    why: String,
    now: Option<&str>,
    changed: impl FnOnce() -> Option<String>,
    cut: bool,
    unknown: &mut bool,
    carriers: &mut hermes_core::CarrierCounts,
) -> Result<String, String> {
    let stored = stored_binding(msg);
    if cut {
        carriers.dropped_prefix += 1;
        return Err(match (hermes_core::left_out::is_left_out(msg), stored.as_deref(), now) {
            (true, _, _) => {
                "left out: left out of an earlier request of this conversation (docs/spec.md §5a 3)"
                    .to_owned()
            }
            (false, Some(s), Some(now)) if s != now => {
                let what = changed().unwrap_or_else(|| {
                    "system prompt, tools, an earlier message or the account".to_owned()
                });
                format!(
                    "left out: the prefix changed since this block was made ({what}; docs/spec.md §5a 2)"
                )
            }
            _ => "left out: a later step's blocks are left out, and kept blocks stay the latest ones (docs/spec.md §5a 2, 3)".to_owned(),
        });
    }
    Ok(match (stored, now) {
        (_, None) => why,
        (Some(_), Some(_)) => format!("{why} (its prefix binding holds)"),
        (None, Some(_)) => {
            *unknown = true;
            format!("{why}; no recorded prefix: sent with drop_block")
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(order: Option<&[&str]>) -> Message {
        let mut msg = Message::text(Role::Assistant, "");
        if let Some(order) = order {
            msg.extra.push((
                BLOCK_ORDER_KEY.to_owned(),
                RawJson::from_serialize(&order).unwrap(),
            ));
        }
        msg
    }

    #[test]
    fn a_turn_is_arranged_in_its_recorded_order_and_unplaced_thinking_leads() {
        let arranged = |order, lead: Vec<&'static str>, thinking: Vec<Option<&'static str>>| {
            arrange(
                &turn(order),
                lead,
                thinking.into_iter(),
                ["t1", "t2"].into_iter(),
                ["c1"].into_iter(),
            )
        };
        let order: &[&str] = &["text", "thinking", "tool_use", "redacted_thinking"];
        assert_eq!(
            arranged(Some(order), vec![], vec![Some("a"), Some("b")]),
            ["t1", "a", "c1", "b", "t2"]
        );
        // Left out (`None`) takes its place and sends nothing; what the order did not place
        // leads the turn.
        assert_eq!(
            arranged(Some(&["text"]), vec![], vec![None, Some("b")]),
            ["b", "t1", "t2", "c1"]
        );
        assert_eq!(
            arranged(None, vec!["lead"], vec![Some("a")]),
            ["lead", "a", "t1", "t2", "c1"]
        );
    }

    #[test]
    fn a_steer_after_tool_results_does_not_start_a_new_loop() {
        let history = hermes_core::parse_history(
            &json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": null,
                 "tool_calls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "t", "content": "1"},
                {"role": "user", "content": "steer"},
                {"role": "user", "content": "and another"},
            ])
            .to_string(),
        )
        .unwrap()
        .messages;
        assert_eq!(loop_start(&history), 1);
        assert!(ends_in_results(&history));
        // A user message after an answer (no results since) starts one.
        let mut answered = history[..3].to_vec();
        answered.extend(history[..1].iter().cloned().map(|mut m| {
            m.role = Role::Assistant;
            m
        }));
        answered.push(history[3].clone());
        assert_eq!(loop_start(&answered), 5);
        assert!(!ends_in_results(&answered));
    }

    #[test]
    fn a_refused_signature_names_one_turn_or_all_of_them() {
        let history: Vec<Message> = hermes_core::parse_history(
            &json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a"},
                {"role": "user", "content": "again"},
                {"role": "assistant", "content": null,
                 "tool_calls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "t", "content": "1"},
            ])
            .to_string(),
        )
        .unwrap()
        .messages;
        let sources = [vec![0], vec![1], vec![2], vec![3], vec![4]];
        let before = signature_drops(&history, &sources, "messages.1.content.0: Invalid");
        assert_eq!(
            (before.named, before.blocks_of, before.thinking_off),
            (Some(1), BTreeSet::from([1]), false)
        );
        let in_loop = signature_drops(&history, &sources, "messages.3: Invalid");
        assert_eq!((in_loop.named, in_loop.thinking_off), (Some(3), true));
        let unnamed = signature_drops(&history, &sources, "Invalid `signature`");
        assert_eq!(
            (unnamed.named, unnamed.blocks_of, unnamed.thinking_off),
            (None, BTreeSet::from([1, 3]), true)
        );
    }
}
