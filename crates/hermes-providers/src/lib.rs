//! hermes-providers: the built-in route table (docs/spec.md §3, `routes`: `register_builtin`, the
//! one list, and `builtin_table`), the provider registry (docs/spec.md §8a, `registry`: id, default
//! base URL, key variable), the wire registry (`wires`: a `WireDescriptor` per wire — id, name, the
//! providers it serves, how to build it and explain a body — and `register_builtin_wires`), the
//! five built-in wires — chat completions (`chat`, `HttpChat`),
//! Anthropic Messages on its direct, Foundry, Vertex and Bedrock InvokeModel doors
//! (`anthropic`), Bedrock Converse (`bedrock`, with AWS auth in `aws`), Gemini generateContent
//! (`gemini`) and OpenAI Responses (`responses`), each implementing `hermes_core::Wire` — and
//! the HTTP transport they all send through (`transport`: `ChatTransport`, `Auth`, `Waits`).
//! `sampling` maps the request's sampling parameters onto each wire.
//!
//! Each native wire is behind a cargo feature of its own, all on by default: `anthropic`,
//! `bedrock` (which needs `anthropic`, whose Claude model tables Converse reads, and alone
//! brings the AWS crates: SigV4, event-stream frames, and with them the Bedrock InvokeModel
//! door of the Anthropic wire), `gemini` and `responses`. Chat completions are always built.

// With some native wire left out, the helpers the wires share (images, reply capture, sampling
// spellings, URL segments) are partly unused: dead code is linted on the full (default) build.
#![cfg_attr(
    not(all(
        feature = "anthropic",
        feature = "bedrock",
        feature = "gemini",
        feature = "responses"
    )),
    allow(dead_code, unused_imports, unreachable_pub)
)]

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod aws;
#[cfg(feature = "bedrock")]
pub mod bedrock;
pub mod chat;
mod client_blocks;
#[cfg(feature = "gemini")]
pub mod gemini;
mod image;
mod inbound;
pub mod native;
mod openai_model;
pub mod registry;
mod reply;
#[cfg(feature = "responses")]
pub mod responses;
pub mod routes;
mod sampling;
mod segment;
#[cfg(feature = "anthropic")]
mod signed;
#[cfg(test)]
mod testing;
mod tools;
mod transport;
pub mod wires;

pub use client_blocks::client_blocks_to;
pub use hermes_core::transport::{Reply, TransportError};
pub use registry::{ProviderSpec, provider};
pub use routes::builtin_table;
pub use transport::{Auth, ChatTransport, Endpoint, HttpChat, Waits};
pub use wires::{
    Credentials, WireDescriptor, WireTarget, Wires, feature_left_out, register_builtin_wires,
};
