//! The Responses door, OpenAI Responses in and out (`POST /v1/responses`,
//! `POST /v1/responses/compact`): its handlers ([`responses_turn`], [`responses_compact`]), the
//! request's input items turned into the engine's messages, and the `response` object and its SSE events built from what the
//! engine returns.
//!
//! Input items are read by the Responses codec (`hermes_engine::providers::responses::inbound`, hermes-wire-responses, which
//! the conformance suite runs too) through a typed allow-list: `message` (`input_text`,
//! `input_image`, `output_text` parts), `function_call`, `function_call_output`, `reasoning`,
//! `compaction` and `compaction_trigger`; any other item type is a 400 naming it. A run of
//! `reasoning`, assistant `message` and `function_call` items is one assistant turn, as the
//! engine stores it, so the store finds it at its place (docs/spec.md §10) and re-attaches what its
//! upstream minted. A `reasoning` item is never taken on
//! the client's word: its `encrypted_content` is a reference the gateway sealed (a keyed MAC
//! over the tenant, the partition and the item's summary, [`crate::sign`]); one that verifies
//! gives its turn the summary as readable reasoning where the store holds nothing better, any
//! other (altered, another tenant's, an upstream's own blob) is left out. The upstream's own
//! carriers (Claude's signatures, OpenAI's encrypted items, Gemini's thought signatures) never
//! leave the gateway: a reply's reasoning reaches the client as a `reasoning` item with its
//! readable summary and a sealed reference.

use axum::Extension;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use hermes_core::{
    Effort, FinishReason, Message, RawJson, ResponseFormat, Role, Sampling, TextCarrier,
    ThinkingRequest, ToolChoice, Usage,
};
use hermes_engine::Completion;
use hermes_engine::providers::responses::inbound::{self, Inbound};
use serde_json::{Map, Value, json};

use crate::body::{ClientTurn, Fields, arguments_text, readable_thinking, text_of};
use crate::error::ApiError;
use crate::gate::{self, Gated};
use crate::sign::Signer;
use crate::turn::{
    asked, complete, gated_handler, off_reactor, session_of, stream_reply, turn_idempotency,
    with_session,
};
use crate::{Door, Inner, access, body, metrics, model, policy, sign};

use hermes_engine::providers::responses::inbound::{CompactionItem, SealedItem};

/// What [`crate::sign::Signer`] seals a reasoning item's `encrypted_content` with starts with
/// this: an item that does not is an upstream's own (or forged) and is left out.
const SEALED: &str = crate::sign::PREFIX;

/// The `include` value that asks for reasoning items' `encrypted_content`.
const INCLUDE_ENCRYPTED: &str = "reasoning.encrypted_content";

gated_handler!(responses_turn => respond, IntoResponse::into_response);

/// `GET /v1/responses`: Codex opens its Responses WebSocket here first; 426 sends it to HTTP at
/// once.
pub(crate) async fn responses_socket(headers: HeaderMap) -> Response {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let mut error = if upgrade {
        ApiError::upgrade_required(
            "this gateway serves the Responses API over HTTP only: POST /v1/responses",
        )
    } else {
        ApiError::method_not_allowed("/v1/responses does not take GET")
    };
    error.param = None;
    error.into_response()
}

/// A Responses-door request made ready for the engine: its turn, what it resolved to and the
/// session it continues, the signer of its tenant and partition, and its metrics.
struct Prepared {
    turn: body::ClientTurn,
    choice: hermes_engine::Choice,
    session: Option<String>,
    signer: sign::Signer,
    recorder: metrics::Turn,
    /// What the response repeats of the request.
    echo: Echo,
    /// Whether the input ended with a `compaction_trigger` item.
    trigger: bool,
}

/// What `POST /v1/responses` and `POST /v1/responses/compact` both do with a parsed request:
/// the model resolved and the tenant's policy checked, the client's sealed reasoning items
/// vouched for, its compaction items opened, and the conversation a `previous_response_id`
/// names put before its input.
async fn prepare(
    inner: &Inner,
    tenant: &str,
    headers: &HeaderMap,
    mut parsed: ResponsesRequest,
) -> Result<Prepared, ApiError> {
    if let Some(references) = parsed.referenced.take() {
        let items = referenced(inner, tenant, &references.at).await?;
        parsed.resolve(references, items)?;
    }
    let ResponsesRequest {
        mut turn,
        echo,
        sealed,
        previous_response_id,
        compactions,
        trigger,
        referenced: _,
    } = parsed;
    if model::check(&turn.model).is_ok() {
        access::model(&turn.model);
    }
    let choice = inner.resolve(Door::Responses, &turn.model)?;
    let mut session = session_of(headers)?;
    let server_tools = policy::messages_server_tools(&turn.passthrough);
    let asked = asked(
        Door::Responses,
        &choice,
        &turn,
        session.as_deref(),
        server_tools,
    );
    inner.config.policy.check(tenant, &asked)?;
    tracing::info!(tenant = %tenant, model = %turn.model, session = session.as_deref(), stream = turn.stream, "responses");
    let signer = sign::Signer::new(
        inner.signing_key().await?,
        tenant.to_owned(),
        turn.partition.clone(),
    );
    let vouched = vouch(&mut turn.messages, &sealed, &signer);
    if vouched > 0 {
        tracing::debug!(vouched, "gateway-sealed reasoning items verified");
    }
    if let Some(continued) = checkpoints(inner, &mut turn.messages, &compactions, &signer).await? {
        session = session.or(Some(continued));
    }
    if let Some(id) = &previous_response_id {
        let continued = previous(inner, tenant, id, &mut turn.messages, echo.instructed()).await?;
        session = session.or(Some(continued));
    }
    Ok(Prepared {
        turn,
        choice,
        session,
        signer,
        recorder: inner.turn(tenant),
        echo,
        trigger,
    })
}

