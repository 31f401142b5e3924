//! The StatefulSet controller, after upstream's `pkg/controller/statefulset`.
//!
//! A StatefulSet runs `spec.replicas` pods with stable identities: pod `<set>-<ordinal>`
//! for each ordinal from `spec.ordinals.start`, labels
//! `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, hostname the
//! pod name and subdomain `spec.serviceName`, and one PersistentVolumeClaim
//! `<claim>-<set>-<ordinal>` per `volumeClaimTemplates` entry, created before the pod
//! and owned by the set or the pod as `persistentVolumeClaimRetentionPolicy` says.
//!
//! With `podManagementPolicy: OrderedReady` (the default) pods are created one at a
//! time in ordinal order, each once its predecessor is Running, Ready and available;
//! scale-down deletes the highest ordinal first, one at a time. `Parallel` creates and
//! deletes in slow-start batches. Failed or succeeded pods are deleted and recreated.
//!
//! Every distinct pod template is a ControllerRevision ([`crate::history`]);
//! `status.currentRevision` and `status.updateRevision` name the revisions pods are made
//! from. A `RollingUpdate` deletes pods at an old revision from the highest ordinal down
//! to `partition`, one at a time, waiting for each replacement to be available
//! (kube-controller-manager 1.36 has `MaxUnavailableStatefulSet` off, so
//! `maxUnavailable` is not used); `OnDelete` only replaces pods a user deletes. When
//! every pod is updated and ready the update revision becomes current. Status counters
//! (`replicas`, `readyReplicas`, `availableReplicas` after `minReadySeconds`,
//! `currentReplicas`, `updatedReplicas`), `observedGeneration` and `collisionCount` are
//! written through the status subresource; pod and claim writes are recorded as events
//! by `statefulset-controller` with upstream's reasons and messages.

mod consistency;
pub mod control;
pub mod utils;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controller::{Controller, ControllerOptions};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::handler::{EventHandler, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

pub use control::StatefulSetReconciler;

use crate::controller_utils::is_pod_ready;

/// The StatefulSet controller's options (upstream `StatefulSetControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct StatefulSetControllerOptions {
    /// StatefulSets synced at once (`--concurrent-statefulset-syncs`, 5).
    pub concurrent_statefulset_syncs: usize,
}

impl Default for StatefulSetControllerOptions {
    fn default() -> Self {
        StatefulSetControllerOptions {
            concurrent_statefulset_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("statefulset-controller")`).
pub const SERVICE_ACCOUNT: &str = "statefulset-controller";

/// The registry entry: `statefulset-controller`, alias `statefulset`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "statefulset-controller",
        aliases: &["statefulset"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.statefulset.concurrent_statefulset_syncs;
            Ok(Some(Box::new(statefulset_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// The StatefulSet controller with `workers` concurrent workers.
pub fn statefulset_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<StatefulSetReconciler> {
    let cache = mgr.cache();
    let sets = cache.informer::<StatefulSet>().store().clone();
    let recorder = mgr.event_recorder("statefulset-controller");
    let reconciler = StatefulSetReconciler::new(mgr.client(), recorder);
    ControllerBuilder::new(cache)
        .named("statefulset")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: workers.max(1),
            ..ControllerOptions::default()
        })
        .for_::<StatefulSet>()
        .watches_with::<Pod>(PodHandler { sets }, Vec::new())
        .build(reconciler)
}

/// Pod changes → StatefulSet keys (upstream `addPod`, `updatePod`, `deletePod`).
struct PodHandler {
    sets: Arc<Store<StatefulSet>>,
}

impl PodHandler {
    fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<Arc<StatefulSet>> {
        if r.kind != "StatefulSet" {
            return None;
        }
        let set = self.sets.get(&ObjectKey::from_parts(namespace, &r.name))?;
        (set.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(set)
    }

    /// The sets whose selector matches an orphan pod (upstream `GetPodStatefulSets`).
    fn matching(&self, pod: &Pod) -> Vec<ObjectKey> {
        let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
            return Vec::new();
        };
        let Some(ns) = pod.metadata.namespace.as_deref() else {
            return Vec::new();
        };
        let keys: Vec<ObjectKey> = self
            .sets
            .list_namespace(ns)
            .into_iter()
            .filter(|s| {
                LabelSelector::from_meta(&s.spec.selector)
                    .is_ok_and(|sel| !sel.is_empty() && sel.matches_labels(labels))
            })
            .map(|s| ObjectKey::of(s.as_ref()))
            .collect();
        if keys.len() > 1 {
            tracing::warn!(pod = ?pod.metadata.name, "user error: more than one StatefulSet is selecting pods with labels: {labels:?}");
        }
        keys
    }

    fn owner(&self, pod: &Pod) -> Option<Arc<StatefulSet>> {
        get_controller_of(&pod.metadata)
            .and_then(|r| self.resolve(pod.metadata.namespace.as_deref(), r))
    }
}

impl EventHandler<Pod> for PodHandler {
    fn handle(&self, change: &Change<Pod>, queue: &Requests<'_, ObjectKey>) {
        match change {
            Change::Added(pod) => {
                if let Some(set) = self.owner(pod) {
                    queue.add(ObjectKey::of(set.as_ref()));
                } else if get_controller_of(&pod.metadata).is_none()
                    && pod.metadata.deletion_timestamp.is_none()
                {
                    for k in self.matching(pod) {
                        queue.add(k);
                    }
                }
            }
            Change::Updated { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                let (old_ref, new_ref) = (
                    get_controller_of(&old.metadata),
                    get_controller_of(&new.metadata),
                );
                let ref_changed = old_ref != new_ref;
                if ref_changed {
                    if let Some(set) =
                        old_ref.and_then(|r| self.resolve(old.metadata.namespace.as_deref(), r))
                    {
                        queue.add(ObjectKey::of(set.as_ref()));
                    }
                }
                if new_ref.is_some() {
                    if let Some(set) = self.owner(new) {
                        let key = ObjectKey::of(set.as_ref());
                        queue.add(key.clone());
                        let mrs = set.spec.min_ready_seconds.unwrap_or(0);
                        if !is_pod_ready(old) && is_pod_ready(new) && mrs > 0 {
                            queue.add_after(
                                key,
                                Duration::from_secs(u64::from(mrs.unsigned_abs()) + 1),
                            );
                        }
                    }
                    return;
                }
                if ref_changed || old.metadata.labels != new.metadata.labels {
                    for k in self.matching(new) {
                        queue.add(k);
                    }
                }
            }
            Change::Deleted(pod) => {
                if let Some(set) = self.owner(pod) {
                    queue.add(ObjectKey::of(set.as_ref()));
                }
            }
        }
    }
}
