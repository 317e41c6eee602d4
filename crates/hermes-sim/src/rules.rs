//! Request rules of the kimi, mimo, groq, cerebras, gemini-openai, copilot and acme profiles.
//!
//! Texts are the real ones from PROVIDERS.md unless a comment says "simulator-chosen" (PROVIDERS.md
//! has no exact text for that case). Rules PROVIDERS.md marks UNCONFIRMED are not enforced.

use serde_json::{Map, Value, json};

use crate::profile::{Profile, Refusal, error_400, model_of, role_of, thinking_on};
use crate::sign;

// ---------------------------------------------------------------- shared helpers

/// The assistant messages of `messages`, with their index.
fn assistants(messages: &[Value]) -> impl Iterator<Item = (usize, &Map<String, Value>)> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.as_object().map(|o| (i, o)))
        .filter(|(_, o)| role_of(o) == "assistant")
}

/// The message's `tool_calls` when it is a non-empty array.
fn tool_calls(m: &Map<String, Value>) -> Option<&Vec<Value>> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
}

/// `reasoning_content` is present as a string (`""` included: Kimi and MiMo field reports show
/// placeholders passing).
fn has_rc(m: &Map<String, Value>) -> bool {
    matches!(m.get("reasoning_content"), Some(Value::String(_)))
}

/// A non-empty string at `v`, or `None` when absent, null or `""` (a blank opaque counts as absent).
fn opaque_at(v: Option<&Value>) -> Option<Result<&str, ()>> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(Ok(s)),
        Some(_) => Some(Err(())),
    }
}

/// Whether an opaque value verifies as minted for `model` (a non-string never does).
fn verifies(key: &[u8], model: &str, v: Result<&str, ()>) -> bool {
    v.is_ok_and(|s| sign::verify_data(key, model, s))
}

/// `extra_content.google.thought_signature` of an object (message or tool call).
fn google_signature(o: &Map<String, Value>) -> Option<&Value> {
    o.get("extra_content")
        .and_then(|e| e.get("google"))
        .and_then(|g| g.get("thought_signature"))
}

// ---------------------------------------------------------------- kimi

/// Kimi's text (mastra-ai/mastra#12592), in `{"error":{"message","type"}}`.
pub(crate) fn kimi_missing_text(index: usize) -> String {
    format!(
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
    )
}

/// Moonshot refuses `thinking` together with `reasoning_effort` (SPEC §3b). Simulator-chosen text:
/// PROVIDERS.md has no exact wording.
pub(crate) const KIMI_THINKING_WITH_EFFORT: &str =
    "thinking and reasoning_effort cannot be used together; set only one of them";

/// k2.5 has no `keep` parameter. Simulator-chosen text.
pub(crate) fn kimi_keep_unsupported(model: &str) -> String {
    format!("thinking.keep is not a valid parameter for model {model}")
}

/// A `keep` value the model does not accept. Simulator-chosen text.
pub(crate) fn kimi_keep_invalid(model: &str, allowed: &str) -> String {
    format!("invalid thinking.keep for model {model}: must be {allowed}")
}

/// k2.7-code cannot turn thinking off. Simulator-chosen text.
pub(crate) fn kimi_cannot_disable(model: &str) -> String {
    format!("thinking cannot be disabled for model {model}: thinking.type must be \"enabled\"")
}

