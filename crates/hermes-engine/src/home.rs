//! Which database file in a home folder is hermes' own, and opening it.

use std::path::{Path, PathBuf};

use hermes_store::{Ownership, PoolOptions, Store};

use crate::error::EngineError;

/// The database hermes uses by default.
pub const STATE_DB: &str = "state.db";
/// The database hermes keeps beside a `state.db` that belongs to another program (the Python
/// original uses the same name in the same default home).
pub(crate) const OWN_DB: &str = "hermes.db";

/// The database file hermes uses in `home`: `state.db`, unless that file belongs to another
/// program, in which case `hermes.db` beside it. The second value is the one-time notice to
/// show when `hermes.db` is chosen for the first time. The other program's file is only looked
/// at, never opened for writing.
pub async fn store_path(home: &Path) -> Result<(PathBuf, Option<String>), EngineError> {
    let own = home.join(OWN_DB);
    if own.exists() {
        return Ok((own, None));
    }
    let state = home.join(STATE_DB);
    match hermes_store::ownership(&state).await? {
        Ownership::Absent | Ownership::Ours => Ok((state, None)),
        Ownership::Foreign(what) => {
            let mut notice = format!(
                "{} is {what}; hermes leaves it untouched and keeps its own sessions in {}",
                state.display(),
                own.display()
            );
            if hermes_store::is_python_original(&state).await {
                notice.push_str(
                    ". It is the Python original's: `hermes sessions import --from-hermes-agent` \
                     copies its sessions in (read-only; `--dry-run` first to see what)",
                );
            }
            Ok((own, Some(notice)))
        }
    }
}

/// An exclusive advisory lock on `home/hermes.lock`, waited for up to a minute.
async fn home_lock(home: &Path) -> Result<std::fs::File, EngineError> {
    let path = home.join("hermes.lock");
    hermes_store::lock_file(&path, std::time::Duration::from_secs(60))
        .await
        .map_err(|e| EngineError::Failed(format!("cannot lock {}: {e}", path.display())))
}

/// Creates `home` (0700) when missing and opens hermes' database in it; the second value is a
/// notice to show once (see [`store_path`]).
pub async fn open_store(home: &Path) -> Result<(Store, Option<String>), EngineError> {
    open_store_with(home, PoolOptions::default()).await
}

/// [`open_store`] with the store's pool sized and timed by `pool` (`[store]` in config.toml).
pub async fn open_store_with(
    home: &Path,
    pool: PoolOptions,
) -> Result<(Store, Option<String>), EngineError> {
    let mut dir = std::fs::DirBuilder::new();
    dir.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        dir.mode(0o700);
    }
    dir.create(home)
        .map_err(|e| EngineError::Failed(format!("cannot create {}: {e}", home.display())))?;
    // Deciding which file is ours and creating it happen under one lock, so processes opening a
    // fresh home at once all see the same answer.
    let _deciding = home_lock(home).await?;
    let (path, notice) = store_path(home).await?;
    Ok((Store::open_with(&path, pool).await?, notice))
}
