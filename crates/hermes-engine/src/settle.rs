//! The one settlement: what provider, model, base URL, key and route a command runs with —
//! flags, then the stored session (or history file), then `config.toml`, then the registry.
//! `chat`, the REPL, `preview` and `sessions compact` all call [`settle`] (through
//! [`Engine::settle`](crate::Engine::settle)), so they cannot
//! disagree. The engine never reads the environment: keys come through a caller's function.
//! The thinking request settles the same way, in [`settle_thinking`].

use std::collections::BTreeMap;

use hermes_core::{Effort, TargetHost, ThinkingRequest};
use hermes_providers::{Access, ProviderSpec, Wires};
use hermes_store::StoredThinking;

use crate::error::{EngineError, KeyRefusal, Setting};
use crate::simulators::SimProfile;

/// What the user asked for on this command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Choice {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--allow-insecure-http`.
    pub allow_insecure_http: bool,
}

impl Choice {
    /// A choice of provider, model and base URL (each optional).
    pub fn new(provider: Option<&str>, model: Option<&str>, base_url: Option<&str>) -> Self {
        Choice {
            provider: provider.map(str::to_owned),
            model: model.map(str::to_owned),
            base_url: base_url.map(str::to_owned),
            allow_insecure_http: false,
        }
    }

    /// With `--allow-insecure-http`.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_insecure_http = allow;
        self
    }
}

/// One provider's settings from `config.toml`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderDefaults {
    /// Base URL instead of the registry's.
    pub base_url: Option<String>,
    /// Variable holding the key, instead of the registry's.
    pub key_var: Option<String>,
    /// Default model.
    pub model: Option<String>,
    /// Pad `reasoning_content` on every assistant turn (docs/spec.md §3a).
    pub reasoning_echo: bool,
}

impl ProviderDefaults {
    /// Settings with these values.
    pub fn new(
        base_url: Option<String>,
        key_var: Option<String>,
        model: Option<String>,
        reasoning_echo: bool,
    ) -> Self {
        ProviderDefaults {
            base_url,
            key_var,
            model,
            reasoning_echo,
        }
    }
}

/// The defaults `config.toml` gives (the caller reads the file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// Default provider.
    pub provider: Option<String>,
    /// Default model (for the default provider).
    pub model: Option<String>,
    /// Per-provider settings, by lowercased provider id.
    pub providers: BTreeMap<String, ProviderDefaults>,
    /// Send keys over plain http to public hosts.
    pub allow_insecure_http: bool,
    /// `[vertex]`: the Google Cloud project and region of the Vertex providers.
    pub vertex: VertexDefaults,
    /// The AWS region of the Bedrock providers (`[bedrock] region` in config.toml, else what
    /// the caller found in the AWS environment or shared config).
    pub aws_region: Option<String>,
    /// `effort` in config.toml: the thinking request when neither the command line nor the
    /// stored session asks for one ([`settle_thinking`]).
    pub effort: Option<Effort>,
    /// `[max_tokens]` in config.toml: the output limit per model family, keyed by a
    /// lowercase substring of the model id (the longest key the id contains wins).
    pub max_tokens: BTreeMap<String, u32>,
}

impl Defaults {
    /// The configured output limit for `model` ([`Defaults::max_tokens`]): the value of the
    /// longest key the lowercased id contains.
    pub fn max_tokens_for(&self, model: &str) -> Option<u32> {
        let model = model.to_ascii_lowercase();
        self.max_tokens
            .iter()
            .filter(|(key, _)| model.contains(key.to_ascii_lowercase().as_str()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, max)| *max)
    }
}

/// `[vertex]` in `config.toml` (shared by `vertex-anthropic` and `vertex-gemini`), and what the
/// official SDKs' variables say where config is silent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VertexDefaults {
    /// The Google Cloud project.
    pub project: Option<String>,
    /// The region (`us-east5`, `europe-west1`, …) or `global`.
    pub region: Option<String>,
    /// The values of [`VERTEX_VARIABLES`] the front end found (non-blank), by name.
    pub variables: BTreeMap<String, String>,
}

