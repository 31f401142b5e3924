//! The ReplicaSet controller (and the ReplicationController controller, the same code),
//! after upstream's `pkg/controller/replicaset` and `pkg/controller/replication`.
//!
//! A ReplicaSet keeps `spec.replicas` pods matching its selector running: it adopts
//! matching orphans, releases pods that stopped matching, creates missing pods from its
//! template (slow-start batches, at most 500 per sync) and deletes surplus pods, the
//! least valuable first (see [`crate::controller_utils::ranking`]). Expectations
//! ([`crate::controller_utils::expectations`]) make sure it never acts again on a cache
//! that has not yet seen its own creations and deletions, so it never overshoots while
//! the watch lags. Its status (`replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas`, `terminatingReplicas`, `observedGeneration` and the
//! `ReplicaFailure` condition) is written through the status subresource, and every pod
//! creation and deletion is recorded as an event (`SuccessfulCreate`,
//! `FailedCreate`, `SuccessfulDelete`, `FailedDelete`) by `replicaset-controller`
//! (`replication-controller` for RCs).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use coxswain_runtime::manager::{Manager, ManagerOptions};
//! let mgr = Manager::try_default(ManagerOptions::default()).await?;
//! mgr.add(coxswain_controllers::replicaset::replicaset_controller(&mgr, 5))?;
//! mgr.add(coxswain_controllers::replicaset::replication_controller(&mgr, 5))?;
//! mgr.start(coxswain_runtime::manager::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

mod handlers;
pub mod kind;
pub mod status;
mod sync;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::controller::{Controller, ControllerOptions, Reconciler};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};

pub use kind::{ReplicaSetKind, Spec, SpecError};
pub use sync::{pods_to_delete, ReplicaSetReconciler};

use crate::controller_utils::ControllerExpectations;
use handlers::{OwnerHandler, PodHandler};

/// The ReplicaSet controller's options (upstream `ReplicaSetControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct ReplicaSetControllerOptions {
    /// ReplicaSets synced at once (`--concurrent-replicaset-syncs`, 5).
    pub concurrent_rs_syncs: usize,
}

impl Default for ReplicaSetControllerOptions {
    fn default() -> Self {
        ReplicaSetControllerOptions {
            concurrent_rs_syncs: 5,
        }
    }
}

/// The ReplicationController controller's options (upstream
/// `ReplicationControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct ReplicationControllerOptions {
    /// ReplicationControllers synced at once (`--concurrent-rc-syncs`, 5).
    pub concurrent_rc_syncs: usize,
}

impl Default for ReplicationControllerOptions {
    fn default() -> Self {
        ReplicationControllerOptions {
            concurrent_rc_syncs: 5,
        }
    }
}

/// The ReplicaSet controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("replicaset-controller")`).
pub const SERVICE_ACCOUNT: &str = "replicaset-controller";

/// The ReplicationController controller's service account (upstream
/// `ClientOrDie("replication-controller")`).
pub const REPLICATION_SERVICE_ACCOUNT: &str = "replication-controller";

/// The registry entry: `replicaset-controller`, alias `replicaset`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "replicaset-controller",
        aliases: &["replicaset"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.replicaset.concurrent_rs_syncs;
            Ok(Some(Box::new(replicaset_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// The registry entry: `replicationcontroller-controller`, alias
/// `replicationcontroller`.
pub fn replication_descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "replicationcontroller-controller",
        aliases: &["replicationcontroller"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.replication_controller.concurrent_rc_syncs;
            Ok(Some(Box::new(replication_controller(
                &ctx.clients(REPLICATION_SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// The ReplicaSet controller (`replicaset`), reconciling with `workers` concurrent
/// workers (kube-controller-manager's `--concurrent-replicaset-syncs`, default 5).
pub fn replicaset_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<impl Reconciler> {
    controller_for::<ReplicaSet>(mgr, workers)
}

/// The ReplicationController controller (`replicationcontroller`), the same logic for
/// core/v1 ReplicationControllers (`--concurrent-rc-syncs`, default 5).
pub fn replication_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<impl Reconciler> {
    controller_for::<ReplicationController>(mgr, workers)
}

/// The controller of kind `K`: reconciles `K`, woken by its pods through handlers that
/// also keep the expectations.
pub fn controller_for<K: ReplicaSetKind>(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<ReplicaSetReconciler<K>> {
    let expectations = Arc::new(ControllerExpectations::new());
    let cache = mgr.cache();
    let owners = cache.informer::<K>().store().clone();
    let recorder = mgr.event_recorder(K::EVENT_COMPONENT);
    let reconciler = ReplicaSetReconciler::<K>::new(mgr.client(), recorder, expectations.clone());
    ControllerBuilder::new(cache)
        .named(K::CONTROLLER_NAME)
        .with_options(ControllerOptions {
            max_concurrent_reconciles: workers.max(1),
            ..ControllerOptions::default()
        })
        .for_::<K>()
        .watches_with::<K>(OwnerHandler::<K>::new(expectations.clone()), Vec::new())
        .watches_with::<Pod>(PodHandler::<K>::new(expectations, owners), Vec::new())
        .build(reconciler)
}
