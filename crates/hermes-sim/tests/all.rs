//! Integration tests of hermes-sim over real loopback HTTP with a tiny hand-written client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use hermes_sim::{PROFILES, Sim, Switches};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------- tiny HTTP/1.1 client

struct Resp {
    status: u16,
    headers: String,
    body: Vec<u8>,
    /// Transfer-encoding chunks as written by the server (empty when not chunked).
    chunks: Vec<Vec<u8>>,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn send(base: &str, method: &str, path: &str, body: &[u8]) -> Resp {
    let host = base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(host).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = find(&raw, b"\r\n\r\n").unwrap();
    let headers = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status: u16 = headers.split(' ').nth(1).unwrap().parse().unwrap();
    let mut rest = &raw[split + 4..];
    let mut chunks = Vec::new();
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        loop {
            let eol = find(rest, b"\r\n").unwrap();
            let size_txt = std::str::from_utf8(&rest[..eol]).unwrap();
            let size =
                usize::from_str_radix(size_txt.split(';').next().unwrap().trim(), 16).unwrap();
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            chunks.push(rest[..size].to_vec());
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        out
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
        chunks,
    }
}

async fn post(sim: &Sim, body: &Value) -> Resp {
    send(
        &sim.base_url(),
        "POST",
        "/chat/completions",
        body.to_string().as_bytes(),
    )
    .await
}

/// Posts and expects a 200 chat.completion; returns its message.
async fn ok_message(sim: &Sim, body: &Value) -> Value {
    let r = post(sim, body).await;
    assert_eq!(r.status, 200, "{}: {}", sim.profile(), r.text());
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert!(v["usage"]["total_tokens"].as_u64().unwrap() > 0);
    v["choices"][0]["message"].clone()
}

// ---------------------------------------------------------------- SSE helpers

struct Stream {
    resp: Resp,
    events: Vec<Value>,
    done: bool,
}

async fn post_stream(sim: &Sim, body: &Value) -> Stream {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let resp = post(sim, &body).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.headers.contains("text/event-stream"));
    let text = resp.text();
    assert!(text.ends_with("\n\n"));
    let mut events = Vec::new();
    let mut done = false;
    for ev in text.split("\n\n").filter(|e| !e.is_empty()) {
        let data = ev
            .strip_prefix("data: ")
            .expect("every event is a data line");
        assert!(!done, "nothing after [DONE]");
        if data == "[DONE]" {
            done = true;
        } else {
            events.push(serde_json::from_str(data).unwrap());
        }
    }
    Stream { resp, events, done }
}

fn deltas(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter_map(|e| e["choices"].get(0).map(|c| &c["delta"]))
        .collect()
}

fn append(m: &mut Map<String, Value>, k: &str, s: &str) {
    let cur = m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    m.insert(k.to_owned(), json!(cur + s));
}

/// Rebuilds the assistant message from the deltas.
fn reassemble(events: &[Value]) -> Value {
    let mut msg = Map::new();
    let mut rd: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    let mut tcs: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    for d in deltas(events) {
        for (k, v) in d.as_object().unwrap() {
            match k.as_str() {
                "role" => {
                    msg.insert("role".into(), v.clone());
                }
                "content" | "reasoning_content" | "reasoning" => {
                    append(&mut msg, k, v.as_str().unwrap())
                }
                "reasoning_details" => {
                    for item in v.as_array().unwrap() {
                        let entry = rd.entry(item["index"].as_u64().unwrap()).or_default();
                        for (ik, iv) in item.as_object().unwrap() {
                            if ik == "text" {
                                append(entry, "text", iv.as_str().unwrap());
                            } else {
                                entry.insert(ik.clone(), iv.clone());
                            }
                        }
                    }
                }
                "tool_calls" => {
                    for tc in v.as_array().unwrap() {
                        let entry = tcs.entry(tc["index"].as_u64().unwrap()).or_default();
                        for key in ["id", "type"] {
                            if let Some(x) = tc.get(key) {
                                entry.insert(key.into(), x.clone());
                            }
                        }
                        if let Some(f) = tc.get("function") {
                            let func = entry
                                .entry("function")
                                .or_insert_with(|| json!({}))
                                .as_object_mut()
                                .unwrap();
                            if let Some(n) = f.get("name") {
                                func.insert("name".into(), n.clone());
                            }
                            if let Some(a) = f.get("arguments") {
                                append(func, "arguments", a.as_str().unwrap());
                            }
                        }
                    }
                }
                other => panic!("unexpected delta key {other}"),
            }
        }
    }
    msg.entry("content").or_insert(Value::Null);
    if !rd.is_empty() {
        msg.insert(
            "reasoning_details".into(),
            Value::Array(rd.into_values().map(Value::Object).collect()),
        );
    }
    if !tcs.is_empty() {
        msg.insert(
            "tool_calls".into(),
            Value::Array(tcs.into_values().map(Value::Object).collect()),
        );
    }
    Value::Object(msg)
}

