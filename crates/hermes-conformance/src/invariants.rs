//! Properties every route keeps, checked on a built-in corpus whatever the route declares.

use hermes_core::message::same_minter;
use hermes_core::{
    Carrier, CarrierSet, DetailItem, Message, PadRule, ResolveOptions, Role, RouteDecision,
    RouteTable, RouteTarget, Verdicts,
};
use hermes_wire_chat as chat;
use serde_json::Value;

use crate::Check;

/// The corpus: carriers of every kind, two origins, blank and padded turns, tool loops.
const CORPUS: &str = include_str!("corpus.json");

/// Opaque strings minted by `model-a` in the corpus.
const MINTED_BY_A: &[&str] = &["SIG-A-1", "ENC-A-1", "GSIG-A", "OPQ-A", "FSIG-A", "TSIG-A"];
/// Opaque strings minted by `model-b` in the corpus.
const MINTED_BY_B: &[&str] = &["ENC-B-1"];

/// Runs every invariant for the route `id` of `table`, once for each corpus model.
pub fn check_invariants(table: &RouteTable, id: &str) -> Vec<Check> {
    let corpus: Vec<Message> = match serde_json::from_str(CORPUS) {
        Ok(h) => h,
        Err(e) => {
            return vec![Check {
                route: id.to_owned(),
                name: "invariant corpus".to_owned(),
                failure: Some(e.to_string()),
            }];
        }
    };
    let Some(route) = table.get(id) else {
        return vec![Check {
            route: id.to_owned(),
            name: "invariants".to_owned(),
            failure: Some(format!("no route `{id}` in the table")),
        }];
    };
    // A realistic target: the route's own first provider name and host.
    let provider = route
        .matcher()
        .providers
        .first()
        .cloned()
        .unwrap_or_else(|| id.to_owned());
    let base_url = route
        .matcher()
        .hosts
        .first()
        .map(|h| format!("https://{h}/v1"));
    let mut checks = Vec::new();
    for model in ["model-a", "model-b", "model-a@elsewhere"] {
        // The third pass asks for model-a on another host: nothing it minted may go there.
        let (model, base_url, host_of_origin) = match model.split_once('@') {
            Some((model, _)) => (
                model,
                Some("https://elsewhere.invalid/v1".to_owned()),
                base_url.clone(),
            ),
            None => (model, base_url.clone(), base_url.clone()),
        };
        let target = RouteTarget::new(&provider, base_url.as_deref(), model);
        let Some(decision) = table.resolve_with(id, &target, ResolveOptions::default()) else {
            continue;
        };
        // The corpus's items were minted on the route's own host.
        let minted_on = RouteTarget::new(&provider, host_of_origin.as_deref(), model).host_key();
        let history: Vec<Message> = corpus
            .iter()
            .cloned()
            .map(|mut m| {
                if let Some(o) = &mut m.origin {
                    o.host.clone_from(&minted_on);
                }
                m
            })
            .collect();
        let model_label = if minted_on == target.host_key() {
            model.to_owned()
        } else {
            format!("{model} on another host")
        };
        let own = |m: &Message| m.origin.as_ref().is_none_or(|o| same_minter(o, &target));
        let mut check = |name: &str, result: Result<(), String>| {
            checks.push(Check {
                route: id.to_owned(),
                name: format!("{name} [{model_label}]"),
                failure: result.err(),
            });
        };
        let none = Verdicts::default();
        let shaped = match shape(&history, &decision, &none) {
            Ok(s) => s,
            Err(e) => {
                check("shapes the corpus", Err(e));
                continue;
            }
        };
        check("input unchanged", input_unchanged(&history, &decision));
        check("idempotent", idempotent(&shaped, &decision));
        check(
            "carriers within route",
            carriers_within(&history, &shaped, decision.carriers),
        );
        check("strict schema", strict_schema(&shaped, &decision));
        check(
            "no empty or null reasoning",
            no_empty_reasoning(&history, &shaped, &decision),
        );
        check("must-echo pad", must_echo_pad(&history, &shaped, &decision));
        check("native record stays private", native_private(&shaped));
        check("provenance", provenance(&history, &shaped, &own));
        check(
            "opaque items byte for byte",
            byte_for_byte(&history, &decision, &own),
        );
        check(
            "wire keys within the schema",
            allow_list(&history, &shaped, &decision),
        );
        check("verdicts honoured", verdicts_honoured(&history, &decision));
        check(
            "tool calls paired",
            tools_paired_on_wire(&history, &shaped, &decision),
        );
    }
    checks
}

