//! Gateway chaos (issue 33, `cargo xtask chaos serve`): three real `hermes serve` processes over
//! one PostgreSQL database behind a round-robin front, clients that strip every carrier holding
//! multi-turn tool conversations through both doors (chat completions and Messages, streamed and
//! whole) on the five carrier families, against the strict simulators (DeepSeek
//! `reasoning_content`, OpenRouter `reasoning_details`, Claude signed and redacted thinking,
//! Gemini `thoughtSignature`, Responses `encrypted_content`), their streams slowed so that kills
//! land mid-stream. Meanwhile a replica is SIGKILLed at random (then started again and the front
//! updated), and once the replicas are restarted in turn (taken out of the front, SIGTERM, drained,
//! a new process). A client whose request failed retries the same request, as a real client
//! would, with the same `Idempotency-Key` (one per request: conversation, turn and step, as an
//! SDK keeps one across its retries); the front sends it to the next live replica.
//!
//! What is checked, in the bytes the simulators saw: no upstream refusal of any kind (a strict
//! simulator refuses a missing or altered carrier: "must be passed back", "Invalid signature",
//! "missing thought_signature", "Expected thinking", "invalid_encrypted_content"); every carrier
//! that reached an upstream equals, byte for byte (by SHA-256 of its JSON string literal as
//! written on the wire, escapes kept), one the simulator
//! minted in a reply of the same conversation; none minted for another conversation; no
//! request failed during the rolling restart; every conversation finished.
//!
//! Cross-conversation attachments: conversations come in pairs whose first requests are
//! identical (same model, door, tools and user text): every other pair in two tenants (two
//! gateway keys), the others in one tenant with no partition (`chaos-same`). The
//! simulators are deterministic: identical requests get identical carriers, so an attachment
//! across the pair would be invisible there. The pair diverges where the check can see it: each
//! member's tool results name the member (`cv-…`), and from then on a simulator whose carriers
//! bind what came before them mints different ones for the two members — Claude's signatures
//! bind the conversation prefix while its tool-call ids, what the gateway matches a turn by, are
//! seeded by the user text and step alone, so there both members hold assistant turns the gateway
//! would match alike with different carriers, the very case an attachment needs. A carrier that
//! reached the upstream in one conversation and was minted only in another counts. Where a
//! simulator's carriers depend on the user text and step alone (DeepSeek's, OpenRouter's) the
//! pair's carriers stay equal and an attachment would be harmless; the report gives the carriers
//! that differ within pairs per family, and the test requires Claude's above zero, so the check is
//! not vacuous. Requests are attributed by tag: `cv-…` (tool results and later turns) names one
//! conversation; the pair's shared first request carries only `pr-…` and counts for both members.
//!
//! Same-tenant pairs: nothing but docs/spec.md §10's place keeps the members apart, and their
//! histories are built to tempt it. Both start with the same request, so the same first reply (same
//! text, same tool-call ids); their tool results begin with the same 60 characters, all the
//! scripted model quotes, and carry the member's tag after them, so each turn ends in a stock reply
//! of the same text in both members; later turns diverge by the tag. Checked: no carrier minted in
//! one member reached the upstream in the other (`cross within tenant`, part of `cross`), with
//! Claude's carriers differing within these pairs too (so the check is not vacuous), and in the
//! store no session's view holds both members' messages: a member's session may branch from its
//! partner's only where both sent the same messages (`sessions branched from the partner at the
//! shared prefix` counts those), never after one of the partner's own.
//!
//! Keyed retries: every user text and tool result ends with the question it starts
//! (`ask=` the conversation's tag, turn and step; the pair's shared first one `ask=pr-…`), so an
//! upstream request (the simulators' record) and a stored reply (an assistant row with an
//! origin in a session's own rows, the client message before it naming the question) say which
//! step they belong to. Per question: a reply committed more often than conversations asked it
//! is a **duplicate upstream call** (the step was paid again after it was stored; the goal and
//! the assertion: 0); an upstream request beyond the committed replies is **re-asked after a
//! lost reply** (its replica died before committing, so the retry rightly went upstream again;
//! counted, not refused); a question a client got its answer to with no reply committed for it
//! is a **lost committed step** (asserted 0). A post-commit upstream call whose own reply was
//! lost again would count as re-asked, not duplicate: the count is a lower bound in that case.
//!
//! Also read from the store after the kills: every tool call of a view answered in it, no step
//! stored twice in a view, branches counted, every conversation found. The summary prints all of
//! it; `carriers minted nowhere` (a carrier no simulator minted, or one in a request no single
//! conversation owns) must be 0.
//!
//! Sizes come from the environment: `HERMES_CHAOS_SERVE_CONVERSATIONS` (default 24),
//! `HERMES_CHAOS_SERVE_TURNS` (default 3), `HERMES_CHAOS_SERVE_KILLS` (default 4),
//! `HERMES_CHAOS_SERVE_CLIENTS` (concurrent clients, default 6),
//! `HERMES_CHAOS_SERVE_CHUNK_DELAY_MS` (the simulators' pause between streamed events, default
//! 15). PostgreSQL comes from `HERMES_TEST_PG_URL` (a fresh schema per run); without it the test
//! is skipped, and recorded so, unless `HERMES_REQUIRE_PG` is set, when it fails.

use std::collections::{HashMap, HashSet};
use std::io::BufRead as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_sim::{RecordedRequest, Sim};
use hermes_store::Backend;
use hermes_store::testing::TestDb;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::chaos::{Rng, size};
use crate::serve::{new_key_with, served_address};
use crate::support::bare_command;

/// One carrier family: the simulator profile, the provider it stands in for and the model the
/// clients ask for.
struct Family {
    profile: &'static str,
    provider: &'static str,
    model: &'static str,
    /// `reasoning_effort` at the chat door (the native wires think when asked; relays anyway).
    effort: Option<&'static str>,
    /// The carrier is the readable `reasoning_content` itself (DeepSeek).
    reasoning_content: bool,
    /// Some turns ask for a `redacted_thinking` block besides the signed one (Claude).
    redacted: bool,
}