// ---------------------------------------------------------------- request builders

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn req(model: &str, messages: Vec<Value>) -> Value {
    json!({"model": model, "messages": messages})
}

fn tool_turn_plain(rc: Option<&str>) -> Value {
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

fn deepseek_error(message: &str) -> Value {
    json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": null,
        "code": "invalid_request_error"
    }})
}

const V4_TEXT: &str =
    "The `reasoning_content` in the thinking mode must be passed back to the API.";

// ---------------------------------------------------------------- deepseek

#[tokio::test]
async fn deepseek_v4_requires_reasoning_content_on_every_assistant_turn() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    assert_eq!(sim.profile(), "deepseek-v4");
    let plain = |rc: Option<Value>| {
        let mut a = json!({"role": "assistant", "content": "hi"});
        if let Some(rc) = rc {
            a["reasoning_content"] = rc;
        }
        req("deepseek-v4-pro", vec![user("a"), a, user("b")])
    };
    for bad in [
        plain(None),
        plain(Some(json!(""))),
        plain(Some(Value::Null)),
        req(
            "deepseek-v4-pro",
            vec![
                user("a"),
                tool_turn_plain(None),
                json!({"role":"tool","tool_call_id":"call_1","content":"x"}),
            ],
        ),
    ] {
        let r = post(&sim, &bad).await;
        assert_eq!(r.status, 400);
        assert_eq!(r.json(), deepseek_error(V4_TEXT));
    }
    // A single space (the pad) and real text are accepted.
    let m = ok_message(&sim, &plain(Some(json!(" ")))).await;
    assert!(!m["reasoning_content"].as_str().unwrap().is_empty());
    ok_message(&sim, &plain(Some(json!("I thought")))).await;
    // Thinking disabled: nothing required, and the reply carries no reasoning.
    let mut off = plain(None);
    off["thinking"] = json!({"type": "disabled"});
    let m = ok_message(&sim, &off).await;
    assert!(m.get("reasoning_content").is_none());
    // Thinking explicitly enabled behaves as the default.
    let mut on = plain(None);
    on["thinking"] = json!({"type": "enabled"});
    assert_eq!(post(&sim, &on).await.status, 400);
    // Unknown message fields are not enforced (UNCONFIRMED in PROVIDERS.md).
    let mut extra = plain(Some(json!("t")));
    extra["messages"][1]["reasoning_details"] = json!([]);
    ok_message(&sim, &extra).await;
}

#[tokio::test]
async fn deepseek_v3_requires_reasoning_content_on_tool_call_turns() {
    let sim = Sim::start("deepseek-v3").await.unwrap();
    let tool = json!({"role":"tool","tool_call_id":"call_1","content":"x"});
    let bad = req(
        "deepseek-reasoner",
        vec![
            json!({"role":"system","content":"s"}),
            user("a"),
            tool_turn_plain(None),
            tool.clone(),
        ],
    );
    let r = post(&sim, &bad).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        deepseek_error(
            "Missing `reasoning_content` field in the assistant message at message index 2. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
        )
    );
    // Present (even empty) on the tool-call turn: accepted.
    for rc in ["", "thought"] {
        let good = req(
            "deepseek-reasoner",
            vec![user("a"), tool_turn_plain(Some(rc)), tool.clone()],
        );
        let m = ok_message(&sim, &good).await;
        assert!(m["reasoning_content"].is_string());
    }
    // A plain assistant turn without tool calls needs nothing.
    let plain = req(
        "deepseek-reasoner",
        vec![
            user("a"),
            json!({"role":"assistant","content":"hi"}),
            user("b"),
        ],
    );
    ok_message(&sim, &plain).await;
    // Thinking disabled: the tool-call turn needs nothing either.
    let mut off = bad.clone();
    off["thinking"] = json!({"type": "disabled"});
    ok_message(&sim, &off).await;
}

