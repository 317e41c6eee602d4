//! A paid reply is never lost and never paid twice (issue 47): a client that hangs up before
//! the answer still leaves its turn stored, with its usage; its retry — naming the same
//! `Idempotency-Key`, or the same body while the conversation still ends there — is answered
//! from the store, whole or streamed, on any replica, with no second upstream call; a key used
//! for another request is refused.

use std::time::Duration;

use hermes_sim::Sim;
use hermes_store::testing::TestDb;
use serde_json::{Value, json};

use crate::{Running, replica_over, sim_settings};

fn ask(text: &str) -> Value {
    json!({"model": "deepseek/deepseek-v4-pro",
           "messages": [{"role": "user", "content": text}]})
}

async fn post(
    gateway: &Running,
    key: &str,
    body: &Value,
    idempotency: Option<&str>,
    timeout: Option<Duration>,
) -> Result<reqwest::Response, reqwest::Error> {
    let mut request = reqwest::Client::new()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(body);
    if let Some(idempotency) = idempotency {
        request = request.header("Idempotency-Key", idempotency);
    }
    if let Some(timeout) = timeout {
        request = request.timeout(timeout);
    }
    request.send().await
}

/// A replica over the store of `db`, DeepSeek behind it at `sim`.
async fn deepseek_replica(db: &TestDb, sim: &Sim) -> Running {
    replica_over(
        db.open().await,
        sim_settings("deepseek", &sim.base_url()),
        |c| c,
    )
    .await
}

/// [`post`] without a key or a timeout: the JSON of the answer.
async fn answered(gateway: &Running, key: &str, body: &Value) -> Value {
    post(gateway, key, body, None, None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until the store holds `count` sessions of `tenant`'s, each ending with an assistant
/// message; returns their ids.
async fn stored_turns(store: &hermes_store::Store, count: usize) -> Vec<String> {
    for _ in 0..100 {
        let sessions = store.list().await.unwrap();
        if sessions.len() >= count {
            let mut done = Vec::new();
            for s in &sessions {
                let messages = store.messages(&s.id).await.unwrap();
                if messages
                    .last()
                    .is_some_and(|m| m.role == hermes_core::Role::Assistant)
                {
                    done.push(s.id.clone());
                }
            }
            if done.len() == count {
                return done;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the store never held {count} finished turns");
}

both!(a_client_gone_before_the_answer_leaves_its_turn_stored_and_its_retry_is_answered_from_it);
/// Replica A's client times out while DeepSeek thinks; the turn is stored anyway, usage
/// included. The SDK's retry, with the same key, reaches replica B while A's turn still runs:
/// it waits for it and gets its answer. DeepSeek was asked once.
async fn a_client_gone_before_the_answer_leaves_its_turn_stored_and_its_retry_is_answered_from_it(
    db: TestDb,
) {
    let sim = Sim::builder(hermes_sim::Profile::builtin("deepseek-v4").unwrap())
        .reply_delay(Duration::from_millis(1500))
        .start()
        .await
        .unwrap();
    let a = deepseek_replica(&db, &sim).await;
    let b = deepseek_replica(&db, &sim).await;
    let key = a.store.add_gateway_key("initech").await.unwrap();
    let body = ask("fix the build");
    let gone = post(
        &a,
        &key,
        &body,
        Some("turn-1"),
        Some(Duration::from_millis(300)),
    )
    .await;
    assert!(
        gone.as_ref().err().is_some_and(reqwest::Error::is_timeout),
        "the client gave up: {gone:?}"
    );
    let retry = post(&b, &key, &body, Some("turn-1"), None).await.unwrap();
    assert_eq!(retry.status(), 200);
    let retry: Value = retry.json().await.unwrap();
    assert_eq!(sim.requests().len(), 1, "DeepSeek was asked once");
    let sessions = stored_turns(&a.store, 1).await;
    assert_eq!(retry["hermes_session"], sessions[0].as_str());
    let stored = a.store.messages(&sessions[0]).await.unwrap();
    assert_eq!(stored.len(), 2, "one user message, one reply: {stored:?}");
    let reply = &stored[1];
    assert_eq!(
        retry["choices"][0]["message"]["content"].as_str(),
        reply.content.as_ref().and_then(|c| c.as_str()).as_deref(),
    );
    assert_eq!(
        retry["choices"][0]["message"]["reasoning_content"].as_str(),
        reply
            .reasoning_content
            .as_ref()
            .map(|t| t.text())
            .as_deref(),
        "the stored reasoning, as the first answer would have carried it"
    );
    // Its usage was stored with the step, not after it.
    let meta = a.store.session(&sessions[0]).await.unwrap();
    assert!(
        meta.output_tokens > 0,
        "usage stored: {}",
        meta.output_tokens
    );
    assert_eq!(retry["usage"]["completion_tokens"], meta.output_tokens);
    a.stop().await;
    b.stop().await;
}

both!(the_same_body_again_is_answered_from_the_store_until_the_conversation_moves_on);
/// Without a key: the same body again, while the conversation still ends with its answer, is
/// the first answer (same session, one upstream call); once the conversation has moved on, the
/// same body asks anew.
async fn the_same_body_again_is_answered_from_the_store_until_the_conversation_moves_on(
    db: TestDb,
) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let gateway = deepseek_replica(&db, &sim).await;
    let key = gateway.store.add_gateway_key("initech").await.unwrap();
    let body = ask("fix the build");
    let first = answered(&gateway, &key, &body).await;
    let again = answered(&gateway, &key, &body).await;
    assert_eq!(sim.requests().len(), 1, "asked once");
    assert_eq!(again["hermes_session"], first["hermes_session"]);
    assert_eq!(
        again["choices"][0]["message"],
        first["choices"][0]["message"]
    );
    // The conversation goes on...
    let answer = first["choices"][0]["message"]["content"].clone();
    let next = json!({"model": "deepseek/deepseek-v4-pro", "messages": [
        {"role": "user", "content": "fix the build"},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "and the tests?"},
    ]});
    let next = answered(&gateway, &key, &next).await;
    assert_eq!(next["hermes_session"], first["hermes_session"]);
    assert_eq!(sim.requests().len(), 2);
    // ...so the first body again is a new question (an edit back to turn one: a branch).
    let branch = post(&gateway, &key, &body, None, None).await.unwrap();
    assert_eq!(branch.status(), 200);
    assert_eq!(sim.requests().len(), 3, "asked anew");
    gateway.stop().await;
}

/// A key names one request: the same key with another body is refused, in the door's shape,
/// and nothing goes upstream; the first answer stays its key's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_used_for_another_request_is_refused() {
    let (sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let first = post(&gateway, crate::KEY, &ask("one"), Some("k"), None)
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let other = post(&gateway, crate::KEY, &ask("two"), Some("k"), None)
        .await
        .unwrap();
    assert_eq!(other.status(), 400);
    let error: Value = other.json().await.unwrap();
    assert_eq!(error["error"]["param"], "Idempotency-Key", "{error}");
    crate::error_says(&error, "different request");
    assert_eq!(sim.requests().len(), 1);
    // Another tenant's same key is another key.
    let b = post(&gateway, crate::KEY_B, &ask("two"), Some("k"), None)
        .await
        .unwrap();
    assert_eq!(b.status(), 200);
    assert_eq!(sim.requests().len(), 2);
    gateway.stop().await;
}

/// A streamed retry of a stored turn streams the stored answer (Messages door): the same
/// text, the same tool call, from one upstream request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_retry_streams_the_stored_answer() {
    let (sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let body = json!({
        "model": "deepseek/deepseek-v4-pro", "max_tokens": 1024, "stream": true,
        "tools": [{"name": "now", "description": "the time",
                   "input_schema": {"type": "object", "properties": {}}}],
        "messages": [{"role": "user", "content": "[tools=1] what time is it?"}],
    });
    let send = || {
        reqwest::Client::new()
            .post(gateway.url("/v1/messages"))
            .header("x-api-key", crate::KEY)
            .header("Idempotency-Key", "stream-1")
            .json(&body)
            .send()
    };
    let first = send().await.unwrap().text().await.unwrap();
    let again = send().await.unwrap().text().await.unwrap();
    assert_eq!(sim.requests().len(), 1, "asked once");
    let deltas = |sse: &str| -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|e| e["type"] == "content_block_delta" || e["type"] == "content_block_start")
            .filter(|e| e["delta"]["type"] != "signature_delta")
            .map(|mut e| {
                // The ids of tool calls and the text are the answer; a stream's pieces may be
                // cut differently.
                e.as_object_mut().unwrap().remove("index");
                e
            })
            .collect()
    };
    let text = |events: &[Value]| -> String {
        events
            .iter()
            .filter_map(|e| {
                e["delta"]["text"]
                    .as_str()
                    .or(e["delta"]["thinking"].as_str())
                    .or(e["delta"]["partial_json"].as_str())
            })
            .collect()
    };
    let (first, again) = (deltas(&first), deltas(&again));
    assert!(!first.is_empty());
    assert_eq!(text(&again), text(&first));
    let tool = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["content_block"]["type"] == "tool_use")
            .map(|e| e["content_block"].clone())
            .collect()
    };
    assert_eq!(tool(&again), tool(&first));
    assert_eq!(tool(&first).len(), 1, "the model called the tool");
    gateway.stop().await;
}

