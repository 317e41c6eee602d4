//! The SDK-evidence schema check of every native wire, one table: each row (wire, provider,
//! model, scenario) is encoded with hermes, through the path the wire's own SDK test takes, and
//! its body must
//! 1. be accepted by the wire's SDK validator script (`tests/sdk/`: botocore's `ParamValidator`
//!    for Converse, google-genai's pydantic types for Gemini, the openai TypedDicts for
//!    Responses), and
//! 2. be refused, with the reason naming the place, once an unknown key is injected at any one
//!    of its objects, each in turn (free-form values, whose keys are data, aside): the negative
//!    control that proves the validator sees that object. One control per distinct object in
//!    its place (see `validator::sweep_key`): rows that differ only in thinking share their turns.
//!
//! The Python runs once per wire, every row's body and control in one batch. A failing row is
//! named by its wire, provider, model and scenario. What is not "validates / refuses an injected
//! key" (signing, the bytes the SDK sends, wrong spellings and values) stays in the wire's own
//! module (`sdk_bedrock`, `sdk_gemini`, `sdk_responses`), whose conversations this table renders.

use std::fmt;
use std::path::Path;

use hermes_core::ThinkingRequest;
use hermes_test_support::validator;
use hermes_wire_gemini as gemini;
use hermes_wire_responses::WIRE_ID;
use serde_json::{Map, Value};

use crate::{sampling, sdk_bedrock, sdk_gemini, sdk_responses, support};

/// A native wire with an SDK validator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    /// Bedrock Converse (`BedrockWire`), checked by botocore.
    Converse,
    /// Gemini `generateContent` (AI Studio and Vertex AI), checked by google-genai.
    Gemini,
    /// OpenAI Responses, checked by openai.
    Responses,
}

/// A conversation shape: rendered by each wire from its SDK module's conversations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A tool loop in flight whose reasoning is signed (Converse: thinking and redacted
    /// blocks; Gemini: a signature on each sequential call; Responses: encrypted reasoning
    /// items, the answer, a new question).
    SignedToolLoop,
    /// Gemini: the same sequential calls, unsigned.
    UnsignedToolLoop,
    /// Gemini: parallel calls, only the first signed, results in another order.
    ParallelCalls,
    /// Gemini: signed text turns, and a text-turn signature after a call.
    TextSignatures,
    /// Responses: the tool loop as the Python original stores it (stamped items).
    ImportedToolLoop,
    /// Responses: the tool loop with a gateway client's built-in tools after the function tools
    /// (`sdk_responses::BUILTIN_TOOLS`).
    BuiltinTools,
    /// A user turn of text and images, a call, and a result with an image.
    Images,
    /// A question with tools and every sampling parameter the wire can send set
    /// (`sampling::sdk_body`).
    Sampling,
}

/// One conversation as a request asks for it.
#[derive(Clone, Copy, Debug)]
struct Scenario {
    shape: Shape,
    thinking: ThinkingRequest,
    stream: bool,
    /// Tool definitions in the request.
    tools: bool,
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}, thinking {:?}", self.shape, self.thinking)?;
        if self.stream {
            f.write_str(", streamed")?;
        }
        if !self.tools {
            f.write_str(", no tools")?;
        }
        Ok(())
    }
}

/// One row of the table.
struct Row {
    wire: Wire,
    provider: &'static str,
    model: &'static str,
    scenario: Scenario,
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} / {} / {} / {}",
            self.wire, self.provider, self.model, self.scenario
        )
    }
}

/// Every thinking setting hermes takes.
const ALL_THINKING: [ThinkingRequest; 8] = sdk_gemini::ALL_THINKING;

/// A Converse model id of a Claude model that binds reasoning to its prefix
/// (`anthropic::BOUND_FROM`).
const BOUND_CONVERSE_MODEL: &str = "us.anthropic.claude-fable-5-1-20260901-v1:0";