// ---------------------------------------------------------------- mistral

fn mistral_error(detail: Value) -> Value {
    json!({
        "object": "error",
        "message": {"detail": detail},
        "type": "invalid_request_error",
        "param": null,
        "code": null
    })
}

fn extra(loc: Value, input: Value) -> Value {
    json!({"type": "extra_forbidden", "loc": loc, "msg": "Extra inputs are not permitted", "input": input})
}

#[tokio::test]
async fn mistral_refuses_unknown_keys_with_422() {
    let sim = Sim::start("mistral").await.unwrap();
    let body = req(
        "mistral-medium-latest",
        vec![
            user("a"),
            json!({"role":"assistant","content":"hi","reasoning_content":"think"}),
            user("b"),
        ],
    );
    let r = post(&sim, &body).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json(),
        mistral_error(json!([extra(
            json!(["body", "messages", 1, "assistant", "reasoning_content"]),
            json!("think")
        )]))
    );

    // tool_calls[].name, function extras, user extras and top-level max_completion_tokens.
    let body = json!({
        "model": "mistral-medium-latest",
        "max_completion_tokens": 10,
        "messages": [
            {"role":"user","content":"a","name":"bob"},
            {"role":"assistant","content":"","tool_calls":[{"id":"abc123def","type":"function","name":"f",
                "function":{"name":"f","arguments":"{}","thought_signature":"sig"}}]},
            {"role":"tool","tool_call_id":"abc123def","name":"f","content":"x"}
        ]
    });
    let r = post(&sim, &body).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json(),
        mistral_error(json!([
            extra(json!(["body", "max_completion_tokens"]), json!(10)),
            extra(json!(["body", "messages", 0, "user", "name"]), json!("bob")),
            extra(
                json!(["body", "messages", 1, "assistant", "tool_calls", 0, "name"]),
                json!("f")
            ),
            extra(
                json!([
                    "body",
                    "messages",
                    1,
                    "assistant",
                    "tool_calls",
                    0,
                    "function",
                    "thought_signature"
                ]),
                json!("sig")
            ),
        ]))
    );

    // The documented schema is accepted, and the reply carries no reasoning field.
    let good = req(
        "mistral-medium-latest",
        vec![
            json!({"role":"system","content":"s"}),
            user("a"),
            json!({"role":"assistant","content":"","prefix":false,"tool_calls":[{"id":"abc123def","type":"function","index":0,
                "function":{"name":"f","arguments":"{}"}}]}),
            json!({"role":"tool","tool_call_id":"abc123def","name":"f","content":"x"}),
        ],
    );
    let m = ok_message(&sim, &good).await;
    assert_eq!(
        m.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["role", "content"]
    );
}

// ---------------------------------------------------------------- openai / local

#[tokio::test]
async fn openai_refuses_unknown_top_level_arguments_only() {
    let sim = Sim::start("openai").await.unwrap();
    for arg in ["thinking", "reasoning", "enable_thinking"] {
        let mut body = req("gpt-4o-mini", vec![user("a")]);
        body[arg] = json!({"type": "enabled"});
        let r = post(&sim, &body).await;
        assert_eq!(r.status, 400);
        assert_eq!(
            r.json(),
            json!({"error": {
                "message": format!("Unrecognized request argument supplied: {arg}"),
                "type": "invalid_request_error",
                "param": null,
                "code": null
            }})
        );
    }
    // Known arguments and unknown *message* keys are accepted.
    let body = json!({
        "model": "gpt-4o-mini", "stream": false, "temperature": 0.2, "max_completion_tokens": 100,
        "reasoning_effort": "low", "tools": [], "tool_choice": "auto", "parallel_tool_calls": true,
        "seed": 1, "store": false, "verbosity": "low",
        "messages": [user("a"), {"role":"assistant","content":"x","reasoning_content":"t","reasoning_details":[]}, user("b")]
    });
    let m = ok_message(&sim, &body).await;
    assert_eq!(
        m.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["role", "content"]
    );
}

