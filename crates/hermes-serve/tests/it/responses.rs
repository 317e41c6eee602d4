//! The Responses door (`POST /v1/responses`) with the official `openai` Python client as the
//! client (`tests/sdk/openai_responses_turns.py`: its `responses.create` and `responses.stream`,
//! every object and event validated against the SDK's own types), in front of the strict
//! simulators: a two-turn tool conversation whose client drops every `reasoning` item, or keeps
//! them with `store: false`, is accepted by every upstream, and each carrier the upstream
//! minted goes back to it byte for byte from the store. The client never sees an upstream's
//! own carrier: its reasoning items hold the readable summary and a gateway-sealed reference.

use hermes_sim::Sim;
use serde_json::{Value, json};

use crate::replicas::{TOOL_TURN_THEN_A_TURN, roles};
use crate::sdk::{NATIVE_THINKING, minted_went_back, run_script};
use crate::{KEY, start_for};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk/openai_responses_turns.py"
);
const PROBE: &str = "import openai; print(f'openai {openai.__version__}')";

/// How the client treats the reasoning items of its first turn.
#[derive(Clone, Copy, Debug)]
enum Items {
    /// Drops them.
    Drop,
    /// Sends them back as received (`store: false`).
    SendBack,
    /// Sends them back with each summary altered.
    Tamper,
}

/// Runs the script against a gateway in front of `profile` (standing in for `provider`) and
/// checks what every request holds; returns what the client saw and the simulator's requests.
async fn two_turns(
    profile: &str,
    provider: &str,
    model: &str,
    effort: Option<&str>,
    stream: bool,
    keep: Items,
) -> Option<(Value, Vec<Value>)> {
    let python = hermes_test_support::sdk::sdk_python("openai", PROBE)?;
    let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
    let input = json!({
        "base_url": gateway.base(), "key": KEY, "model": model, "stream": stream,
        "keep": !matches!(keep, Items::Drop), "tamper": matches!(keep, Items::Tamper),
        "effort": effort,
    });
    let seen = tokio::task::spawn_blocking(move || run_script(python, SCRIPT, "OPENAI_", &input))
        .await
        .unwrap();
    let case = format!("{profile} stream={stream} {keep:?}");
    let (first, second) = (&seen["first"], &seen["second"]);
    let types = |turn: &Value| -> Vec<String> {
        turn["output"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["type"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        types(first).contains(&"function_call".to_owned()),
        "{case}: the first turn calls the tool: {seen}"
    );
    assert_eq!(
        types(second).last().map(String::as_str),
        Some("message"),
        "{case}: {seen}"
    );
    assert!(!second["text"].as_str().unwrap().is_empty(), "{case}");
    let session = first["session"]
        .as_str()
        .expect("the response names its session");
    assert_eq!(second["session"], session, "{case}: one conversation");
    if stream {
        assert_eq!(first["added_before_delta"], true, "{case}: {seen}");
        let events = first["event_types"].as_array().unwrap();
        assert_eq!(events[0], "response.created", "{case}");
        assert_eq!(events[1], "response.in_progress", "{case}");
        assert_eq!(events.last().unwrap(), "response.completed", "{case}");
    }

    let requests: Vec<Value> = sim.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        requests.len(),
        2,
        "{case}: one upstream request per turn, both accepted"
    );
    // Every carrier the upstream minted on the call turn went back to it byte for byte.
    let stored = gateway.store.messages(session).await.unwrap();
    assert_eq!(
        roles(&gateway.store, session).await,
        ["system", "user", "assistant", "tool", "assistant"],
        "{case}"
    );
    let skip = crate::sdk::not_replayed(provider);
    let carriers = minted_went_back(&stored[2], skip, &[&requests[1]], &case);
    // What the client was shown as readable reasoning (summaries); every other carrier (a
    // signature, an encrypted item, a thought signature) stays in the gateway.
    let summaries: Vec<&str> = [first, second]
        .iter()
        .flat_map(|t| t["output"].as_array().unwrap())
        .filter(|o| o["type"] == "reasoning")
        .flat_map(|o| o["summary"].as_array().unwrap())
        .filter_map(|s| s["text"].as_str())
        .collect();
    let shown = seen.to_string();
    for encoded in &carriers {
        // (Short strings under a carrier's key are its item types and ids' neighbours.)
        let carrier: String = serde_json::from_str(encoded).unwrap();
        if carrier.len() >= 16 && !summaries.iter().any(|s| s.contains(carrier.as_str())) {
            assert!(
                !shown.contains(encoded.as_str()),
                "{case}: the upstream's own carrier {encoded} reached the client"
            );
        }
    }
    gateway.stop().await;
    Some((seen, requests))
}

/// The strict upstreams the issue names, a client dropping its reasoning items on each, whole
/// and streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_client_that_drops_its_reasoning_items_holds_tool_conversations_on_every_upstream()
 {
    let deepseek = ("deepseek-v4", "deepseek", "deepseek/deepseek-v4-pro", None);
    for (profile, provider, model, effort) in std::iter::once(deepseek).chain(NATIVE_THINKING) {
        for stream in [false, true] {
            two_turns(profile, provider, model, effort, stream, Items::Drop).await;
        }
    }
}

/// A client that keeps its reasoning items (`store: false`) gets sealed references, never an
/// upstream's blob; sent back, they verify and the upstream gets its own bytes from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_items_kept_by_the_client_are_sealed_references_that_verify() {
    for stream in [false, true] {
        let Some((seen, _)) = two_turns(
            "anthropic",
            "anthropic",
            "anthropic/claude-opus-4-6",
            Some("high"),
            stream,
            Items::SendBack,
        )
        .await
        else {
            return;
        };
        let reasoning = crate::of_type(&seen["first"]["output"], "reasoning");
        assert!(!reasoning.is_empty(), "Claude thought: {seen}");
        for item in reasoning {
            assert!(
                crate::is_sealed(&item["encrypted_content"]),
                "a gateway seal: {item}"
            );
            assert!(
                !item["summary"][0]["text"].as_str().unwrap().is_empty(),
                "the readable summary: {item}"
            );
        }
    }
}

