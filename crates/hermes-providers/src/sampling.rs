//! Sampling parameters (`hermes_core::Sampling`) as the wires share them: the refusal of one a
//! wire cannot send (it becomes `TransportError::Unsupported`, naming the parameter) and the
//! chat-completions spellings per route (docs/spec.md §2: a strict-schema route gets no key its
//! schema lacks). Each native wire maps the parameters into its own body.

use std::fmt;

use hermes_core::sampling::{ResponseFormat, Sampling, ToolChoice};
use hermes_core::{RouteDecision, RouteMatcher, TransportError};
use serde_json::{Value, json};

use crate::openai_model::{ModelKind, model_kind};

/// A parameter a wire cannot send, and why: the request is not sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The parameter, as `Sampling` names it.
    pub parameter: &'static str,
    /// The wire, provider or model that cannot take it.
    pub wire: String,
    /// Why, and what to do instead.
    pub why: String,
}

impl Unsupported {
    /// `parameter` cannot go to `wire` because `why`.
    pub fn new(parameter: &'static str, wire: impl Into<String>, why: impl Into<String>) -> Self {
        Unsupported {
            parameter,
            wire: wire.into(),
            why: why.into(),
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot send {} to {}: {}",
            self.parameter, self.wire, self.why
        )
    }
}

impl std::error::Error for Unsupported {}

impl From<Unsupported> for TransportError {
    fn from(u: Unsupported) -> Self {
        TransportError::unsupported(u.parameter, u.wire, u.why)
    }
}

/// A JSON Schema given as a response format, as a value (it is the user's document: sent as
/// given, key order kept by `serde_json`'s `preserve_order`).
pub fn schema_value(schema: &hermes_core::RawJson) -> Value {
    schema.to_value()
}

/// How a chat-completions provider spells the sampling parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    /// OpenAI itself: `max_completion_tokens` (`max_tokens` is deprecated and refused by its
    /// reasoning models: platform.openai.com/docs/api-reference/chat/create).
    OpenAi,
    /// Groq and Cerebras (strict schemas): OpenAI's names with `max_completion_tokens`
    /// (console.groq.com/docs/api-reference#chat-create, inference-docs.cerebras.ai
    /// /api-reference/chat-completions).
    Completion,
    /// Mistral (strict, `extra="forbid"`): `max_tokens`, `random_seed` for the seed, no `user`;
    /// `max_completion_tokens` is refused with 422 (docs.mistral.ai/api
    /// `ChatCompletionRequest`; docs/providers.md, Mistral).
    Mistral,
    /// Every other OpenAI-compatible server: OpenAI's names with `max_tokens`, the spelling
    /// they document (DeepSeek, OpenRouter, vLLM, Ollama, …).
    Compatible,
}

impl Dialect {
    fn of(decision: &RouteDecision) -> Dialect {
        let target = &decision.target;
        let on = |providers: &[&str], hosts: &[&str]| {
            RouteMatcher::new()
                .providers(providers.iter().copied())
                .hosts(hosts.iter().copied())
                .matches(target)
                .is_some()
        };
        if decision.strict && on(&["mistral"], &["mistral.ai"]) {
            Dialect::Mistral
        } else if decision.strict && on(&["groq", "cerebras"], &["groq.com", "cerebras.ai"]) {
            Dialect::Completion
        } else if on(&["openai"], &["api.openai.com", "openai.azure.com"]) {
            Dialect::OpenAi
        } else {
            Dialect::Compatible
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dialect::OpenAi => "OpenAI chat completions",
            Dialect::Completion => "this chat-completions provider (Groq/Cerebras schema)",
            Dialect::Mistral => "Mistral chat completions",
            Dialect::Compatible => "chat completions",
        }
    }
}

/// Which OpenAI API a body is for: the two spell a named function and a JSON schema
/// differently, and only chat completions take `stop` and `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpenAiApi {
    /// Chat completions, in a route's dialect.
    Chat(Dialect),
    /// Responses.
    Responses,
}

/// The top-level chat-completions fields for `sampling` on `decision`'s route, in the order
/// they are written, or the parameter the route cannot take. On OpenAI itself a reasoning
/// model's sampling is checked against the `reasoning_effort` in `thinking`
/// ([`openai_reasoning`]).
pub fn chat_fields(
    decision: &RouteDecision,
    sampling: &Sampling,
    thinking: &hermes_core::ThinkingFields,
) -> Result<Vec<(&'static str, Value)>, Unsupported> {
    let dialect = Dialect::of(decision);
    if dialect == Dialect::OpenAi {
        let effort = thinking
            .iter()
            .find(|(k, _)| *k == "reasoning_effort")
            .and_then(|(_, v)| v.as_str());
        openai_reasoning(sampling, &decision.target.model, effort, dialect.name())?;
    }
    openai_fields(sampling, OpenAiApi::Chat(dialect), "")
}

