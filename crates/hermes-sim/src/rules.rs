//! Request rules of the built-in profiles, written from docs/providers.md.
//!
//! Texts are the real ones from docs/providers.md unless a comment says "simulator-chosen"
//! (docs/providers.md has no exact text for that case). Rules docs/providers.md marks UNCONFIRMED
//! are not enforced. Every profile also enforces the tool-call pairing rule ([`tool_pairing`]),
//! after its own rules.

use serde_json::{Map, Value, json};

use crate::Switches;
use crate::builtin::{Builtin, error_400};
use crate::sign;
use crate::wire::{
    Refusal, assistants, has_string, messages_of, model_of, role_of, short_hash, switched_field,
    thinking_on, tool_calls,
};

/// Validates a parsed request against a built-in profile and the switches.
pub(crate) fn validate(
    profile: Builtin,
    body: &Value,
    switches: &Switches,
    key: &[u8],
) -> Result<(), Refusal> {
    let (obj, messages) = match messages_of(body) {
        Ok(v) => v,
        Err(_) if profile == Builtin::Mistral && body.is_object() => {
            return Err(mistral_422(vec![json!({
                "type": "missing",
                "loc": ["body", "messages"],
                "msg": "Field required",
                "input": body
            })]));
        }
        Err(text) => return Err(error_400(profile, text)),
    };
    if let Some((i, role, field, v)) = switched_field(messages, &switches.reject_message_fields) {
        return Err(unknown_message_field(profile, i, role, field, v));
    }
    match profile {
        Builtin::DeepSeekV4 | Builtin::DeepSeekV3 => deepseek(profile, body, messages),
        Builtin::Mistral => mistral(obj, messages),
        Builtin::OpenRouter => openrouter(body, messages, key),
        Builtin::OpenAi => openai(obj),
        Builtin::Local => Ok(()),
        Builtin::Kimi => kimi(body, messages),
        Builtin::Mimo => mimo(body, messages),
        Builtin::Groq => groq(messages),
        Builtin::Cerebras => cerebras(messages),
        Builtin::GeminiOpenAi => gemini(obj, messages, key),
        Builtin::Copilot => copilot(body, messages, key),
        // Served by `crate::anthropic` / `crate::bedrock` / `crate::gemini` (the server never
        // validates them here).
        Builtin::Anthropic | Builtin::Bedrock | Builtin::Gemini | Builtin::OpenAiResponses => {
            return Ok(());
        }
    }?;
    match tool_pairing(messages) {
        Some(fault) => Err(error_400(profile, &pairing_text(profile, &fault))),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------- tool-call pairing (every profile)

/// OpenAI's text for tool calls left without results; the ids follow, comma-separated
/// (docs/providers.md, "Tool-call pairing": BerriAI/litellm#10083, aliasrobotics/cai#111).
pub(crate) const UNPAIRED_CALLS_PREFIX: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";

/// The variant DeepSeek's API uses (agno-agi/agno#3105, langgenius/dify#32222); MiMo, which
/// answers with DeepSeek's texts, uses it too.
pub(crate) const UNPAIRED_CALLS_DEEPSEEK: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";

/// OpenAI's text for a tool result that answers no preceding call (its spelling, typo included).
pub(crate) const ORPHAN_RESULT_TEXT: &str = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/// How a request breaks the tool-call pairing rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PairingFault<'a> {
    /// An assistant message's calls with no `tool` result before the next non-tool message (or
    /// the end of `messages`), in call order.
    Unpaired(Vec<&'a str>),
    /// A `tool` message whose `tool_call_id` answers no call of the assistant message it follows.
    Orphan(&'a str),
}

/// The first pairing fault of `messages`, or `None` when every call is answered right after its
/// assistant message and every result answers a call. A missing id counts as `""`.
pub(crate) fn tool_pairing(messages: &[Value]) -> Option<PairingFault<'_>> {
    fn id_at(v: Option<&Value>) -> &str {
        v.and_then(Value::as_str).unwrap_or("")
    }
    let mut pending: Vec<&str> = Vec::new();
    for m in messages {
        let mo = m.as_object();
        if mo.is_some_and(|o| role_of(o) == "tool") {
            let id = id_at(mo.and_then(|o| o.get("tool_call_id")));
            match pending.iter().position(|p| *p == id) {
                Some(at) => {
                    pending.remove(at);
                }
                None => return Some(PairingFault::Orphan(id)),
            }
            continue;
        }
        if !pending.is_empty() {
            return Some(PairingFault::Unpaired(pending));
        }
        if let Some(calls) = mo
            .filter(|o| role_of(o) == "assistant")
            .and_then(tool_calls)
        {
            pending = calls.iter().map(|c| id_at(c.get("id"))).collect();
        }
    }
    (!pending.is_empty()).then_some(PairingFault::Unpaired(pending))
}

/// The built-in profile's text for a pairing fault.
fn pairing_text(profile: Builtin, fault: &PairingFault<'_>) -> String {
    match fault {
        PairingFault::Unpaired(_) if profile.is_deepseek() || profile == Builtin::Mimo => {
            UNPAIRED_CALLS_DEEPSEEK.to_owned()
        }
        PairingFault::Unpaired(ids) => format!("{UNPAIRED_CALLS_PREFIX}{}", ids.join(", ")),
        PairingFault::Orphan(_) => ORPHAN_RESULT_TEXT.to_owned(),
    }
}

// ---------------------------------------------------------------- shared helpers

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

// ---------------------------------------------------------------- deepseek / mistral / openai / openrouter

/// DeepSeek V4 text (warpdotdev/warp#11587).
pub(crate) const DEEPSEEK_V4_TEXT: &str =
    "The `reasoning_content` in the thinking mode must be passed back to the API.";

/// DeepSeek V3.x text with the message index filled in (hotovo/aider-desk#529).
pub(crate) fn deepseek_v3_text(index: usize) -> String {
    format!(
        "Missing `reasoning_content` field in the assistant message at message index {index}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
    )
}

/// One pydantic `extra_forbidden` entry.
fn extra_forbidden(loc: Vec<Value>, input: &Value) -> Value {
    json!({
        "type": "extra_forbidden",
        "loc": loc,
        "msg": "Extra inputs are not permitted",
        "input": input
    })
}

/// Mistral's 422 envelope around a list of pydantic errors (docs/providers.md, Mistral).
fn mistral_422(detail: Vec<Value>) -> Refusal {
    Refusal {
        status: 422,
        body: json!({
            "object": "error",
            "message": {"detail": detail},
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }),
    }
}

/// The refusal a profile gives for a message key it treats as unknown (the per-test switch):
/// Mistral, Groq and Cerebras use their own unknown-field refusal, the others a generic text.
fn unknown_message_field(
    profile: Builtin,
    index: usize,
    role: &str,
    field: &str,
    value: &Value,
) -> Refusal {
    match profile {
        Builtin::Mistral => mistral_422(vec![extra_forbidden(
            vec![
                json!("body"),
                json!("messages"),
                json!(index),
                json!(role),
                json!(field),
            ],
            value,
        )]),
        Builtin::Groq => error_400(profile, &groq_unsupported_text(index, role, field)),
        Builtin::Cerebras => cerebras_unsupported(index, role, field),
        _ => error_400(
            profile,
            &format!("Unrecognized request argument supplied: messages.{index}.{field}"),
        ),
    }
}

/// The chat-completions list of top-level names `$more` extends: the names every
/// OpenAI-compatible profile with a fixed list knows (the request, streaming, sampling and
/// length), then `$more`, in order.
macro_rules! chat_top_level {
    ($($more:literal),* $(,)?) => {
        &[
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
            $($more),*
        ]
    };
}

/// Top-level arguments the `openai` profile knows.
pub const OPENAI_TOP_LEVEL: &[&str] = chat_top_level![
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "seed",
    "reasoning_effort",
    "metadata",
    "store",
    "service_tier",
    "modalities",
    "prediction",
    "audio",
    "verbosity",
    "functions",
    "function_call",
    "web_search_options",
    "prompt_cache_key",
    "safety_identifier",
];

/// Message keys the `mistral` profile allows, per role.
fn mistral_allowed(role: &str) -> Option<&'static [&'static str]> {
    match role {
        "assistant" => Some(&["role", "content", "tool_calls", "prefix"]),
        "user" | "system" => Some(&["role", "content"]),
        "tool" => Some(&["role", "content", "tool_call_id", "name"]),
        _ => None,
    }
}

fn deepseek(profile: Builtin, body: &Value, messages: &[Value]) -> Result<(), Refusal> {
    debug_assert!(profile.is_deepseek());
    if !thinking_on(body) {
        return Ok(());
    }
    for (i, m) in messages.iter().enumerate() {
        let Some(mo) = m.as_object() else { continue };
        if role_of(mo) != "assistant" {
            continue;
        }
        let rc = mo.get("reasoning_content");
        if profile == Builtin::DeepSeekV4 {
            // Missing, null, non-string or "" are refused; " " is accepted (the rule).
            let ok = matches!(rc, Some(Value::String(s)) if !s.is_empty());
            if !ok {
                return Err(error_400(profile, DEEPSEEK_V4_TEXT));
            }
        } else {
            let has_calls = mo
                .get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            let present = matches!(rc, Some(Value::String(_)));
            if has_calls && !present {
                return Err(error_400(profile, &deepseek_v3_text(i)));
            }
        }
    }
    Ok(())
}

fn mistral(obj: &Map<String, Value>, messages: &[Value]) -> Result<(), Refusal> {
    let mut detail = Vec::new();
    // Field report (editor-code-assistant/eca#231): `max_completion_tokens` is refused.
    if let Some(v) = obj.get("max_completion_tokens") {
        detail.push(extra_forbidden(
            vec![json!("body"), json!("max_completion_tokens")],
            v,
        ));
    }
    for (i, m) in messages.iter().enumerate() {
        let Some(mo) = m.as_object() else { continue };
        let role = role_of(mo);
        let Some(allowed) = mistral_allowed(role) else {
            continue;
        };
        let base = || vec![json!("body"), json!("messages"), json!(i), json!(role)];
        for (k, v) in mo {
            if !allowed.contains(&k.as_str()) {
                let mut loc = base();
                loc.push(json!(k));
                detail.push(extra_forbidden(loc, v));
            }
        }
        if role != "assistant" {
            continue;
        }
        let Some(calls) = mo.get("tool_calls").and_then(Value::as_array) else {
            continue;
        };
        for (j, call) in calls.iter().enumerate() {
            let Some(co) = call.as_object() else { continue };
            for (k, v) in co {
                if !["id", "type", "function", "index"].contains(&k.as_str()) {
                    let mut loc = base();
                    loc.extend([json!("tool_calls"), json!(j), json!(k)]);
                    detail.push(extra_forbidden(loc, v));
                }
            }
            if let Some(fo) = co.get("function").and_then(Value::as_object) {
                for (k, v) in fo {
                    if !["name", "arguments"].contains(&k.as_str()) {
                        let mut loc = base();
                        loc.extend([json!("tool_calls"), json!(j), json!("function"), json!(k)]);
                        detail.push(extra_forbidden(loc, v));
                    }
                }
            }
        }
    }
    if detail.is_empty() {
        Ok(())
    } else {
        Err(mistral_422(detail))
    }
}

fn openai(obj: &Map<String, Value>) -> Result<(), Refusal> {
    match obj.keys().find(|k| !OPENAI_TOP_LEVEL.contains(&k.as_str())) {
        Some(k) => Err(error_400(
            Builtin::OpenAi,
            &format!("Unrecognized request argument supplied: {k}"),
        )),
        None => Ok(()),
    }
}

/// Index of message `at` once converted to Anthropic turns: system/developer messages are lifted
/// out, `tool` becomes `user`, and consecutive same-role messages merge.
fn anthropic_index(messages: &[Value], at: usize) -> usize {
    let mut turns = 0usize;
    let mut last: Option<&str> = None;
    for m in &messages[..=at] {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let role = match role {
            "system" | "developer" => continue,
            "tool" => "user",
            r => r,
        };
        if last != Some(role) {
            turns += 1;
            last = Some(role);
        }
    }
    turns.saturating_sub(1)
}

/// The OpenRouter envelope around an upstream Anthropic error (docs/providers.md, OpenRouter + Anthropic).
fn openrouter_upstream(message: &str, seed: &str) -> Refusal {
    let request_id = format!("req_sim_{}", &short_hash(seed, 24));
    let raw = json!({
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": request_id
    })
    .to_string();
    Refusal {
        status: 400,
        body: json!({"error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": raw, "provider_name": "Anthropic"}
        }}),
    }
}

