//! The `gemini` profile: Google's native `generateContent` / `streamGenerateContent` API, written
//! from docs/providers.md ("Google Gemini generateContent", "Gemini OpenAI-compatible endpoint",
//! "Tool-call pairing and turn-order rules", "Notes for the simulator") and docs/spec.md §3c–§5.
//!
//! Two doors ([`route`]): AI Studio `POST {base}/v1beta/models/{model}:generateContent` (also
//! `/v1`, `/v1alpha`, or no version prefix, for a client whose base URL already ends in
//! `/v1beta`), key in `x-goog-api-key` (optional unless [`crate::Switches::require_api_key`]);
//! and Vertex `POST {base}/v1/projects/{p}/locations/{r}/publishers/google/models/{model}:…`
//! (also `/v1beta1`), `Authorization: Bearer` required. `:streamGenerateContent?alt=sse` streams
//! SSE (`data: …` with CRLF line ends, as Google sends them), without `alt=sse` a JSON array. A
//! key in the URL (`?key=`) is refused on every path: the real API accepts it, but hermes must
//! never put a key there (docs/spec.md §5).
//!
//! Requests go through the strict [`schema`], then [`rules`] (thinking configuration, signatures
//! of the current turn, pairing) and the scripted model in [`reply`] ([`signature`] mints and
//! verifies `thoughtSignature`s). Errors use Google's envelope
//! `{"error":{"code","message","status"[,"details"]}}`. Signatures accepted although misplaced or
//! unverified outside the current turn are reported as notes: in the response header
//! [`DEGRADED_HEADER`] and in [`crate::RecordedRequest::notes`].

pub(crate) mod reply;
pub(crate) mod rules;
pub(crate) mod schema;
pub(crate) mod signature;

use serde_json::{Value, json};

use crate::anthropic::percent_decode;
use crate::wire::{Answer, Body, Request, list_of};
use crate::{Shared, lock};
use schema::Violation;

/// Response header listing the notes on an accepted request (joined by ` | `).
pub(crate) const DEGRADED_HEADER: &str = "x-hermes-sim-degraded";

/// The AI Studio proto package (named in type faults).
const STUDIO_PACKAGE: &str = "google.ai.generativelanguage.v1beta";
/// The Vertex proto package.
const VERTEX_PACKAGE: &str = "google.cloud.aiplatform.v1";

/// Which door a request came in by, the model from the path, and whether it streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) vertex: bool,
    pub(crate) model: String,
    pub(crate) stream: bool,
}

/// The route of a path (without its query), or `None` for a path the profile does not serve.
pub(crate) fn route(path: &str) -> Option<Route> {
    let segment = |s: &str| !s.is_empty() && !s.contains('/');
    let (vertex, rest) = match ["/v1/projects/", "/v1beta1/projects/"]
        .iter()
        .find_map(|p| path.strip_prefix(p))
    {
        Some(rest) => {
            let (project, rest) = rest.split_once("/locations/")?;
            let (region, rest) = rest.split_once("/publishers/google/models/")?;
            if !segment(project) || !segment(region) {
                return None;
            }
            (true, rest)
        }
        None => {
            let unversioned = ["/v1beta", "/v1alpha", "/v1"]
                .iter()
                .find_map(|v| path.strip_prefix(v).filter(|r| r.starts_with("/models/")))
                .unwrap_or(path);
            (false, unversioned.strip_prefix("/models/")?)
        }
    };
    let (model, verb) = rest.rsplit_once(':')?;
    if !segment(model) {
        return None;
    }
    let stream = match verb {
        "generateContent" => false,
        "streamGenerateContent" => true,
        _ => return None,
    };
    Some(Route {
        vertex,
        model: percent_decode(model),
        stream,
    })
}

/// The query's `name=value` pairs (values percent-decoded).
fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(&v.replace('+', " ")))
        })
        .collect()
}

/// The path and query as recorded: any `key` value replaced by `<redacted>`.
pub(crate) fn recorded_path(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_owned();
    };
    let query: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if percent_decode(k) == "key" => format!("{k}=<redacted>"),
            _ => p.to_owned(),
        })
        .collect();
    format!("{path}?{}", query.join("&"))
}

/// A refusal's text and field violations.
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub(crate) message: String,
    pub(crate) violations: Vec<Violation>,
}

