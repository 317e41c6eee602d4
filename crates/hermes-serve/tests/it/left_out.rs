//! Once dropped, stay dropped (docs/spec.md §5a 3), through the Messages door against the strict
//! Claude simulator with a bound model (Claude Fable 5.1), which refuses a thinking block put back
//! after an earlier request of the conversation left it out. A client that changes its system
//! prompt and then reverts it — keeping the turn made meanwhile, or undoing it and asking again
//! — never gets a block back that a request left out, on whichever replica serves it, and
//! never one whose prefix differs from the one it was made on (checked from the simulator's own
//! records).

use std::collections::HashMap;

use hermes_sim::{RecordedRequest, Sim};
use hermes_store::testing::TestDb;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{KEY, Running, replica_over, sim_settings};

const FABLE: &str = "anthropic/claude-fable-5-1";
const PROMPT: &str = "You are terse.";

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool."),
           "input_schema": {"type": "object", "properties": {}}})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// One client turn on `gateway`: posts `messages` under `system` and `tools` until the model
/// answers without calling a tool, keeping what a client keeps (every thinking block dropped).
async fn exchange(
    gateway: &Running,
    key: &str,
    system: &str,
    tools: &[Value],
    messages: &mut Vec<Value>,
) {
    for _ in 0..4 {
        let body = json!({"model": FABLE, "max_tokens": 4096, "system": system, "tools": tools,
                          "thinking": {"type": "adaptive"}, "messages": messages});
        if !crate::binding::forgetful_exchange(gateway, key, &body, messages, "").await {
            return;
        }
    }
    panic!("the tool loop did not end");
}

fn is_thinking(block: &Value) -> bool {
    block["type"] == "thinking" || block["type"] == "redacted_thinking"
}

/// The signature (or redacted blob) of a thinking block.
fn mark_of(block: &Value) -> Option<String> {
    is_thinking(block)
        .then(|| block["signature"].as_str().or(block["data"].as_str()))
        .flatten()
        .map(str::to_owned)
}

/// The thinking blocks a request sent.
fn sent(r: &RecordedRequest) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| mark_of(&b))
        .collect()
}

/// The thinking blocks a request's reply minted.
fn minted(r: &RecordedRequest) -> Vec<String> {
    crate::binding::reply_blocks(r)
        .iter()
        .filter_map(mark_of)
        .collect()
}

/// Every request the simulator answered 200 without dropping anything itself.
fn no_refusals(requests: &[RecordedRequest]) -> Result<(), String> {
    for (i, r) in requests.iter().enumerate() {
        if r.status != 200 {
            return Err(format!(
                "request {i} refused ({}): {}",
                r.status, r.response
            ));
        }
        if !r.notes.is_empty() {
            return Err(format!(
                "request {i}: the upstream dropped blocks: {:?}",
                r.notes
            ));
        }
    }
    Ok(())
}

