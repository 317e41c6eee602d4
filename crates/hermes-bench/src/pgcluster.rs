//! A throwaway PostgreSQL cluster with durable settings for `cargo xtask bench serve`: Debian's
//! binaries, a data directory under the bench's work folder, a free loopback port, trust
//! authentication on loopback, stopped and removed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::storage::BenchError;

/// The settings the cluster runs with: every write reaches the disk before a commit returns,
/// as a production server's would (CI's test cluster turns all three off).
pub const DURABLE: [(&str, &str); 3] = [
    ("fsync", "on"),
    ("synchronous_commit", "on"),
    ("full_page_writes", "on"),
];

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

/// The `-o` options `pg_ctl start` passes to the server: loopback only on `port`, its socket in
/// `data`, [`DURABLE`], and room for the bench's connections.
pub fn server_options(port: u16, data: &Path) -> String {
    let mut options = format!("-h 127.0.0.1 -p {port} -k {}", data.display());
    for (name, value) in DURABLE {
        options.push_str(&format!(" -c {name}={value}"));
    }
    options.push_str(" -c max_connections=200");
    options
}

/// A running throwaway cluster; dropping it stops the server (`-m immediate`) and removes its
/// data directory.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    /// `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication: no password).
    pub url: String,
    stopped: bool,
}

/// Whether this process runs as root (PostgreSQL refuses to: its commands then run as the
/// `postgres` user, through `runuser`).
fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// `program` with `args`, as the `postgres` user when this process is root.
fn as_postgres(program: &Path, args: &[&str]) -> Command {
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

/// Runs `cmd` to its end, its output kept for the error.
fn run(what: &str, mut cmd: Command) -> Result<(), BenchError> {
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
    )
    .into())
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, BenchError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// `initdb` in a new directory under `parent` (trust authentication, UTF-8), then `pg_ctl
    /// start` on a free loopback port with [`server_options`]. `Err` says what failed; the
    /// directory is removed then too.
    pub fn start(bin: &Path, parent: &Path) -> Result<Cluster, BenchError> {
        std::fs::create_dir_all(parent)?;
        let data = std::path::absolute(parent.join(format!("pg-{}", std::process::id())))?;
        // A directory left by an earlier run of this pid (a reboot later) is not reused.
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir(&data)?;
        let mut cluster = Cluster {
            bin: bin.to_owned(),
            data,
            url: String::new(),
            stopped: true,
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
                &bin.join("initdb"),
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
        let port = free_port()?;
        let log = format!("{data}/server.log");
        let options = server_options(port, &cluster.data);
        cluster.stopped = false;
        run(
            "pg_ctl start",
            as_postgres(
                &bin.join("pg_ctl"),
                &["-D", &data, "-l", &log, "-w", "-o", &options, "start"],
            ),
        )
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            format!("{e}\n-- server.log:\n{tail}")
        })?;
        cluster.url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        Ok(cluster)
    }

    /// Stops the server and removes its data directory (what dropping it does); safe to call
    /// twice.
    pub fn stop(&mut self) {
        if !self.stopped {
            let data = self.data.display().to_string();
            let _ = as_postgres(
                &self.bin.join("pg_ctl"),
                &["-D", &data, "-m", "immediate", "-w", "stop"],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
            self.stopped = true;
        }
        let _ = std::fs::remove_dir_all(&self.data);
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

/// Stops and removes the cluster at `data` when the bench is interrupted (Ctrl-C: the server
/// runs in a session of its own, so the terminal's signal does not reach it), then ends the
/// process with status 130. Returns at once; the watch lives on a thread of its own.
pub fn stop_on_interrupt(bin: &Path, data: &Path) {
    let (bin, data) = (bin.to_owned(), data.to_owned());
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
            eprintln!("interrupted: stopping the throwaway PostgreSQL and removing its data");
            let mut cluster = Cluster {
                bin,
                data,
                url: String::new(),
                stopped: false,
            };
            cluster.stop();
            std::process::exit(130);
        }
    });
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_runs_on_loopback_with_every_durability_setting_on() {
        let options = server_options(54321, Path::new("/tmp/pgdata"));
        assert!(options.starts_with("-h 127.0.0.1 -p 54321 -k /tmp/pgdata "));
        for setting in ["fsync=on", "synchronous_commit=on", "full_page_writes=on"] {
            assert!(options.contains(&format!(" -c {setting}")), "{options}");
        }
        assert!(!options.contains("=off"), "{options}");
    }
}
