//! Sampling parameters on every wire: the exact body each wire encodes with every parameter it
//! can send set (its provider's spelling, in its writing order), and the typed
//! `TransportError::Unsupported` naming each parameter it cannot send — or cannot send together
//! with the thinking it was asked for — instead of a silent drop.

use hermes_core::sampling::{ResponseFormat, Sampling, ToolChoice};
use hermes_core::{
    Effort, Message, RawJson, RequestParts, ResolveOptions, RouteTarget, ThinkingRequest,
    TransportError, Verdicts, Wire,
};
use hermes_providers::builtin_table;
use hermes_wire_anthropic::AnthropicWire;
use hermes_wire_bedrock::BedrockWire;
use hermes_wire_chat::HttpChat;
use hermes_wire_gemini::{Flavor as GeminiFlavor, GeminiWire};

use crate::support;

const TOOLS: &str = r#"[{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]"#;
const SCHEMA: &str = r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#;

fn history() -> Vec<Message> {
    hermes_core::parse_history(
        r#"[{"role":"system","content":"Be brief."},{"role":"user","content":"Time?"}]"#,
    )
    .unwrap()
    .messages
}

fn schema() -> ResponseFormat {
    ResponseFormat::JsonSchema {
        name: "answer".into(),
        schema: RawJson::from_text(SCHEMA).unwrap(),
        strict: Some(true),
    }
}

/// Every parameter set.
pub(crate) fn full() -> Sampling {
    Sampling::new()
        .max_tokens(512)
        .temperature(0.2)
        .top_p(0.9)
        .stop(["END"])
        .tool_choice(ToolChoice::Function("now".into()))
        .parallel_tool_calls(false)
        .response_format(schema())
        .seed(7)
        .user("user-1")
}

/// `full` without the parameters named.
fn without(names: &[&str]) -> Sampling {
    let mut s = full();
    for name in names {
        match *name {
            "max_tokens" => s.max_tokens = None,
            "temperature" => s.temperature = None,
            "top_p" => s.top_p = None,
            "stop" => s.stop.clear(),
            "tool_choice" => s.tool_choice = None,
            "parallel_tool_calls" => s.parallel_tool_calls = None,
            "response_format" => s.response_format = None,
            "seed" => s.seed = None,
            "user" => s.user = None,
            other => panic!("no parameter {other}"),
        }
    }
    s
}

/// No thinking preference.
const NO_PREFERENCE: ThinkingRequest = ThinkingRequest::NoPreference;
/// High effort.
const HIGH: ThinkingRequest = ThinkingRequest::Effort(Effort::High);
/// Low effort.
const LOW: ThinkingRequest = ThinkingRequest::Effort(Effort::Low);

/// The body `wire` encodes for `sampling` at `at` (the provider, base URL and model), or its
/// error.
fn encode(
    wire: &dyn Wire,
    at: (&str, &str, &str),
    thinking: ThinkingRequest,
    sampling: &Sampling,
) -> Result<String, TransportError> {
    encode_streamed(wire, at, thinking, sampling, false)
}

/// As [`encode`], streamed or not; `at` is the provider, base URL and model.
fn encode_streamed(
    wire: &dyn Wire,
    at: (&str, &str, &str),
    thinking: ThinkingRequest,
    sampling: &Sampling,
    stream: bool,
) -> Result<String, TransportError> {
    support::with_parts(at, &history(), TOOLS, |parts| {
        let parts = parts.thinking(thinking).stream(stream).sampling(sampling);
        wire.encode(&parts)
            .map(|out| String::from_utf8(out.body).unwrap())
    })
}

