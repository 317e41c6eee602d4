//! What the Bedrock wires share: AWS credentials, SigV4 request signing (through `aws-sigv4`),
//! model ids as URL path segments, and event-stream frames (through `aws-smithy-eventstream`).

use hermes_core::TargetHost;

// Credentials, SigV4 and event-stream frames: the `bedrock` feature's (the AWS crates).
#[cfg(feature = "bedrock")]
use {
    aws_credential_types::Credentials,
    aws_credential_types::provider::{ProvideCredentials as _, SharedCredentialsProvider},
    aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign},
    aws_sigv4::sign::v4,
    aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder},
    aws_smithy_runtime_api::client::identity::Identity,
    aws_smithy_types::event_stream::HeaderValue,
    bytes::{Buf as _, Bytes, BytesMut},
    hermes_core::transport::TransportError,
    std::fmt,
    std::sync::Arc,
    std::time::SystemTime,
};

#[cfg(feature = "bedrock")]
/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

/// The Bedrock runtime's base URL in `region` (docs/spec.md §8a): botocore's endpoint for the
/// region's partition, neither FIPS nor dual-stack
/// (`https://bedrock-runtime.{region}.amazonaws.com`, `….amazonaws.com.cn` in China).
pub fn runtime_base_url(region: &str) -> String {
    RuntimeHost {
        region: region.to_owned(),
        fips: false,
        dual_stack: false,
    }
    .base_url()
}

/// One AWS partition as botocore's `partitions.json` describes it (`botocore/data/
/// partitions.json`): the DNS suffix of its endpoints, the dual-stack suffix where it has
/// dual-stack endpoints, and the shape of its region names (`regionRegex`, read here as a
/// prefix before `{word}-{digits}`).
struct Partition {
    /// `regionRegex` is `^{prefix}\w+-\d+$`; the standard partition takes every other region.
    region_prefix: &'static str,
    /// `dnsSuffix`.
    dns_suffix: &'static str,
    /// `dualStackDnsSuffix` when `supportsDualStack` is true.
    dual_stack_suffix: Option<&'static str>,
}

/// The partitions in botocore's `partitions.json` (`aws`, `aws-cn`, `aws-us-gov`, `aws-iso`,
/// `aws-iso-b`, `aws-iso-e`, `aws-iso-f`); every one supports FIPS. The standard partition is
/// last: botocore's `aws.partition` falls back to it for a region no other one matches.
const PARTITIONS: &[Partition] = &[
    Partition {
        region_prefix: "cn-",
        dns_suffix: "amazonaws.com.cn",
        dual_stack_suffix: Some("api.amazonwebservices.com.cn"),
    },
    Partition {
        region_prefix: "us-gov-",
        dns_suffix: "amazonaws.com",
        dual_stack_suffix: Some("api.aws"),
    },
    Partition {
        region_prefix: "us-iso-",
        dns_suffix: "c2s.ic.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "us-isob-",
        dns_suffix: "sc2s.sgov.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "eu-isoe-",
        dns_suffix: "cloud.adc-e.uk",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "us-isof-",
        dns_suffix: "csp.hci.ic.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "",
        dns_suffix: "amazonaws.com",
        dual_stack_suffix: Some("api.aws"),
    },
];

/// The partition of `region`, as botocore's `aws.partition` picks it.
fn partition_of(region: &str) -> &'static Partition {
    PARTITIONS
        .iter()
        .find(|p| {
            region.strip_prefix(p.region_prefix).is_some_and(|rest| {
                // `\w+-\d+` after the prefix (the standard partition's names have one more
                // label in front, which the shape check of `is_region` covers).
                p.region_prefix.is_empty()
                    || rest.split_once('-').is_some_and(|(word, digits)| {
                        !word.is_empty()
                            && word.bytes().all(|b| b.is_ascii_alphanumeric())
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit())
                    })
            })
        })
        .unwrap_or(&PARTITIONS[PARTITIONS.len() - 1])
}

