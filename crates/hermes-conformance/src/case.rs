//! Case files: an input history and target, and the exact assistant wire messages expected.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hermes_core::pairing::paired;
use hermes_core::{
    CHAT_WIRE, Effort, Message, RequestParts, ResolveOptions, Role, RouteTable, RouteTarget,
    ThinkingRequest, Verdicts, Wire, WireVerdicts,
};
use hermes_wire_anthropic::inbound::request_history;
use hermes_wire_chat::ChatRequest;
use hermes_wire_responses::inbound as responses_inbound;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{WireTarget, Wires};

/// The case-file format version this crate reads.
pub const SCHEMA_VERSION: u32 = 1;

/// One conformance case (`<route-id>/<name>.json`).
///
/// ```json
/// {"schema_version": 1, "description": "…",
///  "provider": "deepseek", "base_url": "https://api.deepseek.com/v1", "model": "deepseek-v4",
///  "thinking": "none", "verdicts": [], "reasoning_echo": false,
///  "history": [ …messages… ],
///  "expect": {"route": "deepseek", "must_echo": "deepseek",
///             "assistant": [ …exact JSON of each assistant wire message… ],
///             "fields": {"thinking": {"type": "enabled"}}}}
/// ```
///
/// **Native wires.** A case with `"wire": "<id>"` (any id but `chat`) is built through the
/// [`Wire`] of that id registered with the suite: a factory registered with
/// [`crate::Suite::wire_factory`] builds one for the case's own `provider` and `base_url`
/// (so one folder can hold direct, Vertex, Foundry and relay cases), else the wire registered
/// with [`crate::Suite::wire`] is used (its own target must then agree with the case's
/// `base_url`). As the driver does before every request, the history first goes through
/// `hermes_core::pairing::paired` (a dangling call gets its synthetic result, an orphan result
/// and a turn stored with `hermes_not_replayed` are left out). Such a case pins the whole body
/// with `expect.body`, compared **byte for byte** with the body the wire encoded, once both are
/// stripped of whitespace outside strings (so a case file may be pretty-printed): escapes
/// (`\u00e9`, `\/`), number spellings (integers above 2^64) and key order are checked as
/// written. (A stored item's own whitespace is checked by the native-wire invariants,
/// [`crate::check_wire_invariants`].) `expect.assistant` is not read for a native wire (give `[]`);
/// `expect.notes` may pin the lines the wire tells the user with that body. All of this uses
/// optional fields only: `schema_version` stays 1.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Must be [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What the case proves.
    pub description: String,
    /// Provider name as the user gives it.
    pub provider: String,
    /// Base URL, if any.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Target model.
    pub model: String,
    /// `none` (no preference), `off`, or an effort word.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Per-provider `reasoning_echo` config flag.
    #[serde(default)]
    pub reasoning_echo: bool,
    /// Recorded verdicts (`[provider, host, model, [fields]]`).
    #[serde(default)]
    pub verdicts: Verdicts,
    /// The wire the request is built for (`chat` when absent). A native wire's case is built
    /// through the `Wire` registered with [`crate::Suite::wire`] and checked with
    /// `expect.body`.
    #[serde(default)]
    pub wire: Option<String>,
    /// Recorded verdicts of other wires (`[wire, provider, host, model, [fields]]`).
    #[serde(default)]
    pub wire_verdicts: WireVerdicts,
    /// The stored history.
    pub history: Vec<Message>,
    /// The tool definitions the request carries, as the chat-completions array a wire takes
    /// (`RequestParts::tools`; a native wire converts them): part of a bound model's prefix
    /// (docs/spec.md §5a). Read by native-wire cases only.
    #[serde(default)]
    pub tools: Option<serde_json::Value>,
    /// What a gateway client sent back instead (docs/spec.md §10): when present, the body is built
    /// from it lined up with `history` (`hermes_core::reattach::align`): every assistant
    /// message equal to a stored one by normal form carries the stored carriers, the others go
    /// as the client sent them with no origin. Re-attachment cases: stripped carriers, edited
    /// turns, cleared tool outputs, a changed system prompt, forks.
    #[serde(default)]
    pub client_history: Option<Vec<Message>>,
    /// What an Anthropic Messages client sent back instead (docs/spec.md §10, the gateway's
    /// Messages door): its request body, `{"system": …, "messages": […]}` (other keys are not
    /// read), read as the door reads it (`hermes_wire_anthropic::inbound::request_history`:
    /// its own signed thinking blocks kept byte for byte, gateway-signed ones left out) and then
    /// lined up with `history` like `client_history`. A case gives one or the other.
    #[serde(default)]
    pub client_request: Option<serde_json::Value>,
    /// `client_request` exactly as written in the case file (filled by [`parse_case`]): what
    /// is read, so a client's block keeps its bytes.
    #[serde(skip)]
    pub client_request_text: Option<String>,
    /// What an OpenAI Responses client sent back instead (docs/spec.md §10, the gateway's Responses
    /// door): its request body, `{"instructions": …, "input": […]}`, read as the door reads
    /// it (`hermes_wire_responses::inbound::request_history`: `instructions` a system
    /// message, each run of `reasoning`, assistant `message` and `function_call` items one
    /// assistant message, `function_call_output` a tool message) and then lined up with
    /// `history` like `client_history`. Other keys (`model`, `store`, `include`, …) are not
    /// read, except that `previous_response_id` and a `compaction_trigger` item are refused:
    /// the door answers those itself (the stored response's messages, a compaction), which a
    /// case does not express.
    ///
    /// **Reasoning items are left out.** The door reads a `reasoning` item as reasoning only
    /// when its `encrypted_content` is a gateway seal that verifies (summary, tenant, partition,
    /// the gateway's signing key: `vouch`, in hermes-serve), and leaves every other one out. The
    /// suite holds no key, so no item verifies here: every reasoning item is left out — whether
    /// the client dropped them, kept them (`store: false`) or altered one — and what reaches the
    /// wire is what re-attachment gives each turn the store holds at its place, the stored
    /// carriers. A turn it does not hold gets the route's rule for a missing carrier.
    ///
    /// **Compaction items.** The door opens a `compaction` item's seal with the same key and
    /// puts hermes' own checkpoint of the stored summary in its place
    /// (`hermes_core::checkpoint::own_checkpoint`). Without the key the suite cannot open it:
    /// the case states what the store gives for each seal in `compaction_summaries`, and the
    /// suite puts that summary's own checkpoint in the item's place, as the door does. A
    /// compaction item whose seal the case does not name is an error. A case gives one of
    /// `client_history`, `client_request` and `client_responses_request`.
    #[serde(default)]
    pub client_responses_request: Option<serde_json::Value>,
    /// For a `client_responses_request` with `compaction` items: each item's
    /// `encrypted_content` and the summary the gateway's store holds for it (what the door
    /// reads once it has opened the seal; see `client_responses_request`).
    #[serde(default)]
    pub compaction_summaries: Option<BTreeMap<String, String>>,
    /// What must come out.
    pub expect: CaseExpect,
}

