//! Compaction for hermes: `compress()` and the salvage pass over canonical history, pure and without IO (docs/spec.md §7).
//!
//! - [`CompactionConfig`] says when to compact: at [`DEFAULT_TRIGGER_PERCENT`] of (context
//!   window − max output), with per-family default limits ([`MODEL_FAMILIES`]) the CLI overrides
//!   from config ([`CompactionOverrides`]). The pre-flight check is
//!   [`CompactionConfig::needs_compaction`], built on `hermes_core::estimate_history`.
//! - [`compress`] summarises the middle of a history through a [`Summarizer`] and inserts the
//!   summary as a checkpoint message; retained messages are the stored values, cloned.
//! - [`salvage`] shrinks old tool outputs and oversized checkpoints without a model call.
//!
//! Order: `compress` asks for a summary first; when the compacted view is still over the trigger
//! it runs the salvage pass over that view; when there is nothing to summarise (everything is
//! protected) or the summary does not make the history smaller, it falls back to the salvage pass
//! over the input. Neither ever touches an assistant message: reasoning text, encrypted items,
//! origins and native records of retained turns stay byte for byte.

mod compress;
mod config;
mod salvage;

use hermes_core::{Message, Role};

pub use compress::compress;
pub use config::{
    CompactionConfig, CompactionOverrides, DEFAULT_KEEP_TOOL_OUTPUTS, DEFAULT_LIMITS,
    DEFAULT_PROTECT_FIRST, DEFAULT_PROTECT_LAST, DEFAULT_SUMMARY_MAX_TOKENS,
    DEFAULT_TARGET_PERCENT, DEFAULT_TRIGGER_PERCENT, MODEL_FAMILIES, ModelFamily, ModelLimits,
};
pub use salvage::{CLEARED_TOOL_OUTPUT, SUMMARY_TRUNCATED, salvage};

/// The text every checkpoint (summary) message of hermes' own begins with.
pub use hermes_core::checkpoint::SUMMARY_MARKER;

/// Instructions a [`Summarizer`] backed by a model can send with the messages to summarise.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarise the conversation above so that it can \
replace it: the user's goals and constraints, decisions taken and why, facts learned (file \
paths, commands, identifiers, results of tool calls), work completed and work still pending. If \
it contains an earlier summary, fold that summary in. Be concise and factual; write only the \
summary.";

/// Writes the summary of a run of messages. The CLI implements it with the session's own
/// provider; tests use a deterministic fake such as [`FixedSummarizer`].
#[async_trait::async_trait]
pub trait Summarizer: Send + Sync {
    /// Summarises `messages` (an earlier checkpoint among them is to be folded in).
    async fn summarize(&self, messages: &[Message]) -> Result<String, String>;
}

/// A summarizer that answers at once with the same text (tests and benchmarks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixedSummarizer(pub String);

#[async_trait::async_trait]
impl Summarizer for FixedSummarizer {
    async fn summarize(&self, _messages: &[Message]) -> Result<String, String> {
        Ok(self.0.clone())
    }
}

/// True for a checkpoint: hermes' own (a `user` message whose string content begins with
/// [`SUMMARY_MARKER`]) or a provider's (an assistant message carrying the provider's
/// `compaction` block, [`hermes_core::checkpoint::native_compaction`]; docs/spec.md §7). A newer
/// checkpoint supersedes either.
pub fn is_checkpoint(message: &Message) -> bool {
    (message.role == Role::User
        && message.content.as_ref().is_some_and(|c| {
            c.get()
                .strip_prefix('"')
                .is_some_and(|s| s.starts_with(SUMMARY_MARKER))
        }))
        || hermes_core::checkpoint::native_compaction(message).is_some()
}

/// A `user` message that is not a checkpoint: what starts a turn (everything after the last one
/// is the in-flight tool loop).
pub fn is_real_user(message: &Message) -> bool {
    message.role == Role::User && !is_checkpoint(message)
}

