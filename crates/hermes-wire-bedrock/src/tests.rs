//! The Converse wire: bodies per policy and model family asserted on their exact bytes, reply
//! and event-stream capture, provenance, the in-loop fallback, refusals and recoveries.

use hermes_core::message::{BLOCK_ORDER_KEY, NOT_REPLAYED_KEY};
use hermes_core::route::{Effort, ThinkingRequest};
use hermes_core::transport::Delta;
use hermes_core::{
    FinishReason, Message, Origin, RawJson, RequestParts, Usage, Verdicts, Wire, WireVerdict,
    WireVerdicts,
};
use serde_json::{Value, json};

use super::body::{Drops, PLACEHOLDER, Target, encode};
use super::capture::{CaptureError, StreamCapture, capture_reply};
use super::{BedrockWire, WIRE_ID, explain, url};
use hermes_aws::FrameReader;
use hermes_providers::native::reply::Captured;
use hermes_providers::testing::{
    ClaudeTurn, Out, Seen, arguments, assert_explains, check_claude_turn, decision, details, extra,
    history,
};
use hermes_wire_anthropic::signed::replay::PrefixDigest;

const BASE: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";
const HOST: &str = "bedrock-runtime.us-east-1.amazonaws.com";
const OPUS: &str = "us.anthropic.claude-opus-4-6-v1:0";
const SONNET45: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
/// [`SIG`] and [`RED`] as Converse blocks, written the botocore way.
const SIG_BLOCK: &str = r#"{"reasoningContent": {"reasoningText": {"text": "Call now \u00e9/.", "signature": "c2lnLTE="}}}"#;
const RED_BLOCK: &str = r#"{"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}"#;
const TOOL_USE: &str = r#"{"toolUse": {"toolUseId": "toolu_1", "name": "now", "input": {"n": 123456789012345678901234567890}}}"#;
const TOOL_RESULT: &str = r#"{"role": "user", "content": [{"toolResult": {"toolUseId": "toolu_1", "content": [{"text": "12:00"}]}}]}"#;

fn origin_at(host: &str, model: &str) -> Value {
    json!({"provider": "bedrock", "host": host, "model": model})
}

/// A signed tool step as captured from `model` on the Bedrock host.
fn step(model: &str, id: &str, digest: Option<String>) -> Value {
    hermes_wire_anthropic::testing::step(origin_at(HOST, model), id, digest)
}

fn loop_history(model: &str) -> Vec<Message> {
    hermes_providers::testing::loop_history(step(model, "toolu_1", None))
}

fn target() -> Target {
    Target {
        base_url: BASE.to_owned(),
        max_tokens: None,
        account: None,
    }
}

struct Setup {
    thinking: ThinkingRequest,
    tools: Option<RawJson>,
    wire_verdicts: WireVerdicts,
    drops: Drops,
    target: Target,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            thinking: ThinkingRequest::NoPreference,
            tools: None,
            wire_verdicts: WireVerdicts::default(),
            drops: Drops::default(),
            target: target(),
        }
    }
}

fn check_body(h: &[Message], model: &str, setup: Setup) -> Out {
    let decision = decision("bedrock", &setup.target.base_url, model);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(h, &decision, &verdicts)
        .wire_verdicts(&setup.wire_verdicts)
        .thinking(setup.thinking)
        .tools(setup.tools.as_ref());
    Out::of(encode(&parts, &setup.target, &setup.drops).unwrap())
}

#[test]
fn blocks_another_claude_minted_are_left_out_and_counted_once_each() {
    let out = body_for(
        &loop_history(OPUS),
        SONNET45,
        ThinkingRequest::Effort(hermes_core::Effort::High),
    );
    hermes_providers::testing::provenance_counted(&out.explain, out.carriers.dropped_provenance);
    let own = body_for(
        &loop_history(OPUS),
        OPUS,
        ThinkingRequest::Effort(hermes_core::Effort::High),
    );
    assert_eq!(own.carriers.dropped_provenance, 0);
}

fn body_for(h: &[Message], model: &str, thinking: ThinkingRequest) -> Out {
    check_body(
        h,
        model,
        Setup {
            thinking,
            ..Setup::default()
        },
    )
}

fn high() -> ThinkingRequest {
    ThinkingRequest::Effort(Effort::High)
}

#[test]
fn in_the_loop_signed_blocks_go_back_verbatim_first_and_in_captured_order() {
    let out = body_for(&loop_history(OPUS), OPUS, high());
    let expected = format!(
        r#"{{"messages": [{{"role": "user", "content": [{{"text": "time?"}}]}}, {{"role": "assistant", "content": [{SIG_BLOCK}, {RED_BLOCK}, {TOOL_USE}]}}, {TOOL_RESULT}], "system": [{{"text": "Be brief."}}, {{"cachePoint": {{"type": "default"}}}}], "additionalModelRequestFields": {{"thinking": {{"type": "adaptive", "display": "summarized"}}, "output_config": {{"effort": "high"}}}}}}"#
    );
    assert_eq!(out.text, expected);
    assert!(out.notes.is_empty());
    assert_eq!(
        out.refusable,
        ["reasoningContent", "redactedContent", "signature"]
    );
}

/// Converse blocks are written field by field from the stored items, so a key another program
/// stored on them (`_issuer_kind`, …) never reaches the body.
#[test]
fn stored_blocks_stamped_with_private_keys_go_back_without_them() {
    let plain = body_for(&loop_history(OPUS), OPUS, high());
    let out = body_for(
        &hermes_providers::testing::stamped(loop_history(OPUS)),
        OPUS,
        high(),
    );
    assert_eq!(out.text, plain.text);
    assert!(!out.text.contains("\"_"), "{}", out.text);
}

