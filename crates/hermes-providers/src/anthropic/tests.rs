//! The Anthropic request body: what each target family receives, asserted on the exact JSON.

use hermes_core::route::{Effort, ThinkingRequest};
use hermes_core::{
    Message, RequestParts, ResolveOptions, RouteTarget, Verdicts, Wire, WireVerdicts,
};
use serde_json::{Value, json};

use super::body::{Drops, Flavor, PREFIX_KEY, PrefixDigest, Target, encode};
use super::{AnthropicWire, url};

const SIG: &str = r#"{"type":"thinking","thinking":"Call now \u00e9\/.","signature":"c2lnLTE="}"#;
const RED: &str = r#"{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}"#;
const OPUS: &str = "claude-opus-4-6";

/// Parses a history from JSON text, first writing the stored items [`SIG`] and [`RED`] in
/// where `step` left their placeholders, so their bytes are exactly as captured.
fn history(value: Value) -> Vec<Message> {
    let text = value
        .to_string()
        .replace("\"@SIG\"", SIG)
        .replace("\"@RED\"", RED);
    hermes_core::parse_history(&text).unwrap().messages
}

fn origin(model: &str) -> Value {
    origin_at("api.anthropic.com", model)
}

fn origin_at(host: &str, model: &str) -> Value {
    json!({"provider": "anthropic", "host": host, "model": model})
}

/// A signed tool step as captured from `model`, with its prefix digest.
fn step(model: &str, id: &str, digest: Option<String>) -> Value {
    let mut msg = json!({
        "role": "assistant", "content": null,
        "tool_calls": [{"id": id, "type": "function",
                        "function": {"name": "now", "arguments": "{\"n\":123456789012345678901234567890}"}}],
        "reasoning_content": "Call now é/.",
        "reasoning_details": ["@SIG", "@RED"],
        "origin": origin(model),
        "hermes_block_order": ["thinking", "redacted_thinking", "tool_use"],
    });
    if let Some(d) = digest {
        msg[PREFIX_KEY] = json!(d);
    }
    msg
}

fn target(base: &str) -> Target {
    Target {
        flavor: Flavor::Direct,
        base_url: base.to_owned(),
        max_tokens: None,
    }
}

struct Out {
    text: String,
    json: Value,
    notes: Vec<String>,
}

fn body_for(h: &[Message], base: &str, model: &str, thinking: ThinkingRequest) -> Out {
    body_with(h, &target(base), model, thinking, &Drops::default())
}

fn body_with(
    h: &[Message],
    target: &Target,
    model: &str,
    thinking: ThinkingRequest,
    drops: &Drops,
) -> Out {
    let table = crate::builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("anthropic", Some(&target.base_url), model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(h, &decision, &verdicts).thinking(thinking);
    let encoded = encode(&parts, target, drops).unwrap();
    let text = String::from_utf8(encoded.body).unwrap();
    Out {
        json: serde_json::from_str(&text).unwrap(),
        text,
        notes: encoded.notes,
    }
}

fn digest_of(h: &[Message]) -> String {
    let mut d = PrefixDigest::new();
    for m in h {
        d.add(m);
    }
    d.hex()
}

fn loop_history(model: &str) -> Vec<Message> {
    history(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "time?"},
        step(model, "toolu_1", None),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
    ]))
}

#[test]
fn in_the_loop_signed_blocks_go_back_verbatim_in_captured_order_before_tool_use() {
    let out = body_for(
        &loop_history(OPUS),
        "https://api.anthropic.com",
        OPUS,
        ThinkingRequest::Effort(Effort::High),
    );
    let expected_assistant = format!(
        r#"{{"role":"assistant","content":[{SIG},{RED},{{"type":"tool_use","id":"toolu_1","name":"now","input":{{"n":123456789012345678901234567890}}}}]}}"#
    );
    assert!(out.text.contains(&expected_assistant), "{}", out.text);
    assert_eq!(
        out.json["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(out.json["output_config"], json!({"effort": "high"}));
    assert!(out.json.get("temperature").is_none());
    assert!(out.notes.is_empty());
}

#[test]
fn system_and_the_last_block_carry_cache_breakpoints_never_a_thinking_block() {
    let out = body_for(
        &loop_history(OPUS),
        "https://api.anthropic.com",
        OPUS,
        ThinkingRequest::NoPreference,
    );
    assert_eq!(
        out.json["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        out.json["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
               "content": "12:00", "cache_control": {"type": "ephemeral"}}]})
    );
    assert_eq!(out.text.matches("cache_control").count(), 2);
    assert!(
        out.json.get("thinking").is_none(),
        "no preference, no request"
    );
    assert_eq!(out.json["max_tokens"], json!(16384));
}

