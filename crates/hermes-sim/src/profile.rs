//! [`Profile`]: a built-in provider contract or one built from a [`ProfileSpec`], and the
//! per-request decisions (validation, error envelope, reply carrier) made on its behalf.

use std::sync::Arc;

use serde_json::Value;

use crate::builtin::{self, Builtin};
use crate::custom::ProfileSpec;
use crate::wire::{Carrier, Refusal, model_of, thinking_on};
use crate::{SimError, Switches, rules};

/// Where a streamed chat-completions reply carries its token usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamUsage {
    /// On the chunk that carries `finish_reason`.
    OnLastChoice,
    /// In a chunk of its own, with `"choices": []`, after the `finish_reason` chunk.
    OwnChunk,
    /// Not at all (OpenAI without `stream_options.include_usage`).
    Omitted,
}

/// One simulated provider contract: a built-in (see [`crate::PROFILES`]) or a third party's
/// [`ProfileSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile(Kind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Builtin(Builtin),
    Custom(Arc<ProfileSpec>),
}

impl Profile {
    /// The built-in profile `name`, one of [`crate::PROFILES`].
    pub fn builtin(name: &str) -> Result<Profile, SimError> {
        if let Some(&(_, feature)) = crate::builtin::NOT_BUILT.iter().find(|(n, _)| *n == name) {
            return Err(SimError::NotBuilt {
                profile: name.to_owned(),
                feature,
            });
        }
        Builtin::parse(name)
            .map(|b| Profile(Kind::Builtin(b)))
            .ok_or_else(|| SimError::UnknownProfile(name.to_owned()))
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        match &self.0 {
            Kind::Builtin(b) => b.info().name,
            Kind::Custom(spec) => spec.name(),
        }
    }

    /// The profile speaks Anthropic's Messages API (served by `crate::anthropic`) rather than
    /// chat completions.
    pub(crate) fn is_messages(&self) -> bool {
        matches!(self.0, Kind::Builtin(Builtin::Anthropic))
    }

    /// The profile speaks AWS Bedrock Runtime (served by `crate::bedrock`).
    pub(crate) fn is_bedrock(&self) -> bool {
        matches!(self.0, Kind::Builtin(Builtin::Bedrock))
    }

    /// The profile speaks Google's native generateContent API (served by `crate::gemini`).
    pub(crate) fn is_gemini(&self) -> bool {
        matches!(self.0, Kind::Builtin(Builtin::Gemini))
    }

    /// The profile speaks OpenAI's Responses API (served by `crate::openai_responses`).
    pub(crate) fn is_responses(&self) -> bool {
        matches!(self.0, Kind::Builtin(Builtin::OpenAiResponses))
    }

    /// Validates a parsed request against the profile and the switches.
    pub(crate) fn validate(
        &self,
        body: &Value,
        switches: &Switches,
        key: &[u8],
    ) -> Result<(), Refusal> {
        match &self.0 {
            Kind::Builtin(b) => rules::validate(*b, body, switches, key),
            Kind::Custom(spec) => spec.validate(body, switches),
        }
    }

    /// Answer to a body that is not valid JSON (always 400).
    pub(crate) fn bad_json(&self, err: &serde_json::Error) -> Refusal {
        match &self.0 {
            Kind::Builtin(b) => builtin::bad_json(*b, err),
            Kind::Custom(spec) => spec.bad_json(err),
        }
    }

    /// Where a streamed reply to `body` puts its usage. OpenAI sends it only when asked, in a
    /// chunk of its own with no choices ("If set, an additional chunk will be streamed before
    /// the `data: [DONE]` message … the `choices` field will always be an empty array":
    /// platform.openai.com/docs/api-reference/chat/create, `stream_options.include_usage`);
    /// the other profiles always put it on the chunk with `finish_reason`.
    pub(crate) fn stream_usage(&self, body: &Value) -> StreamUsage {
        match &self.0 {
            Kind::Builtin(Builtin::OpenAi) => {
                let asked = body
                    .pointer("/stream_options/include_usage")
                    .and_then(Value::as_bool)
                    == Some(true);
                if asked {
                    StreamUsage::OwnChunk
                } else {
                    StreamUsage::Omitted
                }
            }
            _ => StreamUsage::OnLastChoice,
        }
    }

    /// How the reply to `body` carries reasoning.
    pub(crate) fn carrier(&self, body: &Value) -> Carrier {
        let b = match &self.0 {
            Kind::Builtin(b) => *b,
            Kind::Custom(spec) => return spec.carrier(body),
        };
        match b {
            Builtin::DeepSeekV4 | Builtin::DeepSeekV3 | Builtin::Kimi if thinking_on(body) => {
                Carrier::ReasoningContent
            }
            Builtin::Mimo if rules::mimo_thinking_on(body) => Carrier::ReasoningContent,
            Builtin::Local => Carrier::ReasoningContent,
            Builtin::OpenRouter => Carrier::OpenRouter,
            Builtin::GeminiOpenAi => Carrier::Gemini,
            Builtin::Copilot => Carrier::Copilot {
                tool_sig: model_of(body).to_ascii_lowercase().contains("gemini"),
            },
            _ => Carrier::None,
        }
    }
}

impl From<ProfileSpec> for Profile {
    fn from(spec: ProfileSpec) -> Profile {
        Profile(Kind::Custom(Arc::new(spec)))
    }
}

impl std::str::FromStr for Profile {
    type Err = SimError;

    /// [`Profile::builtin`].
    fn from_str(name: &str) -> Result<Profile, SimError> {
        Profile::builtin(name)
    }
}
