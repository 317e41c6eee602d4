//! `hermes preview`: the exact body of the next request — the bytes the wire encodes, with the
//! tools, stream and thinking request chat sends — with no network and nothing stored, settled
//! by the engine exactly as `hermes chat` would be.

use std::io::{self, Write};

use hermes_core::{CarrierSet, SessionFile};
use hermes_engine::{Engine, Preview, PreviewOptions};

use crate::cli::PreviewArgs;
use crate::error::UsageError;

fn load(engine: &Engine, args: &PreviewArgs) -> anyhow::Result<SessionFile> {
    if let Some(id) = &args.session {
        return crate::setup::runtime()?.block_on(async {
            let store = crate::setup::open_home_store(engine).await?;
            Ok(store.export(id).await?)
        });
    }
    let Some(path) = &args.history else {
        return Err(UsageError("pass --history FILE or --session ID".to_owned()).into());
    };
    crate::history_file::read(path)
}

/// Runs `hermes preview`.
pub(crate) fn run(engine: &Engine, args: &PreviewArgs) -> anyhow::Result<()> {
    let file = load(engine, args)?;
    // The same config.toml `hermes chat` reads, so the preview is the request chat would send.
    let setup = crate::setup::load(engine, crate::setup::hermes_home()?)?;
    let choice = args.target.choice();
    let runtime = crate::setup::runtime()?;
    // The tools chat offers, so the body carries the `tools` chat's would.
    let tools = crate::chat::toolbox(None, &setup)?.definitions();
    let options = PreviewOptions::new(choice)
        .defaults(runtime.block_on(setup.defaults()))
        // The flags alone: config's effort is in `defaults`, below what the history stores.
        .thinking(args.thinking.request())
        .reject(CarrierSet::of(args.reject.iter().map(|c| c.0)))
        .query(args.query.clone())
        .stream(!args.no_stream)
        .tools(tools);
    // With the account chat would send under (docs/spec.md §5a 1): its key's one-way digest.
    let mut preview =
        Preview::new(engine, file, options)?.with_account(engine, &*hermes_config::key_lookup())?;
    if args.session.is_some() {
        // What any session of the store learned a provider refuses, and the turns a request
        // left out for good (docs/spec.md §5a 3), as chat would apply them.
        preview = runtime.block_on(async {
            let store = crate::setup::open_home_store(engine).await?;
            anyhow::Ok(
                preview
                    .with_fleet_verdicts(&store, setup.config.reprobe_after())
                    .await?
                    .with_left_out(&store)
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
    let body = preview.compact_body()?;
    let mut out = crate::out::stdout();
    if args.compact {
        out.write_all(&body)?;
    } else {
        // Pretty-printed as it is written: no second, pretty copy of the body in memory.
        hermes_engine::write_pretty(&body, &mut out)?;
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
