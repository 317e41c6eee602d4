//! Why an engine operation failed, typed so a front end can choose its exit code and wording.

/// Why an engine operation failed. Everything stored before the failure stays stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The way the command was called is wrong (a missing or unknown choice): exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A provider name nothing knows, with no base URL to go to (exit code 2); the message
    /// suggests the nearest known name. The front end may add how to list them.
    #[error("{0}")]
    UnknownProvider(String),
    /// A failure the user can act on (a missing key, an untrusted URL): exit code 1.
    #[error("{0}")]
    Failed(String),
    /// A key would go to a base URL the user has not confirmed (exit code 1). The message says
    /// what was refused; the front end adds how to confirm it on its own command line.
    #[error("{}", refusal.message(base_url, key_var))]
    KeyRefused {
        /// Why the key may not go there.
        refusal: KeyRefusal,
        /// The base URL the key would have gone to.
        base_url: String,
        /// The variable that holds the key.
        key_var: String,
    },
    /// The provider's wire cannot be used by this build (the same error in `chat` and
    /// `preview`); every built-in provider's wire is built today.
    #[error("{0}")]
    Unsupported(String),
    /// Another holder (another process, or another request of a server) is driving the
    /// session and did not let go within the wait (exit code 1); nothing was stored. A server
    /// maps it to "conflict, try again" without reading the text.
    #[error(
        "session {session} is in use by another process ({holder}); nothing was stored — try again when it finishes"
    )]
    Busy {
        /// The session asked for.
        session: String,
        /// Who holds it (`host:pid:nonce:place`).
        holder: String,
    },
    /// The store failed (a session that does not exist is `StoreError::NotFound`).
    #[error(transparent)]
    Store(#[from] hermes_store::StoreError),
    /// The turn failed.
    #[error(transparent)]
    Driver(#[from] hermes_core::driver::DriverError),
    /// The transport could not be built or a request failed.
    #[error(transparent)]
    Transport(#[from] hermes_core::TransportError),
    /// The in-process simulator could not start.
    #[error("cannot start the simulator: {0}")]
    Sim(String),
    /// A stored session holds something unreadable.
    #[error("session `{session}`: {message}")]
    Corrupt {
        /// Session id.
        session: String,
        /// What is wrong.
        message: String,
    },
}

impl EngineError {
    /// True for a usage error (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            EngineError::Usage(_) | EngineError::UnknownProvider(_)
        )
    }
}

/// Why a key may not go to a base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefusal {
    /// The URL came with a stored or imported session, not from the user.
    NotNamed,
    /// Plain http to a host that is neither loopback nor private.
    PlainHttp,
}

impl KeyRefusal {
    /// What was refused, in the user's words; how to say yes depends on the front end (the
    /// CLI names the command line that confirms it).
    pub fn message(&self, base_url: &str, key_var: &str) -> String {
        match self {
            KeyRefusal::NotNamed => format!(
                "the stored session's base URL {base_url} did not come from you (it was imported or written elsewhere), so hermes will not send your {key_var} there"
            ),
            KeyRefusal::PlainHttp => format!(
                "{base_url} is plain http to a host that is neither loopback nor private, so hermes will not send your {key_var} over it; use https, or allow it (allow_insecure_http = true in config.toml)"
            ),
        }
    }
}
