//! `hermes serve`: the gateway (hermes-serve) on the engine, store and settings `chat` uses,
//! with `[serve]` from config.toml; stops on SIGTERM or Ctrl-C, letting in-flight requests
//! finish within a bound.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use hermes_engine::Engine;
use hermes_serve::{Auth, Gateway, ServeConfig};

use crate::cli::{KeysCommand, ServeArgs, ServeCommand};
use crate::setup;

/// How long in-flight requests may go on after SIGTERM or Ctrl-C.
const DRAIN: Duration = Duration::from_secs(30);

/// Where to listen: `--listen`, else `[serve] listen`, else 127.0.0.1:8642.
fn listen_address(args: &ServeArgs, config: &hermes_config::Config) -> anyhow::Result<SocketAddr> {
    if let Some(addr) = args.listen {
        return Ok(addr);
    }
    config
        .serve
        .listen_or(hermes_serve::DEFAULT_LISTEN)
        .map_err(setup::error)
}

/// Refuses what cannot be served safely at `addr`: `--no-auth` off loopback, plain HTTP off
/// loopback without `--tls-cert`/`--tls-key` or `--behind-tls-proxy` (keys would travel in
/// clear), and open metrics off loopback (they name tenants).
fn check_exposure(
    args: &ServeArgs,
    config: &hermes_config::Config,
    addr: SocketAddr,
) -> anyhow::Result<()> {
    let loopback = addr.ip().is_loopback();
    if args.no_auth && !loopback {
        anyhow::bail!(
            "--no-auth is for loopback addresses only; {addr} is not one (use 127.0.0.1 or ::1)"
        );
    }
    if !loopback && !args.behind_tls_proxy && args.tls_cert.is_none() {
        anyhow::bail!(
            "{addr} is not a loopback address: serve HTTPS (--tls-cert FILE --tls-key FILE), or \
             put a TLS proxy in front and pass --behind-tls-proxy"
        );
    }
    let no_token = config
        .serve
        .metrics_token
        .as_deref()
        .is_none_or(|t| t.trim().is_empty());
    if !loopback && !args.no_metrics && no_token {
        anyhow::bail!(
            "{addr} is not a loopback address and GET /metrics names tenants: set `metrics_token` in [serve] of config.toml (scrapers then send `Authorization: Bearer <metrics_token>`), or pass --no-metrics"
        );
    }
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    let _ = writeln!(
        std::io::stderr(),
        "hermes: shutting down: no new connections; in-flight requests have {}s to finish",
        DRAIN.as_secs()
    );
}

/// Gateway keys checked against the store: a key's tenant, or none.
struct StoreKeys(hermes_engine::store::Store);

#[async_trait::async_trait]
impl hermes_serve::Keys for StoreKeys {
    async fn tenant(&self, bearer: &str) -> Result<Option<String>, hermes_serve::KeysError> {
        Ok(self.0.tenant_for_key(bearer).await?)
    }
}

/// Runs `hermes serve keys …`.
fn keys(command: &KeysCommand) -> anyhow::Result<()> {
    let setup = setup::load(setup::hermes_home()?)?;
    setup::runtime()?.block_on(async {
        let store = setup::open_store(&setup).await?;
        let mut out = std::io::stdout().lock();
        match command {
            KeysCommand::Create { tenant } => {
                let key = store.add_gateway_key(tenant).await?;
                let _ = writeln!(
                    std::io::stderr(),
                    "hermes: a new gateway key for tenant `{tenant}`; it is shown this once (the store keeps only its digest):"
                );
                writeln!(out, "{key}")?;
            }
            KeysCommand::List { tenant } => {
                for key in store.gateway_keys(tenant).await? {
                    writeln!(out, "hk_{}\t{}\t{}", key.id, key.tenant, key.created_at)?;
                }
            }
            KeysCommand::Revoke { id } => {
                if !store.revoke_gateway_key(id).await? {
                    anyhow::bail!("no gateway key `{id}`");
                }
                let _ = writeln!(std::io::stderr(), "hermes: revoked");
            }
        }
        Ok(())
    })
}

/// Runs `hermes serve`.
pub(crate) fn run(engine: &Engine, args: &ServeArgs) -> anyhow::Result<()> {
    if let Some(ServeCommand::Keys(command)) = &args.command {
        return keys(command);
    }
    let setup = setup::load(setup::hermes_home()?)?;
    let config = &setup.config;
    let addr = listen_address(args, config)?;
    check_exposure(args, config, addr)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(hermes_serve::tls::server_config(cert, key)?),
        _ => None,
    };
    setup::runtime()?.block_on(async {
        let (store, settings) = setup::open(&setup).await?;
        let engine = engine.clone();
        let auth = if args.no_auth {
            Auth::None
        } else {
            Auth::Keys(std::sync::Arc::new(StoreKeys(store.clone())))
        };
        let engine = engine.with_store(store, settings);
        let mut serve = ServeConfig::new(auth)
            .models(config.serve.models.clone())
            .drain(DRAIN)
            .metrics(!args.no_metrics)
            .metrics_token(config.serve.metrics_token.clone());
        if let Some(max) = config.serve.max_body {
            serve = serve.max_body(max.get());
        }
        let gateway = Gateway::new(engine, serve)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let _ = writeln!(
            std::io::stderr(),
            "hermes: serving OpenAI chat-completions on {scheme}://{bound}/v1"
        );
        match tls {
            Some(tls) => gateway.serve_tls(listener, tls, shutdown_signal()).await?,
            None => gateway.serve(listener, shutdown_signal()).await?,
        }
        Ok(())
    })
}
