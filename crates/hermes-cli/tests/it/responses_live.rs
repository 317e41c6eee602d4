//! Issue 19 end to end: the real binary against the strict `openai-responses` simulator.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;

use crate::tool_loop::{Row, Wire};
use serde_json::Value;

use crate::wire::{
    DEEPSEEK_KEY, ON_DEEPSEEK, continue_on_deepseek, header, kept_then_two, raw, resume_args,
    session_id, turn_args,
};

pub(crate) const MODEL: &str = "gpt-5.2";
const OTHER_MODEL: &str = "gpt-5.1";
pub(crate) const KEY: &[(&str, &str)] = &[("OPENAI_API_KEY", "sk-test")];

/// A finished loop of `steps` tool steps in `steps + 1` requests.
fn loop_done(out: &Value, steps: usize) {
    crate::wire::loop_done(out, steps, steps + 1);
}

/// What these tests ask of a home beyond running hermes.
trait ResponsesHome {
    /// The stored assistant turns of a session.
    async fn turns(&self, id: &str) -> Vec<Turn>;
    /// One more streamed thinking turn of session `id` on `model` at `base` with `query`: a
    /// loop of one tool step, finished.
    async fn resume_on(&self, id: &str, base: &str, model: &str, query: &str);
    /// Starts a thinking session on [`MODEL`] at `base` with `query`, streamed or not: the
    /// `chat --json` summary.
    async fn start(&self, base: &str, stream: bool, query: &str) -> Value;
}

impl ResponsesHome for Home {
    async fn turns(&self, id: &str) -> Vec<Turn> {
        turns(&self.export(id).await)
    }

    async fn resume_on(&self, id: &str, base: &str, model: &str, query: &str) {
        let args = [
            &["--resume", id][..],
            &responses_args(base, model, true, query),
        ]
        .concat();
        loop_done(&self.chat(&args, KEY).await, 1);
    }

    async fn start(&self, base: &str, stream: bool, query: &str) -> Value {
        self.chat(&responses_args(base, MODEL, stream, query), KEY)
            .await
    }
}

/// A Responses tool loop, each encrypted reasoning item before its call, then resumed: see
/// [`crate::tool_loop`].
pub(crate) struct Responses;

impl Wire for Responses {
    type Turn = Turn;

    fn stored(&self, row: &Row, turn: &Turn, k: usize) {
        assert_eq!(turn.reasoning.len(), 1, "{turn:?}");
        assert!(turn.reasoning_content.is_some(), "a summary: {turn:?}");
        if k < row.steps {
            assert_eq!(turn.calls.len(), 1, "{turn:?}");
            assert!(turn.calls[0].1.is_some(), "{turn:?}");
        }
    }

    fn request(&self, _: &Row, r: &RecordedRequest, stream: bool, earlier: &[Turn], _: usize) {
        accepted(r, stream);
        replays(r, earlier, 0);
    }
}

/// `--provider openai-responses` on `base` with `model` and thinking on, asking `query`.
fn responses_args<'a>(base: &'a str, model: &'a str, stream: bool, query: &'a str) -> Vec<&'a str> {
    let mut args = crate::support::target("openai-responses", model, base, &[]);
    turn_args(&mut args, stream, query);
    args
}

/// The `openai-responses` simulator, a fresh home and its base URL (`/v1`).
async fn responses_home() -> (Sim, Home, String) {
    let (sim, home, base) = crate::support::sim_home("openai-responses").await;
    (sim, home, format!("{base}/v1"))
}

/// A Responses request accepted whole: 200, no simulator note, `store:false`, encrypted
/// reasoning asked for, the bearer sent (recorded redacted) and never in the body.
fn accepted(r: &RecordedRequest, stream: bool) {
    assert_eq!(r.status, 200, "{}: {}\n{}", r.path, r.response, raw(r));
    assert!(r.notes.is_empty(), "{}: {:?}", r.path, r.notes);
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.body["store"], false, "{}", r.body);
    assert!(
        r.body["include"]
            .as_array()
            .unwrap()
            .contains(&Value::from("reasoning.encrypted_content")),
        "{}",
        r.body
    );
    assert_eq!(r.body["stream"].as_bool().unwrap_or(false), stream);
    assert!(header(r, "authorization").is_some());
    assert!(!raw(r).contains("sk-test"));
}

