//! Where hermes keeps its data: `$HERMES_HOME`, default `~/.hermes`.

use std::path::PathBuf;

use anyhow::Context as _;

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

/// Opens `$HERMES_HOME/state.db`.
pub(crate) async fn open_store() -> anyhow::Result<hermes_store::Store> {
    let path = hermes_home()?.join("state.db");
    Ok(hermes_store::Store::open(&path).await?)
}

/// A runtime for the async commands.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
