//! Store tests on real SQLite files and, for every test not about SQLite itself, on a real
//! PostgreSQL server too ([`both!`]).

use hermes_core::{Message, parse_history};

use crate::testing::TestDb;
use crate::{Backend, NewSession, Store, StoreError};

const SESSION: &str = r#"{"format":"hermes.session.v1","provider":"openrouter","model":"a/m","base_url":"https://openrouter.ai/api/v1","title":"t","model_config":{"reasoning_rejected_carriers":[["openrouter","openrouter.ai","a/m",["reasoning"]]],"temperature":0.5},"messages":[{"role":"user","content":"caf\u00e9"},{"role":"assistant","content":"","reasoning_content":"th\u00efnk \"q\"","reasoning":"r","reasoning_details":[{"signature":"c2ln/+==","text":"t","type":"reasoning.text","n":123456789012345678901234567890},{"type":"reasoning.encrypted","data":"QUJD"},{"type":"hermes.native_assistant","extra_content":{"google":{"thought_signature":"GS"}}}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{\"a\":\u00201}","thought_signature":"FS"},"extra_content":{"google":{"thought_signature":"TS"}},"x":1}],"x_unknown":{"b":2,"a":1},"origin":{"provider":"openrouter","host":"openrouter.ai","model":"a/m"}},{"role":"tool","content":"12:00","tool_call_id":"c1","name":"now"}]}"#;

