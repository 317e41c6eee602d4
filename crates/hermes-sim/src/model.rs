//! The scripted reasoning model and how its reply is rendered (JSON and SSE) for a carrier.

use serde_json::{Value, json};

use crate::profile::StreamUsage;
use crate::sign;
use crate::wire::{Carrier, list_of, model_of, short_hash};

/// Fixed `created` timestamp so replies are byte-for-byte deterministic.
const CREATED: u64 = 1_767_225_600;
/// `format` of the reasoning_details items (OpenRouter, Anthropic upstream).
const RD_FORMAT: &str = "anthropic-claude-v1";
/// The tool the script prefers: called when declared (or when no tool is), else the first declared.
pub(crate) const TOOL_NAME: &str = "now";

/// What every wire's script reads: the validated request body, its bytes as sent, the model and
/// the simulator's signing key.
#[derive(Clone, Copy)]
pub(crate) struct Prompt<'a> {
    pub(crate) body: &'a Value,
    pub(crate) raw: &'a [u8],
    pub(crate) model: &'a str,
    pub(crate) key: &'a [u8],
}

/// A tool call chosen by the script.
#[derive(Clone, Debug)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    /// The called tool's name.
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// What the scripted model answers, before any profile rendering.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    pub(crate) model: String,
    pub(crate) reasoning: String,
    pub(crate) content: Option<String>,
    pub(crate) tool_call: Option<ToolCall>,
    /// Plain payload sealed into the `reasoning.encrypted` item.
    pub(crate) sealed: String,
}

impl Reply {
    fn finish_reason(&self) -> &'static str {
        if self.tool_call.is_some() {
            "tool_calls"
        } else {
            "stop"
        }
    }
}

/// Readable text of a `content` value (string or array of text parts).
pub(crate) fn text_of(content: Option<&Value>) -> String {
    text_joined(content, "")
}

/// The text of a `content` value: the string, or the `text` of its parts joined by `sep`.
pub(crate) fn text_joined(content: Option<&Value>, sep: &str) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(sep),
        _ => String::new(),
    }
}

/// The N of the first `[tools=N]` marker with N ≥ 1.
pub(crate) fn tools_wanted(text: &str) -> Option<usize> {
    marker_wanted(text, "[tools=")
}

/// The N of the first `{open}N]` marker with N ≥ 1 (`open` is e.g. `[tools=`).
pub(crate) fn marker_wanted(text: &str, open: &str) -> Option<usize> {
    let mut rest = text;
    while let Some(pos) = rest.find(open) {
        rest = &rest[pos + open.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty()
            && rest[digits.len()..].starts_with(']')
            && let Ok(n) = digits.parse::<usize>()
            && n >= 1
        {
            return Some(n);
        }
    }
    None
}

/// The first 60 chars of `text` (with `…` when cut).
pub(crate) fn snippet(text: &str) -> String {
    let t: String = text.chars().take(60).collect();
    if t.chars().count() < text.chars().count() {
        format!("{t}…")
    } else {
        t
    }
}

/// The tool call the script makes: the chosen tool's name and arguments valid for its schema.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScriptedCall {
    /// The tool's name: `now` when declared (or when no tool is), else the first declared.
    pub(crate) name: String,
    /// A minimal instance of the tool's JSON schema (an object; `{}` without a schema).
    pub(crate) input: Value,
    /// Whether the tool is the script's own `now` with a schema that declares no properties
    /// and admits others: the Messages-style scripts then fill its input with their trace.
    traced: bool,
}

impl ScriptedCall {
    /// [`ScriptedCall::input`] as JSON text.
    pub(crate) fn arguments(&self) -> String {
        self.input.to_string()
    }

    /// The input a Messages-style script (Anthropic, Bedrock Converse) sends for step `step`
    /// of `of`: its trace `{"step","of","note"}` where the schema admits it (the open `now`),
    /// else [`ScriptedCall::input`].
    pub(crate) fn traced_input(&self, step: usize, of: usize) -> Value {
        if self.traced {
            json!({"step": step, "of": of, "note": format!("call {step} of {of}: \"what time is it?\" ⏱")})
        } else {
            self.input.clone()
        }
    }
}

