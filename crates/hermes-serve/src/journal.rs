//! The journal: what each of the latest client requests did, kept in memory on this replica for
//! the admin API (`/admin/v1/…`) and the inspector (`/ui`) — its tenant and session, how long it
//! took, its upstream requests, what happened to its carriers (the outcomes `--explain` and
//! the `hermes_carriers_total` metric name), the wires' notices and the refusals learned. The
//! store keeps the conversation; the journal keeps why each request sent what it sent, which
//! the store does not. At most [`Journal::KEEP`] requests are kept (the oldest go first), and
//! the bodies sent upstream of the latest [`Journal::KEEP_BODIES`] only (at most
//! [`Journal::BODY_BYTES`] in all); no key is in it (keys travel in headers).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use hermes_core::CarrierCounts;
use serde::Serialize;

/// One upstream request of a client request.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Upstream {
    /// The wire it went over.
    pub(crate) wire: &'static str,
    /// The provider.
    pub(crate) provider: String,
    /// Its HTTP status when it failed with one.
    pub(crate) status: Option<u16>,
    /// Whether it was answered.
    pub(crate) ok: bool,
    /// How long it took, milliseconds.
    pub(crate) ms: u64,
}

/// A refusal the upstream answered, and the carriers it learned to leave out.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Refusal {
    /// The carriers now refused.
    pub(crate) carriers: Vec<&'static str>,
    /// The refusal's status.
    pub(crate) status: Option<u16>,
}

/// One client request, as journaled.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Entry {
    /// Its number on this replica (from 1), by which its bodies are asked for.
    pub(crate) id: u64,
    /// How many of its upstream bodies are still kept ([`Journal::body`]).
    pub(crate) bodies: usize,
    /// The bodies it sent upstream, in order, while kept.
    #[serde(skip)]
    pub(crate) sent: Vec<Arc<[u8]>>,
    /// When it arrived, Unix milliseconds.
    pub(crate) at: i64,
    /// How long it took until its reply was whole (or it failed), milliseconds.
    pub(crate) ms: u64,
    /// Its tenant.
    pub(crate) tenant: String,
    /// Its session, once the turn was stored (`None`: it failed before).
    pub(crate) session: Option<String>,
    /// Its upstream requests, in order.
    pub(crate) upstream: Vec<Upstream>,
    /// What happened to the history's carriers, summed over its upstream requests.
    #[serde(serialize_with = "by_outcome")]
    pub(crate) carriers: CarrierCounts,
    /// The wires' notices (why a request's copy of the history changed).
    pub(crate) notices: Vec<String>,
    /// Refusals the upstream answered.
    pub(crate) refusals: Vec<Refusal>,
    /// Tokens of its replies: input, output, reasoning.
    pub(crate) tokens: [u64; 3],
}

/// [`CarrierCounts`] serialised as an object of its outcomes' counts, by the metric's label, in
/// `--explain`'s order ([`CarrierCounts::outcomes`]).
pub(crate) fn by_outcome<S: serde::Serializer>(
    counts: &CarrierCounts,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(counts.outcomes())
}

/// The latest requests of this replica.
#[derive(Default)]
pub(crate) struct Journal {
    entries: Mutex<Kept>,
}

/// The entries, the last id given, and how many entries hold bodies.
#[derive(Default)]
struct Kept {
    entries: VecDeque<Entry>,
    last_id: u64,
    with_bodies: usize,
}

impl Journal {
    /// How many requests are kept.
    pub(crate) const KEEP: usize = 20_000;

    /// How many requests' bodies are kept.
    pub(crate) const KEEP_BODIES: usize = 64;

    /// How many bytes of bodies are kept at most, in all.
    pub(crate) const BODY_BYTES: usize = 64 * 1024 * 1024;

    /// Keeps `entry` (numbered here), the oldest going when [`Journal::KEEP`] are kept, and
    /// the bodies of all but the latest [`Journal::KEEP_BODIES`] (within
    /// [`Journal::BODY_BYTES`]) dropped.
    pub(crate) fn push(&self, mut entry: Entry) {
        let Ok(mut kept) = self.entries.lock() else {
            return;
        };
        kept.last_id += 1;
        entry.id = kept.last_id;
        entry.bodies = entry.sent.len();
        if entry.bodies > 0 {
            kept.with_bodies += 1;
        }
        if kept.entries.len() >= Self::KEEP
            && let Some(gone) = kept.entries.pop_front()
            && !gone.sent.is_empty()
        {
            kept.with_bodies -= 1;
        }
        kept.entries.push_back(entry);
        let (mut seen, mut count, mut bytes, mut dropped) = (0, 0, 0, 0);
        let held = kept.with_bodies;
        for e in kept.entries.iter_mut().rev() {
            if seen == held {
                break;
            }
            if e.sent.is_empty() {
                continue;
            }
            seen += 1;
            count += 1;
            bytes += e.sent.iter().map(|b| b.len()).sum::<usize>();
            if count > Self::KEEP_BODIES || bytes > Self::BODY_BYTES {
                e.sent.clear();
                e.bodies = 0;
                dropped += 1;
            }
        }
        kept.with_bodies -= dropped;
    }

    /// Body `n` (from 0) that request `id` sent upstream, while kept.
    pub(crate) fn body(&self, id: u64, n: usize) -> Option<Arc<[u8]>> {
        let kept = self.entries.lock().ok()?;
        let entry = kept.entries.iter().rev().find(|e| e.id == id)?;
        entry.sent.get(n).cloned()
    }

    /// The kept requests of `session`, oldest first.
    pub(crate) fn of_session(&self, session: &str) -> Vec<Entry> {
        self.entries.lock().map_or_else(
            |_| Vec::new(),
            |kept| {
                kept.entries
                    .iter()
                    .filter(|e| e.session.as_deref() == Some(session))
                    .cloned()
                    .collect()
            },
        )
    }

    /// Every kept request that arrived at or after `since` (Unix ms), oldest first.
    pub(crate) fn since(&self, since: i64) -> Vec<Entry> {
        self.entries.lock().map_or_else(
            |_| Vec::new(),
            |kept| {
                kept.entries
                    .iter()
                    .filter(|e| e.at >= since)
                    .cloned()
                    .collect()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_body(n: u8) -> Entry {
        Entry {
            session: Some("s".into()),
            sent: vec![Arc::from(vec![n; 10])],
            ..Entry::default()
        }
    }

    #[test]
    fn only_the_latest_requests_keep_their_bodies() {
        let journal = Journal::default();
        let total = Journal::KEEP_BODIES + 3;
        for n in 0..total {
            journal.push(with_body(n as u8));
        }
        let entries = journal.of_session("s");
        assert_eq!(entries.len(), total);
        assert_eq!(
            entries.iter().filter(|e| e.bodies == 1).count(),
            Journal::KEEP_BODIES
        );
        assert!(journal.body(1, 0).is_none(), "the oldest body is dropped");
        let last = entries.last().unwrap().id;
        assert_eq!(journal.body(last, 0).unwrap()[0], (total - 1) as u8);
        assert!(journal.body(last, 1).is_none());
    }
}
