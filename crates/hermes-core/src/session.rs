//! The `hermes.session.v1` interchange format (docs/spec.md §2a) and history loading with
//! precise errors.

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::verdict::Verdicts;

/// The format tag of a session file.
pub const SESSION_FORMAT: &str = "hermes.session.v1";

/// A session as exchanged in files: the canonical model serialised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionFile {
    /// Always [`SESSION_FORMAT`].
    pub format: String,
    /// Provider id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The gateway tenant the session belongs to (docs/spec.md §10); absent for CLI sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The client's partition within the tenant (docs/spec.md §10, "Which conversation"); absent
    /// when the client named none, and for CLI sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Per-session model configuration, holding the verdicts.
    #[serde(default)]
    pub model_config: serde_json::Map<String, serde_json::Value>,
    /// The history.
    pub messages: Vec<Message>,
}

impl SessionFile {
    /// A session holding only `messages` (what a bare array imports as).
    pub(crate) fn from_messages(messages: Vec<Message>) -> Self {
        SessionFile {
            format: SESSION_FORMAT.to_owned(),
            messages,
            ..SessionFile::default()
        }
    }

    /// The verdicts recorded in `model_config`.
    pub fn verdicts(&self) -> Result<Verdicts, HistoryError> {
        Verdicts::from_model_config(&self.model_config).map_err(|e| HistoryError {
            path: format!("model_config.{}", crate::verdict::VERDICTS_KEY),
            message: e.to_string(),
            line: None,
            column: None,
        })
    }
}

/// Input that is not a valid history, with the JSON path of the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at `{path}`: {message}{}", position(*.line, *.column))]
pub struct HistoryError {
    /// JSON path of the offending value (`.` for the document).
    pub path: String,
    /// What was wrong or expected.
    pub message: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    }
}

fn parse_with_path<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, HistoryError> {
    // A valid document, the usual case, is read without tracking the path (which costs a
    // string per key read): the path only serves an error, so a failure is read again with it.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        json_error(path, err.into_inner())
    })?;
    de.end().map_err(|e| json_error(".".to_owned(), e))?;
    Ok(value)
}

fn json_error(path: String, inner: serde_json::Error) -> HistoryError {
    let mut message = inner.to_string();
    // serde_json appends " at line L column C"; it is reported separately.
    if let Some(cut) = message.rfind(" at line ") {
        message.truncate(cut);
    }
    HistoryError {
        path,
        message,
        line: (inner.line() > 0).then(|| inner.line()),
        column: (inner.column() > 0).then(|| inner.column()),
    }
}

/// Parses a `hermes.session.v1` document or a bare JSON array of messages.
pub fn parse_history(text: &str) -> Result<SessionFile, HistoryError> {
    match text.trim_start().as_bytes().first() {
        Some(b'[') => parse_with_path::<Vec<Message>>(text).map(SessionFile::from_messages),
        Some(b'{') => {
            let session: SessionFile = parse_with_path(text)?;
            if session.format != SESSION_FORMAT {
                return Err(HistoryError {
                    path: "format".to_owned(),
                    message: format!("expected \"{SESSION_FORMAT}\", found {:?}", session.format),
                    line: None,
                    column: None,
                });
            }
            session.verdicts()?;
            Ok(session)
        }
        _ => Err(HistoryError {
            path: ".".to_owned(),
            message: format!("expected a {SESSION_FORMAT} object or a JSON array of messages"),
            line: None,
            column: None,
        }),
    }
}
