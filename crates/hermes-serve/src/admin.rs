//! The admin API (`/admin/v1/…`, docs/gateway.md "The inspector"): JSON for an admin key
//! (`hermes serve keys create --admin`; a tenant's key is refused, 403), read by the CLI or any
//! client and rendered by the inspector (`ui.rs`, which calls the functions here):
//!
//! - `GET /admin/v1/conversations?tenant=&partition=&model=&limit=&cursor=`: a page of the
//!   tenants' conversations, newest first, filtered in the store ([`list`]);
//! - `GET /admin/v1/conversations/{id}`: one conversation — its steps with their carriers, the
//!   requests this replica journaled for it and what they did to the carriers ([`conversation`]);
//! - `GET /admin/v1/keys`, `POST /admin/v1/keys` (`{"tenant": "…"}`; the secret is in this
//!   answer only), `DELETE /admin/v1/keys/{id}`: gateway keys ([`keys`], [`create_key`],
//!   [`revoke_key`]);
//! - `GET /admin/v1/tenants`: each tenant with its policy and limits in force ([`tenants`]);
//! - `GET /admin/v1/overview?minutes=`: requests, latency and carriers by outcome per minute,
//!   from the journal ([`overview`]).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use hermes_core::{DetailItem, Message};
use hermes_engine::store::{After, ConversationFilter, SessionMeta, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::journal::Entry;
use crate::{Auth, Inner, access, metrics};

/// The routes of the admin API, behind [`auth`].
pub(crate) fn routes(state: &Arc<Inner>) -> axum::Router<Arc<Inner>> {
    axum::Router::new()
        .route("/admin/v1/conversations", get(list_json))
        .route("/admin/v1/conversations/{id}", get(conversation_json))
        .route("/admin/v1/requests/{id}/bodies/{n}", get(body_json))
        .route("/admin/v1/keys", get(keys_json).post(create_key_json))
        .route("/admin/v1/keys/{id}", delete(revoke_key_json))
        .route("/admin/v1/tenants", get(tenants_json))
        .route("/admin/v1/overview", get(overview_json))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth))
}

/// The admin key of a request (`Authorization: Bearer <admin key>`), or its refusal: 401
/// without a key or with one nobody holds, 403 with a tenant's key.
pub(crate) async fn check(inner: &Inner, bearer: Option<&str>) -> Result<(), ApiError> {
    let keys = match &inner.config.auth {
        // Without keys (`--no-auth`, loopback addresses only) every request is the operator's.
        Auth::None => return Ok(()),
        Auth::Keys(keys) => keys,
    };
    let bearer = bearer.map(str::trim).filter(|b| !b.is_empty()).ok_or_else(|| {
        ApiError::unauthorized(
            "no admin key: send `Authorization: Bearer <admin key>` (`hermes serve keys create --admin`)",
        )
    })?;
    let unavailable = |e: crate::KeysError| {
        tracing::error!(error = %e, "admin key lookup failed");
        ApiError::unavailable("the gateway cannot check keys right now")
    };
    if let Some(id) = keys.admin(bearer).await.map_err(unavailable)? {
        metrics::set_tenant("admin");
        access::tenant(&format!("admin hk_{id}"));
        return Ok(());
    }
    if keys.tenant(bearer).await.map_err(unavailable)?.is_some() {
        return Err(ApiError::forbidden(
            "Authorization",
            "a tenant's gateway key does not reach the admin API: use an admin key (`hermes serve keys create --admin`)",
        ));
    }
    Err(ApiError::unauthorized("the admin key is not valid"))
}

/// The bearer token of `headers`.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The layer in front of every admin route: [`check`].
async fn auth(State(inner): State<Arc<Inner>>, request: Request, next: Next) -> Response {
    match check(&inner, bearer(request.headers())).await {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// A store failure as the API's 500 (its text logged, not shown).
fn store_failed(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(id) => ApiError::not_found(format!("no conversation {id}")),
        e => ApiError::internal(format!("the store failed: {e}")),
    }
}

/// Now, Unix milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

// ---- Conversations ----

/// The query of `GET /admin/v1/conversations`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct ListQuery {
    /// Only this tenant's.
    pub(crate) tenant: Option<String>,
    /// Only this partition's.
    pub(crate) partition: Option<String>,
    /// Only this model's (`model` or `provider/model`).
    pub(crate) model: Option<String>,
    /// How many (default 50, at most 500).
    pub(crate) limit: Option<usize>,
    /// Where the page starts: the `next` of the page before.
    pub(crate) cursor: Option<String>,
}

