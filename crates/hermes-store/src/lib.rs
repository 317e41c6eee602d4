//! hermes-store: sessions in `state.db` (SQLite, the default) or on a PostgreSQL server shared by
//! many machines, through sqlx (embedded migrations per backend, runtime queries only, one body of
//! SQL through sqlx's `Any` driver). The only crate that knows SQL; it knows no HTTP. sqlx stays
//! out of the public API: a failed query is a [`StoreError::Database`] holding an opaque
//! [`DatabaseError`]; where the store lives is a [`Location`], whose password is never shown.
//!
//! Every message field is stored as the exact JSON text it holds in the canonical model (`TEXT`
//! on both backends, never `jsonb`), so carriers come back byte for byte. Appending a turn is one
//! transaction and never rewrites the session's earlier rows.
//!
//! The store owns what it persists, so every change is one transaction that reads what it
//! changes under the session's write lock ([`Store::write_tx`]: `BEGIN IMMEDIATE` on SQLite, a
//! per-session advisory lock on PostgreSQL), so concurrent handles, in one process or several,
//! on one machine or many, never lose each other's updates.
//! - Verdicts (docs/spec.md §6) in the session's `model_config`: the chat-completions ones under
//!   `reasoning_rejected_carriers` ([`Store::verdicts`], [`Store::record_verdict`]), the other
//!   wires' under `hermes_wire_verdicts` ([`Store::wire_verdicts`],
//!   [`Store::record_wire_verdict`]); a record merges one refusal into what is stored now, and
//!   [`Store::clear_verdicts`] removes what a [`VerdictFilter`] matches, of either kind.
//! - The thinking request the session was asked for (`--effort E` / `--no-thinking`), so a
//!   resumed session keeps thinking the same way: the member `hermes_thinking` ([`THINKING_KEY`])
//!   of `model_config`, `"off"` or an effort word ([`StoredThinking`]; no preference is no
//!   member), read with [`Store::thinking`], changed with [`Store::set_thinking`] and given to a
//!   new session with [`NewSession::with_thinking`].
//!
//!   Each change of a `model_config` member (verdicts, thinking) rewrites only that member; every
//!   other member of `model_config` keeps its exact text and place. A member that does not
//!   decode is [`StoreError::Corrupt`] naming it, and is never overwritten.
//!   [`Store::set_model_config`] replaces the whole object and is kept for older callers: a
//!   caller that writes back a copy it read earlier overwrites changes made since.
//! - Compaction: [`Store::apply_compaction`] applies a [`CompactionPlan`] (rows to archive, and
//!   [`PlannedInsert`]s that take the place of existing rows, each a [`RowKind`]). Rows are
//!   archived, never deleted. [`Store::compact`] is the same with tuples, kept for older callers.
//! - Compare-and-append (docs/spec.md §10): [`Store::snapshot`] reads everything a request needs in
//!   one read transaction, with the session's [`Tip`]; [`Store::compare_and_append`] appends at
//!   that tip when the session still ends there, else stores a branch of the view that was read
//!   ([`Appended`]). Every append and compaction moves the session's revision on.
//! - Branches share their parent's prefix by reference ([`Fork`], `lineage.rs`): a branch
//!   ([`Store::branch`], a stale compare-and-append, a [`NewSession::fork`]) records its
//!   parent's tip and how many messages of that view it inherits, stores only its own rows, and
//!   reads the inherited ones through its parent; it is materialised (the inherited rows copied
//!   into it) only before it is compacted or its parent deleted.
//! - Carriers left out for good (docs/spec.md §5a 3): [`Store::mark_left_out`] records the stored
//!   turns a request left out, by carrier id, and [`Store::left_out_among`] says which of a
//!   history's turns are so marked; every replica reads the same marks.
//! - Idempotent turns: [`Store::claim_receipt`] claims a gateway request's key for one turn;
//!   the transaction that stores the turn's step (with [`StepExtras`]) also counts its usage
//!   and turns the claim into a [`Receipt`] holding the completion, so a retry of a stored turn
//!   is answered from it and never reaches the upstream again.
//! - The gateway (docs/spec.md §10): sessions belong to a tenant and partition
//!   ([`NewSession::tenant`], [`NewSession::partition`]), every message row carries its match key
//!   ([`hermes_core::match_key`]) and [`Store::find_by_keys`] finds the conversation an
//!   incoming history continues by them; gateway keys are stored as digests only
//!   ([`Store::add_gateway_key`], [`Store::tenant_for_key`]); a gateway conversation's usage
//!   is also recorded in time per tenant ([`Store::add_usage`], [`Store::tenant_tokens`]: the
//!   gateway's tokens per minute and per day).

/// Runs one statement with its binds, in order, on `executor` (a pool, a connection or a
/// transaction) and awaits it: `execute!(executor, "SQL", [a, b])` is
/// `sqlx::query("SQL").bind(a).bind(b).execute(executor)` (`[]` when it has none), its error
/// mapped by [`DbResult::db`].
/// A query built another way (a fleet `RowKey` query, say) may stand where the SQL does.
macro_rules! execute {
    ($executor:expr, $sql:literal, [$($bind:expr),* $(,)?]) => {
        execute!($executor, sqlx::query($sql), [$($bind),*])
    };
    ($executor:expr, $query:expr, [$($bind:expr),* $(,)?]) => {
        $crate::DbResult::db($query$(.bind($bind))*.execute($executor).await)
    };
}

/// The session row's write of a step ([`bump_revision`], and PostgreSQL's one-statement step):
/// `added` rows (`$1`) at `now` (`$2`) to session `$3`, the revision moved on, the usage's
/// counts (`$4` to `$8`) added; `$tail` after its `WHERE id = $3` (`bind_bump!` binds them,
/// on a query of either kind).
macro_rules! bind_bump {
    ($query:expr, $session:expr, $added:expr, $now:expr, $usage:expr) => {{
        let usage: hermes_core::Usage = $usage.copied().unwrap_or_default();
        let n = $crate::token_count;
        $query
            .bind(i64::try_from($added).unwrap_or(i64::MAX))
            .bind($now)
            .bind($session)
            .bind(n(usage.input))
            .bind(n(usage.output))
            .bind(n(usage.reasoning))
            .bind(n(usage.cache_read))
            .bind(n(usage.cache_write))
    }};
}

macro_rules! bump_sql {
    ($tail:literal) => {
        concat!(
            "UPDATE sessions SET message_count = message_count + $1, updated_at = $2, \
             revision = revision + 1, input_tokens = input_tokens + $4, \
             output_tokens = output_tokens + $5, reasoning_tokens = reasoning_tokens + $6, \
             cache_read_tokens = cache_read_tokens + $7, \
             cache_write_tokens = cache_write_tokens + $8 WHERE id = $3",
            $tail
        )
    };
}

#[macro_use]
mod row;
mod compaction;
mod copy;
mod fleet;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod gateway;
mod inspect;
mod leases;
mod left_out;
mod limits;
mod lineage;
mod original;
mod ownership;
mod receipts;
mod responses;
mod retention;
mod step;
#[cfg(feature = "test-support")]
pub mod testing;
mod thinking;
mod tip;
mod verdicts;

pub use compaction::{CompactionPlan, PlannedInsert, RowKind};
pub use copy::CopyReport;
pub use fleet::{FLEET_READ_EVERY, FleetVerdict};
pub use gateway::{
    Chained, Found, GatewayKey, KeyCache, SigningKey, gateway_key_id, revocable_key_id,
};
pub use inspect::{After, ConversationFilter, Counts, MAX_PAGE};
pub use leases::Lease;
pub use left_out::LeftOut;
pub use limits::{RATE_SHARDS, RateAdmission, rate_shares};
pub use lineage::Fork;
pub use original::{OriginalDb, OriginalRow, OriginalSession, is_python_original, read_original};
pub use ownership::{Ownership, ownership};
pub use receipts::{Claim, Receipt};
pub use responses::KeptResponse;
pub use step::{ReceiptKey, StepExtras};
pub use thinking::{StoredThinking, THINKING_KEY};
pub use tip::{Appended, Snapshot, Tip};
pub use verdicts::VerdictFilter;

use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hermes_core::{Message, SessionFile, Usage};
use serde_json::{Map, Value};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AnyPool, ConnectOptions as _, Connection as _, Executor as _, Row as _};

use crate::row::MessageRow;

/// A row as every backend returns it (sqlx's `Any` driver).
pub(crate) type DbRow = sqlx::any::AnyRow;

/// Builds a migrator from embedded `(version, description, sql)` steps. It accepts a database
/// that holds steps it does not know — a newer hermes migrated it during a rolling upgrade —
/// and applies none of them (sqlx's "previously applied but missing" is not an error here):
/// every step is additive (see [`SQLITE_STEPS`]), so this build's queries still read and write
/// a newer schema. A step it knows whose text changed is still refused (sqlx's checksum).
fn migrator(steps: &[(i64, &'static str, &'static str)]) -> Migrator {
    let mut migrator = Migrator::with_migrations(
        steps
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    description.into(),
                    MigrationType::Simple,
                    sqlx::SqlStr::from_static(sql),
                    false,
                )
            })
            .collect(),
    );
    migrator.set_ignore_missing(true);
    migrator
}