/// True for a name shaped like an AWS region: lowercase labels joined by `-`, the first two
/// letters, the last digits, at least three (`us-east-1`, `us-gov-west-1`, `cn-north-1`).
fn is_region(name: &str) -> bool {
    let labels: Vec<&str> = name.split('-').collect();
    labels.len() >= 3
        && labels[0].len() == 2
        && labels[0].bytes().all(|b| b.is_ascii_lowercase())
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && labels[labels.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

/// A Bedrock runtime host: one of the endpoints botocore's endpoint rules for `bedrock-runtime`
/// build from a region (`botocore/data/bedrock-runtime/2023-09-30/endpoint-rule-set-1.json`):
/// `https://bedrock-runtime.{Region}.{dnsSuffix}`, with `UseFIPS` `bedrock-runtime-fips.…`, with
/// `UseDualStack` the partition's `dualStackDnsSuffix` (`api.aws`, in China
/// `api.amazonwebservices.com.cn`), both together `bedrock-runtime-fips.{Region}.{dualStackDnsSuffix}`;
/// the suffix is the one of the region's partition (`botocore/data/partitions.json`: GovCloud
/// `us-gov-*` on `amazonaws.com`, China `cn-*` on `amazonaws.com.cn`, the ISO partitions on
/// their own). This is the one recognizer every AWS wire and the relay-family table ask
/// "is this host Bedrock?"; a lookalike (another suffix, another first label, a host inside
/// one of these) is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeHost {
    /// The region the host serves, which is also the SigV4 signing region.
    pub region: String,
    /// A FIPS endpoint (`bedrock-runtime-fips.…`).
    pub fips: bool,
    /// A dual-stack endpoint (the partition's `dualStackDnsSuffix`).
    pub dual_stack: bool,
}

impl RuntimeHost {
    /// The runtime host `base_url` names, if it names one (its host as routing reads it:
    /// userinfo, port and path ignored, case-insensitive).
    pub fn of(base_url: &str) -> Option<RuntimeHost> {
        RuntimeHost::of_host(&TargetHost::from_base_url(base_url)?)
    }

    /// The runtime host `host` is, if it is one.
    pub fn of_host(host: &TargetHost) -> Option<RuntimeHost> {
        let TargetHost::Domain(name) = host else {
            return None;
        };
        let (fips, rest) = match name.strip_prefix("bedrock-runtime-fips.") {
            Some(rest) => (true, rest),
            None => (false, name.strip_prefix("bedrock-runtime.")?),
        };
        let (region, suffix) = rest.split_once('.')?;
        if !is_region(region) {
            return None;
        }
        let partition = partition_of(region);
        let dual_stack = if suffix == partition.dns_suffix {
            false
        } else if Some(suffix) == partition.dual_stack_suffix {
            true
        } else {
            return None;
        };
        Some(RuntimeHost {
            region: region.to_owned(),
            fips,
            dual_stack,
        })
    }

    /// The host name, as botocore's endpoint rules build it.
    pub fn host(&self) -> String {
        let partition = partition_of(&self.region);
        let suffix = match (self.dual_stack, partition.dual_stack_suffix) {
            (true, Some(suffix)) => suffix,
            _ => partition.dns_suffix,
        };
        let fips = if self.fips { "-fips" } else { "" };
        format!("bedrock-runtime{fips}.{}.{suffix}", self.region)
    }

    /// The base URL (`https://` and the host).
    pub fn base_url(&self) -> String {
        format!("https://{}", self.host())
    }
}

#[cfg(feature = "bedrock")]
/// An AWS access key, its secret and, for temporary credentials, the session token. `Debug`
/// never shows the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN` (temporary credentials).
    pub session_token: Option<String>,
}

#[cfg(feature = "bedrock")]
impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// How a Bedrock request is authorised: SigV4 with credentials (fixed, or asked of a provider
/// for every request), or a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`, sent as a bearer
/// token). `Debug` shows no secret.
#[cfg(feature = "bedrock")]
#[derive(Clone)]
pub enum AwsAuth {
    /// SigV4 with these credentials for `region`.
    SigV4 {
        /// The credentials.
        credentials: AwsCredentials,
        /// The signing region (the runtime host's region).
        region: String,
    },
    /// SigV4 with the credentials `provider` gives for each request (it caches and refreshes
    /// them, so temporary credentials that expire during a long session are replaced).
    Provider {
        /// The credentials source (aws-config's chain, in the CLI).
        provider: SharedCredentialsProvider,
        /// The signing region (the runtime host's region).
        region: String,
    },
    /// A Bedrock API key.
    Bearer(String),
}

