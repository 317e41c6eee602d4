//! What the gateway keeps (docs/spec.md §10): gateway keys (only the SHA-256 of each secret is
//! stored, compared in constant time) and the lookup that finds which stored session an incoming
//! history continues, within one tenant and partition, by the messages' match keys.

use sha2::{Digest as _, Sha256};
use sqlx::Row as _;
use subtle::ConstantTimeEq as _;

use crate::{DbResult as _, Store, StoreError, now_ms};

/// How a gateway key starts: `hk_<id>_<secret>`.
const KEY_PREFIX: &str = "hk_";
/// Random bytes in a key's id (shown in listings; not secret).
const ID_BYTES: usize = 8;
/// Random bytes in a key's secret: 256 bits.
const SECRET_BYTES: usize = 32;
/// The longest tenant name accepted.
const MAX_TENANT_LEN: usize = 128;
/// Match keys looked up per query: [`Store::find_by_keys`] walks the keys back in chunks of
/// this many (two placeholders each stay far below either backend's limit).
const KEYS_PER_QUERY: usize = 256;

/// A gateway key as listed: never its secret, which is shown once when it is made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayKey {
    /// The key's id (the part between `hk_` and the secret).
    pub id: String,
    /// The tenant it authenticates (`""` for an admin key, which authenticates none).
    pub tenant: String,
    /// An admin key ([`Store::add_admin_key`]): it reaches the gateway's admin API and no door.
    pub admin: bool,
    /// When it was made, Unix milliseconds.
    pub created_at: i64,
    /// When it was last used, Unix milliseconds, recorded coarsely (a replica records a key's
    /// use at most once a minute: [`Store::touch_gateway_key`]); `None`: never.
    pub last_used_at: Option<i64>,
}

/// The id of a well-formed gateway key (`hk_<id>_<secret>` → `<id>`), without looking it up.
pub fn gateway_key_id(key: &str) -> Option<&str> {
    parse_key(key).map(|(id, _)| id)
}

/// The key id that `given` names, as `hermes serve keys revoke` takes it: `hk_<id>`, `<id>`, or
/// either followed by `_` or `.` and anything (a whole key, or one mistyped after its id: the
/// rest is ignored). `None` when it does not start with an id of the length
/// [`Store::add_gateway_key`] makes: a caller must then not echo `given`, which may hold a
/// secret.
pub fn revocable_key_id(given: &str) -> Option<&str> {
    let rest = given.strip_prefix(KEY_PREFIX).unwrap_or(given);
    let id = rest.split(['_', '.']).next().unwrap_or_default();
    let is_id = id.len() == ID_BYTES * 2
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    is_id.then_some(id)
}

/// What [`Store::find_by_chain`] found: the sessions in order, and the first one read whole.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Chained {
    /// The sessions found, best first.
    pub candidates: Vec<String>,
    /// The first of them, read whole: in the lookup's own statement, or (a branch sharing a
    /// prefix by reference) through its lineage right after it.
    pub first: Option<crate::Snapshot>,
}

/// Where [`Store::find_by_keys`] found the conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Found {
    /// The session that holds the message.
    pub session: String,
    /// The position of the message in that session (the last active row holding the key).
    pub position: i64,
    /// Which of the keys passed decided (an index into them: the latest one any session holds).
    pub key_index: usize,
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// `n` bytes from the operating system's CSPRNG, as lowercase hex.
fn random_hex(n: usize) -> Result<String, StoreError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)
        .map_err(|e| StoreError::Encode(format!("a random gateway key: {e}")))?;
    Ok(hex(&bytes))
}

/// The stored digest of a key's secret: lowercase hex SHA-256 of its text.
fn secret_digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// A gateway key's row: its tenant, its secret's digest (never shown) and whether it is an
/// admin key.
#[derive(Clone)]
struct StoredKey {
    tenant: String,
    digest: String,
    admin: bool,
}

impl StoredKey {
    /// Whether `secret` is this key's (digests compared in constant time).
    fn admits(&self, secret: &str) -> bool {
        bool::from(
            secret_digest(secret)
                .as_bytes()
                .ct_eq(self.digest.as_bytes()),
        )
    }
}

