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

/// What a model string names: an alias's target or the string itself, split at its first `/`
/// into a provider id this engine knows and the provider's model id.
pub(crate) fn resolve(
    engine: &Engine,
    aliases: &BTreeMap<String, String>,
    model: &str,
) -> Result<Choice, ApiError> {
    check(model)?;
    let target = aliases.get(model).map_or(model, String::as_str);
    let Some((provider, id)) = target.split_once('/') else {
        return Err(ApiError::unknown_model(model));
    };
    let provider = provider.to_ascii_lowercase();
    if !engine.provider_names().contains(&provider) {
        return Err(ApiError::unknown_model(model));
    }
    Ok(Choice::new(Some(&provider), Some(id), None))
}
