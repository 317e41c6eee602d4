//! The simulators behind `--provider sim` (hermes-sim's, given to the engine here and nowhere
//! else) and `hermes sim serve`, the strict provider simulator as a standalone loopback server.

use std::sync::Arc;

#[cfg(feature = "bedrock")]
use hermes_engine::providers::aws::AwsCredentials;
use hermes_engine::{Engine, SimProfile, Simulators, StartedSim};

use crate::cli::SimServeArgs;
use crate::error::UsageError;

/// hermes-sim's strict provider simulators as the engine's [`Simulators`]: every profile of
/// `hermes_sim::PROFILES`, each started in-process on loopback with its default signing key and
/// AWS key pair. The one adapter between the two crates: the `hermes` command line runs with
/// it, and the engine's integration tests use it too. A started simulator is a
/// `hermes_sim::Sim` (`ChatSession::simulator::<hermes_sim::Sim>()`).
#[derive(Debug)]
pub struct HermesSimulators {
    profiles: Vec<SimProfile>,
}

impl HermesSimulators {
    /// Every built-in profile.
    pub fn new() -> Self {
        HermesSimulators {
            profiles: hermes_sim::PROFILES
                .iter()
                .map(|p| SimProfile::new(p.name, p.provider, p.model, p.about))
                .collect(),
        }
    }
}

impl Default for HermesSimulators {
    fn default() -> Self {
        HermesSimulators::new()
    }
}

#[async_trait::async_trait]
impl Simulators for HermesSimulators {
    fn profiles(&self) -> &[SimProfile] {
        &self.profiles
    }

    async fn start(&self, profile: &str) -> Result<StartedSim, String> {
        let sim = hermes_sim::Sim::start(profile)
            .await
            .map_err(|e| e.to_string())?;
        let started = StartedSim::new(sim.base_url(), sim);
        // The `bedrock` profile's key pair (a build without the feature has no such profile).
        #[cfg(feature = "bedrock")]
        let started = started.with_aws_credentials(AwsCredentials {
            access_key_id: hermes_sim::SIM_AWS_ACCESS_KEY_ID.to_owned(),
            secret_access_key: hermes_sim::SIM_AWS_SECRET_ACCESS_KEY.to_owned(),
            session_token: None,
        });
        Ok(started)
    }
}

/// `engine`, with hermes-sim's simulators behind `--provider sim` unless it has its own.
pub(crate) fn simulated(engine: Engine) -> Engine {
    if engine.simulators().is_some() {
        return engine;
    }
    engine.with_simulators(Arc::new(HermesSimulators::new()))
}

/// Runs `hermes sim serve` until killed; the first stdout line is the base URL.
pub(crate) fn serve(args: &SimServeArgs) -> anyhow::Result<()> {
    let profile =
        hermes_sim::Profile::builtin(&args.profile).map_err(|e| UsageError(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // The signing key: the environment's (for simulators shared between processes), else
        // the simulator's default.
        let key = std::env::var(hermes_sim::KEY_ENV)
            .ok()
            .filter(|k| !k.is_empty())
            .map_or_else(|| hermes_sim::DEFAULT_KEY.to_vec(), String::into_bytes);
        let sim = hermes_sim::Sim::builder(profile)
            .key(key)
            .port(args.port)
            .chunk_delay(std::time::Duration::from_millis(args.chunk_delay_ms))
            .reply_delay(std::time::Duration::from_millis(args.delay_ms))
            .start()
            .await?;
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", sim.base_url())?;
            out.flush()?;
        }
        if args.verbose {
            // The server runs on its own task as long as `sim` lives: report what arrives.
            let mut seen = 0;
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let requests = sim.requests();
                for request in requests.iter().skip(seen) {
                    eprintln!("{}", request_line(request));
                }
                seen = requests.len();
            }
        }
        sim.serve().await?;
        anyhow::Ok(())
    })
}

