//! The `openai-responses` profile over real loopback HTTP: bearer auth, the strict schema, the
//! `store:false` replay of verified reasoning items, reasoning ↔ item pairing, tool pairing, and
//! the SSE event sequence (with the failure and incomplete switches).

use hermes_sim::{OPENAI_RESPONSES_TOP_LEVEL, PROFILES, SIM_OPENAI_ORGANIZATION, Sim, Switches};
use serde_json::{Value, json};

use crate::common::{Resp, post_json, send};

const MODEL: &str = "gpt-5.2";
const PROFILE: &str = "openai-responses";

async fn post_to(sim: &Sim, path: &str, body: &Value) -> Resp {
    post_json(
        sim,
        path,
        &[("Authorization", "Bearer sk-test-secret")],
        body,
    )
    .await
}

async fn post(sim: &Sim, body: &Value) -> Resp {
    post_to(sim, "/v1/responses", body).await
}

/// A `store:false` request over `input` that asks for encrypted reasoning and summaries.
fn req(input: &[Value]) -> Value {
    json!({
        "model": MODEL,
        "input": input,
        "tools": [{"type": "function", "name": "now", "description": "The time.",
                   "parameters": {"type": "object", "properties": {}}}],
        "reasoning": {"effort": "high", "summary": "auto"},
        "store": false,
        "include": ["reasoning.encrypted_content"]
    })
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn output_for(call_id: &str, output: &str) -> Value {
    json!({"type": "function_call_output", "call_id": call_id, "output": output})
}

/// Posts and expects a 200 `response`; returns it.
async fn ok(sim: &Sim, body: &Value) -> Value {
    let r = post(sim, body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["object"], "response");
    v
}

/// Posts and expects `status` with exactly `message` (and `param` / `code`).
async fn refused(sim: &Sim, body: &Value, status: u16, message: &str) -> Value {
    let r = post(sim, body).await;
    assert_eq!(r.status, status, "{}", r.text());
    let e = r.json()["error"].clone();
    assert_eq!(e["message"], message, "{e}");
    assert_eq!(e["type"], "invalid_request_error");
    e
}

/// [`refused`] with 400, the status of most refusals.
async fn bad_request(sim: &Sim, body: &Value, message: &str) -> Value {
    refused(sim, body, 400, message).await
}

/// The output items of a response, as a client replays them.
fn output(v: &Value) -> Vec<Value> {
    v["output"].as_array().unwrap().clone()
}

/// The `call_id` of the response's function call.
fn call_id(v: &Value) -> String {
    output(v)
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs the first step of a `[tools=2]` loop; returns the input so far (user + the step's items,
/// without the tool output) and the call id.
async fn first_step(sim: &Sim) -> (Vec<Value>, String) {
    let mut input = vec![user("What time is it? [tools=2]")];
    let v = ok(sim, &req(&input)).await;
    let id = call_id(&v);
    input.extend(output(&v));
    (input, id)
}

/// [`first_step`]'s input with its call answered (`12:00`).
async fn first_step_answered(sim: &Sim) -> Vec<Value> {
    let (mut input, id) = first_step(sim).await;
    input.push(output_for(&id, "12:00"));
    input
}

// ---------------------------------------------------------------- table, auth, schema

#[tokio::test]
async fn the_profile_row_and_both_paths() {
    let info = PROFILES.iter().find(|p| p.name == PROFILE).unwrap();
    assert_eq!((info.provider, info.model), ("openai-responses", "gpt-5.2"));
    assert!(OPENAI_RESPONSES_TOP_LEVEL.contains(&"prompt_cache_key"));
    let sim = Sim::start(PROFILE).await.unwrap();
    for path in ["/v1/responses", "/responses"] {
        let r = post_to(&sim, path, &json!({"model": MODEL, "input": "hi"})).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    let r = post_to(&sim, "/v1/chat/completions", &json!({"model": MODEL})).await;
    assert_eq!(r.status, 404);
    let r = send(
        &sim.base_url(),
        "POST",
        "/v1/responses",
        &[],
        br#"{"model":"gpt-5.2","input":"hi"}"#,
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("You didn't provide an API key.")
    );
    // Every request is recorded, the bearer token redacted.
    let recorded = sim.requests();
    assert_eq!(recorded.len(), 4);
    assert_eq!(recorded[0].path, "/v1/responses");
    assert_eq!(recorded[1].path, "/responses");
    let auth = recorded[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap();
    assert_eq!(auth.1, "<redacted>");
    assert!(!String::from_utf8_lossy(&recorded[0].raw).is_empty());
    assert_eq!(recorded[0].body["input"], "hi");
    assert_eq!(recorded[3].status, 401);
}

#[tokio::test]
async fn unknown_parameters_are_refused_with_openai_s_text() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let mut body = req(&[user("hi")]);
    body["temperature"] = json!(0.2);
    let e = bad_request(&sim, &body, "Unknown parameter: 'temperature'.").await;
    assert_eq!(e["param"], "temperature");
    assert_eq!(e["code"], "unknown_parameter");

    // Inside an item, named by its path.
    let (mut input, _) = first_step(&sim).await;
    input[1]["foo"] = json!("bar");
    let e = bad_request(&sim, &req(&input), "Unknown parameter: 'input[1].foo'.").await;
    assert_eq!(e["param"], "input[1].foo");
    assert_eq!(e["code"], "unknown_parameter");

    let mut input = vec![user("hi")];
    input[0]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    bad_request(
        &sim,
        &req(&input),
        "Unknown parameter: 'input[0].content[0].cache_control'.",
    )
    .await;
    let mut body = req(&[user("hi")]);
    body["reasoning"]["budget_tokens"] = json!(1024);
    bad_request(&sim, &body, "Unknown parameter: 'reasoning.budget_tokens'.").await;
}

/// The Python original's issuer stamps on a replayed item, and a reasoning item without
/// `summary`: OpenAI's whole 400 envelope (the missing summary as reported in public issue
/// threads: `Missing required parameter: 'input[22].summary'.`, `param` the same path).
#[tokio::test]
async fn issuer_stamps_and_a_reasoning_item_without_summary_are_refused() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let input = first_step_answered(&sim).await;
    let mut stamped = input.clone();
    stamped[1]["_issuer_kind"] = json!("codex_responses");
    stamped[1]["_issuer_model"] = json!(MODEL);
    let mut bare = input.clone();
    assert_eq!(bare[1]["type"], "reasoning");
    bare[1].as_object_mut().unwrap().remove("summary");
    for (items, message, param, code) in [
        (
            &stamped,
            "Unknown parameter: 'input[1]._issuer_kind'.",
            "input[1]._issuer_kind",
            "unknown_parameter",
        ),
        (
            &bare,
            "Missing required parameter: 'input[1].summary'.",
            "input[1].summary",
            "missing_required_parameter",
        ),
    ] {
        let r = post(&sim, &req(items)).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(
            r.json(),
            json!({"error": {"message": message, "type": "invalid_request_error",
                             "param": param, "code": code}})
        );
    }
    // With `summary: []` and no stamp the same item is accepted.
    bare[1]["summary"] = json!([]);
    ok(&sim, &req(&bare)).await;
}

// ---------------------------------------------------------------- the replayed loop

#[tokio::test]
async fn a_three_step_loop_replayed_verbatim_with_store_false_is_accepted() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let mut input = vec![user("What time is it? [tools=3]")];
    let mut call_ids = Vec::new();
    for step in 1..=3 {
        let v = ok(&sim, &req(&input)).await;
        assert_eq!(v["status"], "completed");
        assert_eq!(v["model"], MODEL);
        assert!(v["id"].as_str().unwrap().starts_with("resp_"));
        let items = output(&v);
        assert_eq!(items.len(), 2, "step {step}: {items:?}");
        let (rs, fc) = (&items[0], &items[1]);
        assert_eq!(rs["type"], "reasoning");
        assert!(rs["id"].as_str().unwrap().starts_with("rs_"));
        assert!(!rs["encrypted_content"].as_str().unwrap().is_empty());
        assert_eq!(rs["summary"][0]["type"], "summary_text");
        assert!(
            rs["summary"][0]["text"]
                .as_str()
                .unwrap()
                .contains(&format!("step {step} of 3"))
        );
        assert_eq!(fc["type"], "function_call");
        assert_eq!(fc["name"], "now");
        assert!(fc["id"].as_str().unwrap().starts_with("fc_"));
        let id = fc["call_id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("call_"));
        assert!(!call_ids.contains(&id));
        let usage = &v["usage"];
        assert!(
            usage["output_tokens_details"]["reasoning_tokens"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert_eq!(
            usage["total_tokens"].as_u64().unwrap(),
            usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
        );
        input.extend(items);
        input.push(output_for(&id, &format!("12:0{step}")));
        call_ids.push(id);
    }
    let last = ok(&sim, &req(&input)).await;
    let items = output(&last);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["type"], "reasoning");
    let msg = &items[1];
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["role"], "assistant");
    assert!(msg["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(msg["content"][0]["type"], "output_text");
    assert_eq!(msg["content"][0]["annotations"], json!([]));
    assert!(
        msg["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Done after 3 tool calls.")
    );
    // The whole history, final turn included, replays on the next user turn.
    input.extend(items);
    input.push(user("thanks"));
    let v = ok(&sim, &req(&input)).await;
    assert_eq!(output(&v)[1]["type"], "message");
    assert_eq!(sim.requests().len(), 5);
    assert!(sim.requests().iter().all(|r| r.status == 200));
}

#[tokio::test]
async fn encrypted_content_is_included_only_when_asked_and_summaries_only_when_set() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let v = ok(&sim, &json!({"model": MODEL, "input": "hi"})).await;
    let rs = &output(&v)[0];
    assert_eq!(rs["encrypted_content"], Value::Null);
    assert_eq!(rs["summary"], json!([]));
    // Without the ciphertext, the item cannot be replayed when nothing is stored.
    let mut input = vec![user("hi")];
    input.extend(output(&v));
    input.push(user("again"));
    let mut body = req(&input);
    body.as_object_mut().unwrap().remove("include");
    let id = rs["id"].as_str().unwrap();
    refused(
        &sim,
        &body,
        404,
        &format!(
            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
        ),
    )
    .await;
}

#[tokio::test]
async fn a_changed_encrypted_content_byte_is_refused() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let mut input = first_step_answered(&sim).await;
    ok(&sim, &req(&input)).await;
    let enc = input[1]["encrypted_content"].as_str().unwrap().to_owned();
    let mut chars: Vec<char> = enc.chars().collect();
    let at = chars.len() / 2;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    input[1]["encrypted_content"] = json!(chars.into_iter().collect::<String>());
    let rs = input[1]["id"].as_str().unwrap().to_owned();
    let e = bad_request(&sim, &req(&input), &format!(
            "The encrypted content for item {rs} could not be verified. Reason: Encrypted content could not be decrypted or parsed."
        ),
    )
    .await;
    assert_eq!(e["code"], "invalid_encrypted_content");
    // Replayed to another model, it does not verify either.
    input[1]["encrypted_content"] = json!(enc);
    let mut body = req(&input);
    body["model"] = json!("gpt-5.4");
    let r = post(&sim, &body).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn ciphertext_of_another_organisation_is_refused() {
    let foreign = Sim::builder(hermes_sim::Profile::builtin(PROFILE).unwrap())
        .openai_organization("org-someone-else")
        .start()
        .await
        .unwrap();
    let (mut input, id) = first_step(&foreign).await;
    input.push(output_for(&id, "12:00"));
    // Its own organisation takes it back.
    ok(&foreign, &req(&input)).await;
    let sim = Sim::start(PROFILE).await.unwrap();
    assert_ne!(SIM_OPENAI_ORGANIZATION, "org-someone-else");
    let rs = input[1]["id"].as_str().unwrap().to_owned();
    let e = bad_request(&sim, &req(&input), &format!(
            "The encrypted content for item {rs} could not be verified. Reason: Encrypted content organization_id did not match the target organization."
        ),
    )
    .await;
    assert_eq!(e["code"], "invalid_encrypted_content");
}

// ---------------------------------------------------------------- pairing

#[tokio::test]
async fn a_reasoning_item_needs_its_following_item() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let (input, id) = first_step(&sim).await;
    let rs = input[1]["id"].as_str().unwrap().to_owned();
    // The function call dropped, the reasoning item left alone before a user message.
    let body = req(&[input[0].clone(), input[1].clone(), user("go on")]);
    let e = bad_request(
        &sim,
        &body,
        &format!(
            "Item '{rs}' of type 'reasoning' was provided without its required following item."
        ),
    )
    .await;
    assert_eq!(e["param"], "input");
    // At the end of the input too.
    let body = req(&input[..2]);
    bad_request(
        &sim,
        &body,
        &format!(
            "Item '{rs}' of type 'reasoning' was provided without its required following item."
        ),
    )
    .await;
    let mut whole = input.clone();
    whole.push(output_for(&id, "12:00"));
    ok(&sim, &req(&whole)).await;
}

#[tokio::test]
async fn a_function_call_with_its_id_needs_its_reasoning_item_but_not_without_the_id() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let (input, id) = first_step(&sim).await;
    let rs = input[1]["id"].as_str().unwrap().to_owned();
    let fc = input[2]["id"].as_str().unwrap().to_owned();
    let without_reasoning = vec![input[0].clone(), input[2].clone(), output_for(&id, "12:00")];
    let e = bad_request(&sim, &req(&without_reasoning), &format!(
            "Item '{fc}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
        ),
    )
    .await;
    assert_eq!(e["param"], "input");
    // The same call without its id is new to the API: accepted.
    let mut anonymous = without_reasoning.clone();
    anonymous[1].as_object_mut().unwrap().remove("id");
    ok(&sim, &req(&anonymous)).await;
    // A final message with its msg id needs its reasoning item too.
    let mut loop_input = input.clone();
    loop_input.push(output_for(&id, "12:00"));
    let step2 = ok(&sim, &req(&loop_input)).await;
    loop_input.extend(output(&step2));
    loop_input.push(output_for(&call_id(&step2), "12:01"));
    let last = ok(&sim, &req(&loop_input)).await;
    let items = output(&last);
    let msg = items[1]["id"].as_str().unwrap().to_owned();
    let rs_last = items[0]["id"].as_str().unwrap().to_owned();
    let mut next = loop_input.clone();
    next.push(items[1].clone());
    next.push(user("thanks"));
    bad_request(
        &sim,
        &req(&next),
        &format!("Item '{msg}' was provided without its required 'reasoning' item: '{rs_last}'."),
    )
    .await;
}

#[tokio::test]
async fn tool_calls_and_outputs_pair_by_call_id() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let (input, id) = first_step(&sim).await;
    let mut missing = input.clone();
    missing.push(user("never mind"));
    let e = bad_request(
        &sim,
        &req(&missing),
        &format!("No tool output found for function call {id}."),
    )
    .await;
    assert_eq!(e["param"], "input");
    let orphan = vec![user("hi"), output_for("call_nobody", "12:00")];
    bad_request(
        &sim,
        &req(&orphan),
        "No tool call found for function call output with call_id call_nobody.",
    )
    .await;
}

#[tokio::test]
async fn previous_response_id_is_never_found() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let v = ok(&sim, &json!({"model": MODEL, "input": "hi"})).await;
    let id = v["id"].as_str().unwrap();
    let body = json!({"model": MODEL, "input": "again", "previous_response_id": id});
    let e = bad_request(
        &sim,
        &body,
        &format!("Previous response with id '{id}' not found."),
    )
    .await;
    assert_eq!(e["code"], "previous_response_not_found");
    assert_eq!(e["param"], "previous_response_id");
}

