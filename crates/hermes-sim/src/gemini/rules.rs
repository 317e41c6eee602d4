//! Request rules of the `gemini` profile beyond the schema: contents and roles, the thinking
//! configuration per model generation, thought signatures in the current turn, and
//! function-call / function-response pairing.
//!
//! Texts are real (source beside each) unless marked simulator-chosen. The "current turn" is
//! everything after the last user turn that carries something other than `functionResponse`
//! parts (docs/providers.md: strict validation applies to function calling in the current turn;
//! older turns are not validated). Outside it, faults that would be refused inside are only noted.

use serde_json::Value;

use super::schema::{Violation, field};
use super::signature::{self, TurnContent, Verdict};
use super::{Fault, calls_of, is_thought, part_field, parts_of, role_of};

/// `* GenerateContentRequest.contents: contents is not specified` (vercel/ai#3775,
/// langchain-ai/langchain-google#1393).
pub(crate) const CONTENTS_NOT_SPECIFIED: &str =
    "* GenerateContentRequest.contents: contents is not specified\n";

/// `Please use a valid role: user, model.` (field reports; Vertex also gives it for a content
/// without a role, AI Studio defaults the role to `user`).
pub(crate) const INVALID_ROLE: &str = "Please use a valid role: user, model.";

/// `Thinking level is not supported for this model.` — `thinkingLevel` on a model before Gemini 3
/// (RooCodeInc/Roo-Code#10700 on gemini-2.5-flash; juspay/neurolink#1707 for AI Studio and
/// Vertex).
pub(crate) const LEVEL_NOT_SUPPORTED: &str = "Thinking level is not supported for this model.";

/// Both `thinkingLevel` and `thinkingBudget`. Simulator-chosen text (the Gemini 3 docs say the
/// combination is a 400 without quoting the message).
pub(crate) const LEVEL_AND_BUDGET: &str = "You cannot set both thinking_level and thinking_budget in the same request. Use thinking_level for Gemini 3 models.";

/// `thinkingConfig` on a model without thinking (Gemini 1.x / 2.0): `thinking_config is not
/// supported.` (immersive-translate/immersive-translate#2976, Veloera/Veloera#41).
pub(crate) const THINKING_NOT_SUPPORTED: &str = "thinking_config is not supported.";

/// Budget 0 on Gemini 2.5 Pro (ChatLunaLab/chatluna#519, snailyp/gemini-balance#206).
pub(crate) const BUDGET_ZERO_PRO: &str =
    "Budget 0 is invalid. This model only works in thinking mode.";

/// `Corrupted thought signature.` — a replayed signature that does not verify
/// (google-gemini/gemini-cli#13467, heyhuynhgiabuu/proxypal#119, lbjlaq/Antigravity-Manager#970).
pub(crate) const CORRUPTED_SIGNATURE: &str = "Corrupted thought signature.";

/// A functionResponse turn that does not answer the function-call turn before it. docs/providers.md
/// marks this text UNCONFIRMED for the mismatch case; it is seen in field reports of a response
/// turn without a call turn before it (langchain-ai/langchain#27799,
/// GoogleCloudPlatform/generative-ai#368). Using it for a name / id mismatch is the simulator's
/// choice.
pub(crate) const RESPONSE_AFTER_CALL: &str =
    "Please ensure that function response turn comes immediately after a function call turn.";

/// The count of response parts differs from the call turn's calls (google-gemini/gemini-cli#4217,
/// #17208, #17857). Also used, by the simulator's choice, for a call turn followed by no response
/// turn at all, and for a function-response turn carrying other parts beside its
/// `functionResponse` parts (text or data as siblings: google-gemini/gemini-cli#16137 reports that
/// shape refused with a 400 INVALID_ARGUMENT, google/oss-rebuild#1559 on Gemini 3 Flash; which of
/// the texts it draws is not quoted there).
pub(crate) const RESPONSE_COUNT: &str = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";

/// A function-call turn first in `contents` or right after another model turn
/// (google-gemini/gemini-cli#11814, #26486).
pub(crate) const CALL_AFTER_USER: &str = "Please ensure that function call turn comes immediately after a user turn or after a function response turn.";

