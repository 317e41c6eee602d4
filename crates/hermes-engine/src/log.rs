//! The store adapter: the driver's [`SessionLog`] over a stored session, one transaction per
//! call, errors typed by the store. A new session is created together with its first step, so a
//! first turn that fails leaves no empty session behind; verdicts learned before that are
//! written with it.

use std::sync::Mutex;

use hermes_core::driver::{DriverEvent, LogError, SessionLog};
use hermes_core::{
    CHAT_WIRE, Carrier, CarrierSet, Message, RouteTarget, Usage, Verdicts, WireVerdicts,
};
use hermes_core::{VERDICTS_KEY, WIRE_VERDICTS_KEY};
use hermes_store::{NewSession, Store, Tip};

use crate::fleet::FleetTurn;

/// The session a log writes to: stored (appended to under a lease), stored and appended to
/// only at the tip it was read at (compare-and-append: a session that moved on meanwhile gets a
/// branch instead), or still to be created with the first step.
enum Session {
    Stored(String),
    AtTip(Tip),
    New {
        new: Box<NewSession>,
        verdicts: Verdicts,
        wire_verdicts: WireVerdicts,
        /// After creating it, append at its tip (compare-and-append) rather than plainly.
        compare: bool,
    },
}

/// Stores a driven session as the driver goes.
pub(crate) struct StoreLog<'a> {
    store: &'a Store,
    session: Mutex<Session>,
    /// Where the id of the session the steps went to is written as soon as it changes (a
    /// session created here, or a branch compare-and-append made), so a front end that drops
    /// the turn mid-way (Ctrl-C) still knows where its steps are.
    created: Option<&'a Mutex<Option<String>>>,
    /// The turn's fleet verdicts: merged into what the driver is handed back, told what was
    /// accepted.
    fleet: Option<&'a FleetTurn>,
    /// Carriers a gateway client sent itself (unverified, docs/spec.md §10): a refusal of one is
    /// this session's verdict only, never taught to the fleet.
    session_only: CarrierSet,
    /// Messages stored together with the first step, before it: what a gateway's client sent
    /// that precedes the turn's input and is not stored yet (a new conversation's history, or
    /// the tail after a stored prefix).
    preamble: Mutex<Vec<Message>>,
    /// Told each fleet verdict learned ([`DriverEvent::FleetVerdict`]).
    notify: Option<&'a (dyn Fn(&DriverEvent) + Send + Sync)>,
    /// The request's idempotency claim: each step's transaction turns it into the receipt of
    /// the turn so far ([`crate::receipt`]).
    receipt: Option<&'a crate::receipt::Pending>,
}

fn poisoned<T>(_: T) -> LogError {
    "the session log's lock was poisoned".into()
}

impl<'a> StoreLog<'a> {
    /// A log over the stored session `id`.
    pub(crate) fn stored(store: &'a Store, id: &str) -> Self {
        StoreLog {
            store,
            session: Mutex::new(Session::Stored(id.to_owned())),
            created: None,
            fleet: None,
            session_only: CarrierSet::NONE,
            preamble: Mutex::default(),
            notify: None,
            receipt: None,
        }
    }

    /// A log over the stored session `tip` names, appending only at that tip: a step that
    /// finds the session moved on is stored as a branch of it (docs/spec.md §10), whose id is
    /// written to `landed`, and the turn goes on there.
    pub(crate) fn at_tip(store: &'a Store, tip: Tip, landed: &'a Mutex<Option<String>>) -> Self {
        StoreLog {
            store,
            session: Mutex::new(Session::AtTip(tip)),
            created: Some(landed),
            fleet: None,
            session_only: CarrierSet::NONE,
            preamble: Mutex::default(),
            notify: None,
            receipt: None,
        }
    }

    /// A log that creates `new` with the first step it stores, and writes its id to `created`;
    /// later steps are appended plainly, or with `compare` at the tip the first left.
    pub(crate) fn new_session(
        store: &'a Store,
        new: Box<NewSession>,
        created: &'a Mutex<Option<String>>,
        compare: bool,
    ) -> Self {
        StoreLog {
            store,
            session: Mutex::new(Session::New {
                new,
                verdicts: Verdicts::default(),
                wire_verdicts: WireVerdicts::default(),
                compare,
            }),
            created: Some(created),
            fleet: None,
            session_only: CarrierSet::NONE,
            preamble: Mutex::default(),
            notify: None,
            receipt: None,
        }
    }

