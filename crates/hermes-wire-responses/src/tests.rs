//! Unit tests of the Responses wire: exact bodies (a tool loop replayed in stored order with
//! its pairs, provenance, unpaired items, effort mapping, `--no-thinking`, stored bytes kept),
//! capture of whole replies and streams cut anywhere, refusals and the one-time recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use hermes_core::Reply;
use hermes_core::message::NOT_REPLAYED_KEY;
use hermes_core::transport::Delta;
use hermes_core::{
    Effort, FinishReason, Message, Origin, RawJson, RequestParts, Role, ThinkingRequest, Verdicts,
    Wire, WireVerdicts,
};

use super::body::{Drops, encode};
use super::capture::capture_reply;
use super::fixtures::{FC1, FC2, MSG3, RS1, RS2, RS3};
use super::model::reasoning_plan;
use super::{ResponsesWire, WIRE_ID, explain, url};
use hermes_providers::testing::{decision, extra};
use hermes_providers::{ChatTransport, TransportError};

const BASE: &str = "https://api.openai.com/v1";
const GPT5: &str = "gpt-5";

fn origin(model: &str) -> Origin {
    Origin {
        provider: "openai-responses".into(),
        host: "api.openai.com".into(),
        model: model.into(),
    }
}

/// A completed Responses object with `items` as its output.
fn reply(items: &[&str]) -> String {
    format!(
        r#"{{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[{}],"usage":{{"input_tokens":10,"input_tokens_details":{{"cached_tokens":4}},"output_tokens":20,"output_tokens_details":{{"reasoning_tokens":12}},"total_tokens":30}}}}"#,
        items.join(",")
    )
}

/// The assistant message captured from a reply of `items` by `model`.
fn turn(items: &[&str], model: &str) -> Message {
    capture_reply(&reply(items), origin(model)).unwrap().0
}

fn tool(id: &str, content: &str) -> Message {
    let mut m = Message::text(Role::Tool, content);
    m.tool_call_id = Some(id.into());
    m
}

/// A three-step loop: two calls, then the answer, then a new question.
fn three_steps(model: &str) -> Vec<Message> {
    vec![
        Message::text(Role::System, "Be brief."),
        Message::text(Role::User, "Time and date in Zürich?"),
        turn(&[RS1, FC1], model),
        tool("call_1", "12:00"),
        turn(&[RS2, FC2], model),
        tool("call_2", "Monday"),
        turn(&[RS3, MSG3], model),
        Message::text(Role::User, "Thanks. And tomorrow?"),
    ]
}

fn body_for(history: &[Message], model: &str, thinking: ThinkingRequest, drops: &Drops) -> String {
    let d = decision("openai-responses", BASE, model);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(history, &d, &verdicts).thinking(thinking);
    String::from_utf8(encode(&parts, drops).unwrap().body).unwrap()
}

fn body(history: &[Message], model: &str) -> String {
    body_for(
        history,
        model,
        ThinkingRequest::NoPreference,
        &Drops::default(),
    )
}

/// The head of a body for `model` with no preference, not streamed.
fn head(model: &str) -> String {
    format!(
        r#"{{"model":"{model}","stream":false,"include":["reasoning.encrypted_content"],"input":["#
    )
}

const TAIL: &str = r#"],"instructions":"Be brief.","reasoning":{"summary":"auto"},"store":false}"#;

const OUT1: &str = r#"{"type":"function_call_output","call_id":"call_1","output":"12:00"}"#;
const OUT2: &str = r#"{"type":"function_call_output","call_id":"call_2","output":"Monday"}"#;
const Q1: &str = r#"{"role":"user","content":"Time and date in Zürich?"}"#;
const Q2: &str = r#"{"role":"user","content":"Thanks. And tomorrow?"}"#;

#[test]
fn a_three_step_loop_goes_back_in_stored_order_each_reasoning_item_before_its_pair() {
    let h = three_steps(GPT5);
    let want = format!(
        "{}{}{TAIL}",
        head(GPT5),
        [Q1, RS1, FC1, OUT1, RS2, FC2, OUT2, RS3, MSG3, Q2].join(",")
    );
    assert_eq!(body(&h, GPT5), want);
    // The history is not changed by encoding.
    assert_eq!(h, three_steps(GPT5));
}

