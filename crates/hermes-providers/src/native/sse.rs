//! The one SSE reading loop (through eventsource-stream) of every wire that streams
//! server-sent events: chat completions, Anthropic Messages, Gemini `alt=sse` and Responses.
//! Each wire's capture takes the events ([`SseTurn`]); the loop owns what they share: a
//! failed read, an `event: error` frame, and the first bytes of the body kept to explain a
//! 200 that is no event stream at all.
//!
//! The decoder is fed whole lines ([`Lines`]): eventsource-stream 0.2 parses the pending text
//! again for every piece pushed and copies what follows each line it takes, so a line trickled
//! in n pieces costs O(n²), and a piece of many lines copies its rest once per line.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
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
    let events = bytes.inspect(|chunk| {
        if let Ok(chunk) = chunk {
            let chunk = chunk.as_ref();
            let room = ERROR_BODY_LIMIT.saturating_sub(head.len());
            head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    });
    let mut events = Lines::new(events).eventsource();
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

/// A byte stream re-cut into lines, each ending with its line end (`\n`, `\r\n` or `\r`; a
/// `\r` that ends the bytes so far may be followed by its `\n` in the next piece, which the
/// decoder waits for), the bytes after the last line end given when the stream ends. Every
/// byte is looked at once and no line is copied ([`BytesMut::split_to`]). A failed read is
/// passed on when it comes, and ends the stream (a line it cut short is dropped).
struct Lines<S> {
    bytes: S,
    pending: BytesMut,
    /// How far `pending` is known to hold no line end.
    scanned: usize,
    ended: bool,
}

impl<S> Lines<S> {
    /// Lines of `bytes`.
    fn new(bytes: S) -> Self {
        Self {
            bytes,
            pending: BytesMut::new(),
            scanned: 0,
            ended: false,
        }
    }
}

impl<S, B, E> Stream for Lines<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let rest = &this.pending[this.scanned..];
            if let Some(at) = rest.iter().position(|b| matches!(b, b'\n' | b'\r')) {
                let mut end = this.scanned + at + 1;
                if this.pending[end - 1] == b'\r' && this.pending.get(end) == Some(&b'\n') {
                    end += 1;
                }
                this.scanned = 0;
                return Poll::Ready(Some(Ok(this.pending.split_to(end).freeze())));
            }
            this.scanned = this.pending.len();
            if this.ended {
                this.scanned = 0;
                let rest = this.pending.split().freeze();
                return Poll::Ready((!rest.is_empty()).then_some(Ok(rest)));
            }
            match ready!(Pin::new(&mut this.bytes).poll_next(cx)) {
                Some(Ok(piece)) => this.pending.extend_from_slice(piece.as_ref()),
                Some(Err(e)) => {
                    this.ended = true;
                    this.pending.clear();
                    this.scanned = 0;
                    return Poll::Ready(Some(Err(e)));
                }
                None => this.ended = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    /// A body with every line end, a comment, a multi-line event, a named event, an id, an
    /// unterminated last line and characters of two, three and four bytes.
    const BODY: &str = "data: a\u{e9}\n\nevent: x\r\ndata: 1\r\ndata: 2\r\n\r\n: note\rid: 7\rdata: \u{20ac}\u{1f600}\r\rdata: tail\n\ndata: no end";

    fn pieces(body: &[u8], cuts: &[usize]) -> Vec<Result<Vec<u8>, std::io::Error>> {
        let mut at = 0;
        let mut out = Vec::new();
        for &cut in cuts.iter().chain([&body.len()]) {
            out.push(Ok(body[at..cut].to_vec()));
            at = cut;
        }
        out
    }

    fn events<S>(stream: S) -> Vec<(String, String, String)>
    where
        S: Stream<Item = Result<Vec<u8>, std::io::Error>> + Unpin,
    {
        decode(stream.eventsource())
    }

    fn decode<
        S: Stream<Item = Result<eventsource_stream::Event, E>> + Unpin,
        E: std::fmt::Debug,
    >(
        mut stream: S,
    ) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        while let Some(event) = stream.next().now_or_never().expect("every piece is ready") {
            let event = event.expect("the body decodes");
            out.push((event.event, event.data, event.id));
        }
        out
    }

    #[test]
    fn lines_hand_the_decoder_the_events_of_the_body_cut_anywhere() {
        let body = BODY.as_bytes();
        let whole = events(futures_util::stream::iter(pieces(body, &[])));
        assert_eq!(whole.len(), 4, "{whole:?}");
        for first in 0..=body.len() {
            for second in first..=body.len() {
                let cut = pieces(body, &[first, second]);
                let lines = Lines::new(futures_util::stream::iter(cut));
                assert_eq!(
                    decode(lines.eventsource()),
                    whole,
                    "cut at {first} and {second}"
                );
            }
        }
    }

    fn lines_of(body: &[u8], cuts: &[usize]) -> Vec<Bytes> {
        let mut lines = Lines::new(futures_util::stream::iter(pieces(body, cuts)));
        let mut got = Vec::new();
        while let Some(line) = lines.next().now_or_never().expect("every piece is ready") {
            got.push(line.expect("no failed read"));
        }
        got
    }

    #[test]
    fn lines_end_with_their_line_end_and_lose_no_byte() {
        let body = BODY.as_bytes();
        let whole: Vec<String> = lines_of(body, &[])
            .iter()
            .map(|l| String::from_utf8(l.to_vec()).expect("whole characters"))
            .collect();
        assert_eq!(
            whole,
            [
                "data: a\u{e9}\n",
                "\n",
                "event: x\r\n",
                "data: 1\r\n",
                "data: 2\r\n",
                "\r\n",
                ": note\r",
                "id: 7\r",
                "data: \u{20ac}\u{1f600}\r",
                "\r",
                "data: tail\n",
                "\n",
                "data: no end",
            ]
        );
        // One byte at a time, the way a slow upstream trickles: a `\r` that ends what came so
        // far is a line of its own (its `\n` follows as another), which the decoder reads alike.
        let trickled = lines_of(body, &(1..body.len()).collect::<Vec<_>>());
        assert_eq!(trickled.concat(), body);
        let (last, lines) = trickled.split_last().expect("lines");
        assert_eq!(&last[..], b"data: no end");
        assert!(
            lines
                .iter()
                .all(|l| matches!(l.last(), Some(b'\n' | b'\r'))),
            "{trickled:?}"
        );
        assert_eq!(
            lines.len(),
            whole.len() - 1 + 4,
            "the four CRLFs come as two lines each"
        );
    }

    #[test]
    fn a_failed_read_is_passed_on_when_it_comes_and_ends_the_lines() {
        let read: Vec<Result<&[u8], &str>> = vec![Ok(b"data: 1\nda"), Err("reset"), Ok(b"ta: 2\n")];
        let mut lines = Lines::new(futures_util::stream::iter(read));
        let mut got = Vec::new();
        while let Some(line) = lines.next().now_or_never().expect("ready") {
            got.push(line.map(|l| l.to_vec()));
        }
        assert_eq!(got, [Ok(b"data: 1\n".to_vec()), Err("reset")]);
    }
}
