//! The inspector (`hermes serve --ui`) in a real browser: `hermes serve` over the built-in
//! simulators, a client that drops every carrier it is handed runs through both doors — a
//! DeepSeek tool loop on chat completions, a Claude (Fable, prefix-bound) signed tool loop on
//! Messages whose system prompt changes mid-loop — then Debian's headless chromium, driven by
//! playwright-core (`tests/browser/inspector.mjs`), signs in with an admin key and checks what a
//! person sees: both conversations listed and filtered, each step's carriers and their outcome,
//! the steps dropped for the changed prefix marked, a key revoked on the Keys page refused, a
//! new key shown once. Screenshots go to `target/inspector/` (the README's comes from there).
//!
//! `cargo xtask ci` installs chromium and playwright-core (`HERMES_BROWSER_NODE`); without them
//! the test is recorded as skipped unless `HERMES_REQUIRE_BROWSER` (or `HERMES_REQUIRE_CLIENTS`)
//! is set.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::serve::{http_with, serving_with};
use crate::support::own_home;

/// `POST path` with `body` as `key`'s tenant: the status and the parsed body.
fn post(addr: &str, path: &str, key: &str, body: &Value, extra: &str) -> Value {
    let auth = format!("Authorization: Bearer {key}\r\n{extra}");
    let (status, text) = http_with(addr, "POST", path, &body.to_string(), &auth);
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
}

/// A DeepSeek tool loop on chat completions (`[tools=2]`: two tool calls, then an answer) by a
/// client that drops `reasoning_content` from every reply it keeps: the conversation's id.
fn deepseek_loop(addr: &str, key: &str) -> String {
    let tools = json!([{"type": "function", "function": {"name": "lookup",
        "description": "Look up.", "parameters": {"type": "object", "properties": {}}}}]);
    let mut messages = vec![json!({"role": "user", "content": "[tools=2] What is the weather?"})];
    for _ in 0..4 {
        let body = json!({"model": "sim/deepseek-v4-pro", "messages": messages, "tools": tools});
        let reply = post(addr, "/v1/chat/completions", key, &body, "");
        let message = &reply["choices"][0]["message"];
        assert!(message["reasoning_content"].is_string(), "{reply}");
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // What a carrier-dropping client keeps: no reasoning_content.
        messages.push(json!({"role": "assistant", "content": message["content"],
                             "tool_calls": message["tool_calls"]}));
        if calls.is_empty() {
            return reply["hermes_session"].as_str().unwrap().to_owned();
        }
        for call in calls {
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "sunny"}));
        }
    }
    panic!("the DeepSeek tool loop did not end");
}

/// A Claude signed tool loop on Messages (`[tools=3]`) by a client that drops every thinking
/// block, whose system prompt changes after the second step: the conversation's id.
fn claude_loop(addr: &str, key: &str) -> String {
    let tools = json!([{"name": "lookup", "description": "Look up.",
                        "input_schema": {"type": "object", "properties": {}}}]);
    let mut messages = vec![json!({"role": "user", "content": "[tools=3] Look it up."})];
    for step in 0..5 {
        let system = if step < 2 {
            "You are terse."
        } else {
            "You are terse. Today is Sunday."
        };
        let body = json!({"model": "sim/anthropic/claude-fable-5-1", "max_tokens": 4096,
                          "system": system, "tools": tools, "thinking": {"type": "adaptive"},
                          "messages": messages});
        let reply = post(
            addr,
            "/v1/messages",
            key,
            &body,
            "anthropic-version: 2023-06-01\r\n",
        );
        if !hermes_test_support::messages::forgetful_step(&reply, &mut messages, "ok") {
            return reply["hermes_session"].as_str().unwrap().to_owned();
        }
    }
    panic!("the Claude tool loop did not end");
}

/// `hermes serve keys create ARGS`' key.
fn key(home: &std::path::Path, args: &[&str]) -> String {
    crate::serve::created_key(home, args, &[])
}

