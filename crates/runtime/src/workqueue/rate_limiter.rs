//! Rate limiters: how long a key must wait before it is retried.
//!
//! When a reconcile fails, the controller puts the key back with
//! [`RateLimitedQueue::add_rate_limited`](super::RateLimitedQueue::add_rate_limited), which
//! asks the queue's [`RateLimiter`] for a delay and adds the key after it. When a reconcile
//! succeeds, the controller calls `forget` so that the key's next failure starts from the
//! shortest delay again. The limiters are those of client-go's
//! `util/workqueue/default_rate_limiters.go`:
//!
//! - [`ItemExponentialFailureRateLimiter`]: per key, `base * 2^failures`, capped at a maximum;
//! - [`BucketRateLimiter`]: one token bucket shared by all keys (overall retry rate), with the
//!   reservation semantics of `golang.org/x/time/rate`;
//! - [`ItemFastSlowRateLimiter`]: per key, a fast delay for the first attempts, then a slow one;
//! - [`MaxOfRateLimiter`]: the longest delay of several limiters;
//! - [`WithMaxWaitRateLimiter`]: caps another limiter's delay.
//!
//! [`default_controller_rate_limiter`] combines the first two as controller-runtime does for
//! every controller: `max(exponential 5 ms .. 1000 s, bucket 10 qps burst 100)`.
//!
//! Time comes from [`tokio::time::Instant`], so tests can pause and advance it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Decides how long a key waits before it is retried.
///
/// `when` is called once per retry and records it; `forget` clears what is recorded for a
/// key (it is done retrying, successfully or not); `num_requeues` tells how many retries
/// are recorded for a key.
pub trait RateLimiter<K>: Send + Sync {
    /// The delay before `key` may be retried; records one more failure of `key`.
    fn when(&self, key: &K) -> Duration;
    /// Stops tracking `key`: its next delay starts from scratch.
    fn forget(&self, key: &K);
    /// How many times `key` has been retried since it was last forgotten.
    fn num_requeues(&self, key: &K) -> u32;
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Box<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key)
    }
    fn num_requeues(&self, key: &K) -> u32 {
        (**self).num_requeues(key)
    }
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Arc<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key)
    }
    fn num_requeues(&self, key: &K) -> u32 {
        (**self).num_requeues(key)
    }
}

/// Controller-runtime's default: the longer of a per-key exponential backoff from 5 ms to
/// 1000 s and an overall token bucket of 10 retries per second with a burst of 100.
///
/// ```
/// use std::time::Duration;
/// use coxswain_runtime::workqueue::{default_controller_rate_limiter, RateLimiter};
///
/// let limiter = default_controller_rate_limiter::<&str>();
/// assert_eq!(limiter.when(&"default/web"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"default/web"), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&"default/web"), 2);
/// ```
pub fn default_controller_rate_limiter<K>() -> MaxOfRateLimiter<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::<K>::default()),
        Box::new(BucketRateLimiter::default()),
    ])
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The limiters' critical sections never panic half-way; a poisoned lock still holds
    // consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Per key, `base_delay * 2^failures`, capped at `max_delay`.
///
/// Defaults (controller-runtime's): base 5 ms, max 1000 s. The computation saturates: no
/// number of failures overflows.
///
/// ```
/// use std::time::Duration;
/// use coxswain_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_millis(15));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(15)); // capped
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
pub struct ItemExponentialFailureRateLimiter<K> {
    failures: Mutex<HashMap<K, u32>>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<K> ItemExponentialFailureRateLimiter<K> {
    /// Base delay of controller-runtime's default controller rate limiter.
    pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
    /// Maximum delay of controller-runtime's default controller rate limiter.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);

    /// A limiter starting at `base_delay` and never exceeding `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            base_delay,
            max_delay,
        }
    }

    /// `base * 2^exp`, or `max` when that is larger or does not fit.
    fn backoff(&self, exp: u32) -> Duration {
        let base = self.base_delay.as_nanos();
        let Some(factor) = 1u128.checked_shl(exp).filter(|_| exp < 127) else {
            return self.max_delay;
        };
        match base.checked_mul(factor) {
            Some(nanos) if nanos < self.max_delay.as_nanos() => {
                // nanos < max_delay's nanos, so it fits a Duration.
                Duration::new(
                    (nanos / 1_000_000_000) as u64,
                    (nanos % 1_000_000_000) as u32,
                )
            }
            _ => self.max_delay,
        }
    }
}

