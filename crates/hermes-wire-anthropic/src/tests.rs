//! The Anthropic request body: what each target family receives, asserted on the exact JSON.

use hermes_core::route::{Effort, ThinkingRequest};
use hermes_core::{Message, RequestParts, Verdicts, Wire, WireVerdicts};
use serde_json::{Value, json};

use super::body::{Drops, Flavor, PREFIX_KEY, PrefixDigest, Target, encode};
use super::{AnthropicWire, url};
use crate::testing::{Out, RED, SIG, decision, history, stamped};

const OPUS: &str = "claude-opus-4-6";
/// The first-party Messages API.
const DIRECT: &str = "https://api.anthropic.com";
/// No thinking preference.
const NO_PREFERENCE: ThinkingRequest = ThinkingRequest::NoPreference;
/// High effort.
const HIGH: ThinkingRequest = ThinkingRequest::Effort(Effort::High);

fn origin(model: &str) -> Value {
    origin_at("api.anthropic.com", model)
}

fn origin_at(host: &str, model: &str) -> Value {
    json!({"provider": "anthropic", "host": host, "model": model})
}

/// A signed tool step as captured from `model`, with its prefix digest.
fn step(model: &str, id: &str, digest: Option<String>) -> Value {
    crate::testing::step(origin(model), id, digest)
}

fn target(base: &str) -> Target {
    Target {
        flavor: Flavor::Direct,
        base_url: base.to_owned(),
        max_tokens: None,
        account: None,
    }
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
    let decision = decision("anthropic", &target.base_url, model);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(h, &decision, &verdicts).thinking(thinking);
    Out::of(encode(&parts, target, drops).unwrap())
}

fn digest_of(h: &[Message]) -> String {
    let mut d = PrefixDigest::new();
    for m in h {
        d.add(m);
    }
    d.hex()
}

fn loop_history(model: &str) -> Vec<Message> {
    crate::testing::loop_history(step(model, "toolu_1", None))
}

#[test]
fn in_the_loop_signed_blocks_go_back_verbatim_in_captured_order_before_tool_use() {
    let out = body_for(&loop_history(OPUS), DIRECT, OPUS, HIGH);
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

/// Keys another program stored on the blocks (`_issuer_kind`, …) never go: the body is the
/// one the same blocks without them give, byte for byte (the signed blocks as captured).
#[test]
fn stored_blocks_go_back_without_private_keys_and_otherwise_byte_for_byte() {
    let direct = |h: &[Message]| body_for(h, DIRECT, OPUS, HIGH).text;
    let out = direct(&stamped(loop_history(OPUS)));
    assert_eq!(out, direct(&loop_history(OPUS)));
    assert!(out.contains(&format!("[{SIG},{RED},")), "{out}");
    // The same on Bedrock's InvokeModel, which shares the codec.
    let invoke = |h: &[Message]| {
        body_with(
            h,
            &bedrock(BEDROCK_BASE),
            BEDROCK_SONNET,
            ThinkingRequest::Effort(Effort::Low),
            &Drops::default(),
        )
        .text
    };
    let out = invoke(&stamped(bedrock_loop(BEDROCK_SONNET)));
    assert_eq!(out, invoke(&bedrock_loop(BEDROCK_SONNET)));
    assert!(out.contains(&format!("[{SIG},{RED},")), "{out}");
}

#[test]
fn system_and_the_last_block_carry_cache_breakpoints_never_a_thinking_block() {
    let out = body_for(&loop_history(OPUS), DIRECT, OPUS, NO_PREFERENCE);
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
    // An adaptive model gets its documented output ceiling.
    assert_eq!(out.json["max_tokens"], json!(128000));
}

#[test]
fn max_tokens_is_the_adaptive_ceiling_the_default_or_the_configured_value() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    let claude = "https://api.anthropic.com";
    let max = |model: &str, thinking: ThinkingRequest, configured: Option<u32>, base: &str| {
        let mut t = target(base);
        t.max_tokens = configured;
        body_with(&h, &t, model, thinking, &Drops::default()).json["max_tokens"].clone()
    };
    let none = ThinkingRequest::NoPreference;
    let high = ThinkingRequest::Effort(Effort::High);
    let minimax = "https://api.minimax.io/anthropic";
    // A row per case: its name, model, thinking, configured `[max_tokens]`, host, and the
    // `max_tokens` sent.
    let rows = [
        // Adaptive models: 128K, with or without an effort (the Python original sends 128,000
        // to claude-opus-4-8).
        (
            "adaptive, no preference",
            "claude-opus-4-8",
            none,
            None,
            claude,
            128000,
        ),
        (
            "adaptive, high effort",
            "claude-opus-4-8",
            high,
            None,
            claude,
            128000,
        ),
        (
            "adaptive Sonnet 5.5",
            "claude-sonnet-5-5",
            none,
            None,
            claude,
            128000,
        ),
        // Budget models keep 16384, or the budget + 8192 with thinking.
        (
            "budget, no preference",
            "claude-sonnet-4-5",
            none,
            None,
            claude,
            16384,
        ),
        (
            "budget, high effort",
            "claude-sonnet-4-5",
            high,
            None,
            claude,
            24192,
        ),
        // A relay's models are not Claude's: no ceiling is assumed.
        (
            "a relay's model",
            "claude-opus-4-8",
            none,
            None,
            minimax,
            16384,
        ),
        // `[max_tokens]` in config wins; with budget thinking only when above the budget.
        (
            "configured, adaptive",
            "claude-opus-4-8",
            high,
            Some(64000),
            claude,
            64000,
        ),
        (
            "configured, budget",
            "claude-sonnet-4-5",
            none,
            Some(4096),
            claude,
            4096,
        ),
        (
            "configured above the budget",
            "claude-sonnet-4-5",
            high,
            Some(20000),
            claude,
            20000,
        ),
        (
            "configured below the budget",
            "claude-sonnet-4-5",
            high,
            Some(4096),
            claude,
            24192,
        ),
    ];
    for (row, model, thinking, configured, base, want) in rows {
        assert_eq!(max(model, thinking, configured, base), json!(want), "{row}");
    }
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
    let out = body_for(&h, DIRECT, OPUS, NO_PREFERENCE);
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

/// A tool loop in flight from `model` with a steer: the user typed while the tool ran.
fn steered_history(model: &str) -> Vec<Message> {
    let before = history(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "time?"},
    ]));
    history(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "time?"},
        step(model, "toolu_1", Some(digest_of(&before))),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
        {"role": "user", "content": "and in Tokyo?"},
    ]))
}

