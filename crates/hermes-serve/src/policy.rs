//! A tenant's policy (`[serve]` for every tenant, `[serve.tenants.NAME]` for one; issue 47):
//! the models it may use, the `anthropic-beta` values and server tools it may ask for, the
//! largest `max_tokens` it may ask for, and whether each request must name a partition. Checked
//! once the body is parsed and the model resolved, before anything is stored or sent upstream:
//! 403 (400 for a missing partition) in the door's shape.
//!
//! Patterns are [`crate::model::matches`]'s: `*` stands for any run of characters.

use std::collections::BTreeMap;

use crate::error::ApiError;

/// The largest `max_tokens` a tenant may ask for unless configured otherwise: the highest
/// output ceiling among the models the built-in tables know (Claude's adaptive models, 128,000).
pub const DEFAULT_MAX_TOKENS: u32 = 128_000;

/// One tenant's policy; `None`: [`Policy::defaults`]' (whose own `None` is the built-in
/// default, [`Policy::of`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TenantPolicy {
    /// Patterns of the `provider/model` a request resolves to (default `["*"]`: every provider
    /// the gateway has credentials for).
    pub allow_models: Option<Vec<String>>,
    /// Patterns of the `anthropic-beta` values a request may send (default none: a request
    /// with any beta is refused).
    pub allow_betas: Option<Vec<String>>,
    /// Patterns of the server tools a request may define, by their `type` (Anthropic's
    /// versioned tools such as `web_search_20250305`, `code_execution_*`; on the chat door every
    /// tool that is not a `function` or `custom` one). Default none.
    pub allow_server_tools: Option<Vec<String>>,
    /// The largest `max_tokens` (`max_completion_tokens`) a request may ask for (default
    /// [`DEFAULT_MAX_TOKENS`]); above it a request is refused, never clamped (a clamp would cut
    /// a thinking budget below its `max_tokens`, which Claude refuses). A request that names
    /// none gets the operator's `[max_tokens]` or the model's own default.
    pub max_tokens: Option<u32>,
    /// Refuse a request that names no partition (default false).
    pub require_partition: Option<bool>,
}

impl TenantPolicy {
    /// Nothing set.
    pub fn new() -> Self {
        TenantPolicy::default()
    }

    hermes_core::setters! {
        /// With these model patterns.
        allow_models: Option<Vec<String>>;
        /// With these beta patterns.
        allow_betas: Option<Vec<String>>;
        /// With these server tool patterns.
        allow_server_tools: Option<Vec<String>>;
        /// With this `max_tokens` cap.
        max_tokens: Option<u32>;
        /// Requiring a partition, or not.
        require_partition: Option<bool>;
    }

    /// `self`, each unset value taken from `defaults`.
    pub fn or(self, defaults: &TenantPolicy) -> TenantPolicy {
        TenantPolicy {
            allow_models: self.allow_models.or_else(|| defaults.allow_models.clone()),
            allow_betas: self.allow_betas.or_else(|| defaults.allow_betas.clone()),
            allow_server_tools: self
                .allow_server_tools
                .or_else(|| defaults.allow_server_tools.clone()),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            require_partition: self.require_partition.or(defaults.require_partition),
        }
    }
}

/// Every tenant's policy: defaults and overrides by tenant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Every tenant's policy unless overridden (`[serve]`).
    pub defaults: TenantPolicy,
    /// Overrides by tenant (`[serve.tenants.NAME]`); an unset value there is the default's.
    pub tenants: BTreeMap<String, TenantPolicy>,
}

/// What a request asks for that the policy judges.
pub(crate) struct Asked<'a> {
    /// The `provider/model` it resolved to.
    pub(crate) target: String,
    /// Its `anthropic-beta` values.
    pub(crate) betas: &'a [String],
    /// The `type` of each server tool it defines.
    pub(crate) server_tools: Vec<String>,
    /// Its `max_tokens`, and the key it came in.
    pub(crate) max_tokens: Option<(u32, &'static str)>,
    /// Whether it names a partition.
    pub(crate) partitioned: bool,
    /// The key that names a partition at this door.
    pub(crate) partition_key: &'static str,
}

impl Policy {
    /// The built-in defaults, overridable per tenant.
    pub fn new(defaults: TenantPolicy) -> Self {
        Policy {
            defaults,
            tenants: BTreeMap::new(),
        }
    }

    /// With `policy` for `tenant` (its unset values the defaults').
    pub fn tenant(mut self, tenant: impl Into<String>, policy: TenantPolicy) -> Self {
        self.tenants.insert(tenant.into(), policy);
        self
    }

    /// `tenant`'s policy, every value set (the built-in defaults where nothing is configured).
    pub fn of(&self, tenant: &str) -> TenantPolicy {
        let built_in = TenantPolicy {
            allow_models: Some(vec!["*".to_owned()]),
            allow_betas: Some(Vec::new()),
            allow_server_tools: Some(Vec::new()),
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            require_partition: Some(false),
        };
        self.tenants
            .get(tenant)
            .cloned()
            .unwrap_or_default()
            .or(&self.defaults)
            .or(&built_in)
    }

