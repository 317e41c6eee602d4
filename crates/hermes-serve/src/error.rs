//! Errors in OpenAI's error shape (`{"error":{"message","type","param","code"}}`) or, at the
//! Messages door, Anthropic's (`{"type":"error","error":{"type","message"}}`), and the one
//! mapping of an engine failure to an HTTP status.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hermes_engine::{EngineError, ErrorKind};
use serde_json::{Value, json};

/// The `Retry-After` of a 503 ([`ApiError::unavailable`]): the store is usually back within a
/// second or two of a restart or failover, and a client that waits longer only waits.
pub const RETRY_UNAVAILABLE: Duration = Duration::from_secs(1);

/// An error answer: status, OpenAI's error object, and a `Retry-After` when known.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What was wrong, in words.
    pub message: String,
    /// OpenAI's `type` (`invalid_request_error`, `authentication_error`, …).
    pub kind: &'static str,
    /// The parameter at fault, when one is.
    pub param: Option<String>,
    /// A code (the upstream's, when it gave one).
    pub code: Option<String>,
    /// How long the client should wait before retrying (429).
    pub retry_after: Option<Duration>,
    /// `x-should-retry` (which the official OpenAI and Anthropic SDKs obey over their own
    /// choice): `Some(false)` for a failure no retry can mend, such as the gateway's own
    /// missing upstream key.
    pub should_retry: Option<bool>,
    /// The window a 429 refused in (`requests_per_minute`, `tokens_per_minute`,
    /// `tokens_per_day`): sent as the headers the door's SDKs read ([`RateWindow`]).
    pub window: Option<Box<RateWindow>>,
}

/// What a rate limit counts, as the rate-limit headers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Requests (`requests_per_minute`).
    Requests,
    /// Tokens (`tokens_per_minute`, `tokens_per_day`).
    Tokens,
}