    /// The same log, turning the request's idempotency claim into its receipt with each step.
    pub(crate) fn with_receipt(mut self, receipt: Option<&'a crate::receipt::Pending>) -> Self {
        self.receipt = receipt;
        self
    }

    /// Writes where the steps are now.
    fn landed(&self, id: &str) -> Result<(), LogError> {
        if let Some(created) = self.created {
            *created.lock().map_err(poisoned)? = Some(id.to_owned());
        }
        Ok(())
    }

    /// The same log, storing `preamble` together with (before) the first step.
    pub(crate) fn with_preamble(self, preamble: Vec<Message>) -> Self {
        if let Ok(mut slot) = self.preamble.lock() {
            *slot = preamble;
        }
        self
    }

    /// The same log, merging and re-probing the turn's fleet verdicts.
    pub(crate) fn with_fleet(mut self, fleet: &'a FleetTurn) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// The same log, keeping refusals of `carriers` (a client's unverified ones) to the
    /// session.
    /// The same log, telling `notify` each fleet verdict it learns.
    pub(crate) fn notifying(mut self, notify: &'a (dyn Fn(&DriverEvent) + Send + Sync)) -> Self {
        self.notify = Some(notify);
        self
    }

    pub(crate) fn session_only(mut self, carriers: CarrierSet) -> Self {
        self.session_only = carriers;
        self
    }

    /// Learns a refusal for the whole store (every session, every process), except of the
    /// fields the client sent unverified.
    async fn learn_for_fleet(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<(), LogError> {
        let (kept, unverified): (Vec<&str>, Vec<&str>) = fields
            .iter()
            .partition(|f| Carrier::parse(f).is_none_or(|c| !self.session_only.contains(c)));
        if !unverified.is_empty() {
            tracing::info!(
                ?unverified,
                "a refusal of carriers the client sent itself stays with its session"
            );
        }
        if kept.is_empty() {
            return Ok(());
        }
        let fields = kept.as_slice();
        self.store
            .learn_fleet_verdicts(wire, target, fields)
            .await?;
        if let Some(fleet) = self.fleet {
            fleet.refused(fields);
        }
        if let Some(notify) = self.notify {
            notify(&DriverEvent::FleetVerdict {
                wire: wire.to_owned(),
                fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            });
        }
        Ok(())
    }

    /// Stores `messages` where the log writes now (see [`Session`]), with `extras` in the same
    /// transaction.
    async fn append_now(
        &self,
        messages: &[Message],
        extras: &hermes_store::StepExtras,
    ) -> Result<(), LogError> {
        enum Pending {
            Plain(String),
            Compare(Tip),
            Create(Box<NewSession>, bool),
        }
        let pending = {
            let session = self.session.lock().map_err(poisoned)?;
            match &*session {
                Session::Stored(id) => Pending::Plain(id.clone()),
                Session::AtTip(tip) => Pending::Compare(tip.clone()),
                Session::New {
                    new,
                    verdicts,
                    wire_verdicts,
                    compare,
                } => {
                    let mut new = (**new).clone();
                    if !verdicts.0.is_empty() {
                        new.model_config
                            .insert(VERDICTS_KEY.to_owned(), serde_json::to_value(verdicts)?);
                    }
                    if !wire_verdicts.0.is_empty() {
                        new.model_config.insert(
                            WIRE_VERDICTS_KEY.to_owned(),
                            serde_json::to_value(wire_verdicts)?,
                        );
                    }
                    Pending::Create(Box::new(new), *compare)
                }
            }
        };
        let next = match pending {
            Pending::Plain(id) => {
                self.store.append_step(&id, messages, extras).await?;
                return Ok(());
            }
            Pending::Compare(tip) => {
                let appended = self
                    .store
                    .compare_and_append_step(&tip, messages, extras)
                    .await?;
                if appended.branched() {
                    tracing::info!(
                        parent = tip.session(),
                        branch = appended.session(),
                        "the session moved on since it was read: this turn continues on a branch"
                    );
                    self.landed(appended.session())?;
                }
                Session::AtTip(appended.tip().clone())
            }
            Pending::Create(new, compare) => {
                let tip = self.store.create_at_tip(&new, messages, extras).await?;
                self.landed(tip.session())?;
                if compare {
                    Session::AtTip(tip)
                } else {
                    Session::Stored(tip.session().to_owned())
                }
            }
        };
        *self.session.lock().map_err(poisoned)? = next;
        Ok(())
    }

    fn stored_id(&self) -> Result<Option<String>, LogError> {
        Ok(match &*self.session.lock().map_err(poisoned)? {
            Session::Stored(id) => Some(id.clone()),
            Session::AtTip(tip) => Some(tip.session().to_owned()),
            Session::New { .. } => None,
        })
    }

    /// `record` on the verdicts (chat, wire) kept for a session not yet created, which the
    /// first step stores with it; an error when another step created it meanwhile.
    fn record_pending<T>(
        &self,
        record: impl FnOnce(&mut Verdicts, &mut WireVerdicts) -> T,
    ) -> Result<T, LogError> {
        match &mut *self.session.lock().map_err(poisoned)? {
            Session::New {
                verdicts,
                wire_verdicts,
                ..
            } => Ok(record(verdicts, wire_verdicts)),
            Session::Stored(_) | Session::AtTip(_) => {
                Err("the session was created meanwhile; retry".into())
            }
        }
    }
}

impl StoreLog<'_> {
    /// Stores `messages` (after the preamble, with the first step) with `extras`.
    async fn store(
        &self,
        messages: &[Message],
        extras: &hermes_store::StepExtras,
    ) -> Result<(), LogError> {
        let preamble = std::mem::take(&mut *self.preamble.lock().map_err(poisoned)?);
        if preamble.is_empty() {
            return self.append_now(messages, extras).await;
        }
        let mut all = preamble.clone();
        all.extend_from_slice(messages);
        let result = self.append_now(&all, extras).await;
        if result.is_err() {
            // Not stored: the next step carries it again.
            *self.preamble.lock().map_err(poisoned)? = preamble;
        }
        result
    }
}

