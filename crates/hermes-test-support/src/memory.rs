//! A session log in memory and a tool set that is never called, for driver tests.

use std::sync::Mutex;

use hermes_core::driver::{LogError, SessionLog, Tools};
use hermes_core::{CarrierSet, Message, RouteTarget, Usage, Verdicts, WireVerdicts};

/// A session log in memory: what the driver appended and the wire verdicts it recorded.
#[derive(Default)]
pub struct Log {
    /// The wire verdicts recorded.
    pub wire_verdicts: Mutex<WireVerdicts>,
    /// Every message appended, in order.
    pub appended: Mutex<Vec<Message>>,
}

#[async_trait::async_trait]
impl SessionLog for Log {
    async fn append(&self, messages: &[Message]) -> Result<(), LogError> {
        self.appended.lock().unwrap().extend_from_slice(messages);
        Ok(())
    }
    async fn record_verdict(&self, _: &RouteTarget, _: CarrierSet) -> Result<Verdicts, LogError> {
        Ok(Verdicts::default())
    }
    async fn record_wire_verdict(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, LogError> {
        let mut v = self.wire_verdicts.lock().unwrap();
        v.record(wire, target, fields);
        Ok(v.clone())
    }
    async fn add_usage(&self, _: &Usage) -> Result<(), LogError> {
        Ok(())
    }
}

/// Tools no test calls: every call answers `unused`.
pub struct NoTools;

#[async_trait::async_trait]
impl Tools for NoTools {
    async fn call(&self, _: &str, _: &str) -> String {
        "unused".into()
    }
}
