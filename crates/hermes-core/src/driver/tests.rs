//! Driver tests with an in-memory transport, log and tools (the HTTP path is tested end to end
//! against the simulator in hermes-cli).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::driver::{
    Conversation, Driver, DriverConfig, DriverError, DriverEvent, MemoryLog, SessionLog, Tools,
};
use crate::message::{DetailItem, Message, Origin, Role};
use crate::route::{
    Carrier, CarrierSet, DataRoute, MustEchoFamily, PAD, PadRule, ResolveOptions, RouteMatcher,
    RouteTable,
};
use crate::target::RouteTarget;
use crate::transport::{Delta, OnDelta, Reply, ReplyMeta, SendResult, TransportError, Usage};
use crate::wire::{CHAT_WIRE, Outgoing, RequestParts, Wire};

/// Replies from a script, recording every body it was sent.
struct Scripted {
    script: Mutex<Vec<Result<Value, TransportError>>>,
    sent: Mutex<Vec<Value>>,
    journal: Arc<Mutex<Vec<String>>>,
}

/// The request of a test wire: `body` as JSON, streamed as `parts` asks, covering its history.
fn outgoing(body: &Value, parts: &RequestParts<'_>, refusable: Vec<&'static str>) -> Outgoing {
    Outgoing::new(
        serde_json::to_vec(body).unwrap(),
        parts.stream,
        refusable,
        parts.history.len(),
    )
}

/// Keeps a test wire's sent body.
fn record_sent(sent: &Mutex<Vec<Value>>, request: &Outgoing) {
    sent.lock()
        .unwrap()
        .push(serde_json::from_slice(&request.body).unwrap());
}

#[async_trait::async_trait]
impl Wire for Scripted {
    fn id(&self) -> &'static str {
        CHAT_WIRE
    }

    /// A small rendering of the chat wire's carriers (the real body and its route plans live in
    /// hermes-providers): role and content, then each carrier the route reads and the verdicts
    /// leave it, `reasoning_content` padded on a must-echo route.
    fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        let decision = parts.decision;
        let refused = parts.verdicts.refused_for(&decision.target);
        let sends = |c: Carrier| {
            decision.carriers.contains(c)
                && (!refused.contains(c)
                    || (c == Carrier::ReasoningContent && decision.echo.is_some()))
        };
        let mut refusable = Vec::new();
        let messages: Vec<Value> = parts
            .history
            .iter()
            .map(|m| {
                let mut wire = json!({"role": m.role.as_str(), "content": m.content});
                if m.role != Role::Assistant {
                    return wire;
                }
                let pads = decision.echo.as_ref().is_some_and(|e| match e.pad {
                    PadRule::EveryAssistant => true,
                    PadRule::ToolCallTurns => m.tool_calls.as_ref().is_some_and(|c| !c.is_empty()),
                });
                let rc = match m.replayable_text() {
                    Some(text) => Some(text.text().into_owned()),
                    None => pads.then(|| PAD.to_owned()),
                };
                if sends(Carrier::ReasoningContent)
                    && let Some(rc) = rc
                {
                    wire["reasoning_content"] = json!(rc);
                    refusable.push("reasoning_content");
                }
                if sends(Carrier::Reasoning)
                    && let Some(r) = m.reasoning.as_ref().filter(|r| !r.is_blank())
                {
                    wire["reasoning"] = json!(r.text());
                    refusable.push("reasoning");
                }
                let kept: Vec<Value> = m
                    .reasoning_details
                    .iter()
                    .flatten()
                    .filter(|i| {
                        matches!(i, DetailItem::Provider { .. }) && !i.is_anthropic_shaped()
                    })
                    .map(|i| i.raw().to_value())
                    .collect();
                if sends(Carrier::ReasoningDetails) && !kept.is_empty() {
                    wire["reasoning_details"] = json!(kept);
                    refusable.push("reasoning_details");
                }
                wire
            })
            .collect();
        let body = json!({"model": decision.target.model, "messages": messages});
        Ok(outgoing(&body, parts, refusable))
    }

    async fn send(&self, request: &Outgoing, origin: Origin, on_delta: OnDelta<'_>) -> SendResult {
        // A streamed request gets a piece of text before its scripted answer (or failure).
        if request.stream {
            on_delta(Delta::Content("Hel"));
        }
        record_sent(&self.sent, request);
        self.journal.lock().unwrap().push("send".into());
        let next = self.script.lock().unwrap().remove(0)?;
        let mut message: Message = serde_json::from_value(next).unwrap();
        message.origin = Some(origin);
        Ok(Reply {
            message,
            meta: ReplyMeta::default(),
        })
    }
}

