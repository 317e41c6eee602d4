//! The store adapter: the driver's [`SessionLog`] over a stored session, one transaction per
//! call, errors typed by the store. A new session is created together with its first step, so a
//! first turn that fails leaves no empty session behind; verdicts learned before that are
//! written with it.

use std::sync::Mutex;

use hermes_core::driver::{LogError, SessionLog};
use hermes_core::verdict::{VERDICTS_KEY, WIRE_VERDICTS_KEY};
use hermes_core::{CHAT_WIRE, CarrierSet, Message, RouteTarget, Usage, Verdicts, WireVerdicts};
use hermes_store::{NewSession, Store};

use crate::fleet::FleetTurn;

/// The session a log writes to: stored, or still to be created with the first step.
enum Session {
    Stored(String),
    New {
        new: Box<NewSession>,
        verdicts: Verdicts,
        wire_verdicts: WireVerdicts,
    },
}

/// Stores a driven session as the driver goes.
pub(crate) struct StoreLog<'a> {
    store: &'a Store,
    session: Mutex<Session>,
    /// Where the id of a session created here is written at once, so a front end that drops
    /// the turn mid-way (Ctrl-C) still knows the session exists.
    created: Option<&'a Mutex<Option<String>>>,
    /// The turn's fleet verdicts: merged into what the driver is handed back, told what was
    /// accepted.
    fleet: Option<&'a FleetTurn>,
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
        }
    }

    /// A log that creates `new` with the first step it stores, and writes its id to `created`.
    pub(crate) fn new_session(
        store: &'a Store,
        new: NewSession,
        created: &'a Mutex<Option<String>>,
    ) -> Self {
        StoreLog {
            store,
            session: Mutex::new(Session::New {
                new: Box::new(new),
                verdicts: Verdicts::default(),
                wire_verdicts: WireVerdicts::default(),
            }),
            created: Some(created),
            fleet: None,
        }
    }

    /// The same log, merging and re-probing the turn's fleet verdicts.
    pub(crate) fn with_fleet(mut self, fleet: &'a FleetTurn) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Learns a refusal for the whole store (every session, every process).
    async fn learn_for_fleet(
        &self,
        wire: &str,
        target: &RouteTarget,
        fields: &[&str],
    ) -> Result<(), LogError> {
        self.store
            .learn_fleet_verdicts(wire, target, fields)
            .await?;
        if let Some(fleet) = self.fleet {
            fleet.refused(fields);
        }
        Ok(())
    }

    fn stored_id(&self) -> Result<Option<String>, LogError> {
        Ok(match &*self.session.lock().map_err(poisoned)? {
            Session::Stored(id) => Some(id.clone()),
            Session::New { .. } => None,
        })
    }
}

#[async_trait::async_trait]
impl SessionLog for StoreLog<'_> {
    async fn append(&self, messages: &[Message]) -> Result<(), LogError> {
        let pending = {
            let session = self.session.lock().map_err(poisoned)?;
            match &*session {
                Session::Stored(id) => Err(id.clone()),
                Session::New {
                    new,
                    verdicts,
                    wire_verdicts,
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
                    Ok(new)
                }
            }
        };
        match pending {
            Err(id) => Ok(self.store.append(&id, messages).await?),
            Ok(new) => {
                let id = self.store.create_with_messages(&new, messages).await?;
                if let Some(created) = self.created {
                    *created.lock().map_err(poisoned)? = Some(id.clone());
                }
                *self.session.lock().map_err(poisoned)? = Session::Stored(id);
                Ok(())
            }
        }
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
            None => match &mut *self.session.lock().map_err(poisoned)? {
                Session::New { verdicts, .. } => {
                    verdicts.record(target, carriers);
                    verdicts.clone()
                }
                Session::Stored(_) => return Err("the session was created meanwhile; retry".into()),
            },
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
            None => match &mut *self.session.lock().map_err(poisoned)? {
                Session::New { wire_verdicts, .. } => {
                    wire_verdicts.record(wire, target, fields);
                    wire_verdicts.clone()
                }
                Session::Stored(_) => return Err("the session was created meanwhile; retry".into()),
            },
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

    async fn add_usage(&self, usage: &Usage) -> Result<(), LogError> {
        match self.stored_id()? {
            Some(id) => Ok(self.store.add_usage(&id, usage).await?),
            // Usage follows a stored step; without one there is nothing to count against.
            None => Ok(()),
        }
    }
}
