//! Workqueue metrics hooks.
//!
//! A queue reports what happens to it through a [`QueueMetrics`] object, one per queue
//! (an exporter creates it already labelled with the queue's `name` and `controller`, as
//! controller-runtime's `PrometheusWorkqueueMetricsProvider` does). The queue calls the
//! hooks; it never exports anything itself. Every hook has an empty default body, so an
//! implementation overrides only what it records, and [`NoopMetrics`] records nothing.
//!
//! The hooks map one to one onto the metrics of client-go's `util/workqueue` as
//! controller-runtime registers them (`pkg/metrics/workqueue.go`); the names are the
//! constants of this module:
//!
//! | hook | metric | type |
//! |---|---|---|
//! | [`QueueMetrics::inc_adds`] | [`ADDS_TOTAL`] | counter |
//! | [`QueueMetrics::inc_depth`] / [`QueueMetrics::dec_depth`] | [`DEPTH`] | gauge |
//! | [`QueueMetrics::observe_queue_duration`] | [`QUEUE_DURATION_SECONDS`] | histogram |
//! | [`QueueMetrics::observe_work_duration`] | [`WORK_DURATION_SECONDS`] | histogram |
//! | [`QueueMetrics::set_unfinished_work_seconds`] | [`UNFINISHED_WORK_SECONDS`] | gauge |
//! | [`QueueMetrics::set_longest_running_processor_seconds`] | [`LONGEST_RUNNING_PROCESSOR_SECONDS`] | gauge |
//! | [`QueueMetrics::inc_retries`] | [`RETRIES_TOTAL`] | counter |
//!
//! As upstream, the depth counts the keys that are *dirty* (waiting to be handed out,
//! including a key re-added while it is being processed), an add is counted only when it
//! makes a key dirty (an add of a key that is already waiting is folded into it and not
//! counted), and a retry is counted for every delayed add (`add_after`, hence every
//! `add_rate_limited`). The two gauges of in-flight work are computed on request by
//! [`RateLimitedQueue::update_unfinished_work_metrics`](super::RateLimitedQueue::update_unfinished_work_metrics),
//! which an exporter calls periodically (client-go does it every 500 ms).
//!
//! An add is counted when the queue applies it to its state, which is at once when a
//! worker is waiting and otherwise at the next queue operation (a worker's `get` or `done`,
//! `len`, ...): adds go through an inbox (see the queue's docs), and only then is it known
//! whether an add was folded into a waiting key.
//!
//! Hooks run after the queue's lock is released, on the thread of the caller of the queue
//! operation; they must be cheap and must not block.

use std::time::Duration;

/// `workqueue_depth`: current depth of the workqueue (gauge).
pub const DEPTH: &str = "workqueue_depth";
/// `workqueue_adds_total`: total number of adds handled by the workqueue (counter).
pub const ADDS_TOTAL: &str = "workqueue_adds_total";
/// `workqueue_queue_duration_seconds`: how long in seconds an item stays in the workqueue
/// before being requested (histogram).
pub const QUEUE_DURATION_SECONDS: &str = "workqueue_queue_duration_seconds";
/// `workqueue_work_duration_seconds`: how long in seconds processing an item from the
/// workqueue takes (histogram).
pub const WORK_DURATION_SECONDS: &str = "workqueue_work_duration_seconds";
/// `workqueue_unfinished_work_seconds`: how many seconds of work has been done that is in
/// progress and has not been observed by the work duration; large values indicate stuck
/// workers (gauge).
pub const UNFINISHED_WORK_SECONDS: &str = "workqueue_unfinished_work_seconds";
/// `workqueue_longest_running_processor_seconds`: how many seconds the longest running
/// processor of the workqueue has been running (gauge).
pub const LONGEST_RUNNING_PROCESSOR_SECONDS: &str = "workqueue_longest_running_processor_seconds";
/// `workqueue_retries_total`: total number of retries handled by the workqueue (counter).
pub const RETRIES_TOTAL: &str = "workqueue_retries_total";

/// Histogram buckets (seconds) controller-runtime uses for both duration histograms:
/// `ExponentialBuckets(10e-9, 10, 12)`, i.e. 10 ns to 1000 s by factors of ten.
pub const DURATION_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