    /// Whether `tenant` may use `target` (`provider/model`, or `provider/*` for any model of a
    /// provider) under its `allow_models`.
    pub(crate) fn allows_model(&self, tenant: &str, target: &str) -> bool {
        allowed(&self.of(tenant).allow_models, target)
    }

    /// Refuses what `tenant`'s policy does not allow in `asked`: 403 naming the setting (400
    /// for a missing partition).
    pub(crate) fn check(&self, tenant: &str, asked: &Asked<'_>) -> Result<(), ApiError> {
        let policy = self.of(tenant);
        if policy.require_partition == Some(true) && !asked.partitioned {
            return Err(ApiError::invalid(
                asked.partition_key,
                format!(
                    "tenant `{tenant}` must name a partition on every request (require_partition): \
                     send `{}` (or the X-Hermes-Session header)",
                    asked.partition_key
                ),
            ));
        }
        if !allowed(&policy.allow_models, &asked.target) {
            return Err(ApiError::forbidden(
                "model",
                format!(
                    "tenant `{tenant}` may not use `{}` (allow_models)",
                    asked.target
                ),
            ));
        }
        if let Some(beta) = first_refused(&policy.allow_betas, asked.betas) {
            return Err(ApiError::forbidden(
                "anthropic-beta",
                format!("tenant `{tenant}` may not use the beta `{beta}` (allow_betas)"),
            ));
        }
        if let Some(tool) = first_refused(&policy.allow_server_tools, &asked.server_tools) {
            return Err(ApiError::forbidden(
                "tools",
                format!(
                    "tenant `{tenant}` may not use the server tool `{tool}` (allow_server_tools)"
                ),
            ));
        }
        if let (Some((asked, key)), Some(cap)) = (asked.max_tokens, policy.max_tokens)
            && asked > cap
        {
            return Err(ApiError::forbidden(
                key,
                format!(
                    "{key} = {asked} is over tenant `{tenant}`'s cap of {cap} (max_tokens_cap); \
                     ask for at most {cap}"
                ),
            ));
        }
        Ok(())
    }
}

/// The first of `values` that none of `patterns` matches.
fn first_refused<'a>(patterns: &Option<Vec<String>>, values: &'a [String]) -> Option<&'a String> {
    values.iter().find(|v| !allowed(patterns, v))
}

/// Whether one of `patterns` matches `value`.
fn allowed(patterns: &Option<Vec<String>>, value: &str) -> bool {
    patterns
        .iter()
        .flatten()
        .any(|p| crate::model::matches(p, value))
}

/// The `type` of each tool in a chat-completions `tools` list that is not a plain `function`
/// or `custom` tool (OpenAI's built-in tools run by the provider).
pub(crate) fn chat_server_tools(tools: Option<&hermes_core::RawJson>) -> Vec<String> {
    let Some(list) = tools.map(hermes_core::RawJson::to_value) else {
        return Vec::new();
    };
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            let kind = tool
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("function");
            (kind != "function" && kind != "custom").then(|| kind.to_owned())
        })
        .collect()
}

/// The `type` of each server tool of a Messages request (its Anthropic-defined tools), or of
/// each built-in tool of a Responses request (OpenAI-defined).
pub(crate) fn messages_server_tools(passthrough: &hermes_core::Passthrough) -> Vec<String> {
    passthrough
        .server_tools
        .iter()
        .map(|tool| {
            tool.to_value()
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("unknown")
                .to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Asked, Policy, TenantPolicy};

    fn asked(betas: &[String]) -> Asked<'_> {
        Asked {
            target: "anthropic/claude-opus-4-8".into(),
            betas,
            server_tools: Vec::new(),
            max_tokens: Some((1000, "max_tokens")),
            partitioned: false,
            partition_key: "user",
        }
    }

    #[test]
    fn a_tenant_override_wins_and_the_rest_is_the_defaults() {
        let policy = Policy::new(TenantPolicy::new().allow_models(Some(vec!["deepseek/*".into()])))
            .tenant(
                "acme",
                TenantPolicy::new().allow_betas(Some(vec!["context-*".into()])),
            );
        let none: Vec<String> = Vec::new();
        let beta = vec!["context-1m-2025-08-07".to_owned()];
        // The default's model patterns hold for acme too.
        let refused = policy.check("acme", &asked(&none)).unwrap_err();
        assert_eq!(refused.status.as_u16(), 403);
        let open = Policy::default().tenant(
            "acme",
            TenantPolicy::new().allow_betas(Some(vec!["context-*".into()])),
        );
        open.check("acme", &asked(&beta)).unwrap();
        let refused = open.check("globex", &asked(&beta)).unwrap_err();
        assert!(
            refused.message.contains("allow_betas"),
            "{}",
            refused.message
        );
        assert_eq!(Policy::default().of("x").max_tokens, Some(128_000));
    }
}
