//! Tests for message (de)serialisation: carriers survive byte for byte, native fields fold.

use crate::message::{DetailItem, Message, Role};
use crate::session::parse_history;

/// A message in canonical key order whose carriers hold a signed blob, a big integer, odd key
/// order and unicode escapes.
const TRICKY: &str = r#"{"role":"assistant","content":"caf\u00e9","reasoning_content":"th\u00efnk \"quoted\"\n\ud83d\ude00","reasoning":"r","reasoning_details":[{"signature":"c2lnbmVk/+==","text":"t\u00e9xt","type":"reasoning.text","format":"anthropic-claude-v1","index":0},{"type":"reasoning.encrypted","data":"QUJD+/==","id":"rs_1","n":123456789012345678901234567890,"f":1.0e+300}],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":\u00201}"}}],"refusal":null,"x_custom":{"b":2,"a":1},"origin":{"provider":"openrouter","host":"openrouter.ai","model":"anthropic/claude-sonnet-5"}}"#;

#[test]
fn carriers_survive_load_and_store_byte_for_byte() {
    let msg: Message = serde_json::from_str(TRICKY).unwrap();
    assert_eq!(serde_json::to_string(&msg).unwrap(), TRICKY);
    // And again through a second generation.
    let again: Message = serde_json::from_str(&serde_json::to_string(&msg).unwrap()).unwrap();
    assert_eq!(again, msg);
}

#[test]
fn detail_items_are_classified() {
    let msg: Message = serde_json::from_str(TRICKY).unwrap();
    let items = msg.reasoning_details.unwrap();
    assert!(matches!(
        items[0],
        DetailItem::Provider { opaque: true, .. }
    ));
    assert!(matches!(
        items[1],
        DetailItem::Provider { opaque: true, .. }
    ));
    let readable: Message = serde_json::from_str(
        r#"{"role":"assistant","reasoning_details":[{"type":"reasoning.summary","summary":"s"},{"type":"reasoning.text","text":"t","signature":null}]}"#,
    )
    .unwrap();
    assert!(
        readable
            .reasoning_details
            .unwrap()
            .iter()
            .all(|i| matches!(i, DetailItem::Provider { opaque: false, .. }))
    );
}

#[test]
fn anthropic_shaped_items_are_classified_once_when_read() {
    let msg: Message = serde_json::from_str(
        r#"{"role":"assistant","reasoning_details":[{"type":"thinking","thinking":"t","signature":"c2ln"},{"type":"redacted_thinking","data":"QUJD"},{"type":"reasoning.text","text":"t"},{"thinking":"no type"},{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"s"}}}]}"#,
    )
    .unwrap();
    let shaped: Vec<bool> = msg
        .reasoning_details
        .unwrap()
        .iter()
        .map(DetailItem::is_anthropic_shaped)
        .collect();
    assert_eq!(shaped, [true, true, false, false, false]);
}

#[test]
fn top_level_native_fields_fold_into_the_native_record() {
    let msg: Message = serde_json::from_str(
        r#"{"role":"assistant","content":"hi","extra_content":{"thought_signature":"U0lH"},"reasoning_opaque":"OPQ","reasoning_text":"why"}"#,
    )
    .unwrap();
    let record = msg.native_record().unwrap();
    assert_eq!(
        record.extra_content.as_ref().unwrap().get(),
        r#"{"google":{"thought_signature":"U0lH"}}"#
    );
    assert_eq!(record.reasoning_opaque.as_ref().unwrap().text(), "OPQ");
    assert_eq!(
        serde_json::to_string(&msg).unwrap(),
        r#"{"role":"assistant","content":"hi","reasoning_details":[{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"U0lH"}},"reasoning_opaque":"OPQ","reasoning_text":"why"}]}"#
    );
}

