//! Built-in tools the model may call: `read_file`, `list_dir`, `now`. Nothing that writes or
//! executes. A tool's error becomes the result the model sees, in one line.
//!
//! The file tools are confined to one workspace folder (see [`ToolPolicy`]). A path is resolved
//! (`..`, symbolic links) relative to the workspace and refused when it leads outside it, into
//! `$HERMES_HOME`, under `/proc`, `/sys` or `/dev`, onto anything but a regular file or a
//! directory, or onto a file that usually holds secrets (`.env`, SSH keys, …). Files are opened
//! through a `cap_std` directory handle, which cannot escape the workspace whatever changes on
//! disk meanwhile, non-blocking, and checked by their handle's own metadata. Every result is cut
//! to [`RESULT_LIMIT`] bytes, and every secret hermes loaded is redacted from it first.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use cap_std::fs::{Dir, FileType, Metadata};
use hermes_core::RawJson;
use serde_json::{Value, json};

use hermes_config::Secrets;

/// Most bytes of one tool result the model sees; the rest is cut, with a note.
pub(crate) const RESULT_LIMIT: usize = 64 * 1024;

/// Most entries `list_dir` reads from one directory.
const ENTRY_LIMIT: usize = 10_000;

/// What the file tools may read and what no result may show.
#[derive(Clone, Debug)]
pub(crate) struct ToolPolicy {
    /// The only folder `read_file` and `list_dir` see (relative paths start here).
    pub(crate) workspace: PathBuf,
    /// `$HERMES_HOME`: never readable, even inside the workspace.
    pub(crate) home: PathBuf,
    /// Redacted from every result.
    pub(crate) secrets: Secrets,
}

/// What a tool produced, before redaction and the size cut.
struct Output {
    /// The bytes read (a little more than [`RESULT_LIMIT`] at most).
    bytes: Vec<u8>,
    /// The whole source's size, when known.
    total: Option<u64>,
    /// The source had more than `bytes`.
    more: bool,
}

impl Output {
    fn text(text: String) -> Self {
        Output {
            bytes: text.into_bytes(),
            total: None,
            more: false,
        }
    }
}

/// One tool.
#[async_trait::async_trait]
trait Tool: Send + Sync {
    /// Name the model calls.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// JSON schema of its arguments.
    fn parameters(&self) -> Value;
    /// Runs it. The error is the whole one-line result (`error: …` or `refused: …`).
    async fn run(&self, args: &Value) -> Result<Output, String>;
}

fn path_arg(args: &Value) -> Result<&str, String> {
    args.get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| "error: missing string argument `path`".to_owned())
}

fn path_schema(what: &str) -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string", "description": what}}, "required": ["path"]})
}

/// A path as the model wrote it, on one line.
/// The error text of a failed `verb` (open, read, list) of what is shown as `shown`.
fn cannot<'a>(verb: &'a str, shown: &'a str) -> impl Fn(std::io::Error) -> String + 'a {
    move |e| format!("error: cannot {verb} {shown}: {e}")
}

fn shown(raw: &str) -> String {
    raw.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// A file's identity (device, inode), where the platform has one.
#[cfg(unix)]
fn identity(meta: &Metadata) -> Option<(u64, u64)> {
    use cap_std::fs::MetadataExt as _;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_: &Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
fn ambient_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn ambient_identity(_: &Path) -> Option<(u64, u64)> {
    None
}

/// What a file type is, when it is neither a regular file nor a directory.
fn special_kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
    }
    if file_type.is_symlink() {
        return Some("a symbolic link");
    }
    Some("neither a regular file nor a directory")
}

/// The kind of secret file `path` names, matched on its file name, case-insensitively.
fn secret_file(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let exact = [
        ".env",
        ".envrc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
    ];
    if let Some(found) = exact.iter().find(|e| **e == name) {
        return Some(found);
    }
    if name.starts_with(".env.") {
        return Some(".env.*");
    }
    for key in ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"] {
        if name.starts_with(key) {
            return Some("an SSH key");
        }
    }
    for ext in [".pem", ".key", ".p12", ".pfx"] {
        if name.ends_with(ext) {
            return Some("a key file");
        }
    }
    let in_aws = path.parent().is_some_and(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(".aws"))
    });
    if name == "credentials" && in_aws {
        return Some(".aws/credentials");
    }
    None
}

