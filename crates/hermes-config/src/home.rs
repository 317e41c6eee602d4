//! Where hermes keeps its data: `$HERMES_HOME`, default `~/.hermes`, private to the user; and
//! where its sessions live (the database in the home, or the one a URL names).

use std::path::{Path, PathBuf};

use hermes_engine::store::{Location, Store};

use crate::config::Config;
use crate::error::ConfigError;

/// The data directory: `HERMES_HOME`, else `$HOME/.hermes`.
pub fn hermes_home() -> Result<PathBuf, ConfigError> {
    if let Some(home) = std::env::var_os("HERMES_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".hermes"))
}

/// Makes everything this process creates private to the user (files 0600, folders 0700),
/// whatever umask it inherited: conversations, logs and databases are nobody else's business.
/// A front end calls it first thing, before it creates any file.
pub fn private_files() {
    #[cfg(unix)]
    {
        let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    }
}

/// Where sessions live when it is not the SQLite file in the home: `HERMES_DATABASE_URL`, else
/// `[store] url` in config.toml. Errors name where the bad URL came from and never show its
/// password.
pub fn database_location(config: &Config) -> Result<Option<Location>, ConfigError> {
    if let Some(url) = std::env::var("HERMES_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        return Location::parse(&url)
            .map(Some)
            .map_err(|error| ConfigError::DatabaseUrl {
                origin: "HERMES_DATABASE_URL",
                error,
            });
    }
    match config.store.url() {
        Some(url) => Location::parse(url)
            .map(Some)
            .map_err(|error| ConfigError::DatabaseUrl {
                origin: "[store] url",
                error,
            }),
        None => Ok(None),
    }
}

/// Opens the local database in `home` (the engine picks `hermes.db` beside another program's
/// `state.db`); the second value is the notice about that choice, for the front end to show
/// once.
pub async fn open_local_store(
    home: &Path,
    config: &Config,
) -> Result<(Store, Option<String>), ConfigError> {
    Ok(hermes_engine::open_store_with(home, config.store.pool()).await?)
}

/// Opens the sessions' database: the one [`database_location`] names, else the local one in
/// `home` (with its notice, see [`open_local_store`]).
pub async fn open_store_in(
    home: &Path,
    config: &Config,
) -> Result<(Store, Option<String>), ConfigError> {
    open_store_pooled(home, config, config.store.pool()).await
}

/// [`open_store_in`] with the pool settings `pool`.
pub(crate) async fn open_store_pooled(
    home: &Path,
    config: &Config,
    pool: hermes_engine::store::PoolOptions,
) -> Result<(Store, Option<String>), ConfigError> {
    match database_location(config)? {
        Some(location) => Ok((Store::open_at_with(&location, pool).await?, None)),
        None => Ok(hermes_engine::open_store_with(home, pool).await?),
    }
}
