//! The scripted model's Responses API reply and how it is rendered: one `response` object, or SSE
//! (`event: NAME` / `data: {"type":NAME,"sequence_number":n,…}`).
//!
//! Triggers in the last user message: `[tools=N]` runs N sequential steps, each answered with a
//! `reasoning` item (`rs_…`) followed by one `function_call` (`fc_…`, `call_…`) of the tool `now`
//! (or the first declared function when `now` is not declared); once N `function_call_output`s
//! follow that message, a final turn: `reasoning` + an assistant `message` (`msg_…`). Without
//! the marker every turn is a text turn. The reasoning item carries a summary when
//! `reasoning.summary` is set and `encrypted_content` when `include` names
//! `reasoning.encrypted_content` (else `null`).

use serde_json::{Map, Value, json};

use super::rules::{input_items, kind_of};
use super::seal;
use crate::model::{pieces, scripted_call_of, snippet, text_of, tools_wanted};
use crate::wire::short_hash;

/// Fixed `created_at` so replies are byte-for-byte deterministic.
pub(crate) const CREATED_AT: u64 = 1_767_225_600;

/// OpenAI's generic server error text (used for the simulated mid-stream failure).
const SERVER_ERROR: &str = "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.";

/// What the model is asked.
pub(crate) struct Ask<'a> {
    pub(crate) body: &'a Value,
    pub(crate) raw: &'a [u8],
    pub(crate) model: &'a str,
    pub(crate) key: &'a [u8],
    pub(crate) org: &'a str,
}

/// How the response ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// `completed`.
    Completed,
    /// `incomplete` (`max_output_tokens`), after the reasoning item.
    Incomplete,
    /// `failed` mid-stream (streams only).
    Failed,
}

/// The item after the reasoning item.
#[derive(Clone, Debug)]
enum Next {
    Call {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
    Message {
        id: String,
        text: String,
    },
}

/// The scripted reply.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    id: String,
    model: String,
    /// The request body (settings echoed in the response object).
    request: Value,
    rs_id: String,
    summary: Option<String>,
    hidden: String,
    encrypted: Option<String>,
    next: Next,
    input_tokens: usize,
    /// A `compaction` item that comes first in the output (server-side compaction: the input
    /// crossed the request's `compact_threshold`).
    compaction: Option<Value>,
}

