//! What the per-wire end-to-end modules share: the arguments of a thinking turn, a `chat --json`
//! summary, what a simulator recorded, and the stored `reasoning_details` of an export.

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

// ---------------------------------------------------------------------------------------------
// Arguments and the `chat --json` summary

/// Appends `--effort high -q QUERY`, and `--no-stream` unless `stream`.
pub(crate) fn turn_args<'a>(args: &mut Vec<&'a str>, stream: bool, query: &'a str) {
    args.extend(["--effort", "high", "-q", query]);
    if !stream {
        args.push("--no-stream");
    }
}

/// The arguments of one more thinking turn of session `id`.
pub(crate) fn resume_args<'a>(id: &'a str, stream: bool, query: &'a str) -> Vec<&'a str> {
    let mut args = vec!["--resume", id];
    turn_args(&mut args, stream, query);
    args
}

/// The session id of a `chat --json` summary.
pub(crate) fn session_id(out: &Value) -> String {
    out["session_id"].as_str().unwrap().to_owned()
}

/// A finished loop of `steps` tool steps in `requests` requests.
pub(crate) fn loop_done(out: &Value, steps: usize, requests: usize) {
    assert_eq!(out["requests"], requests, "{out}");
    let reply = out["reply"].as_str().unwrap();
    assert!(
        reply.starts_with(&format!("Done after {steps} tool")),
        "{out}"
    );
}

/// Resumes session `id` with `--effort high -q "and now?"` and `env` while `sim` refuses a
/// stored block once: stderr, the refusal's JSON error and the two requests, the refused one
/// (answered 400) and the resend (answered 200, its reply the answer).
pub(crate) async fn refused_then_resent(
    home: &Home,
    sim: &Sim,
    id: &str,
    env: &[(&str, &str)],
) -> (String, Value, Vec<RecordedRequest>) {
    sim.clear_requests();
    let (out, stderr) = home
        .chat_stderr(&["--resume", id, "--effort", "high", "-q", "and now?"], env)
        .await;
    assert_eq!(out["session_id"], id);
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "one refusal, one resend");
    assert_eq!(requests[0].status, 400, "{}", requests[0].response);
    assert_eq!(requests[1].status, 200, "{}", requests[1].response);
    // The resend answered the question.
    assert!(
        out["reply"]
            .as_str()
            .unwrap()
            .contains("You said: and now?"),
        "{out}"
    );
    let error: Value = serde_json::from_str(&requests[0].response).unwrap();
    (stderr, error, requests)
}

// ---------------------------------------------------------------------------------------------
// What a simulator recorded

/// The request's bytes as sent.
pub(crate) fn raw(r: &RecordedRequest) -> String {
    String::from_utf8(r.raw.clone()).unwrap()
}

/// The value of the request's header `name` (recorded lower-case).
pub(crate) fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(h, _)| h == name)
        .map(|(_, v)| v.as_str())
}

/// Every request was answered 200.
pub(crate) fn all_ok(requests: &[RecordedRequest]) {
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(r.status, 200, "request {i} to {}: {}", r.path, r.response);
    }
}

