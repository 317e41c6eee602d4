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
//! This crate reads case files; `hermes-core` itself does no IO.

mod case;
mod invariants;
pub mod live;

use std::fmt;
use std::path::{Path, PathBuf};

use hermes_core::{RouteTable, Wire};

pub use case::{Case, CaseExpect, SCHEMA_VERSION, load_cases, parse_case};
pub use invariants::check_invariants;

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

/// The suite: a route table and where its case files live.
pub struct Suite<'t> {
    table: &'t RouteTable,
    cases_dir: Option<PathBuf>,
    require_cases: bool,
    wires: Vec<&'t dyn Wire>,
}

impl fmt::Debug for Suite<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wires: Vec<&str> = self.wires.iter().map(|w| w.id()).collect();
        f.debug_struct("Suite")
            .field("cases_dir", &self.cases_dir)
            .field("require_cases", &self.require_cases)
            .field("wires", &wires)
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
            wires: Vec::new(),
        }
    }

    /// Registers a native wire: case files naming its id (`"wire": "…"`) are built through it
    /// and checked against `expect.body`.
    pub fn wire(mut self, wire: &'t dyn Wire) -> Self {
        self.wires.push(wire);
        self
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
                            failure: case.run_with(self.table, id, &self.wires).err(),
                            name,
                        });
                    }
                }
            }
            report.checks.extend(check_invariants(self.table, id));
        }
        report
    }

    /// Runs every check for every route.
    pub fn run(&self) -> Report {
        self.run_routes(&[])
    }
}