/// The body `wire_id` (`bedrock`, `gemini`, `vertex-gemini`, `openai-responses`) encodes for
/// `model` with every sampling parameter it can send set, `stream`ed or not: the SDK schema
/// table's `Sampling` rows (`sdk_schema`).
pub(crate) fn sdk_body(wire_id: &str, model: &str, stream: bool) -> String {
    let none = ThinkingRequest::NoPreference;
    let body = match wire_id {
        "bedrock" => {
            let sampling = without(&["seed", "user", "parallel_tool_calls"]);
            encode(&bedrock(), ("bedrock", BEDROCK, model), none, &sampling)
        }
        "gemini" | "vertex-gemini" => {
            let sampling = without(&["user", "parallel_tool_calls"]).top_k(40);
            let mut w = gemini();
            let base = if wire_id == "vertex-gemini" {
                w.target.flavor = GeminiFlavor::Vertex {
                    project: "p".into(),
                    region: "us-central1".into(),
                };
                hermes_wire_gemini::vertex_base_url("us-central1")
            } else {
                GEMINI.to_owned()
            };
            w.target.base_url = base.clone();
            encode(&w, (wire_id, &base, model), none, &sampling)
        }
        _ => {
            let w = support::responses_at("https://api.openai.com/v1");
            // Reasoning off: OpenAI's reasoning models take temperature and top_p only so.
            let sampling = without(&["stop", "seed"]);
            let at = (wire_id, "https://api.openai.com/v1", model);
            encode_streamed(&w, at, ThinkingRequest::Off, &sampling, stream)
        }
    };
    body.unwrap_or_else(|e| panic!("{wire_id} {model}: {e}"))
}

/// Asserts `result` is the refusal of `parameter`, its text naming it and `why`.
fn check_unsupported(result: Result<String, TransportError>, parameter: &str, why: &str) {
    match result {
        Err(e @ TransportError::Unsupported { parameter: p, .. }) => {
            assert_eq!(p, parameter, "{e}");
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("cannot send {parameter} to ")) && text.contains(why),
                "{text}"
            );
        }
        other => panic!("expected {parameter} refused, got {other:?}"),
    }
}

fn chat(base_url: &str) -> HttpChat {
    support::chat_at(base_url)
}

const CHAT_MESSAGES: &str =
    r#""messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Time?"}]"#;

#[test]
fn chat_completions_spell_sampling_per_route() {
    let compatible = "https://api.together.xyz/v1";
    let body = encode(
        &chat(compatible),
        ("together", compatible, "m"),
        NO_PREFERENCE,
        &full(),
    );
    let body = body.unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"m",{CHAT_MESSAGES},"tools":{TOOLS},"max_tokens":512,"temperature":0.2,"top_p":0.9,"stop":["END"],"tool_choice":{{"type":"function","function":{{"name":"now"}}}},"parallel_tool_calls":false,"response_format":{{"type":"json_schema","json_schema":{{"name":"answer","schema":{SCHEMA},"strict":true}}}},"seed":7,"user":"user-1"}}"#
        )
    );
    // OpenAI itself: `max_completion_tokens`.
    let openai = "https://api.openai.com/v1";
    let sampling = without(&["response_format", "tool_choice"]);
    let body = encode(
        &chat(openai),
        ("openai", openai, "gpt-5.1"),
        NO_PREFERENCE,
        &sampling,
    );
    let body = body.unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"gpt-5.1",{CHAT_MESSAGES},"tools":{TOOLS},"max_completion_tokens":512,"temperature":0.2,"top_p":0.9,"stop":["END"],"parallel_tool_calls":false,"seed":7,"user":"user-1"}}"#
        )
    );
    // An OpenAI reasoning model that cannot turn reasoning off takes no temperature but 1.
    let sampling = Sampling::new().temperature(0.2);
    check_unsupported(
        encode(
            &chat(openai),
            ("openai", openai, "gpt-5"),
            NO_PREFERENCE,
            &sampling,
        ),
        "temperature",
        "only with reasoning effort none; this model cannot turn reasoning off",
    );
    // Strict Groq: `max_completion_tokens`, the thinking request after the sampling.
    let groq = "https://api.groq.com/openai/v1";
    let sampling = Sampling::new()
        .max_tokens(64)
        .tool_choice(ToolChoice::Required);
    let body = encode(&chat(groq), ("groq", groq, "qwen3"), HIGH, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"qwen3",{CHAT_MESSAGES},"tools":{TOOLS},"max_completion_tokens":64,"tool_choice":"required","reasoning_effort":"high"}}"#
        )
    );
    // Strict Mistral: `max_tokens`, `random_seed`, and no `user` (refused: its schema forbids
    // unknown fields with 422).
    let mistral = "https://api.mistral.ai/v1";
    let large = ("mistral", mistral, "mistral-large");
    let sampling = Sampling::new()
        .max_tokens(64)
        .seed(7)
        .tool_choice(ToolChoice::None)
        .response_format(ResponseFormat::JsonObject);
    let body = encode(&chat(mistral), large, NO_PREFERENCE, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"mistral-large",{CHAT_MESSAGES},"tools":{TOOLS},"max_tokens":64,"tool_choice":"none","response_format":{{"type":"json_object"}},"random_seed":7}}"#
        )
    );
    let sampling = Sampling::new().user("u");
    check_unsupported(
        encode(&chat(mistral), large, NO_PREFERENCE, &sampling),
        "user",
        "Mistral",
    );
}

