//! The `ReasoningRoute` trait, its matcher, must-echo families and the ordered `RouteTable`.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::target::RouteTarget;

/// A standard reasoning carrier on an assistant message (docs/spec.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Carrier {
    /// `reasoning_content` (RC)
    ReasoningContent,
    /// `reasoning` (R)
    Reasoning,
    /// `reasoning_details` (RD)
    ReasoningDetails,
}

impl Carrier {
    /// All carriers, in wire order.
    pub const ALL: [Carrier; 3] = [
        Carrier::ReasoningContent,
        Carrier::Reasoning,
        Carrier::ReasoningDetails,
    ];

    /// The message key.
    pub fn field(self) -> &'static str {
        match self {
            Carrier::ReasoningContent => "reasoning_content",
            Carrier::Reasoning => "reasoning",
            Carrier::ReasoningDetails => "reasoning_details",
        }
    }

    /// Parses a message key.
    pub fn parse(field: &str) -> Option<Carrier> {
        Carrier::ALL.into_iter().find(|c| c.field() == field)
    }

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Carrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.field())
    }
}

/// A set of carriers.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CarrierSet(u8);

impl CarrierSet {
    /// No carrier.
    pub const NONE: CarrierSet = CarrierSet(0);
    /// RC only.
    pub const RC: CarrierSet = CarrierSet(1);
    /// All three.
    pub const ALL: CarrierSet = CarrierSet(1 | 2 | 4);

    /// Builds a set from carriers.
    pub fn of(carriers: impl IntoIterator<Item = Carrier>) -> Self {
        carriers
            .into_iter()
            .fold(CarrierSet::NONE, |s, c| s.with(c))
    }

    /// True when `carrier` is in the set.
    pub fn contains(self, carrier: Carrier) -> bool {
        self.0 & carrier.bit() != 0
    }

    /// The set with `carrier` added.
    pub const fn with(self, carrier: Carrier) -> Self {
        CarrierSet(self.0 | carrier.bit())
    }

    /// The set without `carrier`.
    pub(crate) fn without(self, carrier: Carrier) -> Self {
        CarrierSet(self.0 & !carrier.bit())
    }

    /// Carriers in both sets.
    pub(crate) fn intersect(self, other: CarrierSet) -> Self {
        CarrierSet(self.0 & other.0)
    }

    /// Carriers in either set.
    pub(crate) fn union(self, other: CarrierSet) -> Self {
        CarrierSet(self.0 | other.0)
    }

    /// True when empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The carriers, in wire order.
    pub fn iter(self) -> impl Iterator<Item = Carrier> {
        Carrier::ALL.into_iter().filter(move |c| self.contains(*c))
    }

    /// The message keys, in wire order.
    pub fn fields(self) -> Vec<&'static str> {
        self.iter().map(Carrier::field).collect()
    }
}

impl fmt::Debug for CarrierSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Carrier::field))
            .finish()
    }
}

impl Serialize for CarrierSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Carrier::field))
    }
}

/// A requested reasoning effort (`--effort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effort {
    /// `minimal`
    Minimal,
    /// `low`
    Low,
    /// `medium`
    Medium,
    /// `high`
    High,
    /// `xhigh`
    XHigh,
    /// `max`
    Max,
}

impl Effort {
    /// Every effort, lowest first.
    pub const ALL: [Effort; 6] = [
        Effort::Minimal,
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::XHigh,
        Effort::Max,
    ];

    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// Parses the CLI spelling.
    pub fn parse(text: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// What the user asked of the model's thinking for this request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThinkingRequest {
    /// Neither `--effort` nor `--no-thinking`.
    #[default]
    NoPreference,
    /// `--no-thinking`.
    Off,
    /// `--effort E`.
    Effort(Effort),
}

/// Top-level body fields a route adds for the thinking request (docs/spec.md §3b, §3c), in order.
pub type ThinkingFields = Vec<(&'static str, serde_json::Value)>;

/// The pad a must-echo route gets where a turn has no replayable reasoning: one space, never "".
pub const PAD: &str = " ";

/// Where a must-echo route puts the pad ([`PAD`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PadRule {
    /// Every assistant wire message carries RC (docs/spec.md §3a).
    EveryAssistant,
    /// Only assistant messages with tool calls carry RC.
    ToolCallTurns,
}

/// The must-echo behaviour a request gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoRule {
    /// Family name (`deepseek`, `kimi`, `mimo`, `missingno`, `config`, or a third party's).
    pub family: String,
    /// Which turns carry RC.
    pub pad: PadRule,
}

