//! One scenario on every wire, as a table: a tool loop of N steps, streamed and not, each
//! request carrying the earlier steps' stored reasoning byte for byte; then a fresh process
//! resumes the session with one more tool step, the stored turns unchanged and every stored
//! item sent back. A row names the wire (with what its module checks), the simulator profile,
//! the provider, the model and the loop; each row is one test.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;

use crate::anthropic_live::{Family, KEY as ANTHROPIC_KEY, OPUS};
use crate::bedrock_live::{CLAUDE, GPT_OSS, Invoke, NOVA, Policy, R1, SIGV4};
use crate::gemini_live::{Gemini, KEY as GEMINI_KEY, MODEL as GEMINI_MODEL};
use crate::responses_live::{KEY as OPENAI_KEY, MODEL as RESPONSES_MODEL, Responses};
use crate::wire::{loop_done, session_id};

/// How one wire stores a turn and what its requests must carry (each wire's module implements
/// it with its own checks).
pub(crate) trait Wire {
    /// One stored assistant turn, as the wire's module reads it from an export.
    type Turn: StoredTurn;
    /// Stored turn `k` of a loop of `row`: a tool step, or the answer when `k == row.steps`.
    fn stored(&self, row: &Row, turn: &Self::Turn, k: usize);
    /// Request `r` was accepted, has the wire's path, headers and body, and carries `earlier`
    /// (the stored turns before it, those from `in_loop` on from the loop in flight) as stored.
    fn request(
        &self,
        row: &Row,
        r: &RecordedRequest,
        stream: bool,
        earlier: &[Self::Turn],
        in_loop: usize,
    );
}

/// A stored assistant turn as a wire's module reads it from `hermes sessions export`.
pub(crate) trait StoredTurn: PartialEq + std::fmt::Debug + Sized {
    /// The assistant turns of an export's text, in order.
    fn from_export(export: &str) -> Vec<Self>;
    /// The model that wrote it (its origin).
    fn model(&self) -> &str;
}

/// Implements [`StoredTurn`] for `$turn` (which has a `model: String` field) with `$parse`
/// reading an export's text.
macro_rules! stored_turn {
    ($turn:ty, $parse:expr) => {
        impl crate::tool_loop::StoredTurn for $turn {
            fn from_export(export: &str) -> Vec<Self> {
                $parse(export)
            }
            fn model(&self) -> &str {
                &self.model
            }
        }
    };
}
pub(crate) use stored_turn;

/// The stored assistant turns of session `id`, each written by `row`'s model.
async fn stored_turns<T: StoredTurn>(home: &Home, id: &str, row: &Row) -> Vec<T> {
    let turns = T::from_export(&home.export_text(id).await);
    for turn in &turns {
        assert_eq!(turn.model(), row.model, "{turn:?}");
    }
    turns
}

/// One target of the scenario.
#[derive(Debug)]
pub(crate) struct Row {
    /// The simulator profile.
    pub(crate) sim: &'static str,
    /// `--provider`.
    pub(crate) provider: &'static str,
    /// `--model`.
    pub(crate) model: &'static str,
    /// Appended to the simulator's base URL for `--base-url`.
    pub(crate) base: &'static str,
    /// The credentials of every run.
    pub(crate) env: &'static [(&'static str, &'static str)],
    /// The home's `config.toml` (empty: none).
    pub(crate) config: &'static str,
    /// Whether each turn asks for `--effort high`.
    pub(crate) effort: bool,
    /// The query starting the loop.
    pub(crate) query: &'static str,
    /// The tool steps it takes.
    pub(crate) steps: usize,
}

/// The usual loop: three tool steps, thinking on, no config.
const LOOP: Row = Row {
    sim: "",
    provider: "",
    model: "",
    base: "",
    env: &[],
    config: "",
    effort: true,
    query: "[tools=3] what time is it?",
    steps: 3,
};

/// The usual loop on Gemini's native API.
const GEMINI: Row = Row {
    sim: "gemini",
    provider: "gemini",
    model: GEMINI_MODEL,
    base: "/v1beta",
    env: GEMINI_KEY,
    ..LOOP
};

/// `--effort high` when `row` asks for it, `-q QUERY`, `--no-stream` unless `stream`.
fn turn_args<'a>(args: &mut Vec<&'a str>, row: &Row, stream: bool, query: &'a str) {
    if row.effort {
        args.extend(["--effort", "high"]);
    }
    args.extend(["-q", query]);
    if !stream {
        args.push("--no-stream");
    }
}

