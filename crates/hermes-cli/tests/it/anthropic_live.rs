//! Issue 16 end to end: the real binary against the strict `anthropic` simulator.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;

use crate::tool_loop::{Row, Wire};
use serde_json::Value;

use crate::wire::{
    Turn, all_ok, continue_on_deepseek, raw, refused_then_resent, sent_signatures, turns,
    user_texts,
};

pub(crate) const OPUS: &str = "claude-opus-4-6";
const SONNET: &str = "claude-sonnet-4-5";

/// What these tests ask of a home beyond running hermes.
trait ClaudeHome {
    /// A new session on the direct `anthropic` provider with thinking on: its id.
    async fn start_claude(&self, base: &str, query: &str) -> String;
    /// One more thinking turn of a stored session on its own target.
    async fn turn(&self, id: &str, query: &str) -> Value;
    /// Every row of the session in state.db: (position, role, reasoning_details, archived).
    async fn rows(&self, id: &str) -> Vec<StoredRow>;
}

impl ClaudeHome for Home {
    async fn start_claude(&self, base: &str, query: &str) -> String {
        self.chat_id(&thinking_query("anthropic", base, query), KEY)
            .await
    }

    async fn turn(&self, id: &str, query: &str) -> Value {
        self.chat(&["--resume", id, "--effort", "high", "-q", query], KEY)
            .await
    }

    async fn rows(&self, id: &str) -> Vec<StoredRow> {
        crate::support::rows(
            self,
            "SELECT position, role, reasoning_details, archived_at IS NOT NULL FROM messages WHERE session_id = ? ORDER BY position",
            Some(id),
        )
        .await
    }
}

type StoredRow = (i64, String, Option<String>, bool);

pub(crate) const KEY: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", "sk-ant-test")];

// ---------------------------------------------------------------------------------------------
// Stored blocks, as exported

/// Every stored item of `turns` reaches `request` byte for byte, and its thinking blocks carry
/// exactly their signatures, turn by turn.
fn replays(request: &RecordedRequest, turns: &[Turn]) {
    let text = raw(request);
    for turn in turns {
        assert!(!turn.items.is_empty(), "a signed turn: {turn:?}");
        for item in &turn.items {
            assert!(text.contains(item.as_str()), "{item} not in {text}");
        }
    }
    let sent = sent_signatures(request);
    let stored: Vec<Vec<String>> = turns.iter().map(Turn::thinking_signatures).collect();
    assert_eq!(sent[..stored.len()], stored[..], "{text}");
}

// ---------------------------------------------------------------------------------------------
// 1. A signed tool loop on every host family, streamed and not, then resumed

#[derive(Clone, Copy, Debug)]
pub(crate) enum Family {
    Direct,
    Vertex,
    Foundry,
}

impl Family {
    fn base_url(self, sim: &Sim) -> String {
        match self {
            Family::Foundry => format!("{}/anthropic", sim.base_url()),
            _ => sim.base_url(),
        }
    }

    fn path(self, stream: bool) -> String {
        match self {
            Family::Direct => "/v1/messages".to_owned(),
            Family::Foundry => "/anthropic/v1/messages".to_owned(),
            Family::Vertex => format!(
                "/v1/projects/p/locations/us-east5/publishers/anthropic/models/{OPUS}:{}",
                if stream {
                    "streamRawPredict"
                } else {
                    "rawPredict"
                }
            ),
        }
    }

    /// The path, headers and body shape this family must send.
    fn check_request(self, r: &RecordedRequest, stream: bool) {
        assert_eq!(r.path, self.path(stream), "{self:?}");
        let has = |k: &str| r.headers.iter().any(|(h, _)| h == k);
        let body = r.body.as_object().unwrap();
        match self {
            Family::Vertex => {
                assert!(has("authorization"), "{:?}", r.headers);
                assert!(!has("x-api-key"), "{:?}", r.headers);
                assert!(body.contains_key("anthropic_version"), "{}", r.body);
                assert!(!body.contains_key("model"), "{}", r.body);
            }
            Family::Direct | Family::Foundry => {
                assert!(
                    has("x-api-key") && has("anthropic-version"),
                    "{:?}",
                    r.headers
                );
                assert!(!has("authorization"), "{:?}", r.headers);
                assert_eq!(r.body["model"], OPUS);
                assert!(!body.contains_key("anthropic_version"), "{}", r.body);
            }
        }
        assert_eq!(
            body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            stream,
            "{}",
            r.body
        );
        assert!(!r.body["thinking"].is_null(), "thinking is on: {}", r.body);
    }
}

