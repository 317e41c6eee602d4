//! Carriers left out for good (docs/spec.md §5a 3, table `left_out_carriers`): once a request of a
//! conversation left a stored turn's carriers out, no later request sends them again, on any
//! replica. A turn is known by its carrier id ([`hermes_core::left_out::carrier_id`], a digest
//! of its first carrier item as stored), which is the same wherever the turn is read: in the
//! session that stored it and in every branch that shares it by reference. So a branch keeps its
//! parent's marks (and a mark made on a branch holds for the parent's copy of the turn too, as
//! the provider, which remembers blocks rather than sessions, holds it).

use std::collections::BTreeSet;

use sqlx::Row as _;

use crate::{DbResult as _, Store, StoreError, now_ms};

/// Carrier ids looked up per query.
const IDS_PER_QUERY: usize = 256;

/// One mark: a carrier left out, where and when first.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeftOut {
    /// The carrier id ([`hermes_core::left_out::carrier_id`]).
    pub carrier: String,
    /// The session whose request left it out first (`None`: not stored yet then).
    pub session: Option<String>,
    /// When, in milliseconds since the epoch.
    pub marked_at: i64,
}

impl Store {
    /// Records that a request of `session` (`None` when its session is not stored yet) left
    /// out the carriers `carriers` names, for good; a carrier marked before keeps its first
    /// mark. One statement per carrier (each mark stands on its own: a mark written before a
    /// failure stays, which only ever leaves out more).
    pub async fn mark_left_out(
        &self,
        session: Option<&str>,
        carriers: &[String],
    ) -> Result<(), StoreError> {
        if carriers.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        for carrier in carriers {
            self.put_left_out(&LeftOut {
                carrier: carrier.clone(),
                session: session.map(str::to_owned),
                marked_at: now,
            })
            .await?;
        }
        Ok(())
    }

    /// Which of `carriers` a request left out for good ([`Store::mark_left_out`]).
    pub async fn left_out_among(
        &self,
        carriers: &[String],
    ) -> Result<BTreeSet<String>, StoreError> {
        let mut found = BTreeSet::new();
        for chunk in carriers.chunks(IDS_PER_QUERY) {
            let placeholders: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT carrier FROM left_out_carriers WHERE carrier IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for carrier in chunk {
                query = query.bind(carrier.as_str());
            }
            for row in query.fetch_all(&self.pool).await.db()? {
                found.insert(row.try_get::<String, _>("carrier").db()?);
            }
        }
        Ok(found)
    }

    /// Every mark, oldest first (a store copy carries them over).
    pub async fn left_out_marks(&self) -> Result<Vec<LeftOut>, StoreError> {
        let rows = sqlx::query(
            "SELECT carrier, session_id, marked_at FROM left_out_carriers ORDER BY marked_at, carrier",
        )
        .fetch_all(&self.pool)
        .await
        .db()?;
        rows.iter()
            .map(|r| {
                Ok(LeftOut {
                    carrier: r.try_get("carrier").db()?,
                    session: r.try_get("session_id").db()?,
                    marked_at: r.try_get("marked_at").db()?,
                })
            })
            .collect()
    }

    /// Puts `mark` into this store as it is, unless the carrier is marked already.
    pub(crate) async fn put_left_out(&self, mark: &LeftOut) -> Result<bool, StoreError> {
        let done = execute!(
            &self.writes,
            "INSERT INTO left_out_carriers (carrier, session_id, marked_at) VALUES ($1, $2, $3) \
             ON CONFLICT (carrier) DO NOTHING",
            [
                mark.carrier.as_str(),
                mark.session.as_deref(),
                mark.marked_at
            ]
        )?;
        Ok(done.rows_affected() > 0)
    }
}
