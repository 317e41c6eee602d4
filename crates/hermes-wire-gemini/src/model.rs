//! What a Gemini model id tells the wire: its generation and variant, and from them the
//! thinking request of docs/spec.md §3c (`generationConfig.thinkingConfig`): Gemini 3 models take a
//! `thinkingLevel`, Gemini 2.5 models a `thinkingBudget`, older models no thinking request.
//!
//! Levels and budget ranges per model are those of ai.google.dev/gemini-api/docs/thinking
//! ("Thinking levels", "Set the thinking budget"): Gemini 3 Pro takes `LOW` and `HIGH` (later
//! Pro models add `MEDIUM`; none takes `MINIMAL`), Flash and Flash-Lite models take `MINIMAL`,
//! `LOW`, `MEDIUM` and `HIGH`; Gemini 2.5 Pro budgets run 128–32768 and thinking cannot be
//! turned off, 2.5 Flash 0–24576, 2.5 Flash-Lite 512–24576 (0 turns thinking off). The enum
//! values are the API reference's `ThinkingLevel` names, spelled as google-genai 3.6 sends
//! them (`"LOW"`).

use hermes_core::route::{Effort, ThinkingRequest};

/// The thinking budgets of docs/spec.md §3c for minimal, low, medium, high, xhigh and max (Gemini
/// 2.5), before the model's cap.
pub(super) const BUDGETS: [u32; 6] = [512, 1024, 8192, 24576, 32768, 32768];

/// Which line of a generation a model is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `…-pro…`
    Pro,
    /// `…-flash…` (not Flash-Lite).
    Flash,
    /// `…-flash-lite…`
    FlashLite,
    /// Anything else (`…-exp…`, an unknown name).
    Other,
}

/// How a model takes a thinking request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinking {
    /// `thinkingLevel` (Gemini 3 and later): the levels the model documents, lowest first.
    Levels(&'static [&'static str]),
    /// `thinkingBudget` (Gemini 2.5): the documented maximum, and whether 0 (off) is allowed.
    Budget {
        /// The largest budget the model takes.
        max: u32,
        /// Whether `thinkingBudget: 0` turns thinking off on this model.
        can_disable: bool,
    },
    /// No thinking request at all (Gemini 2.0, 1.5, Gemma, an id without a version).
    None,
}

/// A Gemini model id, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeminiModel {
    /// Major and minor version (`gemini-2.5-flash` → 2.5), when the id has one.
    pub version: Option<(u32, u32)>,
    /// The line within the generation.
    pub variant: Variant,
}

/// Levels of Gemini 3 Pro.
const PRO_3_0: &[&str] = &["LOW", "HIGH"];
/// Levels of later Pro models.
const PRO_LATER: &[&str] = &["LOW", "MEDIUM", "HIGH"];
/// Levels of Flash, Flash-Lite and other Gemini 3+ models.
const ALL_LEVELS: &[&str] = &["MINIMAL", "LOW", "MEDIUM", "HIGH"];

impl GeminiModel {
    /// Parses `model` (`gemini-3-pro-preview`, `models/gemini-2.5-flash`,
    /// `gemini-2.5-flash-lite-preview-09-2025`, `gemma-3-27b-it`).
    pub fn parse(model: &str) -> GeminiModel {
        let lower = model.to_ascii_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let variant = if name.contains("flash-lite") {
            Variant::FlashLite
        } else if name.contains("flash") {
            Variant::Flash
        } else if name.contains("pro") {
            Variant::Pro
        } else {
            Variant::Other
        };
        let version = name.strip_prefix("gemini-").and_then(|rest| {
            let number = rest.split('-').next()?;
            let mut parts = number.split('.');
            let major = parts.next()?.parse::<u32>().ok()?;
            let minor = match parts.next() {
                Some(m) => m.parse::<u32>().ok()?,
                None => 0,
            };
            Some((major, minor))
        });
        GeminiModel { version, variant }
    }

    /// How this model takes a thinking request.
    pub fn thinking(&self) -> Thinking {
        match self.version {
            Some((major, minor)) if major >= 3 => Thinking::Levels(match self.variant {
                Variant::Pro if (major, minor) == (3, 0) => PRO_3_0,
                Variant::Pro => PRO_LATER,
                Variant::Flash | Variant::FlashLite | Variant::Other => ALL_LEVELS,
            }),
            Some((2, 5)) => match self.variant {
                Variant::Pro => Thinking::Budget {
                    max: 32768,
                    can_disable: false,
                },
                Variant::Flash | Variant::FlashLite => Thinking::Budget {
                    max: 24576,
                    can_disable: true,
                },
                Variant::Other => Thinking::Budget {
                    max: 32768,
                    can_disable: false,
                },
            },
            _ => Thinking::None,
        }
    }

