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
