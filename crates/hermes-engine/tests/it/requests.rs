//! The request-shaped entry point against the strict DeepSeek V4 simulator and a real SQLite
//! file: `ServingEngine::complete` starts and continues stored sessions with carriers intact, runs
//! client-side tools by returning the calling reply, streams its events, and its futures are
//! `Send` (they run as spawned tasks).

use hermes_core::driver::DriverEvent;
use hermes_core::{FinishReason, Message, RawJson, Role};
use hermes_engine::store::Store;
use hermes_engine::{Choice, Completion, Event, Request, ServingEngine, ToolMode};
use hermes_sim::Sim;

/// An engine serving requests from `store`, DeepSeek at `sim`.
/// The strict DeepSeek V4 simulator, a fresh SQLite store and an engine serving requests
/// from it.
async fn served() -> (Sim, tempfile::TempDir, Store, ServingEngine) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let engine = crate::request_engine(&sim, &store);
    (sim, dir, store, engine)
}

fn deepseek() -> Choice {
    Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None)
}

fn tool_definitions() -> RawJson {
    RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time","parameters":{"type":"object","properties":{}}}}]"#,
    )
    .unwrap()
}

/// `tenant`'s history as a request.
fn history_request(tenant: &str, history: Vec<Message>) -> Request {
    Request::from_history(hermes_engine::History::new(
        tenant,
        history
            .into_iter()
            .map(hermes_core::client::ClientMessage::read),
    ))
}

/// `tenant`'s history as a request offering the client's own `now` tool.
fn client_request(tenant: &str, history: Vec<Message>) -> Request {
    history_request(tenant, history).tools(ToolMode::Client(tool_definitions()))
}

/// Runs `request` to the end: its completion.
async fn complete(engine: &ServingEngine, request: Request) -> Completion {
    engine.complete(request, &|_| {}).await.unwrap()
}

/// Runs `request`, which must fail: the error.
async fn refused(engine: &ServingEngine, request: Request) -> hermes_engine::EngineError {
    engine.complete(request, &|_| {}).await.unwrap_err()
}

/// Runs `request`, which must be refused for its `parameter`.
async fn refused_for(engine: &ServingEngine, request: Request, parameter: &'static str) {
    let err = refused(engine, request).await;
    assert_eq!(
        err.kind(),
        hermes_engine::ErrorKind::InvalidParameter { parameter },
        "{err}"
    );
}

/// acme's client asks `[tools=1] what time is it?` on `choice` with its own tool: the calling
/// reply, and the client's history after it (the call turn as a client that keeps only content
/// and tool calls sends it, then the tool's result `12:00`).
async fn a_call_answered(engine: &ServingEngine, choice: Choice) -> (Completion, Vec<Message>) {
    let mut client = vec![Message::text(Role::User, "[tools=1] what time is it?")];
    let first = complete(
        engine,
        client_request("acme", client.clone()).choice(choice),
    )
    .await;
    let call = &first.messages[0];
    let id = call.tool_calls.as_ref().unwrap()[0].id.clone().unwrap();
    client.push(as_a_forgetful_client_sends_it(call));
    client.push(result_for(&id, "12:00"));
    (first, client)
}

/// `history`, then `reply`'s answer as a client that keeps only content and tool calls sends it
/// back, then the user's `thanks`.
fn thanked(history: &[Message], reply: &Completion) -> Vec<Message> {
    let mut next = history.to_vec();
    next.push(as_a_forgetful_client_sends_it(&reply.messages[0]));
    next.push(Message::text(Role::User, "thanks"));
    next
}

