//! Profiles built from a third party's rules ([`ProfileSpec`]), so a provider that is not built in
//! can still be simulated strictly.

use serde_json::{Map, Value, json};

use crate::Switches;
use crate::rules::{ORPHAN_RESULT_TEXT, PairingFault, UNPAIRED_CALLS_PREFIX, tool_pairing};
use crate::wire::{
    Carrier, Refusal, assistants, bad_json_text, has_string, messages_of, switched_field,
    tool_calls,
};

/// What a known top-level parameter must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueRule {
    /// `true` or `false` (expected text: `a boolean`).
    Boolean,
    /// One of these strings (expected text: `one of "a", "b"`).
    OneOf(Vec<String>),
}

impl ValueRule {
    /// [`ValueRule::OneOf`] from any list of strings.
    pub fn one_of<S: Into<String>>(values: impl IntoIterator<Item = S>) -> ValueRule {
        ValueRule::OneOf(values.into_iter().map(Into::into).collect())
    }

    fn accepts(&self, v: &Value) -> bool {
        match self {
            ValueRule::Boolean => v.is_boolean(),
            ValueRule::OneOf(allowed) => v.as_str().is_some_and(|s| allowed.iter().any(|a| a == s)),
        }
    }

    /// What the `{expected}` placeholder says.
    fn expected(&self) -> String {
        match self {
            ValueRule::Boolean => "a boolean".to_owned(),
            ValueRule::OneOf(allowed) => {
                let quoted: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
                format!("one of {}", quoted.join(", "))
            }
        }
    }
}

/// Which assistant turns must carry the must-echo field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EchoTurns {
    /// Assistant turns with a non-empty `tool_calls`.
    ToolCalls,
    /// Every assistant turn.
    Every,
}

/// How the scripted model's replies carry reasoning while thinking is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyCarrier {
    /// No reasoning on the reply.
    None,
    /// A `reasoning_content` string (streamed in several deltas).
    ReasoningContent,
    /// OpenRouter's shape: `reasoning` plus a signed `reasoning.text` and a sealed
    /// `reasoning.encrypted` item in `reasoning_details`.
    ReasoningDetails,
}

/// A third party's provider contract, checked by the simulator like a built-in profile.
///
/// Start from [`ProfileSpec::new`] (which accepts everything) and add rules; pass it to
/// [`crate::Sim::builder`]. Texts are templates: `{name}`, `{expected}`, `{field}`, `{index}` and
/// `{role}` are replaced where the method says so. Every refusal is an HTTP 400 whose body is the
/// [`error_envelope`](ProfileSpec::error_envelope) with the text in place of `"{message}"`.
/// Checks run in this order: the body is an object with `messages`, the [`crate::Switches`],
/// top-level names, parameter values (in the order added), each assistant message (its keys,
/// then the must-echo field), then the tool-call pairing rule (on by default, with OpenAI's
/// texts: see [`unpaired_calls_text`](ProfileSpec::unpaired_calls_text)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileSpec {
    name: String,
    top_level: Option<Vec<String>>,
    unknown_parameter: String,
    params: Vec<(String, ValueRule)>,
    invalid_value: String,
    assistant_keys: Option<Vec<String>>,
    unknown_field: String,
    echo: Option<(String, EchoTurns)>,
    missing_echo: String,
    pairing: Option<(String, String)>,
    thinking_off: Option<(String, Value)>,
    reply: ReplyCarrier,
    envelope: Value,
}

/// The pairing rule's texts (unpaired calls, orphan result) when none are set: OpenAI's.
fn default_pairing() -> (String, String) {
    (
        format!("{UNPAIRED_CALLS_PREFIX}{{ids}}"),
        ORPHAN_RESULT_TEXT.to_owned(),
    )
}

