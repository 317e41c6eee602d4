//! Independent evidence, from the official Python `anthropic` SDK, that the Anthropic Messages
//! bodies `hermes preview` prints (docs/spec.md §3c, §5) are bodies the SDK would send and accept.
//!
//! The SDK is pinned in `.ci/sdk-requirements.txt` and installed by `.ci/run` into
//! `target/sdk-venv`; this test finds its Python in `HERMES_SDK_PYTHON`. Without a usable one the
//! tests print a skip note and pass, unless `HERMES_REQUIRE_SDK` is set (CI sets it): then they
//! fail. The scripts in `tests/sdk/` say how they work:
//! - `anthropic_validate.py` validates bodies with pydantic against the SDK's request types
//!   (`MessageCreateParamsNonStreaming` / `…Streaming`) with unknown keys forbidden on every
//!   object the SDK types declare, eager list validation and strict scalars;
//! - `anthropic_record.py` converts a history the way an SDK user would (its own code, written
//!   from docs/spec.md) and records what `messages.create` really sends to a loopback server.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use hermes_test_support::home::Home;
use hermes_test_support::validator;
use serde_json::{Map, Value, json};

const VALIDATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/anthropic_validate.py"
);
const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/anthropic_record.py");

/// An adaptive model (`{"type":"adaptive"}` + `output_config.effort`) and a budget model
/// (`budget_tokens`), docs/spec.md §3c.
const ADAPTIVE: &str = "claude-opus-4-6";
const BUDGET: &str = "claude-sonnet-4-5";
const MODELS: [&str; 2] = [ADAPTIVE, BUDGET];

/// The key the negative controls inject: no SDK type declares it.
const PROBE: &str = "hermes_probe_unknown_key";

// ---------------------------------------------------------------------------------------------
// The SDK's Python

/// Prints what the probe found: the SDK, pydantic and the API version the SDK sends.
const PROBE_SCRIPT: &str = "import anthropic, pydantic\n\
from anthropic._constants import ANTHROPIC_API_VERSION\n\
print(f'anthropic {anthropic.__version__}, pydantic {pydantic.VERSION}, API {ANTHROPIC_API_VERSION}')";

/// The SDK's Python, or `None` (the test recorded as skipped) when there is none and none is
/// required (see [`hermes_test_support::sdk::sdk_python`]).
fn sdk_python() -> Option<&'static Path> {
    hermes_test_support::sdk::sdk_python("anthropic", PROBE_SCRIPT)
}

fn python(py: &Path) -> Command {
    let mut cmd = Command::new(py);
    cmd.env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONIOENCODING", "utf-8");
    cmd
}

/// Runs the validator over `bodies` (one run, `--each`) and returns one verdict per body:
/// `None` when valid, else the validator's reason.
fn validate(py: &Path, variant: &str, bodies: &[String]) -> Vec<Option<String>> {
    let mut cmd = python(py);
    cmd.args([VALIDATE, "--each", "--variant", variant]);
    let lines: String = bodies.iter().map(|body| format!("{body}\n")).collect();
    let out = hermes_test_support::home::feed(cmd, lines.as_bytes());
    validator::verdicts(
        out.status.code(),
        &String::from_utf8(out.stdout).unwrap(),
        &String::from_utf8_lossy(&out.stderr),
        bodies.len(),
    )
}

/// What `anthropic_record.py` saw the SDK send.
struct Recorded {
    path: String,
    version_header: Value,
    body: Value,
    body_text: String,
}

