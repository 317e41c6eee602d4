//! Signed thinking for the `anthropic` profile: the digest of the conversation prefix a reply was
//! made for, and the `thinking` signatures and `redacted_thinking` data the scripted model mints
//! and later verifies.
//!
//! A signature is `base64(token ‖ HMAC(key, token ‖ prefix digest ‖ thinking text))` (see
//! [`crate::sign::seal_bound`]); redacted data is `base64(token ‖ payload ‖ HMAC(…, prefix
//! digest))`. The token names the reply the block came from, its position among the reply's
//! thinking blocks and their count, so the profile can tell a genuine block from a forged one
//! (signature check) and a complete, ordered latest turn from a modified one (sequence check)
//! without remembering anything: a fresh simulator with the same key verifies old blocks.
//!
//! That format (`hsa1`) is the Bedrock Converse doors'. The Messages doors (direct, Foundry,
//! Vertex, Bedrock InvokeModel) mint `hsa2` blocks ([`sign_messages_thinking`],
//! [`seal_messages_redacted`]): the token plus four keyed tags (prefix digest, tools, model,
//! account) carried in the clear and sealed with the text, so the rules can tell a forged block
//! (the seal fails) from a genuine block replayed onto another prefix, tools list, model or
//! account (a tag differs) — unbound requests compare only the prefix tag, as before
//! (`super::binding`).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{content_blocks, text_block};
use crate::sign;
use crate::wire::canonical;

/// Domain of thinking signatures.
const THINKING_DOMAIN: &str = "anthropic thinking";
/// Domain of redacted-thinking data.
const REDACTED_DOMAIN: &str = "anthropic redacted_thinking";
/// Domain of Messages thinking signatures (with binding tags).
const MESSAGES_THINKING_DOMAIN: &str = "anthropic messages thinking";
/// Domain of Messages redacted-thinking data (with binding tags).
const MESSAGES_REDACTED_DOMAIN: &str = "anthropic messages redacted_thinking";
/// Version tag at the start of every token.
const MAGIC: &[u8; 4] = b"hsa1";
/// Length of the reply id inside a token.
const REPLY_LEN: usize = 12;
/// Length of an encoded token.
const TOKEN_LEN: usize = MAGIC.len() + REPLY_LEN + 2;

/// SHA-256 of a normalised conversation prefix ([`prefix_digest`]).
pub(crate) type PrefixDigest = [u8; 32];

/// Where a minted block sits: the reply it came from, its position among that reply's thinking
/// and redacted-thinking blocks, and how many the reply had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) reply: [u8; REPLY_LEN],
    pub(crate) pos: u8,
    pub(crate) count: u8,
}

impl Token {
    /// A reply id derived from `seed` (deterministic).
    pub(crate) fn reply_id(seed: &[u8]) -> [u8; REPLY_LEN] {
        let digest = Sha256::digest(seed);
        let mut id = [0u8; REPLY_LEN];
        id.copy_from_slice(&digest[..REPLY_LEN]);
        id
    }

    /// The tokens of one reply's `count` signed blocks, by position: the reply id derived from
    /// the prefix `digest` and the reply's `seed`.
    pub(crate) fn of_reply(digest: &[u8], seed: &str, count: u8) -> impl Fn(u8) -> Token {
        let mut id_seed = digest.to_vec();
        id_seed.extend_from_slice(seed.as_bytes());
        let reply = Token::reply_id(&id_seed);
        move |pos| Token { reply, pos, count }
    }

    fn bytes(self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&self.reply);
        out.push(self.pos);
        out.push(self.count);
        out
    }

    fn parse(bytes: &[u8]) -> Option<Token> {
        if bytes.len() < TOKEN_LEN || !bytes.starts_with(MAGIC) {
            return None;
        }
        let mut reply = [0u8; REPLY_LEN];
        reply.copy_from_slice(&bytes[MAGIC.len()..MAGIC.len() + REPLY_LEN]);
        Some(Token {
            reply,
            pos: bytes[TOKEN_LEN - 2],
            count: bytes[TOKEN_LEN - 1],
        })
    }
}

