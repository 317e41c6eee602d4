//! Chaos: random SIGKILL / SIGINT / SIGTERM during tool-using chats, each followed by an
//! integrity check of the database and a strict resume of every session (the simulator
//! enforces the tool-call pairing rule); many processes on one home; simultaneous first opens.
//!
//! Sizes come from the environment so `cargo xtask chaos` can run it big:
//! `HERMES_CHAOS_KILLS` (default 12), `HERMES_CHAOS_PROCESSES` (default 4),
//! `HERMES_CHAOS_TURNS` (default 5), `HERMES_CHAOS_OPENS` (default 20). Each run prints its
//! figures.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The size `var` names, else `default`.
pub(crate) fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `hermes ARGS` in `home` with nothing on stdin.
fn hermes(home: &Path, args: &[&str]) -> Command {
    let mut cmd = crate::support::command(home, args, &[]);
    cmd.stdin(Stdio::null());
    cmd
}

/// Prints what a scenario did (`chaos: WHAT, N.N s`) and how long it took since `started`.
fn took(started: Instant, what: std::fmt::Arguments<'_>) {
    println!("chaos: {what}, {:.1} s", started.elapsed().as_secs_f64());
}

fn run(home: &Path, args: &[&str]) -> Output {
    hermes(home, args).output().unwrap()
}

fn chat_args<'a>(base: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    crate::support::chat_cmd(&crate::support::deepseek_at(
        base,
        &[&["--no-stream"][..], extra].concat(),
    ))
}

