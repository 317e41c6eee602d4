//! `preview` of a stored session is the next `chat --resume`'s body, byte for byte, on every
//! simulator profile (`--provider sim --base-url sim://PROFILE`): the same settlement, the same
//! host (the loopback one every simulator binds, though each chat starts a fresh simulator on a
//! fresh port), the same wire, tools, stream and thinking request.

use hermes_core::driver::Tools;
use hermes_core::{Effort, RawJson, ThinkingRequest};
use hermes_engine::store::Store;
use hermes_engine::{ChatSession, Choice, Engine, OpenOptions, Preview, PreviewOptions, Toolset};

/// The tool the simulator's scripted model calls (`[tools=N]`).
struct Clock;

#[async_trait::async_trait]
impl Tools for Clock {
    async fn call(&self, _: &str, _: &str) -> String {
        "2026-12-03T20:00:00Z".to_owned()
    }
}

fn definitions() -> RawJson {
    RawJson::from_text(
        r#"[{"type":"function","function":{"name":"now","description":"The current date and time (UTC, RFC 3339).","parameters":{"type":"object","properties":{}}}}]"#,
    )
    .unwrap()
}

fn toolset() -> Toolset {
    Toolset {
        tools: std::sync::Arc::new(Clock),
        definitions: Some(definitions()),
    }
}

/// The thinking request docs/cli.md's offline runs use, where the profile's model takes one.
fn effort(profile: &str) -> ThinkingRequest {
    match profile {
        "mistral" | "groq" | "cerebras" | "local" | "openai" | "copilot" | "gemini-openai" => {
            ThinkingRequest::NoPreference
        }
        _ => ThinkingRequest::Effort(Effort::High),
    }
}

async fn open(engine: &Engine, db: &std::path::Path, options: OpenOptions) -> ChatSession {
    ChatSession::open(engine, Store::open(db).await.unwrap(), options, toolset())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_of_a_sim_session_is_the_next_resumes_body_byte_for_byte_on_every_profile() {
    let engine = crate::sim_engine();
    for profile in hermes_sim::PROFILES {
        for stream in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("state.db");
            let url = format!("sim://{}", profile.name);
            let choice = Choice::new(Some("sim"), None, Some(&url));
            let mut chat = open(
                &engine,
                &db,
                OpenOptions::new(choice)
                    .thinking(effort(profile.name))
                    .stream(stream),
            )
            .await;
            chat.turn("[tools=3] time?", &|_| {})
                .await
                .unwrap_or_else(|e| panic!("{} first turn: {e}", profile.name));
            let id = chat.id().unwrap().to_owned();
            let store = chat.store().clone();
            chat.close().await.unwrap();

            let file = store.export(&id).await.unwrap();
            let preview = Preview::new(
                &engine,
                file,
                PreviewOptions::new(Choice::default())
                    .query(Some("and now?".to_owned()))
                    .stream(stream)
                    .tools(Some(definitions())),
            )
            .unwrap()
            .with_fleet_verdicts(&store, hermes_engine::DEFAULT_REPROBE_AFTER)
            .await
            .unwrap();
            let previewed = preview.compact_body().unwrap();
            let explain = preview.explain().join("\n");

            let mut resumed = open(
                &engine,
                &db,
                OpenOptions::new(Choice::default())
                    .resume(Some(id.clone()))
                    .stream(stream),
            )
            .await;
            resumed
                .turn("and now?", &|_| {})
                .await
                .unwrap_or_else(|e| panic!("{} resumed turn: {e}", profile.name));
            let sent = resumed.simulator::<hermes_sim::Sim>().unwrap().requests();
            assert_eq!(
                sent[0].status, 200,
                "{}: {}",
                profile.name, sent[0].response
            );
            assert_eq!(
                String::from_utf8_lossy(&previewed),
                String::from_utf8_lossy(&sent[0].raw),
                "{} (stream {stream}): preview differs from what the resumed chat sent\n{explain}",
                profile.name
            );
            assert!(
                !explain.contains("unknown relay") && !explain.contains("(provenance)"),
                "{}: {explain}",
                profile.name
            );
            // Pretty-printed, it is the same JSON.
            let pretty: serde_json::Value =
                serde_json::from_slice(&preview.body().unwrap()).unwrap();
            assert_eq!(pretty, sent[0].body, "{}", profile.name);
            resumed.close().await.unwrap();
        }
    }
}
