//! The strict `GenerateContentRequest` schema of the `gemini` profile: every unknown name at any
//! level and every value of the wrong JSON type is a field violation, reported the way Google's
//! JSON front end does.
//!
//! Texts (docs/providers.md, "Google Gemini generateContent"): an unknown name gives
//! `Invalid JSON payload received. Unknown name "X" at 'LOC': Cannot find field.` (no ` at 'LOC'`
//! at the top level), with one `google.rpc.BadRequest` field violation per name and the messages
//! joined by `\n` (flyun/chatAir#108; zed-industries/zed#62539 and decolua/9router#2309 show the
//! snake_case location, `properties[N].value` for map entries, one violation per name). Both the
//! lowerCamel and the snake_case spelling of a known name are accepted, as the proto JSON parser
//! does. Type faults use the front end's `Invalid value at 'LOC' (TYPE), VALUE` form and
//! `Proto field is not repeating, cannot start list.`: the form is the real one, the exact
//! rendering of VALUE is reconstructed by the simulator.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

use crate::wire::snake;

/// One field violation: the location (`None` at the top level) and its description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) field: Option<String>,
    pub(crate) description: String,
}

/// What a known name holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Str,
    Bool,
    Int,
    Float,
    /// Base64 (standard or URL-safe, padding optional).
    Bytes,
    /// Free-form (`google.protobuf.Struct` or a part of the API the simulator does not model).
    Any,
    Msg(&'static Message),
    List(&'static Shape),
    /// `map<string, V>`.
    Map(&'static Shape),
    /// The OpenAPI `Schema` message (recursive: `properties`, `items`, `anyOf`).
    Schema,
}

/// A proto message: its type name and known fields (lowerCamel).
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [(&'static str, Shape)],
}

const STR_LIST: Shape = Shape::List(&Shape::Str);

/// `GenerateContentRequest`.
pub(crate) static REQUEST: Message = Message {
    name: "GenerateContentRequest",
    fields: &[
        ("model", Shape::Str),
        ("contents", Shape::List(&Shape::Msg(&CONTENT))),
        ("systemInstruction", Shape::Msg(&CONTENT)),
        ("tools", Shape::List(&Shape::Msg(&TOOL))),
        ("toolConfig", Shape::Msg(&TOOL_CONFIG)),
        ("generationConfig", Shape::Msg(&GENERATION_CONFIG)),
        ("safetySettings", Shape::List(&Shape::Msg(&SAFETY_SETTING))),
        ("cachedContent", Shape::Str),
        ("labels", Shape::Map(&Shape::Str)),
    ],
};

static CONTENT: Message = Message {
    name: "Content",
    fields: &[
        ("role", Shape::Str),
        ("parts", Shape::List(&Shape::Msg(&PART))),
    ],
};

static PART: Message = Message {
    name: "Part",
    fields: &[
        ("text", Shape::Str),
        ("thought", Shape::Bool),
        ("thoughtSignature", Shape::Bytes),
        ("functionCall", Shape::Msg(&FUNCTION_CALL)),
        ("functionResponse", Shape::Msg(&FUNCTION_RESPONSE)),
        ("inlineData", Shape::Msg(&BLOB)),
        ("fileData", Shape::Msg(&FILE_DATA)),
        ("executableCode", Shape::Msg(&EXECUTABLE_CODE)),
        ("codeExecutionResult", Shape::Msg(&CODE_EXECUTION_RESULT)),
        ("videoMetadata", Shape::Msg(&VIDEO_METADATA)),
    ],
};

/// The members of `Part`'s `data` oneof.
pub(crate) const PART_DATA: [&str; 7] = [
    "text",
    "functionCall",
    "functionResponse",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
];

static FUNCTION_CALL: Message = Message {
    name: "FunctionCall",
    fields: &[
        ("id", Shape::Str),
        ("name", Shape::Str),
        ("args", Shape::Any),
    ],
};

static FUNCTION_RESPONSE: Message = Message {
    name: "FunctionResponse",
    fields: &[
        ("id", Shape::Str),
        ("name", Shape::Str),
        ("response", Shape::Any),
        ("willContinue", Shape::Bool),
        ("scheduling", Shape::Str),
        ("parts", Shape::List(&Shape::Msg(&FUNCTION_RESPONSE_PART))),
    ],
};

/// A function response's media (`FunctionResponsePart`: a oneof of `inlineData` and `fileData`,
/// google-genai 3.6 `types.py`).
static FUNCTION_RESPONSE_PART: Message = Message {
    name: "FunctionResponsePart",
    fields: &[
        ("inlineData", Shape::Msg(&FUNCTION_RESPONSE_BLOB)),
        ("fileData", Shape::Msg(&FUNCTION_RESPONSE_FILE_DATA)),
    ],
};

static FUNCTION_RESPONSE_BLOB: Message = Message {
    name: "FunctionResponseBlob",
    fields: &[
        ("mimeType", Shape::Str),
        ("data", Shape::Bytes),
        ("displayName", Shape::Str),
    ],
};

static FUNCTION_RESPONSE_FILE_DATA: Message = Message {
    name: "FunctionResponseFileData",
    fields: &[
        ("fileUri", Shape::Str),
        ("mimeType", Shape::Str),
        ("displayName", Shape::Str),
    ],
};

static BLOB: Message = Message {
    name: "Blob",
    fields: &[("mimeType", Shape::Str), ("data", Shape::Bytes)],
};

static FILE_DATA: Message = Message {
    name: "FileData",
    fields: &[("mimeType", Shape::Str), ("fileUri", Shape::Str)],
};

static EXECUTABLE_CODE: Message = Message {
    name: "ExecutableCode",
    fields: &[("language", Shape::Str), ("code", Shape::Str)],
};

static CODE_EXECUTION_RESULT: Message = Message {
    name: "CodeExecutionResult",
    fields: &[("outcome", Shape::Str), ("output", Shape::Str)],
};

static VIDEO_METADATA: Message = Message {
    name: "VideoMetadata",
    fields: &[
        ("startOffset", Shape::Str),
        ("endOffset", Shape::Str),
        ("fps", Shape::Float),
    ],
};

static TOOL: Message = Message {
    name: "Tool",
    fields: &[
        (
            "functionDeclarations",
            Shape::List(&Shape::Msg(&FUNCTION_DECLARATION)),
        ),
        ("googleSearch", Shape::Any),
        ("googleSearchRetrieval", Shape::Any),
        ("codeExecution", Shape::Any),
        ("urlContext", Shape::Any),
        ("computerUse", Shape::Any),
        ("fileSearch", Shape::Any),
        ("googleMaps", Shape::Any),
        ("retrieval", Shape::Any),
    ],
};

static FUNCTION_DECLARATION: Message = Message {
    name: "FunctionDeclaration",
    fields: &[
        ("name", Shape::Str),
        ("description", Shape::Str),
        ("parameters", Shape::Schema),
        ("parametersJsonSchema", Shape::Any),
        ("response", Shape::Schema),
        ("responseJsonSchema", Shape::Any),
        ("behavior", Shape::Str),
    ],
};

static TOOL_CONFIG: Message = Message {
    name: "ToolConfig",
    fields: &[
        (
            "functionCallingConfig",
            Shape::Msg(&FUNCTION_CALLING_CONFIG),
        ),
        ("retrievalConfig", Shape::Any),
    ],
};

static FUNCTION_CALLING_CONFIG: Message = Message {
    name: "FunctionCallingConfig",
    fields: &[("mode", Shape::Str), ("allowedFunctionNames", STR_LIST)],
};

static GENERATION_CONFIG: Message = Message {
    name: "GenerationConfig",
    fields: &[
        ("stopSequences", STR_LIST),
        ("responseMimeType", Shape::Str),
        ("responseSchema", Shape::Schema),
        ("responseJsonSchema", Shape::Any),
        ("responseModalities", STR_LIST),
        ("candidateCount", Shape::Int),
        ("maxOutputTokens", Shape::Int),
        ("temperature", Shape::Float),
        ("topP", Shape::Float),
        ("topK", Shape::Int),
        ("seed", Shape::Int),
        ("presencePenalty", Shape::Float),
        ("frequencyPenalty", Shape::Float),
        ("responseLogprobs", Shape::Bool),
        ("logprobs", Shape::Int),
        ("enableEnhancedCivicAnswers", Shape::Bool),
        ("speechConfig", Shape::Any),
        ("thinkingConfig", Shape::Msg(&THINKING_CONFIG)),
        ("mediaResolution", Shape::Str),
        ("imageConfig", Shape::Any),
    ],
};

static THINKING_CONFIG: Message = Message {
    name: "ThinkingConfig",
    fields: &[
        ("includeThoughts", Shape::Bool),
        ("thinkingBudget", Shape::Int),
        ("thinkingLevel", Shape::Str),
    ],
};

static SAFETY_SETTING: Message = Message {
    name: "SafetySetting",
    fields: &[
        ("category", Shape::Str),
        ("threshold", Shape::Str),
        ("method", Shape::Str),
    ],
};

/// The OpenAPI `Schema` message's fields (a function declaration's `parameters`).
static SCHEMA: Message = Message {
    name: "Schema",
    fields: &[
        ("type", Shape::Str),
        ("format", Shape::Str),
        ("title", Shape::Str),
        ("description", Shape::Str),
        ("nullable", Shape::Bool),
        ("enum", STR_LIST),
        ("maxItems", Shape::Int),
        ("minItems", Shape::Int),
        ("properties", Shape::Map(&Shape::Schema)),
        ("required", STR_LIST),
        ("minProperties", Shape::Int),
        ("maxProperties", Shape::Int),
        ("minLength", Shape::Int),
        ("maxLength", Shape::Int),
        ("pattern", Shape::Str),
        ("example", Shape::Any),
        ("anyOf", Shape::List(&Shape::Schema)),
        ("propertyOrdering", STR_LIST),
        ("default", Shape::Any),
        ("items", Shape::Schema),
        ("minimum", Shape::Float),
        ("maximum", Shape::Float),
    ],
};

/// The value of the known field `camel` in `o`, under either spelling (lowerCamel first).
pub(crate) fn field<'a>(o: &'a serde_json::Map<String, Value>, camel: &str) -> Option<&'a Value> {
    o.get(camel)
        .or_else(|| o.get(&snake(camel)))
        .filter(|v| !v.is_null())
}

/// Decodes a proto `bytes` value (standard or URL-safe base64, padding optional).
pub(crate) fn decode_bytes(s: &str) -> Option<Vec<u8>> {
    [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(s).ok())
}

/// Walks a request body; every violation, in document order.
pub(crate) struct Walker<'p> {
    /// The proto package named in type faults (AI Studio and Vertex differ).
    pub(crate) package: &'p str,
    pub(crate) out: Vec<Violation>,
}

