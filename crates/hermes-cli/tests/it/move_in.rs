//! Issue 21 end to end: moving in from the Python original through the real binary — its
//! `state.db` (the repository's fixture builder) beside a fresh hermes home, imported read-only,
//! every carrier byte kept, idempotent, and imported sessions continued against the strict
//! simulator of their route.

use std::path::Path;

use hermes_sim::Sim;
use hermes_store::testing::{
    FixtureIds, OriginalFixture, original_json_columns, write_python_original,
};
use hermes_test_support::home::Home;
use serde_json::Value;

/// The strict simulators the original's sessions point at.
struct Sims {
    deepseek: Sim,
    openrouter: Sim,
}

/// A hermes home holding the Python original's `state.db`, its sessions pointing at the
/// `deepseek` and `openrouter` simulators (returned) with signatures those verify.
async fn home_beside_the_original() -> (Home, FixtureIds, Sims) {
    let deepseek = Sim::start("deepseek-v4").await.unwrap();
    let openrouter = Sim::start("openrouter").await.unwrap();
    let home = crate::support::home()
        .with_env("DEEPSEEK_API_KEY", "sk-ds-test")
        .with_env("OPENROUTER_API_KEY", "sk-or-test");
    let fixture = OriginalFixture {
        deepseek_base_url: deepseek.base_url(),
        openrouter_base_url: openrouter.base_url(),
        sign: Box::new(Sim::sign),
    };
    let ids = write_python_original(&home.path().join("state.db"), &fixture).await;
    let sims = Sims {
        deepseek,
        openrouter,
    };
    (home, ids, sims)
}

fn sides(home: &Home) -> Vec<String> {
    std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("state.db-"))
        .collect()
}

/// The fixture's JSON-text columns of active message rows (session id, column, text), read
/// from the file itself (archived rows are checked through `show --all`).
async fn raw_columns(path: &Path) -> Vec<(String, String, String)> {
    original_json_columns(path)
        .await
        .into_iter()
        .filter(|c| c.active && c.column != "model_config")
        .map(|c| (c.session, c.column.to_owned(), c.text))
        .collect()
}

