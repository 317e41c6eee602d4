//! The normal form's rules, one test each, and property tests for key order and whitespace.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn msg(json: Value) -> Message {
    serde_json::from_value(json).unwrap()
}

fn same(a: Value, b: Value) -> bool {
    let (a, b) = (msg(a), msg(b));
    let equal = normal_form(&a) == normal_form(&b);
    assert_eq!(equal, normal_form(&a).digest() == normal_form(&b).digest());
    equal
}

#[test]
fn null_empty_and_absent_content_are_equal() {
    let forms = [
        json!({"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}),
        json!({"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}),
        json!({"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}),
        json!({"role":"assistant","content":[],"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}),
    ];
    for other in &forms[1..] {
        assert!(same(forms[0].clone(), other.clone()), "{other}");
    }
}

#[test]
fn text_parts_concatenate_in_order_and_equal_the_string() {
    assert!(same(
        json!({"role":"assistant","content":"Hello, world"}),
        json!({"role":"assistant","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world"}]}),
    ));
    assert!(!same(
        json!({"role":"assistant","content":"Hello, world"}),
        json!({"role":"assistant","content":[{"type":"text","text":"world"},{"type":"text","text":"Hello, "}]}),
    ));
}

#[test]
fn part_type_spelling_cache_control_annotations_refusal_and_index_are_ignored() {
    assert!(same(
        json!({"role":"assistant","content":[{"type":"text","text":"hi"}]}),
        json!({"role":"assistant","content":[
            {"type":"output_text","text":"hi","annotations":[{"url":"x"}],"index":3,"cache_control":{"type":"ephemeral"}},
            {"type":"refusal","refusal":"no"}
        ]}),
    ));
}

#[test]
fn different_text_differs() {
    assert!(!same(
        json!({"role":"assistant","content":"hi"}),
        json!({"role":"assistant","content":"hi!"}),
    ));
}

#[test]
fn the_role_is_part_of_the_form() {
    assert!(!same(
        json!({"role":"assistant","content":"hi"}),
        json!({"role":"user","content":"hi"}),
    ));
}

#[test]
fn images_compare_by_url_or_data_in_place() {
    let chat = json!({"role":"user","content":[{"type":"text","text":"see "},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"high"}},{"type":"text","text":"?"}]});
    let responses = json!({"role":"user","content":[{"type":"input_text","text":"see "},{"type":"input_image","image_url":"https://x/a.png"},{"type":"input_text","text":"?"}]});
    assert!(same(chat.clone(), responses));
    let other_url = json!({"role":"user","content":[{"type":"text","text":"see "},{"type":"image_url","image_url":{"url":"https://x/b.png"}},{"type":"text","text":"?"}]});
    assert!(!same(chat.clone(), other_url));
    let moved = json!({"role":"user","content":[{"type":"text","text":"see ?"},{"type":"image_url","image_url":{"url":"https://x/a.png"}}]});
    assert!(!same(chat, moved));
    let anthropic_a = json!({"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"},"cache_control":{"type":"ephemeral"}}]});
    let anthropic_b = json!({"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJE"}}]});
    assert!(!same(anthropic_a.clone(), anthropic_b));
    assert_eq!(
        normal_form(&msg(anthropic_a)).content(),
        [Piece::Image("QUJD".into())]
    );
}

