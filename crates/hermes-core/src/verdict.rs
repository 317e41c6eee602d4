//! Recorded refusals: which carriers a (provider, host, model) rejected (docs/spec.md §6).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::route::{Carrier, CarrierSet};
use crate::target::RouteTarget;

/// The key of `model_config` that holds verdicts.
pub const VERDICTS_KEY: &str = "reasoning_rejected_carriers";

/// One verdict: this provider, host and model refused these carriers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Provider id, lowercased.
    pub provider: String,
    /// Host without port.
    pub host: String,
    /// Model id, case kept.
    pub model: String,
    /// Refused carriers.
    pub carriers: CarrierSet,
}

impl Verdict {
    /// A verdict for `target`.
    pub(crate) fn for_target(target: &RouteTarget, carriers: CarrierSet) -> Self {
        Verdict {
            provider: target.provider.clone(),
            host: target.host_key(),
            model: target.model.clone(),
            carriers,
        }
    }

    /// True when the verdict is keyed on `target`.
    pub(crate) fn applies_to(&self, target: &RouteTarget) -> bool {
        keyed_on(&self.provider, &self.host, &self.model, target)
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A JSON array, as it is read back.
        (&self.provider, &self.host, &self.model, &self.carriers).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (provider, host, model, fields): (String, String, String, Vec<String>) =
            Deserialize::deserialize(deserializer)?;
        let mut carriers = CarrierSet::NONE;
        for field in fields {
            let carrier = Carrier::parse(&field).ok_or_else(|| {
                D::Error::custom(format!(
                    "unknown carrier `{field}`, expected reasoning_content, reasoning or reasoning_details"
                ))
            })?;
            carriers = carriers.with(carrier);
        }
        Ok(Verdict {
            provider: provider.trim().to_lowercase(),
            host,
            model,
            carriers,
        })
    }
}

/// The value under `key` of a session's `model_config`; the default when absent or null.
fn read_model_config<T: Default + serde::de::DeserializeOwned>(
    config: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<T, serde_json::Error> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(value) => T::deserialize(value),
    }
}

/// Every verdict a session has recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Verdicts(pub Vec<Verdict>);

impl Verdicts {
    /// Reads the verdicts out of a session's `model_config` (absent means none).
    pub fn from_model_config(
        config: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, serde_json::Error> {
        read_model_config(config, VERDICTS_KEY)
    }

    /// The carriers refused for `target`.
    pub fn refused_for(&self, target: &RouteTarget) -> CarrierSet {
        self.0
            .iter()
            .filter(|v| v.applies_to(target))
            .fold(CarrierSet::NONE, |acc, v| acc.union(v.carriers))
    }

    /// Records `carriers` for `target`, widening an existing verdict; returns false when nothing
    /// new was learned.
    pub fn record(&mut self, target: &RouteTarget, carriers: CarrierSet) -> bool {
        if let Some(v) = self.0.iter_mut().find(|v| v.applies_to(target)) {
            let widened = v.carriers.union(carriers);
            let changed = widened != v.carriers;
            v.carriers = widened;
            return changed;
        }
        if carriers.is_empty() {
            return false;
        }
        self.0.push(Verdict::for_target(target, carriers));
        true
    }
}

/// Where the verdicts of wires other than chat completions live in `model_config`, beside
/// [`VERDICTS_KEY`] (whose shape the Python original shares and which stays chat-only).
pub const WIRE_VERDICTS_KEY: &str = "hermes_wire_verdicts";

/// A refusal learned on a wire other than chat completions: which of that wire's fields the
/// provider refused for one provider, host and model. Stored as
/// `[wire, provider, host, model, [fields]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireVerdict {
    /// The wire's id (`anthropic`, `gemini`, …).
    pub wire: String,
    /// Provider, lowercased.
    pub provider: String,
    /// Host without port.
    pub host: String,
    /// Model id, case kept.
    pub model: String,
    /// Refused fields, in the wire's spelling, sorted.
    pub fields: Vec<String>,
}

impl WireVerdict {
    /// True when the verdict is about `wire` and `target`.
    pub(crate) fn applies_to(&self, wire: &str, target: &RouteTarget) -> bool {
        self.wire == wire && keyed_on(&self.provider, &self.host, &self.model, target)
    }
}

/// True when a verdict kept under `provider`, `host` and `model` is about `target`.
fn keyed_on(provider: &str, host: &str, model: &str, target: &RouteTarget) -> bool {
    provider == target.provider && model == target.model && host == target.host_key()
}

impl Serialize for WireVerdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A JSON array, as it is read back.
        (
            &self.wire,
            &self.provider,
            &self.host,
            &self.model,
            &self.fields,
        )
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for WireVerdict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (wire, provider, host, model, mut fields): (
            String,
            String,
            String,
            String,
            Vec<String>,
        ) = Deserialize::deserialize(deserializer)?;
        fields.sort();
        fields.dedup();
        Ok(WireVerdict {
            wire,
            provider: provider.trim().to_lowercase(),
            host,
            model,
            fields,
        })
    }
}

/// The verdicts of the other wires, in learning order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireVerdicts(pub Vec<WireVerdict>);

impl WireVerdicts {
    /// Reads [`WIRE_VERDICTS_KEY`] of a `model_config` (empty when absent).
    pub fn from_model_config(
        config: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, serde_json::Error> {
        read_model_config(config, WIRE_VERDICTS_KEY)
    }

    /// The fields refused on `wire` for `target`.
    pub fn refused_for(&self, wire: &str, target: &RouteTarget) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .0
            .iter()
            .filter(|v| v.applies_to(wire, target))
            .flat_map(|v| v.fields.iter().map(String::as_str))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Records that `target` refused `fields` on `wire`; true when that is new.
    pub fn record(&mut self, wire: &str, target: &RouteTarget, fields: &[&str]) -> bool {
        if let Some(v) = self.0.iter_mut().find(|v| v.applies_to(wire, target)) {
            let before = v.fields.len();
            v.fields.extend(fields.iter().map(|f| (*f).to_owned()));
            v.fields.sort();
            v.fields.dedup();
            return v.fields.len() != before;
        }
        if fields.is_empty() {
            return false;
        }
        let mut fields: Vec<String> = fields.iter().map(|f| (*f).to_owned()).collect();
        fields.sort();
        fields.dedup();
        self.0.push(WireVerdict {
            wire: wire.to_owned(),
            provider: target.provider.clone(),
            host: target.host_key(),
            model: target.model.clone(),
            fields,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_key_on_provider_host_without_port_and_model() {
        let t = RouteTarget::new(
            "OpenRouter",
            Some("https://openrouter.ai:443/api/v1"),
            "x/Model-A",
        );
        let mut v = Verdicts::default();
        assert!(v.record(&t, CarrierSet::NONE.with(Carrier::ReasoningDetails)));
        assert!(!v.record(&t, CarrierSet::NONE.with(Carrier::ReasoningDetails)));
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(
            json,
            r#"[["openrouter","openrouter.ai","x/Model-A",["reasoning_details"]]]"#
        );
        let sibling = RouteTarget::new(
            "openrouter",
            Some("https://openrouter.ai/api/v1"),
            "x/model-a",
        );
        assert!(v.refused_for(&sibling).is_empty());
        let back: Verdicts = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back.refused_for(&t),
            CarrierSet::NONE.with(Carrier::ReasoningDetails)
        );
    }

    #[test]
    fn unknown_carrier_in_a_verdict_is_an_error() {
        let err = serde_json::from_str::<Verdicts>(r#"[["a","b","c",["thinking"]]]"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown carrier `thinking`"),
            "{err}"
        );
    }
}