/// True for the error `cap_std` gives when a path would leave its directory.
fn is_escape(error: &std::io::Error) -> bool {
    match error.raw_os_error() {
        // `openat2(RESOLVE_BENEATH)` refuses an escape with EXDEV.
        #[cfg(target_os = "linux")]
        Some(code) => code == 18,
        #[cfg(not(target_os = "linux"))]
        Some(_) => false,
        None => error.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

/// The workspace the file tools are confined to.
#[derive(Debug)]
struct Workspace {
    /// The workspace, opened: every file is opened relative to it.
    dir: Dir,
    /// Canonical path of the workspace.
    root: PathBuf,
    /// Canonical path of `$HERMES_HOME` (as given when it does not exist).
    home: PathBuf,
    /// Identity of `$HERMES_HOME`, to find it under another spelling.
    home_id: Option<(u64, u64)>,
    /// The whole workspace is inside `$HERMES_HOME`.
    root_in_home: bool,
    /// Bytes read per result: the limit, plus room to see a secret straddling the cut.
    window: usize,
}

impl Workspace {
    fn open(policy: &ToolPolicy) -> anyhow::Result<Self> {
        let given = &policy.workspace;
        let meta = std::fs::metadata(given)
            .with_context(|| format!("the workspace {} does not exist", given.display()))?;
        anyhow::ensure!(
            meta.is_dir(),
            "the workspace {} is not a directory",
            given.display()
        );
        let root = std::fs::canonicalize(given)
            .with_context(|| format!("cannot resolve the workspace {}", given.display()))?;
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())
            .with_context(|| format!("cannot open the workspace {}", root.display()))?;
        let home = std::fs::canonicalize(&policy.home).unwrap_or_else(|_| policy.home.clone());
        let home_id = ambient_identity(&home);
        let root_in_home = root.starts_with(&home)
            || (home_id.is_some() && root.ancestors().any(|a| ambient_identity(a) == home_id));
        Ok(Workspace {
            dir,
            root,
            home,
            home_id,
            root_in_home,
            window: RESULT_LIMIT + policy.secrets.longest(),
        })
    }

    /// True when `canonical` (relative to the root, no links) is `$HERMES_HOME` or inside it.
    fn in_home(&self, canonical: &Path) -> bool {
        if self.root.join(canonical).starts_with(&self.home) {
            return true;
        }
        let Some(home_id) = self.home_id else {
            return false;
        };
        canonical.ancestors().any(|a| {
            let a = if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            };
            self.dir.metadata(a).ok().and_then(|m| identity(&m)) == Some(home_id)
        })
    }

    /// Resolves `raw` to a canonical path relative to the root, with its metadata (links not
    /// followed), or the one-line refusal.
    fn resolve(&self, raw: &str) -> Result<(PathBuf, Metadata), String> {
        let shown = shown(raw);
        let root = self.root.display();
        if self.root_in_home {
            return Err(format!(
                "refused: the workspace {root} is inside the hermes home {}",
                self.home.display()
            ));
        }
        if raw.contains('\0') {
            return Err(format!("refused: {shown} holds a NUL byte"));
        }
        let path = Path::new(raw);
        let relative = if path.is_absolute() {
            let inside = path.strip_prefix(&self.root).map(Path::to_path_buf).ok();
            // Another spelling of the root (a link to it, another case): resolve it.
            let inside = inside.or_else(|| {
                let resolved = std::fs::canonicalize(path).ok()?;
                resolved
                    .strip_prefix(&self.root)
                    .ok()
                    .map(Path::to_path_buf)
            });
            inside.ok_or_else(|| format!("refused: {shown} is outside the workspace {root}"))?
        } else {
            path.to_path_buf()
        };
        let relative = if relative.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            relative
        };
        let canonical = match self.dir.canonicalize(&relative) {
            Ok(c) => c,
            Err(e) if is_escape(&e) => {
                return Err(format!(
                    "refused: {shown} leads outside the workspace {root} (through `..` or a symbolic link)"
                ));
            }
            Err(e) => return Err(format!("error: cannot open {shown}: {e}")),
        };
        let canonical = if canonical.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            canonical
        };
        let full = self.root.join(&canonical);
        if cfg!(unix)
            && let Some(fs) = ["/proc", "/sys", "/dev"]
                .into_iter()
                .find(|fs| full.starts_with(fs))
        {
            return Err(format!(
                "refused: {shown} is under {fs}; hermes reads nothing under /proc, /sys or /dev"
            ));
        }
        if self.in_home(&canonical) {
            return Err(format!(
                "refused: {shown} is inside the hermes home {}",
                self.home.display()
            ));
        }
        if let Some(kind) = secret_file(&relative).or_else(|| secret_file(&canonical)) {
            return Err(format!(
                "refused: {shown} may hold secrets ({kind}); its content is never read"
            ));
        }
        let meta = self
            .dir
            .symlink_metadata(&canonical)
            .map_err(cannot("open", &shown))?;
        if let Some(kind) = special_kind(meta.file_type()) {
            return Err(format!(
                "refused: {shown} is {kind}; only regular files and directories are read"
            ));
        }
        Ok((canonical, meta))
    }

    /// Refuses a handle that is not what was checked (something was swapped in meanwhile) or
    /// not a regular file or directory.
    fn check_handle(shown: &str, opened: &Metadata, checked: &Metadata) -> Result<(), String> {
        if let Some(kind) = special_kind(opened.file_type()) {
            return Err(format!(
                "refused: {shown} is {kind}; only regular files and directories are read"
            ));
        }
        if identity(opened) != identity(checked) {
            return Err(format!("refused: {shown} changed while it was opened"));
        }
        Ok(())
    }

    fn read(&self, raw: &str) -> Result<Output, String> {
        let (canonical, checked) = self.resolve(raw)?;
        let shown = shown(raw);
        if checked.is_dir() {
            return Err(format!(
                "error: {shown} is a directory; list it with list_dir"
            ));
        }
        let (file, opened) = self.open_checked(&shown, &canonical, &checked)?;
        if opened.is_dir() {
            return Err(format!(
                "error: {shown} is a directory; list it with list_dir"
            ));
        }
        let mut bytes = Vec::new();
        file.take(self.window as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot("read", &shown))?;
        if bytes.contains(&0) {
            return Err(format!(
                "error: {shown} is not a text file (it holds NUL bytes)"
            ));
        }
        let more = bytes.len() > self.window;
        bytes.truncate(self.window);
        Ok(Output {
            bytes,
            total: Some(opened.len()),
            more,
        })
    }

    /// Opens the resolved `canonical` for reading, without blocking, and checks the handle:
    /// whatever was swapped in after [`Workspace::resolve`] is refused rather than read.
    fn open_checked(
        &self,
        shown: &str,
        canonical: &Path,
        checked: &Metadata,
    ) -> Result<(cap_std::fs::File, Metadata), String> {
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt as _;
            // A FIFO swapped in after the check opens at once instead of waiting for a writer.
            let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
            options.custom_flags(flags.bits() as i32);
        }
        let file = self.dir.open_with(canonical, &options).map_err(|e| {
            if is_escape(&e) {
                format!(
                    "refused: {shown} leads outside the workspace {}",
                    self.root.display()
                )
            } else {
                format!("error: cannot open {shown}: {e}")
            }
        })?;
        let opened = file.metadata().map_err(cannot("open", shown))?;
        Self::check_handle(shown, &opened, checked)?;
        Ok((file, opened))
    }

    fn list(&self, raw: &str) -> Result<Output, String> {
        let (canonical, checked) = self.resolve(raw)?;
        let shown = shown(raw);
        if !checked.is_dir() {
            return Err(format!(
                "error: {shown} is not a directory; read it with read_file"
            ));
        }
        let dir = self
            .dir
            .open_dir(&canonical)
            .map_err(cannot("list", &shown))?;
        let opened = dir.dir_metadata().map_err(cannot("list", &shown))?;
        Self::check_handle(&shown, &opened, &checked)?;
        let mut names = Vec::new();
        let mut more = false;
        for entry in dir.entries().map_err(cannot("list", &shown))? {
            if names.len() == ENTRY_LIMIT {
                more = true;
                break;
            }
            let entry = entry.map_err(cannot("list", &shown))?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(Output {
            bytes: names.join("\n").into_bytes(),
            total: None,
            more,
        })
    }
}

