//! hermes-serve: the gateway. OpenAI chat-completions over HTTP (`POST /v1/chat/completions`,
//! whole and streamed as SSE), OpenAI Responses (`POST /v1/responses`, whole and streamed),
//! Anthropic Messages (`POST /v1/messages`, whole and streamed;
//! `POST /v1/messages/count_tokens`), `GET /v1/models`, `GET /healthz` and `GET /readyz`, on axum,
//! over [`hermes_engine`] only: every request is one [`Engine::complete`] or
//! [`Engine::stream`] call, the client's tools go upstream as the client defined them and are
//! never run here, and the store is reached only through the engine.
//!
//! Gateway keys are checked per request through [`Keys`] ([`StoreKeys`]: the store's, a key's
//! last use recorded coarsely); [`Auth::None`] serves loopback addresses only. Turns are
//! admitted under each tenant's [`Limits`] (requests per minute, requests at once, tokens per
//! minute and per day; on by default), counted in the store every replica shares, and judged by
//! its [`Policy`] (models, betas, server tools, a `max_tokens` cap, a required partition),
//! before anything reaches an upstream.

mod access;
mod anthropic;
mod body;
mod error;
mod gate;
mod keys;
mod limits;
mod metrics;
pub mod model;
mod openai;
mod policy;
mod responses;
mod sign;
mod span;
mod sse;
pub mod tls;

use std::collections::BTreeMap;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_core::Role;
use hermes_core::driver::DriverEvent;
use hermes_engine::{Completion, Engine, Event, Request};
use serde_json::{Value, json};

pub use error::{ApiError, Counted, RETRY_UNAVAILABLE, RateWindow};
pub use keys::StoreKeys;
pub use limits::{Limits, TenantLimits};
pub use policy::{DEFAULT_MAX_TOKENS, Policy, TenantPolicy};

/// The header that names (in a request) and reports (in a response) the stored session.
pub const SESSION_HEADER: &str = "x-hermes-session";

/// The default cap of a request body: 32 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

/// The default body-read deadline: a request body must have arrived 30 s after the gateway
/// starts reading it (408 otherwise).
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default address of `hermes serve`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8642";

/// Why a gateway key lookup failed (the store did not answer, …).
pub type KeysError = Box<dyn std::error::Error + Send + Sync>;

/// Who owns a gateway key: called once per request with the bearer token, before anything
/// reaches an upstream. `Ok(None)` is a key nobody owns (401).
#[async_trait::async_trait]
pub trait Keys: Send + Sync {
    /// The tenant that owns `bearer`, if any.
    async fn tenant(&self, bearer: &str) -> Result<Option<String>, KeysError>;
}

/// How requests authenticate.
#[derive(Clone)]
pub enum Auth {
    /// A gateway key (`Authorization: Bearer …`) that [`Keys`] knows.
    Keys(Arc<dyn Keys>),
    /// None: every request is the tenant `local`. [`Gateway::serve`] refuses it on an address
    /// that is not loopback.
    None,
}

/// The gateway's own settings (`[serve]` in config.toml).
#[derive(Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// How requests authenticate.
    pub auth: Auth,
    /// The largest request body, in bytes (413 above it, before it is parsed).
    pub max_request_bytes: usize,
    /// Per-tenant limits on turns ([`TenantLimits::DEFAULT`] by default).
    pub limits: Limits,
    /// Per-tenant policy: models, betas, server tools, `max_tokens`, partitions.
    pub policy: Policy,
    /// How long a request body may take to arrive once the gateway reads it (408 after).
    pub body_read_timeout: Duration,
    /// How long a tenant's conversation is kept after its last update (`[serve] retention`):
    /// while serving, older ones are deleted in the background. `None` (the default): kept.
    pub retention: Option<Duration>,
    /// Model aliases (`[serve.models]`): a name clients use → `provider/model`; a key with
    /// `*` is a pattern (`claude-*`), exact names win ([`model::target_of`]).
    pub models: BTreeMap<String, String>,
    /// Each door's default model (`[serve.default_models]`, keyed `chat` / `messages` / `responses`): what a
    /// model name no alias, pattern or `provider/model` names goes to.
    pub default_models: BTreeMap<String, String>,
    /// How often a silent stream sends an SSE comment.
    pub keep_alive: Duration,
    /// After a shutdown signal, how long in-flight requests may go on before they are cut
    /// (a cut stream stores no half-done step).
    pub drain: Duration,
    /// Record metrics and serve them at `GET /metrics` (on by default).
    pub metrics: bool,
    /// The bearer token `GET /metrics` requires (`[serve] metrics_token`); without one the
    /// metrics are open, which [`Gateway::serve`] allows on loopback addresses only (tenant
    /// names are in them).
    pub metrics_token: Option<String>,
}

impl ServeConfig {
    /// Settings with `auth` and the defaults: a 32 MiB body cap read within 30 s, the default
    /// limits ([`TenantLimits::DEFAULT`]) and policy ([`Policy::of`]), no aliases, a keep-alive
    /// every 15 s, 30 s to drain.
    pub fn new(auth: Auth) -> Self {
        ServeConfig {
            auth,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            limits: Limits::default(),
            policy: Policy::default(),
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            retention: None,
            models: BTreeMap::new(),
            default_models: BTreeMap::new(),
            keep_alive: Duration::from_secs(15),
            drain: Duration::from_secs(30),
            metrics: true,
            metrics_token: None,
        }
    }

    hermes_core::setters! {
        /// With this body cap.
        max_request_bytes: usize;
        /// With these limits.
        limits: Limits;
        /// With this policy.
        policy: Policy;
        /// With this body-read deadline.
        body_read_timeout: Duration;
        /// With this retention.
        retention: Option<Duration>;
        /// With these aliases.
        models: BTreeMap<String, String>;
        /// With these default models per door.
        default_models: BTreeMap<String, String>;
        /// With this keep-alive interval.
        keep_alive: Duration;
        /// With this drain bound.
        drain: Duration;
        /// With metrics recorded and served at `GET /metrics`, or not at all.
        metrics: bool;
    }