impl Fault {
    /// A plain 400 message (no `details`).
    pub(crate) fn plain(message: &str) -> Fault {
        Fault {
            message: message.to_owned(),
            violations: Vec::new(),
        }
    }

    /// Field violations: the message is their descriptions joined by `\n`.
    pub(crate) fn violations(violations: Vec<Violation>) -> Fault {
        let message = violations
            .iter()
            .map(|v| v.description.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Fault {
            message,
            violations,
        }
    }
}

/// Google's error envelope.
fn envelope(code: u16, status: &str, message: &str, details: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message, "status": status});
    if let Some(d) = details {
        error["details"] = d;
    }
    json!({ "error": error })
}

/// A 400 `INVALID_ARGUMENT` for a fault (with `google.rpc.BadRequest` details when it has field
/// violations).
fn invalid(fault: &Fault) -> Value {
    let details = (!fault.violations.is_empty()).then(|| {
        let list: Vec<Value> = fault
            .violations
            .iter()
            .map(|v| match &v.field {
                Some(f) => json!({"field": f, "description": v.description}),
                None => json!({"description": v.description}),
            })
            .collect();
        json!([{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": list
        }])
    });
    envelope(400, "INVALID_ARGUMENT", &fault.message, details)
}

/// The key-in-URL refusal. Simulator-chosen: the real API accepts `?key=`; hermes must never send
/// it (docs/spec.md §5), so the simulator refuses it loudly.
pub(crate) const KEY_IN_URL: &str = "hermes-sim: the API key was sent in the URL query (`key=`). Send it in the `x-goog-api-key` header; hermes must never put a key in a URL.";

/// Google's answer to a request without credentials (AI Studio, with
/// [`crate::Switches::require_api_key`]): 403 `PERMISSION_DENIED`.
pub(crate) const UNREGISTERED_CALLER: &str = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.";

/// Google's answer to an empty or malformed API key (400 `INVALID_ARGUMENT`).
pub(crate) const KEY_NOT_VALID: &str = "API key not valid. Please pass a valid API key.";

/// Google's 401 without a usable bearer token (Vertex).
pub(crate) const UNAUTHENTICATED: &str = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";

/// The value of a part's field under either spelling (`None` when absent or null).
pub(crate) fn part_field<'a>(p: &'a Value, camel: &str) -> Option<&'a Value> {
    p.as_object().and_then(|o| schema::field(o, camel))
}

/// A thought-summary part (`"thought": true`).
pub(crate) fn is_thought(p: &Value) -> bool {
    part_field(p, "thought").and_then(Value::as_bool) == Some(true)
}

/// A content's role (`user` when absent, as AI Studio defaults it).
pub(crate) fn role_of(c: &Value) -> &str {
    c.get("role").and_then(Value::as_str).unwrap_or("user")
}

/// A content's parts.
pub(crate) fn parts_of(c: &Value) -> &[Value] {
    list_of(c, "parts")
}

/// A content's `functionCall` objects, in order.
pub(crate) fn calls_of(c: &Value) -> Vec<&Value> {
    parts_of(c)
        .iter()
        .filter_map(|p| part_field(p, "functionCall"))
        .collect()
}

