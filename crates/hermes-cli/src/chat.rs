//! `hermes chat`: user turns (with their tool loops) through the real path — route, shaping,
//! transport, refusal fallback — stored in `state.db`. `-q` runs one turn; without it the
//! interactive REPL (`repl.rs`) drives the same [`ChatSession`].

use std::io::{self, Write as _};
use std::path::Path;
use std::sync::Mutex;

use anyhow::Context as _;
use hermes_core::driver::{
    Conversation, Driver, DriverConfig, DriverEvent, SessionLog, TurnOutcome,
};
use hermes_core::verdict::VERDICTS_KEY;
use hermes_core::{
    Carrier, Message, ResolveOptions, Role, RouteDecision, RouteTarget, TargetHost, Verdicts,
};
use hermes_providers::{ChatTransport, Endpoint, HttpChat, Wire};
use hermes_store::{NewSession, SessionMeta, Store};
use serde_json::{Map, Value, json};

use crate::UsageError;
use crate::cli::ChatArgs;
use crate::config::Config;
use crate::home;
use crate::preview::thinking_request;
use crate::tools::{ToolPolicy, Toolbox};

/// The simulator profiles `--provider sim` knows: profile, the provider it stands in for
/// (which decides the route), and a default model.
pub(crate) const SIM_PROFILES: &[(&str, &str, &str)] = &[
    ("deepseek-v4", "deepseek", "deepseek-v4-pro"),
    ("deepseek-v3", "deepseek", "deepseek-v3.2"),
    ("mistral", "mistral", "magistral-medium-latest"),
    ("openrouter", "openrouter", "anthropic/claude-sonnet-5"),
    ("openai", "openai", "gpt-5"),
    ("local", "custom", "qwen3-32b"),
    ("kimi", "kimi-coding", "kimi-k2.6"),
    ("mimo", "xiaomi", "mimo-v2.5-pro"),
    ("groq", "groq", "openai/gpt-oss-120b"),
    ("cerebras", "cerebras", "gpt-oss-120b"),
    ("gemini-openai", "gemini-openai", "gemini-3-pro-preview"),
];

/// The symbolic base URL of a simulator profile.
pub(crate) fn sim_url(profile: &str) -> String {
    format!("sim://{profile}")
}

/// The profile named by a `sim://PROFILE` URL.
pub(crate) fn sim_profile(base_url: Option<&str>) -> Option<&str> {
    base_url?.strip_prefix("sim://")
}

/// Stores the session as the driver goes, one transaction per call.
struct StoreLog<'a> {
    store: &'a Store,
    session: &'a str,
    config: &'a Mutex<Map<String, Value>>,
}

#[async_trait::async_trait]
impl SessionLog for StoreLog<'_> {
    async fn append(&self, messages: &[Message]) -> Result<(), String> {
        self.store
            .append(self.session, messages)
            .await
            .map_err(|e| e.to_string())
    }

    async fn save_verdicts(&self, verdicts: &Verdicts) -> Result<(), String> {
        let config = {
            let mut config = self.config.lock().map_err(|e| e.to_string())?;
            config.insert(
                VERDICTS_KEY.to_owned(),
                serde_json::to_value(verdicts).map_err(|e| e.to_string())?,
            );
            config.clone()
        };
        self.store
            .set_model_config(self.session, &config)
            .await
            .map_err(|e| e.to_string())
    }

    async fn add_usage(&self, usage: &Value) -> Result<(), String> {
        let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0);
        self.store
            .add_usage(self.session, n("prompt_tokens"), n("completion_tokens"))
            .await
            .map_err(|e| e.to_string())
    }
}

/// What the user chose, settled against the resumed session, the config and the registry.
struct Setup {
    /// Provider id as stored.
    provider: String,
    /// Provider name the route is resolved for.
    route_provider: String,
    model: String,
    /// Base URL as stored (`sim://…` for the simulator).
    stored_base_url: Option<String>,
    /// The user named the base URL on this command line (so a resumed session records it as
    /// confirmed).
    base_url_named: bool,
    api_key: Option<String>,
    sim: Option<String>,
    reasoning_echo: bool,
}