#[test]
fn another_models_reasoning_stays_out_and_its_pairs_go_without_ids() {
    let h = three_steps(GPT5);
    let fc1 = r#"{"type":"function_call","status":"completed","arguments":"{\"city\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#;
    let fc2 = r#"{"type":"function_call","status":"completed","arguments":"{}","call_id":"call_2","name":"date"}"#;
    // Without its id an assistant message goes as the SDK's EasyInputMessageParam.
    let msg3 = r#"{"role":"assistant","content":"It is noon, Monday."}"#;
    let want = format!(
        "{}{}{TAIL}",
        head("gpt-5-mini"),
        [Q1, fc1, OUT1, fc2, OUT2, msg3, Q2].join(",")
    );
    assert_eq!(body(&h, "gpt-5-mini"), want);
    // The same model on another host is another minter too.
    let mut moved = three_steps(GPT5);
    for m in &mut moved {
        if let Some(o) = &mut m.origin {
            o.host = "my-resource.openai.azure.com".into();
        }
    }
    assert!(!body(&moved, GPT5).contains("rs_"));
}

#[test]
fn a_verdict_or_a_recovery_drop_leaves_reasoning_out_and_pairs_id_less() {
    let h = three_steps(GPT5);
    let d = decision("openai-responses", BASE, GPT5);
    let verdicts = Verdicts::default();
    let mut wv = WireVerdicts::default();
    wv.record(WIRE_ID, &d.target, &["encrypted_content"]);
    let parts = RequestParts::new(&h, &d, &verdicts).wire_verdicts(&wv);
    let out = String::from_utf8(encode(&parts, &Drops::default()).unwrap().body).unwrap();
    assert!(!out.contains("\"encrypted_content\":"), "{out}");
    assert!(!out.contains("\"id\":"), "{out}");

    let mut drops = Drops::default();
    drops.reasoning_of.insert(2);
    let out = body_for(&h, GPT5, ThinkingRequest::NoPreference, &drops);
    assert!(!out.contains("rs_1") && out.contains("rs_2") && out.contains("rs_3"));
    assert!(!out.contains("fc_1") && out.contains(FC2) && out.contains(MSG3));
}

#[test]
fn a_reasoning_item_without_its_pair_is_never_sent() {
    let rs_a = r#"{"id":"rs_a","type":"reasoning","summary":[],"encrypted_content":"A"}"#;
    let rs_b = r#"{"id":"rs_b","type":"reasoning","summary":[],"encrypted_content":"B"}"#;
    let msg = r#"{"id":"msg_b","type":"message","content":[{"type":"output_text","text":"ok"}],"role":"assistant"}"#;
    let h = vec![
        Message::text(Role::System, "Be brief."),
        Message::text(Role::User, "q"),
        turn(&[rs_a, rs_b, msg], GPT5),
        Message::text(Role::User, "q2"),
        // A reasoning item after the message has nothing to pair with; the message before it
        // follows no left-out reasoning, so it keeps its id.
        turn(&[msg, rs_a], GPT5),
        Message::text(Role::User, "q3"),
    ];
    let want = format!(
        r#"{}{{"role":"user","content":"q"}},{rs_b},{msg},{{"role":"user","content":"q2"}},{msg},{{"role":"user","content":"q3"}}{TAIL}"#,
        head(GPT5)
    );
    assert_eq!(body(&h, GPT5), want);
}

#[test]
fn a_reasoning_item_without_encrypted_content_is_not_sent_and_its_pair_loses_its_id() {
    let sealed = r#"{"id":"rs_s","type":"reasoning","summary":[]}"#;
    let h = vec![
        Message::text(Role::User, "q"),
        turn(&[sealed, MSG3], GPT5),
        Message::text(Role::User, "q2"),
    ];
    let out = body(&h, GPT5);
    assert!(!out.contains("rs_s") && !out.contains("msg_3"), "{out}");
    assert!(
        out.contains(r#"{"role":"assistant","content":"It is noon, Monday."}"#),
        "{out}"
    );
}

#[test]
fn an_imported_turn_without_stored_items_is_rebuilt_from_content_and_tool_calls() {
    let h: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":[{"type":"text","text":"q"}]},
            {"role":"assistant","content":"calling","reasoning_content":"hidden",
             "tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{\"a\":1}"}}]},
            {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"12:00"}]}]"#,
    )
    .unwrap();
    let want = r#"{"model":"gpt-5","stream":false,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":[{"type":"input_text","text":"q"}]},{"role":"assistant","content":"calling"},{"type":"function_call","call_id":"c1","name":"now","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c1","output":"12:00"}],"reasoning":{"summary":"auto"},"store":false}"#;
    assert_eq!(body(&h, GPT5), want);
}

