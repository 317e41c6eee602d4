//! One `messages` row: each field of a message as the exact JSON text it holds.

use hermes_core::{Message, RawJson};
use serde::ser::SerializeMap as _;
use sqlx::Row as _;

use crate::{DbResult as _, StoreError};

/// The columns read back, in `MessageRow::from_sql` order (a macro so queries stay static).
macro_rules! message_columns {
    () => {
        "position, role, content, tool_calls, tool_call_id, name, reasoning_content, reasoning, \
         reasoning_details, origin_provider, origin_host, origin_model, extra, key_order"
    };
}

/// What a view read adds to [`message_columns!`] of a `messages` row: its carrier id and, when
/// an earlier request left that turn's carriers out for good, the id again from
/// `left_out_carriers` (one probe of its primary key), so the view and the marks on it are of
/// one moment and one statement.
macro_rules! carrier_columns {
    () => {
        ", carrier_id, (SELECT lo.carrier FROM left_out_carriers lo \
         WHERE lo.carrier = messages.carrier_id) AS carrier_left_out"
    };
}

/// A message as stored: each column's text, owned (`S = String`, a row to write) or borrowed
/// from a row read back (`S = &str`, no copy).
#[derive(Debug, Default)]
pub(crate) struct MessageRow<S = String> {
    pub(crate) position: i64,
    role: S,
    content: Option<S>,
    tool_calls: Option<S>,
    tool_call_id: Option<S>,
    name: Option<S>,
    reasoning_content: Option<S>,
    reasoning: Option<S>,
    reasoning_details: Option<S>,
    origin_provider: Option<S>,
    origin_host: Option<S>,
    origin_model: Option<S>,
    extra: Option<S>,
    key_order: Option<S>,
    /// [`hermes_core::match_key`]: written, never read back into the message.
    pub(crate) match_key: Option<String>,
    /// [`hermes_core::chain_keys`]: set by [`crate::chain_rows`] where the chain before
    /// the row is known; written, never read back into the message.
    pub(crate) chain_key: Option<String>,
    /// [`hermes_core::left_out::carrier_id`]: written so a view read can say whether the
    /// turn's carriers were left out for good ([`carrier_columns!`]); never read back into the
    /// message.
    pub(crate) carrier_id: Option<String>,
}

struct ExtraKeys<'a>(&'a [(String, RawJson)]);

impl serde::Serialize for ExtraKeys<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

fn encode<T: serde::Serialize + ?Sized>(what: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Encode(format!("{what}: {e}")))
}

/// Appends `"key":raw` to a JSON object being built.
pub(crate) fn push_raw(out: &mut String, key: &str, raw: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
    out.push_str(raw);
}

/// The columns of one `messages` row an insert binds.
pub(crate) const COLUMNS: usize = 19;

/// Rows per multi-row insert: 64 × 19 binds stays far below SQLite's 32,766 and PostgreSQL's
/// 65,535.
pub(crate) const ROWS_PER_INSERT: usize = 64;

impl MessageRow {
    /// The bytes of text the row holds (what writing it costs, roughly).
    pub(crate) fn bytes(&self) -> usize {
        [
            &self.role as &str,
            self.content.as_deref().unwrap_or_default(),
            self.tool_calls.as_deref().unwrap_or_default(),
            self.reasoning_content.as_deref().unwrap_or_default(),
            self.reasoning.as_deref().unwrap_or_default(),
            self.reasoning_details.as_deref().unwrap_or_default(),
            self.extra.as_deref().unwrap_or_default(),
            self.key_order.as_deref().unwrap_or_default(),
        ]
        .iter()
        .map(|s| s.len())
        .sum()
    }

    pub(crate) fn from_message(position: i64, msg: &Message) -> Result<Self, StoreError> {
        Ok(MessageRow {
            position,
            role: msg.role.as_str().to_owned(),
            content: msg.content.as_ref().map(|r| r.get().to_owned()),
            tool_calls: msg
                .tool_calls
                .as_ref()
                .map(|c| encode("tool_calls", c))
                .transpose()?,
            tool_call_id: msg.tool_call_id.clone(),
            name: msg.name.clone(),
            reasoning_content: msg
                .reasoning_content
                .as_ref()
                .map(|c| c.raw().get().to_owned()),
            reasoning: msg.reasoning.as_ref().map(|c| c.raw().get().to_owned()),
            reasoning_details: msg
                .reasoning_details
                .as_ref()
                .map(|d| encode("reasoning_details", d))
                .transpose()?,
            origin_provider: msg.origin.as_ref().map(|o| o.provider.clone()),
            origin_host: msg.origin.as_ref().map(|o| o.host.clone()),
            origin_model: msg.origin.as_ref().map(|o| o.model.clone()),
            extra: (!msg.extra.is_empty())
                .then(|| encode("extra keys", &ExtraKeys(&msg.extra)))
                .transpose()?,
            key_order: msg.key_order.as_ref().map(ToString::to_string),
            match_key: hermes_core::match_key(msg),
            chain_key: None,
            carrier_id: hermes_core::left_out::carrier_id(msg),
        })
    }

