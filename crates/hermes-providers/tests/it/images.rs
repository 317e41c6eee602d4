//! The history with chat-style images the SDK-evidence tests of the native wires encode: a user
//! turn of text, a PNG `data:` URL and (when `remote`) an https image URL, a call of `now`, and
//! its result of text and the PNG. Shared by `images_sim` and the `sdk_*` modules.

use hermes_core::Message;
use serde_json::json;

/// A 1×1 PNG, base64.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The history (see the module doc).
pub(crate) fn history(remote: bool) -> Vec<Message> {
    let png =
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}});
    let mut user = vec![
        json!({"type": "text", "text": "What is in these?"}),
        png.clone(),
    ];
    if remote {
        user.push(json!({"type": "image_url",
                         "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}}));
    }
    let text = json!([
        {"role": "user", "content": user},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": [{"type": "text", "text": "the screen"}, png]},
    ])
    .to_string();
    hermes_core::parse_history(&text).unwrap().messages
}
