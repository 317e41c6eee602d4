//! The gateway's OpenAPI description (`crates/hermes-serve/openapi.json`, served at
//! `GET /openapi.json`) held to the gateway itself, so the two cannot drift apart:
//!
//! 1. every route the router serves (each `.route("…"` in `src/`) is described, and every
//!    described operation is served: asked on a live gateway, it never meets the fallback 404 or
//!    405, and every method it does not describe does;
//! 2. the real answers of each operation — success and each error shape, from a live gateway
//!    over the strict simulators — have a described status and content type, and their JSON
//!    bodies validate against the described schemas;
//!    The admin API's and the inspector's answers are asked with a real admin key of the store:
//!    each success and each refusal (400, 401, 403, 404), and the inspector's pages, redirects
//!    and assets;
//! 3. the request bodies real clients send — Claude Code's recorded request, and every body the
//!    official OpenAI and Anthropic SDKs send in their tool-turn scripts (`tests/sdk/`),
//!    recorded on the way in — validate against the described request schemas.
//!
//! Adding an operation to the router without describing it fails (1); describing one the router
//! does not serve fails (1); changing an answer's shape without its schema fails (2).

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::Request;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{KEY, hello};

/// The description, parsed.
struct Description(Value);

impl Description {
    fn load() -> Description {
        Description(serde_json::from_str(hermes_serve::OPENAPI).expect("openapi.json is JSON"))
    }

    /// The described paths.
    fn paths(&self) -> Vec<&str> {
        self.0["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .map(String::as_str)
            .collect()
    }

    /// The operation `method` (lower case) of `path`, if described.
    fn operation(&self, method: &str, path: &str) -> Option<&Value> {
        self.0["paths"].get(path)?.get(method)
    }

    /// `schema`, its `#/components/…` references resolved against the description.
    fn validator(&self, schema: &Value) -> jsonschema::Validator {
        let mut root = schema.as_object().cloned().unwrap_or_default();
        root.insert("components".into(), self.0["components"].clone());
        jsonschema::validator_for(&Value::Object(root)).expect("a valid JSON Schema")
    }

    /// `#/components/responses/X` followed, else the response as written.
    fn resolved<'a>(&'a self, response: &'a Value) -> &'a Value {
        match response.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .0
                .pointer(r.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("{r} resolves")),
            None => response,
        }
    }

    /// The request body schema of `method` `path`.
    fn request_schema(&self, method: &str, path: &str) -> &Value {
        let operation = self
            .operation(method, path)
            .unwrap_or_else(|| panic!("{method} {path} is described"));
        &operation["requestBody"]["content"]["application/json"]["schema"]
    }
}

/// The errors of `instance` against `validator`, each with where it is.
fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Asserts that `response` — the answer to `method` `path` — has a status and content type the
/// description gives that operation, and that its body validates against the described schema;
/// the body (JSON, or the text).
async fn conforms(d: &Description, method: &str, path: &str, response: reqwest::Response) -> Value {
    let status = response.status().as_u16().to_string();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let text = response.text().await.unwrap();
    let case = format!("{method} {path} answered {status} {content_type}: {text:.600}");
    let operation = d
        .operation(method, path)
        .unwrap_or_else(|| panic!("{case}: not described"));
    let described = operation["responses"]
        .get(&status)
        .unwrap_or_else(|| panic!("{case}: the status is not described"));
    let described = d.resolved(described);
    if described.get("content").is_none() {
        assert!(text.is_empty(), "{case}: described without a body");
        return Value::Null;
    }
    let media = described["content"]
        .get(&content_type)
        .unwrap_or_else(|| panic!("{case}: the content type is not described"));
    let schema = &media["schema"];
    let body = match content_type.as_str() {
        "application/json" => serde_json::from_str(&text).unwrap_or_else(|e| panic!("{case}: {e}")),
        _ => Value::String(text),
    };
    let errors = violations(&d.validator(schema), &body);
    assert!(errors.is_empty(), "{case}\nbreaks its schema: {errors:#?}");
    body
}

