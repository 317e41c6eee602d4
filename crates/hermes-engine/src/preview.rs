//! The body of the next request for a stored conversation, through the same settlement, the
//! same wire and the same request parts as `chat`: no network, nothing stored.

use hermes_core::driver::{Conversation, DriverConfig};
use hermes_core::{
    Carrier, CarrierSet, Message, Outgoing, RawJson, RequestParts, Role, RouteDecision,
    SessionFile, ThinkingRequest,
};

use crate::Engine;
use crate::error::EngineError;
use crate::live::{LiveWire, live_base};
use crate::settle::{Choice, Defaults, Purpose, Settled, Stored, settle_thinking};

/// How to preview.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PreviewOptions {
    /// The command line's choice.
    pub choice: Choice,
    /// `config.toml`'s defaults.
    pub defaults: Defaults,
    /// The command line's thinking request (`--effort` / `--no-thinking`; `None` or
    /// [`ThinkingRequest::NoPreference`] when it gave neither). The preview's request settles as
    /// chat's does ([`settle_thinking`]): this, else the one the history stores in its
    /// `model_config`, else `defaults.effort`.
    pub thinking: Option<ThinkingRequest>,
    /// Carriers to treat as refused for this provider, host and model (`--reject`).
    pub reject: CarrierSet,
    /// A user message to append (`-q`).
    pub query: Option<String>,
    /// The next request is streamed (as `chat` streams unless `--no-stream`).
    pub stream: bool,
    /// The tool definitions the next request carries (the front end's, as its chat offers
    /// them).
    pub tools: Option<RawJson>,
}

impl PreviewOptions {
    /// Options for `choice`.
    pub fn new(choice: Choice) -> Self {
        PreviewOptions {
            choice,
            ..PreviewOptions::default()
        }
    }

    hermes_core::setters! {
        /// With config's defaults.
        defaults: Defaults;

        /// Treating `carriers` as refused.
        reject: CarrierSet;

        /// Appending a user message.
        query: Option<String>;

        /// Streamed or not.
        stream: bool;

        /// With the tool definitions chat would send.
        tools: Option<RawJson>;
    }

    /// With the command line's thinking request (flags only: config's default effort goes in
    /// [`Defaults::effort`]).
    pub fn thinking(mut self, thinking: ThinkingRequest) -> Self {
        self.thinking = Some(thinking);
        self
    }
}

/// A settled preview: the target, its route and wire, and the conversation to encode.
pub struct Preview {
    /// Where the request would go.
    pub settled: Settled,
    /// Its route (resolved for the host requests go to, as chat resolves it).
    pub decision: RouteDecision,
    /// The history (with `-q` appended) and the verdicts: the session's, `--reject`'s and the
    /// fleet's in effect.
    pub conversation: Conversation,
    /// Thinking request, stream and tools, as chat's driver would send them.
    config: DriverConfig,
    /// The wire chat would send through (built by the same function, without credentials).
    wire: LiveWire,
}

impl std::fmt::Debug for Preview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preview")
            .field("settled", &self.settled)
            .field("route", &self.decision.id())
            .field("wire", &self.wire.wire().id())
            .finish_non_exhaustive()
    }
}

impl Preview {
    /// Settles `file`'s conversation for `options` exactly as `chat` would: the same
    /// settlement, the host chat's requests go to (for a simulator, the loopback host it
    /// binds), the same route and the same wire.
    // `..Default::default()` fills in the `bedrock` feature's AWS credentials.
    pub fn new(
        engine: &Engine,
        file: SessionFile,
        options: PreviewOptions,
    ) -> Result<Preview, EngineError> {
        let stored = Stored {
            provider: file.provider.as_deref(),
            model: file.model.as_deref(),
            base_url: file.base_url.as_deref(),
            base_url_confirmed: false,
        };
        engine.check_provider(&options.choice, stored.provider, &options.defaults)?;
        let settled = engine.settle(
            Purpose::Preview,
            &options.choice,
            Some(stored),
            &options.defaults,
            &|_| None,
        )?;
        let live_base = live_base(&settled, None);
        let decision = engine.resolve_live(&settled, Some(&live_base));
        let mut verdicts = file
            .verdicts()
            .map_err(|e| EngineError::Failed(e.to_string()))?;
        if options.reject.contains(Carrier::ReasoningContent)
            && let Some(echo) = &decision.echo
        {
            return Err(EngineError::InvalidParameter {
                parameter: "reject".into(),
                why: format!(
                    "reasoning_content may not be rejected: route `{}` is must-echo (family {}), where reasoning_content is required",
                    decision.id(),
                    echo.family
                ),
            });
        }
        verdicts.record(&decision.target, options.reject);
        let wire_verdicts = hermes_core::WireVerdicts::from_model_config(&file.model_config)
            .map_err(|e| EngineError::Failed(format!("model_config: {e}")))?;
        let stored_thinking = hermes_store::StoredThinking::from_model_config(&file.model_config)
            .map_err(|e| {
            EngineError::Failed(format!(
                "model_config: member `{}`: {e}",
                hermes_store::THINKING_KEY
            ))
        })?;
        let thinking = settle_thinking(
            options.thinking.unwrap_or_default(),
            stored_thinking,
            options.defaults.effort,
        );
        let mut messages = file.messages;
        if let Some(text) = &options.query {
            messages.push(Message::text(Role::User, text));
        }
        // No request is sent: the client only completes the wire. The key, when there is one,
        // names the account a prefix-bound model binds replayed thinking to (docs/spec.md §5a 1),
        // which decides what the body replays; nothing is sent with it.
        let client = engine.client(hermes_providers::Waits::default())?;
        let wire = LiveWire::new(
            engine,
            &settled,
            &live_base,
            client,
            hermes_providers::Credentials {
                key: None,
                sim: settled.sim.is_some(),
                ..Default::default()
            },
        )?;
        Ok(Preview {
            settled,
            decision,
            conversation: Conversation {
                messages,
                verdicts,
                wire_verdicts,
            },
            config: crate::open::driver_config(thinking, options.stream, options.tools),
            wire,
        })
    }

