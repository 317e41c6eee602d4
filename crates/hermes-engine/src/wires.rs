//! The one list of built-in wires, where the cargo features choose them (issue 51: each wire a
//! crate of its own, which hermes-providers cannot name): chat completions (`hermes-wire-chat`,
//! always built), then (each behind the engine's feature of its name) Anthropic Messages, Bedrock Converse, OpenAI
//! Responses and Gemini generateContent ([`BUILTIN`], registered by [`register_builtin_wires`]),
//! the built-in providers they serve ([`PROVIDERS`], [`provider`]) and the feature a left-out
//! one needs ([`feature_left_out`]).

use std::sync::Arc;

use hermes_core::Message;
use hermes_providers::wires::{Descriptor, ProviderSpec, Wires};

/// The built-in wires of this build, in registration order (the order `hermes providers` lists
/// their providers): chat completions always, each native one behind its feature.
pub const BUILTIN: &[Descriptor] = &[
    hermes_wire_chat::DESCRIPTOR,
    #[cfg(feature = "anthropic")]
    hermes_wire_anthropic::DESCRIPTOR,
    #[cfg(feature = "bedrock")]
    hermes_wire_bedrock::DESCRIPTOR,
    #[cfg(feature = "responses")]
    hermes_wire_responses::DESCRIPTOR,
    #[cfg(feature = "gemini")]
    hermes_wire_gemini::DESCRIPTOR,
];

/// Registers every built-in wire this build has ([`BUILTIN`]), in order.
pub fn register_builtin_wires(wires: &mut Wires) {
    for wire in BUILTIN {
        wires.register(Arc::new(*wire));
    }
}

/// The built-in wires this build has ([`register_builtin_wires`] on an empty list).
pub fn builtin_wires() -> Wires {
    let mut wires = Wires::default();
    register_builtin_wires(&mut wires);
    wires
}

/// Where a gateway client's own thinking blocks may go (docs/spec.md §10): the rule of the
/// wire `wire` in `wires` ([`WireDescriptor::client_blocks`](hermes_providers::WireDescriptor):
/// the Anthropic wire's lets them through only to Claude, a gateway-signed one to no one; every
/// other wire's leaves each one out), applied to `history` for a target at `base_url`. A wire
/// `wires` does not hold gets none of them. Returns how many items were left out.
pub fn client_blocks_to(
    wires: &Wires,
    history: &mut [Message],
    wire: &str,
    base_url: &str,
) -> usize {
    match wires.get(wire) {
        Some(descriptor) => descriptor.client_blocks(history, base_url),
        None => hermes_providers::native::client_blocks::withhold_all(history, wire),
    }
}

/// Every built-in provider, with the cargo feature of its wire (chat completions' providers are
/// always built and not listed). `bedrock-anthropic` is the Anthropic wire's InvokeModel door,
/// which needs the AWS crates: the `bedrock` feature's.
const FEATURE_OF: &[(&str, &str)] = &[
    ("anthropic", "anthropic"),
    ("vertex-anthropic", "anthropic"),
    ("foundry-anthropic", "anthropic"),
    ("bedrock-anthropic", "bedrock"),
    ("bedrock", "bedrock"),
    ("gemini", "gemini"),
    ("vertex-gemini", "gemini"),
    ("openai-responses", "responses"),
];

/// The cargo feature a built-in provider needs when this build leaves its wire out: `Some` for
/// `bedrock` in a build without the `bedrock` feature, `None` for a provider this build has or
/// one that is not built in. `id` is trimmed and read case-insensitively.
pub fn feature_left_out(id: &str) -> Option<&'static str> {
    let id = id.trim().to_lowercase();
    let (_, feature) = FEATURE_OF.iter().find(|(p, _)| *p == id)?;
    (!builtin_providers().any(|(p, _)| p.id == id)).then_some(*feature)
}

/// Every built-in provider of this build, with its wire's id, in registration order.
fn builtin_providers() -> impl Iterator<Item = (&'static ProviderSpec, &'static str)> {
    BUILTIN
        .iter()
        .flat_map(|w| w.providers.iter().map(move |p| (p, w.id)))
}

/// Every built-in provider of this build (of the wires its features include), in the order
/// `hermes providers` lists them.
pub static PROVIDERS: std::sync::LazyLock<Vec<ProviderSpec>> =
    std::sync::LazyLock::new(|| builtin_providers().map(|(p, _)| *p).collect());

/// The built-in registry entry for `id` (trimmed, case-insensitive). A front end with wires
/// of its own asks its `Wires` list instead ([`Wires::provider`]).
pub fn provider(id: &str) -> Option<&'static ProviderSpec> {
    let id = id.trim().to_lowercase();
    builtin_providers().map(|(p, _)| p).find(|p| p.id == id)
}

