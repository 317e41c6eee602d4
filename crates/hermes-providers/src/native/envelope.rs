//! The one reader of providers' JSON error envelopes on the native wires: Google's and
//! OpenAI's `{"error":{…}}` (Google's also wrapped in a one-element array), Bedrock's bare
//! `{"message":…}`, and the error values inside a 200 reply or an error event. Refusal phrases
//! are not read here: a wire lifts the words out and hands them to
//! `hermes_core::refusal::classify_fields`.

use serde::Deserialize;

/// The words of one error value.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ErrorValue {
    /// `message` (Bedrock also spells it `Message`).
    #[serde(alias = "Message")]
    pub message: Option<String>,
    /// `code`: OpenAI's string code (Google's number is not kept).
    #[serde(deserialize_with = "string_only")]
    pub code: Option<String>,
    /// `param`: the request field OpenAI names.
    pub param: Option<String>,
    /// `details`: Google's, each with its field violations (anything else is passed over).
    #[serde(deserialize_with = "details")]
    details: Vec<Detail>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    #[serde(default)]
    field_violations: Vec<Violation>,
}

#[derive(Debug, Default, Deserialize)]
struct Violation {
    #[serde(default)]
    description: Option<String>,
}

/// `{"error": …}`.
#[derive(Deserialize)]
struct Envelope {
    error: ErrorValue,
}

/// A string, or nothing for any other JSON value.
fn string_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// Google's `details`, or none when they are not that.
fn details<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Detail>, D::Error> {
    Ok(serde_json::from_value(serde_json::Value::deserialize(d)?).unwrap_or_default())
}

impl ErrorValue {
    /// The descriptions of its field violations, in order (Google's `BadRequest`).
    pub fn violations(&self) -> Vec<String> {
        self.details
            .iter()
            .flat_map(|d| &d.field_violations)
            .filter_map(|v| v.description.clone())
            .collect()
    }

    /// Its `message`, else `fallback`.
    pub fn message_or(self, fallback: &str) -> String {
        self.message.unwrap_or_else(|| fallback.to_owned())
    }
}

/// The error of an error body `{"error":{…}}`, or of `[{"error":{…}}]` (Google's
/// OpenAI-compatible form); `None` when the body is neither.
pub fn enveloped(body: &str) -> Option<ErrorValue> {
    let body = body.trim();
    // A derived struct also reads a JSON array positionally, so the array form is tried first
    // where the body is one.
    if body.starts_with('[') {
        serde_json::from_str::<Vec<Envelope>>(body)
            .ok()
            .and_then(|v| v.into_iter().next())
            .map(|e| e.error)
    } else {
        serde_json::from_str::<Envelope>(body).ok().map(|e| e.error)
    }
}

/// An error value itself (`{"message":…}`: Bedrock's error body, the `error` of a reply or of
/// an `error` event); `None` when `raw` is not a JSON object.
pub fn bare(raw: &str) -> Option<ErrorValue> {
    serde_json::from_str(raw.trim()).ok()
}

/// The words of an error value `raw`: its `message`, else the text itself.
pub fn message_of(raw: &str) -> String {
    bare(raw).map_or_else(|| raw.to_owned(), |e| e.message_or(raw))
}
