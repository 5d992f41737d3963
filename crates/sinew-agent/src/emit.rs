//! Sending events: to the observer hook first, then to the run's sink.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures::task::AtomicWaker;
use sinew_core::AgentEvent;
use tokio::sync::mpsc;

use crate::config::EventObserver;

/// Where a run sends its events when the host brings its own channel. Unbounded: sending never
/// blocks the loop.
pub type EventSender = mpsc::UnboundedSender<AgentEvent>;
/// The receiving end of an [`EventSender`].
pub type EventReceiver = mpsc::UnboundedReceiver<AgentEvent>;

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
}

impl EventQueue {
    fn push(&self, event: AgentEvent) {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push_back(event);
        self.waker.wake();
    }

    /// Moves every queued event into `into` (which must be empty), in order.
    pub(crate) fn take_all(&self, into: &mut VecDeque<AgentEvent>) {
        std::mem::swap(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner), into);
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

    pub(crate) fn loop_id(&self) -> Arc<str> {
        Arc::clone(&self.loop_id)
    }
}
