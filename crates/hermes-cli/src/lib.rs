//! hermes-cli: the `hermes` command line — argv, printing, the REPL and the built-in tools;
//! `$HERMES_HOME`, `config.toml`, secrets and the environment are read through `hermes-config`,
//! and every session operation is one call into `hermes-engine`.
//! Also a library entry point, [`run`], so a third party ships its own `hermes` binary with its
//! route in the engine.

mod chat;
mod cli;
mod config;
mod error;
mod history_file;
mod logs;
mod out;
mod preview;
mod providers;
mod repl;
mod routes;
mod serve;
mod sessions;
mod setup;
mod sim;
mod telemetry;
mod tools;
mod verdicts;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
pub use hermes_engine::Engine;
pub use sim::HermesSimulators;

use crate::cli::{Cli, Command, SimCommand};

/// The default filter of the log files: hermes' own decisions at debug, the rest at warn.
const FILE_FILTER: &str = "warn,hermes_core=debug,hermes_providers=debug,hermes_store=debug,hermes_engine=debug,hermes_cli=debug,hermes=debug";

/// The default filter of the gateway's log files: hermes' own events at info, the rest at warn.
/// A gateway's every turn at debug cost about 5.6 KB of log and a sixth of its instructions per
/// request (issue 50's callgrind profile); `HERMES_FILE_LOG` turns debug back on.
const GATEWAY_FILE_FILTER: &str = "warn,hermes_core=info,hermes_providers=info,hermes_store=info,hermes_engine=info,hermes_serve=info,hermes_cli=info,hermes=info";

/// What [`init_tracing`] installed that must outlive the command: the log file's writer
/// (flushed on drop) and the OpenTelemetry exporter (flushed and shut down on drop).
struct TracingGuards {
    _file: Option<tracing_appender::non_blocking::WorkerGuard>,
    _otel: Option<telemetry::Exporter>,
}

/// Installs the subscriber: human-readable on stderr (`HERMES_LOG`, default warn), for
/// commands that talk to providers or the store JSON lines in `$HERMES_HOME/logs`
/// (`HERMES_FILE_LOG`, default `file_filter`: [`FILE_FILTER`], the gateway's
/// [`GATEWAY_FILE_FILTER`]), and for `spans`, when an OTLP endpoint is set, the OpenTelemetry
/// export ([`telemetry::layer`]; a bad setting is a warning, not a failure).
fn init_tracing(
    to_file: bool,
    file_filter: &str,
    spans: Option<telemetry::Spans>,
) -> TracingGuards {
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
    let (file, guard) = match setup::hermes_home()
        .ok()
        .filter(|_| to_file)
        .and_then(|h| logs::appender(&h).ok())
    {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_FILE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(file_filter));
            let layer = tracing_subscriber::fmt::layer()
                .json()
                .with_writer(writer)
                .with_filter(filter);
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    let (otel, exporter) = match spans.map(telemetry::layer) {
        Some(Ok(Some((layer, exporter)))) => (Some(layer), Some(exporter)),
        Some(Err(error)) => {
            let _ = writeln!(io::stderr(), "hermes: warning: no trace export: {error:#}");
            (None, None)
        }
        _ => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .with(otel)
        .try_init();
    TracingGuards {
        _file: guard,
        _otel: exporter,
    }
}

fn dispatch(engine: &Engine, cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Routes(args) => routes::run(engine, &args),
        Command::Providers(args) => providers::run(engine, &args),
        Command::Preview(args) => preview::run(engine, &args),
        Command::Sim(SimCommand::Serve(args)) => sim::serve(&args),
        Command::Serve(args) => serve::run(engine, &args),
        Command::Chat(args) => match &args.query {
            Some(query) => chat::run_once(engine, &args, query),
            None => repl::run(engine, &args),
        },
        Command::Sessions(command) => sessions::run(engine, &command),
        Command::Verdicts(command) => verdicts::run(engine, &command),
        Command::Logs(args) => logs::run(&args, &setup::hermes_home()?),
        Command::Config(command) => config::run(&command, &setup::hermes_home()?),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "hermes", &mut io::stdout());
            Ok(())
        }
    }
}

/// Runs the `hermes` command line with `engine`'s routes: the built-in binary passes
/// [`Engine::builtin`]; a third party passes an engine with its own route first and ships its
/// own `hermes` in a few lines (see `examples/third-party-route`). `--provider sim` runs the
/// engine's simulators, hermes-sim's ([`HermesSimulators`]) unless it has its own.
pub fn run(engine: Engine) -> ExitCode {
    let engine = sim::simulated(engine);
    hermes_config::private_files();
    let cli = Cli::parse();
    let to_file = matches!(
        cli.command,
        Command::Chat(_)
            | Command::Sessions(_)
            | Command::Verdicts(_)
            | Command::Sim(_)
            | Command::Serve(_)
    );
    let spans = match &cli.command {
        Command::Serve(args) if args.command.is_none() => Some(telemetry::Spans::Gateway),
        Command::Chat(_) => Some(telemetry::Spans::Chat),
        _ => None,
    };
    let file_filter = match spans {
        Some(telemetry::Spans::Gateway) => GATEWAY_FILE_FILTER,
        _ => FILE_FILTER,
    };
    let _guards = init_tracing(to_file, file_filter, spans);
    // Message content in spans only when the user opts in, and only when spans are exported.
    let engine = engine.with_message_content(
        spans.is_some() && telemetry::wanted() && telemetry::capture_content(),
    );
    match dispatch(&engine, cli) {
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
            let _ = writeln!(
                io::stderr(),
                "hermes: error: {err:#}{}",
                error::advice(&err)
            );
            if let Some(hermes_engine::EngineError::UnknownProvider(_)) = err.downcast_ref() {
                let _ = writeln!(
                    io::stderr(),
                    "hermes: `hermes providers` lists every provider id"
                );
            }
            ExitCode::from(error::exit_code(&err))
        }
    }
}
