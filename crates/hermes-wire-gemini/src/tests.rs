//! Unit tests of the Gemini wire: exact bodies (signatures where they were captured, only to
//! their minter; thoughts never replayed; results matched to calls), the thinking request per
//! model family, whole and streamed capture, and the reading of Google's error envelope.

use std::sync::Mutex;

use hermes_core::Reply;
use hermes_core::message::NOT_REPLAYED_KEY;
use hermes_core::transport::Delta;
use hermes_core::{
    Effort, FinishReason, Message, Origin, RequestParts, ResolveOptions, RouteTarget,
    ThinkingRequest, TransportError, Verdicts, Wire, WireVerdicts,
};

use super::body::{AI_STUDIO_BASE, Target, encode, made_up_id};
use super::capture::{TurnCapture, capture_reply};
use super::{GeminiWire, signature_error_line, url};
use hermes_providers::ChatTransport;

const PRO3: &str = "gemini-3-pro-preview";
const HOST: &str = "generativelanguage.googleapis.com";

fn history(text: &str) -> Vec<Message> {
    hermes_core::parse_history(text).unwrap().messages
}

fn origin(model: &str) -> Origin {
    Origin {
        provider: "gemini".into(),
        host: HOST.into(),
        model: model.into(),
    }
}

/// The body and explain lines for `history` sent to `model` at `base`.
fn encoded_at(
    history: &[Message],
    model: &str,
    base: &str,
    thinking: ThinkingRequest,
    wire_verdicts: &WireVerdicts,
) -> Result<(String, super::Encoded), super::EncodeError> {
    let decision = hermes_providers::testing::decision("gemini", base, model);
    let verdicts = Verdicts::default();
    let (history, _) = hermes_core::pairing::paired(history);
    let parts = RequestParts::new(&history, &decision, &verdicts)
        .wire_verdicts(wire_verdicts)
        .thinking(thinking);
    let target = Target {
        flavor: super::Flavor::AiStudio,
        base_url: base.to_owned(),
        max_tokens: None,
    };
    let e = encode(&parts, &target)?;
    Ok((String::from_utf8(e.body.clone()).unwrap(), e))
}

fn body(history: &[Message], model: &str) -> String {
    encoded_at(
        history,
        model,
        AI_STUDIO_BASE,
        ThinkingRequest::NoPreference,
        &WireVerdicts::default(),
    )
    .unwrap()
    .0
}

/// A stored call of `model` on AI Studio, `sig` its signature literal (or none).
fn call(id: &str, args: &str, sig: Option<&str>) -> String {
    let extra = sig.map_or(String::new(), |s| {
        format!(r#","extra_content":{{"google":{{"thought_signature":{s}}}}}"#)
    });
    format!(
        r#"{{"id":"{id}","type":"function","function":{{"name":"now","arguments":{args}}}{extra}}}"#
    )
}

fn origin_json(model: &str, host: &str) -> String {
    format!(r#"{{"provider":"gemini","host":"{host}","model":"{model}"}}"#)
}

/// "Time?", then a turn of [`PRO3`] on [`HOST`] with `fields` (JSON members) calling `c1` (its
/// thought signature `sig`, a JSON literal), and the call's result.
fn time_loop(fields: &str, sig: Option<&str>) -> Vec<Message> {
    let o = origin_json(PRO3, HOST);
    let call = call("c1", r#""{}""#, sig);
    history(&format!(
        r#"[{{"role":"user","content":"Time?"}},
            {{"role":"assistant",{fields},"tool_calls":[{call}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00"}}]"#
    ))
}

const CONFIG_DEFAULT: &str =
    r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}"#;

#[test]
fn a_steer_after_function_responses_goes_as_a_user_turn_of_its_own_after_a_model_turn() {
    // The user typed while the tool ran: the words do not join the function-response turn
    // (Gemini refuses text beside function responses); a short unsigned model turn separates
    // them, and the signed call turn goes back as captured.
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"user","content":"Time in Zurich?"}},
            {{"role":"assistant","content":null,"tool_calls":[{}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00"}},
            {{"role":"user","content":"and in Tokyo?"}}]"#,
        call("c1", r#""{}""#, Some(r#""U0lHLTE=""#)),
    ));
    assert_eq!(
        body(&h, PRO3),
        concat!(
            r#"{"contents":[{"parts":[{"text":"Time in Zurich?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"c1","args":{},"name":"now"},"thoughtSignature":"U0lHLTE="}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"c1","name":"now","response":{"output":"12:00"}}}],"role":"user"},"#,
            r#"{"parts":[{"text":"Tool results received."}],"role":"model"},"#,
            r#"{"parts":[{"text":"and in Tokyo?"}],"role":"user"}],"#,
            r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}}"#,
        )
    );
}

#[test]
fn an_imported_step_without_ids_keeps_every_result_after_its_call() {
    // As the Python original stores Gemini steps: calls without ids and results carrying the
    // tool name only, or calls with ids their results do not repeat. Every functionCall is
    // answered by its functionResponse, matched by name, then order.
    let h = history(
        r#"[{"role":"user","content":"Time and city?"},
            {"role":"assistant","content":null,"tool_calls":[
              {"type":"function","function":{"name":"now","arguments":"{}"}},
              {"type":"function","function":{"name":"city","arguments":"{}"}}]},
            {"role":"tool","name":"city","content":"Zurich"},
            {"role":"tool","content":"12:00"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"c9","type":"function","function":{"name":"now","arguments":"{}"}}]},
            {"role":"tool","name":"now","content":"12:01"}]"#,
    );
    assert_eq!(
        body(&h, "gemini-2.5-flash"),
        concat!(
            r#"{"contents":[{"parts":[{"text":"Time and city?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"args":{},"name":"now"}},{"functionCall":{"args":{},"name":"city"}}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"name":"city","response":{"output":"Zurich"}}},{"functionResponse":{"name":"now","response":{"output":"12:00"}}}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"c9","args":{},"name":"now"}}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"c9","name":"now","response":{"output":"12:01"}}}],"role":"user"}],"#,
            r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}}"#,
        )
    );
}