/// The expected outcome of a case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseExpect {
    /// The route id the target must resolve to.
    pub route: String,
    /// The must-echo family, or `null` for none (unchecked when the key is absent).
    #[serde(default, deserialize_with = "some_value")]
    pub must_echo: Option<Option<String>>,
    /// The exact JSON of every assistant wire message, in order.
    pub assistant: Vec<serde_json::Value>,
    /// The exact JSON of every wire message, in order, keys in sending order (unchecked when
    /// absent).
    #[serde(default)]
    pub messages: Option<Vec<serde_json::Value>>,
    /// The exact JSON of the whole request body, keys in sending order (unchecked when
    /// absent; the way to pin a native wire's body, compared byte for byte for a native wire).
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    /// `body` exactly as written in the case file (filled by [`parse_case`]): what a native
    /// wire's body is compared with, escapes and big integers included.
    #[serde(skip)]
    pub body_text: Option<String>,
    /// The exact lines a native wire tells the user when it sends this body
    /// (`Outgoing::notes`; unchecked when absent).
    #[serde(default)]
    pub notes: Option<Vec<String>>,
    /// The exact top-level fields after `model` and `messages` (unchecked when absent).
    #[serde(default)]
    pub fields: Option<serde_json::Map<String, serde_json::Value>>,
}

