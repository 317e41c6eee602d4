//! The interactive chat on a real terminal: `script` gives hermes a pseudo-terminal, the test
//! types into it, and `/model` switches the running session to another model mid-conversation.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn model_switches_mid_session_on_a_terminal() {
    let home = crate::support::home();
    let hermes = crate::support::bin().display();
    // util-linux's `script` runs the command on a new pseudo-terminal and relays our input, in
    // the same clean environment as every run.
    let mut child = hermes_test_support::home::command(
        Path::new("script"),
        home.path(),
        &[
            "-qfec",
            &format!("{hermes} chat --provider sim"),
            "/dev/null",
        ],
        &[("TERM", "dumb")],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("util-linux `script` runs the REPL on a pseudo-terminal");
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        "hello there",
        "/model sim/deepseek-v3.2",
        "and after the switch",
        "/session",
        "/exit",
    ] {
        stdin.write_all(format!("{line}\r").as_bytes()).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(400));
    }
    // A hang guard, not a timing assertion: the REPL must leave on /exit.
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the REPL did not exit"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("You said: hello there"), "{text}");
    assert!(
        text.contains("now on deepseek · deepseek-v3.2 (route deepseek)"),
        "{text}"
    );
    assert!(text.contains("You said: and after the switch"), "{text}");
    assert!(
        text.contains("provider deepseek · model deepseek-v3.2 · route deepseek"),
        "/session shows the switched model: {text}"
    );

    // The one stored session continued on the new model.
    let list = home.run_sync(&["sessions", "list", "--json"], &[]);
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions}");
    assert_eq!(sessions[0]["model"], "deepseek-v3.2");
    assert_eq!(sessions[0]["message_count"], 4);
}
