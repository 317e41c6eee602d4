//! HTTP/1.1 plumbing (hyper): routing (the `anthropic` profile to `crate::anthropic`, the `bedrock`
//! profile to `crate::bedrock`, the `gemini` profile to `crate::gemini`, the `openai-responses`
//! profile to `crate::openai_responses`, every other profile to the chat-completions path), request recording (credential headers redacted), JSON replies,
//! chunked SSE and event-stream bodies.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

#[cfg(feature = "bedrock")]
use crate::bedrock;
use crate::wire::{self, Refusal};
use crate::{RecordedRequest, Shared, anthropic, gemini, lock, model, openai_responses};

/// Byte sizes the SSE text is cut into, cycled; none divides an event, so cuts land mid-line.
const CUTS: [usize; 7] = [7, 13, 5, 19, 11, 3, 17];

/// Byte sizes an event stream is cut into, cycled: frames land split across chunks.
const FRAME_CUTS: [usize; 7] = [37, 101, 13, 211, 59, 7, 149];

/// Response body: a whole buffer, or byte chunks fed by a writer task.
#[derive(Debug)]
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Chunks(mpsc::Receiver<Bytes>),
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Chunks(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Chunks(_) => SizeHint::default(),
        }
    }
}

/// Accepts connections until the task is aborted; aborting also stops every connection.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        // Each write leaves at once (no Nagle): the small cuts reach the client as cut, and a
        // stream's last bytes never wait for the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        conns.spawn(async move {
            let svc = service_fn(move |req| handle(Arc::clone(&shared), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn read_body(mut body: Incoming) -> Vec<u8> {
    let mut raw = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame {
            Ok(f) => {
                if let Some(d) = f.data_ref() {
                    raw.extend_from_slice(d);
                }
            }
            Err(_) => break,
        }
    }
    raw
}

fn json_response(status: u16, text: String) -> Response<SimBody> {
    let mut resp = Response::new(SimBody::Full(Some(Bytes::from(text))));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Header names whose values are never recorded.
const SECRET_HEADERS: [&str; 7] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "x-amz-security-token",
];

/// The headers as recorded: credential values replaced by `<redacted>`.
fn redacted(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            let secret = SECRET_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s));
            let v = if secret { "<redacted>" } else { v.as_str() };
            (k.clone(), v.to_owned())
        })
        .collect()
}

/// What is recorded of a request besides its body and answer.
struct Seen<'a> {
    path: &'a str,
    /// Already redacted.
    headers: &'a [(String, String)],
}

/// Records one request with its answer (`notes`: what the profile noticed, e.g. Gemini's).
fn record(
    shared: &Shared,
    seen: &Seen<'_>,
    body: serde_json::Value,
    raw: Vec<u8>,
    status: u16,
    response: &str,
    notes: Vec<String>,
) {
    lock(&shared.requests).push(RecordedRequest {
        path: seen.path.to_owned(),
        headers: seen.headers.to_vec(),
        body,
        raw,
        status,
        response: response.to_owned(),
        notes,
    });
}

fn refuse(
    shared: &Shared,
    seen: &Seen<'_>,
    body: serde_json::Value,
    raw: Vec<u8>,
    refusal: Refusal,
) -> Response<SimBody> {
    let text = refusal.body.to_string();
    record(shared, seen, body, raw, refusal.status, &text, Vec::new());
    json_response(refusal.status, text)
}

/// A `text/event-stream` response whose body `text` is written in small cuts ([`CUTS`]) that
/// land mid-line, with a pause now and then so reads see partial events; with a `pace`
/// ([`crate::SimBuilder::chunk_delay`]), no cut spans two events and each event after the first
/// waits `pace` before its first byte.
fn sse_response(text: String, pace: Duration) -> Response<SimBody> {
    let ends = if pace.is_zero() {
        Vec::new()
    } else {
        event_ends(text.as_bytes())
    };
    let mut resp = chunked(Bytes::from(text), &CUTS, Paced { ends, pace });
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// Where each SSE event of `text` ends: just past every blank line (`\n\n`, or `\r\n\r\n` in
/// the `gemini` profile's CRLF streams), in order.
fn event_ends(text: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let blank = if rest.starts_with(b"\n\n") {
            2
        } else if rest.starts_with(b"\r\n\r\n") {
            4
        } else {
            0
        };
        if blank > 0 {
            at += blank;
            ends.push(at);
        } else {
            at += 1;
        }
    }
    ends
}

/// How a chunked body is paced: the offsets where its events end (in order) and the pause
/// before each event after the first. No ends: no pacing.
struct Paced {
    ends: Vec<usize>,
    pace: Duration,
}

impl Paced {
    /// Not paced.
    const NONE: Paced = Paced {
        ends: Vec::new(),
        pace: Duration::ZERO,
    };
}

/// A body written in `cuts` (cycled), with a pause now and then so reads see partial data; with
/// `paced` ends, no cut crosses an event's end and each event after the first waits its pause.
fn chunked(bytes: Bytes, cuts: &'static [usize], paced: Paced) -> Response<SimBody> {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        let mut at = 0;
        let mut ends = paced.ends.iter().copied().peekable();
        for (n, cut) in cuts.iter().cycle().enumerate() {
            if at >= bytes.len() {
                break;
            }
            let mut end = (at + cut).min(bytes.len());
            while ends.next_if(|&e| e <= at).is_some() {}
            if let Some(&event_end) = ends.peek() {
                end = end.min(event_end);
            }
            if tx.send(bytes.slice(at..end)).await.is_err() {
                break;
            }
            at = end;
            if ends.peek() == Some(&at) && at < bytes.len() {
                // An event ends here and another follows: the pause before it.
                tokio::time::sleep(paced.pace).await;
            } else if n % 16 == 15 {
                // Pause now and then so reads on the client side see partial events.
                tokio::time::sleep(Duration::from_millis(1)).await;
            } else {
                tokio::task::yield_now().await;
            }
        }
    });
    Response::new(SimBody::Chunks(rx))
}

