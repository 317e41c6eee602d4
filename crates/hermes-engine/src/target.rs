//! The live side of a settled target — its route, its wire and, for `--provider sim`, the
//! started simulator — with what it needs to start (key and AWS credential lookups, the bounded
//! waits) and the one place a credential refusal becomes a typed error. A chat session and a
//! request both run their turns on one.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "bedrock")]
use hermes_aws::{AwsAuth, AwsSigner};
use hermes_core::{RouteDecision, TransportError};
use hermes_providers::Credentials;

use crate::Engine;
use crate::error::EngineError;
use crate::live::{LiveWire, live_base};
use crate::settle::Settled;
use crate::simulators::StartedSim;

/// Looks up an environment variable (the engine never reads the environment itself).
pub type KeyLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where AWS credentials come from (the Bedrock providers). The caller reads the AWS
/// environment, shared `credentials`/`config` files, SSO caches and `credential_process`; the
/// engine asks when a Bedrock target starts. Without the `bedrock` feature there is no Bedrock
/// target, and nothing to ask.
#[async_trait::async_trait]
pub trait AwsSecrets: Send + Sync {
    /// SigV4 credentials, or a Bedrock API key, for `region`. An error is one line saying what
    /// is missing or expired and how to fix it; it never holds a secret.
    #[cfg(feature = "bedrock")]
    async fn auth(&self, region: &str) -> Result<AwsAuth, String>;
}

/// The caller's AWS credentials source.
pub type AwsLookup = Arc<dyn AwsSecrets>;

/// Every wait a chat session bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// To connect to the provider.
    pub connect: Duration,
    /// From a request to the first byte of its response.
    pub first_byte: Duration,
    /// Silence between two chunks of a stream (or while a whole body arrives).
    pub idle: Duration,
    /// A whole user turn, tool loop included.
    pub turn: Duration,
    /// Waiting for another process to finish with a session.
    pub lease_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect: Duration::from_secs(15),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(120),
            turn: Duration::from_secs(30 * 60),
            lease_wait: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// Limits with these values.
    pub fn new(
        connect: Duration,
        first_byte: Duration,
        idle: Duration,
        turn: Duration,
        lease_wait: Duration,
    ) -> Self {
        Limits {
            connect,
            first_byte,
            idle,
            turn,
            lease_wait,
        }
    }
}

/// The live side of a settled target: the route, the wire, and the simulator when it is one.
pub(crate) struct Target {
    pub(crate) settled: Settled,
    pub(crate) decision: RouteDecision,
    pub(crate) transport: LiveWire,
    /// The in-process simulator (kept alive while the target is).
    pub(crate) sim: Option<StartedSim>,
    /// What its upstream request spans record besides the request: the server requests go to
    /// and whether message content is captured.
    pub(crate) telemetry: hermes_core::driver::Telemetry,
}

impl Target {
    pub(crate) async fn start(
        engine: &Engine,
        settled: Settled,
        limits: &Limits,
        aws: Option<&AwsLookup>,
    ) -> Result<Target, EngineError> {
        // The simulator runs in this process; a resumed sim session gets a fresh one.
        let sim = match &settled.sim {
            Some(profile) => Some(engine.start_simulator(&profile.name).await?),
            None => None,
        };
        let live_base = live_base(&settled, sim.as_ref());
        let decision = engine.resolve_live(&settled, Some(&live_base));
        let telemetry =
            hermes_core::driver::Telemetry::for_base_url(&live_base, engine.capture_content);
        let client = engine.client(hermes_providers::Waits::new(
            limits.connect,
            limits.first_byte,
            limits.idle,
        ))?;
        let key = settled.api_key.as_ref().map(|k| k.expose().to_owned());
        #[cfg(not(feature = "bedrock"))]
        let _ = aws;
        #[cfg(feature = "bedrock")]
        let aws_auth = match (settled.aws_region.as_deref(), &sim, aws) {
            (None, _, _) => None,
            // The in-process simulator knows one credential pair, and nothing else may sign.
            (Some(region), Some(sim), _) => Some(AwsAuth::SigV4 {
                credentials: sim.aws_credentials().cloned().ok_or_else(|| {
                    EngineError::Failed(format!(
                        "the simulator for provider `{}` accepts no AWS credentials",
                        settled.provider
                    ))
                })?,
                region: region.to_owned(),
            }),
            (Some(region), None, Some(source)) => Some(source.auth(region).await.map_err(
                |message| EngineError::Credentials {
                    provider: settled.provider.clone(),
                    var: None,
                    status: None,
                    message,
                },
            )?),
            (Some(_), None, None) => {
                return Err(EngineError::Credentials {
                    provider: settled.provider.clone(),
                    var: None,
                    status: None,
                    message: format!(
                        "provider `{}` needs AWS credentials, and this front end supplies none",
                        settled.provider
                    ),
                });
            }
        };
        #[cfg(feature = "bedrock")]
        let signer = aws_auth.map(|auth| AwsSigner::shared(auth, std::time::SystemTime::now));
        #[cfg(not(feature = "bedrock"))]
        let signer = None;
        let transport = LiveWire::new(
            engine,
            &settled,
            &live_base,
            client,
            Credentials {
                key,
                signer,
                sim: sim.is_some(),
            },
        )?;
        Ok(Target {
            settled,
            decision,
            transport,
            sim,
            telemetry,
        })
    }

    /// The base URL requests go to (a started simulator's loopback URL, else the settled one).
    pub(crate) fn base(&self) -> String {
        live_base(&self.settled, self.sim.as_ref())
    }
}

/// A 401/403 becomes one clear line naming the variable the key or token came from (an
/// expired Vertex token, a revoked key); any other error is kept as it is.
pub(crate) fn credential_error(
    settled: &Settled,
    error: hermes_core::driver::DriverError,
) -> EngineError {
    use hermes_core::driver::DriverError;
    let DriverError::Transport(TransportError::Http { status, body, .. }) = &error else {
        return error.into();
    };
    if !matches!(status, 401 | 403) {
        return error.into();
    }
    let said = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.pointer("/0/error/message"))
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| body.chars().take(200).collect());
    let var = (settled.aws_region.is_none()).then(|| {
        settled
            .key_var
            .clone()
            .unwrap_or_else(|| "HERMES_API_KEY".to_owned())
    });
    let message = if settled.aws_region.is_some() {
        format!(
            "{} refused the AWS credentials (HTTP {status}: {}): they are missing, wrong or expired — refresh them (e.g. `aws sso login`, new keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, or a new AWS_BEARER_TOKEN_BEDROCK)",
            settled.provider,
            said.trim(),
        )
    } else {
        let var = var.as_deref().unwrap_or_default();
        format!(
            "{} refused the credentials (HTTP {status}: {}): the key or token in {var} is missing, wrong or expired{}",
            settled.provider,
            said.trim(),
            if var == "GOOGLE_OAUTH_ACCESS_TOKEN" {
                " (a fresh one: `gcloud auth print-access-token`)"
            } else {
                ""
            }
        )
    };
    EngineError::Credentials {
        provider: settled.provider.clone(),
        var,
        status: Some(*status),
        message,
    }
}
