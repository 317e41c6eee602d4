//! `hermes serve` through the binary: it serves chat-completions on loopback with `--no-auth`
//! (here with the in-process simulator as `sim/MODEL`), answers `/healthz`, stops cleanly on
//! SIGTERM, and refuses what it cannot serve safely (no auth off loopback, plain HTTP off
//! loopback without TLS or `--behind-tls-proxy`, TLS files it cannot read). Gateway keys:
//! `hermes serve keys create` prints one once, the store keeps only its digest, and the server
//! answers only requests that carry a live one. Also `hermes sim serve --chunk-delay-ms` and
//! `--delay-ms`, the slow upstreams the gateway benchmarks serve from.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::support::{bare_command, own_home};

/// One HTTP/1.1 request on a fresh connection: the status and the body.
pub(crate) fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    http_with(addr, method, path, body, "")
}

/// [`http`] with extra header lines (each ending in `\r\n`).
pub(crate) fn http_with(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    headers: &str,
) -> (u16, String) {
    let (head, body) = exchange(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    (head[9..12].parse().unwrap(), body)
}

/// The status of `POST path` with `body` and bearer `key`, polled until it is 401 or one
/// second (docs/gateway.md's word for a revoked key) has passed since `since`: a replica goes
/// by a key row it read for half a second.
fn refused_within_a_second(
    addr: &str,
    path: &str,
    body: &str,
    key: &str,
    since: std::time::Instant,
) -> u16 {
    let auth = format!("Authorization: Bearer {key}\r\n");
    loop {
        let (status, _) = http_with(addr, "POST", path, body, &auth);
        if status == 401 || since.elapsed() > std::time::Duration::from_secs(1) {
            return status;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Writes `request` (head and body) on a fresh connection to `addr` and reads until the server
/// closes it: the answer's head and body.
fn exchange(addr: &str, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[test]
fn serve_answers_on_loopback_and_stops_on_sigterm() {
    let home = own_home();
    let (mut server, addr) = serving(home.path(), SERVE_SIM_OPEN);
    assert_eq!(http(&addr, "GET", "/healthz", ""), (200, "ok".to_owned()));
    assert_eq!(http(&addr, "GET", "/readyz", "").0, 200);
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/chat/completions",
        r#"{"model":"sim/deepseek-v4-pro","messages":[{"role":"user","content":"hello"}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    // Chunked or not, the JSON object is the one line starting with `{`.
    let json = body
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{body}"));
    let reply: Value = serde_json::from_str(json).unwrap();
    assert!(reply["hermes_session"].is_string(), "{reply}");
    assert!(
        reply["choices"][0]["message"]["reasoning_content"].is_string(),
        "{reply}"
    );

    let rest = server.terminate();
    assert!(rest.contains("shutting down"), "{rest}");
    // The turn is in the log files at info, and nothing at debug: a gateway logs at info unless
    // HERMES_FILE_LOG says otherwise (every turn at debug cost a sixth of its instructions,
    // issue 50).
    let mut levels = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(home.path().join("logs")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            levels.insert(line["level"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert!(levels.contains("INFO"), "{levels:?}");
    assert!(
        !levels.contains("DEBUG") && !levels.contains("TRACE"),
        "{levels:?}"
    );
}

/// Every 4xx and 5xx the gateway answers is one log line (request id, tenant, door, model,
/// status, reason; no body, no key), unknown routes and methods answer in the door's JSON error
/// shape, and `--help` names every door.
#[test]
fn refusals_are_logged_once_each_and_unknown_routes_answer_in_the_doors_shape() {
    let home = own_home();
    let help = stdout_of(home.path(), &["serve", "--help"]);
    for door in ["/v1/chat/completions", "/v1/messages", "/v1/models"] {
        assert!(help.contains(door), "--help names {door}: {help}");
    }
    let (mut server, addr) = serving(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--no-auth"],
    );
    let (status, body) = http(&addr, "GET", "/v1/nothing", "");
    assert_eq!(status, 404, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        error["error"]["code"], "unknown_route",
        "OpenAI's shape: {error}"
    );
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/messages"),
        "{error}"
    );
    let (status, body) = http(&addr, "GET", "/v1/messages", "");
    assert_eq!(status, 405, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["type"], "error", "Anthropic's shape: {error}");
    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
    let (status, body) = http_with(
        &addr,
        "POST",
        "/v1/messages",
        r#"{"model":"nowhere-9","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}"#,
        "anthropic-version: 2023-06-01\r\nx-api-key: sk-secret-never-logged-123456\r\n",
    );
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["type"],
        "error"
    );
    server.terminate();

    let mut lines = Vec::new();
    for entry in std::fs::read_dir(home.path().join("logs")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(
            !text.contains("sk-secret-never-logged"),
            "a key in the logs"
        );
        assert!(!text.contains("\"max_tokens\""), "a body in the logs");
        lines.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|l| l["fields"]["message"] == "request refused"),
        );
    }
    let seen: Vec<(u64, &str, &str, &str)> = lines
        .iter()
        .map(|l| {
            let f = &l["fields"];
            assert!(
                f["request_id"].as_str().is_some_and(|id| id.len() == 32),
                "{l}"
            );
            (
                f["status"].as_u64().unwrap(),
                f["door"].as_str().unwrap(),
                f["model"].as_str().unwrap(),
                f["tenant"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (404, "none", "none", "none"),
            (405, "messages", "none", "none"),
            (404, "messages", "nowhere-9", "local"),
        ],
        "one line per refusal: {lines:?}"
    );
    assert!(
        lines[2]["fields"]["reason"]
            .as_str()
            .unwrap()
            .contains("the model `nowhere-9` does not exist"),
        "{:?}",
        lines[2]
    );
}

#[test]
fn serve_refuses_what_it_cannot_serve_safely() {
    let home = own_home();
    for (args, says) in [
        (
            &["serve", "--listen", "0.0.0.0:0", "--no-auth"][..],
            "--no-auth is for loopback addresses only",
        ),
        (
            &["serve", "--listen", "0.0.0.0:0"][..],
            "put a TLS proxy in front and pass --behind-tls-proxy",
        ),
        (
            &["serve", "--listen", "0.0.0.0:0", "--behind-tls-proxy"][..],
            "set `metrics_token` in [serve] of config.toml",
        ),
        (
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--no-auth",
                "--tls-cert",
                "/nonexistent.pem",
                "--tls-key",
                "/nonexistent.key",
            ][..],
            "/nonexistent.pem: cannot read a PEM certificate chain",
        ),
    ] {
        let out = bare_command(home.path(), args, &[]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A child process killed when dropped (a failed assertion must not leave a server running),
/// with its stderr kept open while it runs.
pub(crate) struct Killed(
    pub(crate) std::process::Child,
    pub(crate) BufReader<std::process::ChildStderr>,
);

impl Killed {
    /// Sends SIGTERM and waits: the server must exit successfully. Returns the rest of its
    /// stderr.
    pub(crate) fn terminate(&mut self) -> String {
        let pid = rustix::process::Pid::from_child(&self.0);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = self.0.wait().unwrap();
        let mut rest = String::new();
        self.1.read_to_string(&mut rest).unwrap();
        assert!(status.success(), "{status:?}: {rest}");
        rest
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hermes serve` on a free loopback port, without auth, the simulator models allowed.
const SERVE_SIM_OPEN: &[&str] = &[
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--no-auth",
    "--allow-sim",
];

/// Starts `hermes serve` with `args` in `home`; returns the child and the address it serves.
fn serving(home: &std::path::Path, args: &[&str]) -> (Killed, String) {
    serving_with(home, args, &[])
}

/// [`serving`] with `env` set for the server.
pub(crate) fn serving_with(
    home: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Killed, String) {
    let mut child = bare_command(home, args, env)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = served_address(&mut stderr);
    (Killed(child, stderr), addr)
}

/// The address `hermes serve` says it serves, read from its first line on stderr (which names
/// every door).
pub(crate) fn served_address(stderr: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    for door in ["/v1/chat/completions", "/v1/messages", "/v1/responses"] {
        assert!(line.contains(door), "the start line names {door}: {line}");
    }
    line.trim()
        .strip_prefix("hermes: serving on http://")
        .and_then(|rest| rest.split_once(": "))
        .map(|(addr, _)| addr)
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned()
}

#[test]
fn a_gateway_key_is_printed_once_stored_as_a_digest_and_required_by_the_server() {
    let home = own_home();
    let out = bare_command(
        home.path(),
        &["serve", "keys", "create", "--tenant", "acme"],
        &[],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("shown this once"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let key = stdout.lines().last().unwrap().to_owned();
    assert!(key.starts_with("hk_"), "{stdout}");
    let secret = key.rsplit('_').next().unwrap().to_owned();
    assert_eq!(secret.len(), 64, "256 bits, hex: {key}");
    // The database holds neither the key nor its secret.
    let db = std::fs::read(home.path().join("state.db")).unwrap();
    let text = String::from_utf8_lossy(&db);
    assert!(!text.contains(&secret), "the secret is in state.db");

    let (_server, addr) = serving(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--allow-sim"],
    );
    let body = r#"{"model":"sim/deepseek-v4-pro","messages":[{"role":"user","content":"hello"}]}"#;
    let (status, said) = http(&addr, "POST", "/v1/chat/completions", body);
    assert_eq!(status, 401, "{said}");
    let (status, said) = http_with(
        &addr,
        "POST",
        "/v1/chat/completions",
        body,
        &format!("Authorization: Bearer {key}\r\n"),
    );
    assert_eq!(status, 200, "{said}");
    // One hex digit changed (to another digit whatever it was).
    let last = if key.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &key[..key.len() - 1]);
    assert_ne!(wrong, key);
    let (status, _) = http_with(
        &addr,
        "POST",
        "/v1/chat/completions",
        body,
        &format!("Authorization: Bearer {wrong}\r\n"),
    );
    assert_eq!(status, 401);

    // Listed by tenant and id, with its creation and (once the server recorded it, off the
    // request's path) its last use; never by secret. Revoked, it no longer opens the door.
    let id = key.rsplit_once('_').unwrap().0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let listed = loop {
        let listed = bare_command(home.path(), &["serve", "keys", "list"], &[])
            .output()
            .unwrap();
        let listed = String::from_utf8(listed.stdout).unwrap();
        if !listed.contains("never") || std::time::Instant::now() > deadline {
            break listed;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut lines = listed.lines();
    assert_eq!(lines.next(), Some("TENANT\tKEY ID\tCREATED\tLAST USED"));
    let row: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(&row[..2], ["acme", id], "{listed}");
    for time in &row[2..] {
        assert!(
            time.len() == 20 && time.ends_with('Z'),
            "an RFC 3339 time: {listed}"
        );
    }
    assert!(!listed.contains(&secret));
    let since = std::time::Instant::now();
    let revoked = bare_command(
        home.path(),
        &["serve", "keys", "revoke", "--key-id", id],
        &[],
    )
    .output()
    .unwrap();
    assert!(revoked.status.success());
    let status = refused_within_a_second(&addr, "/v1/chat/completions", body, &key, since);
    assert_eq!(status, 401, "a revoked key is refused within a second");
}

/// `keys revoke` never prints a key's secret, whatever it is given: the whole key revokes the
/// key by its id; the whole key again, a mistyped key, the key with a dot for its second `_`,
/// or the secret alone each fail without echoing it.
#[test]
fn keys_revoke_given_the_whole_key_revokes_it_by_id_and_never_prints_its_secret() {
    let home = own_home();
    let key = new_key(home.path(), "acme");
    let (id, secret) = key.rsplit_once('_').unwrap();
    assert_eq!(secret.len(), 64, "{key}");
    let revoke = |given: &str| {
        let args = ["serve", "keys", "revoke", "--key-id", given];
        let out = bare_command(home.path(), &args, &[("RUST_LOG", "debug")])
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // No part of the secret: not even 8 of its hex digits in a row.
        for at in 0..=secret.len() - 8 {
            let part = &secret[at..at + 8];
            assert!(!said.contains(part), "{given:?} printed {part:?}: {said}");
        }
        (out.status.success(), said)
    };
    let (ok, said) = revoke(&key);
    assert!(ok, "the whole key revokes it: {said}");
    assert!(said.contains("revoked 1 key"), "{said}");
    let listed = stdout_of(home.path(), &["serve", "keys", "list"]);
    assert!(!listed.contains(id), "still listed: {listed}");
    let (ok, said) = revoke(&key);
    assert!(!ok, "{said}");
    assert!(said.contains(&format!("no gateway key `{id}`")), "{said}");
    // Whatever follows the id is never printed; an id it does not start with is never guessed.
    for given in [
        format!("{key}0"),
        format!("{id}.{secret}"),
        format!("{key}\n"),
    ] {
        let (ok, said) = revoke(&given);
        assert!(!ok, "{given:?}: {said}");
        assert!(said.contains(&format!("no gateway key `{id}`")), "{said}");
    }
    for given in [secret, &format!("hk_{secret}"), &format!("x{key}")] {
        let (ok, said) = revoke(given);
        assert!(!ok, "{given:?}: {said}");
        assert!(said.contains("pass the key id"), "{given:?}: {said}");
    }
}

/// `hermes serve keys create --tenant TENANT`'s key.
pub(crate) fn new_key(home: &std::path::Path, tenant: &str) -> String {
    new_key_with(home, tenant, &[])
}

/// [`new_key`] with `env` set (e.g. `HERMES_DATABASE_URL`, for a store elsewhere).
pub(crate) fn new_key_with(home: &std::path::Path, tenant: &str, env: &[(&str, &str)]) -> String {
    created_key(home, &["--tenant", tenant], env)
}

/// The key `hermes serve keys create ARGS` (run with `env` set) prints on its last line, after
/// checking it succeeded.
pub(crate) fn created_key(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut all = vec!["serve", "keys", "create"];
    all.extend(args);
    let out = bare_command(home, &all, env).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned()
}

/// Runs `hermes ARGS`: its stdout, after checking it succeeded.
fn stdout_of(home: &std::path::Path, args: &[&str]) -> String {
    let out = bare_command(home, args, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn sessions_purge_deletes_a_tenants_conversations_and_tenants_remove_takes_its_keys_too() {
    let home = own_home();
    let (acme, globex) = (new_key(home.path(), "acme"), new_key(home.path(), "globex"));
    let (_server, addr) = serving(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--allow-sim"],
    );
    let turn = |key: &str, text: &str| {
        let body = format!(
            r#"{{"model":"sim/deepseek-v4-pro","messages":[{{"role":"user","content":"{text}"}}]}}"#
        );
        let auth = format!("Authorization: Bearer {key}\r\n");
        let (status, said) = http_with(&addr, "POST", "/v1/chat/completions", &body, &auth);
        assert_eq!(status, 200, "{said}");
    };
    turn(&acme, "one");
    turn(&acme, "two");
    turn(&globex, "three");
    let purge = ["serve", "sessions", "purge", "--tenant", "acme"];
    let older = [&purge[..], &["--older-than", "1h"]].concat();
    assert_eq!(
        stdout_of(home.path(), &older),
        "0\n",
        "nothing is an hour old"
    );
    assert_eq!(stdout_of(home.path(), &purge), "2\n");
    assert_eq!(stdout_of(home.path(), &purge), "0\n");
    // The other tenant's conversation was not touched: removing it deletes one.
    let since = std::time::Instant::now();
    let removed = stdout_of(home.path(), &["serve", "tenants", "remove", "globex"]);
    assert_eq!(removed, "1\n");
    let body = r#"{"model":"sim/deepseek-v4-pro","messages":[{"role":"user","content":"x"}]}"#;
    let status = refused_within_a_second(&addr, "/v1/chat/completions", body, &globex, since);
    assert_eq!(
        status, 401,
        "a removed tenant's key still works after a second"
    );
    turn(&acme, "acme goes on");
    // A bad age names the flag.
    let out = bare_command(
        home.path(),
        &[&purge[..], &["--older-than", "soon"]].concat(),
        &[],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--older-than"), "{stderr}");
}

/// The JSON object of a gateway answer, chunked or not (the one line starting with `{`).
fn json_of(body: &str) -> Value {
    let line = body
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{body}"));
    serde_json::from_str(line).unwrap()
}

/// `sim/…` models are the gateway's only with `--allow-sim`: without it one is unknown (404)
/// and `GET /v1/models` lists none; with it `sim/PROFILE/MODEL` reaches every built-in
/// simulator profile (Claude's signed thinking, Gemini, Responses, OpenRouter, Bedrock, …),
/// `sim/MODEL` the DeepSeek one as before, and `GET /v1/models` lists `sim/PROFILE/*` for each.
/// The rule "no `sim` provider reachable in `hermes serve` without its flag" (issue 51) is held
/// here, through the real binary's setup: config.toml cannot open the way either, by an alias,
/// a pattern alias or a door's default model naming a simulator.
#[test]
fn sim_models_need_allow_sim_and_then_reach_every_simulator_profile() {
    let home = own_home();
    let (mut server, addr) = serving(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--no-auth"],
    );
    let ask = |addr: &str, model: &str| {
        let body = serde_json::json!({
            "model": model, "reasoning_effort": "high",
            "messages": [{"role": "user", "content": "hello"}],
        });
        http(addr, "POST", "/v1/chat/completions", &body.to_string())
    };
    let (status, body) = ask(&addr, "sim/deepseek-v4-pro");
    assert_eq!(status, 404, "without --allow-sim: {body}");
    assert_eq!(json_of(&body)["error"]["code"], "model_not_found", "{body}");
    let (status, body) = ask(&addr, "sim/anthropic/claude-opus-4-6");
    assert_eq!(status, 404, "without --allow-sim: {body}");
    let (status, listed) = http(&addr, "GET", "/v1/models", "");
    assert_eq!(status, 200, "{listed}");
    assert!(!listed.contains("sim/"), "{listed}");
    server.terminate();

    // Aliases and a door's default model naming a simulator (they work with the flag, below).
    std::fs::write(
        home.path().join("config.toml"),
        "[serve.models]\nfast = \"sim/deepseek-v4-pro\"\n\"claude-*\" = \"sim/*\"\n\n\
         [serve.default_models]\nchat = \"sim/deepseek-v4-pro\"\n",
    )
    .unwrap();
    let (mut server, addr) = serving(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--no-auth"],
    );
    for model in ["fast", "claude-opus-4-6", "any-model-at-all"] {
        let (status, body) = ask(&addr, model);
        assert_eq!(status, 404, "{model} without --allow-sim: {body}");
        assert_eq!(json_of(&body)["error"]["code"], "model_not_found", "{body}");
    }
    // Nor does `GET /v1/models` offer what it would refuse: no alias or default naming one.
    let (status, listed) = http(&addr, "GET", "/v1/models", "");
    assert_eq!(status, 200, "{listed}");
    assert!(!listed.contains("sim/"), "{listed}");
    assert!(
        !listed.contains("\"fast\"") && !listed.contains("claude-*"),
        "{listed}"
    );
    server.terminate();

    let (mut server, addr) = serving(home.path(), SERVE_SIM_OPEN);
    let (status, listed) = http(&addr, "GET", "/v1/models", "");
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<String> = json_of(&listed)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    for profile in hermes_sim::PROFILES {
        let wildcard = format!("sim/{}/*", profile.name);
        assert!(ids.contains(&wildcard), "{wildcard} in {ids:?}");
        let model = format!("sim/{}/{}", profile.name, profile.model);
        let (status, body) = ask(&addr, &model);
        assert_eq!(status, 200, "{model}: {body}");
        let reply = json_of(&body);
        assert!(
            reply["choices"][0]["message"]["content"].is_string(),
            "{model}: {reply}"
        );
        assert!(reply["hermes_session"].is_string(), "{model}: {reply}");
    }
    // Claude's simulator through `sim/anthropic/…`: its signed thinking comes back as reasoning.
    let (_, body) = ask(&addr, "sim/anthropic/claude-opus-4-6");
    let reply = json_of(&body);
    assert!(
        reply["choices"][0]["message"]["reasoning_content"].is_string(),
        "{reply}"
    );
    // `sim/MODEL` is the DeepSeek simulator, as before.
    let (status, body) = ask(&addr, "sim/deepseek-v4-pro");
    assert_eq!(status, 200, "{body}");
    assert!(
        json_of(&body)["choices"][0]["message"]["reasoning_content"].is_string(),
        "{body}"
    );
    // The aliases and the default model refused above are right: with the flag they answer.
    for model in ["fast", "claude-opus-4-6", "any-model-at-all"] {
        let (status, body) = ask(&addr, model);
        assert_eq!(status, 200, "{model} with --allow-sim: {body}");
    }
    server.terminate();
}

/// `hermes sim serve --verbose` prints one line per request on stderr with the carriers it
/// received: none on a first turn, the `reasoning_content` a client (or a gateway) sent back.
#[test]
fn sim_serve_verbose_prints_one_line_per_request_with_the_carriers_received() {
    let home = own_home();
    let (mut sim, addr) = sim_serve(
        home.path(),
        &["sim", "serve", "--profile", "deepseek-v4", "--verbose"],
    );
    let post = |body: &str| {
        let request = format!(
            "POST /chat/completions HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer sk-test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (head, rest) = exchange(&addr, &request);
        assert!(head.contains(" 200 "), "{head}: {rest}");
    };
    post(r#"{"model":"deepseek-v4-pro","messages":[{"role":"user","content":"hello"}]}"#);
    let mut line = String::new();
    sim.1.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim_end(),
        "sim: /chat/completions 200 carriers received: none"
    );
    post(
        r#"{"model":"deepseek-v4-pro","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi","reasoning_content":"the user greets"},{"role":"user","content":"again"}]}"#,
    );
    line.clear();
    sim.1.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim_end(),
        "sim: /chat/completions 200 carriers received: reasoning_content 1"
    );
}

/// `hermes sim serve ARGS…` in a home of its own, killed when the first value is dropped; the
/// second is its `host:port`.
pub(crate) fn sim_serve(home: &Path, args: &[&str]) -> (Killed, String) {
    let mut child = bare_command(home, args, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let sim = Killed(child, stderr);
    let mut base = String::new();
    BufReader::new(stdout).read_line(&mut base).unwrap();
    let addr = base
        .trim()
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("{base}"))
        .to_owned();
    (sim, addr)
}

/// `hermes sim serve --profile deepseek-v4 FLAG MS` in `home` (FLAG a pace: `--delay-ms`,
/// `--chunk-delay-ms`): the simulator, its address and the pace.
fn paced_sim(home: &Path, flag: &str, ms: u64) -> (Killed, String, std::time::Duration) {
    let ms_text = ms.to_string();
    let args = ["sim", "serve", "--profile", "deepseek-v4", flag, &ms_text];
    let (sim, addr) = sim_serve(home, &args);
    (sim, addr, std::time::Duration::from_millis(ms))
}

/// A chat-completions request for `hello` to the simulator at `addr` over HTTP/1.0 (the body
/// comes whole, not chunked, and ends with the connection), answered 200: its body and how long
/// the whole exchange took.
fn ask_sim(addr: &str, stream: bool) -> (String, std::time::Duration) {
    let body = format!(
        r#"{{"model":"deepseek-v4-pro","messages":[{{"role":"user","content":"hello"}}],"stream":{stream}}}"#
    );
    let request = format!(
        "POST /chat/completions HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer sk-test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let started = std::time::Instant::now();
    let (head, rest) = exchange(addr, &request);
    let took = started.elapsed();
    assert!(head.contains(" 200 "), "{head}");
    (rest, took)
}

/// `hermes sim serve --chunk-delay-ms` (the gateway benchmark's slow upstream) pauses before each
/// streamed event after the first: a stream of E events takes at least (E - 1) × the delay (a
/// lower bound: a pause never ends early), and still ends with `[DONE]`.
#[test]
fn sim_serve_chunk_delay_ms_paces_each_streamed_event() {
    let home = own_home();
    let (_sim, addr, delay) = paced_sim(home.path(), "--chunk-delay-ms", 30);
    let (sse, took) = ask_sim(&addr, true);
    assert!(sse.ends_with("data: [DONE]\n\n"), "{sse}");
    let events = sse.matches("\n\n").count();
    assert!(events > 10, "{events} events: {sse}");
    let floor = delay * u32::try_from(events - 1).unwrap();
    assert!(took >= floor, "{took:?} < {floor:?} for {events} events");
}

/// `hermes sim serve --delay-ms` (`cargo xtask bench serve`'s paced upstream) waits before it
/// answers, a whole reply as much as a stream: each exchange takes at least the delay (a lower
/// bound), and the answer is whole.
#[test]
fn sim_serve_delay_ms_waits_before_every_answer() {
    let home = own_home();
    let (_sim, addr, delay) = paced_sim(home.path(), "--delay-ms", 200);
    let (body, took) = ask_sim(&addr, false);
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        reply["choices"][0]["message"]["content"].is_string(),
        "{reply}"
    );
    assert!(took >= delay, "a whole reply after {took:?} < {delay:?}");
    let (sse, took) = ask_sim(&addr, true);
    assert!(sse.ends_with("data: [DONE]\n\n"), "{sse}");
    assert!(took >= delay, "a stream after {took:?} < {delay:?}");
}

/// `[serve]`'s policy and `[serve.tenants.NAME]`'s override reach the gateway `hermes serve`
/// runs (issue 47): the `local` tenant of `--no-auth` is capped by its own table, others by
/// `[serve]`'s, and a model outside its patterns is refused, each 403 naming the setting.
#[test]
fn the_serve_sections_policy_reaches_the_gateway() {
    let home = own_home();
    std::fs::write(
        home.path().join("config.toml"),
        "[serve]\nmax_tokens_cap = 5000\nallow_models = [\"sim/*\"]\n\n[serve.tenants.local]\nmax_tokens_cap = 100\n",
    )
    .unwrap();
    let (mut server, addr) = serving(home.path(), SERVE_SIM_OPEN);
    let ask = |model: &str, max_tokens: u32| {
        let body = serde_json::json!({
            "model": model, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": "hello"}],
        });
        http(&addr, "POST", "/v1/chat/completions", &body.to_string())
    };
    let (status, body) = ask("sim/deepseek-v4-pro", 101);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("cap of 100 (max_tokens_cap)"), "{body}");
    let (status, body) = ask("sim/deepseek-v4-pro", 100);
    assert_eq!(status, 200, "{body}");
    let (status, body) = ask("deepseek/deepseek-v4-pro", 100);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("(allow_models)"), "{body}");
    server.terminate();
}

#[test]
fn keys_create_admin_prints_an_admin_key_that_list_marks_and_create_needs_one_of_the_two() {
    let home = own_home();
    for args in [
        &["serve", "keys", "create"][..],
        &["serve", "keys", "create", "--admin", "--tenant", "acme"][..],
    ] {
        let out = bare_command(home.path(), args, &[]).output().unwrap();
        assert!(!out.status.success(), "{args:?} must be refused");
    }
    let out = stdout_of(home.path(), &["serve", "keys", "create", "--admin"]);
    let key = out.lines().last().unwrap();
    let (id, secret) = key
        .strip_prefix("hk_")
        .and_then(|rest| rest.split_once('_'))
        .unwrap();
    let listed = stdout_of(home.path(), &["serve", "keys", "list"]);
    assert!(listed.contains(&format!("(admin)\thk_{id}\t")), "{listed}");
    assert!(!listed.contains(secret), "{listed}");
}

/// The threads `hermes serve ARGS` (run by `program` when given: `taskset -c 0`) says it
/// serves with, from its start line (`… (N threads)`).
fn threads_of(home: &Path, program: Option<&[&str]>, args: &[&str]) -> usize {
    let mut cmd = bare_command(home, args, &[]);
    if let Some(runner) = program {
        // `runner… hermes ARGS`, the environment [`bare_command`] made kept.
        let mut wrapped = std::process::Command::new(runner[0]);
        wrapped
            .args(&runner[1..])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        wrapped.env_clear();
        for (key, value) in cmd.get_envs() {
            if let Some(value) = value {
                wrapped.env(key, value);
            }
        }
        cmd = wrapped;
    }
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // Killed, not stopped: the start line is printed before the SIGTERM handler is installed.
    drop(Killed(child, stderr));
    let threads = line
        .trim_end()
        .strip_suffix(" threads)")
        .or_else(|| line.trim_end().strip_suffix(" thread)"))
        .and_then(|head| head.rsplit_once(" ("))
        .and_then(|(_, n)| n.parse().ok());
    threads.unwrap_or_else(|| panic!("no thread count in the start line: {line}"))
}

#[test]
fn serve_runs_the_threads_it_is_given_else_as_many_as_the_cpus_it_may_use() {
    let home = own_home();
    let open = ["serve", "--listen", "127.0.0.1:0", "--no-auth"];
    let cpus = std::thread::available_parallelism().unwrap().get();
    // Nothing said: the CPUs this process may use (the child inherits its affinity).
    assert_eq!(threads_of(home.path(), None, &open), cpus);
    // Pinned to one CPU (as in a one-CPU container): one thread, not the machine's count.
    let taskset = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("taskset"))
        .find(|path| path.is_file())
        .expect("taskset (util-linux) on PATH");
    let taskset = taskset.to_str().unwrap();
    assert_eq!(
        threads_of(home.path(), Some(&[taskset, "-c", "0"]), &open),
        1
    );
    // `[serve] workers`, then `--workers` over it.
    std::fs::write(home.path().join("config.toml"), "[serve]\nworkers = 3\n").unwrap();
    assert_eq!(threads_of(home.path(), None, &open), 3);
    let mut five = open.to_vec();
    five.extend(["--workers", "5"]);
    assert_eq!(threads_of(home.path(), None, &five), 5);
    // Zero is refused, by the flag and in the file, naming what is wrong.
    let out = bare_command(home.path(), &[&open[..], &["--workers", "0"]].concat(), &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--workers"), "{stderr}");
    std::fs::write(home.path().join("config.toml"), "[serve]\nworkers = 0\n").unwrap();
    let out = bare_command(home.path(), &open, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("config.toml: line 2") && stderr.contains("nonzero"),
        "{stderr}"
    );
}