    /// True for the models whose function calls must carry their thought signature in the turn
    /// in flight (Gemini 3 and later, ai.google.dev/gemini-api/docs/thought-signatures).
    pub fn enforces_signatures(&self) -> bool {
        self.version.is_some_and(|(major, _)| major >= 3)
    }

    /// True for the models that take media inside a function response (`functionResponse.
    /// parts`): the Gemini 3 series ("Multimodal function responses",
    /// ai.google.dev/gemini-api/docs/function-calling).
    pub fn multimodal_function_responses(&self) -> bool {
        self.version.is_some_and(|(major, _)| major >= 3)
    }
}

/// The position of an effort on the four-level scale (xhigh and max are high).
fn rank(effort: Effort) -> usize {
    match effort {
        Effort::Minimal => 0,
        Effort::Low => 1,
        Effort::Medium => 2,
        Effort::High | Effort::XHigh | Effort::Max => 3,
    }
}

/// The position of a level word on the four-level scale.
fn level_rank(level: &str) -> usize {
    ALL_LEVELS.iter().position(|l| *l == level).unwrap_or(3)
}

/// The documented level nearest to `effort` (docs/spec.md §3c: a model with only low and high gets
/// low for minimal and low, high for medium and above; ties go up).
pub(super) fn nearest_level(levels: &'static [&'static str], effort: Effort) -> &'static str {
    let want = rank(effort);
    let mut best = levels.last().copied().unwrap_or("HIGH");
    let mut best_distance = usize::MAX;
    for level in levels {
        let distance = level_rank(level).abs_diff(want);
        // `<=`: a tie goes to the higher level (the later one).
        if distance <= best_distance {
            best = level;
            best_distance = distance;
        }
    }
    best
}

/// The `thinkingConfig` of one request, and what was decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThinkingPlan {
    /// `includeThoughts: true`.
    pub include_thoughts: bool,
    /// `thinkingBudget`.
    pub budget: Option<u32>,
    /// `thinkingLevel`.
    pub level: Option<&'static str>,
    /// What was decided, for `--explain`.
    pub explain: String,
}

impl ThinkingPlan {
    /// True when the request carries a `thinkingConfig`.
    pub fn any(&self) -> bool {
        self.include_thoughts || self.budget.is_some() || self.level.is_some()
    }
}

/// The thinking request for `request` on `model_id` (docs/spec.md §3c); an effort or a
/// `--no-thinking` the model cannot take is an error, before anything is sent.
pub fn thinking_plan(request: ThinkingRequest, model_id: &str) -> Result<ThinkingPlan, String> {
    let model = GeminiModel::parse(model_id);
    let mut plan = ThinkingPlan::default();
    match (model.thinking(), request) {
        (Thinking::None, ThinkingRequest::NoPreference) => {
            plan.explain = format!("no thinking request ({model_id} takes none)");
        }
        (Thinking::None, ThinkingRequest::Off) => {
            plan.explain = format!("--no-thinking → no thinking request ({model_id} takes none)");
        }
        (Thinking::None, ThinkingRequest::Effort(e)) => {
            return Err(format!(
                "--effort {} cannot be sent to {model_id}: on the Gemini API only Gemini 2.5 models (thinkingBudget) and Gemini 3 and later models (thinkingLevel) take a thinking request; drop --effort for this model",
                e.as_str()
            ));
        }
        (_, ThinkingRequest::NoPreference) => {
            plan.include_thoughts = true;
            plan.explain =
                "no thinking preference → thinkingConfig.includeThoughts true (the model's default level or budget)".into();
        }
        (Thinking::Levels(levels), ThinkingRequest::Effort(e)) => {
            let level = nearest_level(levels, e);
            plan.include_thoughts = true;
            plan.level = Some(level);
            plan.explain = format!(
                "--effort {} → thinkingConfig.includeThoughts true, thinkingLevel {level} (levels of {model_id}: {})",
                e.as_str(),
                levels.join(", ")
            );
        }
        (Thinking::Levels(levels), ThinkingRequest::Off) => {
            if levels.first() != Some(&"MINIMAL") {
                return Err(format!(
                    "--no-thinking cannot be honoured by {model_id}: its lowest thinking level is {} and thinking cannot be turned off; drop --no-thinking (or use --effort low)",
                    levels.first().copied().unwrap_or("LOW")
                ));
            }
            plan.level = Some("MINIMAL");
            plan.explain =
                "--no-thinking → thinkingConfig.thinkingLevel MINIMAL (the lowest level; no thought summaries)".into();
        }
        (Thinking::Budget { max, .. }, ThinkingRequest::Effort(e)) => {
            let budget = BUDGETS[e as usize].min(max);
            plan.include_thoughts = true;
            plan.budget = Some(budget);
            plan.explain = format!(
                "--effort {} → thinkingConfig.includeThoughts true, thinkingBudget {budget}{}",
                e.as_str(),
                if budget < BUDGETS[e as usize] {
                    format!(" (capped at {model_id}'s maximum)")
                } else {
                    String::new()
                }
            );
        }
        (Thinking::Budget { can_disable, .. }, ThinkingRequest::Off) => {
            if !can_disable {
                return Err(format!(
                    "--no-thinking cannot be honoured by {model_id}: this model only works with thinking on (a thinkingBudget of 0 is refused); drop --no-thinking (or use --effort minimal)"
                ));
            }
            plan.budget = Some(0);
            plan.explain = "--no-thinking → thinkingConfig.thinkingBudget 0 (thinking off)".into();
        }
    }
    Ok(plan)
}

