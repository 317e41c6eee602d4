//! What an OpenAI model id implies for the Responses wire's `reasoning` object (docs/spec.md §3c),
//! and for the sampling parameters a reasoning model takes on either OpenAI wire.
//!
//! The effort vocabularies are the ones OpenAI's reasoning guide and model pages give
//! (https://platform.openai.com/docs/guides/reasoning, the model pages under
//! https://platform.openai.com/docs/models): o-series and the gpt-5 Codex models take
//! `low` / `medium` / `high`; gpt-5, gpt-5-mini and gpt-5-nano add `minimal`; gpt-5.1 replaced
//! `minimal` with `none`; gpt-5.2 and later add `xhigh` (as does gpt-5.1-codex-max); gpt-5-pro
//! takes `high` only and the later pro models `medium` to `xhigh`. The gpt-4 / gpt-3.5 families
//! and the `-chat` gpt-5 models are no reasoning models: they get no `reasoning` and no
//! `include` (both are refused there). An id this table does not know (another host's model)
//! takes every effort word the SDK knows, `minimal` to `xhigh`, and no `none`.
//!
//! `reasoning.context` is never sent. OpenAI documents it in the official SDK's request type
//! (openai-python 3.57.0, `types/shared_params/reasoning.py`, generated from OpenAI's API
//! spec): "If omitted or set to `auto`, the model determines the context mode. The `gpt-5.6`
//! model family defaults to `all_turns`; earlier models default to `current_turn`." So the
//! models that render earlier turns' reasoning do it without the field, and no OpenAI page says
//! an earlier model takes `all_turns` (OpenRouter's reference for the same field: "Only
//! supported by OpenAI GPT-5.6 and newer",
//! https://openrouter.ai/docs/client-sdks/python/components/reasoningcontext).

use hermes_core::{Effort, ThinkingRequest};

/// The efforts a model documents, lowest first, and whether it takes `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vocabulary {
    /// The effort words it takes, lowest first (`none` aside).
    pub efforts: &'static [&'static str],
    /// It takes `none` (reasoning off).
    pub takes_none: bool,
}

/// What a model id says about reasoning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A reasoning model with this vocabulary.
    Reasoning(Vocabulary),
    /// Not a reasoning model (gpt-4o, gpt-4.1, gpt-5-chat-latest…).
    Plain,
}

const THREE: &[&str] = &["low", "medium", "high"];
const GPT5: &[&str] = &["minimal", "low", "medium", "high"];
const FOUR_X: &[&str] = &["low", "medium", "high", "xhigh"];
const ALL: &[&str] = &["minimal", "low", "medium", "high", "xhigh"];

fn vocab(efforts: &'static [&'static str], takes_none: bool) -> ModelKind {
    ModelKind::Reasoning(Vocabulary {
        efforts,
        takes_none,
    })
}

