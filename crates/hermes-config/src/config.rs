//! `$HERMES_HOME/config.toml`: default provider, model and effort, per-provider base URL, key
//! variable, model and `reasoning_echo`, and the `[limits]`, `[compaction]`, `[vertex]`,
//! `[bedrock]`, `[store]`, `[verdicts]`, `[max_tokens]` and `[serve]` sections. An invalid file is
//! an error naming the line and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use hermes_core::Effort;

use crate::error::ConfigError;

/// One provider's overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Base URL instead of the registry's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Environment variable holding the key, instead of the registry's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_var: Option<String>,
    /// Default model for this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Pad `reasoning_content` on every assistant turn (docs/spec.md §3a), on routes that read it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoning_echo: bool,
}

/// The whole file. The values whose line an error names (`effort`, `[store] url`,
/// `max_connections`, `acquire_timeout`, `[verdicts] reprobe_after`) are read through methods
/// ([`Config::effort`], [`StoreSection::url`], [`StoreSection::pool`], [`Config::reprobe_after`]),
/// so the parser's span type stays out of this crate's API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Default model (for the default provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Default effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) effort: Option<toml::Spanned<String>>,
    /// Per-provider settings, by provider id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The folder the model's file tools may read (default: the working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// Send API keys over plain `http://` to hosts that are neither loopback nor private.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure_http: bool,
    /// Bounded waits (`[limits]`, seconds).
    #[serde(default, skip_serializing_if = "LimitsSection::is_empty")]
    pub limits: LimitsSection,
    /// Compaction overrides (defaults per model family otherwise).
    #[serde(default, skip_serializing_if = "CompactionSection::is_empty")]
    pub compaction: CompactionSection,
    /// `[vertex]`: Google Cloud project and region of the Vertex providers.
    #[serde(default, skip_serializing_if = "VertexSection::is_empty")]
    pub vertex: VertexSection,
    /// `[bedrock]`: the AWS region of the Bedrock providers.
    #[serde(default, skip_serializing_if = "BedrockSection::is_empty")]
    pub bedrock: BedrockSection,
    /// `[store]`: where sessions live (`HERMES_DATABASE_URL` wins over it).
    #[serde(default, skip_serializing_if = "StoreSection::is_empty")]
    pub store: StoreSection,
    /// `[verdicts]`: how long a verdict the whole store shares holds before it is re-probed.
    #[serde(default, skip_serializing_if = "VerdictsSection::is_empty")]
    pub verdicts: VerdictsSection,
    /// `[max_tokens]`: the output limit per model family on the native wires (Anthropic
    /// `max_tokens`, Converse `maxTokens`, Gemini `maxOutputTokens`), keyed by a substring of
    /// the model id (the longest key the id contains wins), e.g. `"claude-opus-4-8" = 64000`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tokens: BTreeMap<String, std::num::NonZeroU32>,
    /// `[serve]`: the gateway (`hermes serve`).
    #[serde(default, skip_serializing_if = "ServeSection::is_empty")]
    pub serve: ServeSection,
}

/// Accessors of keys read with their place in the file (`toml::Spanned`): each
/// `name -> Type = read;` is `pub fn name(&self) -> Option<Type>`, the key's value as `read`
/// (one of [`limit`], [`big_limit`], [`plain`], [`duration`]) takes it.
macro_rules! spanned_accessors {
    ($($(#[$doc:meta])* $name:ident -> $ty:ty = $read:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self) -> Option<$ty> {
                $read(self.$name.as_ref())
            }
        )*
    };
}

