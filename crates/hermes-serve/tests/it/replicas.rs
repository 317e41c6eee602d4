//! Replicas over one store (docs/spec.md §10, "When it is visible"): two gateways alternate the
//! turns of one conversation, whole and streamed, through both doors, each next turn sent to the
//! other replica the moment the client saw the finishing event, and the strict simulator gets
//! back every carrier it minted though the client drops them all, one conversation stored; a
//! replica killed mid-stream stores nothing half-done, and the client's retry on the other
//! succeeds with every earlier carrier; one killed after committing a step the client never saw
//! leaves it stored, and the retry on the other is a branch beside it.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource as _;
use futures_util::{FutureExt as _, Stream, StreamExt as _};
use hermes_sim::{RecordedRequest, Sim};
use hermes_store::testing::TestDb;
use serde_json::{Value, json};

use crate::{Doomed, Running, deepseek_settings, replica, replica_over, sim_settings};

/// The door a turn goes through.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Door {
    /// `POST /v1/chat/completions`: a stream ends its step with the chunk carrying
    /// `finish_reason`.
    Chat,
    /// `POST /v1/messages`: with `message_delta` carrying `stop_reason`.
    Messages,
}

impl Door {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Door::Chat => "/v1/chat/completions",
            Door::Messages => "/v1/messages",
        }
    }

    /// Whether `event` (a stream's `data`) is the one that ends the reply's step.
    pub(crate) fn finishes(self, event: &Value) -> bool {
        match self {
            Door::Chat => event["choices"][0]["finish_reason"].is_string(),
            Door::Messages => {
                event["type"] == "message_delta" && event["delta"]["stop_reason"].is_string()
            }
        }
    }
}

/// A stream's `data` payloads, each as JSON (`[DONE]` as the string).
pub(crate) type Events = Pin<Box<dyn Stream<Item = Value> + Send>>;

/// Parses one SSE `data` payload.
pub(crate) fn data(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_owned()))
}

/// The `data` payloads of an SSE body held in memory, parsed by `eventsource-stream`.
pub(crate) fn sse(body: &str) -> Vec<Value> {
    let chunks =
        futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body.as_bytes().to_vec())]);
    let events: Vec<_> = chunks
        .eventsource()
        .collect()
        .now_or_never()
        .expect("an SSE body in memory parses at once");
    events.into_iter().map(|e| data(&e.unwrap().data)).collect()
}

/// The events of `response`'s SSE body as they arrive.
pub(crate) fn events(response: reqwest::Response) -> Events {
    Box::pin(
        response
            .bytes_stream()
            .eventsource()
            .map(|e| data(&e.expect("a well-formed SSE event").data)),
    )
}

/// A reply read up to the event that ends its step: a whole reply's body, or a stream's events
/// up to and with the finishing one, the rest left unread.
pub(crate) struct Reply {
    pub(crate) events: Vec<Value>,
    rest: Option<Events>,
}

impl Reply {
    /// Reads the rest of a stream: every event, which ends with `[DONE]` at the chat door and
    /// `message_stop` at the Messages door.
    pub(crate) async fn finish(self, door: Door) -> Vec<Value> {
        let mut events = self.events;
        if let Some(rest) = self.rest {
            events.extend(rest.collect::<Vec<_>>().await);
            let last = events.last().unwrap();
            match door {
                Door::Chat => assert_eq!(last, "[DONE]", "{events:?}"),
                Door::Messages => assert_eq!(last["type"], "message_stop", "{events:?}"),
            }
        }
        events
    }
}

/// `POST` of `body` through `door` of the gateway at `addr` with `key`.
pub(crate) async fn post(
    addr: std::net::SocketAddr,
    door: Door,
    key: &str,
    body: &Value,
) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{addr}{}", door.path()))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// One turn through `door` of the gateway at `addr`, read until the event that ends its step
/// (a whole reply at once).
pub(crate) async fn turn(addr: std::net::SocketAddr, door: Door, key: &str, body: &Value) -> Reply {
    let response = post(addr, door, key, body).await;
    let status = response.status();
    if body["stream"] != true {
        let reply: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "{reply}");
        return Reply {
            events: vec![reply],
            rest: None,
        };
    }
    assert_eq!(status, 200);
    let mut rest = events(response);
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), rest.next())
            .await
            .expect("an event within 30 s")
            .unwrap_or_else(|| panic!("the stream ended before its step did: {seen:?}"));
        let last = door.finishes(&event);
        seen.push(event);
        if last {
            return Reply {
                events: seen,
                rest: Some(rest),
            };
        }
    }
}