const FAMILIES: [Family; 5] = [
    Family {
        profile: "deepseek-v4",
        provider: "deepseek",
        model: "deepseek/deepseek-v4-pro",
        effort: None,
        reasoning_content: true,
        redacted: false,
    },
    Family {
        profile: "openrouter",
        provider: "openrouter",
        model: "openrouter/anthropic/claude-sonnet-5",
        effort: None,
        reasoning_content: false,
        redacted: false,
    },
    Family {
        profile: "anthropic",
        provider: "anthropic",
        model: "anthropic/claude-opus-4-6",
        effort: Some("high"),
        reasoning_content: false,
        redacted: true,
    },
    Family {
        profile: "gemini",
        provider: "gemini",
        model: "gemini/gemini-3-pro-preview",
        effort: Some("high"),
        reasoning_content: false,
        redacted: false,
    },
    Family {
        profile: "openai-responses",
        provider: "openai-responses",
        model: "openai-responses/gpt-5.2",
        effort: Some("high"),
        reasoning_content: false,
        redacted: false,
    },
];

/// The environment variable every provider's key is read from (`key_var` in config.toml).
const KEY_VAR: &str = "CHAOS_SIM_KEY";

/// The refusal kinds the report counts, each with the texts the strict simulators answer it in.
const REFUSALS: [(&str, &[&str]); 5] = [
    ("must be passed back", &["must be passed back"]),
    (
        "Invalid signature",
        &["Invalid `signature`", "Invalid signature"],
    ),
    ("missing thought_signature", &["thought_signature"]),
    (
        "Expected thinking",
        &["Expected `thinking`", "Expected thinking"],
    ),
    ("invalid_encrypted_content", &["invalid_encrypted_content"]),
];

/// Keys whose string value is an opaque carrier on some wire: signed thinking and
/// `reasoning_details` signatures, redacted and encrypted `data`, Gemini's signatures, Responses'
/// encrypted items.
const OPAQUE: [&str; 5] = [
    "signature",
    "data",
    "thoughtSignature",
    "thought_signature",
    "encrypted_content",
];

/// A running replica: the `hermes serve` process and where it listens.
struct Replica {
    child: Child,
    addr: SocketAddr,
}

/// Starts `hermes serve` in `home` with `env`; its stderr after the first line is drained by a
/// thread (a full pipe would stall the server).
fn start_replica(home: &Path, env: &[(&str, &str)]) -> Replica {
    let mut child = bare_command(home, &["serve", "--listen", "127.0.0.1:0"], env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let addr = served_address(&mut stderr).parse().unwrap();
    std::thread::spawn(move || for _ in stderr.lines().map_while(Result::ok) {});
    Replica { child, addr }
}

/// The round-robin front: each new client connection goes to the next live replica; one that
/// refuses the connection is skipped.
struct Front {
    slots: Mutex<Vec<Option<SocketAddr>>>,
    next: AtomicUsize,
}

impl Front {
    /// Puts `addr` in `slot` (`None`: the slot gets no connection).
    fn set(&self, slot: usize, addr: Option<SocketAddr>) {
        self.slots.lock().unwrap()[slot] = addr;
    }

    /// Accepts clients on `listener` for as long as the test runs.
    async fn serve(self: Arc<Front>, listener: TcpListener) {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                continue;
            };
            let front = Arc::clone(&self);
            tokio::spawn(async move {
                let n = front.slots.lock().unwrap().len();
                for _ in 0..n {
                    let i = front.next.fetch_add(1, Ordering::Relaxed) % n;
                    let Some(addr) = front.slots.lock().unwrap()[i] else {
                        continue;
                    };
                    if let Ok(mut upstream) = TcpStream::connect(addr).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                        return;
                    }
                }
            });
        }
    }
}

/// What the run counts while it goes.
#[derive(Default)]
struct Tally {
    turns: AtomicUsize,
    requests: AtomicUsize,
    retries: AtomicUsize,
    /// Attempts that failed while the rolling restart was under way, with why.
    rolling_failures: Mutex<Vec<String>>,
    /// Set while the rolling restart is under way.
    rolling: AtomicBool,
    /// Conversations that could not finish, with why.
    failed: Mutex<Vec<String>>,
    /// The questions (`ask=…` without the prefix) a client got its answer to.
    answered: Mutex<HashSet<String>>,
}

/// The SSE events' `data` in `text`, in order.
async fn sse_data(text: &str) -> Vec<String> {
    use eventsource_stream::Eventsource as _;
    use futures_util::StreamExt as _;
    let bytes = text.as_bytes().to_vec();
    futures_util::stream::iter([Ok::<_, std::convert::Infallible>(bytes)])
        .eventsource()
        .filter_map(|event| async move { event.ok().map(|e| e.data) })
        .collect()
        .await
}

/// One HTTP/1.0 POST through the front (a connection of its own, so round robin spreads
/// requests): the status and the body, or why there is none.
async fn post(
    front: SocketAddr,
    path: &str,
    headers: &str,
    body: &str,
) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(front).await.map_err(|e| e.to_string())?;
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: chaos\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stream
        .write_all(body.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), stream.read_to_end(&mut answer))
        .await
        .map_err(|_| "no answer in 120 s".to_owned())?
        .map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no response head: {answer:?}"))?;
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status: {head:?}"))?;
    Ok((status, body.to_owned()))
}

/// An assistant reply as a client keeps it: its text and tool calls (id, name, arguments);
/// nothing else — every carrier is dropped.
#[derive(Default)]
struct Reply {
    text: String,
    calls: Vec<(String, String, String)>,
}

/// A chat-completions reply, whole or streamed; `None` when it did not end properly.
async fn chat_reply(body: &str, stream: bool) -> Option<Reply> {
    let mut reply = Reply::default();
    if !stream {
        let doc: Value = serde_json::from_str(body).ok()?;
        let choice = &doc["choices"][0];
        choice["finish_reason"].as_str()?;
        let message = &choice["message"];
        reply.text = message["content"].as_str().unwrap_or_default().to_owned();
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            reply.calls.push((
                call["id"].as_str()?.to_owned(),
                call["function"]["name"].as_str()?.to_owned(),
                call["function"]["arguments"].as_str()?.to_owned(),
            ));
        }
        return Some(reply);
    }
    let (mut finished, mut done) = (false, false);
    for data in sse_data(body).await {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(&data).ok()?;
        if chunk.get("error").is_some() {
            return None;
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        finished |= choice["finish_reason"].is_string();
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            reply.text.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = usize::try_from(call["index"].as_u64()?).ok()?;
            if reply.calls.len() <= index {
                reply.calls.resize(index + 1, Default::default());
            }
            let slot = &mut reply.calls[index];
            if let Some(id) = call["id"].as_str() {
                slot.0 = id.to_owned();
            }
            if let Some(name) = call["function"]["name"].as_str() {
                slot.1.push_str(name);
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                slot.2.push_str(args);
            }
        }
    }
    (finished && done).then_some(reply)
}

