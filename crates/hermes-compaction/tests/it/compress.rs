//! Example-based tests for compress() and the salvage pass: checkpoints, fallbacks, errors.

use std::sync::Mutex;

use hermes_compaction::{
    CLEARED_TOOL_OUTPUT, CompactionConfig, CompactionError, CompactionOverrides, FixedSummarizer,
    SUMMARY_MARKER, SUMMARY_TRUNCATED, Source, Summarizer, compress, is_checkpoint, salvage,
};
use hermes_core::estimate_history;
use hermes_core::{Message, Role};
use serde_json::{Value, json};

use crate::common::*;

/// Records what it was asked to summarise.
#[derive(Default)]
struct Recording {
    seen: Mutex<Vec<Vec<Message>>>,
    answer: String,
}

#[async_trait::async_trait]
impl Summarizer for Recording {
    async fn summarize(&self, messages: &[Message]) -> Result<String, String> {
        self.seen.lock().unwrap().push(messages.to_vec());
        Ok(self.answer.clone())
    }
}

struct Failing(&'static str);

#[async_trait::async_trait]
impl Summarizer for Failing {
    async fn summarize(&self, _messages: &[Message]) -> Result<String, String> {
        Err(self.0.to_owned())
    }
}

/// `turns` turns of user → assistant(tool call, every carrier) → tool → assistant answer.
fn loop_history(turns: usize, tool_output: usize, blob: &str) -> Vec<Message> {
    let mut out = vec![json!({"role": "system", "content": "sys"})];
    for i in 0..turns {
        out.push(json!({"role": "user", "content": format!("question {i}")}));
        out.push(json!({
            "role": "assistant", "content": "",
            "reasoning_content": format!("thinking {i} 中文"),
            "reasoning": "r",
            "reasoning_details": [
                {"type": "reasoning.text", "text": "signed", "signature": blob},
                {"type": "reasoning.encrypted", "data": blob},
                {"type": "hermes.native_assistant",
                 "extra_content": {"google": {"thought_signature": blob}},
                 "reasoning_opaque": blob, "reasoning_text": "copilot"}
            ],
            "origin": {"provider": "gemini-openai", "host": "generativelanguage.googleapis.com", "model": OWN_MODEL},
            "tool_calls": [{"id": format!("c{i}"), "type": "function",
                            "function": {"name": "search", "arguments": "{\"q\":1}", "thought_signature": blob},
                            "extra_content": {"google": {"thought_signature": blob}}}]
        }));
        out.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "x".repeat(tool_output)}));
        out.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    parse(&Value::Array(out))
}

#[test]
fn a_new_summary_supersedes_the_old_checkpoint() {
    let d = all_gemini_route();
    let h = loop_history(12, 400, "c2ln");
    let config = config_with_threshold(1_000, 2, 4, 3);
    assert!(config.needs_compaction(&h, &d));
    let first = Recording {
        answer: "first summary".into(),
        ..Recording::default()
    };
    let c1 = now(compress(&h, &d, &config, &first)).unwrap().unwrap();
    assert!(c1.fits);
    let seen = first.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    // The summarizer got the stored messages of the middle, unchanged and in whole units.
    let summarised: Vec<Message> = c1.summarised.iter().map(|i| h[*i].clone()).collect();
    assert_eq!(seen[0], summarised);
    assert_units_whole(&seen[0]);
    assert_eq!(c1.sources[2], Source::Checkpoint);
    assert_eq!(c1.checkpoint_slot, Some(c1.summarised[0]));
    assert!(
        c1.active[2]
            .content
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with(&format!("{SUMMARY_MARKER}\n\nfirst summary"))
    );

    // The session goes on; compacting again folds the old checkpoint into the new summary.
    let mut h2 = c1.active.clone();
    h2.extend(loop_history(12, 400, "c2ln").into_iter().skip(1));
    let old_checkpoint = h2.iter().position(is_checkpoint).unwrap();
    let second = Recording {
        answer: "second summary".into(),
        ..Recording::default()
    };
    let c2 = now(compress(&h2, &d, &config, &second)).unwrap().unwrap();
    let checkpoints: Vec<&Message> = c2.active.iter().filter(|m| is_checkpoint(m)).collect();
    assert_eq!(checkpoints.len(), 1);
    assert!(
        checkpoints[0]
            .content
            .as_ref()
            .unwrap()
            .get()
            .contains("second summary")
    );
    assert!(c2.archived.contains(&old_checkpoint));
    assert!(c2.summarised.contains(&old_checkpoint));
    assert!(second.seen.lock().unwrap()[0].iter().any(is_checkpoint));
}

#[test]
fn retained_turns_keep_every_carrier_byte_for_byte() {
    let d = echo_route();
    let h = loop_history(10, 300, &"QUJD".repeat(300));
    let config = config_with_threshold(800, 2, 6, 3);
    let c = now(compress(&h, &d, &config, &FixedSummarizer("s".into())))
        .unwrap()
        .unwrap();
    let mut retained_assistants = 0;
    for (m, s) in c.active.iter().zip(&c.sources) {
        if let Source::Kept(i) = s {
            assert_eq!(
                serde_json::to_string(m).unwrap(),
                serde_json::to_string(&h[*i]).unwrap()
            );
            retained_assistants += usize::from(m.role == Role::Assistant);
        }
    }
    assert!(retained_assistants >= 2);
    assert!(c.status_line().starts_with("context compacted: 41 → "));
}

