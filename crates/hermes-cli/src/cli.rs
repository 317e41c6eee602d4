//! The command line: names, flags and help text (a public interface scripts rely on).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hermes_core::{Carrier, Effort, ThinkingRequest};
use hermes_engine::Choice;

/// hermes: an agent runtime whose reasoning models never forget what they already thought.
#[derive(Debug, Parser)]
#[command(
    name = "hermes",
    version,
    about = "hermes: an agent runtime whose reasoning models never forget what they already thought",
    long_about = None
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the chat-completions route table this build knows, in matching order.
    Routes(RoutesArgs),
    /// List every provider id `--provider` takes: its wire, default base URL and key variable.
    Providers(ProvidersArgs),
    /// Print the exact JSON body of the next request (no network, nothing stored).
    Preview(PreviewArgs),
    /// Chat: interactively, or one user turn (with its tool loop) with -q.
    Chat(ChatArgs),
    /// Stored sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// What providers refused, per session (the refusal fallback's verdicts).
    #[command(subcommand)]
    Verdicts(VerdictsCommand),
    /// Read the logs in $HERMES_HOME/logs.
    Logs(LogsArgs),
    /// The configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// The strict provider simulator.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Serve the gateway: OpenAI chat completions and Anthropic Messages over HTTP
    ///
    /// Doors: OpenAI chat completions (`POST /v1/chat/completions`), Anthropic Messages (`POST
    /// /v1/messages`, `POST /v1/messages/count_tokens`), and `GET /v1/models` in each door's
    /// shape. Clients may drop every reasoning field: the gateway restores it from the store.
    Serve(ServeArgs),
}

/// `hermes serve`
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct ServeArgs {
    /// Manage gateway keys, stored conversations or tenants instead of serving.
    #[command(subcommand)]
    pub(crate) command: Option<ServeCommand>,

    /// The address to listen on (default: `[serve] listen` in config.toml, else 127.0.0.1:8642).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,

    /// The threads that serve requests (default: `[serve] workers` in config.toml, else the
    /// CPUs this process may run on, after its affinity mask and its cgroup's CPU quota).
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<std::num::NonZeroUsize>,

    /// Serve without gateway keys (loopback addresses only).
    #[arg(long = "no-auth")]
    pub(crate) no_auth: bool,

    /// Serve plain HTTP on an address that is not loopback because a TLS proxy in front
    /// terminates TLS.
    #[arg(long = "behind-tls-proxy", conflicts_with = "tls_cert")]
    pub(crate) behind_tls_proxy: bool,

    /// Serve HTTPS with this certificate chain (PEM; with --tls-key).
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// The certificate's private key (PEM; with --tls-cert).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,

    /// Record no metrics and serve no `GET /metrics` (to measure what they cost).
    #[arg(long = "no-metrics")]
    pub(crate) no_metrics: bool,

    /// Serve the built-in strict simulators as models: `sim/PROFILE/MODEL` (any profile `hermes
    /// sim serve --help` lists: Claude's `anthropic` with signed thinking, `gemini`,
    /// `openai-responses`, `openrouter`, …) and `sim/MODEL` (the DeepSeek simulator). Without
    /// it a `sim/…` model is unknown (404).
    #[arg(long = "allow-sim")]
    pub(crate) allow_sim: bool,

    /// Serve the inspector at /ui: conversations, their carriers and what each request sent
    /// upstream, an overview, keys and tenants, for an admin key (`keys create --admin`). Also
    /// `[serve] ui = true`.
    #[arg(long)]
    pub(crate) ui: bool,
}

/// `hermes serve keys …`
#[derive(Debug, Subcommand)]
pub(crate) enum ServeCommand {
    /// Gateway keys: each one authenticates a tenant, whose sessions only it sees and extends.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// The gateway's stored conversations.
    #[command(subcommand)]
    Sessions(ServeSessionsCommand),
    /// Tenants: the owners of gateway keys and their conversations.
    #[command(subcommand)]
    Tenants(TenantsCommand),
}

