//! hermes-serve's integration tests: the gateway on 127.0.0.1:0 over a real SQLite store, its
//! upstream the strict DeepSeek V4 simulator or a wiremock server, driven with reqwest
//! (`errors`, `lifecycle`, `streams`, two replicas over one store in `replicas`), with the
//! official `openai` Python client (`sdk`), and with the real agent programs that `cargo xtask
//! clients` installs (`clients`: Claude Code, the AI SDK, the OpenAI Agents SDK, LangChain,
//! pydantic-ai).
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Runs the async test `$name(db: TestDb)` on a fresh SQLite file and on a fresh schema of the
/// test PostgreSQL server (skipped, and recorded so, without one unless `HERMES_REQUIRE_PG`),
/// on a multi-threaded runtime.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                let db = hermes_store::testing::TestDb::new(hermes_store::Backend::Sqlite)
                    .await
                    .unwrap();
                super::$name(db).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                if let Some(db) =
                    hermes_store::testing::TestDb::new(hermes_store::Backend::Postgres).await
                {
                    super::$name(db).await;
                }
            }
        }
    };
}

mod binding;
mod boundary;
mod claude_code;
mod clients;
mod errors;
mod idempotency;
mod keys;
mod left_out;
mod lifecycle;
mod limits;
mod messages;
mod metrics;
mod openapi;
mod place;
mod policy;
mod replicas;
mod responses;
mod retention;
mod sdk;
mod store_away;
mod streams;
mod tls;
mod tool_calls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use hermes_engine::store::Store;
use hermes_engine::{Defaults, Engine, ProviderDefaults, Settings};
use hermes_serve::{Auth, Gateway, Keys, KeysError, ServeConfig};

/// The gateway key the tests' [`TestKeys`] knows, and its tenant.
pub(crate) const KEY: &str = "hk-test-gateway-key";
pub(crate) const TENANT: &str = "tenant-a";

/// A second gateway key [`TestKeys`] knows, of another tenant.
pub(crate) const KEY_B: &str = "hk-test-gateway-key-b";
pub(crate) const TENANT_B: &str = "tenant-b";

/// A key table in memory: the shape of the store's `tenant_for_key`.
pub(crate) struct TestKeys(HashMap<String, String>);

#[async_trait::async_trait]
impl Keys for TestKeys {
    async fn tenant(&self, bearer: &str) -> Result<Option<String>, KeysError> {
        Ok(self.0.get(bearer).cloned())
    }
}

/// A running gateway: its address, store and the means to stop it.
pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    pub(crate) store: Store,
    _dir: Option<tempfile::TempDir>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), hermes_serve::ServeError>>,
}

impl Running {
    /// `http://ADDR/v1`.
    pub(crate) fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://ADDR` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `POST /v1/chat/completions` with `body` and the gateway key.
    pub(crate) async fn chat(&self, body: &serde_json::Value) -> reqwest::Response {
        post_as(self.url("/v1/chat/completions"), KEY, body).await
    }

    /// A streamed chat completion of `hello`; it must be answered 200.
    pub(crate) async fn stream_hello(&self) -> reqwest::Response {
        let mut body = hello("hello");
        body["stream"] = true.into();
        let response = self.chat(&body).await;
        assert_eq!(response.status(), 200);
        response
    }

    /// Stops it (see [`Running::stop`]) after checking that its store holds no session at all
    /// (`what` says what was not stored).
    pub(crate) async fn stop_storing_nothing(self, what: &str) {
        assert!(self.store.list().await.unwrap().is_empty(), "{what}");
        self.stop().await;
    }

    /// `POST /v1/messages` with `body` and the gateway key (as `x-api-key`).
    pub(crate) async fn messages(&self, body: &serde_json::Value) -> reqwest::Response {
        reqwest::Client::new()
            .post(self.url("/v1/messages"))
            .header("x-api-key", KEY)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Sends the shutdown signal and waits for the server to stop; returns the folder of its
    /// store, which goes when dropped (a test that reads the store afterwards keeps it).
    pub(crate) async fn stop(mut self) -> Option<tempfile::TempDir> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap().unwrap();
        self._dir
    }
}