fn join(loc: &str, name: &str) -> String {
    if loc.is_empty() {
        name.to_owned()
    } else {
        format!("{loc}.{name}")
    }
}

impl Walker<'_> {
    fn push(&mut self, loc: &str, description: String) {
        self.out.push(Violation {
            field: (!loc.is_empty()).then(|| loc.to_owned()),
            description,
        });
    }

    fn invalid(&mut self, loc: &str, ty: &str, v: &Value) {
        let shown = match v {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        self.push(loc, format!("Invalid value at '{loc}' ({ty}), {shown}"));
    }

    fn type_name(&self, m: &Message) -> String {
        format!("type.googleapis.com/{}.{}", self.package, m.name)
    }

    /// Checks `v` at `loc` against `shape`.
    pub(crate) fn value(&mut self, v: &Value, shape: Shape, loc: &str) {
        if v.is_null() {
            return;
        }
        let repeated = matches!(shape, Shape::List(_));
        if v.is_array() && !repeated && !matches!(shape, Shape::Any) {
            self.push(
                loc,
                "Invalid JSON payload received. Proto field is not repeating, cannot start list."
                    .to_owned(),
            );
            return;
        }
        match shape {
            Shape::Any => {}
            Shape::Str => {
                if !v.is_string() {
                    self.invalid(loc, "TYPE_STRING", v);
                }
            }
            Shape::Bool => {
                if !v.is_boolean() {
                    self.invalid(loc, "TYPE_BOOL", v);
                }
            }
            Shape::Int => {
                let ok = v.is_i64()
                    || v.is_u64()
                    || v.as_str().is_some_and(|s| s.trim().parse::<i64>().is_ok());
                if !ok {
                    self.invalid(loc, "TYPE_INT32", v);
                }
            }
            Shape::Float => {
                let ok = v.is_number() || v.as_str().is_some_and(|s| s.parse::<f64>().is_ok());
                if !ok {
                    self.invalid(loc, "TYPE_FLOAT", v);
                }
            }
            Shape::Bytes => match v.as_str() {
                Some(s) if decode_bytes(s).is_some() => {}
                Some(s) => self.push(
                    loc,
                    format!(
                        "Invalid value at '{loc}' (TYPE_BYTES), Base64 decoding failed for {s:?}"
                    ),
                ),
                None => self.invalid(loc, "TYPE_BYTES", v),
            },
            Shape::Msg(m) => self.message(v, m, loc),
            Shape::Schema => self.message(v, &SCHEMA, loc),
            Shape::List(item) => match v.as_array() {
                Some(items) => {
                    for (i, it) in items.iter().enumerate() {
                        self.value(it, *item, &format!("{loc}[{i}]"));
                    }
                }
                None => {
                    let ty = match item {
                        Shape::Msg(m) => self.type_name(m),
                        Shape::Schema => self.type_name(&SCHEMA),
                        _ => "TYPE_STRING".to_owned(),
                    };
                    self.invalid(loc, &ty, v);
                }
            },
            Shape::Map(item) => match v.as_object() {
                Some(o) => {
                    for (i, (_, it)) in o.iter().enumerate() {
                        self.value(it, *item, &format!("{loc}[{i}].value"));
                    }
                }
                None => self.invalid(loc, "TYPE_MESSAGE", v),
            },
        }
    }

    /// Checks an object against a message's known names, then each known value.
    pub(crate) fn message(&mut self, v: &Value, m: &Message, loc: &str) {
        let Some(o) = v.as_object() else {
            let ty = self.type_name(m);
            self.invalid(loc, &ty, v);
            return;
        };
        for (k, val) in o {
            let known = m
                .fields
                .iter()
                .find(|(camel, _)| k == camel || *k == snake(camel));
            match known {
                Some((camel, shape)) => self.value(val, *shape, &join(loc, &snake(camel))),
                None if loc.is_empty() => self.push(
                    loc,
                    format!("Invalid JSON payload received. Unknown name {k:?}: Cannot find field."),
                ),
                None => self.push(
                    loc,
                    format!(
                        "Invalid JSON payload received. Unknown name {k:?} at '{loc}': Cannot find field."
                    ),
                ),
            }
        }
        if std::ptr::eq(m, &PART) {
            let set: Vec<&str> = PART_DATA
                .iter()
                .copied()
                .filter(|d| field(o, d).is_some())
                .collect();
            if let [_, second, ..] = set.as_slice() {
                // Simulator-reconstructed rendering of the front end's oneof fault.
                self.push(
                    loc,
                    format!(
                        "Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '{second}'"
                    ),
                );
            }
        }
    }
}

