//! hermes-providers: the built-in chat-completions route table (SPEC §3) and the provider
//! registry (SPEC §8a), and the chat-completions HTTP transport.

pub mod anthropic;
pub mod aws;
pub mod bedrock;
pub mod chat;
pub mod gemini;
mod image;
pub mod openai_model;
pub mod registry;
mod reply;
pub mod responses;
pub mod routes;
pub mod sampling;
mod segment;
mod signed;
#[cfg(test)]
mod testing;
mod tools;
pub mod transport;

pub use hermes_core::transport::{Reply, TransportError};
pub use registry::{ProviderSpec, Wire, provider};
pub use routes::builtin_table;
pub use transport::{Auth, ChatTransport, Endpoint, HttpChat, Waits};
