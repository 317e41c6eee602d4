//! End to end through the real binary and the strict simulator: sessions that remember, the
//! refusal fallback, and secrets kept out of every output.

use hermes_sim::{Sim, Switches};
use hermes_test_support::home::Home;
use serde_json::{Value, json};

/// What these tests ask of a home beyond running hermes.
trait ChatHome {
    /// `chat --json ARGS`: the JSON summary.
    async fn chat_json(&self, args: &[&str]) -> Value;
    /// Starts a session on the deepseek route against `base` (a simulator) with `query`.
    async fn start_deepseek(&self, base: &str, query: &str) -> Value;
    /// Starts a session on the in-process simulator (`--provider sim`) with `query`: its id.
    async fn sim_session(&self, query: &str) -> String;
}

impl ChatHome for Home {
    async fn chat_json(&self, args: &[&str]) -> Value {
        self.chat(args, &[]).await
    }

    async fn start_deepseek(&self, base: &str, query: &str) -> Value {
        self.chat_json(&crate::support::deepseek_at(base, &["-q", query]))
            .await
    }

    async fn sim_session(&self, query: &str) -> String {
        self.chat_id(&["--provider", "sim", "-q", query], &[]).await
    }
}

fn assistant_rcs(session: &Value) -> Vec<String> {
    crate::support::assistants(session)
        .map(|m| m["reasoning_content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumed_deepseek_session_replays_every_stored_reasoning_content() {
    let (sim, home, base) = crate::support::sim_home("deepseek-v4").await;
    let first = home.start_deepseek(&base, "[tools=3] time?").await;
    let id = first["session_id"].as_str().unwrap().to_owned();
    assert_eq!(first["requests"], 4);
    assert_eq!(first["route"], "deepseek");
    let stored = home.export(&id).await;
    let rcs = assistant_rcs(&stored);
    assert_eq!(rcs.len(), 4);

    // A new process resumes the session.
    sim.clear_requests();
    let second = home.chat_json(&["--resume", &id, "-q", "and now?"]).await;
    assert_eq!(second["session_id"], id.as_str());
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, 200, "{}", requests[0].response);
    let sent = &requests[0].body["messages"];
    let sent_rcs: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["reasoning_content"].as_str().unwrap())
        .collect();
    assert_eq!(
        sent_rcs, rcs,
        "every earlier reasoning_content, exactly as stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_carrier_is_learned_once_persisted_and_kept_after_resume() {
    let (sim, home, base) = crate::support::sim_home("openrouter").await;
    let model = "anthropic/claude-sonnet-5";
    let file = home.path().join("import.json");
    std::fs::write(
        &file,
        json!({"format": "hermes.session.v1", "provider": "openrouter", "model": model, "base_url": base,
               "messages": [
                 {"role": "user", "content": "q"},
                 {"role": "assistant", "content": "a", "reasoning": "r",
                  "reasoning_details": [{"type": "reasoning.summary", "summary": "thought about q", "index": 0}]}
               ]})
        .to_string(),
    )
    .unwrap();
    let id = home.import(&file).await;
    let before = home.export(&id).await;

    sim.set_switches(Switches::default().reject_message_field("reasoning_details"));
    let out = home
        .run(
            // The imported URL gets the key only once the user names it.
            &[
                "chat",
                "--resume",
                &id,
                "--base-url",
                &base,
                "-q",
                "next",
                "--json",
            ],
            &[("OPENROUTER_API_KEY", "sk-x")],
        )
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refused reasoning, reasoning_details"),
        "{stderr}"
    );
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "exactly one retry");
    assert_eq!(requests[0].status, 400);
    assert!(
        requests[0].body["messages"][1]
            .get("reasoning_details")
            .is_some()
    );
    assert_eq!(requests[1].status, 200);
    assert!(
        requests[1].body["messages"][1]
            .get("reasoning_details")
            .is_none()
    );
    assert_eq!(requests[1].body["messages"][1]["reasoning_content"], "r");

    let after = home.export(&id).await;
    assert_eq!(
        after["model_config"]["reasoning_rejected_carriers"],
        json!([[
            "openrouter",
            "127.0.0.1",
            model,
            ["reasoning", "reasoning_details"]
        ]])
    );
    assert_eq!(
        after["messages"].as_array().unwrap()[..2],
        before["messages"].as_array().unwrap()[..],
        "history untouched"
    );

    // After --resume the first request already omits them: no 400.
    sim.clear_requests();
    home.chat_json(&["--resume", &id, "-q", "again"]).await;
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, 200);
    assert!(
        requests[0].body["messages"][1]
            .get("reasoning_details")
            .is_none()
    );

    // Another model on the same host still gets them.
    let preview: Value = serde_json::from_str(
        &home
            .ok(&["preview", "--session", &id, "--model", "openai/gpt-5"])
            .await,
    )
    .unwrap();
    assert_eq!(
        preview["messages"][1]["reasoning_details"],
        json!([{"type": "reasoning.summary", "summary": "thought about q", "index": 0}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_must_echo_route_complaining_about_reasoning_content_gets_no_verdict_and_no_retry() {
    let (sim, home, base) = crate::support::sim_home("deepseek-v4").await;
    let first = home.start_deepseek(&base, "hi").await;
    let id = first["session_id"].as_str().unwrap().to_owned();
    sim.set_switches(Switches::default().reject_message_field("reasoning_content"));
    sim.clear_requests();
    let out = home
        .run(&["chat", "--resume", &id, "-q", "again"], &[])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HTTP 400") && stderr.contains("reasoning_content"),
        "{stderr}"
    );
    assert_eq!(sim.requests().len(), 1, "no retry");
    let session = home.export(&id).await;
    assert!(
        session["model_config"]
            .get("reasoning_rejected_carriers")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_key_appears_in_no_output_log_or_database_byte() {
    const KEY: &str = "sk-planted-7f3a9c2e1b5d4e8f";
    let (sim, home, base) = crate::support::sim_home("openrouter").await;
    let mut outputs = Vec::new();
    let out = home
        .run(
            &crate::support::chat_cmd(&crate::support::target(
                "openrouter",
                "x/m",
                &base,
                &["-q", "[tools=2] go", "--json"],
            )),
            &[("OPENROUTER_API_KEY", KEY), ("HERMES_LOG", "trace")],
        )
        .await;
    let id = crate::support::chat_session_id(&out);
    outputs.push(out.stdout);
    outputs.push(out.stderr);
    for args in [
        vec!["sessions", "show", &id],
        vec!["sessions", "export", &id],
        vec!["sessions", "list", "--json"],
    ] {
        let out = home
            .run(
                &args,
                &[("OPENROUTER_API_KEY", KEY), ("HERMES_LOG", "trace")],
            )
            .await;
        outputs.push(out.stdout);
        outputs.push(out.stderr);
    }
    // The key did reach the provider (so the test can fail), and nothing else.
    assert!(sim.requests().iter().all(|r| r.status == 200));
    for bytes in &outputs {
        assert!(!String::from_utf8_lossy(bytes).contains(KEY));
    }
    for entry in std::fs::read_dir(home.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(KEY),
                "{} holds the key",
                path.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_show_counts_one_tool_call_in_the_singular() {
    let home = crate::support::home();
    let id = home.sim_session("[tools=1] time?").await;
    let shown = home.ok(&["sessions", "show", &id]).await;
    assert!(shown.contains("; 1 tool call ("), "{shown}");
    assert!(!shown.contains("1 tool calls"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_with_the_simulator_needs_no_key_and_no_network() {
    let home = crate::support::home();
    let out = home.ok(&["chat", "--provider", "sim", "-q", "hello"]).await;
    assert!(out.contains("hello"), "{out}");
    let list: Value =
        serde_json::from_str(&home.ok(&["sessions", "list", "--json"]).await).unwrap();
    assert_eq!(list[0]["base_url"], "sim://deepseek-v4");
    // A resumed sim session starts a fresh simulator.
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let again = home.chat_json(&["--resume", &id, "-q", "again"]).await;
    assert_eq!(again["route"], "deepseek");
    assert_eq!(
        again["messages"][0]["carriers"],
        json!(["reasoning_content"])
    );
    // The simulator reports its reasoning tokens; they are shown apart and summed per session.
    let reasoning = again["usage"]["reasoning"].as_u64().unwrap();
    assert!(reasoning > 0, "{again}");
    assert!(again["usage"]["completion_tokens"].as_u64().unwrap() >= reasoning);
    let list: Value =
        serde_json::from_str(&home.ok(&["sessions", "list", "--json"]).await).unwrap();
    assert!(
        list[0]["reasoning_tokens"].as_i64().unwrap() > reasoning as i64,
        "{list}"
    );
    let shown = home.ok(&["sessions", "show", &id]).await;
    assert!(shown.contains(" thinking)"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_names_the_variable() {
    let home = crate::support::home();
    let out = home
        .run(
            &[
                "chat",
                "--provider",
                "openrouter",
                "--model",
                "x/m",
                "-q",
                "hi",
            ],
            &[],
        )
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("set OPENROUTER_API_KEY"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_branch_show_and_delete() {
    let home = crate::support::home();
    let id = home.sim_session("[tools=1] go").await;
    let branch = home.branch(&id, &["--at", "3"]).await;
    let show: Value =
        serde_json::from_str(&home.ok(&["sessions", "show", &branch, "--json"]).await).unwrap();
    assert_eq!(show["session"]["parent_id"], id.as_str());
    assert_eq!(show["messages"].as_array().unwrap().len(), 3);
    assert_eq!(
        show["messages"][1]["carriers"],
        json!(["reasoning_content"])
    );
    let original = home.export(&id).await;
    let copied = home.export(&branch).await;
    assert_eq!(
        copied["messages"].as_array().unwrap()[..],
        original["messages"].as_array().unwrap()[..3]
    );
    home.ok(&["sessions", "delete", &branch]).await;
    let out = home.run(&["sessions", "show", &branch], &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no session `{branch}`")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_serve_prints_its_base_url_first_and_serves_until_killed() {
    let home = crate::support::home();
    // Its own home: `sim serve` writes logs, never into the user's real one.
    let args = ["sim", "serve", "--profile", "deepseek-v4", "--port", "0"];
    let (sim, addr) = tokio::task::block_in_place(|| crate::serve::sim_serve(home.path(), &args));
    let base = format!("http://{addr}");
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");

    let reply = home.start_deepseek(&base, "hi").await;
    assert_eq!(
        reply["messages"][0]["carriers"],
        json!(["reasoning_content"])
    );
    drop(sim);

    let out = home.run(&["sim", "serve", "--profile", "nope"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'nope'"), "{err}");
    assert!(
        err.contains("openai-responses"),
        "the profiles are listed: {err}"
    );
}

/// Builds a session of several tool-using turns against a new simulator of `profile` in a new
/// home, compacts it, and returns the simulator, the home and the session's id.
async fn compacted_session(profile: &str, provider: &str, model: &str) -> (Sim, Home, String) {
    let (sim, home, base) = crate::support::sim_home(profile).await;
    let id = home
        .chat_id(
            &crate::support::target(provider, model, &base, &["-q", "[tools=2] start"]),
            &[],
        )
        .await;
    for q in ["one", "[tools=1] two", "three", "[tools=2] four", "five"] {
        home.chat_json(&["--resume", &id, "-q", q]).await;
    }
    let status = home.ok(&["sessions", "compact", &id]).await;
    assert!(status.starts_with("context compacted: "), "{status}");
    (sim, home, id)
}

/// The assistant messages of a body or an export.
fn assistants_of(body: &Value) -> Vec<Value> {
    crate::support::assistants(body).cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_session_resumed_and_branched_still_replays_its_reasoning() {
    let (sim, home, id) = compacted_session("deepseek-v4", "deepseek", "deepseek-v4-pro").await;

    // Originals stay archived; the active view has one checkpoint.
    let all: Value =
        serde_json::from_str(&home.ok(&["sessions", "show", &id, "--all", "--json"]).await)
            .unwrap();
    let rows = all["messages"].as_array().unwrap();
    assert!(rows.iter().filter(|m| m["archived"] == true).count() > 3);
    assert_eq!(rows.iter().filter(|m| m["checkpoint"] == true).count(), 1);
    // Resumed in a new process: every retained turn's reasoning, exactly as stored.
    let retained = resumed_replays_reasoning(&sim, &home, &id, "after compaction").await;
    assert!(!retained.is_empty());
    // And on a branch.
    let branch = home.branch(&id, &[]).await;
    resumed_replays_reasoning(&sim, &home, &branch, "on the branch").await;
}

/// Resumes session `id` with `query` in a new process: the request is accepted and carries the
/// `reasoning_content` of each assistant turn the session holds, exactly as stored. Returns those
/// turns (as exported before the resume).
async fn resumed_replays_reasoning(sim: &Sim, home: &Home, id: &str, query: &str) -> Vec<Value> {
    let retained = assistants_of(&home.export(id).await);
    sim.clear_requests();
    home.chat_json(&["--resume", id, "-q", query]).await;
    let request = sim.requests().pop().unwrap();
    assert_eq!(request.status, 200, "{}", request.response);
    let sent = assistants_of(&request.body);
    let sent_rc: Vec<&Value> = sent.iter().map(|m| &m["reasoning_content"]).collect();
    let stored_rc: Vec<&Value> = retained.iter().map(|m| &m["reasoning_content"]).collect();
    assert_eq!(sent_rc, stored_rc, "session {id}");
    retained
}

/// The `extra_content` of each message's first tool call, of a body or an export.
fn first_call_extras(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            m["tool_calls"]
                .get(0)
                .and_then(|c| c.get("extra_content"))
                .cloned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_tool_call_signature_survives_compaction_and_branch() {
    let (_sim, home, id) =
        compacted_session("gemini-openai", "gemini-openai", "gemini-3-pro-preview").await;
    let stored = home.export(&id).await;
    let signed = first_call_extras(&stored);
    assert!(
        !signed.is_empty(),
        "a retained tool-call turn keeps its signature"
    );
    let branch = home.branch(&id, &[]).await;
    let preview: Value =
        serde_json::from_str(&home.ok(&["preview", "--session", &branch]).await).unwrap();
    let previewed = first_call_extras(&preview);
    assert_eq!(
        previewed, signed,
        "the gemini-openai route replays every retained signature"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_compacts_automatically_when_the_estimate_crosses_the_trigger() {
    let home = crate::support::home();
    std::fs::write(
        home.path().join("config.toml"),
        "[compaction]\ncontext_window = 400\nmax_output = 100\ntrigger_percent = 80\n",
    )
    .unwrap();
    let id = home.sim_session("[tools=2] go").await;
    let mut compacted = false;
    for q in ["one", "two", "three", "four", "five", "six"] {
        let out = home.run(&["chat", "--resume", &id, "-q", q], &[]).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        compacted |= String::from_utf8_lossy(&out.stderr).contains("hermes: context compacted: ");
    }
    assert!(compacted, "one status line says the context was compacted");
    let all: Value =
        serde_json::from_str(&home.ok(&["sessions", "show", &id, "--all", "--json"]).await)
            .unwrap();
    assert!(
        all["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["checkpoint"] == true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_naming_a_field_is_retried_with_backoff_and_records_no_verdict() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(502)
                .set_body_string("upstream: unknown field `reasoning_details`"),
        )
        .expect(4)
        .mount(&server)
        .await;
    let home = crate::support::home();
    let file = home.path().join("s.json");
    std::fs::write(
        &file,
        json!({"format": "hermes.session.v1", "provider": "openrouter", "model": "x/m",
               "base_url": format!("{}/v1", server.uri()),
               "messages": [{"role": "user", "content": "q"},
                            {"role": "assistant", "content": "a",
                             "reasoning_details": [{"type": "reasoning.summary", "summary": "s"}]}]})
        .to_string(),
    )
    .unwrap();
    let id = home.import(&file).await;
    let before = home.export(&id).await;
    let out = home
        .run(&["chat", "--resume", &id, "-q", "next", "--no-stream"], &[])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("HTTP 502"), "{stderr}");
    assert_eq!(
        stderr.matches("retry ").count(),
        3,
        "three backoff retries: {stderr}"
    );
    let after = home.export(&id).await;
    assert!(
        after["model_config"]
            .get("reasoning_rejected_carriers")
            .is_none(),
        "no verdict"
    );
    assert_eq!(after, before, "nothing stored for a turn that got no reply");
    server.verify().await;
}

/// Every wire's usage lands the same way in `chat --json` and `sessions show --json`: for one
/// turn against each simulator the two agree field by field, the thinking share is inside the
/// output (never beside it), and a wire whose provider reports a thinking count (DeepSeek's and
/// OpenAI's `completion_tokens_details`, Gemini's `thoughtsTokenCount`, Responses'
/// `output_tokens_details`) shows it, while Claude's (Messages, Converse), which report none,
/// show 0 and keep the thinking in the output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_json_and_sessions_show_agree_on_every_wires_tokens() {
    for (profile, thinking_counted) in [
        ("deepseek-v4", true),
        ("anthropic", false),
        ("gemini", true),
        ("openai-responses", true),
        ("bedrock", false),
    ] {
        let home = crate::support::own_home();
        let url = format!("sim://{profile}");
        let (reply, _) = home
            .chat_stderr(
                &[
                    "--provider",
                    "sim",
                    "--base-url",
                    &url,
                    "--effort",
                    "high",
                    "-q",
                    "Why is the sky blue?",
                ],
                &[],
            )
            .await;
        let id = reply["session_id"].as_str().unwrap().to_owned();
        let shown: Value =
            serde_json::from_str(&home.ok(&["sessions", "show", &id, "--json"]).await).unwrap();
        let shown = if shown.get("session").is_some() {
            shown["session"].clone()
        } else {
            shown
        };
        let usage = &reply["usage"];
        let n = |v: &Value, k: &str| {
            v[k].as_u64()
                .unwrap_or_else(|| panic!("{profile}: no {k} in {v}"))
        };
        for (chat, stored) in [
            ("prompt_tokens", "input_tokens"),
            ("completion_tokens", "output_tokens"),
            ("reasoning", "reasoning_tokens"),
            ("cache_read", "cache_read_tokens"),
            ("cache_write", "cache_write_tokens"),
        ] {
            assert_eq!(
                n(usage, chat),
                n(&shown, stored),
                "{profile}: chat --json {chat} against sessions show {stored}"
            );
        }
        assert_eq!(
            n(usage, "total_tokens"),
            n(usage, "prompt_tokens") + n(usage, "completion_tokens"),
            "{profile}: reasoning is inside completion_tokens, not added to the total"
        );
        assert!(
            n(usage, "reasoning") < n(usage, "completion_tokens"),
            "{profile}: {usage}"
        );
        assert_eq!(
            n(usage, "reasoning") > 0,
            thinking_counted,
            "{profile}: {usage}"
        );
        assert!(
            n(usage, "cache_read") + n(usage, "cache_write") <= n(usage, "prompt_tokens"),
            "{profile}: the cache's share is inside the input: {usage}"
        );
    }
}