#[test]
fn arguments_that_are_not_an_object_are_kept_in_storage_and_sent_wrapped_with_a_note() {
    // Capture keeps args exactly as received, whatever the JSON value.
    let reply = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"now","args":[1,"\u00e9"]}}],"role":"model"},"finishReason":"STOP","index":0}]}"#;
    let (msg, _) = capture_reply(reply, origin(PRO3)).unwrap();
    assert_eq!(
        msg.tool_calls.as_ref().unwrap()[0]
            .function
            .arguments
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap(),
        r#"[1,"\u00e9"]"#
    );
    // Sending: an object as stored, no arguments as {}, anything else under "value" and said.
    let h = history(
        r#"[{"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"a","type":"function","function":{"name":"list","arguments":"[1,\"\\u00e9\"]"}},
              {"id":"b","type":"function","function":{"name":"text","arguments":"not json"}},
              {"id":"c","type":"function","function":{"name":"obj","arguments":"{\"n\":1}"}},
              {"id":"d","type":"function","function":{"name":"none","arguments":""}}]},
            {"role":"tool","tool_call_id":"a","content":"1"},
            {"role":"tool","tool_call_id":"b","content":"2"},
            {"role":"tool","tool_call_id":"c","content":"3"},
            {"role":"tool","tool_call_id":"d","content":"4"}]"#,
    );
    let (text, encoded) = encoded_at(
        &h,
        "gemini-2.5-flash",
        AI_STUDIO_BASE,
        ThinkingRequest::NoPreference,
        &WireVerdicts::default(),
    )
    .unwrap();
    assert!(
        text.contains(concat!(
            r#"{"parts":[{"functionCall":{"id":"a","args":{"value":[1,"\u00e9"]},"name":"list"}},"#,
            r#"{"functionCall":{"id":"b","args":{"value":"not json"},"name":"text"}},"#,
            r#"{"functionCall":{"id":"c","args":{"n":1},"name":"obj"}},"#,
            r#"{"functionCall":{"id":"d","args":{},"name":"none"}}],"role":"model"}"#
        )),
        "{text}"
    );
    assert_eq!(
        encoded.notes,
        [
            "message 1: the arguments of list, text are not a JSON object, which Gemini's functionCall.args must be: sent wrapped as {\"value\": …} (the stored history is unchanged)"
        ]
    );
}

#[test]
fn sequential_calls_each_carry_their_own_signature_byte_for_byte() {
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"system","content":"Be brief."}},
            {{"role":"user","content":"Time in Zürich, then Paris?"}},
            {{"role":"assistant","content":null,"tool_calls":[{}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00"}},
            {{"role":"assistant","content":null,"tool_calls":[{}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c2","content":"13:00"}}]"#,
        call(
            "c1",
            r#""{\"city\":\"Z\\u00fcrich\"}""#,
            Some(r#""U0lHLTE\/""#)
        ),
        call("c2", r#""{\"city\":\"Paris\"}""#, Some(r#""U0lHLTI=""#)),
    ));
    assert_eq!(
        body(&h, PRO3),
        concat!(
            r#"{"contents":[{"parts":[{"text":"Time in Zürich, then Paris?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"c1","args":{"city":"Z\u00fcrich"},"name":"now"},"thoughtSignature":"U0lHLTE\/"}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"c1","name":"now","response":{"output":"12:00"}}}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"c2","args":{"city":"Paris"},"name":"now"},"thoughtSignature":"U0lHLTI="}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"c2","name":"now","response":{"output":"13:00"}}}],"role":"user"}],"#,
            r#""systemInstruction":{"parts":[{"text":"Be brief."}],"role":"user"},"#,
            r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}}"#
        )
    );
}

/// A Gemini body is written field by field: keys another program stored beside a signature
/// (`_issuer_kind`, …, in `extra_content`, on the call, on the turn) never reach it, and the
/// signature goes back byte for byte.
#[test]
fn private_keys_stored_beside_signatures_never_reach_the_body() {
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"user","content":"Time?"}},
            {{"role":"assistant","content":null,"_issuer_kind":"gemini","tool_calls":[{{"id":"c1","type":"function","_issuer_model":"{PRO3}","function":{{"name":"now","arguments":"{{}}","_k":1}},"extra_content":{{"_issuer_kind":"gemini","google":{{"_issuer":"x","thought_signature":"U0lHLTE\/"}}}}}}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00","_turn":2}},
            {{"role":"assistant","content":"Noon.","extra_content":{{"google":{{"thought_signature":"VFMt","_issuer":"x"}},"_k":1}},"origin":{o}}},
            {{"role":"user","content":"Thanks."}}]"#
    ));
    let out = body(&h, PRO3);
    assert_eq!(
        out,
        concat!(
            r#"{"contents":[{"parts":[{"text":"Time?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"c1","args":{},"name":"now"},"thoughtSignature":"U0lHLTE\/"}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"c1","name":"now","response":{"output":"12:00"}}}],"role":"user"},"#,
            r#"{"parts":[{"text":"Noon.","thoughtSignature":"VFMt"}],"role":"model"},"#,
            r#"{"parts":[{"text":"Thanks."}],"role":"user"}],"#,
            r#""generationConfig":{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true}}}"#
        )
    );
}

#[test]
fn parallel_calls_replay_the_signature_on_the_first_call_only() {
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"user","content":"Both cities?"}},
            {{"role":"assistant","content":null,"tool_calls":[{},{}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"b","content":"13:00"}},
            {{"role":"tool","tool_call_id":"a","content":"12:00"}}]"#,
        call("a", r#""{}""#, Some(r#""U0lHLUE=""#)),
        call("b", r#""{}""#, None),
    ));
    assert_eq!(
        body(&h, PRO3),
        format!(
            "{}{}{}{CONFIG_DEFAULT}}}",
            r#"{"contents":[{"parts":[{"text":"Both cities?"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"id":"a","args":{},"name":"now"},"thoughtSignature":"U0lHLUE="},{"functionCall":{"id":"b","args":{},"name":"now"}}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"id":"b","name":"now","response":{"output":"13:00"}}},{"functionResponse":{"id":"a","name":"now","response":{"output":"12:00"}}}],"role":"user"}],"#,
        )
    );
}