/// Classifies a model id (case-insensitive; a `provider/` prefix is ignored).
pub fn model_kind(model: &str) -> ModelKind {
    let lower = model.to_ascii_lowercase();
    let m = lower.rsplit('/').next().unwrap_or(&lower);
    if let Some(rest) = m.strip_prefix("gpt-5") {
        let minor: u32 = rest
            .strip_prefix('.')
            .map(|r| {
                r.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        let pro = m.contains("-pro");
        let codex = m.contains("codex");
        return match minor {
            0 if m.contains("-chat") => ModelKind::Plain,
            0 if pro => vocab(&["high"], false),
            0 if codex => vocab(THREE, false),
            0 => vocab(GPT5, false),
            1 if m.contains("codex-max") => vocab(FOUR_X, false),
            1 if codex => vocab(THREE, false),
            1 => vocab(THREE, true),
            _ if pro => vocab(&["medium", "high", "xhigh"], false),
            _ if codex => vocab(FOUR_X, false),
            _ => vocab(FOUR_X, true),
        };
    }
    let o_series = m.len() >= 2 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
    if o_series {
        return vocab(THREE, false);
    }
    if m.starts_with("gpt-4") || m.starts_with("gpt-3") || m.starts_with("chatgpt-") {
        return ModelKind::Plain;
    }
    vocab(ALL, false)
}

/// What the body says about reasoning for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReasoningPlan {
    /// `reasoning.effort`, when one is sent.
    pub effort: Option<&'static str>,
    /// `reasoning.summary: "auto"` is sent.
    pub summary: bool,
    /// `include: ["reasoning.encrypted_content"]` is sent (reasoning models only).
    pub include_encrypted: bool,
    /// The mapping, for `hermes preview --explain`.
    pub explain: String,
}

impl ReasoningPlan {
    /// True when a `reasoning` object is sent.
    pub fn any(&self) -> bool {
        self.effort.is_some() || self.summary
    }
}

fn rank(word: &str) -> usize {
    ALL.iter().position(|w| *w == word).unwrap_or(0)
}

/// The effort word `effort` maps to in `efforts`: itself when the model takes it, `max` the
/// highest it takes, else the nearest (a tie goes up).
fn nearest(effort: Effort, efforts: &'static [&'static str]) -> Option<&'static str> {
    if effort == Effort::Max {
        return efforts.last().copied();
    }
    let want = rank(effort.as_str());
    efforts.iter().copied().min_by_key(|w| {
        let r = rank(w);
        (r.abs_diff(want), usize::from(r < want))
    })
}

/// The reasoning plan for `thinking` on `model` (docs/spec.md §3c):
/// `{"effort":E,"summary":"auto"}`, `--no-thinking` → `none` where the model takes it, else
/// `minimal` (a clear error where it takes neither), no preference → only `summary`. An effort on a
/// model that is no reasoning model is a clear error.
pub fn reasoning_plan(thinking: ThinkingRequest, model: &str) -> Result<ReasoningPlan, String> {
    let kind = model_kind(model);
    let ModelKind::Reasoning(v) = kind else {
        return match thinking {
            ThinkingRequest::Effort(e) => Err(format!(
                "{model} is no reasoning model on the Responses API: it takes no effort (asked for {}); drop --effort",
                e.as_str()
            )),
            _ => Ok(ReasoningPlan {
                effort: None,
                summary: false,
                include_encrypted: false,
                explain: format!(
                    "thinking: {model} is no reasoning model: no `reasoning`, no `include`"
                ),
            }),
        };
    };
    let plan = |effort: Option<&'static str>, summary: bool, explain: String| ReasoningPlan {
        effort,
        summary,
        include_encrypted: true,
        explain,
    };
    Ok(match thinking {
        ThinkingRequest::NoPreference => plan(
            None,
            true,
            "thinking: no preference → reasoning {\"summary\":\"auto\"} (the model's default effort)"
                .to_owned(),
        ),
        ThinkingRequest::Off if v.takes_none => plan(
            Some("none"),
            false,
            format!("thinking: --no-thinking → effort none ({model} takes it)"),
        ),
        ThinkingRequest::Off if v.efforts.first() == Some(&"minimal") => plan(
            Some("minimal"),
            true,
            format!("thinking: --no-thinking → effort minimal ({model} takes no `none`)"),
        ),
        ThinkingRequest::Off => {
            return Err(format!(
                "{model} cannot turn reasoning off on the Responses API (it takes neither `none` nor `minimal`; its lowest effort is {}): drop --no-thinking or ask for --effort {}",
                v.efforts.first().unwrap_or(&"low"),
                v.efforts.first().unwrap_or(&"low"),
            ));
        }
        ThinkingRequest::Effort(e) => {
            let Some(word) = nearest(e, v.efforts) else {
                return Err(format!("{model} takes no reasoning effort"));
            };
            let how = if word == e.as_str() {
                String::new()
            } else {
                format!(" ({model} takes {})", v.efforts.join(", "))
            };
            plan(
                Some(word),
                true,
                format!("thinking: effort {} → {word}{how}", e.as_str()),
            )
        }
    })
}