/// Where the Converse rows go: the loopback host the tool loop's turns were minted at (so their
/// signed blocks go back).
const CONVERSE_BASE: &str = "http://127.0.0.1:9";

fn row(
    wire: Wire,
    provider: &'static str,
    model: &'static str,
    shape: Shape,
    thinking: ThinkingRequest,
    stream: bool,
    tools: bool,
) -> Row {
    Row {
        wire,
        provider,
        model,
        scenario: Scenario {
            shape,
            thinking,
            stream,
            tools,
        },
    }
}

/// The Converse rows of `model`'s signed tool loop: every thinking setting, streamed and not.
fn converse_loops(rows: &mut Vec<Row>, model: &'static str) {
    for thinking in ALL_THINKING {
        for stream in [false, true] {
            rows.push(row(
                Wire::Converse,
                "bedrock",
                model,
                Shape::SignedToolLoop,
                thinking,
                stream,
                true,
            ));
        }
    }
}

/// The table.
fn rows() -> Vec<Row> {
    use Shape::*;
    let mut rows = Vec::new();
    // Converse: the signed loop for every model id, every thinking setting, streamed and not;
    // images for every model id.
    for model in sdk_bedrock::MODELS {
        converse_loops(&mut rows, model);
        rows.push(row(
            Wire::Converse,
            "bedrock",
            model,
            Images,
            ThinkingRequest::NoPreference,
            false,
            true,
        ));
    }
    // A model that binds reasoning to its prefix (docs/spec.md §5a): its unstamped loop goes with
    // `block_binding` and its beta in `additionalModelRequestFields` and
    // `additionalModelResponseFieldPaths`, which botocore must take too.
    converse_loops(&mut rows, BOUND_CONVERSE_MODEL);
    // Gemini: every conversation, model, host and thinking setting (those hermes refuses
    // before a body aside, see `encode`); images for the models that take them.
    let models = [
        sdk_gemini::PRO3,
        sdk_gemini::FLASH3,
        sdk_gemini::PRO25,
        sdk_gemini::FLASH25,
        sdk_gemini::FLASH20,
    ];
    for shape in [
        SignedToolLoop,
        UnsignedToolLoop,
        ParallelCalls,
        TextSignatures,
    ] {
        for model in models {
            for provider in ["gemini", "vertex-gemini"] {
                for thinking in ALL_THINKING {
                    rows.push(row(
                        Wire::Gemini,
                        provider,
                        model,
                        shape,
                        thinking,
                        false,
                        true,
                    ));
                }
            }
        }
    }
    for model in &models[..4] {
        for provider in ["gemini", "vertex-gemini"] {
            rows.push(row(
                Wire::Gemini,
                provider,
                model,
                Images,
                ThinkingRequest::NoPreference,
                false,
                true,
            ));
        }
    }
    // Responses: the cases the recording test sends, every thinking setting on gpt-5, images.
    for case in sdk_responses::CASES {
        let shape = if case.builtin {
            BuiltinTools
        } else if case.imported {
            ImportedToolLoop
        } else {
            SignedToolLoop
        };
        rows.push(row(
            Wire::Responses,
            WIRE_ID,
            case.model,
            shape,
            case.thinking,
            case.stream,
            case.tools,
        ));
    }
    for thinking in ALL_THINKING {
        for stream in [false, true] {
            let a_case = |c: &sdk_responses::Case| {
                c.model == sdk_responses::GPT5
                    && !c.imported
                    && !c.builtin
                    && c.tools
                    && c.thinking == thinking
                    && c.stream == stream
            };
            if sdk_responses::CASES.iter().any(a_case) {
                continue;
            }
            rows.push(row(
                Wire::Responses,
                WIRE_ID,
                sdk_responses::GPT5,
                SignedToolLoop,
                thinking,
                stream,
                true,
            ));
        }
    }
    rows.push(row(
        Wire::Responses,
        WIRE_ID,
        sdk_responses::IMAGE_MODEL,
        Images,
        ThinkingRequest::NoPreference,
        false,
        true,
    ));
    // Every sampling parameter each wire can send.
    for stream in [false, true] {
        rows.push(row(
            Wire::Converse,
            "bedrock",
            sdk_bedrock::MODELS[0],
            Sampling,
            ThinkingRequest::NoPreference,
            stream,
            true,
        ));
        rows.push(row(
            Wire::Responses,
            WIRE_ID,
            "gpt-5.1",
            Sampling,
            ThinkingRequest::NoPreference,
            stream,
            true,
        ));
    }
    for provider in ["gemini", "vertex-gemini"] {
        rows.push(row(
            Wire::Gemini,
            provider,
            sdk_gemini::FLASH25,
            Sampling,
            ThinkingRequest::NoPreference,
            false,
            true,
        ));
    }
    rows
}

