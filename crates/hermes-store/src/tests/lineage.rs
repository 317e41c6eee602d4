//! Branches share their parent's prefix by reference (docs/spec.md §10, "What is stored"): what a
//! branch stores, what it reads, and what stays true when either side is compacted, deleted,
//! branched again, copied, exported or looked up by match key, on both backends.

use hermes_core::{Message, Role, match_key};
use sqlx::Row as _;

use super::{compact_one, raw_rows, rows_of, set_column};
use crate::testing::TestDb;
use crate::{Appended, Fork, NewSession, Store, StoreError};

fn user(text: &str) -> Message {
    Message::text(Role::User, text)
}

fn assistant(text: &str) -> Message {
    Message::text(Role::Assistant, text)
}

/// Message `i` of [`fifty`]: users, assistants with readable thinking (an escape and a quote
/// in it, which a re-encoding would change), signed and encrypted reasoning details and tool
/// calls, and tool results.
fn message(i: usize) -> Message {
    let json = match i % 5 {
        0 | 4 => format!(r#"{{"role":"user","content":"q{i} caf\u00e9"}}"#),
        1 => format!(
            r#"{{"role":"assistant","content":"","reasoning_content":"th\u00efnk {i} \"q\"","reasoning_details":[{{"signature":"c2ln{i}/+==","text":"t{i}","type":"reasoning.text","n":123456789012345678901234567890}},{{"type":"reasoning.encrypted","data":"QUJD{i}"}}],"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"now","arguments":"{{\"a\":\u0020{i}}}"}}}}],"origin":{{"provider":"openrouter","host":"openrouter.ai","model":"a/m"}}}}"#
        ),
        2 => format!(
            r#"{{"role":"tool","content":"12:{i} full output","tool_call_id":"c{}","name":"now"}}"#,
            i - 1
        ),
        _ => format!(
            r#"{{"role":"assistant","content":"a{i}","reasoning":"r{i}","reasoning_details":[{{"type":"reasoning.encrypted","data":"RU5D{i}=="}}],"x_unknown":{{"b":2,"a":1}}}}"#
        ),
    };
    serde_json::from_str(&json).unwrap()
}

/// Fifty messages of [`message`].
fn fifty() -> Vec<Message> {
    (0..50).map(message).collect()
}

/// A session holding `messages`, of `tenant` when given.
async fn session_with(store: &Store, tenant: Option<&str>, messages: &[Message]) -> String {
    store
        .create_with_messages(
            &NewSession {
                title: Some("t".into()),
                tenant: tenant.map(Into::into),
                ..NewSession::default()
            },
            messages,
        )
        .await
        .unwrap()
}

/// The session's messages as the exact JSON text a `hermes.session.v1` export holds.
async fn exported(store: &Store, id: &str) -> String {
    serde_json::to_string(&store.export(id).await.unwrap().messages).unwrap()
}

/// `messages` as JSON text.
fn json(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

/// `err` refuses a fork at 51 of a 50-message view.
fn beyond_fifty(err: &StoreError) -> bool {
    matches!(
        err,
        StoreError::BranchBeyondEnd {
            at: 51,
            count: 50,
            ..
        }
    )
}

/// The store of `db` with a session (no tenant) of [`fifty`] messages: the messages and its id.
async fn fifty_session(db: &TestDb) -> (Store, Vec<Message>, String) {
    let store = db.open().await;
    let all = fifty();
    let id = session_with(&store, None, &all).await;
    (store, all, id)
}

both!(a_branch_stores_only_its_own_rows_and_reads_the_prefix_byte_for_byte);
async fn a_branch_stores_only_its_own_rows_and_reads_the_prefix_byte_for_byte(db: TestDb) {
    let (store, all, parent) = fifty_session(&db).await;
    let parent_raw = raw_rows(&store, &parent).await;

    let branch = store.branch(&parent, Some(30)).await.unwrap();
    assert_eq!(
        rows_of(&store, &branch).await,
        0,
        "no row of the prefix is copied"
    );
    let meta = store.session(&branch).await.unwrap();
    assert_eq!(meta.parent_id.as_deref(), Some(parent.as_str()));
    assert_eq!(meta.fork.as_ref().map(Fork::count), Some(30));
    assert_eq!(meta.message_count, 30);
    // What a copy held: the same messages at the same positions, every carrier and every
    // thinking text byte for byte.
    let parent_active = store.active(&parent).await.unwrap();
    assert_eq!(store.active(&branch).await.unwrap(), parent_active[..30]);
    assert_eq!(
        store.all_messages(&branch).await.unwrap(),
        parent_active[..30]
    );
    assert_eq!(store.messages(&branch).await.unwrap(), all[..30]);
    assert_eq!(exported(&store, &branch).await, json(&all[..30]));
    let snapshot = store.snapshot(&branch).await.unwrap();
    assert_eq!(snapshot.messages(), all[..30]);
    assert_eq!(snapshot.tip, store.tip(&branch).await.unwrap());

    // The branch's own rows follow the prefix, numbered on from it, and are all it stores.
    let mine = vec![user("mine"), assistant("my answer")];
    store.append(&branch, &mine).await.unwrap();
    assert_eq!(rows_of(&store, &branch).await, 2);
    let positions: Vec<i64> = store
        .active(&branch)
        .await
        .unwrap()
        .iter()
        .map(|m| m.position)
        .collect();
    assert_eq!(positions, (0..32).collect::<Vec<_>>());
    let mut expected = all[..30].to_vec();
    expected.extend(mine.iter().cloned());
    assert_eq!(store.messages(&branch).await.unwrap(), expected);
    assert_eq!(store.session(&branch).await.unwrap().message_count, 32);
    // Its tip continues with compare-and-append like any session's.
    let tip = store.tip(&branch).await.unwrap();
    let done = store.compare_and_append(&tip, &[user("on")]).await.unwrap();
    assert!(!done.branched(), "{done:?}");
    expected.push(user("on"));
    assert_eq!(store.messages(&branch).await.unwrap(), expected);
    assert_eq!(
        store.messages(&parent).await.unwrap(),
        all,
        "the parent is untouched"
    );

    // Materialised (its compaction takes the rows over), the rows it owns are the parent's,
    // column for column, match keys included.
    compact_one(&store, &branch, 31, &assistant("[Summary] mine"), true).await;
    let raw = raw_rows(&store, &branch).await;
    assert_eq!(raw[..30], parent_raw[..30]);

    // A branch at the end shares everything; past it is refused and creates nothing.
    let whole = store.branch(&parent, None).await.unwrap();
    assert_eq!(rows_of(&store, &whole).await, 0);
    assert_eq!(exported(&store, &whole).await, json(&all));
    let sessions = store.list().await.unwrap().len();
    let err = store.branch(&parent, Some(51)).await.unwrap_err();
    assert!(beyond_fifty(&err), "{err:?}");
    assert_eq!(store.list().await.unwrap().len(), sessions);
}

both!(a_new_session_with_a_fork_inherits_that_prefix_of_the_view_read);
async fn a_new_session_with_a_fork_inherits_that_prefix_of_the_view_read(db: TestDb) {
    let store = db.open().await;
    let all = fifty();
    let parent = session_with(&store, Some("acme"), &all).await;
    let read = store.snapshot(&parent).await.unwrap();
    // The parent moves on after the read: the fork is of the view as read.
    store.append(&parent, &[user("later")]).await.unwrap();
    let new = NewSession {
        title: Some("fork".into()),
        tenant: Some("acme".into()),
        fork: Some(Box::new(Fork::new(read.tip.clone(), 20))),
        ..NewSession::default()
    };
    let edited = vec![user("edited q20"), assistant("another answer")];
    let id = store.create_with_messages(&new, &edited).await.unwrap();
    assert_eq!(rows_of(&store, &id).await, 2);
    let meta = store.session(&id).await.unwrap();
    assert_eq!(meta.parent_id.as_deref(), Some(parent.as_str()));
    assert_eq!(meta.title.as_deref(), Some("fork"));
    assert_eq!(meta.message_count, 22);
    let mut expected = all[..20].to_vec();
    expected.extend(edited);
    assert_eq!(store.messages(&id).await.unwrap(), expected);
    let tip = store.tip(&id).await.unwrap();
    let done = store
        .compare_and_append(&tip, &[user("more")])
        .await
        .unwrap();
    assert!(!done.branched());

    // A fork without messages of its own ends where its prefix ends.
    let empty = NewSession {
        fork: Some(Box::new(Fork::new(read.tip.clone(), 50))),
        ..NewSession::default()
    };
    let id = store.create_session(&empty).await.unwrap();
    assert_eq!(store.messages(&id).await.unwrap(), all);
    store.append(&id, &[user("after")]).await.unwrap();
    assert_eq!(store.active(&id).await.unwrap()[50].position, 50);

    // More than the view at the tip held is refused; nothing is created.
    let sessions = store.list().await.unwrap().len();
    let beyond = NewSession {
        fork: Some(Box::new(Fork::new(read.tip, 51))),
        ..NewSession::default()
    };
    let err = store.create_with_messages(&beyond, &[user("x")]).await;
    assert!(err.as_ref().is_err_and(beyond_fifty), "{err:?}");
    assert_eq!(store.list().await.unwrap().len(), sessions);
}

both!(a_parent_compacted_after_the_fork_leaves_the_branch_view_as_it_was);
async fn a_parent_compacted_after_the_fork_leaves_the_branch_view_as_it_was(db: TestDb) {
    let (store, _, parent) = fifty_session(&db).await;
    let branch = store.branch(&parent, Some(40)).await.unwrap();
    store.append(&branch, &[user("mine")]).await.unwrap();
    let before = store.active(&branch).await.unwrap();
    let exported_before = exported(&store, &branch).await;
    // The parent's first thirty messages become one summary, and a tool output shrinks.
    let archive: Vec<i64> = (0..30).collect();
    store
        .compact(&parent, &archive, &[(0, user("[Summary] 0..29"), true)])
        .await
        .unwrap();
    compact_one(&store, &parent, 32, &user("[cleared]"), false).await;
    assert_eq!(store.messages(&parent).await.unwrap().len(), 21);
    assert_eq!(store.active(&branch).await.unwrap(), before);
    assert_eq!(exported(&store, &branch).await, exported_before);
    assert_eq!(rows_of(&store, &branch).await, 1);
    // A branch taken after the compaction shares the compacted view.
    let later = store.branch(&parent, Some(3)).await.unwrap();
    let later_view = store.messages(&later).await.unwrap();
    assert_eq!(later_view, store.messages(&parent).await.unwrap()[..3]);
    assert!(store.active(&later).await.unwrap()[0].checkpoint);
}

both!(a_compacted_branch_owns_its_view_and_leaves_the_parent_alone);
async fn a_compacted_branch_owns_its_view_and_leaves_the_parent_alone(db: TestDb) {
    let (store, all, parent) = fifty_session(&db).await;
    let parent_raw = raw_rows(&store, &parent).await;
    let branch = store.branch(&parent, Some(25)).await.unwrap();
    let mine = vec![user("mine"), assistant("my answer")];
    store.append(&branch, &mine).await.unwrap();
    // Planned from the branch's view as it reads (inherited messages at 0..25, its own at 25
    // and 26): a summary of 0..=19 where 0 stood.
    let active = store.active(&branch).await.unwrap();
    let archive: Vec<i64> = active[..20].iter().map(|m| m.position).collect();
    store
        .apply_compaction(
            &branch,
            &crate::CompactionPlan {
                archive,
                inserts: vec![crate::PlannedInsert {
                    slot: 0,
                    message: user("[Summary] 0..19"),
                    kind: crate::RowKind::Checkpoint,
                }],
            },
        )
        .await
        .unwrap();
    let mut expected = vec![user("[Summary] 0..19")];
    expected.extend(all[20..25].iter().cloned());
    expected.extend(mine.iter().cloned());
    assert_eq!(store.messages(&branch).await.unwrap(), expected);
    let meta = store.session(&branch).await.unwrap();
    assert_eq!(meta.fork, None, "materialised");
    assert_eq!(
        meta.parent_id.as_deref(),
        Some(parent.as_str()),
        "still its parent"
    );
    // Its rows: the twenty-five it took over, its own two, the summary.
    assert_eq!(rows_of(&store, &branch).await, 28);
    let archived: Vec<bool> = store
        .all_messages(&branch)
        .await
        .unwrap()
        .iter()
        .map(|m| m.archived)
        .collect();
    assert_eq!(archived.iter().filter(|a| **a).count(), 20);
    // The parent: not a row changed.
    assert_eq!(store.messages(&parent).await.unwrap(), all);
    assert_eq!(raw_rows(&store, &parent).await, parent_raw);
    // A stale tip of the compacted branch branches from its compacted view.
    let tip = store.tip(&branch).await.unwrap();
    store.append(&branch, &[user("next")]).await.unwrap();
    let done = store
        .compare_and_append(&tip, &[user("other")])
        .await
        .unwrap();
    assert!(done.branched());
    let mut other = expected.clone();
    other.push(user("other"));
    assert_eq!(store.messages(done.session()).await.unwrap(), other);
}

both!(deleting_a_parent_leaves_its_branches_their_whole_view);
async fn deleting_a_parent_leaves_its_branches_their_whole_view(db: TestDb) {
    let (store, _, parent) = fifty_session(&db).await;
    let first = store.branch(&parent, Some(10)).await.unwrap();
    store.append(&first, &[user("first")]).await.unwrap();
    let second = store.branch(&parent, None).await.unwrap();
    // A branch of a branch inherits through `first`, which keeps its own view.
    let grandchild = store.branch(&first, Some(11)).await.unwrap();
    let views = [
        exported(&store, &first).await,
        exported(&store, &second).await,
        exported(&store, &grandchild).await,
    ];
    store.delete(&parent).await.unwrap();
    assert_eq!(rows_of(&store, &parent).await, 0);
    assert_eq!(
        [
            exported(&store, &first).await,
            exported(&store, &second).await,
            exported(&store, &grandchild).await,
        ],
        views
    );
    for (id, rows) in [(&first, 11), (&second, 50)] {
        let meta = store.session(id).await.unwrap();
        assert_eq!((meta.parent_id, meta.fork), (None, None));
        assert_eq!(rows_of(&store, id).await, rows, "materialised");
    }
    // The grandchild still shares `first`'s rows.
    assert_eq!(rows_of(&store, &grandchild).await, 0);
    let meta = store.session(&grandchild).await.unwrap();
    assert_eq!(meta.parent_id.as_deref(), Some(first.as_str()));
    store.delete(&first).await.unwrap();
    assert_eq!(exported(&store, &grandchild).await, views[2]);
}

both!(a_branch_of_a_branch_reads_through_both);
async fn a_branch_of_a_branch_reads_through_both(db: TestDb) {
    let (store, all, root) = fifty_session(&db).await;
    let child = store.branch(&root, Some(30)).await.unwrap();
    let own: Vec<Message> = (0..6).map(|i| user(&format!("child {i}"))).collect();
    store.append(&child, &own).await.unwrap();
    // Into the child's own rows, and within what it inherits.
    let deep = store.branch(&child, Some(33)).await.unwrap();
    let shallow = store.branch(&child, Some(12)).await.unwrap();
    store.append(&deep, &[user("deep")]).await.unwrap();
    assert_eq!(rows_of(&store, &deep).await, 1);
    assert_eq!(rows_of(&store, &shallow).await, 0);
    let mut expected = all[..30].to_vec();
    expected.extend(own[..3].iter().cloned());
    expected.push(user("deep"));
    assert_eq!(store.messages(&deep).await.unwrap(), expected);
    assert_eq!(exported(&store, &shallow).await, json(&all[..12]));
    // And a third level, still no copy.
    let third = store.branch(&deep, None).await.unwrap();
    assert_eq!(store.messages(&third).await.unwrap(), expected);
    assert_eq!(rows_of(&store, &third).await, 0);

    // The middle one moves on and is compacted: the deeper ones read what they forked from.
    store.append(&child, &[user("child later")]).await.unwrap();
    let archive: Vec<i64> = (0..33).collect();
    store
        .compact(&child, &archive, &[(0, user("[Summary] child"), true)])
        .await
        .unwrap();
    assert_eq!(store.messages(&deep).await.unwrap(), expected);
    assert_eq!(store.messages(&third).await.unwrap(), expected);
    assert_eq!(exported(&store, &shallow).await, json(&all[..12]));
    // Compacting the deepest one materialises it through every level.
    compact_one(&store, &third, 0, &user("[Summary] q0"), true).await;
    let mut compacted = vec![user("[Summary] q0")];
    compacted.extend(expected[1..].iter().cloned());
    assert_eq!(store.messages(&third).await.unwrap(), compacted);
    assert_eq!(store.messages(&deep).await.unwrap(), expected);
}

both!(a_stale_compare_and_append_branches_without_copying);
async fn a_stale_compare_and_append_branches_without_copying(db: TestDb) {
    let (store, all, id) = fifty_session(&db).await;
    let tip = store.tip(&id).await.unwrap();
    let first = store
        .compare_and_append(&tip, &[user("one"), assistant("1")])
        .await
        .unwrap();
    assert!(!first.branched());
    let second = store
        .compare_and_append(&tip, &[user("two"), assistant("2")])
        .await
        .unwrap();
    let Appended::Branched { tip: branch_tip } = &second else {
        panic!("{second:?}");
    };
    let branch = branch_tip.session();
    assert_eq!(rows_of(&store, branch).await, 2, "only the new messages");
    let mut expected = all.clone();
    expected.extend([user("two"), assistant("2")]);
    assert_eq!(store.messages(branch).await.unwrap(), expected);
    assert_eq!(exported(&store, branch).await, json(&expected));
    assert_eq!(store.tip(branch).await.unwrap(), *branch_tip);
    // The branch's own stale tip branches again, sharing the branch's view.
    let again = store
        .compare_and_append(branch_tip, &[user("three")])
        .await
        .unwrap();
    assert!(!again.branched());
    let stale = store
        .compare_and_append(branch_tip, &[user("four")])
        .await
        .unwrap();
    assert!(stale.branched());
    assert_eq!(rows_of(&store, stale.session()).await, 1);
    let mut four = expected.clone();
    four.push(user("four"));
    assert_eq!(store.messages(stale.session()).await.unwrap(), four);
}

both!(copies_and_exports_keep_every_branch_view);
async fn copies_and_exports_keep_every_branch_view(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open(&dir.path().join("source.db")).await.unwrap();
    let all = fifty();
    let root = session_with(&source, Some("acme"), &all).await;
    let child = source.branch(&root, Some(30)).await.unwrap();
    source.append(&child, &[user("child")]).await.unwrap();
    let grandchild = source.branch(&child, Some(31)).await.unwrap();
    source
        .append(&grandchild, &[user("grandchild")])
        .await
        .unwrap();
    // The root compacted after the forks: the branches keep what they forked from.
    source
        .compact(&root, &[0, 1, 2], &[(0, user("[Summary]"), true)])
        .await
        .unwrap();
    let dest = db.open().await;
    let report = source.copy_into(&dest).await.unwrap();
    assert_eq!(report.copied.len(), 3);
    // The root's fifty rows and its summary; one own row in each branch.
    assert_eq!(report.messages, 51 + 1 + 1);
    let ids = [root.clone(), child.clone(), grandchild.clone()];
    super::assert_copied(&source, &dest, &ids).await;
    for id in &ids {
        assert_eq!(
            source.active(id).await.unwrap(),
            dest.active(id).await.unwrap()
        );
    }
    let mut expected = all[..30].to_vec();
    expected.extend([user("child"), user("grandchild")]);
    assert_eq!(dest.messages(&grandchild).await.unwrap(), expected);
    // An export holds the whole view; imported, it is a plain session holding every row.
    let file = dest.export(&grandchild).await.unwrap();
    assert_eq!(file.messages, expected);
    let imported = dest.import(&file).await.unwrap();
    let meta = dest.session(&imported).await.unwrap();
    assert_eq!((meta.parent_id, meta.fork), (None, None));
    assert_eq!(rows_of(&dest, &imported).await, 32);
    assert_eq!(exported(&dest, &imported).await, json(&expected));
}

/// [`Store::find_by_keys`] of `history`'s assistant messages for tenant `acme`: the session and
/// position found.
async fn find(store: &Store, history: &[Message]) -> Option<(String, i64)> {
    let keys: Vec<String> = history.iter().filter_map(match_key).collect();
    store
        .find_by_keys("acme", None, &keys)
        .await
        .unwrap()
        .map(|f| (f.session, f.position))
}

both!(a_history_is_found_where_its_latest_assistant_message_is_stored);
async fn a_history_is_found_where_its_latest_assistant_message_is_stored(db: TestDb) {
    let store = db.open().await;
    let all = fifty();
    let parent = session_with(&store, Some("acme"), &all[..20]).await;
    // A client's retry from message 16 on: a branch sharing sixteen messages.
    let read = store.snapshot(&parent).await.unwrap();
    let mine = vec![user("edited"), assistant("branch answer")];
    let branch = store
        .create_with_messages(
            &NewSession {
                tenant: Some("acme".into()),
                fork: Some(Box::new(Fork::new(read.tip, 16))),
                ..NewSession::default()
            },
            &mine,
        )
        .await
        .unwrap();
    tick().await;
    store
        .append(
            &parent,
            &[user("parent goes on"), assistant("parent answer")],
        )
        .await
        .unwrap();
    tick().await;
    store
        .append(&branch, &[user("branch goes on")])
        .await
        .unwrap();

    // The client continues on the branch: its latest assistant message is the branch's own.
    let mut on_branch = all[..16].to_vec();
    on_branch.extend(mine.iter().cloned());
    on_branch.push(user("branch goes on"));
    assert_eq!(find(&store, &on_branch).await, Some((branch.clone(), 17)));
    // It continues on the parent: the parent's own later answer decides.
    let mut on_parent = all[..20].to_vec();
    on_parent.extend([
        user("parent goes on"),
        assistant("parent answer"),
        user("x"),
    ]);
    assert_eq!(find(&store, &on_parent).await, Some((parent.clone(), 21)));
    // It ends in the shared prefix (a retry of message 14 on): found in the parent, where the
    // prefix is stored; the branch's view holds the same messages at the same positions.
    let mut in_prefix = all[..14].to_vec();
    in_prefix.push(user("retry"));
    let found = find(&store, &in_prefix).await.unwrap();
    assert_eq!(found, (parent.clone(), 13));
    assert_eq!(
        store.active(&branch).await.unwrap()[..14],
        store.active(&parent).await.unwrap()[..14]
    );
    // After the parent is deleted the branch owns the prefix and is found by it.
    store.delete(&parent).await.unwrap();
    assert_eq!(find(&store, &in_prefix).await, Some((branch.clone(), 13)));
    assert_eq!(find(&store, &on_branch).await, Some((branch, 17)));
}

/// Lets the clock move on, so `updated_at` orders what follows after what came before.
async fn tick() {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
}

both!(a_snapshot_of_a_branch_equals_the_separate_reads);
async fn a_snapshot_of_a_branch_equals_the_separate_reads(db: TestDb) {
    let store = db.open().await;
    let parent = session_with(&store, None, &fifty()).await;
    let branch = store.branch(&parent, Some(44)).await.unwrap();
    store.append(&branch, &[user("mine")]).await.unwrap();
    let snapshot = store.snapshot(&branch).await.unwrap();
    assert_eq!(snapshot.meta, store.session(&branch).await.unwrap());
    assert_eq!(snapshot.active, store.active(&branch).await.unwrap());
    assert_eq!(snapshot.tip, store.tip(&branch).await.unwrap());
    assert_eq!(snapshot.active.len(), 45);
    assert_eq!(
        snapshot.meta.fork.as_ref().map(|f| f.tip().session()),
        Some(parent.as_str())
    );
}

both!(a_branch_view_is_read_by_the_messages_primary_key);
async fn a_branch_view_is_read_by_the_messages_primary_key(db: TestDb) {
    let store = db.open().await;
    // Many sessions and rows, statistics gathered: the planner has a real choice.
    let mut parent = String::new();
    for s in 0..30 {
        let messages: Vec<Message> = (0..60).map(|i| user(&format!("m{s}.{i}"))).collect();
        parent = session_with(&store, None, &messages).await;
    }
    let child = store.branch(&parent, Some(40)).await.unwrap();
    store.append(&child, &[user("mine")]).await.unwrap();
    let grandchild = store.branch(&child, None).await.unwrap();
    sqlx::query("ANALYZE").execute(&store.pool).await.unwrap();
    let (explain, column) = match store.backend() {
        crate::Backend::Sqlite => ("EXPLAIN QUERY PLAN ", "detail"),
        crate::Backend::Postgres => ("EXPLAIN ", "QUERY PLAN"),
    };
    let mut conn = store.pool.acquire().await.unwrap();
    let levels = crate::lineage::lineage_of(&mut conn, &grandchild)
        .await
        .unwrap();
    assert_eq!(levels.len(), 3, "the grandchild, the child, the parent");
    let rows = crate::lineage::view_query(&levels, crate::lineage::OwnRows::Active, explain)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    let plan: Vec<String> = rows.iter().map(|r| r.try_get(column).unwrap()).collect();
    let plan = plan.join("\n");
    assert!(
        !plan.contains("SCAN messages") && !plan.contains("Seq Scan on messages"),
        "{plan}"
    );
    let index = match store.backend() {
        crate::Backend::Sqlite => "sqlite_autoindex_messages_1",
        crate::Backend::Postgres => "messages_pkey",
    };
    assert_eq!(
        plan.matches(index).count(),
        3,
        "one index read per level: {plan}"
    );
    assert_eq!(store.messages(&grandchild).await.unwrap().len(), 41);
}

both!(
    branches_made_while_their_parent_is_deleted_keep_their_view_or_fail,
    multi_thread
);
async fn branches_made_while_their_parent_is_deleted_keep_their_view_or_fail(db: TestDb) {
    let (store, all, parent) = fifty_session(&db).await;
    let tip = store.tip(&parent).await.unwrap();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(9));
    let mut tasks = Vec::new();
    for k in 0..8_usize {
        let (store, parent, tip, barrier) =
            (store.clone(), parent.clone(), tip.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let shared = 10 + k;
            if k.is_multiple_of(2) {
                store
                    .branch(&parent, Some(shared))
                    .await
                    .map(|id| (id, shared, false))
            } else {
                let new = NewSession {
                    fork: Some(Box::new(Fork::new(tip, shared))),
                    ..NewSession::default()
                };
                store
                    .create_with_messages(&new, &[user("own")])
                    .await
                    .map(|id| (id, shared, true))
            }
        }));
    }
    barrier.wait().await;
    store.delete(&parent).await.unwrap();
    for task in tasks {
        match task.await.unwrap() {
            // Made before the deletion: materialised by it, whole.
            Ok((id, shared, own)) => {
                let mut expected = all[..shared].to_vec();
                if own {
                    expected.push(user("own"));
                }
                assert_eq!(store.messages(&id).await.unwrap(), expected, "{id}");
                let meta = store.session(&id).await.unwrap();
                assert_eq!((meta.parent_id, meta.fork), (None, None));
            }
            // After it: the parent is gone, nothing is made.
            Err(StoreError::NotFound(gone)) => assert_eq!(gone, parent),
            Err(e) => panic!("{e}"),
        }
    }
    let sessions = store.list().await.unwrap();
    assert!(sessions.iter().all(|s| s.fork.is_none()), "{sessions:?}");
}