/// The call the script makes among the `declared` tools (each a name and its JSON schema, when
/// it has one): `now` when declared (or when none are), else the first one, with arguments
/// built from its schema by [`arguments_for`].
pub(crate) fn scripted_call(declared: &[(&str, Option<&Value>)]) -> ScriptedCall {
    let chosen = match declared.first() {
        Some(first) if !declared.iter().any(|(n, _)| *n == TOOL_NAME) => Some(*first),
        _ => declared.iter().find(|(n, _)| *n == TOOL_NAME).copied(),
    };
    let (name, schema) = chosen.unwrap_or((TOOL_NAME, None));
    let input = schema.map_or_else(|| json!({}), arguments_for);
    let open = schema.is_none_or(|s| {
        s.get("properties")
            .and_then(Value::as_object)
            .is_none_or(serde_json::Map::is_empty)
            && s.get("additionalProperties") != Some(&Value::Bool(false))
    });
    ScriptedCall {
        name: name.to_owned(),
        input,
        traced: name == TOOL_NAME && open,
    }
}

/// [`scripted_call`] among the `tools` list's entries, each named where `name` says, its schema
/// where `schema` says.
pub(crate) fn scripted_call_of<'a>(
    tools: Option<&'a Value>,
    name: impl Fn(&'a Value) -> Option<&'a Value>,
    schema: impl Fn(&'a Value) -> Option<&'a Value>,
) -> ScriptedCall {
    let declared: Vec<(&str, Option<&Value>)> = tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| name(t).and_then(Value::as_str).map(|n| (n, schema(t))))
        .collect();
    scripted_call(&declared)
}

/// Deepest schema nesting (`$ref` hops included) [`arguments_for`] follows; below it a value
/// is chosen by type alone, so a recursive schema cannot loop.
const MAX_SCHEMA_DEPTH: usize = 32;

/// Tool-call arguments (an object) valid for the JSON schema `schema`, and as small as it
/// allows: every `required` property filled, optional ones left out; a string is `"x"` (its
/// `const`, first `enum` value, a sample of its `format`, or `minLength` x's), a number its lower
/// bound or 0 (1 above an exclusive minimum of 0), a boolean `false`, an array `minItems` items,
/// an object recursed into; `anyOf` / `oneOf` take their first non-null branch, `allOf` merges
/// its branches, a local `$ref` (`#/$defs/…`, `#/definitions/…`) is followed. Types may be upper
/// case (Gemini's OpenAPI subset). A schema that yields no object gives `{}`.
pub(crate) fn arguments_for(schema: &Value) -> Value {
    match instance(schema, schema, 0) {
        v @ Value::Object(_) => v,
        _ => json!({}),
    }
}

/// The `type` of a schema: the first non-`null` one named (lower case), else guessed from the
/// keywords present.
fn type_of(o: &serde_json::Map<String, Value>) -> Option<String> {
    let named = match o.get("type") {
        Some(Value::String(t)) => Some(t.to_ascii_lowercase()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_ascii_lowercase)
            .find(|t| t != "null")
            .or_else(|| {
                ts.first()
                    .and_then(Value::as_str)
                    .map(str::to_ascii_lowercase)
            }),
        _ => None,
    };
    let has = |keys: &[&str]| keys.iter().any(|k| o.contains_key(*k));
    named.or_else(|| {
        if has(&[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
        ]) {
            Some("object".to_owned())
        } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
            Some("array".to_owned())
        } else if has(&["minLength", "maxLength", "pattern", "format"]) {
            Some("string".to_owned())
        } else if has(&[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ]) {
            Some("number".to_owned())
        } else {
            None
        }
    })
}

/// Whether a schema only admits `null`.
fn null_only(v: &Value) -> bool {
    v.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("null"))
}

