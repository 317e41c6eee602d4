//! Carriers left out for good (docs/spec.md §5a 3), on both backends.

use crate::testing::TestDb;

both!(carriers_left_out_are_marked_once_for_every_handle_and_every_copy);
/// docs/spec.md §5a 3: a mark made through one handle (one replica) is read through another; a
/// carrier marked twice keeps its first mark; a copy of the store carries the marks over.
async fn carriers_left_out_are_marked_once_for_every_handle_and_every_copy(db: TestDb) {
    let (a, b) = (db.open().await, db.open().await);
    let ids = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(a.left_out_among(&ids(&["c1"])).await.unwrap().is_empty());
    a.mark_left_out(None, &ids(&["c1"])).await.unwrap();
    b.mark_left_out(Some("s2"), &ids(&["c1", "c2"]))
        .await
        .unwrap();
    let found = b.left_out_among(&ids(&["c0", "c1", "c2"])).await.unwrap();
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ids(&["c1", "c2"]));
    let marks = a.left_out_marks().await.unwrap();
    let first: Vec<(&str, Option<&str>)> = marks
        .iter()
        .map(|m| (m.carrier.as_str(), m.session.as_deref()))
        .collect();
    assert_eq!(first, [("c1", None), ("c2", Some("s2"))]);
    // Many at once, past one query's worth.
    let many: Vec<String> = (0..600).map(|i| format!("m{i}")).collect();
    a.mark_left_out(None, &many[..300]).await.unwrap();
    assert_eq!(b.left_out_among(&many).await.unwrap().len(), 300);
    // A copy of the store keeps them.
    let dest_db = TestDb::new(hermes_store_backend(&db)).await.unwrap();
    let dest = dest_db.open().await;
    let report = a.copy_into(&dest).await.unwrap();
    assert_eq!(report.left_out, 302);
    assert_eq!(dest.left_out_marks().await.unwrap().len(), 302);
}

fn hermes_store_backend(db: &TestDb) -> crate::Backend {
    match db.location {
        crate::Location::Sqlite(_) => crate::Backend::Sqlite,
        crate::Location::Postgres(_) => crate::Backend::Postgres,
    }
}

both!(a_view_read_says_which_stored_turns_were_left_out);
/// The read of a session's view says, of each turn with carriers, its carrier id and whether
/// it was left out for good, as [`crate::Store::left_out_among`] does; in a branch that shares
/// the turn by reference too; a turn whose row has no carrier id (written before the column
/// existed) says nothing, and the engine looks its id up instead.
async fn a_view_read_says_which_stored_turns_were_left_out(db: TestDb) {
    use hermes_core::Message;
    let store = db.open().await;
    let turns: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"q0"},
            {"role":"assistant","content":"a0","reasoning_content":"first thought"},
            {"role":"user","content":"q1"},
            {"role":"assistant","content":"a1","reasoning_content":"second thought"},
            {"role":"user","content":"q2"},
            {"role":"assistant","content":"a2"}]"#,
    )
    .unwrap();
    let id = store
        .create_with_messages(&crate::NewSession::default(), &turns)
        .await
        .unwrap();
    let ids: Vec<String> = turns
        .iter()
        .filter_map(hermes_core::left_out::carrier_id)
        .collect();
    assert_eq!(ids.len(), 2);
    store
        .mark_left_out(Some(&id), std::slice::from_ref(&ids[0]))
        .await
        .unwrap();
    let states = |active: &[crate::StoredMessage]| -> Vec<Option<(String, bool)>> {
        active
            .iter()
            .map(|m| m.carrier.as_ref().map(|c| (c.id.clone(), c.left_out)))
            .collect()
    };
    // The rows' marks: the first carrier left out, the second as `second`.
    let marks = |second: bool| {
        vec![
            None,
            Some((ids[0].clone(), true)),
            None,
            Some((ids[1].clone(), second)),
            None,
            None,
        ]
    };
    let expected = marks(false);
    assert_eq!(states(&store.snapshot(&id).await.unwrap().active), expected);
    // As the lookup the engine would otherwise make says.
    let looked_up = store.left_out_among(&ids).await.unwrap();
    assert_eq!(
        looked_up.into_iter().collect::<Vec<_>>(),
        vec![ids[0].clone()]
    );
    // A branch sharing the turns by reference reads the same marks, and a mark made later
    // reads in both.
    let branch = store.branch(&id, None).await.unwrap();
    store
        .mark_left_out(Some(&branch), std::slice::from_ref(&ids[1]))
        .await
        .unwrap();
    let both_out = marks(true);
    assert_eq!(
        states(&store.snapshot(&branch).await.unwrap().active),
        both_out
    );
    assert_eq!(states(&store.snapshot(&id).await.unwrap().active), both_out);
    // A row written without its carrier id says nothing.
    sqlx::query("UPDATE messages SET carrier_id = NULL WHERE session_id = $1 AND position = 1")
        .bind(&id)
        .execute(&store.pool)
        .await
        .unwrap();
    let read = states(&store.snapshot(&id).await.unwrap().active);
    assert_eq!(read[1], None);
    assert_eq!(read[3], Some((ids[1].clone(), true)));
}
