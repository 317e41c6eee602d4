//! When compaction triggers and what it protects: per-family model limits, documented defaults and the overrides the CLI fills from config.

use hermes_core::{Message, RouteDecision, estimate_history};

/// A model's context window and the output reserved for its reply, in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelLimits {
    /// Tokens the model reads and writes in one request.
    pub context_window: usize,
    /// Tokens reserved for the reply (the request's output budget).
    pub max_output: usize,
}

/// A model family: the substrings of a model id that name it and its default limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFamily {
    /// Family name.
    pub name: &'static str,
    /// Lowercase substrings of the model id, any of which puts a model in the family.
    pub markers: &'static [&'static str],
    /// Default limits.
    pub limits: ModelLimits,
}

const fn limits(context_window: usize, max_output: usize) -> ModelLimits {
    ModelLimits {
        context_window,
        max_output,
    }
}

/// Default limits per family, tested in order against the lowercased model id.
///
/// Where a family's models differ, the value is the conservative one (the smaller window of its
/// current models, a generous output reservation), so the trigger fires early rather than late:
/// DeepSeek V3/R1 128K with up to 64K of reasoning output (32K reserved); Kimi K2 256K; GLM-4.5
/// 128K (4.6 has 200K); Qwen3 128K; Claude 200K with 32K out; GPT-4o-class 128K with 16K out
/// (GPT-5 has more); Gemini 1M with 64K out; Mistral 128K. Config overrides any of them.
pub const MODEL_FAMILIES: &[ModelFamily] = &[
    ModelFamily {
        name: "deepseek",
        markers: &["deepseek"],
        limits: limits(131_072, 32_768),
    },
    ModelFamily {
        name: "kimi",
        markers: &["kimi", "moonshot"],
        limits: limits(262_144, 32_768),
    },
    ModelFamily {
        name: "glm",
        markers: &["glm", "zhipu"],
        limits: limits(131_072, 32_768),
    },
    ModelFamily {
        name: "qwen",
        markers: &["qwen", "qwq"],
        limits: limits(131_072, 32_768),
    },
    ModelFamily {
        name: "claude",
        markers: &["claude"],
        limits: limits(200_000, 32_000),
    },
    ModelFamily {
        name: "gemini",
        markers: &["gemini"],
        limits: limits(1_048_576, 65_536),
    },
    ModelFamily {
        name: "mistral",
        markers: &[
            "mistral",
            "mixtral",
            "codestral",
            "magistral",
            "devstral",
            "ministral",
        ],
        limits: limits(128_000, 16_384),
    },
    ModelFamily {
        name: "gpt",
        markers: &["gpt", "openai/o1", "openai/o3", "openai/o4"],
        limits: limits(128_000, 16_384),
    },
];

/// Limits of a model no family claims: a 32K window with 4K reserved, what small local models
/// commonly run with.
pub const DEFAULT_LIMITS: ModelLimits = limits(32_768, 4_096);

/// Compaction triggers at this percentage of (context window − max output).
pub const DEFAULT_TRIGGER_PERCENT: u8 = 80;
/// After compaction the retained tail is sized to bring the estimate to this percentage of the
/// trigger (when the protected messages allow), so the next turns do not trigger again at once.
pub const DEFAULT_TARGET_PERCENT: u8 = 50;
/// Messages at the start that are never summarised (normally the system prompt and the first
/// user message, which state the task).
pub const DEFAULT_PROTECT_FIRST: usize = 2;
/// Messages at the end that are never summarised (at least; the in-flight tool loop and the last
/// real user message are always retained too).
pub const DEFAULT_PROTECT_LAST: usize = 8;
/// The salvage pass keeps this many of the most recent tool outputs intact.
pub const DEFAULT_KEEP_TOOL_OUTPUTS: usize = 3;
/// Largest summary, in estimated tokens, unless a tenth of the trigger is smaller.
pub const DEFAULT_SUMMARY_MAX_TOKENS: usize = 8_000;

impl ModelFamily {
    /// The first family whose marker the lowercased `model` contains (a bare `o1`/`o3`/`o4` model
    /// name counts as gpt).
    pub fn of(model: &str) -> Option<&'static ModelFamily> {
        let model = model.trim().to_ascii_lowercase();
        MODEL_FAMILIES
            .iter()
            .find(|f| f.markers.iter().any(|m| model.contains(m)))
            .or_else(|| {
                let name = model.rsplit('/').next().unwrap_or_default();
                let openai_o = ["o1", "o3", "o4"].iter().any(|p| {
                    name.strip_prefix(p)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
                });
                openai_o
                    .then(|| MODEL_FAMILIES.iter().find(|f| f.name == "gpt"))
                    .flatten()
            })
    }
}

impl ModelLimits {
    /// The default limits for `model`: its family's, else [`DEFAULT_LIMITS`].
    pub fn for_model(model: &str) -> ModelLimits {
        ModelFamily::of(model).map_or(DEFAULT_LIMITS, |f| f.limits)
    }
}

