//! The back-off between replacements of a failed daemon pod, after client-go's
//! `flowcontrol.Backoff` as the DaemonSet controller uses it (`NewBackOff(1s, 15m)`,
//! no jitter).
//!
//! Each key (`<ds uid>/<observed generation>/<node>`) has a delay that starts at the
//! initial value and doubles with every failure up to the maximum; an entry untouched
//! for twice the maximum is forgotten (and so starts over). A key is "in back-off"
//! while less than its delay has passed since its last failure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// First delay after a failed daemon pod was deleted.
pub const INITIAL: Duration = Duration::from_secs(1);
/// Longest delay.
pub const MAX: Duration = Duration::from_secs(15 * 60);
/// How often expired entries are dropped (upstream `BackoffGCInterval`).
pub const GC_INTERVAL: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: Instant,
}

/// Per-key exponential back-off.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
    last_gc: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(INITIAL, MAX)
    }
}

impl Backoff {
    /// A back-off from `initial` doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            entries: HashMap::new(),
            last_gc: None,
        }
    }

    fn expired(&self, e: &Entry, now: Instant) -> bool {
        now.saturating_duration_since(e.last_update) > 2 * self.max
    }

    /// Record a failure of `key` at `now`: the delay starts at the initial value (new or
    /// expired entry) or doubles, up to the maximum.
    pub fn next(&mut self, key: &str, now: Instant) {
        if self
            .last_gc
            .is_none_or(|t| now.saturating_duration_since(t) >= GC_INTERVAL)
        {
            self.gc(now);
        }
        let fresh = match self.entries.get(key) {
            Some(e) if !self.expired(e, now) => None,
            _ => Some(self.initial),
        };
        let max = self.max;
        let e = self.entries.entry(key.to_string()).or_insert(Entry {
            backoff: self.initial,
            last_update: now,
        });
        e.backoff = fresh.unwrap_or_else(|| (e.backoff * 2).min(max));
        e.last_update = now;
    }

    /// The current delay of `key` (zero when it has none).
    pub fn get(&self, key: &str) -> Duration {
        self.entries.get(key).map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Whether less than the delay of `key` has passed between its last failure and
    /// `now`.
    pub fn is_in_backoff_since_update(&self, key: &str, now: Instant) -> bool {
        match self.entries.get(key) {
            Some(e) if !self.expired(e, now) => {
                now.saturating_duration_since(e.last_update) < e.backoff
            }
            _ => false,
        }
    }

    /// Drop the expired entries.
    pub fn gc(&mut self, now: Instant) {
        let max2 = 2 * self.max;
        self.entries
            .retain(|_, e| now.saturating_duration_since(e.last_update) <= max2);
        self.last_gc = Some(now);
    }

    /// How many keys have an entry.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key has an entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // After client-go TestSlowBackoff / TestBackoffGC and the daemon controller's
    // TestDaemonKillFailedPodsBackoff (50ms / 500ms back-off on a fake clock).
    #[test]
    fn doubles_caps_and_expires() {
        let t0 = Instant::now();
        let (step, max) = (Duration::from_millis(50), Duration::from_millis(500));
        let mut b = Backoff::new(step, max);
        assert_eq!(b.get("k"), Duration::ZERO);
        assert!(!b.is_in_backoff_since_update("k", t0));
        b.next("k", t0);
        let delay = b.get("k");
        assert_eq!(delay, step);
        assert!(b.is_in_backoff_since_update("k", t0));
        assert!(b.is_in_backoff_since_update("k", t0 + delay - Duration::from_nanos(1)));
        assert!(!b.is_in_backoff_since_update("k", t0 + delay));
        let mut t = t0;
        for want in [100, 200, 400, 500, 500] {
            t += Duration::from_millis(10);
            b.next("k", t);
            assert_eq!(b.get("k"), Duration::from_millis(want));
        }
        // untouched for more than twice the maximum: starts over
        t += 2 * max + Duration::from_millis(1);
        assert!(!b.is_in_backoff_since_update("k", t));
        b.next("k", t);
        assert_eq!(b.get("k"), step);
        // and is collected
        b.gc(t + 2 * max + Duration::from_millis(1));
        assert!(b.is_empty());
    }
}
