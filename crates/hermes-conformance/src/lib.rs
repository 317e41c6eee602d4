//! hermes-conformance: the route conformance suite, as a library any route author can call.
//!
//! Two kinds of checks run for every route of a [`RouteTable`]:
//! - **cases**: data files (`<dir>/<route-id>/<name>.json`, see [`Case`]) giving an input
//!   history and target and the exact JSON of every assistant wire message;
//! - **invariants**: properties every route must keep whatever it declares, checked on a
//!   built-in corpus of histories (no carrier outside the route's set, never `""` or `null`
//!   reasoning, the pad on must-echo routes, no private native record item, opaque items only
//!   to the model that minted them and then byte for byte, verdicts honoured, input unchanged,
//!   shaping idempotent).
//!
//! Native wires (a [`Wire`] other than chat completions) are proven the same two ways: case
//! files naming the wire pin its whole body (`expect.body`, byte for byte), and
//! [`Suite::wire_invariants`] runs the wire over a built-in corpus of histories
//! ([`check_wire_invariants`]: input unchanged, same bytes twice, opaque items exactly as stored
//! and only to their minter, no stored bookkeeping key on the wire, and on Anthropic Messages
//! and Bedrock Converse bodies the body's own schema, every tool call answered in the next user
//! turn and no cache breakpoint on a thinking block). A wire whose provider knows the corpus's
//! models by other ids names its own ([`Suite::wire_models`], [`check_wire_invariants_for`]).
//!
//! This crate reads case files; `hermes-core` itself does no IO.

mod case;
mod invariants;
pub mod live;
mod wire_invariants;

use std::fmt;
use std::path::{Path, PathBuf};

use hermes_core::{RouteTable, Wire};

pub use case::{Case, CaseExpect, SCHEMA_VERSION, load_cases, parse_case};
pub use invariants::check_invariants;
pub use wire_invariants::{WIRE_CORPUS_MODELS, check_wire_invariants, check_wire_invariants_for};

/// What a native wire is built for: a case's (or an invariant run's) provider, base URL and
/// model, handed to a factory registered with [`Suite::wire_factory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireTarget<'a> {
    /// Provider name as the case gives it.
    pub provider: &'a str,
    /// Base URL, if any (the whole URL, path included: `/anthropic` relays are told apart by
    /// it).
    pub base_url: Option<&'a str>,
    /// Target model.
    pub model: &'a str,
}

/// Builds a wire for one target, or declines (`None`: the wire registered with
/// [`Suite::wire`] under the same id is used).
pub type WireFactory<'t> = dyn Fn(&WireTarget<'_>) -> Option<Box<dyn Wire>> + 't;

/// The native wires a suite builds bodies through: fixed wires ([`Suite::wire`]) and
/// factories ([`Suite::wire_factory`]), looked up by wire id.
#[derive(Default)]
pub(crate) struct Wires<'t> {
    pub(crate) fixed: Vec<&'t dyn Wire>,
    pub(crate) factories: Vec<(String, Box<WireFactory<'t>>)>,
}

/// A wire chosen for one target: registered, or built for it.
pub(crate) enum Chosen<'a> {
    Borrowed(&'a dyn Wire),
    Owned(Box<dyn Wire>),
}

impl Chosen<'_> {
    pub(crate) fn get(&self) -> &dyn Wire {
        match self {
            Chosen::Borrowed(w) => *w,
            Chosen::Owned(w) => w.as_ref(),
        }
    }
}

impl<'t> Wires<'t> {
    /// Fixed wires only (the [`Case::run_with`] of earlier versions).
    pub(crate) fn fixed(wires: &[&'t dyn Wire]) -> Self {
        Wires {
            fixed: wires.to_vec(),
            factories: Vec::new(),
        }
    }

    /// The wire `id` for `target`: a factory registered for the id builds it unless it
    /// declines, else the fixed wire of that id.
    pub(crate) fn choose(&self, id: &str, target: &WireTarget<'_>) -> Result<Chosen<'_>, String> {
        for (_, factory) in self.factories.iter().filter(|(fid, _)| fid == id) {
            if let Some(wire) = factory(target) {
                if wire.id() != id {
                    return Err(format!(
                        "the `{id}` wire factory built a `{}` wire",
                        wire.id()
                    ));
                }
                return Ok(Chosen::Owned(wire));
            }
        }
        self.fixed
            .iter()
            .find(|w| w.id() == id)
            .map(|w| Chosen::Borrowed(*w))
            .ok_or_else(|| {
                format!(
                    "no `{id}` wire registered with the suite for base URL {} (Suite::wire or Suite::wire_factory)",
                    target.base_url.unwrap_or("(none)")
                )
            })
    }

    fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.fixed.iter().map(|w| w.id()).collect();
        ids.extend(self.factories.iter().map(|(id, _)| id.as_str()));
        ids
    }
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Route id.
    pub route: String,
    /// What was checked (case file name or invariant name).
    pub name: String,
    /// `None` when it passed, else what went wrong.
    pub failure: Option<String>,
}

/// All checks of a run, in order.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every check.
    pub checks: Vec<Check>,
}

