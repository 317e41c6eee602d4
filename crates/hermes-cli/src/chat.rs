//! `hermes chat -q` and `hermes sessions compact`: argv, config and the environment turned into
//! one call into the engine's chat session, and its outcome printed. The interactive REPL
//! (`repl.rs`) opens its session through [`open`] too.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use hermes_config::Setup;
use hermes_core::driver::DriverEvent;
use hermes_core::{Carrier, DetailItem, Message, Role};
use hermes_engine::{ChatSession, Engine, OpenOptions, Toolset, reply_text};
use serde_json::{Value, json};

use crate::cli::{ChatArgs, TargetArgs, ThinkingArgs};
use crate::setup;
use crate::tools::{ToolPolicy, Toolbox};

/// The carriers stored on a message.
pub(crate) fn carriers_of(msg: &Message) -> Vec<&'static str> {
    let mut out = Vec::new();
    if msg.reasoning_content.is_some() {
        out.push(Carrier::ReasoningContent.field());
    }
    if msg.reasoning.is_some() {
        out.push(Carrier::Reasoning.field());
    }
    if msg
        .reasoning_details
        .iter()
        .flatten()
        .any(|i| matches!(i, DetailItem::Provider { .. }))
    {
        out.push(Carrier::ReasoningDetails.field());
    }
    out
}

/// The one-line text of a driver event (deltas are not lines).
pub(crate) fn event_line(event: &DriverEvent) -> Option<String> {
    Some(match event {
        DriverEvent::Refused { carriers, status } => format!(
            "the provider refused {} (HTTP {}); verdict stored, retrying once without {}",
            carriers.join(", "),
            status.map_or("-".to_owned(), |s| s.to_string()),
            if carriers.len() == 1 { "it" } else { "them" }
        ),
        DriverEvent::Retrying {
            attempt,
            delay,
            error,
        } => {
            format!("{error}; retry {attempt} in {:.1}s", delay.as_secs_f64())
        }
        DriverEvent::ToolCall { name } => format!("tool {name}"),
        DriverEvent::Repaired {
            unanswered,
            orphans,
        } => format!(
            "this session holds {unanswered} tool call(s) never answered and {orphans} result(s) answering no call (an interrupted older run); they are sent as interrupted, nothing stored changes"
        ),
        DriverEvent::Notice { text } => text.clone(),
        DriverEvent::Delta { .. } => return None,
        // Events added later are not lines until a front end learns them.
        _ => return None,
    })
}