#[test]
fn a_steer_merged_into_the_tool_result_turn_keeps_the_step_s_signed_reasoning_and_thinking_on() {
    // The user typed while the tool ran: Converse merges the text into the toolResult turn, so
    // the step is still the loop's latest and must start with its reasoning (Claude: "a final
    // `assistant` message must start with a thinking block"). Sonnet 4.5 keeps only the
    // in-flight loop's thinking, Opus 4.5 earlier thinking too.
    for model in [SONNET45, "us.anthropic.claude-opus-4-5-20251101-v1:0"] {
        let mut h = loop_history(model);
        h.extend(history(
            json!([{"role": "user", "content": "and in Tokyo?"}]),
        ));
        let out = body_for(&h, model, high());
        let messages = format!(
            r#"{{"messages": [{{"role": "user", "content": [{{"text": "time?"}}]}}, {{"role": "assistant", "content": [{SIG_BLOCK}, {RED_BLOCK}, {TOOL_USE}]}}, {{"role": "user", "content": [{{"toolResult": {{"toolUseId": "toolu_1", "content": [{{"text": "12:00"}}]}}}}, {{"text": "and in Tokyo?"}}]}}], "#
        );
        assert!(out.text.starts_with(&messages), "{model}: {}", out.text);
        assert!(
            out.json["additionalModelRequestFields"]["thinking"]["type"]
                .as_str()
                .is_some_and(|t| t != "disabled"),
            "{model}: {}",
            out.text
        );
        assert!(out.notes.is_empty(), "{model}: {:?}", out.notes);
    }
}

#[test]
fn budget_models_get_budget_max_tokens_above_it_temperature_one_and_the_beta_but_claude_3() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    let out = body_for(&h, SONNET45, ThinkingRequest::Effort(Effort::Max));
    assert_eq!(
        out.text,
        r#"{"messages": [{"role": "user", "content": [{"text": "hi"}]}], "inferenceConfig": {"maxTokens": 40192, "temperature": 1.0}, "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 32000}, "anthropic_beta": ["interleaved-thinking-2025-05-14"]}}"#
    );
    let claude3 = body_for(
        &h,
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        ThinkingRequest::Effort(Effort::Minimal),
    );
    assert_eq!(
        claude3.json["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
    );
    assert_eq!(
        claude3.json["inferenceConfig"],
        json!({"maxTokens": 9216, "temperature": 1.0})
    );
    // A configured maxTokens above the budget is kept.
    let configured = check_body(
        &h,
        SONNET45,
        Setup {
            thinking: ThinkingRequest::Effort(Effort::Low),
            target: Target {
                base_url: BASE.into(),
                max_tokens: Some(50000),
                account: None,
            },
            ..Setup::default()
        },
    );
    assert_eq!(
        configured.json["inferenceConfig"]["maxTokens"],
        json!(50000)
    );
    // --no-thinking: disabled on a budget model, nothing on an adaptive one.
    let off = body_for(&h, SONNET45, ThinkingRequest::Off);
    assert_eq!(
        off.json["additionalModelRequestFields"],
        json!({"thinking": {"type": "disabled"}})
    );
    assert!(off.json.get("inferenceConfig").is_none());
    let adaptive_off = body_for(&h, OPUS, ThinkingRequest::Off);
    assert_eq!(
        adaptive_off.text,
        r#"{"messages": [{"role": "user", "content": [{"text": "hi"}]}]}"#
    );
}

#[test]
fn adaptive_efforts_map_into_the_models_vocabulary() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    for (model, effort, want) in [
        (OPUS, Effort::Minimal, "low"),
        (OPUS, Effort::XHigh, "max"),
        ("global.anthropic.claude-opus-4-7", Effort::XHigh, "xhigh"),
        ("anthropic.claude-sonnet-4-6", Effort::Medium, "medium"),
    ] {
        let out = body_for(&h, model, ThinkingRequest::Effort(effort));
        assert_eq!(
            out.json["additionalModelRequestFields"]["output_config"],
            json!({"effort": want}),
            "{model}"
        );
        assert!(out.json.get("inferenceConfig").is_none(), "{model}");
    }
}

#[test]
fn nova_2_takes_reasoning_config_and_leaves_out_max_tokens_at_high() {
    let h = history(
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]),
    );
    let nova = "us.amazon.nova-2-lite-v1:0";
    let setup = |effort| Setup {
        thinking: ThinkingRequest::Effort(effort),
        target: Target {
            base_url: BASE.into(),
            max_tokens: Some(4000),
            account: None,
        },
        ..Setup::default()
    };
    let low = check_body(&h, nova, setup(Effort::Minimal));
    assert_eq!(
        low.text,
        r#"{"messages": [{"role": "user", "content": [{"text": "hi"}]}], "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}], "inferenceConfig": {"maxTokens": 4000}, "additionalModelRequestFields": {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}}}"#
    );
    let medium = check_body(&h, nova, setup(Effort::Medium));
    assert_eq!(
        medium.json["additionalModelRequestFields"]["reasoningConfig"]["maxReasoningEffort"],
        "medium"
    );
    for effort in [Effort::High, Effort::XHigh, Effort::Max] {
        let out = check_body(&h, nova, setup(effort));
        assert_eq!(
            out.json["additionalModelRequestFields"],
            json!({"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "high"}})
        );
        assert!(out.json.get("inferenceConfig").is_none(), "{}", out.text);
    }
    // No effort: no reasoning request at all.
    let none = body_for(&h, nova, ThinkingRequest::NoPreference);
    assert!(none.json.get("additionalModelRequestFields").is_none());
}

#[test]
fn gpt_oss_takes_its_effort_as_reasoning_effort_in_the_additional_fields() {
    let h = history(
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]),
    );
    for model in ["openai.gpt-oss-120b-1:0", "us.openai.gpt-oss-20b-1:0"] {
        for (effort, level) in [
            (Effort::Minimal, "low"),
            (Effort::Low, "low"),
            (Effort::Medium, "medium"),
            (Effort::High, "high"),
            (Effort::XHigh, "high"),
            (Effort::Max, "high"),
        ] {
            let out = check_body(
                &h,
                model,
                Setup {
                    thinking: ThinkingRequest::Effort(effort),
                    ..Setup::default()
                },
            );
            assert_eq!(
                out.text,
                format!(
                    r#"{{"messages": [{{"role": "user", "content": [{{"text": "hi"}}]}}], "system": [{{"text": "Be brief."}}], "additionalModelRequestFields": {{"reasoning_effort": "{level}"}}}}"#
                ),
                "{model} {effort:?}"
            );
            assert!(
                out.explain.iter().any(|l| l.contains(&format!(
                    "--effort {} → additionalModelRequestFields.reasoning_effort {level}",
                    effort.as_str()
                ))),
                "{:?}",
                out.explain
            );
        }
        // No effort: nothing asked.
        let none = body_for(&h, model, ThinkingRequest::NoPreference);
        assert!(none.json.get("additionalModelRequestFields").is_none());
    }
}