/// `POST /v1/responses`: one turn of an OpenAI Responses client, whole or streamed.
async fn respond(inner: &Inner, headers: &HeaderMap, gated: Gated) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), Extension(admitted), Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, parse).await?;
    let Prepared {
        turn,
        choice,
        session,
        signer,
        recorder,
        echo,
        trigger,
    } = prepare(inner, &tenant, headers, parsed).await?;
    let keeper = echo.stored().then(|| Keeper {
        store: inner.store().clone(),
        tenant: tenant.clone(),
    });
    // Read (and a malformed one refused) before either path: a compaction too.
    let idempotency = turn_idempotency(headers, "responses", session.as_deref(), &turn, &body)?;
    if trigger {
        // Codex's remote compaction: the answer is exactly one compaction item.
        let shape = Shape::new(turn.model.clone(), echo, signer.clone());
        let stream = turn.stream;
        let (item, completion) =
            compaction(inner, turn, &tenant, choice, session, &signer, &recorder).await?;
        if stream {
            let events = whole_stream(&shape, vec![item], &completion);
            let events = futures_util::stream::iter(
                events.into_iter().map(Ok::<_, std::convert::Infallible>),
            );
            return Ok(with_session(
                axum::response::sse::Sse::new(events).into_response(),
                &completion.session,
            ));
        }
        let mut body = shape.object("completed", vec![item], Some(&completion.usage), None, None);
        body["hermes_session"] = json!(completion.session);
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    let shape = Shape::new(turn.model.clone(), echo, signer);
    let stream = turn.stream;
    let request = turn
        .request(tenant, choice, session)
        .idempotency(Some(idempotency));
    if !stream {
        let completion = complete(inner, request, &recorder).await?;
        if let Some(keeper) = &keeper {
            keeper.keep(&shape.id, &completion.session).await;
        }
        let mut body = shape.object(
            "completed",
            shape.output(&completion.messages, 0),
            Some(&completion.usage),
            completion.finish.as_ref(),
            None,
        );
        body["hermes_session"] = json!(completion.session);
        return Ok(with_session(
            (StatusCode::OK, axum::Json(body)).into_response(),
            &completion.session,
        ));
    }
    stream_reply(
        inner,
        request,
        ResponsesStream::new(shape, keeper),
        recorder,
        admitted,
    )
    .await
}

/// Puts before `messages` (after the request's own `instructions`, the first message when
/// `instructed`) the conversation as `tenant`'s response `id` left it — OpenAI's
/// `previous_response_id`: the stored messages up to that response, its leading system message
/// left out (a response's instructions are not carried over). Returns the session it went to,
/// which the turn continues (or branches from, when that conversation moved on since). An id
/// the tenant did not keep is OpenAI's 400.
async fn previous(
    inner: &Inner,
    tenant: &str,
    id: &str,
    messages: &mut Vec<hermes_core::Message>,
    instructed: bool,
) -> Result<String, ApiError> {
    let store = inner.store();
    let kept = store
        .kept_response(tenant, id)
        .await
        .map_err(store_failed)?
        .ok_or_else(|| previous_not_found(id))?;
    let stored = store.messages(&kept.session).await.map_err(store_failed)?;
    if stored.len() < kept.upto || kept.upto == 0 {
        // Its conversation is gone (retention) or was never whole.
        return Err(previous_not_found(id));
    }
    let earlier = stored
        .into_iter()
        .take(kept.upto)
        .skip_while(|m| m.role == Role::System);
    let rest = messages.split_off(usize::from(instructed).min(messages.len()));
    messages.extend(earlier);
    messages.extend(rest);
    Ok(kept.session)
}

/// The items `item_reference`s name (`refs`: place and id), in order: output items of
/// responses `tenant` made with `store` on, rebuilt from the store as the response gave them
/// (a reasoning item without `encrypted_content`: the engine puts the stored reasoning back
/// where the turn stands). An id that names no such item is OpenAI's 400.
async fn referenced(
    inner: &Inner,
    tenant: &str,
    refs: &[(usize, String)],
) -> Result<Vec<Value>, ApiError> {
    let store = inner.store();
    let mut outputs: std::collections::HashMap<String, Vec<Value>> = Default::default();
    let mut items = Vec::with_capacity(refs.len());
    for (_, id) in refs {
        let not_found = || ApiError::invalid("input", format!("Item with id '{id}' not found."));
        let response = response_of_item(id).ok_or_else(not_found)?;
        if !outputs.contains_key(&response) {
            let mut output = Vec::new();
            if let Some(kept) = store
                .kept_response(tenant, &response)
                .await
                .map_err(store_failed)?
            {
                let stored = store.messages(&kept.session).await.map_err(store_failed)?;
                // A response's reply is the message its turn stored last.
                if let Some(reply) = kept
                    .upto
                    .checked_sub(1)
                    .and_then(|last| stored.get(last))
                    .filter(|m| m.role == Role::Assistant)
                {
                    output = output_items(&response, std::slice::from_ref(reply), 0, None);
                }
            }
            outputs.insert(response.clone(), output);
        }
        let item = outputs[&response]
            .iter()
            .find(|item| item["id"] == id.as_str())
            .cloned()
            .ok_or_else(not_found)?;
        items.push(item);
    }
    Ok(items)
}

/// What a `compaction` item's sealed reference names: the stored summary's session and place.
fn checkpoint_payload(session: &str, index: usize) -> String {
    format!("{session}\n{index}")
}