/// A DeepSeek V4 upstream must get each tool-call turn's `reasoning_content` back. A client
/// that keeps its sealed reasoning items but edited their summaries gets nothing from them:
/// the store still gives the upstream its own text, never the edited one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_reasoning_item_is_left_out() {
    let Some((seen, requests)) = two_turns(
        "deepseek-v4",
        "deepseek",
        "deepseek/deepseek-v4-pro",
        None,
        false,
        Items::Tamper,
    )
    .await
    else {
        return;
    };
    let echoed = &requests[1]["messages"][2];
    assert_eq!(echoed["role"], "assistant", "{}", requests[1]);
    let thinking = echoed["reasoning_content"].as_str().unwrap();
    assert!(
        !thinking.contains("(edited)"),
        "the edited summary never reached it"
    );
    let shown = &seen["first"]["output"][0];
    assert_eq!(shown["type"], "reasoning");
    assert_eq!(
        shown["summary"][0]["text"], thinking,
        "the store's own text went back"
    );
}

/// `item_reference`: a client that stores its responses (`store` on) and names their output
/// items by id instead of sending them: each reference is the item the response gave, rebuilt
/// from the store, so a must-echo upstream (DeepSeek V4) gets the tool-call turn's reasoning
/// back byte for byte. An id that names no item of the tenant's stored responses — unknown,
/// another tenant's, or from a response made with `store: false` — is OpenAI's 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_references_name_the_items_of_stored_responses() {
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| c).await;
    let client = reqwest::Client::new();
    let tools = json!([{"type": "function", "name": "now", "description": "The time",
        "parameters": {"type": "object", "properties": {}}}]);
    let ask = |key: &'static str, body: Value| {
        client
            .post(gateway.url("/v1/responses"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    // A turn of `input` with the tool, as `key`.
    let turn = |key: &'static str, input: Value| {
        ask(
            key,
            json!({"model": "deepseek/deepseek-v4-pro", "input": input, "tools": tools}),
        )
    };
    let question = json!({"role": "user", "content": "[tools=1] what time is it?"});
    let r = turn(KEY, json!([question])).await.unwrap();
    assert_eq!(r.status(), 200);
    let first: Value = r.json().await.unwrap();
    let output = first["output"].as_array().unwrap();
    let call = output
        .iter()
        .find(|o| o["type"] == "function_call")
        .unwrap();
    let references: Vec<Value> = output
        .iter()
        .map(|o| json!({"type": "item_reference", "id": o["id"]}))
        .collect();
    let answer =
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "12:00"});

    let mut input = vec![question.clone()];
    input.extend(references.iter().cloned());
    input.push(answer.clone());
    let r = turn(KEY, input.into()).await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let second: Value = r.json().await.unwrap();
    assert_eq!(second["status"], "completed", "{second}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "both accepted");
    let stored = gateway
        .store
        .messages(first["hermes_session"].as_str().unwrap())
        .await
        .unwrap();
    let echoed = &requests[1].body["messages"][1];
    assert_eq!(echoed["role"], "assistant", "{}", requests[1].body);
    assert_eq!(
        echoed["reasoning_content"].as_str(),
        stored[1]
            .reasoning_content
            .as_ref()
            .map(|r| r.text())
            .as_deref(),
        "the stored reasoning went back: {}",
        requests[1].body
    );
    assert_eq!(echoed["tool_calls"][0]["id"], call["call_id"]);

    // Not the tenant's, unknown, or never stored: OpenAI's 400, nothing sent upstream.
    let unstored = {
        let r = ask(
            KEY,
            json!({"model": "deepseek/deepseek-v4-pro", "input": "[tools=1] and now?",
                   "tools": tools, "store": false}),
        )
        .await
        .unwrap();
        let v: Value = r.json().await.unwrap();
        v["output"][0]["id"].as_str().unwrap().to_owned()
    };
    let seen = sim.requests().len();
    for (key, id) in [
        (
            crate::KEY_B,
            references[0]["id"].as_str().unwrap().to_owned(),
        ),
        (KEY, "msg_nothing".to_owned()),
        (KEY, unstored),
    ] {
        let mut input = vec![
            question.clone(),
            json!({"type": "item_reference", "id": id}),
        ];
        input.push(answer.clone());
        let r = turn(key, input.into()).await.unwrap();
        assert_eq!(r.status(), 400);
        let error: Value = r.json().await.unwrap();
        assert_eq!(
            error["error"]["message"],
            format!("Item with id '{id}' not found."),
            "{error}"
        );
    }
    assert_eq!(
        sim.requests().len(),
        seen,
        "nothing refused reached the upstream"
    );
    gateway.stop().await;
}