#[test]
fn an_effort_a_model_cannot_take_is_an_error_before_anything_is_sent() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    for (model, why) in [
        (
            "amazon.nova-pro-v1:0",
            "whose reasoning control Bedrock documents",
        ),
        (
            "meta.llama3-3-70b-instruct-v1:0",
            "whose reasoning control Bedrock documents",
        ),
        (
            "qwen.qwen3-32b-v1:0",
            "whose reasoning control Bedrock documents",
        ),
        (
            "deepseek.r1-v1:0",
            "it always reasons and Bedrock documents no control",
        ),
        (
            "moonshot.kimi-k2-thinking",
            "it always reasons and Bedrock documents no control",
        ),
    ] {
        let decision = decision("bedrock", BASE, model);
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(&h, &decision, &verdicts).thinking(high());
        let err = encode(&parts, &target(), &Drops::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("--effort high cannot be sent to {model}: ")),
            "{err}"
        );
        assert!(err.to_string().contains(why), "{err}");
        // Without an effort the same model encodes fine.
        let parts = RequestParts::new(&h, &decision, &verdicts);
        assert!(encode(&parts, &target(), &Drops::default()).is_ok());
    }
}

#[test]
fn another_model_or_host_gets_no_signature_and_the_loop_goes_without_thinking() {
    let out = body_for(&loop_history(OPUS), SONNET45, high());
    assert!(!out.text.contains("reasoningContent"), "{}", out.text);
    assert!(out.json.get("additionalModelRequestFields").is_none());
    assert!(
        out.json.get("inferenceConfig").is_none(),
        "no budget, no temperature"
    );
    assert_eq!(
        out.notes,
        [format!(
            "thinking is not requested for this request: the latest turn of the tool loop has no thinking block {SONNET45} may receive (the stored history is unchanged)"
        )]
    );
    assert!(out.refusable.is_empty());
    // The same model on another region's host is another minter.
    let other = check_body(
        &loop_history(OPUS),
        OPUS,
        Setup {
            thinking: high(),
            target: Target {
                base_url: "https://bedrock-runtime.eu-west-1.amazonaws.com".into(),
                max_tokens: None,
                account: None,
            },
            ..Setup::default()
        },
    );
    assert!(!other.text.contains("c2lnLTE="), "{}", other.text);
    assert!(!other.text.contains("ZW5jcnlwdGVk"));
    assert_eq!(other.notes.len(), 1);
    // Without thinking requested there is nothing to leave out and nothing to tell.
    let quiet = body_for(&loop_history(OPUS), SONNET45, ThinkingRequest::NoPreference);
    assert!(quiet.notes.is_empty());
}

fn prior_history(model: &str, digest: &str) -> Vec<Message> {
    history(json!([
        {"role": "user", "content": "time?"},
        step(model, "toolu_1", Some(digest.to_owned())),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
        {"role": "assistant", "content": "Noon.", "origin": origin_at(HOST, model)},
        {"role": "user", "content": "thanks"},
    ]))
}

#[test]
fn before_the_loop_signed_blocks_travel_only_to_models_that_keep_them_on_an_unchanged_prefix() {
    let mut d = PrefixDigest::new();
    for m in &history(json!([{"role": "user", "content": "time?"}])) {
        d.add(m);
    }
    let digest = d.hex();
    let kept = body_for(
        &prior_history(OPUS, &digest),
        OPUS,
        ThinkingRequest::NoPreference,
    );
    assert!(kept.text.contains(SIG_BLOCK), "{}", kept.text);
    let changed = body_for(
        &prior_history(OPUS, "0000"),
        OPUS,
        ThinkingRequest::NoPreference,
    );
    assert!(
        !changed.text.contains("reasoningContent"),
        "{}",
        changed.text
    );
    let old = "anthropic.claude-opus-4-1-20250805-v1:0";
    let out = body_for(
        &prior_history(old, &digest),
        old,
        ThinkingRequest::NoPreference,
    );
    assert!(!out.text.contains("reasoningContent"), "{}", out.text);
    assert_explains(&out.explain, "does not keep earlier thinking");
}

#[test]
fn strip_models_get_no_reasoning_before_the_loop_and_their_own_unsigned_inside_it() {
    let r1 = "us.deepseek.r1-v1:0";
    let h = history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a1", "reasoning_content": "old thought",
         "origin": origin_at(HOST, r1)},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": null, "reasoning_content": "mine",
         "reasoning_details": [{"type": "thinking", "thinking": "mine", "signature": "S"}],
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
         "origin": origin_at(HOST, r1)},
        {"role": "tool", "tool_call_id": "t1", "content": "1"},
        {"role": "assistant", "content": null, "reasoning_content": "foreign",
         "tool_calls": [{"id": "t2", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
         "origin": origin_at(HOST, OPUS)},
        {"role": "tool", "tool_call_id": "t2", "content": "2"},
    ]));
    let out = body_for(&h, r1, ThinkingRequest::NoPreference);
    assert_eq!(
        out.text,
        r#"{"messages": [{"role": "user", "content": [{"text": "q"}]}, {"role": "assistant", "content": [{"text": "a1"}]}, {"role": "user", "content": [{"text": "again"}]}, {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "mine"}}}, {"toolUse": {"toolUseId": "t1", "name": "now", "input": {}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "1"}]}}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t2", "name": "now", "input": {}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "t2", "content": [{"text": "2"}]}}]}]}"#
    );
    assert_eq!(out.refusable, ["reasoningContent"]);
}

