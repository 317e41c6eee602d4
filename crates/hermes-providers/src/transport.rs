//! The transport every wire sends through: one shared HTTP client, its waits and redirect
//! policy, and typed errors mapped from reqwest in one place (`read`, with the reading of a
//! reply the SSE loop shares). The API key is sent, never logged.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt as _;
use hermes_core::Outgoing;
use hermes_core::transport::{TransportError, Wait};

pub(crate) use crate::read::read_text;
use crate::read::{ERROR_BODY_LIMIT, map_reqwest};
pub(crate) use crate::reply::snippet;

/// How long a request may wait, at each stage. Each limit ends the request with a clear
/// [`TransportError::Timeout`] naming it; nothing of the reply is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waits {
    /// To connect.
    pub connect: Duration,
    /// From sending the request to the first byte of the response (its status line).
    pub first_byte: Duration,
    /// Silence between two chunks of a streamed reply, or while a whole body arrives.
    pub idle: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits {
            connect: Duration::from_secs(15),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(120),
        }
    }
}

impl Waits {
    /// Limits with these values.
    pub fn new(connect: Duration, first_byte: Duration, idle: Duration) -> Self {
        Waits {
            connect,
            first_byte,
            idle,
        }
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body (never the rest), noting a cut.
async fn read_error_body(response: reqwest::Response) -> Result<String, TransportError> {
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    let mut cut = false;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(map_reqwest)?;
        let room = ERROR_BODY_LIMIT - bytes.len();
        if chunk.len() >= room {
            bytes.extend_from_slice(&chunk[..room]);
            // Cut only when something is left over (this chunk or another).
            cut = chunk.len() > room || stream.next().await.is_some();
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    if !cut {
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    // Do not end on half a character.
    if let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
    {
        bytes.truncate(e.valid_up_to());
    }
    let mut body = String::from_utf8_lossy(&bytes).into_owned();
    body.push_str(&format!("\n… (error body cut at {ERROR_BODY_LIMIT} bytes)"));
    Ok(body)
}

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// The redirect policy: a redirect is followed only when it keeps the method and body (307,
/// 308) and stays on the same scheme, host and port. Anything else stops, and the 3xx answer
/// becomes [`TransportError::Redirect`] naming the target: the conversation is never re-sent to
/// a host the user did not name.
fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
    let same_origin = attempt.previous().last().is_some_and(|from| {
        let to = attempt.url();
        from.scheme() == to.scheme()
            && from.host_str() == to.host_str()
            && from.port_or_known_default() == to.port_or_known_default()
    });
    if keeps_body && same_origin && attempt.previous().len() <= MAX_REDIRECTS {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// Sends every wire's requests over one shared client. The HTTP client, and the system's
/// root certificates its TLS loads (a hundred files or more), is built on the first request:
/// a wire that only encodes (`hermes preview`) never pays for it. Clones share it, so every
/// wire built from one transport sends over the same connections.
#[derive(Clone, Debug)]
pub struct ChatTransport {
    client: Arc<OnceLock<reqwest::Client>>,
    /// curl's `--resolve`: the address `host` is reached at ([`ChatTransport::resolving`]).
    resolve: Option<(String, std::net::SocketAddr)>,
    waits: Waits,
}

impl ChatTransport {
    /// Builds the shared client (rustls with the ring provider, HTTP/2) with the default
    /// [`Waits`].
    pub fn new() -> Result<Self, TransportError> {
        ChatTransport::with_waits(Waits::default())
    }

    /// The limits this client waits by.
    pub fn waits(&self) -> Waits {
        self.waits
    }

    /// Builds the shared client with these limits.
    pub fn with_waits(waits: Waits) -> Result<Self, TransportError> {
        ChatTransport::build(waits, None)
    }

    /// Builds the shared client with these limits, connecting to `addr` for `host` instead of
    /// resolving it (what curl's `--resolve` does): the request still names `host` (its URL,
    /// `Host` header and signature), so a loopback simulator can stand in for a provider's own
    /// host name.
    pub fn resolving(
        waits: Waits,
        host: &str,
        addr: std::net::SocketAddr,
    ) -> Result<Self, TransportError> {
        ChatTransport::build(waits, Some((host, addr)))
    }

    fn build(
        waits: Waits,
        resolve: Option<(&str, std::net::SocketAddr)>,
    ) -> Result<Self, TransportError> {
        Ok(ChatTransport {
            client: Arc::new(OnceLock::new()),
            resolve: resolve.map(|(host, addr)| (host.to_owned(), addr)),
            waits,
        })
    }

    /// The HTTP client (rustls with the ring provider, HTTP/2), built on first use.
    fn client(&self) -> Result<&reqwest::Client, TransportError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        // Installing twice is harmless; reqwest needs a process-wide provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
            .connect_timeout(self.waits.connect)
            .read_timeout(self.waits.idle)
            .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")));
        if let Some((host, addr)) = &self.resolve {
            builder = builder.resolve(host, *addr);
        }
        let built = builder.build().map_err(map_reqwest)?;
        // Two first requests at once both build; the first stored is the one every clone uses.
        Ok(self.client.get_or_init(|| built))
    }
}

/// How a request authenticates. Values are secrets: `Debug` never shows them.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer …`.
    Bearer(String),
    /// A named header holding the key (`x-api-key`, `x-goog-api-key`).
    Header(&'static str, String),
    /// Headers a [`Signer`] makes from the exact URL and body bytes (AWS SigV4 or a Bedrock
    /// API key: the Bedrock wire's signer).
    Signed(Arc<dyn Signer>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Bearer(_) => f.write_str("Auth::Bearer(<redacted>)"),
            Auth::Header(name, _) => write!(f, "Auth::Header({name}, <redacted>)"),
            Auth::Signed(signer) => write!(f, "Auth::Signed({signer:?})"),
        }
    }
}

/// Signs the requests of a provider that wants more than a key sent as is (AWS SigV4): a wire
/// plugs in its own scheme, so this crate names none. `Debug` shows no secret.
#[async_trait::async_trait]
pub trait Signer: fmt::Debug + Send + Sync {
    /// The headers of a POST of the JSON `body` to `url` (already percent-encoded, as it goes
    /// on the wire), in order, `content-type` among them, a secret's value marked sensitive.
    /// They are the request's own: the transport adds neither `content-type` nor `accept` (a
    /// signed stream is not SSE: AWS frames it as an event stream), only the wire's extra
    /// headers after them. An error is one line naming what failed (never a secret).
    async fn headers(
        &self,
        url: &str,
        body: &[u8],
    ) -> Result<Vec<(String, http::HeaderValue)>, TransportError>;

    /// The account the credential stands for (`native::account_of`) when it names
    /// one for good (a key), `None` for credentials that rotate.
    fn account(&self) -> Option<String> {
        None
    }
}

impl ChatTransport {
    /// POSTs the body of `request` (encoded by the wire named `wire`) to `url` as [`Self::post`]
    /// does, logging where it goes and how big it is (its bytes only at trace level).
    pub async fn send_request(
        &self,
        wire: &str,
        url: &str,
        request: &Outgoing,
        auth: Option<&Auth>,
        headers: &[(&'static str, String)],
    ) -> Result<reqwest::Response, TransportError> {
        tracing::debug!(url = %url, stream = request.stream, bytes = request.body.len(), "sending {wire} request");
        tracing::trace!(body = %String::from_utf8_lossy(&request.body), "{wire} request body");
        self.post(url, request.body.clone(), request.stream, auth, headers)
            .await
    }

    /// POSTs a JSON `body` to `url` with `auth` and extra `headers`, within the time-to-first-byte
    /// limit; a redirect not followed and a non-success status become typed errors (the error
    /// body read up to its cap). Every wire sends through here.
    pub(crate) async fn post(
        &self,
        url: &str,
        body: Vec<u8>,
        stream: bool,
        auth: Option<&Auth>,
        headers: &[(&'static str, String)],
    ) -> Result<reqwest::Response, TransportError> {
        let mut builder = self.client()?.post(url);
        match auth {
            // A signed request's headers are the signer's (an AWS stream is event-stream
            // framed, not SSE).
            Some(Auth::Signed(signer)) => {
                for (name, value) in signer.headers(url, &body).await? {
                    builder = builder.header(name, value);
                }
            }
            _ => {
                if stream {
                    builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
                }
                builder = builder.header(reqwest::header::CONTENT_TYPE, "application/json");
            }
        }
        builder = builder.body(body);
        match auth {
            Some(Auth::Bearer(key)) => builder = builder.bearer_auth(key),
            Some(Auth::Header(name, key)) => {
                let mut value = reqwest::header::HeaderValue::from_str(key).map_err(|_| {
                    TransportError::Request(format!(
                        "the key for the {name} header holds characters a header cannot carry"
                    ))
                })?;
                value.set_sensitive(true);
                builder = builder.header(*name, value);
            }
            Some(Auth::Signed(_)) | None => {}
        }
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
        let first_byte = self.waits.first_byte;
        let response = tokio::time::timeout(first_byte, builder.send())
            .await
            .map_err(|_| TransportError::Timeout {
                wait: Wait::FirstByte,
                detail: format!(
                    "no response within {} s (the time-to-first-byte limit, [limits] first_byte)",
                    first_byte.as_secs_f64()
                ),
            })?
            .map_err(map_reqwest)?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(|l| {
                    // A relative Location is resolved against the URL that answered.
                    response
                        .url()
                        .join(l)
                        .map_or_else(|_| l.to_owned(), |u| u.to_string())
                })
                .unwrap_or_else(|| "(none)".to_owned());
            tracing::warn!(status = status.as_u16(), location = %location, "redirect not followed");
            return Err(TransportError::Redirect {
                status: status.as_u16(),
                location,
            });
        }
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            // A provider may echo the key it refused: it goes no further than here.
            let body = without_key(read_error_body(response).await?, auth);
            tracing::debug!(status = status.as_u16(), body = %snippet(&body), "request refused");
            return Err(TransportError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        Ok(response)
    }
}

/// `body` with the request's key or token (bearer, or a key header) replaced by `[redacted]`,
/// for providers that echo the key they refused ("Incorrect API key provided: sk-…"), and so is
/// a masked echo of it ([`without_masked_key`]).
fn without_key(body: String, auth: Option<&Auth>) -> String {
    let key = match auth {
        Some(Auth::Bearer(key) | Auth::Header(_, key)) => key.as_str(),
        Some(Auth::Signed(_)) | None => return body,
    };
    if key.trim().is_empty() {
        return body;
    }
    let body = if body.contains(key) {
        body.replace(key, "[redacted]")
    } else {
        body
    };
    without_masked_key(body, key)
}

/// `body` with every masked echo of `key` replaced by `[redacted]`: a token (a run of
/// characters up to whitespace or a quote) that ends with the key's last four characters
/// after a mask — three or more of `*`, `•`, `.`, or an ellipsis `…` — as OpenAI writes a
/// refused key (`sk-proj-****…wxyz`). A tail alone is a quarter of nothing, but with the
/// prefix it names the key; neither belongs in what a client or a log sees. Keys shorter than
/// 8 characters are left alone (their tail would match ordinary text).
fn without_masked_key(body: String, key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 8 {
        return body;
    }
    let tail: String = chars[chars.len() - 4..].iter().collect();
    if !body.contains(&tail) {
        return body;
    }
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ',' | ':' | '(' | ')');
    let mut out = String::with_capacity(body.len());
    let mut rest = body.as_str();
    while let Some(at) = rest.find(&tail) {
        let (before, after) = rest.split_at(at);
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| ends(*c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let token = &before[start..];
        let masks = token
            .chars()
            .filter(|c| matches!(c, '*' | '•' | '.'))
            .count();
        let masked = masks >= 3 || token.contains('…');
        out.push_str(if masked { &before[..start] } else { before });
        out.push_str(if masked { "[redacted]" } else { &tail });
        rest = &after[tail.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod masked {
    use super::without_masked_key;

    const KEY: &str = "sk-proj-abcdefghijklmnopwxyz";

    /// The forms a provider echoes a refused key in: nothing of the masked token is left, and
    /// the same four characters elsewhere are ordinary text.
    #[test]
    fn a_masked_echo_of_the_key_is_redacted_and_nothing_else() {
        for (body, expected) in [
            (
                r#"{"error":{"message":"Incorrect API key provided: sk-proj-********************wxyz. You can find your API key at https://platform.openai.com."}}"#,
                r#"{"error":{"message":"Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com."}}"#,
            ),
            ("invalid key …wxyz", "invalid key [redacted]"),
            ("key sk-…wxyz refused", "key [redacted] refused"),
            ("key ••••wxyz", "key [redacted]"),
            (
                "the word wxyz and x.wxyz stay",
                "the word wxyz and x.wxyz stay",
            ),
        ] {
            assert_eq!(without_masked_key(body.to_owned(), KEY), expected, "{body}");
        }
        assert_eq!(
            without_masked_key("…wxyz".to_owned(), "short"),
            "…wxyz",
            "a short key is left alone"
        );
    }
}
