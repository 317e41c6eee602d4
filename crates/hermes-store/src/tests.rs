//! Store tests on real SQLite files.

use hermes_core::{Message, parse_history};

use crate::{NewSession, Store, StoreError};

const SESSION: &str = r#"{"format":"hermes.session.v1","provider":"openrouter","model":"a/m","base_url":"https://openrouter.ai/api/v1","title":"t","model_config":{"reasoning_rejected_carriers":[["openrouter","openrouter.ai","a/m",["reasoning"]]],"temperature":0.5},"messages":[{"role":"user","content":"caf\u00e9"},{"role":"assistant","content":"","reasoning_content":"th\u00efnk \"q\"","reasoning":"r","reasoning_details":[{"signature":"c2ln/+==","text":"t","type":"reasoning.text","n":123456789012345678901234567890},{"type":"reasoning.encrypted","data":"QUJD"},{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"GS"}}}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{\"a\":\u00201}","thought_signature":"FS"},"extra_content":{"google":{"thought_signature":"TS"}},"x":1}],"x_unknown":{"b":2,"a":1},"origin":{"provider":"openrouter","host":"openrouter.ai","model":"a/m"}},{"role":"tool","content":"12:00","tool_call_id":"c1","name":"now"}]}"#;

async fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("home/state.db"))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test]
async fn import_then_export_is_byte_identical() {
    let (dir, store) = store().await;
    let file = parse_history(SESSION).unwrap();
    let id = store.import(&file).await.unwrap();
    assert_eq!(
        serde_json::to_string(&store.export(&id).await.unwrap()).unwrap(),
        SESSION
    );
    // And from a fresh connection to the same file.
    let reopened = Store::open(&dir.path().join("home/state.db"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&reopened.export(&id).await.unwrap()).unwrap(),
        SESSION
    );
}