/// Provider names, hosts and model substrings a route or family answers to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteMatcher {
    /// Provider names (lowercase).
    pub providers: Vec<String>,
    /// Hosts, matched exactly or as a parent domain on a label boundary.
    pub hosts: Vec<String>,
    /// Model-id substrings (lowercase).
    pub model_substrings: Vec<String>,
    /// Matches any host the local-endpoint rule accepts.
    pub local_endpoint: bool,
    /// Matches everything (the default row).
    pub any: bool,
}

/// Why a matcher matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchReason {
    /// The provider name.
    Provider(String),
    /// The base URL host, within this listed host.
    Host(String),
    /// The model id contains this substring.
    Model(String),
    /// The host is a local endpoint.
    LocalEndpoint,
    /// The default row.
    Default,
    /// Forced by the caller (a route checked directly, e.g. by the conformance suite).
    Direct,
}

impl fmt::Display for MatchReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchReason::Provider(p) => write!(f, "provider name `{p}`"),
            MatchReason::Host(h) => write!(f, "host within `{h}`"),
            MatchReason::Model(m) => write!(f, "model contains `{m}`"),
            MatchReason::LocalEndpoint => f.write_str("local endpoint"),
            MatchReason::Default => f.write_str("default row"),
            MatchReason::Direct => f.write_str("chosen directly"),
        }
    }
}

impl RouteMatcher {
    /// An empty matcher (matches nothing).
    pub fn new() -> Self {
        RouteMatcher::default()
    }

    /// Adds provider names.
    pub fn providers<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        self.providers
            .extend(names.into_iter().map(|n| n.trim().to_lowercase()));
        self
    }

    /// Adds hosts.
    pub fn hosts<'a>(mut self, hosts: impl IntoIterator<Item = &'a str>) -> Self {
        self.hosts
            .extend(hosts.into_iter().map(|h| h.trim().to_lowercase()));
        self
    }

    /// Adds model substrings.
    pub fn models<'a>(mut self, needles: impl IntoIterator<Item = &'a str>) -> Self {
        self.model_substrings
            .extend(needles.into_iter().map(str::to_lowercase));
        self
    }

    /// Also matches local endpoints.
    pub fn local_endpoint(mut self) -> Self {
        self.local_endpoint = true;
        self
    }

    /// Matches everything.
    pub fn any(mut self) -> Self {
        self.any = true;
        self
    }

    /// Why `target` matches, or `None`.
    pub fn matches(&self, target: &RouteTarget) -> Option<MatchReason> {
        if let Some(p) = self.providers.iter().find(|p| **p == target.provider) {
            return Some(MatchReason::Provider(p.clone()));
        }
        if let Some(h) = self.hosts.iter().find(|h| target.host_within(h)) {
            return Some(MatchReason::Host(h.clone()));
        }
        if !self.model_substrings.is_empty() {
            let model = target.model.to_lowercase();
            if let Some(m) = self
                .model_substrings
                .iter()
                .find(|m| model.contains(m.as_str()))
            {
                return Some(MatchReason::Model(m.clone()));
            }
        }
        if self.local_endpoint && target.host.as_ref().is_some_and(|h| h.is_local_endpoint()) {
            return Some(MatchReason::LocalEndpoint);
        }
        self.any.then_some(MatchReason::Default)
    }
}

/// A must-echo family of docs/spec.md §3a: any of its tests matching puts the request in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MustEchoFamily {
    /// Family name.
    pub name: String,
    /// The tests.
    pub matcher: RouteMatcher,
    /// Which turns carry RC.
    pub pad: PadRule,
}

/// Which private native fields a route renders (docs/spec.md §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NativeFields {
    /// Message-level `extra_content` (Gemini text-turn signature).
    pub gemini_message_signature: bool,
    /// Tool-call `extra_content` (Gemini function-call signatures).
    pub gemini_tool_signatures: bool,
    /// Copilot's `reasoning_opaque` / `reasoning_text` and `function.thought_signature`.
    pub copilot: bool,
}

impl NativeFields {
    /// The rule built-in routes follow (docs/spec.md §4): Gemini fields when the model contains
    /// `gemini` or `gemma` (tool-call signatures also for the gemini-openai, vertex and copilot
    /// providers and Google's API hosts); Copilot fields only on `githubcopilot.com`.
    pub(crate) fn spec_rule(target: &RouteTarget) -> Self {
        let gemini_model = target.model_contains("gemini") || target.model_contains("gemma");
        let gemini_endpoint = matches!(
            target.provider.as_str(),
            "gemini-openai" | "vertex" | "copilot"
        ) || target.host_within("generativelanguage.googleapis.com")
            || target.host_within("aiplatform.googleapis.com");
        NativeFields {
            gemini_message_signature: gemini_model,
            gemini_tool_signatures: gemini_model || gemini_endpoint,
            copilot: target.host_within("githubcopilot.com"),
        }
    }
}

