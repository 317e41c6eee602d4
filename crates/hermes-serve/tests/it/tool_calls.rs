//! The gateway never runs a tool: a model that calls one the request did not declare gets its
//! call to the client as it made it (finish reason `tool_calls`, Messages' `stop_reason:
//! tool_use`), whole and streamed, after exactly one upstream request — as a plain proxy would.

use serde_json::{Value, json};

/// A user turn that makes the simulator call its `now` tool, declared or not.
const ASK: &str = "[tools=1] what time is it?";

/// Through `door` (`chat` or `messages`), whole or streamed, the simulated model calls `now`
/// with no tools declared: the client gets the call (the door's tool-call stop) and the
/// upstream got one request, itself declaring no tools. Returns what the client got.
async fn undeclared_call(door: &str, stream: bool) -> String {
    let (sim, gateway) = crate::deepseek_gateway(|c| c).await;
    let body = json!({
        "model": "deepseek/deepseek-v4-pro",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": ASK}],
        "stream": stream,
    });
    let response = match door {
        "chat" => gateway.chat(&body).await,
        _ => gateway.messages(&body).await,
    };
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{door}, stream {stream}: {text}");
    let requests = sim.requests();
    assert_eq!(
        requests.len(),
        1,
        "{door}, stream {stream}: one upstream request, none the client never sees: {:#?}",
        requests.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert!(
        requests[0].body.get("tools").is_none(),
        "{}",
        requests[0].body
    );
    assert!(
        !text.contains("no tool named"),
        "{door}, stream {stream}: {text}"
    );
    gateway.stop().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_tool_call_reaches_a_chat_client_as_made_whole_and_streamed() {
    let whole: Value = serde_json::from_str(&undeclared_call("chat", false).await).unwrap();
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{whole}");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["name"], "now",
        "{whole}"
    );

    let chunks = crate::sse_data(&undeclared_call("chat", true).await);
    let named = chunks
        .iter()
        .any(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "now");
    assert!(named, "a tool call delta: {chunks:#?}");
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("tool_calls")], "{chunks:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_tool_call_reaches_a_messages_client_as_made_whole_and_streamed() {
    let whole: Value = serde_json::from_str(&undeclared_call("messages", false).await).unwrap();
    assert_eq!(whole["stop_reason"], "tool_use", "{whole}");
    let call = crate::tool_use_of(&whole["content"])
        .unwrap_or_else(|| panic!("a tool_use block: {whole}"));
    assert_eq!(call["name"], "now", "{whole}");

    let events = crate::sse_data(&undeclared_call("messages", true).await);
    let started = events.iter().any(|e| {
        e["type"] == "content_block_start"
            && e["content_block"]["type"] == "tool_use"
            && e["content_block"]["name"] == "now"
    });
    assert!(started, "a tool_use block: {events:#?}");
    let stops: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_delta")
        .map(|e| &e["delta"]["stop_reason"])
        .collect();
    assert_eq!(stops, [&json!("tool_use")], "{events:#?}");
}
