//! A PostgreSQL cluster of a test's or a benchmark's own: Debian's binaries, a data directory
//! under a given folder, a free loopback port, trust authentication, run as the `postgres` user
//! when this process is root (PostgreSQL refuses root). Stopped at once and removed when
//! dropped; [`Cluster::stop`] and [`Cluster::start`] restart it on the same port.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How the server writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every write reaches the disk before a commit returns (`fsync`, `synchronous_commit`,
    /// `full_page_writes` on), as a production server's would: what a benchmark measures.
    Durable,
    /// None of the three (a test's throwaway data, as `.ci/postgres.sh` runs CI's cluster).
    Throwaway,
}

impl Durability {
    /// The server settings it stands for.
    pub fn settings(self) -> [(&'static str, &'static str); 3] {
        let value = match self {
            Durability::Durable => "on",
            Durability::Throwaway => "off",
        };
        [
            ("fsync", value),
            ("synchronous_commit", value),
            ("full_page_writes", value),
        ]
    }
}

/// The newest `/usr/lib/postgresql/VERSION/bin` that holds `initdb` and `pg_ctl`, if any.
pub fn debian_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// The variable naming the PostgreSQL binaries a test runs a cluster of its own from
/// (`.ci/postgres.sh` sets it).
pub const BIN_VAR: &str = "HERMES_TEST_PG_BIN";

/// The PostgreSQL binaries for a test's own cluster: `HERMES_TEST_PG_BIN`, else Debian's
/// ([`debian_bin`]); `None` when there are none, the test then recorded as skipped
/// ([`crate::skip`]).
///
/// # Panics
/// When there are none and `HERMES_REQUIRE_PG` is set: a required PostgreSQL test never passes
/// on nothing.
pub fn test_bin() -> Option<PathBuf> {
    let chosen = choose_bin(
        std::env::var_os(BIN_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        debian_bin,
        crate::skip::flag("HERMES_REQUIRE_PG"),
    );
    match chosen {
        Ok(Some(bin)) => Some(bin),
        Ok(None) => {
            crate::skip::skipped(
                crate::skip::group::POSTGRES,
                "no PostgreSQL binaries (HERMES_TEST_PG_BIN is unset and /usr/lib/postgresql has none): no cluster of the test's own",
            );
            None
        }
        Err(why) => panic!("{why}"),
    }
}

/// [`test_bin`]'s choice: the named binaries, else `found()`'s; with neither, `Ok(None)`
/// (skip), or `Err` when PostgreSQL is `required`.
fn choose_bin(
    named: Option<PathBuf>,
    found: impl FnOnce() -> Option<PathBuf>,
    required: bool,
) -> Result<Option<PathBuf>, String> {
    match named.or_else(found) {
        Some(bin) => Ok(Some(bin)),
        None if required => Err(format!(
            "HERMES_REQUIRE_PG is set but there are no PostgreSQL binaries ({BIN_VAR} is unset and /usr/lib/postgresql has none): this test cannot run"
        )),
        None => Ok(None),
    }
}

/// The `-o` options `pg_ctl start` passes to the server: loopback only on `port`, its socket in
/// `data`, `durability`'s settings, and room for 200 connections.
pub fn server_options(port: u16, data: &Path, durability: Durability) -> String {
    let mut options = format!("-h 127.0.0.1 -p {port} -k {}", data.display());
    for (name, value) in durability.settings() {
        options.push_str(&format!(" -c {name}={value}"));
    }
    options.push_str(" -c max_connections=200");
    options
}

/// A cluster this process made.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    durability: Durability,
    url: String,
}

/// Whether this process runs as root.
fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// `program` of `bin` with `args`, as the `postgres` user when this process is root.
fn as_postgres(bin: &Path, program: &str, args: &[&str]) -> Command {
    let program = bin.join(program);
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program).args(args);
        cmd
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }
}

