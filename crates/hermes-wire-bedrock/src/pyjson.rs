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

use std::borrow::Cow;

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
    #[cfg(test)]
    pub(crate) fn to_python(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Writes the value as `json.dumps` does onto `out`.
    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::Str(s) => write_str(out, s),
            Json::Array(items) => write_array(out, items, Json::write),
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

/// Writes `items` as a JSON array the way `json.dumps` separates them (`[a, b]`), each by
/// `write`.
pub(crate) fn write_array<T>(out: &mut String, items: &[T], write: impl Fn(&T, &mut String)) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write(item, out);
    }
    out.push(']');
}

/// A string to write: decoded text, or a JSON string literal standing for it (stored text,
/// written without decoding it first).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Str<'a> {
    /// Decoded text.
    Text(Cow<'a, str>),
    /// A JSON string literal, quotes included, as a `RawValue` holds it (valid JSON).
    Literal(&'a str),
}

impl Str<'_> {
    /// Writes the string as `json.dumps` does (a literal as its decoded text would be written).
    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Str::Text(text) => write_str(out, text),
            Str::Literal(literal) => write_literal(out, literal),
        }
    }
}

/// Writes `text` as a JSON string the way `json.dumps` does with `ensure_ascii=True`: runs of
/// printable ASCII that need no escape are copied whole ([`plain_end`]), every other character
/// escaped by [`write_char`].
pub(crate) fn write_str(out: &mut String, text: &str) {
    out.push('"');
    let bytes = text.as_bytes();
    let mut at = 0;
    loop {
        let end = plain_end(bytes, at);
        out.push_str(&text[at..end]);
        let Some(c) = text[end..].chars().next() else {
            break;
        };
        write_char(out, c);
        at = end + c.len_utf8();
    }
    out.push('"');
}

/// Writes the JSON string literal `literal` (valid JSON, quotes included) as [`write_str`]
/// writes the text it decodes to, without decoding it: plain runs copied, escapes and other
/// characters respelled the `ensure_ascii` way (`\/` as `/`, `\u0041` as `A`, `\u00E9` as
/// `\u00e9`, a surrogate pair as its two escapes). A lone surrogate escape is written as
/// U+FFFD, as [`hermes_core::raw::parse_lenient`] reads it. Should `literal` not be a JSON
/// string after all, its leniently decoded text is written (nothing when it decodes to none).
pub(crate) fn write_literal(out: &mut String, literal: &str) {
    let start = out.len();
    if transcode(out, literal).is_none() {
        out.truncate(start);
        if let Ok(text) = hermes_core::raw::parse_lenient::<String>(literal) {
            write_str(out, &text);
        }
    }
}

/// [`write_literal`]'s work; `None` when `literal` is not a JSON string literal.
fn transcode(out: &mut String, literal: &str) -> Option<()> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = inner.get(at..at + 4)?;
        u16::from_str_radix(hex, 16).ok()
    };
    out.push('"');
    // `inner[from..at]` is copied as it is: plain runs, and the escapes `json.dumps` spells
    // the same way (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`), so a literal as serde_json
    // (every capture) writes it is mostly one copy.
    let mut from = 0;
    let mut at = 0;
    loop {
        at = plain_end(bytes, at);
        let Some(&byte) = bytes.get(at) else {
            break;
        };
        if byte != b'\\' {
            // `"` cannot stand unescaped inside a literal.
            if byte == b'"' {
                return None;
            }
            out.push_str(&inner[from..at]);
            let c = inner[at..].chars().next()?;
            write_char(out, c);
            at += c.len_utf8();
            from = at;
            continue;
        }
        match *bytes.get(at + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
            b'/' => {
                out.push_str(&inner[from..at]);
                out.push('/');
                at += 2;
                from = at;
            }
            b'u' => {
                out.push_str(&inner[from..at]);
                let first = unit(at + 2)?;
                at += 6;
                match first {
                    0xD800..=0xDBFF => {
                        let low = (inner.get(at..at + 2) == Some("\\u"))
                            .then(|| unit(at + 2))
                            .flatten()
                            .filter(|low| (0xDC00..=0xDFFF).contains(low));
                        match low {
                            Some(low) => {
                                push_unit(out, first);
                                push_unit(out, low);
                                at += 6;
                            }
                            None => push_unit(out, 0xFFFD),
                        }
                    }
                    0xDC00..=0xDFFF => push_unit(out, 0xFFFD),
                    _ => write_char(out, char::from_u32(u32::from(first))?),
                }
                from = at;
            }
            _ => return None,
        }
    }
    out.push_str(&inner[from..]);
    out.push('"');
    Some(())
}