/// Runs `f` on the blocking pool (file system calls may block).
async fn blocking(
    workspace: &Arc<Workspace>,
    raw: &str,
    f: fn(&Workspace, &str) -> Result<Output, String>,
) -> Result<Output, String> {
    let workspace = Arc::clone(workspace);
    let raw = raw.to_owned();
    tokio::task::spawn_blocking(move || f(&workspace, &raw))
        .await
        .map_err(|e| format!("error: the tool failed: {e}"))?
}

/// A tool on one path of the workspace (`read_file`, `list_dir`): its name, what it tells the
/// model, what its `path` names, and what it does on the blocking pool.
struct PathTool {
    workspace: Arc<Workspace>,
    name: &'static str,
    description: &'static str,
    path: &'static str,
    op: fn(&Workspace, &str) -> Result<Output, String>,
}

impl PathTool {
    fn read_file(workspace: Arc<Workspace>) -> PathTool {
        PathTool {
            workspace,
            name: "read_file",
            description: "Read a text file in the workspace (at most 64 KiB are shown). The path is relative to the workspace folder; an absolute path must lie inside it.",
            path: "the file to read, relative to the workspace",
            op: Workspace::read,
        }
    }

    fn list_dir(workspace: Arc<Workspace>) -> PathTool {
        PathTool {
            workspace,
            name: "list_dir",
            description: "List a directory in the workspace (directories end with /). The path is relative to the workspace folder (\".\" is the workspace itself); an absolute path must lie inside it.",
            path: "the directory to list, relative to the workspace",
            op: Workspace::list,
        }
    }
}

