//! Running one turn, the same for every door: the body parsed off the reactor when it is large,
//! the session a request names, what makes it idempotent, then one engine call — [`complete`]
//! for a whole answer (503 when the drain bound cuts it), [`stream_reply`] for a streamed one
//! (the first event decides the HTTP status, then `sse.rs` runs the stream) — and the reply
//! named with its session ([`with_session`]).

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use hermes_engine::{Completion, Event, Request};

use crate::body::ClientTurn;
use crate::error::{ApiError, shutting_down};
use crate::{Door, Inner, SESSION_HEADER, limits, metrics, model, policy, sse};

/// `pub(crate) async fn $name`: a door's axum handler for a gated turn (`POST` behind
/// [`crate::gate::gated`]): `$turn(&inner, &headers, gated)`, its error answered by `$error`
/// in the door's shape.
macro_rules! gated_handler {
    ($name:ident => $turn:ident, $error:path) => {
        pub(crate) async fn $name(
            axum::extract::State(inner): axum::extract::State<std::sync::Arc<crate::Inner>>,
            headers: axum::http::HeaderMap,
            gated: crate::gate::Gated,
        ) -> axum::response::Response {
            $turn(&inner, &headers, gated).await.unwrap_or_else($error)
        }
    };
}
pub(crate) use gated_handler;

/// Bodies larger than this are parsed on the blocking pool, off the reactor: a 32 MiB history
/// takes long enough to read that the small requests beside it would wait behind it.
const OFF_REACTOR_BYTES: usize = 256 * 1024;

/// `parse(body)`, on the blocking pool when the body is larger than [`OFF_REACTOR_BYTES`].
pub(crate) async fn off_reactor<T: Send + 'static>(
    body: &axum::body::Bytes,
    parse: fn(&[u8]) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    if body.len() <= OFF_REACTOR_BYTES {
        return parse(body);
    }
    let body = body.clone();
    tokio::task::spawn_blocking(move || parse(&body))
        .await
        .map_err(|e| ApiError::from_engine(&hermes_engine::EngineError::Failed(e.to_string())))?
}

/// What a turn of `door` asks of its tenant's policy: `turn` resolved to `choice`, continuing
/// `session` when named, defining the server tools `server_tools`; no `anthropic-beta` (the
/// Messages door adds its own).
pub(crate) fn asked(
    door: Door,
    choice: &hermes_engine::Choice,
    turn: &ClientTurn,
    session: Option<&str>,
    server_tools: Vec<String>,
) -> policy::Asked<'static> {
    let (max_tokens_key, partition_key) = door.policy_keys();
    policy::Asked {
        target: target_of(choice),
        betas: &[],
        server_tools,
        max_tokens: turn.sampling.max_tokens.map(|n| (n, max_tokens_key)),
        partitioned: turn.partition.is_some() || session.is_some(),
        partition_key,
    }
}

/// The session `X-Hermes-Session` names, if any (checked like a model segment).
pub(crate) fn session_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    v.to_str()
        .ok()
        .filter(|s| model::check(s).is_ok() && !s.contains('/'))
        .map(|s| Some(s.to_owned()))
        .ok_or_else(|| {
            ApiError::invalid(
                SESSION_HEADER,
                "X-Hermes-Session must be a session id (letters, digits, - _ . : @ +)",
            )
        })
}

/// The `provider/model` a choice names, for the policy's model patterns.
pub(crate) fn target_of(choice: &hermes_engine::Choice) -> String {
    format!(
        "{}/{}",
        choice.provider.as_deref().unwrap_or_default(),
        choice.model.as_deref().unwrap_or_default()
    )
}

/// The client's idempotency key header (IETF draft "The Idempotency-Key HTTP Header Field";
/// the OpenAI and Anthropic SDKs send it where a caller sets one).
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// [`idempotency_of`] a turn of `door` placed by the session header (`session`) and its partition
/// (which a header may name).
pub(crate) fn turn_idempotency(
    headers: &HeaderMap,
    door: &str,
    session: Option<&str>,
    turn: &ClientTurn,
    body: &[u8],
) -> Result<hermes_engine::Idempotency, ApiError> {
    idempotency_of(headers, door, &[session, turn.partition.as_deref()], body)
}