/// The SQLite schema's steps, embedded: applied by sqlx's migrator, recorded in
/// `_sqlx_migrations`.
///
/// **Migrations are additive** (ARCHITECTURE.md, "Rolling upgrades"): during a rolling upgrade
/// replicas of the previous release keep serving from a database the new release has
/// migrated, so a new step may add tables, nullable columns, columns `NOT NULL` with a
/// `DEFAULT`, and indexes, and never drop, rename or retype anything, nor tighten a column
/// (`SET NOT NULL`). `tests::migrations` refuses any other statement in a step not on its
/// allow-list of already-released history. A change that cannot be additive is made in two
/// releases: add the new shape and write both; drop the old one a release later.
const SQLITE_STEPS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "compaction",
        include_str!("../migrations/sqlite/0002_compaction.sql"),
    ),
    (
        3,
        "base url trust",
        include_str!("../migrations/sqlite/0003_base_url_trust.sql"),
    ),
    (
        4,
        "key order",
        include_str!("../migrations/sqlite/0004_key_order.sql"),
    ),
    (
        5,
        "usage",
        include_str!("../migrations/sqlite/0005_usage.sql"),
    ),
    (
        6,
        "session leases",
        include_str!("../migrations/sqlite/0006_session_leases.sql"),
    ),
    (
        7,
        "fleet verdicts",
        include_str!("../migrations/sqlite/0007_fleet_verdicts.sql"),
    ),
    (
        8,
        "revisions",
        include_str!("../migrations/sqlite/0008_revisions.sql"),
    ),
    (
        9,
        "gateway",
        include_str!("../migrations/sqlite/0009_gateway.sql"),
    ),
    (
        10,
        "lineage",
        include_str!("../migrations/sqlite/0010_lineage.sql"),
    ),
    (
        11,
        "signing keys",
        include_str!("../migrations/sqlite/0011_signing_keys.sql"),
    ),
    (
        12,
        "gateway limits",
        include_str!("../migrations/sqlite/0012_gateway_limits.sql"),
    ),
    (
        13,
        "left out",
        include_str!("../migrations/sqlite/0013_left_out.sql"),
    ),
    (
        14,
        "tenant usage",
        include_str!("../migrations/sqlite/0014_tenant_usage.sql"),
    ),
    (
        15,
        "turn receipts",
        include_str!("../migrations/sqlite/0015_turn_receipts.sql"),
    ),
    (
        16,
        "responses",
        include_str!("../migrations/sqlite/0016_responses.sql"),
    ),
    (
        17,
        "staged sessions",
        include_str!("../migrations/sqlite/0017_staged_sessions.sql"),
    ),
    (
        18,
        "chain keys",
        include_str!("../migrations/sqlite/0018_chain_keys.sql"),
    ),
    (
        19,
        "carrier ids",
        include_str!("../migrations/sqlite/0019_carrier_ids.sql"),
    ),
    (
        20,
        "step appends",
        include_str!("../migrations/sqlite/0020_step_appends.sql"),
    ),
    (
        21,
        "admin keys",
        include_str!("../migrations/sqlite/0021_admin_keys.sql"),
    ),
];

/// The SQLite schema.
static MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE_STEPS));

/// The PostgreSQL schema's steps (the same tables and columns as SQLite's after all its steps;
/// carriers in `text`, never `jsonb`), embedded likewise; additive likewise ([`SQLITE_STEPS`]).
const POSTGRES_STEPS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "fleet verdicts",
        include_str!("../migrations/postgres/0002_fleet_verdicts.sql"),
    ),
    (
        3,
        "revisions",
        include_str!("../migrations/postgres/0003_revisions.sql"),
    ),
    (
        4,
        "gateway",
        include_str!("../migrations/postgres/0004_gateway.sql"),
    ),
    (
        5,
        "lineage",
        include_str!("../migrations/postgres/0005_lineage.sql"),
    ),
    (
        6,
        "signing keys",
        include_str!("../migrations/postgres/0006_signing_keys.sql"),
    ),
    (
        7,
        "gateway limits",
        include_str!("../migrations/postgres/0007_gateway_limits.sql"),
    ),
    (
        8,
        "left out",
        include_str!("../migrations/postgres/0008_left_out.sql"),
    ),
    (
        9,
        "tenant usage",
        include_str!("../migrations/postgres/0009_tenant_usage.sql"),
    ),
    (
        10,
        "turn receipts",
        include_str!("../migrations/postgres/0010_turn_receipts.sql"),
    ),
    (
        11,
        "responses",
        include_str!("../migrations/postgres/0011_responses.sql"),
    ),
    (
        12,
        "staged sessions",
        include_str!("../migrations/postgres/0012_staged_sessions.sql"),
    ),
    (
        13,
        "chain keys",
        include_str!("../migrations/postgres/0013_chain_keys.sql"),
    ),
    (
        14,
        "carrier ids",
        include_str!("../migrations/postgres/0014_carrier_ids.sql"),
    ),
    (
        15,
        "admin keys",
        include_str!("../migrations/postgres/0015_admin_keys.sql"),
    ),
];

/// The PostgreSQL schema.
static PG_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES_STEPS));

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session with this id.
    #[error("no session `{0}`")]
    NotFound(String),
    /// The database could not be opened or migrated.
    #[error("cannot open {path}: {message}")]
    Open {
        /// Database path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A stored row does not decode (the database was edited by hand, or is damaged).
    #[error("session `{session}` {} does not decode: {message}", Place(*.position))]
    Corrupt {
        /// Session id.
        session: String,
        /// Message position; `-1` for the session's own row (its `model_config`, whose damaged
        /// member `message` names).
        position: i64,
        /// What went wrong.
        message: String,
    },
    /// The file is another program's database: hermes leaves it untouched.
    #[error("{path} is not a hermes database ({what}); hermes leaves it untouched")]
    Foreign {
        /// Database path.
        path: String,
        /// What was found there.
        what: String,
    },
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[source] DatabaseError),
    /// A value could not be encoded.
    #[error("cannot encode {0}")]
    Encode(String),
    /// A tenant name that cannot be used (blank, too long, or holding a control character).
    #[error("invalid tenant name \"{tenant}\": {why}")]
    InvalidTenant {
        /// The name as given (escaped).
        tenant: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A branch point beyond the end of the session.
    #[error("cannot branch session `{session}` at message {at}: it has {count} messages")]
    BranchBeyondEnd {
        /// Session id.
        session: String,
        /// The branch point asked for.
        at: usize,
        /// How many messages the session has.
        count: usize,
    },
}

impl StoreError {
    /// True when the database is unreachable or went away mid-use (the server stopped or
    /// restarting, the network cut, no connection within the pool's `acquire_timeout`):
    /// nothing about the request was wrong and it may succeed once the database is back, the
    /// same store handle reconnecting by itself. A server answers it "503, retry". False for
    /// every other failure (a constraint, a corrupt row, a locked SQLite file, …).
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Database(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// Where a [`StoreError::Corrupt`] is: a message, or (position `-1`) the session's own row.
struct Place(i64);

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            p if p < 0 => f.write_str("metadata"),
            p => write!(f, "message {p}"),
        }
    }
}

/// A failed query, as the database driver reported it. The driver's error type stays private so
/// that it is not part of this crate's API; its text is this error's `Display`.
#[derive(Debug)]
pub struct DatabaseError(sqlx::Error);

impl DatabaseError {
    /// The database's own error code when the database reported the failure (for SQLite the
    /// extended result code, e.g. `"5"` for `SQLITE_BUSY`), `None` for driver or IO failures.
    pub fn code(&self) -> Option<String> {
        self.0
            .as_database_error()
            .and_then(|e| e.code())
            .map(|c| c.into_owned())
    }
}

impl DatabaseError {
    /// True when the database could not be reached or went away (see
    /// [`StoreError::is_unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        unavailable(&self.0)
    }
}

/// PostgreSQL's codes for a server that is going or not there yet: `admin_shutdown` (a fast or
/// smart stop ended the connection), `crash_shutdown`, `cannot_connect_now` (starting up or
/// shutting down), `too_many_connections` (a moment after many connections died). Class `08`
/// (connection exception) is matched as a class.
const UNAVAILABLE_CODES: [&str; 4] = ["57P01", "57P02", "57P03", "53300"];

/// The one classifier of driver errors that mean "the database is not there right now", not
/// "this request is wrong": an I/O error (refused, reset, closed mid-use), the pool's wait for a
/// connection running out (sqlx retries a refused connect until then), a closed pool, a
/// crashed SQLite worker, a TLS handshake broken by I/O, and PostgreSQL's connection-exception
/// class and shutdown codes.
fn unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Tls(inner) => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(inner.as_ref());
            while let Some(e) = source {
                if e.is::<std::io::Error>() {
                    return true;
                }
                source = e.source();
            }
            false
        }
        sqlx::Error::Database(e) => e
            .code()
            .is_some_and(|code| code.starts_with("08") || UNAVAILABLE_CODES.contains(&&*code)),
        _ => false,
    }
}

impl std::fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DatabaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The driver error's own text is already this error's; chain to what caused it.
        self.0.source()
    }
}

/// Wraps a driver error (crate-private on purpose: a `From` impl would be public API).
pub(crate) fn db(err: sqlx::Error) -> StoreError {
    StoreError::Database(DatabaseError(err))
}

/// `.db()?` on a driver result: the crate-private stand-in for `?` through a `From` impl.
pub(crate) trait DbResult<T> {
    /// Maps the driver error into [`StoreError::Database`].
    fn db(self) -> Result<T, StoreError>;
}

impl<T> DbResult<T> for Result<T, sqlx::Error> {
    fn db(self) -> Result<T, StoreError> {
        self.map_err(db)
    }
}