fn shape(
    history: &[Message],
    decision: &RouteDecision,
    verdicts: &Verdicts,
) -> Result<Vec<Value>, String> {
    let wire = chat::shape(&chat::ShapeContext::new(decision, verdicts), history);
    let value = serde_json::to_value(&wire).map_err(|e| e.to_string())?;
    Ok(value.as_array().cloned().unwrap_or_default())
}

/// The assistant wire messages.
fn assistants<'v>(
    history: &'v [Message],
    shaped: &'v [Value],
) -> impl Iterator<Item = &'v Value> + 'v {
    shaped
        .iter()
        .zip(history)
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(w, _)| w)
}

fn input_unchanged(history: &[Message], decision: &RouteDecision) -> Result<(), String> {
    let before = serde_json::to_string(history).map_err(|e| e.to_string())?;
    let _ = shape(history, decision, &Verdicts::default())?;
    let after = serde_json::to_string(history).map_err(|e| e.to_string())?;
    (before == after)
        .then_some(())
        .ok_or_else(|| "shaping changed the stored history".to_owned())
}

fn idempotent(shaped: &[Value], decision: &RouteDecision) -> Result<(), String> {
    let text = serde_json::to_string(shaped).map_err(|e| e.to_string())?;
    let reparsed: Vec<Message> =
        serde_json::from_str(&text).map_err(|e| format!("wire copy does not parse: {e}"))?;
    let again = serde_json::to_string(&shape(&reparsed, decision, &Verdicts::default())?)
        .map_err(|e| e.to_string())?;
    (again == text).then_some(()).ok_or_else(|| {
        format!("shaping the shaped copy changed it\n  first:  {text}\n  second: {again}")
    })
}

fn carriers_within(
    history: &[Message],
    shaped: &[Value],
    allowed: CarrierSet,
) -> Result<(), String> {
    for (i, w) in assistants(history, shaped).enumerate() {
        for c in Carrier::ALL {
            if w.get(c.field()).is_some() && !allowed.contains(c) {
                return Err(format!(
                    "assistant {i} carries `{c}`, which the route does not read: {w}"
                ));
            }
        }
    }
    Ok(())
}

fn strict_schema(shaped: &[Value], decision: &RouteDecision) -> Result<(), String> {
    if !decision.strict {
        return Ok(());
    }
    let allowed_msg = ["role", "content", "tool_calls", "tool_call_id", "name"];
    for w in shaped {
        let Some(obj) = w.as_object() else { continue };
        if let Some(k) = obj.keys().find(|k| !allowed_msg.contains(&k.as_str())) {
            return Err(format!("strict route sent message key `{k}`: {w}"));
        }
        for call in obj
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let keys_ok = call.as_object().is_some_and(|c| {
                c.keys()
                    .all(|k| ["id", "type", "function"].contains(&k.as_str()))
            });
            let fn_ok = call
                .get("function")
                .and_then(Value::as_object)
                .is_some_and(|f| {
                    f.keys()
                        .all(|k| ["name", "arguments"].contains(&k.as_str()))
                });
            if !keys_ok || !fn_ok {
                return Err(format!("strict route sent an extra tool-call key: {call}"));
            }
        }
    }
    Ok(())
}

fn no_empty_reasoning(
    history: &[Message],
    shaped: &[Value],
    decision: &RouteDecision,
) -> Result<(), String> {
    for (i, w) in assistants(history, shaped).enumerate() {
        for field in ["reasoning_content", "reasoning"] {
            match w.get(field) {
                None => {}
                Some(Value::String(s)) if s.is_empty() => {
                    return Err(format!("assistant {i}: `{field}` is \"\""));
                }
                Some(Value::String(s))
                    if s.trim().is_empty() && (field == "reasoning" || decision.echo.is_none()) =>
                {
                    return Err(format!(
                        "assistant {i}: blank `{field}` sent to a route that is not must-echo"
                    ));
                }
                Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(format!("assistant {i}: `{field}` is {other}, not a string"));
                }
            }
        }
        match w.get("reasoning_details") {
            None => {}
            Some(Value::Array(items)) if !items.is_empty() => {}
            Some(other) => return Err(format!("assistant {i}: `reasoning_details` is {other}")),
        }
    }
    Ok(())
}

