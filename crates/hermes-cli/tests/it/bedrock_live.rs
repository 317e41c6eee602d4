//! Issue 17 end to end: the real binary against the strict `bedrock` simulator (SigV4 and API key).

use std::path::PathBuf;

use hermes_sim::{
    RecordedRequest, SIM_AWS_ACCESS_KEY_ID, SIM_AWS_SECRET_ACCESS_KEY, SIM_BEDROCK_API_KEY, Sim,
    Switches,
};
use hermes_test_support::home::Home;

use crate::tool_loop::{Row, Wire};
use serde_json::Value;

use crate::wire::{
    Turn, all_ok, loop_done, raw, refused_then_resent, sent_signatures, session_id, turns,
};

pub(crate) const CLAUDE: &str = "anthropic.claude-opus-4-6-v1:0";
pub(crate) const R1: &str = "deepseek.r1-v1:0";
pub(crate) const GPT_OSS: &str = "openai.gpt-oss-120b-1:0";
pub(crate) const NOVA: &str = "amazon.nova-2-lite-v1:0";
const LOOP: &str = "[tools=3] what time is it?";

pub(crate) const SIGV4: &[(&str, &str)] = &[
    ("AWS_ACCESS_KEY_ID", SIM_AWS_ACCESS_KEY_ID),
    ("AWS_SECRET_ACCESS_KEY", SIM_AWS_SECRET_ACCESS_KEY),
    ("AWS_REGION", "us-east-1"),
];

const API_KEY: &[(&str, &str)] = &[
    ("AWS_BEARER_TOKEN_BEDROCK", SIM_BEDROCK_API_KEY),
    ("AWS_REGION", "us-east-1"),
];

/// What these tests ask of a home beyond running hermes.
trait BedrockHome {
    /// Every row of the messages table: (session, position, reasoning_details).
    async fn rows(&self) -> Vec<(String, i64, Option<String>)>;
    /// The bytes of every file under the home (state.db, its journal, the logs), by path.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)>;
}

impl BedrockHome for Home {
    async fn rows(&self) -> Vec<(String, i64, Option<String>)> {
        crate::support::rows(
            self,
            "SELECT session_id, position, reasoning_details FROM messages ORDER BY session_id, position",
            None,
        )
        .await
    }

    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        crate::support::files_under(self.path())
            .into_iter()
            .map(|path| {
                let bytes = std::fs::read(&path).unwrap();
                (path, bytes)
            })
            .collect()
    }
}

/// The `chat` arguments of a new session on `provider` / `model` over `base`.
fn start_args<'a>(
    provider: &'a str,
    model: &'a str,
    base: &'a str,
    effort: bool,
    stream: bool,
) -> Vec<&'a str> {
    let mut args = vec!["--provider", provider, "--model", model, "--base-url", base];
    turn_args(&mut args, effort, stream, LOOP);
    args
}

fn turn_args<'a>(args: &mut Vec<&'a str>, effort: bool, stream: bool, query: &'a str) {
    if effort {
        args.extend(["--effort", "high"]);
    }
    if !stream {
        args.push("--no-stream");
    }
    args.extend(["-q", query]);
}

// ---------------------------------------------------------------------------------------------
// Stored blocks, as exported

// ---------------------------------------------------------------------------------------------
// What the simulator received

fn has_header(r: &RecordedRequest, name: &str) -> bool {
    r.headers.iter().any(|(h, _)| h == name)
}

/// `POST /model/{id}/{op}` as the simulator records it (the id percent-encoded).
fn model_path(model: &str, op: &str) -> String {
    format!("/model/{}/{op}", model.replace(':', "%3A"))
}

/// The messages open with a user message and alternate strictly.
fn alternates(r: &RecordedRequest) {
    let roles: Vec<&str> = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"user"), "{roles:?}");
    for pair in roles.windows(2) {
        assert_ne!(pair[0], pair[1], "{roles:?}");
    }
}

