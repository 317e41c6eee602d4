//! The integration tests of hermes-engine, one binary: each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod concurrency;
mod connections;
mod leases;
mod preview;
mod requests;
mod send;
mod summary;
mod thinking;
mod verdicts;

/// The built-in engine with the simulators the `hermes` command line gives it, so
/// `--provider sim` runs as it does there.
fn sim_engine() -> hermes_engine::Engine {
    hermes_engine::Engine::builtin()
        .with_simulators(std::sync::Arc::new(hermes_cli::HermesSimulators::new()))
}

/// An engine serving requests from `store`, with DeepSeek at `sim` and a test key.
fn request_engine(
    sim: &hermes_sim::Sim,
    store: &hermes_engine::store::Store,
) -> hermes_engine::ServingEngine {
    request_engine_for("deepseek", sim, store)
}

/// An engine serving requests from `store`, with `provider` at `sim` and a test key.
fn request_engine_for(
    provider: &str,
    sim: &hermes_sim::Sim,
    store: &hermes_engine::store::Store,
) -> hermes_engine::ServingEngine {
    hermes_engine::Engine::builtin().with_store(
        store.clone(),
        hermes_engine::Settings::new(
            defaults_at(provider, &sim.base_url()),
            std::sync::Arc::new(|_| Some("sk-test".to_owned())),
        ),
    )
}

/// Defaults with `provider` at `base_url`.
fn defaults_at(provider: &str, base_url: &str) -> hermes_engine::Defaults {
    let mut defaults = hermes_engine::Defaults::default();
    defaults.providers.insert(
        provider.into(),
        hermes_engine::ProviderDefaults::new(Some(base_url.to_owned()), None, None, false),
    );
    defaults
}

/// Open options for a new DeepSeek (`deepseek-v4-pro`) session at `base_url` with a test key.
fn deepseek_options(base_url: &str) -> hermes_engine::OpenOptions {
    let choice = hermes_engine::Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None);
    hermes_engine::OpenOptions::new(choice).settings(hermes_engine::Settings::new(
        defaults_at("deepseek", base_url),
        std::sync::Arc::new(|_| Some("sk-test".to_owned())),
    ))
}

/// The text of a message's content ("" when it has none).
fn text_of(message: &hermes_core::Message) -> String {
    message
        .content
        .as_ref()
        .and_then(|c| c.as_str().map(|s| s.into_owned()))
        .unwrap_or_default()
}