    /// With `GET /metrics` behind this bearer token (an empty or blank one is none: it would
    /// let every scraper in).
    pub fn metrics_token(mut self, token: Option<String>) -> Self {
        self.metrics_token = token.filter(|t| !t.trim().is_empty());
        self
    }
}

/// The gateway's doors: the APIs clients speak to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Door {
    /// OpenAI chat completions (`POST /v1/chat/completions`).
    Chat,
    /// Anthropic Messages (`POST /v1/messages`, `POST /v1/messages/count_tokens`).
    Messages,
    /// OpenAI Responses (`POST /v1/responses`).
    Responses,
}

impl Door {
    /// Every door, in the order the start line names them.
    pub const ALL: [Door; 3] = [Door::Chat, Door::Messages, Door::Responses];

    /// Its key in `[serve.default_models]` and in logs.
    pub fn key(self) -> &'static str {
        match self {
            Door::Chat => "chat",
            Door::Messages => "messages",
            Door::Responses => "responses",
        }
    }

    /// What it speaks and where, for the start line and `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Door::Chat => "OpenAI chat completions at /v1/chat/completions",
            Door::Messages => "Anthropic Messages at /v1/messages",
            Door::Responses => "OpenAI Responses at /v1/responses",
        }
    }
}

impl ServeConfig {
    /// `door`'s default model, if one is set.
    pub fn default_model(&self, door: Door) -> Option<&str> {
        self.default_models.get(door.key()).map(String::as_str)
    }
}

/// Why the gateway could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Authentication is off and the address is not loopback.
    #[error(
        "refusing to serve without authentication on {0}: --no-auth is for loopback addresses only"
    )]
    NoAuthOffLoopback(SocketAddr),
    /// Metrics without a token and the address is not loopback (tenant names are in them).
    #[error(
        "refusing to serve open metrics on {0}: set `metrics_token` in [serve] of config.toml (GET /metrics then needs `Authorization: Bearer <metrics_token>`), or serve on a loopback address"
    )]
    OpenMetricsOffLoopback(SocketAddr),
    /// The engine has no store to serve from.
    #[error("the engine serves no requests: it has no store (Engine::with_store)")]
    NoStore,
    /// The listener failed.
    #[error("the listener failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The gateway: an engine with a store, and its settings.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    config: ServeConfig,
    /// Set when the drain bound ran out: every request still running ends now.
    cut: tokio::sync::watch::Sender<bool>,
    /// The store's signing key, kept once read (docs/spec.md §10, "Messages-door signatures").
    signing_key: tokio::sync::OnceCell<hermes_engine::store::SigningKey>,
    /// The tenants' limits, when any is set.
    limiter: Option<Arc<limits::Limiter>>,
    /// The metrics, unless they are off.
    metrics: Option<Arc<metrics::Metrics>>,
}

impl Inner {
    /// What `model` names on `door` ([`model::target_of`]: aliases, patterns, `provider/model`,
    /// the door's default), or the door's 404.
    fn resolve(&self, door: Door, model: &str) -> Result<hermes_engine::Choice, ApiError> {
        model::resolve(
            &self.engine,
            &self.config.models,
            self.config.default_model(door),
            model,
        )
    }

    /// The engine's store (the Responses door's kept responses and checkpoints live there).
    fn store(&self) -> Result<&hermes_engine::store::Store, ApiError> {
        self.engine
            .store()
            .ok_or_else(|| ApiError::internal("the gateway has no store"))
    }

    /// What one request of `tenant` records from its engine events.
    fn turn(&self, tenant: &str) -> metrics::Turn {
        metrics::Turn::new(self.metrics.clone(), tenant, self.limiter.clone())
    }

    /// The store's signing key (docs/spec.md §10, "Messages-door signatures"), read once.
    async fn signing_key(&self) -> Result<hermes_engine::store::SigningKey, ApiError> {
        if let Some(key) = self.signing_key.get() {
            return Ok(key.clone());
        }
        // Not through `get_or_try_init`: while the store is away its callers would take turns,
        // each waiting out the pool after the one before failed; each reads for itself instead
        // (the store hands every reader the same key).
        let key = self
            .engine
            .signing_key()
            .await
            .map_err(|e| ApiError::from_engine(&e))?;
        let _ = self.signing_key.set(key.clone());
        Ok(key)
    }

    /// Resolves when the drain bound ran out.
    async fn cut(&self) {
        let mut cut = self.cut.subscribe();
        let _ = cut.wait_for(|c| *c).await;
    }
}

/// `route` behind the gate's layers (`gate.rs`), outermost first: the gateway key, the
/// declared length, the tenant's limits when `limited` (turns; `count_tokens` reaches no
/// upstream), the body under the cap and the deadline.
fn gated(
    state: &Arc<Inner>,
    route: axum::routing::MethodRouter<Arc<Inner>>,
    limited: bool,
) -> axum::routing::MethodRouter<Arc<Inner>> {
    use axum::middleware::from_fn_with_state as layer;
    // The last layer added runs first.
    let route = route
        .route_layer(layer(state.clone(), gate::body))
        .route_layer(gate::decoding());
    let route = if limited {
        route.route_layer(layer(state.clone(), gate::limits))
    } else {
        route
    };
    route
        .route_layer(layer(state.clone(), gate::declared_length))
        .route_layer(layer(state.clone(), gate::auth))
}

/// The answer of a request cut by shutdown.
fn shutting_down() -> ApiError {
    ApiError::unavailable("the gateway is shutting down; nothing half-done was stored")
}

impl Gateway {
    /// A gateway serving requests with `engine` (which must have a store:
    /// [`Engine::with_store`]).
    pub fn new(engine: Engine, config: ServeConfig) -> Result<Self, ServeError> {
        let Some(store) = engine.store() else {
            return Err(ServeError::NoStore);
        };
        let limiter = limits::Limiter::new(store.clone(), config.limits.clone());
        let metrics = config.metrics.then(|| Arc::new(metrics::Metrics::new()));
        Ok(Gateway {
            inner: Arc::new(Inner {
                engine,
                config,
                cut: tokio::sync::watch::channel(false).0,
                signing_key: tokio::sync::OnceCell::new(),
                limiter,
                metrics,
            }),
        })
    }