/// Codex sends its request bodies compressed: zstd, gzip and br are decoded, with the body cap
/// on the decoded size; another encoding is a 415 in OpenAI's shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bodies_are_decoded_under_the_cap() {
    use std::io::Write as _;
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| {
        c.max_request_bytes(64 * 1024)
    })
    .await;
    // Three questions (the same body again would be answered from the store).
    let body = |n: u32| {
        json!({"model": "deepseek/deepseek-v4-pro", "input": format!("hello there {n}")})
            .to_string()
    };
    let gzip = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body(2).as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let client = reqwest::Client::new();
    let send = |encoding: &'static str, bytes: Vec<u8>| {
        client
            .post(gateway.url("/v1/responses"))
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .header("content-encoding", encoding)
            .body(bytes)
            .send()
    };
    for (encoding, bytes) in [
        ("zstd", zstd::encode_all(body(1).as_bytes(), 3).unwrap()),
        ("gzip", gzip),
        ("identity", body(3).into_bytes()),
    ] {
        let r = send(encoding, bytes).await.unwrap();
        let answer = crate::ok_json(r, &format!("{encoding}: ")).await;
        assert_eq!(answer["object"], "response", "{encoding}");
        assert_eq!(
            answer["output"].as_array().unwrap().last().unwrap()["type"],
            "message"
        );
    }
    let seen = sim.requests();
    assert_eq!(seen.len(), 3, "each decoded body reached the upstream");
    assert!(
        seen[0].body.to_string().contains("hello there 1"),
        "{}",
        seen[0].body
    );

    // 1 MiB of one letter compresses to a few hundred bytes: over the cap once decoded.
    let big = json!({"model": "deepseek/deepseek-v4-pro", "input": "a".repeat(1 << 20)});
    let bomb = zstd::encode_all(big.to_string().as_bytes(), 19).unwrap();
    assert!(bomb.len() < 64 * 1024);
    let r = send("zstd", bomb).await.unwrap();
    assert_eq!(r.status(), 413, "{}", r.text().await.unwrap());

    let r = send("deflate", body(4).into_bytes()).await.unwrap();
    assert_eq!(r.status(), 415);
    let answer: Value = r.json().await.unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deflate"),
        "{answer}"
    );
    let r = send("zstd", b"not zstd at all".to_vec()).await.unwrap();
    assert_eq!(r.status(), 400, "a body that does not decode");
    assert_eq!(
        sim.requests().len(),
        3,
        "no refused body reached the upstream"
    );
    gateway.stop().await;
}

