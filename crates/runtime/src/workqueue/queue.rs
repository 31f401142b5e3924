//! The queue: dedup, a processing set, delays and the hand-off to workers.
//!
//! The state sits behind one [`std::sync::Mutex`] (the design of client-go's `Typed` queue,
//! whose `sync.Cond` becomes [`tokio::sync::Notify`] here so that workers are async tasks):
//!
//! - `slots` holds each key the queue knows with its hash and flags: *dirty* (waiting to
//!   be handed out) and *processing* (handed out, `done` not yet called). A key has a slot
//!   iff it is dirty or processing, so an add of a key that is already dirty is folded into
//!   it, and a key that is re-added while it is processing stays out of `queue` until its
//!   `done`. Freed slots are reused last-freed first, so the live ones stay in cache;
//! - `index` finds a key's slot by hash: a table of 4-byte slot numbers (the keys stay in
//!   `slots`), small enough to stay cached with 100,000 keys where a map holding the keys
//!   themselves missed the cache on most lookups;
//! - `queue` holds the slots of the dirty keys that are not processing, in FIFO order (so
//!   handing a key out needs no hash lookup; the worker gets a clone of the key);
//! - `delayed` is a min-heap of `(ready_at, key)` for `add_after`, with `waiting` mapping
//!   each delayed key to its live heap entry, so that a shorter delay for a key already
//!   waiting replaces the longer one (upstream's `waitingForQueue` / `insert`) and the
//!   superseded heap entry is skipped when it surfaces.
//!
//! **Inbox.** `add` does not take that lock: it appends the key to a small *inbox* (a
//! `Vec` behind its own lock, held for one push) and returns. Every operation that takes the
//! state lock first moves the inbox into the state, in order, so what callers observe is
//! the same as if each add had been applied at once: FIFO order, dedup, a key re-added
//! before its `done` queued again by that `done`, `len` counting it. Producers (informer
//! event handlers) thus never wait behind workers, and workers apply adds in batches. The
//! inbox is bounded: the add that fills it to `INBOX_FLUSH` (1024) keys applies it itself, so memory
//! stays proportional to the distinct keys, as upstream.
//!
//! **Waking.** A worker that finds nothing to do parks, counted in `idle` and waiting on
//! the `ready` notifier; at most one of them is also the *timer leader*, which sleeps until
//! the earliest delayed key is due (or is poked by an earlier `add_after`) and then moves the
//! due keys to `queue`. The add that makes the inbox non-empty claims one parked worker from
//! `idle` and wakes it with `notify_one`; whoever applies the inbox (or requeues a key in
//! `done`, or promotes due keys) wakes one more parked worker per further key queued. So
//! there is no thundering herd, no background task, and no wake-up at all when every worker
//! is busy (they see the keys on their next `get`). A worker counts itself in `idle` before
//! its last look at the inbox and an add pushes before it looks at `idle` (both with
//! `SeqCst` fences), so one of them always sees the other. `idle` is decremented only by
//! whoever wakes a worker, so it can over-count (a cancelled `get`, a leader woken by its
//! timer) but never under-count the parked workers; an over-count costs one spurious
//! wake-up at most.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};

/// Key hashing for the queue's maps: foldhash (fast, seeded per process) instead of
/// SipHash, which dominated the add/get profile with string keys.
type FastHash = foldhash::fast::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use std::pin::pin;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering as Atomic};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::fifo::Fifo;
use super::metrics::{QueueMetrics, UnfinishedWork};
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};

/// What a queue key must be: cheap enough to clone, hashable, shareable across tasks.
///
/// Implemented for every such type; controllers use a `Request { namespace, name }`.
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueKey for T {}

/// Delays longer than this (about 30 years) are treated as this: "practically never".
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// The add that brings the inbox to this many keys applies the inbox itself.
const INBOX_FLUSH: usize = 1024;

