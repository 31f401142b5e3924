//! Which DaemonSets a change wakes, after upstream's event handlers in
//! `pkg/controller/daemon/daemon_controller.go`.
//!
//! - DaemonSets: every change enqueues the DaemonSet; a deleted (or re-created) one
//!   forgets its expectations first.
//! - Pods: a new owned pod is an observed creation, a deleted (or terminating) owned
//!   pod an observed deletion; orphans wake the DaemonSets that select them; a pod that
//!   just became ready wakes its DaemonSet again after `minReadySeconds` + 1 s.
//! - ControllerRevisions: changes wake their owner (an orphan: every DaemonSet that
//!   selects it); a new owned revision wakes nobody.
//! - Nodes: a new node, or a node whose labels or taints changed, wakes each DaemonSet
//!   that should now run a pod there and has none, has pods there it should no longer
//!   run, or has misscheduled pods there (upstream `syncNodeUpdate`), and, unlike
//!   upstream 1.36, each DaemonSet whose pod there just became misscheduled (an
//!   untolerated `NoSchedule` taint, a label change), so that `numberMisscheduled` and
//!   `desiredNumberScheduled` follow at once instead of at the next unrelated sync. Node deletions
//!   wake nobody: the pods of a deleted node go through the pod garbage collector, and
//!   their deletion wakes the DaemonSet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::handler::{EventHandler, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::util::{node_should_run_daemon_pod, should_ignore_node_update};
use crate::controller_utils::{is_pod_ready, pod_key, ControllerExpectations};

/// Name of the pod index by `spec.nodeName` the node handler uses.
pub const POD_NODE_INDEX: &str = "daemonset-controller:spec.nodeName";

/// The node name a pod is bound to (its index value).
pub fn pod_node_index(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
        .into_iter()
        .collect()
}

/// Where the handlers look DaemonSets up: the informer's store (a map in tests).
pub(crate) trait DaemonSets: Send + Sync {
    fn get(&self, key: &ObjectKey) -> Option<Arc<DaemonSet>>;
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<DaemonSet>>;
    fn all(&self) -> Vec<Arc<DaemonSet>>;
}

impl DaemonSets for Store<DaemonSet> {
    fn get(&self, key: &ObjectKey) -> Option<Arc<DaemonSet>> {
        Store::get(self, key)
    }
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<DaemonSet>> {
        self.list_namespace(namespace)
    }
    fn all(&self) -> Vec<Arc<DaemonSet>> {
        self.list()
    }
}

/// The DaemonSet's selector, if it parses and is not empty.
pub fn selector_of(ds: &DaemonSet) -> Option<LabelSelector> {
    LabelSelector::from_meta(&ds.spec.selector)
        .ok()
        .filter(|s| !s.is_empty())
}

/// Resolving controller references and selectors against the DaemonSets.
#[derive(Clone)]
pub(crate) struct Lookup {
    pub(crate) sets: Arc<dyn DaemonSets>,
}

