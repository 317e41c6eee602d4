//! AWS credentials and region for the Bedrock providers, read here (the only reader of the
//! environment) through the official `aws-config` chain and handed to the engine.
//!
//! Credentials: `AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key) first; else the standard chain —
//! `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, then the shared
//! `credentials` and `config` files for `AWS_PROFILE` (static keys, SSO, `credential_process`,
//! assume-role, web identity), then the container and instance metadata endpoints. The region:
//! `[bedrock] region` in config.toml, else `AWS_REGION` / `AWS_DEFAULT_REGION`, else the
//! profile's `region` (never the instance metadata endpoint, so a laptop does not wait on it).

use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::environment::EnvironmentVariableRegionProvider;
use aws_config::meta::region::RegionProviderChain;
use aws_config::profile::ProfileFileRegionProvider;
use aws_credential_types::provider::ProvideCredentials as _;
use hermes_engine::providers::aws::{AwsAuth, AwsCredentials};

use crate::secrets::Secrets;

/// How long the whole credential chain may take (SSO and metadata endpoints are network calls).
const CHAIN_LIMIT: Duration = Duration::from_secs(30);

/// The region from the environment or the profile's shared config, if any.
pub(crate) async fn region() -> Option<String> {
    RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
        .or_else(ProfileFileRegionProvider::new())
        .region()
        .await
        .map(|r| r.as_ref().to_owned())
}

/// The engine's AWS credentials source; every secret it hands out is added to `secrets`, so
/// tool output never shows it.
pub(crate) struct AwsEnv {
    pub(crate) secrets: Secrets,
}

#[async_trait::async_trait]
impl hermes_engine::AwsSecrets for AwsEnv {
    async fn auth(&self, region: &str) -> Result<AwsAuth, String> {
        if let Some(key) = std::env::var("AWS_BEARER_TOKEN_BEDROCK")
            .ok()
            .filter(|k| !k.trim().is_empty())
        {
            return Ok(AwsAuth::Bearer(key.trim().to_owned()));
        }
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let config = aws_config::defaults(BehaviorVersion::latest())
            .region(aws_config::Region::new(region.to_owned()))
            .http_client(http)
            .load()
            .await;
        let provider = config.credentials_provider().ok_or_else(|| {
            "no AWS credentials provider could be built; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK".to_owned()
        })?;
        let credentials = tokio::time::timeout(CHAIN_LIMIT, provider.provide_credentials())
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
        if credentials
            .expiry()
            .is_some_and(|at| at <= std::time::SystemTime::now())
        {
            return Err(
                "the AWS credentials have expired: refresh them (e.g. `aws sso login`, or new keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN)".to_owned(),
            );
        }
        let credentials = AwsCredentials {
            access_key_id: credentials.access_key_id().to_owned(),
            secret_access_key: credentials.secret_access_key().to_owned(),
            session_token: credentials.session_token().map(str::to_owned),
        };
        self.secrets.add(
            [
                Some(credentials.secret_access_key.clone()),
                credentials.session_token.clone(),
            ]
            .into_iter()
            .flatten()
            .map(String::into_bytes),
        );
        Ok(AwsAuth::SigV4 {
            credentials,
            region: region.to_owned(),
        })
    }
}

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
