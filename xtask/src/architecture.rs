//! ARCHITECTURE.md's dependency diagram checked against the workspace's Cargo manifests.
//!
//! The diagram (the first fenced block under `## Dependency direction`) has one line per
//! workspace member: `name ──► dep, dep, …`, with `(…)` asides that are not read. Its edges must
//! be exactly the members' normal dependencies (`[dependencies]` and `[target.*.dependencies]`,
//! optional ones included; dev- and build-dependencies are not edges) on other members.
//!
//! Beside it, tidy checks of the documents' mechanical rules: ARCHITECTURE.md at most
//! [`ARCHITECTURE_MAX_BYTES`] and README.md at most [`README_MAX_BYTES`], and no line of
//! ARCHITECTURE.md or of a page under `docs/internals/` over [`MAX_LINE_CHARS`] characters. The
//! code's mechanical rules (module circles, environment and printing) are `tidy`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Edges: each crate's name → the workspace members it depends on.
type Edges = BTreeMap<String, BTreeSet<String>>;

/// The heading whose first fenced block is the diagram.
const HEADING: &str = "## Dependency direction";

/// ARCHITECTURE.md's size limit, in bytes: a map one reads whole (issue 51).
const ARCHITECTURE_MAX_BYTES: usize = 25_000;

/// README.md's size limit, in bytes.
const README_MAX_BYTES: usize = 20_000;

/// The longest line, in characters, of ARCHITECTURE.md and of every page under `docs/internals/`.
const MAX_LINE_CHARS: usize = 200;

/// Every way `text` (the file `name`) breaks the size limit `max_bytes` (when given) or the line
/// limit `max_line_chars` (when given), one line each naming the file, the line and the limit.
fn over_limits(
    name: &str,
    text: &str,
    max_bytes: Option<usize>,
    max_line_chars: Option<usize>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(max) = max_bytes.filter(|&max| text.len() > max) {
        out.push(format!(
            "{name} is {} bytes, over the limit of {max} bytes",
            text.len()
        ));
    }
    if let Some(max) = max_line_chars {
        for (n, line) in text.lines().enumerate() {
            let chars = line.chars().count();
            if chars > max {
                out.push(format!(
                    "{name}:{}: the line is {chars} characters, over the limit of {max}",
                    n + 1
                ));
            }
        }
    }
    out
}

