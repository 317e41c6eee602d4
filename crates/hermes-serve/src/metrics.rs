//! The gateway's metrics (`GET /metrics`): one registry per [`crate::Gateway`], rendered in the
//! OpenMetrics text format that Prometheus scrapes. Requests and their latency are recorded by
//! one layer outermost on the router (from arrival, time queued in inner layers included);
//! everything the engine reports — upstream requests, tokens, carriers, refusals, fleet
//! verdicts — from its [`DriverEvent`]s, per client request ([`Turn`]), so core and the engine
//! know nothing of metrics.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hermes_core::Usage;
use hermes_core::driver::DriverEvent;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::journal::{Entry, Journal, Refusal, Upstream};

/// The content type of the exposition (OpenMetrics text, which Prometheus scrapes).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The tenant label of a request no gateway key identified (refused before, or without, one).
pub(crate) const NO_TENANT: &str = "none";

/// Latency buckets in seconds: 1 ms to 2 min, roughly ×2.5 apart (a gateway adds
/// milliseconds; a reasoning model's whole reply takes minutes).
const BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];

fn latency() -> Histogram {
    Histogram::new(BUCKETS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
    tenant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    wire: String,
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamOutcome {
    wire: String,
    provider: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    tenant: String,
    provider: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CarrierLabels {
    wire: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WireLabels {
    wire: String,
}

/// Every series the gateway exports, and the registry that renders them.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
    upstream_seconds: Family<UpstreamLabels, Histogram, fn() -> Histogram>,
    upstream_requests: Family<UpstreamOutcome, Counter>,
    tokens: Family<TokenLabels, Counter>,
    carriers: Family<CarrierLabels, Counter>,
    refusal_retries: Family<UpstreamLabels, Counter>,
    fleet_verdicts: Family<WireLabels, Counter>,
    streams: Gauge,
}

impl Metrics {
    /// A fresh registry with every series (`hermes_` prefixed).
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("hermes");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by route (the matched path), status and tenant",
            requests.clone(),
        );
        let request_seconds =
            Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency);
        registry.register(
            "request_duration_seconds",
            "From a request's arrival (time queued before its handler included) until its response head is ready",
            request_seconds.clone(),
        );
        let upstream_seconds =
            Family::<UpstreamLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency);
        registry.register(
            "upstream_request_duration_seconds",
            "Each upstream request, from just before it is sent until its reply is captured whole (or it fails), by wire and provider",
            upstream_seconds.clone(),
        );
        let upstream_requests = Family::<UpstreamOutcome, Counter>::default();
        registry.register(
            "upstream_requests",
            "Upstream requests by wire, provider and outcome (ok, or the error's HTTP status, or error)",
            upstream_requests.clone(),
        );
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "tokens",
            "Tokens by tenant, provider and kind; the kinds do not overlap: input (not read from or written to the cache), cache_read, cache_write, output (not reasoning), reasoning",
            tokens.clone(),
        );
        let carriers = Family::<CarrierLabels, Counter>::default();
        registry.register(
            "carriers",
            "Assistant messages by what happened to their carriers (reattached, passed_through, demoted, dropped_provenance, missing, dropped_prefix, dropped_upstream) and wire",
            carriers.clone(),
        );
        let refusal_retries = Family::<UpstreamLabels, Counter>::default();
        registry.register(
            "refusal_retries",
            "Requests resent once without the carriers a provider refused (docs/spec.md §6), by wire and provider",
            refusal_retries.clone(),
        );
        let fleet_verdicts = Family::<WireLabels, Counter>::default();
        registry.register(
            "fleet_verdicts_learned",
            "Refusals learned for every session of the store, by wire",
            fleet_verdicts.clone(),
        );
        let streams = Gauge::default();
        registry.register(
            "streams_in_flight",
            "Streamed responses being sent now",
            streams.clone(),
        );
        Metrics {
            registry,
            requests,
            request_seconds,
            upstream_seconds,
            upstream_requests,
            tokens,
            carriers,
            refusal_retries,
            fleet_verdicts,
            streams,
        }
    }

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts one answered request.
    fn request(&self, route: String, status: StatusCode, tenant: String, started: Instant) {
        self.request_seconds
            .get_or_create(&RouteLabels {
                route: route.clone(),
            })
            .observe(started.elapsed().as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                route,
                status: status.as_u16(),
                tenant,
            })
            .inc();
    }

    /// Adds a reply's usage as non-overlapping kinds ([`Usage`] counts reasoning inside
    /// `output` and the cache inside `input`).
    fn tokens(&self, tenant: &str, provider: &str, usage: &Usage) {
        for (kind, count) in token_kinds(usage) {
            if count > 0 {
                self.tokens
                    .get_or_create(&TokenLabels {
                        tenant: tenant.to_owned(),
                        provider: provider.to_owned(),
                        kind,
                    })
                    .inc_by(count);
            }
        }
    }
}

