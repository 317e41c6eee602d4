//! `hermes sim serve`: the strict provider simulator as a standalone loopback server.

use crate::UsageError;
use crate::cli::SimServeArgs;

/// Runs `hermes sim serve` until killed; the first stdout line is the base URL.
pub(crate) fn serve(args: &SimServeArgs) -> anyhow::Result<()> {
    if !hermes_sim::PROFILES.contains(&args.profile.as_str()) {
        return Err(UsageError(format!(
            "unknown profile `{}`, expected one of: {}",
            args.profile,
            hermes_sim::PROFILES.join(", ")
        ))
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(hermes_sim::serve(&args.profile, args.port))?;
    Ok(())
}