fn settle(
    args: &ChatArgs,
    resumed: Option<&SessionMeta>,
    config: &Config,
) -> anyhow::Result<Setup> {
    let provider = args
        .provider
        .clone()
        .or_else(|| resumed.and_then(|m| m.provider.clone()))
        .or_else(|| config.provider.clone())
        .ok_or_else(|| {
            UsageError(
                "no provider: pass --provider (try `--provider sim`, which needs no key)".into(),
            )
        })?
        .trim()
        .to_lowercase();
    let same_provider = resumed.and_then(|m| m.provider.as_deref()) == Some(provider.as_str());
    let from_session = |f: fn(&SessionMeta) -> Option<String>| {
        if same_provider {
            resumed.and_then(f)
        } else {
            None
        }
    };
    let section = config.provider(&provider);
    let config_model = || {
        section.model.clone().or_else(|| {
            config
                .model
                .clone()
                .filter(|_| config.provider.as_deref() == Some(provider.as_str()))
        })
    };
    let resumed_url = from_session(|m| m.base_url.clone()).filter(|_| args.base_url.is_none());
    let base_url = args
        .base_url
        .clone()
        .or_else(|| resumed_url.clone())
        .or_else(|| section.base_url.clone());

    if provider == "sim" {
        let profile = sim_profile(base_url.as_deref())
            .unwrap_or("deepseek-v4")
            .to_owned();
        let &(_, stands_for, default_model) = SIM_PROFILES
            .iter()
            .find(|(p, ..)| *p == profile)
            .ok_or_else(|| {
                let names: Vec<&str> = SIM_PROFILES.iter().map(|p| p.0).collect();
                UsageError(format!(
                    "unknown simulator profile `{profile}`, expected one of: {}",
                    names.join(", ")
                ))
            })?;
        let model = args
            .model
            .clone()
            .or_else(|| from_session(|m| m.model.clone()))
            .or_else(config_model)
            .unwrap_or_else(|| default_model.to_owned());
        return Ok(Setup {
            provider,
            route_provider: stands_for.to_owned(),
            model,
            stored_base_url: Some(sim_url(&profile)),
            base_url_named: args.base_url.is_some(),
            api_key: None,
            sim: Some(profile),
            reasoning_echo: section.reasoning_echo,
        });
    }

    let spec = hermes_providers::provider(&provider);
    if let Some(spec) = spec.filter(|s| s.wire != Wire::Chat) {
        anyhow::bail!(
            "provider `{}` speaks the {} wire, which this build cannot send yet; chat-completions providers work today",
            spec.id,
            spec.wire.as_str()
        );
    }
    let base_url = base_url
        .or_else(|| spec.and_then(|s| s.base_url).map(str::to_owned))
        .ok_or_else(|| {
            UsageError(format!(
                "no base URL for provider `{provider}`: pass --base-url"
            ))
        })?;
    let model = args
        .model
        .clone()
        .or_else(|| from_session(|m| m.model.clone()))
        .or_else(config_model)
        .ok_or_else(|| UsageError("no model: pass --model (or set one in config.toml)".into()))?;
    let key_var = section
        .key_var
        .clone()
        .or_else(|| spec.and_then(|s| s.key_var).map(str::to_owned))
        .unwrap_or_else(|| "HERMES_API_KEY".to_owned());
    let api_key = std::env::var(&key_var)
        .ok()
        .filter(|k| !k.trim().is_empty());
    let local = TargetHost::from_base_url(&base_url).is_some_and(|h| h.is_local_endpoint());
    let optional = spec.is_none_or(|s| matches!(s.id, "custom" | "lmstudio"));
    if api_key.is_none() && !local && !optional {
        anyhow::bail!("missing API key for `{provider}`: set {key_var}");
    }
    if api_key.is_some() {
        let registry_url = spec.and_then(|s| s.base_url);
        let user_named = args.base_url.is_some()
            || resumed_url.is_none()
            || resumed.is_some_and(|m| m.base_url_confirmed)
            || section.base_url.as_deref() == Some(base_url.as_str());
        let insecure_ok = args.allow_insecure_http || config.allow_insecure_http;
        may_receive_key(&base_url, user_named, registry_url, insecure_ok)
            .map_err(|why| anyhow::anyhow!(why.message(&base_url, &key_var)))?;
    }
    Ok(Setup {
        route_provider: provider.clone(),
        provider,
        model,
        base_url_named: args.base_url.is_some(),
        stored_base_url: Some(base_url),
        api_key,
        sim: None,
        reasoning_echo: section.reasoning_echo,
    })
}