/// A usage as the metric's kinds, which do not overlap: `input` without the cache's share,
/// `cache_read`, `cache_write`, `output` without reasoning, `reasoning` (their sum is every
/// token of the reply).
pub(crate) fn token_kinds(usage: &Usage) -> [(&'static str, u64); 5] {
    [
        (
            "input",
            usage
                .input
                .saturating_sub(usage.cache_read)
                .saturating_sub(usage.cache_write),
        ),
        ("cache_read", usage.cache_read),
        ("cache_write", usage.cache_write),
        ("output", usage.output.saturating_sub(usage.reasoning)),
        ("reasoning", usage.reasoning),
    ]
}

tokio::task_local! {
    /// The tenant of the request being handled, set once its gateway key is checked.
    static TENANT: Mutex<Option<String>>;
}

/// Names the tenant of the request being handled, for its `hermes_requests_total` series.
pub(crate) fn set_tenant(tenant: &str) {
    let _ = TENANT.try_with(|slot| {
        if let Ok(mut slot) = slot.lock() {
            *slot = Some(tenant.to_owned());
        }
    });
}

/// The layer outermost on the router: every request counted by route, status and tenant, its
/// latency from arrival.
pub(crate) async fn layer(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let (response, tenant) = TENANT
        .scope(Mutex::new(None), async {
            let response = next.run(request).await;
            let tenant = TENANT
                .try_with(|slot| slot.lock().ok().and_then(|mut t| t.take()))
                .ok()
                .flatten();
            (response, tenant)
        })
        .await;
    metrics.request(
        route,
        response.status(),
        tenant.unwrap_or_else(|| NO_TENANT.to_owned()),
        started,
    );
    response
}

/// `GET /metrics`: the exposition, behind `token` when one is set (`Authorization: Bearer`).
pub(crate) fn scrape(metrics: &Metrics, token: Option<&str>, headers: &HeaderMap) -> Response {
    if let Some(token) = token {
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or_default();
        // Digests compared, so the time taken says nothing about the token.
        if Sha256::digest(sent.as_bytes()) != Sha256::digest(token.as_bytes()) {
            return ApiError::unauthorized(
                "metrics need the metrics token: send `Authorization: Bearer <[serve] metrics_token>`",
            )
            .into_response();
        }
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        metrics.render(),
    )
        .into_response()
}

/// Whether `event` is only for the metrics: no door shows it to its client.
pub(crate) fn only_recorded(event: &DriverEvent) -> bool {
    matches!(
        event,
        DriverEvent::Upstream { .. }
            | DriverEvent::Carriers { .. }
            | DriverEvent::FleetVerdict { .. }
            | DriverEvent::Sent { .. }
    )
}

/// What one client request's engine events add to the metrics: its tenant, and the wire and
/// provider of its latest upstream request (a refusal names neither); and what it adds to the
/// journal, kept when it ends ([`Turn::done`], or dropped unfinished).
pub(crate) struct Turn {
    metrics: Option<Arc<Metrics>>,
    tenant: String,
    last: Mutex<Option<UpstreamLabels>>,
    /// The limiter the tenant's spend is charged to as replies arrive.
    charges: Option<Arc<crate::limits::Limiter>>,
    /// The journal the request's entry goes to, and the entry so far.
    journal: Option<(Arc<Journal>, Mutex<Entry>, Instant)>,
}

/// The most notices one journal entry keeps.
const MAX_NOTICES: usize = 16;

impl Turn {
    /// A request of `tenant`; records nothing when `metrics` is off, and charges the tokens of
    /// its replies to `charges` when given.
    pub(crate) fn new(
        metrics: Option<Arc<Metrics>>,
        tenant: &str,
        charges: Option<Arc<crate::limits::Limiter>>,
    ) -> Self {
        Turn {
            metrics,
            tenant: tenant.to_owned(),
            last: Mutex::new(None),
            charges,
            journal: None,
        }
    }

    /// With its entry kept in `journal` when it ends.
    pub(crate) fn journaled(mut self, journal: Arc<Journal>) -> Self {
        let entry = Entry {
            at: now_ms(),
            tenant: self.tenant.clone(),
            ..Entry::default()
        };
        self.journal = Some((journal, Mutex::new(entry), Instant::now()));
        self
    }

    /// The request's turn is stored in `session`: its journal entry is kept.
    pub(crate) fn done(&self, session: &str) {
        self.keep(Some(session));
    }

    /// Keeps the journal entry (once), naming `session`.
    fn keep(&self, session: Option<&str>) {
        let Some((journal, entry, started)) = &self.journal else {
            return;
        };
        let Ok(mut entry) = entry.lock() else {
            return;
        };
        if entry.ms == u64::MAX {
            return;
        }
        let mut kept = std::mem::take(&mut *entry);
        entry.ms = u64::MAX;
        kept.session = session.map(str::to_owned);
        kept.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        journal.push(kept);
    }

    /// Adds `event` to the journal entry.
    fn journal(&self, event: &DriverEvent) {
        let Some((_, entry, _)) = &self.journal else {
            return;
        };
        let Ok(mut entry) = entry.lock() else {
            return;
        };
        match event {
            DriverEvent::Upstream {
                wire,
                provider,
                elapsed,
                status,
                ok,
                usage,
            } => {
                entry.upstream.push(Upstream {
                    wire,
                    provider: provider.clone(),
                    status: *status,
                    ok: *ok,
                    ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                });
                if let Some(usage) = usage {
                    entry.tokens[0] += usage.input;
                    entry.tokens[1] += usage.output;
                    entry.tokens[2] += usage.reasoning;
                }
            }
            DriverEvent::Carriers { counts, .. } => entry.carriers += counts,
            DriverEvent::Sent { body, .. } => entry.sent.push(body.clone()),
            DriverEvent::Notice { text } if entry.notices.len() < MAX_NOTICES => {
                entry.notices.push(text.clone());
            }
            DriverEvent::Refused { carriers, status } => entry.refusals.push(Refusal {
                carriers: carriers.clone(),
                status: *status,
            }),
            _ => {}
        }
    }

    /// Records `event`: an upstream request's latency, outcome and tokens (charged to the
    /// tenant's spend too); carriers; a refusal retry; a fleet verdict. Other events add
    /// nothing.
    pub(crate) fn record(&self, event: &DriverEvent) {
        if let (
            Some(limiter),
            DriverEvent::Upstream {
                usage: Some(usage), ..
            },
        ) = (&self.charges, event)
        {
            limiter.charge(&self.tenant, usage.input.saturating_add(usage.output));
        }
        self.journal(event);
        let Some(metrics) = &self.metrics else {
            return;
        };
        match event {
            DriverEvent::Upstream {
                wire,
                provider,
                elapsed,
                status,
                ok,
                usage,
            } => {
                let labels = UpstreamLabels {
                    wire: (*wire).to_owned(),
                    provider: provider.clone(),
                };
                metrics
                    .upstream_seconds
                    .get_or_create(&labels)
                    .observe(elapsed.as_secs_f64());
                let outcome = match (ok, status) {
                    (true, _) => "ok".to_owned(),
                    (false, Some(status)) => status.to_string(),
                    (false, None) => "error".to_owned(),
                };
                metrics
                    .upstream_requests
                    .get_or_create(&UpstreamOutcome {
                        wire: labels.wire.clone(),
                        provider: labels.provider.clone(),
                        outcome,
                    })
                    .inc();
                if let Some(usage) = usage {
                    metrics.tokens(&self.tenant, provider, usage);
                }
                if let Ok(mut last) = self.last.lock() {
                    *last = Some(labels);
                }
            }
            DriverEvent::Carriers { wire, counts } => {
                for (outcome, count) in counts.outcomes() {
                    if count > 0 {
                        metrics
                            .carriers
                            .get_or_create(&CarrierLabels {
                                wire: (*wire).to_owned(),
                                outcome,
                            })
                            .inc_by(count);
                    }
                }
            }
            DriverEvent::Refused { .. } => {
                let last = self.last.lock().ok().and_then(|l| l.clone());
                let labels = last.unwrap_or_else(|| UpstreamLabels {
                    wire: "unknown".to_owned(),
                    provider: "unknown".to_owned(),
                });
                metrics.refusal_retries.get_or_create(&labels).inc();
            }
            DriverEvent::FleetVerdict { wire, .. } => {
                metrics
                    .fleet_verdicts
                    .get_or_create(&WireLabels { wire: wire.clone() })
                    .inc();
            }
            _ => {}
        }
    }

    /// Counts a stream in flight until the guard is dropped.
    pub(crate) fn stream(&self) -> StreamGuard {
        if let Some(metrics) = &self.metrics {
            metrics.streams.inc();
        }
        StreamGuard(self.metrics.clone())
    }
}

impl Drop for Turn {
    /// A request that ends without its turn stored is journaled without a session.
    fn drop(&mut self) {
        self.keep(None);
    }
}

/// Now, Unix milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A stream in flight (`hermes_streams_in_flight`), until dropped.
pub(crate) struct StreamGuard(Option<Arc<Metrics>>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Some(metrics) = &self.0 {
            metrics.streams.dec();
        }
    }
}