impl Report {
    /// Number of passed checks.
    pub fn passed(&self) -> usize {
        self.checks.iter().filter(|c| c.failure.is_none()).count()
    }

    /// Number of failed checks.
    pub fn failed(&self) -> usize {
        self.checks.len() - self.passed()
    }

    /// Adds checks from another report.
    pub fn extend(&mut self, other: Report) {
        self.checks.extend(other.checks);
    }
}

impl fmt::Display for Report {
    /// One line per route, then each failure, then `N passed, M failed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut routes: Vec<&str> = Vec::new();
        for c in &self.checks {
            if !routes.contains(&c.route.as_str()) {
                routes.push(&c.route);
            }
        }
        for route in &routes {
            let mine: Vec<&Check> = self.checks.iter().filter(|c| c.route == *route).collect();
            let failed = mine.iter().filter(|c| c.failure.is_some()).count();
            let cases = mine
                .iter()
                .filter(|c| c.name.ends_with(".json") || c.name == "case files")
                .count();
            let live = mine.iter().filter(|c| c.name.starts_with("live")).count();
            let status = if failed == 0 {
                "ok".to_owned()
            } else {
                format!("FAILED ({failed})")
            };
            let live_text = if live > 0 {
                format!(", {live} live")
            } else {
                String::new()
            };
            writeln!(
                f,
                "route {route}: {cases} cases, {} invariants{live_text} ... {status}",
                mine.len() - cases - live
            )?;
        }
        for c in &self.checks {
            if let Some(why) = &c.failure {
                writeln!(f, "\nFAILED {} / {}:\n{why}", c.route, c.name)?;
            }
        }
        write!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

/// A native-wire invariant run registered with [`Suite::wire_invariants`].
#[derive(Clone, Debug)]
struct WireRun {
    wire: String,
    provider: String,
    base_url: Option<String>,
}

/// The suite: a route table and where its case files live.
pub struct Suite<'t> {
    table: &'t RouteTable,
    cases_dir: Option<PathBuf>,
    require_cases: bool,
    wires: Wires<'t>,
    wire_runs: Vec<WireRun>,
    wire_models: Vec<(String, [String; 2])>,
}

impl fmt::Debug for Suite<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Suite")
            .field("cases_dir", &self.cases_dir)
            .field("require_cases", &self.require_cases)
            .field("wires", &self.wires.ids())
            .field("wire_invariants", &self.wire_runs)
            .field("wire_models", &self.wire_models)
            .finish()
    }
}

impl<'t> Suite<'t> {
    /// A suite over every route of `table`.
    pub fn new(table: &'t RouteTable) -> Self {
        Suite {
            table,
            cases_dir: None,
            require_cases: true,
            wires: Wires::default(),
            wire_runs: Vec::new(),
            wire_models: Vec::new(),
        }
    }

    /// Registers a native wire: case files naming its id (`"wire": "…"`) are built through it
    /// and checked against `expect.body`. The wire is bound to its own target, so the cases
    /// it builds should name that target's base URL; cases on other hosts need
    /// [`Suite::wire_factory`].
    pub fn wire(mut self, wire: &'t dyn Wire) -> Self {
        self.wires.fixed.push(wire);
        self
    }

