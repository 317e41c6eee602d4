//! `hermes verdicts list|clear`: what the refusal fallback learned, per session and (fleet
//! verdicts) for the whole store.

use std::io::Write as _;

use hermes_core::{CHAT_WIRE, Verdicts, WireVerdicts};
use hermes_engine::store::{Store, VerdictFilter};
use serde_json::{Value, json};

use crate::cli::VerdictsCommand;
use crate::home;

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
            // Each session's own verdicts, every wire's: chat completions' (SPEC §6's
            // `reasoning_rejected_carriers`), then the native wires' (`hermes_wire_verdicts`).
            for s in &sessions {
                let verdicts = Verdicts::from_model_config(&s.model_config).unwrap_or_default();
                for v in verdicts.0 {
                    rows.push(json!({
                        "session_id": s.id, "wire": CHAT_WIRE,
                        "provider": v.provider, "host": v.host, "model": v.model,
                        "carriers": v.carriers,
                    }));
                }
                let wire = WireVerdicts::from_model_config(&s.model_config).unwrap_or_default();
                for v in wire.0 {
                    rows.push(json!({
                        "session_id": s.id, "wire": v.wire, "provider": v.provider,
                        "host": v.host, "model": v.model, "carriers": v.fields,
                    }));
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
                        writeln!(
                            out,
                            "fleet  {} {} @ {} / {}: refused {} (learned {}{})",
                            r["wire"].as_str().unwrap_or_default(),
                            r["provider"].as_str().unwrap_or_default(),
                            r["host"].as_str().unwrap_or_default(),
                            r["model"].as_str().unwrap_or_default(),
                            r["carriers"][0].as_str().unwrap_or_default(),
                            r["learned_at"].as_str().unwrap_or_default(),
                            r["reprobing_since"]
                                .as_str()
                                .map(|t| format!("; being re-probed since {t}"))
                                .unwrap_or_default(),
                        )?;
                        continue;
                    }
                    let carriers: Vec<&str> = r["carriers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    writeln!(
                        out,
                        "{}  {} {} @ {} / {}: refused {}",
                        r["session_id"].as_str().unwrap_or_default(),
                        r["wire"].as_str().unwrap_or_default(),
                        r["provider"].as_str().unwrap_or_default(),
                        r["host"].as_str().unwrap_or_default(),
                        r["model"].as_str().unwrap_or_default(),
                        carriers.join(", ")
                    )?;
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

/// A Unix-milliseconds time as RFC 3339 (UTC, seconds).
fn learned(ms: i64) -> String {
    let at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Runs `hermes verdicts …`.
pub(crate) fn run(command: &VerdictsCommand) -> anyhow::Result<()> {
    home::runtime()?.block_on(async {
        let store = home::open_store().await?;
        run_async(command, store).await
    })
}
