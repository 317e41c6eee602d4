//! The Bedrock Converse wire's descriptor (AWS auth: SigV4 or a Bedrock API key).

use hermes_core::{Message, RequestParts, Wire};

use super::{Credentials, ExplainError, ProviderSpec, WireDescriptor, WireTarget};
use crate::bedrock::{self, BedrockWire};
use crate::transport::ChatTransport;

/// AWS Bedrock Converse ([`BedrockWire`]).
#[derive(Clone, Copy, Debug)]
pub struct BedrockDescriptor;

/// The Bedrock Converse wire.
pub const BEDROCK: BedrockDescriptor = BedrockDescriptor;

const PROVIDERS: &[ProviderSpec] = &[
    // The host follows the AWS region; credentials come from the AWS environment and shared
    // files (or a Bedrock API key), never from one key variable.
    ProviderSpec {
        id: "bedrock",
        base_url: None,
        key_var: None,
    },
];

/// The Converse target of `target`.
fn bedrock_target(target: &WireTarget) -> bedrock::Target {
    bedrock::Target {
        base_url: target.base_url.clone(),
        max_tokens: target.max_tokens,
    }
}

impl WireDescriptor for BedrockDescriptor {
    fn id(&self) -> &'static str {
        bedrock::WIRE_ID
    }

    fn name(&self) -> &'static str {
        "AWS Bedrock Converse"
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
        Box::new(BedrockWire {
            client,
            target: bedrock_target(target),
            auth: credentials.aws,
            clock: std::time::SystemTime::now,
        })
    }

    fn explain(
        &self,
        target: &WireTarget,
        parts: &RequestParts<'_>,
        _stored: &[Message],
    ) -> Result<Vec<String>, ExplainError> {
        let encoded = bedrock::encode(parts, &bedrock_target(target), &bedrock::Drops::default())?;
        Ok(encoded.explain)
    }
}