#[tokio::test]
async fn local_accepts_anything_and_returns_reasoning_content() {
    let sim = Sim::start("local").await.unwrap();
    let body = json!({
        "model": "qwen3", "whatever": 1, "thinking": {"type": "enabled"},
        "messages": [user("a"), {"role":"assistant","content":"x","reasoning":"r","bogus":[1]}, user("b")]
    });
    let m = ok_message(&sim, &body).await;
    assert!(m["reasoning_content"].as_str().unwrap().len() > 3);
}

#[tokio::test]
async fn bad_json_and_unknown_path() {
    for p in PROFILES {
        let sim = Sim::start(p).await.unwrap();
        let r = send(
            &sim.base_url(),
            "POST",
            "/v1/chat/completions",
            b"{not json",
        )
        .await;
        assert_eq!(r.status, 400, "{p}");
        let v = r.json();
        let msg = if *p == "mistral" {
            &v["message"]
        } else {
            &v["error"]["message"]
        };
        assert!(msg.as_str().unwrap().len() > 10, "{p}: {v}");
        let r = send(&sim.base_url(), "GET", "/v1/models", b"").await;
        assert_eq!(r.status, 404);
        let r = send(&sim.base_url(), "GET", "/chat/completions", b"").await;
        assert_eq!(r.status, 405);
        let rec = sim.requests();
        assert_eq!(
            rec.iter().map(|r| r.status).collect::<Vec<_>>(),
            [400, 404, 405]
        );
        assert_eq!(rec[0].raw, b"{not json");
        assert_eq!(rec[0].body, Value::Null);
        assert_eq!(rec[1].path, "/v1/models");
    }
    let openai = Sim::start("openai").await.unwrap();
    let r = send(&openai.base_url(), "POST", "/chat/completions", b"nope").await;
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("We could not parse the JSON body of your request.")
    );
    assert!(matches!(
        Sim::start("groq").await,
        Err(hermes_sim::SimError::UnknownProfile(p)) if p == "groq"
    ));
}

// ---------------------------------------------------------------- openrouter signed items

const OR_MODEL: &str = "anthropic/claude-sonnet-4.5";

