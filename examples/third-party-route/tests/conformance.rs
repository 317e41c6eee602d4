//! The acme route passes the same conformance suite as the built-ins, through the public API
//! only: its case files, every invariant, and live runs against the simulator scripted with
//! Acme's contract (`acme_sim`, built here: hermes-sim has no `acme` profile).

mod acme_sim;

use std::process::ExitCode;
use std::sync::Arc;

use hermes_conformance::Check;
use hermes_conformance::live::{NativeCheck, check_received, drive_tool_loop};
use hermes_core::{CarrierSet, ResolveOptions, RouteTable, RouteTarget};
use hermes_providers::{ChatTransport, Endpoint, HttpChat};

async fn live(table: &RouteTable, stream: bool) -> Result<(), String> {
    let sim = hermes_sim::Sim::builder(acme_sim::profile())
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let transport = HttpChat {
        client: ChatTransport::new().map_err(|e| e.to_string())?,
        endpoint: Endpoint {
            base_url: sim.base_url(),
            api_key: None,
        },
    };
    let target = RouteTarget::new(acme_sim::NAME, Some(&sim.base_url()), acme_sim::MODEL);
    let decision = table.resolve(&target, ResolveOptions::default());
    if decision.id() != acme_route::ROUTE_ID {
        return Err(format!("resolved to `{}`", decision.id()));
    }
    let run = drive_tool_loop(&transport, &decision, stream).await?;
    let received: Vec<_> = sim
        .requests()
        .into_iter()
        .map(|r| (r.status, r.body))
        .collect();
    check_received(&received, run.requests, CarrierSet::RC, NativeCheck::None)
}

fn main() -> ExitCode {
    let mut table = hermes_providers::builtin_table();
    table.register_first(Arc::new(acme_route::AcmeRoute::new()));
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let mut report = hermes_conformance::Suite::new(&table)
        .cases_dir(cases)
        .run_routes(&[acme_route::ROUTE_ID]);
    println!(
        "live route -> simulator profile:\n  {:<15} -> {}",
        acme_route::ROUTE_ID,
        acme_sim::NAME
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    for stream in [false, true] {
        let result = match &runtime {
            Ok(rt) => rt.block_on(live(&table, stream)),
            Err(e) => Err(e.to_string()),
        };
        report.checks.push(Check {
            route: acme_route::ROUTE_ID.to_owned(),
            name: format!(
                "live acme: 3-step tool loop + follow-up, {}",
                if stream { "streamed" } else { "non-streamed" }
            ),
            failure: result.err(),
        });
    }
    println!("{report}");
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
