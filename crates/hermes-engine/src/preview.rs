//! The body of the next request for a stored conversation, through the same settlement as
//! `chat`: no network, nothing stored.

use hermes_core::{
    Carrier, CarrierSet, Message, Role, RouteDecision, SessionFile, ShapeContext, ThinkingRequest,
    Verdicts,
};

use hermes_core::RequestParts;
use hermes_providers::Wire;
use hermes_providers::chat::ChatRequest;
use hermes_providers::{anthropic, bedrock, gemini, responses};

use crate::Engine;
use crate::error::EngineError;
use crate::settle::{Choice, Defaults, Purpose, Settled, Stored, settle, settle_thinking};

/// How to preview.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PreviewOptions {
    /// The command line's choice.
    pub choice: Choice,
    /// `config.toml`'s defaults.
    pub defaults: Defaults,
    /// The command line's thinking request (`--effort` / `--no-thinking`; `None` or
    /// [`ThinkingRequest::NoPreference`] when it gave neither). The preview's request settles as
    /// chat's does ([`settle_thinking`]): this, else the one the history stores in its
    /// `model_config`, else `defaults.effort`.
    pub thinking: Option<ThinkingRequest>,
    /// Carriers to treat as refused for this provider, host and model (`--reject`).
    pub reject: CarrierSet,
    /// A user message to append (`-q`).
    pub query: Option<String>,
}

impl PreviewOptions {
    /// Options for `choice`.
    pub fn new(choice: Choice) -> Self {
        PreviewOptions {
            choice,
            ..PreviewOptions::default()
        }
    }

    /// With config's defaults.
    pub fn defaults(mut self, defaults: Defaults) -> Self {
        self.defaults = defaults;
        self
    }

    /// With the command line's thinking request (flags only: config's default effort goes in
    /// [`Defaults::effort`]).
    pub fn thinking(mut self, thinking: ThinkingRequest) -> Self {
        self.thinking = Some(thinking);
        self
    }

    /// Treating `carriers` as refused.
    pub fn reject(mut self, carriers: CarrierSet) -> Self {
        self.reject = carriers;
        self
    }

    /// Appending a user message.
    pub fn query(mut self, text: Option<String>) -> Self {
        self.query = text;
        self
    }
}

/// A settled preview: the target, its route, the verdicts and the history to shape.
#[derive(Debug)]
pub struct Preview {
    /// Where the request would go.
    pub settled: Settled,
    /// Its route.
    pub decision: RouteDecision,
    /// The session's verdicts plus `--reject`.
    pub verdicts: Verdicts,
    /// The history, with `-q` appended.
    pub history: Vec<Message>,
    /// The session's verdicts on other wires.
    pub wire_verdicts: hermes_core::WireVerdicts,
    thinking: ThinkingRequest,
}

impl Preview {
    /// Settles `file`'s conversation for `options` exactly as `chat` would.
    pub fn new(
        engine: &Engine,
        file: SessionFile,
        options: PreviewOptions,
    ) -> Result<Preview, EngineError> {
        let stored = Stored {
            provider: file.provider.as_deref(),
            model: file.model.as_deref(),
            base_url: file.base_url.as_deref(),
            base_url_confirmed: false,
        };
        engine.check_provider(&options.choice, stored.provider, &options.defaults)?;
        let settled = settle(
            &options.choice,
            Some(stored),
            &options.defaults,
            Purpose::Preview,
            &|_| None,
        )?;
        let decision = engine.resolve(&settled);
        let mut verdicts = file
            .verdicts()
            .map_err(|e| EngineError::Failed(e.to_string()))?;
        if options.reject.contains(Carrier::ReasoningContent)
            && let Some(echo) = &decision.echo
        {
            return Err(EngineError::Usage(format!(
                "--reject reasoning_content is refused: route `{}` is must-echo (family {}), where reasoning_content is required",
                decision.id(),
                echo.family
            )));
        }
        verdicts.record(&decision.target, options.reject);
        let wire_verdicts = hermes_core::WireVerdicts::from_model_config(&file.model_config)
            .map_err(|e| EngineError::Failed(format!("model_config: {e}")))?;
        let stored_thinking = hermes_store::StoredThinking::from_model_config(&file.model_config)
            .map_err(|e| {
            EngineError::Failed(format!(
                "model_config: member `{}`: {e}",
                hermes_store::THINKING_KEY
            ))
        })?;
        let thinking = settle_thinking(
            options.thinking.unwrap_or_default(),
            stored_thinking,
            options.defaults.effort,
        );
        let mut history = file.messages;
        if let Some(text) = &options.query {
            history.push(Message::text(Role::User, text));
        }
        Ok(Preview {
            settled,
            decision,
            verdicts,
            history,
            wire_verdicts,
            thinking,
        })
    }

