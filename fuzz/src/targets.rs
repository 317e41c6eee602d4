//! The fuzz targets. Each takes the raw input bytes and panics on a crash: a panic inside the
//! code under test, or a broken property (the assertions here).

use hermes_core::{Message, Origin, Outgoing, RequestParts, TransportError, Wire};
use hermes_core::{OnDelta, SendResult, parse_history};
use hermes_providers::chat::{StreamAccumulator, capture_message};
use serde_json::Value;

use crate::mutate::Shape;

/// A fuzz target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Stream chunks, one JSON document per line, through `StreamAccumulator::feed_with_text`.
    Stream,
    /// A whole reply body through `chat::capture_message`.
    Capture,
    /// An error body through `Wire::refused`'s default (the classifier of docs/spec.md §6).
    Refusal,
    /// A history through `parse_history`, then serialised and re-parsed.
    Import,
}

impl Target {
    /// Every target, in the order `all` runs them.
    pub(crate) const ALL: [Target; 4] = [
        Target::Stream,
        Target::Capture,
        Target::Refusal,
        Target::Import,
    ];

    /// The target named `name`.
    pub(crate) fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The name on the command line, of the seed and crash folders.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Target::Stream => "stream",
            Target::Capture => "capture",
            Target::Refusal => "refusal",
            Target::Import => "import",
        }
    }

    /// How the target reads its input.
    pub(crate) fn shape(self) -> Shape {
        match self {
            Target::Stream => Shape::Lines,
            Target::Capture | Target::Import => Shape::Json,
            Target::Refusal => Shape::Text,
        }
    }

    /// Runs the target on one input; panics on a crash.
    pub(crate) fn run(self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        match self {
            Target::Stream => stream(&text),
            Target::Capture => capture(&text),
            Target::Refusal => refusal(&text),
            Target::Import => import(&text),
        }
    }
}

fn origin() -> Origin {
    Origin {
        provider: "fuzz".to_owned(),
        host: "fuzz.invalid".to_owned(),
        model: "fuzz-model".to_owned(),
    }
}

/// A captured message must store and load again unchanged (the store keeps its JSON text).
fn round_trips(msg: &Message) {
    let once = serde_json::to_string(msg)
        .unwrap_or_else(|e| panic!("a captured message does not serialise: {e}"));
    let back: Message = serde_json::from_str(&once)
        .unwrap_or_else(|e| panic!("a captured message does not load again: {e}\n{once}"));
    let twice = serde_json::to_string(&back)
        .unwrap_or_else(|e| panic!("a reloaded message does not serialise: {e}"));
    assert_eq!(once, twice, "a captured message changed when reloaded");
}

/// `stream`: every line (an optional `data: ` prefix removed, `[DONE]` skipped) that parses as
/// JSON is fed with its text, then the message is finished.
pub(crate) fn stream(text: &str) {
    let mut acc = StreamAccumulator::new();
    for line in text.lines() {
        let line = line.strip_prefix("data:").map_or(line, str::trim_start);
        if line == "[DONE]" {
            continue;
        }
        if let Ok(chunk) = serde_json::from_str::<Value>(line) {
            acc.feed_with_text(&chunk, line);
        }
    }
    let (msg, _meta) = acc.finish(origin());
    round_trips(&msg);
}

/// `capture`: a non-streamed reply body.
pub(crate) fn capture(text: &str) {
    if let Ok((msg, _meta)) = capture_message(text, origin()) {
        round_trips(&msg);
    }
}

/// A wire that only reads refusals: `refused` is the trait's default.
struct ProbeWire;

#[async_trait::async_trait]
impl Wire for ProbeWire {
    fn id(&self) -> &'static str {
        "fuzz"
    }

    fn encode(&self, _parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
        Err(TransportError::Request(
            "the fuzz wire sends nothing".to_owned(),
        ))
    }

    async fn send(
        &self,
        _request: &Outgoing,
        _origin: Origin,
        _on_delta: OnDelta<'_>,
    ) -> SendResult {
        Err(TransportError::Request(
            "the fuzz wire sends nothing".to_owned(),
        ))
    }
}

/// What a request may have sent, as `Outgoing::refusable` lists it.
const SENT: [&[&str]; 3] = [
    &[
        "extra_content",
        "reasoning",
        "reasoning_content",
        "reasoning_details",
        "reasoning_effort",
        "reasoning_opaque",
        "thinking",
        "thought_signature",
    ],
    &["reasoning_content"],
    &[],
];

/// `refusal`: the body under every status class, sent set and must-echo flag; the answer is
/// `None` or a sorted, duplicate-free, non-empty subset of what was sent, never for a 5xx, and
/// never `reasoning_content` on a must-echo route (the trait's documented contract).
pub(crate) fn refusal(text: &str) {
    let wire = ProbeWire;
    for status in [None, Some(400), Some(422), Some(500)] {
        for sent in SENT {
            for must_echo in [false, true] {
                let Some(refused) = wire.refused(status, text, sent, must_echo) else {
                    continue;
                };
                assert!(
                    status.is_none_or(|s| (400..500).contains(&s)),
                    "status {status:?} read as a refusal"
                );
                assert!(!refused.is_empty(), "an empty refusal");
                assert!(
                    refused.iter().all(|f| sent.contains(f)),
                    "refused {refused:?}, sent {sent:?}"
                );
                assert!(
                    refused.windows(2).all(|w| w[0] < w[1]),
                    "not sorted or duplicated: {refused:?}"
                );
                assert!(
                    !(must_echo && refused.contains(&"reasoning_content")),
                    "a must-echo route refused reasoning_content: {refused:?}"
                );
            }
        }
    }
}

/// `import`: a history that parses serialises, parses again and serialises to the same bytes.
pub(crate) fn import(text: &str) {
    let Ok(session) = parse_history(text) else {
        return;
    };
    let once = serde_json::to_string(&session)
        .unwrap_or_else(|e| panic!("an imported session does not serialise: {e}"));
    let again = parse_history(&once)
        .unwrap_or_else(|e| panic!("an exported session does not import: {e}\n{once}"));
    let twice = serde_json::to_string(&again)
        .unwrap_or_else(|e| panic!("a re-imported session does not serialise: {e}"));
    assert_eq!(once, twice, "export → import → export changed the bytes");
}