/// The Markdown files under `dir`, at any depth, sorted.
fn markdown_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            out.extend(markdown_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// The diagram's edges, read from ARCHITECTURE.md's text.
fn diagram_edges(architecture: &str) -> Result<Edges, String> {
    let section = architecture
        .split_once(HEADING)
        .ok_or_else(|| format!("ARCHITECTURE.md has no `{HEADING}` section"))?
        .1;
    let block = section
        .split_once("```")
        .and_then(|(_, rest)| rest.split_once("```"))
        .ok_or_else(|| format!("`{HEADING}` has no fenced diagram"))?
        .0;
    let mut edges = Edges::new();
    for (n, line) in block.lines().enumerate().skip(1) {
        let line = without_asides(line);
        if line.trim().is_empty() {
            continue;
        }
        let (from, to) = line
            .split_once('►')
            .ok_or_else(|| format!("diagram line {n} has no `──►`: `{}`", line.trim()))?;
        let from = from.trim().trim_end_matches('─').trim();
        if from.is_empty() || from.contains(char::is_whitespace) {
            return Err(format!(
                "diagram line {n} names no one crate before `──►`: `{}`",
                line.trim()
            ));
        }
        let deps: BTreeSet<String> = to
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
            .collect();
        if edges.insert(from.to_owned(), deps).is_some() {
            return Err(format!("the diagram has two lines for `{from}`"));
        }
    }
    Ok(edges)
}

/// `line` without its parenthesised asides (nested ones included).
fn without_asides(line: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in line.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The manifests' edges: every workspace member (the root manifest's `members`) and the
/// members among its normal dependencies.
fn manifest_edges(root: &Path) -> Result<Edges, String> {
    let read = |path: &Path| -> Result<toml::Table, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        text.parse::<toml::Table>()
            .map_err(|e| format!("{} is not TOML: {e}", path.display()))
    };
    let workspace = read(&root.join("Cargo.toml"))?;
    let members = workspace
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(toml::Value::as_array)
        .ok_or("the root Cargo.toml has no `workspace.members`")?;
    let mut manifests = Vec::new();
    for member in members {
        let dir = member
            .as_str()
            .ok_or_else(|| format!("a workspace member is not a path: {member}"))?;
        let path = root.join(dir).join("Cargo.toml");
        let manifest = read(&path)?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .ok_or_else(|| format!("{} has no `package.name`", path.display()))?
            .to_owned();
        manifests.push((name, manifest));
    }
    let names: BTreeSet<&str> = manifests.iter().map(|(n, _)| n.as_str()).collect();
    let mut edges = Edges::new();
    for (name, manifest) in &manifests {
        let targets = manifest
            .get("target")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flat_map(|t| t.values())
            .filter_map(|t| t.get("dependencies"));
        let tables = manifest.get("dependencies").into_iter().chain(targets);
        let mut deps = BTreeSet::new();
        for table in tables.filter_map(toml::Value::as_table) {
            for (key, spec) in table {
                // A renamed dependency names its package in `package`.
                let package = spec
                    .get("package")
                    .and_then(toml::Value::as_str)
                    .unwrap_or(key);
                if names.contains(package) {
                    deps.insert(package.to_owned());
                }
            }
        }
        edges.insert(name.clone(), deps);
    }
    Ok(edges)
}