#[test]
fn a_steer_merged_into_the_tool_result_turn_keeps_the_step_s_signed_thinking_and_thinking_on() {
    // claude-sonnet-4-5 keeps only the in-flight loop's thinking; claude-opus-4-5 keeps earlier
    // thinking too. Both get the step's signed blocks back: the steer goes in the tool_result
    // turn, so the step is still the loop's latest ("a final `assistant` message must start
    // with a thinking block").
    for model in ["claude-sonnet-4-5", "claude-opus-4-5"] {
        let out = body_for(&steered_history(model), DIRECT, model, HIGH);
        let messages = format!(
            r#""messages":[{{"role":"user","content":"time?"}},{{"role":"assistant","content":[{SIG},{RED},{{"type":"tool_use","id":"toolu_1","name":"now","input":{{"n":123456789012345678901234567890}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"12:00"}},{{"type":"text","text":"and in Tokyo?","cache_control":{{"type":"ephemeral"}}}}]}}]"#
        );
        assert!(out.text.contains(&messages), "{model}: {}", out.text);
        assert_eq!(out.json["thinking"]["type"], json!("enabled"), "{model}");
        assert!(out.notes.is_empty(), "{model}: {:?}", out.notes);
    }
}

#[test]
fn another_model_gets_no_stale_signature_and_the_loop_goes_with_thinking_disabled() {
    let out = body_for(&loop_history(OPUS), DIRECT, "claude-sonnet-4-5", HIGH);
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
        HIGH,
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
    let kept = body_for(&h(&digest), DIRECT, OPUS, NO_PREFERENCE);
    assert!(kept.text.contains(SIG), "{}", kept.text);
    let changed = body_for(&h("0000"), DIRECT, OPUS, NO_PREFERENCE);
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
    let out = body_for(&h_old, DIRECT, old, NO_PREFERENCE);
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
    // The pad is the one demotion the metrics count (readable thinking sent as it was stored
    // is not one).
    assert_eq!(
        (out.carriers.demoted, out.carriers.dropped_provenance),
        (1, 0)
    );
}

#[test]
fn blocks_another_claude_minted_are_left_out_and_counted_once_each() {
    let out = body_for(&loop_history(OPUS), DIRECT, "claude-sonnet-4-5", HIGH);
    crate::testing::provenance_counted(&out.explain, out.carriers.dropped_provenance);
    let own = body_for(&loop_history(OPUS), DIRECT, OPUS, HIGH);
    assert_eq!(own.carriers.dropped_provenance, 0);
}

#[test]
fn unknown_relays_and_lookalike_hosts_get_no_thinking() {
    for base in [
        "https://relay.example.com/anthropic",
        "https://api.anthropic.com.evil.example",
        "https://evil-aiplatform.googleapis.com.example",
    ] {
        let out = body_for(&loop_history(OPUS), base, OPUS, HIGH);
        assert!(!out.text.contains("thinking"), "{base}: {}", out.text);
    }
}

#[test]
fn budget_models_get_budget_and_max_tokens_above_it_and_no_temperature() {
    let h = history(json!([{"role": "user", "content": "hi"}]));
    let out = body_for(
        &h,
        DIRECT,
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
    let off = body_for(&h, DIRECT, "claude-sonnet-4-5", ThinkingRequest::Off);
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
        account: None,
    };
    let mut h = loop_history(OPUS);
    h[2].origin =
        serde_json::from_value(origin_at("us-east5-aiplatform.googleapis.com", OPUS)).unwrap();
    let out = body_with(&h, &vertex, OPUS, HIGH, &Drops::default());
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
    let decision = decision("anthropic", "https://api.anthropic.com", OPUS);
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
    crate::testing::assert_says(&recovery.note, "without those blocks");
    assert!(wire.recover(&parts, Some(500), err).is_none());
    assert!(wire.recover(&parts, Some(400), "overloaded").is_none());
    // A refusal is still the one classifier's business: nothing here names a field.
    assert!(
        wire.refused(Some(400), err, &["signature", "thinking"], false)
            .is_none()
    );
}

// ------------------------------------------------------------------------------- Bedrock

const BEDROCK_BASE: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";
/// A budget model on Bedrock (its id has the `:` that is `%3A` in the path).
const BEDROCK_SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn bedrock(base: &str) -> Target {
    Target {
        flavor: Flavor::Bedrock,
        base_url: base.to_owned(),
        max_tokens: None,
        account: None,
    }
}

