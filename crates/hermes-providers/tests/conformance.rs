//! The conformance suite over the built-in route table: case files under `tests/cases/<route>/`,
//! the invariants of `hermes-conformance`, and live runs against the strict simulator.
//! Prints the route → profile mapping, one line per route and `N passed, M failed`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod live;

use std::process::ExitCode;

fn main() -> ExitCode {
    // `cargo test` passes harness flags (e.g. `--quiet`); route ids are the other arguments.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let only: Vec<&str> = only.iter().map(String::as_str).collect();
    let table = hermes_providers::builtin_table();
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let mut report = hermes_conformance::Suite::new(&table)
        .cases_dir(cases)
        .run_routes(&only);
    println!("live route -> simulator profile:");
    for pair in live::PAIRS
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.route))
    {
        println!("  {:<15} -> {}", pair.route, pair.profile);
    }
    report.checks.extend(live::run(&table, &only));
    // Group each route's checks together for the per-route lines.
    let order: Vec<String> = table.routes().map(|r| r.id().to_owned()).collect();
    report.checks.sort_by_key(|c| {
        order
            .iter()
            .position(|id| *id == c.route)
            .unwrap_or(usize::MAX)
    });
    println!("{report}");
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
