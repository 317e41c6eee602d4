//! JSON written the way botocore writes a Bedrock request body, so a body hermes sends is the
//! same bytes boto3 sends for the same call.
//!
//! botocore's rest-json serializer (`botocore/serialize.py`, `RestJSONSerializer.
//! _serialize_body_params`, botocore 1.44.8) builds a dict in the order the caller's parameters
//! and document values come in and writes it with a bare `json.dumps(serialized_body)`: the
//! default separators `", "` and `": "`, `ensure_ascii=True` (every character outside
//! `' '..='~'` written as a lowercase `\uXXXX` escape, astral characters as a surrogate pair,
//! `/` not escaped) and Python's number spellings (integers as their digits, floats as
//! `repr(float)`: `2000.0`, `1e+16`, `1.5e-05`). Document values (a tool's input, its schema,
//! `additionalModelRequestFields`) are copied into the dict as given, so hermes reads them the
//! way `json.loads` does (a duplicate key keeps its first place and its last value) before
//! writing them again.

use std::fmt::Write as _;

/// A JSON value in the order it is written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, already spelled as Python writes it.
    Number(String),
    /// A string (decoded text).
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in writing order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A string value.
    pub(crate) fn str(text: impl Into<String>) -> Json {
        Json::Str(text.into())
    }

    /// An integer value.
    pub(crate) fn int(n: u64) -> Json {
        Json::Number(n.to_string())
    }

    /// An object from `(key, value)` pairs.
    pub(crate) fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Reads one JSON text as `json.loads` would (numbers respelled the Python way).
    pub(crate) fn parse(text: &str) -> Result<Json, String> {
        let mut reader = Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
        };
        reader.skip_ws();
        let value = reader.value(0)?;
        reader.skip_ws();
        if reader.at != reader.bytes.len() {
            return Err(format!("trailing characters at byte {}", reader.at));
        }
        Ok(value)
    }

    /// The compact text botocore sends (`json.dumps(value)`).
    pub(crate) fn to_python(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::Str(s) => write_str(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (i, (key, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, key);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes `text` as a JSON string the way `json.dumps` does with `ensure_ascii=True`.
fn write_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// How Python spells the number written `literal` in JSON text after `json.loads`: an integer
/// keeps its digits (`-0` is `0`), anything with a fraction or an exponent is a float written
/// as `repr(float)`.
pub(crate) fn python_number(literal: &str) -> Result<String, String> {
    if !literal.contains(['.', 'e', 'E']) {
        let digits = literal.strip_prefix('-').unwrap_or(literal);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{literal}` is not a number"));
        }
        return Ok(if digits.bytes().all(|b| b == b'0') {
            "0".to_owned()
        } else {
            literal.to_owned()
        });
    }
    let value: f64 = literal
        .parse()
        .map_err(|_| format!("`{literal}` is not a number"))?;
    Ok(float_repr(value))
}

/// `repr(value)` for a Python float: the shortest digits that read back as `value`, in fixed
/// notation when the decimal point falls within 16 digits (`1e+16` and `1e-05` otherwise),
/// with `.0` added to a whole number.
pub(crate) fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0.0");
    }
    // Rust's `{:e}` writes the shortest round-trip digits too: `1.2345e-7`, `2e3`.
    let sci = format!("{:e}", value.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let n = digits.len() as i32;
    // The value is 0.DIGITS × 10^decpt.
    let decpt = exp + 1;
    if !(-3..=16).contains(&decpt) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let exp = decpt - 1;
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{exp_sign}{:02}", exp.abs());
    }
    if decpt <= 0 {
        let zeros = "0".repeat((-decpt) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if decpt < n {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{sign}{int}.{frac}")
    } else {
        let zeros = "0".repeat((decpt - n) as usize);
        format!("{sign}{digits}{zeros}.0")
    }
}

/// Deepest nesting read (serde_json's own limit).
const MAX_DEPTH: usize = 128;

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// After an item of an object or array: past a `,` (more follow, `false`) or past `close`
    /// (the container ends, `true`).
    fn closed(&mut self, close: u8) -> Result<bool, String> {
        self.skip_ws();
        match self.bytes.get(self.at) {
            Some(b',') => {
                self.at += 1;
                Ok(false)
            }
            Some(&b) if b == close => {
                self.at += 1;
                Ok(true)
            }
            _ => Err(format!(
                "expected `,` or `{}` at byte {}",
                char::from(close),
                self.at
            )),
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", byte as char, self.at))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".to_owned());
        }
        self.skip_ws();
        let Some(&first) = self.bytes.get(self.at) else {
            return Err("unexpected end of JSON".to_owned());
        };
        match first {
            b'{' => {
                self.at += 1;
                let mut pairs: Vec<(String, Json)> = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Json::Object(pairs));
                }
                loop {
                    self.skip_ws();
                    let key = self.string()?;
                    self.expect(b':')?;
                    let value = self.value(depth + 1)?;
                    // `json.loads` into a dict: a repeated key keeps its place, the last value
                    // wins.
                    match pairs.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => pairs.push((key, value)),
                    }
                    if self.closed(b'}')? {
                        return Ok(Json::Object(pairs));
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.closed(b']')? {
                        return Ok(Json::Array(items));
                    }
                }
            }
            b'"' => self.string().map(Json::Str),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.at;
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                let literal = &self.text[start..self.at];
                // serde_json checks the grammar (leading zeros, a lone `-`, `1.`).
                serde_json::from_str::<serde::de::IgnoredAny>(literal)
                    .map_err(|e| format!("number `{literal}`: {e}"))?;
                python_number(literal).map(Json::Number)
            }
            other => Err(format!(
                "unexpected `{}` at byte {}",
                char::from(other),
                self.at
            )),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(format!("unexpected token at byte {}", self.at))
        }
    }

    /// A string literal at the cursor, decoded (escapes resolved by serde_json).
    fn string(&mut self) -> Result<String, String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return Err(format!("expected a string at byte {}", self.at));
        }
        let start = self.at;
        self.at += 1;
        loop {
            match self.bytes.get(self.at) {
                None => return Err("unterminated string".to_owned()),
                Some(b'\\') => self.at += 2,
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(_) => self.at += 1,
            }
        }
        let literal = self
            .text
            .get(start..self.at)
            .ok_or_else(|| "a string ends inside a character".to_owned())?;
        serde_json::from_str::<String>(literal).map_err(|e| format!("string {literal}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_json_dumps_does_with_ensure_ascii() {
        let mut out = String::new();
        write_str(&mut out, "é/\u{7f}\u{1}\u{2028}😀\"\\\n\t\u{8}\u{c}\r ~");
        // The text CPython 3's `json.dumps` gives for the same string.
        assert_eq!(
            out,
            r#""\u00e9/\u007f\u0001\u2028\ud83d\ude00\"\\\n\t\b\f\r ~""#
        );
    }

    #[test]
    fn floats_are_written_as_python_repr() {
        // `json.dumps([1.0, 2e3, 1e16, 1e15, 1.5e-5, 0.0001, -0.0, 0.1 + 0.2, 1e22, 5e-324])`.
        let got: Vec<String> = [
            1.0,
            2e3,
            1e16,
            1e15,
            1.5e-5,
            0.0001,
            -0.0,
            0.1 + 0.2,
            1e22,
            5e-324,
            123.456,
            -2.5e-7,
        ]
        .into_iter()
        .map(float_repr)
        .collect();
        assert_eq!(
            got,
            [
                "1.0",
                "2000.0",
                "1e+16",
                "1000000000000000.0",
                "1.5e-05",
                "0.0001",
                "-0.0",
                "0.30000000000000004",
                "1e+22",
                "5e-324",
                "123.456",
                "-2.5e-07"
            ]
        );
    }

    #[test]
    fn numbers_keep_python_spelling_and_big_integers_their_digits() {
        assert_eq!(python_number("-0").unwrap(), "0");
        assert_eq!(python_number("1E2").unwrap(), "100.0");
        assert_eq!(
            python_number("123456789012345678901234567890").unwrap(),
            "123456789012345678901234567890"
        );
        assert_eq!(python_number("-0.0").unwrap(), "-0.0");
        assert_eq!(python_number("1e400").unwrap(), "Infinity");
    }

    #[test]
    fn documents_are_rewritten_with_python_separators_and_first_key_place() {
        let doc =
            Json::parse(r#" { "z" :1,"a":[ 1.0 , 2e3,{}, []],"s":"caf\u00e9 \/","z":true } "#)
                .unwrap();
        assert_eq!(
            doc.to_python(),
            r#"{"z": true, "a": [1.0, 2000.0, {}, []], "s": "caf\u00e9 /"}"#
        );
        assert_eq!(
            Json::parse(r#"{"a":[1,{"b":2}]}"#).unwrap().to_python(),
            r#"{"a": [1, {"b": 2}]}"#
        );
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "-",
            "1.",
            "nul",
            r#"{"a" 1}"#,
            "[1] x",
        ] {
            assert!(Json::parse(bad).is_err(), "{bad:?}");
        }
    }
}
