//! Gateway keys checked against the store (each key id's row read at most once per
//! [`StoreKeys::READ_EVERY`] on this replica, the secret checked against its digest on every
//! request: a key revoked through the store is refused by every replica within a second), and
//! each key's last use recorded coarsely — at most once per key per
//! [`StoreKeys::touch_every`] on this replica, off the request's path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_engine::store::Store;

use crate::{Keys, KeysError};

/// [`Keys`] read from the store's gateway keys (`hermes serve keys create`).
pub struct StoreKeys {
    store: Store,
    /// Key rows read lately.
    read: hermes_engine::store::KeyCache,
    every: Duration,
    /// When this replica last recorded each key's use, by key id.
    touched: Arc<Mutex<HashMap<String, Instant>>>,
}

impl StoreKeys {
    /// How often a key's use is recorded at most, per replica: once a minute.
    pub const TOUCH_EVERY: Duration = Duration::from_secs(60);

    /// How long a replica goes by a key row it read: half a second, so a revoked key is
    /// refused within a second (docs/gateway.md's word).
    pub const READ_EVERY: Duration = Duration::from_millis(500);

    /// The keys of `store`, last uses recorded at most once a minute per key.
    pub fn new(store: Store) -> Self {
        StoreKeys {
            store,
            read: hermes_engine::store::KeyCache::new(Self::READ_EVERY),
            every: Self::TOUCH_EVERY,
            touched: Arc::default(),
        }
    }

    /// With last uses recorded at most once per `every` per key.
    pub fn touch_every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// Records `id`'s use in the background unless this replica did within `every`.
    fn touch(&self, id: &str) {
        let now = Instant::now();
        {
            let Ok(mut touched) = self.touched.lock() else {
                return;
            };
            if touched
                .get(id)
                .is_some_and(|last| now.duration_since(*last) < self.every)
            {
                return;
            }
            touched.insert(id.to_owned(), now);
        }
        let (store, id) = (self.store.clone(), id.to_owned());
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        tokio::spawn(async move {
            if let Err(e) = store.touch_gateway_key(&id, at).await {
                tracing::warn!(key = %id, error = %e, "recording a gateway key's last use failed");
            }
        });
    }
}

#[async_trait::async_trait]
impl Keys for StoreKeys {
    async fn tenant(&self, bearer: &str) -> Result<Option<String>, KeysError> {
        let tenant = self.store.tenant_for_key_cached(bearer, &self.read).await?;
        if tenant.is_some()
            && let Some(id) = hermes_engine::store::gateway_key_id(bearer)
        {
            self.touch(id);
        }
        Ok(tenant)
    }

    async fn admin(&self, bearer: &str) -> Result<Option<String>, KeysError> {
        let id = self.store.admin_key_cached(bearer, &self.read).await?;
        if let Some(id) = &id {
            self.touch(id);
        }
        Ok(id)
    }
}
