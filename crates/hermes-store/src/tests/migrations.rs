//! Rolling upgrades: an older release's replica serves from a database a newer one migrated
//! (both backends), and every migration step is additive (a lint over the files, with an
//! allow-list of already-released history).

use std::path::Path;

use hermes_core::Message;

use crate::testing::TestDb;
use crate::{Appended, Location, NewSession, POSTGRES_STEPS, SQLITE_STEPS, Store};

/// A user turn and its reply.
fn exchange(n: usize) -> Vec<Message> {
    serde_json::from_str(&format!(
        r#"[{{"role":"user","content":"q{n}"}},{{"role":"assistant","content":"a{n}","reasoning_content":"r{n}"}}]"#
    ))
    .unwrap()
}

/// The versions recorded in `_sqlx_migrations`, in order.
async fn applied(store: &Store) -> Vec<i64> {
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&store.pool)
        .await
        .unwrap()
}

/// The steps of `location`'s backend.
fn steps(location: &Location) -> &'static [(i64, &'static str, &'static str)] {
    match location {
        Location::Sqlite(_) => SQLITE_STEPS,
        Location::Postgres(_) => POSTGRES_STEPS,
    }
}

both!(an_older_release_serves_from_a_database_a_newer_one_migrated);
/// The database migrated by this build; a build that knows all but the last one, two or three
/// steps opens it (no "previously applied but missing" error, no step undone) and reads and
/// writes: what this build wrote, a new session, an append, a compare-and-append that
/// continues and one that branches. This build then opens it again and reads what the older
/// one wrote.
async fn an_older_release_serves_from_a_database_a_newer_one_migrated(db: TestDb) {
    let all: Vec<i64> = steps(&db.location).iter().map(|s| s.0).collect();
    let newer = db.open().await;
    assert_eq!(applied(&newer).await, all);
    let id = newer
        .create_with_messages(&NewSession::default(), &exchange(0))
        .await
        .unwrap();
    for unknown in 1..=3 {
        let older = Store::open_as_older(&db.location, unknown)
            .await
            .unwrap_or_else(|e| panic!("without the last {unknown} steps: {e}"));
        assert_eq!(applied(&older).await, all, "no step undone");
        // Its open found its schema current (no migrator run), and its migrator, were it to
        // run, accepts the steps it does not know.
        let known = steps(&db.location);
        let known = crate::migrator(&known[..known.len() - unknown]);
        let mut conn = older.pool.acquire().await.unwrap();
        assert!(crate::schema_is_current(&mut conn, &known).await);
        drop(conn);
        known.run(&older.pool).await.unwrap();
        assert_eq!(applied(&older).await, all);
        assert_eq!(
            older.messages(&id).await.unwrap(),
            newer.messages(&id).await.unwrap()
        );
        older.append(&id, &exchange(unknown)).await.unwrap();
        let own = older
            .create_with_messages(&NewSession::default(), &exchange(10 + unknown))
            .await
            .unwrap();
        let tip = older.snapshot(&id).await.unwrap().tip;
        let continued = older
            .compare_and_append(&tip, &exchange(20 + unknown))
            .await
            .unwrap();
        assert!(
            matches!(continued, Appended::Continued { .. }),
            "{continued:?}"
        );
        let branched = older
            .compare_and_append(&tip, &exchange(30 + unknown))
            .await
            .unwrap();
        let Appended::Branched { tip: branch } = branched else {
            panic!("a stale tip branches: {branched:?}");
        };
        let reopened = db.open().await;
        assert_eq!(
            reopened.messages(&own).await.unwrap(),
            exchange(10 + unknown)
        );
        assert_eq!(
            reopened.messages(branch.session()).await.unwrap().len(),
            older.messages(branch.session()).await.unwrap().len()
        );
    }
    assert_eq!(newer.messages(&id).await.unwrap().len(), 2 + 3 * 4);
}

both!(a_newer_release_migrates_what_an_older_one_made);
/// The usual upgrade: a database made by a build without the last step, then opened by this
/// one, which applies that step.
async fn a_newer_release_migrates_what_an_older_one_made(db: TestDb) {
    let all: Vec<i64> = steps(&db.location).iter().map(|s| s.0).collect();
    let older = Store::open_as_older(&db.location, 1).await.unwrap();
    assert_eq!(applied(&older).await, all[..all.len() - 1]);
    // What an older build wrote, written by this one on the older schema: a turn without
    // carriers (this build names the last step's `carrier_id` only for a turn that has them).
    let plain: Vec<Message> = serde_json::from_str(
        r#"[{"role":"user","content":"q0"},{"role":"assistant","content":"a0"}]"#,
    )
    .unwrap();
    let id = older
        .create_with_messages(&NewSession::default(), &plain)
        .await
        .unwrap();
    let newer = db.open().await;
    assert_eq!(applied(&newer).await, all);
    assert_eq!(newer.messages(&id).await.unwrap(), plain);
    // And the migrated store goes on with turns that carry reasoning.
    let tip = newer.tip(&id).await.unwrap();
    newer.compare_and_append(&tip, &exchange(1)).await.unwrap();
    let mut whole = plain.clone();
    whole.extend(exchange(1));
    assert_eq!(newer.messages(&id).await.unwrap(), whole);
}

