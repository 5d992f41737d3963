use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;

use futures::FutureExt as _;

use super::*;

/// A waker that counts how often it was woken.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Count {
    fn woken(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Polls `future` once with `count`'s waker.
fn poll_with<F: Future + Unpin>(future: &mut F, count: &Arc<Count>) -> Poll<F::Output> {
    let waker = Waker::from(count.clone());
    Pin::new(future).poll(&mut Context::from_waker(&waker))
}

async fn recv<T>(receiver: &mut Receiver<T>) -> Option<T> {
    std::future::poll_fn(|cx| receiver.poll_recv(cx)).await
}

/// The next `n` events, in the order they are taken.
async fn receive<T>(receiver: &mut Receiver<T>, n: usize) -> Vec<T> {
    let mut got = Vec::with_capacity(n);
    while got.len() < n {
        got.push(recv(receiver).await.expect("the sender is there"));
    }
    got
}

#[tokio::test]
async fn one_event_at_a_time_and_in_order() {
    let (sender, mut receiver) = handoff::<u32>();
    let sending = async {
        for i in 0..3 {
            sender.send(i).await.unwrap();
        }
    };
    let receiving = receive(&mut receiver, 3);
    let ((), got) = tokio::join!(sending, receiving);
    assert_eq!(got, [0, 1, 2]);
}

#[tokio::test]
async fn a_sender_waits_while_the_place_is_taken() {
    let (sender, mut receiver) = handoff::<u32>();
    sender.send(1).await.unwrap();
    let mut second = sender.send(2);
    assert!((&mut second).now_or_never().is_none(), "the place is taken");
    assert_eq!(receiver.try_recv(), Some(1));
    assert_eq!(second.await, Ok(()));
    assert_eq!(receiver.try_recv(), Some(2));
    assert_eq!(receiver.try_recv(), None);
}

/// Two agents polled by one task (as parallel branches are, sharing its waker) take turns: the
/// one that came second gets the place before the first sends again.
#[tokio::test]
async fn waiting_senders_take_turns_in_the_order_they_came() {
    let (sender, mut receiver) = handoff::<&str>();
    let branch = |names: [&'static str; 3]| {
        let sender = &sender;
        async move {
            for name in names {
                sender.send(name).await.unwrap();
            }
        }
    };
    let receiving = receive(&mut receiver, 6);
    let ((), (), got) = futures::join!(branch(["a0", "a1", "a2"]), branch(["b0", "b1", "b2"]), receiving);
    let at = |name: &str| got.iter().position(|g| *g == name).unwrap();
    assert!(at("b0") < at("a2"), "b waited before a's third event: {got:?}");
    assert!(at("a0") < at("a1") && at("a1") < at("a2") && at("b0") < at("b1") && at("b1") < at("b2"), "{got:?}");
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
    let mut got = receive(&mut receiver, 4).await;
    for task in tasks {
        assert_eq!(task.await.unwrap(), Ok(()));
    }
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3]);
}

/// A waiting sender that is dropped leaves the line: the one behind it is woken when the place
/// frees, and gets it.
#[test]
fn a_sender_dropped_while_waiting_leaves_the_line() {
    let (sender, mut receiver) = handoff::<u32>();
    let (first, second) = (Arc::new(Count::default()), Arc::new(Count::default()));
    assert!(poll_with(&mut sender.send(0), &first).is_ready());
    let mut dropped = sender.send(1);
    let mut behind = sender.send(2);
    assert!(poll_with(&mut dropped, &first).is_pending());
    assert!(poll_with(&mut behind, &second).is_pending());
    drop(dropped);
    assert_eq!(receiver.try_recv(), Some(0));
    assert_eq!(second.woken(), 1);
    assert_eq!(poll_with(&mut behind, &second), Poll::Ready(Ok(())));
    assert_eq!(receiver.try_recv(), Some(2));
}

/// The runner gone, a waiting sender is woken and gets its event back.
#[test]
fn a_gone_runner_gives_the_event_back() {
    let (sender, receiver) = handoff::<u32>();
    let count = Arc::new(Count::default());
    assert!(poll_with(&mut sender.send(1), &count).is_ready());
    let mut waiting = sender.send(2);
    assert!(poll_with(&mut waiting, &count).is_pending());
    drop(receiver);
    assert_eq!(count.woken(), 1);
    assert_eq!(poll_with(&mut waiting, &count), Poll::Ready(Err(2)));
    assert_eq!(poll_with(&mut sender.send(3), &count), Poll::Ready(Err(3)));
}

#[tokio::test]
async fn a_gone_sender_ends_the_receiver() {
    let (sender, mut receiver) = handoff::<u32>();
    sender.send(7).await.unwrap();
    drop(sender);
    assert_eq!(recv(&mut receiver).await, Some(7));
    assert_eq!(recv(&mut receiver).await, None);
}