/// Gateway key rows a replica read lately, for [`Store::tenant_for_key_cached`]: each kept for
/// its lifetime, so a key revoked through the store is refused within it. At most
/// [`KeyCache::MAX_KEYS`] ids are kept (the oldest reads go first when it is full).
pub struct KeyCache {
    lifetime: std::time::Duration,
    entries: std::sync::Mutex<std::collections::HashMap<String, (StoredKey, std::time::Instant)>>,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl KeyCache {
    /// How many key ids a cache keeps at most.
    pub const MAX_KEYS: usize = 10_000;

    /// A cache keeping each key's row for `lifetime` (zero: none kept).
    pub fn new(lifetime: std::time::Duration) -> Self {
        KeyCache {
            lifetime,
            entries: std::sync::Mutex::default(),
        }
    }

    fn fresh(&self, id: &str) -> Option<StoredKey> {
        let entries = self.entries.lock().ok()?;
        let (stored, read) = entries.get(id)?;
        (read.elapsed() < self.lifetime).then(|| stored.clone())
    }

    fn put(&self, id: &str, stored: StoredKey) {
        if self.lifetime.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= Self::MAX_KEYS && !entries.contains_key(id) {
                let lifetime = self.lifetime;
                entries.retain(|_, (_, read)| read.elapsed() < lifetime);
                if entries.len() >= Self::MAX_KEYS {
                    entries.clear();
                }
            }
            entries.insert(id.to_owned(), (stored, std::time::Instant::now()));
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(id);
        }
    }
}

/// `(id, secret)` of a well-formed key: `hk_`, then hex id and hex secret of the lengths
/// [`Store::add_gateway_key`] makes, joined by `_`.
fn parse_key(key: &str) -> Option<(&str, &str)> {
    let (id, secret) = key.strip_prefix(KEY_PREFIX)?.split_once('_')?;
    let is_hex = |s: &str, bytes: usize| {
        s.len() == bytes * 2
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    (is_hex(id, ID_BYTES) && is_hex(secret, SECRET_BYTES)).then_some((id, secret))
}

/// The tenant of an admitted key ([`Store::admitted`]); `None` for an admin key, which
/// authenticates no tenant.
fn tenant_of(admitted: Option<(&str, StoredKey)>) -> Option<String> {
    admitted
        .filter(|(_, stored)| !stored.admin)
        .map(|(_, stored)| stored.tenant)
}

/// Checks a tenant name: not blank, at most [`MAX_TENANT_LEN`] bytes, no control characters.
fn check_tenant(tenant: &str) -> Result<(), StoreError> {
    let why = if tenant.trim().is_empty() {
        "it is blank"
    } else if tenant.len() > MAX_TENANT_LEN {
        "it is longer than 128 bytes"
    } else if tenant.chars().any(char::is_control) {
        "it holds a control character"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidTenant {
        tenant: tenant.escape_debug().to_string(),
        why,
    })
}

/// The key the gateway signs Messages-door thinking blocks with (docs/spec.md §10): its id (named
/// in every signature, so a key can be rotated) and its 256-bit secret. `Debug` shows the id only.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    /// The key's id (16 hex digits).
    pub id: String,
    /// The secret, 32 bytes.
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The gateway's signing key: the stored one of the lowest generation, made (from the
    /// operating system's CSPRNG) when the store has none. Racing first uses (replicas) agree:
    /// generation 1 is inserted once (`ON CONFLICT DO NOTHING`), and everyone reads it.
    pub async fn signing_key(&self) -> Result<SigningKey, StoreError> {
        const FIRST: &str = "SELECT id, secret FROM signing_keys ORDER BY generation LIMIT 1";
        let mut row = sqlx::query(FIRST).fetch_optional(&self.pool).await.db()?;
        if row.is_none() {
            execute!(
                &self.writes,
                "INSERT INTO signing_keys (id, secret, generation, created_at) \
                 VALUES ($1, $2, 1, $3) ON CONFLICT DO NOTHING",
                [random_hex(ID_BYTES)?, random_hex(SECRET_BYTES)?, now_ms()]
            )?;
            row = sqlx::query(FIRST).fetch_optional(&self.pool).await.db()?;
        }
        let row =
            row.ok_or_else(|| StoreError::Encode("no signing key after making one".into()))?;
        let id: String = row.try_get("id").db()?;
        let text: String = row.try_get("secret").db()?;
        let secret = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2).unwrap_or("zz"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| StoreError::Encode(format!("signing key {id}: its secret is not hex")))?;
        Ok(SigningKey { id, secret })
    }
}