impl ListQuery {
    /// The query with its blank fields (an empty form field) left out.
    fn trimmed(&self) -> ListQuery {
        let keep = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        ListQuery {
            tenant: keep(&self.tenant),
            partition: keep(&self.partition),
            model: keep(&self.model),
            limit: self.limit,
            cursor: keep(&self.cursor),
        }
    }
}

/// A conversation's tokens, reasoning apart.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Tokens {
    pub(crate) input: i64,
    pub(crate) output: i64,
    pub(crate) reasoning: i64,
    pub(crate) cache_read: i64,
    pub(crate) cache_write: i64,
}

/// One conversation as listed.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) id: String,
    pub(crate) tenant: Option<String>,
    pub(crate) partition: Option<String>,
    pub(crate) provider: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) parent_id: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) messages: i64,
    pub(crate) turns: i64,
    pub(crate) branches: i64,
    pub(crate) tokens: Tokens,
}

impl Row {
    fn of(meta: &SessionMeta, turns: i64, branches: i64) -> Row {
        Row {
            id: meta.id.clone(),
            tenant: meta.tenant.clone(),
            partition: meta.partition.clone(),
            provider: meta.provider.clone(),
            model: meta.model.clone(),
            title: meta.title.clone(),
            parent_id: meta.parent_id.clone(),
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            messages: meta.message_count,
            turns,
            branches,
            tokens: Tokens {
                input: meta.input_tokens,
                output: meta.output_tokens,
                reasoning: meta.reasoning_tokens,
                cache_read: meta.cache_read_tokens,
                cache_write: meta.cache_write_tokens,
            },
        }
    }
}

/// A page of conversations.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Page {
    /// The conversations, most recently updated first.
    pub(crate) conversations: Vec<Row>,
    /// How many the filter lets through in all.
    pub(crate) total: i64,
    /// The cursor of the next page; `None` on the last.
    pub(crate) next: Option<String>,
    /// The filter and page asked for (blank fields left out).
    pub(crate) query: ListQuery,
}

/// The default page size.
const PAGE: usize = 50;

/// A page of the tenants' conversations ([`ListQuery`]).
pub(crate) async fn list(inner: &Inner, query: &ListQuery) -> Result<Page, ApiError> {
    let query = query.trimmed();
    let store = inner.store();
    let filter = ConversationFilter::new()
        .tenant(query.tenant.clone())
        .partition(query.partition.clone())
        .model(query.model.clone());
    let after = match &query.cursor {
        None => None,
        Some(cursor) => Some(
            cursor
                .split_once('.')
                .and_then(|(at, id)| {
                    Some(After {
                        updated_at: at.parse().ok()?,
                        id: id.to_owned(),
                    })
                })
                .ok_or_else(|| {
                    ApiError::invalid("cursor", "cursor must be a `next` this API answered")
                })?,
        ),
    };
    let limit = query
        .limit
        .unwrap_or(PAGE)
        .clamp(1, hermes_engine::store::MAX_PAGE);
    // One beyond the page: whether another follows.
    let mut metas = store
        .conversations(&filter, after.as_ref(), limit + 1)
        .await
        .map_err(store_failed)?;
    let more = metas.len() > limit;
    metas.truncate(limit);
    let total = store
        .count_conversations(&filter)
        .await
        .map_err(store_failed)?;
    let ids: Vec<String> = metas.iter().map(|m| m.id.clone()).collect();
    let counts = store
        .conversation_counts(&ids)
        .await
        .map_err(store_failed)?;
    let next = more
        .then(|| metas.last().map(|m| format!("{}.{}", m.updated_at, m.id)))
        .flatten();
    let conversations = metas
        .iter()
        .map(|m| {
            Row::of(
                m,
                counts.turns.get(&m.id).copied().unwrap_or(0),
                counts.branches.get(&m.id).copied().unwrap_or(0),
            )
        })
        .collect();
    Ok(Page {
        conversations,
        total,
        next,
        query,
    })
}

/// The pairs of a query string or form body (`application/x-www-form-urlencoded`), decoded.
pub(crate) fn pairs(text: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(text).into_owned().collect()
}