/// What the SDK sends for `history`, with `tools` (hermes' own tool definitions, which are not
/// this comparison's subject: the SDK user offers the same ones, so everything else compares,
/// and the validator checks them against the SDK's `ToolParam`).
fn record(
    py: &Path,
    history: &Path,
    variant: &Variant,
    model: &str,
    opts: &[&str],
    tools: &Value,
) -> Recorded {
    let tools_file = history.with_extension("tools.json");
    std::fs::write(&tools_file, tools.to_string()).unwrap();
    let out = python(py)
        .arg(RECORD)
        .args(["--history", history.to_str().unwrap(), "--model", model])
        .args(["--variant", variant.sdk])
        .args(["--tools", tools_file.to_str().unwrap()])
        .args(opts)
        .output()
        .unwrap();
    let v = crate::support::success_json(&out, &format!("anthropic_record.py {opts:?}"));
    Recorded {
        path: v["path"].as_str().unwrap().to_owned(),
        version_header: v["anthropic_version_header"].clone(),
        body: v["body"].clone(),
        body_text: v["body_text"].as_str().unwrap().to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Targets, histories and hermes

/// One way to reach Claude over the Anthropic Messages wire.
struct Variant {
    provider: &'static str,
    base_url: &'static str,
    /// The host hermes records as a turn's origin there (docs/spec.md §2).
    host: &'static str,
    /// The validator's and recorder's `--variant`.
    sdk: &'static str,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        provider: "anthropic",
        base_url: "https://api.anthropic.com",
        host: "api.anthropic.com",
        sdk: "direct",
    },
    Variant {
        provider: "vertex-anthropic",
        base_url: "https://us-east5-aiplatform.googleapis.com",
        host: "us-east5-aiplatform.googleapis.com",
        sdk: "vertex",
    },
    Variant {
        provider: "foundry-anthropic",
        base_url: "https://myres.services.ai.azure.com/anthropic",
        host: "myres.services.ai.azure.com",
        sdk: "foundry",
    },
];

/// The thinking requests every history is previewed with (none = no preference).
const THINKING: [&[&str]; 5] = [
    &["--effort", "low"],
    &["--effort", "high"],
    &["--effort", "max"],
    &["--no-thinking"],
    &[],
];

fn session(variant: &Variant, model: &str, messages: Value) -> Value {
    json!({
        "format": "hermes.session.v1",
        "provider": variant.provider,
        "model": model,
        "base_url": variant.base_url,
        "title": "SDK evidence",
        "model_config": {},
        "messages": messages,
    })
}

/// Where a captured turn came from: the same provider, host and model as the target, so its
/// signed blocks are replayed (docs/spec.md §2) and nothing is left for hermes to decide.
fn origin(variant: &Variant, model: &str) -> Value {
    json!({"provider": variant.provider, "host": variant.host, "model": model})
}

fn plain_chat(variant: &Variant, model: &str) -> Value {
    json!([
        {"role": "user", "content": "Hello! Can you help me name a build step?"},
        {"role": "assistant", "content": "Of course. What does the step do?",
         "origin": origin(variant, model), "hermes_block_order": ["text"]},
        {"role": "user", "content": "It links the release binary."},
    ])
}

fn with_system(_: &Variant, _: &str) -> Value {
    json!([
        {"role": "system", "content": "You are a careful build engineer. Answer in one sentence."},
        {"role": "user", "content": "Why would `cc` fail to find -lsqlite3?"},
    ])
}

/// A finished signed turn before a new question (prior thinking: kept for models that keep it,
/// left out for others, docs/spec.md §5). Used for validity only: the converter does not
/// decide that.
fn prior_thinking(variant: &Variant, model: &str) -> Value {
    json!([
        {"role": "user", "content": "Is 2^61-1 prime?"},
        {"role": "assistant", "content": "Yes: it is a Mersenne prime.",
         "reasoning_content": "2^61-1 is M61, a known Mersenne prime.",
         "reasoning_details": [{"type": "thinking", "thinking": "2^61-1 is M61, a known Mersenne prime.",
                                "signature": "RXJVQkNrWUlCaGdDSWtBODE="}],
         "origin": origin(variant, model), "hermes_block_order": ["thinking", "text"]},
        {"role": "user", "content": "And 2^67-1?"},
    ])
}

/// A 2-step signed tool loop still in flight (the last message is a tool result): step 1 has
/// thinking + redacted_thinking + tool_use, step 2 thinking + tool_use; both from the target.
fn tool_loop(variant: &Variant, model: &str) -> Value {
    json!([
        {"role": "system", "content": "You are a careful build engineer. Use tools before guessing."},
        {"role": "user", "content": "The nightly build failed again. Can you look at the log?"},
        {"role": "assistant", "content": null,
         "reasoning_content": "Read the log first; last time it was the linker. \u{e9}",
         "reasoning_details": [
             {"type": "thinking", "thinking": "Read the log first; last time it was the linker. \u{e9}",
              "signature": "ErUBCkYIBhgCIkD8u0c0f3Vd+Qe0Wm3q2Zb8w7mJmQ9rT5xk0Y2lE4sVb1NqQ=="},
             {"type": "redacted_thinking", "data": "RWRhY3RlZF9ibG9iX3RoYXRfbXVzdF9yZXR1cm5fYnl0ZV9mb3JfYnl0ZQ=="}
         ],
         "tool_calls": [{"id": "toolu_01log", "type": "function",
                         "function": {"name": "read_file",
                                      "arguments": "{\"path\":\"logs/nightly.log\",\"tail\":{\"lines\":200,\"follow\":false},\"filters\":[\"error\",\"ld\"]}"}}],
         "origin": origin(variant, model),
         "hermes_block_order": ["thinking", "redacted_thinking", "tool_use"]},
        {"role": "tool", "tool_call_id": "toolu_01log",
         "content": "error: linking with `cc` failed: exit status: 1\nnote: /usr/bin/ld: cannot find -lsqlite3"},
        {"role": "assistant", "content": "",
         "reasoning_content": "The linker lacks libsqlite3; check which packages are installed.",
         "reasoning_details": [
             {"type": "thinking", "thinking": "The linker lacks libsqlite3; check which packages are installed.",
              "signature": "EpYCCkYIBhgCKkBzZWNvbmRfc3RlcF9zaWduYXR1cmU="}
         ],
         "tool_calls": [{"id": "toolu_02pkg", "type": "function",
                         "function": {"name": "run", "arguments": "{\"cmd\":\"dpkg -l libsqlite3-dev\"}"}}],
         "origin": origin(variant, model),
         "hermes_block_order": ["thinking", "tool_use"]},
        {"role": "tool", "tool_call_id": "toolu_02pkg", "content": "dpkg-query: no packages found matching libsqlite3-dev"},
    ])
}

/// The messages of a history for a variant and model.
type History = fn(&Variant, &str) -> Value;

/// A session file of `history` for `variant` and `model`.
fn session_of(history: History, variant: &Variant, model: &str) -> Value {
    session(variant, model, history(variant, model))
}

const HISTORIES: [(&str, History); 4] = [
    ("plain chat", plain_chat),
    ("system prompt", with_system),
    ("prior thinking", prior_thinking),
    ("signed tool loop", tool_loop),
];

/// A scratch directory (history files) and an empty HERMES_HOME.
struct Scratch {
    dir: tempfile::TempDir,
    home: Home,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
            home: crate::support::home(),
        }
    }

    fn write(&self, name: &str, session: &Value) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(session).unwrap()).unwrap();
        path
    }

    /// `hermes preview` for this target: the exact text it prints on stdout (the body of a
    /// chat with whole replies, as the SDK's `messages.create` sends without `stream`).
    fn preview(&self, history: &Path, variant: &Variant, model: &str, opts: &[&str]) -> String {
        let args = [
            &[
                "preview",
                "--no-stream",
                "--provider",
                variant.provider,
                "--base-url",
                variant.base_url,
                "--model",
                model,
                "--history",
                history.to_str().unwrap(),
            ],
            opts,
        ]
        .concat();
        let out = self.home.run_sync(
            &args,
            // Vertex's project as Anthropic's Vertex client reads it (no [vertex] in config).
            &[
                ("ANTHROPIC_VERTEX_PROJECT_ID", "test-project"),
                ("CLOUD_ML_REGION", "us-east5"),
            ],
        );
        assert!(
            out.status.success(),
            "hermes preview --provider {} --model {model} {opts:?} failed: {}",
            variant.provider,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison

/// Keys hermes sends that the SDK-user conversion does not, each with its reason and the only
/// value allowed there. Paths are dotted; `*` stands for one segment (an index).
const ALLOWED_EXTRAS: &[(&str, &str)] = &[
    (
        "system.*.cache_control",
        "hermes's own prompt-caching breakpoint on the system prompt: a choice docs/spec.md \
         leaves to hermes; the SDK types declare the key (TextBlockParam.cache_control) and the \
         validity tests prove its shape with extras forbidden",
    ),
    (
        "messages.*.content.*.cache_control",
        "hermes's own prompt-caching breakpoint on the last block of the conversation: as above \
         (TextBlockParam / ToolResultBlockParam.cache_control)",
    ),
];

/// The one value an allowed extra may have.
fn allowed_extra_value() -> Value {
    json!({"type": "ephemeral"})
}

fn matches_pattern(path: &[String], pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('.').collect();
    parts.len() == path.len() && parts.iter().zip(path).all(|(p, seg)| *p == "*" || p == seg)
}

/// The string shorthand the SDK documents for `system` and message `content` ("Using a string
/// for `content` is shorthand for an array of one content block of type `text`",
/// `MessageCreateParamsBase.messages`; `system: Union[str, Iterable[TextBlockParam]]`), written
/// out as that one block, so the two spellings compare equal.
fn expand_shorthand(body: &Value) -> Value {
    fn block(v: &Value) -> Value {
        match v {
            Value::String(s) => json!([{"type": "text", "text": s}]),
            other => other.clone(),
        }
    }
    let mut body = body.clone();
    if let Some(system) = body.get("system").map(block) {
        body["system"] = system;
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages {
            if let Some(content) = message.get("content").map(block) {
                message["content"] = content;
            }
        }
    }
    body
}

/// Every way `ours` differs from `sdk` (see [`hermes_test_support::sdk::differences`]), where
/// a key hermes sends that the SDK did not is wrong unless it is an allowed extra with the
/// allowed value.
fn disagreements(ours: &Value, sdk: &Value) -> Vec<String> {
    let extra = |path: &[String], ov: &Value| {
        if !ALLOWED_EXTRAS.iter().any(|(p, _)| matches_pattern(path, p)) {
            Some(format!("hermes sent it, the SDK did not ({ov})"))
        } else if *ov != allowed_extra_value() {
            Some(format!("allowed extra with an unexpected value {ov}"))
        } else {
            None
        }
    };
    hermes_test_support::sdk::differences(&expand_shorthand(ours), &expand_shorthand(sdk), &extra)
}

/// A tool_use `input` (`Dict[str, object]` in the SDK) and a tool's JSON Schema: their keys are
/// data, any key is valid there.
fn free_form(object: &Map<String, Value>, key: &str) -> bool {
    (key == "input" && object.get("type") == Some(&json!("tool_use"))) || key == "input_schema"
}

/// One previewed body: a history sent to a model through a variant with a thinking request.
struct Row {
    provider: &'static str,
    model: &'static str,
    history: &'static str,
    thinking: &'static [&'static str],
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let thinking = if self.thinking.is_empty() {
            "no preference".to_owned()
        } else {
            self.thinking.join(" ")
        };
        write!(
            f,
            "Anthropic / {} / {} / {}, {thinking}",
            self.provider, self.model, self.history
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Tests

/// The table of this wire, as `hermes-providers`' `sdk_schema` runs the native wires': every
/// (variant, history, model, thinking) row's previewed body validates, and an unknown key
/// injected at each of its objects (one control per distinct object in its place) is refused
/// with the reason naming the place. One validator run per variant.
#[test]
fn every_previewed_body_validates_and_refuses_an_unknown_key_at_each_object() {
    let Some(py) = sdk_python() else { return };
    let scratch = Scratch::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for variant in &VARIANTS {
        let mut rows = Vec::new();
        let mut texts = Vec::new();
        for (history_name, history) in HISTORIES {
            for model in MODELS {
                let file = scratch.write(
                    &format!(
                        "{}-{}-{model}.json",
                        variant.sdk,
                        history_name.replace(' ', "_")
                    ),
                    &session_of(history, variant, model),
                );
                for thinking in THINKING {
                    texts.push(scratch.preview(&file, variant, model, thinking));
                    rows.push(Row {
                        provider: variant.provider,
                        model,
                        history: history_name,
                        thinking,
                    });
                }
            }
        }
        let bodies = rows.iter().zip(&texts).map(|(row, text)| {
            let body: Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{row}: {e}: {text}"));
            (row, body)
        });
        let checks = validator::sweep(bodies, &free_form, PROBE, 4);
        let requests: Vec<String> = checks.iter().map(|c| c.body.to_string()).collect();
        checked += checks.len();
        failures.extend(validator::failures(
            &checks,
            validate(py, variant.sdk, &requests),
            PROBE,
            &|path, reason| reason.starts_with(&format!("{}: ", validator::dotted(path, PROBE))),
        ));
        assert_eq!(
            checks.iter().filter(|c| c.injected_at.is_none()).count(),
            HISTORIES.len() * MODELS.len() * THINKING.len()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// An unknown key at each object is the table's (above). Here: what is not an unknown key.

#[test]
fn the_validator_takes_keys_in_tool_input_and_refuses_a_thinking_block_without_its_signature() {
    let Some(py) = sdk_python() else { return };
    let scratch = Scratch::new();
    for variant in &VARIANTS {
        let file = scratch.write(
            &format!("{}-loop.json", variant.sdk),
            &session_of(tool_loop, variant, ADAPTIVE),
        );
        let text = scratch.preview(&file, variant, ADAPTIVE, &["--effort", "high"]);
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            body["messages"][1]["content"][0]["type"], "thinking",
            "the probes need the signed thinking block in place: {text}"
        );

        // (label, body, Some(path the validator must name) | None when the body must pass)
        let mut cases: Vec<(String, Value, Option<String>)> = vec![
            ("the unchanged body".into(), body.clone(), None),
            (
                "a key inside a tool_use input (free-form data, must pass)".into(),
                validator::inject(
                    &body,
                    &validator::at(&["messages", "1", "content", "2", "input"]),
                    PROBE,
                ),
                None,
            ),
        ];
        // A thinking block without its signature: list items are validated, not skipped.
        let mut unsigned = body.clone();
        unsigned["messages"][1]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("signature");
        cases.push((
            "a thinking block without its signature".into(),
            unsigned,
            Some("messages.1.content.0.signature".into()),
        ));
        let bodies: Vec<String> = cases.iter().map(|(_, b, _)| b.to_string()).collect();
        let verdicts = validate(py, variant.sdk, &bodies);
        for ((label, _, expected), verdict) in cases.iter().zip(verdicts) {
            match (expected, verdict) {
                (None, None) => {}
                (None, Some(reason)) => {
                    panic!(
                        "{}: {label} should pass, the validator says: {reason}",
                        variant.sdk
                    )
                }
                (Some(_), None) => panic!("{}: {label} passed the validator", variant.sdk),
                (Some(path), Some(reason)) => assert!(
                    reason.starts_with(&format!("{path}: ")),
                    "{}: {label}: the reason should name {path}: {reason}",
                    variant.sdk
                ),
            }
        }
    }
}

#[test]
fn the_tool_loop_body_agrees_with_what_the_sdk_sends() {
    let Some(py) = sdk_python() else { return };
    let scratch = Scratch::new();
    let cases: [(&str, &[&str]); 3] = [
        (ADAPTIVE, &["--effort", "high"]),
        (BUDGET, &["--effort", "high"]),
        (BUDGET, &["--no-thinking"]),
    ];
    let mut failures = Vec::new();
    for variant in &VARIANTS {
        for (model, opts) in cases {
            let file = scratch.write(
                &format!("{}-agree-{model}.json", variant.sdk),
                &session_of(tool_loop, variant, model),
            );
            let ours: Value =
                serde_json::from_str(&scratch.preview(&file, variant, model, opts)).unwrap();
            let sdk = record(py, &file, variant, model, opts, &ours["tools"]);

            // What the SDK sent is itself valid (the validator is not too strict) ...
            assert_eq!(
                validate(py, variant.sdk, std::slice::from_ref(&sdk.body_text)),
                vec![None],
                "{}: the SDK's own body fails the validator",
                variant.sdk
            );
            // ... went where each client sends it ...
            match variant.sdk {
                "vertex" => {
                    assert_eq!(
                        sdk.path,
                        format!(
                            "/projects/test-project/locations/us-east5/publishers/anthropic/models/{model}:rawPredict"
                        )
                    );
                    assert!(sdk.body.get("model").is_none());
                }
                "foundry" => assert_eq!(sdk.path, "/anthropic/v1/messages"),
                _ => assert_eq!(sdk.path, "/v1/messages"),
            }
            if variant.sdk != "vertex" {
                assert_eq!(
                    sdk.version_header,
                    json!("2026-10-21"),
                    "the pinned SDK's version"
                );
            }
            // ... and agrees with hermes.
            for d in disagreements(&ours, &sdk.body) {
                failures.push(format!(
                    "{} / {model} / {}: {d}",
                    variant.provider,
                    opts.join(" ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "hermes and the SDK disagree on the tool-loop body:\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_streamed_request_is_the_same_body_with_stream_true() {
    let Some(py) = sdk_python() else { return };
    let scratch = Scratch::new();
    let variant = &VARIANTS[0];
    let file = scratch.write(
        "stream-loop.json",
        &session_of(tool_loop, variant, ADAPTIVE),
    );
    let mut ours: Value =
        serde_json::from_str(&scratch.preview(&file, variant, ADAPTIVE, &["--effort", "high"]))
            .unwrap();
    let sdk = record(
        py,
        &file,
        variant,
        ADAPTIVE,
        &["--effort", "high", "--stream"],
        &ours["tools"],
    );
    assert_eq!(sdk.body["stream"], json!(true));
    assert_eq!(
        validate(py, "direct", std::slice::from_ref(&sdk.body_text)),
        vec![None]
    );
    ours["stream"] = json!(true);
    assert_eq!(disagreements(&ours, &sdk.body), Vec::<String>::new());
    assert_eq!(validate(py, "direct", &[ours.to_string()]), vec![None]);
}

#[test]
fn the_comparison_catches_what_it_must() {
    // No SDK needed: the rules of `disagreements` on hand-made bodies.
    let sdk = json!({"model": "m", "system": "S", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                                          {"type": "tool_use", "id": "a", "name": "f", "input": {"x": [1, 2]}}]}]});
    let ours = json!({"messages": [
        {"content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}], "role": "user"},
        {"role": "assistant", "content": [{"type": "thinking", "signature": "s", "thinking": "t"},
                                          {"type": "tool_use", "id": "a", "name": "f", "input": {"x": [1, 2]}}]}],
        "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}], "model": "m"});
    assert_eq!(disagreements(&ours, &sdk), Vec::<String>::new());

    let mut extra = ours.clone();
    extra["temperature"] = json!(1);
    assert_eq!(
        disagreements(&extra, &sdk),
        vec!["temperature: hermes sent it, the SDK did not (1)"]
    );
    let mut reordered = ours.clone();
    reordered["messages"][1]["content"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert!(
        !disagreements(&reordered, &sdk).is_empty(),
        "array order counts"
    );
    let mut changed = ours.clone();
    changed["messages"][1]["content"][1]["input"]["x"][1] = json!(3);
    assert_eq!(
        disagreements(&changed, &sdk),
        vec!["messages.1.content.1.input.x.1: hermes 3, the SDK 2"]
    );
    let mut bad_cache = ours.clone();
    bad_cache["system"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(disagreements(&bad_cache, &sdk).len(), 1);
    let mut missing = ours;
    missing.as_object_mut().unwrap().remove("model");
    assert_eq!(
        disagreements(&missing, &sdk),
        vec![r#"model: the SDK sent "m", hermes did not"#]
    );
}

// ---------------------------------------------------------------------------------------------
// Images

/// A user turn with chat-style images (a PNG `data:` URL, an https URL) and a tool result with
/// text and the PNG, as the canonical history holds them.
fn images(_: &Variant, _: &str) -> Value {
    let png = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}});
    json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            png,
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}}]},
        {"role": "assistant", "content": null,
         "tool_calls": [{"id": "toolu_01shot", "type": "function",
                         "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "toolu_01shot",
         "content": [{"type": "text", "text": "the screen"}, png]},
    ])
}

#[test]
fn image_bodies_are_ones_the_sdk_accepts_and_the_chat_shape_is_not() {
    let Some(py) = sdk_python() else { return };
    let scratch = Scratch::new();
    for variant in &VARIANTS {
        let mut bodies = Vec::new();
        for model in MODELS {
            let file = scratch.write(
                &format!("{}-images-{model}.json", variant.sdk),
                &session_of(images, variant, model),
            );
            for opts in [&["--no-thinking"][..], &[]] {
                bodies.push(scratch.preview(&file, variant, model, opts));
            }
        }
        let body: Value = serde_json::from_str(&bodies[0]).unwrap();
        assert_eq!(body["messages"][0]["content"][1]["type"], "image", "{body}");
        assert_eq!(
            body["messages"][0]["content"][2]["source"],
            json!({"type": "url", "url": "https://example.com/cat.jpg"})
        );
        assert_eq!(
            body["messages"][2]["content"][0]["content"][1]["source"]["type"],
            "base64"
        );
        // Control: the chat shape inside the tool result, as hermes used to send it.
        let mut chat = body.clone();
        chat["messages"][2]["content"][0]["content"][1] =
            json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
        let valid = bodies.len();
        bodies.push(chat.to_string());
        let verdicts = validate(py, variant.sdk, &bodies);
        for (i, v) in verdicts[..valid].iter().enumerate() {
            assert_eq!(v, &None, "{} body {i}: {}", variant.provider, bodies[i]);
        }
        let refused = verdicts[valid].as_deref().unwrap();
        assert!(
            refused.contains("messages.2.content.0.content.1"),
            "{refused}"
        );
    }
}

/// The body shapes docs/spec.md §5a added — a `{"role": "system"}` message inside `messages` (and
/// its blocks as Claude Code writes them, `context_management` and all: the gateway's golden
/// fixture, which reaches Claude as sent), `thinking.block_binding` on a prefix-bound model —
/// are typed only among the SDK's beta request types (anthropic 2.17.0, pinned): they validate
/// there, with every unknown key still refused, and the non-beta types refuse them (so the
/// check can fail).
#[test]
fn the_prefix_binding_shapes_validate_against_the_sdks_beta_types() {
    let Some(py) = sdk_python() else {
        return;
    };
    let variant = &VARIANTS[0];
    let model = "claude-fable-5-1";
    let scratch = Scratch::new();
    // A finished signed turn with no recorded prefix binding (an imported session), then a
    // system message after the first turn: drop_block, and the message in place.
    // (The turn of [`prior_thinking`], a system message before it and one after it.)
    let mut messages = prior_thinking(variant, model);
    let list = messages.as_array_mut().unwrap();
    list.insert(0, json!({"role": "system", "content": "You are terse."}));
    list.insert(3, json!({"role": "system", "content": "Today is Sunday."}));
    let history = scratch.write("bound.json", &session(variant, model, messages));
    let bound = scratch.preview(&history, variant, model, &["--effort", "high"]);
    let parsed: Value = serde_json::from_str(&bound).unwrap();
    assert_eq!(
        parsed["thinking"]["block_binding"],
        json!({"prefix_mismatch_behavior": "drop_block"}),
        "{bound}"
    );
    assert!(
        parsed["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "system"),
        "{bound}"
    );
    let claude_code =
        include_str!("../../../hermes-serve/tests/fixtures/claude-code-2.1.332-opus-4-8.json");
    let bodies = [bound, claude_code.to_owned()];
    let mut cmd = python(py);
    cmd.args([VALIDATE, "--each", "--beta", "--variant", "direct"]);
    let lines: String = bodies.iter().map(|b| format!("{}\n", b.trim())).collect();
    let out = hermes_test_support::home::feed(cmd, lines.as_bytes());
    let beta = validator::verdicts(
        out.status.code(),
        &String::from_utf8(out.stdout).unwrap(),
        &String::from_utf8_lossy(&out.stderr),
        bodies.len(),
    );
    assert_eq!(beta, [None, None], "the beta types take both");
    let plain = validate(py, "direct", &bodies);
    assert!(
        plain.iter().all(Option::is_some),
        "the non-beta types refuse them: {plain:?}"
    );
    // An unknown key inside the new shapes is still refused.
    let mut forged = parsed.clone();
    forged["thinking"]["block_binding"]["extra"] = json!(1);
    let mut cmd = python(py);
    cmd.args([VALIDATE, "--each", "--beta"]);
    let out = hermes_test_support::home::feed(cmd, format!("{forged}\n").as_bytes());
    assert!(
        !out.status.success(),
        "an unknown key under block_binding is refused"
    );
}