/// Every violation of `body` against `GenerateContentRequest`.
pub(crate) fn check(body: &Value, package: &str) -> Vec<Violation> {
    let mut w = Walker {
        package,
        out: Vec::new(),
    };
    w.message(body, &REQUEST, "");
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PKG: &str = "google.ai.generativelanguage.v1beta";

    #[test]
    fn unknown_names_everywhere_with_snake_locations() {
        let body = json!({
            "contents": [{"role": "user", "parts": [{"text": "hi", "thought_signature": "AAAA", "thinking": "x"}]}],
            "generation_config": {"thinkingConfig": {"include_thoughts": true, "effort": "high"}},
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string", "x-mcp": 1}},
                "additionalProperties": false
            }}]}],
            "reasoning": {}
        });
        let v = check(&body, PKG);
        let texts: Vec<&str> = v.iter().map(|v| v.description.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Invalid JSON payload received. Unknown name \"thinking\" at 'contents[0].parts[0]': Cannot find field.",
                "Invalid JSON payload received. Unknown name \"effort\" at 'generation_config.thinking_config': Cannot find field.",
                "Invalid JSON payload received. Unknown name \"x-mcp\" at 'tools[0].function_declarations[0].parameters.properties[1].value': Cannot find field.",
                "Invalid JSON payload received. Unknown name \"additionalProperties\" at 'tools[0].function_declarations[0].parameters': Cannot find field.",
                "Invalid JSON payload received. Unknown name \"reasoning\": Cannot find field.",
            ]
        );
        assert_eq!(v[0].field.as_deref(), Some("contents[0].parts[0]"));
        assert_eq!(v[4].field, None);
    }

    #[test]
    fn types_bytes_lists_and_oneof() {
        let body = json!({
            "contents": [
                {"role": "model", "parts": [{"text": 5}, {"functionCall": {"name": "f"}, "thoughtSignature": "!!"}]},
                {"role": "user", "parts": [{"text": "a", "functionCall": {"name": "f"}}]}
            ],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": "x"}, "temperature": [1]},
        });
        let texts: Vec<String> = check(&body, PKG)
            .into_iter()
            .map(|v| v.description)
            .collect();
        assert_eq!(
            texts,
            [
                "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5",
                "Invalid value at 'contents[0].parts[1].thought_signature' (TYPE_BYTES), Base64 decoding failed for \"!!\"",
                "Invalid JSON payload received. Oneof field 'data' is already set. Cannot set 'functionCall'",
                "Invalid value at 'generation_config.thinking_config.thinking_budget' (TYPE_INT32), \"x\"",
                "Invalid JSON payload received. Proto field is not repeating, cannot start list.",
            ]
        );
        assert!(
            check(&json!({"contents": []}), PKG).is_empty(),
            "an empty list is well typed"
        );
        assert!(decode_bytes("skip_thought_signature_validator").is_some());
        assert_eq!(snake("thoughtSignature"), "thought_signature");
    }
}
