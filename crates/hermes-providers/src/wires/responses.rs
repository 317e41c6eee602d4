//! The OpenAI Responses wire's descriptor.

use hermes_core::{Message, RequestParts, Wire};

use super::{Credentials, ExplainError, ProviderSpec, WireDescriptor, WireTarget};
use crate::responses::{self, ResponsesWire};
use crate::transport::{Auth, ChatTransport};

/// OpenAI Responses ([`ResponsesWire`]).
#[derive(Clone, Copy, Debug)]
pub struct ResponsesDescriptor;

/// The OpenAI Responses wire.
pub const RESPONSES: ResponsesDescriptor = ResponsesDescriptor;

const PROVIDERS: &[ProviderSpec] = &[ProviderSpec {
    // Reasoning items kept encrypted between turns (`store: false`).
    id: "openai-responses",
    base_url: Some("https://api.openai.com/v1"),
    key_var: Some("OPENAI_API_KEY"),
}];

impl WireDescriptor for ResponsesDescriptor {
    fn id(&self) -> &'static str {
        responses::WIRE_ID
    }

    fn name(&self) -> &'static str {
        "OpenAI Responses"
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
        Box::new(ResponsesWire {
            client,
            base_url: target.base_url.clone(),
            // The in-process simulator wants a bearer token, as OpenAI does; any will do.
            auth: credentials
                .key
                .or_else(|| credentials.sim.then(|| "hermes-sim".to_owned()))
                .map(Auth::Bearer),
        })
    }

    fn explain(
        &self,
        _target: &WireTarget,
        parts: &RequestParts<'_>,
        _stored: &[Message],
    ) -> Result<Vec<String>, ExplainError> {
        Ok(responses::encode(parts, &responses::Drops::default())?.explain)
    }
}