/// Puts in place of each `compaction` item a client sent back the checkpoint it names, its
/// seal opened for this tenant and partition. hermes' own checkpoint is its stored summary, in
/// the item's place. The provider's own (its compaction block or item, docs/spec.md §7) stands for
/// everything before it: the history becomes the client's instructions, that checkpoint as
/// stored (the engine re-attaches its carrier at its place in its session, docs/spec.md §10), then
/// what the client sent after it; the session it is stored in is returned, for the turn to
/// continue. One that does not open, or whose checkpoint is no longer stored, is a 400 naming
/// the item.
async fn checkpoints(
    inner: &Inner,
    messages: &mut Vec<hermes_core::Message>,
    items: &[CompactionItem],
    signer: &sign::Signer,
) -> Result<Option<String>, ApiError> {
    // From the last: a provider checkpoint takes the place of everything before it.
    for item in items.iter().rev() {
        let refused = |why: &str| ApiError::invalid(&item.at, format!("`{}`: {why}", item.at));
        let Some(payload) = signer.open(&item.seal) else {
            return Err(refused(
                "this compaction item was not made by this gateway for this tenant and partition \
                 (or it was altered)",
            ));
        };
        let (session, index) = payload
            .split_once('\n')
            .and_then(|(s, i)| Some((s.to_owned(), i.parse::<usize>().ok()?)))
            .ok_or_else(|| refused("its reference does not name a checkpoint"))?;
        let store = inner.store();
        let stored = store.messages(&session).await.map_err(store_failed)?;
        let gone = || refused("the conversation it summarised is no longer stored (retention)");
        let checkpoint = stored
            .get(index)
            .filter(|m| m.role == hermes_core::Role::Assistant)
            .ok_or_else(gone)?;
        if hermes_core::checkpoint::native_compaction(checkpoint).is_some() {
            let lead = messages
                .iter()
                .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                .count();
            messages.splice(lead..=item.message, [checkpoint.clone()]);
            return Ok(Some(session));
        }
        let summary = checkpoint
            .content
            .as_ref()
            .map(text_of)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(gone)?;
        messages[item.message] = hermes_core::checkpoint::own_checkpoint(&summary);
    }
    Ok(None)
}

/// Compacts `turn`'s history for the Responses door through the engine
/// ([`hermes_engine::Request::compact`]: the history's carriers re-attached, the provider's own
/// compaction where the upstream has one — OpenAI's `POST /responses/compact`, Claude's
/// on-demand compaction — else hermes' summary, stored in a session of its own), and answers
/// a `compaction` item whose `encrypted_content` is a sealed reference to that stored
/// checkpoint. The upstream's block or item never reaches the client.
async fn compaction(
    inner: &Inner,
    mut turn: body::ClientTurn,
    tenant: &str,
    choice: hermes_engine::Choice,
    session: Option<String>,
    signer: &sign::Signer,
    recorder: &metrics::Turn,
) -> Result<(Value, Completion), ApiError> {
    turn.stream = false;
    let request = turn
        .request(tenant.to_owned(), choice, session)
        .compact(true);
    let completion = complete(inner, request, recorder).await?;
    let store = inner.store();
    let stored = store
        .messages(&completion.session)
        .await
        .map_err(store_failed)?;
    let index = stored
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .filter(|&i| {
            hermes_core::checkpoint::native_compaction(&stored[i]).is_some()
                || stored[i]
                    .content
                    .as_ref()
                    .is_some_and(|c| !text_of(c).trim().is_empty())
        })
        .ok_or_else(|| ApiError::bad_gateway("the model wrote no summary"))?;
    let sealed = signer.seal(&checkpoint_payload(&completion.session, index));
    let item = compaction_item(&format!("cmp_{}", uuid::Uuid::now_v7().simple()), &sealed);
    Ok((item, completion))
}

gated_handler!(responses_compact => compact_request, IntoResponse::into_response);

/// `POST /v1/responses/compact`: `{model, input, instructions, …}` answered with a
/// `response.compaction` object: the input's user messages, then one compaction item.
async fn compact_request(
    inner: &Inner,
    headers: &HeaderMap,
    gated: Gated,
) -> Result<Response, ApiError> {
    let (Extension(gate::Tenant(tenant)), _, Extension(gate::Read(body))) = gated;
    let parsed = off_reactor(&body, parse).await?;
    let prepared = prepare(inner, &tenant, headers, parsed).await?;
    let mut output = user_items(&prepared.turn.messages);
    let (item, completion) = compaction(
        inner,
        prepared.turn,
        &tenant,
        prepared.choice,
        prepared.session,
        &prepared.signer,
        &prepared.recorder,
    )
    .await?;
    output.push(item);
    let body = json!({
        "id": format!("resp_{}", uuid::Uuid::now_v7().simple()),
        "object": "response.compaction",
        "created_at": now_secs(),
        "output": output,
        "usage": usage_object(&completion.usage),
        "hermes_session": completion.session,
    });
    Ok(with_session(
        (StatusCode::OK, axum::Json(body)).into_response(),
        &completion.session,
    ))
}

/// A store error as the door answers it.
fn store_failed(e: hermes_engine::store::StoreError) -> ApiError {
    ApiError::from_engine(&hermes_engine::EngineError::from(e))
}

/// OpenAI's answer to a `previous_response_id` the tenant did not keep (made with `store`
/// off, expired, another tenant's, or never made).
fn previous_not_found(id: &str) -> ApiError {
    ApiError {
        code: Some("previous_response_not_found".into()),
        ..ApiError::invalid(
            "previous_response_id",
            format!("Previous response with id '{id}' not found."),
        )
    }
}

/// A parsed `POST /v1/responses` body.
struct ResponsesRequest {
    /// The turn.
    pub(crate) turn: ClientTurn,
    /// What the `response` object repeats of the request.
    pub(crate) echo: Echo,
    /// The reasoning items the client sent back, by the message they belong to.
    pub(crate) sealed: Vec<SealedItem>,
    /// `previous_response_id`, when sent.
    pub(crate) previous_response_id: Option<String>,
    /// The `compaction` items sent back: each one's placeholder message and seal.
    pub(crate) compactions: Vec<CompactionItem>,
    /// Whether the input ends with a `compaction_trigger` item: the answer is one compaction
    /// item.
    pub(crate) trigger: bool,
    /// The input's `item_reference`s, when it has any: the history is read once they are
    /// resolved ([`ResponsesRequest::resolve`]).
    pub(crate) referenced: Option<References>,
}