// ---------------------------------------------------------------- SSE

struct Event {
    name: String,
    data: Value,
}

fn events(text: &str) -> Vec<Event> {
    assert!(text.ends_with("\n\n"), "{text}");
    let evs: Vec<Event> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str(), "event name = data type");
            Event { name, data }
        })
        .collect();
    for (n, e) in evs.iter().enumerate() {
        assert_eq!(e.data["sequence_number"], n, "{}", e.name);
    }
    evs
}

fn names(evs: &[Event]) -> Vec<&str> {
    evs.iter().map(|e| e.name.as_str()).collect()
}

/// The `name` events among `n`, asserted to be at least `at_least`.
fn deltas<'a>(n: &[&str], name: &'a str, at_least: usize) -> Vec<&'a str> {
    let count = n.iter().filter(|e| **e == name).count();
    assert!(
        count >= at_least,
        "{count} {name} events, expected at least {at_least}"
    );
    vec![name; count]
}

async fn stream(sim: &Sim, body: &Value) -> (Resp, Vec<Event>) {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let r = post(sim, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.headers.to_ascii_lowercase().contains("text/event-stream"));
    let evs = events(&r.text());
    (r, evs)
}

#[tokio::test]
async fn a_streamed_tool_step_has_incomplete_added_items_and_complete_done_items() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let (r, evs) = stream(&sim, &req(&[user("What time is it? [tools=1]")])).await;
    // Lines are cut across HTTP chunks.
    assert!(r.chunks.len() > 10);
    assert!(r.chunks.iter().any(|c| !c.ends_with(b"\n")));
    let n = names(&evs);
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
    ];
    expected.extend(deltas(&n, "response.reasoning_summary_text.delta", 3));
    expected.extend([
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
    ]);
    expected.extend(deltas(&n, "response.function_call_arguments.delta", 1));
    expected.extend([
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(n, expected);

    assert_eq!(evs[0].data["response"]["status"], "in_progress");
    assert_eq!(evs[0].data["response"]["output"], json!([]));
    // `.added`: incomplete items.
    let added: Vec<&Value> = evs
        .iter()
        .filter(|e| e.name == "response.output_item.added")
        .map(|e| &e.data["item"])
        .collect();
    assert_eq!(added[0]["type"], "reasoning");
    assert!(added[0].get("encrypted_content").is_none());
    assert_eq!(added[0]["summary"], json!([]));
    assert_eq!(added[1]["type"], "function_call");
    assert_eq!(added[1]["arguments"], "");
    assert_eq!(added[1]["status"], "in_progress");
    // `.done`: complete items, the same as in `response.completed`.
    let done: Vec<Value> = evs
        .iter()
        .filter(|e| e.name == "response.output_item.done")
        .map(|e| e.data["item"].clone())
        .collect();
    assert!(!done[0]["encrypted_content"].as_str().unwrap().is_empty());
    assert_eq!(done[1]["arguments"], "{}");
    assert_eq!(done[1]["status"], "completed");
    let completed = &evs.last().unwrap().data["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!(done));
    // The summary deltas add up to the summary.
    let summary: String = evs
        .iter()
        .filter(|e| e.name == "response.reasoning_summary_text.delta")
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, done[0]["summary"][0]["text"].as_str().unwrap());
    assert!(evs.iter().all(|e| {
        e.data
            .get("item_id")
            .is_none_or(|i| i == &done[0]["id"] || i == &done[1]["id"])
    }));
    // The streamed items replay like the non-streamed ones.
    let id = done[1]["call_id"].as_str().unwrap();
    let mut input = vec![user("What time is it? [tools=1]")];
    input.extend(done.clone());
    input.push(output_for(id, "12:00"));
    let (_, evs) = stream(&sim, &req(&input)).await;
    let n = names(&evs);
    for e in [
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
    ] {
        assert!(n.contains(&e), "{e} in {n:?}");
    }
    let text: String = evs
        .iter()
        .filter(|e| e.name == "response.output_text.delta")
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    let completed = &evs.last().unwrap().data["response"];
    assert_eq!(completed["output"][1]["content"][0]["text"], text.as_str());
    assert_eq!(completed["output"][1]["type"], "message");
}

#[tokio::test]
async fn the_failure_switch_ends_the_stream_with_response_failed() {
    let sim = Sim::start_with(PROFILE, Switches::default().failing_mid_stream())
        .await
        .unwrap();
    let (_, evs) = stream(&sim, &req(&[user("hi [tools=1]")])).await;
    let n = names(&evs);
    assert_eq!(*n.last().unwrap(), "response.failed", "{n:?}");
    assert!(!n.contains(&"response.completed"));
    assert!(!n.contains(&"response.output_item.done"));
    assert!(n.contains(&"response.reasoning_summary_text.delta"));
    let resp = &evs.last().unwrap().data["response"];
    assert_eq!(resp["status"], "failed");
    assert_eq!(resp["error"]["code"], "server_error");
    // Non-streamed requests are unaffected.
    ok(&sim, &req(&[user("hi")])).await;
}

#[tokio::test]
async fn the_incomplete_switch_stops_after_the_reasoning_item() {
    let sim = Sim::start_with(PROFILE, Switches::default().reaching_max_output_tokens())
        .await
        .unwrap();
    let v = ok(&sim, &req(&[user("hi [tools=1]")])).await;
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(output(&v).len(), 1);
    assert_eq!(output(&v)[0]["type"], "reasoning");
    let (_, evs) = stream(&sim, &req(&[user("hi [tools=1]")])).await;
    let n = names(&evs);
    assert_eq!(*n.last().unwrap(), "response.incomplete", "{n:?}");
    assert!(!n.contains(&"response.completed"));
    assert_eq!(evs.last().unwrap().data["response"]["status"], "incomplete");
}

// ---------------------------------------------------------------- the client's own tools

#[tokio::test]
async fn the_script_calls_the_clients_first_tool_with_schema_valid_arguments() {
    let sim = Sim::start(PROFILE).await.unwrap();
    // The OpenAI Agents SDK's strict schemas: every property required, extras forbidden.
    let tools = json!([
        {"type": "function", "name": "lookup", "strict": true, "parameters": {"type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": ["integer", "null"]},
                "mode": {"$ref": "#/$defs/Mode"}},
            "required": ["query", "limit", "mode"], "additionalProperties": false,
            "$defs": {"Mode": {"type": "string", "enum": ["fast", "deep"]}}}},
        {"type": "function", "name": "other", "parameters": {"type": "object", "properties": {}}}
    ]);
    let want = json!({"query": "x", "limit": 0, "mode": "fast"});
    let mut body = req(&[user("Look it up [tools=1]")]);
    body["tools"] = tools;
    let v = ok(&sim, &body).await;
    let call = output(&v)
        .into_iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(call["name"], "lookup");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, want);
    let (_, evs) = stream(&sim, &body).await;
    let done = evs
        .iter()
        .find(|e| e.name == "response.function_call_arguments.done")
        .unwrap();
    let streamed: Value = serde_json::from_str(done.data["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(streamed, want);
    // The output of the failed call is read back in the answer.
    let mut input = vec![user("Look it up [tools=1]")];
    input.extend(output(&v));
    input.push(output_for(
        call["call_id"].as_str().unwrap(),
        "error: no such query",
    ));
    let mut next = req(&input);
    next["tools"] = body["tools"].clone();
    let last = ok(&sim, &next).await;
    let text = last["output"].to_string();
    assert!(
        text.contains("The last `lookup` result was: error: no such query"),
        "{text}"
    );
}

// -------------------------------------------------------- prefix binding (docs/spec.md §5a)

#[tokio::test]
async fn reasoning_after_a_changed_prefix_is_dropped_silently_and_noted() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let input = first_step_answered(&sim).await;
    // Same prefix: accepted, nothing noted.
    ok(&sim, &req(&input)).await;
    assert!(sim.requests().last().unwrap().notes.is_empty());
    let rs = input[1]["id"].as_str().unwrap().to_owned();
    assert!(rs.starts_with("rs_"), "{rs}");
    let dropped =
        format!("input[1]: reasoning item {rs} dropped (the prefix changed since it was made)");

    // Changed instructions: accepted (never refused), the drop noted.
    let mut body = req(&input);
    body["instructions"] = json!("Today is 2026-09-01.");
    ok(&sim, &body).await;
    assert_eq!(sim.requests().last().unwrap().notes, vec![dropped.clone()]);
    // A tool added mid-conversation likewise.
    let mut body = req(&input);
    body["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "function", "name": "date", "parameters": {"type": "object"}}));
    ok(&sim, &body).await;
    assert_eq!(sim.requests().last().unwrap().notes, vec![dropped.clone()]);
    // An edited earlier input item likewise.
    let mut edited = input.clone();
    edited[0] = user("What time is it now? [tools=2]");
    ok(&sim, &req(&edited)).await;
    assert_eq!(sim.requests().last().unwrap().notes, vec![dropped]);
    // The string form of the same first message is the same prefix.
    let mut same = input.clone();
    same[0] = json!({"role": "user", "content": "What time is it? [tools=2]"});
    ok(&sim, &req(&same)).await;
    assert!(sim.requests().last().unwrap().notes.is_empty());
}

// ---------------------------------------------------------------- compaction (docs/spec.md §7)

/// `POST /v1/responses/compact` over `input`; the 200 `response.compaction` object.
async fn compact(sim: &Sim, input: &[Value]) -> Value {
    let body = json!({"model": MODEL, "input": input});
    let r = post_to(sim, "/v1/responses/compact", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["object"], "response.compaction");
    v
}

#[tokio::test]
async fn a_compact_endpoint_item_stands_for_what_it_compacted_and_keeps_later_reasoning() {
    let sim = Sim::start(PROFILE).await.unwrap();
    // Turn 1 (a finished loop of one step), then turn 2's first step.
    let mut input = vec![user("What time is it? [tools=1]")];
    let v = ok(&sim, &req(&input)).await;
    let id = call_id(&v);
    input.extend(output(&v));
    input.push(output_for(&id, "12:00"));
    input.extend(output(&ok(&sim, &req(&input)).await));
    let span = input.len();
    input.push(user("And the date? [tools=1]"));
    let v = ok(&sim, &req(&input)).await;
    let id = call_id(&v);
    input.extend(output(&v));
    input.push(output_for(&id, "2026-12-06"));

    // Compact turn 1: its user message, then one sealed compaction item.
    let c = compact(&sim, &input[..span]).await;
    assert!(sim.requests().last().unwrap().notes.is_empty());
    let out = output(&c);
    assert_eq!(out.len(), 2, "{c}");
    assert_eq!(out[0]["role"], "user");
    let item = out[1].clone();
    assert_eq!(item["type"], "compaction");
    assert!(
        item["encrypted_content"]
            .as_str()
            .is_some_and(|e| !e.is_empty())
    );

    // Turn 2 after the compaction item: its reasoning item is kept (nothing noted).
    let mut next = vec![item.clone()];
    next.extend_from_slice(&input[span..]);
    ok(&sim, &req(&next)).await;
    assert!(
        sim.requests().last().unwrap().notes.is_empty(),
        "{:?}",
        sim.requests().last().unwrap().notes
    );
    // Without it, turn 2's reasoning follows another prefix: dropped, and noted.
    ok(&sim, &req(&input[span..])).await;
    assert_eq!(sim.requests().last().unwrap().notes.len(), 1);
    // Items before the latest compaction item are dropped by the server, and noted.
    let mut late = vec![user("earlier")];
    late.extend(next.clone());
    ok(&sim, &req(&late)).await;
    assert_eq!(
        sim.requests().last().unwrap().notes,
        vec![
            "input[0]: message item dropped (it comes before the latest compaction item, input[1])"
        ]
    );

    // A changed byte is refused; so is the item sent to another model.
    let mut tampered = next.clone();
    let enc = item["encrypted_content"].as_str().unwrap();
    let mut chars: Vec<char> = enc.chars().collect();
    let at = chars.len() / 2;
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    tampered[0]["encrypted_content"] = json!(chars.into_iter().collect::<String>());
    let cmp = item["id"].as_str().unwrap().to_owned();
    let unreadable = format!(
        "The encrypted content for item {cmp} could not be verified. Reason: Encrypted content could not be decrypted or parsed."
    );
    let e = bad_request(&sim, &req(&tampered), &unreadable).await;
    assert_eq!(e["code"], "invalid_encrypted_content");
    let mut other = req(&next);
    other["model"] = json!("gpt-5.1");
    let r = post(&sim, &other).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["message"], unreadable);
}