/// The smallest valid instance of `schema` (`root` resolves `$ref`s).
fn instance(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(o) = schema.as_object() else {
        // `true` (anything) or an unusable schema.
        return json!("x");
    };
    let deeper = depth < MAX_SCHEMA_DEPTH;
    if deeper
        && let Some(target) = o
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
    {
        return instance(target, root, depth + 1);
    }
    if let Some(c) = o.get("const") {
        return c.clone();
    }
    if let Some(values) = o.get("enum").and_then(Value::as_array)
        && let Some(v) = values.iter().find(|v| !v.is_null()).or(values.first())
    {
        return v.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if deeper
            && let Some(branches) = o.get(key).and_then(Value::as_array)
            && let Some(b) = branches.iter().find(|b| !null_only(b)).or(branches.first())
        {
            return instance(b, root, depth + 1);
        }
    }
    if deeper && let Some(branches) = o.get("allOf").and_then(Value::as_array) {
        let mut merged: Option<Value> = None;
        for b in branches {
            match (merged.as_mut(), instance(b, root, depth + 1)) {
                (Some(Value::Object(m)), Value::Object(more)) => m.extend(more),
                (None, v) => merged = Some(v),
                _ => {}
            }
        }
        // The schema's own keywords beside `allOf` count too.
        let mut own = o.clone();
        own.remove("allOf");
        if let (Some(Value::Object(m)), Some(_)) = (merged.as_mut(), type_of(&own))
            && let Value::Object(more) = instance(&Value::Object(own), root, depth + 1)
        {
            m.extend(more);
        }
        if let Some(v) = merged {
            return v;
        }
    }
    let number = |o: &serde_json::Map<String, Value>, integer: bool| -> Value {
        let f = |k: &str| o.get(k).and_then(Value::as_f64);
        // Above an exclusive bound by one (an integer, and a number as simple).
        let step = 1.0;
        // Draft 4 writes an exclusive bound as a boolean beside `minimum` / `maximum`.
        let low = match (f("minimum"), o.get("exclusiveMinimum")) {
            (Some(m), Some(Value::Bool(true))) => Some(m + step),
            (m, Some(e)) if e.is_number() => {
                let e = e.as_f64().unwrap_or(0.0) + step;
                Some(m.map_or(e, |m| m.max(e)))
            }
            (m, _) => m,
        };
        let high = match (f("maximum"), o.get("exclusiveMaximum")) {
            (Some(m), Some(Value::Bool(true))) => Some(m - step),
            (m, Some(e)) if e.is_number() => {
                let e = e.as_f64().unwrap_or(0.0) - step;
                Some(m.map_or(e, |m| m.min(e)))
            }
            (m, _) => m,
        };
        let mut v = low.unwrap_or(0.0);
        if let Some(h) = high
            && h < v
        {
            v = h;
        }
        if integer {
            v = v.ceil();
        }
        if let Some(m) = f("multipleOf").filter(|m| *m > 0.0) {
            v = (v / m).ceil() * m;
        }
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            // Whole: written without a fraction (valid for `integer` and `number` alike).
            json!(v as i64)
        } else {
            json!(v)
        }
    };
    match type_of(o).as_deref() {
        Some("string") => {
            let sample = match o.get("format").and_then(Value::as_str) {
                Some("date-time") => "1970-01-01T00:00:00Z",
                Some("date") => "1970-01-01",
                Some("time") => "00:00:00Z",
                Some("email") => "x@example.com",
                Some("uri" | "url" | "iri") => "https://example.com/",
                Some("uuid") => "00000000-0000-0000-0000-000000000000",
                Some("ipv4") => "127.0.0.1",
                Some("ipv6") => "::1",
                _ => "x",
            };
            let len = |k: &str| {
                o.get(k)
                    .and_then(Value::as_u64)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            };
            let mut s = sample.to_owned();
            if let Some(min) = len("minLength")
                && s.chars().count() < min
            {
                s.push_str(&"x".repeat(min.min(4096) - s.chars().count()));
            }
            if let Some(max) = len("maxLength")
                && s.chars().count() > max
            {
                s = s.chars().take(max).collect();
            }
            json!(s)
        }
        Some("integer") => number(o, true),
        Some("number") => number(o, false),
        Some("boolean") => json!(false),
        Some("null") => Value::Null,
        Some("array") => {
            let n = o
                .get("minItems")
                .and_then(Value::as_u64)
                .map_or(0, |n| usize::try_from(n).unwrap_or(0).min(64));
            let item_schema = |i: usize| -> Value {
                o.get("prefixItems")
                    .and_then(Value::as_array)
                    .and_then(|p| p.get(i))
                    .or_else(|| match o.get("items") {
                        Some(Value::Array(tuple)) => tuple.get(i),
                        other => other,
                    })
                    .cloned()
                    .unwrap_or(json!({}))
            };
            let items: Vec<Value> = (0..n)
                .map(|i| {
                    if deeper {
                        instance(&item_schema(i), root, depth + 1)
                    } else {
                        json!("x")
                    }
                })
                .collect();
            json!(items)
        }
        Some("object") => {
            let mut out = serde_json::Map::new();
            let props = o.get("properties").and_then(Value::as_object);
            for name in o
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let prop = props
                    .and_then(|p| p.get(name))
                    .or_else(|| o.get("additionalProperties").filter(|a| a.is_object()));
                let v = match prop {
                    Some(p) if deeper => instance(p, root, depth + 1),
                    _ => json!("x"),
                };
                out.insert(name.to_owned(), v);
            }
            Value::Object(out)
        }
        // Any type: a short string is the safe, non-null choice.
        _ => json!("x"),
    }
}

/// The step a Messages-style script (Anthropic, Bedrock Converse) takes next.
pub(crate) enum Step {
    /// Call the tool: step `step` of `of`.
    Call { step: usize, of: usize },
    /// Answer with this text.
    Final(String),
}