/// The signatures of the `thinking` blocks of each assistant message of an Anthropic body.
pub(crate) fn sent_signatures(r: &RecordedRequest) -> Vec<Vec<String>> {
    crate::support::assistants(&r.body)
        .map(|m| {
            m["content"]
                .as_array()
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter(|b| b["type"] == "thinking")
                        .map(|b| b["signature"].as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Stored blocks, as exported

#[derive(Deserialize)]
struct Exported {
    messages: Vec<ExportedMessage>,
}

#[derive(Deserialize)]
struct ExportedMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning_details: Option<Vec<Box<RawValue>>>,
    #[serde(default)]
    origin: Option<Value>,
}

crate::tool_loop::stored_turn!(Turn, turns);

/// An assistant message of an export: its origin model, the exact text of each stored
/// `reasoning_details` item, and its `reasoning_content`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Turn {
    /// The model that wrote it (`origin.model`).
    pub(crate) model: String,
    /// Each stored `reasoning_details` item, byte for byte.
    pub(crate) items: Vec<String>,
    /// The stored `reasoning_content`.
    pub(crate) reasoning_content: Option<String>,
}

impl Turn {
    /// `(kind, thinking text, signature)` of each stored item.
    pub(crate) fn parsed(&self) -> Vec<(String, String, Option<String>)> {
        self.items
            .iter()
            .map(|i| {
                let v: Value = serde_json::from_str(i).unwrap();
                (
                    v["type"].as_str().unwrap().to_owned(),
                    v["thinking"].as_str().unwrap_or_default().to_owned(),
                    v["signature"].as_str().map(str::to_owned),
                )
            })
            .collect()
    }

    /// The signatures of the items that carry one.
    pub(crate) fn signatures(&self) -> Vec<String> {
        self.parsed()
            .into_iter()
            .filter_map(|(_, _, s)| s)
            .collect()
    }

    /// The signature of each item, every one a signed `thinking` block.
    pub(crate) fn thinking_signatures(&self) -> Vec<String> {
        self.parsed()
            .into_iter()
            .map(|(kind, _, signature)| {
                assert_eq!(kind, "thinking", "{self:?}");
                signature.unwrap()
            })
            .collect()
    }
}

/// The messages of an export with `role`, in order.
fn of_role(export: &str, role: &'static str) -> impl Iterator<Item = ExportedMessage> {
    let exported: Exported = serde_json::from_str(export).unwrap();
    exported
        .messages
        .into_iter()
        .filter(move |m| m.role == role)
}

/// The assistant messages of an export, in order.
pub(crate) fn turns(export: &str) -> Vec<Turn> {
    of_role(export, "assistant")
        .map(|m| Turn {
            model: m
                .origin
                .as_ref()
                .and_then(|o| o["model"].as_str())
                .unwrap_or_default()
                .to_owned(),
            items: m
                .reasoning_details
                .unwrap_or_default()
                .iter()
                .map(|i| i.get().to_owned())
                .collect(),
            reasoning_content: m.reasoning_content,
        })
        .collect()
}

/// The user texts of an export, in order (a checkpoint included).
pub(crate) fn user_texts(export: &str) -> Vec<String> {
    of_role(export, "user")
        .map(|m| {
            m.content
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A session continued on DeepSeek

/// The question a session continued on DeepSeek asks: one tool call.
pub(crate) const ON_DEEPSEEK: &str = "[tools=1] on deepseek?";

/// A DeepSeek key, for a session continued on DeepSeek.
pub(crate) const DEEPSEEK_KEY: &[(&str, &str)] = &[("DEEPSEEK_API_KEY", "sk-deepseek-test")];

/// Continues session `id` on the DeepSeek simulator `deepseek` with `query` (one tool call, so
/// two requests) and `env`: the route is DeepSeek's and every request was accepted. Returns the
/// requests, for what each wire must not have left behind.
pub(crate) async fn continue_on_deepseek(
    home: &Home,
    id: &str,
    deepseek: &Sim,
    query: &str,
    env: &[(&str, &str)],
    leaks: (&[&str], &[String]),
) -> Vec<RecordedRequest> {
    let out = home
        .chat(&on_deepseek(id, &deepseek.base_url(), query), env)
        .await;
    assert_eq!(out["route"], "deepseek");
    let requests = deepseek.requests();
    assert_eq!(requests.len(), 2);
    all_ok(&requests);
    for r in &requests {
        carries_none(r, leaks.0, leaks.1);
    }
    requests
}

/// After a one-tool-step turn: the session's stored turns begin with `kept` (unchanged), and
/// `sim` saw the turn's two requests, which it returns.
pub(crate) fn kept_then_two<T: PartialEq + std::fmt::Debug>(
    stored: &[T],
    kept: &[T],
    sim: &Sim,
) -> Vec<RecordedRequest> {
    assert_eq!(stored[..kept.len()], kept[..]);
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    requests
}

/// The arguments continuing session `id` on DeepSeek (`deepseek-v4-pro` at `base`) with `query`.
pub(crate) fn on_deepseek<'a>(id: &'a str, base: &'a str, query: &'a str) -> Vec<&'a str> {
    [
        &["--resume", id][..],
        &crate::support::deepseek_at(base, &["-q", query]),
    ]
    .concat()
}

/// Neither the bytes of `r` as sent nor its body re-serialised compactly hold any of `forbidden`
/// (the keys and markers of another wire) or any of `minted` (what another wire minted).
pub(crate) fn carries_none(r: &RecordedRequest, forbidden: &[&str], minted: &[String]) {
    let text = format!("{}\n{}", raw(r), r.body);
    for forbidden in forbidden {
        assert!(!text.contains(forbidden), "{forbidden} in {text}");
    }
    for secret in minted {
        assert!(!text.contains(secret.as_str()), "{secret} in {text}");
    }
}