#[tokio::test]
async fn past_its_compact_threshold_a_reply_begins_with_a_compaction_item() {
    let sim = Sim::start(PROFILE).await.unwrap();
    let input = vec![user("What time is it? [tools=1]")];
    let mut body = req(&input);
    // Below the threshold: no compaction item.
    body["context_management"] = json!([{"type": "compaction", "compact_threshold": 100000}]);
    let v = ok(&sim, &body).await;
    assert!(output(&v).iter().all(|i| i["type"] != "compaction"));
    // Past it: the compaction item first, then the step; streamed the same.
    body["context_management"] = json!([{"type": "compaction", "compact_threshold": 10}]);
    let v = ok(&sim, &body).await;
    let out = output(&v);
    assert_eq!(out[0]["type"], "compaction", "{v}");
    assert_eq!(out[1]["type"], "reasoning");
    // Replayed from the compaction item on, the step's reasoning is kept.
    let mut next = out.clone();
    next.push(output_for(&call_id(&v), "12:00"));
    let v2 = ok(&sim, &req(&next)).await;
    assert!(sim.requests().last().unwrap().notes.is_empty());
    assert!(output(&v2).iter().any(|i| i["type"] == "message"));
    body["stream"] = json!(true);
    let (r, evs) = stream(&sim, &body).await;
    assert_eq!(r.status, 200);
    let first = evs
        .iter()
        .find(|e| e.name == "response.output_item.done")
        .unwrap();
    assert_eq!(first.data["output_index"], 0);
    assert_eq!(first.data["item"]["type"], "compaction");
    // A malformed entry is refused.
    body["stream"] = json!(false);
    body["context_management"] = json!([{"type": "trim"}]);
    bad_request(
        &sim,
        &body,
        "Invalid value: 'trim'. Supported values are: 'compaction'.",
    )
    .await;
}