    /// Adds the store's fleet verdicts for this target that are younger than `reprobe_after`
    /// (an older one would be re-probed, so the next request would carry its field), as a chat
    /// of any session would.
    pub async fn with_fleet_verdicts(
        mut self,
        store: &hermes_store::Store,
        reprobe_after: std::time::Duration,
    ) -> Result<Preview, EngineError> {
        let target = &self.decision.target;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let cutoff = now.saturating_sub(reprobe_after).as_millis();
        let provider = target.provider.trim().to_lowercase();
        let host = target.host_key();
        for v in store.fleet_verdicts().await? {
            let fresh = u128::try_from(v.learned_at).is_ok_and(|at| at >= cutoff);
            if !fresh || v.provider != provider || v.host != host || v.model != target.model {
                continue;
            }
            if v.wire == hermes_core::CHAT_WIRE {
                if let Some(carrier) = Carrier::parse(&v.field) {
                    self.conversation
                        .verdicts
                        .record(target, hermes_core::CarrierSet::of([carrier]));
                }
            } else {
                self.conversation
                    .wire_verdicts
                    .record(&v.wire, target, &[&v.field]);
            }
        }
        Ok(self)
    }

    /// Marks the turns an earlier request left out for good, as the store records them
    /// (docs/spec.md §5a 3), as a chat of the session would: the preview leaves them out too.
    pub async fn with_left_out(
        mut self,
        store: &hermes_store::Store,
    ) -> Result<Preview, EngineError> {
        crate::turn::mark_left_out(
            store,
            &mut self.conversation.messages,
            &crate::turn::LeftOutKnown::default(),
        )
        .await?;
        Ok(self)
    }

