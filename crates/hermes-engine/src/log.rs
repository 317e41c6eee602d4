//! The store adapter: the driver's [`SessionLog`] over a stored session, one transaction per
//! call, errors typed by the store.

use hermes_core::driver::{LogError, SessionLog};
use hermes_core::{CarrierSet, Message, RouteTarget, Usage, Verdicts, WireVerdicts};
use hermes_store::Store;

/// Stores a driven session as the driver goes.
pub(crate) struct StoreLog<'a> {
    pub(crate) store: &'a Store,
    pub(crate) session: &'a str,
}

#[async_trait::async_trait]
impl SessionLog for StoreLog<'_> {
    async fn append(&self, messages: &[Message]) -> Result<(), LogError> {
        Ok(self.store.append(self.session, messages).await?)
    }

    async fn record_verdict(
        &self,
        target: &RouteTarget,
        carriers: CarrierSet,
    ) -> Result<Verdicts, LogError> {
        Ok(self
            .store
            .record_verdict(self.session, target, carriers)
            .await?)
    }

    async fn record_wire_verdict(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, LogError> {
        Ok(self
            .store
            .record_wire_verdict(self.session, wire, target, fields)
            .await?)
    }

    async fn add_usage(&self, usage: &Usage) -> Result<(), LogError> {
        Ok(self.store.add_usage(self.session, usage).await?)
    }
}
