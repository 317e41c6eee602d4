//! The strict request schema of the `openai-responses` profile: every key outside
//! [`TOP_LEVEL`] and the item shapes is refused with OpenAI's 400
//! `{"error":{"message":"Unknown parameter: 'X'.","type":"invalid_request_error","param":"X","code":"unknown_parameter"}}`
//! (exact form seen in ding113/claude-code-hub#1387, decolua/9router#2497, 1jehuang/jcode#1028).
//! Missing fields, wrong types and wrong values use OpenAI's `Missing required parameter: 'X'.`,
//! `Invalid type for 'X': …` and `Invalid value: '…'. Supported values are: …` forms (the
//! lists of supported values are the simulator's).

use serde_json::{Map, Value};

use super::Fault;

/// The top-level keys the profile accepts.
pub const TOP_LEVEL: [&str; 19] = [
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "reasoning",
    "store",
    "include",
    "stream",
    "max_output_tokens",
    "parallel_tool_calls",
    "text",
    "metadata",
    "previous_response_id",
    "truncation",
    "user",
    "service_tier",
    "prompt_cache_key",
    "context_management",
];

/// The top-level keys of `POST /responses/compact` the profile models (openai-python 3.57.0
/// `types/responses/response_compact_params.py` has these and `image`, `prompt_cache_options`,
/// `prompt_cache_retention`, `service_tier`; developers.openai.com/api/reference "Compact a
/// response").
pub(crate) const COMPACT_TOP_LEVEL: [&str; 5] = [
    "model",
    "input",
    "instructions",
    "previous_response_id",
    "prompt_cache_key",
];

/// `include` values the profile knows.
const INCLUDE: [&str; 4] = [
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "file_search_call.results",
    "web_search_call.action.sources",
];

/// `Unknown parameter: 'X'.`
pub(crate) fn unknown(path: &str) -> Fault {
    Fault::bad(
        format!("Unknown parameter: '{path}'."),
        Some(path),
        Some("unknown_parameter"),
    )
}

fn missing(path: &str) -> Fault {
    Fault::bad(
        format!("Missing required parameter: '{path}'."),
        Some(path),
        Some("missing_required_parameter"),
    )
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a decimal",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(path: &str, expected: &str, got: &Value) -> Fault {
    Fault::bad(
        format!(
            "Invalid type for '{path}': expected {expected}, but got {} instead.",
            kind(got)
        ),
        Some(path),
        Some("invalid_type"),
    )
}

fn wrong_value(path: &str, got: &str, supported: &[&str]) -> Fault {
    let list: Vec<String> = supported.iter().map(|s| format!("'{s}'")).collect();
    let list = match list.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}, and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    };
    Fault::bad(
        format!("Invalid value: '{got}'. Supported values are: {list}."),
        Some(path),
        Some("invalid_value"),
    )
}

/// The first key of `o` outside `allowed`, as an unknown parameter under `path`.
fn only(o: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), Fault> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) if path.is_empty() => Err(unknown(k)),
        Some(k) => Err(unknown(&format!("{path}.{k}"))),
        None => Ok(()),
    }
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Fault> {
    v.as_object()
        .ok_or_else(|| wrong_type(path, "an object", v))
}

/// A required string field.
fn string<'a>(o: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a str, Fault> {
    let p = format!("{path}.{key}");
    match o.get(key) {
        None => Err(missing(&p)),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(wrong_type(&p, "a string", v)),
    }
}

/// An optional field of one JSON kind.
fn optional(
    o: &Map<String, Value>,
    path: &str,
    key: &str,
    expected: &str,
    ok: fn(&Value) -> bool,
) -> Result<(), Fault> {
    match o.get(key) {
        Some(v) if !v.is_null() && !ok(v) => {
            let p = if path.is_empty() {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            };
            Err(wrong_type(&p, expected, v))
        }
        _ => Ok(()),
    }
}