/// Why a key may not go to a base URL.
#[derive(Debug, PartialEq, Eq)]
enum KeyRefusal {
    /// The URL came with a stored or imported session, not from the user.
    NotNamed,
    /// Plain http to a host that is neither loopback nor private.
    PlainHttp,
}

impl KeyRefusal {
    /// The error the user reads: what was refused and how to say yes.
    fn message(&self, base_url: &str, key_var: &str) -> String {
        match self {
            KeyRefusal::NotNamed => format!(
                "the stored session's base URL {base_url} did not come from you (it was imported or written elsewhere), so hermes will not send your {key_var} there; if you trust it, run again with --base-url {base_url}"
            ),
            KeyRefusal::PlainHttp => format!(
                "{base_url} is plain http to a host that is neither loopback nor private, so hermes will not send your {key_var} over it; use https, or pass --allow-insecure-http (or set allow_insecure_http = true in config.toml) to send it anyway"
            ),
        }
    }
}

/// Keys only where the user sent them: the registry's own host (over https), or a URL the user
/// named (`user_named`: this command line, config.toml, or a session they confirmed). Plain
/// http carries a key only to loopback and private hosts, unless `insecure_ok`.
fn may_receive_key(
    base_url: &str,
    user_named: bool,
    registry_url: Option<&str>,
    insecure_ok: bool,
) -> Result<(), KeyRefusal> {
    let host = TargetHost::from_base_url(base_url);
    let registry_host = registry_url.and_then(TargetHost::from_base_url);
    let registry = is_https(base_url) && host.is_some() && host == registry_host;
    if !user_named && !registry {
        return Err(KeyRefusal::NotNamed);
    }
    let local = host.as_ref().is_some_and(TargetHost::is_local_endpoint);
    if !is_https(base_url) && !local && !insecure_ok {
        return Err(KeyRefusal::PlainHttp);
    }
    Ok(())
}

/// True for an `https://` URL (a URL without a scheme is read as https, as routing does).
fn is_https(base_url: &str) -> bool {
    let url = base_url.trim().to_ascii_lowercase();
    url.starts_with("https://") || !url.contains("://")
}

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
        .any(|i| matches!(i, hermes_core::DetailItem::Provider { .. }))
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
        DriverEvent::Delta { .. } => return None,
    })
}

/// Writes summaries with the session's own provider and route.
struct TransportSummarizer<'a> {
    transport: &'a HttpChat,
    decision: &'a RouteDecision,
    verdicts: &'a Verdicts,
}

#[async_trait::async_trait]
impl hermes_compaction::Summarizer for TransportSummarizer<'_> {
    async fn summarize(&self, messages: &[Message]) -> Result<String, String> {
        let mut history = messages.to_vec();
        history.push(Message::text(
            Role::User,
            hermes_compaction::SUMMARY_INSTRUCTIONS,
        ));
        let request = hermes_core::ChatRequest::build(
            &history,
            self.decision,
            self.verdicts,
            hermes_core::ThinkingRequest::NoPreference,
        );
        let target = &self.decision.target;
        let origin = hermes_core::Origin {
            provider: target.provider.clone(),
            host: target.host_key(),
            model: target.model.clone(),
        };
        let reply = hermes_core::Transport::send(self.transport, &request, origin)
            .await
            .map_err(|e| e.to_string())?;
        reply
            .message
            .content
            .as_ref()
            .and_then(|c| c.as_str().map(|s| s.into_owned()))
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| "the summary reply had no text".to_owned())
    }
}

/// A chat in progress: the store, the resolved route, the wire, and the conversation.
pub(crate) struct ChatSession {
    store: Store,
    setup: Setup,
    /// Keeps the in-process simulator alive for the session's lifetime.
    _sim: Option<hermes_sim::Sim>,
    decision: RouteDecision,
    transport: HttpChat,
    tools: Toolbox,
    driver_config: DriverConfig,
    compaction: hermes_compaction::CompactionConfig,
    /// History length when automatic compaction last could not get under the trigger.
    unfit_at: Option<usize>,
    /// The stored session, once the first turn (or `--resume`) made one.
    pub(crate) id: Option<String>,
    model_config: Mutex<Map<String, Value>>,
    pub(crate) conversation: Conversation,
}

