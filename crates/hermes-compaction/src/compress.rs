//! `compress()`: summarise the middle of a history into a checkpoint, keeping whole tool units and the in-flight loop.

use std::borrow::Cow;

use hermes_core::estimate_message;
use hermes_core::{Message, Role, RouteDecision, estimate_history};

use crate::salvage::message_costs;
use crate::{
    Compaction, CompactionConfig, CompactionError, Source, Summarizer, checkpoint, is_checkpoint,
    is_real_user, salvage,
};

/// The summarised middle: messages `head_end..tail_start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cut {
    head_end: usize,
    tail_start: usize,
}

/// Moves a cut point back over tool results, so the unit (assistant with tool calls and all its
/// results) they belong to stays on one side.
fn unit_start(history: &[Message], mut at: usize) -> usize {
    while at > 0 && history.get(at).is_some_and(|m| m.role == Role::Tool) {
        at -= 1;
    }
    at
}

/// Chooses the middle to summarise, or `None` when everything is protected.
///
/// - The head is the first `protect_first` messages, extended over the tool results of a unit it
///   would split.
/// - The tail is at least the last `protect_last` messages and everything from the last real user
///   message on (the in-flight tool loop stays with its thinking), moved back to a unit start;
///   then it grows unit by unit, newest first, while its estimate fits the budget
///   `target − head − summary cap` (the same estimator and predicate as the pre-flight trigger).
/// - It never grows over an earlier checkpoint: that is summarised (superseded) instead.
fn plan_cut(
    history: &[Message],
    costs: &[usize],
    newest_cost: &dyn Fn(usize) -> usize,
    config: &CompactionConfig,
) -> Option<Cut> {
    let n = history.len();
    let mut head_end = config.protect_first.min(n);
    while head_end < n && history[head_end].role == Role::Tool {
        head_end += 1;
    }
    let mut tail_start = n.saturating_sub(config.protect_last);
    if let Some(user) = history.iter().rposition(is_real_user) {
        tail_start = tail_start.min(user);
    }
    tail_start = unit_start(history, tail_start);
    if tail_start <= head_end {
        return None;
    }
    let kept_cost = |range: std::ops::Range<usize>| -> usize {
        range
            .filter(|i| !is_checkpoint(&history[*i]))
            .map(|i| costs[i])
            .sum()
    };
    // On a route replaying only the newest turn's thinking, the newest assistant of the compacted
    // view is the last one of the tail, else the last one of the head: price it as such.
    let is_assistant = |i: &usize| history[*i].role == Role::Assistant;
    let mut tail_has_assistant = (tail_start..n).any(|i| is_assistant(&i));
    let mut head_cost = kept_cost(0..head_end);
    if !tail_has_assistant && let Some(last) = (0..head_end).rev().find(is_assistant) {
        head_cost = head_cost - costs[last] + newest_cost(last).max(costs[last]);
    }
    let budget = config
        .target()
        .saturating_sub(head_cost + config.summary_max_tokens);
    let mut tail = kept_cost(tail_start..n);
    while tail_start > head_end {
        let start = unit_start(history, tail_start - 1).max(head_end);
        if history[start..tail_start].iter().any(is_checkpoint) {
            break;
        }
        let mut cost: usize = costs[start..tail_start].iter().sum();
        let unit_assistant = (start..tail_start).rev().find(is_assistant);
        if !tail_has_assistant && let Some(a) = unit_assistant {
            cost = cost - costs[a] + newest_cost(a);
        }
        if tail + cost > budget {
            break;
        }
        tail += cost;
        tail_start = start;
        tail_has_assistant |= unit_assistant.is_some();
    }
    history[head_end..tail_start]
        .iter()
        .any(|m| !is_checkpoint(m))
        .then_some(Cut {
            head_end,
            tail_start,
        })
}

