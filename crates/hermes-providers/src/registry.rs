//! Providers are data (docs/spec.md §8a): id, default base URL, API key variable. Each wire's
//! descriptor lists the providers it serves (`crate::wires`); [`PROVIDERS`] and [`provider`]
//! read the built-in ones.

pub use crate::wires::ProviderSpec;

/// Every built-in provider of this build (of the wires its features include), in the order
/// `hermes providers` lists them.
pub static PROVIDERS: std::sync::LazyLock<Vec<ProviderSpec>> =
    std::sync::LazyLock::new(|| crate::wires::builtin_providers().map(|(p, _)| *p).collect());

/// The built-in registry entry for `id` (trimmed, case-insensitive). A front end with wires
/// of its own asks its `Wires` list instead ([`crate::wires::Wires::provider`]).
pub fn provider(id: &str) -> Option<&'static ProviderSpec> {
    let id = id.trim().to_lowercase();
    crate::wires::builtin_providers()
        .map(|(p, _)| p)
        .find(|p| p.id == id)
}
