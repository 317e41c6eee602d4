//! The Gemini generateContent wire's descriptor: AI Studio and Vertex.

use hermes_core::{Message, RequestParts, Wire};

use super::{Credentials, ExplainError, ProviderSpec, WireDescriptor, WireTarget};
use crate::gemini::{self, GeminiWire};
use crate::transport::{Auth, ChatTransport};

/// Gemini generateContent ([`GeminiWire`]).
#[derive(Clone, Copy, Debug)]
pub struct GeminiDescriptor;

/// The Gemini generateContent wire.
pub const GEMINI: GeminiDescriptor = GeminiDescriptor;

const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        id: "gemini",
        base_url: Some("https://generativelanguage.googleapis.com/v1beta"),
        key_var: Some("GEMINI_API_KEY"),
    },
    ProviderSpec {
        // `[vertex] project`, `region` in config.toml; a bearer token.
        id: "vertex-gemini",
        base_url: None,
        key_var: Some("GOOGLE_OAUTH_ACCESS_TOKEN"),
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

impl WireDescriptor for GeminiDescriptor {
    fn id(&self) -> &'static str {
        gemini::WIRE_ID
    }

    fn name(&self) -> &'static str {
        "Gemini generateContent"
    }

    fn providers(&self) -> &[ProviderSpec] {
        PROVIDERS
    }

    fn build(
        &self,
        target: &WireTarget,
        client: ChatTransport,
        credentials: Credentials,
    ) -> Box<dyn Wire> {
        Box::new(GeminiWire {
            client,
            target: gemini_target(target),
            auth: credentials.key.map(|key| match target.vertex {
                Some(_) => Auth::Bearer(key),
                None => Auth::Header("x-goog-api-key", key),
            }),
        })
    }

    fn explain(
        &self,
        target: &WireTarget,
        parts: &RequestParts<'_>,
        _stored: &[Message],
    ) -> Result<Vec<String>, ExplainError> {
        Ok(gemini::encode(parts, &gemini_target(target))?.explain)
    }
}
