//! Verdicts (docs/spec.md §6), read and changed inside the store in one transaction each, so that
//! two writers (a running chat and `hermes verdicts clear`) cannot overwrite each other's change.
//!
//! They live in the session's `model_config`: the chat-completions verdicts under
//! [`VERDICTS_KEY`], the other wires' under [`WIRE_VERDICTS_KEY`]. Changing them rewrites only
//! the member that changed: every other member of the stored JSON object keeps its exact text
//! and place.
//!
//! The machinery is shared by every member the store owns ([`Member`]: the verdicts here, the
//! thinking request in [`crate::thinking`]): [`Store::read_member`] reads one, and
//! [`Store::change_members`] changes one or several in one `BEGIN IMMEDIATE` transaction. A
//! member that does not decode is [`StoreError::Corrupt`] naming it, and is never overwritten.

use std::borrow::Cow;

use hermes_core::{
    CHAT_WIRE, CarrierSet, RouteTarget, Verdict, Verdicts, WireVerdict, WireVerdicts,
};
use hermes_core::{VERDICTS_KEY, WIRE_VERDICTS_KEY};
use serde::Serialize;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::{DbResult as _, Store, StoreError, now_ms};

/// Which verdicts [`Store::clear_verdicts`] removes; `None` matches every value, so the default
/// filter matches every verdict, of every wire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerdictFilter {
    /// Provider id; compared trimmed and lowercased (verdicts store it lowercased).
    pub provider: Option<String>,
    /// Model id; compared exactly (model ids keep their case).
    pub model: Option<String>,
    /// Wire id, compared trimmed and ASCII case-insensitively: `chat` ([`CHAT_WIRE`]) selects
    /// the chat-completions verdicts only, any other id only that wire's verdicts.
    pub wire: Option<String>,
}

impl VerdictFilter {
    /// True when `verdict` (a chat-completions verdict) is one the filter selects.
    pub fn matches(&self, verdict: &Verdict) -> bool {
        self.wire_matches(CHAT_WIRE) && self.target_matches(&verdict.provider, &verdict.model)
    }

    /// True when `verdict` (a verdict of another wire) is one the filter selects.
    pub fn matches_wire(&self, verdict: &WireVerdict) -> bool {
        self.wire_matches(&verdict.wire) && self.target_matches(&verdict.provider, &verdict.model)
    }

    fn wire_matches(&self, wire: &str) -> bool {
        self.wire
            .as_deref()
            .is_none_or(|w| w.trim().eq_ignore_ascii_case(wire))
    }

    fn target_matches(&self, provider: &str, model: &str) -> bool {
        self.provider
            .as_deref()
            .is_none_or(|p| p.trim().to_lowercase() == provider)
            && self.model.as_deref().is_none_or(|m| m == model)
    }
}

/// A member of `model_config` the store reads and rewrites on its own.
pub(crate) trait Member: Clone + PartialEq + Serialize {
    /// Its key in `model_config`.
    const KEY: &'static str;
    /// Reads it out of a `model_config` (absent means empty).
    fn from_model_config(config: &Map<String, Value>) -> Result<Self, serde_json::Error>;
    /// True when it holds nothing (the key then leaves `model_config`).
    fn is_empty(&self) -> bool;
}

