//! The Converse request body, rendered from the canonical history (docs/spec.md §5): strictly
//! alternating user and assistant turns (consecutive tool results one user turn of `toolResult`
//! blocks), the system prompt with its cache point, the tools, the thinking request of docs/spec.md
//! §3c and each assistant turn's reasoning per the model's replay [`Policy`].
//!
//! The body is written as botocore writes it (module `pyjson`: the separators, escapes and
//! number spellings of `json.dumps`), keys in the order of the service model's members
//! (`botocore/data/bedrock-runtime/2023-09-30/service-2.json`): `messages`, `system`,
//! `inferenceConfig`, `toolConfig`, `additionalModelRequestFields`; `role`, `content`;
//! `toolUseId`, `name`, `input`; `toolUseId`, `content`; `reasoningText {text, signature}`;
//! `maxTokens`, `temperature`; `toolSpec {name, description, inputSchema {json}}`. Inside
//! `additionalModelRequestFields`: `thinking`, then `output_config` or `anthropic_beta`; or
//! `reasoningConfig {type, maxReasoningEffort}`; or `reasoning_effort`. Stored reasoning travels as the exact strings
//! captured; documents (tool inputs and schemas) as `json.loads` reads them.

use std::collections::BTreeSet;

use hermes_core::route::{Effort, ThinkingRequest};
use hermes_core::sampling::{ResponseFormat, Sampling, ToolChoice};
use hermes_core::{Message, RawJson, RequestParts, Role, RouteTarget, ToolCall};

use super::media;
use super::model::{BedrockModel, Policy};
use super::pyjson::{Json, Str, float_repr, write_array, write_str};
use hermes_core::left_out;
use hermes_providers::native::image::{self, Piece};
use hermes_providers::native::json::{self, Turn, push_turn};
use hermes_providers::native::sampling::{Unsupported, check_tool_choice};
use hermes_providers::native::stored;
use hermes_providers::native::tools::ChatTool;
use hermes_wire_anthropic::body::INTERLEAVED_BETA;
use hermes_wire_anthropic::body::{BINDING_BETA, PrefixParts, binding_stamp};
use hermes_wire_anthropic::model as claude;
use hermes_wire_anthropic::signed::carriers::{StoredLiterals, read_literals};
use hermes_wire_anthropic::signed::replay::{self, PrefixDigest};
use sha2::{Digest as _, Sha256};

/// Where a request goes: what the body depends on besides the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The runtime base URL (`https://bedrock-runtime.{region}.amazonaws.com`).
    pub base_url: String,
    /// `inferenceConfig.maxTokens` (config); none leaves the model's default, except that a
    /// thinking budget always sets it above the budget.
    pub max_tokens: Option<u32>,
    /// The account requests go under, as a digest of the credential
    /// ([`hermes_providers::native::account_of`]; never the credential): what a bound Claude model's
    /// reasoning is bound to (docs/spec.md §5a 1). A Bedrock API key names one; SigV4 credentials
    /// do not (temporary ones rotate within the hour, and what Bedrock checks is the AWS account,
    /// which no credential hermes holds names without a call to STS), so `None`.
    pub account: Option<String>,
}

/// What a request leaves out beyond the policy: the answer to an error [`super::BedrockWire`]
/// recovers from once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// History indices whose reasoning blocks are left out (`Invalid signature`).
    pub blocks_of: BTreeSet<usize>,
    /// Leave out every `redactedContent` block (a ValidationException about redacted or
    /// encrypted content).
    pub redacted: bool,
    /// Send this request without the thinking request.
    pub thinking_off: bool,
}

/// What the Converse wire knows of a body beyond [`hermes_providers::native::Encoded`]'s common fields.
#[derive(Clone, Debug, Default)]
pub struct Bound {
    /// The digest of the conversation this request sends (stamped on the reply, as the
    /// Anthropic wire does: Claude's signatures are bound to it).
    pub digest: String,
    /// For each wire message, the history indices merged into it.
    pub sources: Vec<Vec<usize>>,
    /// On a bound Claude model, the prefix binding of the conversation this request sends, as
    /// Converse encodes it ([`Binder`]; [`replay::PREFIX_BINDING_KEY`], stamped on the reply).
    pub binding: Option<String>,
    /// On a bound Claude model, what the binding was made of
    /// ([`hermes_wire_anthropic::body::PREFIX_PARTS_KEY`], stamped on the reply).
    pub prefix_parts: Option<RawJson>,
    /// The stored turns whose reasoning this body leaves out for good, by
    /// [`hermes_core::left_out::carrier_id`] (docs/spec.md §5a 3).
    pub left_out: Vec<String>,
}

/// An encoded body: [`hermes_providers::native::Encoded`] with its refusable fields (`reasoningContent`,
/// `signature`, `redactedContent`) and its `explain` lines (first the operation and path,
/// `POST /model/…/converse`, then the policy, the thinking mapping and each assistant
/// message's reasoning).
pub type Encoded = hermes_providers::native::Encoded<Bound>;

/// The reply is stamped with the digest of the conversation it answers.
impl hermes_providers::native::Stamp for Bound {
    fn stamp(&self) -> Vec<(String, RawJson)> {
        let mut stamp = vec![replay::prefix_stamp(&self.digest)];
        binding_stamp(
            &mut stamp,
            self.binding.as_deref(),
            self.prefix_parts.as_ref(),
        );
        stamp
    }

    fn left_out(&self) -> Vec<String> {
        self.left_out.clone()
    }
}

/// The JSON Pointer a request that sends `drop_block` names in
/// `additionalModelResponseFieldPaths`, so that Converse returns Claude's
/// `input_transformations` (the blocks it dropped) in `additionalModelResponseFields`
/// (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, request member
/// `additionalModelResponseFieldPaths`; `MessageStopEvent.additionalModelResponseFields` when
/// streamed, botocore's `bedrock-runtime` service model).
pub const TRANSFORMATIONS_PATH: &str = "/input_transformations";

/// The prefix binding of Claude's reasoning as Converse sends it (docs/spec.md §5a 1): a digest of
/// the `system` texts (every system or developer message: Converse hoists them all into `system`,
/// so one added mid-conversation changes every step's prefix), the `toolConfig.tools` as
/// written, the account, and then the messages' blocks as written — `reasoningContent` left
/// out, as the Anthropic wire leaves thinking out, and `cachePoint`, which hermes writes only
/// in `system`, never hashed — with a role mark where the role changes (so turns merged or an
/// emptied turn left out digest the same). The Bedrock page on preserved thinking
/// (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-thinking-block-binding.html)
/// names the checked prefix: the system prompt, the tool list and the messages before the
/// block.
#[derive(Clone)]
struct Binder {
    hash: Sha256,
    role: Option<&'static str>,
    scratch: String,
}

impl Binder {
    /// The start of a binding: `system`, `tools` (the written `toolConfig.tools`) and
    /// `account`.
    fn new(system: &[String], tools: &str, account: Option<&str>) -> Self {
        let mut b = Binder {
            hash: Sha256::new(),
            role: None,
            scratch: String::new(),
        };
        b.field("converse", "");
        for text in system {
            b.field("system", text);
        }
        b.field("tools", tools);
        b.field("account", account.unwrap_or_default());
        b
    }

    fn field(&mut self, tag: &str, text: &str) {
        self.hash.update(tag.as_bytes());
        self.hash.update((text.len() as u64).to_le_bytes());
        self.hash.update(text.as_bytes());
    }

