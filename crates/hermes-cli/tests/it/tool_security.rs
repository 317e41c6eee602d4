//! The model-facing file tools through the real binary, against a hostile fake provider that
//! answers with tool calls for paths it must not see: outside the workspace, `..`, a link out,
//! `$HERMES_HOME` (inside the workspace too), `/proc/self/environ`, `.env`, a FIFO, `/dev/zero`,
//! and 200 calls in one reply. Nothing of theirs, and never the planted key, may reach the
//! provider, `state.db` or the terminal; every call gets exactly one result; the turn ends.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-planted-tool-9d2b7c41e0a35f68";
/// The hang guard: a run still going after this is killed and fails the test.
const GUARD: Duration = Duration::from_secs(60);

/// A unique marker planted in a file the model must never read.
fn marker(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("MARK-{what}-{:x}-{nanos:x}", std::process::id())
}

/// Answers a request without tool results with `calls`, and one with them with plain text.
struct Hostile {
    calls: Vec<(String, String)>,
}

impl Hostile {
    fn new(calls: &[(&str, &str)]) -> Self {
        Hostile {
            calls: calls
                .iter()
                .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
                .collect(),
        }
    }
}

impl Respond for Hostile {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let answered = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool");
        let message = if answered {
            json!({"role": "assistant", "content": "all done"})
        } else {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .enumerate()
                .map(|(i, (name, path))| {
                    json!({"id": format!("call_{i}"), "type": "function",
                           "function": {"name": name, "arguments": json!({"path": path}).to_string()}})
                })
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "r", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": if answered { "stop" } else { "tool_calls" }}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }))
    }
}

struct Run {
    stdout: String,
    stderr: String,
    bodies: Vec<Vec<u8>>,
}

impl Run {
    /// The tool results of the second request, by call id (every id must appear once).
    fn results(&self) -> BTreeMap<String, String> {
        assert_eq!(self.bodies.len(), 2, "one tool round, then the answer");
        let body: Value = serde_json::from_slice(&self.bodies[1]).unwrap();
        let mut out = BTreeMap::new();
        for m in body["messages"].as_array().unwrap() {
            if m["role"] == "tool" {
                let id = m["tool_call_id"].as_str().unwrap().to_owned();
                let text = m["content"].as_str().unwrap().to_owned();
                assert!(
                    out.insert(id.clone(), text).is_none(),
                    "{id} answered twice"
                );
            }
        }
        out
    }
}

/// Runs `hermes chat` against `server` in `cwd`, killed (and failed) after [`GUARD`].
async fn chat(server: &MockServer, home: &Path, cwd: &Path, extra: &[&str]) -> Run {
    let base = format!("{}/v1", server.uri());
    let mut args = crate::support::custom_chat(&base, &["--no-stream", "-q", "look around"]);
    args.extend_from_slice(extra);
    let out = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path) = (out.path().join("stdout"), out.path().join("stderr"));
    // Deliberately none of this machine's environment but PATH.
    let mut cmd = crate::support::bare_command(
        home,
        &args,
        &[
            ("HOME", home.to_str().unwrap()),
            ("HERMES_API_KEY", KEY),
            ("HERMES_LOG", "debug"),
        ],
    );
    cmd.current_dir(cwd)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let status = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > GUARD {
                let _ = child.kill();
                let _ = child.wait();
                panic!("hermes hung: killed after {GUARD:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap();
    let stdout = std::fs::read_to_string(&stdout_path).unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    let bodies = server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.body)
        .collect();
    Run {
        stdout,
        stderr,
        bodies,
    }
}

async fn hostile_server(calls: &[(&str, &str)]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Hostile::new(calls))
        .mount(&server)
        .await;
    server
}