fn some_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Parses a `thinking` word of a case.
fn thinking(word: Option<&str>) -> Result<ThinkingRequest, String> {
    match word {
        None | Some("none") => Ok(ThinkingRequest::NoPreference),
        Some("off") => Ok(ThinkingRequest::Off),
        Some(w) => Effort::parse(w)
            .map(ThinkingRequest::Effort)
            .ok_or_else(|| format!("unknown thinking `{w}`: expected none, off or an effort")),
    }
}

/// Compact JSON with key order kept, so two values compare exactly (order included).
fn canonical(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// JSON text without the whitespace outside its strings: every other byte (escapes, number
/// spellings, key order) kept as written.
pub(crate) fn compact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

impl Case {
    /// What a gateway client sent back, in the message model: `client_history` as given,
    /// `client_request` read as the Messages door reads it, or `client_responses_request` read
    /// as the Responses door reads it; `None` when the case gives none of them.
    pub fn client(&self) -> Result<Option<Vec<Message>>, String> {
        let given = [
            self.client_history.is_some(),
            self.client_request.is_some(),
            self.client_responses_request.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(
                "the case gives more than one of `client_history`, `client_request` \
                 and `client_responses_request`: give one"
                    .to_owned(),
            );
        }
        if self.compaction_summaries.is_some() && self.client_responses_request.is_none() {
            return Err(
                "`compaction_summaries` is read with a `client_responses_request` only".to_owned(),
            );
        }
        if let Some(history) = &self.client_history {
            return Ok(Some(history.clone()));
        }
        if let Some(request) = &self.client_request {
            let text = match &self.client_request_text {
                Some(text) => text.clone(),
                None => serde_json::to_string(request).map_err(|e| e.to_string())?,
            };
            return request_history(&text)
                .map(Some)
                .map_err(|e| format!("client_request: at `{}`: {}", e.at, e.message));
        }
        match &self.client_responses_request {
            Some(request) => self.responses_client(request).map(Some),
            None => Ok(None),
        }
    }

    /// `client_responses_request` read as the Responses door reads it, reasoning items left
    /// out and each compaction item replaced by the own checkpoint of its summary (see the
    /// field's doc).
    fn responses_client(&self, request: &serde_json::Value) -> Result<Vec<Message>, String> {
        let refused = |why: &str| format!("client_responses_request: {why}");
        if request
            .get("previous_response_id")
            .is_some_and(|id| !id.is_null())
        {
            return Err(refused(
                "`previous_response_id` is answered by the door from its store (the stored \
                 response's messages); a case cannot express it: give the messages as input",
            ));
        }
        let text = serde_json::to_string(request).map_err(|e| e.to_string())?;
        let read = responses_inbound::request_history(&text)
            .map_err(|e| refused(&format!("at `{}`: {}", e.at, e.message)))?;
        if read.trigger {
            return Err(refused(
                "a `compaction_trigger` item is answered by the door with a compaction; a case \
                 cannot express it",
            ));
        }
        // `read.sealed` is left out: no reasoning item verifies without the gateway's key.
        let mut messages = read.messages;
        let summaries = self.compaction_summaries.clone().unwrap_or_default();
        let mut used = BTreeSet::new();
        for item in &read.compactions {
            let summary = summaries.get(&item.seal).ok_or_else(|| {
                refused(&format!(
                    "at `{}`: `compaction_summaries` gives no summary for this compaction \
                     item's seal (the suite cannot open it)",
                    item.at
                ))
            })?;
            used.insert(item.seal.as_str());
            messages[item.message] = hermes_core::checkpoint::own_checkpoint(summary);
        }
        if used.len() < summaries.len() {
            return Err(
                "`compaction_summaries` names a seal no compaction item of the client's input \
                 carries"
                    .to_owned(),
            );
        }
        Ok(messages)
    }

    /// Runs the case against `table`; `route` is the folder it was found in.
    pub fn run(&self, table: &RouteTable, route: &str) -> Result<(), String> {
        self.run_with(table, route, &[])
    }

    /// Runs the case, building a native wire's body through the matching wire of `wires`.
    pub fn run_with(
        &self,
        table: &RouteTable,
        route: &str,
        wires: &[&dyn Wire],
    ) -> Result<(), String> {
        self.run_in(table, route, &Wires::fixed(wires))
    }

    /// Runs the case with the suite's wires (fixed and factories).
    pub(crate) fn run_in(
        &self,
        table: &RouteTable,
        route: &str,
        wires: &Wires<'_>,
    ) -> Result<(), String> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(format!(
                "schema_version {} (this suite reads {SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        if self.expect.route != route {
            return Err(format!(
                "case sits under `{route}` but expects route `{}`",
                self.expect.route
            ));
        }
        let target = RouteTarget::new(&self.provider, self.base_url.as_deref(), &self.model);
        let options = ResolveOptions {
            reasoning_echo: self.reasoning_echo,
        };
        let decision = table.resolve(&target, options);
        if decision.id() != self.expect.route {
            return Err(format!(
                "resolved to route `{}` ({}), expected `{}`",
                decision.id(),
                decision.matched_by,
                self.expect.route
            ));
        }
        if let Some(family) = &self.expect.must_echo {
            let got = decision.echo.as_ref().map(|e| e.family.clone());
            if got != *family {
                return Err(format!("must-echo family {got:?}, expected {family:?}"));
            }
        }
        let before = serde_json::to_string(&self.history).map_err(|e| e.to_string())?;
        let thinking = thinking(self.thinking.as_deref())?;
        let wire_id = self.wire.as_deref().unwrap_or(CHAT_WIRE);
        // What the request is built from: the stored history, or a client's lined up with it
        // (its own thinking blocks then go only where the gateway lets them).
        let lined_up;
        let sent: &[Message] = match self.client()? {
            Some(client) => {
                let mut history = hermes_core::reattach::align(&self.history, &client).history;
                // The case's base URL, else its provider's default (docs/spec.md §8a), as the
                // engine settles it.
                let base_url = self.base_url.as_deref().or_else(|| {
                    hermes_engine::wires::provider(&self.provider).and_then(|p| p.base_url)
                });
                hermes_engine::wires::client_blocks_to(
                    &hermes_engine::builtin_wires(),
                    &mut history,
                    wire_id,
                    base_url.unwrap_or_default(),
                );
                lined_up = history;
                &lined_up
            }
            None => &self.history,
        };
        if wire_id != CHAT_WIRE {
            let target = WireTarget {
                provider: &self.provider,
                base_url: self.base_url.as_deref(),
                model: &self.model,
            };
            let wire = wires.choose(wire_id, &target)?;
            // As the driver does before every request, on every wire.
            let (history, _) = paired(sent);
            let tools = match &self.tools {
                Some(t) => Some(
                    hermes_core::RawJson::from_text(t.to_string()).map_err(|e| e.to_string())?,
                ),
                None => None,
            };
            let parts = RequestParts::new(&history, &decision, &self.verdicts)
                .wire_verdicts(&self.wire_verdicts)
                .thinking(thinking)
                .tools(tools.as_ref());
            let out = wire.get().encode(&parts).map_err(|e| e.to_string())?;
            let after = serde_json::to_string(&self.history).map_err(|e| e.to_string())?;
            if before != after {
                return Err("encoding changed the stored history".to_owned());
            }
            let got = std::str::from_utf8(&out.body)
                .map_err(|e| format!("the body is not UTF-8: {e}"))?;
            let body: serde_json::Value =
                serde_json::from_str(got).map_err(|e| format!("the body is not JSON: {e}"))?;
            if let Some(want) = &self.expect.body {
                let want_text = match &self.expect.body_text {
                    Some(text) => compact_text(text),
                    None => canonical(want),
                };
                let got_text = compact_text(got);
                if got_text != want_text {
                    let same_value = canonical(&body) == canonical(want);
                    return Err(format!(
                        "request body differs{}\n  expected: {want_text}\n  got:      {got_text}",
                        if same_value {
                            " (same JSON value, other bytes: escapes, number spelling or key order)"
                        } else {
                            ""
                        }
                    ));
                }
            }
            if let Some(want) = &self.expect.notes
                && *want != out.notes
            {
                return Err(format!(
                    "wire notes differ\n  expected: {want:?}\n  got:      {:?}",
                    out.notes
                ));
            }
            // A native wire's messages are its own shape: the body says it all.
            return Ok(());
        }
        let request = ChatRequest::build(sent, &decision, &self.verdicts, thinking);
        let body = serde_json::to_value(&request).map_err(|e| e.to_string())?;
        let after = serde_json::to_string(&self.history).map_err(|e| e.to_string())?;
        if before != after {
            return Err("shaping changed the stored history".to_owned());
        }
        if let Some(want) = &self.expect.body {
            let (got, want) = (canonical(&body), canonical(want));
            if got != want {
                return Err(format!(
                    "request body differs\n  expected: {want}\n  got:      {got}"
                ));
            }
        }

        let messages = body
            .get("messages")
            .and_then(|m| m.as_array())
            .cloned()
            .unwrap_or_default();
        let got: Vec<&serde_json::Value> = messages
            .iter()
            .zip(sent)
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(w, _)| w)
            .collect();
        if got.len() != self.expect.assistant.len() {
            return Err(format!(
                "{} assistant wire messages, expected {}",
                got.len(),
                self.expect.assistant.len()
            ));
        }
        for (i, (got, want)) in got.iter().zip(&self.expect.assistant).enumerate() {
            let (got, want) = (canonical(got), canonical(want));
            if got != want {
                return Err(format!(
                    "assistant message {i} differs\n  expected: {want}\n  got:      {got}"
                ));
            }
        }
        if let Some(all) = &self.expect.messages {
            if messages.len() != all.len() {
                return Err(format!(
                    "{} wire messages, expected {}",
                    messages.len(),
                    all.len()
                ));
            }
            for (i, (got, want)) in messages.iter().zip(all).enumerate() {
                let (got, want) = (canonical(got), canonical(want));
                if got != want {
                    return Err(format!(
                        "wire message {i} differs\n  expected: {want}\n  got:      {got}"
                    ));
                }
            }
        }
        if let Some(fields) = &self.expect.fields {
            let mut got = body.as_object().cloned().unwrap_or_default();
            got.shift_remove("model");
            got.shift_remove("messages");
            let (got, want) = (
                canonical(&serde_json::Value::Object(got)),
                canonical(&serde_json::Value::Object(fields.clone())),
            );
            if got != want {
                return Err(format!(
                    "body fields differ\n  expected: {want}\n  got:      {got}"
                ));
            }
        }
        Ok(())
    }
}

