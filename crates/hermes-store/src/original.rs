//! Moving in from the Python original (docs/spec.md §9): its `state.db` read read-only, and each of
//! its sessions imported under its own id, with every JSON-text column kept as received.
//!
//! [`read_original`] opens the file read-only — immutable (no lock, nothing created) when no
//! write-ahead log lies beside it, else an ordinary read-only connection so a live original's
//! pending writes are seen — and never migrates or writes it. Columns differ between the
//! original's versions, so only the ones present are read (`sessions.id`, `messages.id`,
//! `session_id` and `role` are required).
//!
//! A row becomes a message by building its JSON from the column texts and parsing it with the
//! one message deserializer: `tool_calls`, `reasoning_details` (the native record inside it
//! included), `codex_reasoning_items` and `codex_message_items` go in as the exact text stored;
//! `content`, `reasoning` and `reasoning_content` are plain text there and become JSON strings
//! (structured content, stored behind the original's `"\0json:"` prefix, goes in as its JSON
//! text); `tool_name` becomes `name`. The active view is the `active = 1` rows in `id` order;
//! `active = 0` rows are stored archived and `_compressed_summary = 1` rows as checkpoints.
//! `model_config` (its `reasoning_rejected_carriers` are docs/spec.md §6 verdicts, same shape) is
//! stored as the exact text. Other columns are display or billing detail and are dropped.

use std::collections::HashSet;
use std::path::Path;

use hermes_core::{Message, Verdicts};
use sqlx::{Connection as _, Row as _};

use crate::compaction::RowKind;
use crate::row::{MessageRow, push_raw};
use crate::{DbResult as _, Store, StoreError};

/// The original's marker for structured (multimodal) content: the rest of the text is JSON.
const CONTENT_JSON_PREFIX: &str = "\u{0}json:";

/// One of the original's sessions, converted and ready to import.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OriginalSession {
    /// The original's id (hermes keeps it, so a second import finds it).
    pub id: String,
    /// Title.
    pub title: Option<String>,
    /// The session it was branched or split (compaction) from.
    pub parent_id: Option<String>,
    /// Provider (`billing_provider`; none for the original's `auto`).
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Base URL (`billing_base_url`); imported unconfirmed, like every imported URL.
    pub base_url: Option<String>,
    /// `model_config`, the exact text stored (`{}` when it was empty).
    pub model_config: String,
    /// `started_at`, Unix milliseconds.
    pub created_at: i64,
    /// The last activity (`ended_at` or the last message), Unix milliseconds.
    pub updated_at: i64,
    /// Token counters: input, output, reasoning, cache read, cache write.
    pub tokens: [i64; 5],
    /// Every row in `id` order.
    pub rows: Vec<OriginalRow>,
}

/// One of the original's message rows, converted.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OriginalRow {
    /// The message.
    pub message: Message,
    /// `active = 0`: archived by compaction.
    pub archived: bool,
    /// `_compressed_summary = 1`: a compaction summary.
    pub checkpoint: bool,
    /// `timestamp`, Unix milliseconds.
    pub created_at: i64,
}

impl OriginalSession {
    /// Rows in the active view.
    pub fn active(&self) -> usize {
        self.rows.iter().filter(|r| !r.archived).count()
    }
}

/// What reading the original's database found: each session converted, or why not.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct OriginalDb {
    /// Sessions that converted, parents before their children.
    pub sessions: Vec<OriginalSession>,
    /// Sessions that did not, with the reason (id, reason).
    pub failed: Vec<(String, String)>,
}

fn open_err(path: &Path, message: String) -> StoreError {
    StoreError::Open {
        path: path.display().to_string(),
        message,
    }
}

/// True when the SQLite file at `path` has the Python original's tables (`sessions` with a
/// `source` column, `messages` with `session_id` and `role`). Read-only, immutable.
pub async fn is_python_original(path: &Path) -> bool {
    let Ok(mut conn) = crate::ownership::connect(path, true).await else {
        return false;
    };
    let columns = async {
        let s = columns(&mut conn, "sessions").await.ok()?;
        let m = columns(&mut conn, "messages").await.ok()?;
        Some(
            s.contains("source")
                && s.contains("id")
                && m.contains("session_id")
                && m.contains("role"),
        )
    }
    .await;
    let _ = conn.close().await;
    columns == Some(true)
}

