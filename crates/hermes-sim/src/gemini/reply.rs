//! The scripted model's `GenerateContentResponse` and how it is rendered: one JSON object, or the
//! chunks of `streamGenerateContent` (SSE with `alt=sse`, else a JSON array).
//!
//! Triggers in the last user text: `[tools=N]` runs N sequential steps, each one model turn with
//! one `functionCall` of the tool `now` (or the first declared tool when `now` is not declared),
//! its `args` a minimal instance of the declaration's schema (`crate::model::arguments_for`);
//! `[parallel=M]` makes each step carry M parallel `functionCall` parts (alone it means one step of
//! M calls). Then a text answer quoting the last `functionResponse`. Without a trigger, a greeting.
//!
//! Signatures (while the model thinks; Gemini 3 always does): a function-call turn signs its
//! first `functionCall` part only (one call per sequential step, so every step's call is signed);
//! a text turn signs its last part. Streamed text turns carry the signature on a trailing part
//! `{"text":"","thoughtSignature":…}` in the last chunk (the placement docs/providers.md asks
//! clients to handle), or on the last text fragment with
//! [`crate::Switches::signature_on_text_fragment`]. Thought summaries are parts `{"text":…,
//! "thought": true}` before the answer, only with `includeThoughts`. Gemini 3 function calls carry
//! an `id`; Gemini 2.5 ones do not (hermes must pair by name and order then) — the simulator's
//! choice.

use serde_json::{Value, json};

use super::rules::{Generation, Thinking, last_user_text};
use super::signature::{self, Kind, TurnContent};
use super::{calls_of, is_thought, part_field, parts_of, role_of, schema};
use crate::model::{ScriptedCall, marker_wanted, pieces, scripted_call, snippet, tools_wanted};
use crate::wire::short_hash;

/// Everything the script reads.
pub(crate) struct Ask<'a> {
    pub(crate) body: &'a Value,
    pub(crate) raw: &'a [u8],
    /// The model from the path.
    pub(crate) model: &'a str,
    pub(crate) thinking: Thinking,
    pub(crate) key: &'a [u8],
}

/// What the model answers: function calls, or text.
#[derive(Clone, Debug)]
enum Out {
    /// `functionCall` objects.
    Calls(Vec<Value>),
    Text(String),
}

/// What the scripted model answers for one request.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    model: String,
    response_id: String,
    /// The thought summary, when `includeThoughts` asked for it.
    thought: Option<String>,
    out: Out,
    /// The turn's signature (while thinking).
    signature: Option<String>,
    prompt_tokens: usize,
    thought_tokens: usize,
    output_tokens: usize,
}

/// The non-thought text of a content's parts, joined.
fn text_of(c: &Value) -> String {
    parts_of(c)
        .iter()
        .filter(|p| !is_thought(p))
        .filter_map(|p| part_field(p, "text").and_then(Value::as_str))
        .collect()
}

/// A function response as text: its `output`, `result` or `content` string, else its JSON.
fn response_text(r: &Value) -> String {
    let resp = r.get("response").unwrap_or(&Value::Null);
    ["output", "result", "content"]
        .iter()
        .find_map(|k| resp.get(k).and_then(Value::as_str))
        .map_or_else(|| resp.to_string(), str::to_owned)
}

/// The call the script makes: `now` when declared (or when none are), else the first declared
/// function, with arguments valid for its `parameters` (or `parametersJsonSchema`).
fn tool_call(body: &Value) -> ScriptedCall {
    let declared: Vec<(&str, Option<&Value>)> = body
        .as_object()
        .and_then(|o| schema::field(o, "tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.as_object()
                .and_then(|o| schema::field(o, "functionDeclarations"))
        })
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|d| {
            let o = d.as_object()?;
            let name = o.get("name").and_then(Value::as_str)?;
            let params =
                schema::field(o, "parametersJsonSchema").or_else(|| schema::field(o, "parameters"));
            Some((name, params))
        })
        .collect();
    scripted_call(&declared)
}

