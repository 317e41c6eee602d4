//! `hermes sessions import|export|show|list|branch|delete`.

use std::io::{self, Write as _};
use std::path::Path;

use hermes_core::{DetailItem, Message, ThinkingRequest, Verdicts};
use hermes_engine::store::{SessionMeta, Store, StoredMessage, StoredThinking, THINKING_KEY};
use serde_json::{Value, json};

use crate::cli::SessionsCommand;
use crate::setup;

/// What is stored on one message, for `show`.
fn stored(msg: &Message) -> Value {
    let items = msg.reasoning_details.as_deref().unwrap_or_default();
    let provider_items = items
        .iter()
        .filter(|i| matches!(i, DetailItem::Provider { .. }))
        .count();
    let opaque = items
        .iter()
        .filter(|i| matches!(i, DetailItem::Provider { opaque: true, .. }))
        .count();
    let mut carriers = Vec::new();
    if msg.reasoning_content.is_some() {
        carriers.push(json!("reasoning_content"));
    }
    if msg.reasoning.is_some() {
        carriers.push(json!("reasoning"));
    }
    if provider_items > 0 {
        carriers.push(json!("reasoning_details"));
    }
    let native = msg.native_record().map(|r| {
        let mut fields = Vec::new();
        if r.extra_content.is_some() {
            fields.push("extra_content");
        }
        if r.reasoning_opaque.is_some() {
            fields.push("reasoning_opaque");
        }
        if r.reasoning_text.is_some() {
            fields.push("reasoning_text");
        }
        fields
    });
    let tool_signatures = msg
        .tool_calls
        .iter()
        .flatten()
        .filter(|c| c.extra_content.is_some() || c.function.thought_signature.is_some())
        .count();
    json!({
        "role": msg.role.as_str(),
        "carriers": carriers,
        "reasoning_details_items": provider_items,
        "opaque_items": opaque,
        "native_record": native,
        "tool_calls": msg.tool_calls.as_ref().map_or(0, Vec::len),
        "tool_call_signatures": tool_signatures,
        "origin": msg.origin,
    })
}

/// A thinking request in words: `effort high`, `off`, `no preference`.
pub(crate) fn thinking_words(request: ThinkingRequest) -> String {
    match request {
        ThinkingRequest::Effort(effort) => format!("effort {}", effort.as_str()),
        ThinkingRequest::Off => "off".to_owned(),
        ThinkingRequest::NoPreference => "no preference".to_owned(),
    }
}

/// The session's stored thinking request, read from its `model_config` (an unreadable member
/// is an error naming it).
fn stored_thinking(meta: &SessionMeta) -> Result<Option<StoredThinking>, String> {
    StoredThinking::from_model_config(&meta.model_config)
        .map_err(|e| format!("model_config: member `{THINKING_KEY}`: {e}"))
}

/// The `thinking:` line of `sessions show`.
fn thinking_line(stored: &Result<Option<StoredThinking>, String>) -> String {
    match stored {
        Ok(Some(thinking)) => format!(
            "{} (stored; a resume without --effort or --no-thinking keeps it)",
            thinking_words(thinking.request())
        ),
        Ok(None) => {
            "none stored (a resume uses --effort or --no-thinking, else config.toml's effort)"
                .to_owned()
        }
        Err(e) => format!("unreadable: {e}"),
    }
}

fn meta_json(meta: &SessionMeta) -> Value {
    json!({
        "id": meta.id,
        "title": meta.title,
        "parent_id": meta.parent_id,
        "provider": meta.provider,
        "model": meta.model,
        "base_url": meta.base_url,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "message_count": meta.message_count,
        "input_tokens": meta.input_tokens,
        "output_tokens": meta.output_tokens,
        "reasoning_tokens": meta.reasoning_tokens,
        "cache_read_tokens": meta.cache_read_tokens,
        "cache_write_tokens": meta.cache_write_tokens,
        // `"off"`, an effort word, or null (none stored, or unreadable).
        "thinking": stored_thinking(meta).ok().flatten().map(StoredThinking::as_str),
    })
}