/// An optional `id` that must start with `prefix` (OpenAI:
/// `Invalid 'input[N].id': 'X'. Expected an ID that begins with 'fc'.`).
fn id_prefix(o: &Map<String, Value>, path: &str, prefix: &str) -> Result<(), Fault> {
    optional(o, path, "id", "a string", Value::is_string)?;
    match o.get("id").and_then(Value::as_str) {
        Some(id) if !id.starts_with(&format!("{prefix}_")) => {
            let p = format!("{path}.id");
            Err(Fault::bad(
                format!("Invalid '{p}': '{id}'. Expected an ID that begins with '{prefix}'."),
                Some(&p),
                Some("invalid_value"),
            ))
        }
        _ => Ok(()),
    }
}

/// The required `model`: a string.
fn model(o: &Map<String, Value>) -> Result<(), Fault> {
    match o.get("model") {
        None | Some(Value::Null) => Err(missing("model")),
        Some(Value::String(_)) => Ok(()),
        Some(v) => Err(wrong_type("model", "a string", v)),
    }
}

/// Validates a `POST /responses/compact` body; `Err` is the first violation.
pub(crate) fn validate_compact(body: &Value) -> Result<(), Fault> {
    let o = object(body, "body")?;
    only(o, "", &COMPACT_TOP_LEVEL)?;
    model(o)?;
    for key in ["instructions", "previous_response_id", "prompt_cache_key"] {
        optional(o, "", key, "a string", Value::is_string)?;
    }
    input(o)
}

/// The `compact_threshold` of a `context_management` entry of type `compaction` (developers.
/// openai.com/api/docs/guides/compaction: `context_management=[{"type": "compaction",
/// "compact_threshold": 200000}]`), validated; `None` when none is asked for.
pub(crate) fn compact_threshold(body: &Value) -> Result<Option<u64>, Fault> {
    let Some(o) = body.as_object() else {
        return Ok(None);
    };
    let mut threshold = None;
    for (p, entry) in list(o, "context_management")? {
        let e = object(entry, &p)?;
        only(e, &p, &["type", "compact_threshold"])?;
        match string(e, &p, "type")? {
            "compaction" => {}
            other => return Err(wrong_value(&format!("{p}.type"), other, &["compaction"])),
        }
        optional(e, &p, "compact_threshold", "an integer", |v| v.is_u64())?;
        threshold = e
            .get("compact_threshold")
            .and_then(Value::as_u64)
            .or(threshold);
    }
    Ok(threshold)
}

/// Validates a request body; `Err` is the first violation.
pub(crate) fn validate(body: &Value) -> Result<(), Fault> {
    let o = object(body, "body")?;
    only(o, "", &TOP_LEVEL)?;
    compact_threshold(body)?;
    model(o)?;
    for key in ["store", "stream", "parallel_tool_calls"] {
        optional(o, "", key, "a boolean", Value::is_boolean)?;
    }
    for key in [
        "instructions",
        "previous_response_id",
        "user",
        "service_tier",
        "prompt_cache_key",
        "truncation",
    ] {
        optional(o, "", key, "a string", Value::is_string)?;
    }
    optional(o, "", "max_output_tokens", "an integer", |v| v.is_u64())?;
    optional(o, "", "metadata", "an object", Value::is_object)?;
    if let Some(r) = o.get("reasoning").filter(|v| !v.is_null()) {
        let r = object(r, "reasoning")?;
        only(r, "reasoning", &["effort", "summary"])?;
        let effort = ["none", "minimal", "low", "medium", "high", "xhigh"];
        let summary = ["auto", "concise", "detailed"];
        for (key, allowed) in [("effort", &effort[..]), ("summary", &summary[..])] {
            match r.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if allowed.contains(&s.as_str()) => {}
                Some(Value::String(s)) => {
                    return Err(wrong_value(&format!("reasoning.{key}"), s, allowed));
                }
                Some(v) => return Err(wrong_type(&format!("reasoning.{key}"), "a string", v)),
            }
        }
    }
    for (p, v) in list(o, "include")? {
        match v.as_str() {
            Some(s) if INCLUDE.contains(&s) => {}
            Some(s) => return Err(wrong_value(&p, s, &INCLUDE)),
            None => return Err(wrong_type(&p, "a string", v)),
        }
    }
    if let Some(t) = o.get("text").filter(|v| !v.is_null()) {
        only(object(t, "text")?, "text", &["format", "verbosity"])?;
    }
    for (p, t) in list(o, "tools")? {
        let t = object(t, &p)?;
        match t.get("type").and_then(Value::as_str) {
            Some("function") => {
                only(
                    t,
                    &p,
                    &["type", "name", "description", "parameters", "strict"],
                )?;
                string(t, &p, "name")?;
            }
            // OpenAI runs these itself; their own keys are not checked here.
            Some(builtin) if BUILTIN_TOOLS.contains(&builtin) => {}
            Some(other) => {
                let mut known = vec!["function"];
                known.extend(BUILTIN_TOOLS);
                return Err(wrong_value(&format!("{p}.type"), other, &known));
            }
            None => return Err(missing(&format!("{p}.type"))),
        }
    }
    input(o)
}