/// Compacts `history` for `decision`'s route.
///
/// Protects the first [`CompactionConfig::protect_first`] and last
/// [`CompactionConfig::protect_last`] messages (and the in-flight tool loop), asks `summarizer`
/// for a summary of the middle, and returns the new active view: the retained messages (the
/// stored values, cloned: every carrier, origin and native record byte for byte) with one
/// checkpoint ([`checkpoint`]) where the middle was. Earlier checkpoints are handed to the
/// summarizer with the middle and leave the active view (superseded); nothing else does.
///
/// When the compacted view is still over the trigger, the salvage pass runs over it (capping an
/// oversized summary among other things). When nothing can be summarised, or the compacted view
/// is not smaller than the input even after that, the result is
/// [`salvage`] of the input (`Ok(None)` when that cannot shrink anything either).
///
/// For a manual `/compact` that should summarise everything it may, set
/// [`CompactionConfig::target_percent`] to 0: the tail is then only the protected messages.
pub async fn compress(
    history: &[Message],
    decision: &RouteDecision,
    config: &CompactionConfig,
    summarizer: &dyn Summarizer,
) -> Result<Option<Compaction>, CompactionError> {
    let costs = message_costs(history, decision);
    let before: usize = costs.iter().sum();
    let newest_cost = |i: usize| estimate_message(&history[i], decision, true);
    let Some(cut) = plan_cut(history, &costs, &newest_cost, config) else {
        tracing::debug!(
            messages = history.len(),
            "nothing to summarise; trying the salvage pass"
        );
        return Ok(salvage(history, decision, config));
    };
    let n = history.len();
    let outside = |i: &usize| is_checkpoint(&history[*i]);
    let summarised: Vec<usize> = (0..cut.head_end)
        .filter(outside)
        .chain(cut.head_end..cut.tail_start)
        .chain((cut.tail_start..n).filter(outside))
        .collect();
    let input: Cow<'_, [Message]> = if summarised.len() == cut.tail_start - cut.head_end {
        Cow::Borrowed(&history[cut.head_end..cut.tail_start])
    } else {
        Cow::Owned(summarised.iter().map(|i| history[*i].clone()).collect())
    };
    let summary = summarizer
        .summarize(&input)
        .await
        .map_err(CompactionError::Summarizer)?;
    if summary.trim().is_empty() {
        return Err(CompactionError::EmptySummary);
    }

    let retained = |range: std::ops::Range<usize>| {
        range
            .filter(|i| !is_checkpoint(&history[*i]))
            .map(|i| (history[i].clone(), Source::Kept(i)))
    };
    let (mut active, mut sources): (Vec<Message>, Vec<Source>) = retained(0..cut.head_end)
        .chain(std::iter::once((checkpoint(&summary), Source::Checkpoint)))
        .chain(retained(cut.tail_start..n))
        .unzip();
    let after = estimate_history(&active, decision);
    let mut result = Compaction::new(n, active, sources, summarised, before, after, config);
    if !result.fits
        && let Some(salvaged) = salvage(&result.active, decision, config)
    {
        sources = salvaged
            .sources
            .iter()
            .map(|s| match *s {
                Source::Kept(j) => result.sources[j],
                Source::Shrunk(j) => match result.sources[j] {
                    Source::Kept(i) | Source::Shrunk(i) => Source::Shrunk(i),
                    Source::Checkpoint => Source::Checkpoint,
                },
                Source::Checkpoint => Source::Checkpoint,
            })
            .collect();
        active = salvaged.active;
        let summarised = std::mem::take(&mut result.summarised);
        let mut combined = Compaction::new(
            n,
            active,
            sources,
            summarised,
            before,
            salvaged.estimate_after,
            config,
        );
        combined.tool_outputs_cleared = salvaged.tool_outputs_cleared;
        combined.checkpoints_capped = salvaged.checkpoints_capped;
        result = combined;
    }
    result.checkpoint_slot = Some(cut.head_end);
    if result.estimate_after >= before {
        tracing::debug!(
            before,
            after = result.estimate_after,
            "summary does not shrink the history; trying the salvage pass"
        );
        return Ok(salvage(history, decision, config));
    }
    tracing::info!(
        before = result.estimate_before,
        after = result.estimate_after,
        summarised = result.summarised.len(),
        retained = result.active.len(),
        fits = result.fits,
        "history compacted"
    );
    Ok(Some(result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::{TextCarrier, ToolCall};

    fn assistant_calls(ids: &[&str]) -> Message {
        let mut m = Message::text(Role::Assistant, "");
        m.tool_calls = Some(
            ids.iter()
                .map(|id| ToolCall::function(id, "f", "{}"))
                .collect(),
        );
        m.reasoning_content = Some(TextCarrier::new("thinking"));
        m
    }

    fn tool(id: &str) -> Message {
        let mut m = Message::text(Role::Tool, "out");
        m.tool_call_id = Some(id.to_owned());
        m
    }

    /// One tool-call unit: the assistant's calls `ids`, then a result for each.
    fn unit(ids: &[&str]) -> Vec<Message> {
        let mut unit = vec![assistant_calls(ids)];
        unit.extend(ids.iter().map(|id| tool(id)));
        unit
    }

    fn config(first: usize, last: usize) -> CompactionConfig {
        CompactionConfig {
            protect_first: first,
            protect_last: last,
            target_percent: 0,
            ..CompactionConfig::for_model("m", &crate::CompactionOverrides::default())
        }
    }

    #[test]
    fn cut_points_move_to_unit_boundaries_and_keep_the_in_flight_loop() {
        let h = [
            vec![Message::text(Role::User, "u0")],
            unit(&["a", "b"]),
            vec![
                Message::text(Role::Assistant, "done"),
                Message::text(Role::User, "u1"),
            ],
            unit(&["c"]),
            unit(&["d", "e"]),
        ]
        .concat();
        let costs = vec![1; h.len()];
        // The head would end between the call and its results: it is extended over them.
        let cut = plan_cut(&h, &costs, &|_| 1, &config(3, 2)).unwrap();
        assert_eq!(cut.head_end, 4);
        // The tail starts at the last real user message: the in-flight loop stays whole.
        assert_eq!(cut.tail_start, 5);
        // Protecting the last 4 would start the tail at a tool result: moved back to its call.
        let h = [
            vec![Message::text(Role::User, "u0")],
            unit(&["p"]),
            unit(&["q", "r"]),
            vec![
                Message::text(Role::Assistant, "final"),
                Message::text(Role::User, "u1"),
                Message::text(Role::Assistant, "answer"),
            ],
        ]
        .concat();
        let costs = vec![1; h.len()];
        let cut = plan_cut(&h, &costs, &|_| 1, &config(1, 4)).unwrap();
        assert_eq!((cut.head_end, cut.tail_start), (1, 3));
    }

    #[test]
    fn nothing_to_summarise_when_everything_is_protected() {
        let h = vec![
            Message::text(Role::User, "u0"),
            Message::text(Role::Assistant, "a0"),
            Message::text(Role::User, "u1"),
        ];
        assert_eq!(plan_cut(&h, &[1, 1, 1], &|_| 1, &config(2, 8)), None);
    }
}