/// Options of a [`RateLimitedQueue`]; the defaults are controller-runtime's.
pub struct QueueConfig<K> {
    /// Name of the queue, for the metrics' `name` label and the logs. Default: empty.
    pub name: String,
    /// Decides the delay of [`RateLimitedQueue::add_rate_limited`]. Default:
    /// [`default_controller_rate_limiter`].
    pub rate_limiter: Box<dyn RateLimiter<K>>,
    /// Receives the queue's measurements. Default: `None`, which records nothing and keeps
    /// clock reads off the hot path (then [`RateLimitedQueue::unfinished_work`] is zero).
    pub metrics: Option<Arc<dyn QueueMetrics>>,
}

impl<K: QueueKey> Default for QueueConfig<K> {
    fn default() -> Self {
        Self {
            name: String::new(),
            rate_limiter: Box::new(default_controller_rate_limiter()),
            metrics: None,
        }
    }
}

impl<K> fmt::Debug for QueueConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

/// A work queue for controllers: deduplicating, never handing one key to two workers at
/// once, with delayed and rate-limited adds. See the [module docs](super) for the model.
///
/// The handle is cheap to clone (an [`Arc`] inside); clones share one queue.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use coxswain_runtime::workqueue::RateLimitedQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = RateLimitedQueue::new();
/// queue.add("default/web");
/// queue.add("default/web"); // already waiting: folded into the first add
/// queue.add_after("default/db", Duration::from_secs(5));
/// assert_eq!(queue.len(), 1);
///
/// let key = queue.get().await.unwrap();
/// assert_eq!(key, "default/web");
/// // ... reconcile `key`; on error `queue.add_rate_limited(key)`, on success:
/// queue.forget(&key);
/// queue.done(&key);
///
/// // "default/db" comes out once its delay has passed.
/// assert_eq!(queue.get().await, Some("default/db"));
/// queue.done(&"default/db");
///
/// queue.shut_down();
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct RateLimitedQueue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for RateLimitedQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for RateLimitedQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inbox = self.inner.inbox_len.load(Atomic::Relaxed);
        let st = self.inner.lock();
        f.debug_struct("RateLimitedQueue")
            .field("name", &self.inner.name)
            .field("queued", &(st.queue.len() + inbox))
            .field("processing", &st.processing)
            .field("delayed", &st.waiting.len())
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

/// A key added but not yet applied to the state, with its add time (metrics only).
type Pending<K> = (K, Option<Instant>);

/// Keeps what producers write (the inbox) and what workers write (the state lock, the
/// idle count) on separate cache lines.
#[repr(align(128))]
struct CacheLine<T>(T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

struct Inner<K> {
    name: String,
    state: CacheLine<Mutex<State<K>>>,
    /// Keys added since the state lock was last taken, in add order.
    inbox: CacheLine<Mutex<Vec<Pending<K>>>>,
    /// `inbox.len()`, written under the inbox lock; read without it.
    inbox_len: CacheLine<AtomicUsize>,
    /// Parked getters that no waker has claimed yet (may over-count, never under-counts).
    idle: AtomicUsize,
    /// Mirrors `State::shutting_down`, for `add` (which does not take the state lock).
    closed: AtomicBool,
    /// Parked getters wait here.
    ready: Notify,
    /// The timer leader also waits here, for an earlier deadline.
    timer: Notify,
    /// `shut_down_with_drain` waits here for the processing set to empty.
    drained: Notify,
    rate_limiter: Box<dyn RateLimiter<K>>,
    metrics: Option<Arc<dyn QueueMetrics>>,
}

/// Per-key flags; a key has an entry iff it is dirty or processing.
#[derive(Clone, Copy, Default)]
struct Item {
    dirty: bool,
    processing: bool,
}

/// Per-key times, kept apart from [`Item`] so that the flags stay compact; written and read
/// only when the queue has metrics.
#[derive(Clone, Copy, Default)]
struct Times {
    /// When the key became dirty.
    dirtied_at: Option<Instant>,
    /// When the key was handed out.
    started_at: Option<Instant>,
}

/// A delayed add; ordered so that the max-heap pops the earliest (then oldest) first.
struct Delayed<K> {
    ready_at: Instant,
    seq: u64,
    key: K,
}

impl<K> PartialEq for Delayed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}