impl ChatSession {
    /// Opens the store under `home`, settles provider, model and key, resumes when asked, and
    /// starts the simulator for `--provider sim`.
    pub(crate) async fn open(args: &ChatArgs, home: &Path) -> anyhow::Result<Self> {
        let config = crate::config::load(home)?;
        let store = home::open_store_in(home).await?;
        let resumed = match &args.resume {
            Some(id) => Some(
                store
                    .load(id)
                    .await
                    .with_context(|| format!("cannot resume session `{id}`"))?,
            ),
            None => None,
        };
        let setup = settle(args, resumed.as_ref().map(|(m, _)| m), &config)?;
        if let (Some((meta, _)), true, Some(url)) =
            (&resumed, setup.base_url_named, &setup.stored_base_url)
        {
            // The user named the URL again: from now on the session's URL is their word.
            store.confirm_base_url(&meta.id, url).await?;
        }
        // The simulator runs in this process; a resumed sim session gets a fresh one.
        let sim = match &setup.sim {
            Some(profile) => Some(hermes_sim::Sim::start(profile).await?),
            None => None,
        };
        let live_base = match &sim {
            Some(sim) => sim.base_url(),
            None => setup.stored_base_url.clone().unwrap_or_default(),
        };
        let (id, conversation, model_config) = match resumed {
            Some((meta, messages)) => {
                let verdicts = Verdicts::from_model_config(&meta.model_config)
                    .with_context(|| format!("session `{}` has unreadable verdicts", meta.id))?;
                (
                    Some(meta.id),
                    Conversation { messages, verdicts },
                    meta.model_config,
                )
            }
            None => (None, Conversation::default(), Map::new()),
        };
        let table = hermes_providers::builtin_table();
        let target = RouteTarget::new(&setup.route_provider, Some(&live_base), &setup.model);
        let decision = table.resolve(
            &target,
            ResolveOptions {
                reasoning_echo: setup.reasoning_echo,
            },
        );
        let transport = HttpChat {
            client: ChatTransport::new()?,
            endpoint: Endpoint {
                base_url: live_base,
                api_key: setup.api_key.clone(),
            },
        };
        let workspace = match args.workspace.clone().or_else(|| config.workspace.clone()) {
            Some(dir) => dir,
            None => std::env::current_dir().context("cannot read the working directory")?,
        };
        let tools = Toolbox::new(ToolPolicy {
            workspace,
            home: home.to_path_buf(),
            secrets: crate::secrets::gather(setup.api_key.as_deref(), &config),
        })?;
        let thinking = match (args.effort.as_deref(), args.no_thinking) {
            (None, false) => thinking_request(config.effort(), false),
            (effort, off) => thinking_request(effort, off),
        };
        let driver_config = DriverConfig {
            thinking,
            stream: !args.no_stream,
            tools: tools.definitions(),
            ..DriverConfig::default()
        };
        let compaction = hermes_compaction::CompactionConfig::for_model(
            &setup.model,
            &config.compaction.overrides(),
        );
        Ok(ChatSession {
            compaction,
            unfit_at: None,
            store,
            setup,
            _sim: sim,
            decision,
            transport,
            tools,
            driver_config,
            id,
            model_config: Mutex::new(model_config),
            conversation,
        })
    }

    /// The route requests resolve to.
    pub(crate) fn decision(&self) -> &RouteDecision {
        &self.decision
    }

    /// The store.
    #[cfg(test)]
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// True when replies stream (deltas arrive as the model writes).
    pub(crate) fn streaming(&self) -> bool {
        self.driver_config.stream
    }

    /// The stored session's id, creating the session (titled after `title`) on first use.
    pub(crate) async fn ensure_session(&mut self, title: &str) -> anyhow::Result<String> {
        if let Some(id) = &self.id {
            return Ok(id.clone());
        }
        let id = self
            .store
            .create_session(&NewSession {
                title: Some(title.chars().take(60).collect()),
                provider: Some(self.setup.provider.clone()),
                model: Some(self.setup.model.clone()),
                base_url: self.setup.stored_base_url.clone(),
                // Every way a new session gets its URL is the user's word: the command line,
                // config.toml or the registry.
                base_url_confirmed: true,
                ..NewSession::default()
            })
            .await?;
        self.id = Some(id.clone());
        Ok(id)
    }

    /// Runs one user turn.
    pub(crate) async fn turn(
        &mut self,
        text: &str,
        notify: &(dyn Fn(&DriverEvent) + Send + Sync),
    ) -> anyhow::Result<TurnOutcome> {
        let id = self.ensure_session(text).await?;
        let log = StoreLog {
            store: &self.store,
            session: &id,
            config: &self.model_config,
        };
        let driver = Driver {
            decision: &self.decision,
            transport: &self.transport,
            log: &log,
            tools: &self.tools,
            config: &self.driver_config,
            notify,
        };
        driver
            .run_turn(&mut self.conversation, Message::text(Role::User, text))
            .await
            .with_context(|| {
                format!("session {id}: the turn failed (everything before it is stored)")
            })
    }

