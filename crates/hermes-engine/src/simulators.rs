//! The seam through which a front end offers `--provider sim`: which simulator profiles a build
//! has and how to start one. The engine ships none (the simulators are a test tool); the `hermes`
//! command line gives its engine hermes-sim's ([`Engine::with_simulators`](crate::Engine::with_simulators)).

use std::any::Any;

#[cfg(feature = "bedrock")]
use hermes_aws::AwsCredentials;

/// The loopback host every simulator binds. A simulator target that is not started (a preview)
/// routes as this host, which is all routing and provenance read of a simulator's URL (the port
/// is never part of a route or of a minter).
pub const SIM_HOST: &str = "127.0.0.1";

/// One simulator profile a build offers (`--provider sim --base-url sim://NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SimProfile {
    /// Profile name.
    pub name: String,
    /// The provider id it stands in for (decides the route and the wire).
    pub provider: String,
    /// The model id it answers as by default.
    pub model: String,
    /// One line for help texts.
    pub about: String,
}

impl SimProfile {
    /// A profile named `name`, standing in for `provider`, answering as `model` by default.
    pub fn new(
        name: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        about: impl Into<String>,
    ) -> Self {
        SimProfile {
            name: name.into(),
            provider: provider.into(),
            model: model.into(),
            about: about.into(),
        }
    }
}

/// The simulators a front end offers for `--provider sim`. Settlement reads the profiles; a
/// chat session starts the one it settled on, in-process, and keeps it as long as its target.
#[async_trait::async_trait]
pub trait Simulators: Send + Sync {
    /// Every profile, in the order help texts list them.
    fn profiles(&self) -> &[SimProfile];

    /// Starts the simulator of the profile named `profile` (one of [`profiles`](Self::profiles))
    /// on [`SIM_HOST`]; the error says why it could not start.
    async fn start(&self, profile: &str) -> Result<StartedSim, String>;
}

/// A simulator started for a session: where it listens, the one AWS key pair it accepts (its
/// Bedrock profiles check SigV4; the `bedrock` feature's), and the simulator itself, kept alive
/// as long as this value is.
pub struct StartedSim {
    base_url: String,
    #[cfg(feature = "bedrock")]
    aws_credentials: Option<AwsCredentials>,
    simulator: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for StartedSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedSim")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl StartedSim {
    /// `simulator`, listening at `base_url` (on [`SIM_HOST`]), accepting no AWS credentials
    /// until [`StartedSim::with_aws_credentials`] says which.
    pub fn new<T: Any + Send + Sync>(base_url: impl Into<String>, simulator: T) -> Self {
        StartedSim {
            base_url: base_url.into(),
            #[cfg(feature = "bedrock")]
            aws_credentials: None,
            simulator: Box::new(simulator),
        }
    }

    /// The AWS key pair it accepts (a Bedrock profile signs with it).
    #[cfg(feature = "bedrock")]
    pub fn with_aws_credentials(mut self, aws_credentials: AwsCredentials) -> Self {
        self.aws_credentials = Some(aws_credentials);
        self
    }

    /// Its loopback base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The AWS key pair it accepts, if it was given one.
    #[cfg(feature = "bedrock")]
    pub fn aws_credentials(&self) -> Option<&AwsCredentials> {
        self.aws_credentials.as_ref()
    }

    /// The simulator itself, when it is a `T` (tests read what it received).
    pub fn simulator<T: Any>(&self) -> Option<&T> {
        (*self.simulator).downcast_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_host_is_the_one_hermes_sim_binds() {
        assert_eq!(SIM_HOST, hermes_sim::HOST);
    }

    #[test]
    fn a_started_simulator_is_given_back_only_as_its_own_type() {
        let started = StartedSim::new(format!("http://{SIM_HOST}:9"), 7_u16);
        assert_eq!(started.simulator::<u16>(), Some(&7));
        assert_eq!(started.simulator::<u32>(), None);
        assert_eq!(started.base_url(), "http://127.0.0.1:9");
        #[cfg(feature = "bedrock")]
        {
            assert!(started.aws_credentials().is_none());
            let started = started.with_aws_credentials(AwsCredentials {
                access_key_id: "AKID".to_owned(),
                secret_access_key: "secret".to_owned(),
                session_token: None,
            });
            assert_eq!(started.aws_credentials().unwrap().access_key_id, "AKID");
        }
    }
}
