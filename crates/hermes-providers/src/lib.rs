//! hermes-providers: the built-in route table (docs/spec.md §3, `routes`: `register_builtin`, the
//! one list, and `builtin_table`), the provider registry's entry (docs/spec.md §8a, `registry`:
//! id, default base URL, key variable), the wire registry (`wires`: a `WireDescriptor` per wire —
//! id, name, the providers it serves, how to build it and explain a body — the `Descriptor` each
//! built-in one is, and `Wires`, the list a front end runs with; the list of built-in wires is
//! hermes-engine's `register_builtin_wires`, where the cargo features choose them), the
//! native-wire kit the wire crates share (`native`: encoded bodies, JSON pieces, the SSE loop,
//! reply capture's error, images, sampling checks, URL segments, tools, OpenAI model ids,
//! inbound errors; chat completions is `hermes-wire-chat`, always built, Anthropic Messages
//! `hermes-wire-anthropic`, Bedrock Converse `hermes-wire-bedrock`, Gemini generateContent
//! `hermes-wire-gemini`, OpenAI Responses `hermes-wire-responses`), the Bedrock runtime's hosts
//! (`aws`, no AWS crate: those are `hermes-aws`'s), and the HTTP transport they all send through
//! (`transport`: `ChatTransport`, `Auth`, `Signer`, `Waits`). `sampling` maps the request's
//! sampling parameters onto each wire. The `test-support` feature opens `testing`, the helpers
//! the wires' unit tests share.

pub mod aws;
mod client_blocks;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod image;
mod inbound;
pub mod native;
mod openai_model;
mod read;
pub mod registry;
mod reply;
pub mod routes;
mod sampling;
mod segment;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;
mod tools;
mod transport;
pub mod wires;

pub use hermes_core::transport::{Reply, TransportError};
pub use registry::ProviderSpec;
pub use routes::builtin_table;
pub use transport::{Auth, ChatTransport, Signer, Waits};
pub use wires::{Access, Credentials, Descriptor, WireDescriptor, WireTarget, Wires};