/// Runs the script over a validated request.
pub(crate) fn script(ask: &Ask<'_>) -> Reply {
    let body = ask.body;
    let items = input_items(body);
    let (user_text, results) = match body.get("input") {
        Some(Value::String(s)) => (s.clone(), Vec::new()),
        _ => {
            let last_user = items
                .iter()
                .rposition(|o| kind_of(o) == "message" && o.get("role") == Some(&json!("user")));
            let text = last_user
                .map(|i| text_of(items[i].get("content")))
                .unwrap_or_default();
            let after = last_user.map_or(&items[..], |i| &items[i + 1..]);
            let results: Vec<String> = after
                .iter()
                .filter(|o| kind_of(o) == "function_call_output")
                .map(|o| match o.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    other => text_of(other),
                })
                .collect();
            (text, results)
        }
    };
    let call = scripted_call_of(
        body.get("tools"),
        |t| t.get("name"),
        |t| t.get("parameters"),
    );
    let tool = call.name.clone();
    let seed = format!(
        "{}\u{0}{user_text}\u{0}{}\u{0}{}",
        ask.model,
        results.len(),
        short_hash(&String::from_utf8_lossy(ask.raw), 16)
    );
    let rs_id = format!("rs_{}", short_hash(&format!("{seed}\u{0}rs"), seal::RS_HEX));
    let (summary, hidden, next) = match tools_wanted(&user_text) {
        Some(n) if results.len() < n => {
            let step = results.len() + 1;
            (
                format!(
                    "**Calling `{tool}`, step {step} of {n}**\n\nThe user asked for {n} tool calls and {done} results are in, so I call `{tool}` again.",
                    done = results.len()
                ),
                format!(
                    "hermes-sim hidden reasoning, step {step} of {n}, {}",
                    short_hash(&seed, 16)
                ),
                Next::Call {
                    id: seal::paired_id(ask.key, "fc_", &rs_id),
                    call_id: format!("call_{}", short_hash(&format!("{seed}\u{0}call"), 24)),
                    name: tool,
                    arguments: call.arguments(),
                },
            )
        }
        Some(n) => {
            let last = results.last().map(String::as_str).unwrap_or_default();
            (
                format!(
                    "**Writing the answer**\n\nAll {n} tool results are in; the last one says \"{}\".",
                    snippet(last)
                ),
                format!(
                    "hermes-sim hidden reasoning, final, {}",
                    short_hash(&seed, 16)
                ),
                Next::Message {
                    id: seal::paired_id(ask.key, "msg_", &rs_id),
                    text: format!(
                        "Done after {n} tool calls. The last `{tool}` result was: {}",
                        snippet(last)
                    ),
                },
            )
        }
        None => (
            format!(
                "**Answering directly**\n\nThe user wrote \"{}\"; no tool is needed.",
                snippet(&user_text)
            ),
            format!(
                "hermes-sim hidden reasoning, text, {}",
                short_hash(&seed, 16)
            ),
            Next::Message {
                id: seal::paired_id(ask.key, "msg_", &rs_id),
                text: format!(
                    "Hello from the scripted model {}. You said: {}",
                    snippet(ask.model),
                    snippet(&user_text)
                ),
            },
        ),
    };
    let summary_on = body
        .get("reasoning")
        .and_then(|r| r.get("summary"))
        .is_some_and(Value::is_string);
    let include_enc = body
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "reasoning.encrypted_content"));
    let encrypted =
        include_enc.then(|| seal::encrypt(ask.key, ask.model, ask.org, &rs_id, &hidden));
    Reply {
        id: format!("resp_{}", short_hash(&format!("{seed}\u{0}resp"), 48)),
        model: ask.model.to_owned(),
        request: body.clone(),
        rs_id,
        summary: summary_on.then_some(summary),
        hidden,
        encrypted,
        next,
        input_tokens: ask.raw.len().div_ceil(4),
        compaction: None,
    }
}

impl Reply {
    /// The `rs_…` id of the reasoning item this reply mints.
    pub(crate) fn rs_id(&self) -> &str {
        &self.rs_id
    }

    /// The input tokens this reply counts (the simulator's estimate: a quarter of the body's
    /// bytes).
    pub(crate) fn input_tokens(&self) -> usize {
        self.input_tokens
    }

    /// Puts `item` (a `compaction` item) first in the output.
    pub(crate) fn with_compaction(mut self, item: Value) -> Self {
        self.compaction = Some(item);
        self
    }

    /// The reasoning item: complete, or as `response.output_item.added` shows it.
    fn reasoning_item(&self, complete: bool) -> Value {
        if !complete {
            return json!({"id": self.rs_id, "type": "reasoning", "summary": []});
        }
        let summary: Vec<Value> = self
            .summary
            .iter()
            .map(|t| json!({"type": "summary_text", "text": t}))
            .collect();
        json!({
            "id": self.rs_id,
            "type": "reasoning",
            "summary": summary,
            "encrypted_content": self.encrypted
        })
    }

    /// The following item: complete, or as `response.output_item.added` shows it.
    fn next_item(&self, complete: bool) -> Value {
        let status = if complete { "completed" } else { "in_progress" };
        match &self.next {
            Next::Call {
                id,
                call_id,
                name,
                arguments,
            } => json!({
                "id": id,
                "type": "function_call",
                "status": status,
                "arguments": if complete { arguments.as_str() } else { "" },
                "call_id": call_id,
                "name": name
            }),
            Next::Message { id, text } => {
                let content = if complete {
                    json!([text_part(text)])
                } else {
                    json!([])
                };
                json!({
                    "id": id,
                    "type": "message",
                    "status": status,
                    "content": content,
                    "role": "assistant"
                })
            }
        }
    }