/// None of `needles` in any request body, the output, or any byte hermes wrote under `home`.
fn assert_nowhere(run: &Run, home: &Path, needles: &[&str]) {
    let db = home.join("state.db");
    assert!(db.is_file(), "the session was stored");
    let mut places: Vec<(String, Vec<u8>)> = vec![
        ("stdout".into(), run.stdout.clone().into_bytes()),
        ("stderr".into(), run.stderr.clone().into_bytes()),
    ];
    for (i, body) in run.bodies.iter().enumerate() {
        places.push((format!("request {i}"), body.clone()));
    }
    // config.toml is where the config marker was planted; everything else hermes wrote.
    for file in crate::support::files_under(home)
        .into_iter()
        .filter(|f| !f.ends_with("config.toml"))
    {
        places.push((file.display().to_string(), std::fs::read(&file).unwrap()));
    }
    for (place, bytes) in &places {
        for needle in needles {
            let found = bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
            assert!(!found, "{needle} reached {place}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_paths_are_refused_and_nothing_leaks() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    let outside_path = std::fs::canonicalize(outside.path()).unwrap();
    let (out_mark, env_mark, config_mark) = (marker("outside"), marker("env"), marker("config"));
    std::fs::write(outside_path.join("secret.txt"), &out_mark).unwrap();
    std::fs::write(ws_path.join(".env"), format!("TOKEN={env_mark}\n")).unwrap();
    std::fs::write(ws_path.join("notes.txt"), "plain notes\n").unwrap();
    std::fs::write(ws_path.join("key.txt"), format!("the key is {KEY} ok\n")).unwrap();
    std::os::unix::fs::symlink(outside_path.join("secret.txt"), ws_path.join("link.txt")).unwrap();
    let made = Command::new("mkfifo")
        .arg(ws_path.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    // The home is inside the workspace, and holds a config with a marker.
    let home = ws_path.join(".hermes");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("config.toml"), format!("# {config_mark}\n")).unwrap();

    let abs_outside = outside_path.join("secret.txt").display().to_string();
    let up = format!(
        "../{}/secret.txt",
        outside_path.file_name().unwrap().to_string_lossy()
    );
    let abs_db = home.join("state.db").display().to_string();
    let calls = [
        ("read_file", abs_outside.as_str()),
        ("read_file", up.as_str()),
        ("read_file", "link.txt"),
        ("read_file", ".hermes/state.db"),
        ("read_file", abs_db.as_str()),
        ("read_file", ".hermes/config.toml"),
        ("read_file", "/proc/self/environ"),
        ("read_file", ".env"),
        ("read_file", "pipe"),
        ("list_dir", "pipe"),
        ("read_file", "/dev/zero"),
        ("read_file", "/dev/stdin"),
        ("list_dir", ".."),
        ("read_file", "notes.txt"),
        ("read_file", "key.txt"),
        ("list_dir", "."),
    ];
    let server = hostile_server(&calls).await;
    // No --workspace: the working directory is the workspace.
    let run = chat(&server, &home, &ws_path, &[]).await;
    assert!(run.stdout.contains("all done"), "{}", run.stdout);

    let results = run.results();
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{i}")).collect();
    assert_eq!(
        results.keys().cloned().collect::<Vec<_>>().len(),
        calls.len()
    );
    let result = |i: usize| results[&ids[i]].as_str();
    let root = ws_path.display();
    assert_eq!(
        result(0),
        format!("refused: {abs_outside} is outside the workspace {root}")
    );
    for (i, (_, path)) in calls.iter().enumerate().take(13) {
        let text = result(i);
        assert!(text.starts_with("refused: "), "{path}: {text}");
        assert!(!text.contains('\n'), "one line: {text}");
    }
    assert!(result(1).contains("leads outside the workspace"));
    assert!(result(2).contains("leads outside the workspace"));
    for i in 3..6 {
        assert!(
            result(i).contains("inside the hermes home"),
            "{}",
            result(i)
        );
    }
    assert!(result(6).contains("outside the workspace"));
    assert!(result(7).contains("may hold secrets"));
    assert!(result(8).contains("is a FIFO"));
    assert!(result(9).contains("is a FIFO"));
    assert_eq!(result(13), "plain notes\n");
    assert_eq!(result(14), "the key is [redacted] ok\n");
    let listing = result(15);
    for name in [".env", ".hermes/", "key.txt", "notes.txt", "pipe"] {
        assert!(listing.lines().any(|l| l == name), "{name} in {listing}");
    }

    // The scan below can see tool results: the redacted one is stored.
    let stored = crate::support::files_under(&home).iter().any(|f| {
        let bytes = std::fs::read(f).unwrap();
        let needle = b"the key is [redacted] ok";
        bytes.windows(needle.len()).any(|w| w == needle)
    });
    assert!(stored, "the redacted result is in state.db or its WAL");
    assert_nowhere(&run, &home, &[KEY, &out_mark, &env_mark, &config_mark]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_calls_in_one_reply_each_get_one_result_and_stay_small() {
    let ws = tempfile::tempdir().unwrap();
    let home = crate::support::home();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "plain notes\n").unwrap();
    let calls: Vec<(&str, &str)> = (0..200).map(|_| ("read_file", "/dev/zero")).collect();
    let server = hostile_server(&calls).await;
    let workspace = ws.path().display().to_string();
    let run = chat(
        &server,
        home.path(),
        elsewhere.path(),
        &["--workspace", &workspace],
    )
    .await;
    let results = run.results();
    assert_eq!(results.len(), 200, "every call is paired with one result");
    let mut refused_by_cap = 0;
    for i in 0..200 {
        let text = &results[&format!("call_{i}")];
        if i < 16 {
            assert!(
                text.starts_with("refused: /dev/zero is outside the workspace"),
                "{text}"
            );
        } else {
            assert_eq!(text, "refused: more than 16 tool calls in one reply");
            refused_by_cap += 1;
        }
    }
    assert_eq!(refused_by_cap, 184);
    let stored: u64 = crate::support::files_under(home.path())
        .iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("state.db")
        })
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        stored < 4 * 1024 * 1024,
        "state.db and its WAL hold {stored} bytes"
    );
    assert!(run.bodies[1].len() < 256 * 1024, "{}", run.bodies[1].len());
    assert_nowhere(&run, home.path(), &[KEY]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_workspace_is_an_error_naming_it() {
    let home = crate::support::home();
    let server = hostile_server(&[]).await;
    let missing = home.path().join("no-such-folder");
    let base = format!("{}/v1", server.uri());
    let out = crate::support::command(
        home.path(),
        &crate::support::custom_chat(
            &base,
            &[
                "--no-stream",
                "-q",
                "hi",
                "--workspace",
                missing.to_str().unwrap(),
            ],
        ),
        &[],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "the workspace {} does not exist",
            missing.display()
        )),
        "{stderr}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}
