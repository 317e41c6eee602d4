//! A native wire's route proven with the same case format: the case names its wire, the suite
//! builds the body through that `Wire`, and `expect.body` pins it exactly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hermes_conformance::Suite;
use hermes_core::transport::{OnDelta, Reply, TransportError};
use hermes_core::{
    CarrierSet, DataRoute, Origin, Outgoing, RequestParts, RouteMatcher, RouteTable, Wire,
};
use serde_json::{Value, json};

/// A made-up wire: `{"model", "at"?, "turns": [{"who", "say", "thought"?}]}`; `thought` is the
/// field a provider may refuse (its verdicts are this wire's own); `at` is the base URL a wire
/// built by a factory was built for.
struct Turns {
    at: Option<String>,
}

const TURNS: Turns = Turns { at: None };

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
        let mut body = json!({"model": target.model});
        if let Some(at) = &self.at {
            body["at"] = json!(at);
        }
        body["turns"] = json!(turns);
        Ok(Outgoing::new(
            serde_json::to_vec(&body).unwrap(),
            false,
            vec!["thought"],
            turns.len(),
        ))
    }

    async fn send(&self, _: &Outgoing, _: Origin, _: OnDelta<'_>) -> Result<Reply, TransportError> {
        Err(TransportError::Request("not sent in this test".into()))
    }
}

/// The checks of `report` whose name `pick` selects, in order.
fn checks(
    report: &hermes_conformance::Report,
    pick: impl Fn(&str) -> bool,
) -> Vec<&hermes_conformance::Check> {
    report.checks.iter().filter(|c| pick(&c.name)).collect()
}

/// The failure of the check named `name` in `report` (`None` when it passed); panics when there
/// is no such check.
fn failure<'a>(report: &'a hermes_conformance::Report, name: &str) -> Option<&'a str> {
    let check = report.checks.iter().find(|c| c.name == name);
    check
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
        .failure
        .as_deref()
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
        .wire(&TURNS)
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
    let cases = checks(&report, |n| n.ends_with(".json"));
    assert_eq!(cases.len(), 2);
    assert!(cases.iter().all(|c| c.failure.is_none()), "{report}");

    // A wrong expectation fails, naming the difference.
    let report = run(&[("wrong.json", case(refused, json!([])))]);
    assert!(
        failure(&report, "wrong.json").is_some_and(|f| f.starts_with("request body differs")),
        "{report}"
    );
}

fn write_cases(cases: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let route_dir = dir.path().join("turns-route");
    std::fs::create_dir_all(&route_dir).unwrap();
    for (name, text) in cases {
        std::fs::write(route_dir.join(name), text).unwrap();
    }
    dir
}

fn case_at(base_url: &str, history: Value, body_text: &str) -> String {
    let head = json!({
        "schema_version": 1,
        "description": "built for its own base URL",
        "provider": "turns-cloud",
        "base_url": base_url,
        "model": "t-1",
        "wire": "turns",
        "history": history,
    })
    .to_string();
    // The body is written as text, so its escapes are exactly as given.
    format!(
        r#"{},"expect":{{"route":"turns-route","assistant":[],"body":{body_text}}}}}"#,
        head.trim_end_matches('}')
    )
}

#[test]
fn a_factory_builds_the_wire_for_each_case_and_histories_are_paired_first() {
    let plain = json!([{"role": "user", "content": "q"}]);
    let unpaired = json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": null, "reasoning_content": "cut",
         "hermes_not_replayed": true},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "user", "content": "more"}
    ]);
    let dir = write_cases(&[
        (
            "fixed.json",
            case_at(
                "https://fixed.example",
                plain.clone(),
                r#"{"model":"t-1","turns":[{"who":"user","say":"q"}]}"#,
            ),
        ),
        (
            "built.json",
            case_at(
                "https://other.example/v1",
                plain.clone(),
                r#"{"model":"t-1","at":"https://other.example/v1","turns":[{"who":"user","say":"q"}]}"#,
            ),
        ),
        (
            "paired.json",
            case_at(
                "https://fixed.example",
                unpaired,
                &json!({"model": "t-1", "turns": [
                    {"who": "user", "say": "q"},
                    {"who": "assistant", "say": null},
                    {"who": "tool", "say": hermes_core::pairing::INTERRUPTED_RESULT},
                    {"who": "user", "say": "again"},
                    {"who": "user", "say": "more"}]})
                .to_string(),
            ),
        ),
    ]);
    let table = table();
    let report = Suite::new(&table)
        .cases_dir(dir.path())
        .wire(&TURNS)
        .wire_factory("turns", |t| match t.base_url {
            Some("https://fixed.example") | None => None,
            Some(base) => Some(Box::new(Turns {
                at: Some(base.to_owned()),
            })),
        })
        .run_routes(&["turns-route"]);
    let cases = checks(&report, |n| n.ends_with(".json"));
    assert_eq!(cases.len(), 3, "{report}");
    assert!(cases.iter().all(|c| c.failure.is_none()), "{report}");

    // Without a factory, a case is built by the registered wire whatever its base URL.
    let report = Suite::new(&table)
        .cases_dir(dir.path())
        .wire(&TURNS)
        .run_routes(&["turns-route"]);
    assert!(
        failure(&report, "built.json").is_some_and(|f| f.starts_with("request body differs")),
        "{report}"
    );
}