/// Runs the async test `$name(db: TestDb)` once per backend: `$name::sqlite` on a fresh SQLite
/// file, `$name::postgres` on a fresh schema of the test server (see [`crate::testing`]).
macro_rules! both {
    ($name:ident) => {
        both!(@ $name, #[tokio::test]);
    };
    // The same on a multi-threaded runtime, for tests whose tasks must run in parallel.
    ($name:ident, multi_thread) => {
        both!(@ $name, #[tokio::test(flavor = "multi_thread", worker_threads = 4)]);
    };
    (@ $name:ident, #[$runtime:meta]) => {
        mod $name {
            #[$runtime]
            async fn sqlite() {
                let db = crate::testing::TestDb::new(crate::Backend::Sqlite)
                    .await
                    .unwrap();
                super::$name(db).await;
            }
            #[$runtime]
            async fn postgres() {
                if let Some(db) = crate::testing::TestDb::new(crate::Backend::Postgres).await {
                    super::$name(db).await;
                }
            }
        }
    };
}

/// The store of `db` with [`SESSION`] imported, and the session's id.
async fn imported(db: &TestDb) -> (Store, String) {
    let store = db.open().await;
    let id = store
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    (store, id)
}

/// Three gateway keys: two of tenant `acme`, then one of `globex`.
async fn acme_twice_and_globex(store: &Store) -> [String; 3] {
    let mut keys = Vec::new();
    for tenant in ["acme", "acme", "globex"] {
        keys.push(store.add_gateway_key(tenant).await.unwrap());
    }
    keys.try_into().unwrap()
}

/// The ids [`Store::list`] gives, in its order.
async fn listed_ids(store: &Store) -> Vec<String> {
    store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect()
}

/// A new session of tenant `acme` (a gateway's conversation).
fn acme() -> NewSession {
    NewSession {
        tenant: Some("acme".into()),
        ..NewSession::default()
    }
}

/// The positions of session `id`'s rows (archived ones too), in order.
async fn positions(store: &Store, id: &str) -> Vec<i64> {
    sqlx::query_scalar("SELECT position FROM messages WHERE session_id = $1 ORDER BY position")
        .bind(id)
        .fetch_all(&store.pool)
        .await
        .unwrap()
}

/// Runs `write(handle, id, name)` for every `(handle, name)` of `writers`, all at once, and
/// waits for every one.
async fn write_at_once<F, Fut>(id: &str, writers: Vec<(Store, &'static str)>, write: F)
where
    F: Fn(Store, String, &'static str) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures_util::future::join_all(
        writers
            .into_iter()
            .map(|(store, name)| write(store, id.to_owned(), name)),
    )
    .await;
}

/// Every one of `results` (each a call naming a session that does not exist) is
/// [`StoreError::NotFound`].
fn all_not_found<const N: usize>(results: [Result<(), StoreError>; N]) {
    for result in results {
        assert!(matches!(result, Err(StoreError::NotFound(_))), "{result:?}");
    }
}

/// With `damaged` stored as session `id`'s `model_config`, `record` (run only then) fails as
/// [`StoreError::Corrupt`] and leaves the stored text as it was: unreadable verdicts are
/// reported, never overwritten.
async fn damaged_is_kept(
    store: &Store,
    id: &str,
    damaged: &str,
    record: impl std::future::Future<Output = Result<(), StoreError>>,
) {
    set_raw_config(store, id, damaged).await;
    let err = record.await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(raw_config(store, id).await, damaged);
}

/// Two handles on the store of `db` and a new session, made through the first.
async fn two_handles(db: &TestDb) -> (Store, Store, String) {
    let a = db.open().await;
    let b = db.open().await;
    let id = a.create_session(&NewSession::default()).await.unwrap();
    (a, b, id)
}

mod gateway;
mod left_out;
mod limits;
mod lineage;
mod migrations;
mod responses;
mod staged;
mod tip;

both!(import_then_export_is_byte_identical);
async fn import_then_export_is_byte_identical(db: TestDb) {
    let store = db.open().await;
    let file = parse_history(SESSION).unwrap();
    let id = store.import(&file).await.unwrap();
    assert_eq!(
        serde_json::to_string(&store.export(&id).await.unwrap()).unwrap(),
        SESSION
    );
    // And from a fresh connection to the same file.
    let reopened = db.open().await;
    assert_eq!(
        serde_json::to_string(&reopened.export(&id).await.unwrap()).unwrap(),
        SESSION
    );
}

both!(a_history_longer_than_one_insert_is_stored_whole_in_order);
/// A first contact of 200 messages (several multi-row inserts, `row::ROWS_PER_INSERT` each) is
/// stored with every position in order and every byte as received.
async fn a_history_longer_than_one_insert_is_stored_whole_in_order(db: TestDb) {
    let store = db.open().await;
    let mut file = parse_history(SESSION).unwrap();
    let one = file.messages.clone();
    file.messages = one.iter().cycle().take(200).cloned().collect();
    assert!(file.messages.len() > 3 * crate::row::ROWS_PER_INSERT);
    let id = store
        .create_with_messages(&NewSession::default(), &file.messages)
        .await
        .unwrap();
    let stored = db.open().await.messages(&id).await.unwrap();
    assert_eq!(stored, file.messages);
    assert_eq!(positions(&store, &id).await, (0..200).collect::<Vec<i64>>());
    assert_eq!(store.session(&id).await.unwrap().message_count, 200);
}

both!(carriers_are_stored_as_the_exact_text_received);
async fn carriers_are_stored_as_the_exact_text_received(db: TestDb) {
    let (store, id) = imported(&db).await;
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
    let column_type: String = match store.backend() {
        Backend::Sqlite => {
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(&store.pool)
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            sqlx::query_scalar("SELECT type FROM pragma_table_info('messages') WHERE name = 'reasoning_details'")
                .fetch_one(&store.pool)
                .await
                .unwrap()
        }
        // Never jsonb, which would reorder keys and rewrite whitespace.
        Backend::Postgres => sqlx::query_scalar(
            "SELECT data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'messages' AND column_name = 'reasoning_details'",
        )
        .fetch_one(&store.pool)
        .await
        .unwrap(),
    };
    assert_eq!(column_type.to_lowercase(), "text");
}

both!(append_continues_positions_and_counts);
async fn append_continues_positions_and_counts(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let hi: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]"#,
    )
    .unwrap();
    store.append(&id, &hi).await.unwrap();
    store.append(&id, &hi[..1]).await.unwrap();
    assert_eq!(positions(&store, &id).await, [0, 1, 2]);
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

both!(branch_copies_carriers_verdicts_and_parent);
async fn branch_copies_carriers_verdicts_and_parent(db: TestDb) {
    let (store, id) = imported(&db).await;
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

both!(branch_beyond_the_end_fails_and_creates_nothing);
async fn branch_beyond_the_end_fails_and_creates_nothing(db: TestDb) {
    let (store, id) = imported(&db).await;
    // At the end is the whole session; one past it is an error naming the count.
    let at_end = store.branch(&id, Some(3)).await.unwrap();
    assert_eq!(store.messages(&at_end).await.unwrap().len(), 3);
    let err = store.branch(&id, Some(999_999)).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::BranchBeyondEnd {
                at: 999_999,
                count: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("999999") && text.contains("3 messages"),
        "{text}"
    );
    assert!(store.branch(&id, Some(4)).await.is_err());
    assert_eq!(store.list().await.unwrap().len(), 2, "nothing was created");
}

both!(delete_removes_the_session_and_its_messages);
async fn delete_removes_the_session_and_its_messages(db: TestDb) {
    let (store, id) = imported(&db).await;
    let branch = store.branch(&id, None).await.unwrap();
    store.delete(&id).await.unwrap();
    assert!(matches!(
        store.session(&id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(rows_of(&store, &id).await, 0);
    assert_eq!(store.session(&branch).await.unwrap().parent_id, None);
    assert!(matches!(
        store.delete(&id).await,
        Err(StoreError::NotFound(_))
    ));
}

both!(model_config_updates_and_listing);
async fn model_config_updates_and_listing(db: TestDb) {
    let store = db.open().await;
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

both!(compaction_archives_rows_and_the_checkpoint_takes_their_place);
async fn compaction_archives_rows_and_the_checkpoint_takes_their_place(db: TestDb) {
    let store = db.open().await;
    let id = six_messages(&store).await;
    let summary = Message::text(hermes_core::Role::User, "[Summary] m1..m3");
    let cleared = Message::text(hermes_core::Role::Assistant, "[cleared]");
    compact_by_tuples(&store, &id, &summary, &cleared).await;
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

/// Builds the Python original's `state.db` (docs/spec.md §9) at `path`, closed cleanly.
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

both!(a_base_url_is_confirmed_only_by_the_user);
async fn a_base_url_is_confirmed_only_by_the_user(db: TestDb) {
    let store = db.open().await;
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

both!(stored_key_order_survives_storage_byte_for_byte);
async fn stored_key_order_survives_storage_byte_for_byte(db: TestDb) {
    let store = db.open().await;
    let text = r#"{"format":"hermes.session.v1","model_config":{},"messages":[{"content":"q","role":"user"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}],"x_first":1,"reasoning_content":"t","content":null,"x_last":[2]},{"role":"tool","tool_call_id":"c1","timestamp":1.5,"content":"12:00"}]}"#;
    let id = store.import(&parse_history(text).unwrap()).await.unwrap();
    let reopened = db.open().await;
    assert_eq!(
        serde_json::to_string(&reopened.export(&id).await.unwrap()).unwrap(),
        text
    );
}

fn target(provider: &str, model: &str) -> hermes_core::RouteTarget {
    hermes_core::RouteTarget::new(provider, Some("https://api.example/v1"), model)
}

/// Records the verdict [`rd`] for `p`/`m` ([`target`]) on session `id`.
async fn record_pm(store: &Store, id: &str) {
    store
        .record_verdict(id, &target("p", "m"), rd())
        .await
        .unwrap();
}

/// How many verdicts `filter` clears on session `id`.
async fn cleared(store: &Store, id: &str, filter: &crate::VerdictFilter) -> usize {
    store.clear_verdicts(id, filter).await.unwrap()
}

/// A session's token counters: input, output, reasoning, cache read, cache write.
fn tokens(meta: &crate::SessionMeta) -> (i64, i64, i64, i64, i64) {
    (
        meta.input_tokens,
        meta.output_tokens,
        meta.reasoning_tokens,
        meta.cache_read_tokens,
        meta.cache_write_tokens,
    )
}

/// The parent of session `id`.
async fn parent_of(store: &Store, id: &str) -> Option<String> {
    store.session(id).await.unwrap().parent_id
}

fn rd() -> hermes_core::CarrierSet {
    hermes_core::CarrierSet::NONE.with(hermes_core::Carrier::ReasoningDetails)
}

/// Sets the session's `column` to `value` directly, past the store's API.
async fn set_column<T>(store: &Store, id: &str, column: &str, value: T)
where
    T: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Send,
{
    let sql = format!("UPDATE sessions SET {column} = $1 WHERE id = $2");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(value)
        .bind(id)
        .execute(&store.pool)
        .await
        .unwrap();
}

/// Stores `config` as the session's `model_config` text, exactly as given.
async fn set_raw_config(store: &Store, id: &str, config: &str) {
    set_column(store, id, "model_config", config.to_owned()).await;
}

async fn raw_config(store: &Store, id: &str) -> String {
    scalar(store, "SELECT model_config FROM sessions WHERE id = $1", id).await
}

/// Compacts session `id`: its row at `position` archived, `message` in its place (a checkpoint
/// when `checkpoint`).
async fn compact_one(store: &Store, id: &str, position: i64, message: &Message, checkpoint: bool) {
    store
        .compact(id, &[position], &[(position, message.clone(), checkpoint)])
        .await
        .unwrap();
}

/// How many rows the `messages` table holds for `id`.
async fn rows_of(store: &Store, id: &str) -> i64 {
    scalar(
        store,
        "SELECT COUNT(*) FROM messages WHERE session_id = $1",
        id,
    )
    .await
}

/// The one value `sql` selects for the id `id` (its `$1`).
async fn scalar<T>(store: &Store, sql: &'static str, id: &str) -> T
where
    T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + Unpin,
{
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(&store.pool)
        .await
        .unwrap()
}

both!(a_verdict_cleared_by_another_handle_is_not_brought_back_by_the_next_record);
async fn a_verdict_cleared_by_another_handle_is_not_brought_back_by_the_next_record(db: TestDb) {
    let chat = db.open().await;
    let id = chat.create_session(&NewSession::default()).await.unwrap();
    let v1 = target("p", "old-model");
    let v2 = target("p", "new-model");
    chat.record_verdict(&id, &v1, rd()).await.unwrap();
    // The chat holds V1 in memory, as a running chat does.
    let in_memory = chat.verdicts(&id).await.unwrap();
    assert_eq!(in_memory.refused_for(&v1), rd());

    // Meanwhile `hermes verdicts clear`, through its own handle on the same file, clears V1.
    let other = db.open().await;
    assert_eq!(
        other
            .clear_verdicts(&id, &crate::VerdictFilter::default())
            .await
            .unwrap(),
        1
    );

    // Then the chat records V2: the merge happens on what is stored now, not on its copy.
    let merged = chat.record_verdict(&id, &v2, rd()).await.unwrap();
    assert_eq!(merged.0.len(), 1, "{merged:?}");
    assert_eq!(merged.refused_for(&v2), rd());
    for handle in [&chat, &other] {
        let stored = handle.verdicts(&id).await.unwrap();
        assert_eq!(stored, merged);
        assert!(stored.refused_for(&v1).is_empty(), "V1 came back");
    }
}

both!(two_handles_recording_at_once_keep_every_verdict);
async fn two_handles_recording_at_once_keep_every_verdict(db: TestDb) {
    let (a, b, id) = two_handles(&db).await;
    let writers = vec![(a.clone(), "a"), (b.clone(), "b"), (a.clone(), "c")];
    write_at_once(&id, writers, |store, id, prefix| async move {
        for i in 0..12 {
            store
                .record_verdict(&id, &target("p", &format!("{prefix}{i}")), rd())
                .await
                .unwrap();
        }
    })
    .await;
    let stored = b.verdicts(&id).await.unwrap();
    assert_eq!(stored.0.len(), 36, "{stored:?}");
    for prefix in ["a", "b", "c"] {
        for i in 0..12 {
            assert_eq!(
                stored.refused_for(&target("p", &format!("{prefix}{i}"))),
                rd()
            );
        }
    }
}

both!(verdict_changes_keep_every_other_member_of_model_config_byte_for_byte);
async fn verdict_changes_keep_every_other_member_of_model_config_byte_for_byte(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    set_raw_config(
        &store,
        &id,
        r#"{"a":1.0e5,"reasoning_rejected_carriers":[["openrouter","api.example","M",["reasoning"]]],"z":{"caf\u00e9":[1,2]}}"#,
    )
    .await;
    // Widening the existing verdict rewrites it in place.
    let merged = store
        .record_verdict(&id, &target("OpenRouter", "M"), rd())
        .await
        .unwrap();
    assert_eq!(merged.0.len(), 1);
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"reasoning_rejected_carriers":[["openrouter","api.example","M",["reasoning","reasoning_details"]]],"z":{"caf\u00e9":[1,2]}}"#
    );
    store
        .record_verdict(&id, &target("x", "m"), rd())
        .await
        .unwrap();
    // Nothing new learned: nothing written.
    let before = store.session(&id).await.unwrap().updated_at;
    store
        .record_verdict(&id, &target("x", "m"), rd())
        .await
        .unwrap();
    assert_eq!(store.session(&id).await.unwrap().updated_at, before);

    // Provider compared lowercased, model case kept.
    let filter = |provider: Option<&str>, model: Option<&str>| crate::VerdictFilter {
        provider: provider.map(str::to_owned),
        model: model.map(str::to_owned),
        wire: None,
    };
    assert_eq!(cleared(&store, &id, &filter(None, Some("m"))).await, 1);
    assert_eq!(
        cleared(&store, &id, &filter(Some("X"), None)).await,
        0,
        "already gone"
    );
    assert_eq!(
        cleared(&store, &id, &filter(Some(" OpenRouter "), Some("M"))).await,
        1
    );
    // No verdict left: the key goes, the rest stays as it was.
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"z":{"caf\u00e9":[1,2]}}"#
    );
    assert_eq!(
        store.verdicts(&id).await.unwrap(),
        hermes_core::Verdicts::default()
    );
    // A new verdict goes at the end.
    record_pm(&store, &id).await;
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"z":{"caf\u00e9":[1,2]},"reasoning_rejected_carriers":[["p","api.example","m",["reasoning_details"]]]}"#
    );

    all_not_found([
        store.verdicts("nope").await.map(drop),
        store
            .record_verdict("nope", &target("p", "m"), rd())
            .await
            .map(drop),
        store
            .clear_verdicts("nope", &crate::VerdictFilter::default())
            .await
            .map(drop),
    ]);
    let damaged = r#"{"reasoning_rejected_carriers":[["p","h","m",["thinking"]]]}"#;
    damaged_is_kept(&store, &id, damaged, async {
        store
            .record_verdict(&id, &target("p", "m"), rd())
            .await
            .map(drop)
    })
    .await;
}

fn wire_filter(
    wire: Option<&str>,
    provider: Option<&str>,
    model: Option<&str>,
) -> crate::VerdictFilter {
    crate::VerdictFilter {
        provider: provider.map(str::to_owned),
        model: model.map(str::to_owned),
        wire: wire.map(str::to_owned),
    }
}

both!(wire_verdicts_are_recorded_merged_and_cleared);
async fn wire_verdicts_are_recorded_merged_and_cleared(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let t = target("Anthropic", "claude-x");
    assert_eq!(
        store.wire_verdicts(&id).await.unwrap(),
        hermes_core::WireVerdicts::default()
    );
    let v = store
        .record_wire_verdict(&id, "anthropic", &t, &["thinking"])
        .await
        .unwrap();
    assert_eq!(v.refused_for("anthropic", &t), ["thinking"]);
    assert!(v.refused_for("gemini", &t).is_empty());
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"hermes_wire_verdicts":[["anthropic","anthropic","api.example","claude-x",["thinking"]]]}"#
    );
    // Widening merges into the stored verdict; the fields stay sorted.
    let v = store
        .record_wire_verdict(&id, "anthropic", &t, &["signature", "thinking"])
        .await
        .unwrap();
    assert_eq!(v.0.len(), 1);
    assert_eq!(v.refused_for("anthropic", &t), ["signature", "thinking"]);
    // Nothing new learned: nothing written.
    let before = store.session(&id).await.unwrap().updated_at;
    store
        .record_wire_verdict(&id, "anthropic", &t, &["thinking"])
        .await
        .unwrap();
    assert_eq!(store.session(&id).await.unwrap().updated_at, before);
    // Another wire for the same target is a verdict of its own.
    store
        .record_wire_verdict(&id, "gemini", &t, &["thought_signature"])
        .await
        .unwrap();

    // The merge happens on what is stored now: a clear by another handle stays cleared.
    let other = db.open().await;
    assert_eq!(
        other
            .clear_verdicts(&id, &wire_filter(Some("gemini"), None, None))
            .await
            .unwrap(),
        1
    );
    let merged = store
        .record_wire_verdict(&id, "anthropic", &target("p", "m"), &["x"])
        .await
        .unwrap();
    assert_eq!(merged.0.len(), 2, "{merged:?}");
    assert!(merged.refused_for("gemini", &t).is_empty(), "came back");
    assert_eq!(other.wire_verdicts(&id).await.unwrap(), merged);

    // The default filter clears every wire; the key leaves model_config.
    assert_eq!(
        cleared(&store, &id, &crate::VerdictFilter::default()).await,
        2
    );
    assert_eq!(raw_config(&store, &id).await, "{}");

    all_not_found([
        store.wire_verdicts("nope").await.map(drop),
        store
            .record_wire_verdict("nope", "anthropic", &t, &["thinking"])
            .await
            .map(drop),
    ]);
    let damaged = r#"{"hermes_wire_verdicts":[["anthropic","p","h","m"]]}"#;
    damaged_is_kept(&store, &id, damaged, async {
        store
            .record_wire_verdict(&id, "anthropic", &t, &["thinking"])
            .await
            .map(drop)
    })
    .await;
}

both!(chat_and_wire_verdicts_share_model_config_and_each_change_rewrites_only_its_member);
async fn chat_and_wire_verdicts_share_model_config_and_each_change_rewrites_only_its_member(
    db: TestDb,
) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    set_raw_config(
        &store,
        &id,
        r#"{"a":1.0e5,"reasoning_rejected_carriers":[["p","api.example","m",["reasoning"]]],"mid":"caf\u00e9","hermes_wire_verdicts":[["anthropic","p","api.example","m",["thinking"]]],"z":[1 ,2]}"#,
    )
    .await;
    // A chat verdict rewrites only its own member.
    record_pm(&store, &id).await;
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"reasoning_rejected_carriers":[["p","api.example","m",["reasoning","reasoning_details"]]],"mid":"caf\u00e9","hermes_wire_verdicts":[["anthropic","p","api.example","m",["thinking"]]],"z":[1 ,2]}"#
    );
    // A wire verdict rewrites only its own member.
    store
        .record_wire_verdict(&id, "anthropic", &target("p", "m"), &["signature"])
        .await
        .unwrap();
    let both = r#"{"a":1.0e5,"reasoning_rejected_carriers":[["p","api.example","m",["reasoning","reasoning_details"]]],"mid":"caf\u00e9","hermes_wire_verdicts":[["anthropic","p","api.example","m",["signature","thinking"]]],"z":[1 ,2]}"#;
    assert_eq!(raw_config(&store, &id).await, both);
    // Both are kept, each read by its own accessor.
    assert_eq!(
        store.verdicts(&id).await.unwrap().0.len(),
        1,
        "chat verdicts"
    );
    assert_eq!(
        store
            .wire_verdicts(&id)
            .await
            .unwrap()
            .refused_for("anthropic", &target("p", "m")),
        ["signature", "thinking"]
    );
    // A filter that selects nothing writes nothing.
    assert_eq!(
        cleared(&store, &id, &wire_filter(None, Some("q"), None)).await,
        0
    );
    assert_eq!(raw_config(&store, &id).await, both);
    // Clearing every wire removes both members in one change; the rest stays as it was.
    assert_eq!(
        cleared(&store, &id, &wire_filter(None, Some("P"), Some("m"))).await,
        2
    );
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"mid":"caf\u00e9","z":[1 ,2]}"#
    );
    // New members go at the end, each keeping the other's place.
    store
        .record_wire_verdict(&id, "gemini", &target("p", "m"), &["thought_signature"])
        .await
        .unwrap();
    record_pm(&store, &id).await;
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"a":1.0e5,"mid":"caf\u00e9","z":[1 ,2],"hermes_wire_verdicts":[["gemini","p","api.example","m",["thought_signature"]]],"reasoning_rejected_carriers":[["p","api.example","m",["reasoning_details"]]]}"#
    );
}