#[cfg(feature = "bedrock")]
impl PartialEq for AwsAuth {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                AwsAuth::SigV4 {
                    credentials: a,
                    region: ra,
                },
                AwsAuth::SigV4 {
                    credentials: b,
                    region: rb,
                },
            ) => a == b && ra == rb,
            (AwsAuth::Bearer(a), AwsAuth::Bearer(b)) => a == b,
            // Two providers are never known to give the same credentials.
            _ => false,
        }
    }
}

#[cfg(feature = "bedrock")]
impl AwsAuth {
    /// The auth to sign one request with: a provider is asked for its current credentials; an
    /// error is one line naming what failed (never a secret).
    pub async fn current(&self) -> Result<AwsAuth, TransportError> {
        let AwsAuth::Provider { provider, region } = self else {
            return Ok(self.clone());
        };
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| TransportError::Request(format!("could not get AWS credentials: {e}")))?;
        Ok(AwsAuth::SigV4 {
            credentials: AwsCredentials {
                access_key_id: credentials.access_key_id().to_owned(),
                secret_access_key: credentials.secret_access_key().to_owned(),
                session_token: credentials.session_token().map(str::to_owned),
            },
            region: region.clone(),
        })
    }
}

#[cfg(feature = "bedrock")]
impl fmt::Debug for AwsAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AwsAuth::SigV4 {
                credentials,
                region,
            } => f
                .debug_struct("AwsAuth::SigV4")
                .field("credentials", credentials)
                .field("region", region)
                .finish(),
            AwsAuth::Provider { region, .. } => f
                .debug_struct("AwsAuth::Provider")
                .field("region", region)
                .finish_non_exhaustive(),
            AwsAuth::Bearer(_) => f.write_str("AwsAuth::Bearer(<redacted>)"),
        }
    }
}

#[cfg(feature = "bedrock")]
/// The clock signatures are dated by (`SystemTime::now` but in tests).
pub type Clock = fn() -> SystemTime;

#[cfg(feature = "bedrock")]
/// The headers to send with a POST of `body` to `url` (already percent-encoded, as it goes on
/// the wire): `content-type` as given, then the authorisation headers (an
/// [`AwsAuth::Provider`] must be made [`AwsAuth::current`] first). With SigV4 the signed
/// headers are `content-type`, `host`, `x-amz-date` and, for temporary credentials,
/// `x-amz-security-token` — the set the AWS SDKs sign — and the path is signed encoded once
/// more, as every AWS service but S3 expects (`aws-sigv4`'s default; docs/providers.md "Bedrock
/// SigV4 detail").
pub fn request_headers(
    auth: &AwsAuth,
    url: &str,
    content_type: &str,
    body: &[u8],
    now: SystemTime,
) -> Result<Vec<(String, String)>, TransportError> {
    let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
    match auth {
        AwsAuth::Bearer(key) => {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        AwsAuth::Provider { .. } => {
            return Err(TransportError::Request(
                "the AWS credentials were not resolved before signing".to_owned(),
            ));
        }
        AwsAuth::SigV4 {
            credentials,
            region,
        } => {
            let identity: Identity = Credentials::new(
                &credentials.access_key_id,
                &credentials.secret_access_key,
                credentials.session_token.clone(),
                None,
                "hermes",
            )
            .into();
            let params = v4::SigningParams::builder()
                .identity(&identity)
                .region(region)
                .name(SERVICE)
                .time(now)
                .settings(SigningSettings::default())
                .build()
                .map_err(|e| TransportError::Request(format!("could not sign the request: {e}")))?
                .into();
            let signable = SignableRequest::new(
                "POST",
                url,
                [("content-type", content_type)].into_iter(),
                SignableBody::Bytes(body),
            )
            .map_err(|e| TransportError::Request(format!("could not sign the request: {e}")))?;
            let (instructions, _) = sign(signable, &params)
                .map_err(|e| TransportError::Request(format!("could not sign the request: {e}")))?
                .into_parts();
            headers.extend(
                instructions
                    .headers()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned())),
            );
        }
    }
    Ok(headers)
}

#[cfg(feature = "bedrock")]
/// AWS auth as the transport's request signer ([`crate::Auth::Signed`]): the headers of
/// [`request_headers`], SigV4 dated by `clock` (a provider's current credentials asked for
/// each request, refreshed once the old ones expire).
#[derive(Clone, Debug)]
pub struct AwsSigner {
    /// The credentials, a provider of them, or a Bedrock API key.
    pub auth: AwsAuth,
    /// The clock signatures are dated by (`SystemTime::now` but in tests).
    pub clock: Clock,
}

