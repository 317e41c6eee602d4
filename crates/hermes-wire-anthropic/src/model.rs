//! What a Claude model id tells the Anthropic wire: its family and version, and from them the
//! thinking form it takes (adaptive or budget), its effort vocabulary, whether it keeps earlier
//! turns' thinking, and whether budget thinking needs the interleaved-thinking beta.

use hermes_core::route::Effort;

/// The Claude models that bind every replayed `thinking` / `redacted_thinking` block to its
/// prefix (top-level `system`, `tools`, every earlier message), model and account, for every
/// account: a family and the first version that does (docs/spec.md §5a, from Anthropic's
/// extended-thinking documentation, "Thinking block binding": Claude Fable 5.1 and later).
/// hermes-sim's bound profiles read the same documentation.
pub const BOUND_FROM: &[(&str, u32, u32)] = &[("fable", 5, 1)];

/// A Claude model id, parsed. Ids put the numbers after the family (`claude-opus-4-6`,
/// `claude-haiku-4-5@20251001`, `anthropic.claude-sonnet-4-6-v1`) or before it
/// (`claude-3-7-sonnet-20250219`); an eight-digit date and `v1`-style suffixes are not versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaudeModel {
    /// `opus`, `sonnet`, `haiku`, or a newer family name (`mythos`, `fable`, …).
    pub family: Option<String>,
    /// Major and minor version, when the id has them.
    pub version: Option<(u32, u32)>,
}

impl ClaudeModel {
    /// Parses `model`; `None` when it is not a Claude id.
    pub fn parse(model: &str) -> Option<ClaudeModel> {
        let lower = model.to_ascii_lowercase();
        let at = lower.find("claude")?;
        let rest = &lower[at + "claude".len()..];
        let mut family = None;
        let mut numbers = Vec::new();
        for token in rest.split(['-', '.', '@', '_', ':', '/']) {
            if token.is_empty() {
                continue;
            }
            if token.bytes().all(|b| b.is_ascii_digit()) {
                // A date (20250219) or a long build number is not a version.
                if token.len() <= 2 && numbers.len() < 2 {
                    numbers.push(token.parse::<u32>().ok()?);
                }
                continue;
            }
            let is_suffix = token.len() > 1
                && token.starts_with('v')
                && token[1..].bytes().all(|b| b.is_ascii_digit());
            if family.is_none() && !is_suffix && token.bytes().all(|b| b.is_ascii_alphabetic()) {
                family = Some(token.to_owned());
            }
        }
        let version = match numbers.as_slice() {
            [] => None,
            [major] => Some((*major, 0)),
            [major, minor, ..] => Some((*major, *minor)),
        };
        Some(ClaudeModel { family, version })
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        self.version.is_some_and(|v| v >= (major, minor))
    }

    fn family_is(&self, name: &str) -> bool {
        self.family.as_deref() == Some(name)
    }

    /// A family other than opus, sonnet and haiku (mythos, fable, …).
    fn newer_family(&self) -> bool {
        !matches!(
            self.family.as_deref(),
            Some("opus" | "sonnet" | "haiku") | None
        )
    }

    /// Takes `{"type":"adaptive"}` with `output_config.effort`: Opus and Sonnet 4.6 and later,
    /// every 5.x model and the newer families (platform.claude.com/docs/en/build-with-claude/
    /// adaptive-thinking; docs.aws.amazon.com/bedrock/latest/userguide/
    /// claude-messages-adaptive-thinking.html, which lists Opus 4.6/4.7, Sonnet 4.6, Opus 5,
    /// Sonnet 5, Mythos and Fable).
    pub fn adaptive(&self) -> bool {
        if self.newer_family() {
            return true;
        }
        if self.at_least(5, 0) {
            return true;
        }
        (self.family_is("opus") || self.family_is("sonnet")) && self.at_least(4, 6)
    }

    /// Takes only the adaptive form: `{"type":"enabled"}` and `{"type":"disabled"}` are refused
    /// (Opus 4.7, the 5.x models and the newer families, same pages).
    pub fn adaptive_only(&self) -> bool {
        self.newer_family()
            || self.at_least(5, 0)
            || (self.family_is("opus") && self.at_least(4, 7))
    }

