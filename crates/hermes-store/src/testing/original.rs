//! The fixture builder for moving in from the Python original: writes a `state.db` with the
//! original's schema (docs/spec.md §9, the columns of its recent versions) and realistic sessions —
//! a DeepSeek must-echo tool loop, an OpenRouter session with signed `reasoning_details` and a
//! verdict, a Gemini session with tool-call and text-turn signatures (the native record), an
//! OpenAI Responses (codex) session with its items, a compaction (archived rows, a summary row and
//! the split-off continuation), a branch, non-ASCII text, structured content and big integers
//! inside carriers — then closes it as the original leaves it (WAL checkpointed, no `-wal`).

use std::path::Path;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions as _, Connection as _};

/// Signs a `reasoning.text` item: (model, text) → signature.
pub type Signer = Box<dyn Fn(&str, &str) -> String + Send + Sync>;

/// What the fixture's sessions point at, and how its signed items are signed.
pub struct OriginalFixture {
    /// `billing_base_url` of the DeepSeek sessions.
    pub deepseek_base_url: String,
    /// `billing_base_url` of the OpenRouter session (its verdict names this URL's host).
    pub openrouter_base_url: String,
    /// Signs a `reasoning.text` item: (model, text) → signature.
    pub sign: Signer,
}

impl Default for OriginalFixture {
    fn default() -> Self {
        OriginalFixture {
            deepseek_base_url: "https://api.deepseek.com/v1".into(),
            openrouter_base_url: "https://openrouter.ai/api/v1".into(),
            sign: Box::new(|model, text| {
                // Realistic-looking, not verifiable: tests that replay pass a real signer.
                let seed: u32 = model.bytes().chain(text.bytes()).map(u32::from).sum();
                format!("EqQBCkYIBhgCIkD{seed:08x}/+sig==")
            }),
        }
    }
}

/// The ids of the fixture's sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FixtureIds {
    /// DeepSeek (must-echo) tool loop, non-ASCII text.
    pub deepseek: String,
    /// OpenRouter with signed `reasoning_details` and a verdict on `reasoning`.
    pub openrouter: String,
    /// Gemini over chat completions: tool-call signature, native record, structured content.
    pub gemini: String,
    /// OpenAI Responses (codex) items.
    pub codex: String,
    /// A session compacted in place: archived rows and a summary row.
    pub compacted: String,
    /// Its continuation, split off by the compaction (parent: `compacted`).
    pub continuation: String,
    /// A branch of the DeepSeek session (parent: `deepseek`).
    pub branch: String,
}

/// The OpenRouter session's model.
pub const OPENROUTER_MODEL: &str = "anthropic/claude-sonnet-5";
/// The DeepSeek sessions' model.
pub const DEEPSEEK_MODEL: &str = "deepseek-v4-pro";

const SCHEMA: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version (version) VALUES (11);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT,
    system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,
    end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0, billing_provider TEXT, billing_base_url TEXT,
    billing_mode TEXT, estimated_cost_usd REAL, actual_cost_usd REAL, title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);
CREATE UNIQUE INDEX idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL;
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT, reasoning TEXT,
    reasoning_content TEXT, reasoning_details TEXT, codex_reasoning_items TEXT,
    codex_message_items TEXT, platform_message_id TEXT, observed INTEGER DEFAULT 0,
    _compressed_summary INTEGER NOT NULL DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT, display_kind TEXT,
    display_metadata TEXT, message_uid TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
";

/// One message row of the fixture (unset columns are NULL; `active` 1, summary 0).
#[derive(Default)]
struct Row<'a> {
    role: &'a str,
    content: Option<String>,
    tool_call_id: Option<&'a str>,
    tool_calls: Option<String>,
    tool_name: Option<&'a str>,
    reasoning: Option<&'a str>,
    reasoning_content: Option<&'a str>,
    reasoning_details: Option<String>,
    codex_reasoning_items: Option<String>,
    codex_message_items: Option<String>,
    archived: bool,
    summary: bool,
}

fn user(text: &str) -> Row<'_> {
    Row {
        role: "user",
        content: Some(text.to_owned()),
        ..Row::default()
    }
}

