//! The chat-completions wire's JSON codec: the body rendered from core's route plans
//! ([`body`]), and the capture of whole and streamed replies ([`capture`]).

mod body;
mod capture;

pub use body::{ChatRequest, WireMessage, shape};
pub use capture::{CaptureError, StreamAccumulator, capture_message, chat_usage};

#[cfg(test)]
mod tests;