/// The in-flight loop of [`loop_history`], minted by `model` on the Bedrock host.
fn bedrock_loop(model: &str) -> Vec<Message> {
    let mut h = loop_history(model);
    h[2].origin =
        serde_json::from_value(origin_at("bedrock-runtime.us-east-1.amazonaws.com", model))
            .unwrap();
    h
}

const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time","parameters":{"type":"object","properties":{}}}}]"#;

fn bedrock_encoded(stream: bool) -> super::Encoded {
    let h = bedrock_loop(BEDROCK_SONNET);
    let target = bedrock(BEDROCK_BASE);
    let decision = decision("bedrock-anthropic", BEDROCK_BASE, BEDROCK_SONNET);
    let verdicts = Verdicts::default();
    let tools = hermes_core::RawJson::from_text(TOOLS).unwrap();
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::Low))
        .tools(Some(&tools))
        .stream(stream);
    encode(&parts, &target, &Drops::default()).unwrap()
}

#[test]
fn bedrock_bodies_carry_the_bedrock_version_and_the_beta_list_and_no_model_or_stream() {
    let expected = format!(
        concat!(
            r#"{{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14"],"#,
            r#""max_tokens":12288,"system":[{{"type":"text","text":"Be brief.","cache_control":{{"type":"ephemeral"}}}}],"#,
            r#""messages":[{{"role":"user","content":"time?"}},"#,
            r#"{{"role":"assistant","content":[{SIG},{RED},{{"type":"tool_use","id":"toolu_1","name":"now","input":{{"n":123456789012345678901234567890}}}}]}},"#,
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"12:00","cache_control":{{"type":"ephemeral"}}}}]}}],"#,
            r#""tools":[{{"name":"now","description":"The time","input_schema":{{"type":"object","properties":{{}}}}}}],"#,
            r#""thinking":{{"type":"enabled","budget_tokens":4096}}}}"#
        ),
        SIG = SIG,
        RED = RED
    );
    for stream in [false, true] {
        let encoded = bedrock_encoded(stream);
        assert_eq!(
            String::from_utf8(encoded.body).unwrap(),
            expected,
            "stream {stream}: the operation streams, the body never says so"
        );
        assert_eq!(
            encoded.wire.beta, None,
            "no anthropic-beta header on Bedrock"
        );
        crate::testing::assert_explains(
            &encoded.explain,
            "anthropic_beta [\"interleaved-thinking-2025-05-14\"]",
        );
    }
    // The same request direct carries the header instead, `model` and `stream`.
    let h = bedrock_loop(BEDROCK_SONNET);
    let out = body_for(&h, DIRECT, BEDROCK_SONNET, NO_PREFERENCE);
    assert_eq!(out.json["model"], json!(BEDROCK_SONNET));
    assert!(out.json.get("anthropic_version").is_none());
    assert!(out.json.get("anthropic_beta").is_none());
}

#[test]
fn bedrock_urls_put_the_model_id_or_arn_in_one_encoded_path_segment() {
    let t = bedrock(&format!("{BEDROCK_BASE}/"));
    assert_eq!(
        url(&t, "anthropic.claude-3-haiku-20240307-v1:0", false),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke"
    );
    assert_eq!(
        url(&t, "anthropic.claude-3-haiku-20240307-v1:0", true),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream"
    );
    assert_eq!(
        url(
            &t,
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-6-v1:0",
            true
        ),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-opus-4-6-v1%3A0/invoke-with-response-stream"
    );
    assert_eq!(
        url(&t, "us.anthropic.claude-opus-4-6-v1", false),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-opus-4-6-v1/invoke"
    );
    // The Bedrock host is Claude: the loop's signed blocks go back (see the body test).
    assert_eq!(t.family(), super::Family::Claude);
}

#[test]
fn every_bedrock_runtime_host_is_claude_and_its_lookalikes_are_unknown_relays() {
    use super::Family;
    // FIPS, dual-stack, GovCloud and China: the forms botocore's endpoint rules build.
    for host in [
        "bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
        "bedrock-runtime-fips.us-east-1.amazonaws.com",
        "bedrock-runtime.us-gov-east-1.amazonaws.com",
        "bedrock-runtime.us-west-2.api.aws",
        "bedrock-runtime-fips.us-east-2.api.aws",
        "bedrock-runtime.cn-north-1.amazonaws.com.cn",
        "bedrock-runtime-fips.cn-northwest-1.api.amazonwebservices.com.cn",
    ] {
        assert_eq!(
            Family::of(&format!("https://{host}")),
            Family::Claude,
            "{host}"
        );
    }
    for url in [
        "https://bedrock-runtime.us-east-1.amazonaws.com.evil.test",
        "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com.evil.test",
        "https://evilbedrock-runtime.us-east-1.amazonaws.com",
        "https://bedrock-runtime.us-east-1.amazonaws.com@evil.test",
        "https://bedrock-runtime.anything.else.amazonaws.com",
        "https://bedrock-runtime.cn-north-1.amazonaws.com",
    ] {
        assert_eq!(Family::of(url), Family::Unknown, "{url}");
    }
}

