//! Live conformance: drive a route through a real wire (any `Wire`, normally HTTP to a strict
//! simulator) with the turn driver itself — a 3-step tool loop, then a follow-up user turn — and
//! check what the server received.

use std::collections::BTreeSet;

use hermes_core::driver::{Conversation, Driver, DriverConfig, MemoryLog, Tools};
use hermes_core::{Carrier, CarrierSet, Message, Role, RouteDecision, Wire};
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

/// Every tool answers the time.
struct Clock;

#[async_trait::async_trait]
impl Tools for Clock {
    async fn call(&self, _: &str, _: &str) -> String {
        "12:00".to_owned()
    }
}

/// Drives the tool loop and the follow-up through `wire` for `decision`, with the turn driver
/// itself (negotiation, creation rules and tool loop included) over an in-memory log.
pub async fn drive_tool_loop(
    wire: &dyn Wire,
    decision: &RouteDecision,
    stream: bool,
) -> Result<LiveRun, String> {
    let log = MemoryLog::default();
    let mut config = DriverConfig::default();
    config.stream = stream;
    config.max_steps = 10;
    config.base_delay = std::time::Duration::from_millis(10);
    let driver = Driver {
        decision,
        wire,
        log: &log,
        tools: &Clock,
        config: &config,
        notify: &|_| {},
    };
    let mut conversation = Conversation::default();
    let mut requests = 0;
    for text in [TOOL_LOOP_PROMPT, "thanks, and in one sentence?"] {
        let outcome = driver
            .run_turn(&mut conversation, Message::text(Role::User, text))
            .await
            .map_err(|e| format!("request {} failed: {e}", requests + 1))?;
        requests += outcome.requests;
    }
    Ok(LiveRun {
        history: conversation.messages,
        requests,
    })
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

/// One request a loopback server received, and the carriers its reply minted: what
/// [`check_exchanges`] reads, for any wire (its server records them in its own terms).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The status the server answered.
    pub status: u16,
    /// The request body, exactly as received.
    pub body: String,
    /// Each carrier the reply minted (a signed thought, an encrypted item…), exactly as the
    /// server wrote it into the reply's bytes; none for a refusal.
    pub minted: Vec<String>,
}

/// Checks a live run of any wire (driven by [`drive_tool_loop`], `requests` requests sent)
/// against what its server saw, in order:
/// - the server saw every request sent, and the last one was accepted;
/// - every carrier an accepted reply minted comes back byte for byte in every later request
///   (the wire replays it as the exact text the server wrote, never re-serialised);
/// - each field of `refused` (fields the server does not take) was sent, refused once (a 4xx),
///   and after that refusal the very next request is the one retry, accepted, and no later
///   request carries the field (as a JSON member, `"field":`): the wire honoured its verdict.
pub fn check_exchanges(
    exchanges: &[Exchange],
    requests: usize,
    refused: &[&str],
) -> Result<(), String> {
    if exchanges.len() != requests {
        return Err(format!(
            "the server saw {} requests, {requests} were sent",
            exchanges.len()
        ));
    }
    match exchanges.last() {
        None => return Err("the server saw no request".to_owned()),
        Some(last) if last.status != 200 => {
            return Err(format!("the last request was answered {}", last.status));
        }
        Some(_) => {}
    }
    for (i, earlier) in exchanges.iter().enumerate() {
        for carrier in &earlier.minted {
            if let Some((j, _)) = exchanges
                .iter()
                .enumerate()
                .skip(i + 1)
                .find(|(_, later)| !later.body.contains(carrier.as_str()))
            {
                return Err(format!(
                    "request {} does not carry, byte for byte, the carrier reply {} minted: {carrier}",
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    for field in refused {
        let member = format!("\"{field}\":");
        let Some(at) = exchanges
            .iter()
            .position(|e| (400..500).contains(&e.status) && e.body.contains(&member))
        else {
            return Err(format!(
                "no request carrying `{field}` was refused: the negotiation was not exercised"
            ));
        };
        match exchanges.get(at + 1) {
            Some(retry) if retry.status == 200 => {}
            Some(retry) => {
                return Err(format!(
                    "the one retry after `{field}` was refused (request {}) was answered {}",
                    at + 2,
                    retry.status
                ));
            }
            None => return Err(format!("`{field}` was refused and never retried")),
        }
        if let Some(j) = exchanges
            .iter()
            .skip(at + 1)
            .position(|e| e.body.contains(&member))
        {
            return Err(format!(
                "request {} still carries `{field}` after it was refused",
                at + 2 + j
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Exchange, check_exchanges};

    /// A case: its name, what the server saw, the requests sent, the refused fields and the
    /// start of the error wanted (none: the run passes).
    type Row<'a> = (
        &'a str,
        Vec<Exchange>,
        usize,
        &'a [&'a str],
        Option<&'a str>,
    );

    fn ex(status: u16, body: &str, minted: &[&str]) -> Exchange {
        Exchange {
            status,
            body: body.to_owned(),
            minted: minted.iter().map(|m| (*m).to_owned()).collect(),
        }
    }

    #[test]
    fn replayed_carriers_and_a_refused_field_are_checked_on_what_the_server_saw() {
        let t1 = r#"{ "sig":"a\/1" }"#;
        let refused = ex(400, r#"{"thinking":"auto","turns":[]}"#, &[]);
        let first = ex(200, r#"{"turns":[]}"#, &[t1]);
        let replayed = ex(200, &format!(r#"{{"turns":[{{"thought":{t1}}}]}}"#), &[]);
        let reserialised = ex(200, r#"{"turns":[{"thought":{"sig":"a/1"}}]}"#, &[]);
        let again = ex(
            200,
            &format!(r#"{{"thinking":"auto","thought":{t1}}}"#),
            &[],
        );
        let rows: [Row<'_>; 6] = [
            (
                "negotiated and replayed",
                vec![refused.clone(), first.clone(), replayed.clone()],
                3,
                &["thinking"],
                None,
            ),
            (
                "a carrier re-serialised",
                vec![first.clone(), reserialised],
                2,
                &[],
                Some("request 2 does not carry, byte for byte, the carrier reply 1 minted"),
            ),
            (
                "the field sent again after its refusal",
                vec![refused.clone(), first.clone(), again],
                3,
                &["thinking"],
                Some("request 3 still carries `thinking` after it was refused"),
            ),
            (
                "no refusal to prove the negotiation",
                vec![first.clone(), replayed.clone()],
                2,
                &["thinking"],
                Some("no request carrying `thinking` was refused"),
            ),
            (
                "a request the server never saw",
                vec![first.clone()],
                2,
                &[],
                Some("the server saw 1 requests, 2 were sent"),
            ),
            (
                "a refusal retried into another refusal",
                vec![refused.clone(), refused],
                2,
                &["thinking"],
                Some("the last request was answered 400"),
            ),
        ];
        for (name, exchanges, requests, fields, want) in rows {
            let got = check_exchanges(&exchanges, requests, fields);
            match (want, got) {
                (None, Ok(())) => {}
                (Some(want), Err(e)) => assert!(e.starts_with(want), "{name}: {e}"),
                (want, got) => panic!("{name}: wanted {want:?}, got {got:?}"),
            }
        }
    }
}
