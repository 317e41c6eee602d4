//! `hermes chat -q`: one user turn (with its tool loop) through the real path — route, shaping,
//! transport, refusal fallback — stored in `state.db`.

use std::io::{self, Write as _};
use std::sync::Mutex;

use anyhow::Context as _;
use hermes_core::driver::{Conversation, Driver, DriverConfig, DriverEvent, SessionLog};
use hermes_core::verdict::VERDICTS_KEY;
use hermes_core::{Carrier, Message, ResolveOptions, Role, RouteTarget, TargetHost, Verdicts};
use hermes_providers::{ChatTransport, Endpoint, HttpChat, Wire};
use hermes_store::{NewSession, Store};
use serde_json::{Map, Value, json};

use crate::UsageError;
use crate::cli::ChatArgs;
use crate::home;
use crate::preview::thinking_request;
use crate::tools::Toolbox;

/// The simulator profiles `--provider sim` knows: profile, the provider it stands in for
/// (which decides the route), and a default model.
pub(crate) const SIM_PROFILES: &[(&str, &str, &str)] = &[
    ("deepseek-v4", "deepseek", "deepseek-v4-pro"),
    ("deepseek-v3", "deepseek", "deepseek-v3.2"),
    ("mistral", "mistral", "magistral-medium-latest"),
    ("openrouter", "openrouter", "anthropic/claude-sonnet-5"),
    ("openai", "openai", "gpt-5"),
    ("local", "custom", "qwen3-32b"),
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
struct StoreLog {
    store: Store,
    session: String,
    config: Mutex<Map<String, Value>>,
}

#[async_trait::async_trait]
impl SessionLog for StoreLog {
    async fn append(&self, messages: &[Message]) -> Result<(), String> {
        self.store
            .append(&self.session, messages)
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
            .set_model_config(&self.session, &config)
            .await
            .map_err(|e| e.to_string())
    }

    async fn add_usage(&self, usage: &Value) -> Result<(), String> {
        let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0);
        self.store
            .add_usage(&self.session, n("prompt_tokens"), n("completion_tokens"))
            .await
            .map_err(|e| e.to_string())
    }
}

/// What the user chose, settled against the resumed session and the registry.
struct Setup {
    /// Provider id as stored.
    provider: String,
    /// Provider name the route is resolved for.
    route_provider: String,
    model: String,
    /// Base URL as stored (`sim://…` for the simulator).
    stored_base_url: Option<String>,
    api_key: Option<String>,
    sim: Option<String>,
}

