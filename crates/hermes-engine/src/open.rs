//! What a chat session and a request both start from: the tools a front end offers, how the
//! driver sends, and the settlement of a stored session's snapshot (or none) into a target, a
//! thinking request and a conversation — the one settlement both entry points share.

use std::sync::Arc;

use hermes_core::RawJson;
use hermes_core::ThinkingRequest;
use hermes_core::driver::{Conversation, DriverConfig, Tools};
use hermes_store::{NewSession, StoredThinking};

use crate::Engine;
use crate::error::EngineError;
use crate::settle::{Choice, Defaults, Purpose, Settled, Stored, settle_thinking};
use crate::target::KeyLookup;

/// The tools a front end offers the model, with their definitions (cheap to clone: every turn
/// of a chat session hands them to its request).
#[derive(Clone)]
pub struct Toolset {
    /// Runs the calls.
    pub tools: Arc<dyn Tools>,
    /// The `tools` array sent with every request (none when empty).
    pub definitions: Option<RawJson>,
}

impl Toolset {
    /// No tools.
    pub fn none() -> Self {
        Toolset {
            tools: Arc::new(NoTools),
            definitions: None,
        }
    }
}

/// Tools that answer every call with an error (no tools offered).
pub(crate) struct NoTools;

#[async_trait::async_trait]
impl Tools for NoTools {
    async fn call(&self, name: &str, _: &str) -> String {
        format!("error: no tool named `{name}`")
    }
}

/// How a session's driver sends: its thinking request, streamed or not, its tool definitions
/// (a preview of the next request builds it here too).
pub(crate) fn driver_config(
    thinking: ThinkingRequest,
    stream: bool,
    tools: Option<RawJson>,
) -> DriverConfig {
    let mut config = DriverConfig::default();
    config.thinking = thinking;
    config.stream = stream;
    config.tools = tools;
    config
}

/// What a new session (titled after `title`) is created with, with its first step: the settled
/// target, and the thinking request it starts with (flags, else config's effort), so a resume
/// keeps it.
pub(crate) fn new_session(settled: &Settled, thinking: ThinkingRequest, title: &str) -> NewSession {
    NewSession {
        title: Some(title.chars().take(60).collect()),
        provider: Some(settled.provider.clone()),
        model: Some(settled.model.clone()),
        base_url: settled.base_url.clone(),
        // Every way a new session gets its URL is the user's word: the command line,
        // config.toml or the registry.
        base_url_confirmed: true,
        ..NewSession::default()
    }
    .with_thinking(StoredThinking::from_request(thinking))
}

/// What a chat session or a request starts from, settled.
pub(crate) struct Opened {
    /// The target (flags > the stored session > config > registry).
    pub(crate) settled: Settled,
    /// The thinking request (flags > the stored session's > config's effort).
    pub(crate) thinking: ThinkingRequest,
    /// The conversation it continues (empty for a new session).
    pub(crate) conversation: Conversation,
    /// Where the stored session ended when it was read (none for a new session).
    pub(crate) tip: Option<hermes_store::Tip>,
    /// What the read of its view said of its turns' carriers being left out.
    pub(crate) left_out: crate::turn::LeftOutKnown,
}

/// Settles a chat session or a request on a stored session's `snapshot` (or none, for a new
/// one): the provider name is checked, the target settled, the thinking request settled, the
/// conversation taken from the snapshot — the one settlement both entry points share.
pub(crate) fn open_snapshot(
    engine: &Engine,
    choice: &Choice,
    snapshot: Option<hermes_store::Snapshot>,
    defaults: &Defaults,
    key: &KeyLookup,
    thinking: ThinkingRequest,
) -> Result<Opened, EngineError> {
    let stored = snapshot.as_ref().map(|s| Stored {
        provider: s.meta.provider.as_deref(),
        model: s.meta.model.as_deref(),
        base_url: s.meta.base_url.as_deref(),
        base_url_confirmed: s.meta.base_url_confirmed,
    });
    engine.check_provider(choice, stored.and_then(|s| s.provider), defaults)?;
    let settled = engine.settle(Purpose::Send, choice, stored, defaults, &|var: &str| {
        key(var)
    })?;
    let thinking = settle_thinking(
        thinking,
        snapshot.as_ref().and_then(|s| s.thinking),
        defaults.effort,
    );
    let (conversation, tip, left_out) = view_of(snapshot);
    Ok(Opened {
        settled,
        thinking,
        conversation,
        tip,
        left_out,
    })
}

/// What a stored session's `snapshot` gives a turn (or none, for a new session): the
/// conversation (active view and verdicts), where it ended, and what the read said of its
/// turns' carriers being left out.
pub(crate) fn view_of(
    snapshot: Option<hermes_store::Snapshot>,
) -> (
    Conversation,
    Option<hermes_store::Tip>,
    crate::turn::LeftOutKnown,
) {
    match snapshot {
        Some(snapshot) => (
            Conversation {
                messages: snapshot.messages(),
                verdicts: snapshot.verdicts,
                wire_verdicts: snapshot.wire_verdicts,
            },
            Some(snapshot.tip.clone()),
            crate::turn::LeftOutKnown::of(&snapshot.active),
        ),
        None => (Conversation::default(), None, Default::default()),
    }
}