/// What the `response` object repeats of its request (OpenAI's clients read these back).
#[derive(Clone, Default)]
struct Echo {
    instructions: Option<Value>,
    max_output_tokens: Option<u32>,
    metadata: Option<Value>,
    parallel_tool_calls: Option<bool>,
    reasoning: Option<Value>,
    store: Option<bool>,
    temperature: Option<f64>,
    text: Option<Value>,
    tool_choice: Option<Value>,
    tools: Option<Value>,
    top_p: Option<f64>,
    user: Option<String>,
    prompt_cache_key: Option<String>,
    /// Whether reasoning items carry their sealed `encrypted_content`.
    pub(crate) include_encrypted: bool,
    previous_response_id: Option<String>,
}

impl Echo {
    /// Whether the request gave `instructions` (its first message, then).
    fn instructed(&self) -> bool {
        self.instructions.is_some()
    }

    /// Whether the response is kept by id (`store`, on unless the request turns it off).
    fn stored(&self) -> bool {
        self.store != Some(false)
    }
}

/// Parses a request body.
fn parse(body: &[u8]) -> Result<ResponsesRequest, ApiError> {
    let f = Fields::parse(body)?;
    let model: String = f.required("model", "a string")?;
    let instructions: Option<String> = f.get("instructions", "a string")?;
    let input: inbound::Input = f.required("input", "a string or an array of input items")?;
    let references = match &input {
        inbound::Input::Items(items) => references(items)?,
        inbound::Input::Text(_) => Vec::new(),
    };
    // With `item_reference`s the history is read once the door has the items they name
    // ([`ResponsesRequest::resolve`]).
    let (read, referenced) = match references.is_empty() {
        true => (read_history(instructions.as_deref(), &input)?, None),
        false => (
            Inbound::default(),
            Some(References {
                instructions: instructions.clone(),
                input,
                at: references,
            }),
        ),
    };
    let Inbound {
        messages,
        sealed,
        compactions,
        trigger,
    } = read;
    let stream = f.get::<bool>("stream", "a boolean")?.unwrap_or(false);
    let tool_values: Option<Vec<Value>> = f.get("tools", "an array of tools")?;
    let (tools, builtin) = match &tool_values {
        Some(list) if !list.is_empty() => function_tools(list)?,
        _ => (None, Vec::new()),
    };
    let mut passthrough = hermes_core::Passthrough::new();
    passthrough.dialect = hermes_core::Dialect::OpenAiResponses;
    passthrough.server_tools = builtin;
    let reasoning: Option<ReasoningObject> = f.get("reasoning", "an object {effort, summary}")?;
    let thinking = match reasoning.as_ref().and_then(|r| r.effort.as_deref()) {
        None => ThinkingRequest::NoPreference,
        Some("none") => ThinkingRequest::Off,
        Some(e) => ThinkingRequest::Effort(Effort::parse(e).ok_or_else(|| {
            ApiError::invalid(
                "reasoning.effort",
                format!("unknown effort `{e}` (none, minimal, low, medium, high, xhigh, max)"),
            )
        })?),
    };
    let mut sampling = Sampling::new();
    sampling.max_tokens = f.get("max_output_tokens", "a positive integer")?;
    sampling.temperature = f.get("temperature", "a number")?;
    sampling.top_p = f.get("top_p", "a number")?;
    sampling.parallel_tool_calls = f.get("parallel_tool_calls", "a boolean")?;
    let tool_choice_value: Option<Value> = f.get("tool_choice", "a string or an object")?;
    sampling.tool_choice = tool_choice_value.as_ref().map(tool_choice).transpose()?;
    if tools.is_none() {
        // Without tools (Codex's compaction request sends `"tools": []` with its usual
        // `tool_choice: "auto"` and `parallel_tool_calls`), neither means anything; a wire
        // would refuse them alone. `required` or a named function stays, for its 400.
        if matches!(
            sampling.tool_choice,
            Some(ToolChoice::Auto | ToolChoice::None)
        ) {
            sampling.tool_choice = None;
        }
        sampling.parallel_tool_calls = None;
    }
    let text: Option<Value> = f.get("text", "an object {format}")?;
    sampling.response_format = text
        .as_ref()
        .and_then(|t| t.get("format"))
        .map(text_format)
        .transpose()?;
    let user: Option<String> = f.get("user", "a string")?;
    let prompt_cache_key: Option<String> = f.get("prompt_cache_key", "a string")?;
    sampling.user = user.clone();
    let include: Vec<String> = f.get("include", "an array of strings")?.unwrap_or_default();
    let previous_response_id: Option<String> = f.get("previous_response_id", "a string")?;
    let echo = Echo {
        instructions: instructions.map(Value::String),
        max_output_tokens: sampling.max_tokens,
        metadata: f.get("metadata", "an object of strings")?,
        parallel_tool_calls: sampling.parallel_tool_calls,
        reasoning: f.get("reasoning", "an object")?,
        store: f.get("store", "a boolean")?,
        temperature: sampling.temperature,
        text,
        tool_choice: tool_choice_value,
        tools: tool_values.map(Value::Array),
        top_p: sampling.top_p,
        user: user.clone(),
        prompt_cache_key: prompt_cache_key.clone(),
        include_encrypted: include.iter().any(|i| i == INCLUDE_ENCRYPTED),
        previous_response_id: previous_response_id.clone(),
    };
    Ok(ResponsesRequest {
        turn: ClientTurn {
            model,
            messages,
            stream,
            tools,
            thinking,
            // The client's partition (docs/spec.md §10): `user`, else the conversation's
            // `prompt_cache_key` (Codex sends its conversation id there).
            partition: user.or(prompt_cache_key),
            sampling,
            passthrough,
        },
        echo,
        sealed,
        previous_response_id,
        compactions,
        trigger,
        referenced,
    })
}

/// `instructions` and `input` as the engine's history, and what stands beside it.
fn read_history(instructions: Option<&str>, input: &inbound::Input) -> Result<Inbound, ApiError> {
    inbound::history(instructions, input).map_err(|e| ApiError::invalid(&e.at, e.message))
}

