//! The token estimate of docs/spec.md §7: what a history costs on the wire of one route, without shaping it.
//!
//! Weights, per string: `ceil(UTF-8 bytes of the non-CJK part / 4)` plus 1 per CJK, Hangul or
//! fullwidth code point ([`is_wide`]). Only readable text that actually reaches the wire is priced:
//!
//! - every message: `role`, string values inside `content` (keys of content parts are not
//!   counted; `data:…;base64,…` URLs are opaque blobs, priced at zero), `tool_call_id`, `name`,
//!   and, on a non-strict route, the string values of unknown keys (shaping passes them through);
//! - assistant tool calls: `id`, `type`, the function `name` and `arguments` (plus unknown keys on
//!   a non-strict route); tool-call signatures are opaque, priced at zero;
//! - reasoning, decided exactly as shaping decides it: `reasoning_content` only where the route
//!   reads RC and `RouteDecision::thinking_reaches_wire` holds (the stored RC, else the stored R replayed as RC —
//!   counted once —, else the one-space pad of a must-echo route); `reasoning` likewise where the
//!   route reads R; readable `reasoning_details` items (no signature, data or encrypted content)
//!   by all their string values where the route reads RD;
//! - opaque carriers — signed or encrypted RD items, redacted blocks, the native record,
//!   tool-call signatures — are priced at zero: only the provider's usage prices ciphertext.
//!
//! The estimate works from the stored raw JSON texts (escapes are decoded on the fly while
//! counting) and never re-serialises the history: it runs before every request.

use crate::message::{DetailItem, Message, Role};
use crate::raw::{RawJson, TextCarrier};
use crate::route::{Carrier, PadRule, RouteDecision};

/// Bytes of non-wide text per token.
pub(crate) const BYTES_PER_TOKEN: usize = 4;

/// The estimated tokens of `history` when it is sent on `decision`'s route.
///
/// The sum of [`estimate_messages`]. The driver's pre-flight trigger and compaction's tail walk
/// both use this (and the same `thinking_reaches_wire` predicate as shaping), so compaction
/// cannot loop.
pub fn estimate_history(history: &[Message], decision: &RouteDecision) -> usize {
    estimate_messages(history, decision).sum()
}

/// Each message's estimate ([`estimate_message`]) in `history`, in order, with the newest
/// assistant message found as shaping finds it and priced as the newest (its thinking replayed
/// on routes that replay only the newest turn's).
pub fn estimate_messages<'a>(
    history: &'a [Message],
    decision: &'a RouteDecision,
) -> impl Iterator<Item = usize> + 'a {
    let newest = newest_assistant(history);
    history
        .iter()
        .enumerate()
        .map(move |(i, m)| estimate_message(m, decision, Some(i) == newest))
}

/// The index of the newest assistant message of `history` (found as the chat wire's shaping
/// finds it).
fn newest_assistant(history: &[Message]) -> Option<usize> {
    history.iter().rposition(|m| m.role == Role::Assistant)
}

/// The estimated tokens of one message on `decision`'s route; `newest` is true for the newest
/// assistant message of the history (see `newest_assistant`).
///
/// Verdicts are not consulted: a refused carrier is still priced, so the estimate errs high.
pub fn estimate_message(message: &Message, decision: &RouteDecision, newest: bool) -> usize {
    let pass_unknown = !decision.strict;
    let mut total = estimate_text(message.role.as_str());
    if let Some(content) = &message.content {
        total += estimate_json(content);
    }
    if let Some(id) = &message.tool_call_id {
        total += estimate_text(id);
    }
    if let Some(name) = &message.name {
        total += estimate_text(name);
    }
    if pass_unknown {
        total += message
            .extra
            .iter()
            .map(|(_, v)| estimate_json(v))
            .sum::<usize>();
    }
    if message.role == Role::Assistant {
        total += estimate_reasoning(message, decision, newest);
        for call in message.tool_calls.iter().flatten() {
            total += call.id.as_deref().map_or(0, estimate_text);
            total += call.kind.as_deref().map_or(0, estimate_text);
            total += estimate_text(&call.function.name);
            total += call.function.arguments.as_ref().map_or(0, estimate_json);
            if pass_unknown {
                total += call
                    .extra
                    .iter()
                    .chain(&call.function.extra)
                    .map(|(_, v)| estimate_json(v))
                    .sum::<usize>();
            }
        }
    }
    total
}

