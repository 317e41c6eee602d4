//! The REPL driven through its library: scripted lines, captured output, the simulator
//! in-process, and a real `state.db`.

use std::sync::{Arc, Mutex};

use super::{Input, Lines, Out, Style, repl_loop};
use hermes_engine::{ChatSession, Engine};

use crate::cli::{ChatArgs, TargetArgs, ThinkingArgs};

struct Script(Vec<&'static str>);

impl Lines for Script {
    fn read(&mut self, _prompt: &str) -> Input {
        if self.0.is_empty() {
            Input::Eof
        } else {
            Input::Line(self.0.remove(0).to_owned())
        }
    }
}

fn args() -> ChatArgs {
    ChatArgs {
        query: None,
        json: false,
        target: TargetArgs {
            provider: Some("sim".into()),
            ..TargetArgs::default()
        },
        thinking: ThinkingArgs::default(),
        resume: None,
        no_stream: false,
        hide_reasoning: false,
        workspace: None,
        allow_insecure_http: false,
    }
}

/// A temporary home and the runtime a REPL runs on.
struct Harness {
    home: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            home: tempfile::tempdir().unwrap(),
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    /// A chat session opened in the home with `args`.
    fn open(&self, args: &ChatArgs) -> ChatSession {
        self.runtime
            .block_on(crate::chat::open(
                &Engine::builtin(),
                args,
                self.home.path(),
            ))
            .unwrap()
    }

    /// Runs `script` through the REPL (reasoning hidden when `hide`); returns what it printed.
    fn run(&self, chat: &mut ChatSession, script: &mut Script, hide: bool) -> String {
        let buffer = Arc::new(Mutex::new(Vec::<u8>::new()));
        let out: Out = buffer.clone();
        let style = Style {
            color: false,
            hide_reasoning: hide,
            spinner: false,
        };
        repl_loop(chat, script, &out, style, &self.runtime);
        String::from_utf8(buffer.lock().unwrap().clone()).unwrap()
    }

    /// Runs `lines` through the REPL; returns what it printed.
    fn script(&self, chat: &mut ChatSession, lines: Vec<&'static str>) -> String {
        self.run(chat, &mut Script(lines), false)
    }
}

#[test]
fn two_turns_a_branch_and_exit_leave_both_sessions_in_state_db() {
    let harness = Harness::new();
    let runtime = &harness.runtime;
    let mut chat = harness.open(&args());
    let mut script = Script(vec![
        "[tools=1] what time is it?",
        "thanks",
        "/branch",
        "/session",
        "/verdicts",
        "/compact",
        "/nope",
        "/model",
        "/model custom/qwen3-32b",
        "/model sim/deepseek-v3.2",
        "after the switch",
        "/exit",
        "never read",
    ]);
    let text = harness.run(&mut chat, &mut script, false);
    assert_eq!(script.0, ["never read"], "/exit stops reading");

    // (what the REPL printed, what it answers)
    for (said, what) in [
        ("· tool now", "the tool step"),
        ("You said: thanks", "the second turn"),
        ("branched ", "/branch"),
        ("route deepseek (must-echo deepseek)", "/session"),
        ("no verdicts", "/verdicts"),
        ("unknown command /nope", "/nope"),
        ("usage: /model PROVIDER/MODEL", "/model"),
        (
            "cannot switch: no base URL for provider `custom`",
            "/model custom/qwen3-32b",
        ),
        (
            "now on deepseek · deepseek-v3.2 (route deepseek)",
            "/model sim/deepseek-v3.2",
        ),
        ("You said: after the switch", "the turn after the switch"),
        ("nothing to compact", "/compact: six messages fit easily"),
    ] {
        assert!(text.contains(said), "{what}: {text}");
    }
    assert!(
        text.contains("context compacted: ") || text.contains("nothing to compact"),
        "{text}"
    );

    let store = chat.store().clone();
    let sessions = runtime.block_on(store.list()).unwrap();
    assert_eq!(sessions.len(), 2);
    let branch = sessions.iter().find(|s| s.parent_id.is_some()).unwrap();
    let original = sessions.iter().find(|s| s.parent_id.is_none()).unwrap();
    assert_eq!(branch.parent_id.as_deref(), Some(original.id.as_str()));
    let (a, b) = runtime.block_on(async {
        (
            store.messages(&original.id).await.unwrap(),
            store.messages(&branch.id).await.unwrap(),
        )
    });
    let roles: Vec<&str> = a.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles.join(" "),
        "user assistant tool assistant user assistant"
    );
    let after = runtime.block_on(store.messages(&branch.id)).unwrap();
    assert_eq!(after.len(), 8, "the switched model continued the branch");
    assert_eq!(
        after[7].origin.as_ref().map(|o| o.model.as_str()),
        Some("deepseek-v3.2")
    );
    let meta = runtime.block_on(store.session(&branch.id)).unwrap();
    assert_eq!(meta.model.as_deref(), Some("deepseek-v3.2"));
    assert_eq!(
        a[..],
        b[..a.len()],
        "the branch holds every message with every carrier"
    );
    assert!(
        a.iter()
            .filter(|m| m.role == hermes_core::Role::Assistant)
            .all(|m| m.reasoning_content.is_some())
    );
}

