//! The work queue between event handlers and reconcilers.
//!
//! Handlers turn watch events into keys (`namespace/name` requests) and add them to a
//! [`RateLimitedQueue`]; a controller's workers take keys out with
//! [`get`](RateLimitedQueue::get), reconcile them, and hand them back with
//! [`done`](RateLimitedQueue::done). The queue gives the guarantees that make reconcilers
//! simple, those of client-go's `util/workqueue` that controller-runtime builds on:
//!
//! - **dedup**: a key added many times before a worker takes it is processed once;
//! - **one worker per key**: a key is never handed to two workers at once; a key added
//!   while it is being processed is handed out again after its `done`;
//! - **FIFO** otherwise;
//! - **delays**: [`add_after`](RateLimitedQueue::add_after) adds a key later (a shorter delay
//!   for a key already waiting wins), and
//!   [`add_rate_limited`](RateLimitedQueue::add_rate_limited) asks a [`RateLimiter`] how much
//!   later: per-key exponential backoff on failure, reset by
//!   [`forget`](RateLimitedQueue::forget) on success, and an overall token bucket
//!   ([`default_controller_rate_limiter`]);
//! - **shutdown**: [`shut_down`](RateLimitedQueue::shut_down) stops at once,
//!   [`shut_down_with_drain`](RateLimitedQueue::shut_down_with_drain) lets in-flight work
//!   finish.
//!
//! The queue reports to an optional [`QueueMetrics`] (the `workqueue_*` metrics of
//! controller-runtime); see [`metrics`].
//!
//! ```
//! use coxswain_runtime::workqueue::RateLimitedQueue;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue: RateLimitedQueue<String> = RateLimitedQueue::new();
//! let workers: Vec<_> = (0..2)
//!     .map(|_| {
//!         let queue = queue.clone();
//!         tokio::spawn(async move {
//!             let mut seen = Vec::new();
//!             while let Some(key) = queue.get().await {
//!                 seen.push(key.clone()); // reconcile here
//!                 queue.forget(&key);
//!                 queue.done(&key);
//!             }
//!             seen
//!         })
//!     })
//!     .collect();
//! for name in ["a", "b", "a", "c"] {
//!     queue.add(format!("default/{name}"));
//! }
//! queue.shut_down_with_drain().await;
//! let mut seen = Vec::new();
//! for worker in workers {
//!     seen.extend(worker.await.unwrap());
//! }
//! seen.sort();
//! assert_eq!(seen, ["default/a", "default/b", "default/c"]);
//! # }
//! ```

mod fifo;
pub mod metrics;
mod queue;
pub mod rate_limiter;

pub use metrics::{NoopMetrics, QueueMetrics, UnfinishedWork};
pub use queue::{QueueConfig, QueueKey, RateLimitedQueue};
pub use rate_limiter::{
    default_controller_rate_limiter, BucketRateLimiter, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
};