fn upstream_message(v: &Value) -> String {
    assert_eq!(v["error"]["message"], "Provider returned error");
    assert_eq!(v["error"]["code"], 400);
    assert_eq!(v["error"]["metadata"]["provider_name"], "Anthropic");
    let raw: Value = serde_json::from_str(v["error"]["metadata"]["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["type"], "error");
    assert_eq!(raw["error"]["type"], "invalid_request_error");
    raw["error"]["message"].as_str().unwrap().to_owned()
}

fn flip_one_byte(s: &str, at: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[tokio::test]
async fn openrouter_verifies_replayed_signed_items() {
    let sim = Sim::start("openrouter").await.unwrap();
    let first = vec![
        json!({"role":"system","content":"be brief"}),
        user("[tools=1] what time is it"),
    ];
    let m = ok_message(&sim, &req(OR_MODEL, first.clone())).await;
    let rd = m["reasoning_details"].as_array().unwrap();
    assert_eq!(rd.len(), 2);
    assert_eq!(rd[0]["type"], "reasoning.text");
    assert_eq!(rd[0]["format"], "anthropic-claude-v1");
    assert_eq!(rd[0]["index"], 0);
    assert_eq!(rd[1]["type"], "reasoning.encrypted");
    assert_eq!(rd[1]["index"], 1);
    assert_eq!(m["reasoning"], rd[0]["text"]);
    let text = rd[0]["text"].as_str().unwrap();
    let sig = rd[0]["signature"].as_str().unwrap();
    assert!(Sim::verify_signature(OR_MODEL, text, sig));
    assert!(!Sim::verify_signature("openai/gpt-5", text, sig));
    assert!(Sim::verify_encrypted(
        OR_MODEL,
        rd[1]["data"].as_str().unwrap()
    ));
    assert_eq!(Sim::sign(OR_MODEL, text), sig);

    let call_id = m["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    let history = |assistant: Value| {
        let mut msgs = first.clone();
        msgs.push(assistant);
        msgs.push(json!({"role":"tool","tool_call_id":call_id,"content":"12:00"}));
        msgs
    };

    // Untouched: accepted, by this process and by a fresh simulator (same default key).
    let reply = ok_message(&sim, &req(OR_MODEL, history(m.clone()))).await;
    assert!(reply["content"].as_str().unwrap().contains("12:00"));
    let fresh = Sim::start("openrouter").await.unwrap();
    ok_message(&fresh, &req(OR_MODEL, history(m.clone()))).await;

    // Dropped: never required.
    let mut dropped = m.clone();
    dropped.as_object_mut().unwrap().remove("reasoning_details");
    ok_message(&sim, &req(OR_MODEL, history(dropped))).await;

    // One-byte changes in text, signature or encrypted data; another model; another key.
    let sig_text = "messages.1.content.0: Invalid `signature` in `thinking` block";
    let mut t = m.clone();
    t["reasoning_details"][0]["text"] = json!(flip_one_byte(text, 5));
    let mut s = m.clone();
    s["reasoning_details"][0]["signature"] = json!(flip_one_byte(sig, 2));
    let mut d = m.clone();
    let data = m["reasoning_details"][1]["data"].as_str().unwrap();
    d["reasoning_details"][1]["data"] = json!(flip_one_byte(data, 4));
    for (bad, expect) in [
        (t, sig_text.to_owned()),
        (s, sig_text.to_owned()),
        (
            d,
            "messages.1.content.1: Invalid `signature` in `thinking` block".to_owned(),
        ),
    ] {
        let r = post(&sim, &req(OR_MODEL, history(bad))).await;
        assert_eq!(r.status, 400);
        assert_eq!(upstream_message(&r.json()), expect);
    }
    let r = post(&sim, &req("anthropic/claude-opus-4.5", history(m.clone()))).await;
    assert_eq!(r.status, 400);
    assert_eq!(upstream_message(&r.json()), sig_text);
    let other_key = Sim::start_with_key("openrouter", Switches::default(), b"k2".to_vec())
        .await
        .unwrap();
    assert_eq!(
        post(&other_key, &req(OR_MODEL, history(m.clone())))
            .await
            .status,
        400
    );

    // Recording: path, parsed body, raw bytes, status and response text.
    let rec = sim.requests();
    assert_eq!(rec.len(), 7);
    assert_eq!(rec[0].path, "/chat/completions");
    assert_eq!(rec[0].status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&rec[0].raw).unwrap(),
        rec[0].body
    );
    assert!(rec[0].response.contains("reasoning_details"));
    assert_eq!(rec[6].status, 400);
    assert!(rec[6].response.contains("Provider returned error"));
    sim.clear_requests();
    assert!(sim.requests().is_empty());
}

// ---------------------------------------------------------------- switches

#[tokio::test]
async fn reject_message_field_switch() {
    let replay = |model: &str| {
        req(
            model,
            vec![
                user("a"),
                json!({"role":"assistant","content":"x","reasoning_content":" ","reasoning_details":[{"type":"reasoning.text","text":"t"}]}),
                user("b"),
            ],
        )
    };
    let sw = Switches::default().reject_message_field("reasoning_details");
    let or = Sim::start_with("openrouter", sw.clone()).await.unwrap();
    let r = post(&or, &replay(OR_MODEL)).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"error": {"message": "Unrecognized request argument supplied: messages.1.reasoning_details", "code": 400}})
    );
    or.set_switches(Switches::default());
    ok_message(&or, &replay(OR_MODEL)).await;

    let ds = Sim::start_with("deepseek-v4", sw.clone()).await.unwrap();
    let r = post(&ds, &replay("deepseek-v4-flash")).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        deepseek_error("Unrecognized request argument supplied: messages.1.reasoning_details")
    );

    let oa = Sim::start_with(
        "openai",
        Switches::default().reject_message_field("reasoning_content"),
    )
    .await
    .unwrap();
    let r = post(&oa, &replay("gpt-5")).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "Unrecognized request argument supplied: messages.1.reasoning_content"
    );

    let local = Sim::start_with(
        "local",
        Switches::default().reject_message_field("reasoning"),
    )
    .await
    .unwrap();
    ok_message(&local, &replay("qwen3")).await;
    let mut with_r = replay("qwen3");
    with_r["messages"][1]["reasoning"] = json!("r");
    assert_eq!(post(&local, &with_r).await.status, 400);

    // Mistral answers the switch with its own 422 (here for a key its schema allows).
    let mi = Sim::start_with(
        "mistral",
        Switches::default().reject_message_field("prefix"),
    )
    .await
    .unwrap();
    let body = req(
        "mistral-small-latest",
        vec![
            user("a"),
            json!({"role":"assistant","content":"x","prefix":true}),
        ],
    );
    let r = post(&mi, &body).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json(),
        mistral_error(json!([extra(
            json!(["body", "messages", 1, "assistant", "prefix"]),
            json!(true)
        )]))
    );
}