    /// Inserts `rows` of `session` in as few statements as the backends' bind limits allow
    /// ([`ROWS_PER_INSERT`] rows each): a first contact's 200-message history is 4 statements,
    /// not 200 round trips to the database.
    pub(crate) async fn insert_all(
        rows: &[MessageRow],
        conn: &mut sqlx::AnyConnection,
        session: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let (columns, values) = Self::values_sql(chunk, 1);
            let sql = format!("INSERT INTO messages ({columns}) VALUES {values}");
            let query = Self::bind_all(sqlx::query(sqlx::AssertSqlSafe(sql)), chunk, session, now);
            crate::DbResult::db(query.execute(&mut *conn).await)?;
        }
        Ok(())
    }

    /// The column list and the `VALUES` rows of an insert of `rows` (at most
    /// [`ROWS_PER_INSERT`]), placeholders numbered from `$first`; [`MessageRow::bind_all`] binds
    /// them in that order. The chain key and the carrier id are each named only when a row has
    /// one (rows of the paths that do not chain, and rows without carriers, are written as
    /// before those columns existed).
    pub(crate) fn values_sql(rows: &[MessageRow], first: usize) -> (String, String) {
        let chained = rows.iter().any(|r| r.chain_key.is_some());
        let carried = rows.iter().any(|r| r.carrier_id.is_some());
        let width = COLUMNS - usize::from(!chained) - usize::from(!carried);
        let mut columns = String::from(
            "session_id, position, role, content, tool_calls, tool_call_id, name, \
             reasoning_content, reasoning, reasoning_details, origin_provider, origin_host, \
             origin_model, extra, key_order, created_at, match_key",
        );
        if carried {
            columns.push_str(", carrier_id");
        }
        if chained {
            columns.push_str(", chain_key");
        }
        let values: Vec<String> = (0..rows.len())
            .map(|i| {
                let start = first + i * width;
                let marks: Vec<String> = (start..start + width).map(|n| format!("${n}")).collect();
                format!("({})", marks.join(", "))
            })
            .collect();
        (columns, values.join(", "))
    }

    /// Binds `rows` of `session`, written at `now`, in [`MessageRow::values_sql`]'s order.
    pub(crate) fn bind_all<'q>(
        mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
        rows: &'q [MessageRow],
        session: &'q str,
        now: i64,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
        let chained = rows.iter().any(|r| r.chain_key.is_some());
        let carried = rows.iter().any(|r| r.carrier_id.is_some());
        for row in rows {
            query = row.bind(query, session, now, carried, chained);
        }
        query
    }

    /// Binds this row of `session`, written at `now`, in [`MessageRow::values_sql`]'s order:
    /// its carrier id only when `carried`, its chain key only when `chained`.
    pub(crate) fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
        session: &'q str,
        now: i64,
        carried: bool,
        chained: bool,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
        let mut query = query
            .bind(session)
            .bind(self.position)
            .bind(&self.role)
            .bind(&self.content)
            .bind(&self.tool_calls)
            .bind(&self.tool_call_id)
            .bind(&self.name)
            .bind(&self.reasoning_content)
            .bind(&self.reasoning)
            .bind(&self.reasoning_details)
            .bind(&self.origin_provider)
            .bind(&self.origin_host)
            .bind(&self.origin_model)
            .bind(&self.extra)
            .bind(&self.key_order)
            .bind(now)
            .bind(&self.match_key);
        if carried {
            query = query.bind(&self.carrier_id);
        }
        if chained {
            query = query.bind(&self.chain_key);
        }
        query
    }

    /// Inserts this row of `session` ([`MessageRow::insert_all`] of one row).
    pub(crate) async fn insert(
        &self,
        conn: &mut sqlx::AnyConnection,
        session: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        Self::insert_all(std::slice::from_ref(self), conn, session, now).await
    }
}

/// The value of one key of a stored message, as the message deserializer is handed it.
enum Field<'r> {
    /// A column holding the key's JSON text (a carrier, `content`, `tool_calls`, an extra key's
    /// value): read by `serde_json` straight from the row's text.
    Json(&'r str),
    /// A column holding plain text (`role`, `tool_call_id`, `name`) or the `origin` the three
    /// origin columns make.
    Value(serde_json::Value),
}

