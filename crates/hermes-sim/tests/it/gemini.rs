//! The `gemini` profile over real loopback HTTP: the AI Studio and Vertex doors, the key in the
//! URL refused, the strict schema with Google's field violations, signed `thoughtSignature`s in
//! sequential and parallel tool loops (replayed verbatim, tampered, missing, misplaced), pairing,
//! thinking configuration per model generation, SSE and JSON-array streams, and signatures that
//! verify across the native and the OpenAI-compatible doors.

use hermes_sim::{PROFILES, Sim, Switches};
use serde_json::{Value, json};

use crate::common::{Resp, assert_header, post_json, send};

const MODEL: &str = "gemini-3-pro-preview";
const KEY: &str = "AIzaSyHERMESSIMTESTKEY";
/// AI Studio's API key header.
const STUDIO_KEY: &[(&str, &str)] = &[("x-goog-api-key", KEY)];

const MISSING_PREFIX: &str = "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:";
const CORRUPTED: &str = "Corrupted thought signature.";
const RESPONSE_AFTER_CALL: &str =
    "Please ensure that function response turn comes immediately after a function call turn.";
const RESPONSE_COUNT: &str = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
const CALL_AFTER_USER: &str = "Please ensure that function call turn comes immediately after a user turn or after a function response turn.";

fn missing(name: &str, position: usize) -> String {
    format!(
        "{MISSING_PREFIX}{name}` , position {position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
    )
}

// ---------------------------------------------------------------- requests

fn studio_path(model: &str, stream: bool) -> String {
    if stream {
        format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/v1beta/models/{model}:generateContent")
    }
}

fn vertex_path(model: &str, stream: bool) -> String {
    let verb = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    format!("/v1/projects/my-proj/locations/us-central1/publishers/google/models/{model}:{verb}")
}

