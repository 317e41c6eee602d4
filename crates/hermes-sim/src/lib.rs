//! Loopback simulator of OpenAI-compatible chat-completions providers, of Anthropic's Messages
//! API, of AWS Bedrock Runtime and of Google's generateContent API, with strict per-provider
//! profiles.
//!
//! Each profile validates requests independently from docs/providers.md (it depends on no other
//! hermes crate) and answers violations with the provider's real status, envelope and message.
//! Behind the profiles sits a deterministic scripted reasoning model that mints HMAC-signed
//! reasoning items and runs `[tools=N]` tool loops. Everything listens on 127.0.0.1 only.
//! Every profile (and a [`ProfileSpec`], unless told otherwise) refuses a tool call without its
//! `tool` result and a result without its call, with the provider's text (docs/providers.md,
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
//! assistant turn of an in-flight tool loop must carry its thinking blocks unmodified. Bound
//! models ([`BOUND_MODELS`], [`anthropic_is_bound`]) and requests setting
//! `thinking.block_binding` ([`BLOCK_BINDING_BETA`]) also bind each block to `tools`, the model
//! and the account, refuse a block put back after a request left it out or dropped from the
//! middle, and with `drop_block` drop such blocks and list them in `input_transformations`
//! (docs/spec.md §5a). On-demand compaction (`compaction: {"type": "summarize"}`,
//! [`COMPACTION_BETA`]) answers a sealed `compaction` block the profile verifies when replayed.
//! Streams are Anthropic SSE (`message_start` … `message_stop`).
//!
//! The `bedrock` profile answers AWS Bedrock Runtime: `POST {base}/model/{modelId}/converse`,
//! `/converse-stream`, `/invoke` and `/invoke-with-response-stream` (the model id percent-encoded
//! in the path). Requests authenticate with a Bedrock API key (`Authorization: Bearer`, see
//! [`SIM_BEDROCK_API_KEY`]) or with AWS Signature Version 4, recomputed with the official
//! `aws-sigv4` crate over the request as received for the credential pair
//! [`SIM_AWS_ACCESS_KEY_ID`] / [`SIM_AWS_SECRET_ACCESS_KEY`] (or the pair given to
//! [`SimBuilder::aws_credentials`]). Converse bodies are validated strictly
//! ([`BEDROCK_CONVERSE_TOP_LEVEL`], one-member unions, turn order, tool pairing) and replayed
//! reasoning is checked per model: Claude's `reasoningContent` is signed and verified, DeepSeek-R1
//! and Kimi K3 take reasoning only inside the in-flight tool loop, other models take it unsigned.
//! Streams are AWS event-stream frames written with `aws-smithy-eventstream`. InvokeModel takes an
//! Anthropic Messages body (`anthropic_version: "bedrock-2023-05-31"`) and is served by the
//! `anthropic` profile's rules and model.
//!
//! The `gemini` profile answers Google's native generateContent API: AI Studio
//! `POST {base}/v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse` (also
//! without the `/v1beta` prefix, for a client whose base URL ends in `/v1beta`; key in
//! `x-goog-api-key`, a `?key=` in the URL refused) and Vertex
//! `POST {base}/v1/projects/{p}/locations/{r}/publishers/google/models/{model}:generateContent`
//! (`Authorization: Bearer` required). Its schema refuses every unknown name with Google's
//! `Invalid JSON payload received. Unknown name …: Cannot find field.` and field violations;
//! `thoughtSignature`s are minted bound to the model and the turn's content (in the sealed format
//! `gemini-openai` uses, so each door verifies the other's) and enforced on the first
//! `functionCall` part of each model turn of the current turn (Gemini 3). Misplaced signatures it
//! accepts are reported in the `x-hermes-sim-degraded` response header and
//! [`RecordedRequest::notes`]. Streams are SSE with CRLF line ends, or a JSON array without
//! `alt=sse`. The scripted model takes `[tools=N]` (N sequential steps) and `[parallel=M]` (M
//! parallel calls per step).
//!
//! The `openai-responses` profile answers OpenAI's Responses API: `POST {base}/v1/responses` and
//! `POST {base}/responses` (`Authorization: Bearer` required). Its schema refuses unknown keys at
//! every level with `Unknown parameter: 'X'.` ([`OPENAI_RESPONSES_TOP_LEVEL`]); it stores
//! nothing, so `previous_response_id` is never found and every replayed `reasoning` item must
//! carry `encrypted_content` minted for the same model and organisation
//! ([`SimBuilder::openai_organization`]), immediately followed by its function call or assistant
//! message; `fc_…` / `msg_…` ids it minted need their `rs_…` item, and tool calls and outputs pair
//! by `call_id`. Replies are a `reasoning` item then a `function_call` (`[tools=N]`) or a
//! `message`; streams are Responses SSE (`response.created` … `response.completed`).
//!
//! [`PROFILES`] is the one table of built-in profiles (name, stand-in provider, default model,
//! `--help` line). A provider that is not built in is simulated from its own rules with a
//! [`ProfileSpec`] passed to [`Sim::builder`]. The library neither reads the environment nor
//! prints: binaries pass the signing key ([`KEY_ENV`]) and print [`Sim::base_url`] themselves.
//!
//! The `bedrock` profile is behind the `bedrock` cargo feature (on by default), the only one
//! that needs the AWS crates (SigV4, event-stream frames); [`Profile::builtin`] names the
//! feature when a build leaves it out.

