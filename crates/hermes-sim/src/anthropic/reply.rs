//! The scripted model's Messages reply (signed thinking, `[tools=N]` tool loops) and how it is
//! rendered: one `message` object, or Anthropic's SSE events.

use serde_json::{Value, json};

use super::binding::tools_digest;
use super::compaction;
use super::rules::Thinking;
use super::thinking::{self, Binding, Token};
use crate::model::{
    self, Prompt, last_user_turn, messages_ending, messages_step, pieces, scripted_call_of,
};
use crate::wire::{list_of, short_hash};

/// Whether the reply reports a cache write, a cache read or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cache {
    /// The request has no `cache_control` breakpoint.
    None,
    /// The first request with a breakpoint: the prefix is written.
    Write,
    /// A later request with a breakpoint: the prefix is read.
    Read,
}

/// What the scripted model answers for one request.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    id: String,
    model: String,
    content: Vec<Value>,
    stop_reason: &'static str,
    input_tokens: usize,
    cache_creation: usize,
    cache_read: usize,
    output_tokens: usize,
    /// The reply id and block count of the thinking it minted.
    minted: Option<([u8; 12], u8)>,
    /// `input_transformations` (blocks `drop_block` dropped); left out when empty.
    transformations: Vec<Value>,
    /// An on-demand compaction: `usage.iterations` carries one `compaction` iteration.
    compaction: bool,
    /// A threshold compaction ran first: its iteration's input and output tokens
    /// (`usage.iterations` lists it, then the `message` iteration).
    threshold: Option<(usize, usize)>,
}

/// Everything the script reads.
pub(crate) struct Ask<'a> {
    pub(crate) prompt: Prompt<'a>,
    pub(crate) thinking: Thinking,
    pub(crate) cache: Cache,
    /// `msg_`, `msg_vrtx_` or `msg_bdrk_`.
    pub(crate) id_prefix: &'a str,
    /// The keyed hash of the request's credential ([`super::binding::account_hash`]).
    pub(crate) account: [u8; 32],
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The text of a `content` value: a string, or its text blocks joined.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn has_text(m: &Value) -> bool {
    match m.get("content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(blocks)) => blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        _ => false,
    }
}

/// Runs the script over a validated request.
pub(crate) fn script(ask: &Ask<'_>) -> Reply {
    let body = ask.prompt.body;
    let messages = list_of(body, "messages");
    let (user_text, after) = last_user_turn(
        messages,
        |m| role_of(m) == "user" && has_text(m),
        |m| text_of(m.get("content")),
    );
    let results: Vec<&Value> = after
        .iter()
        .filter(|m| role_of(m) == "user")
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .collect();
    let model = ask.prompt.model;
    let (reasoning, step) =
        messages_step(&user_text, &results, |r| text_of(r.get("content")), model);
    let seed = format!("{model}\u{0}{user_text}\u{0}{}", results.len());

    let cut_short = user_text.contains("[max_tokens]");
    let mut content = Vec::new();
    let mut minted = None;
    if let Thinking::On { omitted } = ask.thinking {
        let digest = thinking::prefix_digest(body.get("system"), messages);
        let binding = Binding {
            prefix: digest,
            tools: tools_digest(body.get("tools")),
            model,
            account: ask.account,
        };
        let text = if omitted { "" } else { reasoning.as_str() };
        let redacted = user_text.contains("[redacted]") && !cut_short;
        let count = if redacted { 2 } else { 1 };
        let token = Token::of_reply(&digest, &seed, count);
        minted = Some((token(0).reply, count));
        content.push(json!({
            "type": "thinking",
            "thinking": text,
            "signature": thinking::sign_messages_thinking(ask.prompt.key, &binding, text, token(0))
        }));
        if redacted {
            let payload = format!(
                "hermes-sim redacted thinking {}",
                short_hash(&format!("redacted\u{0}{seed}"), 32)
            );
            content.push(json!({
                "type": "redacted_thinking",
                "data": thinking::seal_messages_redacted(ask.prompt.key, &binding, token(1), payload.as_bytes())
            }));
        }
    }
    let (last, stop_reason) = messages_ending(
        cut_short,
        !ask.thinking.on(),
        &reasoning,
        step,
        |text| json!({"type": "text", "text": text}),
        |step, of| {
            let call = scripted_call_of(
                body.get("tools"),
                |t| t.get("name"),
                |t| t.get("input_schema"),
            );
            json!({
                "type": "tool_use",
                "id": format!("toolu_{step:02}{}", short_hash(&seed, 22)),
                "name": call.name,
                "input": call.traced_input(step, of)
            })
        },
    );
    content.extend(last);

    let total = ask.prompt.raw.len().div_ceil(4).max(1);
    let (cache_creation, cache_read) = match ask.cache {
        Cache::None => (0, 0),
        Cache::Write => (total / 2, 0),
        Cache::Read => (0, (total / 2).max(1)),
    };
    let output_tokens = content.iter().map(block_len).sum::<usize>().div_ceil(4) + 1;
    Reply {
        input_tokens: total - cache_creation - cache_read,
        cache_creation,
        cache_read,
        minted,
        ..Reply::new(ask, content, stop_reason, output_tokens)
    }
}