/// The `bedrock` profile's answer (`None` for any other profile).
#[cfg(feature = "bedrock")]
fn bedrock_answer(shared: &Shared, request: &wire::Request<'_>) -> Option<wire::Answer> {
    shared
        .profile
        .is_bedrock()
        .then(|| bedrock::answer(shared, request))
}

/// Without the `bedrock` feature no profile is Bedrock's.
#[cfg(not(feature = "bedrock"))]
fn bedrock_answer(_: &Shared, _: &wire::Request<'_>) -> Option<wire::Answer> {
    None
}

/// The HTTP response for a wire module's answer: its body sent as its kind says, then its
/// headers.
fn response(a: &wire::Answer, pace: Duration) -> Response<SimBody> {
    let mut resp = match &a.kind {
        wire::Body::Json => json_response(a.status, a.text.clone()),
        wire::Body::Sse => sse_response(a.text.clone(), pace),
        wire::Body::JsonArray => {
            let mut resp = chunked(Bytes::from(a.text.clone()), &CUTS, Paced::NONE);
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            resp
        }
        wire::Body::EventStream(bytes) => {
            let mut resp = chunked(Bytes::from(bytes.clone()), &FRAME_CUTS, Paced::NONE);
            resp.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(wire::EVENT_STREAM));
            resp
        }
    };
    for (name, value) in &a.headers {
        if let Ok(v) = HeaderValue::from_str(value) {
            resp.headers_mut().insert(*name, v);
        }
    }
    resp
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, Infallible> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or_else(|| path.clone(), |p| p.as_str().to_owned());
    let method = parts.method.clone();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_owned(), v)
        })
        .collect();
    let raw = read_body(body).await;
    if !shared.reply_delay.is_zero() {
        tokio::time::sleep(shared.reply_delay).await;
    }
    let recorded = redacted(&headers);
    let seen = Seen {
        path: &path,
        headers: &recorded,
    };
    let null = serde_json::Value::Null;
    let request = wire::Request {
        method: method.as_str(),
        path: &path,
        path_and_query: &path_and_query,
        headers: &headers,
        raw: &raw,
    };

    let answer = if shared.profile.is_messages() {
        Some(anthropic::answer(&shared, &request))
    } else if shared.profile.is_responses() {
        Some(openai_responses::answer(&shared, &request))
    } else if shared.profile.is_gemini() {
        Some(gemini::answer(&shared, &request))
    } else {
        bedrock_answer(&shared, &request)
    };
    if let Some(a) = answer {
        // Gemini's query is recorded too (`alt=sse`), with any `key` value redacted.
        let shown = if shared.profile.is_gemini() {
            gemini::recorded_path(&path_and_query)
        } else {
            path.clone()
        };
        let seen = Seen {
            path: &shown,
            headers: &recorded,
        };
        let resp = response(&a, shared.chunk_delay);
        record(&shared, &seen, a.body, raw, a.status, &a.text, a.notes);
        return Ok(resp);
    }
    if path != "/chat/completions" && path != "/v1/chat/completions" {
        let r = wire::not_found(method.as_str(), &path);
        return Ok(refuse(&shared, &seen, null, raw, r));
    }
    if method != hyper::Method::POST {
        let r = wire::method_not_allowed(method.as_str(), &path);
        return Ok(refuse(&shared, &seen, null, raw, r));
    }
    let body: serde_json::Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => {
            let r = shared.profile.bad_json(&e);
            return Ok(refuse(&shared, &seen, null, raw, r));
        }
    };
    let switches = lock(&shared.switches).clone();
    if let Err(r) = shared.profile.validate(&body, &switches, &shared.key) {
        return Ok(refuse(&shared, &seen, body, raw, r));
    }

    let reply = model::script(&body);
    let carrier = shared.profile.carrier(&body);
    let stream = body.get("stream").and_then(serde_json::Value::as_bool) == Some(true);
    if !stream {
        let text = model::completion(carrier, &raw, &reply, &shared.key).to_string();
        record(&shared, &seen, body, raw, 200, &text, Vec::new());
        return Ok(json_response(200, text));
    }

    let usage_at = shared.profile.stream_usage(&body);
    let text = model::sse(
        carrier,
        &raw,
        &reply,
        &shared.key,
        usage_at,
        switches.fail_mid_stream,
    );
    record(&shared, &seen, body, raw, 200, &text, Vec::new());
    Ok(sse_response(text, shared.chunk_delay))
}

#[cfg(test)]
mod tests {
    use super::event_ends;

    #[test]
    fn events_end_after_each_blank_line_in_lf_and_crlf_streams() {
        let lf = b"data: a\n\nevent: x\ndata: b\n\ndata: [DONE]\n\n";
        assert_eq!(event_ends(lf), vec![9, 27, 41]);
        let crlf = b"data: a\r\n\r\ndata: b\r\n\r\n";
        assert_eq!(event_ends(crlf), vec![11, 22]);
        assert!(event_ends(b"data: no end yet\n").is_empty());
    }
}
