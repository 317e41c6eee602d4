//! hermes-aws: what the AWS crates do for the Bedrock wires (Converse, `hermes-wire-bedrock`,
//! and the Anthropic wire's InvokeModel door, `hermes-wire-anthropic`'s `bedrock` feature):
//! AWS credentials and SigV4 request signing (through `aws-sigv4`, as the transport's
//! [`Signer`]: [`AwsSigner`]) and event-stream frames (through `aws-smithy-eventstream`:
//! [`FrameReader`]). The only crate of hermes that depends on an AWS crate, so a build without
//! Bedrock holds none. The Bedrock runtime's hosts need no AWS crate: they are
//! `hermes_providers::aws`.

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials as _, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::event_stream::HeaderValue;
use bytes::{Buf as _, Bytes, BytesMut};
use hermes_core::transport::TransportError;
use hermes_providers::Signer;

/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

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

/// The clock signatures are dated by (`SystemTime::now` but in tests).
pub type Clock = fn() -> SystemTime;

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

/// AWS auth as the transport's request signer ([`hermes_providers::Auth::Signed`]): the headers of
/// [`request_headers`], SigV4 dated by `clock` (a provider's current credentials asked for
/// each request, refreshed once the old ones expire).
#[derive(Clone, Debug)]
pub struct AwsSigner {
    /// The credentials, a provider of them, or a Bedrock API key.
    pub auth: AwsAuth,
    /// The clock signatures are dated by (`SystemTime::now` but in tests).
    pub clock: Clock,
}

impl AwsSigner {
    /// `auth` dated by `clock`, as the signer a wire and [`hermes_providers::Auth::Signed`] hold.
    pub fn shared(auth: AwsAuth, clock: Clock) -> Arc<dyn Signer> {
        Arc::new(AwsSigner { auth, clock })
    }
}

#[async_trait::async_trait]
impl Signer for AwsSigner {
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
            AwsAuth::Bearer(key) => Some(hermes_providers::native::account_of(key)),
            _ => None,
        }
    }
}

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

/// Reads event-stream frames from the chunks of a response body as they arrive (a frame may
/// be cut across chunks anywhere, its prelude included).
#[derive(Debug, Default)]
pub struct FrameReader {
    decoder: MessageFrameDecoder,
    buffer: BytesMut,
    frames: usize,
}

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