fn settle(args: &ChatArgs, resumed: Option<&hermes_store::SessionMeta>) -> anyhow::Result<Setup> {
    let provider = args
        .provider
        .clone()
        .or_else(|| resumed.and_then(|m| m.provider.clone()))
        .ok_or_else(|| {
            UsageError(
                "no provider: pass --provider (try `--provider sim`, which needs no key)".into(),
            )
        })?
        .trim()
        .to_lowercase();
    let same_provider = resumed.and_then(|m| m.provider.as_deref()) == Some(provider.as_str());
    let base_url = args.base_url.clone().or_else(|| {
        if same_provider {
            resumed.and_then(|m| m.base_url.clone())
        } else {
            None
        }
    });

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
            .or_else(|| {
                if same_provider {
                    resumed.and_then(|m| m.model.clone())
                } else {
                    None
                }
            })
            .unwrap_or_else(|| default_model.to_owned());
        return Ok(Setup {
            provider,
            route_provider: stands_for.to_owned(),
            model,
            stored_base_url: Some(sim_url(&profile)),
            api_key: None,
            sim: Some(profile),
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
        .or_else(|| {
            if same_provider {
                resumed.and_then(|m| m.model.clone())
            } else {
                None
            }
        })
        .ok_or_else(|| UsageError("no model: pass --model".into()))?;
    let key_var = spec.and_then(|s| s.key_var).unwrap_or("HERMES_API_KEY");
    let api_key = std::env::var(key_var).ok().filter(|k| !k.trim().is_empty());
    let local = TargetHost::from_base_url(&base_url).is_some_and(|h| h.is_local_endpoint());
    let optional = spec.is_none_or(|s| matches!(s.id, "custom" | "lmstudio"));
    if api_key.is_none() && !local && !optional {
        anyhow::bail!("missing API key for `{provider}`: set {key_var}");
    }
    Ok(Setup {
        route_provider: provider.clone(),
        provider,
        model,
        stored_base_url: Some(base_url),
        api_key,
        sim: None,
    })
}

fn carriers_of(msg: &Message) -> Vec<&'static str> {
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

fn say(event: &DriverEvent) {
    let line = match event {
        DriverEvent::Refused { carriers, status } => format!(
            "hermes: the provider refused {} (HTTP {}); verdict stored, retrying once without {}",
            carriers.join(", "),
            status.map_or("-".to_owned(), |s| s.to_string()),
            if carriers.len() == 1 { "it" } else { "them" }
        ),
        DriverEvent::Retrying {
            attempt,
            delay,
            error,
        } => {
            format!(
                "hermes: {error}; retry {attempt} in {:.1}s",
                delay.as_secs_f64()
            )
        }
        DriverEvent::ToolCall { name } => format!("hermes: tool {name}"),
    };
    let _ = writeln!(io::stderr(), "{line}");
}

async fn run_async(args: &ChatArgs) -> anyhow::Result<()> {
    let store = home::open_store().await?;
    let resumed = match &args.resume {
        Some(id) => Some(
            store
                .load(id)
                .await
                .with_context(|| format!("cannot resume session `{id}`"))?,
        ),
        None => None,
    };
    let setup = settle(args, resumed.as_ref().map(|(m, _)| m))?;

    // The simulator runs in this process; a resumed sim session gets a fresh one.
    let sim = match &setup.sim {
        Some(profile) => Some(hermes_sim::Sim::start(profile).await?),
        None => None,
    };
    let live_base = match &sim {
        Some(sim) => sim.base_url(),
        None => setup.stored_base_url.clone().unwrap_or_default(),
    };

    let (session, conversation, config) = match resumed {
        Some((meta, messages)) => {
            let verdicts = Verdicts::from_model_config(&meta.model_config)
                .with_context(|| format!("session `{}` has unreadable verdicts", meta.id))?;
            (
                meta.id,
                Conversation { messages, verdicts },
                meta.model_config,
            )
        }
        None => {
            let title: String = args.query.chars().take(60).collect();
            let id = store
                .create_session(&NewSession {
                    title: Some(title),
                    provider: Some(setup.provider.clone()),
                    model: Some(setup.model.clone()),
                    base_url: setup.stored_base_url.clone(),
                    ..NewSession::default()
                })
                .await?;
            (id, Conversation::default(), Map::new())
        }
    };
    let mut conversation = conversation;

    let table = hermes_providers::builtin_table();
    let target = RouteTarget::new(&setup.route_provider, Some(&live_base), &setup.model);
    let decision = table.resolve(&target, ResolveOptions::default());
    let transport = HttpChat {
        client: ChatTransport::new()?,
        endpoint: Endpoint {
            base_url: live_base,
            api_key: setup.api_key.clone(),
        },
    };
    let log = StoreLog {
        store: store.clone(),
        session: session.clone(),
        config: Mutex::new(config),
    };
    let tools = Toolbox::builtin();
    let driver_config = DriverConfig {
        thinking: thinking_request(args.effort.as_deref(), args.no_thinking),
        stream: !args.no_stream,
        tools: tools.definitions(),
        ..DriverConfig::default()
    };
    let driver = Driver {
        decision: &decision,
        transport: &transport,
        log: &log,
        tools: &tools,
        config: &driver_config,
        notify: &say,
    };
    let before = conversation.messages.len();
    let outcome = driver
        .run_turn(&mut conversation, Message::text(Role::User, &args.query))
        .await
        .with_context(|| {
            format!("session {session}: the turn failed (everything before it is stored)")
        })?;

    let reply = outcome
        .new_messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| m.content.as_ref())
        .and_then(|c| c.as_str().map(|s| s.into_owned()))
        .unwrap_or_default();
    let mut out = io::stdout().lock();
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
            "route": decision.id(),
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

/// Runs `hermes chat -q`.
pub(crate) fn run(args: &ChatArgs) -> anyhow::Result<()> {
    home::runtime()?.block_on(run_async(args))
}
