//! The scripted model's Converse reply (reasoning per model, `[tools=N]` tool loops) and how it is
//! rendered: the Converse JSON object, or ConverseStream's events.

use serde_json::{Value, json};

use super::rules::{Reasoning, blocks, role as role_of};
use crate::anthropic::thinking::{self as signing, Token};
use crate::model::{
    self, Prompt, last_user_turn, messages_ending, messages_step, pieces, scripted_call_of,
};
use crate::wire::{list_of, short_hash};

/// What the scripted model answers for one Converse request.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    /// Converse content blocks.
    pub(crate) content: Vec<Value>,
    pub(crate) stop_reason: &'static str,
    /// A bound model's reply: its id and reasoning block count (the put-back memory).
    pub(crate) minted: Option<([u8; 12], u8)>,
    /// `input_transformations` to report in `additionalModelResponseFields` (the request asked
    /// for them with `additionalModelResponseFieldPaths`); left out when empty.
    pub(crate) transformations: Vec<Value>,
    input_tokens: usize,
    output_tokens: usize,
    latency_ms: usize,
}

/// Everything the script reads.
pub(crate) struct Ask<'a> {
    pub(crate) prompt: Prompt<'a>,
    pub(crate) reasoning: Reasoning,
    /// Claude: add a `redactedContent` block (switch).
    pub(crate) redacted: bool,
    /// A bound request (docs/spec.md §5a): the model and account the reasoning is bound to.
    pub(crate) bound: Option<(&'a str, [u8; 32])>,
}