/// Readable reasoning of an assistant message that reaches the wire (opaque items are free).
fn estimate_reasoning(message: &Message, decision: &RouteDecision, newest: bool) -> usize {
    let carriers = decision.carriers;
    let reaches = decision.thinking_reaches_wire(newest);
    let mut total = 0;
    if carriers.contains(Carrier::ReasoningContent) {
        match message.replayable_text().filter(|_| reaches) {
            // The stored RC, or the stored R replayed under the RC key: one text, counted once.
            Some(text) => total += estimate_carrier(text),
            None => {
                let pads = decision.echo.as_ref().is_some_and(|e| match e.pad {
                    PadRule::EveryAssistant => true,
                    PadRule::ToolCallTurns => {
                        message.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
                    }
                });
                if pads {
                    total += estimate_text(crate::route::PAD);
                }
            }
        }
    }
    if carriers.contains(Carrier::Reasoning)
        && reaches
        && let Some(r) = message.reasoning.as_ref().filter(|r| !r.is_blank())
    {
        total += estimate_carrier(r);
    }
    if carriers.contains(Carrier::ReasoningDetails) {
        for item in message.reasoning_details.iter().flatten() {
            if let DetailItem::Provider {
                raw, opaque: false, ..
            } = item
            {
                total += estimate_json(raw);
            }
        }
    }
    total
}

/// The estimated tokens of one decoded string.
pub fn estimate_text(text: &str) -> usize {
    let mut bytes = text.len();
    let mut wide = 0;
    if !text.is_ascii() {
        for c in text.chars() {
            if is_wide(c) {
                bytes -= c.len_utf8();
                wide += 1;
            }
        }
    }
    bytes.div_ceil(BYTES_PER_TOKEN) + wide
}

/// The estimated tokens of a stored text carrier (its JSON string, decoded while counting).
pub(crate) fn estimate_carrier(carrier: &TextCarrier) -> usize {
    estimate_json(carrier.raw())
}

/// The estimated tokens of a raw JSON value: the sum over every string value inside it (object
/// keys, numbers and literals are not counted; `data:…;base64,…` URLs are opaque, priced at zero).
pub(crate) fn estimate_json(raw: &RawJson) -> usize {
    raw.memo_tokens(estimate_json_text)
}

/// [`estimate_json`] over JSON text known to be valid.
fn estimate_json_text(text: &str) -> usize {
    // A `RawJson` holds exactly the value (no surrounding white space), as `RawJson::is_string` assumes.
    let text = text.trim_ascii_start();
    let bytes = text.as_bytes();
    // The common case: the whole value is one string (valid JSON starting with `"` is one).
    if bytes.len() >= 2 && bytes[0] == b'"' {
        return string_value(&text[1..text.len() - 1]);
    }
    let mut total = 0;
    let mut at = 0;
    while let Some(offset) = text[at..].find('"') {
        let start = at + offset + 1;
        let Some(end) = closing_quote(text, start) else {
            break;
        };
        at = end + 1;
        let is_key = bytes[at..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b == b':');
        if !is_key {
            total += string_value(&text[start..end]);
        }
    }
    total
}

/// The index of the unescaped `"` closing a string whose contents start at `from`.
fn closing_quote(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    loop {
        let quote = at + text.get(at..)?.find('"')?;
        let backslashes = bytes[from..quote]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        at = quote + 1;
    }
}

/// Tokens of one JSON string value given its raw contents (between the quotes, escapes intact).
fn string_value(inner: &str) -> usize {
    if inner.starts_with("data:") && inner.contains(";base64,") {
        return 0;
    }
    let bytes = inner.as_bytes();
    // Fast path (vectorised scans): ASCII text whose escapes are all two-byte ones (`\n`,
    // `\"`, …) decodes to one byte per escape, so the text is the length less the backslashes.
    let found = scan(bytes);
    if found.ascii && !found.long_escape {
        return (inner.len() - found.backslashes).div_ceil(BYTES_PER_TOKEN);
    }
    let mut plain = inner.len();
    let mut wide = 0;
    if !found.ascii {
        for c in inner.chars() {
            if is_wide(c) {
                plain -= c.len_utf8();
                wide += 1;
            }
        }
    }
    let mut at = 0;
    while let Some(offset) = inner.get(at..).and_then(|rest| rest.find('\\')) {
        let slash = at + offset;
        match bytes.get(slash + 1) {
            Some(b'u') => {
                let (code, len) = unicode_escape(bytes, slash);
                plain -= len;
                match char::from_u32(code) {
                    Some(c) if is_wide(c) => wide += 1,
                    Some(c) => plain += c.len_utf8(),
                    // A lone surrogate decodes to U+FFFD.
                    None => plain += 3,
                }
                at = slash + len;
            }
            Some(_) => {
                // `\n`, `\"`, `\\`, …: two bytes of JSON, one byte of text.
                plain -= 1;
                at = slash + 2;
            }
            None => break,
        }
    }
    plain.div_ceil(BYTES_PER_TOKEN) + wide
}