    /// The routes, with a tracing span per request and, unless metrics are off, `GET /metrics`
    /// and the metrics layer outermost (a request's latency counts from its arrival, time spent
    /// in every other layer included: it must stay the last layer added).
    pub fn router(&self) -> Router {
        let state = &self.inner;
        let router = Router::new()
            .route(
                "/v1/chat/completions",
                gated(state, post(chat_completions), true),
            )
            .route("/v1/messages", gated(state, post(messages), true))
            .route(
                "/v1/responses",
                gated(state, post(responses_turn), true).get(responses_socket),
            )
            .route(
                "/v1/responses/compact",
                gated(state, post(responses_compact), true),
            )
            .route(
                "/v1/messages/count_tokens",
                gated(state, post(count_tokens), false),
            )
            .route(
                "/v1/models",
                get(models).route_layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    gate::auth,
                )),
            )
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(readyz))
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed);
        let Some(recorded) = self.inner.metrics.clone() else {
            return router
                .with_state(self.inner.clone())
                .layer(tower_http::trace::TraceLayer::new_for_http())
                .layer(axum::middleware::from_fn(access::layer));
        };
        router
            .route("/metrics", get(scrape))
            .with_state(self.inner.clone())
            .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(span::request_span))
            .layer(axum::middleware::from_fn(access::layer))
            .layer(axum::middleware::from_fn_with_state(
                recorded,
                metrics::layer,
            ))
    }

    /// Serves on `listener` until `shutdown` resolves; then stops accepting, lets in-flight
    /// requests finish for at most [`ServeConfig::drain`], and cuts the rest: each is
    /// cancelled (its unfinished step is not stored) and answered 503, or, streamed, ended with
    /// an error event. Refuses
    /// [`Auth::None`] on an address that is not loopback.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        self.check_auth(listener.local_addr()?)?;
        use axum::serve::ListenerExt as _;
        self.serve_on(listener.tap_io(|tcp| tls::accepted(tcp)), shutdown)
            .await
    }

    /// [`Gateway::serve`] over TLS with `config` ([`tls::server_config`]).
    pub async fn serve_tls(
        &self,
        listener: tokio::net::TcpListener,
        config: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        self.check_auth(listener.local_addr()?)?;
        self.serve_on(tls::TlsListener::new(listener, config)?, shutdown)
            .await
    }

    /// Refuses [`Auth::None`], and metrics without a token, on an address that is not
    /// loopback.
    fn check_auth(&self, addr: SocketAddr) -> Result<(), ServeError> {
        let config = &self.inner.config;
        if matches!(config.auth, Auth::None) && !addr.ip().is_loopback() {
            return Err(ServeError::NoAuthOffLoopback(addr));
        }
        if config.metrics && config.metrics_token.is_none() && !addr.ip().is_loopback() {
            return Err(ServeError::OpenMetricsOffLoopback(addr));
        }
        Ok(())
    }

    async fn serve_on<L>(
        &self,
        listener: L,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError>
    where
        L: axum::serve::Listener<Addr = SocketAddr>,
    {
        let _retention = self
            .inner
            .config
            .retention
            .map(|age| Retention::start(&self.inner, age));
        let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = axum::serve(listener, self.router())
            .with_graceful_shutdown(async move {
                shutdown.await;
                let _ = stopping.send(());
            })
            .into_future();
        tokio::pin!(server);
        let drain = self.inner.config.drain;
        let bound = async move {
            if stopped.await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(drain).await;
        };
        tokio::select! {
            served = &mut server => return Ok(served?),
            () = bound => {}
        }
        tracing::warn!(
            drain_ms = drain.as_millis() as u64,
            "cutting the requests still running after the drain bound"
        );
        let _ = self.inner.cut.send(true);
        // Cut requests answer at once; a connection that still does not close is left behind.
        match tokio::time::timeout(Duration::from_secs(5), server).await {
            Ok(served) => Ok(served?),
            Err(_) => Ok(()),
        }
    }
}

/// The retention task of a serving gateway (`[serve] retention`): at once, then every quarter of
/// the age (at least every second, at most hourly), deletes every tenant's conversations last
/// updated longer ago than the age. Stops when dropped (when serving ends).
struct Retention(tokio::task::JoinHandle<()>);

impl Retention {
    fn start(inner: &Arc<Inner>, age: Duration) -> Retention {
        let store = inner.engine.store().cloned();
        let every = (age / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600));
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        Retention(tokio::spawn(async move {
            let Some(store) = store else { return };
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                match store.purge_expired(now.saturating_sub(age_ms)).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::info!(deleted, "retention: old conversations deleted"),
                    Err(e) => {
                        tracing::warn!(error = %e, "retention: deleting old conversations failed")
                    }
                }
            }
        }))
    }
}

impl Drop for Retention {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a request speaks Anthropic's dialect: a Messages path, or the `anthropic-version`
/// header Anthropic's clients send on every request.
fn speaks_anthropic(path: &str, headers: &HeaderMap) -> bool {
    path.starts_with("/v1/messages") || headers.contains_key("anthropic-version")
}

/// An error in the shape of the door the request came to.
fn in_door_shape(error: ApiError, path: &str, headers: &HeaderMap) -> Response {
    if speaks_anthropic(path, headers) {
        error.into_anthropic_response()
    } else {
        error.into_response()
    }
}

/// A path no door serves: 404 in the door's JSON error shape, naming the doors.
async fn not_found(uri: axum::http::Uri, headers: HeaderMap) -> Response {
    let doors: Vec<&str> = Door::ALL.iter().map(|d| d.describe()).collect();
    let error = ApiError::not_found(format!(
        "no route {}: this gateway serves {}, and GET /v1/models",
        uri.path(),
        doors.join("; ")
    ));
    in_door_shape(error, uri.path(), &headers)
}

/// A method a route does not take: 405 in the door's JSON error shape.
async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let error = ApiError::method_not_allowed(format!("{} does not take {method}", uri.path()));
    in_door_shape(error, uri.path(), &headers)
}