/// Whether a streamed request on `decision`'s route asks for usage with `stream_options:
/// {"include_usage": true}`: only where the provider's documented schema has it, since an
/// OpenAI-compatible server may refuse a parameter it does not know (a third party's strict
/// server answers "unknown parameter `stream_options`"). OpenAI sends a streamed reply's usage
/// only when asked (platform.openai.com/docs/api-reference/chat/create, `stream_options`);
/// DeepSeek (api-docs.deepseek.com, create chat completion), Gemini's OpenAI endpoint and
/// Alibaba's compatible mode document the same option; OpenRouter takes it and always sends
/// usage. Strict routes get no extra byte (docs/spec.md §2); Mistral, Groq and Cerebras send usage
/// on their last chunk unasked (docs.mistral.ai release note 2024-01-16).
pub fn stream_usage(decision: &RouteDecision) -> bool {
    !decision.strict
        && RouteMatcher::new()
            .providers([
                "openai",
                "deepseek",
                "openrouter",
                "gemini-openai",
                "alibaba",
            ])
            .hosts([
                "api.openai.com",
                "openai.azure.com",
                "api.deepseek.com",
                "openrouter.ai",
                "generativelanguage.googleapis.com",
                "dashscope.aliyuncs.com",
                "dashscope-intl.aliyuncs.com",
            ])
            .matches(&decision.target)
            .is_some()
}

/// OpenAI's reasoning models refuse a `temperature` other than one, and any `top_p`, unless
/// reasoning is off with effort `none` (platform.openai.com/docs/guides/reasoning,
/// "limitations"; GPT-5.1 and later take them with effort `none`, their default — "gpt-5.1
/// defaults to none … models before gpt-5.1 default to medium and do not support none",
/// learn.microsoft.com ReasoningEffort): refused here by name, with what to ask instead.
/// `effort` is the effort the request sends, if any.
pub fn openai_reasoning(
    sampling: &Sampling,
    model: &str,
    effort: Option<&str>,
    wire: &str,
) -> Result<(), Unsupported> {
    let ModelKind::Reasoning(vocabulary) = model_kind(model) else {
        return Ok(());
    };
    // No effort sent: the model's default, `none` exactly on the models that take it.
    if effort.map_or(vocabulary.takes_none, |e| e == "none") {
        return Ok(());
    }
    let refused = [
        (
            "temperature",
            sampling.temperature.is_some_and(|t| t != 1.0),
        ),
        ("top_p", sampling.top_p.is_some()),
    ];
    match refused.iter().find(|(_, set)| *set) {
        Some((parameter, _)) => Err(Unsupported::new(
            parameter,
            format!("{wire} ({model})"),
            format!(
                "OpenAI's reasoning models take {parameter} only with reasoning effort none; {}",
                if vocabulary.takes_none {
                    "ask with --no-thinking (effort none) to set it"
                } else {
                    "this model cannot turn reasoning off; leave it unset"
                }
            ),
        )),
        None => Ok(()),
    }
}

/// The top-level Responses fields for `sampling` sent to `model`, in writing order, as the
/// official `openai` SDK 3.57.0 types them (`ResponseCreateParamsBase`: `max_output_tokens`,
/// `temperature`, `top_p`, `tool_choice` (`"auto"|"none"|"required"` or
/// `ToolChoiceFunctionParam {type, name}`), `parallel_tool_calls`, `text.format` (`text`,
/// `json_object`, `json_schema {name, schema, strict}`), `safety_identifier` (the end-user id:
/// `user` "is being replaced by `safety_identifier`")); the API has no `stop` and no `seed`.
pub fn responses_fields(
    sampling: &Sampling,
    model: &str,
) -> Result<Vec<(&'static str, Value)>, Unsupported> {
    openai_fields(sampling, OpenAiApi::Responses, model)
}

fn openai_fields(
    sampling: &Sampling,
    api: OpenAiApi,
    model: &str,
) -> Result<Vec<(&'static str, Value)>, Unsupported> {
    let (dialect, wire) = match api {
        OpenAiApi::Chat(dialect) => (dialect, dialect.name().to_owned()),
        OpenAiApi::Responses => (
            Dialect::OpenAi,
            format!("the OpenAI Responses API ({model})"),
        ),
    };
    let responses = api == OpenAiApi::Responses;
    refuse_unspelled(sampling, dialect, responses, &wire)?;
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    if let Some(max) = sampling.max_tokens {
        let key = match api {
            OpenAiApi::Responses => "max_output_tokens",
            OpenAiApi::Chat(Dialect::OpenAi | Dialect::Completion) => "max_completion_tokens",
            OpenAiApi::Chat(Dialect::Mistral | Dialect::Compatible) => "max_tokens",
        };
        out.push((key, json!(max)));
    }
    if let Some(t) = sampling.temperature {
        out.push(("temperature", json!(t)));
    }
    if let Some(p) = sampling.top_p {
        out.push(("top_p", json!(p)));
    }
    if !sampling.stop.is_empty() {
        out.push(("stop", json!(sampling.stop)));
    }
    if let Some(choice) = &sampling.tool_choice {
        out.push(("tool_choice", tool_choice_value(choice, responses, &wire)?));
    }
    if let Some(parallel) = sampling.parallel_tool_calls {
        out.push(("parallel_tool_calls", json!(parallel)));
    }
    if let Some(format) = &sampling.response_format {
        let value = response_format_value(format, responses, &wire)?;
        if responses {
            out.push(("text", json!({ "format": value })));
        } else {
            out.push(("response_format", value));
        }
    }
    if let Some(seed) = sampling.seed {
        let key = match dialect {
            Dialect::Mistral => "random_seed",
            _ => "seed",
        };
        out.push((key, json!(seed)));
    }
    if let Some(user) = &sampling.user {
        let key = if responses {
            "safety_identifier"
        } else {
            "user"
        };
        out.push((key, json!(user)));
    }
    Ok(out)
}