fn tool<'a>(call: &'a str, name: &'a str, out: &str) -> Row<'a> {
    Row {
        role: "tool",
        content: Some(out.to_owned()),
        tool_call_id: Some(call),
        tool_name: Some(name),
        ..Row::default()
    }
}

fn call(id: &str, extra: &str) -> String {
    format!(
        r#"[{{"id": "{id}", "type": "function", "function": {{"name": "now", "arguments": "{{}}"}}{extra}}}]"#
    )
}

/// Writes the fixture at `path` (which must not exist) and returns its sessions' ids.
///
/// # Panics
/// When the file cannot be written.
pub async fn write_python_original(path: &Path, fixture: &OriginalFixture) -> FixtureIds {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    sqlx::raw_sql(SCHEMA)
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("schema: {e}"));
    let ids = FixtureIds {
        deepseek: "20261101_091500_a1b2c3".into(),
        openrouter: "20261102_101500_d4e5f6".into(),
        gemini: "20261103_111500_0718ab".into(),
        codex: "20261104_121500_cd9e0f".into(),
        compacted: "20261105_131500_1a2b3c".into(),
        continuation: "20261105_141500_4d5e6f".into(),
        branch: "20261106_151500_7a8b9c".into(),
    };
    let host = url::Url::parse(&fixture.openrouter_base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_lowercase))
        .unwrap_or_default();
    let mut t = 1_793_520_000.25_f64;
    let mut session = async |conn: &mut sqlx::SqliteConnection,
                             id: &str,
                             parent: Option<&str>,
                             (provider, base, model): (&str, &str, &str),
                             config: &str,
                             title: &str,
                             rows: Vec<Row<'_>>| {
        let started = t;
        sqlx::query(
            "INSERT INTO sessions (id, source, model, model_config, parent_session_id, started_at, \
             ended_at, end_reason, message_count, input_tokens, output_tokens, reasoning_tokens, \
             cache_read_tokens, cache_write_tokens, billing_provider, billing_base_url, title) \
             VALUES ($1, 'cli', $2, $3, $4, $5, $6, $7, $8, 1200, 340, 120, 800, 64, $9, $10, $11)",
        )
        .bind(id)
        .bind(model)
        .bind(config)
        .bind(parent)
        .bind(started)
        .bind(started + 600.5)
        .bind(if id.ends_with("1a2b3c") {
            Some("compression")
        } else {
            None
        })
        .bind(rows.len() as i64)
        .bind(provider)
        .bind(base)
        .bind(title)
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("session {id}: {e}"));
        for row in rows {
            t += 1.5;
            sqlx::query(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, \
                 timestamp, finish_reason, reasoning, reasoning_content, reasoning_details, \
                 codex_reasoning_items, codex_message_items, active, compacted, _compressed_summary, \
                 message_uid) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            )
            .bind(id)
            .bind(row.role)
            .bind(row.content)
            .bind(row.tool_call_id)
            .bind(row.tool_calls.as_deref())
            .bind(row.tool_name)
            .bind(t)
            .bind((row.role == "assistant").then_some("stop"))
            .bind(row.reasoning)
            .bind(row.reasoning_content)
            .bind(row.reasoning_details)
            .bind(row.codex_reasoning_items)
            .bind(row.codex_message_items)
            .bind(i64::from(!row.archived))
            .bind(i64::from(row.archived))
            .bind(i64::from(row.summary))
            .bind(format!("uid-{t}"))
            .execute(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("message of {id}: {e}"));
        }
        t += 3600.0;
    };

    let deepseek = (
        "deepseek",
        fixture.deepseek_base_url.as_str(),
        DEEPSEEK_MODEL,
    );
    let deepseek_rows = || {
        vec![
            user("Quelle heure est-il ? ☕ 日本語で答えて"),
            Row {
                role: "assistant",
                content: Some(String::new()),
                tool_calls: Some(call("call_00_rT5x", "")),
                reasoning_content: Some("L'utilisateur veut l'heure : j'appelle « now ». 🤔"),
                ..Row::default()
            },
            tool("call_00_rT5x", "now", "2026-11-01T09:15:00Z"),
            Row {
                role: "assistant",
                content: Some("午前9時15分です。".into()),
                reasoning_content: Some("L'outil a répondu 09:15 UTC."),
                ..Row::default()
            },
        ]
    };
    session(
        &mut conn,
        &ids.deepseek,
        None,
        deepseek,
        r#"{"max_tokens": 8192, "temperature": 1.0}"#,
        "Quelle heure ? ☕",
        deepseek_rows(),
    )
    .await;

    let thought_1 = "The user wants the time; calling now.";
    let thought_2 = "The tool said 10:15.";
    let signed = |text: &str| {
        format!(
            r#"[{{"type": "reasoning.text", "text": {}, "signature": "{}", "format": "anthropic-claude-v1", "index": 0}}]"#,
            serde_json::Value::from(text),
            (fixture.sign)(OPENROUTER_MODEL, text)
        )
    };
    session(
        &mut conn,
        &ids.openrouter,
        None,
        ("openrouter", fixture.openrouter_base_url.as_str(), OPENROUTER_MODEL),
        &format!(
            r#"{{"reasoning_rejected_carriers": [["openrouter", "{host}", "{OPENROUTER_MODEL}", ["reasoning"]]], "provider": {{"order": ["anthropic"]}}}}"#
        ),
        "Signed thinking",
        vec![
            user("What time is it?"),
            Row {
                role: "assistant",
                content: Some(String::new()),
                tool_calls: Some(call("toolu_01A", "")),
                reasoning: Some(thought_1),
                reasoning_details: Some(signed(thought_1)),
                ..Row::default()
            },
            tool("toolu_01A", "now", "10:15"),
            Row {
                role: "assistant",
                content: Some("It is 10:15.".into()),
                reasoning: Some(thought_2),
                reasoning_details: Some(signed(thought_2)),
                ..Row::default()
            },
        ],
    )
    .await;

    session(
        &mut conn,
        &ids.gemini,
        None,
        (
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "gemini-3-pro-preview",
        ),
        "{}",
        "Gemini signatures",
        vec![
            Row {
                role: "user",
                content: Some(
                    "\u{0}json:[{\"type\": \"text\", \"text\": \"Décris l'heure\"}]".to_owned(),
                ),
                ..Row::default()
            },
            Row {
                role: "assistant",
                content: None,
                tool_calls: Some(call(
                    "function-call-1",
                    r#", "extra_content": {"google": {"thought_signature": "CiQBjz1rX3Zm+/sig/A=="}}"#,
                )),
                reasoning_content: Some("**Checking the clock**"),
                reasoning_details: Some(
                    r#"[{"type": "reasoning.summary", "summary": "Checking the clock", "format": "google-gemini-v1", "index": 0, "tokens": 123456789012345678901234567890}]"#
                        .into(),
                ),
                ..Row::default()
            },
            tool("function-call-1", "now", "11:15"),
            Row {
                role: "assistant",
                content: Some("Il est 11 h 15.".into()),
                reasoning_details: Some(
                    r#"[{"type": "hermes.native_assistant", "extra_content": {"google": {"thought_signature": "Q2lRQmp6MXJYMlp0/text=="}}}]"#
                        .into(),
                ),
                ..Row::default()
            },
        ],
    )
    .await;

    session(
        &mut conn,
        &ids.codex,
        None,
        ("openai-codex", "https://chatgpt.com/backend-api/codex", "gpt-5.2-codex"),
        r#"{"reasoning_effort": "high"}"#,
        "Codex items",
        vec![
            user("List the files"),
            Row {
                role: "assistant",
                content: None,
                tool_calls: Some(
                    r#"[{"id": "call_Kq1", "call_id": "call_Kq1", "response_item_id": "fc_0a1", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\": \".\"}"}}]"#
                        .into(),
                ),
                codex_reasoning_items: Some(
                    r#"[{"type": "reasoning", "id": "rs_0a1b2c", "summary": [{"type": "summary_text", "text": "Listing the folder"}], "encrypted_content": "gAAAAABpZ1x-opaque==", "seq": 18446744073709551617}]"#
                        .into(),
                ),
                ..Row::default()
            },
            tool("call_Kq1", "list_dir", "Cargo.toml\nsrc/"),
            Row {
                role: "assistant",
                content: Some("Two entries: Cargo.toml and src/.".into()),
                codex_reasoning_items: Some(
                    r#"[{"type": "reasoning", "id": "rs_0d3e4f", "summary": [], "encrypted_content": "gAAAAABpZ2y-opaque=="}]"#
                        .into(),
                ),
                codex_message_items: Some(
                    r#"[{"type": "message", "id": "msg_0d3e50", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Two entries: Cargo.toml and src/.", "annotations": []}]}]"#
                        .into(),
                ),
                ..Row::default()
            },
        ],
    )
    .await;

    // Compacted in place: the first turn archived, a summary row standing for it.
    let mut compacted = deepseek_rows();
    for row in &mut compacted {
        row.archived = true;
    }
    compacted.push(Row {
        role: "user",
        content: Some("[CONTEXT SUMMARY] The user asked the time; it was 09:15.".into()),
        summary: true,
        ..Row::default()
    });
    compacted.push(user("Et maintenant ?"));
    compacted.push(Row {
        role: "assistant",
        content: Some("Toujours le matin.".into()),
        reasoning_content: Some("Pas d'outil nécessaire."),
        ..Row::default()
    });
    session(
        &mut conn,
        &ids.compacted,
        None,
        deepseek,
        "{}",
        "Compacted",
        compacted,
    )
    .await;
    session(
        &mut conn,
        &ids.continuation,
        Some(&ids.compacted),
        deepseek,
        "{}",
        "Compacted #2",
        vec![
            Row {
                role: "user",
                content: Some("[CONTEXT SUMMARY] Morning; the time was 09:15.".into()),
                summary: true,
                ..Row::default()
            },
            user("Merci"),
            Row {
                role: "assistant",
                content: Some("De rien.".into()),
                reasoning_content: Some("Politesse."),
                ..Row::default()
            },
        ],
    )
    .await;

    let mut branch = deepseek_rows();
    branch.truncate(2);
    branch.push(tool("call_00_rT5x", "now", "2026-11-06T15:15:00Z"));
    session(
        &mut conn,
        &ids.branch,
        Some(&ids.deepseek),
        deepseek,
        r#"{"max_tokens": 8192, "temperature": 1.0}"#,
        "Quelle heure ? ☕ (branch)",
        branch,
    )
    .await;

    // Closed as the original leaves it: the log folded into the file, no -wal left.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("checkpoint: {e}"));
    conn.close().await.unwrap_or_else(|e| panic!("close: {e}"));
    ids
}

