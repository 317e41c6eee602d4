//! The acme route passes the same conformance suite as the built-ins: its case files and every
//! invariant, through the public API only.

use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let mut table = hermes_providers::builtin_table();
    table.register_first(Arc::new(acme_route::AcmeRoute::new()));
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let report = hermes_conformance::Suite::new(&table)
        .cases_dir(cases)
        .run_routes(&[acme_route::ROUTE_ID]);
    println!("{report}");
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
