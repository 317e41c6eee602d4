//! AWS credentials and region for the Bedrock providers, read here (the engine never reads the
//! environment) and handed to the engine.
//!
//! Credentials: `AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key) first; else
//! `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`. With the `aws-chain`
//! feature the rest of the official `aws-config` chain follows: the shared `credentials` and
//! `config` files for `AWS_PROFILE` (static keys, SSO, `credential_process`, assume-role, web
//! identity), then the container and instance metadata endpoints. The feature is off by default
//! because the chain (the STS, SSO and SSO-OIDC clients) is an eighth of a cold build that most
//! users never use. The region: `[bedrock] region` in config.toml, else `AWS_REGION` /
//! `AWS_DEFAULT_REGION`, else (with `aws-chain`) the profile's `region` — never the instance
//! metadata endpoint, so a laptop does not wait on it. Credentials are asked for again before
//! each request and refreshed ahead of their expiry, so a long session outlives temporary
//! credentials.

// Credentials (the `bedrock` feature's: without it there is no Bedrock provider to sign for).
#[cfg(feature = "bedrock")]
use {
    aws_credential_types::Credentials,
    aws_credential_types::provider::error::CredentialsError,
    aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future},
    hermes_engine::providers::aws::AwsAuth,
    std::sync::Mutex,
    std::time::{Duration, SystemTime},
};

use crate::secrets::Secrets;

#[cfg(feature = "bedrock")]
/// How to install a hermes that reads AWS profiles, SSO and `credential_process`.
const CHAIN_INSTALL: &str = "cargo install --path crates/hermes-cli --features aws-chain";

#[cfg(feature = "bedrock")]
/// How long the whole credential chain may take (SSO and metadata endpoints are network calls).
const CHAIN_LIMIT: Duration = Duration::from_secs(30);

/// The region from the environment or the profile's shared config, if any.
#[cfg(feature = "aws-chain")]
pub async fn region() -> Option<String> {
    use aws_config::environment::EnvironmentVariableRegionProvider;
    use aws_config::meta::region::RegionProviderChain;
    use aws_config::profile::ProfileFileRegionProvider;
    RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
        .or_else(ProfileFileRegionProvider::new())
        .region()
        .await
        .map(|r| r.as_ref().to_owned())
}

/// The region from the environment (see [`env_region`]); a profile's region needs the
/// `aws-chain` feature.
#[cfg(not(feature = "aws-chain"))]
#[allow(clippy::unused_async)] // the same signature as the chain's reader
pub async fn region() -> Option<String> {
    env_region(|name| std::env::var(name).ok())
}

/// `AWS_REGION`, then `AWS_DEFAULT_REGION` (read through `var`), if either is set.
#[cfg_attr(feature = "aws-chain", allow(dead_code))] // the chain reads these itself
fn env_region(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .into_iter()
        .filter_map(var)
        .map(|region| region.trim().to_owned())
        .find(|region| !region.is_empty())
}

/// The engine's AWS credentials source; every secret it hands out is added to `secrets`, so
/// tool output never shows it.
pub struct AwsEnv {
    /// Where every credential fetched is added for redaction.
    pub secrets: Secrets,
}

#[async_trait::async_trait]
impl hermes_engine::AwsSecrets for AwsEnv {
    #[cfg(feature = "bedrock")]
    async fn auth(&self, region: &str) -> Result<AwsAuth, String> {
        if let Some(key) = std::env::var("AWS_BEARER_TOKEN_BEDROCK")
            .ok()
            .filter(|k| !k.trim().is_empty())
        {
            return Ok(AwsAuth::Bearer(key.trim().to_owned()));
        }
        refreshing(chain(region).await?, self.secrets.clone(), region).await
    }
}

#[cfg(feature = "bedrock")]
/// The official credential chain (environment, profiles, SSO, `credential_process`,
/// assume-role, web identity, container and instance metadata).
#[cfg(feature = "aws-chain")]
async fn chain(region: &str) -> Result<SharedCredentialsProvider, String> {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new(region.to_owned()))
        .http_client(http_client())
        .load()
        .await;
    config.credentials_provider().ok_or_else(|| {
        "no AWS credentials provider could be built; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK".to_owned()
    })
}

