//! The real agent programs, run headless as subprocesses through the gateway (in-process, over a
//! real SQLite store) in front of the strict simulators (in-process): the AI SDK (`ai` with
//! `@ai-sdk/openai` `.chat()`, `@ai-sdk/openai-compatible`, `@ai-sdk/anthropic`), the OpenAI
//! Agents SDK, LangChain, pydantic-ai and Claude Code, each in a two-turn conversation whose turns
//! ask the simulated model for two tool calls (`[tools=2]`). Every request the upstream got was
//! accepted (the strict simulators refuse a missing or altered carrier), and every carrier it
//! minted (DeepSeek's `reasoning_content`, Claude's signed thinking) came back to it byte for
//! byte in each later request of the conversation.
//!
//! The programs are installed, pinned, by `cargo xtask clients` (`tests/clients/package.json`,
//! `package-lock.json`, `requirements.txt`) under `target/clients/`, found through
//! `HERMES_CLIENTS_NODE` / `HERMES_CLIENTS_PYTHON`; without them each test is recorded as
//! skipped, unless `HERMES_REQUIRE_CLIENTS` is set. Each run adds a row to the table xtask
//! prints (`HERMES_CLIENTS_TABLE`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use hermes_engine::{Defaults, ProviderDefaults, Settings};
use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::clients::{self, Row};
use serde_json::{Value, json};

use crate::{KEY, Running};

/// The folder of the client scripts (committed beside the pinned manifests).
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");

/// How long one client run may take before it is killed.
const LIMIT: Duration = Duration::from_secs(180);

/// The gateway's aliases besides the gateway guide's Claude Code recipe: a DeepSeek V4 model
/// under a name without "deepseek" in it (the OpenAI Agents SDK replays reasoning only to such
/// names).
const ALIASES: [(&str, &str); 1] = [("house-model", "deepseek/deepseek-v4-pro")];

/// The gateway guide (`docs/gateway.md`), whose Claude Code recipe the Claude Code runs use as
/// written.
const GATEWAY_GUIDE: &str = include_str!("../../../../docs/gateway.md");

/// The `key = value` lines of table `table` in the gateway guide's Claude Code recipe (the TOML
/// block after its `claude-code-recipe` marker), comments left out, keys unquoted.
fn recipe_table(table: &str) -> Vec<(String, String)> {
    let after = GATEWAY_GUIDE
        .split_once("<!-- claude-code-recipe")
        .expect("the gateway guide marks its Claude Code recipe")
        .1;
    let block = after
        .split_once("```toml")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the recipe's TOML block")
        .0;
    let unquote = |s: &str| s.trim().trim_matches('"').to_owned();
    let mut current = String::new();
    let mut lines = Vec::new();
    for line in block.lines() {
        let line = line.split_once(" #").map_or(line, |(code, _)| code).trim();
        if line.starts_with('[') {
            current = line.trim_matches(['[', ']']).to_owned();
        } else if current == table
            && let Some((k, v)) = line.split_once('=')
        {
            lines.push((unquote(k), v.trim().to_owned()));
        }
    }
    lines
}

/// The `[serve.models]` entries of the gateway guide's Claude Code recipe:
/// `"name" = "provider/model"`.
fn recipe_aliases() -> Vec<(String, String)> {
    let aliases: Vec<(String, String)> = recipe_table("serve.models")
        .into_iter()
        .map(|(k, v)| (k, v.trim_matches('"').to_owned()))
        .collect();
    assert!(aliases.len() >= 2, "the recipe maps names: {aliases:?}");
    aliases
}

/// The recipe's `[serve]` policy: the betas and server tools Claude Code needs allowed (the
/// default allows none).
fn recipe_policy() -> hermes_serve::Policy {
    let patterns = |key: &str| {
        recipe_table("serve")
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| serde_json::from_str::<Vec<String>>(&v).unwrap())
    };
    let betas = patterns("allow_betas");
    assert!(betas.is_some(), "the recipe allows Claude Code's betas");
    hermes_serve::Policy::new(
        hermes_serve::TenantPolicy::new()
            .allow_betas(betas)
            .allow_server_tools(patterns("allow_server_tools")),
    )
}

