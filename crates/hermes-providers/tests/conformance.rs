//! The conformance suite over the built-in route table: case files under `tests/cases/<route>/`
#![allow(clippy::unwrap_used, clippy::expect_used)]
//! plus the invariants of `hermes-conformance`. Prints one line per route and `N passed, M failed`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let only: Vec<&str> = only.iter().map(String::as_str).collect();
    let table = hermes_providers::builtin_table();
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let report = hermes_conformance::Suite::new(&table)
        .cases_dir(cases)
        .run_routes(&only);
    println!("{report}");
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