impl Store {
    /// Makes a new gateway key for `tenant` and returns it whole — `hk_<id>_<secret>`, the id
    /// 64 random bits and the secret 256, both lowercase hex, from the operating system's
    /// CSPRNG. Only the SHA-256 of the secret is stored: the key cannot be shown again.
    pub async fn add_gateway_key(&self, tenant: &str) -> Result<String, StoreError> {
        check_tenant(tenant)?;
        let id = random_hex(ID_BYTES)?;
        let secret = random_hex(SECRET_BYTES)?;
        execute!(
            &self.writes,
            "INSERT INTO gateway_keys (id, tenant, digest, created_at) VALUES ($1, $2, $3, $4)",
            [&id, tenant, secret_digest(&secret), now_ms()]
        )?;
        tracing::info!(key = %id, tenant, "gateway key created");
        Ok(format!("{KEY_PREFIX}{id}_{secret}"))
    }

    /// The tenant a gateway key authenticates, or `None` when the key is malformed, unknown
    /// (revoked included) or its secret is wrong. The secret's digest is compared with the
    /// stored one in constant time.
    pub async fn tenant_for_key(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(tenant_of(self.admitted(key, None).await?))
    }

    /// Makes a new admin key and returns it whole, as [`Store::add_gateway_key`] makes a
    /// tenant's (`hk_<id>_<secret>`, only the secret's SHA-256 stored): it authenticates no
    /// tenant ([`Store::tenant_for_key`] answers `None` for it), only the gateway's admin API
    /// ([`Store::admin_key_cached`]).
    pub async fn add_admin_key(&self) -> Result<String, StoreError> {
        let id = random_hex(ID_BYTES)?;
        let secret = random_hex(SECRET_BYTES)?;
        execute!(
            &self.writes,
            "INSERT INTO gateway_keys (id, tenant, digest, created_at, admin) \
             VALUES ($1, '', $2, $3, 1)",
            [&id, secret_digest(&secret), now_ms()]
        )?;
        tracing::info!(key = %id, "admin key created");
        Ok(format!("{KEY_PREFIX}{id}_{secret}"))
    }

    /// The id of the admin key `key` is, or `None` when it is malformed, unknown, a tenant's key
    /// or its secret is wrong; each id's row read at most once per `cache`'s lifetime (the
    /// secret checked against its digest, in constant time, on every call).
    pub async fn admin_key_cached(
        &self,
        key: &str,
        cache: &KeyCache,
    ) -> Result<Option<String>, StoreError> {
        let admitted = self.admitted(key, Some(cache)).await?;
        Ok(admitted
            .filter(|(_, stored)| stored.admin)
            .map(|(id, _)| id.to_owned()))
    }