both!(the_wire_filter_selects_chat_one_wire_or_every_wire);
async fn the_wire_filter_selects_chat_one_wire_or_every_wire(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let fill = || async {
        set_raw_config(&store, &id, "{}").await;
        record_pm(&store, &id).await;
        for wire in ["anthropic", "gemini"] {
            store
                .record_wire_verdict(&id, wire, &target("p", "m"), &["f"])
                .await
                .unwrap();
        }
    };
    let wires =
        |v: hermes_core::WireVerdicts| -> Vec<String> { v.0.into_iter().map(|v| v.wire).collect() };

    fill().await;
    assert_eq!(
        cleared(&store, &id, &wire_filter(Some("chat"), None, None)).await,
        1
    );
    assert!(store.verdicts(&id).await.unwrap().0.is_empty());
    assert_eq!(
        wires(store.wire_verdicts(&id).await.unwrap()),
        ["anthropic", "gemini"]
    );

    fill().await;
    assert_eq!(
        cleared(&store, &id, &wire_filter(Some(" Gemini "), None, None)).await,
        1
    );
    assert_eq!(store.verdicts(&id).await.unwrap().0.len(), 1);
    assert_eq!(
        wires(store.wire_verdicts(&id).await.unwrap()),
        ["anthropic"]
    );
    // A wire filter still narrows by provider and model.
    assert_eq!(
        cleared(
            &store,
            &id,
            &wire_filter(Some("anthropic"), Some("p"), Some("M"))
        )
        .await,
        0
    );

    fill().await;
    assert_eq!(
        cleared(&store, &id, &wire_filter(None, Some("p"), None)).await,
        3
    );
    assert_eq!(raw_config(&store, &id).await, "{}");

    // A chat-only clear does not read the wire member, so a damaged one does not block it
    // (and is left as it was).
    set_raw_config(
        &store,
        &id,
        r#"{"hermes_wire_verdicts":7,"reasoning_rejected_carriers":[["p","h","m",["reasoning"]]]}"#,
    )
    .await;
    assert_eq!(
        cleared(&store, &id, &wire_filter(Some("chat"), None, None)).await,
        1
    );
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"hermes_wire_verdicts":7}"#
    );
    let err = store
        .clear_verdicts(&id, &crate::VerdictFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
}

both!(usage_sums_every_counter_across_calls);
async fn usage_sums_every_counter_across_calls(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let meta = store.session(&id).await.unwrap();
    assert_eq!(tokens(&meta), (0, 0, 0, 0, 0));
    for usage in [
        hermes_core::Usage::new(100, 40, 25, 60, 10),
        hermes_core::Usage::new(7, 5, 3, 2, 0),
    ] {
        store.add_usage(&id, &usage).await.unwrap();
    }
    for meta in [
        store.session(&id).await.unwrap(),
        store.list().await.unwrap().remove(0),
    ] {
        assert_eq!(tokens(&meta), (107, 45, 28, 62, 10));
    }
    // A count beyond what SQLite holds is taken as the largest it does.
    let other = store.create_session(&NewSession::default()).await.unwrap();
    store
        .add_usage(&other, &hermes_core::Usage::new(u64::MAX, 0, 0, 0, 0))
        .await
        .unwrap();
    assert_eq!(store.session(&other).await.unwrap().input_tokens, i64::MAX);
}

both!(a_tenants_usage_is_summed_by_minute_and_day_and_swept);
async fn a_tenants_usage_is_summed_by_minute_and_day_and_swept(db: TestDb) {
    let store = db.open().await;
    let acme = store.create_session(&acme()).await.unwrap();
    let cli = store.create_session(&NewSession::default()).await.unwrap();
    let before = crate::now_ms();
    for (id, usage) in [
        (&acme, hermes_core::Usage::new(100, 40, 25, 60, 10)),
        (&acme, hermes_core::Usage::new(7, 5, 3, 2, 0)),
        (&cli, hermes_core::Usage::new(1000, 1000, 0, 0, 0)),
    ] {
        store.add_usage(id, &usage).await.unwrap();
    }
    // Input + output of the tenant's conversations only; a CLI session has no tenant.
    assert_eq!(
        store.tenant_tokens("acme", before, 0).await.unwrap(),
        (152, 152)
    );
    assert_eq!(
        store.tenant_tokens("acme", i64::MAX, 0).await.unwrap(),
        (0, 152)
    );
    assert_eq!(store.tenant_tokens("globex", 0, 0).await.unwrap(), (0, 0));
    assert_eq!(store.sweep_tenant_usage(before).await.unwrap(), 0);
    assert_eq!(store.sweep_tenant_usage(i64::MAX).await.unwrap(), 2);
    assert_eq!(store.tenant_tokens("acme", 0, 0).await.unwrap(), (0, 0));
}

/// A session of six alternating messages `m0`..`m5`.
async fn six_messages(store: &Store) -> String {
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let msgs: Vec<Message> = (0..6)
        .map(|i| {
            let role = if i % 2 == 0 {
                hermes_core::Role::User
            } else {
                hermes_core::Role::Assistant
            };
            Message::text(role, &format!("m{i}"))
        })
        .collect();
    store.append(&id, &msgs).await.unwrap();
    id
}