#[test]
fn bedrock_adaptive_bodies_and_the_invalid_signature_recovery_work_as_elsewhere() {
    let opus = "us.anthropic.claude-opus-4-6-v1";
    let h = bedrock_loop(opus);
    let target = bedrock(BEDROCK_BASE);
    let out = body_with(&h, &target, opus, HIGH, &Drops::default());
    assert!(
        out.text
            .starts_with(r#"{"anthropic_version":"bedrock-2023-05-31","max_tokens":"#)
    );
    assert!(out.text.contains(SIG), "{}", out.text);
    assert_eq!(out.json["output_config"], json!({"effort": "high"}));
    // Provenance: blocks minted on another host are not sent to Bedrock.
    let direct = loop_history(opus);
    let out = body_with(&direct, &target, opus, HIGH, &Drops::default());
    assert!(!out.text.contains("signature"), "{}", out.text);
    // Bedrock's ValidationException carries the model's text: the same one-time recovery.
    let decision = decision("bedrock-anthropic", BEDROCK_BASE, opus);
    let verdicts = Verdicts::default();
    let parts =
        RequestParts::new(&h, &decision, &verdicts).thinking(ThinkingRequest::Effort(Effort::High));
    let wire = AnthropicWire {
        client: crate::ChatTransport::new().unwrap(),
        target,
        auth: None,
    };
    let err = r#"{"message":"messages.1.content.0: Invalid `signature` in `thinking` block"}"#;
    let recovery = wire.recover(&parts, Some(400), err).unwrap();
    let text = String::from_utf8(recovery.outgoing.body.clone()).unwrap();
    assert!(!text.contains("signature"), "{text}");
    assert!(text.starts_with(r#"{"anthropic_version":"bedrock-2023-05-31""#));
}

mod bedrock_wire {
    //! A Bedrock request end to end against a loopback server: the signed request and the
    //! frame-stream reply.

    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use base64::Engine as _;
    use hermes_core::transport::TransportError;
    use hermes_core::{Origin, Wire};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::testing::frame;
    use hermes_aws::{AwsAuth, AwsCredentials, AwsSigner};
    use hermes_providers::Auth;

    fn fixed_clock() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn chunk(event: &str) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(event);
        frame(
            &[(":event-type", "chunk"), (":message-type", "event")],
            format!(r#"{{"bytes":"{b64}","p":"abcdefghijkl"}}"#),
        )
    }

    const EVENTS: &[&str] = &[
        r#"{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Noon, say it."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"QmVkcm9jaw=="}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"It is noon."}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
        r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":9}}"#,
    ];

    const OPUS_ARN: &str = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-6-v1:0";
    const OPUS_PATH: &str = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-opus-4-6-v1%3A0/invoke-with-response-stream";

    fn wire(server: &MockServer) -> AnthropicWire {
        AnthropicWire {
            client: crate::ChatTransport::new().unwrap(),
            target: bedrock(&server.uri()),
            auth: Some(Auth::Signed(AwsSigner::shared(
                AwsAuth::SigV4 {
                    credentials: AwsCredentials {
                        access_key_id: "AKIDEXAMPLE".into(),
                        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                        session_token: None,
                    },
                    region: "us-east-1".into(),
                },
                fixed_clock,
            ))),
        }
    }

    fn origin() -> Origin {
        Origin {
            provider: "bedrock-anthropic".into(),
            host: "127.0.0.1".into(),
            model: OPUS_ARN.into(),
        }
    }

    async fn send(server: &MockServer) -> Result<hermes_core::transport::Reply, TransportError> {
        let wire = wire(server);
        let h = hermes_core::parse_history(r#"[{"role":"user","content":"time?"}]"#)
            .unwrap()
            .messages;
        let decision = decision("bedrock-anthropic", &server.uri(), OPUS_ARN);
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(&h, &decision, &verdicts)
            .thinking(ThinkingRequest::Effort(Effort::High))
            .stream(true);
        let out = wire.encode(&parts).unwrap();
        wire.send(&out, origin(), &|_| {}).await
    }

    #[tokio::test]
    async fn a_streamed_bedrock_turn_is_signed_and_captured_from_its_frames() {
        let server = MockServer::start().await;
        let body: Vec<u8> = EVENTS.iter().flat_map(|e| chunk(e)).collect();
        Mock::given(method("POST"))
            .and(path(OPUS_PATH))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "application/vnd.amazon.eventstream")
                    .set_body_bytes(body),
            )
            .expect(1)
            .mount(&server)
            .await;
        let reply = send(&server).await.unwrap();
        let msg = &reply.message;
        assert_eq!(msg.content.as_ref().unwrap().get(), r#""It is noon.""#);
        assert_eq!(
            crate::testing::details(msg),
            [r#"{"type":"thinking","thinking":"Noon, say it.","signature":"QmVkcm9jaw=="}"#]
        );
        assert!(msg.extra.iter().any(|(k, _)| k == PREFIX_KEY));
        assert_eq!(
            reply.meta.usage,
            Some(hermes_core::Usage::new(12, 9, 0, 0, 0))
        );

        let requests = server.received_requests().await.unwrap();
        let sent = &requests[0];
        let header = |name: &str| {
            sent.headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let auth = header("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="),
            "{auth}"
        );
        assert_eq!(header("x-amz-date").as_deref(), Some("20231114T221320Z"));
        assert_eq!(header("content-type").as_deref(), Some("application/json"));
        assert_eq!(
            header("anthropic-version"),
            None,
            "the version is in the body"
        );
        assert_eq!(header("anthropic-beta"), None);
        assert_ne!(
            header("accept").as_deref(),
            Some("text/event-stream"),
            "an AWS event stream, not SSE"
        );
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(body["anthropic_version"], json!("bedrock-2023-05-31"));
        assert!(body.get("model").is_none() && body.get("stream").is_none());
    }

    #[tokio::test]
    async fn a_bedrock_exception_frame_after_the_200_stores_nothing() {
        let server = MockServer::start().await;
        let mut body: Vec<u8> = EVENTS[..3].iter().flat_map(|e| chunk(e)).collect();
        body.extend(frame(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            r#"{"message":"Too many tokens, please wait before trying again."}"#,
        ));
        Mock::given(method("POST"))
            .and(path(OPUS_PATH))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(body))
            .mount(&server)
            .await;
        let err = send(&server).await.unwrap_err();
        assert!(
            matches!(&err, TransportError::AfterOk(m) if m == "throttlingException: Too many tokens, please wait before trying again."),
            "{err:?}"
        );
    }
}

// ----------------------------------------------------------- a gateway client's own parts

/// A server tool as a client wrote it: odd spacing and an escape, so only a byte-for-byte copy
/// matches.
const WEB_SEARCH: &str = r#"{"type": "web_search_20250305","name":"web_search", "allowed_domains":["caf\u00e9.example"]}"#;

/// The parts of a Messages-door client: the client's function tool, thinking low, its betas, a
/// server tool and its own thinking object.
fn passthrough() -> hermes_core::Passthrough {
    hermes_core::Passthrough::new()
        .betas(["web-fetch-2025-09-10, interleaved-thinking-2025-05-14"])
        .server_tool(hermes_core::RawJson::from_text(WEB_SEARCH).unwrap())
        .thinking(
            hermes_core::RawJson::from_text(r#"{"type":"enabled", "budget_tokens":10000}"#)
                .unwrap(),
        )
}

fn encoded_with_passthrough(target: &Target, provider: &str, model: &str) -> super::Encoded {
    let h = history(json!([{"role": "user", "content": "time?"}]));
    let decision = decision(provider, &target.base_url, model);
    let verdicts = Verdicts::default();
    let tools = hermes_core::RawJson::from_text(TOOLS).unwrap();
    let passthrough = passthrough();
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::Low))
        .tools(Some(&tools))
        .passthrough(&passthrough);
    encode(&parts, target, &Drops::default()).unwrap()
}

#[test]
fn a_claude_target_gets_the_clients_betas_server_tools_and_thinking_object_exactly_as_sent() {
    let sonnet = "claude-sonnet-4-5";
    let encoded =
        encoded_with_passthrough(&target("https://api.anthropic.com"), "anthropic", sonnet);
    let text = String::from_utf8(encoded.body).unwrap();
    assert_eq!(
        text,
        format!(
            concat!(
                r#"{{"model":"claude-sonnet-4-5","max_tokens":12288,"#,
                r#""messages":[{{"role":"user","content":[{{"type":"text","text":"time?","cache_control":{{"type":"ephemeral"}}}}]}}],"#,
                r#""tools":[{{"name":"now","description":"The time","input_schema":{{"type":"object","properties":{{}}}}}},{WEB_SEARCH}],"#,
                r#""thinking":{{"type":"enabled", "budget_tokens":10000}}}}"#
            ),
            WEB_SEARCH = WEB_SEARCH
        )
    );
    // The wire's own beta first, then the client's, each once.
    assert_eq!(
        encoded.wire.beta.as_deref(),
        Some("interleaved-thinking-2025-05-14,web-fetch-2025-09-10")
    );
    // Bedrock carries the same betas in the body, and no header.
    let encoded =
        encoded_with_passthrough(&bedrock(BEDROCK_BASE), "bedrock-anthropic", BEDROCK_SONNET);
    let text = String::from_utf8(encoded.body).unwrap();
    assert!(
        text.starts_with(r#"{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","web-fetch-2025-09-10"],"#),
        "{text}"
    );
    assert!(text.contains(&format!(",{WEB_SEARCH}]")), "{text}");
    assert_eq!(encoded.wire.beta, None);
}

#[test]
fn a_client_thinking_object_is_claudes_to_judge_and_adaptive_keeps_no_beta() {
    let h = history(json!([{"role": "user", "content": "time?"}]));
    let target = target("https://api.anthropic.com");
    let decision = decision("anthropic", &target.base_url, "claude-sonnet-4-5");
    let verdicts = Verdicts::default();
    let passthrough = passthrough();
    let sampling = hermes_core::Sampling::new().max_tokens(9000);
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::Low))
        .sampling(&sampling)
        .passthrough(&passthrough);
    // A budget above max_tokens is Claude's to accept (interleaved thinking) or refuse.
    let encoded = encode(&parts, &target, &Drops::default()).unwrap();
    let body: Value = serde_json::from_slice(&encoded.body).unwrap();
    assert_eq!(body["max_tokens"], 9000);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 10000})
    );

    // Adaptive on an adaptive model: the object as sent, the client's effort kept, the
    // interleaved beta (budget thinking only) not added.
    let decision = decision_for_opus();
    let adaptive = hermes_core::Passthrough::new()
        .thinking(hermes_core::RawJson::from_text(r#"{"type":"adaptive"}"#).unwrap());
    let tools = hermes_core::RawJson::from_text(TOOLS).unwrap();
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::High))
        .tools(Some(&tools))
        .passthrough(&adaptive);
    let encoded = encode(&parts, &target, &Drops::default()).unwrap();
    let body: Value = serde_json::from_slice(&encoded.body).unwrap();
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    assert_eq!(encoded.wire.beta, None);
}