/// Bytes per vector lane group: the scans below work on 16-byte blocks the compiler turns into
/// vector code, with 8-bit per-lane counters flushed every 255 blocks.
const LANES: usize = 16;

/// What one pass over a raw string's bytes found.
struct Scan {
    /// Number of `\` bytes.
    backslashes: usize,
    /// Every byte is ASCII.
    ascii: bool,
    /// A backslash is followed by `\` or `u`: an escaped backslash (which would throw off the
    /// one-backslash-per-escape count) or a `\uXXXX` escape.
    long_escape: bool,
}

/// One vectorisable pass (no early exits) over `bytes`.
fn scan(bytes: &[u8]) -> Scan {
    let Some(last) = bytes.len().checked_sub(1) else {
        return Scan {
            backslashes: 0,
            ascii: true,
            long_escape: false,
        };
    };
    // Each byte is paired with the next one; the last byte has no successor.
    let (this, next) = (&bytes[..last], &bytes[1..]);
    let mut backslashes = usize::from(bytes[last] == b'\\');
    let mut high = [bytes[last]; LANES];
    let mut long = [0u8; LANES];
    let block = |a: &[u8],
                 b: &[u8],
                 count: &mut [u8; LANES],
                 high: &mut [u8; LANES],
                 long: &mut [u8; LANES]| {
        for i in 0..LANES {
            let slash = u8::from(a[i] == b'\\');
            count[i] += slash;
            high[i] |= a[i];
            long[i] |= slash & (u8::from(b[i] == b'\\') | u8::from(b[i] == b'u'));
        }
    };
    let mut groups = this
        .chunks_exact(LANES * 255)
        .zip(next.chunks_exact(LANES * 255));
    for (a, b) in &mut groups {
        let mut count = [0u8; LANES];
        for (a, b) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
            block(a, b, &mut count, &mut high, &mut long);
        }
        backslashes += count.iter().map(|c| usize::from(*c)).sum::<usize>();
    }
    let done = this.len() - this.len() % (LANES * 255);
    let (this, next) = (&this[done..], &next[done..]);
    let mut count = [0u8; LANES];
    for (a, b) in this.chunks_exact(LANES).zip(next.chunks_exact(LANES)) {
        block(a, b, &mut count, &mut high, &mut long);
    }
    backslashes += count.iter().map(|c| usize::from(*c)).sum::<usize>();
    let done = this.len() - this.len() % LANES;
    for (a, b) in this[done..].iter().zip(&next[done..]) {
        let slash = u8::from(*a == b'\\');
        backslashes += usize::from(slash);
        high[0] |= a;
        long[0] |= slash & (u8::from(*b == b'\\') | u8::from(*b == b'u'));
    }
    Scan {
        backslashes,
        ascii: high.iter().fold(0, |h, x| h | x) < 0x80,
        long_escape: long.iter().any(|l| *l != 0),
    }
}

/// Decodes `\uXXXX` (and a following low surrogate) at `at`: the code point and the escape's
/// length in bytes. Malformed escapes count as their own length of U+FFFD.
fn unicode_escape(bytes: &[u8], at: usize) -> (u32, usize) {
    let hex = |from: usize| -> Option<u32> {
        let digits = bytes.get(from..from + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        u32::from_str_radix(text, 16).ok()
    };
    let Some(high) = hex(at + 2) else {
        return (0xFFFD, 2.min(bytes.len() - at));
    };
    if (0xD800..0xDC00).contains(&high)
        && bytes.get(at + 6) == Some(&b'\\')
        && bytes.get(at + 7) == Some(&b'u')
        && let Some(low) = hex(at + 8)
        && (0xDC00..0xE000).contains(&low)
    {
        return (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12);
    }
    (high, 6)
}

/// True for a CJK, Hangul or fullwidth code point: each is priced as one token.
///
/// Hangul Jamo, CJK radicals, symbols and punctuation, kana, Bopomofo, Hangul compatibility Jamo,
/// enclosed and compatibility CJK, CJK unified ideographs (extension A and the supplementary
/// ideographic planes included), Hangul syllables, CJK compatibility ideographs and forms, and
/// the halfwidth and fullwidth forms block.
pub fn is_wide(c: char) -> bool {
    matches!(
        u32::from(c),
        0x1100..=0x11FF
            | 0x2E80..=0x33FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA960..=0xA97F
            | 0xAC00..=0xD7FF
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFFEF
            | 0x20000..=0x3FFFF
    )
}

#[cfg(test)]
mod tests;
