//! hermes-engine: the application layer between the libraries and a front end. It owns the
//! one settlement of provider, model, base URL and key ([`Engine::settle`]) and of the thinking request
//! ([`settle_thinking`]: flags > the stored session's > config's `effort`; a session stores the
//! request it was created with, a resumed one the flags it is given), the [`Engine`] (the
//! route table, a third party's routes first, the wire list — the built-in wires and a third
//! party's ([`Engine::with_wire`]) —, its HTTP clients and simulators; the wire of each settled
//! target is built in one place, `live`, by its descriptor, for turns and previews alike), the
//! chat session
//! ([`ChatSession`]: open, resume, turn, pre-flight, compact, branch, switch model), the store
//! adapter the driver writes through, the summarizer and the compaction → store mapping, the
//! preview body, and where the database lives in a home folder. Wires and storage meet only
//! here.
//!
//! It reads no environment (keys come through a caller's lookup function), parses no argv and
//! prints nothing: the CLI and a server call it alike.
//!
//! It ships no simulator: `--provider sim` runs the [`Simulators`] a front end hands it with
//! [`Engine::with_simulators`] (the `hermes` command line gives it hermes-sim's, a test tool the
//! engine does not depend on); an engine without any refuses `--provider sim` as a usage error
//! saying this build has no simulator.

mod compaction;
mod error;
mod fleet;

mod home;
mod lease;
mod live;
mod log;
mod open;
mod preview;
mod queue;
mod receipt;
mod request;
mod session;
mod settle;
mod simulators;
mod summarize;
mod target;
mod turn;
pub mod wires;

use std::sync::Arc;

use hermes_core::{ReasoningRoute, ResolveOptions, RouteDecision, RouteTable, RouteTarget};

pub use error::{EngineError, ErrorKind, KeyRefusal, Setting};
pub use fleet::DEFAULT_REPROBE_AFTER;
pub use home::{STATE_DB, open_store, open_store_with, store_path};
pub use open::Toolset;
pub use preview::{Preview, PreviewOptions, write_pretty};
pub use receipt::{DEFAULT_RETRY_WINDOW, Idempotency, MAX_KEY_LEN};
pub use request::{Completion, Event, Events, History, Request, ServingEngine, Settings, ToolMode};
pub use session::{ChatSession, OpenOptions, reply_text};
pub use settle::{
    ApiKey, Choice, Defaults, ProviderDefaults, Purpose, Settled, Stored, VERTEX_VARIABLES,
    VertexDefaults, VertexLocation, settle_thinking, sim_url,
};
pub use simulators::{SIM_HOST, SimProfile, Simulators, StartedSim};
pub use target::{AwsLookup, AwsSecrets, KeyLookup, Limits};
pub use wires::{builtin_wires, register_builtin_wires};

pub use hermes_compaction::{CompactionOverrides, SUMMARY_INSTRUCTIONS};

/// What front ends name of the wires, so none needs a direct dependency on hermes-providers:
/// the wire list and a third party's wire ([`Engine::with_wire`]), the registry's provider
/// specs, AWS credentials, and the readers the gateway's doors parse requests with.
pub mod providers {
    pub use hermes_providers::wires::Descriptor;
    pub use hermes_providers::{Access, ProviderSpec, WireDescriptor, Wires};

    /// AWS credentials and the Bedrock runtime's base URL.
    pub mod aws {
        #[cfg(feature = "bedrock")]
        pub use hermes_aws::{AwsAuth, AwsCredentials};
        pub use hermes_providers::aws::runtime_base_url;
    }

    /// The Anthropic wire's reader of Messages requests (the gateway's Messages door).
    #[cfg(feature = "anthropic")]
    pub mod anthropic {
        pub use hermes_wire_anthropic::{TRANSFORMATIONS_KEY, inbound};
    }

    /// The Responses wire's reader of Responses requests (the gateway's Responses door).
    #[cfg(feature = "responses")]
    pub mod responses {
        pub use hermes_wire_responses::inbound;
    }
}

/// What front ends name of the store, so none needs a direct dependency on hermes-store: the
/// store, its errors, location and pool settings, what sessions list, the gateway's keys and
/// rate shares, and the Python original's import.
pub mod store {
    pub use hermes_store::{
        After, ConversationFilter, KeyCache, Location, MAX_PAGE, PoolOptions, SessionMeta,
        SigningKey, Store, StoreError, StoredMessage, StoredThinking, THINKING_KEY, VerdictFilter,
        gateway_key_id, is_python_original, rate_shares, read_original, redact_url,
        revocable_key_id,
    };
}