fn anthropic(model_base: &str) -> AnthropicWire {
    support::anthropic_at(model_base)
}

const ANTHROPIC: &str = "https://api.anthropic.com";

/// Claude Opus 4.6 at the first-party API.
const OPUS46: (&str, &str, &str) = ("anthropic", ANTHROPIC, "claude-opus-4-6");

#[test]
fn anthropic_messages_map_what_the_api_has_and_refuse_the_rest() {
    let w = anthropic(ANTHROPIC);
    let sampling = without(&["temperature", "top_p", "seed"]);
    let body = encode(&w, OPUS46, NO_PREFERENCE, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"claude-opus-4-6","max_tokens":512,"system":[{{"type":"text","text":"Be brief.","cache_control":{{"type":"ephemeral"}}}}],"messages":[{{"role":"user","content":[{{"type":"text","text":"Time?","cache_control":{{"type":"ephemeral"}}}}]}}],"tools":[{{"name":"now","description":"The time.","input_schema":{{"type":"object","properties":{{"tz":{{"type":"string"}}}}}}}}],"tool_choice":{{"type":"tool","name":"now","disable_parallel_tool_use":true}},"output_config":{{"format":{{"type":"json_schema","schema":{SCHEMA}}}}},"stop_sequences":["END"],"metadata":{{"user_id":"user-1"}}}}"#
        )
    );
    // Adaptive thinking and a format share `output_config`; parallel calls allowed is said.
    let sampling = Sampling::new()
        .tool_choice(ToolChoice::Auto)
        .parallel_tool_calls(true)
        .response_format(schema());
    let body = encode(&w, OPUS46, HIGH, &sampling).unwrap();
    assert!(
        body.contains(r#""tool_choice":{"type":"auto","disable_parallel_tool_use":false},"thinking":{"type":"adaptive","display":"summarized"},"output_config":{"effort":"high","format":{"type":"json_schema","schema":"#),
        "{body}"
    );
    let sonnet45 = ("anthropic", ANTHROPIC, "claude-sonnet-4-5");
    let refused = |sampling: &Sampling, thinking| encode(&w, sonnet45, thinking, sampling);
    let (none, high) = (
        ThinkingRequest::NoPreference,
        ThinkingRequest::Effort(Effort::High),
    );
    // Each row: the sampling, the thinking request, the parameter refused and why. With
    // thinking on: no forced tool, and `max_tokens` above the budget (high: 16000).
    let rows = [
        (
            Sampling::new().temperature(0.2),
            none,
            "temperature",
            "has no temperature",
        ),
        (Sampling::new().top_p(0.9), none, "top_p", "has no top_p"),
        (Sampling::new().seed(7), none, "seed", "has no seed"),
        (
            Sampling::new().response_format(ResponseFormat::JsonObject),
            none,
            "response_format",
            "no schema-less JSON mode",
        ),
        (
            Sampling::new()
                .tool_choice(ToolChoice::None)
                .parallel_tool_calls(false),
            none,
            "parallel_tool_calls",
            "tool_choice none",
        ),
        (
            Sampling::new().tool_choice(ToolChoice::Required),
            high,
            "tool_choice",
            "only tool_choice auto or none",
        ),
        (
            Sampling::new().max_tokens(16000),
            high,
            "max_tokens",
            "not above the thinking budget 16000",
        ),
    ];
    for (sampling, thinking, parameter, why) in rows {
        check_unsupported(refused(&sampling, thinking), parameter, why);
    }
    let body = refused(&Sampling::new().max_tokens(20000), high).unwrap();
    assert!(
        body.contains(r#""max_tokens":20000,"#) && body.contains(r#""budget_tokens":16000"#),
        "{body}"
    );
}

fn bedrock() -> BedrockWire {
    support::bedrock_at(BEDROCK)
}

const BEDROCK: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";
const CLAUDE45: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

#[test]
fn bedrock_converse_maps_inference_tool_choice_and_format_and_refuses_the_rest() {
    let w = bedrock();
    let sampling = without(&["seed", "user", "parallel_tool_calls"]);
    let body = encode(&w, ("bedrock", BEDROCK, CLAUDE45), NO_PREFERENCE, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"messages": [{{"role": "user", "content": [{{"text": "Time?"}}]}}], "system": [{{"text": "Be brief."}}, {{"cachePoint": {{"type": "default"}}}}], "inferenceConfig": {{"maxTokens": 512, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]}}, "toolConfig": {{"tools": [{{"toolSpec": {{"name": "now", "description": "The time.", "inputSchema": {{"json": {{"type": "object", "properties": {{"tz": {{"type": "string"}}}}}}}}}}}}], "toolChoice": {{"tool": {{"name": "now"}}}}}}, "outputConfig": {{"textFormat": {{"type": "json_schema", "structure": {{"jsonSchema": {{"schema": {}, "name": "answer"}}}}}}}}}}"#,
            serde_json::to_string(SCHEMA).unwrap()
        )
    );
    let none = ThinkingRequest::NoPreference;
    let refused = |sampling: &Sampling, model: &str, thinking| {
        encode(&w, ("bedrock", BEDROCK, model), thinking, sampling)
    };
    check_unsupported(
        refused(&Sampling::new().seed(7), CLAUDE45, none),
        "seed",
        "no seed",
    );
    check_unsupported(
        refused(&Sampling::new().user("u"), CLAUDE45, none),
        "user",
        "no end-user id",
    );
    check_unsupported(
        refused(&Sampling::new().parallel_tool_calls(false), CLAUDE45, none),
        "parallel_tool_calls",
        "no switch for parallel tool calls",
    );
    check_unsupported(
        refused(
            &Sampling::new().tool_choice(ToolChoice::None),
            CLAUDE45,
            none,
        ),
        "tool_choice",
        "no tool choice none",
    );
    check_unsupported(
        refused(
            &Sampling::new().response_format(ResponseFormat::JsonObject),
            CLAUDE45,
            none,
        ),
        "response_format",
        "schema-less JSON mode",
    );
    // Claude's budget thinking: temperature only 1, topP 0.95–1, no forced tool, maxTokens
    // above the budget.
    let high = ThinkingRequest::Effort(Effort::High);
    check_unsupported(
        refused(&Sampling::new().temperature(0.2), CLAUDE45, high),
        "temperature",
        "temperature can only be 1",
    );
    check_unsupported(
        refused(&Sampling::new().top_p(0.5), CLAUDE45, high),
        "top_p",
        "between 0.95 and 1",
    );
    check_unsupported(
        refused(
            &Sampling::new().tool_choice(ToolChoice::Required),
            CLAUDE45,
            high,
        ),
        "tool_choice",
        "cannot be forced",
    );
    check_unsupported(
        refused(&Sampling::new().max_tokens(100), CLAUDE45, high),
        "max_tokens",
        "above the thinking budget 16000",
    );
    let body = refused(
        &Sampling::new().temperature(1.0).top_p(0.95),
        CLAUDE45,
        high,
    )
    .unwrap();
    assert!(
        body.contains(
            r#""inferenceConfig": {"maxTokens": 24192, "temperature": 1.0, "topP": 0.95}"#
        ),
        "{body}"
    );
    // Nova 2 at high effort takes no maxTokens, temperature or topP (docs/spec.md §3c).
    check_unsupported(
        refused(
            &Sampling::new().max_tokens(100),
            "us.amazon.nova-2-lite-v1:0",
            high,
        ),
        "max_tokens",
        "Nova 2 at high reasoning effort",
    );
}