/// The tenant of a request, or its 401.
async fn authenticate(inner: &Inner, headers: &HeaderMap) -> Result<String, ApiError> {
    let keys = match &inner.config.auth {
        Auth::None => {
            metrics::set_tenant("local");
            access::tenant("local");
            return Ok("local".to_owned());
        }
        Auth::Keys(keys) => keys,
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            ApiError::unauthorized(
                "no gateway key: send `Authorization: Bearer <key>` (or `x-api-key: <key>`)",
            )
        })?;
    match keys.tenant(bearer).await {
        Ok(Some(tenant)) => {
            metrics::set_tenant(&tenant);
            access::tenant(&tenant);
            Ok(tenant)
        }
        Ok(None) => Err(ApiError::unauthorized("the gateway key is not valid")),
        Err(e) => {
            tracing::error!(error = %e, "gateway key lookup failed");
            Err(ApiError::unavailable(
                "the gateway cannot check keys right now",
            ))
        }
    }
}

/// The session `X-Hermes-Session` names, if any (checked like a model segment).
fn session_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
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

/// Bodies larger than this are parsed on the blocking pool, off the reactor: a 32 MiB history
/// takes long enough to read that the small requests beside it would wait behind it.
const OFF_REACTOR_BYTES: usize = 256 * 1024;

/// `parse(body)`, on the blocking pool when the body is larger than [`OFF_REACTOR_BYTES`].
async fn off_reactor<T: Send + 'static>(
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

/// The client's idempotency key header (IETF draft "The Idempotency-Key HTTP Header Field";
/// the OpenAI and Anthropic SDKs send it where a caller sets one).
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// What makes a turn of `door` idempotent: the client's `Idempotency-Key`, and a digest of the
/// body with what outside it places the request (`places`: the session header, a partition from
/// a header), so the same bytes from two conversations are two requests.
fn idempotency_of(
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

/// What the gate (`gate.rs`) let through: the tenant, its admission and the whole body.
type Gated = (
    Extension<gate::Tenant>,
    Extension<limits::Admitted>,
    Extension<gate::Read>,
);

async fn chat_completions(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    gated: Extension<gate::Tenant>,
    admitted: Extension<limits::Admitted>,
    body: Extension<gate::Read>,
) -> Response {
    match chat(&inner, &headers, (gated, admitted, body)).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// The `provider/model` a choice names, for the policy's model patterns.
fn target_of(choice: &hermes_engine::Choice) -> String {
    format!(
        "{}/{}",
        choice.provider.as_deref().unwrap_or_default(),
        choice.model.as_deref().unwrap_or_default()
    )
}

async fn chat(inner: &Inner, headers: &HeaderMap, gated: Gated) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, openai::parse).await?;
    if model::check(&parsed.turn.model).is_ok() {
        access::model(&parsed.turn.model);
    }
    let choice = inner.resolve(Door::Chat, &parsed.turn.model)?;
    let session = session_of(headers)?;
    let turn = parsed.turn;
    inner.config.policy.check(
        &tenant,
        &policy::Asked {
            target: target_of(&choice),
            betas: &[],
            server_tools: policy::chat_server_tools(turn.tools.as_ref()),
            max_tokens: turn.sampling.max_tokens.map(|n| (n, "max_tokens")),
            partitioned: turn.partition.is_some() || session.is_some(),
            partition_key: "user",
        },
    )?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "chat completion");
    let (model, stream) = (turn.model.clone(), turn.stream);
    let recorder = inner.turn(&tenant);
    let idempotency = idempotency_of(headers, "chat", &[session.as_deref()], &body)?;
    let request = turn
        .request(tenant, choice, session)
        .idempotency(Some(idempotency));
    let reply = Reply {
        id: format!("chatcmpl-{}", uuid::Uuid::now_v7().simple()),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model,
        include_usage: parsed.include_usage,
    };
    if !stream {
        return Ok(reply.whole(&complete(inner, request, &recorder).await?));
    }
    let door = OpenAiStream {
        reply,
        started: false,
    };
    stream_reply(inner, request, door, recorder, admitted).await
}

async fn messages(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    tenant: Extension<gate::Tenant>,
    admitted: Extension<limits::Admitted>,
    body: Extension<gate::Read>,
) -> Response {
    match messages_turn(&inner, &headers, (tenant, admitted, body)).await {
        Ok(response) => response,
        Err(error) => error.into_anthropic_response(),
    }
}

/// Claude Code's per-conversation header: the client's partition when no `metadata.user_id`
/// names one (docs/spec.md §10).
const CLAUDE_CODE_SESSION: &str = "x-claude-code-session-id";

/// Anthropic's feature-flag header.
const ANTHROPIC_BETA: &str = "anthropic-beta";

