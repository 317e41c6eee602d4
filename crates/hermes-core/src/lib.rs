//! hermes-core: the canonical history, the `ReasoningRoute` trait, route tables and wire shaping.
//!
//! Nothing here does IO: no HTTP, no SQL, no files. Providers, the store and the CLI build on
//! these types; see `ARCHITECTURE.md`.
//!
//! What other crates and third parties use is public and documented: the modules below that are
//! `pub`, and the items re-exported here from the private ones (`estimate`, `normal`,
//! `passthrough`, `session`, `tally`, `target`, `verdict`, `wire`), each at one path
//! (`telemetry` is private too: the driver's spans' settings are `driver::Telemetry`). Everything
//! else is crate-private (the workspace lint `unreachable_pub` keeps it so).

/// Builder setters, for the builders of this workspace's crates: each line
/// `$(#[doc])* name: Type;` inside an `impl` block is `pub fn name(mut self, name: Type) -> Self`,
/// which replaces the field `name` and keeps the doc written before it. After a leading
/// `Some:`, each setter sets an optional field to `Some(name)` instead.
#[macro_export]
macro_rules! setters {
    (Some: $($(#[$meta:meta])* $field:ident: $ty:ty;)*) => {
        $(
            $(#[$meta])*
            pub fn $field(mut self, $field: $ty) -> Self {
                self.$field = Some($field);
                self
            }
        )*
    };
    ($($(#[$meta:meta])* $field:ident: $ty:ty;)*) => {
        $(
            $(#[$meta])*
            pub fn $field(mut self, $field: $ty) -> Self {
                self.$field = $field;
                self
            }
        )*
    };
}

pub mod checkpoint;
pub mod client;
pub mod driver;
mod estimate;
pub mod left_out;
pub mod message;
mod normal;
pub mod offload;
pub mod pairing;
mod passthrough;
pub mod raw;
pub mod reattach;
pub mod refusal;
pub mod route;
pub mod sampling;
mod session;
mod tally;
mod target;
mod telemetry;
pub mod transport;
mod verdict;
mod wire;

pub use estimate::{estimate_history, estimate_message, estimate_messages, estimate_text, is_wide};
pub use message::{DetailItem, FunctionCall, Message, NativeRecord, Origin, Role, ToolCall};
pub use normal::{CHAIN_START, chain_keys, chain_keys_matched, match_key, sha256_hex};
pub use passthrough::{Dialect, Passthrough};
pub use raw::{RawJson, TextCarrier};
pub use route::{
    Carrier, CarrierSet, DataRoute, EchoRule, Effort, EffortVocabulary, MatchReason,
    MustEchoFamily, NativeFields, PAD, PadRule, ReasoningRoute, ResolveOptions, RouteDecision,
    RouteMatcher, RouteTable, ThinkingFields, ThinkingRequest,
};
pub use sampling::{ResponseFormat, Sampling, ToolChoice};
pub use session::{HistoryError, SESSION_FORMAT, SessionFile, parse_history};
pub use tally::CarrierCounts;
pub use target::{RouteTarget, TargetHost};
pub use transport::{
    Delta, FinishReason, OnDelta, Reply, ReplyMeta, SendResult, TransportError, Usage, Wait,
};
pub use verdict::{VERDICTS_KEY, Verdict, Verdicts, WIRE_VERDICTS_KEY, WireVerdict, WireVerdicts};
pub use wire::{CHAT_WIRE, NativeCompaction, Outgoing, Recovery, RequestParts, Wire};