const NATIVE_SIG: &str = r#"[{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"VEVY\/VA=="}}}]"#;

#[test]
fn the_text_turn_signature_goes_back_on_the_last_part() {
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"user","content":"Hi"}},
            {{"role":"assistant","content":"Hello.","reasoning_content":"Greet back.","reasoning_details":{NATIVE_SIG},"origin":{o}}},
            {{"role":"user","content":"Bye"}}]"#
    ));
    assert_eq!(
        body(&h, PRO3),
        format!(
            "{}{}{CONFIG_DEFAULT}}}",
            r#"{"contents":[{"parts":[{"text":"Hi"}],"role":"user"},{"parts":[{"text":"Hello.","thoughtSignature":"VEVY\/VA=="}],"role":"model"},"#,
            r#"{"parts":[{"text":"Bye"}],"role":"user"}],"#,
        ),
        "readable thinking is never sent; the signature rides on the last part"
    );
}

#[test]
fn a_text_turn_signature_after_calls_rides_on_an_empty_text_part_never_on_a_call() {
    let h = time_loop(
        &format!(r#""content":"Checking.","reasoning_details":{NATIVE_SIG}"#),
        Some(r#""Q0FMTA==""#),
    );
    let got = body(&h, PRO3);
    assert!(
        got.contains(
            r#"{"parts":[{"text":"Checking."},{"functionCall":{"id":"c1","args":{},"name":"now"},"thoughtSignature":"Q0FMTA=="},{"text":"","thoughtSignature":"VEVY\/VA=="}],"role":"model"}"#
        ),
        "{got}"
    );
}

#[test]
fn signatures_never_reach_another_model_or_host_and_explain_says_so() {
    let o = origin_json(PRO3, HOST);
    let text = format!(
        r#"[{{"role":"user","content":"Time?"}},
            {{"role":"assistant","content":null,"tool_calls":[{}],"origin":{o}}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00"}},
            {{"role":"assistant","content":"Noon.","reasoning_details":{NATIVE_SIG},"origin":{o}}},
            {{"role":"user","content":"Thanks"}}]"#,
        call("c1", r#""{}""#, Some(r#""U0lHLTE=""#)),
    );
    let h = history(&text);
    let own = body(&h, PRO3);
    assert!(
        own.contains("U0lHLTE=") && own.contains("VEVY\\/VA=="),
        "{own}"
    );
    for (model, base) in [
        ("gemini-3-flash-preview", AI_STUDIO_BASE),
        (PRO3, "https://gateway.example.com/v1beta"),
    ] {
        let (got, e) = encoded_at(
            &h,
            model,
            base,
            ThinkingRequest::NoPreference,
            &WireVerdicts::default(),
        )
        .unwrap();
        assert!(!got.contains("thoughtSignature"), "{model} @ {base}: {got}");
        assert!(e.refusable.is_empty());
        assert!(
            e.explain.iter().any(|l| l.contains(&format!(
                "thought signatures minted by {PRO3} on {HOST}: left out (provenance)"
            ))),
            "{:?}",
            e.explain
        );
    }
}

#[test]
fn a_refused_signature_verdict_leaves_every_signature_out() {
    let o = origin_json(PRO3, HOST);
    let h = history(&format!(
        r#"[{{"role":"user","content":"Time?"}},
            {{"role":"assistant","content":"Noon.","reasoning_details":{NATIVE_SIG},"origin":{o}}},
            {{"role":"user","content":"Thanks"}}]"#
    ));
    let target = RouteTarget::new("gemini", Some(AI_STUDIO_BASE), PRO3);
    let mut verdicts = WireVerdicts::default();
    verdicts.record(super::WIRE_ID, &target, &["thoughtSignature"]);
    let (got, e) = encoded_at(
        &h,
        PRO3,
        AI_STUDIO_BASE,
        ThinkingRequest::NoPreference,
        &verdicts,
    )
    .unwrap();
    assert!(!got.contains("thoughtSignature"), "{got}");
    assert!(e.refusable.is_empty());
}

#[test]
fn calls_without_ids_are_answered_by_name_then_order_and_made_up_ids_never_leave() {
    let o = origin_json("gemini-2.5-flash", HOST);
    // An imported turn whose calls have no id (and results with none), then a captured turn
    // whose ids hermes made up.
    let h = history(&format!(
        r#"[{{"role":"user","content":"Go"}},
            {{"role":"assistant","content":null,"tool_calls":[
                {{"type":"function","function":{{"name":"now","arguments":"{{}}"}}}},
                {{"type":"function","function":{{"name":"read_file","arguments":"{{\"path\":\"a\"}}"}}}}]}},
            {{"role":"tool","name":"read_file","content":"A"}},
            {{"role":"tool","content":"12:00"}},
            {{"role":"assistant","content":null,"tool_calls":[
                {{"id":"hermes-call-1","type":"function","function":{{"name":"now","arguments":"{{}}"}},"hermes_made_up_id":true}}],
              "origin":{o}}},
            {{"role":"tool","tool_call_id":"hermes-call-1","content":"13:00"}}]"#
    ));
    assert!(made_up_id(&h[4].tool_calls.as_ref().unwrap()[0]));
    // Straight through encode (pairing would leave id-less results out; see the report).
    let decision =
        hermes_providers::testing::decision("gemini", AI_STUDIO_BASE, "gemini-2.5-flash");
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts);
    let e = encode(&parts, &Target::ai_studio()).unwrap();
    let got = String::from_utf8(e.body).unwrap();
    assert_eq!(
        got,
        format!(
            "{}{}{}{}{}{CONFIG_DEFAULT}}}",
            r#"{"contents":[{"parts":[{"text":"Go"}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"args":{},"name":"now"}},{"functionCall":{"args":{"path":"a"},"name":"read_file"}}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"name":"read_file","response":{"output":"A"}}},{"functionResponse":{"name":"now","response":{"output":"12:00"}}}],"role":"user"},"#,
            r#"{"parts":[{"functionCall":{"args":{},"name":"now"}}],"role":"model"},"#,
            r#"{"parts":[{"functionResponse":{"name":"now","response":{"output":"13:00"}}}],"role":"user"}],"#,
        )
    );
    assert!(
        e.explain
            .iter()
            .any(|l| l == "message 2: tool result matched to call `read_file` by name")
    );
    assert!(
        e.explain
            .iter()
            .any(|l| l == "message 3: tool result matched to call `now` by order")
    );
    hermes_providers::testing::assert_explains(&e.explain, "id hermes made up for now not sent");
}