#[test]
fn unsigned_models_get_reasoning_text_only_on_every_turn() {
    let model = "openai.gpt-oss-120b-1:0";
    let h = history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a1", "reasoning": "plain r",
         "origin": origin_at("api.openai.com", "gpt-5")},
        {"role": "user", "content": "again"},
        step(OPUS, "toolu_1", None),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
    ]));
    let out = body_for(&h, model, ThinkingRequest::NoPreference);
    assert_eq!(
        out.json["messages"][1]["content"],
        json!([{"reasoningContent": {"reasoningText": {"text": "plain r"}}}, {"text": "a1"}])
    );
    assert_eq!(
        out.json["messages"][3]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Call now é/."}}})
    );
    assert!(!out.text.contains("signature"), "{}", out.text);
    assert!(!out.text.contains("redactedContent"), "{}", out.text);
    assert!(!out.text.contains("c2lnLTE="));
}

#[test]
fn turns_alternate_tool_results_merge_and_tools_become_tool_specs() {
    let h = history(json!([
        {"role": "system", "content": "One."},
        {"role": "developer", "content": [{"type": "text", "text": "Two."}]},
        {"role": "user", "content": "two calls"},
        {"role": "user", "content": [{"type": "text", "text": "please"}, {"type": "input_audio", "input_audio": {"data": "eA==", "format": "wav"}}]},
        {"role": "assistant", "content": "Calling.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "now", "arguments": "{\"tz\": \"Europe/Zürich\", \"x\": 1.50}"}},
            {"id": "b", "type": "function", "function": {"name": "now", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": ""},
        {"role": "assistant", "content": "", "hermes_not_replayed": true, "reasoning_content": "cut"},
        {"role": "assistant", "content": "Done."},
    ]));
    let tools = RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string","default":"UTC\/GMT"}},"required":[]}}},{"type":"function","function":{"name":"bare","description":""}}]"#,
    )
    .unwrap();
    let out = check_body(
        &h,
        "anthropic.claude-3-haiku-20240307-v1:0",
        Setup {
            tools: Some(tools),
            ..Setup::default()
        },
    );
    assert_eq!(
        out.text,
        r#"{"messages": [{"role": "user", "content": [{"text": "two calls"}, {"text": "please"}]}, {"role": "assistant", "content": [{"text": "Calling."}, {"toolUse": {"toolUseId": "a", "name": "now", "input": {"tz": "Europe/Z\u00fcrich", "x": 1.5}}}, {"toolUse": {"toolUseId": "b", "name": "now", "input": {}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "content": [{"text": "1"}]}}, {"toolResult": {"toolUseId": "b", "content": []}}]}, {"role": "assistant", "content": [{"text": "Done."}]}], "system": [{"text": "One."}, {"text": "Two."}], "toolConfig": {"tools": [{"toolSpec": {"name": "now", "description": "The time.", "inputSchema": {"json": {"type": "object", "properties": {"tz": {"type": "string", "default": "UTC/GMT"}}, "required": []}}}}, {"toolSpec": {"name": "bare", "inputSchema": {"json": {"type": "object"}}}}]}}"#,
        "no cachePoint for Claude 3 Haiku, the record-only turn left out"
    );
}

#[test]
fn explain_names_the_path_first_then_the_thinking_mapping() {
    let decision = decision("bedrock", BASE, OPUS);
    let verdicts = Verdicts::default();
    let h = loop_history(OPUS);
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(high())
        .stream(true);
    let lines = explain(&parts, &target()).unwrap();
    assert_eq!(
        lines[0],
        "POST /model/us.anthropic.claude-opus-4-6-v1%3A0/converse-stream"
    );
    assert!(lines[1].contains("replay policy signed"), "{lines:?}");
    assert_eq!(
        lines[2],
        "--effort high → additionalModelRequestFields.thinking adaptive (display summarized), output_config.effort high"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "message 2: in the tool loop in flight: signed blocks replayed verbatim"),
        "{lines:?}"
    );
    assert_eq!(
        url(
            &format!("{BASE}/"),
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-6-v1:0",
            false
        ),
        format!(
            "{BASE}/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-opus-4-6-v1%3A0/converse"
        )
    );
}

fn verdict(fields: &[&str]) -> WireVerdicts {
    WireVerdicts(vec![WireVerdict {
        wire: WIRE_ID.into(),
        provider: "bedrock".into(),
        host: HOST.into(),
        model: OPUS.into(),
        fields: fields.iter().map(|f| (*f).to_owned()).collect(),
    }])
}

#[test]
fn verdicts_on_this_wire_leave_out_what_was_refused() {
    let with = |fields: &[&str]| {
        check_body(
            &loop_history(OPUS),
            OPUS,
            Setup {
                wire_verdicts: verdict(fields),
                ..Setup::default()
            },
        )
    };
    assert!(
        !with(&["reasoningContent"])
            .text
            .contains("reasoningContent")
    );
    assert!(!with(&["signature"]).text.contains("reasoningContent"));
    assert!(!with(&["redactedContent"]).text.contains("reasoningContent"));
    assert!(with(&["somethingElse"]).text.contains(SIG_BLOCK));
}

fn wire() -> BedrockWire {
    BedrockWire {
        client: crate::ChatTransport::new().unwrap(),
        target: target(),
        auth: None,
    }
}

#[test]
fn a_redacted_content_validation_error_is_resent_once_without_redacted_blocks() {
    let h = history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "reasoning_details": ["@RED"],
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
         "origin": origin_at(HOST, OPUS), "hermes_block_order": ["redacted_thinking", "tool_use"]},
        {"role": "tool", "tool_call_id": "t1", "content": "1"},
        {"role": "assistant", "content": "ok", "reasoning_details": ["@RED"],
         "origin": origin_at(HOST, OPUS), "hermes_block_order": ["redacted_thinking"]},
        {"role": "user", "content": "more"},
    ]));
    let decision = decision("bedrock", BASE, OPUS);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts);
    let error = r#"{"message":"The model returned the following errors: redacted thinking is not supported for this request"}"#;
    let recovery = wire().recover(&parts, Some(400), error).unwrap();
    let text = String::from_utf8(recovery.outgoing.body.clone()).unwrap();
    assert_eq!(
        text,
        r#"{"messages": [{"role": "user", "content": [{"text": "q"}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "now", "input": {}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "1"}]}}]}, {"role": "assistant", "content": [{"text": "ok"}]}, {"role": "user", "content": [{"text": "more"}]}]}"#
    );
    hermes_providers::testing::assert_says(&recovery.note, "without the redacted blocks");
    assert!(recovery.outgoing.refusable.is_empty());
    // Not a 400, or nothing redacted was sent: no recovery.
    assert!(wire().recover(&parts, Some(500), error).is_none());
    let plain = history(json!([{"role": "user", "content": "q"}]));
    let parts_plain = RequestParts::new(&plain, &decision, &verdicts);
    assert!(wire().recover(&parts_plain, Some(400), error).is_none());
    assert!(
        wire()
            .recover(&parts, Some(400), r#"{"message":"Too many tokens"}"#)
            .is_none()
    );
}

