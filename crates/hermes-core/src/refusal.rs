//! The refusal classifier of docs/spec.md §6: does an error say a replayed carrier is an unknown
//! field, and which carriers does that refuse? The one place such bodies are read.

use crate::route::{Carrier, CarrierSet};

/// The unknown-field phrases (lowercase).
pub(crate) const UNKNOWN_FIELD_PHRASES: [&str; 10] = [
    "extra inputs are not permitted",
    "is unsupported",
    "no such field",
    "unknown field",
    "unrecognized request argument",
    "unrecognized field",
    "unknown parameter",
    "unexpected field",
    "additional propert",
    "unknown key",
];

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte offsets where `word` occurs in `text` as a whole word.
fn whole_words<'t>(text: &'t str, word: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        let bytes = text.as_bytes();
        let before = i == 0 || !is_word_byte(bytes[i - 1]);
        let end = i + word.len();
        let after = end >= bytes.len() || !is_word_byte(bytes[end]);
        before && after
    })
}

/// The carriers an error body names, per docs/spec.md §6: `reasoning_content` and
/// `reasoning_details` as whole words, `reasoning` only on a `messages…` path (a bare `reasoning`
/// is also a top-level request parameter).
pub(crate) fn named_carriers(body_lower: &str) -> CarrierSet {
    let mut named = CarrierSet::NONE;
    for carrier in [Carrier::ReasoningContent, Carrier::ReasoningDetails] {
        if whole_words(body_lower, carrier.field()).next().is_some() {
            named = named.with(carrier);
        }
    }
    let first_messages = whole_words(body_lower, "messages").next();
    if let Some(m) = first_messages
        && whole_words(body_lower, "reasoning").any(|i| i > m)
    {
        named = named.with(Carrier::Reasoning);
    }
    named
}

/// Classifies an error. `status` is `None` for an error with no status; `sent` is the set of
/// carriers actually sent on assistant messages; `must_echo` says whether the route pads RC.
/// Returns the carriers to refuse, or `None` when this is not a refusal.
pub(crate) fn classify(
    status: Option<u16>,
    body: &str,
    sent: CarrierSet,
    must_echo: bool,
) -> Option<CarrierSet> {
    if status.is_some_and(|s| !(400..500).contains(&s)) {
        return None;
    }
    let lower = body.to_lowercase();
    if !UNKNOWN_FIELD_PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let mut named = named_carriers(&lower).intersect(sent);
    if must_echo {
        // There, a body naming reasoning_content complains about its value, not its presence.
        named = named.without(Carrier::ReasoningContent);
    }
    if named.is_empty() {
        return None;
    }
    let refused = if named.contains(Carrier::ReasoningContent) {
        sent
    } else {
        sent.intersect(CarrierSet::of([
            Carrier::Reasoning,
            Carrier::ReasoningDetails,
        ]))
    };
    Some(refused)
}

/// The refusal classifier over field names, for any wire (what the default
/// [`Wire::refused`](crate::Wire::refused) calls, and what a wire that first unwraps its own
/// error envelope calls on the words inside): the refused fields among `sent`, or `None` when
/// the error is not a refusal. `status` is `None` for an error with no status; anything but a
/// 4xx is no refusal. The chat carriers among `sent` follow docs/spec.md §6 exactly (a `must_echo`
/// route never refuses `reasoning_content`); any other field is refused when the body, carrying
/// one of the unknown-field phrases, names it as a whole word.
pub fn classify_fields(
    status: Option<u16>,
    body: &str,
    sent: &[&'static str],
    must_echo: bool,
) -> Option<Vec<&'static str>> {
    if status.is_some_and(|s| !(400..500).contains(&s)) {
        return None;
    }
    let lower = body.to_lowercase();
    if !UNKNOWN_FIELD_PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let carriers = CarrierSet::of(sent.iter().filter_map(|f| Carrier::parse(f)));
    let mut refused: Vec<&'static str> = classify(status, body, carriers, must_echo)
        .map(|set| set.iter().map(Carrier::field).collect())
        .unwrap_or_default();
    for field in sent.iter().filter(|f| Carrier::parse(f).is_none()) {
        if whole_words(&lower, &field.to_lowercase()).next().is_some() {
            refused.push(field);
        }
    }
    refused.sort_unstable();
    refused.dedup();
    (!refused.is_empty()).then_some(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: CarrierSet = CarrierSet::ALL;

    #[test]
    fn real_refusal_texts_are_recognised() {
        let mistral = r#"{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",1,"assistant","reasoning_content"],"msg":"Extra inputs are not permitted","input":"x"}]},"type":"invalid_request_error","param":null,"code":null}"#;
        assert_eq!(classify(Some(422), mistral, ALL, false), Some(ALL));
        let groq = "'messages.1' : for 'role:assistant' the following must be satisfied[('messages.1' : property 'reasoning' is unsupported)]";
        assert_eq!(
            classify(Some(400), groq, ALL, false),
            Some(CarrierSet::of([
                Carrier::Reasoning,
                Carrier::ReasoningDetails
            ]))
        );
        let cerebras = "messages.2.assistant.reasoning_content: property 'messages.2.assistant.reasoning_content' is unsupported";
        assert_eq!(
            classify(Some(400), cerebras, CarrierSet::RC, false),
            Some(CarrierSet::RC)
        );
        let unknown_rd =
            r#"{"error":{"message":"Unknown field `reasoning_details` in messages[3]"}}"#;
        let rc_rd = CarrierSet::of([Carrier::ReasoningContent, Carrier::ReasoningDetails]);
        assert_eq!(
            classify(Some(400), unknown_rd, rc_rd, false),
            Some(CarrierSet::of([Carrier::ReasoningDetails]))
        );
    }

    #[test]
    fn not_refusals() {
        // (what it proves, status, body, carriers sent, must_echo): each classifies as none.
        let rows: [(&str, Option<u16>, &str, CarrierSet, bool); 7] = [
            (
                "a top-level `reasoning` parameter is not the message carrier",
                Some(400),
                "Unrecognized request argument supplied: reasoning",
                ALL,
                false,
            ),
            (
                "a top-level `reasoning` name in Google's unknown-name phrase",
                Some(400),
                r#"Invalid JSON payload received. Unknown name "reasoning": Cannot find field."#,
                ALL,
                false,
            ),
            (
                "5xx never",
                Some(502),
                "unknown field reasoning_details",
                ALL,
                false,
            ),
            (
                "a carrier that was not sent",
                Some(400),
                "unknown field reasoning_details",
                CarrierSet::RC,
                false,
            ),
            (
                "no phrase",
                Some(400),
                "reasoning_content is required",
                ALL,
                false,
            ),
            (
                "`reasoning_content_extra` is not the whole word",
                Some(400),
                "unknown field reasoning_content_extra",
                ALL,
                false,
            ),
            (
                "a must-echo route never refuses RC",
                Some(400),
                "messages.1.reasoning_content: property is unsupported",
                CarrierSet::RC,
                true,
            ),
        ];
        for (case, status, body, sent, must_echo) in rows {
            assert_eq!(classify(status, body, sent, must_echo), None, "{case}");
        }
    }

    #[test]
    fn an_error_without_status_can_be_a_refusal() {
        assert_eq!(
            classify(None, "unknown field `reasoning_details`", ALL, false),
            Some(CarrierSet::of([
                Carrier::ReasoningDetails,
                Carrier::Reasoning
            ]))
        );
    }
}