fn result_for(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.tool_call_id = Some(id.to_owned());
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_starts_a_session_and_the_next_continues_it_with_its_reasoning() {
    let (sim, _dir, store, engine) = served().await;

    let first = complete(&engine, Request::user("hello").choice(deepseek())).await;
    assert_eq!(first.finish, Some(FinishReason::Stop));
    assert_eq!(first.messages.len(), 1);
    assert!(
        first.usage.output > 0 && first.usage.reasoning > 0,
        "{:?}",
        first.usage
    );
    let reasoning = first.messages[0]
        .reasoning_content
        .as_ref()
        .expect("DeepSeek thinks")
        .text()
        .into_owned();

    let second = complete(&engine, Request::user("and then?").session(&first.session)).await;
    assert_eq!(second.session, first.session);
    let stored = store.messages(&first.session).await.unwrap();
    assert_eq!(stored.len(), 4);
    // The stored session's provider and model served the second request, and the first
    // reply's thinking went back to DeepSeek byte for byte.
    let bodies = sim.requests();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[1].body["model"], "deepseek-v4-pro");
    assert_eq!(
        bodies[1].body["messages"][1]["reasoning_content"],
        reasoning
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_tools_return_the_calling_reply_and_the_results_continue_it() {
    let (sim, _dir, store, engine) = served().await;

    let calling = complete(
        &engine,
        Request::user("[tools=1] what time is it?")
            .choice(deepseek())
            .tools(ToolMode::Client(tool_definitions())),
    )
    .await;
    assert_eq!(calling.finish, Some(FinishReason::ToolCalls));
    assert_eq!(calling.requests, 1, "the engine ran no tool");
    let calls = calling.messages[0].tool_calls.clone().unwrap();
    assert_eq!(calls.len(), 1);
    let id = calls[0].id.clone().unwrap();
    assert_eq!(
        store.messages(&calling.session).await.unwrap().len(),
        2,
        "the calling reply is stored, paired by the next request"
    );
    let reasoning = calling.messages[0]
        .reasoning_content
        .as_ref()
        .unwrap()
        .text()
        .into_owned();

    let answered = complete(
        &engine,
        Request::user("")
            .session(&calling.session)
            .input(vec![result_for(&id, "12:00")])
            .tools(ToolMode::Client(tool_definitions())),
    )
    .await;
    assert_eq!(answered.finish, Some(FinishReason::Stop));
    let stored = store.messages(&calling.session).await.unwrap();
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    // The strict simulator accepted the tool-call turn with its reasoning echoed back.
    let body = &sim.requests()[1].body;
    assert_eq!(body["messages"][1]["reasoning_content"], reasoning);
    assert_eq!(body["messages"][2]["tool_call_id"], id.as_str());

    // A result that answers nothing is refused before anything is sent or stored.
    refused_for(
        &engine,
        Request::user("")
            .session(&calling.session)
            .input(vec![result_for("nope", "?")]),
        "messages",
    )
    .await;
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(store.messages(&calling.session).await.unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_request_sends_its_deltas_then_the_completion_from_a_spawned_task() {
    let (sim, _dir, store, engine) = served().await;

    let mut events = engine.stream(Request::user("hello").choice(deepseek()));
    let (mut thinking, mut answer) = (String::new(), String::new());
    let mut done: Option<Completion> = None;
    while let Some(event) = events.next().await {
        match event {
            Event::Driver(DriverEvent::Delta { reasoning, text }) => {
                if reasoning {
                    thinking.push_str(&text);
                } else {
                    answer.push_str(&text);
                }
            }
            Event::Done(completion) => done = Some(completion),
            Event::Failed(e) => panic!("{e}"),
            _ => {}
        }
    }
    let done = done.expect("the stream ends with its completion");
    let message = &done.messages[0];
    assert_eq!(
        answer,
        message.content.as_ref().unwrap().as_str().unwrap(),
        "the deltas are the stored answer"
    );
    assert_eq!(thinking, message.reasoning_content.as_ref().unwrap().text());
    assert_eq!(sim.requests()[0].body["stream"], true);
    assert_eq!(store.messages(&done.session).await.unwrap().len(), 2);

    // `complete` itself runs as a spawned task: its future is `Send + 'static` once owned.
    let spawned = tokio::spawn({
        let engine = engine.clone();
        let session = done.session.clone();
        async move {
            engine
                .complete(Request::user("again").session(session), &|_| {})
                .await
        }
    });
    assert_eq!(spawned.await.unwrap().unwrap().session, done.session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_reaches_the_wire_and_a_value_it_cannot_send_is_refused_by_name() {
    use hermes_core::{Sampling, ToolChoice};
    let (sim, _dir, store, engine) = served().await;

    let sampled = Sampling::new().temperature(0.25).max_tokens(100).seed(7);
    complete(
        &engine,
        Request::user("hello").choice(deepseek()).sampling(sampled),
    )
    .await;
    let body = &sim.requests()[0].body;
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["seed"], 7);

    // A tool choice with no tools cannot be sent: refused by name, nothing sent or stored.
    refused_for(
        &engine,
        Request::user("hi")
            .choice(deepseek())
            .sampling(Sampling::new().tool_choice(ToolChoice::Required)),
        "tool_choice",
    )
    .await;
    assert_eq!(sim.requests().len(), 1);
    assert_eq!(
        store.list().await.unwrap().len(),
        1,
        "no session for the refused one"
    );
}

/// What a client that drops every reasoning field sends back: role, content and tool calls.
fn as_a_forgetful_client_sends_it(message: &Message) -> Message {
    let mut sent = Message::text(message.role, "");
    sent.content = message.content.clone();
    sent.tool_calls = message.tool_calls.clone().map(|calls| {
        calls
            .into_iter()
            .map(|mut call| {
                call.extra_content = None;
                call.extra.clear();
                call
            })
            .collect()
    });
    sent.tool_call_id = message.tool_call_id.clone();
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_history_without_reasoning_finds_its_conversation_gets_it_back_and_an_edited_turn_branches()
 {
    let (sim, _dir, store, engine) = served().await;

    // Turn 1: the client's history is one user message; it keeps only content and tool calls
    // of the reply, and answers the call.
    let (first, client) = a_call_answered(&engine, deepseek()).await;
    let minted = first.messages[0]
        .reasoning_content
        .as_ref()
        .unwrap()
        .text()
        .into_owned();
    // No session named: the history's call turn finds it.
    let second = complete(&engine, client_request("acme", client.clone())).await;
    assert_eq!(second.session, first.session, "it continued the tip");
    assert_eq!(second.branched_from, None);
    let body = &sim.requests()[1].body;
    assert_eq!(
        body["messages"][1]["reasoning_content"], minted,
        "DeepSeek got its reasoning back byte for byte"
    );
    let stored = store.messages(&first.session).await.unwrap();
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);

    // The client edits its first question and asks again: nothing of the stored conversation
    // stands at its place any more (docs/spec.md §10: every message after an edited one gets
    // nothing), so this is a new conversation — no parent, and no carrier of the old one, though
    // its call turn is equal in content.
    let mut edited = client.clone();
    edited[0] = Message::text(Role::User, "[tools=1] what time is it in Paris?");
    let third = complete(&engine, client_request("acme", edited).choice(deepseek())).await;
    assert_ne!(third.session, first.session);
    assert_eq!(third.branched_from, None);
    assert_eq!(store.session(&third.session).await.unwrap().parent_id, None);
    assert_eq!(
        store.messages(&first.session).await.unwrap().len(),
        4,
        "the stored conversation is untouched"
    );
    let body = sim.requests().last().unwrap().body.clone();
    assert_eq!(
        body["messages"][1]["reasoning_content"], " ",
        "the call turn after the edit is not at its place: DeepSeek gets the pad"
    );
    let new = store.messages(&third.session).await.unwrap();
    assert_eq!(
        text_of(&new[0]),
        "[tools=1] what time is it in Paris?",
        "it holds the client's edited history"
    );
    assert_ne!(new[1], stored[1], "not the stored call turn's carriers");

    // An edit after the call turn: the call turn stands at its place, the turn branches
    // from there and keeps its carriers.
    let mut later = client.clone();
    later.truncate(3);
    later.push(Message::text(Role::User, "[tools=1] and in Paris?"));
    let fourth = complete(&engine, client_request("acme", later)).await;
    assert_eq!(
        fourth.branched_from.as_deref(),
        Some(first.session.as_str())
    );
    let branch = store.messages(&fourth.session).await.unwrap();
    assert_eq!(
        branch[1], stored[1],
        "the call turn before the edit kept its carriers"
    );

    // Another tenant sending the very same history finds nothing of acme's: a new session,
    // and its assistant turn goes as the client sent it (DeepSeek gets the pad, not acme's
    // reasoning).
    let other = complete(
        &engine,
        client_request("globex", client.clone()).choice(deepseek()),
    )
    .await;
    assert_ne!(other.session, first.session);
    assert_ne!(other.session, third.session);
    assert_ne!(other.session, fourth.session);
    assert_eq!(other.branched_from, None);
    let body = sim.requests().last().unwrap().body.clone();
    assert_eq!(body["messages"][1]["reasoning_content"], " ");
    let meta = store.session(&other.session).await.unwrap();
    assert_eq!(meta.tenant.as_deref(), Some("globex"));

    // Naming acme's session does not help either.
    let err = refused(
        &engine,
        client_request("globex", client).session(&first.session),
    )
    .await;
    assert_eq!(
        err.kind(),
        hermes_engine::ErrorKind::NotFound {
            session: &first.session
        }
    );
}

use crate::text_of;

/// A refusal of carriers a gateway client sent itself (bytes the store never held) is that
/// session's verdict only; the same refusal of carriers the store minted teaches the fleet
/// (docs/spec.md §10, "What is re-attached").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_a_clients_own_carriers_stays_with_its_session_and_of_stored_ones_teaches_the_fleet()
 {
    use hermes_sim::{Sim, Switches};
    let sim = Sim::start("openrouter").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let engine = crate::request_engine_for("openrouter", &sim, &store);
    let openrouter = || Choice::new(Some("openrouter"), Some("anthropic/claude-sonnet-5"), None);
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));

    // A history the store never saw, whose assistant turn carries the client's own details.
    let forged: Vec<Message> = serde_json::from_value(serde_json::json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello",
         "reasoning_details": [{"type": "reasoning.text", "text": "my own", "format": "unknown", "index": 0}]},
        {"role": "user", "content": "again"}
    ]))
    .unwrap();
    let done = complete(
        &engine,
        history_request("acme", forged).choice(openrouter()),
    )
    .await;
    let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [400, 200],
        "refused once, retried without the field"
    );
    assert!(
        store.fleet_verdicts().await.unwrap().is_empty(),
        "the client's own bytes teach the fleet nothing"
    );
    let own = store.verdicts(&done.session).await.unwrap();
    let target = hermes_core::RouteTarget::new(
        "openrouter",
        Some(&sim.base_url()),
        "anthropic/claude-sonnet-5",
    );
    assert!(
        own.refused_for(&target)
            .contains(hermes_core::Carrier::ReasoningDetails),
        "the session keeps its own verdict: {own:?}"
    );

    // Control: the store's own minted details refused the same way teach the fleet.
    sim.set_switches(Switches::default());
    sim.clear_requests();
    let (first, client) = a_call_answered(&engine, openrouter()).await;
    let call = &first.messages[0];
    assert!(call.reasoning_details.is_some(), "minted details: {call:?}");
    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    complete(&engine, client_request("acme", client)).await;
    let verdicts = store.fleet_verdicts().await.unwrap();
    assert!(
        verdicts.iter().any(|v| v.field == "reasoning_details"),
        "{verdicts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_diverging_mid_conversation_branches_sharing_the_prefix_by_reference() {
    use hermes_engine::History;
    let (_sim, _dir, store, engine) = served().await;
    let tools = || ToolMode::Client(tool_definitions());
    let ask = |history: Vec<Message>| {
        Request::from_history(History::new(
            "acme",
            history
                .into_iter()
                .map(hermes_core::client::ClientMessage::read),
        ))
        .choice(deepseek())
        .tools(tools())
    };
    // A tool call, its result, an answer, a second question and its answer: six stored.
    let mut client = vec![Message::text(Role::User, "[tools=1] what time is it?")];
    let first = complete(&engine, ask(client.clone())).await;
    let call = &first.messages[0];
    let id = call.tool_calls.as_ref().unwrap()[0].id.clone().unwrap();
    client.push(as_a_forgetful_client_sends_it(call));
    client.push(result_for(&id, "12:00"));
    let second = complete(&engine, ask(client.clone())).await;
    client.push(as_a_forgetful_client_sends_it(&second.messages[0]));
    client.push(Message::text(Role::User, "and in Paris?"));
    let third = complete(&engine, ask(client.clone())).await;
    assert_eq!(third.session, first.session);
    let parent = store.messages(&first.session).await.unwrap();
    assert_eq!(parent.len(), 6);

    // The client replaces its second question: the histories part at message 4.
    let mut edited = client[..4].to_vec();
    edited.push(Message::text(Role::User, "and in Tokyo?"));
    let fourth = complete(&engine, ask(edited.clone())).await;
    assert_eq!(
        fourth.branched_from.as_deref(),
        Some(first.session.as_str())
    );
    let meta = store.session(&fourth.session).await.unwrap();
    let fork = meta.fork.as_ref().expect("the branch shares the prefix");
    assert_eq!(
        (fork.tip().session(), fork.count()),
        (first.session.as_str(), 4),
        "four messages shared by reference"
    );
    // Its own rows are the edited question and the answer: six in its view, two its own.
    assert_eq!(meta.message_count, 6);
    let branch = store.messages(&fourth.session).await.unwrap();
    assert_eq!(branch.len(), 6);
    assert_eq!(
        branch[..4],
        parent[..4],
        "the prefix as stored, every carrier included"
    );
    assert_eq!(text_of(&branch[4]), "and in Tokyo?");
    assert_eq!(branch[5], fourth.messages[0]);
    assert_eq!(store.messages(&first.session).await.unwrap(), parent);

    // Continuing on the branch: its own answer finds it, and the turn is appended there.
    let fifth = complete(&engine, ask(thanked(&edited, &fourth))).await;
    assert_eq!(
        (fifth.session.as_str(), fifth.branched_from.as_deref()),
        (fourth.session.as_str(), None)
    );
    assert_eq!(store.messages(&fourth.session).await.unwrap().len(), 8);
    // Continuing on the parent: its own second answer finds it.
    let sixth = complete(&engine, ask(thanked(&client, &third))).await;
    assert_eq!(
        (sixth.session.as_str(), sixth.branched_from.as_deref()),
        (first.session.as_str(), None)
    );
    // A history ending in the shared prefix (a retry of the second question): found where the
    // prefix is stored, and branched from there, sharing it too.
    let mut retry = client[..4].to_vec();
    retry.push(Message::text(Role::User, "and in Lima?"));
    let seventh = complete(&engine, ask(retry)).await;
    assert_eq!(
        seventh.branched_from.as_deref(),
        Some(first.session.as_str())
    );
    let meta = store.session(&seventh.session).await.unwrap();
    assert_eq!(meta.fork.as_ref().map(|f| f.count()), Some(4));
    assert_eq!(
        store.messages(&seventh.session).await.unwrap()[..4],
        parent[..4]
    );
}

