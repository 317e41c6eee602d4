//! The inspector (`/ui`, `[serve] ui = true` or `hermes serve --ui`; docs/gateway.md "The
//! inspector"): HTML pages rendered here from what the admin API answers (`admin.rs`: the same
//! functions its JSON handlers call), with one stylesheet and one small script embedded in the
//! binary. No third-party code, no network: charts are inline SVG drawn here.
//!
//! A browser signs in once with an admin key (`POST /ui/login`): the key is kept in an
//! `HttpOnly`, `SameSite=Strict` cookie scoped to `/ui` and checked on every page like a bearer
//! token (a tenant's key is refused). Forms that change something (a key made or revoked) are
//! `POST`s that must come from the inspector's own origin. Every page is sent with a
//! content-security policy that allows only its own stylesheet and script.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::Inner;
use crate::admin::{self, Carrier, Conversation, ListQuery, Minute, Page, Row, Step};
use crate::journal::Entry;

/// The cookie that holds the admin key of a signed-in browser.
const COOKIE: &str = "hermes_admin";

/// The stylesheet, embedded.
const CSS: &str = include_str!("ui/ui.css");
/// The script, embedded.
const JS: &str = include_str!("ui/ui.js");

/// The inspector's routes (none unless `[serve] ui` is on): the sign-in page and the assets
/// open, every other page behind [`signed_in`].
pub(crate) fn routes(state: &Arc<Inner>) -> axum::Router<Arc<Inner>> {
    if !state.config.ui {
        return axum::Router::new();
    }
    let pages = axum::Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/conversations") }))
        .route("/ui/conversations", get(conversations_page))
        .route("/ui/conversations/{id}", get(conversation_page))
        .route("/ui/requests/{id}/bodies/{n}", get(body_page))
        .route("/ui/keys", get(keys_page).post(create_key))
        .route("/ui/keys/{id}/revoke", post(revoke_key))
        .route("/ui/overview", get(overview_page))
        .route("/ui/logout", post(logout))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            signed_in,
        ));
    axum::Router::new()
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/assets/ui.css", get(|| asset(CSS, "text/css")))
        .route("/ui/assets/ui.js", get(|| asset(JS, "text/javascript")))
        .merge(pages)
}

async fn asset(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// The admin key in `headers`' cookie.
fn cookie_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// Whether a `POST` comes from the inspector's own origin: as `Sec-Fetch-Site` says when a
/// browser sends it, else when its `Origin` (if sent) names the host it was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match header("sec-fetch-site") {
        Some("same-origin") => return true,
        Some(_) => return false,
        None => {}
    }
    match (header("origin"), header("host")) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest == host),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// The layer in front of every page but the sign-in page: the cookie's admin key checked as
/// the admin API checks a bearer (no cookie or a key that is not an admin key: back to the
/// sign-in page); a `POST` from another origin is refused (403).
async fn signed_in(State(inner): State<Arc<Inner>>, request: Request, next: Next) -> Response {
    if request.method() == axum::http::Method::POST && !same_origin(request.headers()) {
        return page_error(StatusCode::FORBIDDEN, "a form from another site");
    }
    let key = cookie_key(request.headers());
    match admin::check(&inner, key.as_deref()).await {
        Ok(()) => next.run(request).await,
        Err(_) => Redirect::to("/ui/login").into_response(),
    }
}

/// `text` escaped for HTML text and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped for a URL's query value or path segment.
fn url(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A Unix-millisecond time as `YYYY-MM-DD HH:MM:SS` UTC: humantime's RFC 3339 form (as in
/// the gateway's `anthropic-ratelimit-…-reset` headers), with a space for its `T` and no `Z`. Its range is
/// 1970 to 9999, which a stored time is clamped to.
fn time(ms: i64) -> String {
    /// 9999-12-31 23:59:59, the last second humantime formats.
    const LAST: u64 = 253_402_300_799;
    let secs = u64::try_from(ms.div_euclid(1000)).unwrap_or(0).min(LAST);
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let rfc3339 = humantime::format_rfc3339_seconds(at).to_string();
    rfc3339.trim_end_matches('Z').replacen('T', " ", 1)
}

/// Which page of the navigation is current.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nav {
    Conversations,
    Overview,
    Keys,
    None,
}