/// Receives the measurements of one queue. Every method defaults to doing nothing.
///
/// # Example
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use coxswain_runtime::workqueue::{QueueConfig, QueueMetrics, RateLimitedQueue};
///
/// #[derive(Default)]
/// struct Adds(AtomicU64);
///
/// impl QueueMetrics for Adds {
///     fn inc_adds(&self) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let adds = Arc::new(Adds::default());
/// let queue = RateLimitedQueue::with_config(QueueConfig {
///     name: "pods".to_string(),
///     metrics: Some(adds.clone()),
///     ..QueueConfig::default()
/// });
/// queue.add("default/web-0");
/// queue.add("default/web-0"); // folded into the waiting key: not an add
/// assert_eq!(queue.len(), 1); // applies the adds
/// assert_eq!(adds.0.load(Ordering::Relaxed), 1);
/// ```
pub trait QueueMetrics: Send + Sync {
    /// A key became dirty ([`ADDS_TOTAL`] + 1).
    fn inc_adds(&self) {}
    /// A key became dirty ([`DEPTH`] + 1).
    fn inc_depth(&self) {}
    /// A dirty key was handed to a worker or dropped by a shutdown ([`DEPTH`] - 1).
    fn dec_depth(&self) {}
    /// Time from the add that made a key dirty to the `get` that handed it out
    /// ([`QUEUE_DURATION_SECONDS`]).
    fn observe_queue_duration(&self, _waited: Duration) {}
    /// Time from `get` to `done` ([`WORK_DURATION_SECONDS`]).
    fn observe_work_duration(&self, _worked: Duration) {}
    /// A delayed add, including every rate-limited add ([`RETRIES_TOTAL`] + 1).
    fn inc_retries(&self) {}
    /// Sum of the ages of the keys being processed ([`UNFINISHED_WORK_SECONDS`]).
    fn set_unfinished_work_seconds(&self, _seconds: f64) {}
    /// Age of the oldest key being processed ([`LONGEST_RUNNING_PROCESSOR_SECONDS`]).
    fn set_longest_running_processor_seconds(&self, _seconds: f64) {}
}

/// Records nothing; what a queue uses when its config names no metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetrics;

impl QueueMetrics for NoopMetrics {}

/// The in-flight work of a queue, computed from the processing start times.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UnfinishedWork {
    /// Sum over the keys being processed of the time since their `get`, in seconds.
    pub unfinished_work_seconds: f64,
    /// The longest time since `get` of a key being processed, in seconds (0 if none).
    pub longest_running_processor_seconds: f64,
}

impl UnfinishedWork {
    /// Folds processing ages (time since each in-flight key's `get`) into the two gauges.
    ///
    /// ```
    /// use std::time::Duration;
    /// use coxswain_runtime::workqueue::UnfinishedWork;
    ///
    /// let w = UnfinishedWork::from_ages([Duration::from_secs(1), Duration::from_secs(3)]);
    /// assert_eq!(w.unfinished_work_seconds, 4.0);
    /// assert_eq!(w.longest_running_processor_seconds, 3.0);
    /// ```
    pub fn from_ages(ages: impl IntoIterator<Item = Duration>) -> Self {
        ages.into_iter().fold(Self::default(), |acc, age| {
            let secs = age.as_secs_f64();
            Self {
                unfinished_work_seconds: acc.unfinished_work_seconds + secs,
                longest_running_processor_seconds: acc.longest_running_processor_seconds.max(secs),
            }
        })
    }

    /// Sends both values to their gauges.
    pub fn report(&self, metrics: &dyn QueueMetrics) {
        metrics.set_unfinished_work_seconds(self.unfinished_work_seconds);
        metrics.set_longest_running_processor_seconds(self.longest_running_processor_seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_work_of_nothing_is_zero() {
        assert_eq!(UnfinishedWork::from_ages([]), UnfinishedWork::default());
    }

    #[test]
    fn unfinished_work_sums_and_takes_the_oldest() {
        let w = UnfinishedWork::from_ages([
            Duration::from_millis(500),
            Duration::from_millis(2500),
            Duration::from_millis(1000),
        ]);
        assert_eq!(w.unfinished_work_seconds, 4.0);
        assert_eq!(w.longest_running_processor_seconds, 2.5);
    }

    #[test]
    fn metric_names_follow_controller_runtime() {
        for name in [
            DEPTH,
            ADDS_TOTAL,
            QUEUE_DURATION_SECONDS,
            WORK_DURATION_SECONDS,
            UNFINISHED_WORK_SECONDS,
            LONGEST_RUNNING_PROCESSOR_SECONDS,
            RETRIES_TOTAL,
        ] {
            assert!(name.starts_with("workqueue_"), "{name}");
        }
        assert_eq!(DURATION_BUCKETS[0], 10e-9);
        assert_eq!(DURATION_BUCKETS[11], 1000.0);
    }
}
