//! Loopback simulator of OpenAI-compatible chat-completions providers and of Anthropic's Messages
//! API, with strict per-provider profiles.
//!
//! Each profile validates requests independently from PROVIDERS.md (it depends on no other hermes
//! crate) and answers violations with the provider's real status, envelope and message. Behind
//! the profiles sits a deterministic scripted reasoning model that mints HMAC-signed reasoning
//! items and runs `[tools=N]` tool loops. Everything listens on 127.0.0.1 only.
//! Every profile (and a [`ProfileSpec`], unless told otherwise) refuses a tool call without its
//! `tool` result and a result without its call, with the provider's text (PROVIDERS.md,
//! "Tool-call pairing and turn-order rules").
//!
//! The chat-completions profiles answer `POST {base}/chat/completions` and
//! `POST {base}/v1/chat/completions`. The `anthropic` profile answers the Messages API on three
//! path families: direct `POST {base}/v1/messages` (`anthropic-version` header required,
//! `x-api-key` optional, an `Authorization` header refused), Azure Foundry
//! `POST {base}/anthropic/v1/messages` (`x-api-key` and `anthropic-version` required) and Google
//! Vertex `POST {base}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`
//! / `:streamRawPredict` (`Authorization: Bearer` required, `anthropic_version` in the body, the
//! model from the path). Its replies start with a `thinking` block (plus a `redacted_thinking`
//! block when the user text says `[redacted]`) while thinking is enabled or adaptive; signatures
//! bind the block text to the conversation prefix and are verified when replayed, and the latest
//! assistant turn of an in-flight tool loop must carry its thinking blocks unmodified.
//! Streams are Anthropic SSE (`message_start` … `message_stop`).
//!
//! [`PROFILES`] is the one table of built-in profiles (name, stand-in provider, default model,
//! `--help` line). A provider that is not built in is simulated from its own rules with a
//! [`ProfileSpec`] passed to [`Sim::builder`]. The library neither reads the environment nor
//! prints: binaries pass the signing key ([`KEY_ENV`]) and print [`Sim::base_url`] themselves.

mod anthropic;
mod builtin;
mod custom;
mod model;
mod profile;
mod rules;
mod server;
mod sign;
mod wire;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use anthropic::rules::ANTHROPIC_TOP_LEVEL;
pub use builtin::{PROFILES, ProfileInfo};
pub use custom::{EchoTurns, ProfileSpec, ReplyCarrier, ValueRule};
pub use profile::Profile;
pub use rules::{GEMINI_TOP_LEVEL, OPENAI_TOP_LEVEL};
pub use sign::DEFAULT_KEY;

/// Environment variable the simulator binaries (`hermes-sim`, `hermes sim serve`) read to override
/// the signing key; the library never reads it (pass the key to [`SimBuilder::key`]).
pub const KEY_ENV: &str = "HERMES_SIM_KEY";

/// Per-test rule switches.
#[derive(Clone, Debug, Default)]
pub struct Switches {
    /// Message keys refused as unknown fields (on any message; not used by the `anthropic`
    /// profile, whose schema refuses every unknown key already), with the profile's own
    /// unknown-field refusal (Mistral: 422 `extra_forbidden`; Groq, Cerebras: their
    /// "is unsupported" forms; a [`ProfileSpec`]: its
    /// [`unknown_field_text`](ProfileSpec::unknown_field_text)) or a generic 400
    /// "Unrecognized request argument supplied: messages.N.FIELD" in the profile's envelope.
    pub reject_message_fields: Vec<String>,
    /// Streams emit a few deltas after the 200, then `data: {"error":{...,"code":502}}` and end
    /// (the `anthropic` profile: `event: error` with an `overloaded_error`).
    pub fail_mid_stream: bool,
}

impl Switches {
    /// Adds a message key to refuse as an unknown field.
    pub fn reject_message_field(mut self, field: impl Into<String>) -> Self {
        self.reject_message_fields.push(field.into());
        self
    }

    /// Turns on the mid-stream failure.
    pub fn failing_mid_stream(mut self) -> Self {
        self.fail_mid_stream = true;
        self
    }
}

/// One request as the simulator saw and answered it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Request headers in arrival order (names lower case). Credential values (`authorization`,
    /// `proxy-authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, `cookie`) are recorded as
    /// `<redacted>`.
    pub headers: Vec<(String, String)>,
    /// Parsed JSON body (`Value::Null` when the body was not JSON).
    pub body: serde_json::Value,
    /// Raw body bytes.
    pub raw: Vec<u8>,
    /// HTTP status returned.
    pub status: u16,
    /// The response body, or the full SSE text sent for a stream.
    pub response: String,
}

