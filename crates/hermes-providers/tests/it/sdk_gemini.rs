//! Independent evidence, from the official Python `google-genai` client, that hermes' Gemini
//! `generateContent` wire (`hermes_wire_gemini`) sends what the SDK sends for the same
//! conversation, and that every body `hermes preview` prints is one the SDK's own types accept
//! (checked, with an unknown key injected at each object refused, by the schema table
//! `sdk_schema` over this module's conversations; here, the controls that are not unknown keys).
//!
//! google-genai is pinned in `.ci/sdk-requirements.txt` and installed by `.ci/run` into
//! `target/sdk-venv`; these tests find its Python in `HERMES_SDK_PYTHON`. Without a usable one
//! they print a skip note and pass, unless `HERMES_REQUIRE_SDK` is set (CI sets it): then they
//! fail. The scripts in `tests/sdk/` say how they work:
//! - `genai_record.py` builds the conversation from the SDK's types (`types.Content`, `Part`,
//!   `FunctionCall` with the signature as `bytes`, …) and calls `models.generate_content` /
//!   `generate_content_stream` against the loopback recorder this test runs;
//! - `genai_validate.py` validates bodies part by part with the SDK's pydantic models (extra
//!   keys forbidden, strict scalars, wire names only) and an exact top-level key set.
//!
//! The conversations are written once here ([`Turn`]) and rendered twice: as the stored hermes
//! history the wire encodes (signatures in `extra_content` and the native record, thought text
//! in `reasoning_content`), and as the parts an SDK user replays (what Gemini returned, thought
//! summaries left out).
//!
//! What the SDK sends differently, and why it is not a disagreement (google-genai 3.6.1):
//! - Key spelling. The SDK writes values it holds as pydantic objects with
//!   `model_dump(exclude_none=True)` and no `by_alias` (`google/genai/_common.py:284`,
//!   `convert_to_dict`), so `generationConfig.thinkingConfig` goes out as `include_thoughts`,
//!   `thinking_level`, `thinking_budget` and a declaration's `parameters_json_schema` in
//!   snake_case, while everything the converters of `models.py` write is camelCase. The API
//!   parses JSON with the proto3 mapping, which accepts a field's proto name and its
//!   lowerCamelCase JSON name alike; hermes writes the JSON names throughout (the REST
//!   reference's spelling). The comparison maps snake_case keys to lowerCamelCase, never inside
//!   free-form values (`args`, `response`, `parametersJsonSchema`), and asserts that doing so
//!   changes nothing in hermes' body.
//! - Signature alphabet. The SDK holds `thought_signature` as bytes and re-encodes them with
//!   `base64.urlsafe_b64encode` (`_common.py:749`, `encode_unserializable_types`); hermes sends
//!   the stored text byte for byte as Gemini sent it (standard alphabet). proto3 JSON accepts
//!   either alphabet for `bytes`; signatures are compared by their decoded bytes.
//! - `"generationConfig": {}`. Given a config with no generation field set (a system
//!   instruction or tools only), the SDK still writes the empty object
//!   (`models.py:1769`, `_GenerateContentParameters_to_mldev`); an empty message is the field's
//!   default, so hermes leaving it out is the same request.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use hermes_core::{
    Effort, Message, Origin, RawJson, RequestParts, ResolveOptions, RouteTarget, ThinkingRequest,
    Verdicts, Wire as _,
};
use hermes_providers::{Auth, ChatTransport, builtin_table};
use hermes_test_support::validator;
use hermes_wire_gemini::{self as gemini, Flavor, GeminiWire, Target};
use serde_json::{Map, Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::images;
use crate::support::{self, header};

const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/genai_record.py");
pub(crate) const VALIDATE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/genai_validate.py");

pub(crate) const PRO3: &str = "gemini-3-pro-preview";
pub(crate) const FLASH3: &str = "gemini-3-flash-preview";
pub(crate) const PRO25: &str = "gemini-2.5-pro";
pub(crate) const FLASH25: &str = "gemini-2.5-flash";
pub(crate) const FLASH20: &str = "gemini-2.0-flash";

const KEY: &str = "AIza-hermes-sdk-test-key";
const TOKEN: &str = "ya29.hermes-sdk-test-token";
const PROJECT: &str = "hermes-test-project";
pub(crate) const REGION: &str = "us-central1";

/// The key the negative controls inject: no SDK type declares it.
pub(crate) const PROBE: &str = "hermesProbeUnknownKey";

// ---------------------------------------------------------------------------------------------
// The SDK's Python

/// Prints what the probe found.
pub(crate) const PROBE_SCRIPT: &str = "from google import genai\nimport pydantic\n\
print(f'google-genai {genai.__version__}, pydantic {pydantic.VERSION}')";

/// The SDK's Python, or `None` when there is none and none is required (see
/// [`hermes_test_support::sdk::sdk_python`]).
fn sdk_python() -> Option<&'static Path> {
    hermes_test_support::sdk::sdk_python("google-genai", PROBE_SCRIPT)
}