impl Wire {
    const ALL: [Wire; 3] = [Wire::Converse, Wire::Gemini, Wire::Responses];

    /// The SDK's Python (see [`hermes_test_support::sdk::sdk_python`]).
    fn python(self) -> Option<&'static Path> {
        let (sdk, probe) = match self {
            Wire::Converse => ("boto3", sdk_bedrock::PROBE_SCRIPT),
            Wire::Gemini => ("google-genai", sdk_gemini::PROBE_SCRIPT),
            Wire::Responses => ("openai", sdk_responses::PROBE_SCRIPT),
        };
        hermes_test_support::sdk::sdk_python(sdk, probe)
    }

    /// The key the controls inject: no type of the SDK declares it.
    fn probe(self) -> &'static str {
        match self {
            Wire::Converse => "hermesProbeUnknownKey",
            Wire::Gemini => sdk_gemini::PROBE,
            Wire::Responses => sdk_responses::PROBE,
        }
    }

    /// hermes' body for `row`, through the encode path of the wire's SDK test (the previewed
    /// body for Gemini and Responses, the sent one for Converse), or `None` when hermes refuses
    /// the request before a body (docs/spec.md §3c: an effort on Gemini 2.0, no thinking on a Pro).
    fn encode(self, row: &Row) -> Option<Value> {
        let s = row.scenario;
        let text = match (self, s.shape) {
            (_, Shape::Sampling) => sampling::sdk_body(row.provider, row.model, s.stream),
            (Wire::Converse, Shape::SignedToolLoop) => {
                let wire =
                    sdk_bedrock::converse_wire(CONVERSE_BASE, &sdk_bedrock::credentials(None));
                let out = sdk_bedrock::encode_on(
                    &wire,
                    row.provider,
                    CONVERSE_BASE,
                    row.model,
                    s.thinking,
                    s.stream,
                );
                String::from_utf8(out.body).unwrap()
            }
            (Wire::Converse, Shape::Images) => {
                let out = sdk_bedrock::converse_images(CONVERSE_BASE, row.model);
                String::from_utf8(out.body).unwrap()
            }
            (Wire::Gemini, Shape::Images) => {
                sdk_gemini::image_body(row.model, row.provider == "vertex-gemini")
            }
            (Wire::Gemini, shape) => {
                let turns = match shape {
                    Shape::SignedToolLoop => sdk_gemini::sequential(true),
                    Shape::UnsignedToolLoop => sdk_gemini::sequential(false),
                    Shape::ParallelCalls => sdk_gemini::parallel(),
                    Shape::TextSignatures => sdk_gemini::text_signatures(),
                    other => panic!("{row}: no {other:?} conversation on this wire"),
                };
                let vertex = row.provider == "vertex-gemini";
                let scenario = sdk_gemini::Scenario {
                    name: "schema",
                    model: row.model,
                    vertex,
                    thinking: s.thinking,
                    sdk_thinking: Value::Null,
                    turns,
                };
                let base = if vertex {
                    gemini::vertex_base_url(sdk_gemini::REGION)
                } else {
                    "https://generativelanguage.googleapis.com".to_owned()
                };
                let target = sdk_gemini::target(&scenario, &base);
                match sdk_gemini::hermes_body(&scenario, &target, s.stream) {
                    Ok(body) => String::from_utf8(body).unwrap(),
                    Err(gemini::EncodeError::Thinking(_)) => return None,
                    Err(e) => panic!("{row}: {e}"),
                }
            }
            (Wire::Responses, Shape::Images) => sdk_responses::image_body(row.model),
            (
                Wire::Responses,
                Shape::SignedToolLoop | Shape::ImportedToolLoop | Shape::BuiltinTools,
            ) => {
                let case = sdk_responses::Case {
                    label: "schema",
                    minted_by: sdk_responses::GPT5,
                    model: row.model,
                    thinking: s.thinking,
                    tools: s.tools,
                    stream: s.stream,
                    imported: s.shape == Shape::ImportedToolLoop,
                    builtin: s.shape == Shape::BuiltinTools,
                };
                sdk_responses::hermes_body(&case)
            }
            (wire, shape) => panic!("{row}: no {shape:?} conversation on {wire:?}"),
        };
        Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{row}: {e}: {text}")))
    }

    /// What the wire's bodies must have among them, so the sweep reaches it: fragments of
    /// compact JSON (a signed block, a result, an image, thinking settings), space-separated.
    fn corpus(self) -> &'static str {
        match self {
            Wire::Converse => {
                r#""reasoningText":{ "redactedContent" "toolUse" "toolResult" "cachePoint" "inferenceConfig" "budget_tokens" "image":{ "converse_stream" "stopSequences" "toolChoice" "outputConfig""#
            }
            Wire::Gemini => {
                r#""thoughtSignature" "thinkingLevel":"HIGH" "thinkingBudget":1024 "thinkingBudget":0 "functionResponse" "parametersJsonSchema" "systemInstruction" "maxOutputTokens":65536 "inlineData" "fileData" "toolConfig" "responseJsonSchema" "stopSequences""#
            }
            Wire::Responses => {
                r#""type":"reasoning" "encrypted_content" "type":"summary_text" "function_call_output" "effort":"high" "stream":true "input_image" "max_output_tokens" "tool_choice" "safety_identifier""#
            }
        }
    }

    /// A member whose keys are data (a tool call's arguments or input, a JSON Schema, a
    /// document): not entered by the controls.
    fn free_form(self, _: &Map<String, Value>, key: &str) -> bool {
        match self {
            Wire::Converse => ["input", "json", "additionalModelRequestFields"].contains(&key),
            Wire::Gemini => sdk_gemini::FREE_FORM.contains(&key),
            Wire::Responses => key == "parameters" || key == "schema",
        }
    }

    /// `body` of `row` as the validator script reads it.
    fn request(self, row: &Row, body: &Value) -> String {
        match self {
            Wire::Converse => {
                let operation = if row.scenario.stream {
                    "converse_stream"
                } else {
                    "converse"
                };
                serde_json::json!({"operation": operation, "modelId": row.model, "params": body})
                    .to_string()
            }
            Wire::Gemini | Wire::Responses => body.to_string(),
        }
    }

    /// The script's verdict on each of `requests`.
    fn validate(self, py: &Path, requests: &[String]) -> Vec<Option<String>> {
        let (code, stdout, stderr) = match self {
            Wire::Converse => sdk_bedrock::run(
                py,
                sdk_bedrock::VALIDATE,
                &format!("[{}]", requests.join(",")),
            ),
            Wire::Gemini => support::run(
                sdk_gemini::python(py),
                sdk_gemini::VALIDATE,
                &requests.join("\n"),
            ),
            Wire::Responses => {
                sdk_responses::run(py, sdk_responses::VALIDATE, &requests.join("\n"))
            }
        };
        validator::verdicts(code, &stdout, &stderr, requests.len())
    }

    /// Whether `reason` is the refusal of the probe injected at `path`.
    fn names(self, path: &[Value], reason: &str) -> bool {
        let probe = self.probe();
        match self {
            Wire::Converse => {
                let mut at = String::new();
                for step in path {
                    match step {
                        Value::String(key) if at.is_empty() => at.push_str(key),
                        Value::String(key) => at.push_str(&format!(".{key}")),
                        index => at.push_str(&format!("[{index}]")),
                    }
                }
                if at.is_empty() {
                    at.push_str("input");
                }
                reason.contains(&format!(r#"Unknown parameter in {at}: "{probe}""#))
            }
            Wire::Gemini => reason.starts_with(&format!("{}: ", validator::dotted(path, probe))),
            // An item of a union (an output message replayed) is reported against the member
            // its keys fit furthest, which may name another of its keys: the object is named.
            Wire::Responses => {
                let object = validator::dotted(path, "");
                reason.starts_with(&format!("{object}{probe}: unknown key for "))
                    || (!path.is_empty()
                        && reason.starts_with(&object)
                        && reason.contains(": unknown key for "))
            }
        }
    }
}

/// The bound model's rows carry what they are in the table for: `block_binding` with
/// `drop_block`, its beta and the response path, on every thinking setting that replays.
#[test]
fn the_bound_converse_rows_carry_block_binding() {
    let with_binding = rows()
        .iter()
        .filter(|r| r.model == BOUND_CONVERSE_MODEL)
        .filter_map(|r| Wire::Converse.encode(r))
        .filter(|body| {
            body.pointer(
                "/additionalModelRequestFields/thinking/block_binding/prefix_mismatch_behavior",
            ) == Some(&Value::from("drop_block"))
                && body["additionalModelResponseFieldPaths"]
                    == serde_json::json!(["/input_transformations"])
                && body["additionalModelRequestFields"]["anthropic_beta"]
                    .as_array()
                    .is_some_and(|b| {
                        b.iter()
                            .any(|b| b == "thinking-binding-controls-2026-08-01")
                    })
        })
        .count();
    assert!(
        with_binding >= 2,
        "streamed and not, at least: {with_binding}"
    );
}

#[test]
fn every_row_validates_against_its_sdk_and_refuses_an_unknown_key_at_each_object() {
    let rows = rows();
    // Every failing check of every wire, each naming its row.
    let mut failures = Vec::new();
    let mut checked = 0;
    for wire in Wire::ALL {
        let Some(py) = wire.python() else { continue };
        let started = std::time::Instant::now();
        let mut refused = 0;
        let mut bodies = Vec::new();
        for row in rows.iter().filter(|r| r.wire == wire) {
            match wire.encode(row) {
                Some(body) => bodies.push((row, body)),
                None => refused += 1,
            }
        }
        let valid = bodies.len();
        let checks = validator::sweep(bodies, &|o, k| wire.free_form(o, k), wire.probe(), 4);
        let requests: Vec<String> = checks
            .iter()
            .map(|c| wire.request(c.row, &c.body))
            .collect();
        for needle in wire.corpus().split(' ') {
            assert!(
                checks
                    .iter()
                    .zip(&requests)
                    .any(|(c, r)| c.injected_at.is_none() && r.contains(needle)),
                "{wire:?}: no row's body has {needle}"
            );
        }
        if wire == Wire::Gemini {
            assert!(valid >= 200, "{valid} Gemini bodies, {refused} refused");
            assert!(
                checks.iter().any(|c| c.injected_at.is_none()
                    && c.body["generationConfig"].get("thinkingConfig").is_none()),
                "no Gemini body without a thinking request"
            );
        } else {
            assert_eq!(refused, 0, "{wire:?} refuses no row before a body");
        }
        let verdicts = wire.validate(py, &requests);
        checked += checks.len();
        failures.extend(validator::failures(
            &checks,
            verdicts,
            wire.probe(),
            &|path, reason| wire.names(path, reason),
        ));
        eprintln!(
            "sdk_schema: {wire:?}: {valid} bodies, {} controls ({refused} rows refused before a \
             body), {:.1?}",
            checks.len() - valid,
            started.elapsed()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
