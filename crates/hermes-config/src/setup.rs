//! The one entry point: the home folder, its config.toml and this process's secrets, turned into
//! the engine's process-wide [`Settings`] and an opened store.

use std::path::PathBuf;
use std::sync::Arc;

use hermes_engine::providers::Wires;
use hermes_engine::store::{Location, Store};
use hermes_engine::{Defaults, Settings};

use crate::config::{self, Config};
use crate::error::ConfigError;
use crate::secrets::{self, Secrets};

/// What a front end reads before its first request: `$HERMES_HOME`, its `config.toml` and the
/// secrets this process holds. `Debug` shows the secrets' count only.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The data directory (`$HERMES_HOME`, default `~/.hermes`).
    pub home: PathBuf,
    /// Its `config.toml` (the defaults when there is no file).
    pub config: Config,
    /// The secrets to keep out of tool output; clones share them, so AWS credentials fetched
    /// later by [`Setup::settings`]'s source are redacted wherever this set is used.
    pub secrets: Secrets,
}

/// An opened store and the settings every request of the process runs with.
pub struct Opened {
    /// The sessions' database (see [`Setup::open_store`]).
    pub store: Store,
    /// A notice about which database file was chosen in the home, to show once.
    pub notice: Option<String>,
    /// The engine's process-wide settings (see [`Setup::settings`]).
    pub settings: Settings,
}

impl Setup {
    /// `$HERMES_HOME` (see [`crate::hermes_home`]) with its config and the secrets of `wires`
    /// (see [`Setup::in_home`]).
    pub fn load(wires: &Wires) -> Result<Setup, ConfigError> {
        Setup::in_home(crate::hermes_home()?, wires)
    }

    /// The config in `home` (`home/config.toml`, defaults when missing) and the secrets of
    /// this process's environment (see [`secrets::gather`]): `wires` is the engine's list
    /// (`Engine::wires`), so the key variables of a third party's wire are secrets too.
    pub fn in_home(home: PathBuf, wires: &Wires) -> Result<Setup, ConfigError> {
        let config = config::load(&home)?;
        let secrets = secrets::gather(None, &config, wires);
        Ok(Setup {
            home,
            config,
            secrets,
        })
    }

    /// `config.toml`'s defaults, with the AWS region of the environment or the shared AWS
    /// config when config.toml names none — what a chat or a preview settles with.
    pub async fn defaults(&self) -> Defaults {
        let mut defaults = self.config.defaults();
        if defaults.aws_region.is_none() {
            defaults.aws_region = crate::aws::region().await;
        }
        defaults
    }

    /// What every request of this process runs with: [`Setup::defaults`], keys from the
    /// environment ([`secrets::key_lookup`]), AWS credentials from the environment (and the
    /// chain with `aws-chain`), each one fetched added to [`Setup::secrets`], `[limits]` and
    /// `[verdicts] reprobe_after`.
    pub async fn settings(&self) -> Settings {
        let mut settings = Settings::new(self.defaults().await, secrets::key_lookup())
            .aws(Arc::new(crate::aws::AwsEnv {
                secrets: self.secrets.clone(),
            }))
            .limits(self.config.limits.limits());
        settings.reprobe_after = self.config.reprobe_after();
        settings
    }

    /// The database a URL names (`HERMES_DATABASE_URL`, else `[store] url`), if one does.
    pub fn database_location(&self) -> Result<Option<Location>, ConfigError> {
        crate::home::database_location(&self.config)
    }

    /// Opens the sessions' database: the one a URL names, else the local one in the home
    /// (created `0700` when missing), sized by `[store]`; the second value is the notice to
    /// show once when the engine chose `hermes.db` beside another program's `state.db`.
    pub async fn open_store(&self) -> Result<(Store, Option<String>), ConfigError> {
        crate::home::open_store_in(&self.home, &self.config).await
    }

    /// Opens the local database in the home whatever URL is configured (the source of
    /// `hermes sessions migrate`), with its notice.
    pub async fn open_local_store(&self) -> Result<(Store, Option<String>), ConfigError> {
        crate::home::open_local_store(&self.home, &self.config).await
    }

    /// The store and the settings together: what the CLI's chat and a gateway both start from
    /// (`Engine::with_store(opened.store, opened.settings)` for a server).
    pub async fn open(&self) -> Result<Opened, ConfigError> {
        self.open_pooled(self.config.store.pool()).await
    }

    /// [`Setup::open`] for a gateway: the pool's `acquire_timeout` defaults to 3 s rather than
    /// 30 ([`StoreSection::gateway_pool`](crate::StoreSection::gateway_pool)), so while the
    /// database is away a request is answered "unavailable" soon instead of hanging.
    pub async fn open_gateway(&self) -> Result<Opened, ConfigError> {
        self.open_pooled(self.config.store.gateway_pool()).await
    }

    async fn open_pooled(
        &self,
        pool: hermes_engine::store::PoolOptions,
    ) -> Result<Opened, ConfigError> {
        let (store, notice) =
            crate::home::open_store_pooled(&self.home, &self.config, pool).await?;
        Ok(Opened {
            store,
            notice,
            settings: self.settings().await,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_home_opens_its_own_database_and_the_settings_come_from_its_config() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "provider = \"deepseek\"\n\n[limits]\nturn = 7\n\n[verdicts]\nreprobe_after = \"90s\"\n\n[bedrock]\nregion = \"eu-west-3\"\n",
        )
        .unwrap();
        let setup = Setup::in_home(home.clone(), &hermes_engine::builtin_wires()).unwrap();
        assert_eq!(setup.config.provider.as_deref(), Some("deepseek"));

        let (store, notice) = setup.open_local_store().await.unwrap();
        assert_eq!(notice, None);
        assert!(home.join(hermes_engine::STATE_DB).is_file());
        assert!(store.list().await.unwrap().is_empty());

        let settings = setup.settings().await;
        assert_eq!(settings.defaults.provider.as_deref(), Some("deepseek"));
        assert_eq!(settings.defaults.aws_region.as_deref(), Some("eu-west-3"));
        assert_eq!(settings.limits.turn, Duration::from_secs(7));
        assert_eq!(
            settings.limits.connect,
            hermes_engine::Limits::default().connect
        );
        assert_eq!(settings.reprobe_after, Duration::from_secs(90));
        assert!(settings.aws.is_some(), "Bedrock gets the AWS source");
        assert_eq!((settings.key)("PATH"), std::env::var("PATH").ok());
    }

    #[test]
    fn an_invalid_config_is_an_error_naming_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "effort = \"huge\"\n").unwrap();
        let err =
            Setup::in_home(dir.path().to_path_buf(), &hermes_engine::builtin_wires()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "{}: line 1: `effort = \"huge\"`: expected one of ",
                dir.path().join("config.toml").display()
            )),
            "{text}"
        );
    }
}
