//! The salvage pass of docs/spec.md §7: shrink old tool outputs, then oversized checkpoints, without a model call.

use hermes_core::{Message, RawJson, Role, RouteDecision};
use hermes_core::{estimate_message, estimate_messages, estimate_text, is_wide};

use crate::{Compaction, CompactionConfig, SUMMARY_MARKER, Source, is_checkpoint};

/// What a cleared tool output is replaced by.
pub const CLEARED_TOOL_OUTPUT: &str = "[Old tool output cleared to save context space]";

/// Appended to a checkpoint the salvage pass capped.
pub const SUMMARY_TRUNCATED: &str = "\n[Summary truncated to save context space]";

/// Each message's estimate in `history`, the newest assistant priced as the newest (its thinking
/// replayed on routes that replay only the newest turn's).
pub(crate) fn message_costs(history: &[Message], decision: &RouteDecision) -> Vec<usize> {
    estimate_messages(history, decision).collect()
}

/// Shrinks `history` without a model call, in this order, stopping as soon as the estimate is
/// under [`CompactionConfig::target`]:
///
/// 1. tool outputs, oldest first, except the [`CompactionConfig::keep_tool_outputs`] most
///    recent, are replaced by [`CLEARED_TOOL_OUTPUT`] (the message keeps its `tool_call_id`, so
///    no call loses its result);
/// 2. checkpoints longer than [`CompactionConfig::summary_max_tokens`] are cut to it.
///
/// Assistant messages are never touched: no reasoning text or encrypted item is stripped. A
/// message is replaced only when that makes it strictly smaller by the estimator; the result is
/// `None` when nothing can shrink. It may still be over the trigger ([`Compaction::fits`]).
pub fn salvage(
    history: &[Message],
    decision: &RouteDecision,
    config: &CompactionConfig,
) -> Option<Compaction> {
    let costs = message_costs(history, decision);
    let before: usize = costs.iter().sum();
    let goal = config.target();
    let mut total = before;
    let mut replaced: Vec<(usize, Message)> = Vec::new();
    let mut replace = |i: usize, shrunk: Message, total: &mut usize| -> bool {
        let cost = estimate_message(&shrunk, decision, false);
        if cost < costs[i] {
            *total -= costs[i] - cost;
            replaced.push((i, shrunk));
            true
        } else {
            false
        }
    };

    let tools: Vec<usize> = (0..history.len())
        .filter(|i| history[*i].role == Role::Tool)
        .collect();
    let old = tools.len().saturating_sub(config.keep_tool_outputs);
    let mut cleared = 0;
    for &i in &tools[..old] {
        if total < goal {
            break;
        }
        let mut shrunk = history[i].clone();
        shrunk.content = Some(RawJson::string(CLEARED_TOOL_OUTPUT));
        if replace(i, shrunk, &mut total) {
            cleared += 1;
        }
    }

    let mut capped = 0;
    for (i, msg) in history.iter().enumerate() {
        if total < goal {
            break;
        }
        if !is_checkpoint(msg) || costs[i] <= config.summary_max_tokens {
            continue;
        }
        let Some(text) = msg.content.as_ref().and_then(RawJson::as_str) else {
            continue;
        };
        let mut shrunk = msg.clone();
        shrunk.content = Some(RawJson::string(&cap_text(&text, config.summary_max_tokens)));
        if replace(i, shrunk, &mut total) {
            capped += 1;
        }
    }

    if total >= before {
        return None;
    }
    replaced.sort_by_key(|(i, _)| *i);
    let mut replaced = replaced.into_iter().peekable();
    let (active, sources): (Vec<Message>, Vec<Source>) = history
        .iter()
        .enumerate()
        .map(|(i, m)| match replaced.next_if(|(j, _)| *j == i) {
            Some((_, shrunk)) => (shrunk, Source::Shrunk(i)),
            None => (m.clone(), Source::Kept(i)),
        })
        .unzip();
    let mut result = Compaction::new(
        history.len(),
        active,
        sources,
        Vec::new(),
        before,
        total,
        config,
    );
    result.tool_outputs_cleared = cleared;
    result.checkpoints_capped = capped;
    tracing::info!(
        before,
        after = total,
        cleared,
        capped,
        fits = result.fits,
        "salvage pass shrank the history"
    );
    Some(result)
}

/// The longest prefix of `text` that, with [`SUMMARY_TRUNCATED`] after it, is estimated at no
/// more than `max_tokens` (never shorter than the checkpoint marker).
fn cap_text(text: &str, max_tokens: usize) -> String {
    let budget = max_tokens
        .saturating_sub(estimate_text(SUMMARY_TRUNCATED))
        .max(estimate_text(SUMMARY_MARKER));
    let (mut plain, mut wide, mut end) = (0usize, 0usize, 0usize);
    for (at, c) in text.char_indices() {
        let (p, w) = if is_wide(c) {
            (plain, wide + 1)
        } else {
            (plain + c.len_utf8(), wide)
        };
        if p.div_ceil(4) + w > budget {
            break;
        }
        (plain, wide, end) = (p, w, at + c.len_utf8());
    }
    format!("{}{SUMMARY_TRUNCATED}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_text_keeps_the_start_and_fits_the_cap() {
        let text = format!("{SUMMARY_MARKER}\n\n{}", "word 中文 ".repeat(500));
        for cap in [21, 50, 300] {
            let capped = cap_text(&text, cap);
            assert!(capped.starts_with(SUMMARY_MARKER));
            assert!(capped.ends_with(SUMMARY_TRUNCATED));
            assert!(
                estimate_text(&capped) <= cap,
                "{cap}: {}",
                estimate_text(&capped)
            );
        }
    }
}
