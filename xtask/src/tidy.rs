//! Tidy checks of the code's mechanical rules (issue 51), beside `architecture`'s of the documents:
//!
//! - no module circle: no two (or more) source files of one crate that each use an item of the
//!   other through a `crate::`, `super::` or `self::` path, resolved to the deepest file it names
//!   (a port of the Python tool the issue used, which resolved only to top-level modules);
//! - no environment and no printing in the library crates' non-test code: no `env::var*`,
//!   `env::args*`, `env::set_var` or `env::remove_var` (hermes-config reads the environment by
//!   design and is held only to no argv), no `println!`, `print!`, `eprintln!`, `eprint!` or
//!   `dbg!` — the invariants ARCHITECTURE.md gives each crate;
//! - no function in a wire crate (hermes-providers, hermes-wire-*) over [`MAX_FN_LINES`] lines, from its `fn`
//!   line to its closing brace.
//!
//! The source is read as text, simply: comments and the insides of string and character
//! literals are blanked first, then every item under `#[cfg(test)]` (and the files of a module
//! declared under it), and files named `tests*` or under a `tests*` folder are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Rust source with every comment and the inside of every string and character literal
/// replaced by spaces, line breaks kept, so what is left is code on the file's own lines.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(c) = at(i) {
        let next = at(i + 1);
        if c == '/' && next == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while let Some(c) = at(i) {
                if c == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c));
                    i += 1;
                }
            }
        } else if let Some(hashes) =
            raw_string_at(&chars, i).filter(|_| i == 0 || !ident(chars[i - 1]))
        {
            // `r#"…"#`, `br"…"`: the prefix kept, the inside blanked up to `"` and the hashes.
            while at(i) != Some('"') {
                out.push(chars[i]);
                i += 1;
            }
            out.push('"');
            i += 1;
            while let Some(c) = at(i) {
                if c == '"' && (1..=hashes).all(|k| at(i + k) == Some('#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n('#', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(c));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while let Some(c) = at(i) {
                i += 1;
                if c == '\\' {
                    out.push(' ');
                    if let Some(escaped) = at(i) {
                        out.push(blank(escaped));
                        i += 1;
                    }
                } else if c == '"' {
                    out.push('"');
                    break;
                } else {
                    out.push(blank(c));
                }
            }
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: `'\n'`, `'\u{1F600}'`.
            out.push('\'');
            i += 1;
            while let Some(c) = at(i) {
                i += 1;
                if c == '\'' {
                    out.push('\'');
                    break;
                }
                out.push(' ');
            }
        } else if c == '\'' && at(i + 2) == Some('\'') {
            out.push_str("' '");
            i += 3;
        } else {
            // Code, a lifetime's `'` included.
            out.push(c);
            i += 1;
        }
    }
    out
}

/// How many `#` a raw string starting at `i` has (`r"`, `r#"`, `br##"`, `cr"`), if one does.
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// What marks test-only code.
const CFG_TEST: &str = "#[cfg(test)]";

/// `code` (from [`code_only`]) with every item under `#[cfg(test)]` blanked (line breaks kept),
/// and the names of the modules declared there as `mod NAME;` (their files are tests too).
fn without_test_items(code: &str) -> (String, Vec<String>) {
    let mut bytes = code.as_bytes().to_vec();
    let mut test_modules = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(CFG_TEST) {
        let start = from + found;
        let mut j = start + CFG_TEST.len();
        // Further attributes, then the item up to its `;` or its closing brace.
        loop {
            while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
                j += 1;
            }
            if !code[j..].starts_with("#[") {
                break;
            }
            j = past_closing(&bytes, j + 1, b'[', b']');
        }
        let item_start = j;
        let mut depth = 0usize;
        let end = loop {
            match bytes.get(j) {
                None => break j,
                Some(b'(' | b'[') => depth += 1,
                Some(b')' | b']') => depth = depth.saturating_sub(1),
                Some(b';') if depth == 0 => break j + 1,
                Some(b'{') if depth == 0 => break past_closing(&bytes, j, b'{', b'}'),
                _ => {}
            }
            j += 1;
        };
        let item: Vec<&str> = code[item_start..end]
            .trim_end_matches(';')
            .split_whitespace()
            .collect();
        if let [.., "mod", name] = item.as_slice()
            && code[..end].ends_with(';')
        {
            test_modules.push((*name).to_owned());
        }
        for b in &mut bytes[start..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = end.max(start + 1);
    }
    // Only ASCII bytes were written over whole characters' bytes, so this is still UTF-8.
    let text = String::from_utf8(bytes).unwrap_or_default();
    (text, test_modules)
}

