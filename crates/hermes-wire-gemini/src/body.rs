//! The `generateContent` request body, rendered from the canonical history (docs/spec.md §5):
//! `contents` of `user` and `model` turns (neighbouring turns of one role merged; tool results a
//! user turn of `functionResponse` parts matched to their calls by id, else by name and order),
//! `systemInstruction`, the tools as `functionDeclarations`, and `generationConfig`: the model's
//! documented output ceiling as `maxOutputTokens` and `thinkingConfig` per docs/spec.md §3c. Thought signatures go back where they were captured, byte for byte, and only to
//! the model and host that minted them; readable thinking is never sent.
//!
//! Keys are in the order google-genai 3.6 (`google/genai/models.py`,
//! `_GenerateContentParameters_to_mldev`) writes them: `contents`, `systemInstruction`, `tools`,
//! `generationConfig`; a content's `parts` before its `role`; a part's data before its
//! `thoughtSignature`; `functionCall {id, args, name}`; `functionResponse {id, name, response}`;
//! a declaration's `description`, `name`, `parametersJsonSchema`.

use std::borrow::Cow;
use std::collections::BTreeSet;

use hermes_core::pairing::{Matched, OpenCall, match_result};
use hermes_core::sampling::{ResponseFormat, Sampling, ToolChoice};
use hermes_core::{RawJson, RequestParts, Role, ToolCall};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::media::{self, Media, ResponseParts, UserPart};
use super::model::{GeminiModel, ThinkingPlan, output_ceiling, thinking_plan};
use hermes_providers::native::json::{self, Turn, empty_string, push_turn, raw_box};
use hermes_providers::native::sampling::{Unsupported, check_tool_choice};
use hermes_providers::native::stored;
use hermes_providers::native::tools::{ChatFunction, ChatTool};
use hermes_providers::native::write_json;

/// The AI Studio base URL (docs/spec.md §8a).
pub const AI_STUDIO_BASE: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The key on a stored tool call whose id hermes made up (Gemini sent the `functionCall`
/// without one): `true`. Such an id only pairs the call with its result inside hermes; it is
/// never sent to any provider as a Gemini call id. Stored, never sent (it starts with `hermes_`).
pub const MADE_UP_ID_KEY: &str = "hermes_made_up_id";

/// The field a refusal can name on this wire: the thought signatures it replays.
pub const SIGNATURE_FIELD: &str = "thoughtSignature";

/// How the Gemini API is addressed (docs/spec.md §8a).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Google AI Studio: `{base}/models/{model}:generateContent`, the key in `x-goog-api-key`.
    AiStudio,
    /// Vertex AI: `{base}/v1/projects/{project}/locations/{region}/publishers/google/models/
    /// {model}:generateContent`, a bearer token.
    Vertex {
        /// The Google Cloud project.
        project: String,
        /// The region, or `global`.
        region: String,
    },
}

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// How the API is addressed.
    pub flavor: Flavor,
    /// The base URL: [`AI_STUDIO_BASE`], or `https://{region}-aiplatform.googleapis.com` (the
    /// `global` location: `https://aiplatform.googleapis.com`) for Vertex.
    pub base_url: String,
    /// `maxOutputTokens` from config (`[max_tokens]`); else the model's documented ceiling
    /// ([`output_ceiling`]).
    pub max_tokens: Option<u32>,
}

impl Target {
    /// AI Studio at its default base URL.
    pub fn ai_studio() -> Self {
        Target {
            flavor: Flavor::AiStudio,
            base_url: AI_STUDIO_BASE.to_owned(),
            max_tokens: None,
        }
    }

    /// Vertex AI for `project` in `region`, at the region's host (`global` →
    /// `aiplatform.googleapis.com`).
    pub fn vertex(project: &str, region: &str) -> Self {
        Target {
            flavor: Flavor::Vertex {
                project: project.to_owned(),
                region: region.to_owned(),
            },
            base_url: vertex_base_url(region),
            max_tokens: None,
        }
    }
}

/// The Vertex AI host for `region` (docs/spec.md §8a: `{region}-aiplatform.googleapis.com`, the
/// global location `aiplatform.googleapis.com`).
pub fn vertex_base_url(region: &str) -> String {
    if region == "global" {
        "https://aiplatform.googleapis.com".to_owned()
    } else {
        format!("https://{region}-aiplatform.googleapis.com")
    }
}

/// What the Gemini wire knows of a body beyond [`hermes_providers::native::Encoded`]'s common fields.
#[derive(Clone, Debug, Default)]
pub struct Merged {
    /// For each wire content, the history indices merged into it.
    pub sources: Vec<Vec<usize>>,
}

/// An encoded body: [`hermes_providers::native::Encoded`], its refusable field [`SIGNATURE_FIELD`] when a
/// signature is replayed, its `explain` without the `POST` line ([`super::explain`] adds it).
pub type Encoded = hermes_providers::native::Encoded<Merged>;

impl hermes_providers::native::Stamp for Merged {}

pub use hermes_providers::native::EncodeError;

/// The sampling parameters in `generateContent` spelling.
struct SamplingPlan<'s> {
    sampling: &'s Sampling,
    /// `toolConfig.functionCallingConfig`: the mode and the one allowed name.
    mode: Option<(&'static str, Option<&'s str>)>,
    /// `responseMimeType` and `responseJsonSchema`.
    mime: Option<&'static str>,
    schema: Option<&'s RawJson>,
}