/// The route table and the wires a front end runs with. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    table: Arc<RouteTable>,
    /// One HTTP client per set of waits, shared by every session and preview of this engine
    /// (and its clones), so requests reuse connections instead of each session dialling anew.
    clients: Arc<std::sync::Mutex<Vec<hermes_providers::ChatTransport>>>,
    /// The sessions this process holds, one in-process lock each (two holders in one process
    /// queue on it rather than polling the store).
    local: lease::Local,
    /// The wires settled targets speak: the built-ins and any a third party added
    /// ([`Engine::with_wire`]).
    wires: Arc<hermes_providers::Wires>,
    /// What `--provider sim` runs (none unless a front end gives some).
    simulators: Option<Arc<dyn Simulators>>,
    /// Whether upstream request spans record message content ([`Engine::with_message_content`]).
    capture_content: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.table.routes().map(|r| r.id()).collect();
        let sims: Vec<&str> = self
            .sim_profiles()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        f.debug_struct("Engine")
            .field("routes", &ids)
            .field("simulators", &sims)
            .finish()
    }
}

impl Engine {
    /// The built-in routes of docs/spec.md §3.
    pub fn builtin() -> Self {
        Engine::with_table(hermes_providers::builtin_table())
    }

    /// An engine over `table`.
    pub fn with_table(table: RouteTable) -> Self {
        Engine {
            table: Arc::new(table),
            clients: Arc::default(),
            local: lease::Local::default(),
            wires: Arc::new(builtin_wires()),
            simulators: None,
            capture_content: false,
        }
    }

    /// Puts a third party's route first: it wins over every built-in row it matches.
    pub fn with_route_first(self, route: Arc<dyn ReasoningRoute>) -> Self {
        let simulators = self.simulators;
        let capture_content = self.capture_content;
        let wires = self.wires;
        let mut table = Arc::unwrap_or_clone(self.table);
        table.register_first(route);
        Engine {
            simulators,
            capture_content,
            wires,
            ..Engine::with_table(table)
        }
    }

    /// Adds a third party's wire, as [`Engine::with_route_first`] adds a route: its providers
    /// are settled onto it (an id it shares with a built-in provider is its own from then on),
    /// `hermes providers` lists them, `chat` sends through the wire its descriptor builds and
    /// `preview --explain` prints its descriptor's lines. A wire with a built-in's id replaces
    /// that one.
    pub fn with_wire(mut self, wire: Arc<dyn hermes_providers::WireDescriptor>) -> Self {
        Arc::make_mut(&mut self.wires).register(wire);
        self
    }

    /// The wires settled targets speak, in registration order: the built-ins of this build,
    /// then those added with [`Engine::with_wire`].
    pub fn wires(&self) -> &hermes_providers::Wires {
        &self.wires
    }