// Without the `bedrock` profile, what only it uses (the Converse thinking format, the InvokeModel
// door of the Anthropic rules, the Bedrock API key) is unused: dead code is linted on the
// default build.
#![cfg_attr(not(feature = "bedrock"), allow(dead_code))]

/// Declares builder methods that each set one field and hand the builder back:
/// `method(arg: Type) => field = value;` (or `method() => field = value;`), each after its doc.
macro_rules! setters {
    ($($(#[$doc:meta])* $method:ident($($arg:ident: $ty:ty)?) => $field:ident = $value:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $method(mut self $(, $arg: $ty)?) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}

mod anthropic;
#[cfg(feature = "bedrock")]
mod bedrock;
mod builtin;
mod custom;
mod gemini;
mod model;
mod openai_responses;
mod profile;
mod rules;
mod server;
mod sign;
mod wire;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use anthropic::binding::{
    BLOCK_BINDING_BETA, BOUND_MODELS, BoundFamily, anthropic_is_bound, claude_version,
};
pub use anthropic::compaction::{COMPACTION_BETA, THRESHOLD_BETA};
pub use anthropic::rules::ANTHROPIC_TOP_LEVEL;
#[cfg(feature = "bedrock")]
pub use bedrock::rules::CONVERSE_TOP_LEVEL as BEDROCK_CONVERSE_TOP_LEVEL;
pub use builtin::{PROFILES, ProfileInfo};
pub use custom::{EchoTurns, ProfileSpec, ReplyCarrier, ValueRule};
pub use openai_responses::schema::TOP_LEVEL as OPENAI_RESPONSES_TOP_LEVEL;
pub use profile::Profile;
pub use rules::{GEMINI_TOP_LEVEL, OPENAI_TOP_LEVEL};
pub use sign::DEFAULT_KEY;

/// The request schemas the simulators hold bodies to, as the lists they check against, for a
/// test outside to compare with another checker's copy (hermes-conformance's wire invariants
/// keep their own, written from the same official sources; the simulator depends on no hermes
/// crate, so the lists are compared, not shared).
pub mod schema {
    /// AWS Bedrock Converse (botocore's `bedrock-runtime` service model).
    #[cfg(feature = "bedrock")]
    pub mod converse {
        pub use crate::bedrock::rules::{
            CACHE_POINT_KEYS, CONTENT_MEMBERS, CONVERSE_TOP_LEVEL as REQUEST_MEMBERS,
            INFERENCE_CONFIG_KEYS, MESSAGE_KEYS, REASONING_MEMBERS, REASONING_TEXT_KEYS,
            SYSTEM_MEMBERS, SYSTEM_TOOL_KEYS, TOOL_CONFIG_KEYS, TOOL_MEMBERS, TOOL_RESULT_KEYS,
            TOOL_RESULT_MEMBERS, TOOL_SPEC_KEYS, TOOL_USE_KEYS,
        };
    }

    /// Anthropic Messages (the `anthropic` SDK's request params).
    pub mod messages {
        pub use crate::anthropic::rules::{
            ANTHROPIC_TOP_LEVEL as TOP_LEVEL, BLOCK_TAGS, CACHE_CONTROL_KEYS, CUSTOM_TOOL_KEYS,
            DOCUMENT_KEYS, DOOR_TOP_LEVEL, IMAGE_KEYS, MESSAGE_KEYS, OUTPUT_CONFIG_KEYS,
            REDACTED_THINKING_KEYS, TEXT_KEYS, THINKING_KEYS, TOOL_RESULT_CONTENT_TAGS,
            TOOL_RESULT_KEYS, TOOL_USE_KEYS,
        };
    }
}

/// Environment variable the simulator binaries (`hermes-sim`, `hermes sim serve`) read to override
/// the signing key; the library never reads it (pass the key to [`SimBuilder::key`]).
pub const KEY_ENV: &str = "HERMES_SIM_KEY";

/// The loopback address every simulator binds. A client that has not started one (a preview of
/// the next request) can still name the host its requests would go to: routes and provenance
/// read the host, never the port.
pub const HOST: &str = "127.0.0.1";

/// The AWS access key id the `bedrock` profile knows by default (SigV4).
pub const SIM_AWS_ACCESS_KEY_ID: &str = "AKIDHERMESSIM";

/// The secret access key paired with [`SIM_AWS_ACCESS_KEY_ID`].
pub const SIM_AWS_SECRET_ACCESS_KEY: &str = "hermes+sim/Secret/Access/Key/EXAMPLEKEY0000";

/// A session token for tests of temporary credentials: the `bedrock` profile requires it only when
/// started with it ([`SimBuilder::aws_credentials`]); by default a request carrying any
/// `x-amz-security-token` is refused as an unrecognized client.
pub const SIM_AWS_SESSION_TOKEN: &str = "hermes-sim-session-token//EXAMPLE";

/// The Bedrock API key (`Authorization: Bearer …`) the `bedrock` profile accepts by default.
pub const SIM_BEDROCK_API_KEY: &str = "ABSKaGVybWVzLXNpbS1iZWRyb2NrLWFwaS1rZXk=";

/// The organisation the `openai-responses` profile mints `encrypted_content` for by default.
pub const SIM_OPENAI_ORGANIZATION: &str = "org-hermes-sim";

/// Per-test rule switches.
#[derive(Clone, Debug, Default)]
pub struct Switches {
    /// Message keys refused as unknown fields (on any message; not used by the `anthropic`,
    /// `bedrock` and `gemini` profiles, whose schemas refuse every unknown key already), with the
    /// profile's own unknown-field refusal (Mistral: 422 `extra_forbidden`; Groq, Cerebras: their
    /// "is unsupported" forms; a [`ProfileSpec`]: its
    /// [`unknown_field_text`](ProfileSpec::unknown_field_text)) or a generic 400
    /// "Unrecognized request argument supplied: messages.N.FIELD" in the profile's envelope.
    pub reject_message_fields: Vec<String>,
    /// Streams emit a few deltas after the 200, then `data: {"error":{...,"code":502}}` and end
    /// (the `anthropic` profile: `event: error` with an `overloaded_error`; the `bedrock` profile:
    /// an event-stream frame with `:message-type: exception`, `throttlingException` unless
    /// [`model_stream_error`](Switches::model_stream_error); the `gemini` profile: three chunks,
    /// then `data: {"error":{"code":503,…,"status":"UNAVAILABLE"}}`; the `openai-responses`
    /// profile: the reasoning item's first events, then `response.failed` with a `server_error`).
    pub fail_mid_stream: bool,
    /// `bedrock`: the mid-stream exception is `modelStreamErrorException` instead of
    /// `throttlingException`.
    pub model_stream_error: bool,
    /// `bedrock`: Claude replies with thinking on carry a `redactedContent` reasoning block after
    /// the signed `reasoningText` (as a user text containing `[redacted]` does).
    pub redacted_reasoning: bool,
    /// `bedrock`: any replayed `redactedContent` is refused with a `ValidationException` about
    /// redacted content (to test a client's one-time strip-and-resend recovery).
    pub refuse_redacted: bool,
    /// `bedrock`: SigV4 requests whose `x-amz-date` is more than 5 minutes from the clock are
    /// refused (`Signature expired` / `Signature not yet current`); off by default.
    pub check_clock_skew: bool,
    /// `gemini`: the AI Studio door refuses a request without `x-goog-api-key` (or a bearer
    /// token) with Google's 403 `PERMISSION_DENIED` "Method doesn't allow unregistered callers
    /// …"; off by default (a loopback base URL needs no key).
    pub require_api_key: bool,
    /// `gemini`: a streamed text turn's `thoughtSignature` rides on its last text fragment instead
    /// of on a trailing `{"text":"","thoughtSignature":…}` part (the default).
    pub signature_on_text_fragment: bool,
    /// `openai-responses`: every reply stops after its reasoning item as `incomplete` with
    /// `incomplete_details: {"reason":"max_output_tokens"}` (a stream ends with
    /// `response.incomplete`).
    pub max_output_tokens_reached: bool,
}

impl Switches {
    /// Adds a message key to refuse as an unknown field.
    pub fn reject_message_field(mut self, field: impl Into<String>) -> Self {
        self.reject_message_fields.push(field.into());
        self
    }

    setters! {
        /// Turns on the mid-stream failure.
        failing_mid_stream() => fail_mid_stream = true;
        /// Makes Bedrock Claude replies carry a `redactedContent` block.
        with_redacted_reasoning() => redacted_reasoning = true;
        /// Makes the `bedrock` profile refuse any replayed `redactedContent`.
        refusing_redacted() => refuse_redacted = true;
        /// Makes the `bedrock` profile refuse SigV4 requests signed more than 5 minutes off.
        checking_clock_skew() => check_clock_skew = true;
        /// Makes the `gemini` profile's AI Studio door require an API key.
        requiring_api_key() => require_api_key = true;
        /// Makes `openai-responses` replies stop as `incomplete` after the reasoning item.
        reaching_max_output_tokens() => max_output_tokens_reached = true;
        /// Makes the `gemini` profile sign a streamed text turn on its last text fragment.
        signing_text_fragment() => signature_on_text_fragment = true;
    }

    /// Turns on the mid-stream failure as a Bedrock `modelStreamErrorException`.
    pub fn failing_with_model_stream_error(mut self) -> Self {
        self.fail_mid_stream = true;
        self.model_stream_error = true;
        self
    }
}

/// The AWS credential pair (and optional session token) the `bedrock` profile accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCredentials {
    /// Access key id (the `Credential=` scope's first part).
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token required in `x-amz-security-token`; `None`: no token may be sent.
    pub session_token: Option<String>,
}

impl Default for AwsCredentials {
    /// [`SIM_AWS_ACCESS_KEY_ID`] / [`SIM_AWS_SECRET_ACCESS_KEY`], no session token.
    fn default() -> AwsCredentials {
        AwsCredentials {
            access_key_id: SIM_AWS_ACCESS_KEY_ID.to_owned(),
            secret_access_key: SIM_AWS_SECRET_ACCESS_KEY.to_owned(),
            session_token: None,
        }
    }
}

/// One request as the simulator saw and answered it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// Request path, e.g. `/v1/chat/completions` (the `gemini` profile records the query too,
    /// e.g. `…:streamGenerateContent?alt=sse`, with any `key` value as `<redacted>`).
    pub path: String,
    /// Request headers in arrival order (names lower case). Credential values (`authorization`,
    /// `proxy-authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, `cookie`,
    /// `x-amz-security-token`) are recorded as `<redacted>`.
    pub headers: Vec<(String, String)>,
    /// Parsed JSON body (`Value::Null` when the body was not JSON).
    pub body: serde_json::Value,
    /// Raw body bytes.
    pub raw: Vec<u8>,
    /// HTTP status returned.
    pub status: u16,
    /// The response body, or the full SSE text sent for a stream. A Bedrock event stream is
    /// recorded as text, one line per frame: `event <event-type> <payload>` or
    /// `exception <exception-type> <payload>` (a `chunk` frame's payload with its `bytes`
    /// decoded).
    pub response: String,
    /// The simulator's notes on an accepted request it found degraded: the `gemini` profile's
    /// misplaced `thoughtSignature`s (on a parallel call other than the first, on a non-call part
    /// of a function-call turn, not on the last part of a text turn, on a user turn), signatures
    /// that do not verify outside the current turn, and Gemini 3 model turns replayed without
    /// one; the `anthropic` profile's thinking blocks dropped under
    /// `thinking.block_binding` `drop_block` (`messages.1.content.0: thinking block dropped
    /// (prefix_binding_mismatch)`); the `openai-responses` profile's reasoning items dropped
    /// silently after a prefix change (`input[1]: reasoning item rs_… dropped (the prefix changed
    /// since it was made)`). Each note starts with the location, e.g. `contents[3].parts[2]: …`.
    /// Empty otherwise.
    pub notes: Vec<String>,
}

/// Errors starting the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The profile name is not one of [`PROFILES`].
    #[error("unknown profile `{0}`, expected one of {names}", names = builtin::names())]
    UnknownProfile(String),
    /// The profile is built in, but this build left it out (its cargo feature is off).
    #[error(
        "simulator profile `{profile}` needs the \"{feature}\" cargo feature, which this build leaves out"
    )]
    NotBuilt {
        /// The profile's name.
        profile: String,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
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
    /// The credential pair the `bedrock` profile accepts (SigV4); [`Sim::set_aws_credentials`]
    /// rotates it.
    pub(crate) aws: Mutex<AwsCredentials>,
    /// The Bedrock API key the `bedrock` profile accepts (`Authorization: Bearer`).
    pub(crate) bedrock_api_key: String,
    /// The organisation the `openai-responses` profile mints and verifies ciphertext for.
    pub(crate) openai_org: String,
    /// The pause before each SSE event after the first ([`SimBuilder::chunk_delay`]).
    pub(crate) chunk_delay: Duration,
    /// The pause before any answer ([`SimBuilder::reply_delay`]).
    pub(crate) reply_delay: Duration,
    /// What the `anthropic` profile remembers of earlier requests: the turns it minted thinking
    /// for and the blocks a request left out (`anthropic::binding`).
    pub(crate) anthropic_ledger: Mutex<anthropic::binding::Ledger>,
    /// The prefix each reasoning item the `openai-responses` profile minted was made after.
    pub(crate) responses_minted: Mutex<openai_responses::prefix::Minted>,
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
    aws: AwsCredentials,
    bedrock_api_key: String,
    openai_org: String,
    chunk_delay: Duration,
    reply_delay: Duration,
}