/// A Python command with none of the machine's Google settings (`GOOGLE_*`: API key, Vertex
/// switch, project, application credentials; `GEMINI_*`, `CLOUDSDK_*`) and no proxy for the
/// loopback recorder.
pub(crate) fn python(py: &Path) -> Command {
    support::python(py, &["GOOGLE_", "GEMINI_", "CLOUDSDK_"])
}

/// Runs `script` with `input` on standard input: its exit code, standard output and error.
fn run(py: &Path, script: &str, input: &str) -> (Option<i32>, String, String) {
    support::run(python(py), script, input)
}

// ---------------------------------------------------------------------------------------------
// The conversations

/// A function call of a model turn: `sig` its thought signature as Gemini sent it (base64).
pub(crate) struct Call {
    id: &'static str,
    name: &'static str,
    args: Value,
    sig: Option<&'static str>,
}

/// One step of a conversation.
pub(crate) enum Turn {
    System(&'static str),
    User(&'static str),
    /// A model reply: its thought summary (stored, never sent), text, calls, and the signature
    /// Gemini put on its text (the last text part, or a trailing empty one after calls).
    Model {
        thought: Option<&'static str>,
        text: Option<&'static str>,
        calls: Vec<Call>,
        text_sig: Option<&'static str>,
    },
    /// A tool result, answering the call `id`.
    Result {
        id: &'static str,
        name: &'static str,
        output: &'static str,
    },
}

fn call(id: &'static str, args: Value, sig: Option<&'static str>) -> Call {
    Call {
        id,
        name: "now",
        args,
        sig,
    }
}

/// Sequential calls in a loop in flight, each with its own signature (`/` and `+` in them: the
/// SDK sends the other base64 alphabet), a key with `_` in the arguments (data, not a field).
pub(crate) fn sequential(signed: bool) -> Vec<Turn> {
    let sig = |s| signed.then_some(s);
    vec![
        Turn::System("Be brief."),
        Turn::User("Time in Zürich, then Paris?"),
        Turn::Model {
            thought: Some("THOUGHT-ONE: first Zürich."),
            text: None,
            calls: vec![call(
                "c1",
                json!({"city": "Zürich", "time_zone": "CET"}),
                sig("U0lHLTE/"),
            )],
            text_sig: None,
        },
        Turn::Result {
            id: "c1",
            name: "now",
            output: "12:00",
        },
        Turn::Model {
            thought: Some("THOUGHT-TWO: then Paris."),
            text: None,
            calls: vec![call("c2", json!({"city": "Paris"}), sig("c2ln+w=="))],
            text_sig: None,
        },
        Turn::Result {
            id: "c2",
            name: "now",
            output: "12:00",
        },
    ]
}

/// Parallel calls, only the first signed (as Gemini signs them), results in another order.
pub(crate) fn parallel() -> Vec<Turn> {
    vec![
        Turn::User("Both cities?"),
        Turn::Model {
            thought: Some("THOUGHT-BOTH: both at once."),
            text: None,
            calls: vec![
                call("a", json!({"city": "Zürich"}), Some("UEFSLTE=")),
                call("b", json!({"city": "Paris"}), None),
            ],
            text_sig: None,
        },
        Turn::Result {
            id: "b",
            name: "now",
            output: "13:00",
        },
        Turn::Result {
            id: "a",
            name: "now",
            output: "12:00",
        },
    ]
}

/// A signed text turn, then a turn with text, a signed call and a text-turn signature after it.
pub(crate) fn text_signatures() -> Vec<Turn> {
    vec![
        Turn::System("Be brief."),
        Turn::User("Hi"),
        Turn::Model {
            thought: Some("THOUGHT-GREET: greet back."),
            text: Some("Hello."),
            calls: vec![],
            text_sig: Some("VEVY/1Q="),
        },
        Turn::User("Time?"),
        Turn::Model {
            thought: Some("THOUGHT-CLOCK: check the clock."),
            text: Some("Checking."),
            calls: vec![call("c1", json!({}), Some("Q0FMTA=="))],
            text_sig: Some("RU5E"),
        },
        Turn::Result {
            id: "c1",
            name: "now",
            output: "12:00",
        },
    ]
}

/// The thought summaries of `turns`: text that must never be sent.
fn thoughts(turns: &[Turn]) -> Vec<&'static str> {
    turns
        .iter()
        .filter_map(|t| match t {
            Turn::Model { thought, .. } => *thought,
            _ => None,
        })
        .collect()
}

/// The tools, as the chat-completions definitions hermes stores: one with a description and a
/// property spelled with `_`, one with neither description nor properties.
const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time in a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"time_zone":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}]"#;

