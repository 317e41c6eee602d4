//! The conformance suite over the built-in route table: case files under `tests/cases/<route>/`,
//! the invariants of `hermes-conformance`, and live runs against the strict simulator.
//! Every native wire is built by its descriptor from the engine's list of built-in wires
//! (`hermes_engine::builtin_wires`), as the engine builds it.
//! The Anthropic Messages wire runs through the same suite: its cases (`"wire": "anthropic"`,
//! files `anthropic-…` in the folder of the route their target resolves to) are encoded by an
//! Anthropic wire built for each case's base URL, and the native-wire invariants run through
//! it for one target of each host family.
//! The Bedrock Converse wire's cases (`"wire": "bedrock"`, files `bedrock-…`) are encoded by a
//! Converse wire built for each case's runtime base URL (no credentials: encoding signs nothing),
//! and the native-wire invariants run through it too, the corpus's models named by their Bedrock
//! ids (`Suite::wire_models`) so that Claude's signed replay policy applies.
//! Prints the route → profile mapping, one line per route and `N passed, M failed`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod live;

use std::process::ExitCode;

use hermes_conformance::WireTarget;
use hermes_core::{TargetHost, Wire};
use hermes_providers::wires::Vertex;
use hermes_providers::{ChatTransport, Credentials};

/// The Anthropic wire's default base URL (docs/spec.md §8a): the wire registered with
/// `Suite::wire`.
const ANTHROPIC_DIRECT: &str = "https://api.anthropic.com";

/// The targets the Anthropic wire's invariants run on, one per host family (docs/spec.md §5):
/// direct, Vertex, Foundry, Bedrock InvokeModel on a FIPS GovCloud host, MiniMax's and DeepSeek's
/// `/anthropic` relays, Kimi's `/coding`, an unknown relay and a lookalike host.
const ANTHROPIC_INVARIANT_TARGETS: &[(&str, &str)] = &[
    ("anthropic", ANTHROPIC_DIRECT),
    (
        "vertex-anthropic",
        "https://us-east5-aiplatform.googleapis.com",
    ),
    (
        "foundry-anthropic",
        "https://my-resource.services.ai.azure.com/anthropic",
    ),
    (
        "bedrock-anthropic",
        "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
    ),
    ("anthropic", "https://api.minimax.io/anthropic"),
    ("anthropic", "https://api.deepseek.com/anthropic"),
    ("anthropic", "https://api.kimi.com/coding"),
    ("anthropic", "https://relay.example.com/anthropic"),
    ("anthropic", "https://api.anthropic.com.evil.example"),
];

/// The built-in wire `id` for `provider` on `base_url`, built by its descriptor as the engine
/// builds it (so Bedrock InvokeModel for `bedrock-anthropic` and Foundry for
/// `foundry-anthropic`, by provider), on a Vertex host with project `p1` and the region its
/// host names (`global` on the global host). Encoding needs no network and no key.
fn built(id: &str, provider: &str, base_url: &str) -> Box<dyn Wire> {
    let host = TargetHost::from_base_url(base_url).map(|h| h.to_string());
    let host = host.as_deref().unwrap_or("");
    let region = match host {
        "aiplatform.googleapis.com" => Some("global"),
        _ => host.strip_suffix("-aiplatform.googleapis.com"),
    };
    let target = hermes_providers::WireTarget {
        vertex: region.map(|region| Vertex {
            project: "p1".into(),
            region: region.into(),
        }),
        ..hermes_providers::WireTarget::new(provider, "", base_url)
    };
    let client = ChatTransport::new().expect("the HTTP client builds");
    let wires = hermes_engine::builtin_wires();
    let descriptor = wires.get(id).expect("a built-in wire");
    descriptor.build(&target, client, Credentials::default())
}

/// Builds the Anthropic wire for a case's own base URL; the direct one is the registered wire.
fn anthropic_for(target: &WireTarget<'_>) -> Option<Box<dyn Wire>> {
    match target.base_url {
        None | Some(ANTHROPIC_DIRECT) => None,
        Some(base) => Some(built("anthropic", target.provider, base)),
    }
}

/// The Bedrock runtime the Converse wire's cases default to (docs/spec.md §8a).
const BEDROCK_US_EAST_1: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

/// The Bedrock ids of the wire corpus's two models (Claude Opus 4.6 and Sonnet 4.5 through the
/// US inference profiles): what the Converse wire's invariants target.
const BEDROCK_CORPUS_MODELS: [&str; 2] = [
    "us.anthropic.claude-opus-4-6-v1:0",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
];

/// The targets the Bedrock Converse wire's invariants run on: a regional runtime (the third pass
/// of each run proves provenance across hosts).
const BEDROCK_INVARIANT_TARGETS: &[(&str, &str)] = &[("bedrock", BEDROCK_US_EAST_1)];

/// Builds the Bedrock Converse wire for a case's own base URL (us-east-1 when it names none).
fn bedrock_for(target: &WireTarget<'_>) -> Option<Box<dyn Wire>> {
    let base = target.base_url.unwrap_or(BEDROCK_US_EAST_1);
    Some(built("bedrock", target.provider, base))
}

/// The targets the Gemini wire's invariants run on: a regional Vertex host (the AI Studio host
/// resolves to the `gemini-openai` chat route).
const GEMINI_INVARIANT_TARGETS: &[(&str, &str)] = &[(
    "vertex-gemini",
    "https://us-central1-aiplatform.googleapis.com",
)];