/// What a chat client saw of a reply (whole, or a stream's chunks): the answer's text, its
/// readable reasoning and the session it names.
pub(crate) fn chat_answer(events: &[Value]) -> (String, String, Option<String>) {
    let (mut text, mut reasoning, mut session) = (String::new(), String::new(), None);
    for event in events {
        let choice = &event["choices"][0];
        let part = if choice["message"].is_object() {
            &choice["message"]
        } else {
            &choice["delta"]
        };
        text.push_str(part["content"].as_str().unwrap_or_default());
        reasoning.push_str(part["reasoning_content"].as_str().unwrap_or_default());
        if let Some(id) = event["hermes_session"].as_str() {
            session = Some(id.to_owned());
        }
    }
    (text, reasoning, session)
}

/// What a Messages client keeps of a reply (whole, or a stream's events): its content blocks
/// without thinking (it drops every reasoning field), and whether it saw thinking.
pub(crate) fn messages_answer(events: &[Value]) -> (Vec<Value>, bool) {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for event in events {
        if event["type"] == "message" {
            blocks = event["content"].as_array().unwrap().clone();
        } else if event["type"] == "content_block_start" {
            blocks.push(event["content_block"].clone());
            partial.push(String::new());
        } else if event["type"] == "content_block_delta" {
            let i = usize::try_from(event["index"].as_u64().unwrap()).unwrap();
            let delta = &event["delta"];
            if delta["type"] == "text_delta" {
                let text = format!(
                    "{}{}",
                    blocks[i]["text"].as_str().unwrap(),
                    delta["text"].as_str().unwrap()
                );
                blocks[i]["text"] = json!(text);
            } else if delta["type"] == "input_json_delta" {
                partial[i].push_str(delta["partial_json"].as_str().unwrap());
            }
        }
    }
    for (block, json) in blocks.iter_mut().zip(&partial) {
        if block["type"] == "tool_use" && !json.is_empty() {
            block["input"] = serde_json::from_str(json).unwrap();
        }
    }
    let thought = blocks.iter().any(|b| b["type"] == "thinking");
    blocks.retain(|b| b["type"] == "text" || b["type"] == "tool_use");
    (blocks, thought)
}

/// A turn's body through `door`: the conversation `turns` (user, assistant, …, user) as texts.
pub(crate) fn body(door: Door, stream: bool, turns: &[String]) -> Value {
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": text})
        })
        .collect();
    match door {
        Door::Chat => {
            json!({"model": "deepseek/deepseek-v4-pro", "stream": stream, "messages": messages})
        }
        Door::Messages => json!({"model": "deepseek/deepseek-v4-pro", "max_tokens": 1024,
                                 "stream": stream, "messages": messages}),
    }
}

/// The answer's text a client keeps of a reply through `door`.
pub(crate) fn text_of(door: Door, events: &[Value]) -> String {
    match door {
        Door::Chat => chat_answer(events).0,
        Door::Messages => messages_answer(events)
            .0
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect(),
    }
}

/// The simulator's requests, which must be `n` (`which` names them in the failure message).
fn requests_of(sim: &Sim, n: usize, which: &str) -> Vec<RecordedRequest> {
    let requests = sim.requests();
    assert_eq!(requests.len(), n, "{which}");
    requests
}

/// Reads the last reply of a `TURNS`-turn conversation on `door` to its end, then the
/// simulator's requests (exactly one per turn).
async fn last_turn_read(
    pending: Option<Reply>,
    door: Door,
    sim: &Sim,
    stream: bool,
) -> Vec<RecordedRequest> {
    pending.unwrap().finish(door).await;
    requests_of(
        sim,
        TURNS,
        &format!("stream {stream}: one request per turn"),
    )
}

/// The `reasoning_content` member, as JSON text, that carries the reasoning the simulator minted
/// in its answer to `request` (a later request replaying it holds this text).
fn carried_reasoning(request: &RecordedRequest) -> String {
    format!(
        r#""reasoning_content":{}"#,
        Value::String(minted_reasoning(request))
    )
}