    /// Key `key`'s id and row when the key is well formed, known and its secret matches the
    /// stored digest (compared in constant time); the row read through `cache` when given. The
    /// one check behind every key lookup, tenant's or admin's.
    async fn admitted<'k>(
        &self,
        key: &'k str,
        cache: Option<&KeyCache>,
    ) -> Result<Option<(&'k str, StoredKey)>, StoreError> {
        let Some((id, secret)) = parse_key(key) else {
            return Ok(None);
        };
        let stored = match cache {
            Some(cache) => self.cached_key(id, cache).await?,
            None => self.stored_key(id).await?,
        };
        Ok(stored
            .filter(|stored| stored.admits(secret))
            .map(|stored| (id, stored)))
    }

    /// Key `id`'s row, read at most once per `cache`'s lifetime (an unknown id every time).
    async fn cached_key(
        &self,
        id: &str,
        cache: &KeyCache,
    ) -> Result<Option<StoredKey>, StoreError> {
        if let Some(stored) = cache.fresh(id) {
            return Ok(Some(stored));
        }
        let Some(stored) = self.stored_key(id).await? else {
            cache.forget(id);
            return Ok(None);
        };
        cache.put(id, stored.clone());
        Ok(Some(stored))
    }

    /// [`Store::tenant_for_key`] with each key id's row read at most once per `cache`'s
    /// lifetime (the secret is still checked against the digest on every call; an unknown id is
    /// read every time).
    pub async fn tenant_for_key_cached(
        &self,
        key: &str,
        cache: &KeyCache,
    ) -> Result<Option<String>, StoreError> {
        Ok(tenant_of(self.admitted(key, Some(cache)).await?))
    }

    /// Key `id`'s tenant and digest.
    async fn stored_key(&self, id: &str) -> Result<Option<StoredKey>, StoreError> {
        let row = sqlx::query("SELECT tenant, digest, admin FROM gateway_keys WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .db()?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(StoredKey {
            tenant: row.try_get("tenant").db()?,
            digest: row.try_get("digest").db()?,
            admin: row.try_get::<i64, _>("admin").db()? != 0,
        }))
    }

    /// The gateway keys of `tenant` (every tenant's with `None`), by tenant, then oldest first
    /// (ids and times; never a secret or its digest).
    pub async fn gateway_keys(&self, tenant: Option<&str>) -> Result<Vec<GatewayKey>, StoreError> {
        const SELECT: &str = "SELECT id, tenant, created_at, last_used_at, admin FROM gateway_keys";
        const ORDER: &str = "ORDER BY tenant, created_at, id";
        let rows = match tenant {
            Some(tenant) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{SELECT} WHERE tenant = $1 {ORDER}"
                )))
                .bind(tenant)
                .fetch_all(&self.pool)
                .await
            }
            None => {
                sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT} {ORDER}")))
                    .fetch_all(&self.pool)
                    .await
            }
        }
        .db()?;
        rows.iter()
            .map(|r| {
                Ok(GatewayKey {
                    id: r.try_get("id").db()?,
                    tenant: r.try_get("tenant").db()?,
                    created_at: r.try_get("created_at").db()?,
                    last_used_at: r.try_get("last_used_at").db()?,
                    admin: r.try_get::<i64, _>("admin").db()? != 0,
                })
            })
            .collect()
    }

    /// Records that the key with id `id` was used at `at` (Unix ms), unless a later use is
    /// recorded already. The gateway calls it at most once a minute per key and replica, off
    /// the request path.
    pub async fn touch_gateway_key(&self, id: &str, at: i64) -> Result<(), StoreError> {
        execute!(
            &self.writes,
            "UPDATE gateway_keys SET last_used_at = $2 \
             WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
            [id, at]
        )?;
        Ok(())
    }

    /// Revokes every gateway key of `tenant` (never an admin key): how many there were. They stop working at once on
    /// every replica.
    pub async fn revoke_tenant_keys(&self, tenant: &str) -> Result<u64, StoreError> {
        let done = execute!(
            &self.writes,
            "DELETE FROM gateway_keys WHERE tenant = $1 AND admin = 0",
            [tenant]
        )?;
        tracing::info!(
            tenant,
            revoked = done.rows_affected(),
            "gateway keys revoked"
        );
        Ok(done.rows_affected())
    }

    /// Revokes the gateway key with this id (the key's `<id>` part, as `hk_<id>` the way
    /// `hermes serve keys list` prints it, or the whole key: [`revocable_key_id`]): `true` when
    /// there was one (`false` too when `id` names no id). The key stops working at once on
    /// every replica.
    pub async fn revoke_gateway_key(&self, id: &str) -> Result<bool, StoreError> {
        let Some(id) = revocable_key_id(id) else {
            return Ok(false);
        };
        let done = execute!(&self.writes, "DELETE FROM gateway_keys WHERE id = $1", [id])?;
        if done.rows_affected() > 0 {
            tracing::info!(key = %id, "gateway key revoked");
        }
        Ok(done.rows_affected() > 0)
    }

    /// Which stored session an incoming history continues (docs/spec.md §10, "Which conversation"):
    /// `keys` are the history's assistant messages' match keys in order
    /// ([`hermes_core::match_key`]); walking them from the last to the first, the
    /// first one that an active (not archived) message of a session of `tenant` and
    /// `partition` holds decides. Ties go to the most recently updated session (then the
    /// greater id), and within it to the last row holding the key. `partition: None` matches
    /// only sessions without a partition; sessions of other tenants, and CLI sessions (no
    /// tenant), are never found. `None`: no session holds any of the keys.
    ///
    /// A message is found where it is stored: one in a prefix that branches share by reference
    /// ([`Fork`](crate::Fork)) is found in the session that stores it, whose view holds it at
    /// the same position as theirs (a history that ends in that prefix parts from either at the
    /// same place, and its turn branches sharing the same messages); one in a branch's own rows
    /// is found in that branch. A materialised branch stores its prefix itself and is found by
    /// it like any session.
    ///
    /// One indexed query (`messages (match_key)`) per 256 distinct keys, latest first;
    /// usually one in all.
    pub async fn find_by_keys(
        &self,
        tenant: &str,
        partition: Option<&str>,
        keys: &[String],
    ) -> Result<Option<Found>, StoreError> {
        // Each distinct key at the latest index it has (a repeated message counts where it
        // was last seen).
        let mut latest: Vec<(usize, &str)> = Vec::new();
        for (i, key) in keys.iter().enumerate().rev() {
            if !latest.iter().any(|(_, k)| *k == key.as_str()) {
                latest.push((i, key));
            }
        }
        for chunk in latest.chunks(KEYS_PER_QUERY) {
            if let Some(found) = self.find_in(tenant, partition, chunk).await? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The sessions of `tenant` (and `partition`) holding any of `keys` (a history's match keys,
    /// in history order), at most `limit`, best first: by the latest index in `keys` one of
    /// their messages holds, then the most recently updated. docs/spec.md §10's place then decides
    /// among them: a session is the client's conversation only when one of its messages stands at
    /// its place there.
    pub async fn find_candidates(
        &self,
        tenant: &str,
        partition: Option<&str>,
        keys: &[String],
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut latest: Vec<(usize, &str)> = Vec::new();
        for (i, key) in keys.iter().enumerate().rev() {
            if !latest.iter().any(|(_, k)| *k == key.as_str()) {
                latest.push((i, key));
            }
        }
        let mut found: Vec<String> = Vec::new();
        for chunk in latest.chunks(KEYS_PER_QUERY) {
            let sql = find_sql(chunk, partition.is_some())
                .replace(" LIMIT 1", &format!(" LIMIT {}", limit.saturating_mul(8)));
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant);
            for (_, key) in chunk {
                query = query.bind(*key);
            }
            if let Some(partition) = partition {
                query = query.bind(partition);
            }
            for row in query.fetch_all(&self.pool).await.db()? {
                let session: String = row.try_get("session_id").db()?;
                if !found.contains(&session) {
                    found.push(session);
                }
            }
            if found.len() >= limit {
                break;
            }
        }
        found.truncate(limit);
        Ok(found)
    }

    /// The sessions of `tenant` (in `partition`, or in none) whose active view holds a row with
    /// one of `keys`, chain keys ([`hermes_core::chain_keys`]) of a client's assistant
    /// messages in history order: by the latest key first, then the most recently updated
    /// session, at most `limit`; and the first of them read whole ([`Store::snapshot`]), as of
    /// one moment with the lookup. One statement ([`chain_view_sql`]): the sessions' rows with
    /// their tips, then the first one's active view; a first one that is a branch sharing a
    /// prefix by reference is read through its lineage after it ([`Store::snapshot`], one
    /// read transaction of its own). One probe of `messages (chain_key)` per key, whatever
    /// other conversations share a reply; rows without a chain key are never found here
    /// ([`Store::find_candidates`] finds them by match key).
    pub async fn find_by_chain(
        &self,
        tenant: &str,
        partition: Option<&str>,
        keys: &[&str],
        limit: usize,
    ) -> Result<Chained, StoreError> {
        if keys.is_empty() {
            return Ok(Chained::default());
        }
        // The keys take a multiple of [`CHAIN_SLOTS`] places, the rest bound to NULL (which no
        // row holds): one shape of the statement for the usual lookup, prepared once per pooled
        // connection, not one per count of keys.
        let slots = keys.len().div_ceil(CHAIN_SLOTS) * CHAIN_SLOTS;
        let sql = chain_view_sql(slots, partition.is_some(), limit);
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant);
        for i in 0..slots {
            query = query.bind(keys.get(i).copied());
        }
        if let Some(partition) = partition {
            query = query.bind(partition);
        }
        let mut rows = query.fetch_all(&self.pool).await.db()?;
        // The sessions first (`part` 0, best first), then the first one's rows in position
        // order: sorted here, not by the statement, which would copy every row of the view
        // into a sorter (the view's own rows come in key order already).
        let mut keyed = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let part: i64 = row.try_get("part").db()?;
            let ord: i64 = row.try_get("ord").db()?;
            keyed.push(((part, ord), i));
        }
        if !keyed.is_sorted() {
            keyed.sort_unstable();
            let mut taken: Vec<Option<crate::DbRow>> = rows.into_iter().map(Some).collect();
            rows = keyed.iter().filter_map(|&(_, i)| taken[i].take()).collect();
        }
        let split = keyed
            .iter()
            .position(|&((part, _), _)| part != 0)
            .unwrap_or(rows.len());
        let (sessions, view) = rows.split_at(split);
        let mut candidates = Vec::with_capacity(sessions.len());
        for row in sessions {
            candidates.push(row.try_get::<String, _>("id").db()?);
        }
        let first = match sessions.first() {
            None => None,
            Some(row) => {
                let id = &candidates[0];
                let meta = crate::meta_from_row(row)?;
                if meta.fork.is_some() {
                    Some(self.snapshot(id).await?)
                } else {
                    let active = crate::unforked_view(id, view)?;
                    Some(crate::tip::snapshot_of(id, meta, row, active)?)
                }
            }
        };
        Ok(Chained { candidates, first })
    }

    /// [`Store::find_by_keys`] for one chunk of `(index, key)` pairs, in one query.
    async fn find_in(
        &self,
        tenant: &str,
        partition: Option<&str>,
        chunk: &[(usize, &str)],
    ) -> Result<Option<Found>, StoreError> {
        let sql = find_sql(chunk, partition.is_some());
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant);
        for (_, key) in chunk {
            query = query.bind(*key);
        }
        if let Some(partition) = partition {
            query = query.bind(partition);
        }
        let Some(row) = query.fetch_optional(&self.pool).await.db()? else {
            return Ok(None);
        };
        let key_index: i64 = row.try_get("key_index").db()?;
        Ok(Some(Found {
            session: row.try_get("session_id").db()?,
            position: row.try_get("position").db()?,
            key_index: usize::try_from(key_index).unwrap_or_default(),
        }))
    }
}

