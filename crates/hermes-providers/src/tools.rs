//! Chat-completions tool definitions as the other wires read them.
//!
//! The name, the description and the parameters schema's bytes, untouched.

use serde::Deserialize;
use serde_json::value::RawValue;

/// One chat-completions tool definition (`{"type":"function","function":{…}}`).
#[derive(Deserialize)]
pub(crate) struct ChatTool<'a> {
    /// The function it declares.
    #[serde(borrow)]
    pub(crate) function: ChatFunction<'a>,
}

/// The function of a tool definition.
#[derive(Deserialize)]
pub(crate) struct ChatFunction<'a> {
    /// The tool's name.
    pub(crate) name: String,
    /// What it does, when given.
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// The JSON schema of its arguments, as sent.
    #[serde(borrow, default)]
    pub(crate) parameters: Option<&'a RawValue>,
}