/// Maps `sampling` onto `generateContent` as google-genai 3.6.1 writes a
/// `GenerateContentConfig` (`_GenerateContentConfig_to_mldev`: `generationConfig.{temperature,
/// topP, topK, maxOutputTokens, stopSequences, seed (int32), responseMimeType, responseJsonSchema}`,
/// `toolConfig.functionCallingConfig {mode AUTO|ANY|NONE, allowedFunctionNames}`); Gemini has
/// no end-user id and no parallel-call switch. A JSON schema is sent as `responseJsonSchema`
/// (plain JSON Schema, as the tools' `parametersJsonSchema`); Gemini always holds the answer to
/// it, so `strict` needs no field.
fn sampling_plan<'s>(
    sampling: &'s Sampling,
    model: &str,
    explain: &mut Vec<String>,
) -> Result<SamplingPlan<'s>, Unsupported> {
    let wire = || format!("Gemini generateContent ({model})");
    if sampling.user.is_some() {
        return Err(Unsupported::new(
            "user",
            wire(),
            "GenerateContentConfig has no end-user id",
        ));
    }
    if sampling.parallel_tool_calls.is_some() {
        return Err(Unsupported::new(
            "parallel_tool_calls",
            wire(),
            "Gemini has no switch for parallel function calls (FunctionCallingConfig: mode, allowedFunctionNames)",
        ));
    }
    if let Some(seed) = sampling.seed
        && i32::try_from(seed).is_err()
    {
        return Err(Unsupported::new(
            "seed",
            wire(),
            format!("seed {seed} does not fit Gemini's int32 seed"),
        ));
    }
    let mode = match &sampling.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(("AUTO", None)),
        Some(ToolChoice::None) => Some(("NONE", None)),
        Some(ToolChoice::Required) => Some(("ANY", None)),
        Some(ToolChoice::Function(name)) => Some(("ANY", Some(name.as_str()))),
        Some(other) => {
            return Err(Unsupported::new(
                "tool_choice",
                wire(),
                format!("{other:?} has no functionCallingConfig mode"),
            ));
        }
    };
    if let Some((mode, name)) = mode {
        explain.push(match name {
            Some(name) => format!(
                "tool_choice → toolConfig.functionCallingConfig mode {mode}, allowedFunctionNames [{name}]"
            ),
            None => format!("tool_choice → toolConfig.functionCallingConfig mode {mode}"),
        });
    }
    let (mime, schema) = match &sampling.response_format {
        None => (None, None),
        Some(ResponseFormat::Text) => (Some("text/plain"), None),
        Some(ResponseFormat::JsonObject) => (Some("application/json"), None),
        Some(ResponseFormat::JsonSchema { name, schema, .. }) => {
            explain.push(format!(
                "response_format json_schema {name} → responseMimeType application/json, responseJsonSchema (the name is not sent)"
            ));
            (Some("application/json"), Some(schema))
        }
        Some(other) => {
            return Err(Unsupported::new(
                "response_format",
                wire(),
                format!("{other:?} has no responseMimeType"),
            ));
        }
    };
    Ok(SamplingPlan {
        sampling,
        mode,
        mime,
        schema,
    })
}

impl SamplingPlan<'_> {
    /// True when `generationConfig` carries something of it.
    fn any(&self) -> bool {
        let s = self.sampling;
        s.temperature.is_some()
            || s.top_p.is_some()
            || s.top_k.is_some()
            || !s.stop.is_empty()
            || s.seed.is_some()
            || self.mime.is_some()
    }
}

/// `toolConfig`.
struct ToolConfig<'a>(&'static str, Option<&'a str>);

impl Serialize for ToolConfig<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut calling = serde_json::Map::new();
        calling.insert("mode".into(), self.0.into());
        if let Some(name) = self.1 {
            calling.insert("allowedFunctionNames".into(), serde_json::json!([name]));
        }
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("functionCallingConfig", &calling)?;
        map.end()
    }
}

/// One part of the wire copy. The stored literals it sends (texts, signatures, a result's
/// text, arguments stored as an object) are borrowed from the history, not copied: the body is
/// written from them directly.
enum Part<'h> {
    /// A text part; the JSON string literal as stored.
    Text {
        text: Cow<'h, RawValue>,
        signature: Option<&'h RawValue>,
    },
    /// A `functionCall` part.
    Call {
        id: Option<&'h str>,
        name: &'h str,
        args: Cow<'h, RawValue>,
        signature: Option<&'h RawValue>,
    },
    /// A `functionResponse` part: `response` is `{"output": <text>}`; `media` its images
    /// (`parts`, Gemini 3).
    Response {
        id: Option<&'h str>,
        name: &'h str,
        output: Cow<'h, RawValue>,
        media: Vec<Media>,
        /// The client marked the result as failed: sent under `error`, not `output`.
        error: bool,
    },
    /// An `inlineData` or `fileData` part.
    Media(Media),
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Part::Media(m) = self {
            return m.serialize(s);
        }
        let mut map = s.serialize_map(None)?;
        match self {
            Part::Text { text, signature } => {
                map.serialize_entry("text", text)?;
                if let Some(sig) = signature {
                    map.serialize_entry("thoughtSignature", sig)?;
                }
            }
            Part::Call {
                id,
                name,
                args,
                signature,
            } => {
                map.serialize_entry(
                    "functionCall",
                    &CallBody {
                        id: *id,
                        name,
                        args,
                    },
                )?;
                if let Some(sig) = signature {
                    map.serialize_entry("thoughtSignature", sig)?;
                }
            }
            Part::Response {
                id,
                name,
                output,
                media,
                error,
            } => {
                map.serialize_entry(
                    "functionResponse",
                    &ResponseBody {
                        id: *id,
                        name,
                        output,
                        media,
                        error: *error,
                    },
                )?;
            }
            Part::Media(_) => {}
        }
        map.end()
    }
}