/// A stored message's keys and values as a map, in the order the message's JSON would hold
/// them: what the one message deserializer reads, without a JSON document rebuilt around the
/// stored texts.
struct Fields<'r> {
    fields: std::vec::IntoIter<(std::borrow::Cow<'r, str>, Field<'r>)>,
    value: Option<Field<'r>>,
}

impl<'r> serde::de::MapAccess<'r> for Fields<'r> {
    type Error = serde_json::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'r>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.fields.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(serde::de::value::StrDeserializer::new(&key))
            .map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'r>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(Field::Json(text)) => {
                let mut de = serde_json::Deserializer::from_str(text);
                let value = seed.deserialize(&mut de)?;
                de.end()?;
                Ok(value)
            }
            Some(Field::Value(value)) => seed.deserialize(value),
            None => Err(serde::de::Error::custom("a value read before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// The members of the `extra` column's object, in order, each value's text borrowed.
struct ExtraMembers<'r>(Vec<(String, &'r serde_json::value::RawValue)>);

impl<'de> serde::Deserialize<'de> for ExtraMembers<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ExtraMembers<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(ExtraMembers(members))
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'r> MessageRow<&'r str> {
    /// The texts of a row read with [`message_columns!`], borrowed from it.
    pub(crate) fn from_sql(row: &'r crate::DbRow) -> Result<Self, StoreError> {
        Ok(MessageRow {
            position: row.try_get(0).db()?,
            role: row.try_get(1).db()?,
            content: row.try_get(2).db()?,
            tool_calls: row.try_get(3).db()?,
            tool_call_id: row.try_get(4).db()?,
            name: row.try_get(5).db()?,
            reasoning_content: row.try_get(6).db()?,
            reasoning: row.try_get(7).db()?,
            reasoning_details: row.try_get(8).db()?,
            origin_provider: row.try_get(9).db()?,
            origin_host: row.try_get(10).db()?,
            origin_model: row.try_get(11).db()?,
            extra: row.try_get(12).db()?,
            key_order: row.try_get(13).db()?,
            match_key: None,
            chain_key: None,
            carrier_id: None,
        })
    }

    /// The message: each stored text handed as the value of its key to the one message
    /// deserializer (so classification and validation are the same as on import), read from
    /// the row's own text — no JSON document is rebuilt around the texts and read again.
    pub(crate) fn to_message(&self) -> Result<Message, String> {
        use std::borrow::Cow;
        let text = |s: &str| Field::Value(serde_json::Value::String(s.to_owned()));
        let mut fields: Vec<(Cow<'r, str>, Field<'r>)> = Vec::with_capacity(8);
        fields.push((Cow::Borrowed("role"), text(self.role)));
        for (key, value) in [
            ("content", self.content),
            ("reasoning_content", self.reasoning_content),
            ("reasoning", self.reasoning),
            ("reasoning_details", self.reasoning_details),
            ("tool_calls", self.tool_calls),
        ] {
            if let Some(raw) = value {
                fields.push((Cow::Borrowed(key), Field::Json(raw)));
            }
        }
        for (key, value) in [("tool_call_id", self.tool_call_id), ("name", self.name)] {
            if let Some(value) = value {
                fields.push((Cow::Borrowed(key), text(value)));
            }
        }
        if let Some(extra) = self.extra {
            let members: ExtraMembers<'r> =
                serde_json::from_str(extra).map_err(|e| format!("extra is not an object: {e}"))?;
            for (key, raw) in members.0 {
                fields.push((Cow::Owned(key), Field::Json(raw.get())));
            }
        }
        if let (Some(provider), Some(host), Some(model)) =
            (self.origin_provider, self.origin_host, self.origin_model)
        {
            let origin = serde_json::json!({"provider": provider, "host": host, "model": model});
            fields.push((Cow::Borrowed("origin"), Field::Value(origin)));
        }
        let fields = Fields {
            fields: fields.into_iter(),
            value: None,
        };
        let mut message = <Message as serde::Deserialize>::deserialize(
            serde::de::value::MapAccessDeserializer::new(fields),
        )
        .map_err(|e| e.to_string())?;
        // The keys above are in canonical order; the stored order comes back from its column.
        message.key_order = self
            .key_order
            .map(hermes_core::message::KeyOrder::parse)
            .transpose()?;
        Ok(message)
    }
}

/// The session columns read back (a macro so queries stay `&'static str`).
macro_rules! session_columns {
    () => {
        "id, title, parent_id, provider, model, base_url, base_url_confirmed, model_config, created_at, \
         updated_at, message_count, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, \
         cache_write_tokens, revision, tenant, partition_key, fork_revision, fork_last, fork_count"
    };
}
