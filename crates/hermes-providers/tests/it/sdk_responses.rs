//! Independent evidence, from the official Python `openai` client, that hermes' OpenAI
//! Responses wire (`hermes_wire_responses`) sends what the SDK sends for the same
//! conversation, and that every body `hermes preview` prints is one the SDK's own request types
//! accept with no key they do not declare (checked, with an unknown key injected at each object
//! refused, by the schema table `sdk_schema` over this module's cases; here, wrong values).
//!
//! openai is pinned in `.ci/sdk-requirements.txt` and installed by `.ci/run` into
//! `target/sdk-venv`; these tests find its Python in `HERMES_SDK_PYTHON`. Without a usable one
//! they print a skip note and pass, unless `HERMES_REQUIRE_SDK` is set (CI sets it): then they
//! fail. The scripts in `tests/sdk/` say how they work:
//! - `openai_record.py` calls `OpenAI(api_key, base_url, max_retries=0).responses.create(**p)`
//!   with hermes' parsed body as `p` (key order kept; no `extra_body`, so a key the SDK's
//!   signature does not take fails the call) against the loopback recorder this test runs;
//! - `openai_validate.py` walks `ResponseCreateParamsNonStreaming` / `…Streaming` (the
//!   TypedDicts of `openai/types/responses/response_create_params.py`) recursively, unknown keys
//!   forbidden at every depth, required keys required.
//!
//! An assistant message replayed without its id (its turn's reasoning left out: another model
//! or host minted it, a recovery drop, a non-reasoning model) goes as the SDK's
//! `EasyInputMessageParam` (`{"role":"assistant","content":TEXT}`): `ResponseOutputMessageParam`
//! requires `id` (`response_output_message_param.py`), so that is the only input item type an
//! id-less assistant turn fits (openai 3.57.0). This test first found hermes sending the output
//! message shape without its id; every body now validates.

use std::path::Path;

use hermes_core::{
    Effort, Message, RawJson, RequestParts, ResolveOptions, RouteTarget, ThinkingRequest, Verdicts,
};
use hermes_providers::builtin_table;
use hermes_wire_responses::{self as responses, Drops, WIRE_ID};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::images;
use crate::support::{self, header};

const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_record.py");
pub(crate) const VALIDATE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_validate.py");

pub(crate) const GPT5: &str = "gpt-5";
const KEY: &str = "sk-hermes-sdk-test-key";
pub(crate) const BASE: &str = "https://api.openai.com/v1";

/// The key the negative controls inject: no SDK type declares it.
pub(crate) const PROBE: &str = "hermes_probe_unknown_key";

// ---------------------------------------------------------------------------------------------
// The SDK's Python

pub(crate) const PROBE_SCRIPT: &str = "import openai, pydantic\n\
from openai.types.responses import response_create_params\n\
print(f'openai {openai.__version__}, pydantic {pydantic.VERSION}')";

/// The SDK's Python, or `None` when there is none and none is required (see
/// [`hermes_test_support::sdk::sdk_python`]).
fn sdk_python() -> Option<&'static Path> {
    hermes_test_support::sdk::sdk_python("openai", PROBE_SCRIPT)
}

/// Runs `script` with `input` on standard input, with none of the machine's OpenAI settings
/// and no proxy (see [`support::python`]): its exit code, standard output and error.
pub(crate) fn run(py: &Path, script: &str, input: &str) -> (Option<i32>, String, String) {
    support::run(support::python(py, &["OPENAI_"]), script, input)
}

// ---------------------------------------------------------------------------------------------
// The conversation

#[path = "../../../hermes-wire-responses/src/fixtures.rs"]
mod fixtures;
use fixtures::{FC1, FC2, MSG3, RS1, RS2, RS3};

/// The chat-completions tool definitions hermes stores.
const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"date","parameters":{"type":"object","properties":{}}}}]"#;

