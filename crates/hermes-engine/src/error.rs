//! Why an engine operation failed, typed so a front end can choose its exit code and wording.

/// Why an engine operation failed. Everything stored before the failure stays stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The way the command was called is wrong (a missing or unknown choice): exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A provider name nothing knows, with no base URL to go to (exit code 2); the message
    /// suggests the nearest known name. The front end may add how to list them.
    #[error("{0}")]
    UnknownProvider(String),
    /// A failure the user can act on (a missing key, an untrusted URL): exit code 1.
    #[error("{0}")]
    Failed(String),
    /// A key would go to a base URL the user has not confirmed (exit code 1). The message says
    /// what was refused; the front end adds how to confirm it on its own command line.
    #[error("{}", refusal.message(base_url, key_var))]
    KeyRefused {
        /// Why the key may not go there.
        refusal: KeyRefusal,
        /// The base URL the key would have gone to.
        base_url: String,
        /// The variable that holds the key.
        key_var: String,
    },
    /// The provider's wire cannot be used by this build (the same error in `chat` and
    /// `preview`); every built-in provider's wire is built today.
    #[error("{0}")]
    Unsupported(String),
    /// Another holder (another process, or another request of a server) is driving the
    /// session and did not let go within the wait (exit code 1); nothing was stored. A server
    /// maps it to "conflict, try again" without reading the text.
    #[error(
        "session {session} is in use by another process ({holder}); nothing was stored — try again when it finishes"
    )]
    Busy {
        /// The session asked for.
        session: String,
        /// Who holds it (`host:pid:nonce:place`).
        holder: String,
    },
    /// Another request with the same idempotency key (the client's `Idempotency-Key`, or the
    /// same body) is still running past the wait; nothing was sent upstream for this one. A
    /// server maps it to "conflict, try again", as [`EngineError::Busy`].
    #[error(
        "a request with the same {key} is still running; nothing was sent upstream for this one — try again when it finishes"
    )]
    InFlight {
        /// What the two requests share (`Idempotency-Key`, or "request body").
        key: String,
    },
    /// A setting nothing supplied (exit code 2). The text names what is missing; how to give
    /// it is the front end's to add (the CLI names its flag).
    #[error("{}", setting.message(provider.as_deref()))]
    Missing {
        /// What is missing.
        setting: Setting,
        /// The provider it is missing for, when one is settled.
        provider: Option<String>,
    },
    /// The stored session asked for does not exist.
    #[error("no session `{session}`")]
    NotFound {
        /// The id asked for.
        session: String,
    },
    /// The credentials are missing, or the provider refused them (401/403): `var` names where
    /// the key or token comes from (none for AWS credentials), `status` the refusal's.
    #[error("{message}")]
    Credentials {
        /// The provider.
        provider: String,
        /// The variable holding the key or token; none for AWS credentials.
        var: Option<String>,
        /// The refusal's HTTP status; none when the credentials are missing.
        status: Option<u16>,
        /// One line saying what is wrong and how to fix it (never the secret).
        message: String,
    },
    /// A bounded wait ran out (the engine's own: the turn, or the wait for a busy session's
    /// holder; a provider's connect, first-byte and idle limits arrive as transport errors and
    /// are classified by [`EngineError::kind`]).
    #[error("{message}")]
    Timeout {
        /// The limit that ran out.
        wait: hermes_core::Wait,
        /// What ran out and what was kept.
        message: String,
    },
    /// A request parameter cannot be used as given (exit code 2): `parameter` names it.
    #[error("invalid {parameter}: {why}")]
    InvalidParameter {
        /// The parameter (`messages`, `temperature`, …).
        parameter: String,
        /// Why.
        why: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(hermes_store::StoreError),
    /// The turn failed.
    #[error(transparent)]
    Driver(#[from] hermes_core::driver::DriverError),
    /// The transport could not be built or a request failed.
    #[error(transparent)]
    Transport(#[from] hermes_core::TransportError),
    /// The in-process simulator could not start.
    #[error("cannot start the simulator: {0}")]
    Sim(String),
    /// A stored session holds something unreadable.
    #[error("session `{session}`: {message}")]
    Corrupt {
        /// Session id.
        session: String,
        /// What is wrong.
        message: String,
    },
}

impl From<hermes_store::StoreError> for EngineError {
    fn from(error: hermes_store::StoreError) -> Self {
        match error {
            hermes_store::StoreError::NotFound(session) => EngineError::NotFound { session },
            other => EngineError::Store(other),
        }
    }
}

/// What is missing for an [`EngineError::Missing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// No provider was chosen.
    Provider,
    /// No model was chosen.
    Model,
    /// The provider has no default base URL and none was given.
    BaseUrl,
    /// The provider needs the URL of the user's own resource (Azure AI Foundry); the example
    /// is its shape.
    ResourceUrl {
        /// The URL's shape, e.g. `https://RESOURCE.services.ai.azure.com/anthropic`.
        example: &'static str,
    },
}

impl Setting {
    /// What is missing, in words naming no front end's flag.
    pub fn message(self, provider: Option<&str>) -> String {
        let of = provider
            .map(|p| format!(" for provider `{p}`"))
            .unwrap_or_default();
        match self {
            Setting::Provider => "no provider".to_owned(),
            Setting::Model => format!("no model{of}"),
            Setting::BaseUrl => format!("no base URL{of}"),
            Setting::ResourceUrl { .. } => format!(
                "provider `{}` needs your resource's URL",
                provider.unwrap_or_default()
            ),
        }
    }
}

/// What kind of failure an [`EngineError`] is, with the data a server needs to answer it —
/// matched without reading any text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind<'a> {
    /// The call was wrong (a missing or unknown choice): a client error.
    Usage,
    /// A parameter cannot be used as given.
    InvalidParameter {
        /// Which.
        parameter: &'a str,
    },
    /// The stored session does not exist.
    NotFound {
        /// The id asked for.
        session: &'a str,
    },
    /// Another holder is driving the session: try again.
    Busy,
    /// The credentials are missing or were refused.
    Credentials {
        /// The variable they come from (none for AWS credentials).
        var: Option<&'a str>,
    },
    /// The provider refused the request (an HTTP error status, or an error reported after
    /// 200): its status and body.
    Upstream {
        /// The provider's status (none for an error reported mid-reply).
        status: Option<u16>,
        /// Its body.
        body: &'a str,
    },
    /// A bounded wait ran out.
    Timeout {
        /// Which limit.
        wait: hermes_core::Wait,
    },
    /// The provider could not be reached or its reply broke off.
    Unavailable,
    /// The store could not be reached or went away mid-use
    /// ([`StoreError::is_unavailable`](hermes_store::StoreError::is_unavailable): the database
    /// stopped, restarting or cut off, no connection within the pool's wait). Nothing of the
    /// failed operation was stored (every write is one transaction); the same engine serves
    /// again once the database is back. A server answers it "unavailable, retry".
    StoreUnavailable,
    /// Anything else (the store, a corrupt session, …).
    Failed,
}

