//! A steer mid tool loop (the user typed while a tool ran: user, step, result, user) through the
//! Anthropic, Bedrock Converse and Gemini wires against the strict simulators: the step is
//! captured from the simulator, the steered request is encoded by the wire and accepted.

use hermes_core::{
    Effort, Message, Origin, RawJson, RequestParts, ResolveOptions, RouteTarget, ThinkingRequest,
    Verdicts, Wire,
};
use hermes_providers::builtin_table;

use crate::support;

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

/// Every steer the simulators must accept: (simulator profile, model). On Claude,
/// claude-sonnet-4-5 keeps only the in-flight loop's thinking, claude-opus-4-5 earlier thinking
/// too; Bedrock's Converse wire carries Claude; on Gemini 3 and 2.5 the steer goes as its own
/// turn.
const STEERS: [(&str, &str); 5] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-opus-4-5"),
    ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("gemini", "gemini-3-flash-preview"),
    ("gemini", "gemini-2.5-flash"),
];

/// Runs the [`STEERS`] of `profile` through its wire against its simulator.
async fn steers_on(profile: &str) {
    let s = support::sim_wire(profile).await;
    for (_, model) in STEERS.iter().filter(|(p, _)| *p == profile) {
        steer(&*s.wire, s.provider, &s.base, model)
            .await
            .unwrap_or_else(|e| panic!("{profile} {model}: {e}"));
    }
}

#[tokio::test]
async fn a_steer_on_claude_keeps_the_loop_in_flight_and_the_simulator_accepts_it() {
    steers_on("anthropic").await;
}

#[tokio::test]
async fn a_steer_on_bedrock_claude_keeps_the_loop_in_flight_and_the_simulator_accepts_it() {
    steers_on("bedrock").await;
}

#[tokio::test]
async fn a_steer_on_gemini_goes_as_its_own_turn_and_the_simulator_accepts_it() {
    steers_on("gemini").await;
}