#[test]
fn tools_are_flat_function_tools() {
    let h = vec![Message::text(Role::User, "q")];
    let d = decision("openai-responses", BASE, GPT5);
    let verdicts = Verdicts::default();
    let tools = RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]"#,
    )
    .unwrap();
    let parts = RequestParts::new(&h, &d, &verdicts)
        .tools(Some(&tools))
        .stream(true);
    let out = String::from_utf8(encode(&parts, &Drops::default()).unwrap().body).unwrap();
    assert_eq!(
        out,
        r#"{"model":"gpt-5","stream":true,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"q"}],"reasoning":{"summary":"auto"},"store":false,"tools":[{"type":"function","name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}},"strict":false}]}"#
    );
}

#[test]
fn effort_maps_into_each_models_vocabulary() {
    use Effort::*;
    let effort = |e, m: &str| reasoning_plan(ThinkingRequest::Effort(e), m).map(|p| p.effort);
    assert_eq!(effort(Medium, "gpt-5"), Ok(Some("medium")));
    assert_eq!(effort(Minimal, "gpt-5"), Ok(Some("minimal")));
    assert_eq!(effort(XHigh, "gpt-5"), Ok(Some("high")));
    assert_eq!(effort(Max, "gpt-5"), Ok(Some("high")));
    assert_eq!(effort(Max, "gpt-5.2"), Ok(Some("xhigh")));
    assert_eq!(effort(XHigh, "gpt-5.2"), Ok(Some("xhigh")));
    assert_eq!(effort(Minimal, "gpt-5.1"), Ok(Some("low")));
    assert_eq!(effort(Minimal, "o3"), Ok(Some("low")));
    assert_eq!(effort(Max, "o4-mini"), Ok(Some("high")));
    assert_eq!(effort(Low, "gpt-5-pro"), Ok(Some("high")));
    assert_eq!(effort(Max, "some-local-model"), Ok(Some("xhigh")));
    assert!(
        effort(High, "gpt-4.1")
            .unwrap_err()
            .contains("no reasoning model")
    );
    let h = vec![Message::text(Role::User, "q")];
    let out = body_for(
        &h,
        "gpt-5",
        ThinkingRequest::Effort(XHigh),
        &Drops::default(),
    );
    assert!(
        out.contains(r#""reasoning":{"effort":"high","summary":"auto"},"store":false"#),
        "{out}"
    );
}

#[test]
fn no_thinking_sends_none_where_the_model_takes_it_else_minimal() {
    let h = vec![Message::text(Role::User, "q")];
    let off = |m: &str| body_for(&h, m, ThinkingRequest::Off, &Drops::default());
    assert!(off("gpt-5.1").contains(r#""reasoning":{"effort":"none"}"#));
    assert!(off("gpt-5.2").contains(r#""reasoning":{"effort":"none"}"#));
    assert!(off("gpt-5").contains(r#""reasoning":{"effort":"minimal","summary":"auto"}"#));
    assert_eq!(
        off("gpt-4o"),
        r#"{"model":"gpt-4o","stream":false,"input":[{"role":"user","content":"q"}],"store":false}"#
    );
    let err = reasoning_plan(ThinkingRequest::Off, "o3").unwrap_err();
    assert!(err.contains("cannot turn reasoning off"), "{err}");
}

/// Asserts that `msg` stores exactly the one reasoning item `reasoning` and the one other
/// output item `item`, byte for byte.
fn assert_items(msg: &Message, reasoning: &str, item: &str) {
    assert_eq!(
        extra(msg, "codex_reasoning_items"),
        Some(format!("[{reasoning}]").as_str())
    );
    assert_eq!(
        extra(msg, "codex_message_items"),
        Some(format!("[{item}]").as_str())
    );
}

#[test]
fn stored_items_keep_their_bytes_and_key_order() {
    // Keys in an unusual order, escapes and a big number: replayed exactly as stored.
    let odd = r#"{"encrypted_content":"gAAAA\u002fx","summary":[{"text":"caf\u00e9","type":"summary_text"}],"type":"reasoning","id":"rs_odd","n":123456789012345678901234567890}"#;
    let msg = r#"{"role":"assistant","type":"message","id":"msg_odd","content":[{"text":"\u00e9t\u00e9","type":"output_text"}]}"#;
    let captured = turn(&[odd, msg], GPT5);
    assert_items(&captured, odd, msg);
    // Through storage (serialise, parse) and onto the wire.
    let stored = serde_json::to_string(&vec![
        Message::text(Role::User, "q"),
        captured,
        Message::text(Role::User, "q2"),
    ])
    .unwrap();
    let h = hermes_core::parse_history(&stored).unwrap().messages;
    let out = body(&h, GPT5);
    assert!(out.contains(&format!("{odd},{msg}")), "{out}");
}

/// A turn as the Python original stores it (docs/spec.md §9): every output item stamped with its
/// issuer (`_issuer_kind`, `_issuer_model`), a reasoning item kept without `summary`, no origin
/// and no block order.
const IMPORTED: &str = r#"[{"role":"user","content":"Time and date in Zürich?"},
    {"role":"assistant","content":null,
     "tool_calls":[{"id":"call_1","type":"function","function":{"name":"now","arguments":"{\"city\":\"Z\\u00fcrich\"}"},"call_id":"call_1","response_item_id":"fc_1"}],
     "codex_reasoning_items":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the time in Z\u00fcrich."}],"encrypted_content":"gAAAA\/one==","_issuer_kind":"codex_responses","_issuer_model":"gpt-5"}],
     "codex_message_items":[{"id":"fc_1","_issuer_kind":"codex_responses","type":"function_call","status":"completed","arguments":"{\"city\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now","_issuer_model":"gpt-5"}]},
    {"role":"tool","tool_call_id":"call_1","content":"12:00"},
    {"role":"assistant","content":"It is noon.",
     "codex_reasoning_items":[{"_issuer_kind":"codex_responses","id":"rs_2","type":"reasoning","encrypted_content":"gAAAA-two","_issuer_model":"gpt-5"},
                              {"id":"rs_n","type":"reasoning","summary":null,"encrypted_content":"gAAAA-n"}],
     "codex_message_items":[{"id":"msg_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"It is noon."}],"role":"assistant","_issuer_kind":"codex_responses"},
                            {"id":"msg_n","type":"message","content":[{"type":"output_text","text":"."}],"role":"assistant"}]},
    {"role":"user","content":"Thanks."}]"#;

#[test]
fn imported_items_go_without_private_keys_and_with_a_summary() {
    let h = hermes_core::parse_history(IMPORTED).unwrap().messages;
    let rs1 = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the time in Z\u00fcrich."}],"encrypted_content":"gAAAA\/one=="}"#;
    let fc1 = r#"{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#;
    let rs2 = r#"{"id":"rs_2","type":"reasoning","encrypted_content":"gAAAA-two","summary":[]}"#;
    let msg2 = r#"{"id":"msg_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"It is noon."}],"role":"assistant"}"#;
    let rsn = r#"{"id":"rs_n","type":"reasoning","encrypted_content":"gAAAA-n","summary":[]}"#;
    let msgn = r#"{"id":"msg_n","type":"message","content":[{"type":"output_text","text":"."}],"role":"assistant"}"#;
    let want = format!(
        r#"{}{{"role":"user","content":"Time and date in Zürich?"}},{rs1},{fc1},{OUT1},{rs2},{msg2},{rsn},{msgn},{{"role":"user","content":"Thanks."}}],"reasoning":{{"summary":"auto"}},"store":false}}"#,
        head(GPT5)
    );
    assert_eq!(body(&h, GPT5), want);
    // Reasoning left out (a recovery drop): the id-less call keeps no private key either.
    let drops = Drops {
        all_reasoning: true,
        ..Drops::default()
    };
    let other = body_for(&h, GPT5, ThinkingRequest::NoPreference, &drops);
    assert!(!other.contains("_issuer"), "{other}");
    assert!(
        other.contains(r#"{"type":"function_call","status":"completed","arguments":"{\"city\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#),
        "{other}"
    );
}

#[test]
fn a_whole_reply_is_captured_with_every_item_exact() {
    let (msg, meta) = capture_reply(&reply(&[RS1, FC1]), origin(GPT5)).unwrap();
    assert_eq!(msg.role, Role::Assistant);
    assert_eq!(msg.content.as_ref().unwrap().get(), "null");
    assert_eq!(
        msg.reasoning_content.as_ref().unwrap().text(),
        "Need the time in Zürich."
    );
    let call = &msg.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.id.as_deref(), Some("call_1"));
    assert_eq!(call.function.name, "now");
    assert_eq!(
        call.function.arguments.as_ref().unwrap().get(),
        r#""{\"city\":\"Z\\u00fcrich\"}""#
    );
    assert_eq!(
        serde_json::to_string(&call.extra).unwrap(),
        r#"[["call_id","call_1"],["response_item_id","fc_1"]]"#
    );
    assert_items(&msg, RS1, FC1);
    assert_eq!(
        extra(&msg, "hermes_block_order"),
        Some(r#"["reasoning","function_call"]"#)
    );
    assert_eq!(msg.origin, Some(origin(GPT5)));
    assert!(msg.replayable());
    assert_eq!(meta.finish, Some(FinishReason::ToolCalls));
    let usage = meta.usage.unwrap();
    assert_eq!(
        (usage.input, usage.output, usage.reasoning, usage.cache_read),
        (10, 20, 12, 4)
    );

    let (answer, meta) = capture_reply(&reply(&[RS3, MSG3]), origin(GPT5)).unwrap();
    assert_eq!(
        answer.content.as_ref().unwrap().get(),
        r#""It is noon, Monday.""#
    );
    assert_eq!(
        answer.reasoning_content.as_ref().unwrap().text(),
        "Answer.\n\nBriefly."
    );
    assert_eq!(meta.finish, Some(FinishReason::Stop));
}

#[test]
fn an_incomplete_reply_is_stored_for_the_record_only_and_a_failed_one_not_at_all() {
    let incomplete = r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"id":"rs_x","type":"reasoning","summary":[],"encrypted_content":"X"}]}"#;
    let (msg, meta) = capture_reply(incomplete, origin(GPT5)).unwrap();
    assert!(!msg.replayable());
    assert_eq!(extra(&msg, NOT_REPLAYED_KEY), Some("true"));
    assert_eq!(meta.finish, Some(FinishReason::Length));
    let h = vec![
        Message::text(Role::User, "q"),
        msg,
        Message::text(Role::User, "q2"),
    ];
    assert!(!body(&h, GPT5).contains("rs_x"));

    let failed = r#"{"status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}"#;
    let err = capture_reply(failed, origin(GPT5)).unwrap_err();
    assert_eq!(err.to_string(), "The model failed. (server_error)");
}

/// A stream of `items`: each item announced by `.added` with an incomplete body (no
/// encrypted content yet, empty arguments), its deltas, then `.done` with the whole item.
fn stream_of(items: &[(&str, &str)], end: &str) -> String {
    let mut out = String::from(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"output\":[]}}\n\n",
    );
    for (i, (item, delta)) in items.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(item).unwrap();
        let kind = v["type"].as_str().unwrap();
        let partial = format!(
            r#"{{"id":"{}","type":"{kind}","status":"in_progress"}}"#,
            v["id"].as_str().unwrap()
        );
        out.push_str(&format!(
            "event: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":{i},\"item\":{partial}}}\n\n"
        ));
        let event = match kind {
            "reasoning" => "response.reasoning_summary_text.delta",
            "message" => "response.output_text.delta",
            _ => "response.function_call_arguments.delta",
        };
        out.push_str(&format!(
            "event: {event}\ndata: {{\"type\":\"{event}\",\"output_index\":{i},\"delta\":{}}}\n\n",
            serde_json::to_string(delta).unwrap()
        ));
        out.push_str(&format!(
            "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":{i},\"item\":{item}}}\n\n"
        ));
    }
    out.push_str(end);
    out
}

const COMPLETED: &str = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":20,\"output_tokens_details\":{\"reasoning_tokens\":12},\"total_tokens\":30}}}\n\n";

#[derive(Default)]
struct Deltas(Mutex<Vec<String>>);

impl Deltas {
    fn push(&self, d: Delta<'_>) {
        let s = match d {
            Delta::Reasoning(t) => format!("R:{t}"),
            Delta::Content(t) => format!("C:{t}"),
            // Tool-call fragments: `tool_call_fragments_*` below.
            _ => return,
        };
        self.0.lock().unwrap().push(s);
    }
}

async fn read_cut(text: &str, size: usize, deltas: &Deltas) -> Result<Reply, TransportError> {
    let turn = super::capture::TurnCapture::new();
    hermes_providers::testing::read_cut(text, size, turn, origin(GPT5), &|d| deltas.push(d)).await
}

#[tokio::test]
async fn a_stream_cut_anywhere_stores_the_done_items_as_the_whole_reply_does() {
    let (whole, whole_meta) = capture_reply(&reply(&[RS3, MSG3]), origin(GPT5)).unwrap();
    let text = stream_of(
        &[(RS3, "Answer."), (MSG3, "It is noon, Monday.")],
        COMPLETED,
    );
    for size in [1, 7, 64, text.len()] {
        let deltas = Deltas::default();
        let got = read_cut(&text, size, &deltas).await.unwrap();
        assert_eq!(
            serde_json::to_string(&got.message).unwrap(),
            serde_json::to_string(&whole).unwrap(),
            "cut at {size}"
        );
        assert_eq!(got.meta, whole_meta);
        assert_eq!(
            deltas.0.into_inner().unwrap(),
            ["R:Answer.", "C:It is noon, Monday."]
        );
    }
    let calls = stream_of(&[(RS1, "Need"), (FC1, "{}")], COMPLETED);
    let got = read_cut(&calls, 5, &Deltas::default()).await.unwrap();
    assert_eq!(
        extra(&got.message, "codex_reasoning_items"),
        Some(format!("[{RS1}]").as_str())
    );
    assert_eq!(got.meta.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn failed_error_and_unfinished_streams_store_nothing_and_incomplete_is_not_replayed() {
    let failed = stream_of(
        &[(RS1, "Need")],
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"Boom.\"},\"output\":[]}}\n\n",
    );
    let err = read_cut(&failed, 9, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m == "Boom. (server_error)"),
        "{err}"
    );

    let error = stream_of(
        &[(RS1, "Need")],
        "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down.\",\"param\":null}\n\n",
    );
    let err = read_cut(&error, 9, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::AfterOk(m) if m.contains("Slow down.")),
        "{err}"
    );

    let cut = stream_of(&[(RS1, "Need")], "");
    let err = read_cut(&cut, 9, &Deltas::default()).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Stream(m) if m.contains("not stored")),
        "{err}"
    );

    let incomplete = stream_of(
        &[(RS1, "Need")],
        "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[]}}\n\n",
    );
    let got = read_cut(&incomplete, 9, &Deltas::default()).await.unwrap();
    assert!(!got.message.replayable());
    assert_eq!(got.meta.finish, Some(FinishReason::Length));
}

fn wire() -> ResponsesWire {
    ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: BASE.into(),
        auth: None,
    }
}

#[test]
fn an_unknown_parameter_naming_the_replayed_ciphertext_is_a_refusal() {
    let body = r#"{"error":{"message":"Unknown parameter: 'input[1].encrypted_content'.","type":"invalid_request_error","param":"input[1].encrypted_content","code":"unknown_parameter"}}"#;
    let w = wire();
    assert_eq!(
        w.refused(Some(400), body, &["encrypted_content"], false),
        Some(vec!["encrypted_content"])
    );
    assert_eq!(w.refused(Some(400), body, &[], false), None);
    assert_eq!(
        w.refused(Some(500), body, &["encrypted_content"], false),
        None
    );
    let other = r#"{"error":{"message":"Invalid value for 'input'.","type":"invalid_request_error","param":"input","code":null}}"#;
    assert_eq!(
        w.refused(Some(400), other, &["encrypted_content"], false),
        None
    );
}

#[test]
fn foreign_ciphertext_is_recovered_once_without_that_origins_reasoning() {
    let h = three_steps(GPT5);
    let d = decision("openai-responses", BASE, GPT5);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &d, &verdicts);
    let w = wire();
    let body = r#"{"error":{"message":"The encrypted content for item rs_2 could not be verified. Reason: Encrypted content organization_id did not match the target organization.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}"#;
    let r = w.recover(&parts, Some(400), body).unwrap();
    let out = String::from_utf8(r.outgoing.body.clone()).unwrap();
    assert!(!out.contains("\"encrypted_content\":"), "{out}");
    assert!(!out.contains("\"id\":"), "{out}");
    assert!(
        r.note.contains("rs_2") && r.note.contains("gpt-5 on api.openai.com"),
        "{}",
        r.note
    );
    assert_eq!(
        w.recover(&parts, Some(400), r#"{"error":{"message":"other"}}"#),
        None
    );
    assert_eq!(w.recover(&parts, Some(500), body), None);
}

#[test]
fn the_url_and_the_explain_lines() {
    assert_eq!(
        url("https://api.openai.com/v1/"),
        "https://api.openai.com/v1/responses"
    );
    let h = three_steps("gpt-5-mini");
    let d = decision("openai-responses", BASE, GPT5);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &d, &verdicts).thinking(ThinkingRequest::Effort(Effort::Max));
    let lines = explain(&parts, BASE).unwrap();
    assert_eq!(lines[0], "POST /v1/responses");
    assert!(
        lines.iter().any(|l| l.contains("effort max → high")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("message 2:")
            && l.contains("provenance")
            && l.contains("without their id")),
        "{lines:?}"
    );
    // Each message whose reasoning provenance left out is counted once, for the metrics.
    let out = wire().encode(&parts).unwrap();
    hermes_providers::testing::provenance_counted(&lines, out.carriers.dropped_provenance);
    let own = three_steps(GPT5);
    let parts = RequestParts::new(&own, &d, &verdicts);
    assert!(wire().encode(&parts).unwrap().carriers.is_empty());
}