/// `POST /v1/messages`: one turn of an Anthropic Messages client, whole or streamed.
async fn messages_turn(
    inner: &Inner,
    headers: &HeaderMap,
    gated: Gated,
) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, |b| anthropic::parse(b, false)).await?;
    if model::check(&parsed.model).is_ok() {
        access::model(&parsed.model);
    }
    let choice = inner.resolve(Door::Messages, &parsed.model)?;
    let session = session_of(headers)?;
    let mut turn = parsed;
    if turn.partition.is_none() {
        turn.partition = headers
            .get(CLAUDE_CODE_SESSION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
    }
    // Forwarded to Claude upstreams only (the wire decides); each value once.
    turn.passthrough = std::mem::take(&mut turn.passthrough).betas(
        headers
            .get_all(ANTHROPIC_BETA)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    );
    turn.passthrough.version = headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64)
        .map(str::to_owned);
    inner.config.policy.check(
        &tenant,
        &policy::Asked {
            target: target_of(&choice),
            betas: &turn.passthrough.betas,
            server_tools: policy::messages_server_tools(&turn.passthrough),
            max_tokens: turn.sampling.max_tokens.map(|n| (n, "max_tokens")),
            partitioned: turn.partition.is_some() || session.is_some(),
            partition_key: "metadata.user_id",
        },
    )?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "messages");

    let recorder = inner.turn(&tenant);
    let signer = sign::Signer::new(
        inner.signing_key().await?,
        tenant.clone(),
        turn.partition.clone(),
    );
    let vouched = anthropic::vouch(&mut turn.messages, &signer);
    if vouched > 0 {
        tracing::debug!(vouched, "gateway-signed thinking blocks verified");
    }
    let (model, stream) = (turn.model.clone(), turn.stream);
    let idempotency = idempotency_of(
        headers,
        "messages",
        &[session.as_deref(), turn.partition.as_deref()],
        &body,
    )?;
    let request = turn
        .request(tenant.clone(), choice, session)
        .idempotency(Some(idempotency));
    let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    if !stream {
        let completion = complete(inner, request, &recorder).await?;
        let reply = completion
            .messages
            .iter()
            .rfind(|m| m.role == Role::Assistant);
        let mut body = json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": anthropic::content(reply, &signer),
            "stop_reason": anthropic::stop_reason(completion.finish.as_ref()),
            "stop_sequence": null,
            "usage": anthropic::usage(&completion.usage),
            "hermes_session": completion.session,
        });
        if let Some(dropped) = anthropic::transformations(reply) {
            body["input_transformations"] = dropped;
        }
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    let door = anthropic::AnthropicStream::new(id, model, signer);
    stream_reply(inner, request, door, recorder, admitted).await
}

async fn responses_turn(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    tenant: Extension<gate::Tenant>,
    admitted: Extension<limits::Admitted>,
    body: Extension<gate::Read>,
) -> Response {
    match respond(&inner, &headers, (tenant, admitted, body)).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// `GET /v1/responses`: Codex opens its Responses WebSocket here first; 426 sends it to HTTP at
/// once.
async fn responses_socket(headers: HeaderMap) -> Response {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let mut error = if upgrade {
        ApiError::upgrade_required(
            "this gateway serves the Responses API over HTTP only: POST /v1/responses",
        )
    } else {
        ApiError::method_not_allowed("/v1/responses does not take GET")
    };
    error.param = None;
    error.into_response()
}

/// A Responses-door request made ready for the engine: its turn, what it resolved to and the
/// session it continues, the signer of its tenant and partition, and its metrics.
struct Prepared {
    turn: body::ClientTurn,
    choice: hermes_engine::Choice,
    session: Option<String>,
    signer: sign::Signer,
    recorder: metrics::Turn,
    /// What the response repeats of the request.
    echo: responses::Echo,
    /// Whether the input ended with a `compaction_trigger` item.
    trigger: bool,
}

/// What `POST /v1/responses` and `POST /v1/responses/compact` both do with a parsed request:
/// the model resolved and the tenant's policy checked, the client's sealed reasoning items
/// vouched for, its compaction items opened, and the conversation a `previous_response_id`
/// names put before its input.
async fn prepare(
    inner: &Inner,
    tenant: &str,
    headers: &HeaderMap,
    mut parsed: responses::ResponsesRequest,
) -> Result<Prepared, ApiError> {
    if let Some(references) = parsed.referenced.take() {
        let items = referenced(inner, tenant, &references.at).await?;
        parsed.resolve(references, items)?;
    }
    let responses::ResponsesRequest {
        mut turn,
        echo,
        sealed,
        previous_response_id,
        compactions,
        trigger,
        referenced: _,
    } = parsed;
    if model::check(&turn.model).is_ok() {
        access::model(&turn.model);
    }
    let choice = inner.resolve(Door::Responses, &turn.model)?;
    let mut session = session_of(headers)?;
    inner.config.policy.check(
        tenant,
        &policy::Asked {
            target: target_of(&choice),
            betas: &[],
            server_tools: policy::messages_server_tools(&turn.passthrough),
            max_tokens: turn.sampling.max_tokens.map(|n| (n, "max_output_tokens")),
            partitioned: turn.partition.is_some() || session.is_some(),
            partition_key: "user",
        },
    )?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "responses");
    let signer = sign::Signer::new(
        inner.signing_key().await?,
        tenant.to_owned(),
        turn.partition.clone(),
    );
    let vouched = responses::vouch(&mut turn.messages, &sealed, &signer);
    if vouched > 0 {
        tracing::debug!(vouched, "gateway-sealed reasoning items verified");
    }
    if let Some(continued) = checkpoints(inner, &mut turn.messages, &compactions, &signer).await? {
        session = session.or(Some(continued));
    }
    if let Some(id) = &previous_response_id {
        let continued = previous(inner, tenant, id, &mut turn.messages, echo.instructed()).await?;
        session = session.or(Some(continued));
    }
    Ok(Prepared {
        turn,
        choice,
        session,
        signer,
        recorder: inner.turn(tenant),
        echo,
        trigger,
    })
}

