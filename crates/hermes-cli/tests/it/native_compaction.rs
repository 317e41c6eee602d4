//! Provider-native compaction on the Anthropic Messages wire (docs/spec.md §7, issue 46), through
//! the binary against the strict `anthropic` simulator: a signed tool loop, `hermes sessions
//! compact ID`, then `hermes chat --resume ID -q …`. The compaction request carries
//! `compaction: {"type": "summarize"}` and its beta; the reply's `compaction` block is stored
//! verbatim as a checkpoint in place of what it summarised; the next request leads with it, byte
//! for byte, and replays the kept turns' thinking; the simulator accepts every request.

use hermes_sim::{COMPACTION_BETA, RecordedRequest, Sim};
use hermes_test_support::home::Home;
use serde_json::{Value, json};

use crate::anthropic_live::KEY;
use crate::preview_resume::PreviewHome as _;
use crate::support::target;

/// A prefix-bound Claude model (docs/spec.md §5a).
const FABLE: &str = "claude-fable-5-1";
/// An unbound Claude model.
const OPUS: &str = "claude-opus-4-8";

/// A row of the session: (position, role, reasoning_details, kind, archived).
type Row = (i64, String, Option<String>, String, bool);

async fn rows(home: &Home, id: &str) -> Vec<Row> {
    crate::support::rows(
        home,
        "SELECT position, role, reasoning_details, kind, archived_at IS NOT NULL FROM messages WHERE session_id = ? ORDER BY position",
        Some(id),
    )
    .await
}

/// Every request was accepted, and the simulator noted nothing (no block dropped).
fn all_ok(requests: &[RecordedRequest]) {
    for r in requests {
        assert_eq!(r.status, 200, "{}", r.response);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }
}

fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The thinking blocks of the assistant messages of `body` after its first `skip` messages, in
/// order.
fn thinking_blocks(body: &Value, skip: usize) -> Vec<Value> {
    body["messages"].as_array().unwrap()[skip..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "thinking")
        .collect()
}

/// A simulator and a home with one turn of `model` at effort high asking `q`: the simulator
/// (serving while it lives), the home and the session id.
async fn signed_session(model: &str, q: &str) -> (Sim, Home, String) {
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let base = sim.base_url();
    let id = home
        .chat_id(
            &target("anthropic", model, &base, &["--effort", "high", "-q", q]),
            KEY,
        )
        .await;
    (sim, home, id)
}