/// The built-in tool types the Responses API runs itself (openai-python 3.57's `ToolParam`, less
/// `function`; `namespace` groups function tools).
const BUILTIN_TOOLS: [&str; 16] = [
    "file_search",
    "computer",
    "computer_use_preview",
    "web_search",
    "web_search_2025_08_26",
    "mcp",
    "code_interpreter",
    "programmatic_tool_calling",
    "image_generation",
    "local_shell",
    "shell",
    "custom",
    "namespace",
    "tool_search",
    "web_search_preview",
    "apply_patch",
];

/// The `input`: a string or a list of items.
fn input(o: &Map<String, Value>) -> Result<(), Fault> {
    match o.get("input") {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, it)| item(it, &format!("input[{i}]"))),
        Some(v) => Err(wrong_type("input", "one of a string or array", v)),
    }
}

/// The items of the list `o[key]` (none when absent or null) with their paths (`key[i]`).
fn list<'a>(o: &'a Map<String, Value>, key: &str) -> Result<Vec<(String, &'a Value)>, Fault> {
    let Some(v) = o.get(key).filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items = v.as_array().ok_or_else(|| wrong_type(key, "an array", v))?;
    Ok(items
        .iter()
        .enumerate()
        .map(|(i, it)| (format!("{key}[{i}]"), it))
        .collect())
}