/// Signs a thinking block's text for the conversation prefix `digest`.
pub(crate) fn sign_thinking(key: &[u8], digest: &PrefixDigest, text: &str, token: Token) -> String {
    sign::seal_bound(
        key,
        THINKING_DOMAIN,
        &token.bytes(),
        &thinking_bound(digest, text),
    )
}

/// The token of a thinking signature that verifies against `text` and `digest`.
pub(crate) fn verify_thinking(
    key: &[u8],
    digest: &PrefixDigest,
    text: &str,
    signature: &str,
) -> Option<Token> {
    let token = sign::open_bound(
        key,
        THINKING_DOMAIN,
        signature,
        &thinking_bound(digest, text),
    )?;
    (token.len() == TOKEN_LEN).then(|| Token::parse(&token))?
}

fn thinking_bound(digest: &PrefixDigest, text: &str) -> Vec<u8> {
    let mut bound = digest.to_vec();
    bound.extend_from_slice(text.as_bytes());
    bound
}

/// Seals a redacted-thinking payload for the conversation prefix `digest`.
pub(crate) fn seal_redacted(
    key: &[u8],
    digest: &PrefixDigest,
    token: Token,
    payload: &[u8],
) -> String {
    let mut included = token.bytes();
    included.extend_from_slice(payload);
    sign::seal_bound(key, REDACTED_DOMAIN, &included, digest)
}

/// The token of redacted data that verifies against `digest`.
pub(crate) fn open_redacted(key: &[u8], digest: &PrefixDigest, data: &str) -> Option<Token> {
    let included = sign::open_bound(key, REDACTED_DOMAIN, data, digest)?;
    Token::parse(&included)
}

/// Digest of the conversation prefix: `system` (a string and an array of text blocks with the
/// same texts are the same) followed by [`messages_chain`] of the messages.
pub(crate) fn prefix_digest(system: Option<&Value>, messages: &[Value]) -> PrefixDigest {
    let mut h = Sha256::new();
    h.update(b"system\0");
    for block in system_blocks(system) {
        h.update(canonical(&block));
        h.update([0]);
    }
    h.update(b"messages\0");
    h.update(messages_chain(messages));
    h.finalize().into()
}

/// A hash chain over every message's `(role, block)` pairs, with thinking and
/// redacted-thinking blocks dropped, `cache_control` removed, string content read as one text
/// block and a `false` `is_error` read as absent; object keys are compared sorted. Consecutive
/// messages of one role give the same chain as their merge (the API combines them). A
/// `compaction` block sets the chain to the state it carries (that of the messages it
/// summarised, [`super::compaction`]), so what follows it chains on as it did before the
/// compaction.
pub(crate) fn messages_chain(messages: &[Value]) -> [u8; 32] {
    let mut state: [u8; 32] = Sha256::digest(b"anthropic messages chain").into();
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        for block in content_blocks(m.get("content")) {
            if let Some(carried) = super::compaction::carried_chain(&block) {
                state = carried;
                continue;
            }
            if let Some(block) = normalized(block) {
                let mut h = Sha256::new();
                h.update(state);
                h.update(role.as_bytes());
                h.update([0]);
                h.update(canonical(&block));
                state = h.finalize().into();
            }
        }
    }
    state
}

/// What a Messages block is bound to besides its text: the prefix digest ([`prefix_digest`]),
/// the tools ([`super::binding::tools_digest`]), the model id and the account
/// ([`super::binding::account_hash`]).
#[derive(Clone, Debug)]
pub(crate) struct Binding<'a> {
    pub(crate) prefix: PrefixDigest,
    pub(crate) tools: [u8; 32],
    pub(crate) model: &'a str,
    pub(crate) account: [u8; 32],
}