    /// Adds a turn's blocks of `role`, reasoning left out.
    fn push(&mut self, role: &'static str, blocks: &[Block<'_>]) {
        for block in blocks.iter().filter(|b| !b.is_reasoning()) {
            if self.role != Some(role) {
                self.field("role", role);
                self.role = Some(role);
            }
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            block.write(&mut scratch);
            self.field("block", &scratch);
            self.scratch = scratch;
        }
    }

    /// The binding so far, as hex (its first 16 bytes, as [`PrefixDigest::hex`]).
    fn hex(&self) -> String {
        hex16(self.hash.clone().finalize().as_slice())
    }
}

/// The first 16 bytes of a digest as hex.
fn hex16(bytes: &[u8]) -> String {
    bytes.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// One part of a Converse binding on its own ([`PrefixParts`]): `tag` and its texts.
fn part_digest(tag: &str, texts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"converse part\0");
    h.update(tag.as_bytes());
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    hex16(h.finalize().as_slice())
}

/// The content blocks of message `index` (a user turn's, or a tool result's `content`): non-empty
/// texts and images, in stored order; other parts are left out, as a text-only message leaves
/// them out.
fn user_blocks(msg: &Message, index: usize) -> Result<Vec<Block<'_>>, EncodeError> {
    let accepted: Vec<&str> = media::FORMATS.iter().map(|(t, _)| *t).collect();
    let pieces = image::message_pieces(msg, index, "Bedrock Converse", &accepted)
        .map_err(EncodeError::Image)?;
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text { text, .. } => {
                if let Ok(t) = serde_json::from_str::<String>(text.get())
                    && !t.is_empty()
                {
                    out.push(Block::Text(Str::Text(t.into())));
                }
            }
            Piece::Image(img) => out.push(Block::Image(
                media::image_block(&img).map_err(|e| EncodeError::Image(e.at(index)))?,
            )),
            Piece::Other(_) => {}
        }
    }
    Ok(out)
}

/// The blocks a user message sends (its text parts, or its images).
fn user_turn<'h>(msg: &'h Message, i: usize) -> Result<Vec<Block<'h>>, EncodeError> {
    Ok(if media::has_images(msg) {
        user_blocks(msg, i)?
    } else {
        text_blocks(msg.content.as_ref())
    })
}

/// The `toolResult` block a tool message sends.
fn tool_result(msg: &Message, i: usize) -> Result<Block<'_>, EncodeError> {
    let content = if media::has_images(msg) {
        user_blocks(msg, i)?
    } else {
        text_blocks(msg.content.as_ref())
    };
    Ok(Block::ToolResult {
        id: msg.tool_call_id.as_deref().unwrap_or_default(),
        content,
        error: msg.tool_error,
    })
}

/// The prefix binding of each assistant message of `history` as this request sends it (`None`
/// for the other messages and for turns not replayed), and that of the whole conversation
/// (docs/spec.md §5a 1): what [`Binder`] reads, before the request decides any reasoning — which it
/// leaves out.
fn bindings_of(
    history: &[Message],
    mut binder: Binder,
) -> Result<(Vec<Option<String>>, String), EncodeError> {
    let mut each = Vec::with_capacity(history.len());
    let mut unused = Vec::new();
    for (i, msg) in history.iter().enumerate() {
        let now = match msg.role {
            Role::System | Role::Developer => None,
            Role::User => {
                binder.push("user", &user_turn(msg, i)?);
                None
            }
            Role::Tool => {
                binder.push("user", &[tool_result(msg, i)?]);
                None
            }
            Role::Assistant if !stored::replayed(msg, i, &mut unused) => None,
            Role::Assistant => {
                let now = binder.hex();
                binder.push("assistant", &assemble(msg, Reasoning::None));
                Some(now)
            }
        };
        each.push(now);
    }
    Ok((each, binder.hex()))
}

/// What a Signed turn's reasoning becomes on a bound model or after a turn an earlier request
/// left out (docs/spec.md §5a 2, 3): decided by [`replay::bound`], as on the Anthropic wire.
#[allow(clippy::too_many_arguments)]
fn bind<'h>(
    msg: &'h Message,
    reasoning: Reasoning<'h>,
    why: String,
    now: Option<&str>,
    parts_now: Option<&PrefixParts>,
    cut: bool,
    unknown: &mut bool,
    carriers: &mut hermes_core::CarrierCounts,
) -> (Reasoning<'h>, String) {
    if !matches!(reasoning, Reasoning::Items(_)) {
        return (reasoning, why);
    }
    match replay::bound(
        msg,
        why,
        now,
        || match (PrefixParts::stored(msg), parts_now) {
            (Some(then), Some(now)) => Some(then.changed(now)),
            _ => None,
        },
        cut,
        unknown,
        carriers,
    ) {
        Ok(why) => (reasoning, why),
        Err(why) => (Reasoning::None, why),
    }
}

pub use hermes_providers::native::EncodeError;

/// The operation path a request for `model` goes to (`/model/{id}/converse` or
/// `/converse-stream`), the model id percent-encoded as one segment.
pub fn operation_path(model: &str, stream: bool) -> String {
    format!(
        "/model/{}/{}",
        hermes_providers::aws::path_segment(model),
        if stream {
            "converse-stream"
        } else {
            "converse"
        }
    )
}

/// One content block of the wire copy; its strings borrowed from the history where they can be
/// (stored literals are written without being decoded, [`Str::Literal`]).
#[derive(Clone, Debug)]
pub(super) enum Block<'h> {
    Text(Str<'h>),
    ToolUse {
        id: &'h str,
        name: &'h str,
        input: Json,
    },
    ToolResult {
        id: &'h str,
        /// The `content` blocks (`{"text"}`, `{"image"}`).
        content: Vec<Block<'h>>,
        /// `status: "error"`: the client marked the result as failed.
        error: bool,
    },
    /// An `image` block (module [`super::media`]).
    Image(Json),
    /// `reasoningContent.reasoningText`, with the stored signature when one is sent.
    Reasoning {
        text: Str<'h>,
        signature: Option<Str<'h>>,
    },
    /// `reasoningContent.redactedContent`: the stored base64 text.
    Redacted(Str<'h>),
}

impl Block<'_> {
    fn is_reasoning(&self) -> bool {
        matches!(self, Block::Reasoning { .. } | Block::Redacted(_))
    }

    /// Writes the block as botocore does, straight onto `out` (no value tree): `{"text": …}`,
    /// `{"toolUse": {"toolUseId", "name", "input"}}`, `{"toolResult": {"toolUseId",
    /// "content"}}`, the image, `{"reasoningContent": {"reasoningText": {"text",
    /// "signature"}}}`, `{"reasoningContent": {"redactedContent": …}}`.
    fn write(&self, out: &mut String) {
        match self {
            Block::Text(text) => {
                out.push_str("{\"text\": ");
                text.write(out);
                out.push('}');
            }
            Block::ToolUse { id, name, input } => {
                out.push_str("{\"toolUse\": {\"toolUseId\": ");
                write_str(out, id);
                out.push_str(", \"name\": ");
                write_str(out, name);
                out.push_str(", \"input\": ");
                input.write(out);
                out.push_str("}}");
            }
            Block::ToolResult { id, content, error } => {
                out.push_str("{\"toolResult\": {\"toolUseId\": ");
                write_str(out, id);
                out.push_str(", \"content\": ");
                write_blocks(out, content);
                if *error {
                    out.push_str(", \"status\": \"error\"");
                }
                out.push_str("}}");
            }
            Block::Image(image) => image.write(out),
            Block::Reasoning { text, signature } => {
                out.push_str("{\"reasoningContent\": {\"reasoningText\": {\"text\": ");
                text.write(out);
                if let Some(signature) = signature {
                    out.push_str(", \"signature\": ");
                    signature.write(out);
                }
                out.push_str("}}}");
            }
            Block::Redacted(data) => {
                out.push_str("{\"reasoningContent\": {\"redactedContent\": ");
                data.write(out);
                out.push_str("}}");
            }
        }
    }
}

