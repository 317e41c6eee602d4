//! Live conformance: drive a route through a real wire (any `Transport`, normally HTTP to a
//! strict simulator) — a 3-step tool loop, then a follow-up user turn — and check what the
//! server received.

use std::collections::BTreeSet;

use hermes_core::{
    Carrier, CarrierSet, ChatRequest, Message, Origin, Role, RouteDecision, ThinkingRequest,
    Transport, Verdicts,
};
use serde_json::Value;

/// The user message that asks the scripted model for three sequential tool calls.
pub const TOOL_LOOP_PROMPT: &str = "[tools=3] what time is it, three times?";
/// Requests a full run sends: three tool steps, the answer, the follow-up.
pub const EXPECTED_REQUESTS: usize = 5;

/// Private native fields a route must replay on every assistant message that has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeCheck {
    /// None expected.
    None,
    /// Gemini: the first tool call of each tool-call turn carries `extra_content`, and each text
    /// turn carries message-level `extra_content`.
    Gemini,
    /// Copilot: every assistant message carries `reasoning_opaque` and `reasoning_text`.
    Copilot,
}

/// What a live run stored.
#[derive(Clone, Debug)]
pub struct LiveRun {
    /// The history, as the driver would store it.
    pub history: Vec<Message>,
    /// Requests sent.
    pub requests: usize,
}

fn tool_result(call_id: &str) -> Message {
    let mut msg = Message::text(Role::Tool, "12:00");
    msg.tool_call_id = Some(call_id.to_owned());
    msg
}

/// Drives the tool loop and the follow-up through `transport` for `decision`.
pub async fn drive_tool_loop(
    transport: &dyn Transport,
    decision: &RouteDecision,
    stream: bool,
) -> Result<LiveRun, String> {
    let target = &decision.target;
    let origin = Origin {
        provider: target.provider.clone(),
        host: target.host_key(),
        model: target.model.clone(),
    };
    let mut history = vec![Message::text(Role::User, TOOL_LOOP_PROMPT)];
    let mut requests = 0;
    for turn in 0..2 {
        if turn == 1 {
            history.push(Message::text(Role::User, "thanks, and in one sentence?"));
        }
        loop {
            if requests > 10 {
                return Err("the tool loop did not end after 10 requests".to_owned());
            }
            let mut request = ChatRequest::build(
                &history,
                decision,
                &Verdicts::default(),
                ThinkingRequest::NoPreference,
            );
            request.stream = stream;
            requests += 1;
            let reply = transport
                .send(&request, origin.clone())
                .await
                .map_err(|e| format!("request {requests} failed: {e}"))?;
            let calls: Vec<String> = reply
                .message
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.clone())
                .collect();
            history.push(reply.message);
            if calls.is_empty() {
                break;
            }
            history.extend(calls.iter().map(|id| tool_result(id)));
        }
    }
    Ok(LiveRun { history, requests })
}

fn carrier_keys(msg: &Value) -> BTreeSet<&'static str> {
    Carrier::ALL
        .into_iter()
        .map(Carrier::field)
        .filter(|f| msg.get(*f).is_some())
        .collect()
}

fn check_native(check: NativeCheck, msg: &Value) -> Result<(), String> {
    match check {
        NativeCheck::None => Ok(()),
        NativeCheck::Copilot => {
            for key in ["reasoning_opaque", "reasoning_text"] {
                if msg.get(key).is_none() {
                    return Err(format!("no `{key}` replayed"));
                }
            }
            Ok(())
        }
        NativeCheck::Gemini => {
            let calls = msg.get("tool_calls").and_then(Value::as_array);
            match calls.and_then(|c| c.first()) {
                Some(first)
                    if first
                        .pointer("/extra_content/google/thought_signature")
                        .is_none() =>
                {
                    Err("the first tool call has no thought signature".to_owned())
                }
                Some(_) => Ok(()),
                None if msg
                    .pointer("/extra_content/google/thought_signature")
                    .is_none() =>
                {
                    Err("the text turn has no message-level thought signature".to_owned())
                }
                None => Ok(()),
            }
        }
    }
}

/// Checks what the server received: `requests` requests, each accepted (status 200), every
/// assistant message carrying exactly `carriers` and the native fields of `native`.
pub fn check_received(
    received: &[(u16, Value)],
    requests: usize,
    carriers: CarrierSet,
    native: NativeCheck,
) -> Result<(), String> {
    if received.len() != requests {
        return Err(format!(
            "the server saw {} requests, {requests} were sent",
            received.len()
        ));
    }
    if requests != EXPECTED_REQUESTS {
        return Err(format!(
            "expected {EXPECTED_REQUESTS} requests (3 tool steps, the answer, the follow-up), sent {requests}"
        ));
    }
    let want: BTreeSet<&'static str> = carriers.iter().map(Carrier::field).collect();
    for (i, (status, body)) in received.iter().enumerate() {
        if *status != 200 {
            return Err(format!("request {} refused with {status}", i + 1));
        }
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (j, m) in messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m["role"] == "assistant")
        {
            let got = carrier_keys(m);
            if got != want {
                return Err(format!(
                    "request {} message {j} carried {got:?}, the route declares {want:?}",
                    i + 1
                ));
            }
            check_native(native, m).map_err(|e| format!("request {} message {j}: {e}", i + 1))?;
        }
    }
    Ok(())
}
