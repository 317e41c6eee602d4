//! A first contact too large for one short write (issue 47): written in pieces while the
//! session is staged (seen by no lookup, listing or match), committed whole with its step, and
//! removed whole when a piece fails; and SQLite's WAL checkpointed beside the writer.

use std::time::Duration;

use hermes_core::{Message, Role, Usage, match_key};

use super::{acme, rows_of, scalar};
use crate::testing::TestDb;
use crate::{Backend, STAGE_BYTES, StepExtras, Store};

/// `pairs` user/assistant turns of 100 KiB each, the first naming `tag`.
fn big_history(tag: &str, pairs: usize) -> Vec<Message> {
    let turn = "y".repeat(100 * 1024);
    let mut messages = vec![Message::text(Role::User, &format!("{tag}: {turn}"))];
    for _ in 0..pairs {
        messages.push(Message::text(Role::Assistant, &turn));
        messages.push(Message::text(Role::User, &turn));
    }
    messages
}

/// Installs `sql` for `db`'s backend (a trigger on `messages`, and what it needs).
async fn install(store: &Store, sqlite: &[&str], postgres: &[&str]) {
    let statements = match store.backend() {
        Backend::Sqlite => sqlite,
        Backend::Postgres => postgres,
    };
    for sql in statements {
        sqlx::query(sqlx::AssertSqlSafe(*sql))
            .execute(&store.writes)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

both!(a_large_first_contact_is_written_in_pieces_while_staged_and_stored_whole);
async fn a_large_first_contact_is_written_in_pieces_while_staged_and_stored_whole(db: TestDb) {
    let store = db.open().await;
    // What each inserted row saw of its session: staged or not (a row written by the usual
    // one-transaction path sees 0).
    install(
        &store,
        &[
            "CREATE TABLE seen (position BIGINT, staged SMALLINT)",
            "CREATE TRIGGER saw AFTER INSERT ON messages BEGIN INSERT INTO seen VALUES \
             (NEW.position, (SELECT staged FROM sessions WHERE id = NEW.session_id)); END",
        ],
        &[
            "CREATE TABLE seen (position BIGINT, staged SMALLINT)",
            "CREATE FUNCTION saw() RETURNS trigger AS $$ BEGIN INSERT INTO seen VALUES \
             (NEW.position, (SELECT staged FROM sessions WHERE id = NEW.session_id)); \
             RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER saw AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION saw()",
        ],
    )
    .await;
    let history = big_history("big", 20);
    let bytes: usize = history
        .iter()
        .map(|m| m.content.as_ref().map_or(0, |c| c.get().len()))
        .sum();
    assert!(bytes > 3 * STAGE_BYTES, "{bytes} bytes: not several pieces");
    let usage = Usage::new(900, 40, 0, 0, 0);
    let id = store
        .create_with_step(&acme(), &history, &StepExtras::default().usage(Some(usage)))
        .await
        .unwrap();

    // Every row was written while the session was staged, and the session is not any more.
    let seen: Vec<(i64, i16)> =
        sqlx::query_as("SELECT position, staged FROM seen ORDER BY position")
            .fetch_all(&store.writes)
            .await
            .unwrap();
    let expected: Vec<(i64, i16)> = (0..history.len() as i64).map(|p| (p, 1)).collect();
    assert_eq!(seen, expected);
    let staged: i16 = scalar(&store, "SELECT staged FROM sessions WHERE id = $1", &id).await;
    assert_eq!(staged, 0);

    // Stored whole, in order, counted once, its step's usage with it; found and listed.
    let reopened = db.open().await;
    assert_eq!(reopened.messages(&id).await.unwrap(), history);
    let meta = reopened.session(&id).await.unwrap();
    assert_eq!(meta.message_count, history.len() as i64);
    assert_eq!((meta.input_tokens, meta.output_tokens), (900, 40));
    assert_eq!(
        reopened.tenant_tokens("acme", 0, 0).await.unwrap(),
        (940, 940)
    );
    let keys: Vec<String> = history.iter().filter_map(match_key).collect();
    let found = reopened.find_by_keys("acme", None, &keys).await.unwrap();
    assert_eq!(found.map(|f| f.session), Some(id.clone()));
    assert_eq!(
        super::listed_ids(&reopened).await,
        std::slice::from_ref(&id)
    );
    // Its revision is the one a first contact written at once has.
    let small = store
        .create_with_messages(&acme(), &history[..3])
        .await
        .unwrap();
    assert_eq!(
        store.tip(&id).await.unwrap().revision(),
        store.tip(&small).await.unwrap().revision()
    );
}

both!(a_piece_that_fails_leaves_nothing_of_the_session);
async fn a_piece_that_fails_leaves_nothing_of_the_session(db: TestDb) {
    let store = db.open().await;
    install(
        &store,
        &[
            "CREATE TRIGGER boom BEFORE INSERT ON messages WHEN NEW.content = '\"boom\"' \
           BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
        ],
        &[
            "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN \
             IF NEW.content = '\"boom\"' THEN RAISE EXCEPTION 'boom refused'; END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER boom BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION boom()",
        ],
    )
    .await;
    // The refused row is the last: every piece before it was committed on its own.
    let mut history = big_history("doomed", 20);
    history.push(Message::text(Role::Assistant, "boom"));
    let err = store
        .create_with_step(&acme(), &history, &StepExtras::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("boom refused"), "{err}");
    for table in ["sessions", "messages", "tenant_usage"] {
        let n: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&store.pool)
                .await
                .unwrap();
        assert_eq!(n, 0, "{table} keeps rows of the failed first contact");
    }
}

both!(a_session_left_staged_is_seen_by_nobody_and_swept);
async fn a_session_left_staged_is_seen_by_nobody_and_swept(db: TestDb) {
    let store = db.open().await;
    let history = big_history("left", 1);
    let left = store.create_with_messages(&acme(), &history).await.unwrap();
    let fresh = store.create_with_messages(&acme(), &history).await.unwrap();
    // As a process that died between two pieces leaves them: `left` long ago, `fresh` now.
    for (id, created) in [(&left, 1_000), (&fresh, crate::now_ms())] {
        sqlx::query("UPDATE sessions SET staged = 1, created_at = $1 WHERE id = $2")
            .bind(created)
            .bind(id)
            .execute(&store.writes)
            .await
            .unwrap();
    }
    let keys: Vec<String> = history.iter().filter_map(match_key).collect();
    assert_eq!(
        store
            .find_by_keys("acme", None, &keys)
            .await
            .unwrap()
            .map(|f| f.session),
        None
    );
    assert!(
        store
            .find_candidates("acme", None, &keys, 4)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list().await.unwrap().is_empty());

    // The sweep finds them through the partial index, not a scan of every session.
    if store.backend() == Backend::Sqlite {
        let rows = sqlx::query(
            "EXPLAIN QUERY PLAN DELETE FROM sessions WHERE staged = 1 AND created_at < 5",
        )
        .fetch_all(&store.pool)
        .await
        .unwrap();
        let detail: Vec<String> = rows
            .iter()
            .map(|r| sqlx::Row::try_get::<String, _>(r, "detail").unwrap())
            .collect();
        assert!(
            detail.iter().any(|d| d.contains("sessions_staged")),
            "{detail:?}"
        );
    }
    let swept = store.sweep_staged(crate::now_ms() - 600_000).await.unwrap();
    assert_eq!(swept, 1);
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM sessions")
        .fetch_all(&store.pool)
        .await
        .unwrap();
    assert_eq!(ids, [fresh]);
    assert_eq!(rows_of(&store, &left).await, 0);
}

#[test]
fn rows_are_cut_into_pieces_of_at_most_the_stage_size() {
    let rows: Vec<crate::row::MessageRow> = big_history("cut", 20)
        .iter()
        .enumerate()
        .map(|(i, m)| crate::row::MessageRow::from_message(i as i64, m).unwrap())
        .collect();
    let pieces = crate::pieces(&rows);
    assert!(pieces.len() > 3, "{pieces:?}");
    assert_eq!(pieces.first().map(|p| p.start), Some(0));
    assert_eq!(pieces.last().map(|p| p.end), Some(rows.len()));
    for pair in pieces.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    for piece in &pieces {
        let bytes: usize = rows[piece.clone()].iter().map(|r| r.bytes()).sum();
        assert!(bytes <= STAGE_BYTES, "{piece:?}: {bytes} bytes");
    }
    // A usual first contact is one piece; a single row above the size is a piece of its own.
    let small = &rows[..3];
    assert_eq!(crate::pieces(small), vec![0..3_usize]);
    let huge = crate::row::MessageRow::from_message(
        0,
        &Message::text(Role::User, &"z".repeat(STAGE_BYTES + 1)),
    )
    .unwrap();
    assert_eq!(crate::pieces(&[huge]), vec![0..1_usize]);
}

#[tokio::test]
async fn the_wal_is_checkpointed_beside_the_writer() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let store = db.open().await;
    let path = db.sqlite_path().unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    store
        .create_with_messages(&acme(), &big_history("wal", 10))
        .await
        .unwrap();
    // The writer's commit leaves the 2 MiB in the WAL (no automatic checkpoint in it); the
    // checkpointer copies them into the database file within a second or so.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = std::fs::metadata(&path).unwrap().len();
        if now > before + 2 * 1024 * 1024 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the database file is still {now} bytes (was {before}): no checkpoint ran"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let autocheckpoint: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
        .fetch_one(&store.writes)
        .await
        .unwrap();
    assert_eq!(autocheckpoint, 0);
}
