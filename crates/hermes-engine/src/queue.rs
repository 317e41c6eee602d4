//! The queue between a turn's task and its reader ([`crate::Events`]): bounded in events. The
//! driver tells its events synchronously and must never wait on a slow reader (the upstream
//! would wait with it), so past [`CAPACITY`] queued events a new delta is merged into the last
//! queued one of its kind — thinking into thinking, text into text, a tool call's arguments into
//! the same call's — never dropped and never reordered. A reader that keeps up sees each delta
//! as it came; one that falls behind gets them in fewer, larger pieces, and the queue holds a
//! bounded number of entries whatever the reply's length.

use std::collections::VecDeque;
use std::sync::Mutex;

use hermes_core::driver::DriverEvent;

/// Events queued before deltas are merged.
pub(crate) const CAPACITY: usize = 256;

/// What the turn's task and its reader share.
pub(crate) struct Queue<E> {
    state: Mutex<State<E>>,
    ready: tokio::sync::Notify,
}

struct State<E> {
    events: VecDeque<E>,
    /// The task told its last event.
    closed: bool,
}

/// What the queue needs to know of an event: the driver event it carries, if any.
pub(crate) trait Carries {
    /// The driver event, mutable, when this is one.
    fn driver(&mut self) -> Option<&mut DriverEvent>;
}

impl<E: Carries> Queue<E> {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        Queue {
            state: Mutex::new(State {
                events: VecDeque::new(),
                closed: false,
            }),
            ready: tokio::sync::Notify::new(),
        }
    }

    /// Queues `event` (merged into the last queued delta of its kind when the queue is full).
    pub(crate) fn push(&self, mut event: E) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.events.len() >= CAPACITY
            && let Some(last) = state.events.back_mut()
            && merge(last, &mut event)
        {
            drop(state);
            self.ready.notify_one();
            return;
        }
        state.events.push_back(event);
        drop(state);
        self.ready.notify_one();
    }

    /// No more events come.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.ready.notify_one();
    }

    /// The next event; `None` once the queue is closed and empty.
    pub(crate) async fn next(&self) -> Option<E> {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(event) = state.events.pop_front() {
                    return Some(event);
                }
                if state.closed {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Events queued now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .len()
    }
}

/// Closes its queue when dropped: the turn's task holds one, so a reader never waits on a task
/// that ended without telling its last event (a panic).
pub(crate) struct CloseOnDrop<E: Carries>(pub(crate) std::sync::Arc<Queue<E>>);

impl<E: Carries> Drop for CloseOnDrop<E> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Merges `next` into `last` when both are deltas of one kind (the same call's arguments);
/// whether it did.
fn merge<E: Carries>(last: &mut E, next: &mut E) -> bool {
    let (Some(last), Some(next)) = (last.driver(), next.driver()) else {
        return false;
    };
    match (last, next) {
        (
            DriverEvent::Delta {
                reasoning: a,
                text: into,
            },
            DriverEvent::Delta { reasoning: b, text },
        ) if a == b => {
            into.push_str(text);
            true
        }
        (
            DriverEvent::ToolCallDelta {
                index: a,
                arguments: into,
                ..
            },
            DriverEvent::ToolCallDelta {
                index: b,
                id: None,
                name: None,
                arguments,
            },
        ) if a == b => {
            into.push_str(arguments);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{CAPACITY, Carries, Queue};
    use hermes_core::driver::DriverEvent;

    impl Carries for DriverEvent {
        fn driver(&mut self) -> Option<&mut DriverEvent> {
            Some(self)
        }
    }

    fn delta(reasoning: bool, text: &str) -> DriverEvent {
        DriverEvent::Delta {
            reasoning,
            text: text.to_owned(),
        }
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_gets_every_delta_merged_in_order_and_the_queue_stays_bounded()
     {
        let queue = Queue::new();
        let mut thinking = String::new();
        let mut text = String::new();
        for i in 0..10_000 {
            let piece = format!("t{i} ");
            thinking.push_str(&piece);
            queue.push(delta(true, &piece));
        }
        queue.push(DriverEvent::ToolCall { name: "now".into() });
        for i in 0..10_000 {
            let piece = format!("a{i} ");
            text.push_str(&piece);
            queue.push(delta(false, &piece));
        }
        assert!(queue.len() <= CAPACITY + 2, "{} queued", queue.len());
        queue.close();
        let (mut got_thinking, mut got_text, mut calls) = (String::new(), String::new(), 0);
        let mut after_call = false;
        while let Some(event) = queue.next().await {
            match event {
                DriverEvent::Delta {
                    reasoning: true,
                    text,
                } => {
                    assert!(!after_call, "thinking after the call: reordered");
                    got_thinking.push_str(&text);
                }
                DriverEvent::Delta {
                    reasoning: false,
                    text,
                } => {
                    assert!(after_call, "text before the call: reordered");
                    got_text.push_str(&text);
                }
                DriverEvent::ToolCall { .. } => {
                    calls += 1;
                    after_call = true;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got_thinking, thinking);
        assert_eq!(got_text, text);
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn a_reader_that_keeps_up_sees_each_delta_as_it_came() {
        let queue = std::sync::Arc::new(Queue::new());
        let reader = {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while let Some(event) = queue.next().await {
                    seen.push(event);
                }
                seen
            })
        };
        for i in 0..50 {
            queue.push(delta(false, &i.to_string()));
            tokio::task::yield_now().await;
        }
        queue.close();
        let seen = reader.await.unwrap();
        assert_eq!(seen.len(), 50);
        assert_eq!(seen[7], delta(false, "7"));
    }
}
