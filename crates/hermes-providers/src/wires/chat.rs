//! The chat-completions wire's descriptor: every OpenAI-compatible provider of SPEC §8a.

use hermes_core::{Message, RequestParts, ShapeContext, Wire};

use super::ProviderSpec;
use super::{Credentials, ExplainError, WireDescriptor, WireTarget};
use crate::transport::{ChatTransport, Endpoint, HttpChat};

/// OpenAI-compatible chat completions ([`HttpChat`]).
#[derive(Clone, Copy, Debug)]
pub struct ChatDescriptor;

/// The chat-completions wire.
pub const CHAT: ChatDescriptor = ChatDescriptor;

impl WireDescriptor for ChatDescriptor {
    fn id(&self) -> &'static str {
        hermes_core::CHAT_WIRE
    }

    fn name(&self) -> &'static str {
        "OpenAI-compatible chat completions"
    }

    fn providers(&self) -> &[ProviderSpec] {
        CHAT_PROVIDERS
    }

    fn build(
        &self,
        target: &WireTarget,
        client: ChatTransport,
        credentials: Credentials,
    ) -> Box<dyn Wire> {
        Box::new(HttpChat {
            client,
            endpoint: Endpoint {
                base_url: target.base_url.clone(),
                api_key: credentials.key,
            },
        })
    }

    /// The route line (what it reads, must-echo, what is refused here), then the shaping of
    /// each stored message.
    fn explain(
        &self,
        _target: &WireTarget,
        parts: &RequestParts<'_>,
        stored: &[Message],
    ) -> Result<Vec<String>, ExplainError> {
        let decision = parts.decision;
        let ctx = ShapeContext::new(decision, parts.verdicts);
        let echo = decision
            .echo
            .as_ref()
            .map_or("no".to_owned(), |e| format!("yes (family {})", e.family));
        let refused = ctx.refused.fields();
        let mut lines = vec![format!(
            "route {} ({}); reads: {}; must-echo: {echo}; refused here: {}",
            decision.id(),
            decision.matched_by,
            if decision.strict {
                "nothing (strict schema)".to_owned()
            } else {
                decision.carriers.fields().join(", ")
            },
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            },
        )];
        lines.extend(ctx.explain(stored));
        Ok(lines)
    }
}

const fn chat(id: &'static str, base_url: &'static str, key_var: &'static str) -> ProviderSpec {
    ProviderSpec {
        id,
        base_url: Some(base_url),
        key_var: Some(key_var),
    }
}

/// The built-in providers of the chat-completions wire, in the order of SPEC §8a.
const CHAT_PROVIDERS: &[ProviderSpec] = &[
    chat("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    chat(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    chat(
        "deepseek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    chat(
        "kimi-coding",
        "https://api.moonshot.ai/v1",
        "MOONSHOT_API_KEY",
    ),
    chat(
        "kimi-coding-cn",
        "https://api.moonshot.cn/v1",
        "MOONSHOT_API_KEY",
    ),
    chat("xiaomi", "https://api.xiaomimimo.com/v1", "MIMO_API_KEY"),
    chat("zai", "https://api.z.ai/api/paas/v4", "ZAI_API_KEY"),
    chat(
        "alibaba",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
    chat("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    chat("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    chat("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    chat(
        "sambanova",
        "https://api.sambanova.ai/v1",
        "SAMBANOVA_API_KEY",
    ),
    chat(
        "fireworks",
        "https://api.fireworks.ai/inference/v1",
        "FIREWORKS_API_KEY",
    ),
    chat("novita", "https://api.novita.ai/openai", "NOVITA_API_KEY"),
    chat("minimax", "https://api.minimax.io/v1", "MINIMAX_API_KEY"),
    chat(
        "nous",
        "https://inference-api.nousresearch.com/v1",
        "NOUS_API_KEY",
    ),
    chat(
        "kilocode",
        "https://api.kilo.ai/api/gateway",
        "KILOCODE_API_KEY",
    ),
    chat(
        "ai-gateway",
        "https://ai-gateway.vercel.sh/v1",
        "AI_GATEWAY_API_KEY",
    ),
    chat("ollama-cloud", "https://ollama.com/v1", "OLLAMA_API_KEY"),
    chat(
        "gemini-openai",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
    chat(
        "copilot",
        "https://api.githubcopilot.com",
        "GITHUB_COPILOT_TOKEN",
    ),
    ProviderSpec {
        id: "lmstudio",
        base_url: Some("http://127.0.0.1:1234/v1"),
        key_var: Some("HERMES_API_KEY"),
    },
    ProviderSpec {
        id: "custom",
        base_url: None,
        key_var: Some("HERMES_API_KEY"),
    },
];
