//! `hermes`: the command-line interface with the built-in routes.

fn main() -> std::process::ExitCode {
    hermes_cli::run(hermes_cli::Engine::builtin())
}