/// `item` as the Python original stores it: stamped with its issuer (`_issuer_kind`,
/// `_issuer_model`), and for a reasoning item with `summary: []`, without its summary.
fn stamped(item: &str, model: &str) -> String {
    let item = item.replace(r#""summary":[],"#, "");
    format!(
        r#"{{"_issuer_kind":"codex_responses",{},"_issuer_model":"{model}"}}"#,
        &item[1..item.len() - 1]
    )
}

/// A two-step tool loop minted by `model` on api.openai.com, as hermes stores it: each turn's
/// reasoning item before its call, then the answer, then a new question. `imported`: as the
/// Python original stores it instead (no origin, every item stamped, a summary not kept).
fn history(model: &str, imported: bool) -> Vec<Message> {
    let host = RouteTarget::new(WIRE_ID, Some(BASE), model).host_key();
    let origin = if imported {
        "null".to_owned()
    } else {
        format!(r#"{{"provider":"{WIRE_ID}","host":"{host}","model":"{model}"}}"#)
    };
    let item = |i: &str| {
        if imported {
            stamped(i, model)
        } else {
            i.to_owned()
        }
    };
    let (rs1, fc1, rs2, fc2, rs3, msg3) = (
        item(RS1),
        item(FC1),
        item(RS2),
        item(FC2),
        item(RS3),
        item(MSG3),
    );
    let text = format!(
        r#"[{{"role":"system","content":"Be brief."}},
            {{"role":"user","content":"Time and date in Zürich?"}},
            {{"role":"assistant","content":null,"reasoning_content":"Need the time in Zürich.",
              "tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"now","arguments":"{{\"city\":\"Z\\u00fcrich\"}}"}},"call_id":"call_1","response_item_id":"fc_1"}}],
              "codex_reasoning_items":[{rs1}],"codex_message_items":[{fc1}],
              "hermes_block_order":["reasoning","function_call"],"origin":{origin}}},
            {{"role":"tool","tool_call_id":"call_1","content":"12:00"}},
            {{"role":"assistant","content":null,
              "tool_calls":[{{"id":"call_2","type":"function","function":{{"name":"date","arguments":"{{}}"}},"call_id":"call_2","response_item_id":"fc_2"}}],
              "codex_reasoning_items":[{rs2}],"codex_message_items":[{fc2}],
              "hermes_block_order":["reasoning","function_call"],"origin":{origin}}},
            {{"role":"tool","tool_call_id":"call_2","content":"Monday"}},
            {{"role":"assistant","content":"It is noon, Monday.","reasoning_content":"Answer.\n\nBriefly.",
              "codex_reasoning_items":[{rs3}],"codex_message_items":[{msg3}],
              "hermes_block_order":["reasoning","message"],"origin":{origin}}},
            {{"role":"user","content":"Thanks. And tomorrow?"}}]"#
    );
    hermes_core::parse_history(&text).unwrap().messages
}

/// One body of the corpus.
pub(crate) struct Case {
    pub(crate) label: &'static str,
    /// The model the history was minted by.
    pub(crate) minted_by: &'static str,
    /// The model the request goes to.
    pub(crate) model: &'static str,
    pub(crate) thinking: ThinkingRequest,
    pub(crate) tools: bool,
    pub(crate) stream: bool,
    /// The history as the Python original stores it ([`history`]).
    pub(crate) imported: bool,
    /// A Responses client's built-in tools passed through ([`BUILTIN_TOOLS`]).
    pub(crate) builtin: bool,
}

/// The built-in tools a Responses client of the gateway may send to OpenAI, as written
/// (`Passthrough::server_tools` in OpenAI's dialect): the Responses wire writes them after the
/// function tools.
pub(crate) const BUILTIN_TOOLS: [&str; 2] = [
    r#"{"type":"web_search","search_context_size":"low"}"#,
    r#"{"type":"file_search","vector_store_ids":["vs_1"],"max_num_results":4}"#,
];

/// The tool loop on GPT-5 with its own reasoning, whole: what each case of [`CASES`] changes.
const TOOL_LOOP: Case = Case {
    label: "tool loop, own reasoning replayed",
    minted_by: GPT5,
    model: GPT5,
    thinking: ThinkingRequest::NoPreference,
    tools: true,
    stream: false,
    imported: false,
    builtin: false,
};

pub(crate) const CASES: &[Case] = &[
    TOOL_LOOP,
    Case {
        label: "tool loop, streamed, effort high",
        thinking: ThinkingRequest::Effort(Effort::High),
        stream: true,
        ..TOOL_LOOP
    },
    Case {
        label: "--no-thinking",
        thinking: ThinkingRequest::Off,
        ..TOOL_LOOP
    },
    Case {
        label: "another model's turns: reasoning left out, pairs id-less",
        model: "gpt-5-mini",
        ..TOOL_LOOP
    },
    Case {
        label: "a non-reasoning model",
        model: "gpt-4.1",
        tools: false,
        stream: true,
        ..TOOL_LOOP
    },
    Case {
        label: "imported from the Python original: stamped items, a summary not kept",
        imported: true,
        ..TOOL_LOOP
    },
    Case {
        label: "a gateway client's built-in tools after the function tools",
        builtin: true,
        ..TOOL_LOOP
    },
];