struct Clock;

#[async_trait::async_trait]
impl Tools for Clock {
    async fn call(&self, name: &str, _: &str) -> String {
        format!("{name}: 12:00")
    }
}

fn table() -> RouteTable {
    let mut t = RouteTable::new(Arc::new(
        DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
    ));
    t.register(Arc::new(
        DataRoute::new("agg", CarrierSet::ALL).matching(RouteMatcher::new().providers(["agg"])),
    ));
    t.add_family(MustEchoFamily {
        name: "deepseek".into(),
        matcher: RouteMatcher::new().providers(["deepseek"]),
        pad: PadRule::EveryAssistant,
    });
    t
}

/// What a test's driver runs with, besides the event sink [`drive`] gives it.
struct Parts<'a> {
    decision: &'a crate::route::RouteDecision,
    wire: &'a dyn Wire,
    log: &'a dyn SessionLog,
    tools: &'a dyn Tools,
    config: &'a DriverConfig,
}

/// Runs one turn of the user's `text` on `history` with `parts`: the result, the conversation
/// after it and every event told, in order.
async fn drive(
    parts: Parts<'_>,
    history: Value,
    text: &str,
) -> (
    Result<crate::driver::TurnOutcome, DriverError>,
    Conversation,
    Vec<DriverEvent>,
) {
    let events = Mutex::new(Vec::new());
    let notify = |e: &DriverEvent| events.lock().unwrap().push(e.clone());
    let driver = Driver {
        decision: parts.decision,
        wire: parts.wire,
        log: parts.log,
        tools: parts.tools,
        config: parts.config,
        notify: &notify,
    };
    let mut conversation = Conversation {
        messages: serde_json::from_value(history).unwrap(),
        ..Conversation::default()
    };
    let result = driver
        .run_turn(&mut conversation, Message::text(Role::User, text))
        .await;
    (result, conversation, events.into_inner().unwrap())
}

/// [`table`]'s decision for model `m` of `provider`.
fn resolved(provider: &str) -> crate::route::RouteDecision {
    table().resolve(
        &RouteTarget::new(provider, None, "m"),
        ResolveOptions::default(),
    )
}

/// One HTTP error with `status` per body, in order.
fn http_errors(status: u16, bodies: &[&str]) -> Vec<Result<Value, TransportError>> {
    bodies.iter().map(|body| Err(http(status, body))).collect()
}

fn http(status: u16, body: &str) -> TransportError {
    TransportError::Http {
        status,
        body: body.into(),
        retry_after: None,
    }
}

struct Run {
    result: Result<crate::driver::TurnOutcome, DriverError>,
    sent: Vec<Value>,
    log: MemoryLog,
    conversation: Conversation,
    journal: Vec<String>,
    /// The events told to the user (deltas and lines).
    events: Vec<DriverEvent>,
    /// The events for a front end's metrics (upstream requests, carriers).
    reports: Vec<DriverEvent>,
}

async fn run(
    provider: &str,
    history: Value,
    script: Vec<Result<Value, TransportError>>,
    retries: u32,
) -> Run {
    let config = DriverConfig {
        max_backoff_retries: retries,
        base_delay: Duration::from_millis(1),
        ..DriverConfig::default()
    };
    run_with(provider, history, script, config, &Clock).await
}

async fn run_with(
    provider: &str,
    history: Value,
    script: Vec<Result<Value, TransportError>>,
    config: DriverConfig,
    tools: &dyn Tools,
) -> Run {
    let journal = Arc::new(Mutex::new(Vec::new()));
    let transport = Scripted {
        script: Mutex::new(script),
        sent: Mutex::new(Vec::new()),
        journal: Arc::clone(&journal),
    };
    let log = MemoryLog {
        journal: Arc::clone(&journal),
        ..MemoryLog::default()
    };
    let decision = resolved(provider);
    let parts = Parts {
        decision: &decision,
        wire: &transport,
        log: &log,
        tools,
        config: &config,
    };
    let (result, conversation, events) = drive(parts, history, "go").await;
    let sent = transport.sent.lock().unwrap().clone();
    let journal = journal.lock().unwrap().clone();
    let (reports, events): (Vec<DriverEvent>, Vec<DriverEvent>) =
        events.into_iter().partition(|e| {
            matches!(
                e,
                DriverEvent::Upstream { .. }
                    | DriverEvent::Carriers { .. }
                    | DriverEvent::Sent { .. }
            )
        });
    // Each body the wire sent was reported, byte for byte, before it went.
    let reported: Vec<serde_json::Value> = reports
        .iter()
        .filter_map(|e| match e {
            DriverEvent::Sent { body, .. } => serde_json::from_slice(body).ok(),
            _ => None,
        })
        .collect();
    assert_eq!(reported, sent, "the Sent events are the bodies sent");
    Run {
        result,
        sent,
        log,
        conversation,
        journal,
        events,
        reports,
    }
}

