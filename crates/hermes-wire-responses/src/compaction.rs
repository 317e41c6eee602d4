//! Provider-native compaction on the OpenAI Responses wire (docs/spec.md §7, issue 46).
//!
//! Two ways, both from OpenAI's compaction guide (developers.openai.com/api/docs/guides/
//! compaction) and the pinned openai-python 3.57.0 types (`types/responses/
//! response_compact_params.py`, `compacted_response.py`, `response_compaction_item.py`,
//! `response_configuration_update_item.py`, `response_create_params.py` `ContextManagement`):
//! - **Standalone**: `POST {base}/responses/compact` with `model`, `input` and `instructions`
//!   answers a `response.compaction` object whose `output` is "a list of all user messages,
//!   followed by a single compaction item" (developers.openai.com/api/reference, "Compact a
//!   response"). The engine asks for it with [`request`]; the wire sends it to
//!   [`compact_url`] and [`capture`] keeps the `compaction` item verbatim as the checkpoint's
//!   carrier (its `reasoning_details`), beside hermes' own summary for every other model
//!   ([`hermes_core::checkpoint::SUMMARY_KEY`]).
//! - **Server-side**: `context_management: [{"type": "compaction", "compact_threshold": N}]` on
//!   an ordinary request ("When the rendered token count crosses the configured threshold, the
//!   server runs server-side compaction … The response stream includes the encrypted compaction
//!   item"). Config or a client asks for it ([`threshold_field`]); the item arrives among the
//!   reply's output items and is stored with them, verbatim (`codex_message_items`).
//!
//! Replay ([`super::body`]): a compaction item goes only to the provider, model
//! ([`hermes_providers::native::stored::own`]) and account ([`ACCOUNT_KEY`]) that minted it, and the input
//! starts at the latest one sent ("you can drop items that came before the most recent
//! compaction item … The latest compaction item carries the necessary context"): every item
//! before it is left out, except a `configuration_update` item (kept, in order). Anywhere else a
//! standalone checkpoint is hermes' own checkpoint of its summary, and a server-side item is
//! left out (the turns it stood for are all still in the history).

use hermes_core::transport::ReplyMeta;
use hermes_core::{
    DetailItem, Message, NativeCompaction, Origin, Passthrough, RawJson, Role, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use hermes_providers::native::reply::{CaptureError, malformed};

pub use hermes_core::checkpoint::ACCOUNT_KEY;

/// The passthrough marker ([`request`]) that turns a request into `POST /responses/compact`.
/// Never sent.
pub const COMPACT_MARKER: &str = "hermes_responses_compact";

/// The request field of server-side compaction.
pub const CONTEXT_MANAGEMENT: &str = "context_management";

/// The type of a compaction item.
pub const COMPACTION_ITEM: &str = "compaction";

/// The type of an item kept before the latest compaction item.
pub const CONFIGURATION_UPDATE: &str = "configuration_update";

/// OpenAI's standalone compaction as the engine runs it on OpenAI's own API
/// ([`crate::ResponsesWire`]'s `native_compaction`): the request's own passthrough marked for
/// `POST /responses/compact` ([`request`]), never streamed; every turn asks past a threshold
/// ([`threshold_field`]); hermes' own summary is stored beside the reply's `compaction` item.
pub const NATIVE: NativeCompaction = NativeCompaction {
    request: request_for,
    threshold: threshold_for,
    streams: false,
    with_summary: true,
    what: "item",
    how: "POST /responses/compact",
    keeps: "reasoning",
    // The item is stored as it came.
    finish: |_, _, _, _, _| {},
};

/// `passthrough` marked for `POST /responses/compact` ([`request`]).
fn request_for(passthrough: &Passthrough) -> Passthrough {
    let mut p = passthrough.clone();
    p.fields.extend(request().fields);
    p
}

/// What every turn passes to have OpenAI compact past `threshold` tokens ([`threshold_field`]).
fn threshold_for(threshold: u64) -> Passthrough {
    let mut p = Passthrough::new();
    p.fields.push(threshold_field(threshold));
    p
}

/// What a request adds to be sent as `POST {base}/responses/compact` (the Responses wire reads
/// the marker; no other wire is given it).
pub fn request() -> Passthrough {
    let mut p = Passthrough::new();
    p.fields.push((
        COMPACT_MARKER.to_owned(),
        RawJson::from_text("true".to_owned()).unwrap_or_else(|_| unreachable!("a JSON literal")),
    ));
    p
}

/// `context_management: [{"type": "compaction", "compact_threshold": threshold}]`, as a
/// passthrough field.
pub fn threshold_field(threshold: u64) -> (String, RawJson) {
    let raw = format!(r#"[{{"type":"compaction","compact_threshold":{threshold}}}]"#);
    (
        CONTEXT_MANAGEMENT.to_owned(),
        RawJson::from_text(raw).unwrap_or_else(|_| unreachable!("a JSON literal")),
    )
}

/// Whether `parts` ask for a standalone compaction ([`request`]).
pub(crate) fn asked(passthrough: &Passthrough) -> bool {
    passthrough.fields.iter().any(|(k, _)| k == COMPACT_MARKER)
}

/// The `context_management` a request forwards: the passthrough's, when it is the Responses
/// shape (a list of `{"type": "compaction", …}` entries; Anthropic's `{"edits": […]}` object is
/// not this wire's).
pub(crate) fn forwarded(passthrough: &Passthrough) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct Entry<'a> {
        #[serde(rename = "type", borrow)]
        kind: &'a str,
    }
    let (_, raw) = passthrough
        .fields
        .iter()
        .rfind(|(k, _)| k == CONTEXT_MANAGEMENT)?;
    let entries: Vec<Entry<'_>> = serde_json::from_str(raw.get()).ok()?;
    (!entries.is_empty() && entries.iter().all(|e| e.kind == COMPACTION_ITEM))
        .then_some(raw.as_raw())
}