impl EngineError {
    /// True for a usage error (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            EngineError::Usage(_)
                | EngineError::UnknownProvider(_)
                | EngineError::Missing { .. }
                | EngineError::InvalidParameter { .. }
        )
    }

    /// The kind of failure, with its data (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind<'_> {
        use hermes_core::driver::DriverError;
        match self {
            EngineError::Usage(_)
            | EngineError::UnknownProvider(_)
            | EngineError::Missing { .. } => ErrorKind::Usage,
            EngineError::InvalidParameter { parameter, .. } => {
                ErrorKind::InvalidParameter { parameter }
            }
            EngineError::NotFound { session } => ErrorKind::NotFound { session },
            EngineError::Busy { .. } | EngineError::InFlight { .. } => ErrorKind::Busy,
            EngineError::Credentials { .. } | EngineError::KeyRefused { .. } => {
                ErrorKind::Credentials { var: var_of(self) }
            }
            EngineError::Timeout { wait, .. } => ErrorKind::Timeout { wait: *wait },
            EngineError::Driver(DriverError::Input(_)) => ErrorKind::InvalidParameter {
                parameter: "messages",
            },
            EngineError::Driver(error) => match error.transport() {
                Some(error) => transport_kind(error),
                None => self.store_kind(),
            },
            EngineError::Transport(error) => transport_kind(error),
            _ => self.store_kind(),
        }
    }

    /// [`ErrorKind::StoreUnavailable`] when the store's error underneath (the engine's own
    /// store call, or the driver's when it could not store a step) says the database is not
    /// there, else [`ErrorKind::Failed`].
    fn store_kind(&self) -> ErrorKind<'_> {
        let store = match self {
            EngineError::Store(e) => Some(e),
            EngineError::Driver(hermes_core::driver::DriverError::Log(e)) => {
                e.downcast_ref::<hermes_store::StoreError>()
            }
            _ => None,
        };
        if store.is_some_and(hermes_store::StoreError::is_unavailable) {
            ErrorKind::StoreUnavailable
        } else {
            ErrorKind::Failed
        }
    }
}