fn with_rd() -> Value {
    json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning": "r",
         "reasoning_details": [{"type": "reasoning.text", "text": "t", "signature": "S"}]}
    ])
}

#[tokio::test]
async fn a_refusal_is_recorded_persisted_before_the_retry_and_retried_once() {
    let before = serde_json::to_string(&with_rd()).unwrap();
    let r = run(
        "agg",
        with_rd(),
        vec![
            Err(http(400, "messages.1: unknown field `reasoning_details`")),
            Ok(json!({"role": "assistant", "content": "ok"})),
        ],
        3,
    )
    .await;
    r.result.unwrap();
    assert_eq!(r.sent.len(), 2);
    assert!(r.sent[0]["messages"][1].get("reasoning_details").is_some());
    assert!(r.sent[1]["messages"][1].get("reasoning_details").is_none());
    assert!(
        r.sent[1]["messages"][1].get("reasoning").is_none(),
        "R and RD are refused together"
    );
    assert_eq!(r.sent[1]["messages"][1]["reasoning_content"], "r");
    assert_eq!(r.journal, ["send", "save_verdicts", "send"]);
    let saved = r.log.verdicts.lock().unwrap().clone().unwrap();
    assert_eq!(
        serde_json::to_value(&saved).unwrap(),
        json!([["agg", "", "m", ["reasoning", "reasoning_details"]]])
    );
    assert_eq!(r.conversation.verdicts, saved);
    // History untouched: the first two stored messages are exactly what they were.
    assert_eq!(
        serde_json::to_string(&r.conversation.messages[..2]).unwrap(),
        before
    );
    assert!(matches!(
        r.events[0],
        DriverEvent::Refused {
            status: Some(400),
            ..
        }
    ));
    // Each upstream request is reported once, the refused one with its status.
    let upstream: Vec<(Option<u16>, bool)> = r
        .reports
        .iter()
        .filter_map(|e| match e {
            DriverEvent::Upstream {
                wire, status, ok, ..
            } => {
                assert_eq!(*wire, "chat");
                Some((*status, *ok))
            }
            _ => None,
        })
        .collect();
    assert_eq!(upstream, [(Some(400), false), (None, true)]);
}

#[tokio::test]
async fn a_second_refusal_is_an_error_not_another_retry() {
    let r = run(
        "agg",
        with_rd(),
        http_errors(
            400,
            &[
                "unknown field reasoning_details in messages",
                "messages.1.reasoning_content: property is unsupported",
            ],
        ),
        3,
    )
    .await;
    assert!(matches!(r.result, Err(DriverError::Transport(_))));
    assert_eq!(r.sent.len(), 2);
}

