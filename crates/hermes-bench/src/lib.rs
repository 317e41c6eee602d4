//! hermes-bench: the standard benchmark history (a port of the Python original's
//! `gen_history.py`, docs/bench-baseline.md) and the measuring helpers behind `cargo xtask bench`.

pub mod continued;
pub mod gateway;
pub mod litellm;
pub mod requests;
pub mod serve;
pub mod storage;

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The generator's seed.
pub const SEED: u64 = 0x5EED;

const POOL_LEN: usize = 1 << 18;
const TEXT_ALPHABET: &[u8; 64] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP0123456789        .,\n\"";
const ARG_ALPHABET: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01";

/// Fingerprints of the standard history published with the Python generator:
/// (N, byte length, SHA-256 of the compact JSON).
pub const FINGERPRINTS: [(usize, usize, &str); 3] = [
    (
        100,
        2_335_323,
        "473fd2ac033a16f10fdbc18b354aa3da13efe0d5c5be62a1411ce3e69f433e8a",
    ),
    (
        1_000,
        23_350_441,
        "534720aff9460ff0dbe5f8344a02062e14d04a502706cf7a796213349054a7ad",
    ),
    (
        5_000,
        116_753_231,
        "5908181b01f56b84d74ad76ec5096145275abf3cc147d0a8f39237c12414228f",
    ),
];

/// SplitMix64, as in the Python generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }

    fn offset(&mut self, len: usize) -> usize {
        // The modulus is below 2^18, so the result fits any usize.
        (self.next() % (POOL_LEN - len) as u64) as usize
    }
}

/// The standard history's turns, one at a time: each item is a turn's four messages (user,
/// assistant tool call, tool result, final assistant) as JSON values, keys in the generator's
/// order. Turn `i` is the same whatever the history's length, so a long session can be grown
/// turn by turn without holding the whole history.
pub struct StandardTurns {
    rng: SplitMix64,
    byte_pool: Vec<u8>,
    text_pool: String,
    arg_pool: String,
    next: usize,
    end: usize,
}

impl StandardTurns {
    /// The first `n_turns` turns of the standard history.
    pub fn new(n_turns: usize) -> Self {
        let mut rng = SplitMix64(SEED);
        let byte_pool = rng.bytes(POOL_LEN);
        let raw = rng.bytes(POOL_LEN);
        let text_pool: String = raw
            .iter()
            .map(|b| TEXT_ALPHABET[(b & 63) as usize] as char)
            .collect();
        let arg_pool: String = raw
            .iter()
            .map(|b| ARG_ALPHABET[(b & 63) as usize] as char)
            .collect();
        StandardTurns {
            rng,
            byte_pool,
            text_pool,
            arg_pool,
            next: 0,
            end: n_turns,
        }
    }

    fn text(&mut self, n: usize) -> String {
        let off = self.rng.offset(n);
        self.text_pool[off..off + n].to_owned()
    }

    fn b64(&mut self, n_chars: usize) -> String {
        let nbytes = n_chars / 4 * 3;
        let off = self.rng.offset(nbytes);
        base64::engine::general_purpose::STANDARD.encode(&self.byte_pool[off..off + nbytes])
    }
}

impl Iterator for StandardTurns {
    type Item = [Value; 4];

