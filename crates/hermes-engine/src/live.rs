//! The wire a settled target speaks, built in one place for `chat` (which sends through it) and
//! `preview` (which only encodes with it), so the two shape the same body for the same target:
//! the engine's wire list ([`Engine::wires`]) names the descriptor, which builds it.

use std::sync::Arc;

use hermes_providers::ChatTransport;
use hermes_providers::wires::{Credentials, Vertex, WireDescriptor, WireTarget};

use crate::Engine;
use crate::error::EngineError;
use crate::settle::Settled;
use crate::simulators::{SIM_HOST, StartedSim};

/// The wire a target speaks, with the descriptor and target it was built from (a preview
/// explains its body through them).
pub(crate) struct LiveWire {
    /// The wire's descriptor, from the engine's list.
    pub(crate) descriptor: Arc<dyn WireDescriptor>,
    /// What it was built for.
    pub(crate) target: WireTarget,
    wire: Box<dyn hermes_core::Wire>,
}

/// Where requests to `settled` go: a started simulator's loopback URL (`started`); for a
/// simulator not started — a preview — the loopback host every simulator binds
/// ([`SIM_HOST`]), which is all routing and provenance read of it (the port is never part of a
/// route or of a minter, so each run's fresh port changes nothing); otherwise the settled base
/// URL.
pub(crate) fn live_base(settled: &Settled, started: Option<&StartedSim>) -> String {
    match (started, &settled.sim) {
        (Some(sim), _) => sim.base_url().to_owned(),
        (None, Some(_)) => format!("http://{SIM_HOST}"),
        (None, None) => settled.base_url.clone().unwrap_or_default(),
    }
}

impl LiveWire {
    /// The wire of `settled` (its descriptor from `engine`'s list), sending to `live_base`
    /// through `client` with `credentials`.
    pub(crate) fn new(
        engine: &Engine,
        settled: &Settled,
        live_base: &str,
        client: ChatTransport,
        credentials: Credentials,
    ) -> Result<LiveWire, EngineError> {
        let descriptor = engine.wires().get(settled.wire).cloned().ok_or_else(|| {
            EngineError::Unsupported(format!(
                "provider `{}` speaks the wire `{}`, which this engine does not have",
                settled.provider, settled.wire
            ))
        })?;
        let target = WireTarget {
            max_tokens: settled.max_tokens,
            vertex: settled.vertex.as_ref().map(|v| Vertex {
                project: v.project.clone(),
                region: v.region.clone(),
            }),
            bearer: settled.bearer,
            ..WireTarget::new(&settled.provider, &settled.model, live_base)
        };
        let wire = descriptor.build(&target, client, credentials);
        Ok(LiveWire {
            descriptor,
            target,
            wire,
        })
    }

    /// The wire as the driver sees it.
    pub(crate) fn wire(&self) -> &dyn hermes_core::Wire {
        self.wire.as_ref()
    }
}
