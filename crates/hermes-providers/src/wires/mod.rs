//! The wire registry, after sqlx's driver list: one [`WireDescriptor`] per wire (its id, its
//! name, the providers it serves, how to build it for a target and how to explain a body; each
//! wire crate has its own [`Descriptor`], e.g. `hermes_wire_chat::DESCRIPTOR`), and
//! [`Wires`], the list a front end runs with (the engine's: the built-ins its features choose,
//! registered by `hermes_engine::register_builtin_wires`, plus any a third party adds).

use std::sync::Arc;

use hermes_core::{Message, RequestParts, TransportError, Wire};

use crate::transport::ChatTransport;

/// One provider of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderSpec {
    /// Provider id (`--provider`).
    pub id: &'static str,
    /// Default base URL; `None` when `--base-url` is required (or [`Access`] derives it).
    pub base_url: Option<&'static str>,
    /// Environment variable holding the API key; `None` when no key is needed.
    pub key_var: Option<&'static str>,
    /// What settlement needs of the provider beyond its key variable.
    pub access: Access,
}

/// How a provider is reached beyond its key variable: what the engine's settlement needs of it
/// (docs/spec.md §8a), declared by the wire that serves it, so that the engine names no
/// provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// An API key in `key_var`, required unless the endpoint is on this machine.
    Key,
    /// An API key in `key_var` when one is set: the server (the user's own) may need none.
    OptionalKey,
    /// A resource of the user's own: its base URL is required, shaped like `example`
    /// (`RESOURCE` the part that is the user's); the key in `key_var`, else a bearer token in
    /// `token_var` (Azure Foundry's Microsoft Entra ID token).
    Resource {
        /// The base URL's shape, e.g. `https://RESOURCE.services.ai.azure.com/anthropic`.
        example: &'static str,
        /// Where a bearer token is read when the key is not set.
        token_var: &'static str,
        /// What that token is, as a missing key's error names it ("a Microsoft Entra ID
        /// token").
        token: &'static str,
    },
    /// AWS credentials (SigV4 or a Bedrock API key, from the AWS environment and shared files),
    /// signed for a region; the base URL is the region's Bedrock runtime host.
    Aws,
    /// A Google Cloud project and region (Vertex AI): each from config, else from the first of
    /// its variables that is set (the region defaults to `global`); a bearer token in `key_var`.
    GoogleCloud {
        /// The variables naming the project, in order of preference.
        project: [&'static str; 2],
        /// The variables naming the region, in order of preference.
        region: [&'static str; 2],
    },
}

/// Why a body could not be explained: the wire's own encode error (its text is what
/// `hermes preview --explain` prints after "could not encode the request: ").
pub type ExplainError = Box<dyn std::error::Error + Send + Sync>;

/// One wire protocol: what the engine needs to settle a provider onto it, build it for a
/// target and explain its bodies. A third party implements it for a wire of its own and adds
/// it with `hermes_engine::Engine::with_wire`.
pub trait WireDescriptor: Send + Sync {
    /// The wire's id: what [`Wire::id`] of every wire [`WireDescriptor::build`] makes returns,
    /// the name its verdicts are stored under and what `hermes providers` prints as a provider's
    /// wire (one vocabulary).
    fn id(&self) -> &'static str;

    /// The name shown to people ("Anthropic Messages").
    fn name(&self) -> &'static str;

    /// The providers that speak this wire (`--provider` ids, default base URLs, key
    /// variables).
    fn providers(&self) -> &[ProviderSpec];

    /// The wire for `target`, sending through `client` with `credentials`. No request is sent
    /// here: a preview builds the wire only to encode with it.
    fn build(
        &self,
        target: &WireTarget,
        client: ChatTransport,
        credentials: Credentials,
    ) -> Box<dyn Wire>;

    /// `hermes preview --explain`'s lines for the body of `parts` on `target`: why each
    /// carrier is present, padded or absent and what stays out. `stored` is the history as
    /// stored, before the wire copy pairs every tool call with a result.
    fn explain(
        &self,
        target: &WireTarget,
        parts: &RequestParts<'_>,
        stored: &[Message],
    ) -> Result<Vec<String>, ExplainError>;

    /// Leaves out of `history` (a gateway client's history lined up with the store) the
    /// client's own thinking blocks that a target of this wire at `base_url` must not get
    /// (docs/spec.md §10), and returns how many. The default leaves out every one: only a wire
    /// whose provider verifies its own signatures keeps them (the Anthropic wire's rule).
    fn client_blocks(&self, history: &mut [Message], base_url: &str) -> usize {
        let _ = base_url;
        crate::client_blocks::withhold_all(history, self.id())
    }
}

/// How a [`Descriptor`] builds its wire ([`WireDescriptor::build`]).
pub type BuildFn = fn(&WireTarget, ChatTransport, Credentials) -> Box<dyn Wire>;

/// What [`WireDescriptor::explain`] returns.
pub type Explained = Result<Vec<String>, ExplainError>;

/// How a [`Descriptor`] explains a body ([`WireDescriptor::explain`]).
pub type ExplainFn = fn(&WireTarget, &RequestParts<'_>, &[Message]) -> Explained;

/// How a [`Descriptor`] leaves a client's own thinking blocks out of a history
/// ([`WireDescriptor::client_blocks`]: the history, the target's base URL; how many left out).
pub type ClientBlocksFn = fn(&mut [Message], &str) -> usize;

/// A wire descriptor as data: what every built-in one is, and the shortest way to describe a
/// wire of one's own (a `const`, its two functions given as closures).
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    /// [`WireDescriptor::id`].
    pub id: &'static str,
    /// [`WireDescriptor::name`].
    pub name: &'static str,
    /// [`WireDescriptor::providers`].
    pub providers: &'static [ProviderSpec],
    /// [`WireDescriptor::build`].
    pub build: BuildFn,
    /// [`WireDescriptor::explain`].
    pub explain: ExplainFn,
    /// [`WireDescriptor::client_blocks`]; `None` for its default (every such block left out).
    pub client_blocks: Option<ClientBlocksFn>,
}

impl WireDescriptor for Descriptor {
    fn id(&self) -> &'static str {
        self.id
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn providers(&self) -> &[ProviderSpec] {
        self.providers
    }

    fn build(
        &self,
        target: &WireTarget,
        client: ChatTransport,
        auth: Credentials,
    ) -> Box<dyn Wire> {
        (self.build)(target, client, auth)
    }

    fn explain(
        &self,
        target: &WireTarget,
        parts: &RequestParts<'_>,
        stored: &[Message],
    ) -> Result<Vec<String>, ExplainError> {
        (self.explain)(target, parts, stored)
    }

    fn client_blocks(&self, history: &mut [Message], base_url: &str) -> usize {
        match self.client_blocks {
            Some(client_blocks) => client_blocks(history, base_url),
            None => crate::client_blocks::withhold_all(history, self.id),
        }
    }
}

impl std::fmt::Debug for dyn WireDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WireDescriptor({})", self.id())
    }
}

