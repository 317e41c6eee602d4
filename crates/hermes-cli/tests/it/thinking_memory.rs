//! A session remembers its thinking request: `--effort E` / `--no-thinking` is stored with the
//! session, a resume without either flag keeps it, a new flag replaces it, and config.toml's
//! `effort` counts only when neither a flag nor the session says anything. Through the real
//! binary against the strict simulators, asserting on the request bodies they recorded.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;
use serde_json::{Value, json};

/// A budget-thinking Claude: `--no-thinking` sends `thinking: {"type":"disabled"}`, so off and
/// no preference differ on the wire.
const SONNET: &str = "claude-sonnet-4-5";
const KEY: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", "sk-ant-test")];

/// What these tests ask of a home beyond running hermes.
trait ThinkingHome {
    /// Writes the home's `config.toml`.
    fn config(&self, text: &str);
    /// `sessions show ID --json`.
    async fn show_json(&self, id: &str) -> Value;
    /// `sessions show ID`.
    async fn show_text(&self, id: &str) -> String;
    /// The session's `model_config` text, exactly as state.db holds it.
    async fn raw_config(&self, id: &str) -> String;
    /// Reads the session's `model_config` text, or replaces it with `set`.
    async fn sql(&self, id: &str, set: Option<&str>) -> Option<String>;
}

impl ThinkingHome for Home {
    fn config(&self, text: &str) {
        std::fs::write(self.path().join("config.toml"), text).unwrap();
    }

    async fn show_json(&self, id: &str) -> Value {
        serde_json::from_str(&self.ok(&["sessions", "show", id, "--json"]).await).unwrap()
    }

    async fn show_text(&self, id: &str) -> String {
        self.ok(&["sessions", "show", id]).await
    }

    async fn raw_config(&self, id: &str) -> String {
        self.sql(id, None).await.unwrap()
    }

    async fn sql(&self, id: &str, set: Option<&str>) -> Option<String> {
        use sqlx::Connection as _;
        let mut conn = self.sqlite().await;
        let text = match set {
            Some(text) => {
                sqlx::query("UPDATE sessions SET model_config = ? WHERE id = ?")
                    .bind(text)
                    .bind(id)
                    .execute(&mut conn)
                    .await
                    .unwrap();
                None
            }
            None => Some(
                sqlx::query_scalar("SELECT model_config FROM sessions WHERE id = ?")
                    .bind(id)
                    .fetch_one(&mut conn)
                    .await
                    .unwrap(),
            ),
        };
        conn.close().await.unwrap();
        text
    }
}

/// Every recorded request succeeded; returns them.
fn taken(sim: &Sim) -> Vec<RecordedRequest> {
    let requests = sim.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.status, 200, "{}", r.response);
    }
    sim.clear_requests();
    requests
}

/// The Anthropic body's thinking request: (`thinking`, `output_config`).
fn anthropic_thinking(r: &RecordedRequest) -> (Value, Value) {
    (r.body["thinking"].clone(), r.body["output_config"].clone())
}

