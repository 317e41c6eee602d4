//! Images through the wire to its strict simulator: the Anthropic and Responses wires send a
//! user turn and a tool result with chat-style images (a PNG `data:` URL, an https URL) over
//! loopback HTTP, and the simulator, which refuses the chat shape and checks each image, takes
//! the body and answers.

use crate::images;

use hermes_core::{Origin, RequestParts, ResolveOptions, RouteTarget, Verdicts, Wire};
use hermes_providers::anthropic::{AnthropicWire, Flavor, Target};
use hermes_providers::responses::ResponsesWire;
use hermes_providers::{Auth, ChatTransport, builtin_table};
use hermes_sim::Sim;
use serde_json::Value;

/// Encodes [`images::history`] for `model` at `provider` on `wire`, sends it, and returns the
/// body the simulator received.
async fn round_trip(sim: &Sim, wire: &dyn Wire, provider: &str, base: &str, model: &str) -> Value {
    let h = images::history(true);
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new(provider, Some(base), model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let out = wire
        .encode(&RequestParts::new(&h, &decision, &verdicts))
        .unwrap();
    let origin = Origin {
        provider: provider.into(),
        host: "127.0.0.1".into(),
        model: model.into(),
    };
    let reply = wire.send(&out, origin, &|_| {}).await;
    let reply = reply.unwrap_or_else(|e| panic!("{provider}: the simulator refused: {e}"));
    assert!(reply.message.content.is_some());
    let received = sim.requests();
    let last = received.last().unwrap();
    last.body.clone()
}

#[tokio::test]
async fn the_messages_simulator_takes_hermes_image_blocks() {
    let sim = Sim::start("anthropic").await.unwrap();
    let wire = AnthropicWire {
        client: ChatTransport::new().unwrap(),
        target: Target {
            flavor: Flavor::Direct,
            base_url: sim.base_url(),
            max_tokens: None,
        },
        auth: None,
    };
    let body = round_trip(&sim, &wire, "anthropic", &sim.base_url(), "claude-opus-4-6").await;
    assert_eq!(body["messages"][0]["content"][1]["type"], "image");
    assert_eq!(
        body["messages"][2]["content"][0]["content"][1]["type"],
        "image"
    );
}

#[tokio::test]
async fn the_responses_simulator_takes_hermes_input_images() {
    let sim = Sim::start("openai-responses").await.unwrap();
    let base = format!("{}/v1", sim.base_url());
    let wire = ResponsesWire {
        client: ChatTransport::new().unwrap(),
        base_url: base.clone(),
        auth: Some(Auth::Bearer("sk-sim".into())),
    };
    let body = round_trip(&sim, &wire, "openai-responses", &base, "gpt-4.1").await;
    assert_eq!(body["input"][0]["content"][1]["type"], "input_image");
    assert_eq!(body["input"][2]["output"][1]["type"], "input_image");
}