/// A small deterministic generator (xorshift), seeded per run and printed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A number below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn sessions(home: &Path) -> Vec<Value> {
    let out = run(home, &["sessions", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn integrity(db: &Path) -> String {
    use sqlx::Connection as _;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(db);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let row: (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    row.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_during_tool_loops_leave_every_session_resumable() {
    let kills = size("HERMES_CHAOS_KILLS", 12);
    let (_sim, home, base) = crate::support::sim_home("deepseek-v4").await;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    let started = Instant::now();
    let (mut resumes, mut killed_alive) = (0, 0);
    // The longest random delay before the signal adapts to how long a run takes here, so that
    // about half the signals land while hermes is still working.
    let mut max_delay: u64 = 120;
    for i in 0..kills {
        // Half the runs start a session, half continue one.
        let existing = sessions(home.path());
        let resume = (!existing.is_empty() && rng.below(2) == 0).then(|| {
            existing[rng.below(existing.len() as u64) as usize]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        });
        let mut extra = vec!["-q", "[tools=3] what time is it?"];
        if let Some(id) = &resume {
            extra.extend_from_slice(&["--resume", id]);
        }
        let args = chat_args(&base, &extra);
        let mut child = hermes(home.path(), &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(rng.below(max_delay))).await;
        let signal = ["-KILL", "-INT", "-TERM"][rng.below(3) as usize];
        if child.try_wait().unwrap().is_some() {
            max_delay = (max_delay / 2).max(4);
        } else {
            max_delay = (max_delay + max_delay / 10 + 1).min(2_000);
            killed_alive += 1;
            let _ = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status();
        }
        let _ = child.wait();

        let db = home.path().join("state.db");
        if db.exists() {
            assert_eq!(
                integrity(&db).await,
                "ok",
                "run {i} (seed {seed}): integrity"
            );
        }
        // A strict resume of the session the run touched (the simulator refuses an unpaired
        // tool call); every session is resumed again at the end.
        let touched = resume.or_else(|| {
            let after = sessions(home.path());
            (after.len() > existing.len()).then(|| after[0]["id"].as_str().unwrap().to_owned())
        });
        if let Some(id) = touched {
            let out = run(
                home.path(),
                &chat_args(&base, &["--resume", &id, "-q", "still there?"]),
            );
            resumes += 1;
            assert!(
                out.status.success(),
                "run {i} (seed {seed}, {signal}): session {id} does not resume: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    for s in sessions(home.path()) {
        let id = s["id"].as_str().unwrap();
        let out = run(
            home.path(),
            &chat_args(&base, &["--resume", id, "-q", "and at the end?"]),
        );
        resumes += 1;
        assert!(
            out.status.success(),
            "(seed {seed}) session {id} does not resume at the end: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    took(
        started,
        format_args!(
            "{kills} signalled runs ({killed_alive} still running when signalled), {resumes} strict resumes, seed {seed}"
        ),
    );
}

#[test]
fn many_processes_on_one_home_complete_every_turn() {
    let processes = size("HERMES_CHAOS_PROCESSES", 4);
    let turns = size("HERMES_CHAOS_TURNS", 5);
    let home = crate::support::home();
    let started = Instant::now();
    let workers: Vec<_> = (0..processes)
        .map(|p| {
            let home = home.path().to_owned();
            std::thread::spawn(move || {
                let mut id: Option<String> = None;
                for t in 0..turns {
                    let text = format!("[tools=1] process {p} turn {t}");
                    let mut args = vec!["chat", "--provider", "sim", "--json", "-q", &text];
                    let resume;
                    if let Some(existing) = &id {
                        resume = existing.clone();
                        args.extend_from_slice(&["--resume", &resume]);
                    }
                    let out = run(&home, &args);
                    assert!(
                        out.status.success(),
                        "process {p} turn {t}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
                    id = Some(reply["session_id"].as_str().unwrap().to_owned());
                }
                id.unwrap()
            })
        })
        .collect();
    let ids: Vec<String> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for id in &ids {
        let out = run(home.path(), &["sessions", "export", id]);
        let session: Value = serde_json::from_slice(&out.stdout).unwrap();
        let users = session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .count();
        assert_eq!(users, turns, "session {id} holds every turn");
    }
    took(
        started,
        format_args!("{processes} processes x {turns} tool-using turns on one home, all complete"),
    );
}

#[test]
fn processes_racing_on_one_session_never_interleave() {
    let processes = size("HERMES_CHAOS_PROCESSES", 4);
    let home = crate::support::home();
    let first = run(
        home.path(),
        &["chat", "--provider", "sim", "--json", "-q", "start"],
    );
    let id = crate::support::chat_session_id(&first);
    // No waiting for a busy session: a racer that finds it taken fails at once.
    std::fs::write(
        home.path().join("config.toml"),
        "[limits]\nlease_wait = 0\n",
    )
    .unwrap();
    let racers: Vec<_> = (0..processes)
        .map(|p| {
            let (home, id) = (home.path().to_owned(), id.clone());
            std::thread::spawn(move || {
                let text = format!("[tools=2] racer {p}");
                run(
                    &home,
                    &["chat", "--provider", "sim", "--resume", &id, "-q", &text],
                )
            })
        })
        .collect();
    let outs: Vec<Output> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won = outs.iter().filter(|o| o.status.success()).count();
    for out in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is in use by another process"), "{err}");
    }
    let out = run(home.path(), &["sessions", "export", &id]);
    let session: Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages = session["messages"].as_array().unwrap();
    // Turn by turn: a user message, then only its own steps (assistant with its tool results),
    // ending with an answer. Rows of two turns never mix.
    let mut turns = 0;
    let mut i = 0;
    while i < messages.len() {
        assert_eq!(messages[i]["role"], "user", "{session}");
        let text = messages[i]["content"].as_str().unwrap().to_owned();
        turns += 1;
        i += 1;
        loop {
            assert_eq!(messages[i]["role"], "assistant", "turn {text}: {session}");
            let calls = messages[i]["tool_calls"].as_array().map_or(0, Vec::len);
            i += 1;
            for _ in 0..calls {
                assert_eq!(messages[i]["role"], "tool", "turn {text}: {session}");
                i += 1;
            }
            if calls == 0 {
                break;
            }
        }
    }
    assert_eq!(
        turns,
        won + 1,
        "every winner's turn, whole; nothing of the losers"
    );
    println!("chaos: {processes} racers on one session, {won} won, none interleaved");
}

#[test]
fn simultaneous_first_opens_of_a_fresh_home_all_succeed() {
    let opens = size("HERMES_CHAOS_OPENS", 20);
    let home = crate::support::home();
    let fresh = home.path().join("fresh");
    let children: Vec<_> = (0..opens)
        .map(|_| {
            hermes(&fresh, &["sessions", "list"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let failed: Vec<String> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .filter(|o| !o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {opens} failed: {failed:?}",
        failed.len()
    );
    println!("chaos: {opens} simultaneous first opens, all succeeded");
}
