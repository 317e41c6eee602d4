//! `acme-hermes`: the whole `hermes` command line, with Acme's route ahead of the built-ins.

fn main() -> std::process::ExitCode {
    let engine = hermes_cli::Engine::builtin()
        .with_route_first(std::sync::Arc::new(acme_route::AcmeRoute::new()));
    hermes_cli::run(engine)
}