impl<K> Default for ItemExponentialFailureRateLimiter<K> {
    /// 5 ms doubling up to 1000 s.
    fn default() -> Self {
        Self::new(Self::DEFAULT_BASE_DELAY, Self::DEFAULT_MAX_DELAY)
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let exp = {
            let mut failures = lock(&self.failures);
            match failures.get_mut(key) {
                Some(count) => {
                    let exp = *count;
                    *count = count.saturating_add(1);
                    exp
                }
                None => {
                    failures.insert(key.clone(), 1);
                    0
                }
            }
        };
        self.backoff(exp)
    }

    fn forget(&self, key: &K) {
        lock(&self.failures).remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.failures).get(key).copied().unwrap_or(0)
    }
}

/// Per key, `fast_delay` for the first `max_fast_attempts` retries, `slow_delay` after.
///
/// ```
/// use std::time::Duration;
/// use coxswain_runtime::workqueue::{ItemFastSlowRateLimiter, RateLimiter};
///
/// let limiter = ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 1);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// ```
pub struct ItemFastSlowRateLimiter<K> {
    failures: Mutex<HashMap<K, u32>>,
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: u32,
}

impl<K> ItemFastSlowRateLimiter<K> {
    /// A limiter answering `fast_delay` for the first `max_fast_attempts` retries of a key.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: u32) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            fast_delay,
            slow_delay,
            max_fast_attempts,
        }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemFastSlowRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let attempts = {
            let mut failures = lock(&self.failures);
            match failures.get_mut(key) {
                Some(count) => {
                    *count = count.saturating_add(1);
                    *count
                }
                None => {
                    failures.insert(key.clone(), 1);
                    1
                }
            }
        };
        if attempts <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    fn forget(&self, key: &K) {
        lock(&self.failures).remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.failures).get(key).copied().unwrap_or(0)
    }
}

/// A token bucket shared by all keys: at most `burst` retries at once, refilled at `qps`
/// per second.
///
/// Every `when` reserves one token, as `golang.org/x/time/rate`'s `Limiter.Reserve()`: it
/// returns zero while tokens are left and otherwise the time until the token it borrowed
/// will have been refilled, so that successive calls are spaced `1/qps` apart. Tokens can
/// go negative; a reservation is never refused except when `burst` is 0 (no token can ever
/// be had), where the delay is [`Duration::MAX`]. A `qps` of `f64::INFINITY` never delays.
/// It tracks no key: `forget` does nothing and `num_requeues` is 0.
///
/// Defaults (controller-runtime's): 10 qps, burst 100.
///
/// ```
/// use std::time::Duration;
/// use coxswain_runtime::workqueue::{BucketRateLimiter, RateLimiter};
///
/// let limiter = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"b"), Duration::ZERO);
/// // The bucket is empty: the third retry waits for a token (about 100 ms).
/// assert!(RateLimiter::<&str>::when(&limiter, &"c") > Duration::from_millis(90));
/// ```
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    bucket: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

impl BucketRateLimiter {
    /// Retries per second of controller-runtime's default controller rate limiter.
    pub const DEFAULT_QPS: f64 = 10.0;
    /// Burst of controller-runtime's default controller rate limiter.
    pub const DEFAULT_BURST: u32 = 100;

    /// A full bucket of `burst` tokens refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        }
    }

    /// Reserves one token now and returns how long to wait until it is available.
    pub fn reserve(&self) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut bucket = lock(&self.bucket);
        if self.burst == 0 {
            return Duration::MAX;
        }
        // Refill for the time elapsed since the last reservation (never for time going
        // backwards), up to the burst.
        let elapsed = now.saturating_duration_since(bucket.last);
        let refilled = if self.qps > 0.0 {
            elapsed.as_secs_f64() * self.qps
        } else {
            0.0
        };
        let tokens = (bucket.tokens + refilled).min(f64::from(self.burst)) - 1.0;
        let wait = if tokens >= 0.0 {
            Duration::ZERO
        } else if self.qps > 0.0 {
            // As x/time/rate: seconds = tokens / limit, then whole nanoseconds of 1e9 * seconds.
            let nanos = 1e9 * (-tokens / self.qps);
            if nanos >= u64::MAX as f64 {
                Duration::MAX
            } else {
                Duration::from_nanos(nanos as u64)
            }
        } else {
            // No refill and no token: never (x/time/rate refuses the reservation).
            return Duration::MAX;
        };
        bucket.last = bucket.last.max(now);
        bucket.tokens = tokens;
        wait
    }
}