    /// Compacts the stored session (SPEC §7): summarises the middle with the session's own
    /// provider, clears old tool outputs when that is not enough, archives what left the active
    /// view (never deletes it) and reloads. `manual` summarises everything it may (`/compact`);
    /// otherwise only enough to get under the trigger. Returns the status line, or `None` when
    /// nothing could shrink.
    pub(crate) async fn compact(&mut self, manual: bool) -> anyhow::Result<Option<String>> {
        let Some(id) = self.id.clone() else {
            return Ok(None);
        };
        let rows = self.store.active(&id).await?;
        let history: Vec<Message> = rows.iter().map(|r| r.message.clone()).collect();
        let mut config = self.compaction;
        if manual {
            config.target_percent = 0;
        }
        let summarizer = TransportSummarizer {
            transport: &self.transport,
            decision: &self.decision,
            verdicts: &self.conversation.verdicts,
        };
        let result =
            match hermes_compaction::compress(&history, &self.decision, &config, &summarizer).await
            {
                Ok(result) => result,
                // The summary request failed: clearing old tool outputs may still be enough.
                Err(e) => {
                    tracing::warn!(error = %e, "summary failed; trying the salvage pass");
                    hermes_compaction::salvage(&history, &self.decision, &config)
                }
            };
        let Some(result) = result else {
            return Ok(None);
        };
        let position = |i: usize| {
            rows.get(i)
                .map(|r| r.position)
                .context("compaction named a message that is not there")
        };
        let archive = result
            .archived
            .iter()
            .map(|&i| position(i))
            .collect::<anyhow::Result<Vec<i64>>>()?;
        let mut inserts = Vec::new();
        for (message, source) in result.active.iter().zip(&result.sources) {
            let slot = match source {
                hermes_compaction::Source::Kept(_) => continue,
                hermes_compaction::Source::Shrunk(i) => position(*i)?,
                hermes_compaction::Source::Checkpoint => position(
                    result
                        .checkpoint_slot
                        .context("a checkpoint without a slot")?,
                )?,
            };
            inserts.push((
                slot,
                message.clone(),
                hermes_compaction::is_checkpoint(message),
            ));
        }
        self.store.compact(&id, &archive, &inserts).await?;
        self.conversation.messages = self.store.messages(&id).await?;
        self.unfit_at = (!result.fits).then_some(self.conversation.messages.len());
        Ok(Some(result.status_line()))
    }

    /// The pre-flight check before a turn: compacts when the estimate crossed the trigger.
    pub(crate) async fn preflight(&mut self) -> anyhow::Result<Option<String>> {
        if self.id.is_none() {
            return Ok(None);
        }
        // Cheap: every text remembers its token count after the first estimate.
        let estimate = hermes_core::estimate_history(&self.conversation.messages, &self.decision);
        // After a compaction that could not get under the trigger, wait for the history to
        // grow by a protected tail's worth before trying again.
        let retry_after = self
            .unfit_at
            .map_or(0, |n| n + self.compaction.protect_last);
        if !self.compaction.over(estimate) || self.conversation.messages.len() < retry_after {
            return Ok(None);
        }
        self.compact(false).await
    }

    /// Reloads the conversation from the store (after a cancelled turn).
    pub(crate) async fn reload(&mut self) -> anyhow::Result<()> {
        if let Some(id) = &self.id {
            self.conversation.messages = self.store.messages(id).await?;
        }
        Ok(())
    }

    /// Branches the current session (all messages) and continues on the branch.
    pub(crate) async fn branch(&mut self) -> anyhow::Result<(String, String)> {
        let id = self
            .id
            .clone()
            .context("nothing to branch yet: send a message first")?;
        let branch = self.store.branch(&id, None).await?;
        self.id = Some(branch.clone());
        Ok((id, branch))
    }
}

/// The text of a turn's final answer.
pub(crate) fn reply_text(outcome: &TurnOutcome) -> String {
    outcome
        .new_messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| m.content.as_ref())
        .and_then(|c| c.as_str().map(|s| s.into_owned()))
        .unwrap_or_default()
}

