//! The real browser the inspector's end-to-end test drives (hermes-cli's `inspector` test):
//! Debian's `chromium`, through `playwright-core`, which `cargo xtask ci` installs, pinned, under
//! `target/browser/node` (from hermes-cli's `tests/browser/package.json` and its lock) and names
//! in `HERMES_BROWSER_NODE`.
//!
//! Without them the test records itself as skipped ([`skip::group::BROWSER`]), unless
//! `HERMES_REQUIRE_BROWSER` (or `HERMES_REQUIRE_CLIENTS`) is set: then it fails.

use std::path::{Path, PathBuf};

use crate::skip;

/// The folder holding `node_modules/playwright-core` (`target/browser/node`).
pub const NODE_VAR: &str = "HERMES_BROWSER_NODE";
/// Set (not empty, not `0`): a browser that cannot be found fails its test instead of skipping.
pub const REQUIRE_VAR: &str = "HERMES_REQUIRE_BROWSER";
/// Debian's chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// What the test needs: the folder holding `playwright-core` and the chromium binary.
#[derive(Clone, Debug)]
pub struct Browser {
    /// The folder whose `node_modules` holds `playwright-core`.
    pub node: PathBuf,
    /// The chromium binary.
    pub chromium: PathBuf,
}

/// The browser, when both halves are there; else `None`, the test recorded as skipped.
///
/// # Panics
/// When `HERMES_REQUIRE_BROWSER` or `HERMES_REQUIRE_CLIENTS` is set and a half is missing.
pub fn find() -> Option<Browser> {
    let node = std::env::var_os(NODE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let problem = match &node {
        None => format!("{NODE_VAR} is not set"),
        Some(node) if !node.join("node_modules/playwright-core").is_dir() => {
            format!(
                "{NODE_VAR}={} holds no node_modules/playwright-core",
                node.display()
            )
        }
        Some(_) if !Path::new(CHROMIUM).is_file() => format!("{CHROMIUM} is not installed"),
        Some(node) => {
            return Some(Browser {
                node: node.clone(),
                chromium: PathBuf::from(CHROMIUM),
            });
        }
    };
    assert!(
        !skip::flag(REQUIRE_VAR) && !skip::flag(crate::clients::REQUIRE_VAR),
        "{REQUIRE_VAR} (or {}) is set but {problem}: run `cargo xtask ci`, which installs \
         playwright-core under target/browser and Debian's chromium",
        crate::clients::REQUIRE_VAR
    );
    skip::skipped(
        skip::group::BROWSER,
        &format!("{problem} (`cargo xtask ci` installs chromium and playwright-core and sets it)"),
    );
    None
}