/// Writes `blocks` as a JSON array (`[a, b]`).
fn write_blocks(out: &mut String, blocks: &[Block<'_>]) {
    write_array(out, blocks, Block::write);
}

/// The body, begun with its `messages` array and written as the history is read: each turn's
/// blocks go onto it at once, while their stored text is still in cache, the turn left open
/// while the next message merges into it ([`push_turn`]'s rule). Of each turn only its role
/// and sources are kept.
struct Messages {
    /// `{"messages": [` and the blocks written so far.
    text: String,
    /// The wire messages.
    turns: Vec<Turn<()>>,
    /// The refusable fields the blocks written carry.
    refusable: BTreeSet<&'static str>,
}

impl Messages {
    /// An empty array in a body of about `capacity` bytes.
    fn new(capacity: usize) -> Self {
        let mut text = String::with_capacity(capacity);
        text.push_str("{\"messages\": [");
        Messages {
            text,
            turns: Vec::new(),
            refusable: BTreeSet::new(),
        }
    }

    /// Adds `blocks` from the history message `source` as a turn of `role` (merged into the
    /// last one when it has the same role), writing them.
    fn push(&mut self, role: &'static str, blocks: &[Block<'_>], source: usize) {
        for block in blocks {
            match block {
                Block::Reasoning { signature, .. } => {
                    self.refusable.insert("reasoningContent");
                    if signature.is_some() {
                        self.refusable.insert("signature");
                    }
                }
                Block::Redacted(_) => {
                    self.refusable.insert("reasoningContent");
                    self.refusable.insert("redactedContent");
                }
                _ => {}
            }
        }
        let before = self.turns.len();
        push_turn(&mut self.turns, role, Vec::new(), source);
        let merged = self.turns.len() == before;
        if !merged {
            if before > 0 {
                self.text.push_str("]}, ");
            }
            self.text.push_str("{\"role\": ");
            write_str(&mut self.text, role);
            self.text.push_str(", \"content\": [");
        }
        for (i, block) in blocks.iter().enumerate() {
            if merged || i > 0 {
                self.text.push_str(", ");
            }
            block.write(&mut self.text);
        }
    }

    /// Closes the array: the body so far, the turns and the refusable fields.
    fn finish(mut self) -> (String, Vec<Turn<()>>, BTreeSet<&'static str>) {
        if !self.turns.is_empty() {
            self.text.push_str("]}");
        }
        self.text.push(']');
        (self.text, self.turns, self.refusable)
    }
}

/// The text a message left empty by a recovery carries, so the turns still alternate.
pub const PLACEHOLDER: &str = "[reasoning left out]";

/// The thinking request of docs/spec.md §3c for one request.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThinkingPlan {
    /// `additionalModelRequestFields`, in sending order.
    fields: Vec<(&'static str, Json)>,
    /// `inferenceConfig.maxTokens`.
    max_tokens: Option<u32>,
    /// `inferenceConfig.temperature` 1 (budget thinking).
    temperature: bool,
    /// Claude thinking is on (enabled or adaptive): the in-loop rule applies.
    on: bool,
    /// The Claude thinking budget, on budget models.
    budget: Option<u32>,
    /// Nova 2 at high effort: no `maxTokens`, `temperature` or `topP` (docs/spec.md §3c).
    bare: bool,
    /// What was decided.
    explain: String,
}

/// The thinking request for `request` on `model` (docs/spec.md §3c): Claude adaptive or budget
/// thinking, Nova 2's `reasoningConfig`, gpt-oss's `reasoning_effort`; no preference sends
/// nothing; an effort any other model cannot take is an error.
pub(crate) fn thinking_plan(
    request: ThinkingRequest,
    model: &BedrockModel,
    target: &Target,
) -> Result<ThinkingPlan, EncodeError> {
    let mut plan = ThinkingPlan {
        max_tokens: target.max_tokens,
        ..ThinkingPlan::default()
    };
    match request {
        ThinkingRequest::NoPreference => {
            plan.explain = "no thinking preference: no thinking request".into();
        }
        ThinkingRequest::Off => plan.off(model),
        ThinkingRequest::Effort(effort) => match &model.claude {
            Some(claude_model) if claude_model.adaptive() => {
                plan.claude_adaptive(claude_model, effort);
            }
            Some(claude_model) => plan.claude_budget(claude_model, effort, target),
            None if model.is_nova2() => plan.nova2(effort),
            None if model.is_gpt_oss() => plan.gpt_oss(effort),
            None => return Err(effort_refused(effort, model)),
        },
    }
    Ok(plan)
}

impl ThinkingPlan {
    /// `--no-thinking`: Claude budget models are sent `thinking` disabled; an adaptive model
    /// and any other model are sent nothing.
    fn off(&mut self, model: &BedrockModel) {
        match &model.claude {
            Some(claude_model) if !claude_model.adaptive() => {
                self.fields
                    .push(("thinking", Json::object([("type", Json::str("disabled"))])));
                self.explain = "--no-thinking → additionalModelRequestFields.thinking {\"type\": \"disabled\"}".into();
            }
            Some(_) => {
                self.explain =
                    "--no-thinking → no thinking request (adaptive model: off unless asked)".into();
            }
            None => {
                self.explain = format!(
                    "--no-thinking → no reasoning request ({} is not asked to reason)",
                    model.base
                );
            }
        }
    }

    /// `effort` on an adaptive Claude model: adaptive thinking (summarized) and
    /// `output_config.effort`.
    fn claude_adaptive(&mut self, claude_model: &claude::ClaudeModel, effort: Effort) {
        let name = effort.as_str();
        let e = claude_model.effort(effort);
        self.fields.push((
            "thinking",
            Json::object([
                ("type", Json::str("adaptive")),
                ("display", Json::str("summarized")),
            ]),
        ));
        self.fields
            .push(("output_config", Json::object([("effort", Json::str(e))])));
        self.on = true;
        self.explain = format!(
            "--effort {name} → additionalModelRequestFields.thinking adaptive (display summarized), output_config.effort {e}"
        );
    }

    /// `effort` on a budget Claude model: thinking enabled with the effort's budget,
    /// `maxTokens` above it, temperature 1, and the interleaved-thinking beta where the model
    /// needs it.
    fn claude_budget(
        &mut self,
        claude_model: &claude::ClaudeModel,
        effort: Effort,
        target: &Target,
    ) {
        let name = effort.as_str();
        let budget = claude::budget(effort);
        let max = target
            .max_tokens
            .filter(|m| *m > budget)
            .unwrap_or(budget + claude::ABOVE_BUDGET);
        self.fields.push((
            "thinking",
            Json::object([
                ("type", Json::str("enabled")),
                ("budget_tokens", Json::int(u64::from(budget))),
            ]),
        ));
        // botocore's `InferenceConfiguration` has `temperature` (a float, 0–1), and
        // thinking takes no temperature but the default 1 (docs.aws.amazon.com/
        // bedrock/latest/userguide/claude-messages-extended-thinking.html):
        // docs/spec.md §3c sends 1 on budget models.
        self.temperature = true;
        let beta = claude_model.needs_interleaved_beta();
        if beta {
            self.fields.push((
                "anthropic_beta",
                Json::Array(vec![Json::str(INTERLEAVED_BETA)]),
            ));
        }
        self.max_tokens = Some(max);
        self.budget = Some(budget);
        self.on = true;
        self.explain = format!(
            "--effort {name} → additionalModelRequestFields.thinking enabled, budget_tokens {budget}; inferenceConfig.maxTokens {max}, temperature 1.0{}",
            if beta {
                ", anthropic_beta [interleaved-thinking-2025-05-14]"
            } else {
                " (no interleaved-thinking beta: Claude 3)"
            }
        );
    }