/// A Messages reply, whole or streamed; `None` when it did not end properly. Thinking blocks
/// are dropped, as a client that keeps only text and tool calls does.
async fn messages_reply(body: &str, stream: bool) -> Option<Reply> {
    let mut reply = Reply::default();
    if !stream {
        let doc: Value = serde_json::from_str(body).ok()?;
        doc["stop_reason"].as_str()?;
        for block in doc["content"].as_array()? {
            match block["type"].as_str() {
                Some("text") => reply.text.push_str(block["text"].as_str()?),
                Some("tool_use") => reply.calls.push((
                    block["id"].as_str()?.to_owned(),
                    block["name"].as_str()?.to_owned(),
                    block["input"].to_string(),
                )),
                _ => {}
            }
        }
        return Some(reply);
    }
    let (mut stopped, mut ended) = (false, false);
    let mut calls: HashMap<u64, usize> = HashMap::new();
    for data in sse_data(body).await {
        let event: Value = serde_json::from_str(&data).ok()?;
        match event["type"].as_str() {
            Some("content_block_start") if event["content_block"]["type"] == "tool_use" => {
                let block = &event["content_block"];
                calls.insert(event["index"].as_u64()?, reply.calls.len());
                reply.calls.push((
                    block["id"].as_str()?.to_owned(),
                    block["name"].as_str()?.to_owned(),
                    String::new(),
                ));
            }
            Some("content_block_delta") => {
                let delta = &event["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => reply.text.push_str(delta["text"].as_str()?),
                    Some("input_json_delta") => {
                        let at = *calls.get(&event["index"].as_u64()?)?;
                        reply.calls[at].2.push_str(delta["partial_json"].as_str()?);
                    }
                    _ => {}
                }
            }
            Some("message_delta") => stopped |= event["delta"]["stop_reason"].is_string(),
            Some("message_stop") => ended = true,
            Some("error") => return None,
            _ => {}
        }
    }
    for call in &mut reply.calls {
        if call.2.is_empty() {
            call.2 = "{}".to_owned();
        }
    }
    (stopped && ended).then_some(reply)
}

/// The tenants: a two-tenant pair's members are in the first two, both members of a
/// same-tenant pair in the third.
const TENANTS: [&str; 3] = ["chaos-a", "chaos-b", "chaos-same"];

/// Whether pair `pair` is a same-tenant pair (every other one, so that each family has both
/// kinds once there are ten pairs, and Claude has a same-tenant pair from eight).
fn same_tenant(pair: usize) -> bool {
    pair % 2 == 1
}

/// The tenant (index in [`TENANTS`]) conversation `index` belongs to.
fn tenant_of(index: usize) -> usize {
    if same_tenant(index / 2) { 2 } else { index % 2 }
}

/// One conversation: its family, door, tenant and tags.
struct Conversation {
    index: usize,
    family: &'static Family,
    messages_door: bool,
    key: String,
}

impl Conversation {
    /// Conversation `index`, with its tenant's gateway key from `keys` (one per [`TENANTS`]).
    fn new(index: usize, keys: &[String]) -> Conversation {
        let pair = index / 2;
        Conversation {
            index,
            family: &FAMILIES[pair % FAMILIES.len()],
            messages_door: (pair / FAMILIES.len()) % 2 == 1,
            key: keys[tenant_of(index)].clone(),
        }
    }

    /// The pair it belongs to (its partner is in the other tenant, or in the same one for a
    /// [`same_tenant`] pair).
    fn pair(&self) -> usize {
        self.index / 2
    }

    /// The tag only this conversation's requests carry: `cv-`, the pair's number and the
    /// member's letter.
    fn tag(&self) -> String {
        let member = if self.index.is_multiple_of(2) {
            'a'
        } else {
            'b'
        };
        format!("cv-{:05}{member}", self.pair())
    }

    /// The question (client request) that step `step` of turn `turn` asks: `ask=` then the
    /// conversation's tag (the pair's `pr-` one for the first step, which both members ask
    /// alike), the turn and the step. Every user text and tool result ends with the question it
    /// starts, so an upstream request and a stored reply name theirs ([`asked`]).
    fn ask(&self, turn: usize, step: usize) -> String {
        if turn == 1 && step == 1 {
            format!("ask=pr-{:05}.1.1", self.pair())
        } else {
            format!("ask={}.{turn}.{step}", self.tag())
        }
    }

    /// The user text of turn `turn` (from 1): the first is the pair's, identical in both members.
    fn user_text(&self, turn: usize) -> String {
        let redacted = if self.family.redacted && (self.pair() + turn).is_multiple_of(2) {
            " [redacted]"
        } else {
            ""
        };
        let ask = self.ask(turn, 1);
        if turn == 1 {
            format!(
                "[tools=2] pr-{:05} what time is it?{redacted} {ask}",
                self.pair()
            )
        } else {
            format!(
                "[tools=1] {} turn {turn}: and now?{redacted} {ask}",
                self.tag()
            )
        }
    }

    /// The tool result of step `step` of turn `turn`. A same-tenant pair's results begin with
    /// 60 characters both members share, all the scripted model quotes of them, so the turn's
    /// final reply is a stock one, the same text in both members (the member's tag follows);
    /// a two-tenant pair's begin with the tag.
    fn tool_result(&self, turn: usize, step: usize) -> String {
        let ask = self.ask(turn, step + 1);
        if same_tenant(self.pair()) {
            format!(
                "12:0{step}, the tool says, and that is all that it knows of the time now: {} turn {turn} step {step} {ask}",
                self.tag()
            )
        } else {
            format!("{} turn {turn} step {step}: 12:0{step} {ask}", self.tag())
        }
    }
}

