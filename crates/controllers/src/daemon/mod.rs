//! The DaemonSet controller, after upstream's `pkg/controller/daemon`.
//!
//! A DaemonSet runs one pod on every node that should run it
//! ([`util::node_should_run_daemon_pod`]: the template's `nodeName`, `nodeSelector`
//! and required node affinity, and the node's `NoSchedule`/`NoExecute` taints against
//! the template's tolerations plus those the controller adds). Each pod is created
//! without a node, pinned by a required node affinity on `metadata.name`, and bound by
//! the scheduler. Nodes added, relabelled or tainted later are followed: a node that
//! starts matching gets a pod, an untolerated `NoExecute` taint evicts the pod, an
//! untolerated `NoSchedule` taint keeps it (it counts as misscheduled). Failed daemon
//! pods are deleted and replaced, with a per-node back-off from 1 s doubling up to
//! 15 min (`FailedDaemonPod` events).
//!
//! Template changes roll out per `updateStrategy`: `RollingUpdate` with
//! `maxUnavailable` (delete old pods first, at most that many nodes without an
//! available pod) or `maxSurge` (start the new pod next to the old one and delete the
//! old one once the new one is available), or `OnDelete` (new pods only where old ones
//! were deleted). Each template is recorded as a ControllerRevision
//! ([`revisions`]), which is what `kubectl rollout history` and `kubectl rollout
//! undo` read. The status carries desired/current/ready/available/updated/
//! misscheduled/unavailable numbers and `observedGeneration`, which
//! `kubectl rollout status` follows.
//!
//! Creations and deletions are guarded by expectations (no second round before the
//! cache has seen the first), a sync waits until the cache holds the controller's own
//! last status write (as upstream's
//! `StaleControllerConsistencyDaemonSet`), pods are created in slow-start batches and capped at 250 per
//! sync, and recorded as events by `daemonset-controller`.

mod backoff;
mod handlers;
pub mod plan;
pub mod revisions;
mod sync;
pub mod util;

use crate::clientbuilder::ClusterAccess;
use crate::controller_utils::consistency::ConsistencyStore;
use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::controller::{Controller, ControllerOptions};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};

pub use backoff::Backoff;
pub use handlers::{pod_node_index, selector_of, POD_NODE_INDEX};
pub use sync::{DaemonSetReconciler, BURST_REPLICAS, SELECTING_ALL_REASON};

use crate::controller_utils::ControllerExpectations;
use handlers::{DaemonSetHandler, HistoryHandler, Lookup, NodeHandler, PodHandler};

/// Name of the controller (`names.DaemonSetController`), also its event source.
pub const CONTROLLER_NAME: &str = "daemonset-controller";

/// The DaemonSet controller's options (upstream `DaemonSetControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct DaemonSetControllerOptions {
    /// DaemonSets synced at once (`--concurrent-daemonset-syncs`, 2).
    pub concurrent_daemonset_syncs: usize,
}

impl Default for DaemonSetControllerOptions {
    fn default() -> Self {
        DaemonSetControllerOptions {
            concurrent_daemonset_syncs: 2,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("daemon-set-controller")`).
pub const SERVICE_ACCOUNT: &str = "daemon-set-controller";

/// The registry entry: `daemonset-controller`, alias `daemonset`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["daemonset"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.daemonset.concurrent_daemonset_syncs;
            Ok(Some(Box::new(daemonset_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// The DaemonSet controller with `workers` concurrent workers.
pub fn daemonset_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<DaemonSetReconciler> {
    let expectations = Arc::new(ControllerExpectations::new());
    let cache = mgr.cache();
    let sets = cache.informer::<DaemonSet>().store().clone();
    let pod_store = cache.informer::<Pod>().store().clone();
    if !pod_store.has_index(POD_NODE_INDEX) {
        cache.index_field::<Pod>(POD_NODE_INDEX, pod_node_index);
    }
    let lookup = Lookup { sets };
    let recorder = mgr.event_recorder(CONTROLLER_NAME);
    let consistency = Arc::new(ConsistencyStore::default());
    let reconciler = DaemonSetReconciler::new(
        mgr.client(),
        recorder,
        expectations.clone(),
        consistency.clone(),
    );
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions {
            max_concurrent_reconciles: workers.max(1),
            ..ControllerOptions::default()
        })
        .for_with::<DaemonSet>(DaemonSetHandler {
            expectations: expectations.clone(),
            consistency,
        })
        .watches_with::<Pod>(
            PodHandler {
                expectations,
                lookup: lookup.clone(),
            },
            Vec::new(),
        )
        .watches_with::<ControllerRevision>(
            HistoryHandler {
                lookup: lookup.clone(),
            },
            Vec::new(),
        )
        .watches_with::<Node>(
            NodeHandler {
                lookup,
                pods: pod_store,
            },
            Vec::new(),
        )
        .build(reconciler)
}
