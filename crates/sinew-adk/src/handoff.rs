//! The agents hand events to the runner through a single place: one event at a time, the agent
//! waiting while the place is taken, so it stays in step with the caller.
//!
//! This does what `tokio::sync::mpsc::channel(1)` did, for less: one lock and no semaphore. Every
//! streamed fragment goes through here.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

struct State<T> {
    item: Option<T>,
    /// The runner, waiting for an event.
    receiver: Option<Waker>,
    /// Agents waiting for the place to be free: usually one, more when agents run in parallel.
    sender: Option<Waker>,
    more_senders: Vec<Waker>,
    receiver_gone: bool,
    sender_gone: bool,
}

/// Creates the place, with its one sender and one receiver.
pub(crate) fn handoff<T>() -> (Sender<T>, Receiver<T>) {
    let state = Arc::new(Mutex::new(State {
        item: None,
        receiver: None,
        sender: None,
        more_senders: Vec::new(),
        receiver_gone: false,
        sender_gone: false,
    }));
    (Sender(state.clone()), Receiver(state))
}

fn lock<T>(state: &Mutex<State<T>>) -> MutexGuard<'_, State<T>> {
    // Nothing panics while holding the lock; a poisoned state is still consistent.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The agents' side.
pub(crate) struct Sender<T>(Arc<Mutex<State<T>>>);

impl<T> Sender<T> {
    /// Puts `item` in the place once it is free; gives it back when the runner is gone.
    pub(crate) async fn send(&self, item: T) -> Result<(), T> {
        let mut item = Some(item);
        std::future::poll_fn(|cx| self.poll_send(cx, &mut item)).await
    }

    fn poll_send(&self, cx: &mut Context<'_>, item: &mut Option<T>) -> Poll<Result<(), T>> {
        let Some(value) = item.take() else { return Poll::Ready(Ok(())) };
        let mut state = lock(&self.0);
        if state.receiver_gone {
            return Poll::Ready(Err(value));
        }
        if state.item.is_some() {
            *item = Some(value);
            let waker = cx.waker();
            match &state.sender {
                None => state.sender = Some(waker.clone()),
                Some(first) if first.will_wake(waker) => {}
                Some(_) => {
                    if !state.more_senders.iter().any(|w| w.will_wake(waker)) {
                        state.more_senders.push(waker.clone());
                    }
                }
            }
            return Poll::Pending;
        }
        state.item = Some(value);
        let receiver = state.receiver.take();
        drop(state);
        if let Some(receiver) = receiver {
            receiver.wake();
        }
        Poll::Ready(Ok(()))
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

/// The runner's side.
pub(crate) struct Receiver<T>(Arc<Mutex<State<T>>>);

impl<T> Receiver<T> {
    /// The event in the place, or `None` once the sender is gone and the place is empty.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = lock(&self.0);
        if let Some(item) = state.item.take() {
            Self::free(state);
            return Poll::Ready(Some(item));
        }
        if state.sender_gone {
            return Poll::Ready(None);
        }
        let waker = cx.waker();
        if !state.receiver.as_ref().is_some_and(|w| w.will_wake(waker)) {
            state.receiver = Some(waker.clone());
        }
        Poll::Pending
    }

    /// The event in the place, if there is one.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        let mut state = lock(&self.0);
        let item = state.item.take()?;
        Self::free(state);
        Some(item)
    }

    /// Tells the waiting senders the place is free.
    fn free(mut state: MutexGuard<'_, State<T>>) {
        let first = state.sender.take();
        let more = if state.more_senders.is_empty() { Vec::new() } else { std::mem::take(&mut state.more_senders) };
        drop(state);
        if let Some(first) = first {
            first.wake();
        }
        for waker in more {
            waker.wake();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = lock(&self.0);
        state.receiver_gone = true;
        // What was handed over but never taken goes now, not with the last sender.
        let item = state.item.take();
        let first = state.sender.take();
        let more = std::mem::take(&mut state.more_senders);
        drop(state);
        drop(item);
        for waker in first.into_iter().chain(more) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    #[tokio::test]
    async fn one_event_at_a_time_and_in_order() {
        let (sender, mut receiver) = handoff::<u32>();
        let sending = async {
            for i in 0..3 {
                sender.send(i).await.unwrap();
            }
        };
        let receiving = async {
            let mut got = Vec::new();
            while got.len() < 3 {
                got.push(std::future::poll_fn(|cx| receiver.poll_recv(cx)).await.unwrap());
            }
            got
        };
        let ((), got) = tokio::join!(sending, receiving);
        assert_eq!(got, [0, 1, 2]);
    }

    #[tokio::test]
    async fn a_sender_waits_while_the_place_is_taken() {
        let (sender, mut receiver) = handoff::<u32>();
        sender.send(1).await.unwrap();
        let mut second = Box::pin(sender.send(2));
        assert!((&mut second).now_or_never().is_none(), "the place is taken");
        assert_eq!(receiver.try_recv(), Some(1));
        assert_eq!(second.await, Ok(()));
        assert_eq!(receiver.try_recv(), Some(2));
        assert_eq!(receiver.try_recv(), None);
    }

    #[tokio::test]
    async fn senders_of_other_tasks_are_woken() {
        let (sender, mut receiver) = handoff::<u32>();
        let sender = Arc::new(sender);
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let sender = sender.clone();
                tokio::spawn(async move { sender.send(i).await })
            })
            .collect();
        let mut got = Vec::new();
        while got.len() < 4 {
            got.push(std::future::poll_fn(|cx| receiver.poll_recv(cx)).await.unwrap());
        }
        for task in tasks {
            assert_eq!(task.await.unwrap(), Ok(()));
        }
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    #[tokio::test]
    async fn a_gone_runner_gives_the_event_back() {
        let (sender, receiver) = handoff::<u32>();
        sender.send(1).await.unwrap();
        let waiting = tokio::spawn(async move { sender.send(2).await });
        tokio::task::yield_now().await;
        drop(receiver);
        assert_eq!(waiting.await.unwrap(), Err(2));
    }

    #[tokio::test]
    async fn a_gone_sender_ends_the_receiver() {
        let (sender, mut receiver) = handoff::<u32>();
        sender.send(7).await.unwrap();
        drop(sender);
        assert_eq!(std::future::poll_fn(|cx| receiver.poll_recv(cx)).await, Some(7));
        assert_eq!(std::future::poll_fn(|cx| receiver.poll_recv(cx)).await, None);
    }
}
