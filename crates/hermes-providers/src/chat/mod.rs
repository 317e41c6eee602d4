//! The chat-completions wire's JSON codec: the route plans ([`plan`]: per assistant message,
//! which carriers go out and why), the body rendered from them ([`body`]), and the capture of
//! whole and streamed replies ([`capture`]).

mod body;
mod capture;
mod plan;

pub use body::{ChatRequest, WireMessage, shape};
pub use capture::{CaptureError, StreamAccumulator, capture_message, chat_usage};
pub use plan::{AssistantPlan, DetailsPlan, FieldPlan, RcPlan, ShapeContext, Why, carrier_counts};

#[cfg(test)]
mod tests;
