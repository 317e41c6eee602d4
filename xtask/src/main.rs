//! `cargo xtask`: project automation (the checks CI runs, the conformance suite).
//!
//! Kept free of hermes dependencies so it builds in seconds; it drives `cargo` through `$CARGO`.

mod api_fuzz;
#[cfg(test)]
mod architecture;
mod fuzz;
#[cfg(test)]
mod tidy;

use std::process::Command;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci [--yes]           fmt --check, clippy -D warnings, hermes-providers checked without its
                       native wires (none, then gemini alone), a 3 s smoke run of every cargo-fuzz
                       target (nightly), the whole test suite (conformance
                       included), with the official SDKs (a venv under target/) and a throwaway
                       PostgreSQL provisioned; what cannot be is named as skipped at the end.
                       First run ~10-25 min on 2 cores. Installing PostgreSQL with apt-get is
                       asked first unless --yes or CI is set
  clients              the real agent programs through the gateway against the strict simulators:
                       Claude Code, the AI SDK, the OpenAI Agents SDK, LangChain, pydantic-ai,
                       installed pinned under target/clients/ (npm ci, a venv), then the
                       hermes-serve `clients` tests and their table (HERMES_REQUIRE_CLIENTS: a
                       client that cannot be installed fails instead of skipping)
  conformance [ROUTE]  the route conformance suite, built-in routes and the third-party example
                       (every route, or the ones named)
  chaos [cli]          signals during tool loops, many processes on one home, racing resumes
                       and simultaneous first opens, at full size (200 signals, 8 x 20 turns)
  chaos serve          3 `hermes serve` replicas over one PostgreSQL behind a round-robin front,
                       carrier-stripping clients on the five carrier families through both doors,
                       random SIGKILLs and a rolling restart (1,000 conversations, 30 kills;
                       HERMES_CHAOS_SERVE_* override; HERMES_TEST_PG_URL or a throwaway cluster)
  fuzz [--target NAME] [--seconds N]
                       the cargo-fuzz targets (nightly, libFuzzer; cargo-fuzz pinned, installed
                       under target/cargo-fuzz) one at a time, N s each (default 60); a crash is
                       minimised into fuzz/regressions/<target>/, replayed by cargo test on stable
  fuzz --api [--seconds N | --max-examples N]
                       Schemathesis (pinned in the SDK venv) against a live `hermes serve` over
                       the strict simulators, from its GET /openapi.json: every operation with
                       generated valid and invalid inputs; fails on any 5xx, schema violation,
                       key in a response or turn stored after a 4xx (default 50 cases each)
  bench [N...]         release-build benchmarks on the standard history (default N: 100 1000 5000;
                       --quick: 100 and 1000; --route=a,b: only those shaping rows;
                       --shaping-only, --storage-only, … as the README lists)
  bench serve [--quick] [--with-litellm]
                       the gateway on loopback against the simulator it fronts: direct, hermes on
                       SQLite, hermes on PostgreSQL (a throwaway durable cluster unless
                       HERMES_TEST_PG_URL), and LiteLLM's proxy (pinned, in a venv under target/)
                       with --with-litellm; interleaved rounds, medians with spread, issue 33's
                       targets beside them; --quick: within 5 minutes on 2 cores;
                       --instructions: only the callgrind count of a continued turn";

/// The variables cargo sets for the binary it runs (`cargo xtask` is `cargo run -p xtask`):
/// the nested cargo must not see them, or build scripts that watch one of them
/// (`rerun-if-env-changed`) rerun, and `cargo xtask ci` and a plain `cargo` would keep
/// invalidating each other's builds.
fn set_by_cargo_run(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
    ) || name.starts_with("CARGO_PKG_")
}

/// The cargo that ran xtask, with the environment a plain `cargo` in this shell would see.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// [`step`]: `cargo` with `args`.
fn cargo_step(name: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut cmd = cargo();
    cmd.args(args);
    step(name, cmd)
}

/// [`cargo_step`]: clippy over `scope` (packages, targets), warnings denied.
fn clippy_step(name: &str, scope: &[&str]) -> anyhow::Result<()> {
    cargo_step(
        name,
        &[&["clippy"], scope, &["--", "-D", "warnings"]].concat(),
    )
}

/// The features of the `hermes` binary built without Bedrock (`cargo install --path
/// crates/hermes-cli --no-default-features --features anthropic`).
const WITHOUT_BEDROCK: [&str; 4] = [
    "-p",
    "hermes-cli",
    "--no-default-features",
    "--features=anthropic",
];