/// A session's metadata (read from the store; new fields may be added).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SessionMeta {
    /// Session id.
    pub id: String,
    /// Title.
    pub title: Option<String>,
    /// The session it was branched from.
    pub parent_id: Option<String>,
    /// Where it shares its parent's prefix by reference (the parent's tip then, and how many
    /// messages of that view it inherits); `None` when it holds every message of its view
    /// itself (not a branch, or a branch since materialised, see [`Fork`]).
    pub fork: Option<Fork>,
    /// Provider id.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Base URL (`sim://PROFILE` for the simulator).
    pub base_url: Option<String>,
    /// The user named `base_url` (command line or config) for this session: only then may an
    /// API key be sent there. Imported sessions start unconfirmed.
    pub base_url_confirmed: bool,
    /// Model configuration, holding the verdicts (`reasoning_rejected_carriers`,
    /// `hermes_wire_verdicts`) and the thinking request (`hermes_thinking`).
    pub model_config: Map<String, Value>,
    /// The gateway tenant the session belongs to (docs/spec.md §10); `None` for CLI sessions.
    pub tenant: Option<String>,
    /// The client's partition within its tenant; `None` when the client named none, and for
    /// CLI sessions.
    pub partition: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
    /// Last change, Unix milliseconds.
    pub updated_at: i64,
    /// Number of rows of its view ever stored: the inherited messages of a branch, then its own
    /// rows (archived ones and compaction rows included).
    pub message_count: i64,
    /// Prompt tokens reported by providers.
    pub input_tokens: i64,
    /// Completion tokens reported by providers (reasoning included).
    pub output_tokens: i64,
    /// Of `output_tokens`, the tokens spent thinking.
    pub reasoning_tokens: i64,
    /// Of `input_tokens`, the tokens read from the provider's prompt cache.
    pub cache_read_tokens: i64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write_tokens: i64,
}

/// A stored message with its place in the session (read from the store; new fields may be
/// added).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StoredMessage {
    /// Position (append order).
    pub position: i64,
    /// Replaced in the active view by a compaction checkpoint.
    pub archived: bool,
    /// A compaction checkpoint (a summary).
    pub checkpoint: bool,
    /// The message.
    pub message: Message,
    /// The turn's carrier id as stored with the row, and whether an earlier request left those
    /// carriers out for good, as of the read ([`Store::mark_left_out`]); `None` for a row
    /// without carriers, or written before carrier ids were stored (its id is computed and
    /// looked up with [`Store::left_out_among`]).
    pub carrier: Option<CarrierState>,
}

/// A stored turn's carrier id and whether its carriers were left out for good
/// ([`StoredMessage::carrier`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CarrierState {
    /// [`hermes_core::left_out::carrier_id`] of the turn, as written with its row.
    pub id: String,
    /// An earlier request of the conversation left these carriers out for good.
    pub left_out: bool,
}

/// A view row: [`message_columns!`], then `archived_at, kind, sort_key` and
/// [`carrier_columns!`].
fn stored_message(session: &str, r: &DbRow) -> Result<StoredMessage, StoreError> {
    let row = MessageRow::<&str>::from_sql(r)?;
    let archived: Option<i64> = r.try_get("archived_at").db()?;
    let kind: &str = r.try_get("kind").db()?;
    let message = row.to_message().map_err(|message| StoreError::Corrupt {
        session: session.to_owned(),
        position: row.position,
        message,
    })?;
    Ok(StoredMessage {
        position: row.position,
        archived: archived.is_some(),
        checkpoint: kind == "checkpoint",
        message,
        carrier: match r.try_get::<Option<String>, _>("carrier_id").db()? {
            Some(id) => Some(CarrierState {
                left_out: r
                    .try_get::<Option<String>, _>("carrier_left_out")
                    .db()?
                    .is_some(),
                id,
            }),
            None => None,
        },
    })
}

/// What a new session starts with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewSession {
    /// Title.
    pub title: Option<String>,
    /// Parent session (for branches). With [`NewSession::fork`], the fork's session instead.
    pub parent_id: Option<String>,
    /// Provider id.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
    /// The user named `base_url` themselves (see [`SessionMeta::base_url_confirmed`]).
    pub base_url_confirmed: bool,
    /// Model configuration.
    pub model_config: Map<String, Value>,
    /// The gateway tenant (docs/spec.md §10); `None` (the default) for CLI sessions. A boxed `str`
    /// (`Some(name.into())`) keeps `NewSession` small: callers hold it in enums beside much
    /// smaller variants.
    pub tenant: Option<Box<str>>,
    /// The client's partition within the tenant; `None` (the default) when it named none.
    pub partition: Option<Box<str>>,
    /// The new session is a branch sharing this prefix of another session's view by reference
    /// (no row of it is copied): its parent is the fork's session, its view the fork's
    /// messages and then its own. The count is checked against the view at the fork's tip
    /// ([`StoreError::BranchBeyondEnd`]); the other fields are the new session's own (callers
    /// usually copy the parent's). Boxed, as the tenant is, to keep `NewSession` small.
    pub fork: Option<Box<Fork>>,
    /// The conversation's chain state before the session's first messages
    /// ([`hermes_core::chain_keys`]: [`hermes_core::CHAIN_START`] for a new
    /// conversation, the state at the fork for a branch), when the session's rows are to be
    /// found by chain key ([`Store::find_by_chain`]); `None` (the default) chains nothing.
    pub chain: Option<String>,
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(crate) fn encode_config(config: &Map<String, Value>) -> Result<String, StoreError> {
    serde_json::to_string(config).map_err(|e| StoreError::Encode(format!("model_config: {e}")))
}

fn meta_from_row(row: &DbRow) -> Result<SessionMeta, StoreError> {
    let raw = copy::RawSession::from_row(row)?;
    let model_config =
        serde_json::from_str(&raw.model_config).map_err(|e| verdicts::corrupt(&raw.id, &e))?;
    Ok(SessionMeta {
        title: raw.title,
        parent_id: raw.parent_id,
        fork: lineage::fork_of(row)?,
        provider: raw.provider,
        model: raw.model,
        base_url: raw.base_url,
        base_url_confirmed: raw.base_url_confirmed != 0,
        model_config,
        tenant: raw.tenant,
        partition: raw.partition_key,
        created_at: raw.created_at,
        updated_at: raw.updated_at,
        message_count: raw.message_count,
        input_tokens: raw.input_tokens,
        output_tokens: raw.output_tokens,
        reasoning_tokens: raw.reasoning_tokens,
        cache_read_tokens: raw.cache_read_tokens,
        cache_write_tokens: raw.cache_write_tokens,
        id: raw.id,
    })
}

/// Which database a [`Store`] talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (`state.db` in `$HERMES_HOME`, the default).
    Sqlite,
    /// A PostgreSQL server, shared by many machines.
    Postgres,
}

/// Where a store lives: an SQLite file or a PostgreSQL server. Its `Display` and `Debug` never
/// show a password ([`Location::redacted`]).
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server: a `postgres://` or `postgresql://` URL (`sslmode`, `sslrootcert` and
    /// the other libpq parameters honoured; the password from the URL, `PGPASSWORD` or
    /// `.pgpass`).
    Postgres(String),
}

impl Location {
    /// Reads a database URL: `postgres://…` / `postgresql://…` for PostgreSQL, `sqlite://PATH`
    /// or `sqlite:PATH` for an SQLite file. Anything else is an error naming what was expected
    /// (the text itself is shown redacted).
    pub fn parse(text: &str) -> Result<Location, StoreError> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            PgConnectOptions::from_str(text).map_err(|e| StoreError::Open {
                path: redact_url(text),
                message: scrub(&e.to_string(), text),
            })?;
            return Ok(Location::Postgres(text.to_owned()));
        }
        if let Some(path) = text
            .strip_prefix("sqlite://")
            .or_else(|| text.strip_prefix("sqlite:"))
            .filter(|p| !p.is_empty())
        {
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        Err(StoreError::Open {
            path: redact_url(text),
            message: "not a database URL: expected postgres://USER@HOST/DB (or postgresql://…) \
                      or sqlite://PATH"
                .into(),
        })
    }

    /// The backend this location names.
    pub fn backend(&self) -> Backend {
        match self {
            Location::Sqlite(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }

    /// The location as it may be shown or logged: a URL's password (in its user part or a
    /// `password` parameter) replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => redact_url(url),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(_) => f.debug_tuple("Postgres").field(&self.redacted()).finish(),
        }
    }
}

/// `url` with its password (user part, or a `password`/`sslpassword` parameter) replaced by
/// `***`; text that is not a URL is shown only up to its scheme.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return match url.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://…"),
            None => "(not a URL)".to_owned(),
        };
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let secret =
                    k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword");
                (
                    k.into_owned(),
                    if secret {
                        "***".to_owned()
                    } else {
                        v.into_owned()
                    },
                )
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// `text` with every secret of `url` (its password, in clear and percent-encoded) cut out, for
/// error messages that might quote it.
fn scrub(text: &str, url: &str) -> String {
    let mut out = text.to_owned();
    if let Ok(parsed) = url::Url::parse(url) {
        let mut secrets: Vec<String> = parsed
            .query_pairs()
            .filter(|(k, _)| {
                k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword")
            })
            .map(|(_, v)| v.into_owned())
            .collect();
        if let Some(password) = parsed.password() {
            secrets.push(password.to_owned());
            if let Ok(decoded) = percent_encoding::percent_decode_str(password).decode_utf8() {
                secrets.push(decoded.into_owned());
            }
        }
        // Drivers do not quote passwords; this is a second line of defence. A password shorter
        // than four characters is left alone: cutting it out of every word that holds it would
        // garble the message (and says which letters it has).
        for secret in secrets.into_iter().filter(|s| s.chars().count() >= 4) {
            out = out.replace(&secret, "***");
        }
    }
    out
}