/// A chat-completions route: what it reads, what it must be sent, and what it adds to the body.
///
/// Implementations are plain data plus a few decisions; the table resolves a request to one
/// route (first match wins) and `shape` applies the declarations. Third parties implement this
/// trait in their own crate, depending only on `hermes-core`, and register the route with
/// [`RouteTable::register_first`] or [`RouteTable::register`].
pub trait ReasoningRoute: Send + Sync + fmt::Debug {
    /// Stable id, shown by `hermes routes` and used by conformance case folders.
    fn id(&self) -> &str;

    /// Provider names, hosts and model substrings this route answers to.
    fn matcher(&self) -> &RouteMatcher;

    /// The standard carriers the route reads and may be sent.
    fn carriers(&self) -> CarrierSet;

    /// A strict-schema route: not one byte beyond the documented message schema (no carriers, no
    /// pad, no native fields, no unknown keys). Wins over must-echo.
    fn strict(&self) -> bool {
        false
    }

    /// The must-echo family this route itself belongs to; the table's families are consulted
    /// when this is `None`.
    fn must_echo(&self) -> Option<EchoRule> {
        None
    }

    /// The private native fields this route renders for `target`.
    fn native_fields(&self, target: &RouteTarget) -> NativeFields {
        if self.strict() {
            NativeFields::default()
        } else {
            NativeFields::spec_rule(target)
        }
    }

    /// True when readable thinking of every past turn is replayed; false when only the newest
    /// assistant message carries it (older turns get the pad on a must-echo route).
    fn replays_stale_thinking(&self) -> bool {
        true
    }

    /// Top-level body fields for the thinking request (keep-thinking flags and effort).
    fn thinking_fields(&self, target: &RouteTarget, request: ThinkingRequest) -> ThinkingFields {
        let _ = target;
        match request {
            ThinkingRequest::Effort(e) => vec![("reasoning_effort", self.efforts().word(e).into())],
            ThinkingRequest::NoPreference | ThinkingRequest::Off => Vec::new(),
        }
    }

    /// The effort words this route sends and how each `--effort` maps onto them.
    fn efforts(&self) -> EffortVocabulary {
        EffortVocabulary::OPENAI
    }

    /// The keep-thinking flags this route may add, described for `hermes routes`.
    fn keep_thinking_flags(&self) -> &'static [&'static str] {
        &[]
    }
}

/// An effort vocabulary: the word sent for each requested effort (docs/spec.md §3c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffortVocabulary {
    /// Words for minimal, low, medium, high, xhigh and max, in that order.
    pub map: [&'static str; 6],
}

impl EffortVocabulary {
    /// OpenAI-style `reasoning_effort` (max becomes xhigh).
    pub(crate) const OPENAI: EffortVocabulary = EffortVocabulary {
        map: ["minimal", "low", "medium", "high", "xhigh", "xhigh"],
    };

    /// The word sent for `effort`.
    pub fn word(&self, effort: Effort) -> &'static str {
        self.map[effort as usize]
    }

    /// The distinct words, lowest first.
    pub fn words(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for w in self.map {
            if !out.contains(&w) {
                out.push(w);
            }
        }
        out
    }
}

/// A route declared entirely by data: the shape of every built-in row of docs/spec.md §3.
#[derive(Clone, Debug)]
pub struct DataRoute {
    /// Route id.
    pub id: String,
    /// What it answers to.
    pub matcher: RouteMatcher,
    /// Carriers it reads.
    pub carriers: CarrierSet,
    /// Strict schema.
    pub strict: bool,
    /// Its own must-echo family.
    pub must_echo: Option<EchoRule>,
    /// Effort vocabulary.
    pub efforts: EffortVocabulary,
    /// Whether readable thinking of every past turn is replayed (else only the newest turn's).
    pub replays_stale_thinking: bool,
}

impl DataRoute {
    /// A route reading `carriers`, matching nothing yet.
    pub fn new(id: &str, carriers: CarrierSet) -> Self {
        DataRoute {
            id: id.to_owned(),
            matcher: RouteMatcher::new(),
            carriers,
            strict: false,
            must_echo: None,
            efforts: EffortVocabulary::OPENAI,
            replays_stale_thinking: true,
        }
    }

