//! The `openai-responses` profile: OpenAI's Responses API (`POST {base}/v1/responses` and
//! `POST {base}/responses`, `Authorization: Bearer` required), written from docs/providers.md
//! ("OpenAI Responses API", "Tool-call pairing and turn-order rules", "Notes for the simulator")
//! and docs/spec.md §2, §3c.
//!
//! Requests go through the strict [`schema`] (`Unknown parameter: '…'.`), then [`rules`]
//! (`previous_response_id`, verified `encrypted_content` on every replayed reasoning item,
//! reasoning ↔ following-item pairing, tool-call pairing) and the scripted model in [`reply`]
//! (JSON or SSE). [`seal`] mints and opens the reasoning ciphertext (bound to the model and the
//! simulator's organisation) and the `fc_…` / `msg_…` ids that name their paired `rs_…` item, so
//! the simulator keeps no state and still knows what it minted. The one exception is [`prefix`]:
//! the prefix each reasoning item was made after is remembered, so that an item replayed after a
//! changed prefix is dropped silently (and noted in the record). `POST {base}/v1/responses/compact`
//! and a request's `context_management` threshold answer with a sealed `compaction` item that
//! stands for the input it compacted ([`prefix`], [`seal`]). Errors use OpenAI's envelope
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

/// A `compaction` item this simulator seals for `model`, standing for input items whose running
/// digest is `chain` ([`prefix::chain`]).
fn compaction_item(shared: &Shared, model: &str, chain: &[u8; 32], items: usize) -> Value {
    let hex: String = chain.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!(
        "cmp_{}",
        crate::wire::short_hash(&format!("{model}\u{0}{hex}"), 32)
    );
    let sealed = seal::seal_compaction(&shared.key, model, &shared.openai_org, &id, chain, items);
    json!({"id": id, "type": "compaction", "encrypted_content": sealed})
}

/// The answer to `POST /responses/compact`: a `response.compaction` object whose `output` is the
/// input's user messages followed by one `compaction` item (developers.openai.com/api/reference,
/// "Compact a response": "The compacted list of output items. This is a list of all user
/// messages, followed by a single compaction item.").
fn compacted(shared: &Shared, model: &str, items: &[Value], chain: &[u8; 32], raw: &[u8]) -> Value {
    let mut output: Vec<Value> = items
        .iter()
        .filter(|i| {
            rules::kind_of(i.as_object().unwrap_or(&serde_json::Map::new())) == "message"
                && i.get("role").and_then(Value::as_str) == Some("user")
        })
        .map(|i| {
            let mut m = i.clone();
            if let Some(o) = m.as_object_mut() {
                o.insert("type".into(), json!("message"));
            }
            m
        })
        .collect();
    output.push(compaction_item(shared, model, chain, items.len()));
    let input = raw.len().div_ceil(4);
    let out = 64;
    json!({
        "id": format!("resp_{}", crate::wire::short_hash(&String::from_utf8_lossy(raw), 48)),
        "object": "response.compaction",
        "created_at": reply::CREATED_AT,
        "output": output,
        "usage": {
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + out
        }
    })
}

/// Answers one request to the `openai-responses` profile.
pub(crate) fn answer(shared: &Shared, request: &Request<'_>) -> Answer {
    let (method, path, headers, raw) = (request.method, request.path, request.headers, request.raw);
    let null = Value::Null;
    let compact = path == "/v1/responses/compact" || path == "/responses/compact";
    if !compact && path != "/v1/responses" && path != "/responses" {
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
    let checked = if compact {
        schema::validate_compact(&body)
    } else {
        schema::validate(&body)
    };
    if let Err(f) = checked {
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
    let opened = |item: &Value| {
        let str_of = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        let (key, org) = (&shared.key, &shared.openai_org);
        seal::open_compaction(key, &model, org, str_of("id"), str_of("encrypted_content")).1
    };
    let notes = prefix::drops(&body, &lock(&shared.responses_minted), &opened, compact);
    let items = prefix::items(&body);
    let chain = prefix::chain(&items, &opened);
    if compact {
        let mut answer = Answer::ok(
            body.clone(),
            compacted(shared, &model, &items, &chain, raw).to_string(),
            Body::Json,
        );
        answer.notes = notes;
        return answer;
    }
    let switches = lock(&shared.switches).clone();
    let mut reply = reply::script(&reply::Ask {
        body: &body,
        raw,
        model: &model,
        key: &shared.key,
        org: &shared.openai_org,
    });
    lock(&shared.responses_minted).insert(
        reply.rs_id().to_owned(),
        (prefix::digest(&body, &chain), chain),
    );
    // Server-side compaction: past the request's threshold, a compaction item standing for the
    // whole input comes first in the output (developers.openai.com/api/docs/guides/compaction:
    // "When the rendered token count crosses the configured threshold, the server runs
    // server-side compaction … The response stream includes the encrypted compaction item").
    if let Ok(Some(threshold)) = schema::compact_threshold(&body)
        && reply.input_tokens() as u64 > threshold
    {
        reply = reply.with_compaction(compaction_item(shared, &model, &chain, items.len()));
    }
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
