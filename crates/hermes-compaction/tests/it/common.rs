//! Shared helpers for the compaction tests: routes, generated histories and structural checks.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use hermes_compaction::{CompactionConfig, is_checkpoint, is_real_user};
use hermes_core::estimate_text;
use hermes_core::route::{
    CarrierSet, DataRoute, PadRule, ReasoningRoute, ResolveOptions, RouteDecision, RouteTable,
};
use hermes_core::{Message, Role, RouteTarget};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Runs a future that never waits (the fake summarizers answer at once).
pub(crate) fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the future waited"),
    }
}

/// The model that minted the "own" opaque items.
pub(crate) const OWN_MODEL: &str = "gemini-own";

/// `route` resolved for `provider` at `base` (a table of that route alone, as its default row).
fn decide(route: Arc<dyn ReasoningRoute>, provider: &str, base: &str) -> RouteDecision {
    RouteTable::new(route).resolve(
        &RouteTarget::new(provider, Some(base), OWN_MODEL),
        ResolveOptions::default(),
    )
}

/// RC-only must-echo (DeepSeek-like).
pub(crate) fn echo_route() -> RouteDecision {
    decide(
        Arc::new(
            DataRoute::new("echo", CarrierSet::RC).with_echo("deepseek", PadRule::EveryAssistant),
        ),
        "deepseek",
        "https://api.deepseek.com/v1",
    )
}

/// Every carrier, on a Gemini endpoint (native Gemini fields rendered).
pub(crate) fn all_gemini_route() -> RouteDecision {
    decide(
        Arc::new(DataRoute::new("all", CarrierSet::ALL)),
        "gemini-openai",
        "https://generativelanguage.googleapis.com/v1beta/openai",
    )
}

/// Every carrier on Copilot (Copilot and Gemini native fields rendered).
pub(crate) fn all_copilot_route() -> RouteDecision {
    decide(
        Arc::new(DataRoute::new("all-copilot", CarrierSet::ALL)),
        "copilot",
        "https://api.githubcopilot.com",
    )
}

/// A strict-schema route (Mistral-like).
pub(crate) fn strict_route() -> RouteDecision {
    decide(
        Arc::new(DataRoute::new("strict", CarrierSet::NONE).strict_schema()),
        "mistral",
        "https://api.mistral.ai/v1",
    )
}

/// Every carrier, readable thinking only on the newest turn.
pub(crate) fn newest_only_route() -> RouteDecision {
    decide(
        Arc::new(DataRoute::new("newest-only", CarrierSet::ALL).newest_thinking_only()),
        "custom",
        "https://llm.example.test/v1",
    )
}

pub(crate) fn routes() -> Vec<RouteDecision> {
    vec![
        echo_route(),
        all_gemini_route(),
        all_copilot_route(),
        strict_route(),
        newest_only_route(),
    ]
}

/// A config whose trigger is `threshold` tokens.
pub(crate) fn config_with_threshold(
    threshold: usize,
    protect_first: usize,
    protect_last: usize,
    keep_tool_outputs: usize,
) -> CompactionConfig {
    CompactionConfig {
        limits: hermes_compaction::ModelLimits {
            context_window: threshold,
            max_output: 0,
        },
        trigger_percent: 100,
        target_percent: 50,
        protect_first,
        protect_last,
        keep_tool_outputs,
        summary_max_tokens: 64,
    }
}

pub(crate) fn parse(value: &Value) -> Vec<Message> {
    serde_json::from_str(&value.to_string()).unwrap()
}

// ---- generated histories ----

/// A piece of text: ASCII with escapes, CJK, Hangul, fullwidth and astral characters.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "word ",
            "Zz9",
            " ",
            "\n",
            "\"",
            "\\",
            "/",
            "\t",
            "中",
            "文字",
            "한국어",
            "ＦＵＬＬ",
            "😀",
            "é",
            "かな",
        ]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// An opaque blob (base64-like), of varied length.
pub(crate) fn blob() -> impl Strategy<Value = String> {
    (
        1usize..60,
        prop::sample::select(vec!["QUJD", "c2ln+/==", "ZW5j"]),
    )
        .prop_map(|(n, unit)| unit.repeat(n))
}

fn detail_item() -> impl Strategy<Value = Value> {
    (0u8..6, text(), blob()).prop_map(|(kind, t, b)| match kind {
        0 => json!({"type": "reasoning.text", "text": t, "signature": b, "format": "anthropic-claude-v1"}),
        1 => json!({"type": "reasoning.text", "text": t}),
        2 => json!({"type": "reasoning.summary", "summary": t}),
        3 => json!({"type": "reasoning.encrypted", "data": b, "id": "rs_1"}),
        4 => json!({"type": "thinking", "thinking": t, "signature": b}),
        _ => json!({"type": "redacted_thinking", "data": b}),
    })
}

