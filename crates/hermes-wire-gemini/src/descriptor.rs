//! The Gemini generateContent wire's descriptor: AI Studio and Vertex.

use hermes_core::{Message, RequestParts, Wire};
use hermes_providers::wires::{
    Access, Credentials, Descriptor, Explained, ProviderSpec, WireTarget,
};
use hermes_providers::{Auth, ChatTransport};

use crate::{self as gemini, GeminiWire};

/// The wire's descriptor, for the engine's list of built-in wires
/// (`hermes_engine::register_builtin_wires`).
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: gemini::WIRE_ID,
    name: "Gemini generateContent",
    providers: PROVIDERS,
    build,
    explain,
    client_blocks: None,
};

/// The providers that speak Gemini generateContent.
pub const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        id: "gemini",
        base_url: Some("https://generativelanguage.googleapis.com/v1beta"),
        key_var: Some("GEMINI_API_KEY"),
        access: Access::Key,
    },
    ProviderSpec {
        // `[vertex] project`, `region` in config.toml; a bearer token.
        id: "vertex-gemini",
        base_url: None,
        key_var: Some("GOOGLE_OAUTH_ACCESS_TOKEN"),
        // google-genai reads `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION`
        // (googleapis/python-genai `google/genai/_api_client.py`), then Anthropic's.
        access: Access::GoogleCloud {
            project: ["GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"],
            region: ["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"],
        },
    },
];

/// The Gemini target of `target` (Vertex when it has a Vertex location).
fn gemini_target(target: &WireTarget) -> gemini::Target {
    let flavor = match &target.vertex {
        Some(v) => gemini::Flavor::Vertex {
            project: v.project.clone(),
            region: v.region.clone(),
        },
        None => gemini::Flavor::AiStudio,
    };
    gemini::Target {
        flavor,
        base_url: target.base_url.clone(),
        max_tokens: target.max_tokens,
    }
}

/// The Gemini wire for `target`: AI Studio's key header, or a bearer token on Vertex.
fn build(target: &WireTarget, http: ChatTransport, auth: Credentials) -> Box<dyn Wire> {
    Box::new(GeminiWire {
        client: http,
        target: gemini_target(target),
        auth: auth.key.map(|key| match target.vertex {
            Some(_) => Auth::Bearer(key),
            None => Auth::Header("x-goog-api-key", key),
        }),
    })
}

/// The wire's own explanation ([`gemini::explain`]: the URL, then the body's lines).
fn explain(target: &WireTarget, parts: &RequestParts<'_>, _: &[Message]) -> Explained {
    Ok(gemini::explain(parts, &gemini_target(target))?)
}