#[async_trait::async_trait]
impl Tool for PathTool {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn parameters(&self) -> Value {
        path_schema(self.path)
    }
    async fn run(&self, args: &Value) -> Result<Output, String> {
        blocking(&self.workspace, path_arg(args)?, self.op).await
    }
}

struct Now;

#[async_trait::async_trait]
impl Tool for Now {
    fn name(&self) -> &'static str {
        "now"
    }
    fn description(&self) -> &'static str {
        "The current date and time (UTC, RFC 3339)."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn run(&self, _: &Value) -> Result<Output, String> {
        Ok(Output::text(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ))
    }
}

/// The bytes as text; a cut that split a character drops that character.
fn text_of(mut bytes: Vec<u8>, cut: bool) -> String {
    if cut
        && let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
    {
        bytes.truncate(e.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// The tools a session offers.
pub(crate) struct Toolbox {
    tools: Vec<Box<dyn Tool>>,
    secrets: Secrets,
}

impl Toolbox {
    /// `read_file` and `list_dir` confined to `policy.workspace`, and `now`. Fails, naming the
    /// folder, when the workspace does not exist or is not a directory.
    pub(crate) fn new(policy: ToolPolicy) -> anyhow::Result<Self> {
        let workspace = Arc::new(Workspace::open(&policy)?);
        Ok(Toolbox {
            tools: vec![
                Box::new(PathTool::read_file(Arc::clone(&workspace))),
                Box::new(PathTool::list_dir(workspace)),
                Box::new(Now),
            ],
            secrets: policy.secrets,
        })
    }

    /// The `tools` array of a chat-completions request.
    pub(crate) fn definitions(&self) -> Option<RawJson> {
        let defs: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name(), "description": t.description(), "parameters": t.parameters()}})
            })
            .collect();
        RawJson::from_serialize(&defs).ok()
    }

    /// Redacts, then cuts to [`RESULT_LIMIT`] with a note.
    fn render(&self, output: Output) -> String {
        let kept = output.bytes.len().min(RESULT_LIMIT);
        let cut = output.more
            || output.bytes.len() > RESULT_LIMIT
            || output.total.is_some_and(|t| t > RESULT_LIMIT as u64);
        let shown = self.secrets.redact_prefix(&output.bytes, RESULT_LIMIT);
        let mut text = text_of(shown, cut);
        if cut {
            let of = match output.total {
                Some(total) => format!("{total} bytes"),
                None => format!("more than {kept} bytes"),
            };
            text.push_str(&format!(
                "\n[cut: only the first {kept} bytes of {of} are shown]"
            ));
        }
        text
    }
}

