//! What several modules share: for the SDK-evidence modules (`sdk_bedrock`, `sdk_gemini`,
//! `sdk_responses`), running a script with the SDK's Python away from the machine's own provider
//! settings and reading a header of a request the loopback recorder
//! took; for the wire modules, a server that refuses once and then answers, a turn through the
//! turn driver for a one-refusal recovery, and a plain chat-completions request; for the modules
//! checking the native wires against their strict simulators, each wire built for its simulator.

use std::process::Command;
use std::sync::Mutex;
use std::time::SystemTime;

use hermes_aws::{AwsAuth, AwsCredentials, AwsSigner};
use hermes_core::driver::MemoryLog;
use hermes_core::driver::{Conversation, Driver, DriverConfig, DriverEvent, TurnOutcome};
use hermes_core::{
    Delta, Message, Origin, Outgoing, RawJson, Reply, RequestParts, ResolveOptions, Role,
    RouteDecision, RouteTarget, ThinkingRequest, TransportError, Verdicts, Wire,
};
use hermes_providers::{Auth, ChatTransport};
use hermes_sim::{SIM_AWS_ACCESS_KEY_ID, SIM_AWS_SECRET_ACCESS_KEY, Sim};
use hermes_test_support::memory::NoTools;
use hermes_wire_anthropic::{self as anthropic, AnthropicWire};
use hermes_wire_bedrock::{self as bedrock, BedrockWire};
use hermes_wire_chat::{ChatRequest, Endpoint};
use hermes_wire_gemini::{self as gemini, GeminiWire};
use hermes_wire_responses::ResponsesWire;
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub(crate) use hermes_test_support::sdk::python;

