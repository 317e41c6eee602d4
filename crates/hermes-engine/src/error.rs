//! Why an engine operation failed, typed so a front end can choose its exit code and wording.

/// Why an engine operation failed. Everything stored before the failure stays stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The way the command was called is wrong (a missing or unknown choice): exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A failure the user can act on (a missing key, an untrusted URL): exit code 1.
    #[error("{0}")]
    Failed(String),
    /// The provider's wire cannot be used by this build (the same error in `chat` and
    /// `preview`); every built-in provider's wire is built today.
    #[error("{0}")]
    Unsupported(String),
    /// The store failed.
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
        matches!(self, EngineError::Usage(_))
    }
}
