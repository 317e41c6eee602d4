//! Issue 18 end to end: the real binary against the strict `gemini` (and `gemini-openai`) simulators.

use std::net::SocketAddr;

use hermes_sim::{RecordedRequest, Sim};
use hermes_test_support::home::Home;

use crate::tool_loop::{Row, Wire};
use serde_json::Value;

use crate::wire::{
    DEEPSEEK_KEY, ON_DEEPSEEK, continue_on_deepseek, header, kept_then_two, loop_done, raw,
    resume_args, session_id, turn_args,
};

pub(crate) const MODEL: &str = "gemini-3-pro-preview";
pub(crate) const API_KEY: &str = "AIzaSyHERMES-live-test-key-0123456789";
pub(crate) const KEY: &[(&str, &str)] = &[("GEMINI_API_KEY", API_KEY)];
const TOKEN: &str = "ya29.hermes-live-test-token";

/// What these tests ask of a home beyond running hermes.
trait GeminiHome {
    /// The stored assistant turns of a session, as `hermes sessions export` gives them.
    async fn turns(&self, id: &str) -> Vec<Turn>;
    /// The session's rows in state.db: (position, role, tool_calls).
    async fn rows(&self, id: &str) -> Vec<(i64, String, Option<String>)>;
    /// Replaces the stored `tool_calls` text of one row.
    async fn set_tool_calls(&self, id: &str, position: i64, text: &str);
    /// One more streamed thinking turn of session `id` at `base` with `query`: a loop of one
    /// tool step in two requests, finished.
    async fn resume_on(&self, id: &str, base: &str, query: &str);
}

impl GeminiHome for Home {
    async fn resume_on(&self, id: &str, base: &str, query: &str) {
        let args = [&["--resume", id][..], &gemini_args(base, true, query)].concat();
        loop_done(&self.chat(&args, KEY).await, 1, 2);
    }

    async fn turns(&self, id: &str) -> Vec<Turn> {
        turns(&self.export_text(id).await)
    }

    async fn rows(&self, id: &str) -> Vec<(i64, String, Option<String>)> {
        crate::support::rows(
            self,
            "SELECT position, role, tool_calls FROM messages WHERE session_id = ? ORDER BY position",
            Some(id),
        )
        .await
    }

    async fn set_tool_calls(&self, id: &str, position: i64, text: &str) {
        use sqlx::Connection as _;
        let mut conn = self.sqlite().await;
        let done =
            sqlx::query("UPDATE messages SET tool_calls = ? WHERE session_id = ? AND position = ?")
                .bind(text)
                .bind(id)
                .bind(position)
                .execute(&mut conn)
                .await
                .unwrap();
        assert_eq!(done.rows_affected(), 1);
        conn.close().await.unwrap();
    }
}

/// A Gemini tool loop whose steps make `parallel` calls each, then resumed: see
/// [`crate::tool_loop`].
pub(crate) struct Gemini {
    /// The calls of each step.
    pub(crate) parallel: usize,
}

impl Wire for Gemini {
    type Turn = Turn;

    fn stored(&self, row: &Row, turn: &Turn, k: usize) {
        assert_eq!(
            (turn.model.as_str(), turn.host.as_str()),
            (row.model, "127.0.0.1")
        );
        if k < row.steps {
            // Gemini signs the first of parallel calls only; hermes stores what came.
            let calls = &turn.signed.calls;
            assert_eq!(calls.len(), self.parallel, "{turn:?}");
            assert!(calls[0].1.is_some(), "{turn:?}");
            assert!(calls[1..].iter().all(|(_, s)| s.is_none()), "{turn:?}");
            assert_eq!(turn.signed.text, None);
        } else {
            let answer = &turn.signed;
            assert!(
                answer.calls.is_empty() && answer.text.is_some(),
                "{answer:?}"
            );
        }
    }

    fn request(&self, _: &Row, r: &RecordedRequest, stream: bool, earlier: &[Turn], _: usize) {
        studio(r, stream);
        replays(r, earlier);
    }
}