struct CallBody<'a> {
    id: Option<&'a str>,
    name: &'a str,
    args: &'a RawValue,
}

impl Serialize for CallBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("args", self.args)?;
        map.serialize_entry("name", self.name)?;
        map.end()
    }
}

struct ResponseBody<'a> {
    id: Option<&'a str>,
    name: &'a str,
    output: &'a RawValue,
    media: &'a [Media],
    error: bool,
}

impl Serialize for ResponseBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        // `parts` first: google-genai 3.6's `FunctionResponse` field order.
        if !self.media.is_empty() {
            map.serialize_entry("parts", &ResponseParts(self.media))?;
        }
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("name", self.name)?;
        let key = if self.error { "error" } else { "output" };
        map.serialize_entry("response", &Output(key, self.output))?;
        map.end()
    }
}

/// `{"output": …}`: the key the API reference gives for a function's output
/// (`FunctionResponse.response`: "Use "output" key to specify function output and "error" key
/// to specify error details"; google-genai 3.6 `types.py`, `FunctionResponse.response`); a
/// failed result's text goes under `error`.
struct Output<'a>(&'static str, &'a RawValue);

impl Serialize for Output<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
}

/// One wire content: a role and its parts.
type Content<'h> = Turn<Part<'h>>;

/// A user turn of function responses.
fn answers_calls(content: &Content<'_>) -> bool {
    content.role == "user"
        && content
            .parts
            .iter()
            .any(|p| matches!(p, Part::Response { .. }))
}

/// The wire contents as JSON, each `{"parts", "role"}` (a [`Turn`] is the native-wire kit's
/// type, so this wire spells it through a wrapper of its own).
struct WireContents<'a, 'h>(&'a [Content<'h>]);

impl Serialize for WireContents<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct One<'a, 'h>(&'a Content<'h>);
        impl Serialize for One<'_, '_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("parts", &self.0.parts)?;
                map.serialize_entry("role", self.0.role)?;
                map.end()
            }
        }
        s.collect_seq(self.0.iter().map(One))
    }
}

/// The system instruction: one text part per system message, with the `user` role
/// google-genai gives it.
struct System<'a>(&'a [&'a RawValue]);

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct TextPart<'a>(&'a RawValue);
        impl Serialize for TextPart<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("text", self.0)?;
                map.end()
            }
        }
        let parts: Vec<TextPart<'_>> = self.0.iter().map(|t| TextPart(t)).collect();
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("parts", &parts)?;
        map.serialize_entry("role", "user")?;
        map.end()
    }
}

/// One `functionDeclarations` entry. The chat definitions' `parameters` are JSON Schema, so
/// they travel as `parametersJsonSchema` (API reference, `FunctionDeclaration`: "Describes the
/// parameters to the function in JSON Schema format"), byte for byte; `parameters` takes
/// Google's OpenAPI subset instead, which refuses an object schema with no properties
/// (`parameters.properties: should be non-empty for OBJECT type`, agno-agi/agno#2112) such as a
/// tool without arguments.
struct Declaration<'a>(&'a ChatFunction<'a>);

impl Serialize for Declaration<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut map = s.serialize_map(None)?;
        if let Some(d) = f.description.as_deref().filter(|d| !d.is_empty()) {
            map.serialize_entry("description", d)?;
        }
        map.serialize_entry("name", &f.name)?;
        if let Some(p) = f.parameters.filter(|p| p.get() != "null") {
            map.serialize_entry("parametersJsonSchema", p)?;
        }
        map.end()
    }
}

struct Tools<'a>(&'a [ChatTool<'a>]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Group<'a>(&'a [ChatTool<'a>]);
        impl Serialize for Group<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let decls: Vec<Declaration<'_>> =
                    self.0.iter().map(|t| Declaration(&t.function)).collect();
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("functionDeclarations", &decls)?;
                map.end()
            }
        }
        s.collect_seq([Group(self.0)])
    }
}

/// `generationConfig`: `maxOutputTokens` (before `thinkingConfig`, as google-genai's
/// `_GenerationConfig_to_mldev` writes them) and `thinkingConfig`.
struct Generation<'a> {
    max_output_tokens: Option<u32>,
    thinking: &'a ThinkingPlan,
    sampling: &'a SamplingPlan<'a>,
}

