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

    /// The decoded string when the value is a JSON string (borrowed when it has no escapes; a
    /// lone surrogate escape reads as U+FFFD, [`parse_lenient`]).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        if !self.is_string() {
            return None;
        }
        decoded(self.get())
    }

    /// Parses the value into a `serde_json::Value` (for inspection, never for replay). A lone
    /// surrogate escape (`"\ud800"`, valid JSON text that no Rust string holds) reads as U+FFFD
    /// there, so the rest of the value is still seen ([`parse_lenient`]).
    pub fn to_value(&self) -> serde_json::Value {
        parse_lenient(self.get()).unwrap_or(serde_json::Value::Null)
    }
}

/// The JSON string literal `text` decoded, borrowed when it has no escapes (a lone surrogate
/// escape reads as U+FFFD); `None` when it does not read as a string.
fn decoded(text: &str) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Cow<'_, str>>(text)
        .ok()
        .or_else(|| parse_lenient::<String>(text).ok().map(Cow::Owned))
}

/// Parses JSON text as `T`; where the text holds a lone surrogate escape (`\ud800` without its
/// pair, or a lone `\udc00`), which the JSON grammar allows and a Rust string cannot hold, the
/// escape reads as U+FFFD. For reading only: what is replayed is always the text itself.
pub fn parse_lenient<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text).or_else(|e| match without_lone_surrogates(text) {
        Some(fixed) => serde_json::from_str(&fixed),
        None => Err(e),
    })
}

/// True when the JSON text `text` holds a lone surrogate escape (`\ud800` without its pair, or
/// a lone `\udc00`): the one thing that keeps a valid JSON string from reading as a Rust
/// string (where [`parse_lenient`] reads U+FFFD).
pub fn has_lone_surrogate(text: &str) -> bool {
    // No `\u` at all, no surrogate escape (one quick scan: most texts have none).
    text.contains("\\u") && !lone_surrogates(text).is_empty()
}

/// Where each lone surrogate escape of `text` starts. Backslashes only occur inside JSON
/// strings, so escapes are found by walking them in order (jumping from one backslash to the
/// next).
fn lone_surrogates(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = bytes.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut lone: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(rest) = text.get(i..) else {
            // Past an escape of a character that is not ASCII (not JSON): on to the next
            // character.
            i += 1;
            continue;
        };
        let Some(found) = rest.find('\\') else {
            break;
        };
        i += found;
        match unit(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    lone.push(i);
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                lone.push(i);
                i += 6;
            }
            Some(_) => i += 6,
            // Any other escape: the backslash and the escaped character.
            None => i += 2,
        }
    }
    lone
}

/// `text` with every lone surrogate escape replaced by `\ufffd`, or `None` when it has none.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let lone = lone_surrogates(text);
    if lone.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for at in lone {
        out.push_str(&text[from..at]);
        out.push_str("\\ufffd");
        from = at + 6;
    }
    out.push_str(&text[from..]);
    Some(out)
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
    pub(crate) fn from_raw(raw: RawJson) -> Option<Self> {
        let blank = blank_literal(raw.get())?;
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

/// Whether the JSON string literal `literal` holds only white space once decoded (`None` when
/// it is not a string; a lone surrogate escape reads as U+FFFD). A reasoning text or signature
/// runs to megabytes: its first character that is neither white space nor an escape answers,
/// and only a text that starts with white space and then an escape is decoded (the same
/// `char::is_whitespace` as `str::trim`).
pub fn blank_literal(literal: &str) -> Option<bool> {
    let inner = literal.strip_prefix('"')?;
    for c in inner.chars() {
        match c {
            '"' => return Some(true),
            '\\' => break,
            c if c.is_whitespace() => {}
            _ => return Some(false),
        }
    }
    Some(decoded(literal)?.trim().is_empty())
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
    use proptest::prelude::*;

    proptest! {
        /// A carrier is blank exactly when its decoded text trims to nothing, whatever the
        /// text (escaped control characters, quotes, white space of any kind, any Unicode).
        #[test]
        fn blankness_is_the_decoded_texts(text in prop_oneof![
            any::<String>(),
            "[ \\t\\n\\r\\u{a0}\\u{2028}\\u{3000}\\u{1}\"\\\\x]{0,12}",
        ]) {
            let carrier = TextCarrier::from_raw(RawJson::string(&text)).unwrap();
            prop_assert_eq!(carrier.is_blank(), text.trim().is_empty());
        }
    }

    #[test]
    fn escaped_white_space_is_blank_and_an_escaped_letter_is_not() {
        for (json, blank) in [
            (r#""""#, true),
            (r#"" \u0020\n\t""#, true),
            (r#""\u3000""#, true),
            (r#"" \u0041""#, false),
            (r#""\"""#, false),
            ("\"\u{3000} x\"", false),
        ] {
            let carrier = TextCarrier::from_raw(RawJson::from_text(json).unwrap()).unwrap();
            assert_eq!(carrier.is_blank(), blank, "{json}");
        }
        assert!(TextCarrier::from_raw(RawJson::from_text("1").unwrap()).is_none());
    }

    #[test]
    fn raw_json_keeps_escapes_big_numbers_and_key_order() {
        let text = r#"{"z":1,"a":123456789012345678901234567890,"s":"caf\u00e9 \/ \ud83d\ude00"}"#;
        let raw = RawJson::from_text(text).unwrap();
        assert_eq!(serde_json::to_string(&raw).unwrap(), text);
    }

    #[test]
    fn a_lone_surrogate_keeps_the_rest_of_the_value_readable() {
        let raw = RawJson::from_text(
            r#"{"google":{"thought_signature":"c2ln\/X="},"note":"a\ud800b\udc00c","pair":"\ud83d\ude00","esc":"\\ud800"}"#,
        )
        .unwrap();
        let value = raw.to_value();
        assert_eq!(value["google"]["thought_signature"], "c2ln/X=");
        assert_eq!(value["note"], "a\u{fffd}b\u{fffd}c");
        assert_eq!(value["pair"], "\u{1f600}");
        assert_eq!(value["esc"], "\\ud800");
        let text = RawJson::from_text(r#""x\udbff""#).unwrap();
        assert_eq!(text.as_str().unwrap(), "x\u{fffd}");
        assert!(parse_lenient::<serde_json::Value>("{").is_err());
        // What `has_lone_surrogate` says is exactly where a strict read fails.
        for (text, lone) in [
            (r#""a\ud800b""#, true),
            (r#""\udc00""#, true),
            (r#""\ud800\ud800\udc00""#, true),
            (r#""\ud83d\ude00 \u00e9 \n""#, false),
            (r#""\\ud800""#, false),
            (r#""caf\u00e9 \/ é""#, false),
        ] {
            assert_eq!(has_lone_surrogate(text), lone, "{text}");
            assert_eq!(
                serde_json::from_str::<String>(text).is_err(),
                lone,
                "{text}"
            );
        }
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
