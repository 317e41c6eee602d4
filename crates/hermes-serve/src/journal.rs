//! The journal: what each of the latest client requests did, kept in memory on this replica for
//! the admin API (`/admin/v1/…`) and the inspector (`/ui`) — its tenant and session, how long it
//! took, its upstream requests, what happened to its carriers (the outcomes `--explain` and
//! the `hermes_carriers_total` metric name), the wires' notices and the refusals learned. The
//! store keeps the conversation; the journal keeps why each request sent what it sent, which
//! the store does not. At most [`Journal::KEEP`] requests are kept (the oldest go first);
//! nothing of a request's text, and no key, is in it.

use std::collections::VecDeque;
use std::sync::Mutex;

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
    pub(crate) carriers: Carriers,
    /// The wires' notices (why a request's copy of the history changed).
    pub(crate) notices: Vec<String>,
    /// Refusals the upstream answered.
    pub(crate) refusals: Vec<Refusal>,
    /// Tokens of its replies: input, output, reasoning.
    pub(crate) tokens: [u64; 3],
}

/// [`CarrierCounts`], serialisable, by outcome.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub(crate) struct Carriers {
    pub(crate) reattached: u64,
    pub(crate) passed_through: u64,
    pub(crate) demoted: u64,
    pub(crate) dropped_provenance: u64,
    pub(crate) missing: u64,
    pub(crate) dropped_prefix: u64,
    pub(crate) dropped_upstream: u64,
}

impl Carriers {
    /// Adds `counts`.
    pub(crate) fn add(&mut self, counts: &CarrierCounts) {
        self.reattached += counts.reattached;
        self.passed_through += counts.passed_through;
        self.demoted += counts.demoted;
        self.dropped_provenance += counts.dropped_provenance;
        self.missing += counts.missing;
        self.dropped_prefix += counts.dropped_prefix;
        self.dropped_upstream += counts.dropped_upstream;
    }

    /// Adds `other`.
    pub(crate) fn merge(&mut self, other: &Carriers) {
        self.reattached += other.reattached;
        self.passed_through += other.passed_through;
        self.demoted += other.demoted;
        self.dropped_provenance += other.dropped_provenance;
        self.missing += other.missing;
        self.dropped_prefix += other.dropped_prefix;
        self.dropped_upstream += other.dropped_upstream;
    }

    /// Every outcome with its count, by the metric's label, in `--explain`'s order.
    pub(crate) fn outcomes(&self) -> [(&'static str, u64); 7] {
        [
            ("reattached", self.reattached),
            ("passed_through", self.passed_through),
            ("demoted", self.demoted),
            ("dropped_provenance", self.dropped_provenance),
            ("missing", self.missing),
            ("dropped_prefix", self.dropped_prefix),
            ("dropped_upstream", self.dropped_upstream),
        ]
    }
}

/// The latest requests of this replica.
#[derive(Default)]
pub(crate) struct Journal {
    entries: Mutex<VecDeque<Entry>>,
}

impl Journal {
    /// How many requests are kept.
    pub(crate) const KEEP: usize = 20_000;

    /// Keeps `entry`, the oldest going when [`Journal::KEEP`] are kept.
    pub(crate) fn push(&self, entry: Entry) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= Self::KEEP {
                entries.pop_front();
            }
            entries.push_back(entry);
        }
    }

    /// The kept requests of `session`, oldest first.
    pub(crate) fn of_session(&self, session: &str) -> Vec<Entry> {
        self.entries.lock().map_or_else(
            |_| Vec::new(),
            |entries| {
                entries
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
            |entries| entries.iter().filter(|e| e.at >= since).cloned().collect(),
        )
    }
}