/// The same tools as SDK `FunctionDeclaration` arguments.
fn sdk_tools() -> Value {
    let tools: Value = serde_json::from_str(TOOLS).unwrap();
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            let mut d = json!({"name": f["name"], "parameters_json_schema": f["parameters"]});
            if let Some(desc) = f.get("description") {
                d["description"] = desc.clone();
            }
            d
        })
        .collect()
}

/// `turns` as the history hermes stores, minted by `origin`.
fn hermes_history(turns: &[Turn], origin: &Origin) -> Vec<Message> {
    let origin = json!({"provider": origin.provider, "host": origin.host, "model": origin.model});
    let messages: Vec<Value> = turns
        .iter()
        .map(|turn| match turn {
            Turn::System(text) => json!({"role": "system", "content": text}),
            Turn::User(text) => json!({"role": "user", "content": text}),
            Turn::Model {
                thought,
                text,
                calls,
                text_sig,
            } => {
                let mut m = json!({"role": "assistant", "content": text, "origin": origin});
                if !calls.is_empty() {
                    m["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            let mut v = json!({"id": c.id, "type": "function", "function": {
                                "name": c.name, "arguments": c.args.to_string()}});
                            if let Some(sig) = c.sig {
                                v["extra_content"] = json!({"google": {"thought_signature": sig}});
                            }
                            v
                        })
                        .collect();
                }
                if let Some(thought) = thought {
                    m["reasoning_content"] = json!(thought);
                }
                if let Some(sig) = text_sig {
                    m["reasoning_details"] = json!([{"type": "hermes.native_assistant",
                        "extra_content": {"google": {"thought_signature": sig}}}]);
                }
                m
            }
            Turn::Result { id, output, .. } => {
                json!({"role": "tool", "tool_call_id": id, "content": output})
            }
        })
        .collect();
    hermes_core::parse_history(&Value::Array(messages).to_string())
        .unwrap()
        .messages
}

/// `turns` as an SDK user replays them: the system texts and the contents, each model turn's
/// parts as Gemini returned them (its thought summary left out), the results of one model turn
/// one user content of `functionResponse` parts, each output as `{"output": …}` (the key
/// `types.FunctionResponse.response` documents for a function's output).
fn sdk_conversation(turns: &[Turn]) -> (Vec<&'static str>, Vec<Value>) {
    let mut system = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    for turn in turns {
        match turn {
            Turn::System(text) => system.push(*text),
            Turn::User(text) => contents.push(json!({"role": "user", "parts": [{"text": text}]})),
            Turn::Model {
                text,
                calls,
                text_sig,
                ..
            } => {
                let mut parts: Vec<Value> = text.iter().map(|t| json!({"text": t})).collect();
                for c in calls {
                    let mut p =
                        json!({"function_call": {"id": c.id, "name": c.name, "args": c.args}});
                    if let Some(sig) = c.sig {
                        p["thought_signature"] = json!(sig);
                    }
                    parts.push(p);
                }
                if let Some(sig) = text_sig {
                    match parts.last_mut() {
                        Some(last) if last.get("text").is_some() => {
                            last["thought_signature"] = json!(sig);
                        }
                        _ => parts.push(json!({"text": "", "thought_signature": sig})),
                    }
                }
                contents.push(json!({"role": "model", "parts": parts}));
            }
            Turn::Result { id, name, output } => {
                let part = json!({"function_response": {"id": id, "name": name,
                    "response": {"output": output}}});
                match contents.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["parts"][0].get("function_response").is_some() =>
                    {
                        last["parts"].as_array_mut().unwrap().push(part);
                    }
                    _ => contents.push(json!({"role": "user", "parts": [part]})),
                }
            }
        }
    }
    (system, contents)
}