/// Answers one request to the `gemini` profile (routed on `path_and_query`, as sent).
pub(crate) fn answer(shared: &Shared, request: &Request<'_>) -> Answer {
    let (method, headers, raw) = (request.method, request.headers, request.raw);
    let null = Value::Null;
    let (path, query) = request
        .path_and_query
        .split_once('?')
        .unwrap_or((request.path_and_query, ""));
    let query = query_pairs(query);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if query.iter().any(|(k, _)| k == "key") {
        return Answer::refused(400, &null, invalid(&Fault::plain(KEY_IN_URL)));
    }
    let Some(route) = route(path) else {
        // Simulator-chosen wording.
        return Answer::refused(
            404,
            &null,
            envelope(404, "NOT_FOUND", "Requested entity was not found.", None),
        );
    };
    if method != "POST" {
        // Simulator-chosen wording.
        return Answer::refused(
            405,
            &null,
            envelope(
                405,
                "METHOD_NOT_ALLOWED",
                &format!("Method Not Allowed: {method} {path}"),
                None,
            ),
        );
    }
    let switches = lock(&shared.switches).clone();
    let bearer = header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| !t.trim().is_empty());
    if route.vertex {
        if !bearer {
            return Answer::refused(
                401,
                &null,
                envelope(401, "UNAUTHENTICATED", UNAUTHENTICATED, None),
            );
        }
    } else {
        match header("x-goog-api-key") {
            Some("") => {
                let details = json!([{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"}
                }]);
                return Answer::refused(
                    400,
                    &null,
                    envelope(400, "INVALID_ARGUMENT", KEY_NOT_VALID, Some(details)),
                );
            }
            None if switches.require_api_key && !bearer => {
                return Answer::refused(
                    403,
                    &null,
                    envelope(403, "PERMISSION_DENIED", UNREGISTERED_CALLER, None),
                );
            }
            _ => {}
        }
    }
    let body: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        // The prefix is Google's; the rest is serde's (simulator-chosen).
        Err(e) => {
            let text = format!("Invalid JSON payload received. {e}");
            return Answer::refused(400, &null, invalid(&Fault::plain(&text)));
        }
    };
    let package = if route.vertex {
        VERTEX_PACKAGE
    } else {
        STUDIO_PACKAGE
    };
    if !body.is_object() {
        // Simulator-chosen wording.
        let text =
            "Invalid JSON payload received. Expected a JSON object (GenerateContentRequest).";
        return Answer::refused(400, &body, invalid(&Fault::plain(text)));
    }
    let violations = schema::check(&body, package);
    if !violations.is_empty() {
        return Answer::refused(400, &body, invalid(&Fault::violations(violations)));
    }
    let checked = match rules::validate(&route.model, &body, route.vertex, &shared.key, package) {
        Ok(c) => c,
        Err(fault) => return Answer::refused(400, &body, invalid(&fault)),
    };
    let sse = query.iter().any(|(k, v)| k == "alt" && v == "sse");
    let reply = reply::script(&reply::Ask {
        body: &body,
        raw,
        model: &route.model,
        thinking: checked.thinking,
        key: &shared.key,
    });
    let (text, kind) = if !route.stream {
        (reply.json().to_string(), Body::Json)
    } else {
        let chunks = reply.chunks(switches.signature_on_text_fragment);
        if sse {
            (reply::sse(&chunks, switches.fail_mid_stream), Body::Sse)
        } else {
            (
                reply::json_array(&chunks, switches.fail_mid_stream),
                Body::JsonArray,
            )
        }
    };
    let mut headers = Vec::new();
    if !checked.notes.is_empty() {
        headers.push((DEGRADED_HEADER, checked.notes.join(" | ")));
    }
    Answer {
        status: 200,
        headers,
        body,
        text,
        kind,
        notes: checked.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let r = |vertex, model: &str, stream| {
            Some(Route {
                vertex,
                model: model.to_owned(),
                stream,
            })
        };
        assert_eq!(
            route("/v1beta/models/gemini-3-pro-preview:generateContent"),
            r(false, "gemini-3-pro-preview", false)
        );
        assert_eq!(
            route("/models/gemini-3-pro-preview:streamGenerateContent"),
            r(false, "gemini-3-pro-preview", true)
        );
        assert_eq!(
            route("/v1/models/gemini-2.5-pro:generateContent"),
            r(false, "gemini-2.5-pro", false)
        );
        assert_eq!(
            route(
                "/v1/projects/p-1/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
            ),
            r(true, "gemini-2.5-flash", true)
        );
        for bad in [
            "/v1beta/models/m:countTokens",
            "/v1beta/models/:generateContent",
            "/v1beta/models/a/b:generateContent",
            "/v1/projects/p/locations/r/publishers/anthropic/models/m:generateContent",
            "/v1/projects//locations/r/publishers/google/models/m:generateContent",
            "/v1/chat/completions",
            "/v2/models/m:generateContent",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
    }

    #[test]
    fn recorded_paths_hide_keys() {
        assert_eq!(
            recorded_path("/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaSECRET"),
            "/v1beta/models/m:streamGenerateContent?alt=sse&key=<redacted>"
        );
        assert_eq!(recorded_path("/x"), "/x");
        assert_eq!(
            query_pairs("alt=sse&key=a%2Bb"),
            vec![("alt".into(), "sse".into()), ("key".into(), "a+b".into())]
        );
    }
}
