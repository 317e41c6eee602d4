//! Where hermes keeps its data: `$HERMES_HOME`, default `~/.hermes`, private to the user.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use hermes_engine::store::Store;

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

/// Opens hermes' database in `home` (the engine picks `hermes.db` beside another program's
/// `state.db`, and the notice about it is shown here, once).
pub(crate) async fn open_store_in(home: &Path) -> anyhow::Result<Store> {
    let (store, notice) = hermes_engine::open_store(home).await?;
    if let Some(notice) = notice {
        let _ = writeln!(std::io::stderr(), "hermes: {notice}");
    }
    Ok(store)
}

/// Opens hermes' database in `$HERMES_HOME`.
pub(crate) async fn open_store() -> anyhow::Result<Store> {
    open_store_in(&hermes_home()?).await
}

/// A runtime for the async commands.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
