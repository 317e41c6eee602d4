//! Live conformance: each route with a simulator profile drives a 3-step tool loop and a
//! follow-up user turn against the strict simulator, streaming and not, over real HTTP.

use std::collections::BTreeSet;

use hermes_conformance::Check;
use hermes_core::{
    Carrier, ChatRequest, Message, Origin, ResolveOptions, Role, RouteTable, RouteTarget,
    ThinkingRequest, Verdicts,
};
use hermes_providers::{ChatTransport, Endpoint};
use hermes_sim::Sim;
use serde_json::Value;

/// A route checked live: which profile stands in for its provider, the target used, and the
/// carriers every assistant message must arrive with.
pub(crate) struct LivePair {
    /// Route id.
    pub(crate) route: &'static str,
    /// Simulator profile.
    pub(crate) profile: &'static str,
    /// Provider name of the target.
    pub(crate) provider: &'static str,
    /// Model of the target.
    pub(crate) model: &'static str,
    /// Carriers each assistant message must carry, exactly.
    pub(crate) carriers: &'static [Carrier],
}

/// The route → profile mapping.
pub(crate) const PAIRS: &[LivePair] = &[
    LivePair {
        route: "deepseek",
        profile: "deepseek-v4",
        provider: "deepseek",
        model: "deepseek-v4-pro",
        carriers: &[Carrier::ReasoningContent],
    },
    LivePair {
        route: "deepseek",
        profile: "deepseek-v3",
        provider: "deepseek",
        model: "deepseek-v3.2",
        carriers: &[Carrier::ReasoningContent],
    },
    LivePair {
        route: "strict",
        profile: "mistral",
        provider: "mistral",
        model: "magistral-medium-latest",
        carriers: &[],
    },
    LivePair {
        route: "aggregator",
        profile: "openrouter",
        provider: "openrouter",
        model: "anthropic/claude-sonnet-5",
        carriers: &[
            Carrier::ReasoningContent,
            Carrier::Reasoning,
            Carrier::ReasoningDetails,
        ],
    },
    LivePair {
        route: "default",
        profile: "openai",
        provider: "openai",
        model: "gpt-5",
        carriers: &[],
    },
    LivePair {
        route: "local-endpoint",
        profile: "local",
        provider: "llama-server",
        model: "qwen3-32b",
        carriers: &[Carrier::ReasoningContent],
    },
    LivePair {
        route: "local-style",
        profile: "local",
        provider: "custom",
        model: "qwen3-32b",
        carriers: &[Carrier::ReasoningContent],
    },
];

/// What one run produced.
struct Run {
    history: Vec<Message>,
    requests: usize,
}

fn tool_result(call_id: &str) -> Message {
    let mut msg = Message::text(Role::Tool, "12:00");
    msg.tool_call_id = Some(call_id.to_owned());
    msg
}

/// Drives `[tools=3]` then a follow-up user turn; returns the stored history.
async fn drive(
    sim: &Sim,
    table: &RouteTable,
    pair: &LivePair,
    stream: bool,
) -> Result<Run, String> {
    let transport = ChatTransport::new().map_err(|e| e.to_string())?;
    let endpoint = Endpoint {
        base_url: sim.base_url(),
        api_key: Some("sk-sim".to_owned()),
    };
    let target = RouteTarget::new(pair.provider, Some(&endpoint.base_url), pair.model);
    let decision = table
        .resolve_with(pair.route, &target, ResolveOptions::default())
        .ok_or_else(|| format!("no route `{}`", pair.route))?;
    let origin = Origin {
        provider: target.provider.clone(),
        host: target.host_key(),
        model: target.model.clone(),
    };
    let mut history = vec![Message::text(
        Role::User,
        "[tools=3] what time is it, three times?",
    )];
    let mut requests = 0;
    for turn in 0..2 {
        if turn == 1 {
            history.push(Message::text(Role::User, "thanks, and in one sentence?"));
        }
        loop {
            if requests > 10 {
                return Err("the tool loop did not end after 10 requests".to_owned());
            }
            let mut request = ChatRequest::build(
                &history,
                &decision,
                &Verdicts::default(),
                ThinkingRequest::NoPreference,
            );
            request.stream = stream;
            requests += 1;
            let reply = transport
                .send(&endpoint, &request, origin.clone())
                .await
                .map_err(|e| format!("request {requests} failed: {e}"))?;
            let calls: Vec<String> = reply
                .message
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.clone())
                .collect();
            history.push(reply.message);
            if calls.is_empty() {
                break;
            }
            history.extend(calls.iter().map(|id| tool_result(id)));
        }
    }
    Ok(Run { history, requests })
}

fn carrier_keys(msg: &Value) -> BTreeSet<&'static str> {
    Carrier::ALL
        .into_iter()
        .map(Carrier::field)
        .filter(|f| msg.get(*f).is_some())
        .collect()
}

/// Every request accepted, and every assistant message carried exactly the declared carriers.
fn check_recorded(sim: &Sim, pair: &LivePair, requests: usize) -> Result<(), String> {
    let recorded = sim.requests();
    if recorded.len() != requests {
        return Err(format!(
            "the simulator saw {} requests, {requests} were sent",
            recorded.len()
        ));
    }
    let want: BTreeSet<&'static str> = pair.carriers.iter().map(|c| c.field()).collect();
    for (i, r) in recorded.iter().enumerate() {
        if r.status != 200 {
            return Err(format!(
                "request {} refused with {}: {}",
                i + 1,
                r.status,
                r.response
            ));
        }
        let messages = r
            .body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (j, m) in messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m["role"] == "assistant")
        {
            let got = carrier_keys(m);
            if got != want {
                return Err(format!(
                    "request {} message {j} carried {got:?}, the route declares {want:?}",
                    i + 1
                ));
            }
        }
    }
    Ok(())
}

async fn run_pair(table: &RouteTable, pair: &LivePair) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut histories = Vec::new();
    for stream in [false, true] {
        let mode = if stream { "streamed" } else { "non-streamed" };
        let name = format!(
            "live {}: 3-step tool loop + follow-up, {mode}",
            pair.profile
        );
        let result = match Sim::start(pair.profile).await {
            Err(e) => Err(format!("simulator: {e}")),
            Ok(sim) => match drive(&sim, table, pair, stream).await {
                Ok(run) if run.requests != 5 => Err(format!(
                    "expected 5 requests (3 tool steps, the answer, the follow-up), sent {}",
                    run.requests
                )),
                Ok(run) => {
                    let checked = check_recorded(&sim, pair, run.requests);
                    histories.push(run.history);
                    checked
                }
                Err(e) => Err(e),
            },
        };
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