/// The place and id of each `item_reference` of `items` (OpenAI's `ItemReference`: `type`
/// `item_reference`, or no `type` and no `role`, with an `id`).
fn references(items: &[Value]) -> Result<Vec<(usize, String)>, ApiError> {
    let mut found = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str);
        let reference = kind == Some("item_reference")
            || (kind.is_none() && item.get("role").is_none() && item.get("id").is_some());
        if !reference {
            continue;
        }
        let id = item.get("id").and_then(Value::as_str).ok_or_else(|| {
            ApiError::invalid(
                &format!("input[{i}].id"),
                format!("`input[{i}].id` is required: the id of the item it names"),
            )
        })?;
        found.push((i, id.to_owned()));
    }
    Ok(found)
}

/// A request's input while its `item_reference`s are unresolved.
struct References {
    instructions: Option<String>,
    input: inbound::Input,
    /// Each reference's place in `input` and the id it names.
    pub(crate) at: Vec<(usize, String)>,
}

impl ResponsesRequest {
    /// Reads the history with each `item_reference` replaced by the item it names (`items`,
    /// in the order of [`References::at`]).
    fn resolve(&mut self, references: References, items: Vec<Value>) -> Result<(), ApiError> {
        let References {
            instructions,
            mut input,
            at,
        } = references;
        if let inbound::Input::Items(list) = &mut input {
            for ((i, _), item) in at.into_iter().zip(items) {
                list[i] = item;
            }
        }
        let Inbound {
            messages,
            sealed,
            compactions,
            trigger,
        } = read_history(instructions.as_deref(), &input)?;
        self.turn.messages = messages;
        self.sealed = sealed;
        self.compactions = compactions;
        self.trigger = trigger;
        Ok(())
    }
}

#[derive(serde::Deserialize)]
struct ReasoningObject {
    effort: Option<String>,
}

/// The Responses door's tools: its function tools as chat function definitions (none: `None`),
/// and each built-in tool (`web_search`, `file_search`, `code_interpreter`, …: any other
/// `type`) exactly as written. Built-in tools run only where OpenAI's Responses API is the
/// upstream and the tenant's policy allows their type (`allow_server_tools`); elsewhere the
/// request is refused naming the tool before anything is sent.
fn function_tools(tools: &[Value]) -> Result<(Option<RawJson>, Vec<RawJson>), ApiError> {
    let mut out = Vec::with_capacity(tools.len());
    let mut builtin = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = tool
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ApiError::invalid(&at, format!("`{at}.name` is required")))?;
                let mut function = Map::new();
                function.insert("name".into(), json!(name));
                for key in ["description", "parameters", "strict"] {
                    if let Some(v) = tool.get(key).filter(|v| !v.is_null()) {
                        function.insert(key.into(), v.clone());
                    }
                }
                out.push(json!({"type": "function", "function": function}));
            }
            Some(_) => builtin.push(
                RawJson::from_serialize(tool).map_err(|e| ApiError::invalid(&at, e.to_string()))?,
            ),
            None => {
                return Err(ApiError::invalid(&at, format!("`{at}.type` is required")));
            }
        }
    }
    let functions = if out.is_empty() {
        None
    } else {
        Some(RawJson::from_serialize(&out).map_err(|e| ApiError::invalid("tools", e.to_string()))?)
    };
    Ok((functions, builtin))
}

fn tool_choice(v: &Value) -> Result<ToolChoice, ApiError> {
    crate::body::tool_choice(
        v,
        |o| {
            o.get("type")
                .filter(|t| *t == "function")
                .and(o.get("name"))
        },
        "{\"type\":\"function\",\"name\":…}",
    )
}

/// `text.format` as the engine's response format (the schema's `name`, `schema` and `strict`
/// beside its `type`).
fn text_format(v: &Value) -> Result<ResponseFormat, ApiError> {
    crate::body::response_format(
        v.get("type").and_then(Value::as_str),
        Some(v),
        "text.format",
    )
}

/// Gives each assistant turn the summary of the reasoning items the client sent with it, when
/// their seal verifies for `signer` (same key, tenant, partition and summary); every other
/// item is left out. Returns how many verified.
fn vouch(messages: &mut [Message], sealed: &[SealedItem], signer: &Signer) -> usize {
    let mut verified = 0;
    let mut texts: Vec<(usize, String)> = Vec::new();
    for item in sealed {
        if item.seal.starts_with(SEALED) && signer.verifies(&item.summary, &item.seal) {
            verified += 1;
            if !item.summary.trim().is_empty() {
                texts.push((item.message, item.summary.clone()));
            }
        }
    }
    for (index, message) in messages.iter_mut().enumerate() {
        if message.role != Role::Assistant || message.reasoning_content.is_some() {
            continue;
        }
        let mine: Vec<&str> = texts
            .iter()
            .filter(|(i, _)| *i == index)
            .map(|(_, t)| t.as_str())
            .collect();
        if !mine.is_empty() {
            message.reasoning_content = Some(TextCarrier::new(&mine.join("\n\n")));
        }
    }
    verified
}

/// One response's identity and what it repeats of its request.
#[derive(Clone)]
struct Shape {
    pub(crate) id: String,
    pub(crate) created_at: u64,
    pub(crate) model: String,
    pub(crate) echo: Echo,
    pub(crate) signer: Signer,
}

impl Shape {
    /// A new response (a fresh `resp_…` id, created now) answering as `model`.
    fn new(model: String, echo: Echo, signer: Signer) -> Self {
        Shape {
            id: format!("resp_{}", uuid::Uuid::now_v7().simple()),
            created_at: now_secs(),
            model,
            echo,
            signer,
        }
    }

    /// An item id of this response: `prefix` and the item's place.
    fn item_id(&self, prefix: &str, index: usize) -> String {
        item_id(&self.id, prefix, index)
    }

