//! Replays, on stable, every input kept for the fuzz targets: the minimised crashes under
//! `regressions/<target>/` (each a bug found and fixed) and the seed corpora under
//! `seeds/<target>/`. A folder named after no target, or no input at all, fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// The inputs under `dir/<target>/`, by target; panics on a folder that names no target.
fn inputs(dir: &str) -> Vec<(hermes_fuzz::Target, std::path::PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = Vec::new();
    for folder in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let folder = folder.unwrap().path();
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let Some(&(_, target)) = hermes_fuzz::TARGETS.iter().find(|(n, _)| *n == name) else {
            panic!("{}: no fuzz target is named {name}", folder.display());
        };
        for file in std::fs::read_dir(&folder).unwrap() {
            out.push((target, file.unwrap().path()));
        }
    }
    out
}

fn replay(dir: &str) -> usize {
    let all = inputs(dir);
    for (target, path) in &all {
        let bytes = std::fs::read(path).unwrap();
        let result = std::panic::catch_unwind(|| target(&bytes));
        assert!(result.is_ok(), "{} crashes its target", path.display());
    }
    all.len()
}

#[test]
fn every_kept_crash_input_passes_its_target() {
    let n = replay("regressions");
    assert!(n > 0, "no regression input under fuzz/regressions/");
}

#[test]
fn every_seed_passes_its_target() {
    let n = replay("seeds");
    assert!(n > 0, "no seed under fuzz/seeds/");
}

#[test]
fn every_target_has_its_cargo_fuzz_target_and_seeds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(root.join("cargo-fuzz/fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut names: Vec<String> = hermes_fuzz::TARGETS
        .iter()
        .map(|(n, _)| format!("{n}.rs"))
        .collect();
    names.sort();
    assert_eq!(
        files, names,
        "fuzz/cargo-fuzz/fuzz_targets/ and TARGETS differ"
    );
    for (name, _) in hermes_fuzz::TARGETS {
        let body = std::fs::read_to_string(root.join(format!("cargo-fuzz/fuzz_targets/{name}.rs")))
            .unwrap();
        assert!(
            body.contains(&format!("hermes_fuzz::{name}(data)")),
            "{name}.rs does not call hermes_fuzz::{name}"
        );
        let seeds = std::fs::read_dir(root.join("seeds").join(name))
            .map(Iterator::count)
            .unwrap_or(0);
        assert!(seeds > 0, "no seed for {name} under fuzz/seeds/{name}/");
    }
}
