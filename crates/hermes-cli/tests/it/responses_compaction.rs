//! Provider-native compaction on the OpenAI Responses wire (docs/spec.md §7, issue 46), through the
//! binary against the strict `openai-responses` simulator: server-side compaction past
//! `[compaction] provider_threshold` (`context_management`), and the standalone
//! `POST /responses/compact` of `sessions compact` followed by a switch to another model.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;
use serde_json::{Value, json};

use crate::responses_live::{KEY, MODEL};
use crate::support::target;
use crate::wire::raw;

/// A turn of `id` (or a new session) on `model`, not streamed (the simulator's replies are then
/// JSON objects whose output items a test reads directly).
async fn turn(home: &Home, base: &str, model: &str, id: Option<&str>, query: &str) -> Value {
    let mut rest = Vec::new();
    if let Some(id) = id {
        rest.extend(["--resume", id]);
    }
    rest.extend(["--effort", "high", "--no-stream", "-q", query]);
    home.chat(&target("openai-responses", model, base, &rest), KEY)
        .await
}

/// Every request was accepted whole, and the simulator dropped nothing (no note).
fn all_ok(requests: &[RecordedRequest]) {
    for r in requests {
        assert_eq!(r.status, 200, "{}: {}\n{}", r.path, r.response, raw(r));
        assert!(r.notes.is_empty(), "{}: {:?}", r.path, r.notes);
    }
}

