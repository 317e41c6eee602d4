//! Acme's simulator profile (built in `acme_sim` through hermes-sim's public API) enforces Acme's
//! contract over real loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acme_sim;

use hermes_sim::{Sim, Switches};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------- tiny HTTP/1.1 client

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Posts `body` to `/chat/completions`; returns the status and the (de-chunked) body.
async fn post(sim: &Sim, body: &Value) -> (u16, String) {
    let host = sim.base_url().strip_prefix("http://").unwrap().to_owned();
    let body = body.to_string();
    let mut stream = TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "POST /chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = find(&raw, b"\r\n\r\n").unwrap();
    let headers = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    let mut rest = &raw[split + 4..];
    let mut out = Vec::new();
    if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        loop {
            let eol = find(rest, b"\r\n").unwrap();
            let size = std::str::from_utf8(&rest[..eol]).unwrap();
            let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    } else {
        out.extend_from_slice(rest);
    }
    (status, String::from_utf8(out).unwrap())
}

async fn refused(sim: &Sim, body: &Value, message: &str) {
    let (status, text) = post(sim, body).await;
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v, json!({"error": {"message": message}}));
}

async fn ok_message(sim: &Sim, body: &Value) -> Value {
    let (status, text) = post(sim, body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["choices"][0]["message"].clone()
}

// ---------------------------------------------------------------- request builders

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn req(messages: Vec<Value>) -> Value {
    json!({"model": acme_sim::MODEL, "messages": messages})
}

fn tool_turn(rc: Option<&str>) -> Value {
    let mut m = json!({
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    });
    if let Some(rc) = rc {
        m["reasoning_content"] = json!(rc);
    }
    m
}

fn tool_result() -> Value {
    json!({"role":"tool","tool_call_id":"call_1","content":"12:00"})
}

async fn acme() -> Sim {
    Sim::builder(acme_sim::profile()).start().await.unwrap()
}

// ---------------------------------------------------------------- the contract

#[tokio::test]
async fn acme_requires_reasoning_content_and_refuses_unknown_keys() {
    let sim = acme().await;
    assert_eq!(sim.profile(), acme_sim::NAME);
    let tool_loop = |rc: Option<&str>| req(vec![user("a"), tool_turn(rc), tool_result()]);
    refused(
        &sim,
        &tool_loop(None),
        "acme: reasoning_content missing on tool-call message 1",
    )
    .await;
    for field in ["reasoning", "extra_content", "reasoning_opaque"] {
        let mut b = tool_loop(Some("t"));
        b["messages"][1][field] = json!("x");
        refused(&sim, &b, &format!("unknown field `{field}` on messages[1]")).await;
    }
    for name in ["thinking", "reasoning_effort", "stream_options"] {
        let mut b = tool_loop(Some("t"));
        b[name] = json!(true);
        refused(&sim, &b, &format!("unknown parameter `{name}`")).await;
    }
    // Wrong values of known parameters.
    for (name, value, message) in [
        (
            "reasoning_mode",
            json!("medium"),
            "invalid value for `reasoning_mode`: expected one of \"light\", \"deep\", \"off\"",
        ),
        (
            "retain_reasoning",
            json!("yes"),
            "invalid value for `retain_reasoning`: expected a boolean",
        ),
    ] {
        let mut b = tool_loop(Some("t"));
        b[name] = value;
        refused(&sim, &b, message).await;
    }
    // The documented shape: RC and RD read, known parameters accepted.
    let mut good = tool_loop(Some(""));
    good["messages"][1]["reasoning_details"] = json!([{"type":"reasoning.text","text":"t"}]);
    good["messages"][1]["name"] = json!("bot");
    for (k, v) in [
        ("retain_reasoning", json!(true)),
        ("reasoning_mode", json!("deep")),
        ("stream", json!(false)),
        ("tools", json!([])),
        ("tool_choice", json!("auto")),
        ("temperature", json!(0.5)),
        ("max_tokens", json!(100)),
    ] {
        good[k] = v;
    }
    let m = ok_message(&sim, &good).await;
    assert!(m["reasoning_content"].as_str().unwrap().len() > 10);
    // Plain turns need nothing; reasoning_mode "off" answers without reasoning.
    let mut off = req(vec![
        user("a"),
        json!({"role": "assistant", "content": "hi"}),
        user("b"),
    ]);
    off["reasoning_mode"] = json!("off");
    assert!(
        ok_message(&sim, &off)
            .await
            .get("reasoning_content")
            .is_none()
    );
}

#[tokio::test]
async fn acme_switches_use_its_unknown_field_text() {
    let sim = Sim::builder(acme_sim::profile())
        .switches(Switches::default().reject_message_field("name"))
        .start()
        .await
        .unwrap();
    let body = req(vec![json!({"role":"user","content":"a","name":"bob"})]);
    refused(&sim, &body, "unknown field `name` on messages[0]").await;
    sim.set_switches(Switches::default().failing_mid_stream());
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let (status, text) = post(&sim, &streamed).await;
    assert_eq!(status, 200);
    assert!(!text.contains("[DONE]"), "{text}");
    let last = text.split("\n\n").filter(|e| !e.is_empty()).last().unwrap();
    let last: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(last["error"]["code"], 502);
    assert_eq!(sim.requests().len(), 2);
}
