//! A steer mid tool loop (the user typed while a tool ran: user, step, result, user) through the
//! Anthropic, Bedrock Converse and Gemini wires against the strict simulators: the step is
//! captured from the simulator, the steered request is encoded by the wire and accepted.

use std::time::SystemTime;

use hermes_core::{
    Effort, Message, Origin, RawJson, RequestParts, ResolveOptions, RouteTarget, ThinkingRequest,
    Verdicts, Wire,
};
use hermes_providers::anthropic::{AnthropicWire, Flavor, Target};
use hermes_providers::aws::{AwsAuth, AwsCredentials};
use hermes_providers::bedrock::{self, BedrockWire};
use hermes_providers::gemini::{self, GeminiWire};
use hermes_providers::{Auth, ChatTransport, builtin_table};
use hermes_sim::{SIM_AWS_ACCESS_KEY_ID, SIM_AWS_SECRET_ACCESS_KEY, Sim};

/// Sends `history` to `model` of `provider` at `base` on `wire` with thinking at high effort;
/// the reply's message.
async fn turn(
    wire: &dyn Wire,
    provider: &str,
    base: &str,
    model: &str,
    history: &[Message],
) -> Result<Message, String> {
    let target = RouteTarget::new(provider, Some(base), model);
    let decision = builtin_table().resolve(&target, ResolveOptions::default());
    let verdicts = Verdicts::default();
    let tools = RawJson::from_serialize(&serde_json::json!([{"type": "function", "function": {
        "name": "now", "description": "The current time.",
        "parameters": {"type": "object", "properties": {}}}}]))
    .unwrap();
    let parts = RequestParts::new(history, &decision, &verdicts)
        .thinking(ThinkingRequest::Effort(Effort::High))
        .tools(Some(&tools));
    let out = wire.encode(&parts).map_err(|e| e.to_string())?;
    let origin = Origin {
        provider: provider.into(),
        host: target.host_key(),
        model: model.into(),
    };
    wire.send(&out, origin, &|_| {})
        .await
        .map(|r| r.message)
        .map_err(|e| e.to_string())
}

/// Runs one step of a `[tools=2]` loop, then the steered request: user, step, result, user.
async fn steer(wire: &dyn Wire, provider: &str, base: &str, model: &str) -> Result<(), String> {
    let first = hermes_core::parse_history(r#"[{"role":"user","content":"time? [tools=2]"}]"#)
        .unwrap()
        .messages;
    let step = turn(wire, provider, base, model, &first).await.unwrap();
    let call = step.tool_calls.as_ref().expect("the step calls a tool")[0].clone();
    let mut result = Message::text(hermes_core::Role::Tool, "12:00");
    result.tool_call_id = call.id.clone();
    result.name = Some(call.function.name.clone());
    let mut history = first;
    history.push(step);
    history.push(result);
    history.push(Message::text(hermes_core::Role::User, "and in Tokyo?"));
    turn(wire, provider, base, model, &history)
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_steer_on_claude_keeps_the_loop_in_flight_and_the_simulator_accepts_it() {
    let sim = Sim::start("anthropic").await.unwrap();
    let base = sim.base_url();
    let wire = AnthropicWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            flavor: Flavor::Direct,
            base_url: base.clone(),
            max_tokens: None,
        },
        auth: Some(Auth::Header("x-api-key", "sk-ant-test".into())),
    };
    // claude-sonnet-4-5 keeps only the in-flight loop's thinking; claude-opus-4-5 earlier
    // thinking too.
    for model in ["claude-sonnet-4-5", "claude-opus-4-5"] {
        steer(&wire, "anthropic", &base, model)
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
    }
}

#[tokio::test]
async fn a_steer_on_bedrock_claude_keeps_the_loop_in_flight_and_the_simulator_accepts_it() {
    let sim = Sim::start("bedrock").await.unwrap();
    let base = sim.base_url();
    let wire = BedrockWire {
        client: ChatTransport::new().unwrap(),
        target: bedrock::Target {
            base_url: base.clone(),
            max_tokens: None,
        },
        auth: Some(AwsAuth::SigV4 {
            credentials: AwsCredentials {
                access_key_id: SIM_AWS_ACCESS_KEY_ID.into(),
                secret_access_key: SIM_AWS_SECRET_ACCESS_KEY.into(),
                session_token: None,
            },
            region: "us-east-1".into(),
        }),
        clock: SystemTime::now,
    };
    steer(
        &wire,
        "bedrock",
        &base,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_steer_on_gemini_goes_as_its_own_turn_and_the_simulator_accepts_it() {
    let sim = Sim::start("gemini").await.unwrap();
    let base = format!("{}/v1beta", sim.base_url());
    let wire = GeminiWire {
        client: ChatTransport::new().unwrap(),
        target: gemini::Target {
            flavor: gemini::Flavor::AiStudio,
            base_url: base.clone(),
            max_tokens: None,
        },
        auth: Some(Auth::Header("x-goog-api-key", "AIza-test".into())),
    };
    for model in ["gemini-3-flash-preview", "gemini-2.5-flash"] {
        steer(&wire, "gemini", &base, model)
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
    }
}