fn decision_for_opus() -> hermes_core::RouteDecision {
    decision("anthropic", "https://api.anthropic.com", OPUS)
}

#[test]
fn only_a_claude_host_takes_a_clients_own_parts_and_a_relay_gets_none_of_them() {
    use hermes_core::Dialect;
    let wire = |base: &str| AnthropicWire {
        client: crate::ChatTransport::new().unwrap(),
        target: target(base),
        auth: None,
    };
    assert!(wire("https://api.anthropic.com").takes_passthrough(Dialect::AnthropicMessages));
    assert!(
        wire("https://us-east5-aiplatform.googleapis.com")
            .takes_passthrough(Dialect::AnthropicMessages)
    );
    assert!(
        !wire("https://api.deepseek.com/anthropic").takes_passthrough(Dialect::AnthropicMessages)
    );
    assert!(
        !wire("https://api.minimax.io/anthropic").takes_passthrough(Dialect::AnthropicMessages)
    );
    assert!(
        !wire("https://relay.example.com/anthropic").takes_passthrough(Dialect::AnthropicMessages)
    );
    // Another dialect's parts (the Responses door's built-in tools) go to no Claude host.
    assert!(!wire("https://api.anthropic.com").takes_passthrough(Dialect::OpenAiResponses));
    // Encoded for a relay anyway (a preview), nothing of them is written.
    let encoded = encoded_with_passthrough(
        &target("https://api.deepseek.com/anthropic"),
        "deepseek",
        "deepseek-v4-pro",
    );
    let text = String::from_utf8(encoded.body).unwrap();
    assert!(!text.contains("web_search"), "{text}");
    assert!(!text.contains("10000"), "{text}");
    assert_eq!(encoded.wire.beta, None);
}