/// The query of [`Store::find_by_chain`] for `keys` chain keys: `$1` the tenant, then the keys
/// in history order, then the partition when `partitioned`; at most `limit` rows.
///
/// Both lookups name `messages` first and `CROSS JOIN` the sessions, which SQLite takes as the
/// join order (PostgreSQL plans it as an inner join): without statistics (a store never runs
/// `ANALYZE`) SQLite's planner otherwise drives an `IN` of three keys or more from the tenant's
/// sessions (`sessions_tenant`) and reads every message of every session of the tenant — a
/// continued turn of a five-turn conversation took 11 ms at 1,700 conversations, growing with
/// each one.
pub(crate) fn chain_sql(keys: usize, partitioned: bool, limit: usize) -> String {
    let placeholders: Vec<String> = (0..keys).map(|i| format!("${}", i + 2)).collect();
    let rank: String = placeholders
        .iter()
        .enumerate()
        .map(|(i, p)| format!(" WHEN {p} THEN {i}"))
        .collect();
    let partition_test = if partitioned {
        format!("s.partition_key = ${}", keys + 2)
    } else {
        "s.partition_key IS NULL".to_owned()
    };
    format!(
        "SELECT {}, {}, ROW_NUMBER() OVER (ORDER BY c.key_index DESC, s.updated_at DESC, \
         s.id DESC) AS ord FROM (SELECT m.session_id AS found, \
         MAX(CAST(CASE m.chain_key{rank} END AS BIGINT)) AS key_index \
         FROM messages m CROSS JOIN sessions s \
         WHERE s.id = m.session_id AND m.chain_key IS NOT NULL AND m.chain_key IN ({}) \
         AND m.archived_at IS NULL AND s.tenant = $1 AND {partition_test} AND s.staged = 0 \
         GROUP BY m.session_id) c CROSS JOIN sessions s WHERE s.id = c.found \
         ORDER BY c.key_index DESC, s.updated_at DESC, s.id DESC LIMIT {limit}",
        session_columns!(),
        crate::tip::tip_columns!("s.id"),
        placeholders.join(", ")
    )
}

