//! OpenTelemetry export of hermes' GenAI spans (OTLP over HTTP), installed only when the standard `OTEL_EXPORTER_OTLP_*` variables ask for it.
//!
//! The spans themselves are `tracing` spans made where the work happens (the driver's
//! `upstream_request`, `chat {model}`; the engine's `session_turn`; the gateway's `request`):
//! this module only bridges them (`tracing-opentelemetry`) to an OTLP exporter, so no library
//! crate depends on OpenTelemetry. Without `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` nothing is installed.

use std::time::Duration;

use anyhow::{Context as _, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The variable that lets spans carry the messages themselves (OpenTelemetry's GenAI
/// instrumentation switch); anything but `true` leaves them out.
pub(crate) const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// The service name when `OTEL_SERVICE_NAME` is not set.
const SERVICE: &str = "hermes";

/// The attribute the driver records as a comma-separated list and the spec types as a string
/// array.
const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";

/// Which spans a command exports: the client request each upstream request sits under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spans {
    /// `hermes serve`: the gateway's HTTP request span (`request`), and the upstream requests
    /// as its children.
    Gateway,
    /// `hermes chat` and the REPL: the turn (`session_turn`), and the upstream requests as
    /// its children.
    Chat,
}

impl Spans {
    /// Whether the span `name` made in module `target` is exported: only hermes' own spans
    /// (a dependency's span of the same name is not).
    fn exports(self, name: &str, target: &str) -> bool {
        let made_by = |krate: &str| target.split("::").next() == Some(krate);
        match (self, name) {
            (_, "upstream_request") => made_by("hermes_core"),
            (Spans::Gateway, "request") => made_by("hermes_serve"),
            (Spans::Chat, "session_turn") => made_by("hermes_engine"),
            _ => false,
        }
    }
}

/// The installed exporter: dropping it flushes what is still queued and shuts it down, so a
/// one-shot `hermes chat` loses no span and `hermes serve` flushes on its way out.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown_with_timeout(Duration::from_secs(10)) {
            eprintln!("hermes: warning: cannot export the last spans: {error}");
        }
    }
}

/// Whether the environment asks for export (an OTLP endpoint is set, non-empty, and the SDK
/// is not disabled).
pub(crate) fn wanted() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether the user opted in to message content in spans ([`CAPTURE_CONTENT`] is `true`).
pub(crate) fn capture_content() -> bool {
    std::env::var(CAPTURE_CONTENT).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The layer that exports `spans` over OTLP/HTTP, and the guard that flushes it — `None`
/// when no endpoint is set ([`wanted`]). The exporter reads the standard variables itself
/// (endpoints, `OTEL_EXPORTER_OTLP_HEADERS`, timeouts, compression); the protocol
/// (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`) must be
/// `http/protobuf` (the default) or `http/json`.
pub(crate) fn layer<S>(spans: Spans) -> anyhow::Result<Option<(impl Layer<S>, Exporter)>>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    if !wanted() {
        return Ok(None);
    }
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Ok(protocol) = std::env::var(var) {
            match protocol.trim() {
                "http/protobuf" | "http/json" => break,
                other => bail!(
                    "{var}={other} is not supported by this build: use http/protobuf or http/json"
                ),
            }
        }
    }
    // The exporter's HTTP client is reqwest on rustls, whose crypto is ring (as every other
    // client of this process).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .context("cannot set up the OTLP span exporter")?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| SERVICE.to_owned());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(FinishReasons(exporter))
        .build();
    let tracer = provider.tracer("hermes");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(move |meta| {
            meta.is_span() && spans.exports(meta.name(), meta.target())
        }));
    Ok(Some((layer, Exporter { provider })))
}

/// Turns the driver's comma-separated `gen_ai.response.finish_reasons` into the string array
/// the spec types it as (a `tracing` field cannot hold an array), then hands the spans on.
#[derive(Debug)]
struct FinishReasons<E>(E);

impl<E: SpanExporter> SpanExporter for FinishReasons<E> {
    fn export(
        &self,
        mut batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        for span in &mut batch {
            for attribute in &mut span.attributes {
                if attribute.key.as_str() == FINISH_REASONS
                    && let Value::String(list) = &attribute.value
                {
                    let reasons: Vec<StringValue> = list
                        .as_str()
                        .split(',')
                        .map(|r| StringValue::from(r.to_owned()))
                        .collect();
                    *attribute =
                        KeyValue::new(FINISH_REASONS, Value::Array(Array::String(reasons)));
                }
            }
        }
        self.0.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}
