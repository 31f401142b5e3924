//! The namespace controller: empties terminating namespaces, then lets them go.
//!
//! Upstream `pkg/controller/namespace/namespace_controller.go`. When a namespace is
//! deleted, the API server sets its deletionTimestamp and phase `Terminating` and keeps
//! it while `spec.finalizers` holds `kubernetes`. This controller watches namespaces
//! (the manager's shared informer); each terminating one is queued after a short grace
//! period (5 s, so that object creations racing the deletion are seen), and
//! [`deleter::NamespacedResourcesDeleter`] deletes its content, reports progress in the
//! namespace's conditions and finally removes the finalizer. While content remains the
//! namespace is retried after half the estimated wait plus a second; other failures are
//! retried with the controller's backoff (5 ms doubling up to 60 s). Every terminating
//! namespace is also queued again every [`NamespaceControllerOptions::sync_period`].

pub mod conditions;
pub mod deleter;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Namespace;
use tokio_util::sync::CancellationToken;

use crate::registry::{ControllerContext, Descriptor};
use coxswain_runtime::cache::{Cache, Change, Informer};
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, QueueConfig,
    RateLimitedQueue,
};
use coxswain_runtime::ObjectKey;

use deleter::{DeleteError, NamespacedResourcesDeleter};

/// Canonical name of the controller.
pub const NAME: &str = "namespace-controller";

/// The finalizer this controller owns in `spec.finalizers`.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// The registry entry: `namespace-controller`, alias `namespace`.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["namespace"],
        disabled_by_default: false,
        constructor: |ctx: &ControllerContext<'_>| {
            let c = NamespaceController::new(
                ctx.manager.cache(),
                ctx.manager.kube_client().clone(),
                NamespaceControllerOptions::default(),
            );
            Ok(Box::new(c) as Box<dyn Runnable>)
        },
    }
}

/// Tuning; the defaults are kube-controller-manager's.
#[derive(Clone, Debug)]
pub struct NamespaceControllerOptions {
    /// Namespaces deleted at once (`--concurrent-namespace-syncs`, 10).
    pub workers: usize,
    /// How often every terminating namespace is looked at again
    /// (`--namespace-sync-period`, 5 min).
    pub sync_period: Duration,
    /// Wait between seeing a namespace change and acting on it (5 s).
    pub deletion_grace_period: Duration,
}

impl Default for NamespaceControllerOptions {
    fn default() -> Self {
        NamespaceControllerOptions {
            workers: 10,
            sync_period: Duration::from_secs(300),
            deletion_grace_period: Duration::from_secs(5),
        }
    }
}

/// Upstream `nsControllerRateLimiter`: retries at least every minute.
fn rate_limiter() -> MaxOfRateLimiter<String> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(60),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// Queue `ns` (after `delay`) if it is being deleted (upstream `enqueueNamespace`).
fn enqueue(queue: &RateLimitedQueue<String>, ns: &Namespace, delay: Duration) {
    if ns.metadata.deletion_timestamp.is_none() {
        return;
    }
    if let Some(name) = ns.metadata.name.clone() {
        queue.add_after(name, delay);
    }
}

/// The namespace controller, as a manager runnable.
pub struct NamespaceController {
    informer: Arc<Informer<Namespace>>,
    queue: RateLimitedQueue<String>,
    deleter: Arc<NamespacedResourcesDeleter>,
    options: NamespaceControllerOptions,
}

impl NamespaceController {
    /// A controller reading namespaces from `cache` and writing through `client`.
    pub fn new(cache: &Cache, client: kube::Client, options: NamespaceControllerOptions) -> Self {
        let queue = RateLimitedQueue::with_config(QueueConfig {
            name: "namespace".into(),
            rate_limiter: Box::new(rate_limiter()),
            metrics: Some(coxswain_runtime::metrics::global().queue("namespace")),
        });
        let informer = cache.informer::<Namespace>();
        let q = queue.clone();
        let grace = options.deletion_grace_period;
        informer.add_handler(move |change: &Change<Namespace>| match change {
            Change::Added(ns) | Change::Updated { new: ns, .. } => enqueue(&q, ns, grace),
            Change::Deleted(_) => {}
        });
        NamespaceController {
            informer,
            queue,
            deleter: Arc::new(NamespacedResourcesDeleter::new(
                client,
                FINALIZER_KUBERNETES,
            )),
            options,
        }
    }

    /// Run until `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) {
        tracing::info!(controller = NAME, "starting controller");
        tokio::select! {
            _ = self.informer.wait_for_sync() => {}
            _ = cancel.cancelled() => return,
        }
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.options.workers.max(1) {
            workers.spawn(worker(
                self.queue.clone(),
                self.deleter.clone(),
                self.informer.clone(),
                cancel.clone(),
            ));
        }
        let mut resync = tokio::time::interval(self.options.sync_period);
        resync.reset();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = resync.tick() => {
                    for ns in self.informer.store().list() {
                        enqueue(&self.queue, &ns, self.options.deletion_grace_period);
                    }
                }
            }
        }
        tracing::info!(controller = NAME, "shutting down controller");
        self.queue.shut_down();
        while workers.join_next().await.is_some() {}
    }
}

impl Runnable for NamespaceController {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            (*self).run(cancel).await;
            Ok(())
        }
        .boxed()
    }
}

/// One worker: sync namespaces from the queue (upstream `worker` and
/// `syncNamespaceFromKey`).
async fn worker(
    queue: RateLimitedQueue<String>,
    deleter: Arc<NamespacedResourcesDeleter>,
    informer: Arc<Informer<Namespace>>,
    cancel: CancellationToken,
) {
    while let Some(key) = queue.get().await {
        let result = tokio::select! {
            _ = cancel.cancelled() => { queue.done(&key); break; }
            r = sync(&deleter, &informer, &key) => r,
        };
        match result {
            Ok(()) => queue.forget(&key),
            Err(DeleteError::ResourcesRemaining(estimate)) => {
                let wait = estimate / 2 + 1;
                tracing::debug!(namespace = %key, wait_seconds = wait, "content remaining in namespace");
                queue.add_after(key.clone(), Duration::from_secs(wait.max(1) as u64));
            }
            Err(e) => {
                tracing::warn!(namespace = %key, error = %e, "deletion of namespace failed");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}

async fn sync(
    deleter: &NamespacedResourcesDeleter,
    informer: &Informer<Namespace>,
    key: &str,
) -> Result<(), DeleteError> {
    let started = std::time::Instant::now();
    if informer.store().get(&ObjectKey::cluster(key)).is_none() {
        tracing::info!(namespace = key, "namespace has been deleted");
        return Ok(());
    }
    let result = deleter.delete(key).await;
    tracing::debug!(namespace = key, duration = ?started.elapsed(), "finished syncing namespace");
    result
}