    /// The `response` object with `output`, in `status`.
    fn object(
        &self,
        status: &str,
        output: Vec<Value>,
        usage: Option<&Usage>,
        finish: Option<&FinishReason>,
        error: Option<Value>,
    ) -> Value {
        let e = &self.echo;
        let incomplete = matches!(finish, Some(FinishReason::Length));
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": if incomplete && status == "completed" { "incomplete" } else { status },
            "background": false,
            "error": error,
            "incomplete_details": if incomplete { json!({"reason": "max_output_tokens"}) } else { Value::Null },
            "instructions": e.instructions,
            "max_output_tokens": e.max_output_tokens,
            "metadata": e.metadata.clone().unwrap_or_else(|| json!({})),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": e.parallel_tool_calls.unwrap_or(true),
            "previous_response_id": e.previous_response_id,
            "prompt_cache_key": e.prompt_cache_key,
            "reasoning": e.reasoning.clone().unwrap_or_else(|| json!({"effort": null, "summary": null})),
            "store": e.store.unwrap_or(true),
            "temperature": e.temperature.unwrap_or(1.0),
            "text": e.text.clone().unwrap_or_else(|| json!({"format": {"type": "text"}})),
            "tool_choice": e.tool_choice.clone().unwrap_or_else(|| json!("auto")),
            "tools": e.tools.clone().unwrap_or_else(|| json!([])),
            "top_p": e.top_p.unwrap_or(1.0),
            "truncation": "disabled",
            "usage": usage.map(usage_object),
            "user": e.user,
        })
    }

    /// A reasoning item holding `summary`, sealed when the client asked for
    /// `encrypted_content`.
    fn reasoning_item(&self, id: &str, summary: &str) -> Value {
        reasoning_item(id, summary, self.sealing())
    }

    /// The signer of reasoning items' `encrypted_content`, when the request asked for it.
    fn sealing(&self) -> Option<&Signer> {
        self.echo.include_encrypted.then_some(&self.signer)
    }

    /// The output items of `messages` (each assistant reply: its reasoning, its text, its
    /// calls), numbered from `first`.
    fn output(&self, messages: &[Message], first: usize) -> Vec<Value> {
        output_items(&self.id, messages, first, self.sealing())
    }
}

/// The id of the item at `index` of response `response`: `prefix` (`rs`, `msg`, `fc`), the
/// response id's tail, the place.
fn item_id(response: &str, prefix: &str, index: usize) -> String {
    let tail = response.strip_prefix("resp_").unwrap_or(response);
    format!("{prefix}_{tail}{index:02}")
}

/// The response whose output item `id` is ([`item_id`]; a response id's tail is a UUID's 32
/// hex digits), or `None` when `id` is not one of ours.
fn response_of_item(id: &str) -> Option<String> {
    let (_, rest) = id.split_once('_')?;
    let tail = rest.get(..32)?;
    (tail.bytes().all(|b| b.is_ascii_hexdigit()) && rest.len() > 32).then(|| format!("resp_{tail}"))
}

/// A `reasoning` item: its readable summary, and with `seal` its `encrypted_content` (the
/// signer's mint over the summary).
fn reasoning_item(id: &str, summary: &str, seal: Option<&Signer>) -> Value {
    let parts = if summary.is_empty() {
        json!([])
    } else {
        json!([{"type": "summary_text", "text": summary}])
    };
    json!({
        "type": "reasoning",
        "id": id,
        "summary": parts,
        "encrypted_content": match seal {
            Some(signer) => Value::String(signer.mint(summary)),
            None => Value::Null,
        },
    })
}

/// The output items response `response` gave for `messages` (each assistant reply: its
/// reasoning, its text, its calls), numbered from `first`; reasoning items sealed by `seal`.
fn output_items(
    response: &str,
    messages: &[Message],
    first: usize,
    seal: Option<&Signer>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for reply in messages.iter().filter(|m| m.role == Role::Assistant) {
        if let Some(thinking) = readable_thinking(reply).filter(|t| !t.trim().is_empty()) {
            let id = item_id(response, "rs", first + out.len());
            out.push(reasoning_item(&id, &thinking, seal));
        }
        if let Some(text) = reply
            .content
            .as_ref()
            .map(text_of)
            .filter(|t| !t.is_empty())
        {
            let id = item_id(response, "msg", first + out.len());
            out.push(message_item(&id, &text, "completed"));
        }
        for call in reply.tool_calls.iter().flatten() {
            let id = item_id(response, "fc", first + out.len());
            out.push(call_item(
                &id,
                call.id.as_deref().unwrap_or_default(),
                &call.function.name,
                &call
                    .function
                    .arguments
                    .as_ref()
                    .map_or_else(|| "{}".to_owned(), arguments_text),
                "completed",
            ));
        }
    }
    out
}

/// A `compaction` output item holding the sealed reference `sealed`.
fn compaction_item(id: &str, sealed: &str) -> Value {
    json!({"type": "compaction", "id": id, "encrypted_content": sealed})
}

/// The user messages of `messages` as input items (what `POST /responses/compact` returns
/// before its compaction item): text parts as `input_text`, images as `input_image`.
fn user_items(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.role == Role::User && !m.content.as_ref().is_some_and(|c| text_of(c).starts_with(hermes_core::checkpoint::SUMMARY_MARKER)))
        .map(|m| {
            let parts: Vec<Value> = match m.content.as_ref().map(RawJson::to_value) {
                Some(Value::String(text)) => vec![json!({"type": "input_text", "text": text})],
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                        Some("text") => Some(json!({"type": "input_text", "text": p.get("text")})),
                        Some("image_url") => Some(json!({"type": "input_image",
                            "image_url": p.pointer("/image_url/url"),
                            "detail": p.pointer("/image_url/detail").cloned().unwrap_or(json!("auto"))})),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            json!({"type": "message", "role": "user", "content": parts})
        })
        .collect()
}

/// The stream of a response whose output is ready whole (a compaction item): created,
/// in progress, each item added and done, completed.
fn whole_stream(
    shape: &Shape,
    output: Vec<Value>,
    completion: &hermes_engine::Completion,
) -> Vec<SseEvent> {
    let mut stream = ResponsesStream::new(shape.clone(), None);
    let mut out = crate::sse::StreamDoor::opening(&mut stream);
    for item in output {
        stream.whole_item(item, &mut out);
    }
    let mut response = shape.object(
        "completed",
        stream.done.clone(),
        Some(&completion.usage),
        None,
        None,
    );
    response["hermes_session"] = json!(completion.session);
    out.push(stream.event("response.completed", json!({"response": response})));
    out
}