#[test]
fn the_readmes_claude_code_recipe_parses_into_aliases_and_a_policy() {
    assert!(recipe_aliases().iter().any(|(k, _)| k == "claude-*"));
    let policy = recipe_policy().of(crate::TENANT);
    assert_eq!(policy.allow_betas, Some(vec!["*".to_owned()]));
    assert_eq!(
        policy.allow_server_tools,
        Some(vec!["web_search_*".to_owned()])
    );
}

/// Every alias the gateway is configured with: [`ALIASES`] and the gateway guide's recipe.
fn aliases() -> BTreeMap<String, String> {
    ALIASES
        .iter()
        .map(|(a, t)| ((*a).to_owned(), (*t).to_owned()))
        .chain(recipe_aliases())
        .collect()
}

const CHAT: &str = "/v1/chat/completions";
const MESSAGES: &str = "/v1/messages";
const RESPONSES: &str = "/v1/responses";

/// The two simulators and the gateway in front of both (DeepSeek and Anthropic at their
/// simulators, every key variable answering `sk-test`, [`ALIASES`] configured).
struct Stage {
    deepseek: Sim,
    anthropic: Sim,
    gateway: Running,
}

impl Stage {
    async fn start() -> Stage {
        let deepseek = Sim::start("deepseek-v4").await.unwrap();
        let anthropic = Sim::start("anthropic").await.unwrap();
        let mut defaults = Defaults::default();
        for (provider, sim) in [("deepseek", &deepseek), ("anthropic", &anthropic)] {
            defaults.providers.insert(
                provider.into(),
                ProviderDefaults::new(Some(sim.base_url()), None, None, false),
            );
        }
        let settings = Settings::new(defaults, Arc::new(|_: &str| Some("sk-test".to_owned())));
        // Claude Code sends betas on every request: allowed as the gateway guide's recipe
        // allows them (the default allows none).
        let gateway = crate::start_over(
            settings,
            |c| c.models(aliases()).policy(recipe_policy()),
            None,
        )
        .await;
        Stage {
            deepseek,
            anthropic,
            gateway,
        }
    }

    /// The simulator `model` reaches (the gateway resolves aliases and patterns first), and
    /// the other one.
    fn upstream_of(&self, model: &str) -> (&Sim, &Sim) {
        let target = hermes_serve::model::target_of(&aliases(), None, model)
            .unwrap_or_else(|| panic!("the gateway names {model}"));
        if target.starts_with("anthropic/") {
            (&self.anthropic, &self.deepseek)
        } else {
            (&self.deepseek, &self.anthropic)
        }
    }
}

/// Every string that a carrier of the upstream's answer `response` (JSON, or the SSE text of a
/// stream) minted: a chat completion's `reasoning_content` / `reasoning_details` and the like
/// (see [`crate::sdk::minted`]), a Messages answer's thinking text, signature and redacted data.
/// A stream's pieces are put together per choice or content block first.
fn minted_in(response: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(whole) = serde_json::from_str::<Value>(response) {
        crate::sdk::minted(&whole, false, &[], &mut out);
        for block in whole["content"].as_array().into_iter().flatten() {
            if block["type"] == "thinking"
                && let Some(text) = block["thinking"].as_str()
            {
                out.push(text.to_owned());
            }
        }
        return out;
    }
    // (choice or block index, field) → the pieces so far, in order of first appearance.
    let mut pieces: Vec<((u64, String), String)> = Vec::new();
    let mut add = |index: u64, field: &str, piece: &str| match pieces
        .iter_mut()
        .find(|((i, f), _)| *i == index && f == field)
    {
        Some((_, text)) => text.push_str(piece),
        None => pieces.push(((index, field.to_owned()), piece.to_owned())),
    };
    for line in response.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        // Chat completions: carriers in each choice's delta.
        for choice in event["choices"].as_array().into_iter().flatten() {
            let index = choice["index"].as_u64().unwrap_or(0);
            for (key, value) in choice["delta"].as_object().into_iter().flatten() {
                if let Some(piece) = value.as_str()
                    && key.starts_with("reasoning")
                {
                    add(index, key, piece);
                }
            }
        }
        // Messages: thinking blocks, whole in their start or in deltas.
        let index = event["index"].as_u64().unwrap_or(0);
        let part = match event["type"].as_str() {
            Some("content_block_start") => &event["content_block"],
            Some("content_block_delta") => &event["delta"],
            _ => continue,
        };
        for field in ["thinking", "signature", "data"] {
            if let Some(piece) = part[field].as_str() {
                add(index, field, piece);
            }
        }
    }
    out.extend(
        pieces
            .into_iter()
            .map(|(_, text)| text)
            .filter(|t| t.trim().len() > 1),
    );
    out
}