fn native_record() -> impl Strategy<Value = Option<Value>> {
    prop::option::of((any::<bool>(), any::<bool>(), blob(), blob(), text())).prop_map(|o| {
        o.map(|(gemini, copilot, sig, opaque, t)| {
            let mut r = json!({"type": "hermes.native_assistant"});
            if gemini {
                r["extra_content"] = json!({"google": {"thought_signature": sig}});
            }
            if copilot {
                r["reasoning_opaque"] = json!(opaque);
                r["reasoning_text"] = json!(t);
            }
            r
        })
    })
}

#[derive(Clone, Debug)]
pub(crate) struct CallSpec {
    args: String,
    gemini_sig: Option<String>,
    copilot_sig: Option<String>,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (text(), prop::option::of(blob()), prop::option::of(blob())).prop_map(
        |(args, gemini_sig, copilot_sig)| CallSpec {
            args: json!({"q": args}).to_string(),
            gemini_sig,
            copilot_sig,
        },
    )
}

#[derive(Clone, Debug)]
pub(crate) struct AsstSpec {
    content: Option<String>,
    rc: Option<String>,
    r: Option<String>,
    details: Vec<Value>,
    native: Option<Value>,
    origin: u8,
    calls: Vec<CallSpec>,
}

fn reasoning_text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(String::new())),
        1 => Just(Some(" ".to_owned())),
        4 => text().prop_map(Some),
    ]
}

