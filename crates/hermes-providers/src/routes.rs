//! The built-in chat-completions routes (docs/spec.md §3, §3a–§3c), registered in table order.

use std::sync::Arc;

use hermes_core::{
    Carrier, CarrierSet, DataRoute, EchoRule, EffortVocabulary, MustEchoFamily, PadRule,
    ReasoningRoute, RouteMatcher, RouteTable, RouteTarget, ThinkingFields, ThinkingRequest,
};
use serde_json::json;

/// How a built-in route spells the thinking request (docs/spec.md §3b, §3c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Thinking {
    /// `reasoning_effort` for an explicit effort; nothing otherwise.
    Effort,
    /// OpenRouter-style `reasoning: {"effort": …}`; `--no-thinking` sends effort `none`.
    ReasoningObject,
    /// DeepSeek: `thinking: {"type": enabled|disabled}` plus a mapped `reasoning_effort`.
    DeepSeek,
    /// Xiaomi MiMo: `thinking: {"type": enabled|disabled}`.
    Mimo,
    /// Z.ai GLM: `thinking` with `clear_thinking: false` (keep thinking).
    Zai,
    /// DashScope: `preserve_thinking` / `clear_thinking` by model.
    DashScope,
    /// Moonshot Kimi: `thinking.keep = "all"`, or `reasoning_effort` alone.
    Kimi,
}

/// A built-in route: a data row plus its thinking vocabulary.
#[derive(Clone, Debug)]
struct BuiltinRoute {
    row: DataRoute,
    thinking: Thinking,
}

/// Reasoning content and reasoning.
const RC_R: CarrierSet = CarrierSet::RC.with(Carrier::Reasoning);
/// Reasoning content and reasoning details.
const RC_RD: CarrierSet = CarrierSet::RC.with(Carrier::ReasoningDetails);
/// Three levels: low, medium, high.
const THREE_EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["low", "low", "medium", "high", "high", "high"],
};
const DEEPSEEK_EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["low", "low", "high", "high", "high", "max"],
};
const KIMI_EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["low", "low", "high", "high", "max", "max"],
};
const GLM_EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["high", "high", "high", "high", "high", "max"],
};
/// Routes whose only effort control is thinking on (any `--effort` turns it on).
const ON_ONLY: EffortVocabulary = EffortVocabulary { map: ["on"; 6] };
const GEMINI_EFFORTS: EffortVocabulary = EffortVocabulary {
    map: ["minimal", "low", "medium", "high", "high", "high"],
};

/// `(major, minor)` of a GLM model id (`glm-4.5-air` → (4, 5), `GLM-5` → (5, 0)). GLM-5.3 is
/// also spelled `glm-5-3` and `glm-5p3` (docs/spec.md §3b): a `-` or `p` separator counts only
/// before a single digit that ends the id or a `-` segment, so `glm-4-9b` and `glm-4-0520` stay (4,
/// 0).
fn glm_version(model: &str) -> Option<(u32, u32)> {
    let lower = model.to_lowercase();
    let rest = &lower[lower.find("glm-")? + 4..];
    let major_len = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u32 = rest[..major_len].parse().ok()?;
    let after = &rest[major_len..];
    let minor = match after.chars().next() {
        Some('.') => after[1..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0),
        Some('-' | 'p') => {
            let digits = &after[1..];
            let mut chars = digits.chars();
            match (chars.next(), chars.next()) {
                (Some(d), None | Some('-')) if d.is_ascii_digit() => d.to_digit(10).unwrap_or(0),
                _ => 0,
            }
        }
        _ => 0,
    };
    Some((major, minor))
}

fn thinking_type(kind: &str) -> serde_json::Value {
    json!({ "type": kind })
}

impl ReasoningRoute for BuiltinRoute {
    fn id(&self) -> &str {
        self.row.id()
    }
    fn matcher(&self) -> &RouteMatcher {
        self.row.matcher()
    }
    fn carriers(&self) -> CarrierSet {
        self.row.carriers()
    }
    fn strict(&self) -> bool {
        self.row.strict()
    }
    fn must_echo(&self) -> Option<EchoRule> {
        self.row.must_echo()
    }
    fn efforts(&self) -> EffortVocabulary {
        self.row.efforts()
    }