/// The output ceiling Google documents for `model_id` (its "Output token limit"), sent as
/// `generationConfig.maxOutputTokens` unless configured otherwise; `None` for ids without a
/// documented text-model ceiling here (Gemma, image, TTS, Live and audio models, unknown names),
/// which then send none. The one table of ceilings, so a configured per-family value can replace
/// it later. Sources, ai.google.dev/gemini-api/docs/models/<id>: gemini-3-pro-preview and
/// gemini-3.1-pro-preview 65,536; gemini-3-flash-preview 65,536 (also
/// docs.cloud.google.com/…/models/gemini/3-flash); gemini-2.5-pro, gemini-2.5-flash and
/// gemini-2.5-flash-lite 65,536; gemini-2.0-flash and gemini-2.0-flash-lite 8,192 (Vertex lists
/// more for 2.0 Flash; the smaller limit is valid on both).
pub fn output_ceiling(model_id: &str) -> Option<u32> {
    let lower = model_id.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    if ["image", "tts", "live", "audio", "embedding"]
        .iter()
        .any(|kind| name.contains(kind))
    {
        return None;
    }
    let model = GeminiModel::parse(name);
    if model.variant == Variant::Other {
        return None;
    }
    match model.version? {
        (major, _) if major >= 3 => Some(65_536),
        (2, 5) => Some(65_536),
        (2, 0) => Some(8_192),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn output_ceilings_are_the_documented_ones() {
        for (id, want) in [
            ("gemini-3-pro-preview", Some(65_536)),
            ("gemini-3.1-pro-preview", Some(65_536)),
            ("models/gemini-3-flash-preview", Some(65_536)),
            ("gemini-2.5-pro", Some(65_536)),
            ("gemini-2.5-flash-lite-preview-09-2025", Some(65_536)),
            ("gemini-2.0-flash", Some(8_192)),
            ("gemini-2.5-flash-image", None),
            ("gemini-2.5-flash-preview-tts", None),
            ("gemma-3-27b-it", None),
            ("gemini-exp-1206", None),
        ] {
            assert_eq!(output_ceiling(id), want, "{id}");
        }
    }

    use super::*;

    #[test]
    fn ids_parse_into_generation_and_variant() {
        let m = GeminiModel::parse("gemini-2.5-flash-lite-preview-09-2025");
        assert_eq!((m.version, m.variant), (Some((2, 5)), Variant::FlashLite));
        let m = GeminiModel::parse("models/gemini-3-pro-preview");
        assert_eq!((m.version, m.variant), (Some((3, 0)), Variant::Pro));
        let m = GeminiModel::parse("gemini-3.1-flash");
        assert_eq!((m.version, m.variant), (Some((3, 1)), Variant::Flash));
        assert_eq!(GeminiModel::parse("gemma-3-27b-it").version, None);
        assert_eq!(GeminiModel::parse("gemini-flash-latest").version, None);
    }

    #[test]
    fn nearest_levels_round_ties_up() {
        let effort = |e| nearest_level(PRO_3_0, e);
        assert_eq!(effort(Effort::Minimal), "LOW");
        assert_eq!(effort(Effort::Low), "LOW");
        assert_eq!(effort(Effort::Medium), "HIGH");
        assert_eq!(effort(Effort::Max), "HIGH");
        assert_eq!(nearest_level(ALL_LEVELS, Effort::Minimal), "MINIMAL");
        assert_eq!(nearest_level(ALL_LEVELS, Effort::Medium), "MEDIUM");
        assert_eq!(nearest_level(PRO_LATER, Effort::Minimal), "LOW");
        assert_eq!(nearest_level(PRO_LATER, Effort::XHigh), "HIGH");
    }
}
