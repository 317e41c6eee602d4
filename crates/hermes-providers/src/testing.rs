//! Helpers shared by the unit tests of the native wires (mostly the Claude ones), here and in
//! the wire crates (this crate's `test-support` feature; not part of its API).
//!
//! Stored items written in byte for byte, the route of a target, readers of a captured
//! message's carriers and a delta recorder (a signed Claude step is `hermes-wire-anthropic`'s,
//! AWS event-stream frames `hermes-aws`'s).

// Test helpers: a failed expectation panics, as in the tests that call them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use hermes_core::OnDelta;
use hermes_core::message::{BLOCK_ORDER_KEY, NOT_REPLAYED_KEY};
use hermes_core::transport::Delta;
use hermes_core::{
    DetailItem, FinishReason, Message, Origin, RawJson, ReplyMeta, ResolveOptions, Role,
    RouteDecision, RouteTarget, Usage,
};
use serde_json::{Value, json};

/// A signed thinking item as captured, with escapes a `Value` round trip would rewrite.
pub const SIG: &str =
    r#"{"type":"thinking","thinking":"Call now \u00e9\/.","signature":"c2lnLTE="}"#;
/// A redacted thinking item as captured.
pub const RED: &str = r#"{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"}"#;

/// [`SIG`] and [`RED`] as another program stored them, with keys of its own (`_issuer_kind`,
/// …) that no wire sends.
pub const STAMPED: [&str; 2] = [
    r#"{"_issuer_kind":"anthropic_messages","type":"thinking","thinking":"Call now \u00e9\/.","signature":"c2lnLTE=","_issuer_model":"claude-opus-4-6"}"#,
    r#"{"type":"redacted_thinking","_turn":3,"data":"ZW5jcnlwdGVk"}"#,
];

/// `h` with every stored `reasoning_details` replaced by [`STAMPED`].
pub fn stamped(mut h: Vec<Message>) -> Vec<Message> {
    for m in &mut h {
        if let Some(items) = &mut m.reasoning_details {
            *items = STAMPED
                .iter()
                .filter_map(|t| RawJson::from_text(*t).ok())
                .filter_map(|raw| DetailItem::from_raw(raw).ok())
                .collect();
        }
    }
    h
}

/// Parses a history from JSON text, first writing the stored items [`SIG`] and [`RED`] in
/// where [`step`] left their placeholders, so their bytes are exactly as captured.
pub fn history(value: Value) -> Vec<Message> {
    let text = value
        .to_string()
        .replace("\"@SIG\"", SIG)
        .replace("\"@RED\"", RED);
    hermes_core::parse_history(&text).unwrap().messages
}

/// How the built-in table routes `model` at `provider` on `base_url`.
pub fn decision(provider: &str, base_url: &str, model: &str) -> RouteDecision {
    crate::builtin_table().resolve(
        &RouteTarget::new(provider, Some(base_url), model),
        ResolveOptions::default(),
    )
}

/// A tool loop in flight: a system prompt, the user's question, the signed `step` (a call
/// `toolu_1`) and its result.
pub fn loop_history(step: Value) -> Vec<Message> {
    history(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "time?"},
        step,
        {"role": "tool", "tool_call_id": "toolu_1", "content": "12:00"},
    ]))
}

/// The stored bookkeeping value under `key`, as JSON text.
pub fn extra<'m>(msg: &'m Message, key: &str) -> Option<&'m str> {
    msg.extra
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.get())
}

/// The `reasoning_details` items, as JSON text.
pub fn details(msg: &Message) -> Vec<&str> {
    msg.reasoning_details
        .iter()
        .flatten()
        .map(|i| i.raw().get())
        .collect()
}

/// The arguments text of every tool call.
pub fn arguments(msg: &Message) -> Vec<String> {
    msg.tool_calls
        .iter()
        .flatten()
        .map(|c| {
            c.function
                .arguments
                .as_ref()
                .unwrap()
                .as_str()
                .unwrap()
                .into_owned()
        })
        .collect()
}

/// What a wire that carries Claude's blocks received for the shared whole-reply fixture (a
/// signed thinking block `Café first: a/b.`, a redacted one, text and one `now` call; 115
/// tokens in, 42 out, 100 read from the cache and 5 written), each as that wire spells it.
pub struct ClaudeTurn<'a> {
    /// The two stored `reasoning_details` items.
    pub details: [&'a str; 2],
    /// The stored `content` (JSON text).
    pub content: &'a str,
    /// The call's arguments text.
    pub arguments: &'a str,
    /// The call's id.
    pub call_id: &'a str,
}

/// Asserts that `captured` is the fixture's turn as `want` spells it, from `origin`: Anthropic
/// shaped carriers in the blocks' order, readable thinking, replayable, a tool-calls finish
/// with the fixture's usage. Returns the message for what a test checks besides.
pub fn check_claude_turn(
    captured: (Message, ReplyMeta),
    origin: &Origin,
    want: ClaudeTurn<'_>,
) -> Message {
    let (msg, meta) = captured;
    assert_eq!(msg.role, Role::Assistant);
    assert_eq!(msg.origin.as_ref(), Some(origin));
    assert_eq!(details(&msg), want.details);
    assert!(
        msg.reasoning_details
            .as_ref()
            .unwrap()
            .iter()
            .all(|i| i.is_anthropic_shaped())
    );
    assert_eq!(msg.content.as_ref().unwrap().get(), want.content);
    assert_eq!(arguments(&msg), [want.arguments]);
    let call = &msg.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.id.as_deref(), Some(want.call_id));
    assert_eq!(call.kind.as_deref(), Some("function"));
    assert_eq!(call.function.name, "now");
    assert_eq!(
        msg.reasoning_content.as_ref().unwrap().text(),
        "Café first: a/b."
    );
    assert_eq!(
        extra(&msg, BLOCK_ORDER_KEY),
        Some(r#"["thinking","redacted_thinking","text","tool_use"]"#)
    );
    assert_eq!(extra(&msg, NOT_REPLAYED_KEY), None);
    assert!(msg.replayable());
    assert_eq!(meta.finish, Some(FinishReason::ToolCalls));
    assert_eq!(meta.usage, Some(Usage::new(115, 42, 0, 100, 5)));
    msg
}