/// The message's top-level text blocks, joined.
fn text_of(m: &Value) -> String {
    blocks(m)
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// A tool result's content as text (`text` items, `json` items serialised).
fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| match (c.get("text"), c.get("json")) {
            (Some(Value::String(t)), _) => t.clone(),
            (_, Some(j)) => j.to_string(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("")
}

/// Runs the script over a validated Converse request.
pub(crate) fn script(ask: &Ask<'_>) -> Reply {
    let body = ask.prompt.body;
    let messages = list_of(body, "messages");
    let (user_text, after) = last_user_turn(
        messages,
        |m| role_of(m) == "user" && blocks(m).iter().any(|b| b.get("text").is_some()),
        text_of,
    );
    let results: Vec<&Value> = after
        .iter()
        .filter(|m| role_of(m) == "user")
        .flat_map(blocks)
        .filter_map(|b| b.get("toolResult"))
        .collect();
    let model = ask.prompt.model;
    let (reasoning, step) = messages_step(&user_text, &results, result_text, model);
    let seed = format!("bedrock\u{0}{model}\u{0}{user_text}\u{0}{}", results.len());

    let cut_short = user_text.contains("[max_tokens]");
    let mut content = Vec::new();
    let mut minted = None;
    match ask.reasoning {
        Reasoning::Off => {}
        Reasoning::Text => {
            content.push(json!({"reasoningContent": {"reasoningText": {"text": reasoning}}}));
        }
        Reasoning::Signed { omitted } => {
            let digest = super::reasoning::prefix_digest(body.get("system"), messages);
            let text = if omitted { "" } else { reasoning.as_str() };
            let redacted = (ask.redacted || user_text.contains("[redacted]")) && !cut_short;
            let count = if redacted { 2 } else { 1 };
            let token = Token::of_reply(&digest, &seed, count);
            let payload = format!(
                "hermes-sim redacted reasoning {}",
                short_hash(&format!("redacted\u{0}{seed}"), 32)
            );
            let (signature, sealed) = match ask.bound {
                // Bound (docs/spec.md §5a): the Messages tokens with the four binding tags.
                Some((model, account)) => {
                    let binding = signing::Binding {
                        prefix: digest,
                        tools: super::reasoning::tools_digest(body.pointer("/toolConfig/tools")),
                        model,
                        account,
                    };
                    minted = Some((token(0).reply, count));
                    (
                        signing::sign_messages_thinking(ask.prompt.key, &binding, text, token(0)),
                        signing::seal_messages_redacted(
                            ask.prompt.key,
                            &binding,
                            token(1),
                            payload.as_bytes(),
                        ),
                    )
                }
                None => (
                    signing::sign_thinking(ask.prompt.key, &digest, text, token(0)),
                    signing::seal_redacted(ask.prompt.key, &digest, token(1), payload.as_bytes()),
                ),
            };
            content.push(json!({"reasoningContent": {"reasoningText": {
                "text": text,
                "signature": signature
            }}}));
            if redacted {
                content.push(json!({"reasoningContent": {"redactedContent": sealed}}));
            }
        }
    }
    let (last, stop_reason) = messages_ending(
        cut_short,
        ask.reasoning == Reasoning::Off,
        &reasoning,
        step,
        |text| json!({"text": text}),
        |step, of| {
            let call = scripted_call_of(
                body.pointer("/toolConfig/tools"),
                |t| t.pointer("/toolSpec/name"),
                |t| t.pointer("/toolSpec/inputSchema/json"),
            );
            json!({"toolUse": {
                "toolUseId": format!("tooluse_{step:02}{}", short_hash(&seed, 20)),
                "name": call.name,
                "input": call.traced_input(step, of)
            }})
        },
    );
    content.extend(last);
    let output_tokens = content
        .iter()
        .map(|b| b.to_string().len())
        .sum::<usize>()
        .div_ceil(4)
        + 1;
    Reply {
        content,
        stop_reason,
        minted,
        transformations: Vec::new(),
        input_tokens: ask.prompt.raw.len().div_ceil(4).max(1),
        output_tokens,
        latency_ms: 40 + ask.prompt.raw.len() % 200,
    }
}

/// Char counts a tool's input JSON is cut into, cycled.
const RAGGED: [usize; 5] = [5, 11, 2, 7, 13];

/// Splits `s` at uneven char boundaries (at least one piece).
pub(crate) fn ragged(s: &str) -> Vec<String> {
    let out = model::ragged(s, &RAGGED);
    if out.is_empty() {
        vec![String::new()]
    } else {
        out
    }
}

impl Reply {
    fn usage(&self) -> Value {
        json!({
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": self.input_tokens + self.output_tokens
        })
    }

    /// The Converse response object.
    pub(crate) fn json(&self) -> Value {
        let mut out = json!({
            "output": {"message": {"role": "assistant", "content": self.content}},
            "stopReason": self.stop_reason,
            "usage": self.usage(),
            "metrics": {"latencyMs": self.latency_ms}
        });
        if let Some(fields) = self.additional() {
            out["additionalModelResponseFields"] = fields;
        }
        out
    }

    /// `additionalModelResponseFields`: the `input_transformations` asked for, when any.
    fn additional(&self) -> Option<Value> {
        (!self.transformations.is_empty())
            .then(|| json!({"input_transformations": self.transformations}))
    }

    /// ConverseStream's events in order: `(event type, payload)` (without the `p` padding).
    pub(crate) fn events(&self) -> Vec<(&'static str, Value)> {
        let mut out = vec![("messageStart", json!({"role": "assistant"}))];
        for (index, block) in self.content.iter().enumerate() {
            let delta = |d: Value| {
                (
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index, "delta": d}),
                )
            };
            if let Some(t) = block.get("text").and_then(Value::as_str) {
                for p in pieces(t).into_iter().filter(|p| !p.is_empty()) {
                    out.push(delta(json!({"text": p})));
                }
            } else if let Some(r) = block.get("reasoningContent") {
                if let Some(rt) = r.get("reasoningText") {
                    let text = rt.get("text").and_then(Value::as_str).unwrap_or("");
                    for p in pieces(text).into_iter().filter(|p| !p.is_empty()) {
                        out.push(delta(json!({"reasoningContent": {"text": p}})));
                    }
                    if let Some(sig) = rt.get("signature") {
                        out.push(delta(json!({"reasoningContent": {"signature": sig}})));
                    }
                } else if let Some(data) = r.get("redactedContent") {
                    out.push(delta(
                        json!({"reasoningContent": {"redactedContent": data}}),
                    ));
                }
            } else if let Some(tu) = block.get("toolUse") {
                out.push((
                    "contentBlockStart",
                    json!({"contentBlockIndex": index, "start": {"toolUse": {
                        "toolUseId": tu.get("toolUseId"),
                        "name": tu.get("name")
                    }}}),
                ));
                let input = tu.get("input").map(Value::to_string).unwrap_or_default();
                for p in ragged(&input) {
                    out.push(delta(json!({"toolUse": {"input": p}})));
                }
            }
            out.push(("contentBlockStop", json!({"contentBlockIndex": index})));
        }
        let mut stop = json!({"stopReason": self.stop_reason});
        if let Some(fields) = self.additional() {
            stop["additionalModelResponseFields"] = fields;
        }
        out.push(("messageStop", stop));
        out.push((
            "metadata",
            json!({"usage": self.usage(), "metrics": {"latencyMs": self.latency_ms}}),
        ));
        out
    }
}
