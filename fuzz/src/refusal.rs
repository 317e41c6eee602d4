//! The refusal classifier: an error body through `Wire::refused`'s default (the classifier of
//! docs/spec.md §6).

use hermes_core::{OnDelta, Origin, Outgoing, RequestParts, SendResult, TransportError, Wire};

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
pub fn refusal(input: &[u8]) {
    let text = &*String::from_utf8_lossy(input);
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