/// `responses.compact` through the door in front of `profile` (standing in for `provider`):
/// the answer is the input's user messages and one compaction item holding a sealed
/// reference, and the next turn on the compacted input is accepted. Returns the sealed
/// reference, what the client saw and the simulator's requests (the two turns, the
/// compaction, the turn after it, each accepted).
async fn compacted(
    profile: &str,
    provider: &str,
    model: &str,
) -> Option<(
    Sim,
    crate::Running,
    String,
    Value,
    Vec<hermes_sim::RecordedRequest>,
)> {
    let python = hermes_test_support::sdk::sdk_python("openai", PROBE)?;
    let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
    let input = json!({
        "base_url": gateway.base(), "key": KEY, "model": model,
        "stream": false, "keep": false, "tamper": false, "effort": "high", "compact": true,
    });
    let seen = tokio::task::spawn_blocking(move || run_script(python, SCRIPT, "OPENAI_", &input))
        .await
        .unwrap();
    let compacted = &seen["compacted"];
    assert_eq!(compacted["object"], "response.compaction", "{seen}");
    let output = compacted["output"].as_array().unwrap();
    let item = output.last().unwrap();
    assert_eq!(item["type"], "compaction");
    let sealed = item["encrypted_content"].as_str().unwrap().to_owned();
    assert!(sealed.starts_with("hermes1c."), "{item}");
    let users: Vec<&Value> = output[..output.len() - 1].iter().collect();
    assert_eq!(users.len(), 1, "the one user message: {output:?}");
    assert_eq!(users[0]["role"], "user");
    assert_eq!(users[0]["content"][0]["text"], "[tools=1] what time is it?");
    assert_eq!(seen["third"]["status"], "completed", "{seen}");
    assert!(
        !seen["third"]["output"].as_array().unwrap().is_empty(),
        "{seen}"
    );
    let requests = sim.requests();
    assert_eq!(
        requests.len(),
        4,
        "two turns, the compaction, the turn after it"
    );
    assert!(
        requests.iter().all(|r| r.status == 200),
        "every request accepted"
    );
    assert!(
        !requests[3].body.to_string().contains("hermes1c."),
        "the reference never goes upstream"
    );
    Some((sim, gateway, sealed, seen, requests))
}

