//! What can go wrong reading a front end's configuration: each error names where (the file and
//! line, the key, the environment variable) and what was expected, never a secret's value.

use std::path::PathBuf;

use hermes_engine::EngineError;
use hermes_engine::store::StoreError;

/// A configuration that cannot be read, or a store that cannot be opened from it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// There is no home folder to read: neither `HERMES_HOME` nor `HOME` is set.
    #[error("neither HERMES_HOME nor HOME is set")]
    NoHome,
    /// `config.toml` exists but cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// `config.toml` is not valid: the file, the line where one is known, then the key and what
    /// was expected.
    #[error("{}: {}{message}", path.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based) the bad value is on, when the parser knows it.
        line: Option<usize>,
        /// The key and what is wrong with it.
        message: String,
    },
    /// A database URL is not valid; the store's message never shows its password.
    #[error("{origin}: {error}")]
    DatabaseUrl {
        /// Where the URL came from: `HERMES_DATABASE_URL` or `[store] url`.
        origin: &'static str,
        /// Why it is refused.
        error: StoreError,
    },
    /// `[serve] listen` (or the default it falls back to) is not a socket address.
    #[error("[serve] listen = {text:?} is not an address like 127.0.0.1:8642")]
    Listen {
        /// The text given.
        text: String,
        /// Why it does not parse.
        #[source]
        source: std::net::AddrParseError,
    },
    /// The engine could not open the database in the home folder.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The store named by a URL could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
}