/// The value of `name` in `pairs` (the first).
pub(crate) fn value(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

impl ListQuery {
    /// The query of `uri` (a `limit` that is not a number is 400).
    pub(crate) fn of(uri: &axum::http::Uri) -> Result<ListQuery, ApiError> {
        let pairs = pairs(uri.query().unwrap_or_default().as_bytes());
        let limit = match value(&pairs, "limit").filter(|l| !l.trim().is_empty()) {
            None => None,
            Some(l) => Some(l.trim().parse().map_err(|_| {
                ApiError::invalid("limit", "limit must be a whole number from 1 to 500")
            })?),
        };
        Ok(ListQuery {
            tenant: value(&pairs, "tenant"),
            partition: value(&pairs, "partition"),
            model: value(&pairs, "model"),
            limit,
            cursor: value(&pairs, "cursor"),
        })
    }
}

async fn list_json(State(inner): State<Arc<Inner>>, uri: axum::http::Uri) -> Response {
    let query = match ListQuery::of(&uri) {
        Ok(query) => query,
        Err(e) => return e.into_response(),
    };
    match list(&inner, &query).await {
        Ok(page) => Json(page).into_response(),
        Err(e) => e.into_response(),
    }
}

/// One carrier of a stored step.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Carrier {
    /// Its family: the field it travels in (`reasoning_content`, `reasoning`,
    /// `reasoning_details`), or the block (`thinking (signed)`, `redacted_thinking`), or the
    /// native record's field.
    pub(crate) family: String,
    /// Its size, bytes as stored.
    pub(crate) bytes: usize,
    /// Where it came from: `minted` (an upstream's reply, stored by the gateway) or `client`
    /// (the client's own, stored as it sent it).
    pub(crate) source: &'static str,
    /// The provider, host and model that minted it (`minted` only).
    pub(crate) minted_by: Option<String>,
}

/// One stored step (a message of the conversation's view).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Step {
    pub(crate) position: i64,
    pub(crate) role: &'static str,
    /// Its text (the first 2,000 characters).
    pub(crate) text: String,
    /// The tools it called, by name.
    pub(crate) tool_calls: Vec<String>,
    /// The call a tool result answers.
    pub(crate) tool_call_id: Option<String>,
    /// Its reasoning carriers.
    pub(crate) carriers: Vec<Carrier>,
    /// A request of this conversation left its carriers out, for good (docs/spec.md §5a 3).
    pub(crate) left_out: bool,
    /// When, Unix milliseconds.
    pub(crate) left_out_at: Option<i64>,
    /// Why, as the request that left them out counted it (`dropped_prefix`: the prefix
    /// changed; …), when this replica journaled it.
    pub(crate) left_out_why: Option<String>,
    /// Replaced by a compaction checkpoint.
    pub(crate) archived: bool,
    /// A compaction checkpoint.
    pub(crate) checkpoint: bool,
}

/// One conversation whole.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Conversation {
    pub(crate) conversation: Row,
    /// Its branches (each a conversation of its own, sharing this one's prefix).
    pub(crate) branches: Vec<Row>,
    /// Its steps, in order (archived ones included).
    pub(crate) steps: Vec<Step>,
    /// The requests this replica journaled for it, oldest first: what each did to the
    /// history's carriers, its notices and refusals.
    pub(crate) requests: Vec<Entry>,
    /// The refusals learned for the conversation (its verdicts), as stored.
    pub(crate) verdicts: Value,
}