/// Posts to the AI Studio door with the key header.
async fn post(sim: &Sim, model: &str, body: &Value) -> Resp {
    post_json(sim, &studio_path(model, false), STUDIO_KEY, body).await
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn body(contents: &[Value]) -> Value {
    json!({
        "contents": contents,
        "tools": [{"functionDeclarations": [{
            "name": "now",
            "description": "The current time",
            "parameters": {"type": "object", "properties": {}}
        }]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": true}}
    })
}

/// The 200 response's model content.
async fn ok(sim: &Sim, model: &str, contents: &[Value]) -> Value {
    let r = post(sim, model, &body(contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["candidates"][0]["finishReason"], "STOP", "{v}");
    assert_eq!(v["modelVersion"], model);
    assert!(v["responseId"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(v["usageMetadata"]["totalTokenCount"].as_u64().unwrap() > 0);
    let content = v["candidates"][0]["content"].clone();
    assert_eq!(content["role"], "model");
    content
}

/// The Google error of a refused request: (status, message).
fn error_of(r: &Resp) -> (String, String) {
    let v = r.json();
    assert_eq!(v["error"]["code"], r.status, "{v}");
    (
        v["error"]["status"].as_str().unwrap().to_owned(),
        v["error"]["message"].as_str().unwrap().to_owned(),
    )
}

async fn refused(sim: &Sim, model: &str, contents: &[Value], message: &str) {
    let r = post(sim, model, &body(contents)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        error_of(&r),
        ("INVALID_ARGUMENT".to_owned(), message.to_owned())
    );
}

fn calls(content: &Value) -> Vec<Value> {
    content["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("functionCall").cloned())
        .collect()
}

/// The user turn answering every call of `content`.
fn responses(content: &Value, result: &str) -> Value {
    let parts: Vec<Value> = calls(content)
        .iter()
        .map(|c| {
            let mut r = json!({"name": c["name"], "response": {"output": result}});
            if let Some(id) = c.get("id") {
                r["id"] = id.clone();
            }
            json!({"functionResponse": r})
        })
        .collect();
    json!({"role": "user", "parts": parts})
}

/// Flips one base64 character of a signature (staying valid base64).
fn tamper(sig: &str) -> String {
    let mut chars: Vec<char> = sig.chars().collect();
    chars[10] = if chars[10] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

fn degraded(r: &Resp) -> Option<String> {
    r.headers
        .lines()
        .find_map(|l| l.strip_prefix("x-hermes-sim-degraded: "))
        .map(str::to_owned)
}

/// Posts `contents` to [`MODEL`]: accepted, with a degradation note starting with `prefix`
/// (returned).
async fn accepted_with_note(sim: &Sim, contents: &[Value], prefix: &str) -> String {
    let r = post(sim, MODEL, &body(contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let note = degraded(&r).unwrap();
    assert!(note.starts_with(prefix), "{note}");
    note
}

/// Runs `[tools=3]` to the end; returns the whole history (user, 3 × (call, responses), final).
async fn three_step_loop(sim: &Sim) -> Vec<Value> {
    let mut contents = vec![user("What time is it? [tools=3]")];
    for step in 1..=3 {
        let content = ok(sim, MODEL, &contents).await;
        let parts = content["parts"].as_array().unwrap();
        assert_eq!(parts[0]["thought"], true, "{content}");
        assert!(
            parts[0]["text"]
                .as_str()
                .unwrap()
                .contains(&format!("Step {step} of 3"))
        );
        assert!(parts[0].get("thoughtSignature").is_none());
        assert_eq!(parts.len(), 2, "one call per sequential step: {content}");
        assert_eq!(parts[1]["functionCall"]["name"], "now");
        assert!(parts[1]["functionCall"]["id"].is_string());
        assert!(parts[1]["thoughtSignature"].as_str().unwrap().len() > 40);
        contents.push(content.clone());
        contents.push(responses(&content, &format!("12:0{step}")));
    }
    let last = ok(sim, MODEL, &contents).await;
    let parts = last["parts"].as_array().unwrap();
    assert!(calls(&last).is_empty());
    let answer = parts.last().unwrap();
    assert_eq!(
        answer["text"],
        "Done after 3 tool steps. The last `now` result was: 12:03"
    );
    assert!(answer["thoughtSignature"].as_str().unwrap().len() > 40);
    contents.push(last);
    contents
}

// ---------------------------------------------------------------- SSE

/// The chunks of an SSE body (`data: {…}\r\n\r\n` events).
fn sse_chunks(text: &str) -> Vec<Value> {
    assert!(text.ends_with("\r\n\r\n"), "CRLF events: {text:?}");
    text.split("\r\n\r\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            assert!(!e.contains('\n'), "one line per event: {e:?}");
            serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap()
        })
        .collect()
}

/// Every part of every chunk, in order.
fn streamed_parts(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

async fn stream(sim: &Sim, path: &str, headers: &[(&str, &str)], contents: &[Value]) -> Resp {
    let r = post_json(sim, path, headers, &body(contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r
}

/// [`stream`] on AI Studio's door with the API key, for [`MODEL`].
async fn studio_stream(sim: &Sim, contents: &[Value]) -> Resp {
    stream(sim, &studio_path(MODEL, true), STUDIO_KEY, contents).await
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn the_profile_is_in_the_table_and_serves_both_base_forms() {
    let info = PROFILES.iter().find(|p| p.name == "gemini").unwrap();
    assert_eq!(info.provider, "gemini");
    assert_eq!(info.model, MODEL);
    let sim = Sim::start("gemini").await.unwrap();
    assert_eq!(sim.profile(), "gemini");
    let contents = [user("hello")];
    // `{base}/models/{model}:generateContent` with base `http://127.0.0.1:PORT/v1beta`, and with
    // the bare base.
    for path in [
        format!("/v1beta/models/{MODEL}:generateContent"),
        format!("/models/{MODEL}:generateContent"),
    ] {
        let r = post_json(&sim, &path, STUDIO_KEY, &body(&contents)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let text = &r.json()["candidates"][0]["content"]["parts"][1]["text"];
        assert_eq!(
            text,
            "Hello from the scripted model gemini-3-pro-preview. You said: hello"
        );
    }
    let r = post_json(&sim, "/v1/chat/completions", STUDIO_KEY, &body(&contents)).await;
    assert_eq!(r.status, 404);
    assert_eq!(error_of(&r).0, "NOT_FOUND");
}

#[tokio::test]
async fn unknown_names_are_refused_at_every_level_with_field_violations() {
    let sim = Sim::start("gemini").await.unwrap();
    let mut b =
        body(&[json!({"role": "user", "parts": [{"text": "hi", "reasoning_content": "x"}]})]);
    b["generationConfig"]["thinkingConfig"]["effort"] = json!("high");
    b["tools"][0]["functionDeclarations"][0]["parameters"]["additionalProperties"] = json!(false);
    b["stream"] = json!(true);
    let r = post(&sim, MODEL, &b).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    let expected = [
        (
            Some("contents[0].parts[0]"),
            "Invalid JSON payload received. Unknown name \"reasoning_content\" at 'contents[0].parts[0]': Cannot find field.",
        ),
        (
            Some("tools[0].function_declarations[0].parameters"),
            "Invalid JSON payload received. Unknown name \"additionalProperties\" at 'tools[0].function_declarations[0].parameters': Cannot find field.",
        ),
        (
            Some("generation_config.thinking_config"),
            "Invalid JSON payload received. Unknown name \"effort\" at 'generation_config.thinking_config': Cannot find field.",
        ),
        (
            None,
            "Invalid JSON payload received. Unknown name \"stream\": Cannot find field.",
        ),
    ];
    assert_eq!(v["error"]["status"], "INVALID_ARGUMENT");
    let joined: Vec<&str> = expected.iter().map(|(_, d)| *d).collect();
    assert_eq!(v["error"]["message"], joined.join("\n"));
    let details = &v["error"]["details"][0];
    assert_eq!(
        details["@type"],
        "type.googleapis.com/google.rpc.BadRequest"
    );
    let violations = details["fieldViolations"].as_array().unwrap();
    assert_eq!(violations.len(), expected.len());
    for (got, (field, description)) in violations.iter().zip(expected) {
        assert_eq!(got["description"], description);
        assert_eq!(got["field"].as_str(), field);
    }
    // The recorded request is the refused one.
    let rec = sim.requests().pop().unwrap();
    assert_eq!(rec.status, 400);
    assert_eq!(rec.body, b);

    // snake_case spellings are the same fields.
    let snake = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generation_config": {"thinking_config": {"include_thoughts": true, "thinking_level": "low"}},
        "system_instruction": {"parts": [{"text": "be brief"}]}
    });
    let r = post(&sim, MODEL, &snake).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Types: a number where a string goes, a bad base64 signature, text and functionCall in one part.
    let typed = json!({"contents": [
        {"role": "user", "parts": [{"text": 5}]},
        {"role": "model", "parts": [{"functionCall": {"name": "now", "args": {}}, "thoughtSignature": "not base64!"}]},
        {"role": "user", "parts": [{"text": "x", "functionResponse": {"name": "now", "response": {}}}]}
    ]});
    let r = post(&sim, MODEL, &typed).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        error_of(&r).1,
        [
            "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5",
            "Invalid value at 'contents[1].parts[0].thought_signature' (TYPE_BYTES), Base64 decoding failed for \"not base64!\"",
            "Invalid JSON payload received. Oneof field 'data' is already set. Cannot set 'functionResponse'",
        ]
        .join("\n")
    );

    // Empty contents and empty parts.
    let r = post(&sim, MODEL, &json!({"contents": []})).await;
    assert_eq!(
        error_of(&r).1,
        "* GenerateContentRequest.contents: contents is not specified\n"
    );
    let r = post(
        &sim,
        MODEL,
        &json!({"contents": [{"role": "user", "parts": []}]}),
    )
    .await;
    assert_eq!(
        error_of(&r).1,
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n"
    );
    let r = post(
        &sim,
        MODEL,
        &json!({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}),
    )
    .await;
    assert_eq!(error_of(&r).1, "Please use a valid role: user, model.");
}

#[tokio::test]
async fn a_key_in_the_url_is_refused_and_never_recorded() {
    let sim = Sim::start("gemini").await.unwrap();
    let contents = [user("hi")];
    let path = format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key=AIzaSECRET123");
    let r = post_json(&sim, &path, &[], &body(&contents)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        error_of(&r),
        (
            "INVALID_ARGUMENT".to_owned(),
            "hermes-sim: the API key was sent in the URL query (`key=`). Send it in the `x-goog-api-key` header; hermes must never put a key in a URL.".to_owned()
        )
    );
    // The header key is accepted, and neither key is recorded.
    let r = studio_stream(&sim, &contents).await;
    assert!(
        r.headers
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    let recs = sim.requests();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        recs[0].path,
        format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key=<redacted>")
    );
    assert_eq!(recs[0].status, 400);
    assert_eq!(
        recs[1].path,
        format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")
    );
    assert_header(&recs[1], "x-goog-api-key", "<redacted>");
    let dump = format!("{recs:?}");
    assert!(
        !dump.contains("AIzaSECRET123") && !dump.contains(KEY),
        "{dump}"
    );

    // An empty key is not valid; with the switch, no key is refused.
    let r = post_json(
        &sim,
        &studio_path(MODEL, false),
        &[("x-goog-api-key", "")],
        &body(&contents),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        error_of(&r).1,
        "API key not valid. Please pass a valid API key."
    );
    let r = post_json(&sim, &studio_path(MODEL, false), &[], &body(&contents)).await;
    assert_eq!(
        r.status, 200,
        "a loopback simulator needs no key by default"
    );
    sim.set_switches(Switches::default().requiring_api_key());
    let r = post_json(&sim, &studio_path(MODEL, false), &[], &body(&contents)).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        error_of(&r),
        (
            "PERMISSION_DENIED".to_owned(),
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.".to_owned()
        )
    );
    assert_eq!(post(&sim, MODEL, &body(&contents)).await.status, 200);
}

#[tokio::test]
async fn a_sequential_loop_with_signatures_replayed_verbatim_is_accepted() {
    let sim = Sim::start("gemini").await.unwrap();
    let history = three_step_loop(&sim).await;
    // Every step's signature differs, and the next user turn starts a new current turn.
    let sigs: Vec<&str> = [1, 3, 5]
        .iter()
        .map(|&i| history[i]["parts"][1]["thoughtSignature"].as_str().unwrap())
        .collect();
    assert!(sigs[0] != sigs[1] && sigs[1] != sigs[2]);
    let mut next = history.clone();
    next.push(user("thanks"));
    let r = post(&sim, MODEL, &body(&next)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(degraded(&r), None);
    for rec in sim.requests() {
        assert_eq!(rec.status, 200);
        assert!(rec.notes.is_empty(), "{:?}", rec.notes);
    }
}

#[tokio::test]
async fn a_tampered_signature_in_the_current_turn_is_refused() {
    let sim = Sim::start("gemini").await.unwrap();
    let history = three_step_loop(&sim).await;
    // user, call 1, responses 1, call 2, responses 2: the request that asks for step 3.
    let in_loop = &history[..5];
    for at in [1, 3] {
        let mut contents = in_loop.to_vec();
        let sig = contents[at]["parts"][1]["thoughtSignature"]
            .as_str()
            .unwrap()
            .to_owned();
        contents[at]["parts"][1]["thoughtSignature"] = json!(tamper(&sig));
        refused(&sim, MODEL, &contents, CORRUPTED).await;
        // A signature from another step does not fit this step's call (ids differ).
        let other = if at == 1 { 3 } else { 1 };
        contents[at]["parts"][1]["thoughtSignature"] =
            history[other]["parts"][1]["thoughtSignature"].clone();
        refused(&sim, MODEL, &contents, CORRUPTED).await;
        // Changing the call's arguments under its signature breaks it too.
        let mut changed = in_loop.to_vec();
        changed[at]["parts"][1]["functionCall"]["args"] = json!({"tz": "UTC"});
        refused(&sim, MODEL, &changed, CORRUPTED).await;
    }
    // Outside the current turn a bad signature is only noted.
    let mut old = history.clone();
    let sig = old[1]["parts"][1]["thoughtSignature"]
        .as_str()
        .unwrap()
        .to_owned();
    old[1]["parts"][1]["thoughtSignature"] = json!(tamper(&sig));
    old.push(user("and now?"));
    let note = accepted_with_note(
        &sim,
        &old,
        "contents[1].parts[1]: thoughtSignature does not verify",
    )
    .await;
    assert_eq!(sim.requests().last().unwrap().notes, vec![note]);
}

#[tokio::test]
async fn a_missing_signature_in_the_current_turn_is_refused_with_the_exact_text() {
    let sim = Sim::start("gemini").await.unwrap();
    let history = three_step_loop(&sim).await;
    // Step 2's call (contents[3], position 4) loses its signature.
    let mut contents = history[..5].to_vec();
    contents[3]["parts"][1]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    refused(&sim, MODEL, &contents, &missing("now", 4)).await;
    // The first step's too: the first faulty turn is named.
    contents[1]["parts"][1]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    refused(&sim, MODEL, &contents, &missing("now", 2)).await;
    // Moving the signature to the thought part does not count.
    let mut moved = history[..3].to_vec();
    let sig = moved[1]["parts"][1]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature")
        .unwrap();
    moved[1]["parts"][0]["thoughtSignature"] = sig;
    refused(&sim, MODEL, &moved, &missing("now", 2)).await;
    // Once a new user text starts the next turn, the old call is only noted.
    contents.push(user("never mind"));
    let r = post(&sim, MODEL, &body(&contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        degraded(&r)
            .unwrap()
            .contains("functionCall without thoughtSignature")
    );
    // Gemini 2.5 does not require signatures.
    let mut contents = vec![user("[tools=1]")];
    let call = ok(&sim, "gemini-2.5-flash", &contents).await;
    let mut unsigned = call.clone();
    for p in unsigned["parts"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("thoughtSignature");
    }
    contents.push(unsigned);
    contents.push(responses(&call, "noon"));
    let done = ok(&sim, "gemini-2.5-flash", &contents).await;
    assert!(calls(&done).is_empty());
}

#[tokio::test]
async fn parallel_calls_signed_only_on_the_first_are_accepted() {
    let sim = Sim::start("gemini").await.unwrap();
    let mut contents = vec![user("Check three clocks [parallel=3]")];
    let content = ok(&sim, MODEL, &contents).await;
    let parts = content["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 4, "{content}");
    assert_eq!(parts[0]["thought"], true);
    assert!(parts[1]["thoughtSignature"].is_string());
    assert!(parts[2].get("thoughtSignature").is_none());
    assert!(parts[3].get("thoughtSignature").is_none());
    let ids: Vec<&str> = parts[1..]
        .iter()
        .map(|p| p["functionCall"]["id"].as_str().unwrap())
        .collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2]);
    contents.push(content.clone());
    contents.push(responses(&content, "noon"));
    let r = post(&sim, MODEL, &body(&contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(degraded(&r), None);
    assert!(
        calls(&r.json()["candidates"][0]["content"]).is_empty(),
        "one step only"
    );

    // The first call's signature copied onto the second: accepted, noted as degraded.
    let mut copied = contents.clone();
    copied[1]["parts"][2]["thoughtSignature"] = content["parts"][1]["thoughtSignature"].clone();
    accepted_with_note(
        &sim,
        &copied,
        "contents[1].parts[2]: thoughtSignature on a functionCall part other than the turn's first",
    )
    .await;
    assert_eq!(sim.requests().last().unwrap().notes.len(), 1);

    // Moved from the first call to the second: the first lacks it.
    let mut moved = copied.clone();
    moved[1]["parts"][1]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    refused(&sim, MODEL, &moved, &missing("now", 2)).await;

    // Responses in another order are matched by id.
    let mut reordered = contents.clone();
    reordered[2]["parts"].as_array_mut().unwrap().reverse();
    assert_eq!(post(&sim, MODEL, &body(&reordered)).await.status, 200);

    // `[tools=2] [parallel=2]`: two steps of two calls each.
    let mut contents = vec![user("[tools=2] [parallel=2]")];
    for _ in 0..2 {
        let c = ok(&sim, MODEL, &contents).await;
        assert_eq!(calls(&c).len(), 2);
        contents.push(c.clone());
        contents.push(responses(&c, "tick"));
    }
    assert!(calls(&ok(&sim, MODEL, &contents).await).is_empty());
}

#[tokio::test]
async fn pairing_violations_are_refused() {
    let sim = Sim::start("gemini").await.unwrap();
    let first = user("[parallel=2]");
    let call = ok(&sim, MODEL, std::slice::from_ref(&first)).await;
    let answer = responses(&call, "noon");

    let mut short = answer.clone();
    short["parts"].as_array_mut().unwrap().pop();
    let mut wrong = answer.clone();
    wrong["parts"][1]["functionResponse"]["id"] = json!("fc_nope");
    for (contents, message) in [
        // One response for two calls.
        (vec![first.clone(), call.clone(), short], RESPONSE_COUNT),
        // No response turn at all.
        (
            vec![first.clone(), call.clone(), user("hm")],
            RESPONSE_COUNT,
        ),
        // A response with an id no call has.
        (
            vec![first.clone(), call.clone(), wrong],
            RESPONSE_AFTER_CALL,
        ),
        // A response turn with no call turn before it.
        (
            vec![
                first.clone(),
                json!({"role": "model", "parts": [{"text": "ok"}]}),
                answer.clone(),
            ],
            RESPONSE_AFTER_CALL,
        ),
        // A call turn first in the history.
        (vec![call.clone(), answer.clone()], CALL_AFTER_USER),
    ] {
        refused(&sim, MODEL, &contents, message).await;
    }
    // Without ids (Gemini 2.5), responses are matched by name and order.
    let model = "gemini-2.5-pro";
    let call = ok(&sim, model, std::slice::from_ref(&first)).await;
    assert!(calls(&call)[0].get("id").is_none());
    let answer = responses(&call, "noon");
    let r = post(
        &sim,
        model,
        &body(&[first.clone(), call.clone(), answer.clone()]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut renamed = answer;
    renamed["parts"][0]["functionResponse"]["name"] = json!("later");
    refused(&sim, model, &[first, call, renamed], RESPONSE_AFTER_CALL).await;
}

#[tokio::test]
async fn text_beside_function_responses_is_refused_and_a_turn_of_its_own_is_accepted() {
    // A user's words in the function-response turn (`{"functionResponse":…},{"text":…}`) draw a
    // 400 (google/oss-rebuild#1559 on Gemini 3 Flash; google-gemini/gemini-cli#16137 for sibling
    // parts). The same words as a user turn of their own, after a model turn without calls, are a
    // new user turn: accepted, and the earlier signed call turn is no longer the current turn.
    for model in [MODEL, "gemini-2.5-flash"] {
        let sim = Sim::start("gemini").await.unwrap();
        let first = user("time? [tools=2]");
        let call = ok(&sim, model, std::slice::from_ref(&first)).await;
        let answer = responses(&call, "12:00");
        let mut fused = answer.clone();
        fused["parts"]
            .as_array_mut()
            .unwrap()
            .push(json!({"text": "and in Tokyo?"}));
        refused(
            &sim,
            model,
            &[first.clone(), call.clone(), fused],
            RESPONSE_COUNT,
        )
        .await;
        let apart = [
            first,
            call,
            answer,
            json!({"role": "model", "parts": [{"text": "(tool results received)"}]}),
            user("and in Tokyo?"),
        ];
        let r = post(&sim, model, &body(&apart)).await;
        assert_eq!(r.status, 200, "{model}: {}", r.text());
    }
}

#[tokio::test]
async fn a_streamed_text_turn_signs_a_trailing_empty_part() {
    let sim = Sim::start("gemini").await.unwrap();
    let contents = [user(
        "Say something long enough to be cut into several chunks",
    )];
    let whole = ok(&sim, MODEL, &contents).await;
    let r = studio_stream(&sim, &contents).await;
    // Written in small transfer chunks that cut events mid-line.
    assert!(r.chunks.len() > 20, "{}", r.chunks.len());
    assert!(r.chunks.iter().any(|c| !c.ends_with(b"\r\n\r\n")));
    let chunks = sse_chunks(&r.text());
    assert!(chunks.len() > 4);
    for c in &chunks[..chunks.len() - 1] {
        assert!(c["candidates"][0].get("finishReason").is_none(), "{c}");
        assert!(c.get("usageMetadata").is_none());
        assert_eq!(c["modelVersion"], MODEL);
    }
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert!(
        last["usageMetadata"]["thoughtsTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
    let parts = streamed_parts(&chunks);
    let trailing = parts.last().unwrap();
    assert_eq!(trailing["text"], "");
    let sig = trailing["thoughtSignature"].as_str().unwrap();
    assert_eq!(
        parts
            .iter()
            .filter(|p| p.get("thoughtSignature").is_some())
            .count(),
        1
    );
    // The fragments join to the non-streamed text and thought.
    let join = |thought: bool| -> String {
        parts
            .iter()
            .filter(|p| p.get("thought").is_some() == thought)
            .map(|p| p["text"].as_str().unwrap())
            .collect()
    };
    assert!(join(false).len() > 30);
    assert_eq!(join(false), whole["parts"][1]["text"].as_str().unwrap());
    assert_eq!(join(true), whole["parts"][0]["text"].as_str().unwrap());

    // Replayed as streamed (trailing part kept) or merged (signature on the last text part), the
    // signature verifies: no notes.
    let merged = json!({"role": "model", "parts": [
        {"text": join(true), "thought": true},
        {"text": join(false), "thoughtSignature": sig}
    ]});
    let as_streamed = json!({"role": "model", "parts": parts});
    for turn in [merged, as_streamed] {
        let next = [contents[0].clone(), turn, user("go on")];
        let r = post(&sim, MODEL, &body(&next)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(degraded(&r), None);
    }
    // The signature is bound to the text.
    let altered =
        json!({"role": "model", "parts": [{"text": "something else", "thoughtSignature": sig}]});
    let r = post(
        &sim,
        MODEL,
        &body(&[contents[0].clone(), altered, user("go on")]),
    )
    .await;
    assert!(degraded(&r).unwrap().contains("does not verify"));

    // With the switch, the last text fragment carries it.
    sim.set_switches(Switches::default().signing_text_fragment());
    let r = studio_stream(&sim, &contents).await;
    let parts = streamed_parts(&sse_chunks(&r.text()));
    let last = parts.last().unwrap();
    assert!(!last["text"].as_str().unwrap().is_empty());
    assert_eq!(last["thoughtSignature"], sig);
}

#[tokio::test]
async fn a_streamed_call_step_carries_its_signature_on_the_call() {
    let sim = Sim::start("gemini").await.unwrap();
    let mut contents = vec![user("[tools=2]")];
    for _ in 0..2 {
        let r = studio_stream(&sim, &contents).await;
        let parts = streamed_parts(&sse_chunks(&r.text()));
        let call = parts.last().unwrap();
        assert!(call["functionCall"]["id"].is_string(), "{call}");
        assert!(call["thoughtSignature"].is_string());
        assert!(
            parts[..parts.len() - 1]
                .iter()
                .all(|p| p["thought"] == true)
        );
        let turn = json!({"role": "model", "parts": parts});
        contents.push(turn.clone());
        contents.push(responses(&turn, "noon"));
    }
    let done = ok(&sim, MODEL, &contents).await;
    assert!(calls(&done).is_empty());
    assert!(sim.requests().iter().all(|r| r.notes.is_empty()));
}

#[tokio::test]
async fn streams_fail_mid_way_and_come_as_a_json_array_without_alt_sse() {
    let sim = Sim::start_with("gemini", Switches::default().failing_mid_stream())
        .await
        .unwrap();
    let contents = [user("hello there")];
    let r = studio_stream(&sim, &contents).await;
    let chunks = sse_chunks(&r.text());
    assert_eq!(chunks.len(), 4);
    assert_eq!(
        chunks[3],
        json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
    );
    assert!(
        chunks[..3]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none())
    );

    sim.set_switches(Switches::default());
    let path = format!("/v1beta/models/{MODEL}:streamGenerateContent");
    let r = stream(&sim, &path, STUDIO_KEY, &contents).await;
    assert!(
        r.headers
            .to_ascii_lowercase()
            .contains("content-type: application/json")
    );
    let v = r.json();
    let items = v.as_array().unwrap();
    assert!(items.len() > 4);
    assert_eq!(
        items.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
}

#[tokio::test]
async fn the_vertex_door_takes_a_bearer_token() {
    let sim = Sim::start("gemini").await.unwrap();
    let contents = [user("[tools=1]")];
    let path = vertex_path("gemini-2.5-flash", false);
    let r = post_json(&sim, &path, STUDIO_KEY, &body(&contents)).await;
    assert_eq!(r.status, 401);
    assert_eq!(error_of(&r).0, "UNAUTHENTICATED");
    let bearer = [("Authorization", "Bearer ya29.test-token")];
    let r = post_json(&sim, &path, &bearer, &body(&contents)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["modelVersion"], "gemini-2.5-flash");
    let call = v["candidates"][0]["content"].clone();
    assert_eq!(calls(&call).len(), 1);
    // The Vertex stream, and the recorded token redacted.
    let next = [contents[0].clone(), call.clone(), responses(&call, "noon")];
    let r = stream(&sim, &vertex_path("gemini-2.5-flash", true), &bearer, &next).await;
    let parts = streamed_parts(&sse_chunks(&r.text()));
    assert!(
        parts
            .iter()
            .any(|p| p["text"].as_str().is_some_and(|t| t.contains("noon")))
    );
    let rec = sim.requests().pop().unwrap();
    assert_header(&rec, "authorization", "<redacted>");
    // Vertex wants a role on every content; AI Studio defaults it.
    let roleless = json!({"contents": [{"parts": [{"text": "hi"}]}]});
    let r = post_json(&sim, &vertex_path(MODEL, false), &bearer, &roleless).await;
    assert_eq!(error_of(&r).1, "Please use a valid role: user, model.");
    assert_eq!(post(&sim, MODEL, &roleless).await.status, 200);
}

#[tokio::test]
async fn thinking_configuration_follows_the_model_generation() {
    let sim = Sim::start("gemini").await.unwrap();
    let with = |tc: Value| {
        let mut b = body(&[user("hi")]);
        b["generationConfig"]["thinkingConfig"] = tc;
        b
    };
    // Refused, each with the API's message.
    for (model, tc, want) in [
        (
            "gemini-2.5-pro",
            json!({"thinkingLevel": "high"}),
            "Thinking level is not supported for this model.",
        ),
        (
            "gemini-2.5-flash",
            json!({"thinkingLevel": "low", "includeThoughts": true}),
            "Thinking level is not supported for this model.",
        ),
        (
            "gemini-2.5-pro",
            json!({"thinkingBudget": 0}),
            "Budget 0 is invalid. This model only works in thinking mode.",
        ),
        (
            "gemini-2.5-pro",
            json!({"thinkingBudget": 40000}),
            "The thinking budget 40000 is invalid. Please choose a value between 128 and 32768.",
        ),
        (
            "gemini-2.5-flash",
            json!({"thinkingBudget": 24577}),
            "The thinking budget 24577 is invalid. Please choose a value between 0 and 24576.",
        ),
        (
            "gemini-2.0-flash",
            json!({"includeThoughts": true}),
            "thinking_config is not supported.",
        ),
        (
            MODEL,
            json!({"thinkingLevel": "high", "thinkingBudget": 1024}),
            "You cannot set both thinking_level and thinking_budget in the same request. Use thinking_level for Gemini 3 models.",
        ),
    ] {
        let r = post(&sim, model, &with(tc)).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(error_of(&r).1, want);
    }
    let r = post(&sim, MODEL, &with(json!({"thinkingLevel": "extreme"}))).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(
        v["error"]["details"][0]["fieldViolations"][0]["field"],
        "generation_config.thinking_config.thinking_level"
    );

    // Accepted: budgets in range, levels on Gemini 3; thoughts only when asked for and thinking.
    for (model, tc, thoughts) in [
        (
            "gemini-2.5-pro",
            json!({"thinkingBudget": 128, "includeThoughts": true}),
            true,
        ),
        ("gemini-2.5-pro", json!({"thinkingBudget": -1}), false),
        (
            "gemini-2.5-flash",
            json!({"thinkingBudget": 0, "includeThoughts": true}),
            false,
        ),
        (
            "gemini-2.5-flash-lite",
            json!({"thinkingBudget": 512, "includeThoughts": true}),
            true,
        ),
        (
            MODEL,
            json!({"thinkingLevel": "LOW", "includeThoughts": true}),
            true,
        ),
        (MODEL, json!({"thinkingLevel": "high"}), false),
    ] {
        let r = post(&sim, model, &with(tc.clone())).await;
        assert_eq!(r.status, 200, "{model} {tc}: {}", r.text());
        let parts = r.json()["candidates"][0]["content"]["parts"].clone();
        assert_eq!(
            parts[0]["thought"] == true,
            thoughts,
            "{model} {tc}: {parts}"
        );
        // Thinking models sign; budget 0 turns thinking (and signing) off.
        let signed = parts
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .get("thoughtSignature")
            .is_some();
        assert_eq!(signed, tc["thinkingBudget"] != 0, "{model} {tc}");
    }
}

#[tokio::test]
async fn a_signature_verifies_on_both_doors_of_the_same_host() {
    let native = Sim::start("gemini").await.unwrap();
    let chat = Sim::start("gemini-openai").await.unwrap();
    // Native → chat: the step's call replayed as an OpenAI tool call carrying the signature.
    let call = ok(&native, MODEL, &[user("[tools=1]")]).await;
    let sig = call["parts"][1]["thoughtSignature"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = call["parts"][1]["functionCall"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let chat_body = |sig: &str| {
        json!({
            "model": MODEL,
            "messages": [
                {"role": "user", "content": "[tools=1]"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": id, "type": "function",
                    "function": {"name": "now", "arguments": "{}"},
                    "extra_content": {"google": {"thought_signature": sig}}
                }]},
                {"role": "tool", "tool_call_id": id, "content": "noon"}
            ]
        })
    };
    let send_chat = |b: Value| {
        let base = chat.base_url();
        async move {
            send(
                &base,
                "POST",
                "/chat/completions",
                &[],
                b.to_string().as_bytes(),
            )
            .await
        }
    };
    let r = send_chat(chat_body(&sig)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = send_chat(chat_body(&tamper(&sig))).await;
    assert_eq!(r.status, 400, "{}", r.text());
    // The same signature is not valid for another model.
    let r = post(
        &native,
        "gemini-3-flash-preview",
        &body(&[user("[tools=1]"), call.clone(), responses(&call, "noon")]),
    )
    .await;
    assert_eq!(error_of(&r).1, CORRUPTED);

    // Chat → native: the chat door's tool-call signature on the native functionCall part.
    let r =
        send_chat(json!({"model": MODEL, "messages": [{"role": "user", "content": "[tools=1]"}]}))
            .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let tc = r.json()["choices"][0]["message"]["tool_calls"][0].clone();
    let chat_sig = tc["extra_content"]["google"]["thought_signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = |sig: &str| {
        json!({"role": "model", "parts": [{
            "functionCall": {"id": tc["id"], "name": "now", "args": {}},
            "thoughtSignature": sig
        }]})
    };
    let answer = json!({"role": "user", "parts": [{"functionResponse": {"id": tc["id"], "name": "now", "response": {"output": "noon"}}}]});
    let r = post(
        &native,
        MODEL,
        &body(&[user("[tools=1]"), turn(&chat_sig), answer.clone()]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    refused(
        &native,
        MODEL,
        &[user("[tools=1]"), turn(&tamper(&chat_sig)), answer],
        CORRUPTED,
    )
    .await;
}

#[tokio::test]
async fn images_in_user_parts_and_function_response_parts_are_accepted_and_unknown_names_refused() {
    let sim = Sim::start("gemini").await.unwrap();
    // A 1×1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let first = json!({"role": "user", "parts": [
        {"text": "What time is it? [tools=1]"},
        {"inlineData": {"data": png, "mimeType": "image/png"}},
        {"fileData": {"fileUri": "https://example.com/a.jpg", "mimeType": "image/jpeg"}},
    ]});
    let content = ok(&sim, MODEL, std::slice::from_ref(&first)).await;
    let mut answer = responses(&content, "12:00");
    answer["parts"][0]["functionResponse"]["parts"] =
        json!([{"inlineData": {"mimeType": "image/png", "data": png}}]);
    ok(
        &sim,
        MODEL,
        &[first.clone(), content.clone(), answer.clone()],
    )
    .await;

    let mut chat = answer.clone();
    chat["parts"][0]["functionResponse"]["parts"] =
        json!([{"image_url": {"url": "https://example.com/a.png"}}]);
    refused(
        &sim,
        MODEL,
        &[first.clone(), content.clone(), chat],
        "Invalid JSON payload received. Unknown name \"image_url\" at 'contents[2].parts[0].function_response.parts[0]': Cannot find field.",
    )
    .await;
    let mut not_base64 = answer;
    not_base64["parts"][0]["functionResponse"]["parts"][0]["inlineData"]["data"] =
        json!("not base64!");
    let r = post(&sim, MODEL, &body(&[first, content, not_base64])).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        error_of(&r)
            .1
            .contains("contents[2].parts[0].function_response.parts[0].inline_data.data"),
        "{}",
        r.text()
    );
}

// ---------------------------------------------------------------- the client's own tools

/// A Claude-Code-like `Read` tool's JSON schema.
fn read_schema() -> Value {
    json!({"type": "object", "properties": {"file_path": {"type": "string"},
        "offset": {"type": "integer"}}, "required": ["file_path"], "additionalProperties": false})
}

#[tokio::test]
async fn the_script_calls_the_first_declared_function_with_arguments_valid_for_its_schema() {
    let sim = Sim::start("gemini").await.unwrap();
    let weather = json!({"name": "get_weather", "parameters": {"type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER"},
            "unit": {"type": "STRING", "format": "enum", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}});
    let read = json!({"name": "Read", "parametersJsonSchema": read_schema()});
    let rows = [
        (
            json!([weather, read]),
            "get_weather",
            json!({"city": "x", "unit": "celsius"}),
        ),
        (json!([read]), "Read", json!({"file_path": "x"})),
    ];
    for (declarations, name, args) in rows {
        let mut contents = vec![user("Look it up [tools=1]")];
        let with = |contents: &[Value]| {
            let mut b = body(contents);
            b["tools"] = json!([{"functionDeclarations": declarations}]);
            b
        };
        let r = post(&sim, MODEL, &with(&contents)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let content = r.json()["candidates"][0]["content"].clone();
        let call = &calls(&content)[0];
        assert_eq!(call["name"], name, "{content}");
        assert_eq!(call["args"], args, "{content}");
        // A failed call: the response carries an `error` key, and the model reads it.
        contents.push(content.clone());
        let mut answer = responses(&content, "");
        answer["parts"][0]["functionResponse"]["response"] =
            json!({"error": {"message": "no such city"}});
        contents.push(answer);
        let r = post(&sim, MODEL, &with(&contents)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.json()["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p["text"].as_str())
            .collect::<String>();
        assert!(
            text.contains(&format!("The last `{name}` result")),
            "{text}"
        );
        assert!(text.contains("no such city"), "{text}");
    }
}
