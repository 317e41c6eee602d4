//! The tower layers in front of the doors that read a body, outermost first: the gateway key
//! ([`auth`], 401; `GET /v1/models` has this one only), the body's declared length ([`declared_length`], 413 before anything is
//! read), the tenant's limits ([`limits`], 429; turns only), then the body itself under the cap
//! and the body-read deadline ([`body`], 413 / 408), so a slow upload holds a concurrency slot
//! for at most the deadline. Each refusal is answered in the door's shape and logged by the
//! access layer; what passes reaches the handler with [`Tenant`], [`crate::limits::Admitted`]
//! and the whole [`Read`] body in the request's extensions.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ApiError;
use crate::limits::Admitted;

/// The tenant a request's gateway key belongs to.
#[derive(Clone)]
pub(crate) struct Tenant(pub(crate) String);

/// A request's whole body, read under the cap and the deadline.
#[derive(Clone)]
pub(crate) struct Read(pub(crate) axum::body::Bytes);

/// `error` in the shape of `request`'s door.
fn refuse(error: ApiError, request: &Request) -> Response {
    crate::in_door_shape(error, request.uri().path(), request.headers())
}

/// The gateway key: the tenant, or 401.
pub(crate) async fn auth(
    State(inner): State<Arc<crate::Inner>>,
    mut request: Request,
    next: Next,
) -> Response {
    match crate::authenticate(&inner, request.headers()).await {
        Ok(tenant) => {
            request.extensions_mut().insert(Tenant(tenant));
            next.run(request).await
        }
        Err(error) => refuse(error, &request),
    }
}

/// The `Content-Encoding`s a body may come in ([`decoding`] decodes them): Codex sends its
/// requests zstd-compressed to providers that take it.
const ENCODINGS: [&str; 4] = ["identity", "gzip", "br", "zstd"];

/// The layer that decodes a `Content-Encoding` body (tower-http's request decompression),
/// between [`declared_length`] (which checks the bytes sent) and [`body`] (whose cap applies to
/// the decoded bytes).
pub(crate) fn decoding() -> impl tower::Layer<
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
pub(crate) async fn declared_length(
    State(inner): State<Arc<crate::Inner>>,
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
pub(crate) async fn limits(
    State(inner): State<Arc<crate::Inner>>,
    mut request: Request,
    next: Next,
) -> Response {
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
pub(crate) async fn body(
    State(inner): State<Arc<crate::Inner>>,
    request: Request,
    next: Next,
) -> Response {
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