/// Version tag of a Messages token with binding tags.
const MAGIC_BOUND: &[u8; 4] = b"hsa2";
/// Length of one binding tag.
const TAG_LEN: usize = 16;
/// Length of a Messages token: [`MAGIC_BOUND`], reply id, position, count, four tags.
const BOUND_TOKEN_LEN: usize = MAGIC_BOUND.len() + REPLY_LEN + 2 + 4 * TAG_LEN;

impl Binding<'_> {
    /// The four tags, in token order: prefix, tools, model, account.
    fn tags(&self, key: &[u8]) -> [[u8; TAG_LEN]; 4] {
        let cut = |full: [u8; 32]| {
            let mut t = [0u8; TAG_LEN];
            t.copy_from_slice(&full[..TAG_LEN]);
            t
        };
        use super::binding::keyed;
        [
            cut(keyed(key, "bind prefix", &self.prefix)),
            cut(keyed(key, "bind tools", &self.tools)),
            cut(keyed(key, "bind model", self.model.as_bytes())),
            cut(keyed(key, "bind account", &self.account)),
        ]
    }

    fn carried(&self, key: &[u8], token: Token) -> Vec<u8> {
        let mut out = MAGIC_BOUND.to_vec();
        out.extend_from_slice(&token.reply);
        out.push(token.pos);
        out.push(token.count);
        for t in self.tags(key) {
            out.extend_from_slice(&t);
        }
        out
    }
}

/// A genuine Messages block, opened: its token and which bindings match the request replaying
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) token: Token,
    pub(crate) prefix: bool,
    pub(crate) tools: bool,
    pub(crate) model: bool,
    pub(crate) account: bool,
}

fn open_carried(key: &[u8], carried: &[u8], binding: &Binding<'_>) -> Option<Opened> {
    if carried.len() < BOUND_TOKEN_LEN || !carried.starts_with(MAGIC_BOUND) {
        return None;
    }
    let mut reply = [0u8; REPLY_LEN];
    let at = MAGIC_BOUND.len();
    reply.copy_from_slice(&carried[at..at + REPLY_LEN]);
    let token = Token {
        reply,
        pos: carried[at + REPLY_LEN],
        count: carried[at + REPLY_LEN + 1],
    };
    let tags_at = at + REPLY_LEN + 2;
    let want = binding.tags(key);
    let ok = |i: usize| {
        let from = tags_at + i * TAG_LEN;
        carried[from..from + TAG_LEN] == want[i]
    };
    Some(Opened {
        token,
        prefix: ok(0),
        tools: ok(1),
        model: ok(2),
        account: ok(3),
    })
}

/// A Messages `thinking` signature: `base64(carried ‖ HMAC(key, carried ‖ text))`, the carried
/// part holding the token and the four binding tags.
pub(crate) fn sign_messages_thinking(
    key: &[u8],
    binding: &Binding<'_>,
    text: &str,
    token: Token,
) -> String {
    sign::seal_bound(
        key,
        MESSAGES_THINKING_DOMAIN,
        &binding.carried(key, token),
        text.as_bytes(),
    )
}

/// Opens a Messages `thinking` signature over `text`: `None` when it is not genuine (forged, or
/// the text was altered), else the token and the bindings compared with `binding`.
pub(crate) fn open_messages_thinking(
    key: &[u8],
    binding: &Binding<'_>,
    text: &str,
    signature: &str,
) -> Option<Opened> {
    let carried = sign::open_bound(key, MESSAGES_THINKING_DOMAIN, signature, text.as_bytes())?;
    (carried.len() == BOUND_TOKEN_LEN).then(|| open_carried(key, &carried, binding))?
}

/// Messages `redacted_thinking` data: `base64(carried ‖ payload ‖ HMAC(…))`.
pub(crate) fn seal_messages_redacted(
    key: &[u8],
    binding: &Binding<'_>,
    token: Token,
    payload: &[u8],
) -> String {
    let mut included = binding.carried(key, token);
    included.extend_from_slice(payload);
    sign::seal_bound(key, MESSAGES_REDACTED_DOMAIN, &included, b"")
}

