//! Work over a large history kept off the reactor: normalising, hashing, aligning and encoding
//! a 32 MiB history takes tens of milliseconds of CPU, during which the small requests that
//! share the runtime's worker would otherwise wait.

use crate::message::Message;

/// Histories whose content is larger than this are worked on with `block_in_place` on a
/// multi-threaded runtime.
pub(crate) const HEAVY_BYTES: usize = 256 * 1024;

/// `work` over `messages`, moved off the reactor's worker (`block_in_place`: the worker's other
/// tasks go to another worker meanwhile) when their content is larger than `HEAVY_BYTES` and
/// the runtime has other workers to take its tasks; run in place otherwise.
pub fn heavy<T>(messages: &[Message], work: impl FnOnce() -> T) -> T {
    let size: usize = messages
        .iter()
        .map(|m| m.content.as_ref().map_or(0, |c| c.get().len()))
        .sum();
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if size > HEAVY_BYTES && multi {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
