//! What a gateway client asked for in its own wire's terms that has no wire-neutral form: the
//! provider's feature flags, tools the provider runs itself, its own thinking object (docs/spec.md
//! §10). Only a wire that speaks the client's dialect ([`Dialect`]) to the provider that defines
//! these parts honours them; every other wire refuses the tools by name and leaves the rest out
//! (the thinking request already says, wire-neutrally, what the thinking object asks).

use crate::raw::RawJson;
use crate::transport::TransportError;

/// The parts of a client's request only an upstream of the client's own dialect can take. The
/// default holds nothing, and a wire then does exactly what it does without a gateway.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Passthrough {
    /// The dialect the client wrote these parts in: which provider's API defines them.
    pub dialect: Dialect,
    /// Feature flags the client asked for (Anthropic's `anthropic-beta` values), each once.
    pub betas: Vec<String>,
    /// Tools the provider defines and runs itself (or whose schema it defines: web search,
    /// code execution, text editor…), each exactly as the client wrote it.
    pub server_tools: Vec<RawJson>,
    /// The client's own thinking object, sent as written instead of the one the thinking
    /// request maps to.
    pub thinking: Option<RawJson>,
    /// The client's whole `tools` list exactly as written (its own tools' extra keys such as
    /// `cache_control`, `defer_loading` or `strict` included, server tools in their places),
    /// sent instead of the list rebuilt from the chat definitions.
    pub tools: Option<RawJson>,
    /// Top-level keys of the client's body that no wire-neutral part stands for (`metadata`,
    /// `context_management`, `output_config`, and keys hermes does not know), in arrival order,
    /// each sent as written; a key the wire also writes is the client's.
    pub fields: Vec<(String, RawJson)>,
    /// The API version the client asked for (Anthropic's `anthropic-version` header), sent
    /// where the wire takes it as a header.
    pub version: Option<String>,
}

/// The API whose terms a gateway client's pass-through parts are written in: a wire honours
/// them only when it speaks that API to the provider that defines it
/// ([`crate::Wire::takes_passthrough`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// Anthropic's Messages API (the Messages door): betas, server tools such as
    /// `web_search_20250305`, the thinking object.
    #[default]
    AnthropicMessages,
    /// OpenAI's Responses API (the Responses door): built-in tools such as `web_search`,
    /// `file_search` or `code_interpreter`.
    OpenAiResponses,
}

impl Dialect {
    /// The API, as an error names it.
    pub(crate) fn api(self) -> &'static str {
        match self {
            Dialect::AnthropicMessages => "Claude's own API",
            Dialect::OpenAiResponses => "OpenAI's Responses API",
        }
    }

    /// The upstreams that run its tools, as an error names them.
    fn upstreams(self) -> &'static str {
        match self {
            Dialect::AnthropicMessages => "Claude upstreams",
            Dialect::OpenAiResponses => "OpenAI Responses upstreams",
        }
    }

    /// What to send the request to instead, as an error says it.
    fn instead(self) -> &'static str {
        match self {
            Dialect::AnthropicMessages => "a Claude model",
            Dialect::OpenAiResponses => "an OpenAI model on its Responses API",
        }
    }
}

/// Nothing to pass through, for parts that carry none.
pub(crate) static NO_PASSTHROUGH: Passthrough = Passthrough {
    dialect: Dialect::AnthropicMessages,
    betas: Vec::new(),
    server_tools: Vec::new(),
    thinking: None,
    tools: None,
    fields: Vec::new(),
    version: None,
};

impl Passthrough {
    /// Nothing set.
    pub fn new() -> Self {
        Passthrough::default()
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Passthrough::default()
    }

    /// With the feature flags of `header` (a comma-separated list, as HTTP repeats a header),
    /// added once each after those already set.
    pub fn betas<'s>(mut self, header: impl IntoIterator<Item = &'s str>) -> Self {
        for beta in header
            .into_iter()
            .flat_map(|h| h.split(','))
            .map(str::trim)
            .filter(|b| !b.is_empty())
        {
            if !self.betas.iter().any(|b| b == beta) {
                self.betas.push(beta.to_owned());
            }
        }
        self
    }

    /// With one more server tool, exactly as written.
    pub fn server_tool(mut self, tool: RawJson) -> Self {
        self.server_tools.push(tool);
        self
    }

    /// With the client's own thinking object.
    pub fn thinking(mut self, thinking: RawJson) -> Self {
        self.thinking = Some(thinking);
        self
    }

    /// The client's value of top-level key `key`, when it sent one ([`Passthrough::fields`]).
    pub fn field(&self, key: &str) -> Option<&RawJson> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The refusal a wire that cannot honour these parts gives (`wire` names it and its
    /// target): server tools cannot run anywhere else, so a request carrying them is not sent;
    /// feature flags and a thinking object are left out (the thinking request stands for the
    /// latter).
    pub(crate) fn refused_by(&self, wire: impl Into<String>) -> Result<(), TransportError> {
        match self.server_tools.first() {
            None => Ok(()),
            Some(tool) => Err(TransportError::unsupported(
                "tools",
                wire,
                format!(
                    "{} is a tool only {} runs (server tools go to {} only); send it to {} or leave it out",
                    tool_label(tool),
                    self.dialect.api(),
                    self.dialect.upstreams(),
                    self.dialect.instead(),
                ),
            )),
        }
    }
}

/// A server tool as an error names it: its `type` (and `name`), else its JSON.
fn tool_label(tool: &RawJson) -> String {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        name: Option<String>,
    }
    match serde_json::from_str::<Probe>(tool.get()) {
        Ok(Probe {
            kind: Some(kind),
            name: Some(name),
        }) => format!("the server tool `{name}` ({kind})"),
        Ok(Probe {
            kind: Some(kind), ..
        }) => format!("the server tool {kind}"),
        _ => format!("the server tool {}", tool.get()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_headers_are_split_trimmed_and_kept_once_in_order() {
        let p = Passthrough::new().betas(["a-1, b-2", "a-1,c-3", " "]);
        assert_eq!(p.betas, ["a-1", "b-2", "c-3"]);
    }

    #[test]
    fn a_wire_that_cannot_run_server_tools_refuses_them_by_name_and_nothing_else() {
        let none = Passthrough::new()
            .betas(["x"])
            .thinking(RawJson::string("t"));
        assert!(none.refused_by("chat").is_ok());
        let tool = RawJson::from_text(
            r#"{"type":"web_search_20250305","name":"web_search","max_uses":2}"#,
        )
        .unwrap();
        let err = Passthrough::new()
            .server_tool(tool)
            .refused_by("the DeepSeek chat API (deepseek-v4)")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("tools"), "{text}");
        assert!(
            text.contains("`web_search` (web_search_20250305)"),
            "{text}"
        );
        assert!(text.contains("deepseek-v4"), "{text}");
    }
}
