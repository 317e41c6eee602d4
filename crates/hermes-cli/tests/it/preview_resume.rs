//! `hermes preview --session ID` prints the body the next `hermes chat --resume ID` sends: with
//! `--compact` the same bytes the provider receives (tools, stream, thinking and sampling
//! fields included), pretty-printed otherwise; on every wire, through the real binary against
//! the strict simulators. And after the offline runs of the README and docs/cli.md
//! (`--provider sim`), its `--explain` replays what chat replays.

use std::process::Output;

use hermes_sim::{SIM_AWS_ACCESS_KEY_ID, SIM_AWS_SECRET_ACCESS_KEY, Sim};
use hermes_test_support::home::Home;
use serde_json::Value;

const LOOP: &str = "[tools=3] time?";
const AGAIN: &str = "and now?";

/// What these tests ask of a home beyond running hermes.
pub(crate) trait PreviewHome {
    /// Runs hermes and expects success.
    async fn succeed(&self, args: &[&str], env: &[(&str, &str)]) -> Output;
}

impl PreviewHome for Home {
    async fn succeed(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.run(args, env).await;
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

/// Environment variables a run sets.
type Env = &'static [(&'static str, &'static str)];

/// The environments of the targets.
const DEEPSEEK: Env = &[("DEEPSEEK_API_KEY", "sk-test")];
const ANTHROPIC: Env = &[("ANTHROPIC_API_KEY", "sk-ant-test")];
const GEMINI: Env = &[("GEMINI_API_KEY", "test-key")];
const OPENAI: Env = &[("OPENAI_API_KEY", "sk-test")];
const SIGV4: Env = &[
    ("AWS_ACCESS_KEY_ID", SIM_AWS_ACCESS_KEY_ID),
    ("AWS_SECRET_ACCESS_KEY", SIM_AWS_SECRET_ACCESS_KEY),
    ("AWS_REGION", "us-east-1"),
];
/// Bedrock's Claude.
const CLAUDE: &str = "anthropic.claude-opus-4-6-v1:0";

/// One target per wire: (provider, simulator profile, model, environment).
const WIRES: &[(&str, &str, &str, Env)] = &[
    ("deepseek", "deepseek-v4", "deepseek-v4-pro", DEEPSEEK),
    ("anthropic", "anthropic", "claude-opus-4-6", ANTHROPIC),
    ("gemini", "gemini", "gemini-3-pro-preview", GEMINI),
    ("openai-responses", "openai-responses", "gpt-5.2", OPENAI),
    ("bedrock", "bedrock", CLAUDE, SIGV4),
    ("bedrock-anthropic", "bedrock", CLAUDE, SIGV4),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_compact_is_the_body_the_next_resume_sends_on_every_wire() {
    for (provider, profile, model, env) in WIRES {
        for stream in [true, false] {
            let sim = Sim::start(profile).await.unwrap();
            let base = sim.base_url();
            let home = crate::support::own_home();
            let no_stream: &[&str] = if stream { &[] } else { &["--no-stream"] };
            let target = crate::support::target(provider, model, &base, &["--effort", "high"]);
            let start = [&target[..], &["-q", LOOP], no_stream].concat();
            let id = home.chat_id(&start, env).await;

            let preview = [
                &["preview", "--session", id.as_str(), "-q", AGAIN][..],
                no_stream,
            ]
            .concat();
            let pretty = home.succeed(&preview, env).await.stdout;
            let compact = [&preview[..], &["--compact"]].concat();
            let previewed = home.succeed(&compact, env).await.stdout;

            sim.clear_requests();
            let resume = [&["--resume", id.as_str(), "-q", AGAIN][..], no_stream].concat();
            home.chat_id(&resume, env).await;
            let sent = sim.requests();
            assert_eq!(sent[0].status, 200, "{provider}: {}", sent[0].response);
            // One line: the body as sent, then the newline preview ends its output with.
            assert_eq!(
                String::from_utf8_lossy(&previewed),
                format!("{}\n", String::from_utf8_lossy(&sent[0].raw)),
                "{provider} (stream {stream}): preview --compact differs from the resumed request"
            );
            for field in ["tools", "stream", "messages", "contents", "input"] {
                if sent[0].body.get(field).is_some() {
                    assert!(
                        String::from_utf8_lossy(&previewed).contains(&format!("\"{field}\"")),
                        "{provider}: {field}"
                    );
                }
            }
            let pretty: Value = serde_json::from_slice(&pretty).unwrap();
            assert_eq!(pretty, sent[0].body, "{provider}: pretty preview");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_readmes_offline_runs_preview_explain_replays_what_chat_replays() {
    for profile in ["anthropic", "gemini", "openai-responses", "bedrock"] {
        let home = crate::support::own_home();
        let url = format!("sim://{profile}");
        let start = [
            "--provider",
            "sim",
            "--base-url",
            url.as_str(),
            "--effort",
            "high",
            "-q",
            LOOP,
        ];
        let id = home.chat_id(&start, &[]).await;
        let out = home
            .succeed(&["preview", "--session", &id, "--explain"], &[])
            .await;
        let explain = String::from_utf8_lossy(&out.stderr);
        for wrong in ["unknown relay", "(provenance)", "left out"] {
            assert!(!explain.contains(wrong), "{profile}: {wrong}\n{explain}");
        }
        let body: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            body.get("tools").is_some() || body.get("toolConfig").is_some(),
            "{profile}: {body}"
        );
    }
}