#[test]
fn a_native_body_is_compared_byte_for_byte() {
    let history = json!([{"role": "user", "content": "caf\u{e9}"}]);
    // The wire writes `é` as UTF-8; the same value spelt `\u00e9` is other bytes.
    let dir = write_cases(&[
        (
            "utf8.json",
            case_at(
                "https://fixed.example",
                history.clone(),
                "{\"model\": \"t-1\",\n \"turns\": [{\"who\": \"user\", \"say\": \"caf\u{e9}\"}]}",
            ),
        ),
        (
            "escaped.json",
            case_at(
                "https://fixed.example",
                history,
                r#"{"model":"t-1","turns":[{"who":"user","say":"caf\u00e9"}]}"#,
            ),
        ),
    ]);
    let table = table();
    let report = Suite::new(&table)
        .cases_dir(dir.path())
        .wire(&TURNS)
        .run_routes(&["turns-route"]);
    assert_eq!(failure(&report, "utf8.json"), None, "{report}");
    let escaped = failure(&report, "escaped.json").unwrap_or_default();
    assert!(
        escaped.contains("same JSON value, other bytes"),
        "{escaped}"
    );
}

#[test]
fn wire_invariants_run_through_a_registered_wire_under_the_resolved_route() {
    let table = table();
    let report = Suite::new(&table)
        .require_cases(false)
        .wire(&TURNS)
        .wire_invariants("turns", "turns-cloud", None)
        .run_routes(&["turns-route"]);
    let wire_checks = checks(&report, |n| n.starts_with("turns wire: "));
    assert_eq!(wire_checks.len(), 27, "{report}");
    assert!(wire_checks.iter().all(|c| c.route == "turns-route"));
    // The made-up wire keeps no stored key out of its body (`thought` is not one), but it
    // has neither the Messages nor the Converse shape: the structural checks do not apply.
    assert!(wire_checks.iter().all(|c| c.failure.is_none()), "{report}");
    let report = Suite::new(&table)
        .require_cases(false)
        .wire_invariants("missing", "turns-cloud", None)
        .run_routes(&["turns-route"]);
    assert!(
        report.checks.iter().any(|c| c
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("no `missing` wire"))),
        "{report}"
    );
}

#[test]
fn wire_models_name_the_models_the_invariants_of_a_wire_run_for() {
    let table = table();
    let asked = std::sync::Mutex::new(Vec::new());
    let report = Suite::new(&table)
        .require_cases(false)
        .wire_factory("turns", |t| {
            asked.lock().unwrap().push(t.model.to_owned());
            Some(Box::new(Turns { at: None }) as Box<dyn Wire>)
        })
        .wire_models("turns", ["t-old", "t-other"])
        .wire_models("turns", ["t-a", "t-b"])
        .wire_invariants("turns", "turns-cloud", None)
        .run_routes(&["turns-route"]);
    assert_eq!(
        *asked.lock().unwrap(),
        ["t-a"],
        "the factory builds for the first"
    );
    let labels: std::collections::BTreeSet<&str> = report
        .checks
        .iter()
        .filter_map(|c| c.name.strip_prefix("turns wire: "))
        .filter_map(|n| n.split_once(" [").map(|(_, label)| label))
        .collect();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        ["t-a @ , minted on another host]", "t-a @ ]", "t-b @ ]"],
        "{report}"
    );
    assert_eq!(report.failed(), 0, "{report}");
}