/// Steps of already-released history that hold a statement the additive rule refuses, each
/// with why it was fine then. Nothing may be added here: a new step that cannot be additive is
/// split over two releases (add the new shape and write both; drop the old one a release
/// after every replica stopped reading it).
const RELEASED: &[(&str, &str)] = &[];

/// Why `statement` (one SQL statement) would break a replica of the previous release reading
/// the migrated database, if it would.
fn non_additive(statement: &str) -> Option<&'static str> {
    // Words only: string literals and quoted names cannot trigger a rule.
    let mut plain = String::new();
    let mut quote = None;
    for c in statement.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                plain.push_str(" x ");
            }
            None => plain.push(c),
        }
    }
    let words: Vec<String> = plain
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_uppercase)
        .collect();
    let has = |seq: &[&str]| words.windows(seq.len()).any(|w| w == seq);
    let alter_table = has(&["ALTER", "TABLE"]);
    if words.iter().any(|w| w == "DROP") {
        return Some("drops something the previous release may read or rely on");
    }
    if words.iter().any(|w| w == "RENAME") {
        return Some("renames something the previous release names");
    }
    if alter_table && has(&["ALTER", "COLUMN"]) && words.iter().any(|w| w == "TYPE") {
        return Some("changes a column's type");
    }
    if has(&["SET", "NOT", "NULL"]) {
        return Some("makes a column NOT NULL, refusing the previous release's inserts");
    }
    if alter_table
        && words.iter().any(|w| w == "ADD")
        && has(&["NOT", "NULL"])
        && !words.iter().any(|w| w == "DEFAULT")
    {
        return Some(
            "adds a NOT NULL column without a DEFAULT: the previous release's inserts fail",
        );
    }
    None
}

/// `sql`'s statements, comments left out.
fn statements(sql: &str) -> Vec<String> {
    let mut text = String::new();
    for line in sql.lines() {
        text.push_str(line.split("--").next().unwrap_or_default());
        text.push('\n');
    }
    while let (Some(start), Some(len)) = (
        text.find("/*"),
        text.find("/*").and_then(|s| text[s..].find("*/")),
    ) {
        text.replace_range(start..start + len + 2, " ");
    }
    text.split(';')
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn the_additive_rule_refuses_what_an_older_replica_cannot_read() {
    for refused in [
        "DROP TABLE session_leases",
        "ALTER TABLE messages DROP COLUMN key_order",
        "drop index messages_match_key",
        "ALTER TABLE sessions RENAME TO conversations",
        "ALTER TABLE sessions RENAME COLUMN title TO name",
        "ALTER TABLE messages ALTER COLUMN position TYPE bigint",
        "ALTER TABLE messages ALTER COLUMN position SET DATA TYPE bigint",
        "ALTER TABLE sessions ALTER COLUMN tenant SET NOT NULL",
        "ALTER TABLE sessions ADD COLUMN region TEXT NOT NULL",
        "ALTER TABLE sessions ALTER COLUMN revision DROP DEFAULT",
    ] {
        assert!(non_additive(refused).is_some(), "{refused}");
    }
    for additive in [
        "CREATE TABLE IF NOT EXISTS signing_keys (id TEXT PRIMARY KEY, secret TEXT NOT NULL)",
        "ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE messages ADD COLUMN match_key TEXT",
        "CREATE INDEX IF NOT EXISTS messages_match_key ON messages (match_key)",
        "INSERT INTO notes (text) VALUES ('drop table rename')",
        "UPDATE sessions SET title = 'x' WHERE title IS NULL",
    ] {
        assert_eq!(non_additive(additive), None, "{additive}");
    }
    assert_eq!(
        statements("-- DROP TABLE x;\nCREATE TABLE a (b TEXT); /* RENAME */ SELECT 1;"),
        ["CREATE TABLE a (b TEXT)", "SELECT 1"]
    );
}

/// Every migration file on either backend is a registered step, and every statement in it is
/// additive unless the step is on [`RELEASED`].
#[test]
fn every_migration_step_is_additive() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut refused = Vec::new();
    let mut allowed_used = Vec::new();
    for (backend, steps) in [("sqlite", SQLITE_STEPS), ("postgres", POSTGRES_STEPS)] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(backend))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert_eq!(
            files.len(),
            steps.len(),
            "{backend}: every file in migrations/{backend} is a step of the schema: {files:?}"
        );
        for (file, step) in files.iter().zip(steps) {
            let sql = std::fs::read_to_string(file).unwrap();
            assert_eq!(sql, step.2, "{}: registered in order", file.display());
            let name = format!("{backend}/{}", file.file_name().unwrap().to_string_lossy());
            let released = RELEASED.iter().any(|(step, _)| *step == name);
            for statement in statements(&sql) {
                if let Some(why) = non_additive(&statement) {
                    if released {
                        allowed_used.push(name.clone());
                    } else {
                        refused.push(format!("{name}: {why}: {statement}"));
                    }
                }
            }
        }
    }
    assert!(
        refused.is_empty(),
        "migrations must be additive (ARCHITECTURE.md, \"Rolling upgrades\"):\n{}",
        refused.join("\n")
    );
    for (step, _) in RELEASED {
        assert!(
            allowed_used.iter().any(|s| s == step),
            "{step} is allowed but needs no allowance: take it off RELEASED"
        );
    }
}
