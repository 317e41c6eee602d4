//! The `anthropic` profile: Anthropic's Messages API served directly (`POST /v1/messages`), by
//! Azure Foundry (`POST /anthropic/v1/messages`) and by Google Vertex
//! (`POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`
//! and `…:streamRawPredict`), written from docs/providers.md ("Anthropic Messages (and Vertex,
//! Azure Foundry)", "Azure Foundry (Claude) — confirmed", "Tool-call pairing").
//!
//! Unlike the chat-completions profiles it reads the path and headers: each path family has its
//! own authentication and version rules ([`answer`]). Request rules live in [`rules`], the signed
//! thinking in [`thinking`], the scripted reply and its SSE rendering in [`reply`]. Which models
//! bind replayed thinking to prefix, tools, model and account, `block_binding`, put-back and the
//! profile's memory are in [`binding`] (docs/spec.md §5a); on-demand compaction in [`compaction`]
//! (§7).

pub(crate) mod binding;
pub(crate) mod compaction;
pub(crate) mod reply;
pub(crate) mod rules;
pub(crate) mod thinking;

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use crate::model::Prompt;
use crate::wire::{Answer, Body, Request, short_hash};
use crate::{Shared, lock};
use reply::{Ask, Cache, Reply};
use rules::{Checked, Ctx, Via};

/// Which door a request came in by.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Family {
    /// `POST /v1/messages`.
    Direct,
    /// `POST /anthropic/v1/messages` (Azure Foundry).
    Foundry,
    /// Vertex `rawPredict` (`stream: false`) or `streamRawPredict` (`stream: true`).
    Vertex { model: String, stream: bool },
}

/// Anthropic's error envelope.
fn envelope(kind: &str, message: &str, request_id: &str) -> Value {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": request_id
    })
}

/// Google's 401 (Vertex, no usable bearer token).
fn google_unauthenticated() -> Value {
    json!({"error": {
        "code": 401,
        "message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        "status": "UNAUTHENTICATED"
    }})
}

/// `%XX` decoding of one path segment (left as is when malformed).
pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// The path family, or `None` for a path the profile does not serve.
fn route(path: &str) -> Option<Family> {
    match path {
        "/v1/messages" => return Some(Family::Direct),
        "/anthropic/v1/messages" => return Some(Family::Foundry),
        _ => {}
    }
    let rest = path.strip_prefix("/v1/projects/")?;
    let (project, rest) = rest.split_once("/locations/")?;
    let (region, rest) = rest.split_once("/publishers/anthropic/models/")?;
    let (model, verb) = rest.rsplit_once(':')?;
    let segment = |s: &str| !s.is_empty() && !s.contains('/');
    if !segment(project) || !segment(region) || !segment(model) {
        return None;
    }
    let stream = match verb {
        "rawPredict" => false,
        "streamRawPredict" => true,
        _ => return None,
    };
    Some(Family::Vertex {
        model: percent_decode(model),
        stream,
    })
}

/// What the reply reports of the prompt cache: nothing without a `cache_control` breakpoint,
/// else a write on the profile's first request with one and a read after.
fn cache_of(shared: &Shared, breakpoints: usize) -> Cache {
    if breakpoints == 0 {
        Cache::None
    } else if shared.cached_requests.fetch_add(1, Ordering::SeqCst) == 0 {
        Cache::Write
    } else {
        Cache::Read
    }
}

/// Answers one request to the `anthropic` profile.
pub(crate) fn answer(shared: &Shared, request: &Request<'_>) -> Answer {
    let (method, path, headers, raw) = (request.method, request.path, request.headers, request.raw);
    let null = Value::Null;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let family = route(path);
    let vertex = matches!(family, Some(Family::Vertex { .. }));
    let request_id = format!(
        "{}{}",
        if vertex { "req_vrtx_" } else { "req_" },
        short_hash(
            &format!("{method} {path}\u{0}{}", String::from_utf8_lossy(raw)),
            24
        )
    );
    let invalid = |body: &Value, message: &str| {
        Answer::refused(
            400,
            body,
            envelope("invalid_request_error", message, &request_id),
        )
    };
    let Some(family) = family else {
        return Answer::refused(
            404,
            &null,
            envelope("not_found_error", "Not Found", &request_id),
        );
    };
    if method != "POST" {
        // Simulator-chosen wording.
        return Answer::refused(
            405,
            &null,
            envelope(
                "invalid_request_error",
                &format!("Method Not Allowed: {method} {path}"),
                &request_id,
            ),
        );
    }
    let unauthenticated = |message: &str| {
        Answer::refused(
            401,
            &null,
            envelope("authentication_error", message, &request_id),
        )
    };
    // Simulator-chosen wording (docs/providers.md gives the requirement, not the text).
    const VERSION_REQUIRED: &str = "anthropic-version: header is required";
    let has_version = header("anthropic-version").is_some_and(|v| !v.is_empty());
    match &family {
        Family::Direct => {
            if header("authorization").is_some() {
                return unauthenticated("invalid x-api-key");
            }
            if !has_version {
                return invalid(&null, VERSION_REQUIRED);
            }
        }
        Family::Foundry => {
            // A resource key in `x-api-key`, or a Microsoft Entra ID token as a bearer
            // (docs/providers.md "Azure Foundry (Claude)": "Entra ID bearer tokens are the
            // alternative").
            let bearer = header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|t| !t.trim().is_empty());
            if header("x-api-key").is_none_or(str::is_empty) && !bearer {
                // Simulator-chosen wording.
                return unauthenticated("x-api-key header is required");
            }
            if !has_version {
                return invalid(&null, VERSION_REQUIRED);
            }
        }
        Family::Vertex { .. } => {
            let bearer = header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|t| !t.trim().is_empty());
            if !bearer {
                return Answer::refused(401, &null, google_unauthenticated());
            }
        }
    }
    let body: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => return invalid(&null, &crate::wire::bad_json_text(&e)), // simulator-chosen
    };
    let via = match &family {
        Family::Vertex { stream, .. } => Via::Vertex { stream: *stream },
        _ => Via::Body,
    };
    let beta = header("anthropic-beta").unwrap_or("");
    let model = match &family {
        Family::Vertex { model, .. } => model.clone(),
        _ => body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    // The account is the credential the request was sent under: the key, else the bearer token.
    let credential = header("x-api-key")
        .filter(|k| !k.is_empty())
        .or_else(|| header("authorization").and_then(|v| v.strip_prefix("Bearer ")))
        .unwrap_or("");
    let ctx = Ctx {
        model: &model,
        account: binding::account_hash(&shared.key, credential.trim()),
        ledger: &shared.anthropic_ledger,
    };
    let checked = match rules::validate(&body, via, beta, &shared.key, ctx) {
        Ok(c) => c,
        Err(message) => return invalid(&body, &message),
    };

    let fail_mid_stream = lock(&shared.switches).fail_mid_stream;
    let reply = respond(
        shared,
        &checked,
        &ctx,
        Prompt {
            body: &body,
            raw,
            model: &model,
            key: &shared.key,
        },
        if vertex { "msg_vrtx_" } else { "msg_" },
    );
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let text = if stream {
        reply.sse(fail_mid_stream)
    } else {
        reply.json().to_string()
    };
    let kind = if stream { Body::Sse } else { Body::Json };
    let mut answer = Answer::ok(body, text, kind);
    answer.notes = checked.notes;
    answer
}

