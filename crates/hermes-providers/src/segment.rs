//! A model id as one URL path segment: what a wire puts between two `/` of its request path
//! (Bedrock's `/model/{id}/converse`, Gemini's and Vertex's `models/{id}:method`), so no id —
//! a gateway client's included — can add a segment, a query, a fragment or another method.
//! An id that is exactly `.` or `..` would still be a dot segment (URL parsers treat `%2E` the
//! same); the gateway refuses such ids before they reach a wire (hermes-serve `model::check`).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`) stay; every other byte is
/// percent-encoded, as the AWS SDKs encode a Bedrock model id or ARN (`:` is `%3A`, `/` is
/// `%2F`).
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`UNRESERVED`] and `@`, which RFC 3986 allows in a segment and Vertex model versions use
/// (`claude-sonnet-4-5@20250929`); `:` is encoded, since Google's paths put the method after it.
const GOOGLE: &AsciiSet = &UNRESERVED.remove(b'@');

/// `id` as one path segment, everything but the unreserved characters percent-encoded (the
/// AWS SDKs' rule, which SigV4 signing is proven against).
pub fn unreserved(id: &str) -> String {
    utf8_percent_encode(id, UNRESERVED).to_string()
}

/// `id` as one segment of a Google (AI Studio or Vertex) model path: as [`unreserved`], `@`
/// kept.
pub fn google(id: &str) -> String {
    utf8_percent_encode(id, GOOGLE).to_string()
}

#[cfg(test)]
mod tests {
    use super::{google, unreserved};

    #[test]
    fn ordinary_ids_are_unchanged_and_hostile_ones_stay_one_segment() {
        for id in [
            "gemini-3-pro-preview",
            "anthropic.claude-opus-4-6-v1.0",
            "m_1~x",
        ] {
            assert_eq!(unreserved(id), id);
            assert_eq!(google(id), id);
        }
        assert_eq!(
            google("claude-sonnet-4-5@20250929"),
            "claude-sonnet-4-5@20250929"
        );
        assert_eq!(unreserved("a@b"), "a%40b");
        let hostile = "../../x/y?key=k#f:streamGenerateContent %2F\u{e9}";
        let want = "..%2F..%2Fx%2Fy%3Fkey%3Dk%23f%3AstreamGenerateContent%20%252F%C3%A9";
        assert_eq!(unreserved(hostile), want);
        assert_eq!(google(hostile), want);
    }
}
