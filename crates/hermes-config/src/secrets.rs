//! The secrets hermes loaded, kept out of everything a tool returns: the API key in use, every
//! API-key variable the engine's wires (a third party's included) and config.toml name, and a
//! few well-known cloud and database credentials. Each exact value is replaced by [`REDACTED`]
//! before a tool result is stored or sent. Also the engine's key lookup: API keys come from the
//! environment.

use std::sync::{Arc, RwLock};

use hermes_engine::providers::Wires;

use crate::config::Config;

/// The engine's key lookup: an API key variable's value in this process's environment.
pub fn key_lookup() -> hermes_engine::KeyLookup {
    Arc::new(|var: &str| std::env::var(var).ok())
}

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not redacted: a one-character `PGPASSWORD` would otherwise
/// blank that character in every tool result, and so short a value protects nothing that
/// redaction could (it cannot be told apart from ordinary text).
pub const MIN_SECRET_LEN: usize = 8;

/// Credential variables redacted although no provider of the registry names them.
const WELL_KNOWN: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_FOUNDRY_AUTH_TOKEN",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
    "HERMES_API_KEY",
    "PGPASSWORD",
];

/// Exact secret values, longest first; clones share them, so a secret learned later (AWS
/// credentials from SSO or `credential_process`) is redacted everywhere. `Debug` shows only how
/// many there are.
#[derive(Clone, Default)]
pub struct Secrets {
    values: Arc<RwLock<Vec<Vec<u8>>>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values)", self.read().len())
    }
}

/// The secrets of this process: `api_key` (the key hermes loaded, if any), and the non-blank
/// values of the `key_var` of every provider `wires` serve (the engine's list:
/// `hermes_engine::Engine::wires`, so a wire added with `Engine::with_wire` brings its
/// providers' keys), every config.toml `[providers.*] key_var`, and [`WELL_KNOWN`].
pub fn gather(api_key: Option<&str>, config: &Config, wires: &Wires) -> Secrets {
    let mut vars: Vec<&str> = wires
        .iter()
        .flat_map(|w| w.providers())
        .filter_map(|p| p.key_var)
        .collect();
    vars.extend(
        config
            .providers
            .values()
            .filter_map(|p| p.key_var.as_deref()),
    );
    vars.extend_from_slice(WELL_KNOWN);
    let mut values: Vec<Vec<u8>> = vars
        .iter()
        .filter_map(std::env::var_os)
        .map(|v| v.into_encoded_bytes())
        .collect();
    values.extend(api_key.map(|k| k.as_bytes().to_vec()));
    Secrets::new(values)
}

impl Secrets {
    /// These values (blank ones and ones shorter than [`MIN_SECRET_LEN`] bytes dropped; a value
    /// with surrounding whitespace also counts trimmed).
    pub fn new(values: impl IntoIterator<Item = Vec<u8>>) -> Self {
        let secrets = Secrets::default();
        secrets.add(values);
        secrets
    }