    /// Sets the matcher.
    pub fn matching(mut self, matcher: RouteMatcher) -> Self {
        self.matcher = matcher;
        self
    }

    /// Marks the route strict.
    pub fn strict_schema(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Sets the effort vocabulary.
    pub fn with_efforts(mut self, vocabulary: EffortVocabulary) -> Self {
        self.efforts = vocabulary;
        self
    }

    /// Declares the route's own must-echo family.
    pub fn with_echo(mut self, family: &str, pad: PadRule) -> Self {
        self.must_echo = Some(EchoRule {
            family: family.to_owned(),
            pad,
        });
        self
    }

    /// Replays readable thinking only on the newest assistant turn.
    pub fn newest_thinking_only(mut self) -> Self {
        self.replays_stale_thinking = false;
        self
    }
}

impl ReasoningRoute for DataRoute {
    fn id(&self) -> &str {
        &self.id
    }
    fn matcher(&self) -> &RouteMatcher {
        &self.matcher
    }
    fn carriers(&self) -> CarrierSet {
        self.carriers
    }
    fn strict(&self) -> bool {
        self.strict
    }
    fn must_echo(&self) -> Option<EchoRule> {
        self.must_echo.clone()
    }
    fn efforts(&self) -> EffortVocabulary {
        self.efforts
    }
    fn replays_stale_thinking(&self) -> bool {
        self.replays_stale_thinking
    }
}

/// Options that change how a request resolves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResolveOptions {
    /// The per-provider `reasoning_echo = true` config flag: pad on any route that reads RC.
    pub reasoning_echo: bool,
}

/// A request resolved to one route, with every cross-row rule applied.
#[derive(Clone, Debug)]
pub struct RouteDecision {
    /// The route that won.
    pub route: Arc<dyn ReasoningRoute>,
    /// Why it won.
    pub matched_by: MatchReason,
    /// The target it was resolved for.
    pub target: RouteTarget,
    /// Carriers the route reads.
    pub carriers: CarrierSet,
    /// Strict schema.
    pub strict: bool,
    /// Must-echo behaviour, if any (never on a strict route or one that does not read RC).
    pub echo: Option<EchoRule>,
    /// Native fields rendered.
    pub native: NativeFields,
    /// Whether older turns' readable thinking is replayed.
    pub replays_stale_thinking: bool,
}

impl RouteDecision {
    /// Resolves `target` against one route directly, with `families` as the must-echo tier.
    pub(crate) fn for_route(
        route: Arc<dyn ReasoningRoute>,
        matched_by: MatchReason,
        target: &RouteTarget,
        families: &[MustEchoFamily],
        options: ResolveOptions,
    ) -> Self {
        let carriers = route.carriers();
        let strict = route.strict();
        let echo = if strict || !carriers.contains(Carrier::ReasoningContent) {
            None
        } else {
            route
                .must_echo()
                .or_else(|| {
                    families
                        .iter()
                        .find(|f| f.matcher.matches(target).is_some())
                        .map(|f| EchoRule {
                            family: f.name.clone(),
                            pad: f.pad,
                        })
                })
                .or_else(|| {
                    options.reasoning_echo.then(|| EchoRule {
                        family: "config".to_owned(),
                        pad: PadRule::EveryAssistant,
                    })
                })
        };
        RouteDecision {
            native: route.native_fields(target),
            replays_stale_thinking: route.replays_stale_thinking(),
            route,
            matched_by,
            target: target.clone(),
            carriers,
            strict,
            echo,
        }
    }

    /// The route id.
    pub fn id(&self) -> &str {
        self.route.id()
    }

    /// True when the readable thinking (RC/R) of an assistant turn reaches the wire on this
    /// route: on every turn when the route replays stale thinking, else only on the `newest`
    /// one.
    ///
    /// The one predicate the chat wire's shaping and the token estimator ([`crate::estimate`])
    /// share, so the pre-flight trigger and the compaction tail walk price exactly what shaping
    /// sends.
    pub fn thinking_reaches_wire(&self, newest: bool) -> bool {
        newest || self.replays_stale_thinking
    }
}

/// Routes in order, first match wins, then the local-endpoint rule and the default row, plus
/// the must-echo families of docs/spec.md §3a.
#[derive(Clone, Debug)]
pub struct RouteTable {
    rows: Vec<Arc<dyn ReasoningRoute>>,
    fallbacks: Vec<Arc<dyn ReasoningRoute>>,
    families: Vec<MustEchoFamily>,
}