/// What makes a turn of `door` idempotent: the client's `Idempotency-Key`, and a digest of the
/// body with what outside it places the request (`places`: the session header, a partition from
/// a header), so the same bytes from two conversations are two requests.
pub(crate) fn idempotency_of(
    headers: &HeaderMap,
    door: &str,
    places: &[Option<&str>],
    body: &[u8],
) -> Result<hermes_engine::Idempotency, ApiError> {
    let key = match headers.get(IDEMPOTENCY_KEY) {
        Some(value) => Some(value.to_str().map_err(|_| {
            ApiError::invalid(
                "Idempotency-Key",
                "the header must be visible ASCII characters",
            )
        })?),
        None => None,
    };
    let mut scope = door.to_owned();
    for place in places {
        scope.push('\0');
        scope.push_str(place.unwrap_or_default());
    }
    hermes_engine::Idempotency::new(&scope, body, key).map_err(|e| ApiError::from_engine(&e))
}

/// One whole turn, answered 503 when the drain bound cuts it; its engine events go to
/// `recorder`.
pub(crate) async fn complete(
    inner: &Inner,
    request: Request,
    recorder: &metrics::Turn,
) -> Result<Completion, ApiError> {
    // On a task of its own: a client that hangs up before the answer still leaves the turn
    // stored (its reply is paid for), and its retry finds it.
    let mut events = inner.engine.spawn(request);
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Event::Driver(event)) => recorder.record(&event),
                Some(Event::Done(completion)) => {
                    recorder.done(&completion.session);
                    return Ok(completion);
                }
                Some(Event::Failed(error)) => return Err(ApiError::from_engine(&error)),
                None => return Err(ApiError::from_engine(&hermes_engine::EngineError::Failed(
                    "the turn ended without an answer".into(),
                ))),
                Some(_) => {}
            },
            () = inner.cut() => return Err(shutting_down()),
        }
    }
}

/// `response` naming `session` in the `X-Hermes-Session` header.
pub(crate) fn with_session(mut response: Response, session: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(session) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(SESSION_HEADER), value);
    }
    response
}

/// Waits a little for a stream's first event, so a request refused before anything streams
/// gets its HTTP status; past that, the stream starts (keep-alives flow) and failures go
/// in-stream. Events only for the metrics (an upstream request ended, carriers counted, a fleet
/// verdict) are recorded and do not start the stream.
async fn first_event(
    inner: &Inner,
    events: &mut hermes_engine::Events,
    recorder: &metrics::Turn,
) -> Result<Option<Event>, ApiError> {
    let deadline = tokio::time::Instant::now() + inner.config.keep_alive;
    loop {
        tokio::select! {
            first = tokio::time::timeout_at(deadline, events.next()) => match first {
                Ok(Some(Event::Failed(error))) => return Err(ApiError::from_engine(&error)),
                Ok(Some(Event::Driver(event))) => {
                    recorder.record(&event);
                    if !metrics::only_recorded(&event) {
                        return Ok(Some(Event::Driver(event)));
                    }
                }
                Ok(first) => return Ok(first),
                Err(_) => return Ok(None),
            },
            () = inner.cut() => return Err(shutting_down()),
        }
    }
}

/// Streams `request` to the client through `door` (its API's SSE): the first event decides the
/// HTTP status ([`first_event`]), then the stream runs under the keep-alive and the shutdown
/// cut, holding the tenant's admission to its end.
pub(crate) async fn stream_reply<D: sse::StreamDoor>(
    inner: &Inner,
    request: hermes_engine::Request,
    door: D,
    recorder: metrics::Turn,
    admitted: limits::Admitted,
) -> Result<Response, ApiError> {
    let mut events = inner.engine.stream(request);
    let first = first_event(inner, &mut events, &recorder).await?;
    let settings = sse::Settings {
        keep_alive: inner.config.keep_alive,
        cut: inner.cut.subscribe(),
        recorder,
        admitted,
    };
    Ok(sse::streamed(door, events, first, settings))
}