/// The DeepSeek body's thinking request: (`thinking`, `reasoning_effort`).
fn deepseek_thinking(r: &RecordedRequest) -> (Value, Value) {
    (
        r.body["thinking"].clone(),
        r.body["reasoning_effort"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_session_keeps_its_effort_and_then_its_no_thinking_across_resumes() {
    let (sim, home, base) = crate::support::sim_home("anthropic").await;

    // Started with --effort high: every request of the tool loop thinks, and the session
    // stores the request.
    let id = home
        .chat_id(
            &crate::support::target(
                "anthropic",
                SONNET,
                &base,
                &["--effort", "high", "-q", "[tools=1] what time is it?"],
            ),
            KEY,
        )
        .await;
    let first = taken(&sim);
    assert_eq!(first.len(), 2);
    let high = anthropic_thinking(&first[0]);
    assert_eq!(high.0["type"], "enabled", "{}", first[0].body);
    assert!(high.0["budget_tokens"].as_u64().unwrap() > 0);
    for r in &first {
        assert_eq!(anthropic_thinking(r), high);
    }
    assert_eq!(home.show_json(&id).await["session"]["thinking"], "high");
    assert!(home.show_text(&id).await.contains(
        "  thinking: effort high (stored; a resume without --effort or --no-thinking keeps it)"
    ));
    assert!(
        home.raw_config(&id)
            .await
            .contains(r#""hermes_thinking":"high""#)
    );

    // Resumed without a flag, in a new process, mid tool loop: the same thinking request.
    home.chat_id(&["--resume", &id, "-q", "[tools=1] and now?"], KEY)
        .await;
    let resumed = taken(&sim);
    assert_eq!(resumed.len(), 2);
    for r in &resumed {
        assert_eq!(anthropic_thinking(r), high, "{}", r.body);
    }
    // The preview of the stored session shows the request chat sends.
    let preview: Value = serde_json::from_str(
        &home
            .ok_with(&["preview", "--session", &id, "-q", "next"], KEY)
            .await
            .0,
    )
    .unwrap();
    assert_eq!(preview["thinking"], high.0, "{preview}");

    // A branch inherits it.
    let branch = home.branch(&id, &[]).await;
    assert_eq!(home.show_json(&branch).await["session"]["thinking"], "high");

    // Resumed with --no-thinking: disabled, and stored so.
    home.chat_id(&["--resume", &id, "--no-thinking", "-q", "quick one"], KEY)
        .await;
    let off = taken(&sim);
    assert_eq!(off.len(), 1);
    assert_eq!(
        anthropic_thinking(&off[0]),
        (json!({"type": "disabled"}), Value::Null),
        "{}",
        off[0].body
    );
    assert_eq!(home.show_json(&id).await["session"]["thinking"], "off");
    assert!(
        home.show_text(&id)
            .await
            .contains("  thinking: off (stored;")
    );

    // The next resume without a flag stays disabled.
    home.chat_id(&["--resume", &id, "-q", "still quick?"], KEY)
        .await;
    let still = taken(&sim);
    assert_eq!(still.len(), 1);
    assert_eq!(anthropic_thinking(&still[0]), anthropic_thinking(&off[0]));
    // The branch kept its own request.
    assert_eq!(home.show_json(&branch).await["session"]["thinking"], "high");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_effort_counts_only_when_neither_a_flag_nor_the_session_asks() {
    let (sim, home, base) = crate::support::sim_home("deepseek-v4").await;
    let start = |extra: &'static [&'static str]| {
        let base = base.clone();
        let home = &home;
        async move {
            let mut args = crate::support::deepseek_at(&base, &["-q", "hello"]);
            args.extend_from_slice(extra);
            home.chat_id(&args, &[]).await
        }
    };

    // No flag, no config: no thinking request, and nothing stored.
    let plain = start(&[]).await;
    assert_eq!(
        deepseek_thinking(&taken(&sim)[0]),
        (Value::Null, Value::Null)
    );
    assert_eq!(
        home.show_json(&plain).await["session"]["thinking"],
        Value::Null
    );
    assert!(
        home.show_text(&plain)
            .await
            .contains("  thinking: none stored")
    );
    let effort_high = start(&["--effort", "high"]).await;
    let high = deepseek_thinking(&taken(&sim)[0]);
    assert_eq!(high.0, json!({"type": "enabled"}));
    assert!(high.1.is_string(), "{high:?}");
    let no_thinking = start(&["--no-thinking"]).await;
    let off = deepseek_thinking(&taken(&sim)[0]);
    assert_eq!(off, (json!({"type": "disabled"}), Value::Null));

    // Now config.toml asks for low effort.
    home.config("effort = \"low\"\n");
    let resume = |id: String, extra: &'static [&'static str]| {
        let home = &home;
        async move {
            let mut args = vec!["--resume", id.as_str(), "-q", "again"];
            args.extend_from_slice(extra);
            home.chat_id(&args, &[]).await;
        }
    };
    // The session that stores nothing takes config's effort (and still stores nothing).
    resume(plain.clone(), &[]).await;
    let low = deepseek_thinking(&taken(&sim)[0]);
    assert_eq!(low.0, json!({"type": "enabled"}));
    assert!(low.1.is_string(), "{low:?}");
    assert_eq!(
        home.show_json(&plain).await["session"]["thinking"],
        Value::Null
    );
    // The sessions that store a request keep it over config's.
    resume(effort_high.clone(), &[]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), high);
    resume(no_thinking.clone(), &[]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), off);
    // A flag beats both, and is stored for the next resume.
    resume(plain.clone(), &["--no-thinking"]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), off);
    resume(plain.clone(), &[]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), off);
    assert_eq!(home.show_json(&plain).await["session"]["thinking"], "off");
    resume(no_thinking.clone(), &["--effort", "high"]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), high);
    assert_eq!(
        home.show_json(&no_thinking).await["session"]["thinking"],
        "high"
    );

    // A new session started under config's effort stores that request with its first step.
    let under_config = start(&[]).await;
    assert_eq!(deepseek_thinking(&taken(&sim)[0]), low);
    assert_eq!(
        home.show_json(&under_config).await["session"]["thinking"],
        "low"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_request_is_one_member_and_a_damaged_one_is_named() {
    let (sim, home, base) = crate::support::sim_home("deepseek-v4").await;
    let id = home
        .chat_id(
            &crate::support::deepseek_at(&base, &["--effort", "high", "-q", "hello"]),
            &[],
        )
        .await;
    taken(&sim);
    assert_eq!(home.raw_config(&id).await, r#"{"hermes_thinking":"high"}"#);

    // Other members, written by hand, keep their exact text and place when a flag rewrites it.
    home.sql(
        &id,
        Some(r#"{"a":1.0e5,"hermes_thinking":"high","z":["caf\u00e9" ,1]}"#),
    )
    .await;
    home.chat_id(&["--resume", &id, "--effort", "low", "-q", "again"], &[])
        .await;
    taken(&sim);
    assert_eq!(
        home.raw_config(&id).await,
        r#"{"a":1.0e5,"hermes_thinking":"low","z":["caf\u00e9" ,1]}"#
    );

    // A damaged member: resuming fails naming it, and nothing is sent or overwritten.
    let damaged = r#"{"a":1,"hermes_thinking":"loud"}"#;
    home.sql(&id, Some(damaged)).await;
    for flags in [&[][..], &["--no-thinking"][..]] {
        let mut args = vec!["chat", "--resume", id.as_str(), "-q", "x"];
        args.extend_from_slice(flags);
        let out = home.run(&args, &[]).await;
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("model_config: member `hermes_thinking`")
                && stderr.contains(r#""loud""#),
            "{stderr}"
        );
        assert!(sim.requests().is_empty());
        assert_eq!(home.raw_config(&id).await, damaged);
    }
    // `sessions show` still shows the session, and says what is wrong.
    let text = home.show_text(&id).await;
    assert!(
        text.contains("  thinking: unreadable: model_config: member `hermes_thinking`"),
        "{text}"
    );
    let shown = home.show_json(&id).await;
    assert_eq!(shown["session"]["thinking"], Value::Null);
    assert!(
        shown["thinking_error"]
            .as_str()
            .unwrap()
            .contains("hermes_thinking"),
        "{shown}"
    );
}