#[tokio::test]
async fn a_must_echo_route_complaining_about_rc_gets_no_verdict_and_no_retry() {
    let r = run(
        "deepseek",
        json!([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
        http_errors(400, &["messages.1: unknown field reasoning_content value"]),
        3,
    )
    .await;
    assert!(matches!(r.result, Err(DriverError::Transport(_))));
    assert_eq!(r.sent.len(), 1);
    assert!(r.log.verdicts.lock().unwrap().is_none());
}

#[tokio::test]
async fn a_5xx_naming_a_field_is_no_refusal_and_backoff_is_bounded() {
    let r = run(
        "agg",
        with_rd(),
        http_errors(502, &["unknown field reasoning_details"; 3]),
        2,
    )
    .await;
    assert!(matches!(r.result, Err(DriverError::Transport(ref e)) if e.status() == Some(502)));
    assert_eq!(r.sent.len(), 3, "one try and two backoff retries");
    assert!(r.log.verdicts.lock().unwrap().is_none());
    // Nothing is stored for a turn that got no reply, and the conversation is as it was.
    assert!(r.log.messages.lock().unwrap().is_empty());
    assert_eq!(r.conversation.messages.len(), 2);
}

#[tokio::test]
async fn a_429_is_retried_without_duplicating_stored_turns() {
    let r = run(
        "agg",
        json!([]),
        vec![
            Err(TransportError::Http {
                status: 429,
                body: "slow".into(),
                retry_after: Some(Duration::from_millis(1)),
            }),
            Ok(json!({"role": "assistant", "content": "ok"})),
        ],
        3,
    )
    .await;
    r.result.unwrap();
    let stored = r.log.messages.lock().unwrap().clone();
    assert_eq!(stored.len(), 2);
    assert!(matches!(
        r.events[0],
        DriverEvent::Retrying { attempt: 1, .. }
    ));
}

#[tokio::test]
async fn the_tool_loop_runs_and_must_echo_tool_turns_get_rc() {
    let r = run(
        "deepseek",
        json!([]),
        vec![
            calls(&["c1"]),
            Ok(json!({
                "role": "assistant", "content": null, "reasoning": "from r",
                "tool_calls": [now_call("c2")],
            })),
            done(),
        ],
        0,
    )
    .await;
    let outcome = r.result.unwrap();
    assert_eq!(outcome.requests, 3);
    let stored = r.log.messages.lock().unwrap().clone();
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(
        stored[1].reasoning_content.as_ref().unwrap().text(),
        " ",
        "pad pinned at creation"
    );
    assert_eq!(
        stored[3].reasoning_content.as_ref().unwrap().text(),
        "from r",
        "R copied into RC"
    );
    assert_eq!(stored[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(stored[2].content.as_ref().unwrap().get(), r#""now: 12:00""#);
    assert_eq!(r.sent[2]["messages"][1]["reasoning_content"], " ");
    assert_eq!(r.sent[2]["messages"][3]["reasoning_content"], "from r");
}

/// Answers `size` bytes of `x`, counting calls; `hang` never answers.
#[derive(Default)]
struct Sized {
    size: usize,
    calls: Mutex<usize>,
}

#[async_trait::async_trait]
impl Tools for Sized {
    async fn call(&self, name: &str, _: &str) -> String {
        *self.calls.lock().unwrap() += 1;
        if name == "hang" {
            std::future::pending::<()>().await;
        }
        "x".repeat(self.size)
    }
}

/// Tools whose every output is `size` bytes.
/// Runs `replies` (each one reply calling the named tools), then a final text reply, with tools
/// answering `size` bytes under `config`; the run succeeds.
async fn run_sized(size: usize, config: DriverConfig, replies: &[&[&str]]) -> (Run, Sized) {
    let tools = Sized {
        size,
        ..Sized::default()
    };
    let mut script: Vec<_> = replies.iter().map(|names| Ok(calling(names))).collect();
    script.push(done());
    let r = run_tools(script, config, &tools).await;
    r.result.as_ref().unwrap();
    (r, tools)
}

/// The model's final text reply.
/// A call of the `now` tool with id `id`, as a chat reply's `tool_calls` holds it.
fn now_call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "now", "arguments": "{}"}})
}

/// An assistant reply that calls `now` once per id (no text, no reasoning).
fn calls(ids: &[&str]) -> Result<Value, TransportError> {
    let calls: Vec<Value> = ids.iter().map(|id| now_call(id)).collect();
    Ok(json!({"role": "assistant", "content": null, "tool_calls": calls}))
}

fn done() -> Result<Value, TransportError> {
    Ok(json!({"role": "assistant", "content": "done"}))
}

/// [`run_with`] on provider `agg` from an empty history.
async fn run_tools(
    script: Vec<Result<Value, TransportError>>,
    config: DriverConfig,
    tools: &dyn Tools,
) -> Run {
    run_with("agg", json!([]), script, config, tools).await
}

fn calling(names: &[&str]) -> Value {
    let calls: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({"id": format!("c{i}"), "type": "function",
                   "function": {"name": name, "arguments": "{}"}})
        })
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

/// The tool results stored by a run, as (tool_call_id, text).
fn tool_results(r: &Run) -> Vec<(String, String)> {
    r.log
        .messages
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            let text = m.content.as_ref().unwrap().as_str().unwrap().into_owned();
            (m.tool_call_id.clone().unwrap(), text)
        })
        .collect()
}

#[test]
fn the_tool_caps_have_their_documented_defaults() {
    let config = DriverConfig::default();
    assert_eq!(config.max_tool_calls, 16);
    assert_eq!(config.max_tool_output, 512 * 1024);
    assert_eq!(config.tool_timeout, Duration::from_secs(30));
}

#[tokio::test]
async fn calls_beyond_the_per_reply_cap_are_refused_and_each_still_gets_a_result() {
    let config = DriverConfig {
        max_tool_calls: 2,
        ..DriverConfig::default()
    };
    let (r, tools) = run_sized(3, config, &[&["a", "b", "c", "d", "e"]]).await;
    assert_eq!(*tools.calls.lock().unwrap(), 2, "only the first two ran");
    let results = tool_results(&r);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(results[1].1, "xxx");
    for (_, text) in &results[2..] {
        assert_eq!(text, "refused: more than 2 tool calls in one reply");
    }
    // Every call is paired with its result in the next request.
    let sent = r.sent[1]["messages"].as_array().unwrap();
    assert_eq!(sent.iter().filter(|m| m["role"] == "tool").count(), 5);
    let told = r
        .events
        .iter()
        .filter(|e| matches!(e, DriverEvent::ToolCall { .. }))
        .count();
    assert_eq!(told, 2, "refused calls are not announced");
}