/// How a Messages-style reply ends: its last block, if any, and its stop reason. Cut short by
/// `[max_tokens]` it stops at `max_tokens`, with the reasoning's first four words as text when
/// `words_shown` (thinking off); else the step's tool call (`tool_use`) or final text
/// (`end_turn`). `text` and `call` render a text block and the call of step `step` of `of` as
/// the wire writes them.
pub(crate) fn messages_ending(
    cut_short: bool,
    words_shown: bool,
    reasoning: &str,
    step: Step,
    text: impl FnOnce(String) -> Value,
    call: impl FnOnce(usize, usize) -> Value,
) -> (Option<Value>, &'static str) {
    if cut_short {
        let words: Vec<&str> = reasoning.split(' ').take(4).collect();
        return (words_shown.then(|| text(words.join(" "))), "max_tokens");
    }
    match step {
        Step::Call { step, of } => (Some(call(step, of)), "tool_use"),
        Step::Final(final_text) => (Some(text(final_text)), "end_turn"),
    }
}

/// The reasoning text and the next step of a Messages-style script: the tool calls `user_text`
/// asks for (`[tools=N]`), the tool `results` in since (`text` reads one's text), `model` for
/// the direct answer.
pub(crate) fn messages_step(
    user_text: &str,
    results: &[&Value],
    text: impl FnOnce(&Value) -> String,
    model: &str,
) -> (String, Step) {
    let done = results.len();
    let last = || results.last().map(|r| text(r)).unwrap_or_default();
    match tools_wanted(user_text) {
        Some(n) if done < n => {
            let step = done + 1;
            (
                format!(
                    "Step {step} of {n}: the user asked for {n} tool calls and {done} results are in, so I call the tool again."
                ),
                Step::Call { step, of: n },
            )
        }
        Some(n) => {
            let last = last();
            (
                format!(
                    "All {n} tool results are in; the last one says \"{}\", so I can write the final answer.",
                    snippet(&last)
                ),
                Step::Final(format!(
                    "Done after {n} tool calls. The last tool result was: {}",
                    snippet(&last)
                )),
            )
        }
        None => (
            format!(
                "The user wrote \"{}\"; no tool is needed, so I answer directly and briefly.",
                snippet(user_text)
            ),
            Step::Final(format!(
                "Hello from the scripted model {}. You said: {}",
                snippet(model),
                snippet(user_text)
            )),
        ),
    }
}

/// The turn a script answers: the text of the last message that `asks` (the user's, with text;
/// read by `text`) and the messages after it (empty text and all messages when none asks).
pub(crate) fn last_user_turn(
    messages: &[Value],
    asks: impl Fn(&Value) -> bool,
    text: impl Fn(&Value) -> String,
) -> (String, &[Value]) {
    match messages.iter().rposition(asks) {
        Some(i) => (text(&messages[i]), &messages[i + 1..]),
        None => (String::new(), messages),
    }
}

/// Runs the script over a validated request body.
pub(crate) fn script(body: &Value) -> Reply {
    let model = model_of(body).to_owned();
    let (user_text, after) = last_user_turn(
        list_of(body, "messages"),
        |m| m.get("role").and_then(Value::as_str) == Some("user"),
        |m| text_of(m.get("content")),
    );
    let results: Vec<&Value> = after
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .collect();
    let wanted = tools_wanted(&user_text);
    let seed = format!("{model}\u{0}{user_text}\u{0}{}", results.len());
    let call = scripted_call_of(
        body.get("tools"),
        |t| t.pointer("/function/name"),
        |t| t.pointer("/function/parameters"),
    );
    let tool = call.name.as_str();

    match wanted {
        Some(n) if results.len() < n => {
            let step = results.len() + 1;
            Reply {
                reasoning: format!(
                    "Step {step} of {n}: the user asked for {n} tool calls and {done} results are in, so I call `{tool}` again.",
                    done = results.len()
                ),
                content: None,
                tool_call: Some(ToolCall {
                    id: format!("call_{step}_{}", short_hash(&seed, 8)),
                    arguments: call.arguments(),
                    name: call.name.clone(),
                }),
                sealed: format!(
                    "hermes-sim sealed thinking, step {step}, {}",
                    short_hash(&seed, 16)
                ),
                model,
            }
        }
        Some(n) => {
            let last = results
                .last()
                .map(|m| text_of(m.get("content")))
                .unwrap_or_default();
            Reply {
                reasoning: format!(
                    "All {n} tool results are in; the last one says \"{}\", so I can write the final answer.",
                    snippet(&last)
                ),
                content: Some(format!(
                    "Done after {n} tool calls. The last `{tool}` result was: {}",
                    snippet(&last)
                )),
                tool_call: None,
                sealed: format!(
                    "hermes-sim sealed thinking, final, {}",
                    short_hash(&seed, 16)
                ),
                model,
            }
        }
        None => Reply {
            reasoning: format!(
                "The user wrote \"{}\"; no tool is needed, so I answer directly and briefly.",
                snippet(&user_text)
            ),
            content: Some(format!(
                "Hello from the scripted model {}. You said: {}",
                // A snippet: every streamed chunk repeats the whole id, so echoing it whole
                // would make the stream grow with the square of its length.
                snippet(&model),
                snippet(&user_text)
            )),
            tool_call: None,
            sealed: format!(
                "hermes-sim sealed thinking, text, {}",
                short_hash(&seed, 16)
            ),
            model,
        },
    }
}

