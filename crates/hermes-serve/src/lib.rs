//! hermes-serve: the gateway. OpenAI chat-completions over HTTP (`POST /v1/chat/completions`,
//! whole and streamed as SSE), OpenAI Responses (`POST /v1/responses`, whole and streamed),
//! Anthropic Messages (`POST /v1/messages`, whole and streamed;
//! `POST /v1/messages/count_tokens`), `GET /v1/models`, `GET /healthz` and `GET /readyz`, on axum,
//! over [`hermes_engine`] only: every request is one [`ServingEngine::complete`] or
//! [`ServingEngine::stream`] call, the client's tools go upstream as the client defined them and are
//! never run here, and the store is reached only through the engine.
//!
//! Gateway keys are checked per request through [`Keys`] ([`StoreKeys`]: the store's, a key's
//! last use recorded coarsely); [`Auth::None`] serves loopback addresses only. Turns are
//! admitted under each tenant's [`Limits`] (requests per minute, requests at once, tokens per
//! minute and per day; on by default), counted in the store every replica shares, and judged by
//! its [`Policy`] (models, betas, server tools, a `max_tokens` cap, a required partition),
//! before anything reaches an upstream.
//!
//! The modules, in the order a request walks through them:
//!
//! 1. `lib.rs` (here): [`ServeConfig`], the [`Gateway`] and its shared state (`Inner`: the
//!    engine, the settings, the limiter, the metrics, the signing key), the router and serving
//!    (plain or [`tls`]); `GET /v1/models`, `/healthz`, `/readyz`, `/metrics`, `/openapi.json`
//!    ([`OPENAPI`]) and the 404/405 fallbacks are answered here.
//! 2. The layers every request passes: `metrics.rs` (outermost: requests and latency),
//!    `access.rs` (the request id and the refusal log line), `span.rs` (its tracing span).
//! 3. `gate.rs`, admission: the route layers in front of each door — the gateway key
//!    ([`Keys`], `keys.rs`), the declared length, the tenant's limits (`limits.rs`), the body
//!    under the cap and the deadline — handing the door the tenant, its admission and the bytes.
//! 4. One door, the handler of its routes and its API's spelling in and out: `openai.rs`
//!    (`/v1/chat/completions`), `anthropic.rs` (`/v1/messages`, `/v1/messages/count_tokens`),
//!    `responses.rs` (`/v1/responses`, `/v1/responses/compact`). A door reads its body into a
//!    `body.rs` turn, resolves the model (`model.rs`), checks the tenant's policy (`policy.rs`)
//!    and signs or verifies what it hands out (`sign.rs`).
//! 5. `turn.rs`: the plumbing every door shares to run the turn — the body parsed off the
//!    reactor, the session and idempotency of the request, one engine call answered whole or
//!    streamed — and `sse.rs`, which runs a door's stream (keep-alives, the drain cut).
//! 6. `error.rs`: every refusal and failure, in the door's own error shape.
//!
//! Beside them: `admin.rs`, the admin API (`/admin/v1/…`, for an admin key: [`Keys::admin`]);
//! `ui.rs`, the inspector (`/ui`, [`ServeConfig::ui`]), pages rendered from `admin.rs`; and
//! `journal.rs`, what each of the latest requests did (its carriers' outcomes, notices,
//! refusals, the bodies it sent), which a request's `metrics::Turn` fills from the engine's
//! events and keeps under its session once the turn is stored.
//!
//! No two modules use each other (xtask's tidy check), and no door module uses another: what
//! the doors share is in `body.rs`, `turn.rs`, `sse.rs` and `error.rs`.

// In the order a request walks through them (above).
pub mod tls;

mod access;
mod journal;
mod metrics;
mod span;

mod gate;
mod keys;
mod limits;

mod anthropic;
mod openai;
mod responses;

mod body;
pub mod model;
mod policy;
mod sign;

mod sse;
mod turn;

mod error;

// The admin API (`/admin/v1/…`) and the inspector (`/ui`) that renders it.
mod admin;
mod ui;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

use std::collections::BTreeMap;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_engine::ServingEngine;
use serde_json::{Value, json};

use gate::gated;

pub use error::{ApiError, Counted, RETRY_UNAVAILABLE, RateWindow};
pub use keys::StoreKeys;
pub use limits::{Limits, TenantLimits};
pub use policy::{DEFAULT_MAX_TOKENS, Policy, TenantPolicy};

/// The header that names (in a request) and reports (in a response) the stored session.
pub const SESSION_HEADER: &str = "x-hermes-session";

/// The OpenAPI 3.1 description of the gateway's HTTP API (`crates/hermes-serve/openapi.json`,
/// served at `GET /openapi.json`): every operation the router serves, its request and response
/// schemas and each door's error shape. Written by hand and checked against the running gateway
/// by the `openapi` integration tests (docs/openapi.md).
pub const OPENAPI: &str = include_str!("../openapi.json");

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

    /// The id of the admin key `bearer` is, if it is one (`hermes serve keys create --admin`):
    /// it reaches the admin API (`/admin/v1/…`) and the inspector (`/ui`), never a door. None
    /// by default.
    async fn admin(&self, bearer: &str) -> Result<Option<String>, KeysError> {
        let _ = bearer;
        Ok(None)
    }
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
    /// Serve the inspector at `/ui` (`[serve] ui`, `--ui`; off by default): pages over the
    /// admin API, for an admin key.
    pub ui: bool,
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
            ui: false,
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
        /// With the inspector at `/ui`, or not.
        ui: bool;
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

    /// The keys a request of this door names its output limit and its partition by (what the
    /// policy's refusals name).
    pub(crate) fn policy_keys(self) -> (&'static str, &'static str) {
        match self {
            Door::Chat => ("max_tokens", "user"),
            Door::Messages => ("max_tokens", "metadata.user_id"),
            Door::Responses => ("max_output_tokens", "user"),
        }
    }

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
    engine: ServingEngine,
    config: ServeConfig,
    /// Set when the drain bound ran out: every request still running ends now.
    cut: tokio::sync::watch::Sender<bool>,
    /// The store's signing key, kept once read (docs/spec.md §10, "Messages-door signatures").
    signing_key: tokio::sync::OnceCell<hermes_engine::store::SigningKey>,
    /// The tenants' limits, when any is set.
    limiter: Option<Arc<limits::Limiter>>,
    /// The metrics, unless they are off.
    metrics: Option<Arc<metrics::Metrics>>,
    /// What the latest requests did, for the admin API.
    journal: Arc<journal::Journal>,
}

