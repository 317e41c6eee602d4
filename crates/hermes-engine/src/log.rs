//! The store adapter: the driver's [`SessionLog`] over a stored session, one transaction per
//! call, errors typed by the store.

use hermes_core::driver::{LogError, SessionLog};
use hermes_core::{CarrierSet, Message, RouteTarget, Verdicts};
use hermes_store::Store;
use serde_json::Value;

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

    async fn add_usage(&self, usage: &Value) -> Result<(), LogError> {
        let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0);
        Ok(self
            .store
            .add_usage(self.session, n("prompt_tokens"), n("completion_tokens"))
            .await?)
    }
}