/// Declares a section that holds a tenant's limits and policy — the keys `[serve]` (every
/// tenant's default) and `[serve.tenants.NAME]` (one tenant's override) share — between its
/// own leading and trailing keys (so the keys keep their order in `config show`), with their
/// accessors and [`zero_limits`](TenantSection::zero_limits) for the check that refuses 0. The
/// policy's keys are listed once, in the second rule; each is optional (absent when unset, and
/// left out when written).
macro_rules! policy_section {
    (
        @expand [$($meta:tt)*] $name:ident [$($head:tt)*]
        [$($(#[$pmeta:meta])* $pvis:vis $policy:ident: $pty:ty;)*]
        [$($tail:tt)*]
    ) => {
        $($meta)*
        pub struct $name {
            $($head)*
            $(
                $(#[$pmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                $pvis $policy: Option<$pty>,
            )*
            $($tail)*
        }

        impl $name {
            spanned_accessors! {
                /// Turns a tenant may start per minute, if set here (in `[serve]`: every
                /// tenant's default).
                requests_per_minute -> std::num::NonZeroU32 = limit;
                /// Turns a tenant may run at once, if set here.
                max_concurrent -> std::num::NonZeroU32 = limit;
                /// Tokens per minute, if set here.
                tokens_per_minute -> std::num::NonZeroU64 = big_limit;
                /// Tokens per UTC day, if set here.
                tokens_per_day -> std::num::NonZeroU64 = big_limit;
                /// The `max_tokens` cap, if set here.
                max_tokens_cap -> u32 = plain;
            }

            /// Each limit's key with its value and where it stands, for the check that
            /// refuses 0.
            fn zero_limits(&self) -> [(&'static str, Option<(u64, std::ops::Range<usize>)>); 5] {
                let u32_at = |v: &Option<toml::Spanned<u32>>| {
                    v.as_ref().map(|v| (u64::from(*v.get_ref()), v.span()))
                };
                let u64_at =
                    |v: &Option<toml::Spanned<u64>>| v.as_ref().map(|v| (*v.get_ref(), v.span()));
                [
                    ("requests_per_minute", u32_at(&self.requests_per_minute)),
                    ("max_concurrent", u32_at(&self.max_concurrent)),
                    ("tokens_per_minute", u64_at(&self.tokens_per_minute)),
                    ("tokens_per_day", u64_at(&self.tokens_per_day)),
                    ("max_tokens_cap", u32_at(&self.max_tokens_cap)),
                ]
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$hmeta:meta])* $hvis:vis $head:ident: $hty:ty,)*
            ..policy..
            $($(#[$tmeta:meta])* $tvis:vis $tail:ident: $tty:ty,)*
        }
    ) => {
        policy_section! {
            @expand [$(#[$meta])*] $name [$($(#[$hmeta])* $hvis $head: $hty,)*]
            [
                /// Turns a tenant may start per minute, across every replica (default 600).
                pub(crate) requests_per_minute: toml::Spanned<u32>;
                /// Turns a tenant may run at once, across every replica (default 32).
                pub(crate) max_concurrent: toml::Spanned<u32>;
                /// Tokens (input + output, from the stored usage) a tenant may spend per
                /// minute, across every replica (default 2,000,000).
                pub(crate) tokens_per_minute: toml::Spanned<u64>;
                /// Tokens a tenant may spend per UTC day: its budget (default 50,000,000).
                pub(crate) tokens_per_day: toml::Spanned<u64>;
                /// The largest `max_tokens` a request may ask for; above it, 403 (default
                /// 128,000).
                pub(crate) max_tokens_cap: toml::Spanned<u32>;
                /// Patterns (`*` any run of characters) of the `provider/model` a request may
                /// resolve to (default `["*"]`).
                pub allow_models: Vec<String>;
                /// Patterns of the `anthropic-beta` values a request may send (default none).
                pub allow_betas: Vec<String>;
                /// Patterns of the server tools (by `type`: `web_search_*`,
                /// `code_execution_*`, OpenAI's built-in tools) a request may define (default
                /// none).
                pub allow_server_tools: Vec<String>;
                /// Refuse (400) a request that names no partition (default false).
                pub require_partition: bool;
            ]
            [$($(#[$tmeta])* $tvis $tail: $tty,)*]
        }
    };
}

policy_section! {
    /// `[serve]`: the gateway's address, request cap, limits, retention, model aliases and
    /// metrics token. The values whose line an error names are read through methods; `Debug`
    /// shows the token as `***`.
    #[derive(Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
    #[serde(deny_unknown_fields)]
    pub struct ServeSection {
        /// The address to listen on (default `127.0.0.1:8642`; `--listen` wins).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub listen: Option<String>,
        /// The largest request body in bytes (default 32 MiB; 413 above it, before parsing).
        /// `max_body`, its earlier name, is accepted too.
        #[serde(default, alias = "max_body", skip_serializing_if = "Option::is_none")]
        pub max_request_bytes: Option<std::num::NonZeroUsize>,
        /// The threads that serve requests (default: the CPUs the process may run on, after its
        /// affinity mask and its cgroup's CPU quota; `--workers` wins).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub workers: Option<std::num::NonZeroUsize>,
        ..policy..
        /// How long a request body may take to arrive once the gateway reads it (`30s`, the
        /// default; 408 after).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) body_read_timeout: Option<toml::Spanned<String>>,
        /// How long a tenant's conversation is kept after its last update (`30d`, `12h`, …);
        /// older ones are deleted by `hermes serve` (default: kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) retention: Option<toml::Spanned<String>>,
        /// How long a request that names no `Idempotency-Key` and repeats the previous one byte for
        /// byte is answered from the store (`10m` by default; `0s`: never).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) retry_window: Option<toml::Spanned<String>>,
        /// Per-tenant overrides of the limits and policy (`[serve.tenants.NAME]`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub tenants: BTreeMap<String, TenantSection>,
        /// Model aliases: a name clients send → `provider/model`; a key with `*` is a pattern
        /// (`claude-*`; exact names win, then the most literal pattern), and a target `provider/*`
        /// forwards the client's own model name.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub models: BTreeMap<String, String>,
        /// Each door's default model (`chat`, `messages` → `provider/model`): where a model name
        /// nothing else names goes.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub default_models: BTreeMap<String, String>,
        /// The bearer token `GET /metrics` requires. Without one the metrics are served only on a
        /// loopback address (they name tenants). A secret: `config show` prints `***`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub metrics_token: Option<String>,
        /// Serve the inspector at `/ui` (pages over the admin API, for an admin key: `hermes
        /// serve keys create --admin`); off by default (`--ui` turns it on too).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub ui: bool,
    }
}

impl std::fmt::Debug for ServeSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeSection")
            .field("listen", &self.listen)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("workers", &self.workers)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("max_concurrent", &self.max_concurrent)
            .field("tokens_per_minute", &self.tokens_per_minute)
            .field("tokens_per_day", &self.tokens_per_day)
            .field("max_tokens_cap", &self.max_tokens_cap)
            .field("allow_models", &self.allow_models)
            .field("allow_betas", &self.allow_betas)
            .field("allow_server_tools", &self.allow_server_tools)
            .field("require_partition", &self.require_partition)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("retention", &self.retention)
            .field("retry_window", &self.retry_window)
            .field("tenants", &self.tenants)
            .field("models", &self.models)
            .field("default_models", &self.default_models)
            .field("metrics_token", &self.metrics_token.as_ref().map(|_| "***"))
            .field("ui", &self.ui)
            .finish()
    }
}

policy_section! {
    /// `[serve.tenants.NAME]`: one tenant's limits and policy; an unset one is `[serve]`'s (and
    /// `[serve]`'s unset one the built-in default).
    #[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
    #[serde(deny_unknown_fields)]
    pub struct TenantSection {
        ..policy..
    }
}

/// A limit's value (validated non-zero when the file was read).
fn limit(value: Option<&toml::Spanned<u32>>) -> Option<std::num::NonZeroU32> {
    value.and_then(|v| std::num::NonZeroU32::new(*v.get_ref()))
}

/// A token limit's value (validated non-zero when the file was read).
fn big_limit(value: Option<&toml::Spanned<u64>>) -> Option<std::num::NonZeroU64> {
    value.and_then(|v| std::num::NonZeroU64::new(*v.get_ref()))
}

/// A value as written.
fn plain<T: Copy>(value: Option<&toml::Spanned<T>>) -> Option<T> {
    value.map(|v| *v.get_ref())
}

/// A duration's value (validated when the file was read).
fn duration(value: Option<&toml::Spanned<String>>) -> Option<std::time::Duration> {
    value.and_then(|d| humantime::parse_duration(d.get_ref().trim()).ok())
}

impl ServeSection {
    fn is_empty(&self) -> bool {
        *self == ServeSection::default()
    }

    /// The address to listen on: `listen`, else `default` (the gateway's own default).
    pub fn listen_or(&self, default: &str) -> Result<std::net::SocketAddr, ConfigError> {
        let text = self.listen.as_deref().unwrap_or(default);
        text.parse().map_err(|source| ConfigError::Listen {
            text: text.to_owned(),
            source,
        })
    }

    spanned_accessors! {
        /// `retry_window` (validated when the file was read); `None`: the gateway's default.
        retry_window -> std::time::Duration = duration;
        /// The body-read deadline (validated when the file was read), if set.
        body_read_timeout -> std::time::Duration = duration;
        /// How long a tenant's conversation is kept after its last update (validated when the
        /// file was read); `None`: kept.
        retention -> std::time::Duration = duration;
    }
}

/// `[store]`: the database sessions live in. `Debug` shows the URL with its password replaced
/// by `***`.
#[derive(Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=…]` (the password may instead come
    /// from `PGPASSWORD` or `~/.pgpass`) or `sqlite://PATH`; the SQLite file in `$HERMES_HOME`
    /// when unset. A secret: `config show` prints it redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<toml::Spanned<String>>,
    /// Connections in the store's pool (default 4 on an SQLite file, 8 on PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_connections: Option<toml::Spanned<u32>>,
    /// Seconds an SQLite write waits for another process's lock before "database is locked"
    /// (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_timeout: Option<u64>,
    /// Seconds a request waits for a free connection of the pool (default 30; 3 in
    /// `hermes serve`, [`StoreSection::gateway_pool`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) acquire_timeout: Option<toml::Spanned<u64>>,
}

impl std::fmt::Debug for StoreSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSection")
            .field("url", &self.url().map(hermes_engine::store::redact_url))
            .field("max_connections", &self.max_connections)
            .field("busy_timeout", &self.busy_timeout)
            .field("acquire_timeout", &self.acquire_timeout)
            .finish()
    }
}

impl StoreSection {
    fn is_empty(&self) -> bool {
        *self == StoreSection::default()
    }

    /// `url`, as written (a secret: show it through [`hermes_engine::store::redact_url`]).
    pub fn url(&self) -> Option<&str> {
        self.url.as_ref().map(|u| u.get_ref().as_str())
    }

    /// The store's pool settings (defaults where unset).
    pub fn pool(&self) -> hermes_engine::store::PoolOptions {
        self.pool_waiting(hermes_engine::store::PoolOptions::ACQUIRE_TIMEOUT)
    }

    /// A gateway's pool settings: [`StoreSection::pool`], but `acquire_timeout` defaults to
    /// [`PoolOptions::GATEWAY_ACQUIRE_TIMEOUT`](hermes_engine::store::PoolOptions::GATEWAY_ACQUIRE_TIMEOUT)
    /// (3 s), so a request answers "unavailable" soon while the database is away.
    pub fn gateway_pool(&self) -> hermes_engine::store::PoolOptions {
        self.pool_waiting(hermes_engine::store::PoolOptions::GATEWAY_ACQUIRE_TIMEOUT)
    }

    /// The pool settings, `acquire_timeout` defaulting to `acquire`.
    fn pool_waiting(&self, acquire: std::time::Duration) -> hermes_engine::store::PoolOptions {
        let d = hermes_engine::store::PoolOptions {
            acquire_timeout: acquire,
            ..hermes_engine::store::PoolOptions::default()
        };
        hermes_engine::store::PoolOptions {
            max_connections: self.max_connections.as_ref().map(|n| *n.get_ref()),
            busy_timeout: self
                .busy_timeout
                .map_or(d.busy_timeout, std::time::Duration::from_secs),
            acquire_timeout: self
                .acquire_timeout
                .as_ref()
                .map_or(d.acquire_timeout, |s| {
                    std::time::Duration::from_secs(*s.get_ref())
                }),
        }
    }
}

/// `[verdicts]`: fleet verdicts (shared by every session of the store).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VerdictsSection {
    /// How old a fleet verdict may grow before a session re-probes it once (`30d`, `12h`,
    /// `90s`, …; default 30 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reprobe_after: Option<toml::Spanned<String>>,
}

impl VerdictsSection {
    fn is_empty(&self) -> bool {
        self.reprobe_after.is_none()
    }
}

/// `[bedrock]`: where `bedrock` and `bedrock-anthropic` requests go (credentials come from the
/// AWS environment and shared files, never from this file).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BedrockSection {
    /// The AWS region (`us-east-1`, …); else `AWS_REGION`, `AWS_DEFAULT_REGION` or the
    /// profile's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

impl BedrockSection {
    fn is_empty(&self) -> bool {
        self.region.is_none()
    }
}

/// `[vertex]`: where `vertex-anthropic` (and later `vertex-gemini`) requests go.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VertexSection {
    /// The Google Cloud project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The region (`us-east5`, …) or `global` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

impl VertexSection {
    fn is_empty(&self) -> bool {
        self.project.is_none() && self.region.is_none()
    }
}

/// `[limits]`: bounded waits, in seconds (defaults: connect 15, first_byte 120, idle 120,
/// turn 1800, lease_wait 10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// To connect to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<u64>,
    /// From a request to the first byte of its response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte: Option<u64>,
    /// Silence between two chunks of a streamed reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<u64>,
    /// A whole user turn, tool loop included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// Waiting for another process to finish with a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_wait: Option<u64>,
}

impl LimitsSection {
    fn is_empty(&self) -> bool {
        *self == LimitsSection::default()
    }

    /// Every key with its effective value (the default where unset), for `config show`.
    pub fn effective(&self) -> LimitsSection {
        let limits = self.limits();
        LimitsSection {
            connect: Some(limits.connect.as_secs()),
            first_byte: Some(limits.first_byte.as_secs()),
            idle: Some(limits.idle.as_secs()),
            turn: Some(limits.turn.as_secs()),
            lease_wait: Some(limits.lease_wait.as_secs()),
        }
    }

    /// As the engine's limits (defaults where unset).
    pub fn limits(&self) -> hermes_engine::Limits {
        let d = hermes_engine::Limits::default();
        let secs = |v: Option<u64>, default: std::time::Duration| {
            v.map_or(default, std::time::Duration::from_secs)
        };
        hermes_engine::Limits::new(
            secs(self.connect, d.connect),
            secs(self.first_byte, d.first_byte),
            secs(self.idle, d.idle),
            secs(self.turn, d.turn),
            secs(self.lease_wait, d.lease_wait),
        )
    }
}

/// `[compaction]`: overrides of the per-model defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSection {
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<usize>,
    /// Tokens reserved for the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<usize>,
    /// Compact when the estimate reaches this percentage of (context window − max output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_percent: Option<u8>,
    /// Messages never summarised at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_first: Option<usize>,
    /// Messages never summarised at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_last: Option<usize>,
    /// Recent tool outputs kept when old ones are cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_tool_outputs: Option<usize>,
    /// Largest summary, in estimated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_max_tokens: Option<usize>,
    /// Input tokens past which the provider compacts by itself where it can (docs/spec.md §7:
    /// OpenAI Responses' `compact_threshold`, Claude's `compact_20260112` trigger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_threshold: Option<u64>,
}

impl CompactionSection {
    fn is_empty(&self) -> bool {
        *self == CompactionSection::default()
    }

    /// As the compaction crate's overrides.
    pub fn overrides(&self) -> hermes_engine::CompactionOverrides {
        hermes_engine::CompactionOverrides {
            context_window: self.context_window,
            max_output: self.max_output,
            trigger_percent: self.trigger_percent,
            protect_first: self.protect_first,
            protect_last: self.protect_last,
            keep_tool_outputs: self.keep_tool_outputs,
            summary_max_tokens: self.summary_max_tokens,
            provider_threshold: self.provider_threshold,
        }
    }
}

impl Config {
    /// How old a fleet verdict may grow before it is re-probed (validated when the file was
    /// read).
    pub fn reprobe_after(&self) -> std::time::Duration {
        duration(self.verdicts.reprobe_after.as_ref())
            .unwrap_or(hermes_engine::DEFAULT_REPROBE_AFTER)
    }

    /// A copy fit to print: the store URL's password replaced by `***`.
    pub fn redacted(&self) -> Config {
        let mut shown = self.clone();
        if let Some(url) = &mut shown.store.url {
            *url.get_mut() = hermes_engine::store::redact_url(url.get_ref());
        }
        if let Some(token) = &mut shown.serve.metrics_token {
            *token = "***".to_owned();
        }
        shown
    }

    /// The default effort (validated when the file was read).
    pub fn effort(&self) -> Option<Effort> {
        self.effort
            .as_ref()
            .and_then(|e| Effort::parse(e.get_ref()))
    }

    /// As the engine's settlement defaults.
    pub fn defaults(&self) -> hermes_engine::Defaults {
        let mut defaults = hermes_engine::Defaults::default();
        defaults.provider = self.provider.clone();
        defaults.model = self.model.clone();
        defaults.allow_insecure_http = self.allow_insecure_http;
        defaults.vertex = hermes_engine::VertexDefaults::new(
            self.vertex.project.clone(),
            self.vertex.region.clone(),
        )
        .with_variables(|var| std::env::var(var).ok());
        defaults.aws_region = self.bedrock.region.clone();
        defaults.effort = self.effort();
        defaults.max_tokens = self
            .max_tokens
            .iter()
            .map(|(family, max)| (family.trim().to_lowercase(), max.get()))
            .collect();
        defaults.providers = self
            .providers
            .iter()
            .map(|(id, p)| {
                (
                    id.trim().to_lowercase(),
                    hermes_engine::ProviderDefaults::new(
                        p.base_url.clone(),
                        p.key_var.clone(),
                        p.model.clone(),
                        p.reasoning_echo,
                    ),
                )
            })
            .collect();
        defaults
    }
}

/// `$HERMES_HOME/config.toml`.
pub fn path(home: &Path) -> PathBuf {
    home.join("config.toml")
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses a config text; errors name the file, the line and the key.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let invalid = |line: Option<usize>, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let config: Config = toml::from_str(text).map_err(|e| {
        invalid(
            e.span().map(|s| line_of(text, s.start)),
            e.message().to_owned(),
        )
    })?;
    if let Some(effort) = &config.effort
        && Effort::parse(effort.get_ref()).is_none()
    {
        return Err(invalid(
            Some(line_of(text, effort.span().start)),
            format!(
                "`effort = {:?}`: expected one of {}",
                effort.get_ref(),
                Effort::ALL.map(Effort::as_str).join(", ")
            ),
        ));
    }
    if let Some(age) = &config.verdicts.reprobe_after
        && let Err(e) = humantime::parse_duration(age.get_ref().trim())
    {
        return Err(invalid(
            Some(line_of(text, age.span().start)),
            format!(
                "`reprobe_after = {:?}`: {e} (write e.g. \"30d\", \"12h\" or \"90s\")",
                age.get_ref(),
            ),
        ));
    }
    if let Some(age) = &config.serve.retention {
        match humantime::parse_duration(age.get_ref().trim()) {
            Ok(d) if !d.is_zero() => {}
            Ok(_) => {
                return Err(invalid(
                    Some(line_of(text, age.span().start)),
                    format!(
                        "[serve] retention = {:?}: keep conversations for longer than 0 (write e.g. \"30d\")",
                        age.get_ref()
                    ),
                ));
            }
            Err(e) => {
                return Err(invalid(
                    Some(line_of(text, age.span().start)),
                    format!(
                        "[serve] retention = {:?}: {e} (write e.g. \"30d\", \"12h\" or \"90s\")",
                        age.get_ref()
                    ),
                ));
            }
        }
    }
    if let Some(window) = &config.serve.retry_window
        && let Err(e) = humantime::parse_duration(window.get_ref().trim())
    {
        return Err(invalid(
            Some(line_of(text, window.span().start)),
            format!(
                "[serve] retry_window = {:?}: {e} (write e.g. \"10m\", \"90s\" or \"0s\")",
                window.get_ref()
            ),
        ));
    }
    if let Some(wait) = &config.serve.body_read_timeout {
        let problem = match humantime::parse_duration(wait.get_ref().trim()) {
            Ok(d) if d.is_zero() => Some("give the body more than 0".to_owned()),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        if let Some(problem) = problem {
            return Err(invalid(
                Some(line_of(text, wait.span().start)),
                format!(
                    "[serve] body_read_timeout = {:?}: {problem} (write e.g. \"30s\")",
                    wait.get_ref()
                ),
            ));
        }
    }
    let serve_limits = std::iter::once(("[serve]".to_owned(), config.serve.zero_limits())).chain(
        config
            .serve
            .tenants
            .iter()
            .map(|(name, t)| (format!("[serve.tenants.{name}]"), t.zero_limits())),
    );
    for (table, values) in serve_limits {
        for (key, value) in values {
            if let Some((0, span)) = value {
                return Err(invalid(
                    Some(line_of(text, span.start)),
                    format!(
                        "{table} {key} = 0: allow at least 1 (leave it out for the default; \
                         README's gateway section lists them)"
                    ),
                ));
            }
        }
    }
    if config.max_tokens.keys().any(|k| k.trim().is_empty()) {
        return Err(invalid(
            None,
            "[max_tokens]: a key is blank (write a part of the model id, e.g. \"claude-opus-4-8\" = 64000)".to_owned(),
        ));
    }
    let zero_refused = [
        (
            "max_connections",
            config
                .store
                .max_connections
                .as_ref()
                .map(|n| (u64::from(*n.get_ref()), n.span())),
            "the pool needs at least 1 connection",
        ),
        (
            "acquire_timeout",
            config
                .store
                .acquire_timeout
                .as_ref()
                .map(|n| (*n.get_ref(), n.span())),
            "give at least 1 second",
        ),
    ];
    for (key, value, fix) in zero_refused {
        if let Some((0, span)) = value {
            return Err(invalid(
                Some(line_of(text, span.start)),
                format!("[store] {key} = 0: {fix}"),
            ));
        }
    }
    if let Some(url) = &config.store.url
        && let Err(e) = hermes_engine::store::Location::parse(url.get_ref())
    {
        return Err(invalid(
            Some(line_of(text, url.span().start)),
            format!("[store] url: {e}"),
        ));
    }
    Ok(config)
}

/// Loads the config (defaults when the file does not exist).
pub fn load(home: &Path) -> Result<Config, ConfigError> {
    let path = path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(source) => Err(ConfigError::Read { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` read as `config.toml`.
    fn parsed(text: &str) -> Config {
        parse(Path::new("config.toml"), text).unwrap()
    }

    /// What reading `text` as `config.toml` refuses, as said.
    fn refusal(text: &str) -> String {
        parse(Path::new("config.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn store_pool_settings_parse_default_and_refuse_zero_with_the_line() {
        let config =
            parsed("[store]\nmax_connections = 2\nbusy_timeout = 1\nacquire_timeout = 7\n");
        let pool = config.store.pool();
        assert_eq!(pool.max_connections, Some(2));
        assert_eq!(pool.busy_timeout, std::time::Duration::from_secs(1));
        assert_eq!(pool.acquire_timeout, std::time::Duration::from_secs(7));
        assert_eq!(
            Config::default().store.pool(),
            hermes_engine::store::PoolOptions::default()
        );
        for (text, said) in [
            (
                "[store]\n\nmax_connections = 0\n",
                "config.toml: line 3: [store] max_connections = 0: the pool needs at least 1 connection",
            ),
            (
                "[store]\nacquire_timeout = 0\n",
                "config.toml: line 2: [store] acquire_timeout = 0: give at least 1 second",
            ),
        ] {
            let err = refusal(text);
            assert_eq!(err, said);
        }
    }

    #[test]
    fn max_tokens_per_model_family_parse_and_the_longest_key_wins() {
        let config = parsed("[max_tokens]\nclaude = 32000\n\"Claude-Opus-4-8\" = 64000\n");
        let defaults = config.defaults();
        assert_eq!(defaults.max_tokens_for("claude-opus-4-8"), Some(64000));
        assert_eq!(defaults.max_tokens_for("claude-sonnet-4-5"), Some(32000));
        assert_eq!(defaults.max_tokens_for("gemini-3-pro"), None);
        for (text, named) in [
            ("[max_tokens]\nclaude = 0\n", "line 2"),
            ("[max_tokens]\nclaude = -5\n", "line 2"),
            ("[max_tokens]\n\" \" = 5\n", "a key is blank"),
        ] {
            let err = refusal(text);
            assert!(err.contains(named), "{text}: {err}");
        }
    }

    #[test]
    fn a_full_config_parses() {
        let config = parsed(
            "provider = \"openrouter\"\nmodel = \"x/m\"\neffort = \"high\"\n\n[providers.openrouter]\nkey_var = \"MY_KEY\"\nreasoning_echo = true\n",
        );
        assert_eq!(config.provider.as_deref(), Some("openrouter"));
        assert_eq!(config.effort(), Some(Effort::High));
        let defaults = config.defaults();
        assert_eq!(
            defaults.provider("OpenRouter").key_var.as_deref(),
            Some("MY_KEY")
        );
        assert!(defaults.provider("openrouter").reasoning_echo);
    }

    /// The gateway's default address (hermes-serve's, which this crate does not depend on).
    const DEFAULT: &str = "127.0.0.1:8642";

    #[test]
    fn debug_never_shows_the_store_password_and_redacted_replaces_it() {
        let config =
            parsed("[store]\nurl = \"postgres://hermes:hunter2-pw@db.internal/sessions\"\n");
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter2-pw"), "{debug}");
        assert!(debug.contains("db.internal"), "{debug}");
        let shown = config.redacted();
        let url = shown.store.url.as_ref().unwrap().get_ref();
        assert!(!url.contains("hunter2-pw") && url.contains("***"), "{url}");
    }

    #[test]
    fn a_missing_file_is_the_defaults_and_an_unreadable_one_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), Config::default());
        std::fs::create_dir(path(dir.path())).unwrap();
        let err = load(dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot read {}", path(dir.path()).display())
        );
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    }

    #[test]
    fn the_metrics_token_is_read_and_never_shown() {
        let config = parsed("[serve]\nmetrics_token = \"scrape-secret-123\"\n");
        assert_eq!(
            config.serve.metrics_token.as_deref(),
            Some("scrape-secret-123")
        );
        assert!(!format!("{:?}", config.serve).contains("scrape-secret-123"));
        let shown = toml::to_string(&config.redacted()).unwrap();
        assert!(shown.contains("metrics_token = \"***\""), "{shown}");
    }

    #[test]
    fn the_serve_section_parses_and_refuses_unknown_keys_and_a_zero_cap() {
        let config = parsed(
            "[serve]\nlisten = \"127.0.0.1:9000\"\nmax_body = 1048576\n\n[serve.models]\nfast = \"deepseek/deepseek-v4-flash\"\n",
        );
        assert_eq!(config.serve.listen.as_deref(), Some("127.0.0.1:9000"));
        assert_eq!(
            config.serve.max_request_bytes.map(|n| n.get()),
            Some(1_048_576)
        );
        assert_eq!(config.serve.models["fast"], "deepseek/deepseek-v4-flash");
        assert_eq!(
            config.serve.listen_or(DEFAULT).unwrap(),
            "127.0.0.1:9000".parse().unwrap()
        );
        assert_eq!(
            Config::default().serve.listen_or(DEFAULT).unwrap(),
            DEFAULT.parse().unwrap()
        );
        let bad = parsed("[serve]\nlisten = \"localhost\"\n");
        let err = bad.serve.listen_or(DEFAULT).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[serve] listen = \"localhost\" is not an address like 127.0.0.1:8642"
        );
        assert!(
            std::error::Error::source(&err).is_some(),
            "the parse error is the cause"
        );
        for bad in ["[serve]\nport = 1\n", "[serve]\nmax_body = 0\n"] {
            let err = parse(Path::new("config.toml"), bad).unwrap_err();
            assert!(format!("{err:#}").contains("line 2"), "{bad}: {err:#}");
        }
    }

    #[test]
    fn serve_limits_and_retention_parse_with_per_tenant_overrides() {
        let config = parsed(
            "[serve]\nmax_request_bytes = 4096\nrequests_per_minute = 600\nmax_concurrent = 8\nretention = \"30d\"\n\n[serve.tenants.acme]\nrequests_per_minute = 60\n",
        );
        let serve = &config.serve;
        assert_eq!(serve.max_request_bytes.map(|n| n.get()), Some(4096));
        assert_eq!(serve.requests_per_minute().map(|n| n.get()), Some(600));
        assert_eq!(serve.max_concurrent().map(|n| n.get()), Some(8));
        assert_eq!(
            serve.retention(),
            Some(std::time::Duration::from_secs(30 * 86_400))
        );
        let acme = &serve.tenants["acme"];
        assert_eq!(acme.requests_per_minute().map(|n| n.get()), Some(60));
        assert_eq!(acme.max_concurrent(), None);
        assert_eq!(Config::default().serve.retention(), None);
        for (text, said) in [
            (
                "[serve]\nrequests_per_minute = 0\n",
                "config.toml: line 2: [serve] requests_per_minute = 0: allow at least 1 (leave it out for the default; README's gateway section lists them)",
            ),
            (
                "[serve.tenants.acme]\n\nmax_concurrent = 0\n",
                "config.toml: line 3: [serve.tenants.acme] max_concurrent = 0: allow at least 1 (leave it out for the default; README's gateway section lists them)",
            ),
            (
                "[serve]\nretention = \"soon\"\n",
                "config.toml: line 2: [serve] retention = \"soon\": expected number at 0 (write e.g. \"30d\", \"12h\" or \"90s\")",
            ),
            (
                "[serve]\nretention = \"0s\"\n",
                "config.toml: line 2: [serve] retention = \"0s\": keep conversations for longer than 0 (write e.g. \"30d\")",
            ),
        ] {
            assert_eq!(refusal(text), said);
        }
        let err = parse(Path::new("config.toml"), "[serve.tenants.acme]\nrpm = 1\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(err.to_string().contains("unknown field `rpm`"), "{err}");
    }

    #[test]
    fn a_tenants_policy_and_token_limits_parse_and_refuse_zero() {
        let config = parsed(
            "[serve]\ntokens_per_minute = 100000\nmax_tokens_cap = 8192\nallow_models = [\"deepseek/*\"]\nbody_read_timeout = \"5s\"\n\n[serve.tenants.acme]\ntokens_per_day = 5000000000\nallow_betas = [\"context-1m-*\"]\nallow_server_tools = [\"web_search_*\"]\nrequire_partition = true\n",
        );
        let serve = &config.serve;
        assert_eq!(serve.tokens_per_minute().map(|n| n.get()), Some(100_000));
        assert_eq!(serve.tokens_per_day(), None);
        assert_eq!(serve.max_tokens_cap(), Some(8192));
        assert_eq!(
            serve.allow_models.as_deref(),
            Some(&["deepseek/*".to_owned()][..])
        );
        assert_eq!(
            serve.body_read_timeout(),
            Some(std::time::Duration::from_secs(5))
        );
        let acme = &serve.tenants["acme"];
        assert_eq!(acme.tokens_per_day().map(|n| n.get()), Some(5_000_000_000));
        assert_eq!(
            acme.allow_betas.as_deref(),
            Some(&["context-1m-*".to_owned()][..])
        );
        assert_eq!(
            acme.allow_server_tools.as_deref(),
            Some(&["web_search_*".to_owned()][..])
        );
        assert_eq!(acme.require_partition, Some(true));
        assert_eq!(acme.allow_models, None);
        for (text, said) in [
            (
                "[serve.tenants.acme]\ntokens_per_day = 0\n",
                "config.toml: line 2: [serve.tenants.acme] tokens_per_day = 0: allow at least 1",
            ),
            (
                "[serve]\nmax_tokens_cap = 0\n",
                "config.toml: line 2: [serve] max_tokens_cap = 0: allow at least 1",
            ),
            (
                "[serve]\nbody_read_timeout = \"0s\"\n",
                "config.toml: line 2: [serve] body_read_timeout = \"0s\": give the body more than 0",
            ),
        ] {
            let err = refusal(text);
            assert!(err.starts_with(said), "{err}");
        }
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let err = parse(
            Path::new("/h/config.toml"),
            "provider = \"x\"\n\n[providers.x]\nbase_ur = \"u\"\n",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("/h/config.toml: line 4: "), "{text}");
        assert!(text.contains("unknown field `base_ur`"), "{text}");
        let err = parse(Path::new("c.toml"), "model = \"m\"\neffort = \"huge\"\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("line 2: `effort = \"huge\"`: expected one of minimal"),
            "{err}"
        );
        let err = parse(Path::new("c.toml"), "provider = [\n").unwrap_err();
        assert!(err.to_string().starts_with("c.toml: line 1: "), "{err}");
    }

    #[test]
    fn retry_window_reads_a_duration_and_names_the_line_of_a_bad_one() {
        let config = parse(Path::new("c.toml"), "[serve]\nretry_window = \"90s\"\n").unwrap();
        assert_eq!(
            config.serve.retry_window(),
            Some(std::time::Duration::from_secs(90))
        );
        let off = parse(Path::new("c.toml"), "[serve]\nretry_window = \"0s\"\n").unwrap();
        assert_eq!(off.serve.retry_window(), Some(std::time::Duration::ZERO));
        let unset = parse(Path::new("c.toml"), "[serve]\n").unwrap();
        assert_eq!(unset.serve.retry_window(), None);
        let err = parse(Path::new("c.toml"), "[serve]\nretry_window = \"soon\"\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 2"), "{text}");
        assert!(text.contains("[serve] retry_window = \"soon\""), "{text}");
    }
}
