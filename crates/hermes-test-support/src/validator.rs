//! Checking request bodies with an official SDK's validator script, for the SDK-evidence tests:
//! reading the script's verdicts, and the negative controls that prove it refuses what it must
//! (a body with an unknown key added at one object, at every object in turn).

use serde_json::{Map, Value, json};

/// The verdicts of a validator script that checked `count` requests: one per request, `None` for
/// an output line `ok`, the reason for a line `invalid REASON`. `code`, `stdout` and `stderr` are
/// the script's exit code and output.
///
/// # Panics
/// When the script did not run to its end (exit code other than 0, all valid, or 1, some not),
/// printed another line or another number of lines, or its exit code disagrees with its lines.
pub fn verdicts(
    code: Option<i32>,
    stdout: &str,
    stderr: &str,
    count: usize,
) -> Vec<Option<String>> {
    assert!(
        matches!(code, Some(0 | 1)),
        "the validator failed to run ({code:?}): {stderr}"
    );
    let verdicts: Vec<Option<String>> = stdout
        .lines()
        .map(|line| {
            if line == "ok" {
                None
            } else {
                Some(
                    line.strip_prefix("invalid ")
                        .unwrap_or_else(|| panic!("unexpected validator line {line:?}"))
                        .to_owned(),
                )
            }
        })
        .collect();
    assert_eq!(verdicts.len(), count, "{stdout}");
    assert_eq!(
        code == Some(0),
        verdicts.iter().all(Option::is_none),
        "exit status and verdicts disagree: {stderr}"
    );
    verdicts
}

/// A copy of `body` with `key: true` added to the object at `path` (steps: an object's key as a
/// string, an array's index as a number; see [`at`]).
///
/// # Panics
/// When `path` does not lead to an object.
pub fn inject(body: &Value, path: &[Value], key: &str) -> Value {
    let mut copy = body.clone();
    let mut node = &mut copy;
    for step in path {
        node = match step {
            Value::String(name) => &mut node[name.as_str()],
            Value::Number(i) => &mut node[usize::try_from(i.as_u64().unwrap()).unwrap()],
            other => panic!("a path step is a key or an index, not {other}"),
        };
    }
    node.as_object_mut()
        .unwrap_or_else(|| panic!("no object at {path:?}"))
        .insert(key.to_owned(), json!(true));
    copy
}

/// The path of every object in `value`, itself first, as [`inject`] takes it. A member for which
/// `free_form(object, key)` holds is not entered: its keys are data (a tool call's arguments, a
/// JSON Schema), where any key is valid.
pub fn object_paths(
    value: &Value,
    free_form: &dyn Fn(&Map<String, Value>, &str) -> bool,
) -> Vec<Vec<Value>> {
    fn walk(
        value: &Value,
        free_form: &dyn Fn(&Map<String, Value>, &str) -> bool,
        path: &mut Vec<Value>,
        out: &mut Vec<Vec<Value>>,
    ) {
        match value {
            Value::Object(map) => {
                out.push(path.clone());
                for (key, v) in map {
                    if free_form(map, key) {
                        continue;
                    }
                    path.push(json!(key));
                    walk(v, free_form, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    path.push(json!(i));
                    walk(v, free_form, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, free_form, &mut Vec::new(), &mut out);
    out
}

/// Where `key` lands when injected at `path`, in dots: `contents.3.parts.KEY`.
pub fn dotted(path: &[Value], key: &str) -> String {
    path.iter()
        .map(|s| match s {
            Value::String(k) => k.clone(),
            other => other.to_string(),
        })
        .chain(std::iter::once(key.to_owned()))
        .collect::<Vec<_>>()
        .join(".")
}

/// A path for [`inject`] from its steps as text: a step that is a number is an array index.
pub fn at(steps: &[&str]) -> Vec<Value> {
    steps
        .iter()
        .map(|s| s.parse::<u64>().map_or_else(|_| json!(s), |i| json!(i)))
        .collect()
}

/// What makes the control at `path` of `body` the same as one already made: the path, and the
/// item it lies in (the top-level member, or the item of a top-level array: a message, a
/// Content, an input item; the whole body for the top level). What a validator checks at an
/// object depends on the path there and that item only, so one control per distinct key proves
/// the validator sees it, however many bodies share it (bodies that differ only in thinking
/// share their turns).
pub fn sweep_key(body: &Value, path: &[Value]) -> (String, String) {
    let item_end = match path.get(1) {
        Some(Value::Number(_)) => 2,
        _ => path.len().min(1),
    };
    let mut item = body;
    for step in &path[..item_end] {
        item = match step {
            Value::String(key) => &item[key.as_str()],
            index => &item[usize::try_from(index.as_u64().unwrap()).unwrap()],
        };
    }
    (dotted(path, ""), item.to_string())
}

/// One body a validator checks: the row it comes from, and for a negative control the path of
/// the injected key.
pub struct Check<'a, R> {
    /// The row whose body this is (it names the check when it fails).
    pub row: &'a R,
    /// Where the probe key was injected (a negative control), or `None` (the body as encoded).
    pub injected_at: Option<Vec<Value>>,
    /// The body to validate.
    pub body: Value,
}

/// The checks of `rows` (each with its body): every body as it is, then `probe` injected at
/// each of its objects (see [`object_paths`]) whose [`sweep_key`] is not in `seen` yet.
///
/// # Panics
/// When a body has fewer than `min_objects` objects to sweep.
pub fn sweep<'a, R: std::fmt::Display>(
    rows: impl IntoIterator<Item = (&'a R, Value)>,
    free_form: &dyn Fn(&Map<String, Value>, &str) -> bool,
    probe: &str,
    min_objects: usize,
) -> Vec<Check<'a, R>> {
    let mut seen = std::collections::HashSet::new();
    let mut checks = Vec::new();
    for (row, body) in rows {
        let paths = object_paths(&body, free_form);
        assert!(
            paths.len() >= min_objects,
            "{row}: too few objects to sweep: {body}"
        );
        for path in paths {
            if seen.insert(sweep_key(&body, &path)) {
                checks.push(Check {
                    row,
                    body: inject(&body, &path, probe),
                    injected_at: Some(path),
                });
            }
        }
        checks.push(Check {
            row,
            injected_at: None,
            body,
        });
    }
    checks
}

/// What went wrong with `checks` given the validator's `verdicts` (in order), each naming its
/// row: a body refused, a control accepted, or a control refused for a reason `names(path,
/// reason)` says does not name the injected key's place.
pub fn failures<R: std::fmt::Display>(
    checks: &[Check<'_, R>],
    verdicts: Vec<Option<String>>,
    probe: &str,
    names: &dyn Fn(&[Value], &str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for (check, verdict) in checks.iter().zip(verdicts) {
        let row = check.row;
        match (&check.injected_at, verdict) {
            (None, None) => {}
            (None, Some(reason)) => out.push(format!(
                "{row}: the SDK's validator refuses hermes' body: {reason}"
            )),
            (Some(path), None) => out.push(format!(
                "{row}: the validator accepted an unknown key at {}",
                dotted(path, probe)
            )),
            (Some(path), Some(reason)) if !names(path, &reason) => out.push(format!(
                "{row}: the refusal of the key at {} does not name it: {reason}",
                dotted(path, probe)
            )),
            (Some(_), Some(_)) => {}
        }
    }
    out
}
