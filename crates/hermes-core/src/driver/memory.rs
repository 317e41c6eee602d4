//! The session log in memory ([`MemoryLog`]).

#[cfg(test)]
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::driver::{LogError, SessionLog};
use crate::message::Message;
use crate::route::CarrierSet;
use crate::target::RouteTarget;
use crate::transport::Usage;
use crate::verdict::{Verdicts, WireVerdicts};

/// A session log in memory: what a driven session stores, nothing persisted. For a run whose
/// stored history is read back afterwards ([`MemoryLog::messages`]): the conformance suite's
/// live runs and the tests that drive a wire without a store. It keeps every message appended,
/// the verdicts and wire verdicts recorded (merged as a store merges them) and the usage
/// counted; it never fails.
#[derive(Debug, Default)]
pub struct MemoryLog {
    /// Every message appended, in order.
    pub(crate) messages: Mutex<Vec<Message>>,
    /// The verdicts recorded; none until the first.
    pub(crate) verdicts: Mutex<Option<Verdicts>>,
    /// The wire verdicts recorded.
    pub(crate) wire_verdicts: Mutex<WireVerdicts>,
    /// The usage counted.
    pub(crate) usage: Mutex<Usage>,
    /// Each append's roles, in order.
    #[cfg(test)]
    pub(crate) batches: Mutex<Vec<Vec<String>>>,
    /// Fail the append after this many succeed.
    #[cfg(test)]
    pub(crate) fail_appends: Mutex<Option<usize>>,
    /// Where the verdicts' saves are noted (`save_verdicts`, `save_{wire}_verdicts`), beside
    /// what a test's wire notes.
    #[cfg(test)]
    pub(crate) journal: Arc<Mutex<Vec<String>>>,
}

impl MemoryLog {
    /// Every message appended so far, in order.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.messages).clone()
    }

    /// A test's hooks on an append: the roles noted, and the failure it asked for.
    #[cfg(test)]
    fn on_append(&self, messages: &[Message]) -> Result<(), LogError> {
        lock(&self.batches).push(
            messages
                .iter()
                .map(|m| m.role.as_str().to_owned())
                .collect(),
        );
        let mut fail = lock(&self.fail_appends);
        match fail.as_mut() {
            Some(0) => Err("disk full".into()),
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// The value behind `mutex`, also after a panic elsewhere (a log in memory holds no invariant a
/// half-done push could break).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait::async_trait]
impl SessionLog for MemoryLog {
    async fn append(&self, messages: &[Message]) -> Result<(), LogError> {
        #[cfg(test)]
        self.on_append(messages)?;
        lock(&self.messages).extend_from_slice(messages);
        Ok(())
    }

    async fn record_verdict(
        &self,
        target: &RouteTarget,
        carriers: CarrierSet,
    ) -> Result<Verdicts, LogError> {
        #[cfg(test)]
        lock(&self.journal).push("save_verdicts".into());
        let mut stored = lock(&self.verdicts);
        let verdicts = stored.get_or_insert_default();
        verdicts.record(target, carriers);
        Ok(verdicts.clone())
    }

    async fn record_wire_verdict(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, LogError> {
        #[cfg(test)]
        lock(&self.journal).push(format!("save_{wire}_verdicts"));
        let mut stored = lock(&self.wire_verdicts);
        stored.record(wire, target, fields);
        Ok(stored.clone())
    }

    async fn add_usage(&self, usage: &Usage) -> Result<(), LogError> {
        let mut total = lock(&self.usage);
        *total = total.plus(*usage);
        Ok(())
    }
}
