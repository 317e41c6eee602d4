//! Whether a database file is hermes' own, decided without writing to it, migrating it or
//! taking a write lock (the Python original keeps a `state.db` with another schema in the same
//! default home).

use std::io::Read as _;
use std::path::Path;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _, Row as _};

use crate::{MIGRATOR, StoreError};

/// Who a database file belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// No file: hermes may create it.
    Absent,
    /// hermes' own (its migrations are recorded), or empty (a zero-byte file, or an SQLite file
    /// with no tables and nothing pending in a WAL).
    Ours,
    /// Anything else; the text says what was found. hermes must leave it untouched.
    Foreign(String),
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// hermes' `PRAGMA application_id` ("HRMS"), at bytes 68..72 of the header (set by migration 3).
const APPLICATION_ID: [u8; 4] = *b"HRMS";

/// Looks at `path` without changing it: the file header first, then the schema through an
/// immutable read-only connection (no locks, no `-wal`/`-shm` created) for a database with
/// tables, or a read-only connection when that saw none.
pub async fn ownership(path: &Path) -> Result<Ownership, StoreError> {
    let err = |message: String| StoreError::Open {
        path: path.display().to_string(),
        message,
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ownership::Absent),
        Err(e) => return Err(err(e.to_string())),
    };
    let mut header = Vec::with_capacity(100);
    (&mut file)
        .take(100)
        .read_to_end(&mut header)
        .map_err(|e| err(e.to_string()))?;
    drop(file);
    if header.is_empty() {
        return Ok(Ownership::Ours);
    }
    if !header.starts_with(SQLITE_MAGIC) {
        return Ok(Ownership::Foreign("not an SQLite database".into()));
    }
    if header.get(68..72) == Some(&APPLICATION_ID[..]) {
        return Ok(Ownership::Ours);
    }
    // An immutable connection reads the file as it lies: no lock, nothing created. It can miss
    // what a live writer still holds in its write-ahead log (or read a torn page), so an empty
    // or failed answer is asked again through an ordinary read-only connection.
    let found = match table_names(path, true).await {
        Ok(names) if !names.is_empty() => Ok(names),
        _ => table_names(path, false).await,
    };
    let tables = match found {
        Ok(tables) => tables,
        Err(e) => return Ok(Ownership::Foreign(format!("unreadable SQLite file: {e}"))),
    };
    if tables.is_empty() {
        return Ok(Ownership::Ours);
    }
    if !tables.iter().any(|t| t == "_sqlx_migrations")
        // A read racing a live writer can be torn: a second immutable read must agree.
        && table_names(path, true).await.as_ref() == Ok(&tables)
    {
        let shown: Vec<&str> = tables.iter().take(6).map(String::as_str).collect();
        return Ok(Ownership::Foreign(format!(
            "another program's database (tables: {})",
            shown.join(", ")
        )));
    }
    if tables
        .iter()
        .all(|t| t == "_sqlx_migrations" || t.starts_with("sqlite_"))
    {
        // Only the migrations table, nothing applied yet: a hermes database another process is
        // creating right now.
        return Ok(Ownership::Ours);
    }
    match first_migration_is_ours(path).await {
        Ok(true) => Ok(Ownership::Ours),
        Ok(false) => Ok(Ownership::Foreign(
            "another program's sqlx migrations".into(),
        )),
        Err(e) => Ok(Ownership::Foreign(format!("unreadable migrations: {e}"))),
    }
}

pub(crate) async fn connect(
    path: &Path,
    immutable: bool,
) -> Result<sqlx::SqliteConnection, String> {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(immutable)
        .create_if_missing(false)
        .connect()
        .await
        .map_err(|e| e.to_string())
}

async fn table_names(path: &Path, immutable: bool) -> Result<Vec<String>, String> {
    let mut conn = connect(path, immutable).await?;
    let rows = sqlx::query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .fetch_all(&mut conn)
        .await
        .map_err(|e| e.to_string());
    let _ = conn.close().await;
    rows?
        .iter()
        .map(|r| r.try_get::<String, _>("name").map_err(|e| e.to_string()))
        .collect()
}

/// True when migration 1 recorded in the file is hermes' own (same checksum). Read through an
/// ordinary read-only connection: the file is very likely ours and may be live.
async fn first_migration_is_ours(path: &Path) -> Result<bool, String> {
    let mut conn = connect(path, false).await?;
    let checksum: Result<Option<Vec<u8>>, _> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 1")
            .fetch_optional(&mut conn)
            .await;
    let _ = conn.close().await;
    let checksum = checksum.map_err(|e| e.to_string())?;
    let ours = MIGRATOR
        .iter()
        .find(|m| m.version == 1)
        .map(|m| m.checksum.as_ref().to_vec());
    Ok(checksum.is_some() && checksum == ours)
}
