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
