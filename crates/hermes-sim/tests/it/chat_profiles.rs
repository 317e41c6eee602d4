//! The chat-completions profiles and what every profile shares (switches, spec profiles, tool
//! call pairing, the standalone binary), over real loopback HTTP with a tiny hand-written client.

use std::collections::BTreeMap;

use hermes_sim::{PROFILES, Sim, SimBuilder, Switches};
use serde_json::{Map, Value, json};

use crate::common::{self, Resp};

/// The chat-completions profiles (the `anthropic` profile speaks the Messages API, the `bedrock`
/// profile AWS Bedrock Runtime, the `gemini` profile Google's generateContent, the
/// `openai-responses` profile OpenAI's Responses API; their tests are in the modules `anthropic`,
/// `bedrock`, `gemini` and `openai_responses`).
fn chat_profiles() -> impl Iterator<Item = &'static hermes_sim::ProfileInfo> {
    PROFILES
        .iter()
        .filter(|p| !["anthropic", "bedrock", "gemini", "openai-responses"].contains(&p.name))
}

async fn send(base: &str, method: &str, path: &str, body: &[u8]) -> Resp {
    common::send(base, method, path, &[], body).await
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
                "content" | "reasoning_content" | "reasoning" | "reasoning_text" => {
                    append(&mut msg, k, v.as_str().unwrap())
                }
                "extra_content" | "reasoning_opaque" => {
                    msg.insert(k.clone(), v.clone());
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
                        for key in ["id", "type", "extra_content"] {
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
                            if let Some(sig) = f.get("thought_signature") {
                                func.insert("thought_signature".into(), sig.clone());
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

/// The message of an error body in any profile's envelope (wrapped, array-wrapped or top level).
/// The keys of the object `v`, in order.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn error_text(v: &Value) -> String {
    let inner = v.get(0).unwrap_or(v);
    let m = inner
        .get("error")
        .map_or(&inner["message"], |e| &e["message"]);
    m.as_str().map_or_else(|| m.to_string(), str::to_owned)
}

// ---------------------------------------------------------------- request builders

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn req(model: &str, messages: Vec<Value>) -> Value {
    json!({"model": model, "messages": messages})
}

fn tool_turn_plain(rc: Option<&str>) -> Value {
    let call =
        json!({"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}});
    with_rc(
        json!({"role": "assistant", "content": "", "tool_calls": [call]}),
        rc,
    )
}

/// Assistant message `m`, with `reasoning_content` `rc` when given.
fn with_rc(mut m: Value, rc: Option<&str>) -> Value {
    if let Some(rc) = rc {
        m["reasoning_content"] = json!(rc);
    }
    m
}

/// The opening messages (a `system` message, then the user's `text`) and the assistant message
/// `model` answers them with.
async fn first_turn(sim: &Sim, model: &str, system: &str, text: &str) -> (Vec<Value>, Value) {
    let first = vec![json!({"role":"system","content":system}), user(text)];
    let m = ok_message(sim, &req(model, first.clone())).await;
    (first, m)
}

/// `first`, then the `assistant` turn and the tool's answer `12:00` to its call `call_id`.
fn answered(first: &[Value], assistant: Value, call_id: &str) -> Vec<Value> {
    let mut msgs = first.to_vec();
    msgs.push(assistant);
    msgs.push(json!({"role":"tool","tool_call_id":call_id,"content":"12:00"}));
    msgs
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
    // Unknown message fields are not enforced (UNCONFIRMED in docs/providers.md).
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

/// Mistral's 422 for the extra key `field` (sent as `input`) on the assistant message 1.
async fn extra_assistant_field_refused(sim: &Sim, body: &Value, field: &str, input: Value) {
    let r = post(sim, body).await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json(),
        mistral_error(json!([extra(
            json!(["body", "messages", 1, "assistant", field]),
            input
        )]))
    );
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
    extra_assistant_field_refused(&sim, &body, "reasoning_content", json!("think")).await;

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
    assert_eq!(keys(&m), ["role", "content"]);
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
    assert_eq!(keys(&m), ["role", "content"]);
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
    for p in chat_profiles().map(|p| p.name) {
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
        let msg = error_text(&v);
        assert!(msg.len() > 10, "{p}: {v}");
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
    let err = Sim::start("nope").await.unwrap_err();
    assert!(matches!(&err, hermes_sim::SimError::UnknownProfile(p) if p == "nope"));
    let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
    assert_eq!(
        err.to_string(),
        format!(
            "unknown profile `nope`, expected one of {}",
            names.join(", ")
        )
    );
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
    let (first, m) = first_turn(&sim, OR_MODEL, "be brief", "[tools=1] what time is it").await;
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
    let history = |assistant: Value| answered(&first, assistant, &call_id);

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
    extra_assistant_field_refused(&mi, &body, "prefix", json!(true)).await;
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
    for p in chat_profiles().map(|p| p.name) {
        let sim = Sim::start(p).await.unwrap();
        for text in ["hello there, simulator", "[tools=2] go"] {
            let body = req("some/model-1", vec![user(text)]);
            let whole = ok_message(&sim, &body).await;
            let s = post_stream(&sim, &body).await;
            assert!(s.done, "{p}: ends with [DONE]");
            assert_eq!(reassemble(&s.events), whole, "{p} {text}");

            // Every chunk is a chat.completion.chunk; the last one has finish_reason and usage
            // (OpenAI: no usage unless asked, `openai_streams_usage_only_when_asked`).
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
            if p == "openai" {
                assert!(s.events.iter().all(|e| e.get("usage").is_none()), "{p}");
            } else {
                assert!(last["usage"]["total_tokens"].as_u64().unwrap() > 0, "{p}");
            }
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
            for key in ["reasoning_content", "reasoning", "reasoning_text"] {
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

/// OpenAI streams usage only with `stream_options.include_usage`, in a chunk of its own with no
/// choices after the `finish_reason` chunk; the other chat profiles put it on that chunk unasked.
#[tokio::test]
async fn openai_streams_usage_only_when_asked() {
    let sim = Sim::start("openai").await.unwrap();
    let mut body = req("gpt-4.1", vec![user("hello")]);
    body["stream_options"] = json!({"include_usage": true});
    let s = post_stream(&sim, &body).await;
    assert!(s.done);
    let (usage, before) = s.events.split_last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        before.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    assert!(before.iter().all(|e| e.get("usage").is_none()));
    body["stream_options"] = json!({"include_usage": false});
    let s = post_stream(&sim, &body).await;
    assert!(s.events.iter().all(|e| e.get("usage").is_none()));
    assert_eq!(
        s.events.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
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
    for p in chat_profiles().map(|p| p.name) {
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

/// The client's own tools, Claude Code's `Read` first (its JSON schema).
fn client_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "Read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"},
                "offset": {"type": "integer"}}, "required": ["file_path"],
                "additionalProperties": false}}},
        {"type": "function", "function": {"name": "Write", "parameters": {"type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"]}}}
    ])
}

#[tokio::test]
async fn the_script_calls_the_clients_first_tool_with_schema_valid_arguments_on_every_profile() {
    for p in chat_profiles().map(|p| p.name) {
        let sim = Sim::start(p).await.unwrap();
        let mut body = req("some/model-1", vec![user("Read it [tools=1]")]);
        body["tools"] = client_tools();
        for stream in [false, true] {
            let msg = if stream {
                let s = post_stream(&sim, &body).await;
                assert!(s.done);
                reassemble(&s.events)
            } else {
                ok_message(&sim, &body).await
            };
            let call = &msg["tool_calls"][0]["function"];
            assert_eq!(call["name"], "Read", "{p}: {msg}");
            let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(args, json!({"file_path": "x"}), "{p} (stream {stream})");
        }
        // With `now` declared too, `now` is called, with `{}`.
        let mut tools = client_tools();
        tools
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "function", "function": {
            "name": "now", "parameters": {"type": "object", "properties": {}}}}));
        body["tools"] = tools;
        let msg = ok_message(&sim, &body).await;
        assert_eq!(msg["tool_calls"][0]["function"]["name"], "now", "{p}");
        assert_eq!(msg["tool_calls"][0]["function"]["arguments"], "{}", "{p}");
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

// ---------------------------------------------------------------- issue 5 profiles

/// Posts and expects exactly `status` and `body`.
async fn refused(sim: &Sim, req_body: &Value, status: u16, body: Value) {
    let r = post(sim, req_body).await;
    assert_eq!(r.status, status, "{}: {}", sim.profile(), r.text());
    assert_eq!(r.json(), body, "{}", sim.profile());
}

fn tool_result() -> Value {
    json!({"role":"tool","tool_call_id":"call_1","content":"12:00"})
}

fn plain_turn(rc: Option<&str>) -> Value {
    with_rc(json!({"role": "assistant", "content": "hi"}), rc)
}

fn kimi_error(message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error"}})
}

fn kimi_missing(i: usize) -> Value {
    kimi_error(&format!(
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index {i}"
    ))
}

#[tokio::test]
async fn kimi_requires_reasoning_content_per_thinking_settings() {
    let sim = Sim::start("kimi").await.unwrap();
    let tool_loop = |model: &str, rc: Option<&str>| {
        req(
            model,
            vec![
                json!({"role":"system","content":"s"}),
                user("a"),
                tool_turn_plain(rc),
                tool_result(),
            ],
        )
    };
    // Tool-call turn without reasoning_content while thinking is on (the default).
    for model in ["kimi-k2.6", "kimi-k2.5", "kimi-k2-thinking"] {
        refused(&sim, &tool_loop(model, None), 400, kimi_missing(2)).await;
        let mut on = tool_loop(model, None);
        on["thinking"] = json!({"type": "enabled"});
        refused(&sim, &on, 400, kimi_missing(2)).await;
        // Present (placeholders included) is accepted; the reply carries reasoning_content.
        for rc in ["", ".", "thought"] {
            let m = ok_message(&sim, &tool_loop(model, Some(rc))).await;
            assert!(m["reasoning_content"].as_str().unwrap().len() > 10);
        }
        // Thinking disabled: nothing required, no reasoning in the reply.
        let mut off = tool_loop(model, None);
        off["thinking"] = json!({"type": "disabled"});
        let m = ok_message(&sim, &off).await;
        assert!(m.get("reasoning_content").is_none());
    }
    // Without keep, plain assistant turns need nothing.
    let plain = |model: &str, thinking: Value| {
        let mut b = req(model, vec![user("a"), plain_turn(None), user("b")]);
        if !thinking.is_null() {
            b["thinking"] = thinking;
        }
        b
    };
    ok_message(&sim, &plain("kimi-k2.6", Value::Null)).await;
    ok_message(
        &sim,
        &plain("kimi-k2.6", json!({"type":"enabled","keep":null})),
    )
    .await;
    // keep "all": every assistant message.
    refused(
        &sim,
        &plain("kimi-k2.6", json!({"type":"enabled","keep":"all"})),
        400,
        kimi_missing(1),
    )
    .await;
    let mut kept = plain("kimi-k2.6", json!({"type":"enabled","keep":"all"}));
    kept["messages"][1]["reasoning_content"] = json!(" ");
    ok_message(&sim, &kept).await;
    // Thinking settings a model does not take (k2.6: keep is null or "all"; k2.5 has no keep
    // parameter, simulator-chosen text; k2.7-code: thinking cannot be disabled, keep omitted or
    // "all").
    let k27_keep = "invalid thinking.keep for model kimi-k2.7-code: must be omitted or \"all\"";
    let rows = [
        (
            "k2.6 keeping the last",
            "kimi-k2.6",
            json!({"type":"enabled","keep":"last"}),
            "invalid thinking.keep for model kimi-k2.6: must be null or \"all\"",
        ),
        (
            "k2.5 with keep",
            "kimi-k2.5",
            json!({"type":"enabled","keep":"all"}),
            "thinking.keep is not a valid parameter for model kimi-k2.5",
        ),
        (
            "k2.7-code disabled",
            "kimi-k2.7-code",
            json!({"type":"disabled"}),
            "thinking cannot be disabled for model kimi-k2.7-code: thinking.type must be \"enabled\"",
        ),
        (
            "k2.7-code keeping null",
            "kimi-k2.7-code",
            json!({"type":"enabled","keep":null}),
            k27_keep,
        ),
        (
            "k2.7-code keeping none",
            "kimi-k2.7-code",
            json!({"type":"enabled","keep":"none"}),
            k27_keep,
        ),
    ];
    for (name, model, thinking, message) in rows {
        let r = post(&sim, &plain(model, thinking)).await;
        assert_eq!(r.status, 400, "{name}: {}", r.text());
        assert_eq!(r.json(), kimi_error(message), "{name}");
    }
    ok_message(&sim, &plain("kimi-k2.5", json!({"type":"enabled"}))).await;
    ok_message(&sim, &plain("kimi-k2.5", json!({"type":"disabled"}))).await;
    // k2.7-code: preserved thinking always on.
    refused(
        &sim,
        &plain("kimi-k2.7-code", Value::Null),
        400,
        kimi_missing(1),
    )
    .await;
    for thinking in [
        json!({"type":"enabled"}),
        json!({"type":"enabled","keep":"all"}),
    ] {
        let mut b = plain("kimi-k2.7-code", thinking);
        b["messages"][1]["reasoning_content"] = json!("t");
        ok_message(&sim, &b).await;
    }
    // thinking together with reasoning_effort (docs/spec.md §3b; simulator-chosen text); effort alone is fine.
    let mut both = plain("kimi-k2.6", json!({"type":"enabled","keep":"all"}));
    both["messages"][1]["reasoning_content"] = json!("t");
    both["reasoning_effort"] = json!("high");
    refused(
        &sim,
        &both,
        400,
        kimi_error("thinking and reasoning_effort cannot be used together; set only one of them"),
    )
    .await;
    both.as_object_mut().unwrap().remove("thinking");
    ok_message(&sim, &both).await;
    // Unknown message fields are not enforced (UNCONFIRMED).
    let mut extra = tool_loop("kimi-k2.6", Some("t"));
    extra["messages"][2]["reasoning_details"] = json!([]);
    ok_message(&sim, &extra).await;
}

#[tokio::test]
async fn mimo_requires_reasoning_content_on_tool_call_turns() {
    let sim = Sim::start("mimo").await.unwrap();
    let body = |model: &str, rc: Option<&str>| {
        req(model, vec![user("a"), tool_turn_plain(rc), tool_result()])
    };
    let mimo_error = json!({"error": {
        "message": "The reasoning_content in the thinking mode must be passed back to the API",
        "type": "invalid_request_error",
        "param": null,
        "code": null
    }});
    refused(&sim, &body("mimo-v2.5-pro", None), 400, mimo_error.clone()).await;
    let m = ok_message(&sim, &body("mimo-v2.5-pro", Some("thought"))).await;
    assert!(m["reasoning_content"].is_string());
    // Plain turns need nothing; unknown message fields are not enforced (UNCONFIRMED).
    let mut plain = req(
        "mimo-v2.5-pro",
        vec![user("a"), plain_turn(None), user("b")],
    );
    plain["messages"][1]["reasoning_details"] = json!([]);
    ok_message(&sim, &plain).await;
    // Thinking off (explicitly, or v2-flash's default): nothing required, no reasoning in the reply.
    let mut off = body("mimo-v2.5-pro", None);
    off["thinking"] = json!({"type": "disabled"});
    assert!(
        ok_message(&sim, &off)
            .await
            .get("reasoning_content")
            .is_none()
    );
    let flash = body("mimo-v2-flash", None);
    assert!(
        ok_message(&sim, &flash)
            .await
            .get("reasoning_content")
            .is_none()
    );
    let mut flash_on = flash;
    flash_on["thinking"] = json!({"type": "enabled"});
    refused(&sim, &flash_on, 400, mimo_error).await;
}

#[tokio::test]
async fn groq_refuses_unknown_assistant_keys() {
    let sim = Sim::start("groq").await.unwrap();
    let with = |field: &str, v: Value| {
        let mut a = json!({"role": "assistant", "content": "hi"});
        a[field] = v;
        req(
            "openai/gpt-oss-120b",
            vec![
                json!({"role":"system","content":"s"}),
                user("a"),
                a,
                user("b"),
            ],
        )
    };
    refused(
        &sim,
        &with("reasoning_content", json!("t")),
        400,
        kimi_error(
            "'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' : property 'reasoning_content' is unsupported)]",
        ),
    )
    .await;
    for field in ["reasoning", "reasoning_details", "refusal", "extra_content"] {
        refused(
            &sim,
            &with(field, json!("x")),
            400,
            kimi_error(&format!("property '{field}' is unsupported")),
        )
        .await;
    }
    // The documented schema passes; replies carry content only.
    let good = req(
        "openai/gpt-oss-120b",
        vec![
            json!({"role":"user","content":"a","name":"bob"}),
            json!({"role":"assistant","content":null,"name":"bot","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}),
            tool_result(),
        ],
    );
    let m = ok_message(&sim, &good).await;
    assert_eq!(keys(&m), ["role", "content"]);
    let mut parsed = req("qwen/qwen3-32b", vec![user("[tools=1] go")]);
    parsed["reasoning_format"] = json!("parsed");
    let m = ok_message(&sim, &parsed).await;
    assert_eq!(keys(&m), ["role", "content", "tool_calls"]);
}

#[tokio::test]
async fn cerebras_refuses_unknown_assistant_keys_with_a_top_level_body() {
    let sim = Sim::start("cerebras").await.unwrap();
    for field in ["reasoning_content", "reasoning", "reasoning_details"] {
        let body = req(
            "gpt-oss-120b",
            vec![
                json!({"role":"system","content":"s"}),
                user("a"),
                json!({"role":"assistant","content":"hi", field: "t"}),
                user("b"),
            ],
        );
        let path = format!("messages.2.assistant.{field}");
        refused(
            &sim,
            &body,
            400,
            json!({
                "message": format!("{path}: property '{path}' is unsupported"),
                "type": "invalid_request_error",
                "param": "validation_error",
                "code": "wrong_api_format"
            }),
        )
        .await;
    }
    let good = req(
        "gpt-oss-120b",
        vec![user("a"), tool_turn_plain(None), tool_result()],
    );
    let m = ok_message(&sim, &good).await;
    assert_eq!(keys(&m), ["role", "content"]);
}

// ---------------------------------------------------------------- gemini-openai

const GEMINI_MODEL: &str = "gemini-3-pro-preview";

fn google_error(message: &str) -> Value {
    json!([{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}])
}

fn gemini_missing(name: &str, position: usize) -> Value {
    google_error(&format!(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    ))
}

fn gemini_call(id: &str, sig: Option<&str>) -> Value {
    let mut c =
        json!({"id": id, "type": "function", "function": {"name": "now", "arguments": "{}"}});
    if let Some(sig) = sig {
        c["extra_content"] = json!({"google": {"thought_signature": sig}});
    }
    c
}

#[tokio::test]
async fn gemini_openai_refuses_unknown_top_level_names() {
    let sim = Sim::start("gemini-openai").await.unwrap();
    for name in ["reasoning", "thinking", "parallel_tool_calls", "google"] {
        let mut body = req(GEMINI_MODEL, vec![user("a")]);
        body[name] = json!({"x": 1});
        refused(
            &sim,
            &body,
            400,
            google_error(&format!(
                "Invalid JSON payload received. Unknown name \"{name}\": Cannot find field."
            )),
        )
        .await;
    }
    let mut body = req(GEMINI_MODEL, vec![user("a")]);
    for (k, v) in [
        ("stream", json!(false)),
        ("stream_options", json!({"include_usage": true})),
        ("temperature", json!(1)),
        ("top_p", json!(0.9)),
        ("n", json!(1)),
        ("stop", json!(["x"])),
        ("max_tokens", json!(100)),
        ("max_completion_tokens", json!(100)),
        ("tools", json!([])),
        ("tool_choice", json!("auto")),
        ("response_format", json!({"type": "text"})),
        ("reasoning_effort", json!("low")),
        ("seed", json!(1)),
        ("presence_penalty", json!(0)),
        ("frequency_penalty", json!(0)),
        ("user", json!("u")),
        (
            "extra_body",
            json!({"google": {"thinking_config": {"include_thoughts": false}}}),
        ),
    ] {
        body[k] = v;
    }
    let m = ok_message(&sim, &body).await;
    assert!(m.get("reasoning_content").is_none());
    assert_eq!(keys(&m), ["role", "content", "extra_content"]);
}

#[tokio::test]
async fn gemini_openai_thought_signatures() {
    let sim = Sim::start("gemini-openai").await.unwrap();
    let (first, m) = first_turn(&sim, GEMINI_MODEL, "s", "[tools=2] what time is it").await;
    assert_eq!(keys(&m), ["role", "content", "tool_calls"]);
    let call = &m["tool_calls"][0];
    let sig = call["extra_content"]["google"]["thought_signature"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(Sim::verify_encrypted(GEMINI_MODEL, &sig));
    assert!(!Sim::verify_encrypted("gemini-3-flash-preview", &sig));
    let call_id = call["id"].as_str().unwrap().to_owned();
    let history = |assistant: Value| answered(&first, assistant, &call_id);
    // The reply replays fine (and the loop goes on, with a signed second call).
    let next = ok_message(&sim, &req(GEMINI_MODEL, history(m.clone()))).await;
    assert!(next["tool_calls"][0]["extra_content"]["google"]["thought_signature"].is_string());
    // A one-byte change, or another model: refused (simulator-chosen text).
    let invalid = google_error(
        "Thought signature is not valid. Additional data, function call `default_api:now` , position 2.",
    );
    let mut t = m.clone();
    t["tool_calls"][0]["extra_content"]["google"]["thought_signature"] =
        json!(flip_one_byte(&sig, 2));
    refused(&sim, &req(GEMINI_MODEL, history(t)), 400, invalid.clone()).await;
    refused(
        &sim,
        &req("gemini-3-flash-preview", history(m.clone())),
        400,
        invalid,
    )
    .await;
    // Missing on the current turn's first call: refused with Gemini's text.
    let mut missing = m.clone();
    missing["tool_calls"][0]
        .as_object_mut()
        .unwrap()
        .remove("extra_content");
    refused(
        &sim,
        &req(GEMINI_MODEL, history(missing.clone())),
        400,
        gemini_missing("now", 2),
    )
    .await;
    let mut blank = m.clone();
    blank["tool_calls"][0]["extra_content"]["google"]["thought_signature"] = json!("");
    refused(
        &sim,
        &req(GEMINI_MODEL, history(blank)),
        400,
        gemini_missing("now", 2),
    )
    .await;
    // ...but accepted on an older turn (before the last user message).
    let mut older = history(missing.clone());
    older.push(json!({"role":"assistant","content":"It is noon."}));
    older.push(user("thanks"));
    ok_message(&sim, &req(GEMINI_MODEL, older)).await;
    // Models without the Gemini 3 requirement, and the reported bypass sentinel, are accepted.
    ok_message(&sim, &req("gemini-2.5-flash", history(missing))).await;
    let mut sentinel = m.clone();
    sentinel["tool_calls"][0]["extra_content"]["google"]["thought_signature"] =
        json!("skip_thought_signature_validator");
    ok_message(&sim, &req(GEMINI_MODEL, history(sentinel))).await;
    // Parallel calls: only the first carries a signature.
    let parallel = |a: Option<&str>, b: Option<&str>| {
        req(
            GEMINI_MODEL,
            vec![
                user("a"),
                json!({"role":"assistant","content":null,"tool_calls":[gemini_call("c1", a), gemini_call("c2", b)]}),
                json!({"role":"tool","tool_call_id":"c1","content":"1"}),
                json!({"role":"tool","tool_call_id":"c2","content":"2"}),
            ],
        )
    };
    ok_message(&sim, &parallel(Some(&sig), None)).await;
    refused(
        &sim,
        &parallel(None, Some(&sig)),
        400,
        gemini_missing("now", 1),
    )
    .await;
    // reasoning_content on a message: UNCONFIRMED, not enforced.
    let mut rc = m.clone();
    rc["reasoning_content"] = json!("t");
    ok_message(&sim, &req(GEMINI_MODEL, history(rc))).await;

    // Text replies: a message-level signature that verifies and replays; tampered is refused.
    let text = ok_message(&sim, &req(GEMINI_MODEL, vec![user("hello")])).await;
    let tsig = text["extra_content"]["google"]["thought_signature"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(Sim::verify_encrypted(GEMINI_MODEL, &tsig));
    let turn = |a: Value| req(GEMINI_MODEL, vec![user("hello"), a, user("again")]);
    ok_message(&sim, &turn(text.clone())).await;
    let mut bad = text.clone();
    bad["extra_content"]["google"]["thought_signature"] = json!(flip_one_byte(&tsig, 3));
    refused(
        &sim,
        &turn(bad),
        400,
        google_error("Thought signature is not valid. Additional data, content position 1."),
    )
    .await;
    let mut unsigned = text;
    unsigned.as_object_mut().unwrap().remove("extra_content");
    ok_message(&sim, &turn(unsigned)).await;
}

#[tokio::test]
async fn gemini_openai_stream_signature_placement() {
    let sim = Sim::start("gemini-openai").await.unwrap();
    let s = post_stream(&sim, &req(GEMINI_MODEL, vec![user("hello")])).await;
    let ds = deltas(&s.events);
    let contents: Vec<&&Value> = ds.iter().filter(|d| d.get("content").is_some()).collect();
    assert!(contents[0]["extra_content"]["google"]["thought_signature"].is_string());
    assert!(
        contents[1..]
            .iter()
            .all(|d| d.get("extra_content").is_none())
    );
    let s = post_stream(&sim, &req(GEMINI_MODEL, vec![user("[tools=1] go")])).await;
    let tcs: Vec<&Value> = deltas(&s.events)
        .into_iter()
        .filter_map(|d| d.get("tool_calls"))
        .collect();
    assert!(tcs[0][0]["extra_content"]["google"]["thought_signature"].is_string());
    assert!(tcs[1..].iter().all(|t| t[0].get("extra_content").is_none()));
}

// ---------------------------------------------------------------- copilot

const COPILOT_INVALID: &str = "invalid body request";

fn copilot_error() -> Value {
    json!({"error": {"message": COPILOT_INVALID, "code": "invalid_request_body"}})
}

#[tokio::test]
async fn copilot_verifies_replayed_opaque_and_signatures() {
    let sim = Sim::start("copilot").await.unwrap();
    for model in ["gpt-5-mini", "gemini-3-pro-preview"] {
        let first = vec![user("[tools=1] what time is it")];
        let m = ok_message(&sim, &req(model, first.clone())).await;
        assert!(m["reasoning_text"].as_str().unwrap().len() > 10);
        let opaque = m["reasoning_opaque"].as_str().unwrap().to_owned();
        assert!(Sim::verify_encrypted(model, &opaque));
        assert!(m.get("reasoning_content").is_none());
        let fsig = m["tool_calls"][0]["function"]
            .get("thought_signature")
            .cloned();
        assert_eq!(fsig.is_some(), model.contains("gemini"), "{model}");
        let call_id = m["tool_calls"][0]["id"].as_str().unwrap().to_owned();
        let history = |assistant: Value| req(model, answered(&first, assistant, &call_id));
        ok_message(&sim, &history(m.clone())).await;
        // Tampered opaque: refused (simulator-chosen text).
        let mut t = m.clone();
        t["reasoning_opaque"] = json!(flip_one_byte(&opaque, 2));
        refused(&sim, &history(t), 400, copilot_error()).await;
        // Another model's opaque: refused.
        let mut other = history(m.clone());
        other["model"] = json!("claude-sonnet-4.5");
        refused(&sim, &other, 400, copilot_error()).await;
        // Absent: accepted (relaxed), with or without reasoning_text.
        let mut absent = m.clone();
        absent.as_object_mut().unwrap().remove("reasoning_opaque");
        ok_message(&sim, &history(absent.clone())).await;
        absent.as_object_mut().unwrap().remove("reasoning_text");
        if let Some(sig) = fsig {
            let sig = sig.as_str().unwrap();
            assert!(Sim::verify_encrypted(model, sig));
            let mut bad = absent.clone();
            bad["tool_calls"][0]["function"]["thought_signature"] = json!(flip_one_byte(sig, 2));
            refused(&sim, &history(bad), 400, copilot_error()).await;
            absent["tool_calls"][0]["function"]
                .as_object_mut()
                .unwrap()
                .remove("thought_signature");
        }
        ok_message(&sim, &history(absent)).await;
    }
}

#[tokio::test]
async fn copilot_stream_sends_the_opaque_once_late() {
    let sim = Sim::start("copilot").await.unwrap();
    for model in ["gpt-5-mini", "gemini-3-pro-preview"] {
        for text in ["hello", "[tools=1] go"] {
            let body = req(model, vec![user(text)]);
            let whole = ok_message(&sim, &body).await;
            let s = post_stream(&sim, &body).await;
            assert_eq!(reassemble(&s.events), whole, "{model} {text}");
            let ds = deltas(&s.events);
            let texts = ds
                .iter()
                .filter(|d| d.get("reasoning_text").is_some())
                .count();
            assert!(texts >= 3);
            let at: Vec<usize> = ds
                .iter()
                .enumerate()
                .filter(|(_, d)| d.get("reasoning_opaque").is_some())
                .map(|(i, _)| i)
                .collect();
            assert_eq!(
                at,
                [ds.len() - 2],
                "once, in the last delta before the finish chunk"
            );
        }
    }
}

// ---------------------------------------------------------------- switches on the new profiles

#[tokio::test]
async fn switches_work_on_the_new_profiles() {
    let body = req(
        "some/model-1",
        vec![json!({"role":"user","content":"a","name":"bob"})],
    );
    for p in [
        "kimi",
        "mimo",
        "groq",
        "cerebras",
        "gemini-openai",
        "copilot",
    ] {
        let sim = Sim::start_with(p, Switches::default().reject_message_field("name"))
            .await
            .unwrap();
        let r = post(&sim, &body).await;
        assert_eq!(r.status, 400, "{p}");
        let text = error_text(&r.json());
        // Groq's real short form names no index ("property 'name' is unsupported").
        assert!(
            text.contains("'name'") || text.contains("name`") || text.contains(".name"),
            "{p}: {text}"
        );
        assert!(p == "groq" || text.contains('0'), "{p}: {text}");
        sim.set_switches(Switches::default().failing_mid_stream());
        let s = post_stream(&sim, &body).await;
        assert!(!s.done, "{p}");
        assert_eq!(s.events.last().unwrap()["error"]["code"], 502, "{p}");
        assert_eq!(sim.requests().len(), 2);
    }
}

// ---------------------------------------------------------------- profiles built from a spec

#[tokio::test]
async fn a_spec_profile_checks_its_rules_in_its_envelope() {
    use hermes_sim::{EchoTurns, ProfileSpec, ReplyCarrier, ValueRule};
    let spec = ProfileSpec::new("zeta")
        .top_level(["model", "messages", "stream", "mode", "keep"])
        .unknown_parameter_text("no such parameter: {name}")
        .param("keep", ValueRule::Boolean)
        .param("mode", ValueRule::one_of(["on", "off"]))
        .invalid_value_text("{name} must be {expected}")
        .assistant_keys(["role", "content", "tool_calls", "thought"])
        .unknown_field_text("{role} message {index}: `{field}` is not allowed")
        .must_echo("thought", EchoTurns::Every)
        .missing_echo_text("message {index} lacks `{field}`")
        .thinking_off_when("mode", "off")
        .reply_carrier(ReplyCarrier::ReasoningDetails)
        .error_envelope(json!([{"fault": {"text": "{message}", "status": 400}}]));
    let sim = Sim::builder(spec).start().await.unwrap();
    assert_eq!(sim.profile(), "zeta");
    let err = |t: &str| json!([{"fault": {"text": t, "status": 400}}]);
    let turn = |thought: Option<&str>| {
        let mut m = plain_turn(None);
        if let Some(t) = thought {
            m["thought"] = json!(t);
        }
        req("z-1", vec![user("a"), m, user("b")])
    };
    refused(&sim, &turn(None), 400, err("message 1 lacks `thought`")).await;
    let mut b = turn(Some(""));
    b["messages"][1]["reasoning_content"] = json!("r");
    refused(
        &sim,
        &b,
        400,
        err("assistant message 1: `reasoning_content` is not allowed"),
    )
    .await;
    let mut b = turn(Some(""));
    b["temperature"] = json!(1);
    refused(&sim, &b, 400, err("no such parameter: temperature")).await;
    let mut b = turn(Some(""));
    b["keep"] = json!("yes");
    refused(&sim, &b, 400, err("keep must be a boolean")).await;
    let mut b = turn(Some(""));
    b["mode"] = json!("max");
    refused(&sim, &b, 400, err("mode must be one of \"on\", \"off\"")).await;
    refused(
        &sim,
        &json!({"model": "z-1"}),
        400,
        err("Missing required parameter: 'messages'."),
    )
    .await;
    let r = send(&sim.base_url(), "POST", "/chat/completions", b"{oops").await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()[0]["fault"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse the request body as JSON")
    );

    // Accepted: replies carry signed reasoning_details while thinking, nothing with mode "off".
    let m = ok_message(&sim, &turn(Some(""))).await;
    let details = m["reasoning_details"].as_array().unwrap();
    assert!(Sim::verify_signature(
        "z-1",
        details[0]["text"].as_str().unwrap(),
        details[0]["signature"].as_str().unwrap()
    ));
    let mut off = turn(Some(""));
    off["mode"] = json!("off");
    let m = ok_message(&sim, &off).await;
    assert!(m.get("reasoning_details").is_none() && m.get("reasoning").is_none());

    // The switches use the spec's unknown-field text; streams reassemble to the whole reply.
    sim.set_switches(Switches::default().reject_message_field("content"));
    refused(
        &sim,
        &turn(Some("")),
        400,
        err("user message 0: `content` is not allowed"),
    )
    .await;
    sim.set_switches(Switches::default());
    let body = req("z-1", vec![user("[tools=2] go")]);
    let whole = ok_message(&sim, &body).await;
    let s = post_stream(&sim, &body).await;
    assert!(s.done);
    assert_eq!(reassemble(&s.events), whole);
}

#[tokio::test]
async fn an_empty_spec_accepts_anything_and_replies_with_reasoning_content() {
    let sim = Sim::builder(hermes_sim::ProfileSpec::new("open"))
        .switches(Switches::default())
        .key(b"another key".to_vec())
        .start()
        .await
        .unwrap();
    let body = json!({"model": "m", "anything": [1], "messages": [user("a"), {"role":"assistant","x":1}, user("b")]});
    let m = ok_message(&sim, &body).await;
    assert!(m["reasoning_content"].as_str().unwrap().len() > 3);
    assert_eq!(
        hermes_sim::Profile::builtin("mistral").unwrap().name(),
        "mistral"
    );
    assert!(hermes_sim::Profile::builtin("acme").is_err());
}

// ---------------------------------------------------------------- tool-call pairing (every profile)

const UNPAIRED_OPENAI: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";
const UNPAIRED_DEEPSEEK: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";
const ORPHAN: &str = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

/// An assistant tool-call turn the profile accepts apart from pairing: `reasoning_content`
/// where thinking needs it, the skip sentinel where Gemini needs a signature.
fn pairing_call_turn(profile: &str, ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| match profile {
            "gemini-openai" => gemini_call(id, Some("skip_thought_signature_validator")),
            _ => json!({"id": id, "type": "function", "function": {"name": "now", "arguments": "{}"}}),
        })
        .collect();
    let mut m = json!({"role": "assistant", "content": null, "tool_calls": calls});
    if matches!(profile, "deepseek-v4" | "deepseek-v3" | "kimi" | "mimo") {
        m["reasoning_content"] = json!("thinking");
    }
    m
}

fn pairing_text_turn(profile: &str, text: &str) -> Value {
    let mut m = json!({"role": "assistant", "content": text});
    if profile == "deepseek-v4" {
        m["reasoning_content"] = json!("thinking");
    }
    m
}

fn result_for(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "12:00"})
}

fn unpaired_text(profile: &str, ids: &str) -> String {
    match profile {
        "deepseek-v4" | "deepseek-v3" | "mimo" => UNPAIRED_DEEPSEEK.to_owned(),
        _ => format!("{UNPAIRED_OPENAI}{ids}"),
    }
}

#[tokio::test]
async fn every_profile_enforces_tool_call_pairing() {
    for info in chat_profiles() {
        let p = info.name;
        let sim = Sim::start(p).await.unwrap();
        let body = |messages: Vec<Value>| req(info.model, messages);
        let call = |ids: &[&str]| pairing_call_turn(p, ids);
        let unpaired = [
            // One of two calls answered, then the next user turn.
            (
                body(vec![
                    user("a"),
                    call(&["call_a", "call_b"]),
                    result_for("call_a"),
                    user("b"),
                ]),
                "call_b",
            ),
            // Neither answered, in an earlier turn.
            (
                body(vec![
                    user("a"),
                    call(&["call_a", "call_b"]),
                    pairing_text_turn(p, "ok"),
                    user("b"),
                ]),
                "call_a, call_b",
            ),
            // The history ends on the call.
            (body(vec![user("a"), call(&["call_x"])]), "call_x"),
        ];
        for (req_body, ids) in unpaired {
            let r = post(&sim, &req_body).await;
            assert_eq!(r.status, 400, "{p}: {}", r.text());
            assert_eq!(error_text(&r.json()), unpaired_text(p, ids), "{p}");
        }
        let orphans = [
            // A result after a turn without calls.
            body(vec![
                user("a"),
                pairing_text_turn(p, "ok"),
                result_for("call_z"),
            ]),
            // A result for an id the calls do not have.
            body(vec![user("a"), call(&["call_a"]), result_for("call_q")]),
            // A second result for the same call.
            body(vec![
                user("a"),
                call(&["call_a"]),
                result_for("call_a"),
                result_for("call_a"),
            ]),
            // A result in the first position.
            body(vec![result_for("call_a"), user("a")]),
        ];
        for req_body in orphans {
            let r = post(&sim, &req_body).await;
            assert_eq!(r.status, 400, "{p}: {}", r.text());
            assert_eq!(error_text(&r.json()), ORPHAN, "{p}");
        }
        // Well paired: results in any order right after their calls, over two loops.
        let paired = body(vec![
            user("a"),
            call(&["call_a", "call_b"]),
            result_for("call_b"),
            result_for("call_a"),
            call(&["call_c"]),
            result_for("call_c"),
            pairing_text_turn(p, "noon"),
            user("b"),
        ]);
        ok_message(&sim, &paired).await;
    }
}

#[tokio::test]
async fn pairing_refusals_use_each_profile_envelope() {
    let unpaired = |p: &str, model: &str| {
        req(
            model,
            vec![
                user("a"),
                pairing_call_turn(p, &["call_1", "call_2"]),
                user("b"),
            ],
        )
    };
    let orphan = |model: &str| req(model, vec![user("a"), result_for("call_9")]);

    let sim = Sim::start("openai").await.unwrap();
    let openai = |m: &str| json!({"error": {"message": m, "type": "invalid_request_error", "param": null, "code": null}});
    let text = format!("{UNPAIRED_OPENAI}call_1, call_2");
    refused(&sim, &unpaired("openai", "gpt-5"), 400, openai(&text)).await;
    refused(&sim, &orphan("gpt-5"), 400, openai(ORPHAN)).await;

    let sim = Sim::start("deepseek-v4").await.unwrap();
    let body = unpaired("deepseek-v4", "deepseek-v4-pro");
    refused(&sim, &body, 400, deepseek_error(UNPAIRED_DEEPSEEK)).await;
    refused(
        &sim,
        &orphan("deepseek-v4-pro"),
        400,
        deepseek_error(ORPHAN),
    )
    .await;

    let sim = Sim::start("gemini-openai").await.unwrap();
    let body = unpaired("gemini-openai", GEMINI_MODEL);
    refused(&sim, &body, 400, google_error(&text)).await;
    refused(&sim, &orphan(GEMINI_MODEL), 400, google_error(ORPHAN)).await;

    let sim = Sim::start("mimo").await.unwrap();
    let body = unpaired("mimo", "mimo-v2.5-pro");
    refused(&sim, &body, 400, openai(UNPAIRED_DEEPSEEK)).await;
}

#[tokio::test]
async fn the_scripted_tool_loop_stays_paired_on_the_wire() {
    // The simulator's own tool loop, replayed as hermes sends it, is accepted by every profile
    // (`tools_3_runs_a_three_step_loop_on_every_profile`); dropping one result is not.
    for p in ["openai", "deepseek-v4", "gemini-openai"] {
        let sim = Sim::start(p).await.unwrap();
        let model = PROFILES.iter().find(|i| i.name == p).unwrap().model;
        let mut messages = vec![user("What time is it? [tools=2]")];
        let first = ok_message(&sim, &req(model, messages.clone())).await;
        let id = first["tool_calls"][0]["id"].as_str().unwrap().to_owned();
        messages.push(first);
        let mut without = messages.clone();
        without.push(user("never mind"));
        let r = post(&sim, &req(model, without)).await;
        assert_eq!(r.status, 400, "{p}");
        assert_eq!(error_text(&r.json()), unpaired_text(p, &id), "{p}");
        messages.push(result_for(&id));
        ok_message(&sim, &req(model, messages)).await;
    }
}

#[tokio::test]
async fn a_spec_profile_pairs_tool_calls_by_default_with_overridable_texts() {
    use hermes_sim::ProfileSpec;
    let unpaired = req(
        "m",
        vec![
            user("a"),
            json!({"role":"assistant","content":null,"tool_calls":[{"id":"call_7","type":"function","function":{"name":"f","arguments":"{}"}}]}),
            user("b"),
        ],
    );
    let orphan = req("m", vec![user("a"), result_for("call_8")]);
    let openai = |m: &str| json!({"error": {"message": m, "type": "invalid_request_error", "param": null, "code": null}});

    let sim = Sim::builder(ProfileSpec::new("plain"))
        .start()
        .await
        .unwrap();
    let text = format!("{UNPAIRED_OPENAI}call_7");
    refused(&sim, &unpaired, 400, openai(&text)).await;
    refused(&sim, &orphan, 400, openai(ORPHAN)).await;

    let spec = ProfileSpec::new("own")
        .unpaired_calls_text("calls {ids} have no results")
        .orphan_result_text("result {id} answers nothing")
        .error_envelope(json!({"fault": "{message}"}));
    let sim = Sim::builder(spec).start().await.unwrap();
    refused(
        &sim,
        &unpaired,
        400,
        json!({"fault": "calls call_7 have no results"}),
    )
    .await;
    refused(
        &sim,
        &orphan,
        400,
        json!({"fault": "result call_8 answers nothing"}),
    )
    .await;

    let sim = Sim::builder(ProfileSpec::new("lax").without_tool_pairing())
        .start()
        .await
        .unwrap();
    ok_message(&sim, &unpaired).await;
    ok_message(&sim, &orphan).await;
}

/// How many of a stream's events end exactly where a transfer chunk ends, of how many events.
fn events_ending_at_chunk_ends(resp: &Resp) -> (usize, usize) {
    let mut chunk_ends = std::collections::BTreeSet::new();
    let mut at = 0;
    for chunk in &resp.chunks {
        at += chunk.len();
        chunk_ends.insert(at);
    }
    let body = resp.text();
    let event_ends: Vec<usize> = body.match_indices("\n\n").map(|(i, _)| i + 2).collect();
    let aligned = event_ends.iter().filter(|e| chunk_ends.contains(e)).count();
    (aligned, event_ends.len())
}

/// A `deepseek-v4` simulator set up by `setup`.
async fn deepseek_v4_with(setup: impl FnOnce(SimBuilder) -> SimBuilder) -> Sim {
    setup(Sim::builder(
        hermes_sim::Profile::builtin("deepseek-v4").unwrap(),
    ))
    .start()
    .await
    .unwrap()
}

/// `f`'s output and how long it took.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

#[tokio::test]
async fn a_chunk_delay_sends_each_event_apart_and_keeps_the_bytes() {
    let body = req("deepseek-v4-pro", vec![user("hello")]);
    let plain = Sim::start("deepseek-v4").await.unwrap();
    let unpaced = post_stream(&plain, &body).await;
    let delay = std::time::Duration::from_millis(20);
    let slow = deepseek_v4_with(|b| b.chunk_delay(delay)).await;
    let (paced, took) = timed(post_stream(&slow, &body)).await;

    // The same stream, byte for byte, still cut into small chunks.
    assert_eq!(paced.resp.text(), unpaced.resp.text());
    assert!(paced.done);
    assert!(paced.resp.chunks.iter().all(|c| c.len() < 32));
    // Unpaced, cuts run across event ends; paced, every event ends with a chunk, so the
    // events leave one at a time.
    let (aligned, events) = events_ending_at_chunk_ends(&unpaced.resp);
    assert!(
        aligned < events,
        "{aligned} of {events} events end a chunk unpaced"
    );
    let (aligned, events) = events_ending_at_chunk_ends(&paced.resp);
    assert!(events > 10, "{events} events");
    assert_eq!(aligned, events, "every paced event ends a chunk");
    // Each event after the first waited the delay (a lower bound: a sleep never ends early).
    let floor = delay * u32::try_from(events - 1).unwrap();
    assert!(took >= floor, "{took:?} < {floor:?} for {events} events");
}

#[tokio::test]
async fn a_reply_delay_holds_whole_and_streamed_answers_and_keeps_the_bytes() {
    let body = req("deepseek-v4-pro", vec![user("hello")]);
    let plain = Sim::start("deepseek-v4").await.unwrap();
    let unpaced_whole = post(&plain, &body).await;
    let unpaced_stream = post_stream(&plain, &body).await;
    let delay = std::time::Duration::from_millis(150);
    let slow = deepseek_v4_with(|b| b.reply_delay(delay)).await;

    // A whole reply: the same bytes, after at least the delay (a lower bound: a sleep never
    // ends early).
    let (whole, took) = timed(post(&slow, &body)).await;
    assert_eq!(whole.status, 200, "{}", whole.text());
    assert_eq!(whole.text(), unpaced_whole.text());
    assert!(
        took >= delay,
        "a whole reply came after {took:?}, before {delay:?}"
    );

    // A stream: the same events, its first byte after at least the delay (the whole exchange
    // is timed, so its first byte was not earlier than its end), unpaced between events.
    let (stream, took) = timed(post_stream(&slow, &body)).await;
    assert!(stream.done);
    assert_eq!(stream.resp.text(), unpaced_stream.resp.text());
    assert!(
        took >= delay,
        "a stream came after {took:?}, before {delay:?}"
    );
    // A refusal waits too: the delay is before any answer, not only before a success.
    let started = std::time::Instant::now();
    let refused = send(&slow.base_url(), "POST", "/chat/completions", b"{not json").await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert!(started.elapsed() >= delay);
}