/// The places for chain keys of one shape of [`Store::find_by_chain`]'s statement (a gateway
/// looks a conversation up by its last four assistant messages' keys).
const CHAIN_SLOTS: usize = 4;

/// The one statement of [`Store::find_by_chain`]: [`chain_sql`]'s sessions (`part` 0, `ord`
/// their rank), then, when the first of them inherits nothing, its active rows (`part` 1, `ord`
/// their position; [`message_columns!`], `archived_at, kind, sort_key` and
/// [`carrier_columns!`]), each arm padding the other's columns with `NULL`, in no order (the
/// caller sorts by `part` and `ord`). One statement reads
/// one moment on either backend (SQLite's implicit read transaction, PostgreSQL's statement
/// snapshot), so no transaction is begun for it.
pub(crate) fn chain_view_sql(keys: usize, partitioned: bool, limit: usize) -> String {
    let view_columns = concat!(
        message_columns!(),
        ", archived_at, kind, sort_key",
        carrier_columns!()
    );
    let session_columns = concat!(session_columns!(), ", last_position, chain_state");
    let names = |columns: &'static str| -> Vec<&'static str> {
        split_columns(columns)
            .into_iter()
            .map(|c| c.rsplit(' ').next().unwrap_or(c))
            .collect()
    };
    let nulls = |columns: &'static str| -> String {
        names(columns)
            .iter()
            .map(|name| format!("NULL AS {name}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "WITH c AS ({chain}) \
         SELECT {view_nulls}, CAST(0 AS BIGINT) AS part, ord, {sessions} FROM c \
         UNION ALL \
         SELECT {view_columns}, CAST(1 AS BIGINT), messages.position, {session_nulls} \
         FROM c CROSS JOIN messages WHERE c.ord = 1 \
         AND (c.parent_id IS NULL OR c.fork_revision IS NULL OR c.fork_last IS NULL \
         OR c.fork_count IS NULL) \
         AND messages.session_id = c.id AND messages.archived_at IS NULL",
        chain = chain_sql(keys, partitioned, limit),
        view_nulls = nulls(view_columns),
        sessions = session_columns,
        session_nulls = names(session_columns)
            .iter()
            .map(|_| "NULL")
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// The top-level columns of a select list, split at the commas outside parentheses.
fn split_columns(columns: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in columns.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(columns[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(columns[start..].trim());
    out.retain(|c| !c.is_empty());
    out
}

/// The query of [`Store::find_by_keys`] for one chunk of `(index, key)` pairs ([`chain_sql`]
/// says why it joins as it does): `$1` the tenant,
/// then one placeholder per key, then the partition when `partitioned`. Each key is bound once
/// and named twice: in the `IN` that the `messages (match_key)` index serves, and in the rank
/// that orders the rows by the key's index in the history.
pub(crate) fn find_sql(chunk: &[(usize, &str)], partitioned: bool) -> String {
    let first = 2;
    let placeholders: Vec<String> = (0..chunk.len())
        .map(|i| format!("${}", first + i))
        .collect();
    let rank: String = chunk
        .iter()
        .zip(&placeholders)
        .map(|((index, _), p)| format!(" WHEN {p} THEN {index}"))
        .collect();
    let partition_test = if partitioned {
        format!("s.partition_key = ${}", first + chunk.len())
    } else {
        "s.partition_key IS NULL".to_owned()
    };
    format!(
        "SELECT m.session_id, m.position, CAST(CASE m.match_key{rank} END AS BIGINT) AS key_index \
         FROM messages m CROSS JOIN sessions s \
         WHERE s.id = m.session_id AND m.match_key IN ({}) AND m.archived_at IS NULL \
         AND s.tenant = $1 AND {partition_test} \
         AND s.staged = 0 \
         ORDER BY key_index DESC, s.updated_at DESC, s.id DESC, m.position DESC LIMIT 1",
        placeholders.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_only_in_the_shape_they_are_made() {
        let id = "0123456789abcdef";
        let secret = "ab".repeat(32);
        assert_eq!(
            parse_key(&format!("hk_{id}_{secret}")),
            Some((id, secret.as_str()))
        );
        for bad in [
            String::new(),
            format!("hk_{id}{secret}"),
            format!("hx_{id}_{secret}"),
            format!("hk_{id}_{}", &secret[1..]),
            format!("hk_{id}_{}", secret.to_uppercase()),
            format!("hk_{id}_{secret}_"),
            format!("hk__{secret}"),
        ] {
            assert_eq!(parse_key(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tenant_name_is_checked() {
        assert!(check_tenant("acme").is_ok());
        for bad in ["", "  ", "a\nb", &"x".repeat(129)] {
            let err = check_tenant(bad).unwrap_err().to_string();
            assert!(err.contains("tenant"), "{err}");
        }
    }
}