/// The text of a message's content: a string, or the text parts of an array.
fn text_of(msg: &Message) -> String {
    let Some(content) = &msg.content else {
        return String::new();
    };
    let text = match serde_json::from_str::<Value>(content.get()) {
        Ok(Value::String(s)) => s,
        Ok(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    text.chars().take(2000).collect()
}

/// The carriers stored on `msg`.
fn carriers_of(msg: &Message) -> Vec<Carrier> {
    let minted_by = msg
        .origin
        .as_ref()
        .map(|o| format!("{}/{}/{}", o.provider, o.host, o.model));
    let source = if minted_by.is_some() {
        "minted"
    } else {
        "client"
    };
    let carrier = |family: &str, bytes: usize| Carrier {
        family: family.to_owned(),
        bytes,
        source,
        minted_by: minted_by.clone(),
    };
    let mut out = Vec::new();
    if let Some(rc) = &msg.reasoning_content {
        out.push(carrier("reasoning_content", rc.raw().get().len()));
    }
    if let Some(r) = &msg.reasoning {
        out.push(carrier("reasoning", r.raw().get().len()));
    }
    for item in msg.reasoning_details.iter().flatten() {
        match item {
            DetailItem::Provider {
                raw,
                opaque,
                anthropic,
            } => {
                let family = match (anthropic, opaque) {
                    (true, true) => {
                        if raw.get().contains("\"redacted_thinking\"") {
                            "redacted_thinking"
                        } else {
                            "thinking (signed)"
                        }
                    }
                    (true, false) => "thinking",
                    (false, true) => "reasoning_details (opaque)",
                    (false, false) => "reasoning_details",
                };
                out.push(carrier(family, raw.get().len()));
            }
            DetailItem::Native { record, .. } => {
                for (name, field) in [
                    ("reasoning_opaque", &record.reasoning_opaque),
                    ("reasoning_text", &record.reasoning_text),
                ] {
                    if let Some(field) = field {
                        out.push(carrier(name, field.raw().get().len()));
                    }
                }
                if let Some(extra) = &record.extra_content {
                    out.push(carrier("extra_content", extra.get().len()));
                }
            }
        }
    }
    let signed_calls = msg
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|c| c.extra_content.as_ref())
        .map(|e| e.get().len());
    for bytes in signed_calls {
        out.push(carrier("tool call signature", bytes));
    }
    out
}

/// Why a step's carriers were left out for good at `marked_at` (Unix ms): what the journaled
/// request running then counted (`None` when this replica journaled none then).
fn left_out_why(requests: &[Entry], marked_at: i64) -> Option<String> {
    // A request marks before it sends, so the mark falls within its span.
    let by = requests.iter().find(|e| {
        let end = e.at.saturating_add(i64::try_from(e.ms).unwrap_or(i64::MAX));
        (e.at..=end).contains(&marked_at)
    })?;
    let c = &by.carriers;
    Some(if c.dropped_prefix > 0 {
        "dropped_prefix: the prefix changed since its blocks were made (system prompt, tools, an earlier message or the account; docs/spec.md §5a 2)".to_owned()
    } else if c.dropped_provenance > 0 {
        "dropped_provenance: another model or host minted them".to_owned()
    } else if c.dropped_upstream > 0 {
        "dropped_upstream: the upstream dropped them (docs/spec.md §5a 4)".to_owned()
    } else {
        "not sent by a later turn's request (earlier turns' thinking stays out), so never sent again (docs/spec.md §5a 3)".to_owned()
    })
}

/// One conversation ([`Conversation`]); 404 when there is none of that id, or it is not a
/// gateway conversation.
pub(crate) async fn conversation(inner: &Inner, id: &str) -> Result<Conversation, ApiError> {
    let store = inner.store();
    let meta = store.session(id).await.map_err(store_failed)?;
    if meta.tenant.is_none() {
        return Err(ApiError::not_found(format!("no conversation {id}")));
    }
    let rows = store.all_messages(id).await.map_err(store_failed)?;
    let plain: Vec<Message> = rows.iter().map(|r| r.message.clone()).collect();
    let gone = store
        .left_out_at(&hermes_core::left_out::carrier_ids(&plain))
        .await
        .map_err(store_failed)?;
    let requests = inner.journal.of_session(id);
    let steps = rows
        .iter()
        .map(|row| {
            let msg = &row.message;
            let carrier = row
                .carrier
                .as_ref()
                .map(|c| c.id.clone())
                .or_else(|| hermes_core::left_out::carrier_id(msg));
            let marked_at = carrier.as_ref().and_then(|c| gone.get(c)).copied();
            let left_out = marked_at.is_some() || row.carrier.as_ref().is_some_and(|c| c.left_out);
            Step {
                position: row.position,
                role: msg.role.as_str(),
                text: text_of(msg),
                tool_calls: msg
                    .tool_calls
                    .iter()
                    .flatten()
                    .map(|c| c.function.name.clone())
                    .collect(),
                tool_call_id: msg.tool_call_id.clone(),
                carriers: carriers_of(msg),
                left_out,
                left_out_at: marked_at,
                left_out_why: marked_at.and_then(|at| left_out_why(&requests, at)),
                archived: row.archived,
                checkpoint: row.checkpoint,
            }
        })
        .collect();
    let branch_metas = store.branches_of(id).await.map_err(store_failed)?;
    let mut ids: Vec<String> = branch_metas.iter().map(|m| m.id.clone()).collect();
    ids.push(meta.id.clone());
    let counts = store
        .conversation_counts(&ids)
        .await
        .map_err(store_failed)?;
    let row = |m: &SessionMeta| {
        Row::of(
            m,
            counts.turns.get(&m.id).copied().unwrap_or(0),
            counts.branches.get(&m.id).copied().unwrap_or(0),
        )
    };
    Ok(Conversation {
        conversation: row(&meta),
        branches: branch_metas.iter().map(row).collect(),
        steps,
        requests,
        verdicts: hermes_core::Verdicts::from_model_config(&meta.model_config)
            .ok()
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or(Value::Null),
    })
}

async fn conversation_json(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    match conversation(&inner, &id).await {
        Ok(c) => Json(c).into_response(),
        Err(e) => e.into_response(),
    }
}

// ---- Upstream bodies ----

/// Object keys whose string values are secrets, whatever the body (compared lowercased).
const SECRET_KEYS: [&str; 9] = [
    "api_key",
    "apikey",
    "x-api-key",
    "authorization",
    "password",
    "secret",
    "client_secret",
    "access_token",
    "refresh_token",
];

/// Whether `text` looks like a credential: a gateway key, an `sk-` key, a bearer token.
fn looks_secret(text: &str) -> bool {
    hermes_engine::store::gateway_key_id(text.trim()).is_some()
        || (text.starts_with("sk-") && text.len() >= 20 && !text.contains(char::is_whitespace))
        || text.starts_with("Bearer ")
}

/// Replaces every secret in `value` (a [`SECRET_KEYS`] member's string, or a string that
/// [`looks_secret`]) with `"[redacted]"`: whether any was.
fn redact(value: &mut Value) -> bool {
    match value {
        Value::String(text) if looks_secret(text) => {
            *value = Value::String("[redacted]".into());
            true
        }
        Value::Array(items) => {
            // Every item is visited (no short circuit): each secret in it is redacted.
            let mut any = false;
            for item in items {
                any |= redact(item);
            }
            any
        }
        Value::Object(members) => members.iter_mut().fold(false, |any, (key, v)| {
            let secret = SECRET_KEYS.contains(&key.to_ascii_lowercase().as_str()) && v.is_string();
            if secret {
                *v = Value::String("[redacted]".into());
            }
            secret || redact(v) || any
        }),
        _ => false,
    }
}

/// An upstream body as shown.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Body {
    /// The journaled request that sent it.
    pub(crate) request: u64,
    /// Which of its upstream bodies (from 0).
    pub(crate) n: usize,
    /// The body, pretty-printed: its exact bytes re-indented, or, when a secret was redacted,
    /// re-serialised with each secret `"[redacted]"`.
    pub(crate) body: String,
    /// Whether a secret was redacted.
    pub(crate) redacted: bool,
}

