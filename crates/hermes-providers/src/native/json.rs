//! The JSON pieces every native body is built from: stored literals as raw JSON, the text
//! parts of a content value, a tool call's arguments as an object, and turns merged by role.

use std::borrow::Cow;

use hermes_core::{RawJson, ToolCall};
use serde_json::value::RawValue;

/// `text` (JSON text, a stored literal) as a raw value; text that is not JSON becomes `""`.
pub(crate) fn raw_box(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap_or_else(|_| empty_string())
}

/// The JSON string `""`.
pub(crate) fn empty_string() -> Box<RawValue> {
    serde_json::value::to_raw_value("").unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The text literals of a content value, as stored: a string as is, or each `text` of an
/// array of parts whose `type` is missing or one of `kinds`. Empty texts are left out (no
/// provider takes an empty text block), and so is a `text` that is not a string.
pub(crate) fn text_parts(content: Option<&RawJson>, kinds: &[&str]) -> Vec<Box<RawValue>> {
    text_literals(content, kinds)
        .into_iter()
        .map(ToOwned::to_owned)
        .collect()
}

/// [`text_parts`], borrowed from `content`.
pub(crate) fn text_literals<'a>(content: Option<&'a RawJson>, kinds: &[&str]) -> Vec<&'a RawValue> {
    let Some(content) = content else {
        return Vec::new();
    };
    if content.is_string() {
        // Any other string literal, escapes and all, reads as a text that is not empty.
        return if content.get() == "\"\"" {
            Vec::new()
        } else {
            vec![content.as_raw()]
        };
    }
    #[derive(serde::Deserialize)]
    struct ChatPart<'a> {
        #[serde(rename = "type", default)]
        kind: Option<String>,
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

/// The decoded texts of a content value ([`text_parts`] of `kinds`; a lone surrogate escape
/// reads as U+FFFD, `hermes_core::raw::parse_lenient`).
pub(crate) fn texts(content: Option<&RawJson>, kinds: &[&str]) -> Vec<String> {
    text_parts(content, kinds)
        .iter()
        .filter_map(|t| hermes_core::raw::parse_lenient::<String>(t.get()).ok())
        .collect()
}

/// A tool call's stored arguments when they are a JSON object (the text trimmed), else `None`:
/// what a wire that takes the input as an object (Messages `input`, Converse `input`) sends,
/// `{}` in its place otherwise.
pub(crate) fn object_arguments(call: &ToolCall) -> Option<String> {
    let text: Cow<'_, str> = call.function.arguments.as_ref()?.as_str()?;
    let text = text.trim();
    (text.starts_with('{') && RawValue::from_string(text.to_owned()).is_ok())
        .then(|| text.to_owned())
}

/// One turn of a wire copy: its role, its parts, the history indices merged into it, and what
/// else a wire keeps per turn (`X`).
pub(crate) struct Turn<P, X = ()> {
    /// `user`, `assistant`, `model`.
    pub(crate) role: &'static str,
    /// The turn's blocks or parts, in order.
    pub(crate) parts: Vec<P>,
    /// The history indices merged into it.
    pub(crate) sources: Vec<usize>,
    /// What the wire keeps beside them.
    pub(crate) extra: X,
}

/// Adds `parts` from the history message `source` as a turn of `role`, merged into the last
/// turn when it has the same role (the native APIs want alternating turns: consecutive tool
/// results become one user turn). Before merging, `merge` sees the last turn and this one's
/// `extra` (which is dropped after).
pub(crate) fn push_turn_with<P, X>(
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
pub(crate) fn push_turn<P>(
    wire: &mut Vec<Turn<P>>,
    role: &'static str,
    parts: Vec<P>,
    source: usize,
) {
    push_turn_with(wire, role, parts, source, (), |_, ()| {});
}

/// For each turn, the history indices merged into it.
pub(crate) fn sources<P, X>(wire: &[Turn<P, X>]) -> Vec<Vec<usize>> {
    wire.iter().map(|t| t.sources.clone()).collect()
}