/// `hermes serve sessions …`
#[derive(Debug, Subcommand)]
pub(crate) enum ServeSessionsCommand {
    /// Delete a tenant's stored conversations (with their reasoning carriers) and print how
    /// many: all of them, or those last updated longer ago than --older-than. A branch that
    /// stays keeps its whole view.
    Purge {
        /// The tenant.
        #[arg(long, value_name = "NAME")]
        tenant: String,
        /// Only conversations last updated longer ago than this (`30d`, `12h`, `90m`, …).
        #[arg(long = "older-than", value_name = "AGE", value_parser = humantime::parse_duration)]
        older_than: Option<std::time::Duration>,
    },
}

/// `hermes serve tenants …`
#[derive(Debug, Subcommand)]
pub(crate) enum TenantsCommand {
    /// Remove a tenant whole: revoke all its gateway keys and delete all its conversations.
    Remove {
        /// The tenant.
        #[arg(value_name = "NAME")]
        tenant: String,
    },
}

/// `hermes serve keys …`
#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a new 256-bit key for TENANT (or an admin key, --admin) and print it once, alone
    /// on the last line of stdout (the store keeps only its SHA-256 digest).
    #[command(group(clap::ArgGroup::new("whose").required(true).args(["tenant", "admin"])))]
    Create {
        /// The tenant the key authenticates.
        #[arg(long, value_name = "NAME")]
        tenant: Option<String>,
        /// An admin key instead: it reaches the admin API (`/admin/v1/…`) and the inspector
        /// (`/ui`), and no door.
        #[arg(long)]
        admin: bool,
    },
    /// List gateway keys: tenant, key id, creation and last use (recorded at most once a
    /// minute per key and replica); never a secret or its digest.
    List {
        /// Only this tenant's keys (default: every tenant's).
        #[arg(long, value_name = "NAME")]
        tenant: Option<String>,
    },
    /// Revoke one key (`--key-id`) or every key of a tenant (`--tenant`); every running
    /// replica refuses them at once.
    #[command(group(clap::ArgGroup::new("which").required(true).args(["key_id", "tenant"])))]
    Revoke {
        /// The key's id as `list` shows it (`hk_<id>`; the whole key is accepted too, and never
        /// printed).
        #[arg(long = "key-id", value_name = "ID")]
        key_id: Option<String>,
        /// Every key of this tenant.
        #[arg(long, value_name = "NAME")]
        tenant: Option<String>,
    },
}

/// The flags that pick the target, as `chat` and `preview` both take them. The help is chat's;
/// preview words its own ([`PreviewArgs`]: what each falls back to when not given).
#[derive(Debug, Default, Args)]
pub(crate) struct TargetArgs {
    /// Provider id (`sim` runs the in-process simulator and needs no key).
    #[arg(long, value_name = "P")]
    pub(crate) provider: Option<String>,

    /// Model id.
    #[arg(long, value_name = "M")]
    pub(crate) model: Option<String>,

    /// Base URL (`sim://PROFILE` picks a simulator profile).
    #[arg(long = "base-url", value_name = "URL")]
    pub(crate) base_url: Option<String>,
}

impl TargetArgs {
    /// The engine's choice of these flags.
    pub(crate) fn choice(&self) -> Choice {
        Choice::new(
            self.provider.as_deref(),
            self.model.as_deref(),
            self.base_url.as_deref(),
        )
    }
}

/// The thinking flags, as `chat` and `preview` both take them. The help is chat's; preview
/// words its own ([`PreviewArgs`]).
#[derive(Debug, Default, Args)]
pub(crate) struct ThinkingArgs {
    /// Request this reasoning effort (the session remembers it: a resume without --effort or
    /// --no-thinking keeps it).
    #[arg(long, value_name = "E", conflicts_with = "no_thinking")]
    pub(crate) effort: Option<EffortArg>,