/// The variable of a credentials error.
fn var_of(error: &EngineError) -> Option<&str> {
    match error {
        EngineError::Credentials { var, .. } => var.as_deref(),
        EngineError::KeyRefused { key_var, .. } => Some(key_var),
        _ => None,
    }
}

fn transport_kind(error: &hermes_core::TransportError) -> ErrorKind<'_> {
    use hermes_core::TransportError;
    if let Some(wait) = error.wait() {
        return ErrorKind::Timeout { wait };
    }
    match error {
        TransportError::Unsupported { parameter, .. } => ErrorKind::InvalidParameter { parameter },
        TransportError::Http { status, body, .. } => ErrorKind::Upstream {
            status: Some(*status),
            body,
        },
        TransportError::AfterOk(body) => ErrorKind::Upstream { status: None, body },
        _ => ErrorKind::Unavailable,
    }
}

/// Why a key may not go to a base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefusal {
    /// The URL came with a stored or imported session, not from the user.
    NotNamed,
    /// Plain http to a host that is neither loopback nor private.
    PlainHttp,
}

impl KeyRefusal {
    /// What was refused, in the user's words; how to say yes depends on the front end (the
    /// CLI names the command line that confirms it).
    pub fn message(&self, base_url: &str, key_var: &str) -> String {
        match self {
            KeyRefusal::NotNamed => format!(
                "the stored session's base URL {base_url} did not come from you (it was imported or written elsewhere), so hermes will not send your {key_var} there"
            ),
            KeyRefusal::PlainHttp => format!(
                "{base_url} is plain http to a host that is neither loopback nor private, so hermes will not send your {key_var} over it; use https, or allow it (allow_insecure_http = true in config.toml)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use hermes_core::driver::DriverError;
    use hermes_core::{TransportError, Wait};

    use super::{EngineError, ErrorKind, Setting};

    #[test]
    fn a_server_reads_each_failure_kind_without_reading_text() {
        let http = |status| {
            EngineError::Driver(DriverError::Transport(TransportError::Http {
                status,
                body: "{\"error\":\"overloaded\"}".into(),
                retry_after: None,
            }))
        };
        assert_eq!(
            http(529).kind(),
            ErrorKind::Upstream {
                status: Some(529),
                body: "{\"error\":\"overloaded\"}"
            }
        );
        let stalled = EngineError::Driver(DriverError::AfterOutput(TransportError::Stalled(
            "silent".into(),
        )));
        assert_eq!(stalled.kind(), ErrorKind::Timeout { wait: Wait::Idle });
        let first_byte = EngineError::Transport(TransportError::Timeout {
            wait: Wait::FirstByte,
            detail: "no response".into(),
        });
        assert_eq!(
            first_byte.kind(),
            ErrorKind::Timeout {
                wait: Wait::FirstByte
            }
        );
        let missing: EngineError = hermes_store::StoreError::NotFound("s1".into()).into();
        assert_eq!(missing.kind(), ErrorKind::NotFound { session: "s1" });
        assert_eq!(missing.to_string(), "no session `s1`");
        let key = EngineError::Credentials {
            provider: "deepseek".into(),
            var: Some("DEEPSEEK_API_KEY".into()),
            status: Some(401),
            message: "refused".into(),
        };
        assert_eq!(
            key.kind(),
            ErrorKind::Credentials {
                var: Some("DEEPSEEK_API_KEY")
            }
        );
        let input = EngineError::Driver(DriverError::Input("tool result `c9`".into()));
        assert_eq!(
            input.kind(),
            ErrorKind::InvalidParameter {
                parameter: "messages"
            }
        );
        let busy = EngineError::Busy {
            session: "s1".into(),
            holder: "h:1".into(),
        };
        assert_eq!(busy.kind(), ErrorKind::Busy);
    }

    #[test]
    fn a_missing_setting_names_no_front_end_flag() {
        let texts: Vec<String> = [
            (Setting::Provider, None),
            (Setting::Model, None),
            (Setting::BaseUrl, Some("custom")),
            (
                Setting::ResourceUrl {
                    example: "https://x",
                },
                Some("foundry-anthropic"),
            ),
        ]
        .into_iter()
        .map(|(setting, provider)| {
            let error = EngineError::Missing {
                setting,
                provider: provider.map(str::to_owned),
            };
            assert!(error.is_usage());
            assert_eq!(error.kind(), ErrorKind::Usage);
            error.to_string()
        })
        .collect();
        assert_eq!(
            texts,
            [
                "no provider",
                "no model",
                "no base URL for provider `custom`",
                "provider `foundry-anthropic` needs your resource's URL"
            ]
        );
        assert!(texts.iter().all(|t| !t.contains("--")));
    }
}
