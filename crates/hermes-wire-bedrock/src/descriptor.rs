//! The Bedrock Converse wire's descriptor (AWS auth: SigV4 or a Bedrock API key).

use hermes_core::{Message, RequestParts, Wire};
use hermes_providers::ChatTransport;
use hermes_providers::wires::{
    Access, Credentials, Descriptor, Explained, ProviderSpec, WireTarget,
};

use crate::{self as bedrock, BedrockWire};

/// The wire's descriptor, for the engine's list of built-in wires
/// (`hermes_engine::register_builtin_wires`).
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: bedrock::WIRE_ID,
    name: "AWS Bedrock Converse",
    providers: PROVIDERS,
    build,
    explain,
    client_blocks: None,
};

/// The providers that speak Bedrock Converse.
pub const PROVIDERS: &[ProviderSpec] = &[
    // The host follows the AWS region; credentials come from the AWS environment and shared
    // files (or a Bedrock API key), never from one key variable.
    ProviderSpec {
        id: "bedrock",
        base_url: None,
        key_var: None,
        access: Access::Aws,
    },
];

/// The Converse target of `target`.
fn bedrock_target(target: &WireTarget) -> bedrock::Target {
    bedrock::Target {
        base_url: target.base_url.clone(),
        max_tokens: target.max_tokens,
        account: None,
    }
}

/// The Converse wire for `target`, signing with the AWS auth.
fn build(target: &WireTarget, http: ChatTransport, auth: Credentials) -> Box<dyn Wire> {
    let mut door = bedrock_target(target);
    // A Bedrock API key is an account; SigV4 credentials name none (docs/spec.md §5a 1,
    // `bedrock::Target::account`).
    door.account = auth.signer.as_ref().and_then(|s| s.account());
    Box::new(BedrockWire {
        client: http,
        target: door,
        auth: auth.signer,
    })
}

/// The wire's own explanation ([`bedrock::explain`]: the operation and path, then the body's
/// lines).
fn explain(target: &WireTarget, parts: &RequestParts<'_>, _: &[Message]) -> Explained {
    Ok(bedrock::explain(parts, &bedrock_target(target))?)
}