/// One input item.
fn item(v: &Value, path: &str) -> Result<(), Fault> {
    let o = object(v, path)?;
    let kind = match o.get("type") {
        None if o.contains_key("role") => "message",
        None => return Err(missing(&format!("{path}.role"))),
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(wrong_type(&format!("{path}.type"), "a string", v)),
    };
    match kind {
        "message" => message(o, path),
        "function_call" => {
            only(
                o,
                path,
                &["type", "call_id", "name", "arguments", "id", "status"],
            )?;
            id_prefix(o, path, "fc")?;
            for key in ["call_id", "name", "arguments"] {
                string(o, path, key)?;
            }
            optional(o, path, "status", "a string", Value::is_string)
        }
        "function_call_output" => {
            only(o, path, &["type", "call_id", "output", "id"])?;
            string(o, path, "call_id")?;
            optional(o, path, "id", "a string", Value::is_string)?;
            match o.get("output") {
                None => Err(missing(&format!("{path}.output"))),
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(parts)) => parts.iter().enumerate().try_for_each(|(j, part)| {
                    content_part(
                        part,
                        &format!("{path}.output[{j}]"),
                        &["input_text", "input_image", "input_file"],
                    )
                }),
                Some(v) => Err(wrong_type(
                    &format!("{path}.output"),
                    "one of a string or array",
                    v,
                )),
            }
        }
        "reasoning" => {
            only(
                o,
                path,
                &[
                    "type",
                    "id",
                    "summary",
                    "encrypted_content",
                    "content",
                    "status",
                ],
            )?;
            string(o, path, "id")?;
            id_prefix(o, path, "rs")?;
            optional(o, path, "encrypted_content", "a string", Value::is_string)?;
            optional(o, path, "content", "an array", Value::is_array)?;
            optional(o, path, "status", "a string", Value::is_string)?;
            let sp = format!("{path}.summary");
            let summary = match o.get("summary") {
                None => return Err(missing(&sp)),
                Some(Value::Array(s)) => s,
                Some(v) => return Err(wrong_type(&sp, "an array", v)),
            };
            for (j, s) in summary.iter().enumerate() {
                let p = format!("{sp}[{j}]");
                let s = object(s, &p)?;
                only(s, &p, &["type", "text"])?;
                let t = string(s, &p, "type")?;
                if t != "summary_text" {
                    return Err(wrong_value(&format!("{p}.type"), t, &["summary_text"]));
                }
                string(s, &p, "text")?;
            }
            Ok(())
        }
        // A compaction item as `/responses/compact` and server-side compaction return it
        // (openai-python 3.57.0 `types/responses/response_compaction_item_param.py`: `type`,
        // `encrypted_content`, optional `id`; `created_by` on output items,
        // `response_compaction_item.py`).
        "compaction" => {
            only(o, path, &["type", "id", "encrypted_content", "created_by"])?;
            string(o, path, "encrypted_content")?;
            optional(o, path, "created_by", "a string", Value::is_string)?;
            optional(o, path, "id", "a string", Value::is_string)
        }
        // openai-python 3.57.0 `types/responses/response_configuration_update_item_param.py`.
        "configuration_update" => {
            only(o, path, &["type", "id", "reasoning", "text"])?;
            optional(o, path, "id", "a string", Value::is_string)?;
            optional(o, path, "reasoning", "an object", Value::is_object)?;
            optional(o, path, "text", "an object", Value::is_object)
        }
        other => Err(wrong_value(
            &format!("{path}.type"),
            other,
            &[
                "message",
                "function_call",
                "function_call_output",
                "reasoning",
                "compaction",
                "configuration_update",
            ],
        )),
    }
}

/// A message item: `role`, `content` (string or text parts), optional `type`, `id`, `status`.
fn message(o: &Map<String, Value>, path: &str) -> Result<(), Fault> {
    only(o, path, &["type", "role", "content", "id", "status"])?;
    let role = string(o, path, "role")?;
    let roles = ["user", "assistant", "system", "developer"];
    if !roles.contains(&role) {
        return Err(wrong_value(&format!("{path}.role"), role, &roles));
    }
    id_prefix(o, path, "msg")?;
    optional(o, path, "status", "a string", Value::is_string)?;
    let cp = format!("{path}.content");
    let parts = match o.get("content") {
        None => return Err(missing(&cp)),
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) => parts,
        Some(v) => return Err(wrong_type(&cp, "one of a string or array", v)),
    };
    for (j, part) in parts.iter().enumerate() {
        content_part(
            part,
            &format!("{cp}[{j}]"),
            &["input_text", "output_text", "input_image"],
        )?;
    }
    Ok(())
}

/// `detail` values of an image part.
const DETAILS: [&str; 4] = ["low", "high", "auto", "original"];

