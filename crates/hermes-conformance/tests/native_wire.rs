//! A native wire's route proven with the same case format: the case names its wire, the suite
//! builds the body through that `Wire`, and `expect.body` pins it exactly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hermes_conformance::Suite;
use hermes_core::transport::{Delta, Reply, TransportError};
use hermes_core::{
    CarrierSet, DataRoute, Origin, Outgoing, RequestParts, RouteMatcher, RouteTable, Wire,
};
use serde_json::{Value, json};

/// A made-up wire: `{"model", "turns": [{"who", "say", "thought"?}]}`; `thought` is the field a
/// provider may refuse (its verdicts are this wire's own).
struct Turns;

#[async_trait::async_trait]
impl Wire for Turns {
    fn id(&self) -> &'static str {
        "turns"
    }

    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        let target = &parts.decision.target;
        let refused = parts.wire_verdicts.refused_for("turns", target);
        let turns: Vec<Value> = parts
            .history
            .iter()
            .map(|m| {
                let mut turn = json!({"who": m.role.as_str(),
                    "say": m.content.as_ref().and_then(|c| c.as_str().map(|s| s.into_owned()))});
                if let Some(rc) = &m.reasoning_content
                    && !refused.contains(&"thought")
                {
                    turn["thought"] = json!(rc.text());
                }
                turn
            })
            .collect();
        let body = json!({"model": target.model, "turns": turns});
        Ok(Outgoing::new(
            serde_json::to_vec(&body).unwrap(),
            false,
            vec!["thought"],
            turns.len(),
        ))
    }

    async fn send(
        &self,
        _: &Outgoing,
        _: Origin,
        _: &(dyn for<'d> Fn(Delta<'d>) + Send + Sync),
    ) -> Result<Reply, TransportError> {
        Err(TransportError::Request("not sent in this test".into()))
    }
}

fn table() -> RouteTable {
    let mut table = RouteTable::new(Arc::new(
        DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
    ));
    table.register_first(Arc::new(
        DataRoute::new("turns-route", CarrierSet::RC)
            .matching(RouteMatcher::new().providers(["turns-cloud"])),
    ));
    table
}

fn case(body: Value, wire_verdicts: Value) -> Value {
    json!({
        "schema_version": 1,
        "description": "the turns wire replays thought unless its own verdict refused it",
        "provider": "turns-cloud",
        "model": "t-1",
        "wire": "turns",
        "wire_verdicts": wire_verdicts,
        "history": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "reasoning_content": "because"}
        ],
        "expect": {"route": "turns-route", "assistant": [], "body": body}
    })
}

fn run(cases: &[(&str, Value)]) -> hermes_conformance::Report {
    let dir = tempfile::tempdir().unwrap();
    let route_dir = dir.path().join("turns-route");
    std::fs::create_dir_all(&route_dir).unwrap();
    for (name, case) in cases {
        std::fs::write(route_dir.join(name), case.to_string()).unwrap();
    }
    let table = table();
    Suite::new(&table)
        .cases_dir(dir.path())
        .wire(&Turns)
        .run_routes(&["turns-route"])
}

#[test]
fn a_native_wire_case_pins_the_exact_body() {
    let with_thought = json!({"model": "t-1", "turns": [
        {"who": "user", "say": "q"},
        {"who": "assistant", "say": "a", "thought": "because"}]});
    let refused = json!({"model": "t-1", "turns": [
        {"who": "user", "say": "q"},
        {"who": "assistant", "say": "a"}]});
    let report = run(&[
        ("replays.json", case(with_thought.clone(), json!([]))),
        (
            "refused.json",
            case(
                refused.clone(),
                json!([["turns", "turns-cloud", "", "t-1", ["thought"]]]),
            ),
        ),
    ]);
    let cases: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.name.ends_with(".json"))
        .collect();
    assert_eq!(cases.len(), 2);
    assert!(cases.iter().all(|c| c.failure.is_none()), "{report}");

    // A wrong expectation fails, naming the difference.
    let report = run(&[("wrong.json", case(refused, json!([])))]);
    let wrong = report
        .checks
        .iter()
        .find(|c| c.name == "wrong.json")
        .unwrap();
    assert!(
        wrong
            .failure
            .as_deref()
            .is_some_and(|f| f.starts_with("request body differs")),
        "{report}"
    );
}