/// A signed tool loop on the family, then resumed: see [`crate::tool_loop`].
impl Wire for Family {
    type Turn = Turn;

    fn stored(&self, _: &Row, turn: &Turn, _: usize) {
        assert_eq!(turn.items.len(), 1, "{turn:?}");
        assert!(
            turn.items[0].starts_with(r#"{"type":"thinking""#),
            "{turn:?}"
        );
    }

    fn request(
        &self,
        _: &Row,
        r: &RecordedRequest,
        stream: bool,
        earlier: &[Turn],
        in_loop: usize,
    ) {
        all_ok(std::slice::from_ref(r));
        self.check_request(r, stream);
        replays(r, earlier);
        if in_loop == 0 {
            assert_eq!(sent_signatures(r).len(), earlier.len());
        }
    }
}

/// The arguments of one `--effort high` query to `OPUS` on `provider` at `base`.
fn thinking_query<'a>(provider: &'a str, base: &'a str, query: &'a str) -> Vec<&'a str> {
    crate::support::target(provider, OPUS, base, &["--effort", "high", "-q", query])
}

/// Resumes session `id` on the Claude `model` of the simulator `claude` with `query` (one tool
/// call): its two requests, each accepted.
async fn resume_on_claude(
    home: &Home,
    claude: &Sim,
    id: &str,
    model: &str,
    query: &str,
) -> Vec<RecordedRequest> {
    claude.clear_requests();
    let base = claude.base_url();
    let turn = crate::support::target(
        "anthropic",
        model,
        &base,
        &["--effort", "high", "-q", query],
    );
    let out = home
        .chat(&[&["--resume", id][..], &turn].concat(), KEY)
        .await;
    assert_eq!(out["requests"], 2, "{out}");
    let requests = claude.requests();
    assert_eq!(requests.len(), 2);
    all_ok(&requests);
    requests
}

// ---------------------------------------------------------------------------------------------
// 2. A tampered stored signature