/// Body `n` that request `id` sent upstream (404 once it is no longer kept).
pub(crate) fn body(inner: &Inner, id: u64, n: usize) -> Result<Body, ApiError> {
    let bytes = inner.journal.body(id, n).ok_or_else(|| {
        ApiError::not_found(format!(
            "request {id} has no body {n} kept (the latest {} requests' are)",
            crate::journal::Journal::KEEP_BODIES
        ))
    })?;
    let mut parsed = serde_json::from_slice::<Value>(&bytes);
    let redacted = parsed.as_mut().is_ok_and(redact);
    let body = match parsed {
        Ok(value) if redacted => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Ok(_) => {
            let mut out = Vec::new();
            let _ = hermes_engine::write_pretty(&bytes, &mut out);
            String::from_utf8_lossy(&out).into_owned()
        }
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    };
    Ok(Body {
        request: id,
        n,
        body,
        redacted,
    })
}

/// The request id and body index of a body's path (400 naming the one that is not a whole
/// number, in the API's error shape rather than the router's plain-text rejection).
pub(crate) fn body_path(id: &str, n: &str) -> Result<(u64, usize), ApiError> {
    let id = id
        .parse()
        .map_err(|_| ApiError::invalid("id", "the request id must be a whole number"))?;
    let n = n
        .parse()
        .map_err(|_| ApiError::invalid("n", "the body index must be a whole number from 0"))?;
    Ok((id, n))
}