#[test]
fn a_result_whose_id_no_call_holds_is_left_out() {
    let h = history(&format!(
        r#"[{{"role":"user","content":"Go"}},
            {{"role":"assistant","content":null,"tool_calls":[{}]}},
            {{"role":"tool","tool_call_id":"zzz","content":"stray"}},
            {{"role":"tool","tool_call_id":"c1","content":"12:00"}}]"#,
        call("c1", r#""{}""#, None),
    ));
    let decision = hermes_providers::testing::decision("gemini", AI_STUDIO_BASE, PRO3);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts);
    let e = encode(&parts, &Target::ai_studio()).unwrap();
    let got = String::from_utf8(e.body).unwrap();
    assert!(!got.contains("stray"), "{got}");
    assert!(
        got.contains(
            r#"{"functionResponse":{"id":"c1","name":"now","response":{"output":"12:00"}}}"#
        ),
        "{got}"
    );
    assert!(
        e.explain
            .iter()
            .any(|l| l.starts_with("message 2: tool result left out"))
    );
}

fn thinking_config(model: &str, thinking: ThinkingRequest) -> Result<String, String> {
    let h = history(r#"[{"role":"user","content":"Hi"}]"#);
    encoded_at(
        &h,
        model,
        AI_STUDIO_BASE,
        thinking,
        &WireVerdicts::default(),
    )
    .map(|(b, _)| {
        // The thinking part of `generationConfig`: `maxOutputTokens` has its own test.
        let mut body: serde_json::Value = serde_json::from_str(&b).unwrap();
        let config = body
            .get_mut("generationConfig")
            .and_then(|c| c.as_object_mut());
        match config {
            Some(c) => {
                c.remove("maxOutputTokens");
                if c.is_empty() {
                    "none".to_owned()
                } else {
                    serde_json::Value::Object(c.clone()).to_string()
                }
            }
            None => "none".to_owned(),
        }
    })
    .map_err(|e| e.to_string())
}

#[test]
fn thinking_config_follows_the_model_family() {
    use Effort::*;
    let effort = ThinkingRequest::Effort;
    // `thinkingConfig` with thoughts included, and a level or a budget.
    let on = || r#"{"thinkingConfig":{"includeThoughts":true}}"#.to_owned();
    let level = |l: &str| {
        format!(r#"{{"thinkingConfig":{{"includeThoughts":true,"thinkingLevel":"{l}"}}}}"#)
    };
    let budget =
        |b: u32| format!(r#"{{"thinkingConfig":{{"includeThoughts":true,"thinkingBudget":{b}}}}}"#);
    let cases: &[(&str, ThinkingRequest, String)] = &[
        (PRO3, ThinkingRequest::NoPreference, on()),
        (PRO3, effort(Minimal), level("LOW")),
        (PRO3, effort(Medium), level("HIGH")),
        ("gemini-3-flash-preview", effort(Minimal), level("MINIMAL")),
        ("gemini-3-flash-preview", effort(Medium), level("MEDIUM")),
        ("gemini-3-flash-preview", effort(Max), level("HIGH")),
        ("gemini-3.1-pro-preview", effort(Medium), level("MEDIUM")),
        ("gemini-2.5-pro", effort(Minimal), budget(512)),
        ("gemini-2.5-pro", effort(Max), budget(32768)),
        ("gemini-2.5-flash", effort(Medium), budget(8192)),
        ("gemini-2.5-flash", effort(XHigh), budget(24576)),
        ("gemini-2.5-flash-lite", effort(Max), budget(24576)),
        (
            "gemini-2.0-flash",
            ThinkingRequest::NoPreference,
            "none".to_owned(),
        ),
    ];
    for (model, thinking, want) in cases {
        assert_eq!(
            thinking_config(model, *thinking).as_deref(),
            Ok(want.as_str()),
            "{model} {thinking:?}"
        );
    }
    let err = thinking_config("gemini-2.0-flash", effort(High)).unwrap_err();
    assert!(
        err.contains("--effort high cannot be sent to gemini-2.0-flash"),
        "{err}"
    );
}

#[test]
fn max_output_tokens_is_the_model_s_documented_ceiling() {
    let h = history(r#"[{"role":"user","content":"Hi"}]"#);
    let config = |model: &str, thinking| {
        let (b, e) = encoded_at(
            &h,
            model,
            AI_STUDIO_BASE,
            thinking,
            &WireVerdicts::default(),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_str(&b).unwrap();
        (body.get("generationConfig").cloned(), e.explain)
    };
    let (pro, explain) = config(PRO3, ThinkingRequest::Effort(Effort::High));
    assert_eq!(
        pro.unwrap().to_string(),
        r#"{"maxOutputTokens":65536,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}}"#
    );
    assert!(
        explain
            .iter()
            .any(|l| l == "maxOutputTokens 65536: the output ceiling Google documents for gemini-3-pro-preview"),
        "{explain:?}"
    );
    let (flash20, _) = config("gemini-2.0-flash", ThinkingRequest::NoPreference);
    assert_eq!(flash20.unwrap().to_string(), r#"{"maxOutputTokens":8192}"#);
    // No documented ceiling: no generationConfig at all.
    let (gemma, _) = config("gemma-3-27b-it", ThinkingRequest::NoPreference);
    assert_eq!(gemma, None);
}

#[test]
fn a_configured_max_tokens_wins_over_the_documented_ceiling() {
    let h = history(r#"[{"role":"user","content":"Hi"}]"#);
    let table = hermes_providers::builtin_table();
    for (model, expected) in [
        (
            PRO3,
            r#"{"maxOutputTokens":4096,"thinkingConfig":{"includeThoughts":true}}"#,
        ),
        ("gemma-3-27b-it", r#"{"maxOutputTokens":4096}"#),
    ] {
        let decision = table.resolve(
            &RouteTarget::new("gemini", Some(AI_STUDIO_BASE), model),
            ResolveOptions::default(),
        );
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(&h, &decision, &verdicts);
        let mut target = Target::ai_studio();
        target.max_tokens = Some(4096);
        let e = encode(&parts, &target).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&e.body).unwrap();
        assert_eq!(body["generationConfig"].to_string(), expected, "{model}");
        assert!(
            e.explain
                .iter()
                .any(|l| l == "maxOutputTokens 4096: [max_tokens] in config")
        );
    }
}

#[test]
fn no_thinking_turns_thinking_off_or_lowest_or_says_it_cannot() {
    let off = ThinkingRequest::Off;
    assert_eq!(
        thinking_config("gemini-2.5-flash", off).as_deref(),
        Ok(r#"{"thinkingConfig":{"thinkingBudget":0}}"#)
    );
    assert_eq!(
        thinking_config("gemini-2.5-flash-lite", off).as_deref(),
        Ok(r#"{"thinkingConfig":{"thinkingBudget":0}}"#)
    );
    assert_eq!(
        thinking_config("gemini-3-flash-preview", off).as_deref(),
        Ok(r#"{"thinkingConfig":{"thinkingLevel":"MINIMAL"}}"#)
    );
    assert_eq!(
        thinking_config("gemini-2.0-flash", off).as_deref(),
        Ok("none")
    );
    let pro25 = thinking_config("gemini-2.5-pro", off).unwrap_err();
    assert!(
        pro25.starts_with("--no-thinking cannot be honoured by gemini-2.5-pro"),
        "{pro25}"
    );
    let pro3 = thinking_config(PRO3, off).unwrap_err();
    assert!(
        pro3.contains("its lowest thinking level is LOW and thinking cannot be turned off"),
        "{pro3}"
    );
}

/// Records deltas.
#[derive(Default)]
struct Deltas(Mutex<Vec<(bool, String)>>);

impl Deltas {
    fn push(&self, d: Delta<'_>) {
        let item = match d {
            Delta::Reasoning(t) => (true, t.to_owned()),
            Delta::Content(t) => (false, t.to_owned()),
            // Tool-call fragments: `tool_call_fragments_*` below.
            _ => return,
        };
        self.0.lock().unwrap().push(item);
    }
}

/// A whole reply: a thought summary, text, two parallel calls (the first signed, the second
/// without an id) and usage.
const WHOLE: &str = r#"{"candidates":[{"content":{"parts":[
  {"text":"Look up both.","thought":true},
  {"text":"Checking "},{"text":"both."},
  {"functionCall":{"id":"fc1","name":"now","args":{"city":"Z\u00fcrich","n":123456789012345678901234567890}},"thoughtSignature":"U0lH\/MQ=="},
  {"functionCall":{"name":"now","args":{"city":"Paris"}}}],"role":"model"},
  "finishReason":"STOP","index":0}],
  "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":7,"cachedContentTokenCount":4,"totalTokenCount":22},
  "modelVersion":"gemini-3-pro-preview"}"#;

#[test]
fn a_whole_reply_is_captured_with_signatures_as_received() {
    let (msg, meta) = capture_reply(WHOLE, origin(PRO3)).unwrap();
    assert_eq!(meta.finish, Some(FinishReason::ToolCalls));
    let usage = meta.usage.unwrap();
    assert_eq!(
        (usage.input, usage.output, usage.reasoning, usage.cache_read),
        (10, 12, 7, 4)
    );
    let stored = serde_json::to_string(&msg).unwrap();
    let calls = msg.tool_calls.as_ref().unwrap();
    let second_id = calls[1].id.clone().unwrap();
    assert!(second_id.starts_with("hermes-call-"), "{second_id}");
    assert!(made_up_id(&calls[1]) && !made_up_id(&calls[0]));
    assert_eq!(
        stored,
        format!(
            "{}{}{}{}",
            r#"{"role":"assistant","content":"Checking both.","reasoning_content":"Look up both.","tool_calls":["#,
            r#"{"id":"fc1","type":"function","function":{"name":"now","arguments":"{\"city\":\"Z\\u00fcrich\",\"n\":123456789012345678901234567890}"},"extra_content":{"google":{"thought_signature":"U0lH\/MQ=="}}},"#,
            format_args!(
                r#"{{"id":"{second_id}","type":"function","function":{{"name":"now","arguments":"{{\"city\":\"Paris\"}}"}},"hermes_made_up_id":true}}],"#
            ),
            r#""origin":{"provider":"gemini","host":"generativelanguage.googleapis.com","model":"gemini-3-pro-preview"}}"#,
        )
    );
}

/// A lone surrogate escape (`\ud83d` without its pair: valid JSON, which no Rust string holds)
/// in a part's text beside a signature, and one inside a signature literal: the reply is
/// captured, the text reads it as U+FFFD, and each signature goes back byte for byte after
/// storage (found by fuzzing: the signature was lost).
#[test]
fn a_lone_surrogate_beside_or_inside_a_signature_keeps_it_through_capture_and_replay() {
    let reply = r#"{"candidates":[{"content":{"parts":[
        {"text":"Noon \ud83d.","thoughtSignature":"VFMt"},
        {"functionCall":{"id":"c1","name":"now","args":{"tz":"\udc00"}},"thoughtSignature":"U0lH\udfffLTE="}],"role":"model"},
        "finishReason":"STOP","index":0}]}"#;
    let (msg, _) = capture_reply(reply, origin(PRO3)).unwrap();
    assert_eq!(
        msg.content.as_ref().unwrap().as_str().unwrap(),
        "Noon \u{fffd}."
    );
    let stored = serde_json::to_string(&[Message::text(hermes_core::Role::User, "Time?"), msg, {
        let mut m = Message::text(hermes_core::Role::Tool, "12:00");
        m.tool_call_id = Some("c1".into());
        m
    }])
    .unwrap();
    let out = body(&history(&stored), PRO3);
    assert!(
        out.contains(&format!(
            r#"{{"parts":[{{"text":"Noon {}."}},{{"functionCall":{{"id":"c1","args":{{"tz":"\udc00"}},"name":"now"}},"thoughtSignature":"U0lH\udfffLTE="}},{{"text":"","thoughtSignature":"VFMt"}}],"role":"model"}}"#,
            '\u{fffd}'
        )),
        "{out}"
    );
}

