//! `hermes serve`: the gateway (hermes-serve) on the engine, store and settings `chat` uses,
//! with `[serve]` from config.toml; stops on SIGTERM or Ctrl-C, letting in-flight requests
//! finish within a bound.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use hermes_engine::Engine;
use hermes_serve::{
    Auth, Gateway, Limits, Policy, ServeConfig, StoreKeys, TenantLimits, TenantPolicy,
};

use crate::cli::{KeysCommand, ServeArgs, ServeCommand, ServeSessionsCommand, TenantsCommand};
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

/// The threads that serve requests: `--workers`, else `[serve] workers`, else the CPUs this
/// process may run on (`available_parallelism` reads the affinity mask and the cgroup's CPU
/// quota, so a gateway in a one-CPU container or pinned by `taskset` runs one).
fn workers(args: &ServeArgs, config: &hermes_config::Config) -> std::num::NonZeroUsize {
    args.workers
        .or(config.serve.workers)
        .or_else(|| std::thread::available_parallelism().ok())
        .unwrap_or(std::num::NonZeroUsize::MIN)
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

/// A Unix-milliseconds time as RFC 3339 (seconds).
fn when(ms: i64) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `[serve]`'s limits as the gateway takes them: what `[serve]` leaves out is the built-in
/// default ([`TenantLimits::DEFAULT`]), what a tenant's table leaves out is `[serve]`'s.
fn limits(serve: &hermes_config::ServeSection) -> Limits {
    let mut limits = Limits::default().defaults(
        TenantLimits::new(serve.requests_per_minute(), serve.max_concurrent())
            .tokens_per_minute(serve.tokens_per_minute())
            .tokens_per_day(serve.tokens_per_day())
            .or(TenantLimits::DEFAULT),
    );
    for (tenant, section) in &serve.tenants {
        limits = limits.tenant(
            tenant.clone(),
            TenantLimits::new(section.requests_per_minute(), section.max_concurrent())
                .tokens_per_minute(section.tokens_per_minute())
                .tokens_per_day(section.tokens_per_day()),
        );
    }
    limits
}

/// `[serve]`'s policy as the gateway takes it (unset values: the built-in defaults,
/// [`Policy::of`]).
fn policy(serve: &hermes_config::ServeSection) -> Policy {
    let defaults = TenantPolicy::new()
        .allow_models(serve.allow_models.clone())
        .allow_betas(serve.allow_betas.clone())
        .allow_server_tools(serve.allow_server_tools.clone())
        .max_tokens(serve.max_tokens_cap())
        .require_partition(serve.require_partition);
    let mut policy = Policy::new(defaults);
    for (tenant, section) in &serve.tenants {
        policy = policy.tenant(
            tenant.clone(),
            TenantPolicy::new()
                .allow_models(section.allow_models.clone())
                .allow_betas(section.allow_betas.clone())
                .allow_server_tools(section.allow_server_tools.clone())
                .max_tokens(section.max_tokens_cap())
                .require_partition(section.require_partition),
        );
    }
    policy
}

/// Runs `hermes serve keys|sessions|tenants …` on the store.
fn admin(engine: &Engine, command: &ServeCommand) -> anyhow::Result<()> {
    let setup = setup::load(engine, setup::hermes_home()?)?;
    setup::runtime()?.block_on(async {
        let store = setup::open_store(&setup).await?;
        match command {
            ServeCommand::Keys(command) => keys(&store, command).await,
            ServeCommand::Sessions(ServeSessionsCommand::Purge { tenant, older_than }) => {
                let deleted = store.purge_tenant(tenant, older_than.map(ago)).await?;
                writeln!(std::io::stdout(), "{deleted}")?;
                let _ = writeln!(
                    std::io::stderr(),
                    "hermes: deleted {deleted} conversation{} of tenant `{tenant}`",
                    if deleted == 1 { "" } else { "s" }
                );
                Ok(())
            }
            ServeCommand::Tenants(TenantsCommand::Remove { tenant }) => {
                // Keys first: no new conversation starts while the old ones go.
                let keys = store.revoke_tenant_keys(tenant).await?;
                let deleted = store.purge_tenant(tenant, None).await?;
                if keys == 0 && deleted == 0 {
                    anyhow::bail!("tenant `{tenant}` has no gateway keys and no conversations");
                }
                writeln!(std::io::stdout(), "{deleted}")?;
                let _ = writeln!(
                    std::io::stderr(),
                    "hermes: removed tenant `{tenant}`: {keys} key{} revoked, {deleted} conversation{} deleted",
                    if keys == 1 { "" } else { "s" },
                    if deleted == 1 { "" } else { "s" }
                );
                Ok(())
            }
        }
    })
}

/// Runs `hermes serve keys …`.
async fn keys(store: &hermes_engine::store::Store, command: &KeysCommand) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        KeysCommand::Create { tenant, admin } => {
            let (key, whose) = match tenant {
                Some(tenant) if !*admin => (
                    store.add_gateway_key(tenant).await?,
                    format!("gateway key for tenant `{tenant}`"),
                ),
                _ => (
                    store.add_admin_key().await?,
                    "admin key (it reaches /admin/v1/… and /ui, no door)".to_owned(),
                ),
            };
            let _ = writeln!(
                std::io::stderr(),
                "hermes: a new {whose}; it is shown this once (the store keeps only its digest):"
            );
            writeln!(out, "{key}")?;
        }
        KeysCommand::List { tenant } => {
            writeln!(out, "TENANT\tKEY ID\tCREATED\tLAST USED")?;
            for key in store.gateway_keys(tenant.as_deref()).await? {
                let used = key.last_used_at.map_or_else(|| "never".to_owned(), when);
                writeln!(
                    out,
                    "{}\thk_{}\t{}\t{used}",
                    if key.admin { "(admin)" } else { &key.tenant },
                    key.id,
                    when(key.created_at)
                )?;
            }
        }
        KeysCommand::Revoke {
            key_id: Some(given),
            ..
        } => {
            // What was given is never echoed: it may be the whole key, secret and all.
            let Some(id) = hermes_engine::store::revocable_key_id(given) else {
                anyhow::bail!(
                    "--key-id is not a key id (not shown: it may hold a secret); pass the key id, \
                     not the key: `hk_` and the 16 hex digits before the second `_`, as \
                     `hermes serve keys list` shows it"
                );
            };
            if !store.revoke_gateway_key(id).await? {
                anyhow::bail!("no gateway key `hk_{id}` (hermes serve keys list shows the ids)");
            }
            let _ = writeln!(std::io::stderr(), "hermes: revoked 1 key");
        }
        KeysCommand::Revoke { tenant, .. } => {
            let tenant = tenant.as_deref().unwrap_or_default();
            let n = store.revoke_tenant_keys(tenant).await?;
            if n == 0 {
                anyhow::bail!("tenant `{tenant}` has no gateway keys");
            }
            let _ = writeln!(
                std::io::stderr(),
                "hermes: revoked {n} key{} of tenant `{tenant}`",
                if n == 1 { "" } else { "s" }
            );
        }
    }
    Ok(())
}