/// One delta as a line: `R:` thinking, `C:` answer text, `T<index>:<id>:<name>:<arguments>` a
/// tool-call fragment (`-` for an id or name the fragment does not carry), `S:` a thinking
/// block's signature.
pub fn delta_line(delta: Delta<'_>) -> String {
    match delta {
        Delta::Reasoning(t) => format!("R:{t}"),
        Delta::Signature(s) => format!("S:{s}"),
        Delta::Content(t) => format!("C:{t}"),
        Delta::ToolCall {
            index,
            id,
            name,
            arguments,
        } => format!(
            "T{index}:{}:{}:{arguments}",
            id.unwrap_or("-"),
            name.unwrap_or("-")
        ),
    }
}

/// Records the deltas a capture reports.
#[derive(Default)]
pub struct Seen(Mutex<Vec<String>>);

impl Seen {
    /// Records one delta.
    pub fn record(&self, delta: Delta<'_>) {
        self.0.lock().unwrap().push(delta_line(delta));
    }

    /// The text deltas recorded, in order, `true` for thinking.
    pub fn take(self) -> Vec<(bool, String)> {
        self.lines()
            .into_iter()
            .filter_map(|l| match l.split_at(2) {
                ("R:", t) => Some((true, t.to_owned())),
                ("C:", t) => Some((false, t.to_owned())),
                _ => None,
            })
            .collect()
    }

    /// Every delta recorded, in order, as [`delta_line`] writes it.
    pub fn lines(self) -> Vec<String> {
        self.0.into_inner().unwrap()
    }
}

/// A 1×1 PNG, base64: what the image tests of every wire send.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A history with chat-style images, as the canonical history holds them: a user turn of text,
/// a PNG `data:` URL and (when `remote`) an https image URL with `detail`, a tool call, and its
/// result of text and a PNG.
pub fn image_history(remote: bool) -> Vec<Message> {
    let data = format!("data:image/png;base64,{PNG}");
    let mut user = vec![
        json!({"type": "text", "text": "What is in these?"}),
        json!({"type": "image_url", "image_url": {"url": data}}),
    ];
    if remote {
        user.push(json!({"type": "image_url",
                         "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}}));
    }
    history(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": user},
        {"role": "assistant", "content": null,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": [{"type": "text", "text": "the screen"},
                     {"type": "image_url", "image_url": {"url": data}}]},
    ]))
}

/// Checks that a wire counted, for the metrics, exactly the messages its `--explain` lines say
/// provenance left out (at least one).
pub fn provenance_counted(explain: &[String], counted: u64) {
    let named = explain.iter().filter(|l| l.contains("provenance")).count();
    assert!(named > 0, "{explain:?}");
    assert_eq!(counted, named as u64, "{explain:?}");
}

/// An encoded body read for a test's assertions: its text and JSON, and what the wire said of it.
pub struct Out {
    /// The body as text.
    pub text: String,
    /// The body as JSON.
    pub json: Value,
    /// The lines for the user.
    pub notes: Vec<String>,
    /// The refusable fields sent.
    pub refusable: Vec<&'static str>,
    /// The `--explain` lines.
    pub explain: Vec<String>,
    /// The assistant messages whose carriers were demoted or left out.
    pub carriers: hermes_core::CarrierCounts,
}

impl Out {
    /// `encoded` read (its body is JSON text).
    pub fn of<X>(encoded: crate::native::Encoded<X>) -> Self {
        let text = String::from_utf8(encoded.body).unwrap();
        Out {
            json: serde_json::from_str(&text).unwrap(),
            text,
            notes: encoded.notes,
            refusable: encoded.refusable,
            explain: encoded.explain,
            carriers: encoded.carriers,
        }
    }
}

/// Checks that `text` (a recovery's note, a line for the user) says `words` (the failure shows
/// it).
pub fn assert_says(text: &str, words: &str) {
    assert!(text.contains(words), "{text:?} does not say {words:?}");
}

/// Checks that a line of a wire's `--explain` lines contains `words` (the failure shows them
/// all).
pub fn assert_explains(explain: &[String], words: &str) {
    assert!(
        explain.iter().any(|l| l.contains(words)),
        "no line says {words:?}: {explain:?}"
    );
}

/// Reads `text` as a streamed SSE reply cut into pieces of `size` bytes, captured by `turn`
/// through the one SSE loop ([`crate::native::sse::read_sse`]); a failed read is a stream
/// error.
pub async fn read_cut<T: crate::native::sse::SseTurn>(
    text: &str,
    size: usize,
    turn: T,
    origin: hermes_core::Origin,
    on_delta: OnDelta<'_>,
) -> Result<hermes_core::Reply, hermes_core::transport::TransportError> {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = text
        .as_bytes()
        .chunks(size)
        .map(|c| Ok(c.to_vec()))
        .collect();
    crate::native::sse::read_sse(
        futures_util::stream::iter(pieces),
        turn,
        origin,
        on_delta,
        |e, _| hermes_core::transport::TransportError::Stream(e.to_string()),
    )
    .await
}
