//! Tests for wire shaping against routes built here from data (the built-in table is tested by
//! the conformance suite in hermes-providers).

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_core::{
    CarrierSet, DataRoute, Message, MustEchoFamily, PadRule, ResolveOptions, RouteDecision,
    RouteMatcher, RouteTable, RouteTarget, ThinkingRequest, Verdicts,
};

use crate::{ChatRequest, ShapeContext, carrier_counts, shape};

fn table() -> RouteTable {
    let mut t = RouteTable::new(Arc::new(
        DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
    ));
    t.register(Arc::new(
        DataRoute::new("strict", CarrierSet::NONE)
            .strict_schema()
            .matching(RouteMatcher::new().providers(["mistral"])),
    ));
    t.register(Arc::new(
        DataRoute::new("agg", CarrierSet::ALL)
            .matching(RouteMatcher::new().providers(["openrouter"])),
    ));
    t.register(Arc::new(
        DataRoute::new("copilot", CarrierSet::RC)
            .matching(RouteMatcher::new().hosts(["githubcopilot.com"])),
    ));
    t.add_family(MustEchoFamily {
        name: "deepseek".to_owned(),
        matcher: RouteMatcher::new()
            .providers(["deepseek"])
            .models(["deepseek"]),
        pad: PadRule::EveryAssistant,
    });
    t
}

/// The test table's decision for `provider` at `base` (if any) and `model`.
fn decided(provider: &str, base: Option<&str>, model: &str) -> RouteDecision {
    table().resolve(
        &RouteTarget::new(provider, base, model),
        ResolveOptions::default(),
    )
}

fn history(json: Value) -> Vec<Message> {
    serde_json::from_value(json).unwrap()
}

fn shaped(
    provider: &str,
    base: Option<&str>,
    model: &str,
    h: &[Message],
    verdicts: &Verdicts,
) -> Value {
    let decision = decided(provider, base, model);
    serde_json::to_value(shape(&ShapeContext::new(&decision, verdicts), h)).unwrap()
}

/// [`mixed`] shaped for `provider` (no base URL) and `model`, with no verdicts.
fn shaped_mixed(provider: &str, model: &str) -> Value {
    shaped(provider, None, model, &mixed(), &Verdicts::default())
}

fn mixed() -> Vec<Message> {
    history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning": "only r",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "a", "reasoning_content": ""},
        {"role": "assistant", "content": "b", "reasoning_content": " "},
    ]))
}

#[test]
fn must_echo_pads_with_a_space_and_replays_r_as_rc() {
    let out = shaped_mixed("deepseek", "deepseek-v4");
    assert_eq!(out[1]["reasoning_content"], "only r");
    assert!(out[1].get("reasoning").is_none());
    assert_eq!(out[3]["reasoning_content"], " ");
    assert_eq!(out[4]["reasoning_content"], " ");
}

#[test]
fn a_pad_never_reaches_a_route_that_is_not_must_echo() {
    let out = shaped_mixed("acme", "gpt-5");
    assert_eq!(out[1]["reasoning_content"], "only r");
    assert!(out[3].get("reasoning_content").is_none());
    assert!(out[4].get("reasoning_content").is_none());
}

#[test]
fn strict_wins_over_must_echo() {
    let out = shaped_mixed("mistral", "deepseek-v4");
    for m in out.as_array().unwrap() {
        assert!(m.get("reasoning_content").is_none(), "{m}");
    }
}

#[test]
fn reasoning_echo_config_pads_an_rc_route() {
    let t = table();
    let decision = t.resolve(
        &RouteTarget::new("acme", None, "m"),
        ResolveOptions {
            reasoning_echo: true,
        },
    );
    assert_eq!(
        decision.echo.as_ref().map(|e| e.family.as_str()),
        Some("config")
    );
    let out = serde_json::to_value(shape(
        &ShapeContext::new(&decision, &Verdicts::default()),
        &mixed(),
    ))
    .unwrap();
    assert_eq!(out[3]["reasoning_content"], " ");
}

#[test]
fn the_stored_history_is_never_mutated_and_shaping_is_idempotent() {
    let h = mixed();
    let before = serde_json::to_string(&h).unwrap();
    let first = shaped("deepseek", None, "deepseek-v4", &h, &Verdicts::default());
    assert_eq!(serde_json::to_string(&h).unwrap(), before);
    let again: Vec<Message> = serde_json::from_value(first.clone()).unwrap();
    assert_eq!(
        shaped(
            "deepseek",
            None,
            "deepseek-v4",
            &again,
            &Verdicts::default()
        ),
        first
    );
}

#[test]
fn must_echo_never_loses_rc_to_a_verdict_but_other_routes_do() {
    let h = mixed();
    let mut v = Verdicts::default();
    let target = RouteTarget::new("deepseek", None, "deepseek-v4");
    v.record(&target, CarrierSet::RC);
    assert_eq!(
        shaped("deepseek", None, "deepseek-v4", &h, &v)[1]["reasoning_content"],
        "only r"
    );
    let mut v = Verdicts::default();
    v.record(&RouteTarget::new("acme", None, "gpt-5"), CarrierSet::RC);
    assert!(
        shaped("acme", None, "gpt-5", &h, &v)[1]
            .get("reasoning_content")
            .is_none()
    );
    assert_eq!(
        shaped("acme", None, "gpt-6", &h, &v)[1]["reasoning_content"],
        "only r"
    );
}