    /// Ask the provider not to think (the session remembers it, as --effort).
    #[arg(long = "no-thinking")]
    pub(crate) no_thinking: bool,
}

impl ThinkingArgs {
    /// The thinking request of `--effort` / `--no-thinking` alone
    /// ([`ThinkingRequest::NoPreference`] when neither is given). The engine settles it against
    /// the stored session's request and config's default effort
    /// (`hermes_engine::settle_thinking`).
    pub(crate) fn request(&self) -> ThinkingRequest {
        match (self.effort, self.no_thinking) {
            (_, true) => ThinkingRequest::Off,
            (Some(effort), false) => ThinkingRequest::Effort(effort.0),
            (None, false) => ThinkingRequest::NoPreference,
        }
    }
}

/// `hermes chat`
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Run this one user turn and exit (without it, chat interactively).
    #[arg(short = 'q', value_name = "TEXT")]
    pub(crate) query: Option<String>,

    /// Print one JSON object (session id, reply, usage, carriers stored per new assistant message).
    #[arg(long)]
    pub(crate) json: bool,

    /// `--provider`, `--model`, `--base-url`.
    #[command(flatten)]
    pub(crate) target: TargetArgs,

    /// `--effort`, `--no-thinking`.
    #[command(flatten)]
    pub(crate) thinking: ThinkingArgs,

    /// Continue a stored session.
    #[arg(long, value_name = "ID")]
    pub(crate) resume: Option<String>,

    /// Ask for whole replies instead of a stream.
    #[arg(long = "no-stream")]
    pub(crate) no_stream: bool,

    /// Do not show the model's thinking (interactive chat).
    #[arg(long = "hide-reasoning")]
    pub(crate) hide_reasoning: bool,

    /// The folder the model's file tools may read (default: the working directory, or
    /// `workspace` in config.toml).
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Send the API key over plain `http://` to a host that is neither loopback nor private.
    #[arg(long = "allow-insecure-http")]
    pub(crate) allow_insecure_http: bool,
}

impl ChatArgs {
    /// The command line that runs this chat again (the choices that pick its target, not the
    /// query), for errors that say which flag to add.
    pub(crate) fn rerun_line(&self) -> String {
        let mut line = String::from("hermes chat");
        for (flag, value) in [
            ("--resume", &self.resume),
            ("--provider", &self.target.provider),
            ("--model", &self.target.model),
            ("--base-url", &self.target.base_url),
        ] {
            if let Some(value) = value {
                line.push_str(&format!(" {flag} {value}"));
            }
        }
        line
    }
}