    fn keep_thinking_flags(&self) -> &'static [&'static str] {
        match self.thinking {
            Thinking::Zai => &["thinking.clear_thinking=false"],
            Thinking::DashScope => &["preserve_thinking=true", "clear_thinking=false"],
            Thinking::Kimi => &["thinking.keep=all"],
            Thinking::Effort | Thinking::ReasoningObject | Thinking::DeepSeek | Thinking::Mimo => {
                &[]
            }
        }
    }

    fn thinking_fields(&self, target: &RouteTarget, request: ThinkingRequest) -> ThinkingFields {
        let model = target.model.to_lowercase();
        let word = |e| self.efforts().word(e);
        match (self.thinking, request) {
            (Thinking::Zai, request) => zai_fields(&model, request),
            (Thinking::DashScope, request) => dashscope_fields(&model, request),
            (Thinking::Kimi, request) => kimi_fields(&model, request),
            (_, ThinkingRequest::NoPreference) | (Thinking::Effort, ThinkingRequest::Off) => {
                Vec::new()
            }
            (Thinking::Effort, ThinkingRequest::Effort(e)) => {
                vec![("reasoning_effort", word(e).into())]
            }
            (Thinking::ReasoningObject, ThinkingRequest::Off) => {
                vec![("reasoning", json!({ "effort": "none" }))]
            }
            (Thinking::ReasoningObject, ThinkingRequest::Effort(e)) => {
                vec![("reasoning", json!({ "effort": word(e) }))]
            }
            (Thinking::DeepSeek | Thinking::Mimo, ThinkingRequest::Off) => {
                vec![("thinking", thinking_type("disabled"))]
            }
            (Thinking::DeepSeek, ThinkingRequest::Effort(e)) => vec![
                ("thinking", thinking_type("enabled")),
                ("reasoning_effort", word(e).into()),
            ],
            (Thinking::Mimo, ThinkingRequest::Effort(_)) => {
                vec![("thinking", thinking_type("enabled"))]
            }
        }
    }
}

/// docs/spec.md §3b / §3c, Z.ai: with reasoning requested, keep thinking on GLM ≥ 4.5; with no
/// preference, send nothing; GLM-5.3 cannot be disabled; GLM-5.2/5.3 take `reasoning_effort`
/// (`max`, else `high`).
fn zai_fields(model: &str, request: ThinkingRequest) -> ThinkingFields {
    let Some(version) = glm_version(model).filter(|v| *v >= (4, 5)) else {
        return Vec::new();
    };
    let keep = json!({ "type": "enabled", "clear_thinking": false });
    let effort_capable = matches!(version, (5, 2) | (5, 3));
    match request {
        ThinkingRequest::Off if version == (5, 3) => {
            vec![("thinking", keep), ("reasoning_effort", "low".into())]
        }
        ThinkingRequest::Off => vec![("thinking", thinking_type("disabled"))],
        ThinkingRequest::Effort(e) if effort_capable => {
            vec![
                ("thinking", keep),
                ("reasoning_effort", GLM_EFFORTS.word(e).into()),
            ]
        }
        ThinkingRequest::Effort(_) => vec![("thinking", keep)],
        // No preference: the model's own default, for every GLM model (5.3 included).
        ThinkingRequest::NoPreference => Vec::new(),
    }
}