#[test]
fn tool_call_arguments_compare_as_parsed_json() {
    let call = |args: &str| json!({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":args}}]});
    assert!(same(
        call(r#"{"a":1,"b":[1,2]}"#),
        call(r#"{ "b" : [1, 2],  "a":1 }"#)
    ));
    assert!(!same(call(r#"{"a":1}"#), call(r#"{"a":2}"#)));
    // Not JSON: compared as text.
    assert!(same(call("not json {"), call("not json {")));
    assert!(!same(call("not json {"), call("not json  {")));
    // Arguments sent as an object rather than a string are the same JSON.
    let object = json!({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"b":[1,2],"a":1}}}]});
    assert!(same(call(r#"{"a":1,"b":[1,2]}"#), object));
}

#[test]
fn tool_call_id_and_name_are_part_of_the_form() {
    let call = |id: &str, name: &str| json!({"role":"assistant","tool_calls":[{"id":id,"type":"function","function":{"name":name,"arguments":"{}"}}]});
    assert!(!same(call("c1", "f"), call("c2", "f")));
    assert!(!same(call("c1", "f"), call("c1", "g")));
}

#[test]
fn a_tool_result_compares_by_its_tool_call_id_only() {
    assert!(same(
        json!({"role":"tool","tool_call_id":"c1","content":"12:00 and a long output"}),
        json!({"role":"tool","tool_call_id":"c1","content":"[cleared]","name":"now"}),
    ));
    assert!(!same(
        json!({"role":"tool","tool_call_id":"c1","content":"x"}),
        json!({"role":"tool","tool_call_id":"c2","content":"x"}),
    ));
}

#[test]
fn carriers_thinking_blocks_and_other_keys_play_no_part() {
    let bare = json!({"role":"assistant","content":"answer","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]});
    let dressed = json!({
        "role":"assistant",
        "content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"answer"}],
        "reasoning_content":"thought",
        "reasoning":"r",
        "reasoning_details":[{"type":"reasoning.encrypted","data":"QUJD"}],
        "extra_content":{"google":{"thought_signature":"GS"}},
        "name":"bot",
        "refusal":null,
        "x_unknown":1,
        "origin":{"provider":"p","host":"h","model":"m"},
        "tool_calls":[{"id":"c1","type":"function","index":0,"function":{"name":"f","arguments":"{}","thought_signature":"FS"},"extra_content":{"google":{"thought_signature":"TS"}}}]
    });
    assert!(same(bare, dressed));
}

#[test]
fn match_key_is_by_call_ids_when_there_are_calls_else_by_form() {
    let with_calls = msg(
        json!({"role":"assistant","content":"a","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}),
    );
    let edited_args = msg(
        json!({"role":"assistant","content":"b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}),
    );
    let key = match_key(&with_calls).unwrap();
    assert!(key.starts_with(CALLS_KEY_PREFIX), "{key}");
    // The same ids find the same session, whatever else changed.
    assert_eq!(match_key(&edited_args).unwrap(), key);
    assert_ne!(normal_form(&with_calls), normal_form(&edited_args));

    let text = msg(json!({"role":"assistant","content":"hello"}));
    let key = match_key(&text).unwrap();
    assert_eq!(
        key,
        format!("{FORM_KEY_PREFIX}{}", normal_form(&text).digest())
    );
    let parts = msg(
        json!({"role":"assistant","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}],"reasoning_content":"x"}),
    );
    assert_eq!(match_key(&parts).unwrap(), key);
}

#[test]
fn match_key_is_none_for_other_roles_and_empty_assistant_messages() {
    assert_eq!(match_key(&msg(json!({"role":"user","content":"hi"}))), None);
    assert_eq!(
        match_key(&msg(json!({"role":"system","content":"hi"}))),
        None
    );
    assert_eq!(
        match_key(&msg(
            json!({"role":"tool","tool_call_id":"c","content":"x"})
        )),
        None
    );
    assert_eq!(
        match_key(&msg(
            json!({"role":"assistant","content":"","reasoning_content":"only thinking"})
        )),
        None
    );
}

#[test]
fn the_canonical_bytes_are_fixed() {
    let m = msg(
        json!({"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]}),
    );
    assert_eq!(
        String::from_utf8(normal_form(&m).to_bytes()).unwrap(),
        r#"{"role":"assistant","content":[{"text":"hi"}],"tool_calls":[{"id":"c","name":"f","arguments":"{\"a\":2,\"b\":1}"}],"tool_call_id":null}"#
    );
    assert_eq!(normal_form(&m).digest().len(), 64);
}

/// A JSON value of a few levels, objects with distinct keys.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z \"\\\\é]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `value` as JSON text with each object's keys in an order picked by `seed` and whitespace
/// between tokens.
fn shuffled_text(value: &Value, seed: &mut u64) -> String {
    let mut next = || {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as usize
    };
    fn go(value: &Value, next: &mut dyn FnMut() -> usize) -> String {
        let ws = |n: usize| [" ", "", "\n  ", "\t"][n % 4];
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                for i in (1..entries.len()).rev() {
                    entries.swap(i, next() % (i + 1));
                }
                let body: Vec<String> = entries
                    .into_iter()
                    .map(|(k, v)| {
                        format!(
                            "{}{}{}:{}{}",
                            ws(next()),
                            Value::String(k.clone()),
                            ws(next()),
                            ws(next()),
                            go(v, next)
                        )
                    })
                    .collect();
                format!("{{{}{}}}", body.join(","), ws(next()))
            }
            Value::Array(items) => {
                let body: Vec<String> = items
                    .iter()
                    .map(|v| format!("{}{}", ws(next()), go(v, next)))
                    .collect();
                format!("[{}{}]", body.join(","), ws(next()))
            }
            scalar => scalar.to_string(),
        }
    }
    go(value, &mut next)
}

proptest! {
    #[test]
    fn reordering_keys_and_whitespace_never_changes_the_digest(value in json_value(), seed in any::<u64>()) {
        let mut seed = seed;
        let plain = serde_json::to_string(&value).unwrap();
        let shuffled = shuffled_text(&value, &mut seed);
        let call = |args: &str| msg(json!({"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":args}}]}));
        prop_assert_eq!(normal_form(&call(&plain)).digest(), normal_form(&call(&shuffled)).digest());
        // The whole message's key order does not matter either.
        let message = |args: &str, reversed: bool| {
            let text = if reversed {
                format!(r#"{{"tool_calls":[{{"function":{{"arguments":{},"name":"f"}},"type":"function","id":"c1"}}],"content":"x","role":"assistant"}}"#, Value::String(args.into()))
            } else {
                format!(r#"{{"role":"assistant","content":"x","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"f","arguments":{}}}}}]}}"#, Value::String(args.into()))
            };
            serde_json::from_str::<Message>(&text).unwrap()
        };
        prop_assert_eq!(normal_form(&message(&plain, false)), normal_form(&message(&shuffled, true)));
    }

    #[test]
    fn different_arguments_give_different_digests(a in json_value(), b in json_value()) {
        prop_assume!(a != b);
        let call = |v: &Value| msg(json!({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":serde_json::to_string(v).unwrap()}}]}));
        prop_assert_ne!(normal_form(&call(&a)).digest(), normal_form(&call(&b)).digest());
    }
}

#[test]
fn a_chain_key_follows_the_user_and_assistant_turns_in_order_and_nothing_else() {
    let conversation = |system: &str, result: &str, second: &str| -> Vec<Message> {
        vec![
            msg(json!({"role": "system", "content": system})),
            msg(json!({"role": "user", "content": "hi"})),
            msg(json!({"role": "assistant", "content": "Hello! How can I help?"})),
            msg(json!({"role": "user", "content": second})),
            msg(json!({"role": "assistant", "content": null,
                       "tool_calls": [{"id": "c1", "type": "function",
                                       "function": {"name": "now", "arguments": "{}"}}]})),
            msg(json!({"role": "tool", "tool_call_id": "c1", "content": result})),
            msg(json!({"role": "assistant", "content": "Noon."})),
        ]
    };
    let keys = chain_keys(
        CHAIN_START,
        &conversation("Today is Monday.", "12:00", "time?"),
    );
    let kinds: Vec<bool> = keys.iter().map(Option::is_some).collect();
    assert_eq!(kinds, [false, true, true, true, true, false, true]);
    // A changed system prompt or a trimmed tool result: the same chain.
    let other = chain_keys(CHAIN_START, &conversation("Today is Tuesday.", "", "time?"));
    assert_eq!(keys, other);
    // Another user turn before the same reply: another chain from there on.
    let asked = chain_keys(
        CHAIN_START,
        &conversation("Today is Monday.", "12:00", "time now?"),
    );
    assert_eq!(keys[2], asked[2], "the same up to where they part");
    assert_ne!(keys[6], asked[6]);
    // Chained from a state, the rest of a conversation keys as the whole does.
    let whole = conversation("x", "12:00", "time?");
    let state = keys[2].clone().unwrap();
    let rest = chain_keys(&state, &whole[3..]);
    assert_eq!(rest, keys[3..]);
}
