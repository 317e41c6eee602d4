//! Capture → replay against the strict simulator: signed items travel byte for byte, streamed
//! and not, and the simulator catches a one-byte change; the Bedrock InvokeModel wire does the
//! same under a FIPS host name.

use hermes_core::{
    DetailItem, Message, RawJson, ResolveOptions, Role, RouteTarget, ThinkingRequest,
};
use hermes_providers::{ChatTransport, TransportError, builtin_table};
use hermes_sim::Sim;
use hermes_wire_chat::HttpChat;

use crate::support;

const MODEL: &str = "anthropic/claude-sonnet-5";

async fn turn(sim: &Sim, history: &[Message], stream: bool) -> Result<Message, TransportError> {
    let table = builtin_table();
    let target = RouteTarget::new("openrouter", Some(&sim.base_url()), MODEL);
    let decision = table
        .resolve_with("aggregator", &target, ResolveOptions::default())
        .unwrap();
    let request = support::chat_request(history, &decision, stream);
    let (endpoint, origin) = support::loopback(sim.base_url(), "openrouter", MODEL);
    HttpChat {
        client: ChatTransport::new().unwrap(),
        endpoint,
    }
    .send_chat(&request, origin)
    .await
    .map(|r| r.message)
}

fn signed_items(msg: &Message) -> Vec<String> {
    msg.reasoning_details
        .iter()
        .flatten()
        .filter_map(|i| match i {
            DetailItem::Provider {
                raw, opaque: true, ..
            } => Some(raw.get().to_owned()),
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

/// A tool that tells the time (what the scripted model calls).
struct Now;

#[async_trait::async_trait]
impl hermes_core::driver::Tools for Now {
    async fn call(&self, _: &str, _: &str) -> String {
        "12:00".into()
    }
}

/// One tool loop through the `bedrock-anthropic` wire (InvokeModel, SigV4) to `host`, served by
/// the strict `bedrock` simulator under that name (streamed or not): the simulator's requests.
async fn bedrock_anthropic_loop(host: &str, stream: bool) -> Vec<hermes_sim::RecordedRequest> {
    use hermes_aws::{AwsAuth, AwsCredentials, AwsSigner};
    use hermes_core::Effort;
    use hermes_core::driver::{Conversation, Driver, DriverConfig};
    use hermes_providers::aws::RuntimeHost;
    use hermes_providers::{Auth, Waits};
    use hermes_wire_anthropic::{AnthropicWire, Flavor, Target};

    const MODEL: &str = "us.anthropic.claude-opus-4-6-v1";
    let sim = Sim::start("bedrock").await.unwrap();
    let base = format!("http://{host}:{}", sim.addr().port());
    let region = RuntimeHost::of(&base).map_or_else(|| "us-east-1".to_owned(), |h| h.region);
    let wire = AnthropicWire {
        client: ChatTransport::resolving(Waits::default(), host, sim.addr()).unwrap(),
        target: Target {
            flavor: Flavor::Bedrock,
            base_url: base.clone(),
            max_tokens: None,
            account: None,
        },
        auth: Some(Auth::Signed(AwsSigner::shared(
            AwsAuth::SigV4 {
                credentials: AwsCredentials {
                    access_key_id: hermes_sim::SIM_AWS_ACCESS_KEY_ID.into(),
                    secret_access_key: hermes_sim::SIM_AWS_SECRET_ACCESS_KEY.into(),
                    session_token: None,
                },
                region,
            },
            std::time::SystemTime::now,
        ))),
    };
    let decision = builtin_table().resolve(
        &RouteTarget::new("bedrock-anthropic", Some(&base), MODEL),
        ResolveOptions::default(),
    );
    let mut config = DriverConfig::default();
    config.thinking = ThinkingRequest::Effort(Effort::High);
    config.stream = stream;
    config.max_backoff_retries = 0;
    config.tools = Some(RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The time","parameters":{"type":"object","properties":{}}}}]"#,
    ).unwrap());
    let log = hermes_core::driver::MemoryLog::default();
    let driver = Driver {
        decision: &decision,
        wire: &wire as &dyn hermes_core::Wire,
        log: &log,
        tools: &Now,
        config: &config,
        notify: &|_| {},
    };
    let mut conversation = Conversation::default();
    driver
        .run_turn(
            &mut conversation,
            Message::text(Role::User, "[tools=1] Time?"),
        )
        .await
        .unwrap();
    sim.requests()
}

#[tokio::test]
async fn a_fips_bedrock_host_gets_thinking_requested_and_its_signed_blocks_back() {
    for host in [
        "bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
        "bedrock-runtime-fips.us-east-1.amazonaws.com",
    ] {
        for stream in [false, true] {
            let requests = bedrock_anthropic_loop(host, stream).await;
            assert_eq!(
                requests.len(),
                2,
                "{host}: the step and the loop's next request"
            );
            for r in &requests {
                assert_eq!(r.status, 200, "{host}: {}", r.response);
                let sent_host = r.headers.iter().find(|(k, _)| k == "host").unwrap();
                assert!(sent_host.1.starts_with(host), "{sent_host:?}");
                assert_eq!(
                    r.body["thinking"],
                    serde_json::json!({"type": "adaptive", "display": "summarized"}),
                    "{host}: thinking is requested on every request of the loop"
                );
            }
            // The step's signed thinking block goes back first, byte for byte as the simulator
            // minted it (it verifies the signature and answered 200).
            let minted = requests[0].response.clone();
            let replayed = &requests[1].body["messages"][1]["content"];
            assert_eq!(replayed[0]["type"], "thinking", "{host}: {replayed}");
            let signature = replayed[0]["signature"].as_str().unwrap();
            assert!(!signature.is_empty());
            assert!(
                minted.contains(signature),
                "{host}: the minted signature is replayed"
            );
            assert_eq!(replayed[1]["type"], "tool_use");
        }
    }
}