/// The missing-signature text (csells/dartantic#86, lbjlaq/Antigravity-Manager#2157,
/// manthanabc/paws#103). `position` is the 1-based index of the model turn in `contents`: the
/// field reports show even positions (2, 10, 32) for model turns of alternating histories, which
/// fits a 1-based content index (an inference, not documented).
pub(crate) fn missing_signature_text(name: &str, position: usize) -> String {
    format!(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )
}

/// An out-of-range `thinkingBudget` (CherryHQ/cherry-studio#6986; RooCodeInc/Roo-Code#4399 shows
/// the shorter `The thinking budget (N) is invalid.` form).
pub(crate) fn budget_range_text(budget: i64, min: i64, max: i64) -> String {
    format!(
        "The thinking budget {budget} is invalid. Please choose a value between {min} and {max}."
    )
}

/// A Gemini 2.5 tier (budget ranges from ai.google.dev/gemini-api/docs/thinking as quoted in
/// lobehub/lobehub#8122 and snailyp/gemini-balance#195).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// 128..=32768 (or -1); thinking cannot be turned off.
    Pro,
    /// 0..=24576 (or -1); 0 turns thinking off; thinks by default.
    Flash,
    /// 512..=24576, 0 or -1; does not think by default.
    FlashLite,
}

/// How a model thinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Generation {
    /// Gemini 3 and later (and unparseable Gemini ids): `thinkingLevel`, always thinks, enforces
    /// signatures on function calls of the current turn.
    Three,
    /// Gemini 2.5: `thinkingBudget`; signatures minted while thinking, never required.
    TwoFive(Tier),
    /// Gemini 1.x / 2.0 and Gemma: no thinking, no signatures.
    Legacy,
}

impl Generation {
    /// The generation of a model id.
    pub(crate) fn of(model: &str) -> Generation {
        let m = model.to_ascii_lowercase();
        if m.contains("gemma") {
            return Generation::Legacy;
        }
        let Some(at) = m.find("gemini-") else {
            return Generation::Three;
        };
        let rest = &m[at + "gemini-".len()..];
        let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(major) = major.parse::<u32>() else {
            return Generation::Three;
        };
        let minor: String = rest[major.to_string().len()..]
            .strip_prefix('.')
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let minor = minor.parse::<u32>().unwrap_or(0);
        match (major, minor) {
            (3.., _) => Generation::Three,
            (2, 5..) if m.contains("flash-lite") => Generation::TwoFive(Tier::FlashLite),
            (2, 5..) if m.contains("flash") => Generation::TwoFive(Tier::Flash),
            (2, 5..) => Generation::TwoFive(Tier::Pro),
            _ => Generation::Legacy,
        }
    }
}

/// What the request asks of thinking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Thinking {
    /// The model thinks (and signs its turns).
    pub(crate) on: bool,
    /// Thought summaries are returned (`includeThoughts: true` while thinking).
    pub(crate) include_thoughts: bool,
}

/// A validated request: its thinking and the simulator's notes on misplaced or unverified
/// signatures it accepted.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) thinking: Thinking,
    pub(crate) notes: Vec<String>,
}

