//! Claude's thinking as both Claude wires keep and replay it.
//!
//! One piece of code for the Anthropic Messages wire (this crate) and the Bedrock
//! Converse wire (`hermes-wire-bedrock`), which is the same storage with another envelope. A Bedrock
//! turn is stored exactly as a Messages turn is, so that it replays on either wire: the same
//! Anthropic-shaped `reasoning_details` items, readable `reasoning_content` and block order
//! (`carriers`: reply blocks in, one canonical assistant message out), and the same rules for
//! when signed blocks go back and how a refused signature is answered (`replay`). Each wire
//! keeps its envelope: event grammar, body shape and the names of its fields.

pub mod carriers;
pub mod replay;
