//! Members of a stored JSON object edited without re-serialising (docs/spec.md §2): every
//! member kept keeps its bytes — key as spelled, value, white space — so a native wire can leave
//! out a stored item's private members ([`without_private`]) or the members its API does not
//! take, and still replay the rest verbatim.

use std::borrow::Cow;
use std::fmt;

use serde_json::value::RawValue;

/// True for a key kept for the record inside a stored item — one starting with `_`, such as
/// the Python original's `_issuer_kind` and `_issuer_model` on its Responses items. No wire
/// sends such a key inside an item it replays (docs/spec.md §2).
pub fn is_private_key(key: &str) -> bool {
    key.starts_with('_')
}

/// What [`edit_members`] does with one member.
pub enum MemberEdit {
    /// Keep it as it is.
    Keep,
    /// Leave it out.
    Drop,
    /// Keep its key, with this value instead.
    Replace(Box<RawValue>),
}

/// `raw` with each top-level member kept, left out or given another value as `edit` says (by
/// key and value): every member kept is kept in order and byte for byte — its key as spelled,
/// its value, the white space between them — and nothing is re-serialised. Borrowed when
/// nothing changes or `raw` is not an object.
pub fn edit_members<'a>(
    raw: &'a RawValue,
    mut edit: impl FnMut(&str, &'a RawValue) -> MemberEdit,
) -> Cow<'a, RawValue> {
    let text = raw.get();
    let Some(members) = members(text) else {
        return Cow::Borrowed(raw);
    };
    let edits: Vec<MemberEdit> = members.iter().map(|m| edit(&m.key, m.value)).collect();
    if edits.iter().all(|e| matches!(e, MemberEdit::Keep)) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::from("{");
    for (m, e) in members.iter().zip(&edits) {
        let piece = match e {
            MemberEdit::Drop => continue,
            MemberEdit::Keep => text[m.span.clone()].to_owned(),
            MemberEdit::Replace(value) => {
                format!("{}{}", &text[m.span.start..m.value_at], value.get())
            }
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&piece);
    }
    out.push('}');
    RawValue::from_string(out).map_or(Cow::Borrowed(raw), Cow::Owned)
}

/// `raw` without the top-level members `drop` names (by key), as [`edit_members`] keeps the
/// rest.
pub fn without_members<'a>(raw: &'a RawValue, drop: impl Fn(&str) -> bool) -> Cow<'a, RawValue> {
    edit_members(raw, |key, _| {
        if drop(key) {
            MemberEdit::Drop
        } else {
            MemberEdit::Keep
        }
    })
}

/// `raw` without its private members ([`is_private_key`]), as [`without_members`] keeps the
/// rest.
pub fn without_private(raw: &RawValue) -> Cow<'_, RawValue> {
    // A key starting with `_` is spelled `"_` or `"\u005f` (`"\u005F`) in the text: without
    // either, nothing is private and the members need not be read.
    let text = raw.get();
    if !text.contains("\"_") && !text.contains("\"\\u005") {
        return Cow::Borrowed(raw);
    }
    without_members(raw, is_private_key)
}

/// One member of an object read by [`members`].
struct Member<'a> {
    /// The decoded key.
    key: String,
    /// The value's text.
    value: &'a RawValue,
    /// `"key": value` in the object's text.
    span: std::ops::Range<usize>,
    /// Where the value starts in the object's text.
    value_at: usize,
}

/// The members of the JSON object `text`, in order; `None` when `text` is not an object.
fn members(text: &str) -> Option<Vec<Member<'_>>> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                out.push((key, map.next_value::<&'de RawValue>()?));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let values = serde::Deserializer::deserialize_map(&mut de, V).ok()?;
    // Each value is a slice of `text`: a member starts after the previous member's value (or
    // the `{`) and the separators after it, and ends where its own value ends.
    let base = text.as_ptr() as usize;
    let open = text.find('{')?;
    let mut from = open + 1;
    let mut out = Vec::with_capacity(values.len());
    for (key, value) in values {
        let start = (value.get().as_ptr() as usize).checked_sub(base)?;
        let end = start + value.get().len();
        let key_at = from + text[from..start].find('"')?;
        out.push(Member {
            key,
            value,
            span: key_at..end,
            value_at: start,
        });
        from = end;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::RawJson;

    #[test]
    fn private_members_go_and_everything_else_keeps_its_bytes() {
        let text = r#"{ "id" :"rs_1","_issuer_kind":"codex",  "summary":[ ],"encrypted_content":"gA\/=","n":123456789012345678901234567890 ,"_issuer_model":{"a":1}}"#;
        let raw = RawJson::from_text(text).unwrap();
        let out = without_private(raw.as_raw());
        assert_eq!(
            out.get(),
            r#"{"id" :"rs_1","summary":[ ],"encrypted_content":"gA\/=","n":123456789012345678901234567890}"#
        );
        // Nothing to drop, or not an object: the value itself, borrowed.
        let clean = RawJson::from_text(r#"{"type":"thinking","x_":1}"#).unwrap();
        assert!(matches!(without_private(clean.as_raw()), Cow::Borrowed(_)));
        // A key is read as the API reads it: an escaped `_` is still one.
        let escaped = RawJson::from_text(r#"{"type":"thinking","\u005fx":1}"#).unwrap();
        assert_eq!(
            without_private(escaped.as_raw()).get(),
            r#"{"type":"thinking"}"#
        );
        let list = RawJson::from_text(r#"[{"_a":1}]"#).unwrap();
        assert_eq!(without_private(list.as_raw()).get(), r#"[{"_a":1}]"#);
        let only = RawJson::from_text(r#"{"_a":1}"#).unwrap();
        assert_eq!(without_private(only.as_raw()).get(), "{}");
        let keys = RawJson::from_text(r#"{"a\"b":1,"id":2,"c":"}"}"#).unwrap();
        assert_eq!(
            without_members(keys.as_raw(), |k| k == "id").get(),
            r#"{"a\"b":1,"c":"}"}"#
        );
    }

    #[test]
    fn a_member_replaced_keeps_its_key_as_spelled_and_every_other_member() {
        let raw = RawJson::from_text(r#"{"a" : [1, 2],"\u0062":"x","c":{}}"#).unwrap();
        let out = edit_members(raw.as_raw(), |key, value| match key {
            "a" => MemberEdit::Replace(RawValue::from_string("[1]".to_owned()).unwrap()),
            "c" if value.get() == "{}" => MemberEdit::Drop,
            _ => MemberEdit::Keep,
        });
        assert_eq!(out.get(), r#"{"a" : [1],"\u0062":"x"}"#);
    }
}
