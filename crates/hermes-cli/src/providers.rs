//! `hermes providers`: every provider id `--provider` takes, with its wire, default base URL and
//! key variable (the registry of docs/spec.md §8a: the providers of the engine's wires, a third
//! party's included), as text or JSON.

use std::io::Write;

use hermes_engine::Engine;
use hermes_engine::providers::{Access, ProviderSpec};
use serde_json::{Value, json};

use crate::cli::ProvidersArgs;
use crate::out::text;

/// Where a provider's requests go when the registry has no fixed base URL.
fn base_url(spec: &ProviderSpec) -> String {
    match (spec.base_url, spec.access) {
        (Some(url), _) => url.to_owned(),
        (None, Access::GoogleCloud { .. }) => {
            "https://{region}-aiplatform.googleapis.com ([vertex] project, region)".to_owned()
        }
        (None, Access::Aws) => {
            format!(
                "{} (the AWS region)",
                hermes_engine::providers::aws::runtime_base_url("{region}")
            )
        }
        (None, Access::Resource { example, .. }) => {
            format!("--base-url {}", example.replace("RESOURCE", "{resource}"))
        }
        (None, _) => "--base-url required".to_owned(),
    }
}

/// Where a provider's credentials come from.
fn key(spec: &ProviderSpec) -> String {
    match (spec.key_var, spec.access) {
        (Some(var), _) => var.to_owned(),
        (None, Access::Aws) => "AWS credential chain, or AWS_BEARER_TOKEN_BEDROCK".to_owned(),
        (None, _) => "none".to_owned(),
    }
}

/// Runs `hermes providers [--json]`.
pub(crate) fn run(engine: &Engine, args: &ProvidersArgs) -> anyhow::Result<()> {
    let providers = engine.wires().providers();
    let rows: Vec<Value> = providers
        .iter()
        .map(|(p, wire)| {
            json!({"id": p.id, "wire": wire.id(), "base_url": base_url(p), "key": key(p)})
        })
        .chain(std::iter::once(json!({
            "id": "sim", "wire": "chat (in-process simulator)",
            "base_url": "sim://PROFILE (hermes sim serve --help lists them)", "key": "none",
        })))
        .collect();
    // Names the route table answers to that are not registry ids: accepted with --base-url.
    let route_only: Vec<String> = engine
        .provider_names()
        .into_iter()
        .filter(|n| n != "sim" && !providers.iter().any(|(p, _)| p.id == n))
        .collect();
    let mut out = crate::out::stdout();
    if args.json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({"providers": rows, "route_names": route_only}),
        )?;
        writeln!(out)?;
    } else {
        let width = rows.iter().map(|r| text(r, "id").len()).max().unwrap_or(0);
        for r in &rows {
            writeln!(
                out,
                "{:<width$}  {:<16}  {}  [{}]",
                text(r, "id"),
                text(r, "wire"),
                text(r, "base_url"),
                text(r, "key"),
            )?;
        }
        if !route_only.is_empty() {
            writeln!(
                out,
                "\nalso route names (with --base-url): {}",
                route_only.join(", ")
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
