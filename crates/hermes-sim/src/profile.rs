//! Provider profiles: request validation and error envelopes, written from PROVIDERS.md.

use serde_json::{Map, Value, json};

use crate::Switches;
use crate::rules;
use crate::sign;

/// One simulated provider contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// DeepSeek V4: `reasoning_content` on every assistant turn while thinking is on.
    DeepSeekV4,
    /// DeepSeek V3.x: `reasoning_content` on assistant turns with `tool_calls` while thinking is on.
    DeepSeekV3,
    /// Mistral: strict pydantic schema, HTTP 422 `extra_forbidden` for unknown keys.
    Mistral,
    /// OpenRouter (Anthropic upstream): verifies replayed signed `reasoning_details`.
    OpenRouter,
    /// OpenAI Chat Completions: unknown top-level arguments are refused.
    OpenAi,
    /// A permissive local server: accepts anything.
    Local,
    /// Moonshot Kimi: `reasoning_content` on tool-call turns (every turn with `keep:"all"` or on
    /// k2.7-code) while thinking is on; per-model `thinking.keep` validation.
    Kimi,
    /// Xiaomi MiMo: `reasoning_content` on tool-call turns while thinking is on.
    Mimo,
    /// Groq: strict schema, `reasoning_content` and other unknown assistant keys are unsupported.
    Groq,
    /// Cerebras: strict schema, top-level `wrong_api_format` error body.
    Cerebras,
    /// Gemini's OpenAI-compatible endpoint: signed tool-call `thought_signature`s, unknown
    /// top-level names refused, errors wrapped in a JSON array.
    GeminiOpenAi,
    /// GitHub Copilot chat: `reasoning_text` / signed `reasoning_opaque`, verified when replayed.
    Copilot,
    /// Acme Thinking Cloud, a made-up provider used by the third-party example route
    /// (`examples/third-party-route`).
    Acme,
}

impl Profile {
    /// Every profile, in the order of [`crate::PROFILES`].
    pub const ALL: [Profile; 13] = [
        Profile::DeepSeekV4,
        Profile::DeepSeekV3,
        Profile::Mistral,
        Profile::OpenRouter,
        Profile::OpenAi,
        Profile::Local,
        Profile::Kimi,
        Profile::Mimo,
        Profile::Groq,
        Profile::Cerebras,
        Profile::GeminiOpenAi,
        Profile::Copilot,
        Profile::Acme,
    ];

    /// Parses a profile name as listed in [`crate::PROFILES`].
    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The profile's name as listed in [`crate::PROFILES`].
    pub fn name(self) -> &'static str {
        match self {
            Profile::DeepSeekV4 => "deepseek-v4",
            Profile::DeepSeekV3 => "deepseek-v3",
            Profile::Mistral => "mistral",
            Profile::OpenRouter => "openrouter",
            Profile::OpenAi => "openai",
            Profile::Local => "local",
            Profile::Kimi => "kimi",
            Profile::Mimo => "mimo",
            Profile::Groq => "groq",
            Profile::Cerebras => "cerebras",
            Profile::GeminiOpenAi => "gemini-openai",
            Profile::Copilot => "copilot",
            Profile::Acme => "acme",
        }
    }

    fn is_deepseek(self) -> bool {
        matches!(self, Profile::DeepSeekV4 | Profile::DeepSeekV3)
    }
}

/// A refused request: HTTP status and JSON body.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

/// DeepSeek V4 text (warpdotdev/warp#11587).
pub(crate) const DEEPSEEK_V4_TEXT: &str =
    "The `reasoning_content` in the thinking mode must be passed back to the API.";

/// OpenAI's answer to a body that is not JSON.
const OPENAI_BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

/// DeepSeek V3.x text with the message index filled in (hotovo/aider-desk#529).
pub(crate) fn deepseek_v3_text(index: usize) -> String {
    format!(
        "Missing `reasoning_content` field in the assistant message at message index {index}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
    )
}

/// The profile's envelope for a 400 with a plain message.
pub(crate) fn error_400(profile: Profile, message: &str) -> Refusal {
    let body = match profile {
        Profile::DeepSeekV4 | Profile::DeepSeekV3 => json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_request_error"
        }}),
        Profile::Mistral => json!({
            "object": "error",
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }),
        Profile::OpenRouter => json!({"error": {"message": message, "code": 400}}),
        // MiMo: the exact body is UNCONFIRMED; an OpenAI-style envelope.
        Profile::OpenAi | Profile::Local | Profile::Mimo => json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }}),
        // Kimi (mastra-ai/mastra#12592) and Groq (musistudio/claude-code-router#1204).
        Profile::Kimi | Profile::Groq => json!({"error": {
            "message": message,
            "type": "invalid_request_error"
        }}),
        // Cerebras answers with a top-level object, not wrapped in `error` (Kilo-Org/kilocode#10375).
        Profile::Cerebras => json!({
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }),
        // Google's envelope, wrapped in a JSON array by the OpenAI-compat endpoint (manthanabc/paws#103).
        Profile::GeminiOpenAi => json!([{"error": {
            "code": 400,
            "message": message,
            "status": "INVALID_ARGUMENT"
        }}]),
        // Copilot's `invalid_request_body` code (caozhiyuan/copilot-api#73).
        Profile::Copilot => json!({"error": {
            "message": message,
            "code": "invalid_request_body"
        }}),
        // Made up (the third-party example's provider).
        Profile::Acme => json!({"error": {"message": message}}),
    };
    Refusal { status: 400, body }
}