/// `--provider gemini` on `base` with thinking on, streamed or not, asking `query`.
fn gemini_args<'a>(base: &'a str, stream: bool, query: &'a str) -> Vec<&'a str> {
    let mut args = vec!["--provider", "gemini", "--model", MODEL, "--base-url", base];
    turn_args(&mut args, stream, query);
    args
}

// ---------------------------------------------------------------------------------------------
// Signatures, stored and sent, in one shape

/// The signatures of one model turn: each function call's (id, signature), and the text-turn
/// signature.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Signed {
    calls: Vec<(String, Option<String>)>,
    text: Option<String>,
}

impl Signed {
    fn all(&self) -> Vec<String> {
        let calls = self.calls.iter().filter_map(|(_, s)| s.clone());
        calls.chain(self.text.clone()).collect()
    }
}

/// Runs a turn of one tool step with `args`: it finishes, its session's stored turns begin with
/// `kept`, and `sim` saw its two requests. The session id, its stored turns and those requests.
async fn one_step(
    home: &Home,
    args: &[&str],
    env: &[(&str, &str)],
    sim: &Sim,
    kept: &[Turn],
) -> (String, Vec<Turn>, Vec<RecordedRequest>) {
    let out = home.chat(args, env).await;
    let id = session_id(&out);
    loop_done(&out, 1, 2);
    let stored = home.turns(&id).await;
    let requests = kept_then_two(&stored, kept, sim);
    (id, stored, requests)
}

crate::tool_loop::stored_turn!(Turn, turns);

/// A stored assistant message: its origin and its signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Turn {
    model: String,
    host: String,
    signed: Signed,
}

fn google(extra: &Value) -> Option<String> {
    extra["google"]["thought_signature"]
        .as_str()
        .map(str::to_owned)
}

/// The assistant messages of an export, in order: tool-call signatures from each call's
/// `extra_content`, the text-turn signature from the native record.
fn turns(export: &str) -> Vec<Turn> {
    let v: Value = serde_json::from_str(export).unwrap();
    crate::support::assistants(&v)
        .map(|m| {
            let native: Vec<&Value> = m["reasoning_details"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|i| i["type"] == "hermes.native_assistant")
                .collect();
            assert!(native.len() <= 1, "{m}");
            Turn {
                model: m["origin"]["model"].as_str().unwrap().to_owned(),
                host: m["origin"]["host"].as_str().unwrap().to_owned(),
                signed: Signed {
                    calls: calls(&m["tool_calls"], |c| google(&c["extra_content"])),
                    text: native.first().and_then(|n| google(&n["extra_content"])),
                },
            }
        })
        .collect()
}

fn calls(
    list: &Value,
    signature: impl Fn(&Value) -> Option<String>,
) -> Vec<(String, Option<String>)> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), signature(c)))
        .collect()
}

fn signed(turns: &[Turn]) -> Vec<Signed> {
    turns.iter().map(|t| t.signed.clone()).collect()
}

fn all_signatures(turns: &[Turn]) -> Vec<String> {
    turns.iter().flat_map(|t| t.signed.all()).collect()
}

/// The model contents of a `generateContent` request: each `functionCall` part's (id,
/// signature), and a text-turn signature, which may only ride on the turn's last part.
fn sent_native(r: &RecordedRequest) -> Vec<Signed> {
    r.body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "model")
        .map(|c| {
            let parts = c["parts"].as_array().unwrap();
            let mut text = None;
            for (j, p) in parts.iter().enumerate() {
                if p.get("functionCall").is_none()
                    && let Some(sig) = p["thoughtSignature"].as_str()
                {
                    assert_eq!(j + 1, parts.len(), "a text signature on the last part: {c}");
                    text = Some(sig.to_owned());
                }
            }
            let calls = parts
                .iter()
                .filter(|p| p.get("functionCall").is_some())
                .map(|p| {
                    let sig = p["thoughtSignature"].as_str().map(str::to_owned);
                    (p["functionCall"]["id"].as_str().unwrap().to_owned(), sig)
                })
                .collect();
            Signed { calls, text }
        })
        .collect()
}

