//! Where hermes keeps its data: `$HERMES_HOME`, default `~/.hermes`, private to the user.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use hermes_engine::store::{Location, Store};

use crate::config::Config;

/// The data directory.
pub(crate) fn hermes_home() -> anyhow::Result<PathBuf> {
    if let Some(home) = std::env::var_os("HERMES_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("neither HERMES_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".hermes"))
}

/// Makes everything this process creates private to the user (files 0600, folders 0700),
/// whatever umask it inherited: conversations, logs and databases are nobody else's business.
pub(crate) fn private_files() {
    #[cfg(unix)]
    {
        let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    }
}

/// Where sessions live when it is not the SQLite file in the home: `HERMES_DATABASE_URL`, else
/// `[store] url` in config.toml. Errors name where the bad URL came from and never show its
/// password.
pub(crate) fn database_location(config: &Config) -> anyhow::Result<Option<Location>> {
    if let Some(url) = std::env::var("HERMES_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        return Location::parse(&url)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("HERMES_DATABASE_URL: {e}"));
    }
    match &config.store.url {
        Some(url) => Location::parse(url.get_ref())
            .map(Some)
            .map_err(|e| anyhow::anyhow!("[store] url: {e}")),
        None => Ok(None),
    }
}

/// Opens the local database in `home` (the engine picks `hermes.db` beside another program's
/// `state.db`, and the notice about it is shown here, once).
pub(crate) async fn open_local_store(home: &Path, config: &Config) -> anyhow::Result<Store> {
    let (store, notice) = hermes_engine::open_store_with(home, config.store.pool()).await?;
    if let Some(notice) = notice {
        let _ = writeln!(std::io::stderr(), "hermes: {notice}");
    }
    Ok(store)
}

/// Opens the sessions' database: the one [`database_location`] names, else the local one in
/// `home`.
pub(crate) async fn open_store_in(home: &Path, config: &Config) -> anyhow::Result<Store> {
    match database_location(config)? {
        Some(location) => Ok(Store::open_at_with(&location, config.store.pool()).await?),
        None => open_local_store(home, config).await,
    }
}

/// Opens the sessions' database for `$HERMES_HOME` and its config.
pub(crate) async fn open_store() -> anyhow::Result<Store> {
    let home = hermes_home()?;
    let config = crate::config::load(&home)?;
    open_store_in(&home, &config).await
}

/// A runtime for the async commands.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
