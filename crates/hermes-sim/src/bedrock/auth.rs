//! Authentication of the `bedrock` profile: a Bedrock API key (`Authorization: Bearer KEY`) or AWS
//! Signature Version 4, recomputed with the official `aws-sigv4` crate over the request exactly as
//! received (never a hand-rolled HMAC chain).
//!
//! The canonical URI is the path as sent, encoded once more (`aws-sigv4`'s default
//! `PercentEncodingMode::Double`, what the AWS SDKs do for every service but S3): a model id
//! `anthropic.claude-opus-4-6-v1:0` travels as `…v1%3A0` and is signed as `…v1%253A0`
//! (docs/providers.md "Bedrock SigV4 detail"; the canonical string Bedrock prints in
//! BerriAI/litellm#14763 shows `/model/us.anthropic.claude-sonnet-4-20250514-v1%253A0/converse-stream`).
//! The signed headers are exactly the ones the client lists in `SignedHeaders`.
//!
//! Refusals are HTTP 403 with Bedrock's `{"message": …}` body and `x-amzn-ErrorType`. Texts:
//! - signature mismatch (`InvalidSignatureException`): "The request signature we calculated does
//!   not match the signature you provided. …" (aws-beam/aws-erlang#161, bedrock-runtime
//!   InvokeModel; BerriAI/litellm#14763 for ConverseStream);
//! - unknown access key or bad session token (`UnrecognizedClientException`): "The security
//!   token included in the request is invalid." (Aider-AI/aider#1986, vercel/ai#4163, both
//!   Bedrock);
//! - no `Authorization` header (`AccessDeniedException`, capitalised `Message`): "Authorization
//!   header is missing" (karthink/gptel#1397 with the response headers, anthropics/claude-code#44963,
//!   #45000 — all bedrock-runtime);
//! - a wrong API key (`AccessDeniedException`, `Message`): "Authentication failed: Please make sure
//!   your API Key is valid." (ai4s-research/open-science#53, anomalyco/opencode#47073; the
//!   error-type header is UNCONFIRMED).
//!
//! The other SigV4 texts (incomplete header, credential scope, date, clock skew) follow the wording
//! of AWS's generic SigV4 front end as users report it for other services; they are not confirmed
//! for Bedrock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde_json::{Value, json};

use crate::AwsCredentials;

/// The service name in the credential scope.
const SERVICE: &str = "bedrock";
/// The only algorithm accepted.
const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// Allowed clock skew when [`crate::Switches::check_clock_skew`] is on.
const SKEW: Duration = Duration::from_secs(5 * 60);

/// The `x-amzn-ErrorType` suffix AWS's front end appends.
const CORAL: &str = ":http://internal.amazon.com/coral/com.amazon.coral.service/";

/// See the module docs.
pub(crate) const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";
/// See the module docs.
pub(crate) const INVALID_TOKEN: &str = "The security token included in the request is invalid.";
/// See the module docs.
pub(crate) const MISSING_AUTHORIZATION: &str = "Authorization header is missing";
/// See the module docs.
pub(crate) const BAD_API_KEY: &str =
    "Authentication failed: Please make sure your API Key is valid.";

/// A refused request: status, `x-amzn-ErrorType` value and JSON body.
#[derive(Clone, Debug)]
pub(crate) struct Denied {
    pub(crate) status: u16,
    pub(crate) error_type: String,
    pub(crate) body: Value,
}

fn denied(kind: &str, message: &str) -> Denied {
    Denied {
        status: 403,
        error_type: format!("{kind}{CORAL}"),
        body: json!({"message": message}),
    }
}

/// The capitalised `Message` body the API-key front end answers with.
fn denied_capital(message: &str) -> Denied {
    Denied {
        status: 403,
        error_type: format!("AccessDeniedException{CORAL}"),
        body: json!({"Message": message}),
    }
}

/// The request as received.
pub(crate) struct Received<'a> {
    pub(crate) method: &'a str,
    /// The path and query exactly as sent (still percent-encoded).
    pub(crate) path_and_query: &'a str,
    /// Header names lower case, in arrival order.
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a [u8],
}