#[async_trait::async_trait]
impl hermes_core::driver::Tools for Toolbox {
    async fn call(&self, name: &str, arguments: &str) -> String {
        let Some(tool) = self.tools.iter().find(|t| t.name() == name) else {
            return self
                .secrets
                .redact(&format!("error: no tool named `{}`", shown(name)));
        };
        let args: Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            match serde_json::from_str(arguments) {
                Ok(v) => v,
                Err(e) => return format!("error: arguments are not JSON: {e}"),
            }
        };
        match tool.run(&args).await {
            Ok(output) => self.render(output),
            Err(line) => self.secrets.redact(&line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::driver::Tools as _;

    const KEY: &str = "sk-unit-5e1f0c";

    struct Fixture {
        _dirs: Vec<tempfile::TempDir>,
        root: PathBuf,
        outside: PathBuf,
        home: PathBuf,
    }

    /// A workspace with `a.txt`, `sub/b.txt`, and `.hermes` (the home) inside it; a folder
    /// outside it holding `secret.txt`.
    fn fixture() -> Fixture {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        let outside = std::fs::canonicalize(out.path()).unwrap();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/b.txt"), "bee").unwrap();
        let home = root.join(".hermes");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(home.join("state.db"), "db").unwrap();
        std::fs::write(outside.join("secret.txt"), "outside").unwrap();
        Fixture {
            _dirs: vec![ws, out],
            root,
            outside,
            home,
        }
    }

    impl Fixture {
        fn toolbox(&self) -> Toolbox {
            Toolbox::new(ToolPolicy {
                workspace: self.root.clone(),
                home: self.home.clone(),
                secrets: Secrets::new([KEY.as_bytes().to_vec()]),
            })
            .unwrap()
        }
    }

    async fn read(tb: &Toolbox, path: impl AsRef<Path>) -> String {
        let args = json!({"path": path.as_ref()}).to_string();
        tb.call("read_file", &args).await
    }

    async fn list(tb: &Toolbox, path: impl AsRef<Path>) -> String {
        let args = json!({"path": path.as_ref()}).to_string();
        tb.call("list_dir", &args).await
    }

    /// A tool's `answer` contains `text` (the answer is in the failure message).
    fn holds(answer: String, text: &str) {
        assert!(answer.contains(text), "{text:?} not in {answer:?}");
    }

    /// A tool's `answer` starts with `text`.
    fn opens_with(answer: String, text: &str) {
        assert!(
            answer.starts_with(text),
            "{answer:?} does not start with {text:?}"
        );
    }

    #[tokio::test]
    async fn paths_inside_the_workspace_are_read_relative_or_absolute() {
        let f = fixture();
        let tb = f.toolbox();
        assert_eq!(read(&tb, "a.txt").await, "hello");
        assert_eq!(read(&tb, "./sub/../a.txt").await, "hello");
        assert_eq!(read(&tb, f.root.join("sub/b.txt")).await, "bee");
        assert_eq!(list(&tb, ".").await, ".hermes/\na.txt\nsub/");
        assert_eq!(list(&tb, "").await, ".hermes/\na.txt\nsub/");
        assert_eq!(list(&tb, &f.root).await, ".hermes/\na.txt\nsub/");
        assert_eq!(list(&tb, "sub").await, "b.txt");
        assert!(tb.call("rm", "{}").await.contains("no tool named `rm`"));
        assert!(tb.call("now", "").await.ends_with('Z'));
        opens_with(read(&tb, "nope.txt").await, "error: cannot open nope.txt:");
        assert_eq!(
            read(&tb, "sub").await,
            "error: sub is a directory; list it with list_dir"
        );
        assert_eq!(
            list(&tb, "a.txt").await,
            "error: a.txt is not a directory; read it with read_file"
        );
    }

    #[tokio::test]
    async fn paths_leading_outside_are_refused_in_one_line() {
        let f = fixture();
        let tb = f.toolbox();
        let root = f.root.display();
        let secret = f.outside.join("secret.txt");
        assert_eq!(
            read(&tb, &secret).await,
            format!(
                "refused: {} is outside the workspace {root}",
                secret.display()
            )
        );
        let up = format!(
            "../{}/secret.txt",
            f.outside.file_name().unwrap().to_string_lossy()
        );
        let text = read(&tb, &up).await;
        assert!(
            text.starts_with(&format!("refused: {up} leads outside the workspace {root}")),
            "{text}"
        );
        let lexical = format!("{root}/../x");
        opens_with(read(&tb, &lexical).await, "refused: ");
        opens_with(list(&tb, "..").await, "refused: .. leads outside");
        opens_with(list(&tb, "/").await, "refused: / is outside");
        opens_with(
            read(&tb, "/etc/shadow").await,
            "refused: /etc/shadow is outside the workspace",
        );
        let text = read(&tb, "a\nb").await;
        assert!(!text.contains('\n'), "{text}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symbolic_links_are_followed_only_inside() {
        let f = fixture();
        let tb = f.toolbox();
        std::os::unix::fs::symlink(f.outside.join("secret.txt"), f.root.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(&f.outside, f.root.join("outdir")).unwrap();
        std::os::unix::fs::symlink("sub/b.txt", f.root.join("in.txt")).unwrap();
        std::os::unix::fs::symlink(".hermes", f.root.join("h")).unwrap();
        std::os::unix::fs::symlink(".env", f.root.join("notes.txt")).unwrap();
        std::fs::write(f.root.join(".env"), "K=v").unwrap();
        assert_eq!(read(&tb, "in.txt").await, "bee");
        for path in ["out.txt", "outdir/secret.txt"] {
            let text = read(&tb, path).await;
            assert!(
                text.starts_with(&format!("refused: {path} leads outside the workspace")),
                "{text}"
            );
        }
        opens_with(list(&tb, "outdir").await, "refused: ");
        holds(read(&tb, "h/state.db").await, "inside the hermes home");
        holds(list(&tb, "h").await, "inside the hermes home");
        holds(read(&tb, "notes.txt").await, "may hold secrets");
    }

    #[tokio::test]
    async fn the_home_is_refused_even_inside_the_workspace() {
        let f = fixture();
        let tb = f.toolbox();
        let home = f.home.display();
        assert_eq!(
            read(&tb, ".hermes/state.db").await,
            format!("refused: .hermes/state.db is inside the hermes home {home}")
        );
        let absolute = f.home.join("state.db");
        holds(read(&tb, &absolute).await, "inside the hermes home");
        holds(list(&tb, ".hermes").await, "inside the hermes home");
        holds(
            read(&tb, "sub/../.hermes/./state.db").await,
            "inside the hermes home",
        );
        // A workspace inside the home: nothing is readable.
        let tb = Toolbox::new(ToolPolicy {
            workspace: f.home.clone(),
            home: f.home.clone(),
            secrets: Secrets::default(),
        })
        .unwrap();
        holds(list(&tb, ".").await, "is inside the hermes home");
    }

    #[tokio::test]
    async fn secret_files_are_refused_but_listed() {
        let f = fixture();
        let tb = f.toolbox();
        for name in [
            ".env",
            ".ENV.local",
            ".envrc",
            ".netrc",
            ".pgpass",
            "id_rsa",
            "id_ed25519.pub",
            "server.PEM",
            "tls.key",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
        ] {
            std::fs::write(f.root.join("sub").join(name), "MARK").unwrap();
            let text = read(&tb, format!("sub/{name}")).await;
            assert!(
                text.starts_with(&format!("refused: sub/{name} may hold secrets")),
                "{name}: {text}"
            );
        }
        std::fs::create_dir(f.root.join(".aws")).unwrap();
        std::fs::write(f.root.join(".aws/credentials"), "MARK").unwrap();
        holds(read(&tb, ".aws/credentials").await, "may hold secrets");
        let listing = list(&tb, "sub").await;
        assert!(listing.contains(".env\n") && listing.contains("id_rsa"));
        std::fs::write(f.root.join("credentials"), "fine").unwrap();
        assert_eq!(read(&tb, "credentials").await, "fine");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn fifos_devices_and_proc_are_refused_without_blocking() {
        let f = fixture();
        let tb = f.toolbox();
        let made = std::process::Command::new("mkfifo")
            .arg(f.root.join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(
            read(&tb, "pipe").await,
            "refused: pipe is a FIFO; only regular files and directories are read"
        );
        holds(list(&tb, "pipe").await, "is a FIFO");
        holds(read(&tb, "/dev/zero").await, "outside the workspace");
        holds(
            read(&tb, "/proc/self/environ").await,
            "outside the workspace",
        );
        // With the whole file system as the workspace, /proc and /dev stay closed.
        let tb = Toolbox::new(ToolPolicy {
            workspace: PathBuf::from("/"),
            home: f.home.clone(),
            secrets: Secrets::default(),
        })
        .unwrap();
        opens_with(
            read(&tb, "/proc/self/environ").await,
            "refused: /proc/self/environ is under /proc",
        );
        opens_with(
            read(&tb, "dev/zero").await,
            "refused: dev/zero is under /dev",
        );
        opens_with(read(&tb, "/dev/stdin").await, "refused: ");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_swapped_in_after_the_check_is_refused_by_its_handle() {
        let f = fixture();
        let policy = ToolPolicy {
            workspace: f.root.clone(),
            home: f.home.clone(),
            secrets: Secrets::default(),
        };
        let ws = Workspace::open(&policy).unwrap();
        let (canonical, checked) = ws.resolve("a.txt").unwrap();
        std::fs::remove_file(f.root.join("a.txt")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(f.root.join("a.txt"))
            .status()
            .unwrap();
        assert!(made.success());
        // No writer ever comes: a blocking open would hang here.
        let err = ws
            .open_checked("a.txt", &canonical, &checked)
            .err()
            .unwrap();
        assert_eq!(
            err,
            "refused: a.txt is a FIFO; only regular files and directories are read"
        );
        // A regular file swapped for another is refused too.
        let (canonical, checked) = ws.resolve("sub/b.txt").unwrap();
        std::fs::rename(f.root.join("sub/b.txt"), f.root.join("sub/old")).unwrap();
        std::fs::write(f.root.join("sub/b.txt"), "new").unwrap();
        let err = ws
            .open_checked("sub/b.txt", &canonical, &checked)
            .err()
            .unwrap();
        assert_eq!(err, "refused: sub/b.txt changed while it was opened");
    }

    #[tokio::test]
    async fn results_are_redacted_then_cut() {
        let f = fixture();
        let tb = f.toolbox();
        std::fs::write(f.root.join("k.txt"), format!("key={KEY}\n")).unwrap();
        assert_eq!(read(&tb, "k.txt").await, "key=[redacted]\n");
        // The key straddles the cut: no prefix of it survives.
        let mut big = "a".repeat(RESULT_LIMIT - 3);
        big.push_str(KEY);
        big.push_str(&"b".repeat(100));
        std::fs::write(f.root.join("big.txt"), &big).unwrap();
        let text = read(&tb, "big.txt").await;
        let (body, note) = text.rsplit_once('\n').unwrap();
        assert!(
            body.ends_with("aaa[redacted]"),
            "{}",
            &body[body.len() - 20..]
        );
        assert!(!text.contains(&KEY[..3]));
        assert_eq!(
            note,
            format!(
                "[cut: only the first {RESULT_LIMIT} bytes of {} bytes are shown]",
                big.len()
            )
        );
        // A file named after the key is listed redacted.
        std::fs::write(f.root.join("sub").join(KEY), "x").unwrap();
        assert_eq!(list(&tb, "sub").await, "b.txt\n[redacted]");
        std::fs::write(f.root.join("bin"), b"a\0b").unwrap();
        holds(read(&tb, "bin").await, "not a text file");
    }

    #[tokio::test]
    async fn a_missing_workspace_is_an_error_naming_it() {
        let f = fixture();
        let policy = |workspace: PathBuf| ToolPolicy {
            workspace,
            home: f.home.clone(),
            secrets: Secrets::default(),
        };
        let missing = f.root.join("missing");
        let err = Toolbox::new(policy(missing.clone())).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!("the workspace {} does not exist", missing.display())
        );
        let err = Toolbox::new(policy(f.root.join("a.txt"))).err().unwrap();
        assert!(err.to_string().contains("is not a directory"));
    }

    #[test]
    fn tool_descriptions_say_paths_are_relative_to_the_workspace() {
        let f = fixture();
        let defs = f.toolbox().definitions().unwrap();
        assert!(defs.get().contains("relative to the workspace"));
    }
}
