//! A session imported from the Python original, resumed on the OpenAI Responses wire against the
//! strict `openai-responses` simulator (issue 27, item 9).
//!
//! The original stamps every stored output item with its issuer (`_issuer_kind`,
//! `_issuer_model`) and may keep a reasoning item without `summary`; OpenAI answers the first
//! with 400 `Unknown parameter: 'input[N]._issuer_kind'.` and the second with `Missing required
//! parameter: 'input[N].summary'.`, and the simulator does the same. The resumed turn must be
//! accepted, with every replayed item exactly as the API returned it (no private key, a missing
//! summary sent as `[]`).

use hermes_core::driver::MemoryLog;
use hermes_core::driver::{Conversation, Driver, DriverConfig};
use hermes_core::message::BLOCK_ORDER_KEY;
use hermes_core::{Message, RawJson, ResolveOptions, Role, RouteTarget, ThinkingRequest};
use hermes_providers::native::members::without_members;
use hermes_providers::{Auth, ChatTransport, builtin_table};
use hermes_sim::Sim;
use hermes_test_support::memory::NoTools;
use hermes_wire_responses::{ResponsesWire, WIRE_ID};
use serde_json::value::RawValue;

const MODEL: &str = "gpt-5.2";
const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{}}}}]"#;

/// Runs one user turn through the driver on `sim`; the requests it made.
async fn turn(
    sim: &Sim,
    conversation: &mut Conversation,
    text: &str,
) -> Result<usize, hermes_core::driver::DriverError> {
    let base = format!("{}/v1", sim.base_url());
    let wire = ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: base.clone(),
        auth: Some(Auth::Bearer("sk-test".into())),
    };
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new(WIRE_ID, Some(&base), MODEL),
        ResolveOptions::default(),
    );
    let mut config = DriverConfig::default();
    config.thinking = ThinkingRequest::NoPreference;
    config.max_backoff_retries = 0;
    config.tools = Some(RawJson::from_text(TOOLS).unwrap());
    let log = MemoryLog::default();
    let notify = |_: &hermes_core::driver::DriverEvent| {};
    let driver = Driver {
        decision: &decision,
        wire: &wire,
        log: &log,
        tools: &NoTools,
        config: &config,
        notify: &notify,
    };
    driver
        .run_turn(conversation, Message::text(Role::User, text))
        .await
        .map(|o| o.requests)
}

/// The JSON text of each element of the array `text`.
fn elements(text: &str) -> Vec<String> {
    serde_json::from_str::<Vec<&RawValue>>(text)
        .unwrap()
        .into_iter()
        .map(|r| r.get().to_owned())
        .collect()
}

fn stored<'m>(msg: &'m Message, key: &str) -> &'m str {
    msg.extra.iter().find(|(k, _)| k == key).unwrap().1.get()
}

/// `item` as the Python original stores it: its issuer stamped first and last.
fn stamped(item: &str) -> String {
    format!(
        r#"{{"_issuer_kind":"codex_responses",{},"_issuer_model":"{MODEL}"}}"#,
        &item[1..item.len() - 1]
    )
}

/// A captured assistant turn as the Python original stores it: no origin, no block order,
/// every item stamped, and (with `drop_summary`) its reasoning items without `summary`.
fn imported(msg: &Message, drop_summary: bool) -> Message {
    let mut m = msg.clone();
    m.origin = None;
    m.extra.retain(|(k, _)| k != BLOCK_ORDER_KEY);
    for (key, value) in &mut m.extra {
        if key != "codex_reasoning_items" && key != "codex_message_items" {
            continue;
        }
        let items: Vec<String> = elements(value.get())
            .iter()
            .map(|item| {
                let raw = RawJson::from_text(item.as_str()).unwrap();
                let kept = without_members(raw.as_raw(), |k| drop_summary && k == "summary");
                stamped(kept.get())
            })
            .collect();
        *value = RawJson::from_text(format!("[{}]", items.join(","))).unwrap();
    }
    m
}

#[tokio::test]
async fn an_imported_session_resumes_with_its_items_as_the_api_returned_them() {
    let sim = Sim::start("openai-responses").await.unwrap();
    let mut conversation = Conversation::default();
    let requests = turn(&sim, &mut conversation, "What time is it? [tools=2]")
        .await
        .unwrap();
    assert_eq!(requests, 3, "two tool steps and the answer");
    let captured = conversation.messages.clone();
    let assistants: Vec<usize> = (0..captured.len())
        .filter(|&i| captured[i].role == Role::Assistant)
        .collect();
    assert_eq!(assistants.len(), 3);

    // The same session as the Python original stored it; the second step's reasoning has no
    // summary.
    let mut resumed = Conversation {
        messages: captured
            .iter()
            .enumerate()
            .map(|(i, m)| match m.role {
                Role::Assistant => imported(m, i == assistants[1]),
                _ => m.clone(),
            })
            .collect(),
        ..Conversation::default()
    };
    let stored_text = serde_json::to_string(&resumed.messages).unwrap();
    assert!(stored_text.contains("_issuer_kind") && stored_text.contains("_issuer_model"));
    sim.clear_requests();
    let outcome = turn(&sim, &mut resumed, "And tomorrow?").await;
    let recorded = sim.requests();
    let last = recorded.last().unwrap();
    assert!(
        outcome.is_ok(),
        "{:?}: {} {}",
        outcome.err(),
        last.status,
        last.response
    );
    assert_eq!(last.status, 200, "{}", last.response);

    // Exactly the items the API returned, in order, each byte for byte; the summary the
    // original did not keep goes as `[]`.
    let mut want: Vec<String> = Vec::new();
    for (i, m) in captured.iter().enumerate() {
        match m.role {
            Role::User => want.push(format!(
                r#"{{"role":"user","content":{}}}"#,
                m.content.as_ref().unwrap().get()
            )),
            Role::Tool => want.push(format!(
                r#"{{"type":"function_call_output","call_id":"{}","output":{}}}"#,
                m.tool_call_id.as_deref().unwrap(),
                m.content.as_ref().unwrap().get()
            )),
            Role::Assistant => {
                let reasoning = elements(stored(m, "codex_reasoning_items"));
                let others = elements(stored(m, "codex_message_items"));
                assert_eq!((reasoning.len(), others.len()), (1, 1), "{m:?}");
                let rs = if i == assistants[1] {
                    let raw = RawJson::from_text(reasoning[0].as_str()).unwrap();
                    let kept = without_members(raw.as_raw(), |k| k == "summary");
                    let text = kept.get();
                    format!(r#"{},"summary":[]}}"#, &text[..text.len() - 1])
                } else {
                    reasoning[0].clone()
                };
                want.push(rs);
                want.push(others[0].clone());
            }
            _ => {}
        }
    }
    want.push(r#"{"role":"user","content":"And tomorrow?"}"#.to_owned());
    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        input: Vec<&'a RawValue>,
    }
    let raw = String::from_utf8(recorded[0].raw.clone()).unwrap();
    let body: Body<'_> = serde_json::from_str(&raw).unwrap();
    let sent: Vec<&str> = body.input.iter().map(|r| r.get()).collect();
    assert_eq!(sent, want);
    assert!(!raw.contains("_issuer"), "{raw}");
}