/// Where a settled target's requests go, in the terms a wire is built from (the engine fills
/// it from its settlement).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireTarget {
    /// The provider id (lowercase; `vertex-anthropic`, `bedrock-anthropic`, … pick a door).
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Where requests go (a started simulator's loopback URL, or the settled base URL).
    pub base_url: String,
    /// The output limit configured for this model, if any.
    pub max_tokens: Option<u32>,
    /// The Google Cloud project and region (the Vertex providers only).
    pub vertex: Option<Vertex>,
    /// The key is a bearer token sent where the provider's own key header would go (Foundry
    /// with a Microsoft Entra ID token).
    pub bearer: bool,
}

impl WireTarget {
    /// `model` of `provider` at `base_url`, with no output limit, no Vertex location and the
    /// provider's own key header.
    pub fn new(provider: &str, model: &str, base_url: &str) -> Self {
        WireTarget {
            provider: provider.to_owned(),
            model: model.to_owned(),
            base_url: base_url.to_owned(),
            max_tokens: None,
            vertex: None,
            bearer: false,
        }
    }
}

/// A Vertex AI location: the Google Cloud project and the region (or `global`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vertex {
    /// The project.
    pub project: String,
    /// The region, or `global`.
    pub region: String,
}

/// What a request carries to prove who sends it (none in a preview: auth never changes a
/// body). `Debug` shows no secret.
#[derive(Clone, Default)]
pub struct Credentials {
    /// The API key or token.
    pub key: Option<String>,
    /// What signs each request instead of the key (the Bedrock wires' SigV4 or Bedrock API
    /// key, `hermes_aws::AwsSigner`).
    pub signer: Option<Arc<dyn crate::transport::Signer>>,
    /// The target is the in-process simulator (its Responses door wants some bearer token).
    pub sim: bool,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Credentials");
        d.field("key", &self.key.as_ref().map(|_| "<redacted>"));
        d.field("signer", &self.signer);
        d.field("sim", &self.sim).finish()
    }
}

