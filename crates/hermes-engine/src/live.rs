//! The wire a settled target speaks, built in one place for `chat` (which sends through it) and
//! `preview` (which only encodes with it), so the two shape the same body for the same target.

use std::time::SystemTime;

use hermes_providers::anthropic::{self, AnthropicWire};
use hermes_providers::aws::AwsAuth;
use hermes_providers::bedrock::{self, BedrockWire};
use hermes_providers::gemini::{self, GeminiWire};
use hermes_providers::responses::ResponsesWire;
use hermes_providers::{Auth, ChatTransport, Endpoint, HttpChat, Wire};

use crate::settle::Settled;
use crate::simulators::{SIM_HOST, StartedSim};

/// The wire a target speaks.
pub(crate) enum LiveWire {
    Chat(HttpChat),
    Anthropic(AnthropicWire),
    Bedrock(BedrockWire),
    Gemini(GeminiWire),
    Responses(ResponsesWire),
}

/// What a request carries to prove who sends it (none in a preview: auth never changes a body).
#[derive(Default)]
pub(crate) struct Credentials {
    /// The API key or token.
    pub(crate) key: Option<String>,
    /// AWS SigV4 credentials or a Bedrock API key.
    pub(crate) aws: Option<AwsAuth>,
    /// The target is the in-process simulator (its Responses door wants some bearer token).
    pub(crate) sim: bool,
}

/// Where requests to `settled` go: a started simulator's loopback URL (`started`); for a
/// simulator not started — a preview — the loopback host every simulator binds
/// ([`SIM_HOST`]), which is all routing and provenance read of it (the port is never part of a
/// route or of a minter, so each run's fresh port changes nothing); otherwise the settled base
/// URL.
pub(crate) fn live_base(settled: &Settled, started: Option<&StartedSim>) -> String {
    match (started, &settled.sim) {
        (Some(sim), _) => sim.base_url().to_owned(),
        (None, Some(_)) => format!("http://{SIM_HOST}"),
        (None, None) => settled.base_url.clone().unwrap_or_default(),
    }
}

impl LiveWire {
    /// The wire of `settled`, sending to `live_base` through `client` with `credentials`.
    pub(crate) fn new(
        settled: &Settled,
        live_base: &str,
        client: ChatTransport,
        credentials: Credentials,
    ) -> LiveWire {
        let Credentials { key, aws, sim } = credentials;
        match settled.wire {
            Wire::Anthropic => LiveWire::Anthropic(AnthropicWire {
                client,
                target: anthropic_target(settled, live_base),
                auth: match aws {
                    Some(aws) => Some(Auth::Aws(aws, SystemTime::now)),
                    // Vertex takes a bearer token, and so does Foundry given an Entra ID token.
                    None => key.map(|key| {
                        if settled.vertex.is_some() || settled.bearer {
                            Auth::Bearer(key)
                        } else {
                            Auth::Header("x-api-key", key)
                        }
                    }),
                },
            }),
            Wire::BedrockConverse => LiveWire::Bedrock(BedrockWire {
                client,
                target: bedrock_target(settled, live_base),
                auth: aws,
                clock: SystemTime::now,
            }),
            Wire::Chat => LiveWire::Chat(HttpChat {
                client,
                endpoint: Endpoint {
                    base_url: live_base.to_owned(),
                    api_key: key,
                },
            }),
            Wire::Responses => LiveWire::Responses(ResponsesWire {
                client,
                base_url: live_base.to_owned(),
                // The in-process simulator wants a bearer token, as OpenAI does; any will do.
                auth: key
                    .or_else(|| sim.then(|| "hermes-sim".to_owned()))
                    .map(Auth::Bearer),
            }),
            Wire::Gemini => LiveWire::Gemini(GeminiWire {
                client,
                target: gemini_target(settled, live_base),
                auth: key.map(|key| match settled.vertex {
                    Some(_) => Auth::Bearer(key),
                    None => Auth::Header("x-goog-api-key", key),
                }),
            }),
        }
    }

    /// The wire as the driver sees it.
    pub(crate) fn wire(&self) -> &dyn hermes_core::Wire {
        match self {
            LiveWire::Chat(w) => w,
            LiveWire::Anthropic(w) => w,
            LiveWire::Bedrock(w) => w,
            LiveWire::Gemini(w) => w,
            LiveWire::Responses(w) => w,
        }
    }
}

/// The Gemini target of a settled command (Vertex for `vertex-gemini`), with requests going to
/// `base_url`.
fn gemini_target(settled: &Settled, base_url: &str) -> gemini::Target {
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
        max_tokens: settled.max_tokens,
    }
}

/// The Bedrock Converse target of a settled command, with requests going to `base_url`.
fn bedrock_target(settled: &Settled, base_url: &str) -> bedrock::Target {
    bedrock::Target {
        base_url: base_url.to_owned(),
        max_tokens: settled.max_tokens,
    }
}

/// The Anthropic target of a settled command, with requests going to `base_url` (a started
/// simulator's loopback URL, or the settled one).
fn anthropic_target(settled: &Settled, base_url: &str) -> anthropic::Target {
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