/// `responses.compact` on a conversation whose upstream is Claude (signatures verified by its
/// simulator): Claude compacts it itself (on-demand compaction, its beta), and the next turn
/// on the compacted input starts at that block, verbatim — the client never saw it. The
/// conversation compacted is left as it was. The same item altered, or under another
/// partition, is a 400 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_conversation_goes_on_from_its_checkpoint() {
    let Some((sim, gateway, sealed, seen, requests)) =
        compacted("anthropic", "anthropic", "anthropic/claude-opus-4-6").await
    else {
        return;
    };
    let asked = &requests[2];
    assert_eq!(
        asked.body["compaction"],
        json!({"type": "summarize"}),
        "Claude's own compaction was asked for: {}",
        asked.body
    );
    let reply: Value = serde_json::from_str(&asked.response).unwrap();
    let block = &reply["content"][0];
    assert_eq!(block["type"], "compaction", "{reply}");
    assert!(
        !seen
            .to_string()
            .contains(block["encrypted_content"].as_str().unwrap()),
        "the block stays in the gateway"
    );
    let after = &requests[3].body;
    let messages = after["messages"].as_array().unwrap();
    assert_eq!(
        &messages[0]["content"][0], block,
        "the turn after starts at the block, byte for byte: {after}"
    );
    assert_eq!(messages[0]["role"], "assistant");
    assert_eq!(
        messages.len(),
        2,
        "the block, then the new message: {after}"
    );
    // The conversation compacted is left as it was; the checkpoint has a session of its own.
    let first = seen["first"]["session"].as_str().unwrap();
    assert_eq!(
        roles(&gateway.store, first).await,
        ["system", "user", "assistant", "tool", "assistant"],
        "the compacted conversation is untouched"
    );

    // Altered, or sent under another partition: refused, naming the item.
    let mut altered = sealed.clone();
    altered.insert(altered.len() - 3, 'A');
    for (seal, user) in [
        (altered.as_str(), None),
        (sealed.as_str(), Some("someone-else")),
    ] {
        let mut body = json!({"model": "anthropic/claude-opus-4-6", "input": [
            {"role": "user", "content": "[tools=1] what time is it?"},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": seal},
            {"role": "user", "content": "And now?"},
        ]});
        if let Some(user) = user {
            body["user"] = json!(user);
        }
        let r = reqwest::Client::new()
            .post(gateway.url("/v1/responses"))
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer["error"]["param"], "input[1]", "{answer}");
    }
    assert_eq!(
        sim.requests().len(),
        4,
        "nothing refused reached the upstream"
    );
    gateway.stop().await;
}

/// `responses.compact` through the door to OpenAI's Responses API: the upstream's own
/// `POST /responses/compact` compacts it; its compaction item is kept in the gateway and goes
/// back to it byte for byte as the first item of the turn after, while the client holds only
/// the sealed reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_upstream_compacts_with_its_own_compact_endpoint() {
    let Some((_sim, gateway, _sealed, seen, requests)) = compacted(
        "openai-responses",
        "openai-responses",
        "openai-responses/gpt-5.2",
    )
    .await
    else {
        return;
    };
    assert!(
        requests[2].path.ends_with("/responses/compact"),
        "the provider's compaction: {}",
        requests[2].path
    );
    let reply: Value = serde_json::from_str(&requests[2].response).unwrap();
    let minted = crate::of_type(&reply["output"], "compaction")
        .into_iter()
        .next()
        .expect("the upstream minted a compaction item")
        .clone();
    assert!(
        !seen
            .to_string()
            .contains(minted["encrypted_content"].as_str().unwrap()),
        "the item stays in the gateway"
    );
    let input = requests[3].body["input"].as_array().unwrap();
    assert_eq!(
        input[0], minted,
        "the turn after starts at the minted item, byte for byte: {}",
        requests[3].body
    );
    assert_eq!(input.len(), 2, "the item, then the new message");
    gateway.stop().await;
}