/// The answer to an on-demand compaction request: one `compaction` block summarising the
/// request's messages, sealed for its messages chain, model and account.
pub(crate) fn compaction(ask: &Ask<'_>) -> Reply {
    let (block, output_tokens) = compaction_block(ask);
    Reply {
        compaction: true,
        ..Reply::new(ask, vec![block], "end_turn", output_tokens)
    }
}

/// A `compaction` block summarising the request's messages, sealed for its messages chain,
/// model and account, with the output tokens it counts for.
fn compaction_block(ask: &Ask<'_>) -> (Value, usize) {
    let messages = list_of(ask.prompt.body, "messages");
    let summary = compaction::summary(messages);
    let chain = thinking::messages_chain(messages);
    let sealed = compaction::seal(
        ask.prompt.key,
        &chain,
        ask.prompt.model,
        &ask.account,
        &summary,
    );
    let output_tokens = summary.len().div_ceil(4) + 1;
    (
        json!({"type": "compaction", "content": summary, "encrypted_content": sealed}),
        output_tokens,
    )
}

impl Reply {
    /// A reply to `ask` with `content`: every input token uncached, nothing minted, no input
    /// transformations and no compaction iteration.
    fn new(
        ask: &Ask<'_>,
        content: Vec<Value>,
        stop_reason: &'static str,
        output_tokens: usize,
    ) -> Reply {
        Reply {
            id: format!(
                "{}{}",
                ask.id_prefix,
                short_hash(&String::from_utf8_lossy(ask.prompt.raw), 24)
            ),
            model: ask.prompt.model.to_owned(),
            content,
            stop_reason,
            input_tokens: ask.prompt.raw.len().div_ceil(4).max(1),
            cache_creation: 0,
            cache_read: 0,
            output_tokens,
            minted: None,
            transformations: Vec::new(),
            compaction: false,
            threshold: None,
        }
    }
}

impl Reply {
    /// This reply after a threshold compaction of the request's messages: the `compaction`
    /// block, sealed like an on-demand one, first in the content; `counted` the input tokens the
    /// compaction read.
    pub(crate) fn after_threshold_compaction(mut self, ask: &Ask<'_>, counted: usize) -> Self {
        let (block, out) = compaction_block(ask);
        self.content.insert(0, block);
        self.threshold = Some((counted, out));
        self
    }
}

/// Rough size of a block's visible text.
fn block_len(b: &Value) -> usize {
    ["text", "thinking", "data"]
        .iter()
        .filter_map(|k| b.get(*k).and_then(Value::as_str))
        .map(str::len)
        .sum::<usize>()
        + b.get("input").map_or(0, |i| i.to_string().len())
}

impl Reply {
    /// The reply id and block count of the thinking this reply minted, if any.
    pub(crate) fn minted(&self) -> Option<([u8; 12], u8)> {
        self.minted
    }

    /// The key of this reply's turn once appended to the request's `messages`: the messages
    /// chain up to and including it ([`thinking::messages_chain`]).
    pub(crate) fn turn_key(&self, messages: &[Value]) -> [u8; 32] {
        let mut all = messages.to_vec();
        all.push(json!({"role": "assistant", "content": self.content}));
        thinking::messages_chain(&all)
    }

    /// Sets the `input_transformations` the reply reports.
    pub(crate) fn set_transformations(&mut self, transformations: Vec<Value>) {
        self.transformations = transformations;
    }

    /// Input tokens billed (cache reads and writes included).
    pub(crate) fn input_token_count(&self) -> usize {
        self.input_tokens + self.cache_creation + self.cache_read
    }

    /// Output tokens billed.
    pub(crate) fn output_token_count(&self) -> usize {
        self.output_tokens
    }

