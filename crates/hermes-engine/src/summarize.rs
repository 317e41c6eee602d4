//! The summarizer compaction asks for: the session's own provider and route, through the
//! driver's request path (refusal fallback and backoff included), with no tools.

use hermes_core::driver::{Conversation, Driver, DriverConfig, SessionLog, Tools};
use hermes_core::{Message, Role, RouteDecision, Verdicts, Wire, WireVerdicts};

/// Writes summaries with the session's own provider and route.
pub(crate) struct TransportSummarizer<'a> {
    pub(crate) wire: &'a dyn Wire,
    pub(crate) decision: &'a RouteDecision,
    pub(crate) verdicts: &'a Verdicts,
    pub(crate) wire_verdicts: &'a WireVerdicts,
    pub(crate) log: &'a dyn SessionLog,
}

#[async_trait::async_trait]
impl hermes_compaction::Summarizer for TransportSummarizer<'_> {
    async fn summarize(&self, messages: &[Message]) -> Result<String, String> {
        let mut conversation = Conversation {
            messages: messages.to_vec(),
            verdicts: self.verdicts.clone(),
            wire_verdicts: self.wire_verdicts.clone(),
        };
        conversation.messages.push(Message::text(
            Role::User,
            hermes_compaction::SUMMARY_INSTRUCTIONS,
        ));
        let config = DriverConfig::default();
        let driver = Driver {
            decision: self.decision,
            wire: self.wire,
            log: self.log,
            tools: &NoTools,
            config: &config,
            notify: &|_| {},
        };
        let reply = driver
            .reply(&mut conversation)
            .await
            .map_err(|e| e.to_string())?;
        reply
            .message
            .content
            .as_ref()
            .and_then(|c| c.as_str().map(|s| s.into_owned()))
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| "the summary reply had no text".to_owned())
    }
}

/// A summary request offers no tools.
struct NoTools;

#[async_trait::async_trait]
impl Tools for NoTools {
    async fn call(&self, name: &str, _: &str) -> String {
        format!("error: no tool named `{name}` during a summary")
    }
}