#[test]
fn encrypted_content_counts_when_it_decodes_to_a_non_empty_string() {
    for literal in [
        r#""""#,
        r#""gAAAA""#,
        r#""\u0041""#,
        r#""\n""#,
        r#""\\""#,
        r#""\ud800""#,
        r#""\ud800\udc00""#,
        "5",
        "null",
        "[]",
        r#"{"a":"b"}"#,
    ] {
        let raw = serde_json::value::RawValue::from_string(literal.to_owned()).unwrap();
        let decoded = serde_json::from_str::<String>(literal).is_ok_and(|s| !s.is_empty());
        assert_eq!(super::body::non_empty_string(&raw), decoded, "{literal}");
    }
}

/// A stored item as it went out before the one-parse probe: a derived struct read its
/// members, then `without_members` always walked it; with what the probe read.
fn outgoing_by_derive(raw: &str, keep_id: bool) -> Option<(String, String)> {
    use hermes_providers::native::members::{is_private_key, without_members};
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(rename = "type")]
        kind: Option<String>,
        id: Option<String>,
        call_id: Option<String>,
        #[serde(borrow)]
        encrypted_content: Option<&'a RawValue>,
        summary: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe<'_> = serde_json::from_str(raw).ok()?;
    let encrypted = probe
        .encrypted_content
        .and_then(|e| serde_json::from_str::<String>(e.get()).ok())
        .is_some_and(|e| !e.is_empty());
    let read = format!(
        "{:?} {:?} {:?} {encrypted} {}",
        probe.kind.as_deref().unwrap_or_default(),
        probe.id,
        probe.call_id,
        probe.summary.is_some()
    );
    let raw = RawValue::from_string(raw.to_owned()).ok()?;
    let add_summary = probe.kind.as_deref() == Some("reasoning") && probe.summary.is_none();
    let kept = without_members(&raw, |k| {
        is_private_key(k) || (!keep_id && k == "id") || (add_summary && k == "summary")
    });
    if !add_summary {
        return Some((read, kept.get().to_owned()));
    }
    let text = kept.get();
    let Some(close) = text.rfind('}') else {
        return Some((read, text.to_owned()));
    };
    let head = &text[..close];
    let sep = if head.trim_end() == "{" { "" } else { "," };
    Some((read, format!("{head}{sep}\"summary\":[]}}")))
}