/// Asserts `r`'s `input` starts with the item whose JSON text is `item_text`, byte for byte.
fn assert_input_starts_with(r: &RecordedRequest, item_text: &str) {
    assert!(
        raw(r).contains(&format!(r#""input":[{item_text},"#)),
        "{}",
        raw(r)
    );
}

fn input(r: &RecordedRequest) -> &Vec<Value> {
    r.body["input"].as_array().unwrap()
}

/// The reply's output items (a JSON reply).
fn output(r: &RecordedRequest) -> Vec<Value> {
    let v: Value = serde_json::from_str(&r.response).unwrap();
    v["output"].as_array().cloned().unwrap_or_default()
}

/// A simulator, its base URL and a home with one finished turn asking `q`: the session id too.
async fn first_turn(q: &str) -> (Sim, String, Home, String) {
    let sim = Sim::start("openai-responses").await.unwrap();
    let base = format!("{}/v1", sim.base_url());
    let home = crate::support::home();
    let out = turn(&home, &base, MODEL, None, q).await;
    let id = out["session_id"].as_str().unwrap().to_owned();
    (sim, base, home, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_threshold_a_responses_session_replays_only_from_the_compaction_item_on() {
    let (sim, base, home, id) = first_turn("[tools=2] what time is it?").await;
    let first = sim.requests();
    all_ok(&first);
    let threshold = crate::support::provider_threshold_after(&home, &first);

    sim.clear_requests();
    let out = turn(&home, &base, MODEL, Some(&id), "[tools=1] and the date?").await;
    assert_eq!(out["requests"], 2, "{out}");
    let second = sim.requests();
    all_ok(&second);
    for r in &second {
        assert_eq!(
            r.body["context_management"],
            json!([{"type": "compaction", "compact_threshold": threshold}]),
            "{}",
            raw(r)
        );
    }
    // The first request crossed the threshold: its reply begins with a compaction item.
    let reply = output(&second[0]);
    assert_eq!(reply[0]["type"], "compaction", "{}", second[0].response);
    let item_text = serde_json::to_string(&reply[0]).unwrap();
    assert!(second[0].response.contains(&item_text));
    // The loop's next request starts at it, byte for byte: nothing from before it is sent, and
    // the rest is the reply's other items, then the tool's result.
    let next = &second[1];
    assert_input_starts_with(next, &item_text);
    let sent = input(next);
    assert_eq!(sent.len(), reply.len() + 1, "{}", raw(next));
    assert_eq!(sent[..reply.len()], reply[..]);
    assert_eq!(sent[reply.len()]["type"], "function_call_output");
    for earlier in &first {
        for item in output(earlier) {
            if let Some(ct) = item["encrypted_content"].as_str() {
                assert!(!raw(next).contains(ct), "{ct} in {}", raw(next));
            }
        }
    }
    assert!(!raw(next).contains("what time is it?"), "{}", raw(next));

    // Stored verbatim among the reply's output items.
    let export = home.export(&id).await;
    let stored = crate::support::assistants(&export)
        .find(|m| {
            m["codex_message_items"]
                .to_string()
                .contains("\"compaction\"")
        })
        .expect("the reply holding the compaction item");
    assert_eq!(stored["codex_message_items"][0], reply[0]);

    // The next turn replays from the same item on too, its reasoning accepted.
    sim.clear_requests();
    turn(&home, &base, MODEL, Some(&id), "and the year?").await;
    let third = sim.requests();
    all_ok(&third);
    assert_input_starts_with(&third[0], &item_text);
    assert!(
        input(&third[0])
            .iter()
            .filter(|i| i["type"] == "reasoning")
            .count()
            >= 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_compact_another_model_gets_hermes_own_summary_not_the_compaction_item() {
    let (sim, base, home, id) = first_turn("[tools=1] what time is it?").await;
    turn(&home, &base, MODEL, Some(&id), "[tools=1] and the date?").await;
    all_ok(&sim.requests());
    let (status, compact) = crate::support::compact(&sim, &home, &id, KEY).await;
    assert!(
        status.starts_with("context compacted by the provider (POST /responses/compact)"),
        "{status}"
    );
    let item = output(compact.last().unwrap()).last().unwrap().clone();
    assert_eq!(item["type"], "compaction");
    let item_text = serde_json::to_string(&item).unwrap();

    // gpt-5.1 never sees gpt-5.2's compaction item: hermes' own summary stands in its place.
    sim.clear_requests();
    let out = turn(&home, &base, "gpt-5.1", Some(&id), "and on 5.1?").await;
    assert_eq!(out["requests"], 1, "{out}");
    let requests = sim.requests();
    all_ok(&requests);
    let r = &requests[0];
    assert!(!raw(r).contains(&item_text), "{}", raw(r));
    assert!(input(r).iter().all(|i| i["type"] != "compaction"));
    let summary = input(r)[0]["content"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("[Summary of the earlier conversation]\n\n"),
        "{}",
        raw(r)
    );
    assert_eq!(input(r)[0]["role"], "user");
    // The summarised turn is not sent; the kept one is, without gpt-5.2's reasoning.
    assert!(!raw(r).contains("what time is it?"), "{}", raw(r));
    assert!(raw(r).contains("[tools=1] and the date?"));
    assert!(input(r).iter().all(|i| i["type"] != "reasoning"));

    // Back on gpt-5.2, the item is replayed again, first.
    sim.clear_requests();
    turn(&home, &base, MODEL, Some(&id), "back on 5.2").await;
    let back = sim.requests();
    all_ok(&back);
    assert_input_starts_with(&back[0], &item_text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pre_flight_trigger_compacts_a_responses_session_with_the_compact_endpoint() {
    let sim = Sim::start("openai-responses").await.unwrap();
    let base = format!("{}/v1", sim.base_url());
    let home = crate::support::home();
    std::fs::write(
        home.path().join("config.toml"),
        "[compaction]\ncontext_window = 400\nmax_output = 100\ntrigger_percent = 80\n",
    )
    .unwrap();
    let out = turn(&home, &base, MODEL, None, "[tools=1] what time is it?").await;
    let id = out["session_id"].as_str().unwrap().to_owned();
    for q in ["one", "two", "three", "four"] {
        turn(&home, &base, MODEL, Some(&id), q).await;
    }
    let requests = sim.requests();
    all_ok(&requests);
    let compacts: Vec<usize> = (0..requests.len())
        .filter(|&k| requests[k].path == "/v1/responses/compact")
        .collect();
    assert!(
        !compacts.is_empty(),
        "the trigger used the compact endpoint"
    );
    // Every turn after a compaction starts at its item.
    let c = *compacts.last().unwrap();
    let item = serde_json::to_string(output(&requests[c]).last().unwrap()).unwrap();
    for r in requests[c + 1..]
        .iter()
        .filter(|r| r.path == "/v1/responses")
    {
        assert!(
            raw(r).contains(&format!(r#""input":[{item},"#)),
            "{}",
            raw(r)
        );
    }
}
