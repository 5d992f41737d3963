//! Sending events: to the observer hook first, then to the run's sink.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use futures::task::AtomicWaker;
use sinew_core::AgentEvent;
use tokio::sync::mpsc;

use crate::config::EventObserver;

/// Where a run sends its events when the host brings its own channel. Unbounded: sending never
/// blocks the loop.
pub type EventSender = mpsc::UnboundedSender<AgentEvent>;
/// The receiving end of an [`EventSender`].
pub type EventReceiver = mpsc::UnboundedReceiver<AgentEvent>;

/// How many events may wait in a run's own stream before the run lets its consumer take them.
const BACKLOG: usize = 32;

/// A new unbounded event channel.
pub fn event_channel() -> (EventSender, EventReceiver) {
    mpsc::unbounded_channel()
}

/// The queue between a run and the [`crate::AgentRun`] stream that drives it.
///
/// A run and its stream live in one task, so a plain locked queue does: no cooperative budget,
/// no dependence on when senders are dropped. The waker covers events pushed from other threads
/// (a tool's own thread reporting progress) while the run waits.
#[derive(Default)]
pub(crate) struct EventQueue {
    events: Mutex<VecDeque<AgentEvent>>,
    waker: AtomicWaker,
    /// The stream's consumer drops every event ([`crate::AgentRun::finish`]): none is queued.
    discarded: AtomicBool,
}

impl EventQueue {
    fn push(&self, event: AgentEvent) {
        if self.is_discarded() {
            return;
        }
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push_back(event);
        self.waker.wake();
    }

    /// From now on, events are dropped as they come; those waiting are dropped too.
    pub(crate) fn discard(&self) {
        self.discarded.store(true, Ordering::Relaxed);
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn is_discarded(&self) -> bool {
        self.discarded.load(Ordering::Relaxed)
    }

    /// Moves every queued event into `into` (which must be empty), in order.
    pub(crate) fn take_all(&self, into: &mut VecDeque<AgentEvent>) {
        std::mem::swap(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner), into);
    }

    fn len(&self) -> usize {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }
}

/// Where a run's events go.
#[derive(Clone)]
pub(crate) enum Sink {
    Channel(EventSender),
    Queue(Arc<EventQueue>),
}

#[derive(Clone)]
pub(crate) struct Emitter {
    sink: Sink,
    observer: Option<EventObserver>,
    pub(crate) loop_id: Arc<str>,
}

impl Emitter {
    pub(crate) fn new(sink: Sink, observer: Option<EventObserver>, loop_id: Arc<str>) -> Self {
        Emitter { sink, observer, loop_id }
    }

    /// Whether the run's events reach anyone: its observer, a host's channel still open, or an
    /// [`crate::AgentRun`] read as a stream. The loop does not build (copy messages into) events
    /// nobody takes; hooks run regardless.
    pub(crate) fn observed(&self) -> bool {
        self.observer.is_some()
            || match &self.sink {
                Sink::Channel(tx) => !tx.is_closed(),
                Sink::Queue(queue) => !queue.is_discarded(),
            }
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        if let Some(observe) = &self.observer {
            observe(&event);
        }
        match &self.sink {
            // A host that dropped its receiver no longer wants events; the run goes on regardless.
            Sink::Channel(tx) => drop(tx.send(event)),
            Sink::Queue(queue) => queue.push(event),
        }
    }

    /// Lets the consumer of the run's own stream take what waits there once [`BACKLOG`] events
    /// do: a response that arrives all at once is handed on as it is decoded, not held whole. A
    /// host's own channel is unbounded, and not waited for.
    pub(crate) async fn hand_on(&self) {
        if let Sink::Queue(queue) = &self.sink
            && queue.len() >= BACKLOG
        {
            yield_once().await;
        }
    }

    pub(crate) fn loop_id(&self) -> Arc<str> {
        Arc::clone(&self.loop_id)
    }
}

/// Pending once, waking at once: the [`crate::AgentRun`] driving the run hands the queued events
/// to its consumer, then polls the run again.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}
