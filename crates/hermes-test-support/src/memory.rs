//! A tool set that is never called, for driver tests (their session log is
//! `hermes_core::driver::MemoryLog`).

use hermes_core::driver::Tools;

/// Tools no test calls: every call answers `unused`.
pub struct NoTools;

#[async_trait::async_trait]
impl Tools for NoTools {
    async fn call(&self, _: &str, _: &str) -> String {
        "unused".into()
    }
}