/// Runs `cmd` to its end; `Err` names `what` with its output.
fn run(what: &str, mut cmd: Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Stops the server of the cluster at `data` at once (`-m immediate`) and removes the
/// directory: what dropping a [`Cluster`] does, for a process that only knows where it is
/// (an interrupt handler).
pub fn remove(bin: &Path, data: &Path) {
    let data_arg = data.display().to_string();
    let _ = as_postgres(
        bin,
        "pg_ctl",
        &["-D", &data_arg, "-m", "immediate", "-w", "stop"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .status();
    let _ = std::fs::remove_dir_all(data);
}

impl Cluster {
    /// `initdb` in a new directory under `parent` (trust authentication, UTF-8), then started
    /// on a free loopback port. `Err` says what failed; the directory is removed then too.
    pub fn create(bin: &Path, parent: &Path, durability: Durability) -> Result<Cluster, String> {
        let io =
            |e: std::io::Error| format!("the cluster's directory under {}: {e}", parent.display());
        std::fs::create_dir_all(parent).map_err(io)?;
        let data = tempfile::Builder::new()
            .prefix("pg-")
            .tempdir_in(parent)
            .map_err(io)?
            .keep();
        let data = std::path::absolute(data).map_err(io)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        // Dropped on any failure below: the directory goes with it.
        let mut cluster = Cluster {
            bin: bin.to_owned(),
            data,
            port,
            durability,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        };
        if is_root() {
            let mut chown = Command::new("chown");
            chown.arg("postgres").arg(&cluster.data);
            run("chown postgres (the data directory)", chown)?;
        }
        let data = cluster.data.display().to_string();
        run(
            "initdb",
            as_postgres(
                bin,
                "initdb",
                &[
                    "-D",
                    &data,
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                ],
            ),
        )?;
        cluster.start()?;
        Ok(cluster)
    }

    /// Starts the server (again) on its port; `Err` carries its log's tail.
    pub fn start(&mut self) -> Result<(), String> {
        let data = self.data.display().to_string();
        let log = format!("{data}/server.log");
        let options = server_options(self.port, &self.data, self.durability);
        run(
            "pg_ctl start",
            as_postgres(
                &self.bin,
                "pg_ctl",
                &["-D", &data, "-l", &log, "-w", "-o", &options, "start"],
            ),
        )
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            format!("{e}\n-- server.log:\n{tail}")
        })
    }

    /// A fast shutdown: every session is ended (`57P01`), then the server stops; the data
    /// stays for [`Cluster::start`].
    pub fn stop(&mut self) -> Result<(), String> {
        let data = self.data.display().to_string();
        run(
            "pg_ctl stop",
            as_postgres(
                &self.bin,
                "pg_ctl",
                &["-D", &data, "-m", "fast", "-w", "stop"],
            ),
        )
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication: no password).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        remove(&self.bin, &self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_binaries_fail_when_postgres_is_required_and_skip_otherwise() {
        let named = PathBuf::from("/pg/bin");
        assert_eq!(
            choose_bin(Some(named.clone()), || None, true),
            Ok(Some(named))
        );
        let debian = PathBuf::from("/usr/lib/postgresql/15/bin");
        assert_eq!(
            choose_bin(None, || Some(debian.clone()), true),
            Ok(Some(debian))
        );
        assert_eq!(choose_bin(None, || None, false), Ok(None));
        let err = choose_bin(None, || None, true).unwrap_err();
        assert!(err.contains("HERMES_REQUIRE_PG"), "{err}");
    }

    #[test]
    fn the_server_runs_on_loopback_with_the_durability_asked_for() {
        let options = server_options(54321, Path::new("/tmp/pgdata"), Durability::Durable);
        assert!(options.starts_with("-h 127.0.0.1 -p 54321 -k /tmp/pgdata "));
        for setting in ["fsync=on", "synchronous_commit=on", "full_page_writes=on"] {
            assert!(options.contains(&format!(" -c {setting}")), "{options}");
        }
        assert!(!options.contains("=off"), "{options}");
        let options = server_options(1, Path::new("/d"), Durability::Throwaway);
        assert!(
            options.contains(" -c fsync=off -c synchronous_commit=off"),
            "{options}"
        );
    }
}
