//! `hermes`: the command-line interface. The only crate that reads argv and the environment,
//! installs the tracing subscriber and prints.

mod chat;
mod cli;
mod config;
mod home;
mod logs;
mod out;
mod preview;
mod repl;
mod routes;
mod secrets;
mod sessions;
mod sim;
mod tools;
mod verdicts;

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

/// The default filter of the log files: hermes' own decisions at debug, the rest at warn.
const FILE_FILTER: &str =
    "warn,hermes_core=debug,hermes_providers=debug,hermes_store=debug,hermes=debug";

/// Installs the subscriber: human-readable on stderr (`HERMES_LOG`, default warn), and for
/// commands that talk to providers or the store, JSON lines in `$HERMES_HOME/logs`
/// (`HERMES_FILE_LOG`, default [`FILE_FILTER`]). The returned guard flushes the file on drop.
fn init_tracing(to_file: bool) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let stderr_filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .with_ansi(
            std::env::var_os("NO_COLOR").is_none()
                && std::io::IsTerminal::is_terminal(&io::stderr()),
        )
        .with_filter(stderr_filter);
    let (file, guard) = match home::hermes_home()
        .ok()
        .filter(|_| to_file)
        .and_then(|h| logs::appender(&h).ok())
    {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_FILE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(FILE_FILTER));
            let layer = tracing_subscriber::fmt::layer()
                .json()
                .with_writer(writer)
                .with_filter(filter);
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init();
    guard
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Routes(args) => routes::run(&args),
        Command::Preview(args) => preview::run(&args),
        Command::Sim(SimCommand::Serve(args)) => sim::serve(&args),
        Command::Chat(args) => chat::run(&args),
        Command::Sessions(command) => sessions::run(&command),
        Command::Verdicts(command) => verdicts::run(&command),
        Command::Logs(args) => logs::run(&args, &home::hermes_home()?),
        Command::Config(command) => config::run(&command, &home::hermes_home()?),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "hermes", &mut io::stdout());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    home::private_files();
    let cli = Cli::parse();
    let to_file = matches!(
        cli.command,
        Command::Chat(_) | Command::Sessions(_) | Command::Verdicts(_) | Command::Sim(_)
    );
    let _guard = init_tracing(to_file);
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