impl Serialize for Generation<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Config<'a>(&'a ThinkingPlan);
        impl Serialize for Config<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let p = self.0;
                let mut map = s.serialize_map(None)?;
                if p.include_thoughts {
                    map.serialize_entry("includeThoughts", &true)?;
                }
                if let Some(budget) = p.budget {
                    map.serialize_entry("thinkingBudget", &budget)?;
                }
                if let Some(level) = p.level {
                    map.serialize_entry("thinkingLevel", level)?;
                }
                map.end()
            }
        }
        let mut map = s.serialize_map(None)?;
        let sampling = self.sampling.sampling;
        if let Some(t) = sampling.temperature {
            map.serialize_entry("temperature", &t)?;
        }
        if let Some(p) = sampling.top_p {
            map.serialize_entry("topP", &p)?;
        }
        if let Some(k) = sampling.top_k {
            map.serialize_entry("topK", &k)?;
        }
        if let Some(max) = self.max_output_tokens {
            map.serialize_entry("maxOutputTokens", &max)?;
        }
        if !sampling.stop.is_empty() {
            map.serialize_entry("stopSequences", &sampling.stop)?;
        }
        if let Some(seed) = sampling.seed {
            map.serialize_entry("seed", &seed)?;
        }
        if let Some(mime) = self.sampling.mime {
            map.serialize_entry("responseMimeType", mime)?;
        }
        if let Some(schema) = self.sampling.schema {
            map.serialize_entry("responseJsonSchema", schema)?;
        }
        if self.thinking.any() {
            map.serialize_entry("thinkingConfig", &Config(self.thinking))?;
        }
        map.end()
    }
}

struct Body<'a, 'h> {
    contents: &'a [Content<'h>],
    system: &'a [&'h RawValue],
    tools: Option<&'a [ChatTool<'a>]>,
    thinking: &'a ThinkingPlan,
    max_output_tokens: Option<u32>,
    sampling: &'a SamplingPlan<'a>,
}

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("contents", &WireContents(self.contents))?;
        if !self.system.is_empty() {
            map.serialize_entry("systemInstruction", &System(self.system))?;
        }
        if let Some(tools) = self.tools.filter(|t| !t.is_empty()) {
            map.serialize_entry("tools", &Tools(tools))?;
        }
        if let Some((mode, name)) = self.sampling.mode {
            map.serialize_entry("toolConfig", &ToolConfig(mode, name))?;
        }
        if self.thinking.any() || self.max_output_tokens.is_some() || self.sampling.any() {
            let generation = Generation {
                max_output_tokens: self.max_output_tokens,
                thinking: self.thinking,
                sampling: self.sampling,
            };
            map.serialize_entry("generationConfig", &generation)?;
        }
        map.end()
    }
}

/// The stored JSON string literal of the Gemini signature in an `extra_content` value
/// (`{"google":{"thought_signature":…}}`, or the flat spelling), when it is a non-blank string:
/// what goes back as `thoughtSignature`, byte for byte, borrowed from the stored value.
///
/// There is one when `google.thought_signature` (`google` an object holding that key), else the
/// flat `thought_signature`, is a string that is not blank (`hermes_core::message::
/// thought_signature`'s rule); the literal sent is the nested one unless absent or `null`, else
/// the flat one. Read with borrowing parses, not into a `serde_json::Value` tree (a unit test
/// holds it to the `Value` reader on odd values).
pub(crate) fn stored_signature<'a>(extra: &'a RawJson) -> Option<&'a RawValue> {
    /// A member's value as it is, `null` included (an `Option<&RawValue>` reads `null` as
    /// absent).
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Extra<'a> {
        #[serde(borrow)]
        google: Option<Google<'a>>,
        #[serde(borrow, deserialize_with = "present")]
        thought_signature: Option<&'a RawValue>,
    }
    let text = extra.get();
    if !text.starts_with('{') {
        return None;
    }
    let extra: Extra<'_> = serde_json::from_str(text).ok()?;
    let google = extra.google.unwrap_or_default();
    // The check reads `google.thought_signature` only when `google` is an object.
    let checked = match google.signature {
        Some(sig) if google.object => sig,
        _ => extra.thought_signature?,
    };
    if hermes_core::raw::blank_literal(checked.get()) != Some(false) {
        return None;
    }
    // The literal sent: the nested one unless it is absent or `null`, else the flat one.
    let given = |raw: Option<&'a RawValue>| raw.filter(|r| r.get() != "null");
    given(google.signature).or_else(|| given(extra.thought_signature))
}

/// An `extra_content`'s `google`: its `thought_signature` as it is (`null` included), read in
/// the one parse of the whole value, and whether it is an object. Read as a derived struct
/// with that one field reads it: a repeated member is an error, an array is read positionally.
#[derive(Default)]
struct Google<'a> {
    signature: Option<&'a RawValue>,
    object: bool,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Google<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
        const FIELD: &str = "thought_signature";
        struct V<'a>(std::marker::PhantomData<Google<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Google<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("struct Google")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Google<'a>, A::Error> {
                let mut signature = None;
                while let Some(json::Text(key)) = map.next_key()? {
                    if key != FIELD {
                        map.next_value::<IgnoredAny>()?;
                    } else if signature.is_some() {
                        return Err(A::Error::duplicate_field(FIELD));
                    } else {
                        signature = Some(map.next_value::<&RawValue>()?);
                    }
                }
                Ok(Google {
                    signature,
                    object: true,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Google<'a>, A::Error> {
                Ok(Google {
                    signature: seq.next_element::<&RawValue>()?,
                    object: false,
                })
            }
        }
        d.deserialize_struct("Google", &[FIELD], V(std::marker::PhantomData))
    }
}

/// The text literals of a content value (chat `text` parts), borrowed.
fn text_parts(content: Option<&RawJson>) -> Vec<&RawValue> {
    json::text_literals(content, &["text"])
}