/// One content part (of a message, or of a `function_call_output`'s output list) whose `type`
/// is one of `kinds`: text parts `{type, text, annotations?}`, an `input_image` with an
/// `image_url` or a `file_id` and an optional `detail`, an `input_file`.
fn content_part(v: &Value, p: &str, kinds: &[&str]) -> Result<(), Fault> {
    let part = object(v, p)?;
    let t = match part.get("type") {
        None => return Err(missing(&format!("{p}.type"))),
        Some(Value::String(t)) => t.as_str(),
        Some(v) => return Err(wrong_type(&format!("{p}.type"), "a string", v)),
    };
    if !kinds.contains(&t) {
        return Err(wrong_value(&format!("{p}.type"), t, kinds));
    }
    match t {
        "input_image" => {
            only(part, p, &["type", "image_url", "file_id", "detail"])?;
            optional(part, p, "image_url", "a string", Value::is_string)?;
            optional(part, p, "file_id", "a string", Value::is_string)?;
            if !part.contains_key("image_url") && !part.contains_key("file_id") {
                return Err(missing(&format!("{p}.image_url")));
            }
            match part.get("detail") {
                None | Some(Value::Null) => Ok(()),
                Some(Value::String(d)) if DETAILS.contains(&d.as_str()) => Ok(()),
                Some(Value::String(d)) => Err(wrong_value(&format!("{p}.detail"), d, &DETAILS)),
                Some(v) => Err(wrong_type(&format!("{p}.detail"), "a string", v)),
            }
        }
        "input_file" => only(
            part,
            p,
            &["type", "file_id", "file_data", "file_url", "filename"],
        ),
        _ => {
            only(part, p, &["type", "text", "annotations"])?;
            string(part, p, "text")?;
            optional(part, p, "annotations", "an array", Value::is_array)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(body: Value) -> String {
        validate(&body).unwrap_err().message
    }

    #[test]
    fn unknown_keys_are_named_by_path() {
        assert_eq!(
            err(json!({"model": "m", "temperature": 1})),
            "Unknown parameter: 'temperature'."
        );
        assert_eq!(
            err(
                json!({"model": "m", "input": [{"role": "user", "content": "hi"},
                {"type": "reasoning", "id": "rs_1", "summary": [], "foo": 1}]})
            ),
            "Unknown parameter: 'input[1].foo'."
        );
        assert_eq!(
            err(json!({"model": "m", "reasoning": {"effort": "high", "x": 1}})),
            "Unknown parameter: 'reasoning.x'."
        );
        assert_eq!(
            err(json!({"model": "m", "input": [{"role": "user",
                "content": [{"type": "input_text", "text": "a", "b": 1}]}]})),
            "Unknown parameter: 'input[0].content[0].b'."
        );
        assert!(validate(&json!({"model": "m", "input": "hi", "store": false})).is_ok());
    }

    #[test]
    fn image_parts_in_user_messages_and_function_outputs() {
        let image = json!({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"});
        let body = |content: Value, output: Value| {
            json!({"model": "m", "input": [
                {"role": "user", "content": content},
                {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": output},
            ]})
        };
        let text = json!({"type": "input_text", "text": "x"});
        assert!(validate(&body(json!([text, image]), json!([text, image]))).is_ok());
        assert_eq!(
            err(body(
                json!([{"type": "image_url", "image_url": {"url": "u"}}]),
                json!("x")
            )),
            "Invalid value: 'image_url'. Supported values are: 'input_text', 'output_text', and 'input_image'."
        );
        assert_eq!(
            err(body(
                json!([text]),
                json!([{"type": "input_image", "image_url": "u", "detail": "huge"}])
            )),
            "Invalid value: 'huge'. Supported values are: 'low', 'high', 'auto', and 'original'."
        );
        assert_eq!(
            err(body(
                json!([{"type": "input_image", "detail": "auto"}]),
                json!("x")
            )),
            "Missing required parameter: 'input[0].content[0].image_url'."
        );
        assert_eq!(
            err(body(
                json!([{"type": "input_image", "image_url": "u", "url": "u"}]),
                json!("x")
            )),
            "Unknown parameter: 'input[0].content[0].url'."
        );
    }

    #[test]
    fn shapes_and_values() {
        assert_eq!(
            err(json!({"input": "x"})),
            "Missing required parameter: 'model'."
        );
        assert_eq!(
            err(
                json!({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "n"}]})
            ),
            "Missing required parameter: 'input[0].arguments'."
        );
        assert_eq!(
            err(
                json!({"model": "m", "input": [{"type": "function_call", "id": "call_1",
                "call_id": "c", "name": "n", "arguments": "{}"}]})
            ),
            "Invalid 'input[0].id': 'call_1'. Expected an ID that begins with 'fc'."
        );
        assert_eq!(
            err(json!({"model": "m", "reasoning": {"effort": "max"}})),
            "Invalid value: 'max'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'."
        );
        assert_eq!(
            err(json!({"model": "m", "stream": "yes"})),
            "Invalid type for 'stream': expected a boolean, but got a string instead."
        );
    }
}
