//! Images through the wire to its strict simulator: the Anthropic and Responses wires send a
//! user turn and a tool result with chat-style images (a PNG `data:` URL, an https URL) over
//! loopback HTTP, and the simulator, which refuses the chat shape and checks each image, takes
//! the body and answers.

use hermes_core::{Origin, RequestParts, ResolveOptions, RouteTarget, Verdicts};
use hermes_providers::builtin_table;

use crate::images;
use crate::support;

/// What each simulator must take: (simulator profile, model, where the user turn's and the tool
/// result's PNG land in the body, the block type both must have there).
const ROWS: [(&str, &str, [&str; 2], &str); 2] = [
    (
        "anthropic",
        "claude-opus-4-6",
        [
            "/messages/0/content/1/type",
            "/messages/2/content/0/content/1/type",
        ],
        "image",
    ),
    (
        "openai-responses",
        "gpt-4.1",
        ["/input/0/content/1/type", "/input/2/output/1/type"],
        "input_image",
    ),
];

/// Encodes [`images::history`] on the wire of `profile` for its [`ROWS`] model, sends it to the
/// simulator, and checks where the images landed in the body the simulator took.
async fn takes_images(profile: &str) {
    let (_, model, at, kind) = ROWS.iter().find(|row| row.0 == profile).unwrap();
    let s = support::sim_wire(profile).await;
    let h = images::history(true);
    let table = builtin_table();
    let decision = table.resolve(
        &RouteTarget::new(s.provider, Some(&s.base), model),
        ResolveOptions::default(),
    );
    let verdicts = Verdicts::default();
    let out = s
        .wire
        .encode(&RequestParts::new(&h, &decision, &verdicts))
        .unwrap();
    let origin = Origin {
        provider: s.provider.into(),
        host: "127.0.0.1".into(),
        model: (*model).into(),
    };
    let reply = s.wire.send(&out, origin, &|_| {}).await;
    let reply = reply.unwrap_or_else(|e| panic!("{}: the simulator refused: {e}", s.provider));
    assert!(reply.message.content.is_some());
    let received = s.sim.requests();
    let body = &received.last().unwrap().body;
    for pointer in at {
        assert_eq!(body.pointer(pointer).unwrap(), kind, "{profile}: {pointer}");
    }
}

#[tokio::test]
async fn the_messages_simulator_takes_hermes_image_blocks() {
    takes_images("anthropic").await;
}

#[tokio::test]
async fn the_responses_simulator_takes_hermes_input_images() {
    takes_images("openai-responses").await;
}