async fn body_json(
    State(inner): State<Arc<Inner>>,
    Path((id, n)): Path<(String, String)>,
) -> Response {
    let found = body_path(&id, &n).and_then(|(id, n)| body(&inner, id, n));
    match found {
        Ok(body) => Json(body).into_response(),
        Err(e) => e.into_response(),
    }
}

// ---- Keys and tenants ----

/// A gateway key as listed (never its secret).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Key {
    /// `hk_<id>`, as `hermes serve keys list` prints it.
    pub(crate) id: String,
    /// Its tenant; `None` for an admin key.
    pub(crate) tenant: Option<String>,
    pub(crate) admin: bool,
    pub(crate) created_at: i64,
    pub(crate) last_used_at: Option<i64>,
}

/// Every gateway key, admin keys included.
pub(crate) async fn keys(inner: &Inner) -> Result<Vec<Key>, ApiError> {
    let keys = inner
        .store()
        .gateway_keys(None)
        .await
        .map_err(store_failed)?;
    Ok(keys
        .into_iter()
        .map(|k| Key {
            id: format!("hk_{}", k.id),
            tenant: (!k.admin).then_some(k.tenant),
            admin: k.admin,
            created_at: k.created_at,
            last_used_at: k.last_used_at,
        })
        .collect())
}

async fn keys_json(State(inner): State<Arc<Inner>>) -> Response {
    match keys(&inner).await {
        Ok(keys) => Json(json!({ "keys": keys })).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A key just made: the whole key, shown in this answer only.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Created {
    pub(crate) id: String,
    pub(crate) tenant: String,
    pub(crate) key: String,
}

/// The body of `POST /admin/v1/keys`.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct CreateKey {
    /// The tenant the key authenticates.
    pub(crate) tenant: String,
}

/// Makes a key for `tenant` (400 for a name the store refuses).
pub(crate) async fn create_key(inner: &Inner, tenant: &str) -> Result<Created, ApiError> {
    let key = inner
        .store()
        .add_gateway_key(tenant)
        .await
        .map_err(|e| match e {
            e @ StoreError::InvalidTenant { .. } => ApiError::invalid("tenant", e.to_string()),
            e => store_failed(e),
        })?;
    let id = hermes_engine::store::gateway_key_id(&key)
        .map(|id| format!("hk_{id}"))
        .unwrap_or_default();
    Ok(Created {
        id,
        tenant: tenant.to_owned(),
        key,
    })
}

async fn create_key_json(
    State(inner): State<Arc<Inner>>,
    body: Result<Json<CreateKey>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(body)) = body else {
        return ApiError::invalid("tenant", "the body must be JSON: {\"tenant\": \"NAME\"}")
            .into_response();
    };
    match create_key(&inner, &body.tenant).await {
        Ok(created) => (StatusCode::CREATED, Json(created)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Revokes the key `id` names (`hk_<id>` or `<id>`): whether there was one.
pub(crate) async fn revoke_key(inner: &Inner, id: &str) -> Result<bool, ApiError> {
    inner
        .store()
        .revoke_gateway_key(id)
        .await
        .map_err(store_failed)
}

async fn revoke_key_json(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    match revoke_key(&inner, &id).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => ApiError::not_found("no such key").into_response(),
        Err(e) => e.into_response(),
    }
}

/// A tenant with the policy and limits in force for it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Tenant {
    pub(crate) name: String,
    pub(crate) keys: usize,
    pub(crate) policy: Value,
    pub(crate) limits: Value,
}

/// Every tenant that holds a key or a conversation.
pub(crate) async fn tenants(inner: &Inner) -> Result<Vec<Tenant>, ApiError> {
    let store = inner.store();
    let names = store.tenants().await.map_err(store_failed)?;
    let keys = store.gateway_keys(None).await.map_err(store_failed)?;
    Ok(names
        .into_iter()
        .map(|name| Tenant {
            keys: keys.iter().filter(|k| !k.admin && k.tenant == name).count(),
            policy: policy_of(&inner.config.policy.of(&name)),
            limits: limits_of(&inner.config.limits.of(&name)),
            name,
        })
        .collect())
}

/// A tenant's policy as JSON (`null`: the default).
fn policy_of(p: &crate::TenantPolicy) -> Value {
    json!({
        "allow_models": p.allow_models,
        "allow_betas": p.allow_betas,
        "allow_server_tools": p.allow_server_tools,
        "max_tokens": p.max_tokens.unwrap_or(crate::DEFAULT_MAX_TOKENS),
        "require_partition": p.require_partition.unwrap_or(false),
    })
}

/// A tenant's limits as JSON (`null`: no limit).
fn limits_of(l: &crate::TenantLimits) -> Value {
    json!({
        "requests_per_minute": l.requests_per_minute,
        "max_concurrent": l.max_concurrent,
        "tokens_per_minute": l.tokens_per_minute,
        "tokens_per_day": l.tokens_per_day,
    })
}

async fn tenants_json(State(inner): State<Arc<Inner>>) -> Response {
    match tenants(&inner).await {
        Ok(tenants) => Json(json!({ "tenants": tenants })).into_response(),
        Err(e) => e.into_response(),
    }
}

// ---- Overview ----

/// One minute of the overview.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Minute {
    /// Its start, Unix milliseconds.
    pub(crate) at: i64,
    pub(crate) requests: u64,
    /// Requests that ended without their turn stored.
    pub(crate) failed: u64,
    /// Request latency percentiles, milliseconds.
    pub(crate) p50_ms: u64,
    pub(crate) p95_ms: u64,
    pub(crate) p99_ms: u64,
    #[serde(serialize_with = "crate::journal::by_outcome")]
    pub(crate) carriers: hermes_core::CarrierCounts,
}