/// True when every step of `migrator` is recorded as applied and none of them failed (a missing
/// table or any error says no). Steps after its latest — a newer hermes migrated the database
/// (a rolling upgrade) — are not its business: additive, they change nothing it reads. Its
/// versions are dense from 1, so counting the applied ones up to its latest counts its own.
/// Checksums are left to the migrator, which runs whenever this says no.
async fn schema_is_current(conn: &mut sqlx::AnyConnection, migrator: &Migrator) -> bool {
    let latest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let expected = i64::try_from(migrator.iter().count()).unwrap_or(i64::MAX);
    let row = sqlx::query(
        "SELECT COUNT(*) AS applied, COALESCE(SUM(CASE WHEN success THEN 0 ELSE 1 END), 0) AS failed, \
         COALESCE(MAX(version), 0) AS latest FROM _sqlx_migrations WHERE version <= $1",
    )
    .bind(latest)
    .fetch_one(&mut *conn)
    .await;
    let Ok(row) = row else {
        return false;
    };
    let get = |column: &str| row.try_get::<i64, _>(column).ok();
    get("applied") == Some(expected) && get("failed") == Some(0) && get("latest") == Some(latest)
}

/// The session store: the same API on either [`Backend`].
#[derive(Clone, Debug)]
pub struct Store {
    /// Reads, and on PostgreSQL writes too.
    pool: AnyPool,
    /// Every write of this process: on SQLite a pool of one connection, the database's one
    /// writer, so this process's writers queue on it in order and each starts the moment the
    /// one before commits (instead of polling SQLite's busy handler, which sleeps up to 100 ms
    /// between tries, while holding a connection each); on PostgreSQL the same pool as reads.
    /// Other processes' writers still meet this one at the file's lock (`busy_timeout`).
    writes: AnyPool,
    backend: Backend,
    /// Held by every handle of this store; SQLite's WAL checkpointer ([`checkpoint_beside`])
    /// ends once the last one is dropped.
    _alive: std::sync::Arc<()>,
    /// The fleet verdicts this process read lately, per wire and target (`fleet.rs`).
    fleet_read: std::sync::Arc<fleet::FleetRead>,
}

/// How often the WAL of an SQLite store is checkpointed beside its writer.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The WAL length (frames, pages of 4 KiB) past which the checkpointer makes the log start over
/// (`RESTART`) instead of only copying it back (`PASSIVE`): 16 MiB.
const RESTART_FRAMES: i64 = 4096;

/// How long a `RESTART` checkpoint waits for the readers of the log to finish (it holds new
/// writers off meanwhile); one that does not get them is tried again a second later.
const RESTART_WAIT: Duration = Duration::from_millis(20);

/// The size the WAL file is cut back to when the log starts over (`journal_size_limit`).
const WAL_KEEP_BYTES: i64 = 64 * 1024 * 1024;

/// Checkpoints the WAL of the SQLite database at `path` now and then every
/// [`CHECKPOINT_EVERY`], on a connection of its own, until `alive` has no holder. SQLite's own
/// automatic checkpoint (off on every connection of ours, `wal_autocheckpoint = 0`) runs inside
/// the commit that crosses its threshold, in the writer: after a 30 MiB first contact that
/// commit would copy all of it into the database while every other writer waits. A `PASSIVE`
/// checkpoint here copies what no reader still needs and never takes the write lock; the first
/// one, at open, takes in what processes before this one left.
///
/// Under steady load a copied-back log seldom starts over (a writer restarts it only when no
/// reader is still reading it, and one nearly always is), so it grows, and every read looks
/// its pages up through a longer log: a continued gateway turn cost 2.4 ms of CPU with a fresh
/// log and 3.8 ms ten seconds later. Once the log passes [`RESTART_FRAMES`], a `RESTART`
/// checkpoint waits (at most [`RESTART_WAIT`]) for its readers, so the next writer starts it
/// over, and the file is cut back to [`WAL_KEEP_BYTES`].
fn checkpoint_beside(path: &Path, alive: std::sync::Weak<()>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let options = SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(RESTART_WAIT)
        .pragma("journal_size_limit", WAL_KEEP_BYTES.to_string())
        .disable_statement_logging();
    runtime.spawn(async move {
        let Ok(mut conn) = options.connect().await else {
            return;
        };
        let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if alive.strong_count() == 0 {
                break;
            }
            match checkpoint(&mut conn, "PASSIVE").await {
                Ok(log) if log >= RESTART_FRAMES => {
                    if let Err(e) = checkpoint(&mut conn, "RESTART").await {
                        tracing::debug!(error = %e, "WAL restart failed; the next one tries again");
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "WAL checkpoint failed; the next one tries again");
                }
            }
        }
        let _ = conn.close().await;
    });
}

/// Runs `PRAGMA wal_checkpoint(<mode>)` and returns the log's length in frames.
async fn checkpoint(conn: &mut sqlx::SqliteConnection, mode: &str) -> Result<i64, sqlx::Error> {
    let (_busy, log, _copied): (i64, i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "PRAGMA wal_checkpoint({mode})"
    )))
    .fetch_one(&mut *conn)
    .await?;
    Ok(log)
}

/// Installs sqlx's `Any` drivers (SQLite and PostgreSQL) once per process.
fn install_drivers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(sqlx::any::install_default_drivers);
}

/// The SQLite URL the `Any` driver opens `path` with (read-write, never creating: the file was
/// created and migrated before).
fn sqlite_url(path: &Path) -> String {
    /// Everything but unreserved characters and `/` is escaped, `%` included.
    const ESCAPE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    let path = percent_encoding::percent_encode(path.as_os_str().as_encoded_bytes(), ESCAPE);
    format!("sqlite://{path}?mode=rw")
}

/// Whether a store's connections emit sqlx's per-statement events.
#[derive(Clone, Copy)]
enum StatementLog {
    /// No events (the default: the store logs what it does in its own words).
    Off,
    /// sqlx's defaults: DEBUG per statement, WARN for slow ones.
    On,
}

impl StatementLog {
    fn apply(self, options: AnyConnectOptions) -> AnyConnectOptions {
        match self {
            StatementLog::Off => options.disable_statement_logging(),
            StatementLog::On => options,
        }
    }
}

/// How a store's connection pool is sized and how long it waits (`[store]` in config.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Connections in the pool; `None`: [`PoolOptions::SQLITE_CONNECTIONS`] for an SQLite file,
    /// [`PoolOptions::POSTGRES_CONNECTIONS`] for PostgreSQL.
    pub max_connections: Option<u32>,
    /// How long an SQLite statement waits for another connection's or process's write lock
    /// before it fails with "database is locked" (SQLite's `busy_timeout`).
    pub busy_timeout: Duration,
    /// How long a request waits for a free connection of the pool.
    pub acquire_timeout: Duration,
}

impl PoolOptions {
    /// The default pool size for reads on an SQLite file (writes have one connection of their
    /// own: SQLite has one writer at a time).
    pub const SQLITE_CONNECTIONS: u32 = 4;
    /// The default pool size on PostgreSQL.
    pub const POSTGRES_CONNECTIONS: u32 = 8;
    /// The default SQLite busy timeout.
    pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
    /// The default wait for a free connection.
    pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default wait for a free connection in a gateway (`hermes serve`), shorter than
    /// [`PoolOptions::ACQUIRE_TIMEOUT`]: while the database is away (sqlx retries a refused
    /// connect until this wait runs out) each request is answered "unavailable, retry" after
    /// at most this long instead of hanging for half a minute; a pool busy this long under
    /// load is overloaded, and the same answer suits it.
    pub const GATEWAY_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

    /// The pool size on `backend`.
    pub fn connections(&self, backend: Backend) -> u32 {
        self.max_connections.unwrap_or(match backend {
            Backend::Sqlite => Self::SQLITE_CONNECTIONS,
            Backend::Postgres => Self::POSTGRES_CONNECTIONS,
        })
    }
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_connections: None,
            busy_timeout: Self::BUSY_TIMEOUT,
            acquire_timeout: Self::ACQUIRE_TIMEOUT,
        }
    }
}

impl Store {
    /// Opens the store at `location`: [`Store::open`] for an SQLite file,
    /// [`Store::connect_postgres`] for a PostgreSQL URL.
    pub async fn open_at(location: &Location) -> Result<Store, StoreError> {
        Store::open_at_with(location, PoolOptions::default()).await
    }

    /// [`Store::open_at`] with a pool sized and timed by `pool`.
    pub async fn open_at_with(location: &Location, pool: PoolOptions) -> Result<Store, StoreError> {
        Store::open_at_logging(location, pool, StatementLog::Off).await
    }

    /// [`Store::open_at_with`], with sqlx's own event for every statement left on (a `tracing`
    /// event with target `sqlx::query` at DEBUG, or WARN for one slower than a second; the
    /// other constructors turn them off). For diagnosis, and for counting the statements an
    /// operation runs (`cargo xtask bench`). sqlx 0.9 sends `BEGIN` (on either backend) and
    /// SQLite's `COMMIT` outside its statement log: they have no event.
    pub async fn open_at_logging_statements(
        location: &Location,
        pool: PoolOptions,
    ) -> Result<Store, StoreError> {
        Store::open_at_logging(location, pool, StatementLog::On).await
    }

