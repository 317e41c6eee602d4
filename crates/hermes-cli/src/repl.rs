//! The interactive `hermes chat`: line editing and history, replies streamed as they arrive
//! (thinking dimmed, or hidden), a spinner until the first token, slash commands, and Ctrl-C
//! that cancels a reply without storing half of it.

use std::io::{self, IsTerminal as _, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::driver::DriverEvent;
use hermes_core::{Role, ThinkingRequest};

use hermes_engine::{ChatSession, Engine, reply_text};

use crate::chat::event_line;
use crate::cli::ChatArgs;

/// What one prompt read.
pub(crate) enum Input {
    /// A line of text.
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D or the end of input.
    Eof,
}

/// Where lines come from: the line editor, or a script in tests.
pub(crate) trait Lines {
    /// Reads one line after showing `prompt`.
    fn read(&mut self, prompt: &str) -> Input;
}

/// rustyline with history in `$HERMES_HOME/history.txt`.
struct Editor {
    editor: rustyline::DefaultEditor,
    history: PathBuf,
}

impl Lines for Editor {
    fn read(&mut self, prompt: &str) -> Input {
        match self.editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = self.editor.add_history_entry(line.as_str());
                    let _ = self.editor.save_history(&self.history);
                }
                Input::Line(line)
            }
            Err(rustyline::error::ReadlineError::Interrupted) => Input::Interrupted,
            Err(_) => Input::Eof,
        }
    }
}

/// How replies are shown.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// ANSI styling (off with `NO_COLOR` or when stdout is not a terminal).
    pub(crate) color: bool,
    /// `--hide-reasoning`.
    pub(crate) hide_reasoning: bool,
    /// Show a spinner on stderr until the first token (terminals only).
    pub(crate) spinner: bool,
}

/// Output shared with the streaming callback.
pub(crate) type Out = Arc<Mutex<dyn Write + Send>>;

const HELP: &str = "commands:
  /compact   summarise the earlier conversation now (originals stay archived)
  /branch    continue in a new session that shares this one (every carrier, the verdicts; nothing copied)
  /model P/M continue this session on provider P, model M (what each route may receive is decided per request)
  /session   show the session id, route, counts and thinking request
  /verdicts  show which carriers providers refused for this session
  /help      this list
  /exit      leave (Ctrl-D too; Ctrl-C cancels a reply, or leaves at the prompt)";