/// The readable reasoning DeepSeek's simulator answered `request` with (whole or streamed).
pub(crate) fn minted_reasoning(request: &RecordedRequest) -> String {
    let events = match serde_json::from_str::<Value>(&request.response) {
        Ok(whole) => vec![whole],
        Err(_) => sse(&request.response),
    };
    let (_, reasoning, _) = chat_answer(&events);
    assert!(!reasoning.is_empty(), "the simulator thought: {request:?}");
    reasoning
}

/// Every signature Claude's simulator answered `request` with (whole or streamed).
pub(crate) fn minted_signatures(request: &RecordedRequest) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    match v.as_str() {
                        Some(s) if key == "signature" && !s.is_empty() => out.push(s.to_owned()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match serde_json::from_str::<Value>(&request.response) {
        Ok(whole) => walk(&whole, &mut out),
        Err(_) => sse(&request.response)
            .iter()
            .for_each(|e| walk(e, &mut out)),
    }
    out
}

/// The upstream request `request` as the simulator received it, as text.
pub(crate) fn received(request: &RecordedRequest) -> String {
    assert_eq!(
        request.status, 200,
        "the simulator accepted it: {request:?}"
    );
    String::from_utf8(request.raw.clone()).unwrap()
}

/// The sessions of `store` that `keep` accepts.
async fn sessions_where(
    store: &hermes_engine::store::Store,
    keep: impl Fn(&hermes_engine::store::SessionMeta) -> bool,
) -> Vec<hermes_engine::store::SessionMeta> {
    let all = store.list().await.unwrap();
    all.into_iter().filter(|s| keep(s)).collect()
}

/// The one conversation `tenant` has in `store`: neither a branch nor branched from.
pub(crate) async fn only_conversation(store: &hermes_engine::store::Store, tenant: &str) -> String {
    let sessions = sessions_where(store, |s| s.tenant.as_deref() == Some(tenant)).await;
    assert_eq!(
        sessions.len(),
        1,
        "one conversation, not a branch: {sessions:?}"
    );
    assert!(
        sessions[0].parent_id.is_none() && sessions[0].fork.is_none(),
        "{sessions:?}"
    );
    sessions[0].id.clone()
}

/// The roles of the stored session `id`, in order.
pub(crate) async fn roles(store: &hermes_engine::store::Store, id: &str) -> Vec<String> {
    let stored = store.messages(id).await.unwrap();
    stored.iter().map(|m| m.role.as_str().to_owned()).collect()
}

/// The roles of a conversation of three turns, in order.
pub(crate) const THREE_TURNS: [&str; 6] = [
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
    "assistant",
];

/// The roles of a conversation of a tool turn then one more turn, in order.
pub(crate) const TOOL_TURN_THEN_A_TURN: [&str; 6] = [
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
    "assistant",
];

/// The roles of a conversation of one tool turn (no system prompt), in order.
pub(crate) const TOOL_TURN: [&str; 4] = ["user", "assistant", "tool", "assistant"];

/// DeepSeek V4's simulator, pausing `delay` before each streamed event.
pub(crate) async fn slow_deepseek(delay: Duration) -> Sim {
    Sim::builder(hermes_sim::Profile::builtin("deepseek-v4").unwrap())
        .chunk_delay(delay)
        .start()
        .await
        .unwrap()
}

/// A replica to be killed, over `db`, its upstream DeepSeek at `sim`.
fn doomed(db: &TestDb, sim: &Sim) -> Doomed {
    Doomed::start(
        db.location.clone(),
        deepseek_settings(&sim.base_url()),
        |c| c,
    )
}

const TURNS: usize = 3;

both!(two_replicas_alternate_the_turns_of_a_chat_conversation_at_once);
/// Turns 1 and 3 on replica A, turn 2 on replica B, each sent the moment the client saw the
/// previous reply's finishing chunk (its stream still open), the client keeping only the
/// answers' text: the strict DeepSeek V4 simulator (which refuses an assistant turn without its
/// `reasoning_content`) accepts each and received every reasoning it minted before, byte for
/// byte; the store holds one conversation of the six messages.
async fn two_replicas_alternate_the_turns_of_a_chat_conversation_at_once(db: TestDb) {
    for stream in [false, true] {
        let sim = Sim::start("deepseek-v4").await.unwrap();
        let replicas = [
            replica(db.open().await, &sim.base_url(), |c| c).await,
            replica(db.open().await, &sim.base_url(), |c| c).await,
        ];
        let tenant = format!("acme-stream-{stream}");
        let key = replicas[0].store.add_gateway_key(&tenant).await.unwrap();
        let mut messages = vec![json!({"role": "user", "content": "hello"})];
        let (mut pending, mut sessions) = (None::<Reply>, Vec::new());
        for n in 0..TURNS {
            let body = json!({"model": "deepseek/deepseek-v4-pro", "stream": stream,
                              "messages": messages});
            let reply = turn(replicas[n % 2].addr, Door::Chat, &key, &body).await;
            // The previous reply's stream is read to its end only now.
            if let Some(previous) = pending.take() {
                previous.finish(Door::Chat).await;
            }
            let (text, reasoning, session) = chat_answer(&reply.events);
            assert!(!reasoning.is_empty(), "the client saw the thinking");
            sessions.push(session.expect("the finishing chunk names the session"));
            // The client drops every reasoning field.
            messages.push(json!({"role": "assistant", "content": text}));
            messages.push(json!({"role": "user", "content": format!("and then? ({n})")}));
            pending = Some(reply);
        }
        let requests = last_turn_read(pending, Door::Chat, &sim, stream).await;
        for (k, request) in requests.iter().enumerate() {
            let raw = received(request);
            for (j, earlier) in requests[..k].iter().enumerate() {
                let minted = minted_reasoning(earlier);
                let carried = format!(r#""reasoning_content":{}"#, Value::String(minted.clone()));
                assert!(
                    raw.contains(&carried),
                    "stream {stream}: turn {} did not carry turn {}'s reasoning as minted: {raw}",
                    k + 1,
                    j + 1
                );
                assert_eq!(
                    request.body["messages"][2 * j + 1]["reasoning_content"],
                    minted
                );
            }
        }
        let store = &replicas[1].store;
        let id = only_conversation(store, &tenant).await;
        assert!(sessions.iter().all(|s| *s == id), "{sessions:?} vs {id}");
        let stored = store.messages(&id).await.unwrap();
        assert_eq!(roles(store, &id).await, THREE_TURNS);
        for (j, request) in requests.iter().enumerate() {
            let kept = stored[2 * j + 1].reasoning_content.as_ref().unwrap();
            assert_eq!(kept.text(), minted_reasoning(request), "stream {stream}");
        }
        for gateway in replicas {
            gateway.stop().await;
        }
    }
}

const CLAUDE: &str = "anthropic/claude-opus-4-6";

both!(two_replicas_alternate_the_turns_of_a_messages_tool_conversation_at_once);
/// Through the Messages door to the strict Claude simulator (which verifies the signed thinking
/// of the tool loop's last assistant turn and refuses it missing or altered): the tool call on
/// replica A, its result on replica B sent the moment the client saw `message_delta` with
/// `stop_reason`, a further question on A; the client keeps only text and `tool_use` blocks.
/// The simulator accepts each turn and received on the second every signature it minted on the
/// first, byte for byte; the store holds one conversation.
async fn two_replicas_alternate_the_turns_of_a_messages_tool_conversation_at_once(db: TestDb) {
    for stream in [false, true] {
        let sim = Sim::start("anthropic").await.unwrap();
        let settings = || sim_settings("anthropic", &sim.base_url());
        let replicas = [
            replica_over(db.open().await, settings(), |c| c).await,
            replica_over(db.open().await, settings(), |c| c).await,
        ];
        let tenant = format!("globex-stream-{stream}");
        let key = replicas[0].store.add_gateway_key(&tenant).await.unwrap();
        let tools = json!([{"name": "now", "description": "The time",
                            "input_schema": {"type": "object", "properties": {}}}]);
        let mut messages = vec![json!({"role": "user", "content": "[tools=1] what time is it?"})];
        let mut pending = None::<Reply>;
        for n in 0..TURNS {
            let body = json!({"model": CLAUDE, "max_tokens": 20000, "stream": stream,
                              "thinking": {"type": "enabled", "budget_tokens": 16000},
                              "tools": tools, "messages": messages});
            let reply = turn(replicas[n % 2].addr, Door::Messages, &key, &body).await;
            if let Some(previous) = pending.take() {
                previous.finish(Door::Messages).await;
            }
            let (blocks, thought) = messages_answer(&reply.events);
            assert!(
                thought || n > 0,
                "stream {stream}: the client saw thinking: {:?}",
                reply.events
            );
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| json!({"type": "tool_result", "tool_use_id": b["id"], "content": "12:00"}))
                .collect();
            assert_eq!(calls.is_empty(), n > 0, "stream {stream}: {blocks:?}");
            messages.push(json!({"role": "assistant", "content": blocks}));
            messages.push(if calls.is_empty() {
                json!({"role": "user", "content": "thanks, and the date?"})
            } else {
                json!({"role": "user", "content": calls})
            });
            pending = Some(reply);
        }
        let requests = last_turn_read(pending, Door::Messages, &sim, stream).await;
        requests.iter().for_each(|r| drop(received(r)));
        let minted = minted_signatures(&requests[0]);
        assert!(
            !minted.is_empty(),
            "stream {stream}: Claude signed its thinking"
        );
        let raw = received(&requests[1]);
        for signature in &minted {
            let carried = format!(r#""signature":{}"#, Value::String(signature.clone()));
            assert!(
                raw.contains(&carried),
                "stream {stream}: the tool result's turn did not carry {signature}: {raw}"
            );
        }
        let store = &replicas[1].store;
        let id = only_conversation(store, &tenant).await;
        assert_eq!(roles(store, &id).await, TOOL_TURN_THEN_A_TURN);
        for gateway in replicas {
            gateway.stop().await;
        }
    }
}

both!(a_replica_killed_mid_stream_loses_nothing_and_the_retry_on_another_succeeds);
/// Turn 1 on replica B; turn 2 streamed by replica A from a slow upstream, A killed once the
/// client saw its first reasoning delta. The client never saw the step end, and A had committed
/// nothing of the turn (the user message is stored with the reply's first step, which had not
/// ended): the store still holds turn 1 alone. The same request retried on B succeeds, its
/// upstream request carrying turn 1's reasoning as minted, and lands at the tip: one
/// conversation, no branch (a branch would mean A had committed a step the client never saw).
async fn a_replica_killed_mid_stream_loses_nothing_and_the_retry_on_another_succeeds(db: TestDb) {
    let sim = slow_deepseek(Duration::from_millis(150)).await;
    let a = doomed(&db, &sim);
    let b: Running = replica(db.open().await, &sim.base_url(), |c| c).await;
    let key = b.store.add_gateway_key("acme").await.unwrap();
    let first = json!({"model": "deepseek/deepseek-v4-pro",
                       "messages": [{"role": "user", "content": "hello"}]});
    let reply = turn(b.addr, Door::Chat, &key, &first).await;
    let (text, _, session) = chat_answer(&reply.events);
    let session = session.unwrap();
    let body = json!({"model": "deepseek/deepseek-v4-pro", "stream": true, "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": text},
        {"role": "user", "content": "tell me more"},
    ]});

    // A streams slowly; the client has its first reasoning delta when A dies.
    let response = post(a.addr, Door::Chat, &key, &body).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream().eventsource();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("a chunk within 10 s")
            .expect("the stream is open")
            .unwrap();
        let event = data(&event.data);
        assert!(!Door::Chat.finishes(&event), "{event}");
        if event["choices"][0]["delta"]["reasoning_content"].is_string() {
            break;
        }
    }
    a.kill();
    // The connection breaks (an error reading it) or ends, never with the finishing chunk.
    let after = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends once A is dead");
    let after: Vec<Value> = after.iter().flatten().map(|e| data(&e.data)).collect();
    assert!(!after.iter().any(|e| Door::Chat.finishes(e)), "{after:?}");
    assert!(!after.iter().any(|e| e == "[DONE]"), "{after:?}");
    assert_eq!(
        only_conversation(&b.store, "acme").await,
        session,
        "nothing of A's turn was stored"
    );
    assert_eq!(roles(&b.store, &session).await, ["user", "assistant"]);

    // The client retries the same request on B.
    let retried = turn(b.addr, Door::Chat, &key, &body).await;
    let events = retried.finish(Door::Chat).await;
    let (_, reasoning, landed) = chat_answer(&events);
    assert_eq!(
        landed.as_deref(),
        Some(session.as_str()),
        "at the tip, no branch"
    );

    let requests = requests_of(&sim, 3, "turn 1, A's turn 2, B's retry");
    let carried = carried_reasoning(&requests[0]);
    for request in &requests[1..] {
        assert!(received(request).contains(&carried), "{request:?}");
    }
    assert_eq!(
        requests[2].raw, requests[1].raw,
        "the retry's upstream request is A's"
    );
    assert_eq!(minted_reasoning(&requests[2]), reasoning);
    assert_eq!(only_conversation(&b.store, "acme").await, session);
    let stored = b.store.messages(&session).await.unwrap();
    assert_eq!(
        roles(&b.store, &session).await,
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(
        stored[3].reasoning_content.as_ref().unwrap().text(),
        reasoning
    );
    b.stop().await;
}