/// The start of `body`'s JSON text, for a failure's message.
fn shown(body: &Value) -> String {
    body.to_string().chars().take(300).collect()
}

/// `request` sent, its answer checked against the description of `method path` ([`conforms`]).
async fn sent(
    d: &Description,
    method: &str,
    path: &str,
    request: reqwest::RequestBuilder,
) -> Value {
    conforms(d, method, path, request.send().await.unwrap()).await
}

/// `body` posted to `path` by `post` whole, then streamed (`"stream": true` added), each answer
/// checked against the description; the whole answer's body.
async fn whole_then_streamed(
    d: &Description,
    path: &str,
    body: &Value,
    post: impl Fn(&str, &Value) -> reqwest::RequestBuilder,
) -> Value {
    let reply = sent(d, "post", path, post(path, body)).await;
    let mut streamed = body.clone();
    streamed["stream"] = true.into();
    sent(d, "post", path, post(path, &streamed)).await;
    reply
}

/// Every `.rs` file under `dir`, concatenated.
fn sources(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            text.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    text
}

/// The paths the router serves: the first string of each `.route(` call in `src` (every file of
/// the crate: a router nested under a prefix must write its routes' whole paths, or this test
/// must learn its prefix).
fn routes_in(src: &str) -> Vec<String> {
    src.split(".route(")
        .skip(1)
        .map(|call| {
            let call = call.trim_start();
            let rest = call
                .strip_prefix('"')
                .unwrap_or_else(|| panic!("a route's path is a string literal: {call:.80}"));
            rest[..rest.find('"').expect("a closing quote")].to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_described_and_every_described_operation_is_served() {
    let d = Description::load();
    let routed = routes_in(&sources(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    assert!(routed.len() >= 10, "the router's routes: {routed:?}");
    let described = d.paths();
    for path in &routed {
        assert!(
            described.contains(&path.as_str()),
            "the router serves {path}, which openapi.json does not describe"
        );
    }
    let (_sim, gateway) = crate::deepseek_gateway(|mut c| {
        c.ui = true;
        c
    })
    .await;
    let client = no_redirects();
    for path in &described {
        assert!(
            routed.iter().any(|r| r == path),
            "openapi.json describes {path}, which the router does not serve"
        );
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            let lower = method.as_str().to_ascii_lowercase();
            let mut request = client
                .request(method.clone(), gateway.url(path))
                .bearer_auth(KEY);
            if method == Method::POST {
                request = request.json(&json!({}));
            }
            if *path == "/v1/responses" && method == Method::GET {
                request = request.header("upgrade", "websocket");
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            if d.operation(&lower, path).is_some() {
                assert!(
                    status != 404 && status != 405,
                    "{method} {path} is described, yet the gateway answered {status}: {body}"
                );
            } else {
                assert_eq!(
                    status, 405,
                    "{method} {path} is not described, yet the gateway answered {status}: {body}"
                );
            }
        }
    }
}

/// Each operation's answers — success, whole and streamed, and each error shape the gateway
/// gives it — from a live gateway in front of the strict DeepSeek simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_answers_match_the_described_responses() {
    let d = Description::load();
    let (_sim, gateway) = crate::deepseek_gateway(|c| c.max_request_bytes(64 * 1024)).await;
    let client = reqwest::Client::new();
    let model = "deepseek/deepseek-v4-pro";
    let big =
        json!({"model": model, "messages": [{"role": "user", "content": "x".repeat(70_000)}]});
    let chat = "/v1/chat/completions";
    let post =
        |path: &str, body: &Value| client.post(gateway.url(path)).bearer_auth(KEY).json(body);

    let mut whole = hello("hello");
    whole["model"] = model.into();
    let reply = whole_then_streamed(&d, chat, &whole, post).await;
    assert_eq!(reply["object"], "chat.completion", "{reply}");
    let refusals = [
        (json!({"model": model}), 400),
        (
            json!({"model": "nope", "messages": [{"role": "user", "content": "hi"}]}),
            404,
        ),
        (big.clone(), 413),
    ];
    for (body, status) in &refusals {
        let answer = post(chat, body).send().await.unwrap();
        assert_eq!(answer.status(), *status, "{}", shown(body));
        conforms(&d, "post", chat, answer).await;
    }
    let unauthenticated = client.post(gateway.url(chat)).json(&whole).send().await;
    conforms(&d, "post", chat, unauthenticated.unwrap()).await;
    let encoded = post(chat, &whole).header("content-encoding", "rot13");
    let answer = encoded.send().await.unwrap();
    assert_eq!(answer.status(), 415);
    conforms(&d, "post", chat, answer).await;

    // The Messages door and count_tokens, in Anthropic's shape.
    let messages = "/v1/messages";
    let anthropic = |path: &str, body: &Value| {
        client
            .post(gateway.url(path))
            .header("x-api-key", KEY)
            .header("anthropic-version", "2023-06-01")
            .json(body)
    };
    let turn = json!({"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": "hello"}]});
    let reply = whole_then_streamed(&d, messages, &turn, anthropic).await;
    assert_eq!(reply["type"], "message", "{reply}");
    whole = turn.clone();
    whole.as_object_mut().unwrap().remove("max_tokens");
    let count = "/v1/messages/count_tokens";
    let counted = sent(&d, "post", count, anthropic(count, &whole)).await;
    assert!(counted["input_tokens"].as_u64().unwrap() > 0, "{counted}");
    let mut unknown = turn.clone();
    unknown["model"] = "nope".into();
    for (path, body, status) in [
        (messages, &whole, 400),
        (messages, &unknown, 404),
        (messages, &big, 413),
        (count, &json!({"model": model}), 400),
    ] {
        let answer = anthropic(path, body).send().await.unwrap();
        assert_eq!(answer.status(), status, "{path} {}", shown(body));
        conforms(&d, "post", path, answer).await;
    }
    let unauthenticated = client.post(gateway.url(messages)).json(&turn).send().await;
    conforms(&d, "post", messages, unauthenticated.unwrap()).await;

    // The Responses door and its compaction.
    let responses = "/v1/responses";
    let ask = json!({"model": model, "input": "hello"});
    let reply = whole_then_streamed(&d, responses, &ask, post).await;
    assert_eq!(reply["object"], "response", "{reply}");
    let compact = "/v1/responses/compact";
    let compacted = sent(&d, "post", compact, post(compact, &ask)).await;
    assert_eq!(compacted["object"], "response.compaction", "{compacted}");
    let mut previous = ask.clone();
    previous["previous_response_id"] = "resp_nope".into();
    for (path, body, status) in [
        (responses, json!({"model": model}), 400),
        (responses, previous, 400),
        (compact, json!({"model": "nope", "input": "hi"}), 404),
    ] {
        let answer = post(path, &body).send().await.unwrap();
        assert_eq!(answer.status(), status, "{path} {}", shown(&body));
        conforms(&d, "post", path, answer).await;
    }
    let socket = client
        .get(gateway.url(responses))
        .header("upgrade", "websocket");
    assert_eq!(
        conforms(&d, "get", responses, socket.send().await.unwrap()).await["error"]["code"],
        Value::Null
    );
    sent(&d, "get", responses, client.get(gateway.url(responses))).await;

    // The model list in each shape, and the operational endpoints.
    let models = "/v1/models";
    let list = client.get(gateway.url(models)).bearer_auth(KEY);
    assert_eq!(
        conforms(&d, "get", models, list.send().await.unwrap()).await["object"],
        "list"
    );
    let page = client
        .get(gateway.url(models))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01");
    assert_eq!(
        conforms(&d, "get", models, page.send().await.unwrap()).await["has_more"],
        false
    );
    for anthropic_version in [false, true] {
        let mut unauthenticated = client.get(gateway.url(models)).bearer_auth("hk-nobody");
        if anthropic_version {
            unauthenticated = unauthenticated.header("anthropic-version", "2023-06-01");
        }
        let answer = unauthenticated.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        conforms(&d, "get", models, answer).await;
    }
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
        let answer = client.get(gateway.url(path)).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        conforms(&d, "get", path, answer).await;
    }
    let served: Value = serde_json::from_str(
        &client
            .get(gateway.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(served, d.0, "GET /openapi.json serves openapi.json");
}

/// The admin API's answers — each operation's success and its refusals (400, 401, 403, 404) —
/// and the inspector's pages, redirects and assets, from a gateway whose keys are its store's
/// (an admin key and a tenant's made there), after one real turn so that a conversation, a
/// journaled request and an upstream body exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_and_inspector_answers_match_the_described_responses() {
    let d = Description::load();
    let dir = tempfile::tempdir().unwrap();
    let store = hermes_engine::store::Store::open(&dir.path().join("state.db"))
        .await
        .unwrap();
    let admin = store.add_admin_key().await.unwrap();
    let tenant = store.add_gateway_key("acme").await.unwrap();
    let sim = hermes_sim::Sim::start("deepseek-v4").await.unwrap();
    let gateway = crate::replica(store, &sim.base_url(), |mut c| {
        c.ui = true;
        c
    })
    .await;
    let client = no_redirects();
    let turn = client
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(&tenant)
        .json(&hello("hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(turn.status(), 200);
    turn.text().await.unwrap();

    let get = |path: &str, key: &str| client.get(gateway.url(path)).bearer_auth(key);
    let list = "/admin/v1/conversations";
    let page = conforms(&d, "get", list, get(list, &admin).send().await.unwrap()).await;
    assert_eq!(page["total"], 1, "{page}");
    let id = page["conversations"][0]["id"].as_str().unwrap().to_owned();
    let one = "/admin/v1/conversations/{id}";
    let url = format!("/admin/v1/conversations/{id}");
    let whole = conforms(&d, "get", one, get(&url, &admin).send().await.unwrap()).await;
    assert!(
        !whole["steps"].as_array().unwrap().is_empty(),
        "{}",
        shown(&whole)
    );
    let request = &whole["requests"][0];
    assert!(
        request["bodies"].as_u64().unwrap() >= 1,
        "{}",
        shown(&whole)
    );
    let bodies = "/admin/v1/requests/{id}/bodies/{n}";
    let url = format!("/admin/v1/requests/{}/bodies/0", request["id"]);
    let body = conforms(&d, "get", bodies, get(&url, &admin).send().await.unwrap()).await;
    assert!(body["body"].as_str().unwrap().contains("hello"), "{body}");
    for path in ["/admin/v1/keys", "/admin/v1/tenants", "/admin/v1/overview"] {
        conforms(&d, "get", path, get(path, &admin).send().await.unwrap()).await;
    }
    let keys = "/admin/v1/keys";
    let made = client
        .post(gateway.url(keys))
        .bearer_auth(&admin)
        .json(&json!({"tenant": "globex"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let made = conforms(&d, "post", keys, made).await;
    let revoke = "/admin/v1/keys/{id}";
    let url = format!("/admin/v1/keys/{}", made["id"].as_str().unwrap());
    let revoked = client.delete(gateway.url(&url)).bearer_auth(&admin);
    let revoked = revoked.send().await.unwrap();
    assert_eq!(revoked.status(), 204);
    conforms(&d, "delete", revoke, revoked).await;

    // The refusals, in OpenAI's error shape.
    let refusals = [
        ("get", list, list.to_owned(), "", 401),
        ("get", list, list.to_owned(), "hk_nobody", 401),
        ("get", list, list.to_owned(), tenant.as_str(), 403),
        (
            "get",
            list,
            format!("{list}?limit=many"),
            admin.as_str(),
            400,
        ),
        (
            "get",
            list,
            format!("{list}?cursor=nowhere"),
            admin.as_str(),
            400,
        ),
        ("get", one, format!("{list}/nope"), admin.as_str(), 404),
        (
            "get",
            bodies,
            "/admin/v1/requests/x/bodies/0".into(),
            admin.as_str(),
            400,
        ),
        (
            "get",
            bodies,
            "/admin/v1/requests/1/bodies/-1".into(),
            admin.as_str(),
            400,
        ),
        (
            "get",
            bodies,
            "/admin/v1/requests/999/bodies/0".into(),
            admin.as_str(),
            404,
        ),
        (
            "get",
            "/admin/v1/overview",
            "/admin/v1/overview?minutes=x".into(),
            admin.as_str(),
            400,
        ),
        ("get", keys, keys.to_owned(), tenant.as_str(), 403),
        ("delete", revoke, url, admin.as_str(), 404),
        (
            "delete",
            revoke,
            "/admin/v1/keys/hk_nope".into(),
            tenant.as_str(),
            403,
        ),
        ("post", keys, keys.to_owned(), admin.as_str(), 400),
    ];
    for (method, path, url, key, status) in refusals {
        let verb = method.to_ascii_uppercase().parse().unwrap();
        let mut request = client.request(verb, gateway.url(&url));
        if !key.is_empty() {
            request = request.bearer_auth(key);
        }
        if method == "post" {
            request = request.body("not json");
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), status, "{method} {url}");
        let error = conforms(&d, method, path, answer).await;
        assert!(error["error"]["message"].is_string(), "{error}");
    }

    // The inspector: sign-in, a page with and without the cookie, the assets.
    let login = "/ui/login";
    let form = |key: &str| {
        client
            .post(gateway.url(login))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("key={key}"))
    };
    for (key, status) in [("hk_nobody", 401), (tenant.as_str(), 403)] {
        let answer = form(key).send().await.unwrap();
        assert_eq!(answer.status(), status);
        conforms(&d, "post", login, answer).await;
    }
    let signed = form(&admin).send().await.unwrap();
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    conforms(&d, "post", login, signed).await;
    let pages = [
        ("/ui/login", login.to_owned(), 200),
        ("/ui/assets/ui.css", "/ui/assets/ui.css".into(), 200),
        ("/ui/assets/ui.js", "/ui/assets/ui.js".into(), 200),
        ("/ui", "/ui".into(), 303),
        ("/ui/conversations", "/ui/conversations".into(), 200),
        (
            "/ui/conversations/{id}",
            format!("/ui/conversations/{id}"),
            200,
        ),
        (
            "/ui/conversations/{id}",
            "/ui/conversations/nope".into(),
            404,
        ),
        (
            "/ui/requests/{id}/bodies/{n}",
            "/ui/requests/x/bodies/0".into(),
            400,
        ),
        ("/ui/keys", "/ui/keys".into(), 200),
        ("/ui/overview", "/ui/overview".into(), 200),
    ];
    for (path, url, status) in pages {
        let answer = client.get(gateway.url(&url)).header("cookie", &cookie);
        let answer = answer.send().await.unwrap();
        assert_eq!(answer.status(), status, "{url}");
        conforms(&d, "get", path, answer).await;
    }
    let outside = client.get(gateway.url("/ui/keys")).send().await.unwrap();
    assert_eq!(outside.status(), 303);
    conforms(&d, "get", "/ui/keys", outside).await;
    // The key form, posted with the session's cookie.
    let create = || {
        client
            .post(gateway.url("/ui/keys"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("tenant=initech")
    };
    let foreign = create().header("sec-fetch-site", "cross-site");
    let foreign = foreign.send().await.unwrap();
    assert_eq!(foreign.status(), 403);
    conforms(&d, "post", "/ui/keys", foreign).await;
    sent(&d, "post", "/ui/keys", create()).await;
    let out = client
        .post(gateway.url("/ui/logout"))
        .header("cookie", &cookie);
    conforms(&d, "post", "/ui/logout", out.send().await.unwrap()).await;
    gateway.stop().await;
}

/// The bodies real clients send validate against the described request schemas: Claude Code's
/// recorded request, and every body the official SDKs' scripts send through a gateway in front
/// of the strict simulators (recorded as they arrive). Without the SDKs (`HERMES_SDK_PYTHON`)
/// only the first part runs, unless `HERMES_REQUIRE_SDK` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn real_clients_bodies_match_the_described_requests() {
    let d = Description::load();
    let check = |path: &str, body: &Value, whose: &str| {
        let errors = violations(&d.validator(d.request_schema("post", path)), body);
        assert!(
            errors.is_empty(),
            "{whose}'s body for POST {path} breaks its schema: {errors:#?}\n{}",
            shown(body)
        );
    };
    let claude_code: Value = serde_json::from_str(include_str!(
        "../fixtures/claude-code-2.1.332-opus-4-8.json"
    ))
    .unwrap();
    check("/v1/messages", &claude_code, "Claude Code");

    let scripts: [(&str, &str, &str, &str, Value); 3] = [
        (
            "openai",
            "deepseek-v4",
            "openai_tool_turns.py",
            "OPENAI_",
            json!({"model": "deepseek/deepseek-v4-pro", "stream": false, "header": true}),
        ),
        (
            "anthropic",
            "anthropic",
            "anthropic_tool_turns.py",
            "ANTHROPIC_",
            json!({"model": "anthropic/claude-opus-4-6", "stream": false, "forge": false}),
        ),
        (
            "openai",
            "openai-responses",
            "openai_responses_turns.py",
            "OPENAI_",
            json!({"model": "openai-responses/gpt-5.2", "stream": false, "keep": true,
                   "tamper": false, "effort": "high", "compact": true}),
        ),
    ];
    for (sdk, profile, script, settings, mut input) in scripts {
        let probe = format!("import {sdk}");
        let Some(python) = hermes_test_support::sdk::sdk_python(sdk, &probe) else {
            return;
        };
        let sim = hermes_sim::Sim::start(profile).await.unwrap();
        let provider = if profile == "deepseek-v4" {
            "deepseek"
        } else {
            profile
        };
        let (gateway, seen) = recording(provider, &sim.base_url()).await;
        input["key"] = KEY.into();
        input["base_url"] = match sdk {
            "anthropic" => format!("http://{gateway}"),
            _ => format!("http://{gateway}/v1"),
        }
        .into();
        let path = format!("{}/tests/sdk/{script}", env!("CARGO_MANIFEST_DIR"));
        tokio::task::spawn_blocking(move || {
            crate::sdk::run_script(python, &path, settings, &input)
        })
        .await
        .unwrap();
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        assert!(
            seen.len() >= 2,
            "{script}: the SDK sent {} bodies",
            seen.len()
        );
        for (path, body) in &seen {
            let body: Value = serde_json::from_slice(body).unwrap();
            check(path, &body, &format!("the {sdk} SDK ({script})"));
        }
    }
}

/// The bodies a recording gateway received: `(path, body)` of each POST.
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A gateway (the tests' keys, a fresh SQLite store) with `provider` at `base_url`, every
/// request's body recorded as it arrives; its address and the record.
async fn recording(provider: &str, base_url: &str) -> (std::net::SocketAddr, Seen) {
    let dir = tempfile::tempdir().unwrap();
    let store = hermes_engine::store::Store::open(&dir.path().join("state.db"))
        .await
        .unwrap();
    let engine =
        hermes_engine::Engine::builtin().with_store(store, crate::sim_settings(provider, base_url));
    let keys = crate::TestKeys(std::collections::HashMap::from([(
        KEY.to_owned(),
        crate::TENANT.to_owned(),
    )]));
    let config = hermes_serve::ServeConfig::new(hermes_serve::Auth::Keys(Arc::new(keys)));
    let gateway = hermes_serve::Gateway::new(engine, config).unwrap();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let router = gateway.router().layer(axum::middleware::from_fn(
        move |request: Request<Body>, next: axum::middleware::Next| {
            let record = record.clone();
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                if parts.method == axum::http::Method::POST {
                    record
                        .lock()
                        .unwrap()
                        .push((parts.uri.path().to_owned(), bytes.to_vec()));
                }
                next.run(Request::from_parts(parts, Body::from(bytes)))
                    .await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _dir = dir;
        axum::serve(listener, router).await
    });
    (addr, seen)
}

/// A client that answers a redirect as it came (the inspector's pages redirect to its login).
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}