/// Unix milliseconds `age` ago.
fn ago(age: Duration) -> i64 {
    let at = std::time::SystemTime::now()
        .checked_sub(age)
        .unwrap_or(std::time::UNIX_EPOCH);
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs `hermes serve`.
pub(crate) fn run(engine: &Engine, args: &ServeArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.command {
        return admin(engine, command);
    }
    let setup = setup::load(engine, setup::hermes_home()?)?;
    let config = &setup.config;
    if let Some(door) = config.serve.default_models.keys().find(|k| {
        !hermes_serve::Door::ALL
            .iter()
            .any(|d| d.key() == k.as_str())
    }) {
        anyhow::bail!(
            "[serve.default_models] has `{door}`: the doors are {}",
            hermes_serve::Door::ALL.map(|d| d.key()).join(", ")
        );
    }
    let addr = listen_address(args, config)?;

    check_exposure(args, config, addr)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(hermes_serve::tls::server_config(cert, key)?),
        _ => None,
    };
    setup::runtime_with(workers(args, config))?.block_on(async {
        let (store, settings) = setup::open_gateway(&setup).await?;
        // The simulators are models only with --allow-sim: without it `sim` is no provider.
        let engine = if args.allow_sim {
            engine.clone()
        } else {
            engine.clone().without_simulators()
        };
        let auth = if args.no_auth {
            Auth::None
        } else {
            Auth::Keys(std::sync::Arc::new(StoreKeys::new(store.clone())))
        };
        let settings = match config.serve.retry_window() {
            Some(window) => settings.retry_window(window),
            None => settings,
        };
        let engine = engine.with_store(store, settings);
        let mut serve = ServeConfig::new(auth)
            .models(config.serve.models.clone())
            .default_models(config.serve.default_models.clone())
            .limits(limits(&config.serve))
            .policy(policy(&config.serve))
            .retention(config.serve.retention())
            .drain(DRAIN)
            .metrics(!args.no_metrics)
            .metrics_token(config.serve.metrics_token.clone())
            .ui(args.ui || config.serve.ui);
        if let Some(max) = config.serve.max_request_bytes {
            serve = serve.max_request_bytes(max.get());
        }
        if let Some(wait) = config.serve.body_read_timeout() {
            serve = serve.body_read_timeout(wait);
        }
        let gateway = Gateway::new(engine, serve)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let doors: Vec<String> = hermes_serve::Door::ALL
            .iter()
            .map(|d| d.describe().to_owned())
            .collect();
        let threads = tokio::runtime::Handle::current().metrics().num_workers();
        let _ = writeln!(
            std::io::stderr(),
            "hermes: serving on {scheme}://{bound}: {} ({threads} thread{})",
            doors.join("; "),
            if threads == 1 { "" } else { "s" }
        );
        if args.ui || config.serve.ui {
            let _ = writeln!(
                std::io::stderr(),
                "hermes: the inspector is at {scheme}://{bound}/ui (sign in with an admin key: hermes serve keys create --admin)"
            );
        }
        match tls {
            Some(tls) => gateway.serve_tls(listener, tls, shutdown_signal()).await?,
            None => gateway.serve(listener, shutdown_signal()).await?,
        }
        Ok(())
    })
}
