//! Per-tenant limits shared by every replica on one store (`[serve]` `requests_per_minute`,
//! `max_concurrent`, `tokens_per_minute` and `tokens_per_day`, overridden per tenant; on by
//! default, [`TenantLimits::DEFAULT`]): a turn is admitted here before anything reaches an
//! upstream, or answered 429 with `Retry-After` (and, over a token limit, the token headers each
//! door's SDKs read).
//!
//! Tokens are counted from the usage the store keeps of the tenant's conversations
//! ([`Store::tenant_tokens`]: every replica's replies, summed by the minute window and the UTC
//! day): a turn is admitted while the tenant's spend is under the limit, and its own tokens
//! count once its reply is stored.
//!
//! The rate is counted in the store's sharded window rows ([`Store::admit_request`]); this
//! replica remembers which shards of the current window it found full, so once a tenant's
//! window is full its requests are refused without a statement until the window ends. It
//! claims a few places of a window at once ([`lease_size`]: a sixteenth of a shard's share, at
//! most 16) and admits that many requests without a statement: the request path runs one
//! statement per lease, not per request. What a replica leased and did not use by the window's
//! end is lost to that window, so a tenant may get fewer than its limit by that much per
//! replica (a limit of 600 a minute: at most 3 per replica), never more.
//!
//! A running request holds a concurrency slot row whose expiry this replica renews every third
//! of [`Limits::slot_ttl`] (one statement for all its slots); a replica that dies stops
//! renewing, and its slots free themselves within the TTL. A slot whose request ended is kept
//! for the tenant's next request on this replica for [`SLOT_KEPT`] (a client's tool loop, a
//! busy tenant's next turn), then given back in one statement with the others that went idle:
//! a tenant's turns claim and free no slot row while they keep coming, and a slot kept idle
//! holds another replica's request off for at most that long.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::num::{NonZeroU32, NonZeroU64};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hermes_engine::store::Store;

use crate::error::ApiError;

/// One tenant's limits; `None`: no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TenantLimits {
    /// Turns admitted per window ([`Limits::window`], a minute).
    pub requests_per_minute: Option<NonZeroU32>,
    /// Turns running at once.
    pub max_concurrent: Option<NonZeroU32>,
    /// Tokens (input + output of the stored usage) per window ([`Limits::window`]).
    pub tokens_per_minute: Option<NonZeroU64>,
    /// Tokens (input + output of the stored usage) per UTC day ([`Limits::day`]): the spend
    /// budget.
    pub tokens_per_day: Option<NonZeroU64>,
}

/// `n`, which is not 0.
const fn nz32(n: u32) -> Option<NonZeroU32> {
    NonZeroU32::new(n)
}

/// `n`, which is not 0.
const fn nz64(n: u64) -> Option<NonZeroU64> {
    NonZeroU64::new(n)
}

impl TenantLimits {
    /// The limits every tenant has unless configured otherwise (`hermes serve`, and
    /// [`crate::ServeConfig::new`]): 600 turns a minute, 32 at once, 2,000,000 tokens a minute
    /// and 50,000,000 tokens a UTC day.
    pub const DEFAULT: TenantLimits = TenantLimits {
        requests_per_minute: nz32(600),
        max_concurrent: nz32(32),
        tokens_per_minute: nz64(2_000_000),
        tokens_per_day: nz64(50_000_000),
    };

    /// These limits (no token limits: [`TenantLimits::tokens_per_minute`],
    /// [`TenantLimits::tokens_per_day`] add them).
    pub fn new(
        requests_per_minute: Option<NonZeroU32>,
        max_concurrent: Option<NonZeroU32>,
    ) -> Self {
        TenantLimits {
            requests_per_minute,
            max_concurrent,
            tokens_per_minute: None,
            tokens_per_day: None,
        }
    }

    hermes_core::setters! {
        /// With this many tokens per minute.
        tokens_per_minute: Option<NonZeroU64>;
        /// With this many tokens per UTC day.
        tokens_per_day: Option<NonZeroU64>;
    }

