//! Wire fidelity through the real binary: carriers captured byte for byte from a whole reply and
//! replayed unchanged, and the Python original's persistence keys kept in storage but never sent.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Runs hermes in `home` off the async runtime and expects success.
async fn run(home: &Path, args: &[&str]) -> Output {
    let out = hermes_test_support::home::output(crate::support::command(home, args, &[])).await;
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A `reasoning_details` item whose bytes a `Value` round trip would rewrite: `\u00e9` and `\/`
/// escapes, an integer above 2^64, keys out of alphabetical order.
const ITEM: &str = r#"{"type":"reasoning.text","text":"caf\u00e9 \/ r\u00e9sum\u00e9","signature":"c2lnLUE=","n":123456789012345678901234567890,"format":"anthropic-claude-v1","index":0}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_replys_carriers_are_stored_and_replayed_byte_for_byte() {
    let server = MockServer::start().await;
    let first = format!(
        r#"{{"id":"r1","object":"chat.completion","choices":[{{"index":0,"finish_reason":"stop","message":{{"role":"assistant","content":"hi","reasoning":"thought","reasoning_details":[{ITEM}]}}}}]}}"#
    );
    let second = r#"{"id":"r2","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"again"}}]}"#;
    Mock::given(method("POST"))
        .and(body_string_contains("second question"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(second, "application/json"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(first, "application/json"))
        .mount(&server)
        .await;
    let home = crate::support::home();
    let base = format!("{}/v1", server.uri());
    let common = [
        "--provider",
        "openrouter",
        "--model",
        "a/model",
        "--base-url",
        &base,
        "--no-stream",
        "--json",
    ];
    let mut args = vec!["chat", "-q", "first question"];
    args.extend(common);
    let out = run(home.path(), &args).await;
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = reply["session_id"].as_str().unwrap().to_owned();

    let export = run(home.path(), &["sessions", "export", &id]).await;
    let export = String::from_utf8(export.stdout).unwrap();
    assert!(
        export.contains(ITEM),
        "export holds the item's bytes as received:\n{export}"
    );

    let mut args = vec!["chat", "--resume", &id, "-q", "second question"];
    args.extend(common);
    run(home.path(), &args).await;
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let sent = String::from_utf8(requests[1].body.clone()).unwrap();
    assert!(
        sent.contains(&format!(r#""reasoning_details":[{ITEM}]"#)),
        "the next request carries the item unchanged:\n{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_originals_keys_are_exported_but_never_previewed() {
    let home = crate::support::home();
    let file = home.path().join("original.json");
    let assistant = json!({"role": "assistant", "content": "", "reasoning_content": "plan",
        "tool_calls": [{"id": "c1", "call_id": "c1", "response_item_id": "fc_1", "type": "function",
                        "function": {"name": "now", "arguments": "{}"}}],
        "codex_reasoning_items": [{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-openai"}],
        "codex_message_items": [{"type": "message", "id": "msg_1"}],
        "finish_reason": "tool_calls", "timestamp": 1793534402.5, "_turn": {"n": 1}});
    std::fs::write(
        &file,
        json!({"format": "hermes.session.v1", "provider": "deepseek", "model": "deepseek-v4-pro",
               "messages": [{"role": "user", "content": "time?", "timestamp": 1793534401.0},
                            assistant,
                            {"role": "tool", "tool_call_id": "c1", "content": "12:00", "tool_name": "now"}]})
        .to_string(),
    )
    .unwrap();
    let out = run(home.path(), &["sessions", "import", file.to_str().unwrap()]).await;
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let export: Value =
        serde_json::from_slice(&run(home.path(), &["sessions", "export", &id]).await.stdout)
            .unwrap();
    assert_eq!(export["messages"][1], assistant, "storage keeps every key");

    let banned = [
        "codex_reasoning_items",
        "codex_message_items",
        "finish_reason",
        "timestamp",
        "_turn",
        "tool_name",
        "call_id",
        "response_item_id",
    ];
    for provider in ["deepseek", "openrouter", "mistral", "openai"] {
        let out = run(
            home.path(),
            &[
                "preview",
                "--session",
                &id,
                "--provider",
                provider,
                "--model",
                "m",
                "--explain",
            ],
        )
        .await;
        let body = String::from_utf8(out.stdout).unwrap();
        assert!(
            !body.contains("gAAAA-openai"),
            "{provider} was sent OpenAI ciphertext"
        );
        for key in banned {
            let quoted = format!("\"{key}\"");
            assert!(
                !body.contains(&quoted),
                "{provider} was sent {key}:\n{body}"
            );
        }
        let explain = String::from_utf8(out.stderr).unwrap();
        assert!(
            explain.contains("left out (stored, no wire sends them): codex_reasoning_items, codex_message_items, finish_reason, timestamp, _turn, call_id, response_item_id"),
            "{provider}: {explain}"
        );
        assert!(
            explain.contains("messages[2] tool: left out (stored, no wire sends them): tool_name"),
            "{explain}"
        );
    }
}