fn dim(style: Style, text: &str) -> String {
    if style.color {
        format!("\x1b[2m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

fn write_out(out: &Out, text: &str) {
    if let Ok(mut out) = out.lock() {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// Handles a slash command; `false` means leave.
fn command(
    line: &str,
    chat: &mut ChatSession,
    out: &Out,
    runtime: &tokio::runtime::Runtime,
) -> bool {
    match line.split_whitespace().next().unwrap_or_default() {
        "/exit" | "/quit" => return false,
        "/compact" => {
            let text = match runtime.block_on(chat.compact(true)) {
                Ok(Some(status)) => format!("{status}\n"),
                Ok(None) => "nothing to compact\n".to_owned(),
                Err(e) => format!("cannot compact: {e:#}\n"),
            };
            write_out(out, &text);
        }
        "/help" => write_out(out, &format!("{HELP}\n")),
        "/session" => {
            let text = match chat.id() {
                None => "no session yet: send a message first\n".to_owned(),
                Some(id) => {
                    let d = chat.decision();
                    let turns = chat
                        .conversation
                        .messages
                        .iter()
                        .filter(|m| m.role == Role::User)
                        .count();
                    let tokens = match runtime.block_on(chat.store().session(id)) {
                        Ok(m) => format!(
                            "  tokens: {} in, {} out ({} thinking)\n",
                            m.input_tokens, m.output_tokens, m.reasoning_tokens
                        ),
                        Err(e) => format!("  tokens: unknown ({e})\n"),
                    };
                    let asked = crate::sessions::thinking_words(chat.thinking());
                    let thinking = match runtime.block_on(chat.store().thinking(id)) {
                        Ok(Some(s)) if s.request() == chat.thinking() => {
                            format!("  thinking: {asked} (stored with the session)\n")
                        }
                        Ok(Some(s)) => format!(
                            "  thinking: {asked} (the session now stores {}, for its next resume)\n",
                            crate::sessions::thinking_words(s.request())
                        ),
                        Ok(None) if chat.thinking() == ThinkingRequest::NoPreference => {
                            format!("  thinking: {asked} (none stored)\n")
                        }
                        Ok(None) => {
                            format!("  thinking: {asked} (config.toml's effort; none stored)\n")
                        }
                        Err(e) => format!("  thinking: {asked} (stored request: {e})\n"),
                    };
                    format!(
                        "session {id}\n  provider {} · model {} · route {}{}\n  {} messages, {turns} user turns\n{tokens}{thinking}",
                        d.target.provider,
                        d.target.model,
                        d.id(),
                        d.echo
                            .as_ref()
                            .map_or(String::new(), |e| format!(" (must-echo {})", e.family)),
                        chat.conversation.messages.len(),
                    )
                }
            };
            write_out(out, &text);
        }
        "/verdicts" => {
            let verdicts = &chat.conversation.verdicts.0;
            let mut text = String::new();
            if verdicts.is_empty() {
                text.push_str("no verdicts: every route took what it was sent\n");
            }
            for v in verdicts {
                text.push_str(&format!(
                    "{} @ {} / {}: refused {}\n",
                    v.provider,
                    v.host,
                    v.model,
                    v.carriers.fields().join(", ")
                ));
            }
            write_out(out, &text);
        }
        "/model" => {
            let text = match line.split_whitespace().nth(1).and_then(|t| t.split_once('/')) {
                None => "usage: /model PROVIDER/MODEL (e.g. /model openrouter/anthropic/claude-sonnet-5)\n".to_owned(),
                Some((provider, model)) => match runtime.block_on(chat.switch_model(provider, model)) {
                    Ok(_) => {
                        let d = chat.decision();
                        format!(
                            "now on {} · {} (route {}); the stored conversation is unchanged\n",
                            d.target.provider,
                            d.target.model,
                            d.id()
                        )
                    }
                    Err(e) => format!("cannot switch: {e:#}\n"),
                },
            };
            write_out(out, &text);
        }
        "/branch" => {
            let text = match runtime.block_on(chat.branch()) {
                Ok((from, to)) => format!("branched {from} -> {to}; continuing on {to}\n"),
                Err(e) => format!("cannot branch: {e:#}\n"),
            };
            write_out(out, &text);
        }
        other => write_out(out, &format!("unknown command {other}; /help lists them\n")),
    }
    true
}

/// Resolves at the next SIGINT (Ctrl-C). On Unix the handler is registered when this is
/// called, not when it is first polled.
fn interrupt() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
        async move {
            match signal {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Runs one turn, streaming its output; Ctrl-C cancels it.
fn turn(
    text: &str,
    chat: &mut ChatSession,
    out: &Out,
    style: Style,
    runtime: &tokio::runtime::Runtime,
) {
    match runtime.block_on(chat.preflight()) {
        Ok(Some(status)) => write_out(out, &format!("{}\n", dim(style, &format!("· {status}")))),
        Ok(None) => {}
        Err(e) => write_out(out, &format!("cannot compact: {e:#}\n")),
    }
    let spinner = if style.spinner {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message("thinking");
        bar.enable_steady_tick(Duration::from_millis(100));
        Some(bar)
    } else {
        None
    };
    // (inside thinking, printed anything)
    let state = Mutex::new((false, false));
    let notify = |event: &DriverEvent| {
        if let Some(bar) = &spinner {
            bar.finish_and_clear();
        }
        let Ok(mut state) = state.lock() else { return };
        let text = match event {
            DriverEvent::Delta {
                reasoning: true, ..
            } if style.hide_reasoning => return,
            DriverEvent::Delta {
                reasoning: true,
                text,
            } => {
                state.0 = true;
                dim(style, text)
            }
            DriverEvent::Delta {
                reasoning: false,
                text,
            } => {
                let sep = if state.0 { "\n\n" } else { "" };
                state.0 = false;
                format!("{sep}{text}")
            }
            // Tool-call fragments are not lines: the call is announced when it runs.
            DriverEvent::ToolCallDelta { .. } => return,
            other => {
                // Events for a front end's metrics are not lines.
                let Some(line) = event_line(other) else {
                    return;
                };
                let sep = if state.1 { "\n" } else { "" };
                state.0 = false;
                format!("{sep}{}\n", dim(style, &format!("· {line}")))
            }
        };
        state.1 = !text.ends_with('\n');
        write_out(out, &text);
    };
    let before = chat.conversation.messages.len();
    let result = runtime.block_on(async {
        // The handler is in place before the turn starts (a Ctrl-C that arrives while the
        // request is still being sent cancels it too, instead of killing the process).
        let interrupted = interrupt();
        tokio::select! {
            r = chat.turn(text, &notify) => Some(r),
            _ = interrupted => None,
        }
    });
    if let Some(bar) = &spinner {
        bar.finish_and_clear();
    }
    let printed_delta = state.lock().map(|s| s.1).unwrap_or(false);
    match result {
        Some(Ok(outcome)) => {
            if !chat.streaming() {
                write_out(out, &reply_text(&outcome));
            }
            write_out(out, "\n");
        }
        Some(Err(e)) => write_out(
            out,
            &format!("{}error: {e:#}\n", if printed_delta { "\n" } else { "" }),
        ),
        None => {
            // Each finished step was stored whole (the first one with the user message); the
            // interrupted one was not. Reload, and say exactly that.
            let stored = match runtime.block_on(chat.reload()) {
                Ok(()) => chat.conversation.messages.len().saturating_sub(before),
                Err(_) => 0,
            };
            let text = if stored == 0 {
                "\n[cancelled; nothing of this turn was stored]\n".to_owned()
            } else {
                format!(
                    "\n[cancelled; {stored} message(s) of this turn were stored (the user message and each finished step, whole); the interrupted step was not]\n"
                )
            };
            write_out(out, &text);
        }
    }
}

/// The loop: read, run commands or turns, until `/exit`, Ctrl-D or Ctrl-C at the prompt.
pub(crate) fn repl_loop(
    chat: &mut ChatSession,
    lines: &mut dyn Lines,
    out: &Out,
    style: Style,
    runtime: &tokio::runtime::Runtime,
) {
    let d = chat.decision();
    let hello = format!(
        "hermes · {} · {} (route {}) · /help for commands\n",
        d.target.provider,
        d.target.model,
        d.id()
    );
    write_out(out, &dim(style, &hello));
    while let Input::Line(line) = lines.read("› ") {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('/') {
            if !command(line, chat, out, runtime) {
                break;
            }
            continue;
        }
        turn(line, chat, out, style, runtime);
    }
    if let Some(id) = chat.id() {
        write_out(out, &dim(style, &format!("session {id}\n")));
    }
}

/// Runs the interactive chat on the terminal.
pub(crate) fn run(engine: &Engine, args: &ChatArgs) -> anyhow::Result<()> {
    let home = crate::setup::hermes_home()?;
    let runtime = crate::setup::runtime()?;
    let runtime = &runtime;
    let mut chat = runtime
        .block_on(crate::chat::open(engine, args, &home))
        .map_err(|e| crate::chat::with_confirm_line(e, &args.rerun_line()))?;
    let stdout_tty = io::stdout().is_terminal();
    let style = Style {
        color: stdout_tty && std::env::var_os("NO_COLOR").is_none(),
        hide_reasoning: args.hide_reasoning,
        spinner: io::stderr().is_terminal(),
    };
    let mut editor = rustyline::DefaultEditor::new()?;
    let history = home.join("history.txt");
    let _ = editor.load_history(&history);
    let mut lines = Editor { editor, history };
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    repl_loop(&mut chat, &mut lines, &out, style, runtime);
    runtime.block_on(chat.close())?;
    Ok(())
}

#[cfg(test)]
mod tests;
