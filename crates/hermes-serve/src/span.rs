//! The gateway's span per client request, named and marked for OpenTelemetry's HTTP server conventions.

use axum::extract::MatchedPath;
use axum::http::Request;

/// The span tower-http's `TraceLayer` opens for each request: `request` for the logs (method,
/// URI, version, as tower-http's own), and for OpenTelemetry a server span named
/// `{method} {route}` (the matched route, never the raw path, so names stay few) with
/// `http.request.method` and `http.route`. Every upstream request the turn makes is a span
/// inside it (the driver's `upstream_request`, `chat {model}`). No header is recorded: the
/// gateway key travels in one.
pub(crate) fn request_span<B>(request: &Request<B>) -> tracing::Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let method = request.method().as_str();
    let name = match route {
        Some(route) => format!("{method} {route}"),
        None => method.to_owned(),
    };
    tracing::info_span!(
        "request",
        otel.name = name,
        otel.kind = "server",
        method,
        uri = %request.uri().path(),
        version = ?request.version(),
        http.request.method = method,
        http.route = route,
    )
}