/// The tools a chat offers: the built-in ones confined to `workspace` (`--workspace`), else
/// config's, else the working directory, redacting `setup`'s secrets. `hermes preview` sends the
/// same definitions.
pub(crate) fn toolbox(workspace: Option<PathBuf>, setup: &Setup) -> anyhow::Result<Toolbox> {
    let workspace = match workspace.or_else(|| setup.config.workspace.clone()) {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    Toolbox::new(ToolPolicy {
        workspace,
        home: setup.home.clone(),
        secrets: setup.secrets.clone(),
    })
}

/// Opens the chat session `args` ask for, with the built-in tools confined to the workspace.
pub(crate) async fn open(
    engine: &Engine,
    args: &ChatArgs,
    home: &Path,
) -> anyhow::Result<ChatSession> {
    let setup = setup::load(engine, home.to_path_buf())?;
    let (store, settings) = setup::open(&setup).await?;
    let toolbox = toolbox(args.workspace.clone(), &setup)?;
    let tools = Toolset {
        definitions: toolbox.definitions(),
        tools: std::sync::Arc::new(toolbox),
    };
    let choice = args
        .target
        .choice()
        .allow_insecure_http(args.allow_insecure_http);
    let options = OpenOptions::new(choice)
        .settings(settings)
        .resume(args.resume.clone())
        // The flags alone: config's effort is in the settings' defaults, below what the session
        // stores.
        .thinking(args.thinking.request())
        .stream(!args.no_stream)
        .compaction(setup.config.compaction.overrides());
    // `run` gave its engine simulators; a direct caller (the REPL's tests) may not have.
    let engine = crate::sim::simulated(engine.clone());
    Ok(ChatSession::open(&engine, store, options, tools).await?)
}

/// Adds to a refused-key error the command line that says yes: `rerun` runs the same command
/// again, and the flag this command accepts for it is added (`--base-url` confirms a stored
/// URL, `--allow-insecure-http` plain http). Other errors pass unchanged.
pub(crate) fn with_confirm_line(err: anyhow::Error, rerun: &str) -> anyhow::Error {
    let Some(hermes_engine::EngineError::KeyRefused {
        refusal, base_url, ..
    }) = err.downcast_ref::<hermes_engine::EngineError>()
    else {
        return err;
    };
    let hint = match refusal {
        hermes_engine::KeyRefusal::NotNamed => {
            format!("if you trust it, run again as: {rerun} --base-url {base_url}")
        }
        hermes_engine::KeyRefusal::PlainHttp => {
            format!("to send it anyway, run again as: {rerun} --allow-insecure-http")
        }
    };
    anyhow::anyhow!("{err}; {hint}")
}

fn say(event: &DriverEvent) {
    if let Some(line) = event_line(event) {
        let _ = writeln!(io::stderr(), "hermes: {line}");
    }
}

fn print_outcome(
    args: &ChatArgs,
    chat: &ChatSession,
    before: usize,
    outcome: &hermes_engine::Completion,
) -> anyhow::Result<()> {
    let session = chat.id().unwrap_or_default().to_owned();
    let reply = reply_text(outcome);
    let mut out = crate::out::stdout();
    if args.json {
        let usage = outcome.usage;
        let messages: Vec<Value> = outcome
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, m)| {
                json!({
                    "position": before + 1 + i,
                    "carriers": carriers_of(m),
                    "native_record": m.native_record().is_some(),
                    "tool_calls": m.tool_calls.as_ref().map_or(0, Vec::len),
                    "origin": m.origin,
                })
            })
            .collect();
        let body = json!({
            "session_id": session,
            "reply": reply,
            "route": chat.decision().id(),
            "requests": outcome.requests,
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output, "reasoning": usage.reasoning,
                      "cache_read": usage.cache_read, "cache_write": usage.cache_write},
            "messages": messages,
        });
        serde_json::to_writer_pretty(&mut out, &body)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{reply}")?;
        let _ = writeln!(io::stderr(), "hermes: session {session}");
    }
    out.flush()?;
    Ok(())
}

/// Runs `hermes chat -q TEXT`: one user turn with its tool loop.
pub(crate) fn run_once(engine: &Engine, args: &ChatArgs, query: &str) -> anyhow::Result<()> {
    let home = setup::hermes_home()?;
    setup::runtime()?.block_on(async {
        let mut chat = open(engine, args, &home)
            .await
            .map_err(|e| with_confirm_line(e, &args.rerun_line()))?;
        if let Some(status) = chat.preflight().await? {
            let _ = writeln!(io::stderr(), "hermes: {status}");
        }
        let before = chat.conversation.messages.len();
        let outcome = match chat.turn(query, &say).await {
            Ok(outcome) => outcome,
            Err(e) => {
                let context = match chat.id() {
                    Some(id) => format!(
                        "session {id}: the turn failed (every step before it is stored whole)"
                    ),
                    None => "the turn failed; nothing was stored".to_owned(),
                };
                return Err(anyhow::Error::new(e).context(context));
            }
        };
        print_outcome(args, &chat, before, &outcome)?;
        chat.close().await?;
        Ok(())
    })
}

/// Runs `hermes sessions compact ID [--base-url URL] [--allow-insecure-http]`.
pub(crate) fn compact_session(
    engine: &Engine,
    id: &str,
    base_url: Option<&str>,
    allow_insecure_http: bool,
) -> anyhow::Result<()> {
    let home = setup::hermes_home()?;
    let args = ChatArgs {
        query: None,
        json: false,
        target: TargetArgs {
            base_url: base_url.map(str::to_owned),
            ..TargetArgs::default()
        },
        thinking: ThinkingArgs::default(),
        resume: Some(id.to_owned()),
        no_stream: true,
        hide_reasoning: false,
        workspace: None,
        allow_insecure_http,
    };
    let mut rerun = format!("hermes sessions compact {id}");
    if let Some(url) = base_url {
        rerun.push_str(&format!(" --base-url {url}"));
    }
    setup::runtime()?.block_on(async {
        let mut chat = open(engine, &args, &home)
            .await
            .map_err(|e| with_confirm_line(e, &rerun))?;
        let line = chat
            .compact(true)
            .await?
            .unwrap_or_else(|| "nothing to compact".to_owned());
        writeln!(io::stdout(), "{line}")?;
        chat.close().await?;
        Ok(())
    })
}