both!(a_prompt_changed_then_reverted_never_brings_a_left_out_block_back);
/// Turn 1 (replica A) is a tool loop under the original prompt; turn 2 (replica B) changes the
/// prompt, so turn 1's blocks are left out; turn 3 (A) reverts the prompt and undoes turn 2,
/// asking again from turn 1 — turn 1's blocks are bound to that prefix again, but a request
/// left them out: putting them back is refused by the bound model; turn 4 (B) reverts the
/// prompt keeping turn 2. Zero refusals, and turn 1's blocks never go again after turn 2.
async fn a_prompt_changed_then_reverted_never_brings_a_left_out_block_back(db: TestDb) {
    let sim = Sim::start("anthropic").await.unwrap();
    let replicas = [
        replica_over(
            db.open().await,
            sim_settings("anthropic", &sim.base_url()),
            |c| c,
        )
        .await,
        replica_over(
            db.open().await,
            sim_settings("anthropic", &sim.base_url()),
            |c| c,
        )
        .await,
    ];
    let key = replicas[0].store.add_gateway_key("initech").await.unwrap();
    let tools = [tool("now")];
    let mut messages = vec![user("turn 1: the time? [tools=1]")];
    exchange(&replicas[0], &key, PROMPT, &tools, &mut messages).await;
    let turn_1 = sim.requests().len();
    let kept = messages.clone();
    messages.push(user("turn 2: and now?"));
    exchange(
        &replicas[1],
        &key,
        "You are terse. Today is Tuesday.",
        &tools,
        &mut messages,
    )
    .await;
    let mut again = kept;
    again.push(user("turn 2: and now, again?"));
    exchange(&replicas[0], &key, PROMPT, &tools, &mut again).await;
    messages.push(user("turn 3: and later?"));
    exchange(&replicas[1], &key, PROMPT, &tools, &mut messages).await;

    let requests = sim.requests();
    assert_eq!(
        requests.len(),
        turn_1 + 3,
        "one request a turn after the first"
    );
    no_refusals(&requests).unwrap();
    // Inside turn 1's loop the prefix held: its first step's blocks went back.
    let first: Vec<String> = minted(&requests[0]);
    assert!(!first.is_empty());
    assert!(
        first.iter().all(|s| sent(&requests[1]).contains(s)),
        "the loop keeps its thinking"
    );
    let made_in_turn_1: Vec<String> = requests[..turn_1].iter().flat_map(minted).collect();
    for (i, r) in requests.iter().enumerate().skip(turn_1) {
        let back: Vec<&String> = made_in_turn_1
            .iter()
            .filter(|s| sent(r).contains(s))
            .collect();
        assert!(
            back.is_empty(),
            "request {i} put turn 1's blocks back: {back:?}"
        );
    }
}

/// What a client does to its request before a turn.
#[derive(Clone, Copy, Debug)]
enum Edit {
    /// A new line in the system prompt.
    Prompt(u8),
    /// Another tool.
    AddTool,
    /// The oldest exchange dropped.
    DropOldest,
    /// The system prompt and tools back to the first turn's.
    Revert,
    /// The last turn undone: prompt, tools and messages as before it (and its edit).
    Undo,
    /// Nothing changed.
    Same,
}

fn edit() -> impl Strategy<Value = Edit> {
    // Edits that change the prefix, and undoing them, weigh most: an undone edit is where a
    // left-out block's prefix comes back.
    prop_oneof![
        3 => (0u8..3).prop_map(Edit::Prompt),
        2 => Just(Edit::AddTool),
        2 => Just(Edit::DropOldest),
        2 => Just(Edit::Revert),
        3 => Just(Edit::Undo),
        1 => Just(Edit::Same),
    ]
}

/// A client's request state.
#[derive(Clone)]
struct Client {
    system: String,
    tools: Vec<Value>,
    messages: Vec<Value>,
}

impl Client {
    fn apply(&mut self, edit: Edit, before: &Option<Client>) {
        match edit {
            Edit::Prompt(n) => self.system = format!("{PROMPT} Note {n}."),
            Edit::AddTool => {
                let name = format!("tool{}", self.tools.len());
                self.tools.push(tool(&name));
            }
            Edit::DropOldest => {
                // From the second user question on (a tool result is no question).
                let questions: Vec<usize> = (0..self.messages.len())
                    .filter(|&i| self.messages[i]["content"].is_string())
                    .collect();
                if let Some(&second) = questions.get(1) {
                    self.messages.drain(..second);
                }
            }
            Edit::Revert => {
                self.system = PROMPT.to_owned();
                self.tools = vec![tool("now")];
            }
            Edit::Undo => {
                if let Some(before) = before {
                    *self = before.clone();
                }
            }
            Edit::Same => {}
        }
    }
}

/// `block` without `cache_control` (not part of the prefix).
fn uncached(block: &Value) -> Value {
    let mut block = block.clone();
    if let Some(o) = block.as_object_mut() {
        o.remove("cache_control");
    }
    block
}

/// A message as the prefix binds it: content as blocks, thinking and `cache_control` left out.
fn bound_form(message: &Value) -> Value {
    let content = match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| !is_thinking(b))
            .map(uncached)
            .collect(),
        _ => Vec::new(),
    };
    json!({"role": message["role"], "content": content})
}

