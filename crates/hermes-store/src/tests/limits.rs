//! The gateway's shared limits and key admin in the store (issue 32), on both backends: the
//! sharded rate count never admits more than the limit however many handles race, slots are
//! claimed up to the maximum and free themselves when their expiry passes, and a key's last use
//! and a tenant's revocation are recorded.

use std::time::Duration;

use super::acme_twice_and_globex;
use crate::testing::TestDb;
use crate::{RATE_SHARDS, Store, rate_shares};

#[test]
fn shares_sum_to_the_limit_over_at_most_the_shard_count() {
    for limit in [1, 2, 7, 8, 9, 60, 1000, 1001] {
        let shares = rate_shares(limit);
        assert_eq!(shares.iter().sum::<u32>(), limit, "{limit}");
        assert!(shares.len() <= RATE_SHARDS as usize);
        assert!(shares.iter().all(|s| *s >= 1), "{limit}: {shares:?}");
    }
}

both!(
    racing_handles_admit_exactly_the_limit_of_a_window,
    multi_thread
);
async fn racing_handles_admit_exactly_the_limit_of_a_window(db: TestDb) {
    let handles = [db.open().await, db.open().await];
    let limit = 37;
    let window = 1_000_000;
    let mut tasks = Vec::new();
    for t in 0..32u32 {
        let store: Store = handles[t as usize % 2].clone();
        tasks.push(tokio::spawn(async move {
            let (mut admitted, mut full) = (0, 0u64);
            for _ in 0..4 {
                // A third of the racers claim one place at a time, the others two or three
                // (a replica's lease of places it admits later without a statement).
                let a = store
                    .admit_request("acme", window, limit, t, full, t % 3 + 1)
                    .await
                    .unwrap();
                full = a.full;
                assert_eq!(a.admitted, a.granted > 0);
                assert!(a.granted <= t % 3 + 1);
                admitted += a.granted;
            }
            admitted
        }));
    }
    let mut admitted = 0;
    for task in tasks {
        admitted += task.await.unwrap();
    }
    // 128 claims of up to three for 37 places: every place is taken, none twice.
    assert_eq!(admitted, limit);
    assert_eq!(
        handles[0].admitted_requests("acme", window).await.unwrap(),
        u64::from(limit)
    );
    // Another tenant and the next window count from zero.
    let other = handles[1]
        .admit_request("globex", window, 1, 0, 0, 1)
        .await
        .unwrap();
    assert!(other.admitted && other.window_full);
    let next = handles[1]
        .admit_request("acme", window + 60_000, limit, 0, 0, 1)
        .await
        .unwrap();
    assert!(next.admitted);
    // A full window refuses without a statement once the caller knows it is full.
    let refused = handles[0]
        .admit_request("acme", window, limit, 3, 0, 1)
        .await
        .unwrap();
    assert!(!refused.admitted && refused.window_full);
    // Sweeping drops the old window only.
    assert!(handles[0].sweep_rate_counts(window + 1).await.unwrap() > 0);
    assert_eq!(
        handles[0].admitted_requests("acme", window).await.unwrap(),
        0
    );
    assert_eq!(
        handles[0]
            .admitted_requests("acme", window + 60_000)
            .await
            .unwrap(),
        1
    );
}

both!(
    slots_are_claimed_up_to_the_maximum_and_free_themselves_when_they_expire,
    multi_thread
);
async fn slots_are_claimed_up_to_the_maximum_and_free_themselves_when_they_expire(db: TestDb) {
    let (a, b) = (db.open().await, db.open().await);
    // Live holders' slots outlast any pause of a loaded machine; only the one left to expire
    // (`next`, as a dead replica's) has a short life.
    let ttl = Duration::from_secs(60);
    let short = Duration::from_millis(800);
    let mut tasks = Vec::new();
    for i in 0..12 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            store
                .claim_slot("acme", 3, &format!("holder-{i}"), ttl)
                .await
                .unwrap()
                .map(|slot| (slot, format!("holder-{i}")))
        }));
    }
    let mut held = Vec::new();
    for task in tasks {
        held.extend(task.await.unwrap());
    }
    assert_eq!(held.len(), 3, "{held:?}");
    assert_eq!(a.slots_in_use("acme").await.unwrap(), 3);
    // Another tenant has slots of its own.
    assert!(b.claim_slot("globex", 1, "g", ttl).await.unwrap().is_some());
    // Released: claimable again at once.
    let (_, holder) = held.pop().unwrap();
    assert_eq!(
        a.release_slots(std::slice::from_ref(&holder))
            .await
            .unwrap(),
        1
    );
    assert!(
        b.claim_slot("acme", 3, "next", short)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        b.claim_slot("acme", 3, "refused", ttl)
            .await
            .unwrap()
            .is_none()
    );
    // The unrenewed one (`next`, as a dead replica's) frees itself; the renewed ones stay.
    let renewing: Vec<String> = held.iter().map(|(_, h)| h.clone()).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let freed = loop {
        assert_eq!(a.renew_slots(&renewing, ttl).await.unwrap(), 2);
        if let Some(slot) = b.claim_slot("acme", 3, "after", ttl).await.unwrap() {
            break slot;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(held.iter().all(|(slot, _)| *slot != freed));
    // A renewal moves a slot's expiry on: claimed for 2 s and renewed at once for a minute, it
    // is still held after the 2 s.
    let life = Duration::from_secs(2);
    assert!(
        a.claim_slot("initech", 1, "x", life)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(a.renew_slots(&["x".to_owned()], ttl).await.unwrap(), 1);
    tokio::time::sleep(life + Duration::from_millis(500)).await;
    assert!(
        b.claim_slot("initech", 1, "y", ttl)
            .await
            .unwrap()
            .is_none()
    );
}

both!(a_keys_last_use_is_recorded_and_a_tenant_is_revoked_whole);
async fn a_keys_last_use_is_recorded_and_a_tenant_is_revoked_whole(db: TestDb) {
    let store = db.open().await;
    let [first, second, other] = acme_twice_and_globex(&store).await;
    let id = crate::gateway_key_id(&first).unwrap();
    let listed = store.gateway_keys(None).await.unwrap();
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|k| k.last_used_at.is_none()));
    store.touch_gateway_key(id, 5_000).await.unwrap();
    // An older use does not move it back.
    store.touch_gateway_key(id, 4_000).await.unwrap();
    let listed = store.gateway_keys(Some("acme")).await.unwrap();
    let used: Vec<_> = listed
        .iter()
        .map(|k| (k.id.as_str(), k.last_used_at))
        .collect();
    assert!(used.contains(&(id, Some(5_000))), "{used:?}");
    assert_eq!(store.revoke_tenant_keys("acme").await.unwrap(), 2);
    assert_eq!(store.tenant_for_key(&first).await.unwrap(), None);
    assert_eq!(store.tenant_for_key(&second).await.unwrap(), None);
    assert_eq!(
        store.tenant_for_key(&other).await.unwrap().as_deref(),
        Some("globex")
    );
    assert_eq!(store.revoke_tenant_keys("acme").await.unwrap(), 0);
}
