//! `hermes`: the command-line interface. The only crate that reads argv and the environment,
//! installs the tracing subscriber and prints.

mod chat;
mod cli;
mod config;
mod home;
mod preview;
mod repl;
mod routes;
mod sessions;
mod sim;
mod tools;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, SimCommand};

/// An error that is the user's way of calling hermes (exit code 2), as opposed to a failure
/// they can act on (exit code 1).
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(std::env::var_os("NO_COLOR").is_none())
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Routes(args) => routes::run(&args),
        Command::Preview(args) => preview::run(&args),
        Command::Sim(SimCommand::Serve(args)) => sim::serve(&args),
        Command::Chat(args) => chat::run(&args),
        Command::Sessions(command) => sessions::run(&command),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let broken_pipe = err.downcast_ref::<io::Error>().map(io::Error::kind)
                == Some(io::ErrorKind::BrokenPipe)
                || err
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
                    == Some(io::ErrorKind::BrokenPipe);
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(io::stderr(), "hermes: error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