/// Runs the script over a validated request.
pub(crate) fn script(ask: &Ask<'_>) -> Reply {
    let body = ask.body;
    let contents = body
        .as_object()
        .and_then(|o| schema::field(o, "contents"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let last_user = last_user_text(contents);
    let user_text = last_user.map(|i| text_of(&contents[i])).unwrap_or_default();
    let after = last_user.map_or(contents, |i| &contents[i + 1..]);
    let done = after
        .iter()
        .filter(|c| role_of(c) == "model" && !calls_of(c).is_empty())
        .count();
    let last_result = after
        .iter()
        .rev()
        .flat_map(|c| parts_of(c).iter().rev())
        .find_map(|p| part_field(p, "functionResponse"))
        .map(response_text)
        .unwrap_or_default();
    let parallel = marker_wanted(&user_text, "[parallel=");
    let steps = tools_wanted(&user_text).or(parallel.map(|_| 1));
    let per_step = parallel.unwrap_or(1);
    let model = ask.model;
    let call = tool_call(body);
    let tool = call.name.as_str();
    let seed = format!("{model}\u{0}{user_text}\u{0}{done}");
    let with_ids = Generation::of(model) == Generation::Three;

    let (thought, out) = match steps {
        Some(n) if done < n => {
            let step = done + 1;
            let calls = (0..per_step)
                .map(|j| {
                    let mut fc = json!({"name": tool, "args": call.input});
                    if with_ids && let Some(o) = fc.as_object_mut() {
                        let id = format!("fc_{step}_{j}_{}", short_hash(&seed, 8));
                        o.shift_insert(0, "id".into(), json!(id));
                    }
                    fc
                })
                .collect();
            (
                format!(
                    "**Calling `{tool}`**\n\nStep {step} of {n}: the user asked for {n} tool steps and {done} are done, so I call `{tool}` {per_step} time(s) now."
                ),
                Out::Calls(calls),
            )
        }
        Some(n) => (
            format!(
                "**Writing the answer**\n\nAll {n} tool steps are done; the last result says \"{}\", so I can answer.",
                snippet(&last_result)
            ),
            Out::Text(format!(
                "Done after {n} tool steps. The last `{tool}` result was: {}",
                snippet(&last_result)
            )),
        ),
        None => (
            format!(
                "**Answering directly**\n\nThe user wrote \"{}\"; no tool is needed, so I answer briefly.",
                snippet(&user_text)
            ),
            Out::Text(format!(
                "Hello from the scripted model {}. You said: {}",
                snippet(model),
                snippet(&user_text)
            )),
        ),
    };
    let signature = ask.thinking.on.then(|| {
        let (kind, parts) = match &out {
            Out::Calls(calls) => (
                Kind::Calls,
                calls
                    .iter()
                    .map(|c| json!({"functionCall": c}))
                    .collect::<Vec<_>>(),
            ),
            Out::Text(t) => (Kind::Text, vec![json!({"text": t})]),
        };
        signature::mint(ask.key, model, kind, &TurnContent::of(&parts), &seed)
    });
    let output_tokens = match &out {
        Out::Calls(calls) => calls.iter().map(|c| 4 + c.to_string().len() / 4).sum(),
        Out::Text(t) => t.len().div_ceil(4),
    };
    Reply {
        model: model.to_owned(),
        response_id: short_hash(
            &format!("{seed}\u{0}{}", String::from_utf8_lossy(ask.raw)),
            22,
        ),
        thought_tokens: if ask.thinking.on {
            thought.len().div_ceil(4)
        } else {
            0
        },
        thought: ask.thinking.include_thoughts.then_some(thought),
        out,
        signature,
        prompt_tokens: ask.raw.len().div_ceil(4),
        output_tokens,
    }
}

impl Reply {
    fn usage(&self) -> Value {
        let mut u = json!({
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": self.output_tokens,
            "totalTokenCount": self.prompt_tokens + self.output_tokens + self.thought_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt_tokens}]
        });
        if self.thought_tokens > 0 {
            u["thoughtsTokenCount"] = json!(self.thought_tokens);
        }
        u
    }

    /// One response object with `parts`; `last` adds `finishReason` and `usageMetadata`.
    fn response(&self, parts: Vec<Value>, last: bool) -> Value {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}});
        if last {
            candidate["finishReason"] = json!("STOP");
        }
        candidate["index"] = json!(0);
        let mut r = json!({"candidates": [candidate]});
        if last {
            r["usageMetadata"] = self.usage();
        }
        r["modelVersion"] = json!(self.model);
        r["responseId"] = json!(self.response_id);
        r
    }

    fn signed(&self, mut part: Value) -> Value {
        if let Some(sig) = &self.signature {
            part["thoughtSignature"] = json!(sig);
        }
        part
    }

    /// The non-streamed `GenerateContentResponse`.
    pub(crate) fn json(&self) -> Value {
        let mut parts = Vec::new();
        if let Some(t) = &self.thought {
            parts.push(json!({"text": t, "thought": true}));
        }
        match &self.out {
            Out::Calls(calls) => {
                for (j, c) in calls.iter().enumerate() {
                    let part = json!({"functionCall": c});
                    parts.push(if j == 0 { self.signed(part) } else { part });
                }
            }
            Out::Text(t) => parts.push(self.signed(json!({"text": t}))),
        }
        self.response(parts, true)
    }

    /// The chunks of a stream. `on_fragment`: a text turn's signature rides on its last text
    /// fragment instead of a trailing empty-text part.
    pub(crate) fn chunks(&self, on_fragment: bool) -> Vec<Value> {
        let mut parts: Vec<Value> = Vec::new();
        if let Some(t) = &self.thought {
            parts.extend(
                pieces(t)
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| json!({"text": p, "thought": true})),
            );
        }
        match &self.out {
            Out::Calls(calls) => {
                for (j, c) in calls.iter().enumerate() {
                    let part = json!({"functionCall": c});
                    parts.push(if j == 0 { self.signed(part) } else { part });
                }
            }
            Out::Text(t) => {
                let texts: Vec<String> = pieces(t).into_iter().filter(|p| !p.is_empty()).collect();
                let n = texts.len();
                for (i, p) in texts.into_iter().enumerate() {
                    let part = json!({"text": p});
                    let sign_here = i + 1 == n && (on_fragment || self.signature.is_none());
                    parts.push(if sign_here { self.signed(part) } else { part });
                }
                if !on_fragment && self.signature.is_some() {
                    parts.push(self.signed(json!({"text": ""})));
                }
            }
        }
        let n = parts.len();
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| self.response(vec![p], i + 1 == n))
            .collect()
    }
}