/// What `f` makes of the request parts of `history` with `tools` (chat-completions JSON), routed
/// by the built-in table at (provider, base URL, model).
pub(crate) fn with_parts<T>(
    (provider, base_url, model): (&str, &str, &str),
    history: &[Message],
    tools: &str,
    f: impl FnOnce(RequestParts<'_>) -> T,
) -> T {
    let decision = hermes_providers::builtin_table().resolve(
        &RouteTarget::new(provider, Some(base_url), model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let tools = RawJson::from_text(tools).unwrap();
    f(RequestParts::new(history, &decision, &verdicts).tools(Some(&tools)))
}

/// A keyless endpoint at `base_url`, and the origin of a reply from it: `provider`'s `model` on
/// the loopback host.
pub(crate) fn loopback(base_url: String, provider: &str, model: &str) -> (Endpoint, Origin) {
    let endpoint = Endpoint {
        base_url,
        api_key: None,
    };
    let origin = Origin {
        provider: provider.into(),
        host: "127.0.0.1".into(),
        model: model.into(),
    };
    (endpoint, origin)
}

/// Runs `script` with `python` (see [`python`]) and `input` on standard input: its exit code,
/// standard output and standard error.
pub(crate) fn run(python: Command, script: &str, input: &str) -> (Option<i32>, String, String) {
    hermes_test_support::sdk::run(python, script, input).unwrap()
}

/// The value of header `name` of `request`, when it has one in visible ASCII.
pub(crate) fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Mounts on `server`, for POSTs to `at`: exactly one whose body contains `marker`, answered
/// 400 with `refusal`, and exactly one whose body does not, answered 200 with `reply` (JSON).
pub(crate) async fn refused_once(
    server: &MockServer,
    at: &str,
    marker: &'static str,
    refusal: &str,
    reply: &str,
) {
    Mock::given(method("POST"))
        .and(path(at))
        .and(move |r: &Request| String::from_utf8_lossy(&r.body).contains(marker))
        .respond_with(ResponseTemplate::new(400).set_body_raw(refusal, "application/json"))
        .expect(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(at))
        .and(move |r: &Request| !String::from_utf8_lossy(&r.body).contains(marker))
        .respond_with(ResponseTemplate::new(200).set_body_raw(reply, "application/json"))
        .expect(1)
        .mount(server)
        .await;
}

/// The user's turn "And now?" on `conversation`, on `wire` under `decision`, through the turn
/// driver set for a recovery test (no thinking preference, no backoff retry: a refusal is
/// answered by the wire's one-time recovery or not at all; tools never called): its outcome, the
/// driver's events (debug-printed) and the messages it stored.
pub(crate) async fn recovery_turn(
    decision: &RouteDecision,
    wire: &dyn Wire,
    conversation: &mut Conversation,
) -> (TurnOutcome, Vec<String>, Vec<Message>) {
    let log = MemoryLog::default();
    let mut config = DriverConfig::default();
    config.thinking = ThinkingRequest::NoPreference;
    config.max_backoff_retries = 0;
    let events = Mutex::new(Vec::new());
    let notify = |e: &DriverEvent| events.lock().unwrap().push(format!("{e:?}"));
    let driver = Driver {
        decision,
        wire,
        log: &log,
        tools: &NoTools,
        config: &config,
        notify: &notify,
    };
    let outcome = driver
        .run_turn(conversation, Message::text(Role::User, "And now?"))
        .await
        .unwrap();
    (outcome, events.into_inner().unwrap(), log.messages())
}

/// The chat-completions request for `history` under `decision`: no verdicts, no thinking
/// preference, streamed when `stream`.
pub(crate) fn chat_request<'a>(
    history: &'a [Message],
    decision: &'a RouteDecision,
    stream: bool,
) -> ChatRequest<'a> {
    let mut request = ChatRequest::build(
        history,
        decision,
        &Verdicts::default(),
        ThinkingRequest::NoPreference,
    );
    request.stream = stream;
    request
}

/// A native wire in front of its strict simulator (see [`sim_wire`]).
pub(crate) struct SimWire {
    /// The simulator; its recorded requests are the wire's.
    pub(crate) sim: Sim,
    /// The base URL the wire sends to and the route target names.
    pub(crate) base: String,
    /// The provider the route target names.
    pub(crate) provider: &'static str,
    /// The wire.
    pub(crate) wire: Box<dyn Wire>,
}

/// The simulator `profile` started and its native wire built for it: `anthropic` (the Messages
/// wire, an API key), `bedrock` (Converse, SigV4 with the simulator's credentials), `gemini` (AI
/// Studio, an API key) or `openai-responses` (a bearer key).
pub(crate) async fn sim_wire(profile: &str) -> SimWire {
    let sim = Sim::start(profile).await.unwrap();
    let (provider, base, wire): (_, _, Box<dyn Wire>) = match profile {
        "anthropic" => {
            let base = sim.base_url();
            let wire = AnthropicWire {
                auth: Some(Auth::Header("x-api-key", "sk-ant-test".into())),
                ..anthropic_at(&base)
            };
            ("anthropic", base, Box::new(wire))
        }
        "bedrock" => {
            let base = sim.base_url();
            let wire = BedrockWire {
                auth: Some(AwsSigner::shared(
                    AwsAuth::SigV4 {
                        credentials: AwsCredentials {
                            access_key_id: SIM_AWS_ACCESS_KEY_ID.into(),
                            secret_access_key: SIM_AWS_SECRET_ACCESS_KEY.into(),
                            session_token: None,
                        },
                        region: "us-east-1".into(),
                    },
                    SystemTime::now,
                )),
                ..bedrock_at(&base)
            };
            ("bedrock", base, Box::new(wire))
        }
        "gemini" => {
            let base = format!("{}/v1beta", sim.base_url());
            let wire = GeminiWire {
                auth: Some(Auth::Header("x-goog-api-key", "AIza-test".into())),
                ..gemini_at(&base)
            };
            ("gemini", base, Box::new(wire))
        }
        "openai-responses" => {
            let base = format!("{}/v1", sim.base_url());
            let wire = ResponsesWire {
                auth: Some(Auth::Bearer("sk-sim".into())),
                ..responses_at(&base)
            };
            ("openai-responses", base, Box::new(wire))
        }
        other => panic!("no native wire for the simulator profile {other}"),
    };
    SimWire {
        sim,
        base,
        provider,
        wire,
    }
}

/// Mounts on `server`, for every POST to `at`, the answer `status` with `body` of
/// `content_type`.
pub(crate) async fn answer(
    server: &MockServer,
    at: &str,
    status: u16,
    body: impl Into<Vec<u8>>,
    content_type: &str,
) {
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(status).set_body_raw(body, content_type))
        .mount(server)
        .await;
}

