//! `acme-hermes`: the whole `hermes` command line, with Acme's route ahead of the built-ins and
//! Acme's own wire ("Acme JSON", provider `acme-json`) beside them.

use std::sync::Arc;

fn main() -> std::process::ExitCode {
    let engine = hermes_cli::Engine::builtin()
        .with_route_first(Arc::new(acme_route::AcmeRoute::new()))
        .with_wire(Arc::new(acme_route::ACME_JSON));
    hermes_cli::run(engine)
}
