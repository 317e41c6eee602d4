//! The thinking request a session remembers (`--effort E` or `--no-thinking`), so that a
//! resumed session keeps thinking the way it was asked to.
//!
//! It lives in the session's `model_config` as its own member, [`THINKING_KEY`]:
//! `"hermes_thinking": "high"` (an effort word, [`Effort::as_str`]) or `"hermes_thinking": "off"`.
//! "No preference" is not stored: the member is absent. It is read and written through the same
//! member-level machinery as the verdicts ([`crate::verdicts`]): a change is one `BEGIN
//! IMMEDIATE` transaction that rewrites only this member, so every other member of
//! `model_config` keeps its exact text and place. A member that is not one of those words is
//! reported as [`StoreError::Corrupt`] naming it, and never overwritten.

use std::fmt;

use hermes_core::{Effort, ThinkingRequest};
use serde::de::{self, Deserialize, Deserializer, Unexpected, Visitor};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::verdicts::Member;
use crate::{NewSession, Store, StoreError};

/// The key of a session's thinking request in its `model_config`.
pub const THINKING_KEY: &str = "hermes_thinking";

/// The word stored for [`StoredThinking::Off`].
const OFF: &str = "off";

/// A thinking request a session stores: what `--no-thinking` or `--effort E` asked for. (The
/// third [`ThinkingRequest`], no preference, is stored as no member at all.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredThinking {
    /// `--no-thinking`; stored as `"off"`.
    Off,
    /// `--effort E`; stored as the effort's word (`"high"`, …).
    Effort(Effort),
}

impl StoredThinking {
    /// The stored word: `off` or the effort's CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StoredThinking::Off => OFF,
            StoredThinking::Effort(effort) => effort.as_str(),
        }
    }

    /// Parses a stored word (exactly as [`StoredThinking::as_str`] writes it).
    pub fn parse(text: &str) -> Option<StoredThinking> {
        if text == OFF {
            Some(StoredThinking::Off)
        } else {
            Effort::parse(text).map(StoredThinking::Effort)
        }
    }

    /// What a request stores: `None` for [`ThinkingRequest::NoPreference`].
    pub fn from_request(request: ThinkingRequest) -> Option<StoredThinking> {
        match request {
            ThinkingRequest::NoPreference => None,
            ThinkingRequest::Off => Some(StoredThinking::Off),
            ThinkingRequest::Effort(effort) => Some(StoredThinking::Effort(effort)),
        }
    }

    /// The request it stands for.
    pub fn request(self) -> ThinkingRequest {
        match self {
            StoredThinking::Off => ThinkingRequest::Off,
            StoredThinking::Effort(effort) => ThinkingRequest::Effort(effort),
        }
    }

    /// Reads the member out of a `model_config` object (absent or `null`: `None`). An error
    /// says what the member holds and what it should hold; it does not name the key (callers
    /// do).
    pub fn from_model_config(
        config: &Map<String, Value>,
    ) -> Result<Option<StoredThinking>, serde_json::Error> {
        match config.get(THINKING_KEY) {
            None => Ok(None),
            Some(value) => Option::<StoredThinking>::deserialize(value),
        }
    }
}

impl From<StoredThinking> for ThinkingRequest {
    fn from(thinking: StoredThinking) -> Self {
        thinking.request()
    }
}

impl fmt::Display for StoredThinking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StoredThinking {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StoredThinking {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Word;
        impl Visitor<'_> for Word {
            type Value = StoredThinking;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"off\" or an effort word (")?;
                for (i, effort) in Effort::ALL.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(effort.as_str())?;
                }
                f.write_str(")")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<StoredThinking, E> {
                StoredThinking::parse(text)
                    .ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_str(Word)
    }
}

impl Member for Option<StoredThinking> {
    const KEY: &'static str = THINKING_KEY;
    fn from_model_config(config: &Map<String, Value>) -> Result<Self, serde_json::Error> {
        StoredThinking::from_model_config(config)
    }
    fn is_empty(&self) -> bool {
        self.is_none()
    }
}

impl NewSession {
    /// With `thinking` stored in the new session's `model_config` (under [`THINKING_KEY`], after
    /// the members already there; `None` leaves the member out).
    pub fn with_thinking(mut self, thinking: Option<StoredThinking>) -> Self {
        match thinking {
            Some(thinking) => {
                self.model_config.insert(
                    THINKING_KEY.to_owned(),
                    Value::String(thinking.as_str().to_owned()),
                );
            }
            None => {
                self.model_config.remove(THINKING_KEY);
            }
        }
        self
    }
}

impl Store {
    /// The session's stored thinking request (`None`: the session stores none). A member that
    /// is not `"off"` or an effort word is [`StoreError::Corrupt`] naming it.
    pub async fn thinking(&self, session: &str) -> Result<Option<StoredThinking>, StoreError> {
        self.read_member(session).await
    }

    /// Stores `thinking` as the session's thinking request (`None` removes it), in one write
    /// transaction that rewrites only that member of `model_config` (nothing is written when it
    /// already holds that value). Returns the request stored before. A damaged member is
    /// reported ([`StoreError::Corrupt`]) and left as it is.
    pub async fn set_thinking(
        &self,
        session: &str,
        thinking: Option<StoredThinking>,
    ) -> Result<Option<StoredThinking>, StoreError> {
        self.change_members(session, |stored: &mut Option<StoredThinking>| {
            std::mem::replace(stored, thinking)
        })
        .await
        .map(|(_, before)| before)
    }
}