/// The scenario on `wire` for `row`.
async fn tool_loop_then_resume<W: Wire>(wire: &W, row: &Row) {
    let sim = Sim::start(row.sim).await.unwrap();
    // Also `HOME`: no real `~/.aws` (or other dotfile) is read.
    let home = crate::support::own_home();
    if !row.config.is_empty() {
        std::fs::write(home.path().join("config.toml"), row.config).unwrap();
    }
    let base = format!("{}{}", sim.base_url(), row.base);
    let steps = row.steps;
    for stream in [true, false] {
        sim.clear_requests();
        let mut args = vec![
            "--provider",
            row.provider,
            "--model",
            row.model,
            "--base-url",
            &base,
        ];
        turn_args(&mut args, row, stream, row.query);
        let out = home.chat(&args, row.env).await;
        let id = session_id(&out);
        loop_done(&out, steps, steps + 1);
        let requests = sim.requests();
        assert_eq!(requests.len(), steps + 1, "{row:?} stream={stream}");
        let stored: Vec<W::Turn> = stored_turns(&home, &id, row).await;
        assert_eq!(stored.len(), steps + 1);
        for (k, turn) in stored.iter().enumerate() {
            wire.stored(row, turn, k);
        }
        for (k, r) in requests.iter().enumerate() {
            // Request k carries the k earlier steps, exactly as stored.
            wire.request(row, r, stream, &stored[..k], 0);
        }

        // A fresh process resumes the session on the same target.
        sim.clear_requests();
        let mut args = vec!["--resume", &id];
        turn_args(&mut args, row, stream, "[tools=1] and now?");
        let out = home.chat(&args, row.env).await;
        assert_eq!(session_id(&out), id);
        loop_done(&out, 1, 2);
        let requests = sim.requests();
        assert_eq!(requests.len(), 2);
        let after: Vec<W::Turn> = stored_turns(&home, &id, row).await;
        assert_eq!(after.len(), steps + 3);
        assert_eq!(
            after[..=steps],
            stored[..],
            "the stored turns are unchanged"
        );
        for (k, r) in requests.iter().enumerate() {
            wire.request(row, r, stream, &after[..=steps + k], steps + 1);
        }
    }
}

/// Each row, one test: `name: wire, row;`.
macro_rules! table {
    ($($name:ident: $wire:expr, $row:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            tool_loop_then_resume(&$wire, &$row).await;
        }
    )*};
}

table! {
    // Anthropic Messages on each host family: signed thinking blocks.
    direct_signed_tool_loop_replays_stored_blocks_streamed_and_not_and_after_resume:
        Family::Direct,
        Row { sim: "anthropic", provider: "anthropic", model: OPUS, env: ANTHROPIC_KEY, ..LOOP };
    vertex_signed_tool_loop_uses_raw_predict_and_replays_stored_blocks_after_resume:
        Family::Vertex,
        Row {
            sim: "anthropic",
            provider: "vertex-anthropic",
            model: OPUS,
            env: &[("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.test-token")],
            config: "[vertex]\nproject = \"p\"\nregion = \"us-east5\"\n",
            ..LOOP
        };
    foundry_signed_tool_loop_uses_the_anthropic_path_and_replays_stored_blocks_after_resume:
        Family::Foundry,
        Row {
            sim: "anthropic",
            provider: "foundry-anthropic",
            model: OPUS,
            base: "/anthropic",
            env: &[("ANTHROPIC_FOUNDRY_API_KEY", "foundry-test-key")],
            ..LOOP
        };

    // Bedrock Converse, per replay policy, and InvokeModel.
    claude_on_converse_replays_the_stored_signatures_streamed_and_not_and_after_resume:
        Policy::Signed,
        Row { sim: "bedrock", provider: "bedrock", model: CLAUDE, env: SIGV4, ..LOOP };
    deepseek_r1_on_converse_sends_no_reasoning_before_the_tool_loop_streamed_and_not_and_after_resume:
        Policy::Strip,
        Row { sim: "bedrock", provider: "bedrock", model: R1, env: SIGV4, effort: false, ..LOOP };
    gpt_oss_on_converse_replays_reasoning_unsigned_streamed_and_not_and_after_resume:
        Policy::Unsigned,
        Row { sim: "bedrock", provider: "bedrock", model: GPT_OSS, env: SIGV4, effort: false, ..LOOP };
    nova_2_with_effort_on_converse_replays_reasoning_unsigned_streamed_and_not_and_after_resume:
        Policy::Unsigned,
        Row { sim: "bedrock", provider: "bedrock", model: NOVA, env: SIGV4, ..LOOP };
    bedrock_anthropic_invoke_replays_the_stored_thinking_blocks_streamed_and_not_and_after_resume:
        Invoke,
        Row { sim: "bedrock", provider: "bedrock-anthropic", model: CLAUDE, env: SIGV4, ..LOOP };

    // Gemini: a signature on each call (the first of parallel ones) and on the answer's text.
    sequential_gemini_tool_loop_replays_each_call_signature_streamed_and_not_and_after_resume:
        Gemini { parallel: 1 },
        GEMINI;
    parallel_gemini_calls_replay_the_signature_on_the_first_call_only_and_after_resume:
        Gemini { parallel: 2 },
        Row { query: "[parallel=2] what time is it twice?", steps: 1, ..GEMINI };
    sequential_steps_of_parallel_gemini_calls_replay_first_call_signatures_and_after_resume:
        Gemini { parallel: 2 },
        Row { query: "[tools=2] [parallel=2] what time is it?", steps: 2, ..GEMINI };

    // OpenAI Responses: each encrypted reasoning item before its call.
    a_three_step_loop_replays_each_reasoning_item_before_its_call_streamed_and_not_and_after_resume:
        Responses,
        Row { sim: "openai-responses", provider: "openai-responses", model: RESPONSES_MODEL, base: "/v1", env: OPENAI_KEY, ..LOOP };
}