fn must_echo_pad(
    history: &[Message],
    shaped: &[Value],
    decision: &RouteDecision,
) -> Result<(), String> {
    let Some(echo) = &decision.echo else {
        return Ok(());
    };
    for (i, w) in assistants(history, shaped).enumerate() {
        let tool_turn = w
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        let needs = echo.pad == PadRule::EveryAssistant || tool_turn;
        if needs && !w.get("reasoning_content").is_some_and(Value::is_string) {
            return Err(format!(
                "must-echo route ({}) got assistant {i} without reasoning_content: {w}",
                echo.family
            ));
        }
    }
    Ok(())
}

fn native_private(shaped: &[Value]) -> Result<(), String> {
    let text = serde_json::to_string(shaped).map_err(|e| e.to_string())?;
    (!text.contains("hermes.native_assistant"))
        .then_some(())
        .ok_or_else(|| "the private native record item reached the wire".to_owned())
}

/// Opaque strings of the corpus, by the model that minted them.
fn minted_by(model: &str) -> &'static [&'static str] {
    if model == "model-a" {
        MINTED_BY_A
    } else {
        MINTED_BY_B
    }
}

fn provenance(
    history: &[Message],
    shaped: &[Value],
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    let text = serde_json::to_string(shaped).map_err(|e| e.to_string())?;
    for origin in history
        .iter()
        .filter(|m| !own(m))
        .filter_map(|m| m.origin.as_ref())
    {
        if let Some(s) = minted_by(&origin.model).iter().find(|s| text.contains(*s)) {
            return Err(format!(
                "opaque `{s}` minted by {} on {} was sent to another model or host",
                origin.model, origin.host
            ));
        }
    }
    Ok(())
}

fn byte_for_byte(
    history: &[Message],
    decision: &RouteDecision,
    own: &dyn Fn(&Message) -> bool,
) -> Result<(), String> {
    if !decision.carriers.contains(Carrier::ReasoningDetails) {
        return Ok(());
    }
    // Compare against the exact bytes the wire copy serialises to.
    let wire = chat::shape(
        &chat::ShapeContext::new(decision, &Verdicts::default()),
        history,
    );
    let text = serde_json::to_string(&wire).map_err(|e| e.to_string())?;
    for msg in history.iter().filter(|m| own(m)) {
        for item in msg.reasoning_details.iter().flatten() {
            if let DetailItem::Provider { raw, .. } = item
                && !text.contains(raw.get())
            {
                return Err(format!(
                    "stored item {} is not on the wire byte for byte",
                    raw.get()
                ));
            }
        }
    }
    Ok(())
}

