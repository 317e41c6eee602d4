//! The everyday CLI through the real binary: the REPL on piped input, config.toml, logs,
//! verdicts, completions, and pinned output.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn hermes(home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let cmd = crate::support::command(home, args, &[]);
    hermes_test_support::home::feed(cmd, stdin.unwrap_or_default().as_bytes())
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = hermes(home, args, None);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_repl_runs_two_turns_branches_and_exits() {
    let home = crate::support::home();
    let out = hermes(
        home.path(),
        &["chat", "--provider", "sim"],
        Some("[tools=2] time?\nthanks\n/branch\n/exit\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("· tool now"), "{text}");
    assert!(text.contains("You said: thanks"), "{text}");
    assert!(
        !text.contains("\u{1b}["),
        "no colour when NO_COLOR is set and stdout is a pipe"
    );
    let sessions: Vec<Value> =
        serde_json::from_str(&ok(home.path(), &["sessions", "list", "--json"])).unwrap();
    assert_eq!(sessions.len(), 2);
    let branch = sessions.iter().find(|s| !s["parent_id"].is_null()).unwrap();
    let show: Value = serde_json::from_str(&ok(
        home.path(),
        &["sessions", "show", branch["id"].as_str().unwrap(), "--json"],
    ))
    .unwrap();
    let carriers: Vec<&Value> = crate::support::assistants(&show)
        .map(|m| &m["carriers"])
        .collect();
    assert_eq!(carriers.len(), 4);
    assert!(carriers.iter().all(|c| **c == json!(["reasoning_content"])));
}

#[test]
fn config_sets_defaults_and_a_bad_file_names_line_and_key() {
    let home = crate::support::home();
    std::fs::write(
        home.path().join("config.toml"),
        "provider = \"sim\"\neffort = \"max\"\n\n[providers.sim]\nmodel = \"deepseek-v4-flash\"\n",
    )
    .unwrap();
    let reply: Value =
        serde_json::from_str(&ok(home.path(), &["chat", "-q", "hi", "--json"])).unwrap();
    assert_eq!(reply["route"], "deepseek");
    let show = ok(
        home.path(),
        &[
            "sessions",
            "show",
            reply["session_id"].as_str().unwrap(),
            "--json",
        ],
    );
    assert!(show.contains("deepseek-v4-flash"), "{show}");
    assert_eq!(
        ok(home.path(), &["config", "path"]).trim(),
        home.path().join("config.toml").to_str().unwrap()
    );
    let shown = ok(home.path(), &["config", "show"]);
    assert!(shown.contains("effort = \"max\""), "{shown}");
    assert!(shown.contains("[store]\nbusy_timeout = 5\n"), "{shown}");

    // The store's pool settings reach the store: a chat through a pool of one connection.
    std::fs::write(
        home.path().join("config.toml"),
        "provider = \"sim\"\n[store]\nmax_connections = 1\nbusy_timeout = 2\n",
    )
    .unwrap();
    ok(home.path(), &["chat", "-q", "[tools=2] hi"]);

    std::fs::write(
        home.path().join("config.toml"),
        "provider = \"sim\"\n[providers.sim]\nbase_ur = \"x\"\n",
    )
    .unwrap();
    let out = hermes(home.path(), &["chat", "-q", "hi"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml: line 3: unknown field `base_ur`"),
        "{err}"
    );
}

#[test]
fn logs_show_which_carriers_each_request_carried() {
    let home = crate::support::home();
    ok(
        home.path(),
        &["chat", "--provider", "sim", "-q", "[tools=1] hi"],
    );
    let logs = ok(home.path(), &["logs"]);
    let requests = crate::support::lines_with(&logs, "sending request");
    assert_eq!(requests.len(), 2, "{logs}");
    assert!(
        requests[1].contains(r#"carriers=["reasoning_content"]"#),
        "{logs}"
    );
    assert!(
        logs.lines()
            .any(|l| l.contains("DEBUG") && l.contains("reasoning_content sent (stored)"))
    );
    let warn = ok(home.path(), &["logs", "--level", "warn"]);
    assert!(!warn.contains("INFO") && !warn.contains("DEBUG"), "{warn}");
}

#[test]
fn logs_follow_prints_new_lines_as_they_are_written() {
    let home = crate::support::home();
    ok(home.path(), &["chat", "--provider", "sim", "-q", "first"]);
    let mut follow =
        crate::support::command(home.path(), &["logs", "--follow", "--level", "info"], &[])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    // The existing request first, then the new one.
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("sending request"), "{first}");
    ok(home.path(), &["chat", "--provider", "sim", "-q", "second"]);
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line.contains("sending request") && line.contains("messages=1");
        seen.push(line);
        if done {
            break;
        }
    }
    follow.kill().unwrap();
    follow.wait().unwrap();
    assert!(
        seen.iter().any(|l| l.contains("sending request")),
        "{seen:?}"
    );
}

fn import_with_verdicts(home: &Path) -> String {
    let file = home.join("v.json");
    std::fs::write(
        &file,
        json!({"format": "hermes.session.v1", "provider": "openrouter", "model": "x/m",
               "base_url": "https://openrouter.ai/api/v1", "title": "verdicts",
               "model_config": {"reasoning_rejected_carriers": [
                   ["openrouter", "openrouter.ai", "x/m", ["reasoning_details"]],
                   ["groq", "api.groq.com", "qwen", ["reasoning_content", "reasoning"]]],
                   "hermes_wire_verdicts": [
                   ["anthropic", "anthropic", "api.anthropic.com", "claude-x", ["thinking"]]]},
               "messages": [{"role": "user", "content": "q"},
                            {"role": "assistant", "content": "a", "reasoning": "r",
                             "reasoning_details": [{"type": "reasoning.text", "text": "t", "signature": "S"},
                                                   {"type": "hermes.native_assistant", "reasoning_opaque": "O"}],
                             "origin": {"provider": "openrouter", "host": "openrouter.ai", "model": "x/m"}}]})
        .to_string(),
    )
    .unwrap();
    ok(home, &["sessions", "import", file.to_str().unwrap()])
        .trim()
        .to_owned()
}

#[test]
fn verdicts_list_and_clear() {
    let home = crate::support::home();
    let id = import_with_verdicts(home.path());
    let list: Vec<Value> =
        serde_json::from_str(&ok(home.path(), &["verdicts", "list", "--json"])).unwrap();
    // Every wire's verdicts: chat completions' and the native wires'.
    assert_eq!(list.len(), 3);
    assert_eq!(list[0]["session_id"], id.as_str());
    assert_eq!(list[0]["wire"], "chat");
    assert_eq!(list[2]["wire"], "anthropic");
    assert_eq!(list[2]["carriers"], json!(["thinking"]));
    let text = ok(home.path(), &["verdicts", "list"]).replace(&id, "SESSION");
    insta::assert_snapshot!("verdicts_list", text);
    assert_eq!(
        ok(home.path(), &["verdicts", "clear", "--provider", "groq"]).trim(),
        "cleared 1 verdict"
    );
    let list: Vec<Value> =
        serde_json::from_str(&ok(home.path(), &["verdicts", "list", "--json"])).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["provider"], "openrouter");
    assert_eq!(
        ok(home.path(), &["verdicts", "clear", "--session", &id]).trim(),
        "cleared 2 verdicts"
    );
    let export: Value =
        serde_json::from_str(&ok(home.path(), &["sessions", "export", &id])).unwrap();
    assert!(
        export["model_config"]
            .get("reasoning_rejected_carriers")
            .is_none()
    );
}

#[test]
fn sessions_show_is_pinned() {
    let home = crate::support::home();
    let id = import_with_verdicts(home.path());
    let text = ok(home.path(), &["sessions", "show", &id]).replace(&id, "SESSION");
    insta::assert_snapshot!("sessions_show", text);
}

#[test]
fn top_level_help_is_pinned_and_completions_generate() {
    let home = crate::support::home();
    insta::assert_snapshot!("help", ok(home.path(), &["--help"]));
    let bash = ok(home.path(), &["completions", "bash"]);
    assert!(
        bash.contains("_hermes()") && bash.contains("sessions"),
        "{bash}"
    );
}

#[test]
fn ctrl_c_during_a_reply_cancels_it_and_stores_nothing() {
    // A provider that accepts the connection and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
    let home = crate::support::home();
    let mut child =
        crate::support::command(home.path(), &crate::support::custom_chat(&base, &[]), &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    let _connection = held.join().unwrap().unwrap();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"/session\n/exit\n")
        .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[cancelled; nothing of this turn was stored]"),
        "{text}"
    );
    let sessions: Vec<Value> =
        serde_json::from_str(&ok(home.path(), &["sessions", "list", "--json"])).unwrap();
    assert!(
        sessions.is_empty(),
        "the cancelled first turn left nothing behind, not even an empty session: {sessions:?}"
    );
}

