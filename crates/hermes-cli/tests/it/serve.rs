//! `hermes serve` through the binary: it serves chat-completions on loopback with `--no-auth`
//! (here with the in-process simulator as `sim/MODEL`), answers `/healthz`, stops cleanly on
//! SIGTERM, and refuses what it cannot serve safely (no auth off loopback, plain HTTP off
//! loopback without TLS or `--behind-tls-proxy`, TLS files it cannot read, keys it does not have
//! yet).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Stdio;

use serde_json::Value;

use crate::support::{bare_command, own_home};

/// One HTTP/1.1 request on a fresh connection: the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[test]
fn serve_answers_on_loopback_and_stops_on_sigterm() {
    let home = own_home();
    let mut child = bare_command(
        home.path(),
        &["serve", "--listen", "127.0.0.1:0", "--no-auth"],
        &[],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("hermes: serving OpenAI chat-completions on http://")
        .and_then(|rest| rest.strip_suffix("/v1"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
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

    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{status:?}: {rest}");
    assert!(rest.contains("shutting down"), "{rest}");
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
        (
            &["serve", "--listen", "127.0.0.1:0"][..],
            "gateway keys are not available in this build yet",
        ),
    ] {
        let out = bare_command(home.path(), args, &[]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