    fn usage(&self, end: End) -> Value {
        let reasoning =
            (self.hidden.len() + self.summary.as_deref().map_or(0, str::len)).div_ceil(4);
        let visible = match (&self.next, end) {
            (_, End::Incomplete) => 0,
            (Next::Call { arguments, .. }, _) => 4 + arguments.len(),
            (Next::Message { text, .. }, _) => text.len().div_ceil(4),
        };
        let output = reasoning + visible + 1;
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": self.input_tokens + output
        })
    }

    /// The `response` object in `status` with `output`.
    fn response(&self, status: &str, output: Vec<Value>, end: End) -> Value {
        let req = |k: &str| self.request.get(k).filter(|v| !v.is_null()).cloned();
        let reasoning = self.request.get("reasoning");
        let setting = |k: &str| reasoning.and_then(|r| r.get(k)).cloned();
        let (error, incomplete, usage) = match status {
            "in_progress" => (Value::Null, Value::Null, Value::Null),
            "failed" => (
                json!({"code": "server_error", "message": SERVER_ERROR}),
                Value::Null,
                Value::Null,
            ),
            "incomplete" => (
                Value::Null,
                json!({"reason": "max_output_tokens"}),
                self.usage(end),
            ),
            _ => (Value::Null, Value::Null, self.usage(end)),
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": CREATED_AT,
            "status": status,
            "background": false,
            "error": error,
            "incomplete_details": incomplete,
            "instructions": req("instructions"),
            "max_output_tokens": req("max_output_tokens"),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": req("parallel_tool_calls").unwrap_or(json!(true)),
            "previous_response_id": null,
            "reasoning": {
                "effort": setting("effort").unwrap_or(json!("medium")),
                "summary": setting("summary").unwrap_or(Value::Null)
            },
            "service_tier": req("service_tier").unwrap_or(json!("default")),
            "store": req("store").unwrap_or(json!(true)),
            "text": req("text").unwrap_or(json!({"format": {"type": "text"}, "verbosity": "medium"})),
            "tool_choice": req("tool_choice").unwrap_or(json!("auto")),
            "tools": req("tools").unwrap_or(json!([])),
            "truncation": req("truncation").unwrap_or(json!("disabled")),
            "usage": usage,
            "user": req("user"),
            "metadata": req("metadata").unwrap_or(json!({}))
        })
    }

    /// The final output items for `end`.
    fn output(&self, end: End) -> Vec<Value> {
        let mut out: Vec<Value> = match end {
            End::Failed => return Vec::new(),
            _ => self.compaction.iter().cloned().collect(),
        };
        match end {
            End::Completed => out.extend([self.reasoning_item(true), self.next_item(true)]),
            _ => out.push(self.reasoning_item(true)),
        }
        out
    }

    fn status(end: End) -> &'static str {
        match end {
            End::Completed => "completed",
            End::Incomplete => "incomplete",
            End::Failed => "failed",
        }
    }

    /// The non-streamed `response` object (a failure only happens mid-stream).
    pub(crate) fn json(&self, end: End) -> Value {
        let end = if end == End::Failed {
            End::Completed
        } else {
            end
        };
        self.response(Self::status(end), self.output(end), end)
    }

    /// The SSE text of a streamed reply.
    pub(crate) fn sse(&self, end: End) -> String {
        let mut ev = Events::default();
        ev.push(
            "response.created",
            json!({"response": self.response("in_progress", Vec::new(), end)}),
        );
        ev.push(
            "response.in_progress",
            json!({"response": self.response("in_progress", Vec::new(), end)}),
        );
        // A compaction item comes whole, first (output index 0); the others follow it.
        let first = usize::from(self.compaction.is_some());
        if let Some(item) = &self.compaction {
            ev.push(
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            );
            ev.push(
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            );
        }
        ev.push(
            "response.output_item.added",
            json!({"output_index": first, "item": self.reasoning_item(false)}),
        );
        let rs = &self.rs_id;
        if let Some(summary) = &self.summary {
            let at = json!({"item_id": rs, "output_index": first, "summary_index": 0});
            ev.push_at(
                "response.reasoning_summary_part.added",
                &at,
                json!({"part": {"type": "summary_text", "text": ""}}),
            );
            for (n, p) in pieces(summary).into_iter().enumerate() {
                ev.push_at(
                    "response.reasoning_summary_text.delta",
                    &at,
                    json!({"delta": p}),
                );
                if end == End::Failed && n == 1 {
                    return ev.failed(self);
                }
            }
            ev.push_at(
                "response.reasoning_summary_text.done",
                &at,
                json!({"text": summary}),
            );
            ev.push_at(
                "response.reasoning_summary_part.done",
                &at,
                json!({"part": {"type": "summary_text", "text": summary}}),
            );
        } else if end == End::Failed {
            return ev.failed(self);
        }
        ev.push(
            "response.output_item.done",
            json!({"output_index": first, "item": self.reasoning_item(true)}),
        );
        if end == End::Incomplete {
            ev.push(
                "response.incomplete",
                json!({"response": self.response("incomplete", self.output(end), end)}),
            );
            return ev.out;
        }
        ev.push(
            "response.output_item.added",
            json!({"output_index": first + 1, "item": self.next_item(false)}),
        );
        match &self.next {
            Next::Call { id, arguments, .. } => {
                let at = json!({"item_id": id, "output_index": first + 1});
                for p in pieces(arguments) {
                    ev.push_at(
                        "response.function_call_arguments.delta",
                        &at,
                        json!({"delta": p}),
                    );
                }
                ev.push_at(
                    "response.function_call_arguments.done",
                    &at,
                    json!({"arguments": arguments}),
                );
            }
            Next::Message { id, text } => {
                let at = json!({"item_id": id, "output_index": first + 1, "content_index": 0});
                ev.push_at(
                    "response.content_part.added",
                    &at,
                    json!({"part": text_part("")}),
                );
                for p in pieces(text) {
                    ev.push_at(
                        "response.output_text.delta",
                        &at,
                        json!({"delta": p, "logprobs": []}),
                    );
                }
                ev.push_at(
                    "response.output_text.done",
                    &at,
                    json!({"text": text, "logprobs": []}),
                );
                ev.push_at(
                    "response.content_part.done",
                    &at,
                    json!({"part": text_part(text)}),
                );
            }
        }
        ev.push(
            "response.output_item.done",
            json!({"output_index": first + 1, "item": self.next_item(true)}),
        );
        ev.push(
            "response.completed",
            json!({"response": self.response("completed", self.output(end), end)}),
        );
        ev.out
    }
}

