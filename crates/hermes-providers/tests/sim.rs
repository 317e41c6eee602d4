//! Capture → replay against the strict simulator: signed items travel byte for byte, streamed
//! and not, and the simulator catches a one-byte change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_core::{
    DetailItem, Message, Origin, RawJson, ResolveOptions, Role, RouteTarget, ThinkingRequest,
    Verdicts,
};
use hermes_providers::chat::ChatRequest;
use hermes_providers::{ChatTransport, Endpoint, TransportError, builtin_table};
use hermes_sim::Sim;

const MODEL: &str = "anthropic/claude-sonnet-5";

async fn turn(sim: &Sim, history: &[Message], stream: bool) -> Result<Message, TransportError> {
    let table = builtin_table();
    let target = RouteTarget::new("openrouter", Some(&sim.base_url()), MODEL);
    let decision = table
        .resolve_with("aggregator", &target, ResolveOptions::default())
        .unwrap();
    let mut request = ChatRequest::build(
        history,
        &decision,
        &Verdicts::default(),
        ThinkingRequest::NoPreference,
    );
    request.stream = stream;
    let endpoint = Endpoint {
        base_url: sim.base_url(),
        api_key: None,
    };
    let origin = Origin {
        provider: "openrouter".into(),
        host: "127.0.0.1".into(),
        model: MODEL.into(),
    };
    ChatTransport::new()
        .unwrap()
        .send(&endpoint, &request, origin)
        .await
        .map(|r| r.message)
}

fn signed_items(msg: &Message) -> Vec<String> {
    msg.reasoning_details
        .iter()
        .flatten()
        .filter_map(|i| match i {
            DetailItem::Provider { raw, opaque: true } => Some(raw.get().to_owned()),
            _ => None,
        })
        .collect()
}

async fn check_round_trip(stream: bool) {
    let sim = Sim::start("openrouter").await.unwrap();
    let mut history = vec![Message::text(Role::User, "hello")];
    let reply = turn(&sim, &history, stream).await.unwrap();
    let items = signed_items(&reply);
    assert_eq!(
        items.len(),
        2,
        "the simulator mints a signed text item and an encrypted item"
    );
    history.push(reply);
    history.push(Message::text(Role::User, "and then?"));
    turn(&sim, &history, stream).await.unwrap();
    let replay = sim.requests().pop().unwrap();
    assert_eq!(replay.status, 200, "{}", replay.response);
    let raw = String::from_utf8(replay.raw).unwrap();
    for item in &items {
        assert!(
            raw.contains(item.as_str()),
            "{item} was not replayed byte for byte"
        );
    }

    // One byte changed in the stored signature: the simulator refuses the replay.
    let mut tampered = history.clone();
    let details = tampered[1].reasoning_details.as_mut().unwrap();
    let DetailItem::Provider { raw, .. } = &details[0] else {
        panic!("first item is the provider's")
    };
    let text = raw.get();
    let at = text.find("\"signature\":\"").unwrap() + "\"signature\":\"".len();
    let flipped = if text.as_bytes()[at] == b'A' {
        'B'
    } else {
        'A'
    };
    let changed = format!("{}{}{}", &text[..at], flipped, &text[at + 1..]);
    details[0] = DetailItem::from_raw(RawJson::from_text(changed).unwrap()).unwrap();
    let err = turn(&sim, &tampered, stream).await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
    assert!(err.body().unwrap().contains("Invalid `signature`"), "{err}");
}

#[tokio::test]
async fn signed_items_survive_capture_and_replay_non_streamed() {
    check_round_trip(false).await;
}

#[tokio::test]
async fn signed_items_survive_capture_and_replay_streamed() {
    check_round_trip(true).await;
}