fn gemini() -> GeminiWire {
    support::gemini_at(GEMINI)
}

const GEMINI: &str = "https://generativelanguage.googleapis.com/v1beta";

#[test]
fn gemini_maps_generation_config_and_function_calling_and_refuses_the_rest() {
    let w = gemini();
    let sampling = without(&["user", "parallel_tool_calls"]).top_k(40);
    let body = encode(&w, ("gemini", GEMINI, "gemini-2.5-flash"), LOW, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"contents":[{{"parts":[{{"text":"Time?"}}],"role":"user"}}],"systemInstruction":{{"parts":[{{"text":"Be brief."}}],"role":"user"}},"tools":[{{"functionDeclarations":[{{"description":"The time.","name":"now","parametersJsonSchema":{{"type":"object","properties":{{"tz":{{"type":"string"}}}}}}}}]}}],"toolConfig":{{"functionCallingConfig":{{"mode":"ANY","allowedFunctionNames":["now"]}}}},"generationConfig":{{"temperature":0.2,"topP":0.9,"topK":40,"maxOutputTokens":512,"stopSequences":["END"],"seed":7,"responseMimeType":"application/json","responseJsonSchema":{SCHEMA},"thinkingConfig":{{"includeThoughts":true,"thinkingBudget":1024}}}}}}"#
        )
    );
    let none = ThinkingRequest::NoPreference;
    let refused =
        |sampling: &Sampling| encode(&w, ("gemini", GEMINI, "gemini-2.5-flash"), none, sampling);
    check_unsupported(
        refused(&Sampling::new().user("u")),
        "user",
        "no end-user id",
    );
    check_unsupported(
        refused(&Sampling::new().parallel_tool_calls(true)),
        "parallel_tool_calls",
        "no switch for parallel function calls",
    );
    check_unsupported(refused(&Sampling::new().seed(1 << 40)), "seed", "int32");
    let body = refused(
        &Sampling::new()
            .tool_choice(ToolChoice::None)
            .response_format(ResponseFormat::Text),
    )
    .unwrap();
    assert!(
        body.contains(r#""toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"maxOutputTokens":65536,"responseMimeType":"text/plain","thinkingConfig":{"includeThoughts":true}}}"#),
        "{body}"
    );
}