impl Default for BucketRateLimiter {
    /// 10 qps, burst 100.
    fn default() -> Self {
        Self::new(Self::DEFAULT_QPS, Self::DEFAULT_BURST)
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _key: &K) -> Duration {
        self.reserve()
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}

/// The longest delay of several limiters; `num_requeues` is their largest count and
/// `forget` forgets the key in all of them.
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> MaxOfRateLimiter<K> {
    /// Combines `limiters`; every one is asked on each `when`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<K>>>) -> Self {
        Self { limiters }
    }
}

impl<K> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        // Every limiter must see every retry (each records it), so no short-circuit.
        self.limiters
            .iter()
            .map(|l| l.when(key))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, key: &K) {
        for limiter in &self.limiters {
            limiter.forget(key);
        }
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(key))
            .max()
            .unwrap_or(0)
    }
}

/// Another limiter's delay, capped at `max_delay`.
pub struct WithMaxWaitRateLimiter<R> {
    limiter: R,
    max_delay: Duration,
}

impl<R> WithMaxWaitRateLimiter<R> {
    /// Caps `limiter`'s delays at `max_delay`.
    pub fn new(limiter: R, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<K, R: RateLimiter<K>> RateLimiter<K> for WithMaxWaitRateLimiter<R> {
    fn when(&self, key: &K) -> Duration {
        self.limiter.when(key).min(self.max_delay)
    }

    fn forget(&self, key: &K) {
        self.limiter.forget(key)
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    // Port of client-go TestItemExponentialFailureRateLimiter.
    #[test]
    fn exponential_doubles_per_key_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        for expected in [1, 2, 4, 8, 16] {
            assert_eq!(limiter.when(&"one"), ms(expected));
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), ms(1));
        assert_eq!(limiter.when(&"two"), ms(2));
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(1));
    }

