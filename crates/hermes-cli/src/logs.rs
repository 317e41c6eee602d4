//! Logs: JSON lines in `$HERMES_HOME/logs/` (rotated daily, a week kept), written by the
//! commands that talk to providers or the store, and `hermes logs [--follow] [--level L]`.

use std::io::{self, BufRead as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::cli::LogsArgs;

/// Where logs go.
pub(crate) fn dir(home: &Path) -> PathBuf {
    home.join("logs")
}

/// The file appender: daily files `hermes.YYYY-MM-DD.jsonl`, seven kept.
pub(crate) fn appender(
    home: &Path,
) -> anyhow::Result<tracing_appender::rolling::RollingFileAppender> {
    std::fs::create_dir_all(dir(home))?;
    Ok(tracing_appender::rolling::RollingFileAppender::builder()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("hermes")
        .filename_suffix("jsonl")
        .max_log_files(7)
        .build(dir(home))?)
}

const LEVELS: [&str; 5] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];

fn rank(level: &str) -> usize {
    LEVELS
        .iter()
        .position(|l| l.eq_ignore_ascii_case(level))
        .unwrap_or(0)
}

/// One JSON log line as text: `time LEVEL target: message key=value …`, or `None` when below
/// `min` or not JSON.
fn render(line: &str, min: usize) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let level = value.get("level").and_then(Value::as_str).unwrap_or("INFO");
    if rank(level) < min {
        return None;
    }
    let time = value.get("timestamp").and_then(Value::as_str).unwrap_or("");
    let target = value.get("target").and_then(Value::as_str).unwrap_or("");
    let fields = value.get("fields").and_then(Value::as_object);
    let message = fields
        .and_then(|f| f.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = format!("{time} {level:>5} {target}: {message}");
    for (k, v) in fields
        .into_iter()
        .flatten()
        .filter(|(k, _)| *k != "message")
    {
        match v {
            Value::String(s) => out.push_str(&format!(" {k}={s}")),
            other => out.push_str(&format!(" {k}={other}")),
        }
    }
    Some(out)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
    files.sort();
    files
}

/// Runs `hermes logs`.
pub(crate) fn run(args: &LogsArgs, home: &Path) -> anyhow::Result<()> {
    let dir = dir(home);
    let min = rank(&args.level);
    let mut out = crate::out::stdout();
    let mut current: Option<(PathBuf, u64)> = None;
    for path in files(&dir) {
        let file = std::fs::File::open(&path)?;
        let mut reader = io::BufReader::new(file);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line)? > 0 {
            if let Some(text) = render(String::from_utf8_lossy(&line).trim_end(), min) {
                writeln!(out, "{text}")?;
            }
            line.clear();
        }
        let end = reader.stream_position()?;
        current = Some((path, end));
    }
    out.flush()?;
    if !args.follow {
        if current.is_none() {
            let _ = writeln!(io::stderr(), "hermes: no logs yet in {}", dir.display());
        }
        return Ok(());
    }
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let newest = files(&dir).pop();
        let Some(newest) = newest else { continue };
        let offset = match &current {
            Some((path, offset)) if *path == newest => *offset,
            _ => 0,
        };
        let mut file = std::fs::File::open(&newest)?;
        file.seek(io::SeekFrom::Start(offset))?;
        let mut reader = io::BufReader::new(file);
        let mut line = Vec::new();
        let mut consumed = offset;
        while reader.read_until(b'\n', &mut line)? > 0 {
            if !line.ends_with(b"\n") {
                break; // a line still being written
            }
            consumed += line.len() as u64;
            // One bad byte spoils one line, never the listing.
            if let Some(text) = render(String::from_utf8_lossy(&line).trim_end(), min) {
                writeln!(out, "{text}")?;
            }
            line.clear();
        }
        out.flush()?;
        current = Some((newest, consumed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_render_with_their_fields_and_levels_filter() {
        let line = r#"{"timestamp":"2026-12-02T12:00:00Z","level":"INFO","fields":{"message":"sending request","route":"deepseek","carriers":"{reasoning_content}"},"target":"hermes_core::driver"}"#;
        assert_eq!(
            render(line, rank("info")).unwrap(),
            "2026-12-02T12:00:00Z  INFO hermes_core::driver: sending request route=deepseek carriers={reasoning_content}"
        );
        assert_eq!(render(line, rank("warn")), None);
        assert_eq!(render("not json", 0), None);
    }
}