    fn usage(&self, output_tokens: usize) -> Value {
        let mut usage = json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation,
            "cache_read_input_tokens": self.cache_read,
            "output_tokens": output_tokens
        });
        if self.compaction {
            usage["iterations"] = json!([{
                "type": "compaction",
                "input_tokens": self.input_tokens,
                "output_tokens": output_tokens
            }]);
        }
        // The compaction iteration's tokens are not in the top-level counts (anthropic 2.17.0
        // `beta_iterations_usage.py`).
        if let Some((input, output)) = self.threshold {
            usage["iterations"] = json!([
                {"type": "compaction", "input_tokens": input, "output_tokens": output,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
                {"type": "message", "input_tokens": self.input_tokens,
                 "output_tokens": output_tokens,
                 "cache_creation_input_tokens": self.cache_creation,
                 "cache_read_input_tokens": self.cache_read}
            ]);
        }
        usage
    }

    fn message(&self, content: Value, stop_reason: Value, output_tokens: usize) -> Value {
        let mut message = json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": self.usage(output_tokens)
        });
        if !self.transformations.is_empty() {
            message["input_transformations"] = Value::Array(self.transformations.clone());
        }
        message
    }

    /// The non-streamed `message` object.
    pub(crate) fn json(&self) -> Value {
        self.message(
            Value::Array(self.content.clone()),
            json!(self.stop_reason),
            self.output_tokens,
        )
    }

    /// The SSE events, in order: `(event name, data)`.
    pub(crate) fn events(&self) -> Vec<(&'static str, Value)> {
        let mut out = vec![
            (
                "message_start",
                json!({"type": "message_start", "message": self.message(json!([]), Value::Null, 1)}),
            ),
            ("ping", json!({"type": "ping"})),
        ];
        for (index, block) in self.content.iter().enumerate() {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            let str_of = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
            let start = |b: Value| {
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": b}),
                )
            };
            let delta = |d: Value| {
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": d}),
                )
            };
            match kind {
                "thinking" => {
                    out.push(start(
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                    ));
                    for p in pieces(str_of("thinking"))
                        .into_iter()
                        .filter(|p| !p.is_empty())
                    {
                        out.push(delta(json!({"type": "thinking_delta", "thinking": p})));
                    }
                    out.push(delta(
                        json!({"type": "signature_delta", "signature": str_of("signature")}),
                    ));
                }
                "text" => {
                    out.push(start(json!({"type": "text", "text": ""})));
                    for p in pieces(str_of("text")).into_iter().filter(|p| !p.is_empty()) {
                        out.push(delta(json!({"type": "text_delta", "text": p})));
                    }
                }
                "tool_use" => {
                    out.push(start(json!({
                        "type": "tool_use",
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "input": {}
                    })));
                    let input = block.get("input").map(Value::to_string).unwrap_or_default();
                    for p in ragged(&input) {
                        out.push(delta(
                            json!({"type": "input_json_delta", "partial_json": p}),
                        ));
                    }
                }
                "compaction" => {
                    out.push(start(
                        json!({"type": "compaction", "content": "", "encrypted_content": ""}),
                    ));
                    // Both fields arrive in pieces, side by side; a client concatenates each.
                    let content = pieces(str_of("content"));
                    let sealed = ragged(str_of("encrypted_content"));
                    for i in 0..content.len().max(sealed.len()) {
                        let piece = |v: &[String]| v.get(i).cloned().unwrap_or_default();
                        out.push(delta(json!({
                            "type": "compaction_delta",
                            "content": piece(&content),
                            "encrypted_content": piece(&sealed)
                        })));
                    }
                }
                // redacted_thinking (and anything else) arrives whole in its start event.
                _ => out.push(start(block.clone())),
            }
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        out.push((
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": self.output_tokens}
            }),
        ));
        out.push(("message_stop", json!({"type": "message_stop"})));
        out
    }

    /// The full SSE text; with `fail_mid_stream`, a few events then an `overloaded_error` event.
    pub(crate) fn sse(&self, fail_mid_stream: bool) -> String {
        let events = self.events();
        let take = if fail_mid_stream { 5 } else { events.len() };
        let mut out = String::new();
        let mut push = |name: &str, data: &Value| {
            out.push_str("event: ");
            out.push_str(name);
            out.push_str("\ndata: ");
            out.push_str(&data.to_string());
            out.push_str("\n\n");
        };
        for (name, data) in events.iter().take(take) {
            push(name, data);
        }
        if fail_mid_stream {
            push(
                "error",
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            );
        }
        out
    }
}

/// Char counts the input JSON is cut into, cycled (uneven, so cuts land anywhere).
const RAGGED: [usize; 6] = [1, 7, 3, 11, 2, 5];

/// Splits `s` at uneven char boundaries, after an empty first piece (as the API's first
/// `input_json_delta` carries `""`).
pub(crate) fn ragged(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    out.extend(model::ragged(s, &RAGGED));
    out
}
