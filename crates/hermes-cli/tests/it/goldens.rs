//! Goldens: the exact bodies `hermes preview` prints for `examples/session.json` and the
//! standard history (N = 2) on every built-in chat-completions route, pinned as SHA-256 so a
//! refactor cannot change a byte unnoticed. Regenerate deliberately with
//! `HERMES_BLESS=1 cargo test -p hermes-cli --test goldens`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// (provider, model, base URL or none for the registry's): one target per built-in route, and
/// every chat provider of the registry.
const TARGETS: &[(&str, &str, Option<&str>)] = &[
    ("openai", "gpt-5", None),
    ("openrouter", "deepseek/deepseek-v4-pro", None),
    ("openrouter", "anthropic/claude-sonnet-5", None),
    ("deepseek", "deepseek-v4-pro", None),
    ("kimi-coding", "kimi-k2.6", None),
    ("kimi-coding-cn", "kimi-k2.5", None),
    ("xiaomi", "mimo-v2.5-pro", None),
    ("zai", "glm-5.3", None),
    ("alibaba", "qwen3.6-plus", None),
    ("mistral", "magistral-medium-latest", None),
    ("groq", "openai/gpt-oss-120b", None),
    ("cerebras", "gpt-oss-120b", None),
    ("sambanova", "DeepSeek-R1", None),
    ("fireworks", "accounts/fireworks/models/deepseek-v4", None),
    ("novita", "deepseek/deepseek-v4", None),
    ("minimax", "MiniMax-M2", None),
    ("nous", "Hermes-5", None),
    ("kilocode", "x/y", None),
    ("ai-gateway", "x/y", None),
    ("ollama-cloud", "gpt-oss:120b", None),
    ("gemini-openai", "gemini-3-pro-preview", None),
    ("copilot", "gemini-3-pro-preview", None),
    ("lmstudio", "qwen3-32b", None),
    ("custom", "qwen3-32b", Some("http://127.0.0.1:8080/v1")),
    ("custom", "qwen3-32b", Some("https://models.example.com/v1")),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn preview(
    home: &Path,
    history: &Path,
    provider: &str,
    model: &str,
    base: Option<&str>,
) -> Vec<u8> {
    let mut cmd = crate::support::command(
        home,
        &[
            "preview",
            "--history",
            history.to_str().unwrap(),
            "--provider",
            provider,
            "--model",
            model,
        ],
        &[],
    );
    if let Some(base) = base {
        cmd.args(["--base-url", base]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{provider} {model}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn preview_bodies_are_byte_identical_to_the_pinned_goldens() {
    let home = crate::support::home();
    let histories = [
        ("session", root().join("examples/session.json")),
        (
            "standard-2",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goldens/standard-2.json"),
        ),
    ];
    let mut got = BTreeMap::new();
    for (name, file) in &histories {
        for (provider, model, base) in TARGETS {
            let body = preview(home.path(), file, provider, model, *base);
            let key = format!("{name} {provider} {model} {}", base.unwrap_or("-"));
            got.insert(key, format!("{:x} {}", Sha256::digest(&body), body.len()));
        }
    }
    let pinned = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goldens/preview.json");
    if std::env::var_os("HERMES_BLESS").is_some() {
        std::fs::write(&pinned, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let want: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(&pinned).unwrap()).unwrap();
    let differ: Vec<&String> = want
        .keys()
        .chain(got.keys())
        .filter(|k| want.get(*k) != got.get(*k))
        .collect();
    assert!(differ.is_empty(), "preview bodies changed: {differ:?}");
}