    /// `effort` on Nova 2: `reasoningConfig` at the effort's level; at high, no `maxTokens`,
    /// `temperature` or `topP`.
    fn nova2(&mut self, effort: Effort) {
        let name = effort.as_str();
        let level = three_levels(effort);
        self.fields.push((
            "reasoningConfig",
            Json::object([
                ("type", Json::str("enabled")),
                ("maxReasoningEffort", Json::str(level)),
            ]),
        ));
        let high = level == "high";
        if high {
            // At high, Nova 2 takes no temperature, topP or maxTokens (docs/spec.md §3c).
            self.max_tokens = None;
            self.bare = true;
        }
        self.explain = format!(
            "--effort {name} → additionalModelRequestFields.reasoningConfig enabled, maxReasoningEffort {level}{}",
            if high {
                " (maxTokens, temperature and topP left out)"
            } else {
                ""
            }
        );
    }

    /// `effort` on gpt-oss: Chat Completions' `reasoning_effort` at the effort's level.
    fn gpt_oss(&mut self, effort: Effort) {
        // A Converse request carries every Chat Completions field but the mapped ones
        // in additionalModelRequestFields (docs.aws.amazon.com/bedrock/latest/userguide/
        // model-parameters-openai.html, "In a Converse request … Include any other
        // fields in the additionalModelRequestFields object"); gpt-oss's effort is
        // Chat Completions' `reasoning_effort`, `low`, `medium` or `high` (OpenAI's
        // gpt-oss model card: three reasoning levels).
        let name = effort.as_str();
        let level = three_levels(effort);
        self.fields.push(("reasoning_effort", Json::str(level)));
        self.explain =
            format!("--effort {name} → additionalModelRequestFields.reasoning_effort {level}");
    }
}

/// `effort` on a three-level scale (`low`, `medium`, `high`), as Nova 2 and gpt-oss take it.
fn three_levels(effort: Effort) -> &'static str {
    match effort {
        Effort::Minimal | Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High | Effort::XHigh | Effort::Max => "high",
    }
}

/// The error for `effort` on a model hermes requests no thinking from.
fn effort_refused(effort: Effort, model: &BedrockModel) -> EncodeError {
    let name = effort.as_str();
    if model.always_reasons() {
        EncodeError::Thinking(format!(
            "--effort {name} cannot be sent to {}: it always reasons and Bedrock documents no control over how much; drop --effort for this model",
            model.base
        ))
    } else {
        EncodeError::Thinking(format!(
            "--effort {name} cannot be sent to {}: on Bedrock Converse hermes requests thinking only from Claude (additionalModelRequestFields.thinking), Nova 2 (reasoningConfig) and gpt-oss (reasoning_effort) models, the ones whose reasoning control Bedrock documents; drop --effort for this model",
            model.base
        ))
    }
}

/// The sampling parameters in Converse spelling, besides `inferenceConfig` (written in place).
struct SamplingPlan {
    /// `toolConfig.toolChoice`.
    tool_choice: Option<Json>,
    /// `outputConfig.textFormat`.
    format: Option<Json>,
    explain: Vec<String>,
}

/// Maps `sampling` onto Converse as botocore 1.44.8's `bedrock-runtime` model types it
/// (`InferenceConfiguration {maxTokens, temperature, topP, stopSequences}`, `ToolChoice {auto |
/// any | tool {name}}`, `OutputConfig.textFormat {type json_schema, structure.jsonSchema
/// {schema (a JSON string), name}}`; no seed, no end-user id, no parallel-call switch, no
/// "none" choice). Claude's thinking rules hold on Bedrock (docs.aws.amazon.com/bedrock/latest/
/// userguide/claude-messages-extended-thinking.html: temperature only 1, topP 0.95–1, no forced
/// tool choice), as does docs/spec.md §3c's Nova 2 high effort (no maxTokens, temperature or topP):
/// each conflict is an error naming the parameter, never a silent change.
fn sampling_plan(
    sampling: &Sampling,
    plan: &ThinkingPlan,
    model: &BedrockModel,
) -> Result<SamplingPlan, Unsupported> {
    let refuse = Refuse(model);
    refuse_sampling(sampling, plan, &refuse)?;
    let mut explain = Vec::new();
    for (set, line) in [
        (
            sampling.max_tokens.is_some(),
            "max_tokens → inferenceConfig.maxTokens",
        ),
        (
            sampling.temperature.is_some(),
            "temperature → inferenceConfig.temperature",
        ),
        (sampling.top_p.is_some(), "top_p → inferenceConfig.topP"),
        (
            !sampling.stop.is_empty(),
            "stop → inferenceConfig.stopSequences",
        ),
    ] {
        if set {
            explain.push(format!("{line}: sampling"));
        }
    }
    let tool_choice = match &sampling.tool_choice {
        None => None,
        Some(choice) => Some(tool_choice(choice, plan, &refuse)?),
    };
    let format = match &sampling.response_format {
        None => None,
        Some(format) => text_format(format, &refuse, &mut explain)?,
    };
    Ok(SamplingPlan {
        tool_choice,
        format,
        explain,
    })
}

/// How [`sampling_plan`] refuses a parameter on `model`, naming the wire.
struct Refuse<'m>(&'m BedrockModel);

impl Refuse<'_> {
    fn wire(&self) -> String {
        format!("Bedrock Converse ({})", self.0.base)
    }

    /// Converse has no `what` for `parameter`.
    fn none(&self, parameter: &'static str, what: &str) -> Unsupported {
        Unsupported::new(parameter, self.wire(), format!("Converse has no {what}"))
    }

    /// Claude's thinking takes no `parameter` as asked, because `why`.
    fn thinking(&self, parameter: &'static str, why: &str) -> Unsupported {
        Unsupported::new(
            parameter,
            self.wire(),
            format!("with Claude's thinking on, {why}; ask without --effort to set it"),
        )
    }
}

/// The sampling parameters Converse has no field for, and those the thinking `plan` rules out
/// (Nova 2 at high effort; Claude's budget, temperature and topP), in the order checked.
fn refuse_sampling(
    sampling: &Sampling,
    plan: &ThinkingPlan,
    refuse: &Refuse<'_>,
) -> Result<(), Unsupported> {
    if sampling.seed.is_some() {
        return Err(refuse.none("seed", "seed (botocore InferenceConfiguration)"));
    }
    if sampling.top_k.is_some() {
        return Err(refuse.none("top_k", "top_k (botocore InferenceConfiguration)"));
    }
    if sampling.user.is_some() {
        return Err(refuse.none("user", "end-user id"));
    }
    if sampling.parallel_tool_calls.is_some() {
        return Err(refuse.none(
            "parallel_tool_calls",
            "switch for parallel tool calls (botocore ToolChoice: auto, any, tool)",
        ));
    }
    if plan.bare {
        for (set, parameter) in [
            (sampling.max_tokens.is_some(), "max_tokens"),
            (sampling.temperature.is_some(), "temperature"),
            (sampling.top_p.is_some(), "top_p"),
        ] {
            if set {
                return Err(Unsupported::new(
                    parameter,
                    refuse.wire(),
                    "Nova 2 at high reasoning effort takes no maxTokens, temperature or topP (docs/spec.md §3c); lower --effort or leave it unset",
                ));
            }
        }
    }
    if let (Some(max), Some(budget)) = (sampling.max_tokens, plan.budget)
        && max <= budget
    {
        return Err(refuse.thinking(
            "max_tokens",
            &format!("maxTokens must be above the thinking budget {budget}, not {max}"),
        ));
    }
    if plan.on {
        if sampling.temperature.is_some_and(|t| t != 1.0) {
            return Err(refuse.thinking("temperature", "temperature can only be 1"));
        }
        if sampling.top_p.is_some_and(|p| !(0.95..=1.0).contains(&p)) {
            return Err(refuse.thinking("top_p", "topP must be between 0.95 and 1"));
        }
    }
    Ok(())
}

