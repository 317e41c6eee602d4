//! Verdicts (SPEC §6), read and changed inside the store in one transaction each, so that two
//! writers (a running chat and `hermes verdicts clear`) cannot overwrite each other's change.
//!
//! They live in the session's `model_config` under [`VERDICTS_KEY`]. Changing them rewrites only
//! that member: every other member of the stored JSON object keeps its exact text and place.

use std::borrow::Cow;

use hermes_core::verdict::VERDICTS_KEY;
use hermes_core::{CarrierSet, RouteTarget, Verdict, Verdicts};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{DbResult as _, Store, StoreError, now_ms};

/// Which verdicts [`Store::clear_verdicts`] removes; `None` matches every value, so the default
/// filter matches every verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerdictFilter {
    /// Provider id; compared trimmed and lowercased (verdicts store it lowercased).
    pub provider: Option<String>,
    /// Model id; compared exactly (model ids keep their case).
    pub model: Option<String>,
}

impl VerdictFilter {
    /// True when `verdict` is one the filter selects.
    pub fn matches(&self, verdict: &Verdict) -> bool {
        self.provider
            .as_deref()
            .is_none_or(|p| p.trim().to_lowercase() == verdict.provider)
            && self.model.as_deref().is_none_or(|m| m == verdict.model)
    }
}

/// A stored `model_config` object as its members' exact texts (key and value), in stored order.
struct RawConfig<'a>(Vec<(&'a RawValue, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawConfig<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
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
        deserializer.deserialize_map(Members)
    }
}

impl<'a> RawConfig<'a> {
    fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    fn is_verdicts_key(key: &RawValue) -> bool {
        serde_json::from_str::<Cow<'_, str>>(key.get()).is_ok_and(|k| k == VERDICTS_KEY)
    }

    /// The verdicts held, read as [`Verdicts::from_model_config`] reads them (a repeated key
    /// counts once, its last value, as when the object is read into a map).
    fn verdicts(&self) -> Result<Verdicts, serde_json::Error> {
        let mut config = serde_json::Map::new();
        if let Some((_, value)) = self.0.iter().rev().find(|(k, _)| Self::is_verdicts_key(k)) {
            config.insert(VERDICTS_KEY.to_owned(), serde_json::from_str(value.get())?);
        }
        Verdicts::from_model_config(&config)
    }

    /// The object's text with `verdicts` in place of the stored ones: where the key first stood,
    /// at the end when it was absent, and no key at all when there are none. Every other member
    /// keeps its exact text and place.
    fn with_verdicts(&self, verdicts: &Verdicts) -> Result<String, serde_json::Error> {
        let encoded = (!verdicts.0.is_empty())
            .then(|| serde_json::to_string(verdicts))
            .transpose()?;
        let key = serde_json::to_string(VERDICTS_KEY)?;
        let mut members: Vec<(&str, &str)> = Vec::with_capacity(self.0.len() + 1);
        let mut placed = false;
        for (k, v) in &self.0 {
            if !Self::is_verdicts_key(k) {
                members.push((k.get(), v.get()));
            } else if let (Some(encoded), false) = (&encoded, placed) {
                members.push((k.get(), encoded));
                placed = true;
            }
        }
        if let (Some(encoded), false) = (&encoded, placed) {
            members.push((&key, encoded));
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

fn corrupt(session: &str, e: &serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        session: session.to_owned(),
        position: -1,
        message: format!("model_config: {e}"),
    }
}

impl Store {
    /// The session's verdicts.
    pub async fn verdicts(&self, session: &str) -> Result<Verdicts, StoreError> {
        let text: Option<String> =
            sqlx::query_scalar("SELECT model_config FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&self.pool)
                .await
                .db()?;
        let text = text.ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        RawConfig::parse(&text)
            .and_then(|c| c.verdicts())
            .map_err(|e| corrupt(session, &e))
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
        self.change_verdicts(session, |verdicts| {
            verdicts.record(target, carriers);
        })
        .await
        .map(|(verdicts, _)| verdicts)
    }

    /// Removes the session's verdicts that `filter` matches, in one write transaction; returns
    /// how many were removed. The key leaves `model_config` when no verdict is left.
    pub async fn clear_verdicts(
        &self,
        session: &str,
        filter: &VerdictFilter,
    ) -> Result<usize, StoreError> {
        self.change_verdicts(session, |verdicts| {
            let before = verdicts.0.len();
            verdicts.0.retain(|v| !filter.matches(v));
            before - verdicts.0.len()
        })
        .await
        .map(|(_, removed)| removed)
    }

    /// Reads the stored verdicts, applies `change` and writes them back when they changed, all in
    /// one `BEGIN IMMEDIATE` transaction ([`Store::write_tx`]: the write lock is held from
    /// before the read, so no other writer commits in between).
    async fn change_verdicts<R>(
        &self,
        session: &str,
        change: impl FnOnce(&mut Verdicts) -> R,
    ) -> Result<(Verdicts, R), StoreError> {
        let mut tx = self.write_tx().await?;
        let text: Option<String> =
            sqlx::query_scalar("SELECT model_config FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await
                .db()?;
        let text = text.ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        let config = RawConfig::parse(&text).map_err(|e| corrupt(session, &e))?;
        let before = config.verdicts().map_err(|e| corrupt(session, &e))?;
        let mut verdicts = before.clone();
        let result = change(&mut verdicts);
        if verdicts != before {
            let text = config
                .with_verdicts(&verdicts)
                .map_err(|e| StoreError::Encode(format!("model_config: {e}")))?;
            sqlx::query("UPDATE sessions SET model_config = $1, updated_at = $2 WHERE id = $3")
                .bind(text)
                .bind(now_ms())
                .bind(session)
                .execute(&mut *tx)
                .await
                .db()?;
            tx.commit().await.db()?;
            tracing::debug!(session, verdicts = verdicts.0.len(), "verdicts stored");
        } else {
            // Nothing to write: end the transaction without touching the row.
            tx.rollback().await.db()?;
        }
        Ok((verdicts, result))
    }
}