impl<K> Eq for Delayed<K> {}

impl<K> PartialOrd for Delayed<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Delayed<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .ready_at
            .cmp(&self.ready_at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A key the queue knows (dirty or processing), or a free slot (`key` is `None`).
struct Known<K> {
    key: Option<K>,
    hash: u64,
    item: Item,
}

struct State<K> {
    /// Slots of the dirty keys not processing, FIFO.
    queue: Fifo<u32>,
    /// The slot of each known key, by key hash.
    index: HashTable<u32>,
    hasher: FastHash,
    /// The known keys, by slot; slots listed in `free` are unused.
    slots: Vec<Known<K>>,
    /// Per-key times, by slot (same length as `slots`).
    times: Vec<Times>,
    free: Vec<u32>,
    /// Number of items with `processing` set.
    processing: usize,
    delayed: BinaryHeap<Delayed<K>>,
    /// Delayed key -> (ready_at, seq) of its live entry in `delayed`.
    waiting: HashMap<K, (Instant, u64), FastHash>,
    next_seq: u64,
    /// The deadline the timer leader sleeps until, if there is a leader.
    timer_leader: Option<Instant>,
    /// The leader has been poked and has not woken up yet.
    leader_poked: bool,
    /// The inbox's previous buffer, swapped back in when the inbox is applied (keeps its
    /// capacity: no allocation per batch).
    spare: Vec<Pending<K>>,
    shutting_down: bool,
    draining: bool,
}

/// Side effects decided under the lock, run after it by [`Inner::apply`].
#[derive(Default)]
struct Effects {
    idle_wakes: usize,
    wake_leader: bool,
    /// Keys that became dirty (adds and depth + 1 each).
    adds: usize,
    /// Dirty keys dropped by a shutdown (depth - 1 each).
    depth_drops: usize,
}

/// What an add did to a key.
#[derive(PartialEq, Eq)]
enum Added {
    /// Already dirty: nothing changed.
    Folded,
    /// Became dirty while processing: queued again by `done`.
    Dirtied,
    /// Became dirty and was queued.
    Queued,
}

/// What a `get` does after its look at the state.
enum Next<K> {
    Return(Option<K>),
    /// Look again at once: something arrived while parking.
    Retry,
    /// Wait for a wake-up (and, as timer leader, until the deadline).
    Park(Option<Instant>),
}

impl<K> Inner<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // No critical section panics half-way (metrics hooks run outside), so a poisoned
        // lock still guards consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_inbox(&self) -> MutexGuard<'_, Vec<Pending<K>>> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Clock read for metrics, only when metrics are recorded.
    fn stamp(&self) -> Option<Instant> {
        self.metrics.as_ref().map(|_| Instant::now())
    }

    /// Claims one parked getter to wake, if any.
    fn claim_idle(&self) -> bool {
        self.idle.load(Atomic::SeqCst) > 0
            && self
                .idle
                .fetch_update(Atomic::SeqCst, Atomic::SeqCst, |n| n.checked_sub(1))
                .is_ok()
    }

    /// A key was pushed to `queue`: wake one parked getter, if any.
    fn wake_for_push(&self, fx: &mut Effects) {
        if self.claim_idle() {
            fx.idle_wakes += 1;
        }
    }

    /// Runs what a critical section decided, after the lock is released.
    fn apply(&self, fx: Effects) {
        for _ in 0..fx.idle_wakes {
            self.ready.notify_one();
        }
        if fx.wake_leader {
            self.timer.notify_one();
        }
        if let Some(m) = &self.metrics {
            for _ in 0..fx.adds {
                m.inc_adds();
                m.inc_depth();
            }
            for _ in 0..fx.depth_drops {
                m.dec_depth();
            }
        }
    }
}