    async fn open_at_logging(
        location: &Location,
        pool: PoolOptions,
        log: StatementLog,
    ) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open_sqlite(path, pool, log, &MIGRATOR).await,
            Location::Postgres(url) => Store::connect_pg(url, pool, log, &PG_MIGRATOR).await,
        }
    }

    /// Opens the store at `location` as a build that knows all but the last `unknown` steps of
    /// its backend's schema would: an older release's replica (`tests::migrations`).
    #[cfg(test)]
    pub(crate) async fn open_as_older(
        location: &Location,
        unknown: usize,
    ) -> Result<Store, StoreError> {
        let (pool, log) = (PoolOptions::default(), StatementLog::Off);
        let older =
            |steps: &[(i64, &'static str, &'static str)]| migrator(&steps[..steps.len() - unknown]);
        match location {
            Location::Sqlite(path) => {
                Store::open_sqlite(path, pool, log, &older(SQLITE_STEPS)).await
            }
            Location::Postgres(url) => {
                Store::connect_pg(url, pool, log, &older(POSTGRES_STEPS)).await
            }
        }
    }

    /// The pool's size (the connections it may open at once).
    pub fn max_connections(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    /// Which database this store talks to.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Connects to the PostgreSQL database at `url` and applies pending migrations (sqlx holds
    /// an advisory lock while it migrates, so machines starting at once take turns). TLS follows
    /// `sslmode` (rustls with the system's roots, or `sslrootcert`). Errors show the URL
    /// redacted and never a password.
    pub async fn connect_postgres(url: &str) -> Result<Store, StoreError> {
        Store::connect_postgres_with(url, PoolOptions::default()).await
    }

    /// [`Store::connect_postgres`] with a pool sized and timed by `pool` (`busy_timeout` is
    /// SQLite's alone).
    pub async fn connect_postgres_with(
        url: &str,
        pool_options: PoolOptions,
    ) -> Result<Store, StoreError> {
        Store::connect_pg(url, pool_options, StatementLog::Off, &PG_MIGRATOR).await
    }

    async fn connect_pg(
        url: &str,
        pool_options: PoolOptions,
        log: StatementLog,
        schema: &Migrator,
    ) -> Result<Store, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: redact_url(url),
            message: scrub(&message, url),
        };
        install_drivers();
        let options =
            log.apply(AnyConnectOptions::from_str(url).map_err(|e| open_err(e.to_string()))?);
        // Known cost: sqlx 0.9.0 leaves Nagle's algorithm on (transact-rs/sqlx#4335, fixed by
        // #4336, unreleased), so over TLS each new connection and each statement's first run
        // waits on a delayed ACK; the fewer round trips an open makes, the less it pays. Bump
        // sqlx when the fix ships.
        let pool = AnyPoolOptions::new()
            .max_connections(pool_options.connections(Backend::Postgres))
            .acquire_timeout(pool_options.acquire_timeout)
            .connect_lazy_with(options.clone());
        // The pool's first connection: a wrong password or certificate fails at once in the
        // server's or the TLS library's own words. A refused connection the pool would retry
        // until it timed out, saying only that: after a short wait one direct attempt names
        // the cause (or, when the server has come up meanwhile, the pool waits its full time).
        let mut first = match tokio::time::timeout(FIRST_CONNECT_WAIT, pool.acquire()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) if !matches!(e, sqlx::Error::PoolTimedOut) => {
                return Err(open_err(e.to_string()));
            }
            _ => {
                let direct = sqlx::AnyConnection::connect_with(&options)
                    .await
                    .map_err(|e| open_err(e.to_string()))?;
                let _ = direct.close().await;
                pool.acquire().await.map_err(|e| open_err(e.to_string()))?
            }
        };
        // The schema is usually current: then the migrator (seven statements under an advisory
        // lock, on every process start) is skipped. Anything else — the table missing, a
        // version behind, a failed step — goes through the migrator as always.
        let current = schema_is_current(&mut first, schema).await;
        drop(first);
        if !current {
            schema
                .run(&pool)
                .await
                .map_err(|e| open_err(e.to_string()))?;
        }
        tracing::debug!(url = %redact_url(url), "PostgreSQL store open");
        Ok(Store {
            writes: pool.clone(),
            pool,
            backend: Backend::Postgres,
            _alive: std::sync::Arc::new(()),
            fleet_read: std::sync::Arc::default(),
        })
    }

    /// Opens (creating if needed) the database at `path`, in WAL mode with a busy timeout and
    /// foreign keys on, and applies pending migrations. A file that is not hermes' own
    /// ([`ownership`]) is refused untouched ([`StoreError::Foreign`]). A new database and its
    /// folder are private to the user (0600 / 0700; SQLite gives `-wal` and `-shm` the
    /// database's mode).
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, PoolOptions::default()).await
    }

    /// [`Store::open`] with a pool sized and timed by `pool`.
    pub async fn open_with(path: &Path, pool_options: PoolOptions) -> Result<Store, StoreError> {
        Store::open_sqlite(path, pool_options, StatementLog::Off, &MIGRATOR).await
    }

    async fn open_sqlite(
        path: &Path,
        pool_options: PoolOptions,
        log: StatementLog,
        schema: &Migrator,
    ) -> Result<Store, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.display().to_string(),
            message,
        };
        let owner = ownership(path).await?;
        match owner.clone() {
            Ownership::Foreign(what) => {
                return Err(StoreError::Foreign {
                    path: path.display().to_string(),
                    what,
                });
            }
            Ownership::Absent => create_private(path).map_err(|e| open_err(e.to_string()))?,
            Ownership::Ours => {}
        }
        install_drivers();
        let open_pool = |connections: u32| async move {
            let options = log.apply(
                AnyConnectOptions::from_str(&sqlite_url(path))
                    .map_err(|e| open_err(e.to_string()))?,
            );
            let busy_ms = pool_options.busy_timeout.as_millis();
            AnyPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(pool_options.acquire_timeout)
                // A connection is a file and a thread of this process: nothing can hang up on
                // it while it idles, so no ping (a hand-off to its thread and back) before
                // every statement. sqlx still pings it when it is given back.
                .test_before_acquire(false)
                .after_connect(move |conn, _| {
                    Box::pin(async move {
                        conn.execute(sqlx::AssertSqlSafe(format!(
                            "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA busy_timeout = {busy_ms}; \
                             PRAGMA journal_size_limit = {WAL_KEEP_BYTES}; PRAGMA foreign_keys = ON;"
                        )))
                        .await
                        .map(drop)
                    })
                })
                .connect_with(options)
                .await
                .map_err(|e| open_err(e.to_string()))
        };
        // The usual case, a database this hermes made before: in WAL mode and migrated, so
        // nothing is set up again.
        if owner == Ownership::Ours {
            let pool = open_pool(pool_options.connections(Backend::Sqlite)).await?;
            let ready = match pool.acquire().await {
                Ok(mut conn) => {
                    let wal = sqlx::query_scalar::<_, String>("PRAGMA journal_mode")
                        .fetch_one(&mut *conn)
                        .await
                        .is_ok_and(|mode| mode.eq_ignore_ascii_case("wal"));
                    wal && schema_is_current(&mut conn, schema).await
                }
                Err(_) => false,
            };
            if ready {
                return Ok(Store::sqlite(path, pool, open_pool(1).await?));
            }
            pool.close().await;
        }
        {
            // Several processes opening a fresh home at once: one at a time switches the file
            // to WAL (persistent in the file) and migrates (SQLite cannot wait for the lock WAL
            // mode needs), the others wait.
            let _opening = open_lock(path).await.map_err(|e| open_err(e.to_string()))?;
            let mut conn = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(pool_options.busy_timeout)
                .connect()
                .await
                .map_err(|e| open_err(e.to_string()))?;
            schema
                .run(&mut conn)
                .await
                .map_err(|e| open_err(e.to_string()))?;
            conn.close().await.map_err(|e| open_err(e.to_string()))?;
        }
        Ok(Store::sqlite(
            path,
            open_pool(pool_options.connections(Backend::Sqlite)).await?,
            open_pool(1).await?,
        ))
    }

    /// An SQLite store over its pools, its WAL checkpointed beside them.
    fn sqlite(path: &Path, pool: AnyPool, writes: AnyPool) -> Store {
        let alive = std::sync::Arc::new(());
        checkpoint_beside(path, std::sync::Arc::downgrade(&alive));
        Store {
            pool,
            writes,
            backend: Backend::Sqlite,
            _alive: alive,
            fleet_read: std::sync::Arc::default(),
        }
    }

    /// A transaction that will write, holding the write lock of `scope` (a session id) from
    /// before its first read until it ends, so a read-modify-write inside it cannot lose
    /// another writer's update, in this process or any other, on this machine or another.
    ///
    /// - SQLite: `BEGIN IMMEDIATE`, the database's one write lock (waiting up to the busy
    ///   timeout while another connection or process holds it). sqlx's `begin()` issues a
    ///   deferred `BEGIN` instead: its read takes a WAL snapshot, and when another connection
    ///   commits before the upgrade to a write lock, SQLite fails the write with
    ///   `SQLITE_BUSY_SNAPSHOT` at once (the busy timeout does not apply).
    /// - PostgreSQL: `BEGIN` (read committed) and a transaction-scoped advisory lock on the
    ///   scope's hash (`pg_advisory_xact_lock`): writers of one session take turns, writers of
    ///   different sessions run side by side, and every statement after the lock reads what
    ///   the previous holder committed. The server releases the lock when the transaction ends,
    ///   or when its connection dies.
    async fn write_tx(
        &self,
        scope: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        match self.backend {
            Backend::Sqlite => self.writes.begin_with("BEGIN IMMEDIATE").await.db(),
            Backend::Postgres => {
                let mut tx = self.writes.begin().await.db()?;
                lock_scope(&mut tx, scope).await?;
                Ok(tx)
            }
        }
    }

    /// Creates an empty session and returns its id.
    pub async fn create_session(&self, new: &NewSession) -> Result<String, StoreError> {
        let id = new_session_id();
        let mut tx = self.write_tx(new_scope(&id, new)).await?;
        insert_session(&mut tx, &id, new).await?;
        tx.commit().await.db()?;
        Ok(id)
    }

    /// Appends `messages` after the session's last message, in one transaction.
    pub async fn append(&self, session: &str, messages: &[Message]) -> Result<(), StoreError> {
        self.append_step(session, messages, &StepExtras::default())
            .await
    }

    /// [`Store::append`], writing `extras` (the step's usage, its receipt) in the same
    /// transaction.
    pub async fn append_step(
        &self,
        session: &str,
        messages: &[Message],
        extras: &StepExtras,
    ) -> Result<(), StoreError> {
        let rows = prepare_rows(messages)?;
        let mut tx = self.write_tx(session).await?;
        let tip = append_rows(&mut tx, session, rows, extras.usage.as_ref()).await?;
        step::write_extras(&mut tx, session, &tip, extras).await?;
        tx.commit().await.db()?;
        tracing::debug!(session, appended = messages.len(), "messages stored");
        Ok(())
    }

    /// Adds a provider-reported usage to the session's five counters and, when the session has
    /// a tenant (a gateway conversation), records its tokens (input + output) at this time in
    /// the tenant's spend ([`Store::tenant_tokens`]), in one transaction (a count beyond
    /// `i64::MAX` is taken as `i64::MAX`).
    pub async fn add_usage(&self, session: &str, usage: &Usage) -> Result<(), StoreError> {
        let mut tx = self.write_tx(session).await?;
        add_usage_in(&mut tx, session, usage).await?;
        tx.commit().await.db()?;
        Ok(())
    }

    /// Replaces the session's `model_config` (where verdicts live) with `config` as a whole.
    /// Writing back a copy read earlier undoes verdict changes made since: change verdicts with
    /// [`Store::record_verdict`] and [`Store::clear_verdicts`] instead.
    pub async fn set_model_config(
        &self,
        session: &str,
        config: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        let done = execute!(
            &self.writes,
            "UPDATE sessions SET model_config = $1, updated_at = $2 WHERE id = $3",
            [encode_config(config)?, now_ms(), session]
        )?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(session.to_owned()));
        }
        Ok(())
    }

    /// Records that the user named `base_url` for this session (so an API key may go there).
    pub async fn confirm_base_url(&self, session: &str, base_url: &str) -> Result<(), StoreError> {
        let done = execute!(
            &self.writes,
            "UPDATE sessions SET base_url = $1, base_url_confirmed = 1, updated_at = $2 WHERE id = $3",
            [base_url, now_ms(), session]
        )?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(session.to_owned()));
        }
        Ok(())
    }

    /// Records that the session continues on another provider, model and base URL (the REPL's
    /// `/model`): the user named them, so the URL counts as confirmed. Messages are untouched.
    pub async fn set_target(
        &self,
        session: &str,
        provider: &str,
        model: &str,
        base_url: Option<&str>,
    ) -> Result<(), StoreError> {
        let done = execute!(
            &self.writes,
            "UPDATE sessions SET provider = $1, model = $2, base_url = $3, base_url_confirmed = 1, \
             updated_at = $4 WHERE id = $5",
            [provider, model, base_url, now_ms(), session]
        )?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(session.to_owned()));
        }
        Ok(())
    }

    /// The row (`session_columns!`) of session `id`, if there is one.
    pub(crate) async fn session_row(&self, id: &str) -> Result<Option<DbRow>, StoreError> {
        sqlx::query(concat!(
            "SELECT ",
            session_columns!(),
            " FROM sessions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .db()
    }

    /// Every session's row (`session_columns!`), in the order `order_by` says; sessions still
    /// being written in pieces (`staged`) are not there yet.
    pub(crate) async fn every_session_row(
        &self,
        order_by: &'static str,
    ) -> Result<Vec<DbRow>, StoreError> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM sessions WHERE staged = 0 ORDER BY {order_by}",
            session_columns!()
        )))
        .fetch_all(&self.pool)
        .await
        .db()
    }

    /// The session's metadata.
    pub async fn session(&self, session: &str) -> Result<SessionMeta, StoreError> {
        let row = self
            .session_row(session)
            .await?
            .ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        meta_from_row(&row)
    }

    /// The session's active view, in order: archived rows (replaced by a compaction checkpoint)
    /// are left out and the checkpoint stands where they stood.
    pub async fn messages(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        Ok(self
            .active(session)
            .await?
            .into_iter()
            .map(|m| m.message)
            .collect())
    }

    /// The active view with each message's position (a branch's inherited messages at
    /// `0..`, see [`Fork`]).
    pub async fn active(&self, session: &str) -> Result<Vec<StoredMessage>, StoreError> {
        read_active(&mut *self.pool.acquire().await.db()?, session).await
    }

    /// Every row of the session, archived ones included, in append order; for a branch that
    /// shares its parent's prefix, the messages it inherits come first (as its view holds
    /// them: the parent's rows archived before the fork are not the branch's).
    pub async fn all_messages(&self, session: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let mut conn = self.pool.acquire().await.db()?;
        Ok(
            lineage::read_view(&mut conn, session, lineage::OwnRows::All)
                .await?
                .messages(),
        )
    }

    /// Applies a compaction given as tuples: archives the active rows at `archive` and adds each
    /// `(slot, message, checkpoint)` of `inserts` where the row at position `slot` stands.
    /// The same as [`Store::apply_compaction`] with `checkpoint == true` meaning
    /// [`RowKind::Checkpoint`]; only the tests use it, to compare the two.
    #[cfg(test)]
    pub(crate) async fn compact(
        &self,
        session: &str,
        archive: &[i64],
        inserts: &[(i64, Message, bool)],
    ) -> Result<(), StoreError> {
        let inserts: Vec<_> = inserts
            .iter()
            .map(|(slot, message, checkpoint)| {
                (*slot, message, RowKind::from_checkpoint(*checkpoint))
            })
            .collect();
        self.store_compaction(session, archive, &inserts).await
    }

    /// Metadata and messages.
    pub async fn load(&self, session: &str) -> Result<(SessionMeta, Vec<Message>), StoreError> {
        Ok((self.session(session).await?, self.messages(session).await?))
    }

    /// Answers when the database does (one `SELECT 1`): a server's readiness check.
    pub async fn ping(&self) -> Result<(), StoreError> {
        execute!(&self.pool, "SELECT 1", [])?;
        Ok(())
    }

    /// Every session, most recently changed first.
    pub async fn list(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let rows = self.every_session_row("updated_at DESC, id").await?;
        rows.iter().map(meta_from_row).collect()
    }

    /// Deletes a session and its messages, in one transaction; its branches keep their whole
    /// view and lose the parent link: a branch that shares the session's prefix by reference is
    /// materialised first (the messages it inherits copied into it, see [`Fork`]).
    pub async fn delete(&self, session: &str) -> Result<(), StoreError> {
        let mut tx = self.write_tx(session).await?;
        let children: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM sessions WHERE parent_id = $1 AND fork_count IS NOT NULL ORDER BY id",
        )
        .bind(session)
        .fetch_all(&mut *tx)
        .await
        .db()?;
        for child in &children {
            // The child's own writers (a compaction that materialises it too) take turns with
            // this (PostgreSQL; SQLite's one write lock is held already).
            if self.backend == Backend::Postgres {
                lock_scope(&mut tx, child).await?;
            }
            lineage::materialise(&mut tx, child).await?;
        }
        let done = execute!(&mut *tx, "DELETE FROM sessions WHERE id = $1", [session])?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(session.to_owned()));
        }
        tx.commit().await.db()?;
        Ok(())
    }

    /// Imports a `hermes.session.v1` document as a new session, in one transaction.
    pub async fn import(&self, file: &SessionFile) -> Result<String, StoreError> {
        let id = new_session_id();
        let mut tx = self.write_tx(&id).await?;
        insert_session(
            &mut tx,
            &id,
            &NewSession {
                title: file.title.clone(),
                parent_id: None,
                provider: file.provider.clone(),
                model: file.model.clone(),
                base_url: file.base_url.clone(),
                // A URL that arrives in a file is not the user's word.
                base_url_confirmed: false,
                model_config: file.model_config.clone(),
                tenant: file.tenant.as_deref().map(Into::into),
                partition: file.partition.as_deref().map(Into::into),
                fork: None,
                chain: None,
            },
        )
        .await?;
        append_rows(&mut tx, &id, prepare_rows(&file.messages)?, None).await?;
        tx.commit().await.db()?;
        Ok(id)
    }

    /// Creates a session together with its first messages, in one transaction: a session never
    /// exists without the turn that made it (a first turn that fails stores nothing).
    pub async fn create_with_messages(
        &self,
        new: &NewSession,
        messages: &[Message],
    ) -> Result<String, StoreError> {
        self.create_with_step(new, messages, &StepExtras::default())
            .await
    }

    /// [`Store::create_with_messages`], writing `extras` (the step's usage, its receipt) in the
    /// same transaction.
    pub async fn create_with_step(
        &self,
        new: &NewSession,
        messages: &[Message],
        extras: &StepExtras,
    ) -> Result<String, StoreError> {
        let tip = self.create_at_tip(new, messages, extras).await?;
        Ok(tip.session().to_owned())
    }

    /// [`Store::create_with_step`], returning the new session's tip (for a caller that goes on
    /// from there with compare-and-append: no read of it afterwards).
    pub async fn create_at_tip(
        &self,
        new: &NewSession,
        messages: &[Message],
        extras: &StepExtras,
    ) -> Result<Tip, StoreError> {
        let id = new_session_id();
        let (rows, chain) = prepare_chained(messages, new.chain.as_deref())?;
        let pieces = pieces(&rows);
        if pieces.len() > 1 && new.fork.is_none() {
            let tip = self.create_staged(id, new, rows, &pieces, extras).await?;
            return Ok(tip.with_chain(chain));
        }
        let mut tx = self.write_tx(new_scope(&id, new)).await?;
        insert_session(&mut tx, &id, new).await?;
        let usage = extras.usage.as_ref();
        let tip = match new.fork {
            // A new session without an inherited prefix starts at position 0.
            None => store_rows(&mut tx, &id, 0, rows, usage).await?,
            Some(_) => append_rows(&mut tx, &id, rows, usage).await?,
        };
        step::write_extras(&mut tx, &id, &tip, extras).await?;
        tx.commit().await.db()?;
        tracing::debug!(session = %id, appended = messages.len(), "session created with its first messages");
        Ok(tip.with_chain(chain))
    }

    /// [`Store::create_with_step`] for first messages larger than one short write
    /// ([`STAGE_BYTES`]): the session is created `staged` (no lookup, listing or match sees it)
    /// with the first piece of its rows, each further piece is a write transaction of its own
    /// (other writers take turns with them: SQLite's writer is never held for the whole
    /// history), and the last piece commits with the revision, the step's extras and the
    /// session made visible, all in one transaction, so the turn is still stored whole or not
    /// at all. A failure on the way removes what was staged (the sweep,
    /// [`Store::sweep_staged`], removes what a process that died left).
    async fn create_staged(
        &self,
        id: String,
        new: &NewSession,
        rows: Vec<MessageRow>,
        pieces: &[std::ops::Range<usize>],
        extras: &StepExtras,
    ) -> Result<Tip, StoreError> {
        let scope = new_scope(&id, new);
        let written = async {
            let now = now_ms();
            let last = pieces.len() - 1;
            let mut tip = None;
            for (i, piece) in pieces.iter().enumerate() {
                let mut tx = self.write_tx(scope).await?;
                if i == 0 {
                    insert_session(&mut tx, &id, new).await?;
                    execute!(
                        &mut *tx,
                        "UPDATE sessions SET staged = 1 WHERE id = $1",
                        [&id]
                    )?;
                }
                MessageRow::insert_all(&rows[piece.clone()], &mut tx, &id, now).await?;
                if i == last {
                    let revision =
                        next_revision(&mut tx, &id, rows.len(), now, extras.usage.as_ref()).await?;
                    execute!(
                        &mut *tx,
                        "UPDATE sessions SET staged = 0 WHERE id = $1",
                        [&id]
                    )?;
                    let at = Tip::new(&id, revision, rows.len() as i64 - 1);
                    step::write_extras(&mut tx, &id, &at, extras).await?;
                    tip = Some(at);
                }
                tx.commit().await.db()?;
            }
            tip.ok_or_else(|| StoreError::NotFound(id.clone()))
        }
        .await;
        let tip = match written {
            Ok(tip) => tip,
            Err(e) => {
                if let Err(cleanup) = self.drop_staged(&id).await {
                    tracing::warn!(session = %id, error = %cleanup, "a staged session was left for the sweep");
                }
                return Err(e);
            }
        };
        tracing::debug!(session = %id, appended = rows.len(), pieces = pieces.len(), "session created with its first messages, in pieces");
        Ok(tip)
    }

    /// Deletes the session `id` if it is still staged.
    async fn drop_staged(&self, id: &str) -> Result<(), StoreError> {
        let mut tx = self.write_tx(id).await?;
        execute!(
            &mut *tx,
            "DELETE FROM sessions WHERE id = $1 AND staged = 1",
            [id]
        )?;
        tx.commit().await.db()
    }

    /// Runs `sql`, a `DELETE` of the rows that fell out of use before its `$1` (`before`, Unix
    /// ms), on the writes' pool; how many rows went. Every `sweep_*` is one of these.
    async fn sweep(&self, sql: &'static str, before: i64) -> Result<u64, StoreError> {
        let done = execute!(&self.writes, sqlx::query(sql), [before])?;
        Ok(done.rows_affected())
    }

    /// Deletes the sessions still staged ([`Store::create_with_step`] in pieces) that were
    /// created before `before` (Unix ms): what a process that died while writing a large first
    /// contact left. How many went.
    pub async fn sweep_staged(&self, before: i64) -> Result<u64, StoreError> {
        self.sweep(
            "DELETE FROM sessions WHERE staged = 1 AND created_at < $1",
            before,
        )
        .await
    }

    /// The session as a `hermes.session.v1` document.
    pub async fn export(&self, session: &str) -> Result<SessionFile, StoreError> {
        let (meta, messages) = self.load(session).await?;
        Ok(SessionFile {
            format: hermes_core::SESSION_FORMAT.to_owned(),
            provider: meta.provider,
            model: meta.model,
            base_url: meta.base_url,
            title: meta.title,
            tenant: meta.tenant,
            partition: meta.partition,
            model_config: meta.model_config,
            messages,
        })
    }

    /// Branches the session after its first `at` messages (all when `None`): a new session
    /// with the session's title, target, `model_config` (verdicts included), tenant and
    /// partition, linked to it as its parent, sharing those messages by reference (every
    /// carrier comes through its view as stored; no row is copied, see [`Fork`]). Returns its
    /// id; `at` beyond the view is [`StoreError::BranchBeyondEnd`] and creates nothing.
    pub async fn branch(&self, session: &str, at: Option<usize>) -> Result<String, StoreError> {
        let id = new_session_id();
        let mut tx = self.write_tx(session).await?;
        let row = sqlx::query(tip::TIP)
            .bind(session)
            .fetch_optional(&mut *tx)
            .await
            .db()?
            .ok_or_else(|| StoreError::NotFound(session.to_owned()))?;
        let tip = tip::tip_of(session, &row)?;
        drop(row);
        let count = match at {
            Some(at) => at,
            None => usize::try_from(lineage::view_len_at(&mut tx, &tip).await?).unwrap_or(0),
        };
        lineage::insert_branch(&mut tx, &id, &Fork::new(tip, count), now_ms()).await?;
        tx.commit().await.db()?;
        tracing::debug!(session, branch = %id, shared = count, "branched");
        Ok(id)
    }
}