impl ProfileSpec {
    /// A profile named `name` that accepts every request whose tool calls are paired with their
    /// results and replies with `reasoning_content`, in an OpenAI-style error envelope.
    pub fn new(name: impl Into<String>) -> ProfileSpec {
        ProfileSpec {
            name: name.into(),
            top_level: None,
            unknown_parameter: "Unrecognized request argument supplied: {name}".to_owned(),
            params: Vec::new(),
            invalid_value: "Invalid value for '{name}': expected {expected}.".to_owned(),
            assistant_keys: None,
            unknown_field: "Unrecognized request argument supplied: messages.{index}.{field}"
                .to_owned(),
            echo: None,
            missing_echo: "Missing `{field}` in the assistant message at index {index}.".to_owned(),
            pairing: Some(default_pairing()),
            thinking_off: None,
            reply: ReplyCarrier::ReasoningContent,
            envelope: json!({"error": {
                "message": "{message}",
                "type": "invalid_request_error",
                "param": null,
                "code": null
            }}),
        }
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Only these top-level names are accepted; others are refused with
    /// [`unknown_parameter_text`](Self::unknown_parameter_text).
    pub fn top_level<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.top_level = Some(names.into_iter().map(Into::into).collect());
        self
    }

    setters! {
        /// Text for an unknown top-level name (`{name}`).
        unknown_parameter_text(template: impl Into<String>) => unknown_parameter = template.into();
        /// Text for a parameter value its [`ValueRule`] refuses (`{name}`, `{expected}`).
        invalid_value_text(template: impl Into<String>) => invalid_value = template.into();
        /// Text for an unknown message key (`{field}`, `{index}`, `{role}`); also used for the keys
        /// [`crate::Switches::reject_message_fields`] names.
        unknown_field_text(template: impl Into<String>) => unknown_field = template.into();
        /// Text for a missing must-echo field (`{field}`, `{index}`).
        missing_echo_text(template: impl Into<String>) => missing_echo = template.into();
        /// Accepts tool calls without results and results without calls (a permissive server).
        without_tool_pairing() => pairing = None;
        /// How replies carry reasoning while thinking is on (default
        /// [`ReplyCarrier::ReasoningContent`]).
        reply_carrier(carrier: ReplyCarrier) => reply = carrier;
        /// The error body; every string equal to `"{message}"` in it is replaced by the text.
        error_envelope(template: Value) => envelope = template;
    }

    /// When present, top-level `name` must satisfy `rule`, else it is refused with
    /// [`invalid_value_text`](Self::invalid_value_text).
    pub fn param(mut self, name: impl Into<String>, rule: ValueRule) -> Self {
        self.params.push((name.into(), rule));
        self
    }

    /// Only these keys are accepted on assistant messages (the carrier fields the provider reads
    /// among them); others are refused with [`unknown_field_text`](Self::unknown_field_text).
    pub fn assistant_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.assistant_keys = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// The assistant `turns` must carry `field` as a string (`""` included), thinking on or off;
    /// else the request is refused with [`missing_echo_text`](Self::missing_echo_text).
    pub fn must_echo(mut self, field: impl Into<String>, turns: EchoTurns) -> Self {
        self.echo = Some((field.into(), turns));
        self
    }

    /// Text for an assistant message's tool calls left without `tool` results before the next
    /// non-tool message (`{ids}`: the ids, comma-separated). The default is OpenAI's:
    /// "An assistant message with 'tool_calls' must be followed by tool messages responding to
    /// each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}".
    /// Turns the pairing rule back on after [`without_tool_pairing`](Self::without_tool_pairing).
    pub fn unpaired_calls_text(mut self, template: impl Into<String>) -> Self {
        let (_, orphan) = self.pairing.take().unwrap_or_else(default_pairing);
        self.pairing = Some((template.into(), orphan));
        self
    }

    /// Text for a `tool` message answering no call of the assistant message it follows (`{id}`:
    /// its `tool_call_id`). The default is OpenAI's: "Invalid parameter: messages with role
    /// 'tool' must be a response to a preceeding message with 'tool_calls'.". Turns the pairing
    /// rule back on after [`without_tool_pairing`](Self::without_tool_pairing).
    pub fn orphan_result_text(mut self, template: impl Into<String>) -> Self {
        let (unpaired, _) = self.pairing.take().unwrap_or_else(default_pairing);
        self.pairing = Some((unpaired, template.into()));
        self
    }

    /// Thinking is on unless top-level `name` equals `value` (without this, always on).
    pub fn thinking_off_when(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.thinking_off = Some((name.into(), value.into()));
        self
    }

    fn refuse(&self, message: &str) -> Refusal {
        Refusal {
            status: 400,
            body: with_message(&self.envelope, message),
        }
    }

    fn thinking_on(&self, body: &Value) -> bool {
        self.thinking_off
            .as_ref()
            .is_none_or(|(name, off)| body.get(name) != Some(off))
    }