/// `WHOLE` as a stream: a thought in two fragments, text pieces, one call per chunk, and a
/// last chunk holding only a signed empty text part and the finish reason.
const STREAM: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Look up \",\"thought\":true}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"both.\",\"thought\":true}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Checking \"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"both.\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"id\":\"fc1\",\"name\":\"now\",\"args\":{\"city\":\"Z\\u00fcrich\",\"n\":123456789012345678901234567890}},\"thoughtSignature\":\"U0lH\\/MQ==\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"now\",\"args\":{\"city\":\"Paris\"}}}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\",\"thoughtSignature\":\"RU5E\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],",
    "\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"thoughtsTokenCount\":7,\"cachedContentTokenCount\":4,\"totalTokenCount\":22}}\r\n\r\n",
);

/// Streams `text` cut into pieces of `size` bytes.
async fn read_cut(text: &str, size: usize, deltas: &Deltas) -> Result<Reply, TransportError> {
    let turn = super::capture::TurnCapture::new();
    hermes_providers::testing::read_cut(text, size, turn, origin(PRO3), &|d| deltas.push(d)).await
}

/// The message with its made-up ids blanked (they differ on every capture).
fn without_made_up_ids(mut msg: Message) -> String {
    for call in msg.tool_calls.iter_mut().flatten() {
        if made_up_id(call) {
            call.id = Some("X".into());
        }
    }
    serde_json::to_string(&msg).unwrap()
}