#[test]
fn an_invalid_beta_flag_is_answered_once_without_the_clients_flags_and_the_wires_own_stay() {
    let h = history(json!([{"role": "user", "content": "time?"}]));
    let verdicts = Verdicts::default();
    let tools = hermes_core::RawJson::from_text(TOOLS).unwrap();
    let passthrough = passthrough();
    let refusal = r#"{"message":"The model returned the following errors: invalid beta flag"}"#;
    for (flavor, base, provider, model) in [
        (Flavor::Direct, DIRECT, "anthropic", "claude-sonnet-4-5"),
        (
            Flavor::Bedrock,
            BEDROCK_BASE,
            "bedrock-anthropic",
            BEDROCK_SONNET,
        ),
    ] {
        let decision = decision(provider, base, model);
        let parts = RequestParts::new(&h, &decision, &verdicts)
            .thinking(ThinkingRequest::Effort(Effort::Low))
            .tools(Some(&tools))
            .passthrough(&passthrough);
        let wire = AnthropicWire {
            client: crate::ChatTransport::new().unwrap(),
            target: Target {
                flavor: flavor.clone(),
                base_url: base.to_owned(),
                max_tokens: None,
                account: None,
            },
            auth: None,
        };
        let first = wire.encode(&parts).unwrap();
        let all = |o: &hermes_core::Outgoing| {
            let stamp: String = o
                .stamp
                .iter()
                .map(|(k, v)| format!("{k}={} ", v.get()))
                .collect();
            format!("{} {stamp}", String::from_utf8(o.body.clone()).unwrap())
        };
        assert!(
            all(&first).contains("web-fetch-2025-09-10"),
            "{flavor:?}: {}",
            all(&first)
        );
        let recovery = wire.recover(&parts, Some(400), refusal).unwrap();
        let again = all(&recovery.outgoing);
        assert!(
            !again.contains("web-fetch-2025-09-10"),
            "{flavor:?}: {again}"
        );
        assert!(
            again.contains("interleaved-thinking-2025-05-14"),
            "{flavor:?}: the wire's own beta stays: {again}"
        );
        assert!(
            again.contains("web_search"),
            "{flavor:?}: only the flags go: {again}"
        );
        crate::testing::assert_says(&recovery.note, "web-fetch-2025-09-10");
        // Not a beta refusal, or no client flags: nothing to recover this way.
        assert!(wire.recover(&parts, Some(500), refusal).is_none());
        let bare = RequestParts::new(&h, &decision, &verdicts);
        assert!(wire.recover(&bare, Some(400), refusal).is_none());
    }
}

/// Bedrock's InvokeModel with the Messages body serves Claude: an id naming another model makes
/// that target an unknown relay; Claude ids (profiles and ARNs included) and ARNs that name no
/// model keep the host's family; other flavors are not judged by the model.
#[test]
#[cfg(feature = "bedrock")]
fn a_model_other_than_claude_on_bedrock_invoke_model_is_an_unknown_relay() {
    use super::body::{Family, other_than_claude_on_bedrock};
    let account = "arn:aws:bedrock:us-east-1:123456789012";
    for other in [
        "deepseek-v4-pro",
        "us.deepseek.r1-v1:0",
        "amazon.nova-pro-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/deepseek.r1-v1:0",
        &format!("{account}:inference-profile/us.meta.llama4-maverick-17b-instruct-v1:0"),
    ] {
        assert!(other_than_claude_on_bedrock(other), "{other}");
    }
    for claude_or_opaque in [
        "us.anthropic.claude-opus-4-6-v1",
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        &format!("{account}:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0"),
        &format!("{account}:application-inference-profile/a1b2c3"),
        &format!("{account}:provisioned-model/xyz"),
    ] {
        assert!(
            !other_than_claude_on_bedrock(claude_or_opaque),
            "{claude_or_opaque}"
        );
    }
    let bedrock = Target {
        flavor: Flavor::Bedrock,
        base_url: "https://bedrock-runtime.us-east-1.amazonaws.com".into(),
        max_tokens: None,
        account: None,
    };
    assert_eq!(bedrock.family_for("deepseek-v4-pro"), Family::Unknown);
    assert_eq!(
        bedrock.family_for("us.anthropic.claude-opus-4-6-v1"),
        Family::Claude
    );
    let direct = target("https://api.anthropic.com");
    assert_eq!(direct.family_for("deepseek-v4-pro"), Family::Claude);
}

