//! hermes-wire-chat: the OpenAI-compatible chat-completions wire of hermes, one wire as one crate
//! like its siblings (issue 51). Its door is `{base}/chat/completions` with the key as a bearer
//! token, for every chat-completions provider of docs/spec.md §8a; it is always built.
//!
//! What it holds: the route plans (`plan`: per assistant message, which carriers go out and why,
//! [`ShapeContext`], [`carrier_counts`]), the body rendered from them (`body`: [`ChatRequest`],
//! [`shape`]), the capture of whole and streamed replies (`capture`: [`capture_message`],
//! [`StreamAccumulator`]), the HTTP side ([`HttpChat`] bound to an [`Endpoint`], its streamed
//! reply read through the native-wire kit's SSE loop), and the wire's descriptor
//! ([`DESCRIPTOR`], its [`PROVIDERS`]), which the engine registers first and unconditionally.
//! It is built on hermes-core and the native-wire kit of hermes-providers
//! (`hermes_providers::native`).

mod body;
mod capture;
mod descriptor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod plan;
mod wire;

pub use body::{ChatRequest, WireMessage, shape};
pub use capture::{CaptureError, StreamAccumulator, capture_message, chat_usage};
pub use descriptor::{DESCRIPTOR, PROVIDERS};
pub use plan::{AssistantPlan, DetailsPlan, FieldPlan, RcPlan, ShapeContext, Why, carrier_counts};
pub use wire::{Endpoint, HttpChat};

#[cfg(test)]
mod tests;