/// Gemini's `thought_signature` for a reply (sealed, bound to the model).
fn gemini_signature(reply: &Reply, key: &[u8]) -> String {
    let payload = format!("gemini thought signature\u{0}{}", reply.sealed);
    sign::seal_data(key, &reply.model, payload.as_bytes())
}

/// Copilot's `reasoning_opaque` for a reply (sealed, bound to the model).
fn copilot_opaque(reply: &Reply, key: &[u8]) -> String {
    let payload = format!("copilot reasoning_opaque\u{0}{}", reply.sealed);
    sign::seal_data(key, &reply.model, payload.as_bytes())
}

/// Copilot's `function.thought_signature` for a reply's tool call (sealed, bound to the model).
fn copilot_tool_signature(reply: &Reply, key: &[u8]) -> String {
    let payload = format!("copilot function.thought_signature\u{0}{}", reply.sealed);
    sign::seal_data(key, &reply.model, payload.as_bytes())
}

/// `{"google":{"thought_signature":SIG}}`.
fn google_extra(sig: String) -> Value {
    json!({"google": {"thought_signature": sig}})
}

/// The first (or only) tool-call object, `arguments` given, with the carrier's signature.
fn tool_call_json(
    carrier: Carrier,
    reply: &Reply,
    call: &ToolCall,
    arguments: &str,
    key: &[u8],
) -> Value {
    let mut tc = json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments}
    });
    match carrier {
        Carrier::Gemini => tc["extra_content"] = google_extra(gemini_signature(reply, key)),
        Carrier::Copilot { tool_sig: true } => {
            tc["function"]["thought_signature"] = json!(copilot_tool_signature(reply, key));
        }
        _ => {}
    }
    tc
}

/// The two signed `reasoning_details` items of a reply.
fn details(reply: &Reply, key: &[u8]) -> (Value, Value) {
    let text_item = json!({
        "type": "reasoning.text",
        "text": reply.reasoning,
        "signature": sign::sign_text(key, &reply.model, &reply.reasoning),
        "format": RD_FORMAT,
        "index": 0
    });
    let enc_item = json!({
        "type": "reasoning.encrypted",
        "data": sign::seal_data(key, &reply.model, reply.sealed.as_bytes()),
        "format": RD_FORMAT,
        "index": 1
    });
    (text_item, enc_item)
}

fn usage(reply: &Reply, raw_len: usize, with_reasoning: bool) -> Value {
    let prompt = raw_len.div_ceil(4);
    let reasoning = if with_reasoning {
        reply.reasoning.len().div_ceil(4)
    } else {
        0
    };
    let content = reply.content.as_deref().map_or(0, str::len).div_ceil(4)
        + reply
            .tool_call
            .as_ref()
            .map_or(0, |c| 4 + c.arguments.len());
    let completion = reasoning + content + 1;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning}
    })
}

fn completion_id(raw: &[u8]) -> String {
    format!(
        "chatcmpl-sim-{}",
        short_hash(&String::from_utf8_lossy(raw), 20)
    )
}

/// The non-streamed `chat.completion` object.
pub(crate) fn completion(carrier: Carrier, raw: &[u8], reply: &Reply, key: &[u8]) -> Value {
    let mut msg = serde_json::Map::new();
    msg.insert("role".into(), json!("assistant"));
    msg.insert("content".into(), json!(reply.content));
    match carrier {
        Carrier::None => {}
        Carrier::ReasoningContent => {
            msg.insert("reasoning_content".into(), json!(reply.reasoning));
        }
        Carrier::OpenRouter => {
            let (t, e) = details(reply, key);
            msg.insert("reasoning".into(), json!(reply.reasoning));
            msg.insert("reasoning_details".into(), json!([t, e]));
        }
        Carrier::Gemini => {
            if reply.tool_call.is_none() {
                msg.insert(
                    "extra_content".into(),
                    google_extra(gemini_signature(reply, key)),
                );
            }
        }
        Carrier::Copilot { .. } => {
            msg.insert("reasoning_text".into(), json!(reply.reasoning));
            msg.insert("reasoning_opaque".into(), json!(copilot_opaque(reply, key)));
        }
    }
    if let Some(call) = &reply.tool_call {
        msg.insert(
            "tool_calls".into(),
            json!([tool_call_json(carrier, reply, call, &call.arguments, key)]),
        );
    }
    json!({
        "id": completion_id(raw),
        "object": "chat.completion",
        "created": CREATED,
        "model": reply.model,
        "choices": [{
            "index": 0,
            "message": Value::Object(msg),
            "finish_reason": reply.finish_reason()
        }],
        "usage": usage(reply, raw.len(), carrier != Carrier::None)
    })
}