/// A whole page: `title`, the navigation with `nav` current, `body`.
fn layout(title: &str, nav: Nav, body: &str) -> Response {
    let link = |href: &str, name: &str, this: Nav| {
        let current = if nav == this {
            " aria-current=\"page\""
        } else {
            ""
        };
        format!("<li><a href=\"{href}\"{current}>{name}</a></li>")
    };
    let menu = if nav == Nav::None {
        String::new()
    } else {
        format!(
            "<nav aria-label=\"Inspector\"><ul>{}{}{}</ul>\
             <form method=\"post\" action=\"/ui/logout\"><button type=\"submit\">Sign out</button></form></nav>",
            link("/ui/conversations", "Conversations", Nav::Conversations),
            link("/ui/overview", "Overview", Nav::Overview),
            link("/ui/keys", "Keys and tenants", Nav::Keys),
        )
    };
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · hermes inspector</title>\
         <link rel=\"stylesheet\" href=\"/ui/assets/ui.css\">\
         <script src=\"/ui/assets/ui.js\" defer></script></head>\
         <body><a class=\"skip\" href=\"#main\">Skip to content</a>\
         <header><span class=\"brand\">hermes</span>{menu}</header>\
         <main id=\"main\" tabindex=\"-1\"><h1>{}</h1>{body}</main></body></html>",
        esc(title),
        esc(title)
    );
    html_response(StatusCode::OK, html)
}

fn html_response(status: StatusCode, html: String) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
                     form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                ),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("same-origin"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        html,
    )
        .into_response()
}

/// A page that says what went wrong.
fn page_error(status: StatusCode, what: &str) -> Response {
    let mut response = layout(
        "Not shown",
        Nav::None,
        &format!("<p role=\"alert\">{}: {}</p>", status.as_u16(), esc(what)),
    );
    *response.status_mut() = status;
    response
}

/// An admin API error as a page.
fn api_error(error: crate::error::ApiError) -> Response {
    let body = error.body();
    let text = body["error"]["message"].as_str().unwrap_or("failed");
    page_error(error.status, text)
}

// ---- Sign-in ----

fn login_form(error: Option<&str>) -> String {
    let alert = error.map_or_else(String::new, |e| {
        format!("<p role=\"alert\" class=\"error\">{}</p>", esc(e))
    });
    format!(
        "{alert}<form method=\"post\" action=\"/ui/login\" class=\"login\">\
         <label for=\"key\">Admin key</label>\
         <input id=\"key\" name=\"key\" type=\"password\" autocomplete=\"off\" required \
         aria-describedby=\"key-help\">\
         <p id=\"key-help\" class=\"help\">Made with <code>hermes serve keys create --admin</code>. \
         A tenant's key does not sign in.</p>\
         <button type=\"submit\">Sign in</button></form>"
    )
}

async fn login_page() -> Response {
    layout("Sign in", Nav::None, &login_form(None))
}

/// The value of `name` in a form body.
fn field(body: &[u8], name: &str) -> String {
    admin::value(&admin::pairs(body), name).unwrap_or_default()
}

