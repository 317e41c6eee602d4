//! The summarizer compaction asks for: the session's own provider and route, through the
//! driver's request path (refusal fallback and backoff included), with no tools.

use hermes_core::driver::{Conversation, Driver, DriverConfig, SessionLog, Tools};
use hermes_core::{Message, RawJson, Role, RouteDecision, Verdicts, Wire, WireVerdicts};

/// The user turn put before a summarised span that starts with the assistant.
const CONTINUED: &str = "(The conversation so far continues below.)";

/// Writes summaries with the session's own provider and route.
pub(crate) struct TransportSummarizer<'a> {
    pub(crate) wire: &'a dyn Wire,
    pub(crate) decision: &'a RouteDecision,
    pub(crate) verdicts: &'a Verdicts,
    pub(crate) wire_verdicts: &'a WireVerdicts,
    pub(crate) log: &'a dyn SessionLog,
    /// The session's tool definitions: the Messages and Converse APIs refuse a history with
    /// tool calls and results unless the request defines tools (the summary calls none).
    pub(crate) tools: Option<&'a RawJson>,
}

#[async_trait::async_trait]
impl hermes_compaction::Summarizer for TransportSummarizer<'_> {
    async fn summarize(&self, messages: &[Message]) -> Result<String, String> {
        let mut history = Vec::with_capacity(messages.len() + 2);
        // The middle of a conversation may start with an assistant turn; the Messages and
        // Converse APIs want a user turn first.
        if messages.first().is_some_and(|m| m.role != Role::User) {
            history.push(Message::text(Role::User, CONTINUED));
        }
        history.extend_from_slice(messages);
        let mut conversation = Conversation {
            messages: history,
            verdicts: self.verdicts.clone(),
            wire_verdicts: self.wire_verdicts.clone(),
        };
        conversation.messages.push(Message::text(
            Role::User,
            hermes_compaction::SUMMARY_INSTRUCTIONS,
        ));
        let mut config = DriverConfig::default();
        config.tools = self.tools.cloned();
        // Tools stay defined (the prefix a bound model's thinking is bound to holds them, and
        // the Messages and Converse APIs need them beside tool calls); they are turned off
        // with `tool_choice: none`, never by removing them (docs/spec.md §5a 5). Converse has no
        // `none` (botocore's ToolChoice: auto, any, tool): there the tools stay, unforced.
        if config.tools.is_some() && self.wire.takes_tool_choice_none() {
            config.sampling.tool_choice = Some(hermes_core::sampling::ToolChoice::None);
        }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use hermes_compaction::Summarizer as _;
    use hermes_core::driver::MemoryLog;
    use hermes_core::sampling::ToolChoice;
    use hermes_core::transport::{OnDelta, SendResult};
    use hermes_core::{
        Origin, Outgoing, Reply, ReplyMeta, RequestParts, ResolveOptions, RouteTarget,
        TransportError,
    };

    use super::*;

    /// A wire that records the tool choice each body asks for and answers with a summary.
    struct Recording {
        takes_none: bool,
        seen: Mutex<Vec<Option<ToolChoice>>>,
    }

    #[async_trait::async_trait]
    impl Wire for Recording {
        fn id(&self) -> &'static str {
            "recording"
        }

        fn takes_tool_choice_none(&self) -> bool {
            self.takes_none
        }

        fn encode(&self, parts: &RequestParts<'_>) -> Result<Outgoing, TransportError> {
            self.seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(parts.sampling.tool_choice.clone());
            Ok(Outgoing::new(b"{}".to_vec(), false, Vec::new(), 0))
        }

        async fn send(&self, _: &Outgoing, origin: Origin, _: OnDelta<'_>) -> SendResult {
            let mut message = Message::text(Role::Assistant, "the summary");
            message.origin = Some(origin);
            Ok(Reply {
                message,
                meta: ReplyMeta::default(),
            })
        }
    }

    /// The session's tools stay defined in a summary request, turned off with
    /// `tool_choice: none` where the wire can send it, and left unforced where it cannot
    /// (Converse): the wire says which, the engine names none.
    #[tokio::test]
    async fn a_summary_turns_tools_off_only_on_a_wire_that_takes_tool_choice_none() {
        let decision = hermes_providers::builtin_table().resolve(
            &RouteTarget::new(
                "deepseek",
                Some("https://api.deepseek.com/v1"),
                "deepseek-chat",
            ),
            ResolveOptions::default(),
        );
        let tools = RawJson::from_text(r#"[{"type":"function","function":{"name":"now"}}]"#)
            .unwrap_or_else(|e| panic!("{e}"));
        for (takes_none, expected) in [(true, Some(ToolChoice::None)), (false, None)] {
            let wire = Recording {
                takes_none,
                seen: Mutex::new(Vec::new()),
            };
            let summarizer = TransportSummarizer {
                wire: &wire,
                decision: &decision,
                verdicts: &Verdicts::default(),
                wire_verdicts: &WireVerdicts::default(),
                log: &MemoryLog::default(),
                tools: Some(&tools),
            };
            let summary = summarizer
                .summarize(&[Message::text(Role::User, "hello")])
                .await;
            assert_eq!(summary.as_deref(), Ok("the summary"));
            let seen = wire.seen.into_inner().unwrap_or_else(|e| e.into_inner());
            assert_eq!(seen, vec![expected], "takes_tool_choice_none: {takes_none}");
        }
    }
}