fn say(event: &DriverEvent) {
    if let Some(line) = event_line(event) {
        let _ = writeln!(io::stderr(), "hermes: {line}");
    }
}

async fn run_once(args: &ChatArgs, query: &str, home: &Path) -> anyhow::Result<()> {
    let mut chat = ChatSession::open(args, home).await?;
    if let Some(status) = chat.preflight().await? {
        let _ = writeln!(io::stderr(), "hermes: {status}");
    }
    let before = chat.conversation.messages.len();
    let outcome = chat.turn(query, &say).await?;
    let session = chat.id.clone().unwrap_or_default();
    let reply = reply_text(&outcome);
    let mut out = crate::out::stdout();
    if args.json {
        let sum = |k: &str| {
            outcome
                .usage
                .iter()
                .filter_map(|u| u.get(k).and_then(Value::as_i64))
                .sum::<i64>()
        };
        let messages: Vec<Value> = outcome
            .new_messages
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
            "usage": {"prompt_tokens": sum("prompt_tokens"), "completion_tokens": sum("completion_tokens"),
                      "total_tokens": sum("total_tokens")},
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

/// Runs `hermes chat`: one turn with `-q`, else the REPL.
pub(crate) fn run(args: &ChatArgs) -> anyhow::Result<()> {
    let home = home::hermes_home()?;
    let runtime = home::runtime()?;
    match &args.query {
        Some(query) => runtime.block_on(run_once(args, query, &home)),
        None => crate::repl::run(args, &home, &runtime),
    }
}

/// Runs `hermes sessions compact ID`.
pub(crate) fn compact_session(id: &str) -> anyhow::Result<()> {
    let home = home::hermes_home()?;
    let args = ChatArgs {
        query: None,
        json: false,
        provider: None,
        model: None,
        base_url: None,
        effort: None,
        no_thinking: false,
        resume: Some(id.to_owned()),
        no_stream: true,
        hide_reasoning: false,
        workspace: None,
        allow_insecure_http: false,
    };
    home::runtime()?.block_on(async {
        let mut chat = ChatSession::open(&args, &home).await?;
        let line = chat
            .compact(true)
            .await?
            .unwrap_or_else(|| "nothing to compact".to_owned());
        writeln!(io::stdout(), "{line}")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: Option<&str> = Some("https://api.openai.com/v1");

    #[test]
    fn a_key_goes_only_where_the_user_sent_it() {
        // The registry's host over https, named or not.
        assert_eq!(
            may_receive_key("https://api.openai.com/v1", false, OPENAI, false),
            Ok(())
        );
        assert_eq!(
            may_receive_key("https://API.openai.com:443/v1/", false, OPENAI, false),
            Ok(())
        );
        // Any other URL must be the user's word.
        assert_eq!(
            may_receive_key("https://evil.test/v1", false, OPENAI, false),
            Err(KeyRefusal::NotNamed)
        );
        assert_eq!(
            may_receive_key("http://api.openai.com/v1", false, OPENAI, false),
            Err(KeyRefusal::NotNamed),
            "the registry host over plain http is not the registry's URL"
        );
        assert_eq!(
            may_receive_key("http://127.0.0.1:8080/v1", false, None, false),
            Err(KeyRefusal::NotNamed)
        );
        assert_eq!(
            may_receive_key("https://gw.test/v1", true, OPENAI, false),
            Ok(())
        );
    }

    #[test]
    fn plain_http_carries_a_key_only_to_local_hosts_or_with_the_opt_in() {
        for local in [
            "http://127.0.0.1:1234/v1",
            "http://localhost/v1",
            "http://10.1.2.3/v1",
            "http://[::1]:8/v1",
        ] {
            assert_eq!(may_receive_key(local, true, None, false), Ok(()), "{local}");
        }
        assert_eq!(
            may_receive_key("http://203.0.113.7/v1", true, None, false),
            Err(KeyRefusal::PlainHttp)
        );
        assert_eq!(
            may_receive_key("http://gw.example/v1", true, None, false),
            Err(KeyRefusal::PlainHttp)
        );
        assert_eq!(
            may_receive_key("http://gw.example/v1", true, None, true),
            Ok(())
        );
        let text = KeyRefusal::PlainHttp.message("http://gw.example/v1", "OPENAI_API_KEY");
        assert!(text.contains("--allow-insecure-http"), "{text}");
    }
}