/// Loads every `*.json` case in `dir`, sorted by file name; a missing folder holds no cases.
pub fn load_cases(dir: &Path) -> Result<Vec<(String, Case)>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let case = parse_case(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((name, case))
        })
        .collect()
}

/// Parses one case file, naming the JSON path of any error.
pub fn parse_case(text: &str) -> Result<Case, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut case: Case = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| format!("at `{}`: {}", e.path(), e.inner()))?;
    de.end().map_err(|e| e.to_string())?;
    // The body's text as written, for the byte-for-byte comparison of native wires.
    #[derive(Deserialize)]
    struct RawCase<'a> {
        #[serde(borrow)]
        expect: RawExpect<'a>,
        #[serde(borrow, default)]
        client_request: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct RawExpect<'a> {
        #[serde(borrow, default)]
        body: Option<&'a RawValue>,
    }
    let raw: RawCase<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    case.expect.body_text = raw
        .expect
        .body
        .filter(|b| b.get() != "null")
        .map(|b| b.get().to_owned());
    case.client_request_text = raw
        .client_request
        .filter(|r| r.get() != "null")
        .map(|r| r.get().to_owned());
    Ok(case)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::parse_case;
    use hermes_core::Role;
    use hermes_core::checkpoint::own_checkpoint;

    const CASE: &str = r#"{"schema_version": 1, "description": "d", "provider": "anthropic",
        "base_url": "https://api.anthropic.com", "model": "claude-sonnet-4-5", "history": [],
        CLIENT
        "expect": {"route": "default", "assistant": []}}"#;

    #[test]
    fn a_client_request_is_read_as_the_messages_door_reads_it_from_its_own_bytes() {
        let text = CASE.replace(
            "CLIENT",
            r#""client_request": {"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"signature":"c2ln","type":"thinking","thinking":"\u00e9"}, {"type": "text", "text": "yo"}]},
                {"role": "user", "content": "again"}]},"#,
        );
        let case = parse_case(&text).unwrap();
        let client = case.client().unwrap().unwrap();
        assert_eq!(client.len(), 3);
        let item = &client[1].reasoning_details.as_ref().unwrap()[0];
        assert_eq!(
            item.raw().get(),
            r#"{"signature":"c2ln","type":"thinking","thinking":"\u00e9"}"#,
            "the block's bytes as the case file writes them"
        );
    }

    #[test]
    fn a_client_responses_request_is_read_as_the_responses_door_reads_it() {
        let text = CASE.replace(
            "CLIENT",
            r#""client_responses_request": {"instructions": "be brief", "store": false, "input": [
                {"type": "compaction", "encrypted_content": "hermes1c.k.p.m"},
                {"role": "user", "content": "hi"},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "hermes1.k.mac"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]},
                {"role": "user", "content": "again"}]},
               "compaction_summaries": {"hermes1c.k.p.m": " We said hello. "},"#,
        );
        let case = parse_case(&text).unwrap();
        let client = case.client().unwrap().unwrap();
        let roles: Vec<Role> = client.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        assert_eq!(
            serde_json::to_string(&client[1]).unwrap(),
            serde_json::to_string(&own_checkpoint("We said hello.")).unwrap(),
            "the compaction item's place holds the own checkpoint of the summary the case names"
        );
        assert!(
            client[3].reasoning_content.is_none() && client[3].reasoning_details.is_none(),
            "a reasoning item no key verified is left out"
        );
        assert_eq!(client[3].content.as_ref().unwrap().get(), r#""yo""#);
    }

    #[test]
    fn what_the_responses_door_answers_itself_is_refused_not_faked() {
        let case = |client: &str| parse_case(&CASE.replace("CLIENT", client)).unwrap();
        for (client, said) in [
            (
                r#""client_responses_request": {"previous_response_id": "resp_1", "input": "hi"},"#,
                &["previous_response_id"][..],
            ),
            (
                r#""client_responses_request": {"input": [{"role": "user", "content": "hi"}, {"type": "compaction_trigger"}]},"#,
                &["compaction_trigger"][..],
            ),
            (
                r#""client_responses_request": {"input": [{"type": "compaction", "encrypted_content": "s"}, {"role": "user", "content": "hi"}]},"#,
                &["at `input[0]`", "no summary"][..],
            ),
            (
                r#""client_responses_request": {"input": "hi"}, "compaction_summaries": {"s": "x"},"#,
                &["names a seal no compaction item"][..],
            ),
            (
                r#""client_responses_request": {"input": [{"type": "web_search_call"}]},"#,
                &["at `input[0]`", "web_search_call"][..],
            ),
            (
                r#""client_history": [{"role": "user", "content": "hi"}], "client_responses_request": {"input": "hi"},"#,
                &["give one"][..],
            ),
        ] {
            let e = case(client).client().unwrap_err();
            for part in said {
                assert!(e.contains(part), "{client}: {e}");
            }
        }
    }

    #[test]
    fn a_case_gives_a_client_history_or_a_client_request_not_both() {
        let both = CASE.replace(
            "CLIENT",
            r#""client_history": [{"role": "user", "content": "hi"}],
               "client_request": {"messages": [{"role": "user", "content": "hi"}]},"#,
        );
        let case = parse_case(&both).unwrap();
        assert!(case.client().unwrap_err().contains("give one"));
        let bad = CASE.replace("CLIENT", r#""client_request": {"messages": []},"#);
        let e = parse_case(&bad).unwrap().client().unwrap_err();
        assert!(e.contains("at `messages`") && e.contains("is empty"), "{e}");
        let none = CASE.replace("CLIENT", "");
        assert!(parse_case(&none).unwrap().client().unwrap().is_none());
    }
}
