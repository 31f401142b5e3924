//! The rate-limited timed queue of nodes waiting to be tainted (upstream
//! `pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go`), with its token-bucket
//! limiter (client-go `flowcontrol.NewTokenBucketRateLimiter`).
//!
//! A value is queued at most once: it stays in the queue's set after it was processed
//! successfully, until [`RateLimitedTimedQueue::remove`] forgets it, so a node is
//! tainted once per unhealthy spell.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How often the tainting pass runs (upstream `NodeEvictionPeriod`).
pub const NODE_EVICTION_PERIOD: Duration = Duration::from_millis(100);
/// The limiter's burst (upstream `EvictionRateLimiterBurst`).
pub const EVICTION_RATE_LIMITER_BURST: f64 = 1.0;

/// A node waiting in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedValue {
    /// The node's name.
    pub value: String,
    /// The node's UID when it was queued.
    pub uid: String,
    /// When it was queued.
    pub added_at: Instant,
    /// When it may be processed next.
    pub process_at: Instant,
}

/// A token bucket of `qps` tokens a second holding at most `burst`, full at the start;
/// `qps <= 0` never accepts (upstream's fake never-limiter used to stop evictions).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    qps: f32,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f32, burst: f64) -> Self {
        TokenBucket {
            qps,
            burst,
            tokens: burst,
            last: None,
        }
    }

    /// The rate (0 for a limiter that never accepts).
    pub fn qps(&self) -> f32 {
        self.qps.max(0.0)
    }

    /// Take a token at `now` if one is there.
    pub fn try_accept(&mut self, now: Instant) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        if let Some(last) = self.last {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * f64::from(self.qps)).min(self.burst);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Unique timed values ordered by `process_at` (then by insertion), plus the set of
/// values it holds or has processed (upstream `UniqueQueue`).
#[derive(Debug, Default)]
struct UniqueQueue {
    queue: Vec<TimedValue>,
    set: BTreeSet<String>,
}

impl UniqueQueue {
    fn add(&mut self, v: TimedValue) -> bool {
        if !self.set.insert(v.value.clone()) {
            return false;
        }
        self.push(v);
        true
    }

    fn push(&mut self, v: TimedValue) {
        // stable: after every value due at the same time or earlier
        let at = self.queue.partition_point(|q| q.process_at <= v.process_at);
        self.queue.insert(at, v);
    }

    fn replace(&mut self, v: TimedValue) -> bool {
        let Some(i) = self.queue.iter().position(|q| q.value == v.value) else {
            return false;
        };
        self.queue.remove(i);
        self.push(v);
        true
    }

    fn remove_from_queue(&mut self, value: &str) -> bool {
        if !self.set.contains(value) {
            return false;
        }
        match self.queue.iter().position(|q| q.value == value) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, value: &str) -> bool {
        if !self.set.remove(value) {
            return false;
        }
        if let Some(i) = self.queue.iter().position(|q| q.value == value) {
            self.queue.remove(i);
        }
        true
    }

    fn head(&self) -> Option<TimedValue> {
        self.queue.first().cloned()
    }

    fn clear(&mut self) {
        self.queue.clear();
        self.set.clear();
    }
}

/// The queue of one zone's nodes to taint, processed at the zone's eviction rate.
#[derive(Debug)]
pub struct RateLimitedTimedQueue {
    queue: UniqueQueue,
    limiter: TokenBucket,
}

impl RateLimitedTimedQueue {
    /// An empty queue limited by `limiter`.
    pub fn new(limiter: TokenBucket) -> Self {
        RateLimitedTimedQueue {
            queue: UniqueQueue::default(),
            limiter,
        }
    }

    /// Queue `value` (due at once) unless it is queued or was processed and not
    /// removed since; whether it was added.
    pub fn add(&mut self, value: &str, uid: &str, now: Instant) -> bool {
        self.queue.add(TimedValue {
            value: value.to_string(),
            uid: uid.to_string(),
            added_at: now,
            process_at: now,
        })
    }

    /// Forget `value` (queued or processed); whether it was known.
    pub fn remove(&mut self, value: &str) -> bool {
        self.queue.remove(value)
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.queue.clear();
    }

    /// The queued values in processing order.
    pub fn queued(&self) -> Vec<&str> {
        self.queue.queue.iter().map(|v| v.value.as_str()).collect()
    }

    /// The values queued or processed and not removed since.
    pub fn known(&self) -> Vec<&str> {
        self.queue.set.iter().map(String::as_str).collect()
    }

    /// The current rate.
    pub fn qps(&self) -> f32 {
        self.limiter.qps()
    }

    /// Change the rate (upstream `SwapLimiter`): 0 or less stops processing; a new
    /// bucket starts empty when the old one had no token left.
    pub fn swap_limiter(&mut self, qps: f32, now: Instant) {
        if self.limiter.qps() == qps.max(0.0) {
            return;
        }
        let mut next = TokenBucket::new(qps, EVICTION_RATE_LIMITER_BURST);
        if qps > 0.0 && !self.limiter.try_accept(now) {
            next.try_accept(now);
        }
        self.limiter = next;
    }

    /// The next value to process at `now`, taking a token for it: `None` when the
    /// queue is empty, the limiter refuses, or the head is not due yet.
    pub fn next_due(&mut self, now: Instant) -> Option<TimedValue> {
        let head = self.queue.head()?;
        if !self.limiter.try_accept(now) || now < head.process_at {
            return None;
        }
        Some(head)
    }

    /// Record the outcome of processing `value` at `now`: done (it leaves the queue but
    /// stays known), or retried after `wait` (unless it was removed meanwhile).
    pub fn finish(&mut self, mut value: TimedValue, done: bool, wait: Duration, now: Instant) {
        if done {
            self.queue.remove_from_queue(&value.value);
        } else {
            value.process_at = now + wait + Duration::from_nanos(1);
            self.queue.replace(value);
        }
    }

    /// Process due values with `f` (returns done, or the wait before a retry) while the
    /// limiter allows (upstream `Try`); `now` is asked before each value.
    pub fn try_each(
        &mut self,
        mut now: impl FnMut() -> Instant,
        mut f: impl FnMut(&mut Self, &TimedValue) -> (bool, Duration),
    ) {
        loop {
            let at = now();
            let Some(v) = self.next_due(at) else {
                return;
            };
            let (done, wait) = f(self, &v);
            self.finish(v, done, wait, at);
        }
    }
}
