//! Sending events: to the observer hook first, then to the run's channel.

use std::sync::Arc;

use sinew_core::AgentEvent;
use tokio::sync::mpsc;

use crate::config::EventObserver;

/// Where a run sends its events. Unbounded: sending never blocks the loop.
pub type EventSender = mpsc::UnboundedSender<AgentEvent>;
/// The receiving end of an [`EventSender`].
pub type EventReceiver = mpsc::UnboundedReceiver<AgentEvent>;

/// A new unbounded event channel.
pub fn event_channel() -> (EventSender, EventReceiver) {
    mpsc::unbounded_channel()
}

#[derive(Clone)]
pub(crate) struct Emitter {
    tx: EventSender,
    observer: Option<EventObserver>,
    pub(crate) loop_id: Arc<str>,
}

impl Emitter {
    pub(crate) fn new(tx: EventSender, observer: Option<EventObserver>, loop_id: Arc<str>) -> Self {
        Emitter { tx, observer, loop_id }
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        if let Some(observe) = &self.observer {
            observe(&event);
        }
        // A host that dropped its receiver no longer wants events; the run goes on regardless.
        let _ = self.tx.send(event);
    }

    pub(crate) fn loop_id(&self) -> Arc<str> {
        Arc::clone(&self.loop_id)
    }
}