    /// How this request's reply carries reasoning.
    pub(crate) fn carrier(&self, body: &Value) -> Carrier {
        if !self.thinking_on(body) {
            return Carrier::None;
        }
        match self.reply {
            ReplyCarrier::None => Carrier::None,
            ReplyCarrier::ReasoningContent => Carrier::ReasoningContent,
            ReplyCarrier::ReasoningDetails => Carrier::OpenRouter,
        }
    }

    /// Answer to a body that is not valid JSON.
    pub(crate) fn bad_json(&self, err: &serde_json::Error) -> Refusal {
        self.refuse(&bad_json_text(err))
    }

    fn unknown_field(&self, index: usize, role: &str, field: &str) -> Refusal {
        let index = index.to_string();
        self.refuse(&fill(
            &self.unknown_field,
            &[("field", field), ("index", &index), ("role", role)],
        ))
    }

    /// Validates a parsed request against the rules and the switches.
    pub(crate) fn validate(&self, body: &Value, switches: &Switches) -> Result<(), Refusal> {
        let (obj, messages) = messages_of(body).map_err(|text| self.refuse(text))?;
        if let Some((i, role, field, _)) = switched_field(messages, &switches.reject_message_fields)
        {
            return Err(self.unknown_field(i, role, field));
        }
        if let Some(known) = &self.top_level
            && let Some(k) = obj.keys().find(|k| !known.contains(k))
        {
            return Err(self.refuse(&fill(&self.unknown_parameter, &[("name", k)])));
        }
        for (name, rule) in &self.params {
            if obj.get(name).is_some_and(|v| !rule.accepts(v)) {
                let expected = rule.expected();
                return Err(self.refuse(&fill(
                    &self.invalid_value,
                    &[("name", name), ("expected", &expected)],
                )));
            }
        }
        for (i, m) in assistants(messages) {
            self.check_assistant(i, m)?;
        }
        self.check_pairing(messages)
    }

    fn check_pairing(&self, messages: &[Value]) -> Result<(), Refusal> {
        let (Some((unpaired, orphan)), Some(fault)) = (&self.pairing, tool_pairing(messages))
        else {
            return Ok(());
        };
        Err(self.refuse(&match fault {
            PairingFault::Unpaired(ids) => fill(unpaired, &[("ids", &ids.join(", "))]),
            PairingFault::Orphan(id) => fill(orphan, &[("id", id)]),
        }))
    }

    fn check_assistant(&self, i: usize, m: &Map<String, Value>) -> Result<(), Refusal> {
        if let Some(known) = &self.assistant_keys
            && let Some(k) = m.keys().find(|k| !known.contains(k))
        {
            return Err(self.unknown_field(i, "assistant", k));
        }
        if let Some((field, turns)) = &self.echo {
            let due = match turns {
                EchoTurns::ToolCalls => tool_calls(m).is_some(),
                EchoTurns::Every => true,
            };
            if due && !has_string(m, field) {
                let index = i.to_string();
                return Err(self.refuse(&fill(
                    &self.missing_echo,
                    &[("field", field), ("index", &index)],
                )));
            }
        }
        Ok(())
    }
}

/// `template` with each `{key}` of `values` replaced by its value, in one pass (a value that
/// itself contains `{key}` is left as it is).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let key = &after[..close];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `envelope` with every `"{message}"` string replaced by `message`.
fn with_message(envelope: &Value, message: &str) -> Value {
    match envelope {
        Value::String(s) if s == "{message}" => Value::String(message.to_owned()),
        Value::Array(items) => items.iter().map(|v| with_message(v, message)).collect(),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), with_message(v, message)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_envelopes() {
        assert_eq!(
            fill(
                "unknown `{field}` on messages[{index}]",
                &[("field", "x"), ("index", "3")]
            ),
            "unknown `x` on messages[3]"
        );
        assert_eq!(fill("{a}{b}{{c}", &[("a", "{b}"), ("b", "2")]), "{b}2{{c}");
        assert_eq!(
            with_message(
                &json!([{"error": {"message": "{message}", "code": 400}}]),
                "no"
            ),
            json!([{"error": {"message": "no", "code": 400}}])
        );
        assert_eq!(
            ValueRule::one_of(["light", "deep"]).expected(),
            "one of \"light\", \"deep\""
        );
    }
}