/// A rate limit's window, for a 429's headers: OpenAI's `x-ratelimit-limit-{requests,tokens}`,
/// `x-ratelimit-remaining-…` and `x-ratelimit-reset-…` (a duration such as `6m0s`) on the chat
/// door (OpenAI's "Rate limits" guide, "Rate limits in headers"); Anthropic's
/// `anthropic-ratelimit-{requests,tokens}-limit`, `-remaining` and `-reset` (an RFC 3339 time)
/// on the Messages door (Anthropic's "Rate limits" page, "Response headers").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateWindow {
    /// What is counted.
    pub counted: Counted,
    /// The limit.
    pub limit: u64,
    /// What is left of it.
    pub remaining: u64,
    /// How long until the window ends.
    pub reset: Duration,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code: None,
            retry_after: None,
            should_retry: None,
            window: None,
        }
    }

    /// 403: the tenant's policy does not allow what the request asks for (a model, a beta, a
    /// server tool, a `max_tokens`); `param` names the part of the request.
    pub fn forbidden(param: &str, message: impl Into<String>) -> Self {
        ApiError {
            param: Some(param.to_owned()),
            code: Some("not_allowed".to_owned()),
            ..ApiError::new(StatusCode::FORBIDDEN, "permission_error", message)
        }
    }

    /// 408: the request body did not arrive within the gateway's body-read deadline.
    pub fn body_timeout(deadline: Duration) -> Self {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            format!(
                "the request body did not arrive within {} ms (the gateway's body_read_timeout)",
                deadline.as_millis()
            ),
        )
    }

    /// 500: something went wrong inside the gateway. The answer says only that, and that the
    /// gateway's logs hold the reason under the answer's request id (`x-request-id`); `why`,
    /// which may name files or settings, goes to that log line alone (`access::internal`).
    pub fn internal(why: impl Into<String>) -> Self {
        crate::access::internal(why.into());
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "internal error: the gateway's logs hold the reason under this answer's request id (the x-request-id header)",
        )
    }

    /// 400: parameter `param` is invalid.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        ApiError {
            param: Some(param.to_owned()),
            ..ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
        }
    }

    /// 400: the required parameter `param` is missing.
    pub(crate) fn required(param: &str) -> Self {
        ApiError::invalid(param, format!("`{param}` is required"))
    }

    /// 502: the upstream answered, but not with what the request needs (a compaction whose
    /// model wrote no summary).
    pub fn bad_gateway(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_GATEWAY, "api_error", message)
    }

    /// 415: the body comes in a `Content-Encoding` the gateway does not decode.
    pub fn unsupported_encoding(message: &str) -> Self {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            message,
        )
    }

    /// 426: the request asked to switch protocols (a WebSocket) where the gateway serves HTTP.
    pub fn upgrade_required(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "invalid_request_error",
            message,
        )
    }

    /// 401: no gateway key, or one no tenant owns.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError {
            code: Some("invalid_api_key".to_owned()),
            ..ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
        }
    }

    /// 404: no such model.
    pub fn unknown_model(model: &str) -> Self {
        ApiError {
            param: Some("model".to_owned()),
            code: Some("model_not_found".to_owned()),
            ..ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found_error",
                format!(
                    "the model `{model}` does not exist: name it `provider/model` (a provider id \
                     of `hermes providers`) or an alias or pattern of [serve.models]; GET /v1/models lists them"
                ),
            )
        }
    }

    /// 404: no route serves the path.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            code: Some("unknown_route".to_owned()),
            ..ApiError::new(StatusCode::NOT_FOUND, "not_found_error", message)
        }
    }

    /// 405: the route does not take the method.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError {
            code: Some("method_not_allowed".to_owned()),
            ..ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_request_error",
                message,
            )
        }
    }

    /// 413: the body is over the cap.
    pub fn too_large(cap: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the request body is over the gateway's limit of {cap} bytes"),
        )
    }

    /// 429: the tenant is over one of its limits (`[serve]` `requests_per_minute`,
    /// `max_concurrent`); try again after `retry_after`.
    pub fn rate_limited(message: impl Into<String>, retry_after: Duration) -> Self {
        ApiError {
            code: Some("rate_limit_exceeded".to_owned()),
            retry_after: Some(retry_after),
            ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", message)
        }
    }

    /// 503: something the gateway needs is not answering (the store, or the gateway itself
    /// shutting down); nothing half-done was stored, so the client may retry the same request
    /// after [`RETRY_UNAVAILABLE`] (`Retry-After`), here or on another replica. `api_error` in
    /// either door's shape: the official OpenAI and Anthropic SDKs retry every 5xx whatever its
    /// type, honouring `Retry-After`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(RETRY_UNAVAILABLE),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "api_error", message)
        }
    }

    /// The JSON body: `{"error":{...}}`.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }

    /// The JSON body in Anthropic's shape: `{"type":"error","error":{"type","message"}}`, the
    /// type Anthropic uses for the status.
    pub fn anthropic_body(&self) -> Value {
        let kind = match self.status.as_u16() {
            400 | 405 | 409 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            408 => "timeout_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            504 => "timeout_error",
            529 => "overloaded_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": self.message}})
    }

    /// The answer in Anthropic's shape (the Messages door), `Retry-After` kept.
    pub fn into_anthropic_response(self) -> Response {
        let body = self.anthropic_body();
        self.respond_in_window(body, |window| {
            let reset = std::time::SystemTime::now() + window.reset;
            let reset = humantime::format_rfc3339_seconds(reset).to_string();
            rate_headers(
                window,
                |kind, what| format!("anthropic-ratelimit-{kind}-{what}"),
                reset,
            )
        })
    }

    /// The answer to an engine failure: 400 for an invalid request (naming the parameter) and
    /// for the upstream's deterministic 4xx (with its code and message); 404 for an unknown
    /// session or provider; 409 while another request drives the session; 429 passed on with
    /// `Retry-After`; 500 when the gateway's own upstream credentials are missing (found before
    /// anything goes upstream: the message names the variable to set, never a value, and
    /// `x-should-retry: false` spares the client's retries); 502 for an upstream failure,
    /// including its 401/403 (the gateway's credentials, never the client's); 503 with
    /// `Retry-After` when the store is unavailable ([`ErrorKind::StoreUnavailable`]); 504 when a
    /// bounded wait ran out.
    pub fn from_engine(error: &EngineError) -> Self {
        let text = error.to_string();
        match error.kind() {
            ErrorKind::InvalidParameter { parameter } => ApiError::invalid(parameter, text),
            ErrorKind::Usage => match error {
                EngineError::UnknownProvider(_) => ApiError {
                    param: Some("model".to_owned()),
                    code: Some("model_not_found".to_owned()),
                    ..ApiError::new(StatusCode::NOT_FOUND, "not_found_error", text)
                },
                _ => ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", text),
            },
            ErrorKind::NotFound { .. } => ApiError {
                code: Some("session_not_found".to_owned()),
                ..ApiError::new(StatusCode::NOT_FOUND, "not_found_error", text)
            },
            ErrorKind::Busy => ApiError::new(StatusCode::CONFLICT, "conflict_error", text),
            // Missing here (the variable unset on the gateway's host, no AWS credentials):
            // the gateway's own configuration, found before anything went upstream.
            ErrorKind::Credentials { var }
                if matches!(error, EngineError::Credentials { status: None, .. }) =>
            {
                let message = match var {
                    // The engine's own words name the variable (and any alternative to it).
                    Some(_) => format!(
                        "the gateway has no upstream key for this model ({text}): its operator \
                         must set it where the gateway runs; nothing was sent upstream"
                    ),
                    None => format!(
                        "the gateway has no upstream credentials for this model ({text}): its \
                         operator must supply them where the gateway runs; nothing was sent \
                         upstream"
                    ),
                };
                ApiError {
                    code: Some("upstream_credentials_missing".to_owned()),
                    should_retry: Some(false),
                    ..ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "api_error", message)
                }
            }
            ErrorKind::Credentials { .. } => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                format!("the upstream refused the gateway's credentials: {text}"),
            ),
            ErrorKind::Timeout { .. } => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "timeout_error", text)
            }
            ErrorKind::Upstream { status, body } => upstream(status, body, retry_after(error)),
            ErrorKind::Unavailable => {
                ApiError::new(StatusCode::BAD_GATEWAY, "upstream_error", text)
            }
            ErrorKind::StoreUnavailable => {
                tracing::warn!(error = %text, "the store is unavailable");
                ApiError::unavailable(
                    "the gateway's store is unavailable; nothing of this request was stored, \
                     retry it",
                )
            }
            _ => ApiError::internal(text),
        }
    }
}

