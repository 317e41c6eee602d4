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

/// The CLI's advice for a typed engine error: how to give what is missing on this command line
/// (`chat` and `preview` both accept `--provider`, `--model` and `--base-url`). Empty for any
/// other error.
pub(crate) fn advice(err: &anyhow::Error) -> String {
    use hermes_engine::{EngineError, Setting};
    let Some(EngineError::Missing { setting, .. }) =
        err.chain().find_map(|e| e.downcast_ref::<EngineError>())
    else {
        return String::new();
    };
    match setting {
        Setting::Provider => ": pass --provider (try `--provider sim`, which needs no key)".into(),
        Setting::Model => ": pass --model (or set one in config.toml)".into(),
        Setting::BaseUrl => ": pass --base-url".into(),
        Setting::ResourceUrl { example } => {
            format!(": pass --base-url {example} (or set base_url in config.toml)")
        }
        _ => String::new(),
    }
}