both!(a_replica_killed_after_its_commit_answers_the_retry_on_another_from_the_store);
/// Through each door: turn 1 on replica B; turn 2 streamed by replica A, which commits its step
/// (the test polls the store until it is there) and is killed before the client read the
/// finishing event: the client never saw that reply and sends the same request to B. B answers
/// it with A's stored reply (its receipt, written in the same commit): no second upstream
/// request, no branch. The next turn, continuing that reply, lands at the tip and carries both
/// turns' reasoning.
async fn a_replica_killed_after_its_commit_answers_the_retry_on_another_from_the_store(db: TestDb) {
    for door in [Door::Chat, Door::Messages] {
        killed_after_commit(&db, door).await;
    }
}

/// [`a_replica_killed_after_its_commit_answers_the_retry_on_another_from_the_store`]
/// through `door`.
async fn killed_after_commit(db: &TestDb, door: Door) {
    let sim = slow_deepseek(Duration::from_millis(20)).await;
    let a = doomed(db, &sim);
    let b: Running = replica(db.open().await, &sim.base_url(), |c| c).await;
    let tenant = format!("acme-{door:?}");
    let key = b.store.add_gateway_key(&tenant).await.unwrap();
    let mut turns = vec!["hello".to_owned()];
    let reply = turn(b.addr, door, &key, &body(door, false, &turns)).await;
    turns.push(text_of(door, &reply.events));
    turns.push("tell me more".to_owned());
    let session = only_conversation(&b.store, &tenant).await;
    let retried = body(door, true, &turns);

    // A answers and commits; it dies before the client reads the end of its stream.
    let orphan = post(a.addr, door, &key, &retried).await;
    assert_eq!(orphan.status(), 200);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while roles(&b.store, &session).await.len() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "{door:?}: A committed within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.kill();
    drop(orphan);

    // The client retries the same request on B: A's stored reply answers it, with no second
    // upstream request and no branch (issue 47: a paid reply is never paid twice).
    let reply = turn(b.addr, door, &key, &retried).await;
    let events = reply.finish(door).await;
    let requests = requests_of(&sim, 2, &format!("{door:?}: turn 1 and A's turn 2, only"));
    assert_eq!(
        sessions_where(&b.store, |s| s.parent_id.as_deref()
            == Some(session.as_str()))
        .await
        .len(),
        0,
        "{door:?}: no branch"
    );
    let stored = b.store.messages(&session).await.unwrap();
    assert_eq!(
        roles(&b.store, &session).await,
        ["user", "assistant", "user", "assistant"],
        "{door:?}"
    );
    assert_eq!(
        stored[3].reasoning_content.as_ref().unwrap().text(),
        minted_reasoning(&requests[1]),
        "{door:?}: A's step"
    );
    let answered = text_of(door, &events);
    assert_eq!(
        Some(answered.as_str()),
        stored[3]
            .content
            .as_ref()
            .and_then(|c| c.as_str())
            .as_deref(),
        "{door:?}: B answered with A's stored reply"
    );

    // The next turn continues that reply at the tip, carrying both turns' reasoning.
    turns.push(answered);
    turns.push("and then?".to_owned());
    turn(b.addr, door, &key, &body(door, false, &turns)).await;
    let requests = sim.requests();
    let raw = received(&requests[2]);
    for earlier in [&requests[0], &requests[1]] {
        let carried = carried_reasoning(earlier);
        assert!(raw.contains(&carried), "{door:?}: {raw}");
    }
    assert_eq!(roles(&b.store, &session).await, THREE_TURNS, "{door:?}");
    b.stop().await;
}
