//! Loopback simulator of OpenAI-compatible chat-completions providers with strict per-provider profiles.
//!
//! Each profile validates requests independently from PROVIDERS.md (it depends on no other hermes
//! crate) and answers violations with the provider's real status, envelope and message. Behind
//! the profiles sits a deterministic scripted reasoning model that mints HMAC-signed reasoning
//! items and runs `[tools=N]` tool loops. Everything listens on 127.0.0.1 only.

mod model;
mod profile;
mod rules;
mod server;
mod sign;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use profile::{OPENAI_TOP_LEVEL, Profile};
pub use rules::{ACME_TOP_LEVEL, GEMINI_TOP_LEVEL};
pub use sign::DEFAULT_KEY;

/// Names of the available profiles.
pub const PROFILES: &[&str] = &[
    "deepseek-v4",
    "deepseek-v3",
    "mistral",
    "openrouter",
    "openai",
    "local",
    "kimi",
    "mimo",
    "groq",
    "cerebras",
    "gemini-openai",
    "copilot",
    "acme",
];

/// Environment variable `serve` reads to override the signing key.
pub const KEY_ENV: &str = "HERMES_SIM_KEY";

/// Per-test rule switches.
#[derive(Clone, Debug, Default)]
pub struct Switches {
    /// Message keys refused as unknown fields (on any message), with the profile's own
    /// unknown-field refusal (Mistral: 422 `extra_forbidden`; Groq, Cerebras, Acme: their
    /// "is unsupported" / "unknown field" forms) or a generic 400
    /// "Unrecognized request argument supplied: messages.N.FIELD" in the profile's envelope.
    pub reject_message_fields: Vec<String>,
    /// Streams emit a few deltas after the 200, then `data: {"error":{...,"code":502}}` and end.
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
    #[error(
        "unknown profile `{0}`, expected one of deepseek-v4, deepseek-v3, mistral, openrouter, openai, local, kimi, mimo, groq, cerebras, gemini-openai, copilot, acme"
    )]
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

async fn bind(
    profile: &str,
    port: u16,
    switches: Switches,
    key: Vec<u8>,
) -> Result<(TcpListener, Arc<Shared>), SimError> {
    let profile =
        Profile::parse(profile).ok_or_else(|| SimError::UnknownProfile(profile.to_owned()))?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let shared = Arc::new(Shared {
        profile,
        key,
        switches: Mutex::new(switches),
        requests: Mutex::new(Vec::new()),
    });
    Ok((listener, shared))
}

impl Sim {
    /// Starts a simulator for `profile` on a free loopback port.
    pub async fn start(profile: &str) -> Result<Sim, SimError> {
        Sim::start_with(profile, Switches::default()).await
    }

    /// Starts a simulator with rule switches.
    pub async fn start_with(profile: &str, switches: Switches) -> Result<Sim, SimError> {
        Sim::start_with_key(profile, switches, DEFAULT_KEY.to_vec()).await
    }

    /// Starts a simulator with rule switches and a signing key other than [`DEFAULT_KEY`].
    pub async fn start_with_key(
        profile: &str,
        switches: Switches,
        key: Vec<u8>,
    ) -> Result<Sim, SimError> {
        let (listener, shared) = bind(profile, 0, switches, key).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared)));
        Ok(Sim { shared, addr, task })
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`; the endpoint is `{base}/chat/completions`.
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

/// Serves `profile` on 127.0.0.1:`port` (0 = a free port) until the process is killed.
///
/// Prints the base URL (e.g. `http://127.0.0.1:41234`) as the first line of stdout. The signing
/// key is [`DEFAULT_KEY`] unless the [`KEY_ENV`] environment variable is set.
pub async fn serve(profile: &str, port: u16) -> Result<(), SimError> {
    serve_with(profile, port, Switches::default()).await
}

/// [`serve`] with rule switches.
pub async fn serve_with(profile: &str, port: u16, switches: Switches) -> Result<(), SimError> {
    let key = std::env::var(KEY_ENV)
        .ok()
        .filter(|k| !k.is_empty())
        .map_or_else(|| DEFAULT_KEY.to_vec(), String::into_bytes);
    let (listener, shared) = bind(profile, port, switches, key).await?;
    let addr = listener.local_addr()?;
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        writeln!(out, "http://{addr}")?;
        out.flush()?;
    }
    server::accept_loop(listener, shared).await;
    Ok(())
}
