//! Driver tests.