/// A tool result's text as one JSON string: the stored string literal as is, the texts of an
/// array of parts joined, else `""`.
fn result_text(content: Option<&RawJson>) -> Cow<'_, RawValue> {
    match content {
        Some(c) if c.is_string() => Cow::Borrowed(c.as_raw()),
        Some(c) if c.get().starts_with('[') => {
            let joined: String = text_parts(Some(c))
                .iter()
                .filter_map(|t| serde_json::from_str::<String>(t.get()).ok())
                .collect::<Vec<_>>()
                .join("\n");
            Cow::Owned(serde_json::value::to_raw_value(&joined).unwrap_or_else(|_| empty_string()))
        }
        _ => Cow::Owned(empty_string()),
    }
}

/// The key a call's arguments go under when they are not a JSON object.
pub(super) const WRAPPED_ARGS_KEY: &str = "value";

/// A tool call's arguments as the `args` object, and whether they had to be wrapped.
///
/// `functionCall.args` is a JSON object (a protobuf `Struct`: "The function parameters and
/// values in JSON object format", https://ai.google.dev/api/caching#FunctionCall); any other
/// value is refused. Storage keeps what the provider sent (capture stores the `args` text as
/// received), so a stored object goes back byte for byte, no arguments (or blank ones) as `{}`,
/// and anything else — another JSON value, or text that is not JSON — goes under
/// [`WRAPPED_ARGS_KEY`] (`{"value": …}`, the text as a JSON string when it is not JSON) rather
/// than being dropped for `{}`; the caller tells the user.
fn call_args(call: &ToolCall) -> (Cow<'_, RawValue>, bool) {
    let Some(stored) = call.function.arguments.as_ref() else {
        return (Cow::Owned(raw_box("{}")), false);
    };
    let text: Cow<'_, str> = match stored.as_str() {
        Some(s) => s,
        // Arguments stored as JSON rather than as a string of JSON: an object goes as it is
        // (stored values are trimmed JSON text).
        None if stored.get().starts_with('{') => return (Cow::Borrowed(stored.as_raw()), false),
        None => Cow::Borrowed(stored.get()),
    };
    let t = text.trim();
    if t.is_empty() {
        return (Cow::Owned(raw_box("{}")), false);
    }
    match RawValue::from_string(t.to_owned()) {
        Ok(raw) if t.starts_with('{') => (Cow::Owned(raw), false),
        Ok(raw) => (Cow::Owned(wrap_args(raw.get())), true),
        Err(_) => {
            let literal = serde_json::to_string(t).unwrap_or_else(|_| "\"\"".to_owned());
            (Cow::Owned(wrap_args(&literal)), true)
        }
    }
}

/// `{"value": <json>}` for a JSON value's text.
fn wrap_args(json: &str) -> Box<RawValue> {
    raw_box(&format!("{{\"{WRAPPED_ARGS_KEY}\":{json}}}"))
}

/// True when hermes made this call's id up (Gemini sent none).
pub fn made_up_id(call: &ToolCall) -> bool {
    call.extra
        .iter()
        .any(|(k, v)| k == MADE_UP_ID_KEY && v.get() == "true")
}

/// The short unsigned model turn ([`STEER_BRIDGE`]) between function responses and a user turn
/// that follows them (a steer, or a result's images); it stands for no stored message.
fn bridge_turn<'h>() -> Content<'h> {
    Turn {
        role: "model",
        parts: vec![Part::Text {
            text: Cow::Owned(
                serde_json::value::to_raw_value(STEER_BRIDGE).unwrap_or_else(|_| empty_string()),
            ),
            signature: None,
        }],
        sources: Vec::new(),
        extra: (),
    }
}

/// Sends the images of a run of tool results (`pending`, for models that take none inside a
/// function response) as a user turn of their own after it: the bridge model turn
/// ([`STEER_BRIDGE`]), then the images, since Gemini refuses other parts beside function
/// responses. `source` is the message that ends the run (for `--explain`).
fn flush_media<'h>(
    wire: &mut Vec<Content<'h>>,
    pending: &mut Vec<Media>,
    source: usize,
    explain: &mut Vec<String>,
) {
    if pending.is_empty() {
        return;
    }
    // The images belong to the tool results of the turn before.
    let sources = wire.last().map(|c| c.sources.clone()).unwrap_or_default();
    wire.push(bridge_turn());
    wire.push(Turn {
        role: "user",
        parts: pending.drain(..).map(Part::Media).collect(),
        sources,
        extra: (),
    });
    explain.push(format!(
        "before message {source}: the tool results' images sent as a user turn of their own after a model turn {STEER_BRIDGE:?} (this model takes no images inside a function response)"
    ));
}

/// The model turn sent between function responses and the user's words that follow them (a
/// steer typed while a tool ran). Gemini takes a function-response turn as the answer to the
/// call turn before it, part for part ("Please ensure that the number of function response parts
/// is equal to the number of function call parts of the function call turn"), and refuses text
/// beside the responses (google/oss-rebuild#1559 on Gemini 3 Flash; sibling parts,
/// google-gemini/gemini-cli#16137); Google's function-calling guide sends the responses as a
/// `Content` of their own (https://ai.google.dev/gemini-api/docs/function-calling). The user's
/// words then go as the next user turn, and turns alternate, so a short model turn goes between.
/// It carries no thought signature (a text turn's signature is not validated: only function
/// calls of the current turn are, https://ai.google.dev/gemini-api/docs/thought-signatures) and
/// is never stored.
pub const STEER_BRIDGE: &str = "Tool results received.";