/// The most a turn's future may take, in bytes: each open stream of a gateway keeps one alive
/// (issue 50's memory per stream). The steps before the turn's drive are boxed so that they are
/// not kept in it for the turn's whole life: 5 KB today in a debug build, 25 KB before.
const TURN_FUTURE_MAX: usize = 8_192;

#[tokio::test]
async fn a_turns_future_stays_small() {
    let (_sim, _dir, _store, engine) = served().await;
    let request = history_request("acme", vec![Message::text(Role::User, "hi")]);
    let notify = |_: &DriverEvent| {};
    let future = engine.complete(request, &notify);
    let size = std::mem::size_of_val(&future);
    eprintln!("a turn's future: {size} bytes");
    assert!(
        size <= TURN_FUTURE_MAX,
        "a turn's future takes {size} bytes (at most {TURN_FUTURE_MAX})"
    );
}

/// One way in: a chat session's turns are requests on the same path. Two turns with a server
/// tool through `ChatSession::turn`, and the same two through `ServingEngine::complete` (the second
/// continuing the first's session), against one strict DeepSeek V4 simulator: the bodies it
/// received are the same bytes, pair by pair, and the two stored sessions hold the same
/// messages, reasoning carriers included.
#[tokio::test]
async fn a_chat_sessions_turns_are_the_same_requests_as_the_engines() {
    struct Clock;
    #[async_trait::async_trait]
    impl hermes_core::driver::Tools for Clock {
        async fn call(&self, _: &str, _: &str) -> String {
            "12:00".to_owned()
        }
    }
    let tools = || hermes_engine::Toolset {
        tools: std::sync::Arc::new(Clock),
        definitions: Some(tool_definitions()),
    };
    let (sim, _dir, store, engine) = served().await;
    let turns = ["[tools=1] what time is it?", "and in an hour?"];

    let mut chat = hermes_engine::ChatSession::open(
        engine.engine(),
        store.clone(),
        crate::deepseek_options(&sim.base_url()),
        tools(),
    )
    .await
    .unwrap();
    for text in turns {
        chat.turn(text, &|_| {}).await.unwrap();
    }
    let by_chat = sim.requests();
    let chat_session = chat.id().unwrap().to_owned();
    chat.close().await.unwrap();
    sim.clear_requests();

    let mut session: Option<String> = None;
    for text in turns {
        let mut request = Request::user(text)
            .choice(deepseek())
            .tools(ToolMode::Server(tools()));
        if let Some(id) = &session {
            request = request.session(id.clone());
        }
        session = Some(complete(&engine, request).await.session);
    }
    let by_request = sim.requests();

    assert_eq!(by_chat.len(), 3, "a call and an answer, then one reply");
    assert_eq!(by_chat.len(), by_request.len());
    for (i, (a, b)) in by_chat.iter().zip(&by_request).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(&a.raw),
            String::from_utf8_lossy(&b.raw),
            "upstream request {i}"
        );
    }
    let stored = |id: String| {
        let store = store.clone();
        async move { store.messages(&id).await.unwrap() }
    };
    let chat_rows = stored(chat_session).await;
    assert_eq!(
        chat_rows.len(),
        6,
        "two user turns, a call, its result, an answer and a reply"
    );
    assert!(
        chat_rows.iter().any(|m| m.reasoning_content.is_some()),
        "the carriers are stored"
    );
    assert_eq!(chat_rows, stored(session.unwrap()).await);
}