/// The variables the official SDKs read for a Vertex project and region, which hermes honours
/// after `[vertex]` in config: Anthropic's Vertex client (`AnthropicVertex`:
/// `ANTHROPIC_VERTEX_PROJECT_ID`, `CLOUD_ML_REGION`) and google-genai (`GOOGLE_CLOUD_PROJECT`,
/// `GOOGLE_CLOUD_LOCATION`; google-auth's default credentials also take their project from
/// `GOOGLE_CLOUD_PROJECT`). Sources: anthropic-sdk-python `lib/vertex/_client.py`,
/// googleapis/python-genai `google/genai/_api_client.py`.
pub const VERTEX_VARIABLES: [&str; 4] = [
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
];

impl VertexDefaults {
    /// A project and region (each optional).
    pub fn new(project: Option<String>, region: Option<String>) -> Self {
        VertexDefaults {
            project,
            region,
            variables: BTreeMap::new(),
        }
    }

    /// With the values `lookup` gives for [`VERTEX_VARIABLES`] (blank ones ignored).
    pub fn with_variables(mut self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        self.variables = VERTEX_VARIABLES
            .iter()
            .filter_map(|var| {
                let value = lookup(var)?;
                let value = value.trim();
                (!value.is_empty()).then(|| ((*var).to_owned(), value.to_owned()))
            })
            .collect();
        self
    }

    /// The first value among `vars`.
    fn variable(&self, vars: [&str; 2]) -> Option<String> {
        vars.iter().find_map(|v| self.variables.get(*v).cloned())
    }

    /// Where the requests of a provider reading `project_vars` and `region_vars` (its
    /// [`Access::GoogleCloud`], in order of preference) go: config first, then those variables;
    /// the region defaults to `global`. `None` when no project is known.
    pub fn location(
        &self,
        project_vars: [&str; 2],
        region_vars: [&str; 2],
    ) -> Option<VertexLocation> {
        let project = self
            .project
            .clone()
            .or_else(|| self.variable(project_vars))?;
        let region = self
            .region
            .clone()
            .or_else(|| self.variable(region_vars))
            .unwrap_or_else(|| "global".to_owned());
        Some(VertexLocation { project, region })
    }
}

/// Where a Vertex request goes: project and region (`global` included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexLocation {
    /// The Google Cloud project.
    pub project: String,
    /// The region, or `global`.
    pub region: String,
}

impl VertexLocation {
    /// The regional host, or the global one for `global` (docs/spec.md §8a).
    pub fn base_url(&self) -> String {
        if self.region == "global" {
            "https://aiplatform.googleapis.com".to_owned()
        } else {
            format!("https://{}-aiplatform.googleapis.com", self.region)
        }
    }
}

impl Defaults {
    /// The settings of `provider` (empty when none).
    pub fn provider(&self, provider: &str) -> ProviderDefaults {
        self.providers
            .get(&provider.trim().to_lowercase())
            .cloned()
            .unwrap_or_default()
    }
}

/// What a stored session (or a history file) says about its target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stored<'a> {
    /// Provider id.
    pub provider: Option<&'a str>,
    /// Model id.
    pub model: Option<&'a str>,
    /// Base URL.
    pub base_url: Option<&'a str>,
    /// The user named that base URL before (docs/spec.md: keys only where the user sent them).
    pub base_url_confirmed: bool,
}

/// What the settlement is for: a request that goes out (a key is looked up and checked) or a
/// preview (no network: no key needed, none looked up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// `chat`, the REPL, `sessions compact`.
    Send,
    /// `preview`.
    Preview,
}

/// An API key. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, for the request header and for redaction.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where a settled command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settled {
    /// Provider id as stored (`sim` for the simulator).
    pub provider: String,
    /// Provider name the route is resolved for (a simulator profile's stand-in provider).
    pub route_provider: String,
    /// Model id.
    pub model: String,
    /// Base URL as stored (`sim://PROFILE` for the simulator); `None` only for a preview of a
    /// provider with no default base URL.
    pub base_url: Option<String>,
    /// The user named the base URL on this command line.
    pub base_url_named: bool,
    /// The id of the wire the provider speaks (its descriptor's, in the engine's wire list;
    /// chat completions for a provider of the user's own).
    pub wire: &'static str,
    /// The key variable (for messages; never its value).
    pub key_var: Option<String>,
    /// The key, when one is sent.
    pub api_key: Option<ApiKey>,
    /// The key is a bearer token sent as `Authorization: Bearer` where the provider's own key
    /// header would go: Foundry with a Microsoft Entra ID token
    /// (its [`Access::Resource`]'s `token_var`).
    pub bearer: bool,
    /// The simulator profile, for `--provider sim`.
    pub sim: Option<SimProfile>,
    /// `reasoning_echo` from config.
    pub reasoning_echo: bool,
    /// The Vertex project and region (Vertex providers only).
    pub vertex: Option<VertexLocation>,
    /// The AWS region (Bedrock providers only): the one a Bedrock runtime base URL names, else
    /// the configured one (`us-east-1` in a preview when none is set). SigV4 signs for it.
    pub aws_region: Option<String>,
    /// The output limit `[max_tokens]` in config sets for this model (native wires).
    pub max_tokens: Option<u32>,
}