/// Builds the body of `parts` for `target`: compact, the bytes sent (`hermes preview` re-indents
/// them itself). In stages, as the chat wire's: the request-wide decisions ([`plan_request`]),
/// each message's ([`plan_contents`]), then the bytes ([`render`]).
pub fn encode(parts: &RequestParts<'_>, target: &Target) -> Result<Encoded, EncodeError> {
    let request = plan_request(parts, target)?;
    let contents = plan_contents(&request, parts.history)?;
    render(&request, contents)
}

/// The request-wide decisions [`encode`] plans the contents against.
struct Request<'p> {
    parts: &'p RequestParts<'p>,
    /// The model id asked for, and what it is.
    model_id: &'p str,
    model: GeminiModel,
    /// The thinking config.
    plan: ThinkingPlan,
    /// Whether this target's verdicts refuse thought signatures.
    signatures_refused: bool,
    /// Whether the target is Vertex AI (images go as its parts take them).
    vertex: bool,
    /// `maxOutputTokens`: the request's, the config's, else the model's documented ceiling.
    max_output_tokens: Option<u32>,
    /// The sampling fields.
    sampling: SamplingPlan<'p>,
    /// The `explain` lines so far: the wire, the thinking plan, the sampling fields.
    explain: Vec<String>,
}

/// The first stage of [`encode`]: the thinking config, the refused fields, the sampling fields
/// and `maxOutputTokens`, with the first `explain` lines.
fn plan_request<'p>(
    parts: &'p RequestParts<'p>,
    target: &Target,
) -> Result<Request<'p>, EncodeError> {
    let decision = parts.decision;
    let model_id = decision.target.model.as_str();
    let model = GeminiModel::parse(model_id);
    let plan = thinking_plan(parts.thinking, model_id).map_err(EncodeError::Thinking)?;
    let refused: Vec<&str> = parts
        .wire_verdicts
        .refused_for(super::WIRE_ID, &decision.target);
    let signatures_refused = refused.contains(&SIGNATURE_FIELD);
    let mut explain = vec![
        format!(
            "gemini wire: {} ({}) — model {model_id}",
            target.base_url,
            match &target.flavor {
                Flavor::AiStudio => "AI Studio".to_owned(),
                Flavor::Vertex { project, region } =>
                    format!("Vertex AI, project {project}, location {region}"),
            }
        ),
        plan.explain.clone(),
    ];
    let max_output_tokens = parts
        .sampling
        .max_tokens
        .or(target.max_tokens)
        .or_else(|| output_ceiling(model_id));
    check_tool_choice(parts.sampling, parts.tools, "Gemini generateContent")
        .map_err(EncodeError::Unsupported)?;
    let sampling =
        sampling_plan(parts.sampling, model_id, &mut explain).map_err(EncodeError::Unsupported)?;
    match (
        parts.sampling.max_tokens,
        target.max_tokens,
        max_output_tokens,
    ) {
        (Some(max), _, _) => explain.push(format!("maxOutputTokens {max}: sampling")),
        (None, Some(max), _) => {
            explain.push(format!("maxOutputTokens {max}: [max_tokens] in config"))
        }
        (None, None, Some(max)) => explain.push(format!(
            "maxOutputTokens {max}: the output ceiling Google documents for {model_id}"
        )),
        (None, None, None) => {}
    }
    Ok(Request {
        parts,
        model_id,
        model,
        plan,
        signatures_refused,
        vertex: matches!(target.flavor, Flavor::Vertex { .. }),
        max_output_tokens,
        sampling,
        explain,
    })
}

/// Each message's decisions, the second stage of [`encode`]: the system text and the wire
/// contents, and what planning them found.
#[derive(Default)]
struct Contents<'h> {
    /// The `systemInstruction` texts.
    system: Vec<&'h RawValue>,
    /// The wire contents.
    wire: Vec<Content<'h>>,
    /// The calls of the latest model turn waiting for their results, and the id each went out
    /// with (none when hermes made it up).
    open: Vec<OpenCall<'h>>,
    sent_ids: Vec<Option<&'h str>>,
    /// Whether a thought signature is replayed.
    signed: bool,
    /// The first model turn of the tool loop in flight with calls but no signature sent.
    unsigned_in_loop: Option<usize>,
    /// Tool-result images for models that take none inside a function response, sent after the
    /// run of responses (see [`Contents::tool_result`]).
    pending_media: Vec<Media>,
    carriers: hermes_core::CarrierCounts,
    notes: Vec<String>,
    /// The `explain` lines of the messages.
    explain: Vec<String>,
}

/// The second stage of [`encode`]: every message of `history` into `systemInstruction` or the
/// wire contents, each decision explained.
fn plan_contents<'h>(
    request: &Request<'_>,
    history: &'h [hermes_core::Message],
) -> Result<Contents<'h>, EncodeError> {
    // The tool loop in flight: everything after the last real user message.
    let loop_start = history
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    let mut c = Contents::default();
    for (i, msg) in history.iter().enumerate() {
        if msg.role != Role::Tool {
            flush_media(&mut c.wire, &mut c.pending_media, i, &mut c.explain);
        }
        match msg.role {
            Role::System | Role::Developer => {
                if !c.wire.is_empty() {
                    c.explain.push(format!(
                        "message {i}: a mid-conversation system message: Gemini has no in-place form, its text joins `systemInstruction`"
                    ));
                }
                c.system.extend(text_parts(msg.content.as_ref()))
            }
            Role::User => c.user(request, msg, i)?,
            Role::Tool => c.tool_result(request, msg, i)?,
            Role::Assistant => c.model_turn(request, msg, i, i >= loop_start),
        }
    }
    flush_media(
        &mut c.wire,
        &mut c.pending_media,
        history.len(),
        &mut c.explain,
    );
    if let Some(i) = c.unsigned_in_loop
        && request.model.enforces_signatures()
    {
        let line = format!(
            "the model turn at message {i} in the tool loop in flight has function calls without a thought signature {} may receive; Gemini 3 models refuse that, and hermes never invents a signature",
            request.model_id
        );
        c.explain.push(line.clone());
        c.notes.push(line);
    }
    Ok(c)
}

