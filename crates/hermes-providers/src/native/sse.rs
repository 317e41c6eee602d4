//! The one SSE reading loop (through eventsource-stream) of every wire that streams
//! server-sent events: chat completions, Anthropic Messages, Gemini `alt=sse` and Responses.
//! Each wire's capture takes the events ([`SseTurn`]); the loop owns what they share: a
//! failed read, an `event: error` frame, and the first bytes of the body kept to explain a
//! 200 that is no event stream at all.

use eventsource_stream::{EventStreamError, Eventsource as _};
use futures_util::{Stream, StreamExt as _};
use hermes_core::transport::{OnDelta, Reply, TransportError};
use hermes_core::{Message, Origin, Outgoing, ReplyMeta};

use crate::read::{ERROR_BODY_LIMIT, error_event_text, read_whole, stream_error};
use crate::reply::{CaptureError, Captured};

/// What a wire's stream capture does with the events of one streamed reply.
pub trait SseTurn {
    /// How many events (or chunks) it has taken, for a stall's message.
    fn seen(&self) -> usize;

    /// Takes one event (`event` its type, empty when unnamed; `data` as received, untrimmed):
    /// `Ok(true)` when the stream is over (the chat wire's `[DONE]`).
    fn take(
        &mut self,
        event: &str,
        data: &str,
        on_delta: OnDelta<'_>,
    ) -> Result<bool, TransportError>;

    /// The captured reply once the events ended; `head` is the start of the body (at most
    /// [`ERROR_BODY_LIMIT`] bytes, trimmed), to explain a body that held no stream.
    fn end(self, origin: Origin, head: &str) -> Result<(Message, ReplyMeta), TransportError>;
}

/// Reads a streamed reply's `bytes` (cut anywhere) as server-sent events into `turn`. An
/// `event: error` frame is the provider's error after the 200 (nothing is stored);
/// `stream_err` maps a failed read after `seen` events.
pub async fn read_sse<S, B, E, T>(
    bytes: S,
    mut turn: T,
    origin: Origin,
    on_delta: OnDelta<'_>,
    stream_err: impl Fn(EventStreamError<E>, usize) -> TransportError,
) -> Result<Reply, TransportError>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    T: SseTurn,
{
    let mut head: Vec<u8> = Vec::new();
    let mut events = bytes
        .inspect(|chunk| {
            if let Ok(chunk) = chunk {
                let chunk = chunk.as_ref();
                let room = ERROR_BODY_LIMIT.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
        })
        .eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| stream_err(e, turn.seen()))?;
        if event.event.eq_ignore_ascii_case("error") {
            return Err(TransportError::AfterOk(error_event_text(event.data.trim())));
        }
        if turn.take(&event.event, &event.data, on_delta)? {
            break;
        }
    }
    drop(events);
    let head = String::from_utf8_lossy(&head);
    let (message, meta) = turn.end(origin, head.trim())?;
    Ok(Reply { message, meta })
}

/// What a wire whose every event is one JSON document (Gemini, Responses) does with an
/// event's `data`: trimmed, it goes to `feed` unless it is empty or `[DONE]`; a capture error
/// becomes a transport error quoting the event.
pub fn feed_json(
    data: &str,
    feed: impl FnOnce(&str) -> Result<(), CaptureError>,
) -> Result<bool, TransportError> {
    let data = data.trim();
    if !data.is_empty() && data != "[DONE]" {
        feed(data).map_err(|e| e.of_whole(data))?;
    }
    Ok(false)
}

/// [`read_sse`] of an HTTP response, a failed read named after how many `unit`s (`event`,
/// `chunk`) arrived.
pub async fn read_response<T: SseTurn>(
    response: reqwest::Response,
    turn: T,
    origin: Origin,
    on_delta: OnDelta<'_>,
    unit: &str,
) -> Result<Reply, TransportError> {
    read_sse(
        response.bytes_stream(),
        turn,
        origin,
        on_delta,
        |e, seen| stream_error(e, seen, unit),
    )
    .await
}

/// The reply to `request` read the way it was asked for: a stream through the capture `turn`
/// makes ([`read_response`], a failed read named after how many `unit`s arrived), a whole reply
/// through `whole` ([`read_whole`]: decoded from the bytes themselves, so every block keeps
/// them).
pub async fn read_reply<T: SseTurn>(
    response: reqwest::Response,
    request: &Outgoing,
    turn: impl FnOnce() -> T,
    whole: fn(&str, Origin) -> Captured,
    origin: Origin,
    on_delta: OnDelta<'_>,
    unit: &str,
) -> Result<Reply, TransportError> {
    if request.stream {
        read_response(response, turn(), origin, on_delta, unit).await
    } else {
        read_whole(response, origin, whole).await
    }
}