#[test]
fn top_k_goes_only_to_gemini_and_every_other_wire_refuses_it_by_name() {
    let k = Sampling::new().top_k(40);
    let none = ThinkingRequest::NoPreference;
    let gemini_body = encode(&gemini(), ("gemini", GEMINI, "gemini-2.5-flash"), none, &k).unwrap();
    assert!(
        gemini_body.contains(r#""generationConfig":{"topK":40,"#),
        "{gemini_body}"
    );
    let chat_compatible = "http://127.0.0.1:8000/v1";
    let deepseek = "https://api.deepseek.com";
    let openai = "https://api.openai.com/v1";
    let responses = support::responses_at(openai);
    // A row per wire that refuses it: its name, the wire, provider, base URL and model, and
    // what the refusal says.
    let rows: [(&str, &dyn Wire, &str, &str, &str, &str); 5] = [
        (
            "a local chat endpoint",
            &chat(chat_compatible),
            "local",
            chat_compatible,
            "m",
            "no top_k",
        ),
        (
            "DeepSeek's chat completions",
            &chat(deepseek),
            "deepseek",
            deepseek,
            "deepseek-v4-pro",
            "no top_k",
        ),
        (
            "Anthropic Messages",
            &anthropic(ANTHROPIC),
            "anthropic",
            ANTHROPIC,
            "claude-sonnet-4-5",
            "has no top_k",
        ),
        (
            "Bedrock Converse",
            &bedrock(),
            "bedrock",
            BEDROCK,
            "amazon.nova-pro-v1:0",
            "top_k",
        ),
        (
            "OpenAI Responses",
            &responses,
            "openai",
            openai,
            "gpt-5.1",
            "no top_k",
        ),
    ];
    for (row, wire, provider, base_url, model, why) in rows {
        let result = encode(wire, (provider, base_url, model), none, &k);
        assert!(
            matches!(&result, Err(TransportError::Unsupported { .. })),
            "{row}: {result:?}"
        );
        check_unsupported(result, "top_k", why);
    }
}

#[test]
fn responses_maps_its_fields_and_refuses_stop_seed_and_temperature_while_reasoning() {
    let w = support::responses_at("https://api.openai.com/v1");
    let base = "https://api.openai.com/v1";
    let (gpt5, gpt51) = (
        ("openai-responses", base, "gpt-5"),
        ("openai-responses", base, "gpt-5.1"),
    );
    // Reasoning off: OpenAI's reasoning models take temperature and top_p only so.
    let sampling = without(&["stop", "seed"]);
    let body = encode(&w, gpt51, ThinkingRequest::Off, &sampling).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"gpt-5.1","stream":false,"include":["reasoning.encrypted_content"],"input":[{{"role":"user","content":"Time?"}}],"instructions":"Be brief.","reasoning":{{"effort":"none"}},"store":false,"tools":[{{"type":"function","name":"now","description":"The time.","parameters":{{"type":"object","properties":{{"tz":{{"type":"string"}}}}}},"strict":false}}],"max_output_tokens":512,"temperature":0.2,"top_p":0.9,"tool_choice":{{"type":"function","name":"now"}},"parallel_tool_calls":false,"text":{{"format":{{"type":"json_schema","name":"answer","schema":{SCHEMA},"strict":true}}}},"safety_identifier":"user-1"}}"#
        )
    );
    // Each row: the model, the sampling, the thinking request, the parameter refused and why.
    // A reasoning model takes temperature (but 1) and top_p only with reasoning effort none.
    let rows = [
        (
            gpt5,
            Sampling::new().stop(["END"]),
            NO_PREFERENCE,
            "stop",
            "no stop sequences",
        ),
        (
            gpt5,
            Sampling::new().seed(7),
            NO_PREFERENCE,
            "seed",
            "no seed",
        ),
        (
            gpt5,
            Sampling::new().temperature(0.2),
            NO_PREFERENCE,
            "temperature",
            "only with reasoning effort none; this model cannot turn reasoning off",
        ),
        (
            gpt51,
            Sampling::new().top_p(0.9),
            LOW,
            "top_p",
            "ask with --no-thinking (effort none) to set it",
        ),
    ];
    for (at, sampling, thinking, parameter, why) in rows {
        check_unsupported(encode(&w, at, thinking, &sampling), parameter, why);
    }
    let body = encode(&w, gpt51, LOW, &Sampling::new().temperature(1.0)).unwrap();
    assert!(
        body.ends_with(r#""strict":false}],"temperature":1.0}"#),
        "{body}"
    );
}