impl<'h> Contents<'h> {
    /// A user message (`i` its place in the history): its text and images as a user turn,
    /// after a bridge model turn when it follows function responses.
    fn user(
        &mut self,
        request: &Request<'_>,
        msg: &'h hermes_core::Message,
        i: usize,
    ) -> Result<(), EncodeError> {
        self.open.clear();
        self.sent_ids.clear();
        let texts: Vec<Part<'_>> = if media::has_images(msg) {
            media::user_parts(msg, i, request.vertex)?
                .into_iter()
                .map(|p| match p {
                    UserPart::Text(text) => Part::Text {
                        text: Cow::Owned(text),
                        signature: None,
                    },
                    UserPart::Media(m) => Part::Media(m),
                })
                .collect()
        } else {
            text_parts(msg.content.as_ref())
                .into_iter()
                .map(|text| Part::Text {
                    text: Cow::Borrowed(text),
                    signature: None,
                })
                .collect()
        };
        if texts.is_empty() {
            self.explain
                .push(format!("message {i}: left out (no text to send)"));
            return Ok(());
        }
        if self.wire.last().is_some_and(answers_calls) {
            self.wire.push(bridge_turn());
            self.explain.push(format!(
                "message {i}: text after function responses sent as a user turn of its own, after a model turn {STEER_BRIDGE:?} (Gemini refuses text beside function responses)"
            ));
        }
        push_turn(&mut self.wire, "user", texts, i);
        Ok(())
    }

    /// A tool message (`i` its place in the history): a function response to the open call it
    /// answers, or left out when it answers none.
    fn tool_result(
        &mut self,
        request: &Request<'_>,
        msg: &'h hermes_core::Message,
        i: usize,
    ) -> Result<(), EncodeError> {
        let Some((at, how)) = match_result(&self.open, msg) else {
            self.explain.push(format!(
                "message {i}: tool result left out (it answers no call of the model turn before it)"
            ));
            return Ok(());
        };
        let call = &mut self.open[at];
        call.answered = true;
        let call = *call;
        match how {
            Matched::Id => {}
            Matched::Name => self.explain.push(format!(
                "message {i}: tool result matched to call `{}` by name",
                call.name
            )),
            Matched::Order => self.explain.push(format!(
                "message {i}: tool result matched to call `{}` by order",
                call.name
            )),
        }
        let images = if media::has_images(msg) {
            media::images(msg, i, request.vertex)?
        } else {
            Vec::new()
        };
        // Gemini 3 takes a result's images inside the function response; earlier
        // models get them in a user turn of their own after the run of function
        // responses (Gemini refuses other parts beside function responses, see
        // `STEER_BRIDGE`), flushed by `flush_media`.
        let inside = if request.model.multimodal_function_responses() {
            images
        } else {
            self.pending_media.extend(images);
            Vec::new()
        };
        let parts = vec![Part::Response {
            id: self.sent_ids[at],
            name: call.name,
            output: result_text(msg.content.as_ref()),
            media: inside,
            error: msg.tool_error,
        }];
        push_turn(&mut self.wire, "user", parts, i);
        Ok(())
    }

    /// An assistant message (`i` its place in the history, `in_loop` inside the tool loop in
    /// flight): a model turn of its text and calls, with the thought signatures this target may
    /// receive, and its `explain` line.
    fn model_turn(
        &mut self,
        request: &Request<'_>,
        msg: &'h hermes_core::Message,
        i: usize,
        in_loop: bool,
    ) {
        self.open.clear();
        self.sent_ids.clear();
        if !stored::replayed(msg, i, &mut self.explain) {
            return;
        }
        let own = stored::own(msg, &request.parts.decision.target);
        let send_signatures = own && !request.signatures_refused;
        // Each call with its stored signature, read once.
        let calls: Vec<(&ToolCall, Option<&RawValue>)> = msg
            .tool_calls
            .iter()
            .flatten()
            .map(|c| (c, c.extra_content.as_ref().and_then(stored_signature)))
            .collect();
        let text_signature = msg
            .native_record()
            .and_then(|r| r.extra_content.as_ref())
            .and_then(stored_signature);
        let call_signatures = calls.iter().filter(|(_, sig)| sig.is_some()).count();
        let stored_any = call_signatures > 0 || text_signature.is_some();
        if stored_any && !own {
            self.carriers.dropped_provenance += 1;
        }
        let mut model_parts: Vec<Part<'_>> = text_parts(msg.content.as_ref())
            .into_iter()
            .map(|text| Part::Text {
                text: Cow::Borrowed(text),
                signature: None,
            })
            .collect();
        let (made_up, wrapped) = self.calls(&calls, send_signatures, &mut model_parts);
        if model_parts.is_empty() {
            // A signature alone is no turn: nothing to send.
            self.explain
                .push(format!("message {i}: left out (no content to send)"));
            return;
        }
        // The text-turn signature goes back on the turn's last part when that is text,
        // else on an empty text part after the calls (as a stream delivers it); never
        // on a function call, which carries only its own.
        let mut text_sent = false;
        if send_signatures && let Some(sig) = text_signature {
            text_sent = true;
            match model_parts.last_mut() {
                Some(Part::Text { signature, .. }) => *signature = Some(sig),
                _ => model_parts.push(Part::Text {
                    text: Cow::Owned(empty_string()),
                    signature: Some(sig),
                }),
            }
        }
        let calls_sent = model_parts
            .iter()
            .filter(|p| {
                matches!(
                    p,
                    Part::Call {
                        signature: Some(_),
                        ..
                    }
                )
            })
            .count();
        self.signed |= calls_sent > 0 || text_sent;
        if in_loop && !calls.is_empty() && calls_sent == 0 {
            self.unsigned_in_loop.get_or_insert(i);
        }
        let why = match (stored_any, request.signatures_refused, own) {
            (false, _, _) => "no stored thought signature".to_owned(),
            (true, true, _) => {
                "thought signatures refused by this target (verdict): left out".to_owned()
            }
            (true, false, false) => {
                let who = msg
                    .origin
                    .as_ref()
                    .map_or_else(String::new, |o| format!(" by {} on {}", o.model, o.host));
                format!("thought signatures minted{who}: left out (provenance)")
            }
            (true, false, true) => signatures_sent(calls_sent, text_sent),
        };
        let mut line = format!("message {i}: {why}");
        if msg.replayable_text().is_some() {
            line.push_str("; readable thinking not sent (this wire has no field for it)");
        }
        if !wrapped.is_empty() {
            let note = format!(
                "message {i}: the arguments of {} are not a JSON object, which Gemini's functionCall.args must be: sent wrapped as {{\"{WRAPPED_ARGS_KEY}\": …}} (the stored history is unchanged)",
                wrapped.join(", ")
            );
            self.explain.push(note.clone());
            self.notes.push(note);
        }
        if !made_up.is_empty() {
            line.push_str(&format!(
                "; id hermes made up for {} not sent",
                made_up.join(", ")
            ));
        }
        self.explain.push(line);
        push_turn(&mut self.wire, "model", model_parts, i);
    }

    /// A model turn's function calls (each with its stored signature) onto `model_parts`, each
    /// opened for the results that follow; the signatures only when `send_signatures`. Returns
    /// the names of the calls whose id hermes made up (not sent) and of those whose arguments
    /// went wrapped.
    fn calls(
        &mut self,
        calls: &[(&'h ToolCall, Option<&'h RawValue>)],
        send_signatures: bool,
        model_parts: &mut Vec<Part<'h>>,
    ) -> (Vec<&'h str>, Vec<&'h str>) {
        let mut made_up = Vec::new();
        let mut wrapped = Vec::new();
        for &(call, signature) in calls {
            let made = made_up_id(call);
            if made {
                made_up.push(call.function.name.as_str());
            }
            let sent = if made { None } else { call.id.as_deref() };
            self.open.push(OpenCall {
                id: call.id.as_deref(),
                name: &call.function.name,
                answered: false,
            });
            self.sent_ids.push(sent);
            let (args, was_wrapped) = call_args(call);
            if was_wrapped {
                wrapped.push(call.function.name.as_str());
            }
            model_parts.push(Part::Call {
                id: sent,
                name: &call.function.name,
                args,
                signature: signature.filter(|_| send_signatures),
            });
        }
        (made_up, wrapped)
    }
}