    /// Registers a factory for the wire `id`: each case naming `id` (and each
    /// [`Suite::wire_invariants`] run) gets a wire built for its own provider and base URL
    /// (Vertex, Foundry, a relay…). When the factory declines (`None`), the wire registered
    /// with [`Suite::wire`] under `id` is used.
    pub fn wire_factory(
        mut self,
        id: &str,
        factory: impl Fn(&WireTarget<'_>) -> Option<Box<dyn Wire>> + 't,
    ) -> Self {
        self.wires
            .factories
            .push((id.to_owned(), Box::new(factory)));
        self
    }

    /// Runs the native-wire invariants ([`check_wire_invariants`]) through the wire `wire_id`
    /// for `provider` at `base_url`; the checks are reported under the route that target
    /// resolves to, named `<wire> wire: …`, for the wire's models ([`Suite::wire_models`]).
    /// Register once per host family worth proving.
    pub fn wire_invariants(
        mut self,
        wire_id: &str,
        provider: &str,
        base_url: Option<&str>,
    ) -> Self {
        self.wire_runs.push(WireRun {
            wire: wire_id.to_owned(),
            provider: provider.to_owned(),
            base_url: base_url.map(str::to_owned),
        });
        self
    }

    /// Names the two models the invariants of the wire `id` run for: the ids the wire's
    /// provider knows them by (Bedrock's `us.anthropic.claude-…`, say), standing for the
    /// corpus's `model-a` and `model-b` in place of [`WIRE_CORPUS_MODELS`], so that the wire
    /// applies the replay policy those models have. Its factory is asked for the first one. The
    /// last call for an id wins.
    pub fn wire_models(mut self, id: &str, models: [&str; 2]) -> Self {
        self.wire_models.retain(|(w, _)| w != id);
        self.wire_models
            .push((id.to_owned(), models.map(str::to_owned)));
        self
    }

    /// The models the invariants of the wire `id` run for.
    fn models_for(&self, id: &str) -> [&str; 2] {
        self.wire_models
            .iter()
            .find(|(w, _)| w == id)
            .map_or(WIRE_CORPUS_MODELS, |(_, m)| [m[0].as_str(), m[1].as_str()])
    }

    /// Reads case files from `dir/<route-id>/*.json`.
    pub fn cases_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cases_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Whether a route without any case file fails (the default) or only runs its invariants.
    pub fn require_cases(mut self, required: bool) -> Self {
        self.require_cases = required;
        self
    }

    /// Runs the checks for the routes whose id is in `only` (all routes when empty).
    pub fn run_routes(&self, only: &[&str]) -> Report {
        let mut report = Report::default();
        let mut wire_checks: Vec<Check> = Vec::new();
        for run in &self.wire_runs {
            let models = self.models_for(&run.wire);
            let target = WireTarget {
                provider: &run.provider,
                base_url: run.base_url.as_deref(),
                model: models[0],
            };
            match self.wires.choose(&run.wire, &target) {
                Ok(wire) => wire_checks.extend(check_wire_invariants_for(
                    self.table,
                    wire.get(),
                    &run.provider,
                    run.base_url.as_deref(),
                    models,
                )),
                Err(e) => {
                    let decision = self.table.resolve(
                        &hermes_core::RouteTarget::new(
                            &run.provider,
                            run.base_url.as_deref(),
                            target.model,
                        ),
                        hermes_core::ResolveOptions::default(),
                    );
                    wire_checks.push(Check {
                        route: decision.id().to_owned(),
                        name: format!("{} wire invariants", run.wire),
                        failure: Some(e),
                    });
                }
            }
        }
        for route in self.table.routes() {
            let id = route.id();
            if !only.is_empty() && !only.contains(&id) {
                continue;
            }
            let cases = match &self.cases_dir {
                Some(dir) => load_cases(&dir.join(id)),
                None => Ok(Vec::new()),
            };
            match cases {
                Err(e) => report.checks.push(Check {
                    route: id.to_owned(),
                    name: "case files".to_owned(),
                    failure: Some(e),
                }),
                Ok(cases) if cases.is_empty() && self.require_cases => report.checks.push(Check {
                    route: id.to_owned(),
                    name: "case files".to_owned(),
                    failure: Some(format!(
                        "no case files for route `{id}` under {}",
                        self.cases_dir
                            .as_deref()
                            .unwrap_or(Path::new("(none)"))
                            .display()
                    )),
                }),
                Ok(cases) => {
                    for (name, case) in cases {
                        report.checks.push(Check {
                            route: id.to_owned(),
                            failure: case.run_in(self.table, id, &self.wires).err(),
                            name,
                        });
                    }
                }
            }
            report.checks.extend(check_invariants(self.table, id));
            report
                .checks
                .extend(wire_checks.iter().filter(|c| c.route == id).cloned());
        }
        report
    }

    /// Runs every check for every route.
    pub fn run(&self) -> Report {
        self.run_routes(&[])
    }
}