#[cfg(feature = "bedrock")]
impl AwsSigner {
    /// `auth` dated by `clock`, as the signer a wire and [`crate::Auth::Signed`] hold.
    pub fn shared(auth: AwsAuth, clock: Clock) -> Arc<dyn crate::transport::Signer> {
        Arc::new(AwsSigner { auth, clock })
    }
}

#[cfg(feature = "bedrock")]
#[async_trait::async_trait]
impl crate::transport::Signer for AwsSigner {
    async fn headers(
        &self,
        url: &str,
        body: &[u8],
    ) -> Result<Vec<(String, http::HeaderValue)>, TransportError> {
        let auth = self.auth.current().await?;
        let signed = request_headers(&auth, url, "application/json", body, (self.clock)())?;
        signed
            .into_iter()
            .map(|(name, value)| {
                let mut value = http::HeaderValue::from_str(&value).map_err(|_| {
                    TransportError::Request(format!(
                        "the {name} header holds characters a header cannot carry"
                    ))
                })?;
                value.set_sensitive(name == "authorization" || name == "x-amz-security-token");
                Ok((name, value))
            })
            .collect()
    }

    /// A Bedrock API key is an account; SigV4 credentials name none (docs/spec.md §5a 1).
    fn account(&self) -> Option<String> {
        match &self.auth {
            AwsAuth::Bearer(key) => Some(crate::native::account_of(key)),
            _ => None,
        }
    }
}

