//! Provider-native compaction on the Anthropic Messages wire (SPEC §7, issue 46), through the
//! binary against the strict `anthropic` simulator: a signed tool loop, `hermes sessions
//! compact ID`, then `hermes chat --resume ID -q …`. The compaction request carries
//! `compaction: {"type": "summarize"}` and its beta; the reply's `compaction` block is stored
//! verbatim as a checkpoint in place of what it summarised; the next request leads with it, byte
//! for byte, and replays the kept turns' thinking; the simulator accepts every request.

use hermes_sim::{COMPACTION_BETA, RecordedRequest, Sim};
use hermes_test_support::home::Home;
use serde_json::{Value, json};

use crate::anthropic_live::KEY;
use crate::support::target;

/// A prefix-bound Claude model (SPEC §5a).
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

/// Two signed tool-loop turns of `model`, `sessions compact`, and one more turn; returns the
/// session id, the compaction block as the simulator sent it (its exact text) and the request
/// after the compaction.
async fn compact_and_continue(model: &str) -> (Sim, Home, String, String, Vec<RecordedRequest>) {
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let base = sim.base_url();
    let id = home
        .chat_id(
            &target(
                "anthropic",
                model,
                &base,
                &["--effort", "high", "-q", "[tools=2] what time is it?"],
            ),
            KEY,
        )
        .await;
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

    sim.clear_requests();
    let (status, _) = home.ok_with(&["sessions", "compact", &id], KEY).await;
    assert!(
        status.starts_with("context compacted by the provider (on-demand compaction, compact-2026-09-04): 10 → 5 messages"),
        "{status}"
    );
    let compaction = sim.requests();
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