    // Port of client-go TestItemExponentialFailureRateLimiterOverFlow.
    #[test]
    fn exponential_never_overflows() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1000));
        for _ in 0..5 {
            limiter.when(&"one");
        }
        assert_eq!(limiter.when(&"one"), ms(32));
        for _ in 0..1000 {
            limiter.when(&"overflow1");
        }
        assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

        let minute = Duration::from_secs(60);
        let limiter = ItemExponentialFailureRateLimiter::new(minute, 1000 * 60 * minute);
        for _ in 0..2 {
            limiter.when(&"two");
        }
        assert_eq!(limiter.when(&"two"), 4 * minute);
        for _ in 0..1000 {
            limiter.when(&"overflow2");
        }
        assert_eq!(limiter.when(&"overflow2"), 1000 * 60 * minute);
    }

    #[test]
    fn exponential_default_is_5ms_doubling_to_1000s() {
        let limiter = ItemExponentialFailureRateLimiter::default();
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"k")).collect();
        assert_eq!(delays, [ms(5), ms(10), ms(20), ms(40), ms(80)]);
        // 5 ms * 2^17 = 655.36 s, 2^18 would be 1310.72 s: capped from the 19th retry on.
        for _ in 5..18 {
            limiter.when(&"k");
        }
        assert_eq!(limiter.num_requeues(&"k"), 18);
        assert_eq!(limiter.when(&"k"), Duration::from_secs(1000));
        // u32::MAX failures later it is still capped, not wrapped.
        *lock(&limiter.failures).get_mut(&"k").unwrap() = u32::MAX;
        assert_eq!(limiter.when(&"k"), Duration::from_secs(1000));
        assert_eq!(limiter.num_requeues(&"k"), u32::MAX);
    }

    // Port of client-go TestItemFastSlowRateLimiter.
    #[test]
    fn fast_slow_switches_after_max_fast_attempts() {
        let limiter = ItemFastSlowRateLimiter::new(ms(5), Duration::from_secs(10), 3);
        for expected in [
            ms(5),
            ms(5),
            ms(5),
            Duration::from_secs(10),
            Duration::from_secs(10),
        ] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(5));
    }

    // Port of client-go TestMaxOfRateLimiter.
    #[test]
    fn max_of_takes_the_longest_delay_and_forgets_everywhere() {
        let limiter: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
            Box::new(ItemFastSlowRateLimiter::new(
                ms(5),
                Duration::from_secs(3),
                3,
            )),
            Box::new(ItemExponentialFailureRateLimiter::new(
                ms(1),
                Duration::from_secs(1),
            )),
        ]);
        for expected in [
            ms(5),
            ms(5),
            ms(5),
            Duration::from_secs(3),
            Duration::from_secs(3),
        ] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(5));
    }

    #[test]
    fn max_of_nothing_never_delays() {
        let limiter: MaxOfRateLimiter<u32> = MaxOfRateLimiter::new(Vec::new());
        assert_eq!(limiter.when(&1), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&1), 0);
    }

    /// client-go's StepRateLimiter test helper: `base` for `threshold` calls, then `max`.
    struct StepRateLimiter {
        count: AtomicU32,
        threshold: u32,
        base: Duration,
        max: Duration,
    }

    impl RateLimiter<u32> for StepRateLimiter {
        fn when(&self, _key: &u32) -> Duration {
            if self.count.fetch_add(1, Ordering::Relaxed) < self.threshold {
                self.base
            } else {
                self.max
            }
        }
        fn forget(&self, _key: &u32) {}
        fn num_requeues(&self, _key: &u32) -> u32 {
            0
        }
    }

    // Port of client-go TestWithMaxWaitRateLimiter.
    #[test]
    fn with_max_wait_caps_the_delay() {
        let step = StepRateLimiter {
            count: AtomicU32::new(0),
            threshold: 100,
            base: ms(5),
            max: Duration::from_secs(1000),
        };
        let limiter = WithMaxWaitRateLimiter::new(step, Duration::from_secs(500));
        for i in 0..100 {
            assert_eq!(limiter.when(&i), ms(5));
        }
        for i in 100..200 {
            assert_eq!(limiter.when(&i), Duration::from_secs(500));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_the_burst_then_paces_at_qps() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        for i in 0..100u32 {
            assert_eq!(
                RateLimiter::<u32>::when(&limiter, &i),
                Duration::ZERO,
                "retry {i}"
            );
        }
        // Each further reservation borrows one more token: 100 ms, 200 ms, 300 ms, ...
        for n in 1..=5u64 {
            assert_eq!(RateLimiter::<u32>::when(&limiter, &0), ms(100 * n));
        }
        // Tokens are at -5. After 1 s ten are refilled: 5 free, then 100 ms again.
        tokio::time::advance(Duration::from_secs(1)).await;
        for _ in 0..5 {
            assert_eq!(RateLimiter::<u32>::when(&limiter, &0), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u32>::when(&limiter, &0), ms(100));
        assert_eq!(RateLimiter::<u32>::num_requeues(&limiter, &0), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_to_at_most_the_burst() {
        let limiter = BucketRateLimiter::new(1.0, 3);
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..3 {
            assert_eq!(limiter.reserve(), Duration::ZERO);
        }
        assert_eq!(limiter.reserve(), Duration::from_secs(1));
    }

    #[test]
    fn bucket_edge_rates() {
        let unlimited = BucketRateLimiter::new(f64::INFINITY, 0);
        for _ in 0..1000 {
            assert_eq!(unlimited.reserve(), Duration::ZERO);
        }
        let no_tokens = BucketRateLimiter::new(10.0, 0);
        assert_eq!(no_tokens.reserve(), Duration::MAX);
        let no_refill = BucketRateLimiter::new(0.0, 1);
        assert_eq!(no_refill.reserve(), Duration::ZERO);
        assert_eq!(no_refill.reserve(), Duration::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_max_of_exponential_and_bucket() {
        let limiter = default_controller_rate_limiter::<u32>();
        // Within the burst the per-key backoff decides.
        assert_eq!(limiter.when(&1), ms(5));
        assert_eq!(limiter.when(&1), ms(10));
        assert_eq!(limiter.when(&1), ms(20));
        for key in 2..99 {
            assert_eq!(limiter.when(&key), ms(5));
        }
        // 100 tokens used; the bucket now dominates new keys: 100 ms, 200 ms.
        assert_eq!(limiter.when(&1000), ms(100));
        assert_eq!(limiter.when(&1001), ms(200));
        assert_eq!(limiter.num_requeues(&1), 3);
        limiter.forget(&1);
        assert_eq!(limiter.num_requeues(&1), 0);
    }
}