#[tokio::test]
async fn tool_output_of_a_turn_is_capped_across_replies() {
    let config = DriverConfig {
        max_tool_output: 25,
        ..DriverConfig::default()
    };
    let (r, tools) = run_sized(10, config, &[&["a", "b"], &["c", "d"]]).await;
    assert_eq!(*tools.calls.lock().unwrap(), 3);
    let texts: Vec<String> = tool_results(&r).into_iter().map(|(_, t)| t).collect();
    assert_eq!(texts[0], "xxxxxxxxxx");
    assert_eq!(texts[1], "xxxxxxxxxx");
    assert_eq!(
        texts[2],
        "xxxxx\n[cut: the tool output of this turn exceeded 25 bytes]"
    );
    assert_eq!(
        texts[3],
        "refused: the tool output of this turn exceeded 25 bytes"
    );
}

#[tokio::test]
async fn a_tool_that_never_answers_times_out_and_the_turn_goes_on() {
    let config = DriverConfig {
        tool_timeout: Duration::from_millis(50),
        ..DriverConfig::default()
    };
    let (r, _) = run_sized(2, config, &[&["hang", "ok"]]).await;
    let results = tool_results(&r);
    assert_eq!(results[0].0, "c0");
    assert_eq!(results[0].1, "error: hang timed out after 0.1 s");
    assert_eq!(results[1].1, "xx");
}

/// A second wire, made up for this test: its own JSON (`turns`, `who`, `say`, `thought`), its
/// own refusable field and reply shape. The driver runs it with no change.
mod mini_wire {
    use super::*;

    /// Replies from a script in the wire's own shape, recording every body.
    struct Mini {
        script: Mutex<Vec<Result<Value, TransportError>>>,
        sent: Mutex<Vec<Value>>,
    }

    #[async_trait::async_trait]
    impl Wire for Mini {
        fn id(&self) -> &'static str {
            "mini"
        }

        fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
            let target = &parts.decision.target;
            let refused = parts.wire_verdicts.refused_for("mini", target);
            let keep_thoughts = !refused.contains(&"thought");
            let mut refusable = Vec::new();
            let turns: Vec<Value> = parts
                .history
                .iter()
                .map(|m| {
                    let text = m
                        .content
                        .as_ref()
                        .and_then(|c| c.as_str().map(|s| s.into_owned()))
                        .unwrap_or_default();
                    let mut turn = json!({"who": m.role.as_str(), "say": text});
                    if let Some(rc) = m.reasoning_content.as_ref().filter(|_| keep_thoughts) {
                        turn["thought"] = json!(rc.text());
                        refusable.push("thought");
                    }
                    turn
                })
                .collect();
            let body = json!({"model": target.model, "turns": turns, "stream": parts.stream});
            Ok(outgoing(&body, parts, refusable))
        }

        async fn send(
            &self,
            request: &Outgoing,
            origin: Origin,
            on_delta: OnDelta<'_>,
        ) -> SendResult {
            record_sent(&self.sent, request);
            let reply = self.script.lock().unwrap().remove(0)?;
            let thought = reply["thought"].as_str().unwrap_or_default();
            let say = reply["say"].as_str().unwrap_or_default();
            if request.stream {
                on_delta(Delta::Reasoning(thought));
                on_delta(Delta::Content(say));
            }
            let mut message = Message::text(Role::Assistant, say);
            message.reasoning_content = Some(crate::raw::TextCarrier::new(thought));
            if let Some(call) = reply["call"].as_str() {
                message.tool_calls =
                    Some(vec![crate::message::ToolCall::function("c1", call, "{}")]);
            }
            message.origin = Some(origin);
            let usage = Usage::new(
                reply["in"].as_u64().unwrap_or(0),
                reply["out"].as_u64().unwrap_or(0),
                reply["thinking"].as_u64().unwrap_or(0),
                0,
                0,
            );
            Ok(Reply {
                message,
                meta: ReplyMeta::new(None, Some(usage)),
            })
        }
    }

    #[tokio::test]
    async fn a_second_wire_gets_negotiation_backoff_tools_deltas_and_usage() {
        let wire = Mini {
            script: Mutex::new(vec![
                Err(http(
                    400,
                    r#"{"error":"unknown field `thought` in turns[1]"}"#,
                )),
                Err(http(503, "busy")),
                Ok(
                    json!({"say": "", "thought": "need the time", "call": "now", "in": 10, "out": 4, "thinking": 3}),
                ),
                Ok(json!({"say": "noon", "thought": "got it", "in": 12, "out": 5, "thinking": 2})),
            ]),
            sent: Mutex::new(Vec::new()),
        };
        let log = MemoryLog::default();
        let decision = resolved("acme");
        let config = DriverConfig {
            stream: true,
            base_delay: Duration::from_millis(1),
            ..DriverConfig::default()
        };
        let parts = Parts {
            decision: &decision,
            wire: &wire,
            log: &log,
            tools: &Clock,
            config: &config,
        };
        let history = json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "reasoning_content": "old thought"}
        ]);
        let (outcome, conversation, events) = drive(parts, history, "time?").await;
        let outcome = outcome.unwrap();

        let sent = wire.sent.lock().unwrap().clone();
        assert_eq!(
            sent.len(),
            4,
            "refused, retried into a 503, backed off, tool step"
        );
        assert_eq!(sent[0]["turns"][1]["thought"], "old thought");
        for body in &sent[1..] {
            assert!(
                body["turns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t.get("thought").is_none()),
                "after the verdict no thought is sent: {body}"
            );
        }
        // The verdict is this wire's, persisted before the retry; chat verdicts are untouched.
        let target = &decision.target;
        assert_eq!(
            log.wire_verdicts
                .lock()
                .unwrap()
                .refused_for("mini", target),
            ["thought"]
        );
        assert_eq!(
            conversation.wire_verdicts.refused_for("mini", target),
            ["thought"]
        );
        assert!(log.verdicts.lock().unwrap().is_none());
        assert!(conversation.verdicts.0.is_empty());

        assert!(events.contains(&DriverEvent::Refused {
            carriers: vec!["thought"],
            status: Some(400)
        }));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, DriverEvent::Retrying { attempt: 1, .. }))
        );
        assert!(events.contains(&DriverEvent::ToolCall { name: "now".into() }));
        assert!(events.contains(&DriverEvent::Delta {
            reasoning: true,
            text: "need the time".into()
        }));
        assert!(events.contains(&DriverEvent::Delta {
            reasoning: false,
            text: "noon".into()
        }));

        // Tool loop: assistant call, tool result, answer; usage summed in the log.
        let roles: Vec<&str> = outcome
            .new_messages
            .iter()
            .map(|m| m.role.as_str())
            .collect();
        assert_eq!(roles, ["assistant", "tool", "assistant"]);
        assert_eq!(outcome.requests, 4);
        assert_eq!(outcome.usage.len(), 2);
        assert_eq!(*log.usage.lock().unwrap(), Usage::new(22, 9, 5, 0, 0));
    }
}

#[tokio::test]
async fn a_step_is_stored_whole_with_every_tool_result() {
    let r = run("agg", json!([]), vec![calls(&["c1", "c2"]), done()], 0).await;
    r.result.unwrap();
    let batches = r.log.batches.lock().unwrap().clone();
    assert_eq!(
        batches,
        [vec!["user", "assistant", "tool", "tool"], vec!["assistant"]],
        "one transaction per step: the reply with all its results"
    );
}

#[tokio::test]
async fn a_failed_step_write_stores_nothing_of_the_step() {
    let log = MemoryLog::default();
    *log.fail_appends.lock().unwrap() = Some(1);
    let wire = Scripted {
        script: Mutex::new(vec![calls(&["c1"]), calls(&["c2"])]),
        sent: Mutex::new(Vec::new()),
        journal: Arc::new(Mutex::new(Vec::new())),
    };
    let decision = resolved("agg");
    let config = DriverConfig::default();
    let driver = Driver {
        decision: &decision,
        wire: &wire,
        log: &log,
        tools: &Clock,
        config: &config,
        notify: &|_| {},
    };
    let mut conversation = Conversation::default();
    let err = driver
        .run_turn(&mut conversation, Message::text(Role::User, "go"))
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::Log(_)), "{err}");
    let stored = log.messages.lock().unwrap().clone();
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool"],
        "the first step, whole; nothing of the second"
    );
    assert_eq!(conversation.messages, stored, "memory holds what is stored");
}