/// Every difference between the diagram and the manifests, one line each (empty: they agree).
fn differences(diagram: &Edges, manifests: &Edges) -> Vec<String> {
    let mut out = Vec::new();
    for name in diagram.keys().filter(|n| !manifests.contains_key(*n)) {
        out.push(format!(
            "the diagram has a line for `{name}`, which is no workspace member"
        ));
    }
    for (name, deps) in manifests {
        let Some(drawn) = diagram.get(name) else {
            out.push(format!(
                "workspace member `{name}` has no line in the diagram"
            ));
            continue;
        };
        for dep in deps.difference(drawn) {
            out.push(format!(
                "{name} ──► {dep} is in {name}'s Cargo.toml but not in the diagram"
            ));
        }
        for dep in drawn.difference(deps) {
            out.push(format!(
                "{name} ──► {dep} is in the diagram but not among {name}'s [dependencies]"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_architecture_diagram_has_exactly_the_manifests_dependency_edges() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root");
        let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
        let diagram = diagram_edges(&text).unwrap_or_else(|e| panic!("{e}"));
        let manifests = manifest_edges(root).unwrap_or_else(|e| panic!("{e}"));
        let wrong = differences(&diagram, &manifests);
        assert!(
            wrong.is_empty(),
            "ARCHITECTURE.md's dependency diagram disagrees with the manifests:\n{}",
            wrong.join("\n")
        );
    }

    /// The workspace root.
    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root")
    }

    /// The text of `relative` (a path from the workspace root).
    fn read(relative: &str) -> String {
        std::fs::read_to_string(root().join(relative))
            .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
    }

    #[test]
    fn architecture_md_is_at_most_25_kb_with_no_line_over_200_characters() {
        let wrong = over_limits(
            "ARCHITECTURE.md",
            &read("ARCHITECTURE.md"),
            Some(ARCHITECTURE_MAX_BYTES),
            Some(MAX_LINE_CHARS),
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn no_line_of_docs_internals_is_over_200_characters() {
        let dir = root().join("docs/internals");
        let files = markdown_files(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !files.is_empty(),
            "{} holds no Markdown file",
            dir.display()
        );
        let mut wrong = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let name = path
                .strip_prefix(root())
                .unwrap_or(&path)
                .display()
                .to_string();
            wrong.extend(over_limits(&name, &text, None, Some(MAX_LINE_CHARS)));
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// What a citation of a document outside the repository looks like (the brief's shared
    /// `SPEC.md` and `PROVIDERS.md`, the folder beside the clone).
    const OUTSIDE: [&str; 5] = [
        "SPEC §",
        "SPEC.md",
        "PROVIDERS.md",
        "../shared/",
        "shared/bench/",
    ];

    /// The lines of the files under `dir` (walked, build output and dependencies left out)
    /// that cite a document outside the repository, as `PATH:LINE: text`.
    fn outside_citations(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                // Released migrations keep their text (sqlx checksums it); docs/spec.md says
                // what their `SPEC §N` means.
                let skipped = [
                    "target",
                    ".git",
                    "node_modules",
                    "migrations",
                    "corpus",
                    "artifacts",
                ];
                if !skipped.contains(&name.as_str()) {
                    outside_citations(&path, out);
                }
                continue;
            }
            let checked = [
                "rs", "py", "sh", "js", "mjs", "ts", "toml", "json", "md", "yaml", "yml",
            ];
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !checked.contains(&ext) && name != "run" && name != "Dockerfile" {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let shown = path
                .strip_prefix(root())
                .unwrap_or(&path)
                .display()
                .to_string();
            if shown == "xtask/src/architecture.rs" || shown == "docs/spec.md" {
                continue;
            }
            for (i, line) in text.lines().enumerate() {
                if OUTSIDE.iter().any(|o| line.contains(o)) {
                    out.push(format!("{shown}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }

    #[test]
    fn nothing_in_the_repository_cites_a_document_outside_it() {
        let mut wrong = Vec::new();
        outside_citations(root(), &mut wrong);
        assert!(
            wrong.is_empty(),
            "these lines cite documents a clone does not have (cite docs/spec.md, \
             docs/providers.md or docs/bench-baseline.md):\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn readme_md_is_at_most_20_kb() {
        let wrong = over_limits(
            "README.md",
            &read("README.md"),
            Some(README_MAX_BYTES),
            None,
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_file_over_its_limits_is_named_with_the_line_and_the_limit() {
        let text = format!("short\n{}\n{}\nshort\n", "é".repeat(6), "a".repeat(5));
        assert_eq!(
            over_limits("X.md", &text, Some(20), Some(5)),
            [
                "X.md is 31 bytes, over the limit of 20 bytes",
                "X.md:2: the line is 6 characters, over the limit of 5",
            ]
        );
        assert!(over_limits("X.md", &text, Some(31), Some(6)).is_empty());
        assert!(over_limits("X.md", &text, None, None).is_empty());
    }

    #[test]
    fn a_missing_and_an_extra_edge_are_each_named() {
        let text = "# A\n\n## Dependency direction\n\n```\n\
            a ──► b (and an aside, with a comma), c\n\
            b ────► (nothing)\n\
            c ─► \n\
            ```\n";
        let diagram = diagram_edges(text).unwrap();
        assert_eq!(
            diagram["a"],
            BTreeSet::from(["b".to_owned(), "c".to_owned()])
        );
        assert!(diagram["b"].is_empty());
        let manifests = Edges::from([
            ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
            ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
            ("c".to_owned(), BTreeSet::new()),
            ("d".to_owned(), BTreeSet::new()),
        ]);
        assert_eq!(
            differences(&diagram, &manifests),
            [
                "a ──► c is in the diagram but not among a's [dependencies]",
                "b ──► c is in b's Cargo.toml but not in the diagram",
                "workspace member `d` has no line in the diagram",
            ]
        );
    }

    #[test]
    fn a_diagram_line_without_an_arrow_is_an_error_naming_it() {
        let text = "## Dependency direction\n```\na ──► b\nc, d\n```\n";
        let err = diagram_edges(text).unwrap_err();
        assert!(err.contains("`c, d`"), "{err}");
    }
}
