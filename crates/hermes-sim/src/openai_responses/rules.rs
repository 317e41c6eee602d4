//! The `openai-responses` profile's rules over a schema-valid body: the simulator stores nothing,
//! so `previous_response_id` is never found and every replayed reasoning item must carry
//! `encrypted_content` that verifies; a reasoning item must be followed by its item; an item
//! carrying an id minted with a reasoning item needs that reasoning item; tool calls and outputs
//! pair by `call_id`. Texts from docs/providers.md ("OpenAI Responses API", "Tool-call pairing").

use serde_json::{Map, Value};

use super::Fault;
use super::seal::{self, Opened};

/// `store` is `false` (the default is `true`).
fn store_false(body: &Value) -> bool {
    body.get("store").and_then(Value::as_bool) == Some(false)
}

fn str_of<'a>(o: &'a Map<String, Value>, key: &str) -> &'a str {
    o.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The item's `type` (`message` when only `role` is given).
pub(crate) fn kind_of(o: &Map<String, Value>) -> &str {
    o.get("type").and_then(Value::as_str).unwrap_or("message")
}

/// An item that may follow a reasoning item: a function call or an assistant message.
fn follows_reasoning(o: &Map<String, Value>) -> bool {
    match kind_of(o) {
        "function_call" => true,
        "message" => str_of(o, "role") == "assistant",
        _ => false,
    }
}

fn input_fault(message: String) -> Fault {
    Fault::bad(message, Some("input"), None)
}

/// The object items of the request's `input` list (none when `input` is a string).
pub(crate) fn input_items(body: &Value) -> Vec<&Map<String, Value>> {
    body.get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect()
}

/// Validates `body` (already schema-valid) for `model`, with the signing `key` and the
/// simulator's organisation `org`.
pub(crate) fn validate(body: &Value, model: &str, key: &[u8], org: &str) -> Result<(), Fault> {
    if let Some(prev) = body.get("previous_response_id").and_then(Value::as_str) {
        // Nothing is stored (bigduu/Bamboo-agent#64, maximhq/bifrost#2441).
        return Err(Fault::bad(
            format!("Previous response with id '{prev}' not found."),
            Some("previous_response_id"),
            Some("previous_response_not_found"),
        ));
    }
    let items = input_items(body);
    for (i, o) in items.iter().enumerate() {
        match kind_of(o) {
            "reasoning" => reasoning(&items, i, body, model, key, org)?,
            "compaction" => compaction(o, model, key, org)?,
            "function_call" => {
                needs_reasoning(&items, i, key)?;
                let call = str_of(o, "call_id");
                let answered = items[i + 1..].iter().any(|later| {
                    kind_of(later) == "function_call_output" && str_of(later, "call_id") == call
                });
                if !answered {
                    // bytedance/trae-agent#358, Azure/azure-sdk-for-python#46092.
                    return Err(input_fault(format!(
                        "No tool output found for function call {call}."
                    )));
                }
            }
            "function_call_output" => {
                let call = str_of(o, "call_id");
                let asked = items[..i].iter().any(|earlier| {
                    kind_of(earlier) == "function_call" && str_of(earlier, "call_id") == call
                });
                if !asked {
                    // james-6-23/codex2api#414.
                    return Err(input_fault(format!(
                        "No tool call found for function call output with call_id {call}."
                    )));
                }
            }
            _ if follows_reasoning(o) => needs_reasoning(&items, i, key)?,
            _ => {}
        }
    }
    Ok(())
}

/// A replayed reasoning item: its ciphertext and its following item.
fn reasoning(
    items: &[&Map<String, Value>],
    i: usize,
    body: &Value,
    model: &str,
    key: &[u8],
    org: &str,
) -> Result<(), Fault> {
    let o = items[i];
    let id = str_of(o, "id");
    let Some(data) = o
        .get("encrypted_content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        let message = if store_false(body) {
            // HTTP 404 as reported in can1357/oh-my-pi#41 and anomalyco/opencode#7724.
            format!(
                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
            )
        } else {
            // Simulator-chosen: with `store` on the real API would look the item up; the
            // simulator stores nothing.
            format!("Item with id '{id}' not found.")
        };
        return Err(Fault {
            status: 404,
            message,
            param: Some("input".to_owned()),
            code: None,
        });
    };
    let reason = match seal::open(key, model, org, id, data) {
        Opened::Ok => None,
        // Kilo-Org/kilo#88.
        Opened::ForeignOrg => {
            Some("Encrypted content organization_id did not match the target organization.")
        }
        // edison7009/EchoBird#255, openai/codex#35334.
        Opened::Unreadable => Some("Encrypted content could not be decrypted or parsed."),
    };
    if let Some(reason) = reason {
        // `code` and `param` as in openai/codex#8145.
        return Err(Fault::bad(
            format!("The encrypted content for item {id} could not be verified. Reason: {reason}"),
            None,
            Some("invalid_encrypted_content"),
        ));
    }
    if !items.get(i + 1).is_some_and(|next| follows_reasoning(next)) {
        // continuedev/continue#8933, openai/openai-node#1567.
        return Err(input_fault(format!(
            "Item '{id}' of type 'reasoning' was provided without its required following item."
        )));
    }
    Ok(())
}

/// A replayed compaction item: its ciphertext must be one this simulator sealed for this model
/// and organisation, intact (the same texts as a reasoning item's: the API verifies both kinds
/// of `encrypted_content` alike).
fn compaction(o: &Map<String, Value>, model: &str, key: &[u8], org: &str) -> Result<(), Fault> {
    let id = str_of(o, "id");
    let data = str_of(o, "encrypted_content");
    let reason = match seal::open_compaction(key, model, org, id, data).0 {
        Opened::Ok => return Ok(()),
        Opened::ForeignOrg => {
            "Encrypted content organization_id did not match the target organization."
        }
        Opened::Unreadable => "Encrypted content could not be decrypted or parsed.",
    };
    Err(Fault::bad(
        format!("The encrypted content for item {id} could not be verified. Reason: {reason}"),
        None,
        Some("invalid_encrypted_content"),
    ))
}

/// A function call or assistant message whose id was minted with a reasoning item needs that
/// reasoning item earlier in the input; an item without an id (or with an id the simulator did
/// not mint) is new.
fn needs_reasoning(items: &[&Map<String, Value>], i: usize, key: &[u8]) -> Result<(), Fault> {
    let o = items[i];
    let id = str_of(o, "id");
    let Some(rs) = seal::pair_of(key, id) else {
        return Ok(());
    };
    let present = items[..i]
        .iter()
        .any(|e| kind_of(e) == "reasoning" && str_of(e, "id") == rs);
    if present {
        return Ok(());
    }
    let message = if kind_of(o) == "function_call" {
        // cline/cline#12242, continuedev/continue#10018.
        format!(
            "Item '{id}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
        )
    } else {
        // continuedev/continue#11994.
        format!("Item '{id}' was provided without its required 'reasoning' item: '{rs}'.")
    };
    Err(input_fault(message))
}
