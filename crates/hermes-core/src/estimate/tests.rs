//! Tests for the token estimator: the weights of docs/spec.md §7 and which carriers it prices.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::route::{Carrier, CarrierSet, DataRoute, MatchReason, ReasoningRoute, ResolveOptions};
use crate::target::RouteTarget;

fn decision(route: impl ReasoningRoute + 'static, model: &str) -> RouteDecision {
    RouteDecision::for_route(
        Arc::new(route),
        MatchReason::Direct,
        &RouteTarget::new("p", Some("https://api.example.test/v1"), model),
        &[],
        ResolveOptions::default(),
    )
}

fn history(value: Value) -> Vec<Message> {
    serde_json::from_str(&value.to_string()).unwrap()
}

#[test]
fn text_weights_follow_the_spec() {
    assert_eq!(estimate_text(""), 0);
    assert_eq!(estimate_text("abcd"), 1);
    assert_eq!(estimate_text("abcde"), 2);
    assert_eq!(estimate_text("é"), 1);
    assert_eq!(estimate_text("中文"), 2);
    assert_eq!(estimate_text("ab中"), 2);
    assert_eq!(estimate_text("한국어"), 3);
    assert_eq!(estimate_text("ＡＢＣ"), 3);
    assert_eq!(estimate_text("かな"), 2);
    assert_eq!(estimate_text("𠀀"), 1);
    assert_eq!(estimate_text("😀"), 1);
    assert_eq!(estimate_text("abcdefgh中文ij"), 3 + 2);
}

#[test]
fn raw_strings_are_priced_as_their_decoded_text() {
    for text in [
        "",
        "plain",
        "line\nbreak \"quoted\" back\\slash /",
        "中文 and 한국어 and ＦＵＬＬ",
        "emoji 😀 tab\t",
        "\\\\\\",
        "\u{1}\u{1f}",
    ] {
        let direct = RawJson::string(text);
        assert_eq!(estimate_json(&direct), estimate_text(text), "{text:?}");
        let escaped = RawJson::from_text(
            text.chars().fold(String::from("\""), |mut s, c| {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    s.push_str(&format!("\\u{unit:04x}"));
                }
                s
            }) + "\"",
        )
        .unwrap();
        assert_eq!(escaped.as_str().unwrap(), text);
        assert_eq!(estimate_json(&escaped), estimate_text(text), "{text:?}");
    }
}

#[test]
fn json_values_count_string_values_not_keys_and_skip_data_urls() {
    let raw = RawJson::from_text(
        r#"[{"type":"text","text":"hello world!"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},{"n":12345678,"b":true,"k\"ey":"x"}]"#,
    )
    .unwrap();
    // "text" 1 + "hello world!" 3 + "image_url" 3 + data URL 0 + "x" 1
    assert_eq!(estimate_json(&raw), 8);
    assert_eq!(estimate_json(&RawJson::null()), 0);
}

#[test]
fn histories_differing_only_in_opaque_blob_size_estimate_equally() {
    let build = |blob: &str| {
        history(json!([
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": "answer", "reasoning_content": "thinking",
             "origin": {"provider": "p", "host": "api.example.test", "model": "gemini-x"},
             "reasoning_details": [
                 {"type": "reasoning.text", "text": "signed", "signature": blob},
                 {"type": "reasoning.encrypted", "data": blob},
                 {"type": "redacted_thinking", "data": blob},
                 {"type": "thinking", "thinking": "t", "signature": blob},
                 {"type": "hermes.native_assistant",
                  "extra_content": {"google": {"thought_signature": blob}},
                  "reasoning_opaque": blob, "reasoning_text": blob}
             ],
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "f", "arguments": "{}", "thought_signature": blob},
                             "extra_content": {"google": {"thought_signature": blob}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "result"},
        ]))
    };
    let small = build("c2ln");
    let large = build(&"QUJD".repeat(50_000));
    for d in [
        decision(DataRoute::new("all", CarrierSet::ALL), "gemini-x"),
        decision(DataRoute::new("rc", CarrierSet::RC), "gemini-x"),
        decision(
            DataRoute::new("strict", CarrierSet::NONE).strict_schema(),
            "other",
        ),
    ] {
        let (a, b) = (estimate_history(&small, &d), estimate_history(&large, &d));
        assert_eq!(a, b, "route {}", d.id());
        assert!(a > 0);
    }
}