    /// `self`, each unset limit taken from `defaults`.
    pub fn or(self, defaults: TenantLimits) -> TenantLimits {
        TenantLimits {
            requests_per_minute: self.requests_per_minute.or(defaults.requests_per_minute),
            max_concurrent: self.max_concurrent.or(defaults.max_concurrent),
            tokens_per_minute: self.tokens_per_minute.or(defaults.tokens_per_minute),
            tokens_per_day: self.tokens_per_day.or(defaults.tokens_per_day),
        }
    }
}

/// The limits of every tenant: defaults, per-tenant overrides, and how they are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Every tenant's limits unless overridden (`[serve]`).
    pub defaults: TenantLimits,
    /// Overrides by tenant (`[serve.tenants.NAME]`); an unset limit there is the default's.
    pub tenants: BTreeMap<String, TenantLimits>,
    /// The window `requests_per_minute` and `tokens_per_minute` count in: a minute (windows
    /// start at whole multiples of it since the Unix epoch, the same on every replica). Tests
    /// shorten it.
    pub window: Duration,
    /// The window `tokens_per_day` counts in: a day (from 00:00 UTC).
    pub day: Duration,
    /// How long a concurrency slot outlives its replica's last renewal (15 s): a dead
    /// replica's slots free themselves within it.
    pub slot_ttl: Duration,
}

impl Default for Limits {
    /// [`TenantLimits::DEFAULT`] for every tenant.
    fn default() -> Self {
        Limits {
            defaults: TenantLimits::DEFAULT,
            ..Limits::none()
        }
    }
}

impl Limits {
    /// No limits.
    pub fn none() -> Self {
        Limits {
            defaults: TenantLimits::default(),
            tenants: BTreeMap::new(),
            window: Duration::from_secs(60),
            day: Duration::from_secs(24 * 60 * 60),
            slot_ttl: Duration::from_secs(15),
        }
    }

    hermes_core::setters! {
        /// With these defaults for every tenant.
        defaults: TenantLimits;
        /// With this counting window.
        window: Duration;
        /// With this day (tests shorten it).
        day: Duration;
        /// With this slot TTL.
        slot_ttl: Duration;
    }

    /// With `limits` for `tenant` (its unset ones the defaults').
    pub fn tenant(mut self, tenant: impl Into<String>, limits: TenantLimits) -> Self {
        self.tenants.insert(tenant.into(), limits);
        self
    }

    /// `tenant`'s limits.
    pub fn of(&self, tenant: &str) -> TenantLimits {
        self.tenants
            .get(tenant)
            .copied()
            .unwrap_or_default()
            .or(self.defaults)
    }

