//! A request's life against the store: a client that disconnects mid-stream still leaves the
//! reply it paid for stored whole (the gateway reads the upstream to its end); a stream in flight when the server is told to
//! stop finishes within the drain bound and is stored whole; two requests continuing one tip at once both
//! succeed, one at the tip and one on a branch of it (docs/spec.md §10, "What is stored").

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::{KEY, start};

/// One streamed chat-completions chunk from DeepSeek carrying `delta`.
fn chunk(delta: Value) -> String {
    let chunk = json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 0,
        "model": "deepseek-v4-pro",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    });
    format!("data: {chunk}\n\n")
}

/// Reads one HTTP request (headers and `content-length` body) from `socket`.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the gateway closed before sending its request");
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return;
            }
        }
    }
}

/// A loopback upstream for one streamed request: it answers 200 with `first` (SSE events),
/// then hands the connection to `then`. Returns its base URL.
async fn streaming_upstream<F, Fut>(first: Vec<String>, then: F) -> String
where
    F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        for piece in first {
            socket.write_all(piece.as_bytes()).await.unwrap();
        }
        socket.flush().await.unwrap();
        then(socket).await;
    });
    url
}

/// A streamed `hello` through `gateway`, read until its first reasoning delta; the response
/// and what was read.
async fn stream_to_first_delta(gateway: &crate::Running) -> (reqwest::Response, String) {
    let mut response = gateway.stream_hello().await;
    let mut got = String::new();
    while !got.contains("reasoning_content") {
        let bytes = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("a delta within 10 s")
            .unwrap()
            .expect("the stream is still open");
        got.push_str(&String::from_utf8_lossy(&bytes));
    }
    (response, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_still_leaves_the_paid_reply_stored_whole() {
    // An upstream that streams two reasoning deltas, waits until the client is gone, then
    // finishes the reply: the gateway reads it to its end and stores it, usage included.
    let (gone_tx, gone_rx) = tokio::sync::oneshot::channel::<()>();
    let first = vec![
        chunk(json!({"role": "assistant", "reasoning_content": "Let me think"})),
        chunk(json!({"reasoning_content": " about it."})),
    ];
    let upstream_url = streaming_upstream(first, |mut socket| async move {
        let _ = gone_rx.await;
        let rest = [
            chunk(json!({"content": "Done."})),
            format!(
                "data: {}\n\n",
                json!({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                       "model": "deepseek-v4-pro",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}})
            ),
            "data: [DONE]\n\n".to_owned(),
        ];
        for piece in rest {
            socket.write_all(piece.as_bytes()).await.unwrap();
        }
        socket.flush().await.unwrap();
    })
    .await;
    let gateway = start(&upstream_url, |c| c).await;
    // The first delta reaches the client; then it goes away.
    let (response, _) = stream_to_first_delta(&gateway).await;
    drop(response);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = gone_tx.send(());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let session = loop {
        if let Some(session) = gateway.store.list().await.unwrap().into_iter().next() {
            break session;
        }
        assert!(std::time::Instant::now() < deadline, "the turn was stored");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let stored = gateway.store.messages(&session.id).await.unwrap();
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(
        stored[1].reasoning_content.as_ref().unwrap().text(),
        "Let me think about it."
    );
    assert_eq!(stored[1].content.as_ref().unwrap().get(), r#""Done.""#);
    assert_eq!(session.output_tokens, 7, "its usage, in the same commit");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_in_flight_at_shutdown_finishes_within_the_drain_bound_and_is_stored_whole() {
    // An upstream that streams a reasoning delta, pauses, then finishes.
    let first = vec![chunk(
        json!({"role": "assistant", "reasoning_content": "Thinking."}),
    )];
    let upstream_url = streaming_upstream(first, |mut socket| async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let last = json!({
            "id": "c1", "object": "chat.completion.chunk", "created": 0,
            "model": "deepseek-v4-pro",
            "choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        });
        let tail = format!("data: {last}\n\ndata: [DONE]\n\n");
        socket.write_all(tail.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
    })
    .await;
    let gateway = start(&upstream_url, |c| c.drain(Duration::from_secs(10))).await;
    let (mut response, mut got) = stream_to_first_delta(&gateway).await;
    // Told to stop while the stream is in flight.
    let store = gateway.store.clone();
    let stopping = tokio::spawn(gateway.stop());
    while let Some(bytes) = tokio::time::timeout(Duration::from_secs(10), response.chunk())
        .await
        .expect("the stream goes on while draining")
        .unwrap()
    {
        got.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(got.contains("Done."), "{got}");
    assert!(got.contains("data: [DONE]"), "the stream finished: {got}");
    // The store's folder stays until the checks below are done.
    let _dir = tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the server stops once its streams are done")
        .unwrap();
    let sessions = store.list().await.unwrap();
    assert_eq!(sessions.len(), 1);
    let messages = store.messages(&sessions[0].id).await.unwrap();
    assert_eq!(messages.len(), 2, "the user turn and the whole reply");
    assert_eq!(
        messages[1].reasoning_content.as_ref().unwrap().text(),
        "Thinking."
    );
}

/// `POST /v1/chat/completions` with `body`; the status and the JSON answer.
async fn ask(url: String, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_continuing_one_tip_at_once_both_succeed_one_on_a_branch() {
    let (_sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let url = gateway.url("/v1/chat/completions");
    let hello = json!({"role": "user", "content": "hello"});
    let (status, first) = ask(
        url.clone(),
        json!({"model": "deepseek/deepseek-v4-pro", "messages": [hello]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let session = first["hermes_session"].as_str().unwrap().to_owned();
    let answer = json!({"role": "assistant", "content": first["choices"][0]["message"]["content"]});
    let next = |text: &str| {
        json!({
            "model": "deepseek/deepseek-v4-pro",
            "messages": [hello, answer, {"role": "user", "content": text}],
        })
    };
    let (a, b) = tokio::join!(
        ask(url.clone(), next("first follow-up")),
        ask(url.clone(), next("second follow-up")),
    );
    assert_eq!(a.0, 200, "{}", a.1);
    assert_eq!(b.0, 200, "{}", b.1);
    let landed: Vec<String> = [&a.1, &b.1]
        .iter()
        .map(|r| r["hermes_session"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        landed.contains(&session),
        "one continues the tip: {landed:?}"
    );
    let branch = landed.iter().find(|s| **s != session).expect("one branch");
    let meta = gateway.store.session(branch).await.unwrap();
    assert_eq!(meta.parent_id.as_deref(), Some(session.as_str()));
    // Each holds the shared prefix, its own follow-up and its answer, reasoning included.
    for id in &landed {
        let messages = gateway.store.messages(id).await.unwrap();
        assert_eq!(messages.len(), 4, "{id}");
        let text = |i: usize| {
            messages[i]
                .content
                .as_ref()
                .and_then(|c| c.as_str().map(|s| s.into_owned()))
        };
        assert_eq!(text(0).as_deref(), Some("hello"), "{id}");
        assert!(text(2).unwrap().ends_with("follow-up"), "{id}");
        assert!(
            messages[1].reasoning_content.is_some(),
            "{id}: re-attached prefix"
        );
        assert!(
            messages[3].reasoning_content.is_some(),
            "{id}: its own answer"
        );
    }
    gateway.stop().await;
}
