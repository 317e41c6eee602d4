//! The access log of refusals: every answer with a 4xx or 5xx status is one log line with the
//! request id (also the `x-request-id` response header), the tenant, the door, the model, the
//! status and the reason — never a key, never a body. Handlers note the tenant and the model
//! as they learn them ([`tenant`], [`model`]); an error answer carries its reason
//! ([`Reason`], set by [`crate::ApiError`]).

use std::sync::Mutex;

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// The response header that carries the request id the log line names.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// The longest reason a log line carries (the rest is cut, marked `…`).
const MAX_REASON: usize = 300;

/// Why an error answer was given: its message, carried on the response for the log line.
#[derive(Clone, Debug)]
pub(crate) struct Reason(pub(crate) String);

/// What the handler learnt of the request.
#[derive(Default)]
struct Noted {
    tenant: Option<String>,
    model: Option<String>,
    /// An internal error's own text: the log line's reason, never the answer's.
    internal: Option<String>,
}

tokio::task_local! {
    static NOTED: Mutex<Noted>;
}

fn note(update: impl FnOnce(&mut Noted)) {
    let _ = NOTED.try_with(|slot| {
        if let Ok(mut noted) = slot.lock() {
            update(&mut noted);
        }
    });
}

/// Names the tenant of the request being handled.
pub(crate) fn tenant(tenant: &str) {
    note(|n| n.tenant = Some(tenant.to_owned()));
}

/// Names the model string of the request being handled (the caller logs only one that passed
/// `model::check`).
pub(crate) fn model(model: &str) {
    note(|n| n.model = Some(model.to_owned()));
}

/// Notes an internal error's own text (it may name files or settings): the request's log
/// line gives it as the reason, while the answer says only where to look.
pub(crate) fn internal(why: String) {
    note(|n| n.internal = Some(why));
}

/// The door a path belongs to.
pub(crate) fn door_of(path: &str) -> &'static str {
    if path.starts_with("/v1/messages") {
        "messages"
    } else if path.starts_with("/v1/chat/completions") {
        "chat"
    } else if path.starts_with("/v1/responses") {
        "responses"
    } else if path.starts_with("/v1/models") {
        "models"
    } else {
        "none"
    }
}

/// The layer: a request id for every request, and one log line for every 4xx or 5xx answer.
pub(crate) async fn layer(request: Request, next: Next) -> Response {
    let id = uuid::Uuid::now_v7().simple().to_string();
    let door = door_of(request.uri().path());
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let (mut response, noted) = NOTED
        .scope(Mutex::new(Noted::default()), async {
            let response = next.run(request).await;
            let noted = NOTED
                .try_with(|slot| slot.lock().ok().map(|mut n| std::mem::take(&mut *n)))
                .ok()
                .flatten()
                .unwrap_or_default();
            (response, noted)
        })
        .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID), value);
    }
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        let reason = match &noted.internal {
            Some(internal) => cut(internal),
            None => response.extensions().get::<Reason>().map_or_else(
                || status.canonical_reason().unwrap_or("").to_owned(),
                |r| cut(&r.0),
            ),
        };
        let tenant = noted.tenant.as_deref().unwrap_or("none");
        let model = noted.model.as_deref().unwrap_or("none");
        if status.is_server_error() {
            tracing::error!(request_id = %id, tenant, door, model, %method, path, status = status.as_u16(), reason, "request refused");
        } else {
            tracing::warn!(request_id = %id, tenant, door, model, %method, path, status = status.as_u16(), reason, "request refused");
        }
    }
    response
}

/// `reason` on one line, at most [`MAX_REASON`] characters.
fn cut(reason: &str) -> String {
    let one_line: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(MAX_REASON) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::{cut, door_of};

    #[test]
    fn a_reason_is_one_line_and_bounded() {
        assert_eq!(cut("a\nb"), "a b");
        let long = "x".repeat(400);
        assert_eq!(cut(&long).chars().count(), 301);
    }

    #[test]
    fn a_path_names_its_door() {
        assert_eq!(door_of("/v1/messages/count_tokens"), "messages");
        assert_eq!(door_of("/v1/chat/completions"), "chat");
        assert_eq!(door_of("/v2/nothing"), "none");
    }
}