    fn is_none(&self) -> bool {
        self.defaults == TenantLimits::default()
            && self.tenants.values().all(|t| *t == TenantLimits::default())
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Whether `at` is past the mark `swept` holds, which it then becomes: true once per mark (a
/// sweep due at `at` runs once per replica); false too when the lock is poisoned.
fn first_past(swept: &Mutex<i64>, at: i64) -> bool {
    let Ok(mut swept) = swept.lock() else {
        return false;
    };
    if *swept >= at {
        return false;
    }
    *swept = at;
    true
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

/// How long a slot whose request ended is kept for the tenant's next request on this replica
/// before it is given back.
pub(crate) const SLOT_KEPT: Duration = Duration::from_secs(1);

/// How often the renewer looks for slots kept longer than [`SLOT_KEPT`].
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// The places a replica claims at once in a window of `limit` requests: a sixteenth of a
/// shard's share (a minute of 600: 4), at least 1 and at most 16.
pub(crate) fn lease_size(limit: u32) -> u32 {
    let shares = hermes_engine::store::rate_shares(limit);
    let share = shares.last().copied().unwrap_or(1);
    (share / 16).clamp(1, 16)
}

/// What this replica knows of a tenant's current rate window.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// Its start (Unix ms).
    start: i64,
    /// The shards it found full (bit `i`: shard `i`).
    full: u64,
    /// Places it claimed and has not used yet: requests it admits without a statement.
    leased: u32,
}

/// A slot kept after its request ended: its number, its holder, since when.
struct Idle {
    slot: i64,
    holder: String,
    since: std::time::Instant,
}

/// This replica's state: the limits, which windows it found full, the slots it holds.
pub(crate) struct Limiter {
    store: Store,
    limits: Limits,
    /// Per tenant: the window this replica counted in last.
    windows: Mutex<HashMap<String, Window>>,
    /// The latest window whose old rows this replica swept.
    swept: Mutex<i64>,
    /// The latest day whose old usage rows this replica swept.
    swept_usage: Mutex<i64>,
    /// The holders of this replica's slots, running or kept (renewed together).
    held: Mutex<HashSet<String>>,
    /// Per tenant: the slots kept for its next requests, newest last.
    idle: Mutex<HashMap<String, Vec<Idle>>>,
    /// Whether the renewer runs.
    renewing: std::sync::Once,
    /// Shard the next request starts at (spreads this replica's requests over the rows).
    next_shard: std::sync::atomic::AtomicU32,
    /// Per tenant: its spend as this replica read it last, and what this replica's turns spent
    /// since ([`Limiter::charge`]).
    spent: Mutex<HashMap<String, Spent>>,
}

/// A tenant's spend as read ([`Store::tenant_tokens`]) for one minute window and one day.
#[derive(Clone, Copy, Debug)]
struct Spent {
    minute_start: i64,
    day_start: i64,
    minute: u64,
    today: u64,
    read: std::time::Instant,
}

/// How long a replica goes by a tenant's spend it read (adding its own turns' tokens): what
/// other replicas spent reaches its admissions within it.
pub(crate) const SPEND_READ_EVERY: Duration = Duration::from_millis(500);

/// What a request holds while it runs: its concurrency slot, given back when the last clone
/// is dropped (the gate puts one in the request's extensions, the handler or stream keeps it).
#[derive(Clone)]
pub(crate) struct Admitted {
    /// Held for its drop, which gives the slot back.
    _slot: Option<Arc<Slot>>,
}

/// A claimed concurrency slot: the limiter, the tenant, the slot number and its holder.
struct Slot(Arc<Limiter>, String, i64, String);

impl Admitted {
    /// A turn no limit applies to.
    pub(crate) fn unlimited() -> Self {
        Admitted { _slot: None }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (tenant, slot, holder) = (
            std::mem::take(&mut self.1),
            self.2,
            std::mem::take(&mut self.3),
        );
        // Kept for the tenant's next request; the renewer gives it back once it was kept
        // [`SLOT_KEPT`] (and, the process dying, it frees itself when its expiry passes).
        if let Ok(mut idle) = self.0.idle.lock() {
            idle.entry(tenant).or_default().push(Idle {
                slot,
                holder,
                since: std::time::Instant::now(),
            });
        }
    }
}

impl Drop for Limiter {
    /// Gives back the slots kept idle (the gateway stopping), off any request's path.
    fn drop(&mut self) {
        let holders: Vec<String> = match self.idle.get_mut() {
            Ok(idle) => idle
                .drain()
                .flat_map(|(_, v)| v)
                .map(|i| i.holder)
                .collect(),
            Err(_) => return,
        };
        if holders.is_empty() {
            return;
        }
        let store = self.store.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = store.release_slots(&holders).await {
                    tracing::warn!(error = %e, "kept concurrency slots were not given back; they expire");
                }
            });
        }
    }
}

impl Limiter {
    /// A limiter over `store`; `None` when `limits` limit nothing.
    pub(crate) fn new(store: Store, limits: Limits) -> Option<Arc<Limiter>> {
        if limits.is_none() {
            return None;
        }
        let seed = u32::try_from(uuid::Uuid::now_v7().as_u128() % (1 << 32)).unwrap_or(0);
        Some(Arc::new(Limiter {
            store,
            limits,
            windows: Mutex::new(HashMap::new()),
            swept: Mutex::new(0),
            swept_usage: Mutex::new(0),
            held: Mutex::new(HashSet::new()),
            idle: Mutex::new(HashMap::new()),
            renewing: std::sync::Once::new(),
            next_shard: std::sync::atomic::AtomicU32::new(seed),
            spent: Mutex::new(HashMap::new()),
        }))
    }

