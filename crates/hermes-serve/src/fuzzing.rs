//! What the fuzz targets (`fuzz/`, this crate's `fuzzing` feature) drive: the chat door's
//! request reader and the Messages door's signatures. Not an API: only `hermes-fuzz` turns the
//! feature on.

use hermes_core::Message;
use hermes_engine::store::SigningKey;

use crate::sign::Signer;

/// The history the chat door reads from a `POST /v1/chat/completions` body, or the 400's
/// message.
pub fn chat_request(body: &[u8]) -> Result<Vec<Message>, String> {
    crate::openai::parse(body)
        .map(|request| request.turn.messages)
        .map_err(|e| e.message)
}

/// A Messages-door signer for `tenant`'s `partition` with the key `id` / `secret`.
pub struct FuzzSigner(Signer);

impl FuzzSigner {
    /// The signer (see [`Signer::new`]).
    pub fn new(id: &str, secret: &[u8], tenant: &str, partition: Option<&str>) -> Self {
        let key = SigningKey {
            id: id.to_owned(),
            secret: secret.to_vec(),
        };
        FuzzSigner(Signer::new(
            key,
            tenant.to_owned(),
            partition.map(str::to_owned),
        ))
    }

    /// [`Signer::mint`].
    pub fn mint(&self, text: &str) -> String {
        self.0.mint(text)
    }

    /// [`Signer::verifies`].
    pub fn verifies(&self, text: &str, signature: &str) -> bool {
        self.0.verifies(text, signature)
    }

    /// [`Signer::seal`].
    pub fn seal(&self, payload: &str) -> String {
        self.0.seal(payload)
    }

    /// [`Signer::open`].
    pub fn open(&self, sealed: &str) -> Option<String> {
        self.0.open(sealed)
    }
}