#[cfg(feature = "bedrock")]
/// The credentials in the environment (see [`env_credentials`]).
#[cfg(not(feature = "aws-chain"))]
#[allow(clippy::unused_async)] // the same signature as the chain
async fn chain(_region: &str) -> Result<SharedCredentialsProvider, String> {
    env_credentials(|name| std::env::var(name).ok())
}

#[cfg(feature = "bedrock")]
/// The credentials in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` (read
/// through `var`), or an error naming them and, for profiles, SSO and `credential_process`, the
/// build that reads them.
#[cfg_attr(feature = "aws-chain", allow(dead_code))] // the chain reads these itself
fn env_credentials(
    var: impl Fn(&str) -> Option<String>,
) -> Result<SharedCredentialsProvider, String> {
    let var = |name: &str| {
        var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => Ok(SharedCredentialsProvider::new(Credentials::new(
            key,
            secret,
            var("AWS_SESSION_TOKEN"),
            None,
            "environment",
        ))),
        _ => {
            let profile = var("AWS_PROFILE").map_or_else(String::new, |p| {
                format!(" (AWS_PROFILE={p} is set, but this hermes does not read profiles)")
            });
            Err(format!(
                "no AWS credentials in the environment{profile}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key); profiles, SSO and credential_process need a hermes built with the AWS credential chain: {CHAIN_INSTALL}"
            ))
        }
    }
}

/// The AWS chain's HTTP client (SSO, STS, metadata endpoints): rustls with ring, no aws-lc.
#[cfg(feature = "aws-chain")]
fn http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

#[cfg(feature = "bedrock")]
/// SigV4 auth for `region` whose credentials come from `chain` for every request, through a
/// [`Refreshing`] cache; the first ones are fetched now, so a missing or expired credential is
/// a clear error before anything is sent.
async fn refreshing(
    chain: SharedCredentialsProvider,
    secrets: Secrets,
    region: &str,
) -> Result<AwsAuth, String> {
    let cache = Refreshing {
        chain,
        secrets,
        cached: Mutex::new(None),
    };
    cache.get().await?;
    Ok(AwsAuth::Provider {
        provider: SharedCredentialsProvider::new(cache),
        region: region.to_owned(),
    })
}

#[cfg(feature = "bedrock")]
/// Credentials are fetched again when they expire within this (the AWS SDKs refresh cached
/// credentials ahead of expiry the same way), so no request is signed with ones about to lapse.
const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);

#[cfg(feature = "bedrock")]
/// The aws-config chain behind a cache: its credentials are kept until they come within
/// [`REFRESH_BEFORE`] of their expiry (forever when they have none, as for static keys), then
/// fetched again — so a session outliving temporary credentials (SSO, `credential_process`,
/// assume-role) signs with new ones. Every credential fetched is added to the redaction list.
#[derive(Debug)]
struct Refreshing {
    chain: SharedCredentialsProvider,
    secrets: Secrets,
    cached: Mutex<Option<Credentials>>,
}

#[cfg(feature = "bedrock")]
impl Refreshing {
    /// The current credentials, or one line saying what is missing or expired.
    async fn get(&self) -> Result<Credentials, String> {
        let now = SystemTime::now();
        let cached = self
            .cached
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|c| c.expiry().is_none_or(|at| at > now + REFRESH_BEFORE));
        if let Some(credentials) = cached {
            return Ok(credentials);
        }
        let credentials = tokio::time::timeout(CHAIN_LIMIT, self.chain.provide_credentials())
            .await
            .map_err(|_| {
                format!(
                    "no AWS credentials within {} s: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE (shared credentials/config, SSO, credential_process), or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)",
                    CHAIN_LIMIT.as_secs()
                )
            })?
            .map_err(|e| {
                format!(
                    "no usable AWS credentials ({}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE (shared credentials/config, SSO, credential_process), or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key); for SSO, `aws sso login`",
                    first_line(&e)
                )
            })?;
        self.secrets.add(
            [
                Some(credentials.secret_access_key().to_owned()),
                credentials.session_token().map(str::to_owned),
            ]
            .into_iter()
            .flatten()
            .map(String::into_bytes),
        );
        if credentials.expiry().is_some_and(|at| at <= now) {
            return Err(
                "the AWS credentials have expired: refresh them (e.g. `aws sso login`, or new keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN)".to_owned(),
            );
        }
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = Some(credentials.clone());
        Ok(credentials)
    }
}