    /// Builds the parts of the next request, as the driver does, and hands them to `f`.
    fn with_parts<T>(&self, f: impl FnOnce(&RequestParts<'_>) -> T) -> T {
        // Every call paired with a result on the wire, as the driver sends it.
        let history = hermes_core::driver::for_wire(self.wire.wire(), &self.conversation.messages);
        f(&self
            .config
            .parts(&self.decision, &history, &self.conversation))
    }

    /// The next request exactly as the wire encodes it for sending.
    pub fn outgoing(&self) -> Result<Outgoing, EngineError> {
        self.with_parts(|parts| self.wire.wire().encode(parts))
            .map_err(|e| EngineError::Failed(format!("could not encode the request: {e}")))
    }

    /// The exact bytes of the next request's body (`hermes preview --compact`).
    pub fn compact_body(&self) -> Result<Vec<u8>, EngineError> {
        Ok(self.outgoing()?.body)
    }

    /// The next request's body, pretty-printed: the bytes of [`Preview::compact_body`] with
    /// whitespace between tokens and nothing else changed (stored carriers, numbers and escapes
    /// stay as sent).
    pub fn body(&self) -> Result<Vec<u8>, EngineError> {
        Ok(pretty(&self.compact_body()?))
    }

    /// With the account chat would send under: `key` looks up the settled provider's key
    /// variable. The key names the account a prefix-bound Claude model binds replayed thinking
    /// to (docs/spec.md §5a 1), which decides what the body replays; the wire keeps only its
    /// one-way digest for that, and nothing is sent.
    // `..Default::default()` fills in the `bedrock` feature's AWS credentials.
    pub fn with_account(
        mut self,
        engine: &Engine,
        key: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, EngineError> {
        let Some(found) = self
            .settled
            .key_var
            .as_deref()
            .and_then(key)
            .filter(|k| !k.trim().is_empty())
        else {
            return Ok(self);
        };
        let live_base = live_base(&self.settled, None);
        let client = engine.client(hermes_providers::Waits::default())?;
        self.wire = LiveWire::new(
            engine,
            &self.settled,
            &live_base,
            client,
            hermes_providers::Credentials {
                key: Some(found),
                sim: self.settled.sim.is_some(),
                ..Default::default()
            },
        )?;
        Ok(self)
    }

    /// `--explain`: the wire's own lines (its descriptor's
    /// [`explain`](hermes_providers::WireDescriptor::explain)): on chat completions the route
    /// line, then one line per message saying why each carrier is present, padded or absent
    /// and what stored keys stay out.
    pub fn explain(&self) -> Vec<String> {
        self.with_parts(|parts| match self.wire.wire().explain(parts) {
            Some(lines) => Ok(lines),
            None => {
                self.wire
                    .descriptor
                    .explain(&self.wire.target, parts, &self.conversation.messages)
            }
        })
        .unwrap_or_else(|e| vec![format!("could not encode the request: {e}")])
    }
}

/// `json` (valid JSON, as a wire encodes it) re-indented the way `serde_json`'s pretty printer
/// writes (two spaces, `": "`, empty containers as `{}` / `[]`). Only whitespace between
/// tokens changes: every string, number and literal keeps its exact bytes, so a signature, a
/// big integer or an escape reads as it is sent.
pub(crate) fn pretty(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + json.len() / 4);
    // Writing to a `Vec` cannot fail.
    let _ = write_pretty(json, &mut out);
    out
}

/// [`Preview::body`]'s pretty-printing of `json`, written to `out` as it goes (`hermes preview`
/// prints [`Preview::compact_body`] through it, with no second, pretty copy of a large body in
/// memory). Strings, the bulk of a body, are copied whole: the scan jumps from quote to
/// backslash with `memchr`. An error is the writer's own (a closed pipe reads as one).
pub fn write_pretty(json: &[u8], out: &mut impl std::io::Write) -> std::io::Result<()> {
    /// Indentation is written from here, a slice at a time.
    const SPACES: &[u8; 64] = &[b' '; 64];
    let newline = |out: &mut dyn std::io::Write, depth: usize| -> std::io::Result<()> {
        out.write_all(b"\n")?;
        let mut left = depth * 2;
        while left > 0 {
            let n = left.min(SPACES.len());
            out.write_all(&SPACES[..n])?;
            left -= n;
        }
        Ok(())
    };
    let mut depth = 0usize;
    let mut i = 0;
    while i < json.len() {
        let c = json[i];
        match c {
            b'"' => {
                // A string, copied whole (escapes included): the closing quote is the first
                // one not escaped.
                let start = i;
                i += 1;
                loop {
                    match json
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(at) if json[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at;
                            break;
                        }
                        None => {
                            i = json.len();
                            break;
                        }
                    }
                }
                out.write_all(&json[start..(i + 1).min(json.len())])?;
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                let next = json[i + 1..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .map(|p| i + 1 + p);
                if next.is_some_and(|n| json[n] == close) {
                    out.write_all(&[c, close])?;
                    i = next.unwrap_or(i);
                } else {
                    out.write_all(&[c])?;
                    depth += 1;
                    newline(out, depth)?;
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(out, depth)?;
                out.write_all(&[c])?;
            }
            b',' => {
                out.write_all(b",")?;
                newline(out, depth)?;
            }
            b':' => out.write_all(b": ")?,
            c if c.is_ascii_whitespace() => {}
            _ => {
                // A number or literal, copied whole.
                let end = json[i..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b':') || b.is_ascii_whitespace())
                    .map_or(json.len(), |p| i + p);
                out.write_all(&json[i..end])?;
                i = end;
                continue;
            }
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{pretty, write_pretty};
    use proptest::prelude::*;
    use serde_json::Value;

    /// Any JSON value: strings with quotes, backslashes, control characters and any Unicode,
    /// numbers, literals, nested and empty containers.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\\\\"{}\\[\\],: \\n\\t\\u{7f}-\\u{10ffff}]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Pretty-printing the compact bytes of any value gives what serde_json's pretty printer
        /// writes for it, whether into a `Vec` or streamed through a small buffered writer.
        #[test]
        fn pretty_printing_any_value_is_serde_jsons(value in any_json()) {
            let compact = serde_json::to_vec(&value).unwrap();
            let expected = serde_json::to_vec_pretty(&value).unwrap();
            prop_assert_eq!(&pretty(&compact), &expected);
            let mut streamed = std::io::BufWriter::with_capacity(7, Vec::new());
            write_pretty(&compact, &mut streamed).unwrap();
            prop_assert_eq!(&streamed.into_inner().unwrap(), &expected);
        }
    }

    #[test]
    fn pretty_printing_changes_only_whitespace_and_matches_serde_json() {
        let sent = br#"{"a": [1, {"b":"x\"y,:{}"}], "e":{}, "f":[ ], "n":123456789012345678901234567890,"s":"\ud800"}"#;
        let got = String::from_utf8(pretty(sent)).unwrap();
        assert_eq!(
            got,
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"x\\\"y,:{}\"\n    }\n  ],\n  \"e\": {},\n  \"f\": [],\n  \"n\": 123456789012345678901234567890,\n  \"s\": \"\\ud800\"\n}"
        );
        let plain = br#"{"a":[1,{"b":"c"}],"d":{},"e":[true,null,-1.5]}"#;
        let value: serde_json::Value = serde_json::from_slice(plain).unwrap();
        assert_eq!(pretty(plain), serde_json::to_vec_pretty(&value).unwrap());
    }
}