/// Most pieces a streamed field is split into: every piece is a chunk that repeats the id and
/// the model id, so the count must not grow with the text.
const MAX_PIECES: usize = 32;

/// Splits `s` into at least three (at most [`MAX_PIECES`]) pieces on char boundaries (empty
/// leading pieces when `s` is shorter than three chars, as OpenAI's first tool-call delta
/// carries `"arguments": ""`).
pub(crate) fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    if n < 3 {
        let mut out = vec![String::new(); 3 - n];
        out.extend(chars.iter().map(char::to_string));
        return out;
    }
    let k = n.div_ceil(10).clamp(3, MAX_PIECES);
    (0..k)
        .map(|i| chars[i * n / k..(i + 1) * n / k].iter().collect())
        .collect()
}

/// Splits `s` on char boundaries into pieces of the char counts `sizes`, cycled (uneven, so
/// cuts land anywhere); none for an empty `s`.
pub(crate) fn ragged(s: &str, sizes: &[usize]) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    for n in sizes.iter().cycle() {
        if at >= chars.len() {
            break;
        }
        let end = (at + n).min(chars.len());
        out.push(chars[at..end].iter().collect());
        at = end;
    }
    out
}

/// The deltas of a streamed reply, in order (without the final finish chunk).
fn deltas(carrier: Carrier, reply: &Reply, key: &[u8]) -> Vec<Value> {
    let mut out = vec![json!({"role": "assistant"})];
    match carrier {
        Carrier::None => {}
        Carrier::ReasoningContent => {
            out.extend(
                pieces(&reply.reasoning)
                    .into_iter()
                    .map(|p| json!({"reasoning_content": p})),
            );
        }
        Carrier::OpenRouter => {
            let (t, e) = details(reply, key);
            for p in pieces(&reply.reasoning) {
                out.push(json!({
                    "reasoning": p,
                    "reasoning_details": [{
                        "type": "reasoning.text",
                        "text": p,
                        "format": RD_FORMAT,
                        "index": 0
                    }]
                }));
            }
            out.push(json!({
                "reasoning_details": [{
                    "type": "reasoning.text",
                    "signature": t["signature"],
                    "format": RD_FORMAT,
                    "index": 0
                }]
            }));
            out.push(json!({"reasoning_details": [e]}));
        }
        Carrier::Gemini => {}
        Carrier::Copilot { .. } => {
            out.extend(
                pieces(&reply.reasoning)
                    .into_iter()
                    .map(|p| json!({"reasoning_text": p})),
            );
        }
    }
    if let Some(content) = &reply.content {
        for (i, p) in pieces(content).into_iter().enumerate() {
            let mut d = json!({"content": p});
            // Gemini: the text-turn signature rides on the first content delta.
            if i == 0 && carrier == Carrier::Gemini && reply.tool_call.is_none() {
                d["extra_content"] = google_extra(gemini_signature(reply, key));
            }
            out.push(d);
        }
    }
    if let Some(call) = &reply.tool_call {
        for (i, p) in pieces(&call.arguments).into_iter().enumerate() {
            let tc = if i == 0 {
                let mut tc = tool_call_json(carrier, reply, call, &p, key);
                if let Some(o) = tc.as_object_mut() {
                    o.shift_insert(0, "index".into(), json!(0));
                }
                tc
            } else {
                json!({"index": 0, "function": {"arguments": p}})
            };
            out.push(json!({"tool_calls": [tc]}));
        }
    }
    if let Carrier::Copilot { .. } = carrier {
        // Copilot: the latest non-empty opaque wins; it is sent once, late.
        out.push(json!({"reasoning_opaque": copilot_opaque(reply, key)}));
    }
    out
}