async fn columns(
    conn: &mut sqlx::SqliteConnection,
    table: &str,
) -> Result<HashSet<String>, sqlx::Error> {
    let rows = sqlx::query("SELECT name FROM pragma_table_info($1)")
        .bind(table)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter()
        .map(|r| r.try_get::<String, _>("name"))
        .collect()
}

/// `column` when the table has it, else `NULL AS column`.
/// `columns` as a select list: each one `have` holds, the others as `NULL`s of that name.
fn pick(have: &HashSet<String>, columns: &[&str]) -> String {
    let one = |column: &&str| {
        if have.contains(*column) {
            format!("\"{column}\"")
        } else {
            format!("NULL AS \"{column}\"")
        }
    };
    columns.iter().map(one).collect::<Vec<_>>().join(", ")
}

fn millis(seconds: Option<f64>) -> Option<i64> {
    seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| (s * 1000.0).round() as i64)
}

/// Reads every session of the Python original's database at `path`, read-only.
pub async fn read_original(path: &Path) -> Result<OriginalDb, StoreError> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    // No write-ahead log beside it: the file holds everything, and an immutable connection reads
    // it without a lock and without creating anything.
    let immutable = !Path::new(&wal).exists();
    let mut conn = crate::ownership::connect(path, immutable)
        .await
        .map_err(|e| open_err(path, e))?;
    let result = read_all(&mut conn).await;
    let _ = conn.close().await;
    result.map_err(|e| {
        open_err(
            path,
            format!("not readable as the Python original's database: {e}"),
        )
    })
}

async fn read_all(conn: &mut sqlx::SqliteConnection) -> Result<OriginalDb, sqlx::Error> {
    let s = columns(conn, "sessions").await?;
    let m = columns(conn, "messages").await?;
    for (table, have, needed) in [
        ("sessions", &s, &["id"][..]),
        ("messages", &m, &["id", "session_id", "role"][..]),
    ] {
        if let Some(missing) = needed.iter().find(|c| !have.contains(**c)) {
            return Err(sqlx::Error::ColumnNotFound(format!("{table}.{missing}")));
        }
    }
    let session_sql = format!(
        "SELECT id, {} FROM sessions ORDER BY {}, id",
        pick(
            &s,
            &[
                "title",
                "parent_session_id",
                "billing_provider",
                "model",
                "billing_base_url",
                "model_config",
                "started_at",
                "ended_at",
                "input_tokens",
                "output_tokens",
                "reasoning_tokens",
                "cache_read_tokens",
                "cache_write_tokens"
            ]
        ),
        if s.contains("started_at") {
            "started_at"
        } else {
            "rowid"
        },
    );
    let message_sql = format!(
        "SELECT id, role, {} FROM messages WHERE session_id = $1 ORDER BY id",
        pick(
            &m,
            &[
                "content",
                "tool_call_id",
                "tool_calls",
                "tool_name",
                "reasoning",
                "reasoning_content",
                "reasoning_details",
                "codex_reasoning_items",
                "codex_message_items",
                "active",
                "_compressed_summary",
                "timestamp"
            ]
        ),
    );
    let sessions = sqlx::query(sqlx::AssertSqlSafe(session_sql))
        .fetch_all(&mut *conn)
        .await?;
    let mut out = OriginalDb::default();
    for row in &sessions {
        let id: String = row.try_get("id")?;
        let converted = async {
            let rows = sqlx::query(sqlx::AssertSqlSafe(message_sql.clone()))
                .bind(&id)
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| e.to_string())?;
            session(row, &rows)
        }
        .await;
        match converted {
            Ok(session) => out.sessions.push(session),
            Err(reason) => out.failed.push((id, reason)),
        }
    }
    out.sessions =
        crate::lineage::parents_first(out.sessions, |s| &s.id, |s| s.parent_id.as_deref());
    Ok(out)
}