/// docs/spec.md §3b, DashScope: `preserve_thinking` for the Qwen 3.6+ and Kimi K2.6+ models,
/// top-level `clear_thinking: false` for GLM-5 models, never both.
fn dashscope_fields(model: &str, request: ThinkingRequest) -> ThinkingFields {
    let keep: Option<(&'static str, serde_json::Value)> =
        if ["qwen3.6", "qwen3.7", "qwen3.8", "kimi-k2.6", "kimi-k2.7"]
            .iter()
            .any(|m| model.contains(m))
        {
            Some(("preserve_thinking", true.into()))
        } else if model.starts_with("glm-5") {
            Some(("clear_thinking", false.into()))
        } else {
            None
        };
    match request {
        ThinkingRequest::Off => vec![("enable_thinking", false.into())],
        ThinkingRequest::Effort(_) => std::iter::once(("enable_thinking", true.into()))
            .chain(keep)
            .collect(),
        ThinkingRequest::NoPreference => keep.into_iter().collect(),
    }
}

/// docs/spec.md §3b / §3c, Moonshot: K2 models keep all thinking (`keep` is absent on k2.5), K3
/// models get thinking on without `keep`; an
/// explicit effort is sent alone, since Moonshot rejects `thinking` beside `reasoning_effort`.
fn kimi_fields(model: &str, request: ThinkingRequest) -> ThinkingFields {
    let k2 = model.contains("k2");
    let k3 = model.contains("k3");
    match request {
        ThinkingRequest::Effort(e) => vec![("reasoning_effort", KIMI_EFFORTS.word(e).into())],
        // k2.7-code and k2-thinking cannot turn thinking off: send nothing rather than a 400.
        ThinkingRequest::Off if model.contains("k2.7-code") || model.contains("k2-thinking") => {
            Vec::new()
        }
        ThinkingRequest::Off => vec![("thinking", thinking_type("disabled"))],
        // K3 keeps its thinking by itself: thinking on, no `keep`.
        ThinkingRequest::NoPreference if k3 => vec![("thinking", thinking_type("enabled"))],
        ThinkingRequest::NoPreference if !k2 => Vec::new(),
        ThinkingRequest::NoPreference if model.contains("k2.5") => {
            vec![("thinking", thinking_type("enabled"))]
        }
        ThinkingRequest::NoPreference => {
            vec![("thinking", json!({ "type": "enabled", "keep": "all" }))]
        }
    }
}

fn route(row: DataRoute, thinking: Thinking) -> Arc<dyn ReasoningRoute> {
    Arc::new(BuiltinRoute { row, thinking })
}

fn matcher(providers: &[&str], hosts: &[&str]) -> RouteMatcher {
    RouteMatcher::new()
        .providers(providers.iter().copied())
        .hosts(hosts.iter().copied())
}

/// Route ids of the built-in table, in matching order.
pub const BUILTIN_ROUTE_IDS: &[&str] = &[
    "strict",
    "fireworks",
    "aggregator",
    "rc-rd",
    "local-style",
    "deepseek",
    "kimi-coding",
    "xiaomi",
    "zai",
    "alibaba",
    "gemini-openai",
    "copilot",
    "local-endpoint",
    "default",
];

/// Registers the built-in rows and must-echo families into `table`, in docs/spec.md order.
///
/// Rows 1–5 of docs/spec.md §3 come first; then the rows that differ from the default only in their
/// thinking vocabulary or native fields (they share no name or host with rows 1–5, so their
/// position changes no match); then the local-endpoint rule ahead of the table's default row.
pub fn register_builtin(table: &mut RouteTable) {
    for row in spec_rows().into_iter().chain(vocabulary_rows()) {
        table.register(row);
    }
    table.register_fallback(local_endpoint_route());
    for (name, matcher) in must_echo_families() {
        table.add_family(MustEchoFamily {
            name: name.to_owned(),
            matcher,
            pad: PadRule::EveryAssistant,
        });
    }
}

/// Rows 1–5 of docs/spec.md §3, in its order: strict schema, Fireworks, the aggregators, the
/// RC+RD hosts and the local-style hosts.
fn spec_rows() -> [Arc<dyn ReasoningRoute>; 5] {
    [
        route(
            DataRoute::new("strict", CarrierSet::NONE)
                .strict_schema()
                .with_efforts(THREE_EFFORTS)
                .matching(matcher(
                    &["mistral", "groq", "cerebras", "sambanova"],
                    &[
                        "mistral.ai",
                        "groq.com",
                        "cerebras.ai",
                        "sambanova.ai",
                        "hunyuan.cloud.tencent.com",
                    ],
                )),
            Thinking::Effort,
        ),
        route(
            DataRoute::new("fireworks", CarrierSet::RC)
                .with_efforts(THREE_EFFORTS)
                .matching(matcher(&["fireworks"], &["fireworks.ai"])),
            Thinking::Effort,
        ),
        route(
            DataRoute::new("aggregator", CarrierSet::ALL).matching(matcher(
                &["openrouter", "kilocode", "ai-gateway", "nous"],
                &[
                    "openrouter.ai",
                    "kilo.ai",
                    "ai-gateway.vercel.sh",
                    "nousresearch.com",
                ],
            )),
            Thinking::ReasoningObject,
        ),
        route(
            DataRoute::new("rc-rd", RC_RD).matching(matcher(
                &["novita", "tencent-tokenhub", "minimax", "minimax-cn"],
                &[
                    "novita.ai",
                    "tokenhub.tencentmaas.com",
                    "tokenhub-intl.tencentcloudmaas.com",
                    "minimax.io",
                    "minimaxi.com",
                ],
            )),
            Thinking::Effort,
        ),
        route(
            DataRoute::new("local-style", RC_R)
                .with_efforts(THREE_EFFORTS)
                .matching(matcher(
                    &["ollama-cloud", "custom", "lmstudio", "upstage"],
                    &["ollama.com", "upstage.ai"],
                )),
            Thinking::Effort,
        ),
    ]
}

/// The rows that differ from the default only in their thinking vocabulary or native fields, in
/// matching order.
fn vocabulary_rows() -> [Arc<dyn ReasoningRoute>; 7] {
    [
        route(
            DataRoute::new("deepseek", CarrierSet::RC)
                .with_efforts(DEEPSEEK_EFFORTS)
                .with_echo("deepseek", PadRule::EveryAssistant)
                .matching(matcher(&["deepseek"], &["api.deepseek.com"])),
            Thinking::DeepSeek,
        ),
        route(
            DataRoute::new("kimi-coding", CarrierSet::RC)
                .with_efforts(KIMI_EFFORTS)
                .with_echo("kimi", PadRule::EveryAssistant)
                .matching(matcher(
                    &["kimi-coding", "kimi-coding-cn"],
                    &["api.moonshot.ai", "api.moonshot.cn", "api.kimi.com"],
                )),
            Thinking::Kimi,
        ),
        route(
            DataRoute::new("xiaomi", CarrierSet::RC)
                .with_efforts(ON_ONLY)
                .with_echo("mimo", PadRule::EveryAssistant)
                .matching(matcher(
                    &["xiaomi"],
                    &["api.xiaomimimo.com", "xiaomimimo.com"],
                )),
            Thinking::Mimo,
        ),
        route(
            DataRoute::new("zai", CarrierSet::RC)
                .with_efforts(GLM_EFFORTS)
                .matching(matcher(
                    &["zai", "glm", "z-ai", "z.ai", "zhipu"],
                    &["api.z.ai", "open.bigmodel.cn"],
                )),
            Thinking::Zai,
        ),
        route(
            DataRoute::new("alibaba", CarrierSet::RC)
                .with_efforts(ON_ONLY)
                .matching(matcher(
                    &["alibaba", "dashscope"],
                    &["dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com"],
                )),
            Thinking::DashScope,
        ),
        route(
            DataRoute::new("gemini-openai", CarrierSet::RC)
                .with_efforts(GEMINI_EFFORTS)
                .matching(matcher(
                    &["gemini-openai", "vertex"],
                    &[
                        "generativelanguage.googleapis.com",
                        "aiplatform.googleapis.com",
                    ],
                )),
            Thinking::Effort,
        ),
        route(
            DataRoute::new("copilot", CarrierSet::RC)
                .matching(matcher(&["copilot"], &["githubcopilot.com"])),
            Thinking::Effort,
        ),
    ]
}

/// The local-endpoint rule, matched after every row and ahead of the table's default row.
fn local_endpoint_route() -> Arc<dyn ReasoningRoute> {
    route(
        DataRoute::new("local-endpoint", RC_R)
            .with_efforts(THREE_EFFORTS)
            .matching(RouteMatcher::new().local_endpoint()),
        Thinking::Effort,
    )
}

/// The must-echo families of docs/spec.md §3a, by name and matcher; each pads every assistant
/// message.
fn must_echo_families() -> [(&'static str, RouteMatcher); 4] {
    [
        (
            "kimi",
            RouteMatcher::new()
                .providers(["kimi-coding", "kimi-coding-cn"])
                .hosts(["api.kimi.com", "moonshot.ai", "moonshot.cn"]),
        ),
        (
            "deepseek",
            RouteMatcher::new()
                .providers(["deepseek"])
                .models(["deepseek"])
                .hosts(["api.deepseek.com"]),
        ),
        (
            "mimo",
            RouteMatcher::new()
                .providers(["xiaomi"])
                .models(["mimo"])
                .hosts(["api.xiaomimimo.com", "xiaomimimo.com"]),
        ),
        (
            "missingno",
            RouteMatcher::new().models(["stealth/missingno"]),
        ),
    ]
}

/// The table every hermes build knows: built-in rows, must-echo families, local-endpoint rule
/// and the default row (RC). Third parties add theirs with `register_first` / `register`.
pub fn builtin_table() -> RouteTable {
    let mut table = RouteTable::new(route(
        DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
        Thinking::Effort,
    ));
    register_builtin(&mut table);
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glm_versions_parse() {
        assert_eq!(glm_version("glm-4.5-air"), Some((4, 5)));
        assert_eq!(glm_version("GLM-5"), Some((5, 0)));
        assert_eq!(glm_version("z-ai/glm-5.3"), Some((5, 3)));
        assert_eq!(glm_version("glm-4-plus"), Some((4, 0)));
        assert_eq!(glm_version("glm-z1"), None);
        for spelling in [
            "glm-5.3",
            "glm-5-3",
            "glm-5p3",
            "z-ai/glm-5-3",
            "GLM-5p3-flash",
            "glm-5.3-flash",
            "glm-5-3-flash",
        ] {
            assert_eq!(glm_version(spelling), Some((5, 3)), "{spelling}");
        }
        assert_eq!(glm_version("glm-4-9b-chat"), Some((4, 0)));
        assert_eq!(glm_version("glm-4-0520"), Some((4, 0)));
        assert_eq!(glm_version("glm-4-32b-0414"), Some((4, 0)));
        assert_eq!(glm_version("glm-4.5-air"), Some((4, 5)));
    }

    #[test]
    fn builtin_ids_are_listed_in_table_order() {
        let table = builtin_table();
        let ids: Vec<&str> = table.routes().map(|r| r.id()).collect();
        assert_eq!(ids, BUILTIN_ROUTE_IDS);
    }
}