/// The id of the wire `provider` speaks on `wires`: chat completions when none lists it.
fn wire_of(wires: &Wires, provider: &str) -> &'static str {
    wires
        .provider(provider)
        .map_or(hermes_core::CHAT_WIRE, |(_, wire)| wire.id())
}

/// How `provider` is reached, as the wire serving it on `wires` declares it ([`Access::Key`]
/// for a provider no wire lists: chat completions at a base URL of the user's).
fn access_of(wires: &Wires, provider: &str) -> Access {
    wires
        .provider(provider)
        .map_or(Access::Key, |(spec, _)| spec.access)
}

/// The region a preview shows when none is configured.
pub(crate) const PREVIEW_AWS_REGION: &str = "us-east-1";

/// Settles the thinking request of a command: the command line's `--effort` / `--no-thinking`
/// (`flags`; [`ThinkingRequest::NoPreference`] when it gave neither) > the stored session's
/// request (`stored`) > `effort` in config.toml (`default`) > no preference.
pub fn settle_thinking(
    flags: ThinkingRequest,
    stored: Option<StoredThinking>,
    default: Option<Effort>,
) -> ThinkingRequest {
    match (flags, stored, default) {
        (ThinkingRequest::NoPreference, Some(stored), _) => stored.request(),
        (ThinkingRequest::NoPreference, None, Some(effort)) => ThinkingRequest::Effort(effort),
        (flags, _, _) => flags,
    }
}

/// The symbolic base URL of a simulator profile.
pub fn sim_url(profile: &str) -> String {
    format!("sim://{profile}")
}

/// The profile named by a `sim://PROFILE` URL.
pub(crate) fn sim_profile_name(base_url: Option<&str>) -> Option<&str> {
    base_url?.strip_prefix("sim://")
}

/// The simulator profile `name` among `profiles` (the engine's, [`Engine::sim_profiles`]): an
/// unknown name is a usage error listing them, in the simulator's own words; with no profiles,
/// one saying this build has no simulator.
///
/// [`Engine::sim_profiles`]: crate::Engine::sim_profiles
pub(crate) fn sim_profile<'a>(
    profiles: &'a [SimProfile],
    name: &str,
) -> Result<&'a SimProfile, EngineError> {
    if profiles.is_empty() {
        return Err(EngineError::Usage(NO_SIMULATOR.to_owned()));
    }
    profiles.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        EngineError::Usage(format!(
            "unknown profile `{name}`, expected one of {}",
            names.join(", ")
        ))
    })
}

/// The usage error of `--provider sim` in a build whose engine has no simulators.
pub(crate) const NO_SIMULATOR: &str = "provider `sim` is not available: this build has no simulator (the `hermes` command line adds them)";

/// The simulator profile used when `--provider sim` names none.
pub(crate) const DEFAULT_SIM_PROFILE: &str = "deepseek-v4";

/// Settles the target of a command (docs/spec.md §8a): flags > stored session > `config.toml` >
/// registry, on `wires` (a provider id's wire and registry entry come from that list: the
/// built-ins and any a third party added). `sims` are the simulator profiles `--provider sim`
/// may pick (none in a build without simulators). `key` looks up an environment variable for
/// [`Purpose::Send`]; it is never called for a preview. Front ends reach it through
/// [`Engine::settle`](crate::Engine::settle), on the engine's own wire list.
/// Refuses a built-in provider whose wire this build leaves out (its cargo feature is off, e.g.
/// `bedrock` in a build without the AWS crates), naming the feature; a wire of one's own that
/// serves the id is taken as it is.
pub(crate) fn check_built(wires: &Wires, provider: &str) -> Result<(), EngineError> {
    if wires.provider(provider).is_some() {
        return Ok(());
    }
    match crate::wires::feature_left_out(provider) {
        Some(feature) => Err(EngineError::Usage(format!(
            "provider `{}` needs the \"{feature}\" cargo feature, which this build of hermes leaves out (build it with `--features {feature}`)",
            provider.trim().to_lowercase()
        ))),
        None => Ok(()),
    }
}