#[test]
fn a_message_emptied_by_the_recovery_gets_a_placeholder() {
    let h = history(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_details": ["@RED"],
         "origin": origin_at(HOST, OPUS), "hermes_block_order": ["redacted_thinking", "text"]},
        {"role": "user", "content": "more"},
    ]));
    let out = check_body(
        &h,
        OPUS,
        Setup {
            drops: Drops {
                redacted: true,
                ..Drops::default()
            },
            ..Setup::default()
        },
    );
    assert_eq!(
        out.json["messages"][1],
        json!({"role": "assistant", "content": [{"text": PLACEHOLDER}]})
    );
    assert_eq!(out.json["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn an_invalid_signature_is_resent_once_without_the_named_turns_blocks() {
    let h = loop_history(OPUS);
    let decision = decision("bedrock", BASE, OPUS);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts).thinking(high());
    let error = r#"{"message":"The model returned the following errors: messages.1.content.0: Invalid `signature` in `thinking` block"}"#;
    let recovery = wire().recover(&parts, Some(400), error).unwrap();
    let text = String::from_utf8(recovery.outgoing.body.clone()).unwrap();
    assert!(!text.contains("reasoningContent"), "{text}");
    assert!(
        !text.contains("additionalModelRequestFields"),
        "the named turn is in the loop: no thinking request: {text}"
    );
    assert_eq!(
        recovery.note,
        "the provider refused stored reasoning (message 2): resending once without those blocks, without the thinking request (the stored history is unchanged, no verdict kept)"
    );
    let expected = r#"{"message":"The model returned the following errors: messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."}"#;
    let recovery = wire().recover(&parts, Some(400), expected).unwrap();
    let text = String::from_utf8(recovery.outgoing.body.clone()).unwrap();
    assert!(!text.contains("additionalModelRequestFields"), "{text}");
    assert!(
        text.contains(SIG_BLOCK),
        "the blocks themselves stay: {text}"
    );
}

#[test]
fn refusals_are_read_from_the_error_envelope() {
    let w = wire();
    let sent = ["reasoningContent", "redactedContent", "signature"];
    assert_eq!(
        w.refused(
            Some(400),
            r#"{"message":"The model returned the following errors: messages.1.content.0.thinking.signature: Extra inputs are not permitted"}"#,
            &sent,
            false
        ),
        Some(vec!["signature"])
    );
    assert_eq!(
        w.refused(
            Some(400),
            r#"{"Message":"Malformed input request: #: extraneous key [redactedContent] is not permitted, please reformat your input and try again."}"#,
            &sent,
            false
        ),
        Some(vec!["redactedContent"])
    );
    // A field that was not sent, or no unknown-field wording, or a 5xx: not a refusal.
    assert_eq!(
        w.refused(
            Some(400),
            r#"{"message":"extraneous key [signature] is not permitted"}"#,
            &["reasoningContent"],
            false
        ),
        None
    );
    assert_eq!(
        w.refused(
            Some(400),
            r#"{"message":"signature is invalid"}"#,
            &sent,
            false
        ),
        None
    );
    assert_eq!(
        w.refused(
            Some(503),
            r#"{"message":"unknown field signature"}"#,
            &sent,
            false
        ),
        None
    );
}

// ---- capture ----

fn origin() -> Origin {
    Origin {
        provider: "bedrock".into(),
        host: HOST.into(),
        model: OPUS.into(),
    }
}

/// A whole Converse reply: reasoning, redacted, text (escapes kept) and a tool call.
fn whole() -> String {
    r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Caf\u00e9 first: a/b.","signature":"c2ln/LTE="}}},{"reasoningContent":{"redactedContent":"ZW5jcnlwdGVk"}},{"text":"Let me check."},{"toolUse":{"toolUseId":"tooluse_1","name":"now","input":{"tz":"UTC","n":123456789012345678901234567890}}}]}},"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":42,"totalTokens":157,"cacheReadInputTokens":100,"cacheWriteInputTokens":5},"metrics":{"latencyMs":12}}"#.to_owned()
}

const THINKING_ITEM: &str =
    r#"{"type":"thinking","thinking":"Café first: a/b.","signature":"c2ln/LTE="}"#;
const REDACTED_ITEM: &str = r#"{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}"#;

#[test]
fn a_whole_reply_becomes_anthropic_shaped_carriers() {
    let want = ClaudeTurn {
        details: [THINKING_ITEM, REDACTED_ITEM],
        content: r#""Let me check.""#,
        arguments: r#"{"tz":"UTC","n":123456789012345678901234567890}"#,
        call_id: "tooluse_1",
    };
    check_claude_turn(capture_reply(&whole(), origin()).unwrap(), &origin(), want);
}

