//! Property tests over generated histories: byte-identical retained turns, no compaction loop,
//! serde round trips, idempotent shaping, whole tool units, and the estimator against shaping.

use hermes_compaction::{FixedSummarizer, Source, compress, is_checkpoint};
use hermes_core::estimate_history;
use hermes_core::{Message, Role, Verdicts};
use hermes_wire_chat::ShapeContext;
use proptest::prelude::*;

use crate::common::*;

const SUMMARY: &str = "The user asked for searches; results were found and reported.";

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    }
}

fn route_index() -> impl Strategy<Value = usize> {
    0..routes().len()
}

proptest! {
    #![proptest_config(config())]

    /// (1) Every retained assistant turn is byte-identical to its original, (2) the compacted
    /// view never asks for a second compaction when the protected messages fit, and (5) no tool
    /// call is separated from its result.
    #[test]
    fn compress_keeps_turns_whole_and_does_not_loop(
        history in history(),
        route in route_index(),
        protect_first in 0usize..4,
        protect_last in 1usize..7,
        keep_tools in 0usize..4,
        slack in 0.0f64..1.0,
    ) {
        let decision = &routes()[route];
        let before = estimate_history(&history, decision);
        let probe = config_with_threshold(usize::MAX / 4, protect_first, protect_last, keep_tools);
        let floor = estimate_history(&minimal_view(&history, &probe, SUMMARY), decision);
        prop_assume!(floor < before);
        // A trigger between what must be kept and what there is.
        let threshold = floor + 1 + ((before - floor - 1) as f64 * slack) as usize;
        let config = config_with_threshold(threshold, protect_first, protect_last, keep_tools);
        prop_assert_eq!(config.threshold(), threshold);
        prop_assert!(config.needs_compaction(&history, decision));

        let summarizer = FixedSummarizer(SUMMARY.to_owned());
        let result = now(compress(&history, decision, &config, &summarizer)).unwrap();
        let c = result.expect("a history over the trigger with room to shrink is compacted");

        // (2) no second compaction: the estimate of the new view is under the trigger.
        let after = estimate_history(&c.active, decision);
        prop_assert_eq!(after, c.estimate_after);
        prop_assert!(c.fits);
        prop_assert!(!config.needs_compaction(&c.active, decision), "{} >= {}", after, threshold);
        prop_assert!(after < before);

        // (1) retained assistant turns are the stored values, byte for byte.
        prop_assert_eq!(c.active.len(), c.sources.len());
        for (m, source) in c.active.iter().zip(&c.sources) {
            match *source {
                Source::Kept(i) => prop_assert_eq!(
                    serde_json::to_string(m).unwrap(),
                    serde_json::to_string(&history[i]).unwrap()
                ),
                Source::Shrunk(i) => {
                    prop_assert_ne!(m.role, Role::Assistant);
                    prop_assert_eq!(m.role, history[i].role);
                    prop_assert_eq!(&m.tool_call_id, &history[i].tool_call_id);
                }
                Source::Checkpoint => prop_assert!(is_checkpoint(m)),
            }
        }
        // Every assistant turn is either retained unchanged or summarised (archived).
        for (i, m) in history.iter().enumerate() {
            if m.role == Role::Assistant {
                let kept = c.sources.contains(&Source::Kept(i));
                prop_assert!(kept != c.archived.contains(&i));
                prop_assert!(kept || c.summarised.contains(&i));
            }
        }
        // Archived is exactly what is not kept; at most one checkpoint remains.
        for i in 0..history.len() {
            prop_assert_eq!(c.archived.contains(&i), !c.sources.contains(&Source::Kept(i)));
        }
        prop_assert!(c.active.iter().filter(|m| is_checkpoint(m)).count() <= 1);

        // (5) whole tool units in the active view.
        assert_units_whole(&c.active);

        // Compacting the compacted view again supersedes the checkpoint rather than piling up.
        if c.summarized() {
            let tight = config_with_threshold(1, protect_first, protect_last, keep_tools);
            if let Some(again) = now(compress(&c.active, decision, &tight, &summarizer)).unwrap() {
                prop_assert!(again.active.iter().filter(|m| is_checkpoint(m)).count() <= 1);
                assert_units_whole(&again.active);
            }
        }
    }

    /// (3) load(store(h)) == h at the serde level: equal messages and equal bytes.
    #[test]
    fn serde_round_trip_is_exact(history in history()) {
        let stored = serde_json::to_string(&history).unwrap();
        let loaded: Vec<Message> = serde_json::from_str(&stored).unwrap();
        prop_assert_eq!(&loaded, &history);
        prop_assert_eq!(serde_json::to_string(&loaded).unwrap(), stored);
    }

    /// (4) Shaping is idempotent: shape, serialise, reparse, shape again gives the same JSON.
    #[test]
    fn shaping_is_idempotent(history in history(), route in 0usize..4) {
        let decision = &[echo_route(), all_gemini_route(), all_copilot_route(), strict_route()][route];
        let verdicts = Verdicts::default();
        let ctx = ShapeContext::new(decision, &verdicts);
        let once = serde_json::to_string(&hermes_wire_chat::shape(&ctx, &history)).unwrap();
        let reparsed: Vec<Message> = serde_json::from_str(&once).unwrap();
        let twice = serde_json::to_string(&hermes_wire_chat::shape(&ctx, &reparsed)).unwrap();
        prop_assert_eq!(once, twice);
    }

    /// The estimator prices exactly the readable strings shaping puts on the wire.
    #[test]
    fn estimate_matches_the_shaped_wire(history in history(), route in route_index()) {
        let decision = &routes()[route];
        prop_assert_eq!(
            estimate_history(&history, decision),
            reference_estimate(&history, decision)
        );
    }
}