impl SimBuilder {
    setters! {
        /// Delays every answer: a pause of `delay` after a request's body has been read and before
        /// anything of the response (status, headers, first byte) is written, streamed or not, on
        /// every profile (default zero: no pause). The simulator then stands for an upstream that
        /// takes `delay` to answer (`cargo xtask bench serve`'s paced upstream); unlike
        /// [`SimBuilder::chunk_delay`] it also slows whole (non-streamed) replies.
        reply_delay(delay: Duration) => reply_delay = delay;
        /// Paces streamed replies: a pause of `delay` before each SSE event after the first
        /// (default zero: no pause). While pacing, each event is still written in small cuts, but
        /// no cut spans two events, so a reader sees the events arrive one at a time, `delay`
        /// apart; a stream of E events stays open at least (E - 1) × `delay`. This makes the
        /// simulator a slow upstream, for load tests that need many streams in flight at once
        /// (`cargo xtask bench`'s gateway section). Every profile's SSE streams are paced;
        /// Bedrock's event streams and Gemini's JSON-array streams (no `alt=sse`) are not.
        chunk_delay(delay: Duration) => chunk_delay = delay;
        /// The organisation the `openai-responses` profile mints `encrypted_content` for and
        /// accepts it from (default [`SIM_OPENAI_ORGANIZATION`]); ciphertext minted by a simulator
        /// of another organisation is refused with OpenAI's `organization_id did not match` text.
        openai_organization(org: impl Into<String>) => openai_org = org.into();
        /// The Bedrock API key the `bedrock` profile accepts as `Authorization: Bearer KEY`
        /// (default [`SIM_BEDROCK_API_KEY`]).
        bedrock_api_key(key: impl Into<String>) => bedrock_api_key = key.into();
        /// Rule switches (default: none).
        switches(switches: Switches) => switches = switches;
        /// The signing key (default [`DEFAULT_KEY`]).
        key(key: impl Into<Vec<u8>>) => key = key.into();
        /// The loopback port to bind (default 0: a free port).
        port(port: u16) => port = port;
    }