/// `id` as one URL path segment, percent-encoded as the AWS SDKs do: everything but the
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`), so a model id's `:` is `%3A` and an
/// inference-profile ARN's `/` is `%2F`.
pub use crate::segment::unreserved as path_segment;

#[cfg(feature = "bedrock")]
/// One decoded event-stream frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// `:message-type`: `event` or `exception` (`error` for a service error frame).
    pub message_type: String,
    /// `:event-type` (events).
    pub event_type: Option<String>,
    /// `:exception-type` (exceptions) or `:error-code` (errors).
    pub exception_type: Option<String>,
    /// The payload (JSON for Bedrock).
    pub payload: Bytes,
}

#[cfg(feature = "bedrock")]
impl Frame {
    /// The frame is an exception or error, not an event.
    pub fn is_error(&self) -> bool {
        self.message_type != "event"
    }

    /// What an exception frame says: its type and the payload's `message` (or the payload).
    pub fn error_text(&self) -> String {
        #[derive(serde::Deserialize)]
        struct Message {
            #[serde(alias = "Message")]
            message: Option<String>,
        }
        let text = serde_json::from_slice::<Message>(&self.payload)
            .ok()
            .and_then(|m| m.message)
            .unwrap_or_else(|| String::from_utf8_lossy(&self.payload).into_owned());
        match &self.exception_type {
            Some(kind) => format!("{kind}: {text}"),
            None => text,
        }
    }
}

#[cfg(feature = "bedrock")]
/// Reads event-stream frames from the chunks of a response body as they arrive (a frame may
/// be cut across chunks anywhere, its prelude included).
#[derive(Debug, Default)]
pub struct FrameReader {
    decoder: MessageFrameDecoder,
    buffer: BytesMut,
    frames: usize,
}

#[cfg(feature = "bedrock")]
impl FrameReader {
    /// An empty reader.
    pub fn new() -> Self {
        FrameReader::default()
    }

    /// Adds the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// How many frames were read.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The next whole frame, if the chunks so far hold one. A frame whose checksum or length
    /// is wrong is a stream error.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, TransportError> {
        let decoded = self.decoder.decode_frame(&mut self.buffer).map_err(|e| {
            TransportError::Stream(format!(
                "event-stream frame {} is malformed: {e}",
                self.frames + 1
            ))
        })?;
        let message = match decoded {
            DecodedFrame::Incomplete => return Ok(None),
            DecodedFrame::Complete(message) => message,
        };
        self.frames += 1;
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| match h.value() {
                    HeaderValue::String(s) => Some(s.as_str().to_owned()),
                    _ => None,
                })
        };
        Ok(Some(Frame {
            message_type: header(":message-type").unwrap_or_else(|| "event".to_owned()),
            event_type: header(":event-type"),
            exception_type: header(":exception-type").or_else(|| header(":error-code")),
            payload: message.payload().clone(),
        }))
    }

    /// Bytes received but not yet a whole frame (a stream that ends with some is cut short).
    pub fn pending(&self) -> usize {
        self.buffer.remaining()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::testing::frame;

    fn creds(token: Option<&str>) -> AwsAuth {
        AwsAuth::SigV4 {
            credentials: AwsCredentials {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                session_token: token.map(str::to_owned),
            },
            region: "us-east-1".into(),
        }
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every endpoint form botocore's `bedrock-runtime` rules build, with the region each
    /// serves and whether it is FIPS and dual-stack.
    const RUNTIME_HOSTS: &[(&str, &str, bool, bool)] = &[
        (
            "bedrock-runtime.us-east-1.amazonaws.com",
            "us-east-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-east-1.amazonaws.com",
            "us-east-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.us-west-2.api.aws",
            "us-west-2",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.us-east-2.api.aws",
            "us-east-2",
            true,
            true,
        ),
        (
            "bedrock-runtime.eu-central-1.amazonaws.com",
            "eu-central-1",
            false,
            false,
        ),
        (
            "bedrock-runtime.ap-southeast-5.amazonaws.com",
            "ap-southeast-5",
            false,
            false,
        ),
        (
            "bedrock-runtime.us-gov-west-1.amazonaws.com",
            "us-gov-west-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
            "us-gov-west-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.us-gov-east-1.api.aws",
            "us-gov-east-1",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.us-gov-east-1.api.aws",
            "us-gov-east-1",
            true,
            true,
        ),
        (
            "bedrock-runtime.cn-north-1.amazonaws.com.cn",
            "cn-north-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.cn-northwest-1.amazonaws.com.cn",
            "cn-northwest-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.cn-north-1.api.amazonwebservices.com.cn",
            "cn-north-1",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.cn-north-1.api.amazonwebservices.com.cn",
            "cn-north-1",
            true,
            true,
        ),
        (
            "bedrock-runtime.us-iso-east-1.c2s.ic.gov",
            "us-iso-east-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-isob-east-1.sc2s.sgov.gov",
            "us-isob-east-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.eu-isoe-west-1.cloud.adc-e.uk",
            "eu-isoe-west-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-isof-south-1.csp.hci.ic.gov",
            "us-isof-south-1",
            true,
            false,
        ),
    ];

    #[test]
    fn every_runtime_endpoint_form_is_bedrock_with_its_region() {
        for &(host, region, fips, dual_stack) in RUNTIME_HOSTS {
            let want = RuntimeHost {
                region: region.to_owned(),
                fips,
                dual_stack,
            };
            assert_eq!(
                RuntimeHost::of(&format!("https://{host}")),
                Some(want.clone()),
                "{host}"
            );
            assert_eq!(want.host(), host, "botocore builds {host} back");
            // Scheme-less, upper case, a port, a path, a trailing dot: the same host.
            for url in [
                host.to_owned(),
                format!("https://{}:443/", host.to_ascii_uppercase()),
                format!("https://{host}./model/m/invoke"),
                format!("http://{host}:8080"),
            ] {
                assert_eq!(RuntimeHost::of(&url), Some(want.clone()), "{url}");
            }
        }
        assert_eq!(
            runtime_base_url("cn-north-1"),
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(
            runtime_base_url("us-gov-west-1"),
            "https://bedrock-runtime.us-gov-west-1.amazonaws.com"
        );
    }

    #[test]
    fn lookalike_and_foreign_hosts_are_not_bedrock() {
        for url in [
            "https://bedrock-runtime.us-east-1.amazonaws.com.evil.test",
            "https://evilbedrock-runtime.us-east-1.amazonaws.com",
            "https://x.bedrock-runtime.us-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.amazonaws.com@evil.test",
            "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com:443@evil.test/",
            "https://evil.test/bedrock-runtime.us-east-1.amazonaws.com",
            "https://evil.test?h=bedrock-runtime.us-east-1.amazonaws.com",
            "https://evil.test#bedrock-runtime.us-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.evil.amazonaws.com",
            "https://bedrock-runtime.amazonaws.com",
            "https://bedrock-runtime.my-bucket.s3.amazonaws.com",
            "https://bedrock-runtime.us-east-1.api.aws.evil.test",
            "https://bedrock-runtime.us_east_1.amazonaws.com",
            "https://bedrock-runtime.useast1.amazonaws.com",
            "https://bedrock-runtime.us-east-x.amazonaws.com",
            "https://bedrock-runtime-fips.us-east-1.amazonaws.com.cn",
            "https://bedrock-runtime.cn-north-1.amazonaws.com",
            "https://bedrock-runtime.cn-north-1.api.aws",
            "https://bedrock-runtime.us-east-1.api.amazonwebservices.com.cn",
            "https://bedrock-runtime.us-iso-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.c2s.ic.gov",
            "https://bedrock-runtime.us-iso-east-1.api.aws",
            "https://bedrock-runtime-dualstack.us-east-1.amazonaws.com",
            "https://bedrock-runtime-fips-fips.us-east-1.amazonaws.com",
            "https://bedrock.us-east-1.amazonaws.com",
            "https://bedrock-agent-runtime.us-east-1.amazonaws.com",
            "https://127.0.0.1:8080",
            "sim://bedrock",
            "",
        ] {
            assert_eq!(RuntimeHost::of(url), None, "{url}");
        }
    }

    #[test]
    fn model_ids_and_arns_are_one_encoded_path_segment() {
        assert_eq!(
            path_segment("anthropic.claude-opus-4-6-v1:0"),
            "anthropic.claude-opus-4-6-v1%3A0"
        );
        assert_eq!(
            path_segment("arn:aws:bedrock:us-east-1:123:inference-profile/us.x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x"
        );
    }

    #[test]
    fn sigv4_signs_content_type_host_date_and_the_session_token() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m%3A0/converse";
        let plain = request_headers(&creds(None), url, "application/json", b"{}", now).unwrap();
        let auth = header(&plain, "authorization").unwrap();
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="
            ),
            "{auth}"
        );
        assert_eq!(header(&plain, "x-amz-date"), Some("20231114T221320Z"));
        assert_eq!(header(&plain, "content-type"), Some("application/json"));
        assert!(!auth.contains("wJalr"), "the secret never leaves");

        let temp =
            request_headers(&creds(Some("TOKEN")), url, "application/json", b"{}", now).unwrap();
        assert!(
            header(&temp, "authorization")
                .unwrap()
                .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,")
        );
        assert_eq!(header(&temp, "x-amz-security-token"), Some("TOKEN"));

        let other = request_headers(&creds(None), url, "application/json", b"{ }", now).unwrap();
        assert_ne!(
            header(&other, "authorization"),
            header(&plain, "authorization"),
            "the body is signed"
        );
    }

    #[test]
    fn a_bedrock_api_key_is_a_bearer_token_and_debug_hides_every_secret() {
        let headers = request_headers(
            &AwsAuth::Bearer("ABSKkey".into()),
            "https://x/model/m/converse",
            "application/json",
            b"{}",
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(header(&headers, "authorization"), Some("Bearer ABSKkey"));
        let shown = format!(
            "{:?} {:?}",
            AwsAuth::Bearer("ABSKkey".into()),
            creds(Some("TOKEN"))
        );
        assert!(!shown.contains("ABSKkey") && !shown.contains("wJalr") && !shown.contains("TOKEN"));
    }

    #[test]
    fn frames_cut_anywhere_are_read_whole_in_order() {
        let mut bytes = frame(
            &[(":message-type", "event"), (":event-type", "messageStart")],
            r#"{"role":"assistant","p":"abc"}"#,
        );
        bytes.extend(frame(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            r#"{"message":"slow down"}"#,
        ));
        for cut in [1, 3, 7, 13, 40] {
            let mut reader = FrameReader::new();
            let mut frames = Vec::new();
            for chunk in bytes.chunks(cut) {
                reader.push(chunk);
                while let Some(frame) = reader.next_frame().unwrap() {
                    frames.push(frame);
                }
            }
            assert_eq!(frames.len(), 2, "cut {cut}");
            assert_eq!(frames[0].event_type.as_deref(), Some("messageStart"));
            assert!(!frames[0].is_error());
            assert!(frames[1].is_error());
            assert_eq!(frames[1].error_text(), "throttlingException: slow down");
            assert_eq!(reader.pending(), 0);
        }
    }

    #[test]
    fn a_corrupted_frame_is_a_stream_error() {
        let mut bytes = frame(&[(":event-type", "messageStart")], "{}");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let mut reader = FrameReader::new();
        reader.push(&bytes);
        assert!(matches!(
            reader.next_frame(),
            Err(TransportError::Stream(_))
        ));
    }
}
