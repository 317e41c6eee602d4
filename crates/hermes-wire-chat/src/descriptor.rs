//! The chat-completions wire's descriptor: every OpenAI-compatible provider of docs/spec.md §8a.

use hermes_core::{Message, RequestParts, Wire};

use hermes_providers::ChatTransport;
use hermes_providers::wires::{
    Access, Credentials, Descriptor, Explained, ProviderSpec, WireTarget, wire,
};

use crate::{Endpoint, HttpChat, ShapeContext};

/// Chat completions, always built: first in the engine's list of built-in wires
/// (`hermes_engine::register_builtin_wires`).
pub const DESCRIPTOR: Descriptor = wire(
    hermes_core::CHAT_WIRE,
    "OpenAI-compatible chat completions",
    PROVIDERS,
    build,
    explain,
);

/// The chat-completions wire for `target`, its key as a bearer token.
fn build(target: &WireTarget, http: ChatTransport, auth: Credentials) -> Box<dyn Wire> {
    let endpoint = Endpoint {
        base_url: target.base_url.clone(),
        api_key: auth.key,
    };
    Box::new(HttpChat {
        client: http,
        endpoint,
    })
}

/// The route line (what it reads, must-echo, what is refused here), then the shaping of each
/// stored message.
fn explain(_: &WireTarget, parts: &RequestParts<'_>, stored: &[Message]) -> Explained {
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

/// A chat-completions provider: its id, default base URL (`None`: `--base-url` is required)
/// and key variable.
const fn chat(id: &'static str, base_url: Option<&'static str>, key: &'static str) -> ProviderSpec {
    ProviderSpec {
        id,
        base_url,
        key_var: Some(key),
        access: Access::Key,
    }
}

/// A chat-completions server of the user's own, which may need no key.
const fn own(id: &'static str, base_url: Option<&'static str>, key: &'static str) -> ProviderSpec {
    ProviderSpec {
        access: Access::OptionalKey,
        ..chat(id, base_url, key)
    }
}

/// The built-in providers of the chat-completions wire, in docs/spec.md §8a's order (one a line).
#[rustfmt::skip]
pub const PROVIDERS: &[ProviderSpec] = &[
    chat("openai", Some("https://api.openai.com/v1"), "OPENAI_API_KEY"),
    chat("openrouter", Some("https://openrouter.ai/api/v1"), "OPENROUTER_API_KEY"),
    chat("deepseek", Some("https://api.deepseek.com/v1"), "DEEPSEEK_API_KEY"),
    chat("kimi-coding", Some("https://api.moonshot.ai/v1"), "MOONSHOT_API_KEY"),
    chat("kimi-coding-cn", Some("https://api.moonshot.cn/v1"), "MOONSHOT_API_KEY"),
    chat("xiaomi", Some("https://api.xiaomimimo.com/v1"), "MIMO_API_KEY"),
    chat("zai", Some("https://api.z.ai/api/paas/v4"), "ZAI_API_KEY"),
    chat("alibaba", Some("https://dashscope-intl.aliyuncs.com/compatible-mode/v1"), "DASHSCOPE_API_KEY"),
    chat("mistral", Some("https://api.mistral.ai/v1"), "MISTRAL_API_KEY"),
    chat("groq", Some("https://api.groq.com/openai/v1"), "GROQ_API_KEY"),
    chat("cerebras", Some("https://api.cerebras.ai/v1"), "CEREBRAS_API_KEY"),
    chat("sambanova", Some("https://api.sambanova.ai/v1"), "SAMBANOVA_API_KEY"),
    chat("fireworks", Some("https://api.fireworks.ai/inference/v1"), "FIREWORKS_API_KEY"),
    chat("novita", Some("https://api.novita.ai/openai"), "NOVITA_API_KEY"),
    chat("minimax", Some("https://api.minimax.io/v1"), "MINIMAX_API_KEY"),
    chat("nous", Some("https://inference-api.nousresearch.com/v1"), "NOUS_API_KEY"),
    chat("kilocode", Some("https://api.kilo.ai/api/gateway"), "KILOCODE_API_KEY"),
    chat("ai-gateway", Some("https://ai-gateway.vercel.sh/v1"), "AI_GATEWAY_API_KEY"),
    chat("ollama-cloud", Some("https://ollama.com/v1"), "OLLAMA_API_KEY"),
    chat("gemini-openai", Some("https://generativelanguage.googleapis.com/v1beta/openai"), "GEMINI_API_KEY"),
    chat("copilot", Some("https://api.githubcopilot.com"), "GITHUB_COPILOT_TOKEN"),
    own("lmstudio", Some("http://127.0.0.1:1234/v1"), "HERMES_API_KEY"),
    own("custom", None, "HERMES_API_KEY"),
];