/// The wires a front end runs with, in registration order. A provider id belongs to the last
/// wire registered that lists it, so an added wire may take over a built-in provider id.
#[derive(Clone, Default)]
pub struct Wires {
    list: Vec<Arc<dyn WireDescriptor>>,
}

impl std::fmt::Debug for Wires {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|w| w.id()))
            .finish()
    }
}

impl Wires {
    /// Adds `wire` after the others (a wire with the same id is replaced in its place).
    pub fn register(&mut self, wire: Arc<dyn WireDescriptor>) {
        match self.list.iter_mut().find(|w| w.id() == wire.id()) {
            Some(slot) => *slot = wire,
            None => self.list.push(wire),
        }
    }

    /// Every wire, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn WireDescriptor>> {
        self.list.iter()
    }

    /// The wire with id `id`.
    pub fn get(&self, id: &str) -> Option<&Arc<dyn WireDescriptor>> {
        self.list.iter().find(|w| w.id() == id)
    }

    /// The provider `id` (trimmed, case-insensitive) and the wire that serves it.
    pub fn provider(&self, id: &str) -> Option<(&ProviderSpec, &Arc<dyn WireDescriptor>)> {
        let id = id.trim().to_lowercase();
        self.list
            .iter()
            .rev()
            .find_map(|w| w.providers().iter().find(|p| p.id == id).map(|p| (p, w)))
    }

    /// Every provider with the wire that serves it, in registration order (each id once).
    pub fn providers(&self) -> Vec<(&ProviderSpec, &Arc<dyn WireDescriptor>)> {
        self.list
            .iter()
            .enumerate()
            .flat_map(|(at, w)| {
                w.providers()
                    .iter()
                    .filter(move |p| {
                        !self.list[at + 1..]
                            .iter()
                            .any(|later| later.providers().iter().any(|q| q.id == p.id))
                    })
                    .map(move |p| (p, w))
            })
            .collect()
    }
}

/// A descriptor of `id`, `name` and `providers`, built by `build` and explained by `explain`
/// (a client's own thinking blocks all left out: the default rule), as the chat wire's is.
pub const fn wire(
    id: &'static str,
    name: &'static str,
    providers: &'static [ProviderSpec],
    build: BuildFn,
    explain: ExplainFn,
) -> Descriptor {
    Descriptor {
        id,
        name,
        providers,
        build,
        explain,
        client_blocks: None,
    }
}

impl ChatTransport {
    /// POSTs `request`'s JSON body to `url` with `auth` and returns the whole reply body: the
    /// HTTP a wire of one's own sends through (the engine's shared client and its waits, no
    /// redirect to another origin, a non-2xx answer as [`TransportError::Http`] with its body —
    /// the key redacted from it — for the refusal classifier, a connect failure named by its
    /// cause). `wire` names the wire in the debug log. Not for a streamed reply.
    pub async fn post_json(
        &self,
        wire: &str,
        url: &str,
        request: &hermes_core::Outgoing,
        auth: Option<&crate::transport::Auth>,
    ) -> Result<String, TransportError> {
        let response = self.send_request(wire, url, request, auth, &[]).await?;
        crate::transport::read_text(response).await
    }
}