/// `POST /v1/responses`: one turn of an OpenAI Responses client, whole or streamed.
async fn respond(inner: &Inner, headers: &HeaderMap, gated: Gated) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, responses::parse).await?;
    let Prepared {
        turn,
        choice,
        session,
        signer,
        recorder,
        echo,
        trigger,
    } = prepare(inner, &tenant, headers, parsed).await?;
    let keeper = match (echo.stored(), inner.engine.store()) {
        (true, Some(store)) => Some(responses::Keeper {
            store: store.clone(),
            tenant: tenant.clone(),
        }),
        _ => None,
    };
    if trigger {
        // Codex's remote compaction: the answer is exactly one compaction item.
        let shape = responses::Shape::new(turn.model.clone(), echo, signer.clone());
        let stream = turn.stream;
        let (item, completion) =
            compaction(inner, turn, &tenant, choice, session, &signer, &recorder).await?;
        if stream {
            let events = responses::whole_stream(&shape, vec![item], &completion);
            let events = futures_util::stream::iter(
                events.into_iter().map(Ok::<_, std::convert::Infallible>),
            );
            return Ok(with_session(
                axum::response::sse::Sse::new(events).into_response(),
                &completion.session,
            ));
        }
        let mut body = shape.object("completed", vec![item], Some(&completion.usage), None, None);
        body["hermes_session"] = json!(completion.session);
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    let idempotency = idempotency_of(
        headers,
        "responses",
        &[session.as_deref(), turn.partition.as_deref()],
        &body,
    )?;
    let shape = responses::Shape::new(turn.model.clone(), echo, signer);
    let stream = turn.stream;
    let request = turn
        .request(tenant, choice, session)
        .idempotency(Some(idempotency));
    if !stream {
        let completion = complete(inner, request, &recorder).await?;
        if let Some(keeper) = &keeper {
            keeper.keep(&shape.id, &completion.session).await;
        }
        let mut body = shape.object(
            "completed",
            shape.output(&completion.messages, 0),
            Some(&completion.usage),
            completion.finish.as_ref(),
            None,
        );
        body["hermes_session"] = json!(completion.session);
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    stream_reply(
        inner,
        request,
        responses::ResponsesStream::new(shape, keeper),
        recorder,
        admitted,
    )
    .await
}

/// Puts before `messages` (after the request's own `instructions`, the first message when
/// `instructed`) the conversation as `tenant`'s response `id` left it — OpenAI's
/// `previous_response_id`: the stored messages up to that response, its leading system message
/// left out (a response's instructions are not carried over). Returns the session it went to,
/// which the turn continues (or branches from, when that conversation moved on since). An id
/// the tenant did not keep is OpenAI's 400.
async fn previous(
    inner: &Inner,
    tenant: &str,
    id: &str,
    messages: &mut Vec<hermes_core::Message>,
    instructed: bool,
) -> Result<String, ApiError> {
    let store = inner.store()?;
    let kept = store
        .kept_response(tenant, id)
        .await
        .map_err(store_failed)?
        .ok_or_else(|| previous_not_found(id))?;
    let stored = store.messages(&kept.session).await.map_err(store_failed)?;
    if stored.len() < kept.upto || kept.upto == 0 {
        // Its conversation is gone (retention) or was never whole.
        return Err(previous_not_found(id));
    }
    let earlier = stored
        .into_iter()
        .take(kept.upto)
        .skip_while(|m| m.role == Role::System);
    let rest = messages.split_off(usize::from(instructed).min(messages.len()));
    messages.extend(earlier);
    messages.extend(rest);
    Ok(kept.session)
}

/// The items `item_reference`s name (`refs`: place and id), in order: output items of
/// responses `tenant` made with `store` on, rebuilt from the store as the response gave them
/// (a reasoning item without `encrypted_content`: the engine puts the stored reasoning back
/// where the turn stands). An id that names no such item is OpenAI's 400.
async fn referenced(
    inner: &Inner,
    tenant: &str,
    refs: &[(usize, String)],
) -> Result<Vec<Value>, ApiError> {
    let store = inner.store()?;
    let mut outputs: std::collections::HashMap<String, Vec<Value>> = Default::default();
    let mut items = Vec::with_capacity(refs.len());
    for (_, id) in refs {
        let not_found = || ApiError::invalid("input", format!("Item with id '{id}' not found."));
        let response = responses::response_of_item(id).ok_or_else(not_found)?;
        if !outputs.contains_key(&response) {
            let mut output = Vec::new();
            if let Some(kept) = store
                .kept_response(tenant, &response)
                .await
                .map_err(store_failed)?
            {
                let stored = store.messages(&kept.session).await.map_err(store_failed)?;
                // A response's reply is the message its turn stored last.
                if let Some(reply) = kept
                    .upto
                    .checked_sub(1)
                    .and_then(|last| stored.get(last))
                    .filter(|m| m.role == Role::Assistant)
                {
                    output =
                        responses::output_items(&response, std::slice::from_ref(reply), 0, None);
                }
            }
            outputs.insert(response.clone(), output);
        }
        let item = outputs[&response]
            .iter()
            .find(|item| item["id"] == id.as_str())
            .cloned()
            .ok_or_else(not_found)?;
        items.push(item);
    }
    Ok(items)
}

/// What a `compaction` item's sealed reference names: the stored summary's session and place.
fn checkpoint_payload(session: &str, index: usize) -> String {
    format!("{session}\n{index}")
}

/// Puts in place of each `compaction` item a client sent back the checkpoint it names, its
/// seal opened for this tenant and partition. hermes' own checkpoint is its stored summary, in
/// the item's place. The provider's own (its compaction block or item, docs/spec.md §7) stands for
/// everything before it: the history becomes the client's instructions, that checkpoint as
/// stored (the engine re-attaches its carrier at its place in its session, docs/spec.md §10), then
/// what the client sent after it; the session it is stored in is returned, for the turn to
/// continue. One that does not open, or whose checkpoint is no longer stored, is a 400 naming
/// the item.
async fn checkpoints(
    inner: &Inner,
    messages: &mut Vec<hermes_core::Message>,
    items: &[responses::CompactionItem],
    signer: &sign::Signer,
) -> Result<Option<String>, ApiError> {
    // From the last: a provider checkpoint takes the place of everything before it.
    for item in items.iter().rev() {
        let refused = |why: &str| ApiError::invalid(&item.at, format!("`{}`: {why}", item.at));
        let Some(payload) = signer.open(&item.seal) else {
            return Err(refused(
                "this compaction item was not made by this gateway for this tenant and partition \
                 (or it was altered)",
            ));
        };
        let (session, index) = payload
            .split_once('\n')
            .and_then(|(s, i)| Some((s.to_owned(), i.parse::<usize>().ok()?)))
            .ok_or_else(|| refused("its reference does not name a checkpoint"))?;
        let store = inner.store()?;
        let stored = store.messages(&session).await.map_err(store_failed)?;
        let gone = || refused("the conversation it summarised is no longer stored (retention)");
        let checkpoint = stored
            .get(index)
            .filter(|m| m.role == hermes_core::Role::Assistant)
            .ok_or_else(gone)?;
        if hermes_core::checkpoint::native_compaction(checkpoint).is_some() {
            let lead = messages
                .iter()
                .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                .count();
            messages.splice(lead..=item.message, [checkpoint.clone()]);
            return Ok(Some(session));
        }
        let summary = checkpoint
            .content
            .as_ref()
            .map(responses::text_of)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(gone)?;
        messages[item.message] = hermes_core::checkpoint::own_checkpoint(&summary);
    }
    Ok(None)
}

/// Compacts `turn`'s history for the Responses door through the engine
/// ([`hermes_engine::Request::compact`]: the history's carriers re-attached, the provider's own
/// compaction where the upstream has one — OpenAI's `POST /responses/compact`, Claude's
/// on-demand compaction — else hermes' summary, stored in a session of its own), and answers
/// a `compaction` item whose `encrypted_content` is a sealed reference to that stored
/// checkpoint. The upstream's block or item never reaches the client.
async fn compaction(
    inner: &Inner,
    mut turn: body::ClientTurn,
    tenant: &str,
    choice: hermes_engine::Choice,
    session: Option<String>,
    signer: &sign::Signer,
    recorder: &metrics::Turn,
) -> Result<(Value, Completion), ApiError> {
    turn.stream = false;
    let request = turn
        .request(tenant.to_owned(), choice, session)
        .compact(true);
    let completion = complete(inner, request, recorder).await?;
    let store = inner.store()?;
    let stored = store
        .messages(&completion.session)
        .await
        .map_err(store_failed)?;
    let index = stored
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .filter(|&i| {
            hermes_core::checkpoint::native_compaction(&stored[i]).is_some()
                || stored[i]
                    .content
                    .as_ref()
                    .is_some_and(|c| !responses::text_of(c).trim().is_empty())
        })
        .ok_or_else(|| ApiError::bad_gateway("the model wrote no summary"))?;
    let sealed = signer.seal(&checkpoint_payload(&completion.session, index));
    let item =
        responses::compaction_item(&format!("cmp_{}", uuid::Uuid::now_v7().simple()), &sealed);
    Ok((item, completion))
}

async fn responses_compact(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    tenant: Extension<gate::Tenant>,
    admitted: Extension<limits::Admitted>,
    body: Extension<gate::Read>,
) -> Response {
    match compact_request(&inner, &headers, (tenant, admitted, body)).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// `POST /v1/responses/compact`: `{model, input, instructions, …}` answered with a
/// `response.compaction` object: the input's user messages, then one compaction item.
async fn compact_request(
    inner: &Inner,
    headers: &HeaderMap,
    gated: Gated,
) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), _, Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, responses::parse).await?;
    let Prepared {
        turn,
        choice,
        session,
        signer,
        recorder,
        ..
    } = prepare(inner, &tenant, headers, parsed).await?;
    let mut output = responses::user_items(&turn.messages);
    let (item, completion) =
        compaction(inner, turn, &tenant, choice, session, &signer, &recorder).await?;
    output.push(item);
    let body = json!({
        "id": format!("resp_{}", uuid::Uuid::now_v7().simple()),
        "object": "response.compaction",
        "created_at": responses::now_secs(),
        "output": output,
        "usage": responses::usage_object(&completion.usage),
        "hermes_session": completion.session,
    });
    Ok(with_session(
        (StatusCode::OK, axum::Json(body)).into_response(),
        &completion.session,
    ))
}

