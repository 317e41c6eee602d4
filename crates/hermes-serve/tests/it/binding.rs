//! Reasoning bound to its prefix (docs/spec.md §5a) through the Messages door, against the strict
//! Claude simulator with a bound model (Claude Fable 5.1: every replayed block is checked
//! against the system prompt, tools, earlier messages, model and account it was made for, and
//! a block left out once may not come back) and an unbound one (Claude Opus 4.8). Clients that
//! drop every thinking block and change their prefix as real ones do — a date line in the
//! system prompt on every turn, a tool added mid-conversation, the oldest turns dropped — get
//! zero refusals: the gateway never sends a block onto a prefix it was not made for. On the
//! unbound model the tool loop's blocks go back as before.

use hermes_sim::{RecordedRequest, Sim};
use serde_json::{Value, json};

use crate::{KEY, Running, messages_as};

const FABLE: &str = "anthropic/claude-fable-5-1";
const OPUS: &str = "anthropic/claude-opus-4-8";

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool."),
           "input_schema": {"type": "object", "properties": {}}})
}

/// How the client changes its prefix from turn to turn.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// A date line in the system prompt, new on every turn.
    DateLine,
    /// A second tool from the second turn on.
    AddedTool,
    /// The oldest turn dropped from the third turn on.
    OldestDropped,
}

/// The client's request for `turn` with `messages` (thinking blocks already dropped).
fn request(model: &str, change: Change, turn: usize, messages: &[Value]) -> Value {
    let system = match change {
        Change::DateLine => format!("You are terse. Today is day {turn}."),
        _ => "You are terse.".to_owned(),
    };
    let mut tools = vec![tool("now")];
    if matches!(change, Change::AddedTool) && turn >= 2 {
        tools.push(tool("read"));
    }
    let messages: Vec<Value> = match change {
        Change::OldestDropped if turn >= 3 => {
            // From the first user message of the second turn on.
            let start = messages
                .iter()
                .position(|m| m["content"].as_str().is_some_and(|t| t.contains("turn 2")))
                .unwrap();
            messages[start..].to_vec()
        }
        _ => messages.to_vec(),
    };
    json!({"model": model, "max_tokens": 4096, "system": system, "tools": tools,
           "thinking": {"type": "adaptive"}, "messages": messages})
}

/// Three user turns of a one-call tool loop each, the client dropping every thinking block it
/// got; returns the simulator, which recorded every upstream request.
async fn conversation(model: &str, change: Change) -> Sim {
    let (sim, gateway) = crate::sim_gateway("anthropic", "anthropic", |c| c).await;
    let mut messages: Vec<Value> = Vec::new();
    for turn in 1..=3 {
        messages
            .push(json!({"role": "user", "content": format!("turn {turn}: the time? [tools=1]")}));
        for _ in 0..3 {
            let body = request(model, change, turn, &messages);
            let context = format!("{model} {change:?} turn {turn}: ");
            if !forgetful_exchange(&gateway, KEY, &body, &mut messages, &context).await {
                break;
            }
        }
    }
    gateway.stop().await;
    sim
}

/// Posts `body` to the Messages door of `gateway` as `key`, which must answer 200 (`context`
/// opens the failure's message), and takes the forgetful client's step on the reply
/// (`hermes_test_support::messages::forgetful_step`, a `12:00` result for each call): whether
/// the model called a tool (the loop goes on).
pub(crate) async fn forgetful_exchange(
    gateway: &Running,
    key: &str,
    body: &Value,
    messages: &mut Vec<Value>,
    context: &str,
) -> bool {
    let reply = crate::ok_json(messages_as(gateway, key, &[], body).await, context).await;
    hermes_test_support::messages::forgetful_step(&reply, messages, "12:00")
}

/// The content blocks of the reply the simulator recorded for `r` (none when it was not a
/// JSON message).
pub(crate) fn reply_blocks(r: &RecordedRequest) -> Vec<Value> {
    let reply: Value = serde_json::from_str(&r.response).unwrap_or(Value::Null);
    reply["content"].as_array().cloned().unwrap_or_default()
}

/// The thinking signatures each upstream request carried, and every signature an earlier
/// reply minted.
fn signatures(sim: &Sim) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let sent = sim
        .requests()
        .iter()
        .map(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .filter_map(|b| b["signature"].as_str().map(str::to_owned))
                .collect()
        })
        .collect();
    let minted = sim
        .requests()
        .iter()
        .map(|r| {
            reply_blocks(r)
                .iter()
                .filter_map(|b| b["signature"].as_str().map(str::to_owned))
                .collect()
        })
        .collect();
    (sent, minted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_model_is_never_sent_a_block_off_its_prefix_and_refuses_nothing() {
    for change in [Change::DateLine, Change::AddedTool, Change::OldestDropped] {
        let sim = conversation(FABLE, change).await;
        let requests = sim.requests();
        assert!(requests.len() >= 6, "{change:?}: {}", requests.len());
        for (i, r) in requests.iter().enumerate() {
            assert_eq!(r.status, 200, "{change:?} request {i}: {}", r.response);
            assert!(
                r.notes.is_empty(),
                "{change:?} request {i}: the upstream had to drop a block: {:?}",
                r.notes
            );
        }
        // Inside each tool loop the prefix holds: the step's blocks go back byte for byte.
        let (sent, minted) = signatures(&sim);
        let replayed_in_loop = (1..requests.len())
            .filter(|&i| {
                minted[i - 1].iter().all(|s| sent[i].contains(s)) && !minted[i - 1].is_empty()
            })
            .count();
        assert!(
            replayed_in_loop >= 3,
            "{change:?}: {replayed_in_loop} loops kept their thinking"
        );
        // The first turn's thinking was made on a prefix the last request no longer has: the
        // gateway left it out (a bound model would refuse it, or have to drop it).
        let first_turn: Vec<&String> = minted[..2].iter().flatten().collect();
        let last = sent.last().unwrap();
        assert!(
            !first_turn.is_empty() && first_turn.iter().all(|s| !last.contains(s)),
            "{change:?}: no block off its prefix"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unbound_model_keeps_the_blocks_it_kept_before() {
    for change in [Change::DateLine, Change::AddedTool, Change::OldestDropped] {
        let sim = conversation(OPUS, change).await;
        let requests = sim.requests();
        assert!(requests.iter().all(|r| r.status == 200), "{change:?}");
        let (sent, minted) = signatures(&sim);
        let replayed_in_loop = (1..requests.len())
            .filter(|&i| {
                minted[i - 1].iter().all(|s| sent[i].contains(s)) && !minted[i - 1].is_empty()
            })
            .count();
        assert!(replayed_in_loop >= 3, "{change:?}: {replayed_in_loop}");
        for r in &requests {
            let thinking = &r.body["thinking"];
            assert!(
                thinking.get("block_binding").is_none(),
                "{change:?}: no binding control for an unbound model: {thinking}"
            );
        }
    }
}
