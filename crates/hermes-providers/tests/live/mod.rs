//! Live conformance: each route with a simulator profile drives a 3-step tool loop and a
//! follow-up user turn against the strict simulator, streaming and not, over real HTTP.

use hermes_conformance::Check;
use hermes_conformance::live::{NativeCheck, check_received, drive_tool_loop};
use hermes_core::{CarrierSet, ResolveOptions, RouteTable, RouteTarget};
use hermes_providers::ChatTransport;
use hermes_sim::Sim;
use hermes_wire_chat::{Endpoint, HttpChat};

/// A route checked live: which simulator profile stands in for its provider (its provider id
/// and model come from [`hermes_sim::PROFILES`]) and what every assistant message must arrive with.
pub(crate) struct LivePair {
    pub(crate) route: &'static str,
    pub(crate) profile: &'static str,
    /// The provider the route is resolved for, when not the profile's stand-in.
    pub(crate) provider: Option<&'static str>,
    /// The base URL the route is resolved for, when not the simulator's own (Copilot's fields
    /// are rendered only for its host).
    pub(crate) target_base: Option<&'static str>,
    pub(crate) carriers: CarrierSet,
    pub(crate) native: NativeCheck,
}

const RC: CarrierSet = CarrierSet::RC;

const fn pair(route: &'static str, profile: &'static str, carriers: CarrierSet) -> LivePair {
    LivePair {
        route,
        profile,
        provider: None,
        target_base: None,
        carriers,
        native: NativeCheck::None,
    }
}

/// The route → profile mapping.
pub(crate) const PAIRS: &[LivePair] = &[
    pair("strict", "mistral", CarrierSet::NONE),
    pair("strict", "groq", CarrierSet::NONE),
    pair("strict", "cerebras", CarrierSet::NONE),
    pair("aggregator", "openrouter", CarrierSet::ALL),
    pair("local-style", "local", RC),
    pair("deepseek", "deepseek-v4", RC),
    pair("deepseek", "deepseek-v3", RC),
    pair("kimi-coding", "kimi", RC),
    pair("xiaomi", "mimo", RC),
    LivePair {
        native: NativeCheck::Gemini,
        ..pair("gemini-openai", "gemini-openai", CarrierSet::NONE)
    },
    LivePair {
        target_base: Some("https://api.githubcopilot.com"),
        native: NativeCheck::Copilot,
        ..pair("copilot", "copilot", CarrierSet::NONE)
    },
    LivePair {
        provider: Some("llama-server"),
        ..pair("local-endpoint", "local", RC)
    },
    pair("default", "openai", CarrierSet::NONE),
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
            let info = hermes_sim::PROFILES
                .iter()
                .find(|p| p.name == pair.profile)
                .ok_or_else(|| format!("no simulator profile `{}`", pair.profile))?;
            let sim = Sim::start(info.name)
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
            let provider = pair.provider.unwrap_or(info.provider);
            let target = RouteTarget::new(provider, Some(&base), info.model);
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