pub(crate) fn settle(
    wires: &Wires,
    sims: &[SimProfile],
    choice: &Choice,
    stored: Option<Stored<'_>>,
    defaults: &Defaults,
    purpose: Purpose,
    key: &dyn Fn(&str) -> Option<String>,
) -> Result<Settled, EngineError> {
    let provider = choice
        .provider
        .as_deref()
        .or(stored.and_then(|s| s.provider))
        .or(defaults.provider.as_deref())
        .ok_or(EngineError::Missing {
            setting: Setting::Provider,
            provider: None,
        })?
        .trim()
        .to_lowercase();
    check_built(wires, &provider)?;
    // The stored session's model and URL count only for the provider it was stored with.
    let stored = stored.filter(|s| {
        s.provider
            .is_some_and(|p| p.trim().eq_ignore_ascii_case(&provider))
    });
    let section = defaults.provider(&provider);
    let config_model = || {
        section.model.clone().or_else(|| {
            defaults
                .model
                .clone()
                .filter(|_| defaults.provider.as_deref() == Some(provider.as_str()))
        })
    };
    let stored_url = stored
        .and_then(|s| s.base_url)
        .filter(|_| choice.base_url.is_none());
    let base_url = choice
        .base_url
        .clone()
        .or_else(|| stored_url.map(str::to_owned))
        .or_else(|| section.base_url.clone());
    let model = choice
        .model
        .clone()
        .or_else(|| stored.and_then(|s| s.model).map(str::to_owned))
        .or_else(config_model);

    if let Some(url) = base_url.as_deref() {
        check_base_url(url, provider == "sim").map_err(EngineError::Usage)?;
    }

    if provider == "sim" {
        if sims.is_empty() {
            return Err(EngineError::Usage(NO_SIMULATOR.to_owned()));
        }
        if let Some(url) = choice.base_url.as_deref()
            && sim_profile_name(Some(url)).is_none()
        {
            return Err(EngineError::Usage(format!(
                "the simulator's base URL picks a simulator profile (sim://PROFILE, e.g. sim://deepseek-v4), not `{url}`"
            )));
        }
        let profile = sim_profile(
            sims,
            sim_profile_name(base_url.as_deref()).unwrap_or(DEFAULT_SIM_PROFILE),
        )?
        .clone();
        check_built(wires, &profile.provider)?;
        let wire = wire_of(wires, &profile.provider);
        let model = model.unwrap_or_else(|| profile.model.clone());
        return Ok(Settled {
            provider,
            route_provider: profile.provider.clone(),
            max_tokens: defaults.max_tokens_for(&model),
            model,
            base_url: Some(sim_url(&profile.name)),
            base_url_named: choice.base_url.is_some(),
            wire,
            key_var: None,
            api_key: None,
            bearer: false,
            aws_region: (access_of(wires, &profile.provider) == Access::Aws)
                .then(|| PREVIEW_AWS_REGION.to_owned()),
            sim: Some(profile),
            reasoning_echo: section.reasoning_echo,
            vertex: None,
        });
    }

    let spec = wires.provider(&provider).map(|(spec, _)| spec);
    let access = spec.map_or(Access::Key, |s| s.access);
    let wire = wire_of(wires, &provider);
    let vertex = if let Access::GoogleCloud { project, region } = access {
        let ([p1, p2], [r1, r2]) = (project, region);
        Some(defaults.vertex.location(project, region).ok_or_else(|| {
            EngineError::Usage(format!(
                "provider `{provider}` needs a Google Cloud project: set `project` under [vertex] in config.toml, or {p1} (or {p2}); the region comes from `region` under [vertex], {r1} or {r2} (default global)"
            ))
        })?)
    } else {
        None
    };
    if let Access::Resource { example, .. } = access
        && base_url.is_none()
    {
        return Err(EngineError::Missing {
            setting: Setting::ResourceUrl { example },
            provider: Some(provider),
        });
    }
    let aws = access == Access::Aws;
    if aws && purpose == Purpose::Send && defaults.aws_region.is_none() && base_url.is_none() {
        return Err(EngineError::Usage(format!(
            "provider `{provider}` needs an AWS region: set AWS_REGION, `region` for your profile in ~/.aws/config, or `region` under [bedrock] in config.toml"
        )));
    }
    // A Bedrock runtime host names its region (FIPS, dual-stack, GovCloud and China hosts
    // included), and SigV4 must be scoped to it; any other base URL signs for the configured one.
    let host_region = base_url
        .as_deref()
        .and_then(hermes_providers::aws::RuntimeHost::of)
        .map(|host| host.region);
    let aws_region = aws.then(|| {
        host_region
            .or_else(|| defaults.aws_region.clone())
            .unwrap_or_else(|| PREVIEW_AWS_REGION.to_owned())
    });
    let base_url = base_url
        .or_else(|| spec.and_then(|s| s.base_url).map(str::to_owned))
        .or_else(|| vertex.as_ref().map(VertexLocation::base_url))
        .or_else(|| {
            aws_region
                .as_deref()
                .map(hermes_providers::aws::runtime_base_url)
        });
    let model = model.ok_or(EngineError::Missing {
        setting: Setting::Model,
        provider: None,
    })?;
    let key_var = (!aws).then(|| {
        section
            .key_var
            .clone()
            .or_else(|| spec.and_then(|s| s.key_var).map(str::to_owned))
            .unwrap_or_else(|| "HERMES_API_KEY".to_owned())
    });
    let mut settled = Settled {
        route_provider: provider.clone(),
        provider,
        max_tokens: defaults.max_tokens_for(&model),
        model,
        base_url_named: choice.base_url.is_some(),
        base_url,
        wire,
        key_var,
        api_key: None,
        bearer: false,
        sim: None,
        reasoning_echo: section.reasoning_echo,
        vertex,
        aws_region,
    };
    if purpose == Purpose::Send && aws {
        // AWS credentials go only where the user sent them, like a key.
        let base_url = settled.base_url.as_deref().unwrap_or_default();
        let user_named = choice.base_url.is_some()
            || stored_url.is_none()
            || stored.is_some_and(|s| s.base_url_confirmed)
            || section.base_url.as_deref() == Some(base_url);
        let regional = settled
            .aws_region
            .as_deref()
            .map(hermes_providers::aws::runtime_base_url);
        may_receive_key(
            base_url,
            user_named,
            regional.as_deref(),
            choice.allow_insecure_http || defaults.allow_insecure_http,
        )
        .map_err(|why| EngineError::Failed(why.message(base_url, "AWS credentials")))?;
    } else if purpose == Purpose::Send {
        // A resource (Foundry) also takes a bearer token (a Microsoft Entra ID token), when its
        // key is not set.
        if let Access::Resource { token_var, .. } = access
            && settled
                .key_var
                .as_deref()
                .and_then(key)
                .is_none_or(|k| k.trim().is_empty())
            && key(token_var).is_some_and(|t| !t.trim().is_empty())
        {
            settled.key_var = Some(token_var.to_owned());
            settled.bearer = true;
        }
        settled.api_key = send_key(
            &settled, spec, choice, stored, stored_url, &section, defaults, key,
        )?;
    }
    Ok(settled)
}