impl Received<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the request authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer` with the configured Bedrock API key.
    ApiKey,
    /// A SigV4 signature that verifies.
    SigV4,
}

/// Checks the request's credentials.
pub(crate) fn check(
    req: &Received<'_>,
    creds: &AwsCredentials,
    api_key: &str,
    check_skew: bool,
    now: SystemTime,
) -> Result<Auth, Denied> {
    let Some(authorization) = req.header("authorization").map(str::trim) else {
        return Err(denied_capital(MISSING_AUTHORIZATION));
    };
    if let Some(token) = authorization.strip_prefix("Bearer ") {
        return if constant_eq(token.trim().as_bytes(), api_key.as_bytes()) {
            Ok(Auth::ApiKey)
        } else {
            Err(denied_capital(BAD_API_KEY))
        };
    }
    let parsed = parse_authorization(authorization)?;
    let Some(amz_date) = req.header("x-amz-date").map(str::trim) else {
        return Err(incomplete(&[DATE_REQUIRED], authorization));
    };
    let Some(time) = parse_amz_date(amz_date) else {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "IncompleteSignatureException",
            &format!(
                "Date must be in ISO-8601 'basic format'. Got '{amz_date}'. See http://en.wikipedia.org/wiki/ISO_8601"
            ),
        ));
    };
    let scope: Vec<&str> = parsed.credential.split('/').collect();
    let [access_key_id, date, region, service, terminator] = scope[..] else {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "IncompleteSignatureException",
            &format!(
                "Credential should be scoped to a valid region. Credential={}",
                parsed.credential
            ),
        ));
    };
    if !constant_eq(access_key_id.as_bytes(), creds.access_key_id.as_bytes()) {
        return Err(denied("UnrecognizedClientException", INVALID_TOKEN));
    }
    let token = req.header("x-amz-security-token").map(str::trim);
    let token_ok = match (&creds.session_token, token) {
        (None, None) => true,
        (Some(want), Some(got)) => constant_eq(want.as_bytes(), got.as_bytes()),
        _ => false,
    };
    if !token_ok {
        return Err(denied("UnrecognizedClientException", INVALID_TOKEN));
    }
    if service != SERVICE {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "InvalidSignatureException",
            &format!("Credential should be scoped to correct service: '{SERVICE}'. "),
        ));
    }
    if terminator != "aws4_request" {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "InvalidSignatureException",
            &format!(
                "Credential should be scoped with a valid terminator: 'aws4_request', not '{terminator}'. "
            ),
        ));
    }
    if date != &amz_date[..amz_date.len().min(8)] {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "InvalidSignatureException",
            &format!(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{date}' != '{}', from '{amz_date}'.",
                &amz_date[..amz_date.len().min(8)]
            ),
        ));
    }
    if check_skew {
        skew(time, amz_date, now)?;
    }
    let signed: Vec<&str> = parsed.signed_headers.split(';').collect();
    if !signed.contains(&"host") {
        // AWS front-end wording (UNCONFIRMED for Bedrock).
        return Err(denied(
            "InvalidSignatureException",
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    let expected = recompute(req, creds, region, time, &signed)
        .ok_or_else(|| denied("InvalidSignatureException", SIGNATURE_MISMATCH))?;
    let same = expected.signed_headers == parsed.signed_headers
        && constant_eq(expected.signature.as_bytes(), parsed.signature.as_bytes());
    if same {
        Ok(Auth::SigV4)
    } else {
        Err(denied("InvalidSignatureException", SIGNATURE_MISMATCH))
    }
}

/// The parts of an `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…` header.
struct Parsed<'a> {
    credential: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

const DATE_REQUIRED: &str =
    "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.";

/// AWS front-end wording for a header missing parts (UNCONFIRMED for Bedrock).
fn incomplete(missing: &[&str], authorization: &str) -> Denied {
    denied(
        "IncompleteSignatureException",
        &format!("{} Authorization={authorization}", missing.join(" ")),
    )
}

fn parse_authorization(authorization: &str) -> Result<Parsed<'_>, Denied> {
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    if let Some(rest) = authorization.strip_prefix(ALGORITHM) {
        for part in rest.split(',') {
            match part.trim().split_once('=') {
                Some(("Credential", v)) => credential = Some(v.trim()),
                Some(("SignedHeaders", v)) => signed_headers = Some(v.trim()),
                Some(("Signature", v)) => signature = Some(v.trim()),
                _ => {}
            }
        }
    }
    match (credential, signed_headers, signature) {
        (Some(credential), Some(signed_headers), Some(signature)) => Ok(Parsed {
            credential,
            signed_headers,
            signature,
        }),
        (c, h, s) => {
            let mut missing = Vec::new();
            if c.is_none() {
                missing.push("Authorization header requires 'Credential' parameter.");
            }
            if s.is_none() {
                missing.push("Authorization header requires 'Signature' parameter.");
            }
            if h.is_none() {
                missing.push("Authorization header requires 'SignedHeaders' parameter.");
            }
            Err(incomplete(&missing, authorization))
        }
    }
}

/// What `aws-sigv4` computes for the request.
struct Expected {
    signature: String,
    signed_headers: String,
}

/// Re-signs the request as received with `aws-sigv4` (default settings, except that the signed
/// headers are exactly the client's list). `None` when the request cannot be signed at all.
fn recompute(
    req: &Received<'_>,
    creds: &AwsCredentials,
    region: &str,
    time: SystemTime,
    signed: &[&str],
) -> Option<Expected> {
    let identity: Identity = Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        // A token the client signed is passed as an ordinary signed header below.
        None,
        None,
        "hermes-sim",
    )
    .into();
    let mut settings = SigningSettings::default();
    // Sign exactly what the client listed (the default would drop e.g. `user-agent`).
    settings.excluded_headers = None;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(time)
        .settings(settings)
        .build()
        .ok()?
        .into();
    // `x-amz-date` is added by the signer from `time`; everything else listed goes in as sent.
    let headers = req
        .headers
        .iter()
        .filter(|(k, _)| k != "x-amz-date" && signed.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let host = req.header("host").unwrap_or("localhost");
    let uri = format!("http://{host}{}", req.path_and_query);
    let request =
        SignableRequest::new(req.method, uri, headers, SignableBody::Bytes(req.body)).ok()?;
    let (instructions, signature) = sign(request, &params).ok()?.into_parts();
    let authorization = instructions
        .headers()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.to_owned())?;
    let signed_headers = authorization
        .split(',')
        .find_map(|p| p.trim().strip_prefix("SignedHeaders="))?
        .to_owned();
    Some(Expected {
        signature,
        signed_headers,
    })
}

/// AWS front-end wording for a signature outside the 5-minute window (UNCONFIRMED for Bedrock;
/// the form appears in aws/aws-sdk-js-v3#5811).
fn skew(time: SystemTime, amz_date: &str, now: SystemTime) -> Result<(), Denied> {
    if time + SKEW < now {
        return Err(denied(
            "InvalidSignatureException",
            &format!(
                "Signature expired: {amz_date} is now earlier than {} ({} - 5 min.)",
                format_amz_date(now - SKEW),
                format_amz_date(now)
            ),
        ));
    }
    if time > now + SKEW {
        return Err(denied(
            "InvalidSignatureException",
            &format!(
                "Signature not yet current: {amz_date} is still later than {} ({} + 5 min.)",
                format_amz_date(now + SKEW),
                format_amz_date(now)
            ),
        ));
    }
    Ok(())
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYYMMDDTHHMMSSZ` as a time.
pub(crate) fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, se) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// A time as `YYYYMMDDTHHMMSSZ`.
pub(crate) fn format_amz_date(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amz_dates_round_trip() {
        for s in ["20260101T000000Z", "20240229T235959Z", "19700101T000001Z"] {
            let t = parse_amz_date(s).unwrap();
            assert_eq!(format_amz_date(t), s);
        }
        assert_eq!(
            parse_amz_date("20260101T000000Z"),
            Some(UNIX_EPOCH + Duration::from_secs(1_767_225_600))
        );
        for bad in [
            "2026-01-01T00:00:00Z",
            "20261301T000000Z",
            "20260101T000000",
            "",
        ] {
            assert_eq!(parse_amz_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_header_is_parsed_or_named_incomplete() {
        let p = parse_authorization(
            "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=ab12",
        )
        .ok()
        .unwrap();
        assert_eq!(p.credential, "AK/20260101/us-east-1/bedrock/aws4_request");
        assert_eq!(p.signed_headers, "host;x-amz-date");
        assert_eq!(p.signature, "ab12");
        let d = parse_authorization("AWS4-HMAC-SHA256 Credential=AK/x")
            .err()
            .unwrap();
        let msg = d.body["message"].as_str().unwrap();
        assert!(msg.starts_with("Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4"), "{msg}");
        assert!(d.error_type.starts_with("IncompleteSignatureException:"));
    }
}