impl<K: QueueKey> Inner<K> {
    /// Applies the inbox to the state, in add order; returns how many keys were queued.
    ///
    /// The add that made the inbox non-empty woke a parked getter; the caller wakes more
    /// for the keys beyond the one that getter will take.
    fn apply_inbox(&self, st: &mut State<K>, fx: &mut Effects) -> usize {
        if self.inbox_len.load(Atomic::Acquire) == 0 {
            return 0;
        }
        let mut batch = std::mem::take(&mut st.spare);
        {
            let mut inbox = self.lock_inbox();
            std::mem::swap(&mut *inbox, &mut batch);
            self.inbox_len.store(0, Atomic::SeqCst);
        }
        // After a cancelling shutdown, adds that raced it are dropped.
        let keep = !st.shutting_down || st.draining;
        let mut queued = 0;
        for (key, stamp) in batch.drain(..) {
            if keep {
                match st.add(key, stamp) {
                    Added::Folded => {}
                    Added::Dirtied => fx.adds += 1,
                    Added::Queued => {
                        fx.adds += 1;
                        queued += 1;
                    }
                }
            }
        }
        st.spare = batch;
        queued
    }
}

impl<K: QueueKey> State<K> {
    fn new() -> Self {
        Self {
            queue: Fifo::default(),
            index: HashTable::new(),
            hasher: FastHash::default(),
            slots: Vec::new(),
            times: Vec::new(),
            free: Vec::new(),
            processing: 0,
            delayed: BinaryHeap::new(),
            waiting: HashMap::default(),
            next_seq: 0,
            timer_leader: None,
            leader_poked: false,
            spare: Vec::new(),
            shutting_down: false,
            draining: false,
        }
    }

    /// The slot of `key`, if the queue knows it.
    fn find(&self, hash: u64, key: &K) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash, |&s| {
                let known = &slots[s as usize];
                known.hash == hash && known.key.as_ref() == Some(key)
            })
            .copied()
    }

    fn add(&mut self, key: K, now: Option<Instant>) -> Added {
        let hash = self.hasher.hash_one(&key);
        if let Some(slot) = self.find(hash, &key) {
            let item = &mut self.slots[slot as usize].item;
            if item.dirty {
                return Added::Folded;
            }
            // Not dirty, so processing: `done` will queue it again.
            item.dirty = true;
            if now.is_some() {
                self.times[slot as usize].dirtied_at = now;
            }
            return Added::Dirtied;
        }
        let known = Known {
            key: Some(key),
            hash,
            item: Item {
                dirty: true,
                processing: false,
            },
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = known;
                slot
            }
            None => {
                self.slots.push(known);
                self.times.push(Times::default());
                (self.slots.len() - 1) as u32
            }
        };
        if now.is_some() {
            self.times[slot as usize] = Times {
                dirtied_at: now,
                started_at: None,
            };
        }
        let slots = &self.slots;
        self.index
            .insert_unique(hash, slot, |&s| slots[s as usize].hash);
        self.queue.push_back(slot);
        Added::Queued
    }

    /// Moves the delayed keys due at `now` into the queue; returns how many were queued.
    fn promote_due(&mut self, now: Instant, stamp: Option<Instant>, fx: &mut Effects) -> usize {
        let mut queued = 0;
        loop {
            let Some(top) = self.delayed.peek_mut() else {
                break;
            };
            if top.ready_at > now {
                break;
            }
            let Delayed { key, seq, .. } = PeekMut::pop(top);
            match self.waiting.get(&key) {
                Some(&(_, live)) if live == seq => {
                    self.waiting.remove(&key);
                }
                // Superseded by a shorter delay, already promoted.
                _ => continue,
            }
            match self.add(key, stamp) {
                Added::Folded => {}
                Added::Dirtied => fx.adds += 1,
                Added::Queued => {
                    fx.adds += 1;
                    queued += 1;
                }
            }
        }
        queued
    }

    /// Promotes due delayed keys if there are any; returns how many were queued.
    fn promote_if_due(&mut self, stamp: Option<Instant>, fx: &mut Effects) -> usize {
        if self.delayed.is_empty() {
            return 0;
        }
        let now = stamp.unwrap_or_else(Instant::now);
        self.promote_due(now, stamp, fx)
    }

    /// Hands the first queued key to a worker.
    fn pop(&mut self, now: Option<Instant>) -> Option<(K, Option<Duration>)> {
        while let Some(slot) = self.queue.pop_front() {
            let Some(Known {
                key: Some(key),
                item,
                ..
            }) = self.slots.get_mut(slot as usize)
            else {
                debug_assert!(false, "queued slot without a key");
                continue;
            };
            let key = key.clone();
            item.dirty = false;
            item.processing = true;
            let waited = match now {
                Some(now) => {
                    let times = &mut self.times[slot as usize];
                    times.started_at = Some(now);
                    times
                        .dirtied_at
                        .take()
                        .map(|since| now.saturating_duration_since(since))
                }
                None => None,
            };
            self.processing += 1;
            return Some((key, waited));
        }
        None
    }

    /// Records a delayed add; returns whether the timer needs a new leader.
    fn insert_delayed(&mut self, key: K, ready_at: Instant, fx: &mut Effects) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = match self.waiting.entry(key) {
            Entry::Occupied(mut entry) => {
                if entry.get().0 <= ready_at {
                    // Already due no later: the shorter delay wins.
                    return false;
                }
                *entry.get_mut() = (ready_at, seq);
                entry.key().clone()
            }
            Entry::Vacant(entry) => {
                let key = entry.key().clone();
                entry.insert((ready_at, seq));
                key
            }
        };
        self.delayed.push(Delayed { ready_at, seq, key });
        match self.timer_leader {
            Some(deadline) => {
                if ready_at < deadline && !self.leader_poked {
                    self.leader_poked = true;
                    fx.wake_leader = true;
                }
                false
            }
            None => true,
        }
    }

    /// Drops everything that waits for a worker (shutdown); returns how many dirty keys
    /// were dropped.
    fn drop_pending(&mut self, keep_dirty: bool) -> usize {
        self.delayed.clear();
        self.waiting.clear();
        if keep_dirty {
            return 0;
        }
        self.queue.clear();
        let mut dropped = 0;
        let (slots, free) = (&mut self.slots, &mut self.free);
        self.index.retain(|&mut slot| {
            let known = &mut slots[slot as usize];
            if known.item.dirty {
                dropped += 1;
                known.item.dirty = false;
            }
            if !known.item.processing {
                known.key = None;
                free.push(slot);
            }
            known.item.processing
        });
        dropped
    }
}

