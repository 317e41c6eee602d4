//! Responses items as the API returned them, shared by the wire's unit tests and the SDK
//! comparison (`tests/it/sdk_responses.rs` includes this file): keys in the API's order,
//! escapes a `Value` round trip would rewrite, summaries (one, none, two) and encrypted
//! content.

/// A reasoning item with one summary and encrypted content.
pub(crate) const RS1: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the time in Z\u00fcrich."}],"encrypted_content":"gAAAA\/one=="}"#;
/// The call paired with [`RS1`].
pub(crate) const FC1: &str = r#"{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Z\\u00fcrich\"}","call_id":"call_1","name":"now"}"#;
/// A reasoning item with no summary.
pub(crate) const RS2: &str =
    r#"{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAA-two"}"#;
/// The call paired with [`RS2`].
pub(crate) const FC2: &str = r#"{"id":"fc_2","type":"function_call","status":"completed","arguments":"{}","call_id":"call_2","name":"date"}"#;
/// A reasoning item with two summaries.
pub(crate) const RS3: &str = r#"{"id":"rs_3","type":"reasoning","summary":[{"type":"summary_text","text":"Answer."},{"type":"summary_text","text":"Briefly."}],"encrypted_content":"gAAAA-three"}"#;
/// The message paired with [`RS3`].
pub(crate) const MSG3: &str = r#"{"id":"msg_3","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"It is noon, Monday."}],"role":"assistant"}"#;