/// Writes one character of a string as `json.dumps` does with `ensure_ascii=True`: the short
/// escapes, printable ASCII as it is, anything else as lowercase `\uXXXX` (a surrogate pair
/// beyond the BMP).
fn write_char(out: &mut String, c: char) {
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
            for &mut unit in c.encode_utf16(&mut units) {
                push_unit(out, unit);
            }
        }
    }
}

/// `\uXXXX`, lowercase.
fn push_unit(out: &mut String, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(HEX[usize::from((unit >> shift) & 0xF)]));
    }
}

/// Where the run of bytes from `at` that `json.dumps` copies as they are (printable ASCII but
/// `"` and `\`) ends: the index of the first other byte, or the length. Eight bytes are looked
/// at a time ([`special_bytes`]).
fn plain_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some((word, _)) = bytes.get(at..).and_then(<[u8]>::split_first_chunk::<8>) {
        let special = special_bytes(u64::from_le_bytes(*word));
        if special != 0 {
            return at + (special.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while bytes
        .get(at)
        .is_some_and(|&b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    {
        at += 1;
    }
    at
}

/// For eight bytes read little-endian, the high bit of each byte that is not plain (below
/// `' '`, above `'~'`, `"` or `\`). A flag can be wrong only above a right one (a borrow runs
/// upwards from a byte that matches), so the lowest flag is always the first byte not plain.
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte equal to zero: its high bit after subtracting one, where it was clear.
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    // `0x7f` (seven low bits all set) and every byte from `0x80`.
    let high = (((word & !HIGH) + ONES) | word) & HIGH;
    control | high | zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\\')))
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
    use proptest::prelude::*;

    use super::*;

    /// `json.dumps` of one string built another way, one character at a time, for the
    /// run-copying writers to equal: serde_json escapes exactly what `json.dumps` does below
    /// DEL (the short escapes, other controls as lowercase `\u00XX`), and `ensure_ascii` then
    /// escapes every character from DEL up, per UTF-16 unit.
    fn reference(text: &str) -> String {
        serde_json::to_string(text)
            .unwrap()
            .chars()
            .map(|c| {
                if c < '\u{7f}' {
                    c.to_string()
                } else {
                    let mut units = [0u16; 2];
                    c.encode_utf16(&mut units)
                        .iter()
                        .map(|u| format!("\\u{u:04x}"))
                        .collect()
                }
            })
            .collect()
    }

    fn written(text: &str) -> String {
        let mut out = String::new();
        write_str(&mut out, text);
        out
    }

    fn transcoded(literal: &str) -> String {
        let mut out = String::new();
        write_literal(&mut out, literal);
        out
    }

    /// Characters weighted towards the ones that end a run: controls, `"`, `\`, DEL, the
    /// edges of printable ASCII, Latin-1, the BMP (surrogates excluded, as in any `char`) and
    /// astral planes.
    fn any_char() -> impl Strategy<Value = char> {
        prop_oneof![
            4 => (0x20u32..0x7f).prop_map(|c| char::from_u32(c).unwrap()),
            2 => prop::sample::select(vec![
                '"', '\\', '/', '\u{7f}', '\u{0}', '\n', '\r', '\t', '\u{8}', '\u{c}', '\u{1f}',
                ' ', '~', '\u{80}', '\u{ff}', '\u{2028}', '\u{fffd}', '\u{ffff}', '\u{10000}',
                '\u{1f600}', '\u{10ffff}',
            ]),
            1 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            1 => any::<char>(),
        ]
    }

    /// How one character is spelled inside a literal: as serde_json writes it, as a `\u`
    /// escape (lowercase or uppercase hex, per UTF-16 unit), or `\/` for `/`.
    fn spelled(c: char, how: u8) -> String {
        match how % 4 {
            1 | 2 => {
                let mut units = [0u16; 2];
                c.encode_utf16(&mut units)
                    .iter()
                    .map(|u| {
                        if how % 4 == 1 {
                            format!("\\u{u:04x}")
                        } else {
                            format!("\\u{u:04X}")
                        }
                    })
                    .collect()
            }
            3 if c == '/' => "\\/".to_owned(),
            _ => {
                let one = serde_json::to_string(&c.to_string()).unwrap();
                one[1..one.len() - 1].to_owned()
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_run_writer_equals_the_per_character_reference(
            chars in prop::collection::vec(any_char(), 0..80),
        ) {
            let text: String = chars.into_iter().collect();
            prop_assert_eq!(written(&text), reference(&text));
        }

        #[test]
        fn a_literal_is_written_as_its_decoded_text_whatever_its_escapes(
            chars in prop::collection::vec((any_char(), any::<u8>()), 0..80),
            lone in prop::collection::vec((any::<prop::sample::Index>(), 0xd800u16..0xe000), 0..3),
        ) {
            let text: String = chars.iter().map(|(c, _)| *c).collect();
            // As serde_json (and so every capture) writes it.
            prop_assert_eq!(transcoded(&serde_json::to_string(&text).unwrap()), reference(&text));
            // As json.dumps writes it.
            prop_assert_eq!(transcoded(&reference(&text)), reference(&text));
            // Any mixture of escapes, and lone surrogates read as U+FFFD.
            let mut pieces: Vec<String> = chars.iter().map(|&(c, how)| spelled(c, how)).collect();
            for (at, unit) in lone {
                let at = if pieces.is_empty() { 0 } else { at.index(pieces.len() + 1) };
                pieces.insert(at, format!("\\u{unit:04x}"));
            }
            let literal = format!("\"{}\"", pieces.concat());
            let decoded: String = hermes_core::raw::parse_lenient(&literal).unwrap();
            prop_assert_eq!(transcoded(&literal), reference(&decoded));
        }
    }

    #[test]
    fn a_literal_is_respelled_escape_by_escape() {
        for (literal, want) in [
            (r#""""#, r#""""#),
            (r#""\u0041\/\u00E9\"\\\u0022""#, r#""A/\u00e9\"\\\"""#),
            (r#""\uD83D\uDE00x""#, r#""\ud83d\ude00x""#),
            (
                r#""a\ud800b\udc00\ud800\ud83d\ude00""#,
                r#""a\ufffdb\ufffd\ufffd\ud83d\ude00""#,
            ),
            (r#""tab\there é😀""#, r#""tab\there \u00e9\ud83d\ude00""#),
            (r#""\u0000\u001f\u007f""#, r#""\u0000\u001f\u007f""#),
        ] {
            assert_eq!(transcoded(literal), want, "{literal}");
        }
        // Not a string literal: its lenient reading, else nothing.
        assert_eq!(transcoded("12"), "");
    }

    #[test]
    fn strings_are_escaped_as_json_dumps_does_with_ensure_ascii() {
        let text = "é/\u{7f}\u{1}\u{2028}😀\"\\\n\t\u{8}\u{c}\r ~";
        let out = written(text);
        // The proptests' reference agrees.
        assert_eq!(reference(text), out);
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