#[test]
fn a_captured_turn_replays_on_this_wire_exactly_as_received() {
    let (msg, _) = capture_reply(&whole(), origin()).unwrap();
    let mut h = history(json!([{"role": "user", "content": "time?"}]));
    h.push(msg);
    let mut result = Message::text(hermes_core::Role::Tool, "12:00");
    result.tool_call_id = Some("tooluse_1".into());
    h.push(result);
    let out = body_for(&h, OPUS, high());
    assert!(
        out.text.contains(r#"{"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "Caf\u00e9 first: a/b.", "signature": "c2ln/LTE="}}}, {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}, {"text": "Let me check."}, {"toolUse": {"toolUseId": "tooluse_1", "name": "now", "input": {"tz": "UTC", "n": 123456789012345678901234567890}}}]}"#),
        "{}",
        out.text
    );
    assert!(out.notes.is_empty());
}

fn frame(event: &str, payload: Value) -> Vec<u8> {
    hermes_aws::testing::frame(
        &[
            (":message-type", "event"),
            (":event-type", event),
            (":content-type", "application/json"),
        ],
        payload.to_string(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    hermes_aws::testing::frame(
        &[(":message-type", "exception"), (":exception-type", kind)],
        json!({"message": message}).to_string(),
    )
}

/// The event stream of the turn [`whole`] captures, each payload padded with `p`.
pub(super) fn stream_frames() -> Vec<Vec<u8>> {
    let p = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ";
    vec![
        frame("messageStart", json!({"role": "assistant", "p": p})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Café fi"}}, "p": p}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "rst: a/b."}}, "p": "ab"}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln/LTE="}}, "p": p}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 0, "p": p})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}, "p": p}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 1, "p": p})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"text": "Let me "}, "p": p}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"text": "check."}, "p": p}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 2, "p": p})),
        frame(
            "contentBlockStart",
            json!({"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "now"}}, "p": p}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 3, "delta": {"toolUse": {"input": "{\"tz\":\"UTC\","}}, "p": p}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 3, "delta": {"toolUse": {"input": "\"n\":123456789012345678901234567890}"}}, "p": p}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 3, "p": p})),
        frame("messageStop", json!({"stopReason": "tool_use", "p": p})),
        frame(
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 42, "totalTokens": 157, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 5}, "metrics": {"latencyMs": 12}, "p": p}),
        ),
    ]
}

/// Feeds `bytes` cut into `cut`-byte chunks through a frame reader into a capture.
fn feed(bytes: &[u8], cut: usize) -> (Captured, Vec<(bool, String)>) {
    let seen = Seen::default();
    let on_delta = |d: Delta<'_>| seen.record(d);
    let mut reader = FrameReader::new();
    let mut capture = StreamCapture::new();
    for chunk in bytes.chunks(cut) {
        reader.push(chunk);
        while let Some(frame) = reader.next_frame().unwrap() {
            if let Err(e) = capture.feed(&frame, &on_delta) {
                return (Err(e), seen.take());
            }
        }
    }
    assert_eq!(reader.pending(), 0);
    (capture.finish(origin()), seen.take())
}

#[test]
fn a_stream_cut_anywhere_captures_what_the_whole_reply_captures() {
    let bytes: Vec<u8> = stream_frames().concat();
    let (whole_msg, whole_meta) = capture_reply(&whole(), origin()).unwrap();
    for cut in [1, 5, 13, 64, 4096] {
        let (result, seen) = feed(&bytes, cut);
        let (msg, meta) = result.unwrap();
        assert_eq!(meta, whole_meta, "cut {cut}");
        assert_eq!(details(&msg), [THINKING_ITEM, REDACTED_ITEM]);
        assert_eq!(arguments(&msg), arguments(&whole_msg));
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            serde_json::to_value(&whole_msg).unwrap()
        );
        assert_eq!(msg.extra, whole_msg.extra);
        let seen: Vec<(bool, &str)> = seen.iter().map(|(r, t)| (*r, t.as_str())).collect();
        assert_eq!(
            seen,
            [
                (true, "Café fi"),
                (true, "rst: a/b."),
                (false, "Let me "),
                (false, "check.")
            ]
        );
    }
}

#[test]
fn an_exception_frame_is_the_providers_error_and_nothing_is_kept() {
    let mut frames = stream_frames();
    frames.truncate(8);
    frames.push(exception(
        "modelStreamErrorException",
        "The model stopped unexpectedly",
    ));
    let (result, _) = feed(&frames.concat(), 7);
    assert_eq!(
        result.unwrap_err(),
        CaptureError::Provider("modelStreamErrorException: The model stopped unexpectedly".into())
    );
}

#[test]
fn a_stream_without_message_stop_is_not_a_message() {
    let mut frames = stream_frames();
    frames.truncate(14);
    let err = feed(&frames.concat(), 9).0.unwrap_err();
    assert!(
        matches!(&err, CaptureError::Malformed(m) if m.contains("messageStop")),
        "{err:?}"
    );
}

#[test]
fn a_reasoning_only_turn_is_stored_not_replayed_on_both_paths() {
    let body = r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"s"}}}]}},"stopReason":"max_tokens","usage":{"inputTokens":3,"outputTokens":9,"totalTokens":12}}"#;
    let (whole_msg, meta) = capture_reply(body, origin()).unwrap();
    let frames = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hmm"}}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "s"}}}),
        ),
        frame("messageStop", json!({"stopReason": "max_tokens"})),
        frame(
            "metadata",
            json!({"usage": {"inputTokens": 3, "outputTokens": 9, "totalTokens": 12}}),
        ),
    ];
    let (streamed, streamed_meta) = feed(&frames.concat(), 11).0.unwrap();
    for msg in [&whole_msg, &streamed] {
        assert!(!msg.replayable());
        assert_eq!(extra(msg, NOT_REPLAYED_KEY), Some("true"));
        assert_eq!(
            details(msg),
            [r#"{"type":"thinking","thinking":"hmm","signature":"s"}"#]
        );
    }
    assert_eq!(meta, streamed_meta);
    assert_eq!(meta.finish, Some(FinishReason::Length));
    assert_eq!(meta.usage, Some(Usage::new(3, 9, 0, 0, 0)));
    // An empty turn too.
    let (empty, _) = capture_reply(
        r#"{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":0,"totalTokens":1}}"#,
        origin(),
    )
    .unwrap();
    assert!(!empty.replayable());
    assert_eq!(extra(&empty, BLOCK_ORDER_KEY), None);
}

#[test]
fn malformed_replies_and_error_envelopes_are_errors() {
    assert_eq!(
        capture_reply(r#"{"message":"Model is getting throttled"}"#, origin()).unwrap_err(),
        CaptureError::Provider("Model is getting throttled".into())
    );
    for body in [
        "not json",
        r#"{"output":{}}"#,
        r#"{"output":{"message":{"role":"user","content":[]}}}"#,
        r#"{"output":{"message":{"role":"assistant","content":[{"text":1}]}}}"#,
        r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{}}]}}}"#,
        r#"{"output":{"message":{"role":"assistant","content":[7]}}}"#,
    ] {
        let err = capture_reply(body, origin()).unwrap_err();
        assert!(matches!(err, CaptureError::Malformed(_)), "{body}: {err:?}");
    }
    // A delta of the wrong kind for its block, and one for a tool block that never started.
    let frames = [
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "y"}}}),
        ),
    ];
    assert!(matches!(
        feed(&frames.concat(), 100).0,
        Err(CaptureError::Malformed(_))
    ));
    let frames = [frame(
        "contentBlockDelta",
        json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
    )];
    assert!(matches!(
        feed(&frames.concat(), 100).0,
        Err(CaptureError::Malformed(_))
    ));
}

