//! `hermes config path|show`: where `config.toml` is, and what hermes reads from it (hermes-config
//! parses it), printed with the store URL's password redacted and every wait's effective value.

use std::io::Write as _;
use std::path::Path;

use crate::cli::ConfigCommand;

/// Runs `hermes config path|show`.
pub(crate) fn run(command: &ConfigCommand, home: &Path) -> anyhow::Result<()> {
    let path = hermes_config::path(home);
    let mut out = std::io::stdout().lock();
    match command {
        ConfigCommand::Path => writeln!(out, "{}", path.display())?,
        ConfigCommand::Show => {
            let config = hermes_config::load(home).map_err(crate::setup::error)?;
            if !path.exists() {
                writeln!(
                    out,
                    "# no file at {}; these are the defaults",
                    path.display()
                )?;
            }
            let mut shown = config.redacted();
            // Every wait's effective value, defaults included, so the limits are never a guess.
            shown.limits = config.limits.effective();
            shown.store.busy_timeout = Some(config.store.pool().busy_timeout.as_secs());
            write!(out, "{}", toml::to_string_pretty(&shown)?)?;
        }
    }
    Ok(())
}