/// Moonshot Kimi: per-model `thinking` validation, then `reasoning_content` on tool-call turns
/// (on every assistant turn with `keep:"all"` or on k2.7-code, whose preserved thinking is always on).
pub(crate) fn kimi(body: &Value, messages: &[Value]) -> Result<(), Refusal> {
    let p = Profile::Kimi;
    let model = model_of(body);
    let lower = model.to_ascii_lowercase();
    let thinking = body.get("thinking").filter(|t| !t.is_null());
    let effort = body.get("reasoning_effort").filter(|e| !e.is_null());
    if thinking.is_some() && effort.is_some() {
        return Err(error_400(p, KIMI_THINKING_WITH_EFFORT));
    }
    let keep = thinking.and_then(|t| t.get("keep"));
    let disabled = !thinking_on(body);
    let code = lower.contains("k2.7-code");
    if lower.contains("k2.5") {
        // No `keep` parameter: a non-null one is refused (null counts as absent).
        if keep.is_some_and(|k| !k.is_null()) {
            return Err(error_400(p, &kimi_keep_unsupported(model)));
        }
    } else if code {
        if disabled {
            return Err(error_400(p, &kimi_cannot_disable(model)));
        }
        // Documented: omitted or "all"; any other value (null included) errors.
        if keep.is_some_and(|k| k != "all") {
            return Err(error_400(
                p,
                &kimi_keep_invalid(model, "omitted or \"all\""),
            ));
        }
    } else if lower.contains("k2.6") && keep.is_some_and(|k| !k.is_null() && k != "all") {
        return Err(error_400(p, &kimi_keep_invalid(model, "null or \"all\"")));
    }
    if disabled {
        return Ok(());
    }
    let every = code || keep.is_some_and(|k| k == "all");
    for (i, m) in assistants(messages) {
        if (every || tool_calls(m).is_some()) && !has_rc(m) {
            // The only real text; Kimi uses it for the preserved-thinking rule as well.
            return Err(error_400(p, &kimi_missing_text(i)));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- mimo

/// MiMo's reported text (VicBilibily/GCMP#171). The exact body is UNCONFIRMED: the simulator puts
/// it in an OpenAI-style envelope.
pub(crate) const MIMO_TEXT: &str =
    "The reasoning_content in the thinking mode must be passed back to the API";

/// MiMo thinking: explicit `thinking.type` wins; otherwise on, except for the v2-flash models
/// whose default is off.
pub(crate) fn mimo_thinking_on(body: &Value) -> bool {
    match body
        .get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
    {
        Some("disabled") => false,
        Some("enabled") => true,
        _ => !model_of(body).to_ascii_lowercase().contains("v2-flash"),
    }
}

/// Xiaomi MiMo: `reasoning_content` on assistant tool-call turns while thinking is on.
pub(crate) fn mimo(body: &Value, messages: &[Value]) -> Result<(), Refusal> {
    if !mimo_thinking_on(body) {
        return Ok(());
    }
    match assistants(messages).find(|(_, m)| tool_calls(m).is_some() && !has_rc(m)) {
        Some(_) => Err(error_400(Profile::Mimo, MIMO_TEXT)),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------- groq / cerebras

/// Keys a strict schema (Groq, Cerebras) allows on an assistant message.
const STRICT_ASSISTANT_KEYS: &[&str] = &["role", "content", "tool_calls", "name"];

/// Groq's refusal text for `field` on message `index` (janhq/jan#8136; musistudio/claude-code-router#1204
/// for the short `reasoning` form).
pub(crate) fn groq_unsupported_text(index: usize, role: &str, field: &str) -> String {
    match field {
        "reasoning_content" => format!(
            "'messages.{index}' : for 'role:{role}' the following must be satisfied[('messages.{index}' : property 'reasoning_content' is unsupported)]"
        ),
        _ => format!("property '{field}' is unsupported"),
    }
}

/// Groq: only role, content, tool_calls and name on assistant messages.
pub(crate) fn groq(messages: &[Value]) -> Result<(), Refusal> {
    for (i, m) in assistants(messages) {
        if let Some(k) = m
            .keys()
            .find(|k| !STRICT_ASSISTANT_KEYS.contains(&k.as_str()))
        {
            return Err(error_400(
                Profile::Groq,
                &groq_unsupported_text(i, "assistant", k),
            ));
        }
    }
    Ok(())
}

/// Cerebras' refusal: a top-level body, not wrapped in `error` (Kilo-Org/kilocode#10375).
pub(crate) fn cerebras_unsupported(index: usize, role: &str, field: &str) -> Refusal {
    let path = format!("messages.{index}.{role}.{field}");
    Refusal {
        status: 400,
        body: json!({
            "message": format!("{path}: property '{path}' is unsupported"),
            "type": "invalid_request_error",
            "param": "validation_error",
            "code": "wrong_api_format"
        }),
    }
}

/// Cerebras: only role, content, tool_calls and name on assistant messages.
pub(crate) fn cerebras(messages: &[Value]) -> Result<(), Refusal> {
    for (i, m) in assistants(messages) {
        if let Some(k) = m
            .keys()
            .find(|k| !STRICT_ASSISTANT_KEYS.contains(&k.as_str()))
        {
            return Err(cerebras_unsupported(i, "assistant", k));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- gemini-openai

/// Top-level names the Gemini OpenAI-compatible endpoint knows (others: "Unknown name").
pub const GEMINI_TOP_LEVEL: &[&str] = &[
    "model",
    "messages",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "n",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "tools",
    "tool_choice",
    "response_format",
    "reasoning_effort",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "extra_body",
];

/// The sentinel reported to bypass signature validation (field reports; official wording
/// UNCONFIRMED). Accepted so the profile never refuses it.
pub(crate) const GEMINI_SKIP_SENTINEL: &str = "skip_thought_signature_validator";

/// Gemini's missing-signature text (manthanabc/paws#103); `position` is the message index.
pub(crate) fn gemini_missing_text(name: &str, position: usize) -> String {
    format!(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )
}

/// A signature that does not verify on a function call. Simulator-chosen text.
pub(crate) fn gemini_invalid_call_text(name: &str, position: usize) -> String {
    format!(
        "Thought signature is not valid. Additional data, function call `default_api:{name}` , position {position}."
    )
}

/// A signature that does not verify on a text turn. Simulator-chosen text.
pub(crate) fn gemini_invalid_text_text(position: usize) -> String {
    format!("Thought signature is not valid. Additional data, content position {position}.")
}

/// Gemini unknown-name text (SuzumiyaAkizuki/ComfyUI-NewBie-LLM-Formatter#3).
pub(crate) fn gemini_unknown_name_text(name: &str) -> String {
    format!("Invalid JSON payload received. Unknown name \"{name}\": Cannot find field.")
}

/// Models that do not enforce signatures (Gemini 1.x/2.x, Gemma): PROVIDERS.md documents the
/// requirement for Gemini 3 tool calls only.
fn gemini_exempt(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    ["gemini-1", "gemini-2", "gemma"]
        .iter()
        .any(|p| m.contains(p))
}

/// Gemini OpenAI-compat: unknown top-level names, then thought signatures (present ones must
/// verify anywhere; the first call of each assistant message of the current turn needs one).
pub(crate) fn gemini(
    obj: &Map<String, Value>,
    messages: &[Value],
    key: &[u8],
) -> Result<(), Refusal> {
    let p = Profile::GeminiOpenAi;
    if let Some(k) = obj.keys().find(|k| !GEMINI_TOP_LEVEL.contains(&k.as_str())) {
        return Err(error_400(p, &gemini_unknown_name_text(k)));
    }
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("sim-model");
    let enforce = !gemini_exempt(model);
    let last_user = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let ok = |v: Result<&str, ()>| v == Ok(GEMINI_SKIP_SENTINEL) || verifies(key, model, v);
    for (i, m) in assistants(messages) {
        if let Some(sig) = opaque_at(google_signature(m))
            && !ok(sig)
        {
            return Err(error_400(p, &gemini_invalid_text_text(i)));
        }
        let current = last_user.is_none_or(|u| i > u);
        for (j, call) in tool_calls(m).into_iter().flatten().enumerate() {
            let Some(co) = call.as_object() else { continue };
            let name = co
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            match opaque_at(google_signature(co)) {
                Some(sig) if !ok(sig) => {
                    return Err(error_400(p, &gemini_invalid_call_text(name, i)));
                }
                None if j == 0 && current && enforce => {
                    return Err(error_400(p, &gemini_missing_text(name, i)));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- copilot

/// A replayed `reasoning_opaque` or `function.thought_signature` that does not verify.
/// Simulator-chosen: the "invalid body request" wording is what Copilot returned when the opaque
/// was missing for Gemini 3 (anomalyco/opencode PR #8900); the code is Copilot's
/// `invalid_request_body` (caozhiyuan/copilot-api#73).
pub(crate) const COPILOT_INVALID: &str = "invalid body request";

/// Copilot: replayed opaque values must verify when present; they are never required.
pub(crate) fn copilot(body: &Value, messages: &[Value], key: &[u8]) -> Result<(), Refusal> {
    let model = model_of(body);
    for (_, m) in assistants(messages) {
        if let Some(op) = opaque_at(m.get("reasoning_opaque"))
            && !verifies(key, model, op)
        {
            return Err(error_400(Profile::Copilot, COPILOT_INVALID));
        }
        for call in tool_calls(m).into_iter().flatten() {
            let sig = call
                .get("function")
                .and_then(|f| f.get("thought_signature"));
            if let Some(sig) = opaque_at(sig)
                && !verifies(key, model, sig)
            {
                return Err(error_400(Profile::Copilot, COPILOT_INVALID));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- acme

/// Top-level parameters of the made-up Acme Thinking Cloud.
pub const ACME_TOP_LEVEL: &[&str] = &[
    "model",
    "messages",
    "stream",
    "retain_reasoning",
    "reasoning_mode",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
];

/// Assistant-message keys Acme reads.
const ACME_ASSISTANT_KEYS: &[&str] = &[
    "role",
    "content",
    "tool_calls",
    "name",
    "reasoning_content",
    "reasoning_details",
];

/// Acme's `reasoning_mode` values.
const ACME_MODES: &[&str] = &["light", "deep", "off"];

/// Acme's texts (made up for the third-party example route; these are its contract).
pub(crate) fn acme_missing_text(index: usize) -> String {
    format!("acme: reasoning_content missing on tool-call message {index}")
}

/// Acme's unknown assistant-key text.
pub(crate) fn acme_unknown_field_text(field: &str, index: usize) -> String {
    format!("unknown field `{field}` on messages[{index}]")
}

/// Acme's unknown top-level text.
pub(crate) fn acme_unknown_parameter_text(name: &str) -> String {
    format!("unknown parameter `{name}`")
}

/// A known Acme parameter with a wrong value. Simulator-chosen text.
pub(crate) fn acme_invalid_value_text(name: &str, expected: &str) -> String {
    format!("invalid value for `{name}`: expected {expected}")
}

/// Acme thinks unless `reasoning_mode` is `"off"`.
pub(crate) fn acme_thinking_on(body: &Value) -> bool {
    body.get("reasoning_mode").and_then(Value::as_str) != Some("off")
}

/// The made-up Acme Thinking Cloud (the third-party example route's provider).
pub(crate) fn acme(obj: &Map<String, Value>, messages: &[Value]) -> Result<(), Refusal> {
    let p = Profile::Acme;
    if let Some(k) = obj.keys().find(|k| !ACME_TOP_LEVEL.contains(&k.as_str())) {
        return Err(error_400(p, &acme_unknown_parameter_text(k)));
    }
    if obj.get("retain_reasoning").is_some_and(|v| !v.is_boolean()) {
        return Err(error_400(
            p,
            &acme_invalid_value_text("retain_reasoning", "a boolean"),
        ));
    }
    if obj
        .get("reasoning_mode")
        .is_some_and(|v| !v.as_str().is_some_and(|s| ACME_MODES.contains(&s)))
    {
        return Err(error_400(
            p,
            &acme_invalid_value_text("reasoning_mode", "one of \"light\", \"deep\", \"off\""),
        ));
    }
    for (i, m) in assistants(messages) {
        if let Some(k) = m
            .keys()
            .find(|k| !ACME_ASSISTANT_KEYS.contains(&k.as_str()))
        {
            return Err(error_400(p, &acme_unknown_field_text(k, i)));
        }
        if tool_calls(m).is_some() && !has_rc(m) {
            return Err(error_400(p, &acme_missing_text(i)));
        }
    }
    Ok(())
}
