//! Model names: the check every client's string passes first (a conservative character set,
//! a length bound), aliases, and `provider/model` turned into the engine's [`Choice`].

use std::collections::BTreeMap;

use hermes_engine::{Choice, Engine};

use crate::error::ApiError;

/// The longest model string accepted.
pub const MAX_MODEL_LEN: usize = 200;

/// Refuses a model string outside `[A-Za-z0-9._:@+-]` segments joined by `/` (no empty, `.`
/// or `..` segment) or longer than [`MAX_MODEL_LEN`] bytes: a 400 naming `model`, before the
/// string goes anywhere.
pub fn check(model: &str) -> Result<(), ApiError> {
    let refuse = |why: &str| Err(ApiError::invalid("model", format!("invalid model: {why}")));
    if model.is_empty() {
        return refuse("it is empty");
    }
    if model.len() > MAX_MODEL_LEN {
        return refuse(&format!("it is longer than {MAX_MODEL_LEN} bytes"));
    }
    if let Some(c) = model
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._:@+-/".contains(*c)))
    {
        return refuse(&format!(
            "character {c:?} is not allowed (letters, digits and . _ : @ + - /)"
        ));
    }
    if model
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return refuse("an empty, `.` or `..` path segment");
    }
    Ok(())
}

/// Whether `pattern` (an alias key where `*` stands for any run of characters) matches
/// `model`.
pub fn matches(pattern: &str, model: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = model.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The `provider/model` a model string names (`[serve.models]`, docs/spec.md §10's gateway): an
/// exact alias first; else the pattern alias (`claude-sonnet-*`, `claude-*`) with the most literal
/// characters (the first in key order among equals); else the string itself when it holds a
/// `/`; else the door's default model. A target whose model is `*` (`anthropic/*`) forwards the
/// client's own model name. `None`: nothing names it.
pub fn target_of(
    aliases: &BTreeMap<String, String>,
    default: Option<&str>,
    model: &str,
) -> Option<String> {
    let pattern = || {
        aliases
            .iter()
            .filter(|(key, _)| key.contains('*') && matches(key, model))
            .min_by_key(|(key, _)| std::cmp::Reverse(key.len() - key.matches('*').count()))
            .map(|(_, target)| target.as_str())
    };
    let target = aliases
        .get(model)
        .map(String::as_str)
        .or_else(pattern)
        .or_else(|| model.contains('/').then_some(model))
        .or(default)?;
    Some(match target.split_once('/') {
        Some((provider, "*")) => format!("{provider}/{model}"),
        _ => target.to_owned(),
    })
}

/// What a model string names ([`target_of`]), split at its first `/` into a provider id this
/// engine knows and the provider's model id.
pub(crate) fn resolve(
    engine: &Engine,
    aliases: &BTreeMap<String, String>,
    default: Option<&str>,
    model: &str,
) -> Result<Choice, ApiError> {
    check(model)?;
    let Some(target) = target_of(aliases, default, model) else {
        return Err(ApiError::unknown_model(model));
    };
    let Some((provider, id)) = target.split_once('/') else {
        return Err(ApiError::unknown_model(model));
    };

    let provider = provider.to_ascii_lowercase();
    if !engine.knows_provider(&provider) {
        return Err(ApiError::unknown_model(model));
    }
    if provider == "sim" {
        // `sim/PROFILE/MODEL` picks a simulator profile; `sim/MODEL` the default one.
        let profiles: Vec<&str> = engine
            .sim_profiles()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        if let Some((profile, rest)) = sim_profile_of(&profiles, id) {
            let url = hermes_engine::sim_url(profile);
            return Ok(Choice::new(Some(&provider), Some(rest), Some(&url)));
        }
    }
    Ok(Choice::new(Some(&provider), Some(id), None))
}

/// The simulator profile `id` (what follows `sim/`) names by its first segment, one of
/// `profiles`, and the model after it; `None` when the first segment is no profile (then the
/// whole `id` is the default profile's model).
pub fn sim_profile_of<'a>(profiles: &[&'a str], id: &'a str) -> Option<(&'a str, &'a str)> {
    let (first, rest) = id.split_once('/')?;
    let profile = profiles.iter().find(|p| **p == first)?;
    Some((profile, rest))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{matches, sim_profile_of, target_of};

    #[test]
    fn a_sim_model_names_a_profile_by_its_first_segment() {
        let profiles = ["deepseek-v4", "anthropic", "openrouter"];
        assert_eq!(
            sim_profile_of(&profiles, "anthropic/claude-opus-4-6"),
            Some(("anthropic", "claude-opus-4-6"))
        );
        assert_eq!(
            sim_profile_of(&profiles, "openrouter/anthropic/claude-sonnet-5"),
            Some(("openrouter", "anthropic/claude-sonnet-5"))
        );
        assert_eq!(sim_profile_of(&profiles, "deepseek-v4-pro"), None);
        assert_eq!(sim_profile_of(&profiles, "nope/x"), None);
    }

    #[test]
    fn a_pattern_matches_any_run_of_characters_where_it_has_a_star() {
        for (pattern, model, expected) in [
            ("claude-*", "claude-sonnet-5-5", true),
            ("claude-sonnet-*", "claude-sonnet-5", true),
            ("claude-sonnet-*", "claude-opus-4-8", false),
            ("*-haiku-*", "claude-haiku-5-5", true),
            ("claude-*-5", "claude-sonnet-5-5", true),
            ("claude-*-5", "claude-opus-4-8", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("*", "anything", true),
        ] {
            assert_eq!(matches(pattern, model), expected, "{pattern} ~ {model}");
        }
    }

    #[test]
    fn exact_names_win_then_the_most_literal_pattern_then_provider_model_then_the_default() {
        let aliases: BTreeMap<String, String> = [
            ("sonnet", "deepseek/deepseek-v4-pro"),
            ("claude-*", "anthropic/*"),
            ("claude-sonnet-*", "deepseek/deepseek-v4-flash"),
            ("claude-sonnet-5-5", "anthropic/claude-sonnet-5-5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let default = Some("deepseek/deepseek-v4-pro");
        for (model, expected) in [
            ("sonnet", Some("deepseek/deepseek-v4-pro")),
            ("claude-sonnet-5-5", Some("anthropic/claude-sonnet-5-5")),
            ("claude-sonnet-5", Some("deepseek/deepseek-v4-flash")),
            ("claude-opus-4-8", Some("anthropic/claude-opus-4-8")),
            ("gemini/gemini-3-pro", Some("gemini/gemini-3-pro")),
            ("gpt-x", Some("deepseek/deepseek-v4-pro")),
        ] {
            assert_eq!(
                target_of(&aliases, default, model).as_deref(),
                expected,
                "{model}"
            );
        }
        assert_eq!(target_of(&aliases, None, "gpt-x"), None);
    }
}