fn show_text(
    meta: &SessionMeta,
    messages: &[StoredMessage],
    left_out: &dyn Fn(&Message) -> bool,
    out: &mut impl io::Write,
) -> anyhow::Result<()> {
    writeln!(out, "session {}", meta.id)?;
    writeln!(out, "  title:    {}", meta.title.as_deref().unwrap_or("-"))?;
    writeln!(
        out,
        "  provider: {}  model: {}  base url: {}",
        meta.provider.as_deref().unwrap_or("-"),
        meta.model.as_deref().unwrap_or("-"),
        meta.base_url.as_deref().unwrap_or("-")
    )?;
    if let Some(parent) = &meta.parent_id {
        writeln!(out, "  branched from: {parent}")?;
    }
    writeln!(out, "  thinking: {}", thinking_line(&stored_thinking(meta)))?;
    writeln!(out, "  messages: {}", messages.len())?;
    writeln!(
        out,
        "  tokens:   {} in ({} from cache, {} written to it), {} out ({} thinking)",
        meta.input_tokens,
        meta.cache_read_tokens,
        meta.cache_write_tokens,
        meta.output_tokens,
        meta.reasoning_tokens
    )?;
    for row in messages {
        let (i, msg) = (row.position, &row.message);
        let s = stored(msg);
        let mut parts = Vec::new();
        let carriers = crate::out::texts(&s, "carriers");
        if !carriers.is_empty() {
            let mut text = carriers.join(", ");
            let items = s["reasoning_details_items"].as_u64().unwrap_or(0);
            if items > 0 {
                text.push_str(&format!(
                    " ({items} item{}, {} opaque)",
                    if items == 1 { "" } else { "s" },
                    s["opaque_items"]
                ));
            }
            parts.push(text);
        }
        if let Some(native) = s["native_record"].as_array() {
            let fields: Vec<&str> = native.iter().filter_map(Value::as_str).collect();
            parts.push(format!("native record: {}", fields.join(", ")));
        }
        let calls = s["tool_calls"].as_u64().unwrap_or(0);
        if calls > 0 {
            parts.push(format!(
                "{calls} tool call{} ({} signed)",
                if calls == 1 { "" } else { "s" },
                s["tool_call_signatures"]
            ));
        }
        if let Some(o) = &msg.origin {
            parts.push(format!("origin {}/{}/{}", o.provider, o.host, o.model));
        }
        if left_out(msg) {
            parts.push("carriers left out for good".to_owned());
        }
        let detail = if parts.is_empty() {
            String::new()
        } else {
            format!("  {}", parts.join("; "))
        };
        let mark = match (row.archived, row.checkpoint) {
            (true, _) => " [archived]",
            (false, true) => " [checkpoint]",
            (false, false) => "",
        };
        writeln!(out, "  #{i:<3} {:<9}{detail}{mark}", msg.role.as_str())?;
    }
    let gone: Vec<String> = messages
        .iter()
        .filter(|r| left_out(&r.message))
        .map(|r| format!("#{}", r.position))
        .collect();
    if !gone.is_empty() {
        writeln!(
            out,
            "  left out for good (docs/spec.md §5a 3): a request of this conversation left these carriers out (their prefix, model or account no longer held, or a later step's were left out); no later request sends them: {}",
            gone.join(", ")
        )?;
    }
    let lines: Vec<String> = crate::verdicts::session_rows(&meta.model_config)
        .iter()
        .map(crate::verdicts::row_line)
        .collect();
    if lines.is_empty() {
        writeln!(out, "  verdicts: none")?;
    } else {
        writeln!(out, "  verdicts:")?;
        for line in &lines {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

async fn run_async(command: &SessionsCommand, store: Store) -> anyhow::Result<()> {
    let mut out = crate::out::stdout();
    match command {
        SessionsCommand::Import {
            from_hermes_agent: Some(path),
            dry_run,
            ..
        } => {
            import_original(&store, path.as_deref(), *dry_run).await?;
        }
        SessionsCommand::Import { file: None, .. } => {}
        SessionsCommand::Import {
            file: Some(file), ..
        } => {
            let session = crate::history_file::read(file)?;
            let id = store.import(&session).await?;
            writeln!(out, "{id}")?;
        }
        SessionsCommand::Export { id } => {
            let file = store.export(id).await?;
            serde_json::to_writer_pretty(&mut out, &file)?;
            writeln!(out)?;
        }
        SessionsCommand::Show { id, json, all } => {
            let meta = store.session(id).await?;
            let messages = if *all {
                store.all_messages(id).await?
            } else {
                store.active(id).await?
            };
            // The turns a request of the conversation left out for good (docs/spec.md §5a 3).
            let plain: Vec<Message> = messages.iter().map(|m| m.message.clone()).collect();
            let gone = store
                .left_out_among(&hermes_core::left_out::carrier_ids(&plain))
                .await?;
            let left_out = |m: &Message| {
                hermes_core::left_out::carrier_id(m).is_some_and(|c| gone.contains(&c))
            };
            if *json {
                let rows: Vec<Value> = messages
                    .iter()
                    .map(|m| {
                        let mut v = stored(&m.message);
                        v["position"] = json!(m.position);
                        v["archived"] = json!(m.archived);
                        v["checkpoint"] = json!(m.checkpoint);
                        if left_out(&m.message) {
                            v["left_out"] = json!(true);
                        }
                        v
                    })
                    .collect();
                let mut body = json!({
                    "session": meta_json(&meta),
                    "model_config": meta.model_config,
                    "verdicts": Verdicts::from_model_config(&meta.model_config).unwrap_or_default(),
                    "messages": rows,
                });
                if let Err(e) = stored_thinking(&meta) {
                    body["thinking_error"] = json!(e);
                }
                serde_json::to_writer_pretty(&mut out, &body)?;
                writeln!(out)?;
            } else {
                show_text(&meta, &messages, &left_out, &mut out)?;
            }
        }
        SessionsCommand::List { json } => {
            let sessions = store.list().await?;
            if *json {
                let list: Vec<Value> = sessions.iter().map(meta_json).collect();
                serde_json::to_writer_pretty(&mut out, &list)?;
                writeln!(out)?;
            } else {
                for s in &sessions {
                    writeln!(
                        out,
                        "{}  {:>4} msgs  {:<12} {:<28} {}",
                        s.id,
                        s.message_count,
                        s.provider.as_deref().unwrap_or("-"),
                        s.model.as_deref().unwrap_or("-"),
                        s.title.as_deref().unwrap_or("")
                    )?;
                }
            }
        }
        SessionsCommand::Branch { id, at } => {
            let branch = store.branch(id, *at).await.map_err(|e| match e {
                e @ hermes_engine::store::StoreError::BranchBeyondEnd { .. } => {
                    anyhow::Error::new(crate::error::UsageError(format!("--at: {e}")))
                }
                e => e.into(),
            })?;
            writeln!(out, "{branch}")?;
        }
        SessionsCommand::Compact { .. } | SessionsCommand::Migrate { .. } => {}
        SessionsCommand::Delete { id } => {
            store.delete(id).await?;
            let _ = writeln!(io::stderr(), "hermes: deleted session {id}");
        }
    }
    out.flush()?;
    Ok(())
}

/// Runs `hermes sessions …`.
pub(crate) fn run(engine: &hermes_engine::Engine, command: &SessionsCommand) -> anyhow::Result<()> {
    if let SessionsCommand::Compact {
        id,
        base_url,
        allow_insecure_http,
    } = command
    {
        return crate::chat::compact_session(engine, id, base_url.as_deref(), *allow_insecure_http);
    }
    if let SessionsCommand::Migrate { to, from } = command {
        return setup::runtime()?.block_on(migrate(engine, to, from.as_deref()));
    }
    setup::runtime()?.block_on(async {
        let store = setup::open_home_store(engine).await?;
        run_async(command, store).await
    })
}

/// `hermes sessions migrate --to URL [--from URL]`: copies every session and the fleet verdicts,
/// verified byte for byte; sessions the destination already holds identically are skipped, and
/// ones it holds differently are named and left alone (the command then fails).
async fn migrate(
    engine: &hermes_engine::Engine,
    to: &str,
    from: Option<&str>,
) -> anyhow::Result<()> {
    use hermes_engine::store::Location;
    let setup = setup::load(engine, setup::hermes_home()?)?;
    let home = &setup.home;
    let pool = setup.config.store.pool();
    let dest_location =
        Location::parse(to).map_err(|e| crate::error::UsageError(format!("--to: {e}")))?;
    let (source, source_name) = match from {
        Some(url) => {
            let location = Location::parse(url)
                .map_err(|e| crate::error::UsageError(format!("--from: {e}")))?;
            if location == dest_location {
                return Err(crate::error::UsageError(
                    "--from and --to name the same database".into(),
                )
                .into());
            }
            (
                Store::open_at_with(&location, pool).await?,
                location.redacted(),
            )
        }
        None => {
            let (path, _) = hermes_engine::store_path(home).await?;
            if Location::Sqlite(path.clone()) == dest_location {
                return Err(crate::error::UsageError(
                    "--to names the local database itself".into(),
                )
                .into());
            }
            (
                setup::open_local_store(&setup).await?,
                path.display().to_string(),
            )
        }
    };
    let dest = Store::open_at_with(&dest_location, pool).await?;
    let report = source.copy_into(&dest).await?;
    let mut out = crate::out::stdout();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln!(
        out,
        "copied {} session{} ({} message{}) from {source_name} to {}, each verified byte for byte; \
         {} already there; {} fleet verdict{}",
        report.copied.len(),
        plural(report.copied.len()),
        report.messages,
        plural(report.messages),
        dest_location.redacted(),
        report.present.len(),
        report.fleet_verdicts,
        plural(report.fleet_verdicts),
    )?;
    out.flush()?;
    if !report.conflicts.is_empty() {
        for (id, what) in &report.conflicts {
            let _ = writeln!(
                io::stderr(),
                "hermes: session {id} differs in the destination ({what}); left as it is on both sides"
            );
        }
        anyhow::bail!(
            "{} session{} differ between the two databases and were not copied",
            report.conflicts.len(),
            plural(report.conflicts.len())
        );
    }
    Ok(())
}

/// `hermes sessions import --from-hermes-agent [PATH] [--dry-run]`: every session of the Python
/// original's `state.db` (read-only), each in one transaction under its own id; sessions stored
/// before are skipped, one that cannot be read or stored is named with the reason and skipped
/// (the others still import, and the command then fails).
async fn import_original(store: &Store, path: Option<&Path>, dry_run: bool) -> anyhow::Result<()> {
    let path = if let Some(path) = path {
        path.to_path_buf()
    } else {
        let candidate = setup::hermes_home()?.join(hermes_engine::STATE_DB);
        if !hermes_engine::store::is_python_original(&candidate).await {
            return Err(crate::error::UsageError(format!(
                "no Python original's state.db at {} (the file is {}): pass its path, \
                 --from-hermes-agent PATH",
                candidate.display(),
                if candidate.exists() {
                    "something else"
                } else {
                    "missing"
                }
            ))
            .into());
        }
        candidate
    };
    let original = hermes_engine::store::read_original(&path).await?;
    let mut out = crate::out::stdout();
    let (mut new, mut present, mut messages, mut archived) = (0usize, 0usize, 0usize, 0usize);
    let mut failed: Vec<(String, String)> = original.failed;
    for session in &original.sessions {
        let imported = if store.has_session(&session.id).await? {
            false
        } else if dry_run {
            true
        } else {
            match store.import_original(session).await {
                Ok(imported) => imported,
                Err(e) => {
                    failed.push((session.id.clone(), e.to_string()));
                    continue;
                }
            }
        };
        if !imported {
            present += 1;
            continue;
        }
        new += 1;
        messages += session.rows.len();
        archived += session.rows.len() - session.active();
        writeln!(
            out,
            "{} {}  {}  {} messages{}{}",
            if dry_run { "would import" } else { "imported" },
            session.id,
            session.title.as_deref().unwrap_or("(untitled)"),
            session.rows.len(),
            match session.rows.len() - session.active() {
                0 => String::new(),
                n => format!(" ({n} archived)"),
            },
            session
                .parent_id
                .as_deref()
                .map(|p| format!(", parent {p}"))
                .unwrap_or_default(),
        )?;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln!(
        out,
        "{} {new} new session{} ({messages} message{}, {archived} archived) from {}; {present} already imported; {} skipped",
        if dry_run { "would import" } else { "imported" },
        plural(new),
        plural(messages),
        path.display(),
        failed.len(),
    )?;
    out.flush()?;
    for (id, reason) in &failed {
        let _ = writeln!(io::stderr(), "hermes: skipped session {id}: {reason}");
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "{} session{} of {} could not be imported (named above); the others were",
            failed.len(),
            plural(failed.len()),
            path.display()
        );
    }
    Ok(())
}