/// One conversation sent to one model.
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) model: &'static str,
    pub(crate) vertex: bool,
    pub(crate) thinking: ThinkingRequest,
    /// The SDK's `ThinkingConfig` arguments for the same request (docs/spec.md §3c), or null.
    pub(crate) sdk_thinking: Value,
    pub(crate) turns: Vec<Turn>,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "sequential calls, each signed",
            model: PRO3,
            vertex: false,
            thinking: ThinkingRequest::NoPreference,
            sdk_thinking: json!({"include_thoughts": true}),
            turns: sequential(true),
        },
        Scenario {
            name: "parallel calls, the first signed",
            model: PRO3,
            vertex: false,
            thinking: ThinkingRequest::Effort(Effort::High),
            sdk_thinking: json!({"include_thoughts": true, "thinking_level": "HIGH"}),
            turns: parallel(),
        },
        Scenario {
            name: "text-turn signatures",
            model: FLASH3,
            vertex: false,
            thinking: ThinkingRequest::Effort(Effort::Minimal),
            sdk_thinking: json!({"include_thoughts": true, "thinking_level": "MINIMAL"}),
            turns: text_signatures(),
        },
        Scenario {
            name: "Gemini 2.5 budget",
            model: FLASH25,
            vertex: false,
            thinking: ThinkingRequest::Effort(Effort::Low),
            sdk_thinking: json!({"include_thoughts": true, "thinking_budget": 1024}),
            turns: sequential(true),
        },
        Scenario {
            name: "no thinking request",
            model: FLASH20,
            vertex: false,
            thinking: ThinkingRequest::NoPreference,
            sdk_thinking: Value::Null,
            turns: sequential(false),
        },
        Scenario {
            name: "Vertex AI, sequential calls",
            model: PRO3,
            vertex: true,
            thinking: ThinkingRequest::Effort(Effort::Low),
            sdk_thinking: json!({"include_thoughts": true, "thinking_level": "LOW"}),
            turns: sequential(true),
        },
        Scenario {
            name: "Vertex AI, text-turn signatures, thinking off",
            model: FLASH25,
            vertex: true,
            thinking: ThinkingRequest::Off,
            sdk_thinking: json!({"thinking_budget": 0}),
            turns: text_signatures(),
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// hermes' side

/// Where `scenario` goes when requests go to `base` (a recorder's URI or the real host).
pub(crate) fn target(scenario: &Scenario, base: &str) -> Target {
    if scenario.vertex {
        Target {
            flavor: Flavor::Vertex {
                project: PROJECT.into(),
                region: REGION.into(),
            },
            base_url: base.to_owned(),
            max_tokens: None,
        }
    } else {
        Target {
            flavor: Flavor::AiStudio,
            base_url: format!("{base}/v1beta"),
            max_tokens: None,
        }
    }
}

fn route(scenario: &Scenario, target: &Target) -> RouteTarget {
    let provider = if scenario.vertex {
        "vertex-gemini"
    } else {
        "gemini"
    };
    RouteTarget::new(provider, Some(&target.base_url), scenario.model)
}

/// The origin of the scenario's stored turns: this model on this host (so signatures go back).
fn origin(scenario: &Scenario, target: &Target) -> Origin {
    let route = route(scenario, target);
    Origin {
        provider: route.provider.clone(),
        host: route.host_key(),
        model: scenario.model.into(),
    }
}

/// hermes' encoded body for `scenario` at `target` as sent (`hermes preview` prints these bytes
/// re-indented), through the path `hermes preview` takes: the history paired, then
/// `gemini::encode`. `Err` is the error preview would print instead.
pub(crate) fn hermes_body(
    scenario: &Scenario,
    target: &Target,
    stream: bool,
) -> Result<Vec<u8>, gemini::EncodeError> {
    let history = hermes_history(&scenario.turns, &origin(scenario, target));
    let (history, _) = hermes_core::pairing::paired(&history);
    let table = builtin_table();
    let decision = table.resolve(&route(scenario, target), ResolveOptions::default());
    let verdicts = Verdicts::default();
    let tools = RawJson::from_text(TOOLS).unwrap();
    let parts = RequestParts::new(&history, &decision, &verdicts)
        .thinking(scenario.thinking)
        .tools(Some(&tools))
        .stream(stream);
    let encoded = gemini::encode(&parts, target)?;
    // The wire sends exactly what `encode` returns.
    let wire = GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: target.clone(),
        auth: None,
    };
    assert_eq!(wire.encode(&parts).unwrap().body, encoded.body);
    Ok(encoded.body)
}

// ---------------------------------------------------------------------------------------------
// The recorder

const REPLY: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}"#;