/// Chunks before the mid-stream failure.
const CHUNKS_BEFORE_FAILURE: usize = 3;

/// The error a failing stream ends with: Google's 503 text (field reports of overloaded
/// models); sending it as a stream chunk after the 200 is the simulator's choice.
fn overloaded() -> Value {
    json!({"error": {
        "code": 503,
        "message": "The model is overloaded. Please try again later.",
        "status": "UNAVAILABLE"
    }})
}

/// The SSE text of a stream: `data: {chunk}` events with CRLF line ends (as Google sends them:
/// Routstr/routstr-core#543, nyroway/nyro#265); with `fail`, a few chunks then an error event.
pub(crate) fn sse(chunks: &[Value], fail: bool) -> String {
    let mut out = String::new();
    let take = if fail {
        CHUNKS_BEFORE_FAILURE
    } else {
        chunks.len()
    };
    let mut push = |v: &Value| {
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\r\n\r\n");
    };
    for c in chunks.iter().take(take) {
        push(c);
    }
    if fail {
        push(&overloaded());
    }
    out
}

/// The JSON-array body of `streamGenerateContent` without `alt=sse`; with `fail`, a few chunks
/// then an error object as the last element.
pub(crate) fn json_array(chunks: &[Value], fail: bool) -> String {
    let take = if fail {
        CHUNKS_BEFORE_FAILURE
    } else {
        chunks.len()
    };
    let mut items: Vec<String> = chunks.iter().take(take).map(Value::to_string).collect();
    if fail {
        items.push(overloaded().to_string());
    }
    format!("[{}\n]", items.join("\n,\r\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sign::DEFAULT_KEY;

    fn ask_for(body: &Value, model: &str, include: bool) -> Reply {
        let raw = body.to_string();
        script(&Ask {
            body,
            raw: raw.as_bytes(),
            model,
            thinking: Thinking {
                on: true,
                include_thoughts: include,
            },
            key: DEFAULT_KEY,
        })
    }

    #[test]
    fn parallel_calls_sign_the_first_only() {
        let body = json!({"contents": [{"role": "user", "parts": [{"text": "go [parallel=3]"}]}]});
        let v = ask_for(&body, "gemini-3-pro-preview", true).json();
        let parts = v["candidates"][0]["content"]["parts"].as_array().unwrap();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0]["thought"], true);
        assert!(parts[1]["thoughtSignature"].is_string());
        assert!(parts[1]["functionCall"]["id"].is_string());
        assert!(parts[2].get("thoughtSignature").is_none());
        assert!(parts[3].get("thoughtSignature").is_none());
        assert_eq!(v["candidates"][0]["finishReason"], "STOP");
    }

    #[test]
    fn streamed_text_signature_placement() {
        let body = json!({"contents": [{"parts": [{"text": "hi"}]}]});
        let r = ask_for(&body, "gemini-2.5-flash", false);
        let trailing = r.chunks(false);
        let last = &trailing.last().unwrap()["candidates"][0];
        assert_eq!(last["content"]["parts"][0]["text"], "");
        assert!(last["content"]["parts"][0]["thoughtSignature"].is_string());
        assert_eq!(last["finishReason"], "STOP");
        let fragment = r.chunks(true);
        assert_eq!(fragment.len() + 1, trailing.len());
        let last = &fragment.last().unwrap()["candidates"][0]["content"]["parts"][0];
        assert!(!last["text"].as_str().unwrap().is_empty());
        assert!(last["thoughtSignature"].is_string());
        // 2.5 calls carry no id.
        let tools = json!({"contents": [{"parts": [{"text": "[tools=1]"}]}]});
        let v = ask_for(&tools, "gemini-2.5-flash", false).json();
        assert!(
            v["candidates"][0]["content"]["parts"][0]["functionCall"]
                .get("id")
                .is_none()
        );
    }
}