/// How long opening a PostgreSQL store waits for the server before asking it directly why not.
const FIRST_CONNECT_WAIT: Duration = Duration::from_secs(3);

/// Longest wait for another process that is opening the same database.
const OPEN_LOCK_WAIT: Duration = Duration::from_secs(60);

/// An exclusive advisory lock on `<db>.lock`, held while the database is opened and migrated;
/// released when dropped.
async fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    lock_file(Path::new(&lock_path), OPEN_LOCK_WAIT).await
}

/// Takes an exclusive advisory lock on `path` (created 0600 when missing), waiting up to `wait`
/// for another process to let go; the lock lasts as long as the returned file.
pub async fn lock_file(path: &Path, wait: Duration) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < wait => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(std::io::Error::other(format!(
                    "another process kept {} locked for {} s",
                    path.display(),
                    wait.as_secs()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Creates an empty database file readable by its owner only, and its folder (0700) when
/// missing.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut dir = std::fs::DirBuilder::new();
    dir.recursive(true);
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        dir.mode(0o700);
        file.mode(0o600);
    }
    if let Some(parent) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        dir.create(parent)?;
    }
    file.open(path).map(drop)
}

/// Takes the PostgreSQL write lock of `scope` (a session id) in the caller's transaction, until
/// it ends (see [`Store::write_tx`]).
async fn lock_scope(tx: &mut sqlx::AnyConnection, scope: &str) -> Result<(), StoreError> {
    execute!(
        &mut *tx,
        "SELECT 1 FROM pg_advisory_xact_lock(hashtextextended($1, 0))",
        [scope]
    )?;
    Ok(())
}