/// Answer to a body that is not valid JSON (always 400).
pub(crate) fn bad_json(profile: Profile, err: &serde_json::Error) -> Refusal {
    match profile {
        Profile::OpenAi => error_400(profile, OPENAI_BAD_JSON),
        Profile::GeminiOpenAi => {
            error_400(profile, &format!("Invalid JSON payload received. {err}"))
        }
        _ => error_400(
            profile,
            &format!("Failed to parse the request body as JSON: {err}"),
        ),
    }
}

/// Answer to an unknown path (404).
pub(crate) fn not_found(method: &str, path: &str) -> Refusal {
    Refusal {
        status: 404,
        body: json!({"error": {
            "message": format!("Not found: {method} {path}"),
            "type": "invalid_request_error",
            "param": null,
            "code": 404
        }}),
    }
}

/// Answer to a wrong method on the chat-completions path (405).
pub(crate) fn method_not_allowed(method: &str, path: &str) -> Refusal {
    Refusal {
        status: 405,
        body: json!({"error": {
            "message": format!("Method not allowed: {method} {path}"),
            "type": "invalid_request_error",
            "param": null,
            "code": 405
        }}),
    }
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

/// Mistral's 422 envelope around a list of pydantic errors (PROVIDERS.md, Mistral).
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
/// Mistral, Groq, Cerebras and Acme use their own unknown-field refusal, the others a generic text.
fn unknown_message_field(
    profile: Profile,
    index: usize,
    role: &str,
    field: &str,
    value: &Value,
) -> Refusal {
    match profile {
        Profile::Mistral => mistral_422(vec![extra_forbidden(
            vec![
                json!("body"),
                json!("messages"),
                json!(index),
                json!(role),
                json!(field),
            ],
            value,
        )]),
        Profile::Groq => error_400(profile, &rules::groq_unsupported_text(index, role, field)),
        Profile::Cerebras => rules::cerebras_unsupported(index, role, field),
        Profile::Acme => error_400(profile, &rules::acme_unknown_field_text(field, index)),
        _ => error_400(
            profile,
            &format!("Unrecognized request argument supplied: messages.{index}.{field}"),
        ),
    }
}

/// Top-level arguments the `openai` profile knows.
pub const OPENAI_TOP_LEVEL: &[&str] = &[
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

/// The model id a request names (`sim-model` when absent).
pub(crate) fn model_of(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("sim-model")
}

/// Thinking is on unless the body says `"thinking":{"type":"disabled"}` (DeepSeek default).
pub(crate) fn thinking_on(body: &Value) -> bool {
    body.get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        != Some("disabled")
}

/// Validates a parsed request against the profile and the switches.
pub(crate) fn validate(
    profile: Profile,
    body: &Value,
    switches: &Switches,
    key: &[u8],
) -> Result<(), Refusal> {
    let Some(obj) = body.as_object() else {
        return Err(error_400(
            profile,
            "Invalid request body: expected a JSON object",
        ));
    };
    let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
        if profile == Profile::Mistral {
            return Err(mistral_422(vec![json!({
                "type": "missing",
                "loc": ["body", "messages"],
                "msg": "Field required",
                "input": body
            })]));
        }
        return Err(error_400(
            profile,
            "Missing required parameter: 'messages'.",
        ));
    };

    for (i, m) in messages.iter().enumerate() {
        let Some(mo) = m.as_object() else { continue };
        for field in &switches.reject_message_fields {
            if let Some(v) = mo.get(field.as_str()) {
                return Err(unknown_message_field(profile, i, role_of(mo), field, v));
            }
        }
    }

    match profile {
        Profile::DeepSeekV4 | Profile::DeepSeekV3 => deepseek(profile, body, messages),
        Profile::Mistral => mistral(obj, messages),
        Profile::OpenRouter => openrouter(body, messages, key),
        Profile::OpenAi => openai(obj),
        Profile::Local => Ok(()),
        Profile::Kimi => rules::kimi(body, messages),
        Profile::Mimo => rules::mimo(body, messages),
        Profile::Groq => rules::groq(messages),
        Profile::Cerebras => rules::cerebras(messages),
        Profile::GeminiOpenAi => rules::gemini(obj, messages, key),
        Profile::Copilot => rules::copilot(body, messages, key),
        Profile::Acme => rules::acme(obj, messages),
    }
}

/// The `role` of a message (`""` when absent).
pub(crate) fn role_of(m: &Map<String, Value>) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

fn deepseek(profile: Profile, body: &Value, messages: &[Value]) -> Result<(), Refusal> {
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
        if profile == Profile::DeepSeekV4 {
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
            Profile::OpenAi,
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

/// The OpenRouter envelope around an upstream Anthropic error (PROVIDERS.md, OpenRouter + Anthropic).
fn openrouter_upstream(message: &str, seed: &str) -> Refusal {
    let request_id = format!("req_sim_{}", &crate::model::short_hash(seed, 24));
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