#[test]
fn the_one_parse_item_probe_reads_and_sends_what_the_derived_probe_and_member_walk_did() {
    let items = [
        r#"{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":"{}"}"#,
        r#"{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}"#,
        r#"{"id":null,"type":"message","content":[]}"#,
        r#"{"_issuer_kind":"codex","id":"m1","type":"message","content":[],"_x":{"id":1}}"#,
        r#"{"\u005fhidden":1,"i\u0064":"m1","type":"message"}"#,
        r#"{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gA=="}"#,
        r#"{"type":"reasoning","summary":null,"encrypted_content":"gA==","_k":2}"#,
        r#"{"type":"reasoning","summary":[],"encrypted_content":""}"#,
        r#"{"type":"reasoning","summary":[],"encrypted_content":"\ud800"}"#,
        r#"{"type":"reasoning","encrypted_content":7,"summary":[{"type":"summary_text"}]}"#,
        r#"{"type":"message","type":"message"}"#,
        r#"{"id":"a","id":"b","type":"message"}"#,
        r#"{"_a":1,"_a":2,"type":"message"}"#,
        r#"{"type":null,"id":5}"#,
        r#"{"type":"message","content":[{"id":"x","_y":1}]}"#,
        r#"["message","m1","c1","gA==",[]]"#,
        r#"["message"]"#,
        r#"[]"#,
        r#"["message","m1","c1","gA==",[],"more"]"#,
        r#"{ "id" : "m1" , "type" : "message" }"#,
        r#""message""#,
    ];
    for item in items {
        let text =
            format!(r#"[{{"role":"assistant","content":"","codex_message_items":[{item}]}}]"#);
        let history = hermes_core::parse_history(&text).unwrap().messages;
        let stored = super::body::stored_items(&history[0], super::MESSAGE_ITEMS_KEY);
        for keep_id in [true, false] {
            let ours = stored.as_ref().map(|s| {
                let i = &s[0];
                let read = format!(
                    "{:?} {:?} {:?} {} {}",
                    &*i.kind,
                    i.id.as_deref(),
                    i.call_id.as_deref(),
                    i.encrypted,
                    i.summary
                );
                (read, super::body::outgoing(i, keep_id).get().to_owned())
            });
            assert_eq!(
                ours,
                outgoing_by_derive(item, keep_id),
                "{item} keep_id {keep_id}"
            );
        }
    }
}

/// A server-side compaction item (docs/spec.md §7).
const CMP: &str = r#"{"id":"cmp_1","type":"compaction","encrypted_content":"c2VhbGVk"}"#;
/// An item kept before the latest compaction item (openai-python 3.57.0
/// `types/responses/response_configuration_update_item.py`).
const UPDATE: &str = r#"{"id":"cu_1","type":"configuration_update","reasoning":{"effort":"low"}}"#;

#[test]
fn the_input_starts_at_the_latest_compaction_item_to_its_issuer_only() {
    let mut history = vec![
        Message::text(Role::System, "Be brief."),
        Message::text(Role::User, "Time and date in Zürich?"),
        turn(&[UPDATE, RS1, FC1], GPT5),
        tool("call_1", "12:00"),
        turn(&[CMP, RS2, FC2], GPT5),
        tool("call_2", "Monday"),
    ];
    let sent = body(&history, GPT5);
    // The compaction item first (after the kept configuration_update), byte for byte; the
    // rest follows it: nothing else from before it.
    assert!(
        sent.contains(&format!(r#""input":[{UPDATE},{CMP},{RS2},{FC2},"#)),
        "{sent}"
    );
    assert!(!sent.contains("Zürich"), "{sent}");
    assert!(!sent.contains(RS1), "{sent}");
    // Another model gets every turn, without the compaction item (and without gpt-5's
    // reasoning: provenance).
    let other = body(&history, "gpt-5.1");
    assert!(!other.contains("cmp_1"), "{other}");
    assert!(other.contains("Zürich"), "{other}");
    // A reply stamped with an account goes back under that account only.
    history[4].extra.push((
        super::compaction::ACCOUNT_KEY.to_owned(),
        RawJson::string("acct-a"),
    ));
    assert!(!body(&history, GPT5).contains("cmp_1"));
    let d = decision("openai-responses", BASE, GPT5);
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&history, &d, &verdicts);
    let under = |account| {
        String::from_utf8(
            super::body::encode_for(&parts, &Drops::default(), Some(account))
                .unwrap()
                .body,
        )
        .unwrap()
    };
    assert!(under("acct-a").contains(&format!(r#""input":[{UPDATE},{CMP},"#)));
    assert!(!under("acct-b").contains("cmp_1"));
}

#[tokio::test]
async fn a_streamed_compaction_item_is_stored_as_the_whole_reply_stores_it() {
    let (whole, _) = capture_reply(&reply(&[CMP, RS3, MSG3]), origin(GPT5)).unwrap();
    assert_eq!(
        extra(&whole, "codex_message_items"),
        Some(format!("[{CMP},{MSG3}]").as_str())
    );
    // The compaction item arrives whole in its `.done` event, first (output index 0).
    let rest = stream_of(
        &[(RS3, "Answer."), (MSG3, "It is noon, Monday.")],
        COMPLETED,
    )
    .replace("\"output_index\":1", "\"output_index\":2")
    .replace("\"output_index\":0", "\"output_index\":1");
    let (head, tail) = rest.split_once("\n\n").unwrap();
    let text = format!(
        "{head}\n\nevent: response.output_item.added\ndata: {{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{CMP}}}\n\nevent: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{CMP}}}\n\n{tail}"
    );
    for size in [1, 9, text.len()] {
        let got = read_cut(&text, size, &Deltas::default()).await.unwrap();
        assert_eq!(
            serde_json::to_string(&got.message).unwrap(),
            serde_json::to_string(&whole).unwrap(),
            "cut at {size}"
        );
    }
}

#[test]
fn only_openais_own_host_or_a_local_endpoint_runs_built_in_tools() {
    for base in [
        "https://api.openai.com/v1",
        "https://eu.api.openai.com/v1",
        "http://127.0.0.1:8080/v1",
    ] {
        assert!(super::is_openai_api(base), "{base}");
    }
    for base in [
        "https://openrouter.ai/api/v1",
        "https://api.openai.com.example.com/v1",
        "https://my-resource.openai.azure.com/openai/v1",
    ] {
        assert!(!super::is_openai_api(base), "{base}");
    }
}

/// OpenAI's standalone compaction is offered on OpenAI's own API (and a local endpoint that
/// speaks it: the simulator) only; relays and other Responses surfaces get hermes' own.
#[test]
fn native_compaction_is_openais_own_and_no_relays() {
    let on = |base_url: &str| {
        ResponsesWire {
            base_url: base_url.into(),
            ..wire()
        }
        .native_compaction()
    };
    let native = on("https://api.openai.com/v1").expect("OpenAI compacts natively");
    assert_eq!((native.what, native.keeps), ("item", "reasoning"));
    assert!(!native.streams && native.with_summary);
    let asked = (native.request)(&hermes_core::Passthrough::new());
    assert_eq!(asked, crate::compaction::request());
    assert_eq!(
        (native.threshold)(50_000).fields,
        vec![crate::compaction::threshold_field(50_000)]
    );
    assert!(on("http://127.0.0.1:8080/v1").is_some());
    assert!(on("https://openrouter.ai/api/v1").is_none());
}