/// The reply to a validated request (the scripted model, or an on-demand compaction), with the
/// request's `input_transformations`; remembers the turn it minted thinking for.
fn respond(
    shared: &Shared,
    checked: &Checked,
    ctx: &Ctx<'_>,
    prompt: Prompt<'_>,
    id_prefix: &str,
) -> Reply {
    let body = prompt.body;
    let ask = Ask {
        prompt,
        thinking: checked.thinking,
        cache: cache_of(shared, checked.breakpoints),
        id_prefix,
        account: ctx.account,
    };
    let mut reply = if checked.compaction {
        reply::compaction(&ask)
    } else {
        reply::script(&ask)
    };
    if let Some(trigger) = checked.compact_trigger {
        let counted =
            compaction::counted_tokens(ask.prompt.raw, crate::wire::list_of(body, "messages"));
        if counted as u64 > trigger && !checked.compaction {
            reply = reply.after_threshold_compaction(&ask, counted);
        }
    }
    reply.set_transformations(checked.transformations.clone());
    if let Some((id, count)) = reply.minted() {
        let turn = reply.turn_key(crate::wire::list_of(body, "messages"));
        lock(ctx.ledger).minted(turn, id, count);
    }
    reply
}

/// Bedrock InvokeModel with an Anthropic Messages body (`crate::bedrock`'s `/invoke` and
/// `/invoke-with-response-stream` doors): the same rules and scripted model as the other doors,
/// with the model from the path, `anthropic_version: "bedrock-2023-05-31"` and `anthropic_beta`
/// in the body. `Err` is the rule's text (Bedrock wraps it in a `ValidationException`).
pub(crate) fn invoke_bedrock(
    shared: &Shared,
    model: &str,
    body: &Value,
    raw: &[u8],
) -> Result<reply::Reply, String> {
    let betas: Vec<&str> = body
        .get("anthropic_beta")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    // One account: the simulator's Bedrock credentials are one pair and one API key.
    let ctx = Ctx {
        model,
        account: binding::account_hash(&shared.key, "bedrock"),
        ledger: &shared.anthropic_ledger,
    };
    let checked = rules::validate(body, Via::Bedrock, &betas.join(","), &shared.key, ctx)?;
    Ok(respond(
        shared,
        &checked,
        &ctx,
        Prompt {
            body,
            raw,
            model,
            key: &shared.key,
        },
        "msg_bdrk_",
    ))
}

/// `{"type":"text","text":s}`.
fn text_block(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

/// A message's content as blocks (a string is one text block). Here, not in `thinking`, so
/// that `compaction` and `thinking` do not use each other.
fn content_blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![text_block(s)],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/v1/messages"), Some(Family::Direct));
        assert_eq!(route("/anthropic/v1/messages"), Some(Family::Foundry));
        assert_eq!(
            route(
                "/v1/projects/p-1/locations/us-east5/publishers/anthropic/models/claude-opus-4-6%40001:streamRawPredict"
            ),
            Some(Family::Vertex {
                model: "claude-opus-4-6@001".into(),
                stream: true
            })
        );
        assert_eq!(
            route("/v1/projects/p/locations/global/publishers/anthropic/models/m:rawPredict"),
            Some(Family::Vertex {
                model: "m".into(),
                stream: false
            })
        );
        for bad in [
            "/v1/chat/completions",
            "/v1/messages/",
            "/v1/projects//locations/r/publishers/anthropic/models/m:rawPredict",
            "/v1/projects/p/locations/r/publishers/google/models/m:rawPredict",
            "/v1/projects/p/locations/r/publishers/anthropic/models/m:predict",
            "/v1/projects/p/locations/r/publishers/anthropic/models/a/b:rawPredict",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
        assert_eq!(percent_decode("a%2Fb%zz"), "a/b%zz");
    }
}