/// Settings the CLI reads from config; `None` keeps the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionOverrides {
    /// Context window in tokens.
    pub context_window: Option<usize>,
    /// Output reservation in tokens.
    pub max_output: Option<usize>,
    /// Trigger percentage (1–100).
    pub trigger_percent: Option<u8>,
    /// Messages protected at the start.
    pub protect_first: Option<usize>,
    /// Messages protected at the end.
    pub protect_last: Option<usize>,
    /// Recent tool outputs the salvage pass keeps.
    pub keep_tool_outputs: Option<usize>,
    /// Largest summary in estimated tokens.
    pub summary_max_tokens: Option<usize>,
    /// Input tokens past which the provider compacts by itself, on wires whose provider does
    /// (docs/spec.md §7: the Responses wire's `context_management` `compact_threshold`, the
    /// Anthropic wire's `compact_20260112` trigger). `None`: hermes asks only on demand.
    pub provider_threshold: Option<u64>,
}

/// Everything compaction decides with, resolved for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionConfig {
    /// The model's limits.
    pub limits: ModelLimits,
    /// Trigger percentage of (context window − max output).
    pub trigger_percent: u8,
    /// Percentage of the trigger the retained tail is sized for.
    pub target_percent: u8,
    /// Messages protected at the start.
    pub protect_first: usize,
    /// Messages protected at the end.
    pub protect_last: usize,
    /// Recent tool outputs the salvage pass keeps.
    pub keep_tool_outputs: usize,
    /// Largest summary (checkpoint) in estimated tokens; the salvage pass caps longer ones.
    pub summary_max_tokens: usize,
}

impl CompactionConfig {
    /// The defaults for `model` with `overrides` applied. The summary cap defaults to
    /// [`DEFAULT_SUMMARY_MAX_TOKENS`] or a tenth of the trigger, whichever is smaller.
    pub fn for_model(model: &str, overrides: &CompactionOverrides) -> Self {
        let defaults = ModelLimits::for_model(model);
        let mut config = CompactionConfig {
            limits: ModelLimits {
                context_window: overrides.context_window.unwrap_or(defaults.context_window),
                max_output: overrides.max_output.unwrap_or(defaults.max_output),
            },
            trigger_percent: overrides
                .trigger_percent
                .unwrap_or(DEFAULT_TRIGGER_PERCENT)
                .clamp(1, 100),
            target_percent: DEFAULT_TARGET_PERCENT,
            protect_first: overrides.protect_first.unwrap_or(DEFAULT_PROTECT_FIRST),
            protect_last: overrides.protect_last.unwrap_or(DEFAULT_PROTECT_LAST),
            keep_tool_outputs: overrides
                .keep_tool_outputs
                .unwrap_or(DEFAULT_KEEP_TOOL_OUTPUTS),
            summary_max_tokens: 0,
        };
        config.summary_max_tokens = overrides
            .summary_max_tokens
            .unwrap_or_else(|| DEFAULT_SUMMARY_MAX_TOKENS.min(config.threshold() / 10));
        config
    }

    /// The trigger in estimated tokens: `trigger_percent` of (context window − max output).
    pub fn threshold(&self) -> usize {
        self.limits
            .context_window
            .saturating_sub(self.limits.max_output)
            .saturating_mul(usize::from(self.trigger_percent))
            / 100
    }

    /// The estimate compaction sizes the retained tail for: `target_percent` of the trigger.
    pub fn target(&self) -> usize {
        self.threshold()
            .saturating_mul(usize::from(self.target_percent))
            / 100
    }

    /// True when an estimate has reached the trigger.
    pub fn over(&self, estimate: usize) -> bool {
        estimate >= self.threshold()
    }

    /// The pre-flight check: true when `history` on `decision`'s route has reached the trigger
    /// (by [`estimate_history`], the estimator compaction's tail walk uses).
    pub fn needs_compaction(&self, history: &[Message], decision: &RouteDecision) -> bool {
        self.over(estimate_history(history, decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_resolve_by_model_substring() {
        let family = |m: &str| ModelFamily::of(m).map(|f| f.name);
        assert_eq!(family("deepseek-chat"), Some("deepseek"));
        assert_eq!(family("moonshotai/Kimi-K2-Instruct"), Some("kimi"));
        assert_eq!(family("glm-4.6"), Some("glm"));
        assert_eq!(family("qwen/qwen3-coder"), Some("qwen"));
        assert_eq!(family("claude-sonnet-4-5"), Some("claude"));
        assert_eq!(family("gemini-2.5-pro"), Some("gemini"));
        assert_eq!(family("mistral-large-latest"), Some("mistral"));
        assert_eq!(family("gpt-4o"), Some("gpt"));
        assert_eq!(family("o3-mini"), Some("gpt"));
        assert_eq!(family("llama3.1:8b"), None);
        assert_eq!(ModelLimits::for_model("llama3.1:8b"), DEFAULT_LIMITS);
    }

    #[test]
    fn threshold_is_a_percentage_of_window_minus_output_and_overrides_apply() {
        let c = CompactionConfig::for_model("claude-opus-4", &CompactionOverrides::default());
        assert_eq!(c.threshold(), (200_000 - 32_000) * 80 / 100);
        assert_eq!(c.summary_max_tokens, 8_000);
        let o = CompactionOverrides {
            context_window: Some(10_000),
            max_output: Some(2_000),
            trigger_percent: Some(50),
            ..CompactionOverrides::default()
        };
        let c = CompactionConfig::for_model("claude-opus-4", &o);
        assert_eq!(c.threshold(), 4_000);
        assert_eq!(c.target(), 2_000);
        assert_eq!(c.summary_max_tokens, 400);
        assert!(c.over(4_000) && !c.over(3_999));
    }
}
