//! `hermes preview`: the exact body of the next request, with no network and nothing stored,
//! settled by the engine exactly as `hermes chat` would be.

use std::io::{self, Write};

use anyhow::Context as _;
use hermes_core::{CarrierSet, SessionFile, parse_history};
use hermes_engine::{Choice, Engine, Preview, PreviewOptions};

use crate::cli::PreviewArgs;
use crate::error::UsageError;

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

/// Runs `hermes preview`.
pub(crate) fn run(engine: &Engine, args: &PreviewArgs) -> anyhow::Result<()> {
    let file = load(args)?;
    // The same config.toml `hermes chat` reads, so the preview is the request chat would send.
    let config = crate::home::hermes_home().and_then(|home| crate::config::load(&home))?;
    let choice = Choice::new(
        args.provider.as_deref(),
        args.model.as_deref(),
        args.base_url.as_deref(),
    );
    let mut defaults = config.defaults();
    if defaults.aws_region.is_none() {
        // The environment's region (the profile's needs the async chain; a preview shows
        // us-east-1 when neither names one).
        defaults.aws_region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|r| !r.trim().is_empty()));
    }
    let options = PreviewOptions::new(choice)
        .defaults(defaults)
        // The flags alone: config's effort is in `defaults`, below what the history stores.
        .thinking(crate::cli::thinking(args.effort, args.no_thinking))
        .reject(CarrierSet::of(args.reject.iter().map(|c| c.0)))
        .query(args.query.clone());
    let mut preview = Preview::new(engine, file, options)?;
    if args.session.is_some() {
        // What any session of the store learned a provider refuses, as chat would apply it.
        preview = crate::home::runtime()?.block_on(async {
            let store = crate::home::open_store().await?;
            anyhow::Ok(
                preview
                    .with_fleet_verdicts(&store, config.reprobe_after())
                    .await?,
            )
        })?;
    }
    if args.explain {
        let mut err = io::stderr().lock();
        for line in preview.explain() {
            writeln!(err, "{line}")?;
        }
    }
    let mut out = crate::out::stdout();
    out.write_all(&preview.body()?)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