/// `s` with the byte at `at` changed (base64 stays base64).
fn one_byte_changed(s: &str, at: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foundry_takes_a_microsoft_entra_id_token_as_a_bearer_and_never_shows_it() {
    const TOKEN: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-test-token";
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let base = Family::Foundry.base_url(&sim);
    let args = thinking_query("foundry-anthropic", &base, "[tools=1] what time is it?");
    let env = &[("ANTHROPIC_FOUNDRY_AUTH_TOKEN", TOKEN)];
    let (out, stderr) = home.chat_stderr(&args, env).await;
    let id = out["session_id"].as_str().unwrap().to_owned();
    assert_eq!(out["requests"], 2, "{out}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    all_ok(&requests);
    for r in &requests {
        assert_eq!(r.path, "/anthropic/v1/messages");
        let has = |k: &str| r.headers.iter().any(|(h, _)| h == k);
        assert!(
            has("authorization") && has("anthropic-version"),
            "{:?}",
            r.headers
        );
        assert!(
            !has("x-api-key"),
            "the token replaces the key: {:?}",
            r.headers
        );
        assert_eq!(r.body["model"], OPUS);
    }
    // The token is nowhere hermes writes: not in its output, the session or the logs.
    let export = home.export_text(&id).await;
    assert!(!out.to_string().contains(TOKEN) && !stderr.contains(TOKEN));
    assert!(!export.contains(TOKEN));
    let mut files = vec![home.db()];
    if let Ok(logs) = std::fs::read_dir(home.path().join("logs")) {
        files.extend(logs.map(|e| e.unwrap().path()));
    }
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{}",
            file.display()
        );
    }
    // With the key set too, the key is used (the token is the alternative).
    sim.clear_requests();
    let both = &[
        ("ANTHROPIC_FOUNDRY_AUTH_TOKEN", TOKEN),
        ("ANTHROPIC_FOUNDRY_API_KEY", "foundry-test-key"),
    ];
    home.chat_stderr(&args, both).await;
    for r in &sim.requests() {
        let has = |k: &str| r.headers.iter().any(|(h, _)| h == k);
        assert!(has("x-api-key") && !has("authorization"), "{:?}", r.headers);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_byte_change_to_a_stored_signature_is_refused_then_resent_once_without_it() {
    let (sim, home, base) = crate::support::sim_home("anthropic").await;
    let id = home.start_claude(&base, "[tools=3] what time is it?").await;
    let stored = turns(&home.export_text(&id).await);
    assert_eq!(stored.len(), 4);

    // Change one byte of the second step's signature (position 3) right in state.db.
    let rows = home.rows(&id).await;
    let (position, role, details, _) = &rows[3];
    assert_eq!((*position, role.as_str()), (3, "assistant"));
    let details = details.clone().unwrap();
    let good = stored[1].thinking_signatures()[0].clone();
    assert!(details.contains(&good), "{details}");
    let bad = one_byte_changed(&good, good.len() / 2);
    assert_ne!(bad, good);
    assert_eq!(bad.len(), good.len());
    let tampered = details.replace(&good, &bad);
    {
        use sqlx::Connection as _;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(home.db());
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let done = sqlx::query(
            "UPDATE messages SET reasoning_details = ? WHERE session_id = ? AND position = 3",
        )
        .bind(&tampered)
        .bind(&id)
        .execute(&mut conn)
        .await
        .unwrap();
        assert_eq!(done.rows_affected(), 1);
        conn.close().await.unwrap();
    }
    let before = home.export_text(&id).await;
    let before_turns = turns(&before);
    assert_eq!(before_turns[1].thinking_signatures(), vec![bad.clone()]);

    let (stderr, error, requests) = refused_then_resent(&home, &sim, &id, KEY).await;
    // The simulator's own error text for the refused block (wire message 3, block 0).
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(
        error["error"]["message"],
        "messages.3.content.0: Invalid `signature` in `thinking` block"
    );
    assert!(raw(&requests[0]).contains(&bad));
    // hermes says so once and resends without the refused blocks, keeping the others.
    assert!(
        stderr.contains(
            "the provider refused a stored thinking signature (message 3): resending once without those blocks (the stored history is unchanged, no verdict kept)"
        ),
        "{stderr}"
    );
    let resent = raw(&requests[1]);
    assert!(!resent.contains(&bad), "{resent}");
    let sent = sent_signatures(&requests[1]);
    assert_eq!(
        sent[1],
        Vec::<String>::new(),
        "message 3's blocks are left out"
    );
    for k in [0, 2, 3] {
        assert!(resent.contains(&stored[k].items[0]), "turn {k}: {resent}");
        assert_eq!(sent[k], stored[k].thinking_signatures());
    }

    // History is never mutated: the tampered bytes are still exactly what is stored.
    let after = home.export_text(&id).await;
    let after_turns = turns(&after);
    assert_eq!(after_turns[..4], before_turns[..]);
    assert_eq!(home.rows(&id).await[3].2, Some(tampered));
    let exported: Value = serde_json::from_str(&after).unwrap();
    let exported_before: Value = serde_json::from_str(&before).unwrap();
    assert_eq!(
        exported["messages"].as_array().unwrap()[..8],
        exported_before["messages"].as_array().unwrap()[..]
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Claude → DeepSeek → Claude, then another Claude model

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_deepseek_and_back_replays_signed_blocks_only_to_the_model_that_minted_them() {
    let claude = Sim::start("anthropic").await.unwrap();
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let home = crate::support::home();
    let claude_base = claude.base_url();
    let id = home
        .start_claude(&claude_base, "[tools=2] what time is it?")
        .await;
    all_ok(&claude.requests());
    let opus = turns(&home.export_text(&id).await);
    assert_eq!(opus.len(), 3);
    let opus_signatures: Vec<String> = opus.iter().flat_map(Turn::thinking_signatures).collect();
    assert_eq!(opus_signatures.len(), 3);

    // On DeepSeek: the readable thinking goes, no signed block does.
    let requests = continue_on_deepseek(
        &home,
        &id,
        &deepseek,
        "[tools=1] and on deepseek?",
        &[],
        (
            &[
                "\"signature\"",
                "redacted_thinking",
                "\"type\":\"thinking\"",
                "reasoning_details",
            ],
            &opus_signatures,
        ),
    )
    .await;
    for r in &requests {
        let sent_rcs: Vec<&str> = crate::support::assistants(&r.body)
            .map(|m| m["reasoning_content"].as_str().unwrap())
            .collect();
        let stored_rcs: Vec<&str> = opus
            .iter()
            .map(|t| t.reasoning_content.as_deref().unwrap())
            .collect();
        assert_eq!(
            sent_rcs[..3],
            stored_rcs[..],
            "Claude's readable thinking, as stored"
        );
    }

    // Back on the same Claude model: the signed blocks are replayed again.
    let requests =
        resume_on_claude(&home, &claude, &id, OPUS, "[tools=1] and back on claude?").await;
    for r in &requests {
        replays(r, &opus);
    }
    let all = turns(&home.export_text(&id).await);
    assert_eq!(all[..3], opus[..], "stored Claude turns unchanged");
    assert!(all[3..5].iter().all(|t| t.model == "deepseek-v4-pro"));
    let opus_again: Vec<String> = all[5..]
        .iter()
        .flat_map(Turn::thinking_signatures)
        .collect();
    assert_eq!(opus_again.len(), 2);

    // Another Claude model: no signature minted by claude-opus-4-6 reaches it.
    let requests = resume_on_claude(&home, &claude, &id, SONNET, "[tools=1] and on sonnet?").await;
    for r in &requests {
        assert_eq!(r.body["model"], SONNET);
        let text = raw(r);
        for sig in opus_signatures.iter().chain(&opus_again) {
            assert!(!text.contains(sig.as_str()), "stale {sig} in {text}");
        }
    }
    // Within its own loop Sonnet gets its own fresh block back.
    let sonnet = turns(&home.export_text(&id).await);
    let own = &sonnet[7];
    assert_eq!(own.model, SONNET);
    assert!(raw(&requests[1]).contains(own.items[0].as_str()));
}

// ---------------------------------------------------------------------------------------------
// 4. Compaction and branching

/// Four more thinking turns of session `id`, three of them tool loops.
async fn four_more_turns(home: &Home, id: &str) {
    for q in [
        "[tools=2] second",
        "[tools=1] third",
        "[tools=2] fourth",
        "fifth",
    ] {
        home.turn(id, q).await;
    }
}

/// A Claude session of several thinking turns (the first without tools).
async fn long_claude_session(home: &Home, base: &str) -> String {
    let id = home.start_claude(base, "hello").await;
    four_more_turns(home, &id).await;
    id
}

/// `after` is the provider's checkpoint (an assistant message holding only the `compaction`
/// block Claude wrote, docs/spec.md §7) then a tail of `before`'s turns, each byte for byte.
fn natively_compacted(before: &[Turn], after: &[Turn]) {
    assert!(after.len() < before.len(), "some turns were summarised");
    assert!(after.len() >= 2, "{after:?}");
    let kinds: Vec<String> = after[0].parsed().into_iter().map(|p| p.0).collect();
    assert_eq!(kinds, ["compaction"], "the checkpoint: {:?}", after[0]);
    assert_eq!(after[0].model, OPUS);
    let tail = after.len() - 1;
    assert_eq!(after[1..], before[before.len() - tail..], "the tail turns");
}

/// `request` leads with the checkpoint's block, byte for byte, and replays every kept turn's
/// signed blocks after it.
fn replays_after_checkpoint(request: &RecordedRequest, kept: &[Turn]) {
    let text = raw(request);
    assert!(
        text.contains(&format!(
            r#""messages":[{{"role":"assistant","content":[{}]}}"#,
            kept[0].items[0]
        )),
        "{text}"
    );
    replays_from(request, &kept[1..], 1);
}

/// As [`replays`], for the assistant messages of `request` from the `skip`th on.
fn replays_from(request: &RecordedRequest, turns: &[Turn], skip: usize) {
    let text = raw(request);
    for item in turns.iter().flat_map(|t| &t.items) {
        assert!(text.contains(item.as_str()), "{item} not in {text}");
    }
    let sent = sent_signatures(request);
    let stored: Vec<Vec<String>> = turns.iter().map(Turn::thinking_signatures).collect();
    assert_eq!(sent[skip..skip + stored.len()], stored[..], "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_and_branching_keep_signed_blocks_byte_identical_and_both_branches_continue() {
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let id = long_claude_session(&home, &sim.base_url()).await;
    all_ok(&sim.requests());
    let before = turns(&home.export_text(&id).await);
    assert_eq!(before.len(), 10);
    assert!(before.iter().all(|t| t.items.len() == 1));
    let rows_before = home.rows(&id).await;
    // A branch cut before compaction, after the second user turn's loop (messages 0..8).
    let early = home.branch(&id, &["--at", "8"]).await;
    assert_ne!(early, id);
    assert_eq!(turns(&home.export_text(&early).await), before[..4]);

    // On Claude, compaction is the provider's (docs/spec.md §7): one on-demand compaction request.
    let (status, summary_requests) = crate::support::compact(&sim, &home, &id, KEY).await;
    assert!(
        status.contains("context compacted by the provider"),
        "{status}"
    );
    assert_eq!(summary_requests.len(), 1, "one compaction request");
    all_ok(&summary_requests);
    assert_eq!(summary_requests[0].body["compaction"]["type"], "summarize");
    let compacted = home.export_text(&id).await;
    assert!(
        !user_texts(&compacted)
            .iter()
            .any(|t| t.starts_with("[Summary of the earlier conversation]")),
        "{compacted}"
    );
    let kept = turns(&compacted);
    natively_compacted(&before, &kept);
    // In state.db nothing was rewritten: every original row (archived or not) keeps its bytes.
    let rows_after = home.rows(&id).await;
    assert!(rows_after.len() > rows_before.len());
    for (b, a) in rows_before.iter().zip(&rows_after) {
        assert_eq!((b.0, &b.1, &b.2), (a.0, &a.1, &a.2));
    }
    assert!(rows_after.iter().any(|r| r.3), "summarised rows archived");

    // A branch of the compacted session copies the same bytes.
    let branch = home.branch(&id, &[]).await;
    assert_ne!(branch, id);
    let branch_export = home.export_text(&branch).await;
    assert_eq!(turns(&branch_export), kept);

    // The next request is accepted on each of them: the compacted ones lead with the
    // checkpoint's block and replay the kept turns' blocks; the early branch its head turn's.
    for session in [&id, &branch, &early] {
        sim.clear_requests();
        let out = home.turn(session, "[tools=1] next").await;
        assert_eq!(out["requests"], 2, "{out}");
        let requests = sim.requests();
        assert_eq!(requests.len(), 2, "{session}: no refusal, no resend");
        all_ok(&requests);
        let now = turns(&home.export_text(session).await);
        if session == &early {
            replays(&requests[0], &before[..1]);
            assert_eq!(now[0], before[0]);
        } else {
            replays_after_checkpoint(&requests[0], &kept);
            assert_eq!(now[..kept.len()], kept[..]);
        }
    }
    // The parent's stored turns did not change through all this.
    assert_eq!(turns(&home.export_text(&id).await)[..kept.len()], kept[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_session_that_opens_with_a_tool_loop_can_be_compacted() {
    let sim = Sim::start("anthropic").await.unwrap();
    let home = crate::support::home();
    let id = home
        .start_claude(&sim.base_url(), "[tools=3] what time is it?")
        .await;
    four_more_turns(&home, &id).await;
    let before = turns(&home.export_text(&id).await);
    let (status, requests) = crate::support::compact(&sim, &home, &id, KEY).await;
    assert!(!requests.is_empty(), "a compaction request");
    for r in &requests {
        assert_eq!(
            r.body["messages"][0]["role"], "user",
            "the summary request opens with a user message: {}",
            r.response
        );
    }
    all_ok(&requests);
    assert!(
        status.contains("context compacted by the provider"),
        "{status}"
    );
    natively_compacted(&before, &turns(&home.export_text(&id).await));
}