/// The prefix of request `r` before its message `upto`: system, tools, earlier messages.
fn prefix(r: &RecordedRequest, upto: usize) -> Value {
    let system = match &r.body["system"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.iter().map(uncached).collect(),
        _ => Vec::new(),
    };
    let tools: Vec<Value> = r.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(uncached)
        .collect();
    let messages: Vec<Value> = r.body["messages"].as_array().unwrap()[..upto]
        .iter()
        .map(bound_form)
        .collect();
    json!({"system": system, "tools": tools, "messages": messages})
}

/// From the simulator's records: every request accepted as sent, no request carrying a block
/// an earlier request left out (it carried the block's turn — the same messages up to and
/// including the reply, thinking left out — without it), and every block sent on the very
/// prefix it was minted after.
fn check(requests: &[RecordedRequest]) -> Result<(), String> {
    no_refusals(requests)?;
    // Each minted block: the request whose reply minted it, and its turn.
    let mut minter: HashMap<String, (usize, Vec<Value>)> = HashMap::new();
    let mut left_at: HashMap<String, usize> = HashMap::new();
    for (i, r) in requests.iter().enumerate() {
        let messages = r.body["messages"].as_array().unwrap();
        let forms: Vec<Value> = messages.iter().map(bound_form).collect();
        for (at, m) in messages.iter().enumerate() {
            if m["role"] != "assistant" {
                continue;
            }
            let carried: Vec<String> = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(mark_of)
                .collect();
            for s in &carried {
                let Some((k, _)) = minter.get(s) else {
                    return Err(format!("request {i} sent a block no reply minted"));
                };
                if let Some(left) = left_at.get(s) {
                    return Err(format!(
                        "request {i} put back a block request {left} left out"
                    ));
                }
                let minted_on = &requests[*k];
                let len = minted_on.body["messages"].as_array().unwrap().len();
                if prefix(r, at) != prefix(minted_on, len) {
                    return Err(format!(
                        "request {i} sent a block of request {k}'s reply on another prefix"
                    ));
                }
            }
            for (s, (_, turn)) in &minter {
                if turn[..] == forms[..=at] && !carried.contains(s) {
                    left_at.entry(s.clone()).or_insert(i);
                }
            }
        }
        let reply: Value = serde_json::from_str(&r.response).unwrap_or(Value::Null);
        let mut turn = forms;
        turn.push(bound_form(
            &json!({"role": "assistant", "content": reply["content"]}),
        ));
        for s in minted(r) {
            minter.insert(s, (i, turn.clone()));
        }
    }
    Ok(())
}

/// A conversation of four turns through the gateway, the client editing its request before
/// each of the last three as `edits` say, dropping every thinking block it gets.
async fn edited_conversation(edits: &[(Edit, bool)]) -> Sim {
    let (sim, gateway) = crate::sim_gateway("anthropic", "anthropic", |c| c).await;
    let mut client = Client {
        system: PROMPT.to_owned(),
        tools: vec![tool("now")],
        messages: Vec::new(),
    };
    let mut before: Option<Client> = None;
    for (turn, (edit, tools)) in std::iter::once((Edit::Same, true))
        .chain(edits.iter().copied())
        .enumerate()
    {
        let previous = client.clone();
        client.apply(edit, &before);
        before = Some(previous);
        let loops = if tools { " [tools=1]" } else { "" };
        client
            .messages
            .push(user(&format!("turn {turn}: the time?{loops}")));
        let Client {
            system,
            tools,
            messages,
        } = &mut client;
        exchange(&gateway, KEY, system, tools, messages).await;
    }
    gateway.stop().await;
    sim
}

proptest! {
    // Bounded (16 conversations of 4 turns) and reproducible (a fixed seed).
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(46),
        ..ProptestConfig::default()
    })]

    /// Over random sequences of system-prompt edits, added tools, oldest turns dropped,
    /// reverts and undone turns: the bound simulator accepts every request as sent, no request
    /// puts back a block an earlier one left out, and none sends a block off its prefix.
    #[test]
    fn no_request_puts_back_a_left_out_block_or_sends_one_off_its_prefix(
        edits in proptest::collection::vec((edit(), any::<bool>()), 3)
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let requests = runtime.block_on(async { edited_conversation(&edits).await.requests() });
        prop_assert!(requests.len() >= 4);
        if let Err(why) = check(&requests) {
            prop_assert!(false, "{:?}: {}", edits, why);
        }
    }
}