/// One JSON-text value of an original's database, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JsonColumn {
    /// The session it belongs to.
    pub session: String,
    /// The column (`tool_calls`, `reasoning_details`, `codex_reasoning_items`,
    /// `codex_message_items`, or the session's `model_config`).
    pub column: &'static str,
    /// Its exact text.
    pub text: String,
    /// False for a message row archived by compaction (`active = 0`).
    pub active: bool,
}

/// Every non-NULL JSON-text value of the original's database at `path`, read through an
/// immutable read-only connection: messages in `id` order, then each session's `model_config`.
///
/// # Panics
/// When the file cannot be read.
pub async fn original_json_columns(path: &Path) -> Vec<JsonColumn> {
    use sqlx::Row as _;
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(true)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let columns = [
        "tool_calls",
        "reasoning_details",
        "codex_reasoning_items",
        "codex_message_items",
    ];
    let rows = sqlx::query(
        "SELECT session_id, active, tool_calls, reasoning_details, codex_reasoning_items, \
         codex_message_items FROM messages ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap_or_else(|e| panic!("messages: {e}"));
    let mut out = Vec::new();
    for r in &rows {
        for (i, column) in columns.into_iter().enumerate() {
            if let Some(text) = r.get::<Option<String>, _>(i + 2) {
                out.push(JsonColumn {
                    session: r.get(0),
                    column,
                    text,
                    active: r.get::<i64, _>(1) != 0,
                });
            }
        }
    }
    let sessions = sqlx::query("SELECT id, model_config FROM sessions ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("sessions: {e}"));
    for r in &sessions {
        if let Some(text) = r.get::<Option<String>, _>(1) {
            out.push(JsonColumn {
                session: r.get(0),
                column: "model_config",
                text,
                active: true,
            });
        }
    }
    let _ = conn.close().await;
    out
}