#[tokio::test]
async fn a_stream_cut_anywhere_captures_what_the_whole_reply_does_plus_its_trailing_signature() {
    let (whole, whole_meta) = capture_reply(WHOLE, origin(PRO3)).unwrap();
    for size in [1, 7, 64, STREAM.len()] {
        let deltas = Deltas::default();
        let reply = read_cut(STREAM, size, &deltas).await.unwrap();
        assert_eq!(reply.meta, whole_meta);
        let mut want = whole.clone();
        // The stream's last chunk carried a signed empty text part: the text-turn signature.
        want.reasoning_details = Some(vec![
            hermes_core::NativeRecord {
                extra_content: Some(
                    hermes_core::RawJson::from_text(r#"{"google":{"thought_signature":"RU5E"}}"#)
                        .unwrap(),
                ),
                ..Default::default()
            }
            .to_item(),
        ]);
        assert_eq!(
            without_made_up_ids(reply.message),
            without_made_up_ids(want)
        );
        assert_eq!(
            *deltas.0.lock().unwrap(),
            [
                (true, "Look up ".to_owned()),
                (true, "both.".to_owned()),
                (false, "Checking ".to_owned()),
                (false, "both.".to_owned())
            ]
        );
    }
}

#[tokio::test]
async fn the_trailing_signed_empty_part_of_a_stream_goes_back_on_the_last_part() {
    let text = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\n\n",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo.\"}],\"role\":\"model\"}}]}\n\n",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\",\"thoughtSignature\":\"VEFJTA==\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\n\n",
    );
    let reply = read_cut(text, 5, &Deltas::default()).await.unwrap();
    assert_eq!(reply.meta.finish, Some(FinishReason::Stop));
    let mut h = history(r#"[{"role":"user","content":"Hi"}]"#);
    h.push(reply.message);
    h.extend(history(r#"[{"role":"user","content":"Again"}]"#));
    let got = body(&h, PRO3);
    assert!(
        got.contains(
            r#"{"parts":[{"text":"Hello.","thoughtSignature":"VEFJTA=="}],"role":"model"}"#
        ),
        "{got}"
    );
}

#[tokio::test]
async fn thought_parts_are_stored_readable_and_never_replayed() {
    let reply = r#"{"candidates":[{"content":{"parts":[
        {"text":"First thought.","thought":true},{"text":"Answer."},
        {"text":"Second thought.","thought":true},{"text":" More."}],"role":"model"},"finishReason":"STOP"}]}"#;
    let (msg, _) = capture_reply(reply, origin(PRO3)).unwrap();
    assert_eq!(
        msg.reasoning_content.as_ref().unwrap().text(),
        "First thought.\n\nSecond thought."
    );
    let mut h = history(r#"[{"role":"user","content":"Q"}]"#);
    h.push(msg);
    h.extend(history(r#"[{"role":"user","content":"Next"}]"#));
    let got = body(&h, PRO3);
    assert!(
        !got.contains("thought.") && !got.contains("\"thought\""),
        "{got}"
    );
    assert!(
        got.contains(r#"{"parts":[{"text":"Answer. More."}],"role":"model"}"#),
        "{got}"
    );
}

#[tokio::test]
async fn a_stream_that_fails_or_stops_short_stores_nothing() {
    let error = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hal\"}],\"role\":\"model\"}}]}\n\n",
        "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n",
    );
    let err = read_cut(error, 9, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "The model is overloaded."),
        "{err:?}"
    );
    let short = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hal\"}],\"role\":\"model\"}}]}\n\n";
    let err = read_cut(short, 4, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Stream(m) if m.contains("without a finishReason")),
        "{err:?}"
    );
    let json = r#"[{"error":{"code":400,"message":"Bad.","status":"INVALID_ARGUMENT"}}]"#;
    let err = read_cut(json, 3, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "Bad."),
        "{err:?}"
    );
}

