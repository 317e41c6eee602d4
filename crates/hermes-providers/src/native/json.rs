//! The JSON pieces every native body is built from: stored literals as raw JSON, the text
//! parts of a content value (owned or borrowed from the history), a tool call's arguments as an
//! object, turns merged by role, and a string read borrowed by a hand-written visitor.

use std::borrow::Cow;

use hermes_core::{RawJson, ToolCall};
use serde_json::value::RawValue;

/// `text` (JSON text, a stored literal) as a raw value; text that is not JSON becomes `""`.
pub fn raw_box(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap_or_else(|_| empty_string())
}

/// The JSON string `""`.
pub fn empty_string() -> Box<RawValue> {
    serde_json::value::to_raw_value("").unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The text literals of a content value, as stored: a string as is, or each `text` of an
/// array of parts whose `type` is missing or one of `kinds`. Empty texts are left out (no
/// provider takes an empty text block), and so is a `text` that is not a string.
pub fn text_parts(content: Option<&RawJson>, kinds: &[&str]) -> Vec<Box<RawValue>> {
    text_literals(content, kinds)
        .into_iter()
        .map(RawValue::to_owned)
        .collect()
}

/// [`text_parts`] borrowed from the content value itself (nothing copied: a body that writes
/// them takes their bytes straight from the history).
pub fn text_literals<'a>(content: Option<&'a RawJson>, kinds: &[&str]) -> Vec<&'a RawValue> {
    let Some(content) = content else {
        return Vec::new();
    };
    if content.is_string() {
        // A stored value is trimmed JSON text, so the string is empty exactly when it is `""`.
        return if content.get() == "\"\"" {
            Vec::new()
        } else {
            vec![content.as_raw()]
        };
    }
    #[derive(serde::Deserialize)]
    struct ChatPart<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        text: Option<&'a RawValue>,
    }
    let parts: Vec<ChatPart<'_>> = serde_json::from_str(content.get()).unwrap_or_default();
    parts
        .into_iter()
        .filter(|p| p.kind.as_deref().is_none_or(|k| kinds.contains(&k)))
        .filter_map(|p| p.text)
        .filter(|t| t.get().starts_with('"') && t.get() != "\"\"")
        .collect()
}

/// A JSON string read borrowed from the text when it has no escape (serde's own `Cow<str>`
/// always copies): a key or member a hand-written visitor reads.
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// The decoded texts of a content value ([`text_parts`] of `kinds`; a lone surrogate escape
/// reads as U+FFFD, `hermes_core::raw::parse_lenient`).
pub fn texts(content: Option<&RawJson>, kinds: &[&str]) -> Vec<String> {
    text_parts(content, kinds)
        .iter()
        .filter_map(|t| hermes_core::raw::parse_lenient::<String>(t.get()).ok())
        .collect()
}

/// A tool call's stored arguments when they are a JSON object (the text trimmed), else `None`:
/// what a wire that takes the input as an object (Messages `input`, Converse `input`) sends,
/// `{}` in its place otherwise.
pub fn object_arguments(call: &ToolCall) -> Option<String> {
    let text: Cow<'_, str> = call.function.arguments.as_ref()?.as_str()?;
    let text = text.trim();
    (text.starts_with('{') && RawValue::from_string(text.to_owned()).is_ok())
        .then(|| text.to_owned())
}

/// One turn of a wire copy: its role, its parts, the history indices merged into it, and what
/// else a wire keeps per turn (`X`).
pub struct Turn<P, X = ()> {
    /// `user`, `assistant`, `model`.
    pub role: &'static str,
    /// The turn's blocks or parts, in order.
    pub parts: Vec<P>,
    /// The history indices merged into it.
    pub sources: Vec<usize>,
    /// What the wire keeps beside them.
    pub extra: X,
}

/// Adds `parts` from the history message `source` as a turn of `role`, merged into the last
/// turn when it has the same role (the native APIs want alternating turns: consecutive tool
/// results become one user turn). Before merging, `merge` sees the last turn and this one's
/// `extra` (which is dropped after).
pub fn push_turn_with<P, X>(
    wire: &mut Vec<Turn<P, X>>,
    role: &'static str,
    parts: Vec<P>,
    source: usize,
    extra: X,
    merge: impl FnOnce(&mut Turn<P, X>, X),
) {
    if let Some(last) = wire.last_mut()
        && last.role == role
    {
        merge(last, extra);
        last.parts.extend(parts);
        last.sources.push(source);
        return;
    }
    wire.push(Turn {
        role,
        parts,
        sources: vec![source],
        extra,
    });
}

/// [`push_turn_with`] for turns that keep nothing else.
pub fn push_turn<P>(wire: &mut Vec<Turn<P>>, role: &'static str, parts: Vec<P>, source: usize) {
    push_turn_with(wire, role, parts, source, (), |_, ()| {});
}

/// For each turn, the history indices merged into it.
pub fn sources<P, X>(wire: &[Turn<P, X>]) -> Vec<Vec<usize>> {
    wire.iter().map(|t| t.sources.clone()).collect()
}
