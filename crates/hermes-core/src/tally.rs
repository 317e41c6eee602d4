//! What happened to the carriers of a request on their way upstream, counted as plain data so a
//! front end can report it (the gateway's metrics) without core knowing about metrics: each
//! outcome is counted at the one place that decides it.

/// Assistant messages of one request by what happened to their carriers. Each count is made
/// where the decision is made: `reattached`, `passed_through` and `missing` when a gateway
/// client's history is lined up with the store ([`crate::reattach::align`]); `demoted` and
/// `dropped_provenance` when a wire encodes the body ([`crate::wire::Outgoing::carriers`], for
/// the chat wire from its route plans).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CarrierCounts {
    /// Equal to a stored message that holds carriers: the stored carriers go back upstream.
    pub reattached: u64,
    /// Not in the store, but the client sent carriers of its own: they go upstream unverified,
    /// as a plain proxy would pass them (docs/spec.md §10).
    pub passed_through: u64,
    /// Sent in a lesser form by a declared rule (a must-echo route's `" "` pad instead of
    /// reasoning, signed thinking sent as plain text, thinking left out of a tool loop).
    pub demoted: u64,
    /// Opaque carriers left out because another model or host minted them (provenance).
    pub dropped_provenance: u64,
    /// Not in the store and without carriers of its own (edited, or from elsewhere): nothing
    /// can be restored, the route's rule for missing reasoning applies.
    pub missing: u64,
    /// Left out because the prefix they were made after changed (system prompt, tools, an
    /// earlier message) or the account differs, on a provider that binds them (docs/spec.md §5a 2).
    pub dropped_prefix: u64,
    /// Dropped by the upstream itself (Anthropic's `input_transformations` with
    /// `drop_block`, docs/spec.md §5a 4).
    pub dropped_upstream: u64,
}

impl CarrierCounts {
    /// True when every count is zero.
    pub fn is_empty(&self) -> bool {
        *self == CarrierCounts::default()
    }

    /// Every outcome with its count, in a fixed order, by its metric label (`reattached`,
    /// `passed_through`, `demoted`, `dropped_provenance`, `missing`, `dropped_prefix`,
    /// `dropped_upstream`).
    pub fn outcomes(&self) -> [(&'static str, u64); 7] {
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

/// Sums the counts of several requests (the gateway's journal adds each upstream request's).
impl std::ops::AddAssign<&CarrierCounts> for CarrierCounts {
    fn add_assign(&mut self, other: &CarrierCounts) {
        self.reattached += other.reattached;
        self.passed_through += other.passed_through;
        self.demoted += other.demoted;
        self.dropped_provenance += other.dropped_provenance;
        self.missing += other.missing;
        self.dropped_prefix += other.dropped_prefix;
        self.dropped_upstream += other.dropped_upstream;
    }
}