#[test]
fn hidden_reasoning_is_not_printed() {
    let harness = Harness::new();
    let mut chat = harness.open(&args());
    let run =
        |chat: &mut ChatSession, hide: bool| harness.run(chat, &mut Script(vec!["hello"]), hide);
    let shown = run(&mut chat, false);
    let hidden = run(&mut chat, true);
    let thinking = chat.conversation.messages[1]
        .reasoning_content
        .as_ref()
        .unwrap()
        .text()
        .into_owned();
    assert!(shown.contains(&thinking), "{shown}");
    assert!(!hidden.contains(&thinking), "{hidden}");
}

#[test]
fn the_thinking_request_is_stored_shown_and_kept_across_a_model_switch() {
    use hermes_core::{Effort, ThinkingRequest};
    use hermes_engine::store::StoredThinking;

    let harness = Harness::new();
    let runtime = &harness.runtime;
    let mut high = args();
    high.thinking.effort = Some(crate::cli::EffortArg(Effort::High));
    let mut chat = harness.open(&high);
    let text = harness.script(
        &mut chat,
        vec![
            "hello",
            "/session",
            "/model sim/deepseek-v3.2",
            "/session",
            "after",
        ],
    );
    let line = "  thinking: effort high (stored with the session)\n";
    assert_eq!(text.matches(line).count(), 2, "{text}");
    assert!(text.contains("now on deepseek · deepseek-v3.2"), "{text}");
    assert_eq!(chat.thinking(), ThinkingRequest::Effort(Effort::High));
    let id = chat.id().unwrap().to_owned();
    let store = chat.store().clone();
    assert_eq!(
        runtime.block_on(store.thinking(&id)).unwrap(),
        Some(StoredThinking::Effort(Effort::High))
    );
    runtime.block_on(chat.close()).unwrap();

    // A session that stores nothing, resumed under config.toml's effort.
    let mut plain = harness.open(&args());
    let text = harness.script(&mut plain, vec!["hello", "/session"]);
    assert!(
        text.contains("  thinking: no preference (none stored)\n"),
        "{text}"
    );
    let plain_id = plain.id().unwrap().to_owned();
    runtime.block_on(plain.close()).unwrap();
    std::fs::write(
        harness.home.path().join("config.toml"),
        "effort = \"low\"\n",
    )
    .unwrap();
    let mut resume = args();
    resume.resume = Some(plain_id.clone());
    let mut resumed = harness.open(&resume);
    assert_eq!(resumed.thinking(), ThinkingRequest::Effort(Effort::Low));
    let text = harness.script(&mut resumed, vec!["/session"]);
    assert!(
        text.contains("  thinking: effort low (config.toml's effort; none stored)\n"),
        "{text}"
    );
    runtime.block_on(resumed.close()).unwrap();
    // The stored session's request wins over config's.
    resume.resume = Some(id);
    let resumed = harness.open(&resume);
    assert_eq!(resumed.thinking(), ThinkingRequest::Effort(Effort::High));
    runtime.block_on(resumed.close()).unwrap();
}