#[tokio::test]
async fn the_python_originals_sessions_move_in_with_every_carrier_byte_and_continue() {
    let (
        home,
        ids,
        Sims {
            deepseek,
            openrouter,
        },
    ) = home_beside_the_original().await;
    let state = home.path().join("state.db");
    let before = std::fs::read(&state).unwrap();

    // First run beside it: hermes keeps its own database and says once how to import.
    let (_, stderr) = home.ok_with(&["sessions", "list"], &[]).await;
    assert!(
        stderr.contains("hermes sessions import --from-hermes-agent"),
        "{stderr}"
    );
    let (_, stderr) = home.ok_with(&["sessions", "list"], &[]).await;
    assert!(
        !stderr.contains("--from-hermes-agent"),
        "said once: {stderr}"
    );

    // A dry run imports nothing.
    let (dry, _) = home
        .ok_with(
            &["sessions", "import", "--from-hermes-agent", "--dry-run"],
            &[],
        )
        .await;
    assert!(dry.contains("would import 7 new sessions"), "{dry}");
    let (listed, _) = home.ok_with(&["sessions", "list", "--json"], &[]).await;
    assert_eq!(listed.trim(), "[]");

    let (out, _) = home
        .ok_with(&["sessions", "import", "--from-hermes-agent"], &[])
        .await;
    assert!(
        out.contains("imported 7 new sessions (29 messages, 4 archived)"),
        "{out}"
    );
    assert!(
        out.contains(&format!("imported {}  Compacted #2", ids.continuation)),
        "{out}"
    );
    // Read-only: the original is byte-identical and nothing was made beside it.
    assert_eq!(std::fs::read(&state).unwrap(), before);
    assert_eq!(sides(&home), Vec::<String>::new());
    // A second import adds nothing.
    let (again, _) = home
        .ok_with(&["sessions", "import", "--from-hermes-agent"], &[])
        .await;
    assert!(again.contains("imported 0 new sessions"), "{again}");
    assert!(again.contains("7 already imported"), "{again}");

    // Every carrier byte of the fixture is in its session's export.
    for (id, column, raw) in raw_columns(&state).await {
        let export = home.export_text(&id).await;
        if column == "tool_calls" {
            // Held call by call: each value keeps its text (a Gemini signature, the arguments).
            let calls: Vec<Value> = serde_json::from_str(&raw).unwrap();
            for call in calls {
                if let Some(extra) = call.get("extra_content") {
                    let sig = extra["google"]["thought_signature"].as_str().unwrap();
                    assert!(export.contains(sig), "{id}: {sig}");
                }
                let args = call["function"]["arguments"].as_str().unwrap();
                assert!(
                    export.contains(&serde_json::to_string(args).unwrap()),
                    "{id}"
                );
            }
        } else {
            // `sessions export` pretty-prints; compare the exported value's raw text.
            let doc: Value = serde_json::from_str(&export).unwrap();
            let stored: Vec<String> = doc["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m.get(&column))
                .map(|v| v.to_string())
                .collect();
            let expected = serde_json::from_str::<Value>(&raw).unwrap().to_string();
            assert!(stored.contains(&expected), "{id} {column}: {raw}");
        }
    }

    // Lineage and compaction show in `sessions show --all`.
    let (shown, _) = home
        .ok_with(&["sessions", "show", &ids.continuation], &[])
        .await;
    assert!(
        shown.contains(&format!("branched from: {}", ids.compacted)),
        "{shown}"
    );
    let (all, _) = home
        .ok_with(
            &["sessions", "show", &ids.compacted, "--all", "--json"],
            &[],
        )
        .await;
    let all: Value = serde_json::from_str(&all).unwrap();
    let rows = all["messages"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert_eq!(
        rows.iter().filter(|r| r["archived"] == true).count(),
        4,
        "{all}"
    );

    // The DeepSeek session continues against the strict must-echo simulator.
    let base = deepseek.base_url();
    let (out, _) = home
        .ok_with(
            &[
                "chat",
                "--json",
                "--no-stream",
                "--resume",
                &ids.deepseek,
                "--base-url",
                &base,
                "-q",
                "Et demain ?",
            ],
            &[],
        )
        .await;
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["session_id"], ids.deepseek.as_str());
    let requests = deepseek.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, 200, "{}", requests[0].response);
    assert!(requests[0].notes.is_empty(), "{:?}", requests[0].notes);
    let sent = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(
        sent[1]["reasoning_content"],
        "L'utilisateur veut l'heure : j'appelle « now ». 🤔"
    );

    // The OpenRouter session continues with its signed items replayed byte for byte, and its
    // imported verdict (no `reasoning`) honoured.
    let base = openrouter.base_url();
    home.ok_with(
        &[
            "chat",
            "--json",
            "--no-stream",
            "--resume",
            &ids.openrouter,
            "--base-url",
            &base,
            "-q",
            "[tools=1] and now?",
        ],
        &[],
    )
    .await;
    let requests = openrouter.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.status, 200, "{}", r.response);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }
    let first = &requests[0].body["messages"].as_array().unwrap();
    let original_rd: Vec<String> = raw_columns(&state)
        .await
        .into_iter()
        .filter(|(id, column, _)| *id == ids.openrouter && column == "reasoning_details")
        .map(|(_, _, raw)| serde_json::from_str::<Value>(&raw).unwrap().to_string())
        .collect();
    let sent_rd: Vec<String> = first
        .iter()
        .filter_map(|m| m.get("reasoning_details"))
        .map(Value::to_string)
        .collect();
    assert_eq!(sent_rd, original_rd);
    for m in first.iter().filter(|m| m["role"] == "assistant") {
        assert!(
            m.get("reasoning").is_none(),
            "the imported verdict refuses reasoning: {m}"
        );
    }
}

#[tokio::test]
async fn a_session_that_cannot_be_read_is_named_and_skipped_and_the_others_import() {
    let (home, ids, _sims) = home_beside_the_original().await;
    let copy = home.path().join("copy.db");
    std::fs::copy(home.path().join("state.db"), &copy).unwrap();
    {
        use sqlx::{ConnectOptions as _, Connection as _};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&copy)
            .connect()
            .await
            .unwrap();
        sqlx::query("UPDATE messages SET reasoning_details = '[{\"type\": broken' WHERE session_id = $1 AND reasoning_details IS NOT NULL")
            .bind(&ids.gemini)
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let out = home
        .run(
            &[
                "sessions",
                "import",
                "--from-hermes-agent",
                copy.to_str().unwrap(),
            ],
            &[],
        )
        .await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("imported 6 new sessions"), "{stdout}");
    assert!(
        stderr.contains(&format!("skipped session {}: message", ids.gemini)),
        "{stderr}"
    );
    // Nothing half-imported: the broken session is not there at all.
    let bad = home.run(&["sessions", "show", &ids.gemini], &[]).await;
    assert!(!bad.status.success());
}
