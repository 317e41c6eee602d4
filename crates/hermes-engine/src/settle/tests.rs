//! Settlement: one answer for chat and preview, keys only where the user sent them.

use super::*;
use crate::Engine;

/// hermes-sim's profiles, as the `hermes` command line gives them to the engine.
fn sims() -> Vec<SimProfile> {
    hermes_sim::PROFILES
        .iter()
        .map(|p| SimProfile::new(p.name, p.provider, p.model, p.about))
        .collect()
}

/// [`super::settle`] on the built-in wires with hermes-sim's profiles, as the `hermes` command
/// line settles.
fn settle(
    choice: &Choice,
    stored: Option<Stored<'_>>,
    defaults: &Defaults,
    purpose: Purpose,
    key: &dyn Fn(&str) -> Option<String>,
) -> Result<Settled, EngineError> {
    super::settle(
        &crate::builtin_wires(),
        &sims(),
        choice,
        stored,
        defaults,
        purpose,
        key,
    )
}

const OPENAI: Option<&str> = Some("https://api.openai.com/v1");

/// A case of [`may_receive_key`]: `(url, named, registry, opt_in)` and what it answers.
type KeyCase<'a> = (&'a str, bool, Option<&'a str>, bool, Result<(), KeyRefusal>);

/// Each case's `may_receive_key(url, named, registry, opt_in)` is `expected`.
fn key_cases(cases: &[KeyCase<'_>]) {
    for (url, named, registry, opt_in, expected) in cases {
        assert_eq!(
            may_receive_key(url, *named, *registry, *opt_in),
            *expected,
            "{url} (named {named}, opt-in {opt_in})"
        );
    }
}

#[test]
fn a_key_goes_only_where_the_user_sent_it() {
    let not_named = Err(KeyRefusal::NotNamed);
    key_cases(&[
        ("https://api.openai.com/v1", false, OPENAI, false, Ok(())),
        (
            "https://API.openai.com:443/v1/",
            false,
            OPENAI,
            false,
            Ok(()),
        ),
        ("https://evil.test/v1", false, OPENAI, false, not_named),
        // The registry host over plain http is not the registry's URL.
        ("http://api.openai.com/v1", false, OPENAI, false, not_named),
        ("http://127.0.0.1:8080/v1", false, None, false, not_named),
        ("https://gw.test/v1", true, OPENAI, false, Ok(())),
    ]);
}

#[test]
fn plain_http_carries_a_key_only_to_local_hosts_or_with_the_opt_in() {
    key_cases(&[
        ("http://127.0.0.1:1234/v1", true, None, false, Ok(())),
        ("http://localhost/v1", true, None, false, Ok(())),
        ("http://10.1.2.3/v1", true, None, false, Ok(())),
        ("http://[::1]:8/v1", true, None, false, Ok(())),
        (
            "http://203.0.113.7/v1",
            true,
            None,
            false,
            Err(KeyRefusal::PlainHttp),
        ),
        ("http://gw.example/v1", true, None, true, Ok(())),
    ]);
    let text = KeyRefusal::PlainHttp.message("http://gw.example/v1", "OPENAI_API_KEY");
    // The engine names no flag: which one works depends on the front end's command.
    assert!(text.contains("allow_insecure_http = true"), "{text}");
    assert!(!text.contains("--"), "{text}");
}

/// What two settlements must agree on.
fn agreed(engine: &Engine, s: &Settled) -> (String, String, Option<String>, String, &'static str) {
    (
        s.provider.clone(),
        s.model.clone(),
        s.base_url.clone(),
        engine.resolve(s).id().to_owned(),
        s.wire,
    )
}

#[test]
fn chat_and_preview_settle_every_registry_provider_alike() {
    let engine = Engine::builtin();
    let mut providers: Vec<&str> = crate::wires::PROVIDERS.iter().map(|p| p.id).collect();
    providers.push("sim");
    let key = |_: &str| Some("sk-test".to_owned());
    for provider in providers {
        for base in [None, Some("http://127.0.0.1:9/v1")] {
            let choice = Choice::new(Some(provider), Some("some-model"), base);
            let chat = settle(&choice, None, &Defaults::default(), Purpose::Send, &key);
            let preview = settle(
                &choice,
                None,
                &Defaults::default(),
                Purpose::Preview,
                &|_| panic!("a preview never looks up a key"),
            );
            match (chat, preview) {
                (Ok(chat), Ok(preview)) => {
                    assert_eq!(
                        agreed(&engine, &chat),
                        agreed(&engine, &preview),
                        "{provider}"
                    );
                    assert!(preview.api_key.is_none());
                }
                (Err(chat), Err(preview)) => {
                    assert_eq!(chat.to_string(), preview.to_string(), "{provider}");
                    if provider == "sim" {
                        // A simulator is picked by sim://PROFILE, never by an http URL.
                        assert!(chat.is_usage(), "{chat}");
                        assert!(chat.to_string().contains("sim://PROFILE"), "{chat}");
                        continue;
                    }
                    // A wire not built yet, or an address only the user can give (a base URL,
                    // Vertex's project: preview names them as chat does, no placeholder).
                    assert!(
                        matches!(chat, EngineError::Unsupported(_))
                            || matches!(
                                chat,
                                EngineError::Missing {
                                    setting: crate::Setting::BaseUrl
                                        | crate::Setting::ResourceUrl { .. },
                                    ..
                                }
                            )
                            || (chat.is_usage() && chat.to_string().contains("under [vertex]")),
                        "{provider}: {chat}"
                    );
                    assert!(chat.to_string().contains(provider), "{chat}");
                }
                (chat, preview) => {
                    // Only what the request's address needs may differ (a missing base URL,
                    // the AWS region): preview needs no network.
                    let chat = chat.err().map(|e| e.to_string()).unwrap_or_default();
                    let address = (base.is_none() && chat.contains("no base URL"))
                        || (base.is_none() && chat.contains("needs an AWS region"));
                    assert!(
                        address && preview.is_ok(),
                        "{provider}: chat {chat:?}, preview {preview:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn sim_without_a_url_routes_as_its_default_profile_everywhere() {
    let engine = Engine::builtin();
    let choice = Choice::new(Some("sim"), None, None);
    for purpose in [Purpose::Send, Purpose::Preview] {
        let s = settle(&choice, None, &Defaults::default(), purpose, &|_| None).unwrap();
        assert_eq!(s.base_url.as_deref(), Some("sim://deepseek-v4"));
        assert_eq!(s.model, "deepseek-v4-pro");
        assert_eq!(engine.resolve(&s).id(), "deepseek");
    }
}

#[test]
fn without_simulators_provider_sim_is_a_usage_error_saying_the_build_has_none() {
    let bare = Engine::builtin();
    assert!(!bare.provider_names().contains(&"sim".to_owned()));
    for base in [None, Some("sim://deepseek-v4")] {
        let choice = Choice::new(Some("sim"), None, base);
        // Not an unknown provider with a guess: settlement says what is missing.
        bare.check_provider(&choice, None, &Defaults::default())
            .unwrap();
        for purpose in [Purpose::Send, Purpose::Preview] {
            let defaults = Defaults::default();
            let err = super::settle(
                &crate::builtin_wires(),
                bare.sim_profiles(),
                &choice,
                None,
                &defaults,
                purpose,
                &|_| None,
            )
            .unwrap_err();
            assert!(err.is_usage(), "{err}");
            assert_eq!(err.to_string(), NO_SIMULATOR);
        }
    }
    let named = Engine::builtin().with_simulators(std::sync::Arc::new(Offered(sims())));
    assert!(named.provider_names().contains(&"sim".to_owned()));
    assert_eq!(named.sim_profiles(), sims().as_slice());
    // A third party's route first keeps the simulators.
    let table = hermes_providers::builtin_table();
    let first = table.routes().next().unwrap().clone();
    assert_eq!(
        named.with_route_first(first).sim_profiles().len(),
        sims().len()
    );
}

/// Simulators that offer `0` and start none.
struct Offered(Vec<SimProfile>);

#[async_trait::async_trait]
impl crate::Simulators for Offered {
    fn profiles(&self) -> &[SimProfile] {
        &self.0
    }

    async fn start(&self, profile: &str) -> Result<crate::StartedSim, String> {
        Err(format!("{profile} is not started in unit tests"))
    }
}

#[test]
fn flags_then_stored_session_then_config_then_registry() {
    let mut defaults = Defaults {
        provider: Some("openrouter".into()),
        model: Some("cfg/model".into()),
        ..Defaults::default()
    };
    defaults.providers.insert(
        "openrouter".into(),
        ProviderDefaults::new(Some("https://gw.example/api/v1".into()), None, None, false),
    );
    let none = |_: &str| None;
    let s = settle(&Choice::default(), None, &defaults, Purpose::Preview, &none).unwrap();
    assert_eq!(
        (s.provider.as_str(), s.model.as_str(), s.base_url.as_deref()),
        ("openrouter", "cfg/model", Some("https://gw.example/api/v1"))
    );
    let stored = Stored {
        provider: Some("openrouter"),
        model: Some("stored/model"),
        base_url: Some("https://stored.example/v1"),
        base_url_confirmed: true,
    };
    let s = settle(
        &Choice::default(),
        Some(stored),
        &defaults,
        Purpose::Preview,
        &none,
    )
    .unwrap();
    assert_eq!(
        (s.model.as_str(), s.base_url.as_deref()),
        ("stored/model", Some("https://stored.example/v1"))
    );
    let choice = Choice::new(None, Some("flag/model"), Some("https://flag.example/v1"));
    let s = settle(&choice, Some(stored), &defaults, Purpose::Preview, &none).unwrap();
    assert_eq!(
        (s.model.as_str(), s.base_url.as_deref()),
        ("flag/model", Some("https://flag.example/v1"))
    );
    // Another provider than the stored one: the stored model and URL do not count.
    let choice = Choice::new(Some("deepseek"), Some("deepseek-v4-pro"), None);
    let s = settle(&choice, Some(stored), &defaults, Purpose::Preview, &none).unwrap();
    assert_eq!(s.base_url.as_deref(), Some("https://api.deepseek.com/v1"));
}

#[test]
fn an_invalid_base_url_is_a_usage_error_naming_it() {
    let none = |_: &str| None;
    for (provider, url, why) in [
        (
            "custom",
            "http://exa mple/v1",
            "invalid international domain name",
        ),
        ("custom", "ftp://gw.example/v1", "scheme `ftp`"),
        ("custom", "https://:443/v1", "empty host"),
        ("custom", "localhost:8080/v1", "scheme `localhost`"),
        ("custom", "   ", "empty"),
        ("custom", "sim://deepseek-v4", "--provider sim"),
        ("sim", "sim://", "names no simulator profile"),
        (
            "sim",
            "http://exa mple/v1",
            "invalid international domain name",
        ),
    ] {
        let choice = Choice::new(Some(provider), Some("m"), Some(url));
        for purpose in [Purpose::Send, Purpose::Preview] {
            let err = settle(&choice, None, &Defaults::default(), purpose, &none).unwrap_err();
            assert!(err.is_usage(), "{url}: {err}");
            let text = err.to_string();
            assert!(text.contains(url) && text.contains(why), "{url}: {text}");
        }
    }
    // A URL without a scheme is read as https, as routing does.
    for url in [
        "gw.example/v1",
        "HTTPS://GW.example:8443/v1/",
        "http://[::1]:8/v1",
    ] {
        let choice = Choice::new(Some("custom"), Some("m"), Some(url));
        let s = settle(&choice, None, &Defaults::default(), Purpose::Preview, &none).unwrap();
        assert_eq!(s.base_url.as_deref(), Some(url));
    }
    // Nothing between `//` and the path: no host, whatever WHATWG parsing makes of it.
    let choice = Choice::new(Some("custom"), Some("m"), Some("http:///v1"));
    let err = settle(&choice, None, &Defaults::default(), Purpose::Send, &none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid base URL `http:///v1`: it has no host"
    );
    // A stored or configured URL is checked too.
    let mut defaults = Defaults::default();
    defaults.providers.insert(
        "custom".into(),
        ProviderDefaults::new(Some("http://a b/v1".into()), None, None, false),
    );
    let choice = Choice::new(Some("custom"), Some("m"), None);
    let err = settle(&choice, None, &defaults, Purpose::Preview, &none).unwrap_err();
    assert!(err.is_usage(), "{err}");
}

#[test]
fn bedrock_goes_to_the_regional_host_and_needs_a_region_but_no_key_variable() {
    let choice = Choice::new(
        Some("bedrock"),
        Some("anthropic.claude-opus-4-6-v1:0"),
        None,
    );
    let mut defaults = Defaults::default();
    let no_region = settle(&choice, None, &defaults, Purpose::Send, &|_| None).unwrap_err();
    assert!(no_region.is_usage(), "{no_region}");
    assert!(no_region.to_string().contains("AWS_REGION"), "{no_region}");

    defaults.aws_region = Some("eu-west-3".into());
    for provider in ["bedrock", "bedrock-anthropic"] {
        let choice = Choice::new(Some(provider), Some("anthropic.claude-opus-4-6-v1:0"), None);
        let s = settle(&choice, None, &defaults, Purpose::Send, &|var| {
            panic!("AWS credentials never come from a key variable ({var})")
        })
        .unwrap();
        assert_eq!(
            s.base_url.as_deref(),
            Some("https://bedrock-runtime.eu-west-3.amazonaws.com")
        );
        assert_eq!(s.aws_region.as_deref(), Some("eu-west-3"));
        assert_eq!(s.key_var, None);
        assert!(s.api_key.is_none());
    }
}

#[test]
fn a_bedrock_runtime_base_url_names_the_signing_region() {
    // The configured region is another one: SigV4 must still be scoped to the host's.
    let defaults = Defaults {
        aws_region: Some("eu-west-3".into()),
        ..Defaults::default()
    };
    for (url, region) in [
        (
            "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
            "us-gov-west-1",
        ),
        (
            "https://bedrock-runtime-fips.us-east-1.amazonaws.com",
            "us-east-1",
        ),
        (
            "https://bedrock-runtime.us-gov-east-1.api.aws",
            "us-gov-east-1",
        ),
        (
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn",
            "cn-north-1",
        ),
        (
            "https://bedrock-runtime-fips.us-west-2.api.aws",
            "us-west-2",
        ),
        // Not a runtime host: the configured region.
        (
            "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com.evil.test",
            "eu-west-3",
        ),
        ("http://127.0.0.1:9", "eu-west-3"),
    ] {
        for provider in ["bedrock", "bedrock-anthropic"] {
            let choice = Choice::new(Some(provider), Some("m"), Some(url));
            for purpose in [Purpose::Send, Purpose::Preview] {
                let s = settle(&choice, None, &defaults, purpose, &|_| None).unwrap();
                assert_eq!(s.aws_region.as_deref(), Some(region), "{provider} {url}");
                assert_eq!(s.base_url.as_deref(), Some(url));
            }
        }
    }
    // No region configured at all: the host's is enough to send.
    let choice = Choice::new(
        Some("bedrock"),
        Some("m"),
        Some("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com"),
    );
    let s = settle(&choice, None, &Defaults::default(), Purpose::Send, &|_| {
        None
    })
    .unwrap();
    assert_eq!(s.aws_region.as_deref(), Some("us-gov-west-1"));
}

#[test]
fn foundry_takes_an_entra_id_token_when_its_key_is_not_set() {
    let choice = Choice::new(
        Some("foundry-anthropic"),
        Some("claude-opus-4-6"),
        Some("https://res.services.ai.azure.com/anthropic"),
    );
    let defaults = Defaults::default();
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |var: &str| {
            vars.iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let token = env(&[("ANTHROPIC_FOUNDRY_AUTH_TOKEN", "entra-token")]);
    let s = settle(&choice, None, &defaults, Purpose::Send, &token).unwrap();
    assert!(s.bearer);
    assert_eq!(s.key_var.as_deref(), Some("ANTHROPIC_FOUNDRY_AUTH_TOKEN"));
    assert_eq!(s.api_key.as_ref().map(ApiKey::expose), Some("entra-token"));
    assert!(!format!("{s:?}").contains("entra-token"));
    // The key wins when both are set; a blank key counts as unset.
    let both = env(&[
        ("ANTHROPIC_FOUNDRY_AUTH_TOKEN", "entra-token"),
        ("ANTHROPIC_FOUNDRY_API_KEY", "resource-key"),
    ]);
    let s = settle(&choice, None, &defaults, Purpose::Send, &both).unwrap();
    assert!(!s.bearer);
    assert_eq!(s.api_key.as_ref().map(ApiKey::expose), Some("resource-key"));
    let blank = env(&[
        ("ANTHROPIC_FOUNDRY_AUTH_TOKEN", "entra-token"),
        ("ANTHROPIC_FOUNDRY_API_KEY", " "),
    ]);
    assert!(
        settle(&choice, None, &defaults, Purpose::Send, &blank)
            .unwrap()
            .bearer
    );
    // Neither: the error names both.
    let err = settle(&choice, None, &defaults, Purpose::Send, &|_| None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "missing API key for `foundry-anthropic`: set ANTHROPIC_FOUNDRY_API_KEY (or ANTHROPIC_FOUNDRY_AUTH_TOKEN, a Microsoft Entra ID token)"
    );
    // Another provider never reads the Foundry token.
    let other = Choice::new(Some("anthropic"), Some("claude-opus-4-6"), None);
    let s = settle(&other, None, &defaults, Purpose::Send, &|var: &str| {
        (var == "ANTHROPIC_API_KEY").then(|| "sk-ant".to_owned())
    })
    .unwrap();
    assert!(!s.bearer);
}

#[test]
fn aws_credentials_go_only_where_the_user_sent_them() {
    let defaults = Defaults {
        aws_region: Some("us-east-1".into()),
        ..Defaults::default()
    };
    // A stored session's plain-http URL the user never named: refused for credentials too.
    let stored = Stored {
        provider: Some("bedrock"),
        model: Some("m"),
        base_url: Some("http://203.0.113.9:8080"),
        base_url_confirmed: false,
    };
    let choice = Choice::new(Some("bedrock"), None, None);
    let err = settle(&choice, Some(stored), &defaults, Purpose::Send, &|_| None).unwrap_err();
    assert!(err.to_string().contains("AWS credentials"), "{err}");
    // Named on the command line, a loopback endpoint is fine.
    let choice = Choice::new(Some("bedrock"), Some("m"), Some("http://127.0.0.1:9"));
    assert!(settle(&choice, None, &defaults, Purpose::Send, &|_| None).is_ok());
}

#[test]
fn thinking_settles_flags_then_the_stored_session_then_config() {
    use hermes_core::{Effort, ThinkingRequest as T};
    use hermes_store::StoredThinking as S;

    let high = Some(S::Effort(Effort::High));
    let low = Some(Effort::Low);
    // Flags win over everything.
    assert_eq!(settle_thinking(T::Off, high, low), T::Off);
    assert_eq!(
        settle_thinking(T::Effort(Effort::Max), Some(S::Off), low),
        T::Effort(Effort::Max)
    );
    // Then what the session stores, over config.
    assert_eq!(
        settle_thinking(T::NoPreference, high, low),
        T::Effort(Effort::High)
    );
    assert_eq!(settle_thinking(T::NoPreference, Some(S::Off), low), T::Off);
    // Then config's effort, then nothing.
    assert_eq!(
        settle_thinking(T::NoPreference, None, low),
        T::Effort(Effort::Low)
    );
    assert_eq!(
        settle_thinking(T::NoPreference, None, None),
        T::NoPreference
    );
}

#[test]
fn a_base_url_without_a_host_between_its_slashes_is_refused_by_name() {
    for url in ["http:///v1", "https:///v1", "http:/v1"] {
        let err = check_base_url(url, false).unwrap_err();
        assert_eq!(err, format!("invalid base URL `{url}`: it has no host"));
    }
    assert_eq!(check_base_url("http://v1/x", false), Ok(()));
}

#[test]
fn vertex_takes_config_first_then_the_official_sdks_variables() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |var: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let settle_with = |provider: &str, vertex: VertexDefaults| {
        let defaults = Defaults {
            vertex,
            ..Defaults::default()
        };
        let choice = Choice::new(Some(provider), Some("m"), None);
        settle(&choice, None, &defaults, Purpose::Preview, &|_| None)
    };
    let env: &[(&str, &str)] = &[
        ("ANTHROPIC_VERTEX_PROJECT_ID", "anthropic-proj"),
        ("CLOUD_ML_REGION", "us-east5"),
        ("GOOGLE_CLOUD_PROJECT", "google-proj"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
    ];
    let at = |project: &str, region: &str| {
        Some(VertexLocation {
            project: project.into(),
            region: region.into(),
        })
    };
    let from_env = |provider| {
        settle_with(
            provider,
            VertexDefaults::default().with_variables(vars(env)),
        )
        .unwrap()
    };
    // Each provider reads its own SDK's variables first.
    let s = from_env("vertex-anthropic");
    assert_eq!(s.vertex, at("anthropic-proj", "us-east5"));
    assert_eq!(
        s.base_url.as_deref(),
        Some("https://us-east5-aiplatform.googleapis.com")
    );
    let s = from_env("vertex-gemini");
    assert_eq!(s.vertex, at("google-proj", "europe-west4"));
    // Config wins over every variable; a blank variable counts as unset.
    let s = settle_with(
        "vertex-anthropic",
        VertexDefaults::new(Some("cfg".into()), None).with_variables(vars(&[
            ("ANTHROPIC_VERTEX_PROJECT_ID", "anthropic-proj"),
            ("CLOUD_ML_REGION", "  "),
        ])),
    )
    .unwrap();
    assert_eq!(s.vertex, at("cfg", "global"));
    // google-auth's project variable serves Anthropic's client too.
    let s = settle_with(
        "vertex-anthropic",
        VertexDefaults::default().with_variables(vars(&[("GOOGLE_CLOUD_PROJECT", "g")])),
    )
    .unwrap();
    assert_eq!(s.vertex.unwrap().project, "g");
    // No project anywhere: an error naming every place one may come from, for preview too
    // (never a `PROJECT` placeholder).
    for provider in ["vertex-anthropic", "vertex-gemini"] {
        let err = settle_with(provider, VertexDefaults::default()).unwrap_err();
        assert!(err.is_usage(), "{err}");
        let text = err.to_string();
        for named in ["[vertex]", "config.toml"]
            .iter()
            .chain(VERTEX_VARIABLES.iter())
        {
            assert!(
                text.contains(named),
                "{provider}: {named} missing in {text}"
            );
        }
        assert!(!text.contains("PROJECT\""), "{text}");
    }
}

#[test]
fn knows_provider_answers_as_the_sorted_list_does() {
    let bare = Engine::builtin();
    let named = Engine::builtin().with_simulators(std::sync::Arc::new(Offered(sims())));
    for engine in [&bare, &named] {
        let names = engine.provider_names();
        assert!(names.len() > 5, "{names:?}");
        for name in &names {
            assert!(engine.knows_provider(name), "{name}");
        }
        for unknown in ["deepseeek", "", "openai2", "Sim", "DeepSeek", " deepseek"] {
            assert_eq!(
                engine.knows_provider(unknown),
                names.iter().any(|n| n == unknown),
                "{unknown}"
            );
        }
    }
    assert!(!bare.knows_provider("sim"));
    assert!(named.knows_provider("sim"));
}

/// A third party's wire whose providers declare each [`Access`]: settlement reads the
/// declaration, never a provider's name, so a provider of one's own is settled like the
/// built-in Foundry, Bedrock and Vertex ones.
#[test]
fn settlement_follows_the_access_a_wire_declares_not_provider_names() {
    use hermes_providers::wires::Descriptor;
    use hermes_wire_chat::DESCRIPTOR as CHAT;
    const PROVIDERS: &[ProviderSpec] = &[
        ProviderSpec {
            id: "acme-resource",
            base_url: None,
            key_var: Some("ACME_KEY"),
            access: Access::Resource {
                example: "https://RESOURCE.acme.test/v1",
                token_var: "ACME_TOKEN",
                token: "an Acme session token",
            },
        },
        ProviderSpec {
            id: "acme-aws",
            base_url: None,
            key_var: None,
            access: Access::Aws,
        },
        ProviderSpec {
            id: "acme-cloud",
            base_url: None,
            key_var: Some("ACME_CLOUD_TOKEN"),
            access: Access::GoogleCloud {
                project: ["ACME_PROJECT", "GOOGLE_CLOUD_PROJECT"],
                region: ["ACME_REGION", "GOOGLE_CLOUD_LOCATION"],
            },
        },
        ProviderSpec {
            id: "acme-own",
            base_url: Some("https://own.acme.test/v1"),
            key_var: Some("ACME_OWN_KEY"),
            access: Access::OptionalKey,
        },
    ];
    const ACME: Descriptor = Descriptor {
        id: "acme",
        providers: PROVIDERS,
        ..CHAT
    };
    let mut wires = crate::builtin_wires();
    wires.register(std::sync::Arc::new(ACME));
    let settle_on = |provider: &str,
                     url: Option<&str>,
                     defaults: &Defaults,
                     purpose,
                     key: &dyn Fn(&str) -> Option<String>| {
        super::settle(
            &wires,
            &[],
            &Choice::new(Some(provider), Some("m"), url),
            None,
            defaults,
            purpose,
            key,
        )
    };
    let none = |_: &str| None;

    // A resource: its URL is required, named by the declared example; its token stands in
    // for a missing key, as a bearer token.
    let defaults = Defaults::default();
    let err = settle_on("acme-resource", None, &defaults, Purpose::Send, &none).unwrap_err();
    assert!(
        matches!(
            &err,
            EngineError::Missing {
                setting: Setting::ResourceUrl {
                    example: "https://RESOURCE.acme.test/v1"
                },
                ..
            }
        ),
        "{err:?}"
    );
    let token = |var: &str| (var == "ACME_TOKEN").then(|| "tok".to_owned());
    let url = Some("https://mine.acme.test/v1");
    let s = settle_on("acme-resource", url, &defaults, Purpose::Send, &token).unwrap();
    assert!(s.bearer);
    assert_eq!(s.key_var.as_deref(), Some("ACME_TOKEN"));
    let err = settle_on("acme-resource", url, &defaults, Purpose::Send, &none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "missing API key for `acme-resource`: set ACME_KEY (or ACME_TOKEN, an Acme session token)"
    );

    // AWS: a region is needed, the base URL is its runtime host, and no key variable is read.
    let err = settle_on("acme-aws", None, &defaults, Purpose::Send, &none).unwrap_err();
    assert!(err.to_string().contains("needs an AWS region"), "{err}");
    let west = Defaults {
        aws_region: Some("us-west-2".to_owned()),
        ..Defaults::default()
    };
    let s = settle_on("acme-aws", None, &west, Purpose::Preview, &none).unwrap();
    assert_eq!(s.aws_region.as_deref(), Some("us-west-2"));
    assert_eq!(s.key_var, None);
    assert_eq!(
        s.base_url.as_deref(),
        Some("https://bedrock-runtime.us-west-2.amazonaws.com")
    );

    // Google Cloud: the declared variables, in its order of preference.
    let err = settle_on("acme-cloud", None, &defaults, Purpose::Preview, &none).unwrap_err();
    assert!(
        err.to_string()
            .contains("ACME_PROJECT (or GOOGLE_CLOUD_PROJECT)"),
        "{err}"
    );
    let cloud = Defaults {
        vertex: VertexDefaults::default().with_variables(|var| match var {
            "GOOGLE_CLOUD_PROJECT" => Some("theirs".to_owned()),
            "GOOGLE_CLOUD_LOCATION" => Some("europe-west1".to_owned()),
            _ => None,
        }),
        ..Defaults::default()
    };
    let s = settle_on("acme-cloud", None, &cloud, Purpose::Preview, &none).unwrap();
    let vertex = s.vertex.expect("a Google Cloud location");
    assert_eq!(
        (vertex.project.as_str(), vertex.region.as_str()),
        ("theirs", "europe-west1")
    );

    // An optional key: none set is no error.
    let s = settle_on("acme-own", None, &defaults, Purpose::Send, &none).unwrap();
    assert_eq!(s.api_key, None);
}
