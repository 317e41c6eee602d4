//! The one table of built-in profiles ([`PROFILES`]) and each built-in's error envelope.

use serde_json::json;

use crate::wire::Refusal;

/// One built-in simulator profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileInfo {
    /// Profile name (`--provider sim --base-url sim://NAME`, `hermes sim serve --profile NAME`).
    pub name: &'static str,
    /// The provider id it stands in for (decides the hermes route).
    pub provider: &'static str,
    /// A model id the profile answers as by default.
    pub model: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
}

/// A built-in provider contract (the rules live in `rules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Builtin {
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
    /// Anthropic Messages (direct, Vertex, Azure Foundry): strict schema, signed thinking blocks
    /// verified on replay. Served by `crate::anthropic`, not by the chat-completions rules.
    Anthropic,
    /// AWS Bedrock Runtime (Converse, ConverseStream, InvokeModel, InvokeModelWithResponseStream):
    /// SigV4 or API-key auth, per-model reasoning replay policy. Served by `crate::bedrock` (the
    /// `bedrock` feature; without it the variant is never made, and [`PROFILES`] leaves it out).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    Bedrock,
    /// Google's native generateContent API (AI Studio and Vertex doors): strict schema, signed
    /// `thoughtSignature`s enforced in the current turn. Served by `crate::gemini`.
    Gemini,
    /// OpenAI's Responses API: strict schema, verified `encrypted_content` on replayed reasoning
    /// items, reasoning ↔ following-item pairing. Served by `crate::openai_responses`.
    OpenAiResponses,
}

const fn info(
    name: &'static str,
    provider: &'static str,
    model: &'static str,
    about: &'static str,
) -> ProfileInfo {
    ProfileInfo {
        name,
        provider,
        model,
        about,
    }
}

/// The table: every built-in, its name, stand-in provider, default model and `--help` line
/// (`bedrock` only with the `bedrock` feature, which brings the AWS crates it needs).
const TABLE: &[(ProfileInfo, Builtin)] = &[
    (
        info(
            "deepseek-v4",
            "deepseek",
            "deepseek-v4-pro",
            "DeepSeek V4: reasoning_content on every assistant turn while thinking",
        ),
        Builtin::DeepSeekV4,
    ),
    (
        info(
            "deepseek-v3",
            "deepseek",
            "deepseek-v3.2",
            "DeepSeek V3.x: reasoning_content on tool-call turns while thinking",
        ),
        Builtin::DeepSeekV3,
    ),
    (
        info(
            "mistral",
            "mistral",
            "magistral-medium-latest",
            "Mistral: strict schema, 422 extra_forbidden for unknown keys",
        ),
        Builtin::Mistral,
    ),
    (
        info(
            "openrouter",
            "openrouter",
            "anthropic/claude-sonnet-5",
            "OpenRouter (Anthropic upstream): signed reasoning_details, verified when replayed",
        ),
        Builtin::OpenRouter,
    ),
    (
        info(
            "openai",
            "openai",
            "gpt-5",
            "OpenAI Chat Completions: unknown top-level arguments refused",
        ),
        Builtin::OpenAi,
    ),
    (
        info(
            "local",
            "custom",
            "qwen3-32b",
            "a permissive local server: accepts anything, answers with reasoning_content",
        ),
        Builtin::Local,
    ),
    (
        info(
            "kimi",
            "kimi-coding",
            "kimi-k2.6",
            "Moonshot Kimi: reasoning_content on tool-call turns, per-model thinking.keep",
        ),
        Builtin::Kimi,
    ),
    (
        info(
            "mimo",
            "xiaomi",
            "mimo-v2.5-pro",
            "Xiaomi MiMo: reasoning_content on tool-call turns while thinking",
        ),
        Builtin::Mimo,
    ),
    (
        info(
            "groq",
            "groq",
            "openai/gpt-oss-120b",
            "Groq: strict schema, reasoning_content unsupported",
        ),
        Builtin::Groq,
    ),
    (
        info(
            "cerebras",
            "cerebras",
            "gpt-oss-120b",
            "Cerebras: strict schema, top-level wrong_api_format errors",
        ),
        Builtin::Cerebras,
    ),
    (
        info(
            "gemini-openai",
            "gemini-openai",
            "gemini-3-pro-preview",
            "Gemini OpenAI-compatible: signed thought_signatures, errors in a JSON array",
        ),
        Builtin::GeminiOpenAi,
    ),
    (
        info(
            "copilot",
            "copilot",
            "gemini-3-pro-preview",
            "GitHub Copilot: reasoning_text and signed reasoning_opaque, verified when replayed",
        ),
        Builtin::Copilot,
    ),
    (
        info(
            "anthropic",
            "anthropic",
            "claude-opus-4-6",
            "Anthropic Messages: signed thinking verified on replay; /v1/messages, Vertex rawPredict, Foundry /anthropic",
        ),
        Builtin::Anthropic,
    ),
    #[cfg(feature = "bedrock")]
    (
        info(
            "bedrock",
            "bedrock",
            "anthropic.claude-opus-4-6-v1:0",
            "AWS Bedrock: SigV4 or API key; Converse (signed reasoningContent per model) and InvokeModel, event streams",
        ),
        Builtin::Bedrock,
    ),
    (
        info(
            "gemini",
            "gemini",
            "gemini-3-pro-preview",
            "Gemini generateContent (AI Studio, Vertex): strict schema, signed thoughtSignatures enforced in the current turn, SSE",
        ),
        Builtin::Gemini,
    ),
    (
        info(
            "openai-responses",
            "openai-responses",
            "gpt-5.2",
            "OpenAI Responses: strict schema, store:false replay with verified encrypted_content, reasoning item pairing, SSE",
        ),
        Builtin::OpenAiResponses,
    ),
];