#[test]
fn native_record_only_on_its_own_route_and_reasoning_text_only_beside_opaque() {
    let h = history(json!([
        {"role": "assistant", "content": "x", "reasoning_opaque": "OPQ", "reasoning_text": "why"},
        {"role": "assistant", "content": "y", "reasoning_text": "alone"},
    ]));
    let copilot = shaped(
        "copilot",
        Some("https://api.githubcopilot.com"),
        "claude-x",
        &h,
        &Verdicts::default(),
    );
    assert_eq!(
        copilot[0],
        json!({"role": "assistant", "content": "x", "reasoning_opaque": "OPQ", "reasoning_text": "why"})
    );
    assert_eq!(copilot[1], json!({"role": "assistant", "content": "y"}));
    let other = shaped("openrouter", None, "claude-x", &h, &Verdicts::default());
    assert_eq!(other[0], json!({"role": "assistant", "content": "x"}));
}

#[test]
fn gemini_signatures_go_to_gemini_models_and_blank_ones_are_dropped() {
    let h = history(json!([
        {"role": "assistant", "content": "t", "extra_content": {"google": {"thought_signature": "MSG"}},
         "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}, "extra_content": {"google": {"thought_signature": "TC"}}},
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}, "extra_content": {"google": {"thought_signature": " "}}}
         ]},
    ]));
    let g = shaped("acme", None, "gemini-3-pro", &h, &Verdicts::default());
    assert_eq!(
        g[0]["extra_content"],
        json!({"google": {"thought_signature": "MSG"}})
    );
    assert_eq!(
        g[0]["tool_calls"][0]["extra_content"],
        json!({"google": {"thought_signature": "TC"}})
    );
    assert!(g[0]["tool_calls"][1].get("extra_content").is_none());
    let other = shaped("acme", None, "gpt-5", &h, &Verdicts::default());
    assert!(other[0].get("extra_content").is_none());
    assert!(other[0]["tool_calls"][0].get("extra_content").is_none());
}