async fn login(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !same_origin(&headers) {
        return page_error(StatusCode::FORBIDDEN, "a form from another site");
    }
    let key = field(&body, "key");
    let key = key.trim();
    if let Err(error) = admin::check(&inner, Some(key)).await {
        let body = error.body();
        let text = body["error"]["message"].as_str().unwrap_or("refused");
        let mut response = layout("Sign in", Nav::None, &login_form(Some(text)));
        *response.status_mut() = error.status;
        return response;
    }
    // A key is `hk_` and hex digits only (checked above): nothing in it needs quoting.
    let cookie = format!("{COOKIE}={key}; Path=/ui; HttpOnly; SameSite=Strict");
    let mut response = Redirect::to("/ui/conversations").into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn logout() -> Response {
    let mut response = Redirect::to("/ui/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("hermes_admin=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}

// ---- Conversations ----

fn tokens_cell(row: &Row) -> String {
    format!(
        "{} in · {} out <span class=\"reasoning\">({} reasoning)</span>",
        row.tokens.input, row.tokens.output, row.tokens.reasoning
    )
}

fn or_dash(value: Option<&str>) -> String {
    esc(value.unwrap_or("—"))
}

fn filter_form(query: &ListQuery) -> String {
    let field = |name: &str, label: &str, value: &Option<String>| {
        format!(
            "<label>{label} <input name=\"{name}\" value=\"{}\"></label>",
            esc(value.as_deref().unwrap_or_default())
        )
    };
    format!(
        "<form method=\"get\" action=\"/ui/conversations\" class=\"filters\" role=\"search\" \
         aria-label=\"Filter conversations\">{}{}{}<button type=\"submit\">Filter</button> \
         <a href=\"/ui/conversations\">Clear</a></form>",
        field("tenant", "Tenant", &query.tenant),
        field("partition", "Partition", &query.partition),
        field("model", "Model", &query.model),
    )
}

fn conversations_table(page: &Page) -> String {
    let mut rows = String::new();
    for c in &page.conversations {
        let _ = write!(
            rows,
            "<tr><td><a href=\"/ui/conversations/{}\">{}</a></td><td>{}</td><td>{}</td>\
             <td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            url(&c.id),
            esc(&c.id),
            or_dash(c.tenant.as_deref()),
            or_dash(c.partition.as_deref()),
            or_dash(c.model.as_deref()),
            c.turns,
            time(c.updated_at),
            c.branches,
            tokens_cell(c),
        );
    }
    if page.conversations.is_empty() {
        rows.push_str("<tr><td colspan=\"8\">No conversation matches.</td></tr>");
    }
    format!(
        "<table><caption>{} conversation{} (newest first)</caption><thead><tr>\
         <th scope=\"col\">Conversation</th><th scope=\"col\">Tenant</th>\
         <th scope=\"col\">Partition</th><th scope=\"col\">Model</th><th scope=\"col\">Turns</th>\
         <th scope=\"col\">Last activity (UTC)</th><th scope=\"col\">Branches</th>\
         <th scope=\"col\">Tokens</th></tr></thead><tbody>{rows}</tbody></table>",
        page.total,
        if page.total == 1 { "" } else { "s" }
    )
}

async fn conversations_page(State(inner): State<Arc<Inner>>, uri: axum::http::Uri) -> Response {
    let page = match ListQuery::of(&uri) {
        Ok(query) => admin::list(&inner, &query).await,
        Err(e) => Err(e),
    };
    let page = match page {
        Ok(page) => page,
        Err(e) => return api_error(e),
    };
    let mut body = filter_form(&page.query);
    body.push_str(&conversations_table(&page));
    if let Some(next) = &page.next {
        let mut href = format!("/ui/conversations?cursor={}", url(next));
        for (name, value) in [
            ("tenant", &page.query.tenant),
            ("partition", &page.query.partition),
            ("model", &page.query.model),
        ] {
            if let Some(value) = value {
                let _ = write!(href, "&{name}={}", url(value));
            }
        }
        let _ = write!(
            body,
            "<p><a rel=\"next\" href=\"{}\">Older conversations</a></p>",
            esc(&href)
        );
    }
    layout("Conversations", Nav::Conversations, &body)
}

/// What a carrier's outcome is, in words, for a step.
fn outcome(step: &Step) -> String {
    if step.left_out {
        let why = step
            .left_out_why
            .as_deref()
            .unwrap_or("a request of this conversation left them out (docs/spec.md §5a 3)");
        let mark = if why.starts_with("dropped_prefix") {
            "<strong class=\"mark dropped\">Dropped: changed prefix</strong>"
        } else {
            "<strong class=\"mark dropped\">Left out for good</strong>"
        };
        format!("{mark} <span class=\"why\">{}</span>", esc(why))
    } else {
        "<strong class=\"mark kept\">Kept</strong> <span class=\"why\">re-attached from the store \
         whenever the client leaves it out</span>"
            .to_owned()
    }
}

fn carriers_table(step: &Step) -> String {
    let source = |c: &Carrier| match (c.source, &c.minted_by) {
        ("minted", Some(by)) => format!("minted by {}", esc(by)),
        _ => "client's own".to_owned(),
    };
    let mut rows = String::new();
    for c in &step.carriers {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td class=\"num\">{} B</td><td>{}</td></tr>",
            esc(&c.family),
            c.bytes,
            source(c)
        );
    }
    format!(
        "<table class=\"carriers\"><caption>Carriers of step {}</caption><thead><tr>\
         <th scope=\"col\">Family</th><th scope=\"col\">Size</th><th scope=\"col\">Came from</th>\
         </tr></thead><tbody>{rows}</tbody></table><p class=\"outcome\">Outcome: {}</p>",
        step.position,
        outcome(step)
    )
}

fn step_item(step: &Step) -> String {
    let mut classes = format!("step role-{}", step.role);
    if step.left_out {
        classes.push_str(" left-out");
    }
    let mut body = String::new();
    if !step.text.is_empty() {
        let _ = write!(body, "<p class=\"text\">{}</p>", esc(&step.text));
    }
    if !step.tool_calls.is_empty() {
        let _ = write!(
            body,
            "<p class=\"calls\">Calls {}</p>",
            esc(&step.tool_calls.join(", "))
        );
    }
    if let Some(id) = &step.tool_call_id {
        let _ = write!(body, "<p class=\"calls\">Result of {}</p>", esc(id));
    }
    if !step.carriers.is_empty() {
        body.push_str(&carriers_table(step));
    }
    let mut flags = String::new();
    if step.archived {
        flags.push_str(" <span class=\"flag\">archived</span>");
    }
    if step.checkpoint {
        flags.push_str(" <span class=\"flag\">checkpoint</span>");
    }
    format!(
        "<li class=\"{classes}\" id=\"step-{p}\" aria-labelledby=\"step-{p}-h\">\
         <h3 id=\"step-{p}-h\">#{p} {role}{flags}</h3>{body}</li>",
        p = step.position,
        role = step.role
    )
}

/// What a request did to the history's carriers, as the outcomes `--explain` names.
fn request_outcomes(e: &Entry) -> String {
    let words = |outcome: &'static str| match outcome {
        "reattached" => "re-attached",
        "passed_through" => "client's own, passed through",
        "demoted" => "demoted (a pad or plain text)",
        "dropped_provenance" => "dropped: another model minted them",
        "missing" => "missing (nothing stored)",
        "dropped_prefix" => "dropped: changed prefix",
        "dropped_upstream" => "dropped by the upstream",
        other => other,
    };
    let out: Vec<String> = e
        .carriers
        .outcomes()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(o, n)| {
            let class = if o.starts_with("dropped") {
                "mark dropped"
            } else {
                "mark"
            };
            format!("<span class=\"{class}\">{} × {n}</span>", words(o))
        })
        .collect();
    if out.is_empty() {
        "none carried".to_owned()
    } else {
        out.join(" ")
    }
}

