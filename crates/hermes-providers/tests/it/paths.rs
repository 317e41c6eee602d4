//! A model id enters a request path as one segment on every wire that puts it there (Gemini AI
//! Studio and Vertex, Claude on Vertex and Bedrock, Bedrock Converse): a hostile id adds no
//! segment, query, fragment or method, and an ordinary one is sent unchanged.

use hermes_wire_anthropic as anthropic;
use hermes_wire_anthropic::{Flavor as AnthropicFlavor, Target as AnthropicTarget};
use hermes_wire_bedrock as bedrock;
use hermes_wire_gemini as gemini;
use hermes_wire_gemini::{Flavor as GeminiFlavor, Target as GeminiTarget};

const HOSTILE: &[&str] = &[
    "../../v1beta/files",
    "m/../../x",
    "m?key=stolen",
    "m#frag",
    "m:streamGenerateContent",
    "m%2F..%2Fx",
    "m x",
    "m\r\nX-Injected: 1",
    "m\u{202e}",
];

/// Every URL a path-carrying wire makes for `model` (AI Studio, Vertex Gemini, Vertex Claude,
/// Bedrock Claude, Bedrock Converse), streamed or not, with the path each must have, `{}`
/// standing for the encoded id.
fn urls(model: &str, stream: bool) -> Vec<(String, &'static str)> {
    let vertex = || GeminiFlavor::Vertex {
        project: "p".into(),
        region: "us-central1".into(),
    };
    let studio = GeminiTarget {
        flavor: GeminiFlavor::AiStudio,
        base_url: "https://generativelanguage.googleapis.com/v1beta".into(),
        max_tokens: None,
    };
    let vertex_gemini = GeminiTarget {
        flavor: vertex(),
        base_url: "https://us-central1-aiplatform.googleapis.com".into(),
        max_tokens: None,
    };
    let claude = |flavor, base: &str| AnthropicTarget {
        flavor,
        base_url: base.into(),
        max_tokens: None,
        account: None,
    };
    let vertex_claude = claude(
        AnthropicFlavor::Vertex {
            project: "p".into(),
            region: "us-east5".into(),
        },
        "https://us-east5-aiplatform.googleapis.com",
    );
    let bedrock_claude = claude(
        AnthropicFlavor::Bedrock,
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    );
    let (gemini_method, vertex_method, invoke, converse) = if stream {
        (
            "/v1beta/models/{}:streamGenerateContent",
            "/v1/projects/p/locations/us-east5/publishers/anthropic/models/{}:streamRawPredict",
            "/model/{}/invoke-with-response-stream",
            "/model/{}/converse-stream",
        )
    } else {
        (
            "/v1beta/models/{}:generateContent",
            "/v1/projects/p/locations/us-east5/publishers/anthropic/models/{}:rawPredict",
            "/model/{}/invoke",
            "/model/{}/converse",
        )
    };
    vec![
        (gemini::url(&studio, model, stream), gemini_method),
        (
            gemini::url(&vertex_gemini, model, stream),
            if stream {
                "/v1/projects/p/locations/us-central1/publishers/google/models/{}:streamGenerateContent"
            } else {
                "/v1/projects/p/locations/us-central1/publishers/google/models/{}:generateContent"
            },
        ),
        (anthropic::url(&vertex_claude, model, stream), vertex_method),
        (anthropic::url(&bedrock_claude, model, stream), invoke),
        (
            bedrock::url(
                "https://bedrock-runtime.us-east-1.amazonaws.com",
                model,
                stream,
            ),
            converse,
        ),
    ]
}

#[test]
fn a_hostile_model_id_stays_one_encoded_path_segment_on_every_wire() {
    for stream in [false, true] {
        for model in HOSTILE {
            for (url, shape) in urls(model, stream) {
                let parsed = url::Url::parse(&url).unwrap();
                let (before, after) = shape.split_once("{}").unwrap();
                let path = parsed.path();
                assert!(
                    path.starts_with(before) && path.ends_with(after),
                    "{model:?}: {url} does not have the shape {shape}"
                );
                let segment = &path[before.len()..path.len() - after.len()];
                assert!(
                    !segment.contains(['/', '?', '#', ':', ' ', '\r', '\n']),
                    "{model:?}: the id is not one segment in {url}"
                );
                let decoded = percent_encoding::percent_decode_str(segment)
                    .decode_utf8()
                    .unwrap();
                assert_eq!(decoded, *model, "{url}");
                let query = parsed.query();
                assert!(
                    query.is_none() || query == Some("alt=sse"),
                    "{model:?}: no query but the stream's: {url}"
                );
                assert!(parsed.fragment().is_none(), "{url}");
            }
        }
    }
}

#[test]
fn ordinary_model_ids_go_unchanged() {
    for model in [
        "gemini-3-pro-preview",
        "claude-sonnet-4-5@20250929",
        "anthropic.claude-opus-4-6-v1",
    ] {
        for (url, shape) in urls(model, false) {
            let encoded_at = if url.contains("amazonaws") && model.contains('@') {
                // Bedrock follows the AWS SDKs: only unreserved characters stay bare.
                continue;
            } else {
                shape.replace("{}", model)
            };
            assert!(url.ends_with(&encoded_at), "{url} vs {encoded_at}");
        }
    }
}