/// Compacts the session `id` of [`six_messages`] by the tuples: m1..m3 archived with `summary`
/// in slot 1 as a checkpoint, m5 archived with `cleared` in its place.
async fn compact_by_tuples(store: &Store, id: &str, summary: &Message, cleared: &Message) {
    store
        .compact(
            id,
            &[1, 2, 3, 5],
            &[(1, summary.clone(), true), (5, cleared.clone(), false)],
        )
        .await
        .unwrap();
}

both!(a_typed_compaction_plan_is_stored_as_the_tuples_are);
async fn a_typed_compaction_plan_is_stored_as_the_tuples_are(db: TestDb) {
    use crate::{CompactionPlan, PlannedInsert, RowKind};
    let store = db.open().await;
    let summary = Message::text(hermes_core::Role::User, "[Summary] m1..m3");
    let cleared = Message::text(hermes_core::Role::Assistant, "[cleared]");

    let typed = six_messages(&store).await;
    let plan = CompactionPlan {
        archive: vec![1, 2, 3, 5],
        inserts: vec![
            PlannedInsert {
                slot: 1,
                message: summary.clone(),
                kind: RowKind::Checkpoint,
            },
            PlannedInsert {
                slot: 5,
                message: cleared.clone(),
                kind: RowKind::Message,
            },
        ],
    };
    store.apply_compaction(&typed, &plan).await.unwrap();

    let tuples = six_messages(&store).await;
    compact_by_tuples(&store, &tuples, &summary, &cleared).await;

    assert_eq!(
        store.all_messages(&typed).await.unwrap(),
        store.all_messages(&tuples).await.unwrap()
    );
    let active = store.active(&typed).await.unwrap();
    assert_eq!(
        active.iter().map(|m| m.position).collect::<Vec<_>>(),
        [0, 6, 4, 7]
    );
    assert!(active[1].checkpoint && !active[3].checkpoint);
    assert_eq!(store.session(&typed).await.unwrap().message_count, 8);

    // A slot that is not a row of the session fails the whole plan.
    let bad = CompactionPlan {
        archive: vec![0],
        inserts: vec![PlannedInsert {
            slot: 99,
            message: summary,
            kind: RowKind::Checkpoint,
        }],
    };
    let err = store.apply_compaction(&typed, &bad).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { position: 99, .. }),
        "{err}"
    );
    assert_eq!(store.active(&typed).await.unwrap(), active);
}

both!(a_failed_query_is_a_database_error_without_sqlx_in_its_type);
async fn a_failed_query_is_a_database_error_without_sqlx_in_its_type(db: TestDb) {
    let store = db.open().await;
    let orphan = NewSession {
        parent_id: Some("no-such-parent".into()),
        ..NewSession::default()
    };
    let err = store.create_session(&orphan).await.unwrap_err();
    let StoreError::Database(db) = &err else {
        panic!("{err:?}")
    };
    let (code, text) = match store.backend() {
        // SQLITE_CONSTRAINT_FOREIGNKEY.
        Backend::Sqlite => ("787", "FOREIGN KEY"),
        // foreign_key_violation.
        Backend::Postgres => ("23503", "foreign key"),
    };
    assert_eq!(db.code().as_deref(), Some(code), "{db}");
    assert!(err.to_string().starts_with("database error: "), "{err}");
    assert!(err.to_string().contains(text), "{err}");
}

#[tokio::test]
async fn a_database_another_hermes_is_creating_counts_as_ours() {
    use sqlx::Connection as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    // The moment sqlx's migrator has made its table and applied nothing yet.
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::query(
        "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, \
         checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    assert_eq!(
        crate::ownership(&path).await.unwrap(),
        crate::Ownership::Ours
    );
    let store = Store::open(&path).await.unwrap();
    assert!(store.list().await.unwrap().is_empty(), "and it migrates");
}

