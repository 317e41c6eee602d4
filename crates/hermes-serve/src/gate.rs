//! Admission: the tower layers [`gated`] puts in front of the doors that read a body, outermost
//! first: the gateway key ([`auth`], 401, the tenant from [`crate::Keys`]; `GET /v1/models` has
//! this one only), the body's declared length ([`declared_length`], 413 before anything is read),
//! the tenant's limits ([`limits`], 429; turns only), then the body itself under the cap and the
//! body-read deadline ([`body`], 413 / 408), so a slow upload holds a concurrency slot for at
//! most the deadline. Each refusal is answered in the door's shape and logged by the access
//! layer; what passes reaches the handler with [`Tenant`], [`crate::limits::Admitted`] and the
//! whole [`Read`] body in the request's extensions ([`Gated`]).

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{ApiError, in_door_shape};
use crate::limits::Admitted;
use crate::{Auth, Inner, access, metrics};

/// `route` behind the gate's layers, outermost first: the gateway key, the
/// declared length, the tenant's limits when `limited` (turns; `count_tokens` reaches no
/// upstream), the body under the cap and the deadline.
pub(crate) fn gated(
    state: &Arc<Inner>,
    route: axum::routing::MethodRouter<Arc<Inner>>,
    limited: bool,
) -> axum::routing::MethodRouter<Arc<Inner>> {
    use axum::middleware::from_fn_with_state as layer;
    // The last layer added runs first.
    let route = route
        .route_layer(layer(state.clone(), body))
        .route_layer(decoding());
    let route = if limited {
        route.route_layer(layer(state.clone(), limits))
    } else {
        route
    };
    route
        .route_layer(layer(state.clone(), declared_length))
        .route_layer(layer(state.clone(), auth))
}

/// The tenant a request's gateway key belongs to.
#[derive(Clone)]
pub(crate) struct Tenant(pub(crate) String);

/// A request's whole body, read under the cap and the deadline.
#[derive(Clone)]
pub(crate) struct Read(pub(crate) axum::body::Bytes);

/// What the gate let through: the tenant, its admission and the whole body.
pub(crate) type Gated = (Extension<Tenant>, Extension<Admitted>, Extension<Read>);

/// `error` in the shape of `request`'s door.
fn refuse(error: ApiError, request: &Request) -> Response {
    in_door_shape(error, request.uri().path(), request.headers())
}

/// The gateway key: the tenant, or 401.
pub(crate) async fn auth(
    State(inner): State<Arc<Inner>>,
    mut request: Request,
    next: Next,
) -> Response {
    match authenticate(&inner, request.headers()).await {
        Ok(tenant) => {
            request.extensions_mut().insert(Tenant(tenant));
            next.run(request).await
        }
        Err(error) => refuse(error, &request),
    }
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

/// The `Content-Encoding`s a body may come in ([`decoding`] decodes them): Codex sends its
/// requests zstd-compressed to providers that take it.
const ENCODINGS: [&str; 4] = ["identity", "gzip", "br", "zstd"];

/// The layer that decodes a `Content-Encoding` body (tower-http's request decompression),
/// between [`declared_length`] (which checks the bytes sent) and [`body`] (whose cap applies to
/// the decoded bytes).
fn decoding() -> impl tower::Layer<
    axum::routing::Route,
    Service = impl tower::Service<
        Request,
        Response = impl axum::response::IntoResponse + 'static,
        Error = std::convert::Infallible,
        Future = impl Send + 'static,
    > + Clone
              + Send
              + Sync
              + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    tower::ServiceBuilder::new()
        .layer(tower_http::decompression::RequestDecompressionLayer::new())
        .map_request(
            |r: axum::http::Request<
                tower_http::decompression::DecompressionBody<axum::body::Body>,
            >| { r.map(axum::body::Body::new) },
        )
}

/// A body its `Content-Length` says is over the cap: 413 before anything is read or counted;
/// one in a `Content-Encoding` the gateway does not decode: 415.
async fn declared_length(
    State(inner): State<Arc<Inner>>,
    request: Request,
    next: Next,
) -> Response {
    for value in request.headers().get_all(header::CONTENT_ENCODING) {
        let known = value.to_str().ok().is_some_and(|v| {
            v.split(',')
                .map(str::trim)
                .all(|e| ENCODINGS.iter().any(|k| e.eq_ignore_ascii_case(k)))
        });
        if !known {
            return refuse(
                ApiError::unsupported_encoding(&format!(
                    "the body's Content-Encoding {:?} is not one the gateway decodes ({})",
                    value.to_str().unwrap_or("(not text)"),
                    ENCODINGS.join(", ")
                )),
                &request,
            );
        }
    }
    let cap = inner.config.max_request_bytes;
    let length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match length {
        Some(n) if n > u64::try_from(cap).unwrap_or(u64::MAX) => {
            refuse(ApiError::too_large(cap), &request)
        }
        _ => next.run(request).await,
    }
}

/// The tenant's limits (`limits.rs`): the turn is admitted, or 429 with `Retry-After`.
async fn limits(State(inner): State<Arc<Inner>>, mut request: Request, next: Next) -> Response {
    let Some(Tenant(tenant)) = request.extensions().get::<Tenant>().cloned() else {
        return refuse(
            ApiError::internal("the limits layer ran before auth"),
            &request,
        );
    };
    let admitted = match &inner.limiter {
        Some(limiter) => match limiter.admit(&tenant).await {
            Ok(admitted) => admitted,
            Err(error) => return refuse(error, &request),
        },
        None => Admitted::unlimited(),
    };
    request.extensions_mut().insert(admitted);
    next.run(request).await
}

/// The body, under the cap (413) and within `[serve] body_read_timeout` of the moment this
/// layer starts reading it (408).
async fn body(State(inner): State<Arc<Inner>>, request: Request, next: Next) -> Response {
    let cap = inner.config.max_request_bytes;
    let deadline = inner.config.body_read_timeout;
    let (mut parts, body) = request.into_parts();
    let read = tokio::time::timeout(deadline, axum::body::to_bytes(body, cap)).await;
    let refused = match read {
        Ok(Ok(bytes)) => {
            parts.extensions.insert(Read(bytes));
            return next
                .run(Request::from_parts(parts, axum::body::Body::empty()))
                .await;
        }
        Ok(Err(e)) if over_the_cap(&e) => ApiError::too_large(cap),
        Ok(Err(e)) => ApiError::invalid(
            "",
            format!("the request body could not be read (its Content-Encoding?): {e}"),
        ),
        Err(_) => ApiError::body_timeout(deadline),
    };
    refuse(
        refused,
        &Request::from_parts(parts, axum::body::Body::empty()),
    )
}

/// Whether reading a body failed because it (decoded) went over the cap.
fn over_the_cap(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}
