//! The Anthropic Messages wire's descriptor: the direct API, Vertex, Azure Foundry and (with
//! the `bedrock` feature, whose AWS auth it needs) Bedrock InvokeModel.

use hermes_core::{Message, RequestParts, Wire};
use hermes_providers::wires::{
    Access, Credentials, Descriptor, Explained, ProviderSpec, WireTarget,
};
use hermes_providers::{Auth, ChatTransport};

use crate::{self as anthropic, AnthropicWire};

/// The wire's descriptor, for the engine's list of built-in wires
/// (`hermes_engine::register_builtin_wires`).
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: anthropic::WIRE_ID,
    name: "Anthropic Messages",
    providers: PROVIDERS,
    build,
    explain,
    client_blocks: Some(client_blocks),
};

/// The providers that speak Anthropic Messages.
pub const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        id: "anthropic",
        base_url: Some("https://api.anthropic.com"),
        key_var: Some("ANTHROPIC_API_KEY"),
        access: Access::Key,
    },
    ProviderSpec {
        id: "vertex-anthropic",
        base_url: None,
        key_var: Some("GOOGLE_OAUTH_ACCESS_TOKEN"),
        // Anthropic's Vertex client reads `ANTHROPIC_VERTEX_PROJECT_ID` and `CLOUD_ML_REGION`
        // (anthropic-sdk-python `lib/vertex/_client.py`), then google-genai's, as google-auth
        // would.
        access: Access::GoogleCloud {
            project: ["ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"],
            region: ["CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"],
        },
    },
    ProviderSpec {
        id: "foundry-anthropic",
        base_url: None,
        key_var: Some("ANTHROPIC_FOUNDRY_API_KEY"),
        access: Access::Resource {
            example: "https://RESOURCE.services.ai.azure.com/anthropic",
            token_var: anthropic::FOUNDRY_TOKEN_VAR,
            token: "a Microsoft Entra ID token",
        },
    },
    // Claude's Messages bodies over Bedrock InvokeModel: the host follows the AWS region;
    // credentials come from the AWS environment and shared files (or a Bedrock API key).
    #[cfg(feature = "bedrock")]
    ProviderSpec {
        id: "bedrock-anthropic",
        base_url: None,
        key_var: None,
        access: Access::Aws,
    },
];

/// The Anthropic target of `target` (its door from the provider id and the Vertex location).
fn anthropic_target(target: &WireTarget) -> anthropic::Target {
    let flavor = match (&target.vertex, target.provider.as_str()) {
        (Some(v), _) => anthropic::Flavor::Vertex {
            project: v.project.clone(),
            region: v.region.clone(),
        },
        (None, "foundry-anthropic") => anthropic::Flavor::Foundry,
        (None, "bedrock-anthropic") => anthropic::Flavor::Bedrock,
        _ => anthropic::Flavor::Direct,
    };
    anthropic::Target {
        flavor,
        base_url: target.base_url.clone(),
        max_tokens: target.max_tokens,
        account: None,
    }
}

/// The key as Anthropic's door takes it: AWS auth on Bedrock, a bearer token on Vertex (and on
/// Foundry given an Entra ID token), else `x-api-key`.
fn auth_of(target: &WireTarget, credentials: Credentials) -> Option<Auth> {
    if let Some(signer) = credentials.signer {
        return Some(Auth::Signed(signer));
    }
    credentials.key.map(|key| {
        if target.vertex.is_some() || target.bearer {
            Auth::Bearer(key)
        } else {
            Auth::Header("x-api-key", key)
        }
    })
}

/// The URL the request goes to, then the body's lines.
fn explain(target: &WireTarget, parts: &RequestParts<'_>, _: &[Message]) -> Explained {
    let door = anthropic_target(target);
    let encoded = anthropic::body::encode(parts, &door, &anthropic::Drops::default())?;
    let url = anthropic::url(&door, &target.model, parts.stream);
    Ok(std::iter::once(format!("POST {url}"))
        .chain(encoded.explain)
        .collect())
}

/// The Anthropic wire for `target`, through the door its provider names.
fn build(target: &WireTarget, http: ChatTransport, auth: Credentials) -> Box<dyn Wire> {
    let auth = auth_of(target, auth);
    let mut target = anthropic_target(target);
    // A key is an account; bearer tokens (Vertex, Foundry's Entra ID) and AWS credentials
    // rotate within the hour, so they name none (the model and host still bind).
    target.account = match &auth {
        Some(Auth::Header(_, key)) => Some(anthropic::account_of(key)),
        _ => None,
    };
    Box::new(AnthropicWire {
        client: http,
        target,
        auth,
    })
}

/// The Anthropic wire's rule for a gateway client's own thinking blocks
/// ([`inbound::client_blocks_to`]: only Claude, which verifies its signatures, gets them).
fn client_blocks(history: &mut [Message], base_url: &str) -> usize {
    anthropic::inbound::client_blocks_to(history, anthropic::WIRE_ID, base_url)
}