both!(the_thinking_request_round_trips_as_its_own_member);
async fn the_thinking_request_round_trips_as_its_own_member(db: TestDb) {
    use crate::{StoredThinking, THINKING_KEY};
    use hermes_core::{Effort, ThinkingRequest};

    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    assert_eq!(store.thinking(&id).await.unwrap(), None);
    for effort in Effort::ALL {
        let thinking = StoredThinking::Effort(effort);
        assert_eq!(StoredThinking::parse(thinking.as_str()), Some(thinking));
        assert_eq!(thinking.request(), ThinkingRequest::Effort(effort));
        store.set_thinking(&id, Some(thinking)).await.unwrap();
        assert_eq!(store.thinking(&id).await.unwrap(), Some(thinking));
        assert_eq!(
            raw_config(&store, &id).await,
            format!(r#"{{"{THINKING_KEY}":"{}"}}"#, effort.as_str())
        );
    }
    let before = store
        .set_thinking(&id, Some(StoredThinking::Off))
        .await
        .unwrap();
    assert_eq!(before, Some(StoredThinking::Effort(Effort::Max)));
    assert_eq!(
        raw_config(&store, &id).await,
        r#"{"hermes_thinking":"off"}"#
    );
    // Another handle (another process) reads what was stored.
    let other = db.open().await;
    assert_eq!(
        other.thinking(&id).await.unwrap(),
        Some(StoredThinking::Off)
    );
    assert_eq!(
        other.session(&id).await.unwrap().model_config[THINKING_KEY],
        "off"
    );
    // The same value again writes nothing.
    let updated = store.session(&id).await.unwrap().updated_at;
    store
        .set_thinking(&id, Some(StoredThinking::Off))
        .await
        .unwrap();
    assert_eq!(store.session(&id).await.unwrap().updated_at, updated);
    // No preference is no member at all.
    store.set_thinking(&id, None).await.unwrap();
    assert_eq!(raw_config(&store, &id).await, "{}");
    assert_eq!(store.thinking(&id).await.unwrap(), None);
    assert_eq!(
        StoredThinking::from_request(ThinkingRequest::NoPreference),
        None
    );
    assert_eq!(
        StoredThinking::from_request(ThinkingRequest::Off),
        Some(StoredThinking::Off)
    );

    // A new session stores it with its first messages; a branch inherits it.
    let new = NewSession::default().with_thinking(Some(StoredThinking::Effort(Effort::High)));
    let id = store
        .create_with_messages(&new, &[Message::text(hermes_core::Role::User, "q")])
        .await
        .unwrap();
    assert_eq!(
        store.thinking(&id).await.unwrap(),
        Some(StoredThinking::Effort(Effort::High))
    );
    let branch = store.branch(&id, None).await.unwrap();
    assert_eq!(
        store.thinking(&branch).await.unwrap(),
        Some(StoredThinking::Effort(Effort::High))
    );

    for result in [
        store.thinking("nope").await.map(drop),
        store
            .set_thinking("nope", Some(StoredThinking::Off))
            .await
            .map(drop),
    ] {
        assert!(matches!(result, Err(StoreError::NotFound(_))), "{result:?}");
    }
}

both!(writing_the_thinking_request_keeps_every_other_member_byte_identical);
async fn writing_the_thinking_request_keeps_every_other_member_byte_identical(db: TestDb) {
    use crate::StoredThinking;
    use hermes_core::Effort;

    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let others = (
        r#"{"a":1.0e5,"reasoning_rejected_carriers":[["p","api.example","m",["reasoning"]]],"mid":"caf\u00e9","#,
        r#""hermes_wire_verdicts":[["anthropic","p","api.example","m",["thinking"]]],"z":[1 ,2]}"#,
    );
    set_raw_config(&store, &id, &format!("{}{}", others.0, others.1)).await;
    // Absent: added at the end, everything before it untouched.
    store
        .set_thinking(&id, Some(StoredThinking::Effort(Effort::High)))
        .await
        .unwrap();
    let with_high = r#"{"a":1.0e5,"reasoning_rejected_carriers":[["p","api.example","m",["reasoning"]]],"mid":"caf\u00e9","hermes_wire_verdicts":[["anthropic","p","api.example","m",["thinking"]]],"z":[1 ,2],"hermes_thinking":"high"}"#;
    assert_eq!(raw_config(&store, &id).await, with_high);
    // Present in the middle: rewritten where it stands.
    let middle = format!(r#"{}"hermes_thinking" : "low" ,{}"#, others.0, others.1);
    set_raw_config(&store, &id, &middle).await;
    assert_eq!(
        store.thinking(&id).await.unwrap(),
        Some(StoredThinking::Effort(Effort::Low))
    );
    store
        .set_thinking(&id, Some(StoredThinking::Off))
        .await
        .unwrap();
    assert_eq!(
        raw_config(&store, &id).await,
        format!(r#"{}"hermes_thinking":"off",{}"#, others.0, others.1)
    );
    // The verdicts still read as before, and a verdict change keeps the thinking member.
    assert_eq!(store.verdicts(&id).await.unwrap().0.len(), 1);
    record_pm(&store, &id).await;
    assert!(
        raw_config(&store, &id)
            .await
            .contains(r#""mid":"caf\u00e9","hermes_thinking":"off","hermes_wire_verdicts""#)
    );
    // Removed: only that member leaves.
    let before = raw_config(&store, &id).await;
    store.set_thinking(&id, None).await.unwrap();
    assert_eq!(
        raw_config(&store, &id).await,
        before.replace(r#""hermes_thinking":"off","#, "")
    );
}

both!(a_damaged_thinking_member_is_an_error_naming_it_and_is_never_overwritten);
async fn a_damaged_thinking_member_is_an_error_naming_it_and_is_never_overwritten(db: TestDb) {
    use crate::StoredThinking;

    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    for damaged in [
        r#"{"a":1,"hermes_thinking":"loud"}"#,
        r#"{"hermes_thinking":3,"b":[]}"#,
        r#"{"hermes_thinking":{"effort":"high"}}"#,
    ] {
        set_raw_config(&store, &id, damaged).await;
        let err = store.thinking(&id).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("session `{id}` metadata does not decode"))
                && text.contains("model_config: member `hermes_thinking`")
                && text.contains(
                    r#"expected "off" or an effort word (minimal, low, medium, high, xhigh, max)"#
                ),
            "{text}"
        );
        let err = store
            .set_thinking(&id, Some(StoredThinking::Off))
            .await
            .unwrap_err();
        assert!(text == err.to_string(), "{err}");
        assert_eq!(raw_config(&store, &id).await, damaged);
        // The verdicts, another member, are still read and written.
        store.verdicts(&id).await.unwrap();
    }
    // `null` is no request, not damage.
    set_raw_config(&store, &id, r#"{"hermes_thinking":null}"#).await;
    assert_eq!(store.thinking(&id).await.unwrap(), None);
}

both!(a_process_goes_by_the_fleet_verdicts_it_read_for_a_second_and_by_its_own_at_once);
async fn a_process_goes_by_the_fleet_verdicts_it_read_for_a_second_and_by_its_own_at_once(
    db: TestDb,
) {
    let a = db.open().await;
    let b = db.open().await;
    let t = hermes_core::RouteTarget::new("deepseek", Some("https://api.deepseek.com"), "m");
    let fields =
        |v: Vec<crate::FleetVerdict>| -> Vec<String> { v.into_iter().map(|v| v.field).collect() };
    assert!(b.fleet_verdicts_for("chat", &t).await.unwrap().is_empty());
    // Learned in another process: this one goes by what it read, for at most a second.
    a.learn_fleet_verdicts("chat", &t, &["reasoning_content"])
        .await
        .unwrap();
    assert!(
        b.fleet_verdicts_for("chat", &t).await.unwrap().is_empty(),
        "read within the second: not read again"
    );
    tokio::time::sleep(crate::FLEET_READ_EVERY).await;
    assert_eq!(
        fields(b.fleet_verdicts_for("chat", &t).await.unwrap()),
        ["reasoning_content"]
    );
    // Learned by this process: in its next read at once.
    b.learn_fleet_verdicts("chat", &t, &["reasoning_details"])
        .await
        .unwrap();
    assert_eq!(
        fields(b.fleet_verdicts_for("chat", &t).await.unwrap()),
        ["reasoning_content", "reasoning_details"]
    );
}

both!(fleet_verdicts_are_learned_for_the_whole_store_and_claimed_once);
async fn fleet_verdicts_are_learned_for_the_whole_store_and_claimed_once(db: TestDb) {
    let a = db.open().await;
    let b = db.open().await;
    let t =
        hermes_core::RouteTarget::new("OpenRouter", Some("https://openrouter.ai/api/v1"), "a/M");
    a.learn_fleet_verdicts("chat", &t, &["reasoning_details"])
        .await
        .unwrap();
    a.learn_fleet_verdicts("anthropic", &t, &["thinking"])
        .await
        .unwrap();
    // Another handle (another process, another machine) sees them, keyed as verdicts are.
    let seen = b.fleet_verdicts_for("chat", &t).await.unwrap();
    assert_eq!(seen.len(), 1);
    let v = &seen[0];
    assert_eq!(
        (
            v.wire.as_str(),
            v.provider.as_str(),
            v.host.as_str(),
            v.model.as_str(),
            v.field.as_str()
        ),
        (
            "chat",
            "openrouter",
            "openrouter.ai",
            "a/M",
            "reasoning_details"
        )
    );
    assert_eq!(v.probing_since, None);
    assert_eq!(b.fleet_verdicts().await.unwrap().len(), 2);

    // Not old enough: nobody claims it.
    assert_eq!(a.claim_fleet_probe(v, v.learned_at, 0).await.unwrap(), None);
    // Old enough: of two claimants exactly one wins.
    let later = v.learned_at + 1;
    let (x, y) = tokio::join!(
        a.claim_fleet_probe(v, later, 0),
        b.claim_fleet_probe(v, later, 0)
    );
    let wins: Vec<i64> = [x.unwrap(), y.unwrap()].into_iter().flatten().collect();
    assert_eq!(wins.len(), 1, "{wins:?}");
    let since = wins[0];
    // A claim left behind by a dead process is taken over once stale.
    assert_eq!(a.claim_fleet_probe(v, later, since).await.unwrap(), None);
    // Given back unprobed: the verdict stays, unclaimed.
    a.release_fleet_probes("chat", &t, &["reasoning_details"], since)
        .await
        .unwrap();
    assert_eq!(
        a.fleet_verdicts_for("chat", &t).await.unwrap()[0].probing_since,
        None
    );
    // Claimed, then refused again: re-learned, fresh, claim gone.
    let since = a.claim_fleet_probe(v, later, 0).await.unwrap().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    a.learn_fleet_verdicts("chat", &t, &["reasoning_details"])
        .await
        .unwrap();
    let relearned = &a.fleet_verdicts_for("chat", &t).await.unwrap()[0];
    assert!(relearned.learned_at > v.learned_at && relearned.probing_since.is_none());
    assert_eq!(
        a.forget_probed_fleet_verdicts("chat", &t, &["reasoning_details"], since)
            .await
            .unwrap(),
        0,
        "a re-learned verdict is not dropped by a stale acceptance"
    );
    // Claimed, then accepted: dropped.
    let since = a
        .claim_fleet_probe(relearned, relearned.learned_at + 1, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        b.forget_probed_fleet_verdicts("chat", &t, &["reasoning_details"], since)
            .await
            .unwrap(),
        1
    );
    assert!(a.fleet_verdicts_for("chat", &t).await.unwrap().is_empty());
    // Clearing by filter.
    a.learn_fleet_verdicts("chat", &t, &["reasoning"])
        .await
        .unwrap();
    let only_anthropic = crate::VerdictFilter {
        wire: Some("Anthropic".into()),
        ..crate::VerdictFilter::default()
    };
    assert_eq!(a.clear_fleet_verdicts(&only_anthropic).await.unwrap(), 1);
    assert_eq!(a.fleet_verdicts().await.unwrap().len(), 1);
    assert_eq!(
        a.clear_fleet_verdicts(&crate::VerdictFilter::default())
            .await
            .unwrap(),
        1
    );
    assert!(b.fleet_verdicts().await.unwrap().is_empty());
}

/// A source SQLite store with a compaction, a branch, verdicts, usage and a fleet verdict.
async fn rich_sqlite_source(dir: &std::path::Path) -> (Store, Vec<String>) {
    let source = Store::open(&dir.join("source/state.db")).await.unwrap();
    let imported = source
        .import(&parse_history(SESSION).unwrap())
        .await
        .unwrap();
    let compacted = six_messages(&source).await;
    source
        .compact(
            &compacted,
            &[1, 2, 3],
            &[(
                1,
                Message::text(hermes_core::Role::User, "[Summary] m1..m3"),
                true,
            )],
        )
        .await
        .unwrap();
    source
        .add_usage(&compacted, &hermes_core::Usage::new(10, 20, 5, 3, 1))
        .await
        .unwrap();
    let branch = source.branch(&imported, Some(2)).await.unwrap();
    source
        .record_verdict(&branch, &target("p", "m"), rd())
        .await
        .unwrap();
    source
        .learn_fleet_verdicts("chat", &target("p", "m"), &["reasoning_details"])
        .await
        .unwrap();
    (source, vec![imported, compacted, branch])
}

/// Each of `ids` reads the same from `source` and `dest`: the export byte for byte, every row
/// (archived ones and checkpoints included, a branch's inherited ones first) and the session
/// row.
async fn assert_copied(source: &Store, dest: &Store, ids: &[String]) {
    for id in ids {
        assert_eq!(
            serde_json::to_string(&source.export(id).await.unwrap()).unwrap(),
            serde_json::to_string(&dest.export(id).await.unwrap()).unwrap(),
            "{id}"
        );
        assert_eq!(
            source.all_messages(id).await.unwrap(),
            dest.all_messages(id).await.unwrap()
        );
        assert_eq!(
            source.session(id).await.unwrap(),
            dest.session(id).await.unwrap()
        );
    }
}

/// Every stored column of a session's rows but the session, the time and the position, in
/// position order (archived ones included): what "byte for byte" is compared on.
async fn raw_rows(store: &Store, id: &str) -> Vec<Vec<Option<String>>> {
    let rows = sqlx::query(
        "SELECT role, content, tool_calls, tool_call_id, name, reasoning_content, reasoning, \
         reasoning_details, origin_provider, origin_host, origin_model, extra, key_order, kind, \
         match_key FROM messages WHERE session_id = $1 ORDER BY position",
    )
    .bind(id)
    .fetch_all(&store.pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            (0..15)
                .map(|i| sqlx::Row::try_get::<Option<String>, _>(r, i).unwrap())
                .collect()
        })
        .collect()
}

both!(a_copy_holds_every_row_byte_for_byte_and_a_second_copy_copies_nothing);
async fn a_copy_holds_every_row_byte_for_byte_and_a_second_copy_copies_nothing(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let (source, ids) = rich_sqlite_source(dir.path()).await;
    let dest = db.open().await;
    let report = source.copy_into(&dest).await.unwrap();
    assert_eq!(report.copied.len(), 3, "{report:?}");
    assert!(report.conflicts.is_empty() && report.present.is_empty());
    // The branch shares its two messages with its parent: it has no rows of its own to copy.
    assert_eq!(report.messages, 3 + 7);
    assert_eq!(report.fleet_verdicts, 1);
    // Parents first: the branch came after the session it branched from.
    let pos = |id: &str| report.copied.iter().position(|c| c == id).unwrap();
    assert!(pos(&ids[0]) < pos(&ids[2]));
    assert_copied(&source, &dest, &ids).await;
    assert_eq!(
        dest.session(&ids[2]).await.unwrap().parent_id.as_deref(),
        Some(ids[0].as_str())
    );
    assert_eq!(
        dest.verdicts(&ids[2])
            .await
            .unwrap()
            .refused_for(&target("p", "m")),
        rd()
    );
    assert_eq!(
        dest.fleet_verdicts().await.unwrap(),
        source.fleet_verdicts().await.unwrap()
    );
    // The raw carrier text survived the trip.
    let raw: String = sqlx::query_scalar(
        "SELECT reasoning_details FROM messages WHERE session_id = $1 AND position = 1",
    )
    .bind(&ids[0])
    .fetch_one(&dest.pool)
    .await
    .unwrap();
    assert!(raw.starts_with(r#"[{"signature":"c2ln/+==","text":"t","type":"reasoning.text","n":123456789012345678901234567890}"#), "{raw}");

    // Idempotent: a second run copies nothing and finds every session identical.
    let again = source.copy_into(&dest).await.unwrap();
    assert!(again.copied.is_empty(), "{again:?}");
    assert_eq!(again.present.len(), 3);
    assert_eq!(again.fleet_verdicts, 0);
    // A session that changed on one side since is a conflict, reported and left alone.
    source
        .append(&ids[1], &[Message::text(hermes_core::Role::User, "more")])
        .await
        .unwrap();
    let third = source.copy_into(&dest).await.unwrap();
    assert_eq!(third.conflicts.len(), 1, "{third:?}");
    assert_eq!(third.conflicts[0].0, ids[1]);
    assert_eq!(
        dest.messages(&ids[1]).await.unwrap().len(),
        4,
        "left as it was"
    );
}

both!(eight_concurrent_writers_lose_and_duplicate_nothing);
async fn eight_concurrent_writers_lose_and_duplicate_nothing(db: TestDb) {
    let mut handles = Vec::new();
    for w in 0..8 {
        let store = db.open().await;
        handles.push(tokio::spawn(async move {
            let id = store.create_session(&NewSession::default()).await.unwrap();
            for turn in 0..50 {
                store
                    .append(
                        &id,
                        &[
                            Message::text(hermes_core::Role::User, &format!("w{w} t{turn}")),
                            Message::text(hermes_core::Role::Assistant, &format!("a{w} t{turn}")),
                        ],
                    )
                    .await
                    .unwrap();
            }
            id
        }));
    }
    let mut ids = Vec::new();
    for h in handles {
        ids.push(h.await.unwrap());
    }
    let store = db.open().await;
    for (w, id) in ids.iter().enumerate() {
        let all = store.all_messages(id).await.unwrap();
        assert_eq!(all.len(), 100);
        assert_eq!(store.session(id).await.unwrap().message_count, 100);
        for (i, m) in all.iter().enumerate() {
            assert_eq!(m.position, i as i64, "dense and ordered");
            let prefix = if i % 2 == 0 { "w" } else { "a" };
            assert_eq!(
                m.message.content.as_ref().unwrap().as_str().unwrap(),
                format!("{prefix}{w} t{}", i / 2)
            );
        }
    }
}

both!(appends_to_one_session_from_two_handles_never_interleave_a_batch);
async fn appends_to_one_session_from_two_handles_never_interleave_a_batch(db: TestDb) {
    let (a, b, id) = two_handles(&db).await;
    let writers = vec![(a.clone(), "a"), (b.clone(), "b")];
    write_at_once(&id, writers, |store, id, name| async move {
        for turn in 0..25 {
            let batch: Vec<Message> = (0..3)
                .map(|k| Message::text(hermes_core::Role::User, &format!("{name}{turn}.{k}")))
                .collect();
            store.append(&id, &batch).await.unwrap();
        }
    })
    .await;
    let all = a.all_messages(&id).await.unwrap();
    assert_eq!(all.len(), 150);
    for (i, chunk) in all.chunks(3).enumerate() {
        let texts: Vec<String> = chunk
            .iter()
            .map(|m| {
                m.message
                    .content
                    .as_ref()
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .into_owned()
            })
            .collect();
        let stem = texts[0].trim_end_matches(".0");
        assert_eq!(texts, [0, 1, 2].map(|k| format!("{stem}.{k}")), "batch {i}");
        for (k, m) in chunk.iter().enumerate() {
            assert_eq!(m.position, (i * 3 + k) as i64);
        }
    }
}

both!(a_lease_is_held_by_one_handle_at_a_time);
async fn a_lease_is_held_by_one_handle_at_a_time(db: TestDb) {
    let (a, b, id) = two_handles(&db).await;
    let ttl = std::time::Duration::from_secs(30);
    let never_gone = |_: &str| false;
    assert_eq!(
        a.acquire_lease(&id, "host-a:1:x", ttl, &never_gone)
            .await
            .unwrap(),
        crate::Lease::Held
    );
    match b
        .acquire_lease(&id, "host-b:2:y", ttl, &never_gone)
        .await
        .unwrap()
    {
        crate::Lease::Busy {
            holder,
            remaining_ms,
        } => {
            assert_eq!(holder, "host-a:1:x");
            assert!(remaining_ms > 0 && remaining_ms <= 30_000);
        }
        other => panic!("{other:?}"),
    }
    a.release_lease(&id, "host-a:1:x").await.unwrap();
    assert_eq!(
        b.acquire_lease(&id, "host-b:2:y", ttl, &never_gone)
            .await
            .unwrap(),
        crate::Lease::Held
    );
    // A lease whose holder is known to be gone is taken over.
    assert_eq!(
        a.acquire_lease(&id, "host-a:1:x", ttl, &|h: &str| h == "host-b:2:y")
            .await
            .unwrap(),
        crate::Lease::Held
    );
}

/// Found by the `import` fuzz target (fuzz/regressions/import/): a JSON-text column went into
/// the message's JSON as it was, so text after its value added members of its own.
#[test]
fn a_json_column_of_the_original_cannot_add_members_to_its_message() {
    let smuggled =
        r#"[],"reasoning_details":[{"type":"reasoning.text","text":"x","signature":"c2ln"}]"#;
    let err = crate::original::message_of("assistant", |c: &str| {
        Ok((c == "tool_calls").then(|| smuggled.to_owned()))
    })
    .unwrap_err();
    assert!(err.contains("tool_calls: not one JSON value"), "{err}");
    let err = crate::original::message_of("user", |c: &str| {
        Ok((c == "content").then(|| "\u{0}json:\"hi\", \"name\": \"x\"".to_owned()))
    })
    .unwrap_err();
    assert!(err.contains("content: not one JSON value"), "{err}");
    // One value alone reads.
    let read = crate::original::message_of("assistant", |c: &str| {
        Ok((c == "tool_calls").then(|| " [] ".to_owned()))
    })
    .unwrap();
    assert!(read.reasoning_details.is_none());
}

both!(the_python_originals_sessions_import_with_every_carrier_byte_once);
async fn the_python_originals_sessions_import_with_every_carrier_byte_once(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("state.db");
    let ids = crate::testing::write_python_original(
        &original,
        &crate::testing::OriginalFixture::default(),
    )
    .await;
    let bytes_before = std::fs::read(&original).unwrap();
    assert!(crate::is_python_original(&original).await);

    let read = crate::read_original(&original).await.unwrap();
    assert!(read.failed.is_empty(), "{:?}", read.failed);
    assert_eq!(read.sessions.len(), 7);
    let pos = |id: &str| read.sessions.iter().position(|s| s.id == id).unwrap();
    assert!(
        pos(&ids.compacted) < pos(&ids.continuation),
        "parents first"
    );
    assert!(pos(&ids.deepseek) < pos(&ids.branch));

    let store = db.open().await;
    for s in &read.sessions {
        assert!(store.import_original(s).await.unwrap(), "{}", s.id);
    }
    // Every JSON-text column of the fixture is in the export of its session, byte for byte
    // (and model_config is stored as its exact text).
    for crate::testing::JsonColumn {
        session: id,
        text: raw,
        ..
    } in crate::testing::original_json_columns(&original).await
    {
        // The export (active view), and the archived rows as `sessions show --all` reads them.
        let mut export = serde_json::to_string(&store.export(&id).await.unwrap()).unwrap();
        for m in store.all_messages(&id).await.unwrap() {
            export.push_str(&serde_json::to_string(&m.message).unwrap());
        }
        let config: String = scalar(
            &store,
            "SELECT model_config FROM sessions WHERE id = $1",
            &id,
        )
        .await;
        if export.contains(&raw) || config == raw {
            continue;
        }
        // `tool_calls` is the one column the message model holds call by call: every value in
        // it (arguments, `extra_content` with Gemini's signature, unknown keys) keeps its exact
        // text; only the whitespace between them is the export's own.
        type Members = Vec<std::collections::BTreeMap<String, Box<serde_json::value::RawValue>>>;
        let calls: Members = serde_json::from_str(&raw)
            .unwrap_or_else(|e| panic!("{id}: {raw} not kept byte for byte ({e})"));
        for call in &calls {
            for (key, value) in call {
                let values: Vec<String> = if key == "function" {
                    let f: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
                        serde_json::from_str(value.get()).unwrap();
                    f.values().map(|v| v.get().to_owned()).collect()
                } else {
                    vec![value.get().to_owned()]
                };
                for v in values {
                    assert!(
                        export.contains(&v),
                        "{id}: {key} value {v} not kept byte for byte"
                    );
                }
            }
        }
    }
    // Plain-text reasoning and structured content.
    let deepseek = store.messages(&ids.deepseek).await.unwrap();
    assert_eq!(deepseek.len(), 4);
    let export = serde_json::to_value(store.export(&ids.deepseek).await.unwrap()).unwrap();
    assert_eq!(
        export["messages"][1]["reasoning_content"],
        "L'utilisateur veut l'heure : j'appelle « now ». 🤔"
    );
    assert_eq!(export["messages"][2]["name"], "now");
    let gemini = serde_json::to_value(store.export(&ids.gemini).await.unwrap()).unwrap();
    assert_eq!(
        gemini["messages"][0]["content"],
        serde_json::json!([{"type": "text", "text": "Décris l'heure"}])
    );
    // Archived rows archived, the summary a checkpoint, lineage kept, verdicts read.
    let all = store.all_messages(&ids.compacted).await.unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(all.iter().filter(|m| m.archived).count(), 4);
    assert!(all[4].checkpoint && !all[4].archived);
    assert_eq!(store.messages(&ids.compacted).await.unwrap().len(), 3);
    assert_eq!(
        parent_of(&store, &ids.continuation).await.as_deref(),
        Some(ids.compacted.as_str())
    );
    assert_eq!(
        parent_of(&store, &ids.branch).await.as_deref(),
        Some(ids.deepseek.as_str())
    );
    let verdicts = store.verdicts(&ids.openrouter).await.unwrap();
    assert_eq!(
        verdicts.refused_for(&hermes_core::RouteTarget::new(
            "openrouter",
            Some("https://openrouter.ai/api/v1"),
            crate::testing::OPENROUTER_MODEL
        )),
        hermes_core::CarrierSet::NONE.with(hermes_core::Carrier::Reasoning)
    );
    let meta = store.session(&ids.openrouter).await.unwrap();
    assert_eq!(meta.title.as_deref(), Some("Signed thinking"));
    assert_eq!(meta.provider.as_deref(), Some("openrouter"));
    assert!(!meta.base_url_confirmed);
    assert_eq!(tokens(&meta), (1200, 340, 120, 800, 64));

    // Idempotent, and the original untouched: same bytes, no -wal or -shm made.
    let again = crate::read_original(&original).await.unwrap();
    for s in &again.sessions {
        assert!(!store.import_original(s).await.unwrap());
    }
    assert_eq!(std::fs::read(&original).unwrap(), bytes_before);
    for side in ["state.db-wal", "state.db-shm"] {
        assert!(!dir.path().join(side).exists(), "{side} created");
    }
}

both!(a_schema_behind_the_embedded_migrations_is_migrated_on_open);
async fn a_schema_behind_the_embedded_migrations_is_migrated_on_open(db: TestDb) {
    let store = db.open().await;
    let id = store.create_session(&NewSession::default()).await.unwrap();
    let count = |store: Store| async move {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&store.pool)
            .await
            .unwrap()
    };
    let steps = count(store.clone()).await;
    // Current: reopening (the fast path) leaves the record alone.
    assert_eq!(count(db.open().await).await, steps);
    // The last step undone by hand (as an older hermes would have left it): the next open
    // runs it again.
    for undo in ["ALTER TABLE gateway_keys DROP COLUMN admin"] {
        sqlx::query(undo).execute(&store.pool).await.unwrap();
    }
    sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .execute(&store.pool)
    .await
    .unwrap();
    drop(store);
    let reopened = db.open().await;
    assert_eq!(count(reopened.clone()).await, steps);
    assert!(reopened.has_session(&id).await.unwrap());
    // The step's column is back (an admin key is told from a tenant's), and the steps' before
    // it: a view read says which turns were left out, a conversation is found by its chain key, listing (which passes over staged
    // sessions) reads `staged`.
    sqlx::query("SELECT admin FROM gateway_keys")
        .fetch_all(&reopened.pool)
        .await
        .unwrap();
    sqlx::query("SELECT carrier_id, chain_key FROM messages")
        .fetch_all(&reopened.pool)
        .await
        .unwrap();
    if reopened.backend == crate::Backend::Sqlite {
        sqlx::query("SELECT expected_revision FROM step_appends")
            .fetch_all(&reopened.pool)
            .await
            .unwrap();
    }
    assert_eq!(listed_ids(&reopened).await, std::slice::from_ref(&id));
    // The earlier steps' tables too: a response is kept by id and found,
    reopened
        .keep_response("t", "resp_1", &id, 1, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        reopened
            .kept_response("t", "resp_1")
            .await
            .unwrap()
            .is_some()
    );
    // a request's key is claimed, then found running,
    let key = crate::ReceiptKey::new("t", "key:k", "d", "h1");
    let claim = |key: crate::ReceiptKey| {
        let reopened = reopened.clone();
        async move {
            reopened
                .claim_receipt(&key, std::time::Duration::from_secs(60))
                .await
                .unwrap()
        }
    };
    assert_eq!(claim(key.clone()).await, crate::Claim::Claimed);
    assert_eq!(
        claim(crate::ReceiptKey::new("t", "key:k", "d", "h2")).await,
        crate::Claim::Running
    );
    // The earlier steps' tables too: a tenant's usage is recorded and summed,
    let tenant_session = reopened.create_session(&acme()).await.unwrap();
    reopened
        .add_usage(&tenant_session, &hermes_core::Usage::new(3, 4, 0, 0, 0))
        .await
        .unwrap();
    assert_eq!(reopened.tenant_tokens("acme", 0, 0).await.unwrap(), (7, 7));
    // The earlier steps' tables too: a carrier is marked left out and found.
    let carrier = vec!["c1".to_owned()];
    reopened.mark_left_out(Some(&id), &carrier).await.unwrap();
    assert_eq!(reopened.left_out_among(&carrier).await.unwrap().len(), 1);
    // The earlier steps' tables and column are there: a request is counted, a slot claimed, a
    // key listed with its last use.
    assert!(
        reopened
            .admit_request("acme", 0, 1, 0, 0, 1)
            .await
            .unwrap()
            .admitted
    );
    let slot = reopened.claim_slot("acme", 1, "h", std::time::Duration::from_secs(5));
    assert!(slot.await.unwrap().is_some());
    reopened.add_gateway_key("acme").await.unwrap();
    assert!(
        reopened.gateway_keys(None).await.unwrap()[0]
            .last_used_at
            .is_none()
    );
}

both!(pool_options_size_the_pool_and_set_sqlites_busy_timeout);
async fn pool_options_size_the_pool_and_set_sqlites_busy_timeout(db: TestDb) {
    let backend = match db.location {
        crate::Location::Sqlite(_) => Backend::Sqlite,
        crate::Location::Postgres(_) => Backend::Postgres,
    };
    let defaults = db.open().await;
    let expected = match backend {
        Backend::Sqlite => 4,
        Backend::Postgres => 8,
    };
    assert_eq!(defaults.max_connections(), expected);
    let options = crate::PoolOptions {
        max_connections: Some(2),
        busy_timeout: std::time::Duration::from_millis(1234),
        acquire_timeout: std::time::Duration::from_secs(3),
    };
    let store = Store::open_at_with(&db.location, options).await.unwrap();
    assert_eq!(store.max_connections(), 2);
    assert_eq!(store.pool.options().get_acquire_timeout().as_secs(), 3);
    // The store works through the smaller pool.
    let id = store.create_session(&NewSession::default()).await.unwrap();
    assert!(store.session(&id).await.is_ok());
    if backend == Backend::Sqlite {
        let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(
            busy, 1234,
            "every pooled connection waits the configured busy timeout"
        );
        let default_busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
            .fetch_one(&defaults.pool)
            .await
            .unwrap();
        assert_eq!(default_busy, 5000);
    }
}

/// The one classifier of "the database is not there": a refused or broken connection and the
/// pool's wait running out are; a query's own failure and every store-level error are not.
#[test]
fn only_an_absent_database_is_unavailable() {
    let io = |kind| crate::db(sqlx::Error::Io(std::io::Error::from(kind)));
    assert!(io(std::io::ErrorKind::ConnectionRefused).is_unavailable());
    assert!(io(std::io::ErrorKind::UnexpectedEof).is_unavailable());
    assert!(io(std::io::ErrorKind::ConnectionReset).is_unavailable());
    assert!(crate::db(sqlx::Error::PoolTimedOut).is_unavailable());
    assert!(crate::db(sqlx::Error::PoolClosed).is_unavailable());
    let broken_tls = sqlx::Error::Tls(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionReset,
    )));
    assert!(crate::db(broken_tls).is_unavailable());
    let bad_certificate = sqlx::Error::Tls("unknown issuer".into());
    assert!(!crate::db(bad_certificate).is_unavailable());
    assert!(!crate::db(sqlx::Error::RowNotFound).is_unavailable());
    assert!(!StoreError::NotFound("s".into()).is_unavailable());
    assert!(!StoreError::Encode("x".into()).is_unavailable());
}

both!(a_failed_statement_is_not_an_unavailable_database);
/// A statement the server refuses (here a syntax error) is the request's failure, not the
/// database's absence.
async fn a_failed_statement_is_not_an_unavailable_database(db: TestDb) {
    let store = db.open().await;
    let failed = sqlx::query("SELEC 1")
        .execute(&store.pool)
        .await
        .map_err(crate::db)
        .unwrap_err();
    assert!(!failed.is_unavailable(), "{failed}");
    assert!(failed.to_string().contains("syntax"), "{failed}");
}

both!(a_stored_text_that_does_not_read_is_corrupt_naming_its_row);
async fn a_stored_text_that_does_not_read_is_corrupt_naming_its_row(db: TestDb) {
    // Each column's text goes to the message deserializer as its key's value, read from the row
    // itself: a damaged one is still refused, naming the row, as on import.
    for (column, damaged) in [
        ("content", r#""unterminated"#),
        ("content", r#""two" "values""#),
        ("content", "{}"),
        ("reasoning_content", "7"),
        ("tool_calls", r#"[{"id":"x"}]"#),
        ("extra", r#"["not","an","object"]"#),
        ("extra", r#"{"content":"a second content"}"#),
    ] {
        let (store, id) = imported(&db).await;
        let sql =
            format!("UPDATE messages SET {column} = $1 WHERE session_id = $2 AND position = 1");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(damaged)
            .bind(&id)
            .execute(&store.pool)
            .await
            .unwrap();
        let err = store.messages(&id).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt { position: 1, .. }),
            "{column} = {damaged}: {err}"
        );
    }
}

both!(a_step_at_the_tip_read_writes_its_rows_usage_and_receipt_together);
/// A step stored at the tip it was read at writes its rows, the session's counters, the
/// tenant's spend and the request's receipt together (in one statement); a step
/// at a tip the session has moved on from writes none of that to the session read, and all of
/// it to the branch it makes.
async fn a_step_at_the_tip_read_writes_its_rows_usage_and_receipt_together(db: TestDb) {
    use crate::{Claim, ReceiptKey, StepExtras};
    use hermes_core::Usage;
    let store = db.open().await;
    let new = acme();
    let first: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"q0"},{"role":"assistant","content":"a0","reasoning_content":"r0"}]"#,
    )
    .unwrap();
    let id = store.create_with_messages(&new, &first).await.unwrap();
    let read = store.snapshot(&id).await.unwrap();
    let step: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"q1"},{"role":"assistant","content":"a1","reasoning_content":"r1"}]"#,
    )
    .unwrap();
    let usage = Usage::new(100, 20, 7, 0, 0);
    let window = std::time::Duration::from_secs(600);
    let key = ReceiptKey::new("acme", "key:one", "d1", "h1");
    let extras = StepExtras::default().usage(Some(usage)).receipt(
        key.clone(),
        r#"{"id":"one"}"#.into(),
        window,
    );
    let before = store.session(&id).await.unwrap();
    let appended = store
        .compare_and_append_step(&read.tip, &step, &extras)
        .await
        .unwrap();
    assert!(!appended.branched());
    assert_eq!(appended.session(), id);
    let mut whole = first.clone();
    whole.extend(step.clone());
    assert_eq!(store.messages(&id).await.unwrap(), whole);
    let after = store.session(&id).await.unwrap();
    assert_eq!(after.message_count, before.message_count + 2);
    assert_eq!(after.input_tokens, before.input_tokens + 100);
    assert_eq!(after.output_tokens, before.output_tokens + 20);
    assert_eq!(after.reasoning_tokens, before.reasoning_tokens + 7);
    assert_eq!(store.tenant_tokens("acme", 0, 0).await.unwrap(), (120, 120));
    // The receipt names the session and the completion; the tip it records is the new one.
    match store.claim_receipt(&key, window).await.unwrap() {
        Claim::Done(receipt) => {
            assert_eq!(receipt.session, id);
            assert_eq!(receipt.completion, r#"{"id":"one"}"#);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot(&id).await.unwrap().tip, *appended.tip());
    // The view a new read gets carries the step's carrier ids.
    let view = store.snapshot(&id).await.unwrap().active;
    assert!(view[3].carrier.is_some());
    // At the old tip again: nothing more on the session read; the branch holds the rows, the
    // spend is counted once more and the receipt names the branch.
    let other = ReceiptKey::new("acme", "key:two", "d2", "h2");
    let extras = StepExtras::default().usage(Some(usage)).receipt(
        other.clone(),
        r#"{"id":"two"}"#.into(),
        window,
    );
    let branched = store
        .compare_and_append_step(&read.tip, &step, &extras)
        .await
        .unwrap();
    assert!(branched.branched());
    assert_eq!(store.messages(&id).await.unwrap(), whole);
    assert_eq!(store.session(&id).await.unwrap(), after);
    assert_eq!(store.messages(branched.session()).await.unwrap(), whole);
    assert_eq!(store.tenant_tokens("acme", 0, 0).await.unwrap(), (240, 240));
    match store.claim_receipt(&other, window).await.unwrap() {
        Claim::Done(receipt) => assert_eq!(receipt.session, branched.session()),
        other => panic!("{other:?}"),
    }
}

both!(a_claim_is_taken_without_leaving_its_lazy_commit_on_the_connection);
/// A request's claim commits without waiting for the disk on PostgreSQL (its statement sets
/// `synchronous_commit` for its own transaction alone): the claim holds, and the connection's
/// next transactions — the step's write among them — commit durably as before.
async fn a_claim_is_taken_without_leaving_its_lazy_commit_on_the_connection(db: TestDb) {
    use crate::{Claim, PoolOptions, ReceiptKey};
    let one = PoolOptions {
        max_connections: Some(1),
        ..PoolOptions::default()
    };
    let store = Store::open_at_with(&db.location, one).await.unwrap();
    if store.backend() == Backend::Postgres {
        // The one connection's own setting, whatever the server's default (a test cluster may
        // run with it off).
        sqlx::query("SET synchronous_commit TO on")
            .execute(&store.writes)
            .await
            .unwrap();
    }
    let window = std::time::Duration::from_secs(60);
    let key = ReceiptKey::new("acme", "key:lazy", "d", "h1");
    assert_eq!(
        store.claim_receipt(&key, window).await.unwrap(),
        Claim::Claimed
    );
    let other = ReceiptKey::new("acme", "key:lazy", "d", "h2");
    assert_eq!(
        store.claim_receipt(&other, window).await.unwrap(),
        Claim::Running
    );
    if store.backend() == Backend::Postgres {
        let setting: String = sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
            .fetch_one(&store.writes)
            .await
            .unwrap();
        assert_eq!(setting, "on");
    }
}

both!(an_admin_key_reaches_no_tenant_and_a_tenants_key_is_no_admin_key);
async fn an_admin_key_reaches_no_tenant_and_a_tenants_key_is_no_admin_key(db: TestDb) {
    let store = db.open().await;
    let cache = crate::KeyCache::new(std::time::Duration::from_secs(60));
    let admin = store.add_admin_key().await.unwrap();
    let tenant = store.add_gateway_key("acme").await.unwrap();
    let admin_id = crate::gateway_key_id(&admin).unwrap().to_owned();
    assert_eq!(store.tenant_for_key(&admin).await.unwrap(), None);
    assert_eq!(
        store.tenant_for_key_cached(&admin, &cache).await.unwrap(),
        None
    );
    assert_eq!(
        store.admin_key_cached(&admin, &cache).await.unwrap(),
        Some(admin_id.clone())
    );
    assert_eq!(store.admin_key_cached(&tenant, &cache).await.unwrap(), None);
    // A wrong secret under the admin key's id is no admin key, cached row or not.
    let forged = format!("hk_{admin_id}_{}", "0".repeat(64));
    assert_eq!(store.admin_key_cached(&forged, &cache).await.unwrap(), None);
    let listed = store.gateway_keys(None).await.unwrap();
    assert_eq!(listed.iter().filter(|k| k.admin).count(), 1);
    assert!(listed.iter().any(|k| !k.admin && k.tenant == "acme"));
    // Revoking a tenant's keys never takes an admin key; revoking it by id does.
    assert_eq!(store.revoke_tenant_keys("").await.unwrap(), 0);
    assert_eq!(store.revoke_tenant_keys("acme").await.unwrap(), 1);
    assert!(store.revoke_gateway_key(&admin_id).await.unwrap());
    let fresh = crate::KeyCache::new(std::time::Duration::ZERO);
    assert_eq!(store.admin_key_cached(&admin, &fresh).await.unwrap(), None);
}

both!(conversations_are_listed_newest_first_a_page_at_a_time_and_filtered_in_the_database);
async fn conversations_are_listed_newest_first_a_page_at_a_time_and_filtered_in_the_database(
    db: TestDb,
) {
    use crate::{After, ConversationFilter};
    let store = db.open().await;
    // A CLI session is no gateway conversation.
    store.create_session(&NewSession::default()).await.unwrap();
    let mut made = Vec::new();
    for i in 0..5 {
        let new = NewSession {
            tenant: Some(if i % 2 == 0 { "acme" } else { "globex" }.into()),
            partition: (i == 4).then(|| "alice".into()),
            provider: Some("deepseek".into()),
            model: Some(
                if i < 3 {
                    "deepseek-v4-pro"
                } else {
                    "deepseek-v4-flash"
                }
                .into(),
            ),
            ..NewSession::default()
        };
        let id = store.create_session(&new).await.unwrap();
        store
            .append(&id, &[Message::text(hermes_core::Role::User, "hi")])
            .await
            .unwrap();
        made.push(id);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let ids = |metas: Vec<crate::SessionMeta>| metas.into_iter().map(|m| m.id).collect::<Vec<_>>();
    let every = ConversationFilter::new();
    let newest: Vec<String> = made.iter().rev().cloned().collect();
    assert_eq!(
        ids(store.conversations(&every, None, 10).await.unwrap()),
        newest
    );
    assert_eq!(store.count_conversations(&every).await.unwrap(), 5);
    // Two pages of two and one of one, each after the last of the page before.
    let mut after: Option<After> = None;
    let mut paged = Vec::new();
    loop {
        let page = store
            .conversations(&every, after.as_ref(), 2)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after = Some(After {
            updated_at: last.updated_at,
            id: last.id.clone(),
        });
        paged.extend(ids(page));
    }
    assert_eq!(paged, newest);
    let acme = every.clone().tenant(Some("acme".into()));
    assert_eq!(
        ids(store.conversations(&acme, None, 10).await.unwrap()),
        [made[4].clone(), made[2].clone(), made[0].clone()]
    );
    let alice = acme.clone().partition(Some("alice".into()));
    assert_eq!(
        ids(store.conversations(&alice, None, 10).await.unwrap()),
        [made[4].clone()]
    );
    for model in ["deepseek-v4-flash", "deepseek/deepseek-v4-flash"] {
        let flash = every.clone().model(Some(model.into()));
        assert_eq!(
            ids(store.conversations(&flash, None, 10).await.unwrap()),
            [made[4].clone(), made[3].clone()],
            "{model}"
        );
        assert_eq!(store.count_conversations(&flash).await.unwrap(), 2);
    }
    // Counts: one user turn each; a branch of the first is counted on it.
    let branch = store.branch(&made[0], None).await.unwrap();
    let counts = store.conversation_counts(&made).await.unwrap();
    assert_eq!(counts.turns.get(&made[1]), Some(&1));
    assert_eq!(counts.branches.get(&made[0]), Some(&1));
    assert_eq!(counts.branches.get(&made[1]), None);
    assert_eq!(ids(store.branches_of(&made[0]).await.unwrap()), [branch]);
    assert_eq!(store.tenants().await.unwrap(), ["acme", "globex"]);
}