/// Every string value anywhere in `body`.
fn strings_of<'a>(body: &'a Value, out: &mut HashSet<&'a str>) {
    match body {
        Value::String(s) => {
            out.insert(s);
        }
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// The text of the first user message of a request body (`messages`), which names the
/// conversation: a later request with the same one and more messages continues it.
fn first_user_text(body: &Value) -> Option<String> {
    let first = body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    Some(first["content"].to_string())
}

/// The start of a run of the native npm client `client` (the package `package`) through `door`
/// on `model`: the folder of the node clients, its row (the package's version and the upstream
/// filled in) and the stage; `None` where the clients are not installed.
async fn npm_client(
    client: &str,
    package: &str,
    door: &str,
    model: &str,
) -> Option<(PathBuf, Row, Stage)> {
    let node_dir = clients::node_dir()?;
    let mut row = Row::new(client, door, model);
    row.version = format!("{package} {}", clients::npm_version(&node_dir, package));
    let stage = Stage::start().await;
    row.upstream = stage.upstream_of(model).0.profile().to_owned();
    Some((node_dir, row, stage))
}

/// Runs a client's `turns` (a command each) one after the other on the blocking pool, then
/// tallies what the upstream `sim` got into `row`: each turn's case (`CLIENT on MODEL, turn N`)
/// and what it ran to.
async fn run_turns<const N: usize>(
    turns: [Command; N],
    row: &mut Row,
    sim: &Sim,
) -> Vec<(String, clients::Ran)> {
    let outputs =
        tokio::task::spawn_blocking(move || turns.map(|cmd| clients::run(cmd, "", LIMIT)))
            .await
            .unwrap();
    tally(row, sim);
    let name = format!("{} on {}", row.client, row.model);
    outputs
        .into_iter()
        .enumerate()
        .map(|(turn, ran)| (format!("{name}, turn {}", turn + 1), ran))
        .collect()
}

/// Fills in `row`'s counts: the requests the upstream `sim` got, and how many it accepted.
fn tally(row: &mut Row, sim: &Sim) {
    let requests = sim.requests();
    row.requests = requests.len();
    row.accepted = requests.iter().filter(|r| r.status == 200).count();
}

/// The checks every run ends with, on what the upstream `sim` got (`other`, the simulator the
/// run must not reach, got nothing): at least `at_least` requests, all accepted, every carrier
/// minted in an answer sent back byte for byte (as a whole JSON string) in each later request of
/// the same conversation, and something minted at all.
fn upstream_checks(row: &Row, sim: &Sim, other: &Sim, at_least: usize) {
    let requests: Vec<RecordedRequest> = sim.requests();
    let case = format!("{} on {}", row.client, row.model);
    assert!(
        other.requests().is_empty(),
        "{case}: the gateway reached the wrong upstream"
    );
    for r in &requests {
        assert_eq!(
            r.status, 200,
            "{case}: the upstream refused {}: {}\nrequest: {}",
            r.path, r.response, r.body
        );
    }
    assert!(
        requests.len() >= at_least,
        "{case}: {} upstream requests, {at_least} expected at least",
        requests.len()
    );
    let (mut minted_total, mut checked) = (0, 0);
    for (k, request) in requests.iter().enumerate() {
        let carriers = minted_in(&request.response);
        minted_total += carriers.len();
        let conversation = first_user_text(&request.body);
        let length = request.body["messages"].as_array().map_or(0, Vec::len);
        for (j, later) in requests.iter().enumerate().skip(k + 1) {
            let continues = first_user_text(&later.body) == conversation
                && later.body["messages"].as_array().map_or(0, Vec::len) > length;
            if !continues {
                continue;
            }
            let mut strings = HashSet::new();
            strings_of(&later.body, &mut strings);
            checked += carriers.len();
            for carrier in &carriers {
                assert!(
                    strings.contains(carrier.as_str()),
                    "{case}: {carrier:?}, minted in answer {k}, did not go back byte for byte in \
                     request {j}: {}",
                    later.body
                );
            }
        }
    }
    assert!(
        minted_total > 0,
        "{case}: the upstream minted no carrier (is thinking on?)"
    );
    assert!(
        checked > 0,
        "{case}: no later request of the conversation to check a carrier in"
    );
}

/// `program` with none of the machine's provider settings (`OPENAI_*`, `ANTHROPIC_*`, …), no
/// proxy, loopback reached directly.
fn clean(program: &Path) -> Command {
    hermes_test_support::sdk::python(
        program,
        &[
            "OPENAI_",
            "ANTHROPIC_",
            "DEEPSEEK_",
            "CLAUDE_",
            "LANGCHAIN_",
            "LANGSMITH_",
            "LOGFIRE_",
        ],
    )
}

/// The script's output (JSON), after checking it ended well.
fn output_of(ran: &clients::Ran, case: &str) -> Value {
    let ended = match ran.code {
        Some(code) => format!("exit code {code}"),
        None => format!("killed after {LIMIT:?}"),
    };
    assert_eq!(
        ran.code,
        Some(0),
        "{case} failed ({ended}): {}\n{}",
        ran.stdout,
        ran.stderr
    );
    serde_json::from_str(ran.stdout.trim())
        .unwrap_or_else(|e| panic!("{case}: {e}: {}\n{}", ran.stdout, ran.stderr))
}

/// Both turns ended with the simulated model's answer after its two tool calls.
fn both_turns_answered(out: &Value, case: &str) {
    let turns = out["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{case}: {out}");
    for turn in turns {
        let text = turn["text"].as_str().unwrap_or_default();
        assert!(text.contains("Done after 2 tool calls"), "{case}: {out}");
    }
    assert_eq!(
        out["tool_runs"], 4,
        "{case}: the client ran its tool: {out}"
    );
}

/// Puts `script` next to the installed `node_modules` (an ES module resolves its imports from
/// its own folder), written under a temporary name and renamed so a test running it never
/// reads a half-written copy.
fn placed(node_dir: &Path, script: &str) -> PathBuf {
    let to = node_dir.join(script);
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let copy = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = node_dir.join(format!(".{script}.{}.{copy}", std::process::id()));
    std::fs::copy(Path::new(SCRIPTS).join(script), &tmp).unwrap();
    std::fs::rename(&tmp, &to).unwrap();
    to
}

/// The AI SDK (`generateText`, `stopWhen: stepCountIs(5)`, `maxRetries: 0`) with `provider`
/// (`openai-chat`, `openai-compatible`, `anthropic`; its npm package `package`) on `model`
/// through `door`.
async fn ai_sdk(provider: &str, package: &str, door: &str, model: &str) {
    let Some(node_dir) = clients::node_dir() else {
        return;
    };
    let chat = if provider == "openai-chat" {
        " .chat()"
    } else {
        ""
    };
    let mut row = Row::new(format!("AI SDK ({package}{chat})"), door, model);
    row.version = format!(
        "ai {}, {package} {}",
        clients::npm_version(&node_dir, "ai"),
        clients::npm_version(&node_dir, package)
    );
    let stage = Stage::start().await;
    let (sim, other) = stage.upstream_of(model);
    row.upstream = sim.profile().to_owned();
    let script = placed(&node_dir, "ai_sdk.mjs");
    let input =
        json!({"provider": provider, "base_url": stage.gateway.base(), "key": KEY, "model": model});
    let ran = tokio::task::spawn_blocking(move || {
        let mut node = clean(Path::new("node"));
        node.arg(script);
        clients::run(node, &input.to_string(), LIMIT)
    })
    .await
    .unwrap();
    tally(&mut row, sim);
    let case = row.client.clone();
    let out = output_of(&ran, &case);
    // Each turn: two tool-call steps and the answer, three upstream requests.
    upstream_checks(&row, sim, other, 6);
    both_turns_answered(&out, &case);
    stage.gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_sdk_openai_chat_on_deepseek_v4() {
    ai_sdk(
        "openai-chat",
        "@ai-sdk/openai",
        CHAT,
        "deepseek/deepseek-v4-pro",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_sdk_openai_compatible_on_deepseek_v4() {
    ai_sdk(
        "openai-compatible",
        "@ai-sdk/openai-compatible",
        CHAT,
        "deepseek/deepseek-v4-pro",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_sdk_anthropic_on_claude() {
    ai_sdk(
        "anthropic",
        "@ai-sdk/anthropic",
        MESSAGES,
        "anthropic/claude-opus-4-6",
    )
    .await;
}

/// A Python client's script `script` (its PyPI package `package`, named `client` in the table)
/// on `model` through the chat door, asking for `effort` when given.
async fn python_client(
    client: &str,
    package: &str,
    script: &str,
    model: &str,
    effort: Option<&str>,
) {
    python_client_at(client, package, script, model, effort, CHAT).await;
}

/// [`python_client`] through `door` (the script is told `responses` for [`RESPONSES`]).
async fn python_client_at(
    client: &str,
    package: &str,
    script: &str,
    model: &str,
    effort: Option<&str>,
    door: &'static str,
) {
    let Some(python) = clients::python() else {
        return;
    };
    let mut row = Row::new(client, door, model);
    let stage = Stage::start().await;
    let (sim, other) = stage.upstream_of(model);
    row.upstream = sim.profile().to_owned();
    let input = json!({"base_url": stage.gateway.base(), "key": KEY, "model": model,
                       "effort": effort, "responses": door == RESPONSES});
    let script = Path::new(SCRIPTS).join(script);
    let ran = tokio::task::spawn_blocking(move || {
        let mut cmd = clean(&python);
        cmd.arg(script);
        clients::run(cmd, &input.to_string(), LIMIT)
    })
    .await
    .unwrap();
    tally(&mut row, sim);
    let out = output_of(&ran, client);
    row.version = format!("{package} {}", out["version"].as_str().unwrap_or("?"));
    upstream_checks(&row, sim, other, 6);
    both_turns_answered(&out, client);
    stage.gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_on_deepseek_v4_under_an_alias() {
    // Under a name without "deepseek", the SDK sends no reasoning back: the gateway restores it.
    python_client(
        "OpenAI Agents SDK",
        "openai-agents",
        "openai_agents.py",
        "house-model",
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_on_claude_through_the_chat_door() {
    python_client(
        "OpenAI Agents SDK",
        "openai-agents",
        "openai_agents.py",
        "anthropic/claude-opus-4-6",
        Some("high"),
    )
    .await;
}

/// The Agents SDK's default model speaks the Responses API: through the Responses door, on a
/// DeepSeek V4 upstream (must-echo) and on Claude (signed thinking).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_default_responses_model_on_deepseek_v4_and_claude() {
    for (model, effort) in [
        ("deepseek/deepseek-v4-pro", None),
        ("anthropic/claude-opus-4-6", Some("high")),
    ] {
        python_client_at(
            "OpenAI Agents SDK (Responses)",
            "openai-agents",
            "openai_agents.py",
            model,
            effort,
            RESPONSES,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langchain_on_deepseek_v4() {
    python_client(
        "LangChain ChatOpenAI",
        "langchain-openai",
        "langchain_chat.py",
        "deepseek/deepseek-v4-pro",
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langchain_on_claude_through_the_chat_door() {
    python_client(
        "LangChain ChatOpenAI",
        "langchain-openai",
        "langchain_chat.py",
        "anthropic/claude-opus-4-6",
        Some("high"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pydantic_ai_on_deepseek_v4() {
    python_client(
        "pydantic-ai",
        "pydantic-ai-slim",
        "pydantic_ai_chat.py",
        "deepseek/deepseek-v4-pro",
        None,
    )
    .await;
}

/// Claude Code (`claude -p … --output-format json`, then `--continue`), its own native binary,
/// headless in a home and config folder of its own, only its `Read` tool offered, run with
/// `--model ARG` through the Messages door as the gateway guide's recipe says (its environment,
/// its `[serve.models]`); `sends` is the model name Claude Code sends for `ARG`.
async fn claude_code(arg: &str, sends: &str) {
    let model = sends;
    let Some((node_dir, mut row, stage)) =
        npm_client("Claude Code", "@anthropic-ai/claude-code", MESSAGES, model).await
    else {
        return;
    };
    let (sim, other) = stage.upstream_of(model);
    let binary = node_dir.join("node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    let root = stage.gateway.url("");
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let model_name = arg.to_owned();
    // A name of Claude Code's own (`sonnet`) keeps its own small model (a Claude name the
    // recipe's pattern maps too); an alias is the small model as well.
    let small = (!["sonnet", "opus", "haiku"].contains(&arg)).then(|| arg.to_owned());
    let turns = [
        ("What time is it? [tools=2]", None),
        ("And what time is it now? [tools=2]", Some("--continue")),
    ]
    .map(|(prompt, more)| {
        let mut cmd = Command::new(&binary);
        cmd.env_clear()
            .current_dir(&work)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
            // The gateway guide's recipe: the gateway's root and key.
            .env("ANTHROPIC_BASE_URL", &root)
            .env("ANTHROPIC_AUTH_TOKEN", KEY)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .args(["-p", prompt, "--model", &model_name])
            .args(["--output-format", "json", "--max-turns", "8"])
            .args(["--tools", "Read", "--allowedTools", "Read"])
            .args(more);
        if let Some(small) = &small {
            cmd.env("ANTHROPIC_DEFAULT_HAIKU_MODEL", small)
                .env("ANTHROPIC_SMALL_FAST_MODEL", small);
        }
        cmd
    });
    for (case, ran) in &run_turns(turns, &mut row, sim).await {
        // Its JSON result says why it failed (an API error's status and message) best.
        if let Ok(out) = serde_json::from_str::<Value>(ran.stdout.trim()) {
            assert_eq!(out["is_error"], false, "{case}: {}: {out}", out["result"]);
        }
        let out = output_of(ran, case);
        assert_eq!(out["is_error"], false, "{case}: {out}");
        assert_eq!(out["subtype"], "success", "{case}: {out}");
        let text = out["result"].as_str().unwrap_or_default();
        assert!(text.contains("Done after 2 tool calls"), "{case}: {out}");
    }
    upstream_checks(&row, sim, other, 6);
    stage.gateway.stop().await;
}

/// One test per `name => run;`: `run` (a native client's run) on a multi-threaded runtime.
macro_rules! native_client_tests {
    ($($(#[$meta:meta])* $name:ident => $run:expr;)*) => {
        $(
            $(#[$meta])*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $run.await;
            }
        )*
    };
}

native_client_tests! {
    claude_code_on_claude_opus_4_8 => claude_code("claude-opus-4-8", "claude-opus-4-8");
    /// `claude --model sonnet`, as the gateway guide's recipe runs it.
    claude_code_model_sonnet_as_the_readme_says => claude_code("sonnet", "claude-sonnet-5-5");
    /// `claude --model opus`, as the gateway guide's recipe runs it.
    claude_code_model_opus_as_the_readme_says => claude_code("opus", "claude-opus-5-5");
    /// `claude --model deepseek-coder`: the gateway guide recipe's custom alias, DeepSeek V4
    /// behind it.
    claude_code_on_deepseek_v4_under_the_readmes_alias =>
        claude_code("deepseek-coder", "deepseek-coder");
}

/// Codex CLI (`codex exec --json`, then `codex exec resume --last`), its own native binary,
/// headless in a home and `CODEX_HOME` of its own, through the Responses door as a custom
/// provider (`wire_api = "responses"`, the gateway guide's recipe), on `model`: two turns of two
/// tool calls each (its `exec_command` tool really runs), then a third turn past a tiny
/// `model_auto_compact_token_limit`, so Codex compacts the conversation (for a custom
/// provider: an ordinary Responses request without tools asking for a summary, whose answer
/// then stands for the turns it summarised). Every upstream request is accepted and every
/// carrier the upstream minted goes back to it byte for byte.
async fn codex(model: &str) {
    let Some((node_dir, mut row, stage)) =
        npm_client("Codex CLI", "@openai/codex", RESPONSES, model).await
    else {
        return;
    };
    let (sim, other) = stage.upstream_of(model);
    let binary = node_dir
        .join("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
    let dir = tempfile::tempdir().unwrap();
    let (home, codex_home, work) = (
        dir.path().join("home"),
        dir.path().join("codex-home"),
        dir.path().join("work"),
    );
    for d in [&home, &codex_home, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    // The gateway guide's recipe, and what keeps Codex off the network and out of the user's
    // shell files (plugins fetch from GitHub; a shell snapshot sources ~/.bashrc).
    let config = format!(
        r#"model = "{model}"
model_reasoning_effort = "high"
model_provider = "hermes"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
allow_login_shell = false
web_search = "disabled"

[model_providers.hermes]
name = "hermes"
base_url = "{base}"
env_key = "HERMES_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false
shell_snapshot = false
goals = false

[agents]
enabled = false

[analytics]
enabled = false
"#,
        base = stage.gateway.base()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let turns = [
        ("What time is it? [tools=2]", false, false),
        ("And what time is it now? [tools=2]", true, false),
        ("Thanks. Say that once more.", true, true),
    ]
    .map(|(prompt, resume, compact)| {
        let mut cmd = Command::new(&binary);
        cmd.env_clear()
            .current_dir(&work)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CODEX_HOME", &codex_home)
            .env("HERMES_API_KEY", KEY)
            .env("RUST_LOG", "warn")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .args(["exec", "--json", "--skip-git-repo-check"]);
        if compact {
            cmd.args(["-c", "model_auto_compact_token_limit=1000"]);
        }
        if resume {
            cmd.args(["resume", "--last"]);
        }
        cmd.arg(prompt);
        cmd
    });
    for (turn, (case, ran)) in run_turns(turns, &mut row, sim).await.iter().enumerate() {
        assert_eq!(ran.code, Some(0), "{case}: {}\n{}", ran.stdout, ran.stderr);
        let events: Vec<Value> = ran
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert!(
            events.iter().any(|e| e["type"] == "turn.completed"),
            "{case}: {}",
            ran.stdout
        );
        assert!(
            !events.iter().any(|e| e["type"] == "turn.failed"),
            "{case}: {}",
            ran.stdout
        );
        let said: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
            .filter_map(|e| e["item"]["text"].as_str())
            .collect();
        if turn == 2 {
            // The answer after the compaction: the simulated model answers the turn directly.
            assert!(!said.is_empty(), "{case}: an answer: {}", ran.stdout);
            continue;
        }
        let ran_tools = events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
            .count();
        assert_eq!(
            ran_tools, 2,
            "{case}: Codex ran its tool twice: {}",
            ran.stdout
        );
        assert!(
            said.iter().any(|t| t.contains("Done after 2 tool calls")),
            "{case}: the model's last answer: {said:?}\n{}",
            ran.stdout
        );
    }
    // The third run compacted first: a request without tools whose last user message asks
    // for the summary (Codex's own prompt), answered and then built upon.
    let requests = sim.requests();
    let compacted = requests
        .iter()
        .filter(|r| r.body.to_string().contains("CONTEXT CHECKPOINT COMPACTION"))
        .count();
    assert!(compacted >= 1, "Codex compacted through the door");
    upstream_checks(&row, sim, other, 7);
    stage.gateway.stop().await;
}

native_client_tests! {
    codex_on_deepseek_v4 => codex("deepseek/deepseek-v4-pro");
    codex_on_claude => codex("anthropic/claude-opus-4-6");
}

#[test]
fn the_carriers_of_an_answer_are_put_together_whole_or_streamed() {
    let chat = json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": null, "reasoning_content": "I think."}}]});
    assert_eq!(minted_in(&chat.to_string()), ["I think."]);
    let claude = json!({"content": [
        {"type": "thinking", "thinking": "Hmm, the time.", "signature": "c2lnbmVk"},
        {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}]});
    let mut got = minted_in(&claude.to_string());
    got.sort();
    assert_eq!(got, ["Hmm, the time.", "c2lnbmVk"]);
    let chat_stream = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "I th"}}]}),
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "ink."}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "It is noon."}}]}),
    ]
    .iter()
    .map(|e| format!("data: {e}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    assert_eq!(minted_in(&chat_stream), ["I think."]);
    let claude_stream = [
        json!({"type": "message_start", "message": {"content": []}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "Hmm, "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "the time."}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "redacted_thinking", "data": "c2VhbGVk"}}),
    ]
    .iter()
    .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
    .collect::<String>();
    let mut got = minted_in(&claude_stream);
    got.sort();
    assert_eq!(got, ["Hmm, the time.", "c2VhbGVk", "c2lnbmVk"]);
}