#[tokio::test]
async fn carriers_are_stored_as_the_exact_text_received() {
    let (_dir, store) = store().await;
    let id = store
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    let row: (String, String, String) = sqlx::query_as(
        "SELECT reasoning_content, reasoning_details, tool_calls FROM messages WHERE session_id = $1 AND position = 1",
    )
    .bind(&id)
    .fetch_one(&store.pool)
    .await
    .unwrap();
    assert_eq!(row.0, r#""th\u00efnk \"q\"""#);
    assert!(row.1.starts_with(r#"[{"signature":"c2ln/+==","text":"t","type":"reasoning.text","n":123456789012345678901234567890}"#));
    assert!(row.2.contains(r#""arguments":"{\"a\":\u00201}""#));
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn append_continues_positions_and_counts() {
    let (_dir, store) = store().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let hi: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#,
    )
    .unwrap();
    store.append(&id, &hi).await.unwrap();
    store.append(&id, &hi[..1]).await.unwrap();
    let positions: Vec<i64> =
        sqlx::query_scalar("SELECT position FROM messages WHERE session_id = $1 ORDER BY position")
            .bind(&id)
            .fetch_all(&store.pool)
            .await
            .unwrap();
    assert_eq!(positions, [0, 1, 2]);
    assert_eq!(store.session(&id).await.unwrap().message_count, 3);
    assert!(matches!(
        store.append("nope", &hi).await,
        Err(StoreError::NotFound(_))
    ));
    // Nothing was written for the missing session.
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(rows, 3);
}

#[tokio::test]
async fn branch_copies_carriers_verdicts_and_parent() {
    let (_dir, store) = store().await;
    let id = store
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    let branch = store.branch(&id, Some(2)).await.unwrap();
    let (meta, messages) = store.load(&branch).await.unwrap();
    assert_eq!(meta.parent_id.as_deref(), Some(id.as_str()));
    assert_eq!(
        meta.model_config,
        store.session(&id).await.unwrap().model_config
    );
    let original = store.messages(&id).await.unwrap();
    assert_eq!(messages, original[..2]);
    let all = store.branch(&id, None).await.unwrap();
    assert_eq!(store.messages(&all).await.unwrap(), original);
}

#[tokio::test]
async fn delete_removes_the_session_and_its_messages() {
    let (_dir, store) = store().await;
    let id = store
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    let branch = store.branch(&id, None).await.unwrap();
    store.delete(&id).await.unwrap();
    assert!(matches!(
        store.session(&id).await,
        Err(StoreError::NotFound(_))
    ));
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE session_id = $1")
        .bind(&id)
        .fetch_one(&store.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    assert_eq!(store.session(&branch).await.unwrap().parent_id, None);
    assert!(matches!(
        store.delete(&id).await,
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn model_config_updates_and_listing() {
    let (_dir, store) = store().await;
    let a = store
        .create_session(&NewSession {
            title: Some("a".into()),
            ..NewSession::default()
        })
        .await
        .unwrap();
    let mut config = serde_json::Map::new();
    config.insert(
        "reasoning_rejected_carriers".into(),
        serde_json::json!([["p", "h", "m", ["reasoning_details"]]]),
    );
    store.set_model_config(&a, &config).await.unwrap();
    assert_eq!(store.session(&a).await.unwrap().model_config, config);
    assert_eq!(store.list().await.unwrap().len(), 1);
    assert!(matches!(
        store.set_model_config("nope", &config).await,
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn compaction_archives_rows_and_the_checkpoint_takes_their_place() {
    let (_dir, store) = store().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let msgs: Vec<Message> = (0..6)
        .map(|i| {
            Message::text(
                if i % 2 == 0 {
                    hermes_core::Role::User
                } else {
                    hermes_core::Role::Assistant
                },
                &format!("m{i}"),
            )
        })
        .collect();
    store.append(&id, &msgs).await.unwrap();
    let summary = Message::text(hermes_core::Role::User, "[Summary] m1..m3");
    let cleared = Message::text(hermes_core::Role::Assistant, "[cleared]");
    store
        .compact(
            &id,
            &[1, 2, 3, 5],
            &[(1, summary.clone(), true), (5, cleared, false)],
        )
        .await
        .unwrap();
    let active = store.messages(&id).await.unwrap();
    let texts: Vec<String> = active
        .iter()
        .map(|m| m.content.as_ref().unwrap().as_str().unwrap().into_owned())
        .collect();
    assert_eq!(texts, ["m0", "[Summary] m1..m3", "m4", "[cleared]"]);
    let all = store.all_messages(&id).await.unwrap();
    assert_eq!(all.len(), 8, "nothing is deleted");
    assert_eq!(
        all.iter()
            .filter(|m| m.archived)
            .map(|m| m.position)
            .collect::<Vec<_>>(),
        [1, 2, 3, 5]
    );
    assert!(all[6].checkpoint && !all[6].archived);
    assert!(!all[7].checkpoint && !all[7].archived);
    // Archiving a row twice is refused, and the transaction leaves the session as it was.
    assert!(
        store
            .compact(&id, &[4, 2], &[(4, summary.clone(), true)])
            .await
            .is_err()
    );
    assert_eq!(store.messages(&id).await.unwrap(), active);
    // A branch copies the active view.
    let branch = store.branch(&id, None).await.unwrap();
    assert_eq!(store.messages(&branch).await.unwrap(), active);
}

/// Builds the Python original's `state.db` (SPEC §9) at `path`, closed cleanly.
async fn python_original_db(path: &std::path::Path) {
    use sqlx::Connection as _;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(include_str!(
        "../tests/fixtures/python_original.sql"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn another_programs_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    python_original_db(&path).await;
    let before = std::fs::read(&path).unwrap();
    let listing = |dir: &std::path::Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let files_before = listing(dir.path());

    let found = crate::ownership(&path).await.unwrap();
    let crate::Ownership::Foreign(what) = &found else {
        panic!("{found:?}")
    };
    assert!(
        what.contains("messages") && what.contains("sessions"),
        "{what}"
    );
    let err = Store::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("not a hermes database"), "{err}");

    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "not one byte changed"
    );
    assert_eq!(listing(dir.path()), files_before, "no -wal or -shm created");
}

#[tokio::test]
async fn ownership_tells_absent_empty_ours_and_not_sqlite_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    assert_eq!(
        crate::ownership(&path).await.unwrap(),
        crate::Ownership::Absent
    );
    std::fs::write(&path, b"").unwrap();
    assert_eq!(
        crate::ownership(&path).await.unwrap(),
        crate::Ownership::Ours
    );
    drop(Store::open(&path).await.unwrap());
    assert_eq!(
        crate::ownership(&path).await.unwrap(),
        crate::Ownership::Ours
    );

    let text = dir.path().join("notes.db");
    std::fs::write(&text, b"just some notes\n").unwrap();
    assert_eq!(
        crate::ownership(&text).await.unwrap(),
        crate::Ownership::Foreign("not an SQLite database".into())
    );
    assert!(Store::open(&text).await.is_err());
    assert_eq!(std::fs::read(&text).unwrap(), b"just some notes\n");
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_database_and_its_folder_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new-home/state.db");
    let store = Store::open(&path).await.unwrap();
    let id = store.create_session(&NewSession::default()).await.unwrap();
    store
        .append(&id, &[Message::text(hermes_core::Role::User, "q")])
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("new-home")), 0o700);
    assert_eq!(mode(&path), 0o600);
    for suffix in ["-wal", "-shm"] {
        let side = dir.path().join(format!("new-home/state.db{suffix}"));
        assert!(side.exists(), "{suffix} exists while the store is open");
        assert_eq!(mode(&side), 0o600, "{suffix}");
    }
}

#[tokio::test]
async fn a_base_url_is_confirmed_only_by_the_user() {
    let (_dir, store) = store().await;
    let imported = store
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    assert!(!store.session(&imported).await.unwrap().base_url_confirmed);
    let branch = store.branch(&imported, None).await.unwrap();
    assert!(!store.session(&branch).await.unwrap().base_url_confirmed);
    store
        .confirm_base_url(&imported, "https://gw.example/v1")
        .await
        .unwrap();
    let meta = store.session(&imported).await.unwrap();
    assert!(meta.base_url_confirmed);
    assert_eq!(meta.base_url.as_deref(), Some("https://gw.example/v1"));
    let branch = store.branch(&imported, None).await.unwrap();
    assert!(store.session(&branch).await.unwrap().base_url_confirmed);
    let made = store
        .create_session(&NewSession {
            base_url_confirmed: true,
            ..NewSession::default()
        })
        .await
        .unwrap();
    assert!(store.session(&made).await.unwrap().base_url_confirmed);
}

#[tokio::test]
async fn stored_key_order_survives_storage_byte_for_byte() {
    let (dir, store) = store().await;
    let text = r#"{"format":"hermes.session.v1","model_config":{},"messages":[{"content":"q","role":"user"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}],"x_first":1,"reasoning_content":"t","content":null,"x_last":[2]},{"role":"tool","tool_call_id":"c1","timestamp":1.5,"content":"12:00"}]}"#;
    let id = store.import(&parse_history(text).unwrap()).await.unwrap();
    let reopened = Store::open(&dir.path().join("home/state.db"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&reopened.export(&id).await.unwrap()).unwrap(),
        text
    );
}