/// Seconds since the Unix epoch (a response's `created_at`).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": status,
        "role": "assistant",
        "content": if text.is_empty() && status != "completed" {
            json!([])
        } else {
            json!([{"type": "output_text", "text": text, "annotations": [], "logprobs": []}])
        },
    })
}

fn call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    })
}

/// OpenAI's Responses `usage` object: `input_tokens` with the cached share, `output_tokens`
/// with the reasoning share.
fn usage_object(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cache_read, "cache_write_tokens": usage.cache_write},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    })
}

/// The item a stream has open.
enum Open {
    Reasoning {
        id: String,
        text: String,
    },
    Text {
        id: String,
        text: String,
    },
    Call {
        index: usize,
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// The Responses door's stream: `response.created` and `response.in_progress`, then per item
/// `response.output_item.added` before its deltas (`response.reasoning_summary_text.delta`,
/// `response.output_text.delta`, `response.function_call_arguments.delta`) and
/// `response.output_item.done` with the whole item once it ends (a reasoning item's seal is
/// made then, over its whole summary); after [`hermes_engine::Event::Done`] (every step
/// stored) `response.completed` with the whole response and its usage. A failure is
/// `response.failed`.
struct ResponsesStream {
    shape: Shape,
    sequence: u64,
    open: Option<Open>,
    /// The items sent whole so far.
    done: Vec<Value>,
    /// Keeps the response by id once its turn is stored (`store` on).
    keep: Option<Keeper>,
}

/// What keeps a finished response by id: the store and the tenant.
struct Keeper {
    pub(crate) store: hermes_engine::store::Store,
    pub(crate) tenant: String,
}

impl Keeper {
    /// Keeps response `id` as the conversation `session` holds now, for [`KEPT_FOR`]; a
    /// failure is logged (the turn itself is stored: only the id will not be found).
    async fn keep(&self, id: &str, session: &str) {
        let kept = match self.store.messages(session).await {
            Ok(messages) => {
                self.store
                    .keep_response(&self.tenant, id, session, messages.len(), KEPT_FOR)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = kept {
            tracing::warn!(error = %e, response = id, "keeping the response by id failed");
        }
    }
}

/// How long a response made with `store` on can be named as `previous_response_id` (OpenAI
/// keeps stored responses 30 days).
const KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

impl ResponsesStream {
    /// The stream of the response `shape` names, kept by id by `keep` once stored.
    fn new(shape: Shape, keep: Option<Keeper>) -> Self {
        ResponsesStream {
            shape,
            sequence: 0,
            open: None,
            done: Vec::new(),
            keep,
        }
    }

    fn event(&mut self, name: &str, mut data: Value) -> SseEvent {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        SseEvent::default().event(name).data(data.to_string())
    }

    /// The place of the next item.
    fn next_index(&self) -> usize {
        self.done.len()
    }

    /// An item that is ready whole: `response.output_item.added` and `.done` at once, and the
    /// item kept for `response.completed`.
    fn whole_item(&mut self, item: Value, out: &mut Vec<SseEvent>) {
        let index = self.next_index();
        out.push(self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        out.push(self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        self.done.push(item);
    }

    /// A delta of the reply's function call `call` (`named`: its id and name, on its first
    /// delta): the call's item opened first when another one (or none) is open, then
    /// `arguments` added to it and sent.
    fn call_delta(
        &mut self,
        call: usize,
        (id, name): (Option<String>, Option<String>),
        arguments: &str,
        out: &mut Vec<SseEvent>,
    ) {
        let same = matches!(&self.open, Some(Open::Call { index, .. }) if *index == call);
        if !same {
            let item = self.shape.item_id("fc", self.next_index());
            self.open(
                Open::Call {
                    index: call,
                    id: item,
                    call_id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    arguments: String::new(),
                },
                out,
            );
        }
        let index = self.next_index();
        if let Some(Open::Call {
            id, arguments: all, ..
        }) = &mut self.open
            && !arguments.is_empty()
        {
            all.push_str(arguments);
            let id = id.clone();
            out.push(self.event(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": arguments}),
            ));
        }
    }

    /// A delta of the reasoning item's summary (`reasoning`) or of the message's text: the item
    /// opened first when another one (or none) is open, then the text added to it and sent.
    fn delta(&mut self, reasoning: bool, text: &str, out: &mut Vec<SseEvent>) {
        let open = match &self.open {
            Some(Open::Reasoning { .. }) => reasoning,
            Some(Open::Text { .. }) => !reasoning,
            _ => false,
        };
        if !open {
            let at = self.next_index();
            let text = String::new();
            let item = if reasoning {
                Open::Reasoning {
                    id: self.shape.item_id("rs", at),
                    text,
                }
            } else {
                Open::Text {
                    id: self.shape.item_id("msg", at),
                    text,
                }
            };
            self.open(item, out);
        }
        let index = self.next_index();
        if let Some(Open::Reasoning { id, text: all } | Open::Text { id, text: all }) =
            &mut self.open
        {
            all.push_str(text);
            let id = id.clone();
            let event = if reasoning {
                self.event(
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": text}),
                )
            } else {
                self.event(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": index, "content_index": 0,
                           "delta": text, "logprobs": []}),
                )
            };
            out.push(event);
        }
    }

    /// Sends the open item whole.
    fn close(&mut self, out: &mut Vec<SseEvent>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let index = self.next_index();
        let item = match open {
            Open::Reasoning { id, text } => {
                out.push(self.event(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text}),
                ));
                out.push(self.event(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": text}}),
                ));
                self.shape.reasoning_item(&id, &text)
            }
            Open::Text { id, text } => {
                let part =
                    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []});
                out.push(self.event(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                ));
                out.push(self.event(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                ));
                message_item(&id, &text, "completed")
            }
            Open::Call {
                id,
                call_id,
                name,
                arguments,
                ..
            } => {
                out.push(self.event(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "name": name, "arguments": arguments}),
                ));
                call_item(&id, &call_id, &name, &arguments, "completed")
            }
        };
        out.push(self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        self.done.push(item);
    }

    /// Opens an item (closing the one open), announcing it with `output_item.added`.
    fn open(&mut self, open: Open, out: &mut Vec<SseEvent>) {
        self.close(out);
        let index = self.next_index();
        let item = match &open {
            Open::Reasoning { id, .. } => json!({"type": "reasoning", "id": id, "summary": []}),
            Open::Text { id, .. } => message_item(id, "", "in_progress"),
            Open::Call {
                id, call_id, name, ..
            } => call_item(id, call_id, name, "", "in_progress"),
        };
        out.push(self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        match &open {
            Open::Reasoning { id, .. } => out.push(self.event(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": 0,
                       "part": {"type": "summary_text", "text": ""}}),
            )),
            Open::Text { id, .. } => out.push(self.event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
            )),
            Open::Call { .. } => {}
        }
        self.open = Some(open);
    }
}

