//! How a reply is read, and what goes wrong on the way as a transport error: reqwest's errors
//! (`map_reqwest`), a failed read of a stream (`stream_error`, `chunk_error`), a provider's
//! error payload and SSE `event: error` frame (`error_event_text`), and a whole reply's body
//! (`read_text`, `read_whole`). Below both the transport and the SSE loop (`native::sse`),
//! which read replies through it.

use hermes_core::Origin;
use hermes_core::transport::{Reply, TransportError, Wait};
use serde_json::Value;

use crate::reply::Captured;

/// At most this much of an error body is kept.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The one place reqwest errors become transport errors.
pub(crate) fn map_reqwest(err: reqwest::Error) -> TransportError {
    // reqwest's message names the URL, which never holds the key (it travels in a header).
    let text = err.to_string();
    if err.is_timeout() {
        let address = address(&err);
        if err.is_connect() {
            TransportError::Timeout {
                wait: Wait::Connect,
                detail: format!(
                    "{address}: could not connect within the connect limit ([limits] connect)"
                ),
            }
        } else {
            TransportError::Timeout {
                wait: Wait::Idle,
                detail: format!(
                    "{address}: the reply was silent for longer than the idle limit ([limits] idle)"
                ),
            }
        }
    } else if err.is_connect() {
        TransportError::Connect(connect_cause(&err))
    } else if err.is_body() || err.is_decode() {
        TransportError::Stream(text)
    } else {
        // "error sending request for url (…)" names no cause: say who broke off and why.
        TransportError::Request(send_cause(&err))
    }
}

/// Why a connection could not be made, in one line the user can act on: the host name did not
/// resolve (DNS), the host refused the connection, the TLS handshake failed, or else the
/// innermost cause reqwest wraps (its own message, "error sending request for url", names none).
fn connect_cause(err: &reqwest::Error) -> String {
    send_cause(err)
}

/// Why a request could not be sent or answered, in one line: the causes of [`connect_cause`],
/// else the address and the innermost cause (e.g. the server closed the connection before it
/// answered).
fn send_cause(err: &reqwest::Error) -> String {
    let mut chain: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next = std::error::Error::source(err);
    while let Some(e) = next {
        chain.push(e);
        next = e.source();
    }
    let innermost = chain
        .last()
        .map_or_else(|| err.to_string(), ToString::to_string);
    let texts: Vec<String> = chain.iter().map(|e| e.to_string().to_lowercase()).collect();
    let any = |needles: &[&str]| texts.iter().any(|t| needles.iter().any(|n| t.contains(n)));
    let refused = chain.iter().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    let tls = chain.iter().any(|e| is_rustls(*e));
    let host = err.url().and_then(|u| u.host_str()).unwrap_or("the host");
    let address = address(err);
    if any(&[
        "dns error",
        "lookup address",
        "name or service not known",
        "no such host",
    ]) {
        format!("the host name {host} could not be resolved (DNS: {innermost})")
    } else if refused {
        format!("{address} refused the connection (nothing listens there?)")
    } else if tls || any(&["certificate", "tls handshake"]) {
        format!("the TLS handshake with {address} failed: {innermost}")
    } else {
        format!("{address}: {innermost}")
    }
}

/// `host:port` of the URL a reqwest error is about (`the host` when it names none).
fn address(err: &reqwest::Error) -> String {
    let url = err.url();
    let host = url.and_then(|u| u.host_str()).unwrap_or("the host");
    let port = url.and_then(reqwest::Url::port_or_known_default);
    port.map_or_else(|| host.to_owned(), |p| format!("{host}:{p}"))
}

/// True when `e` is a rustls error, or `io::Error`s wrapping one (their `source()` skips what
/// they wrap, so the chain alone never shows it).
fn is_rustls(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    e.downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
        .is_some_and(|inner| is_rustls(inner))
}

/// The message of an `{"error":…}` payload (`"error": null` is no error).
pub fn error_text(value: &Value) -> Option<String> {
    value
        .get("error")
        .filter(|e| !e.is_null())
        .map(provider_message)
}

/// The provider's own words in an error value: a string as is, else its `message` or nested
/// `error` (followed down, however deep the provider nests them), else the JSON text.
fn provider_message(err: &Value) -> String {
    let mut at = err;
    loop {
        match at {
            Value::String(text) => return text.clone(),
            Value::Object(map) => match map
                .get("message")
                .or_else(|| map.get("error"))
                .filter(|v| v.is_string() || v.is_object())
            {
                Some(inner) => at = inner,
                None => return at.to_string(),
            },
            _ => return at.to_string(),
        }
    }
}

/// A failed SSE read as a transport error: a silent stream (reqwest's read timeout is the idle
/// limit) is a timeout naming how far it got (`seen` `unit`s, e.g. "12 chunks"), the rest a
/// stream error.
pub(crate) fn stream_error(
    error: eventsource_stream::EventStreamError<reqwest::Error>,
    seen: usize,
    unit: &str,
) -> TransportError {
    match error {
        eventsource_stream::EventStreamError::Transport(t) if t.is_timeout() => silent(seen, unit),
        other => TransportError::Stream(other.to_string()),
    }
}

/// A failed read of a streamed body's bytes (an AWS event stream) as a transport error: a
/// silent stream is a timeout naming how far it got (`seen` `unit`s, e.g. "12 frames"), the
/// rest as [`map_reqwest`] maps them.
pub fn chunk_error(error: reqwest::Error, seen: usize, unit: &str) -> TransportError {
    if error.is_timeout() {
        silent(seen, unit)
    } else {
        map_reqwest(error)
    }
}

/// A stream silent for longer than the idle limit, after `seen` `unit`s: a stall, which the
/// driver retries at most once.
fn silent(seen: usize, unit: &str) -> TransportError {
    let plural = if seen == 1 { "" } else { "s" };
    TransportError::Stalled(format!(
        "silent for longer than the idle limit ([limits] idle) after {seen} {unit}{plural}"
    ))
}

/// The message of an SSE `event: error` frame: a JSON payload's message, or its text.
pub fn error_event_text(data: &str) -> String {
    if data.is_empty() {
        return "the provider sent an error event with no message".to_owned();
    }
    match serde_json::from_str::<Value>(data) {
        Ok(value) => error_text(&value).unwrap_or_else(|| provider_message(&value)),
        Err(_) => data.to_owned(),
    }
}

/// Reads a whole (non-streamed) reply and captures it with `capture`, decoding from the bytes
/// themselves so that every block keeps them.
pub async fn read_whole(
    response: reqwest::Response,
    origin: Origin,
    capture: fn(&str, Origin) -> Captured,
) -> Result<Reply, TransportError> {
    let text = read_text(response).await?;
    let (message, meta) = capture(&text, origin).map_err(|e| e.of_whole(&text))?;
    Ok(Reply { message, meta })
}

/// A whole reply's body as text: a transport error when reading fails or it is not UTF-8.
pub(crate) async fn read_text(response: reqwest::Response) -> Result<String, TransportError> {
    let bytes = response.bytes().await.map_err(map_reqwest)?;
    String::from_utf8(Vec::from(bytes))
        .map_err(|e| TransportError::Decode(format!("the reply is not UTF-8: {e}")))
}
