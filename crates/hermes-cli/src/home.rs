//! Where hermes keeps its data: `$HERMES_HOME`, default `~/.hermes`, private to the user; and
//! which database file in it is hermes' own.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use hermes_store::Ownership;

/// The database hermes uses by default.
pub(crate) const STATE_DB: &str = "state.db";
/// The database hermes keeps beside a `state.db` that belongs to another program (the Python
/// original uses the same name in the same default home).
pub(crate) const OWN_DB: &str = "hermes.db";

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

/// Creates `home` (0700) when it does not exist yet.
pub(crate) fn ensure(home: &Path) -> anyhow::Result<()> {
    let mut dir = std::fs::DirBuilder::new();
    dir.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        dir.mode(0o700);
    }
    dir.create(home)
        .with_context(|| format!("cannot create {}", home.display()))
}

/// The database file hermes uses in `home`: `state.db`, unless that file belongs to another
/// program, in which case `hermes.db` beside it (said once, when `hermes.db` is first chosen).
/// The other program's file is only looked at, never opened for writing.
pub(crate) async fn store_path(home: &Path) -> anyhow::Result<PathBuf> {
    let own = home.join(OWN_DB);
    if own.exists() {
        return Ok(own);
    }
    let state = home.join(STATE_DB);
    match hermes_store::ownership(&state).await? {
        Ownership::Absent | Ownership::Ours => Ok(state),
        Ownership::Foreign(what) => {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "hermes: {} is {what}; hermes leaves it untouched and keeps its own sessions in {}",
                state.display(),
                own.display()
            );
            Ok(own)
        }
    }
}

/// Opens hermes' database in `home`.
pub(crate) async fn open_store_in(home: &Path) -> anyhow::Result<hermes_store::Store> {
    ensure(home)?;
    let path = store_path(home).await?;
    Ok(hermes_store::Store::open(&path).await?)
}

/// Opens hermes' database in `$HERMES_HOME`.
pub(crate) async fn open_store() -> anyhow::Result<hermes_store::Store> {
    open_store_in(&hermes_home()?).await
}

/// A runtime for the async commands.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