impl Inner {
    /// What `model` names on `door` ([`model::target_of`]: aliases, patterns, `provider/model`,
    /// the door's default), or the door's 404.
    fn resolve(&self, door: Door, model: &str) -> Result<hermes_engine::Choice, ApiError> {
        model::resolve(
            self.engine.engine(),
            &self.config.models,
            self.config.default_model(door),
            model,
        )
    }

    /// The engine's store (the Responses door's kept responses and checkpoints live there).
    fn store(&self) -> &hermes_engine::store::Store {
        self.engine.store()
    }

    /// What one request of `tenant` records from its engine events.
    fn turn(&self, tenant: &str) -> metrics::Turn {
        metrics::Turn::new(self.metrics.clone(), tenant, self.limiter.clone())
            .journaled(self.journal.clone())
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

impl Gateway {
    /// A gateway serving requests with `engine` ([`hermes_engine::Engine::with_store`]).
    pub fn new(engine: ServingEngine, config: ServeConfig) -> Result<Self, ServeError> {
        let limiter = limits::Limiter::new(engine.store().clone(), config.limits.clone());
        let metrics = config.metrics.then(|| Arc::new(metrics::Metrics::new()));
        Ok(Gateway {
            inner: Arc::new(Inner {
                engine,
                config,
                cut: tokio::sync::watch::channel(false).0,
                signing_key: tokio::sync::OnceCell::new(),
                limiter,
                metrics,
                journal: Arc::default(),
            }),
        })
    }

    /// The routes, with a tracing span per request and, unless metrics are off, `GET /metrics`
    /// and the metrics layer outermost (a request's latency counts from its arrival, time spent
    /// in every other layer included: it must stay the last layer added).
    pub fn router(&self) -> Router {
        let state = &self.inner;
        // A turn's route, behind every layer of the gate (its limits included).
        let turn = |route: axum::routing::MethodRouter<Arc<Inner>>| gated(state, route, true);
        let router = Router::new()
            .route("/v1/chat/completions", turn(post(openai::chat_completions)))
            .route("/v1/messages", turn(post(anthropic::messages)))
            .route(
                "/v1/responses",
                turn(post(responses::responses_turn)).get(responses::responses_socket),
            )
            .route(
                "/v1/responses/compact",
                turn(post(responses::responses_compact)),
            )
            .route(
                "/v1/messages/count_tokens",
                gated(state, post(anthropic::count_tokens), false),
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
            .route("/openapi.json", get(openapi))
            .merge(admin::routes(state))
            .merge(ui::routes(state))
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
        let store = inner.engine.store().clone();
        let every = (age / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600));
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        Retention(tokio::spawn(async move {
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

/// A path no door serves: 404 in the door's JSON error shape, naming the doors.
async fn not_found(uri: axum::http::Uri, headers: HeaderMap) -> Response {
    let doors: Vec<&str> = Door::ALL.iter().map(|d| d.describe()).collect();
    let error = ApiError::not_found(format!(
        "no route {}: this gateway serves {}, and GET /v1/models",
        uri.path(),
        doors.join("; ")
    ));
    error::in_door_shape(error, uri.path(), &headers)
}

/// A method a route does not take: 405 in the door's JSON error shape.
async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let error = ApiError::method_not_allowed(format!("{} does not take {method}", uri.path()));
    error::in_door_shape(error, uri.path(), &headers)
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
    let settings = inner.engine.settings();
    let defaults = &settings.defaults;
    for (spec, _) in inner.engine.engine().wires().providers() {
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
    // The simulators, when this gateway serves them (`hermes serve --allow-sim`): any model of
    // each profile.
    for profile in inner.engine.engine().sim_profiles() {
        ids.push(format!("sim/{}/*", profile.name));
    }
    for target in inner.config.default_models.values() {
        if !ids.contains(target) {
            ids.push(target.clone());
        }
    }
    // What the tenant may call (`allow_models`): an alias by what it names. Without the
    // simulators (`--allow-sim`), nothing that names one: the door would refuse it.
    let simulated = !inner.engine.engine().sim_profiles().is_empty();
    ids.retain(|id| {
        let target = inner.config.models.get(id).unwrap_or(id);
        (simulated || !target.starts_with("sim/"))
            && inner.config.policy.allows_model(&tenant, target)
    });
    if error::speaks_anthropic("/v1/models", &headers) {
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

/// `GET /openapi.json`: [`OPENAPI`], without a key (it holds nothing of any tenant's).
async fn openapi() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        OPENAPI,
    )
        .into_response()
}

/// `GET /readyz`: 200 when the store answers, else 503.
async fn readyz(State(inner): State<Arc<Inner>>) -> Response {
    match inner.engine.ready().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(e) => ApiError::unavailable(format!("the store does not answer: {e}")).into_response(),
    }
}