/// docs/spec.md §2: a chat-completions message carries only `role`, `content`, `name` (not on tool
/// results), non-empty `tool_calls`, `tool_call_id`, the carriers the route reads and the §4
/// vendor fields on their own routes; a tool call only `id`, `type`, `function` (`name`,
/// `arguments`, Copilot's `thought_signature`) and Gemini's `extra_content`.
fn allow_list(
    history: &[Message],
    shaped: &[Value],
    decision: &RouteDecision,
) -> Result<(), String> {
    let native = &decision.native;
    for (i, (wire, stored)) in shaped.iter().zip(history).enumerate() {
        let Some(obj) = wire.as_object() else {
            return Err(format!("message {i} is not an object"));
        };
        for key in obj.keys() {
            let allowed = match key.as_str() {
                "role" | "content" | "tool_call_id" => true,
                "name" => stored.role != Role::Tool,
                "tool_calls" => obj[key].as_array().is_some_and(|c| !c.is_empty()),
                "reasoning_content" => decision.carriers.contains(Carrier::ReasoningContent),
                "reasoning" => decision.carriers.contains(Carrier::Reasoning),
                "reasoning_details" => decision.carriers.contains(Carrier::ReasoningDetails),
                "extra_content" => native.gemini_message_signature,
                "reasoning_opaque" | "reasoning_text" => native.copilot,
                _ => false,
            };
            if !allowed {
                return Err(format!("message {i} ({}) carries `{key}`", stored.role));
            }
        }
        for call in obj
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for key in call.as_object().map(|o| o.keys()).into_iter().flatten() {
                let allowed = match key.as_str() {
                    "id" | "type" | "function" => true,
                    "extra_content" => native.gemini_tool_signatures,
                    _ => false,
                };
                if !allowed {
                    return Err(format!("a tool call of message {i} carries `{key}`"));
                }
            }
            for key in call
                .get("function")
                .and_then(Value::as_object)
                .map(|o| o.keys())
                .into_iter()
                .flatten()
            {
                let allowed = match key.as_str() {
                    "name" | "arguments" => true,
                    "thought_signature" => native.copilot,
                    _ => false,
                };
                if !allowed {
                    return Err(format!(
                        "a tool call function of message {i} carries `{key}`"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn verdicts_honoured(history: &[Message], decision: &RouteDecision) -> Result<(), String> {
    for carrier in decision.carriers.iter() {
        let mut verdicts = Verdicts::default();
        verdicts.record(&decision.target, CarrierSet::NONE.with(carrier));
        let shaped = shape(history, decision, &verdicts)?;
        let echo_keeps = carrier == Carrier::ReasoningContent && decision.echo.is_some();
        for (i, w) in assistants(history, &shaped).enumerate() {
            let present = w.get(carrier.field()).is_some();
            if present && !echo_keeps {
                return Err(format!("assistant {i} still carries refused `{carrier}`"));
            }
            if echo_keeps
                && !present
                && decision
                    .echo
                    .as_ref()
                    .is_some_and(|e| e.pad == PadRule::EveryAssistant)
            {
                return Err(format!(
                    "a must-echo route dropped reasoning_content after a verdict (assistant {i})"
                ));
            }
        }
    }
    Ok(())
}

/// The wire copy keeps every tool call paired: shaped as sent, and shaped again with every
/// carrier the route reads refused (a verdict must never take a call or a result with it).
fn tools_paired_on_wire(
    history: &[Message],
    shaped: &[Value],
    decision: &RouteDecision,
) -> Result<(), String> {
    tools_paired(shaped)?;
    let mut verdicts = Verdicts::default();
    verdicts.record(&decision.target, decision.carriers);
    tools_paired(&shape(history, decision, &verdicts)?)
        .map_err(|e| format!("after a verdict refusing {:?}: {e}", decision.carriers))
}

/// Every wire (docs/providers.md, "Tool-call pairing"): each id in an assistant message's
/// `tool_calls` is answered by a `tool` message's `tool_call_id` before the next non-tool
/// message, and each `tool` message answers a call of the assistant message it follows.
fn tools_paired(wire: &[Value]) -> Result<(), String> {
    let id_at = |v: Option<&Value>, what: &str, i: usize| -> Result<String, String> {
        match v.and_then(Value::as_str) {
            Some(id) if !id.is_empty() => Ok(id.to_owned()),
            _ => Err(format!("wire message {i}: {what} has no id")),
        }
    };
    // The calls still waiting for a result, and the wire index of the message that made them.
    let mut pending: Vec<String> = Vec::new();
    let mut caller = 0;
    for (i, w) in wire.iter().enumerate() {
        let role = w.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = id_at(w.get("tool_call_id"), "a tool result", i)?;
            let Some(at) = pending.iter().position(|p| *p == id) else {
                return Err(format!(
                    "wire message {i}: tool result `{id}` answers no call of the assistant message before it"
                ));
            };
            pending.remove(at);
            continue;
        }
        if !pending.is_empty() {
            return Err(format!(
                "wire message {caller}: tool calls {} have no result before message {i} ({role})",
                pending.join(", ")
            ));
        }
        let calls = w.get("tool_calls").and_then(Value::as_array);
        if role == "assistant"
            && let Some(calls) = calls
        {
            for call in calls {
                pending.push(id_at(call.get("id"), "a tool call", i)?);
            }
            caller = i;
        }
    }
    match pending.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "wire message {caller}: tool calls {} have no result before the end",
            pending.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::{DataRoute, NativeFields, ReasoningRoute, RouteMatcher};
    use std::sync::Arc;

    #[test]
    fn tools_paired_reads_the_wire_array() {
        use serde_json::json;
        let call = |ids: &[&str]| {
            let calls: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}))
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "x"});
        let user = json!({"role": "user", "content": "u"});
        let done = json!({"role": "assistant", "content": "done"});

        let paired = [
            user.clone(),
            call(&["a", "b"]),
            result("b"),
            result("a"),
            done.clone(),
        ];
        assert_eq!(tools_paired(&paired), Ok(()));

        let unpaired = [
            user.clone(),
            call(&["a", "b"]),
            result("a"),
            done.clone(),
            user.clone(),
        ];
        let err = tools_paired(&unpaired).unwrap_err();
        assert!(
            err.contains("tool calls b have no result before message 3"),
            "{err}"
        );
        let err = tools_paired(&[user.clone(), call(&["a"])]).unwrap_err();
        assert!(err.contains("before the end"), "{err}");

        let orphan = [user.clone(), done.clone(), result("a")];
        let err = tools_paired(&orphan).unwrap_err();
        assert!(err.contains("tool result `a` answers no call"), "{err}");
        let twice = [user.clone(), call(&["a"]), result("a"), result("a")];
        assert!(tools_paired(&twice).is_err());
        let late = [user.clone(), call(&["a"]), user, result("a")];
        assert!(tools_paired(&late).is_err());
    }

    #[test]
    fn the_corpus_wire_copy_is_checked_for_pairing() {
        let table = hermes_providers::builtin_table();
        let checks = check_invariants(&table, "deepseek");
        let paired: Vec<_> = checks
            .iter()
            .filter(|c| c.name.starts_with("tool calls paired"))
            .collect();
        assert_eq!(paired.len(), 3, "{checks:#?}");
        assert!(paired.iter().all(|c| c.failure.is_none()), "{paired:#?}");
        // The check reads the shaped JSON: the corpus shaped for the route is paired, and the
        // same copy with one result removed is not.
        let corpus: Vec<Message> = serde_json::from_str(CORPUS).unwrap();
        let target = RouteTarget::new("deepseek", None, "model-a");
        let decision = table.resolve(&target, ResolveOptions::default());
        let mut shaped = shape(&corpus, &decision, &Verdicts::default()).unwrap();
        assert_eq!(tools_paired_on_wire(&corpus, &shaped, &decision), Ok(()));
        let at = shaped.iter().position(|w| w["role"] == "tool").unwrap();
        shaped.remove(at);
        assert!(tools_paired_on_wire(&corpus, &shaped, &decision).is_err());
    }

    #[test]
    fn corpus_parses_and_has_the_minted_markers() {
        let history: Vec<Message> = serde_json::from_str(CORPUS).unwrap();
        let text = serde_json::to_string(&history).unwrap();
        for marker in MINTED_BY_A.iter().chain(MINTED_BY_B) {
            assert!(text.contains(marker), "{marker}");
        }
    }

    #[test]
    fn a_well_behaved_route_passes_every_invariant() {
        let mut table = RouteTable::new(Arc::new(
            DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
        ));
        table.register(Arc::new(
            DataRoute::new("all", CarrierSet::ALL).matching(RouteMatcher::new().providers(["all"])),
        ));
        for id in ["default", "all"] {
            let failures: Vec<_> = check_invariants(&table, id)
                .into_iter()
                .filter(|c| c.failure.is_some())
                .collect();
            assert!(failures.is_empty(), "{failures:#?}");
        }
    }

    /// A strict route that still renders Gemini signatures breaks the strict schema.
    #[derive(Debug)]
    struct LeakyStrict(DataRoute);

    impl ReasoningRoute for LeakyStrict {
        fn id(&self) -> &str {
            self.0.id()
        }
        fn matcher(&self) -> &RouteMatcher {
            self.0.matcher()
        }
        fn carriers(&self) -> CarrierSet {
            CarrierSet::NONE
        }
        fn strict(&self) -> bool {
            true
        }
        fn native_fields(&self, _: &RouteTarget) -> NativeFields {
            NativeFields {
                gemini_message_signature: true,
                gemini_tool_signatures: true,
                copilot: true,
            }
        }
    }

    #[test]
    fn a_route_that_breaks_its_own_declarations_is_caught() {
        let mut table = RouteTable::new(Arc::new(
            DataRoute::new("default", CarrierSet::RC).matching(RouteMatcher::new().any()),
        ));
        table.register(Arc::new(LeakyStrict(DataRoute::new(
            "leaky",
            CarrierSet::NONE,
        ))));
        let failed: Vec<String> = check_invariants(&table, "leaky")
            .into_iter()
            .filter(|c| c.failure.is_some())
            .map(|c| c.name)
            .collect();
        assert!(
            failed.contains(&"strict schema [model-a]".to_owned()),
            "{failed:?}"
        );
        assert!(
            !failed.iter().any(|n| n.starts_with("provenance")),
            "{failed:?}"
        );
    }
}