/// `hermes sessions …`
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// Import a hermes.session.v1 file (or a bare JSON array of messages) and print the new id;
    /// or, with `--from-hermes-agent`, every session of the Python original's state.db.
    Import {
        /// The file.
        #[arg(
            value_name = "FILE",
            required_unless_present = "from_hermes_agent",
            conflicts_with = "from_hermes_agent"
        )]
        file: Option<PathBuf>,
        /// Import every session of the Python original's `state.db` (read-only; default: the
        /// one in $HERMES_HOME), keeping its ids, archived rows, lineage, titles, verdicts and
        /// token counters; sessions imported before are skipped.
        #[arg(long = "from-hermes-agent", value_name = "PATH", num_args = 0..=1)]
        #[allow(clippy::option_option)]
        from_hermes_agent: Option<Option<PathBuf>>,
        /// With `--from-hermes-agent`: report what would be imported, import nothing.
        #[arg(long, requires = "from_hermes_agent")]
        dry_run: bool,
    },
    /// Print a session as hermes.session.v1.
    Export {
        /// Session id.
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Show per turn which carriers, origin and native records are stored, and the verdicts.
    Show {
        /// Session id.
        #[arg(value_name = "ID")]
        id: String,
        /// Print JSON (with model_config).
        #[arg(long)]
        json: bool,
        /// Include rows archived by compaction.
        #[arg(long)]
        all: bool,
    },
    /// List sessions, most recent first.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy the first N messages (all by default) with every carrier, the verdicts and a parent
    /// link into a new session; prints its id.
    Branch {
        /// Session id.
        #[arg(value_name = "ID")]
        id: String,
        /// How many messages to copy.
        #[arg(long, value_name = "N")]
        at: Option<usize>,
    },
    /// Compact a session now: summarise its middle (with the session's own provider), clear old
    /// tool outputs if needed; the originals stay archived (`show --all`).
    Compact {
        /// Session id.
        #[arg(value_name = "ID")]
        id: String,
        /// Confirm the session's base URL: the summary request goes there with your API key
        /// (needed once for a session imported from elsewhere; the session remembers it).
        #[arg(long = "base-url", value_name = "URL")]
        base_url: Option<String>,
        /// Send the API key over plain `http://` to a host that is neither loopback nor
        /// private.
        #[arg(long = "allow-insecure-http")]
        allow_insecure_http: bool,
    },
    /// Delete a session.
    Delete {
        /// Session id.
        #[arg(value_name = "ID")]
        id: String,
    },
    /// Copy every session (archived rows, checkpoints, verdicts, origins, lineage) and the
    /// fleet verdicts from the local database into another one, e.g. a shared PostgreSQL; each
    /// copy is verified byte for byte, and running it again copies nothing.
    Migrate {
        /// The destination: `postgres://USER@HOST/DB[?sslmode=…]` (password from the URL,
        /// `PGPASSWORD` or `~/.pgpass`) or `sqlite://PATH`.
        #[arg(long, value_name = "URL")]
        to: String,
        /// The source (default: the SQLite database in $HERMES_HOME).
        #[arg(long, value_name = "URL")]
        from: Option<String>,
    },
}

/// `hermes verdicts …`
#[derive(Debug, Subcommand)]
pub(crate) enum VerdictsCommand {
    /// List every verdict of every session; with `--all`, also the verdicts the whole store
    /// shares (fleet verdicts), with when each was learned.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Include the fleet verdicts.
        #[arg(long)]
        all: bool,
    },
    /// Forget verdicts (all, or those matching the filters), the sessions' and the fleet's, so
    /// carriers are sent again.
    Clear {
        /// Only this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only this provider.
        #[arg(long, value_name = "P")]
        provider: Option<String>,
        /// Only this model.
        #[arg(long, value_name = "M")]
        model: Option<String>,
    },
}

/// `hermes logs`
#[derive(Debug, Args)]
pub(crate) struct LogsArgs {
    /// Keep printing new lines as they are written.
    #[arg(long)]
    pub(crate) follow: bool,

    /// Lowest level shown.
    #[arg(long, value_name = "L", default_value = "debug", value_parser = ["trace", "debug", "info", "warn", "error"])]
    pub(crate) level: String,
}

/// `hermes config …`
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the config file's path.
    Path,
    /// Print the configuration in effect.
    Show,
}

/// `hermes sim …`
#[derive(Debug, Subcommand)]
pub(crate) enum SimCommand {
    /// Serve a simulator profile on 127.0.0.1 until killed; prints the base URL first.
    Serve(SimServeArgs),
}

/// `hermes sim serve`
#[derive(Debug, Args)]
pub(crate) struct SimServeArgs {
    /// Provider contract to simulate.
    #[arg(long, value_name = "NAME", value_parser = sim_profiles())]
    pub(crate) profile: String,

    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, value_name = "P", default_value_t = 0)]
    pub(crate) port: u16,

    /// Pause this many milliseconds before each streamed event after the first (a slow
    /// upstream, for load tests; 0: no pause).
    #[arg(long = "chunk-delay-ms", value_name = "MS", default_value_t = 0)]
    pub(crate) chunk_delay_ms: u64,

    /// Pause this many milliseconds before answering any request, streamed or not (an upstream
    /// that takes time to answer, for benchmarks; 0: answer at once).
    #[arg(long = "delay-ms", value_name = "MS", default_value_t = 0)]
    pub(crate) delay_ms: u64,

    /// Print one line per request on stderr: the path, the status and the reasoning carriers
    /// the request brought back (`reasoning_content`, `reasoning_details`, signed and redacted
    /// thinking, Gemini's thought signatures, Responses' encrypted items), to see a gateway
    /// re-attach them.
    #[arg(long)]
    pub(crate) verbose: bool,
}