/// A provider whose compaction fails (here: a Claude host that answers the on-demand
/// compaction request with plain text, no compaction block) does not fail the client's
/// compaction: hermes asks for its own summary next, and the item stands for that summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_providers_compaction_fails_hermes_summarises_instead() {
    let upstream = crate::errors::upstream_answering(
        wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "They greeted each other."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 5},
        })),
    )
    .await;
    let gateway = start_for("anthropic", &upstream.uri()).await;
    let client = reqwest::Client::new();
    let r = client
        .post(gateway.url("/v1/responses/compact"))
        .bearer_auth(KEY)
        .json(&json!({"model": "anthropic/claude-opus-4-6", "instructions": "Be brief.", "input": [
            {"role": "user", "content": "hello there"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let compacted: Value = r.json().await.unwrap();
    let item = compacted["output"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(item["type"], "compaction", "{compacted}");
    // Both replies were paid for: the provider's (no compaction in it) and the summary.
    assert_eq!(
        (
            compacted["usage"]["input_tokens"].as_u64(),
            compacted["usage"]["output_tokens"].as_u64()
        ),
        (Some(24), Some(10)),
        "compaction usage is counted: {compacted}"
    );
    let asked: Vec<Value> = upstream
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(
        asked.len(),
        2,
        "the provider's compaction, then hermes' summary"
    );
    assert_eq!(
        asked[0]["compaction"],
        json!({"type": "summarize"}),
        "{}",
        asked[0]
    );
    assert!(asked[1].get("compaction").is_none(), "{}", asked[1]);
    assert!(
        asked[1]
            .to_string()
            .contains("Summarise the conversation above"),
        "{}",
        asked[1]
    );

    let r = client
        .post(gateway.url("/v1/responses"))
        .bearer_auth(KEY)
        .json(&json!({"model": "anthropic/claude-opus-4-6", "input": [
            {"role": "user", "content": "hello there"},
            item,
            {"role": "user", "content": "And now?"},
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let received = upstream.received_requests().await.unwrap();
    let after = String::from_utf8_lossy(&received[2].body).into_owned();
    assert!(
        after.contains("[Summary of the earlier conversation]")
            && after.contains("They greeted each other."),
        "hermes' summary stands where the item was: {after}"
    );
    gateway.stop().await;
}

/// Codex's remote compaction (a provider named "OpenAI"): the input ends with a
/// `compaction_trigger` item and the answer, streamed, is exactly one compaction item; sent
/// back in the next request, it stands for the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_trigger_is_answered_with_one_compaction_item() {
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| c).await;
    let client = reqwest::Client::new();
    let history = json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello there"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
    ]);
    let mut input = history.as_array().unwrap().clone();
    input.push(json!({"type": "compaction_trigger"}));
    let r = client
        .post(gateway.url("/v1/responses"))
        .bearer_auth(KEY)
        .json(
            &json!({"model": "deepseek/deepseek-v4-pro", "input": input, "stream": true,
                      "tools": [], "store": false}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let events = crate::sse_data(&text);
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .collect();
    assert_eq!(done.len(), 1, "exactly one item: {text}");
    let item = done[0]["item"].clone();
    assert_eq!(item["type"], "compaction");
    assert_eq!(events.last().unwrap()["type"], "response.completed");

    let mut next = history.as_array().unwrap()[..2].to_vec();
    next.push(item);
    next.push(json!({"type": "message", "role": "user", "content": "Thanks. Say that once more."}));
    let r = client
        .post(gateway.url("/v1/responses"))
        .bearer_auth(KEY)
        .json(&json!({"model": "deepseek/deepseek-v4-pro", "input": next}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body.to_string();
    assert!(
        last.contains("[Summary of the earlier conversation]"),
        "{last}"
    );
    gateway.stop().await;
}

/// A malformed `Idempotency-Key` is refused on a compaction request as on any other turn, and
/// nothing is sent upstream or stored (Schemathesis, `cargo xtask fuzz --api`: the compaction
/// path answered 200 without reading the header).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_with_a_malformed_idempotency_key_is_refused() {
    let (sim, gateway) = crate::sim_gateway("deepseek-v4", "deepseek", |c| c).await;
    let input = json!([
        {"type": "message", "role": "user", "content": "hello there"},
        {"type": "compaction_trigger"},
    ]);
    for key in ["x".repeat(256), "tab\there".to_owned()] {
        let r = reqwest::Client::new()
            .post(gateway.url("/v1/responses"))
            .bearer_auth(KEY)
            .header("idempotency-key", key.as_str())
            .json(&json!({"model": "deepseek/deepseek-v4-pro", "input": input}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{key:.20}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["param"], "Idempotency-Key", "{body}");
    }
    assert!(sim.requests().is_empty(), "nothing went upstream");
    gateway.stop_storing_nothing("a refused compaction").await;
}

/// `previous_response_id`: a client that keeps nothing but response ids (the official openai
/// client, `store` on) holds a tool conversation on a must-echo upstream (DeepSeek V4) and on
/// Claude: each turn sends only what is new and names the response before it; the gateway
/// puts the conversation as that response left it before the input, so every upstream request
/// carries the whole history with its minted carriers, and all three turns are one session.
/// An id nobody kept is OpenAI's 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_only_response_ids_continues_its_conversation() {
    const CHAIN: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/openai_responses_chain.py"
    );
    for (profile, provider, model, effort) in [
        ("deepseek-v4", "deepseek", "deepseek/deepseek-v4-pro", None),
        (
            "anthropic",
            "anthropic",
            "anthropic/claude-opus-4-6",
            Some("high"),
        ),
    ] {
        let Some(python) = hermes_test_support::sdk::sdk_python("openai", PROBE) else {
            return;
        };
        let (sim, gateway) = crate::sim_gateway(profile, provider, |c| c).await;
        let input =
            json!({"base_url": gateway.base(), "key": KEY, "model": model, "effort": effort});
        let seen =
            tokio::task::spawn_blocking(move || run_script(python, CHAIN, "OPENAI_", &input))
                .await
                .unwrap();
        let turns = seen["turns"].as_array().unwrap();
        assert!(
            turns[0]["types"].to_string().contains("function_call"),
            "{profile}: {seen}"
        );
        assert_eq!(
            turns[1]["previous_response_id"], turns[0]["id"],
            "{profile}"
        );
        assert_eq!(
            turns[2]["previous_response_id"], turns[1]["id"],
            "{profile}"
        );
        let session = &turns[0]["session"];
        assert!(
            turns.iter().all(|t| t["session"] == *session),
            "{profile}: one session: {seen}"
        );
        assert_eq!(seen["unknown"]["status"], 400, "{profile}: {seen}");
        assert!(
            seen["unknown"]["body"]["message"]
                .as_str()
                .unwrap()
                .contains("Previous response with id 'resp_nobody_kept' not found."),
            "{seen}"
        );

        let requests = sim.requests();
        assert_eq!(requests.len(), 3, "{profile}: three turns, each accepted");
        assert!(requests.iter().all(|r| r.status == 200), "{profile}");
        let session = session.as_str().unwrap();
        let stored = gateway.store.messages(session).await.unwrap();
        assert_eq!(
            roles(&gateway.store, session).await,
            TOOL_TURN_THEN_A_TURN,
            "{profile}"
        );
        let later: Vec<&Value> = requests[1..].iter().map(|r| &r.body).collect();
        for body in &later {
            assert!(
                body.to_string().contains("what time is it?"),
                "{profile}: the whole history: {body}"
            );
        }
        minted_went_back(&stored[1], &[], &later, profile);
        gateway.stop().await;
    }
}