/// The `Retry-After` an upstream's refusal carried.
fn retry_after(error: &EngineError) -> Option<Duration> {
    match error {
        EngineError::Driver(e) => e.transport().and_then(|t| t.retry_after()),
        EngineError::Transport(t) => t.retry_after(),
        _ => None,
    }
}

/// An upstream's refusal: its message and code when its body is an error object.
fn upstream(status: Option<u16>, body: &str, retry_after: Option<Duration>) -> ApiError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().map(|v| v.get("error").unwrap_or(v));
    let message = error
        .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_owned))
        .or_else(|| error.and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(2000).collect());
    let code = error
        .and_then(|e| e.get("code").or_else(|| e.get("type")))
        .and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
    let param = error
        .and_then(|e| e.get("param").and_then(Value::as_str))
        .map(str::to_owned);
    match status {
        Some(429) => ApiError {
            code,
            retry_after,
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!("the upstream is rate limiting: {message}"),
            )
        },
        Some(408) => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout_error",
            format!("the upstream timed out: {message}"),
        ),
        Some(401 | 403) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("the upstream refused the gateway's credentials: {message}"),
        ),
        Some(s) if (400..500).contains(&s) => ApiError {
            code,
            param,
            ..ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
        },
        Some(s) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("the upstream failed (HTTP {s}): {message}"),
        ),
        None => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("the upstream failed: {message}"),
        ),
    }
}

