//! `hermes preview`: the exact body of the next chat-completions request, with no network and
//! nothing stored.

use std::io::{self, Write};

use anyhow::Context as _;
use hermes_core::{
    Carrier, CarrierSet, ChatRequest, Effort, Message, ResolveOptions, Role, RouteTarget,
    SessionFile, ShapeContext, ThinkingRequest, parse_history,
};

use crate::UsageError;
use crate::cli::PreviewArgs;

fn load(args: &PreviewArgs) -> anyhow::Result<SessionFile> {
    if let Some(id) = &args.session {
        return crate::home::runtime()?.block_on(async {
            let store = crate::home::open_store().await?;
            Ok(store.export(id).await?)
        });
    }
    let Some(path) = &args.history else {
        return Err(UsageError("pass --history FILE or --session ID".to_owned()).into());
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_history(&text).with_context(|| format!("{} is not a valid history", path.display()))
}

/// The thinking request of `--effort` / `--no-thinking`.
pub(crate) fn thinking_request(effort: Option<&str>, no_thinking: bool) -> ThinkingRequest {
    match (effort, no_thinking) {
        (_, true) => ThinkingRequest::Off,
        (Some(word), false) => {
            Effort::parse(word).map_or(ThinkingRequest::NoPreference, ThinkingRequest::Effort)
        }
        (None, false) => ThinkingRequest::NoPreference,
    }
}

/// Runs `hermes preview`.
pub(crate) fn run(args: &PreviewArgs) -> anyhow::Result<()> {
    let mut session = load(args)?;

    let file_provider = session.provider.as_deref().map(|p| p.trim().to_lowercase());
    let provider = args
        .provider
        .clone()
        .or_else(|| session.provider.clone())
        .ok_or_else(|| {
            UsageError(
                "no provider: pass --provider, or use a history file that names one".to_owned(),
            )
        })?;
    let model = args
        .model
        .clone()
        .or_else(|| session.model.clone())
        .ok_or_else(|| {
            UsageError("no model: pass --model, or use a history file that names one".to_owned())
        })?;
    let same_provider = file_provider.as_deref() == Some(provider.trim().to_lowercase().as_str());
    // The same config.toml `hermes chat` reads, so the preview is the request chat would send.
    let config = crate::home::hermes_home().and_then(|home| crate::config::load(&home))?;
    let section = config.provider(&provider);
    let base_url = args
        .base_url
        .clone()
        .or_else(|| {
            if same_provider {
                session.base_url.clone()
            } else {
                None
            }
        })
        .or_else(|| section.base_url.clone())
        .or_else(|| {
            hermes_providers::provider(&provider)
                .and_then(|p| p.base_url)
                .map(str::to_owned)
        });

    // A simulator session routes as the provider its profile stands in for.
    let route_provider = match crate::chat::sim_profile(base_url.as_deref()) {
        Some(profile) if provider.trim().eq_ignore_ascii_case("sim") => crate::chat::SIM_PROFILES
            .iter()
            .find(|p| p.0 == profile)
            .map_or(provider.clone(), |p| p.1.to_owned()),
        _ => provider.clone(),
    };
    let target = RouteTarget::new(&route_provider, base_url.as_deref(), &model);
    let table = hermes_providers::builtin_table();
    let decision = table.resolve(
        &target,
        ResolveOptions {
            reasoning_echo: section.reasoning_echo,
        },
    );

    let mut verdicts = session.verdicts()?;
    let rejected = CarrierSet::of(args.reject.iter().filter_map(|f| Carrier::parse(f)));
    if rejected.contains(Carrier::ReasoningContent)
        && let Some(echo) = &decision.echo
    {
        return Err(UsageError(format!(
                "--reject reasoning_content is refused: route `{}` is must-echo (family {}), where reasoning_content is required",
                decision.id(),
                echo.family
            ))
            .into());
    }
    verdicts.record(&target, rejected);

    if let Some(text) = &args.query {
        session.messages.push(Message::text(Role::User, text));
    }

    if args.explain {
        let ctx = ShapeContext::new(&decision, &verdicts);
        let mut err = io::stderr().lock();
        let echo = decision
            .echo
            .as_ref()
            .map_or("no".to_owned(), |e| format!("yes (family {})", e.family));
        let refused = ctx.refused.fields();
        writeln!(
            err,
            "route {} ({}); reads: {}; must-echo: {echo}; refused here: {}",
            decision.id(),
            decision.matched_by,
            if decision.strict {
                "nothing (strict schema)".to_owned()
            } else {
                decision.carriers.fields().join(", ")
            },
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            },
        )?;
        for line in ctx.explain(&session.messages) {
            writeln!(err, "{line}")?;
        }
    }

    let request = ChatRequest::build(
        &session.messages,
        &decision,
        &verdicts,
        match (args.effort.as_deref(), args.no_thinking) {
            (None, false) => thinking_request(config.effort(), false),
            (effort, off) => thinking_request(effort, off),
        },
    );
    let mut out = crate::out::stdout();
    serde_json::to_writer_pretty(&mut out, &request)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