    /// Adds the store's fleet verdicts for this target that are younger than `reprobe_after`
    /// (an older one would be re-probed, so the next request would carry its field), as a chat
    /// of any session would.
    pub async fn with_fleet_verdicts(
        mut self,
        store: &hermes_store::Store,
        reprobe_after: std::time::Duration,
    ) -> Result<Preview, EngineError> {
        let target = &self.decision.target;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let cutoff = now.saturating_sub(reprobe_after).as_millis();
        let provider = target.provider.trim().to_lowercase();
        let host = target.host_key();
        for v in store.fleet_verdicts().await? {
            let fresh = u128::try_from(v.learned_at).is_ok_and(|at| at >= cutoff);
            if !fresh || v.provider != provider || v.host != host || v.model != target.model {
                continue;
            }
            if v.wire == hermes_core::CHAT_WIRE {
                if let Some(carrier) = Carrier::parse(&v.field) {
                    self.verdicts
                        .record(target, hermes_core::CarrierSet::of([carrier]));
                }
            } else {
                self.wire_verdicts.record(&v.wire, target, &[&v.field]);
            }
        }
        Ok(self)
    }

    /// The request body of the chat-completions wire.
    pub fn request(&self) -> ChatRequest<'_> {
        ChatRequest::build(&self.history, &self.decision, &self.verdicts, self.thinking)
    }

    /// The exact body of the next request on the target's wire, pretty-printed (stored
    /// carriers are written as stored).
    pub fn body(&self) -> Result<Vec<u8>, EngineError> {
        match self.settled.wire {
            Wire::Anthropic => Ok(self.anthropic()?.body),
            Wire::BedrockConverse => Ok(self.bedrock()?.body),
            Wire::Gemini => Ok(self.gemini()?.body),
            Wire::Responses => Ok(self.responses()?.body),
            _ => serde_json::to_vec_pretty(&self.request())
                .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}"))),
        }
    }

    fn responses(&self) -> Result<responses::Encoded, EngineError> {
        let (history, _) = hermes_core::pairing::paired(&self.history);
        let parts = RequestParts::new(&history, &self.decision, &self.verdicts)
            .wire_verdicts(&self.wire_verdicts)
            .thinking(self.thinking);
        responses::encode_pretty(&parts, &responses::Drops::default())
            .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}")))
    }

    fn gemini(&self) -> Result<gemini::Encoded, EngineError> {
        let base = self.settled.base_url.clone().unwrap_or_default();
        let (history, _) = hermes_core::pairing::paired(&self.history);
        let parts = RequestParts::new(&history, &self.decision, &self.verdicts)
            .wire_verdicts(&self.wire_verdicts)
            .thinking(self.thinking);
        gemini::encode_pretty(&parts, &gemini_target(&self.settled, &base))
            .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}")))
    }

    fn bedrock(&self) -> Result<bedrock::Encoded, EngineError> {
        let base = self.settled.base_url.clone().unwrap_or_default();
        let (history, _) = hermes_core::pairing::paired(&self.history);
        let parts = RequestParts::new(&history, &self.decision, &self.verdicts)
            .wire_verdicts(&self.wire_verdicts)
            .thinking(self.thinking);
        bedrock::encode_pretty(
            &parts,
            &bedrock_target(&self.settled, &base),
            &bedrock::Drops::default(),
        )
        .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}")))
    }

    fn anthropic(&self) -> Result<anthropic::Encoded, EngineError> {
        let base = self.settled.base_url.clone().unwrap_or_default();
        let target = anthropic_target(&self.settled, &base);
        let (history, _) = hermes_core::pairing::paired(&self.history);
        let parts = RequestParts::new(&history, &self.decision, &self.verdicts)
            .wire_verdicts(&self.wire_verdicts)
            .thinking(self.thinking);
        anthropic::body::encode_pretty(&parts, &target, &anthropic::Drops::default())
            .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}")))
    }

    /// `--explain`: the route line, then one line per message saying why each carrier is
    /// present, padded or absent and what stored keys stay out.
    pub fn explain(&self) -> Vec<String> {
        if self.settled.wire == Wire::Responses {
            return match self.responses() {
                Ok(encoded) => encoded.explain,
                Err(e) => vec![e.to_string()],
            };
        }
        if self.settled.wire == Wire::Gemini {
            return match self.gemini() {
                Ok(encoded) => encoded.explain,
                Err(e) => vec![e.to_string()],
            };
        }
        if self.settled.wire == Wire::BedrockConverse {
            return match self.bedrock() {
                Ok(encoded) => encoded.explain,
                Err(e) => vec![e.to_string()],
            };
        }
        if self.settled.wire == Wire::Anthropic {
            return match self.anthropic() {
                Ok(encoded) => {
                    let base = self.settled.base_url.clone().unwrap_or_default();
                    let url = anthropic::url(
                        &anthropic_target(&self.settled, &base),
                        &self.settled.model,
                        false,
                    );
                    std::iter::once(format!("POST {url}"))
                        .chain(encoded.explain)
                        .collect()
                }
                Err(e) => vec![e.to_string()],
            };
        }
        let decision = &self.decision;
        let ctx = ShapeContext::new(decision, &self.verdicts);
        let echo = decision
            .echo
            .as_ref()
            .map_or("no".to_owned(), |e| format!("yes (family {})", e.family));
        let refused = ctx.refused.fields();
        let mut lines = vec![format!(
            "route {} ({}); reads: {}; must-echo: {echo}; refused here: {}",
            decision.id(),
            decision.matched_by,
            if decision.strict {
                "nothing (strict schema)".to_owned()
            } else {
                decision.carriers.fields().join(", ")
            },
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            },
        )];
        lines.extend(ctx.explain(&self.history));
        lines
    }
}