/// docs/spec.md §5a on a bound model (Claude Fable 5.1): a stored turn's blocks go back only onto
/// the prefix binding it was stamped with (system, tools, earlier messages, account), with
/// `block_binding` `drop_block` and its beta; a changed system prompt, tool list or account,
/// and every later step, go without; blocks with no recorded binding go with `drop_block`.
mod bound {
    use hermes_core::route::ThinkingRequest;
    use hermes_core::{Message, RawJson, RequestParts, Verdicts};
    use serde_json::json;

    use super::super::body::{BINDING_BETA, Drops, Encoded, Flavor, Target};
    use super::{HIGH, origin};
    use crate::testing::{body_json as body, decision, sends_blocks};

    const FABLE: &str = "claude-fable-5-1";
    const OPUS48: &str = "claude-opus-4-8";
    const TOOLS: &str =
        r#"[{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}]"#;
    const MORE_TOOLS: &str = r#"[{"type":"function","function":{"name":"now","parameters":{"type":"object"}}},{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]"#;

    fn target(account: &str) -> Target {
        Target {
            flavor: Flavor::Direct,
            base_url: super::DIRECT.to_owned(),
            max_tokens: None,
            account: Some(crate::account_of(account)),
        }
    }

    fn encode(h: &[Message], model: &str, tools: &str, account: &str) -> Encoded {
        let decision = decision("anthropic", super::DIRECT, model);
        let verdicts = Verdicts::default();
        let tools = RawJson::from_text(tools).unwrap();
        let parts = RequestParts::new(h, &decision, &verdicts)
            .thinking(HIGH)
            .tools(Some(&tools));
        super::super::body::encode(&parts, &target(account), &Drops::default()).unwrap()
    }

    /// A finished tool loop on `model` (system `system`), then a new question: the stored step
    /// stamped with `binding` (none: an older row), so its blocks are prior thinking.
    fn conversation(model: &str, system: &str, binding: Option<&str>) -> Vec<Message> {
        let step = crate::testing::step(origin(model), "toolu_1", None);
        crate::testing::bound_conversation(step, system, binding)
    }

    /// The body of [`conversation`] on `model` (with `tools`, under `account`).
    fn encode_conversation(
        model: &str,
        system: &str,
        binding: Option<&str>,
        tools: &str,
        account: &str,
    ) -> Encoded {
        encode(&conversation(model, system, binding), model, tools, account)
    }

    /// The binding a request made on the conversation's first two messages stamps on its reply.
    fn minted(model: &str, system: &str, tools: &str, account: &str) -> String {
        let h = conversation(model, system, None);
        encode(&h[..2], model, tools, account).wire.binding.unwrap()
    }

    #[test]
    fn the_same_prefix_replays_with_drop_block_and_its_beta() {
        let binding = minted(FABLE, "Be brief.", TOOLS, "sk-a");
        let out = encode_conversation(FABLE, "Be brief.", Some(&binding), TOOLS, "sk-a");
        assert!(sends_blocks(&out), "{}", String::from_utf8_lossy(&out.body));
        assert_eq!(
            body(&out)["thinking"]["block_binding"],
            json!({"prefix_mismatch_behavior": "drop_block"})
        );
        assert!(
            out.wire.beta.as_deref().unwrap().contains(BINDING_BETA),
            "{:?}",
            out.wire.beta
        );
        assert_eq!(out.carriers.dropped_prefix, 0);
        crate::testing::assert_explains(&out.explain, "prefix binding holds");
    }

    #[test]
    fn a_changed_system_prompt_tool_list_or_account_leaves_the_blocks_out_and_says_why() {
        let binding = minted(FABLE, "Be brief.", TOOLS, "sk-a");
        // What the binding was made of, stamped beside it: the line names the part that changed.
        let parts = {
            let h = conversation(FABLE, "Be brief.", None);
            encode(&h[..2], FABLE, TOOLS, "sk-a")
                .wire
                .prefix_parts
                .unwrap()
        };
        for (case, system, tools, account) in [
            ("system prompt", "Be brief. Today is Sunday.", TOOLS, "sk-a"),
            ("tools", "Be brief.", MORE_TOOLS, "sk-a"),
            ("the account", "Be brief.", TOOLS, "sk-b"),
        ] {
            let mut h = conversation(FABLE, system, Some(&binding));
            h[2].extra
                .push((crate::body::PREFIX_PARTS_KEY.to_owned(), parts.clone()));
            let out = encode(&h, FABLE, tools, account);
            assert!(
                out.explain.iter().any(|l| l.contains(&format!(
                    "left out: the prefix changed since this block was made ({case}; docs/spec.md §5a 2)"
                ))),
                "{case}: {:?}",
                out.explain
            );
            let out = encode_conversation(FABLE, system, Some(&binding), tools, account);
            assert!(
                !sends_blocks(&out),
                "{case}: {}",
                String::from_utf8_lossy(&out.body)
            );
            assert_eq!(out.carriers.dropped_prefix, 1, "{case}");
            assert!(
                out.explain
                    .iter()
                    .any(|l| l.contains("the prefix changed since this block was made")),
                "{case}: {:?}",
                out.explain
            );
            assert!(
                body(&out)["thinking"].get("block_binding").is_none(),
                "{case}: nothing replayed, nothing to bind"
            );
        }
    }