    fn next(&mut self) -> Option<[Value; 4]> {
        if self.next >= self.end {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let call_id = format!("call_{i:06}");
        let prefix = "{\"query\": \"";
        let off = self.rng.offset(100);
        let args = format!(
            "{prefix}{}\"}}",
            &self.arg_pool[off..off + 100 - prefix.len() - 2]
        );
        let user = json!({"role": "user", "content": self.text(200)});
        let (rc, r, rd_text) = (self.text(4096), self.text(4096), self.text(4096));
        let (sig, data) = (self.b64(200), self.b64(8192));
        let assistant = json!({
            "role": "assistant",
            "content": "",
            "reasoning_content": rc,
            "reasoning": r,
            "reasoning_details": [
                {"type": "reasoning.text", "text": rd_text, "signature": sig},
                {"type": "reasoning.encrypted", "data": data},
            ],
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": "web_search", "arguments": args}}],
        });
        let tool = json!({"role": "tool", "tool_call_id": call_id, "content": self.text(1024)});
        let last = json!({"role": "assistant", "content": self.text(500)});
        Some([user, assistant, tool, last])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

/// The standard N-turn history as a JSON value, message keys in the generator's order.
pub fn standard_history(n_turns: usize) -> Value {
    let mut history = Vec::with_capacity(n_turns * 4);
    history.extend(StandardTurns::new(n_turns).flatten());
    Value::Array(history)
}

/// The standard history's compact JSON bytes (what the Python generator writes).
pub fn standard_history_bytes(n_turns: usize) -> Vec<u8> {
    serde_json::to_vec(&standard_history(n_turns)).unwrap_or_default()
}

/// A native wire the shaping table measures: (row label, provider id, base URL, model).
pub type NativeRoute = (&'static str, &'static str, &'static str, &'static str);

/// The native wires' routes, one per wire: Claude models that keep earlier thinking (so every
/// stored signed block is replayed), Gemini 3 (signatures on calls and text parts) and a
/// Responses reasoning model (encrypted reasoning items).
pub const NATIVE_ROUTES: [NativeRoute; 4] = [
    (
        "anthropic",
        "anthropic",
        "https://api.anthropic.com",
        "claude-opus-4-6",
    ),
    (
        "bedrock",
        "bedrock",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        "us.anthropic.claude-opus-4-6-v1:0",
    ),
    (
        "gemini",
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini-3-pro-preview",
    ),
    (
        "responses",
        "openai-responses",
        "https://api.openai.com/v1",
        "gpt-5",
    ),
];

/// The standard N-turn history as the native wire of `route` stores it: the same turns (same
/// seed, same texts and base64), each tool-calling assistant message's carriers moved onto that
/// wire's stored shape and stamped with the route's origin, so its encode replays them all.
/// Anthropic and Bedrock Claude: the signed `thinking` block (the reasoning-details text and
/// signature) and the `redacted_thinking` block (the encrypted data) as the Anthropic capture
/// stores them. Gemini: the signature on the tool call and the encrypted data as the signature
/// of the final text turn. Responses: an encrypted reasoning item (`codex_reasoning_items`)
/// paired with its stored `function_call` item.
pub fn native_history(route: &NativeRoute, n_turns: usize) -> Value {
    let &(_, provider, base_url, model) = route;
    let host = base_url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or(base_url);
    let origin = json!({"provider": provider, "host": host, "model": model});
    let mut history = Vec::with_capacity(n_turns * 4);
    for (i, [user, mut assistant, tool, mut last]) in StandardTurns::new(n_turns).enumerate() {
        let Some(msg) = assistant.as_object_mut() else {
            continue;
        };
        let details = msg.remove("reasoning_details").unwrap_or_default();
        msg.remove("reasoning");
        let text = details[0]["text"].clone();
        let sig = details[0]["signature"].clone();
        let data = details[1]["data"].clone();
        match provider {
            "anthropic" | "bedrock" => {
                msg.insert(
                    "reasoning_details".into(),
                    json!([
                        {"type": "thinking", "thinking": text, "signature": sig},
                        {"type": "redacted_thinking", "data": data},
                    ]),
                );
                msg.insert(
                    "hermes_block_order".into(),
                    json!(["thinking", "redacted_thinking", "tool_use"]),
                );
            }
            "gemini" => {
                msg["tool_calls"][0]["extra_content"] =
                    json!({"google": {"thought_signature": sig}});
                last["reasoning_details"] = json!([{"type": "hermes.native_assistant",
                    "extra_content": {"google": {"thought_signature": data}}}]);
                last["origin"] = origin.clone();
            }
            _ => {
                let call = msg["tool_calls"][0].clone();
                let item_id = format!("fc_{i:06}");
                msg["tool_calls"][0]["call_id"] = call["id"].clone();
                msg["tool_calls"][0]["response_item_id"] = json!(item_id);
                msg.insert(
                    "codex_reasoning_items".into(),
                    json!([{"id": format!("rs_{i:06}"), "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": text}],
                        "encrypted_content": data}]),
                );
                msg.insert(
                    "codex_message_items".into(),
                    json!([{"id": item_id, "type": "function_call", "status": "completed",
                        "arguments": call["function"]["arguments"], "call_id": call["id"],
                        "name": call["function"]["name"]}]),
                );
                msg.insert(
                    "hermes_block_order".into(),
                    json!(["reasoning", "function_call"]),
                );
            }
        }
        msg.insert("origin".into(), origin.clone());
        history.extend([user, assistant, tool, last]);
    }
    Value::Array(history)
}

/// [`native_history`] as compact JSON: what its fingerprint is taken of.
pub fn native_history_bytes(route: &NativeRoute, n_turns: usize) -> Vec<u8> {
    serde_json::to_vec(&native_history(route, n_turns)).unwrap_or_default()
}

/// Fingerprints of each native wire's history, pinned so a change to the generator shows:
/// (label, N, byte length, SHA-256 of [`native_history_bytes`]).
pub const NATIVE_FINGERPRINTS: [(&str, usize, usize, &str); 12] = [
    (
        "anthropic",
        100,
        1_926_316,
        "7c691f044f40d930441fc3861f02da5c06f3796b42076c8ca55b8a41ab59cd00",
    ),
    (
        "bedrock",
        100,
        1_930_116,
        "f8e4d6723b5965fc2a80c102c9d7cc26a82bf8298253152a5d59bbd1d6ee1902",
    ),
    (
        "gemini",
        100,
        1_514_812,
        "425636d6549f55017216068e40cdec0af0a0f9a06d18d7d06eb0262643198da1",
    ),
    (
        "responses",
        100,
        1_937_116,
        "c9373e8e53d1d061e199ff9020eed8ee0f4505548426b1a20523fa8692348b4c",
    ),
    (
        "anthropic",
        1_000,
        19_260_652,
        "85f599f3f9be40fd2f74bf253a925c98b0e04471059ffa01012f11e4a0cfd3d6",
    ),
    (
        "bedrock",
        1_000,
        19_298_652,
        "cde9c40d170c5a08c07b861d7aee94cf916f179a56c565f66c9aed37d7ada130",
    ),
    (
        "gemini",
        1_000,
        15_147_221,
        "69bdaf29a5cb4358961f7203c39eed79d7d742e4d48c6eef26791b1ae4ac7ef7",
    ),
    (
        "responses",
        1_000,
        19_368_652,
        "48cd8d87670832ad8a8a8175b01d62282a94ac03453400b33a92cbcbb57900af",
    ),
    (
        "anthropic",
        5_000,
        96_304_643,
        "fbe27d96c375ff90bd5a40562e250500b4c8ccac17234b605c98293dc2442baf",
    ),
    (
        "bedrock",
        5_000,
        96_494_643,
        "4a281f317a18c0d29a35c0b1e8281df856aa196ec918f13f2d7731fb02bc9ebd",
    ),
    (
        "gemini",
        5_000,
        75_735_549,
        "deb40e1e48566091c0007d203d84abefb920bebd6e544a68bc69c09ff50df6f9",
    ),
    (
        "responses",
        5_000,
        96_844_643,
        "372dad4ee4b17b017732394b1e0af98947315d6db37fc5094057d6a6a83eb980",
    ),
];

/// What the fingerprint of `bytes`, the `label` history at N, says against the pinned one: its
/// SHA-256 and the verdict to print, or `Err` (why) when it does not match the pinned one — the
/// bench then measured another history than the one its figures stand for, and fails.
pub fn fingerprint_verdict(
    label: &str,
    n: usize,
    bytes: &[u8],
) -> Result<(String, &'static str), String> {
    let sha = sha256_hex(bytes);
    match NATIVE_FINGERPRINTS
        .iter()
        .find(|f| f.0 == label && f.1 == n)
    {
        None => Ok((sha, "no pinned fingerprint")),
        Some(f) if f.2 == bytes.len() && f.3 == sha => Ok((sha, "matches the pinned fingerprint")),
        Some(f) => Err(format!(
            "the {label} history at N={n} is {} bytes, sha256 {sha}: it does not match the pinned fingerprint ({} bytes, sha256 {})",
            bytes.len(),
            f.2,
            f.3
        )),
    }
}

/// The wire of `route`, built through its registered descriptor as the engine builds it (no
/// credentials: auth never changes a body), with the route's decision from `table`.
pub fn native_wire(
    table: &hermes_core::RouteTable,
    route: &NativeRoute,
) -> Result<(Box<dyn hermes_core::Wire>, hermes_core::RouteDecision), hermes_core::TransportError> {
    let &(label, provider, base_url, model) = route;
    let wires = hermes_engine::builtin_wires();
    let (_, descriptor) = wires.provider(provider).ok_or_else(|| {
        hermes_core::TransportError::Decode(format!("{label}: no wire serves provider {provider}"))
    })?;
    let wire = descriptor.build(
        &hermes_providers::WireTarget::new(provider, model, base_url),
        hermes_providers::ChatTransport::new()?,
        hermes_providers::Credentials::default(),
    );
    let decision = table.resolve(
        &hermes_core::RouteTarget::new(provider, Some(base_url), model),
        hermes_core::ResolveOptions::default(),
    );
    Ok((wire, decision))
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs `f` `runs` times and returns every duration, sorted.
pub fn sample<T>(runs: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .collect();
    times.sort();
    times
}

/// The median of sorted samples.
pub fn median(sorted: &[Duration]) -> Duration {
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The Python original's shaped `messages` arrays for the standard history (route label,
/// provider, model, base URL, N, bytes, sha256), from docs/bench-baseline.md; hermes must
/// match the deepseek and mistral rows byte for byte.
pub const PYTHON_SHAPED: &[(&str, &str, &str, &str, usize, usize, &str)] = &[
    (
        "deepseek",
        "deepseek",
        "deepseek-v4-flash",
        "https://api.deepseek.com/v1",
        100,
        640_912,
        "edc046ccb3bb886a9d02878619d1443f4b9b1985f57ae804e8bc28bc5a4cc1f8",
    ),
    (
        "mistral",
        "mistral",
        "mistral-large-latest",
        "https://api.mistral.ai/v1",
        100,
        213_960,
        "2b7fc22a21cf77e1a89197e6956fbc4748de5d37490583e888f3ab3c72966eac",
    ),
    (
        "deepseek",
        "deepseek",
        "deepseek-v4-flash",
        "https://api.deepseek.com/v1",
        1_000,
        6_408_221,
        "51994af1b3088881b35b8b3df13cce76a620f03bd823cb92ed6b30a4d0b17bad",
    ),
    (
        "mistral",
        "mistral",
        "mistral-large-latest",
        "https://api.mistral.ai/v1",
        1_000,
        2_138_353,
        "bf406aad0a9d38499f197426a5d7165e5f9b9261c2600f77c97716c8ebb1878a",
    ),
];

/// The compact `messages` array hermes shapes for `history` on the route of `provider`,
/// `model` and `base_url` (no thinking preference, no verdicts).
pub fn shaped_messages(
    table: &hermes_core::RouteTable,
    history: &[hermes_core::Message],
    provider: &str,
    model: &str,
    base_url: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let decision = table.resolve(
        &hermes_core::RouteTarget::new(provider, Some(base_url), model),
        hermes_core::ResolveOptions::default(),
    );
    let wire = hermes_wire_chat::shape(
        &hermes_wire_chat::ShapeContext::new(&decision, &hermes_core::Verdicts::default()),
        history,
    );
    serde_json::to_vec(&wire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaped_messages_match_the_python_originals_fingerprints_at_100_turns() {
        let history: Vec<hermes_core::Message> =
            serde_json::from_slice(&standard_history_bytes(100)).unwrap();
        let table = hermes_providers::builtin_table();
        for &(label, provider, model, base, n, len, sha) in PYTHON_SHAPED {
            if n != 100 {
                continue;
            }
            let bytes = shaped_messages(&table, &history, provider, model, base).unwrap();
            assert_eq!(
                (bytes.len(), sha256_hex(&bytes).as_str()),
                (len, sha),
                "{label}: the messages array differs from the Python original's"
            );
        }
    }

    /// Every signature, encrypted item and thinking text the native history stores goes out in
    /// its wire's body at N=100, byte for byte, so the shaping rows measure replay work.
    #[test]
    fn each_native_wire_encodes_every_stored_carrier_of_its_history_at_100_turns() {
        let table = hermes_providers::builtin_table();
        for route in &NATIVE_ROUTES {
            let value = native_history(route, 100);
            let history: Vec<hermes_core::Message> = serde_json::from_value(value.clone()).unwrap();
            let (wire, decision) = native_wire(&table, route).unwrap();
            let verdicts = hermes_core::Verdicts::default();
            let out = wire
                .encode(&hermes_core::RequestParts::new(
                    &history, &decision, &verdicts,
                ))
                .unwrap();
            let body = String::from_utf8(out.body).unwrap();
            let mut carriers = Vec::new();
            for msg in value.as_array().unwrap() {
                for details in msg["reasoning_details"].as_array().into_iter().flatten() {
                    carriers.extend(["signature", "data", "thinking"].map(|k| &details[k]));
                    carriers.push(&details["extra_content"]["google"]["thought_signature"]);
                }
                for call in msg["tool_calls"].as_array().into_iter().flatten() {
                    carriers.push(&call["extra_content"]["google"]["thought_signature"]);
                }
                for item in msg["codex_reasoning_items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    carriers.extend([&item["encrypted_content"], &item["id"]]);
                }
            }
            let carriers: Vec<&str> = carriers.into_iter().filter_map(Value::as_str).collect();
            // Claude: signature, redacted data and thinking text per turn; Gemini: the call's
            // and the text part's signatures; Responses: the encrypted item and its id.
            let expected = match route.0 {
                "anthropic" | "bedrock" => 300,
                _ => 200,
            };
            assert_eq!(carriers.len(), expected, "{}: carriers stored", route.0);
            for carrier in carriers {
                // The texts hold `"` and newlines: look for them as JSON strings.
                let quoted = serde_json::to_string(carrier).unwrap();
                let as_sent = quoted.replace('/', "\\/");
                assert!(
                    body.contains(&quoted) || body.contains(&as_sent),
                    "{}: the body lacks the stored carrier {}…",
                    route.0,
                    &quoted[..40.min(quoted.len())]
                );
            }
        }
    }

    /// The native histories are generated deterministically: each one at N=100 is the pinned
    /// bytes.
    #[test]
    fn native_histories_match_their_pinned_fingerprints_at_100_turns() {
        for route in &NATIVE_ROUTES {
            let bytes = native_history_bytes(route, 100);
            assert_eq!(
                fingerprint_verdict(route.0, 100, &bytes).map(|v| v.1),
                Ok("matches the pinned fingerprint"),
                "{}",
                route.0
            );
        }
        let mismatch = fingerprint_verdict("gemini", 100, b"[]")
            .expect_err("a different history is told apart, and fails the bench");
        assert!(
            mismatch.contains("does not match the pinned fingerprint"),
            "{mismatch}"
        );
    }

    #[test]
    fn standard_history_matches_the_python_fingerprint_at_100_turns() {
        let bytes = standard_history_bytes(100);
        let (n, len, sha) = FINGERPRINTS[0];
        assert_eq!(n, 100);
        assert_eq!(bytes.len(), len);
        assert_eq!(sha256_hex(&bytes), sha);
    }
}
