//! `hermes sim serve`: the strict provider simulator as a standalone loopback server.

use crate::cli::SimServeArgs;
use crate::error::UsageError;

/// Runs `hermes sim serve` until killed; the first stdout line is the base URL.
pub(crate) fn serve(args: &SimServeArgs) -> anyhow::Result<()> {
    hermes_engine::settle::sim_profile(&args.profile).map_err(|e| UsageError(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let profile = hermes_sim::Profile::builtin(&args.profile)?;
        // The signing key: the environment's (for simulators shared between processes), else
        // the simulator's default.
        let key = std::env::var(hermes_sim::KEY_ENV)
            .ok()
            .filter(|k| !k.is_empty())
            .map_or_else(|| hermes_sim::DEFAULT_KEY.to_vec(), String::into_bytes);
        let sim = hermes_sim::Sim::builder(profile)
            .key(key)
            .port(args.port)
            .start()
            .await?;
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", sim.base_url())?;
            out.flush()?;
        }
        sim.serve().await?;
        anyhow::Ok(())
    })
}
