//! A streamed answer, the same for every door: engine events in, a door's SSE events out, with
//! keep-alive comments while the upstream is silent, an in-stream error for a failure (no retry
//! once anything was sent), and the end of the stream when the drain bound cuts it. Dropping
//! the response (the client went away) drops the engine's [`Events`], which cancels the
//! request: only whole steps are stored.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use hermes_engine::{Event, Events};

use crate::error::ApiError;
use crate::limits::Admitted;
use crate::metrics::{StreamGuard, Turn};

/// One door's spelling of a streamed reply.
pub(crate) trait StreamDoor: Send + 'static {
    /// What is sent before any engine event (Anthropic's `message_start`).
    fn opening(&mut self) -> Vec<SseEvent> {
        Vec::new()
    }

    /// What is sent for `event` (a driver event or [`Event::Done`]), and whether the stream
    /// ends after it.
    fn on_event(&mut self, event: Event) -> (Vec<SseEvent>, bool);

    /// Work to finish before the stream's last events are sent for `completion` (the Responses
    /// door keeps a stored response by id before `response.completed`).
    fn finishing(
        &mut self,
        _completion: &hermes_engine::Completion,
    ) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> {
        None
    }

    /// The event that reports `error` in the stream (its last).
    fn failure(&self, error: &ApiError) -> SseEvent;
}

/// How a stream is run, beside its door and events.
pub(crate) struct Settings {
    /// A keep-alive comment this often while the upstream is silent.
    pub(crate) keep_alive: Duration,
    /// Set when the drain bound runs out: the stream ends with the door's error event.
    pub(crate) cut: tokio::sync::watch::Receiver<bool>,
    /// Records the request's engine events (metrics); the stream counts as in flight while
    /// it lives.
    pub(crate) recorder: Turn,
    /// The request's concurrency slot, held until the stream ends or is dropped.
    pub(crate) admitted: Admitted,
}

/// The SSE answer of `door` to `events` (`first` already taken from them and recorded), with
/// keep-alive comments every `settings.keep_alive`, ended by `settings.cut` (the drain bound)
/// with the door's error event.
pub(crate) fn streamed<D: StreamDoor>(
    mut door: D,
    events: Events,
    first: Option<Event>,
    settings: Settings,
) -> Response {
    struct Streaming<D> {
        _admitted: Admitted,
        door: D,
        events: Events,
        cut: tokio::sync::watch::Receiver<bool>,
        first: Option<Event>,
        queued: VecDeque<SseEvent>,
        ended: bool,
        recorder: Turn,
        _in_flight: StreamGuard,
    }
    let queued = door.opening().into();
    let Settings {
        keep_alive,
        cut,
        recorder,
        admitted,
    } = settings;
    let state = Streaming {
        _admitted: admitted,
        door,
        events,
        cut,
        first,
        queued,
        ended: false,
        _in_flight: recorder.stream(),
        recorder,
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.queued.pop_front() {
                return Some((Ok::<_, Infallible>(event), s));
            }
            if s.ended {
                return None;
            }
            let event = match s.first.take() {
                Some(event) => Some(event),
                None => tokio::select! {
                    event = s.events.next() => {
                        if let Some(Event::Driver(driver)) = &event {
                            s.recorder.record(driver);
                        }
                        event
                    }
                    _ = s.cut.wait_for(|c| *c) => {
                        s.queued.push_back(s.door.failure(&crate::error::shutting_down()));
                        s.ended = true;
                        continue;
                    }
                },
            };
            match event {
                Some(Event::Failed(error)) => {
                    s.queued
                        .push_back(s.door.failure(&ApiError::from_engine(&error)));
                    s.ended = true;
                }
                Some(event) => {
                    if let Event::Done(completion) = &event {
                        s.recorder.done(&completion.session);
                        if let Some(finishing) = s.door.finishing(completion) {
                            finishing.await;
                        }
                    }
                    let (out, ended) = s.door.on_event(event);
                    s.queued.extend(out);
                    s.ended = ended;
                }
                None => {
                    let error = ApiError::unavailable("the request ended without a reply");
                    s.queued.push_back(s.door.failure(&error));
                    s.ended = true;
                }
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response()
}
