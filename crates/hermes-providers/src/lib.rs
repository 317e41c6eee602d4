//! hermes-providers: the built-in route table (docs/spec.md §3, `routes`: `register_builtin`, the
//! one list, and `builtin_table`), the provider registry's entry (docs/spec.md §8a, `registry`:
//! id, default base URL, key variable), the wire registry (`wires`: a `WireDescriptor` per wire —
//! id, name, the providers it serves, how to build it and explain a body — the `Descriptor` each
//! built-in one is, and `Wires`, the list a front end runs with; the list of built-in wires is
//! hermes-engine's `register_builtin_wires`, where the cargo features choose them), the
//! wires still built here — chat completions (`chat`, `HttpChat`), Anthropic Messages on its
//! direct, Foundry, Vertex and Bedrock InvokeModel doors (`anthropic`) and Bedrock Converse
//! (`bedrock`, with AWS auth in `aws`), each implementing `hermes_core::Wire` — the native-wire
//! kit the wires share (`native`: encoded bodies, JSON pieces, the SSE loop, reply capture's
//! error, images, sampling checks, URL segments, tools, OpenAI model ids, inbound errors),
//! public for the wire crates built on it (Gemini generateContent is `hermes-wire-gemini`, OpenAI
//! Responses `hermes-wire-responses`), and
//! the HTTP transport they all send through (`transport`: `ChatTransport`, `Auth`, `Waits`).
//! `sampling` maps the request's sampling parameters onto each wire.
//!
//! Each native wire here is behind a cargo feature of its own, both on by default: `anthropic`
//! and `bedrock` (which needs `anthropic`, whose Claude model tables Converse reads, and alone
//! brings the AWS crates: SigV4, event-stream frames, and with them the Bedrock InvokeModel
//! door of the Anthropic wire). Chat completions are always built. The
//! `test-support` feature opens `testing`, the helpers the wires' unit tests share.

// With some native wire left out, the helpers the wires share (images, reply capture, sampling
// spellings, URL segments) are partly unused: dead code is linted on the full (default) build.
#![cfg_attr(
    not(all(feature = "anthropic", feature = "bedrock")),
    allow(dead_code, unused_imports, unreachable_pub)
)]

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod aws;
#[cfg(feature = "bedrock")]
pub mod bedrock;
pub mod chat;
mod client_blocks;
mod image;
mod inbound;
pub mod native;
mod openai_model;
pub mod registry;
mod reply;
pub mod routes;
mod sampling;
mod segment;
#[cfg(feature = "anthropic")]
mod signed;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;
mod tools;
mod transport;
pub mod wires;

pub use hermes_core::transport::{Reply, TransportError};
pub use registry::ProviderSpec;
pub use routes::builtin_table;
pub use transport::{Auth, ChatTransport, Endpoint, HttpChat, Signer, Waits};
pub use wires::{Credentials, Descriptor, WireDescriptor, WireTarget, Wires};