    /// Admits one turn of `tenant`, or its 429 (503 when the store does not answer).
    pub(crate) async fn admit(self: &Arc<Self>, tenant: &str) -> Result<Admitted, ApiError> {
        let limits = self.limits.of(tenant);
        if limits.tokens_per_minute.is_some() || limits.tokens_per_day.is_some() {
            self.spend(tenant, limits).await?;
        }
        if let Some(rpm) = limits.requests_per_minute {
            self.count(tenant, rpm.get()).await?;
        }
        let Some(max) = limits.max_concurrent else {
            return Ok(Admitted { _slot: None });
        };
        self.start_renewer();
        // A slot this replica kept from the tenant's last request: no statement.
        let kept = self
            .idle
            .lock()
            .ok()
            .and_then(|mut idle| idle.get_mut(tenant).and_then(Vec::pop));
        if let Some(Idle { slot, holder, .. }) = kept {
            return Ok(Admitted {
                _slot: Some(Arc::new(Slot(
                    self.clone(),
                    tenant.to_owned(),
                    slot,
                    holder,
                ))),
            });
        }
        let holder = uuid::Uuid::now_v7().simple().to_string();
        // Held before the claim, so a renewal racing the claim keeps it.
        if let Ok(mut held) = self.held.lock() {
            held.insert(holder.clone());
        }
        let claimed = self
            .store
            .claim_slot(tenant, max.get(), &holder, self.limits.slot_ttl)
            .await;
        let claimed = match claimed {
            Ok(Some(slot)) => Ok(slot),
            Ok(None) => Err(ApiError::rate_limited(
                format!(
                    "tenant `{tenant}` has {max} requests running, its limit (max_concurrent); \
                     retry when one ends"
                ),
                Duration::from_secs(1),
            )),
            Err(e) => Err(unavailable(&e)),
        };
        match claimed {
            Ok(slot) => Ok(Admitted {
                _slot: Some(Arc::new(Slot(
                    self.clone(),
                    tenant.to_owned(),
                    slot,
                    holder,
                ))),
            }),
            Err(error) => {
                if let Ok(mut held) = self.held.lock() {
                    held.remove(&holder);
                }
                Err(error)
            }
        }
    }

    /// Counts one request of `tenant` in the current window of `limit`, or its 429.
    ///
    /// A claim that comes back once the window after next has begun may have run after a
    /// replica swept its window's rows ([`Limiter::sweep`] deletes windows before the previous
    /// one) and started them again from nothing, past the limit: the request is counted again,
    /// in the window that is current then (its place in the old window is lost, as a lease's
    /// unused places are). A store that answers that late three times running is unavailable.
    async fn count(&self, tenant: &str, limit: u32) -> Result<(), ApiError> {
        for _ in 0..3 {
            if self.count_once(tenant, limit).await? {
                return Ok(());
            }
        }
        tracing::error!(
            tenant,
            "the limits store answered each claim after its window"
        );
        Err(ApiError::unavailable(
            "the gateway cannot check its limits right now",
        ))
    }