/// Checks a base URL before anything is sent to it: an `http`/`https` URL with a host (a URL
/// without a scheme is read as https, as routing does, when that gives a host), or
/// `sim://PROFILE` for the simulator (`sim`). The error names the URL and what is wrong.
pub(crate) fn check_base_url(base_url: &str, sim: bool) -> Result<(), String> {
    let trimmed = base_url.trim();
    let bad = |why: &str| Err(format!("invalid base URL `{base_url}`: {why}"));
    if trimmed.is_empty() {
        return bad("it is empty");
    }
    if let Some(profile) = trimmed.strip_prefix("sim://") {
        return match (sim, profile.is_empty()) {
            (true, false) => Ok(()),
            (true, true) => bad("`sim://` names no simulator profile (try sim://deepseek-v4)"),
            (false, _) => {
                bad("a `sim://` URL picks a simulator profile; use it with --provider sim")
            }
        };
    }
    let url = match url::Url::parse(trimmed) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            return match TargetHost::from_base_url(trimmed) {
                Some(_) => Ok(()),
                None => {
                    bad("it has no scheme and is not a host name; write it as https://HOST/PATH")
                }
            };
        }
        Err(e) => return bad(&e.to_string()),
    };
    if !matches!(url.scheme(), "http" | "https") {
        return bad(&format!(
            "the scheme `{}` is not http or https (write http://{trimmed} or https://{trimmed})",
            url.scheme()
        ));
    }
    if TargetHost::from_base_url(trimmed).is_none() {
        return bad("it has no host");
    }
    Ok(())
}

