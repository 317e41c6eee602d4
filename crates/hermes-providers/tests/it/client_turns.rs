//! What a gateway client's turn carries beyond chat completions, on every wire: a tool result
//! the client marked as failed (Anthropic's `tool_result.is_error`) in each wire's own marker
//! (`is_error`, Converse's `status: "error"`, Gemini's `error` response; an `Error: ` prefix on
//! chat completions and Responses, which have none), and a system message after the first turn
//! (Claude Code sends one on every current model) kept in place where the wire has an in-place
//! form (Claude, with its beta; chat completions; Responses) and said in `--explain` where it
//! has none (Gemini, Converse, an Anthropic-compatible relay).

use hermes_core::{Message, RequestParts, Wire};
use serde_json::Value;

use crate::support;

const TOOLS: &str = r#"[{"type":"function","function":{"name":"read","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]"#;

/// A tool loop whose result failed, then a system message after the turn began.
fn history() -> Vec<Message> {
    let mut history = hermes_core::parse_history(
        r#"[{"role":"system","content":"Be brief."},
            {"role":"user","content":"Read a.txt"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}}]},
            {"role":"tool","tool_call_id":"call_1","content":"no such file"},
            {"role":"system","content":"Today is Sunday."},
            {"role":"user","content":"and now?"}]"#,
    )
    .unwrap()
    .messages;
    history[3].tool_error = true;
    history
}

/// What `f` makes of the request parts of the history at (provider, base URL, model).
fn with_parts<T>(at: (&str, &str, &str), f: impl FnOnce(&RequestParts<'_>) -> T) -> T {
    support::with_parts(at, &history(), TOOLS, |parts| f(&parts))
}

/// The body `wire` encodes, and its stamp as `key=value` lines.
fn encode(wire: &dyn Wire, at: (&str, &str, &str)) -> (String, String) {
    with_parts(at, |parts| {
        let out = wire.encode(parts).unwrap();
        let stamp: Vec<String> = out
            .stamp
            .iter()
            .map(|(k, v)| format!("{k}={}", v.get()))
            .collect();
        (String::from_utf8(out.body).unwrap(), stamp.join("\n"))
    })
}

/// The body `wire` encodes (parsed), its stamp as `key=value` lines, and the lines `explain`
/// gives for the same request parts, joined.
fn encode_explained(
    wire: &dyn Wire,
    at: (&str, &str, &str),
    explain: impl FnOnce(&RequestParts<'_>) -> Vec<String>,
) -> (Value, String, String) {
    let (body, stamp) = encode(wire, at);
    let explain = with_parts(at, |p| explain(p).join("\n"));
    (json(&body), stamp, explain)
}

/// [`encode_explained`] with the Anthropic wire's own explanation.
fn claude_explained(
    wire: &hermes_wire_anthropic::AnthropicWire,
    at: (&str, &str, &str),
) -> (Value, String, String) {
    encode_explained(wire, at, |p| {
        hermes_wire_anthropic::body::encode(p, &wire.target, &Default::default())
            .unwrap()
            .explain
    })
}

/// The body `wire` encodes, parsed.
fn body_of(wire: &dyn Wire, at: (&str, &str, &str)) -> Value {
    json(&encode(wire, at).0)
}

/// Checks that the `--explain` lines (joined) say `words`.
fn assert_says(explain: &str, words: &str) {
    assert!(explain.contains(words), "{explain}");
}

/// The string under `key` of each item of the JSON array `items`.
fn strings_at<'v>(items: &'v Value, key: &str) -> Vec<&'v str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_str().unwrap())
        .collect()
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}

#[test]
fn claude_gets_is_error_and_the_system_message_in_place_with_its_beta() {
    let wire = support::anthropic_at("https://api.anthropic.com");
    let at = ("anthropic", "https://api.anthropic.com", "claude-opus-4-8");
    let (body, stamp, explain) = claude_explained(&wire, at);
    assert_eq!(body["system"][0]["text"], "Be brief.");
    let roles = strings_at(&body["messages"], "role");
    assert_eq!(roles, ["user", "assistant", "user", "system", "user"]);
    assert_eq!(
        body["messages"][2]["content"][0],
        serde_json::json!({"type": "tool_result", "tool_use_id": "call_1",
                           "content": "no such file", "is_error": true})
    );
    assert_eq!(
        body["messages"][3]["content"][0]["text"],
        "Today is Sunday."
    );
    assert_says(&explain, "mid-conversation-system-2026-04-07");
    assert!(
        stamp.contains("hermes_anthropic_beta=\"mid-conversation-system-2026-04-07\""),
        "the beta goes in the header: {stamp}"
    );
}

#[test]
fn an_anthropic_compatible_relay_gets_the_system_text_in_system_and_says_so() {
    let base = "https://api.deepseek.com/anthropic";
    let wire = support::anthropic_at(base);
    let at = ("anthropic", base, "deepseek-v4-pro");
    let (body, stamp, explain) = claude_explained(&wire, at);
    let system = strings_at(&body["system"], "text");
    assert_eq!(system, ["Be brief.", "Today is Sunday."]);
    assert!(
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "system")
    );
    assert_says(&explain, "no in-place form, its text joins `system`");
    assert!(!stamp.contains("mid-conversation-system-2026"), "{stamp}");
}

#[test]
fn chat_completions_keep_the_system_message_in_place_and_prefix_the_error() {
    let base = "https://api.deepseek.com";
    let body = body_of(
        &support::chat_at(base),
        ("deepseek", base, "deepseek-v4-pro"),
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[3]["content"], "Error: no such file");
    assert_eq!(messages[4]["role"], "system");
    assert_eq!(messages[4]["content"], "Today is Sunday.");
}

#[test]
fn responses_keep_the_system_message_in_place_and_prefix_the_error() {
    let base = "https://api.openai.com/v1";
    let body = body_of(
        &support::responses_at(base),
        ("openai-responses", base, "gpt-5.2"),
    );
    assert_eq!(body["instructions"], "Be brief.");
    let input = body["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["output"], "Error: no such file");
    assert!(
        input
            .iter()
            .any(|i| i["role"] == "developer" && i["content"] == "Today is Sunday."),
        "{input:?}"
    );
}

#[test]
fn converse_marks_the_error_with_its_status_and_says_where_the_system_text_went() {
    let base = "https://bedrock-runtime.us-east-1.amazonaws.com";
    let wire = support::bedrock_at(base);
    let at = (
        "bedrock",
        base,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    );
    let (body, _, explain) = encode_explained(&wire, at, |p| {
        hermes_wire_bedrock::explain(p, &wire.target).unwrap()
    });
    let result = &body["messages"][2]["content"][0]["toolResult"];
    assert_eq!(result["status"], "error", "{body}");
    assert_eq!(result["content"][0]["text"], "no such file");
    assert_says(&explain, "Converse has no in-place form");
}

#[test]
fn gemini_answers_a_failed_call_under_error_and_says_where_the_system_text_went() {
    let base = "https://generativelanguage.googleapis.com/v1beta";
    let wire = support::gemini_at(base);
    let at = ("gemini", base, "gemini-3-pro-preview");
    let (body, _, explain) = encode_explained(&wire, at, |p| {
        hermes_wire_gemini::explain(p, &wire.target).unwrap()
    });
    let response = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .find_map(|p| p.get("functionResponse"))
        .unwrap();
    assert_eq!(
        response["response"],
        serde_json::json!({"error": "no such file"})
    );
    assert_says(&explain, "Gemini has no in-place form");
}