/// `toolConfig.toolChoice` for `choice`: `auto`, `any` or `tool {name}`; no `none`, and with
/// Claude's thinking on no forced call.
fn tool_choice(
    choice: &ToolChoice,
    plan: &ThinkingPlan,
    refuse: &Refuse<'_>,
) -> Result<Json, Unsupported> {
    match choice {
        ToolChoice::None => Err(refuse.none(
            "tool_choice",
            "tool choice none (botocore ToolChoice: auto, any, tool); send no tools instead",
        )),
        ToolChoice::Required | ToolChoice::Function(_) if plan.on => {
            Err(refuse.thinking("tool_choice", "the model cannot be forced to call a tool"))
        }
        ToolChoice::Auto => Ok(Json::object([("auto", Json::object::<&str>([]))])),
        ToolChoice::Required => Ok(Json::object([("any", Json::object::<&str>([]))])),
        ToolChoice::Function(name) => Ok(Json::object([(
            "tool",
            Json::object([("name", Json::str(name.as_str()))]),
        )])),
        other => Err(refuse.none("tool_choice", &format!("tool choice {other:?}"))),
    }
}

/// `outputConfig.textFormat` for `format`, with its `explain` line: a JSON schema as
/// `json_schema` (the schema as a JSON string); `text` is the default and sends nothing;
/// schema-less JSON has no Converse form.
fn text_format(
    format: &ResponseFormat,
    refuse: &Refuse<'_>,
    explain: &mut Vec<String>,
) -> Result<Option<Json>, Unsupported> {
    match format {
        ResponseFormat::Text => {
            explain.push("response_format text: the default, nothing sent".to_owned());
            Ok(None)
        }
        ResponseFormat::JsonSchema { name, schema, .. } => {
            explain.push(format!(
                "response_format json_schema {name} → outputConfig.textFormat"
            ));
            Ok(Some(Json::object([
                ("type", Json::str("json_schema")),
                (
                    "structure",
                    Json::object([(
                        "jsonSchema",
                        Json::object([
                            ("schema", Json::str(schema.get())),
                            ("name", Json::str(name.as_str())),
                        ]),
                    )]),
                ),
            ])))
        }
        ResponseFormat::JsonObject => Err(refuse.none(
            "response_format",
            "schema-less JSON mode (outputConfig.textFormat takes a JSON schema)",
        )),
        other => Err(refuse.none("response_format", &format!("response format {other:?}"))),
    }
}

/// The reasoning an assistant turn sends.
enum Reasoning<'h> {
    /// Nothing.
    None,
    /// One entry per stored Anthropic-shaped item, in stored order (`None`: left out), placed
    /// by the turn's recorded block order.
    Items(Vec<Option<Block<'h>>>),
    /// Readable text with no stored items: leads the turn.
    Leading(Vec<Block<'h>>),
}

/// What one assistant turn's reasoning decision depends on.
struct Ctx<'a> {
    policy: Policy,
    in_loop: bool,
    /// The digest of the conversation before this turn.
    prefix: &'a str,
    keeps_prior: bool,
    refused: &'a [&'a str],
    dropped: bool,
    drop_redacted: bool,
    target: &'a RouteTarget,
}

/// Unsigned `reasoningText` blocks from the turn's stored thinking texts, else its readable
/// `reasoning_content` (or `reasoning`).
fn unsigned<'h>(msg: &'h Message, items: &[StoredLiterals<'h>]) -> Reasoning<'h> {
    let blank = |literal: &str| {
        hermes_core::raw::parse_lenient::<String>(literal).map_or(true, |t| t.trim().is_empty())
    };
    let from_items: Vec<Option<Block<'_>>> = items
        .iter()
        .map(|item| match item {
            StoredLiterals::Thinking { text, .. } if !blank(text) => Some(Block::Reasoning {
                text: Str::Literal(text),
                signature: None,
            }),
            _ => None,
        })
        .collect();
    if from_items.iter().any(Option::is_some) {
        return Reasoning::Items(from_items);
    }
    match msg.replayable_text() {
        Some(text) => Reasoning::Leading(vec![Block::Reasoning {
            text: Str::Literal(text.raw().get()),
            signature: None,
        }]),
        None => Reasoning::None,
    }
}

/// Which reasoning an assistant message sends, and why.
fn assistant_reasoning<'h>(msg: &'h Message, ctx: &Ctx<'_>) -> (Reasoning<'h>, String) {
    let items: Vec<StoredLiterals<'h>> = msg
        .reasoning_details
        .iter()
        .flatten()
        .filter_map(read_literals)
        .collect();
    let own = stored::own(msg, ctx.target);
    if ["reasoningContent", "reasoningText"]
        .iter()
        .any(|f| ctx.refused.contains(f))
    {
        return (
            Reasoning::None,
            "reasoning refused by this target (verdict)".into(),
        );
    }
    if ctx.dropped {
        return (
            Reasoning::None,
            "reasoning left out after an `Invalid signature` answer".into(),
        );
    }
    // The stored reasoning text sent unsigned, and why: `sent`, or none stored.
    let sent_unsigned = |sent: &str| {
        let r = unsigned(msg, &items);
        let why = match r {
            Reasoning::None => "no stored reasoning",
            _ => sent,
        };
        (r, why.to_owned())
    };
    match ctx.policy {
        Policy::Unsigned => {
            sent_unsigned("reasoning text sent unsigned (no signature, no redacted blocks)")
        }
        Policy::Strip if !ctx.in_loop => (
            Reasoning::None,
            "before the tool loop: no reasoning (strip policy)".into(),
        ),
        Policy::Strip if !own => (
            Reasoning::None,
            "reasoning of another model or host: left out (strip policy sends only its own)".into(),
        ),
        Policy::Strip => {
            sent_unsigned("in the tool loop in flight: its own reasoning sent unsigned")
        }
        Policy::Signed => {
            let signed = items.iter().any(|i| match i {
                StoredLiterals::Thinking { signature, .. } => signature.is_some(),
                StoredLiterals::Redacted(_) => true,
            });
            let redacted = items
                .iter()
                .any(|i| matches!(i, StoredLiterals::Redacted(_)));
            if items.is_empty() {
                return (Reasoning::None, "no stored reasoning blocks".into());
            }
            if !own {
                return (
                    Reasoning::None,
                    "reasoning blocks minted by another model or host: left out (provenance)"
                        .into(),
                );
            }
            if let Some(why) =
                replay::verdict_leaves_out(ctx.refused, "redactedContent", signed, redacted)
            {
                return (Reasoning::None, why.into());
            }
            let why = match replay::signed_replay(msg, ctx.in_loop, ctx.keeps_prior, ctx.prefix) {
                Ok(why) => why,
                Err(why) => return (Reasoning::None, why.into()),
            };
            let blocks = items
                .into_iter()
                .map(|item| match item {
                    StoredLiterals::Thinking { text, signature } => Some(Block::Reasoning {
                        text: Str::Literal(text),
                        signature: signature.map(Str::Literal),
                    }),
                    StoredLiterals::Redacted(_) if ctx.drop_redacted => None,
                    StoredLiterals::Redacted(data) => Some(Block::Redacted(Str::Literal(data))),
                })
                .collect();
            let why = if ctx.drop_redacted && redacted {
                format!("{why}, redacted blocks left out for this request")
            } else {
                why.to_owned()
            };
            (Reasoning::Items(blocks), why)
        }
    }
}

