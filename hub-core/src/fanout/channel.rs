//! One connected cluster's channel: its latest [`Desired`] state, a version, and
//! the wakers of the streams waiting on it ([`Receiver`]); the [`super::index::Index`]
//! keeps one per connected cluster. Not a `tokio::sync::watch`: see the index's docs.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::desired::Desired;

/// One cluster's published state and who waits on it.
#[derive(Debug)]
pub(super) struct Channel {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    value: Desired,
    /// Bumped on every change of `value`.
    version: u64,
    /// Live receivers.
    receivers: usize,
    /// Ids for receivers, to find their waker when they go.
    next_id: u64,
    /// The index is gone: no value will change any more.
    closed: bool,
    /// Receivers waiting for a change (their id and waker), woken and cleared by
    /// the next change. Almost always one: a cluster's spoke connects once.
    waiting: Vec<(u64, Waker)>,
}

impl Channel {
    pub(super) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                value: Desired::Pending,
                version: 0,
                receivers: 0,
                next_id: 0,
                closed: false,
                waiting: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No invariant a panicking holder could break halfway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn receivers(&self) -> usize {
        self.lock().receivers
    }

    pub(super) fn subscribe(self: &Arc<Self>) -> Receiver {
        let mut state = self.lock();
        state.receivers += 1;
        let id = state.next_id;
        state.next_id += 1;
        Receiver {
            seen: state.version,
            id,
            channel: self.clone(),
        }
    }

    /// Replaces the value if `new` should replace it, waking the waiting receivers.
    pub(super) fn publish(&self, new: Desired) -> bool {
        let mut state = self.lock();
        if !state.value.should_replace_with(&new) {
            return false;
        }
        state.value = new;
        state.version += 1;
        state.wake();
        true
    }

    /// Publishes `new` if nothing was published yet; returns whether it did.
    pub(super) fn publish_first(&self, new: Desired) -> bool {
        let mut state = self.lock();
        if !matches!(state.value, Desired::Pending) {
            return false;
        }
        state.value = new;
        state.version += 1;
        state.wake();
        true
    }

    /// Wakes every waiting receiver (the version unchanged): they look again at
    /// whatever else they wait for (a drain).
    pub(super) fn wake(&self) {
        self.lock().wake();
    }

    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.wake();
    }
}

impl State {
    fn wake(&mut self) {
        // Drained, not dropped: the capacity is kept for the next wait.
        for (_, waker) in self.waiting.drain(..) {
            waker.wake();
        }
    }
}

/// The index went away: nothing will be published any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// A subscription to one cluster's published state (as a `watch::Receiver`).
#[derive(Debug)]
pub struct Receiver {
    channel: Arc<Channel>,
    /// The version last seen.
    seen: u64,
    id: u64,
}

/// A published value, read from a [`Receiver`].
#[derive(Debug)]
pub struct Ref(Desired);

impl std::ops::Deref for Ref {
    type Target = Desired;
    fn deref(&self) -> &Desired {
        &self.0
    }
}

impl Ref {
    /// The value itself.
    pub fn into_inner(self) -> Desired {
        self.0
    }
}

impl Receiver {
    /// The current value, without marking it seen.
    pub fn borrow(&self) -> Ref {
        Ref(self.channel.lock().value.clone())
    }

    /// The current value, marked seen.
    pub fn borrow_and_update(&mut self) -> Ref {
        let state = self.channel.lock();
        self.seen = state.version;
        Ref(state.value.clone())
    }

    /// Whether the value changed since it was last seen; `Err` once the index is gone.
    pub fn has_changed(&self) -> Result<bool, Closed> {
        let state = self.channel.lock();
        if state.version != self.seen {
            Ok(true)
        } else if state.closed {
            Err(Closed)
        } else {
            Ok(false)
        }
    }

    /// Ready when the value changed since it was last seen (it stays unseen: read
    /// it with [`Receiver::borrow_and_update`]), or the index is gone; otherwise
    /// the task is woken by the next change, or by [`super::Index::wake_all`].
    pub fn poll_changed(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Closed>> {
        let mut state = self.channel.lock();
        if state.version != self.seen {
            return Poll::Ready(Ok(()));
        }
        if state.closed {
            return Poll::Ready(Err(Closed));
        }
        match state.waiting.iter_mut().find(|(id, _)| *id == self.id) {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => {
                // One slot, not the four a first push reserves.
                state.waiting.reserve_exact(1);
                state.waiting.push((self.id, cx.waker().clone()));
            }
        }
        Poll::Pending
    }

    /// Waits until the value changed since it was last seen (as `watch::Receiver::changed`,
    /// except that the value stays unseen until read).
    pub async fn changed(&mut self) -> Result<(), Closed> {
        std::future::poll_fn(|cx| self.poll_changed(cx)).await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut state = self.channel.lock();
        state.receivers -= 1;
        state.waiting.retain(|(id, _)| *id != self.id);
    }
}