/// The question a request or a message's text asks last (`ask=…`, see [`Conversation::ask`]).
fn asked(text: &str) -> Option<&str> {
    let at = text.rfind("ask=")? + 4;
    let rest = &text[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('.')).filter(|a| !a.is_empty())
}

/// Runs one conversation to its end through the front, retrying a failed request as a client
/// would; the error says why it could not finish.
async fn converse(
    conv: &Conversation,
    front: SocketAddr,
    turns: usize,
    rng: &mut Rng,
    tally: &Tally,
) -> Result<(), String> {
    let family = conv.family;
    let mut history: Vec<Value> = Vec::new();
    for turn in 1..=turns {
        history.push(json!({"role": "user", "content": conv.user_text(turn)}));
        for step in 1.. {
            if step > 8 {
                return Err(format!("turn {turn} did not end after 8 steps"));
            }
            let stream = rng.below(2) == 0;
            let (path, headers, mut body) = if conv.messages_door {
                (
                    "/v1/messages",
                    format!(
                        "x-api-key: {}\r\nanthropic-version: 2023-06-01\r\n",
                        conv.key
                    ),
                    json!({
                        "model": family.model, "max_tokens": 20000,
                        "thinking": {"type": "enabled", "budget_tokens": 16000},
                        "tools": [{"name": "now", "description": "The time",
                                   "input_schema": {"type": "object", "properties": {}}}],
                        "messages": history,
                    }),
                )
            } else {
                let mut body = json!({
                    "model": family.model,
                    "tools": [{"type": "function", "function": {"name": "now",
                        "description": "The time",
                        "parameters": {"type": "object", "properties": {}}}}],
                    "messages": history,
                });
                if let Some(effort) = family.effort {
                    body["reasoning_effort"] = json!(effort);
                }
                (
                    "/v1/chat/completions",
                    format!("Authorization: Bearer {}\r\n", conv.key),
                    body,
                )
            };
            body["stream"] = json!(stream);
            let body = body.to_string();
            // One key per request, the same on each of its retries, as an SDK sends it.
            let headers = format!(
                "{headers}Idempotency-Key: {}-t{turn}-s{step}\r\n",
                conv.tag()
            );
            let reply = send(
                front,
                path,
                &headers,
                &body,
                stream,
                conv.messages_door,
                rng,
                tally,
            )
            .await
            .map_err(|e| format!("turn {turn} step {step}: {e}"))?;
            tally
                .answered
                .lock()
                .unwrap()
                .insert(conv.ask(turn, step)[4..].to_owned());
            let results: Vec<(String, String)> = reply
                .calls
                .iter()
                .map(|(id, _, _)| (id.clone(), conv.tool_result(turn, step)))
                .collect();
            if conv.messages_door {
                let mut content: Vec<Value> = Vec::new();
                if !reply.text.is_empty() {
                    content.push(json!({"type": "text", "text": reply.text}));
                }
                for (id, name, args) in &reply.calls {
                    let input: Value =
                        serde_json::from_str(args).map_err(|e| format!("{args}: {e}"))?;
                    content
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                }
                history.push(json!({"role": "assistant", "content": content}));
                if !results.is_empty() {
                    let blocks: Vec<Value> = results
                        .iter()
                        .map(|(id, text)| json!({"type": "tool_result", "tool_use_id": id, "content": text}))
                        .collect();
                    history.push(json!({"role": "user", "content": blocks}));
                }
            } else {
                let mut message = json!({"role": "assistant", "content": reply.text});
                if !reply.calls.is_empty() {
                    message["tool_calls"] = reply
                        .calls
                        .iter()
                        .map(|(id, name, args)| {
                            json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": args}})
                        })
                        .collect();
                }
                history.push(message);
                for (id, text) in &results {
                    history.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
                }
            }
            if results.is_empty() {
                break;
            }
        }
        tally.turns.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Sends one request until it is answered whole: a connection that fails, a reply cut short, a
/// 5xx, a 409 or a 429 is retried (the front sends it to another replica); another status is
/// the conversation's end.
#[allow(clippy::too_many_arguments)]
async fn send(
    front: SocketAddr,
    path: &str,
    headers: &str,
    body: &str,
    stream: bool,
    messages_door: bool,
    rng: &mut Rng,
    tally: &Tally,
) -> Result<Reply, String> {
    tally.requests.fetch_add(1, Ordering::Relaxed);
    let mut last = String::new();
    for attempt in 0..40 {
        if attempt > 0 {
            tally.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(50 + rng.below(200))).await;
        }
        let answer = post(front, path, headers, body).await;
        let reply = match &answer {
            Ok((200, text)) if messages_door => messages_reply(text, stream).await,
            Ok((200, text)) => chat_reply(text, stream).await,
            _ => None,
        };
        if let Some(reply) = reply {
            return Ok(reply);
        }
        let why = match answer {
            Ok((status, text))
                if (400..500).contains(&status) && status != 409 && status != 429 =>
            {
                return Err(format!("{status}: {text}"));
            }
            Ok((status, text)) => {
                let tail: String = text.chars().rev().take(300).collect();
                let tail: String = tail.chars().rev().collect();
                format!("{status}, {} bytes, ending: {tail}", text.len())
            }
            Err(e) => e,
        };
        // Failures seen while the rolling restart runs are its own: kills wait for it, and
        // a kill's failures are seen as its replica dies.
        if tally.rolling.load(Ordering::SeqCst) {
            tally.rolling_failures.lock().unwrap().push(why.clone());
        }
        last = why;
    }
    Err(format!("no answer after 40 attempts; the last: {last}"))
}

/// The replicas, the front and how to start another.
struct Fleet {
    replicas: Vec<Replica>,
    homes: Vec<hermes_test_support::home::Home>,
    env: Vec<(String, String)>,
    front: Arc<Front>,
}

impl Fleet {
    /// A new process in `slot`, then the front sends it connections.
    async fn start(&mut self, slot: usize) {
        let home = self.homes[slot].path().to_owned();
        let env = self.env.clone();
        let replica = tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            start_replica(&home, &env)
        })
        .await
        .unwrap();
        self.front.set(slot, Some(replica.addr));
        if slot < self.replicas.len() {
            self.replicas[slot] = replica;
        } else {
            self.replicas.push(replica);
        }
    }

    /// SIGKILL, then the front learns it, then a new process takes the slot.
    async fn kill(&mut self, slot: usize) {
        self.replicas[slot].child.kill().unwrap();
        self.replicas[slot].child.wait().unwrap();
        self.front.set(slot, None);
        self.start(slot).await;
    }

    /// Out of the front, SIGTERM, drained (the process exits once its requests are answered),
    /// then a new process in the slot.
    async fn roll(&mut self, slot: usize) {
        self.front.set(slot, None);
        // A connection the front had just handed over is accepted before the listener closes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let pid = rustix::process::Pid::from_child(&self.replicas[slot].child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = loop {
            if let Some(status) = self.replicas[slot].child.try_wait().unwrap() {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(
            status.success(),
            "a replica drained on SIGTERM exits cleanly: {status:?}"
        );
        self.start(slot).await;
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for replica in &mut self.replicas {
            let _ = replica.child.kill();
            let _ = replica.child.wait();
        }
    }
}