/// A store error as the door answers it.
fn store_failed(e: hermes_engine::store::StoreError) -> ApiError {
    ApiError::from_engine(&hermes_engine::EngineError::from(e))
}

/// OpenAI's answer to a `previous_response_id` the tenant did not keep (made with `store`
/// off, expired, another tenant's, or never made).
fn previous_not_found(id: &str) -> ApiError {
    ApiError {
        code: Some("previous_response_not_found".into()),
        ..ApiError::invalid(
            "previous_response_id",
            format!("Previous response with id '{id}' not found."),
        )
    }
}

async fn count_tokens(
    State(inner): State<Arc<Inner>>,
    Extension(gate::Read(body)): Extension<gate::Read>,
) -> Response {
    match count(&inner, &body).await {
        Ok(response) => response,
        Err(error) => error.into_anthropic_response(),
    }
}

/// `POST /v1/messages/count_tokens`: the estimator's count of the request on its route (the
/// gate checked the key and read the body).
async fn count(inner: &Inner, body: &[u8]) -> Result<Response, ApiError> {
    let parsed = anthropic::parse(body, true)?;
    let choice = inner.resolve(Door::Messages, &parsed.model)?;
    let target = hermes_core::RouteTarget::new(
        choice.provider.as_deref().unwrap_or_default(),
        choice.base_url.as_deref(),
        choice.model.as_deref().unwrap_or_default(),
    );
    let decision = inner
        .engine
        .table()
        .resolve(&target, hermes_core::ResolveOptions::default());
    let mut tokens = hermes_core::estimate_history(&parsed.messages, &decision);
    if let Some(tools) = &parsed.tools {
        tokens += tools.get().len().div_ceil(4);
    }
    Ok(axum::Json(json!({"input_tokens": tokens})).into_response())
}

/// One whole turn, answered 503 when the drain bound cuts it; its engine events go to
/// `recorder`.
async fn complete(
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
                Some(Event::Done(completion)) => return Ok(completion),
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
fn with_session(mut response: Response, session: &str) -> Response {
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
async fn stream_reply<D: sse::StreamDoor>(
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

/// What every object of one reply shares.
#[derive(Clone)]
struct Reply {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

impl Reply {
    /// The `chat.completion` object, with `hermes_session` in the body and the header.
    fn whole(&self, completion: &Completion) -> Response {
        let reply = completion
            .messages
            .iter()
            .rfind(|m| m.role == Role::Assistant);
        let body = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": openai::message(reply),
                "finish_reason": openai::finish_reason(completion.finish.as_ref()),
            }],
            "usage": openai::usage(&completion.usage),
            "hermes_session": completion.session,
        });
        with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        )
    }

    /// A `chat.completion.chunk` with `choices` and the extra top-level keys.
    fn chunk(&self, choices: Value, extra: &[(&str, Value)]) -> SseEvent {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        for (key, value) in extra {
            chunk[*key] = value.clone();
        }
        SseEvent::default().data(chunk.to_string())
    }

    fn delta(&self, delta: Value) -> SseEvent {
        self.chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            &[],
        )
    }
}

