//! A loopback Acme JSON server (feature `test-server`, for tests: the example's conformance run
//! and its binary's tests), written from the contract in [`crate::wire`], not from the wire's
//! code: wiremock on 127.0.0.1 answering `POST /v1/think` from what each request says.
//!
//! It plays a scripted model: a user turn containing `[tools=N]` gets N sequential calls of the
//! first tool offered (one per reply, until N tool results follow that user turn), then text.
//! Every reply mints a signed thought whose bytes are deliberately not what a JSON serialiser
//! writes (spaces, an escaped `/`, a number with an exponent), so only a byte-for-byte replay
//! carries them; a thought that comes back must be exactly one it minted, else it answers 400
//! `invalid thought signature`. A strict server ([`AcmeServer::strict`], an older deployment)
//! answers 400 ``unknown field `thinking` `` to a body with a `thinking` member. Every request is
//! recorded with what its reply minted ([`AcmeServer::exchanges`]).

use std::sync::{Arc, Mutex};

use hermes_conformance::live::Exchange;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A model id the server answers as.
pub const MODEL: &str = "acme-json-1";

/// A running server.
pub struct AcmeServer {
    server: MockServer,
    log: Arc<Mutex<Log>>,
}

#[derive(Default)]
struct Log {
    exchanges: Vec<Exchange>,
    minted: Vec<String>,
}

struct Script {
    strict: bool,
    log: Arc<Mutex<Log>>,
}

impl AcmeServer {
    /// A server that takes every member of the contract.
    pub async fn start() -> AcmeServer {
        AcmeServer::with(false).await
    }

    /// An older deployment: `thinking` is an unknown field.
    pub async fn strict() -> AcmeServer {
        AcmeServer::with(true).await
    }

    async fn with(strict: bool) -> AcmeServer {
        let server = MockServer::start().await;
        let log = Arc::new(Mutex::new(Log::default()));
        Mock::given(method("POST"))
            .and(path("/v1/think"))
            .respond_with(Script {
                strict,
                log: Arc::clone(&log),
            })
            .mount(&server)
            .await;
        AcmeServer { server, log }
    }

    /// The base URL (`http://127.0.0.1:PORT`).
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Every request so far, with what its reply minted.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log
            .lock()
            .map(|l| l.exchanges.clone())
            .unwrap_or_default()
    }
}

/// A request's turns, each thought borrowed as its exact bytes.
#[derive(serde::Deserialize)]
struct RawTurns<'a> {
    #[serde(borrow)]
    turns: Vec<RawTurn<'a>>,
}

#[derive(serde::Deserialize)]
struct RawTurn<'a> {
    role: String,
    #[serde(borrow, default)]
    thought: Option<&'a serde_json::value::RawValue>,
}

/// A 400 in Acme's error envelope.
fn refuse(message: &str) -> (u16, String) {
    (400, json!({"error": {"message": message}}).to_string())
}

impl Script {
    /// The status and reply body for `body`, and the thought minted (if any).
    fn answer(&self, body: &str, minted: &[String]) -> ((u16, String), Option<String>) {
        let Ok(request) = serde_json::from_str::<Value>(body) else {
            return (refuse("the body is not JSON"), None);
        };
        if self.strict && request.get("thinking").is_some() {
            return (refuse("unknown field `thinking`"), None);
        }
        let model = request["model"].as_str().unwrap_or_default();
        // Each thought as the bytes it was sent as: exactly one this server minted, for this
        // model.
        let Ok(raw) = serde_json::from_str::<RawTurns<'_>>(body) else {
            return (refuse("turns: not a list of turns"), None);
        };
        for (i, turn) in raw.turns.iter().enumerate() {
            if let Some(thought) = turn.thought {
                let ours = minted.iter().any(|m| m == thought.get());
                let for_model = thought.get().contains(&format!("-{model}\""));
                if turn.role != "assistant" || !ours || !for_model {
                    return (
                        refuse(&format!("turns[{i}].thought: invalid thought signature")),
                        None,
                    );
                }
            }
        }
        let turns = request["turns"].as_array().cloned().unwrap_or_default();
        let last_user = turns.iter().rposition(|t| t["role"] == "user").unwrap_or(0);
        let asked: usize = turns
            .get(last_user)
            .and_then(|t| t["text"].as_str())
            .and_then(|t| t.split("[tools=").nth(1))
            .and_then(|rest| rest.split(']').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let answered = turns[last_user..]
            .iter()
            .filter(|t| t["role"] == "tool")
            .count();
        let n = minted.len() + 1;
        let thought = format!(
            r#"{{ "sig":"acme\/sig-{n}-{}", "text": "step {n}: weighing 1.5e1 options" }}"#,
            model
        );
        let tool = request["tools"][0]["function"]["name"]
            .as_str()
            .unwrap_or("now");
        let reply = if answered < asked {
            format!(
                r#"{{"text":"","thought":{thought},"calls":[{{"id":"call_{n}","name":"{tool}","args":"{{}}"}}],"usage":{{"input":10,"output":4,"thinking":3}}}}"#
            )
        } else {
            format!(
                r#"{{"text":"done after {answered} calls","thought":{thought},"usage":{{"input":12,"output":5,"thinking":2}}}}"#
            )
        };
        ((200, reply), Some(thought))
    }
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body).into_owned();
        let Ok(mut log) = self.log.lock() else {
            return ResponseTemplate::new(500);
        };
        let ((status, reply), minted) = self.answer(&body, &log.minted);
        log.exchanges.push(Exchange {
            status,
            body,
            minted: minted.clone().into_iter().collect(),
        });
        log.minted.extend(minted);
        ResponseTemplate::new(status).set_body_raw(reply, "application/json")
    }
}