#[test]
fn stop_reasons_map_to_finish_reasons() {
    use super::capture::finish_reason;
    for (stop, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("guardrail_intervened", FinishReason::ContentFilter),
        ("content_filtered", FinishReason::ContentFilter),
        (
            "malformed_tool_use",
            FinishReason::Other("malformed_tool_use".into()),
        ),
    ] {
        assert_eq!(finish_reason(stop), finish);
    }
}

/// docs/spec.md §5a on Converse: the prefix binding as Converse encodes it, the cut, once left out
/// stays out, `drop_block` with its beta and the response path that reads back what Claude
/// dropped.
mod binding {
    use hermes_core::left_out::{LEFT_OUT_KEY, carrier_id};

    use super::*;
    use crate::TRANSFORMATIONS_PATH;
    use crate::body::Encoded;
    use hermes_wire_anthropic::signed::replay::PREFIX_BINDING_KEY;
    use hermes_wire_anthropic::testing::{body_json as json_of, sends_blocks};

    /// A bound Claude model (`anthropic::BOUND_FROM`) on Bedrock.
    const FABLE: &str = "us.anthropic.claude-fable-5-1-20260901-v1:0";
    const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object"}}}]"#;
    const HIGH: ThinkingRequest = ThinkingRequest::Effort(Effort::High);

    fn encode_with(h: &[Message], model: &str, tools: &str, account: Option<&str>) -> Encoded {
        let decision = decision("bedrock", BASE, model);
        let verdicts = Verdicts::default();
        let tools = RawJson::from_text(tools).unwrap();
        let parts = RequestParts::new(h, &decision, &verdicts)
            .thinking(HIGH)
            .tools(Some(&tools));
        let target = Target {
            account: account.map(hermes_providers::native::account_of),
            ..target()
        };
        encode(&parts, &target, &Drops::default()).unwrap()
    }

    /// A finished tool loop on `model` (system `system`), then a new question: the stored step
    /// stamped with `binding` (none: an older row or an import).
    fn conversation(model: &str, system: &str, binding: Option<&str>) -> Vec<Message> {
        let step = step(model, "toolu_1", None);
        hermes_wire_anthropic::testing::bound_conversation(step, system, binding)
    }

    /// What the request that minted the step (the first two messages) knows of its body.
    fn minting(system: &str, tools: &str, account: Option<&str>) -> crate::body::Bound {
        let h = conversation(FABLE, system, None);
        encode_with(&h[..2], FABLE, tools, account).wire
    }

    /// The binding the request that minted the step stamps on it.
    fn minted(system: &str, tools: &str, account: Option<&str>) -> String {
        minting(system, tools, account).binding.unwrap()
    }

    #[test]
    fn the_same_prefix_replays_with_drop_block_its_beta_and_the_response_path() {
        let binding = minted("Be brief.", TOOLS, Some("ABSK-a"));
        let out = encode_with(
            &conversation(FABLE, "Be brief.", Some(&binding)),
            FABLE,
            TOOLS,
            Some("ABSK-a"),
        );
        let text = String::from_utf8_lossy(&out.body).into_owned();
        assert!(text.contains(SIG_BLOCK), "{text}");
        assert!(text.contains(RED_BLOCK), "{text}");
        // botocore's bytes: the binding inside `thinking`, the beta in `anthropic_beta` after
        // `output_config`, then the response path.
        assert!(
            text.ends_with(
                r#""additionalModelRequestFields": {"thinking": {"type": "adaptive", "display": "summarized", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}, "output_config": {"effort": "high"}, "anthropic_beta": ["thinking-binding-controls-2026-08-01"]}, "additionalModelResponseFieldPaths": ["/input_transformations"]}"#
            ),
            "{text}"
        );
        assert_eq!(TRANSFORMATIONS_PATH, "/input_transformations");
        assert_explains(&out.explain, "its prefix binding holds");
        assert_eq!(out.carriers.dropped_prefix, 0);
        assert!(out.wire.left_out.is_empty());
        // The reply is stamped with the whole conversation's binding, and its parts.
        let stamp = hermes_providers::native::Stamp::stamp(&out.wire);
        assert!(stamp.iter().any(|(k, _)| k == PREFIX_BINDING_KEY));
        assert!(stamp.iter().any(|(k, _)| k == PREFIX_PARTS_KEY_NAME));
    }

    const PREFIX_PARTS_KEY_NAME: &str = hermes_wire_anthropic::body::PREFIX_PARTS_KEY;

    #[test]
    fn a_changed_system_prompt_tool_list_or_account_leaves_the_blocks_out_for_good() {
        let binding = minted("Be brief.", TOOLS, Some("ABSK-a"));
        let held = conversation(FABLE, "Be brief.", Some(&binding));
        let id = carrier_id(&held[2]).unwrap();
        let other_tools = TOOLS.replace("The time.", "The time now.");
        for (system, tools, account, what) in [
            (
                "Be brief. Today is Sunday.",
                TOOLS,
                "ABSK-a",
                "system prompt",
            ),
            ("Be brief.", other_tools.as_str(), "ABSK-a", "tools"),
            ("Be brief.", TOOLS, "ABSK-b", "the account"),
        ] {
            let mut h = conversation(FABLE, system, Some(&binding));
            // A stamp made of what the binding was made of names the part that changed.
            let parts = minted_parts("Be brief.", TOOLS, Some("ABSK-a"));
            h[2].extra.push((PREFIX_PARTS_KEY_NAME.to_owned(), parts));
            let out = encode_with(&h, FABLE, tools, Some(account));
            assert!(!sends_blocks(&out), "{what}");
            let v = json_of(&out);
            assert!(
                v.get("additionalModelResponseFieldPaths").is_none(),
                "{what}"
            );
            assert!(
                v["additionalModelRequestFields"]["thinking"]
                    .get("block_binding")
                    .is_none(),
                "{what}"
            );
            assert_eq!(out.carriers.dropped_prefix, 1, "{what}");
            assert_eq!(out.wire.left_out, vec![id.clone()], "{what}");
            assert!(
                out.explain.iter().any(|l| l.ends_with(&format!(
                    "left out: the prefix changed since this block was made ({what}; docs/spec.md §5a 2)"
                ))),
                "{what}: {:?}",
                out.explain
            );
        }
    }