fn asst(calls: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = AsstSpec> {
    (
        prop::option::of(text()),
        reasoning_text(),
        reasoning_text(),
        prop::collection::vec(detail_item(), 0..4),
        native_record(),
        0u8..3,
        prop::collection::vec(call_spec(), calls),
    )
        .prop_map(
            |(content, rc, r, details, native, origin, calls)| AsstSpec {
                content,
                rc,
                r,
                details,
                native,
                origin,
                calls,
            },
        )
}

#[derive(Clone, Debug)]
pub(crate) struct TurnSpec {
    user: String,
    steps: Vec<(AsstSpec, Vec<String>)>,
    answer: Option<AsstSpec>,
}

fn turn(in_flight: bool) -> impl Strategy<Value = TurnSpec> {
    let steps = prop::collection::vec(
        asst(1..=3).prop_flat_map(|a| {
            let n = a.calls.len();
            (Just(a), prop::collection::vec(text(), n..=n))
        }),
        if in_flight { 1..4 } else { 0..4 },
    );
    let answer = if in_flight {
        Just(None).boxed()
    } else {
        asst(0..=0).prop_map(Some).boxed()
    };
    (text(), steps, answer).prop_map(|(user, steps, answer)| TurnSpec {
        user,
        steps,
        answer,
    })
}

/// A generated history: an optional system prompt, 1–14 turns (plain answers and tool loops of
/// 1–3 steps with 1–3 parallel calls each), the last one possibly an in-flight tool loop.
pub(crate) fn history() -> impl Strategy<Value = Vec<Message>> {
    (
        any::<bool>(),
        prop::collection::vec(turn(false), 1..14),
        prop::option::of(turn(true)),
    )
        .prop_map(|(system, mut turns, in_flight)| {
            turns.extend(in_flight);
            build(system, &turns)
        })
}

fn assistant_json(a: &AsstSpec, next_id: &mut usize, ids: &mut Vec<String>) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert(
        "content".into(),
        a.content.as_ref().map_or(Value::Null, |c| json!(c)),
    );
    if let Some(rc) = &a.rc {
        m.insert("reasoning_content".into(), json!(rc));
    }
    if let Some(r) = &a.r {
        m.insert("reasoning".into(), json!(r));
    }
    let mut details = a.details.clone();
    details.extend(a.native.clone());
    if !details.is_empty() {
        m.insert("reasoning_details".into(), Value::Array(details));
    }
    if !a.calls.is_empty() {
        let calls: Vec<Value> = a
            .calls
            .iter()
            .map(|c| {
                let id = format!("call_{next_id}");
                *next_id += 1;
                ids.push(id.clone());
                let mut function = json!({"name": "web_search", "arguments": c.args});
                if let Some(sig) = &c.copilot_sig {
                    function["thought_signature"] = json!(sig);
                }
                let mut call = json!({"id": id, "type": "function", "function": function});
                if let Some(sig) = &c.gemini_sig {
                    call["extra_content"] = json!({"google": {"thought_signature": sig}});
                }
                call
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    match a.origin {
        0 => {}
        1 => {
            m.insert(
                "origin".into(),
                json!({"provider": "gemini-openai", "host": "generativelanguage.googleapis.com", "model": OWN_MODEL}),
            );
        }
        _ => {
            m.insert(
                "origin".into(),
                json!({"provider": "anthropic", "host": "api.anthropic.com", "model": "claude-other"}),
            );
        }
    }
    Value::Object(m)
}

pub(crate) fn build(system: bool, turns: &[TurnSpec]) -> Vec<Message> {
    let mut out = Vec::new();
    if system {
        out.push(json!({"role": "system", "content": "You are a careful agent."}));
    }
    let mut next_id = 0;
    for t in turns {
        out.push(json!({"role": "user", "content": t.user}));
        for (a, results) in &t.steps {
            let mut ids = Vec::new();
            out.push(assistant_json(a, &mut next_id, &mut ids));
            for (id, r) in ids.iter().zip(results) {
                out.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
            }
        }
        if let Some(a) = &t.answer {
            out.push(assistant_json(a, &mut next_id, &mut Vec::new()));
        }
    }
    parse(&Value::Array(out))
}

// ---- checks ----

/// Every tool result follows its call's assistant message (with only tool results between), and
/// every call of an assistant message is answered right after it.
pub(crate) fn assert_units_whole(view: &[Message]) {
    for (j, m) in view.iter().enumerate() {
        if m.role == Role::Tool {
            let owner = view[..j]
                .iter()
                .rposition(|p| p.role != Role::Tool)
                .map(|k| &view[k]);
            let owner = owner.expect("a tool result with no message before it");
            let ids: Vec<_> = owner
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.clone())
                .collect();
            assert!(
                ids.contains(m.tool_call_id.as_ref().unwrap()),
                "tool result {j} separated from its call"
            );
        }
        if m.role == Role::Assistant
            && let Some(calls) = &m.tool_calls
        {
            let answered: Vec<_> = view[j + 1..]
                .iter()
                .take_while(|r| r.role == Role::Tool)
                .filter_map(|r| r.tool_call_id.clone())
                .collect();
            for c in calls {
                assert!(
                    answered.contains(c.id.as_ref().unwrap()),
                    "call {:?} at {j} lost its result",
                    c.id
                );
            }
        }
    }
}

/// The view compress must at least keep (head, one checkpoint, the minimal tail), built
/// independently of the implementation's walk: its estimate is what the guarantee rests on.
pub(crate) fn minimal_view(
    history: &[Message],
    config: &CompactionConfig,
    summary: &str,
) -> Vec<Message> {
    let n = history.len();
    let mut head = config.protect_first.min(n);
    while head < n && history[head].role == Role::Tool {
        head += 1;
    }
    let mut tail = n.saturating_sub(config.protect_last);
    if let Some(u) = history.iter().rposition(is_real_user) {
        tail = tail.min(u);
    }
    while tail > 0 && history[tail].role == Role::Tool {
        tail -= 1;
    }
    let keep = |m: &&Message| !is_checkpoint(m);
    if tail <= head {
        return history.iter().filter(keep).cloned().collect();
    }
    history[..head]
        .iter()
        .filter(keep)
        .cloned()
        .chain(std::iter::once(hermes_compaction::checkpoint(summary)))
        .chain(history[tail..].iter().filter(keep).cloned())
        .collect()
}

/// A slow reference estimate: shape the history, serialise it, and price every string value on
/// the wire except object keys and opaque carriers.
pub(crate) fn reference_estimate(history: &[Message], decision: &RouteDecision) -> usize {
    let ctx = hermes_wire_chat::ShapeContext::new(decision, &hermes_core::Verdicts::default());
    let wire = serde_json::to_value(hermes_wire_chat::shape(&ctx, history)).unwrap();
    wire.as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let assistant = m["role"] == "assistant";
            m.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| match k.as_str() {
                    "extra_content" | "reasoning_opaque" | "reasoning_text" if assistant => 0,
                    "reasoning_details" => v
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|item| !opaque_item(item))
                        .map(strings)
                        .sum(),
                    "tool_calls" => v
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| {
                            c.as_object()
                                .unwrap()
                                .iter()
                                .map(|(k, v)| match k.as_str() {
                                    "extra_content" => 0,
                                    "function" => v
                                        .as_object()
                                        .unwrap()
                                        .iter()
                                        .filter(|(k, _)| *k != "thought_signature")
                                        .map(|(_, v)| strings(v))
                                        .sum(),
                                    _ => strings(v),
                                })
                                .sum::<usize>()
                        })
                        .sum(),
                    _ => strings(v),
                })
                .sum::<usize>()
        })
        .sum()
}

fn opaque_item(item: &Value) -> bool {
    item["signature"]
        .as_str()
        .is_some_and(|s| !s.trim().is_empty())
        || item.get("data").is_some()
        || item.get("encrypted_content").is_some()
        || matches!(
            item["type"].as_str(),
            Some("reasoning.encrypted" | "redacted_thinking")
        )
}

fn strings(v: &Value) -> usize {
    match v {
        Value::String(s) => estimate_text(s),
        Value::Array(a) => a.iter().map(strings).sum(),
        Value::Object(o) => o.values().map(strings).sum(),
        _ => 0,
    }
}