/// Every simulator profile (the simulator's one table, `hermes_sim::PROFILES`), each with its
/// help line, so `sim serve --help` lists them all.
fn sim_profiles() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        hermes_sim::PROFILES
            .iter()
            .map(|p| clap::builder::PossibleValue::new(p.name).help(p.about)),
    )
}

/// `hermes routes`
#[derive(Debug, Args)]
pub(crate) struct RoutesArgs {
    /// Print a JSON array instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `hermes providers`
#[derive(Debug, Args)]
pub(crate) struct ProvidersArgs {
    /// Print JSON instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Makes `$arg`, a newtype over the items of one of core's lists (`$all`), a clap value enum: its
/// values are the list's items in order, each written as the item's `$name()`.
macro_rules! value_enum_over {
    ($arg:ident($all:expr), $name:ident) => {
        impl clap::ValueEnum for $arg {
            fn value_variants<'a>() -> &'a [Self] {
                const ALL: [$arg; $all.len()] = {
                    let mut out = [$arg($all[0]); $all.len()];
                    let mut i = 1;
                    while i < out.len() {
                        out[i] = $arg($all[i]);
                        i += 1;
                    }
                    out
                };
                &ALL
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.0.$name()))
            }
        }
    };
}

/// An effort word of `--effort`: core's one list ([`Effort::ALL`]) as a clap value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EffortArg(pub(crate) Effort);

value_enum_over!(EffortArg(Effort::ALL), as_str);

/// A carrier of `--reject`: core's one list ([`Carrier::ALL`]) as a clap value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CarrierArg(pub(crate) Carrier);

value_enum_over!(CarrierArg(Carrier::ALL), field);

/// `hermes preview`
#[derive(Debug, Args)]
#[command(
    mut_arg("provider", |a| a.help("Provider id or name (default: the history file's provider)")),
    mut_arg("model", |a| a.help("Model id (default: the history file's model)")),
    mut_arg("base_url", |a| a.help(
        "Base URL (default: the history file's, when the provider is the file's; else the \
         provider's registry default)"
    )),
    mut_arg("effort", |a| a.help("Request this reasoning effort")),
    mut_arg("no_thinking", |a| a.help("Ask the provider not to think")),
)]
pub(crate) struct PreviewArgs {
    /// `--provider`, `--model`, `--base-url` (each defaulting to the history's).
    #[command(flatten)]
    pub(crate) target: TargetArgs,

    /// A hermes.session.v1 file or a bare JSON array of messages.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "session",
        conflicts_with = "session"
    )]
    pub(crate) history: Option<PathBuf>,

    /// A stored session.
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,

    /// Append a user message with this text.
    #[arg(short = 'q', value_name = "TEXT")]
    pub(crate) query: Option<String>,

    /// `--effort`, `--no-thinking`.
    #[command(flatten)]
    pub(crate) thinking: ThinkingArgs,

    /// Act as if this provider, host and model had refused the carrier (repeatable).
    #[arg(long = "reject", value_name = "FIELD")]
    pub(crate) reject: Vec<CarrierArg>,

    /// Say on stderr why each carrier is present, padded or absent on each assistant message.
    #[arg(long)]
    pub(crate) explain: bool,

    /// The body as the next `chat --no-stream` would send it (without it: as a streamed chat).
    #[arg(long = "no-stream")]
    pub(crate) no_stream: bool,

    /// Print the body exactly as sent (compact), instead of pretty-printed.
    #[arg(long)]
    pub(crate) compact: bool,
}
