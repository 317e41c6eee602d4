//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the Python original's
//! row reader. Not an API: only `hermes-fuzz` turns the feature on.

use hermes_core::Message;

/// The message the importer reads from a `messages` row with `role` and the text `columns`
/// given as `(name, text)` (a column not given is NULL).
pub fn original_message(role: &str, columns: &[(&str, &str)]) -> Result<Message, String> {
    crate::original::message_of(role, |name| {
        Ok(columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| (*t).to_owned()))
    })
}