/// What a model turn of hermes' own minting sent of its signatures, for its `explain` line.
fn signatures_sent(calls_sent: usize, text_sent: bool) -> String {
    let mut what = Vec::new();
    if calls_sent > 0 {
        what.push(format!(
            "{calls_sent} function-call signature(s) replayed on their calls"
        ));
    }
    if text_sent {
        what.push("the text-turn signature replayed on the last part".to_owned());
    }
    what.join("; ")
}

/// The last stage of [`encode`]: the body's bytes, from the planned request and contents.
fn render(request: &Request<'_>, contents: Contents<'_>) -> Result<Encoded, EncodeError> {
    let tools: Option<Vec<ChatTool<'_>>> = match request.parts.tools {
        Some(t) => {
            Some(serde_json::from_str(t.get()).map_err(|e| EncodeError::Tools(e.to_string()))?)
        }
        None => None,
    };
    let body = Body {
        contents: &contents.wire,
        system: &contents.system,
        tools: tools.as_deref(),
        thinking: &request.plan,
        max_output_tokens: request.max_output_tokens,
        sampling: &request.sampling,
    };
    let bytes = write_json(&body)?;
    let mut refusable: BTreeSet<&'static str> = BTreeSet::new();
    if contents.signed {
        refusable.insert(SIGNATURE_FIELD);
    }
    let mut explain = request.explain.clone();
    explain.extend(contents.explain);
    Ok(Encoded {
        body: bytes,
        refusable: refusable.into_iter().collect(),
        messages: contents.wire.len(),
        notes: contents.notes,
        explain,
        carriers: contents.carriers,
        wire: Merged {
            sources: json::sources(&contents.wire),
        },
    })
}