/// The full SSE text of a streamed reply, its usage where `usage` says; with
/// `fail_mid_stream`, a few deltas then an error event.
pub(crate) fn sse(
    carrier: Carrier,
    raw: &[u8],
    reply: &Reply,
    key: &[u8],
    usage_at: StreamUsage,
    fail_mid_stream: bool,
) -> String {
    let id = completion_id(raw);
    let chunk = |choice: Value| {
        json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": reply.model,
            "choices": [choice]
        })
    };
    let mut out = String::new();
    let mut push = |v: &Value| {
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\n\n");
    };
    let all = deltas(carrier, reply, key);
    let limit = if fail_mid_stream { 3 } else { all.len() };
    for d in all.into_iter().take(limit) {
        push(&chunk(
            json!({"index": 0, "delta": d, "finish_reason": null}),
        ));
    }
    if fail_mid_stream {
        push(&json!({"error": {
            "message": "Upstream connection lost mid-stream (hermes-sim fail_mid_stream)",
            "code": 502
        }}));
        return out;
    }
    let mut last = chunk(json!({
        "index": 0,
        "delta": {},
        "finish_reason": reply.finish_reason()
    }));
    let counts = usage(reply, raw.len(), carrier != Carrier::None);
    match usage_at {
        StreamUsage::OnLastChoice => {
            last["usage"] = counts;
            push(&last);
        }
        StreamUsage::OwnChunk => {
            push(&last);
            let mut own = chunk(Value::Null);
            own["choices"] = json!([]);
            own["usage"] = counts;
            push(&own);
        }
        StreamUsage::Omitted => push(&last),
    }
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wires_ragged_tool_input_pieces_cover_the_text() {
        type Cut = fn(&str) -> Vec<String>;
        // Anthropic's first `input_json_delta` carries `""`; Bedrock sends at least one piece.
        let rows = [
            ("anthropic", crate::anthropic::reply::ragged as Cut, 4, true),
            #[cfg(feature = "bedrock")]
            ("bedrock", crate::bedrock::reply::ragged, 2, false),
        ];
        let s = r#"{"step":1,"note":"ünï ⏱"}"#;
        for (wire, cut, more_than, leading_empty) in rows {
            let p = cut(s);
            if leading_empty {
                assert_eq!(p[0], "", "{wire}");
            }
            assert!(p.len() > more_than, "{wire}: {p:?}");
            assert_eq!(p.concat(), s, "{wire}");
            assert_eq!(cut(""), vec![String::new()], "{wire}");
        }
    }

    /// Each row: a tool's JSON schema and the minimal arguments the script sends for it.
    #[test]
    fn arguments_for_builds_a_minimal_valid_instance_of_the_schema() {
        let rows: &[(&str, Value, Value)] = &[
            (
                "Claude Code's Read",
                json!({"type": "object", "properties": {"file_path": {"type": "string"},
                    "offset": {"type": "integer"}}, "required": ["file_path"],
                    "additionalProperties": false}),
                json!({"file_path": "x"}),
            ),
            (
                "no parameters",
                json!({"type": "object", "properties": {}}),
                json!({}),
            ),
            ("an empty schema", json!({}), json!({})),
            ("not an object schema", json!({"type": "string"}), json!({})),
            (
                "enum, const, minLength, format",
                json!({"type": "object", "required": ["unit", "kind", "code", "at", "plain"],
                    "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "kind": {"const": "fixed"}, "code": {"type": "string", "minLength": 3},
                    "at": {"type": "string", "format": "date-time"},
                    "plain": {"type": "string", "maxLength": 0}}}),
                json!({"unit": "celsius", "kind": "fixed", "code": "xxx",
                    "at": "1970-01-01T00:00:00Z", "plain": ""}),
            ),
            (
                "numbers, booleans, bounds",
                json!({"type": "object", "required": ["n", "m", "limit", "neg", "ratio", "flag", "step"],
                    "properties": {"n": {"type": "integer"}, "m": {"type": "integer", "minimum": 3},
                    "limit": {"type": "integer", "exclusiveMinimum": 0},
                    "neg": {"type": "integer", "maximum": -2}, "ratio": {"type": "number", "minimum": 0.5},
                    "flag": {"type": "boolean"}, "step": {"type": "integer", "minimum": 1, "multipleOf": 5}}}),
                json!({"n": 0, "m": 3, "limit": 1, "neg": -2, "ratio": 0.5, "flag": false, "step": 5}),
            ),
            (
                "arrays",
                json!({"type": "object", "required": ["tags", "pair", "tuple"],
                    "properties": {"tags": {"type": "array", "items": {"type": "string"}},
                    "pair": {"type": "array", "minItems": 2, "items": {"type": "integer", "minimum": 7}},
                    "tuple": {"type": "array", "minItems": 2,
                        "prefixItems": [{"type": "boolean"}, {"type": "string"}]}}}),
                json!({"tags": [], "pair": [7, 7], "tuple": [false, "x"]}),
            ),
            (
                "nested object, only its required keys",
                json!({"type": "object", "required": ["where"], "properties": {"where": {
                    "type": "object", "required": ["city", "geo"], "properties": {
                        "city": {"type": "string"}, "zip": {"type": "string"},
                        "geo": {"type": "object", "required": ["lat"], "properties": {
                            "lat": {"type": "number"}}}}}}}),
                json!({"where": {"city": "x", "geo": {"lat": 0}}}),
            ),
            (
                "$ref to $defs and definitions",
                json!({"type": "object", "required": ["a", "b"], "properties": {
                    "a": {"$ref": "#/$defs/Mode"}, "b": {"$ref": "#/definitions/Point"}},
                    "$defs": {"Mode": {"type": "string", "enum": ["fast", "slow"]}},
                    "definitions": {"Point": {"type": "object", "required": ["x"],
                        "properties": {"x": {"type": "integer", "minimum": 2}}}}}),
                json!({"a": "fast", "b": {"x": 2}}),
            ),
            (
                "anyOf and oneOf: the first non-null branch; nullable type lists",
                json!({"type": "object", "required": ["q", "r", "s"], "properties": {
                    "q": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
                    "r": {"oneOf": [{"type": "boolean"}, {"type": "string"}]},
                    "s": {"type": ["null", "string"]}}}),
                json!({"q": 0, "r": false, "s": "x"}),
            ),
            (
                "allOf merges",
                json!({"allOf": [
                    {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
                    {"type": "object", "required": ["b"], "properties": {"b": {"type": "boolean"}}}]}),
                json!({"a": "x", "b": false}),
            ),
            (
                "Gemini's upper-case OpenAPI types",
                json!({"type": "OBJECT", "required": ["city", "days"], "properties": {
                    "city": {"type": "STRING"}, "days": {"type": "INTEGER"}}}),
                json!({"city": "x", "days": 0}),
            ),
            (
                "an untyped required property and one missing from properties",
                json!({"type": "object", "required": ["args", "ghost"],
                    "properties": {"args": {"description": "anything"}}}),
                json!({"args": "x", "ghost": "x"}),
            ),
            (
                "a recursive $ref ends",
                json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object",
                    "required": ["next"], "properties": {"next": {"$ref": "#/$defs/Node"}}}}}),
                Value::Null,
            ),
        ];
        for (case, schema, want) in rows {
            let got = arguments_for(schema);
            assert!(got.is_object(), "{case}: {got}");
            if want.is_null() {
                // Depth-capped: an object whose innermost `next` is a plain value.
                let text = got.to_string();
                assert!(text.starts_with(r#"{"next":{"next":"#), "{case}: {text}");
                continue;
            }
            assert_eq!(&got, want, "{case}");
        }
    }

    #[test]
    fn scripted_call_prefers_now_and_traces_only_an_open_now() {
        let read = json!({"type": "object", "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"], "additionalProperties": false});
        let open = json!({"type": "object", "properties": {}});
        let call = scripted_call(&[("Read", Some(&read)), ("Write", None)]);
        assert_eq!(call.name, "Read");
        assert_eq!(call.arguments(), r#"{"file_path":"x"}"#);
        assert_eq!(call.traced_input(1, 2), json!({"file_path": "x"}));
        let call = scripted_call(&[("Read", Some(&read)), ("now", Some(&open))]);
        assert_eq!(call.name, "now");
        assert_eq!(call.arguments(), "{}");
        assert_eq!(call.traced_input(2, 3)["step"], 2);
        let none = scripted_call(&[]);
        assert_eq!(
            (none.name.as_str(), none.arguments()),
            ("now", "{}".to_owned())
        );
        // A closed `now` gets its schema's instance only.
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert_eq!(
            scripted_call(&[("now", Some(&closed))]).traced_input(1, 1),
            json!({})
        );
    }

    #[test]
    fn tools_marker() {
        assert_eq!(tools_wanted("please [tools=3] now"), Some(3));
        assert_eq!(tools_wanted("[tools=0]"), None);
        assert_eq!(tools_wanted("[tools=x] [tools=2]"), Some(2));
        assert_eq!(tools_wanted("[tools=2"), None);
        assert_eq!(tools_wanted("nothing"), None);
        assert_eq!(
            marker_wanted("[tools=2] [parallel=3]", "[parallel="),
            Some(3)
        );
    }

    #[test]
    fn pieces_cover_and_split() {
        for s in [
            "",
            "{}",
            "abc",
            "a much longer string with ünïcödé in it, over thirty chars",
        ] {
            let p = pieces(s);
            assert!(p.len() >= 3);
            assert_eq!(p.concat(), s);
        }
        assert_eq!(pieces("{}"), vec!["", "{", "}"]);
        let long = "x".repeat(5_000);
        assert_eq!(pieces(&long).len(), MAX_PIECES);
        assert_eq!(pieces(&long).concat(), long);
    }
}