/// Refuses the parameters `dialect` (or Responses, when `responses`) has no key for, in the order
/// they are checked: `top_k` anywhere; `stop` and `seed` on Responses; `user` on Mistral.
fn refuse_unspelled(
    sampling: &Sampling,
    dialect: Dialect,
    responses: bool,
    wire: &str,
) -> Result<(), Unsupported> {
    if sampling.top_k.is_some() {
        return Err(Unsupported::new(
            "top_k",
            wire,
            "OpenAI's request schema has no top_k (openai 3.57.0 CompletionCreateParams, ResponseCreateParams), and a strict-schema route gets no key its schema lacks",
        ));
    }
    if responses && !sampling.stop.is_empty() {
        return Err(Unsupported::new(
            "stop",
            wire,
            "Responses has no stop sequences (ResponseCreateParams)",
        ));
    }
    if responses && sampling.seed.is_some() {
        return Err(Unsupported::new(
            "seed",
            wire,
            "Responses has no seed (ResponseCreateParams)",
        ));
    }
    if dialect == Dialect::Mistral && sampling.user.is_some() {
        return Err(Unsupported::new(
            "user",
            wire,
            "Mistral's request schema has no end-user id and refuses unknown fields with 422",
        ));
    }
    Ok(())
}

/// `choice` as OpenAI spells it: a named function is flat on Responses, nested in chat
/// completions.
fn tool_choice_value(
    choice: &ToolChoice,
    responses: bool,
    wire: &str,
) -> Result<Value, Unsupported> {
    match choice {
        ToolChoice::Auto => Ok(json!("auto")),
        ToolChoice::None => Ok(json!("none")),
        ToolChoice::Required => Ok(json!("required")),
        ToolChoice::Function(name) if responses => Ok(json!({"type": "function", "name": name})),
        ToolChoice::Function(name) => Ok(json!({"type": "function", "function": {"name": name}})),
        other => Err(Unsupported::new(
            "tool_choice",
            wire,
            format!("{other:?} has no OpenAI spelling"),
        )),
    }
}

/// `format` as OpenAI spells it: a JSON schema's members are flat on Responses (under
/// `text.format`), nested under `json_schema` in chat completions.
fn response_format_value(
    format: &ResponseFormat,
    responses: bool,
    wire: &str,
) -> Result<Value, Unsupported> {
    match format {
        ResponseFormat::Text => Ok(json!({"type": "text"})),
        ResponseFormat::JsonObject => Ok(json!({"type": "json_object"})),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut members = json!({"name": name, "schema": schema_value(schema)});
            if let Some(strict) = strict {
                members["strict"] = json!(strict);
            }
            if responses {
                let mut flat = json!({"type": "json_schema"});
                if let (Some(flat), Some(members)) = (flat.as_object_mut(), members.as_object()) {
                    flat.extend(members.clone());
                }
                Ok(flat)
            } else {
                Ok(json!({"type": "json_schema", "json_schema": members}))
            }
        }
        other => Err(Unsupported::new(
            "response_format",
            wire,
            format!("{other:?} has no OpenAI spelling"),
        )),
    }
}

/// A tool choice or a parallel-call switch needs tools in the request, and a named function
/// must be one of them: every provider refuses either (OpenAI: "'tool_choice' is only allowed
/// when 'tools' are specified"), so hermes says so before sending, naming the parameter.
pub fn check_tool_choice(
    sampling: &Sampling,
    tools: Option<&hermes_core::RawJson>,
    wire: &str,
) -> Result<(), Unsupported> {
    let names: Vec<String> = tools
        .and_then(|t| serde_json::from_str::<Vec<crate::tools::ChatTool<'_>>>(t.get()).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.function.name)
        .collect();
    let asked = [
        ("tool_choice", sampling.tool_choice.is_some()),
        (
            "parallel_tool_calls",
            sampling.parallel_tool_calls.is_some(),
        ),
    ];
    if let Some((parameter, _)) = asked.iter().find(|(_, set)| *set)
        && names.is_empty()
    {
        return Err(Unsupported::new(
            parameter,
            wire,
            "no tools are sent with this request",
        ));
    }
    if let Some(ToolChoice::Function(name)) = &sampling.tool_choice
        && !names.contains(name)
    {
        return Err(Unsupported::new(
            "tool_choice",
            wire,
            format!(
                "it names `{name}`, which is not among the tools sent ({})",
                names.join(", ")
            ),
        ));
    }
    Ok(())
}