/// Where the screenshots go: `target/inspector/`.
fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let dir = target.join("inspector");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_inspector_shows_a_carrier_dropping_clients_conversations_in_a_browser() {
    let Some(browser) = hermes_test_support::browser::find() else {
        return;
    };
    let home = own_home();
    let tenant = key(home.path(), &["--tenant", "acme"]);
    let doomed = key(home.path(), &["--tenant", "acme"]);
    let admin = key(home.path(), &["--admin"]);
    let (mut server, addr) = serving_with(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--allow-sim", "--ui"],
        &[],
    );
    // The admin API is the admin key's alone: a tenant's key is refused, and no door takes
    // the admin key.
    let (status, body) = http_with(
        &addr,
        "GET",
        "/admin/v1/conversations",
        "",
        &format!("Authorization: Bearer {tenant}\r\n"),
    );
    assert_eq!(status, 403, "{body}");
    let (status, body) = http_with(
        &addr,
        "GET",
        "/v1/models",
        "",
        &format!("Authorization: Bearer {admin}\r\n"),
    );
    assert_eq!(status, 401, "{body}");

    let deepseek = deepseek_loop(&addr, &tenant);
    let claude = claude_loop(&addr, &tenant);

    let shots = screenshots();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/inspector.mjs");
    let out = Command::new("node")
        .arg(&script)
        .env("HERMES_UI_MODULES", &browser.node)
        .env("HERMES_UI_URL", format!("http://{addr}"))
        .env("HERMES_UI_ADMIN", &admin)
        .env("HERMES_UI_TENANT", &tenant)
        .env("HERMES_UI_DOOMED", &doomed)
        .env("HERMES_UI_DEEPSEEK", &deepseek)
        .env("HERMES_UI_CLAUDE", &claude)
        .env("HERMES_UI_SHOTS", &shots)
        .env("HERMES_UI_CHROMIUM", &browser.chromium)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("ok: the revoked key is refused"), "{said}");
    // And refused here too, on every door.
    let (status, _) = http_with(
        &addr,
        "GET",
        "/v1/models",
        "",
        &format!("Authorization: Bearer {doomed}\r\n"),
    );
    assert_eq!(status, 401);
    for shot in ["conversations", "conversation", "keys", "overview"] {
        let png = std::fs::read(shots.join(format!("{shot}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{shot}.png");
    }
    // Nothing the gateway logged holds a key's secret.
    let log = server.terminate();
    for key in [&tenant, &doomed, &admin] {
        let secret = key.rsplit('_').next().unwrap();
        assert!(!log.contains(secret), "a key's secret in the log: {log}");
    }
}

/// `GET path` as `key`: the status and the parsed body (`Null` when it is no JSON).
fn get(addr: &str, path: &str, key: &str) -> (u16, Value) {
    let (status, text) = http_with(
        addr,
        "GET",
        path,
        "",
        &format!("Authorization: Bearer {key}\r\n"),
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn the_admin_api_answers_an_admin_key_alone_pages_filters_and_refuses_bad_input() {
    let home = own_home();
    let tenant = key(home.path(), &["--tenant", "acme"]);
    let admin = key(home.path(), &["--admin"]);
    // Without --ui the admin API is served, the inspector is not.
    let (mut server, addr) = serving_with(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--allow-sim"],
        &[],
    );
    let (status, _) = get(&addr, "/ui/conversations", &admin);
    assert_eq!(status, 404);
    let (status, body) = get(&addr, "/admin/v1/conversations", "");
    assert_eq!(status, 401, "{body}");
    let (status, body) = get(&addr, "/admin/v1/conversations", &tenant);
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["param"], "Authorization", "{body}");

    let first = deepseek_loop(&addr, &tenant);
    let claude = claude_loop(&addr, &tenant);
    let (status, page) = get(&addr, "/admin/v1/conversations?limit=1", &admin);
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 2);
    assert_eq!(
        page["conversations"][0]["id"],
        claude.as_str(),
        "newest first"
    );
    let next = page["next"].as_str().unwrap().to_owned();
    let (_, rest) = get(
        &addr,
        &format!("/admin/v1/conversations?limit=1&cursor={next}"),
        &admin,
    );
    assert_eq!(rest["conversations"][0]["id"], first.as_str(), "{rest}");
    assert_eq!(rest["conversations"][0]["tenant"], "acme");
    assert!(
        rest["conversations"][0]["tokens"]["reasoning"]
            .as_i64()
            .unwrap()
            > 0
    );
    assert_eq!(rest["next"], Value::Null);
    let (_, only) = get(
        &addr,
        "/admin/v1/conversations?model=sim/deepseek-v4-pro",
        &admin,
    );
    assert_eq!(only["total"], 1, "{only}");
    for bad in ["limit=many", "cursor=nonsense"] {
        let (status, body) = get(&addr, &format!("/admin/v1/conversations?{bad}"), &admin);
        assert_eq!(status, 400, "{bad}: {body}");
    }

    // One conversation: its steps' carriers and the requests that re-attached them.
    let (status, c) = get(&addr, &format!("/admin/v1/conversations/{first}"), &admin);
    assert_eq!(status, 200, "{c}");
    let assistant: Vec<&Value> = c["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 3, "{c}");
    assert_eq!(assistant[0]["carriers"][0]["family"], "reasoning_content");
    assert_eq!(assistant[0]["carriers"][0]["source"], "minted");
    let reattached: Vec<i64> = c["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["carriers"]["reattached"].as_i64().unwrap())
        .collect();
    assert_eq!(reattached, [0, 1, 2], "{c}");
    let request = c["requests"][1]["id"].as_u64().unwrap();
    let (status, body) = get(
        &addr,
        &format!("/admin/v1/requests/{request}/bodies/0"),
        &admin,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body["body"]
            .as_str()
            .unwrap()
            .contains("\"reasoning_content\""),
        "the re-attached carrier went upstream: {body}"
    );
    let (status, _) = get(&addr, "/admin/v1/requests/999999/bodies/0", &admin);
    assert_eq!(status, 404);
    let (status, _) = get(&addr, "/admin/v1/conversations/no-such-id", &admin);
    assert_eq!(status, 404);

    // Keys: made (shown once), listed without secrets, revoked.
    let (status, made) = {
        let (status, text) = http_with(
            &addr,
            "POST",
            "/admin/v1/keys",
            r#"{"tenant": "globex"}"#,
            &format!("Authorization: Bearer {admin}\r\n"),
        );
        (status, serde_json::from_str::<Value>(&text).unwrap())
    };
    assert_eq!(status, 201, "{made}");
    let new_key = made["key"].as_str().unwrap().to_owned();
    let (_, listed) = get(&addr, "/admin/v1/keys", &admin);
    let text = listed.to_string();
    assert!(text.contains(made["id"].as_str().unwrap()), "{text}");
    assert!(
        !text.contains(new_key.rsplit('_').next().unwrap()),
        "{text}"
    );
    let (status, body) = http_with(
        &addr,
        "POST",
        "/admin/v1/keys",
        r#"{"tenant": ""}"#,
        &format!("Authorization: Bearer {admin}\r\n"),
    );
    assert_eq!(status, 400, "{body}");
    let (_, tenants) = get(&addr, "/admin/v1/tenants", &admin);
    assert!(
        tenants["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "globex" && t["keys"] == 1),
        "{tenants}"
    );
    let path = format!("/admin/v1/keys/{}", made["id"].as_str().unwrap());
    let auth = format!("Authorization: Bearer {admin}\r\n");
    assert_eq!(http_with(&addr, "DELETE", &path, "", &auth).0, 204);
    assert_eq!(http_with(&addr, "DELETE", &path, "", &auth).0, 404);
    let (_, overview) = get(&addr, "/admin/v1/overview?minutes=5", &admin);
    let minutes = overview["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 5);
    let requests: u64 = minutes
        .iter()
        .map(|m| m["requests"].as_u64().unwrap())
        .sum();
    assert!(requests >= 7, "{overview}");
    server.terminate();
}
