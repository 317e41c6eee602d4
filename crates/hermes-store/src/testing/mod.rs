//! Test support (feature `test-support`, for tests only): a fresh, empty store on either backend.
//!
//! PostgreSQL tests use the server named by `HERMES_TEST_PG_URL` (`.ci/run` starts one); each
//! fresh store is a new schema of that database, chosen with `options[search_path]=…` in the
//! URL, so tests never see each other's rows. With `HERMES_REQUIRE_PG` set (as in CI) a missing
//! server is a panic, never a skip.

use std::path::PathBuf;

use sqlx::Connection as _;

use crate::{Backend, Location, Store};

mod original;
pub use original::{
    DEEPSEEK_MODEL, FixtureIds, JsonColumn, OPENROUTER_MODEL, OriginalFixture, Signer,
    original_json_columns, write_python_original,
};

/// The PostgreSQL server for tests: `HERMES_TEST_PG_URL`, or `None` (the test is recorded as
/// skipped, see `hermes_test_support::skip`) when it is unset and `HERMES_REQUIRE_PG` is not.
///
/// # Panics
/// When `HERMES_REQUIRE_PG` is set and `HERMES_TEST_PG_URL` is not.
pub fn postgres_url() -> Option<String> {
    match std::env::var("HERMES_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if hermes_test_support::skip::flag("HERMES_REQUIRE_PG") => {
            panic!(
                "HERMES_REQUIRE_PG is set but HERMES_TEST_PG_URL is not: PostgreSQL tests cannot run"
            )
        }
        _ => {
            hermes_test_support::skip::skipped(
                hermes_test_support::skip::group::POSTGRES,
                "HERMES_TEST_PG_URL is unset (`cargo xtask ci` starts a server; or set it to postgres://…)",
            );
            None
        }
    }
}

/// `url` with `key=value` added to its query.
pub fn with_param(url: &str, key: &str, value: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{key}={value}")
}

/// A new, empty schema on the test server; returns the URL that opens it (`None`: skipped).
///
/// # Panics
/// When the server cannot be reached or the schema cannot be made.
pub async fn fresh_postgres_url() -> Option<String> {
    let base = postgres_url()?;
    let schema = format!("t_{}", uuid::Uuid::now_v7().simple());
    let mut conn = sqlx::PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL server: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("cannot create schema {schema}: {e}"));
    let _ = conn.close().await;
    Some(with_param(&base, "options[search_path]", &schema))
}

/// A fresh store location, kept as long as this value lives.
#[derive(Debug)]
pub struct TestDb {
    /// Where the store is.
    pub location: Location,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// A fresh, empty store on `backend` (`None`: PostgreSQL skipped, see [`postgres_url`]).
    ///
    /// # Panics
    /// When the temporary folder or the schema cannot be made.
    pub async fn new(backend: Backend) -> Option<TestDb> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
                Some(TestDb {
                    location: Location::Sqlite(dir.path().join("home/state.db")),
                    _dir: Some(dir),
                })
            }
            Backend::Postgres => Some(TestDb {
                location: Location::Postgres(fresh_postgres_url().await?),
                _dir: None,
            }),
        }
    }

    /// Opens a handle on the store (each call a new handle, as another process would have).
    ///
    /// # Panics
    /// When the store cannot be opened.
    pub async fn open(&self) -> Store {
        Store::open_at(&self.location)
            .await
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", self.location))
    }

    /// The store's location as a URL (`sqlite://PATH` or the PostgreSQL URL), for
    /// `HERMES_DATABASE_URL`.
    pub fn url(&self) -> String {
        match &self.location {
            Location::Sqlite(path) => format!("sqlite://{}", path.display()),
            Location::Postgres(url) => url.clone(),
        }
    }

    /// The SQLite file, when the store is one.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        match &self.location {
            Location::Sqlite(path) => Some(path.clone()),
            Location::Postgres(_) => None,
        }
    }
}