/// Builds the checkpoint message holding `summary`.
pub fn checkpoint(summary: &str) -> Message {
    hermes_core::checkpoint::own_checkpoint(summary)
}

/// Where a message of the active view comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The input message at this index, unchanged (the stored value, cloned).
    Kept(usize),
    /// The input message at this index with its content shrunk by the salvage pass (a cleared
    /// tool output or a capped checkpoint): the store archives the original and stores this one.
    Shrunk(usize),
    /// A new checkpoint holding the summary.
    Checkpoint,
}

/// The outcome of [`compress`] or [`salvage`]: the new active view and what left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// The new active view, in order.
    pub active: Vec<Message>,
    /// Where each message of `active` comes from (same length).
    pub sources: Vec<Source>,
    /// Input indices the summary covers (summarised messages and superseded checkpoints), in
    /// order; empty when no summary was made.
    pub summarised: Vec<usize>,
    /// Input indices whose message is no longer in the active view as stored: summarised,
    /// superseded or shrunk. The store archives these rows; it never deletes them.
    pub archived: Vec<usize>,
    /// Input index whose place the new checkpoint takes (the first message of the summarised
    /// middle): the store inserts the checkpoint row where that row stood. `None` without a
    /// summary.
    pub checkpoint_slot: Option<usize>,
    /// Length of the input history.
    pub input_len: usize,
    /// Estimate of the input.
    pub estimate_before: usize,
    /// Estimate of the active view.
    pub estimate_after: usize,
    /// True when the active view is under the trigger.
    pub fits: bool,
    /// Tool outputs the salvage pass cleared.
    pub tool_outputs_cleared: usize,
    /// Checkpoints the salvage pass capped.
    pub checkpoints_capped: usize,
}

impl Compaction {
    /// Builds the result from the active view and its sources.
    fn new(
        input_len: usize,
        active: Vec<Message>,
        sources: Vec<Source>,
        summarised: Vec<usize>,
        estimate_before: usize,
        estimate_after: usize,
        config: &CompactionConfig,
    ) -> Self {
        let mut kept = vec![false; input_len];
        for source in &sources {
            if let Source::Kept(i) = source
                && let Some(k) = kept.get_mut(*i)
            {
                *k = true;
            }
        }
        let archived = (0..input_len).filter(|i| !kept[*i]).collect();
        Compaction {
            active,
            sources,
            summarised,
            archived,
            checkpoint_slot: None,
            input_len,
            estimate_before,
            estimate_after,
            fits: !config.over(estimate_after),
            tool_outputs_cleared: 0,
            checkpoints_capped: 0,
        }
    }

    /// True when a summary checkpoint was inserted.
    pub fn summarized(&self) -> bool {
        self.sources.contains(&Source::Checkpoint)
    }

    /// One line for the user, e.g. `context compacted: 812 → 17 messages, ~151203 → ~40112
    /// tokens (summary of 795 messages)`.
    pub fn status_line(&self) -> String {
        let mut what = Vec::new();
        if !self.summarised.is_empty() {
            what.push(format!("summary of {} messages", self.summarised.len()));
        }
        if self.tool_outputs_cleared > 0 {
            what.push(format!(
                "{} old tool outputs cleared",
                self.tool_outputs_cleared
            ));
        }
        if self.checkpoints_capped > 0 {
            what.push(format!("{} summaries capped", self.checkpoints_capped));
        }
        let mut line = format!(
            "context compacted: {} → {} messages, ~{} → ~{} tokens",
            self.input_len,
            self.active.len(),
            self.estimate_before,
            self.estimate_after
        );
        if !what.is_empty() {
            line.push_str(&format!(" ({})", what.join(", ")));
        }
        if !self.fits {
            line.push_str("; still over the compaction threshold");
        }
        line
    }
}

/// Why compaction failed. The history is untouched either way.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// The summary request failed; the caller may fall back to [`salvage`].
    #[error("the summary request failed: {0}")]
    Summarizer(String),
    /// The summarizer answered with nothing.
    #[error("the summarizer returned an empty summary")]
    EmptySummary,
}
