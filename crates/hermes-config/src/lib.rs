//! hermes-config: what every hermes front end reads before its first request — the home folder
//! (`$HERMES_HOME`), `config.toml`, the secrets to keep out of tool output, API keys and the AWS
//! credential chain from the environment, and where the sessions' store lives — turned into the
//! engine's [`hermes_engine::Settings`] and an opened store by one call, [`Setup::open`], so the
//! `hermes` command line and any server binary read the same configuration the same way.
//!
//! It never prints, reads argv or installs a tracing subscriber; its errors ([`ConfigError`])
//! name the file and line, the key or the environment variable, never a secret's value.

mod aws;
mod config;
mod error;
mod home;
mod secrets;
mod setup;

pub use aws::{AwsEnv, region};
pub use config::{
    BedrockSection, CompactionSection, Config, LimitsSection, ProviderConfig, ServeSection,
    StoreSection, TenantSection, VerdictsSection, VertexSection, load, parse, path,
};
pub use error::ConfigError;
pub use home::{database_location, hermes_home, open_local_store, open_store_in, private_files};
pub use secrets::{MIN_SECRET_LEN, REDACTED, Secrets, gather, key_lookup};
pub use setup::{Opened, Setup};