/// An `output_text` content part.
fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "annotations": [], "text": text})
}

/// SSE text under construction, with the running `sequence_number`.
#[derive(Default)]
struct Events {
    out: String,
    seq: u64,
}

impl Events {
    /// `event: NAME` / `data: {"type":NAME,"sequence_number":n,…fields}`.
    fn push(&mut self, name: &str, fields: Value) {
        let mut data = Map::new();
        data.insert("type".into(), json!(name));
        data.insert("sequence_number".into(), json!(self.seq));
        if let Value::Object(f) = fields {
            data.extend(f);
        }
        self.seq += 1;
        self.out.push_str("event: ");
        self.out.push_str(name);
        self.out.push_str("\ndata: ");
        self.out.push_str(&Value::Object(data).to_string());
        self.out.push_str("\n\n");
    }

    /// [`Events::push`] with the location fields `at` first.
    fn push_at(&mut self, name: &str, at: &Value, fields: Value) {
        let mut all = at.as_object().cloned().unwrap_or_default();
        if let Value::Object(f) = fields {
            all.extend(f);
        }
        self.push(name, Value::Object(all));
    }

    /// Ends the stream with `response.failed`.
    fn failed(mut self, reply: &Reply) -> String {
        self.push(
            "response.failed",
            json!({"response": reply.response("failed", Vec::new(), End::Failed)}),
        );
        self.out
    }
}