    /// The efforts `output_config.effort` takes on this model (adaptive models only): `xhigh`
    /// from Opus 4.7 and the 5.x models on.
    pub fn efforts(&self) -> &'static [&'static str] {
        if self.adaptive_only() {
            &["low", "medium", "high", "xhigh", "max"]
        } else {
            &["low", "medium", "high", "max"]
        }
    }

    /// The `output_config.effort` for `effort` (docs/spec.md §3c): minimal → low, xhigh → max where
    /// the model lacks it.
    pub fn effort(&self, effort: Effort) -> &'static str {
        let has = |e: &str| self.efforts().contains(&e);
        match effort {
            Effort::Minimal | Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh if has("xhigh") => "xhigh",
            Effort::XHigh | Effort::Max => "max",
        }
    }

    /// Binds replayed thinking to the prefix, model and account it was made for, whatever the
    /// account (docs/spec.md §5a: "Claude Fable 5.1 and later models"; an older account opts in
    /// with `thinking.block_binding`). The one list: [`BOUND_FROM`].
    pub fn binds_prefix(&self) -> bool {
        BOUND_FROM
            .iter()
            .any(|(family, major, minor)| self.family_is(family) && self.at_least(*major, *minor))
    }

    /// Keeps earlier turns' thinking in context (docs/spec.md §5): Opus ≥ 4.5, Sonnet ≥ 4.6, Haiku
    /// ≥ 5.5, newer families ≥ 5.0; never Claude 3.x; an id without a version keeps it.
    pub fn keeps_prior_thinking(&self) -> bool {
        let Some(version) = self.version else {
            return true;
        };
        if version.0 < 4 {
            return false;
        }
        match self.family.as_deref() {
            Some("opus") => self.at_least(4, 5),
            Some("sonnet") => self.at_least(4, 6),
            Some("haiku") => self.at_least(5, 5),
            _ => self.at_least(5, 0),
        }
    }

    /// The model's documented output ceiling (max output tokens), the default `max_tokens` of
    /// an adaptive model so that thinking has room: 128K for every adaptive model
    /// (platform.claude.com/docs/en/models/opus-4-8/overview, …/opus-4-6/overview,
    /// …/sonnet-4-6/overview, …/opus-5-5/overview, …/sonnet-5-5/overview: "Max output: 128K
    /// tokens"; the Python original sends 128,000 to claude-opus-4-8). `None` for budget models,
    /// which keep [`DEFAULT_MAX_TOKENS`] (or the budget plus [`ABOVE_BUDGET`]).
    pub fn output_ceiling(&self) -> Option<u32> {
        self.adaptive().then_some(ADAPTIVE_OUTPUT_CEILING)
    }

    /// Budget thinking between tool calls needs the `interleaved-thinking-2025-05-14` beta on
    /// the Claude 4 models before 4.6 (adaptive models interleave by themselves; Claude 3.x
    /// cannot).
    pub fn needs_interleaved_beta(&self) -> bool {
        !self.adaptive() && self.version.is_some_and(|v| v.0 >= 4)
    }
}

/// The `budget_tokens` of docs/spec.md §3c for each effort.
pub fn budget(effort: Effort) -> u32 {
    match effort {
        Effort::Minimal => 1024,
        Effort::Low => 4096,
        Effort::Medium => 8192,
        Effort::High => 16000,
        Effort::XHigh => 24000,
        Effort::Max => 32000,
    }
}

/// The documented output ceiling of every adaptive Claude model (128K tokens).
pub(crate) const ADAPTIVE_OUTPUT_CEILING: u32 = 128_000;

/// `max_tokens` when no thinking budget sets it, on models that document no larger ceiling
/// hermes uses ([`ClaudeModel::output_ceiling`]).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16384;

/// What `max_tokens` adds above a thinking budget (docs/spec.md §3c).
pub const ABOVE_BUDGET: u32 = 8192;

/// Geographic inference-profile prefixes (`us.anthropic.claude-…`): docs.aws.amazon.com/bedrock/
/// latest/userguide/inference-profiles-support.html lists `us`, `us-gov`, `eu`, `apac`, `jp`,
/// `au`, `ca` and `global`.
const PROFILE_PREFIXES: &[&str] = &["us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"];