/// The Gemini target of a settled command (Vertex for `vertex-gemini`), with requests going to
/// `base_url`.
pub(crate) fn gemini_target(settled: &Settled, base_url: &str) -> gemini::Target {
    let flavor = match &settled.vertex {
        Some(v) => gemini::Flavor::Vertex {
            project: v.project.clone(),
            region: v.region.clone(),
        },
        None => gemini::Flavor::AiStudio,
    };
    gemini::Target {
        flavor,
        base_url: base_url.to_owned(),
    }
}

/// The Bedrock Converse target of a settled command, with requests going to `base_url`.
pub(crate) fn bedrock_target(settled: &Settled, base_url: &str) -> bedrock::Target {
    bedrock::Target {
        base_url: base_url.to_owned(),
        max_tokens: settled.max_tokens,
    }
}

/// The Anthropic target of a settled command, with requests going to `base_url` (a started
/// simulator's loopback URL, or the settled one).
pub(crate) fn anthropic_target(settled: &Settled, base_url: &str) -> anthropic::Target {
    let flavor = match (&settled.vertex, settled.provider.as_str()) {
        (Some(v), _) => anthropic::Flavor::Vertex {
            project: v.project.clone(),
            region: v.region.clone(),
        },
        (None, "foundry-anthropic") => anthropic::Flavor::Foundry,
        (None, "bedrock-anthropic") => anthropic::Flavor::Bedrock,
        _ => anthropic::Flavor::Direct,
    };
    anthropic::Target {
        flavor,
        base_url: base_url.to_owned(),
        max_tokens: settled.max_tokens,
    }
}