#[test]
fn consecutive_tool_results_become_one_user_turn() {
    let h = history(json!([
        {"role": "user", "content": "two calls"},
        {"role": "assistant", "content": "Calling.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "now", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
    ]));
    let out = body_for(
        &h,
        "https://api.anthropic.com",
        OPUS,
        ThinkingRequest::NoPreference,
    );
    let messages = out.json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "text", "text": "Calling."},
               {"type": "tool_use", "id": "a", "name": "now", "input": {}},
               {"type": "tool_use", "id": "b", "name": "now", "input": {}}])
    );
    let results: Vec<&str> = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["a", "b"]);
}

#[test]
fn another_model_gets_no_stale_signature_and_the_loop_goes_with_thinking_disabled() {
    let out = body_for(
        &loop_history(OPUS),
        "https://api.anthropic.com",
        "claude-sonnet-4-5",
        ThinkingRequest::Effort(Effort::High),
    );
    assert!(!out.text.contains("signature"), "{}", out.text);
    assert!(!out.text.contains("redacted_thinking"));
    assert_eq!(out.json["thinking"], json!({"type": "disabled"}));
    assert!(out.json.get("temperature").is_none());
    assert_eq!(out.notes.len(), 1);
    assert!(
        out.notes[0].contains("thinking is disabled"),
        "{:?}",
        out.notes
    );
    // The same model on another host is another minter too.
    let out = body_for(
        &loop_history(OPUS),
        "https://us-east5-aiplatform.googleapis.com",
        OPUS,
        ThinkingRequest::Effort(Effort::High),
    );
    assert!(!out.text.contains("signature"));
}