/// The key a request to `settled` may carry, and the checks of "keys only where the user sent
/// them".
#[allow(clippy::too_many_arguments)]
fn send_key(
    settled: &Settled,
    spec: Option<&ProviderSpec>,
    choice: &Choice,
    stored: Option<Stored<'_>>,
    stored_url: Option<&str>,
    section: &ProviderDefaults,
    defaults: &Defaults,
    key: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, EngineError> {
    let provider = &settled.provider;
    let base_url = settled
        .base_url
        .as_deref()
        .ok_or_else(|| EngineError::Missing {
            setting: Setting::BaseUrl,
            provider: Some(provider.clone()),
        })?;
    let key_var = settled.key_var.as_deref().unwrap_or("HERMES_API_KEY");
    let api_key = key(key_var).filter(|k| !k.trim().is_empty());
    let local = TargetHost::from_base_url(base_url).is_some_and(|h| h.is_local_endpoint());
    let access = spec.map_or(Access::Key, |s| s.access);
    let optional = spec.is_none() || access == Access::OptionalKey;
    if api_key.is_none() && !local && !optional {
        let or_token = match access {
            Access::Resource {
                token_var, token, ..
            } => format!(" (or {token_var}, {token})"),
            _ => String::new(),
        };
        return Err(EngineError::Credentials {
            provider: provider.clone(),
            var: Some(key_var.to_owned()),
            status: None,
            message: format!("missing API key for `{provider}`: set {key_var}{or_token}"),
        });
    }
    if api_key.is_some() {
        let user_named = choice.base_url.is_some()
            || stored_url.is_none()
            || stored.is_some_and(|s| s.base_url_confirmed)
            || section.base_url.as_deref() == Some(base_url);
        let insecure_ok = choice.allow_insecure_http || defaults.allow_insecure_http;
        may_receive_key(
            base_url,
            user_named,
            spec.and_then(|s| s.base_url),
            insecure_ok,
        )
        .map_err(|refusal| EngineError::KeyRefused {
            refusal,
            base_url: base_url.to_owned(),
            key_var: key_var.to_owned(),
        })?;
    }
    Ok(api_key.map(ApiKey))
}

/// Keys only where the user sent them: the registry's own host (over https), or a URL the user
/// named (`user_named`: this command line, config.toml, or a session they confirmed). Plain
/// http carries a key only to loopback and private hosts, unless `insecure_ok`.
pub(crate) fn may_receive_key(
    base_url: &str,
    user_named: bool,
    registry_url: Option<&str>,
    insecure_ok: bool,
) -> Result<(), KeyRefusal> {
    let host = TargetHost::from_base_url(base_url);
    let registry_host = registry_url.and_then(TargetHost::from_base_url);
    let registry = is_https(base_url) && host.is_some() && host == registry_host;
    if !user_named && !registry {
        return Err(KeyRefusal::NotNamed);
    }
    let local = host.as_ref().is_some_and(TargetHost::is_local_endpoint);
    if !is_https(base_url) && !local && !insecure_ok {
        return Err(KeyRefusal::PlainHttp);
    }
    Ok(())
}

/// True for an `https://` URL (a URL without a scheme is read as https, as routing does).
fn is_https(base_url: &str) -> bool {
    let url = base_url.trim().to_ascii_lowercase();
    url.starts_with("https://") || !url.contains("://")
}

#[cfg(test)]
mod tests;