/// The binary without the `bedrock` feature: it builds without warnings (clippy, no codegen),
/// and its normal dependencies hold no AWS crate (`cargo tree`).
fn without_bedrock() -> anyhow::Result<()> {
    clippy_step(
        "cargo clippy -p hermes-cli --no-default-features --features anthropic",
        &WITHOUT_BEDROCK,
    )?;
    let name = "cargo tree -p hermes-cli --no-default-features --features anthropic -e normal";
    eprintln!("xtask: {name} (no aws- crate)");
    let out = cargo()
        .arg("tree")
        .args(WITHOUT_BEDROCK)
        .args(["-e", "normal", "--prefix", "none"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start {name}"))?;
    if !out.status.success() {
        bail!("{name} failed ({})", out.status);
    }
    let aws = aws_crates(&String::from_utf8_lossy(&out.stdout));
    if !aws.is_empty() {
        bail!(
            "the hermes binary without the `bedrock` feature depends on AWS crates: {} (`{name} -i CRATE` shows through what)",
            aws.join(", ")
        );
    }
    Ok(())
}

/// The crates of a `cargo tree --prefix none` listing whose names start with `aws-`, each
/// once, sorted.
fn aws_crates(tree: &str) -> Vec<String> {
    let mut names: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("aws-"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Runs one step, failing with its name when it fails.
fn step(name: &str, mut cmd: Command) -> anyhow::Result<()> {
    eprintln!("xtask: {name}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

/// The conformance suite: the built-in routes, then the third-party example's route through
/// the same suite. Fails when the two suites together ran no check, or when a route named in
/// `routes` ran none (an unknown route is a failure, never a pass on nothing).
fn conformance(routes: &[String]) -> anyhow::Result<()> {
    let mut ran = ConformanceRun::default();
    for (package, name) in [
        ("hermes-providers", "conformance (built-in routes)"),
        ("acme-route", "conformance (third-party example)"),
    ] {
        let mut cmd = cargo();
        cmd.args([
            "test",
            "--quiet",
            "-p",
            package,
            "--test",
            "conformance",
            "--",
        ]);
        cmd.args(routes);
        eprintln!("xtask: {name}");
        let (status, out) = passed_through(cmd).with_context(|| format!("cannot start {name}"))?;
        if !status.success() {
            bail!("{name} failed ({status})");
        }
        ran.read(&out);
    }
    ran.verdict(routes).map_err(anyhow::Error::msg)
}

/// What the conformance suites printed: the routes that ran checks (`route ID: …` lines) and
/// the checks passed (`N passed, M failed`).
#[derive(Default, Debug)]
struct ConformanceRun {
    routes: Vec<String>,
    passed: usize,
}

impl ConformanceRun {
    /// Adds one suite's output.
    fn read(&mut self, out: &str) {
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("route ")
                && let Some((route, _)) = rest.split_once(": ")
            {
                self.routes.push(route.to_owned());
            } else if let Some((n, _)) = line.split_once(" passed, ")
                && line.ends_with(" failed")
            {
                self.passed += n.trim().parse::<usize>().unwrap_or(0);
            }
        }
    }

    /// `Err` when nothing was checked, or a route asked for ran no check.
    fn verdict(&self, asked: &[String]) -> Result<(), String> {
        let missing: Vec<&str> = asked
            .iter()
            .filter(|r| !r.starts_with('-') && !self.routes.contains(r))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "conformance: no check ran for route(s) {} (unknown route? the suites ran: {})",
                missing.join(", "),
                self.routes.join(", ")
            ));
        }
        if self.passed == 0 {
            return Err("conformance: the suites ran no check".to_owned());
        }
        Ok(())
    }
}

/// Runs `cmd`, passing its stdout through line by line, and returns its status and stdout.
fn passed_through(mut cmd: Command) -> std::io::Result<(std::process::ExitStatus, String)> {
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn()?;
    let mut text = String::new();
    pass_lines_through(&mut child, |line| {
        text.push_str(line);
        text.push('\n');
    });
    Ok((child.wait()?, text))
}

/// Passes `child`'s piped stdout through to ours line by line (until it ends or a line cannot
/// be read), handing each line to `each`.
fn pass_lines_through(child: &mut std::process::Child, mut each: impl FnMut(&str)) {
    use std::io::{BufRead as _, Write as _};
    if let Some(stdout) = child.stdout.take() {
        let mut out = std::io::stdout().lock();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(out, "{line}");
            each(&line);
        }
    }
}

/// Exit code of `.ci/with-postgres.sh` when PostgreSQL could not be provisioned.
const PG_UNAVAILABLE: i32 = 97;

/// True when the variable is set to anything but `0` or the empty string.
fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// What provisioning a skip group gave: `Some` when it was provisioned; else why not, recorded
/// in `unprovisioned` under the group (its tests skip), or an error when the group's
/// `HERMES_REQUIRE_…` variable is set. `group` is `(skip group, require variable, what it is)`.
fn provisioned<T>(
    result: Result<T, String>,
    (group, require, what): (&'static str, &str, &str),
    unprovisioned: &mut Vec<(&'static str, String)>,
) -> anyhow::Result<Option<T>> {
    match result {
        Ok(found) => Ok(Some(found)),
        Err(why) if flag(require) => bail!("{what} could not be provisioned: {why}"),
        Err(why) => {
            unprovisioned.push((group, why));
            Ok(None)
        }
    }
}

/// The official provider SDKs for the SDK-evidence tests: `HERMES_SDK_PYTHON` when set, else a
/// venv under `target/sdk-venv` made (or repaired) and filled from `.ci/sdk-requirements.txt`.
/// `Err` says why they could not be provisioned.
fn sdk_python() -> Result<std::path::PathBuf, String> {
    if let Some(python) = std::env::var_os("HERMES_SDK_PYTHON") {
        return Ok(python.into());
    }
    let venv = std::path::absolute(target_dir().join("sdk-venv")).map_err(|e| e.to_string())?;
    let python = venv.join("bin").join("python");
    let works = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
    if !works(Command::new(&python).args(["-c", "import sys"])) {
        let _ = std::fs::remove_dir_all(&venv);
        if !works(Command::new("python3").arg("-m").arg("venv").arg(&venv)) {
            return Err("`python3 -m venv` failed (is Python 3 with venv installed?)".into());
        }
    }
    // Installed again only when the requirements changed since the last install (a stamp).
    let requirements = [std::fs::read(".ci/sdk-requirements.txt").unwrap_or_default()];
    let stamp = venv.join(".hermes-installed");
    if stamped(&stamp, &requirements) {
        return Ok(python);
    }
    eprintln!(
        "xtask: installing the official SDKs (.ci/sdk-requirements.txt) into {} with pip: a minute or a few the first time; pip's progress follows",
        venv.display()
    );
    let started = std::time::Instant::now();
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--progress-bar",
        "on",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(".ci/sdk-requirements.txt");
    if !works(&mut pip) {
        return Err("pip could not install .ci/sdk-requirements.txt (is PyPI reachable?)".into());
    }
    eprintln!(
        "xtask: the official SDKs installed in {:.0?}",
        started.elapsed()
    );
    let _ = std::fs::write(&stamp, requirements.concat());
    Ok(python)
}

/// The folder of the real clients' pinned manifests and scripts.
const CLIENTS_DIR: &str = "crates/hermes-serve/tests/clients";

/// The variables the hermes-serve `clients` tests read (`hermes_test_support::clients`).
const CLIENTS_NODE_VAR: &str = "HERMES_CLIENTS_NODE";
const CLIENTS_PYTHON_VAR: &str = "HERMES_CLIENTS_PYTHON";
const CLIENTS_TABLE_VAR: &str = "HERMES_CLIENTS_TABLE";

/// What [`provision_clients`] installed: the npm clients' folder and the Python clients'
/// interpreter (`None` when that half could not be installed, said in `problems`).
#[derive(Default)]
struct Clients {
    node: Option<std::path::PathBuf>,
    python: Option<std::path::PathBuf>,
    problems: Vec<String>,
}

impl Clients {
    /// Sets the variables naming what was installed on `cmd`, and the table file.
    fn apply(&self, cmd: &mut Command, table: &std::path::Path) {
        if let Some(node) = &self.node {
            cmd.env(CLIENTS_NODE_VAR, node);
        }
        if let Some(python) = &self.python {
            cmd.env(CLIENTS_PYTHON_VAR, python);
        }
        cmd.env(CLIENTS_TABLE_VAR, table);
    }

    /// Why not everything was installed, or `None`.
    fn why_not(&self) -> Option<String> {
        (!self.problems.is_empty()).then(|| self.problems.join("; "))
    }
}

/// True when `stamp` holds exactly the concatenation of `sources` (what was installed last).
fn stamped(stamp: &std::path::Path, sources: &[Vec<u8>]) -> bool {
    std::fs::read(stamp).is_ok_and(|done| done == sources.concat())
}

/// The real clients, pinned, under `target/clients/` (never workspace dependencies, never
/// committed): the npm ones by `npm ci` in `target/clients/node` from the committed
/// `package.json` / `package-lock.json` of [`CLIENTS_DIR`], the Python ones in the venv
/// `target/clients/venv` from its `requirements.txt`. Each half is installed again only when
/// its manifests changed since the last install (a stamp file records them).
/// `HERMES_CLIENTS_NODE` / `HERMES_CLIENTS_PYTHON`, when set, are used as they are.
fn provision_clients() -> Clients {
    let mut clients = Clients::default();
    let root = match std::path::absolute(target_dir().join("clients")) {
        Ok(root) => root,
        Err(e) => {
            clients
                .problems
                .push(format!("cannot name target/clients: {e}"));
            return clients;
        }
    };
    let works = |cmd: &mut Command| {
        cmd.stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let dir = std::path::Path::new(CLIENTS_DIR);
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap_or_default();

    // npm: Claude Code and the AI SDK.
    if let Some(node) = std::env::var_os(CLIENTS_NODE_VAR) {
        clients.node = Some(node.into());
    } else {
        let node = root.join("node");
        let manifests = [read("package.json"), read("package-lock.json")];
        let stamp = node.join(".hermes-installed");
        if stamped(&stamp, &manifests) {
            clients.node = Some(node);
        } else if !works(Command::new("node").arg("--version"))
            || !works(Command::new("npm").arg("--version"))
        {
            clients
                .problems
                .push("node and npm are not installed (Debian's nodejs and npm)".into());
        } else {
            let _ = std::fs::remove_file(&stamp);
            let installed = std::fs::create_dir_all(&node).is_ok()
                && std::fs::write(node.join("package.json"), &manifests[0]).is_ok()
                && std::fs::write(node.join("package-lock.json"), &manifests[1]).is_ok()
                && {
                    eprintln!("xtask: npm ci in {}", node.display());
                    works(
                        Command::new("npm")
                            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                            .current_dir(&node),
                    )
                };
            if installed && std::fs::write(&stamp, manifests.concat()).is_ok() {
                clients.node = Some(node);
            } else {
                clients.problems.push(format!(
                    "`npm ci` of {CLIENTS_DIR}/package-lock.json failed (is the npm registry reachable?)"
                ));
            }
        }
    }

    // PyPI: the OpenAI Agents SDK, LangChain, pydantic-ai.
    if let Some(python) = std::env::var_os(CLIENTS_PYTHON_VAR) {
        clients.python = Some(python.into());
    } else {
        let venv = root.join("venv");
        let python = venv.join("bin").join("python");
        let requirements = [read("requirements.txt")];
        let stamp = venv.join(".hermes-installed");
        let usable = works(Command::new(&python).args(["-c", "import sys"]));
        if usable && stamped(&stamp, &requirements) {
            clients.python = Some(python);
        } else {
            let _ = std::fs::remove_file(&stamp);
            if !usable {
                let _ = std::fs::remove_dir_all(&venv);
            }
            if !usable && !works(Command::new("python3").arg("-m").arg("venv").arg(&venv)) {
                clients
                    .problems
                    .push("`python3 -m venv` failed (is Python 3 with venv installed?)".into());
            } else {
                eprintln!("xtask: pip install into {}", venv.display());
                let installed = works(
                    Command::new(&python)
                        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                        .arg("-r")
                        .arg(dir.join("requirements.txt")),
                );
                if installed && std::fs::write(&stamp, requirements.concat()).is_ok() {
                    clients.python = Some(python);
                } else {
                    clients.problems.push(format!(
                        "pip could not install {CLIENTS_DIR}/requirements.txt (is PyPI reachable?)"
                    ));
                }
            }
        }
    }
    clients
}

/// The clients table the tests wrote to `table` (tab-separated rows, see
/// `hermes_test_support::clients::Row`), as aligned columns, rows sorted; `None` when empty.
fn clients_table(table: &str) -> Option<String> {
    const HEADER: [&str; 8] = [
        "client", "version", "door", "model", "upstream", "requests", "accepted", "result",
    ];
    let mut rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort();
    rows.insert(0, HEADER.to_vec());
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|f| f.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    Some(out)
}

/// Prints the clients table from the file at `path` (and removes it): the real-client runs of
/// this test run, one row each.
fn print_clients_table(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    match clients_table(&text) {
        Some(table) => {
            eprintln!("\nxtask: real clients through the gateway (one row per run):");
            for line in table.lines() {
                eprintln!("xtask:   {line}");
            }
        }
        None => eprintln!("xtask: real clients: no client ran"),
    }
}

/// `cargo xtask clients`: installs the real clients ([`provision_clients`]), runs the
/// hermes-serve `clients` tests with them, prints their table and, when some could not be
/// installed, the skipped tests (a failure with `HERMES_REQUIRE_CLIENTS`).
fn clients() -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let installed = provision_clients();
    eprintln!("xtask: clients installed in {:.0?}", started.elapsed());
    let unprovisioned: Vec<(&str, String)> = match installed.why_not() {
        Some(why) if flag("HERMES_REQUIRE_CLIENTS") => {
            bail!("the real clients could not be installed: {why}")
        }
        Some(why) => vec![("clients", why)],
        None => Vec::new(),
    };
    let target = std::path::absolute(target_dir())?;
    let skip_log = target.join("xtask-clients-skipped.log");
    let table = target.join("xtask-clients-table.tsv");
    let _ = std::fs::remove_file(&skip_log);
    let _ = std::fs::remove_file(&table);
    let mut test = cargo();
    test.args([
        "test",
        "-p",
        "hermes-serve",
        "--test",
        "it",
        "--",
        "clients::",
    ]);
    installed.apply(&mut test, &table);
    test.env("HERMES_SKIP_LOG", &skip_log);
    let ran = std::time::Instant::now();
    let tally = run_tests("cargo test -p hermes-serve --test it clients::", test);
    eprintln!("xtask: the clients group took {:.0?}", ran.elapsed());
    let ran_clients = std::fs::read_to_string(&table).is_ok_and(|t| !t.trim().is_empty());
    print_clients_table(&table);
    let tally = tally?;
    let skipped = std::fs::read_to_string(&skip_log).unwrap_or_default();
    let _ = std::fs::remove_file(&skip_log);
    if tally.passed == 0 {
        bail!("the clients group ran no test");
    }
    if unprovisioned.is_empty() && !ran_clients {
        bail!("the clients were installed but no client ran");
    }
    report(
        &tally,
        &skipped,
        &unprovisioned,
        "PostgreSQL: not needed",
        None,
    );
    Ok(())
}

/// fmt, clippy, then every test of the workspace (conformance included) with what the tests
/// need provisioned: the official SDKs in a venv and a throwaway PostgreSQL (`.ci/with-postgres.sh`,
/// Debian's packages). What cannot be provisioned is skipped loudly, named in the summary with
/// how to enable it; `HERMES_REQUIRE_SDK` / `HERMES_REQUIRE_PG` (CI) make it a failure instead.
fn ci(args: &[String]) -> anyhow::Result<()> {
    let yes = match args {
        [] => false,
        [flag] if flag == "--yes" || flag == "-y" => true,
        other => bail!("unknown `cargo xtask ci` arguments {other:?}: only --yes\n\n{USAGE}"),
    };
    eprintln!("{CI_PLAN}");
    let started = std::time::Instant::now();
    let result = ci_steps(yes || flag("CI"));
    eprintln!(
        "xtask: cargo xtask ci {} after {:.0?}",
        if result.is_ok() { "passed" } else { "failed" },
        started.elapsed()
    );
    result
}

/// What `cargo xtask ci` says before it starts.
const CI_PLAN: &str = "xtask: cargo xtask ci will
xtask:   1. check formatting and run clippy (8 runs: the workspace, hermes-cli's default build, hermes-providers alone,
xtask:      hermes-wire-chat, hermes-wire-anthropic (without Bedrock), hermes-wire-gemini and hermes-wire-responses alone,
xtask:      hermes-cli without Bedrock, whose cargo tree must hold no aws- crate)
xtask:   2. fuzz smoke: every cargo-fuzz target for 3 s (cargo-fuzz installed under target/cargo-fuzz, targets built on nightly: long when cold)
xtask:   3. install the official SDKs into a venv under target/sdk-venv (pip, PyPI)
xtask:   4. install the real clients under target/clients (npm ci, pip), and the inspector test's browser: Debian's
xtask:      chromium (apt-get when missing: with --yes or CI) and playwright-core under target/browser (npm ci)
xtask:   5. start a throwaway PostgreSQL (.ci/postgres.sh; installs Debian's postgresql with apt-get when missing: asked first unless --yes or CI is set)
xtask:   6. run cargo test --workspace beside it
xtask:   7. fuzz the gateway's API with Schemathesis for about a minute (cargo xtask fuzz --api, 5 cases per operation), then sum up what was skipped
xtask: the first run takes roughly 10-25 minutes on 2 cores (builds and installs); later runs a few minutes";

/// The folder of the inspector test's pinned manifest (playwright-core) and script.
const BROWSER_DIR: &str = "crates/hermes-cli/tests/browser";
/// Debian's chromium, which the inspector test drives.
const CHROMIUM: &str = "/usr/bin/chromium";
/// The variable the inspector test reads (`hermes_test_support::browser`).
const BROWSER_NODE_VAR: &str = "HERMES_BROWSER_NODE";

/// The browser the inspector test drives: Debian's chromium, installed with apt-get when it is
/// missing and installing is allowed (`assume_yes`, as for PostgreSQL: `--yes` or `CI`), and
/// playwright-core, pinned, by `npm ci` in `target/browser/node` from [`BROWSER_DIR`]'s
/// `package.json` / `package-lock.json` (again only when they changed: a stamp records them).
/// `HERMES_BROWSER_NODE`, when set, is used as it is. The folder, or why not.
fn provision_browser(assume_yes: bool) -> Result<std::path::PathBuf, String> {
    let works = |cmd: &mut Command| {
        cmd.stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !std::path::Path::new(CHROMIUM).is_file() {
        if !assume_yes {
            return Err(format!(
                "{CHROMIUM} is not installed (Debian's chromium; `cargo xtask ci --yes` or CI=1 installs it with apt-get)"
            ));
        }
        eprintln!("xtask: installing Debian's chromium with apt-get");
        let installed = works(Command::new("apt-get").args(["update", "-qq"]))
            && works(
                Command::new("apt-get")
                    .args(["install", "-y", "-qq", "chromium"])
                    .env("DEBIAN_FRONTEND", "noninteractive"),
            );
        if !installed || !std::path::Path::new(CHROMIUM).is_file() {
            return Err(format!("`apt-get install chromium` failed: no {CHROMIUM}"));
        }
    }
    if let Some(node) = std::env::var_os(BROWSER_NODE_VAR) {
        return Ok(node.into());
    }
    let node = std::path::absolute(target_dir().join("browser").join("node"))
        .map_err(|e| format!("cannot name target/browser: {e}"))?;
    let dir = std::path::Path::new(BROWSER_DIR);
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap_or_default();
    let manifests = [read("package.json"), read("package-lock.json")];
    let stamp = node.join(".hermes-installed");
    if stamped(&stamp, &manifests) {
        return Ok(node);
    }
    if !works(Command::new("npm").arg("--version")) {
        return Err("node and npm are not installed (Debian's nodejs and npm)".into());
    }
    let _ = std::fs::remove_file(&stamp);
    eprintln!("xtask: npm ci in {}", node.display());
    let installed = std::fs::create_dir_all(&node).is_ok()
        && std::fs::write(node.join("package.json"), &manifests[0]).is_ok()
        && std::fs::write(node.join("package-lock.json"), &manifests[1]).is_ok()
        && works(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&node),
        );
    if installed && std::fs::write(&stamp, manifests.concat()).is_ok() {
        Ok(node)
    } else {
        Err(format!(
            "`npm ci` of {BROWSER_DIR}/package-lock.json failed (is the npm registry reachable?)"
        ))
    }
}

/// Whether PostgreSQL may be installed with apt-get: yes when it already is (`installed`), or
/// with `--yes` / `CI` (`assume_yes`); else the user's answer (`ask`: `None` when no one can be
/// asked, read as no).
fn may_install_postgres(
    installed: bool,
    assume_yes: bool,
    ask: impl FnOnce() -> Option<bool>,
) -> bool {
    installed || assume_yes || ask().unwrap_or(false)
}

/// Asks on the terminal whether to install PostgreSQL with apt-get; `None` when stdin is no
/// terminal.
fn ask_install_postgres() -> Option<bool> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "xtask: PostgreSQL is not installed and there is no terminal to ask: not installing it (pass --yes or set CI to install it with apt-get)"
        );
        return None;
    }
    eprint!(
        "xtask: PostgreSQL is not installed. Install Debian's postgresql, postgresql-client and openssl with apt-get (needs root)? [y/N] "
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).ok()?;
    Some(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// The steps of `cargo xtask ci`; `assume_yes`: install what is missing without asking.
fn ci_steps(assume_yes: bool) -> anyhow::Result<()> {
    cargo_step("cargo fmt --check", &["fmt", "--all", "--", "--check"])?;
    clippy_step("cargo clippy", &["--workspace", "--all-targets"])?;
    // The default build of the binary and its configuration crate (without the `aws-chain`
    // feature the tests turn on).
    clippy_step(
        "cargo clippy -p hermes-cli -p hermes-config (default features)",
        &["-p", "hermes-cli", "-p", "hermes-config"],
    )?;
    // The providers crate (the registries and the kit) alone, and the chat-completions,
    // Anthropic (without its Bedrock door), Gemini and Responses wire crates alone on it (no AWS
    // crate is built for any).
    for package in [
        "hermes-providers",
        "hermes-wire-chat",
        "hermes-wire-anthropic",
        "hermes-wire-gemini",
        "hermes-wire-responses",
    ] {
        let mut check = cargo();
        check.args(["clippy", "-p", package, "--no-default-features"]);
        check.args(["--", "-D", "warnings"]);
        step(
            &format!("cargo clippy -p {package} --no-default-features"),
            check,
        )?;
    }
    without_bedrock()?;
    // The cargo-fuzz targets built on nightly and run a few seconds each (their inputs kept
    // under fuzz/regressions/ run on stable in the test step).
    fuzz::smoke()?;

    // Why a group could not be provisioned, by skip group (see `SKIP_GROUPS`).
    let mut unprovisioned: Vec<(&str, String)> = Vec::new();
    let sdk = provisioned(
        sdk_python(),
        ("sdk", "HERMES_REQUIRE_SDK", "the official SDKs"),
        &mut unprovisioned,
    )?;
    let clients = provision_clients();
    if let Some(why) = clients.why_not() {
        if flag("HERMES_REQUIRE_CLIENTS") {
            bail!("the real clients could not be installed: {why}");
        }
        unprovisioned.push(("clients", why));
    }
    let browser = provisioned(
        provision_browser(assume_yes),
        ("browser", "HERMES_REQUIRE_BROWSER", "the browser"),
        &mut unprovisioned,
    )?;
    let skip_log = std::path::absolute(target_dir().join("xtask-skipped-tests.log"))
        .context("cannot name the skip log")?;
    let table = std::path::absolute(target_dir().join("xtask-clients-table.tsv"))
        .context("cannot name the clients table")?;
    let _ = std::fs::remove_file(&table);
    // The whole workspace, conformance included (both suites are test targets): run once.
    let test = || {
        let mut test = cargo();
        test.args(["test", "--workspace"]);
        if let Some(python) = &sdk {
            test.env("HERMES_SDK_PYTHON", python);
        }
        test.env("HERMES_SKIP_LOG", &skip_log);
        clients.apply(&mut test, &table);
        if let Some(node) = &browser {
            test.env(BROWSER_NODE_VAR, node);
        }
        test
    };
    let _ = std::fs::remove_file(&skip_log);
    // .ci/postgres.sh installs PostgreSQL with apt-get when it is missing: only when allowed.
    let pg_installed = std::path::Path::new("/usr/lib/postgresql").is_dir();
    let no_install = std::env::var_os("HERMES_TEST_PG_URL").is_none()
        && !may_install_postgres(pg_installed, assume_yes, ask_install_postgres);
    let test = || {
        let mut cmd = test();
        if no_install {
            cmd.env("HERMES_PG_NO_INSTALL", "1");
        }
        cmd
    };
    let mut pg_note = "PostgreSQL: HERMES_TEST_PG_URL".to_owned();
    let tally = if std::env::var_os("HERMES_TEST_PG_URL").is_some() {
        run_tests("cargo test --workspace", test())
    } else {
        match run_tests(
            "cargo test --workspace (beside a throwaway PostgreSQL)",
            beside_postgres(&test()),
        ) {
            Ok(tally) => {
                pg_note = "PostgreSQL: a throwaway cluster".to_owned();
                Ok(tally)
            }
            Err(TestsFailed::Code(PG_UNAVAILABLE)) if flag("HERMES_REQUIRE_PG") => {
                bail!("PostgreSQL could not be provisioned (.ci/postgres.sh)")
            }
            Err(TestsFailed::Code(PG_UNAVAILABLE)) => {
                unprovisioned.push((
                    "postgres",
                    "PostgreSQL could not be installed or started (.ci/postgres.sh needs Debian's packages)".to_owned(),
                ));
                pg_note = "PostgreSQL: skipped".to_owned();
                run_tests("cargo test --workspace", test())
            }
            Err(failed) => Err(failed),
        }
    };
    // The table of the real clients' runs, failed ones included.
    print_clients_table(&table);
    let tally = tally?;
    // The API fuzz smoke (Schemathesis, in the SDK venv) against the `hermes` the tests built.
    if sdk.is_some() {
        eprintln!("xtask: the API fuzz smoke (cargo xtask fuzz --api, a few cases per operation)");
        api_fuzz::smoke()?;
    }
    let skipped = std::fs::read_to_string(&skip_log).unwrap_or_default();
    let _ = std::fs::remove_file(&skip_log);
    report(&tally, &skipped, &unprovisioned, &pg_note, sdk.as_deref());
    Ok(())
}

/// `cmd` run by `.ci/with-postgres.sh` (beside a throwaway PostgreSQL it starts and removes),
/// with `cmd`'s environment.
fn beside_postgres(cmd: &Command) -> Command {
    let mut wrapped = Command::new("bash");
    wrapped.arg(".ci/with-postgres.sh").arg(cmd.get_program());
    wrapped.args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

/// `cargo xtask chaos [cli|serve]`: a chaos suite of hermes-cli's tests in release at full size,
/// each size its variable's value when set, else the default given here.
fn chaos(which: Option<&str>) -> anyhow::Result<()> {
    let (filter, sizes): (&str, &[(&str, &str)]) = match which {
        None | Some("cli") => (
            "chaos::",
            &[
                ("HERMES_CHAOS_KILLS", "200"),
                ("HERMES_CHAOS_PROCESSES", "8"),
                ("HERMES_CHAOS_TURNS", "20"),
                ("HERMES_CHAOS_OPENS", "20"),
            ],
        ),
        Some("serve") => (
            "chaos_serve::",
            &[
                ("HERMES_CHAOS_SERVE_CONVERSATIONS", "1000"),
                ("HERMES_CHAOS_SERVE_TURNS", "3"),
                ("HERMES_CHAOS_SERVE_KILLS", "30"),
                ("HERMES_CHAOS_SERVE_CLIENTS", "32"),
            ],
        ),
        Some(other) => bail!("unknown chaos suite `{other}`: `cli` or `serve`\n\n{USAGE}"),
    };
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--release",
        "-p",
        "hermes-cli",
        "--test",
        "it",
        "--",
        filter,
        "--nocapture",
        "--test-threads=1",
    ]);
    for (var, default) in sizes {
        if std::env::var_os(var).is_none() {
            cmd.env(var, default);
        }
    }
    let skip_log = std::path::absolute(target_dir().join("xtask-chaos-skipped.log"))
        .context("cannot name the skip log")?;
    let _ = std::fs::remove_file(&skip_log);
    cmd.env("HERMES_SKIP_LOG", &skip_log);
    let tally = if which != Some("serve") {
        run_tests("chaos", cmd)
    } else {
        // The gateway suite needs PostgreSQL: the one HERMES_TEST_PG_URL names, else a
        // throwaway cluster; without one it fails rather than skipping.
        cmd.env("HERMES_REQUIRE_PG", "1");
        if std::env::var_os("HERMES_TEST_PG_URL").is_some() {
            run_tests("chaos serve", cmd)
        } else {
            run_tests(
                "chaos serve (beside a throwaway PostgreSQL)",
                beside_postgres(&cmd),
            )
        }
    };
    let skipped = std::fs::read_to_string(&skip_log).unwrap_or_default();
    let _ = std::fs::remove_file(&skip_log);
    let tally = tally.map_err(|e| anyhow::anyhow!("chaos ({filter}) failed: {e}"))?;
    ran_something(&format!("chaos ({filter})"), &tally, &skipped).map_err(anyhow::Error::msg)
}

/// `Err` when a test run checked nothing: no test passed (the filter matched none), or every
/// test that passed recorded itself as skipped (`skip_log`, one line per skipped test).
fn ran_something(name: &str, tally: &Tally, skip_log: &str) -> Result<(), String> {
    let skipped = skip_log.lines().filter(|l| !l.trim().is_empty()).count();
    if tally.passed == 0 {
        return Err(format!(
            "{name}: no test ran (does the filter match any test?)"
        ));
    }
    if tally.passed <= skipped {
        return Err(format!(
            "{name}: every test that ran skipped its checks ({skipped} skipped): {}",
            skip_log.lines().collect::<Vec<_>>().join("; ")
        ));
    }
    eprintln!(
        "xtask: {name}: {} test(s) ran and checked something",
        tally.passed - skipped
    );
    Ok(())
}

/// The groups a test can record itself as skipped in (`hermes_test_support::skip::group`), with
/// what they need and how to enable them.
const SKIP_GROUPS: [(&str, &str, &str); 4] = [
    (
        "postgres",
        "PostgreSQL tests (the store suite's second backend, fleet, migrate and TLS tests)",
        "enable with Debian's packages for .ci/postgres.sh, or HERMES_TEST_PG_URL=postgres://…",
    ),
    (
        "sdk",
        "official-SDK evidence tests (request bodies validated by anthropic, openai, botocore, google-genai)",
        "enable with a reachable PyPI, or HERMES_SDK_PYTHON=<a python with .ci/sdk-requirements.txt>",
    ),
    (
        "clients",
        "real-client tests (Claude Code, the AI SDK, the OpenAI Agents SDK, LangChain, pydantic-ai through the gateway)",
        "enable with node and npm, a reachable npm registry and PyPI (`cargo xtask clients` installs them under target/clients/), or HERMES_CLIENTS_NODE / HERMES_CLIENTS_PYTHON",
    ),
    (
        "browser",
        "the inspector's end-to-end test (hermes serve --ui in Debian's headless chromium through playwright-core)",
        "enable with Debian's chromium (`cargo xtask ci --yes` installs it) and a reachable npm registry (playwright-core under target/browser/), or HERMES_BROWSER_NODE",
    ),
];

/// The end of `cargo xtask ci`: how many tests ran and checked something, and a loud block
/// naming every group whose tests skipped (counted from the skip log), why, and how to enable it.
fn report(
    tally: &Tally,
    skip_log: &str,
    unprovisioned: &[(&str, String)],
    pg_note: &str,
    sdk: Option<&std::path::Path>,
) {
    let skipped_total = skip_log.lines().filter(|l| !l.trim().is_empty()).count();
    eprintln!(
        "xtask: tests: {} passed, of which {} checked something and {skipped_total} skipped; {} ignored",
        tally.passed,
        tally.passed.saturating_sub(skipped_total),
        tally.ignored
    );
    let lines = skipped_lines(skip_log, unprovisioned);
    if lines.is_empty() {
        eprintln!(
            "xtask: every test group ran ({pg_note}; official SDKs: {})",
            sdk.map_or_else(String::new, |p| p.display().to_string())
        );
        return;
    }
    eprintln!(
        "\nxtask: ============ SKIPPED TESTS (they passed without checking anything) ============"
    );
    for line in &lines {
        eprintln!("xtask: SKIPPED {line}");
    }
    eprintln!(
        "xtask: ==================================================================================="
    );
}

/// One line per group that skipped tests or could not be provisioned: how many tests skipped,
/// what the group is, why it did not run and how to enable it. Records of an unknown group are
/// listed as they are.
fn skipped_lines(skip_log: &str, unprovisioned: &[(&str, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (group, what, enable) in SKIP_GROUPS {
        let n = skip_log
            .lines()
            .filter(|line| line.split('\t').next() == Some(group))
            .count();
        let why = unprovisioned
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, why)| why.as_str());
        if n == 0 && why.is_none() {
            continue;
        }
        let tests = if n == 1 { "test" } else { "tests" };
        lines.push(format!(
            "{group}: {n} {tests} skipped — {what}: {}; {enable}",
            why.unwrap_or("not provisioned")
        ));
    }
    for line in skip_log.lines() {
        let group = line.split('\t').next().unwrap_or_default();
        if !group.is_empty() && !SKIP_GROUPS.iter().any(|(g, _, _)| *g == group) {
            lines.push(line.replace('\t', ": "));
        }
    }
    lines
}

/// What libtest reported over all test binaries of a run.
#[derive(Default)]
struct Tally {
    passed: usize,
    ignored: usize,
}

/// Why a test run did not succeed.
#[derive(Debug)]
enum TestsFailed {
    /// It could not be started or read.
    Start(String),
    /// It ended with this exit code (none: killed by a signal).
    Code(i32),
}

impl std::fmt::Display for TestsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TestsFailed::Start(why) => write!(f, "{why}"),
            TestsFailed::Code(code) => write!(f, "the tests failed (exit code {code})"),
        }
    }
}

