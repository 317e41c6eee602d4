//! `hermes routes`: the route table this build knows, as text or JSON.

use std::io::{self, Write};

use hermes_core::{ReasoningRoute, RouteMatcher, RouteTable};
use serde_json::{Value, json};

use crate::cli::RoutesArgs;

/// The JSON object describing one route.
fn route_json(route: &dyn ReasoningRoute) -> Value {
    let m = route.matcher();
    json!({
        "id": route.id(),
        "carriers": route.carriers(),
        "strict": route.strict(),
        "must_echo": route.must_echo().map(|e| e.family),
        "keep_thinking": route.keep_thinking_flags(),
        "effort": route.efforts().words(),
        "providers": m.providers,
        "hosts": m.hosts,
        "models": m.model_substrings,
        "local_endpoint": m.local_endpoint,
        "default": m.any,
    })
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items.join(", ")
    }
}

fn matches_text(m: &RouteMatcher) -> String {
    let mut parts = Vec::new();
    if !m.providers.is_empty() {
        parts.push(format!("providers: {}", list(&m.providers)));
    }
    if !m.hosts.is_empty() {
        parts.push(format!("hosts: {}", list(&m.hosts)));
    }
    if !m.model_substrings.is_empty() {
        parts.push(format!("model contains: {}", list(&m.model_substrings)));
    }
    if m.local_endpoint {
        parts.push("a local endpoint (loopback, private, 100.64.0.0/10, *.docker.internal, …) when no row matched".to_owned());
    }
    if m.any {
        parts.push("everything else".to_owned());
    }
    parts.join("; ")
}

/// Writes the table as text.
fn write_text(table: &RouteTable, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "Chat-completions routes, in matching order (first match wins):"
    )?;
    for (i, route) in table.routes().enumerate() {
        let carriers = if route.strict() {
            "none (strict schema)".to_owned()
        } else {
            route.carriers().fields().join(", ")
        };
        writeln!(out)?;
        writeln!(out, "{:>2}. {}", i + 1, route.id())?;
        writeln!(out, "    carriers:  {carriers}")?;
        if let Some(echo) = route.must_echo() {
            writeln!(out, "    must-echo: {}", echo.family)?;
        }
        if !route.keep_thinking_flags().is_empty() {
            writeln!(
                out,
                "    keep:      {}",
                route.keep_thinking_flags().join(", ")
            )?;
        }
        writeln!(out, "    effort:    {}", route.efforts().words().join(", "))?;
        writeln!(out, "    matches:   {}", matches_text(route.matcher()))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Must-echo families (any route that reads reasoning_content, except strict ones; tested in order):"
    )?;
    for family in table.families() {
        writeln!(
            out,
            "  {:<10} {}",
            family.name,
            matches_text(&family.matcher)
        )?;
    }
    Ok(())
}

/// Runs `hermes routes`.
pub(crate) fn run(engine: &hermes_engine::Engine, args: &RoutesArgs) -> anyhow::Result<()> {
    let table = engine.table();
    let mut out = crate::out::stdout();
    if args.json {
        let routes: Vec<Value> = table.routes().map(|r| route_json(r.as_ref())).collect();
        serde_json::to_writer_pretty(&mut out, &routes)?;
        writeln!(out)?;
    } else {
        write_text(table, &mut out)?;
    }
    out.flush()?;
    Ok(())
}