#[cfg(test)]
mod tests {
    use hermes_providers::wires::{Descriptor, ProviderSpec, Wires};
    use hermes_wire_chat::DESCRIPTOR as CHAT;

    use super::{FEATURE_OF, builtin_wires, feature_left_out};

    #[test]
    fn every_native_provider_names_its_feature_and_only_a_left_out_one_needs_it() {
        let native: Vec<&str> = super::builtin_providers()
            .filter(|(_, wire)| *wire != hermes_core::CHAT_WIRE)
            .map(|(p, _)| p.id)
            .collect();
        for id in &native {
            assert!(
                FEATURE_OF.iter().any(|(p, _)| p == id),
                "{id} has no feature"
            );
            assert_eq!(feature_left_out(id), None, "{id} is built");
        }
        let left_out: Vec<&str> = FEATURE_OF
            .iter()
            .filter(|(p, _)| !native.contains(p))
            .map(|(p, _)| *p)
            .collect();
        for id in left_out {
            assert!(feature_left_out(&id.to_uppercase()).is_some(), "{id}");
        }
        assert_eq!(feature_left_out("deepseek"), None);
        assert_eq!(feature_left_out("nope"), None);
    }

    /// A made-up wire serving `mine` and taking over the built-in `deepseek`.
    const MINE: Descriptor = Descriptor {
        id: "mine",
        providers: &[
            ProviderSpec {
                id: "mine",
                base_url: Some("https://mine.test"),
                key_var: Some("MINE_KEY"),
                access: hermes_providers::Access::Key,
            },
            ProviderSpec {
                id: "deepseek",
                base_url: Some("https://deepseek.mine.test"),
                key_var: None,
                access: hermes_providers::Access::Key,
            },
        ],
        ..CHAT
    };

    #[test]
    fn a_provider_belongs_to_the_last_wire_that_lists_it_and_is_listed_once() {
        let mut wires = builtin_wires();
        let ids = |wires: &Wires| -> Vec<(&str, &str)> {
            let providers = wires.providers();
            providers.iter().map(|(p, w)| (p.id, w.id())).collect()
        };
        let before = ids(&wires);
        assert!(before.contains(&("deepseek", "chat")));
        assert!(before.contains(&("bedrock", "bedrock")));
        assert!(before.contains(&("openai-responses", "openai-responses")));
        assert!(before.contains(&("vertex-gemini", "gemini")));
        let mut unique = before.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), before.len(), "each id once: {before:?}");

        wires.register(std::sync::Arc::new(MINE));
        let after = ids(&wires);
        assert_eq!(after.len(), before.len() + 1, "{after:?}");
        assert!(after.contains(&("deepseek", "mine")), "{after:?}");
        assert!(!after.contains(&("deepseek", "chat")), "{after:?}");
        assert!(
            after.ends_with(&[("mine", "mine"), ("deepseek", "mine")]),
            "{after:?}"
        );
        let (spec, wire) = wires.provider(" DeepSeek ").unwrap();
        assert_eq!(
            (spec.base_url, wire.id()),
            (Some("https://deepseek.mine.test"), "mine")
        );
        assert_eq!(
            wires.get("mine").map(|w| w.name()),
            Some("OpenAI-compatible chat completions")
        );
    }

    /// A client's own signed block on a turn the store did not make (no origin).
    fn client_history() -> Vec<hermes_core::Message> {
        let text = r#"[{"role":"user","content":"hi"},
            {"role":"assistant","content":"ok","reasoning_details":[
              {"type":"thinking","thinking":"t","signature":"c2ln"}]},
            {"role":"user","content":"more"}]"#;
        hermes_core::parse_history(text).unwrap().messages
    }

    /// The wire's own rule decides where a client's blocks go: the engine asks the settled
    /// wire's descriptor (a third party's included) and names none itself.
    #[test]
    fn a_clients_own_blocks_follow_the_settled_wires_rule() {
        const KEEPS: Descriptor = Descriptor {
            id: "keeps",
            client_blocks: Some(|_, _| 0),
            ..MINE
        };
        let mut wires = builtin_wires();
        wires.register(std::sync::Arc::new(KEEPS));
        let kept = |wire: &str, base_url: &str| {
            let mut history = client_history();
            let left_out = super::client_blocks_to(&wires, &mut history, wire, base_url);
            (left_out, history[1].reasoning_details.is_some())
        };
        assert_eq!(kept("keeps", "https://mine.test"), (0, true));
        assert_eq!(kept("chat", "https://api.deepseek.com/v1"), (1, false));
        assert_eq!(kept("unknown", "https://mine.test"), (1, false));
        #[cfg(feature = "anthropic")]
        {
            assert_eq!(kept("anthropic", "https://api.anthropic.com"), (0, true));
            assert_eq!(
                kept("anthropic", "https://relay.test/anthropic"),
                (1, false)
            );
        }
    }
}