/// The index just past the `close` that matches the `open` at `at`.
fn past_closing(bytes: &[u8], at: usize, open: u8, close: u8) -> usize {
    let mut depth = 0usize;
    for (j, &b) in bytes.iter().enumerate().skip(at) {
        if b == open {
            depth += 1;
        } else if b == close {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    bytes.len()
}

/// One token of code: an identifier (or number), `::`, or any other single character.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    line: usize,
}

/// Whether `text` is an identifier (a keyword included).
fn is_ident(text: &str) -> bool {
    text.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// The tokens of `code` (from [`code_only`]), each with its 1-based line.
fn tokens(code: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = code.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut end = start + c.len_utf8();
            while let Some(&(i, c)) = chars.peek() {
                if !(c.is_alphanumeric() || c == '_') {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            out.push(Token {
                text: &code[start..end],
                line,
            });
        } else if c == ':' && chars.peek().is_some_and(|&(_, c)| c == ':') {
            chars.next();
            out.push(Token {
                text: &code[start..start + 2],
                line,
            });
        } else if !c.is_whitespace() {
            out.push(Token {
                text: &code[start..start + c.len_utf8()],
                line,
            });
        }
    }
    out
}

/// A path in code, with the line of its last segment.
type CodePath = (usize, Vec<String>);

/// Reads one `use` tree at `toks[*i]` (after `use`), every path it imports into `out`, with
/// `prefix` before each: `a::{b, c::{d as e, *}}` is `a::b`, `a::c::d` and `a::c`.
fn use_tree(toks: &[Token<'_>], i: &mut usize, prefix: &[String], out: &mut Vec<CodePath>) {
    let mut path = prefix.to_vec();
    let mut line = toks.get(*i).map_or(0, |t| t.line);
    while let Some(t) = toks.get(*i) {
        match t.text {
            "::" => *i += 1,
            "{" => {
                *i += 1;
                while let Some(t) = toks.get(*i) {
                    match t.text {
                        "}" => {
                            *i += 1;
                            break;
                        }
                        "," => *i += 1,
                        ";" => return,
                        _ => {
                            let before = *i;
                            use_tree(toks, i, &path, out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
                return;
            }
            "*" => {
                *i += 1;
                break;
            }
            text if is_ident(text) && text != "as" => {
                path.push(text.to_owned());
                line = t.line;
                *i += 1;
                if toks.get(*i).is_none_or(|t| t.text != "::") {
                    break;
                }
            }
            _ => break,
        }
    }
    if toks.get(*i).is_some_and(|t| t.text == "as") {
        *i += 2;
    }
    if !path.is_empty() {
        out.push((line, path));
    }
}

/// Every path of `toks`: each one a `use` imports, and each `crate::…`, `super::…` or
/// `self::…` path outside them.
fn paths(toks: &[Token<'_>]) -> Vec<CodePath> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        let after_colons = i > 0 && toks[i - 1].text == "::";
        if t.text == "use" {
            i += 1;
            use_tree(toks, &mut i, &[], &mut out);
            while toks.get(i).is_some_and(|t| t.text != ";") {
                i += 1;
            }
        } else if matches!(t.text, "crate" | "super" | "self")
            && !after_colons
            && toks.get(i + 1).is_some_and(|t| t.text == "::")
        {
            let mut path = vec![t.text.to_owned()];
            let mut line = t.line;
            i += 1;
            while toks.get(i).is_some_and(|t| t.text == "::")
                && let Some(segment) = toks.get(i + 1).filter(|t| is_ident(t.text))
            {
                path.push(segment.text.to_owned());
                line = segment.line;
                i += 2;
            }
            out.push((line, path));
            continue;
        }
        i += 1;
    }
    out
}

/// A source file of a crate, as the circle check reads it.
struct Source {
    /// Its path as shown.
    name: String,
    /// Its module path (`[]` for `lib.rs` and `main.rs`, `[a, b]` for `a/b.rs` or `a/b/mod.rs`).
    module: Vec<String>,
    /// Its code, comments, literals and test items blanked.
    code: String,
}

/// The module path of the file at `relative` (from `src/`, `/`-separated, ending `.rs`).
fn module_of(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// The sources of one crate's `src/` from `(path from src/, text)` pairs, shown as
/// `shown_prefix` + the path: files named `tests*` or under a `tests*` folder, and the files of
/// modules declared under `#[cfg(test)]`, left out.
fn sources(shown_prefix: &str, files: &[(String, String)]) -> Vec<Source> {
    let mut test_modules = BTreeSet::new();
    let mut out = Vec::new();
    for (relative, text) in files {
        if relative.split('/').any(|part| part.starts_with("tests")) {
            continue;
        }
        let module = module_of(relative);
        let (code, tests) = without_test_items(&code_only(text));
        for name in tests {
            let mut child = module.clone();
            child.push(name);
            test_modules.insert(child);
        }
        out.push(Source {
            name: format!("{shown_prefix}{relative}"),
            module,
            code,
        });
    }
    out.retain(|s| !test_modules.iter().any(|t| s.module.starts_with(t)));
    out
}

/// The file (index into `sources`) a path used in the file of module `me` names: `crate::`,
/// `super::` and `self::` resolved from `me`, then the deepest module on the path that is a file
/// of its own. The crate root is never one (a use of `crate::X` through a re-export is not a
/// use of `lib.rs`), nor is a path of any other kind.
fn file_named(me: &[String], path: &[String], files: &BTreeMap<&[String], usize>) -> Option<usize> {
    let (mut base, mut rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("super" | "self") => (me.to_vec(), path),
        _ => return None,
    };
    while let Some(first) = rest.first() {
        match first.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    let mut found = files.get(base.as_slice()).copied();
    for segment in rest {
        base.push(segment.clone());
        match files.get(base.as_slice()) {
            Some(&file) => found = Some(file),
            None => break,
        }
    }
    found
}

/// Every file's uses of other files: `from → to → (line, path)` of the first use.
type Uses = BTreeMap<usize, BTreeMap<usize, (usize, String)>>;

/// The uses between `sources`.
fn uses(sources: &[Source]) -> Uses {
    let mut files = BTreeMap::new();
    for (i, s) in sources.iter().enumerate() {
        if !s.module.is_empty() {
            files.entry(s.module.as_slice()).or_insert(i);
        }
    }
    let mut out = Uses::new();
    for (from, s) in sources.iter().enumerate() {
        let edges = out.entry(from).or_default();
        for (line, path) in paths(&tokens(&s.code)) {
            if let Some(to) = file_named(&s.module, &path, &files).filter(|&to| to != from) {
                edges.entry(to).or_insert((line, path.join("::")));
            }
        }
    }
    out
}

/// The strongly connected components of more than one file (Tarjan's), each sorted.
fn circles(uses: &Uses) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        uses: &'a Uses,
        index: BTreeMap<usize, usize>,
        low: BTreeMap<usize, usize>,
        stack: Vec<usize>,
        on_stack: BTreeSet<usize>,
        out: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk<'_>, v: usize) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on_stack.insert(v);
        for &to in w.uses.get(&v).into_iter().flat_map(BTreeMap::keys) {
            if !w.index.contains_key(&to) {
                visit(w, to);
                let low = w.low[&v].min(w.low[&to]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(&to) {
                let low = w.low[&v].min(w.index[&to]);
                w.low.insert(v, low);
            }
        }
        if w.low[&v] == w.index[&v] {
            let mut component = Vec::new();
            while let Some(top) = w.stack.pop() {
                w.on_stack.remove(&top);
                component.push(top);
                if top == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                w.out.push(component);
            }
        }
    }
    let mut walk = Walk {
        uses,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in uses.keys() {
        if !walk.index.contains_key(&v) {
            visit(&mut walk, v);
        }
    }
    walk.out.sort();
    walk.out
}

/// One module circle: its files, and each use that closes it (`file:line uses path (file)`).
#[derive(Debug)]
struct Circle {
    files: Vec<String>,
    uses: Vec<String>,
}

/// The module circles among one crate's `files` (`(path from src/, text)`), shown with
/// `shown_prefix`.
fn module_circles(shown_prefix: &str, files: &[(String, String)]) -> Vec<Circle> {
    let sources = sources(shown_prefix, files);
    let uses = uses(&sources);
    circles(&uses)
        .into_iter()
        .map(|members| {
            let mut lines = Vec::new();
            for &from in &members {
                for (to, (line, path)) in &uses[&from] {
                    if members.contains(to) {
                        lines.push(format!(
                            "{}:{line}: uses `{path}` ({})",
                            sources[from].name, sources[*to].name
                        ));
                    }
                }
            }
            Circle {
                files: members.iter().map(|&i| sources[i].name.clone()).collect(),
                uses: lines,
            }
        })
        .collect()
}

/// The `.rs` files under `dir`, as `(path from dir, text)`, sorted.
fn rust_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let entries =
            std::fs::read_dir(&at).unwrap_or_else(|e| panic!("cannot read {}: {e}", at.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                let relative: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push((relative.join("/"), text));
            }
        }
    }
    out.sort();
    out
}

/// What a library crate's invariants forbid its non-test code.
#[derive(Clone, Copy)]
struct Forbidden {
    /// Reading (or setting) environment variables: `env::var*`, `env::set_var`, `env::remove_var`.
    environment: bool,
    /// Reading argv (`env::args*`) and printing (`println!` and its kin, `dbg!`).
    argv_and_printing: bool,
}

/// The library crates and what ARCHITECTURE.md's invariants forbid each.
const LIBRARIES: [(&str, Forbidden); 14] = {
    const ALL: Forbidden = Forbidden {
        environment: true,
        argv_and_printing: true,
    };
    [
        ("crates/hermes-core", ALL),
        ("crates/hermes-providers", ALL),
        ("crates/hermes-aws", ALL),
        ("crates/hermes-wire-chat", ALL),
        ("crates/hermes-wire-anthropic", ALL),
        ("crates/hermes-wire-bedrock", ALL),
        ("crates/hermes-wire-gemini", ALL),
        ("crates/hermes-wire-responses", ALL),
        ("crates/hermes-store", ALL),
        ("crates/hermes-compaction", ALL),
        ("crates/hermes-engine", ALL),
        ("crates/hermes-serve", ALL),
        // Its job is reading `$HERMES_HOME`, keys and AWS's variables; it never prints or reads
        // argv.
        (
            "crates/hermes-config",
            Forbidden {
                environment: false,
                argv_and_printing: true,
            },
        ),
        // Its library; `src/main.rs` is `hermes-sim`'s binary, which may.
        ("crates/hermes-sim", ALL),
    ]
};

/// The environment functions, and whether each reads argv (else the environment).
const ENV_FUNCTIONS: [(&str, bool); 8] = [
    ("var", false),
    ("var_os", false),
    ("vars", false),
    ("vars_os", false),
    ("set_var", false),
    ("remove_var", false),
    ("args", true),
    ("args_os", true),
];

/// The printing macros.
const PRINTING: [&str; 5] = ["println", "print", "eprintln", "eprint", "dbg"];

/// Exceptions to [`LIBRARIES`]' rules: a file, the call (as the message quotes it), and why.
const ALLOWED: [(&str, &str, &str); 1] = [(
    "crates/hermes-store/src/testing/mod.rs",
    "env::var",
    "the `test-support` feature (tests only) reads HERMES_TEST_PG_URL, the test PostgreSQL",
)];

/// Every break of `rules` in one source file (`name`, its code from [`sources`]), as
/// `(name:line: what, the call)`.
fn forbidden_calls(name: &str, code: &str, rules: Forbidden) -> Vec<(String, String)> {
    let toks = tokens(code);
    let mut found = BTreeSet::new();
    let env_call = |line: usize, function: &str| -> Option<(usize, String, bool)> {
        let &(_, argv) = ENV_FUNCTIONS.iter().find(|(f, _)| *f == function)?;
        let allowed = if argv {
            !rules.argv_and_printing
        } else {
            !rules.environment
        };
        (!allowed).then(|| (line, format!("env::{function}"), argv))
    };
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map_or("", |t| t.text);
        if t.text == "env"
            && next(1) == "::"
            && let Some(call) = toks.get(i + 2).and_then(|f| env_call(f.line, f.text))
        {
            found.insert(call);
        }
        if rules.argv_and_printing
            && PRINTING.contains(&t.text)
            && next(1) == "!"
            && matches!(next(2), "(" | "[" | "{")
        {
            found.insert((t.line, format!("{}!", t.text), false));
        }
    }
    // `use std::env::{var, args};` names the functions without `env::` before each.
    for (line, path) in paths(&toks) {
        if let [.., env, function] = path.as_slice()
            && env == "env"
            && let Some(call) = env_call(line, function)
        {
            found.insert(call);
        }
    }
    found
        .into_iter()
        .map(|(line, call, argv)| {
            let what = if call.ends_with('!') {
                "prints (a library emits `tracing` events; only a binary prints)"
            } else if argv {
                "reads argv (only a binary does)"
            } else {
                "reads the environment (the value comes from the caller: the binary or hermes-config)"
            };
            (format!("{name}:{line}: `{call}` {what}"), call)
        })
        .collect()
}

/// The longest a function of a wire crate may be, in lines from its `fn` line to its closing
/// brace's (issue 51): a wire's `encode` is split into stages instead.
const MAX_FN_LINES: usize = 120;

/// A function with a body, as the length check reads it.
#[derive(Debug, PartialEq, Eq)]
struct Function {
    /// Its name.
    name: String,
    /// The 1-based line of its `fn`.
    line: usize,
    /// Its length in lines, from the `fn` line to its closing brace's, both counted.
    lines: usize,
}

/// Every function with a body in `code` (from [`sources`]), nested ones too, in order. A
/// declaration without a body (`fn f();`) and a `fn(..)` pointer type are none.
fn functions(code: &str) -> Vec<Function> {
    let toks = tokens(code);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(name) = toks
            .get(i + 1)
            .filter(|n| t.text == "fn" && is_ident(n.text))
        else {
            continue;
        };
        // The body is the first `{` outside parentheses and brackets, unless a `;` comes first.
        let mut depth = 0usize;
        let mut open = None;
        for (j, tok) in toks.iter().enumerate().skip(i + 2) {
            match tok.text {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                ";" if depth == 0 => break,
                "{" if depth == 0 => {
                    open = Some(j);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let mut depth = 0usize;
        let close = toks[open..].iter().find(|tok| {
            match tok.text {
                "{" => depth += 1,
                "}" => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let end = close.map_or_else(|| toks.last().map_or(t.line, |l| l.line), |c| c.line);
        out.push(Function {
            name: name.text.to_owned(),
            line: t.line,
            lines: end - t.line + 1,
        });
    }
    out
}

/// The item keywords a `pub` item is counted by.
const ITEM_KINDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "const", "static", "type", "mod", "use",
];

/// The `pub` items of one source file's code (from [`sources`]), as `(line, "kind name")`: every
/// `pub fn`, `pub struct`, `pub enum`, `pub trait`, `pub const`, `pub static`, `pub type`,
/// `pub mod` and `pub use` (one per statement), methods and associated consts of `impl` blocks
/// included. Not counted: fields and variants, `pub(crate)`, `pub(super)` and `pub(in …)`, the
/// methods of trait impls (they carry no `pub`), and anything inside a `macro_rules!` body (a
/// `#[macro_export]` macro is not an item of the module, and the `pub fn` it expands to is
/// counted where it expands, if ever in this crate's own text).
fn pub_items(code: &str) -> Vec<(usize, String)> {
    let toks = tokens(code);
    let text = |i: usize| toks.get(i).map_or("", |t| t.text);
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        if t.text == "macro_rules" && text(i + 1) == "!" {
            // Skip the name and the body, up to the bracket that closes it.
            let mut j = i + 3;
            let mut depth = 0usize;
            while let Some(t) = toks.get(j) {
                match t.text {
                    "{" | "(" | "[" => depth += 1,
                    "}" | ")" | "]" => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        if t.text == "pub" {
            // `pub async fn`, `pub const fn`, `pub unsafe extern "C" fn`: qualifiers before `fn`.
            let mut j = i + 1;
            while matches!(text(j), "async" | "unsafe" | "extern" | "\"")
                || (text(j) == "const"
                    && matches!(text(j + 1), "fn" | "async" | "unsafe" | "extern"))
            {
                j += 1;
            }
            let kind = text(j);
            if ITEM_KINDS.contains(&kind) {
                out.push((t.line, format!("{kind} {}", text(j + 1))));
            }
        }
        i += 1;
    }
    out
}

/// The crate whose `pub` items [`pub_items`] counts, and the most it may have. Issue 51's goal
/// is 200 ("small public surfaces"); the ceiling is what the sweep reached, and only comes down.
const PUB_ITEM_CEILINGS: [(&str, usize); 1] = [("crates/hermes-core", CORE_PUB_ITEMS)];

/// hermes-core's ceiling. Issue 51's goal is 200; the first sweep made `pub(crate)` what no
/// other crate (tests included) used, 356 to 310; the second made `pub(crate)` what only other
/// crates' tests named (they now go through the public API), made private the modules whose
/// items all have a path at the crate root (`estimate`, `normal`, `session`, `verdict`) and
/// `telemetry` (its one public type is the driver's, `driver::Telemetry`), and added the one
/// session log in memory (`driver::MemoryLog`): 305. Repeated code written once (the
/// duplicates sweep of a later stop) took it to 296, and the wire's own compaction (`NativeCompaction`) added one so
/// the engine names no wire: 297. The sweep of moves took it to 276: the chat wire's route plans
/// (`shape`) and the byte-exact member edits of stored items (`raw`'s) went to
/// hermes-providers, their only users, as did the route sets and effort words only its
/// built-in table names (`RC_R`, `RC_RD`, `THREE`), and `KeyWalk` became an `impl Iterator`.
/// What stays is named by other crates' code, about fifty items by the wire crates alone: the
/// ceiling only comes down, as their uses do.
const CORE_PUB_ITEMS: usize = 276;

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace root.
    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root")
    }

    /// Every workspace member's folder, from the root manifest.
    fn members() -> Vec<String> {
        let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
        let manifest: toml::Table = text.parse().expect("Cargo.toml is TOML");
        manifest["workspace"]["members"]
            .as_array()
            .expect("workspace.members")
            .iter()
            .map(|m| m.as_str().expect("a member is a path").to_owned())
            .collect()
    }

    /// No module circle in any member: none is allowed to stay (issue 51 broke up the six the
    /// check found when it came, which the Python tool the issue used saw none of: it resolved
    /// `crate::a::b` only to `a` and `super::` only at the top level).
    #[test]
    fn no_two_files_of_a_crate_use_each_other() {
        let mut found = Vec::new();
        for member in members() {
            let src = root().join(&member).join("src");
            if src.is_dir() {
                found.extend(module_circles(&format!("{member}/src/"), &rust_files(&src)));
            }
        }
        let wrong: Vec<String> = found
            .iter()
            .map(|circle| {
                format!(
                    "module circle between {} (a file uses an item of a file that uses one of its own):\n  {}",
                    circle.files.join(", "),
                    circle.uses.join("\n  ")
                )
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_library_crates_read_no_environment_and_print_nothing() {
        let mut wrong = Vec::new();
        let mut allowed_used = BTreeSet::new();
        for (krate, rules) in LIBRARIES {
            let src = root().join(krate).join("src");
            let files: Vec<(String, String)> = rust_files(&src)
                .into_iter()
                .filter(|(relative, _)| relative != "main.rs" && !relative.starts_with("bin/"))
                .collect();
            for source in sources(&format!("{krate}/src/"), &files) {
                for (message, call) in forbidden_calls(&source.name, &source.code, rules) {
                    match ALLOWED
                        .iter()
                        .position(|(file, allowed, _)| *file == source.name && *allowed == call)
                    {
                        Some(i) => {
                            allowed_used.insert(i);
                        }
                        None => wrong.push(message),
                    }
                }
            }
        }
        for (i, (file, call, _)) in ALLOWED.iter().enumerate() {
            if !allowed_used.contains(&i) {
                wrong.push(format!(
                    "{file} no longer calls `{call}`: take it out of ALLOWED in xtask/src/tidy.rs"
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "the library crates' non-test code must not read the environment or argv or print \
             (ARCHITECTURE.md's invariants; xtask/src/tidy.rs):\n{}",
            wrong.join("\n")
        );
    }

    /// The wire crates, whose functions [`MAX_FN_LINES`] holds.
    const WIRE_CRATES: [&str; 6] = [
        "crates/hermes-providers",
        "crates/hermes-wire-chat",
        "crates/hermes-wire-anthropic",
        "crates/hermes-wire-bedrock",
        "crates/hermes-wire-gemini",
        "crates/hermes-wire-responses",
    ];

    #[test]
    fn no_function_of_a_wire_crate_is_over_120_lines() {
        let mut wrong = Vec::new();
        for krate in WIRE_CRATES {
            let src = root().join(krate).join("src");
            for source in sources(&format!("{krate}/src/"), &rust_files(&src)) {
                for f in functions(&source.code) {
                    if f.lines > MAX_FN_LINES {
                        wrong.push(format!(
                            "{}:{}: fn {} is {} lines (at most {MAX_FN_LINES})",
                            source.name, f.line, f.name, f.lines
                        ));
                    }
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "a wire crate's functions are split into stages instead (issue 51; xtask/src/tidy.rs):\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn a_function_runs_from_its_fn_line_to_its_closing_brace() {
        let text = "fn a() {}\nfn b(f: fn(u8) -> u8)\n    -> Vec<u8>\nwhere\n    u8: Copy,\n{\n    \
                    let s = \"}\";\n    let c = '{';\n    fn inner() {\n    }\n}\ntrait T {\n    fn c(&self);\n}\n";
        let (code, _) = without_test_items(&code_only(text));
        let found: Vec<(String, usize, usize)> = functions(&code)
            .into_iter()
            .map(|f| (f.name, f.line, f.lines))
            .collect();
        assert_eq!(
            found,
            [
                ("a".to_owned(), 1, 1),
                ("b".to_owned(), 2, 10),
                ("inner".to_owned(), 9, 2),
            ]
        );
    }

    /// `files` as `(path, text)` pairs.
    fn crate_of(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect()
    }

    /// The circles' files among `files`.
    fn circle_files(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        module_circles("", &crate_of(files))
            .into_iter()
            .map(|c| c.files)
            .collect()
    }

    #[test]
    fn two_top_level_files_that_use_each_other_are_a_circle() {
        let files = [
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
            (
                "b.rs",
                "pub struct B;\nfn f(b: B) -> super::a::A { super::a::A(b) }\n",
            ),
        ];
        let circles = module_circles("src/", &crate_of(&files));
        assert_eq!(circles.len(), 1, "{circles:?}");
        assert_eq!(circles[0].files, ["src/a.rs", "src/b.rs"]);
        assert_eq!(
            circles[0].uses,
            [
                "src/a.rs:1: uses `crate::b::B` (src/b.rs)",
                "src/b.rs:2: uses `super::a::A` (src/a.rs)",
            ]
        );
    }

    #[test]
    fn three_files_in_a_ring_are_one_circle_and_a_chain_is_none() {
        let ring = [
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::{self, B};"),
            ("b.rs", "pub fn b() { crate::c::c() }"),
            ("c/mod.rs", "pub fn c() { let _ = crate::a::A; }"),
        ];
        assert_eq!(circle_files(&ring), [["a.rs", "b.rs", "c/mod.rs"]]);
        let chain = [
            (
                "lib.rs",
                "mod a; mod b; mod c; pub use c::C; fn f() { crate::a::a() }",
            ),
            ("a.rs", "use crate::{\n    b::{self, B},\n};"),
            ("b.rs", "pub fn b() { crate::c::c(); crate::C; }"),
            (
                "c/mod.rs",
                "// use crate::a::A;\nconst S: &str = \"crate::a::A\";\n",
            ),
        ];
        assert!(circle_files(&chain).is_empty());
    }

    #[test]
    fn paths_inside_a_module_tree_resolve_to_its_files() {
        // `native/body.rs ↔ native/media.rs` and `native/sse.rs ↔ transport.rs`, as the
        // providers crate had them: `super::` below the top level and `crate::a::b::Item`.
        let files = [
            ("lib.rs", "mod native;\nmod transport;\n"),
            (
                "native/mod.rs",
                "mod body;\nmod media;\npub(crate) mod sse;\npub struct Shared;\n",
            ),
            (
                "native/body.rs",
                "use super::media::Image;\nuse super::Shared;\npub struct Block;\n",
            ),
            (
                "native/media.rs",
                "pub struct Image;\nfn f(_: super::body::Block) {}\n",
            ),
            (
                "native/sse.rs",
                "use crate::transport::{read_whole as read};\n",
            ),
            (
                "transport.rs",
                "pub fn read_whole() {}\nfn g() { crate::native::sse::read() }\n",
            ),
        ];
        assert_eq!(
            circle_files(&files),
            [
                ["native/body.rs", "native/media.rs"],
                ["native/sse.rs", "transport.rs"]
            ]
        );
    }

    #[test]
    fn test_code_is_not_a_use() {
        let files = [
            ("lib.rs", "mod a; mod b;\n#[cfg(test)]\nmod testing;\n"),
            (
                "a.rs",
                "use crate::b::B;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
            ),
            (
                "b.rs",
                "pub struct B;\n#[cfg(test)]\n#[allow(dead_code)]\nfn f() { crate::a::f() }\n",
            ),
            ("b/tests.rs", "use crate::a::f;"),
            ("testing.rs", "use crate::a::f; pub fn t() { crate::b::B; }"),
            ("tests/x.rs", "use crate::a::f;"),
        ];
        assert!(circle_files(&files).is_empty());
        let read: Vec<String> = sources("", &crate_of(&files))
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(read, ["lib.rs", "a.rs", "b.rs"]);
    }

    #[test]
    fn comments_and_literals_are_blanked_on_their_own_lines() {
        let text = "let a = \"x // y\"; // z\n/* crate::a\n */ let b = r#\"\"crate\"\"#; let c = '\"';\nfn f<'a>() {}";
        let code = code_only(text);
        assert_eq!(code.lines().count(), text.lines().count());
        assert!(!code.contains("crate") && !code.contains("//"), "{code}");
        assert!(code.contains("fn f<'a>()"), "{code}");
    }

    #[test]
    fn each_forbidden_call_is_named_with_its_line() {
        let text = "use std::env::{self, args};\nfn f() {\n    let _ = std::env::var(\"X\");\n    \
                    println!(\"{}\", env::var_os(\"Y\").is_some());\n}\n#[cfg(test)]\nmod tests { fn g() { dbg!(1); } }\n";
        let (code, _) = without_test_items(&code_only(text));
        let all = Forbidden {
            environment: true,
            argv_and_printing: true,
        };
        let found: Vec<String> = forbidden_calls("x.rs", &code, all)
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        assert_eq!(
            found,
            [
                "x.rs:1: `env::args` reads argv (only a binary does)",
                "x.rs:3: `env::var` reads the environment (the value comes from the caller: the binary or hermes-config)",
                "x.rs:4: `env::var_os` reads the environment (the value comes from the caller: the binary or hermes-config)",
                "x.rs:4: `println!` prints (a library emits `tracing` events; only a binary prints)",
            ]
        );
        let config = Forbidden {
            environment: false,
            argv_and_printing: true,
        };
        assert_eq!(forbidden_calls("x.rs", &code, config).len(), 2);
    }

    /// hermes-core keeps a small public surface (issue 51): front ends import a few named types,
    /// and nothing is `pub` only for another crate's tests.
    #[test]
    fn core_has_few_pub_items() {
        for (krate, ceiling) in PUB_ITEM_CEILINGS {
            let src = root().join(krate).join("src");
            let mut per_file: Vec<(usize, String)> =
                sources(&format!("{krate}/src/"), &rust_files(&src))
                    .iter()
                    .map(|s| (pub_items(&s.code).len(), s.name.clone()))
                    .filter(|(n, _)| *n > 0)
                    .collect();
            let count: usize = per_file.iter().map(|(n, _)| n).sum();
            per_file.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let most: Vec<String> = per_file
                .iter()
                .take(10)
                .map(|(n, name)| format!("  {n:4} {name}"))
                .collect();
            assert!(
                count <= ceiling,
                "{krate} has {count} `pub` items, more than {ceiling} (issue 51: make what no other \
                 crate uses `pub(crate)`; xtask/src/tidy.rs counts them); the ten files holding \
                 most:\n{}",
                most.join("\n")
            );
        }
    }

    #[test]
    fn pub_items_are_counted_by_their_keyword() {
        let text = "pub mod a;\nmod b;\npub use a::{X, Y};\npub(crate) use b::Z;\n\
                    /// pub fn not_me() {}\npub struct S { pub field: u8 }\n\
                    impl S {\n    pub const K: u8 = 1;\n    pub const fn k() -> u8 { 1 }\n    \
                    pub(super) fn h() {}\n    pub async fn go(&self) {}\n}\n\
                    impl Clone for S { fn clone(&self) -> S { S { field: 0 } } }\n\
                    #[macro_export]\nmacro_rules! m { () => { pub fn made() {} }; }\n\
                    pub(crate) enum E { A }\npub trait T { fn t(&self); }\n\
                    const S: &str = \"pub fn nor_me\";\n#[cfg(test)]\nmod tests { pub fn t() {} }\n";
        let (code, _) = without_test_items(&code_only(text));
        let found: Vec<String> = pub_items(&code)
            .into_iter()
            .map(|(line, item)| format!("{line}: {item}"))
            .collect();
        assert_eq!(
            found,
            [
                "1: mod a",
                "3: use a",
                "6: struct S",
                "8: const K",
                "9: fn k",
                "11: fn go",
                "17: trait T",
            ]
        );
    }
}