#[test]
fn a_reply_without_text_or_call_is_stored_not_replayable() {
    let reply = r#"{"candidates":[{"content":{"parts":[{"text":"Thinking…","thought":true}],"role":"model"},"finishReason":"MAX_TOKENS"}]}"#;
    let (msg, meta) = capture_reply(reply, origin(PRO3)).unwrap();
    assert_eq!(meta.finish, Some(FinishReason::Length));
    assert!(!msg.replayable());
    assert!(
        msg.extra
            .iter()
            .any(|(k, v)| k == NOT_REPLAYED_KEY && v.get() == "true")
    );
    let blocked = r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#;
    assert!(matches!(
        capture_reply(blocked, origin(PRO3)),
        Err(super::capture::CaptureError::Provider(m)) if m.contains("SAFETY")
    ));
    let mut capture = TurnCapture::new();
    capture
        .feed(
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}"#,
            &|_| {},
        )
        .unwrap();
    assert!(!capture.finished());
}

const UNKNOWN_SIG: &str = r#"{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"thoughtSignature\" at 'contents[1].parts[0]': Cannot find field.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"contents[1].parts[0]","description":"Invalid JSON payload received. Unknown name \"thoughtSignature\" at 'contents[1].parts[0]': Cannot find field."}]}]}}"#;

fn gemini_wire() -> GeminiWire {
    GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: Target::ai_studio(),
        auth: None,
    }
}

#[test]
fn an_unknown_name_we_replay_is_a_refusal_read_from_either_envelope() {
    let w = gemini_wire();
    let sent = ["thoughtSignature"];
    assert_eq!(
        w.refused(Some(400), UNKNOWN_SIG, &sent, false),
        Some(vec!["thoughtSignature"])
    );
    let array = format!("[{UNKNOWN_SIG}]");
    assert_eq!(
        w.refused(Some(400), &array, &sent, false),
        Some(vec!["thoughtSignature"])
    );
    let snake = UNKNOWN_SIG.replace("thoughtSignature", "thought_signature");
    assert_eq!(
        w.refused(Some(400), &snake, &sent, false),
        Some(vec!["thoughtSignature"])
    );
    // Not sent: not ours to refuse. A field we never replay (`thought`): not a refusal.
    assert_eq!(w.refused(Some(400), UNKNOWN_SIG, &[], false), None);
    let thought = UNKNOWN_SIG.replace("thoughtSignature", "thought");
    assert_eq!(w.refused(Some(400), &thought, &sent, false), None);
    // 5xx never.
    assert_eq!(w.refused(Some(500), UNKNOWN_SIG, &sent, false), None);
    // The core classifier alone does not read Google's wording: the wire turns it into an
    // unknown field.
    assert_eq!(
        hermes_core::refusal::classify_fields(Some(400), UNKNOWN_SIG, &sent, false),
        None
    );
}

#[test]
fn a_missing_signature_is_one_clear_line_and_never_a_refusal() {
    let body = r#"{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:now` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}"#;
    let line = signature_error_line(body).unwrap();
    assert!(!line.contains('\n'));
    assert!(line.starts_with("Gemini refused a function call of the history for its thought signature: Function call is missing a thought_signature"), "{line}");
    assert!(line.contains("hermes never invents a signature"));
    assert_eq!(
        gemini_wire().refused(Some(400), body, &["thoughtSignature"], false),
        None
    );
    assert_eq!(signature_error_line(UNKNOWN_SIG), None);
}