fn int_of(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

const LEVELS: [&str; 5] = [
    "THINKING_LEVEL_UNSPECIFIED",
    "MINIMAL",
    "LOW",
    "MEDIUM",
    "HIGH",
];

/// The thinking configuration for `generation` (the schema has checked types).
fn thinking(generation: Generation, body: &Value, package: &str) -> Result<Thinking, Fault> {
    let config = body
        .as_object()
        .and_then(|o| field(o, "generationConfig"))
        .and_then(Value::as_object)
        .and_then(|g| field(g, "thinkingConfig"))
        .and_then(Value::as_object);
    let get = |name: &str| config.and_then(|c| field(c, name));
    let level = get("thinkingLevel").and_then(Value::as_str);
    let budget = get("thinkingBudget").and_then(int_of);
    let include = get("includeThoughts").and_then(Value::as_bool) == Some(true);
    if let Some(l) = level
        && !LEVELS.contains(&l.to_ascii_uppercase().as_str())
    {
        let loc = "generation_config.thinking_config.thinking_level";
        let text = format!(
            "Invalid value at '{loc}' (type.googleapis.com/{package}.ThinkingConfig.ThinkingLevel), {l:?}"
        );
        return Err(Fault::violations(vec![Violation {
            field: Some(loc.to_owned()),
            description: text,
        }]));
    }
    let on = match generation {
        Generation::Legacy => {
            if config.is_some() {
                return Err(Fault::plain(THINKING_NOT_SUPPORTED));
            }
            false
        }
        Generation::Three => {
            if level.is_some() && budget.is_some() {
                return Err(Fault::plain(LEVEL_AND_BUDGET));
            }
            true
        }
        Generation::TwoFive(tier) => {
            if level.is_some() {
                return Err(Fault::plain(LEVEL_NOT_SUPPORTED));
            }
            let (min, max) = match tier {
                Tier::Pro => (128, 32768),
                Tier::Flash => (0, 24576),
                Tier::FlashLite => (512, 24576),
            };
            match budget {
                None => tier != Tier::FlashLite,
                Some(-1) => true,
                Some(0) if tier == Tier::Pro => return Err(Fault::plain(BUDGET_ZERO_PRO)),
                Some(0) => false,
                Some(b) if (min..=max).contains(&b) => true,
                Some(b) => return Err(Fault::plain(&budget_range_text(b, min, max))),
            }
        }
    };
    Ok(Thinking {
        on,
        include_thoughts: on && include,
    })
}

/// The index of the last user turn with something besides `functionResponse` parts.
pub(crate) fn last_user_text(contents: &[Value]) -> Option<usize> {
    contents.iter().rposition(|c| {
        role_of(c) != "model"
            && parts_of(c)
                .iter()
                .any(|p| part_field(p, "functionResponse").is_none())
    })
}

/// Validates a request the schema accepted. `vertex`: the Vertex door (a content without a role
/// is refused there).
pub(crate) fn validate(
    model: &str,
    body: &Value,
    vertex: bool,
    key: &[u8],
    package: &str,
) -> Result<Checked, Fault> {
    let contents = body
        .as_object()
        .and_then(|o| field(o, "contents"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if contents.is_empty() {
        return Err(Fault::plain(CONTENTS_NOT_SPECIFIED));
    }
    for (i, c) in contents.iter().enumerate() {
        let role = c.get("role").and_then(Value::as_str);
        match role {
            Some("user" | "model") => {}
            None if !vertex => {}
            _ => return Err(Fault::plain(INVALID_ROLE)),
        }
        if parts_of(c).is_empty() {
            return Err(Fault::plain(&format!(
                "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n"
            )));
        }
    }
    let generation = Generation::of(model);
    let thinking = thinking(generation, body, package)?;
    let mut notes = Vec::new();
    signatures(generation, model, contents, key, &mut notes)?;
    pairing(contents)?;
    Ok(Checked { thinking, notes })
}

/// Thought signatures: in the current turn every present signature must verify and (Gemini 3)
/// the first `functionCall` part of each model turn must carry one; misplaced signatures and
/// faults outside the current turn are noted, not refused.
fn signatures(
    generation: Generation,
    model: &str,
    contents: &[Value],
    key: &[u8],
    notes: &mut Vec<String>,
) -> Result<(), Fault> {
    let last_user = last_user_text(contents);
    for (i, c) in contents.iter().enumerate() {
        let parts = parts_of(c);
        let signed: Vec<(usize, &str)> = parts
            .iter()
            .enumerate()
            .filter_map(|(j, p)| {
                part_field(p, "thoughtSignature")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(|s| (j, s))
            })
            .collect();
        if role_of(c) != "model" {
            for (j, _) in &signed {
                notes.push(format!(
                    "contents[{i}].parts[{j}]: thoughtSignature on a user turn (ignored)"
                ));
            }
            continue;
        }
        let current = last_user.is_none_or(|u| i > u);
        let turn = TurnContent::of(parts);
        let calls: Vec<usize> = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| part_field(p, "functionCall").is_some())
            .map(|(j, _)| j)
            .collect();
        for &(j, sig) in &signed {
            match signature::check(key, model, sig, &turn) {
                Verdict::Invalid if current => return Err(Fault::plain(CORRUPTED_SIGNATURE)),
                Verdict::Invalid => notes.push(format!(
                    "contents[{i}].parts[{j}]: thoughtSignature does not verify (accepted: outside the current turn)"
                )),
                Verdict::Valid | Verdict::Foreign => {}
            }
            match calls.first() {
                Some(&first) if j == first => {}
                Some(_) if calls.contains(&j) => notes.push(format!(
                    "contents[{i}].parts[{j}]: thoughtSignature on a functionCall part other than the turn's first (Gemini signs only the first of parallel calls)"
                )),
                Some(_) => notes.push(format!(
                    "contents[{i}].parts[{j}]: thoughtSignature on a non-functionCall part of a function-call turn (Gemini puts it on the first functionCall part)"
                )),
                None if j + 1 == parts.len() => {}
                None => notes.push(format!(
                    "contents[{i}].parts[{j}]: thoughtSignature not on the last part of a text turn"
                )),
            }
        }
        if generation != Generation::Three {
            continue;
        }
        let first_signed = calls
            .first()
            .is_some_and(|first| signed.iter().any(|(j, _)| j == first));
        match calls.first() {
            Some(&first) if !first_signed && current => {
                let name = part_field(&parts[first], "functionCall")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return Err(Fault::plain(&missing_signature_text(name, i + 1)));
            }
            Some(&first) if !first_signed => notes.push(format!(
                "contents[{i}].parts[{first}]: functionCall without thoughtSignature (accepted: outside the current turn)"
            )),
            None if signed.is_empty() && parts.iter().any(|p| !is_thought(p)) => {
                notes.push(format!(
                    "contents[{i}]: model turn without a thoughtSignature (Gemini 3 signs every reply)"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A content's `functionResponse` objects.
fn responses(c: &Value) -> Vec<&Value> {
    parts_of(c)
        .iter()
        .filter_map(|p| part_field(p, "functionResponse"))
        .collect()
}

/// Function-call / function-response pairing (docs/providers.md, "Tool-call pairing": Gemini).
fn pairing(contents: &[Value]) -> Result<(), Fault> {
    for (i, c) in contents.iter().enumerate() {
        if role_of(c) == "model" {
            let calls = calls_of(c);
            if calls.is_empty() {
                continue;
            }
            if i == 0 || role_of(&contents[i - 1]) == "model" {
                return Err(Fault::plain(CALL_AFTER_USER));
            }
            let answered: Vec<&Value> = contents
                .get(i + 1)
                .filter(|n| role_of(n) != "model")
                .map(responses)
                .unwrap_or_default();
            if answered.len() != calls.len() {
                return Err(Fault::plain(RESPONSE_COUNT));
            }
            let id = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_owned);
            let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
            let call_ids: Option<Vec<String>> = calls.iter().map(|c| id(c)).collect();
            let resp_ids: Option<Vec<String>> = answered.iter().map(|r| id(r)).collect();
            let matched = match (call_ids, resp_ids) {
                (Some(mut a), Some(mut b)) => {
                    a.sort();
                    b.sort();
                    a == b
                }
                _ => {
                    calls.iter().map(|c| name(c)).collect::<Vec<_>>()
                        == answered.iter().map(|r| name(r)).collect::<Vec<_>>()
                }
            };
            if !matched {
                return Err(Fault::plain(RESPONSE_AFTER_CALL));
            }
        } else if !responses(c).is_empty() {
            if parts_of(c)
                .iter()
                .any(|p| part_field(p, "functionResponse").is_none())
            {
                return Err(Fault::plain(RESPONSE_COUNT));
            }
            let after_calls = i > 0
                && role_of(&contents[i - 1]) == "model"
                && !calls_of(&contents[i - 1]).is_empty();
            if !after_calls {
                return Err(Fault::plain(RESPONSE_AFTER_CALL));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations() {
        assert_eq!(Generation::of("gemini-3-pro-preview"), Generation::Three);
        assert_eq!(Generation::of("gemini-3.1-flash"), Generation::Three);
        assert_eq!(Generation::of("gemini-flash-latest"), Generation::Three);
        assert_eq!(
            Generation::of("gemini-2.5-pro"),
            Generation::TwoFive(Tier::Pro)
        );
        assert_eq!(
            Generation::of("models/gemini-2.5-flash-preview-09-2025"),
            Generation::TwoFive(Tier::Flash)
        );
        assert_eq!(
            Generation::of("gemini-2.5-flash-lite"),
            Generation::TwoFive(Tier::FlashLite)
        );
        assert_eq!(Generation::of("gemini-2.0-flash"), Generation::Legacy);
        assert_eq!(Generation::of("gemini-1.5-pro"), Generation::Legacy);
        assert_eq!(Generation::of("gemma-3-27b-it"), Generation::Legacy);
    }
}