/// A new session id (time-ordered).
fn new_session_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// The scope whose write lock creating `new` takes: its parent's when it shares a prefix (so
/// the parent cannot be deleted or compacted while the fork is checked and recorded), else its
/// own id.
fn new_scope<'a>(id: &'a str, new: &'a NewSession) -> &'a str {
    new.fork.as_ref().map_or(id, |f| f.tip().session())
}

async fn insert_session(
    tx: &mut sqlx::AnyConnection,
    id: &str,
    new: &NewSession,
) -> Result<(), StoreError> {
    let now = now_ms();
    if let Some(fork) = &new.fork {
        lineage::check_fork(tx, fork).await?;
    }
    let fork = new.fork.as_deref();
    execute!(
        &mut *tx,
        "INSERT INTO sessions (id, title, parent_id, provider, model, base_url, base_url_confirmed, \
         model_config, created_at, updated_at, tenant, partition_key, message_count, \
         fork_revision, fork_last, fork_count) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15)",
        [
            id,
            &new.title,
            fork.map_or(new.parent_id.as_deref(), |f| Some(f.tip().session())),
            &new.provider,
            &new.model,
            &new.base_url,
            i64::from(new.base_url_confirmed),
            encode_config(&new.model_config)?,
            now,
            new.tenant.as_deref(),
            new.partition.as_deref(),
            fork.map_or(0, Fork::count_i64),
            fork.map(|f| f.tip().revision()),
            fork.map(|f| f.tip().last()),
            fork.map(Fork::count_i64)
        ]
    )?;
    Ok(())
}