/// The chat door's stream: deltas as they come (the first with the role); after
/// [`Event::Done`] (every step stored) the chunk with `finish_reason` and `hermes_session`, the
/// usage chunk when asked for, and `[DONE]`; a failure is an error object in OpenAI's shape.
struct OpenAiStream {
    reply: Reply,
    started: bool,
}

impl sse::StreamDoor for OpenAiStream {
    fn on_event(&mut self, event: Event) -> (Vec<SseEvent>, bool) {
        let reply = &self.reply;
        match event {
            Event::Driver(driver) => match delta_of(&driver) {
                Some(mut delta) => {
                    if !self.started {
                        delta["role"] = json!("assistant");
                        self.started = true;
                    }
                    (vec![reply.delta(delta)], false)
                }
                None => (Vec::new(), false),
            },
            Event::Done(completion) => {
                let session = json!(completion.session);
                let mut out = vec![reply.chunk(
                    json!([{
                        "index": 0,
                        "delta": {},
                        "finish_reason": openai::finish_reason(completion.finish.as_ref()),
                    }]),
                    &[("hermes_session", session.clone())],
                )];
                if reply.include_usage {
                    out.push(reply.chunk(
                        json!([]),
                        &[
                            ("usage", openai::usage(&completion.usage)),
                            ("hermes_session", session),
                        ],
                    ));
                }
                out.push(SseEvent::default().data("[DONE]"));
                (out, true)
            }
            _ => (Vec::new(), false),
        }
    }

    fn failure(&self, error: &ApiError) -> SseEvent {
        SseEvent::default().data(error.body().to_string())
    }
}

/// The `delta` of a driver event the client sees (thinking, answer text, a tool call's
/// fragment: its id, type and name in the first only); none for the others.
fn delta_of(event: &DriverEvent) -> Option<Value> {
    match event {
        DriverEvent::Delta { reasoning, text } => Some(if *reasoning {
            json!({"reasoning_content": text})
        } else {
            json!({"content": text})
        }),
        DriverEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments,
        } => {
            let mut call = json!({"index": index});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["type"] = json!("function");
            }
            let mut function = json!({"arguments": arguments});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            call["function"] = function;
            Some(json!({"tool_calls": [call]}))
        }
        _ => None,
    }
}

/// `GET /v1/models`: the aliases (patterns as written), then `provider/model` for every
/// provider whose credentials are configured (its configured model, else `provider/*`: any
/// model of it), then `sim/PROFILE/*` for each simulator profile when the engine has
/// simulators (`hermes serve --allow-sim`), then the doors' default models — each only when
/// the tenant's `allow_models` lets it call what it names; in Anthropic's shape for a client
/// that sends `anthropic-version`, else OpenAI's.
async fn models(
    State(inner): State<Arc<Inner>>,
    Extension(gate::Tenant(tenant)): Extension<gate::Tenant>,
    headers: HeaderMap,
) -> Response {
    // The gate's auth layer checked the key.

    let mut ids: Vec<String> = inner.config.models.keys().cloned().collect();
    if let Some(settings) = inner.engine.settings() {
        let defaults = &settings.defaults;
        for (spec, _) in inner.engine.wires().providers() {
            let configured = defaults.providers.get(spec.id);
            let var = configured
                .and_then(|p| p.key_var.as_deref())
                .or(spec.key_var);
            let usable = match var {
                Some(var) => (settings.key)(var).is_some_and(|k| !k.is_empty()),
                None => configured.is_some_and(|p| p.base_url.is_some()),
            };
            if !usable {
                continue;
            }
            let model = configured.and_then(|p| p.model.clone()).or_else(|| {
                (defaults.provider.as_deref() == Some(spec.id))
                    .then(|| defaults.model.clone())
                    .flatten()
            });
            ids.push(format!("{}/{}", spec.id, model.as_deref().unwrap_or("*")));
        }
    }
    // The simulators, when this gateway serves them (`hermes serve --allow-sim`): any model of
    // each profile.
    for profile in inner.engine.sim_profiles() {
        ids.push(format!("sim/{}/*", profile.name));
    }
    for target in inner.config.default_models.values() {
        if !ids.contains(target) {
            ids.push(target.clone());
        }
    }
    // What the tenant may call (`allow_models`): an alias by what it names.
    ids.retain(|id| {
        let target = inner.config.models.get(id).unwrap_or(id);
        inner.config.policy.allows_model(&tenant, target)
    });
    if speaks_anthropic("/v1/models", &headers) {
        // Anthropic's `GET /v1/models` page (`ModelInfo`: type, id, display_name, created_at).
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({"type": "model", "id": id, "display_name": id,
                       "created_at": "1970-01-01T00:00:00Z"})
            })
            .collect();
        return axum::Json(json!({
            "data": data,
            "has_more": false,
            "first_id": ids.first(),
            "last_id": ids.last(),
        }))
        .into_response();
    }
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "hermes"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// `GET /metrics`: the exposition (behind `[serve] metrics_token` when one is set).
async fn scrape(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    match &inner.metrics {
        Some(recorded) => {
            metrics::scrape(recorded, inner.config.metrics_token.as_deref(), &headers)
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /readyz`: 200 when the store answers, else 503.
async fn readyz(State(inner): State<Arc<Inner>>) -> Response {
    match inner.engine.ready().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(e) => ApiError::unavailable(format!("the store does not answer: {e}")).into_response(),
    }
}