#[cfg(feature = "bedrock")]
impl ProvideCredentials for Refreshing {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(async move {
            self.get().await.map_err(CredentialsError::provider_error)
        })
    }
}

#[cfg(feature = "bedrock")]
/// The innermost cause of an AWS error on one line (the outer ones only wrap it).
fn first_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause
        .to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
#[cfg(feature = "bedrock")]
mod tests {
    use std::path::Path;

    use hermes_aws::AwsSigner;
    use hermes_core::Wire as _;
    use hermes_core::{Message, Origin, RequestParts, ResolveOptions, Role, RouteTarget, Verdicts};
    use hermes_providers::{ChatTransport, builtin_table};
    use hermes_sim::Sim;
    use hermes_wire_bedrock::{BedrockWire, Target};

    use super::*;

    const MODEL: &str = "us.anthropic.claude-opus-4-6-v1:0";

    /// A `credential_process` profile whose script prints the key in `dir/key` (its secret and
    /// token derived from it) expiring in `dir/minutes` minutes: what an SSO or STS helper does.
    #[cfg(feature = "aws-chain")]
    #[allow(deprecated)] // aws-config's own names for aws-runtime's profile-file types
    fn credential_process(dir: &Path) -> SharedCredentialsProvider {
        use aws_config::profile::profile_file::{ProfileFileKind, ProfileFiles};
        use std::os::unix::fs::PermissionsExt as _;
        let script = dir.join("creds.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nk=$(cat {d}/key); m=$(cat {d}/minutes)\nprintf '{{\"Version\":1,\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"secret-%s\",\"SessionToken\":\"token-%s\",\"Expiration\":\"%s\"}}' \"$k\" \"$k\" \"$k\" \"$(date -u -d \"+$m minutes\" +%Y-%m-%dT%H:%M:%SZ)\"\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        let config = dir.join("config");
        std::fs::write(
            &config,
            format!("[profile p]\ncredential_process = {}\n", script.display()),
        )
        .unwrap();
        SharedCredentialsProvider::new(
            aws_config::profile::ProfileFileCredentialsProvider::builder()
                .configure(
                    &aws_config::provider_config::ProviderConfig::empty()
                        .with_http_client(http_client()),
                )
                .profile_files(
                    ProfileFiles::builder()
                        .with_file(ProfileFileKind::Config, config)
                        .build(),
                )
                .profile_name("p")
                .build(),
        )
    }

    fn set(dir: &Path, key: &str, minutes: u32) {
        std::fs::write(dir.join("key"), key).unwrap();
        std::fs::write(dir.join("minutes"), minutes.to_string()).unwrap();
    }

    fn rotate(sim: &Sim, key: &str) {
        sim.set_aws_credentials(key, format!("secret-{key}"), Some(format!("token-{key}")));
    }

    /// One Converse turn through the wire: the simulator's status.
    async fn turn(wire: &BedrockWire, sim: &Sim) -> u16 {
        let history = [Message::text(Role::User, "hi")];
        let decision = builtin_table().resolve(
            &RouteTarget::new("bedrock", Some(&sim.base_url()), MODEL),
            ResolveOptions::default(),
        );
        let verdicts = Verdicts::default();
        let out = wire
            .encode(&RequestParts::new(&history, &decision, &verdicts))
            .unwrap();
        let origin = Origin {
            provider: "bedrock".into(),
            host: "127.0.0.1".into(),
            model: MODEL.into(),
        };
        let _ = wire.send(&out, origin, &|_| {}).await;
        sim.requests().last().unwrap().status
    }

    /// An environment of `pairs`, read as `std::env::var` would.
    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[tokio::test]
    async fn without_the_chain_keys_come_from_the_environment_and_a_profile_names_the_build() {
        let provider = env_credentials(env(&[
            ("AWS_ACCESS_KEY_ID", " AKIDENV "),
            ("AWS_SECRET_ACCESS_KEY", "secret-env"),
            ("AWS_SESSION_TOKEN", "token-env"),
        ]))
        .unwrap();
        let credentials = provider.provide_credentials().await.unwrap();
        assert_eq!(credentials.access_key_id(), "AKIDENV");
        assert_eq!(credentials.secret_access_key(), "secret-env");
        assert_eq!(credentials.session_token(), Some("token-env"));
        assert_eq!(credentials.expiry(), None);

        let err = env_credentials(env(&[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_PROFILE", "work"),
        ]))
        .err()
        .unwrap();
        assert!(
            err.starts_with("no AWS credentials in the environment (AWS_PROFILE=work is set, but this hermes does not read profiles): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            "{err}"
        );
        assert!(err.ends_with(&format!(": {CHAIN_INSTALL}")), "{err}");
        assert!(CHAIN_INSTALL.contains("--features aws-chain"));
        let err = env_credentials(env(&[])).err().unwrap();
        assert!(
            err.starts_with("no AWS credentials in the environment: "),
            "{err}"
        );

        assert_eq!(env_region(env(&[])), None);
        assert_eq!(
            env_region(env(&[
                ("AWS_REGION", " "),
                ("AWS_DEFAULT_REGION", "eu-west-3")
            ])),
            Some("eu-west-3".to_owned())
        );
        assert_eq!(
            env_region(env(&[
                ("AWS_REGION", "us-east-2"),
                ("AWS_DEFAULT_REGION", "eu-west-3")
            ])),
            Some("us-east-2".to_owned())
        );
    }

    #[cfg(feature = "aws-chain")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_request_signs_with_the_current_credentials_of_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        set(dir.path(), "AKIDFIRST", 2);
        let sim = Sim::builder(hermes_sim::Profile::builtin("bedrock").unwrap())
            .aws_credentials(
                "AKIDFIRST",
                "secret-AKIDFIRST",
                Some("token-AKIDFIRST".into()),
            )
            .start()
            .await
            .unwrap();
        let secrets = Secrets::default();
        let auth = refreshing(credential_process(dir.path()), secrets.clone(), "us-east-1")
            .await
            .unwrap();
        let wire = BedrockWire {
            client: ChatTransport::new().unwrap(),
            target: Target {
                base_url: sim.base_url(),
                max_tokens: None,
                account: None,
            },
            auth: Some(AwsSigner::shared(auth, SystemTime::now)),
        };
        assert_eq!(turn(&wire, &sim).await, 200);

        // The temporary credentials are replaced (they expire within the refresh window): the
        // next request of the same session signs with the new ones, which AWS now wants.
        set(dir.path(), "AKIDSECOND", 2);
        rotate(&sim, "AKIDSECOND");
        assert_eq!(
            turn(&wire, &sim).await,
            200,
            "{}",
            sim.requests().last().unwrap().response
        );
        assert_eq!(
            secrets.redact("secret-AKIDSECOND token-AKIDSECOND secret-AKIDFIRST"),
            "[redacted] [redacted] [redacted]",
            "every credential fetched is redacted"
        );

        // Credentials far from expiry are kept: the chain is not run for every request.
        set(dir.path(), "AKIDTHIRD", 60);
        rotate(&sim, "AKIDTHIRD");
        assert_eq!(turn(&wire, &sim).await, 200);
        set(dir.path(), "AKIDFOURTH", 60);
        assert_eq!(turn(&wire, &sim).await, 200, "still the cached third key");
    }
}