fn session(
    row: &sqlx::sqlite::SqliteRow,
    messages: &[sqlx::sqlite::SqliteRow],
) -> Result<OriginalSession, String> {
    let get_text = |column: &str| -> Result<Option<String>, String> {
        row.try_get::<Option<String>, _>(column)
            .map_err(|e| format!("sessions.{column}: {e}"))
    };
    let get_real = |column: &str| -> Result<Option<f64>, String> {
        row.try_get::<Option<f64>, _>(column)
            .map_err(|e| format!("sessions.{column}: {e}"))
    };
    let get_int = |column: &str| -> Result<i64, String> {
        row.try_get::<Option<i64>, _>(column)
            .map(Option::unwrap_or_default)
            .map_err(|e| format!("sessions.{column}: {e}"))
    };
    let model_config = get_text("model_config")?
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "{}".to_owned());
    // The text is stored as it is; it must still be an object whose verdicts read.
    let config: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&model_config)
        .map_err(|e| format!("model_config is not a JSON object: {e}"))?;
    Verdicts::from_model_config(&config)
        .map_err(|e| format!("model_config: reasoning_rejected_carriers: {e}"))?;
    let mut rows = Vec::with_capacity(messages.len());
    for m in messages {
        rows.push(message_row(m)?);
    }
    let created_at = millis(get_real("started_at")?).unwrap_or(0);
    let last = rows
        .iter()
        .map(|r| r.created_at)
        .max()
        .unwrap_or(created_at);
    let updated_at = millis(get_real("ended_at")?)
        .unwrap_or(0)
        .max(last)
        .max(created_at);
    Ok(OriginalSession {
        id: row.try_get("id").map_err(|e| e.to_string())?,
        title: get_text("title")?,
        parent_id: get_text("parent_session_id")?.filter(|p| !p.is_empty()),
        provider: get_text("billing_provider")?
            .map(|p| p.trim().to_lowercase())
            .filter(|p| !p.is_empty() && p != "auto"),
        model: get_text("model")?.filter(|m| !m.is_empty()),
        base_url: get_text("billing_base_url")?.filter(|u| !u.is_empty()),
        model_config,
        created_at,
        updated_at,
        tokens: [
            get_int("input_tokens")?,
            get_int("output_tokens")?,
            get_int("reasoning_tokens")?,
            get_int("cache_read_tokens")?,
            get_int("cache_write_tokens")?,
        ],
        rows,
    })
}

fn message_row(row: &sqlx::sqlite::SqliteRow) -> Result<OriginalRow, String> {
    let id: i64 = row.try_get("id").map_err(|e| e.to_string())?;
    let at = |e: &dyn std::fmt::Display| format!("message {id}: {e}");
    let text = |column: &str| -> Result<Option<String>, String> {
        row.try_get::<Option<String>, _>(column)
            .map_err(|e| format!("{column}: {e}"))
    };
    let role: String = row.try_get("role").map_err(|e| at(&e))?;
    let message = message_of(&role, text).map_err(|e| at(&e))?;
    let flag = |column: &str, default: i64| -> Result<i64, String> {
        row.try_get::<Option<i64>, _>(column)
            .map(|v| v.unwrap_or(default))
            .map_err(|e| at(&format_args!("{column}: {e}")))
    };
    let timestamp = row
        .try_get::<Option<f64>, _>("timestamp")
        .map_err(|e| at(&format_args!("timestamp: {e}")))?;
    Ok(OriginalRow {
        message,
        archived: flag("active", 1)? == 0,
        checkpoint: flag("_compressed_summary", 0)? != 0,
        created_at: millis(timestamp).unwrap_or(0),
    })
}