/// Every way `ours` differs from `sdk` (an SDK's body for the same request), one line each
/// naming the path ([`hermes_test_support::sdk::differences`]): a key we send that the SDK did
/// not is always a difference here.
pub(crate) fn differences(ours: &Value, sdk: &Value) -> Vec<String> {
    hermes_test_support::sdk::differences(ours, sdk, &|_, ours| {
        Some(format!("hermes sent {ours}, the SDK did not"))
    })
}

/// The chat-completions wire to `base`, without a key.
pub(crate) fn chat_at(base: &str) -> hermes_wire_chat::HttpChat {
    hermes_wire_chat::HttpChat {
        client: ChatTransport::new().unwrap(),
        endpoint: Endpoint {
            base_url: base.into(),
            api_key: None,
        },
    }
}

/// The Anthropic Messages wire (direct) to `base`, without a key or a configured
/// `max_tokens`.
pub(crate) fn anthropic_at(base: &str) -> AnthropicWire {
    AnthropicWire {
        client: ChatTransport::new().unwrap(),
        target: anthropic::Target {
            flavor: anthropic::Flavor::Direct,
            base_url: base.into(),
            max_tokens: None,
            account: None,
        },
        auth: None,
    }
}

/// The Converse wire to `base`, unsigned.
pub(crate) fn bedrock_at(base: &str) -> BedrockWire {
    BedrockWire {
        client: ChatTransport::new().unwrap(),
        target: bedrock::Target {
            base_url: base.into(),
            max_tokens: None,
            account: None,
        },
        auth: None,
    }
}

/// The Gemini wire (AI Studio) to `base`, without a key.
pub(crate) fn gemini_at(base: &str) -> GeminiWire {
    GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: gemini::Target {
            flavor: gemini::Flavor::AiStudio,
            base_url: base.into(),
            max_tokens: None,
        },
        auth: None,
    }
}

/// The Responses wire to `base`, without a key.
pub(crate) fn responses_at(base: &str) -> ResponsesWire {
    ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: base.into(),
        auth: None,
    }
}

/// The content type of a JSON body.
pub(crate) const JSON: &str = "application/json";

/// Answers the one POST to `at` that carries every header of `headers` with `status` and
/// `body` of `content_type`; the server fails the test when it drops without exactly one such
/// request.
pub(crate) async fn answer_once(
    server: &MockServer,
    at: &str,
    headers: &[(&str, &str)],
    status: u16,
    body: impl Into<Vec<u8>>,
    content_type: &str,
) {
    let mut mock = Mock::given(method("POST")).and(path(at));
    for (name, value) in headers {
        mock = mock.and(wiremock::matchers::header(*name, *value));
    }
    mock.respond_with(ResponseTemplate::new(status).set_body_raw(body, content_type))
        .expect(1)
        .mount(server)
        .await;
}

/// What `wire` fails `out` with, sent as from `origin` (streamed text ignored): the test
/// expects no reply.
pub(crate) async fn failure(wire: &dyn Wire, out: &Outgoing, origin: Origin) -> TransportError {
    wire.send(out, origin, &|_| {}).await.unwrap_err()
}

/// Asserts that `err` is a stream that broke after the 200 ([`TransportError::Stream`]) and
/// that its message says `words`.
pub(crate) fn assert_broken_stream(err: &TransportError, words: &str) {
    assert!(
        matches!(err, TransportError::Stream(m) if m.contains(words)),
        "{err:?}"
    );
}

/// Sends `out` through `wire` as from `origin`, recording each streamed delta (`R:` readable
/// thinking, `C:` answer text, any other as debugged): the reply, and the deltas in order.
pub(crate) async fn send_recorded(
    wire: &dyn Wire,
    out: &Outgoing,
    origin: Origin,
) -> (Reply, Vec<String>) {
    let seen = Mutex::new(Vec::new());
    let on_delta = |d: Delta<'_>| {
        seen.lock().unwrap().push(match d {
            Delta::Reasoning(t) => format!("R:{t}"),
            Delta::Content(t) => format!("C:{t}"),
            other => format!("{other:?}"),
        });
    };
    let reply = wire.send(out, origin, &on_delta).await.unwrap();
    (reply, seen.into_inner().unwrap())
}