#[tokio::test]
async fn a_dangling_stored_call_is_paired_on_the_wire_and_told_once() {
    let r = run(
        "agg",
        json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null,
             "tool_calls": [now_call("lost")]}
        ]),
        vec![Ok(json!({"role": "assistant", "content": "fine"}))],
        0,
    )
    .await;
    r.result.unwrap();
    let sent = r.sent[0]["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
    assert_eq!(sent[2]["content"], crate::pairing::INTERRUPTED_RESULT);
    assert_eq!(
        r.events
            .iter()
            .filter(|e| matches!(
                e,
                DriverEvent::Repaired {
                    unanswered: 1,
                    orphans: 0
                }
            ))
            .count(),
        1
    );
    let stored = r.log.messages.lock().unwrap().clone();
    assert!(
        stored.iter().all(|m| m.role != Role::Tool),
        "the synthetic result is never stored"
    );
}

/// A 503 then the reply `hi`, with three quick retries; the request streamed or not.
async fn overloaded_then_hi(stream: bool) -> Run {
    let config = DriverConfig {
        max_backoff_retries: 3,
        base_delay: Duration::from_millis(1),
        stream,
        ..DriverConfig::default()
    };
    let script = vec![
        Err(http(503, "overloaded")),
        Ok(json!({"role": "assistant", "content": "hi"})),
    ];
    run_tools(script, config, &Clock).await
}

