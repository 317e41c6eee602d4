//! Chat-completions tool definitions as the other wires read them.
//!
//! The name, the description and the parameters schema's bytes, untouched.

use serde::Deserialize;
use serde_json::value::RawValue;

/// One chat-completions tool definition (`{"type":"function","function":{…}}`).
#[derive(Deserialize)]
pub struct ChatTool<'a> {
    /// The function it declares.
    #[serde(borrow)]
    pub function: ChatFunction<'a>,
}

/// The function of a tool definition.
#[derive(Deserialize)]
pub struct ChatFunction<'a> {
    /// The tool's name.
    pub name: String,
    /// What it does, when given.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON schema of its arguments, as sent.
    #[serde(borrow, default)]
    pub parameters: Option<&'a RawValue>,
}
