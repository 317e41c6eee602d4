//! Tests for wire shaping.