/// The Gemini wire's invariant corpus is minted by Gemini 3 models, whose signatures the wire
/// replays (and which take an effort).
const GEMINI_CORPUS_MODELS: [&str; 2] = ["gemini-3-pro-preview", "gemini-3-flash-preview"];

/// Builds the Gemini wire for a case's own base URL: Vertex on an `aiplatform.googleapis.com`
/// host (project `p1`, the region its host names, `global` on the global host), else AI
/// Studio. No key: encoding sends nothing.
fn gemini_for(target: &WireTarget<'_>) -> Option<Box<dyn Wire>> {
    let base = target
        .base_url
        .unwrap_or(hermes_wire_gemini::AI_STUDIO_BASE);
    Some(built("gemini", target.provider, base))
}

/// The Responses wire's invariant targets (OpenAI's own API) and corpus models.
const RESPONSES_INVARIANT_TARGETS: &[(&str, &str)] =
    &[("openai-responses", hermes_wire_responses::DEFAULT_BASE)];
const RESPONSES_CORPUS_MODELS: [&str; 2] = ["gpt-5", "gpt-5-mini"];

/// Builds the Responses wire for a case's own base URL (OpenAI's when it names none).
fn responses_for(target: &WireTarget<'_>) -> Option<Box<dyn Wire>> {
    let base = target.base_url;
    let base = base.unwrap_or(hermes_wire_responses::DEFAULT_BASE);
    Some(built("openai-responses", target.provider, base))
}

fn main() -> ExitCode {
    // `cargo test` passes harness flags (e.g. `--quiet`, `--skip NAME`); route ids are the
    // other arguments.
    let mut only: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--skip" {
            args.next();
        } else if !arg.starts_with('-') {
            only.push(arg);
        }
    }
    let only: Vec<&str> = only.iter().map(String::as_str).collect();
    let table = hermes_providers::builtin_table();
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
    let direct = built("anthropic", "anthropic", ANTHROPIC_DIRECT);
    let mut suite = hermes_conformance::Suite::new(&table)
        .cases_dir(cases)
        .wire(direct.as_ref())
        .wire_factory(hermes_wire_anthropic::WIRE_ID, anthropic_for)
        .wire_factory(hermes_wire_bedrock::WIRE_ID, bedrock_for)
        .wire_models(hermes_wire_bedrock::WIRE_ID, BEDROCK_CORPUS_MODELS)
        .wire_factory(hermes_wire_gemini::WIRE_ID, gemini_for)
        .wire_models(hermes_wire_gemini::WIRE_ID, GEMINI_CORPUS_MODELS)
        .wire_factory(hermes_wire_responses::WIRE_ID, responses_for)
        .wire_models(hermes_wire_responses::WIRE_ID, RESPONSES_CORPUS_MODELS);
    for (provider, base) in ANTHROPIC_INVARIANT_TARGETS {
        suite = suite.wire_invariants(hermes_wire_anthropic::WIRE_ID, provider, Some(base));
    }
    for (provider, base) in BEDROCK_INVARIANT_TARGETS {
        suite = suite.wire_invariants(hermes_wire_bedrock::WIRE_ID, provider, Some(base));
    }
    for (provider, base) in GEMINI_INVARIANT_TARGETS {
        suite = suite.wire_invariants(hermes_wire_gemini::WIRE_ID, provider, Some(base));
    }
    for (provider, base) in RESPONSES_INVARIANT_TARGETS {
        suite = suite.wire_invariants(hermes_wire_responses::WIRE_ID, provider, Some(base));
    }
    let mut report = suite.run_routes(&only);
    println!("live route -> simulator profile:");
    for pair in live::PAIRS
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.route))
    {
        println!("  {:<15} -> {}", pair.route, pair.profile);
    }
    report.checks.extend(live::run(&table, &only));
    for (wire, targets, model) in [
        (
            hermes_wire_anthropic::WIRE_ID,
            ANTHROPIC_INVARIANT_TARGETS,
            hermes_conformance::WIRE_CORPUS_MODELS[0],
        ),
        (
            hermes_wire_bedrock::WIRE_ID,
            BEDROCK_INVARIANT_TARGETS,
            BEDROCK_CORPUS_MODELS[0],
        ),
        (
            hermes_wire_gemini::WIRE_ID,
            GEMINI_INVARIANT_TARGETS,
            GEMINI_CORPUS_MODELS[0],
        ),
        (
            hermes_wire_responses::WIRE_ID,
            RESPONSES_INVARIANT_TARGETS,
            RESPONSES_CORPUS_MODELS[0],
        ),
    ] {
        println!(
            "{wire} wire: cases `{wire}-*.json`, invariants `{wire} wire: ...` (target -> route):"
        );
        for (provider, base) in targets {
            let target = hermes_core::RouteTarget::new(provider, Some(base), model);
            let route = table.resolve(&target, hermes_core::ResolveOptions::default());
            if only.is_empty() || only.contains(&route.id()) {
                println!("  {base:<52} -> {}", route.id());
            }
        }
    }
    // Group each route's checks together for the per-route lines.
    let order: Vec<String> = table.routes().map(|r| r.id().to_owned()).collect();
    report.checks.sort_by_key(|c| {
        order
            .iter()
            .position(|id| *id == c.route)
            .unwrap_or(usize::MAX)
    });
    println!("{report}");
    if report.passed() + report.failed() == 0 {
        eprintln!("conformance: nothing ran (no route is one of {only:?})");
        return ExitCode::FAILURE;
    }
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