both!(a_stream_cut_after_its_first_delta_still_stores_the_whole_turn);
/// A streamed client that reads its first delta and hangs up: the reply goes on upstream, is
/// captured whole and stored with its usage.
async fn a_stream_cut_after_its_first_delta_still_stores_the_whole_turn(db: TestDb) {
    let sim = crate::replicas::slow_deepseek(Duration::from_millis(40)).await;
    let gateway = deepseek_replica(&db, &sim).await;
    let key = gateway.store.add_gateway_key("initech").await.unwrap();
    let mut body = ask("fix the build");
    body["stream"] = true.into();
    let mut response = post(&gateway, &key, &body, None, None).await.unwrap();
    assert_eq!(response.status(), 200);
    let first = response.chunk().await.unwrap();
    assert!(first.is_some());
    drop(response);
    let sessions = stored_turns(&gateway.store, 1).await;
    let stored = gateway.store.messages(&sessions[0]).await.unwrap();
    let reply = stored.last().unwrap();
    assert!(
        reply
            .content
            .as_ref()
            .and_then(|c| c.as_str())
            .is_some_and(|t| !t.is_empty()),
        "the whole answer is stored: {reply:?}"
    );
    assert!(reply.reasoning_content.is_some(), "with its reasoning");
    let meta = gateway.store.session(&sessions[0]).await.unwrap();
    assert!(
        meta.output_tokens > 0,
        "and its usage: {}",
        meta.output_tokens
    );
    gateway.stop().await;
}