/// SHA-256 of a carrier's bytes.
fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The bytes of a JSON string literal as they stand on the wire, between its quotes (escapes
/// kept as written); `None` when `raw` is no string or holds only whitespace.
fn literal(raw: &RawValue) -> Option<&str> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    let decoded: String = serde_json::from_str(text).ok()?;
    (!decoded.trim().is_empty()).then_some(inner)
}

/// The value of `key` in the JSON object `raw`, as written.
fn raw_field<'a>(raw: &'a str, key: &str) -> Option<&'a RawValue> {
    let map: std::collections::BTreeMap<String, &'a RawValue> = serde_json::from_str(raw).ok()?;
    map.get(key).copied()
}

/// Every opaque carrier in the JSON text `raw`, and its `reasoning_content` when `readable`:
/// the SHA-256 of each one's bytes as written on the wire (never a decoded string, so a carrier
/// re-escaped on its way back does not count as the one minted).
fn carriers_in(raw: &str, readable: bool, out: &mut Vec<[u8; 32]>) {
    let trimmed = raw.trim_start();
    if trimmed.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(raw).unwrap_or_default();
        for item in items {
            carriers_in(item.get(), readable, out);
        }
    } else if trimmed.starts_with('{') {
        let map: std::collections::BTreeMap<String, &RawValue> =
            serde_json::from_str(raw).unwrap_or_default();
        for (key, value) in map {
            if (OPAQUE.contains(&key.as_str()) || (readable && key == "reasoning_content"))
                && let Some(bytes) = literal(value)
            {
                out.push(digest(bytes.as_bytes()));
                continue;
            }
            carriers_in(value.get(), readable, out);
        }
    }
}

/// The carriers a simulator minted in its answer to `request`, as bytes on the wire: from the
/// whole reply, or from each streamed event (DeepSeek's streamed `reasoning_content` pieces
/// joined, as written, into one).
async fn minted(request: &RecordedRequest, family: &Family) -> Vec<[u8; 32]> {
    let mut out = Vec::new();
    if serde_json::from_str::<&RawValue>(&request.response).is_ok() {
        carriers_in(&request.response, family.reasoning_content, &mut out);
        return out;
    }
    let mut reasoning = String::new();
    for data in sse_data(&request.response).await {
        if serde_json::from_str::<&RawValue>(&data).is_err() {
            continue;
        }
        carriers_in(&data, false, &mut out);
        let piece = raw_field(&data, "choices")
            .and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok())
            .and_then(|c| c.first().copied())
            .and_then(|c| raw_field(c.get(), "delta"))
            .and_then(|d| raw_field(d.get(), "reasoning_content"))
            .and_then(|r| r.get().strip_prefix('"')?.strip_suffix('"'));
        if let Some(piece) = piece {
            reasoning.push_str(piece);
        }
    }
    if family.reasoning_content
        && serde_json::from_str::<String>(&format!("\"{reasoning}\""))
            .is_ok_and(|t| !t.trim().is_empty())
    {
        out.push(digest(reasoning.as_bytes()));
    }
    out
}

/// The conversations a request belongs to: the one whose `cv-` tag it carries, else both
/// members of the pair whose `pr-` tag it carries.
fn owners(raw: &str) -> Vec<usize> {
    let tags = |prefix: &str, len: usize| -> HashSet<String> {
        raw.match_indices(prefix)
            .filter_map(|(at, _)| raw.get(at + prefix.len()..at + prefix.len() + len))
            .map(str::to_owned)
            .collect()
    };
    let own = tags("cv-", 6);
    if !own.is_empty() {
        return own
            .iter()
            .filter_map(|t| {
                let pair: usize = t[..5].parse().ok()?;
                Some(pair * 2 + usize::from(t.ends_with('b')))
            })
            .collect();
    }
    tags("pr-", 5)
        .iter()
        .filter_map(|t| t.parse::<usize>().ok())
        .flat_map(|pair| [pair * 2, pair * 2 + 1])
        .collect()
}

/// What the simulators saw, summed up.
#[derive(Default, Debug)]
struct Audit {
    upstream_requests: usize,
    refusals: HashMap<&'static str, usize>,
    other_4xx: Vec<String>,
    notes: Vec<String>,
    restores: usize,
    exact: usize,
    cross: usize,
    unknown: usize,
    restoring_conversations: usize,
    /// Claude's `redacted_thinking` blocks that went back upstream.
    redacted_back: usize,
    /// Carriers minted for one member of a pair and not the other, by family profile: of
    /// two-tenant pairs, and of same-tenant pairs.
    pair_divergent: HashMap<&'static str, usize>,
    same_tenant_divergent: HashMap<&'static str, usize>,
    /// Of `cross`, carriers minted in another conversation of the same tenant.
    cross_within_tenant: usize,
    /// Upstream requests answered (status below 400) per question they ask (`ask=…`).
    asked: HashMap<String, usize>,
    /// Answered upstream requests that ask no question the clients sent.
    unasked: usize,
}