/// Two signed tool-loop turns of `model`, `sessions compact`, and one more turn; returns the
/// session id, the compaction block as the simulator sent it (its exact text) and the request
/// after the compaction.
async fn compact_and_continue(model: &str) -> (Sim, Home, String, String, Vec<RecordedRequest>) {
    let (sim, home, id) = signed_session(model, "[tools=2] what time is it?").await;
    home.chat(
        &[
            "--resume",
            &id,
            "--effort",
            "high",
            "-q",
            "[tools=1] and the date?",
        ],
        KEY,
    )
    .await;
    all_ok(&sim.requests());
    // The kept turn's thinking, as the last request of its loop sent it.
    let before = sim.requests();
    let kept_thinking = thinking_blocks(&before.last().unwrap().body, 7);
    assert!(!kept_thinking.is_empty());

    let (status, compaction) = crate::support::compact(&sim, &home, &id, KEY).await;
    assert!(
        status.starts_with("context compacted by the provider (on-demand compaction, compact-2026-09-04): 10 → 5 messages"),
        "{status}"
    );
    assert_eq!(compaction.len(), 1, "one compaction request");
    all_ok(&compaction);
    let request = &compaction[0];
    assert_eq!(request.body["compaction"], json!({"type": "summarize"}));
    assert!(
        header(request, "anthropic-beta")
            .is_some_and(|b| b.split(',').any(|b| b == COMPACTION_BETA)),
        "{:?}",
        request.headers
    );
    // The first turn (its tool loop whole) is what was summarised.
    let sent = request.body["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 6, "{}", request.body);
    assert_eq!(sent[0]["content"], "[tools=2] what time is it?");
    let reply: Value = serde_json::from_str(&request.response).unwrap();
    let block = reply["content"][0].clone();
    assert_eq!(block["type"], "compaction");
    let block_text = serde_json::to_string(&block).unwrap();
    assert!(request.response.contains(&block_text));

    // Stored: the block verbatim on the checkpoint, where the first turn stood (archived).
    let stored = rows(&home, &id).await;
    let checkpoint: Vec<&Row> = stored.iter().filter(|r| r.3 == "checkpoint").collect();
    assert_eq!(checkpoint.len(), 1, "{stored:?}");
    assert_eq!(checkpoint[0].1, "assistant");
    assert!(!checkpoint[0].4, "the checkpoint is active");
    assert_eq!(
        checkpoint[0].2.as_deref(),
        Some(format!("[{block_text}]").as_str()),
        "the block, byte for byte"
    );
    assert_eq!(
        stored.iter().filter(|r| r.4).count(),
        6,
        "the first turn archived"
    );

    sim.clear_requests();
    let out = home
        .chat(
            &[
                "--resume",
                &id,
                "--effort",
                "high",
                "-q",
                "[tools=1] and now?",
            ],
            KEY,
        )
        .await;
    assert_eq!(out["requests"], 2, "{out}");
    let next = sim.requests();
    all_ok(&next);
    for r in &next {
        // The compaction block first, byte for byte, leading its assistant message.
        assert_eq!(
            r.body["messages"][0],
            json!({"role": "assistant", "content": [block]})
        );
        let raw = String::from_utf8(r.raw.clone()).unwrap();
        assert!(
            raw.contains(&format!(
                r#""messages":[{{"role":"assistant","content":[{block_text}]}}"#
            )),
            "{raw}"
        );
        assert!(
            header(r, "anthropic-beta").is_some_and(|b| b.split(',').any(|b| b == COMPACTION_BETA))
        );
        // Then the kept turn verbatim, its thinking with it.
        assert_eq!(r.body["messages"][1]["content"], "[tools=1] and the date?");
        assert_eq!(
            thinking_blocks(&r.body, 1)[..kept_thinking.len()],
            kept_thinking[..]
        );
    }
    (sim, home, id, block_text, next)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_claude_session_compacts_natively_and_keeps_the_kept_turns_thinking() {
    let (_sim, home, id, block_text, _) = compact_and_continue(FABLE).await;
    // The stored block is still byte for byte what the provider sent.
    let stored = rows(&home, &id).await;
    assert!(
        stored
            .iter()
            .any(|r| r.3 == "checkpoint" && r.2.as_deref() == Some(&format!("[{block_text}]")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unbound_claude_session_compacts_natively_too_and_continues() {
    compact_and_continue(OPUS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_block_goes_to_no_other_model_hermes_own_checkpoint_does() {
    let (sim, home, id, block_text, _) = compact_and_continue(FABLE).await;
    sim.clear_requests();
    let out = home
        .chat(
            &target(
                "anthropic",
                "claude-fable-5-2",
                &sim.base_url(),
                &["--resume", &id, "--effort", "high", "-q", "and on 5.2?"],
            ),
            KEY,
        )
        .await;
    assert_eq!(out["requests"], 1, "{out}");
    let requests = sim.requests();
    all_ok(&requests);
    let raw = String::from_utf8(requests[0].raw.clone()).unwrap();
    assert!(!raw.contains(&block_text), "{raw}");
    // Hermes' own checkpoint of the summary, merged with the kept turn's user message.
    let first = &requests[0].body["messages"][0];
    assert_eq!(first["role"], "user");
    assert_eq!(
        first["content"][1],
        json!({"type": "text", "text": "[tools=1] and the date?"})
    );
    assert!(
        first["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[Summary of the earlier conversation]\n\nSummary of 6 earlier messages.\nuser: [tools=2] what time is it?"),
        "{first}"
    );
}

/// The input and output tokens hermes counts for a Messages reply: the `compaction` and
/// `message` iterations when the usage lists them (else the top-level counts), plus the cache
/// reads and writes.
fn counted(reply: &Value) -> (u64, u64) {
    let u = &reply["usage"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let (input, output) = match u["iterations"].as_array() {
        Some(its) => its
            .iter()
            .filter(|i| i["type"] == "compaction" || i["type"] == "message")
            .fold((0, 0), |(a, b), i| {
                (a + n(&i["input_tokens"]), b + n(&i["output_tokens"]))
            }),
        None => (n(&u["input_tokens"]), n(&u["output_tokens"])),
    };
    (
        input + n(&u["cache_read_input_tokens"]) + n(&u["cache_creation_input_tokens"]),
        output,
    )
}

/// Asserts `r` asks for a threshold compaction (`compact_20260112`) past `threshold` input
/// tokens, under its beta.
fn asks_for_threshold_compaction(r: &RecordedRequest, threshold: usize) {
    assert_eq!(
        r.body["context_management"],
        json!({"edits": [{"type": "compact_20260112",
                          "trigger": {"type": "input_tokens", "value": threshold}}]})
    );
    assert!(
        header(r, "anthropic-beta")
            .is_some_and(|b| b.split(',').any(|b| b == hermes_sim::THRESHOLD_BETA)),
        "{:?}",
        r.headers
    );
}

/// A threshold compaction (`compact_20260112`, `[compaction] provider_threshold`) in the middle
/// of a signed tool loop on `model`: the reply that crossed the trigger leads with its
/// `compaction` block; the loop's next request replays that reply with the block first, byte
/// for byte, then its thinking and call (the conversation before it as stored); every request
/// is accepted and nothing is dropped; the turn's usage sums the compaction iteration.
async fn threshold_compaction_in_a_tool_loop(model: &str) {
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let base = sim.base_url();
    let turn = |id: Option<String>, q: &'static str| {
        let home = &home;
        let base = &base;
        async move {
            let mut rest = Vec::new();
            if let Some(id) = &id {
                rest.extend(["--resume", id.as_str()]);
            }
            rest.extend(["--effort", "high", "--no-stream", "-q", q]);
            home.chat(&target("anthropic", model, base, &rest), KEY)
                .await
        }
    };
    let out = turn(None, "[tools=2] what time is it?").await;
    let id = out["session_id"].as_str().unwrap().to_owned();
    let first = sim.requests();
    all_ok(&first);
    let threshold = crate::support::provider_threshold_after(&home, &first);

    sim.clear_requests();
    let out = turn(Some(id.clone()), "[tools=1] and the date?").await;
    assert_eq!(out["requests"], 2, "{out}");
    let second = sim.requests();
    all_ok(&second);
    for r in &second {
        asks_for_threshold_compaction(r, threshold);
    }
    let reply: Value = serde_json::from_str(&second[0].response).unwrap();
    let content = reply["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "compaction", "{reply}");
    assert_eq!(reply["usage"]["iterations"][0]["type"], "compaction");
    let block_text = serde_json::to_string(&content[0]).unwrap();
    assert!(second[0].response.contains(&block_text));
    // The loop goes on: the reply replayed whole, the block first, byte for byte.
    let next = &second[1];
    let raw = String::from_utf8(next.raw.clone()).unwrap();
    let messages = next.body["messages"].as_array().unwrap();
    let replayed = messages
        .iter()
        .find(|m| m["role"] == "assistant" && m["content"][0]["type"] == "compaction")
        .expect("the reply that compacted");
    assert_eq!(
        replayed["content"].as_array().unwrap()[..],
        content[..],
        "{raw}"
    );
    assert!(
        raw.contains(&format!(r#"{{"role":"assistant","content":[{block_text},"#)),
        "{raw}"
    );
    assert_eq!(messages[0]["content"], "[tools=2] what time is it?");
    // The usage of the turn: both requests, the compaction iteration counted.
    let sums: Vec<(u64, u64)> = second
        .iter()
        .map(|r| counted(&serde_json::from_str(&r.response).unwrap()))
        .collect();
    assert_eq!(
        out["usage"]["prompt_tokens"],
        sums.iter().map(|s| s.0).sum::<u64>(),
        "{out}"
    );
    assert_eq!(
        out["usage"]["completion_tokens"],
        sums.iter().map(|s| s.1).sum::<u64>(),
        "{out}"
    );
    // Stored verbatim among the reply's blocks.
    let stored = rows(&home, &id).await;
    assert!(
        stored.iter().any(|r| r
            .2
            .as_deref()
            .is_some_and(|d| d.starts_with(&format!("[{block_text},")))),
        "{stored:?}"
    );

    // Another model of the same host: the block is not sent, every turn is.
    sim.clear_requests();
    home.chat(
        &target(
            "anthropic",
            "claude-fable-5-2",
            &base,
            &[
                "--resume",
                &id,
                "--effort",
                "high",
                "--no-stream",
                "-q",
                "and on 5.2?",
            ],
        ),
        KEY,
    )
    .await;
    let other = sim.requests();
    all_ok(&other);
    let raw = String::from_utf8(other[0].raw.clone()).unwrap();
    assert!(!raw.contains(&block_text), "{raw}");
    assert!(!raw.contains("\"compaction\""), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threshold_compaction_mid_loop_on_a_bound_claude_model_is_replayed_to_its_minter() {
    threshold_compaction_in_a_tool_loop(FABLE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threshold_compaction_mid_loop_on_an_unbound_claude_model_is_replayed_to_its_minter() {
    threshold_compaction_in_a_tool_loop(OPUS).await;
}

/// What `preview --explain` of a next turn of session `id` under `env` says on stderr.
async fn explained(home: &Home, id: &str, env: &[(&str, &str)]) -> String {
    let out = home
        .succeed(
            &["preview", "--session", id, "--explain", "-q", "next?"],
            env,
        )
        .await;
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `preview --explain` names what changed in a bound turn's prefix, and `sessions show` names
/// the turns a request left out for good (docs/spec.md §5a 2, 3): a bound Claude session resumed
/// under another key (another account) leaves its stored blocks out, says "the account", and the
/// next `sessions show` lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_sessions_show_name_the_left_out_blocks_and_why() {
    let (_sim, home, id) = signed_session(FABLE, "[tools=1] what time is it?").await;
    let explain = explained(&home, &id, KEY).await;
    assert!(
        !explain.contains("left out: the prefix changed"),
        "{explain}"
    );
    let other: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", "sk-ant-other-account")];
    let explain = explained(&home, &id, other).await;
    assert!(
        explain.contains(
            "left out: the prefix changed since this block was made (the account; docs/spec.md §5a 2)"
        ),
        "{explain}"
    );
    let show = home.ok_with(&["sessions", "show", &id], KEY).await.0;
    assert!(!show.contains("left out"), "{show}");
    // Sent under the other account: the blocks are left out, for good.
    home.chat(&["--resume", &id, "--effort", "high", "-q", "next?"], other)
        .await;
    let show = home.ok_with(&["sessions", "show", &id], KEY).await.0;
    assert!(
        show.contains(
            "left out for good (docs/spec.md §5a 3): a request of this conversation left these carriers out"
        ),
        "{show}"
    );
}