/// The texts of a content value (chat `text` parts; Converse refuses blank text blocks).
fn texts(content: Option<&RawJson>) -> Vec<String> {
    json::texts(content, &["text"])
}

/// The text blocks of a content value ([`texts`], each written from its stored literal).
fn text_blocks(content: Option<&RawJson>) -> Vec<Block<'_>> {
    json::text_literals(content, &["text"])
        .into_iter()
        .map(|t| Block::Text(Str::Literal(t.get())))
        .collect()
}

/// A tool call's arguments as the `input` document: the stored JSON text when it is an object,
/// else `{}`.
fn tool_input(call: &ToolCall) -> Json {
    json::object_arguments(call)
        .and_then(|t| Json::parse(&t).ok())
        .unwrap_or(Json::Object(Vec::new()))
}

/// The blocks of an assistant turn, in its captured order.
fn assemble<'h>(msg: &'h Message, reasoning: Reasoning<'h>) -> Vec<Block<'h>> {
    let texts = text_blocks(msg.content.as_ref()).into_iter();
    let calls = msg.tool_calls.iter().flatten().filter_map(|c| {
        Some(Block::ToolUse {
            id: c.id.as_deref()?,
            name: &c.function.name,
            input: tool_input(c),
        })
    });
    let (lead, items) = match reasoning {
        Reasoning::None => (Vec::new(), Vec::new()),
        Reasoning::Leading(lead) => (lead, Vec::new()),
        Reasoning::Items(items) => (Vec::new(), items),
    };
    replay::arrange(msg, lead, items.into_iter(), texts, calls)
}

/// `toolConfig.tools` from the chat-completions tool definitions.
fn tool_specs(tools: &RawJson) -> Result<Vec<Json>, EncodeError> {
    let defs: Vec<ChatTool<'_>> =
        serde_json::from_str(tools.get()).map_err(|e| EncodeError::Tools(e.to_string()))?;
    defs.into_iter()
        .map(|t| {
            let f = t.function;
            let schema = match f.parameters.filter(|p| p.get() != "null") {
                Some(p) => Json::parse(p.get()).map_err(EncodeError::Tools)?,
                None => Json::object([("type", Json::str("object"))]),
            };
            let mut spec = vec![("name", Json::str(f.name))];
            if let Some(d) = f.description.filter(|d| !d.is_empty()) {
                spec.push(("description", Json::str(d)));
            }
            spec.push(("inputSchema", Json::object([("json", schema)])));
            Ok(Json::object([("toolSpec", Json::object(spec))]))
        })
        .collect()
}

/// Builds the body of `parts` for `target`, leaving out what `drops` says: as botocore writes
/// it, the bytes sent (`hermes preview` re-indents them itself). In stages, as the Anthropic
/// wire's: the request-wide decisions ([`plan_request`]), then each message's, written as it is
/// read ([`plan_turns`]), then what those change of the request ([`settle`]), and last the rest
/// of the bytes ([`render`]).
pub fn encode(
    parts: &RequestParts<'_>,
    target: &Target,
    drops: &Drops,
) -> Result<Encoded, EncodeError> {
    let mut request = plan_request(parts, target)?;
    let turns = plan_turns(&mut request, drops)?;
    let settled = settle(&mut request, &turns, drops)?;
    Ok(render(request, turns, settled))
}

/// The request-wide decisions [`encode`] plans the messages against, and the notes and
/// `explain` lines every stage adds to.
struct Request<'p> {
    parts: &'p RequestParts<'p>,
    target: &'p Target,
    /// The model id asked for.
    model_id: &'p str,
    model: BedrockModel,
    policy: Policy,
    /// Whether the model keeps prior turns' thinking.
    keeps_prior: bool,
    /// The fields this target's verdicts refuse.
    refused: Vec<&'p str>,
    /// The thinking request, as planned so far.
    plan: ThinkingPlan,
    /// `toolConfig.tools`, written once: the body's, and part of the prefix binding.
    specs: Vec<Json>,
    /// A bound Claude model (docs/spec.md §5a; the one list, `anthropic::BOUND_FROM`): every
    /// replayed block must be on the prefix, model and account it was made for.
    bound: bool,
    /// On a bound model, the prefix bindings of the conversation this request sends.
    bindings: Option<Bindings>,
    /// The last step whose binding changed, or that an earlier request left out (on any
    /// model): its reasoning and every earlier step's goes without (docs/spec.md §5a 2, 3).
    cut: Option<usize>,
    /// The notes for the caller.
    notes: Vec<String>,
    /// The `explain` lines.
    explain: Vec<String>,
}

/// The first stage of [`encode`]: what holds for the whole request (the model and its replay
/// policy, the verdicts, the thinking request, the tools and the prefix bindings), with the
/// first `explain` lines (the operation, the wire, the thinking plan).
fn plan_request<'p>(
    parts: &'p RequestParts<'p>,
    target: &'p Target,
) -> Result<Request<'p>, EncodeError> {
    let history = parts.history;
    let decision = parts.decision;
    let model_id = decision.target.model.as_str();
    let model = BedrockModel::parse(model_id);
    let policy = model.policy();
    let keeps_prior = model
        .claude
        .as_ref()
        .is_none_or(claude::ClaudeModel::keeps_prior_thinking);
    let refused: Vec<&str> = parts
        .wire_verdicts
        .refused_for(super::WIRE_ID, &decision.target);
    let plan = thinking_plan(parts.thinking, &model, target)?;
    let explain = vec![
        format!("POST {}", operation_path(model_id, parts.stream)),
        format!(
            "bedrock converse wire: {} — model {} — replay policy {}",
            target.base_url,
            model.base,
            policy.describe()
        ),
        plan.explain.clone(),
    ];
    let specs = match parts.tools {
        Some(tools) => tool_specs(tools)?,
        None => Vec::new(),
    };
    let bound = policy == Policy::Signed
        && model
            .claude
            .as_ref()
            .is_some_and(claude::ClaudeModel::binds_prefix);
    let bindings = match bound {
        true => Some(bindings_now(history, &specs, target.account.as_deref())?),
        false => None,
    };
    let each = bindings.as_ref().map_or(&[][..], |b| &b.each[..]);
    let cut = replay::last_changed(history, each).max(replay::last_left_out(history));
    Ok(Request {
        parts,
        target,
        model_id,
        model,
        policy,
        keeps_prior,
        refused,
        plan,
        specs,
        bound,
        bindings,
        cut,
        notes: Vec::new(),
        explain,
    })
}

/// The prefix bindings of a conversation as a request to a bound model sends it (docs/spec.md
/// §5a 1).
struct Bindings {
    /// Each message's prefix binding now ([`bindings_of`]).
    each: Vec<Option<String>>,
    /// The binding of the whole conversation (stamped on the reply).
    whole: String,
    /// What the binding is made of (stamped on the reply).
    parts: PrefixParts,
}

