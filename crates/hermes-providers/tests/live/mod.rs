//! Live conformance: each route with a simulator profile drives a 3-step tool loop and a
//! follow-up user turn against the strict simulator, streaming and not, over real HTTP.

use hermes_conformance::Check;
use hermes_conformance::live::{NativeCheck, check_received, drive_tool_loop};
use hermes_core::{CarrierSet, ResolveOptions, RouteTable, RouteTarget};
use hermes_providers::{ChatTransport, Endpoint, HttpChat};
use hermes_sim::Sim;

/// A route checked live: which profile stands in for its provider, the target used, and what
/// every assistant message must arrive with.
pub(crate) struct LivePair {
    pub(crate) route: &'static str,
    pub(crate) profile: &'static str,
    pub(crate) provider: &'static str,
    pub(crate) model: &'static str,
    /// The base URL the route is resolved for, when not the simulator's own (Copilot's fields
    /// are rendered only for its host).
    pub(crate) target_base: Option<&'static str>,
    pub(crate) carriers: CarrierSet,
    pub(crate) native: NativeCheck,
}

const RC: CarrierSet = CarrierSet::RC;

const fn pair(
    route: &'static str,
    profile: &'static str,
    provider: &'static str,
    model: &'static str,
    carriers: CarrierSet,
) -> LivePair {
    LivePair {
        route,
        profile,
        provider,
        model,
        target_base: None,
        carriers,
        native: NativeCheck::None,
    }
}

/// The route → profile mapping.
pub(crate) const PAIRS: &[LivePair] = &[
    pair(
        "strict",
        "mistral",
        "mistral",
        "magistral-medium-latest",
        CarrierSet::NONE,
    ),
    pair(
        "strict",
        "groq",
        "groq",
        "openai/gpt-oss-120b",
        CarrierSet::NONE,
    ),
    pair(
        "strict",
        "cerebras",
        "cerebras",
        "gpt-oss-120b",
        CarrierSet::NONE,
    ),
    pair(
        "aggregator",
        "openrouter",
        "openrouter",
        "anthropic/claude-sonnet-5",
        CarrierSet::ALL,
    ),
    pair("local-style", "local", "custom", "qwen3-32b", RC),
    pair("deepseek", "deepseek-v4", "deepseek", "deepseek-v4-pro", RC),
    pair("deepseek", "deepseek-v3", "deepseek", "deepseek-v3.2", RC),
    pair("kimi-coding", "kimi", "kimi-coding", "kimi-k2.6", RC),
    pair("xiaomi", "mimo", "xiaomi", "mimo-v2.5-pro", RC),
    LivePair {
        native: NativeCheck::Gemini,
        ..pair(
            "gemini-openai",
            "gemini-openai",
            "gemini-openai",
            "gemini-3-pro-preview",
            CarrierSet::NONE,
        )
    },
    LivePair {
        target_base: Some("https://api.githubcopilot.com"),
        native: NativeCheck::Copilot,
        ..pair(
            "copilot",
            "copilot",
            "copilot",
            "gemini-3-pro-preview",
            CarrierSet::NONE,
        )
    },
    pair("local-endpoint", "local", "llama-server", "qwen3-32b", RC),
    pair("default", "openai", "openai", "gpt-5", CarrierSet::NONE),
];

async fn run_pair(table: &RouteTable, pair: &LivePair) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut histories = Vec::new();
    for stream in [false, true] {
        let mode = if stream { "streamed" } else { "non-streamed" };
        let name = format!(
            "live {}: 3-step tool loop + follow-up, {mode}",
            pair.profile
        );
        let result = async {
            let sim = Sim::start(pair.profile)
                .await
                .map_err(|e| format!("simulator: {e}"))?;
            let transport = HttpChat {
                client: ChatTransport::new().map_err(|e| e.to_string())?,
                endpoint: Endpoint {
                    base_url: sim.base_url(),
                    api_key: Some("sk-sim".to_owned()),
                },
            };
            let base = pair
                .target_base
                .map_or_else(|| sim.base_url(), str::to_owned);
            let target = RouteTarget::new(pair.provider, Some(&base), pair.model);
            let decision = table
                .resolve_with(pair.route, &target, ResolveOptions::default())
                .ok_or_else(|| format!("no route `{}`", pair.route))?;
            let run = drive_tool_loop(&transport, &decision, stream).await?;
            let received: Vec<_> = sim
                .requests()
                .into_iter()
                .map(|r| (r.status, r.body))
                .collect();
            check_received(&received, run.requests, pair.carriers, pair.native)?;
            histories.push(run.history);
            Ok::<(), String>(())
        }
        .await;
        checks.push(Check {
            route: pair.route.to_owned(),
            name,
            failure: result.err(),
        });
    }
    if let [plain, streamed] = histories.as_slice() {
        let same = serde_json::to_value(plain).ok() == serde_json::to_value(streamed).ok();
        checks.push(Check {
            route: pair.route.to_owned(),
            name: format!(
                "live {}: streamed and non-streamed turns store identical carriers",
                pair.profile
            ),
            failure: (!same)
                .then(|| "the streamed history differs from the non-streamed one".to_owned()),
        });
    }
    checks
}

/// Runs every live pair whose route is in `only` (all when empty).
pub(crate) fn run(table: &RouteTable, only: &[&str]) -> Vec<Check> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return vec![Check {
                route: "live".to_owned(),
                name: "tokio runtime".to_owned(),
                failure: Some(e.to_string()),
            }];
        }
    };
    runtime.block_on(async {
        let mut checks = Vec::new();
        for pair in PAIRS
            .iter()
            .filter(|p| only.is_empty() || only.contains(&p.route))
        {
            checks.extend(run_pair(table, pair).await);
        }
        checks
    })
}