/// A Gemini reply on the chat wire whose `extra_content` holds a lone surrogate escape beside
/// the signature (valid JSON no Rust string holds): captured, stored and replayed byte for byte
/// to the Gemini model (found by fuzzing: the signature was read as absent and left out).
#[test]
fn a_lone_surrogate_beside_a_gemini_signature_keeps_it_on_the_wire() {
    let extra = r#"{"google":{"thought_signature":"TVNH","note":"\ud800"}}"#;
    let call_extra = r#"{"google":{"thought_signature":"VEM\udfff"}}"#;
    let reply = format!(
        r#"{{"choices":[{{"index":0,"finish_reason":"tool_calls","message":{{"role":"assistant","content":"t","extra_content":{extra},"tool_calls":[{{"id":"a","type":"function","function":{{"name":"f","arguments":"{{}}"}},"extra_content":{call_extra}}}]}}}}]}}"#
    );
    let target = RouteTarget::new("acme", Some("https://gemini.example"), "gemini-3-pro");
    let origin = hermes_core::Origin {
        provider: "acme".into(),
        host: target.host_key(),
        model: "gemini-3-pro".into(),
    };
    let (msg, _) = crate::capture_message(&reply, origin).unwrap();
    let stored = serde_json::to_string(&[msg]).unwrap();
    let h: Vec<Message> = serde_json::from_str(&stored).unwrap();
    let decision = table().resolve(&target, ResolveOptions::default());
    let text = serde_json::to_string(&shape(
        &ShapeContext::new(&decision, &Verdicts::default()),
        &h,
    ))
    .unwrap();
    assert!(
        text.contains(&format!(r#""extra_content":{extra}"#)),
        "{text}"
    );
    assert!(
        text.contains(&format!(r#""extra_content":{call_extra}"#)),
        "{text}"
    );
}

#[test]
fn opaque_items_only_reach_the_model_and_host_that_minted_them() {
    let h = history(json!([
        {"role": "assistant", "content": "x", "reasoning": "readable",
         "reasoning_details": [
            {"type": "reasoning.text", "text": "t", "signature": "SIG"},
            {"type": "reasoning.summary", "summary": "s"}
         ],
         "origin": {"provider": "openrouter", "host": "openrouter.ai", "model": "a/model-a"}},
    ]));
    let home = Some("https://OpenRouter.ai:443/api/v1");
    let same = shaped("openrouter", home, "a/model-a", &h, &Verdicts::default());
    assert_eq!(same[0]["reasoning_details"].as_array().unwrap().len(), 2);
    let only_readable = |wire: &Value| {
        assert_eq!(
            wire["reasoning_details"],
            json!([{"type": "reasoning.summary", "summary": "s"}])
        );
        assert_eq!(wire["reasoning"], "readable");
        assert_eq!(wire["reasoning_content"], "readable");
    };
    // Another model on the same host, and the same model id on another host.
    only_readable(&shaped("openrouter", home, "b/model-b", &h, &Verdicts::default())[0]);
    let elsewhere = Some("https://gateway.example/v1");
    only_readable(
        &shaped(
            "openrouter",
            elsewhere,
            "a/model-a",
            &h,
            &Verdicts::default(),
        )[0],
    );
    // Back on the host that minted it, it is sent again.
    let back = shaped("openrouter", home, "a/model-a", &h, &Verdicts::default());
    assert_eq!(back[0]["reasoning_details"][0]["signature"], "SIG");

    let decision = decided("openrouter", elsewhere, "a/model-a");
    let explained = ShapeContext::new(&decision, &Verdicts::default()).explain(&h);
    assert!(
        explained[0].contains("1 opaque items left out: minted by a/model-a on openrouter.ai"),
        "{explained:?}"
    );
    // Counted once for the metrics, from the same plans.
    let ctx = ShapeContext::new(&decision, &Verdicts::default());
    let plans = ctx.plans(&h);
    let counts = carrier_counts(plans.iter().flatten());
    assert_eq!((counts.dropped_provenance, counts.demoted), (1, 0));
    let own = decided("openrouter", home, "a/model-a");
    let plans = ShapeContext::new(&own, &Verdicts::default()).plans(&h);
    assert!(carrier_counts(plans.iter().flatten()).is_empty());
}

#[test]
fn no_route_sends_a_key_outside_the_chat_completions_schema() {
    let h = history(json!([
        {"role": "user", "content": "q", "x_meta": 1, "timestamp": 1.5},
        {"role": "assistant", "content": "a", "refusal": null, "finish_reason": "stop",
         "codex_reasoning_items": [{"type": "reasoning", "encrypted_content": "gAAA"}],
         "tool_calls": [{"id": "c", "call_id": "c", "response_item_id": "fc_1", "type": "function",
                         "function": {"name": "f", "arguments": "{}", "x_f": 2}, "x_c": 3}]},
        {"role": "tool", "tool_call_id": "c", "name": "f", "content": "r", "_private": true},
        {"role": "assistant", "content": "done", "tool_calls": []},
    ]));
    for provider in ["mistral", "acme", "openrouter"] {
        let wire = shaped(provider, None, "m", &h, &Verdicts::default());
        assert_eq!(
            wire[0],
            json!({"role": "user", "content": "q"}),
            "{provider}"
        );
        assert_eq!(
            wire[1],
            json!({"role": "assistant", "content": "a",
                   "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            "{provider}"
        );
        assert_eq!(
            serde_json::to_string(&wire[2]).unwrap(),
            r#"{"role":"tool","tool_call_id":"c","content":"r"}"#,
            "{provider}: no name on a tool result, stored key order kept"
        );
        assert_eq!(
            wire[3],
            json!({"role": "assistant", "content": "done"}),
            "{provider}"
        );
    }
    let decision = decided("acme", None, "m");
    let explained = ShapeContext::new(&decision, &Verdicts::default()).explain(&h);
    assert_eq!(
        explained[0],
        "messages[0] user: left out (stored, no wire sends them): x_meta, timestamp"
    );
    assert!(
        explained[1].ends_with(
            "left out (stored, no wire sends them): refusal, finish_reason, codex_reasoning_items, call_id, response_item_id, x_c, x_f"
        ),
        "{explained:?}"
    );
    assert_eq!(
        explained[2],
        "messages[2] tool: left out (stored, no wire sends them): _private, name"
    );
}

#[test]
fn the_request_body_orders_model_messages_then_thinking_fields() {
    let h = mixed();
    let decision = decided("acme", None, "m");
    let body = ChatRequest::build(
        &h,
        &decision,
        &Verdicts::default(),
        ThinkingRequest::Effort(hermes_core::Effort::Max),
    );
    let text = serde_json::to_string(&body).unwrap();
    assert!(text.starts_with(r#"{"model":"m","messages":["#), "{text}");
    assert!(text.ends_with(r#"],"reasoning_effort":"xhigh"}"#), "{text}");
}

#[test]
fn explain_gives_one_line_per_assistant_message() {
    let decision = decided("deepseek", None, "deepseek-v4");
    let lines = ShapeContext::new(&decision, &Verdicts::default()).explain(&mixed());
    assert_eq!(
        lines,
        [
            "messages[1] assistant: reasoning_content sent (stored `reasoning` replayed as reasoning_content); reasoning absent (route does not read it); reasoning_details absent (route does not read it)",
            "messages[3] assistant: reasoning_content padded with \" \" (must-echo; stored value is blank); reasoning absent (route does not read it); reasoning_details absent (route does not read it)",
            "messages[4] assistant: reasoning_content padded with \" \" (must-echo; stored value is blank); reasoning absent (route does not read it); reasoning_details absent (route does not read it)",
        ]
    );
    // The two pads are the demotions the metrics count.
    let plans = ShapeContext::new(&decision, &Verdicts::default()).plans(&mixed());
    let counts = carrier_counts(plans.iter().flatten());
    assert_eq!((counts.demoted, counts.dropped_provenance), (2, 0));
}
