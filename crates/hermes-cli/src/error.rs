//! The CLI's error kinds: a usage error (exit code 2) as opposed to a failure the user can act
//! on (exit code 1).

/// An error that is the user's way of calling hermes (exit code 2).
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The exit code of a failed command: 2 for a usage error, 1 otherwise.
pub(crate) fn exit_code(err: &anyhow::Error) -> u8 {
    let usage = err.downcast_ref::<UsageError>().is_some()
        || err
            .downcast_ref::<hermes_engine::EngineError>()
            .is_some_and(hermes_engine::EngineError::is_usage);
    if usage { 2 } else { 1 }
}
