//! The acme route passes the same conformance suite as the built-ins, through the public API
//! only: its case files, every invariant, and live runs against the simulator scripted with
//! Acme's contract (`acme_sim`, built here: hermes-sim has no `acme` profile). Acme's own wire
//! ("Acme JSON") runs the same live tool loop against the loopback Acme JSON server
//! (`acme_route::server`, an older deployment that refuses `thinking`), checked by the suite's
//! wire-generic [`check_exchanges`]: every signed thought back byte for byte, the refused field
//! dropped after one retry.

mod acme_sim;

use std::process::ExitCode;
use std::sync::Arc;

use acme_route::server::{AcmeServer, MODEL};
use hermes_conformance::Check;
use hermes_conformance::live::{NativeCheck, check_exchanges, check_received, drive_tool_loop};
use hermes_core::{CarrierSet, ResolveOptions, RouteTable, RouteTarget};
use hermes_providers::{ChatTransport, Credentials, WireDescriptor, WireTarget};
use hermes_wire_chat::{Endpoint, HttpChat};

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

/// The Acme JSON wire, built by its descriptor as the engine builds it, through the tool loop
/// and the follow-up against a strict loopback server.
async fn live_wire(table: &RouteTable, stream: bool) -> Result<(), String> {
    let server = AcmeServer::strict().await;
    let wire = acme_route::ACME_JSON.build(
        &WireTarget::new("acme-json", MODEL, &server.uri()),
        ChatTransport::new().map_err(|e| e.to_string())?,
        Credentials::default(),
    );
    let target = RouteTarget::new("acme-json", Some(&server.uri()), MODEL);
    let decision = table.resolve(&target, ResolveOptions::default());
    let run = drive_tool_loop(wire.as_ref(), &decision, stream).await?;
    check_exchanges(&server.exchanges(), run.requests, &["thinking"])
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
    let route = "live acme: 3-step tool loop + follow-up";
    let wire = "live acme-json wire: 3-step tool loop + follow-up, thoughts byte for byte, `thinking` refused once";
    for (check, stream) in [(route, false), (route, true), (wire, false), (wire, true)] {
        let result = match &runtime {
            Ok(rt) if check == route => rt.block_on(live(&table, stream)),
            Ok(rt) => rt.block_on(live_wire(&table, stream)),
            Err(e) => Err(e.to_string()),
        };
        report.checks.push(Check {
            route: acme_route::ROUTE_ID.to_owned(),
            name: format!(
                "{check}, {}",
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
