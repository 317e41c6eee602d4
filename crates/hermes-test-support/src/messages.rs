//! A Messages client's side of a tool loop: what it sends back after each reply.

use serde_json::{Value, json};

/// What a Messages client that drops every thinking block keeps of `reply`: its other blocks
/// as the assistant turn, pushed onto `messages`, and, when it called tools, a tool result
/// holding `result` for each call as the next user turn. Returns whether it called any (the
/// loop goes on).
///
/// # Panics
/// When `reply` has no `content` array.
pub fn forgetful_step(reply: &Value, messages: &mut Vec<Value>, result: &str) -> bool {
    let kept: Vec<Value> = reply["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking")
        .cloned()
        .collect();
    let results: Vec<Value> = kept
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|c| json!({"type": "tool_result", "tool_use_id": c["id"], "content": result}))
        .collect();
    messages.push(json!({"role": "assistant", "content": kept}));
    if results.is_empty() {
        return false;
    }
    messages.push(json!({"role": "user", "content": results}));
    true
}
