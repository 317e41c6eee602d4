//! The `openai-responses` profile: OpenAI's Responses API (`POST {base}/v1/responses` and
//! `POST {base}/responses`, `Authorization: Bearer` required), written from PROVIDERS.md ("OpenAI
//! Responses API", "Tool-call pairing and turn-order rules", "Notes for the simulator") and SPEC
//! §2, §3c.
//!
//! Requests go through the strict [`schema`] (`Unknown parameter: '…'.`), then [`rules`]
//! (`previous_response_id`, verified `encrypted_content` on every replayed reasoning item,
//! reasoning ↔ following-item pairing, tool-call pairing) and the scripted model in [`reply`]
//! (JSON or SSE). [`seal`] mints and opens the reasoning ciphertext (bound to the model and the
//! simulator's organisation) and the `fc_…` / `msg_…` ids that name their paired `rs_…` item, so
//! the simulator keeps no state and still knows what it minted. The one exception is [`prefix`]:
//! the prefix each reasoning item was made after is remembered, so that an item replayed after a
//! changed prefix is dropped silently (and noted in the record). Errors use OpenAI's envelope
//! `{"error":{"message","type","param","code"}}`.

pub(crate) mod prefix;
pub(crate) mod reply;
pub(crate) mod rules;
pub(crate) mod schema;
pub(crate) mod seal;

use serde_json::{Value, json};

use crate::wire::{Answer, Body, Request};
use crate::{Shared, lock};

/// OpenAI's 401 when no bearer token is sent (the text the real API answers with).
const NO_API_KEY: &str = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the basic auth username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.";

/// OpenAI's answer to a body that is not JSON.
const BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

/// A refusal: status, message, `param` and `code` of OpenAI's envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) status: u16,
    pub(crate) message: String,
    pub(crate) param: Option<String>,
    pub(crate) code: Option<&'static str>,
}

impl Fault {
    /// A 400 `invalid_request_error`.
    pub(crate) fn bad(message: String, param: Option<&str>, code: Option<&'static str>) -> Fault {
        Fault {
            status: 400,
            message,
            param: param.map(str::to_owned),
            code,
        }
    }

    /// A refusal of the route itself (no `param`, no `code`).
    pub(crate) fn route(status: u16, message: String) -> Fault {
        Fault {
            status,
            message,
            param: None,
            code: None,
        }
    }

    /// OpenAI's error envelope.
    pub(crate) fn envelope(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": "invalid_request_error",
            "param": self.param,
            "code": self.code
        }})
    }
}

/// The refusal answer for `fault`, recording the request `body`.
fn refused(body: &Value, fault: &Fault) -> Answer {
    Answer::refused(fault.status, body, fault.envelope())
}

/// Answers one request to the `openai-responses` profile.
pub(crate) fn answer(shared: &Shared, request: &Request<'_>) -> Answer {
    let (method, path, headers, raw) = (request.method, request.path, request.headers, request.raw);
    let null = Value::Null;
    if path != "/v1/responses" && path != "/responses" {
        // OpenAI's wording for an unknown route.
        return refused(
            &null,
            &Fault::route(404, format!("Invalid URL ({method} {path})")),
        );
    }
    if method != "POST" {
        return refused(
            &null,
            &Fault::route(405, format!("Invalid method for URL ({method} {path})")),
        );
    }
    let bearer = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .and_then(|(_, v)| v.trim().strip_prefix("Bearer "))
        .is_some_and(|t| !t.trim().is_empty());
    if !bearer {
        let f = Fault {
            status: 401,
            message: NO_API_KEY.to_owned(),
            param: None,
            code: None,
        };
        return refused(&null, &f);
    }
    let body: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(_) => return refused(&null, &Fault::bad(BAD_JSON.to_owned(), None, None)),
    };
    if let Err(f) = schema::validate(&body) {
        return refused(&body, &f);
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Err(f) = rules::validate(&body, &model, &shared.key, &shared.openai_org) {
        return refused(&body, &f);
    }
    let switches = lock(&shared.switches).clone();
    let notes = prefix::drops(&body, &lock(&shared.responses_minted));
    let reply = reply::script(&reply::Ask {
        body: &body,
        raw,
        model: &model,
        key: &shared.key,
        org: &shared.openai_org,
    });
    lock(&shared.responses_minted).insert(
        reply.rs_id().to_owned(),
        prefix::digest(&body, &prefix::items(&body)),
    );
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let end = if switches.max_output_tokens_reached {
        reply::End::Incomplete
    } else if switches.fail_mid_stream && stream {
        reply::End::Failed
    } else {
        reply::End::Completed
    };
    let text = if stream {
        reply.sse(end)
    } else {
        reply.json(end).to_string()
    };
    let kind = if stream { Body::Sse } else { Body::Json };
    let mut answer = Answer::ok(body, text, kind);
    answer.notes = notes;
    answer
}
