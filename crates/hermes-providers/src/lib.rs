//! hermes-providers: the built-in route table (SPEC §3, `routes`: `register_builtin`, the one
//! list, and `builtin_table`), the provider registry (SPEC §8a, `registry`: id → wire, default
//! base URL, key variable), the five built-in wires — chat completions (`chat`, `HttpChat`),
//! Anthropic Messages on its direct, Foundry, Vertex and Bedrock InvokeModel doors
//! (`anthropic`), Bedrock Converse (`bedrock`, with AWS auth in `aws`), Gemini generateContent
//! (`gemini`) and OpenAI Responses (`responses`), each implementing `hermes_core::Wire` — and
//! the HTTP transport they all send through (`transport`: `ChatTransport`, `Auth`, `Waits`).
//! `sampling` maps the request's sampling parameters onto each wire.

pub mod anthropic;
pub mod aws;
pub mod bedrock;
pub mod chat;
pub mod gemini;
mod image;
pub mod native;
mod openai_model;
pub mod registry;
mod reply;
pub mod responses;
pub mod routes;
mod sampling;
mod segment;
mod signed;
#[cfg(test)]
mod testing;
mod tools;
mod transport;

pub use hermes_core::transport::{Reply, TransportError};
pub use registry::{ProviderSpec, Wire, provider};
pub use routes::builtin_table;
pub use transport::{Auth, ChatTransport, Endpoint, HttpChat, Waits};