impl std::error::Error for TestsFailed {}

/// Runs a test command, passing its output through and adding up libtest's
/// `test result: ok. N passed; M failed; K ignored; …` lines.
fn run_tests(name: &str, mut cmd: Command) -> Result<Tally, TestsFailed> {
    eprintln!("xtask: {name}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| TestsFailed::Start(format!("cannot start {name}: {e}")))?;
    let mut tally = Tally::default();
    pass_lines_through(&mut child, |line| {
        if let Some(result) = line.strip_prefix("test result: ") {
            tally.passed += field(result, "passed");
            tally.ignored += field(result, "ignored");
        }
    });
    let status = child
        .wait()
        .map_err(|e| TestsFailed::Start(format!("{name}: {e}")))?;
    match status.code() {
        Some(0) => Ok(tally),
        code => Err(TestsFailed::Code(code.unwrap_or(-1))),
    }
}

/// The number before ` NAME` in a libtest result line (`ok. 12 passed; 0 failed; …`).
fn field(result: &str, name: &str) -> usize {
    result
        .split([';', '.'])
        .filter_map(|part| part.trim().strip_suffix(name))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The target directory cargo builds into (`CARGO_TARGET_DIR`, or `target`).
fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| std::path::PathBuf::from("target"), Into::into)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(&args[1..]),
        Some("clients") => clients(),
        Some("conformance") => conformance(&args[1..]),
        Some("chaos") => chaos(args.get(1).map(String::as_str)),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => {
            // The whole-process preview figure runs the release `hermes` binary.
            let mut build = cargo();
            build.args(["build", "--release", "--quiet", "-p", "hermes-cli"]);
            step("build hermes (release)", build)?;
            let bin = std::path::absolute(target_dir().join("release").join("hermes"))?;
            let mut cmd = cargo();
            cmd.args(["run", "--release", "--quiet", "-p", "hermes-bench", "--"]);
            cmd.args(&args[1..]);
            if args.get(1).map(String::as_str) == Some("serve") {
                // Its PostgreSQL cluster, servers' homes and LiteLLM's venv go under the target
                // directory (never committed, never a dependency).
                let target = std::path::absolute(target_dir())?;
                cmd.arg(format!(
                    "--work-dir={}",
                    target.join("bench-serve").display()
                ));
                cmd.arg(format!(
                    "--litellm-venv={}",
                    target.join("litellm-venv").display()
                ));
            }
            cmd.env("HERMES_BIN", bin);
            step("bench", cmd)
        }
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aws_crates_of_a_tree_listing_are_named_once() {
        let tree = "hermes-cli v0.1.0 (/work/crates/hermes-cli)
anyhow v1.0.100
aws-sigv4 v1.6.4
aws-credential-types v1.3.1
hermes-providers v0.1.0 (/work/crates/hermes-providers)
aws-credential-types v1.3.1 (*)
aws-smithy-runtime-api v1.9.2
aws-smithy-runtime-api-macros v1.0.0 (proc-macro)
not-aws-sigv4 v0.1.0
";
        assert_eq!(
            aws_crates(tree),
            [
                "aws-credential-types",
                "aws-sigv4",
                "aws-smithy-runtime-api",
                "aws-smithy-runtime-api-macros"
            ]
        );
        assert!(
            aws_crates(
                "hermes-cli v0.1.0 (/w)
serde v1.0.0

"
            )
            .is_empty()
        );
    }

    #[test]
    fn libtest_result_lines_are_added_up_by_field() {
        let line =
            "ok. 12 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        assert_eq!(field(line, "passed"), 12);
        assert_eq!(field(line, "ignored"), 3);
        assert_eq!(field(line, "failed"), 0);
    }

    #[test]
    fn postgres_is_installed_only_when_allowed() {
        let asked = std::cell::Cell::new(false);
        let ask = |answer: Option<bool>| {
            let asked = &asked;
            move || {
                asked.set(true);
                answer
            }
        };
        assert!(may_install_postgres(true, false, ask(Some(false))));
        assert!(!asked.get(), "installed: nothing to ask");
        assert!(may_install_postgres(false, true, ask(Some(false))));
        assert!(!asked.get(), "--yes or CI: nothing asked");
        assert!(may_install_postgres(false, false, ask(Some(true))));
        assert!(asked.get());
        assert!(!may_install_postgres(false, false, ask(Some(false))));
        assert!(
            !may_install_postgres(false, false, ask(None)),
            "no terminal: no"
        );
    }

    #[test]
    fn a_harness_that_ran_nothing_fails() {
        let none = Tally::default();
        assert!(ran_something("chaos", &none, "").is_err());
        let one = Tally {
            passed: 1,
            ignored: 0,
        };
        assert!(ran_something("chaos", &one, "").is_ok());
        let err = ran_something("chaos", &one, "postgres\tchaos_serve::x\n").unwrap_err();
        assert!(err.contains("skipped"), "{err}");
    }

    #[test]
    fn conformance_fails_on_an_unknown_route_or_no_check() {
        let mut run = ConformanceRun::default();
        run.read("live route -> simulator profile:\n0 passed, 0 failed\n");
        let err = run.verdict(&["no-such-route".to_owned()]).unwrap_err();
        assert!(err.contains("no-such-route"), "{err}");
        assert!(run.verdict(&[]).is_err());
        run.read("route deepseek-v4: 3 cases, 9 invariants, 2 live ... ok\n14 passed, 0 failed\n");
        assert_eq!(run.passed, 14);
        assert!(run.verdict(&["deepseek-v4".to_owned()]).is_ok());
        assert!(run.verdict(&[]).is_ok());
        assert!(
            run.verdict(&["deepseek-v4".to_owned(), "nope".to_owned()])
                .is_err()
        );
    }

    #[test]
    fn the_clients_table_aligns_sorted_rows_under_its_header() {
        let rows = "zed\t1.0\t/v1/messages\tm\tanthropic\t6\t6\tok\n\
                    AI SDK\tai 6\t/v1/chat/completions\tmodel-x\tdeepseek-v4\t12\t11\tFAILED\n";
        let table = clients_table(rows).unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].starts_with("client  version  door "), "{table}");
        assert!(
            lines[1].starts_with("AI SDK  ai 6     /v1/chat/completions  model-x"),
            "{table}"
        );
        assert!(lines[1].ends_with("12        11        FAILED"), "{table}");
        assert!(
            lines[2].starts_with("zed     1.0      /v1/messages "),
            "{table}"
        );
        assert_eq!(clients_table("\n"), None);
    }

    #[test]
    fn skipped_tests_are_counted_per_group_with_why_and_how_to_enable() {
        let log = "postgres\tstore::a\npostgres\tstore::b\nsdk\tsdk_gemini::c\n";
        let lines = skipped_lines(log, &[("postgres", "no Debian".to_owned())]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("postgres: 2 tests skipped — PostgreSQL tests"));
        assert!(
            lines[0].contains(": no Debian; enable with"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("sdk: 1 test skipped — official-SDK"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("HERMES_SDK_PYTHON"), "{}", lines[1]);
        assert!(skipped_lines("", &[]).is_empty());
        assert_eq!(skipped_lines("pty\tcli::repl\n", &[]), ["pty: cli::repl"]);
    }
}