// ---------------------------------------------------------------------------------------------
// Stored items, as exported

crate::tool_loop::stored_turn!(Turn, |export: &str| turns(
    &serde_json::from_str(export).unwrap()
));

/// A stored assistant message: its origin model, its reasoning items as received, the
/// `response_item_id` of each of its tool calls, the ids of its message items, its summary.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Turn {
    model: String,
    reasoning: Vec<Value>,
    calls: Vec<(String, Option<String>)>,
    messages: Vec<String>,
    reasoning_content: Option<String>,
}

impl Turn {
    fn ciphertexts(&self) -> Vec<String> {
        self.reasoning
            .iter()
            .map(|i| i["encrypted_content"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The provider's compaction item a stored checkpoint carries, as exported.
fn compaction_item(m: &Value) -> Option<&Value> {
    m["reasoning_details"]
        .as_array()?
        .iter()
        .find(|i| i["type"] == "compaction")
}

fn turns(export: &Value) -> Vec<Turn> {
    crate::support::assistants(export)
        .filter(|m| compaction_item(m).is_none())
        .map(|m| Turn {
            model: m["origin"]["model"].as_str().unwrap_or_default().to_owned(),
            reasoning: m["codex_reasoning_items"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            calls: m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        // A call of another wire has only its `id`.
                        c["call_id"]
                            .as_str()
                            .or(c["id"].as_str())
                            .unwrap()
                            .to_owned(),
                        c["response_item_id"].as_str().map(str::to_owned),
                    )
                })
                .collect(),
            messages: m["codex_message_items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect(),
            reasoning_content: m["reasoning_content"].as_str().map(str::to_owned),
        })
        .collect()
}

fn ciphertexts(turns: &[Turn]) -> Vec<String> {
    turns.iter().flat_map(Turn::ciphertexts).collect()
}

fn input(r: &RecordedRequest) -> &Vec<Value> {
    r.body["input"].as_array().unwrap()
}

/// Every stored reasoning item of `stored` reaches `r` once, its `encrypted_content` byte for
/// byte, directly followed by its paired item with its id; and no other reasoning item is sent
/// but `own` more (minted within the loop in flight).
fn replays(r: &RecordedRequest, stored: &[Turn], own: usize) {
    let text = raw(r);
    let input = input(r);
    let sent: Vec<usize> = (0..input.len())
        .filter(|&i| input[i]["type"] == "reasoning")
        .collect();
    assert_eq!(
        sent.len(),
        ciphertexts(stored).len() + own,
        "reasoning items in {text}"
    );
    for turn in stored {
        assert!(!turn.reasoning.is_empty(), "a reasoning turn: {turn:?}");
        for item in &turn.reasoning {
            let ct = item["encrypted_content"].as_str().unwrap();
            assert_eq!(
                text.matches(&format!("\"encrypted_content\":\"{ct}\""))
                    .count(),
                1,
                "{ct} once in {text}"
            );
            let at = sent
                .iter()
                .copied()
                .find(|&i| input[i]["encrypted_content"] == ct)
                .unwrap();
            assert_eq!(input[at]["id"], item["id"], "{text}");
            let next = &input[at + 1];
            let id = next["id"].as_str().unwrap_or_else(|| panic!("{next}"));
            match next["type"].as_str() {
                Some("function_call") => {
                    let call = turn
                        .calls
                        .iter()
                        .find(|(_, rid)| rid.as_deref() == Some(id))
                        .unwrap_or_else(|| panic!("{id} not a stored call of {turn:?}"));
                    assert_eq!(next["call_id"], call.0.as_str());
                }
                _ => {
                    assert_eq!(next["role"], "assistant", "{next}");
                    assert!(turn.messages.iter().any(|m| m == id), "{id}: {turn:?}");
                }
            }
        }
    }
}

/// No reasoning item reaches `r` and no function call carries an `id`.
fn replays_nothing(r: &RecordedRequest, stale: &[String]) {
    let text = raw(r);
    for item in input(r) {
        assert_ne!(item["type"], "reasoning", "{text}");
        if item["type"] == "function_call" {
            assert!(item.get("id").is_none(), "{item} in {text}");
        }
        if item["role"] == "assistant" {
            assert!(item.get("id").is_none(), "{item} in {text}");
        }
    }
    for ct in stale {
        assert!(!text.contains(ct.as_str()), "stale {ct} in {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. A three-step loop, streamed and not, resumed, compacted and branched

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_responses_session_and_its_branch_both_continue() {
    let (sim, home, base) = responses_home().await;
    let out = home.start(&base, true, "[tools=3] what time is it?").await;
    let id = session_id(&out);
    for q in ["[tools=2] second", "[tools=1] third", "fourth", "fifth"] {
        home.chat(&resume_args(&id, true, q), KEY).await;
    }
    for r in sim.requests() {
        accepted(&r, true);
    }
    let before = home.turns(&id).await;

    let (status, summary_requests) = crate::support::compact(&sim, &home, &id, KEY).await;
    assert!(
        status.starts_with("context compacted by the provider (POST /responses/compact)"),
        "{status}"
    );
    // Hermes' own summary (for other models), then the provider's compaction.
    assert_eq!(summary_requests.len(), 2, "{summary_requests:?}");
    for r in &summary_requests {
        assert_eq!(r.status, 200, "summary request: {}\n{}", r.response, raw(r));
    }
    assert_eq!(summary_requests[0].path, "/v1/responses");
    let compact = &summary_requests[1];
    assert_eq!(compact.path, "/v1/responses/compact");
    // The compaction request replays the summarised turns on their own prefix: nothing dropped.
    assert!(compact.notes.is_empty(), "{:?}", compact.notes);
    let reply: Value = serde_json::from_str(&compact.response).unwrap();
    let output = reply["output"].as_array().unwrap();
    let item = output.last().unwrap();
    assert_eq!(item["type"], "compaction");
    let item_text = serde_json::to_string(item).unwrap();
    assert!(compact.response.contains(&item_text));
    // Stored verbatim on the checkpoint, hermes' own summary beside it.
    let export = home.export(&id).await;
    let checkpoint = crate::support::assistants(&export)
        .find(|m| compaction_item(m).is_some())
        .expect("a checkpoint");
    assert_eq!(compaction_item(checkpoint).unwrap(), item);
    assert!(
        checkpoint["hermes_compaction_summary"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{checkpoint}"
    );
    let kept = home.turns(&id).await;
    assert!(kept.len() < before.len(), "some turns were summarised");
    for turn in &kept {
        assert!(before.contains(turn), "kept as stored: {turn:?}");
    }

    let branch = home.branch(&id, &[]).await;
    assert_ne!(branch, id);
    assert_eq!(home.turns(&branch).await, kept);

    for session in [&id, &branch] {
        sim.clear_requests();
        let out = home
            .chat(&resume_args(session, true, "[tools=1] next"), KEY)
            .await;
        loop_done(&out, 1);
        let now = home.turns(session).await;
        assert_eq!(now[..kept.len()], kept[..]);
        let requests = sim.requests();
        assert_eq!(requests.len(), 2, "{session}: no refusal, no resend");
        for (k, r) in requests.iter().enumerate() {
            // The provider's compaction item stands for what it compacted, so the kept turns'
            // reasoning items are accepted (no note of a drop): the input starts with it, byte
            // for byte.
            accepted(r, true);
            assert!(
                raw(r).contains(&format!(r#""input":[{item_text},"#)),
                "{}",
                raw(r)
            );
            replays(r, &now[..kept.len() + k], 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Responses → DeepSeek → Responses, then another model

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_go_only_to_the_model_and_host_that_minted_them_never_to_deepseek() {
    let (sim, home, base) = responses_home().await;
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let out = home.start(&base, true, "[tools=2] what time is it?").await;
    let id = session_id(&out);
    loop_done(&out, 2);
    let minted = home.turns(&id).await;
    let minted_cts = ciphertexts(&minted);
    assert_eq!(minted_cts.len(), 3);

    // DeepSeek: no ciphertext, no item, no Responses-only key; the summaries as
    // `reasoning_content`.
    let never = [
        "encrypted_content",
        "codex_",
        "\"rs_",
        "\"call_id\"",
        "\"response_item_id\"",
        "hermes_block_order",
    ];
    let leaks = (&never[..], &minted_cts[..]);
    let requests =
        continue_on_deepseek(&home, &id, &deepseek, ON_DEEPSEEK, DEEPSEEK_KEY, leaks).await;
    for r in &requests {
        let sent: Vec<Option<&str>> = crate::support::assistants(&r.body)
            .map(|m| m["reasoning_content"].as_str())
            .collect();
        let stored: Vec<Option<&str>> = minted
            .iter()
            .map(|t| t.reasoning_content.as_deref())
            .collect();
        assert!(stored.iter().all(Option::is_some), "{minted:?}");
        assert_eq!(sent[..3], stored[..], "the summaries, as stored");
    }
    let after_deepseek = home.turns(&id).await;
    assert_eq!(after_deepseek[..3], minted[..]);
    assert!(after_deepseek[3..].iter().all(|t| t.reasoning.is_empty()));

    // Back on the same model and host: the items are replayed again.
    sim.clear_requests();
    home.resume_on(&id, &base, MODEL, "[tools=1] back?").await;
    let back = home.turns(&id).await;
    assert_eq!(after_deepseek.len(), 5);
    let requests = kept_then_two(&back, &after_deepseek, &sim);
    for (k, r) in requests.iter().enumerate() {
        accepted(r, true);
        // The DeepSeek turns carry no item; their calls go without `id`.
        replays(r, &minted, k);
    }
    // Its own step and answer, each with its item; the step's item went back within the loop.
    let own: Vec<String> = ciphertexts(&back[5..]);
    assert_eq!(own.len(), 2);
    assert!(raw(&requests[1]).contains(&own[0]));

    // Another model: no reasoning item at all, and the calls go without `id`.
    sim.clear_requests();
    let mut stale = minted_cts.clone();
    stale.extend(own);
    home.resume_on(&id, &base, OTHER_MODEL, "[tools=1] on 5.1?")
        .await;
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    accepted(&requests[0], true);
    assert_eq!(requests[0].body["model"], OTHER_MODEL);
    replays_nothing(&requests[0], &stale);
    accepted(&requests[1], true);
    for ct in &stale {
        assert!(!raw(&requests[1]).contains(ct.as_str()), "stale {ct}");
    }
    let last = home.turns(&id).await;
    assert_eq!(last[7].model, OTHER_MODEL);
    replays(&requests[1], &last[7..8], 0);
}

// ---------------------------------------------------------------------------------------------
// 3. A Python-original session, imported

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_python_original_session_continues_with_its_items_replayed() {
    let (sim, home, base) = responses_home().await;
    let id = session_id(&home.start(&base, false, "[tools=2] what time is it?").await);
    let mut export = home.export(&id).await;
    let stored = turns(&export);
    for m in export["messages"].as_array_mut().unwrap() {
        let m = m.as_object_mut().unwrap();
        let hermes_only: Vec<String> = m
            .keys()
            .filter(|k| k.starts_with("hermes_") || k.as_str() == "origin")
            .cloned()
            .collect();
        for k in hermes_only {
            m.remove(&k);
        }
    }
    let text = export.to_string();
    assert!(text.contains("codex_reasoning_items"), "{text}");
    assert!(!text.contains("hermes_block_order") && !text.contains("\"origin\""));
    let file = home.path().join("original.json");
    std::fs::write(&file, &text).unwrap();
    let imported = home.import(&file).await;
    assert_ne!(imported, id);

    sim.clear_requests();
    home.resume_on(&imported, &base, MODEL, "[tools=1] and now?")
        .await;
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    for (k, r) in requests.iter().enumerate() {
        accepted(r, true);
        replays(r, &stored, k);
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Offline

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_responses_simulator_runs_a_reasoning_tool_loop_with_no_environment() {
    let home = crate::support::home();
    let (_, id) = crate::support::offline_tool_loop(&home, "openai-responses").await;
    let stored = home.turns(&id).await;
    assert_eq!(stored.len(), 3);
    assert!(stored.iter().all(|t| t.reasoning.len() == 1), "{stored:?}");
    assert!(stored[..2].iter().all(|t| t.calls.len() == 1));
}