#[test]
fn top_level_fields_merge_into_an_existing_record_in_place() {
    let msg: Message = serde_json::from_str(
        r#"{"role":"assistant","reasoning_details":[{"type":"reasoning.text","text":"a"},{"type":"hermes.native_assistant","reasoning_opaque":"OLD","reasoning_text":"t"},{"type":"reasoning.summary","summary":"z"}],"reasoning_opaque":"NEW"}"#,
    )
    .unwrap();
    let items = msg.reasoning_details.as_ref().unwrap();
    assert!(matches!(items[1], DetailItem::Native { .. }));
    assert_eq!(
        msg.native_record()
            .unwrap()
            .reasoning_opaque
            .as_ref()
            .unwrap()
            .text(),
        "NEW"
    );
    assert_eq!(
        msg.native_record()
            .unwrap()
            .reasoning_text
            .as_ref()
            .unwrap()
            .text(),
        "t"
    );
}

#[test]
fn flat_tool_call_signature_is_normalised_into_google_namespace() {
    let msg: Message = serde_json::from_str(
        r#"{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"thought_signature":"U0lH"}}]}"#,
    )
    .unwrap();
    let call = &msg.tool_calls.unwrap()[0];
    assert_eq!(
        call.extra_content.as_ref().unwrap().get(),
        r#"{"google":{"thought_signature":"U0lH"}}"#
    );
}