#[test]
fn before_the_loop_blocks_travel_only_to_models_that_keep_them_and_only_on_an_unchanged_prefix() {
    let first = history(json!([{"role": "user", "content": "time?"}]));
    let digest = digest_of(&first);
    let h = |d: &str| {
        history(json!([
            {"role": "user", "content": "time?"},
            step(OPUS, "toolu_1", Some(d.to_owned())),
            {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
            {"role": "assistant", "content": "Noon.", "origin": origin(OPUS)},
            {"role": "user", "content": "thanks"},
        ]))
    };
    let kept = body_for(
        &h(&digest),
        "https://api.anthropic.com",
        OPUS,
        ThinkingRequest::NoPreference,
    );
    assert!(kept.text.contains(SIG), "{}", kept.text);
    let changed = body_for(
        &h("0000"),
        "https://api.anthropic.com",
        OPUS,
        ThinkingRequest::NoPreference,
    );
    assert!(
        !changed.text.contains("signature"),
        "a changed prefix drops the blocks"
    );
    // Opus 4.1 does not keep earlier thinking.
    let old = "claude-opus-4-1";
    let h_old = history(json!([
        {"role": "user", "content": "time?"},
        step(old, "toolu_1", Some(digest.clone())),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
        {"role": "assistant", "content": "Noon.", "origin": origin(old)},
        {"role": "user", "content": "thanks"},
    ]));
    let out = body_for(
        &h_old,
        "https://api.anthropic.com",
        old,
        ThinkingRequest::NoPreference,
    );
    assert!(!out.text.contains("signature"));
}

#[test]
fn must_echo_relays_get_unsigned_thinking_and_the_pad() {
    let h = history(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "one", "reasoning_content": "thought one"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "more"},
    ]));
    let out = body_for(
        &h,
        "https://api.deepseek.com/anthropic",
        "deepseek-v4-pro",
        ThinkingRequest::Effort(Effort::Low),
    );
    assert_eq!(
        out.json["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "thought one"})
    );
    assert_eq!(
        out.json["messages"][3]["content"][0],
        json!({"type": "thinking", "thinking": " "})
    );
    assert_eq!(
        out.json["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert!(out.json.get("temperature").is_none());
}

#[test]
fn unknown_relays_and_lookalike_hosts_get_no_thinking() {
    for base in [
        "https://relay.example.com/anthropic",
        "https://api.anthropic.com.evil.example",
        "https://evil-aiplatform.googleapis.com.example",
    ] {
        let out = body_for(
            &loop_history(OPUS),
            base,
            OPUS,
            ThinkingRequest::Effort(Effort::High),
        );
        assert!(!out.text.contains("thinking"), "{base}: {}", out.text);
    }
}

#[test]
fn budget_models_get_budget_and_max_tokens_above_it_and_no_temperature() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    let out = body_for(
        &h,
        "https://api.anthropic.com",
        "claude-sonnet-4-5",
        ThinkingRequest::Effort(Effort::Max),
    );
    assert_eq!(
        out.json["thinking"],
        json!({"type": "enabled", "budget_tokens": 32000})
    );
    assert_eq!(out.json["max_tokens"], json!(40192));
    assert!(
        out.json.get("temperature").is_none(),
        "API version 2026-10-21 has no temperature: {}",
        out.text
    );
    let off = body_for(
        &h,
        "https://api.anthropic.com",
        "claude-sonnet-4-5",
        ThinkingRequest::Off,
    );
    assert_eq!(off.json["thinking"], json!({"type": "disabled"}));
    let adaptive_off = body_for(&h, "https://api.anthropic.com", OPUS, ThinkingRequest::Off);
    assert!(adaptive_off.json.get("thinking").is_none());
    // A plain user message goes as a string, the SDK's own shape, unless it holds the
    // breakpoint.
    assert_eq!(
        out.json["messages"][0]["content"],
        json!([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn vertex_bodies_carry_anthropic_version_and_no_model() {
    let vertex = Target {
        flavor: Flavor::Vertex {
            project: "p1".into(),
            region: "us-east5".into(),
        },
        base_url: "https://us-east5-aiplatform.googleapis.com".into(),
        max_tokens: None,
    };
    let mut h = loop_history(OPUS);
    h[2].origin =
        serde_json::from_value(origin_at("us-east5-aiplatform.googleapis.com", OPUS)).unwrap();
    let out = body_with(
        &h,
        &vertex,
        OPUS,
        ThinkingRequest::Effort(Effort::High),
        &Drops::default(),
    );
    assert!(out.json.get("model").is_none());
    assert_eq!(out.json["anthropic_version"], json!("2026-10-21"));
    assert!(
        out.text.contains(SIG),
        "Vertex is Claude: the loop's blocks go back"
    );
    assert_eq!(
        url(&vertex, OPUS, true),
        "https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-opus-4-6:streamRawPredict"
    );
    assert_eq!(
        url(
            &target("https://r.services.ai.azure.com/anthropic"),
            OPUS,
            false
        ),
        "https://r.services.ai.azure.com/anthropic/v1/messages"
    );
}

#[test]
fn an_invalid_signature_is_resent_once_without_the_named_blocks_and_nothing_is_persisted() {
    let h = loop_history(OPUS);
    let table = crate::builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("anthropic", Some("https://api.anthropic.com"), OPUS),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let wv = WireVerdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .wire_verdicts(&wv)
        .thinking(ThinkingRequest::Effort(Effort::High));
    let wire = AnthropicWire {
        client: crate::ChatTransport::new().unwrap(),
        target: target("https://api.anthropic.com"),
        auth: None,
    };
    let err = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in `thinking` block"},"request_id":"req_1"}"#;
    let recovery = wire.recover(&parts, Some(400), err).unwrap();
    let body: Value = serde_json::from_slice(&recovery.outgoing.body).unwrap();
    let text = String::from_utf8(recovery.outgoing.body.clone()).unwrap();
    assert!(!text.contains("signature"), "{text}");
    assert!(
        body.get("thinking").is_none(),
        "adaptive: thinking off is no thinking field"
    );
    assert!(
        recovery.note.contains("without those blocks"),
        "{}",
        recovery.note
    );
    assert!(wire.recover(&parts, Some(500), err).is_none());
    assert!(wire.recover(&parts, Some(400), "overloaded").is_none());
    // A refusal is still the one classifier's business: nothing here names a field.
    assert!(
        wire.refused(Some(400), err, &["signature", "thinking"], false)
            .is_none()
    );
}
