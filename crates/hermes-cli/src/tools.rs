//! Built-in tools the model may call: `read_file`, `list_dir`, `now`. Nothing that writes or
//! executes. A tool's error becomes the result the model sees.

use hermes_core::RawJson;
use serde_json::{Value, json};

/// Files larger than this are cut, with a note.
const READ_LIMIT: u64 = 256 * 1024;

/// One tool.
#[async_trait::async_trait]
pub(crate) trait Tool: Send + Sync {
    /// Name the model calls.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// JSON schema of its arguments.
    fn parameters(&self) -> Value;
    /// Runs it.
    async fn run(&self, args: &Value) -> Result<String, String>;
}

fn path_arg(args: &Value) -> Result<&str, String> {
    args.get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| "missing string argument `path`".to_owned())
}

fn path_schema(what: &str) -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string", "description": what}}, "required": ["path"]})
}

struct ReadFile;

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }
    fn description(&self) -> &'static str {
        "Read a text file (at most 256 KiB)."
    }
    fn parameters(&self) -> Value {
        path_schema("the file to read")
    }
    async fn run(&self, args: &Value) -> Result<String, String> {
        use tokio::io::AsyncReadExt as _;
        let path = path_arg(args)?;
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| format!("cannot open {path}: {e}"))?;
        let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
        let mut bytes = Vec::new();
        file.take(READ_LIMIT)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("cannot read {path}: {e}"))?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if len > READ_LIMIT {
            text.push_str(&format!(
                "\n[cut: the file has {len} bytes, only the first {READ_LIMIT} are shown]"
            ));
        }
        Ok(text)
    }
}

struct ListDir;

#[async_trait::async_trait]
impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }
    fn description(&self) -> &'static str {
        "List a directory's entries (directories end with /)."
    }
    fn parameters(&self) -> Value {
        path_schema("the directory to list")
    }
    async fn run(&self, args: &Value) -> Result<String, String> {
        let path = path_arg(args)?;
        let mut dir = tokio::fs::read_dir(path)
            .await
            .map_err(|e| format!("cannot list {path}: {e}"))?;
        let mut names = Vec::new();
        while let Some(entry) = dir
            .next_entry()
            .await
            .map_err(|e| format!("cannot list {path}: {e}"))?
        {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(names.join("\n"))
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
    async fn run(&self, _: &Value) -> Result<String, String> {
        Ok(humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string())
    }
}

/// The tools a session offers.
pub(crate) struct Toolbox {
    tools: Vec<Box<dyn Tool>>,
}

impl Toolbox {
    /// `read_file`, `list_dir`, `now`.
    pub(crate) fn builtin() -> Self {
        Toolbox {
            tools: vec![Box::new(ReadFile), Box::new(ListDir), Box::new(Now)],
        }
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
}

#[async_trait::async_trait]
impl hermes_core::driver::Tools for Toolbox {
    async fn call(&self, name: &str, arguments: &str) -> String {
        let Some(tool) = self.tools.iter().find(|t| t.name() == name) else {
            return format!("error: no tool named `{name}`");
        };
        let args: Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            match serde_json::from_str(arguments) {
                Ok(v) => v,
                Err(e) => return format!("error: arguments are not JSON: {e}"),
            }
        };
        tool.run(&args)
            .await
            .unwrap_or_else(|e| format!("error: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::driver::Tools as _;

    #[tokio::test]
    async fn tools_run_and_errors_become_results() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let tb = Toolbox::builtin();
        let p = dir.path().join("a.txt");
        let args = json!({"path": p}).to_string();
        assert_eq!(tb.call("read_file", &args).await, "hello");
        let args = json!({"path": dir.path()}).to_string();
        assert_eq!(tb.call("list_dir", &args).await, "a.txt\nsub/");
        assert!(
            tb.call("read_file", r#"{"path":"/no/such/file"}"#)
                .await
                .starts_with("error: cannot open")
        );
        assert!(tb.call("rm", "{}").await.contains("no tool named `rm`"));
        assert!(tb.call("now", "").await.ends_with('Z'));
    }
}