/// Sets the session's last update to `at` (Unix ms).
async fn updated_at(store: &Store, id: &str, at: i64) {
    set_column(store, id, "updated_at", at).await;
}

both!(purging_a_tenant_deletes_its_old_sessions_and_a_branch_that_stays_keeps_its_view);
async fn purging_a_tenant_deletes_its_old_sessions_and_a_branch_that_stays_keeps_its_view(
    db: TestDb,
) {
    let store = db.open().await;
    let all = fifty();
    let parent = session_with(&store, Some("acme"), &all).await;
    let branch = store.branch(&parent, Some(20)).await.unwrap();
    store.append(&branch, &[user("later")]).await.unwrap();
    let old_branch = store.branch(&parent, Some(30)).await.unwrap();
    let view = exported(&store, &branch).await;
    let other = session_with(&store, Some("globex"), &all[..3]).await;
    let cli = session_with(&store, None, &all[..3]).await;
    for id in [&parent, &old_branch, &other, &cli] {
        updated_at(&store, id, 1_000).await;
    }
    assert_eq!(
        store.session(&branch).await.unwrap().tenant.as_deref(),
        Some("acme")
    );

    // Older than the age: the parent and its old branch go; the recent branch stays whole.
    assert_eq!(store.purge_tenant("acme", Some(2_000)).await.unwrap(), 2);
    for id in [&parent, &old_branch] {
        assert!(!store.has_session(id).await.unwrap());
        assert_eq!(rows_of(&store, id).await, 0);
    }
    assert_eq!(exported(&store, &branch).await, view);
    assert_eq!(
        store.session(&branch).await.unwrap().fork,
        None,
        "materialised"
    );
    // Retention across tenants: the other tenant's old session goes, a CLI session never.
    assert_eq!(store.purge_expired(2_000).await.unwrap(), 1);
    assert!(!store.has_session(&other).await.unwrap());
    assert!(store.has_session(&cli).await.unwrap());
    // The whole tenant.
    assert_eq!(store.purge_tenant("acme", None).await.unwrap(), 1);
    assert!(!store.has_session(&branch).await.unwrap());
    assert_eq!(rows_of(&store, &branch).await, 0);
    assert_eq!(store.purge_tenant("acme", None).await.unwrap(), 0);
}