impl ApiError {
    /// `body` with the status and `Retry-After`.
    /// [`ApiError::respond`], with the headers `headers` makes of the window a 429 refused in
    /// (when it names one).
    fn respond_in_window(
        mut self,
        body: Value,
        headers: impl FnOnce(&RateWindow) -> [(String, String); 3],
    ) -> Response {
        let window = self.window.take();
        let mut response = self.respond(body);
        if let Some(window) = window {
            set_headers(&mut response, headers(&window));
        }
        response
    }

    fn respond(self, body: Value) -> Response {
        let mut response = (self.status, axum::Json(body)).into_response();
        response
            .extensions_mut()
            .insert(crate::access::Reason(self.message.clone()));

        if let Some(wait) = self.retry_after
            && let Ok(value) =
                HeaderValue::from_str(&wait.as_secs_f64().ceil().max(1.0).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if let Some(retry) = self.should_retry {
            response.headers_mut().insert(
                header::HeaderName::from_static("x-should-retry"),
                HeaderValue::from_static(if retry { "true" } else { "false" }),
            );
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        self.respond_in_window(body, |window| {
            rate_headers(
                window,
                |kind, what| format!("x-ratelimit-{what}-{kind}"),
                go_duration(window.reset),
            )
        })
    }
}

impl Counted {
    /// Its word in the headers: `requests`, `tokens`.
    fn as_str(self) -> &'static str {
        match self {
            Counted::Requests => "requests",
            Counted::Tokens => "tokens",
        }
    }
}

/// Sets each `(name, value)` header on `response`.
/// A window's rate-limit headers: its limit, what is left of it and `reset` (when it ends, in
/// the door's form), each named by `name` from what is counted and the header's word (`limit`,
/// `remaining`, `reset`).
fn rate_headers(
    window: &RateWindow,
    name: fn(&str, &str) -> String,
    reset: String,
) -> [(String, String); 3] {
    let kind = window.counted.as_str();
    [
        (name(kind, "limit"), window.limit.to_string()),
        (name(kind, "remaining"), window.remaining.to_string()),
        (name(kind, "reset"), reset),
    ]
}

fn set_headers<const N: usize>(response: &mut Response, headers: [(String, String); N]) {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::try_from(name),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
}

/// A wait in OpenAI's header form (Go's duration text, whole seconds rounded up): `59s`,
/// `6m0s`, `1h0m0s`.
fn go_duration(wait: Duration) -> String {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

/// The answer of a request cut by shutdown.
pub(crate) fn shutting_down() -> ApiError {
    ApiError::unavailable("the gateway is shutting down; nothing half-done was stored")
}

/// Whether a request speaks Anthropic's dialect: a Messages path, or the `anthropic-version`
/// header Anthropic's clients send on every request.
pub(crate) fn speaks_anthropic(path: &str, headers: &HeaderMap) -> bool {
    path.starts_with("/v1/messages") || headers.contains_key("anthropic-version")
}

/// An error in the shape of the door the request came to.
pub(crate) fn in_door_shape(error: ApiError, path: &str, headers: &HeaderMap) -> Response {
    if speaks_anthropic(path, headers) {
        error.into_anthropic_response()
    } else {
        error.into_response()
    }
}

#[cfg(test)]
mod internal {
    use super::ApiError;

    #[test]
    fn a_token_reset_is_written_as_openai_writes_it() {
        use std::time::Duration;
        assert_eq!(super::go_duration(Duration::from_millis(200)), "1s");
        assert_eq!(super::go_duration(Duration::from_secs(59)), "59s");
        assert_eq!(super::go_duration(Duration::from_secs(360)), "6m0s");
        assert_eq!(super::go_duration(Duration::from_secs(3725)), "1h2m5s");
    }

    /// An internal failure's own text (a path, a setting) never reaches the answer, which says
    /// where to look.
    #[test]
    fn an_internal_error_answers_with_no_detail() {
        let error = ApiError::from_engine(&hermes_engine::EngineError::Failed(
            "cannot open /home/op/.hermes/hermes.db: permission denied".into(),
        ));
        assert_eq!(error.status.as_u16(), 500);
        assert!(!error.message.contains("/home/op"), "{}", error.message);
        assert!(error.message.contains("x-request-id"), "{}", error.message);
    }
}