fn openrouter(body: &Value, messages: &[Value], key: &[u8]) -> Result<(), Refusal> {
    let model = model_of(body);
    for (i, m) in messages.iter().enumerate() {
        let Some(mo) = m.as_object() else { continue };
        if role_of(mo) != "assistant" {
            continue;
        }
        let Some(items) = mo.get("reasoning_details").and_then(Value::as_array) else {
            continue;
        };
        for (j, item) in items.iter().enumerate() {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
            let ok = match kind {
                "reasoning.text" => match item.get("signature").and_then(Value::as_str) {
                    Some(sig) => {
                        let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                        sign::verify_text(key, model, text, sig)
                    }
                    None => true,
                },
                "reasoning.encrypted" => match item.get("data").and_then(Value::as_str) {
                    Some(data) => sign::verify_data(key, model, data),
                    None => true,
                },
                _ => true,
            };
            if !ok {
                let n = anthropic_index(messages, i);
                return Err(openrouter_upstream(
                    &format!("messages.{n}.content.{j}: Invalid `signature` in `thinking` block"),
                    &format!("{model}/{i}/{j}"),
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- kimi

/// Kimi's text (mastra-ai/mastra#12592), in `{"error":{"message","type"}}`.
pub(crate) fn kimi_missing_text(index: usize) -> String {
    format!(
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index {index}"
    )
}

/// Moonshot refuses `thinking` together with `reasoning_effort` (docs/spec.md §3b).
/// Simulator-chosen text: docs/providers.md has no exact wording.
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
    let p = Builtin::Kimi;
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
        if (every || tool_calls(m).is_some()) && !has_string(m, "reasoning_content") {
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
    match assistants(messages)
        .find(|(_, m)| tool_calls(m).is_some() && !has_string(m, "reasoning_content"))
    {
        Some(_) => Err(error_400(Builtin::Mimo, MIMO_TEXT)),
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
                Builtin::Groq,
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
pub const GEMINI_TOP_LEVEL: &[&str] = chat_top_level![
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

/// Models that do not enforce signatures (Gemini 1.x/2.x, Gemma): docs/providers.md documents the
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
    let p = Builtin::GeminiOpenAi;
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
            return Err(error_400(Builtin::Copilot, COPILOT_INVALID));
        }
        for call in tool_calls(m).into_iter().flatten() {
            let sig = call
                .get("function")
                .and_then(|f| f.get("thought_signature"));
            if let Some(sig) = opaque_at(sig)
                && !verifies(key, model, sig)
            {
                return Err(error_400(Builtin::Copilot, COPILOT_INVALID));
            }
        }
    }
    Ok(())
}