/// hermes' body for `case`, as sent (`hermes preview` prints these bytes re-indented).
pub(crate) fn hermes_body(case: &Case) -> String {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new(WIRE_ID, Some(BASE), case.model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let h = history(case.minted_by, case.imported);
    let tools = RawJson::from_text(TOOLS).unwrap();
    let mut builtin = hermes_core::Passthrough::new();
    if case.builtin {
        builtin.dialect = hermes_core::Dialect::OpenAiResponses;
        builtin.server_tools = BUILTIN_TOOLS
            .iter()
            .map(|t| RawJson::from_text((*t).to_owned()).unwrap())
            .collect();
    }
    let parts = RequestParts::new(&h, &decision, &verdicts)
        .thinking(case.thinking)
        .tools(case.tools.then_some(&tools))
        .stream(case.stream)
        .passthrough(&builtin);
    let encoded = responses::encode(&parts, &Drops::default()).unwrap();
    String::from_utf8(encoded.body).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The recorder

const REPLY: &str = r#"{"id":"resp_sdk","object":"response","created_at":0,"model":"gpt-5","status":"completed","output":[{"id":"msg_sdk","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"ok"}]}],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}"#;

/// A loopback server that records every request and answers a minimal valid Response: JSON,
/// or for a streamed request one `response.completed` event.
async fn recorder() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            if body["stream"] == json!(true) {
                let event = format!(
                    r#"{{"type":"response.completed","sequence_number":0,"response":{REPLY}}}"#
                );
                ResponseTemplate::new(200).set_body_raw(
                    format!("event: response.completed\ndata: {event}\n\n"),
                    "text/event-stream",
                )
            } else {
                ResponseTemplate::new(200).set_body_raw(REPLY, "application/json")
            }
        })
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn hermes_sends_what_the_openai_sdk_sends_for_the_same_conversation() {
    let Some(py) = sdk_python() else { return };
    let server = recorder().await;
    let bodies: Vec<String> = CASES.iter().map(hermes_body).collect();
    // The bodies go in as text so the SDK gets the keyword arguments in hermes' key order.
    let spec = format!(
        r#"{{"base_url":{},"api_key":{},"calls":[{}]}}"#,
        json!(format!("{}/v1", server.uri())),
        json!(KEY),
        bodies.join(",")
    );
    let (code, stdout, stderr) = run(py, RECORD, &spec);
    assert_eq!(
        code,
        Some(0),
        "openai_record.py failed:\n{stdout}\n{stderr}"
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["calls"], json!(CASES.len()), "{stdout}");
    for (case, result) in CASES.iter().zip(report["results"].as_array().unwrap()) {
        let want = if case.stream {
            json!(["response.completed"])
        } else {
            json!("resp_sdk")
        };
        assert_eq!(result, &want, "the SDK read the reply of {}", case.label);
    }
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), CASES.len(), "one request per call");
    for ((case, ours), request) in CASES.iter().zip(&bodies).zip(&received) {
        assert_eq!(request.url.path(), "/v1/responses", "{}", case.label);
        assert_eq!(
            header(request, "authorization"),
            Some(format!("Bearer {KEY}").as_str()),
            "{}",
            case.label
        );
        let ours: Value = serde_json::from_str(ours).unwrap();
        let sdk: Value = serde_json::from_slice(&request.body).unwrap();
        let diffs = support::differences(&ours, &sdk);
        assert!(
            diffs.is_empty(),
            "{}: hermes' body and the SDK's differ:\n{}",
            case.label,
            diffs.join("\n")
        );
    }
    // The corpus covers what it says: replayed reasoning with summaries and encrypted
    // content, a streamed body, tools, and a body with no reasoning items at all.
    assert!(bodies[0].contains(RS1) && bodies[0].contains(RS3) && bodies[0].contains("tools"));
    assert!(bodies[1].contains(r#""effort":"high""#) && bodies[1].contains(r#""stream":true"#));
    assert!(!bodies[3].contains(r#""type":"reasoning""#) && !bodies[3].contains("fc_1"));
    // The imported items go as the API returned them: no issuer stamp, the summary as `[]`.
    assert!(!bodies[5].contains("_issuer"), "{}", bodies[5]);
    assert!(bodies[5].contains(RS1) && bodies[5].contains(FC1) && bodies[5].contains(MSG3));
    assert!(
        bodies[5].contains(
            r#"{"id":"rs_2","type":"reasoning","encrypted_content":"gAAAA-two","summary":[]}"#
        ),
        "{}",
        bodies[5]
    );
}

// ---------------------------------------------------------------------------------------------
// Validation

/// What `openai_validate.py` says of each of `bodies`: its exit code and one line per body.
fn validate(py: &Path, bodies: &[String]) -> (Option<i32>, Vec<String>, String) {
    let (code, stdout, stderr) = run(py, VALIDATE, &bodies.join("\n"));
    (code, stdout.lines().map(str::to_owned).collect(), stderr)
}

// That every preview body validates, and that an unknown key injected at each of its objects is
// refused, is the schema table's (`sdk_schema`). Here: the shape of an id-less turn, and values.

#[test]
fn an_id_less_assistant_turn_goes_as_the_sdks_easy_input_message() {
    let body: Value = serde_json::from_str(&hermes_body(&CASES[3])).unwrap();
    assert!(
        body["input"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["role"] == "assistant" && item["content"].is_string()),
        "{body}"
    );
}

#[test]
fn negative_controls_a_wrong_value_fails() {
    let Some(py) = sdk_python() else { return };
    let body = hermes_body(&CASES[0]);
    // An unknown effort, a string for `store`; the unchanged body, in the same run, passes.
    let mut wrong: Value = serde_json::from_str(&body).unwrap();
    wrong["reasoning"]["effort"] = json!("extreme");
    let mut store: Value = serde_json::from_str(&body).unwrap();
    store["store"] = json!("false");
    let (code, lines, _) = validate(py, &[wrong.to_string(), store.to_string(), body]);
    assert_eq!(code, Some(1));
    assert!(
        lines[0].starts_with("invalid reasoning.effort:"),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("invalid store:"), "{lines:?}");
    assert_eq!(lines[2], "ok", "{lines:?}");
}

// ---------------------------------------------------------------------------------------------
// Images

/// The model the image bodies go to.
pub(crate) const IMAGE_MODEL: &str = "gpt-4.1";

/// hermes' body for `model` over [`images::history`], as sent.
pub(crate) fn image_body(model: &str) -> String {
    let h = images::history(true);
    let encoded = support::with_parts((WIRE_ID, BASE, model), &h, TOOLS, |parts| {
        responses::encode(&parts, &Drops::default()).unwrap()
    });
    String::from_utf8(encoded.body).unwrap()
}

#[tokio::test]
async fn image_inputs_in_other_shapes_are_refused_and_the_sdk_sends_them_as_hermes_does() {
    let Some(py) = sdk_python() else { return };
    let body = image_body(IMAGE_MODEL);
    let value: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(value["input"][0]["content"][1]["type"], "input_image");
    assert_eq!(value["input"][2]["output"][1]["type"], "input_image");
    // An image part without `detail` (required by `ResponseInputImageParam`) or with the chat
    // shape is refused (that the body itself validates is the schema table's).
    let mut no_detail = value.clone();
    no_detail["input"][0]["content"][1]
        .as_object_mut()
        .unwrap()
        .remove("detail");
    let mut chat = value.clone();
    chat["input"][0]["content"][1] =
        json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
    let (code, lines, stderr) = validate(py, &[no_detail.to_string(), chat.to_string()]);
    assert_eq!(code, Some(1), "{lines:?} {stderr}");
    for line in &lines {
        assert!(line.starts_with("invalid input.0.content.1"), "{lines:?}");
    }
    assert_eq!(lines.len(), 2, "{lines:?}");
    // The SDK sends the same body.
    let server = recorder().await;
    let ours = image_body(IMAGE_MODEL);
    let spec = format!(
        r#"{{"base_url":{},"api_key":{},"calls":[{ours}]}}"#,
        json!(format!("{}/v1", server.uri())),
        json!(KEY),
    );
    let (code, stdout, stderr) = run(py, RECORD, &spec);
    assert_eq!(
        code,
        Some(0),
        "openai_record.py failed:\n{stdout}\n{stderr}"
    );
    let received = server.received_requests().await.unwrap();
    let sdk: Value = serde_json::from_slice(&received[0].body).unwrap();
    let diffs = support::differences(&serde_json::from_str(&ours).unwrap(), &sdk);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Compaction (docs/spec.md §7)

/// The validator's verdicts on `bodies` as `kind` (`responses`, `responses_compact`).
fn validate_as(py: &Path, kind: &str, bodies: &[String]) -> Vec<String> {
    let mut python = support::python(py, &["OPENAI_"]);
    python.env("HERMES_VALIDATE_PARAMS", kind);
    let (_, stdout, stderr) = support::run(python, VALIDATE, &bodies.join("\n"));
    let lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), bodies.len(), "{stderr}");
    lines
}

/// The compaction bodies validate against the pinned SDK's own types: a `/responses/compact`
/// body (`ResponseCompactParams`), and a create body with `context_management`, a kept
/// `configuration_update` item and a compaction item first (`ResponseCreateParams*`); the same
/// bodies with an unknown key where hermes writes its own are refused.
#[test]
fn compaction_bodies_validate_against_the_sdks_types() {
    let Some(py) = sdk_python() else { return };
    let cmp = r#"{"id":"cmp_1","type":"compaction","encrypted_content":"c2VhbGVk"}"#;
    let update = r#"{"id":"cu_1","type":"configuration_update","reasoning":{"effort":"low"}}"#;
    let host = RouteTarget::new(WIRE_ID, Some(BASE), GPT5).host_key();
    let origin = format!(r#"{{"provider":"{WIRE_ID}","host":"{host}","model":"{GPT5}"}}"#);
    let text = format!(
        r#"[{{"role":"user","content":"Time and date in Zürich?"}},
            {{"role":"assistant","content":null,
              "tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"now","arguments":"{{}}"}},"call_id":"call_1","response_item_id":"fc_1"}}],
              "codex_reasoning_items":[{RS1}],"codex_message_items":[{update},{FC1}],
              "hermes_block_order":["configuration_update","reasoning","function_call"],"origin":{origin}}},
            {{"role":"tool","tool_call_id":"call_1","content":"12:00"}},
            {{"role":"assistant","content":null,
              "tool_calls":[{{"id":"call_2","type":"function","function":{{"name":"date","arguments":"{{}}"}},"call_id":"call_2","response_item_id":"fc_2"}}],
              "codex_reasoning_items":[{RS2}],"codex_message_items":[{cmp},{FC2}],
              "hermes_block_order":["compaction","reasoning","function_call"],"origin":{origin}}},
            {{"role":"tool","tool_call_id":"call_2","content":"Monday"}}]"#
    );
    let h = hermes_core::parse_history(&text).unwrap().messages;
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new(WIRE_ID, Some(BASE), GPT5),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let encode = |passthrough: &hermes_core::Passthrough| {
        let parts = RequestParts::new(&h, &decision, &verdicts)
            .thinking(ThinkingRequest::Effort(Effort::High))
            .passthrough(passthrough);
        String::from_utf8(responses::encode(&parts, &Drops::default()).unwrap().body).unwrap()
    };
    let mut threshold = hermes_core::Passthrough::new();
    threshold
        .fields
        .push(responses::compaction::threshold_field(200_000));
    let create = encode(&threshold);
    let compact = encode(&responses::compaction::request());
    assert!(
        create
            .contains(r#""context_management":[{"type":"compaction","compact_threshold":200000}]"#),
        "{create}"
    );
    assert!(
        create.contains(&format!(r#""input":[{update},{cmp},"#)),
        "{create}"
    );
    assert!(
        compact.starts_with(r#"{"model":"gpt-5","input":["#),
        "{compact}"
    );
    let mut wrong: Value = serde_json::from_str(&create).unwrap();
    wrong["context_management"][0][PROBE] = json!(1);
    assert_eq!(
        validate_as(py, "responses", &[create.clone(), wrong.to_string()]),
        vec![
            "ok".to_owned(),
            format!(
                "invalid context_management.0.{PROBE}: unknown key for ContextManagement [extra_forbidden]"
            )
        ]
    );
    let mut wrong: Value = serde_json::from_str(&compact).unwrap();
    wrong["stream"] = json!(false);
    let lines = validate_as(py, "responses_compact", &[compact, wrong.to_string()]);
    assert_eq!(lines[0], "ok", "{lines:?}");
    assert!(lines[1].starts_with("invalid stream"), "{lines:?}");
}

/// The built-in tools case (the gateway's Responses door to OpenAI): the function tools first,
/// then each built-in tool byte for byte as the client wrote it.
#[test]
fn built_in_tools_follow_the_function_tools_byte_for_byte() {
    let case = CASES.iter().find(|c| c.builtin).unwrap();
    let body = hermes_body(case);
    let tools: Vec<Value> = serde_json::from_str::<Value>(&body).unwrap()["tools"]
        .as_array()
        .unwrap()
        .clone();
    let builtin_at = tools.len() - BUILTIN_TOOLS.len();
    assert!(builtin_at > 0, "no function tool before them: {body}");
    assert!(tools[..builtin_at].iter().all(|t| t["type"] == "function"));
    let expected = BUILTIN_TOOLS.join(",");
    assert!(body.contains(&expected), "not as written: {body}");
}
