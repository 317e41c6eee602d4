//! A 5,000-character model id gets its answer, streamed or not, and the stream does not grow
//! with the square of the id (every chunk repeats the id, so the chunk count must stay bounded).

use std::time::Duration;

use hermes_sim::Sim;
use serde_json::{Value, json};

use crate::common;

/// Posts `body` to the chat-completions path; returns the status and the de-chunked body.
async fn post(base: &str, body: &[u8]) -> (u16, String) {
    let resp = common::send(base, "POST", "/v1/chat/completions", &[], body).await;
    (resp.status, resp.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_five_thousand_character_model_id_gets_its_answer() {
    let sim = Sim::start("openai").await.unwrap();
    let model = "gpt-5-".repeat(1_000)[..5_000].to_owned();
    for stream in [false, true] {
        let body = json!({"model": model, "stream": stream,
                          "messages": [{"role": "user", "content": "hi"}]});
        // A hang guard only, not a timing assertion.
        let (status, text) = tokio::time::timeout(
            Duration::from_secs(30),
            post(&sim.base_url(), body.to_string().as_bytes()),
        )
        .await
        .expect("the simulator answers a long model id");
        assert_eq!(status, 200, "{text}");
        if !stream {
            let reply: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(reply["model"], model.as_str());
            let content = reply["choices"][0]["message"]["content"].as_str().unwrap();
            assert!(content.contains("You said: hi"), "{content}");
            continue;
        }
        let events: Vec<Value> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert!(text.ends_with("data: [DONE]\n\n"));
        assert!(events.iter().all(|e| e["model"] == model.as_str()));
        // Each chunk carries the whole id: their number must not grow with it.
        assert!(events.len() <= 40, "{} chunks", events.len());
        let content: String = events
            .iter()
            .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert!(content.contains("You said: hi"), "{content}");
        assert_eq!(
            events.last().unwrap()["choices"][0]["finish_reason"],
            "stop"
        );
    }
}