impl RouteTable {
    /// A table whose last resort is `default` (which should match everything).
    pub fn new(default: Arc<dyn ReasoningRoute>) -> Self {
        RouteTable {
            rows: Vec::new(),
            fallbacks: vec![default],
            families: Vec::new(),
        }
    }

    /// Adds a route after the rows already registered (and before the fallbacks).
    pub fn register(&mut self, route: Arc<dyn ReasoningRoute>) {
        self.rows.push(route);
    }

    /// Adds a route before every other row, so it wins over the built-ins.
    pub fn register_first(&mut self, route: Arc<dyn ReasoningRoute>) {
        self.rows.insert(0, route);
    }

    /// Adds a fallback tried after every row and before the fallbacks already present (the
    /// local-endpoint rule sits here, ahead of the default row).
    pub fn register_fallback(&mut self, route: Arc<dyn ReasoningRoute>) {
        let at = self.fallbacks.len().saturating_sub(1);
        self.fallbacks.insert(at, route);
    }

    /// Adds a must-echo family, tested after those already present.
    pub fn add_family(&mut self, family: MustEchoFamily) {
        self.families.push(family);
    }

    /// Every route in matching order: rows, then fallbacks.
    pub fn routes(&self) -> impl Iterator<Item = &Arc<dyn ReasoningRoute>> {
        self.rows.iter().chain(&self.fallbacks)
    }

    /// The must-echo families in testing order.
    pub fn families(&self) -> &[MustEchoFamily] {
        &self.families
    }

    /// The route with this id.
    pub fn get(&self, id: &str) -> Option<&Arc<dyn ReasoningRoute>> {
        self.routes().find(|r| r.id() == id)
    }

    /// Resolves a request: first matching row, else the local-endpoint rule, else the default.
    pub fn resolve(&self, target: &RouteTarget, options: ResolveOptions) -> RouteDecision {
        let (route, reason) = self
            .routes()
            .find_map(|r| r.matcher().matches(target).map(|why| (r, why)))
            .map(|(r, why)| (Arc::clone(r), why))
            .unwrap_or_else(|| (Arc::clone(self.default_route()), MatchReason::Default));
        let decision = RouteDecision::for_route(route, reason, target, &self.families, options);
        tracing::debug!(
            route = decision.id(),
            matched_by = %decision.matched_by,
            provider = %target.provider,
            host = %target.host_key(),
            model = %target.model,
            must_echo = decision.echo.as_ref().map(|e| e.family.as_str()),
            "route resolved"
        );
        decision
    }

    /// Resolves `target` against the route with this id, bypassing matching.
    pub fn resolve_with(
        &self,
        id: &str,
        target: &RouteTarget,
        options: ResolveOptions,
    ) -> Option<RouteDecision> {
        let route = Arc::clone(self.get(id)?);
        Some(RouteDecision::for_route(
            route,
            MatchReason::Direct,
            target,
            &self.families,
            options,
        ))
    }

    fn default_route(&self) -> &Arc<dyn ReasoningRoute> {
        // `new` always installs one fallback and nothing removes it.
        &self.fallbacks[self.fallbacks.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_vocabulary_maps_and_lists_words() {
        let three = EffortVocabulary {
            map: ["low", "low", "medium", "high", "high", "high"],
        };
        assert_eq!(three.word(Effort::Minimal), "low");
        assert_eq!(EffortVocabulary::OPENAI.word(Effort::Max), "xhigh");
        assert_eq!(three.words(), ["low", "medium", "high"]);
    }

    #[test]
    fn first_match_wins_and_register_first_overrides() {
        let mut table = RouteTable::new(Arc::new(
            DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
        ));
        table.register(Arc::new(
            DataRoute::new("agg", CarrierSet::ALL)
                .matching(RouteMatcher::new().hosts(["openrouter.ai"])),
        ));
        table.register(Arc::new(
            DataRoute::new("strict", CarrierSet::NONE)
                .strict_schema()
                .matching(RouteMatcher::new().providers(["mistral"])),
        ));
        let t = RouteTarget::new(" Mistral ", Some("https://openrouter.ai/api/v1"), "m");
        assert_eq!(table.resolve(&t, ResolveOptions::default()).id(), "agg");
        table.register_first(Arc::new(
            DataRoute::new("mine", CarrierSet::RC)
                .matching(RouteMatcher::new().providers(["mistral"])),
        ));
        assert_eq!(table.resolve(&t, ResolveOptions::default()).id(), "mine");
        let other = RouteTarget::new("unknown", Some("https://example.test"), "m");
        let d = table.resolve(&other, ResolveOptions::default());
        assert_eq!((d.id(), &d.matched_by), ("default", &MatchReason::Default));
    }
}