/// `{base}/responses/compact`.
pub fn compact_url(base: &str) -> String {
    format!("{}/responses/compact", base.trim_end_matches('/'))
}

/// The account a compaction reply was stamped with.
pub(crate) fn stored_account(msg: &Message) -> Option<String> {
    msg.extra
        .iter()
        .find(|(k, _)| k == ACCOUNT_KEY)
        .and_then(|(_, v)| v.as_str().map(|s| s.into_owned()))
}

/// Whether a compaction item `msg` carries may go to the target: the minter's provider and
/// model ([`hermes_providers::native::stored::own`], decided by the caller as `own`) under the same
/// account.
pub(crate) fn issuer(msg: &Message, own: bool, account: Option<&str>) -> bool {
    own && stored_account(msg).as_deref() == account
}

/// Captures a `response.compaction` object: one assistant message whose `reasoning_details`
/// hold the `compaction` item exactly as received (the user messages beside it are the
/// client's own, already stored).
pub(crate) fn capture(body: &str, origin: Origin) -> Result<(Message, ReplyMeta), CaptureError> {
    #[derive(Deserialize)]
    struct Compacted<'a> {
        #[serde(borrow, default)]
        output: Vec<&'a RawValue>,
        #[serde(default)]
        usage: Option<super::capture::UsageBody>,
    }
    #[derive(Deserialize)]
    struct Kind {
        #[serde(rename = "type", default)]
        kind: Option<String>,
    }
    let reply: Compacted<'_> = serde_json::from_str(body).map_err(malformed)?;
    let item = reply
        .output
        .iter()
        .rev()
        .find(|raw| {
            serde_json::from_str::<Kind>(raw.get())
                .is_ok_and(|k| k.kind.as_deref() == Some(COMPACTION_ITEM))
        })
        .ok_or_else(|| malformed("the compaction reply held no compaction item"))?;
    let raw = RawJson::from_text(item.get().to_owned()).map_err(malformed)?;
    let mut msg = Message::text(Role::Assistant, "");
    msg.content = Some(RawJson::null());
    msg.reasoning_details = Some(vec![DetailItem::from_raw(raw).map_err(malformed)?]);
    msg.origin = Some(origin);
    let usage: Option<Usage> = reply.usage.map(|u| u.usage());
    Ok((msg, ReplyMeta::new(None, usage)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_responses_shape_of_context_management_is_forwarded() {
        let mut p = Passthrough::new();
        assert!(forwarded(&p).is_none());
        p.fields.push(threshold_field(1200));
        assert_eq!(
            forwarded(&p).unwrap().get(),
            r#"[{"type":"compaction","compact_threshold":1200}]"#
        );
        let mut anthropic = Passthrough::new();
        anthropic.fields.push((
            CONTEXT_MANAGEMENT.to_owned(),
            RawJson::from_text(r#"{"edits":[{"type":"compact_20260112"}]}"#.to_owned()).unwrap(),
        ));
        assert!(forwarded(&anthropic).is_none());
        assert!(!asked(&p));
        assert!(asked(&request()));
    }

    #[test]
    fn a_compaction_reply_is_captured_as_its_item_verbatim() {
        let body = r#"{"id":"resp_1","object":"response.compaction","created_at":1,"output":[{"type":"message","role":"user","content":"hi"},{"id":"cmp_1","type":"compaction","encrypted_content":"c2Vh\/bGVk"}],"usage":{"input_tokens":10,"output_tokens":3}}"#;
        let origin = Origin {
            provider: "openai-responses".to_owned(),
            host: "api.openai.com".to_owned(),
            model: "gpt-5.2".to_owned(),
        };
        let (msg, meta) = capture(body, origin).unwrap();
        assert_eq!(
            hermes_core::checkpoint::native_compaction(&msg)
                .unwrap()
                .get(),
            r#"{"id":"cmp_1","type":"compaction","encrypted_content":"c2Vh\/bGVk"}"#
        );
        assert_eq!(meta.usage.unwrap().input, 10);
        let other = Origin {
            provider: "p".to_owned(),
            host: "h".to_owned(),
            model: "m".to_owned(),
        };
        assert!(capture(r#"{"output":[]}"#, other).is_err());
    }
}
