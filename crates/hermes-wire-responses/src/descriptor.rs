//! The OpenAI Responses wire's descriptor.

use hermes_core::{Message, RequestParts, Wire};
use hermes_providers::wires::{
    Access, Credentials, Descriptor, Explained, ProviderSpec, WireTarget,
};
use hermes_providers::{Auth, ChatTransport};

use crate::{self as responses, ResponsesWire};

/// The wire's descriptor, for the engine's list of built-in wires
/// (`hermes_engine::register_builtin_wires`).
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: responses::WIRE_ID,
    name: "OpenAI Responses",
    providers: PROVIDERS,
    build,
    explain,
    client_blocks: None,
};

/// The providers that speak OpenAI Responses.
pub const PROVIDERS: &[ProviderSpec] = &[ProviderSpec {
    // Reasoning items kept encrypted between turns (`store: false`).
    id: "openai-responses",
    base_url: Some("https://api.openai.com/v1"),
    key_var: Some("OPENAI_API_KEY"),
    access: Access::Key,
}];

/// The Responses wire for `target`, its key as a bearer token.
fn build(target: &WireTarget, http: ChatTransport, auth: Credentials) -> Box<dyn Wire> {
    Box::new(ResponsesWire {
        client: http,
        base_url: target.base_url.clone(),
        // The in-process simulator wants a bearer token, as OpenAI does; any will do.
        auth: auth
            .key
            .or_else(|| auth.sim.then(|| "hermes-sim".to_owned()))
            .map(Auth::Bearer),
    })
}

/// The wire's own explanation ([`responses::explain`]: the URL, then the body's lines).
fn explain(target: &WireTarget, parts: &RequestParts<'_>, _: &[Message]) -> Explained {
    Ok(responses::explain(parts, &target.base_url)?)
}