/// The session's active view, read through `conn` (the pool, or a transaction): archived rows
/// are left out and each checkpoint or shrunk row stands where the rows it replaces stood; a
/// branch's inherited messages come first (see [`Fork`]).
pub(crate) async fn read_active(
    conn: &mut sqlx::AnyConnection,
    session: &str,
) -> Result<Vec<StoredMessage>, StoreError> {
    Ok(lineage::read_view(conn, session, lineage::OwnRows::Active)
        .await?
        .messages())
}

/// [`read_active`] of a session known to inherit nothing (its row has no fork): its own rows
/// alone, by the messages' primary key, without walking a lineage.
pub(crate) async fn read_unforked_active<'c, E>(
    conn: E,
    session: &str,
) -> Result<Vec<StoredMessage>, StoreError>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    // Read in primary-key order (no sort in SQLite: a 23 MB session would spill to a temp
    // B-tree), then move checkpoints and shrunk rows to their slots with a stable sort.
    let rows = sqlx::query(concat!(
        "SELECT ",
        message_columns!(),
        ", archived_at, kind, sort_key",
        carrier_columns!(),
        " FROM messages WHERE session_id = $1 AND archived_at IS NULL ORDER BY position"
    ))
    .bind(session)
    .fetch_all(conn)
    .await
    .db()?;
    unforked_view(session, &rows)
}

/// The active view of `session`, a session that inherits nothing, from its active rows read in
/// position order (each a view row, [`stored_message`]): checkpoints and shrunk rows moved to
/// their slots with a stable sort.
pub(crate) fn unforked_view(
    session: &str,
    rows: &[DbRow],
) -> Result<Vec<StoredMessage>, StoreError> {
    let mut keyed = rows
        .iter()
        .map(|r| {
            let key: Option<i64> = r.try_get("sort_key").db()?;
            Ok((key, stored_message(session, r)?))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    if keyed.iter().any(|(key, _)| key.is_some()) {
        keyed.sort_by_key(|(key, m)| (key.unwrap_or(m.position), m.position));
    }
    Ok(keyed.into_iter().map(|(_, m)| m).collect())
}

/// A token count as the database holds it (a count beyond `i64::MAX` is taken as `i64::MAX`).
pub(crate) fn token_count(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// [`Store::add_usage`] inside the caller's transaction `tx`: the session's counters, then the
/// tenant's spend.
pub(crate) async fn add_usage_in(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    usage: &Usage,
) -> Result<(), StoreError> {
    let n = token_count;
    execute!(
        &mut *tx,
        "UPDATE sessions SET input_tokens = input_tokens + $1, output_tokens = output_tokens + $2, \
             reasoning_tokens = reasoning_tokens + $3, cache_read_tokens = cache_read_tokens + $4, \
             cache_write_tokens = cache_write_tokens + $5 WHERE id = $6",
        [
            n(usage.input),
            n(usage.output),
            n(usage.reasoning),
            n(usage.cache_read),
            n(usage.cache_write),
            session
        ]
    )?;
    record_tenant_usage(tx, session, usage).await
}

/// Records `usage`'s tokens (input + output) at this time in the spend of the session's tenant
/// ([`Store::tenant_tokens`]), when it has one (a gateway conversation).
pub(crate) async fn record_tenant_usage(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    usage: &Usage,
) -> Result<(), StoreError> {
    let sql = step::usage_sql("$1", "$2", "sessions WHERE id = $3");
    execute!(
        &mut *tx,
        sqlx::query(sqlx::AssertSqlSafe(sql)),
        [now_ms(), step::usage_tokens(usage), session]
    )?;
    Ok(())
}

async fn append_rows(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    rows: Vec<MessageRow>,
    usage: Option<&Usage>,
) -> Result<Tip, StoreError> {
    let start = next_position(tx, session).await?;
    store_rows(tx, session, start, rows, usage).await
}

/// How many bytes of rows one write transaction of a session's first messages holds at most
/// before the rest goes in further ones ([`Store::create_with_step`]): a few milliseconds of SQLite's
/// one writer, so a small turn beside a 32 MiB first contact waits for a piece, not for all.
pub(crate) const STAGE_BYTES: usize = 1024 * 1024;

/// `rows` cut into consecutive pieces of at most [`STAGE_BYTES`] each (a single larger row is a
/// piece of its own); one piece for the usual first contact.
pub(crate) fn pieces(rows: &[MessageRow]) -> Vec<std::ops::Range<usize>> {
    let mut pieces = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, row) in rows.iter().enumerate() {
        let size = row.bytes();
        if i > start && bytes + size > STAGE_BYTES {
            pieces.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    pieces.push(start..rows.len());
    pieces
}

/// `messages` as the rows that store them (encoded, their match keys hashed), at positions
/// counted from 0 until [`store_rows`] puts them where they go: built before the write
/// transaction, so the database's one writer (on SQLite) is not held while a large history is
/// encoded, and off the reactor when it is large ([`hermes_core::offload::heavy`]).
pub(crate) fn prepare_rows(messages: &[Message]) -> Result<Vec<MessageRow>, StoreError> {
    prepare_chained(messages, None).map(|(rows, _)| rows)
}

/// [`prepare_rows`], each user and assistant row given its chain key when `chain` (the
/// conversation's chain state before `messages`, [`hermes_core::chain_keys`]) is
/// known; returns the rows and the chain state after them (`None`: unknown).
pub(crate) fn prepare_chained(
    messages: &[Message],
    chain: Option<&str>,
) -> Result<(Vec<MessageRow>, Option<String>), StoreError> {
    hermes_core::offload::heavy(messages, || {
        let mut rows = messages
            .iter()
            .enumerate()
            .map(|(i, msg)| MessageRow::from_message(i as i64, msg))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(start) = chain else {
            return Ok((rows, None));
        };
        // The rows' match keys are the chain's assistant links: hashed once.
        let matched: Vec<Option<String>> = rows.iter().map(|r| r.match_key.clone()).collect();
        let mut state = start.to_owned();
        for (row, key) in rows
            .iter_mut()
            .zip(hermes_core::chain_keys_matched(start, messages, &matched))
        {
            if let Some(key) = key {
                state.clone_from(&key);
                row.chain_key = Some(key);
            }
        }
        Ok((rows, Some(state)))
    })
}

/// The position the session's next row takes: after its last row, or (a branch without rows of
/// its own yet) after the messages it inherits; [`StoreError::NotFound`] for no such session.
pub(crate) async fn next_position(
    tx: &mut sqlx::AnyConnection,
    session: &str,
) -> Result<i64, StoreError> {
    sqlx::query_scalar::<_, i64>(
        "SELECT COALESCE((SELECT MAX(position) FROM messages WHERE session_id = $1), \
         fork_count - 1, -1) + 1 FROM sessions WHERE id = $1",
    )
    .bind(session)
    .fetch_optional(&mut *tx)
    .await
    .db()?
    .ok_or_else(|| StoreError::NotFound(session.to_owned()))
}

/// Inserts `rows` ([`prepare_rows`]) at positions `start..` of an existing session and records
/// the change on its row: as many more rows in `message_count`, a new revision, the step's
/// `usage` counted. Returns the session's tip after it.
pub(crate) async fn store_rows(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    start: i64,
    mut rows: Vec<MessageRow>,
    usage: Option<&Usage>,
) -> Result<Tip, StoreError> {
    let now = now_ms();
    for (i, row) in rows.iter_mut().enumerate() {
        row.position = start + i as i64;
    }
    MessageRow::insert_all(&rows, &mut *tx, session, now).await?;
    let revision = next_revision(tx, session, rows.len(), now, usage).await?;
    Ok(Tip::new(session, revision, start + rows.len() as i64 - 1))
}

/// Records a change of the session's messages on its row, in the caller's write transaction:
/// `added` more rows in `message_count`, `updated_at` = `now`, the revision moved on, and the
/// step's `usage` added to its token counters in the same statement (a step is one write of
/// the session's row, not two). Returns the new revision.
pub(crate) async fn next_revision(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    added: usize,
    now: i64,
    usage: Option<&Usage>,
) -> Result<i64, StoreError> {
    bump_revision(tx, session, added, now, usage, None)
        .await?
        .ok_or_else(|| StoreError::NotFound(session.to_owned()))
}

/// [`next_revision`], only while the session's revision is `expected` when one is given (a
/// compare-and-append's compare and its write of the session row, one statement): `None` when
/// the session is not there or has moved on.
pub(crate) async fn bump_revision(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    added: usize,
    now: i64,
    usage: Option<&Usage>,
    expected: Option<i64>,
) -> Result<Option<i64>, StoreError> {
    let query = match expected {
        None => sqlx::query_scalar(bump_sql!(" RETURNING revision")),
        Some(_) => sqlx::query_scalar(bump_sql!(" AND revision = $9 RETURNING revision")),
    };
    let mut query = bind_bump!(query, session, added, now, usage);
    if let Some(revision) = expected {
        query = query.bind(revision);
    }
    query.fetch_optional(&mut *tx).await.db()
}

#[cfg(test)]
mod tests;