#[test]
fn stale_thinking_counts_only_where_the_route_replays_it() {
    let h = history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_content": "aaaaaaaaaaaaaaaa"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_content": "bbbbbbbb"},
    ]));
    let base = 1 + 3 + 1 + 1 + 3 + 1; // roles and the two "q"
    let all = decision(DataRoute::new("all", CarrierSet::ALL), "m");
    assert_eq!(estimate_history(&h, &all), base + 4 + 2);
    let newest = decision(
        DataRoute::new("newest-only", CarrierSet::ALL).newest_thinking_only(),
        "m",
    );
    assert!(!newest.replays_stale_thinking);
    assert_eq!(estimate_history(&h, &newest), base + 2);
    assert_eq!(estimate_message(&h[1], &newest, false), 3);
    assert_eq!(estimate_message(&h[1], &newest, true), 3 + 4);
}

#[test]
fn r_replayed_as_rc_counts_once_and_r_counts_where_read() {
    let h = history(json!([
        {"role": "assistant", "reasoning": "rrrrrrrrrrrr"},
    ]));
    let rc = decision(DataRoute::new("rc", CarrierSet::RC), "m");
    assert_eq!(estimate_history(&h, &rc), 3 + 3);
    let rc_r = decision(
        DataRoute::new(
            "rc-r",
            CarrierSet::of([Carrier::ReasoningContent, Carrier::Reasoning]),
        ),
        "m",
    );
    // Sent twice on the wire (as RC and as R), so priced twice.
    assert_eq!(estimate_history(&h, &rc_r), 3 + 3 + 3);
    let none = decision(DataRoute::new("none", CarrierSet::NONE), "m");
    assert_eq!(estimate_history(&h, &none), 3);
}

#[test]
fn must_echo_pad_costs_one_token_and_strict_routes_drop_unknown_keys() {
    let h = history(json!([
        {"role": "assistant", "content": "abcd", "reasoning": " ", "x_unknown": "abcdabcd"},
    ]));
    let echo = decision(
        DataRoute::new("echo", CarrierSet::RC).with_echo("deepseek", PadRule::EveryAssistant),
        "m",
    );
    assert_eq!(estimate_history(&h, &echo), 3 + 1 + 1 + 2);
    let strict = decision(
        DataRoute::new("strict", CarrierSet::NONE).strict_schema(),
        "m",
    );
    assert_eq!(estimate_history(&h, &strict), 3 + 1);
}

#[test]
fn readable_detail_items_count_by_their_text_and_tool_calls_count() {
    let h = history(json!([
        {"role": "assistant", "content": null,
         "reasoning_details": [{"type": "reasoning.summary", "summary": "abcdabcdabcd"}],
         "tool_calls": [{"id": "call", "type": "function",
                         "function": {"name": "web_search", "arguments": "{\"q\":\"abcd\"}"}}]},
        {"role": "tool", "tool_call_id": "call", "content": "中文"},
    ]));
    let all = decision(DataRoute::new("all", CarrierSet::ALL), "m");
    // assistant 3; "reasoning.summary" 5 + summary 3; id 1, "function" 2, name 3, args 3.
    assert_eq!(
        estimate_message(&h[0], &all, true),
        3 + 5 + 3 + 1 + 2 + 3 + 3
    );
    let rc = decision(DataRoute::new("rc", CarrierSet::RC), "m");
    assert_eq!(estimate_message(&h[0], &rc, true), 3 + 1 + 2 + 3 + 3);
    // tool 1; call id 1; 2 CJK.
    assert_eq!(estimate_message(&h[1], &all, false), 1 + 1 + 2);
}
