//! Compare-and-append and the one-read snapshot, on both backends.

use std::sync::Arc;

use hermes_core::Message;

use super::{compact_one, imported, raw_rows, rd, target};
use crate::testing::TestDb;
use crate::{Appended, NewSession, Store, StoredThinking, Tip};

/// The reasoning text appender `k` sends, as the exact JSON text on the wire (an escape and a
/// quote in it, which a re-encoding would change).
fn reasoning_text(k: usize) -> String {
    format!(r#""th\u00efnk {k} \"q\"""#)
}

/// Appender `k`'s messages: a user turn and an assistant reply with a reasoning carrier and
/// encrypted details; even appenders also call a tool and send its result (three messages).
fn appender_messages(k: usize) -> Vec<Message> {
    let rc = reasoning_text(k);
    let json = if k.is_multiple_of(2) {
        format!(
            r#"[{{"role":"user","content":"q{k}"}},{{"role":"assistant","content":"","reasoning_content":{rc},"reasoning_details":[{{"type":"reasoning.encrypted","data":"QUJD{k}=="}}],"tool_calls":[{{"id":"c{k}","type":"function","function":{{"name":"now","arguments":"{{\"a\":\u0020{k}}}"}}}}]}},{{"role":"tool","content":"12:{k}","tool_call_id":"c{k}"}}]"#
        )
    } else {
        format!(
            r#"[{{"role":"user","content":"q{k}"}},{{"role":"assistant","content":"a{k}","reasoning_content":{rc},"reasoning_details":[{{"type":"reasoning.encrypted","data":"QUJD{k}=="}}]}}]"#
        )
    };
    serde_json::from_str(&json).unwrap()
}

/// The texts of a session's active view.
async fn texts(store: &Store, id: &str) -> Vec<String> {
    store.messages(id).await.unwrap().iter().map(text).collect()
}

fn text(m: &Message) -> String {
    m.content
        .as_ref()
        .and_then(|c| c.as_str())
        .map(|c| c.into_owned())
        .unwrap_or_default()
}

both!(
    sixteen_appenders_at_one_tip_one_continues_and_fifteen_branch_intact,
    multi_thread
);
async fn sixteen_appenders_at_one_tip_one_continues_and_fifteen_branch_intact(db: TestDb) {
    const N: usize = 16;
    let (store, id) = imported(&db).await;
    store
        .record_verdict(&id, &target("p", "m"), rd())
        .await
        .unwrap();
    let prefix = store.messages(&id).await.unwrap();
    let prefix_raw = raw_rows(&store, &id).await;
    let parent_config = super::raw_config(&store, &id).await;
    let parent_meta = store.session(&id).await.unwrap();
    // Every appender reads the tip first, then all append at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for k in 0..N {
        let (store, id, barrier) = (store.clone(), id.clone(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let tip = store.snapshot(&id).await.unwrap().tip;
            barrier.wait().await;
            let mine = appender_messages(k);
            let done = store.compare_and_append(&tip, &mine).await.unwrap();
            (k, tip, mine, done)
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let first_tip = &results[0].1;
    assert!(results.iter().all(|(_, tip, _, _)| tip == first_tip));
    let continued: Vec<_> = results.iter().filter(|r| !r.3.branched()).collect();
    assert_eq!(
        continued.len(),
        1,
        "exactly one appender continues the session"
    );
    let (winner, _, winner_messages, done) = continued[0];
    assert_eq!(done.session(), id);
    // The parent holds the prefix and exactly the winner's messages, and its tip is the one
    // the winner was handed.
    let mut expected = prefix.clone();
    expected.extend(winner_messages.iter().cloned());
    assert_eq!(store.messages(&id).await.unwrap(), expected);
    assert_eq!(store.tip(&id).await.unwrap(), *done.tip());
    assert_eq!(
        store.session(&id).await.unwrap().message_count,
        expected.len() as i64
    );
    let parent_raw = raw_rows(&store, &id).await;
    assert_eq!(parent_raw[..prefix_raw.len()], prefix_raw[..]);
    assert_eq!(
        parent_raw[prefix_raw.len() + 1][5].as_deref(),
        Some(reasoning_text(*winner).as_str())
    );
    let mut branches = std::collections::HashSet::new();
    for (k, _, mine, done) in results.iter().filter(|r| r.3.branched()) {
        let branch = done.session();
        assert_ne!(branch, id);
        assert!(
            branches.insert(branch.to_owned()),
            "one branch per appender"
        );
        let meta = store.session(branch).await.unwrap();
        assert_eq!(meta.parent_id.as_deref(), Some(id.as_str()));
        assert_eq!(
            (&meta.title, &meta.provider, &meta.model, &meta.base_url),
            (
                &parent_meta.title,
                &parent_meta.provider,
                &parent_meta.model,
                &parent_meta.base_url
            )
        );
        assert_eq!(meta.base_url_confirmed, parent_meta.base_url_confirmed);
        // model_config (the verdict recorded above included) copied as stored.
        assert_eq!(super::raw_config(&store, branch).await, parent_config);
        assert_eq!(
            store
                .verdicts(branch)
                .await
                .unwrap()
                .refused_for(&target("p", "m")),
            rd()
        );
        // Exactly the prefix, then this appender's messages: nothing of another's.
        let mut expected = prefix.clone();
        expected.extend(mine.iter().cloned());
        assert_eq!(
            store.messages(branch).await.unwrap(),
            expected,
            "branch of {k}"
        );
        assert_eq!(meta.message_count, expected.len() as i64);
        assert_eq!(store.tip(branch).await.unwrap(), *done.tip());
        // Byte for byte: the prefix shared with the parent (no row of it copied), the
        // reasoning carrier as sent in the branch's own rows.
        let raw = raw_rows(&store, branch).await;
        assert_eq!(raw.len(), mine.len(), "only the appender's own rows");
        assert_eq!(
            meta.fork.as_ref().map(|f| (f.tip().session(), f.count())),
            Some((id.as_str(), prefix.len()))
        );
        assert_eq!(raw[1][5].as_deref(), Some(reasoning_text(*k).as_str()));
        assert_eq!(
            raw[1][7].as_deref(),
            Some(format!(r#"[{{"type":"reasoning.encrypted","data":"QUJD{k}=="}}]"#).as_str())
        );
    }
    assert_eq!(branches.len(), N - 1);
    assert_eq!(store.list().await.unwrap().len(), N);
}

/// A session of six messages `m0`..`m5`, and its tip.
async fn six(store: &Store) -> (String, Tip) {
    let id = super::six_messages(store).await;
    let tip = store.tip(&id).await.unwrap();
    (id, tip)
}

fn user(text: &str) -> Message {
    Message::text(hermes_core::Role::User, text)
}

both!(a_tip_made_stale_by_an_append_branches_from_the_view_that_was_read);
async fn a_tip_made_stale_by_an_append_branches_from_the_view_that_was_read(db: TestDb) {
    let store = db.open().await;
    let (id, tip) = six(&store).await;
    let read = store.messages(&id).await.unwrap();
    // At the tip: continued, and the tip moves on.
    let done = store.compare_and_append(&tip, &[user("x")]).await.unwrap();
    assert_eq!(
        done,
        Appended::Continued {
            tip: store.tip(&id).await.unwrap()
        }
    );
    assert_ne!(*done.tip(), tip);
    // The old tip is stale now: the append is a branch of the view read then.
    let done = store.compare_and_append(&tip, &[user("y")]).await.unwrap();
    assert!(done.branched(), "{done:?}");
    let branch = done.session().to_owned();
    let mut expected = read.clone();
    expected.push(user("y"));
    assert_eq!(store.messages(&branch).await.unwrap(), expected);
    let mut parent = read.clone();
    parent.push(user("x"));
    assert_eq!(
        store.messages(&id).await.unwrap(),
        parent,
        "the parent is untouched"
    );
    // A plain append moves the tip too.
    let tip = store.tip(&id).await.unwrap();
    store.append(&id, &[user("z")]).await.unwrap();
    assert!(
        store
            .compare_and_append(&tip, &[user("w")])
            .await
            .unwrap()
            .branched()
    );
    // Appending nothing at the tip changes nothing.
    let tip = store.tip(&id).await.unwrap();
    assert_eq!(
        store.compare_and_append(&tip, &[]).await.unwrap(),
        Appended::Continued { tip: tip.clone() }
    );
    assert_eq!(store.tip(&id).await.unwrap(), tip);
}

both!(a_tip_made_stale_by_a_compaction_branches_with_the_uncompacted_view);
async fn a_tip_made_stale_by_a_compaction_branches_with_the_uncompacted_view(db: TestDb) {
    let store = db.open().await;
    let (id, _) = six(&store).await;
    // A first compaction before the read: its archived rows are not part of the view read.
    store
        .compact(&id, &[1, 2], &[(1, user("[Summary] m1..m2"), true)])
        .await
        .unwrap();
    let before = store.snapshot(&id).await.unwrap();
    let read: Vec<String> = before.messages().iter().map(text).collect();
    assert_eq!(read, ["m0", "[Summary] m1..m2", "m3", "m4", "m5"]);
    // A second one after the read, on another handle (as another replica would).
    let other = db.open().await;
    other
        .compact(&id, &[0, 6, 3], &[(0, user("[Summary] m0..m3"), true)])
        .await
        .unwrap();
    let done = store
        .compare_and_append(&before.tip, &[user("next")])
        .await
        .unwrap();
    assert!(done.branched(), "{done:?}");
    let branch = done.session();
    let branched = store.active(branch).await.unwrap();
    assert_eq!(
        texts(&store, branch).await,
        ["m0", "[Summary] m1..m2", "m3", "m4", "m5", "next"],
        "the view as read, then the new message"
    );
    // Row for row, positions dense, the checkpoint still a checkpoint.
    let positions: Vec<i64> = branched.iter().map(|m| m.position).collect();
    assert_eq!(positions, [0, 1, 2, 3, 4, 5]);
    assert!(branched[1].checkpoint && !branched[0].checkpoint);
    // The compacted parent is as the compaction left it.
    let parent = texts(&store, &id).await;
    assert_eq!(parent, ["[Summary] m0..m3", "m4", "m5"]);
    // A tip read after the compaction continues.
    let tip = store.tip(&id).await.unwrap();
    let done = store.compare_and_append(&tip, &[user("on")]).await.unwrap();
    assert!(!done.branched());
    let parent = texts(&store, &id).await;
    assert_eq!(parent, ["[Summary] m0..m3", "m4", "m5", "on"]);
}

both!(an_empty_session_has_a_tip_and_a_missing_one_is_not_found);
async fn an_empty_session_has_a_tip_and_a_missing_one_is_not_found(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let tip = store.snapshot(&id).await.unwrap().tip;
    assert_eq!(tip.session(), id);
    let second = tip.clone();
    let done = store.compare_and_append(&tip, &[user("a")]).await.unwrap();
    assert!(!done.branched());
    // The same empty tip again: a branch holding only the new message.
    let done = store
        .compare_and_append(&second, &[user("b")])
        .await
        .unwrap();
    assert!(done.branched());
    assert_eq!(store.messages(done.session()).await.unwrap(), [user("b")]);
    assert_eq!(store.messages(&id).await.unwrap(), [user("a")]);
    assert!(matches!(
        store.snapshot("nope").await,
        Err(crate::StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.tip("nope").await,
        Err(crate::StoreError::NotFound(_))
    ));
    store.delete(&id).await.unwrap();
    assert!(matches!(
        store.compare_and_append(&tip, &[user("c")]).await,
        Err(crate::StoreError::NotFound(_))
    ));
}

both!(a_snapshot_equals_the_separate_reads);
async fn a_snapshot_equals_the_separate_reads(db: TestDb) {
    let (store, id) = imported(&db).await;
    store
        .record_wire_verdict(&id, "responses", &target("p", "m"), &["encrypted_content"])
        .await
        .unwrap();
    store
        .set_thinking(&id, Some(StoredThinking::Off))
        .await
        .unwrap();
    compact_one(&store, &id, 0, &user("[Summary] the start"), true).await;
    store.append(&id, &[user("after")]).await.unwrap();
    let snap = store.snapshot(&id).await.unwrap();
    assert_eq!(snap.meta, store.session(&id).await.unwrap());
    assert_eq!(snap.active, store.active(&id).await.unwrap());
    assert_eq!(snap.messages(), store.messages(&id).await.unwrap());
    assert_eq!(snap.verdicts, store.verdicts(&id).await.unwrap());
    assert_eq!(snap.wire_verdicts, store.wire_verdicts(&id).await.unwrap());
    assert_eq!(snap.thinking, store.thinking(&id).await.unwrap());
    assert_eq!(snap.tip, store.tip(&id).await.unwrap());
    // Not vacuous: every member holds something.
    assert!(!snap.verdicts.0.is_empty() && !snap.wire_verdicts.0.is_empty());
    assert_eq!(snap.thinking, Some(StoredThinking::Off));
    assert_eq!(snap.active.len(), 4);
    // A damaged member is the same error as the separate read's.
    super::set_raw_config(&store, &id, r#"{"hermes_thinking":"loud"}"#).await;
    let separate = store.thinking(&id).await.unwrap_err().to_string();
    let snapshot = store.snapshot(&id).await.unwrap_err().to_string();
    assert_eq!(snapshot, separate);
    assert!(snapshot.contains("hermes_thinking"), "{snapshot}");
}