const fn infos() -> [ProfileInfo; TABLE.len()] {
    let mut out = [TABLE[0].0; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        out[i] = TABLE[i].0;
        i += 1;
    }
    out
}

/// Every built-in profile, in the order `--help` lists them.
pub const PROFILES: &[ProfileInfo] = &infos();

/// The built-in profiles this build leaves out, each with the cargo feature that brings it.
pub(crate) const NOT_BUILT: &[(&str, &str)] = &[
    #[cfg(not(feature = "bedrock"))]
    ("bedrock", "bedrock"),
];

/// The profile names, comma-separated (for error texts).
pub(crate) fn names() -> String {
    PROFILES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Builtin {
    /// The built-in named `name` in [`PROFILES`].
    pub(crate) fn parse(name: &str) -> Option<Builtin> {
        TABLE.iter().find(|(i, _)| i.name == name).map(|&(_, b)| b)
    }

    /// The built-in's row of [`PROFILES`].
    pub(crate) fn info(self) -> &'static ProfileInfo {
        let at = TABLE.iter().position(|&(_, b)| b == self).unwrap_or(0);
        &PROFILES[at]
    }

    pub(crate) fn is_deepseek(self) -> bool {
        matches!(self, Builtin::DeepSeekV4 | Builtin::DeepSeekV3)
    }
}

/// OpenAI's answer to a body that is not JSON.
const OPENAI_BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

/// The profile's envelope for a 400 with a plain message.
pub(crate) fn error_400(profile: Builtin, message: &str) -> Refusal {
    let body = match profile {
        Builtin::DeepSeekV4 | Builtin::DeepSeekV3 => json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_request_error"
        }}),
        Builtin::Mistral => json!({
            "object": "error",
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }),
        Builtin::OpenRouter => json!({"error": {"message": message, "code": 400}}),
        // MiMo: the exact body is UNCONFIRMED; an OpenAI-style envelope.
        Builtin::OpenAi | Builtin::Local | Builtin::Mimo => json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }}),
        // Kimi (mastra-ai/mastra#12592) and Groq (musistudio/claude-code-router#1204).
        Builtin::Kimi | Builtin::Groq => json!({"error": {
            "message": message,
            "type": "invalid_request_error"
        }}),
        // Cerebras answers with a top-level object, not wrapped in `error` (Kilo-Org/kilocode#10375).
        Builtin::Cerebras => json!({
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }),
        // Google's envelope, wrapped in a JSON array by the OpenAI-compat endpoint (manthanabc/paws#103).
        Builtin::GeminiOpenAi => json!([{"error": {
            "code": 400,
            "message": message,
            "status": "INVALID_ARGUMENT"
        }}]),
        // Copilot's `invalid_request_body` code (caozhiyuan/copilot-api#73).
        Builtin::Copilot => json!({"error": {
            "message": message,
            "code": "invalid_request_body"
        }}),
        // The Messages envelope (the `anthropic` profile builds its own, with request ids per
        // path family; this arm only keeps the match whole).
        Builtin::Anthropic => json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": format!("req_{}", crate::wire::short_hash(message, 24))
        }),
        // Bedrock's `ValidationException` body (its `x-amzn-ErrorType` header is set by
        // `crate::bedrock`; this arm only keeps the match whole).
        Builtin::Bedrock => json!({"message": message}),
        // Google's envelope (`crate::gemini` builds its own, with field violations; this arm
        // only keeps the match whole).
        Builtin::Gemini => json!({"error": {
            "code": 400,
            "message": message,
            "status": "INVALID_ARGUMENT"
        }}),
        // OpenAI's envelope (`crate::openai_responses` builds its own, with `param` and `code`;
        // this arm only keeps the match whole).
        Builtin::OpenAiResponses => json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": null,
            "code": null
        }}),
    };
    Refusal { status: 400, body }
}

/// Answer to a body that is not valid JSON (always 400).
pub(crate) fn bad_json(profile: Builtin, err: &serde_json::Error) -> Refusal {
    match profile {
        Builtin::OpenAi | Builtin::OpenAiResponses => error_400(profile, OPENAI_BAD_JSON),
        Builtin::GeminiOpenAi => {
            error_400(profile, &format!("Invalid JSON payload received. {err}"))
        }
        _ => error_400(profile, &crate::wire::bad_json_text(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_lookup() {
        assert_eq!(PROFILES.len(), TABLE.len());
        for (i, p) in PROFILES.iter().enumerate() {
            let b = Builtin::parse(p.name).unwrap();
            assert_eq!(b, TABLE[i].1);
            assert_eq!(b.info(), p);
            assert!(!p.provider.is_empty() && !p.model.is_empty() && !p.about.is_empty());
        }
        assert_eq!(Builtin::parse("acme"), None);
    }
}