#[tokio::test]
async fn a_failure_after_text_streamed_to_the_caller_is_not_retried() {
    let r = overloaded_then_hi(true).await;
    let err = r.result.unwrap_err();
    assert!(
        matches!(
            &err,
            DriverError::AfterOutput(TransportError::Http { status: 503, .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        r.sent.len(),
        1,
        "one request: the caller already saw its text"
    );
    assert_eq!(
        err.to_string(),
        "HTTP 503: overloaded (after part of the reply had streamed, so it was not retried)"
    );
    assert!(r.log.messages.lock().unwrap().is_empty(), "nothing stored");
    assert!(
        r.conversation.messages.is_empty(),
        "memory is what is stored"
    );
    assert_eq!(
        r.events,
        [DriverEvent::Delta {
            reasoning: false,
            text: "Hel".into()
        }]
    );
}

#[tokio::test]
async fn a_failure_before_any_text_streamed_is_still_retried() {
    let r = overloaded_then_hi(false).await;
    assert_eq!(r.result.unwrap().requests, 2);
    assert_eq!(r.sent.len(), 2);
}

/// Drives `input` on `conversation` with client-side tools (the caller runs them).
async fn client_turn(
    conversation: &mut Conversation,
    log: &MemoryLog,
    script: Vec<Result<Value, TransportError>>,
    input: Vec<Message>,
) -> (Result<crate::driver::TurnOutcome, DriverError>, Vec<Value>) {
    let wire = Scripted {
        script: Mutex::new(script),
        sent: Mutex::new(Vec::new()),
        journal: Arc::new(Mutex::new(Vec::new())),
    };
    let decision = resolved("deepseek");
    let config = DriverConfig {
        client_tools: true,
        ..DriverConfig::default()
    };
    let driver = Driver {
        decision: &decision,
        wire: &wire,
        log,
        tools: &Sized::default(),
        config: &config,
        notify: &|_| {},
    };
    let result = driver.run(conversation, input).await;
    let sent = wire.sent.lock().unwrap().clone();
    (result, sent)
}

fn result_for(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.tool_call_id = Some(id.into());
    m
}

#[tokio::test]
async fn client_side_tools_store_the_calling_reply_and_the_next_turn_brings_the_results() {
    let log = MemoryLog::default();
    let mut conversation = Conversation::default();
    let (first, _) = client_turn(
        &mut conversation,
        &log,
        vec![Ok(calling(&["now", "weather"]))],
        vec![Message::text(Role::User, "go")],
    )
    .await;
    let first = first.unwrap();
    assert_eq!(
        first.finish,
        Some(crate::transport::FinishReason::ToolCalls)
    );
    assert_eq!(
        first.requests, 1,
        "the driver ran no tool and sent nothing more"
    );
    assert_eq!(first.new_messages.len(), 1);
    assert_eq!(
        *log.batches.lock().unwrap(),
        [vec!["user", "assistant"]],
        "the calling reply is a step of its own"
    );
    assert_eq!(
        first.new_messages[0]
            .reasoning_content
            .as_ref()
            .unwrap()
            .text(),
        " ",
        "creation rules hold: a must-echo tool turn is pinned its pad"
    );

    let (second, sent) = client_turn(
        &mut conversation,
        &log,
        vec![Ok(json!({"role": "assistant", "content": "12:00, sunny"}))],
        vec![result_for("c0", "12:00"), result_for("c1", "sunny")],
    )
    .await;
    let second = second.unwrap();
    assert_eq!(second.finish, None, "the scripted wire reports no reason");
    assert_eq!(
        log.batches.lock().unwrap()[1],
        ["tool", "tool", "assistant"],
        "the results are stored with the step they led to"
    );
    let roles: Vec<&str> = sent[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(sent[0]["messages"][1]["reasoning_content"], " ");
    assert_eq!(conversation.messages.len(), 5);
}

#[tokio::test]
async fn a_tool_result_answering_no_open_call_is_refused_before_anything_is_sent() {
    let log = MemoryLog::default();
    let mut conversation = Conversation::default();
    client_turn(
        &mut conversation,
        &log,
        vec![Ok(calling(&["now"]))],
        vec![Message::text(Role::User, "go")],
    )
    .await
    .0
    .unwrap();
    let (result, sent) = client_turn(
        &mut conversation,
        &log,
        vec![Ok(json!({"role": "assistant", "content": "x"}))],
        vec![result_for("c9", "?")],
    )
    .await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid input: tool result `c9` answers no open call of the last reply"
    );
    assert!(sent.is_empty());
    assert_eq!(conversation.messages.len(), 2, "memory unchanged");
    assert_eq!(log.batches.lock().unwrap().len(), 1, "nothing more stored");
}

#[test]
fn a_tool_call_fragment_becomes_a_tool_call_delta_event() {
    let first = Delta::ToolCall {
        index: 1,
        id: Some("call_2"),
        name: Some("now"),
        arguments: "{\"tz\":",
    };
    assert_eq!(
        crate::driver::delta_event(first),
        DriverEvent::ToolCallDelta {
            index: 1,
            id: Some("call_2".into()),
            name: Some("now".into()),
            arguments: "{\"tz\":".into(),
        }
    );
    let later = Delta::ToolCall {
        index: 1,
        id: None,
        name: None,
        arguments: "\"UTC\"}",
    };
    assert_eq!(
        crate::driver::delta_event(later),
        DriverEvent::ToolCallDelta {
            index: 1,
            id: None,
            name: None,
            arguments: "\"UTC\"}".into(),
        }
    );
    assert_eq!(
        crate::driver::delta_event(Delta::Content("hi")),
        DriverEvent::Delta {
            reasoning: false,
            text: "hi".into(),
        }
    );
}

#[test]
fn the_config_s_sampling_reaches_the_parts_a_wire_encodes() {
    let decision = resolved("plain");
    let sampling = crate::sampling::Sampling::new()
        .seed(7)
        .tool_choice(crate::sampling::ToolChoice::Required);
    let config = DriverConfig {
        sampling: sampling.clone(),
        ..DriverConfig::default()
    };
    let conversation = Conversation::default();
    let parts = config.parts(&decision, &[], &conversation);
    assert_eq!(parts.sampling, &sampling);
    let empty = RequestParts::new(&[], &decision, &conversation.verdicts);
    assert!(empty.sampling.is_empty());
}

/// One turn answered `hi` on provider `plain`, with `passthrough`.
async fn plain_hi(passthrough: crate::passthrough::Passthrough) -> Run {
    let config = DriverConfig {
        passthrough,
        ..DriverConfig::default()
    };
    let script = vec![Ok(json!({"role": "assistant", "content": "hi"}))];
    run_with("plain", json!([]), script, config, &Clock).await
}

#[tokio::test]
async fn server_tools_to_a_wire_that_cannot_take_them_fail_the_turn_before_anything_is_sent() {
    let tool = crate::raw::RawJson::from_text(
        r#"{"type":"code_execution_20250825","name":"code_execution"}"#,
    )
    .unwrap();
    let run = plain_hi(crate::passthrough::Passthrough::new().server_tool(tool)).await;
    match run.result {
        Err(DriverError::Transport(TransportError::Unsupported {
            parameter,
            wire,
            why,
        })) => {
            assert_eq!(parameter, "tools");
            assert_eq!(wire, "the chat wire (m)");
            assert!(
                why.contains("`code_execution` (code_execution_20250825)"),
                "{why}"
            );
        }
        other => panic!("expected the tools refused, got {other:?}"),
    }
    assert!(
        run.sent.is_empty(),
        "nothing reached the wire: {:?}",
        run.sent
    );
    assert!(
        run.log.messages.lock().unwrap().is_empty(),
        "nothing stored"
    );

    // Betas and a thinking object alone are left out, and the turn runs.
    let run = plain_hi(
        crate::passthrough::Passthrough::new()
            .betas(["web-fetch-2025-09-10"])
            .thinking(crate::raw::RawJson::from_text(r#"{"type":"adaptive"}"#).unwrap()),
    )
    .await;
    assert!(run.result.is_ok(), "{:?}", run.result.err());
    assert_eq!(run.sent.len(), 1);
}