#[async_trait::async_trait]
impl SessionLog for StoreLog<'_> {
    async fn append(&self, messages: &[Message]) -> Result<(), LogError> {
        self.store(messages, &hermes_store::StepExtras::default())
            .await
    }

    /// The step, its usage and the request's receipt in one transaction: a stored step never
    /// lacks its usage, and a retry of the request finds its answer once the step is stored.
    async fn commit(&self, step: &hermes_core::driver::Step<'_>) -> Result<(), LogError> {
        let mut extras = hermes_store::StepExtras::default().usage(step.usage.copied());
        if let Some(receipt) = self.receipt {
            let (key, completion, kept) = receipt.with_step(step)?;
            extras = extras.receipt(key, completion, kept);
        }
        self.store(step.messages, &extras).await
    }

    async fn record_verdict(
        &self,
        target: &RouteTarget,
        carriers: CarrierSet,
    ) -> Result<Verdicts, LogError> {
        let fields: Vec<&str> = carriers.iter().map(|c| c.field()).collect();
        self.learn_for_fleet(CHAT_WIRE, target, &fields).await?;
        let mut verdicts = match self.stored_id()? {
            Some(id) => self.store.record_verdict(&id, target, carriers).await?,
            // No session yet: kept until the first step creates it.
            None => self.record_pending(|verdicts, _| {
                verdicts.record(target, carriers);
                verdicts.clone()
            })?,
        };
        if let Some(fleet) = self.fleet {
            fleet.merge_chat(&mut verdicts);
        }
        Ok(verdicts)
    }

    async fn record_wire_verdict(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<WireVerdicts, LogError> {
        self.learn_for_fleet(wire, target, fields).await?;
        let mut verdicts = match self.stored_id()? {
            Some(id) => {
                self.store
                    .record_wire_verdict(&id, wire, target, fields)
                    .await?
            }
            None => self.record_pending(|_, wire_verdicts| {
                wire_verdicts.record(wire, target, fields);
                wire_verdicts.clone()
            })?,
        };
        if let Some(fleet) = self.fleet {
            fleet.merge_wire(&mut verdicts);
        }
        Ok(verdicts)
    }

    async fn accepted(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&'static str],
    ) -> Result<(), LogError> {
        if let Some(fleet) = self.fleet {
            fleet.accepted(self.store, wire, target, fields).await?;
        }
        Ok(())
    }

    async fn left_out(&self, carriers: &[String]) -> Result<(), LogError> {
        let session = self.stored_id()?;
        Ok(self
            .store
            .mark_left_out(session.as_deref(), carriers)
            .await?)
    }

    async fn add_usage(&self, usage: &Usage) -> Result<(), LogError> {
        match self.stored_id()? {
            Some(id) => Ok(self.store.add_usage(&id, usage).await?),
            // Usage follows a stored step; without one there is nothing to count against.
            None => Ok(()),
        }
    }
}