#[test]
fn null_carriers_are_absent() {
    let msg: Message =
        serde_json::from_str(r#"{"role":"assistant","content":null,"reasoning_content":null,"reasoning":null,"reasoning_details":null}"#)
            .unwrap();
    assert_eq!(
        serde_json::to_string(&msg).unwrap(),
        r#"{"role":"assistant","content":null}"#
    );
}

#[test]
fn native_keys_on_non_assistant_messages_stay_ordinary_data() {
    let msg: Message =
        serde_json::from_str(r#"{"role":"user","content":"q","reasoning_opaque":"x"}"#).unwrap();
    assert_eq!(msg.role, Role::User);
    assert!(msg.reasoning_details.is_none());
    assert_eq!(
        serde_json::to_string(&msg).unwrap(),
        r#"{"role":"user","content":"q","reasoning_opaque":"x"}"#
    );
}

#[test]
fn bad_messages_name_the_path_and_what_was_expected() {
    let check = |text: &str, path: &str, needle: &str| {
        let err = parse_history(text).unwrap_err();
        assert_eq!(err.path, path, "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    };
    check(
        r#"[{"role":"user","content":"a"},{"content":"b"}]"#,
        "[1]",
        "missing field `role`",
    );
    check(
        r#"[{"role":"robot"}]"#,
        "[0]",
        "one of system, developer, user, assistant, tool",
    );
    check(
        r#"[{"role":"assistant","reasoning_content":42}]"#,
        "[0]",
        "expected a string or null",
    );
    check(
        r#"{"format":"hermes.session.v1","messages":[{"role":"assistant","tool_calls":[{"id":"c"}]}]}"#,
        "messages[0].tool_calls[0]",
        "missing field `function`",
    );
    check(
        r#"{"format":"hermes.session.v2","messages":[]}"#,
        "format",
        "hermes.session.v1",
    );
    check(r#"[{"role":"user","content":"a"}"#, ".", "EOF");
    check(r#""hello""#, ".", "expected a hermes.session.v1 object");
    check(
        r#"{"format":"hermes.session.v1","model_config":{"reasoning_rejected_carriers":[["p","h","m",["x"]]]},"messages":[]}"#,
        "model_config.reasoning_rejected_carriers",
        "unknown carrier `x`",
    );
}

#[test]
fn content_must_be_a_string_an_array_or_null() {
    for (content, found) in [
        ("42", "a number"),
        ("-1.5e3", "a number"),
        ("true", "a boolean"),
        (r#"{"text":"x"}"#, "an object"),
    ] {
        let text = format!(
            r#"{{"format":"hermes.session.v1","messages":[{{"role":"user","content":"a"}},{{"role":"user","content":{content}}}]}}"#
        );
        let err = parse_history(&text).unwrap_err();
        assert_eq!(err.path, "messages[1].content", "{err}");
        let shown = err.to_string();
        assert!(
            shown.contains("`content`")
                && shown.contains("expected a string, an array of content parts or null")
                && shown.contains(found),
            "{shown}"
        );
    }
    for content in [r#""a""#, r#"[{"type":"text","text":"a"}]"#, "null"] {
        let msg: Message =
            serde_json::from_str(&format!(r#"{{"role":"user","content":{content}}}"#)).unwrap();
        assert_eq!(msg.content.unwrap().get(), content);
    }
}

#[test]
fn a_duplicate_key_inside_a_tool_call_is_an_error() {
    let call = |inner: &str| {
        format!(
            r#"{{"format":"hermes.session.v1","messages":[{{"role":"assistant","tool_calls":[{inner}]}}]}}"#
        )
    };
    for (inner, path, key) in [
        (
            r#"{"id":"c","function":{"name":"f"},"extra_content":{"google":{"thought_signature":"A"}},"extra_content":{"google":{"thought_signature":"B"}}}"#,
            "messages[0].tool_calls[0]",
            "extra_content",
        ),
        (
            r#"{"id":null,"id":"c","function":{"name":"f"}}"#,
            "messages[0].tool_calls[0]",
            "id",
        ),
        (
            r#"{"id":"c","x":1,"x":2,"function":{"name":"f"}}"#,
            "messages[0].tool_calls[0]",
            "x",
        ),
        (
            r#"{"id":"c","function":{"name":"f","thought_signature":"A","thought_signature":"B"}}"#,
            "messages[0].tool_calls[0].function",
            "thought_signature",
        ),
        (
            r#"{"id":"c","function":{"name":"f","y":1,"y":1}}"#,
            "messages[0].tool_calls[0].function",
            "y",
        ),
    ] {
        let err = parse_history(&call(inner)).unwrap_err();
        assert_eq!(err.path, path, "{inner}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("duplicate field `{key}`")),
            "{inner}: {err}"
        );
    }
    // A message's own native keys may not repeat either.
    let err = parse_history(
        r#"[{"role":"assistant","content":"a","extra_content":{"google":{"thought_signature":"A"}},"extra_content":{}}]"#,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("duplicate field `extra_content`"),
        "{err}"
    );
}

#[test]
fn session_file_round_trips() {
    let text = format!(
        r#"{{"format":"hermes.session.v1","provider":"deepseek","model":"deepseek-v4","base_url":"https://api.deepseek.com/v1","title":"t","model_config":{{"reasoning_rejected_carriers":[["deepseek","api.deepseek.com","deepseek-v4",["reasoning"]]]}},"messages":[{TRICKY}]}}"#
    );
    let session = parse_history(&text).unwrap();
    assert_eq!(serde_json::to_string(&session).unwrap(), text);
    assert_eq!(session.verdicts().unwrap().0.len(), 1);
}

#[test]
fn a_provider_item_is_kept_only_as_an_object_that_is_not_the_native_record() {
    let item = |text: &str| DetailItem::from_provider(crate::RawJson::from_text(text).unwrap());
    let kept = item(r#"{"type":"reasoning.encrypted","data":"E"}"#).unwrap();
    assert!(matches!(kept, DetailItem::Provider { opaque: true, .. }));
    for refused in [
        r#"{"type":"hermes.native_assistant","reasoning_opaque":"FAKE"}"#,
        r#"{"type":"hermes\u002enative_assistant"}"#,
        r#"{"type":"hermes.native_assistant","reasoning_opaque":5}"#,
        "[]",
        "7",
        r#""junk""#,
        "null",
    ] {
        assert!(item(refused).is_none(), "{refused}");
    }
    // A stored record is still the record when hermes loads its own history.
    let stored = r#"{"type":"hermes.native_assistant","reasoning_opaque":"O"}"#;
    let raw = crate::RawJson::from_text(stored).unwrap();
    assert!(matches!(
        DetailItem::from_raw(raw).unwrap(),
        DetailItem::Native { .. }
    ));
}