/// The prefix bindings of `history` ([`bindings_of`]) and what they are made of: the system
/// texts, the written `specs` and the `account`.
fn bindings_now(
    history: &[Message],
    specs: &[Json],
    account: Option<&str>,
) -> Result<Bindings, EncodeError> {
    let system: Vec<String> = history
        .iter()
        .filter(|m| matches!(m.role, Role::System | Role::Developer))
        .flat_map(|m| texts(m.content.as_ref()))
        .collect();
    let mut tools = String::new();
    if !specs.is_empty() {
        Json::Array(specs.to_vec()).write(&mut tools);
    }
    let (each, whole) = bindings_of(history, Binder::new(&system, &tools, account))?;
    let system: Vec<&str> = system.iter().map(String::as_str).collect();
    let parts = PrefixParts {
        system: part_digest("system", &system),
        tools: part_digest("tools", &[tools.as_str()]),
        account: part_digest("account", &[account.unwrap_or_default()]),
    };
    Ok(Bindings { each, whole, parts })
}

/// Each message's decisions, the second stage of [`encode`]: the system texts and the
/// `messages` array (written as planned), and what planning them found.
struct Turns {
    /// The `system` texts (every system or developer message's: Converse hoists them all).
    system: Vec<String>,
    /// The `messages` array, written.
    wire: Messages,
    /// The digest of the conversation sent (stamped on the reply).
    digest: PrefixDigest,
    /// For the latest assistant turn: did its blocks start with reasoning?
    latest_starts_with_reasoning: Option<bool>,
    /// The carrier ids of the turns whose reasoning is left out for good (§5a 3).
    gone: Vec<String>,
    /// Whether reasoning is replayed to a bound model.
    replayed_bound: bool,
    /// Whether some of it has no recorded prefix (it goes with `drop_block`, §5a 4).
    unknown_prefix: bool,
    /// The carrier outcomes.
    carriers: hermes_core::CarrierCounts,
}

/// The second stage of [`encode`]: every message of the history into `system` or the
/// `messages` array, each decision in `request.explain`.
fn plan_turns(request: &mut Request<'_>, drops: &Drops) -> Result<Turns, EncodeError> {
    let history = request.parts.history;
    let loop_start = replay::loop_start(history);
    let last_assistant = history.iter().rposition(|m| m.role == Role::Assistant);
    let mut turns = Turns::new(history);
    for (i, msg) in history.iter().enumerate() {
        let prefix = turns.digest.step(msg);
        match msg.role {
            Role::System | Role::Developer => {
                if !turns.wire.turns.is_empty() {
                    request.explain.push(format!(
                        "message {i}: a mid-conversation system message: Converse has no in-place form, its text joins `system`"
                    ));
                }
                turns.system.extend(texts(msg.content.as_ref()))
            }
            Role::User => {
                let blocks = user_turn(msg, i)?;
                if !blocks.is_empty() {
                    turns.wire.push("user", &blocks, i);
                }
            }
            Role::Tool => {
                let block = tool_result(msg, i)?;
                turns.wire.push("user", &[block], i);
            }
            Role::Assistant => {
                if !stored::replayed(msg, i, &mut request.explain) {
                    continue;
                }
                let step = Step {
                    i,
                    prefix: &prefix,
                    in_loop: i >= loop_start,
                    latest: Some(i) == last_assistant,
                };
                if let Some(blocks) = turns.assistant(request, msg, &step, drops) {
                    turns.wire.push("assistant", &blocks, i);
                }
            }
        }
    }
    Ok(turns)
}

/// Where an assistant message stands in the history, for [`Turns::assistant`].
struct Step<'a> {
    /// Its index in the history.
    i: usize,
    /// The digest of the conversation before it.
    prefix: &'a str,
    /// Inside the tool loop.
    in_loop: bool,
    /// The latest assistant message.
    latest: bool,
}

impl Turns {
    /// No message planned yet: an empty `messages` array in a body sized from what its
    /// messages copy from `history`.
    fn new(history: &[Message]) -> Self {
        let size: usize = history
            .iter()
            .map(|m| {
                let details = m.reasoning_details.iter().flatten();
                let calls = m.tool_calls.iter().flatten();
                128 + m.content.as_ref().map_or(0, |c| c.get().len())
                    + details.map(|d| d.raw().get().len()).sum::<usize>()
                    + calls
                        .map(|c| c.function.arguments.as_ref().map_or(0, |a| a.get().len()) + 128)
                        .sum::<usize>()
            })
            .sum();
        Turns {
            system: Vec::new(),
            wire: Messages::new(1024 + size),
            digest: PrefixDigest::new(),
            latest_starts_with_reasoning: None,
            gone: Vec::new(),
            replayed_bound: false,
            unknown_prefix: false,
            carriers: hermes_core::CarrierCounts::default(),
        }
    }

    /// The blocks of the replayed assistant message `msg` at `step`, with the reasoning
    /// [`Turns::reasoning`] decides and its `explain` line; `None` when it has nothing to send.
    /// One emptied by this request's drops sends [`PLACEHOLDER`], so the turns still alternate.
    fn assistant<'h>(
        &mut self,
        request: &mut Request<'_>,
        msg: &'h Message,
        step: &Step<'_>,
        drops: &Drops,
    ) -> Option<Vec<Block<'h>>> {
        let i = step.i;
        let (reasoning, why) = self.reasoning(request, msg, step, drops);
        let had_reasoning = !matches!(reasoning, Reasoning::None);
        request.explain.push(format!("message {i}: {why}"));
        let mut blocks = assemble(msg, reasoning);
        if step.latest {
            self.latest_starts_with_reasoning =
                Some(blocks.first().is_some_and(Block::is_reasoning));
        }
        if blocks.is_empty() {
            if had_reasoning && drops.redacted {
                // Emptied by this request's drops: a placeholder keeps the turns alternating.
                blocks.push(Block::Text(Str::Text(PLACEHOLDER.into())));
                request.explain.push(format!(
                    "message {i}: emptied by the drops, sent as {PLACEHOLDER:?}"
                ));
            } else {
                request
                    .explain
                    .push(format!("message {i}: left out (no content to send)"));
                return None;
            }
        }
        Some(blocks)
    }

    /// The reasoning the assistant message `msg` at `step` sends, and why: the replay policy's
    /// decision ([`assistant_reasoning`]), bound on a bound model or at the cut ([`bind`]),
    /// with what it leaves out for good (docs/spec.md §5a 3) and the carrier outcome.
    fn reasoning<'h>(
        &mut self,
        request: &Request<'_>,
        msg: &'h Message,
        step: &Step<'_>,
        drops: &Drops,
    ) -> (Reasoning<'h>, String) {
        let (i, decision) = (step.i, request.parts.decision);
        let ctx = Ctx {
            policy: request.policy,
            in_loop: step.in_loop,
            prefix: step.prefix,
            keeps_prior: request.keeps_prior,
            refused: &request.refused,
            dropped: drops.blocks_of.contains(&i),
            drop_redacted: drops.redacted,
            target: &decision.target,
        };
        let (reasoning, why) = assistant_reasoning(msg, &ctx);
        let bindings = request.bindings.as_ref();
        let now = bindings
            .and_then(|b| b.each.get(i))
            .and_then(Option::as_deref);
        let at_cut = request.cut.is_some_and(|c| i <= c);
        let (reasoning, why) = match request.policy == Policy::Signed && (now.is_some() || at_cut) {
            true => bind(
                msg,
                reasoning,
                why,
                now,
                bindings.map(|b| &b.parts),
                at_cut,
                &mut self.unknown_prefix,
                &mut self.carriers,
            ),
            false => (reasoning, why),
        };
        let has_items = msg
            .reasoning_details
            .iter()
            .flatten()
            .any(|d| read_literals(d).is_some());
        let own = stored::own(msg, &decision.target);
        // A bound model remembers a block a request left out, whatever the reason: the turn's
        // own blocks, not sent now, are left out for good (docs/spec.md §5a 3).
        if request.bound
            && has_items
            && matches!(reasoning, Reasoning::None)
            && own
            && !left_out::is_left_out(msg)
            && let Some(id) = left_out::carrier_id(msg)
        {
            self.gone.push(id);
        }
        if request.bound
            && matches!(&reasoning, Reasoning::Items(v) if v.iter().any(Option::is_some))
        {
            self.replayed_bound = true;
        }
        if matches!(reasoning, Reasoning::None) && msg.origin.is_some() && !own && has_items {
            self.carriers.dropped_provenance += 1;
        }
        (reasoning, why)
    }
}