// ---------------------------------------------------------------- streams

fn count_deltas(events: &[Value], pick: impl Fn(&Value) -> Option<&Value>) -> usize {
    deltas(events)
        .into_iter()
        .filter(|d| pick(d).is_some())
        .count()
}

#[tokio::test]
async fn streams_split_fields_and_reassemble_to_the_non_streamed_reply() {
    for p in PROFILES {
        let sim = Sim::start(p).await.unwrap();
        for text in ["hello there, simulator", "[tools=2] go"] {
            let body = req("some/model-1", vec![user(text)]);
            let whole = ok_message(&sim, &body).await;
            let s = post_stream(&sim, &body).await;
            assert!(s.done, "{p}: ends with [DONE]");
            assert_eq!(reassemble(&s.events), whole, "{p} {text}");

            // Every chunk is a chat.completion.chunk; the last one has finish_reason and usage.
            for e in &s.events {
                assert_eq!(e["object"], "chat.completion.chunk");
            }
            let last = s.events.last().unwrap();
            let fr = if text.starts_with("[tools") {
                "tool_calls"
            } else {
                "stop"
            };
            assert_eq!(last["choices"][0]["finish_reason"], fr);
            assert!(last["usage"]["total_tokens"].as_u64().unwrap() > 0);
            for e in &s.events[..s.events.len() - 1] {
                assert!(e["choices"][0]["finish_reason"].is_null());
            }

            // Every string field arrives in at least three deltas.
            let content_n = count_deltas(&s.events, |d| d.get("content"));
            if whole["content"].is_string() {
                assert!(content_n >= 3, "{p}: content in {content_n} deltas");
            } else {
                assert_eq!(content_n, 0);
            }
            for key in ["reasoning_content", "reasoning"] {
                let n = count_deltas(&s.events, |d| d.get(key));
                if whole.get(key).is_some() {
                    assert!(n >= 3, "{p}: {key} in {n} deltas");
                } else {
                    assert_eq!(n, 0, "{p}: no {key}");
                }
            }
            if whole.get("tool_calls").is_some() {
                let tc: Vec<&Value> = deltas(&s.events)
                    .into_iter()
                    .filter_map(|d| d.get("tool_calls"))
                    .map(|t| &t[0])
                    .collect();
                assert!(tc.len() >= 3);
                assert!(tc[0]["id"].as_str().unwrap().starts_with("call_1_"));
                assert_eq!(tc[0]["type"], "function");
                assert_eq!(tc[0]["function"]["name"], "now");
                for t in &tc {
                    assert_eq!(t["index"], 0);
                    assert!(t["function"]["arguments"].is_string());
                }
                for t in &tc[1..] {
                    assert!(t.get("id").is_none());
                }
            }
            if whole.get("reasoning_details").is_some() {
                let items: Vec<&Value> = deltas(&s.events)
                    .into_iter()
                    .filter_map(|d| d.get("reasoning_details"))
                    .flat_map(|a| a.as_array().unwrap())
                    .collect();
                let text_items: Vec<&&Value> = items.iter().filter(|i| i["index"] == 0).collect();
                assert!(text_items.len() >= 4);
                let (sig_delta, text_deltas) = text_items.split_last().unwrap();
                assert!(text_deltas.len() >= 3);
                for t in text_deltas {
                    assert!(t["text"].is_string() && t.get("signature").is_none());
                }
                assert!(sig_delta["signature"].is_string());
                assert!(sig_delta.get("text").is_none(), "signature alone");
                let enc: Vec<&&Value> = items.iter().filter(|i| i["index"] == 1).collect();
                assert_eq!(enc.len(), 1, "encrypted item whole in one delta");
                assert_eq!(*enc[0], &whole["reasoning_details"][1]);
            }

            // The HTTP body arrives in small byte chunks that cut events mid-line.
            assert!(s.resp.chunks.len() > 20);
            assert!(s.resp.chunks.iter().any(|c| !c.ends_with(b"\n")));
            assert!(s.resp.chunks.iter().all(|c| c.len() < 32));
        }
        // The stream was recorded with the SSE text sent.
        let rec = sim.requests();
        assert_eq!(rec.last().unwrap().body["stream"], true);
        assert!(rec.last().unwrap().response.ends_with("data: [DONE]\n\n"));
    }
}

