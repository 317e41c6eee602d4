//! End-to-end tests of the `hermes` binary: exact output, exit codes, error texts.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

fn example() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/session.json"
    ))
}

/// The DeepSeek target: `--provider deepseek --model deepseek-v4-pro`.
const DEEPSEEK: [&str; 4] = ["--provider", "deepseek", "--model", "deepseek-v4-pro"];

/// `hermes ARGS` in an empty home of its own, so the machine's own ~/.hermes never leaks in.
fn hermes(args: &[&str]) -> Output {
    hermes_with(args, &[])
}

/// `hermes ARGS` with `env` in an empty home of its own.
fn hermes_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    crate::support::home().run_sync(args, env)
}

/// What a run printed on stderr.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `hermes preview --history HISTORY` with `extra`, as it ran.
fn preview_of(history: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["preview", "--history", history.to_str().unwrap()];
    args.extend_from_slice(extra);
    hermes(&args)
}

/// `hermes preview --history <the example>` with `extra`, as it ran.
fn preview_output(extra: &[&str]) -> Output {
    preview_of(&example(), extra)
}

/// `extra` and then `more`, as one argument list.
fn and<'a>(extra: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    [extra, more].concat()
}

/// What `hermes ARGS` printed on stdout; it must succeed.
fn printed(args: &[&str]) -> String {
    let out = hermes(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn preview(extra: &[&str]) -> Value {
    let out = preview_output(extra);
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A history file `name` holding `text` in a fresh folder (kept alive by the returned guard).
fn history(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn assistants(body: &Value) -> Vec<Value> {
    crate::support::assistants(body).cloned().collect()
}

const RC: &str = "The user wants the cause of a failing nightly build. I should read the log before guessing; the last failure was a timeout in the linker step.";
const FINAL: &str = "The link step cannot find libsqlite3. Install the SQLite development package or build SQLite bundled.";

fn tool_calls() -> Value {
    json!([{"id": "call_log_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"logs/nightly.log\"}"}}])
}

#[test]
fn preview_bodies_differ_per_route_on_the_shipped_example() {
    // (route, its target, the assistant messages its body carries)
    let cases = [
        (
            "deepseek",
            DEEPSEEK,
            vec![
                json!({"role": "assistant", "content": "", "reasoning_content": RC, "tool_calls": tool_calls()}),
                json!({"role": "assistant", "content": FINAL, "reasoning_content": " "}),
            ],
        ),
        (
            "mistral",
            [
                "--provider",
                "mistral",
                "--model",
                "magistral-medium-latest",
            ],
            vec![
                json!({"role": "assistant", "content": "", "tool_calls": tool_calls()}),
                json!({"role": "assistant", "content": FINAL}),
            ],
        ),
    ];
    for (route, target, expected) in cases {
        assert_eq!(assistants(&preview(&target)), expected, "route {route}");
    }

    // The file's own provider, model and base URL: OpenRouter, the model that minted the items.
    let body = preview(&[]);
    assert_eq!(body["model"], "deepseek/deepseek-v4-pro");
    let openrouter = assistants(&body);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    assert_eq!(
        openrouter,
        vec![
            json!({"role": "assistant", "content": "", "reasoning_content": RC, "reasoning": RC,
                   "reasoning_details": stored["messages"][2]["reasoning_details"], "tool_calls": tool_calls()}),
            json!({"role": "assistant", "content": FINAL, "reasoning_content": " "}),
        ]
    );
}

#[test]
fn signed_items_reach_the_wire_byte_for_byte() {
    // `--compact`: the bytes as sent (the pretty form re-indents stored items too).
    let out = preview_output(&["--compact"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stored = std::fs::read_to_string(example()).unwrap();
    for item in [
        r#"{"type": "reasoning.text", "text": "Read the log first; last time it was the linker.", "signature": "ErUBCkYIBhgCIkD8u0c0f3Vd+Qe0Wm3q2Zb8w7mJmQ9rT5xk0Y2lE4sVb1NqQ==", "format": "unknown", "index": 0}"#,
        r#"{"type": "reasoning.encrypted", "data": "gAAAAABnK7xQm9vR2d0a1c2V0dGVyX2VuY3J5cHRlZF9ibG9iX3RoYXRfbXVzdF9yZXR1cm5fYnl0ZV9mb3JfYnl0ZQ==", "id": "rs_0001", "format": "unknown", "index": 1}"#,
    ] {
        assert!(stored.contains(item));
        assert!(stdout.contains(item), "{item} not replayed verbatim");
    }
}

#[test]
fn reject_acts_like_a_recorded_verdict() {
    let body = preview(&["--reject", "reasoning_details", "--reject", "reasoning"]);
    let first = &assistants(&body)[0];
    assert!(first.get("reasoning_details").is_none());
    assert!(first.get("reasoning").is_none());
    assert_eq!(first["reasoning_content"], RC);
}

#[test]
fn rejecting_reasoning_content_on_a_must_echo_route_is_refused() {
    let out = preview_output(&and(&DEEPSEEK, &["--reject", "reasoning_content"]));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("must-echo (family deepseek)"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn query_and_effort_shape_the_body() {
    let body = preview(&and(&DEEPSEEK, &["-q", "and now?", "--effort", "xhigh"]));
    let obj = body.as_object().unwrap();
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    // The whole body: chat streams and offers its tools.
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "stream",
            "stream_options",
            "tools",
            "thinking",
            "reasoning_effort"
        ]
    );
    assert_eq!(body["stream"], true);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "list_dir", "now"]);
    assert_eq!(body["thinking"], json!({"type": "enabled"}));
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(
        body["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": "and now?"})
    );
    let off = preview(&and(&DEEPSEEK, &["--no-thinking"]));
    assert_eq!(off["thinking"], json!({"type": "disabled"}));
}

#[test]
fn explain_says_why_on_stderr() {
    let out = preview_output(&and(&DEEPSEEK, &["--explain"]));
    assert_eq!(
        stderr(&out).lines().collect::<Vec<_>>(),
        [
            "route deepseek (provider name `deepseek`); reads: reasoning_content; must-echo: yes (family deepseek); refused here: none",
            "messages[2] assistant: reasoning_content sent (stored); reasoning absent (route does not read it); reasoning_details absent (route does not read it)",
            "messages[4] assistant: reasoning_content padded with \" \" (must-echo; nothing stored); reasoning absent (route does not read it); reasoning_details absent (route does not read it)",
        ]
    );
}

#[test]
fn bad_input_names_the_file_and_json_path() {
    let (dir, path) = history(
        "broken.json",
        r#"[{"role":"user","content":"hi"},{"role":"assistant","reasoning_details":"oops"}]"#,
    );
    let out = preview_of(&path, &["--provider", "openai", "--model", "gpt-5"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("broken.json is not a valid history"), "{err}");
    assert!(err.contains("at `[1].reasoning_details`"), "{err}");
    assert!(err.contains("expected a sequence"), "{err}");

    let missing = dir.path().join("missing.json");
    let out = preview_of(&missing, &["--model", "m", "--provider", "p"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot read"));
}

#[test]
fn a_missing_model_is_a_usage_error() {
    let (_dir, path) = history("bare.json", r#"[{"role":"user","content":"hi"}]"#);
    let out = preview_of(&path, &["--provider", "openai"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no model"));
    let out = preview_of(&path, &["--provider", "openai", "--model", "gpt-5"]);
    assert!(out.status.success());
}

#[test]
fn unknown_provider_falls_to_host_rules_then_local_then_default() {
    let (_dir, path) = history(
        "h.json",
        r#"[{"role":"assistant","content":"a","reasoning":"r"}]"#,
    );
    let route_of = |base: &str| {
        let out = preview_of(
            &path,
            &[
                "--provider",
                "acme",
                "--model",
                "m",
                "--base-url",
                base,
                "--explain",
            ],
        );
        let err = stderr(&out);
        err.split_whitespace().nth(1).unwrap().to_owned()
    };
    // (base URL, the route it resolves to)
    for (base, route) in [
        ("https://api.groq.com/openai/v1", "strict"),
        ("https://api.groq.com.evil.test/v1", "default"),
        ("https://groq.com@evil.test/v1", "default"),
        ("http://127.0.0.1:11434/v1", "local-endpoint"),
        ("http://[::1]:8080/v1", "local-endpoint"),
    ] {
        assert_eq!(route_of(base), route, "{base}");
    }
}

#[test]
fn routes_json_lists_every_row_with_the_public_keys() {
    let routes: Vec<Value> = serde_json::from_str(&printed(&["routes", "--json"])).unwrap();
    let ids: Vec<&str> = routes.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.first(), Some(&"strict"));
    assert_eq!(ids.last(), Some(&"default"));
    for r in &routes {
        for key in [
            "id",
            "carriers",
            "must_echo",
            "keep_thinking",
            "providers",
            "hosts",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let aggregator = routes.iter().find(|r| r["id"] == "aggregator").unwrap();
    assert_eq!(
        aggregator["carriers"],
        json!(["reasoning_content", "reasoning", "reasoning_details"])
    );
    let deepseek = routes.iter().find(|r| r["id"] == "deepseek").unwrap();
    assert_eq!(deepseek["must_echo"], "deepseek");
    let strict = routes.iter().find(|r| r["id"] == "strict").unwrap();
    assert_eq!(strict["carriers"], json!([]));
    assert_eq!(strict["must_echo"], Value::Null);
}

#[test]
fn routes_text_is_pinned() {
    insta::assert_snapshot!(printed(&["routes"]));
}

#[test]
fn help_is_pinned() {
    insta::assert_snapshot!(printed(&["preview", "--help"]));
}

#[test]
fn debug_logs_show_which_carriers_each_message_carried() {
    let example = example();
    let args = and(
        &["preview", "--history", example.to_str().unwrap()],
        &DEEPSEEK,
    );
    let out = hermes_with(&args, &[("HERMES_LOG", "debug")]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("route resolved") && err.contains("route=\"deepseek\""),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("assistant wire message shaped")
                && l.contains("index=4")
                && l.contains("reasoning_content padded")),
        "{err}"
    );
}

#[test]
fn an_invalid_base_url_is_a_usage_error() {
    let out = hermes(&crate::support::custom_chat(
        "http://exa mple/v1",
        &["-q", "hi"],
    ));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("http://exa mple/v1") && err.contains("invalid"),
        "{err}"
    );
}

#[test]
fn providers_lists_every_registry_id_with_its_wire_base_url_and_key() {
    let listed: Value = serde_json::from_str(&printed(&["providers", "--json"])).unwrap();
    let rows = listed["providers"].as_array().unwrap();
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).cloned();
    assert_eq!(
        row("deepseek").unwrap(),
        json!({"id": "deepseek", "wire": "chat", "base_url": "https://api.deepseek.com/v1",
               "key": "DEEPSEEK_API_KEY"})
    );
    assert_eq!(row("anthropic").unwrap()["wire"], "anthropic");
    assert_eq!(row("gemini").unwrap()["wire"], "gemini");
    assert!(
        row("bedrock").unwrap()["base_url"]
            .as_str()
            .unwrap()
            .contains("bedrock-runtime.{region}.amazonaws.com")
    );
    assert!(row("sim").is_some());
    // Route-only names stay accepted (with a base URL) and are listed apart.
    let route_names = listed["route_names"].as_array().unwrap();
    for name in ["upstage", "minimax-cn"] {
        assert!(route_names.contains(&json!(name)), "{name}: {listed}");
    }
    let text = printed(&["providers"]);
    for id in [
        "openai",
        "deepseek",
        "vertex-gemini",
        "openai-responses",
        "sim",
    ] {
        assert!(text.lines().any(|l| l.starts_with(id)), "{id}: {text}");
    }
}

#[test]
fn a_mistyped_provider_is_unknown_with_the_nearest_id_and_the_list_command() {
    let out = hermes(&[
        "chat",
        "--provider",
        "deepseeek",
        "--model",
        "deepseek-v4-pro",
        "-q",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown provider `deepseeek`; did you mean `deepseek`?"),
        "{err}"
    );
    assert!(
        err.contains("`hermes providers` lists every provider id"),
        "{err}"
    );
    assert!(!err.contains("no base URL"), "{err}");
    // Preview says the same.
    let out = preview_output(&["--provider", "deepseeek"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean `deepseek`?"));
    // A route-only name without a base URL still gets the base-URL error, and any name with a
    // base URL is a provider of the user's own.
    let out = preview_output(&["--provider", "upstage"]);
    assert!(!stderr(&out).contains("unknown provider"));
    let own = [
        "--provider",
        "my-relay",
        "--model",
        "m",
        "--base-url",
        "https://relay.example/v1",
    ];
    let out = preview_output(&own);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn sim_serve_help_lists_every_profile() {
    let help = printed(&["sim", "serve", "--help"]);
    for profile in [
        "deepseek-v4",
        "mistral",
        "copilot",
        "anthropic",
        "bedrock",
        "gemini",
        "gemini-openai",
        "openai-responses",
    ] {
        assert!(help.contains(&format!("- {profile}:")), "{profile}: {help}");
    }
}