impl crate::sse::StreamDoor for ResponsesStream {
    fn finishing(
        &mut self,
        completion: &hermes_engine::Completion,
    ) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> {
        let keeper = self.keep.take()?;
        let (id, session) = (self.shape.id.clone(), completion.session.clone());
        Some(Box::pin(async move { keeper.keep(&id, &session).await }))
    }

    fn opening(&mut self) -> Vec<SseEvent> {
        let response = self
            .shape
            .object("in_progress", Vec::new(), None, None, None);
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    fn on_event(&mut self, ev: hermes_engine::Event) -> (Vec<SseEvent>, bool) {
        use hermes_core::driver::DriverEvent;
        let mut out = Vec::new();
        match ev {
            hermes_engine::Event::Driver(DriverEvent::Delta { reasoning, text }) => {
                self.delta(reasoning, &text, &mut out);
            }
            hermes_engine::Event::Driver(DriverEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            }) => self.call_delta(index, (id, name), &arguments, &mut out),
            hermes_engine::Event::Done(completion) => {
                self.close(&mut out);
                if self.done.is_empty() {
                    // Nothing streamed (a reply that came whole): its items now, each whole.
                    for item in self.shape.output(&completion.messages, 0) {
                        self.whole_item(item, &mut out);
                    }
                }
                let mut response = self.shape.object(
                    "completed",
                    self.done.clone(),
                    Some(&completion.usage),
                    completion.finish.as_ref(),
                    None,
                );
                response["hermes_session"] = json!(completion.session);
                let name = if response["status"] == "incomplete" {
                    "response.incomplete"
                } else {
                    "response.completed"
                };
                out.push(self.event(name, json!({"response": response})));
                return (out, true);
            }
            _ => {}
        }
        (out, false)
    }

    fn failure(&self, error: &ApiError) -> SseEvent {
        let body = error.body();
        let detail = &body["error"];
        let response = self.shape.object(
            "failed",
            self.done.clone(),
            None,
            None,
            Some(json!({
                "code": detail.get("code").cloned().filter(|c| !c.is_null()).unwrap_or_else(|| json!("server_error")),
                "message": detail.get("message").cloned().unwrap_or_default(),
            })),
        );
        let data = json!({"type": "response.failed", "sequence_number": self.sequence, "response": response});
        SseEvent::default()
            .event("response.failed")
            .data(data.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, response_of_item};

    #[test]
    fn item_references_are_read_typed_or_not_and_resolved_later() {
        let parsed = parse(
            br#"{"model":"m","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"a"},{"id":"b"}]}"#,
        )
        .unwrap();
        let references = parsed.referenced.expect("two references");
        assert_eq!(references.at, [(1, "a".to_owned()), (2, "b".to_owned())]);
        assert!(
            parsed.turn.messages.is_empty(),
            "read once they are resolved"
        );
        let id = "msg_0192f0e4c1a97b3e8c1d2e3f4a5b6c7d01";
        assert_eq!(
            response_of_item(id).as_deref(),
            Some("resp_0192f0e4c1a97b3e8c1d2e3f4a5b6c7d")
        );
        assert_eq!(response_of_item("msg_short01"), None);
        assert_eq!(response_of_item("x"), None);
    }

    #[test]
    fn unknown_items_and_untyped_tools_are_refused_by_name() {
        let e = parse(br#"{"model":"m","input":[{"type":"item_search","id":"x"}]}"#)
            .err()
            .unwrap();
        assert!(e.body().to_string().contains("item_search"), "{}", e.body());
        let e = parse(br#"{"model":"m","input":[{"type":"item_reference"}]}"#)
            .err()
            .unwrap();
        assert!(e.body().to_string().contains("input[0].id"), "{}", e.body());
        let e = parse(br#"{"model":"m","input":"hi","tools":[{"name":"f"}]}"#)
            .err()
            .unwrap();
        assert!(
            e.body().to_string().contains("tools[0].type"),
            "{}",
            e.body()
        );
        assert!(parse(br#"{"model":"m","input":[]}"#).is_err());
    }

    #[test]
    fn built_in_tools_are_kept_as_written_in_openais_dialect_beside_the_function_tools() {
        let parsed = parse(
            br#"{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{}},{"type":"web_search","search_context_size":"low"}]}"#,
        )
        .ok()
        .unwrap();
        let p = &parsed.turn.passthrough;
        assert_eq!(p.dialect, hermes_core::Dialect::OpenAiResponses);
        let builtin: Vec<&str> = p.server_tools.iter().map(|t| t.get()).collect();
        assert_eq!(
            builtin,
            [r#"{"type":"web_search","search_context_size":"low"}"#]
        );
        let functions = parsed.turn.tools.as_ref().unwrap().to_value();
        assert_eq!(functions[0]["function"]["name"], "f");
        assert_eq!(functions.as_array().unwrap().len(), 1);
    }
}