/// Reads a Bedrock model id: a foundation-model id (`anthropic.claude-sonnet-4-5-20250929-v1:0`),
/// a cross-region inference profile (`us.anthropic.claude-…`) or an ARN whose last path segment
/// is one. Returns the foundation model id without an inference-profile prefix or an ARN
/// (`anthropic.claude-opus-4-6-v1:0`), lowercased, and the Claude model when it names one (an
/// application-inference-profile ARN names none). The InvokeModel door reads ids with it
/// ([`super::body::other_than_claude_on_bedrock`]), and so does the Converse wire
/// (`bedrock::BedrockModel::parse`).
pub fn bedrock_id(model: &str) -> (String, Option<ClaudeModel>) {
    let lower = model.trim().to_ascii_lowercase();
    let last = lower.rsplit('/').next().unwrap_or(&lower);
    let base = match last.split_once('.') {
        Some((prefix, rest)) if PROFILE_PREFIXES.contains(&prefix) => rest,
        _ => last,
    }
    .to_owned();
    // `anthropic.claude-…`; a bare `claude-…` (a proxy's alias) reads the same.
    let claude = Some(base.strip_prefix("anthropic.").unwrap_or(&base))
        .filter(|id| id.starts_with("claude"))
        .and_then(|id| ClaudeModel::parse(strip_version_suffix(id)));
    (base, claude)
}

/// `id` without a Bedrock version suffix: `-v1:0`, `-v2:0`, `-v1` (`claude-opus-4-6-v1` is Opus
/// 4.6, not version 4.6.1), and a `:N` throughput suffix.
fn strip_version_suffix(id: &str) -> &str {
    let id = match id.rsplit_once(':') {
        Some((head, tail)) if tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    };
    match id.rsplit_once("-v") {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str) -> ClaudeModel {
        ClaudeModel::parse(id).unwrap()
    }

    #[test]
    fn ids_parse_with_numbers_after_or_before_the_family_and_dates_ignored() {
        assert_eq!(m("claude-opus-4-6").version, Some((4, 6)));
        assert_eq!(m("claude-opus-4-6").family.as_deref(), Some("opus"));
        assert_eq!(m("claude-3-7-sonnet-20250219").version, Some((3, 7)));
        assert_eq!(
            m("claude-3-7-sonnet-20250219").family.as_deref(),
            Some("sonnet")
        );
        assert_eq!(m("claude-haiku-4-5@20251001").version, Some((4, 5)));
        assert_eq!(m("us.anthropic.claude-opus-4-6-v1").version, Some((4, 6)));
        assert_eq!(m("claude-opus-5").version, Some((5, 0)));
        assert_eq!(m("claude-mythos-preview").version, None);
        assert!(ClaudeModel::parse("deepseek-v4-pro").is_none());
    }

    #[test]
    fn adaptive_and_budget_models_are_told_apart() {
        for id in [
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-opus-4-7",
            "claude-sonnet-5",
            "claude-mythos-preview",
            "claude-fable-5-1",
        ] {
            assert!(m(id).adaptive(), "{id}");
        }
        for id in [
            "claude-sonnet-4-5",
            "claude-opus-4-5",
            "claude-haiku-4-5",
            "claude-3-7-sonnet-20250219",
        ] {
            assert!(!m(id).adaptive(), "{id}");
        }
        assert!(m("claude-opus-4-7").adaptive_only());
        assert!(!m("claude-opus-4-6").adaptive_only());
    }

    #[test]
    fn efforts_map_into_the_models_vocabulary() {
        assert_eq!(m("claude-opus-4-6").effort(Effort::Minimal), "low");
        assert_eq!(m("claude-opus-4-6").effort(Effort::XHigh), "max");
        assert_eq!(m("claude-opus-4-7").effort(Effort::XHigh), "xhigh");
        assert_eq!(m("claude-opus-4-7").effort(Effort::Max), "max");
    }

    #[test]
    fn which_models_keep_prior_thinking() {
        assert!(m("claude-opus-4-5").keeps_prior_thinking());
        assert!(!m("claude-opus-4-1").keeps_prior_thinking());
        assert!(m("claude-sonnet-4-6").keeps_prior_thinking());
        assert!(!m("claude-sonnet-4-5").keeps_prior_thinking());
        assert!(!m("claude-haiku-4-5").keeps_prior_thinking());
        assert!(!m("claude-3-7-sonnet-20250219").keeps_prior_thinking());
        assert!(m("claude-mythos-preview").keeps_prior_thinking());
        assert!(m("claude-fable-5-1").keeps_prior_thinking());
    }

    #[test]
    fn the_interleaved_beta_is_for_budget_claude_4_models() {
        assert!(m("claude-sonnet-4-5").needs_interleaved_beta());
        assert!(!m("claude-opus-4-6").needs_interleaved_beta());
        assert!(!m("claude-3-7-sonnet-20250219").needs_interleaved_beta());
    }
}