impl Lookup {
    /// Upstream `resolveControllerRef`: the key of our DaemonSet the reference names
    /// (same UID).
    fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<ObjectKey> {
        if r.kind != "DaemonSet" {
            return None;
        }
        let key = ObjectKey::from_parts(namespace, &r.name);
        let ds = self.sets.get(&key)?;
        (ds.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
    }

    /// The DaemonSets of the object's namespace that select its labels (upstream
    /// `GetPodDaemonSets` / `GetHistoryDaemonSets`).
    fn matching(&self, meta: &ObjectMeta) -> Vec<ObjectKey> {
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
        let Some(namespace) = meta.namespace.as_deref() else {
            return Vec::new();
        };
        let keys: Vec<ObjectKey> = self
            .sets
            .in_namespace(namespace)
            .into_iter()
            .filter(|ds| selector_of(ds).is_some_and(|s| s.matches_labels(labels)))
            .map(|ds| ObjectKey::of(ds.as_ref()))
            .collect();
        if keys.len() > 1 {
            tracing::warn!(
                object = ?meta.name,
                "user error: more than one DaemonSet selects this object"
            );
        }
        keys
    }
}

fn push(keys: &mut Vec<ObjectKey>, k: ObjectKey) {
    if !keys.contains(&k) {
        keys.push(k);
    }
}

/// DaemonSet changes: enqueue, forgetting the expectations of deleted ones.
pub(crate) struct DaemonSetHandler {
    pub(crate) expectations: Arc<ControllerExpectations>,
    pub(crate) consistency: Arc<crate::controller_utils::consistency::ConsistencyStore>,
}

impl EventHandler<DaemonSet> for DaemonSetHandler {
    fn keys(&self, change: &Change<DaemonSet>) -> Vec<ObjectKey> {
        match change {
            Change::Added(ds) => vec![ObjectKey::of(ds.as_ref())],
            Change::Updated { old, new } => {
                if old.metadata.uid != new.metadata.uid {
                    let key = ObjectKey::of(old.as_ref());
                    self.expectations.delete_expectations(&key);
                    self.consistency.clear(&key);
                }
                vec![ObjectKey::of(new.as_ref())]
            }
            Change::Deleted(ds) => {
                let key = ObjectKey::of(ds.as_ref());
                self.expectations.delete_expectations(&key);
                self.consistency.clear(&key);
                vec![key]
            }
        }
    }
}

/// Pod changes → DaemonSets, observing expectations on the way.
pub(crate) struct PodHandler {
    pub(crate) expectations: Arc<ControllerExpectations>,
    pub(crate) lookup: Lookup,
}

impl PodHandler {
    fn added(&self, pod: &Pod) -> Vec<ObjectKey> {
        if pod.metadata.deletion_timestamp.is_some() {
            return self.deleted(pod);
        }
        if let Some(r) = get_controller_of(&pod.metadata) {
            return match self.lookup.resolve(pod.metadata.namespace.as_deref(), r) {
                Some(key) => {
                    self.expectations.creation_observed(&key);
                    vec![key]
                }
                None => Vec::new(),
            };
        }
        self.lookup.matching(&pod.metadata)
    }

    /// The keys to enqueue now, and (key, delay) to enqueue later.
    fn updated(&self, old: &Pod, new: &Pod) -> (Vec<ObjectKey>, Option<(ObjectKey, Duration)>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return (Vec::new(), None);
        }
        if new.metadata.deletion_timestamp.is_some() {
            return (self.deleted(new), None);
        }
        let (old_ref, new_ref) = (
            get_controller_of(&old.metadata),
            get_controller_of(&new.metadata),
        );
        let ref_changed = old_ref != new_ref;
        let mut keys = Vec::new();
        if ref_changed {
            if let Some(k) =
                old_ref.and_then(|r| self.lookup.resolve(old.metadata.namespace.as_deref(), r))
            {
                keys.push(k);
            }
        }
        if let Some(r) = new_ref {
            let mut later = None;
            if let Some(k) = self.lookup.resolve(new.metadata.namespace.as_deref(), r) {
                if !is_pod_ready(old) && is_pod_ready(new) {
                    let min_ready = self
                        .lookup
                        .sets
                        .get(&k)
                        .and_then(|ds| ds.spec.min_ready_seconds)
                        .unwrap_or(0);
                    if min_ready > 0 {
                        let d = Duration::from_secs(u64::from(min_ready.unsigned_abs()) + 1);
                        later = Some((k.clone(), d));
                    }
                }
                push(&mut keys, k);
            }
            return (keys, later);
        }
        if ref_changed || old.metadata.labels != new.metadata.labels {
            for k in self.lookup.matching(&new.metadata) {
                push(&mut keys, k);
            }
        }
        (keys, None)
    }

    fn deleted(&self, pod: &Pod) -> Vec<ObjectKey> {
        let Some(r) = get_controller_of(&pod.metadata) else {
            return Vec::new();
        };
        match self.lookup.resolve(pod.metadata.namespace.as_deref(), r) {
            Some(key) => {
                self.expectations.deletion_observed(&key, &pod_key(pod));
                vec![key]
            }
            None => Vec::new(),
        }
    }
}

impl EventHandler<Pod> for PodHandler {
    fn keys(&self, change: &Change<Pod>) -> Vec<ObjectKey> {
        match change {
            Change::Added(p) => self.added(p),
            Change::Updated { old, new } => self.updated(old, new).0,
            Change::Deleted(p) => self.deleted(p),
        }
    }

    fn handle(&self, change: &Change<Pod>, queue: &Requests<'_, ObjectKey>) {
        let (now, later) = match change {
            Change::Added(p) => (self.added(p), None),
            Change::Updated { old, new } => self.updated(old, new),
            Change::Deleted(p) => (self.deleted(p), None),
        };
        for k in now {
            queue.add(k);
        }
        if let Some((k, d)) = later {
            queue.add_after(k, d);
        }
    }
}