#[tokio::test]
async fn fail_mid_stream_sends_an_error_event_after_200() {
    let sim = Sim::start_with("openrouter", Switches::default().failing_mid_stream())
        .await
        .unwrap();
    let body = req(OR_MODEL, vec![user("hello")]);
    let s = post_stream(&sim, &body).await;
    assert_eq!(s.resp.status, 200);
    assert!(!s.done, "no [DONE] after the error");
    let (err, before) = s.events.split_last().unwrap();
    assert!(before.len() >= 2);
    assert_eq!(err["error"]["code"], 502);
    assert!(err["error"]["message"].is_string());
    assert_eq!(sim.requests()[0].status, 200);
    // Non-streamed requests are unaffected; switching off restores full streams.
    ok_message(&sim, &body).await;
    sim.set_switches(Switches::default());
    assert!(post_stream(&sim, &body).await.done);
}

// ---------------------------------------------------------------- tool loop

async fn run_loop(sim: &Sim, model: &str, stream: bool) -> (Vec<String>, Value) {
    let mut messages = vec![user("What time is it? [tools=3]")];
    let mut ids = Vec::new();
    for _ in 0..10 {
        let body = req(model, messages.clone());
        let msg = if stream {
            let s = post_stream(sim, &body).await;
            assert!(s.done);
            reassemble(&s.events)
        } else {
            ok_message(sim, &body).await
        };
        let Some(calls) = msg.get("tool_calls").cloned() else {
            return (ids, msg);
        };
        messages.push(msg);
        for c in calls.as_array().unwrap() {
            assert_eq!(c["function"]["name"], "now");
            assert_eq!(c["function"]["arguments"], "{}");
            let id = c["id"].as_str().unwrap().to_owned();
            messages.push(json!({
                "role": "tool", "tool_call_id": id, "name": "now",
                "content": format!("2026-01-0{}T00:00:00Z", ids.len() + 1)
            }));
            ids.push(id);
        }
    }
    panic!("the loop did not end");
}

#[tokio::test]
async fn tools_3_runs_a_three_step_loop_on_every_profile() {
    for p in PROFILES {
        let sim = Sim::start(p).await.unwrap();
        for stream in [false, true] {
            let (ids, last) = run_loop(&sim, "some/model-1", stream).await;
            assert_eq!(ids.len(), 3, "{p}");
            for (i, id) in ids.iter().enumerate() {
                assert!(id.starts_with(&format!("call_{}_", i + 1)), "{id}");
            }
            let content = last["content"].as_str().unwrap();
            assert!(content.contains("Done after 3 tool calls"), "{content}");
            assert!(content.contains("2026-01-03T00:00:00Z"));
        }
        let (again, _) = run_loop(&sim, "some/model-1", false).await;
        let (first, _) = run_loop(&sim, "some/model-1", true).await;
        assert_eq!(again, first, "deterministic ids");
        assert!(sim.requests().iter().all(|r| r.status == 200), "{p}");
    }
}

// ---------------------------------------------------------------- standalone

#[tokio::test]
async fn standalone_binary_prints_base_url_first() {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hermes-sim"))
        .args(["deepseek-v3", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        line
    })
    .await
    .unwrap();
    let base = line.trim().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let r = send(
        &base,
        "POST",
        "/v1/chat/completions",
        req("deepseek-chat", vec![user("hi")])
            .to_string()
            .as_bytes(),
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(r.status, 200);
    assert!(r.json()["choices"][0]["message"]["reasoning_content"].is_string());
}
