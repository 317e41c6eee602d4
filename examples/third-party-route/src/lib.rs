//! `acme-route`: how a third party adds a provider to hermes — a route for a provider that
//! speaks chat completions ([`AcmeRoute`]), and a wire of its own for one that does not
//! ([`wire`]: "Acme JSON", provider `acme-json`).
//!
//! "Acme Thinking Cloud" (made up) speaks chat completions at `api.acme-thinking.test`. It reads
//! `reasoning_content` and `reasoning_details`, refuses a tool-call turn that lacks
//! `reasoning_content` (so it is must-echo on tool-call turns only), only uses the newest turn's
//! readable thinking, and keeps thinking across turns when asked with `retain_reasoning: true`.
//! Its effort words are `light` and `deep`.
//!
//! Register it ahead of the built-ins so its name wins:
//! ```
//! let mut table = hermes_core::RouteTable::new(std::sync::Arc::new(
//!     hermes_core::DataRoute::new("default", hermes_core::CarrierSet::RC)
//!         .matching(hermes_core::RouteMatcher::new().any()),
//! ));
//! table.register_first(std::sync::Arc::new(acme_route::AcmeRoute::new()));
//! let target = hermes_core::RouteTarget::new("acme", None, "acme-think-2");
//! assert_eq!(table.resolve(&target, Default::default()).id(), "acme");
//! ```

use hermes_core::{
    Carrier, CarrierSet, EchoRule, EffortVocabulary, PadRule, ReasoningRoute, RouteMatcher,
    RouteTarget, ThinkingFields, ThinkingRequest,
};
use serde_json::json;

#[cfg(feature = "test-server")]
pub mod server;
pub mod wire;
pub use wire::{ACME_JSON, AcmeJsonWire};

/// The route id.
pub const ROUTE_ID: &str = "acme";

/// Acme's effort words: `light` for minimal to medium, `deep` above.
const EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["light", "light", "light", "deep", "deep", "deep"],
};

/// The Acme Thinking Cloud route.
#[derive(Debug)]
pub struct AcmeRoute {
    matcher: RouteMatcher,
}

impl AcmeRoute {
    /// The route, matching the `acme` provider name and `acme-thinking.test` hosts.
    pub fn new() -> Self {
        AcmeRoute {
            matcher: RouteMatcher::new()
                .providers(["acme"])
                .hosts(["acme-thinking.test"]),
        }
    }
}

impl Default for AcmeRoute {
    fn default() -> Self {
        AcmeRoute::new()
    }
}

impl ReasoningRoute for AcmeRoute {
    fn id(&self) -> &str {
        ROUTE_ID
    }

    fn matcher(&self) -> &RouteMatcher {
        &self.matcher
    }

    fn carriers(&self) -> CarrierSet {
        CarrierSet::of([Carrier::ReasoningContent, Carrier::ReasoningDetails])
    }

    fn must_echo(&self) -> Option<EchoRule> {
        Some(EchoRule {
            family: "acme".to_owned(),
            pad: PadRule::ToolCallTurns,
        })
    }

    fn replays_stale_thinking(&self) -> bool {
        false
    }

    fn efforts(&self) -> EffortVocabulary {
        EFFORTS
    }

    fn keep_thinking_flags(&self) -> &'static [&'static str] {
        &["retain_reasoning=true"]
    }

    fn thinking_fields(&self, _target: &RouteTarget, request: ThinkingRequest) -> ThinkingFields {
        match request {
            ThinkingRequest::NoPreference => vec![("retain_reasoning", json!(true))],
            ThinkingRequest::Effort(e) => vec![
                ("retain_reasoning", json!(true)),
                ("reasoning_mode", json!(self.efforts().word(e))),
            ],
            ThinkingRequest::Off => vec![("reasoning_mode", json!("off"))],
        }
    }
}