/// Clears the timer leadership of a `get` that stops leading, also when it is cancelled.
struct Leadership<'a, K: QueueKey> {
    inner: &'a Inner<K>,
    leading: bool,
}

impl<K: QueueKey> Leadership<'_, K> {
    fn resign(&mut self, st: &mut State<K>) {
        if self.leading {
            self.leading = false;
            st.timer_leader = None;
            st.leader_poked = false;
        }
    }
}

impl<K: QueueKey> Drop for Leadership<'_, K> {
    fn drop(&mut self) {
        if !self.leading {
            return;
        }
        let mut fx = Effects::default();
        {
            let mut st = self.inner.lock();
            self.resign(&mut st);
            // A cancelled leader hands the timer to another parked getter.
            if !st.delayed.is_empty() {
                self.inner.wake_for_push(&mut fx);
            }
        }
        self.inner.apply(fx);
    }
}

impl<K: QueueKey> Default for RateLimitedQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: QueueKey> RateLimitedQueue<K> {
    /// A queue with the defaults of [`QueueConfig`] (controller-runtime's rate limiter, no
    /// name, no metrics).
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue with the given rate limiter and otherwise default options.
    ///
    /// ```
    /// use std::time::Duration;
    /// use coxswain_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimitedQueue};
    ///
    /// let queue: RateLimitedQueue<String> = RateLimitedQueue::with_rate_limiter(
    ///     ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1)),
    /// );
    /// # drop(queue);
    /// ```
    pub fn with_rate_limiter(rate_limiter: impl RateLimiter<K> + 'static) -> Self {
        Self::with_config(QueueConfig {
            rate_limiter: Box::new(rate_limiter),
            ..QueueConfig::default()
        })
    }