#[test]
fn urls_keep_the_key_out_and_explain_starts_with_the_path() {
    assert_eq!(
        url(&Target::ai_studio(), PRO3, false),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:generateContent"
    );
    assert_eq!(
        url(&Target::ai_studio(), "models/gemini-2.5-flash", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        url(&Target::vertex("p1", "global"), PRO3, false),
        "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
    );
    assert_eq!(
        url(&Target::vertex("p1", "us-central1"), PRO3, true),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    );
    let decision = hermes_providers::testing::decision("gemini", AI_STUDIO_BASE, PRO3);
    let verdicts = Verdicts::default();
    let h = history(r#"[{"role":"user","content":"Hi"}]"#);
    let parts = RequestParts::new(&h, &decision, &verdicts);
    let lines = super::explain(&parts, &Target::ai_studio()).unwrap();
    assert_eq!(
        lines[0],
        "POST /v1beta/models/gemini-3-pro-preview:generateContent"
    );
}

#[test]
fn the_wire_encodes_through_the_seam_with_its_refusable_field() {
    let h = time_loop(r#""content":null"#, Some(r#""U0lHLTE=""#));
    let decision = hermes_providers::testing::decision("gemini", AI_STUDIO_BASE, PRO3);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts).stream(true);
    let out = gemini_wire().encode(&parts).unwrap();
    assert_eq!(out.refusable, ["thoughtSignature"]);
    assert!(out.stream);
    assert!(out.notes.is_empty());
    // The same loop with the call's signature minted elsewhere: Gemini 3 will refuse it, and
    // the user is told before it is sent.
    let foreign = history(
        &serde_json::to_string(&h)
            .unwrap()
            .replace(HOST, "elsewhere.example"),
    );
    assert!(
        out.carriers.is_empty(),
        "its own signatures go: nothing to count"
    );
    let parts = RequestParts::new(&foreign, &decision, &verdicts);
    let out = gemini_wire().encode(&parts).unwrap();
    assert!(out.refusable.is_empty());
    assert_eq!(
        out.carriers.dropped_provenance, 1,
        "the call's turn counted once, for the metrics"
    );
    assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
    assert!(out.notes[0].contains("hermes never invents a signature"));
}

/// The signature as it was read before the borrowing reader: `thought_signature`'s check on a
/// `serde_json::Value` of the whole value, then the literal picked by a derived struct.
fn signature_by_value(extra: &hermes_core::RawJson) -> Option<String> {
    use serde_json::value::RawValue;
    hermes_core::message::thought_signature(extra)?;
    #[derive(serde::Deserialize)]
    struct Google<'a> {
        #[serde(borrow, default)]
        thought_signature: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Extra<'a> {
        #[serde(borrow)]
        google: Option<Google<'a>>,
        #[serde(borrow)]
        thought_signature: Option<&'a RawValue>,
    }
    let extra: Extra<'_> = serde_json::from_str(extra.get()).ok()?;
    extra
        .google
        .and_then(|g| g.thought_signature)
        .or(extra.thought_signature)
        .map(|raw| raw.get().to_owned())
}

#[test]
fn the_borrowing_signature_reader_picks_what_the_value_reader_picked() {
    let cases = [
        r#"{"google":{"thought_signature":"U0lH"}}"#,
        r#"{"thought_signature":"U0lH"}"#,
        r#"{"google":{"thought_signature":"QQ=="},"thought_signature":"Qg=="}"#,
        r#"{"google":{"other":1},"thought_signature":"Qg=="}"#,
        r#"{"google":{"thought_signature":null},"thought_signature":"Qg=="}"#,
        r#"{"google":null,"thought_signature":"Qg=="}"#,
        r#"{"google":"x","thought_signature":"Qg=="}"#,
        r#"{"google":5,"thought_signature":"Qg=="}"#,
        r#"{"google":[],"thought_signature":"Qg=="}"#,
        r#"{"google":["QQ=="],"thought_signature":"Qg=="}"#,
        r#"{"google":{"thought_signature":7}}"#,
        r#"{"thought_signature":null}"#,
        r#"{"google":{"thought_signature":"  "}}"#,
        r#"{"google":{"thought_signature":"\n\t\u0020"}}"#,
        r#"{"google":{"thought_signature":"\u0041BC\/"}}"#,
        r#"{"google":{"thought_signature":"\ud800QQ"}}"#,
        r#"{"google":{"thought_signature":"\ud800"},"_k":"\udc00"}"#,
        r#"{"google":{"thought_signature":"QQ==","thought_signature":"Qg=="}}"#,
        r#"{"google":{"thought_signature":"QQ=="},"google":{"thought_signature":"Qg=="}}"#,
        r#"{"google":{"_issuer":"x","thought_signature":"U0lHLTE\/"},"_k":1}"#,
        r#"{ "google" : { "thought_signature" : "U0lH" } }"#,
        r#"["U0lH"]"#,
        "{\"thought_signature\":\"\u{3000}\u{a0}\"}",
        "{\"thought_signature\":\"\u{3000}X\"}",
        r#"{"thought_signature":" X "}"#,
        r#"{"thought_signature":"\""}"#,
        r#"{"google":{"thought_signature":"U0lH","thought_signature":null}}"#,
        r#""U0lH""#,
        r#"{}"#,
        r#"null"#,
    ];
    for case in cases {
        let extra = hermes_core::RawJson::from_text(case).unwrap();
        assert_eq!(
            super::body::stored_signature(&extra).map(|raw| raw.get().to_owned()),
            signature_by_value(&extra),
            "{case}"
        );
    }
}