/// Opens Messages redacted data, as [`open_messages_thinking`].
pub(crate) fn open_messages_redacted(
    key: &[u8],
    binding: &Binding<'_>,
    data: &str,
) -> Option<Opened> {
    let included = sign::open_bound(key, MESSAGES_REDACTED_DOMAIN, data, b"")?;
    open_carried(key, &included, binding)
}

fn system_blocks(system: Option<&Value>) -> Vec<Value> {
    match system {
        Some(Value::String(s)) => vec![text_block(s)],
        Some(Value::Array(blocks)) => blocks.iter().map(without_cache_control).collect(),
        _ => Vec::new(),
    }
}

fn without_cache_control(block: &Value) -> Value {
    let mut block = block.clone();
    if let Some(o) = block.as_object_mut() {
        o.shift_remove("cache_control");
    }
    block
}

/// The block as it counts for the prefix, or `None` for thinking blocks.
fn normalized(block: Value) -> Option<Value> {
    let Value::Object(mut o) = block else {
        return Some(block);
    };
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    if kind == "thinking" || kind == "redacted_thinking" {
        return None;
    }
    let tool_result = kind == "tool_result";
    o.shift_remove("cache_control");
    if tool_result {
        if o.get("is_error") == Some(&Value::Bool(false)) {
            o.shift_remove("is_error");
        }
        let content = o.get("content").map(|c| match c {
            Value::String(s) => json!([text_block(s)]),
            Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
            other => other.clone(),
        });
        if let Some(c) = content {
            o.insert("content".into(), c);
        }
    }
    Some(Value::Object(o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_KEY;

    fn digest(system: Value, messages: Value) -> PrefixDigest {
        let sys = (!system.is_null()).then_some(&system);
        prefix_digest(sys, messages.as_array().map_or(&[][..], Vec::as_slice))
    }

    #[test]
    fn the_prefix_ignores_thinking_cache_control_and_string_form() {
        let a = digest(
            json!("be brief"),
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {"b": 1, "a": 2}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12:00", "is_error": false}
                ]}
            ]),
        );
        let b = digest(
            json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {"a": 2, "b": 1}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "12:00"}]}
                ]}
            ]),
        );
        assert_eq!(a, b);
        let c = digest(
            json!("be briefer"),
            json!([{"role": "user", "content": "hi"}]),
        );
        let d = digest(
            json!("be brief"),
            json!([{"role": "user", "content": "hi"}]),
        );
        assert_ne!(c, d);
        let split = digest(
            Value::Null,
            json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
        );
        let merged = digest(
            Value::Null,
            json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]),
        );
        assert_eq!(split, merged);
    }

    #[test]
    fn signatures_bind_text_prefix_and_token() {
        let d = digest(Value::Null, json!([{"role": "user", "content": "hi"}]));
        let other = digest(Value::Null, json!([{"role": "user", "content": "ho"}]));
        let token = Token {
            reply: Token::reply_id(b"x"),
            pos: 0,
            count: 2,
        };
        let sig = sign_thinking(DEFAULT_KEY, &d, "because", token);
        assert_eq!(
            verify_thinking(DEFAULT_KEY, &d, "because", &sig),
            Some(token)
        );
        assert_eq!(verify_thinking(DEFAULT_KEY, &d, "becausE", &sig), None);
        assert_eq!(verify_thinking(DEFAULT_KEY, &other, "because", &sig), None);
        let data = seal_redacted(DEFAULT_KEY, &d, Token { pos: 1, ..token }, b"secret");
        assert_eq!(
            open_redacted(DEFAULT_KEY, &d, &data),
            Some(Token { pos: 1, ..token })
        );
        assert_eq!(open_redacted(DEFAULT_KEY, &other, &data), None);
        // A signature is not redacted data and the other way round.
        assert_eq!(open_redacted(DEFAULT_KEY, &d, &sig), None);
        assert_eq!(verify_thinking(DEFAULT_KEY, &d, "because", &data), None);
    }
}