/// The assistant messages of a chat-completions request, in the same shape.
fn sent_chat(r: &RecordedRequest) -> Vec<Signed> {
    crate::support::assistants(&r.body)
        .map(|m| Signed {
            calls: calls(&m["tool_calls"], |c| google(&c["extra_content"])),
            text: google(&m["extra_content"]),
        })
        .collect()
}

/// The native request carries exactly `stored`'s signatures, each on its own part and byte for
/// byte as stored.
fn replays(r: &RecordedRequest, stored: &[Turn]) {
    let text = raw(r);
    assert_eq!(sent_native(r), signed(stored), "{text}");
    for sig in all_signatures(stored) {
        let literal = format!("\"thoughtSignature\":\"{sig}\"");
        assert_eq!(text.matches(&literal).count(), 1, "{literal} in {text}");
    }
}

/// Accepted whole: 200, and none of the simulator's degraded notes.
fn clean(r: &RecordedRequest) {
    assert_eq!(r.status, 200, "{}: {}", r.path, r.response);
    assert!(r.notes.is_empty(), "{}: {:?}", r.path, r.notes);
}

fn method(stream: bool) -> &'static str {
    if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    }
}

/// An AI Studio request, accepted whole: the key only in `x-goog-api-key` (recorded redacted),
/// never in the path, another header or the body; thinking configured.
fn studio(r: &RecordedRequest, stream: bool) {
    clean(r);
    assert_eq!(r.path, format!("/v1beta/models/{MODEL}:{}", method(stream)));
    assert_eq!(header(r, "x-goog-api-key"), Some("<redacted>"));
    assert_eq!(header(r, "authorization"), None);
    assert!(!r.path.contains("key="), "{}", r.path);
    assert!(r.headers.iter().all(|(_, v)| !v.contains(API_KEY)));
    assert!(!raw(r).contains(API_KEY));
    assert!(
        r.body["generationConfig"]["thinkingConfig"].is_object(),
        "{}",
        r.body
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Sequential and parallel tool loops, streamed and not, then resumed

/// `s` with one base64 character changed, the length kept.
fn one_char_changed(s: &str, at: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[at] = if b[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

const SIG_MARK: &str = "\"thoughtSignature\":\"";

/// A loopback relay to `sim`, one request per connection (`connection: close` both ways), that
/// changes one character of the first `thoughtSignature` of reply number `nth`: a signature
/// damaged on its way into the tool loop in flight.
async fn damaging_relay(sim: SocketAddr, nth: usize) -> SocketAddr {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for k in 0.. {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            // The request: its head, then a body of `content-length` bytes.
            let mut request = Vec::new();
            let mut buf = [0u8; 8192];
            let head_end = loop {
                let n = client.read(&mut buf).await.unwrap();
                assert!(n > 0, "the request ended early");
                request.extend_from_slice(&buf[..n]);
                if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
            };
            let head = String::from_utf8_lossy(&request[..head_end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while request.len() < head_end + length {
                let n = client.read(&mut buf).await.unwrap();
                assert!(n > 0, "the body ended early");
                request.extend_from_slice(&buf[..n]);
            }
            let line_end = request.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
            request.splice(line_end..line_end, b"connection: close\r\n".iter().copied());
            let mut upstream = tokio::net::TcpStream::connect(sim).await.unwrap();
            upstream.write_all(&request).await.unwrap();
            let mut reply = Vec::new();
            upstream.read_to_end(&mut reply).await.unwrap();
            if k == nth {
                let text = String::from_utf8(reply).unwrap();
                let at = text.find(SIG_MARK).unwrap() + SIG_MARK.len() + 20;
                reply = one_char_changed(&text, at).into_bytes();
            }
            client.write_all(&reply).await.unwrap();
            let _ = client.shutdown().await;
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_damaged_inside_the_loop_in_flight_is_refused_and_reported_in_one_line_never_invented()
 {
    // hermes holds the loop in flight in memory (state.db is read when a turn starts), so the
    // damage is done on the wire: the first reply reaches hermes with one character changed,
    // hermes stores it exactly, and sends it back on the next step of the same loop.
    let sim = Sim::start("gemini").await.unwrap();
    let relay = damaging_relay(sim.addr(), 0).await;
    let home = crate::support::home();
    let base = format!("http://{relay}/v1beta");
    let out = home
        .run(
            &[
                &["chat", "--json"][..],
                &gemini_args(&base, false, "[tools=3] what time is it?"),
            ]
            .concat(),
            KEY,
        )
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "no resend: {stderr}");
    clean(&requests[0]);
    let minted = minted_call_signature(&requests[0]);

    // What state.db holds: the first step, with the damaged signature as hermes received it.
    let id = stderr.split("session ").nth(1).unwrap();
    let id = id.split(':').next().unwrap();
    let stored = home.turns(id).await;
    assert_eq!(stored.len(), 1);
    let damaged = stored[0].signed.calls[0].1.clone().unwrap();
    assert_ne!(damaged, minted);
    assert_eq!(damaged.len(), minted.len());
    assert_eq!(
        damaged
            .bytes()
            .zip(minted.bytes())
            .filter(|(a, b)| a != b)
            .count(),
        1
    );

    // The refused request carried the stored value, nothing made up in its place.
    let refused = &requests[1];
    assert_eq!(refused.status, 400, "{}", refused.response);
    let error: Value = serde_json::from_str(&refused.response).unwrap();
    assert_eq!(error["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(error["error"]["message"], "Corrupted thought signature.");
    assert_eq!(sent_native(refused), signed(&stored));
    assert!(raw(refused).contains(&format!("{SIG_MARK}{damaged}\"")));
    assert!(!raw(refused).contains(&minted));

    // One clear line says so.
    let lines = crate::support::lines_with(&stderr, "thought signature");
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("Gemini refused a function call of the history for its thought signature: Corrupted thought signature. — hermes never invents a signature"),
        "{stderr}"
    );
}

/// The signature the simulator minted in a non-streamed function-call reply.
fn minted_call_signature(r: &RecordedRequest) -> String {
    let reply: Value = serde_json::from_str(&r.response).unwrap();
    let parts = reply["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap();
    let call = parts
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .unwrap();
    call["thoughtSignature"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_edited_in_state_db_is_replayed_exactly_as_stored_never_repaired() {
    let sim = Sim::start("gemini").await.unwrap();
    let home = crate::support::home();
    let base = format!("{}/v1beta", sim.base_url());
    let out = home
        .chat(&gemini_args(&base, true, "[tools=3] what time is it?"), KEY)
        .await;
    let id = session_id(&out);
    let stored = home.turns(&id).await;

    // One character of the second step's call signature (row 3), changed in state.db.
    let rows = home.rows(&id).await;
    let (position, role, tool_calls) = &rows[3];
    assert_eq!((*position, role.as_str()), (3, "assistant"));
    let tool_calls = tool_calls.clone().unwrap();
    let good = stored[1].signed.calls[0].1.clone().unwrap();
    assert!(tool_calls.contains(&good), "{tool_calls}");
    let bad = one_char_changed(&good, good.len() / 2);
    home.set_tool_calls(&id, 3, &tool_calls.replace(&good, &bad))
        .await;
    let edited = home.turns(&id).await;
    assert_eq!(edited[1].signed.calls[0].1.as_deref(), Some(bad.as_str()));

    sim.clear_requests();
    let out = home.chat(&resume_args(&id, true, "and now?"), KEY).await;
    assert_eq!(out["requests"], 1, "{out}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    // Sent as stored, on its own call: Gemini validates only the turn in flight, so it accepts
    // the older turn and the simulator notes the signature that does not verify.
    assert_eq!(r.status, 200, "{}", r.response);
    replays(r, &edited);
    assert!(!raw(r).contains(&good));
    assert_eq!(
        r.notes,
        vec![
            "contents[3].parts[0]: thoughtSignature does not verify (accepted: outside the current turn)"
                .to_owned()
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// 2. A streamed text turn signed on a trailing empty-text part

/// The chunks of an SSE reply as recorded.
fn sse_chunks(text: &str) -> Vec<Value> {
    text.split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_turn_signed_only_on_a_trailing_empty_part_is_stored_and_replayed_on_its_last_part()
{
    let sim = Sim::start("gemini").await.unwrap();
    let home = crate::support::home();
    let base = format!("{}/v1beta", sim.base_url());
    let out = home.chat(&gemini_args(&base, true, "hello"), KEY).await;
    let id = session_id(&out);
    assert_eq!(out["messages"][0]["native_record"], true, "{out}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    studio(&requests[0], true);
    // The stream: text fragments, then the signature alone on an empty text part.
    let parts: Vec<Value> = sse_chunks(&requests[0].response)
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let signed_parts: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("thoughtSignature").is_some())
        .collect();
    assert_eq!(signed_parts.len(), 1, "{parts:?}");
    assert_eq!(signed_parts[0]["text"], "");
    assert_eq!(parts.last(), Some(signed_parts[0]));
    let minted = signed_parts[0]["thoughtSignature"].as_str().unwrap();

    let stored = home.turns(&id).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].signed.text.as_deref(), Some(minted));

    sim.clear_requests();
    home.chat(&resume_args(&id, true, "and again"), KEY).await;
    let requests = sim.requests();
    assert_eq!(requests.len(), 1);
    studio(&requests[0], true);
    replays(&requests[0], &stored);
    let model = &requests[0].body["contents"][1];
    assert_eq!(model["role"], "model");
    let last = model["parts"].as_array().unwrap().last().unwrap();
    assert_eq!(last["thoughtSignature"], minted, "{model}");
}

// ---------------------------------------------------------------------------------------------
// 3. gemini ⇄ gemini-openai on one host, then DeepSeek, then another host

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_cross_between_the_native_and_chat_doors_of_one_host_but_never_to_deepseek_or_another_host()
 {
    let native = Sim::start("gemini").await.unwrap();
    let chat = Sim::start("gemini-openai").await.unwrap();
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let home = crate::support::home();
    let native_base = format!("{}/v1beta", native.base_url());
    let chat_base = chat.base_url();
    let out = home
        .chat(
            &gemini_args(&native_base, true, "[tools=2] what time is it?"),
            KEY,
        )
        .await;
    let id = session_id(&out);
    let minted = home.turns(&id).await;
    assert_eq!(all_signatures(&minted).len(), 3);

    // The chat door of the same host: the native signatures ride in `extra_content`.
    let to_chat = |query| {
        let mut args = vec!["--resume", &id];
        args.extend(crate::support::target(
            "gemini-openai",
            MODEL,
            &chat_base,
            &[],
        ));
        turn_args(&mut args, true, query);
        args
    };
    let args = to_chat("[tools=1] on the chat door?");
    let (resumed, after_chat, requests) = one_step(&home, &args, KEY, &chat, &minted).await;
    assert_eq!(resumed, id);
    for (k, r) in requests.iter().enumerate() {
        assert_eq!(r.status, 200, "{}", r.response);
        assert_eq!(sent_chat(r), signed(&after_chat[..3 + k]), "{}", raw(r));
        let text = raw(r);
        for sig in all_signatures(&after_chat[..3 + k]) {
            assert!(
                text.contains(&format!("\"thought_signature\":\"{sig}\"")),
                "{text}"
            );
        }
        assert!(!text.contains("hermes.native_assistant"), "{text}");
    }
    let chat_minted = all_signatures(&after_chat[3..]);
    assert!(!chat_minted.is_empty(), "{after_chat:?}");

    // Back on the native door: the chat door's signatures come back too.
    native.clear_requests();
    home.resume_on(&id, &native_base, "[tools=1] back home?")
        .await;
    let gemini_turns = home.turns(&id).await;
    assert_eq!(after_chat.len(), 5);
    let requests = kept_then_two(&gemini_turns, &after_chat, &native);
    for (k, r) in requests.iter().enumerate() {
        studio(r, true);
        replays(r, &gemini_turns[..5 + k]);
    }

    // DeepSeek: no signature and no native record leaves.
    let every = all_signatures(&gemini_turns);
    let never = [
        "extra_content",
        "thought_signature",
        "thoughtSignature",
        "hermes.native_assistant",
        "reasoning_details",
    ];
    let leaks = (&never[..], &every[..]);
    continue_on_deepseek(&home, &id, &deepseek, ON_DEEPSEEK, DEEPSEEK_KEY, leaks).await;

    // Another host (`localhost` is not `127.0.0.1` to hermes, though the same server): none of
    // the signatures minted on 127.0.0.1 leaves; its own loop signs and replays its own.
    native.clear_requests();
    let other_host = format!("http://localhost:{}/v1beta", native.addr().port());
    home.resume_on(&id, &other_host, "[tools=1] elsewhere?")
        .await;
    let last = home.turns(&id).await;
    let own: Vec<&Turn> = last.iter().filter(|t| t.host == "localhost").collect();
    assert_eq!(own.len(), 2);
    let requests = native.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.status, 200, "{}", r.response);
        let text = raw(r);
        for sig in &every {
            assert!(!text.contains(sig.as_str()), "stale {sig} in {text}");
        }
        // Gemini accepts unsigned older turns; the simulator notes each.
        assert!(!r.notes.is_empty());
        for note in &r.notes {
            assert!(
                note.ends_with(
                    "functionCall without thoughtSignature (accepted: outside the current turn)"
                ) || note.ends_with(
                    "model turn without a thoughtSignature (Gemini 3 signs every reply)"
                ),
                "{note}"
            );
        }
    }
    let fresh = own[0].signed.calls[0].1.clone().unwrap();
    assert!(raw(&requests[1]).contains(&format!("{SIG_MARK}{fresh}\"")));
}

// ---------------------------------------------------------------------------------------------
// 4. Vertex AI

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vertex_gemini_uses_the_publisher_path_and_a_bearer_token_and_resumes() {
    let sim = Sim::start("gemini").await.unwrap();
    let home = crate::support::home();
    std::fs::write(
        home.path().join("config.toml"),
        "[vertex]\nproject = \"p\"\nregion = \"us-central1\"\n",
    )
    .unwrap();
    let base = sim.base_url();
    let env = &[("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN)];
    let check = |r: &RecordedRequest, stream: bool| {
        clean(r);
        assert_eq!(
            r.path,
            format!(
                "/v1/projects/p/locations/us-central1/publishers/google/models/{MODEL}:{}",
                method(stream)
            )
        );
        assert_eq!(header(r, "authorization"), Some("<redacted>"));
        assert_eq!(header(r, "x-goog-api-key"), None);
        assert!(!raw(r).contains(TOKEN) && !r.path.contains(TOKEN));
    };
    let mut args = crate::support::target("vertex-gemini", MODEL, &base, &[]);
    turn_args(&mut args, true, "[tools=1] what time is it?");
    let (id, stored, requests) = one_step(&home, &args, env, &sim, &[]).await;
    for (k, r) in requests.iter().enumerate() {
        check(r, true);
        replays(r, &stored[..k]);
    }

    sim.clear_requests();
    let args = resume_args(&id, false, "[tools=1] and now?");
    let (resumed, after, requests) = one_step(&home, &args, env, &sim, &stored).await;
    assert_eq!(resumed, id);
    for (k, r) in requests.iter().enumerate() {
        check(r, false);
        replays(r, &after[..2 + k]);
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Offline

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_gemini_simulator_runs_a_signed_tool_loop_with_no_environment() {
    let home = crate::support::home();
    let (stdout, id) = crate::support::offline_tool_loop(&home, "gemini").await;
    assert!(stdout.starts_with("Done after 2 tool steps"), "{stdout}");
    let stored = home.turns(&id).await;
    assert_eq!(stored.len(), 3);
    assert!(stored[..2].iter().all(|t| t.signed.calls[0].1.is_some()));
    assert!(stored[2].signed.text.is_some());
}
