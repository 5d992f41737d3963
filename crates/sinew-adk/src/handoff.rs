//! The agents hand events to the runner through a single place: one event at a time, the agent
//! waiting while the place is taken, so it stays in step with the caller.
//!
//! This does what `tokio::sync::mpsc::channel(1)` did, for less (one lock, no semaphore): agents
//! that wait get the place in the order they came, so parallel branches take turns, and taking an
//! event spends the task's cooperative budget, so a run fed by in-process models still yields to
//! the scheduler. Every streamed fragment goes through here.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};

struct State<T> {
    item: Option<T>,
    /// The runner, waiting for an event.
    receiver: Option<Waker>,
    /// Agents waiting for the place, first come first served: their ticket, and how to wake them
    /// (a no-op once woken, until they look again).
    waiting: VecDeque<(u64, Waker)>,
    next_ticket: u64,
    receiver_gone: bool,
    sender_gone: bool,
}

/// Creates the place, with its one sender and one receiver.
pub(crate) fn handoff<T>() -> (Sender<T>, Receiver<T>) {
    let state = Arc::new(Mutex::new(State {
        item: None,
        receiver: None,
        waiting: VecDeque::new(),
        next_ticket: 0,
        receiver_gone: false,
        sender_gone: false,
    }));
    (Sender(state.clone()), Receiver(state))
}

fn lock<T>(state: &Mutex<State<T>>) -> MutexGuard<'_, State<T>> {
    // Nothing panics while holding the lock; a poisoned state is still consistent.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wakes the first agent in line, if the place is free.
fn wake_next<T>(mut state: MutexGuard<'_, State<T>>) {
    if state.item.is_some() {
        return;
    }
    let next = state.waiting.front_mut().map(|(_, waker)| std::mem::replace(waker, Waker::noop().clone()));
    drop(state);
    if let Some(waker) = next {
        waker.wake();
    }
}

/// The agents' side.
pub(crate) struct Sender<T>(Arc<Mutex<State<T>>>);

impl<T> Sender<T> {
    /// Puts `item` in the place once it is free and the agents that came first have had it; gives
    /// it back when the runner is gone.
    pub(crate) fn send(&self, item: T) -> Send<'_, T> {
        Send { state: &self.0, item: Some(item), ticket: None }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0);
        state.sender_gone = true;
        let receiver = state.receiver.take();
        drop(state);
        if let Some(receiver) = receiver {
            receiver.wake();
        }
    }
}

/// A hand-over under way (see [`Sender::send`]). Dropped while waiting, it leaves the line.
pub(crate) struct Send<'a, T> {
    state: &'a Mutex<State<T>>,
    item: Option<T>,
    /// Its place in line, once it had to wait.
    ticket: Option<u64>,
}

// Nothing of a `Send` is pinned: it is moved freely between polls.
impl<T> Unpin for Send<'_, T> {}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), T>> {
        let this = self.get_mut();
        let Some(item) = this.item.take() else { return Poll::Ready(Ok(())) };
        let mut state = lock(this.state);
        if state.receiver_gone {
            return Poll::Ready(Err(item));
        }
        let first_in_line = match this.ticket {
            None => state.waiting.is_empty(),
            Some(ticket) => state.waiting.front().is_some_and(|(t, _)| *t == ticket),
        };
        if state.item.is_none() && first_in_line {
            if this.ticket.take().is_some() {
                state.waiting.pop_front();
            }
            state.item = Some(item);
            let receiver = state.receiver.take();
            drop(state);
            if let Some(receiver) = receiver {
                receiver.wake();
            }
            return Poll::Ready(Ok(()));
        }
        this.item = Some(item);
        let waker = cx.waker();
        match this.ticket {
            Some(ticket) => {
                if let Some((_, known)) = state.waiting.iter_mut().find(|(t, _)| *t == ticket)
                    && !known.will_wake(waker)
                {
                    known.clone_from(waker);
                }
            }
            None => {
                let ticket = state.next_ticket;
                state.next_ticket += 1;
                state.waiting.push_back((ticket, waker.clone()));
                this.ticket = Some(ticket);
            }
        }
        Poll::Pending
    }
}

impl<T> Drop for Send<'_, T> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket else { return };
        let mut state = lock(self.state);
        let was_first = state.waiting.front().is_some_and(|(t, _)| *t == ticket);
        state.waiting.retain(|(t, _)| *t != ticket);
        if was_first {
            wake_next(state);
        }
    }
}

/// The runner's side.
pub(crate) struct Receiver<T>(Arc<Mutex<State<T>>>);

impl<T> Receiver<T> {
    /// The event in the place, or `None` once the sender is gone and the place is empty.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
        let mut state = lock(&self.0);
        if let Some(item) = state.item.take() {
            coop.made_progress();
            wake_next(state);
            return Poll::Ready(Some(item));
        }
        if state.sender_gone {
            return Poll::Ready(None);
        }
        let waker = cx.waker();
        match &mut state.receiver {
            Some(known) if known.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        Poll::Pending
    }

    /// The event in the place, if there is one.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        let mut state = lock(&self.0);
        let item = state.item.take()?;
        wake_next(state);
        Some(item)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0);
        state.receiver_gone = true;
        // What was handed over but never taken goes now, not with the last sender.
        let item = state.item.take();
        let waiting = std::mem::take(&mut state.waiting);
        drop(state);
        drop(item);
        for (_, waker) in waiting {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests;
