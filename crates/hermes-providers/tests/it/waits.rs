//! Bounded waits against raw loopback servers: a server that accepts and says nothing ends at
//! the time-to-first-byte limit; a stream that stalls after its first chunk ends at the idle
//! limit. Each is a clear timeout error and captures nothing.

use std::time::Duration;

use hermes_core::{Message, ResolveOptions, RouteTarget};
use hermes_providers::{ChatTransport, TransportError, Waits, builtin_table};
use hermes_wire_chat::HttpChat;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::support;

/// A server that accepts, reads the request, then runs `answer` on the connection.
async fn server<F, Fut>(answer: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let _ = stream.read(&mut buf).await;
            answer(stream).await;
        }
    });
    url
}

async fn send(
    base: &str,
    stream: bool,
    waits: Waits,
) -> Result<hermes_providers::Reply, TransportError> {
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new("custom", Some(base), "m"),
        ResolveOptions::default(),
    );
    let history: Vec<Message> = vec![Message::text(hermes_core::Role::User, "hi")];
    let request = support::chat_request(&history, &decision, stream);
    let (endpoint, origin) = support::loopback(base.to_owned(), "custom", "m");
    // A hang guard only: the limits under test are far shorter.
    tokio::time::timeout(
        Duration::from_secs(60),
        HttpChat {
            client: ChatTransport::with_waits(waits).unwrap(),
            endpoint,
        }
        .send_chat(&request, origin),
    )
    .await
    .expect("the request ended by itself")
}

#[tokio::test]
async fn a_silent_server_ends_at_the_first_byte_limit() {
    let base = server(|stream| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(stream);
    })
    .await;
    let waits = Waits::new(
        Duration::from_secs(5),
        Duration::from_millis(300),
        Duration::from_secs(30),
    );
    let err = send(&base, false, waits).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Timeout { wait: hermes_core::Wait::FirstByte, detail: why } if why.contains("time-to-first-byte") && why.contains("[limits] first_byte")),
        "{err}"
    );
}

#[tokio::test]
async fn a_stalled_stream_ends_at_the_idle_limit() {
    let base = server(|mut stream| async move {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"},\"finish_reason\":null}]}\n\n";
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream
            .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .await;
        let _ = stream.flush().await;
        // Then nothing, forever.
        tokio::time::sleep(Duration::from_secs(3600)).await;
    })
    .await;
    let waits = Waits::new(
        Duration::from_secs(5),
        Duration::from_secs(5),
        Duration::from_millis(400),
    );
    let err = send(&base, true, waits).await.unwrap_err();
    assert!(
        matches!(&err, TransportError::Stalled(why) if why.contains("idle limit ([limits] idle) after 1 chunk") && !why.contains("chunks")),
        "a stalled stream is a timeout naming the idle limit: {err}"
    );
}
