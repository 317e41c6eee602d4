//! A stream that goes silent after its first chunk: before any text reached the user the turn
//! waits the idle limit, retries once, and fails naming the stall, saying each wait once; after
//! text reached the user it is not retried (the text would be printed twice). And `config show` prints the effective
//! `[limits]`. Requests are counted and output read; no assertion is about time.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A loopback server answering every POST with a 200 event stream that sends one chat
/// completions chunk (its delta `delta`) and then nothing, holding the connection open. Returns
/// its base URL and the count of requests it received.
fn stalling_server(delta: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                seen.fetch_add(1, Ordering::SeqCst);
                let chunk = format!(
                    "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"deepseek-v4-pro\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
                );
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = write!(stream, "{head}{:x}\r\n{chunk}\r\n", chunk.len());
                let _ = stream.flush();
                // Silent from here on; the client gives up, and the connection closes then.
                let mut rest = [0u8; 1];
                let _ = stream.read(&mut rest);
            });
        }
    });
    (base, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_stalled_before_any_text_is_retried_once_and_each_wait_is_said_once() {
    let (base, requests) = stalling_server(r#"{"role":"assistant"}"#);
    let out = chat_with_idle_1(&base).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(requests.load(Ordering::SeqCst), 2, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    // One line for the one retry, naming the cause and the wait before it.
    let waits: Vec<&&str> = lines.iter().filter(|l| l.contains("; retry ")).collect();
    assert_eq!(waits.len(), 1, "{stderr}");
    assert!(
        waits[0].starts_with(
            "hermes: the stream stalled: silent for longer than the idle limit ([limits] idle) after 1 chunk; retry 1 in "
        ),
        "{stderr}"
    );
    // Then the failure, naming the stall: two lines in all, each said once.
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[1].starts_with("hermes: error: the turn failed; nothing was stored: the stream stalled: silent for longer than the idle limit ([limits] idle) after 1 chunk, again on the retry"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_stalled_after_text_reached_the_user_is_not_retried() {
    let (base, requests) = stalling_server(r#"{"role":"assistant","content":"Hel"}"#);
    let out = chat_with_idle_1(&base).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(requests.load(Ordering::SeqCst), 1, "{stderr}");
    // One-shot prints only a whole answer; the engine's caller saw the streamed text.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "hermes: error: the turn failed; nothing was stored: the stream stalled: silent for longer than the idle limit ([limits] idle) after 1 chunk (after part of the reply had streamed, so it was not retried)"
        ],
        "{stderr}"
    );
}

/// `hermes chat` on DeepSeek at `base` with `[limits] idle = 1`.
async fn chat_with_idle_1(base: &str) -> std::process::Output {
    let home = crate::support::home();
    std::fs::write(home.path().join("config.toml"), "[limits]\nidle = 1\n").unwrap();
    home.run(
        &crate::support::chat_cmd(&crate::support::deepseek_at(base, &["-q", "hi"])),
        &[("DEEPSEEK_API_KEY", "sk-test")],
    )
    .await
}

#[test]
fn config_show_prints_the_effective_limits() {
    let home = crate::support::home();
    let show = || {
        let out = home.run_sync(&["config", "show"], &[]);
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let defaults = show();
    assert!(
        defaults.contains(
            "[limits]\nconnect = 15\nfirst_byte = 120\nidle = 120\nturn = 1800\nlease_wait = 10\n"
        ),
        "{defaults}"
    );
    std::fs::write(
        home.path().join("config.toml"),
        "[limits]\nidle = 5\nturn = 600\n",
    )
    .unwrap();
    let overridden = show();
    assert!(
        overridden.contains(
            "[limits]\nconnect = 15\nfirst_byte = 120\nidle = 5\nturn = 600\nlease_wait = 10\n"
        ),
        "{overridden}"
    );
}
