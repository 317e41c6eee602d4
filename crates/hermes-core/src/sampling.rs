//! Sampling parameters of a request (`max_tokens`, `temperature`, `top_p`, `top_k`, `stop`, tool choice,
//! parallel tool calls, response format, `seed`, `user`), wire-neutral: each wire maps what its
//! provider's schema has and refuses, naming the parameter, what it cannot send
//! ([`crate::transport::TransportError::Unsupported`]). Nothing is dropped silently.

use crate::raw::RawJson;

/// Which tool the model may or must call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the providers' default when tools are sent).
    Auto,
    /// No tool may be called.
    None,
    /// Some tool must be called.
    Required,
    /// This function must be called.
    Function(String),
}

/// The shape the answer must take.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseFormat {
    /// Plain text (the default).
    Text,
    /// Any JSON object (OpenAI's JSON mode).
    JsonObject,
    /// JSON that follows `schema`.
    JsonSchema {
        /// The schema's name (OpenAI requires one; other wires may not send it).
        name: String,
        /// The JSON Schema, as given.
        schema: RawJson,
        /// Strict schema adherence, when asked either way.
        strict: Option<bool>,
    },
}

/// Sampling parameters: `Default` sets nothing, and a wire then sends nothing of its own
/// beyond its defaults (e.g. the Anthropic wire's `max_tokens`).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Sampling {
    /// Most output tokens; overrides the wire's default (a target's `[max_tokens]`, the
    /// model's documented ceiling).
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    pub top_p: Option<f64>,
    /// Sample only from the `top_k` most likely tokens.
    pub top_k: Option<u32>,
    /// Stop sequences (none when empty).
    pub stop: Vec<String>,
    /// Which tool the model may or must call.
    pub tool_choice: Option<ToolChoice>,
    /// Whether one reply may call several tools.
    pub parallel_tool_calls: Option<bool>,
    /// The shape the answer must take.
    pub response_format: Option<ResponseFormat>,
    /// Seed for reproducible sampling.
    pub seed: Option<i64>,
    /// An opaque id of the end user, for the provider's abuse detection.
    pub user: Option<String>,
}

impl Sampling {
    /// Nothing set.
    pub fn new() -> Self {
        Sampling::default()
    }

    /// True when no parameter is set.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        *self == Sampling::default()
    }

    crate::setters! {
        Some:
        /// With `max_tokens`.
        max_tokens: u32;
        /// With `temperature`.
        temperature: f64;
        /// With `top_p`.
        top_p: f64;
        /// With `top_k`.
        top_k: u32;
        /// With a tool choice.
        tool_choice: ToolChoice;
        /// With parallel tool calls allowed or not.
        parallel_tool_calls: bool;
        /// With a response format.
        response_format: ResponseFormat;
        /// With a seed.
        seed: i64;
    }

    /// With stop sequences.
    pub fn stop<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// With an end-user id.
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }
}

/// The empty sampling, for parts that set none.
pub(crate) static NO_SAMPLING: Sampling = Sampling {
    max_tokens: None,
    temperature: None,
    top_p: None,
    top_k: None,
    stop: Vec::new(),
    tool_choice: None,
    parallel_tool_calls: None,
    response_format: None,
    seed: None,
    user: None,
};