fn requests_table(requests: &[Entry]) -> String {
    if requests.is_empty() {
        return "<p>No request of this conversation is in this replica's journal (it keeps the \
                latest 20,000 since the gateway started).</p>"
            .to_owned();
    }
    let mut rows = String::new();
    for e in requests {
        let upstream: Vec<String> = e
            .upstream
            .iter()
            .map(|u| {
                let status = match (u.ok, u.status) {
                    (true, _) => "ok".to_owned(),
                    (false, Some(s)) => s.to_string(),
                    (false, None) => "failed".to_owned(),
                };
                format!(
                    "{} {} {status} ({} ms)",
                    esc(u.wire),
                    esc(&u.provider),
                    u.ms
                )
            })
            .collect();
        let mut why: Vec<String> = e.notices.iter().map(|n| esc(n)).collect();
        for r in &e.refusals {
            why.push(format!(
                "refused ({}): now leaving out {}",
                r.status.map_or("no status".to_owned(), |s| s.to_string()),
                esc(&r.carriers.join(", "))
            ));
        }
        let bodies: Vec<String> = (0..e.bodies)
            .map(|n| {
                format!(
                    "<a href=\"/ui/requests/{}/bodies/{n}\">upstream body {}</a>",
                    e.id,
                    n + 1
                )
            })
            .collect();
        let _ = write!(
            rows,
            "<tr><td>{}</td><td class=\"num\">{} ms</td><td>{}<br>{}</td><td>{}</td><td>{}</td></tr>",
            time(e.at),
            e.ms,
            upstream.join("<br>"),
            bodies.join(" "),
            request_outcomes(e),
            why.join("<br>")
        );
    }
    format!(
        "<table class=\"requests\"><caption>Requests (this replica)</caption><thead><tr>\
         <th scope=\"col\">Arrived (UTC)</th><th scope=\"col\">Took</th>\
         <th scope=\"col\">Upstream</th><th scope=\"col\">Carriers sent upstream</th>\
         <th scope=\"col\">Notices and refusals</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

fn branches(c: &Conversation) -> String {
    let mut out = String::from("<ul class=\"tree\">");
    let me = &c.conversation;
    if let Some(parent) = &me.parent_id {
        let _ = write!(
            out,
            "<li>Branched from <a href=\"/ui/conversations/{}\">{}</a><ul>",
            url(parent),
            esc(parent)
        );
    }
    let _ = write!(out, "<li><strong>{}</strong> (this one)", esc(&me.id));
    if !c.branches.is_empty() {
        out.push_str("<ul>");
        for b in &c.branches {
            let _ = write!(
                out,
                "<li><a href=\"/ui/conversations/{}\">{}</a> — {} turns, {} branches</li>",
                url(&b.id),
                esc(&b.id),
                b.turns,
                b.branches
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</li>");
    if me.parent_id.is_some() {
        out.push_str("</ul></li>");
    }
    out.push_str("</ul>");
    out
}

async fn conversation_page(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    let c = match admin::conversation(&inner, &id).await {
        Ok(c) => c,
        Err(e) => return api_error(e),
    };
    let me = &c.conversation;
    let mut body = format!(
        "<dl class=\"facts\"><dt>Tenant</dt><dd>{}</dd><dt>Partition</dt><dd>{}</dd>\
         <dt>Model</dt><dd>{}/{}</dd><dt>Turns</dt><dd>{}</dd><dt>Last activity</dt><dd>{} UTC</dd>\
         <dt>Tokens</dt><dd>{}</dd></dl>",
        or_dash(me.tenant.as_deref()),
        or_dash(me.partition.as_deref()),
        or_dash(me.provider.as_deref()),
        or_dash(me.model.as_deref()),
        me.turns,
        time(me.updated_at),
        tokens_cell(me)
    );
    body.push_str("<h2>Branches</h2>");
    body.push_str(&branches(&c));
    body.push_str("<h2>Timeline</h2><ol class=\"timeline\">");
    for step in &c.steps {
        body.push_str(&step_item(step));
    }
    body.push_str("</ol><h2>What was sent upstream, and why</h2>");
    body.push_str(&requests_table(&c.requests));
    layout(
        &format!("Conversation {}", me.id),
        Nav::Conversations,
        &body,
    )
}

async fn body_page(
    State(inner): State<Arc<Inner>>,
    Path((id, n)): Path<(String, String)>,
) -> Response {
    let (id, n) = match admin::body_path(&id, &n) {
        Ok(at) => at,
        Err(e) => return api_error(e),
    };
    let body = match admin::body(&inner, id, n) {
        Ok(body) => body,
        Err(e) => return api_error(e),
    };
    let note = if body.redacted {
        "Secrets in it are shown as <code>[redacted]</code> (the rest re-serialised)."
    } else {
        "Its exact bytes, re-indented."
    };
    layout(
        &format!("Upstream body {} of request {id}", n + 1),
        Nav::Conversations,
        &format!(
            "<p>{note}</p><pre class=\"body\" tabindex=\"0\" aria-label=\"Upstream body\">{}</pre>",
            esc(&body.body)
        ),
    )
}

// ---- Keys and tenants ----

async fn keys_body(inner: &Inner, created: Option<&admin::Created>) -> Result<String, Response> {
    let keys = admin::keys(inner).await.map_err(api_error)?;
    let tenants = admin::tenants(inner).await.map_err(api_error)?;
    let mut body = String::new();
    if let Some(created) = created {
        let _ = write!(
            body,
            "<div role=\"status\" class=\"created\"><p>New key for tenant <strong>{}</strong>. \
             It is shown this once; only its digest is stored.</p>\
             <p><label for=\"new-key\">Key</label> <input id=\"new-key\" readonly value=\"{}\" size=\"80\"> \
             <button type=\"button\" data-copy=\"new-key\">Copy</button></p></div>",
            esc(&created.tenant),
            esc(&created.key)
        );
    }
    body.push_str(
        "<h2>Create a key</h2><form method=\"post\" action=\"/ui/keys\" class=\"create\">\
         <label for=\"tenant\">Tenant</label> <input id=\"tenant\" name=\"tenant\" required> \
         <button type=\"submit\">Create key</button></form><h2>Keys</h2>",
    );
    let mut rows = String::new();
    for k in &keys {
        let who = if k.admin {
            "<em>admin</em>".to_owned()
        } else {
            or_dash(k.tenant.as_deref())
        };
        let _ = write!(
            rows,
            "<tr><td><code>{}</code></td><td>{who}</td><td>{}</td><td>{}</td><td>\
             <form method=\"post\" action=\"/ui/keys/{}/revoke\" data-confirm=\"Revoke {}?\">\
             <button type=\"submit\" aria-label=\"Revoke {}\">Revoke</button></form></td></tr>",
            esc(&k.id),
            time(k.created_at),
            k.last_used_at.map_or("never".to_owned(), time),
            url(&k.id),
            esc(&k.id),
            esc(&k.id),
        );
    }
    let _ = write!(
        body,
        "<table><caption>{} key{}</caption><thead><tr><th scope=\"col\">Key</th>\
         <th scope=\"col\">Tenant</th><th scope=\"col\">Created (UTC)</th>\
         <th scope=\"col\">Last used</th><th scope=\"col\">Revoke</th></tr></thead><tbody>{rows}</tbody></table>",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" }
    );
    body.push_str("<h2>Tenants and the policy in force</h2>");
    let mut rows = String::new();
    for t in &tenants {
        let _ = write!(
            rows,
            "<tr><th scope=\"row\"><a href=\"/ui/conversations?tenant={}\">{}</a></th>\
             <td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            url(&t.name),
            esc(&t.name),
            t.keys,
            settings(&t.policy),
            settings(&t.limits)
        );
    }
    let _ = write!(
        body,
        "<table><caption>{} tenant{}</caption><thead><tr><th scope=\"col\">Tenant</th>\
         <th scope=\"col\">Keys</th><th scope=\"col\">Policy</th><th scope=\"col\">Limits</th>\
         </tr></thead><tbody>{rows}</tbody></table>",
        tenants.len(),
        if tenants.len() == 1 { "" } else { "s" }
    );
    Ok(body)
}

/// A JSON object of settings as `name = value` lines (`null`: none).
fn settings(object: &serde_json::Value) -> String {
    let Some(members) = object.as_object() else {
        return esc(&object.to_string());
    };
    members
        .iter()
        .map(|(name, value)| {
            let value = match value {
                serde_json::Value::Null => "none".to_owned(),
                other => other.to_string(),
            };
            format!("<code>{} = {}</code>", esc(name), esc(&value))
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

async fn keys_page(State(inner): State<Arc<Inner>>) -> Response {
    match keys_body(&inner, None).await {
        Ok(body) => layout("Keys and tenants", Nav::Keys, &body),
        Err(response) => response,
    }
}

async fn create_key(State(inner): State<Arc<Inner>>, body: axum::body::Bytes) -> Response {
    let created = match admin::create_key(&inner, field(&body, "tenant").trim()).await {
        Ok(created) => created,
        Err(e) => return api_error(e),
    };
    match keys_body(&inner, Some(&created)).await {
        Ok(body) => layout("Keys and tenants", Nav::Keys, &body),
        Err(response) => response,
    }
}

async fn revoke_key(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    match admin::revoke_key(&inner, &id).await {
        Ok(_) => Redirect::to("/ui/keys").into_response(),
        Err(e) => api_error(e),
    }
}

// ---- Overview ----

/// One series of a chart: its name, its CSS class and its values.
struct Series<'a> {
    name: &'a str,
    class: &'a str,
    values: Vec<u64>,
}

/// A line chart of `series` over `minutes`, as inline SVG with a text summary for screen
/// readers.
fn chart(title: &str, unit: &str, minutes: &[Minute], series: &[Series<'_>]) -> String {
    const W: f64 = 720.0;
    const H: f64 = 180.0;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let n = minutes.len().max(2) - 1;
    let x = |i: usize| 40.0 + (W - 50.0) * i as f64 / n as f64;
    let y = |v: u64| H - 20.0 - (H - 30.0) * v as f64 / max as f64;
    let mut svg = format!(
        "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"{} per minute, most {max} {}\"><line class=\"axis\" x1=\"40\" y1=\"{}\" \
         x2=\"{}\" y2=\"{}\"/><text x=\"0\" y=\"14\">{max}</text><text x=\"0\" y=\"{}\">0</text>",
        esc(title),
        esc(title),
        esc(unit),
        H - 20.0,
        W - 10.0,
        H - 20.0,
        H - 20.0
    );
    for s in series {
        let points: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"{}\" points=\"{}\"><title>{}</title></polyline>",
            s.class,
            points.join(" "),
            esc(s.name)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"40\" y=\"{b}\">{} min ago</text><text x=\"{}\" y=\"{b}\" text-anchor=\"end\">now</text>",
        minutes.len(),
        W - 10.0,
        b = H - 4.0
    );
    svg.push_str("</svg><ul class=\"legend\">");
    for s in series {
        let total: u64 = s.values.iter().sum();
        let peak = s.values.iter().max().copied().unwrap_or(0);
        // A percentile per minute has no meaningful sum: latency shows its peak only.
        let total = if unit == "ms" {
            String::new()
        } else {
            format!("total {total}, ")
        };
        let _ = write!(
            svg,
            "<li><span class=\"swatch {}\"></span>{}: {total}peak {peak} {}</li>",
            s.class,
            esc(s.name),
            esc(unit)
        );
    }
    svg.push_str("</ul></figure>");
    svg
}

async fn overview_page(State(inner): State<Arc<Inner>>) -> Response {
    let minutes = admin::overview(&inner, 60);
    // One series of the chart: `name` drawn in `class`, each minute's `f`.
    let series = |name: &'static str, class: &'static str, f: &dyn Fn(&Minute) -> u64| Series {
        name,
        class,
        values: minutes.iter().map(f).collect(),
    };
    let mut body = String::from(
        "<p>The last hour on this replica, per minute, from the gateway's journal of requests \
         (the same counts as <code>/metrics</code>' <code>hermes_carriers_total</code>).</p>",
    );
    let outcome_names = [
        ("re-attached", "s1"),
        ("client's own", "s2"),
        ("demoted", "s3"),
        ("dropped: provenance", "s4"),
        ("missing", "s5"),
        ("dropped: changed prefix", "s6"),
        ("dropped by the upstream", "s7"),
    ];
    let carriers: Vec<Series<'_>> = outcome_names
        .iter()
        .enumerate()
        .map(|(i, &(name, class))| series(name, class, &|m| m.carriers.outcomes()[i].1))
        .collect();
    // The three charts, in order: title, unit, series.
    let charts = [
        (
            "Requests",
            "requests",
            vec![
                series("requests", "s1", &|m| m.requests),
                series("failed", "s4", &|m| m.failed),
            ],
        ),
        (
            "Latency",
            "ms",
            vec![
                series("p50", "s1", &|m| m.p50_ms),
                series("p95", "s2", &|m| m.p95_ms),
                series("p99", "s4", &|m| m.p99_ms),
            ],
        ),
        ("Carriers by outcome", "carriers", carriers),
    ];
    for (title, unit, series) in &charts {
        body.push_str(&chart(title, unit, &minutes, series));
    }
    layout("Overview", Nav::Overview, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html_and_urls() {
        assert_eq!(
            esc("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(url("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
    }

    #[test]
    fn times_are_utc_calendar_dates() {
        assert_eq!(time(0), "1970-01-01 00:00:00");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(time(1_796_640_586_589), "2026-12-07 10:49:46");
    }

    #[test]
    fn times_outside_humantimes_range_are_clamped_to_it() {
        assert_eq!(time(-1), "1970-01-01 00:00:00");
        assert_eq!(time(i64::MAX), "9999-12-31 23:59:59");
    }

    #[test]
    fn a_post_from_another_site_is_not_same_origin() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (k, v) in pairs {
                map.insert(*k, HeaderValue::from_static(v));
            }
            map
        };
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(same_origin(&headers(&[
            ("origin", "http://127.0.0.1:8642"),
            ("host", "127.0.0.1:8642")
        ])));
        assert!(!same_origin(&headers(&[
            ("origin", "http://evil.example"),
            ("host", "127.0.0.1:8642")
        ])));
        assert!(!same_origin(&headers(&[("origin", "null"), ("host", "h")])));
    }
}