/// The message of a `messages` row whose role is `role` and whose text columns `text` reads
/// (`None`: NULL or absent), by building its JSON from the column texts (see the module
/// documentation).
pub(crate) fn message_of(
    role: &str,
    text: impl Fn(&str) -> Result<Option<String>, String>,
) -> Result<Message, String> {
    let string = |value: &str| serde_json::to_string(value).map_err(|e| e.to_string());
    // A JSON-text column goes in as it is, so it must be one JSON value: text after it would
    // add members of its own to the message (`[], "reasoning_details": …` in `tool_calls`).
    let one_value = |column: &str, text: &str| -> Result<(), String> {
        serde_json::from_str::<&serde_json::value::RawValue>(text)
            .map(drop)
            .map_err(|e| format!("{column}: not one JSON value: {e}"))
    };
    let mut json = String::from("{");
    push_raw(&mut json, "role", &string(role)?);
    if let Some(content) = text("content")? {
        match content.strip_prefix(CONTENT_JSON_PREFIX) {
            Some(parts) => {
                one_value("content", parts)?;
                push_raw(&mut json, "content", parts);
            }
            None => push_raw(&mut json, "content", &string(&content)?),
        }
    }
    if let Some(id) = text("tool_call_id")? {
        push_raw(&mut json, "tool_call_id", &string(&id)?);
    }
    if let Some(name) = text("tool_name")? {
        push_raw(&mut json, "name", &string(&name)?);
    }
    for plain in ["reasoning", "reasoning_content"] {
        if let Some(value) = text(plain)? {
            push_raw(&mut json, plain, &string(&value)?);
        }
    }
    // JSON text, kept exactly as stored.
    for raw in [
        "tool_calls",
        "reasoning_details",
        "codex_reasoning_items",
        "codex_message_items",
    ] {
        if let Some(value) = text(raw)?.filter(|v| !v.trim().is_empty()) {
            one_value(raw, &value)?;
            push_raw(&mut json, raw, &value);
        }
    }
    json.push('}');
    serde_json::from_str(&json).map_err(|e| e.to_string())
}

impl Store {
    /// True when a session with this id is stored.
    pub async fn has_session(&self, id: &str) -> Result<bool, StoreError> {
        let found: Option<String> = sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .db()?;
        Ok(found.is_some())
    }

    /// Imports one of the original's sessions under its own id, in one transaction: `Ok(false)`
    /// when that id is already stored (nothing changes). A parent that is not stored is dropped
    /// from the lineage (its session failed to import, or was deleted there).
    pub async fn import_original(&self, session: &OriginalSession) -> Result<bool, StoreError> {
        let mut tx = self.write_tx(&session.id).await?;
        let exists: Option<String> = sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1")
            .bind(&session.id)
            .fetch_optional(&mut *tx)
            .await
            .db()?;
        if exists.is_some() {
            return Ok(false);
        }
        let parent = match &session.parent_id {
            Some(p) => sqlx::query_scalar::<_, String>("SELECT id FROM sessions WHERE id = $1")
                .bind(p)
                .fetch_optional(&mut *tx)
                .await
                .db()?,
            None => None,
        };
        let [input, output, reasoning, cache_read, cache_write] = session.tokens;
        execute!(
            &mut *tx,
            "INSERT INTO sessions (id, title, parent_id, provider, model, base_url, base_url_confirmed, \
             model_config, created_at, updated_at, message_count, input_tokens, output_tokens, \
             reasoning_tokens, cache_read_tokens, cache_write_tokens) \
             VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            [
                &session.id,
                &session.title,
                parent,
                &session.provider,
                &session.model,
                &session.base_url,
                &session.model_config,
                session.created_at,
                session.updated_at,
                session.rows.len() as i64,
                input,
                output,
                reasoning,
                cache_read,
                cache_write
            ]
        )?;
        for (position, row) in session.rows.iter().enumerate() {
            let position = position as i64;
            MessageRow::from_message(position, &row.message)?
                .insert(&mut tx, &session.id, row.created_at)
                .await?;
            if row.archived || row.checkpoint {
                let kind = if row.checkpoint {
                    RowKind::Checkpoint
                } else {
                    RowKind::Message
                };
                execute!(
                    &mut *tx,
                    "UPDATE messages SET archived_at = $1, kind = $2 WHERE session_id = $3 AND position = $4",
                    [
                        row.archived.then_some(session.updated_at),
                        kind.as_sql(),
                        &session.id,
                        position
                    ]
                )?;
            }
        }
        tx.commit().await.db()?;
        tracing::info!(
            session = %session.id,
            rows = session.rows.len(),
            active = session.active(),
            "session imported from the Python original"
        );
        Ok(true)
    }
}
