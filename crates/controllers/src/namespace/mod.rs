//! The namespace controller: empties terminating namespaces, then lets them go.
//!
//! Upstream `pkg/controller/namespace/namespace_controller.go`. When a namespace is
//! deleted, the API server sets its deletionTimestamp and phase `Terminating` and keeps
//! it while `spec.finalizers` holds `kubernetes`. This controller reconciles namespaces
//! on the ordinary controller loop: each terminating one is queued after a short grace
//! period (5 s, so that object creations racing the deletion are seen), and
//! [`deleter::NamespacedResourcesDeleter`] deletes its content (every namespaced resource
//! the shared discovery knows), reports progress in the namespace's conditions and
//! finally removes the finalizer. While content remains the namespace is reconciled
//! again after half the estimated wait plus a second; other failures are retried with
//! the controller's backoff (5 ms doubling up to 60 s). A timer queues every terminating
//! namespace again every [`NamespaceControllerOptions::namespace_sync_period`].

pub mod conditions;
pub mod deleter;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;

use crate::registry::{ControllerContext, Descriptor};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::{EnqueueMapped, EventHandlerExt};
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter,
};
use coxswain_runtime::ObjectKey;

use deleter::{DeleteError, NamespacedResourcesDeleter};

/// Canonical name of the controller.
pub const NAME: &str = "namespace-controller";

/// The controller's name in logs and metrics (upstream's queue name).
pub const CONTROLLER_NAME: &str = "namespace";

/// The finalizer this controller owns in `spec.finalizers`.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("namespace-controller")`).
pub const SERVICE_ACCOUNT: &str = "namespace-controller";

/// The registry entry: `namespace-controller`, alias `namespace`.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["namespace"],
        disabled_by_default: false,
        constructor: |ctx: &ControllerContext<'_>| {
            let c = namespace_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                ctx.options.namespace.clone(),
            );
            Ok(Some(Box::new(c) as Box<dyn Runnable>))
        },
    }
}

/// The namespace controller's options (upstream `NamespaceControllerConfiguration`);
/// the defaults are kube-controller-manager's.
#[derive(Clone, Debug)]
pub struct NamespaceControllerOptions {
    /// Namespaces deleted at once (`--concurrent-namespace-syncs`, 10).
    pub concurrent_namespace_syncs: usize,
    /// How often every terminating namespace is looked at again
    /// (`--namespace-sync-period`, 5 min).
    pub namespace_sync_period: Duration,
    /// Wait between seeing a namespace change and acting on it (5 s).
    pub deletion_grace_period: Duration,
}

impl Default for NamespaceControllerOptions {
    fn default() -> Self {
        NamespaceControllerOptions {
            concurrent_namespace_syncs: 10,
            namespace_sync_period: Duration::from_secs(300),
            deletion_grace_period: Duration::from_secs(5),
        }
    }
}

/// Upstream `nsControllerRateLimiter`: retries at least every minute.
fn rate_limiter() -> MaxOfRateLimiter<ObjectKey> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(60),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// The key of `ns` if it is being deleted (upstream `enqueueNamespace`).
fn terminating(ns: &Namespace) -> Vec<ObjectKey> {
    if ns.metadata.deletion_timestamp.is_none() {
        return Vec::new();
    }
    vec![ObjectKey::of(ns)]
}

/// The namespace controller on `manager`'s shared namespace informer and discovery.
pub fn namespace_controller(
    manager: &impl ClusterAccess,
    options: NamespaceControllerOptions,
) -> Controller<NamespaceReconciler> {
    let cache = manager.cache();
    let namespaces = cache.informer::<Namespace>().store().clone();
    let grace = options.deletion_grace_period;
    let every = namespaces.clone();
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .for_with::<Namespace>(EnqueueMapped(terminating).after(grace))
        .every(options.namespace_sync_period, move |queue| {
            for ns in every.list() {
                for key in terminating(&ns) {
                    queue.add_after(key, grace);
                }
            }
        })
        .with_options(
            ControllerOptions::workers(options.concurrent_namespace_syncs)
                .with_rate_limiter(rate_limiter()),
        )
        .build(NamespaceReconciler {
            namespaces,
            deleter: NamespacedResourcesDeleter::new(
                manager.kube_client().clone(),
                manager.discovery().clone(),
                FINALIZER_KUBERNETES,
            ),
        })
}

/// Deletes the content of one terminating namespace (upstream `syncNamespaceFromKey`).
pub struct NamespaceReconciler {
    namespaces: Arc<Store<Namespace>>,
    deleter: NamespacedResourcesDeleter,
}

impl Reconciler for NamespaceReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        if self.namespaces.get(&key).is_none() {
            tracing::info!(namespace = key.name(), "namespace has been deleted");
            return Ok(Action::Done);
        }
        match self.deleter.delete(key.name()).await {
            Ok(()) => Ok(Action::Done),
            Err(DeleteError::ResourcesRemaining(estimate)) => {
                let wait = (estimate / 2 + 1).max(1) as u64;
                tracing::debug!(
                    namespace = key.name(),
                    wait_seconds = wait,
                    "content remaining in namespace"
                );
                Ok(Action::RequeueAfter(Duration::from_secs(wait)))
            }
            Err(e) => Err(ReconcileError::msg(format!(
                "deletion of namespace {} failed: {e}",
                key.name()
            ))),
        }
    }
}
