//! The gateway's store (docs/spec.md §10): gateway keys, tenants and partitions on sessions, the
//! match keys on messages and the lookup that finds a conversation by them, on both backends.

use std::time::Duration;

use hermes_core::{Message, Role, ToolCall, match_key};
use sqlx::Row as _;

use super::{acme_twice_and_globex, compact_one};
use crate::gateway::find_sql;
use crate::testing::TestDb;
use crate::{Appended, Backend, Found, NewSession, Store};

fn user(text: &str) -> Message {
    Message::text(Role::User, text)
}

fn assistant(text: &str) -> Message {
    Message::text(Role::Assistant, text)
}

/// An assistant message calling `f` with id `id`, then its result.
fn call(id: &str) -> [Message; 2] {
    let mut call = Message::text(Role::Assistant, "");
    call.content = None;
    call.tool_calls = Some(vec![ToolCall::function(id, "f", r#"{"a":1}"#)]);
    let mut result = Message::text(Role::Tool, "ok");
    result.tool_call_id = Some(id.to_owned());
    [call, result]
}

/// The match keys of `messages`' assistant messages, in order (what the gateway passes).
fn keys(messages: &[Message]) -> Vec<String> {
    messages.iter().filter_map(match_key).collect()
}

async fn session_of(
    store: &Store,
    tenant: Option<&str>,
    partition: Option<&str>,
    messages: &[Message],
) -> String {
    store
        .create_with_messages(
            &NewSession {
                tenant: tenant.map(Into::into),
                partition: partition.map(Into::into),
                ..NewSession::default()
            },
            messages,
        )
        .await
        .unwrap()
}

/// [`Store::find_by_keys`] with the match keys of `history`.
async fn find(
    store: &Store,
    tenant: &str,
    partition: Option<&str>,
    history: &[Message],
) -> Option<Found> {
    store
        .find_by_keys(tenant, partition, &keys(history))
        .await
        .unwrap()
}

/// Lets the clock move on, so the next change has a later `updated_at` (milliseconds).
async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// The stored `match_key` of every row of a session, in position order.
async fn stored_keys(store: &Store, id: &str) -> Vec<Option<String>> {
    sqlx::query("SELECT match_key FROM messages WHERE session_id = $1 ORDER BY position")
        .bind(id)
        .fetch_all(&store.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<Option<String>, _>(0).unwrap())
        .collect()
}

/// The session `find_by_keys` finds for `tenant` (no route) by the keys `k`; panics when none.
async fn found_session(store: &Store, tenant: &str, k: &[String]) -> String {
    store
        .find_by_keys(tenant, None, k)
        .await
        .unwrap()
        .unwrap()
        .session
}

/// What a lookup found: `session`, at `position`, by its key `key_index`.
fn hit(session: String, position: i64, key_index: usize) -> Found {
    Found {
        session,
        position,
        key_index,
    }
}

/// The tenant [`Store::tenant_for_key_cached`] finds for `key` through `cache`.
async fn cached(store: &Store, key: &str, cache: &crate::KeyCache) -> Option<String> {
    store.tenant_for_key_cached(key, cache).await.unwrap()
}

/// The conversations of `tenant` (in `partition`) [`Store::find_by_chain`] finds by `keys`.
async fn chained(
    store: &Store,
    tenant: &str,
    partition: Option<&str>,
    keys: &[&str],
) -> Vec<String> {
    store
        .find_by_chain(tenant, partition, keys, 8)
        .await
        .unwrap()
        .candidates
}

both!(a_cached_key_row_still_checks_the_secret_and_lapses_with_its_lifetime);
async fn a_cached_key_row_still_checks_the_secret_and_lapses_with_its_lifetime(db: TestDb) {
    let store = db.open().await;
    let [key, _, other] = acme_twice_and_globex(&store).await;
    let cache = crate::KeyCache::new(std::time::Duration::from_millis(300));
    assert_eq!(cached(&store, &key, &cache).await.as_deref(), Some("acme"));
    // The row is cached, the secret is not: a wrong one is refused, another key is its own.
    let flipped = format!(
        "{}{}",
        &key[..key.len() - 1],
        if key.ends_with('0') { '1' } else { '0' }
    );
    assert_eq!(cached(&store, &flipped, &cache).await, None);
    assert_eq!(
        cached(&store, &other, &cache).await.as_deref(),
        Some("globex")
    );
    // Revoked elsewhere: refused once the row's lifetime is over.
    let id = crate::gateway_key_id(&key).unwrap().to_owned();
    assert!(db.open().await.revoke_gateway_key(&id).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(cached(&store, &key, &cache).await, None);
}

both!(a_gateway_key_names_its_tenant_and_nothing_else_does);
async fn a_gateway_key_names_its_tenant_and_nothing_else_does(db: TestDb) {
    let store = db.open().await;
    let [key, second, other] = acme_twice_and_globex(&store).await;
    assert_ne!(key, second);
    let (id, secret) = key.strip_prefix("hk_").unwrap().split_once('_').unwrap();
    assert_eq!((id.len(), secret.len()), (16, 64), "{key}");
    assert_eq!(
        store.tenant_for_key(&key).await.unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(
        store.tenant_for_key(&second).await.unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(
        store.tenant_for_key(&other).await.unwrap().as_deref(),
        Some("globex")
    );

    // A wrong secret, an unknown id, another key's id with this secret, malformed keys.
    let flipped = format!(
        "{}{}",
        &key[..key.len() - 1],
        if key.ends_with('0') { '1' } else { '0' }
    );
    let (other_id, _) = other.strip_prefix("hk_").unwrap().split_once('_').unwrap();
    for bad in [
        flipped,
        format!("hk_{}_{secret}", "0".repeat(16)),
        format!("hk_{other_id}_{secret}"),
        String::new(),
        "Bearer sk-something".to_owned(),
        key.to_uppercase(),
        format!("{key}0"),
        key[..key.len() - 2].to_owned(),
    ] {
        assert_eq!(store.tenant_for_key(&bad).await.unwrap(), None, "{bad}");
    }

    let listed = store.gateway_keys(Some("acme")).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|k| k.tenant == "acme"));
    assert!(listed.iter().any(|k| k.id == id));
    assert!(listed.iter().all(|k| !key.contains(&k.id) || k.id == id));
    assert!(store.gateway_keys(Some("nobody")).await.unwrap().is_empty());

    // Revoked: the key stops working, the tenant's other key does not.
    assert!(store.revoke_gateway_key(id).await.unwrap());
    assert_eq!(store.tenant_for_key(&key).await.unwrap(), None);
    assert_eq!(
        store.tenant_for_key(&second).await.unwrap().as_deref(),
        Some("acme")
    );
    assert!(!store.revoke_gateway_key(id).await.unwrap());
    // What does not start with an id names none (and is not looked up).
    for bad in ["", "hk_", "hk_zz", &second[3..].replace('_', "")] {
        assert_eq!(crate::revocable_key_id(bad), None, "{bad}");
        assert!(!store.revoke_gateway_key(bad).await.unwrap(), "{bad}");
    }
    // The whole key is accepted too.
    assert!(store.revoke_gateway_key(&second).await.unwrap());
    assert!(store.gateway_keys(Some("acme")).await.unwrap().is_empty());

    assert!(store.add_gateway_key("  ").await.is_err());
    assert!(store.add_gateway_key("a\u{7}b").await.is_err());
}

both!(a_gateway_key_secret_is_stored_nowhere);
async fn a_gateway_key_secret_is_stored_nowhere(db: TestDb) {
    let store = db.open().await;
    let key = store.add_gateway_key("acme").await.unwrap();
    let (_, secret) = key.strip_prefix("hk_").unwrap().split_once('_').unwrap();
    let rows = sqlx::query("SELECT id, tenant, digest FROM gateway_keys")
        .fetch_all(&store.pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let texts: Vec<String> = (0..3).map(|i| rows[0].try_get(i).unwrap()).collect();
    for text in &texts {
        assert!(!text.contains(secret), "the secret is stored: {text}");
        assert!(!text.contains(&key), "the key is stored: {text}");
    }
    // What is stored is the secret's SHA-256.
    assert_eq!(texts[2], hermes_core::sha256_hex(secret.as_bytes()));
}

both!(match_keys_are_stored_on_every_insert_path);
async fn match_keys_are_stored_on_every_insert_path(db: TestDb) {
    let store = db.open().await;
    let [c, r] = call("call_1");
    let history = vec![user("hi"), assistant("hello"), user("do it"), c, r];
    let expected: Vec<Option<String>> = history.iter().map(match_key).collect();
    assert_eq!(
        expected.iter().map(Option::is_some).collect::<Vec<_>>(),
        [false, true, false, true, false]
    );

    let created = session_of(&store, Some("acme"), None, &history).await;
    assert_eq!(stored_keys(&store, &created).await, expected);

    let appended = store.create_session(&NewSession::default()).await.unwrap();
    store.append(&appended, &history).await.unwrap();
    assert_eq!(stored_keys(&store, &appended).await, expected);

    let file = hermes_core::parse_history(&serde_json::to_string(&history).unwrap()).unwrap();
    let imported = store.import(&file).await.unwrap();
    assert_eq!(stored_keys(&store, &imported).await, expected);

    // A branch stores no row of the prefix it shares; materialised (before its compaction),
    // the rows it takes over carry their keys as stored.
    let branched = store.branch(&created, Some(4)).await.unwrap();
    assert_eq!(stored_keys(&store, &branched).await, []);
    let summary = assistant("[Summary] of the branch");
    compact_one(&store, &branched, 0, &summary, true).await;
    let mut taken_over = expected[..4].to_vec();
    taken_over.push(match_key(&summary));
    assert_eq!(stored_keys(&store, &branched).await, taken_over);

    // Compare-and-append, at the tip and as a branch of a stale tip.
    let tip = store.tip(&created).await.unwrap();
    let more = vec![user("again"), assistant("done")];
    let continued = store.compare_and_append(&tip, &more).await.unwrap();
    assert!(!continued.branched());
    let stale = store.compare_and_append(&tip, &more).await.unwrap();
    let Appended::Branched { tip: branch_tip } = &stale else {
        panic!("a stale tip branches: {stale:?}");
    };
    let mut all = expected.clone();
    all.extend(more.iter().map(match_key));
    assert_eq!(stored_keys(&store, &created).await, all);
    assert_eq!(
        stored_keys(&store, branch_tip.session()).await,
        more.iter().map(match_key).collect::<Vec<_>>(),
        "a stale tip's branch stores only the new messages"
    );

    // A compaction's inserts.
    let checkpoint = assistant("[Summary] of it all");
    compact_one(&store, &created, 1, &checkpoint, true).await;
    let keys_now = stored_keys(&store, &created).await;
    assert_eq!(keys_now.last().unwrap(), &match_key(&checkpoint));
}

both!(the_latest_key_any_session_holds_decides_walking_back);
async fn the_latest_key_any_session_holds_decides_walking_back(db: TestDb) {
    let store = db.open().await;
    let [c1, r1] = call("call_1");
    let a = vec![
        user("q"),
        assistant("one"),
        user("q2"),
        c1.clone(),
        r1.clone(),
    ];
    let long = session_of(&store, Some("acme"), None, &a).await;
    tick().await;
    // A more recent session that holds only the first assistant message.
    let short = session_of(&store, Some("acme"), None, &a[..2]).await;

    // The whole history: its last assistant message is only in `long`.
    let found = find(&store, "acme", None, &a).await.unwrap();
    assert_eq!(found, hit(long.clone(), 3, 1));
    // The client edited its last assistant message: walking back, the first one decides, and
    // both sessions hold it — the most recently updated wins.
    let mut edited = a.clone();
    edited[3] = assistant("an edited reply");
    let found = find(&store, "acme", None, &edited).await.unwrap();
    assert_eq!(found, hit(short.clone(), 1, 0));
    // A tool call is found by its id whatever its arguments became.
    let mut reargued = c1.clone();
    reargued.tool_calls = Some(vec![ToolCall::function("call_1", "f", r#"{ "a" : 1 }"#)]);
    let found = find(&store, "acme", None, &[assistant("nowhere"), reargued])
        .await
        .unwrap();
    assert_eq!(
        (found.session.as_str(), found.position, found.key_index),
        (long.as_str(), 3, 1)
    );
    // Nothing held: no session.
    assert_eq!(
        find(&store, "acme", None, &[assistant("never said")]).await,
        None
    );
    assert_eq!(store.find_by_keys("acme", None, &[]).await.unwrap(), None);
    // A long history: the only key held is the first of 300, beyond the first query's chunk;
    // a key repeated later in the history counts where it was last seen.
    let mut many = keys(&a[..2]);
    many.extend((0..299).map(|i| format!("form:unheld{i}")));
    let found = store
        .find_by_keys("acme", None, &many)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.session.as_str(), found.key_index),
        (short.as_str(), 0)
    );
    many.push(many[0].clone());
    many.push("form:unheld-last".to_owned());
    let found = store
        .find_by_keys("acme", None, &many)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.key_index, 300);
}

both!(ties_go_to_the_most_recently_updated_session);
async fn ties_go_to_the_most_recently_updated_session(db: TestDb) {
    let store = db.open().await;
    let history = vec![user("q"), assistant("same answer")];
    let first = session_of(&store, Some("acme"), None, &history).await;
    tick().await;
    let second = session_of(&store, Some("acme"), None, &history).await;
    let k = keys(&history);
    let find = || store.find_by_keys("acme", None, &k);
    assert_eq!(find().await.unwrap().unwrap().session, second);
    tick().await;
    store.append(&first, &[user("more")]).await.unwrap();
    assert_eq!(find().await.unwrap().unwrap().session, first);
    // Within a session, the last row holding the key.
    tick().await;
    store
        .append(&second, &[user("q"), assistant("same answer")])
        .await
        .unwrap();
    assert_eq!(
        find().await.unwrap().unwrap(),
        Found {
            session: second,
            position: 3,
            key_index: 0
        }
    );
}

both!(a_tenant_never_finds_another_tenants_sessions);
async fn a_tenant_never_finds_another_tenants_sessions(db: TestDb) {
    let store = db.open().await;
    let [c, r] = call("call_shared");
    let history = vec![user("q"), assistant("a"), user("q2"), c, r];
    let acme = session_of(&store, Some("acme"), None, &history).await;
    tick().await;
    let globex = session_of(&store, Some("globex"), None, &history).await;
    tick().await;
    // A CLI session (no tenant) with the same history, the most recent of all.
    let cli = session_of(&store, None, None, &history).await;
    let k = keys(&history);
    assert_eq!(found_session(&store, "acme", &k).await, acme);
    assert_eq!(found_session(&store, "globex", &k).await, globex);
    assert_eq!(store.find_by_keys("initech", None, &k).await.unwrap(), None);
    assert_eq!(store.find_by_keys("", None, &k).await.unwrap(), None);
    // The walk never crosses either: acme's own older key beats globex's later one.
    store
        .append(&globex, &[user("q3"), assistant("globex only")])
        .await
        .unwrap();
    let mut longer = history.clone();
    longer.extend([user("q3"), assistant("globex only")]);
    let found = find(&store, "acme", None, &longer).await.unwrap();
    assert_eq!(
        (found.session.as_str(), found.key_index),
        (acme.as_str(), 1)
    );
    let meta = store.session(&cli).await.unwrap();
    assert_eq!((meta.tenant, meta.partition), (None, None));
    let meta = store.session(&acme).await.unwrap();
    assert_eq!(
        (meta.tenant.as_deref(), meta.partition),
        (Some("acme"), None)
    );
}

both!(a_partition_finds_only_its_own_sessions);
async fn a_partition_finds_only_its_own_sessions(db: TestDb) {
    let store = db.open().await;
    let history = vec![user("q"), assistant("a")];
    let alice = session_of(&store, Some("acme"), Some("alice"), &history).await;
    tick().await;
    let bob = session_of(&store, Some("acme"), Some("bob"), &history).await;
    tick().await;
    let none = session_of(&store, Some("acme"), None, &history).await;
    let k = keys(&history);
    let find = |p: Option<&'static str>| {
        let store = store.clone();
        let k = k.clone();
        async move {
            store
                .find_by_keys("acme", p, &k)
                .await
                .unwrap()
                .map(|f| f.session)
        }
    };
    assert_eq!(find(Some("alice")).await, Some(alice.clone()));
    assert_eq!(find(Some("bob")).await, Some(bob));
    assert_eq!(find(None).await, Some(none));
    assert_eq!(find(Some("carol")).await, None);
    // Another tenant's partition of the same name is not this one.
    assert_eq!(
        store
            .find_by_keys("globex", Some("alice"), &k)
            .await
            .unwrap(),
        None
    );
    let meta = store.session(&alice).await.unwrap();
    assert_eq!(meta.partition.as_deref(), Some("alice"));
}

both!(archived_rows_are_not_found);
async fn archived_rows_are_not_found(db: TestDb) {
    let store = db.open().await;
    let history = vec![
        user("q"),
        assistant("old answer"),
        user("q2"),
        assistant("kept"),
    ];
    let id = session_of(&store, Some("acme"), None, &history).await;
    let old = keys(&history[..2]);
    assert!(
        store
            .find_by_keys("acme", None, &old)
            .await
            .unwrap()
            .is_some()
    );
    store
        .compact(&id, &[0, 1], &[(0, user("[Summary] q, old answer"), true)])
        .await
        .unwrap();
    assert_eq!(store.find_by_keys("acme", None, &old).await.unwrap(), None);
    let found = find(&store, "acme", None, &history).await.unwrap();
    assert_eq!((found.session, found.position), (id, 3));
}

both!(branches_and_copies_keep_tenant_partition_and_keys);
async fn branches_and_copies_keep_tenant_partition_and_keys(db: TestDb) {
    let store = db.open().await;
    let history = vec![user("q"), assistant("a"), user("q2"), assistant("b")];
    let id = session_of(&store, Some("acme"), Some("alice"), &history).await;
    let tip = store.tip(&id).await.unwrap();
    store.append(&id, &[user("moved on")]).await.unwrap();
    tick().await;
    let appended = store
        .compare_and_append(&tip, &[user("q3"), assistant("c")])
        .await
        .unwrap();
    assert!(appended.branched());
    let branch = appended.session().to_owned();
    let meta = store.session(&branch).await.unwrap();
    assert_eq!(
        (meta.tenant.as_deref(), meta.partition.as_deref()),
        (Some("acme"), Some("alice"))
    );
    // The branch is found by its own new message; the shared prefix is stored once, by the
    // parent, which is where a history ending in it is found (the branch shares those rows).
    let mut longer = history.clone();
    longer.extend([user("q3"), assistant("c")]);
    let found = find(&store, "acme", Some("alice"), &longer).await.unwrap();
    assert_eq!(
        (found.session.as_str(), found.position),
        (branch.as_str(), 5)
    );
    let found = find(&store, "acme", Some("alice"), &history).await.unwrap();
    assert_eq!((found.session.as_str(), found.position), (id.as_str(), 3));

    let copy = store.branch(&id, Some(2)).await.unwrap();
    let meta = store.session(&copy).await.unwrap();
    assert_eq!(
        (meta.tenant.as_deref(), meta.partition.as_deref()),
        (Some("acme"), Some("alice"))
    );

    // Export and import keep them; a CLI session's file has neither key.
    let file = store.export(&id).await.unwrap();
    assert_eq!(
        (file.tenant.as_deref(), file.partition.as_deref()),
        (Some("acme"), Some("alice"))
    );
    let imported = store.import(&file).await.unwrap();
    let meta = store.session(&imported).await.unwrap();
    assert_eq!(
        (meta.tenant.as_deref(), meta.partition.as_deref()),
        (Some("acme"), Some("alice"))
    );
    let cli = session_of(&store, None, None, &history).await;
    let text = serde_json::to_string(&store.export(&cli).await.unwrap()).unwrap();
    assert!(
        !text.contains("tenant") && !text.contains("partition"),
        "{text}"
    );

    // A copy to another store keeps every session's tenant, partition and match keys.
    let dir = tempfile::tempdir().unwrap();
    let dest = Store::open(&dir.path().join("copy.db")).await.unwrap();
    store.copy_into(&dest).await.unwrap();
    for session in [&id, &branch, &copy, &imported, &cli] {
        let (a, b) = (
            store.session(session).await.unwrap(),
            dest.session(session).await.unwrap(),
        );
        assert_eq!((&a.tenant, &a.partition), (&b.tenant, &b.partition));
        assert_eq!(
            stored_keys(&store, session).await,
            stored_keys(&dest, session).await
        );
    }
    let found = find(&dest, "acme", Some("alice"), &longer).await.unwrap();
    assert_eq!(found.session, branch);
}

both!(the_lookups_use_the_match_and_chain_key_indexes);
async fn the_lookups_use_the_match_and_chain_key_indexes(db: TestDb) {
    let store = db.open().await;
    // One tenant with many sessions and rows: the planner has to choose between the tenant's
    // sessions and the keys. First as a store is in production (SQLite never gathers
    // statistics), then with statistics.
    for s in 0..30 {
        let history: Vec<Message> = (0..30)
            .flat_map(|i| [user(&format!("q{s}.{i}")), assistant(&format!("a{s}.{i}"))])
            .collect();
        session_of(&store, Some("acme"), None, &history).await;
    }
    let asked: Vec<Message> = (0..6).map(|i| assistant(&format!("a7.{i}"))).collect();
    let (explain, column) = match store.backend() {
        Backend::Sqlite => ("EXPLAIN QUERY PLAN ", "detail"),
        Backend::Postgres => ("EXPLAIN ", "QUERY PLAN"),
    };
    let plan_of = |sql: String, keys: Vec<String>, partitioned: bool| {
        let store = store.clone();
        async move {
            let mut query =
                sqlx::query(sqlx::AssertSqlSafe(format!("{explain}{sql}"))).bind("acme");
            for key in &keys {
                query = query.bind(key.clone());
            }
            if partitioned {
                query = query.bind("alice");
            }
            let rows = query.fetch_all(&store.pool).await.unwrap();
            let plan: Vec<String> = rows.iter().map(|r| r.try_get(column).unwrap()).collect();
            plan.join("\n")
        }
    };
    for analyzed in [false, true] {
        if analyzed {
            sqlx::query("ANALYZE").execute(&store.pool).await.unwrap();
        } else if store.backend() == Backend::Postgres {
            // PostgreSQL's autovacuum gathers statistics on its own; a fresh table has none.
            continue;
        }
        // Two keys, and six: an `IN` of three or more drove SQLite from the tenant's sessions.
        for n in [2, 6] {
            let k = keys(&asked[..n]);
            let chunk: Vec<(usize, &str)> =
                k.iter().enumerate().map(|(i, k)| (i, k.as_str())).collect();
            for partitioned in [false, true] {
                let plan = plan_of(find_sql(&chunk, partitioned), k.clone(), partitioned).await;
                assert!(
                    plan.contains("messages_match_key") && !plan.contains("sessions_tenant"),
                    "{n} match keys, analyzed {analyzed}: {plan}"
                );
                // The lookup, and the one statement that also reads the first one's view.
                for chained in [
                    crate::gateway::chain_sql(n, partitioned, 32),
                    crate::gateway::chain_view_sql(n, partitioned, 32),
                ] {
                    let plan = plan_of(chained, k.clone(), partitioned).await;
                    assert!(
                        !plan.contains("sessions_tenant"),
                        "{n} chain keys, analyzed {analyzed}: {plan}"
                    );
                    if store.backend() == Backend::Sqlite {
                        assert!(plan.contains("messages_chain_key"), "{plan}");
                    }
                }
            }
        }
    }
    let k = keys(&[assistant("a7.3"), assistant("a9.29")]);
    let found = store.find_by_keys("acme", None, &k).await.unwrap().unwrap();
    assert_eq!((found.position, found.key_index), (59, 1));
}

both!(one_signing_key_is_made_once_and_every_opener_reads_the_same);
async fn one_signing_key_is_made_once_and_every_opener_reads_the_same(db: TestDb) {
    let store = db.open().await;
    let (a, b) = tokio::join!(store.signing_key(), store.signing_key());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a, b, "two racing first uses agree on the oldest key");
    assert_eq!(a.secret.len(), 32);
    assert_eq!(a.id.len(), 16);
    // Another process on the same database reads the same key.
    let again = db.open().await.signing_key().await.unwrap();
    assert_eq!(again, a);
    let shown = format!("{a:?}");
    assert!(
        shown.contains(&a.id) && !shown.contains("secret: ["),
        "{shown}"
    );
}

both!(a_conversation_is_found_by_its_chain_key_however_many_share_its_reply);
async fn a_conversation_is_found_by_its_chain_key_however_many_share_its_reply(db: TestDb) {
    use hermes_core::{CHAIN_START, chain_keys};
    let store = db.open().await;
    // A question and the reply every conversation here gets.
    let exchange = |question: &str| {
        vec![
            Message::text(Role::User, question),
            Message::text(Role::Assistant, "Hello! How can I help?"),
        ]
    };
    let turn = |question: &str| {
        let mut turn = vec![Message::text(Role::System, "Be brief.")];
        turn.extend(exchange(question));
        turn
    };
    let gateway = |chain: Option<&str>| NewSession {
        tenant: Some("acme".into()),
        chain: chain.map(str::to_owned),
        ..NewSession::default()
    };
    // Ten conversations with the same reply, one of them the client's; one stored unchained.
    let mut ids = Vec::new();
    for i in 0..10 {
        let new = gateway(Some(CHAIN_START));
        ids.push(
            store
                .create_with_messages(&new, &turn(&format!("question {i}")))
                .await
                .unwrap(),
        );
    }
    let unchained = store
        .create_with_messages(&gateway(None), &turn("question 3"))
        .await
        .unwrap();
    let key_of = |messages: &[Message]| chain_keys(CHAIN_START, messages).pop().unwrap().unwrap();
    let mine = turn("question 3");
    assert_eq!(
        chained(&store, "acme", None, &[&key_of(&mine)]).await,
        [ids[3].clone()],
        "the one chained conversation with that question, not the unchained one ({unchained})"
    );
    // Past one shape's four places (the rest bound to NULL), in any of them.
    for at in [0, 3, 4, 6] {
        let mine_key = key_of(&mine);
        let mut keys = vec!["none-of-these"; 7];
        keys[at] = &mine_key;
        assert_eq!(
            chained(&store, "acme", None, &keys).await,
            [ids[3].clone()],
            "key at {at}"
        );
    }
    // The first one is read whole with the lookup, as the separate read reads it.
    let found = store
        .find_by_chain("acme", None, &[&key_of(&mine)], 8)
        .await
        .unwrap();
    assert_eq!(found.first, Some(store.snapshot(&ids[3]).await.unwrap()));
    // Another tenant's, or a partition's: not found.
    assert!(
        chained(&store, "globex", None, &[&key_of(&mine)])
            .await
            .is_empty()
    );
    assert!(
        chained(&store, "acme", Some("p"), &[&key_of(&mine)])
            .await
            .is_empty()
    );
    // Continued at the tip it was read at: the new rows chain on from there.
    let snapshot = store.snapshot(&ids[3]).await.unwrap();
    let next = exchange("and then?");
    let appended = store
        .compare_and_append(&snapshot.tip, &next)
        .await
        .unwrap();
    assert!(!appended.branched());
    let mut whole = mine.clone();
    whole.extend(next.clone());
    assert_eq!(
        chained(&store, "acme", None, &[&key_of(&whole)]).await,
        [ids[3].clone()]
    );
    // Appended again at the old tip: a branch, chained from the view it shares.
    let other = exchange("something else");
    let branched = store
        .compare_and_append(&snapshot.tip, &other)
        .await
        .unwrap();
    assert!(branched.branched());
    let mut forked = mine.clone();
    forked.extend(other);
    assert_eq!(
        chained(&store, "acme", None, &[&key_of(&forked)]).await,
        [branched.session().to_owned()]
    );
    // A branch is read through its lineage, right after the lookup.
    let found = store
        .find_by_chain("acme", None, &[&key_of(&forked)], 8)
        .await
        .unwrap();
    let separate = store.snapshot(branched.session()).await.unwrap();
    assert_eq!(separate.active.len(), 5);
    assert_eq!(found.first, Some(separate));
}
