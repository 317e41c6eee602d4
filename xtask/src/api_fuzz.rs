//! `cargo xtask fuzz --api`: fuzzing the gateway's HTTP API (not built yet).

/// `cargo xtask fuzz --api ARGS`.
pub(crate) fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("cargo xtask fuzz --api is not built yet")
}