    #[test]
    fn a_changed_prefix_reports_the_turns_it_leaves_out_for_good_and_a_marked_turn_stays_out() {
        use hermes_core::left_out::{LEFT_OUT_KEY, carrier_id};
        let binding = minted(FABLE, "Be brief.", TOOLS, "sk-a");
        let held = conversation(FABLE, "Be brief.", Some(&binding));
        let id = carrier_id(&held[2]).unwrap();
        assert!(encode(&held, FABLE, TOOLS, "sk-a").wire.left_out.is_empty());
        // The prompt changed: the step's blocks are left out, and said to be left out for good.
        let changed = conversation(FABLE, "Be brief. Today is Sunday.", Some(&binding));
        let out = encode(&changed, FABLE, TOOLS, "sk-a");
        assert_eq!(out.wire.left_out, vec![id.clone()]);
        // The prompt reverted, so the binding holds again; but the turn is marked left out (as
        // the engine loads it): its blocks stay out, counted, and not reported again.
        let mut reverted = held.clone();
        reverted[2]
            .extra
            .push((LEFT_OUT_KEY.to_owned(), RawJson::from_text("true").unwrap()));
        let out = encode(&reverted, FABLE, TOOLS, "sk-a");
        assert!(
            !sends_blocks(&out),
            "{}",
            String::from_utf8_lossy(&out.body)
        );
        assert!(!String::from_utf8_lossy(&out.body).contains(LEFT_OUT_KEY));
        assert_eq!(out.carriers.dropped_prefix, 1);
        assert!(out.wire.left_out.is_empty(), "{:?}", out.wire.left_out);
        assert!(
            out.explain.iter().any(|l| l.ends_with(
                "left out: left out of an earlier request of this conversation (docs/spec.md §5a 3)"
            )),
            "{:?}",
            out.explain
        );
        // On an unbound model too: a turn left out once is never sent again.
        let mut unbound = conversation(OPUS48, "Be brief.", None);
        assert!(sends_blocks(&encode(&unbound, OPUS48, TOOLS, "sk-a")));
        unbound[2]
            .extra
            .push((LEFT_OUT_KEY.to_owned(), RawJson::from_text("true").unwrap()));
        let out = encode(&unbound, OPUS48, TOOLS, "sk-a");
        assert!(!sends_blocks(&out));
        assert_eq!(out.carriers.dropped_prefix, 1);
    }

    #[test]
    fn blocks_without_a_recorded_prefix_go_with_drop_block() {
        let out = encode_conversation(FABLE, "Be brief.", None, TOOLS, "sk-a");
        assert!(sends_blocks(&out));
        assert_eq!(
            body(&out)["thinking"]["block_binding"]["prefix_mismatch_behavior"],
            "drop_block"
        );
        crate::testing::assert_explains(&out.explain, "no recorded prefix");
    }

    #[test]
    fn an_unbound_model_keeps_what_it_kept_before() {
        // Even a turn stamped with a binding another request made.
        let binding = minted(FABLE, "Be brief.", TOOLS, "sk-a");
        let out = encode_conversation(
            OPUS48,
            "Be brief. Today is Sunday.",
            Some(&binding),
            MORE_TOOLS,
            "sk-b",
        );
        assert!(sends_blocks(&out), "unbound: blocks go as before");
        assert!(body(&out)["thinking"].get("block_binding").is_none());
        assert!(
            out.wire.binding.is_none(),
            "no binding stamped on an unbound model's reply"
        );
        assert_eq!(out.carriers.dropped_prefix, 0);
    }

    #[test]
    fn only_fable_5_1_and_later_bind() {
        use super::super::model::ClaudeModel;
        for (model, binds) in [
            ("claude-fable-5-1", true),
            ("claude-fable-5-2", true),
            ("claude-fable-6", true),
            ("claude-fable-5", false),
            ("claude-opus-4-8", false),
            ("claude-sonnet-5-5", false),
        ] {
            assert_eq!(
                ClaudeModel::parse(model).unwrap().binds_prefix(),
                binds,
                "{model}"
            );
        }
        let _ = ThinkingRequest::NoPreference;
    }
}

/// The provider's own compaction is offered on a Claude host only (the hosts that take a
/// Messages client's fields as written); a relay of the wire gets hermes' own.
#[test]
fn native_compaction_is_claudes_own_and_no_relays() {
    let on = |base_url: &str| {
        AnthropicWire {
            client: crate::ChatTransport::new().unwrap(),
            target: target(base_url),
            auth: None,
        }
        .native_compaction()
    };
    let native = on("https://api.anthropic.com").expect("Claude compacts natively");
    assert_eq!((native.what, native.keeps), ("block", "thinking"));
    assert!(native.how.contains(crate::compaction::COMPACTION_BETA));
    assert!(native.streams && !native.with_summary);
    let asked = (native.request)(&hermes_core::Passthrough::new());
    assert_eq!(asked, crate::compaction::request());
    assert_eq!(
        (native.threshold)(50_000),
        crate::compaction::threshold_request(50_000)
    );
    assert!(on("https://api.deepseek.com/anthropic").is_none());
    assert!(on("https://relay.example/anthropic").is_none());
}
