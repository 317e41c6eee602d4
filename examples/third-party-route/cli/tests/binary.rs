//! A third party's own binary: its route is listed first, previews shape with it, and a chat
//! against a loopback Acme server stores a turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn acme(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_acme-hermes"))
        .args(args)
        .env("HERMES_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("HERMES_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn routes_lists_acme_first() {
    let home = tempfile::tempdir().unwrap();
    let out = acme(home.path(), &["routes", "--json"]);
    let routes: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(routes[0]["id"], "acme", "{routes}");
    assert_eq!(routes[1]["id"], "strict");
}

#[test]
fn preview_shapes_with_the_acme_route() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("h.json");
    std::fs::write(
        &file,
        json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "reasoning": "only r",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "12:00"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = acme(
        home.path(),
        &[
            "preview",
            "--history",
            file.to_str().unwrap(),
            "--provider",
            "acme",
            "--model",
            "acme-think-2",
            "--effort",
            "high",
            "--explain",
        ],
    );
    let explain = String::from_utf8(out.stderr).unwrap();
    assert!(explain.starts_with("route acme "), "{explain}");
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Must-echo on tool-call turns: the only-R turn is replayed as reasoning_content.
    assert_eq!(body["messages"][1]["reasoning_content"], "only r");
    assert!(body["messages"][1].get("reasoning").is_none());
    assert_eq!(body["retain_reasoning"], true, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_against_a_loopback_acme_server_stores_a_turn() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "a1", "object": "chat.completion", "model": "acme-think-2",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": "hello from acme", "reasoning_content": "acme thought",
                "reasoning_details": [{"type": "reasoning.text", "text": "acme thought", "signature": "QUNNRQ=="}]}}]
        })))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let home_path = home.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        acme(
            &home_path,
            &[
                "chat",
                "--provider",
                "acme",
                "--model",
                "acme-think-2",
                "--base-url",
                &base,
                "--no-stream",
                "--json",
                "-q",
                "hi",
            ],
        )
    })
    .await
    .unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["route"], "acme");
    assert_eq!(reply["reply"], "hello from acme");
    let id = reply["session_id"].as_str().unwrap().to_owned();
    let home_path = home.path().to_owned();
    let export =
        tokio::task::spawn_blocking(move || acme(&home_path, &["sessions", "export", &id]))
            .await
            .unwrap();
    let export: Value = serde_json::from_slice(&export.stdout).unwrap();
    let stored = &export["messages"][1];
    assert_eq!(stored["reasoning_content"], "acme thought");
    assert_eq!(stored["reasoning_details"][0]["signature"], "QUNNRQ==");
    assert_eq!(stored["origin"]["provider"], "acme");
}
