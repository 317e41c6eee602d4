//! Providers are data (docs/spec.md §8a): id, default base URL, API key variable. Each wire's
//! descriptor lists the providers it serves (`crate::wires`); the built-in ones of a build are
//! read from hermes-engine's list of built-in wires (`hermes_engine::wires::PROVIDERS`,
//! `hermes_engine::wires::provider`).

pub use crate::wires::ProviderSpec;