/// A loopback server that records every request and answers a minimal valid reply: JSON to
/// `:generateContent`, one server-sent event to `:streamGenerateContent`.
async fn recorder() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_regex(r":generateContent$"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(REPLY, "application/json"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path_regex(r":streamGenerateContent$"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(format!("data: {REPLY}\r\n\r\n"), "text/event-stream"),
        )
        .mount(&server)
        .await;
    server
}

/// The path and query of `url`.
fn path_and_query(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    after_scheme.find('/').map_or("/", |i| &after_scheme[i..])
}

fn request_path(request: &Request) -> String {
    match request.url.query() {
        Some(q) => format!("{}?{q}", request.url.path()),
        None => request.url.path().to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The comparison

/// Values whose keys are data, not fields: compared as they are.
pub(crate) const FREE_FORM: [&str; 4] = [
    "args",
    "response",
    "parametersJsonSchema",
    "responseJsonSchema",
];

/// `snake_case` → `lowerCamelCase` (keys already camelCase are unchanged).
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The standard-alphabet, padded base64 of the bytes a signature encodes (either alphabet).
fn signature_bytes(text: &str) -> Option<String> {
    let standard: String = text
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let engine = &base64::engine::general_purpose::STANDARD;
    let padded = format!("{standard}{}", "=".repeat((4 - standard.len() % 4) % 4));
    let bytes = engine.decode(padded).ok()?;
    Some(engine.encode(bytes))
}

/// `body` in one spelling (see the module doc): keys as lowerCamelCase JSON names outside
/// free-form values, thought signatures as the standard base64 of their bytes, an empty
/// top-level `generationConfig` dropped. Each change is noted in `changes`.
fn wire_form(body: &Value, changes: &mut Vec<String>) -> Value {
    fn walk(v: &Value, path: &str, changes: &mut Vec<String>) -> Value {
        match v {
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, value) in map {
                    let name = camel(key);
                    let here = format!("{path}.{name}");
                    if name != *key {
                        changes.push(format!("{path}.{key} → {name}"));
                    }
                    let value = if FREE_FORM.contains(&name.as_str()) {
                        value.clone()
                    } else if name == "thoughtSignature" {
                        let text = value.as_str().unwrap_or_default();
                        let standard = signature_bytes(text)
                            .unwrap_or_else(|| panic!("{here}: {value} is not base64"));
                        if standard != text {
                            changes.push(format!("{here}: {text} → {standard} (same bytes)"));
                        }
                        Value::String(standard)
                    } else {
                        walk(value, &here, changes)
                    };
                    out.insert(name, value);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| walk(item, &format!("{path}.{i}"), changes))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut out = walk(body, "", changes);
    if out.get("generationConfig") == Some(&json!({})) {
        out.as_object_mut().unwrap().remove("generationConfig");
        changes.push(".generationConfig: {} dropped (the default)".into());
    }
    out
}

/// True when `value` has the key `name` anywhere outside free-form values.
fn has_key(value: &Value, name: &str) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == name || (!FREE_FORM.contains(&k.as_str()) && has_key(v, name))),
        Value::Array(items) => items.iter().any(|v| has_key(v, name)),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Tests: the recorded requests

/// One call both clients make.
struct Sent {
    label: String,
    scenario: usize,
    stream: bool,
    target: Target,
    body: Vec<u8>,
}

/// The call as `genai_record.py` takes it.
fn sdk_call(scenario: &Scenario, stream: bool) -> Value {
    let (system, contents) = sdk_conversation(&scenario.turns);
    let mut call = json!({
        "model": scenario.model,
        "stream": stream,
        "system": system,
        "contents": contents,
        "tools": sdk_tools(),
        "thinking": scenario.sdk_thinking,
        "max_output_tokens": gemini::output_ceiling(scenario.model),
    });
    if scenario.vertex {
        call["flavor"] = json!("vertex");
        call["project"] = json!(PROJECT);
        call["location"] = json!(REGION);
        call["token"] = json!(TOKEN);
        call["api_version"] = json!("v1");
    } else {
        call["flavor"] = json!("ai_studio");
        call["api_key"] = json!(KEY);
        call["api_version"] = json!("v1beta");
    }
    call
}

#[tokio::test]
async fn hermes_sends_what_google_genai_sends_for_the_same_conversation() {
    let Some(py) = sdk_python() else { return };
    let server = recorder().await;
    let scenarios = scenarios();
    let mut sent = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        for stream in [false, true] {
            let target = target(scenario, &server.uri());
            let body = hermes_body(scenario, &target, stream).unwrap();
            sent.push(Sent {
                label: format!(
                    "{} ({}, {}streamed)",
                    scenario.name,
                    scenario.model,
                    if stream { "" } else { "not " }
                ),
                scenario: i,
                stream,
                target,
                body,
            });
        }
    }

    // google-genai first.
    let spec = json!({
        "base_url": server.uri(),
        "calls": sent.iter().map(|s| sdk_call(&scenarios[s.scenario], s.stream)).collect::<Vec<_>>(),
    });
    let (code, stdout, stderr) = run(py, RECORD, &spec.to_string());
    assert_eq!(code, Some(0), "genai_record.py failed:\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["calls"], json!(sent.len()), "{stdout}");
    assert!(
        report["replies"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r == "ok"),
        "the SDK read every reply: {stdout}"
    );
    let sdk = server.received_requests().await.unwrap();
    assert_eq!(sdk.len(), sent.len(), "one request per call: {stdout}");

    // Then hermes, the same calls in the same order.
    for s in &sent {
        let scenario = &scenarios[s.scenario];
        let auth = if scenario.vertex {
            Auth::Bearer(TOKEN.into())
        } else {
            Auth::Header("x-goog-api-key", KEY.into())
        };
        let wire = GeminiWire {
            client: ChatTransport::new().unwrap(),
            target: s.target.clone(),
            auth: Some(auth),
        };
        let out = hermes_core::Outgoing::new(s.body.clone(), s.stream, Vec::new(), 0);
        let reply = wire
            .send(&out, origin(scenario, &s.target), &|_| {})
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", s.label));
        assert_eq!(
            reply.message.content.as_ref().unwrap().as_str().unwrap(),
            "ok",
            "{}",
            s.label
        );
    }
    let all = server.received_requests().await.unwrap();
    let hermes = &all[sdk.len()..];
    assert_eq!(hermes.len(), sent.len());

    let mut failures = Vec::new();
    for ((s, g), h) in sent.iter().zip(&sdk).zip(hermes) {
        let scenario = &scenarios[s.scenario];
        let what = &s.label;
        // The URL: the same path and query, the one hermes' `url()` gives; no key in it.
        let url = gemini::url(&s.target, scenario.model, s.stream);
        assert_eq!(
            request_path(g),
            path_and_query(&url),
            "{what}: the SDK's path"
        );
        assert_eq!(request_path(h), request_path(g), "{what}: path");
        for r in [g, h] {
            assert!(
                !r.url.as_str().contains(KEY) && r.url.query_pairs().all(|(k, _)| k != "key"),
                "{what}: the key never goes in the URL: {}",
                r.url
            );
            assert_eq!(
                header(r, "content-type"),
                Some("application/json"),
                "{what}"
            );
        }
        // The credential: AI Studio's key in x-goog-api-key, Vertex's token as a bearer.
        if scenario.vertex {
            let bearer = format!("Bearer {TOKEN}");
            assert_eq!(header(g, "authorization"), Some(bearer.as_str()), "{what}");
            assert_eq!(header(h, "authorization"), Some(bearer.as_str()), "{what}");
            assert_eq!(header(g, "x-goog-api-key"), None, "{what}");
            assert_eq!(header(h, "x-goog-api-key"), None, "{what}");
        } else {
            assert_eq!(header(g, "x-goog-api-key"), Some(KEY), "{what}");
            assert_eq!(header(h, "x-goog-api-key"), Some(KEY), "{what}");
            assert_eq!(header(g, "authorization"), None, "{what}");
            assert_eq!(header(h, "authorization"), None, "{what}");
        }
        // The body: hermes sent the encoded bytes; no thought text, no `thought` part.
        assert_eq!(h.body, s.body, "{what}: the encoded bytes");
        let ours: Value = serde_json::from_slice(&h.body).unwrap();
        let theirs: Value = serde_json::from_slice(&g.body).unwrap();
        let text = String::from_utf8_lossy(&h.body);
        for thought in thoughts(&scenario.turns) {
            assert!(!text.contains(thought), "{what}: thought text sent: {text}");
        }
        assert!(!has_key(&ours, "thought"), "{what}: a thought part: {text}");
        // hermes already writes the one spelling the comparison uses.
        let mut ours_changed = Vec::new();
        assert_eq!(
            wire_form(&ours, &mut ours_changed),
            ours,
            "{what}: hermes' body is not in wire names / standard base64: {ours_changed:?}"
        );
        let mut spelling = Vec::new();
        let theirs = wire_form(&theirs, &mut spelling);
        let diffs = support::differences(&ours, &theirs);
        if diffs.is_empty() {
            eprintln!(
                "sdk_gemini: {what}: hermes and google-genai agree (the SDK's spelling: {})",
                if spelling.is_empty() {
                    "the same".to_owned()
                } else {
                    spelling.join("; ")
                }
            );
        } else {
            failures.push(format!(
                "{what}:\n    {}\n  hermes: {ours}\n  google-genai: {}",
                diffs.join("\n    "),
                String::from_utf8_lossy(&g.body)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bodies differ from google-genai's:\n{}",
        failures.len(),
        sent.len(),
        failures.join("\n")
    );
}

#[test]
fn the_comparison_sees_a_changed_value_a_missing_key_an_extra_key_and_other_bytes() {
    // The control for the proof above: the normalisation does not hide real differences.
    let base = json!({"contents": [{"parts": [
        {"functionCall": {"id": "c1", "args": {"time_zone": "CET"}, "name": "now"},
         "thoughtSignature": "U0lHLTE/"}], "role": "model"}]});
    let diff = |ours: &Value, sdk: &Value| {
        let sdk = wire_form(sdk, &mut Vec::new());
        support::differences(ours, &sdk)
    };
    let mut sdk = base.clone();
    sdk["contents"][0]["parts"][0]["thoughtSignature"] = json!("U0lHLTE_");
    assert_eq!(
        diff(&base, &sdk),
        Vec::<String>::new(),
        "the other alphabet"
    );
    let mut other = base.clone();
    other["contents"][0]["parts"][0]["thoughtSignature"] = json!("U0lHLTI_");
    assert_eq!(diff(&base, &other).len(), 1, "other bytes");
    let mut renamed = base.clone();
    renamed["contents"][0]["parts"][0]["functionCall"]["args"] = json!({"timeZone": "CET"});
    assert_eq!(
        diff(&base, &renamed).len(),
        2,
        "keys inside args are data: never respelled"
    );
    let mut extra = base.clone();
    extra["generationConfig"] = json!({"thinkingConfig": {"include_thoughts": true}});
    assert_eq!(
        diff(&base, &extra),
        [
            r#"generationConfig: the SDK sent {"thinkingConfig":{"includeThoughts":true}}, hermes did not"#
        ]
    );
    assert_eq!(diff(&extra, &base).len(), 1, "a key only hermes sends");
    let mut empty = base.clone();
    empty["generationConfig"] = json!({});
    assert_eq!(
        diff(&base, &empty),
        Vec::<String>::new(),
        "the empty default"
    );
    let mut value = base.clone();
    value["contents"][0]["role"] = json!("user");
    assert_eq!(
        diff(&base, &value),
        [r#"contents.0.role: hermes "model", the SDK "user""#]
    );
}

// ---------------------------------------------------------------------------------------------
// Tests: the SDK's types

/// Runs the validator over `bodies`: one verdict per body, `None` when valid.
fn validate(py: &Path, bodies: &[String]) -> Vec<Option<String>> {
    let (code, stdout, stderr) = run(py, VALIDATE, &bodies.join("\n"));
    validator::verdicts(code, &stdout, &stderr, bodies.len())
}

/// Every thinking setting: the schema table (`sdk_schema`) sends each conversation with each.
pub(crate) const ALL_THINKING: [ThinkingRequest; 8] = [
    ThinkingRequest::NoPreference,
    ThinkingRequest::Off,
    ThinkingRequest::Effort(Effort::Minimal),
    ThinkingRequest::Effort(Effort::Low),
    ThinkingRequest::Effort(Effort::Medium),
    ThinkingRequest::Effort(Effort::High),
    ThinkingRequest::Effort(Effort::XHigh),
    ThinkingRequest::Effort(Effort::Max),
];

// That every previewed body validates, and that an unknown key injected at each of its objects
// is refused, is the schema table's (`sdk_schema`). Here: what is not an unknown key.

#[test]
fn the_validator_takes_keys_in_data_and_refuses_each_wrong_spelling_value_and_shape() {
    let Some(py) = sdk_python() else { return };
    // hermes' previewed body of the text-turn conversation, with tools and a level: every kind
    // of object the wire writes.
    let scenario = Scenario {
        name: "controls",
        model: PRO3,
        vertex: false,
        thinking: ThinkingRequest::Effort(Effort::High),
        sdk_thinking: Value::Null,
        turns: text_signatures(),
    };
    let text = hermes_body(
        &scenario,
        &target(&scenario, "https://generativelanguage.googleapis.com"),
        false,
    )
    .unwrap();
    let body: Value = serde_json::from_slice(&text).unwrap();
    // contents: 0 user "Hi", 1 model "Hello.", 2 user "Time?", 3 model text + call + signature.
    assert!(
        body["contents"][3]["parts"][1]["functionCall"].is_object(),
        "the controls need the call in place: {body}"
    );
    assert!(body["contents"][3]["parts"][1]["thoughtSignature"].is_string());

    let inject = |path: &[&str]| validator::inject(&body, &validator::at(path), PROBE);
    let mut cases: Vec<(String, Value, Option<String>)> = vec![
        ("the unchanged body".into(), body.clone(), None),
        (
            "a key inside functionCall.args (data: must pass)".into(),
            inject(&["contents", "3", "parts", "1", "functionCall", "args"]),
            None,
        ),
        (
            "a key inside a declaration's parametersJsonSchema (data: must pass)".into(),
            inject(&[
                "tools",
                "0",
                "functionDeclarations",
                "0",
                "parametersJsonSchema",
            ]),
            None,
        ),
    ];
    // Wrong spellings, values and shapes, each at a known path.
    let mut edit = |label: &str, path: &str, f: &dyn Fn(&mut Value)| {
        let mut b = body.clone();
        f(&mut b);
        cases.push((label.to_owned(), b, Some(path.to_owned())));
    };
    edit(
        "the Python name of thoughtSignature",
        "contents.3.parts.1.thought_signature",
        &|b| {
            let part = b["contents"][3]["parts"][1].as_object_mut().unwrap();
            let sig = part.remove("thoughtSignature").unwrap();
            part.insert("thought_signature".into(), sig);
        },
    );
    edit(
        "the Python name of includeThoughts",
        "generationConfig.thinkingConfig.include_thoughts",
        &|b| {
            let config = b["generationConfig"]["thinkingConfig"]
                .as_object_mut()
                .unwrap();
            let v = config.remove("includeThoughts").unwrap();
            config.insert("include_thoughts".into(), v);
        },
    );
    edit(
        "a signature that is not base64",
        "contents.3.parts.1.thoughtSignature",
        &|b| b["contents"][3]["parts"][1]["thoughtSignature"] = json!("not base64!"),
    );
    edit(
        "a thinking level no ThinkingLevel has",
        "generationConfig.thinkingConfig",
        &|b| b["generationConfig"]["thinkingConfig"]["thinkingLevel"] = json!("EXTREME"),
    );
    edit(
        "a budget as a string",
        "generationConfig.thinkingConfig.thinkingBudget",
        &|b| b["generationConfig"]["thinkingConfig"]["thinkingBudget"] = json!("1024"),
    );
    edit("a part with two data members", "contents.3.parts.0", &|b| {
        b["contents"][3]["parts"][0]["functionCall"] = json!({"name": "now"})
    });
    edit("the chat role name", "contents.1.role", &|b| {
        b["contents"][1]["role"] = json!("assistant");
    });
    edit(
        "the model in the body (it is the URL path)",
        "model",
        &|b| b["model"] = json!(PRO3),
    );
    let bodies: Vec<String> = cases.iter().map(|(_, b, _)| b.to_string()).collect();
    let verdicts = validate(py, &bodies);
    for ((label, _, expected), verdict) in cases.iter().zip(verdicts) {
        match (expected, verdict) {
            (None, None) => {}
            (None, Some(reason)) => panic!("{label} should pass, the validator says: {reason}"),
            (Some(path), None) => panic!("{label} passed the validator (expected {path})"),
            (Some(path), Some(reason)) => assert!(
                reason.starts_with(&format!("{path}: ")),
                "{label}: the reason should name {path}: {reason}"
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Images

/// hermes' body for `model` (AI Studio or Vertex) over [`images::history`].
pub(crate) fn image_body(model: &str, vertex: bool) -> String {
    let h = images::history(true);
    let target = if vertex {
        Target::vertex("my-project", REGION)
    } else {
        Target::ai_studio()
    };
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("gemini", Some(&target.base_url), model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let parts = RequestParts::new(&h, &decision, &verdicts);
    String::from_utf8(gemini::encode(&parts, &target).unwrap().body).unwrap()
}

#[test]
fn image_bodies_put_images_where_each_model_takes_them_and_the_validator_refuses_other_shapes() {
    let Some(py) = sdk_python() else { return };
    // That each image body validates is the schema table's (`sdk_schema`).
    // Gemini 3 puts the result's image inside the function response, earlier models in a user
    // turn of its own after the bridge model turn.
    let gemini3: Value = serde_json::from_str(&image_body(PRO3, false)).unwrap();
    assert!(
        gemini3["contents"][2]["parts"][0]["functionResponse"]["parts"][0]["inlineData"]
            .is_object()
    );
    let earlier: Value = serde_json::from_str(&image_body(PRO25, false)).unwrap();
    assert_eq!(earlier["contents"][2]["parts"].as_array().unwrap().len(), 1);
    assert_eq!(earlier["contents"][3]["role"], "model");
    assert!(earlier["contents"][4]["parts"][0]["inlineData"].is_object());
    assert!(earlier["contents"][0]["parts"][2]["fileData"]["fileUri"].is_string());
    // Controls: the chat shape inside a function response, and a blob that is not base64.
    let mut chat = gemini3.clone();
    chat["contents"][2]["parts"][0]["functionResponse"]["parts"][0] =
        json!({"image_url": {"url": "https://example.com/a.png"}});
    let mut not_base64 = earlier.clone();
    not_base64["contents"][0]["parts"][1]["inlineData"]["data"] = json!("not base64!");
    let verdicts = validate(py, &[chat.to_string(), not_base64.to_string()]);
    let chat = verdicts[0].as_deref().unwrap();
    assert!(
        chat.starts_with("contents.2.parts.0.functionResponse.parts.0"),
        "{chat}"
    );
    let blob = verdicts[1].as_deref().unwrap();
    assert!(
        blob.starts_with("contents.0.parts.1.inlineData.data"),
        "{blob}"
    );
}
