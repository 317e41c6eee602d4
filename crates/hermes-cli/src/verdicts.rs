//! `hermes verdicts list|clear`: what the refusal fallback learned, per session and (fleet
//! verdicts) for the whole store.

use std::io::Write as _;

use hermes_core::{CHAT_WIRE, Verdicts, WireVerdicts};
use hermes_engine::store::{Store, VerdictFilter};
use serde_json::{Value, json};

use crate::cli::VerdictsCommand;
use crate::out::{text, texts};
use crate::setup;

async fn run_async(command: &VerdictsCommand, store: Store) -> anyhow::Result<()> {
    let mut out = crate::out::stdout();
    let sessions = store.list().await?;
    match command {
        VerdictsCommand::List { json, all } => {
            let fleet = if *all {
                store.fleet_verdicts().await?
            } else {
                Vec::new()
            };
            let mut rows = Vec::new();
            for s in &sessions {
                for row in session_rows(&s.model_config) {
                    let mut with_id = serde_json::Map::new();
                    with_id.insert("session_id".into(), json!(s.id));
                    with_id.extend(row.as_object().cloned().unwrap_or_default());
                    rows.push(Value::Object(with_id));
                }
            }
            for v in &fleet {
                rows.push(json!({
                    "fleet": true, "wire": v.wire, "provider": v.provider, "host": v.host,
                    "model": v.model, "carriers": [v.field], "learned_at": learned(v.learned_at),
                    "reprobing_since": v.probing_since.map(learned),
                }));
            }
            if *json {
                serde_json::to_writer_pretty(&mut out, &rows)?;
                writeln!(out)?;
            } else if rows.is_empty() {
                writeln!(
                    out,
                    "no verdicts: no provider has refused a replayed carrier"
                )?;
            } else {
                for r in &rows {
                    if r["fleet"] == true {
                        // A fleet row refuses one carrier: `row_line` names it.
                        writeln!(
                            out,
                            "fleet  {} (learned {}{})",
                            row_line(r),
                            text(r, "learned_at"),
                            r["reprobing_since"]
                                .as_str()
                                .map(|t| format!("; being re-probed since {t}"))
                                .unwrap_or_default(),
                        )?;
                        continue;
                    }
                    writeln!(out, "{}  {}", text(r, "session_id"), row_line(r))?;
                }
            }
        }
        VerdictsCommand::Clear {
            session,
            provider,
            model,
        } => {
            if let Some(id) = session
                && !sessions.iter().any(|s| s.id == *id)
            {
                anyhow::bail!("no session `{id}`");
            }
            let filter = VerdictFilter {
                provider: provider.clone(),
                model: model.clone(),
                wire: None,
            };
            // The fleet's verdicts belong to no session: a `--session` filter leaves them.
            let mut cleared = if session.is_none() {
                store.clear_fleet_verdicts(&filter).await?
            } else {
                0
            };
            for s in sessions
                .iter()
                .filter(|s| session.as_ref().is_none_or(|id| *id == s.id))
            {
                // One read-modify-write per session: a chat recording meanwhile keeps its own.
                cleared += store.clear_verdicts(&s.id, &filter).await?;
            }
            writeln!(
                out,
                "cleared {cleared} verdict{}",
                if cleared == 1 { "" } else { "s" }
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// A session's own verdicts, every wire's: chat completions' (docs/spec.md §6's
/// `reasoning_rejected_carriers`), then the native wires' (`hermes_wire_verdicts`), each as
/// `{"wire", "provider", "host", "model", "carriers"}`.
pub(crate) fn session_rows(model_config: &serde_json::Map<String, Value>) -> Vec<Value> {
    let chat = Verdicts::from_model_config(model_config).unwrap_or_default();
    let wire = WireVerdicts::from_model_config(model_config).unwrap_or_default();
    chat.0
        .into_iter()
        .map(|v| {
            json!({"wire": CHAT_WIRE, "provider": v.provider, "host": v.host, "model": v.model,
                   "carriers": v.carriers})
        })
        .chain(wire.0.into_iter().map(|v| {
            json!({"wire": v.wire, "provider": v.provider, "host": v.host, "model": v.model,
                   "carriers": v.fields})
        }))
        .collect()
}

/// How a verdict row reads: `WIRE PROVIDER @ HOST / MODEL: refused A, B`.
pub(crate) fn row_line(r: &Value) -> String {
    format!(
        "{} {} @ {} / {}: refused {}",
        text(r, "wire"),
        text(r, "provider"),
        text(r, "host"),
        text(r, "model"),
        texts(r, "carriers").join(", ")
    )
}

/// A Unix-milliseconds time as RFC 3339 (UTC, seconds).
fn learned(ms: i64) -> String {
    let at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Runs `hermes verdicts …`.
pub(crate) fn run(engine: &hermes_engine::Engine, command: &VerdictsCommand) -> anyhow::Result<()> {
    setup::runtime()?.block_on(async {
        let store = setup::open_home_store(engine).await?;
        run_async(command, store).await
    })
}