    /// A queue with the given options.
    pub fn with_config(config: QueueConfig<K>) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: config.name,
                state: CacheLine(Mutex::new(State::new())),
                inbox: CacheLine(Mutex::new(Vec::new())),
                inbox_len: CacheLine(AtomicUsize::new(0)),
                idle: AtomicUsize::new(0),
                closed: AtomicBool::new(false),
                ready: Notify::new(),
                timer: Notify::new(),
                drained: Notify::new(),
                rate_limiter: config.rate_limiter,
                metrics: config.metrics,
            }),
        }
    }

    /// The queue's name from its config.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Marks `key` as needing processing.
    ///
    /// A key already waiting is not added twice; a key being processed is handed out again
    /// after its [`done`](Self::done). Ignored once the queue is shutting down.
    pub fn add(&self, key: K) {
        let inner = &*self.inner;
        if inner.closed.load(Atomic::Acquire) {
            return;
        }
        let stamp = inner.stamp();
        let len = {
            let mut inbox = inner.lock_inbox();
            inbox.push((key, stamp));
            let len = inbox.len();
            inner.inbox_len.store(len, Atomic::Release);
            len
        };
        let mut fx = Effects::default();
        if len == 1 {
            // The inbox was empty: wake a parked getter to apply it. Later adds to a
            // non-empty inbox leave it to whoever applies it (see `apply_inbox`), so only
            // this add needs the fence. Pairs with the fence in `get`: either this sees its
            // `idle` count or it sees the inbox non-empty.
            fence(Atomic::SeqCst);
            inner.wake_for_push(&mut fx);
        }
        if len >= INBOX_FLUSH {
            let mut st = inner.lock();
            let queued = inner.apply_inbox(&mut st, &mut fx);
            for _ in 0..queued {
                inner.wake_for_push(&mut fx);
            }
        }
        inner.apply(fx);
    }

    /// Adds `key` once `delay` has passed (at once if `delay` is zero).
    ///
    /// While the key waits, another `add_after` of it with a shorter delay brings it
    /// forward, and one with a longer delay changes nothing; a plain [`add`](Self::add)
    /// meanwhile adds it at once (and it is added again when its delay ends). Counts a retry
    /// in the metrics. Ignored once the queue is shutting down.
    pub fn add_after(&self, key: K, delay: Duration) {
        let inner = &*self.inner;
        if inner.closed.load(Atomic::Acquire) {
            return;
        }
        if let Some(m) = &inner.metrics {
            m.inc_retries();
        }
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let mut fx = Effects::default();
        {
            let mut st = inner.lock();
            if st.shutting_down {
                return;
            }
            let queued = inner.apply_inbox(&mut st, &mut fx);
            for _ in 0..queued {
                inner.wake_for_push(&mut fx);
            }
            let ready_at = Instant::now() + delay.min(FAR_FUTURE);
            if st.insert_delayed(key, ready_at, &mut fx) {
                // Wake a parked getter to become the timer leader; if there is none, every
                // worker is busy and the next `get` promotes the key when it is due.
                inner.wake_for_push(&mut fx);
            }
        }
        inner.apply(fx);
    }

    /// Adds `key` after the delay its rate limiter gives (which records one more retry of
    /// `key`).
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.inner.rate_limiter.when(&key);
        self.add_after(key, delay);
    }

    /// Tells the rate limiter to stop tracking `key` (call it when `key` was processed
    /// successfully). It does not remove `key` from the queue.
    pub fn forget(&self, key: &K) {
        self.inner.rate_limiter.forget(key);
    }

    /// How many times `key` was rate-limited since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.inner.rate_limiter.num_requeues(key)
    }

    /// Number of keys ready to be handed out (not those being processed, nor those whose
    /// delay has not passed yet).
    pub fn len(&self) -> usize {
        let inner = &*self.inner;
        let mut fx = Effects::default();
        let len = {
            let mut st = inner.lock();
            let queued =
                inner.apply_inbox(&mut st, &mut fx) + st.promote_if_due(inner.stamp(), &mut fx);
            for _ in 0..queued {
                inner.wake_for_push(&mut fx);
            }
            st.queue.len()
        };
        inner.apply(fx);
        len
    }

    /// Whether no key is ready to be handed out (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for a key to process and marks it as processing; `None` once the queue is shut
    /// down (at once after [`shut_down`](Self::shut_down); after
    /// [`shut_down_with_drain`](Self::shut_down_with_drain), once no key is queued).
    ///
    /// The caller must call [`done`](Self::done) with the key when it has finished with it.
    /// Cancel-safe: a `get` dropped before it returns takes no key.
    pub async fn get(&self) -> Option<K> {
        let inner = &*self.inner;
        let mut leadership = Leadership {
            inner,
            leading: false,
        };
        loop {
            let mut ready = pin!(inner.ready.notified());
            let mut rearm = pin!(inner.timer.notified());
            let stamp = inner.stamp();
            let mut fx = Effects::default();
            let next = {
                let mut st = inner.lock();
                leadership.resign(&mut st);
                let queued =
                    inner.apply_inbox(&mut st, &mut fx) + st.promote_if_due(stamp, &mut fx);
                if let Some((key, waited)) = st.pop(stamp) {
                    // Keys queued beyond ours go to other parked getters.
                    for _ in 1..queued {
                        inner.wake_for_push(&mut fx);
                    }
                    // If delayed keys remain and nobody watches the clock, wake a getter to.
                    if st.timer_leader.is_none() && !st.delayed.is_empty() {
                        inner.wake_for_push(&mut fx);
                    }
                    if let Some(m) = &inner.metrics {
                        m.dec_depth();
                        if let Some(waited) = waited {
                            m.observe_queue_duration(waited);
                        }
                    }
                    Next::Return(Some(key))
                } else if st.shutting_down {
                    Next::Return(None)
                } else {
                    inner.idle.fetch_add(1, Atomic::SeqCst);
                    ready.as_mut().enable();
                    // Pairs with the fence in `add`.
                    fence(Atomic::SeqCst);
                    if inner.inbox_len.load(Atomic::SeqCst) != 0 {
                        // An add raced the parking: look again (our `idle` count stays, an
                        // over-count).
                        Next::Retry
                    } else {
                        match st.delayed.peek().map(|next| next.ready_at) {
                            Some(deadline) if st.timer_leader.is_none() => {
                                st.timer_leader = Some(deadline);
                                st.leader_poked = false;
                                leadership.leading = true;
                                rearm.as_mut().enable();
                                Next::Park(Some(deadline))
                            }
                            _ => Next::Park(None),
                        }
                    }
                }
            };
            inner.apply(fx);
            match next {
                Next::Return(key) => return key,
                Next::Retry => {}
                Next::Park(None) => ready.await,
                Next::Park(Some(deadline)) => {
                    tokio::select! {
                        biased;
                        () = ready.as_mut() => {}
                        () = rearm.as_mut() => {}
                        () = sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    /// Marks `key` as no longer processing. If it was added meanwhile, it is queued again.
    ///
    /// A `done` for a key that is not being processed is ignored.
    pub fn done(&self, key: &K) {
        let inner = &*self.inner;
        let stamp = inner.stamp();
        let mut fx = Effects::default();
        let (started, drained, _released) = {
            let mut guard = inner.lock();
            let st = &mut *guard;
            let queued = inner.apply_inbox(st, &mut fx);
            for _ in 0..queued {
                inner.wake_for_push(&mut fx);
            }
            let hash = st.hasher.hash_one(key);
            let Some(slot) = st.find(hash, key) else {
                drop(guard);
                inner.apply(fx);
                tracing::debug!(queue = %inner.name, "done for a key that is not known");
                return;
            };
            let item = &mut st.slots[slot as usize].item;
            if !item.processing {
                drop(guard);
                inner.apply(fx);
                tracing::debug!(queue = %inner.name, "done for a key that is not being processed");
                return;
            }
            item.processing = false;
            let requeue = item.dirty;
            let started = st.times[slot as usize].started_at.take();
            let released = if requeue {
                // Re-added while processing: queue it again.
                st.queue.push_back(slot);
                inner.wake_for_push(&mut fx);
                None
            } else {
                if let Ok(entry) = st.index.find_entry(hash, |&s| s == slot) {
                    entry.remove();
                }
                st.free.push(slot);
                // Dropped after the lock is released.
                st.slots[slot as usize].key.take()
            };
            st.processing -= 1;
            (started, st.draining && st.processing == 0, released)
        };
        inner.apply(fx);
        if drained {
            inner.drained.notify_waiters();
        }
        if let (Some(m), Some(now), Some(started)) = (&inner.metrics, stamp, started) {
            m.observe_work_duration(now.saturating_duration_since(started));
        }
    }

    /// Shuts the queue down at once: later adds are ignored, queued and delayed keys are
    /// dropped, and every `get`, waiting or future, returns `None`.
    ///
    /// Keys being processed may still be passed to [`done`](Self::done). Also ends a
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) that is waiting.
    ///
    /// Unlike client-go, whose `Get` keeps handing out the queued keys after `ShutDown`,
    /// this drops them: cancel means stop now; drain is the graceful variant.
    pub fn shut_down(&self) {
        let inner = &*self.inner;
        inner.closed.store(true, Atomic::SeqCst);
        let mut fx = Effects::default();
        {
            let mut st = inner.lock();
            st.shutting_down = true;
            st.draining = false;
            inner.apply_inbox(&mut st, &mut fx);
            fx.depth_drops = st.drop_pending(false);
            inner.idle.store(0, Atomic::SeqCst);
        }
        self.wake_all();
        inner.drained.notify_waiters();
        inner.apply(fx);
    }

    /// Shuts the queue down gracefully and waits until no key is being processed.
    ///
    /// Later adds are ignored and delayed keys are dropped, but `get` keeps handing out the
    /// queued keys (including those re-added while processing, queued again by their
    /// `done`) and returns `None` only when none is queued, as client-go's
    /// `ShutDownWithDrain`. Returns when the processing set is empty, or when
    /// [`shut_down`](Self::shut_down) is called meanwhile.
    pub async fn shut_down_with_drain(&self) {
        let inner = &*self.inner;
        inner.closed.store(true, Atomic::SeqCst);
        let mut fx = Effects::default();
        {
            let mut st = inner.lock();
            st.shutting_down = true;
            st.draining = true;
            inner.apply_inbox(&mut st, &mut fx);
            st.drop_pending(true);
            inner.idle.store(0, Atomic::SeqCst);
        }
        inner.apply(fx);
        self.wake_all();
        loop {
            let mut drained = pin!(inner.drained.notified());
            {
                let st = inner.lock();
                if st.processing == 0 || !st.draining {
                    return;
                }
                drained.as_mut().enable();
            }
            drained.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.closed.load(Atomic::Acquire)
    }

    /// The in-flight work: how long the keys being processed have been processed.
    ///
    /// Computed from the processing start times, which are recorded only when the queue has
    /// metrics (see [`QueueConfig::metrics`]); zero otherwise.
    pub fn unfinished_work(&self) -> UnfinishedWork {
        let now = Instant::now();
        let st = self.inner.lock();
        UnfinishedWork::from_ages(
            st.slots
                .iter()
                .zip(&st.times)
                .filter(|(known, _)| known.item.processing)
                .filter_map(|(_, times)| times.started_at)
                .map(|started| now.saturating_duration_since(started)),
        )
    }

    /// Sends [`unfinished_work`](Self::unfinished_work) to the metrics' two gauges
    /// (`workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`).
    /// An exporter calls it periodically (client-go: every 500 ms); it does nothing once the
    /// queue is shutting down, or without metrics.
    pub fn update_unfinished_work_metrics(&self) {
        let Some(metrics) = &self.inner.metrics else {
            return;
        };
        if self.is_shutting_down() {
            return;
        }
        self.unfinished_work().report(metrics.as_ref());
    }

    /// Wakes every parked getter and the timer leader (shutdown).
    fn wake_all(&self) {
        self.inner.ready.notify_waiters();
        self.inner.timer.notify_waiters();
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