    /// Settles the target of a command for `purpose` (docs/spec.md §8a: flags > stored session >
    /// `config.toml` > registry) on this engine's wires and simulator profiles: the one
    /// settlement every front end calls.
    pub fn settle(
        &self,
        purpose: Purpose,
        choice: &Choice,
        stored: Option<Stored<'_>>,
        defaults: &Defaults,
        key: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settled, EngineError> {
        let sims = self.sim_profiles();
        settle::settle(&self.wires, sims, choice, stored, defaults, purpose, key)
    }

    /// With `simulators` behind `--provider sim` (instead of any it had). Without any,
    /// `--provider sim` is a usage error saying this build has no simulator.
    pub fn with_simulators(mut self, simulators: Arc<dyn Simulators>) -> Self {
        self.simulators = Some(simulators);
        self
    }

    /// With each upstream request's span recording the messages sent and received
    /// (`gen_ai.input.messages`, `gen_ai.output.messages`) when `capture` is true; off by
    /// default. The front end decides (the CLI reads OpenTelemetry's
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`); the engine never reads the
    /// environment.
    pub fn with_message_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// The simulators behind `--provider sim`, if this engine has any.
    pub fn simulators(&self) -> Option<&Arc<dyn Simulators>> {
        self.simulators.as_ref()
    }

    /// Without simulators: `sim` is then no provider (the gateway without `--allow-sim`).
    pub fn without_simulators(mut self) -> Self {
        self.simulators = None;
        self
    }

    /// The simulator profiles `--provider sim` may pick (none without simulators).
    pub fn sim_profiles(&self) -> &[SimProfile] {
        self.simulators.as_deref().map_or(&[], |s| s.profiles())
    }

    /// Starts the simulator of `profile` (a settled target's).
    pub(crate) async fn start_simulator(&self, profile: &str) -> Result<StartedSim, EngineError> {
        let simulators = self
            .simulators
            .as_deref()
            .ok_or_else(|| EngineError::Usage(settle::NO_SIMULATOR.to_owned()))?;
        simulators.start(profile).await.map_err(EngineError::Sim)
    }

    /// The route table, in matching order.
    pub fn table(&self) -> &RouteTable {
        &self.table
    }

    /// Every name `--provider` accepts without a base URL of its own: the ids of the providers
    /// its wires serve (added wires' included), `sim`
    /// (when the engine has simulators), and the provider names the route table's rows and
    /// must-echo families answer to, sorted. Any other name needs a base URL (a provider of the
    /// user's own).
    pub fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .wires
            .providers()
            .into_iter()
            .map(|(p, _)| p.id.to_owned())
            .chain(self.simulators.is_some().then(|| "sim".to_owned()))
            .chain(
                self.table
                    .routes()
                    .flat_map(|r| r.matcher().providers.iter().cloned()),
            )
            .chain(
                self.table
                    .families()
                    .iter()
                    .flat_map(|f| f.matcher.providers.iter().cloned()),
            )
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Whether `name` is one of [`Engine::provider_names`], asked per gateway request without
    /// building and sorting the whole list.
    pub fn knows_provider(&self, name: &str) -> bool {
        // The list holds ids as registered: lowercase, without spaces (the wire registry's own
        // lookup would forgive either).
        if name
            .bytes()
            .any(|b| b.is_ascii_uppercase() || b.is_ascii_whitespace())
        {
            return false;
        }
        (name == "sim" && self.simulators.is_some())
            || self.wires.provider(name).is_some()
            || self
                .table
                .routes()
                .any(|r| r.matcher().providers.iter().any(|p| p == name))
            || self
                .table
                .families()
                .iter()
                .any(|f| f.matcher.providers.iter().any(|p| p == name))
    }

    /// Refuses a provider name this engine does not know, named on the command line or as
    /// config's default, when nothing gives it a base URL (a mistyped `--provider deepseeek`):
    /// "unknown provider", with the nearest known name. A name with a base URL is a provider of
    /// the user's own and stays accepted.
    pub(crate) fn check_provider(
        &self,
        choice: &Choice,
        stored_provider: Option<&str>,
        defaults: &Defaults,
    ) -> Result<(), EngineError> {
        let Some(name) = choice
            .provider
            .as_deref()
            .or(stored_provider)
            .or(defaults.provider.as_deref())
        else {
            return Ok(());
        };
        let name = name.trim().to_lowercase();
        settle::check_built(&self.wires, &name)?;
        let from_flag_or_config = choice.provider.is_some() || stored_provider.is_none();
        if !from_flag_or_config
            || choice.base_url.is_some()
            || defaults.provider(&name).base_url.is_some()
        {
            return Ok(());
        }
        let names = self.provider_names();
        // `sim` without simulators is settlement's usage error, which says so.
        if names.contains(&name) || name == "sim" {
            return Ok(());
        }
        let nearest = names
            .iter()
            .map(|known| (strsim::damerau_levenshtein(&name, known), known))
            .filter(|(distance, _)| *distance <= 2.max(name.len() / 3))
            .min()
            .map(|(_, known)| format!("; did you mean `{known}`?"))
            .unwrap_or_default();
        Err(EngineError::UnknownProvider(format!(
            "unknown provider `{name}`{nearest} (a provider of your own needs a base URL)"
        )))
    }

    /// The route a settled target resolves to (for a simulator, its stand-in provider).
    pub fn resolve(&self, settled: &Settled) -> RouteDecision {
        self.resolve_live(settled, settled.base_url.as_deref())
    }

    /// The route for `settled` when requests go to `live_base` (a started simulator's loopback
    /// URL instead of its symbolic `sim://` one).
    pub(crate) fn resolve_live(&self, settled: &Settled, live_base: Option<&str>) -> RouteDecision {
        let target = RouteTarget::new(&settled.route_provider, live_base, &settled.model);
        self.table.resolve(
            &target,
            ResolveOptions {
                reasoning_echo: settled.reasoning_echo,
            },
        )
    }

    /// The engine's HTTP client for `waits` (built on first use, then shared: a clone shares
    /// the connection pool).
    pub(crate) fn client(
        &self,
        waits: hermes_providers::Waits,
    ) -> Result<hermes_providers::ChatTransport, EngineError> {
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.iter().find(|c| c.waits() == waits) {
            return Ok(client.clone());
        }
        let client = hermes_providers::ChatTransport::with_waits(waits)?;
        clients.push(client.clone());
        Ok(client)
    }
}
