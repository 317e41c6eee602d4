//! A tiny hand-written HTTP/1.1 client for the simulator's integration tests (independent of
//! reqwest, so the tests see exactly the bytes and chunks the server writes).

use hermes_sim::RecordedRequest;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: Vec<u8>,
    /// Transfer-encoding chunks as written by the server (empty when not chunked).
    pub(crate) chunks: Vec<Vec<u8>>,
}

impl Resp {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Asserts every recorded value of the `secret` headers (names lower case) is `<redacted>`;
/// returns how many values there were.
pub(crate) fn assert_redacted(rec: &[RecordedRequest], secret: &[&str]) -> usize {
    let values: Vec<(&str, &String, &String)> = rec
        .iter()
        .flat_map(|r| r.headers.iter().map(move |(k, v)| (r.path.as_str(), k, v)))
        .filter(|(_, k, _)| secret.contains(&k.as_str()))
        .collect();
    for (path, k, v) in &values {
        assert_eq!(*v, "<redacted>", "{k} recorded for {path}");
    }
    values.len()
}

/// Asserts the recorded request carries header `name` (lower case) with `value`.
pub(crate) fn assert_header(r: &RecordedRequest, name: &str, value: &str) {
    assert!(
        r.headers.iter().any(|(k, v)| k == name && v == value),
        "{name}: {value} not among {:?}",
        r.headers
    );
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// POSTs `body` as JSON to `path` of `sim` with `headers` (see [`send`]).
pub(crate) async fn post_json(
    sim: &hermes_sim::Sim,
    path: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
) -> Resp {
    send(
        &sim.base_url(),
        "POST",
        path,
        headers,
        body.to_string().as_bytes(),
    )
    .await
}

/// One request with `headers` (plus `Content-Type: application/json`); the connection is closed
/// after the reply.
pub(crate) async fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    send_exact(base, method, path, &all, body).await
}

/// One request with exactly `headers` besides `Host`, `Content-Length` and `Connection: close`.
pub(crate) async fn send_exact(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let host = base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(host).await.unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = find(&raw, b"\r\n\r\n").unwrap();
    let headers = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status: u16 = headers.split(' ').nth(1).unwrap().parse().unwrap();
    let mut rest = &raw[split + 4..];
    let mut chunks = Vec::new();
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        loop {
            let eol = find(rest, b"\r\n").unwrap();
            let size_txt = std::str::from_utf8(&rest[..eol]).unwrap();
            let size =
                usize::from_str_radix(size_txt.split(';').next().unwrap().trim(), 16).unwrap();
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            chunks.push(rest[..size].to_vec());
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        out
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
        chunks,
    }
}
