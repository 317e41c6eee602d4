//! OpenTelemetry GenAI semantic conventions for the driver's `upstream_request` span: names and values only (no IO, no exporter).
//!
//! The driver makes one span per upstream request with these attributes as `tracing` fields;
//! a binary that installs `tracing-opentelemetry` exports them. Nothing here reads the
//! environment: whether message content is captured is the caller's [`Telemetry`](crate::driver::Telemetry) setting.

use crate::message::{Message, Role};
use crate::transport::{FinishReason, TransportError};

/// The operation every upstream request is (`gen_ai.operation.name`).
pub(crate) const OPERATION: &str = "chat";

/// `gen_ai.provider.name` for one of our provider ids: OpenTelemetry's well-known value where
/// the spec has one (`openai`, `anthropic`, `aws.bedrock`, `gcp.gemini`, `gcp.vertex_ai`,
/// `azure.ai.inference`, `deepseek`, `mistral_ai`, `groq`, `perplexity`, `x_ai`, `cohere`),
/// else our id.
pub(crate) fn provider_name(provider: &str) -> &str {
    match provider {
        "openai" | "openai-responses" => "openai",
        "anthropic" => "anthropic",
        "bedrock" | "bedrock-anthropic" => "aws.bedrock",
        "gemini" | "gemini-openai" => "gcp.gemini",
        "vertex-anthropic" | "vertex-gemini" => "gcp.vertex_ai",
        "foundry-anthropic" => "azure.ai.inference",
        "deepseek" => "deepseek",
        "mistral" => "mistral_ai",
        "groq" => "groq",
        "perplexity" => "perplexity",
        "xai" => "x_ai",
        "cohere" => "cohere",
        other => other,
    }
}

/// The spec's spelling of a finish reason (`stop`, `length`, `tool_calls`, `content_filter`,
/// else the wire's own word).
pub(crate) fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(other) => other,
    }
}

/// `error.type` for a failed request: the HTTP status code when the provider answered, else
/// a short class (`timeout`, `connect`, `decode`, `stream`, `stalled`, `after_ok`, `request`,
/// `unsupported`, `_OTHER`). Never the error's text (it may quote a request).
pub(crate) fn error_type(error: &TransportError) -> String {
    match error {
        TransportError::Http { status, .. } => status.to_string(),
        TransportError::Timeout { .. } => "timeout".into(),
        TransportError::Connect(_) => "connect".into(),
        TransportError::Decode(_) => "decode".into(),
        TransportError::Stream(_) => "stream".into(),
        TransportError::Stalled(_) => "stalled".into(),
        TransportError::AfterOk(_) => "after_ok".into(),
        TransportError::Request(_) => "request".into(),
        TransportError::Unsupported { .. } => "unsupported".into(),
        _ => "_OTHER".into(),
    }
}

/// `gen_ai.input.messages`: the messages sent, as the spec's JSON (`role`, `parts` of type
/// `text`, `reasoning`, `tool_call`, `tool_call_response`). Only made when content capture is on.
pub(crate) fn input_messages(messages: &[Message]) -> String {
    let list: Vec<serde_json::Value> = messages.iter().map(|m| message_json(m, None)).collect();
    serde_json::Value::Array(list).to_string()
}

/// `gen_ai.output.messages`: the reply with its finish reason, as the spec's JSON. Only made
/// when content capture is on.
pub(crate) fn output_messages(reply: &Message, finish: Option<&FinishReason>) -> String {
    serde_json::Value::Array(vec![message_json(
        reply,
        Some(finish.map(finish_reason).unwrap_or("stop")),
    )])
    .to_string()
}

fn message_json(message: &Message, finish: Option<&str>) -> serde_json::Value {
    use serde_json::json;
    let mut parts = Vec::new();
    if let Some(reasoning) = message
        .reasoning_content
        .as_ref()
        .or(message.reasoning.as_ref())
    {
        parts.push(json!({"type": "reasoning", "content": reasoning.text()}));
    }
    if let Some(content) = &message.content {
        let part = match (message.role, content.as_str()) {
            (Role::Tool, Some(text)) => json!({
                "type": "tool_call_response",
                "id": message.tool_call_id,
                "response": text,
            }),
            (_, Some(text)) => json!({"type": "text", "content": text}),
            // Parts the model has no text form for (images, blocks) as their JSON.
            (_, None) => json!({"type": "text", "content": content.to_value()}),
        };
        parts.push(part);
    }
    for call in message.tool_calls.iter().flatten() {
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.function.name,
            "arguments": call.function.arguments.as_ref().map(|a| a.to_value()),
        }));
    }
    let mut value = json!({"role": message.role.as_str(), "parts": parts});
    if let Some(finish) = finish {
        value["finish_reason"] = json!(finish);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Telemetry;

    #[test]
    fn server_comes_from_the_base_url_with_the_default_port() {
        let t = Telemetry::for_base_url("https://api.openai.com/v1", false);
        assert_eq!(t.server_address.as_deref(), Some("api.openai.com"));
        assert_eq!(t.server_port, Some(443));
        let t = Telemetry::for_base_url("http://127.0.0.1:8080/v1", true);
        assert_eq!(t.server_address.as_deref(), Some("127.0.0.1"));
        assert_eq!(t.server_port, Some(8080));
        assert!(t.capture_content);
    }

    #[test]
    fn well_known_provider_names_replace_our_ids() {
        assert_eq!(provider_name("bedrock-anthropic"), "aws.bedrock");
        assert_eq!(provider_name("vertex-gemini"), "gcp.vertex_ai");
        assert_eq!(provider_name("gemini"), "gcp.gemini");
        assert_eq!(provider_name("openrouter"), "openrouter");
    }

    #[test]
    fn messages_are_the_spec_json_shape() {
        let user = Message::text(Role::User, "hi there");
        assert_eq!(
            input_messages(&[user]),
            r#"[{"role":"user","parts":[{"type":"text","content":"hi there"}]}]"#
        );
        let reply = Message::text(Role::Assistant, "hello");
        assert_eq!(
            output_messages(&reply, Some(&FinishReason::Length)),
            r#"[{"role":"assistant","parts":[{"type":"text","content":"hello"}],"finish_reason":"length"}]"#
        );
    }
}