/// Errors starting the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The profile name is not one of [`PROFILES`].
    #[error("unknown profile `{0}`, expected one of {names}", names = builtin::names())]
    UnknownProfile(String),
    /// Binding or serving failed.
    #[error("simulator I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// State shared by the accept loop and every connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) profile: Profile,
    pub(crate) key: Vec<u8>,
    pub(crate) switches: Mutex<Switches>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    /// Accepted `anthropic` requests with a `cache_control` breakpoint so far (the first one
    /// writes the cache, later ones read it).
    pub(crate) cached_requests: AtomicU64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An in-process simulator bound to 127.0.0.1; dropping it stops the server.
#[derive(Debug)]
pub struct Sim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

/// How to start a [`Sim`]: the profile, then optional switches, signing key and port.
#[derive(Clone, Debug)]
#[must_use = "call `start` to start the simulator"]
pub struct SimBuilder {
    profile: Profile,
    switches: Switches,
    key: Vec<u8>,
    port: u16,
}

impl SimBuilder {
    /// Rule switches (default: none).
    pub fn switches(mut self, switches: Switches) -> Self {
        self.switches = switches;
        self
    }

    /// The signing key (default [`DEFAULT_KEY`]).
    pub fn key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = key.into();
        self
    }

    /// The loopback port to bind (default 0: a free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Binds 127.0.0.1 and starts serving in a background task.
    pub async fn start(self) -> Result<Sim, SimError> {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            profile: self.profile,
            key: self.key,
            switches: Mutex::new(self.switches),
            requests: Mutex::new(Vec::new()),
            cached_requests: AtomicU64::new(0),
        });
        let task = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared)));
        Ok(Sim { shared, addr, task })
    }
}

impl Sim {
    /// A builder for a simulator of `profile`: a built-in ([`Profile::builtin`]) or a third
    /// party's [`ProfileSpec`].
    pub fn builder(profile: impl Into<Profile>) -> SimBuilder {
        SimBuilder {
            profile: profile.into(),
            switches: Switches::default(),
            key: DEFAULT_KEY.to_vec(),
            port: 0,
        }
    }

    /// Starts a simulator for the built-in `profile` on a free loopback port.
    pub async fn start(profile: &str) -> Result<Sim, SimError> {
        Sim::start_with(profile, Switches::default()).await
    }

    /// Starts a simulator for a built-in profile with rule switches.
    pub async fn start_with(profile: &str, switches: Switches) -> Result<Sim, SimError> {
        Sim::start_with_key(profile, switches, DEFAULT_KEY.to_vec()).await
    }

    /// Starts a simulator for a built-in profile with rule switches and a signing key other than
    /// [`DEFAULT_KEY`].
    pub async fn start_with_key(
        profile: &str,
        switches: Switches,
        key: Vec<u8>,
    ) -> Result<Sim, SimError> {
        Sim::builder(Profile::builtin(profile)?)
            .switches(switches)
            .key(key)
            .start()
            .await
    }

    /// Serves until the process ends (for standalone binaries: print [`Sim::base_url`] first).
    ///
    /// Returns only if the server task stops, which it does not do on its own.
    pub async fn serve(mut self) -> Result<(), SimError> {
        (&mut self.task)
            .await
            .map_err(|e| SimError::Io(std::io::Error::other(e)))
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`; clients append the path: `/chat/completions` (or
    /// `/v1/chat/completions`) for the chat profiles; `/v1/messages`, `/anthropic/v1/messages` or
    /// the Vertex `/v1/projects/…:rawPredict` path for the `anthropic` profile.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The profile name.
    pub fn profile(&self) -> &str {
        self.shared.profile.name()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Replaces the rule switches for subsequent requests.
    pub fn set_switches(&self, switches: Switches) {
        *lock(&self.shared.switches) = switches;
    }

    /// Checks a `reasoning.text` signature minted for `model` over `text` with [`DEFAULT_KEY`].
    pub fn verify_signature(model: &str, text: &str, signature: &str) -> bool {
        sign::verify_text(DEFAULT_KEY, model, text, signature)
    }

    /// Checks a `reasoning.encrypted` `data` blob minted for `model` with [`DEFAULT_KEY`].
    ///
    /// The same sealed format carries gemini-openai's `thought_signature`s and copilot's
    /// `reasoning_opaque` / `function.thought_signature`, so this checks those too.
    pub fn verify_encrypted(model: &str, data: &str) -> bool {
        sign::verify_data(DEFAULT_KEY, model, data)
    }

    /// Signs `text` for `model` with [`DEFAULT_KEY`], as the scripted model does.
    pub fn sign(model: &str, text: &str) -> String {
        sign::sign_text(DEFAULT_KEY, model, text)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.task.abort();
    }
}