    /// Adds `values` (blank and short ones dropped, as in [`Secrets::new`]) for every clone.
    pub fn add(&self, values: impl IntoIterator<Item = Vec<u8>>) {
        let mut out = self.values.write().unwrap_or_else(|e| e.into_inner());
        for value in values {
            let trimmed = value.trim_ascii();
            if trimmed.len() < MIN_SECRET_LEN {
                continue;
            }
            if trimmed.len() != value.len() {
                out.push(trimmed.to_vec());
            }
            out.push(value);
        }
        out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        out.dedup();
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Vec<u8>>> {
        self.values.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The longest secret's length in bytes (0 when there is none). A reader that will keep
    /// `n` bytes reads `n + longest()` so that a secret straddling the cut is seen whole.
    pub fn longest(&self) -> usize {
        self.read().first().map_or(0, Vec::len)
    }

    /// The first `limit` bytes of `bytes` with every secret occurrence replaced by
    /// [`REDACTED`]. Occurrences are found in all of `bytes`, so one that starts before
    /// `limit` and ends after it is replaced whole: no prefix of it is kept.
    pub fn redact_prefix(&self, bytes: &[u8], limit: usize) -> Vec<u8> {
        let mut masked = vec![false; bytes.len()];
        for secret in self.read().iter() {
            let mut start = 0;
            while let Some(at) = find(&bytes[start..], secret) {
                let from = start + at;
                masked[from..from + secret.len()].fill(true);
                start = from + 1;
            }
        }
        let end = limit.min(bytes.len());
        let mut out = Vec::with_capacity(end);
        let mut i = 0;
        while i < end {
            if masked[i] {
                out.extend_from_slice(REDACTED.as_bytes());
                while i < bytes.len() && masked[i] {
                    i += 1;
                }
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    }

    /// `text` with every secret occurrence replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        if self.read().is_empty() {
            return text.to_owned();
        }
        String::from_utf8_lossy(&self.redact_prefix(text.as_bytes(), text.len())).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    let first = needle[0];
    (0..=haystack.len() - needle.len())
        .find(|&i| haystack[i] == first && haystack[i..].starts_with(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(values: &[&str]) -> Secrets {
        Secrets::new(values.iter().map(|v| v.as_bytes().to_vec()))
    }

    #[test]
    fn every_occurrence_is_redacted_and_blank_values_are_not_secrets() {
        let s = secrets(&["sk-abc12", "  ", ""]);
        assert_eq!(s.longest(), 8);
        assert_eq!(
            s.redact("a sk-abc12 b sk-abc12sk-abc12"),
            "a [redacted] b [redacted]"
        );
        assert_eq!(secrets(&[]).redact("sk-abc12"), "sk-abc12");
    }

    #[test]
    fn values_too_short_to_be_secrets_redact_nothing() {
        // A one-character PGPASSWORD must not blank that character in every tool result.
        let s = secrets(&["x", " 1234567 ", "1234567"]);
        assert_eq!(s.longest(), 0);
        assert_eq!(s.redact("xylophone x 1234567"), "xylophone x 1234567");
        let s = secrets(&["x", "12345678"]);
        assert_eq!(s.redact("x 12345678 x"), "x [redacted] x");
    }

    #[test]
    fn overlapping_secrets_and_surrounding_whitespace() {
        let s = secrets(&["abcd1234", "1234cdef", " pad-pad-\n"]);
        assert_eq!(s.redact("xabcd1234cdefx"), "x[redacted]x");
        assert_eq!(s.redact("[pad-pad-]"), "[[redacted]]");
    }

    #[test]
    fn a_secret_straddling_the_cut_leaves_no_prefix() {
        let s = secrets(&["SECRET-X"]);
        let bytes = b"0123SECRET-X9";
        assert_eq!(s.redact_prefix(bytes, 6), b"0123[redacted]");
        assert_eq!(s.redact_prefix(bytes, 4), b"0123");
        assert_eq!(s.redact_prefix(bytes, 100), b"0123[redacted]9");
    }

    #[test]
    fn the_key_variables_of_an_added_wires_providers_are_secrets() {
        use hermes_engine::providers::{Access, Descriptor, ProviderSpec, WireDescriptor};
        /// The built-in chat completions wire, which the added one builds and explains with.
        fn chat() -> Arc<dyn WireDescriptor> {
            hermes_engine::builtin_wires()
                .get(hermes_core::CHAT_WIRE)
                .cloned()
                .unwrap()
        }
        // Cargo sets CARGO_MANIFEST_DIR for the test process: the added wire's provider
        // names it as its key variable, which no built-in provider does.
        let value = std::env::var("CARGO_MANIFEST_DIR").unwrap();
        let config = Config::default();
        let builtin = hermes_engine::builtin_wires();
        assert_eq!(gather(None, &config, &builtin).redact(&value), value);
        let mut wires = builtin;
        wires.register(Arc::new(Descriptor {
            id: "added",
            name: "An added wire",
            providers: &[ProviderSpec {
                id: "added",
                base_url: None,
                key_var: Some("CARGO_MANIFEST_DIR"),
                access: Access::Key,
            }],
            build: |target, client, credentials| chat().build(target, client, credentials),
            explain: |target, parts, stored| chat().explain(target, parts, stored),
            client_blocks: None,
        }));
        assert_eq!(gather(None, &config, &wires).redact(&value), REDACTED);
    }

    #[test]
    fn debug_shows_no_value() {
        assert_eq!(format!("{:?}", secrets(&["sk-abc12"])), "Secrets(1 values)");
    }
}
