//! hermes-config as the CLI uses it: its errors as anyhow errors that read as they always did
//! (a store that cannot be opened stays the engine's or the store's own error, so exit codes and
//! advice see it), the store's one-time notice printed, and the runtime of the async commands.

use std::io::Write as _;
use std::path::PathBuf;

use hermes_config::{ConfigError, Opened, Setup};
use hermes_engine::store::Store;
use hermes_engine::{Engine, Settings};

/// `err` as the CLI reports it: the engine's and the store's errors unwrapped (exit codes and
/// advice downcast to them), every other one with its own message.
pub(crate) fn error(err: ConfigError) -> anyhow::Error {
    match err {
        ConfigError::Engine(e) => e.into(),
        ConfigError::Store(e) => e.into(),
        other => other.into(),
    }
}

/// The data directory (`$HERMES_HOME`, default `~/.hermes`).
pub(crate) fn hermes_home() -> anyhow::Result<PathBuf> {
    hermes_config::hermes_home().map_err(error)
}

/// The config of `home` and the secrets of `engine`'s wires (an added wire's key variables
/// included).
pub(crate) fn load(engine: &Engine, home: PathBuf) -> anyhow::Result<Setup> {
    Setup::in_home(home, engine.wires()).map_err(error)
}

/// Shows the engine's notice about the database it chose in the home, if any.
fn show(notice: Option<String>) {
    if let Some(notice) = notice {
        let _ = writeln!(std::io::stderr(), "hermes: {notice}");
    }
}

/// Opens the sessions' database `setup` names (its notice shown here, once).
pub(crate) async fn open_store(setup: &Setup) -> anyhow::Result<Store> {
    let (store, notice) = setup.open_store().await.map_err(error)?;
    show(notice);
    Ok(store)
}

/// Opens the local database in `setup`'s home, whatever URL is configured.
pub(crate) async fn open_local_store(setup: &Setup) -> anyhow::Result<Store> {
    let (store, notice) = setup.open_local_store().await.map_err(error)?;
    show(notice);
    Ok(store)
}

/// The store and the process-wide settings of `setup` (see [`Setup::open`]).
pub(crate) async fn open(setup: &Setup) -> anyhow::Result<(Store, Settings)> {
    shown(setup.open().await)
}

/// [`open`] for `hermes serve` (see [`Setup::open_gateway`]: a shorter wait for a connection).
pub(crate) async fn open_gateway(setup: &Setup) -> anyhow::Result<(Store, Settings)> {
    shown(setup.open_gateway().await)
}

/// The store and settings opened, the notice shown.
fn shown(opened: Result<Opened, hermes_config::ConfigError>) -> anyhow::Result<(Store, Settings)> {
    let Opened {
        store,
        notice,
        settings,
    } = opened.map_err(error)?;
    show(notice);
    Ok((store, settings))
}

/// Opens the sessions' database for `$HERMES_HOME` and its config.
pub(crate) async fn open_home_store(engine: &Engine) -> anyhow::Result<Store> {
    open_store(&load(engine, hermes_home()?)?).await
}

/// A runtime for the async commands: two threads (a chat's turn, a command's store work).
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    runtime_with(std::num::NonZeroUsize::MIN.saturating_add(1))
}

/// A runtime of `workers` threads (`hermes serve`'s).
pub(crate) fn runtime_with(
    workers: std::num::NonZeroUsize,
) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.get())
        .enable_all()
        .build()?)
}
