//! hermes-providers: the built-in chat-completions route table (SPEC §3) and the provider
//! registry (SPEC §8a). Wire codecs and the HTTP transport will live here too.

pub mod registry;
pub mod routes;

pub use registry::{ProviderSpec, Wire, provider};
pub use routes::builtin_table;