/// A chat session's turn cancelled after its first step (the REPL's Ctrl-C while the second
/// tool call runs): the exclusive request created the session with its first step (the call and
/// its result), and the session learns its id all the same — memory reloads to what is stored,
/// and the next turn continues that session under its lease instead of starting another.
#[tokio::test]
async fn a_chat_turn_cancelled_after_its_first_step_keeps_the_session_it_created() {
    /// A tool that answers its first call and never the next.
    struct OnceThenStuck(std::sync::atomic::AtomicBool);
    #[async_trait::async_trait]
    impl hermes_core::driver::Tools for OnceThenStuck {
        async fn call(&self, _: &str, _: &str) -> String {
            if self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            "12:00".to_owned()
        }
    }
    let (sim, _dir, store, engine) = served().await;
    let mut chat = hermes_engine::ChatSession::open(
        engine.engine(),
        store.clone(),
        crate::deepseek_options(&sim.base_url()),
        hermes_engine::Toolset {
            tools: std::sync::Arc::new(OnceThenStuck(Default::default())),
            definitions: Some(tool_definitions()),
        },
    )
    .await
    .unwrap();
    let turn = chat.turn("[tools=2] what time is it?", &|_| {});
    let cancelled = tokio::time::timeout(std::time::Duration::from_secs(2), turn).await;
    assert!(cancelled.is_err(), "the second tool call never answers");
    assert_eq!(
        sim.requests().len(),
        2,
        "two calling replies were asked for"
    );
    chat.reload().await.unwrap();
    let id = chat
        .id()
        .expect("the first step created the session")
        .to_owned();
    let stored = store.messages(&id).await.unwrap();
    assert_eq!(
        stored.len(),
        3,
        "the user message, the first call and its result: {stored:?}"
    );
    assert!(stored[1].tool_calls.is_some());
    assert_eq!(chat.conversation.messages, stored);

    chat.turn("never mind", &|_| {}).await.unwrap();
    assert_eq!(chat.id(), Some(id.as_str()), "the next turn continues it");
    assert_eq!(store.messages(&id).await.unwrap().len(), 5);
    assert_eq!(store.list().await.unwrap().len(), 1, "no second session");
}