#[test]
fn preview_applies_the_config_chat_would_use() {
    let home = crate::support::home();
    let file = home.path().join("h.json");
    std::fs::write(
        &file,
        r#"[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]"#,
    )
    .unwrap();
    let history = ["preview", "--history", file.to_str().unwrap()];
    let args = [&history[..], &["--provider", "acme", "--model", "m"]].concat();
    // A provider of the user's own needs a base URL (without one, `acme` is an unknown
    // provider): config gives it.
    std::fs::write(
        home.path().join("config.toml"),
        "[providers.acme]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let plain: Value = serde_json::from_str(&ok(home.path(), &args)).unwrap();
    assert!(plain["messages"][1].get("reasoning_content").is_none());
    std::fs::write(
        home.path().join("config.toml"),
        "effort = \"low\"\n[providers.acme]\nbase_url = \"http://127.0.0.1:9/v1\"\nreasoning_echo = true\n",
    )
    .unwrap();
    let padded: Value = serde_json::from_str(&ok(home.path(), &args)).unwrap();
    assert_eq!(
        padded["messages"][1]["reasoning_content"], " ",
        "reasoning_echo opts the route into the pad"
    );
    assert_eq!(padded["reasoning_effort"], "low");
    let explain = hermes(home.path(), &[&args[..], &["--explain"]].concat(), None);
    assert!(
        String::from_utf8_lossy(&explain.stderr).starts_with("route local-endpoint"),
        "the config's base URL is used"
    );
}

#[test]
fn branching_beyond_the_end_fails_and_creates_nothing() {
    let home = crate::support::home();
    let id = import_with_verdicts(home.path());
    let out = hermes(
        home.path(),
        &["sessions", "branch", &id, "--at", "999999"],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("999999") && err.contains("2 messages"),
        "{err}"
    );
    let list: Vec<Value> =
        serde_json::from_str(&ok(home.path(), &["sessions", "list", "--json"])).unwrap();
    assert_eq!(list.len(), 1, "nothing was created");
}

#[test]
fn importing_a_number_content_or_a_duplicate_tool_call_key_stores_nothing() {
    let home = crate::support::home();
    let file = home.path().join("bad.json");
    for (messages, path, needle) in [
        (
            r#"[{"role":"user","content":"a"},{"role":"user","content":42}]"#,
            "messages[1].content",
            "expected a string, an array of content parts or null",
        ),
        (
            r#"[{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f","thought_signature":"A","thought_signature":"B"}}]}]"#,
            "messages[0].tool_calls[0].function",
            "duplicate field `thought_signature`",
        ),
    ] {
        std::fs::write(
            &file,
            format!(r#"{{"format":"hermes.session.v1","messages":{messages}}}"#),
        )
        .unwrap();
        let out = hermes(
            home.path(),
            &["sessions", "import", file.to_str().unwrap()],
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(path) && err.contains(needle), "{err}");
        let list: Vec<Value> =
            serde_json::from_str(&ok(home.path(), &["sessions", "list", "--json"])).unwrap();
        assert!(list.is_empty(), "nothing was stored: {list:?}");
    }
}

#[test]
fn logs_survive_an_invalid_utf8_byte_in_a_line() {
    let home = crate::support::home();
    let dir = home.path().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |message: &str| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:00:00Z","level":"INFO","fields":{{"message":"{message}"}},"target":"t"}}"#
        )
        .into_bytes()
    };
    let mut bytes = line("before the bad byte");
    bytes.push(b'\n');
    bytes.extend_from_slice(&line("bad \u{0}"));
    // Replace the NUL with a byte that is never UTF-8.
    let nul = bytes.iter().rposition(|b| *b == 0).unwrap();
    bytes.splice(nul..=nul, [0xff]);
    bytes.push(b'\n');
    bytes.extend_from_slice(&line("after the bad byte"));
    bytes.push(b'\n');
    let file = dir.join("hermes.2026-01-01.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let logs = ok(home.path(), &["logs"]);
    assert!(logs.contains("before the bad byte"), "{logs}");
    assert!(logs.contains("after the bad byte"), "{logs}");
    assert!(logs.contains("bad \u{fffd}"), "decoded lossily: {logs}");

    // And in --follow, for lines appended later.
    let mut follow = crate::support::command(home.path(), &["logs", "--follow"], &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    for _ in 0..3 {
        lines.next().unwrap().unwrap();
    }
    let mut more = b"{\"bad\xff\n".to_vec();
    more.extend_from_slice(&line("followed after the bad byte"));
    more.push(b'\n');
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(&more)
        .unwrap();
    let next = lines.next().map(Result::unwrap);
    follow.kill().unwrap();
    follow.wait().unwrap();
    let next = next.unwrap_or_default();
    assert!(next.contains("followed after the bad byte"), "{next:?}");
}