#[test]
fn blob_size_does_not_move_the_cut() {
    let d = all_copilot_route();
    let config = config_with_threshold(900, 2, 4, 3);
    let small = loop_history(10, 300, "c2ln");
    let large = loop_history(10, 300, &"c2ln".repeat(20_000));
    assert_eq!(estimate_history(&small, &d), estimate_history(&large, &d));
    let s = FixedSummarizer("s".into());
    let a = now(compress(&small, &d, &config, &s)).unwrap().unwrap();
    let b = now(compress(&large, &d, &config, &s)).unwrap().unwrap();
    assert_eq!(a.archived, b.archived);
    assert_eq!(a.estimate_after, b.estimate_after);
}

#[test]
fn in_flight_loop_is_salvaged_not_split() {
    // One user message, then a long tool loop: everything after the user is in flight, so
    // nothing may be summarised; old tool outputs are cleared instead.
    let d = all_gemini_route();
    let full = loop_history(8, 2_000, "c2ln");
    let mut h = vec![full[0].clone(), full[1].clone()];
    for (i, m) in full.iter().enumerate().skip(2) {
        if m.role != Role::User && !(m.role == Role::Assistant && m.tool_calls.is_none()) {
            h.push(full[i].clone());
        }
    }
    let config = config_with_threshold(3_000, 2, 4, 2);
    assert!(config.needs_compaction(&h, &d));
    let summarizer = Recording::default();
    let c = now(compress(&h, &d, &config, &summarizer))
        .unwrap()
        .unwrap();
    assert!(summarizer.seen.lock().unwrap().is_empty());
    assert!(!c.summarized());
    assert!(c.fits);
    assert!(c.tool_outputs_cleared >= 1);
    let tools: Vec<&Message> = c.active.iter().filter(|m| m.role == Role::Tool).collect();
    let cleared =
        |m: &&Message| m.content.as_ref().unwrap().as_str().unwrap() == CLEARED_TOOL_OUTPUT;
    // The two most recent outputs are kept whatever happens.
    assert!(!tools[tools.len() - 2..].iter().any(cleared));
    assert_eq!(
        tools.iter().filter(|m| cleared(m)).count(),
        c.tool_outputs_cleared
    );
    // Shrunk rows keep their call ids; assistant turns are never shrunk.
    for (m, s) in c.active.iter().zip(&c.sources) {
        match s {
            Source::Shrunk(i) => {
                assert_eq!(h[*i].role, Role::Tool);
                assert_eq!(m.tool_call_id, h[*i].tool_call_id);
                assert!(c.archived.contains(i));
            }
            Source::Kept(i) => assert_eq!(m, &h[*i]),
            Source::Checkpoint => unreachable!(),
        }
    }
    assert_units_whole(&c.active);
    assert!(c.status_line().contains("old tool outputs cleared"));
}

#[test]
fn salvage_gives_up_when_nothing_can_shrink() {
    let d = all_gemini_route();
    let h = parse(&json!([
        {"role": "user", "content": "a long question ".repeat(50)},
        {"role": "assistant", "content": "a long answer ".repeat(50), "reasoning_content": "t".repeat(500)},
    ]));
    let config = config_with_threshold(10, 2, 8, 0);
    assert!(salvage(&h, &d, &config).is_none());
    let out = now(compress(&h, &d, &config, &FixedSummarizer("s".into()))).unwrap();
    assert!(out.is_none());
    // Already-cleared outputs cannot shrink further.
    let cleared = parse(&json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": CLEARED_TOOL_OUTPUT},
    ]));
    assert!(salvage(&cleared, &d, &config).is_none());
}

#[test]
fn an_oversized_summary_is_capped() {
    let d = echo_route();
    let h = loop_history(10, 200, "c2ln");
    let config = config_with_threshold(700, 2, 4, 3);
    let huge = "detail ".repeat(2_000);
    let c = now(compress(&h, &d, &config, &FixedSummarizer(huge)))
        .unwrap()
        .unwrap();
    assert!(c.summarized());
    assert_eq!(c.checkpoints_capped, 1);
    assert!(c.fits, "{}", c.status_line());
    let checkpoint = c.active.iter().find(|m| is_checkpoint(m)).unwrap();
    let text = checkpoint
        .content
        .as_ref()
        .unwrap()
        .as_str()
        .unwrap()
        .into_owned();
    assert!(text.starts_with(SUMMARY_MARKER) && text.ends_with(SUMMARY_TRUNCATED));
    assert!(hermes_core::estimate_text(&text) <= config.summary_max_tokens);
}

#[test]
fn summarizer_failures_are_errors_and_leave_nothing_changed() {
    let d = echo_route();
    let h = loop_history(10, 200, "c2ln");
    let config = config_with_threshold(700, 2, 4, 3);
    let err = now(compress(&h, &d, &config, &Failing("HTTP 500"))).unwrap_err();
    assert!(matches!(err, CompactionError::Summarizer(ref e) if e == "HTTP 500"));
    let err = now(compress(&h, &d, &config, &FixedSummarizer("  ".into()))).unwrap_err();
    assert!(matches!(err, CompactionError::EmptySummary));
}

#[test]
fn manual_compact_summarises_all_but_the_protected_messages() {
    let d = all_gemini_route();
    let h = loop_history(6, 10, "c2ln");
    // Far under the trigger: automatic sizing keeps everything; target 0 keeps only the
    // protected messages.
    let auto = CompactionConfig::for_model("gemini-2.5-pro", &CompactionOverrides::default());
    assert!(!auto.needs_compaction(&h, &d));
    let manual = CompactionConfig {
        target_percent: 0,
        ..auto
    };
    let c = now(compress(&h, &d, &manual, &FixedSummarizer("s".into())))
        .unwrap()
        .unwrap();
    // system + first user, checkpoint, then the last 8 messages (two whole turns).
    assert_eq!(c.active.len(), 2 + 1 + 8);
    assert_eq!(c.summarised, (2..h.len() - 8).collect::<Vec<_>>());
}
