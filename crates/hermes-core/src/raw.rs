//! JSON values kept as the exact text they arrived in, so carriers replay byte for byte.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON value stored as the exact text it arrived in.
///
/// Serialising a `RawJson` writes that text unchanged: key order, number spelling (big integers
/// included) and string escapes survive load → store → wire. The value also remembers its token
/// estimate once computed, so the pre-flight estimate of a loaded history does not rescan it.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>, OnceLock<usize>);

impl RawJson {
    fn wrap(raw: Box<RawValue>) -> Self {
        RawJson(raw, OnceLock::new())
    }

    /// The token estimate of this value, computed by `estimate` on first use and remembered.
    /// Only the estimator calls it, always with the same function.
    pub(crate) fn memo_tokens(&self, estimate: impl FnOnce(&str) -> usize) -> usize {
        *self.1.get_or_init(|| estimate(self.get()))
    }

    /// Wraps JSON text after checking that it is one valid JSON value.
    pub fn from_text(text: impl Into<String>) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text.into()).map(RawJson::wrap)
    }

    /// Serialises `value` compactly into a new raw value.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(RawJson::wrap)
    }

    /// A JSON string holding `text`.
    pub fn string(text: &str) -> Self {
        // Serialising a `&str` cannot fail.
        match serde_json::value::to_raw_value(text) {
            Ok(raw) => RawJson::wrap(raw),
            Err(_) => unreachable_string(),
        }
    }

    /// The literal `null`.
    pub fn null() -> Self {
        RawJson::wrap(RawValue::NULL.to_owned())
    }

    /// The exact JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The underlying raw value.
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// True for the literal `null`.
    pub fn is_null(&self) -> bool {
        self.get() == "null"
    }

    /// True when the value is a JSON string.
    pub fn is_string(&self) -> bool {
        self.get().starts_with('"')
    }

    /// The decoded string when the value is a JSON string (borrowed when it has no escapes).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        if !self.is_string() {
            return None;
        }
        serde_json::from_str::<Cow<'_, str>>(self.get()).ok()
    }

    /// Parses the value into a `serde_json::Value` (for inspection, never for replay).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.get()).unwrap_or(serde_json::Value::Null)
    }
}

#[cold]
fn unreachable_string() -> RawJson {
    // `to_raw_value(&str)` only fails on a serializer error, which a string never produces.
    RawJson::wrap(RawValue::NULL.to_owned())
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson::wrap)
    }
}

/// A plain-text carrier (`reasoning_content`, `reasoning`, Copilot's `reasoning_text` /
/// `reasoning_opaque`): a JSON string kept as received, with its blankness worked out once at load.
#[derive(Clone, PartialEq, Eq)]
pub struct TextCarrier {
    raw: RawJson,
    blank: bool,
}

impl TextCarrier {
    /// Wraps a raw JSON string; `None` when the value is not a string.
    pub fn from_raw(raw: RawJson) -> Option<Self> {
        let blank = raw.as_str()?.trim().is_empty();
        Some(TextCarrier { raw, blank })
    }

    /// A carrier holding `text`.
    pub fn new(text: &str) -> Self {
        TextCarrier {
            blank: text.trim().is_empty(),
            raw: RawJson::string(text),
        }
    }

    /// The exact JSON string as stored.
    pub fn raw(&self) -> &RawJson {
        &self.raw
    }

    /// The decoded text.
    pub fn text(&self) -> Cow<'_, str> {
        self.raw.as_str().unwrap_or_default()
    }

    /// True when the text is empty or only white space (such a carrier is never replayed as
    /// reasoning; on a must-echo route it becomes the `" "` pad).
    pub fn is_blank(&self) -> bool {
        self.blank
    }
}

impl fmt::Debug for TextCarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

impl Serialize for TextCarrier {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TextCarrier {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawJson::deserialize(deserializer)?;
        TextCarrier::from_raw(raw).ok_or_else(|| D::Error::custom("expected a string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_json_keeps_escapes_big_numbers_and_key_order() {
        let text = r#"{"z":1,"a":123456789012345678901234567890,"s":"caf\u00e9 \/ \ud83d\ude00"}"#;
        let raw = RawJson::from_text(text).unwrap();
        assert_eq!(serde_json::to_string(&raw).unwrap(), text);
    }

    #[test]
    fn text_carrier_blankness_follows_decoded_text() {
        let blank = TextCarrier::from_raw(RawJson::from_text(r#"" \n\t\u0020""#).unwrap()).unwrap();
        assert!(blank.is_blank());
        let full = TextCarrier::from_raw(RawJson::from_text(r#""\u0041""#).unwrap()).unwrap();
        assert!(!full.is_blank());
        assert_eq!(full.text(), "A");
        assert!(TextCarrier::from_raw(RawJson::from_text("12").unwrap()).is_none());
    }
}
