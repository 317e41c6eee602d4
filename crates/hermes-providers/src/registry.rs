//! Providers are data (SPEC §8a): id → wire, default base URL, API key variable.

/// The wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible chat completions.
    Chat,
    /// Anthropic Messages.
    Anthropic,
    /// AWS Bedrock Converse.
    BedrockConverse,
    /// Gemini generateContent.
    Gemini,
    /// OpenAI Responses.
    Responses,
}

impl Wire {
    /// The name shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Chat => "chat",
            Wire::Anthropic => "anthropic",
            Wire::BedrockConverse => "bedrock-converse",
            Wire::Gemini => "gemini",
            Wire::Responses => "openai-responses",
        }
    }
}

/// One provider of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderSpec {
    /// Provider id (`--provider`).
    pub id: &'static str,
    /// Wire protocol.
    pub wire: Wire,
    /// Default base URL; `None` when `--base-url` is required.
    pub base_url: Option<&'static str>,
    /// Environment variable holding the API key; `None` when no key is needed.
    pub key_var: Option<&'static str>,
}

const fn chat(id: &'static str, base_url: &'static str, key_var: &'static str) -> ProviderSpec {
    ProviderSpec {
        id,
        wire: Wire::Chat,
        base_url: Some(base_url),
        key_var: Some(key_var),
    }
}

/// Every built-in provider, in the order of SPEC §8a.
pub const PROVIDERS: &[ProviderSpec] = &[
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
        wire: Wire::Chat,
        base_url: Some("http://127.0.0.1:1234/v1"),
        key_var: Some("HERMES_API_KEY"),
    },
    ProviderSpec {
        id: "custom",
        wire: Wire::Chat,
        base_url: None,
        key_var: Some("HERMES_API_KEY"),
    },
    ProviderSpec {
        id: "anthropic",
        wire: Wire::Anthropic,
        base_url: Some("https://api.anthropic.com"),
        key_var: Some("ANTHROPIC_API_KEY"),
    },
    ProviderSpec {
        id: "vertex-anthropic",
        wire: Wire::Anthropic,
        base_url: None,
        key_var: Some("GOOGLE_OAUTH_ACCESS_TOKEN"),
    },
    ProviderSpec {
        // https://{resource}.services.ai.azure.com/anthropic: the resource is the user's.
        id: "foundry-anthropic",
        wire: Wire::Anthropic,
        base_url: None,
        key_var: Some("ANTHROPIC_FOUNDRY_API_KEY"),
    },
    // Bedrock: the host follows the AWS region; credentials come from the AWS environment and
    // shared files (or a Bedrock API key), never from one key variable.
    ProviderSpec {
        id: "bedrock",
        wire: Wire::BedrockConverse,
        base_url: None,
        key_var: None,
    },
    ProviderSpec {
        // Claude's Messages bodies over Bedrock InvokeModel.
        id: "bedrock-anthropic",
        wire: Wire::Anthropic,
        base_url: None,
        key_var: None,
    },
    ProviderSpec {
        // Reasoning items kept encrypted between turns (`store: false`).
        id: "openai-responses",
        wire: Wire::Responses,
        base_url: Some("https://api.openai.com/v1"),
        key_var: Some("OPENAI_API_KEY"),
    },
    ProviderSpec {
        id: "gemini",
        wire: Wire::Gemini,
        base_url: Some("https://generativelanguage.googleapis.com/v1beta"),
        key_var: Some("GEMINI_API_KEY"),
    },
    ProviderSpec {
        // `[vertex] project`, `region` in config.toml; a bearer token.
        id: "vertex-gemini",
        wire: Wire::Gemini,
        base_url: None,
        key_var: Some("GOOGLE_OAUTH_ACCESS_TOKEN"),
    },
];

/// The registry entry for `id` (trimmed, case-insensitive).
pub fn provider(id: &str) -> Option<&'static ProviderSpec> {
    let id = id.trim().to_lowercase();
    PROVIDERS.iter().find(|p| p.id == id)
}
