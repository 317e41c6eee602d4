//! Gateway keys on the store every replica shares: a key opens both replicas' doors, a key
//! revoked through the store (alone, or with all of its tenant's) is refused by both within one
//! second with no restart, and a key's use is recorded as its last use.

use std::time::{Duration, Instant};

use hermes_sim::Sim;
use hermes_store::testing::TestDb;

use crate::{Running, hello, replica};

/// `POST /v1/chat/completions` on `gateway` with `key`: the status.
async fn status(gateway: &Running, key: &str) -> u16 {
    reqwest::Client::new()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&hello("hello"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Both replicas refuse `key` (401) to a request that reaches them one second after `since`,
/// the revocation. The guarantee is of when a request arrives, not of how fast it is answered:
/// the check waits out the second and then asks each replica, so a loaded machine's slow
/// answers do not fail it, and a replica that still accepts the key fails it however fast.
async fn refused_by_both_within_a_second(replicas: &[Running; 2], key: &str, since: Instant) {
    tokio::time::sleep_until((since + Duration::from_secs(1)).into()).await;
    for gateway in replicas {
        assert_eq!(
            status(gateway, key).await,
            401,
            "replica {} still accepts a revoked key after 1 s",
            gateway.addr
        );
    }
}

both!(a_revoked_key_is_refused_by_every_replica_within_a_second);
async fn a_revoked_key_is_refused_by_every_replica_within_a_second(db: TestDb) {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let replicas = [
        replica(db.open().await, &sim.base_url(), |c| c).await,
        replica(db.open().await, &sim.base_url(), |c| c).await,
    ];
    let admin = db.open().await;
    let key = admin.add_gateway_key("acme").await.unwrap();
    let second = admin.add_gateway_key("acme").await.unwrap();
    let third = admin.add_gateway_key("acme").await.unwrap();
    let other = admin.add_gateway_key("globex").await.unwrap();
    for gateway in &replicas {
        for k in [&key, &second, &third, &other] {
            assert_eq!(status(gateway, k).await, 200);
        }
    }

    // Its use was recorded (in the background, once per minute per replica).
    let id = hermes_store::gateway_key_id(&key).unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let keys = admin.gateway_keys(Some("acme")).await.unwrap();
        let used = keys.iter().find(|k| k.id == id).unwrap().last_used_at;
        if used.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the key's last use was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // One key revoked through the store: both replicas refuse it within a second.
    assert!(admin.revoke_gateway_key(&format!("hk_{id}")).await.unwrap());
    refused_by_both_within_a_second(&replicas, &key, Instant::now()).await;
    for gateway in &replicas {
        assert_eq!(status(gateway, &second).await, 200);
    }
    // The tenant's keys revoked whole: both replicas refuse each; the other tenant's still works.
    assert_eq!(admin.revoke_tenant_keys("acme").await.unwrap(), 2);
    let since = Instant::now();
    refused_by_both_within_a_second(&replicas, &second, since).await;
    refused_by_both_within_a_second(&replicas, &third, since).await;
    for gateway in &replicas {
        assert_eq!(status(gateway, &other).await, 200);
    }
    for gateway in replicas {
        gateway.stop().await;
    }
}