    /// What the minting request stamps as its binding's parts.
    fn minted_parts(system: &str, tools: &str, account: Option<&str>) -> RawJson {
        minting(system, tools, account).prefix_parts.unwrap()
    }

    #[test]
    fn a_mid_conversation_system_message_changes_every_prefix_on_converse() {
        // Converse hoists a later system message into `system`: what Claude checks changed
        // before every step, though the history before the step did not.
        let binding = minted("Be brief.", TOOLS, None);
        let mut h = conversation(FABLE, "Be brief.", Some(&binding));
        h.insert(
            5,
            history(json!([{"role": "system", "content": "Answer in French."}])).remove(0),
        );
        let out = encode_with(&h, FABLE, TOOLS, None);
        assert!(
            !sends_blocks(&out),
            "{}",
            String::from_utf8_lossy(&out.body)
        );
        assert_eq!(out.carriers.dropped_prefix, 1);
    }

    #[test]
    fn a_cache_point_is_not_part_of_the_prefix_and_a_marked_turn_stays_out() {
        // The system prompt's cache point (Claude caches prompts) was in the minting request
        // too; the binding holds.
        let binding = minted("Be brief.", TOOLS, None);
        let held = conversation(FABLE, "Be brief.", Some(&binding));
        let out = encode_with(&held, FABLE, TOOLS, None);
        assert!(
            String::from_utf8_lossy(&out.body).contains(r#"{"cachePoint": {"type": "default"}}"#)
        );
        assert!(sends_blocks(&out));
        // Marked left out by an earlier request (as the engine loads it): stays out, counted,
        // not reported again, the mark never sent.
        let mut marked = held.clone();
        marked[2]
            .extra
            .push((LEFT_OUT_KEY.to_owned(), RawJson::from_text("true").unwrap()));
        let out = encode_with(&marked, FABLE, TOOLS, None);
        let text = String::from_utf8_lossy(&out.body);
        assert!(!sends_blocks(&out), "{text}");
        assert!(!text.contains(LEFT_OUT_KEY));
        assert_eq!(out.carriers.dropped_prefix, 1);
        assert!(out.wire.left_out.is_empty());
        assert!(out.explain.iter().any(|l| l.ends_with(
            "left out: left out of an earlier request of this conversation (docs/spec.md §5a 3)"
        )));
    }

    #[test]
    fn blocks_with_no_recorded_prefix_go_with_drop_block() {
        let out = encode_with(&conversation(FABLE, "Be brief.", None), FABLE, TOOLS, None);
        assert!(sends_blocks(&out));
        let v = json_of(&out);
        assert_eq!(
            v["additionalModelRequestFields"]["thinking"]["block_binding"],
            json!({"prefix_mismatch_behavior": "drop_block"})
        );
        assert_eq!(
            v["additionalModelResponseFieldPaths"],
            json!([TRANSFORMATIONS_PATH])
        );
        assert_explains(&out.explain, "no recorded prefix");
    }

    #[test]
    fn an_unbound_model_is_unchanged() {
        let out = encode_with(&conversation(OPUS, "Be brief.", None), OPUS, TOOLS, None);
        let v = json_of(&out);
        assert!(v.get("additionalModelResponseFieldPaths").is_none());
        assert!(!out.body.windows(13).any(|w| w == b"block_binding"));
        assert!(out.wire.binding.is_none());
    }

    #[test]
    fn input_transformations_are_read_from_a_whole_reply_and_a_stream() {
        let dropped = r#"[{"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_binding_mismatch"}]"#;
        let reply = format!(
            r#"{{"output": {{"message": {{"role": "assistant", "content": [{{"text": "Hi."}}]}}}}, "stopReason": "end_turn", "usage": {{"inputTokens": 3, "outputTokens": 2}}, "additionalModelResponseFields": {{"input_transformations": {dropped}}}}}"#
        );
        let origin = origin();
        let (message, meta) = capture_reply(&reply, origin.clone()).unwrap();
        assert_eq!(meta.dropped_upstream, 1);
        let kept = &message
            .extra
            .iter()
            .find(|(k, _)| k == hermes_wire_anthropic::TRANSFORMATIONS_KEY)
            .unwrap()
            .1;
        assert_eq!(kept.get(), dropped);
        // None asked back: nothing counted.
        let plain = r#"{"output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}}, "stopReason": "end_turn"}"#;
        assert_eq!(
            capture_reply(plain, origin.clone())
                .unwrap()
                .1
                .dropped_upstream,
            0
        );
        // Streamed: on `messageStop`.
        let mut capture = StreamCapture::new();
        let frames = [
            ("messageStart", r#"{"role": "assistant"}"#.to_owned()),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex": 0, "delta": {"text": "Hi."}}"#.to_owned(),
            ),
            (
                "messageStop",
                format!(
                    r#"{{"stopReason": "end_turn", "additionalModelResponseFields": {{"input_transformations": {dropped}}}}}"#
                ),
            ),
        ];
        for (kind, payload) in frames {
            let frame = hermes_aws::Frame {
                message_type: "event".to_owned(),
                event_type: Some(kind.to_owned()),
                exception_type: None,
                payload: payload.into_bytes().into(),
            };
            capture.feed(&frame, &|_: Delta<'_>| {}).unwrap();
        }
        let (message, meta) = capture.finish(origin).unwrap();
        assert_eq!(meta.dropped_upstream, 1);
        assert!(
            message
                .extra
                .iter()
                .any(|(k, _)| k == hermes_wire_anthropic::TRANSFORMATIONS_KEY)
        );
    }
}