/// Runs the TypedDict validator over `bodies` as `kind` (`chat`, `anthropic`): one verdict line
/// per body.
fn validate(py: &std::path::Path, kind: &str, bodies: &[String]) -> Vec<String> {
    let mut python = crate::support::python(py, &["OPENAI_", "ANTHROPIC_"]);
    python.env("HERMES_VALIDATE_PARAMS", kind);
    let (_, stdout, stderr) =
        crate::support::run(python, crate::sdk_responses::VALIDATE, &bodies.join("\n"));
    let lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), bodies.len(), "{stderr}");
    lines
}

/// `body` with an unknown key added to the object at `pointer`.
fn probed(body: &str, pointer: &str) -> String {
    let mut value: serde_json::Value = serde_json::from_str(body).unwrap();
    value.pointer_mut(pointer).unwrap()["hermes_probe"] = serde_json::json!(1);
    value.to_string()
}

/// A streamed chat-completions request asks for its usage where the provider's documented
/// schema has `stream_options` (OpenAI only sends a stream's usage when asked), and nowhere
/// else: not to strict schemas (which send usage unasked), not to a server whose schema is
/// unknown; unstreamed, never.
#[test]
fn a_streamed_chat_request_asks_for_usage_where_the_schema_has_stream_options() {
    let asks = r#""stream":true,"stream_options":{"include_usage":true}"#;
    for (provider, base_url, model, expected) in [
        ("openai", "https://api.openai.com/v1", "gpt-4.1", asks),
        (
            "deepseek",
            "https://api.deepseek.com",
            "deepseek-v4-pro",
            asks,
        ),
        ("openrouter", "https://openrouter.ai/api/v1", "x/y", asks),
        (
            "alibaba",
            "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            "qwen3.6-plus",
            asks,
        ),
        // A server whose schema is not known to have it (it may refuse what it does not know).
        (
            "together",
            "https://api.together.xyz/v1",
            "m",
            r#""stream":true"#,
        ),
        (
            "acme",
            "https://llm.acme.example/v1",
            "m",
            r#""stream":true"#,
        ),
        (
            "mistral",
            "https://api.mistral.ai/v1",
            "mistral-large",
            r#""stream":true"#,
        ),
        (
            "groq",
            "https://api.groq.com/openai/v1",
            "qwen3",
            r#""stream":true"#,
        ),
        (
            "cerebras",
            "https://api.cerebras.ai/v1",
            "qwen-3",
            r#""stream":true"#,
        ),
    ] {
        let at = (provider, base_url, model);
        let streamed =
            encode_streamed(&chat(base_url), at, NO_PREFERENCE, &Sampling::new(), true).unwrap();
        let head = format!(r#"{{"model":"{model}",{CHAT_MESSAGES},{expected},"tools":"#);
        assert!(
            streamed.starts_with(&head),
            "{provider}: streamed body {streamed}\nexpected it to start {head}"
        );
        let plain =
            encode_streamed(&chat(base_url), at, NO_PREFERENCE, &Sampling::new(), false).unwrap();
        assert!(
            !plain.contains("stream"),
            "{provider}: an unstreamed body names no stream option: {plain}"
        );
    }
}

#[test]
fn chat_and_anthropic_sampling_bodies_validate_against_their_official_sdk_types() {
    const ANTHROPIC_PROBE: &str = "import anthropic\nfrom anthropic.types import message_create_params\nprint(f'anthropic {anthropic.__version__}')";
    let none = ThinkingRequest::NoPreference;
    if let Some(py) =
        hermes_test_support::sdk::sdk_python("openai", crate::sdk_responses::PROBE_SCRIPT)
    {
        let compatible = "https://api.together.xyz/v1";
        let openai = "https://api.openai.com/v1";
        let (together, gpt) = (chat(compatible), chat(openai));
        let mut bodies = vec![
            encode(&together, ("together", compatible, "m"), none, &full()).unwrap(),
            encode(
                &gpt,
                ("openai", openai, "gpt-5"),
                HIGH,
                &without(&["temperature", "top_p"]),
            )
            .unwrap(),
            encode(
                &gpt,
                ("openai", openai, "gpt-4.1"),
                none,
                &full()
                    .response_format(ResponseFormat::JsonObject)
                    .tool_choice(ToolChoice::Required),
            )
            .unwrap(),
            // Streamed: `stream_options.include_usage` as the SDK types it.
            encode_streamed(
                &chat(openai),
                ("openai", openai, "gpt-4.1"),
                none,
                &Sampling::new(),
                true,
            )
            .unwrap(),
        ];
        let controls = [
            probed(&bodies[0], "/response_format/json_schema"),
            probed(&bodies[1], "/tool_choice/function"),
            probed(&bodies[3], "/stream_options"),
        ];
        bodies.extend(controls);
        assert_eq!(
            validate(py, "chat", &bodies),
            [
                "ok",
                "ok",
                "ok",
                "ok",
                "invalid response_format.json_schema.hermes_probe: unknown key for JSONSchema [extra_forbidden]",
                "invalid tool_choice.function.hermes_probe: unknown key for Function [extra_forbidden]",
                "invalid stream_options.hermes_probe: unknown key for ChatCompletionStreamOptionsParam [extra_forbidden]",
            ]
        );
    }
    if let Some(py) = hermes_test_support::sdk::sdk_python("anthropic", ANTHROPIC_PROBE) {
        let w = anthropic(ANTHROPIC);
        let body = |model: &str, thinking: ThinkingRequest, sampling: &Sampling| {
            encode(&w, ("anthropic", ANTHROPIC, model), thinking, sampling).unwrap()
        };
        let mut bodies = vec![
            body(
                "claude-opus-4-6",
                none,
                &without(&["temperature", "top_p", "seed"]),
            ),
            body(
                "claude-opus-4-6",
                HIGH,
                &Sampling::new()
                    .tool_choice(ToolChoice::Auto)
                    .parallel_tool_calls(true)
                    .response_format(schema())
                    .stop(["END"])
                    .max_tokens(4096),
            ),
            body(
                "claude-sonnet-4-5",
                none,
                &Sampling::new().tool_choice(ToolChoice::Required).user("u"),
            ),
            body(
                "claude-sonnet-4-5",
                none,
                &Sampling::new().tool_choice(ToolChoice::None),
            ),
        ];
        let controls = [
            probed(&bodies[0], "/tool_choice"),
            probed(&bodies[1], "/output_config/format"),
            probed(&bodies[2], "/metadata"),
        ];
        bodies.extend(controls);
        let verdicts = validate(py, "anthropic", &bodies);
        assert_eq!(verdicts[..4], ["ok", "ok", "ok", "ok"], "{verdicts:?}");
        for (verdict, at) in
            verdicts[4..]
                .iter()
                .zip(["tool_choice", "output_config.format", "metadata"])
        {
            assert!(
                verdict.starts_with(&format!("invalid {at}.hermes_probe: unknown key for ")),
                "{verdict}"
            );
        }
    }
}

#[test]
fn every_wire_refuses_a_tool_choice_without_tools_or_naming_a_tool_not_sent() {
    let compatible = "https://api.together.xyz/v1";
    let responses = support::responses_at("https://api.openai.com/v1");
    let (chat, anthropic, bedrock, gemini) =
        (chat(compatible), anthropic(ANTHROPIC), bedrock(), gemini());
    let wires: [(&dyn Wire, &str, &str, &str); 5] = [
        (&chat, "together", compatible, "m"),
        (&anthropic, "anthropic", ANTHROPIC, "claude-opus-4-6"),
        (&bedrock, "bedrock", BEDROCK, CLAUDE45),
        (&gemini, "gemini", GEMINI, "gemini-2.5-flash"),
        (
            &responses,
            "openai-responses",
            "https://api.openai.com/v1",
            "gpt-5",
        ),
    ];
    let none = ThinkingRequest::NoPreference;
    for (wire, provider, base, model) in wires {
        // Named, but not among the tools sent.
        let other = Sampling::new().tool_choice(ToolChoice::Function("nope".into()));
        check_unsupported(
            encode(wire, (provider, base, model), none, &other),
            "tool_choice",
            "it names `nope`, which is not among the tools sent (now)",
        );
        // No tools at all.
        let decision = builtin_table().resolve(
            &RouteTarget::new(provider, Some(base), model),
            ResolveOptions::default(),
        );
        let verdicts = Verdicts::default();
        let h = history();
        for (sampling, parameter) in [
            (Sampling::new().tool_choice(ToolChoice::Auto), "tool_choice"),
            (
                Sampling::new().parallel_tool_calls(false),
                "parallel_tool_calls",
            ),
        ] {
            let parts = RequestParts::new(&h, &decision, &verdicts).sampling(&sampling);
            check_unsupported(
                wire.encode(&parts)
                    .map(|o| String::from_utf8(o.body).unwrap()),
                parameter,
                "no tools are sent with this request",
            );
        }
    }
}