    /// The AWS credentials the `bedrock` profile accepts for SigV4 (default
    /// [`AwsCredentials::default`]: [`SIM_AWS_ACCESS_KEY_ID`] / [`SIM_AWS_SECRET_ACCESS_KEY`], no
    /// session token). With a session token, signed requests must carry it in
    /// `x-amz-security-token`.
    pub fn aws_credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> Self {
        self.aws = AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
        };
        self
    }

    /// Binds 127.0.0.1 and starts serving in a background task.
    pub async fn start(self) -> Result<Sim, SimError> {
        let listener = TcpListener::bind((HOST, self.port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            profile: self.profile,
            key: self.key,
            switches: Mutex::new(self.switches),
            requests: Mutex::new(Vec::new()),
            cached_requests: AtomicU64::new(0),
            aws: Mutex::new(self.aws),
            bedrock_api_key: self.bedrock_api_key,
            openai_org: self.openai_org,
            chunk_delay: self.chunk_delay,
            reply_delay: self.reply_delay,
            anthropic_ledger: Mutex::new(anthropic::binding::Ledger::default()),
            responses_minted: Mutex::new(Default::default()),
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
            aws: AwsCredentials::default(),
            bedrock_api_key: SIM_BEDROCK_API_KEY.to_owned(),
            openai_org: SIM_OPENAI_ORGANIZATION.to_owned(),
            chunk_delay: Duration::ZERO,
            reply_delay: Duration::ZERO,
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
    /// the Vertex `/v1/projects/…:rawPredict` path for the `anthropic` profile;
    /// `/model/{modelId}/converse` (and `-stream`, `/invoke`, `/invoke-with-response-stream`) for
    /// the `bedrock` profile; `/v1beta/models/{model}:generateContent` (or
    /// `:streamGenerateContent?alt=sse`, or the Vertex `/v1/projects/…/publishers/google/models/…`
    /// path) for the `gemini` profile; `/v1/responses` (or `/responses`) for the
    /// `openai-responses` profile.
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

    /// Rotates the AWS credentials the `bedrock` profile accepts, as AWS does when temporary
    /// credentials expire: from now on only these sign.
    pub fn set_aws_credentials(
        &self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) {
        *lock(&self.shared.aws) = AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
        };
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
    /// The same sealed format carries gemini-openai's `thought_signature`s, the `gemini`
    /// profile's `thoughtSignature`s (whose content binding this does not check) and copilot's
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