/// A SigV4-signed Converse request for `model`, streamed or not.
fn converse_request(r: &RecordedRequest, model: &str, stream: bool) {
    let op = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    assert_eq!(r.path, model_path(model, op));
    assert!(
        has_header(r, "authorization") && has_header(r, "x-amz-date"),
        "{:?}",
        r.headers
    );
    let body = r.body.as_object().unwrap();
    assert!(!body.contains_key("model") && !body.contains_key("anthropic_version"));
    alternates(r);
}

/// The `reasoningContent` blocks of each assistant message of a Converse request.
fn sent_reasoning(r: &RecordedRequest) -> Vec<Vec<Value>> {
    crate::support::assistants(&r.body)
        .map(|m| {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b.get("reasoningContent").cloned())
                .collect()
        })
        .collect()
}

/// The replay policy of a Bedrock Converse model (docs/spec.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    Signed,
    Strip,
    Unsigned,
}

impl Policy {
    /// What `request` must carry for `turns` (the stored assistant turns before it, the ones
    /// from `in_loop` on in the tool loop in flight).
    fn check(self, r: &RecordedRequest, turns: &[Turn], in_loop: usize) {
        let sent = sent_reasoning(r);
        assert_eq!(sent.len(), turns.len(), "{}", r.body);
        let text = raw(r);
        if self != Policy::Signed {
            for forbidden in ["signature", "redactedContent"] {
                assert!(!text.contains(forbidden), "{forbidden} in {text}");
            }
        }
        for (k, (sent, turn)) in sent.iter().zip(turns).enumerate() {
            if self == Policy::Strip && k < in_loop {
                assert!(sent.is_empty(), "turn {k} before the loop: {text}");
                continue;
            }
            let expected: Vec<Value> = turn
                .parsed()
                .into_iter()
                .map(|(_, thinking, signature)| match signature {
                    Some(s) => {
                        serde_json::json!({"reasoningText": {"text": thinking, "signature": s}})
                    }
                    None => serde_json::json!({"reasoningText": {"text": thinking}}),
                })
                .collect();
            assert_eq!(sent, &expected, "turn {k}: {text}");
            if self == Policy::Signed {
                let sigs: Vec<&str> = sent
                    .iter()
                    .map(|b| b["reasoningText"]["signature"].as_str().unwrap())
                    .collect();
                assert_eq!(sigs, turn.signatures(), "turn {k}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. A 3-step tool loop per replay policy, streamed and not, then resumed

/// A 3-step tool loop on Converse under the replay policy, then resumed: see
/// [`crate::tool_loop`].
impl Wire for Policy {
    type Turn = Turn;

    fn stored(&self, _: &Row, turn: &Turn, _: usize) {
        let parsed = turn.parsed();
        assert_eq!(parsed.len(), 1, "{turn:?}");
        assert_eq!(parsed[0].0, "thinking", "{turn:?}");
        assert!(!parsed[0].1.is_empty(), "{turn:?}");
        assert_eq!(parsed[0].2.is_some(), *self == Policy::Signed, "{turn:?}");
    }

    fn request(
        &self,
        row: &Row,
        r: &RecordedRequest,
        stream: bool,
        earlier: &[Turn],
        in_loop: usize,
    ) {
        all_ok(std::slice::from_ref(r));
        converse_request(r, row.model, stream);
        if in_loop == 0 {
            let fields = &r.body["additionalModelRequestFields"];
            assert_eq!(!fields.is_null(), row.effort, "{}", r.body);
        }
        self.check(r, earlier, in_loop);
    }
}

/// A 3-step tool loop on InvokeModel (Anthropic's body for Bedrock), then resumed: see
/// [`crate::tool_loop`].
pub(crate) struct Invoke;

impl Wire for Invoke {
    type Turn = Turn;

    fn stored(&self, _: &Row, turn: &Turn, _: usize) {
        assert_eq!(turn.signatures().len(), 1, "{turn:?}");
    }

    fn request(&self, _: &Row, r: &RecordedRequest, stream: bool, earlier: &[Turn], _: usize) {
        all_ok(std::slice::from_ref(r));
        invoke_request(r, stream, earlier);
    }
}

/// An InvokeModel request: the path, SigV4, and an Anthropic body for Bedrock carrying every
/// stored item of `turns` byte for byte with exactly its signature.
fn invoke_request(r: &RecordedRequest, stream: bool, turns: &[Turn]) {
    let op = if stream {
        "invoke-with-response-stream"
    } else {
        "invoke"
    };
    assert_eq!(r.path, model_path(CLAUDE, op));
    assert!(has_header(r, "x-amz-date"), "{:?}", r.headers);
    assert_eq!(r.body["anthropic_version"], "bedrock-2023-05-31");
    assert!(r.body.get("model").is_none(), "{}", r.body);
    alternates(r);
    let text = raw(r);
    for item in turns.iter().flat_map(|t| &t.items) {
        assert!(text.contains(item.as_str()), "{item} not in {text}");
    }
    let stored: Vec<Vec<String>> = turns.iter().map(Turn::signatures).collect();
    assert_eq!(sent_signatures(r), stored, "{text}");
}

// ---------------------------------------------------------------------------------------------
// 2. A Bedrock API key

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bedrock_api_key_alone_is_sent_as_a_bearer_header_without_a_sigv4_date() {
    let (sim, home, base) = crate::support::sim_own_home("bedrock").await;
    let args = start_args("bedrock", CLAUDE, &base, true, true);
    let (out, _) = home.chat_stderr(&args, API_KEY).await;
    loop_done(&out, 3, 4);
    let requests = sim.requests();
    assert_eq!(requests.len(), 4);
    all_ok(&requests);
    for r in &requests {
        assert!(
            r.headers
                .iter()
                .any(|(h, v)| h == "authorization" && v == "<redacted>"),
            "{:?}",
            r.headers
        );
        for sigv4 in ["x-amz-date", "x-amz-security-token", "x-amz-content-sha256"] {
            assert!(!has_header(r, sigv4), "{sigv4}: {:?}", r.headers);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Redacted content refused: one strip-and-resend, history untouched

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_redacted_content_is_resent_once_without_it_and_the_stored_history_is_unchanged() {
    let sim = Sim::start_with("bedrock", Switches::default().with_redacted_reasoning())
        .await
        .unwrap();
    let home = crate::support::own_home();
    let base = sim.base_url();
    let args = start_args("bedrock", CLAUDE, &base, true, true);
    let (out, _) = home.chat_stderr(&args, SIGV4).await;
    let id = session_id(&out);
    all_ok(&sim.requests());
    let before = home.export_text(&id).await;
    let stored = turns(&before);
    assert_eq!(stored.len(), 4);
    for turn in &stored {
        let kinds: Vec<String> = turn.parsed().into_iter().map(|p| p.0).collect();
        assert_eq!(kinds, ["thinking", "redacted_thinking"], "{turn:?}");
    }
    let rows_before = home.rows().await;

    sim.set_switches(
        Switches::default()
            .with_redacted_reasoning()
            .refusing_redacted(),
    );
    let (stderr, refusal, requests) = refused_then_resent(&home, &sim, &id, SIGV4).await;
    let message = refusal["message"].as_str().unwrap();
    assert!(
        message.contains("redacted") && message.contains("encrypted"),
        "{message}"
    );
    assert!(raw(&requests[0]).contains("redactedContent"));
    let resent = raw(&requests[1]);
    assert!(!resent.contains("redactedContent"), "{resent}");
    alternates(&requests[1]);
    // The signed thinking blocks still go, each with its stored signature.
    let sent: Vec<Vec<String>> = sent_reasoning(&requests[1])
        .iter()
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| b["reasoningText"]["signature"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect();
    let signatures: Vec<Vec<String>> = stored.iter().map(Turn::signatures).collect();
    assert_eq!(sent, signatures);
    // The user is told in one `hermes:` line (the driver's WARN log of the same recovery is
    // not counted: it is the structured log, shown at the default stderr level).
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("hermes: ") && l.contains("redacted"))
        .collect();
    assert_eq!(notices.len(), 1, "{stderr}");
    assert!(
        notices[0].contains(
            "the provider refused redacted reasoning content: resending once without the redacted blocks (the stored history is unchanged, no verdict kept)"
        ),
        "{stderr}"
    );

    // The stored history keeps its bytes: the export's items and state.db's rows.
    let after = turns(&home.export_text(&id).await);
    assert_eq!(after.len(), 5);
    assert_eq!(after[..4], stored[..]);
    let rows_after = home.rows().await;
    assert_eq!(rows_after[..rows_before.len()], rows_before[..]);
}

// ---------------------------------------------------------------------------------------------
// 4. Wrong credentials, and no secret anywhere

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_key_fails_with_one_line_naming_aws_credentials_and_stores_nothing() {
    const WRONG: &str = "hermes+sim/Wrong/Secret/Key/EXAMPLEKEY9999";
    let (sim, home, base) = crate::support::sim_own_home("bedrock").await;
    let args = ["chat", "--json", "--provider", "bedrock", "--model", CLAUDE];
    let args = [&args[..], &["--base-url", base.as_str(), "-q", LOOP]].concat();
    let env = [
        ("AWS_ACCESS_KEY_ID", SIM_AWS_ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", WRONG),
        ("AWS_REGION", "us-east-1"),
    ];
    let out = home.run(&args, &env).await;
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stdout, "");
    // Besides the announced session id, one line.
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("hermes: session "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("hermes: error: "), "{stderr}");
    assert!(
        errors[0].contains("refused the AWS credentials") && errors[0].contains("HTTP 403"),
        "{stderr}"
    );
    let requests = sim.requests();
    assert_eq!(requests.len(), 1, "no retry with the same credentials");
    assert_eq!(requests[0].status, 403);
    assert!(
        requests[0].response.contains("signature we calculated"),
        "{}",
        requests[0].response
    );
    let (list, _) = home.ok_with(&["sessions", "list"], &[]).await;
    assert_eq!(list.trim(), "", "no session is stored");
    assert!(home.rows().await.is_empty(), "no message is stored");
    assert!(!stderr.contains(WRONG));
    for (path, bytes) in home.files() {
        assert!(!contains(&bytes, WRONG), "{}", path.display());
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neither_the_secret_key_nor_the_api_key_reaches_output_logs_or_state_db() {
    let (sim, home, base) = crate::support::sim_own_home("bedrock").await;
    // The most verbose logging, to the terminal and to the files.
    let verbose = [("HERMES_LOG", "trace"), ("HERMES_FILE_LOG", "trace")];
    let mut outputs = Vec::new();
    for (provider, creds) in [
        ("bedrock", SIGV4),
        ("bedrock-anthropic", SIGV4),
        ("bedrock", API_KEY),
    ] {
        let env = [creds, &verbose[..]].concat();
        let args = start_args(provider, CLAUDE, &base, true, true);
        let args = [&["chat", "--json"][..], &args].concat();
        let (stdout, stderr) = home.ok_with(&args, &env).await;
        let id = session_id(&serde_json::from_str(&stdout).unwrap());
        let (export, _) = home.ok_with(&["sessions", "export", &id], &env).await;
        outputs.extend([stdout, stderr, export]);
    }
    all_ok(&sim.requests());
    let files = home.files();
    assert!(
        files
            .iter()
            .any(|(p, _)| p.starts_with(home.path().join("logs"))),
        "a log file was written"
    );
    assert!(files.iter().any(|(p, _)| *p == home.db()));
    for secret in [SIM_AWS_SECRET_ACCESS_KEY, SIM_BEDROCK_API_KEY] {
        for text in &outputs {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        for (path, bytes) in &files {
            assert!(!contains(bytes, secret), "{secret} in {}", path.display());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Offline

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_bedrock_simulator_needs_no_aws_environment() {
    let home = crate::support::own_home();
    let (out, _) = home
        .chat_stderr(
            &[
                "--provider",
                "sim",
                "--base-url",
                "sim://bedrock",
                "--effort",
                "high",
                "-q",
                "[tools=2] time?",
            ],
            &[],
        )
        .await;
    loop_done(&out, 2, 3);
    let stored = turns(&home.export_text(&session_id(&out)).await);
    assert_eq!(stored.len(), 3);
    for turn in &stored {
        assert_eq!(turn.signatures().len(), 1, "signed thinking: {turn:?}");
    }
}