/// Requests, latency and carriers by outcome per minute over the last `minutes`, from this
/// replica's journal.
pub(crate) fn overview(inner: &Inner, minutes: i64) -> Vec<Minute> {
    const MINUTE: i64 = 60_000;
    let minutes = minutes.clamp(1, 1440);
    let now = now_ms();
    let first = (now / MINUTE - minutes + 1) * MINUTE;
    let entries = inner.journal.since(first);
    let mut out: Vec<Minute> = (0..minutes)
        .map(|i| Minute {
            at: first + i * MINUTE,
            ..Minute::default()
        })
        .collect();
    let mut latencies: Vec<Vec<u64>> = vec![Vec::new(); out.len()];
    for e in &entries {
        let Ok(i) = usize::try_from((e.at - first) / MINUTE) else {
            continue;
        };
        let Some(minute) = out.get_mut(i) else {
            continue;
        };
        minute.requests += 1;
        if e.session.is_none() {
            minute.failed += 1;
        }
        minute.carriers += &e.carriers;
        latencies[i].push(e.ms);
    }
    for (minute, mut ms) in out.iter_mut().zip(latencies) {
        ms.sort_unstable();
        let at = |q: f64| {
            ms.get(((ms.len() as f64 * q).ceil() as usize).saturating_sub(1))
                .copied()
                .unwrap_or(0)
        };
        minute.p50_ms = at(0.50);
        minute.p95_ms = at(0.95);
        minute.p99_ms = at(0.99);
    }
    out
}

async fn overview_json(State(inner): State<Arc<Inner>>, uri: axum::http::Uri) -> Response {
    let pairs = pairs(uri.query().unwrap_or_default().as_bytes());
    let minutes = match value(&pairs, "minutes") {
        None => 60,
        Some(m) => match m.trim().parse() {
            Ok(m) => m,
            Err(_) => {
                return ApiError::invalid(
                    "minutes",
                    "minutes must be a whole number from 1 to 1440",
                )
                .into_response();
            }
        },
    };
    Json(json!({ "minutes": overview(&inner, minutes) })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_a_body_are_redacted_and_nothing_else() {
        let key = format!("hk_{}_{}", "a".repeat(16), "b".repeat(64));
        let mut body = json!({
            "model": "m", "max_tokens": 10, "api_key": "k-123",
            "messages": [{"role": "user", "content": key}],
            "metadata": {"Authorization": "Bearer xyz", "note": "sk-ant-0123456789abcdefghij"},
            "text": "a sk- mention is no key"
        });
        assert!(redact(&mut body));
        assert_eq!(body["api_key"], "[redacted]");
        assert_eq!(body["messages"][0]["content"], "[redacted]");
        assert_eq!(body["metadata"]["Authorization"], "[redacted]");
        assert_eq!(body["metadata"]["note"], "[redacted]");
        assert_eq!(body["max_tokens"], 10);
        assert_eq!(body["text"], "a sk- mention is no key");
        let mut plain = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        assert!(!redact(&mut plain));
    }
}