/// The gateway with DeepSeek at `deepseek_url` (only `DEEPSEEK_API_KEY` is set), gateway keys
/// checked by [`TestKeys`], and `config` adjusted by `adjust`.
pub(crate) async fn start(
    deepseek_url: &str,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> Running {
    start_with(deepseek_url, adjust, None).await
}

/// DeepSeek V4's simulator and a gateway in front of it ([`start`]), its config adjusted by
/// `adjust`.
pub(crate) async fn deepseek_gateway(
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> (hermes_sim::Sim, Running) {
    let sim = hermes_sim::Sim::start("deepseek-v4").await.unwrap();
    let gateway = start(&sim.base_url(), adjust).await;
    (sim, gateway)
}

/// [`start`], over TLS with `tls` when given.
pub(crate) async fn start_with(
    deepseek_url: &str,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Running {
    start_over(deepseek_settings(deepseek_url), adjust, tls).await
}

/// Settings with DeepSeek at `deepseek_url` (only `DEEPSEEK_API_KEY` is set).
pub(crate) fn deepseek_settings(deepseek_url: &str) -> Settings {
    let mut defaults = Defaults::default();
    defaults.providers.insert(
        "deepseek".into(),
        ProviderDefaults::new(Some(deepseek_url.to_owned()), None, None, false),
    );
    Settings::new(
        defaults,
        Arc::new(|var: &str| (var == "DEEPSEEK_API_KEY").then(|| "sk-test".to_owned())),
    )
}

/// A gateway (a replica) over `store` with DeepSeek at `deepseek_url`, its keys the store's
/// ([`hermes_serve::StoreKeys`]), and `config` adjusted by `adjust`.
pub(crate) async fn replica(
    store: Store,
    deepseek_url: &str,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> Running {
    replica_over(store, deepseek_settings(deepseek_url), adjust).await
}

/// A gateway (a replica) over `store` with `settings`, its keys the store's
/// ([`hermes_serve::StoreKeys`]), and `config` adjusted by `adjust`.
pub(crate) async fn replica_over(
    store: Store,
    settings: Settings,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let keys = hermes_serve::StoreKeys::new(store.clone());
    let config = adjust(ServeConfig::new(Auth::Keys(Arc::new(keys))));
    let engine = Engine::builtin().with_store(store.clone(), settings);
    serve(store, Gateway::new(engine, config).unwrap(), None, None).await
}

/// A replica over the store at `location` with `settings`, on a tokio runtime of its own (on a
/// thread of its own) that [`Doomed::kill`] shuts down: nothing of it runs after, as after a
/// killed process.
pub(crate) struct Doomed {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    kill: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Doomed {
    /// Starts the replica, `config` adjusted by `adjust`.
    pub(crate) fn start(
        location: hermes_store::Location,
        settings: Settings,
        adjust: impl FnOnce(ServeConfig) -> ServeConfig + Send + 'static,
    ) -> Doomed {
        let (started, addr) = std::sync::mpsc::channel();
        let (kill, killed) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let running = runtime.block_on(async move {
                let store = Store::open_at(&location).await.unwrap();
                replica_over(store, settings, adjust).await
            });
            started.send(running.addr).unwrap();
            let _ = killed.recv();
            runtime.shutdown_background();
            // Not stopped, not dropped on a runtime: gone, as a killed process's.
            std::mem::forget(running);
        });
        Doomed {
            addr: addr.recv().unwrap(),
            kill,
            thread,
        }
    }

    /// Kills it: no request it was answering goes on, nothing it held is released.
    pub(crate) fn kill(self) {
        self.kill.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

/// `POST url` with `body` as JSON and `key` as the bearer.
pub(crate) async fn post_as(url: String, key: &str, body: &serde_json::Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// `POST /v1/messages` on `gateway` with `body`, `key` as `x-api-key`, the `anthropic-version`
/// every Anthropic client sends and `headers`.
pub(crate) async fn messages_as(
    gateway: &Running,
    key: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(gateway.url("/v1/messages"))
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(body).send().await.unwrap()
}

/// The `data:` payloads of an SSE body as JSON, `[DONE]` left out.
pub(crate) fn sse_data(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The items of the array `items` (content blocks, output items) whose `type` is `kind`.
pub(crate) fn of_type<'a>(items: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    items
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == kind)
        .collect()
}

/// The first `tool_use` block of an Anthropic message's `content` (`None` when it holds none).
pub(crate) fn tool_use_of(content: &serde_json::Value) -> Option<&serde_json::Value> {
    of_type(content, "tool_use").first().copied()
}

/// Whether `value` is a seal the gateway made (`hermes1.…`: a signature or an item's
/// `encrypted_content` it minted).
pub(crate) fn is_sealed(value: &serde_json::Value) -> bool {
    value.as_str().is_some_and(|s| s.starts_with("hermes1."))
}

/// The model ids of a `GET /v1/models` answer, in its order.
pub(crate) fn model_ids(models: &serde_json::Value) -> Vec<&str> {
    models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

/// The JSON body of `response`, which must be a 200 (`context` opens the failure's message,
/// the body follows).
pub(crate) async fn ok_json(response: reqwest::Response, context: &str) -> serde_json::Value {
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{context}{body}");
    body
}

/// Sends `request`: the JSON body of its answer.
pub(crate) async fn json_of(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// The error `body` of a refusal (OpenAI's or Anthropic's shape) says `text` in its message.
pub(crate) fn error_says(body: &serde_json::Value, text: &str) {
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(text), "{text:?} not said: {body}");
}

/// A policy that lets a tenant send every `anthropic-beta` and server tool (the default allows
/// none): for the tests of what the Messages door passes through to Claude, and of real Claude
/// clients, which send betas on every request.
pub(crate) fn open_policy() -> hermes_serve::Policy {
    hermes_serve::Policy::new(
        hermes_serve::TenantPolicy::new()
            .allow_betas(Some(vec!["*".to_owned()]))
            .allow_server_tools(Some(vec!["*".to_owned()])),
    )
}

/// A chat-completions body of one user message.
pub(crate) fn hello(text: &str) -> serde_json::Value {
    serde_json::json!({
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": text}],
    })
}

/// AWS credentials for the simulator: the one pair it accepts.
struct SimAws;

#[async_trait::async_trait]
impl hermes_engine::AwsSecrets for SimAws {
    async fn auth(&self, region: &str) -> Result<hermes_engine::providers::aws::AwsAuth, String> {
        Ok(hermes_engine::providers::aws::AwsAuth::SigV4 {
            credentials: hermes_engine::providers::aws::AwsCredentials {
                access_key_id: hermes_sim::SIM_AWS_ACCESS_KEY_ID.to_owned(),
                secret_access_key: hermes_sim::SIM_AWS_SECRET_ACCESS_KEY.to_owned(),
                session_token: None,
            },
            region: region.to_owned(),
        })
    }
}

/// The gateway with `provider` at `base_url` (a simulator: every key variable answers
/// `sk-test`, AWS signs with the simulator's pair).
pub(crate) async fn start_for(provider: &str, base_url: &str) -> Running {
    start_for_with(provider, base_url, |c| c).await
}

/// The simulator `profile` and a gateway in front of it as `provider`, its config adjusted by
/// `adjust` ([`start_for_with`]).
pub(crate) async fn sim_gateway(
    profile: &str,
    provider: &str,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> (hermes_sim::Sim, Running) {
    let sim = hermes_sim::Sim::start(profile).await.unwrap();
    let gateway = start_for_with(provider, &sim.base_url(), adjust).await;
    (sim, gateway)
}

/// [`start_for`] with `config` adjusted by `adjust`.
pub(crate) async fn start_for_with(
    provider: &str,
    base_url: &str,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
) -> Running {
    start_over(sim_settings(provider, base_url), adjust, None).await
}

/// Settings with `provider` at `base_url` (a simulator: every key variable answers `sk-test`,
/// AWS signs with the simulator's pair).
pub(crate) fn sim_settings(provider: &str, base_url: &str) -> Settings {
    let mut defaults = Defaults::default();
    defaults.providers.insert(
        provider.into(),
        ProviderDefaults::new(Some(base_url.to_owned()), None, None, false),
    );
    Settings::new(defaults, Arc::new(|_: &str| Some("sk-test".to_owned()))).aws(Arc::new(SimAws))
}

/// The gateway over a fresh SQLite store with `settings`, gateway keys checked by
/// [`TestKeys`], and `config` adjusted by `adjust`; over TLS with `tls` when given.
pub(crate) async fn start_over(
    settings: Settings,
    adjust: impl FnOnce(ServeConfig) -> ServeConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("state.db")).await.unwrap();
    let engine = Engine::builtin().with_store(store.clone(), settings);
    let keys = TestKeys(HashMap::from([
        (KEY.to_owned(), TENANT.to_owned()),
        (KEY_B.to_owned(), TENANT_B.to_owned()),
    ]));
    let config = adjust(ServeConfig::new(Auth::Keys(Arc::new(keys))));
    let gateway = Gateway::new(engine, config).unwrap();
    serve(store, gateway, Some(dir), tls).await
}

/// `gateway` on 127.0.0.1:0.
pub(crate) async fn serve(
    store: Store,
    gateway: Gateway,
    dir: Option<tempfile::TempDir>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        match tls {
            Some(tls) => gateway.serve_tls(listener, tls, shutdown).await,
            None => gateway.serve(listener, shutdown).await,
        }
    });
    Running {
        addr,
        store,
        _dir: dir,
        stop: Some(stop),
        task,
    }
}
