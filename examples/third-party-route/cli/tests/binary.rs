//! A third party's own binary: its route is listed first, previews shape with it, and a chat
//! against a loopback Acme server stores a turn; its own wire (Acme JSON, `acme-json`) is
//! listed, previews and explains through its descriptor, and a chat stores a signed thought it
//! replays byte for byte on resume; the added wire's key variable, set while a chat runs on
//! another provider, is redacted from a tool result and found in no output or home file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The binary with `args`, in `home`, with no colour and no log.
fn command(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_acme-hermes"));
    command
        .args(args)
        .env("HERMES_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("HERMES_LOG");
    command
}

/// Runs the binary in `home`, whatever it exits with.
fn run_acme(home: &Path, args: &[&str]) -> Output {
    command(home, args).output().unwrap()
}

/// Runs the binary in `home` with `envs` set; it must succeed.
fn acme_with(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let out = command(home, args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the binary in `home`; it must succeed.
fn acme(home: &Path, args: &[&str]) -> Output {
    acme_with(home, args, &[])
}

/// `chat` on the `acme` route's `acme-think-2` at `base`, whole replies, then `extra`.
fn acme_route_chat(base: &str, extra: &[&str]) -> Vec<String> {
    let args = [
        "chat",
        "--provider",
        "acme",
        "--model",
        "acme-think-2",
        "--base-url",
        base,
        "--no-stream",
    ];
    args.iter().chain(extra).map(|a| (*a).to_owned()).collect()
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
        let args = acme_route_chat(&base, &["--json", "-q", "hi"]);
        acme(
            &home_path,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
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

#[test]
fn providers_lists_the_acme_json_wire() {
    let home = tempfile::tempdir().unwrap();
    let out = acme(home.path(), &["providers", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = listed["providers"].as_array().unwrap();
    let row = rows.iter().find(|r| r["id"] == "acme-json");
    let want = json!({"id": "acme-json", "wire": "acme-json",
                      "base_url": "https://api.acme-thinking.test", "key": "ACME_API_KEY"});
    assert_eq!(row, Some(&want));
}

#[test]
fn a_mistyped_provider_is_told_the_added_wires_provider() {
    let home = tempfile::tempdir().unwrap();
    let out = run_acme(home.path(), &["chat", "--provider", "acme-jsn", "-q", "hi"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("unknown provider `acme-jsn`; did you mean `acme-json`?"),
        "{err}"
    );
}

/// A stored Acme JSON conversation: a tool step and an answer minted by `acme-json-1` at Acme's
/// host, then one minted by another model.
const THOUGHT_1: &str = r#"{ "sig":"acme\/sig-1-acme-json-1", "text": "need 1.5e1 tools" }"#;
const THOUGHT_2: &str = r#"{ "sig":"acme\/sig-2-acme-json-1", "text": "got it" }"#;
const THOUGHT_OTHER: &str = r#"{"sig":"other","text":"not yours"}"#;

fn acme_json_history() -> String {
    let origin = |model: &str| {
        format!(r#"{{"provider":"acme-json","host":"api.acme-thinking.test","model":"{model}"}}"#)
    };
    format!(
        r#"[{{"role":"user","content":"[tools=1] time?"}},
{{"role":"assistant","content":"","tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"now","arguments":"{{}}"}}}}],"acme_thought":{THOUGHT_1},"origin":{o1}}},
{{"role":"tool","tool_call_id":"call_1","content":"12:00"}},
{{"role":"assistant","content":"noon","acme_thought":{THOUGHT_2},"origin":{o1}}},
{{"role":"user","content":"and you?"}},
{{"role":"assistant","content":"hm","acme_thought":{THOUGHT_OTHER},"origin":{o2}}}]"#,
        o1 = origin("acme-json-1"),
        o2 = origin("acme-json-0"),
    )
}

#[test]
fn preview_prints_the_body_the_acme_json_wire_encodes_and_its_explain_lines() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("h.json");
    std::fs::write(&file, acme_json_history()).unwrap();
    let args = |extra: &[&'static str]| {
        let mut args = vec![
            "preview",
            "--history",
            file.to_str().unwrap(),
            "--provider",
            "acme-json",
            "--model",
            "acme-json-1",
            "--effort",
            "high",
            "-q",
            "more?",
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |extra: &[&'static str]| {
        let args = args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        acme(home.path(), &args)
    };
    let out = run(&["--compact"]);
    let body = String::from_utf8(out.stdout).unwrap();
    // The stored thoughts of this model and host go back as their exact bytes.
    for thought in [THOUGHT_1, THOUGHT_2] {
        let replayed = format!(r#""thought":{thought}"#);
        assert!(body.contains(&replayed), "{thought} in {body}");
    }
    assert!(!body.contains("not yours"), "{body}");
    let mut body: Value = serde_json::from_str(&body).unwrap();
    // The CLI's built-in tools, as chat offers them, in OpenAI's function format.
    let tools = body.as_object_mut().unwrap().remove("tools").unwrap();
    let names = tools
        .as_array()
        .map(|t| t.iter().map(|t| &t["function"]["name"]));
    let names: Vec<&Value> = names.into_iter().flatten().collect();
    assert_eq!(
        names,
        [&json!("read_file"), &json!("list_dir"), &json!("now")]
    );
    assert_eq!(
        body,
        json!({
            "model": "acme-json-1",
            "turns": [
                {"role": "user", "text": "[tools=1] time?"},
                {"role": "assistant", "text": "",
                 "thought": {"sig": "acme/sig-1-acme-json-1", "text": "need 1.5e1 tools"},
                 "calls": [{"id": "call_1", "name": "now", "args": "{}"}]},
                {"role": "tool", "text": "12:00", "call": "call_1"},
                {"role": "assistant", "text": "noon",
                 "thought": {"sig": "acme/sig-2-acme-json-1", "text": "got it"}},
                {"role": "user", "text": "and you?"},
                {"role": "assistant", "text": "hm"},
                {"role": "user", "text": "more?"}
            ],
            "thinking": "high"
        })
    );
    let out = run(&["--explain"]);
    let explain = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = explain.lines().collect();
    assert_eq!(
        lines,
        [
            "POST https://api.acme-thinking.test/v1/think",
            "turn 1: thought replayed byte for byte",
            "turn 3: thought replayed byte for byte",
            "turn 5: thought left out: minted by acme-json-0 at api.acme-thinking.test, not acme-json-1 at api.acme-thinking.test",
        ],
        "{explain}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_on_the_acme_json_wire_replays_the_signed_thought_byte_for_byte_on_resume() {
    let server = acme_route::server::AcmeServer::start().await;
    let home = tempfile::tempdir().unwrap();
    // `chat ARGS --base-url <server> --no-stream --json`, its JSON reply.
    let chat = |args: &[&str]| {
        let home = home.path().to_owned();
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.insert(0, "chat".to_owned());
        args.extend(["--base-url", &server.uri(), "--no-stream", "--json"].map(str::to_owned));
        async move {
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                serde_json::from_slice::<Value>(&acme(&home, &args).stdout).unwrap()
            })
            .await
            .unwrap()
        }
    };
    let first = chat(&[
        "--provider",
        "acme-json",
        "--model",
        "acme-json-1",
        "-q",
        "hi",
    ])
    .await;
    assert_eq!(first["reply"], "done after 0 calls", "{first}");
    let id = first["session_id"].as_str().unwrap().to_owned();
    let second = chat(&["--resume", &id, "-q", "again"]).await;
    assert_eq!(second["session_id"], first["session_id"], "{second}");
    let exchanges = server.exchanges();
    assert_eq!(exchanges.len(), 2, "{exchanges:?}");
    assert!(exchanges.iter().all(|e| e.status == 200), "{exchanges:?}");
    // The second request, as the server received it, carries the first reply's thought with
    // exactly the bytes the server wrote.
    let minted = &exchanges[0].minted[0];
    assert!(minted.contains("acme\\/sig-1"), "{minted}");
    assert!(
        exchanges[1]
            .body
            .contains(&format!(r#""thought":{minted}"#)),
        "{}",
        exchanges[1].body
    );
    let sent: Value = serde_json::from_str(&exchanges[1].body).unwrap();
    assert_eq!(sent["turns"][1]["role"], "assistant");
    assert_eq!(sent["turns"][1]["text"], "done after 0 calls");
    assert_eq!(sent["turns"][2], json!({"role": "user", "text": "again"}));
}

/// The value planted in Acme JSON's key variable (`ACME_API_KEY`) while the chat runs on the
/// `acme` route (chat completions), which never sends it.
const ACME_KEY: &str = "acme-planted-key-51c0e9a7d24b3f86";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_added_wires_key_variable_is_redacted_from_tool_results_logs_and_state_db() {
    let server = MockServer::start().await;
    // The tool round: no result yet, so a call reading the file that holds the key.
    Mock::given(method("POST"))
        .and(|r: &wiremock::Request| !String::from_utf8_lossy(&r.body).contains("\"tool\""))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "a1", "object": "chat.completion", "model": "acme-think-2",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_0", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"key.txt\"}"}}]}}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "a2", "object": "chat.completion", "model": "acme-think-2",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "all done"}}]
        })))
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("key.txt"),
        format!("the key is {ACME_KEY} ok\n"),
    )
    .unwrap();
    let base = format!("{}/v1", server.uri());
    let (home_path, ws_path) = (home.path().to_owned(), ws.path().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        let workspace = ws_path.to_str().unwrap();
        let args = acme_route_chat(&base, &["--workspace", workspace, "-q", "read key.txt"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let envs = [("HERMES_LOG", "debug"), ("ACME_API_KEY", ACME_KEY)];
        acme_with(&home_path, &args, &envs)
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("all done"), "{stdout}");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    let sent: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].clone());
    assert_eq!(result, Some(json!("the key is [redacted] ok\n")), "{sent}");
    let mut places = vec![
        ("stdout".to_owned(), out.stdout),
        ("stderr".to_owned(), out.stderr),
    ];
    for (i, request) in requests.into_iter().enumerate() {
        places.push((format!("request {i}"), request.body));
    }
    let mut dirs = vec![home.path().to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                places.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    assert!(
        places.iter().any(|(p, _)| p.ends_with("state.db")),
        "the session was stored: {:?}",
        places.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (place, bytes) in &places {
        let found = bytes
            .windows(ACME_KEY.len())
            .any(|w| w == ACME_KEY.as_bytes());
        assert!(!found, "Acme's key reached {place}");
    }
}