/// ControllerRevision changes → their DaemonSet.
pub(crate) struct HistoryHandler {
    pub(crate) lookup: Lookup,
}

impl HistoryHandler {
    fn owner(&self, cr: &ControllerRevision) -> Option<ObjectKey> {
        let r = get_controller_of(&cr.metadata)?;
        self.lookup.resolve(cr.metadata.namespace.as_deref(), r)
    }
}

impl EventHandler<ControllerRevision> for HistoryHandler {
    fn keys(&self, change: &Change<ControllerRevision>) -> Vec<ObjectKey> {
        match change {
            Change::Added(cr) => {
                if cr.metadata.deletion_timestamp.is_some() {
                    return self.owner(cr).into_iter().collect();
                }
                if get_controller_of(&cr.metadata).is_some() {
                    // ours or someone else's: nothing to do for a new revision
                    return Vec::new();
                }
                self.lookup.matching(&cr.metadata)
            }
            Change::Updated { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return Vec::new();
                }
                let (old_ref, new_ref) = (
                    get_controller_of(&old.metadata),
                    get_controller_of(&new.metadata),
                );
                let ref_changed = old_ref != new_ref;
                let mut keys = Vec::new();
                if ref_changed {
                    if let Some(k) = old_ref
                        .and_then(|r| self.lookup.resolve(old.metadata.namespace.as_deref(), r))
                    {
                        keys.push(k);
                    }
                }
                if let Some(r) = new_ref {
                    if let Some(k) = self.lookup.resolve(new.metadata.namespace.as_deref(), r) {
                        push(&mut keys, k);
                    }
                    return keys;
                }
                if ref_changed || old.metadata.labels != new.metadata.labels {
                    for k in self.lookup.matching(&new.metadata) {
                        push(&mut keys, k);
                    }
                }
                keys
            }
            Change::Deleted(cr) => self.owner(cr).into_iter().collect(),
        }
    }
}

/// Where the node handler finds the pods bound to a node.
pub(crate) trait PodsOnNode: Send + Sync {
    fn on_node(&self, node: &str) -> Vec<Arc<Pod>>;
}

impl PodsOnNode for Store<Pod> {
    fn on_node(&self, node: &str) -> Vec<Arc<Pod>> {
        self.by_index(POD_NODE_INDEX, node).unwrap_or_default()
    }
}

/// Node changes → the DaemonSets whose placement on that node changes.
pub(crate) struct NodeHandler {
    pub(crate) lookup: Lookup,
    pub(crate) pods: Arc<dyn PodsOnNode>,
}

impl NodeHandler {
    /// Upstream `syncNodeUpdate` for `node`.
    pub(crate) fn sync_node_update(&self, node: &Node) -> Vec<ObjectKey> {
        let node_name = node.metadata.name.as_deref().unwrap_or("");
        let mut scheduled: BTreeMap<ObjectKey, usize> = BTreeMap::new();
        for p in self.pods.on_node(node_name) {
            if let Some(r) = get_controller_of(&p.metadata).filter(|r| r.kind == "DaemonSet") {
                *scheduled
                    .entry(ObjectKey::from_parts(
                        p.metadata.namespace.as_deref(),
                        &r.name,
                    ))
                    .or_default() += 1;
            }
        }
        let mut keys = Vec::new();
        for ds in self.lookup.sets.all() {
            let key = ObjectKey::of(ds.as_ref());
            let (should_run, should_continue) = node_should_run_daemon_pod(node, &ds);
            let is_scheduled = scheduled.get(&key).is_some_and(|n| *n > 0);
            let misscheduled = ds
                .status
                .as_ref()
                .is_some_and(|s| s.number_misscheduled > 0);
            let wake = if is_scheduled {
                // pods there it should not keep, or misscheduled pods to look at;
                // and (not upstream, whose status would stay stale until some other
                // event) a pod that just became misscheduled, to count it
                !should_continue || misscheduled || !should_run
            } else {
                should_run
            };
            if wake {
                keys.push(key);
            }
        }
        keys
    }
}

impl EventHandler<Node> for NodeHandler {
    fn keys(&self, change: &Change<Node>) -> Vec<ObjectKey> {
        match change {
            Change::Added(n) => self.sync_node_update(n),
            Change::Updated { old, new } => {
                if should_ignore_node_update(old, new) {
                    return Vec::new();
                }
                self.sync_node_update(new)
            }
            Change::Deleted(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;