impl Member for Verdicts {
    const KEY: &'static str = VERDICTS_KEY;
    fn from_model_config(config: &Map<String, Value>) -> Result<Self, serde_json::Error> {
        Verdicts::from_model_config(config)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Member for WireVerdicts {
    const KEY: &'static str = WIRE_VERDICTS_KEY;
    fn from_model_config(config: &Map<String, Value>) -> Result<Self, serde_json::Error> {
        WireVerdicts::from_model_config(config)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One member, or several, changed together in one transaction.
pub(crate) trait Members: Clone + PartialEq {
    /// Reads them out of the stored object.
    fn read(config: &RawConfig<'_>) -> Result<Self, serde_json::Error>;
    /// Pushes `(key, new text)` for each member that differs from `before` (`None`: remove it).
    fn rewrites(
        &self,
        before: &Self,
        out: &mut Vec<(&'static str, Option<String>)>,
    ) -> Result<(), serde_json::Error>;
}

impl<M: Member> Members for M {
    fn read(config: &RawConfig<'_>) -> Result<Self, serde_json::Error> {
        config.member()
    }
    fn rewrites(
        &self,
        before: &Self,
        out: &mut Vec<(&'static str, Option<String>)>,
    ) -> Result<(), serde_json::Error> {
        if self != before {
            let text = (!self.is_empty())
                .then(|| serde_json::to_string(self))
                .transpose()?;
            out.push((M::KEY, text));
        }
        Ok(())
    }
}

impl<A: Member, B: Member> Members for (A, B) {
    fn read(config: &RawConfig<'_>) -> Result<Self, serde_json::Error> {
        Ok((config.member()?, config.member()?))
    }
    fn rewrites(
        &self,
        before: &Self,
        out: &mut Vec<(&'static str, Option<String>)>,
    ) -> Result<(), serde_json::Error> {
        self.0.rewrites(&before.0, out)?;
        self.1.rewrites(&before.1, out)
    }
}

/// A stored `model_config` object as its members' exact texts (key and value), in stored order.
pub(crate) struct RawConfig<'a>(Vec<(&'a RawValue, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawConfig<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = RawConfig<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(RawConfig(members))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

impl<'a> RawConfig<'a> {
    fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    fn is_key(key: &RawValue, name: &str) -> bool {
        serde_json::from_str::<Cow<'_, str>>(key.get()).is_ok_and(|k| k == name)
    }

    /// The member `M`, read as its `from_model_config` reads it (a repeated key counts once, its
    /// last value, as when the object is read into a map). An error names the member's key.
    fn member<M: Member>(&self) -> Result<M, serde_json::Error> {
        let read = || {
            let mut config = Map::new();
            if let Some((_, value)) = self.0.iter().rev().find(|(k, _)| Self::is_key(k, M::KEY)) {
                config.insert(M::KEY.to_owned(), serde_json::from_str(value.get())?);
            }
            M::from_model_config(&config)
        };
        read().map_err(named::<M>)
    }

    /// The object's text with each `(key, text)` of `rewrites` in place of the stored member:
    /// where the key first stood, at the end (in `rewrites` order) when it was absent, and no
    /// key at all when the text is `None`. Every other member keeps its exact text and place.
    fn rewritten(&self, rewrites: &[(&str, Option<String>)]) -> Result<String, serde_json::Error> {
        let keys = rewrites
            .iter()
            .map(|(key, _)| serde_json::to_string(key))
            .collect::<Result<Vec<_>, _>>()?;
        let mut placed = vec![false; rewrites.len()];
        let mut members: Vec<(&str, &str)> = Vec::with_capacity(self.0.len() + rewrites.len());
        for (k, v) in &self.0 {
            match rewrites.iter().position(|(key, _)| Self::is_key(k, key)) {
                None => members.push((k.get(), v.get())),
                Some(i) => {
                    if let (Some(text), false) = (&rewrites[i].1, placed[i]) {
                        members.push((k.get(), text));
                        placed[i] = true;
                    }
                }
            }
        }
        for (i, (_, text)) in rewrites.iter().enumerate() {
            if let (Some(text), false) = (text, placed[i]) {
                members.push((&keys[i], text));
            }
        }
        let mut out = String::from("{");
        for (i, (k, v)) in members.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
        Ok(out)
    }
}

/// A member's decoding error, naming the member's key.
fn named<M: Member>(e: serde_json::Error) -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom(format_args!("member `{}`: {e}", M::KEY))
}

/// The member `M` of a session's `model_config` already read (one decode of the row serves
/// every member); an error is [`StoreError::Corrupt`] naming the member, as
/// [`Store::read_member`] reports it.
pub(crate) fn member_of<M: Member>(
    session: &str,
    config: &Map<String, Value>,
) -> Result<M, StoreError> {
    M::from_model_config(config).map_err(|e| corrupt(session, &named::<M>(e)))
}

/// `session`'s `model_config` (or a member of it) could not be read, as `e` says.
pub(crate) fn corrupt(session: &str, e: &serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        session: session.to_owned(),
        position: -1,
        message: format!("model_config: {e}"),
    }
}

impl Store {
    /// The session's chat-completions verdicts.
    pub async fn verdicts(&self, session: &str) -> Result<Verdicts, StoreError> {
        self.read_member(session).await
    }

    /// The session's verdicts of the other wires.
    pub async fn wire_verdicts(&self, session: &str) -> Result<WireVerdicts, StoreError> {
        self.read_member(session).await
    }

    /// Records that `target` refused `carriers`, merged ([`Verdicts::record`]) into the session's
    /// verdicts as they are stored now, in one write transaction: a verdict cleared or recorded
    /// by another handle in the meantime is neither brought back nor lost. Returns the session's
    /// verdicts after the change.
    pub async fn record_verdict(
        &self,
        session: &str,
        target: &RouteTarget,
        carriers: CarrierSet,
    ) -> Result<Verdicts, StoreError> {
        self.change_members(session, |verdicts: &mut Verdicts| {
            verdicts.record(target, carriers);
        })
        .await
        .map(|(verdicts, _)| verdicts)
    }

    /// Records that `target` refused `fields` on `wire` (a wire other than chat completions),
    /// merged ([`WireVerdicts::record`]) into the session's wire verdicts as they are stored
    /// now, in one write transaction, as [`Store::record_verdict`] does. Returns the session's
    /// wire verdicts after the change.
    pub async fn record_wire_verdict(
        &self,
        session: &str,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, StoreError> {
        self.change_members(session, |verdicts: &mut WireVerdicts| {
            verdicts.record(wire, target, fields);
        })
        .await
        .map(|(verdicts, _)| verdicts)
    }

    /// Removes the session's verdicts that `filter` matches (chat-completions and other wires'),
    /// in one write transaction; returns how many were removed. A key leaves `model_config` when
    /// no verdict is left under it.
    pub async fn clear_verdicts(
        &self,
        session: &str,
        filter: &VerdictFilter,
    ) -> Result<usize, StoreError> {
        fn clear_chat(verdicts: &mut Verdicts, filter: &VerdictFilter) -> usize {
            let before = verdicts.0.len();
            verdicts.0.retain(|v| !filter.matches(v));
            before - verdicts.0.len()
        }
        fn clear_wires(verdicts: &mut WireVerdicts, filter: &VerdictFilter) -> usize {
            let before = verdicts.0.len();
            verdicts.0.retain(|v| !filter.matches_wire(v));
            before - verdicts.0.len()
        }
        // Read only the members the filter can select, so a damaged member the user did not
        // ask about does not stand in the way.
        let removed = match filter.wire.as_deref() {
            None => {
                self.change_members(session, |(chat, wires): &mut (Verdicts, WireVerdicts)| {
                    clear_chat(chat, filter) + clear_wires(wires, filter)
                })
                .await?
                .1
            }
            Some(_) if filter.wire_matches(CHAT_WIRE) => {
                self.change_members(session, |chat: &mut Verdicts| clear_chat(chat, filter))
                    .await?
                    .1
            }
            Some(_) => {
                self.change_members(session, |wires: &mut WireVerdicts| {
                    clear_wires(wires, filter)
                })
                .await?
                .1
            }
        };
        Ok(removed)
    }

    /// Reads the stored member `M` of the session's `model_config`.
    pub(crate) async fn read_member<M: Member>(&self, session: &str) -> Result<M, StoreError> {
        let text: Option<String> =
            sqlx::query_scalar("SELECT model_config FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&self.pool)
                .await
                .db()?;
        let text = text.ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        RawConfig::parse(&text)
            .and_then(|c| c.member())
            .map_err(|e| corrupt(session, &e))
    }

    /// Reads the stored members `M`, applies `change` and writes back those that changed, all in
    /// one `BEGIN IMMEDIATE` transaction ([`Store::write_tx`]: the write lock is held from
    /// before the read, so no other writer commits in between).
    pub(crate) async fn change_members<M: Members, R>(
        &self,
        session: &str,
        change: impl FnOnce(&mut M) -> R,
    ) -> Result<(M, R), StoreError> {
        let mut tx = self.write_tx(session).await?;
        let text: Option<String> =
            sqlx::query_scalar("SELECT model_config FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        let text = text.ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        let config = RawConfig::parse(&text).map_err(|e| corrupt(session, &e))?;
        let before = M::read(&config).map_err(|e| corrupt(session, &e))?;
        let mut members = before.clone();
        let result = change(&mut members);
        let encode = |e: serde_json::Error| StoreError::Encode(format!("model_config: {e}"));
        let mut rewrites = Vec::new();
        members.rewrites(&before, &mut rewrites).map_err(encode)?;
        if !rewrites.is_empty() {
            let text = config.rewritten(&rewrites).map_err(encode)?;
            execute!(
                &mut *tx,
                "UPDATE sessions SET model_config = $1, updated_at = $2 WHERE id = $3",
                [text, now_ms(), session]
            )?;
            tx.commit().await.db()?;
            let keys: Vec<&str> = rewrites.iter().map(|(key, _)| *key).collect();
            tracing::debug!(session, ?keys, "model_config members stored");
        } else {
            // Nothing to write: end the transaction without touching the row.
            tx.rollback().await.db()?;
        }
        Ok((members, result))
    }
}
