//! A writer killed (SIGKILL) in the middle of a transaction leaves nothing half-stored, on
//! either backend: the test runs a child process (this same test binary, selected by
//! `HERMES_CRASH_WRITER`) that appends big batches in a loop, waits until the child is inside a
//! write transaction, kills it, and reads what is stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hermes_core::{Message, Role};
use hermes_store::testing::TestDb;
use hermes_store::{Backend, Location, NewSession, Store};

/// Messages per append: one transaction long enough to be caught in the middle.
const BATCH: usize = 4000;

/// The child half of the crash tests: with `HERMES_CRASH_WRITER` (a database URL) and
/// `HERMES_CRASH_SESSION` set, appends batches of [`BATCH`] messages forever; without them it
/// returns at once (it is not a test of its own).
#[tokio::test]
async fn crash_writer_child() {
    let (Ok(url), Ok(session)) = (
        std::env::var("HERMES_CRASH_WRITER"),
        std::env::var("HERMES_CRASH_SESSION"),
    ) else {
        return;
    };
    let store = Store::open_at(&Location::parse(&url).unwrap())
        .await
        .unwrap();
    for round in 0.. {
        let batch: Vec<Message> = (0..BATCH)
            .map(|i| Message::text(Role::User, &format!("round {round} message {i}")))
            .collect();
        store.append(&session, &batch).await.unwrap();
    }
}

fn spawn_writer(url: &str, session: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["crash_writer_child", "--exact", "--nocapture"])
        .env("HERMES_CRASH_WRITER", url)
        .env("HERMES_CRASH_SESSION", session)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// True while some other connection holds the database's write lock (SQLite): a
/// `BEGIN IMMEDIATE` with no busy timeout is refused.
async fn sqlite_write_locked(path: &std::path::Path) -> bool {
    use sqlx::{ConnectOptions as _, Connection as _};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(Duration::ZERO)
        .connect()
        .await
        .unwrap();
    let locked = match sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await {
        Ok(_) => {
            sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
            false
        }
        Err(_) => true,
    };
    let _ = conn.close().await;
    locked
}

/// True while the child (`application_name`) is inside a transaction (PostgreSQL) that has
/// already written rows.
async fn postgres_in_transaction(admin: &str, app: &str) -> bool {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
    let busy: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
         AND xact_start IS NOT NULL AND backend_xid IS NOT NULL",
    )
    .bind(app)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    busy > 0
}

async fn killed_mid_transaction_leaves_nothing_half_stored(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let store = db.open().await;
    let session = store.create_session(&NewSession::default()).await.unwrap();
    let app = format!("hermes-crash-{}", std::process::id());
    let url = match backend {
        Backend::Sqlite => db.url(),
        Backend::Postgres => hermes_store::testing::with_param(&db.url(), "application_name", &app),
    };
    let admin = hermes_store::testing::postgres_url();
    let mut caught = 0;
    for attempt in 0..3 {
        let mut child = spawn_writer(&url, &session);
        let started = Instant::now();
        // Wait until at least one batch is stored and the child is inside the next one.
        let inside = loop {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the writer exited early"
            );
            let stored = store.session(&session).await.unwrap().message_count;
            let busy = match backend {
                Backend::Sqlite => sqlite_write_locked(&db.sqlite_path().unwrap()).await,
                Backend::Postgres => postgres_in_transaction(admin.as_deref().unwrap(), &app).await,
            };
            if stored > 0 && busy {
                break true;
            }
            if started.elapsed() > Duration::from_secs(120) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            inside,
            "attempt {attempt}: never caught the writer inside a transaction"
        );
        caught += 1;

        // A fresh handle, as after a machine restart: whole batches only, dense positions,
        // a message count that matches the rows.
        let after = db.open().await;
        let all = after.all_messages(&session).await.unwrap();
        assert!(!all.is_empty());
        assert_eq!(
            all.len() % BATCH,
            0,
            "a half-stored batch: {} rows",
            all.len()
        );
        for (i, m) in all.iter().enumerate() {
            assert_eq!(m.position, i as i64);
        }
        assert_eq!(
            after.session(&session).await.unwrap().message_count,
            all.len() as i64
        );
        // The dead writer holds no lock: the next append goes through.
        after
            .append(&session, &[Message::text(Role::User, "after the crash")])
            .await
            .unwrap();
        let n = after.all_messages(&session).await.unwrap().len();
        // Leave whole batches for the next attempt's check.
        let filler: Vec<Message> = (0..BATCH - 1)
            .map(|i| Message::text(Role::User, &format!("filler {i}")))
            .collect();
        after.append(&session, &filler).await.unwrap();
        assert_eq!(
            after.all_messages(&session).await.unwrap().len(),
            n + BATCH - 1
        );
    }
    assert_eq!(caught, 3);
}

#[tokio::test]
async fn a_writer_killed_mid_transaction_leaves_nothing_half_stored_on_sqlite() {
    killed_mid_transaction_leaves_nothing_half_stored(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_writer_killed_mid_transaction_leaves_nothing_half_stored_on_postgres() {
    killed_mid_transaction_leaves_nothing_half_stored(Backend::Postgres).await;
}