    /// [`Limiter::count`]'s one claim: `true` when counted, `false` when the claim came back
    /// too late to count, the 429 when the window is full.
    async fn count_once(&self, tenant: &str, limit: u32) -> Result<bool, ApiError> {
        let window = millis(self.limits.window);
        let now = now_ms();
        let start = now - now.rem_euclid(window);
        let retry_after = Duration::from_millis(u64::try_from(start + window - now).unwrap_or(1));
        let full = {
            let mut windows = self.windows.lock().map_err(|_| poisoned())?;
            let fresh = Window {
                start,
                full: 0,
                leased: 0,
            };
            let entry = windows.entry(tenant.to_owned()).or_insert(fresh);
            if entry.start != start {
                *entry = fresh;
            }
            if entry.leased > 0 {
                entry.leased -= 1;
                return Ok(true);
            }
            entry.full
        };
        let refused = || {
            let mut refused = ApiError::rate_limited(
                format!(
                    "tenant `{tenant}` is over its limit of {limit} requests per minute \
                     (requests_per_minute); retry after the window ends"
                ),
                retry_after,
            );
            refused.window = Some(Box::new(crate::error::RateWindow {
                counted: crate::error::Counted::Requests,
                limit: u64::from(limit),
                remaining: 0,
                reset: retry_after,
            }));
            refused
        };
        if full == (1u64 << hermes_engine::store::rate_shares(limit).len()) - 1 {
            return Err(refused());
        }
        self.sweep(start);
        let first = self
            .next_shard
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let admission = self
            .store
            .admit_request(tenant, start, limit, first, full, lease_size(limit))
            .await
            .map_err(|e| unavailable(&e))?;
        if now_ms() >= start + 2 * window {
            return Ok(false);
        }
        if let Ok(mut windows) = self.windows.lock()
            && let Some(entry) = windows.get_mut(tenant)
            && entry.start == start
        {
            entry.full |= admission.full;
            entry.leased += admission.granted.saturating_sub(1);
        }
        if admission.admitted {
            Ok(true)
        } else {
            Err(refused())
        }
    }

    /// Refuses a turn of `tenant` whose stored spend this minute or this UTC day is at its
    /// limit: a 429 until the window ends, with the token headers.
    async fn spend(&self, tenant: &str, limits: TenantLimits) -> Result<(), ApiError> {
        let (window, day) = (millis(self.limits.window), millis(self.limits.day));
        let now = now_ms();
        let minute_start = now - now.rem_euclid(window);
        let day_start = now - now.rem_euclid(day);
        self.sweep_usage(day_start - day);
        let (minute, today) = self.spend_of(tenant, minute_start, day_start).await?;
        let until = |start: i64, length: i64| {
            Duration::from_millis(u64::try_from(start + length - now).unwrap_or(1))
        };
        let over = [
            (
                limits.tokens_per_minute,
                minute,
                until(minute_start, window),
                "this minute",
                "tokens_per_minute",
            ),
            (
                limits.tokens_per_day,
                today,
                until(day_start, day),
                "today (UTC)",
                "tokens_per_day",
            ),
        ];
        for (limit, used, reset, when, key) in over {
            let Some(limit) = limit else { continue };
            if used < limit.get() {
                continue;
            }
            let mut refused = ApiError::rate_limited(
                format!(
                    "tenant `{tenant}` has used {used} tokens {when}, its limit of {limit} \
                     ({key}); retry after the window ends"
                ),
                reset,
            );
            refused.window = Some(Box::new(crate::error::RateWindow {
                counted: crate::error::Counted::Tokens,
                limit: limit.get(),
                remaining: 0,
                reset,
            }));
            return Err(refused);
        }
        Ok(())
    }

    /// `tenant`'s tokens this minute and today: as read within [`SPEND_READ_EVERY`] for the
    /// same windows, with this replica's turns since added, else read now.
    async fn spend_of(
        &self,
        tenant: &str,
        minute_start: i64,
        day_start: i64,
    ) -> Result<(u64, u64), ApiError> {
        if let Ok(spent) = self.spent.lock()
            && let Some(s) = spent.get(tenant)
            && s.minute_start == minute_start
            && s.day_start == day_start
            && s.read.elapsed() < SPEND_READ_EVERY
        {
            return Ok((s.minute, s.today));
        }
        let (minute, today) = self
            .store
            .tenant_tokens(tenant, minute_start, day_start)
            .await
            .map_err(|e| unavailable(&e))?;
        if let Ok(mut spent) = self.spent.lock() {
            spent.insert(
                tenant.to_owned(),
                Spent {
                    minute_start,
                    day_start,
                    minute,
                    today,
                    read: std::time::Instant::now(),
                },
            );
        }
        Ok((minute, today))
    }