/// The reasoning carriers a request body holds, by kind, in a fixed order: `reasoning_content`
/// and `reasoning` (readable text, non-empty), `reasoning_details` items, signed `thinking`
/// blocks, `redacted_thinking` blocks, Gemini's `thoughtSignature`s and Responses'
/// `encrypted_content` items.
fn carriers_received(body: &serde_json::Value) -> Vec<(&'static str, usize)> {
    use serde_json::Value;
    const KINDS: [&str; 7] = [
        "reasoning_content",
        "reasoning",
        "reasoning_details",
        "thinking",
        "redacted_thinking",
        "thoughtSignature",
        "encrypted_content",
    ];
    fn walk(value: &Value, counts: &mut [usize; 7]) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| walk(v, counts)),
            Value::Object(map) => {
                match map.get("type").and_then(Value::as_str) {
                    Some("thinking") if map.get("signature").is_some_and(Value::is_string) => {
                        counts[3] += 1;
                    }
                    Some("redacted_thinking") => counts[4] += 1,
                    _ => {}
                }
                for (key, v) in map {
                    let text = v.as_str().is_some_and(|t| !t.is_empty());
                    match key.as_str() {
                        "reasoning_content" if text => counts[0] += 1,
                        "reasoning" if text => counts[1] += 1,
                        "reasoning_details" => counts[2] += v.as_array().map_or(0, Vec::len),
                        "thoughtSignature" | "thought_signature" if text => counts[5] += 1,
                        "encrypted_content" if text => counts[6] += 1,
                        _ => walk(v, counts),
                    }
                }
            }
            _ => {}
        }
    }
    let mut counts = [0; 7];
    walk(body, &mut counts);
    KINDS
        .into_iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `hermes sim serve --verbose`'s line for one request: path, status and carriers received.
fn request_line(request: &hermes_sim::RecordedRequest) -> String {
    let carriers = carriers_received(&request.body);
    let carriers = if carriers.is_empty() {
        "none".to_owned()
    } else {
        carriers
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "sim: {} {} carriers received: {carriers}",
        request.path, request.status
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn carriers_are_counted_by_kind_on_every_wire() {
        let body = serde_json::json!({"messages": [
            {"role": "assistant", "content": "a", "reasoning_content": "why"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"}]},
            {"role": "assistant", "reasoning_details": [{"type": "reasoning.text"}, {}]},
            {"role": "user", "content": "q", "reasoning_content": ""}],
            "contents": [{"parts": [{"text": "x", "thoughtSignature": "s"}]}],
            "input": [{"type": "reasoning", "encrypted_content": "e"}]});
        assert_eq!(
            super::carriers_received(&body),
            [
                ("reasoning_content", 1),
                ("reasoning_details", 2),
                ("thinking", 1),
                ("redacted_thinking", 1),
                ("thoughtSignature", 1),
                ("encrypted_content", 1),
            ]
        );
        assert!(super::carriers_received(&serde_json::json!({"messages": []})).is_empty());
    }

    use super::*;

    #[test]
    fn the_engines_unknown_profile_text_is_the_simulators_own() {
        let engine = Engine::builtin().with_simulators(Arc::new(HermesSimulators::new()));
        let choice = hermes_engine::Choice::new(Some("sim"), None, Some("sim://nope"));
        let defaults = hermes_engine::Defaults::default();
        let err = engine
            .settle(
                hermes_engine::Purpose::Preview,
                &choice,
                None,
                &defaults,
                &|_| None,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            hermes_sim::SimError::UnknownProfile("nope".to_owned()).to_string()
        );
        assert!(err.is_usage());
    }

    #[test]
    fn every_simulator_profile_is_offered_in_the_simulators_order() {
        let sims = HermesSimulators::new();
        let names: Vec<&str> = sims.profiles().iter().map(|p| p.name.as_str()).collect();
        let expected: Vec<&str> = hermes_sim::PROFILES.iter().map(|p| p.name).collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn an_engine_keeps_simulators_of_its_own() {
        let theirs = Engine::builtin().with_simulators(Arc::new(HermesSimulators {
            profiles: vec![SimProfile::new("acme", "acme", "acme-1", "Acme's contract")],
        }));
        let profiles = simulated(theirs).sim_profiles().to_vec();
        assert_eq!(profiles.len(), 1);
        assert_eq!(profiles[0].name, "acme");
        assert_eq!(
            simulated(Engine::builtin()).sim_profiles().len(),
            hermes_sim::PROFILES.len()
        );
    }
}