/// Reads every request the simulators saw: refusals by kind, carriers minted per conversation,
/// and each carrier sent back checked against them.
async fn audit(sims: &[(Sim, &'static Family)], conversations: usize) -> Audit {
    let mut audit = Audit::default();
    let mut minted_by: Vec<HashSet<[u8; 32]>> = vec![HashSet::new(); conversations];
    let mut replayed: Vec<(usize, Vec<[u8; 32]>)> = Vec::new();
    for (sim, family) in sims {
        for request in sim.requests() {
            audit.upstream_requests += 1;
            let raw = String::from_utf8_lossy(&request.raw);
            let owners = owners(&raw);
            if request.status >= 400 {
                let kind = REFUSALS
                    .iter()
                    .find(|(_, texts)| texts.iter().any(|t| request.response.contains(t)));
                match kind {
                    Some((kind, _)) => *audit.refusals.entry(kind).or_default() += 1,
                    None => audit.other_4xx.push(format!(
                        "{} {}: {}",
                        family.profile, request.status, request.response
                    )),
                }
            } else {
                match asked(&raw) {
                    Some(question) => *audit.asked.entry(question.to_owned()).or_default() += 1,
                    None => audit.unasked += 1,
                }
                audit.notes.extend(request.notes.iter().cloned());
                for carrier in minted(&request, family).await {
                    for &owner in &owners {
                        if owner < conversations {
                            minted_by[owner].insert(carrier);
                        }
                    }
                }
            }
            // A refused request's carriers reached the upstream too: they are checked alike
            // (a carrier of the wrong conversation is what a strict simulator refuses).
            let mut sent = Vec::new();
            carriers_in(&raw, family.reasoning_content, &mut sent);
            audit.redacted_back += raw.matches("redacted_thinking").count();
            if let [owner] = owners[..] {
                replayed.push((owner, sent));
            } else {
                audit.unknown += sent.len();
            }
        }
    }
    let mut restoring = HashSet::new();
    for (owner, sent) in replayed {
        for carrier in sent {
            audit.restores += 1;
            if minted_by.get(owner).is_some_and(|m| m.contains(&carrier)) {
                audit.exact += 1;
                restoring.insert(owner);
            } else if minted_by.iter().any(|m| m.contains(&carrier)) {
                audit.cross += 1;
                let tenant = tenant_of(owner);
                if minted_by
                    .iter()
                    .enumerate()
                    .any(|(other, m)| tenant_of(other) == tenant && m.contains(&carrier))
                {
                    audit.cross_within_tenant += 1;
                }
            } else {
                audit.unknown += 1;
            }
        }
    }
    audit.restoring_conversations = restoring.len();
    for (pair, members) in minted_by.chunks(2).enumerate() {
        if let [a, b] = members {
            let family = FAMILIES[pair % FAMILIES.len()].profile;
            let divergent = if same_tenant(pair) {
                &mut audit.same_tenant_divergent
            } else {
                &mut audit.pair_divergent
            };
            *divergent.entry(family).or_default() += a.symmetric_difference(b).count();
        }
    }
    audit
}

/// What the store holds once the replicas are gone, read back session by session.
#[derive(Default, Debug)]
struct StoreAudit {
    /// Gateway sessions (every tenant's).
    sessions: usize,
    /// Of them, branches (a parent session: a stale turn or a client's edit stored beside it).
    branches: usize,
    /// Tool calls in the sessions' views, and those answered by a tool result in that view.
    calls: usize,
    paired: usize,
    /// Views where a call has no result before the view goes on, or a result answers no call
    /// (session, what).
    unpaired: Vec<String>,
    /// Views holding the same step twice: a call id in two assistant messages, or two results
    /// for one call (session, id).
    duplicates: Vec<String>,
    /// Conversations (by index) whose own tag (`cv-…`) some session holds.
    conversations: HashSet<usize>,
    /// Replies the store holds in a session's own rows (an upstream's: they have an origin;
    /// not a branch's inherited prefix), per question they answer (`ask=…` of the client
    /// message before them): each is a step committed once.
    committed: HashMap<String, usize>,
    /// Stored replies after no client message that asks a question.
    unattributed: usize,
    /// Views holding messages of two conversations (session, their tags).
    mixed: Vec<String>,
    /// Sessions of one conversation branched from a session of another (its same-tenant
    /// partner), sharing only the prefix both members sent alike.
    partner_branches: usize,
}

/// Reads every gateway session of the store after the run: every tool call of a view answered
/// in it (only the view's last message may be calls still unanswered: a branch whose reply a
/// kill cut), no step stored twice in a view, branches counted, the conversations found.
async fn store_audit(db: &TestDb) -> StoreAudit {
    let store = db.open().await;
    let mut audit = StoreAudit::default();
    // Each session's conversations (by their own tags) and parent.
    let mut held: HashMap<String, (HashSet<usize>, Option<String>)> = HashMap::new();
    for meta in store.list().await.unwrap() {
        if meta.tenant.is_none() {
            continue;
        }
        audit.sessions += 1;
        audit.branches += usize::from(meta.parent_id.is_some());
        let view = store.active(&meta.id).await.unwrap();
        let own_from = meta.fork.as_ref().map_or(0, |fork| fork.count());
        let mut called: HashMap<String, bool> = HashMap::new();
        let mut open: Vec<String> = Vec::new();
        let mut tags: HashSet<usize> = HashSet::new();
        let mut question: Option<String> = None;
        for (at, stored) in view.iter().enumerate() {
            let message = &stored.message;
            let text = serde_json::to_string(&message.content).unwrap_or_default();
            if text.contains("cv-") {
                tags.extend(owners(&text));
            }
            if message.role == hermes_core::Role::Assistant {
                if at >= own_from && message.origin.is_some() {
                    match &question {
                        Some(q) => *audit.committed.entry(q.clone()).or_default() += 1,
                        None => audit.unattributed += 1,
                    }
                }
            } else if message.role != hermes_core::Role::System {
                question = asked(&text).map(str::to_owned);
            }
            if message.role == hermes_core::Role::Tool {
                let id = message.tool_call_id.clone().unwrap_or_default();
                match called.get_mut(&id) {
                    Some(answered @ false) => {
                        *answered = true;
                        open.retain(|o| *o != id);
                        audit.paired += 1;
                    }
                    Some(true) => audit
                        .duplicates
                        .push(format!("{}: two results for {id}", meta.id)),
                    None => audit
                        .unpaired
                        .push(format!("{}: a result for no call ({id})", meta.id)),
                }
                continue;
            }
            if !open.is_empty() {
                audit.unpaired.push(format!(
                    "{}: message {at} follows calls without results {open:?}",
                    meta.id
                ));
                open.clear();
            }
            for call in message.tool_calls.iter().flatten() {
                let id = call.id.clone().unwrap_or_default();
                audit.calls += 1;
                if called.insert(id.clone(), false).is_some() {
                    audit
                        .duplicates
                        .push(format!("{}: the call {id} stored twice", meta.id));
                }
                open.push(id);
            }
        }
        if tags.len() > 1 {
            let parent = meta.parent_id.as_deref().unwrap_or("none");
            audit
                .mixed
                .push(format!("{} (parent {parent}): {tags:?}", meta.id));
        }
        audit.conversations.extend(tags.iter().copied());
        held.insert(meta.id.clone(), (tags, meta.parent_id.clone()));
    }
    for (tags, parent) in held.values() {
        let parent_tags = parent.as_ref().and_then(|p| held.get(p)).map(|(t, _)| t);
        if let Some(parent_tags) = parent_tags
            && !parent_tags.is_empty()
            && !parent_tags.is_subset(tags)
        {
            audit.partner_branches += 1;
        }
    }
    audit
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_over_postgres_lose_no_carrier_through_kills_and_a_rolling_restart() {
    let Some(db) = TestDb::new(Backend::Postgres).await else {
        return;
    };
    let conversations = size("HERMES_CHAOS_SERVE_CONVERSATIONS", 24).max(2) / 2 * 2;
    let turns = size("HERMES_CHAOS_SERVE_TURNS", 3).max(1);
    let kills = size("HERMES_CHAOS_SERVE_KILLS", 4);
    let clients = size("HERMES_CHAOS_SERVE_CLIENTS", 6).max(1);
    let delay = size("HERMES_CHAOS_SERVE_CHUNK_DELAY_MS", 15) as u64;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let started = Instant::now();

    let mut sims = Vec::new();
    // Limits are on by default (docs/gateway.md, "Limits and policy"); a chaos run of 1,000
    // conversations on two tenants outruns them, so it lifts them for every tenant.
    let mut config = String::from(
        "[serve]\nrequests_per_minute = 1000000\nmax_concurrent = 100000\n\
         tokens_per_minute = 1000000000000\ntokens_per_day = 1000000000000\n\n",
    );
    for family in &FAMILIES {
        let sim = Sim::builder(family.profile.parse::<hermes_sim::Profile>().unwrap())
            .chunk_delay(Duration::from_millis(delay))
            .start()
            .await
            .unwrap();
        config.push_str(&format!(
            "[providers.{}]\nbase_url = \"{}\"\nkey_var = \"{KEY_VAR}\"\n\n",
            family.provider,
            sim.base_url()
        ));
        sims.push((sim, family));
    }
    let url = db.url();
    let env = vec![
        ("HERMES_DATABASE_URL".to_owned(), url.clone()),
        (KEY_VAR.to_owned(), "sk-test".to_owned()),
    ];
    let homes: Vec<_> = (0..3)
        .map(|_| {
            let home = crate::support::own_home();
            std::fs::write(home.path().join("config.toml"), &config).unwrap();
            home
        })
        .collect();
    let keys: Vec<String> = TENANTS
        .iter()
        .map(|tenant| new_key_with(homes[0].path(), tenant, &[("HERMES_DATABASE_URL", &url)]))
        .collect();

    let front = Arc::new(Front {
        slots: Mutex::new(vec![None; 3]),
        next: AtomicUsize::new(0),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front_addr = listener.local_addr().unwrap();
    tokio::spawn(Arc::clone(&front).serve(listener));
    let mut fleet = Fleet {
        replicas: Vec::new(),
        homes,
        env,
        front,
    };
    for slot in 0..3 {
        fleet.start(slot).await;
    }

    let tally = Arc::new(Tally::default());
    let next = Arc::new(AtomicUsize::new(0));
    let keys = Arc::new(keys);
    let workers: Vec<_> = (0..clients)
        .map(|w| {
            let (tally, next, keys) = (Arc::clone(&tally), Arc::clone(&next), Arc::clone(&keys));
            tokio::spawn(async move {
                let mut rng = Rng(seed.wrapping_add(w as u64 * 0x9E37_79B9) | 1);
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= conversations {
                        break;
                    }
                    let conv = Conversation::new(index, &keys);
                    if let Err(e) = converse(&conv, front_addr, turns, &mut rng, &tally).await {
                        let door = if conv.messages_door {
                            "messages"
                        } else {
                            "chat"
                        };
                        tally.failed.lock().unwrap().push(format!(
                            "{} ({}, {door}): {e}",
                            conv.tag(),
                            conv.family.profile
                        ));
                    }
                }
            })
        })
        .collect();

    // The faults, while the clients run: kills at random moments (between and during turns),
    // the rolling restart after half of them.
    let mut rng = Rng(seed);
    let (mut killed, mut rolled) = (0, false);
    let busy = || workers.iter().any(|w| !w.is_finished());
    while busy() && (killed < kills || !rolled) {
        tokio::time::sleep(Duration::from_millis(150 + rng.below(600))).await;
        if !busy() {
            break;
        }
        if !rolled && killed >= kills / 2 {
            tally.rolling.store(true, Ordering::SeqCst);
            for slot in 0..3 {
                fleet.roll(slot).await;
            }
            tally.rolling.store(false, Ordering::SeqCst);
            rolled = true;
        } else if killed < kills {
            fleet.kill(rng.below(3) as usize).await;
            killed += 1;
        }
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let took = started.elapsed();
    drop(fleet);

    let audit = audit(&sims, conversations).await;
    let stored = store_audit(&db).await;
    let refusals: usize = audit.refusals.values().sum();
    let kinds: Vec<String> = REFUSALS
        .iter()
        .map(|(kind, _)| format!("{kind}: {}", audit.refusals.get(kind).copied().unwrap_or(0)))
        .collect();
    let divergent: Vec<String> = FAMILIES
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.profile,
                audit.pair_divergent.get(f.profile).copied().unwrap_or(0)
            )
        })
        .collect();
    let same_divergent: Vec<String> = FAMILIES
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.profile,
                audit
                    .same_tenant_divergent
                    .get(f.profile)
                    .copied()
                    .unwrap_or(0)
            )
        })
        .collect();
    let pairs = conversations / 2;
    let same_pairs = (0..pairs).filter(|&p| same_tenant(p)).count();
    // How many conversations ask a question: both members of a pair ask its first alike.
    let askers = |q: &str| if q.starts_with("pr-") { 2 } else { 1 };
    let committed = |q: &str| stored.committed.get(q).copied().unwrap_or(0);
    let duplicate_calls: usize = stored
        .committed
        .iter()
        .map(|(q, &c)| c.saturating_sub(askers(q)))
        .sum();
    let reasked: usize = audit
        .asked
        .iter()
        .map(|(q, &n)| n.saturating_sub(committed(q)))
        .sum();
    let answered = tally.answered.lock().unwrap().clone();
    let lost: Vec<&String> = answered
        .iter()
        .filter(|q| committed(q) < askers(q))
        .collect();
    let steps: usize = stored.committed.values().sum();
    let failed = tally.failed.lock().unwrap().clone();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "chaos serve (seed {seed}, {:.1} s): 3 replicas over PostgreSQL, 5 carrier families, both doors
  conversations {conversations} ({} finished), turns {}, client requests {}, upstream requests {}
  kills {killed} (SIGKILL), rolling restart {}, client retries {}, failures during the rolling restart {}
  upstream refusals {refusals} ({}), other upstream 4xx {}, degraded notes {}
  byte-exact restores {}/{} ({:.2}%) in {} conversations (Claude redacted blocks among them {})
  cross-conversation attachments {} (carriers that differ within pairs: {}), carriers minted nowhere {}
  same-tenant pairs {same_pairs} (one tenant, no partition, shared first request, stock replies): cross within tenant {}, carriers that differ within them: {}, sessions branched from the partner at the shared prefix {}, views mixing two conversations {}
  keyed retries (an Idempotency-Key per request, the same on its retries): duplicate upstream calls {duplicate_calls}, re-asked after a lost reply {reasked}, lost committed steps {}, steps committed {steps}, upstream requests asking no client question {}, stored replies answering none {}
  store after the kills: {} sessions ({} branches), tool calls {} of which {} paired, conversations found {}/{conversations}, unpaired {}, duplicate steps {}",
        took.as_secs_f64(),
        conversations - failed.len(),
        tally.turns.load(Ordering::Relaxed),
        tally.requests.load(Ordering::Relaxed),
        audit.upstream_requests,
        if rolled { "done" } else { "not reached" },
        tally.retries.load(Ordering::Relaxed),
        tally.rolling_failures.lock().unwrap().len(),
        kinds.join(", "),
        audit.other_4xx.len(),
        audit.notes.len(),
        audit.exact,
        audit.restores,
        pct(audit.exact, audit.restores),
        audit.restoring_conversations,
        audit.redacted_back,
        audit.cross,
        divergent.join(", "),
        audit.unknown,
        audit.cross_within_tenant,
        same_divergent.join(", "),
        stored.partner_branches,
        stored.mixed.len(),
        lost.len(),
        audit.unasked,
        stored.unattributed,
        stored.sessions,
        stored.branches,
        stored.calls,
        stored.paired,
        stored.conversations.len(),
        stored.unpaired.len(),
        stored.duplicates.len(),
    );
    assert!(
        failed.is_empty(),
        "conversations that did not finish: {failed:#?}"
    );
    assert_eq!(tally.turns.load(Ordering::Relaxed), conversations * turns);
    assert_eq!(killed, kills, "every kill landed while clients ran");
    assert!(rolled, "the rolling restart ran while clients ran");
    let rolling_failures = tally.rolling_failures.lock().unwrap().clone();
    assert!(
        rolling_failures.is_empty(),
        "requests failed during the rolling restart: {rolling_failures:#?}"
    );
    assert!(
        stored.mixed.is_empty(),
        "sessions whose view holds two conversations' messages (one member's turns stored \
         after its same-tenant partner's; docs/spec.md §10's normal form compares a tool result \
         by its tool_call_id alone, and the partners' ids are equal): {:#?}",
        stored.mixed
    );
    assert_eq!(refusals, 0, "{:?}", audit.refusals);
    assert!(audit.other_4xx.is_empty(), "{:#?}", audit.other_4xx);
    assert!(audit.notes.is_empty(), "{:#?}", audit.notes);
    assert!(audit.restores > 0, "no carrier went back upstream");
    assert_eq!(audit.exact, audit.restores, "{audit:?}");
    assert_eq!(audit.cross, 0, "{audit:?}");
    assert_eq!(
        audit.unknown, 0,
        "carriers minted nowhere, or sent in a request no conversation owns: {audit:?}"
    );
    assert!(stored.unpaired.is_empty(), "{:#?}", stored.unpaired);
    assert!(stored.duplicates.is_empty(), "{:#?}", stored.duplicates);
    assert!(stored.paired > 0, "the store holds no answered tool call");
    assert_eq!(
        stored.conversations.len(),
        conversations,
        "every conversation is in the store: {stored:?}"
    );
    assert!(
        audit.redacted_back > 0,
        "no redacted thinking went back to Claude"
    );
    assert_eq!(
        audit.restoring_conversations, conversations,
        "every conversation had its carriers restored"
    );
    assert!(
        audit.pair_divergent.get("anthropic").copied().unwrap_or(0) > 0,
        "Claude's pairs never diverged: the cross check saw nothing: {divergent:?}"
    );
    assert_eq!(audit.cross_within_tenant, 0, "{audit:?}");
    if (0..pairs).any(|p| same_tenant(p) && FAMILIES[p % FAMILIES.len()].redacted) {
        assert!(
            audit
                .same_tenant_divergent
                .get("anthropic")
                .copied()
                .unwrap_or(0)
                > 0,
            "Claude's same-tenant pairs never diverged: the cross check saw nothing there: \
             {same_divergent:?}"
        );
    }
    assert_eq!(
        audit.unasked, 0,
        "upstream requests asking no client question"
    );
    assert_eq!(
        stored.unattributed, 0,
        "stored replies answering no question"
    );
    assert!(steps > 0, "the store holds no reply");
    assert_eq!(
        duplicate_calls,
        0,
        "a keyed retry went upstream after its step was committed: {:?}",
        stored
            .committed
            .iter()
            .filter(|(q, c)| **c > askers(q))
            .collect::<Vec<_>>()
    );
    assert!(lost.is_empty(), "answered steps the store lost: {lost:?}");
}