    /// Adds `tokens` a turn of `tenant` spent (a reply's input and output, as the store records
    /// them) to the spend this replica read, so its next admissions count them before the
    /// spend is read again.
    pub(crate) fn charge(&self, tenant: &str, tokens: u64) {
        if let Ok(mut spent) = self.spent.lock()
            && let Some(s) = spent.get_mut(tenant)
        {
            s.minute = s.minute.saturating_add(tokens);
            s.today = s.today.saturating_add(tokens);
        }
    }

    /// Once per day per replica, off the request path: deletes the usage rows recorded before
    /// `before` (the day before the current one).
    fn sweep_usage(&self, before: i64) {
        if !first_past(&self.swept_usage, before) {
            return;
        }
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.sweep_tenant_usage(before).await {
                tracing::warn!(error = %e, "sweeping old tenant usage failed");
            }
        });
    }

    /// Once per window per replica, off the request path: deletes the rows of windows before
    /// the previous one.
    fn sweep(&self, start: i64) {
        if !first_past(&self.swept, start) {
            return;
        }
        let store = self.store.clone();
        let before = start - millis(self.limits.window);
        tokio::spawn(async move {
            if let Err(e) = store.sweep_rate_counts(before).await {
                tracing::warn!(error = %e, "sweeping old rate counts failed");
            }
        });
    }

    /// The holders of the slots kept longer than [`SLOT_KEPT`], taken out of the kept and the
    /// held ones.
    fn expired_idle(&self) -> Vec<String> {
        let mut gone = Vec::new();
        if let Ok(mut idle) = self.idle.lock() {
            // Each tenant's kept slots are oldest first (a drop pushes, a turn pops the newest):
            // the expired ones are a prefix.
            for kept in idle.values_mut() {
                let expired = kept
                    .iter()
                    .take_while(|i| i.since.elapsed() >= SLOT_KEPT)
                    .count();
                gone.extend(kept.drain(..expired).map(|i| i.holder));
            }
            idle.retain(|_, kept| !kept.is_empty());
        }
        if !gone.is_empty()
            && let Ok(mut held) = self.held.lock()
        {
            for holder in &gone {
                held.remove(holder);
            }
        }
        gone
    }

    /// Starts the task that gives back the slots kept longer than [`SLOT_KEPT`] and renews
    /// this replica's slots every third of the TTL; it stops when the limiter is dropped.
    fn start_renewer(self: &Arc<Self>) {
        self.renewing.call_once(|| {
            let limiter: Weak<Limiter> = Arc::downgrade(self);
            let every = self.limits.slot_ttl / 3;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(IDLE_CHECK.min(every));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut renewed = tokio::time::Instant::now();
                loop {
                    tick.tick().await;
                    let Some(limiter) = limiter.upgrade() else {
                        return;
                    };
                    let gone = limiter.expired_idle();
                    if !gone.is_empty()
                        && let Err(e) = limiter.store.release_slots(&gone).await
                    {
                        tracing::warn!(error = %e, slots = gone.len(), "kept concurrency slots were not given back; they expire");
                    }
                    if renewed.elapsed() < every {
                        continue;
                    }
                    renewed = tokio::time::Instant::now();
                    let holders: Vec<String> = match limiter.held.lock() {
                        Ok(held) => held.iter().cloned().collect(),
                        Err(_) => return,
                    };
                    if holders.is_empty() {
                        continue;
                    }
                    if let Err(e) = limiter
                        .store
                        .renew_slots(&holders, limiter.limits.slot_ttl)
                        .await
                    {
                        tracing::warn!(error = %e, slots = holders.len(), "renewing concurrency slots failed");
                    }
                }
            });
        });
    }
}

fn unavailable(e: &hermes_engine::store::StoreError) -> ApiError {
    tracing::error!(error = %e, "the limits store did not answer");
    ApiError::unavailable("the gateway cannot check its limits right now")
}

fn poisoned() -> ApiError {
    ApiError::unavailable("the gateway's limiter failed")
}
