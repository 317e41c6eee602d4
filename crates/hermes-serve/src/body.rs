//! What both doors read from a request body — its top-level keys parsed one by one (so an error
//! names the key), and the turn a door made of it, which becomes one engine [`Request`] — and
//! what both read from the reply they answer with.

use hermes_core::{Message, Passthrough, RawJson, Sampling, ThinkingRequest};
use hermes_engine::{Choice, History, Request, ToolMode};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::error::ApiError;

/// A body's top-level keys in the body's order, each parsed on its own so an error names it.
pub(crate) struct Fields(Vec<(String, Box<RawValue>)>);

/// Reads a JSON object's members in order, their values as sent.
struct InOrder;

impl<'de> serde::de::Visitor<'de> for InOrder {
    type Value = Vec<(String, Box<RawValue>)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(String, Box<RawValue>)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
            // A repeated key: the last one stands, as a JSON object's reader takes it.
            members.retain(|(k, _)| *k != key);
            members.push((key, value));
        }
        Ok(members)
    }
}

impl Fields {
    /// The keys of `body`, which must be a JSON object.
    pub(crate) fn parse(body: &[u8]) -> Result<Fields, ApiError> {
        use serde::Deserializer as _;
        let mut de = serde_json::Deserializer::from_slice(body);
        de.deserialize_map(InOrder)
            .and_then(|members| de.end().map(|()| members))
            .map(Fields)
            .map_err(|e| ApiError {
                param: None,
                ..ApiError::invalid("", format!("the body is not a JSON object: {e}"))
            })
    }

    fn value(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Key `key` as a `T` (`what` says what it must be), `None` when absent or null.
    pub(crate) fn get<T: DeserializeOwned>(
        &self,
        key: &str,
        what: &str,
    ) -> Result<Option<T>, ApiError> {
        match self.value(key) {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|e| ApiError::invalid(key, format!("`{key}` must be {what}: {e}"))),
        }
    }

    /// Key `key` as a `T` (`what` says what it must be); absent or null, 400
    /// ([`ApiError::required`]).
    pub(crate) fn required<T: DeserializeOwned>(
        &self,
        key: &str,
        what: &str,
    ) -> Result<T, ApiError> {
        self.get(key, what)?.ok_or_else(|| ApiError::required(key))
    }

    /// Every key outside `read` with its value as sent, in the body's order.
    pub(crate) fn passed_through(&self, read: &[&str]) -> Vec<(String, RawJson)> {
        self.0
            .iter()
            .filter(|(k, _)| !read.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.clone(), RawJson::from_text(v.get()).ok()?)))
            .collect()
    }

    /// Key `key`'s text as sent, `None` when absent or null.
    pub(crate) fn raw(&self, key: &str) -> Option<&str> {
        self.value(key).map(|r| r.get()).filter(|r| *r != "null")
    }
}

/// One client turn as a door parsed it.
pub(crate) struct ClientTurn {
    /// The model string as sent (checked and resolved by `model::resolve`).
    pub(crate) model: String,
    /// The client's whole history, in the engine's message model.
    pub(crate) messages: Vec<Message>,
    /// Streamed or whole.
    pub(crate) stream: bool,
    /// The client's tools as chat function definitions.
    pub(crate) tools: Option<RawJson>,
    /// The thinking request.
    pub(crate) thinking: ThinkingRequest,
    /// Sampling parameters.
    pub(crate) sampling: Sampling,
    /// The client's partition within its tenant (docs/spec.md §10).
    pub(crate) partition: Option<String>,
    /// What the client asked for in its own wire's terms (the Messages door: betas, server
    /// tools, its thinking object).
    pub(crate) passthrough: Passthrough,
}

impl ClientTurn {
    /// The engine request for `tenant`: the client's whole history (the engine finds its
    /// conversation within the tenant and partition, re-attaches the stored carriers and stores
    /// the new tail, docs/spec.md §10), on `choice`, continuing `session` when one is named; the
    /// client's tools are client-side.
    pub(crate) fn request(
        self,
        tenant: String,
        choice: Choice,
        session: Option<String>,
    ) -> Request {
        // The trust boundary (docs/spec.md §10): the engine gets only what a client may write.
        let messages = self
            .messages
            .into_iter()
            .map(hermes_core::client::ClientMessage::read);
        let history = History::new(tenant, messages).partition(self.partition);
        let request = Request::from_history(history)
            .choice(choice)
            .thinking(self.thinking)
            .sampling(self.sampling)
            .passthrough(self.passthrough)
            .tools(match self.tools {
                Some(definitions) => ToolMode::Client(definitions),
                None => ToolMode::None,
            });
        match session {
            Some(session) => request.session(session),
            None => request,
        }
    }
}

/// A `tool_choice`: `auto`, `none`, `required`, or an object naming one function where
/// `name_of` finds its name (`spelled` shows that object in the error).
pub(crate) fn tool_choice(
    v: &serde_json::Value,
    name_of: impl Fn(&serde_json::Map<String, serde_json::Value>) -> Option<&serde_json::Value>,
    spelled: &str,
) -> Result<hermes_core::ToolChoice, ApiError> {
    use hermes_core::ToolChoice;
    let bad = || {
        ApiError::invalid(
            "tool_choice",
            format!("`tool_choice` must be auto, none, required or {spelled}"),
        )
    };
    match v {
        serde_json::Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            _ => Err(bad()),
        },
        serde_json::Value::Object(o) => name_of(o)
            .and_then(serde_json::Value::as_str)
            .map(|n| ToolChoice::Function(n.to_owned()))
            .ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// A response format of `kind` (`text`, `json_object`, or `json_schema` with its `name`,
/// `schema` and `strict` in `spec`), as the chat door's `response_format` and the Responses
/// door's `text.format` both spell it; errors name `param`.
pub(crate) fn response_format(
    kind: Option<&str>,
    spec: Option<&serde_json::Value>,
    param: &str,
) -> Result<hermes_core::ResponseFormat, ApiError> {
    use hermes_core::ResponseFormat;
    let bad = |why: String| ApiError::invalid(param, why);
    match kind {
        Some("text") => Ok(ResponseFormat::Text),
        Some("json_object") => Ok(ResponseFormat::JsonObject),
        Some("json_schema") => {
            let spec = spec.ok_or_else(|| bad(format!("`{param}` needs its json_schema")))?;
            let name = spec
                .get("name")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| bad(format!("`{param}`: the schema's `name` is required")))?;
            let schema = spec
                .get("schema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            Ok(ResponseFormat::JsonSchema {
                name: name.to_owned(),
                schema: RawJson::from_serialize(&schema).map_err(|e| bad(e.to_string()))?,
                strict: spec.get("strict").and_then(serde_json::Value::as_bool),
            })
        }
        _ => Err(bad(format!(
            "`{param}.type` must be text, json_object or json_schema"
        ))),
    }
}

/// The readable thinking of a reply (`reasoning_content`, else `reasoning`); opaque items stay
/// in the store.
pub(crate) fn readable_thinking(message: &Message) -> Option<String> {
    message
        .reasoning_content
        .as_ref()
        .or(message.reasoning.as_ref())
        .map(|t| t.text().into_owned())
}

/// A reply's text: a string, or its text parts joined.
pub(crate) fn text_of(content: &RawJson) -> String {
    match content.to_value() {
        serde_json::Value::String(s) => s,
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// A tool call's arguments as text (a JSON string's content, else the JSON as stored).
pub(crate) fn arguments_text(arguments: &RawJson) -> String {
    arguments
        .as_str()
        .map_or_else(|| arguments.get().to_owned(), |s| s.into_owned())
}