/// What the third stage of [`encode`] settles once the turns are planned.
struct Settled {
    /// Whether the body asks for Claude's `input_transformations` ([`TRANSFORMATIONS_PATH`]).
    response_paths: bool,
    /// The sampling fields.
    sampling: SamplingPlan,
}

/// The third stage of [`encode`]: the thinking request left out when the latest turn would
/// draw an error, `block_binding` when reasoning is replayed to a bound model, and the
/// sampling fields.
fn settle(request: &mut Request<'_>, turns: &Turns, drops: &Drops) -> Result<Settled, EncodeError> {
    let parts = request.parts;
    // Inside the loop, a latest turn without a reasoning block this model may receive would
    // draw "Expected `thinking` or `redacted_thinking`… found `tool_use`": this request goes
    // without the thinking request.
    if let Some(why) = replay::thinking_must_go(
        parts.history,
        request.plan.on,
        drops.thinking_off,
        turns.latest_starts_with_reasoning,
        request.model_id,
    ) {
        request.notes.push(format!(
            "thinking is not requested for this request: {why} (the stored history is unchanged)"
        ));
        request
            .explain
            .push(format!("thinking request left out for this request: {why}"));
        request.plan = ThinkingPlan {
            max_tokens: request.target.max_tokens,
            ..ThinkingPlan::default()
        };
    }
    let response_paths = turns.replayed_bound
        && block_binding(
            &mut request.plan,
            turns.unknown_prefix,
            &mut request.explain,
        );
    check_tool_choice(parts.sampling, parts.tools, "Bedrock Converse")?;
    let mut sampling = sampling_plan(parts.sampling, &request.plan, &request.model)?;
    request.explain.append(&mut sampling.explain);
    Ok(Settled {
        response_paths,
        sampling,
    })
}

/// §5a 4: a request that replays blocks to a bound model lets Claude drop one it finds bound
/// elsewhere instead of refusing the request (`thinking.block_binding`, with its beta in
/// `anthropic_beta`, how Converse passes Anthropic betas: docs/spec.md §5), and asks for the
/// `input_transformations` that list what it dropped ([`TRANSFORMATIONS_PATH`]): whether it
/// does (without a thinking request there is no `block_binding` to set).
fn block_binding(plan: &mut ThinkingPlan, unknown_prefix: bool, explain: &mut Vec<String>) -> bool {
    let Some((_, Json::Object(thinking))) = plan.fields.iter_mut().find(|(k, _)| *k == "thinking")
    else {
        explain.push(
            "reasoning replayed to a bound model without a thinking request: no block_binding to set"
                .to_owned(),
        );
        return false;
    };
    thinking.push((
        "block_binding".to_owned(),
        Json::object([("prefix_mismatch_behavior", Json::str("drop_block"))]),
    ));
    match plan.fields.iter_mut().find(|(k, _)| *k == "anthropic_beta") {
        Some((_, Json::Array(betas))) => betas.push(Json::str(BINDING_BETA)),
        _ => plan
            .fields
            .push(("anthropic_beta", Json::Array(vec![Json::str(BINDING_BETA)]))),
    }
    explain.push(format!(
        "additionalModelRequestFields.thinking.block_binding drop_block ({BINDING_BETA}): a bound model drops a block it finds bound elsewhere{}; additionalModelResponseFieldPaths [{TRANSFORMATIONS_PATH:?}] reads back what it dropped",
        if unknown_prefix {
            " (some replayed blocks have no recorded prefix)"
        } else {
            ""
        }
    ));
    true
}

/// The last stage of [`encode`]: the body's members after `messages` (already written), in
/// the service model's order, and what the reply is stamped with.
fn render(request: Request<'_>, turns: Turns, settled: Settled) -> Encoded {
    let parts = request.parts;
    let Turns {
        system,
        wire,
        digest,
        mut gone,
        carriers,
        ..
    } = turns;
    let Settled {
        response_paths,
        sampling,
    } = settled;
    let plan = request.plan;
    let mut body: Vec<(&str, Json)> = Vec::new();
    if !system.is_empty() {
        let mut blocks: Vec<Json> = system
            .into_iter()
            .map(|t| Json::object([("text", Json::str(t))]))
            .collect();
        if request.model.caches_prompts() {
            blocks.push(Json::object([(
                "cachePoint",
                Json::object([("type", Json::str("default"))]),
            )]));
        }
        body.push(("system", Json::Array(blocks)));
    }
    let inference = inference_config(parts.sampling, &plan);
    if !inference.is_empty() {
        body.push(("inferenceConfig", Json::object(inference)));
    }
    // `check_tool_choice` refused a choice without tools.
    if !request.specs.is_empty() {
        let mut config = vec![("tools", Json::Array(request.specs))];
        config.extend(sampling.tool_choice.map(|c| ("toolChoice", c)));
        body.push(("toolConfig", Json::object(config)));
    }
    if !plan.fields.is_empty() {
        body.push(("additionalModelRequestFields", Json::object(plan.fields)));
    }
    if response_paths {
        body.push((
            "additionalModelResponseFieldPaths",
            Json::Array(vec![Json::str(TRANSFORMATIONS_PATH)]),
        ));
    }
    if let Some(format) = sampling.format {
        body.push(("outputConfig", Json::object([("textFormat", format)])));
    }
    let (mut text, wire, refusable) = wire.finish();
    for (key, value) in &body {
        text.push_str(", ");
        write_str(&mut text, key);
        text.push_str(": ");
        value.write(&mut text);
    }
    text.push('}');
    gone.sort_unstable();
    gone.dedup();
    Encoded {
        body: text.into_bytes(),
        refusable: refusable.into_iter().collect(),
        messages: wire.len(),
        notes: request.notes,
        explain: request.explain,
        carriers,
        wire: Bound {
            digest: digest.hex(),
            sources: json::sources(&wire),
            prefix_parts: request
                .bindings
                .as_ref()
                .and_then(|b| RawJson::from_serialize(&b.parts).ok()),
            binding: request.bindings.map(|b| b.whole),
            left_out: gone,
        },
    }
}

/// `inferenceConfig`'s members: `maxTokens` (asked, else the thinking plan's), `temperature`
/// (asked, else 1 with budget thinking), `topP`, `stopSequences`.
fn inference_config(sampling: &Sampling, plan: &ThinkingPlan) -> Vec<(&'static str, Json)> {
    let mut inference = Vec::new();
    if let Some(max) = sampling.max_tokens.or(plan.max_tokens) {
        inference.push(("maxTokens", Json::int(u64::from(max))));
    }
    match sampling.temperature {
        Some(t) => inference.push(("temperature", Json::Number(float_repr(t)))),
        None if plan.temperature => {
            inference.push(("temperature", Json::Number("1.0".into())));
        }
        None => {}
    }
    if let Some(p) = sampling.top_p {
        inference.push(("topP", Json::Number(float_repr(p))));
    }
    if !sampling.stop.is_empty() {
        inference.push((
            "stopSequences",
            Json::Array(sampling.stop.iter().map(Json::str).collect()),
        ));
    }
    inference
}
